"""Scale: the whole commands a user runs, `load --fingerprints`, `check --fingerprints --json` and
`groups --fingerprints`, on the embedded store at growing N, with the growth as exponents.

Per size: seeded synthetic fingerprints with planted structure (``plant``), written once as a
``--fingerprints`` JSON-lines file and reused (cached by size and seed in ``--scale-dir``). For the
scheme ``plan`` picks at that N on the embedded store (``best_scheme``: the lookup costs of index/costs.py) and the
other one of the 4- and 5-split: ``init`` (not timed), ``load`` (wall, CPU of the process tree,
rows/s, peak RSS, bytes per fingerprint on disk as the load leaves it and once compacted),
``check`` of the queries (lookups/s), single lookups through ``serve`` under wrk (scale_serve.py:
requests/s, p50, p99; ``--scale-serve 0``: none) and ``groups`` on the local engine (wall, CPU, peak RSS). Each
command runs in its own process tree under a child subreaper (``measured.measure``): CPU and peak
RSS are the rusage of every descendant. Exactness: sampled check answers against numpy brute force
over all N, and the groups against the union of the planted structure (a wrong answer fails the run).
``--scale-hbase URL``: load and check against an HBase too (scale_hbase.py). The cluster is not
measured here.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import Report, flip_bits, fmt_n, progress
from .groups import cli
from .measured import measure
from .scale_truth import brute_force, candidates_per_lookup, check_answers

K = 3


@dataclass
class Planted:
    """N fingerprints (document i is ``d{i}``) and the structure planted in them."""

    fps: np.ndarray  # uint64, N
    edges: np.ndarray  # (m, 2) document numbers within K bits by construction
    far_pairs: np.ndarray  # (p, 2) pairs at exactly K + 1 bits: near to nothing by construction
    counts: dict


def plant(n: int, seed: int, k: int = K) -> Planted:
    """Uniform random fingerprints, and at disjoint random positions: n / 100 near copies (1..k
    bits, each uniformly) of plain fingerprints; n / 1000 (at least 1) pairs at exactly k bits and
    as many at exactly k + 1; one fingerprint with min(10^5, n / 100) exact copies (10^5 from
    N = 10^7 on, 10^4 at 10^6)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    near, pairs, copies = n // 100, max(1, n // 1000), min(10**5, n // 100)
    if copies + near + 4 * pairs > n // 2:
        raise ValueError(f"N = {n:,} is too small for the planted structure (at least 1,000)")
    order = rng.permutation(n)
    cluster, order = order[:copies], order[copies:]
    copy_at, order = order[:near], order[near:]
    k_a, k_b, order = order[:pairs], order[pairs:2 * pairs], order[2 * pairs:]
    f_a, f_b, plain = order[:pairs], order[pairs:2 * pairs], order[2 * pairs:]
    fps[cluster] = fps[cluster[0]]
    sources = rng.choice(plain, size=near)
    fps[copy_at] = flip_bits(fps[sources], rng.integers(1, k + 1, size=near), rng)
    fps[k_b] = flip_bits(fps[k_a], np.full(pairs, k), rng)
    fps[f_b] = flip_bits(fps[f_a], np.full(pairs, k + 1), rng)
    edges = np.concatenate([np.stack([copy_at, sources], 1), np.stack([k_a, k_b], 1),
                            np.stack([cluster[1:], np.full(copies - 1, cluster[0])], 1)])
    return Planted(fps, edges, np.stack([f_a, f_b], 1),
                   {"near_copies": near, "pairs_at_k": pairs, "pairs_at_k_plus_1": pairs, "cluster": copies})


def make_queries(p: Planted, count: int, seed: int, k: int = K) -> np.ndarray:
    """Even positions: an indexed fingerprint with 0..k bits flipped; odd: uniform random."""
    rng = np.random.default_rng(seed + 1)
    qs = rng.integers(0, 2**64, size=count, dtype=np.uint64)
    near = qs[0::2].size
    qs[0::2] = flip_bits(p.fps[rng.integers(0, p.fps.size, size=near)], rng.integers(0, k + 1, size=near), rng)
    return qs


def write_jsonl(path: Path, values: np.ndarray, prefix: str) -> None:
    """``{"id": "<prefix><i>", "simhash": "<16 hex>"}`` lines, written to a temporary name first."""
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="utf-8") as out:
        for start in range(0, values.size, 100_000):
            chunk = values[start:start + 100_000].tolist()
            out.write("".join(f'{{"id": "{prefix}{start + i}", "simhash": "{v:016x}"}}\n' for i, v in enumerate(chunk)))
    tmp.rename(path)


def components(n_edges: np.ndarray) -> dict[int, int]:
    """Union-find over edges: document number -> root, for the documents in an edge."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in n_edges.tolist():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in list(parent)}


def check_groups(out: Path, p: Planted, k: int = K) -> tuple[str | None, int]:
    """The groups output against the planted structure: every planted component inside one
    group, and a group beyond a planted component only when brute force connects its members
    (chance pairs of random fingerprints). Returns (what differs or None, chance merges)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.ParquetDataset(sorted(str(f) for f in (out / "documents").rglob("*.parquet"))).read(["id", "group"])
    ids = pc.cast(pc.utf8_slice_codeunits(table["id"], 1), "int64").to_numpy()
    group = np.empty(p.fps.size, dtype=np.int64)
    if ids.size != p.fps.size:
        return f"{ids.size:,} documents in the output, {p.fps.size:,} in the input", 0
    group[ids] = pc.dictionary_encode(table["group"]).combine_chunks().indices.to_numpy()  # the group's id -> a number
    roots = components(p.edges)
    members = np.fromiter(roots.keys(), dtype=np.int64, count=len(roots))
    planted = np.fromiter(roots.values(), dtype=np.int64, count=len(roots))
    order = np.argsort(planted, kind="stable")
    members, planted = members[order], planted[order]
    starts = np.flatnonzero(np.r_[True, planted[1:] != planted[:-1]])
    for lo, hi in zip(starts, np.r_[starts[1:], members.size]):
        if np.unique(group[members[lo:hi]]).size != 1:
            return f"a planted group of {hi - lo} (document d{members[lo]}) is split", 0
    # groups larger than the planted component they hold: connected by chance pairs, or wrong
    sizes = np.bincount(np.unique(group, return_inverse=True)[1])
    planted_size = np.zeros(p.fps.size, dtype=np.int64)
    planted_size[members] = np.diff(np.r_[starts, members.size]).repeat(np.diff(np.r_[starts, members.size]))
    planted_size[planted_size == 0] = 1
    labels, inverse = np.unique(group, return_inverse=True)
    biggest = np.zeros(labels.size, dtype=np.int64)
    np.maximum.at(biggest, inverse, planted_size)
    extra = np.flatnonzero(sizes > biggest)
    for g in extra.tolist():
        docs = np.flatnonzero(inverse == g)
        if docs.size > 5000:
            return f"group {labels[g]} of {docs.size:,} is beyond the planted structure and too large to verify", 0
        fps = p.fps[docs]
        near = np.bitwise_count(fps[:, None] ^ fps[None, :]) <= k
        a, b = np.nonzero(np.triu(near, 1))
        roots = components(np.stack([a, b], 1)) if a.size else {}
        if len(roots) != docs.size or len(set(roots.values())) != 1:
            return f"group {labels[g]} ({docs.size} documents, d{docs[0]}) is not connected within {k} bits", 0
    return None, len(extra)


def exponent(a: float, b: float, na: int, nb: int) -> str:
    if a <= 0 or b <= 0:
        return "—"
    return f"{math.log(b / a) / math.log(nb / na):.2f}"


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def compacted_bytes(store: Path) -> int:
    from dedup_hbase import open_store

    s = open_store(str(store))
    try:
        s.compact()
    finally:
        s.close()
    return du(store)


def data_files(folder: Path, n: int, seed: int, queries: int) -> tuple[Path, Path]:
    """The cached input and queries of size n (written once; reused while the files exist)."""
    folder.mkdir(parents=True, exist_ok=True)
    fps, qs = folder / f"fingerprints-{n}-seed{seed}.jsonl", folder / f"queries-{n}-{queries}-seed{seed}.jsonl"
    if not fps.exists() or not qs.exists():
        progress(f"  writing {n:,} fingerprints and {queries:,} queries into {folder} ...")
        p = plant(n, seed)
        if not fps.exists():
            write_jsonl(fps, p.fps, "d")
        if not qs.exists():
            write_jsonl(qs, make_queries(p, queries, seed), "q")
        progress(" done\n")
    return fps, qs


def run_size(report: Report, args, n: int) -> dict:
    from dedup_hbase.index.plan import best_scheme

    dh, folder = cli(args), Path(args.scale_dir).resolve()
    fps_file, queries_file = data_files(folder, n, args.seed, args.scale_queries)
    p = plant(n, args.seed)
    picked = str(best_scheme(K, n).blocks)
    out: dict = {"n": n, "queries": args.scale_queries, "picked": picked, "planted": p.counts, "schemes": {}}
    every = max(1, args.scale_queries // args.scale_sampled)
    queries = make_queries(p, args.scale_queries, args.seed)
    sampled = queries[::every]
    progress(f"  N = {n:,}: brute force of {sampled.size:,} queries over all N ...")
    truth = brute_force(p.fps, sampled, K)
    progress(" done\n")
    schemes = [s for s in (picked, "5" if picked == "4" else "4") if s in (args.scale_schemes or ("4", "5"))]
    if not schemes:
        report.fail(f"--scale-schemes {','.join(args.scale_schemes)}: the schemes are 4 and 5")
    for scheme in schemes:
        work = folder / f"run-{n}-{scheme}"
        shutil.rmtree(work, ignore_errors=True)
        (work / "load").mkdir(parents=True)
        (work / "check").mkdir()
        (work / "groups").mkdir()
        store = work / "store"
        subprocess.run([*dh, "init", "--store", str(store), "--scheme", scheme, "--k", str(K), "--short-texts", "off"],
                       check=True, capture_output=True)
        r: dict = {}
        progress(f"  N = {n:,}, scheme {scheme}: load ...")
        load = measure([*dh, "load", "--store", str(store), "--fingerprints", "--json", "-q", str(fps_file)],
                       work / "load")
        summary = json.loads(load.pop("stdout").strip().splitlines()[-1])
        if summary["indexed"] != n:
            report.fail(f"load of {n:,} (scheme {scheme}): {summary['indexed']:,} indexed")
        r["load"] = {**load, "summary": summary, "bytes_after_load": du(store)}
        r["load"]["bytes_compacted"] = compacted_bytes(store)
        progress(f" {load['wall_s']:.1f} s; check ...")
        check = measure([*dh, "check", "--store", str(store), "--fingerprints", "--json", str(queries_file)],
                        work / "check")
        check.pop("stdout")
        wrong = check_answers(work / "check" / "stdout", truth, every, K)
        if wrong:
            report.fail(f"check at N = {n:,}, scheme {scheme}: {wrong}")
        r["check"] = {**check, "exact": wrong is None, "sampled": len(truth),
                      "candidates": candidates_per_lookup(p.fps, queries, scheme)}
        if args.scale_serve:
            from .scale_serve import run_serve

            progress(f" {check['wall_s']:.1f} s; serve ...")
            r["serve"] = run_serve(args, dh, store, queries_file, every, work / "check",
                                   lambda stdout: check_answers(stdout, truth, every, K))
            if r["serve"]["wrong"] or r["serve"]["errors"]:
                report.fail(f"serve at N = {n:,}, scheme {scheme}: {r['serve']['wrong'] or r['serve']['first_errors']}")
        progress(f" {check['wall_s']:.1f} s; groups ...")
        groups = measure([*dh, "groups", "--fingerprints", "--json", "--scheme", scheme, "--k", str(K),
                          "--out", str(work / "groups" / "out"), str(fps_file)], work / "groups")
        groups["summary"] = json.loads(groups.pop("stdout").strip().splitlines()[-1])
        wrong, chance = check_groups(work / "groups" / "out", p)
        if wrong:
            report.fail(f"groups at N = {n:,}, scheme {scheme}: {wrong}")
        r["groups"] = {**groups, "exact": wrong is None, "chance_merges": chance}
        progress(f" {groups['wall_s']:.1f} s\n")
        for part in r.values():
            if "stderr" in part:
                part["stderr"] = part["stderr"][-1000:]
        if args.scale_hbase:
            from .scale_hbase import run_scheme

            r["hbase"] = run_scheme(args, dh, n, scheme, fps_file, queries_file, work,
                                    lambda stdout: check_answers(stdout, truth, every, K))
            if r["hbase"]["check"]["wrong"]:
                report.fail(f"HBase check at N = {n:,}, scheme {scheme}: {r['hbase']['check']['wrong']}")
        out["schemes"][scheme] = r
        partial = folder / f"results-{n}-seed{args.seed}.json"  # kept as each scheme ends: a long run cut short
        partial.write_text(json.dumps({"scale": {"results": [out]}}, indent=1, default=str) + "\n")
        if not args.scale_keep:
            shutil.rmtree(work, ignore_errors=True)
    return out


FIGURES = [  # (label, function of (n, flags, results of one scheme) -> value, format)
    ("load: wall s", lambda n, f, r: r["load"]["wall_s"], "{:,.1f}"),
    ("load: CPU s (process tree)", lambda n, f, r: r["load"]["cpu_s"], "{:,.1f}"),
    ("load: index rows/s (wall)", lambda n, f, r: n * f / r["load"]["wall_s"], "{:,.0f}"),
    ("load: peak RSS MB (largest process)", lambda n, f, r: r["load"]["max_rss_mb"], "{:,.0f}"),
    ("disk bytes / fingerprint after load", lambda n, f, r: r["load"]["bytes_after_load"] / n, "{:,.1f}"),
    ("disk bytes / fingerprint compacted", lambda n, f, r: r["load"]["bytes_compacted"] / n, "{:,.1f}"),
    ("check: wall s", lambda n, f, r: r["check"]["wall_s"], "{:,.1f}"),
    ("check: CPU s", lambda n, f, r: r["check"]["cpu_s"], "{:,.1f}"),
    ("check: lookups/s (wall, whole command)", lambda n, f, r: r["queries"] / r["check"]["wall_s"], "{:,.0f}"),
    ("check: peak RSS MB", lambda n, f, r: r["check"]["max_rss_mb"], "{:,.0f}"),
    ("check: candidates a lookup (cells read)", lambda n, f, r: r["check"].get("candidates"), "{:,.1f}"),
    ("serve: single lookups/s (wrk)", lambda n, f, r: (r.get("serve") or {}).get("per_s"), "{:,.0f}"),
    ("serve: p50 µs", lambda n, f, r: (r.get("serve") or {}).get("p50_us"), "{:,.0f}"),
    ("serve: p99 µs", lambda n, f, r: (r.get("serve") or {}).get("p99_us"), "{:,.0f}"),
    ("groups: wall s", lambda n, f, r: r["groups"]["wall_s"], "{:,.1f}"),
    ("groups: CPU s", lambda n, f, r: r["groups"]["cpu_s"], "{:,.1f}"),
    ("groups: peak RSS MB (largest process)", lambda n, f, r: r["groups"]["max_rss_mb"], "{:,.0f}"),
    ("HBase load: wall s", lambda n, f, r: _hb(r, "load", "wall_s"), "{:,.1f}"),
    ("HBase load: CPU s (the command)", lambda n, f, r: _hb(r, "load", "cpu_s"), "{:,.1f}"),
    ("HBase load: CPU s (HBase's processes)", lambda n, f, r: _hb(r, "load", "hbase_cpu_s"), "{:,.1f}"),
    ("HBase load: index rows/s (wall)", lambda n, f, r: n * f / _hb(r, "load", "wall_s") if _hb(r, "load") else None,
     "{:,.0f}"),
    ("HBase check: lookups/s (wall, whole command)",
     lambda n, f, r: r["queries"] / _hb(r, "check", "wall_s") if _hb(r, "check") else None, "{:,.0f}"),
    ("HBase disk bytes / fingerprint compacted", lambda n, f, r: (r.get("hbase") or {}).get("bytes_compacted", 0) / n
     or None, "{:,.1f}"),
]


def _hb(r: dict, part: str, figure: str | None = None):
    """A figure of the HBase leg (scale_hbase.py), None where it did not run."""
    found = (r.get("hbase") or {}).get(part)
    return found if figure is None or found is None else found.get(figure)


def table(report: Report, results: list[dict], queries: int) -> None:
    sizes = [res["n"] for res in results]
    header = ["figure", "scheme", *(f"N = {fmt_n(n)}" for n in sizes)]
    header += [f"N^x {fmt_n(a)}→{fmt_n(b)}" for a, b in zip(sizes, sizes[1:])]
    rows = []
    for label, value, fmt in FIGURES:
        for scheme in ("4", "5"):
            values = []
            for res in results:
                r = res["schemes"].get(scheme)
                r = {**r, "queries": res.get("queries", queries)} if r else None  # older results: this run's count
                values.append(value(res["n"], 4 if scheme == "4" else 10, r) if r else None)
            cells = [(fmt.format(v) + (" *" if res["picked"] == scheme else "")) if v is not None else "—"
                     for v, res in zip(values, results)]
            growth = [exponent(a, b, na, nb) if a is not None and b is not None else "—"
                      for a, b, na, nb in zip(values, values[1:], sizes, sizes[1:])]
            rows.append([label, scheme, *cells, *growth])
    report.table(header, rows)


def run(report: Report, args) -> None:
    report.section("Scale: load, check and groups as N grows (embedded store)")
    results = []
    for path in args.scale_from or []:  # earlier runs' sizes, measured then (their results.json)
        try:
            earlier = json.loads(Path(path).read_text(encoding="utf-8"))["scale"]["results"]
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"--scale-from {path}: not the results.json of a scale run ({e})") from None
        results += [r for r in earlier if r["n"] not in args.sizes]
        report.write(f"Sizes {', '.join(fmt_n(r['n']) for r in earlier)} from the earlier run {path} (its bench.md "
                     "has its command, commit and load).\n")
    for n in args.sizes:
        results.append(run_size(report, args, n))
    results.sort(key=lambda r: r["n"])
    r0 = results[0]
    report.write(f"Seed {args.seed}; per N: N/100 near copies (1..{K} bits), N/1000 pairs at exactly {K} and as many "
                 f"at {K + 1} bits, one fingerprint with min(10^5, N/100) copies; {args.scale_queries:,} check "
                 f"queries, half near an indexed fingerprint. * = the scheme plan's cost model picks at that N. "
                 f"Each figure is one run of the whole command (its own process tree, `nice` as the caller's); "
                 f"N^x is the growth between sizes (cost ∝ N^x). Planted at N = {fmt_n(r0['n'])}: {r0['planted']}.\n")
    table(report, results, args.scale_queries)
    lines = []
    for res in results:
        for scheme, r in res["schemes"].items():
            hbase = f"; on HBase: {r['hbase']['check']['wrong'] is None}" if r.get("hbase") else ""
            hbase += f"; through serve: {r['serve']['wrong'] is None}" if r.get("serve") else ""
            lines.append(f"- N = {fmt_n(res['n'])}, scheme {scheme}: check exact on {r['check']['sampled']:,} sampled "
                         f"answers: {r['check']['exact']}{hbase}; groups equal to the planted structure: "
                         f"{r['groups']['exact']} ({r['groups']['summary']['multi_groups']:,} groups of 2 or more, "
                         f"{r['groups']['chance_merges']} joined by chance pairs, verified by brute force)")
    report.write("Exactness:\n\n" + "\n".join(lines) + "\n")
    report.data["scale"] = {"results": results, "load_average_end": os.getloadavg()[0]}
