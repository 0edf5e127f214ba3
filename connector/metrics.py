"""Worker observability: Prometheus metrics and a health endpoint on one small HTTP server.

Each worker has its own registry (several workers can live in one test
process). The server is a stdlib ``ThreadingHTTPServer`` on a daemon thread, so
a scrape never waits for the event loop that does the conversion work.

Metrics (all prefixed ``cdc_smt_``):

- ``records_in_total{topic}``: records consumed from a source topic;
- ``records_out_total{topic}``: records produced *and acknowledged*;
- ``dead_letters_total{stage}``: records dead-lettered, by failing stage
  (``decode``, ``transform``, ``encode``);
- ``consumer_lag{topic,partition}``: high watermark minus next offset to process;
- ``end_to_end_latency_seconds``: source record timestamp to output ack (sampled
  per batch, see :meth:`WorkerMetrics.observe_latency`);
- ``batch_seconds``: time to convert one fetched batch (decode, chain, encode, enqueue);
- ``missing_columns_total{transform,table,column}``: rows that reached a transform
  without a column it names (``on_missing: warn``; see docs/transforms.md);
- ``commits_total``, ``worker_info{job_id,source_format,sink_format}``.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
#: At most this many latency observations per acknowledged batch.
LATENCY_SAMPLES = 32

LagSource = Callable[[], Mapping[tuple[str, int], int]]


class _LagCollector:
    """Reads consumer lag at scrape time (the worker knows positions and high watermarks)."""

    def __init__(self, source: LagSource) -> None:
        self.source = source

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fam = GaugeMetricFamily(
            "cdc_smt_consumer_lag",
            "Records behind the high watermark, per source partition",
            labels=["topic", "partition"],
        )
        try:
            lags = self.source()
        except Exception:  # noqa: BLE001 - a scrape must not fail because the consumer is rebalancing
            lags = {}
        for (topic, partition), lag in sorted(lags.items()):
            fam.add_metric([topic, str(partition)], lag)
        yield fam


class WorkerMetrics:
    """The metric objects of one worker."""

    def __init__(self, job_id: str, source_format: str = "", sink_format: str = "") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.records_in = Counter("cdc_smt_records_in", "Records consumed from source topics", ["topic"], registry=r)
        self.records_out = Counter("cdc_smt_records_out", "Records produced and acknowledged", ["topic"], registry=r)
        self.dead_letters = Counter(
            "cdc_smt_dead_letters", "Records sent to the dead-letter topic, by failing stage", ["stage"], registry=r
        )
        self.latency = Histogram(
            "cdc_smt_end_to_end_latency_seconds",
            "Source record timestamp to output acknowledgement (sampled per batch)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_seconds = Histogram(
            "cdc_smt_batch_seconds", "Time to convert and enqueue one fetched batch", buckets=BATCH_BUCKETS, registry=r
        )
        self.commits = Counter("cdc_smt_commits", "Offset commits that covered source partitions", registry=r)
        self.missing_columns = Counter(
            "cdc_smt_missing_columns",
            "Rows that reached a transform without a column it names (on_missing: warn)",
            ["transform", "table", "column"],
            registry=r,
        )
        # per transform object: the counts already added (transforms count since their chain was built)
        self._missing_seen: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], int]] = weakref.WeakKeyDictionary()
        info = Gauge(
            "cdc_smt_worker_info", "The job this worker runs", ["job_id", "source_format", "sink_format"], registry=r
        )
        info.labels(job_id, source_format, sink_format).set(1)
        self._in_children: dict[str, Any] = {}
        self._out_children: dict[str, Any] = {}

    def set_lag_source(self, source: LagSource) -> None:
        self.registry.register(_LagCollector(source))

    # Hot-path helpers: cache the labelled children (``labels()`` costs a dict build and a lock).
    def count_in(self, topic: str, n: int) -> None:
        child = self._in_children.get(topic)
        if child is None:
            child = self._in_children[topic] = self.records_in.labels(topic)
        child.inc(n)

    def count_out(self, topic: str, n: int) -> None:
        child = self._out_children.get(topic)
        if child is None:
            child = self._out_children[topic] = self.records_out.labels(topic)
        child.inc(n)

    def observe_missing(self, transforms: Iterable[Any]) -> None:
        """Add what a chain's transforms counted since the last call (cheap when nothing is missing)."""
        for t in transforms:
            counts = getattr(t, "missing_counts", None)
            if not counts:
                continue
            seen = self._missing_seen.setdefault(t, {})
            for key, n in counts.items():
                delta = n - seen.get(key, 0)
                if delta > 0:
                    self.missing_columns.labels(t.name, key[0], key[1]).inc(delta)
                    seen[key] = n

    def observe_latency(self, timestamps_ms: list[int], now_ms: float | None = None) -> None:
        """Observe the source timestamps of a batch's sample (the converter takes up to
        :data:`LATENCY_SAMPLES` evenly spaced records: a fixed cost per batch, and an
        unbiased distribution because the samples span the whole batch)."""
        if not timestamps_ms:
            return
        now = time.time() * 1000.0 if now_ms is None else now_ms
        observe = self.latency.observe
        for ts in timestamps_ms:
            observe(max(0.0, (now - ts) / 1000.0))

    def render(self) -> bytes:
        return generate_latest(self.registry)


HealthSource = Callable[[], tuple[bool, dict[str, Any]]]


class MetricsServer:
    """``/metrics`` (Prometheus text format) and ``/health`` (JSON; 200 when healthy, else 503)."""

    def __init__(self, metrics: WorkerMetrics, health: HealthSource, host: str = "0.0.0.0", port: int = 0) -> None:
        self.metrics = metrics
        self.health = health
        handler = self._handler()
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="cdc-smt-metrics", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])  # an AF_INET server: always a str already

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, owner.metrics.render(), "text/plain; version=0.0.4; charset=utf-8")
                elif path in ("/health", "/healthz"):
                    ok, info = owner.health()
                    self._send(200 if ok else 503, json.dumps(info, default=str).encode(), "application/json")
                else:
                    self._send(404, b"not found: try /metrics or /health\n", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - scrapes are not news
                return

        return Handler


__all__ = ["LATENCY_BUCKETS", "MetricsServer", "WorkerMetrics"]
