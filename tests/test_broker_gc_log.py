"""The Apache Kafka broker's collector pauses, read from its GC log (the latency bench's attribution)."""

from __future__ import annotations

from pathlib import Path

from cdc_smt.connector.apache_kafka import KAFKA_SCRIPT_JVM, TEST_JVM, gc_pauses

# Lines as JDK 17's ``-Xlog:gc:file=...:uptime`` writes them (G1, then the serial collector).
G1_LOG = """\
[0.012s] Using G1
[5.123s] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 51M->3M(1024M) 4.321ms
[6.002s] GC(1) Pause Young (Concurrent Start) (G1 Humongous Allocation) 400M->380M(1024M) 12.500ms
[6.010s] GC(1) Concurrent Mark Cycle
[6.100s] GC(1) Pause Remark 390M->390M(1024M) 1.500ms
[6.120s] GC(1) Pause Cleanup 390M->390M(1024M) 0.100ms
[6.130s] GC(1) Concurrent Mark Cycle 120.000ms
"""
SERIAL_LOG = """\
[0.010s] Using Serial
[3.000s] GC(0) Pause Young (Allocation Failure) 68M->9M(247M) 7.250ms
[9.000s] GC(1) Pause Full (System.gc()) 40M->12M(247M) 33.000ms
"""


def test_every_stop_the_world_pause_is_read_and_no_concurrent_phase(tmp_path: Path) -> None:
    path = tmp_path / "gc.log"
    path.write_text(G1_LOG)
    pauses, offset = gc_pauses(path)
    assert pauses == [4.321, 12.5, 1.5, 0.1]  # not the 120 ms concurrent cycle: the broker kept running
    assert offset == len(G1_LOG.encode())
    path.write_text(SERIAL_LOG)
    assert gc_pauses(path)[0] == [7.25, 33.0]


def test_reading_on_from_an_offset_returns_only_new_pauses_and_waits_for_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "gc.log"
    first, second = G1_LOG.splitlines(keepends=True)[:2], G1_LOG.splitlines(keepends=True)[2]
    path.write_text("".join(first) + second[:30])  # the JVM is still writing the third line
    pauses, offset = gc_pauses(path)
    assert pauses == [4.321]
    with open(path, "a") as f:
        f.write(second[30:])
    again, offset2 = gc_pauses(path, offset)
    assert again == [12.5]
    assert gc_pauses(path, offset2) == ([], offset2)


def test_no_log_yet_is_no_pauses(tmp_path: Path) -> None:
    assert gc_pauses(tmp_path / "missing.log", 7) == ([], 7)


def test_the_bench_broker_runs_as_kafkas_scripts_start_it_and_the_tests_one_stays_small() -> None:
    assert {"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Xmx1G", "-Xms1G"} <= set(KAFKA_SCRIPT_JVM)
    assert "-XX:+UseSerialGC" in TEST_JVM and "-XX:+UseG1GC" not in TEST_JVM
