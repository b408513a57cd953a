"""Lookups a second on HBase by the index table's block size, encoding and codec (issue 43: a
batched ``check`` of at least 2,000 lookups a second).

A lookup is one row range per flag (4 or 10), and each range is a seek. The region server finds
the block by its block index, then decodes the block's cells from its start up to the range:
DIFF and FAST_DIFF store each key against the one before it, so a seek inside a block walks the
block. The block size bounds that walk; ROW_INDEX_V1 instead keeps an index of the rows inside
each block (and no prefix compression).

One index of N fingerprints loaded once (``load --engine spark --fingerprints``: HFiles), then
for each setting BLOCKSIZE:ENCODING:COMPRESSION: the index table altered to it in the HBase
shell, flushed and major-compacted (one file per region, written with the setting), and
``check --fingerprints --json`` of the queries run twice (the first fills the block cache with
the new files' blocks, the second is the figure), then of the queries less those within k bits
of the fingerprint planted with 10^5 copies ("cold": such a query reads that fingerprint's row,
10^5 cells, once per flag it shares with it); lookups a second, the CPU a lookup of the region
server (with the master: one process) and of the Thrift2 gateway (from /proc), and the index
table's bytes a fingerprint. The answers of every run are compared with the first run's, byte
for byte; the second check's answers are written beside the runs' output (``answers-SETTING.jsonl``)
for a later run's. The tables are dropped at the end (but with ``--keep``).

    python -m scripts.benchmarks.hbase_seeks --url 'hbase://127.0.0.1:19390/?admin_port=19391&zk=127.0.0.1:21891' \\
        --dir /tmp/hb-seeks --n 1e7 --queries 1e4 --settings 65536:FAST_DIFF:GZ,8192:FAST_DIFF:GZ
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from .common import ROOT
from .hbase import cpu_seconds
from .hbase_bytes import drop_tables, shell
from .measured import measure
from .scale import K, data_files, plant
from .scale_hbase import COMPACTION_WAIT, compacted_bytes, hfiles, pids, table_dirs

DH = [sys.executable, "-m", "dedup_hbase"]


def cold_queries(queries: Path, n: int) -> Path:
    """The queries of ``queries`` more than k bits from the fingerprint that ``plant`` gave 10^5
    copies (``min(10^5, n / 100)``), written beside them."""
    planted = plant(n, 7)
    values, counts = np.unique(planted.fps, return_counts=True)
    hot = int(values[counts.argmax()])
    path = queries.with_name(queries.stem + "-cold.jsonl")
    with open(queries, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        out.writelines(line for line in f if (int(json.loads(line)["simhash"], 16) ^ hot).bit_count() > K)
    return path


def run_setting(folder: Path, store: str, prefix: str, queries: Path, cold: Path, setting: str,
                work: Path) -> tuple[dict, bytes]:
    """The index table altered to ``setting`` and compacted, then the check of ``queries`` twice
    and of ``cold`` once: its figures, and the second check's output."""
    size, encoding, compression = setting.split(":")
    shell(folder, f"alter '{prefix}_index', {{NAME => 'd', BLOCKSIZE => '{int(size)}', "
                  f"DATA_BLOCK_ENCODING => '{encoding}', COMPRESSION => '{compression}'}}\n")
    started = time.monotonic()
    before = {f.name for f in hfiles(table_dirs(folder, prefix)[:1])}
    compacted_bytes(folder, prefix)
    while {f.name for f in hfiles(table_dirs(folder, prefix)[:1])} & before:  # each region's file rewritten
        if time.monotonic() - started > COMPACTION_WAIT:
            raise RuntimeError(f"the index table's files were not rewritten within {COMPACTION_WAIT} s")
        time.sleep(2)
    compaction_s = time.monotonic() - started
    index_bytes = sum(f.stat().st_size for f in hfiles(table_dirs(folder, prefix)[:1]))
    runs, out = {}, b""
    for name, path in (("first", queries), ("second", queries), ("cold", cold)):
        n = sum(1 for _ in open(path, "rb"))
        before = cpu_seconds(pids(folder))
        done = measure([*DH, "check", "--store", store, "--fingerprints", "--json", str(path)], work)
        after = cpu_seconds(pids(folder))
        ms = {k: round(1000 * (after[k] - before.get(k, 0.0)) / n, 3) for k in ("master", "thrift2") if k in after}
        runs[name] = {"queries": n, "wall_s": round(done["wall_s"], 2), "lookups_per_s": round(n / done["wall_s"], 1),
                      "command_cpu_ms_per_lookup": round(1000 * done["cpu_s"] / n, 3),
                      "region_server_cpu_ms_per_lookup": ms.get("master"), "thrift2_cpu_ms_per_lookup": ms.get("thrift2")}
        if name == "second":
            out = (work / "stdout").read_bytes()
            (work / f"answers-{setting.replace(':', '-')}.jsonl").write_bytes(out)  # for a later run's comparison
    return {"setting": setting, "compaction_s": round(compaction_s, 1), "index_bytes": index_bytes, **runs}, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the HBase (hbase://HOST:PORT/?admin_port=...&zk=...)")
    parser.add_argument("--dir", required=True, help="its scripts/hbase-local folder (DEDUP_HBASE_LOCAL_DIR)")
    parser.add_argument("--n", type=lambda s: int(float(s)), default=10**7, help="fingerprints (default 1e7)")
    parser.add_argument("--queries", type=lambda s: int(float(s)), default=10**4, help="lookups (default 1e4)")
    parser.add_argument("--scheme", default="4", choices=("4", "5"))
    parser.add_argument("--settings", default="65536:FAST_DIFF:GZ,8192:FAST_DIFF:GZ",
                        help="BLOCKSIZE:ENCODING:COMPRESSION,... (default: as shipped, then 8 KB blocks)")
    parser.add_argument("--data", default="/tmp/dedup-bench-scale", help="the scale bench's input folder")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--keep", action="store_true",
                        help="keep the tables (their store URL printed last) to check them with other code")
    args = parser.parse_args()
    folder = Path(args.dir).resolve()
    fps, queries = data_files(Path(args.data), args.n, 7, args.queries)
    cold = cold_queries(queries, args.n)
    prefix = f"seeks{args.scheme}{uuid.uuid4().hex[:6]}"
    store = f"{args.url}&table_prefix={prefix}"
    work = Path(args.data) / f"seeks-{prefix}"
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([*DH, "init", "--store", store, "--scheme", args.scheme, "--short-texts", "off"], check=True,
                   capture_output=True, cwd=ROOT)
    try:
        started = time.monotonic()
        subprocess.run([*DH, "load", "--store", store, "--engine", "spark", "--spark-master", args.spark_master,
                        "--spark-conf", "spark.driver.memory=4g", "--fingerprints", "-q", str(fps)],
                       check=True, capture_output=True, cwd=ROOT)
        print(json.dumps({"n": args.n, "scheme": args.scheme, "load_s": round(time.monotonic() - started, 1)}),
              flush=True)
        first = None
        for setting in args.settings.split(","):
            figures, out = run_setting(folder, store, prefix, queries, cold, setting, work)
            figures["index_bytes_per_fingerprint"] = round(figures.pop("index_bytes") / args.n, 2)
            figures["answers_equal_the_first_settings"] = first is None or out == first
            first = out if first is None else first
            print(json.dumps(figures), flush=True)
    finally:
        if args.keep:
            print(json.dumps({"kept": store}), flush=True)
        else:
            drop_tables(store)


if __name__ == "__main__":
    main()
