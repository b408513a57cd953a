"""Lookups: dedup-hbase's embedded store next to the peers, at growing N.

For every N (--sizes), every system gets the same fingerprints and queries: N random 64-bit
fingerprints of which --planted are near-duplicates of others, and --queries lookups (half
near an indexed fingerprint, half random), k = 3. One system at a time is built, checked
against numpy brute force on --check queries (single and batched paths; a wrong answer fails
the run), timed (single: each call, warm pass, median and p99; batched: one call with all
queries), measured for size, and freed. Systems:

  dedup4, dedup5     dedup-hbase, embedded store, 4-split / 5-split (Index.query, query_many)
  simhash            the simhash package's SimhashIndex (skipped above --simhash-max)
  faiss-multihash    faiss IndexBinaryMultiHash(64, 4, 16), nflip 0, range_search radius 4 (the 4-split's buckets)
  faiss-multihash-2x32  faiss IndexBinaryMultiHash(64, 2, 32), nflip 1: faiss's fastest exact layout for k = 3
  faiss-flat         faiss IndexBinaryFlat, range_search radius 4 (timed on --scan-queries)
  numpy              np.bitwise_count(fps ^ q) <= 3 (timed on --scan-queries)

Then a table and (with --out) a log-log plot of the cost as N grows, and the targets
at the largest N.
"""

from __future__ import annotations

import gc
import math
import re
import shutil
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .common import Data, K, Report, fmt_n, fmt_us, make_data, percentiles, progress
from .systems import SYSTEMS, System, make_systems

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


# -- the measurements -----------------------------------------------------------------------


def time_single(system: System, inputs: list) -> list[float]:
    """µs per call of a second (warm) pass over the queries, one perf_counter_ns pair each."""
    for x in inputs:
        system.query(x)
    samples = []
    for x in inputs:
        started = time.perf_counter_ns()
        system.query(x)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def time_batched(system: System, batch, lookups: int, repeat: int) -> float:
    """µs per lookup of one call over all queries: the median of ``repeat`` warm calls."""
    system.query_batch(batch)
    runs = []
    for _ in range(repeat):
        started = time.perf_counter_ns()
        system.query_batch(batch)
        runs.append((time.perf_counter_ns() - started) / 1000 / lookups)
    return float(np.median(runs))


def check(report: Report, where: str, got: list, truth: list, queries: np.ndarray) -> str:
    """``ok 200/200``, or a loud failure naming the first wrong answer."""
    good = sum(g == t for g, t in zip(got, truth))
    if good == len(truth):
        return f"ok {good}/{len(truth)}"
    first = next(i for i, (g, t) in enumerate(zip(got, truth)) if g != t)
    report.fail(f"{where}: {len(truth) - good} of {len(truth)} answers differ from brute force; first: "
                f"query {int(queries[first]):016x} expected {truth[first]} got {got[first]}")
    return f"**WRONG {good}/{len(truth)}**"


def candidate_counts(scheme_name: str, fps: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Per query, the index keys in the prefixes a lookup scans (one per flag), counted from
    the fingerprints with the scheme's own segment function."""
    from dedup_hbase import Scheme

    scheme = Scheme.parse(scheme_name)
    total = np.zeros(len(qs), dtype=np.int64)
    for flag in range(1, len(scheme.flags) + 1):
        segments = np.sort(scheme.segments(fps, flag))
        wanted = scheme.segments(qs, flag)
        total += np.searchsorted(segments, wanted, "right") - np.searchsorted(segments, wanted, "left")
    return total


def candidate_theory(scheme_name: str, n: int) -> float:
    from dedup_hbase import Scheme

    scheme = Scheme.parse(scheme_name)
    return sum(n / 2 ** scheme.segment_bits(f) for f in range(1, len(scheme.flags) + 1))


def measure(report: Report, system: System, data: Data, truth: list, counts: dict,
            args) -> tuple[list[Row], Build | None]:
    """Build one system, check and time its lookups, measure its size, free it."""
    n = len(data.fps)
    reason = system.skip_reason(n)
    if reason:
        return [Row(n, system.name, "single", skipped=reason)], None
    progress(f"  N={n:,} {system.name}: building ...")
    try:
        build = system.build(data.fps)
        bytes_per_fp, how = system.size(n)  # before lookups: SimhashIndex's dict grows on misses
        gc.collect()
        gc.freeze()  # the index's objects out of the collector's way during the timing
        rows = lookups(report, system, data, truth, counts, args)
        progress(" done\n")
        with_compaction = None
        if build.get("rows_per_s") and build.get("compact_s") is not None:
            with_compaction = n * build["flags"] / (build["seconds"] + build["compact_s"])
        return rows, Build(n, system.name, build["seconds"], build["docs_per_s"], build.get("rows_per_s"),
                           build.get("compact_s"), with_compaction, bytes_per_fp, how)
    finally:
        gc.unfreeze()
        system.close()
        gc.collect()


def lookups(report: Report, system: System, data: Data, truth: list, counts: dict, args) -> list[Row]:
    """The single and batched rows of a built system: answers checked first, then timed."""
    n = len(data.fps)
    qs = data.queries[:args.scan_queries] if system.linear else data.queries
    sample = data.queries[:args.check]
    candidates = float(counts[system.candidates_from][:len(qs)].mean()) if system.candidates_from else float(n)
    progress(" checking ...")
    got = [system.answers(system.query(x), q, data.fps) for x, q in zip(system.inputs(sample), sample.tolist())]
    ok = check(report, f"{system.name}, single, N={n:,}", got, truth, sample)
    progress(" timing ...")
    median, p99 = percentiles(time_single(system, system.inputs(qs)))
    rows = [Row(n, system.name, "single", len(qs), median, p99, candidates, ok)]
    if system.batch_skip:
        return rows + [Row(n, system.name, "batched", skipped=f"— ({system.batch_skip})")]
    got = system.batch_answers(system.query_batch(system.batch_input(sample)), sample, data.fps)
    ok = check(report, f"{system.name}, batched, N={n:,}", got, truth, sample)
    per = time_batched(system, system.batch_input(qs), len(qs), args.repeat)
    return rows + [Row(n, system.name, "batched", len(qs), per, None, candidates, ok)]


# -- the tables -------------------------------------------------------------------------------


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


def bucket_table(report: Report, n: int, counts: dict) -> list[dict]:
    out, table = [], []
    for scheme, formula in (("4", "4N/2^16"), ("5", "14N/2^26")):
        c = counts[scheme]
        entry = {"n": n, "scheme": scheme, "theory": candidate_theory(scheme, n),
                 "random_mean": float(c[1::2].mean()), "all_mean": float(c.mean()),
                 "p99": float(np.percentile(c, 99)), "max": int(c.max())}
        out.append(entry)
        table.append([f"{scheme}-split", f"{formula} = {entry['theory']:,.2f}", f"{entry['random_mean']:,.2f}",
                      f"{entry['all_mean']:,.2f}", f"{entry['p99']:,.0f}", f"{entry['max']:,}"])
    report.table(["scheme", "theory (random query)", "measured, random queries", "measured, all queries",
                  "p99", "max"], table)
    return out


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


def run(report: Report, args) -> None:
    sizes = sorted(args.sizes)
    names = args.systems or list(SYSTEMS)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dedup-bench-"))
    try:
        _run(report, args, sizes, names, workdir)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(report: Report, args, sizes: list[int], names: list[str], workdir: Path) -> None:
    if "faiss-multihash" in names or "faiss-flat" in names:
        import faiss

        faiss.omp_set_num_threads(args.faiss_threads)
    report.section("Lookups")
    report.write(
        f"N fingerprints: uniformly random 64-bit values (numpy, seed {args.seed}), of which "
        f"{args.planted:.0%} are planted near-duplicates of earlier ones (0..3 bits flipped); document i "
        f"is `d{{i}}`. {args.queries:,} queries: half an indexed fingerprint with 0..3 bits flipped (every "
        f"other one a planted copy), half random; k = {K}. Single lookups: one call per query, timed each "
        f"with perf_counter_ns over a second (warm) pass; median and p99. Batched: one call with all the "
        f"queries (`Index.query_many`, what `check` uses; faiss: one `range_search`), total / queries, "
        f"median of {args.repeat} warm calls. Systems that scan all N per lookup (faiss Flat, numpy) are "
        f"timed on the first {args.scan_queries:,} queries. faiss runs on {args.faiss_threads} thread(s), "
        f"like the single-threaded others. Every system's answers (ids and distances) are compared with "
        f"numpy brute force on the first {args.check} queries, single and batched paths. Systems are built "
        f"and measured one at a time, each freed before the next.")
    rows: list[Row] = []
    builds: list[Build] = []
    buckets: list[dict] = []
    for n in sizes:
        r, b, c = one_size(report, n, names, workdir, args)
        rows, builds, buckets = rows + r, builds + b, buckets + c

    report.section("Lookup cost as N grows")
    report.write("Median µs per lookup; the exponent is the slope on a log-log scale between the smallest and "
                 "the largest N (0: flat, 1: linear in N).\n")
    growth_table(report, sizes, rows)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        plot(args.out / "lookup-growth.png", rows)
        report.write(f"Plot: `{args.out / 'lookup-growth.png'}`\n")

    report.section("Targets, at the largest N measured (set for 10^7)")
    met = targets(report, rows, builds)
    report.data["lookup"] = {"sizes": sizes, "queries": args.queries, "check": args.check, "seed": args.seed,
                             "planted": args.planted, "faiss_threads": args.faiss_threads,
                             "rows": [asdict(r) for r in rows], "builds": [asdict(b) for b in builds],
                             "buckets": buckets, "targets": met}


def one_size(report: Report, n: int, names: list[str], workdir: Path, args) -> tuple[list[Row], list[Build], list]:
    """Every system at one N: the data, then each system in turn, then this N's tables."""
    started = time.perf_counter()
    data = make_data(n, args.queries, args.seed, args.planted)
    sample = data.queries[:args.check]
    truth = [data.truth(q) for q in sample.tolist()]
    counts = {s: candidate_counts(s, data.fps, data.queries) for s in ("4", "5")}
    found = [len(t) for t in truth]
    report.write(f"\n### N = {fmt_n(n)} ({n - data.planted:,} random + {data.planted:,} planted)\n")
    report.write(f"Brute-force answers of the {len(truth)} checked queries: {found.count(0)} with none, "
                 f"{found.count(1)} with one, {sum(c > 1 for c in found)} with several "
                 f"({sum(found)} matches in all).\n")
    rows, builds = [], []
    for system in make_systems(names, workdir, args.batch, args.simhash_max):
        try:
            r, b = measure(report, system, data, truth, counts, args)
        except Exception as e:
            traceback.print_exc()
            report.fail(f"{system.name}, N={n:,}: {type(e).__name__}: {e}")
            r, b = [Row(n, system.name, "single", skipped=f"**error**: {type(e).__name__}: {e}")], None
        rows += r
        builds += [b] if b else []
    lookup_table(report, rows)
    build_table(report, builds, args.batch)
    report.write("Candidates per lookup (index keys in the scanned prefixes, counted from the fingerprints; "
                 "SimhashIndex and faiss MultiHash use the same 4 x 16-bit buckets as the 4-split):\n")
    buckets = bucket_table(report, n, counts)
    report.write(f"({time.perf_counter() - started:.0f} s for this N)")
    return rows, builds, buckets
