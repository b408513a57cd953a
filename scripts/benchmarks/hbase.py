"""HBase: load rate and lookup latency on a real HBase, next to the embedded
store, same run, same fingerprints.

For each scheme (4-split, 5-split): load N fingerprints through the Thrift1 gateway (WAL off,
then on), then time single lookups with the per-flag prefix scans run in parallel over the
connection pool and sequentially (pool of one), and batched lookups; the embedded store
does the same lookups. Answers are checked equal across all of them and against brute force.

Runs against --hbase URL, else the local HBase if `scripts/hbase-local status` says it is up
(hbase://127.0.0.1:9090/?admin_port=9091), else prints "skipped". Tables get a random prefix
and are dropped afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from .common import ROOT, Report, fmt_us, make_data, percentiles, progress

DEFAULT_URL = "hbase://127.0.0.1:9090/?admin_port=9091"
SKIPPED = "skipped: no HBase running (start one with scripts/hbase-local start)"


def local_hbase_running() -> bool:
    """``scripts/hbase-local status`` exits 0 when its master and both Thrift gateways are up."""
    try:
        return subprocess.run([str(ROOT / "scripts" / "hbase-local"), "status"], check=False,
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def resolve_url(explicit: str | None) -> str | None:
    """The HBase to use: the one given, else the local one if it answers, else none."""
    if explicit:
        return explicit
    return DEFAULT_URL if local_hbase_running() else None


def timed_lookups(index, queries: list[int]) -> tuple[list[float], list]:
    samples, answers = [], []
    for q in queries:
        started = time.perf_counter_ns()
        answers.append(index.query(q))
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples, answers


def load(index, docs: list, batch: int = 20_000) -> float:
    started = time.perf_counter()
    for i in range(0, len(docs), batch):
        index.add_many(docs[i:i + batch])
    return time.perf_counter() - started


def measure_scheme(report: Report, scheme, url: str, docs: list, queries: list[int], truth: list,
                   work: Path, args) -> tuple[list, list]:
    """Load rows and lookup rows of one scheme; every HBase table it makes is dropped again."""
    from dedup_hbase import Index, open_store

    prefix = f"bench{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in url else "?"

    def store_url(wal: bool = True, pool: int = args.hbase_pool) -> str:
        return (f"{url}{sep}table_prefix={prefix}{'' if wal else 'nowal'}"
                f"&pool_size={pool}&wal={'true' if wal else 'false'}")

    cells = len(docs) * len(scheme.flags)
    load_rows, lookup_rows = [], []
    created, opened = [], []  # HBase indexes made here (their tables get dropped); every index opened
    try:
        for wal in (False, True):
            progress(f"  {scheme.name}-split: HBase load, WAL {'on' if wal else 'off'} ...\n")
            index = Index.create(open_store(store_url(wal)), scheme, 3)
            created.append(index)
            opened.append(index)
            seconds = load(index, docs)
            load_rows.append([f"{scheme.name}-split", "on" if wal else "off", f"{len(docs) / seconds:,.0f}",
                              f"{cells / seconds:,.0f}"])
        parallel = opened[-1]
        embedded = Index.create(open_store(str(work / f"embedded-{scheme.name}"), create=True), scheme, 3)
        opened.append(embedded)
        load(embedded, docs)
        sequential = Index.open(open_store(store_url(pool=1)))
        opened.append(sequential)
        timed_lookups(parallel, queries[:50])  # warm the pool and the block cache
        reference = None
        for name, index in (("embedded", embedded), (f"HBase, {args.hbase_pool} parallel scans", parallel),
                            ("HBase, sequential scans", sequential)):
            progress(f"  {scheme.name}-split: lookups, {name} ...\n")
            samples, answers = timed_lookups(index, queries)
            got = [sorted((int(m.id[1:]), m.distance) for m in a) for a in answers]
            if got != truth:
                report.fail(f"HBase benchmark, {scheme.name}-split, {name}: answers differ from brute force")
            reference = reference or answers
            lookup_rows.append([scheme.name, name, "single", *percentiles(samples)])
        for name, index in (("embedded", embedded), (f"HBase, {args.hbase_pool} parallel scans", parallel)):
            started = time.perf_counter_ns()
            batched = index.query_many(queries)
            per = (time.perf_counter_ns() - started) / 1000 / len(queries)
            if batched != reference:
                report.fail(f"HBase benchmark, {scheme.name}-split, {name}: batched answers differ")
            lookup_rows.append([scheme.name, name, f"batched x{len(queries)}", per, None])
    finally:
        for index in created:
            index.store.drop()
        for index in opened:
            index.store.close()
    return load_rows, lookup_rows


def run(report: Report, args, url: str | None) -> None:
    report.section("HBase: load and lookups")
    if not url:
        report.write(SKIPPED)
        report.data["hbase"] = {"skipped": SKIPPED}
        return
    from dedup_hbase import Document, Scheme

    data = make_data(args.hbase_n, args.hbase_queries, args.seed)
    docs = [Document(f"d{i}", v) for i, v in enumerate(data.fps.tolist())]
    queries = data.queries.tolist()
    truth = [data.truth(q) for q in queries]
    load_rows, lookup_rows = [], []
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-hbase-"))
    try:
        for scheme in (Scheme(4, 1), Scheme(5, 2)):
            loads, lookups = measure_scheme(report, scheme, url, docs, queries, truth, work, args)
            load_rows += loads
            lookup_rows += lookups
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report.write(f"HBase at `{url}`. N = {args.hbase_n:,} fingerprints ({data.planted:,} planted near-duplicates), "
                 f"{args.hbase_queries} lookups (half near an indexed one), k = 3; answers checked against brute "
                 f"force and equal across stores.\n")
    report.table(["scheme", "WAL", "documents/s", "index rows/s"], load_rows, right={2, 3})
    base, table = {}, []
    for scheme, name, mode, p50, p99 in lookup_rows:
        base.setdefault((scheme, mode), p50)
        table.append([f"{scheme}-split", name, mode, fmt_us(p50), fmt_us(p99), f"{p50 / base[(scheme, mode)]:.1f}x"])
    report.table(["scheme", "store", "lookups", "p50 µs", "p99 µs", "p50 vs embedded"], table, right={3, 4, 5})
    report.data["hbase"] = {"url": url, "n": args.hbase_n, "queries": args.hbase_queries,
                            "load": load_rows, "lookups": lookup_rows}
