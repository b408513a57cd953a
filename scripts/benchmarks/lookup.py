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
import shutil
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .common import Data, K, Report, fmt_n, make_data, percentiles, progress
from .lookup_report import Build, Row, build_table, growth_table, lookup_table, plot, targets
from .systems import SYSTEMS, System, make_systems

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
