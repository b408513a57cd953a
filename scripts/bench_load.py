#!/usr/bin/env python3
"""Bulk-load throughput: the fingerprint stage next to the ``simhash`` package, end-to-end
loads into the embedded store and HBase, and peak memory as the corpus grows.

The corpus is the shared Chinese news set repeated (ids made unique) to the size asked.

    python scripts/bench_load.py --docs 200000 --hbase 'hbase://127.0.0.1:9090/?admin_port=9091'
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "data" / "xwlb_zh.jsonl.gz"


def texts(limit: int | None = None) -> list[dict]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f][:limit]


def write_corpus(path: Path, docs: int) -> float:
    """``docs`` records of the corpus repeated; returns MB of text."""
    base, written, size = texts(), 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < docs:
            for record in base[: docs - written]:
                f.write(json.dumps({"id": f"{record['id']}#{written // len(base)}", "text": record["text"]},
                                   ensure_ascii=False) + "\n")
                size += len(record["text"].encode())
            written += min(len(base), docs - written)
    return size / 1e6


def fingerprint_stage(sample: int) -> list[tuple[str, float]]:
    """MB/s of text -> fingerprint on one core, same texts for every system."""
    import jieba
    from simhash import Simhash

    from dedup_hbase.features import JiebaFeaturizer, ShingleFeaturizer
    from dedup_hbase.fingerprint import Fingerprinter

    docs = [r["text"] for r in texts(sample)]
    mb = sum(len(t.encode()) for t in docs) / 1e6
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    systems = [
        ("dedup-hbase jieba TF-IDF (rjieba fast path)", Fingerprinter(JiebaFeaturizer()).fingerprint),
        ("dedup-hbase jieba TF-IDF (jieba only, the reference)", Fingerprinter(JiebaFeaturizer(fast=False)).fingerprint),
        ("dedup-hbase character 4-shingles", Fingerprinter(ShingleFeaturizer()).fingerprint),
        ("simhash package, default features", lambda t: Simhash(t).value),
        ("simhash package, jieba words as features", lambda t: Simhash(list(tokenizer.cut(t))).value),
    ]
    out = []
    for name, fingerprint in systems:
        fingerprint(docs[0])  # load dictionaries outside the timing
        started = time.perf_counter()
        for text in docs:
            fingerprint(text)
        out.append((name, mb / (time.perf_counter() - started)))
    return out


def cli_load(store: str, corpus: Path, *extra: str) -> tuple[dict, float]:
    """``dedup-hbase init`` + ``load`` in a fresh Python parent; returns the load report and
    the peak RSS (MB) of the largest process (the load or a worker). RUSAGE_CHILDREN keeps
    the maximum over every child ever waited for, hence the fresh parent per run."""
    wrapper = ("import json, resource, subprocess, sys;"
               "subprocess.run(['dedup-hbase', 'init', '--store', sys.argv[1]], check=True, capture_output=True);"
               "out = subprocess.run(['dedup-hbase', 'load', '--store', sys.argv[1], '--json', '-q', *sys.argv[3:],"
               " sys.argv[2]], check=True, capture_output=True, text=True).stdout;"
               "print(json.dumps([json.loads(out), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    result = subprocess.run([sys.executable, "-c", wrapper, store, str(corpus), *extra],
                            check=True, capture_output=True, text=True)
    report, peak_kb = json.loads(result.stdout)
    return report, peak_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000, help="documents of the end-to-end loads")
    parser.add_argument("--sample", type=int, default=5000, help="documents of the fingerprint-stage comparison")
    parser.add_argument("--hbase", default=None, help="also load into this HBase (hbase://HOST:PORT/...)")
    parser.add_argument("--memory", default="50000,500000", help="corpus sizes of the peak-memory runs ('' skips)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-load-"))

    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}; corpus: {CORPUS.name} repeated\n")
    stage = fingerprint_stage(args.sample)
    base = stage[0][1]
    print(f"Fingerprint stage alone, one core, {args.sample:,} documents:\n")
    print("| system | MB/s per core | vs dedup-hbase |\n|---|---:|---:|")
    for name, rate in stage:
        print(f"| {name} | {rate:.2f} | {rate / base:.2f}x |")

    corpus = work / "corpus.jsonl"
    mb = write_corpus(corpus, args.docs)
    runs = [("embedded store, 2 workers", str(work / "embedded"), []),
            ("embedded store, 1 worker", str(work / "embedded1"), ["--workers", "1"])]
    if args.hbase:
        sep = "&" if "?" in args.hbase else "?"
        runs.append(("HBase (Thrift1, WAL off), 2 workers",
                     f"{args.hbase}{sep}table_prefix=b{uuid.uuid4().hex[:8]}&wal=false", []))
    print(f"\nEnd to end (read + fingerprint + write), {args.docs:,} documents, {mb:.0f} MB of text:\n")
    print("| target | docs/s | MB/s | peak RSS MB |\n|---|---:|---:|---:|")
    for name, store, extra in runs:
        report, peak = cli_load(store, corpus, *extra)
        assert report["read"] == args.docs == report["indexed"] + report["rejected"]
        print(f"| {name} | {report['docs_per_s']:,.0f} | {report['mb_per_s']:.2f} | {peak:,.0f} |")
        if store.startswith("hbase://"):
            from dedup_hbase import open_store

            open_store(store).drop()

    if args.memory:
        print("\nPeak memory as the corpus grows (embedded store, 2 workers; RSS of the largest process):\n")
        print("| documents | MB of text | docs/s | peak RSS MB |\n|---|---:|---:|---:|")
        for docs in map(int, args.memory.split(",")):
            path = work / f"memory-{docs}.jsonl"
            size = write_corpus(path, docs)
            report, peak = cli_load(str(work / f"memory-{docs}"), path)
            print(f"| {docs:,} | {size:,.0f} | {report['docs_per_s']:,.0f} | {peak:,.0f} |")
            path.unlink()


if __name__ == "__main__":
    main()
