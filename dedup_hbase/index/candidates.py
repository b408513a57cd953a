"""From scanned index cells to matches, once per distinct fingerprint (the skew-proof lookup).

A scan prefix holds one cell per (fingerprint, document); its cells are in key order, so
the copies of one fingerprint are neighbours (a *run*) and, inside a run, ordered by
document id. A lookup compares each query with each run once (50,000 copies of one text:
one XOR, not 50,000), then expands the runs within k bits to their ids, decoded when read and
once per batch, shared by every query that hits them. ``bounded`` takes the first matches by
(distance, id) without sorting them all: a document with a million matches is answered with
``max_matches`` of them and the true count.

The match count is the number of index entries within k bits of the query: the sizes of its
runs, read without reading their ids. A document is indexed under one fingerprint (a write
retires the old fingerprint's rows before it writes the new), so this is the number of documents;
an id left under two fingerprints (a stale row: two writers of one id that raced, or a write cut
off before its document row and followed by one of another text) is listed once, at its nearest
fingerprint, and counted once per fingerprint it is under. One rule for every path, the Spark
check's included, which sees only the first ``max_matches`` ids of a run and its size.

The compare policy, the one choice of path in a lookup (``plan`` and ``runs``): a lookup of at
most ``FEW_QUERIES`` queries is planned in Python ints, and compared in Python ints
(``compare_few``) while their prefixes hold at most ``FEW_CELLS`` cells; anything bigger is
planned and compared in numpy (``compare``). A service's request is one or a few queries over a
handful of cells, where numpy's fixed cost per call (``compare`` makes about twenty) is most of
the lookup; numpy's cost per cell is far lower, so it takes every big lookup, and the skewed
prefix of a small one (a run of thousands of copies). Both give the same runs, in the same
order, with the same ids (tests/test_candidates.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from itertools import groupby, repeat
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from .arrays import ranges, starts
from .layout import PREFIX_BYTES, Scheme
from .store import Cells

Split = Callable[[bytes], tuple[bytes, int, bytes]]  # a qualifier -> (the id's bytes, the sketch, the kept text)
FEW_QUERIES = 48  # queries up to which a lookup is planned, and may be compared, in Python ints
FEW_CELLS = 1024  # scanned cells up to which those few queries are compared in Python ints


class Ids(Sequence[str]):
    """The document ids of one run of cells, in key order, decoded when read and kept: a run
    of 200,000 copies costs nothing until its ids are asked for (``ids[:2]`` decodes two).
    ``split``: cells whose qualifier also holds the document's sketch (an index with a
    confirmation: ``layout.split_qualifier``), else None (the qualifier is the id)."""

    __slots__ = ("_cells", "_start", "_length", "_decoded", "_split")

    def __init__(self, cells: Cells, start: int, length: int, split: Split | None = None) -> None:
        self._cells, self._start, self._length, self._split = cells, start, length, split
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
            qualifier = self._cells.qualifier(self._start + i)
            self._decoded[i] = (qualifier if self._split is None else self._split(qualifier)[0]).decode("utf-8")
        return self._decoded[i]

    def with_sketches(self) -> Iterator[tuple[int, int, str]]:
        """Every (position, sketch, kept text: "" but for a short one under the short-text rule),
        in order (cells with sketches: ``split`` given); the ids not decoded (``ids[position]``)."""
        for i in range(self._length):
            _, sketch, kept = self._split(self._cells.qualifier(self._start + i))
            yield i, sketch, kept.decode("utf-8") if kept else ""


class Run(NamedTuple):
    """The documents of one fingerprint within k bits of a query: ``ids`` sorted (shared
    between the queries of a batch: do not change it)."""

    distance: int
    simhash: int
    ids: Sequence[str]


def plan(scheme: Scheme, queries: Sequence[int]) -> tuple[list[bytes], Sequence[Sequence[int]]]:
    """The distinct scan prefixes of ``queries`` in key order (each scanned once) and, per
    query, the indexes of its prefixes among them in flag order (an array of shape
    (queries, flags) for many queries, lists for a few: see the module docstring)."""
    if len(queries) <= FEW_QUERIES:
        per_query = [scheme.prefixes(q) for q in queries]
        unique = sorted({p for prefixes in per_query for p in prefixes})
        position = {p: i for i, p in enumerate(unique)}
        return unique, [[position[p] for p in prefixes] for prefixes in per_query]
    unique, inverse = np.unique(scheme.prefix_ids(np.asarray(queries, dtype=np.uint64)), return_inverse=True)
    return [p.to_bytes(PREFIX_BYTES, "big") for p in unique.tolist()], inverse.reshape(len(queries), -1)


def runs(queries: Sequence[int], scanned: Sequence[Cells], inverse: Sequence[Sequence[int]],
         k: int, split: Split | None = None) -> list[list[Run]]:
    """Per query, the runs within ``k`` bits of it by (distance, simhash), each fingerprint once
    (``scanned``, ``inverse``: ``plan``'s prefixes, scanned; ``split``: ``Ids``'): ``compare_few``
    for a few queries over a few cells, else ``compare`` (the module docstring says why)."""
    if len(queries) <= FEW_QUERIES and sum(map(len, scanned)) <= FEW_CELLS:
        return compare_few(queries, scanned, inverse, k, split)
    return compare(np.asarray(queries, dtype=np.uint64), scanned, np.asarray(inverse), k, split)


def compare(queries: np.ndarray, scanned: Sequence[Cells], inverse: np.ndarray, k: int,
            split: Split | None = None) -> list[list[Run]]:
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
    run_length = np.diff(np.concatenate((run_start, [len(rests)])))  # not np.r_ (an index trick per call)
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
            decoded[run] = Ids(scanned[prefix], start - int(cell_offset[prefix]), int(run_length[run]), split)
        return decoded[run]

    found: list[dict[int, Run]] = [{} for _ in range(len(queries))]
    for owner, run, distance in zip(owners[hits].tolist(), positions[hits].tolist(), distances[hits].tolist()):
        value = int(run_value[run])
        if value not in found[owner]:
            found[owner][value] = Run(distance, value, ids_of(run))
    return [sorted(f.values(), key=lambda r: (r.distance, r.simhash)) for f in found]


def compare_few(queries: Sequence[int], scanned: Sequence[Cells], inverse: Sequence[Sequence[int]],
                k: int, split: Split | None = None) -> list[list[Run]]:
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
                        ids = decoded[prefix, start] = Ids(scanned[prefix], start, length, split)
                    found[value] = Run(distance, value, ids)
        out.append(sorted(found.values(), key=lambda r: (r.distance, r.simhash)) if len(found) > 1
                   else list(found.values()))
    return out


def bounded(runs: Sequence[Run], max_matches: int | None) -> tuple[list[tuple[str, int, int]], int]:
    """One query's matches from its runs (by (distance, simhash), ids sorted in each): as (id,
    simhash, distance) by (distance, id), each id once at its nearest fingerprint (of two at
    one distance, the smaller), at most ``max_matches`` of them (None: all); and the match
    count, the entries of ``runs`` (the sum of their sizes). Reads only the ids it lists."""
    found: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    for distance, level in groupby(runs, key=attrgetter("distance")):
        level = list(level)
        if len(level) == 1:
            pairs = zip(level[0].ids, repeat(level[0].simhash))
        else:  # ids in order across the level's runs; of one id, the smaller simhash first
            pairs = heapq.merge(*[zip(r.ids, repeat(r.simhash)) for r in level])
        for doc_id, simhash in pairs:
            if doc_id not in seen:
                seen.add(doc_id)
                found.append((doc_id, simhash, distance))
                if len(found) == max_matches:
                    return found, entries(runs)
    return found, entries(runs)


def entries(runs: Sequence[Run]) -> int:
    """The index entries of ``runs``: one per (fingerprint, id), the sum of the runs' sizes."""
    return sum(len(r.ids) for r in runs)
