"""The job's Kafka settings, translated once for each client that reaches the cluster.

- aiokafka (admin, producer, consumer; the worker's and the backfill's own reads
  and writes): :meth:`KafkaSettings.aiokafka_kwargs`, :func:`producer_kwargs`;
- Faust (the worker's app): :meth:`KafkaSettings.faust_settings`,
  :func:`faust_client_settings`;
- Spark's own Kafka connector (``format("kafka")``, a Java client):
  :meth:`KafkaSettings.spark_options`.

Every SASL mechanism the job schema allows is mapped for each of them
(:data:`SASL_LOGIN_MODULES`); a mechanism without a mapping is refused with a
clear error, never sent with the wrong login module.

``Conn`` everywhere in this package is a bootstrap string
(``"127.0.0.1:9092"``), a :class:`KafkaSettings`, or ready aiokafka keyword
arguments, so SASL/SSL settings flow through unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_smt.transforms.errors import ConfigError

if TYPE_CHECKING:
    import ssl

    from cdc_smt.connector.jobconfig import ConsumerSettings, ProducerSettings

#: SASL mechanism (as ``kafka.sasl_mechanism`` in the job schema) -> the JAAS login module
#: a Java client (Spark's Kafka connector) needs for it. aiokafka and Faust take the
#: mechanism name itself. A mechanism added to the schema must be added here (a test checks).
SASL_LOGIN_MODULES: dict[str, str] = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Seconds a host waits at start-up for the cluster to answer (``kafka.connect_timeout_s``).
DEFAULT_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class KafkaSettings:
    """How to reach the cluster. Passwords are excluded from ``repr``."""

    bootstrap_servers: tuple[str, ...]
    client_id: str = "cdc-smt"
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True
    #: How long start-up waits for a refusing or silent cluster (a broker still starting) before failing.
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    @property
    def bootstrap(self) -> str:
        return ",".join(self.bootstrap_servers)

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def mechanism(self) -> str:
        """The SASL mechanism (PLAIN when unset); a :class:`ConfigError` for one no client mapping knows."""
        mechanism = self.sasl_mechanism or "PLAIN"
        if mechanism not in SASL_LOGIN_MODULES:
            raise ConfigError(
                f"SASL mechanism {mechanism!r} is not supported; use one of {', '.join(SASL_LOGIN_MODULES)}",
                "kafka.sasl_mechanism",
            )
        return mechanism

    def ssl_context(self) -> ssl.SSLContext | None:
        """An SSL context from the CA/cert/key files, or ``None`` without SSL."""
        if not self.uses_ssl:
            return None
        import ssl

        ctx = ssl.create_default_context(cafile=self.ssl_cafile)
        ctx.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password)
        return ctx

    # -- aiokafka -------------------------------------------------------------------------
    def aiokafka_kwargs(self) -> dict[str, Any]:
        """Connection keyword arguments for aiokafka clients (admin, producer, consumer)."""
        out: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
        }
        ctx = self.ssl_context()
        if ctx is not None:
            out["ssl_context"] = ctx
        if self.uses_sasl:
            out["sasl_mechanism"] = self.mechanism
            out["sasl_plain_username"] = self.sasl_username
            out["sasl_plain_password"] = self.sasl_password
        return out

    # -- Faust ----------------------------------------------------------------------------
    def faust_credentials(self) -> Any:
        """Faust credentials (SASL or SSL), or ``None`` for PLAINTEXT.

        Faust derives the security protocol from the credentials: SASL with an
        SSL context is SASL_SSL, without one SASL_PLAINTEXT.
        """
        import faust

        ctx = self.ssl_context()
        if self.uses_sasl:
            return faust.SASLCredentials(
                username=self.sasl_username, password=self.sasl_password, ssl_context=ctx, mechanism=self.mechanism
            )
        if ctx is not None:
            return faust.SSLCredentials(ctx)
        return None

    def faust_settings(self) -> dict[str, Any]:
        """The Faust app settings that say how to reach the cluster."""
        out: dict[str, Any] = {
            "broker": [f"kafka://{s}" for s in self.bootstrap_servers],
            "broker_client_id": self.client_id,
        }
        creds = self.faust_credentials()
        if creds is not None:
            out["broker_credentials"] = creds
        return out

    # -- Spark's Kafka connector (a Java client) --------------------------------------------
    def spark_options(self) -> dict[str, str]:
        """``kafka.*`` options for Spark's ``format("kafka")`` source and sink.

        SSL files map to PEM trust and key stores. A Java PEM key store is one
        file holding the key and its certificate chain, so a key in a separate
        ``ssl_keyfile`` is refused here rather than silently left out.
        """
        out = {"kafka.bootstrap.servers": self.bootstrap, "kafka.security.protocol": self.security_protocol}
        if self.uses_sasl:
            out["kafka.sasl.mechanism"] = self.mechanism
            out["kafka.sasl.jaas.config"] = jaas_config(
                self.mechanism, self.sasl_username or "", self.sasl_password or ""
            )
        if self.uses_ssl:
            if self.ssl_cafile:
                out["kafka.ssl.truststore.type"] = "PEM"
                out["kafka.ssl.truststore.location"] = self.ssl_cafile
            if not self.ssl_check_hostname:
                out["kafka.ssl.endpoint.identification.algorithm"] = ""
            if self.ssl_certfile:
                if self.ssl_keyfile and self.ssl_keyfile != self.ssl_certfile:
                    raise ConfigError(
                        "Spark's Kafka connector reads the client key and certificate from one PEM file: "
                        "put both in ssl_certfile and drop ssl_keyfile (or use source.type kafka)",
                        "kafka.ssl_keyfile",
                    )
                out["kafka.ssl.keystore.type"] = "PEM"
                out["kafka.ssl.keystore.location"] = self.ssl_certfile
                if self.ssl_password:
                    out["kafka.ssl.key.password"] = self.ssl_password
        return out

    # -- logging ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Loggable view: secrets replaced by ``***``."""
        out: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "security_protocol": self.security_protocol,
        }
        if self.uses_sasl:
            out["sasl_mechanism"] = self.sasl_mechanism or "PLAIN"
            out["sasl_username"] = self.sasl_username
            out["sasl_password"] = "***" if self.sasl_password else None
        if self.uses_ssl:
            out["ssl_cafile"] = self.ssl_cafile
            out["ssl_certfile"] = self.ssl_certfile
        return out


def jaas_quote(value: str) -> str:
    """``value`` as a double-quoted JAAS string (Kafka parses it with ``java.io.StreamTokenizer``)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """``sasl.jaas.config`` for a Java client: the mechanism's login module with the credentials."""
    module = SASL_LOGIN_MODULES.get(mechanism)
    if module is None:
        raise ConfigError(f"SASL mechanism {mechanism!r} has no Java login module mapping", "kafka.sasl_mechanism")
    return f"{module} required username={jaas_quote(username)} password={jaas_quote(password)};"


# -- the connection as one value ---------------------------------------------------------------
Conn = str | Mapping[str, Any] | KafkaSettings


def client_kwargs(conn: Conn) -> dict[str, Any]:
    """aiokafka connection keyword arguments for a bootstrap string, settings, or ready kwargs."""
    if isinstance(conn, str):
        return {"bootstrap_servers": conn}
    if isinstance(conn, KafkaSettings):
        return conn.aiokafka_kwargs()
    return dict(conn)


def connection_json(kafka: KafkaSettings) -> str:
    """``kafka`` as JSON text, for Spark data source options and task closures (secrets included)."""
    return json.dumps(dataclasses.asdict(kafka))


def settings_from_json(text: str | Mapping[str, Any]) -> KafkaSettings:
    """The :class:`KafkaSettings` of :func:`connection_json` text (or its parsed dict)."""
    d = json.loads(text) if isinstance(text, str) else dict(text)
    d["bootstrap_servers"] = tuple(d["bootstrap_servers"])
    return KafkaSettings(**d)


# -- producer and consumer sections of a job ---------------------------------------------------
def producer_kwargs(p: ProducerSettings) -> dict[str, Any]:
    """aiokafka producer keyword arguments for the job's ``producer`` section."""
    return {
        "acks": "all" if p.acks == -1 else p.acks,
        "compression_type": p.compression_type,
        "linger_ms": p.linger_ms,
        "max_batch_size": p.batch_size,
        "max_request_size": p.max_request_size,
        "request_timeout_ms": p.request_timeout_ms,
    }


def consumer_kwargs(c: ConsumerSettings, *, max_poll_records: int) -> dict[str, Any]:
    """aiokafka consumer keyword arguments for the job's ``consumer`` section (the fetch settings
    the worker's consumer thread gets; offsets are committed by the host, never automatically)."""
    return {
        "auto_offset_reset": c.auto_offset_reset,
        "enable_auto_commit": False,
        "fetch_max_wait_ms": c.fetch_max_wait_ms,
        "fetch_max_bytes": c.fetch_max_bytes,
        "max_partition_fetch_bytes": c.max_partition_fetch_bytes,
        "max_poll_records": max_poll_records,
        "session_timeout_ms": c.session_timeout_ms,
        "heartbeat_interval_ms": c.heartbeat_interval_ms,
        "request_timeout_ms": c.request_timeout_ms,
    }


def spark_producer_options(p: ProducerSettings) -> dict[str, str]:
    """``kafka.*`` producer options for Spark's ``format("kafka")`` writer from the job's ``producer`` section.

    The Java producer retries a send until ``delivery.timeout.ms``, which it
    requires to be at least ``linger.ms + request.timeout.ms``: it is raised
    with a long request timeout (as set to ride out a broker restart), never
    below Java's 120 s default.
    """
    return {
        "kafka.acks": "all" if p.acks == -1 else str(p.acks),
        "kafka.compression.type": p.compression_type or "none",
        "kafka.linger.ms": str(p.linger_ms),
        "kafka.batch.size": str(p.batch_size),
        "kafka.max.request.size": str(p.max_request_size),
        "kafka.request.timeout.ms": str(p.request_timeout_ms),
        "kafka.delivery.timeout.ms": str(max(120_000, p.linger_ms + p.request_timeout_ms)),
    }


def faust_client_settings(
    kafka: KafkaSettings, consumer: ConsumerSettings, producer: ProducerSettings
) -> dict[str, Any]:
    """Faust app settings for the connection and the job's ``consumer``/``producer`` sections."""
    return {
        **kafka.faust_settings(),
        "consumer_auto_offset_reset": consumer.auto_offset_reset,
        "consumer_max_fetch_size": consumer.max_partition_fetch_bytes,
        "broker_session_timeout": consumer.session_timeout_ms / 1000,
        "broker_heartbeat_interval": consumer.heartbeat_interval_ms / 1000,
        "broker_request_timeout": consumer.request_timeout_ms / 1000,
        "producer_acks": producer.acks,
        "producer_compression_type": producer.compression_type,
        "producer_linger": producer.linger_ms / 1000,
        "producer_max_batch_size": producer.batch_size,
        "producer_max_request_size": producer.max_request_size,
        "producer_request_timeout": producer.request_timeout_ms / 1000,
    }


__all__ = [
    "Conn",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "KafkaSettings",
    "SASL_LOGIN_MODULES",
    "SECURITY_PROTOCOLS",
    "client_kwargs",
    "connection_json",
    "consumer_kwargs",
    "faust_client_settings",
    "jaas_config",
    "jaas_quote",
    "producer_kwargs",
    "settings_from_json",
    "spark_producer_options",
]
