"""A chain: decode -> transforms -> encode, with error results instead of crashes.

The same :class:`Chain` runs in ``cdc-smt convert``, the Faust worker and the
Spark backfill. Every input record ends up either as output records or as a
:class:`DeadLetter` carrying the original record, the stage that failed, the
transform name, the exception class and its message: nothing is dropped
silently. With ``tolerance="none"`` the first failure raises
:class:`ChainHalted` (carrying that dead letter) instead, as Kafka Connect's
``errors.tolerance=none`` stops the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cdc_smt.transforms import native
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.formats.base import Codec
from cdc_smt.transforms.model import ChangeEvent, Record

ERROR_HEADER_PREFIX = "cdc_smt.error."
TOLERANCES = ("none", "all")


class Transform(Protocol):
    """What the chain needs of a transform (see ``transforms.smt.base``)."""

    @property
    def name(self) -> str: ...

    def apply_batch(self, events: list[ChangeEvent]) -> list[ChangeEvent]: ...


@dataclass(slots=True)
class DeadLetter:
    """A record the chain could not process, and why."""

    record: Record
    stage: str  # decode | transform | encode
    error_class: str
    message: str
    transform: str | None = None

    def error_headers(self) -> list[tuple[str, bytes]]:
        """``cdc_smt.error.*`` headers, as the hosts attach them on the dead-letter topic."""
        r = self.record
        fields = {
            "stage": self.stage,
            "transform": self.transform or "",
            "class": self.error_class,
            "message": self.message,
            "topic": r.topic or "",
            "partition": "" if r.partition is None else str(r.partition),
            "offset": "" if r.offset is None else str(r.offset),
        }
        return [(ERROR_HEADER_PREFIX + k, v.encode("utf-8")) for k, v in fields.items()]

    def to_record(self, topic: str | None = None) -> Record:
        """The dead-letter record: original key, value and headers plus error headers."""
        r = self.record
        return Record(
            value=r.value,
            key=r.key,
            topic=topic,
            timestamp=r.timestamp,
            headers=list(r.headers) + self.error_headers(),
        )

    def describe(self) -> str:
        where = f" in {self.transform}" if self.transform else ""
        return f"{self.stage}{where} failed: {self.error_class}: {self.message}"


class ChainHalted(CdcSmtError):
    """Raised with ``tolerance="none"``: processing must stop at ``dead_letter``."""

    def __init__(self, dead_letter: DeadLetter) -> None:
        self.dead_letter = dead_letter
        super().__init__(f"{dead_letter.record.where()}: {dead_letter.describe()}")


@dataclass(slots=True)
class ChainResult:
    outputs: list[Record] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)

    def extend(self, other: ChainResult) -> None:
        self.outputs.extend(other.outputs)
        self.dead_letters.extend(other.dead_letters)


class Chain:
    """decode -> transforms -> encode for one stream (one source partition or file)."""

    def __init__(
        self,
        decoder: Codec,
        encoder: Codec,
        transforms: Sequence[Transform] = (),
        tolerance: str = "none",
        catalog: Any = None,
    ) -> None:
        if tolerance not in TOLERANCES:
            raise ValueError(f"errors.tolerance must be one of {TOLERANCES}, got {tolerance!r}")
        self.decoder = decoder
        self.encoder = encoder
        self.transforms = list(transforms)
        self.tolerance = tolerance
        # The schema catalog learns from every decoded event (DDL, typed
        # messages) before transforms run; codecs given the same catalog use it
        # to name and type values of formats that carry none.
        self.catalog = catalog if catalog is not None else getattr(decoder, "catalog", None)
        #: The Rust plan for this decoder/transforms/encoder, if the native core has one.
        self.native = native.plan_for(self)

    # -- per-stream state (schema catalog, codecs' held-back halves) --------------
    @property
    def stateful(self) -> bool:
        """Does this chain keep state across records that a restarted host must restore?"""
        return self.catalog is not None or any(
            type(c).pending_state is not Codec.pending_state for c in (self.decoder, self.encoder)
        )

    def state(self) -> dict[str, Any]:
        """A JSON-able snapshot of the chain's per-stream state (see :meth:`restore_state`)."""
        catalog = self.catalog
        return {
            "catalog": None if catalog is None else catalog.to_dict(),
            "decoder": self.decoder.pending_state(),
            "encoder": self.encoder.pending_state(),
        }

    def state_marker(self) -> Any:
        """Equal for equal :meth:`state` and cheap: the catalog's version counter (it counts
        every change) instead of the catalog, and the codecs' held-back state."""
        catalog = self.catalog
        return (
            None if catalog is None else catalog.version,
            self.decoder.pending_state(),
            self.encoder.pending_state(),
        )

    def restore_state(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state` snapshot: the catalog is restored in place
        (codecs share it) and each codec reloads what it held back."""
        if state.get("catalog") is not None and self.catalog is not None:
            self.catalog.restore(state["catalog"])
        self.decoder.restore_state(state.get("decoder") or {})
        self.encoder.restore_state(state.get("encoder") or {})

    def process(self, record: Record) -> ChainResult:
        result = ChainResult()
        if self.native is not None:
            self.native.run([record], self._one, result)
            return result
        self._one(record, result)
        return result

    def process_batch(self, records: Iterable[Record]) -> ChainResult:
        """Process records in order; outputs keep input order."""
        result = ChainResult()
        one = self._one
        if self.native is not None:
            self.native.run(records, one, result)
            return result
        for record in records:
            one(record, result)
        return result

    def flush(self) -> ChainResult:
        """End of stream: transform and encode events the decoder still held back."""
        result = ChainResult()
        events = self.decoder.flush()
        self._observe(events)
        if events:
            self._rest(events, events[0].record or Record(value=None), result)
        return result

    # -- internals -----------------------------------------------------------
    def _one(self, record: Record, result: ChainResult) -> None:
        try:
            events = self.decoder.decode(record)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a dead letter
            self._fail(record, "decode", None, exc, result)
            return
        for e in events:
            if e.record is None:
                e.record = record
        self._observe(events)
        self._rest(events, record, result)

    def _observe(self, events: list[ChangeEvent]) -> None:
        catalog = self.catalog
        if catalog is not None:
            for e in events:
                catalog.observe(e)

    def _rest(self, events: list[ChangeEvent], record: Record, result: ChainResult) -> None:
        for t in self.transforms:
            if not events:
                return
            try:
                events = t.apply_batch(events)
            except Exception as exc:  # noqa: BLE001
                self._fail(record, "transform", t.name, exc, result)
                return
        try:
            out = self.encoder.encode_batch(events)
        except Exception as exc:  # noqa: BLE001
            self._fail(record, "encode", None, exc, result)
            return
        result.outputs.extend(out)

    def _fail(self, record: Record, stage: str, transform: str | None, exc: Exception, result: ChainResult) -> None:
        dl = DeadLetter(
            record=record,
            stage=stage,
            error_class=type(exc).__name__,
            message=str(exc) or repr(exc),
            transform=transform,
        )
        if self.tolerance == "none":
            raise ChainHalted(dl) from exc
        result.dead_letters.append(dl)
