"""HBase: load rate and lookup latency on a real HBase, next to the embedded
store, same run, same fingerprints.

The HBase store's data path: one getScannerResults call per region the prefixes fall in
(MultiRowRangeFilter), calls in parallel; hand-serialized putMultiple batches in parallel.

For each scheme (4-split, 5-split): load N fingerprints, WAL off, then on (after an
untimed warm-up load, so that the first does not pay the gateway's JIT warm-up alone); with a local HBase (scripts/hbase-local), the CPU seconds each process
spent per million index rows. Then single lookups (p50/p99) and batched lookups, the
same queries for the embedded store and for both paths (the paths read the same tables).
Answers are checked equal across all of them and against brute force.

Runs against --hbase URL, else the local HBase if `scripts/hbase-local status` says it is up
(hbase://127.0.0.1:9090/?admin_port=9091), else prints "skipped". Tables get a random prefix
and are dropped afterwards.
"""

from __future__ import annotations

import os
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


PATHS = (("Thrift2", "thrift2"),)  # (name, the tables' name); one data path since api=thrift1 went


def local_pids() -> dict[str, int]:
    """PIDs of the local HBase's processes (scripts/hbase-local), when it is the one in use."""
    folder = Path(os.environ.get("DEDUP_HBASE_LOCAL_DIR") or ROOT / ".hbase-local") / "pids"
    out = {}
    for name in ("master", "thrift", "thrift2"):
        try:
            out[name] = int((folder / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            pass
    return out


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds of this process and of each HBase process so far."""
    out = {"client": sum(os.times()[:2])}
    tick = os.sysconf("SC_CLK_TCK")
    for name, pid in pids.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[name] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return out


def measure_scheme(report: Report, scheme, url: str, docs: list, queries: list[int], truth: list,
                   work: Path, args) -> tuple[list, list, list]:
    """Load rows, lookup rows and CPU rows of one scheme; every HBase table it makes is dropped again."""
    from dedup_hbase import Index, open_store

    prefix = f"bench{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in url else "?"

    def store_url(_path: str, tables: str, wal: bool = True, pool: int = args.hbase_pool) -> str:
        return (f"{url}{sep}table_prefix={prefix}{tables}"
                f"&pool_size={pool}&wal={'true' if wal else 'false'}")

    cells = len(docs) * len(scheme.flags)
    load_rows, lookup_rows, cpu_rows = [], [], []
    created, opened = [], []  # HBase indexes made here (their tables get dropped); every index opened
    pids = local_pids()
    try:
        for _name, api in PATHS:  # warm-up: the gateways' JIT, the region server's
            index = Index.create(open_store(store_url(api, f"warm{api}", False)), scheme, 3)
            created.append(index)
            opened.append(index)
            load(index, docs[:max(len(docs) // 10, 1)])
        for wal in (False, True):
            for name, api in PATHS:
                progress(f"  {scheme.name}-split: HBase load through {name}, WAL {'on' if wal else 'off'} ...\n")
                index = Index.create(open_store(store_url(api, f"{api}{'wal' if wal else 'nowal'}", wal)), scheme, 3)
                created.append(index)
                opened.append(index)
                before = cpu_seconds(pids)
                seconds = load(index, docs)
                after = cpu_seconds(pids)
                load_rows.append([f"{scheme.name}-split", name, "on" if wal else "off",
                                  f"{len(docs) / seconds:,.0f}", f"{cells / seconds:,.0f}"])
                spent = {k: after[k] - before[k] for k in after if k in before}
                cpu_rows.append([f"{scheme.name}-split", name, "on" if wal else "off", f"{seconds * 1e6 / cells:.1f}"]
                                + [f"{spent[k] * 1e6 / cells:.1f}" if k in spent else "—"
                                   for k in ("client", "thrift", "thrift2", "master")])
        tables = "thrift2wal"  # the lookups read the tables loaded last
        embedded = Index.create(open_store(str(work / f"embedded-{scheme.name}"), create=True), scheme, 3)
        opened.append(embedded)
        load(embedded, docs)
        lookups = {"embedded": embedded}
        for name, api in PATHS:
            lookups[f"HBase {name}, pool {args.hbase_pool}"] = Index.open(open_store(store_url(api, tables)))
        lookups["HBase Thrift2, pool 1 (calls one after another)"] = Index.open(
            open_store(store_url("thrift2", tables, pool=1)))
        opened.extend(lookups.values())
        for index in lookups.values():
            timed_lookups(index, queries[:50])  # warm the pools and the block cache
        # Interleaved: each query is timed on every store in turn, and each batched run
        # goes round all stores three times (the median kept), so that the load other
        # work puts on the machine falls on all of them alike.
        progress(f"  {scheme.name}-split: lookups, embedded alone, then {', '.join(lookups)} (interleaved) ...\n")
        alone, _ = timed_lookups(embedded, queries)  # hot caches: what the embedded store does by itself
        lookup_rows.append([scheme.name, "embedded, alone (not interleaved)", "single", *percentiles(alone)])
        samples = {name: [] for name in lookups}
        answers = {name: [] for name in lookups}
        for q in queries:
            for name, index in lookups.items():
                started = time.perf_counter_ns()
                answers[name].append(index.query(q))
                samples[name].append((time.perf_counter_ns() - started) / 1000)
        reference = answers["embedded"]
        for name in lookups:
            got = [sorted((int(m.id[1:]), m.distance) for m in a) for a in answers[name]]
            if got != truth:
                report.fail(f"HBase benchmark, {scheme.name}-split, {name}: answers differ from brute force")
            lookup_rows.append([scheme.name, name, "single", *percentiles(samples[name])])
        batched_names = [name for name in lookups if "pool 1" not in name]
        per = {name: [] for name in batched_names}
        for _ in range(3):
            for name in batched_names:
                started = time.perf_counter_ns()
                batched = lookups[name].query_many(queries)
                per[name].append((time.perf_counter_ns() - started) / 1000 / len(queries))
                if batched != reference:
                    report.fail(f"HBase benchmark, {scheme.name}-split, {name}: batched answers differ")
        for name in batched_names:
            lookup_rows.append([scheme.name, name, f"batched x{len(queries)}, median of 3", sorted(per[name])[1],
                                None])
    finally:
        for index in created:
            index.store.drop()
        for index in opened:
            index.store.close()
    return load_rows, lookup_rows, cpu_rows


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
    load_rows, lookup_rows, cpu_rows = [], [], []
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-hbase-"))
    loads_at_start = os.getloadavg()
    try:
        for scheme in (Scheme(4, 1), Scheme(5, 2)):
            loads, lookups, cpus = measure_scheme(report, scheme, url, docs, queries, truth, work, args)
            load_rows += loads
            lookup_rows += lookups
            cpu_rows += cpus
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report.write(f"HBase at `{url}`. N = {args.hbase_n:,} fingerprints ({data.planted:,} planted near-duplicates), "
                 f"{args.hbase_queries} lookups (half near an indexed one), k = 3; answers checked against brute "
                 f"force and equal across stores.\n")
    report.write(f"Load average (1, 5, 15 min) at the start of this section {', '.join(f'{x:.2f}' for x in loads_at_start)}, "
                 f"at its end {', '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores: above 2, other work "
                 "competed for the CPU).\n")
    report.table(["scheme", "path", "WAL", "documents/s", "index rows/s"], load_rows, right={3, 4})
    if any(row[5] != "—" for row in cpu_rows):
        report.write("Where the time of a load goes: wall time and CPU time per index row (µs), per process "
                     "(client = this Python process; thrift, thrift2 = the gateways; master = the one JVM "
                     "holding master, region server and ZooKeeper). Each row of the index table comes with a "
                     "put of the document table and a get of it (1/4 or 1/10 of a row each).\n")
        report.table(["scheme", "path", "WAL", "wall", "client", "thrift", "thrift2", "master"], cpu_rows,
                     right={3, 4, 5, 6, 7})
    base, alone, table = {}, {}, []
    for scheme, name, mode, p50, _p99 in lookup_rows:
        if name.startswith("embedded, alone"):
            alone[scheme] = p50
        elif name == "embedded":
            base[(scheme, mode)] = p50
    for scheme, name, mode, p50, p99 in lookup_rows:
        vs_alone = f"{p50 / alone[scheme]:.1f}x" if mode == "single" and scheme in alone else "—"
        table.append([f"{scheme}-split", name, mode, fmt_us(p50), fmt_us(p99), f"{p50 / base[(scheme, mode)]:.1f}x",
                      vs_alone])
    report.write("Lookups: every path reads the same tables. Thrift2 = one getScannerResults call per region the "
                 "prefixes fall in (MultiRowRangeFilter), the calls in parallel; Thrift1 = one scanner per prefix "
                 "(open, fetch, close), in parallel over the pool.\n")
    report.write("Single lookups are timed interleaved (each query on every store in turn), which leaves the "
                 "embedded store's caches colder than when it runs alone; both ratios are shown.\n")
    report.table(["scheme", "store", "lookups", "p50 µs", "p99 µs", "p50 vs embedded (interleaved)",
                  "p50 vs embedded alone"], table, right={3, 4, 5, 6})
    report.data["hbase"] = {"url": url, "n": args.hbase_n, "queries": args.hbase_queries,
                            "load": load_rows, "lookups": lookup_rows, "cpu_per_row_us": cpu_rows,
                            "loadavg_start": loads_at_start, "loadavg_end": os.getloadavg()}
