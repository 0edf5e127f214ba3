"""Cluster metadata and topic administration.

Readiness (the start-up probe), topic lists, partition counts, creation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_smt.connector.kafka.errors import KafkaUnavailable
from cdc_smt.connector.kafka.settings import DEFAULT_CONNECT_TIMEOUT_S, Conn, KafkaSettings, client_kwargs
from cdc_smt.transforms.errors import ConfigError


def _admin_kwargs(conn: Conn) -> dict[str, Any]:
    kw = client_kwargs(conn)
    kw.pop("client_id", None)
    return kw


#: Seconds between attempts while the cluster refuses or does not answer (a broker still starting).
RETRY_INTERVAL_S = 0.5
#: getaddrinfo errors that mean the name does not exist: waiting will not make it resolve.
_NO_SUCH_NAME = frozenset(e for e in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if e is not None)
_AUTH_ERRORS = (
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "IllegalSaslStateError",
    "SaslAuthenticationFailed",
    "UnsupportedSaslMechanismError",
)


@dataclass(frozen=True)
class _Failure:
    """Why one attempt failed; ``final`` when waiting cannot fix it (a name, TLS or SASL)."""

    cause: str
    final: bool = False
    hint: str | None = None


async def wait_until_ready(
    conn: Conn,
    timeout: float | None = None,
    *,
    timeout_setting: str = "kafka.connect_timeout_s",
    address_setting: str = "kafka.bootstrap_servers",
) -> None:
    """Return once the cluster answers a metadata request; else raise :class:`KafkaUnavailable`.

    The one start-up probe of every host. Each bootstrap address is checked
    step by step (name, TCP, TLS, then aiokafka's Kafka and SASL handshake) so
    the error says which step failed. Refused and unanswered connections are
    retried until ``timeout`` (default: ``conn.connect_timeout_s``, else
    :data:`DEFAULT_CONNECT_TIMEOUT_S`) for a broker that is still starting; a
    name that does not resolve and TLS or SASL failures are reported at once.
    aiokafka's log line per failed attempt is held back while probing (shown
    with ``--log-level debug``). ``timeout_setting`` and ``address_setting``
    name what the user changes, for the error's hint.
    """
    if timeout is None:
        timeout = conn.connect_timeout_s if isinstance(conn, KafkaSettings) else DEFAULT_CONNECT_TIMEOUT_S
    kwargs = _admin_kwargs(conn)
    addresses = bootstrap_addresses(kwargs)
    bootstrap = ",".join(f"{h}:{p}" for h, p in addresses)
    tls = kwargs.get("ssl_context") if kwargs.get("security_protocol") in ("SSL", "SASL_SSL") else None
    deadline = time.monotonic() + timeout
    with _client_logs_held() as held:
        while True:
            failures: dict[str, _Failure] = {}
            for host, port in addresses:
                # A silent first address must not use up the time of the others.
                share = min(_budget(deadline), max(_budget(deadline) / len(addresses), 1.0))
                failure = await _reach(host, port, tls, share, address_setting)
                if failure is None:
                    failures = {}
                    break
                failures[f"{host}:{port}"] = failure
            if not failures:
                failure = await _metadata(kwargs, _budget(deadline), held)
                if failure is None:
                    return
                failures = {bootstrap: failure}
            final = all(f.final for f in failures.values())
            if final or time.monotonic() >= deadline:
                raise _unavailable(bootstrap, failures, None if final else timeout, timeout_setting)
            await asyncio.sleep(min(RETRY_INTERVAL_S, _budget(deadline)))


def bootstrap_addresses(conn: Conn) -> list[tuple[str, int]]:
    """``(host, port)`` of each bootstrap server (port 9092 when left out, as Kafka clients do)."""
    servers = client_kwargs(conn).get("bootstrap_servers") or []
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or "]" in port:  # no port, or a bare IPv6 address in brackets
            host, port = item, "9092"
        if not port.isdigit() or not host:
            raise ConfigError(f"expected host:port, got {item!r}", "kafka.bootstrap_servers")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ConfigError("no bootstrap server given", "kafka.bootstrap_servers")
    return out


def _budget(deadline: float) -> float:
    """Seconds left, never zero: every attempt gets at least a moment."""
    return max(deadline - time.monotonic(), 0.05)


async def _reach(
    host: str, port: int, tls: ssl.SSLContext | None, budget: float, address_setting: str
) -> _Failure | None:
    """The name resolves, a TCP connection opens and (with TLS) the handshake succeeds; else why not."""
    try:
        await asyncio.wait_for(asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM), budget)
    except socket.gaierror as exc:
        final = exc.errno in _NO_SUCH_NAME
        detail = "" if final else f": {str(exc.strerror or exc).lower()}"
        return _Failure(
            f"host name {host} does not resolve{detail}", final, f"check {address_setting}" if final else None
        )
    except TimeoutError:
        return _Failure(f"looking up host name {host} timed out")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), budget)
    except TimeoutError:
        return _Failure("connection timed out")
    except ConnectionRefusedError:
        return _Failure("connection refused")
    except OSError as exc:
        return _Failure(_os_cause(exc))
    try:
        if tls is not None:
            return await _handshake(writer, tls, host, budget)
        return None
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _handshake(writer: asyncio.StreamWriter, tls: ssl.SSLContext, host: str, budget: float) -> _Failure | None:
    hint = "check kafka.security_protocol and the kafka.ssl_* settings"
    try:
        await asyncio.wait_for(writer.start_tls(tls, server_hostname=host), budget)
    except TimeoutError:
        return _Failure("TLS handshake timed out")
    except ssl.SSLCertVerificationError as exc:
        return _Failure(f"TLS handshake failed: {exc.verify_message or _ssl_reason(exc)}", True, hint)
    except ssl.SSLError as exc:
        return _Failure(f"TLS handshake failed: {_ssl_reason(exc)}", True, hint)
    except OSError as exc:
        return _Failure(f"TLS handshake failed: {_os_cause(exc)}", True, hint)
    return None


async def _metadata(kwargs: dict[str, Any], budget: float, held: _HeldClientLogs) -> _Failure | None:
    """aiokafka's own bootstrap (Kafka and SASL handshakes) and a metadata request; else why not."""
    from aiokafka.admin import AIOKafkaAdminClient

    held.errors.clear()
    admin = AIOKafkaAdminClient(**kwargs, request_timeout_ms=max(1000, int(budget * 1000)))
    started = False

    async def ask() -> None:
        nonlocal started
        await admin.start()
        started = True
        await admin.list_topics()

    try:
        await asyncio.wait_for(ask(), budget)
        return None
    except TimeoutError:
        return (
            _silent_cluster(admin) if started else _Failure("connected, but no Kafka answer (is it a Kafka listener?)")
        )
    except Exception as exc:  # noqa: BLE001 - classified below; the probe never lets a client error through
        return _kafka_failure(exc, held.errors)
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


def _silent_cluster(admin: Any) -> _Failure:
    """Bootstrapped, but no broker it listed answered: almost always ``advertised.listeners``."""
    try:
        brokers = ", ".join(sorted(f"{b.host}:{b.port}" for b in admin._client.cluster.brokers()))  # noqa: SLF001
    except Exception:  # noqa: BLE001 - only for the message
        brokers = ""
    listed = f" ({brokers})" if brokers else ""
    return _Failure(
        f"the bootstrap server answered, but the brokers it advertises{listed} do not",
        hint="check the brokers' advertised.listeners",
    )


def _kafka_failure(exc: BaseException, logged: list[BaseException]) -> _Failure:
    """The cause of a failed aiokafka bootstrap, from the errors it logged.

    (Its exception says only 'unable to bootstrap'.)
    """
    for err in [*logged, exc]:
        if type(err).__name__ in _AUTH_ERRORS:
            return _Failure(
                f"SASL authentication failed: {_one_line(err)}",
                True,
                "check kafka.sasl_mechanism, sasl_username and sasl_password",
            )
        if isinstance(err, ssl.SSLError):
            return _Failure(
                f"TLS handshake failed: {_ssl_reason(err)}",
                True,
                "check kafka.security_protocol and the kafka.ssl_* settings",
            )
    last = logged[-1] if logged else exc
    if isinstance(last, ConnectionRefusedError):
        return _Failure("connection refused")
    if isinstance(last, asyncio.TimeoutError) or "Timeout" in type(last).__name__:
        return _Failure("connected, but no Kafka answer (is it a Kafka listener?)")
    return _Failure(f"connected, but the Kafka handshake failed: {_one_line(last)}")


def _unavailable(
    bootstrap: str, failures: dict[str, _Failure], waited: float | None, timeout_setting: str
) -> KafkaUnavailable:
    causes = {f.cause for f in failures.values()}
    if len(causes) == 1:
        cause = causes.pop()
    else:
        cause = "; ".join(f"{address} {f.cause}" for address, f in failures.items())
    hints = [f.hint for f in failures.values() if f.hint]
    if waited is not None:
        hints.append(f"set {timeout_setting} to wait longer")
    return KafkaUnavailable(bootstrap, cause, waited=waited, hint="; ".join(dict.fromkeys(hints)) or None)


def _os_cause(exc: OSError) -> str:
    return str(exc.strerror or exc).lower()


def _ssl_reason(exc: ssl.SSLError) -> str:
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc.reason or exc)
    return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", text)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _HeldClientLogs(logging.Handler):
    """Keeps the exceptions aiokafka logs while probing: they carry the cause its own errors leave out."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        self.errors.extend(a for a in args if isinstance(a, BaseException))
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


@contextlib.contextmanager
def _client_logs_held() -> Iterator[_HeldClientLogs]:
    """While probing, aiokafka's WARNING/ERROR records (one per failed attempt, about 160 for a
    40 s wait) go to a :class:`_HeldClientLogs` instead of the log, unless the log level is debug.
    Scoped: the ``aiokafka`` logger is restored afterwards."""
    logger = logging.getLogger("aiokafka")
    saved = (logger.level, logger.propagate)
    held = _HeldClientLogs()
    logger.addHandler(held)
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        yield held
    finally:
        logger.removeHandler(held)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


async def list_topics(conn: Conn) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    try:
        await admin.start()
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def partition_counts(conn: Conn, topics: Iterable[str]) -> dict[str, int]:
    """Partitions per existing topic (missing topics are left out)."""
    from aiokafka.admin import AIOKafkaAdminClient

    names = sorted(set(topics))
    if not names:
        return {}
    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    try:
        await admin.start()
        out = {}
        for desc in await admin.describe_topics(names):
            if desc.get("error_code", 0) == 0 and desc.get("partitions"):
                out[desc["topic"]] = len(desc["partitions"])
        return out
    finally:
        await admin.close()


async def create_topics(
    conn: Conn,
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
) -> list[str]:
    """Create the topics (name -> partitions) that do not exist yet; return those created."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    try:
        await admin.start()
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(name, n, replication_factor, topic_configs=dict(config or {}))
            for name, n in topics.items()
            if name not in existing
        ]
        if not wanted:
            return []
        try:
            resp = await admin.create_topics(wanted)
        except TopicAlreadyExistsError:
            return []
        created = []
        for name, code, *rest in getattr(resp, "topic_errors", []):
            if code == 0:
                created.append(name)
            elif code != TopicAlreadyExistsError.errno:
                msg = rest[0] if rest else ""
                raise RuntimeError(f"cannot create topic {name}: error {code} {msg or ''}".strip())
        return created
    finally:
        await admin.close()


__all__ = [
    "KafkaUnavailable",
    "bootstrap_addresses",
    "create_topics",
    "list_topics",
    "partition_counts",
    "wait_until_ready",
]
