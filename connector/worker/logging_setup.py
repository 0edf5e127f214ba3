"""Worker logs: one JSON object per line (for log shippers) or plain text (for people).

JSON lines carry ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``msg`` and
any structured fields passed with ``extra=`` (``event``, ``topic``,
``partition``, ``offset``, ``stage``, ``job``...). Secrets never reach a log
record: the job is logged through :meth:`JobConfig.describe`, which has none.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
import threading

import orjson

#: LogRecord attributes that are not user fields.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def log_thread_exception(args: threading.ExceptHookArgs) -> None:
    """A thread's uncaught exception as one error line, not Python's traceback on stderr
    (a library's thread, e.g. Faust's consumer thread, failing at shutdown); the traceback
    only when debugging."""
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    logger = logging.getLogger("cdc_smt.worker")
    debugging = logger.isEnabledFor(logging.DEBUG)
    logger.error(
        "thread %s failed: %s: %s",
        name,
        args.exc_type.__name__,
        args.exc_value,
        exc_info=args.exc_value if debugging else None,
    )


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup(log_format: str = "text", level: int = logging.WARNING, worker_level: int = logging.INFO) -> None:
    """Root handler on stderr; the worker's own logger (``cdc_smt``) at ``worker_level`` or finer.

    Library loggers (Faust, aiokafka) stay at ``level``: their INFO chatter is
    not what an operator needs, their warnings are.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("cdc_smt").setLevel(min(level, worker_level))
    # Faust logs app/service life-cycle under the module that defined the app class.
    logging.getLogger("cdc_smt.connector.worker.app").setLevel(max(level, logging.WARNING))
    threading.excepthook = log_thread_exception


__all__ = ["JsonFormatter", "log_thread_exception", "setup"]
