"""From scanned index cells to matches, once per distinct fingerprint (the skew-proof lookup).

A scan prefix holds one cell per (fingerprint, document); its cells are in key order, so
the copies of one fingerprint are neighbours (a *run*) and, inside a run, ordered by
document id. A lookup compares each query with each run once (50,000 copies of one text:
one XOR, not 50,000), then expands the runs within k bits to their ids, decoded once per
batch and shared by every query that hits them. ``bounded`` takes the first matches by
(distance, id) without sorting them all: a document with a million matches is answered
with ``max_matches`` of them and the true count.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import groupby, islice
from typing import NamedTuple

import numpy as np

from .arrays import ranges
from .stores.base import Cells


class Run(NamedTuple):
    """The documents of one fingerprint within k bits of a query: ``ids`` sorted (shared
    between the queries of a batch: do not change it)."""

    distance: int
    simhash: int
    ids: list[str]


def compare(queries: np.ndarray, scanned: Sequence[Cells], inverse: np.ndarray, k: int) -> list[list[Run]]:
    """Per query (uint64 ``queries``; ``inverse[q, f]``: the index in ``scanned`` of query q's
    prefix of flag f), the runs within ``k`` bits, by (distance, simhash), each fingerprint once."""
    sizes = np.fromiter(map(len, scanned), dtype=np.int64, count=len(scanned))
    if not sizes.any():
        return [[] for _ in range(len(queries))]
    rests = np.concatenate([cells.rests for cells in scanned]).astype(np.uint64, copy=False)
    cell_prefix = np.repeat(np.arange(len(scanned)), sizes)
    new = np.ones(len(rests), dtype=bool)
    new[1:] = (rests[1:] != rests[:-1]) | (cell_prefix[1:] != cell_prefix[:-1])
    run_start = np.flatnonzero(new)
    run_length = np.diff(np.r_[run_start, len(rests)])
    run_value = rests[run_start]
    per_prefix = np.bincount(cell_prefix[run_start], minlength=len(scanned))
    first_run = np.r_[0, np.cumsum(per_prefix)[:-1]]
    cell_offset = np.r_[0, np.cumsum(sizes)[:-1]]
    flat = inverse.ravel()
    counts = per_prefix[flat]
    positions = ranges(first_run[flat], counts)
    owners = np.repeat(np.arange(len(queries)).repeat(inverse.shape[1]), counts)
    distances = np.bitwise_count(run_value[positions] ^ queries[owners])
    hits = np.flatnonzero(distances <= k)
    decoded: dict[int, list[str]] = {}

    def ids_of(run: int) -> list[str]:
        if run not in decoded:
            start = int(run_start[run])
            prefix = int(cell_prefix[start])
            local = start - int(cell_offset[prefix])
            cells = scanned[prefix]
            decoded[run] = [cells.qualifier(i).decode("utf-8") for i in range(local, local + int(run_length[run]))]
        return decoded[run]

    found: list[dict[int, Run]] = [{} for _ in range(len(queries))]
    for owner, run, distance in zip(owners[hits].tolist(), positions[hits].tolist(), distances[hits].tolist()):
        value = int(run_value[run])
        if value not in found[owner]:
            found[owner][value] = Run(distance, value, ids_of(run))
    return [sorted(f.values(), key=lambda r: (r.distance, r.simhash)) for f in found]


def bounded(runs: list[Run], max_matches: int | None) -> tuple[list[tuple[str, int, int]], int]:
    """The matches of one query as (id, simhash, distance) by (distance, id), at most
    ``max_matches`` of them (None: all), and how many there are in all."""
    total = sum(len(r.ids) for r in runs)
    if max_matches is None or total <= max_matches:
        best: dict[str, tuple[str, int, int]] = {}
        for r in runs:  # by distance: an id seen twice (a stale row) keeps its nearest
            for doc_id in r.ids:
                best.setdefault(doc_id, (doc_id, r.simhash, r.distance))
        return sorted(best.values(), key=lambda m: (m[2], m[0])), len(best)
    out: list[tuple[str, int, int]] = []
    for distance, level in groupby(runs, key=lambda r: r.distance):
        level = list(level)
        merged = heapq.merge(*[[(doc_id, r.simhash) for doc_id in r.ids[:max_matches - len(out)]] for r in level])
        out.extend((doc_id, simhash, distance) for doc_id, simhash in islice(merged, max_matches - len(out)))
        if len(out) >= max_matches:
            break
    return out, total
