"""Corpus-wide near-duplicate groups: ``dedup-hbase groups`` (local engine and Spark) next to
the MinHash deduplicators people use, same run, same texts.

The corpus is the shared news set (``../shared/data/xwlb_zh.jsonl.gz``, 19,339 documents)
repeated (``--groups-copies``, default 4 and 16 times: 77,356 and 309,424 documents), ids made
unique (``ID#copy``), written once as 8 JSON-lines files (``part-*.jsonl``, the copies one after
another) into a temporary folder that every system reads.

The systems, each the whole command in its own process, one after another:

* ``dedup-hbase groups DIR --out OUT --json`` with ``--engine local`` and ``--engine spark``
  (``--groups-spark-master``, default local[2]): every pair within k = 3 bits of SimHash and
  their connected components. Its output is checked against brute force in the run (all pairs
  of distinct fingerprints by XOR, components by union-find): a different partition, a group
  without exactly one kept document, or a wrong ``size`` fails the run.
* rensa (MinHash LSH in Rust, in memory, one process), datatrove's MinHash deduplication
  (LocalPipelineExecutor, 2 tasks) and text-dedup's ``text_dedup.minhash``, all on character
  5-grams (``groups_peers.py``), from their own venv (``--peers-python``; see
  ``groups-peers.txt``).

Measured from outside by a small parent per run: wall time, CPU time (user + sys of the whole
process tree: the parent is made the subreaper of every descendant and waits for them all, so
the Spark JVM and worker pools count), the peak RSS of the largest process, and the peak of
the tree's summed RSS (sampled every 0.2 s). Documents removed: to_drop for dedup-hbase, the
documents a peer filtered out.

What "removed" means differs: dedup-hbase drops all but one document of each group of
documents within 3 bits of SimHash (exact: every such pair is found), the MinHash systems drop
documents whose estimated Jaccard similarity of character 5-grams clears their threshold,
found by LSH (probable, not certain). The counts are shown side by side, not as the same thing.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .common import ROOT, Report, flip_bits, fmt_n, progress
from .measured import last_json, measure

CORPUS = ROOT.parent / "shared" / "data" / "xwlb_zh.jsonl.gz"
PEERS = Path(__file__).resolve().parent / "groups_peers.py"
PARTS = 8
K = 3

def write_corpus(folder: Path, copies: int) -> tuple[int, float]:
    """The corpus ``copies`` times over as PARTS files of whole lines; (documents, MB of text)."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        base = [json.loads(line) for line in f if line.strip()]
    lines = [json.dumps({"id": f"{r['id']}#{c}", "text": r["text"]}, ensure_ascii=False) + "\n"
             for c in range(copies) for r in base]
    folder.mkdir(parents=True)
    size = -(-len(lines) // PARTS)
    for i in range(PARTS):
        with open(folder / f"part-{i:02d}.jsonl", "w", encoding="utf-8") as out:
            out.writelines(lines[i * size:(i + 1) * size])
    return len(lines), copies * sum(len(r["text"].encode()) for r in base) / 1e6


# -- the systems ----------------------------------------------------------------------------


def cli(args) -> list[str]:
    return shlex.split(args.groups_cli) if args.groups_cli else [sys.executable, "-m", "dedup_hbase"]


def has_groups(command: list[str]) -> bool:
    return subprocess.run([*command, "groups", "--help"], capture_output=True).returncode == 0


def systems(args, with_groups: bool) -> dict[str, dict]:
    """name -> how to run it (a function of the input folder and a work folder) and read its
    result (documents read, documents removed, parameters)."""
    dh = cli(args)
    peers = args.peers_python

    def groups(engine: str):
        def command(inp: Path, work: Path) -> list[str]:
            extra = ["--spark-master", args.groups_spark_master] if engine == "spark" else []
            return [*dh, "groups", str(inp), "--out", str(work / "out"), "--k", str(K), "--json",
                    "--engine", engine, *extra]

        def result(r: dict, work: Path) -> dict:
            summary = last_json(r["stdout"])
            read = summary.get("read", summary["documents"] + summary.get("rejected", 0))
            return {"read": read, "removed": summary["to_drop"],
                    "params": f"k = {K}, exact", "summary": summary, "out": work / "out"}
        return {"command": command, "result": result}

    def load_groups(inp: Path, work: Path) -> list[str]:
        subprocess.run([*dh, "init", "--store", str(work / "store")], check=True, capture_output=True)  # not timed
        return [*dh, "load", str(inp), "--store", str(work / "store"), "--groups", str(work / "groups.jsonl"),
                "--json", "-q"]

    def load_result(r: dict, work: Path) -> dict:
        summary = last_json(r["stdout"])
        with open(work / "groups.jsonl", encoding="utf-8") as f:
            removed = sum(json.loads(line)["size"] - 1 for line in f if line.strip())
        return {"read": summary["read"], "removed": removed, "params": f"k = {K}, exact; also builds the index"}

    def peer(name: str):
        return {"command": lambda inp, work: [peers, str(PEERS), name, str(inp), str(work)],
                "result": lambda r, work: last_json(r["stdout"])}

    out = {}
    if with_groups:
        out["dedup-hbase groups --engine local"] = groups("local")
        out[f"dedup-hbase groups --engine spark ({args.groups_spark_master})"] = groups("spark")
    else:
        out["dedup-hbase load --groups (embedded store; stands in for `groups`)"] = {
            "command": load_groups, "result": load_result}
    for name in ("rensa", "datatrove", "text-dedup"):
        out[name] = peer(name)
    return out


def write_fingerprints(folder: Path, n: int, seed: int) -> dict:
    """``n`` fingerprints as PARTS JSON-lines files (``{"id": "d<i>", "simhash": "<16 hex>"}``):
    uniformly random, the last tenth near-duplicates (0..K bits flipped) of earlier ones, and one
    cluster of min(10^5, n / 100) exact copies of one fingerprint spread over the rest."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    planted, copies = n // 10, min(10**5, n // 100)
    where = rng.choice(n - planted, size=copies, replace=False)
    fps[where] = fps[where[0]]  # before the planting, so that every planted copy stays near its source
    sources = rng.integers(0, n - planted, size=planted)
    fps[n - planted:] = flip_bits(fps[sources], rng.integers(0, K + 1, size=planted), rng)
    folder.mkdir(parents=True)
    size = -(-n // PARTS)
    for part in range(PARTS):
        with open(folder / f"part-{part:02d}.jsonl", "w", encoding="utf-8") as out:
            end = min(n, (part + 1) * size)
            for start in range(part * size, end, 100_000):
                chunk = fps[start:min(end, start + 100_000)].tolist()
                out.write("".join(f'{{"id": "d{start + i}", "simhash": "{v:016x}"}}\n' for i, v in enumerate(chunk)))
    return {"n": n, "planted": planted, "copies": copies}


def fingerprints_run(report: Report, args, with_groups: bool, cores: int) -> None:
    """``groups --fingerprints`` on n synthetic fingerprints (Spark, then the local engine),
    and a projection for 10^9 documents from the Spark run's rate per core."""
    n = args.groups_fingerprints
    title = f"### groups on {fmt_n(n)} precomputed fingerprints\n"
    if not with_groups:
        report.write(title + "\nNot run: `dedup-hbase groups` is not available in the dedup-hbase measured here.\n")
        return
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-groups-fp-"))
    runs: dict[str, dict] = {}
    try:
        progress(f"  writing {n:,} fingerprints ...")
        planted = write_fingerprints(work / "in", n, args.seed)
        progress(" done\n")
        for engine in ("spark", "local"):
            run_dir = work / f"run-{engine}"
            run_dir.mkdir()
            extra = ["--spark-master", args.groups_spark_master] if engine == "spark" else []
            command = [*cli(args), "groups", str(work / "in"), "--fingerprints", "--out", str(run_dir / "out"),
                       "--k", str(K), "--json", "--engine", engine, *extra]
            progress(f"  groups --fingerprints {n:,}: --engine {engine} ...")
            try:
                r = measure(command, run_dir)
            except RuntimeError as e:
                report.fail(f"groups --engine {engine} on {n:,} fingerprints: {str(e).splitlines()[0]}")
                progress(f" failed\n{e}\n")
                continue
            r.update(summary=last_json(r.pop("stdout")), command=shlex.join(command), load1=os.getloadavg()[0])
            r["stderr"] = r["stderr"][-2000:]
            progress(f" {r['wall_s']:.1f} s\n")
            runs[engine] = r
            shutil.rmtree(run_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.write(title)
    report.write(f"{n:,} random fingerprints of which {planted['planted']:,} (the last tenth) are 0..{K} bits from an "
                 f"earlier one, and one cluster of {planted['copies']:,} exact copies; seed {args.seed}.\n")
    rows = []
    for engine, r in runs.items():
        s = r["summary"]
        rows.append([f"--engine {engine}" + (f" ({args.groups_spark_master})" if engine == "spark" else ""),
                     f"{r['wall_s']:.1f}", f"{n / r['wall_s']:,.0f}", f"{n / r['wall_s'] / cores:,.0f}",
                     f"{r['cpu_s']:.1f}", f"{r['max_rss_mb']:,.0f}", f"{r['tree_rss_mb']:,.0f}",
                     f"{s['groups']:,}", f"{s['to_drop']:,}", s.get("scheme", "-"), f"{r['load1']:.1f}"])
    report.table(["engine", "wall s", "documents/s", "documents/s per core", "CPU s", "peak RSS MB (largest process)",
                  "peak RSS MB (tree)", "groups", "to drop", "scheme", "load avg"], rows)
    report.data["groups_fingerprints"] = {"n": n, **planted, "runs": runs}
    if "spark" in runs:
        projection(report, n, runs["spark"], cores)


def projection(report: Report, n: int, spark: dict, cores: int) -> None:
    """10^9 documents at the Spark run's documents/s per core, next to text-dedup's cluster run."""
    per_core = n / spark["wall_s"] / cores
    core_s = 1e9 / per_core
    td = 42e6 / (40 * 60) / 160
    lines = [f"- Measured: {n:,} documents in {spark['wall_s']:.1f} s on {cores} cores = {n / spark['wall_s']:,.0f} "
             f"documents/s = **{per_core:,.0f} documents/s per core** (whole command: JVM and session start, read, "
             "pairs, components, Parquet).",
             f"- 10^9 documents / {per_core:,.0f} per core-s = {core_s:.3g} core-s = {core_s / 3600:,.0f} core-hours; "
             f"on 160 cores {core_s / 160 / 3600:,.1f} h.",
             f"- text-dedup's reported Spark run: 42·10^6 documents in under 40 min on 160 cores = 42e6 / 2,400 s / "
             f"160 = **{td:,.0f} documents/s per core**, which is {1e9 / td / 160 / 3600:,.1f} h for 10^9 on 160 "
             f"cores; ratio {per_core / td:,.1f}x per core. text-dedup's figure includes MinHash of the texts; "
             "this one starts from fingerprints (the text-to-fingerprint step is the load section's MB/s per core).",
             "- Linear scaling is an assumption: with the 5-split a flag's bucket holds about N / 2^26 distinct "
             f"fingerprints, so comparisons per document grow from about 10 x {n:.0e} / 2^26 = {10 * n / 2**26:.2g} "
             "here to about 10 x 1e9 / 2^26 = 149 at 10^9; the shuffle of (flag, segment) keys grows linearly."]
    report.write("Projection for 10^9 documents (arithmetic from this run):\n\n" + "\n".join(lines) + "\n")


# -- exactness -------------------------------------------------------------------------------


def brute_force_check(out: Path) -> str | None:
    """dedup-hbase's Parquet output against brute force: the components of all pairs of distinct
    fingerprints within K bits (XOR + popcount, union-find). None if equal, else what differs."""
    import pyarrow.parquet as pq

    table = pq.ParquetDataset(sorted(str(p) for p in out.rglob("*.parquet"))).read().to_pydict()
    ids, groups, keep, sizes = table["id"], table["group"], table["keep"], table["size"]
    values = np.array([int(h, 16) for h in table["simhash"]], dtype=np.uint64)
    unique, inverse = np.unique(values, return_inverse=True)
    parent = np.arange(len(unique))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pairs = 0
    for start in range(0, len(unique), 1000):
        block = unique[start:start + 1000]
        near = np.bitwise_count(block[:, None] ^ unique[None, :]) <= K
        for a, b in zip(*np.nonzero(near)):
            a += start
            if a < b:
                pairs += 1
                ra, rb = root(a), root(int(b))
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    want: dict[int, set] = {}
    for i, v in enumerate(inverse.tolist()):
        want.setdefault(root(v), set()).add(ids[i])
    got: dict[str, set] = {}
    for i, g in enumerate(groups):
        got.setdefault(g, set()).add(ids[i])
    if sorted(map(sorted, want.values())) != sorted(map(sorted, got.values())):
        return f"groups differ from brute force: {len(got):,} groups, brute force {len(want):,}"
    kept: dict[str, int] = {}
    for g, k in zip(groups, keep):
        kept[g] = kept.get(g, 0) + bool(k)
    if any(n != 1 for n in kept.values()):
        return "a group without exactly one kept document"
    if any(s != len(got[g]) for g, s in zip(groups, sizes)):
        return "a size column that is not the group's size"
    return None


# -- the run ----------------------------------------------------------------------------------


def measured_package(command: list[str]) -> str:
    """Where the measured dedup-hbase's package lives, and its commit (the harness's own header
    names the package the harness imports, which need not be the one measured)."""
    python = command[0]
    if Path(python).name.startswith("dedup-hbase"):
        python = str(Path(python).with_name("python"))
    done = subprocess.run([python, "-c", "import dedup_hbase; print(dedup_hbase.__file__)"],
                          capture_output=True, text=True, cwd="/")  # not this checkout by the current folder
    if done.returncode != 0:
        return "unknown"
    package = Path(done.stdout.strip()).parent
    git = lambda *a: subprocess.run(["git", "-C", str(package), *a], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "no git"
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--", ".") else ""
    return f"{package} at {git('rev-parse', '--abbrev-ref', 'HEAD')} {commit}{dirty}"


def run(report: Report, args) -> None:
    report.section("Groups: corpus-wide near-duplicates vs MinHash deduplicators")
    cores = os.cpu_count() or 1
    if not CORPUS.exists():
        report.write(f"Skipped: the shared corpus {CORPUS} is missing.")
        return
    with_groups = has_groups(cli(args))
    if not Path(args.peers_python).exists():
        report.write(f"Skipped: no peers' Python at {args.peers_python} (make it as "
                     "scripts/benchmarks/groups-peers.txt says, or give --peers-python).")
        report.data["groups"] = {"skipped": "no peers' Python"}
        return
    chosen = systems(args, with_groups)
    if args.groups_systems:
        chosen = {name: s for name, s in chosen.items()
                  if any(p in name.replace("(local[", "(") for p in args.groups_systems)}  # "local": not local[2]
    package = measured_package(cli(args))
    versions = subprocess.run([args.peers_python, "-c", "import importlib.metadata as m\nprint(', '.join(f'{d} ' "
                               "+ m.version(d) for d in ('rensa', 'datatrove', 'text-dedup', 'xxhash')))"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    if not with_groups:
        report.write("**`dedup-hbase groups` is not available in the dedup-hbase measured here "
                     f"(`{shlex.join(cli(args))} groups --help` failed): `load --groups` into the embedded "
                     "store (local engine) stands in for it, and there is no Spark run.**\n")
    report.write(f"dedup-hbase measured: `{shlex.join(cli(args))}` ({package}). {cores} cores (shared: the load "
                 "average after each run is shown). Each system is the whole command in its own process tree, "
                 "timed from outside; CPU = user + sys of the tree; peak RSS of the largest process, and of the "
                 f"tree's sum (sampled every 0.2 s). Peers, from their own venv: {versions}.\n")
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-groups-"))
    results: dict[int, dict[str, dict]] = {}
    corpora: dict[int, tuple[int, float]] = {}
    report.data["groups"] = {"copies": args.groups_copies, "with_groups_command": with_groups,
                             "measured": {"command": shlex.join(cli(args)), "package": package},
                             "peers": versions,
                             "corpora": corpora, "runs": results}
    try:
        for copies in args.groups_copies:
            inp = work / f"corpus-x{copies}"
            corpora[copies] = write_corpus(inp, copies)
            results[copies] = {}
            for number, (name, system) in enumerate(chosen.items()):
                progress(f"  groups x{copies}: {name} ...")
                run_dir = work / f"run-x{copies}-{number}"
                run_dir.mkdir()
                command = system["command"](inp, run_dir)
                try:
                    r = measure(command, run_dir)
                except RuntimeError as e:
                    report.fail(f"{name} on x{copies}: {str(e).splitlines()[0]}")
                    progress(f" failed\n{e}\n")
                    continue
                res = system["result"](r, run_dir)
                r.update(res, command=shlex.join(command), load1=os.getloadavg()[0])
                progress(f" {r['wall_s']:.1f} s, removed {res['removed']:,}\n")
                if "out" in res:
                    wrong = brute_force_check(res["out"])
                    r["brute_force"] = wrong or "equal"
                    if wrong:
                        report.fail(f"{name} on x{copies}: {wrong}")
                r.pop("out", None)
                r.pop("stdout")
                r["stderr"] = r["stderr"][-2000:]
                results[copies][name] = r
                shutil.rmtree(run_dir)
            shutil.rmtree(inp)
            write_table(report, copies, results[copies], corpora[copies])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    targets(report, args, results, corpora)
    if args.groups_fingerprints:
        fingerprints_run(report, args, with_groups, cores)


def write_table(report: Report, copies: int, runs: dict, corpus: tuple[int, float]) -> None:
    docs, mb = corpus
    report.write(f"### The news corpus x{copies}: {docs:,} documents, {mb:.1f} MB of text\n")
    rows = []
    for name, r in runs.items():
        rows.append([name, f"{r['wall_s']:.1f}", f"{docs / r['wall_s']:,.0f}", f"{r['cpu_s']:.1f}",
                     f"{r['max_rss_mb']:,.0f}", f"{r['tree_rss_mb']:,.0f}", f"{r['removed']:,}",
                     r.get("brute_force", "-"), r["params"], f"{r['load1']:.1f}"])
    report.table(["system", "wall s", "documents/s", "CPU s", "peak RSS MB (largest process)", "peak RSS MB (tree)",
                  "documents removed", "vs brute force", "parameters", "load avg"], rows, right={1, 2, 3, 4, 5, 6})


def targets(report: Report, args, results: dict, corpora: dict) -> None:
    """The issue's targets: local no later than rensa on x4; Spark >= 2x datatrove's
    documents/s on x16."""
    lines = []
    local = next((n for n in results.get(4, {}) if "--engine local" in n), None)
    if local and "rensa" in results[4]:
        a, b = results[4][local]["wall_s"], results[4]["rensa"]["wall_s"]
        lines.append(f"- `groups --engine local` on {corpora[4][0]:,} documents: {a:.1f} s, rensa {b:.1f} s: "
                     f"**{'met' if a <= b else 'not met'}** (target: no later than rensa; {b / a:.2f}x rensa's speed).")
    spark = next((n for n in results.get(16, {}) if "--engine spark" in n), None)
    if spark and "datatrove" in results[16]:
        docs = corpora[16][0]
        a, b = docs / results[16][spark]["wall_s"], docs / results[16]["datatrove"]["wall_s"]
        lines.append(f"- `groups --engine spark` ({args.groups_spark_master}) on {docs:,} documents: {a:,.0f} "
                     f"documents/s, datatrove {b:,.0f}: {a / b:.2f}x, **{'met' if a >= 2 * b else 'not met'}** "
                     "(target: at least 2x).")
    if lines:
        report.write("Against the targets:\n\n" + "\n".join(lines) + "\n")
