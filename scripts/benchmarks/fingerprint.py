"""Fingerprinting speed: the compiled core (native/) against the Python path and the
``simhash`` package, MB/s of text per CPU second, the same documents of the shared news
corpus for every system, all in one run; the core's batch call on every core of the
machine (wall rate and speed-up); the dictionary load and the wall time of
``dedup-hbase query TEXT`` with and without the core.

Every core fingerprint is checked against the Python reference (pure jieba); a difference
fails the run.

With DEDUP_HBASE_BASELINE_CORE=DIR (a folder holding another build of the core's module
``dedup_hbase_core``, e.g. an older wheel unpacked with ``python -m zipfile -e WHEEL DIR``)
the run also times that build against this one on the same documents: fresh interpreters,
alternating, the best of three rounds each, and checks that both give the same fingerprints.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Report, progress
from .load import CORPUS, texts

BASELINE = "DEDUP_HBASE_BASELINE_CORE"
QUERY = "国家卫生健康委员会通报全国疫情防控最新情况"


def _rate(fingerprint, docs: list[str], mb: float) -> tuple[float, float]:
    """MB/s of wall time and MB per second of this process's CPU time (the machine is shared:
    the CPU rate is the steadier one)."""
    started, cpu = time.perf_counter(), time.process_time()
    for text in docs:
        try:
            fingerprint(text)
        except ValueError:  # EmptyDocument
            pass
    return mb / (time.perf_counter() - started), mb / (time.process_time() - cpu)


def stage(report: Report, sample: int) -> dict:
    import jieba
    from simhash import Simhash

    from dedup_hbase.jobs.workers import default_workers
    from dedup_hbase.text import native
    from dedup_hbase.text.features import JiebaFeaturizer, ShingleFeaturizer
    from dedup_hbase.text.fingerprint import Fingerprinter

    docs = [r["text"] for r in texts(sample)]
    mb = sum(len(t.encode()) for t in docs) / 1e6
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    reference = Fingerprinter(JiebaFeaturizer(fast=False), native=False)
    core = Fingerprinter(JiebaFeaturizer())
    shingles_core, shingles_py = Fingerprinter(ShingleFeaturizer()), Fingerprinter(ShingleFeaturizer(), native=False)
    if core._core is None:
        report.fail(f"the compiled core is not in use: {native.describe()}")
        return {}
    for f in (reference, core, shingles_core, shingles_py):
        f.fingerprint(docs[0])  # dictionaries load outside the timing

    def batch(fingerprinter, threads=1):
        def run(_):
            fingerprinter.fingerprint_many(docs, threads=threads)
        return run

    cores = default_workers()
    on_cores = f"(b) compiled core, one batch call on {cores} threads"
    systems = [
        ("(a) Python path, pure jieba (the reference)", lambda: _rate(reference.fingerprint, docs, mb)),
        ("Python path with rjieba (the default without the core)",
         lambda: _rate(Fingerprinter(JiebaFeaturizer(), native=False).fingerprint, docs, mb)),
        ("(b) compiled core, one text a call", lambda: _rate(core.fingerprint, docs, mb)),
        ("(b) compiled core, one batch call (fingerprint_many)", lambda: _rate(batch(core), [None], mb)),
        *([(on_cores, lambda: _rate(batch(core, cores), [None], mb))] if cores > 1 else []),
        ("(c) simhash package on jieba words", lambda: _rate(lambda t: Simhash(list(tokenizer.cut(t))).value, docs, mb)),
        ("shingles, Python path", lambda: _rate(shingles_py.fingerprint, docs, mb)),
        ("shingles, compiled core (batch)", lambda: _rate(batch(shingles_core), [None], mb)),
    ]
    rates = {}
    for name, run in systems:
        progress(f"  {name} ...\n")
        rates[name] = run()
    python, simhash = rates[systems[0][0]][1], rates["(c) simhash package on jieba words"][1]
    report.write(f"Fingerprint stage, the same {len(docs):,} documents ({mb:.1f} MB) of "
                 f"`{CORPUS.name}` for every system ({native.describe()}):\n")
    report.table(["system", "MB/s (wall)", "MB/s per CPU second", "vs (a) Python path", "vs (c) simhash package"],
                 [[name, f"{wall:.2f}", f"{cpu:.2f}", f"{cpu / python:.1f}x", f"{cpu / simhash:.2f}x"]
                  for name, (wall, cpu) in rates.items()])
    report.write("(ratios of the CPU rates; every system but the one on "
                 f"{cores} threads runs on one thread)\n")
    if cores > 1:
        one = rates["(b) compiled core, one batch call (fingerprint_many)"][0]
        report.write(f"The batch call on {cores} threads: {rates[on_cores][0] / one:.2f}x the wall rate of one "
                     f"thread ({cores} cores here, shared with whatever else runs).\n")

    progress("  checking every core fingerprint against the reference ...\n")
    got, want = core.fingerprint_many(docs, threads=cores), reference.fingerprint_many(docs)
    if got[1] != want[1] or (got[0] != want[0]).any():
        report.fail("the compiled core and the Python reference disagree on the benchmark documents")
    got, want = shingles_core.fingerprint_many(docs), shingles_py.fingerprint_many(docs)
    if got[1] != want[1] or (got[0] != want[0]).any():
        report.fail("the compiled core and the Python reference disagree (shingles)")
    return {"docs": len(docs), "mb": mb, "cores": cores, "mb_per_s": rates}


# A fresh interpreter times the core's batch call (the best of `rounds`) and prints
# {wall, cpu, digest, module}: run with another build first on sys.path, it times that one.
_CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, {scripts!r})
from benchmarks.load import texts
from dedup_hbase.text.features import JiebaFeaturizer
from dedup_hbase.text.fingerprint import Fingerprinter
import dedup_hbase_core
docs = [r["text"] for r in texts({sample})]
f = Fingerprinter(JiebaFeaturizer())
if f._core is None:
    sys.exit("the compiled core is not in use")
f.fingerprint(docs[0])
best = None
for _ in range({rounds}):
    wall, cpu = time.perf_counter(), time.process_time()
    hashes, errors = f.fingerprint_many(docs)
    run = (time.perf_counter() - wall, time.process_time() - cpu)
    best = run if best is None or run[1] < best[1] else best
digest = hashlib.sha256(hashes.tobytes() + repr(sorted(errors.items())).encode()).hexdigest()
print(json.dumps({{"wall": best[0], "cpu": best[1], "digest": digest, "module": dedup_hbase_core.__file__}}))
"""


def core_batch_rate(sample: int | None = None, rounds: int = 3) -> float:
    """The compiled core's MB of text per CPU second, one batch call on one thread over the
    corpus's first ``sample`` documents (None: all of them), the best of ``rounds``, in a fresh
    interpreter (``_CHILD``)."""
    code = _CHILD.format(scripts=str(Path(__file__).resolve().parent.parent), sample=sample, rounds=rounds)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    run = json.loads(done.stdout.splitlines()[-1])
    return sum(len(r["text"].encode()) for r in texts(sample)) / 1e6 / run["cpu"]


def against_baseline(report: Report, sample: int, baseline: Path, rounds: int = 3) -> dict:
    """This build of the core against the one in ``baseline``, alternating fresh interpreters."""
    code = _CHILD.format(scripts=str(Path(__file__).resolve().parent.parent), sample=sample, rounds=rounds)
    builds = {"this build": {}, f"baseline ({baseline})": {"PYTHONPATH": str(baseline)}}
    mb = sum(len(r["text"].encode()) for r in texts(sample)) / 1e6
    best: dict[str, dict] = {}
    for _ in range(3):
        for name, env in builds.items():
            progress(f"  {name} ...\n")
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    env={**os.environ, **env})
            if result.returncode != 0:
                report.fail(f"timing {name} failed: {result.stderr.strip()[-500:]}")
                return {}
            run = json.loads(result.stdout.splitlines()[-1])
            if name != "this build" and not run["module"].startswith(str(baseline)):
                report.fail(f"{BASELINE}={baseline} holds no dedup_hbase_core: {run['module']} was used")
                return {}
            if name not in best or run["cpu"] < best[name]["cpu"]:
                best[name] = run
    if len({run["digest"] for run in best.values()}) != 1:
        report.fail("the baseline core and this one give different fingerprints")
    ours = mb / best["this build"]["cpu"]
    report.write(f"This build of the core against another, one batch call on one thread, the same {sample:,} "
                 f"documents ({mb:.1f} MB), fresh interpreters taking turns, the best of {3 * rounds} runs each:\n")
    report.table(["build", "MB/s (wall)", "MB/s per CPU second", "this build vs it"],
                 [[name, f"{mb / run['wall']:.2f}", f"{mb / run['cpu']:.2f}", f"{ours / (mb / run['cpu']):.2f}x"]
                  for name, run in best.items()])
    return {name: {"mb_per_s_cpu": mb / run["cpu"], "mb_per_s_wall": mb / run["wall"]} for name, run in best.items()}


def loads(report: Report) -> dict:
    """Dictionary and IDF load, each in a fresh interpreter."""
    code = {
        "Python: jieba.Tokenizer().initialize() + the IDF table":
            "from dedup_hbase.text.features import JiebaFeaturizer as J; f = J(fast=False); f._tokenizer; f._idf",
        "compiled core: dictionary + IDF table":
            "from dedup_hbase import native; from dedup_hbase.text.features import JiebaFeaturizer as J; "
            "native.core_for(J(), 0, None).core",
    }
    out = {}
    for name, body in code.items():
        runs = []
        for _ in range(3):
            result = subprocess.run([sys.executable, "-c", "import time, sys\nt = time.perf_counter()\n" + body
                                     + "\nprint(time.perf_counter() - t)"],
                                    capture_output=True, text=True, check=True)
            runs.append(float(result.stdout.split()[-1]))
        out[name] = statistics.median(runs)
    report.write("Loading jieba's dictionary and IDF table (median of 3 fresh interpreters):\n")
    report.table(["what", "seconds"], [[name, f"{s:.2f}"] for name, s in out.items()])
    return out


def query_time(report: Report) -> dict:
    """Wall time of `dedup-hbase query TEXT` on an empty embedded store, with and without the core."""
    cli = [sys.executable, "-m", "dedup_hbase"]
    out = {}
    with tempfile.TemporaryDirectory(prefix="dedup-bench-query-") as work:
        store = str(Path(work) / "store")
        subprocess.run([*cli, "init", "--store", store], check=True, capture_output=True)
        for name, env in (("Python path (DEDUP_HBASE_NATIVE=0)", {"DEDUP_HBASE_NATIVE": "0"}),
                          ("compiled core", {})):
            runs = []
            for _ in range(3):
                started = time.perf_counter()
                subprocess.run([*cli, "query", "--store", store, QUERY], check=True, capture_output=True,
                               env={**os.environ, **env})
                runs.append(time.perf_counter() - started)
            out[name] = statistics.median(runs)
    report.write("Wall time of `dedup-hbase query TEXT` (embedded store, median of 3):\n")
    report.table(["path", "seconds"], [[name, f"{s:.2f}"] for name, s in out.items()])
    return out


def run(report: Report, args) -> None:
    report.section("Fingerprinting: the compiled core")
    if not CORPUS.exists():
        report.write(f"skipped: the shared corpus {CORPUS} is not there")
        return
    data = {"stage": stage(report, args.sample)}
    if os.environ.get(BASELINE):
        data["baseline"] = against_baseline(report, args.sample, Path(os.environ[BASELINE]).resolve())
    data["load_s"] = loads(report)
    data["query_s"] = query_time(report)
    report.data["fingerprint"] = data
