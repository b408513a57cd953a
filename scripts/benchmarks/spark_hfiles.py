"""The rows + HFiles step of ``load --engine spark`` alone: N documents (id, simhash, source,
line), made and cached in Spark first, turned into index and document rows (spark/rows.py),
shuffled to their regions' partitions, sorted and written as HFiles (the JVM helper) into a
temporary folder (the helper's data source without a ZooKeeper: the files kept, not loaded); no
HBase, no bulk load. Reports the wall time and the CPU seconds of Spark's
JVM (this step runs in no Python worker), so the per-core rate holds on a shared machine.

    python scripts/benchmarks/spark_hfiles.py 1000000 [--master local[2]] [--runs 2]

The index table is cut into 16 regions on the first key byte (``init``'s default), the
document table is one region, as in a fresh index.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--runs", type=int, default=2, help="runs in one session (the first one warms the JVM)")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.index.schema import load_schema
    from dedup_hbase.jobs.spark import hfiles, rows
    from dedup_hbase.jobs.spark.session import helper_jars, make_session, stop

    spark = make_session(args.master, {}, helper_jars())
    jvm_pid = spark.sparkContext._gateway.proc.pid

    def jvm_cpu() -> float:
        fields = open(f"/proc/{jvm_pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    cores = spark.sparkContext.defaultParallelism
    winners = spark.range(args.n, numPartitions=2 * cores).select(
        F.concat(F.lit("d"), F.col("id").cast("string")).alias("id"), F.xxhash64("id").alias("simhash"),
        F.lit("/data/fingerprints.jsonl").alias("source"), (F.col("id") + 1).alias("line"),
        F.lit(None).cast("string").alias("title"), F.lit(None).cast("long").alias("length")).cache()
    winners.count()
    schema = load_schema()
    index_splits, doc_splits = [bytes([i]) for i in range(16, 256, 16)], []
    index_parts, doc_parts = len(index_splits) + 1, 2 * cores
    targets = rows.partition_targets(index_parts + doc_parts)
    scheme = Scheme(4, 1)
    try:
        for run in range(args.runs):
            folder = tempfile.mkdtemp(prefix="dedup-hfiles-")
            tables = []
            for name, splits in (("index", index_splits), ("docs", doc_splits)):
                tables.append(hfiles.TableFiles.of(f"file://{folder}/{name}", f"bench:{name}", schema["family"],
                                                   schema["tables"][name], splits))
            cells = rows.cells(winners, scheme, 1, (index_splits, targets[:index_parts], 1),
                               (doc_splits, targets[index_parts:], 2))
            cells = (cells.repartition(len(targets), "part").sortWithinPartitions("key", "qualifier")
                     .select("key", "qualifier", "value"))
            cpu, wall = jvm_cpu(), time.perf_counter()
            hfiles.write_and_load(cells, None, tables, [0, index_parts], f"file://{folder}", 1, 1)
            wall, cpu = time.perf_counter() - wall, jvm_cpu() - cpu
            written = [p for p in Path(folder).rglob("*") if p.is_file() and "_tmp" not in p.parts]
            index_rows = len(scheme.flags) * args.n
            print(f"run {run + 1}: {args.n:,} documents -> {index_rows:,} index rows + {args.n:,} document rows, "
                  f"{len(written)} HFiles, {sum(p.stat().st_size for p in written) / 1e6:.0f} MB in {wall:.1f} s wall, "
                  f"{cpu:.1f} JVM CPU s: {index_rows / wall / cores:,.0f} index rows/s per core (wall, {cores} "
                  f"cores), {index_rows / cpu:,.0f} index rows per CPU second; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(folder)
    finally:
        stop(spark)


if __name__ == "__main__":
    main()
