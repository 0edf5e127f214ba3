"""Errors of reaching the cluster, worded for the person who configured the address."""

from __future__ import annotations

from cdc_smt.transforms.errors import CdcSmtError


class KafkaUnavailable(CdcSmtError):
    """The cluster did not answer at start-up: which address, why, and what to change.

    ``cause`` is one short phrase ("connection refused", "host name x does not
    resolve", "TLS handshake failed: ..."); ``waited`` is the seconds waited
    (``None`` when the cause cannot go away by waiting and nothing was).
    """

    def __init__(self, address: str, cause: str, *, waited: float | None = None, hint: str | None = None) -> None:
        self.address = address
        self.cause = cause
        self.waited = waited
        notes = [f"waited {waited:g} s"] if waited is not None else []
        if hint:
            notes.append(hint)
        suffix = f" ({'; '.join(notes)})" if notes else ""
        super().__init__(f"cannot reach Kafka at {address}: {cause}{suffix}")


__all__ = ["KafkaUnavailable"]
