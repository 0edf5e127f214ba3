"""The embedded broker: starts, answers Kafka requests, stops, and never outlives its owner."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from cdc_smt.connector import kafka as K
from cdc_smt.connector.broker import BrokerError, EmbeddedBroker, find_tansu, probe_metadata
from cdc_smt.transforms.model import Record
from tests.integration.helpers import (
    ROOT,
    alive,
    apache_kafka_container,
    assert_broker_dies_with_its_owner,
    docker_engine_available,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _tansu_or_skip() -> None:
    try:
        find_tansu()
    except BrokerError as exc:
        pytest.skip(str(exc))


def test_embedded_broker_round_trip_and_clean_stop() -> None:
    _tansu_or_skip()
    with EmbeddedBroker() as broker:
        pid = broker.pid
        assert broker.running and alive(pid)
        host, port = broker.bootstrap.split(":")
        assert probe_metadata(host, int(port)) == 1

        async def round_trip() -> list[Record]:
            await K.create_topics(broker.bootstrap, {"t": 2})
            await K.produce_records(
                broker.bootstrap, "t", [Record(value=b"v%d" % i, key=b"k%d" % i) for i in range(50)]
            )
            return await K.consume_all(broker.bootstrap, "t", min_records=50, idle=0.3)

        got = asyncio.run(round_trip())
        assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(50))
    assert not broker.running
    assert not alive(pid)


def test_broker_dies_with_a_killed_owner(tmp_path) -> None:
    """PR_SET_PDEATHSIG: SIGKILL the process that started the broker; the broker goes too."""
    _tansu_or_skip()
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signal is Linux-only")
    assert_broker_dies_with_its_owner(
        tmp_path, "from cdc_smt.connector.broker import EmbeddedBroker\nb = EmbeddedBroker().start()", 10
    )


def test_broker_command_prints_bootstrap_and_stops_on_sigterm() -> None:
    _tansu_or_skip()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc_smt.connector.cli", "broker", "--port", "0", "--topic", "demo:3"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("bootstrap: 127.0.0.1:"), line
        bootstrap = line.split()[-1]
        assert asyncio.run(K.partition_counts(bootstrap, ["demo"])) == {"demo": 3}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        host, port = bootstrap.split(":")
        with pytest.raises(OSError):
            probe_metadata(host, int(port), timeout=1)
    finally:
        proc.kill()
        proc.wait(10)


def test_fixed_port_in_use_is_a_clear_error() -> None:
    _tansu_or_skip()
    with EmbeddedBroker() as first:
        second = EmbeddedBroker(port=first.port, startup_timeout=10)
        with pytest.raises(BrokerError, match="in use"):
            second.start()
        assert not second.running


def test_apache_kafka_through_testcontainers() -> None:
    """The Docker fixture path: skips cleanly where no Docker engine answers."""
    if not docker_engine_available():
        pytest.skip("no Docker engine: the testcontainers (Apache Kafka) path is not available here")
    for bootstrap in apache_kafka_container():
        asyncio.run(K.create_topics(bootstrap, {"tc": 1}))
        asyncio.run(K.produce_records(bootstrap, "tc", [Record(value=b"x", key=b"k")]))
        got = asyncio.run(K.consume_all(bootstrap, "tc", min_records=1, idle=0.2))
        assert [r.value for r in got] == [b"x"]
