"""What the service tells an operator: the counts of ``GET /metrics`` and the access log.

``Metrics`` counts every answered request (by endpoint and status: requests and the documents
they carried; by endpoint: a histogram of the time from the request's arrival, its body whole
on the fast lane, at the start of the ASGI application otherwise, to its answer being handed
to the connection) and the documents of each joined batch of checks. It is used on the event
loop's thread only, as the requests are answered, so it counts without a lock: a few dict
look-ups and a bisection per request.

``exposition`` renders those counts with the service's other numbers (``Sources``) in
Prometheus' text format (version 0.0.4) through ``prometheus_client``'s collector API, with the
process's own CPU, memory and file descriptors (its ``ProcessCollector``); it is only read at
a scrape, never on a request's path. Without ``prometheus_client`` installed, ``exposition``
raises ModuleNotFoundError (``GET /metrics`` then answers 503 naming the package).

``AccessLog`` writes one JSON line per request: ``time`` (UTC, milliseconds), ``endpoint``
(the route's name: check, add, docs, stats, metrics, healthz, readyz; ``other`` for a path no
route has), ``method``, ``status``, ``documents`` (the documents of a check or add whose body
was read; else 0), ``duration_ms`` and ``remote`` (the peer's address and port). Never a
path, an id, a text, a query string or a header: nothing a client sent but its method. Lines
are buffered and written out at the end of the event loop's turn; ``reopen`` (on SIGHUP)
opens the file again, for a log rotated away.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Metrics:
    """The counts of answered requests and of joined checks, kept on the event loop's thread."""

    def __init__(self) -> None:
        self.requests: dict[str, dict[int, list[int]]] = {}  # endpoint -> status -> [requests, documents]
        self.latency: dict[str, list] = {}  # endpoint -> a count per LATENCY_BUCKETS bucket, +Inf's, then the sum
        self.batches: list = [0] * (len(BATCH_BUCKETS) + 2)  # the same for the documents of joined checks

    def request(self, endpoint: str, status: int, documents: int, seconds: float) -> None:
        """One answered request."""
        statuses = self.requests.get(endpoint)
        if statuses is None:
            statuses = self.requests[endpoint] = {}
            self.latency[endpoint] = [0] * (len(LATENCY_BUCKETS) + 1) + [0.0]
        counts = statuses.get(status)
        if counts is None:
            counts = statuses[status] = [0, 0]
        counts[0] += 1
        counts[1] += documents
        histogram = self.latency[endpoint]
        histogram[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        histogram[-1] += seconds

    def batch(self, documents: int) -> None:
        """One joined batch of checks of ``documents`` documents."""
        batches = self.batches
        batches[bisect_left(BATCH_BUCKETS, documents)] += 1
        batches[-1] += documents


@dataclass
class Sources:
    """What a scrape reads besides ``Metrics``: the handlers' counters (``DedupService.counts``),
    the fleet locks' counters (None without fleet locks), and the index's document count with
    the time it was last counted (None before a first count)."""

    counts: dict[str, int]
    leases: dict[str, int] | None
    documents: tuple[int, float] | None


def _histogram(family, labels: list[str], counts: list, bounds: tuple) -> None:
    cumulative, buckets = 0, []
    for bound, count in zip((*map(float, bounds), float("inf")), counts[:-1]):
        cumulative += count
        buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
    family.add_metric(labels, buckets, counts[-1])


def families(metrics: Metrics, sources: Sources) -> list:
    """The service's metric families (``prometheus_client.core``'s), from ``metrics`` and ``sources``."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    requests = CounterMetricFamily("dedup_http_requests", "Requests answered, by endpoint and status.",
                                   labels=["endpoint", "status"])
    documents = CounterMetricFamily("dedup_http_request_documents", "Documents in the requests answered (check "
                                    "and add), by endpoint and status.", labels=["endpoint", "status"])
    latency = HistogramMetricFamily("dedup_http_request_duration_seconds", "From a request's arrival to its "
                                    "answer, by endpoint.", labels=["endpoint"])
    for endpoint, statuses in sorted(metrics.requests.items()):
        for status, (count, docs) in sorted(statuses.items()):
            requests.add_metric([endpoint, str(status)], count)
            documents.add_metric([endpoint, str(status)], docs)
        _histogram(latency, [endpoint], metrics.latency[endpoint], LATENCY_BUCKETS)
    batches = HistogramMetricFamily("dedup_check_batch_documents", "Documents per call of the index by joined "
                                    "concurrent checks.")
    _histogram(batches, [], metrics.batches, BATCH_BUCKETS)
    out = [requests, documents, latency, batches]
    counts = sources.counts
    for name, key, text in (("documents_checked", "documents_checked", "Documents checked."),
                            ("documents_added", "documents_added", "Documents added (add, with or without if_new)."),
                            ("documents_refused", "documents_refused", "Documents not added by add?if_new=true: "
                             "a near-duplicate was indexed or earlier in the request."),
                            ("documents_deleted", "documents_deleted", "Documents deleted (DELETE /v1/docs/ID)."),
                            ("documents_expired", "documents_expired", "Expired documents removed by this server."),
                            ("store_errors", "store_errors", "Requests answered 503 because the store failed."),
                            ("internal_errors", "internal_errors", "Requests answered 500 (a bug, logged).")):
        out.append(CounterMetricFamily(f"dedup_{name}", text, value=counts.get(key, 0)))
    if sources.leases is not None:
        leases = CounterMetricFamily("dedup_fleet_leases", "Fleet locks' leases (add?if_new=true on HBase): taken, "
                                     "waited for (held by another server), taken over (expired), lost.",
                                     labels=["event"])
        for event in ("taken", "waited", "taken_over", "lost"):
            leases.add_metric([event], sources.leases.get(event, 0))
        out.append(leases)
    if sources.documents is not None:
        count, when = sources.documents
        out.append(GaugeMetricFamily("dedup_index_documents", "Documents in the index: the last count (every key "
                                     "read, in the background) plus this server's adds less its deletes and "
                                     "expiries since.", value=count))
        out.append(GaugeMetricFamily("dedup_index_documents_counted_timestamp_seconds", "When the index's "
                                     "documents were last counted (Unix time).", value=when))
    return out


class Exposition:
    """``exposition()``: the text of ``GET /metrics``, from ``families(metrics, source())`` and
    the process's own metrics. Made at the first scrape (imports prometheus_client)."""

    def __init__(self, metrics: Metrics, source: Callable[[], Sources]) -> None:
        from prometheus_client import CollectorRegistry, ProcessCollector

        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        self.registry.register(self)
        self.metrics, self.source = metrics, source

    def collect(self):  # prometheus_client's collector protocol
        return families(self.metrics, self.source())

    def __call__(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class AccessLog:
    """One JSON line per request into a file, or stderr for ``-`` (see the module docstring).
    Used on the event loop's thread."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.file = self._open()
        self._due = False  # a flush is scheduled for the end of this turn of the loop
        self._second, self._stamp = -1, ""
        self._failed = False

    def _open(self):
        if self.target == "-":
            return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1 << 16, encoding="utf-8")
        return open(self.target, "a", buffering=1 << 16, encoding="utf-8")

    def write(self, endpoint: str, method: str, status: int, documents: int, seconds: float, remote: Any) -> None:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        if remote is None:
            peer = "null"
        else:
            host, port = remote[0], remote[1]
            peer = f'"[{host}]:{port}"' if ":" in host else f'"{host}:{port}"'
        try:
            self.file.write(f'{{"time":"{self._stamp}.{int((now - second) * 1000):03d}Z","endpoint":"{endpoint}",'
                            f'"method":"{method}","status":{status},"documents":{documents},'
                            f'"duration_ms":{seconds * 1000:.3f},"remote":{peer}}}\n')
        except (OSError, ValueError) as e:
            self._trouble(e)
            return
        if not self._due:
            self._due = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._due = False
        try:
            self.file.flush()
        except (OSError, ValueError) as e:
            self._trouble(e)

    def _trouble(self, e: Exception) -> None:
        if not self._failed:  # said once, not once a request
            self._failed = True
            logger.warning("the access log %s cannot be written (lines are lost until it can): %s", self.target, e)

    def reopen(self) -> None:
        """Flush and close the file, and open it again (a rotated log starts anew)."""
        old = self.file
        self.file, self._failed = self._open(), False
        try:
            old.close()
        except OSError as e:
            self._trouble(e)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError as e:
            self._trouble(e)
