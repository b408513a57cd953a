"""From scanned index cells to matches, once per distinct fingerprint (the skew-proof lookup).

A scan prefix holds one cell per (fingerprint, document); its cells are in key order, so
the copies of one fingerprint are neighbours (a *run*) and, inside a run, ordered by
document id. A lookup compares each query with each run once (50,000 copies of one text:
one XOR, not 50,000), then expands the runs within k bits to their ids, decoded when read and once per
batch and shared by every query that hits them. ``bounded`` takes the first matches by
(distance, id) without sorting them all: a document with a million matches is answered
with ``max_matches`` of them and the true count.

``counted_few`` is a few queries' answer in one call: ``compare_few`` (or ``compare`` over
many cells) then ``bounded``, or the compiled core's twin of both (native/src/packed.rs)
when every prefix's cells come as one of the embedded store's records (``Cells.packed_record``).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence
from itertools import groupby, islice
from typing import NamedTuple

import numpy as np

from ..text import native
from .arrays import ranges, starts
from .store import Cells

FEW_CELLS = 1024  # scanned cells up to which a few queries are compared in Python ints (compare_few)


class Ids(Sequence[str]):
    """The document ids of one run of cells, in key order, decoded when read and kept: a run
    of 200,000 copies costs nothing until its ids are asked for (``ids[:2]`` decodes two)."""

    __slots__ = ("_cells", "_start", "_length", "_decoded")

    def __init__(self, cells: Cells, start: int, length: int) -> None:
        self._cells, self._start, self._length = cells, start, length
        self._decoded: dict[int, str] = {}

    def __len__(self) -> int:
        return self._length

    def __iter__(self):  # Sequence's own iterates by indexing until IndexError: an exception per run
        return map(self._one, range(self._length))

    def __getitem__(self, i):  # type: ignore[override]  # int or slice, as a list
        if isinstance(i, slice):
            return [self._one(j) for j in range(*i.indices(self._length))]
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(i)
        return self._one(i)

    def _one(self, i: int) -> str:
        if i not in self._decoded:
            self._decoded[i] = self._cells.qualifier(self._start + i).decode("utf-8")
        return self._decoded[i]


class Run(NamedTuple):
    """The documents of one fingerprint within k bits of a query: ``ids`` sorted (shared
    between the queries of a batch: do not change it)."""

    distance: int
    simhash: int
    ids: Sequence[str]


def compare(queries: np.ndarray, scanned: Sequence[Cells], inverse: np.ndarray, k: int) -> list[list[Run]]:
    """Per query (uint64 ``queries``; ``inverse[q, f]``: the index in ``scanned`` of query q's
    prefix of flag f), the runs within ``k`` bits, by (distance, simhash), each fingerprint once."""
    sizes = np.fromiter(map(len, scanned), dtype=np.int64, count=len(scanned))
    if not sizes.any():
        return [[] for _ in range(len(queries))]
    rests = all_rests(scanned)
    cell_prefix = np.repeat(np.arange(len(scanned)), sizes)
    new = np.ones(len(rests), dtype=bool)
    new[1:] = (rests[1:] != rests[:-1]) | (cell_prefix[1:] != cell_prefix[:-1])
    run_start = np.flatnonzero(new)
    run_length = np.diff(np.concatenate((run_start, [len(rests)])))  # not np.r_: about 5 µs a call
    run_value = rests[run_start]
    per_prefix = np.bincount(cell_prefix[run_start], minlength=len(scanned))
    first_run = starts(per_prefix)
    cell_offset = starts(sizes)
    flat = inverse.ravel()
    counts = per_prefix[flat]
    positions = ranges(first_run[flat], counts)
    owners = np.repeat(np.arange(len(queries)).repeat(inverse.shape[1]), counts)
    distances = np.bitwise_count(run_value[positions] ^ queries[owners])
    hits = np.flatnonzero(distances <= k)
    decoded: dict[int, Ids] = {}

    def ids_of(run: int) -> Ids:
        if run not in decoded:
            start = int(run_start[run])
            prefix = int(cell_prefix[start])
            decoded[run] = Ids(scanned[prefix], start - int(cell_offset[prefix]), int(run_length[run]))
        return decoded[run]

    found: list[dict[int, Run]] = [{} for _ in range(len(queries))]
    for owner, run, distance in zip(owners[hits].tolist(), positions[hits].tolist(), distances[hits].tolist()):
        value = int(run_value[run])
        if value not in found[owner]:
            found[owner][value] = Run(distance, value, ids_of(run))
    return [sorted(f.values(), key=lambda r: (r.distance, r.simhash)) for f in found]


def compare_few(queries: Sequence[int], scanned: Sequence[Cells], inverse: Sequence[Sequence[int]],
                k: int) -> list[list[Run]]:
    """``compare`` in Python ints, for a few queries over a few cells (a service's request:
    numpy's cost per call is most of ``compare``'s there). The same answers: per query the
    runs within ``k`` bits by (distance, simhash), a fingerprint under several of its prefixes
    taken from the first (``inverse[q]``: query q's prefixes in flag order, as indexes in
    ``scanned``), ids shared by the queries that hit the same run."""
    runs_of: list = [None] * len(scanned)  # prefix -> its runs (value, start, length)
    decoded: dict[tuple[int, int], Ids] = {}
    out = []
    for query, prefixes in zip(queries, inverse):
        found: dict[int, Run] = {}
        for prefix in prefixes:
            runs = runs_of[prefix]
            if runs is None:
                runs = runs_of[prefix] = scanned[prefix].runs()
            for value, start, length in runs:
                if value in found:  # under an earlier prefix of this query
                    continue
                distance = (value ^ query).bit_count()
                if distance <= k:
                    ids = decoded.get((prefix, start))
                    if ids is None:
                        ids = decoded[prefix, start] = Ids(scanned[prefix], start, length)
                    found[value] = Run(distance, value, ids)
        out.append(sorted(found.values(), key=lambda r: (r.distance, r.simhash)) if len(found) > 1
                   else list(found.values()))
    return out


def runs_few(queries: Sequence[int], scanned: Sequence[Cells], inverse: Sequence[Sequence[int]],
             k: int) -> list[list[Run]]:
    """``compare_few``, or numpy's ``compare`` when the prefixes hold more than ``FEW_CELLS`` cells."""
    if sum(map(len, scanned)) <= FEW_CELLS:
        return compare_few(queries, scanned, inverse, k)
    return compare(np.asarray(queries, dtype=np.uint64), scanned, np.array(inverse), k)


def counted_few(queries: Sequence[int], scanned: Sequence[Cells], inverse: Sequence[Sequence[int]], k: int,
                max_matches: int | None) -> list[tuple[list[tuple[str, int, int]], int]]:
    """Per query, ``bounded(runs, max_matches)`` of its ``runs_few``: its matches as (id,
    simhash, distance) by (distance, id) and their count. By the compiled core when it is
    usable and every prefix's cells have a ``packed_record`` (the same answers, compared on
    random records in tests/test_candidates.py), else in Python. Every query has as many
    prefixes (``inverse[q]``); the core does not take the TTL into account (nor does this)."""
    counted = native.packed_counted()
    if counted is not None and queries:
        records = [cells.packed_record() for cells in scanned]
        if None not in records:
            found = counted(records, queries, [i for prefixes in inverse for i in prefixes], k, max_matches)
            if found is not None:  # None: a record or an id the reference must read (and may refuse)
                return found
    return [bounded(runs, max_matches) for runs in runs_few(queries, scanned, inverse, k)]


def bounded(runs: list[Run], max_matches: int | None) -> tuple[list[tuple[str, int, int]], int]:
    """The matches of one query as (id, simhash, distance) by (distance, id), at most
    ``max_matches`` of them (None: all), and how many there are in all."""
    if not runs:
        return [], 0
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


def all_rests(scanned: Sequence[Cells]) -> np.ndarray:
    """The ``rests`` of several ``Cells`` as one uint64 array."""
    return np.concatenate([cells.rests for cells in scanned]).astype(np.uint64, copy=False)


def qualifier_at(scanned: Sequence[Cells], ends: list[int], i: int) -> bytes:
    """The qualifier of cell ``i`` of ``scanned`` taken as one sequence (``ends``: the
    cumulative sizes of its parts)."""
    j = bisect_right(ends, i)
    return scanned[j].qualifier(i - (ends[j - 1] if j else 0))
