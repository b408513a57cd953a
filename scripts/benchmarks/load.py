"""Bulk-load throughput. The fingerprint stage alone (MB/s per core,
next to the ``simhash`` package), end-to-end ``dedup-hbase load`` into the embedded store
(and HBase when one is given or running), and peak memory as the corpus grows.

The corpus is the shared Chinese news set (``../shared/data/xwlb_zh.jsonl.gz``) repeated to
the size asked, ids made unique.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .common import ROOT, Report, progress

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
    """MB/s of text -> fingerprint on one core, the same texts for every system."""
    import jieba
    from simhash import Simhash

    from dedup_hbase.text import native
    from dedup_hbase.text.features import JiebaFeaturizer, ShingleFeaturizer
    from dedup_hbase.text.fingerprint import Fingerprinter

    docs = [r["text"] for r in texts(sample)]
    mb = sum(len(t.encode()) for t in docs) / 1e6
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    systems = [
        (f"dedup-hbase jieba TF-IDF ({native.describe()})", Fingerprinter(JiebaFeaturizer()).fingerprint),
        ("dedup-hbase jieba TF-IDF (Python path, rjieba)", Fingerprinter(JiebaFeaturizer(), native=False).fingerprint),
        ("dedup-hbase jieba TF-IDF (Python path, jieba only: the reference)",
         Fingerprinter(JiebaFeaturizer(fast=False), native=False).fingerprint),
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


# `dedup-hbase init` + `load` run from a fresh Python parent, which then reports the peak RSS of
# its largest child (RUSAGE_CHILDREN keeps the maximum over every child ever waited for).
_WRAPPER = """
import json, resource, subprocess, sys
cli = [sys.executable, "-m", "dedup_hbase"]
store, corpus, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
subprocess.run([*cli, "init", "--store", store], check=True, capture_output=True)
out = subprocess.run([*cli, "load", "--store", store, "--json", "-q", *extra, corpus],
                     check=True, capture_output=True, text=True).stdout
print(json.dumps([json.loads(out), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
"""


def cli_load(store: str, corpus: Path, *extra: str) -> tuple[dict, float]:
    """The load report and the peak RSS (MB) of the largest process (the load or a worker)."""
    result = subprocess.run([sys.executable, "-c", _WRAPPER, store, str(corpus), *extra],
                            check=False, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"dedup-hbase load into {store} failed:\n{result.stderr[-2000:]}")
    report, peak_kb = json.loads(result.stdout)
    return report, peak_kb / 1024


def run(report: Report, args, hbase_url: str | None) -> None:
    report.section("Bulk load")
    if not CORPUS.exists():
        report.write(f"skipped: the shared corpus {CORPUS} is not there")
        return
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-load-"))
    data: dict = {"sample": args.sample, "docs": args.docs}
    try:
        progress("  fingerprint stage ...\n")
        stage = fingerprint_stage(args.sample)
        base = stage[0][1]
        report.write(f"Fingerprint stage alone, one core, the same {args.sample:,} documents of "
                     f"`{CORPUS.name}` for every system:\n")
        report.table(["system", "MB/s per core", "vs dedup-hbase"],
                     [[name, f"{rate:.2f}", f"{rate / base:.2f}x"] for name, rate in stage])
        data["fingerprint_stage"] = [{"system": name, "mb_per_s": rate} for name, rate in stage]

        corpus = work / "corpus.jsonl"
        mb = write_corpus(corpus, args.docs)
        runs = [("embedded store, 2 workers", str(work / "embedded"), []),
                ("embedded store, 1 worker", str(work / "embedded1"), ["--workers", "1"])]
        if hbase_url:
            sep = "&" if "?" in hbase_url else "?"
            runs.append(("HBase (WAL off), 2 workers",
                         f"{hbase_url}{sep}table_prefix=b{uuid.uuid4().hex[:8]}&wal=false", []))
        table, data["end_to_end"] = [], []
        for name, store, extra in runs:
            progress(f"  load: {name} ...\n")
            result, peak = cli_load(store, corpus, *extra)
            if result["read"] != args.docs or result["read"] != result["indexed"] + result["rejected"]:
                report.fail(f"load into {name}: counts do not add up: {result}")
            table.append([name, f"{result['docs_per_s']:,.0f}", f"{result['mb_per_s']:.2f}", f"{peak:,.0f}"])
            data["end_to_end"].append({"target": name, **result, "peak_rss_mb": peak})
            if store.startswith("hbase://"):
                from dedup_hbase import open_store

                open_store(store).drop()
        report.write(f"End to end (`dedup-hbase load`: read + parse + fingerprint + write), {args.docs:,} "
                     f"documents, {mb:.0f} MB of text:\n")
        report.table(["target", "docs/s", "MB/s", "peak RSS MB"], table)
        if not hbase_url:
            report.write("(HBase load: skipped, no HBase running; start one with `scripts/hbase-local start`)\n")

        if args.memory:
            table, data["memory"] = [], []
            for docs in args.memory:
                progress(f"  memory: {docs:,} documents ...\n")
                path = work / f"memory-{docs}.jsonl"
                size = write_corpus(path, docs)
                result, peak = cli_load(str(work / f"memory-{docs}"), path)
                table.append([f"{docs:,}", f"{size:,.0f}", f"{result['docs_per_s']:,.0f}", f"{peak:,.0f}"])
                data["memory"].append({"docs": docs, "mb": size, "docs_per_s": result["docs_per_s"],
                                       "peak_rss_mb": peak})
                path.unlink()
            report.write("Peak memory as the corpus grows (embedded store, 2 workers; RSS of the largest process):\n")
            report.table(["documents", "MB of text", "docs/s", "peak RSS MB"], table)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        report.data["load"] = data
