"""``cdc-smt convert``: re-encode a file of CDC messages from one format to another.

The same :class:`transforms.chain.Chain` the worker runs, fed from a message
file (see :mod:`connector.framing`). Every input message ends up written,
reported as an error, or (with ``--on-error fail``) stops the run at the line
that failed; the summary on stderr accounts for all of them.

Output records carry a topic. A single output file (or stdout) gets the
records of the sink's data topic(s) only, as a consumer of that topic would
see them; records a sink format addresses to a topic of its own (Debezium's
schema-change, transaction and heartbeat topics, Maxwell's ``ddl_topic``) are
counted in the summary instead. ``-o DIR/`` writes every record to
``DIR/<topic>.jsonl`` (``.avro`` for binary formats).

Exit codes (:mod:`connector.exitcodes`): 0 done without errors, 3 done with
errors (tolerated by ``skip``/``dlq``), 1 stopped at a bad message (``fail``), 2
unusable arguments, config or input file, 130 interrupted. On a terminal a
progress line is shown on stderr while converting.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cdc_smt.connector.commands import parse_assignments
from cdc_smt.connector.commands._positions import split_column
from cdc_smt.connector.commands._progress import Progress
from cdc_smt.connector.exitcodes import ExitCode, completed
from cdc_smt.connector.framing import STDIO, FramingError, RecordWriter, check_readable, read_records, unit
from cdc_smt.transforms.chain import Chain, ChainHalted, ChainResult, DeadLetter
from cdc_smt.transforms.errors import CdcSmtError, ConfigError
from cdc_smt.transforms.formats import codec_class, get_codec
from cdc_smt.transforms.formats.base import Codec
from cdc_smt.transforms.model import Record

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
    p.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="OUTPUT",
        help="output file (default: - for stdout): the records of the sink's data topic(s); records for "
        "other topics (Debezium schema changes, ...) are counted, not written. OUTPUT ending in / or an "
        "existing directory: every record, in OUTPUT/<topic>.jsonl (.avro for binary formats)",
    )
    p.add_argument(
        "--topic",
        default=None,
        metavar="TOPIC",
        help="topic of the records no transform or format addressed elsewhere; names their file "
        "with -o DIR/ (default: the sink format's name)",
    )
    p.add_argument("-f", "--from", dest="source_format", metavar="FMT", help="input format (see: cdc-smt formats)")
    p.add_argument("-t", "--to", dest="sink_format", metavar="FMT", help="output format")
    p.add_argument(
        "-c",
        "--config",
        metavar="YAML",
        help="chain file, or job file (its formats, options, transforms, predicates, schema files); flags override it",
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
    if args.config:
        return _chain_from_config(args, shared, source, sink, tolerance)
    if not args.source_format or not args.sink_format:
        raise ConfigError("convert needs --from and --to (or -c YAML)")
    # Without --schema the codecs keep their own catalogs, as in the worker (jobconfig.new_catalog),
    # and a chain without a shared catalog can run on the native core.
    catalog = schema_catalog(args.schema) if args.schema else None
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
        try:
            catalog.load_file(path)
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not a text file (a schema file is UTF-8 YAML or JSON)", "--schema") from None
    return catalog


def _chain_from_config(
    args: argparse.Namespace,
    shared: dict[str, str],
    source: dict[str, str],
    sink: dict[str, str],
    tolerance: str | None,
) -> Chain:
    """A chain from a chain or job file, with command-line formats, options and schema files on top.

    The config modules are imported here: plain ``--from/--to`` conversions need neither.
    """
    from cdc_smt.connector.jobconfig import read_chain
    from cdc_smt.transforms import config as chain_config

    cfg, schema_files = read_chain(args.config)
    catalog = schema_catalog([*schema_files, *args.schema])
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
    interrupted: bool = False
    #: Records for topics the single output does not hold: topic -> count.
    other_topics: dict[str, int] = field(default_factory=dict)
    #: With ``-o DIR/``: file written -> records in it.
    files: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        text = f"read {self.read}, written {self.written}, errors {self.errors}"
        if self.tombstones_skipped:
            text += f", tombstones not written {self.tombstones_skipped} (line framing has no null message)"
        if self.other_topics:
            n = sum(self.other_topics.values())
            topics = ", ".join(f"{t} ({c})" for t, c in sorted(self.other_topics.items()))
            records = "record" if n == 1 else "records"
            text += f", skipped {n} {records} for other topics: {topics} (-o DIR/ writes every topic)"
        if self.files:
            text += "; " + ", ".join(f"{f} ({c})" for f, c in self.files.items())
        if self.interrupted:
            text += ", interrupted"
        return text


def locate(unit_name: str, position: int | None, message: str) -> str:
    """``line 3, column 76: ...``: the file's line, and the column a JSON parser reported inside it."""
    if position is None:
        return f"end of input: {message}"
    where = f"{unit_name} {position}"
    if unit_name == "line":
        message, column = split_column(message)
        if column is not None:
            where += f", column {column}"
    return f"{where}: {message}"


# -- outputs ---------------------------------------------------------------------------

#: Codec attributes and options naming the topics a sink format sends its control
#: records to, never a table's data topic (Debezium's schema-change, transaction and
#: heartbeat topics; Maxwell's ddl_topic).
SIDE_TOPIC_ATTRIBUTES = ("schema_change_topic", "transaction_topic", "heartbeat_topic")
SIDE_TOPIC_OPTIONS = ("ddl_topic",)


def side_topics(encoder: Codec) -> frozenset[str]:
    """Topics ``encoder`` addresses control records to, apart from the data topics."""
    names = [getattr(encoder, a, None) for a in SIDE_TOPIC_ATTRIBUTES]
    names += [getattr(encoder.opts, o, None) for o in SIDE_TOPIC_OPTIONS]
    return frozenset(n for n in names if isinstance(n, str) and n)


class DataTopicOutput:
    """The single output file: records of the data topic(s) only.

    A consumer of a table's topic (Flink's debezium-json, say) fails on a
    schema-change record; those records are counted per topic instead.
    """

    def __init__(self, writer: RecordWriter, other: frozenset[str]) -> None:
        self.writer = writer
        self.other = other
        self.skipped: Counter[str] = Counter()

    def write(self, record: Record) -> bool:
        if record.topic is not None and record.topic in self.other:
            self.skipped[record.topic] += 1
            return False
        return self.writer.write(record)

    def account(self, counts: Counts) -> None:
        counts.written = self.writer.written
        counts.tombstones_skipped = self.writer.tombstones_skipped
        counts.other_topics = dict(self.skipped)

    def close(self) -> None:
        self.writer.close()


class TopicFiles:
    """``-o DIR/``: every record in ``DIR/<topic>.jsonl`` (``.avro`` for binary), in input order."""

    def __init__(self, directory: Path, binary: bool, default_topic: str) -> None:
        self.directory = directory
        self.binary = binary
        self.default_topic = default_topic
        self.suffix = ".avro" if binary else ".jsonl"
        self.writers: dict[str, RecordWriter] = {}

    def write(self, record: Record) -> bool:
        topic = record.topic or self.default_topic
        writer = self.writers.get(topic)
        if writer is None:
            if topic in (".", "..") or "/" in topic or "\\" in topic or "\0" in topic:
                raise FramingError(f"topic {topic!r} cannot name a file in {self.directory}")
            writer = self.writers[topic] = RecordWriter(str(self.directory / f"{topic}{self.suffix}"), self.binary)
        return writer.write(record)

    def account(self, counts: Counts) -> None:
        counts.written = sum(w.written for w in self.writers.values())
        counts.tombstones_skipped = sum(w.tombstones_skipped for w in self.writers.values())
        counts.files = {w.name: w.written for w in self.writers.values()}

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


def is_directory_output(output: str) -> bool:
    """``-o DIR/`` (a trailing separator) or an existing directory."""
    return output != STDIO and (output.endswith(("/", os.sep)) or Path(output).is_dir())


def open_output(output: str, chain: Chain, topic: str | None) -> DataTopicOutput | TopicFiles:
    binary = chain.encoder.binary
    if is_directory_output(output):
        directory = Path(output)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FramingError(f"cannot create output directory {output!r}: {exc.strerror}") from None
        return TopicFiles(directory, binary, topic or chain.encoder.name)
    return DataTopicOutput(RecordWriter(output, binary), side_topics(chain.encoder))


class Converter:
    """Feeds records through the chain, writes outputs, reports failures by position.

    ``writer`` is a :class:`RecordWriter` or one of the outputs above (anything with ``write(record)``).
    """

    def __init__(
        self,
        chain: Chain,
        writer: Any,
        dlq: DeadLetterFile | None,
        binary_input: bool,
        progress: Progress | None = None,
    ) -> None:
        self.chain = chain
        self.writer = writer
        self.dlq = dlq
        self.unit = unit(binary_input)
        self.counts = Counts()
        self.progress = progress

    def feed(self, records: Iterable[tuple[int, Any]]) -> None:
        """Process every record, then the decoder's held-back events.

        Raises :class:`ChainHalted` (already reported) on the first failure when
        the chain tolerates none.
        """
        progress = self.progress
        for position, record in records:
            self.counts.read += 1
            self._handle(position, self.chain.process, record)
            if progress is not None:
                progress.advance(len(record.value or b"") + 1)
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
        if self.progress is not None:
            self.progress.clear()
        print(locate(self.unit, position, dl.describe()), file=sys.stderr)
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


def input_size(path: str) -> int | None:
    """Bytes in INPUT when that is known up front (a regular file), for the progress ETA."""
    if path == STDIO:
        return None
    try:
        return os.stat(path).st_size if os.path.isfile(path) else None
    except OSError:
        return None


def announced(records: Iterable[tuple[int, Any]], warning: str | None) -> Iterable[tuple[int, Any]]:
    """``records``, printing ``warning`` once the first one has actually been read."""
    for item in records:
        if warning:
            sys.stderr.write(f"cdc-smt: {warning}\n")  # one write: a Ctrl-C cannot split the line
            warning = None
        yield item


def run(args: argparse.Namespace) -> int:
    chain = build_chain(args, args.on_error.tolerance if args.on_error else None)
    # Without --on-error, a chain config's errors.tolerance: all means skip.
    on_error: OnError = args.on_error or OnError("skip" if chain.tolerance == "all" else "fail")
    binary_in = chain.decoder.binary
    check_files(args.input, args.output, on_error.path)
    dlq = DeadLetterFile(on_error.path, binary_in) if on_error.mode == "dlq" and on_error.path else None
    progress = Progress.for_terminal(sys.stderr, None if binary_in else input_size(args.input))
    log_handlers: list[logging.Handler] = []
    if progress is not None:
        log_handlers = logging.getLogger().handlers
        for handler in log_handlers:  # a codec's warning gets a line of its own
            handler.addFilter(progress)
    converter: Converter | None = None
    output: DataTopicOutput | TopicFiles | None = None
    try:
        output = open_output(args.output, chain, args.topic)
        converter = Converter(chain, output, dlq, binary_in, progress)
        try:
            converter.feed(announced(read_records(args.input, binary_in), timezone_warning(chain)))
        except ChainHalted:
            return ExitCode.FAILED
        except CdcSmtError as exc:  # a damaged input file: report it above the summary
            if progress is not None:
                progress.clear()
            print(f"cdc-smt: error: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        except KeyboardInterrupt:
            converter.counts.interrupted = True
            return ExitCode.INTERRUPTED
        return completed(converter.counts.errors)
    finally:
        if output is not None:
            output.close()
        if dlq is not None:
            dlq.close()
        if progress is not None:
            progress.clear()
            for handler in log_handlers:
                handler.removeFilter(progress)
        if converter is not None and output is not None:
            output.account(converter.counts)
            print(converter.counts.summary(), file=sys.stderr)
            from cdc_smt.transforms.smt.base import missing_columns

            missing = missing_columns(chain.transforms)
            if missing:  # on_missing: warn (see docs/transforms.md)
                print("warnings: " + "; ".join(m.describe() for m in missing), file=sys.stderr)
