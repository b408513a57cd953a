"""The lookup benchmark's results (lookup.py): its rows, the tables of lookups, builds and
growth over N, the log-log plot, and the targets at the largest N."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .common import K, Report, fmt_n, fmt_us

BASELINE = ("dedup-hbase embedded 4-split", "single")


@dataclass
class Row:
    n: int
    system: str
    mode: str  # "single" or "batched"
    lookups: int = 0
    median_us: float | None = None
    p99_us: float | None = None
    candidates: float | None = None
    answers: str = ""
    skipped: str | None = None


@dataclass
class Build:
    n: int
    system: str
    seconds: float | None
    docs_per_s: float | None
    rows_per_s: float | None
    compact_s: float | None
    rows_per_s_with_compaction: float | None
    bytes_per_fp: float | None
    bytes_how: str



def _rate(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def lookup_table(report: Report, rows: list[Row]) -> None:
    base = next((r.median_us for r in rows if (r.system, r.mode) == BASELINE and r.median_us), None)
    table = []
    for r in rows:
        if r.skipped:
            if r.mode == "single" or not r.skipped.startswith("—"):
                table.append([r.system, r.mode, r.skipped, "", "", "", "", ""])
            continue
        ratio = f"{r.median_us / base:.2f}x" if base else "—"
        table.append([r.system, r.mode, f"{r.lookups:,}", fmt_us(r.median_us), fmt_us(r.p99_us), ratio,
                      f"{r.candidates:,.1f}", r.answers])
    report.table(["system", "mode", "lookups timed", "median µs/lookup", "p99 µs", "vs embedded 4-split single",
                  "candidates/lookup", "answers vs brute force"], table, right={2, 3, 4, 5, 6})


def build_table(report: Report, builds: list[Build], batch: int) -> None:
    table = [[b.system, "—" if b.seconds is None else f"{b.seconds:.2f}", _rate(b.docs_per_s), _rate(b.rows_per_s),
              "—" if b.compact_s is None else f"{b.compact_s:.2f}", _rate(b.rows_per_s_with_compaction),
              f"{b.bytes_per_fp:.1f}", b.bytes_how]
             for b in builds]
    report.write(f"Build: `Index.add_many` in batches of {batch:,} documents, then `store.flush()` (the embedded "
                 f"store writes runs and folds them into its per-prefix records at the first read; the "
                 f"build time includes that merge; index rows/s = documents x flags / s); then `store.compact()` "
                 f"(a forced full rewrite at zstd level 9), timed apart; faiss: `add`; simhash: Simhash objects + "
                 f"SimhashIndex.\n")
    report.table(["system", "build s", "docs/s", "index rows/s", "compaction s", "rows/s incl. compaction",
                  "bytes/fingerprint", "measured as"], table, right={1, 2, 3, 4, 5, 6})


def growth_table(report: Report, sizes: list[int], rows: list[Row]) -> None:
    series = _series(rows)
    table = []
    for (system, mode), points in series.items():
        cells = [fmt_us(points.get(n)) for n in sizes]
        measured = sorted(points)
        slope = "—"
        if len(measured) >= 2:
            first, last = measured[0], measured[-1]
            slope = f"{math.log10(points[last] / points[first]) / math.log10(last / first):.2f}"
        table.append([system, mode, *cells, slope])
    report.table(["system", "mode", *[f"N = {fmt_n(n)}" for n in sizes], "growth exponent (µs ∝ N^x)"],
                 table, right=set(range(2, len(sizes) + 3)))


def _series(rows: list[Row]) -> dict[tuple[str, str], dict[int, float]]:
    series: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        if r.median_us is not None:
            series.setdefault((r.system, r.mode), {})[r.n] = r.median_us
    return series


def plot(path: Path, rows: list[Row]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 6.5))
    series = _series(rows)
    colors = {system: f"C{i}" for i, system in enumerate(dict.fromkeys(system for system, _ in series))}
    for (system, mode), points in series.items():
        ns = sorted(points)
        ax.plot(ns, [points[n] for n in ns], color=colors[system], marker="o" if mode == "single" else "s",
                linestyle="-" if mode == "single" else "--", label=f"{system}, {mode}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (indexed fingerprints)")
    ax.set_ylabel("median µs per lookup (batched: total / lookups)")
    ax.set_title(f"Near-duplicate lookup, k = {K}: cost as N grows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- the targets ----------------------------------------------------------------------------------


def targets(report: Report, rows: list[Row], builds: list[Build]) -> list[dict]:
    """The targets, at the largest N where both sides of each were measured."""
    med = {(r.n, r.system, r.mode): r.median_us for r in rows if r.median_us is not None}
    out = []

    def ratio_target(what: str, a: tuple[str, str], b: tuple[str, str], goal: str, ok, describe) -> None:
        common = sorted({n for n, s, m in med if (s, m) == a} & {n for n, s, m in med if (s, m) == b})
        if not common:
            out.append({"target": what, "n": None, "measured": "not measured", "goal": goal, "met": None})
            return
        n = common[-1]
        x, y = med[(n, *a)], med[(n, *b)]
        out.append({"target": what, "n": n, "measured": describe(x, y), "goal": goal, "met": ok(x, y)})

    d4, d5 = "dedup-hbase embedded 4-split", "dedup-hbase embedded 5-split"
    sh, mh = "simhash package SimhashIndex", "faiss IndexBinaryMultiHash(64, 4, 16), nflip 0"
    best = "faiss IndexBinaryMultiHash(64, 2, 32), nflip 1"
    ratio_target("single lookup: embedded 4-split vs simhash SimhashIndex", (d4, "single"), (sh, "single"),
                 ">= 10x faster", lambda x, y: y / x >= 10,
                 lambda x, y: f"{y / x:.1f}x faster ({fmt_us(x)} vs {fmt_us(y)} µs)")
    ratio_target("single lookup: embedded 4-split vs faiss MultiHash (RAM)", (d4, "single"), (mh, "single"),
                 "within 3x", lambda x, y: x / y <= 3,
                 lambda x, y: f"{x / y:.1f}x the time ({fmt_us(x)} vs {fmt_us(y)} µs)")
    ratio_target("single lookup: embedded 4-split vs faiss MultiHash 2x32 nflip 1 (RAM)", (d4, "single"),
                 (best, "single"), "(no target: faiss's best layout)", lambda x, y: None,
                 lambda x, y: f"{x / y:.1f}x the time ({fmt_us(x)} vs {fmt_us(y)} µs)")
    for scheme in (d4, d5):
        ratio_target(f"batched lookup: {scheme.split()[-1]} vs faiss MultiHash batched", (scheme, "batched"),
                     (mh, "batched"), "at or below (<= 1x)", lambda x, y: x <= y,
                     lambda x, y: f"{x / y:.2f}x the time ({fmt_us(x)} vs {fmt_us(y)} µs)")
        ratio_target(f"batched lookup: {scheme.split()[-1]} vs faiss MultiHash 2x32 nflip 1 batched",
                     (scheme, "batched"), (best, "batched"), "(no target: faiss's best layout)", lambda x, y: None,
                     lambda x, y: f"{x / y:.2f}x the time ({fmt_us(x)} vs {fmt_us(y)} µs)")
    for scheme in (d4, d5):
        b = max((b for b in builds if b.system == scheme), key=lambda b: b.n, default=None)
        out.append({"target": f"index writes, {scheme.split()[-1]}", "n": b and b.n,
                    "measured": f"{b.rows_per_s:,.0f} rows/s" if b else "not measured",
                    "goal": ">= 1,000,000 rows/s", "met": b.rows_per_s >= 1e6 if b else None})
    b = max((b for b in builds if b.system == d4), key=lambda b: b.n, default=None)
    out.append({"target": "on disk, 4-split (whole store: index + documents)", "n": b and b.n,
                "measured": f"{b.bytes_per_fp:.1f} bytes/fingerprint" if b else "not measured",
                "goal": "<= 60 bytes/fingerprint", "met": b.bytes_per_fp <= 60 if b else None})
    index_only = b and re.search(r"index table alone ([0-9.]+)", b.bytes_how)
    if index_only:
        value = float(index_only.group(1))
        out.append({"target": "on disk, 4-split (index table alone)", "n": b.n,
                    "measured": f"{value:.1f} bytes/fingerprint", "goal": "<= 60 bytes/fingerprint",
                    "met": value <= 60})
    report.table(["target", "N", "measured", "goal", "status"],
                 [[t["target"], fmt_n(t["n"]) if t["n"] else "—", t["measured"], t["goal"],
                   "—" if t["goal"].startswith("(no target") else "not measured" if t["met"] is None
                   else "**met**" if t["met"] else "**not met**"]
                  for t in out], right={1})
    return out


# -- the run ------------------------------------------------------------------------------------
