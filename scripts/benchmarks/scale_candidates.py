"""The cells a lookup reads, counted: what index/costs.py fits a store's cost per candidate to.

A lookup of scheme S reads, for each of its flags, every index row whose scan prefix (segment and
flag) equals the query's: the candidates, before the XOR filter. Counted here exactly, on the
index's own fingerprints and the run's own queries (the planted copies included: a query near the
fingerprint with 10^5 copies reads them in every flag whose blocks it shares), with numpy: per flag,
the indexed segments sorted once, each query's equal range found by binary search.

    python -m scripts.benchmarks.scale_candidates --sizes 1e6,1e7 --seed 7   (the scale bench's data)
"""

from __future__ import annotations

import argparse

import numpy as np


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
