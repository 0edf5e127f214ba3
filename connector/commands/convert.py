"""``cdc-smt convert``: re-encode a file of CDC messages from one format to another.

The same :class:`transforms.chain.Chain` the worker runs, fed from a message
file (see :mod:`connector.framing`). Every input message ends up written,
reported as an error, or (with ``--on-error fail``) stops the run at the line
that failed; the summary on stderr accounts for all of them.

Exit codes: 0 done (errors tolerated by ``skip``/``dlq`` included), 1 stopped at
a bad message (``fail``), 2 unusable arguments, config or input file.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson

from cdc_smt.connector.commands import parse_assignments
from cdc_smt.connector.framing import STDIO, FramingError, RecordWriter, check_readable, read_records, unit
from cdc_smt.transforms.chain import Chain, ChainHalted, ChainResult, DeadLetter
from cdc_smt.transforms.errors import CdcSmtError, ConfigError
from cdc_smt.transforms.formats import codec_class, get_codec

TZ_WARNING = "warning: --source-option source_timezone not set; zone-less times are read as UTC"


@dataclass(frozen=True, slots=True)
class OnError:
    """What to do with a message that fails: ``fail``, ``skip`` or ``dlq`` (to ``path``)."""

    mode: str
    path: str | None = None

    @property
    def tolerance(self) -> str:
        return "none" if self.mode == "fail" else "all"


def parse_on_error(text: str) -> OnError:
    """argparse type for ``--on-error fail|skip|dlq:FILE``."""
    if text in ("fail", "skip"):
        return OnError(text)
    if text.startswith("dlq:") and text[4:]:
        return OnError("dlq", text[4:])
    raise argparse.ArgumentTypeError(f"expected fail, skip or dlq:FILE, got {text!r}")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a file of CDC messages between formats",
        description=(
            "Decode each message of INPUT in the --from format and encode it in the --to format. "
            "JSON formats are one message per line; binary formats are Avro containers of Kafka "
            "records. A summary 'read N, written M, errors E' goes to stderr."
        ),
    )
    p.add_argument("input", nargs="?", default="-", metavar="INPUT", help="input file (default: - for stdin)")
    p.add_argument("-o", "--output", default="-", metavar="OUTPUT", help="output file (default: - for stdout)")
    p.add_argument("-f", "--from", dest="source_format", metavar="FMT", help="input format (see: cdc-smt formats)")
    p.add_argument("-t", "--to", dest="sink_format", metavar="FMT", help="output format")
    p.add_argument(
        "-c", "--config", metavar="CHAIN_YAML", help="chain config (formats, options, transforms); flags override it"
    )
    p.add_argument(
        "--source-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="option of the decoder (repeatable)",
    )
    p.add_argument(
        "--sink-option", action="append", default=[], metavar="KEY=VALUE", help="option of the encoder (repeatable)"
    )
    p.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set KEY on the decoder and/or encoder, whichever declares it (repeatable)",
    )
    p.add_argument(
        "--schema",
        action="append",
        default=[],
        metavar="FILE",
        help="schema file (YAML/JSON: tables and/or DDL) for formats whose messages carry no column "
        "names or types (repeatable)",
    )
    p.add_argument(
        "--on-error",
        type=parse_on_error,
        default=None,
        metavar="fail|skip|dlq:FILE",
        help="on a bad message: stop with exit 1 (fail, the default), report and go on (skip), "
        "or also write it to FILE as JSON Lines (dlq:FILE)",
    )
    p.set_defaults(func=run)


# -- building the chain -----------------------------------------------------------


def declared(format_name: str) -> set[str]:
    """Option names a format declares (common ones included)."""
    return {o.name for o in codec_class(format_name).all_options()}


def split_options(
    shared: dict[str, str], source: dict[str, str], sink: dict[str, str], source_format: str, sink_format: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Route ``--option`` values to the codecs declaring them; explicit sides win."""
    src_names, sink_names = declared(source_format), declared(sink_format)
    src_out: dict[str, Any] = {}
    sink_out: dict[str, Any] = {}
    for key, value in shared.items():
        if key not in src_names and key not in sink_names:
            known = ", ".join(sorted(src_names | sink_names))
            raise ConfigError(
                f"neither {source_format} nor {sink_format} has an option {key!r} (known: {known})", "--option"
            )
        if key in src_names:
            src_out[key] = value
        if key in sink_names:
            sink_out[key] = value
    src_out.update(source)
    sink_out.update(sink)
    return src_out, sink_out


def build_chain(args: argparse.Namespace, tolerance: str | None) -> Chain:
    """The chain from flags (or ``-c``); ``tolerance=None`` keeps the config file's."""
    shared = parse_assignments(args.option, "--option")
    source = parse_assignments(args.source_option, "--source-option")
    sink = parse_assignments(args.sink_option, "--sink-option")
    catalog = schema_catalog(args.schema)
    if args.config:
        return _chain_from_config(args, shared, source, sink, tolerance, catalog)
    if not args.source_format or not args.sink_format:
        raise ConfigError("convert needs --from and --to (or -c CHAIN_YAML)")
    src_opts, sink_opts = split_options(shared, source, sink, args.source_format, args.sink_format)
    decoder = get_codec(args.source_format, src_opts, path="source", catalog=catalog)
    encoder = get_codec(args.sink_format, sink_opts, path="sink", catalog=catalog)
    return Chain(decoder, encoder, [], tolerance or "none", catalog=catalog)


def schema_catalog(files: Iterable[str]) -> Any:
    """One catalog shared by decoder, encoder and chain: DDL and typed messages in
    the file teach it, schema files seed it (formats without types need one)."""
    from cdc_smt.transforms.catalog import SchemaCatalog  # sqlglot: only when converting

    catalog = SchemaCatalog()
    for path in files:
        catalog.load_file(path)
    return catalog


def _chain_from_config(
    args: argparse.Namespace,
    shared: dict[str, str],
    source: dict[str, str],
    sink: dict[str, str],
    tolerance: str | None,
    catalog: Any,
) -> Chain:
    """A chain from a chain config file, with command-line formats and options on top.

    ``transforms.config`` is imported here so that plain ``--from/--to``
    conversions never depend on it.
    """
    from cdc_smt.transforms import config as chain_config

    cfg = chain_config.load_config(args.config)
    src_format = args.source_format or cfg.source_format
    sink_format = args.sink_format or cfg.sink_format
    # Options of the file apply only to the format they were written for.
    src_base = dict(cfg.source_options or {}) if src_format == cfg.source_format else {}
    sink_base = dict(cfg.sink_options or {}) if sink_format == cfg.sink_format else {}
    src_cli, sink_cli = split_options(shared, source, sink, src_format, sink_format)
    cfg = dataclasses.replace(
        cfg,
        source_format=src_format,
        sink_format=sink_format,
        source_options={**src_base, **src_cli},
        sink_options={**sink_base, **sink_cli},
    )
    chain = chain_config.build_chain(cfg, catalog=catalog)
    if tolerance is not None:
        chain.tolerance = tolerance
    return chain


def timezone_warning(chain: Chain) -> str | None:
    """The "8 hours off" warning: zone-less input read as UTC, written to another format."""
    decoder, encoder = chain.decoder, chain.encoder
    if "source_timezone" in decoder.opts.explicit or decoder.name == encoder.name:
        return None
    return TZ_WARNING


# -- running ---------------------------------------------------------------------------


class DeadLetterFile:
    """``--on-error dlq:FILE``: one JSON object per failed message.

    Text inputs keep the original line as ``message`` (``message_base64`` if it
    is not UTF-8); binary inputs carry the record as base64 plus its Kafka
    coordinates, so nothing about the failed message is lost.
    """

    def __init__(self, path: str, binary: bool) -> None:
        self.binary = binary
        try:
            self._file = open(path, "wb")
        except OSError as exc:
            raise FramingError(f"cannot open dead-letter file {path!r}: {exc.strerror}") from None

    def write(self, position: int | None, dl: DeadLetter) -> None:
        entry: dict[str, Any] = {unit(self.binary): position, "stage": dl.stage}
        if dl.transform:
            entry["transform"] = dl.transform
        entry["error_class"] = dl.error_class
        entry["error"] = dl.message
        entry.update(_message_fields(dl, self.binary))
        self._file.write(orjson.dumps(entry) + b"\n")

    def close(self) -> None:
        self._file.close()


def _message_fields(dl: DeadLetter, binary: bool) -> dict[str, Any]:
    r = dl.record
    value = r.value
    if not binary:
        if value is None:
            return {"message": None}
        try:
            return {"message": value.decode("utf-8")}
        except UnicodeDecodeError:
            return {"message_base64": base64.b64encode(value).decode("ascii")}
    return {
        "topic": r.topic,
        "partition": r.partition,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key_base64": None if r.key is None else base64.b64encode(r.key).decode("ascii"),
        "message_base64": None if value is None else base64.b64encode(value).decode("ascii"),
        "headers": [[k, None if v is None else base64.b64encode(v).decode("ascii")] for k, v in r.headers],
    }


@dataclass(slots=True)
class Counts:
    read: int = 0
    written: int = 0
    errors: int = 0
    tombstones_skipped: int = 0

    def summary(self) -> str:
        text = f"read {self.read}, written {self.written}, errors {self.errors}"
        if self.tombstones_skipped:
            text += f", tombstones not written {self.tombstones_skipped} (line framing has no null message)"
        return text


class Converter:
    """Feeds records through the chain, writes outputs, reports failures by position."""

    def __init__(self, chain: Chain, writer: RecordWriter, dlq: DeadLetterFile | None, binary_input: bool) -> None:
        self.chain = chain
        self.writer = writer
        self.dlq = dlq
        self.unit = unit(binary_input)
        self.counts = Counts()

    def feed(self, records: Iterable[tuple[int, Any]]) -> None:
        """Process every record, then the decoder's held-back events.

        Raises :class:`ChainHalted` (already reported) on the first failure when
        the chain tolerates none.
        """
        for position, record in records:
            self.counts.read += 1
            self._handle(position, self.chain.process, record)
        self._handle(None, self.chain.flush)

    def _handle(self, position: int | None, step: Callable[..., ChainResult], *args: Any) -> None:
        try:
            result = step(*args)
        except ChainHalted as halted:
            self._report(position, halted.dead_letter)
            raise
        for out in result.outputs:
            self.writer.write(out)
        for dl in result.dead_letters:
            self._report(position, dl)

    def _report(self, position: int | None, dl: DeadLetter) -> None:
        self.counts.errors += 1
        where = f"{self.unit} {position}" if position is not None else "end of input"
        print(f"{where}: {dl.describe()}", file=sys.stderr)
        if self.dlq is not None:
            self.dlq.write(position, dl)


def check_files(input_path: str, output_path: str, dlq_path: str | None) -> None:
    """Refuse runs that would truncate their own input, before any file is opened for writing."""
    check_readable(input_path)
    if input_path == STDIO:
        return
    source = Path(input_path).resolve()
    for flag, path in (("-o", output_path), ("--on-error dlq:", dlq_path)):
        if path is not None and path != STDIO and Path(path).resolve() == source:
            raise ConfigError(f"{flag} {path} is the input file; it would be overwritten before it is read")


def run(args: argparse.Namespace) -> int:
    chain = build_chain(args, args.on_error.tolerance if args.on_error else None)
    # Without --on-error, a chain config's errors.tolerance: all means skip.
    on_error: OnError = args.on_error or OnError("skip" if chain.tolerance == "all" else "fail")
    warning = timezone_warning(chain)
    if warning:
        print(f"cdc-smt: {warning}", file=sys.stderr)
    binary_in = chain.decoder.binary
    check_files(args.input, args.output, on_error.path)
    dlq = DeadLetterFile(on_error.path, binary_in) if on_error.mode == "dlq" and on_error.path else None
    converter: Converter | None = None
    try:
        with RecordWriter(args.output, chain.encoder.binary) as writer:
            converter = Converter(chain, writer, dlq, binary_in)
            try:
                converter.feed(read_records(args.input, binary_in))
            except ChainHalted:
                return 1
            except CdcSmtError as exc:  # a damaged input file: report it above the summary
                print(f"cdc-smt: error: {exc}", file=sys.stderr)
                return 2
            return 0
    finally:
        if dlq is not None:
            dlq.close()
        if converter is not None:
            converter.counts.written = converter.writer.written
            converter.counts.tombstones_skipped = converter.writer.tombstones_skipped
            print(converter.counts.summary(), file=sys.stderr)
            from cdc_smt.transforms.smt.base import missing_columns

            missing = missing_columns(chain.transforms)
            if missing:  # on_missing: warn (see docs/transforms.md)
                print("warnings: " + "; ".join(m.describe() for m in missing), file=sys.stderr)
