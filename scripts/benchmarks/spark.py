"""Spark: ``load --engine spark`` (HFiles + BulkLoadHFiles) next to ``load --engine local``
(today's Thrift puts), same run, same HBase, same inputs.

Two inputs, each loaded by both engines into fresh tables (dropped afterwards), the Spark
and local runs interleaved so that drift in the machine's load hits both:

* N precomputed fingerprints (``--fingerprints``; random 64-bit values, ids ``d0``..): the
  write path alone. Index rows/s = 4 x N / wall time.
* the shared news corpus as text (``xwlb_zh.jsonl.gz``): fingerprinting + writes, MB/s of text;
  as one gzip file (one task: one core), split into 8 gzip files of whole lines, and as Parquet
  with 8 row groups; and 16 times over (its ids suffixed ``#cN``: 16 x the documents; each copy
  one gzip file, and as Parquet with a row group per copy), where the job's warm-up no longer
  hides the step's rate. Spark's MB/s per
  core of its read + fingerprint step is shown next to it.

Every run is the command line in its own process, timed from outside: Python start, Spark
session and JVM start, reading, fingerprinting, HFiles and bulk load all included. The Spark
runs also log their steps (logger ``dedup_hbase.jobs.spark.harness``). Then a projection for 10^9
documents of 3 KB from the measured per-core rates, with the arithmetic shown.

Needs an HBase with its ZooKeeper: ``--hbase URL`` with ``zk=HOST:PORT``, else the local one
(scripts/hbase-local, ZooKeeper port $DEDUP_HBASE_ZK_PORT or 21818).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .common import Report, progress
from .fingerprint import core_batch_rate
from .hbase import SKIPPED

CORPUS = Path(__file__).resolve().parent.parent.parent.parent / "shared" / "data" / "xwlb_zh.jsonl.gz"
RUNNER = ("import logging, sys\n"
          "logging.basicConfig(level=logging.WARNING, format='STEP %(message)s')\n"
          "logging.getLogger('dedup_hbase.jobs.spark.harness').setLevel(logging.INFO)\n"
          "from dedup_hbase.cli.commands import main\n"
          "sys.argv = ['dedup-hbase', *sys.argv[1:]]\n"
          "main()\n")


def with_zk(url: str) -> str:
    if "zk=" in url:
        return url
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}zk=127.0.0.1:{os.environ.get('DEDUP_HBASE_ZK_PORT', '21818')}"


def write_fingerprints(path: Path, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(f'{{"id": "d{i}", "simhash": "{rnd.getrandbits(64):016x}"}}\n')


def split_corpus(work: Path, parts: int = 8) -> tuple[Path, Path]:
    """The corpus as ``parts`` gzip files of whole lines (in order, in one folder) and as Parquet
    with ``parts`` row groups."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = f.readlines()
    folder = work / "split"
    folder.mkdir()
    size = -(-len(lines) // parts)
    for i in range(parts):
        with gzip.open(folder / f"part-{i:02d}.jsonl.gz", "wt", encoding="utf-8") as out:
            out.writelines(lines[i * size:(i + 1) * size])
    rows = [json.loads(line) for line in lines if line.strip()]
    table = pa.table({k: [r.get(k) for r in rows] for k in ("id", "text", "title")})
    pq.write_table(table, work / "corpus.parquet", row_group_size=-(-len(rows) // parts))
    return folder, work / "corpus.parquet"


def copies_corpus(work: Path, copies: int = 16) -> tuple[Path, Path]:
    """The corpus ``copies`` times over (ids suffixed ``#cN`` so that every document is a new
    one): as as many gzip files (one copy each, in a folder ``copies-N``), and as one Parquet
    file with a row group per copy (``copies-N.parquet``)."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    folder = work / f"copies-{copies}"
    folder.mkdir()
    with pq.ParquetWriter(work / f"copies-{copies}.parquet", pa.schema([("id", pa.string()), ("text", pa.string()),
                                                              ("title", pa.string())])) as parquet:
        for c in range(copies):
            copy = [{**row, "id": f"{row['id']}#c{c}"} for row in rows]
            with gzip.open(folder / f"copy-{c:02d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as out:
                for row in copy:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
            parquet.write_table(pa.table({k: [r.get(k) for r in copy] for k in ("id", "text", "title")}),
                                row_group_size=len(copy))
    return folder, work / f"copies-{copies}.parquet"


def run_load(url: str, engine: str, path: Path, fingerprints: bool, master: str) -> dict:
    """One `dedup-hbase load` in its own process into fresh tables; wall time from outside."""
    sep = "&" if "?" in url else "?"
    store = f"{url}{sep}table_prefix=bs{uuid.uuid4().hex[:8]}"
    off = ["--short-texts", "off"] if fingerprints else []  # precomputed fingerprints carry no text for the rule
    subprocess.run([sys.executable, "-m", "dedup_hbase", "init", "--store", store, *off], check=True, capture_output=True)
    args = ["load", "--store", store, "--json", "-q", "--engine", engine, str(path)]
    if fingerprints:
        args.append("--fingerprints")
    if engine == "spark":
        args += ["--spark-master", master]
    try:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", RUNNER, *args], capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"load --engine {engine} failed:\n{done.stderr[-3000:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        steps = [(m.group(1).strip(), float(m.group(2)))
                 for m in re.finditer(r"^STEP (.+?)\s+([\d.]+) s$", done.stderr, re.M)]
        return {"wall_s": wall, "report": report, "steps": steps, "load1": os.getloadavg()[0]}
    finally:
        subprocess.run([sys.executable, "-c", "import sys\nfrom dedup_hbase import open_store\n"
                        "s = open_store(sys.argv[1])\ns.drop()\ns.close()", store], capture_output=True)


def run(report: Report, args, url: str | None) -> None:
    report.section("Spark: HFiles + bulk load vs Thrift puts")
    if not url:
        report.write(SKIPPED)
        report.data["spark"] = {"skipped": SKIPPED}
        return
    url = with_zk(url)
    n, cores = args.spark_n, os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-spark-"))
    fps = work / "fingerprints.jsonl"
    write_fingerprints(fps, n, args.seed)
    results: dict[tuple[str, str], dict] = {}
    plan = [("fingerprints", fps, True, ("spark", "local"))]
    if CORPUS.exists():
        split, parquet = split_corpus(work)
        copies, few = copies_corpus(work), copies_corpus(work, 4)
        plan += [("corpus", CORPUS, False, ("spark", "local")), ("corpus x8", split, False, ("spark",)),
                 ("corpus parquet", parquet, False, ("spark",)),
                 ("corpus 4 copies", few[0], False, ("spark",)), ("corpus 16 copies", copies[0], False, ("spark",)),
                 ("corpus 4 copies parquet", few[1], False, ("spark",)),
                 ("corpus 16 copies parquet", copies[1], False, ("spark",))]
    for name, path, fp, engines in plan:
        for engine in engines:
            progress(f"  {name}: load --engine {engine} ...\n")
            results[(name, engine)] = run_load(url, engine, path, fp, args.spark_master)
    shutil.rmtree(work)

    rows = []
    for (name, engine), r in results.items():
        rep = r["report"]
        index_rows = 4 * rep["new"]
        mb = rep["text_bytes"] / 1e6
        read_s = sum(v for k, v in r["steps"] if k.startswith("read, fingerprint"))
        rows.append([name, engine, f"{rep['read']:,}", f"{index_rows:,}", f"{r['wall_s']:.1f}",
                     f"{index_rows / r['wall_s']:,.0f}", f"{mb / r['wall_s']:.2f}" if mb else "-",
                     f"{mb / read_s / cores:.2f}" if mb and read_s else "-", f"{r['load1']:.1f}"])
    report.write(f"HBase at `{url}`, Spark master `{args.spark_master}`, {cores} cores (shared: the load "
                 "average after each run is shown). Wall time of the whole command, from outside.\n")
    report.table(["input", "engine", "documents", "index rows", "wall s", "index rows/s", "MB/s text",
                  "MB/s per core (read + fingerprint step)", "load avg"], rows, right={2, 3, 4, 5, 6, 7, 8})
    ratios = []
    for name in ("fingerprints", "corpus"):
        if (name, "spark") in results:
            spark_s, local_s = results[(name, "spark")]["wall_s"], results[(name, "local")]["wall_s"]
            ratios.append([name, f"{local_s / spark_s:.2f}x"])
    report.table(["input", "Spark/HFile speed vs local/Thrift (same rows)"], ratios)
    for (name, _engine), r in results.items():
        if r["steps"]:
            report.write(f"Steps of the Spark load of {name} (s): "
                         + ", ".join(f"{step} {sec:.1f}" for step, sec in r["steps"]) + "\n")
    report.data["spark"] = {"url": url, "n": n, "master": args.spark_master,
                            "runs": {f"{k[0]}/{k[1]}": v for k, v in results.items()}}
    if ("corpus 16 copies", "spark") in results:
        text_against_core(report, results, cores)
    projection(report, results, cores)


def text_against_core(report: Report, results: dict, cores: int) -> None:
    """Spark's read + fingerprint step per core next to the core's own rate, measured now: the
    step as a whole (the job's warm-up in it: the Python daemon and workers starting, jieba's
    dictionary loaded in each worker, the JVM compiling), and the rate beyond that fixed cost,
    from the 4-copies and 16-copies loads: (bytes of 16 - bytes of 4) / (step of 16 - step of
    4) / cores."""
    progress("  the core's own rate ...\n")
    core = core_batch_rate() * 1e6  # bytes per CPU second, the whole corpus, best of 3
    rows = []
    for kind, suffix in (("JSON lines, 16 gzip files", ""), ("Parquet, a row group per copy", " parquet")):
        many, few = results.get((f"corpus 16 copies{suffix}", "spark")), results.get((f"corpus 4 copies{suffix}", "spark"))
        if many is None or few is None:
            continue
        step = [sum(v for k, v in r["steps"] if k.startswith("read, fingerprint")) for r in (many, few)]
        size = [r["report"]["text_bytes"] for r in (many, few)]
        whole = size[0] / step[0] / cores
        beyond = (size[0] - size[1]) / (step[0] - step[1]) / cores if step[0] > step[1] else float("nan")
        rows.append([kind, f"{size[0] / 1e6:.1f} MB in {step[0]:.1f} s", f"{whole / 1e6:.2f}", f"{core / whole:.2f}x",
                     f"({size[0] / 1e6:.1f} - {size[1] / 1e6:.1f}) MB / ({step[0]:.1f} - {step[1]:.1f}) s",
                     f"{beyond / 1e6:.2f}", f"{core / beyond:.2f}x"])
    report.write(f"The read + fingerprint step against the compiled core's own rate, measured in this run: "
                 f"**{core / 1e6:.2f} MB/s per CPU second** (one `fingerprint_many` call on one thread, the whole "
                 f"corpus, best of 3, a fresh interpreter). Per core = MB / step s / {cores} cores.\n")
    report.table(["input", "step", "MB/s per core (step)", "core / Spark", "beyond the fixed cost (16 vs 4 copies)",
                  "MB/s per core (beyond)", "core / Spark (beyond)"], rows, right={2, 3, 5, 6})
    report.data["spark"]["core_mb_per_cpu_s"] = core / 1e6


def projection(report: Report, results: dict, cores: int) -> None:
    """10^9 documents of 3 KB, from the measured per-core rates of the steps (the Spark
    session's start is a fixed cost, not a rate), arithmetic shown."""
    if ("corpus x8", "spark") not in results or ("fingerprints", "spark") not in results:
        return
    docs, doc_bytes = 10**9, 3000
    text, rows_total = docs * doc_bytes, 4 * docs
    text_input = "corpus 16 copies" if ("corpus 16 copies", "spark") in results else "corpus x8"
    c, f = results[(text_input, "spark")], results[("fingerprints", "spark")]
    step = lambda r, prefix: sum(v for k, v in r["steps"] if k.startswith(prefix))
    read_s = step(c, "read, fingerprint")
    fp_rate = c["report"]["text_bytes"] / read_s / cores  # text bytes/s per core: read + fingerprint
    text_line = (f"- Read + fingerprint ({text_input}, Spark step): {c['report']['text_bytes'] / 1e6:.1f} MB in "
                 f"{read_s:.1f} s on {cores} cores = **{fp_rate / 1e6:.2f} MB/s per core**.")
    few = results.get(("corpus 4 copies", "spark"))
    if text_input == "corpus 16 copies" and few is not None and read_s > step(few, "read, fingerprint"):
        # 10^9 documents pay the job's fixed cost once: the rate beyond it is the one that scales
        few_s, few_bytes = step(few, "read, fingerprint"), few["report"]["text_bytes"]
        fp_rate = (c["report"]["text_bytes"] - few_bytes) / (read_s - few_s) / cores
        text_line += (f" Beyond the job's fixed cost (16 against 4 copies): ({c['report']['text_bytes'] / 1e6:.1f} - "
                      f"{few_bytes / 1e6:.1f}) MB / ({read_s:.1f} - {few_s:.1f}) s / {cores} cores = "
                      f"**{fp_rate / 1e6:.2f} MB/s per core**, the rate used below.")
    rows = 4 * f["report"]["new"]
    hfile_s = step(f, "HFiles")
    write_rate = rows / hfile_s / cores  # index rows/s per core: last-wins shuffle, rows, sort, HFiles
    bulk_s = step(f, "bulk load")
    start_s = step(f, "spark session")
    thrift = results[("fingerprints", "local")]
    thrift_rate = 4 * thrift["report"]["new"] / thrift["wall_s"]
    core_s_text = text / fp_rate
    core_s_rows = rows_total / write_rate
    core_s = core_s_text + core_s_rows
    lines = [
        text_line,
        f"- Rows + HFiles (fingerprint load, Spark step): {rows:,} index rows (+ {f['report']['new']:,} document rows) "
        f"in {hfile_s:.1f} s on {cores} cores = **{write_rate:,.0f} index rows/s per core**.",
        f"- Fixed costs: Spark session {start_s:.1f} s; bulk loads {bulk_s:.1f} s for {rows:,} rows (files are moved "
        "into the regions, not rewritten: grows with the number of files, not rows).",
        f"- 10^9 documents x 3 KB = {text / 1e12:.0f} TB of text, {rows_total:.0e} index rows (4-split).",
        f"- Core time: {text:.0e} B / {fp_rate / 1e6:.2f} MB/s = {core_s_text:.3g} core-s, plus {rows_total:.0e} rows / "
        f"{write_rate:,.0f} rows/s = {core_s_rows:.3g} core-s; together {core_s:.3g} core-s = "
        f"{core_s / 3600:,.0f} core-hours.",
    ]
    for n_cores in (100, 500, 2000):
        lines.append(f"- On {n_cores} cores: {core_s:.3g} / {n_cores} = {core_s / n_cores / 3600:,.1f} h wall.")
    lines.append(f"- For comparison, the Thrift path as measured here ({thrift_rate:,.0f} index rows/s through one "
                 f"gateway, job start included) needs {rows_total / thrift_rate / 3600:,.0f} h for the "
                 f"{rows_total:.0e} rows alone.")
    report.write("Projection for 10^9 documents of 3 KB (from this run's rates):\n\n" + "\n".join(lines) + "\n")
