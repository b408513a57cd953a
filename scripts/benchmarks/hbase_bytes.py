"""Bytes a fingerprint on HBase by table settings (issue 43: at most 40 bytes a document).

For each data block encoding and compression named, on an HBase of ``scripts/hbase-local``: ``init
--scheme S --short-texts off`` under a table prefix of its own, both tables (index, docs) altered
to those settings in the HBase shell, ``load --fingerprints -q`` of the scale bench's N
fingerprints (scale.py's ``data_files``, seed 7), then a flush and a major compaction and each
table's HFile bytes per fingerprint (scale_hbase.py's ``compacted_bytes``). The tables are dropped
afterwards. The time of each load is printed but is not the point: a Thrift load through memstores
flushes with the settings, as the Spark engine's HFiles are written with schema/tables.json's.

    python -m scripts.benchmarks.hbase_bytes --url 'hbase://127.0.0.1:19090/?admin_port=19091&zk=127.0.0.1:21819' \\
        --dir .hbase-test --n 1e6 --settings FAST_DIFF:GZ,FAST_DIFF:ZSTD,DIFF:ZSTD,NONE:ZSTD,NONE:GZ
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .common import ROOT
from .scale import data_files
from .scale_hbase import compacted_bytes, hfiles, table_dirs

DH = [sys.executable, "-m", "dedup_hbase"]


def shell(folder: Path, script: str) -> None:
    """HBase shell commands against ``scripts/hbase-local``'s HBase in ``folder``."""
    subprocess.run([str(ROOT / "scripts" / "hbase-local"), "shell"], input=script, text=True, check=True,
                   capture_output=True, timeout=600, env={**os.environ, "DEDUP_HBASE_LOCAL_DIR": str(folder)})


def drop_tables(store: str) -> None:
    """The tables of the store URL ``store`` dropped, as far as they exist. Called from a
    ``finally``: a failure is one line on stderr, so that the error that ended the run (if
    any) is the one a reader sees."""
    from dedup_hbase import open_store

    try:
        with open_store(store) as opened:
            opened.drop()
    except Exception as e:  # reported; the run's own error goes on
        print(f"could not drop the tables of {store}: {e}", file=sys.stderr)


def measure(url: str, folder: Path, fps: Path, n: int, scheme: str, encoding: str, compression: str) -> dict:
    prefix = f"bytes_{scheme}_{encoding}_{compression}".lower()
    store = f"{url}&table_prefix={prefix}"
    subprocess.run([*DH, "init", "--store", store, "--scheme", scheme, "--short-texts", "off"], check=True,
                   capture_output=True, cwd=ROOT)
    try:
        shell(folder, "".join(f"alter '{prefix}_{t}', {{NAME => 'd', DATA_BLOCK_ENCODING => '{encoding}', "
                              f"COMPRESSION => '{compression}'}}\n" for t in ("index", "docs")))
        started = time.perf_counter()
        subprocess.run([*DH, "load", "--store", store, "--fingerprints", "-q", "--json", str(fps)], check=True,
                       capture_output=True, cwd=ROOT)
        load_s = time.perf_counter() - started
        total = compacted_bytes(folder, prefix)
        per_table = {d.name.rsplit("_", 1)[1]: sum(f.stat().st_size for f in hfiles([d])) / n
                     for d in table_dirs(folder, prefix)}
        return {"scheme": scheme, "encoding": encoding, "compression": compression, "load_s": round(load_s, 1),
                "bytes_per_fingerprint": total / n, **{f"{t}_bytes": b for t, b in per_table.items()}}
    finally:
        drop_tables(store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the HBase (hbase://HOST:PORT/?admin_port=...)")
    parser.add_argument("--dir", required=True, help="its scripts/hbase-local folder (DEDUP_HBASE_LOCAL_DIR)")
    parser.add_argument("--n", type=lambda s: int(float(s)), default=10**6, help="fingerprints (default 1e6)")
    parser.add_argument("--scheme", default="4", choices=("4", "5"))
    parser.add_argument("--settings", default="FAST_DIFF:GZ", help="ENCODING:COMPRESSION,... (default FAST_DIFF:GZ)")
    parser.add_argument("--data", default="/tmp/dedup-bench-scale", help="the scale bench's input folder")
    args = parser.parse_args()
    fps, _ = data_files(Path(args.data), args.n, 7, 1000)
    for setting in args.settings.split(","):
        encoding, compression = setting.split(":")
        print(json.dumps(measure(args.url, Path(args.dir).resolve(), fps, args.n, args.scheme, encoding, compression)),
              flush=True)


if __name__ == "__main__":
    main()
