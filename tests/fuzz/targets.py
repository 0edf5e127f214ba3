"""What is fuzzed: every decoder in the format registry, the chain loader, the job loader.

A :class:`Target` has seed inputs (corpus messages and messages generated from
the deterministic workload, encoded by the format itself; the example chain
and job files), a mutator, and ``run(data)`` which may raise only the target's
own error (``expected``).
"""

from __future__ import annotations

import atexit
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.errors import ConfigError, DecodeError
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.model import Record
from tests.corpus import corpus_dir, read_messages
from tests.fuzz import mutate
from tests.workload import events as workload_events

ROOT = Path(__file__).resolve().parents[2]
#: Inputs one codec instance sees before it is flushed and replaced (codecs keep state).
ROTATE = 500


@dataclass
class Target:
    name: str
    seeds: list[bytes]
    mutator: Callable[[bytes, Any], bytes]
    run: Callable[[bytes], None]
    expected: tuple[type[BaseException], ...]
    reset: Callable[[], None] = field(default=lambda: None)
    #: CPU seconds per input: 1 for decoders (the issue's bound); the loaders get 5, as
    #: pure-Python PyYAML takes about 1.2 s to reject 1,000-deep flow nesting
    limit_s: float = 1.0


# -- decoders ------------------------------------------------------------------------------


def _catalog_ddl() -> list[tuple[str, str]]:
    """CREATE TABLE statements of the workload's tables (the catalog knows them)."""
    out = []
    for e in workload_events():
        if e.ddl and e.ddl.lstrip().upper().startswith("CREATE"):
            out.append((e.source.database or "shop", e.ddl))
    return out


def new_catalog() -> SchemaCatalog:
    catalog = SchemaCatalog()
    for database, ddl in _catalog_ddl():
        catalog.apply_ddl(database, ddl)
    return catalog


def _corpus_seeds(fmt: str) -> list[bytes]:
    root = corpus_dir()
    if root is None or not (root / fmt).is_dir():
        return []
    out: list[bytes] = []
    for path in sorted((root / fmt).iterdir()):
        if ".expected" in path.name or path.suffix in (".avsc", ".md") or path.name.endswith(".schema.json"):
            continue
        try:
            out.extend(read_messages(path))
        except Exception:  # noqa: BLE001 - a corpus file that is not messages (docs, schemas)
            continue
    return out


def _generated_seeds(fmt: str) -> list[bytes]:
    """The deterministic workload encoded by the format itself (what it writes, it must read)."""
    try:
        codec = get_codec(fmt, {}, catalog=new_catalog())
    except Exception:  # noqa: BLE001
        return []
    out: list[bytes] = []
    for e in workload_events():
        try:
            out.extend(r.value for r in codec.encode(e) if r.value is not None)
        except Exception:  # noqa: BLE001 - events a format cannot carry
            continue
    return out


@cache
def decoder_seeds(fmt: str) -> tuple[bytes, ...]:
    seen: dict[bytes, None] = {}
    for s in (*_corpus_seeds(fmt), *_generated_seeds(fmt)):
        seen.setdefault(s, None)
    return tuple(seen)


class DecoderRun:
    """Decode with one codec instance for :data:`ROTATE` inputs (state carries over,
    as in a stream), type every event's values (decoders may type lazily: a value
    form's ``to_python`` raises ``ValueError`` naming the column, by contract), flush."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.codec: Any = None
        self.used = 0

    def reset(self) -> None:
        self.codec = None

    def __call__(self, data: bytes) -> None:
        if self.codec is None or self.used >= ROTATE:
            old = self.codec
            self.codec = get_codec(self.fmt, {}, catalog=new_catalog())
            self.used = 0
            if old is not None:
                old.flush()
        self.used += 1
        for e in self.codec.decode(Record(value=data, topic="t", partition=0, offset=self.used)):
            try:
                e.typed()
            except ValueError as exc:  # the value-form contract: a ValueError naming the column
                if "column" not in str(exc) and "schema" not in str(exc):
                    raise AssertionError(f"value error without the column: {exc}") from None


def decoder_target(fmt: str) -> Target:
    cls = registry()[fmt]
    if cls.binary:
        walker = mutate.AvroWalker(_avro_schema(fmt))
        mutator: Callable[[bytes, Any], bytes] = lambda data, rng: mutate.mutate_avro(data, rng, walker)  # noqa: E731
    else:
        mutator = mutate.mutate_json
    run = DecoderRun(fmt)
    return Target(fmt, list(decoder_seeds(fmt)), mutator, run, (DecodeError,), run.reset)


def _avro_schema(fmt: str) -> Any:
    from cdc_smt import schemas

    return schemas.load_avro(fmt)


# -- loaders -------------------------------------------------------------------------------------

_SCRATCH = Path(
    os.environ.get("CDC_SMT_FUZZ_TMP") or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
)


def _scratch_file(suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix="cdc-smt-fuzz-", suffix=suffix, dir=_SCRATCH)
    os.close(fd)
    path = Path(name)
    atexit.register(path.unlink, missing_ok=True)
    return path


def _docs(folder: str) -> list[Any]:
    out = []
    for path in sorted((ROOT / "examples" / folder).glob("*.yaml")):
        out.append(yaml.safe_load(path.read_text(encoding="utf-8")))
    return out


def _config_seeds(docs: list[Any]) -> list[bytes]:
    out = []
    for doc in docs:
        out.append(yaml.safe_dump(doc, sort_keys=False).encode("utf-8"))
    return out


# The mutator's own parsing: pure Python (libyaml's composer overflows the C stack on deep nesting).
_LOADER = yaml.SafeLoader


@lru_cache(maxsize=64)
def _parsed(data: bytes) -> Any:
    return yaml.load(data, Loader=_LOADER)  # noqa: S506 - a safe loader


def _config_mutator(data: bytes, rng: Any) -> bytes:
    try:
        doc = _parsed(data)
    except Exception:  # noqa: BLE001 - not YAML this mutator can rebuild: mutate its bytes
        return mutate.mutate_bytes(data, rng)
    try:
        return mutate.mutate_yaml(doc, rng)
    except Exception:  # noqa: BLE001 - a document the YAML writer cannot write (nested too deeply ...)
        return mutate.mutate_bytes(data, rng)


def chain_target() -> Target:
    from cdc_smt.transforms.config import build_chain, load_config

    path = _scratch_file(".yaml")

    def run(data: bytes) -> None:
        path.write_bytes(data)
        build_chain(load_config(path))

    os.environ.setdefault("CDC_SMT_PII_SALT", "fuzz")
    return Target("chain-loader", _config_seeds(_docs("chains")), _config_mutator, run, (ConfigError,), limit_s=5.0)


def job_target() -> Target:
    from cdc_smt.connector.jobconfig import load_job

    path = _scratch_file(".yaml")
    env = {"CDC_SMT_PII_SALT": "fuzz", "KAFKA": "localhost:9092"}

    def run(data: bytes) -> None:
        path.write_bytes(data)
        load_job(path, env=env).check()

    return Target("job-loader", _config_seeds(_docs("jobs")), _config_mutator, run, (ConfigError,), limit_s=5.0)


def all_targets() -> dict[str, Callable[[], Target]]:
    """Target name -> factory, every decoder first."""
    out: dict[str, Callable[[], Target]] = {fmt: (lambda f=fmt: decoder_target(f)) for fmt in registry()}
    out["chain-loader"] = chain_target
    out["job-loader"] = job_target
    return out


__all__ = ["Target", "all_targets", "chain_target", "decoder_target", "job_target"]
