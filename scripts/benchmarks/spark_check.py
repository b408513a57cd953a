#!/usr/bin/env python3
"""check --engine spark (the index read in bulk by the executors) against check through Thrift2
(the local engine), same HBase index, same queries, same run.

  .venv/bin/python scripts/benchmarks/spark_check.py --store 'hbase://HOST:PORT/?admin_port=P&zk=HOST:Z' \\
      --n 1e7 --queries 1e6 --sample 1e5 --out DIR [--reuse]

The index: N fingerprints of benchmarks.common.make_data (uniformly random, 1% planted near
copies of earlier ones; document i is d{i}), loaded by `load --engine spark --fingerprints`
(HFiles) under the table prefix ``bsc<N>`` (``--reuse``: an index left there by an earlier run).
The queries (half near an indexed fingerprint, half random; q{i}) are checked by
`check --engine spark --out` (all of them) and by `check --json` through Thrift2 (the first
--sample of them: its rate is extrapolated, stated). Each command is timed whole, from outside
(Python start, the Spark session and its JVM included). The records of the sample are compared:
the two engines must agree. Markdown on stdout."""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import make_data, parse_count


def write_fps(path: Path, prefix: str, fps) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for start in range(0, len(fps), 100_000):
            chunk = fps[start:start + 100_000].tolist()
            f.write("".join(f'{{"id":"{prefix}{start + i}","simhash":"{v:016x}"}}\n' for i, v in enumerate(chunk)))


def timed(cmd: list[str], stdout=None) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=stdout)
    return time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--store", required=True, help="the HBase base URL (with zk=)")
    p.add_argument("--n", type=parse_count, default=10**7)
    p.add_argument("--queries", type=parse_count, default=10**6)
    p.add_argument("--sample", type=parse_count, default=10**5)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--spark-master", default="local[2]")
    p.add_argument("--reuse", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    url = f"{args.store}{'&' if '?' in args.store else '?'}table_prefix=bsc{args.n}"
    data = make_data(args.n, args.queries, seed=7)
    index_file, queries_file, sample_file = (args.out / n for n in ("index.jsonl", "queries.jsonl", "sample.jsonl"))
    write_fps(queries_file, "q", data.queries)
    write_fps(sample_file, "q", data.queries[:args.sample])
    cli = [sys.executable, "-m", "dedup_hbase", "--store", url]
    rows = []
    if not args.reuse:
        write_fps(index_file, "d", data.fps)
        subprocess.run([*cli, "init", "--short-texts", "off"], check=True)  # fingerprints alone: no text for the rule
        wall = timed([*cli, "load", "--engine", "spark", "--fingerprints", "--spark-master", args.spark_master,
                      "--json", str(index_file)])
        rows.append(f"| load --engine spark --fingerprints (the index) | {args.n:,} documents | {wall:,.1f} | "
                    f"{args.n / wall:,.0f} docs/s |")
        index_file.unlink()
    load = os.getloadavg()
    spark_out = args.out / "spark-check"
    wall_spark = timed([*cli, "check", "--engine", "spark", "--fingerprints", "--spark-master", args.spark_master,
                        "--out", str(spark_out), "--json", str(queries_file)])
    with open(args.out / "local-sample.jsonl", "w", encoding="utf-8") as f:
        wall_local = timed([*cli, "check", "--fingerprints", "--json", str(sample_file)], stdout=f)
    local = {r["id"]: r for r in map(json.loads, open(args.out / "local-sample.jsonl", encoding="utf-8"))}
    spark = {}
    for name in glob.glob(f"{spark_out}/json/*.jsonl"):
        for line in open(name, encoding="utf-8"):
            r = json.loads(line)
            if r["id"] in local:
                spark[r["id"]] = r
    agree = spark == local
    matched = sum(1 for r in local.values() if r["matches"])
    rate_spark, rate_local = args.queries / wall_spark, args.sample / wall_local
    print(f"Index: {args.n:,} fingerprints in HBase (`{url}`); queries: {args.queries:,} (half near an indexed "
          f"fingerprint); k = 3; Spark master {args.spark_master}; load average before the checks "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.\n")
    print("| command | input | wall s | rate |\n|---|---:|---:|---:|")
    for row in rows:
        print(row)
    print(f"| check --engine spark --out | {args.queries:,} queries | {wall_spark:,.1f} | {rate_spark:,.0f} lookups/s |")
    print(f"| check --json (local, Thrift2) | first {args.sample:,} queries | {wall_local:,.1f} | "
          f"{rate_local:,.0f} lookups/s |")
    print(f"\nSpark / local: **{rate_spark / rate_local:.1f}x** lookups/s (the local rate measured on "
          f"{args.sample:,} queries; at that rate {args.queries:,} would take {args.queries / rate_local:,.0f} s). "
          f"The records of the {args.sample:,} sampled queries {'agree' if agree else 'DIFFER'} "
          f"({matched:,} with matches).")
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
