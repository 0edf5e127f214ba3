"""The job's Kafka settings as aiokafka, Faust and Spark's Kafka connector see them: every
security protocol and SASL mechanism the job schema allows, mapped once (connector/kafka/settings.py)."""

from __future__ import annotations

import asyncio
import base64
import glob
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import load_job
from cdc_smt.transforms.errors import ConfigError

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "job.schema.json").read_text())["properties"][
    "kafka"
]
MECHANISMS = SCHEMA["properties"]["sasl_mechanism"]["enum"]
PROTOCOLS = SCHEMA["properties"]["security_protocol"]["enum"]
SASL_PROTOCOLS = [p for p in PROTOCOLS if p.startswith("SASL_")]

#: Written out here, independently of the code: the Java login module each mechanism needs.
JAVA_LOGIN_MODULE = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def job_kafka(**kafka: Any) -> K.KafkaSettings:
    doc = {
        "id": "sec-test",
        "kafka": {"bootstrap_servers": "k1:9093,k2:9093", **kafka},
        "source": {"topics": ["in"], "format": "canal-json"},
        "sink": {"topic": "out", "format": "debezium-json"},
    }
    return load_job(doc, env={}).kafka


def test_every_mechanism_and_protocol_of_the_schema_has_a_mapping() -> None:
    assert set(MECHANISMS) == set(K.SASL_LOGIN_MODULES) == set(JAVA_LOGIN_MODULE)
    assert set(PROTOCOLS) == set(K.SECURITY_PROTOCOLS)


@pytest.mark.parametrize("protocol", SASL_PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_spark_options_use_the_mechanisms_login_module(mechanism: str, protocol: str) -> None:
    k = job_kafka(security_protocol=protocol, sasl_mechanism=mechanism, sasl_username="alice", sasl_password="s3cret")
    opts = k.spark_options()
    assert opts["kafka.bootstrap.servers"] == "k1:9093,k2:9093"
    assert opts["kafka.security.protocol"] == protocol
    assert opts["kafka.sasl.mechanism"] == mechanism
    assert (
        opts["kafka.sasl.jaas.config"] == f'{JAVA_LOGIN_MODULE[mechanism]} required username="alice" password="s3cret";'
    )


def test_plain_is_the_default_mechanism_everywhere() -> None:
    k = job_kafka(security_protocol="SASL_PLAINTEXT", sasl_username="u", sasl_password="p")
    assert k.spark_options()["kafka.sasl.mechanism"] == "PLAIN"
    assert k.spark_options()["kafka.sasl.jaas.config"].startswith(JAVA_LOGIN_MODULE["PLAIN"] + " required ")
    assert k.aiokafka_kwargs()["sasl_mechanism"] == "PLAIN"
    assert k.faust_credentials().mechanism.value == "PLAIN"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_kwargs_per_protocol_and_mechanism_are_accepted_by_aiokafka(mechanism: str, protocol: str) -> None:
    sasl = protocol.startswith("SASL_")
    extra = {"sasl_mechanism": mechanism, "sasl_username": "alice", "sasl_password": "s3cret"} if sasl else {}
    kw = job_kafka(security_protocol=protocol, **extra).aiokafka_kwargs()
    assert kw["security_protocol"] == protocol
    assert kw["bootstrap_servers"] == ["k1:9093", "k2:9093"]
    assert ("ssl_context" in kw) == protocol.endswith("SSL")
    if sasl:
        assert (kw["sasl_mechanism"], kw["sasl_plain_username"], kw["sasl_plain_password"]) == (
            mechanism,
            "alice",
            "s3cret",
        )
    else:
        assert not any(key.startswith("sasl_") for key in kw)

    async def construct() -> None:  # aiokafka checks protocol, mechanism and credentials when a client is made
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        AIOKafkaProducer(**kw)
        AIOKafkaConsumer(**kw)

    asyncio.run(construct())


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_faust_reaches_the_same_aiokafka_settings(mechanism: str, protocol: str) -> None:
    """What Faust hands its aiokafka clients (its own translation of our credentials) equals ours."""
    pytest.importorskip("faust")
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    sasl = protocol.startswith("SASL_")
    extra = {"sasl_mechanism": mechanism, "sasl_username": "alice", "sasl_password": "s3cret"} if sasl else {}
    k = job_kafka(security_protocol=protocol, **extra)
    ours = k.aiokafka_kwargs()
    settings_ = k.faust_settings()
    assert settings_["broker"] == ["kafka://k1:9093", "kafka://k2:9093"]
    faust_side = dict(credentials_to_aiokafka_auth(settings_.get("broker_credentials")))
    assert faust_side["security_protocol"] == protocol
    assert (faust_side.get("ssl_context") is not None) == ("ssl_context" in ours)
    for key in ("sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        assert faust_side.get(key) == ours.get(key)


def test_the_worker_app_gets_the_credentials() -> None:
    pytest.importorskip("faust")
    from cdc_smt.connector.worker.app import build_app

    doc = {
        "id": "sec-app",
        "kafka": {
            "bootstrap_servers": "k1:9093",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "alice",
            "sasl_password": "s3cret",
        },
        "source": {"topics": ["in"], "format": "canal-json"},
        "sink": {"topic": "out", "format": "debezium-json"},
        "producer": {"linger_ms": 7},
    }
    job = load_job(doc, env={})
    app = build_app(job)
    creds = app.conf.broker_credentials
    assert (creds.mechanism.value, creds.username, creds.password, creds.protocol.value) == (
        "SCRAM-SHA-512",
        "alice",
        "s3cret",
        "SASL_SSL",
    )
    assert app.conf.producer_linger == pytest.approx(0.007)


def test_ssl_maps_to_pem_stores_for_spark(tmp_path: Path) -> None:
    k = job_kafka(
        security_protocol="SSL",
        ssl_cafile="/etc/ca.pem",
        ssl_certfile="/etc/client.pem",
        ssl_password="kp",
        ssl_check_hostname=False,
    )
    opts = k.spark_options()
    assert opts["kafka.security.protocol"] == "SSL"
    assert (opts["kafka.ssl.truststore.type"], opts["kafka.ssl.truststore.location"]) == ("PEM", "/etc/ca.pem")
    assert (opts["kafka.ssl.keystore.type"], opts["kafka.ssl.keystore.location"]) == ("PEM", "/etc/client.pem")
    assert opts["kafka.ssl.key.password"] == "kp"
    assert opts["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert not any(key.startswith("kafka.sasl.") for key in opts)
    plain = job_kafka().spark_options()
    assert plain == {"kafka.bootstrap.servers": "k1:9093,k2:9093", "kafka.security.protocol": "PLAINTEXT"}


def test_a_separate_key_file_is_refused_for_spark_not_dropped() -> None:
    k = job_kafka(
        security_protocol="SASL_SSL", sasl_username="u", sasl_password="p", ssl_certfile="/c.pem", ssl_keyfile="/k.pem"
    )
    with pytest.raises(ConfigError, match="one PEM file") as info:
        k.spark_options()
    assert info.value.path == "kafka.ssl_keyfile"


def test_a_mechanism_without_a_mapping_is_refused_by_every_client() -> None:
    k = K.KafkaSettings(
        ("k:9092",), security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI", sasl_username="u", sasl_password="p"
    )
    for translate in (k.spark_options, k.aiokafka_kwargs, k.faust_credentials):
        with pytest.raises(ConfigError, match="'GSSAPI' is not supported"):
            translate()
    with pytest.raises(ConfigError):
        K.jaas_config("OAUTHBEARER", "u", "p")


def test_the_schema_refuses_mechanisms_it_does_not_list() -> None:
    with pytest.raises(ConfigError, match="sasl_mechanism"):
        job_kafka(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI", sasl_username="u", sasl_password="p")


def test_settings_travel_as_json_unchanged() -> None:
    k = job_kafka(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="u",
        sasl_password='p"\\',
        ssl_check_hostname=False,
    )
    assert K.settings_from_json(K.connection_json(k)) == k
    assert K.settings_from_json(json.loads(K.connection_json(k))) == k


def test_client_kwargs_of_each_kind_of_connection() -> None:
    k = job_kafka(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256", sasl_username="u", sasl_password="p"
    )
    assert K.client_kwargs("h:1") == {"bootstrap_servers": "h:1"}
    assert K.client_kwargs(k) == k.aiokafka_kwargs()
    assert K.client_kwargs({"bootstrap_servers": "h:1", "client_id": "c"}) == {
        "bootstrap_servers": "h:1",
        "client_id": "c",
    }


def test_producer_section_maps_to_aiokafka() -> None:
    doc = {
        "id": "p",
        "kafka": {"bootstrap_servers": "k:9092"},
        "source": {"topics": ["in"], "format": "canal-json"},
        "sink": {"topic": "out", "format": "debezium-json"},
        "producer": {"acks": 1, "compression_type": "lz4", "linger_ms": 9, "batch_size": 2048},
    }
    kw = K.producer_kwargs(load_job(doc, env={}).producer)
    assert (kw["acks"], kw["compression_type"], kw["linger_ms"], kw["max_batch_size"]) == (1, "lz4", 9, 2048)
    assert K.producer_kwargs(load_job({**doc, "producer": {}}, env={}).producer)["acks"] == "all"


# -- JAAS quoting --------------------------------------------------------------------------------


def stream_tokenizer_quoted(text: str, start: int) -> tuple[str, int]:
    """A double-quoted string as ``java.io.StreamTokenizer`` reads it (Kafka's JAAS parser):
    backslash escapes (``\\n``, ``\\t``, octal, any other character as itself); an
    unescaped line break ends the string early (which a value must never cause)."""
    assert text[start] == '"'
    out, i = [], start + 1
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
    while text[i] != '"':
        c = text[i]
        if c in "\r\n":
            raise AssertionError(f"raw line break inside a quoted JAAS value at {i}")
        if c == "\\":
            i += 1
            c = text[i]
            if c in "01234567":
                digits = c
                while len(digits) < (3 if c <= "3" else 2) and text[i + 1] in "01234567":
                    i += 1
                    digits += text[i]
                c = chr(int(digits, 8))
            else:
                c = simple.get(c, c)
        out.append(c)
        i += 1
    return "".join(out), i + 1


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text())
def test_jaas_values_read_back_exactly(username: str, password: str) -> None:
    config = K.jaas_config("SCRAM-SHA-256", username, password)
    head = JAVA_LOGIN_MODULE["SCRAM-SHA-256"] + " required username="
    assert config.startswith(head)
    got_user, i = stream_tokenizer_quoted(config, len(head))
    assert config[i : i + len(" password=")] == " password="
    got_password, j = stream_tokenizer_quoted(config, i + len(" password="))
    assert (got_user, got_password, config[j:]) == (username, password, ";")


def test_jaas_quotes_and_backslashes_are_escaped() -> None:
    assert (
        K.jaas_config("PLAIN", 'a"b', "c\\d")
        == f'{JAVA_LOGIN_MODULE["PLAIN"]} required username="a\\"b" password="c\\\\d";'
    )


def _kafka_clients_classpath() -> str | None:
    """kafka-clients and slf4j-api from the local Maven repository, if both are there."""
    m2 = Path(os.environ.get("MAVEN_REPO", Path.home() / ".m2" / "repository"))
    clients = sorted(glob.glob(str(m2 / "org/apache/kafka/kafka-clients/*/kafka-clients-*[0-9].jar")))
    slf4j = sorted(glob.glob(str(m2 / "org/slf4j/slf4j-api/*/slf4j-api-*[0-9].jar")))
    return f"{clients[-1]}{os.pathsep}{slf4j[-1]}" if clients and slf4j else None


JAVA_READER = """
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
import javax.security.auth.login.AppConfigurationEntry;
import java.util.*;
public class ReadJaas {
    public static void main(String[] args) throws Exception {
        Scanner in = new Scanner(System.in, "UTF-8");
        Base64.Encoder enc = Base64.getEncoder();
        while (in.hasNextLine()) {
            String text = new String(Base64.getDecoder().decode(in.nextLine()), "UTF-8");
            Map<String, Object> cfg = new HashMap<>();
            cfg.put("sasl.jaas.config", new Password(text));
            AppConfigurationEntry e = JaasContext.loadClientContext(cfg).configurationEntries().get(0);
            Map<String, ?> o = e.getOptions();
            System.out.println(e.getLoginModuleName()
                + " " + enc.encodeToString(((String) o.get("username")).getBytes("UTF-8"))
                + " " + enc.encodeToString(((String) o.get("password")).getBytes("UTF-8")));
        }
    }
}
"""


def test_the_java_client_reads_our_jaas_config_back(tmp_path: Path) -> None:
    """Kafka's own JAAS parser (kafka-clients, when the local Maven repository has it) reads every
    mechanism's config back to the same login module, user and password."""
    classpath = _kafka_clients_classpath()
    if classpath is None or not (shutil.which("javac") and shutil.which("java")):
        pytest.skip("needs javac/java and kafka-clients + slf4j-api in the local Maven repository")
    (tmp_path / "ReadJaas.java").write_text(JAVA_READER)
    subprocess.run(["javac", "-cp", classpath, "ReadJaas.java"], cwd=tmp_path, check=True, capture_output=True)
    values = [
        ("alice", "plain"),
        ('al"ice', 'p"w\\d\\"x'),
        ("u\\", "\\"),
        ("ü ñ", "a\nb\rc\td"),
        ("", ""),
        ("x", "a b;c = 'q' // d /* e */"),
        ("x", "\\n\\0\\101"),
    ]
    cases = [(m, u, p) for m in MECHANISMS for u, p in values]
    lines = "".join(base64.b64encode(K.jaas_config(m, u, p).encode()).decode() + "\n" for m, u, p in cases)
    out = subprocess.run(
        ["java", "-cp", f"{classpath}{os.pathsep}.", "ReadJaas"],
        cwd=tmp_path,
        input=lines,
        capture_output=True,
        text=True,
        check=True,
    )
    got = [line.split(" ") for line in out.stdout.splitlines() if not line.startswith("SLF4J")]
    decoded = [(mod, base64.b64decode(u).decode(), base64.b64decode(p).decode()) for mod, u, p in got]
    assert decoded == [(JAVA_LOGIN_MODULE[m], u, p) for m, u, p in cases]
