#!/usr/bin/env python3
"""Load rate and lookup latency on a real HBase, next to the embedded store, same run.

For each scheme (4-split, 5-split): load N random fingerprints through the Thrift1
gateway (WAL on and off), then time single lookups with the per-flag prefix scans run
in parallel over the connection pool and sequentially (pool of one), and batched
lookups; the embedded store does the same lookups on the same fingerprints. Answers
are checked equal across all of them.

    scripts/hbase-local start
    python scripts/bench_hbase.py --url 'hbase://127.0.0.1:9090/?admin_port=9091' --n 200000
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import tempfile
import time
import uuid

from dedup_hbase import Document, Index, Scheme, open_store


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed_lookups(index: Index, queries: list[int]) -> tuple[list[float], list]:
    samples, answers = [], []
    for q in queries:
        t = time.perf_counter_ns()
        answers.append(index.query(q))
        samples.append((time.perf_counter_ns() - t) / 1000)
    return samples, answers


def load(index: Index, docs: list[Document], batch: int = 20_000) -> float:
    started = time.perf_counter()
    for i in range(0, len(docs), batch):
        index.add_many(docs[i:i + batch])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="hbase://127.0.0.1:9090/?admin_port=9091")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--pool", type=int, default=8, help="connections for the parallel scans")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    rnd = random.Random(args.seed)
    fps = [rnd.getrandbits(64) for _ in range(args.n)]
    docs = [Document(f"d{i}", f) for i, f in enumerate(fps)]
    queries = [fps[rnd.randrange(args.n)] ^ (1 << rnd.randrange(64)) if i % 2 else rnd.getrandbits(64)
               for i in range(args.queries)]
    sep = "&" if "?" in args.url else "?"
    load_rows, lookup_rows = [], []
    for scheme in (Scheme(4, 1), Scheme(5, 2)):
        cells = args.n * len(scheme.flags)
        prefix = f"bench{uuid.uuid4().hex[:8]}"

        def url(wal: bool = True, pool: int = args.pool) -> str:
            return (f"{args.url}{sep}table_prefix={prefix}{'' if wal else 'nowal'}"
                    f"&pool_size={pool}&wal={'true' if wal else 'false'}")

        for wal in (False, True):
            index = Index.create(open_store(url(wal)), scheme, 3)
            seconds = load(index, docs)
            load_rows.append((scheme.name, "on" if wal else "off", args.n / seconds, cells / seconds))
            if not wal:
                index.store.drop()
                index.store.close()
        hbase_parallel = index
        embedded = Index.create(open_store(tempfile.mkdtemp(prefix="bench-hbase-") + "/store", create=True), scheme, 3)
        load(embedded, docs)
        sequential = Index.open(open_store(url(pool=1)))
        timed_lookups(hbase_parallel, queries[:50])  # warm the pool and the block cache
        results = {}
        for name, index in (("embedded", embedded), (f"HBase, {args.pool} parallel scans", hbase_parallel),
                            ("HBase, sequential scans", sequential)):
            samples, answers = timed_lookups(index, queries)
            results[name] = answers
            lookup_rows.append((scheme.name, name, "single", *percentiles(samples)))
        for name, index in (("embedded", embedded), (f"HBase, {args.pool} parallel scans", hbase_parallel)):
            t = time.perf_counter_ns()
            batched = index.query_many(queries)
            per = (time.perf_counter_ns() - t) / 1000 / len(queries)
            assert batched == results["embedded"]
            lookup_rows.append((scheme.name, name, f"batched x{len(queries)}", per, per))
        assert all(a == results["embedded"] for a in results.values()), "answers differ between stores"
        hbase_parallel.store.drop()
        for index in (hbase_parallel, sequential, embedded):
            index.store.close()

    print(f"N = {args.n:,} random fingerprints, {args.queries} lookups (half near an indexed one), k = 3; "
          f"HBase standalone on this machine (Python {platform.python_version()}); answers equal across stores\n")
    print("| scheme | WAL | documents/s | index rows/s |\n|---|---|---:|---:|")
    for scheme, wal, docs_s, rows_s in load_rows:
        print(f"| {scheme}-split | {wal} | {docs_s:,.0f} | {rows_s:,.0f} |")
    print("\n| scheme | store | lookups | p50 µs | p99 µs | p50 vs embedded |\n|---|---|---|---:|---:|---:|")
    base = {}
    for scheme, name, mode, p50, p99 in lookup_rows:
        base.setdefault((scheme, mode), p50)
        print(f"| {scheme}-split | {name} | {mode} | {p50:,.0f} | {p99:,.0f} | {p50 / base[(scheme, mode)]:.1f}x |")


if __name__ == "__main__":
    main()
