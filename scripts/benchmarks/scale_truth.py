"""What the scale bench's runs are measured against: the brute force of the answers, and the cells
a lookup reads, counted (what index/costs.py fits a store's cost per candidate to).

``brute_force``: every fingerprint within k bits of each query, by XOR and popcount over all N;
``check_answers``: a check's JSON lines against it. ``candidates_per_lookup``: a lookup of scheme S
reads, for each of its flags, every index row whose scan prefix (segment and flag) equals the
query's: the candidates, before the XOR filter. Counted here exactly, on the
index's own fingerprints and the run's own queries (the planted copies included: a query near the
fingerprint with 10^5 copies reads them in every flag whose blocks it shares), with numpy: per flag,
the indexed segments sorted once, each query's equal range found by binary search.

    python -m scripts.benchmarks.scale_truth --sizes 1e6,1e7 --seed 7   (the scale bench's data)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def brute_force(fps: np.ndarray, queries: np.ndarray, k: int) -> list[dict[int, int]]:
    """For each query, {document number: distance} of every fingerprint within k bits, by
    vectorised XOR + popcount over all of ``fps`` (chunks of 2^16 x 64 queries, into reused buffers)."""
    found: list[dict[int, int]] = [{} for _ in queries]
    step, block = 1 << 16, 64
    xor = np.empty((block, step), dtype=np.uint64)
    bits = np.empty((block, step), dtype=np.uint8)
    near = np.empty((block, step), dtype=bool)
    for start in range(0, fps.size, step):
        chunk = fps[start:start + step]
        for q0 in range(0, queries.size, block):
            q = queries[q0:q0 + block, None]
            x, b, m = xor[:q.shape[0], :chunk.size], bits[:q.shape[0], :chunk.size], near[:q.shape[0], :chunk.size]
            np.bitwise_xor(chunk[None, :], q, out=x)
            np.bitwise_count(x, out=b)
            np.less_equal(b, k, out=m)
            rows, cols = np.nonzero(m)
            for r, c in zip(rows.tolist(), cols.tolist()):
                found[q0 + r][start + c] = int(b[r, c])
    return found


def check_answers(stdout: Path, truth: list[dict[int, int]], every: int, k: int, max_matches: int = 1000) -> str | None:
    """The check's JSON lines against brute force for queries q0, q<every>, ...: the count equal,
    and the listed matches the true ones (all of them, or the nearest ``max_matches``)."""
    checked = 0
    with open(stdout, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("{"):
                continue
            answer = json.loads(line)
            q = int(answer["id"][1:])
            if q % every:
                continue
            want = truth[q // every]
            got = {int(m["id"][1:]): m["distance"] for m in answer["matches"]}
            count = answer.get("match_count", len(got))
            if count != len(want):
                return f"query {answer['id']}: {count} matches, brute force {len(want)}"
            if any(want.get(i) != d for i, d in got.items()):
                return f"query {answer['id']}: a listed match is not within {k} bits at that distance"
            if len(got) != min(len(want), max_matches) or (
                    len(got) < len(want) and max(got.values()) > min(d for i, d in want.items() if i not in got)):
                return f"query {answer['id']}: not the nearest {len(got)} of {len(want)}"
            checked += 1
    if checked != len(truth):
        return f"{checked} sampled answers in the output, {len(truth)} expected"
    return None


def candidates_per_lookup(fps: np.ndarray, queries: np.ndarray, scheme: str) -> float:
    """The mean number of index rows a lookup of each of ``queries`` reads in an index of ``fps``
    (uint64 arrays) made with ``scheme`` ("4", "5", ...)."""
    from dedup_hbase.index.layout import Scheme

    s = Scheme.parse(scheme)
    total = 0
    for flag in range(1, len(s.flags) + 1):
        indexed = np.sort(s.segments(fps, flag))
        asked = s.segments(queries, flag)
        total += int((np.searchsorted(indexed, asked, "right") - np.searchsorted(indexed, asked, "left")).sum())
    return total / len(queries)


def main() -> None:
    from .scale import K, make_queries, plant

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=100_000)
    args = parser.parse_args()
    for n in (int(float(x)) for x in args.sizes.split(",")):
        p = plant(n, args.seed, K)
        queries = make_queries(p, args.queries, args.seed)
        print(n, {scheme: round(candidates_per_lookup(p.fps, queries, scheme), 1) for scheme in ("4", "5")}, flush=True)


if __name__ == "__main__":
    main()
