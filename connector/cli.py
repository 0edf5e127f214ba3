"""The ``cdc-smt`` command line.

Subcommands are the modules of :mod:`connector.commands` (see its docstring
for the contract), discovered at start-up, so commands are added without
touching this file. A command module that cannot be imported because an
optional dependency is missing still shows up, and says what to install when
run.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from cdc_smt.connector.exitcodes import ExitCode
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms.errors import CdcSmtError

PROG = "cdc-smt"
LOG_LEVELS = ("debug", "info", "warning", "error")
log = logging.getLogger("cdc_smt")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("cdc-smt")
    except metadata.PackageNotFoundError:
        return "unknown"


def command_modules() -> list[tuple[str, ModuleType | ImportError]]:
    """``(module name, module or its ImportError)`` for each command module, sorted."""
    from cdc_smt.connector import commands

    found: list[tuple[str, ModuleType | ImportError]] = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        try:
            found.append((info.name, importlib.import_module(f"{commands.__name__}.{info.name}")))
        except ImportError as exc:  # an optional extra is not installed
            found.append((info.name, exc))
    return found


def _register_unavailable(subparsers: argparse._SubParsersAction, module: str, exc: ImportError) -> None:
    """A stand-in for a command whose module needs a missing dependency."""
    name = module.replace("_", "-")
    missing = exc.name or str(exc)

    def unavailable(args: argparse.Namespace) -> int:
        raise CdcSmtError(
            f"command {name!r} is unavailable: cannot import {missing} "
            "(install the extra it needs, e.g. pip install 'cdc-smt[worker]' or 'cdc-smt[spark]')"
        )

    parser = subparsers.add_parser(name, help=f"(unavailable: needs {missing})", add_help=False)
    parser.set_defaults(func=unavailable, accepts_extra_args=True)


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as the one ``cdc-smt: error: ...`` line of every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{PROG}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Decode, transform and re-encode change-data-capture messages between CDC formats.",
    )
    from cdc_smt.transforms import native

    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}; {native.describe()}")
    _add_log_level(parser, default=os.environ.get("CDC_SMT_LOG_LEVEL", "warning").lower())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name, module in command_modules():
        if isinstance(module, ImportError):
            _register_unavailable(subparsers, module_name, module)
        elif hasattr(module, "register"):
            module.register(subparsers)
    for command_parser in subparsers.choices.values():
        # Also after the command (``cdc-smt convert ... --log-level debug``); unset there,
        # so the value given before the command (or the default) stands.
        _add_log_level(command_parser, default=argparse.SUPPRESS)
    return parser


def _add_log_level(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        type=str.lower,
        default=default,
        help="logging verbosity on stderr (default: warning, or $CDC_SMT_LOG_LEVEL)",
    )


class UserFormatter(logging.Formatter):
    """Warnings and errors as a user reads them (``cdc-smt: warning: ...``); the
    logger name and time only when debugging."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{PROG}: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and logging.getLogger().isEnabledFor(logging.DEBUG):
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup_logging(level: str) -> None:
    numeric = getattr(logging, level.upper())
    handler = logging.StreamHandler(sys.stderr)
    if numeric <= logging.INFO:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(UserFormatter())
    logging.basicConfig(level=numeric, handlers=[handler], force=True)


def error(message: str) -> None:
    """The one-line error every command failure prints."""
    one_line = " ".join(part.strip() for part in message.strip().splitlines())
    print(f"{PROG}: error: {one_line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cdc-smt`` console script; returns the exit code (see :mod:`connector.exitcodes`)."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_extra_args", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: usage errors (2), --help/--version (0)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else ExitCode.USAGE)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    setup_logging(args.log_level)
    tune_allocator()
    try:
        return int(args.func(args) or 0)
    except CdcSmtError as exc:
        error(str(exc))
        return ExitCode.USAGE
    except BrokenPipeError:  # e.g. `cdc-smt convert ... | head`
        _silence_stdout()
        return ExitCode.FAILED
    except OSError as exc:
        error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        return ExitCode.USAGE
    except UnicodeDecodeError as exc:  # a binary file where text was expected
        error(f"not a text file: {exc.reason} at byte {exc.start} (expected UTF-8 text)")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - no traceback reaches a user; --log-level debug shows it
        log.debug("unexpected failure", exc_info=True)
        error(_unexpected(exc))
        return ExitCode.FAILED


def _unexpected(exc: BaseException) -> str:
    """One line for a failure no command turned into a user error (a broker that cannot be reached, a bug)."""
    if is_kafka_error(exc):
        return f"Kafka: {exc or type(exc).__name__}"
    return f"{type(exc).__name__}: {exc} (run with --log-level debug for the traceback)"


def is_kafka_error(exc: BaseException) -> bool:
    """An aiokafka error (aiokafka is imported only by the commands that talk to a broker)."""
    return any(cls.__module__.startswith("aiokafka") for cls in type(exc).__mro__)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
