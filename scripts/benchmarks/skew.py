"""Skew: many copies of one text, as real corpora hold them (one page under many URLs, empty
templates), through the whole CLI: `load`, `load --groups`, `load --skip-near-dups`, `groups`
on both engines, and `check` of copies against an index holding many copies. Each command runs
as its own process under GNU time: wall time, CPU time (user + sys) and peak memory (max RSS of
the largest process). Every answer is checked (one group of all the copies, one document kept,
the bounded match list with the true count); a wrong one fails the run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from .common import fmt_n, progress

TEXT = ("今天的新闻联播主要内容有：国家主席发表重要讲话，强调要坚持高质量发展。"
        "长江经济带生态环境保护发生了转折性变化，沿江省市共抓大保护，不搞大开发。")


def _timed(args: list[str], cwd: Path) -> tuple[dict, str]:
    """Run ``dedup-hbase ARGS`` under GNU time: its measures and its stdout."""
    result = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "dedup-hbase", *args], cwd=cwd,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"dedup-hbase {' '.join(args)} failed: {result.stderr[-2000:]}")
    wall, user, system, rss_kb = result.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system), "peak_mb": int(rss_kb) / 1024}, result.stdout


def _copies(path: Path, count: int, prefix: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            f.write(json.dumps({"id": f"{prefix}{i}", "text": TEXT}, ensure_ascii=False) + "\n")


def run(report, args) -> None:
    copies, indexed, checked = args.copies, args.indexed_copies, args.checked
    report.section(f"Skew: {fmt_n(copies)} copies of one text")
    work = Path(tempfile.mkdtemp(prefix="dedup-skew-"))
    rows, results = [], {}
    try:
        _copies(work / "copies.jsonl", copies, "c")
        _copies(work / "indexed.jsonl", indexed, "c")
        _copies(work / "checked.jsonl", checked, "q")

        def step(name: str, args: list[str], verify) -> None:
            progress(f"skew: {name}")
            measured, stdout = _timed(args, work)
            problem = verify(stdout)
            if problem:
                report.fail(f"skew, {name}: {problem}")
            results[name] = measured
            rows.append([name, f"{measured['wall_s']:.1f}", f"{measured['cpu_s']:.1f}", f"{measured['peak_mb']:.0f}"])

        def fresh(store: str) -> str:
            subprocess.run(["dedup-hbase", "init", "--store", store], cwd=work, check=True, capture_output=True)
            return store

        def loaded(expected_indexed: int):
            def verify(stdout: str) -> str | None:
                got = json.loads(stdout)["indexed"]
                return None if got == expected_indexed else f"indexed {got}, expected {expected_indexed}"
            return verify

        def one_group(stdout: str) -> str | None:
            sizes = [json.loads(line)["size"] for line in (work / "groups.jsonl").read_text().splitlines()]
            return None if sizes == [copies] else f"groups of sizes {sizes[:5]}, expected one of {copies}"

        step(f"load {fmt_n(copies)} copies", ["load", "copies.jsonl", "--store", fresh("plain"), "--json", "-q"],
             loaded(copies))
        step("load --groups", ["load", "copies.jsonl", "--store", fresh("groups"), "--groups", "groups.jsonl",
                               "--json", "-q"], lambda out: loaded(copies)(out) or one_group(out))
        step("load --skip-near-dups", ["load", "copies.jsonl", "--store", fresh("skip"), "--skip-near-dups",
                                       "--json", "-q"], loaded(1))
        for engine in ("local", "spark"):
            def kept_one(stdout: str) -> str | None:
                summary = json.loads(stdout.strip().splitlines()[-1])
                want = {"documents": copies, "groups": 1, "to_drop": copies - 1}
                got = {key: summary.get(key) for key in want}
                return None if got == want else f"summary {got}, expected {want}"
            step(f"groups --engine {engine}", ["groups", "copies.jsonl", "--out", f"groups-{engine}", "--engine", engine,
                                               "--json"], kept_one)
        subprocess.run(["dedup-hbase", "load", "indexed.jsonl", "--store", fresh("held"), "-q"], cwd=work,
                       check=True, capture_output=True)

        def bounded(stdout: str) -> str | None:
            answers = [json.loads(line) for line in stdout.splitlines()]
            wrong = [a["id"] for a in answers if len(a["matches"]) != 1000 or a.get("match_count") != indexed]
            return None if len(answers) == checked and not wrong else f"{len(wrong)} answers not bounded as expected"

        step(f"check {fmt_n(checked)} copies against {fmt_n(indexed)}",
             ["check", "checked.jsonl", "--store", "held", "--json"], bounded)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.table(["command", "wall s", "CPU s", "peak MB"], rows)
    report.data["skew"] = {"copies": copies, "indexed_copies": indexed, "checked": checked, "results": results}
