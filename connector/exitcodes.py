"""The exit codes of every ``cdc-smt`` command, defined once (``docs/cli.md`` lists them).

Scripts tell "all good" from "finished, but something was lost to errors"
from "stopped": a conversion that skipped every message must not exit 0.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``cdc-smt`` run ended with."""

    #: Everything read was handled without an error.
    OK = 0
    #: Stopped at an error: a bad message under ``--on-error fail``, an unreachable
    #: broker, a failure in Spark or the worker.
    FAILED = 1
    #: Unusable command line, configuration, schema or input file; nothing was processed.
    USAGE = 2
    #: Completed, with errors: every message was read, some (or all) failed and were
    #: reported (``--on-error skip``/``dlq``, ``errors.tolerance: all``, invalid messages in ``validate``).
    COMPLETED_WITH_ERRORS = 3
    #: Interrupted (Ctrl-C / SIGINT); the summary says how far it got.
    INTERRUPTED = 130


def completed(errors: int) -> ExitCode:
    """The code of a run that read all its input: ``OK``, or ``COMPLETED_WITH_ERRORS`` when ``errors``."""
    return ExitCode.COMPLETED_WITH_ERRORS if errors else ExitCode.OK


__all__ = ["ExitCode", "completed"]
