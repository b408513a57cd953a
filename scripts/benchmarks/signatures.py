"""An index of two signatures (`init --signatures body,lead150`, with and without `--probes 8,1`, and
with `--confirm 14` too) next to the default, in one run.

Per configuration, on the embedded store: `dedup-hbase load` of the shared news corpus repeated to
``--sig-docs`` documents, then `dedup-hbase check --json` of ``--sig-checked`` documents that lost
the second half of their text (the copies a lead signature is for), then `dedup-hbase groups` of
the loaded corpus with those halves (``--signatures`` as the index's; groups has no probes, so the
probed configuration runs none). Each command is timed whole, in its own process (start-up,
fingerprinting, the store); the configurations alternate ``--sig-rounds`` times and the table
gives each run and the ratio of the medians.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Report, progress
from .load import CORPUS, texts, write_corpus

CONFIGS = (("default (body)", []), ("--signatures body,lead150", ["--signatures", "body,lead150"]),
           ("--signatures body,lead150 --probes 8,1", ["--signatures", "body,lead150", "--probes", "8,1"]),
           ("--signatures body,lead150 --probes 8,1 --confirm 14",
            ["--signatures", "body,lead150", "--probes", "8,1", "--confirm", "14"]))


def _cli(*args: str) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dedup_hbase", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"dedup-hbase {' '.join(args[:3])} failed:\n{done.stderr[-2000:]}")
    return done.stdout, time.perf_counter() - started


def run(report: Report, args) -> None:
    report.section("Signatures: `init --signatures body,lead150` next to the default")
    if not CORPUS.exists():
        report.write(f"skipped: the shared corpus {CORPUS} is not there")
        return
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-signatures-"))
    data: dict = {"docs": args.sig_docs, "checked": args.sig_checked, "runs": []}
    try:
        corpus = work / "corpus.jsonl"
        mb = write_corpus(corpus, args.sig_docs)
        halves = work / "halves.jsonl"
        with open(halves, "w", encoding="utf-8") as f:
            for n, record in enumerate(texts(args.sig_checked)):
                text = record["text"]
                f.write(json.dumps({"id": f"half-{n}", "text": text[:len(text) // 2]}, ensure_ascii=False) + "\n")
        rows = []
        for round_ in range(args.sig_rounds):
            for name, init in CONFIGS:
                store = str(work / f"ix-{round_}-{len(init)}")  # each configuration its own folder
                progress(f"  {name}, round {round_ + 1}: load ...\n")
                _cli("init", "--store", store, *init)
                out, load_s = _cli("load", "--store", store, "--json", "-q", str(corpus))
                loaded = json.loads(out)
                progress(f"  {name}, round {round_ + 1}: check ...\n")
                out, check_s = _cli("check", "--store", store, "--json", str(halves))
                answers = [json.loads(line) for line in out.splitlines()]
                found = sum(bool(a["matches"]) for a in answers)
                stats = json.loads(_cli("stats", "--store", store, "--json")[0])
                groups_s, dropped = None, None
                if "--probes" not in init:  # groups has neither probes nor a confirmation
                    progress(f"  {name}, round {round_ + 1}: groups ...\n")
                    out, groups_s = _cli("groups", "--json", "--out", str(work / "groups"), str(corpus), str(halves),
                                         *init)
                    dropped = json.loads(out)["to_drop"]
                run_data = {"config": name, "round": round_ + 1, "load_s": load_s, "docs_per_s": loaded["docs_per_s"],
                            "check_s": check_s, "with_matches": found, "index_cells": stats["index_cells"],
                            "groups_s": groups_s, "groups_to_drop": dropped}
                data["runs"].append(run_data)
                rows.append([name, str(round_ + 1), f"{load_s:.1f}", f"{args.sig_docs / load_s:,.0f}",
                             f"{check_s:.1f}", f"{found:,} of {args.sig_checked:,}", f"{stats['index_cells']:,}",
                             "" if groups_s is None else f"{groups_s:.1f}", "" if dropped is None else f"{dropped:,}"])
                shutil.rmtree(store, ignore_errors=True)
        report.write(f"`dedup-hbase load` of {args.sig_docs:,} documents ({mb:.0f} MB of text, the news corpus "
                     f"repeated), then `check --json` of {args.sig_checked:,} documents cut to their first half; "
                     "embedded store, each command its own process, wall time; `groups` of the corpus and "
                     "the halves together:\n")
        report.table(["index", "round", "load s", "docs/s (whole command)", "check s", "checked with a match",
                      "index cells", "groups s", "groups: to drop"], rows)
        medians = {name: (statistics.median(r["load_s"] for r in data["runs"] if r["config"] == name),
                          statistics.median(r["check_s"] for r in data["runs"] if r["config"] == name))
                   for name, _ in CONFIGS}
        grouped = {name: statistics.median(r["groups_s"] for r in data["runs"] if r["config"] == name)
                   for name, init in CONFIGS if "--probes" not in init}
        (base_load, base_check), *others = medians.values()
        data["ratios"] = {}
        for (name, _), (load_s, check_s) in zip(CONFIGS[1:], others):
            report.write(f"Medians, `{name}` / default: load {load_s / base_load:.2f}x the time, "
                         f"check {check_s / base_check:.2f}x.\n")
            data["ratios"][name] = {"load": load_s / base_load, "check": check_s / base_check}
        (base_groups, *_), signed = list(grouped.values()), CONFIGS[1][0]
        report.write(f"Medians, `groups {signed}` / `groups`: {grouped[signed] / base_groups:.2f}x the time.\n")
        data["ratios"]["groups " + signed] = grouped[signed] / base_groups
    finally:
        shutil.rmtree(work, ignore_errors=True)
        report.data["signatures"] = data
