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
from types import ModuleType
from typing import Sequence

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Decode, transform and re-encode change-data-capture messages between CDC formats.",
    )
    from cdc_smt.transforms import native

    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}; {native.describe()}")
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        type=str.lower,
        default=os.environ.get("CDC_SMT_LOG_LEVEL", "warning").lower(),
        help="logging verbosity on stderr (default: warning, or $CDC_SMT_LOG_LEVEL)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name, module in command_modules():
        if isinstance(module, ImportError):
            _register_unavailable(subparsers, module_name, module)
        elif hasattr(module, "register"):
            module.register(subparsers)
    return parser


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )


def error(message: str) -> None:
    """The one-line error every command failure prints."""
    one_line = " ".join(part.strip() for part in message.strip().splitlines())
    print(f"{PROG}: error: {one_line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cdc-smt`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_extra_args", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: usage errors (2), --help/--version (0)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    setup_logging(args.log_level)
    tune_allocator()
    try:
        return int(args.func(args) or 0)
    except CdcSmtError as exc:
        error(str(exc))
        return 2
    except BrokenPipeError:  # e.g. `cdc-smt convert ... | head`
        _silence_stdout()
        return 1
    except OSError as exc:
        error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        return 2
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
