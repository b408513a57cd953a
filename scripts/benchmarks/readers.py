"""A second reader of JSON lines beside corpus.py's against the reference path that would
replace it, alternated in one run so that the machine's drift hits both sides:
``load --engine spark --fingerprints``'s read step (the records of a file of precomputed
fingerprints, counted by one aggregate) on ``local[2]``: the JVM helper's reader
(the data source jvm/.../FingerprintLines.java, spark/fingerprints.py) against corpus.py's reader in the Python workers.
Each run a fresh process (its own Spark session); the step's wall seconds, and the CPU seconds
the step took in the whole process tree (the driver, its JVM, the Python workers).

    python -m scripts.benchmarks.readers --n 4000000 --runs 2

Prints every run, then per side the median and the spread (max - min); the difference of the
medians against the larger spread decides whether the second reader matters. (At c181aec the
same script also measured the compiled core's reader of JSON lines of texts, native/src/jsonl.rs,
which was then removed: its gain stayed within the spread.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

FINGERPRINTS_RUN = """
import json, os, sys, time
from dedup_hbase.jobs.options import InputOptions
from dedup_hbase.jobs.spark import fingerprints, records
from dedup_hbase.jobs.spark.harness import SparkJob
from dedup_hbase.jobs.spark.session import helper_jars, make_session, stop
from dedup_hbase.text.fingerprint import make_fingerprinter

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu():
    # CPU seconds of this process and of every live process below it, with their reaped children
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / TICK)
    below, todo = set(), [os.getpid()]
    while todo:
        parent = todo.pop()
        below.add(parent)
        todo.extend(p for p, (pp, _) in stats.items() if pp == parent and p not in below)
    return sum(stats[p][1] for p in below if p in stats)


path, jvm = sys.argv[1], sys.argv[2] == "jvm"
if not jvm:
    fingerprints.split = lambda planned, *a, **k: (fingerprints.JvmRead(), planned)  # every file to corpus.py's reader
session = make_session("local[2]", {}, helper_jars(), small=False)
spec = make_fingerprinter().spec
session.range(4).count()  # the JVM up before the step
cpu, started = tree_cpu(), time.perf_counter()
frame, _ = records.fingerprinted(SparkJob(session), [path], InputOptions(fingerprints=True), spec)
counts = frame.groupBy("reason").count().collect()
step, cpu = time.perf_counter() - started, tree_cpu() - cpu
stop(session)
print(json.dumps({"step_s": step, "cpu_s": cpu, "read": sum(r["count"] for r in counts)}))
"""


def fingerprints_run(path: Path, jvm: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", FINGERPRINTS_RUN, str(path), "jvm" if jvm else "python"],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(name: str, values: list[float], unit: str) -> str:
    return (f"{name}: median {statistics.median(values):.2f} {unit}, spread {max(values) - min(values):.2f} "
            f"({min(values):.2f}-{max(values):.2f}), runs {', '.join(f'{v:.2f}' for v in values)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="runs of each side, alternated")
    parser.add_argument("--n", type=float, default=4e6, help="records in the file")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    names = {True: "JVM reader (FingerprintLines.java)", False: "corpus.py reader"}
    wall, cpu = {True: [], False: []}, {True: [], False: []}
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "fps.jsonl"
        rnd = random.Random(3)
        with open(path, "w", encoding="utf-8") as f:
            for i in range(int(args.n)):
                f.write(f'{{"id": "d{i}", "simhash": "{rnd.getrandbits(64):016x}"}}\n')
        for run in range(args.runs):
            for jvm in ((True, False) if run % 2 == 0 else (False, True)):
                out = fingerprints_run(path, jvm)
                wall[jvm].append(out["step_s"])
                cpu[jvm].append(out["cpu_s"])
                print(f"run {run + 1} {names[jvm]}: {out['read']} records, step {out['step_s']:.2f} s, "
                      f"process tree {out['cpu_s']:.2f} CPU s in the step", flush=True)
    for jvm in (True, False):
        print(summary(f"{names[jvm]} step", wall[jvm], "s"))
        print(summary(f"{names[jvm]} CPU", cpu[jvm], "s"))


if __name__ == "__main__":
    main()
