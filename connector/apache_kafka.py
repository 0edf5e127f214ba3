"""Apache Kafka from Maven Central: resolve the jars, run a single-node KRaft broker.

One module for the integration fixtures, ``./dev test`` and ``cdc-smt broker
--apache-kafka``, so all of them run the same Kafka the same way:

- :func:`resolve` runs Maven once on ``tests/jvm/pom.xml`` (a parent with one
  module per JVM harness) and copies each module's runtime jars into
  ``.cache/jvm/<module>/lib`` of the checkout, with the local Maven repository
  in ``.cache/m2`` (both git-ignored). A stamp file holding a hash of the poms
  and properties skips Maven when the cache is complete, so offline re-runs
  work.
- :class:`ApacheKafka` formats a data directory (``kafka.tools.StorageTool``,
  what ``kafka-storage format`` runs; SCRAM users with ``--add-scram``), starts
  ``kafka.Kafka`` as broker and controller on free loopback ports (PLAINTEXT,
  and SASL_PLAINTEXT with PLAIN and SCRAM users), waits until it answers a
  Metadata request, and can stop and start again on the same data directory
  and ports (the broker-fault tests).

No broker outlives its owner: it runs in its own process group, is stopped by
``atexit``, a finalizer and the fixtures, and is killed by the kernel when the
thread that started it dies (``PR_SET_PDEATHSIG``; see :mod:`connector.broker`).
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cdc_smt.connector.broker import _terminate, die_with_parent, free_port, port_in_use, probe_metadata
from cdc_smt.transforms.errors import CdcSmtError

ROOT = Path(__file__).resolve().parents[1]
#: The Maven project listing the jars of every JVM harness of the tests.
POM = ROOT / "tests" / "jvm" / "pom.xml"
#: Where jars and the local Maven repository are cached (git-ignored); ``$CDC_SMT_JVM_CACHE`` overrides.
CACHE_ENV = "CDC_SMT_JVM_CACHE"
#: A folder of Kafka jars to use instead of resolving (e.g. ``libs/`` of a Kafka download).
LIB_ENV = "CDC_SMT_KAFKA_LIB"
#: Spark's Kafka connector is published with Spark; a PySpark release may be on PyPI before
#: its connector is on Maven Central (PySpark 4.3.0: Central's newest is 4.2.0). Tried in order.
SPARK_KAFKA_FALLBACKS = ("4.2.0",)
#: SASL users of the broker (each for PLAIN and SCRAM-SHA-256/512) and their passwords.
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
HEAP = os.environ.get("CDC_SMT_KAFKA_HEAP", "-Xms256m -Xmx768m")
#: The broker's JVM in the tests: a small heap and the serial collector, the least CPU beside
#: the tests on 2 cores.
TEST_JVM = (*HEAP.split(), "-XX:+UseSerialGC")
#: The broker's JVM as Kafka's own scripts start it (``kafka-server-start.sh``'s heap,
#: ``kafka-run-class.sh``'s ``KAFKA_JVM_PERFORMANCE_OPTS``): G1 with a 20 ms pause goal, what a
#: production broker runs. The latency bench measures against this one.
KAFKA_SCRIPT_JVM = (
    "-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
)  # fmt: skip


class ApacheKafkaError(CdcSmtError):
    """Apache Kafka could not be resolved, formatted, started or reached."""


# -- resolution -----------------------------------------------------------------------------------
def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or ROOT / ".cache")


def _stamp_of(module: str, properties: dict[str, str]) -> str:
    h = hashlib.sha256()
    for pom in (POM, POM.parent / module / "pom.xml"):
        h.update(pom.read_bytes())
    h.update(repr(sorted(properties.items())).encode())
    return h.hexdigest()


def _lib(module: str) -> Path:
    return cache_dir() / "jvm" / module / "lib"


def _is_cached(module: str, properties: dict[str, str]) -> bool:
    stamp = _lib(module).parent / ".stamp"
    return (
        POM.is_file()
        and stamp.is_file()
        and stamp.read_text().strip() == _stamp_of(module, properties)
        and any(_lib(module).glob("*.jar"))
    )


def _run_maven(module: str, properties: dict[str, str]) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ApacheKafkaError(f"resolving {module} jars needs Maven ('mvn' on PATH) and Java 17, or set {LIB_ENV}")
    if not POM.is_file():
        raise ApacheKafkaError(f"{POM} is missing: resolving jars needs a cdc-smt checkout (or set {LIB_ENV})")
    lib = _lib(module)
    lib.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib.parent, prefix=".staging-") as staging:
        args = [
            mvn, "-q", "-B", "-f", str(POM), "-pl", module,
            f"-Dmaven.repo.local={cache_dir() / 'm2'}", f"-Djvm.cache={staging}",
            *(f"-D{k}={v}" for k, v in properties.items()),
            "dependency:copy-dependencies",
        ]  # fmt: skip
        done = subprocess.run(args, capture_output=True, text=True, cwd=POM.parent)
        if done.returncode != 0:
            errors = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln][:3]
            raise ApacheKafkaError(
                f"Maven could not resolve {module} ({' '.join(properties.values()) or 'pom'}): " + " | ".join(errors)
            )
        shutil.rmtree(lib, ignore_errors=True)  # no stale jars of another version
        os.replace(Path(staging) / module / "lib", lib)
    (lib.parent / ".stamp").write_text(_stamp_of(module, properties) + "\n")


def resolve(module: str = "kafka", properties: dict[str, str] | None = None) -> Path:
    """The folder of ``module``'s runtime jars, resolving them with Maven unless cached."""
    properties = properties or {}
    if module == "kafka" and os.environ.get(LIB_ENV):
        lib = Path(os.environ[LIB_ENV])
        if not any(lib.glob("kafka_2.13-*.jar")):
            raise ApacheKafkaError(f"{LIB_ENV}={lib} holds no kafka_2.13-*.jar")
        return lib
    if not _is_cached(module, properties):
        _run_maven(module, properties)
    return _lib(module)


def installed_pyspark_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("pyspark")
    except PackageNotFoundError:
        return None


def spark_kafka_jars(spark_version: str | None = None) -> list[Path]:
    """Jars to add to ``spark.jars`` for ``format("kafka")``: the connector at the installed
    PySpark version (else the newest published before it), minus what PySpark already ships."""
    spark_version = spark_version or installed_pyspark_version()
    if spark_version is None:
        raise ApacheKafkaError("PySpark is not installed")
    chosen = _lib("spark-kafka").parent / f".version-for-{spark_version}"  # skips failed look-ups next time
    candidates = (spark_version, *(v for v in SPARK_KAFKA_FALLBACKS if v != spark_version))
    if chosen.is_file():
        candidates = (chosen.read_text().strip(), *candidates)
    tried: list[str] = []
    for candidate in dict.fromkeys(candidates):
        try:
            lib = resolve("spark-kafka", {"spark.version": candidate})
            chosen.write_text(candidate + "\n")
            break
        except ApacheKafkaError as exc:
            if "could not resolve" not in str(exc).lower():
                raise
            tried.append(candidate)
    else:
        raise ApacheKafkaError(f"no spark-sql-kafka-0-10_2.13 resolves (tried {', '.join(tried)})")
    import pyspark

    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(p for p in lib.glob("*.jar") if _artifact(p.name) not in shipped)


#: Flink's Kafka SQL connector is released apart from Flink, as ``<connector>-<Flink minor>``; per
#: installed Flink minor, the releases to try in order (the newest built for it or just before it:
#: 5.0.0-2.2 runs on Flink 2.3, for which none is published yet; 5.0.0-2.1 does not resolve).
FLINK_KAFKA_CONNECTORS = {
    "2.3": ("5.0.0-2.2",),
    "2.2": ("5.0.0-2.2",),
    "2.1": ("5.0.0-2.2",),
    "2.0": ("4.0.1-2.0", "4.0.0-2.0"),
    "1.20": ("3.4.0-1.20", "3.3.0-1.20"),
    "1.19": ("3.3.0-1.19",),
}


def installed_pyflink_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("apache-flink")
    except PackageNotFoundError:
        return None


def flink_kafka_jars(flink_version: str | None = None) -> list[Path]:
    """Jars to add to ``pipeline.jars`` for Flink SQL's ``'connector' = 'kafka'``: the
    ``flink-sql-connector-kafka`` release for the installed PyFlink's minor version."""
    flink_version = flink_version or installed_pyflink_version()
    if flink_version is None:
        raise ApacheKafkaError("PyFlink (apache-flink) is not installed")
    minor = ".".join(flink_version.split(".")[:2])
    candidates = FLINK_KAFKA_CONNECTORS.get(minor)
    if not candidates:
        raise ApacheKafkaError(f"no flink-sql-connector-kafka release is known for Flink {flink_version}")
    tried: list[str] = []
    for candidate in candidates:
        try:
            lib = resolve("flink-kafka", {"flink.kafka.version": candidate})
            return sorted(lib.glob("flink-sql-connector-kafka-*.jar"))
        except ApacheKafkaError as exc:
            if "could not resolve" not in str(exc).lower():
                raise
            tried.append(candidate)
    raise ApacheKafkaError(
        f"no flink-sql-connector-kafka resolves for Flink {flink_version} (tried {', '.join(tried)})"
    )


def _artifact(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name without its version)."""
    return re.sub(r"-\d[^-]*$", "", jar[: -len(".jar")])


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.access(found, os.X_OK):
        raise ApacheKafkaError("Apache Kafka needs Java 17 or newer ('java' on PATH or JAVA_HOME)")
    return found


# -- the broker ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ports:
    plaintext: int
    sasl: int
    controller: int


def _properties(data: Path, ports: Ports, host: str) -> str:
    jaas_plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        + ";"
    )
    jaas_scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{ports.controller}",
        "listeners": f"PLAINTEXT://{host}:{ports.plaintext},SASL_PLAINTEXT://{host}:{ports.sasl},CONTROLLER://{host}:{ports.controller}",
        "advertised.listeners": f"PLAINTEXT://{host}:{ports.plaintext},SASL_PLAINTEXT://{host}:{ports.sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas_plain,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas_scram,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": jaas_scram,
        "log.dirs": str(data / "log"),
        "metadata.log.dir": str(data / "meta"),
        # Time retention counts from record timestamps: tests (and backfills) produce records
        # with old timestamps, which a 7-day retention would delete at once.
        "log.retention.ms": "-1",
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "log.cleaner.threads": "1",
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


class ApacheKafka:
    """A single-node KRaft Apache Kafka (broker + controller) on loopback.

    >>> with ApacheKafka() as kafka:                  # doctest: +SKIP
    ...     kafka.bootstrap, kafka.sasl_bootstrap
    ('127.0.0.1:40211', '127.0.0.1:40212')

    ``data_dir`` is kept between :meth:`stop` and :meth:`start` (same ports
    too), and removed at :meth:`close` when it was a temporary one. ``jvm``:
    the broker's heap and collector options (:data:`TEST_JVM`, or
    :data:`KAFKA_SCRIPT_JVM` as Kafka's scripts start it); ``gc_log``: log its
    collector pauses (:attr:`gc_log_path`, :func:`gc_pauses`).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: str | Path | None = None,
        startup_timeout: float = 90.0,
        lib: str | Path | None = None,
        jvm: Sequence[str] = TEST_JVM,
        gc_log: bool = False,
    ) -> None:
        self.host = host
        self.jvm = tuple(jvm)
        self.startup_timeout = startup_timeout
        self._lib = Path(lib) if lib else None
        self._own_data = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="cdc-smt-kafka-"))
        self.ports = Ports(port or free_port(host), free_port(host), free_port(host))
        self.log_path = self.data_dir / "server.log"
        #: With ``gc_log``: the broker's collector pauses, one line each (read by :func:`gc_pauses`).
        self.gc_log_path = self.data_dir / "gc.log" if gc_log else None
        self._box: list[subprocess.Popen | None] = [None]  # the running broker, shared with the finalizer
        self._log_file: IO[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    # -- addresses
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.ports.plaintext}"

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL_PLAINTEXT listener (PLAIN and SCRAM-SHA-256/512 users: :data:`USERS`)."""
        return f"{self.host}:{self.ports.sasl}"

    @property
    def _proc(self) -> subprocess.Popen | None:
        return self._box[0]

    @_proc.setter
    def _proc(self, proc: subprocess.Popen | None) -> None:
        self._box[0] = proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle
    def _classpath(self) -> str:
        lib = self._lib or resolve("kafka")
        return os.pathsep.join(str(p) for p in sorted(lib.glob("*.jar")))

    def _java(self, main: str, args: Sequence[str], log: IO[bytes]) -> subprocess.Popen:
        jvm = [
            java(), *(self.jvm if main == "kafka.Kafka" else TEST_JVM),
            *(["-XX:TieredStopAtLevel=1"] if main != "kafka.Kafka" else []),
            *([f"-Xlog:gc:file={self.gc_log_path}:uptime"] if self.gc_log_path and main == "kafka.Kafka" else []),
            "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dlog4j2.level=warn", "-cp", self._classpath(), main, *args,
        ]  # fmt: skip
        return subprocess.Popen(
            jvm,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: Ctrl-C reaches us, we stop it in order
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
        )

    def _format(self) -> None:
        """``kafka-storage format`` once per data directory, with the SCRAM users."""
        if (self.data_dir / "meta" / "meta.properties").is_file():
            return
        scram = []
        for user, password in USERS.items():
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                scram += ["--add-scram", f"{mech}=[name={user},password={password}]"]
        config = self.data_dir / "server.properties"
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        with open(self.data_dir / "format.log", "wb") as log:
            proc = self._java(
                "kafka.tools.StorageTool",
                # "=": an id may start with "-" (base64url), which the tool would take for an option
                ["format", f"--cluster-id={cluster_id}", "-c", str(config), "--ignore-formatted", *scram],
                log,
            )
            try:
                code = proc.wait(120)
            except subprocess.TimeoutExpired:
                _terminate(proc, 1.0)
                code = -1
        if code != 0:
            tail = " ".join((self.data_dir / "format.log").read_text(errors="replace")[-600:].split())
            raise ApacheKafkaError(f"kafka-storage format failed (exit {code}): {tail}")

    def start(self) -> ApacheKafka:
        """Format (first time), start, and return once the broker answers a Metadata request."""
        if self.running:
            raise ApacheKafkaError("Apache Kafka is already running")
        for name, port in (
            ("port", self.ports.plaintext),
            ("SASL port", self.ports.sasl),
            ("controller port", self.ports.controller),
        ):
            if port_in_use(self.host, port):
                raise ApacheKafkaError(
                    f"cannot start Apache Kafka: {name} {self.host}:{port} is in use "
                    "(pick another port, or 0 for a free one)"
                )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "server.properties").write_text(_properties(self.data_dir, self.ports, self.host))
        self._format()
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = self._java("kafka.Kafka", [str(self.data_dir / "server.properties")], self._log_file)
        if self._finalizer is None:
            self._finalizer = weakref.finalize(self, _cleanup, self._box, self.data_dir if self._own_data else None)
            atexit.register(self._finalizer)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ApacheKafkaError(
                    f"Apache Kafka exited with code {self._proc.returncode} during start-up: {self.tail_log()}"
                )
            try:
                if probe_metadata(self.host, self.ports.plaintext) >= 1:
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.2)
        self.stop()
        raise ApacheKafkaError(
            f"Apache Kafka did not answer on {self.bootstrap} within {self.startup_timeout:.0f}s ({last}); "
            f"log: {self.log_path}"
        )

    def tail_log(self, n: int = 800) -> str:
        try:
            return " ".join(self.log_path.read_text(errors="replace")[-n:].split())
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0, *, kill: bool = False) -> None:
        """Stop the broker (SIGTERM, a controlled shutdown; ``kill``: SIGKILL). Data stays for :meth:`start`."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if kill:
                _terminate(proc, 0.0)
            else:
                _terminate(proc, timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def restart(self, down_seconds: float = 0.0, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        time.sleep(down_seconds)
        self.start()

    def close(self) -> None:
        """Stop, and remove the data directory if it was a temporary one (idempotent)."""
        self.stop()
        if self._finalizer is not None:
            atexit.unregister(self._finalizer)
            self._finalizer()
            self._finalizer = None

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ApacheKafka {self.bootstrap} {'pid=' + str(self.pid) if self.running else 'stopped'}>"


#: A stop-the-world pause in a ``-Xlog:gc`` line: ``[5.1s] GC(3) Pause Young (Normal) (...) 51M->3M(1024M) 4.321ms``.
_GC_PAUSE = re.compile(r"\bPause\b.*?(\d+(?:\.\d+)?)ms\s*$")


def gc_pauses(path: Path, offset: int = 0) -> tuple[list[float], int]:
    """The broker's collector pauses (ms) logged in ``path`` after byte ``offset``, and the offset
    to read on from: a bench asks after each run which pauses fell in it."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    complete = data[: data.rfind(b"\n") + 1]  # a line still being written is read next time
    matches = (_GC_PAUSE.search(line) for line in complete.decode(errors="replace").splitlines())
    pauses = [float(m.group(1)) for m in matches if m]
    return pauses, offset + len(complete)


def _cleanup(box: list[subprocess.Popen | None], data_dir: Path | None) -> None:
    if box[0] is not None:
        _terminate(box[0], 10.0)
    if data_dir is not None:
        shutil.rmtree(data_dir, ignore_errors=True)


# -- ./dev: resolve ahead of the test run -----------------------------------------------------------
def main(argv: Iterable[str] | None = None) -> int:
    """``python -m cdc_smt.connector.apache_kafka [--spark] [--flink]``: resolve the jars the tests use."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        print(f"apache kafka jars: {resolve('kafka')}", file=sys.stderr)
        if "--spark" in args and installed_pyspark_version():
            jars = spark_kafka_jars()
            print(f"spark kafka jars: {', '.join(p.name for p in jars)}", file=sys.stderr)
        if "--flink" in args and installed_pyflink_version():
            print(f"flink kafka jars: {', '.join(p.name for p in flink_kafka_jars())}", file=sys.stderr)
    except ApacheKafkaError as exc:
        print(f"cdc-smt: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
