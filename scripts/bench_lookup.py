#!/usr/bin/env python3
"""Lookup latency of the embedded store (4-split and 5-split; single and batched) next
to the ``simhash`` package's SimhashIndex, on the same fingerprints, in the same run.

Fingerprints: N uniformly random 64-bit values (seeded). Queries: half are indexed
fingerprints with 0..3 bits flipped, half random. Lookups are timed on a second, warm
pass; the embedded store is compacted after the build (its size is then the smallest). Every
system's answers are checked against numpy brute force on a sample before timing.

    python scripts/bench_lookup.py --n 1000000 --queries 2000
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dedup_hbase import Document, Index, Scheme, open_store
from dedup_hbase.fingerprint import hamming


def fingerprints(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def queries(fps: np.ndarray, count: int, seed: int) -> list[int]:
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        if i % 2:
            out.append(rnd.getrandbits(64))
        else:
            value = int(fps[rnd.randrange(len(fps))])
            for bit in rnd.sample(range(64), rnd.randint(0, 3)):
                value ^= 1 << bit
            out.append(value)
    return out


def brute_force(fps: np.ndarray, q: int, k: int = 3) -> list[tuple[int, str]]:
    d = np.bitwise_count(fps ^ np.uint64(q))
    return sorted((int(d[i]), f"d{i}") for i in np.nonzero(d <= k)[0])


def percentiles(samples_us: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_us)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def build_index(path: Path, scheme: Scheme, fps: np.ndarray) -> tuple[Index, float, int]:
    store = open_store(str(path), create=True)
    index = Index.create(store, scheme, 3)
    started = time.perf_counter()
    step = 50_000
    for start in range(0, len(fps), step):
        index.add_many([Document(f"d{i}", int(v)) for i, v in enumerate(fps[start:start + step].tolist(), start)])
    elapsed = time.perf_counter() - started
    store.compact()  # what RocksDB does in the background after a load, finished now
    store.close()
    store = open_store(str(path))
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return Index.open(store), elapsed, size


def time_single(lookup, qs: list[int]) -> list[float]:
    """µs per lookup, of a second (warm) pass over the queries."""
    for q in qs:
        lookup(q)
    samples = []
    for q in qs:
        t = time.perf_counter_ns()
        lookup(q)
        samples.append((time.perf_counter_ns() - t) / 1000)
    return samples


def time_batched(index: Index, qs: list[int], batch: int) -> list[float]:
    """µs per lookup of each query_many call, of a second (warm) pass."""
    index.query_many(qs)
    samples = []
    for start in range(0, len(qs), batch):
        chunk = qs[start:start + batch]
        t = time.perf_counter_ns()
        index.query_many(chunk)
        samples.append((time.perf_counter_ns() - t) / 1000 / len(chunk))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="indexed fingerprints")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=1000, help="lookups per query_many call")
    parser.add_argument("--check", type=int, default=200, help="lookups compared with brute force")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-simhash", action="store_true", help="skip the simhash package")
    parser.add_argument("--dir", default=None, help="where to build the stores (default: a temp folder)")
    args = parser.parse_args()

    fps = fingerprints(args.n, args.seed)
    qs = queries(fps, args.queries, args.seed + 1)
    sample = qs[: args.check]
    expected = [brute_force(fps, q) for q in sample]
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="bench-lookup-"))
    rows = []

    for scheme in (Scheme(4, 1), Scheme(5, 2)):
        path = workdir / f"scheme{scheme.name}"
        shutil.rmtree(path, ignore_errors=True)
        index, build_s, size = build_index(path, scheme, fps)
        got = [[(m.distance, m.id) for m in index.query(q)] for q in sample]
        assert got == expected, f"scheme {scheme.name}: answers differ from brute force"
        assert index.query_many(sample) == [index.query(q) for q in sample]
        single = percentiles(time_single(index.query, qs))
        batched = percentiles(time_batched(index, qs, args.batch))
        rows.append((f"dedup-hbase embedded, {scheme.name}-split, single", *single, build_s, size / args.n))
        rows.append((f"dedup-hbase embedded, {scheme.name}-split, batched x{args.batch}", *batched, build_s, size / args.n))
        index.store.close()

    if not args.no_simhash:
        from simhash import Simhash, SimhashIndex

        started = time.perf_counter()
        objs = [(f"d{i}", Simhash(int(v))) for i, v in enumerate(fps.tolist())]
        simhash_index = SimhashIndex(objs, k=3)
        build_s = time.perf_counter() - started
        del objs

        def peer(q: int):
            return simhash_index.get_near_dups(Simhash(q))

        for q, want in zip(sample, expected):
            got = sorted((hamming(int(fps[int(i[1:])]), q), i) for i in peer(q))
            assert got == want, "simhash package answers differ from brute force"
        rows.append(("simhash package SimhashIndex (RAM), single", *percentiles(time_single(peer, qs)), build_s, float("nan")))

    base = rows[0][1]
    print(f"N = {args.n:,} fingerprints, {args.queries:,} lookups (half near an indexed one), k = 3; "
          f"answers equal brute force on {args.check} lookups")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}\n")
    print("| system | median µs/lookup | p99 µs/lookup | median vs embedded 4-split single | build s "
          "| bytes/fingerprint on disk (index + documents) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, median, p99, build_s, bpf in rows:
        disk = "RAM only" if bpf != bpf else f"{bpf:.0f}"
        print(f"| {name} | {median:.1f} | {p99:.1f} | {median / base:.2f}x | {build_s:.1f} | {disk} |")
    if not args.dir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
