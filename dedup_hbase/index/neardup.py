"""Near-duplicates inside a set of fingerprints, the batch way: every pair within k bits.

Within a batch, the same pigeonhole argument as the index applies (layout.py): two
fingerprints within k bits agree on the blocks of at least one flag. So, per flag,
sort by that flag's segment and compare only fingerprints with equal segments; no
lookup per document. A pair is reported under the first flag whose segments it shares,
so each pair once, exactly the pairs brute force (all pairs by XOR) finds.

Skew: identical fingerprints collapse before any comparison. The search runs on the
distinct fingerprints; n copies of one become n - 1 edges (each copy to the first), never
n²/2 pairs. Equal-segment runs of up to ``_BLOCK`` distinct fingerprints are compared
all at once by offset (vectorised); longer runs tile by tile, ``_BLOCK`` x ``_BLOCK``,
so memory stays bounded whatever a bucket holds.

Against what is already indexed, a load uses ``Index.query_runs``; groups.py turns the
pairs into groups.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .layout import SEGMENT_BITS, Scheme
from .parts import distinct, give_back, parts_of

_BLOCK = 1024  # distinct fingerprints of a run compared at once (tiles of _BLOCK x _BLOCK)


@dataclass(frozen=True)
class NearPairs:
    """The near-duplicate structure of a sequence of fingerprints (positions 0..n-1).

    ``unique``: the distinct fingerprints, ascending; ``first``: the position of each
    one's first copy; ``inverse``: position -> its distinct fingerprint; ``pairs``: (m, 2)
    indices into ``unique``, a < b, every pair of distinct fingerprints within k bits once."""

    unique: np.ndarray
    first: np.ndarray
    inverse: np.ndarray
    pairs: np.ndarray

    def edges(self) -> np.ndarray:
        """(e, 2) positions, i < j, spanning the same components as all pairs within k bits:
        each copy to its fingerprint's first copy, and the first copies of near pairs."""
        n = len(self.inverse)
        copies = np.flatnonzero(self.first[self.inverse] != np.arange(n))
        near = np.sort(self.first[self.pairs], axis=1) if len(self.pairs) else np.empty((0, 2), np.int64)
        return np.concatenate([np.stack([self.first[self.inverse[copies]], copies], axis=1), near]).astype(np.int64)

    def earliest_earlier(self) -> np.ndarray:
        """Per position j: the earliest position i < j within k bits of it, or -1."""
        n, u = len(self.inverse), len(self.unique)
        big = np.int64(n)
        nearest = np.full(u, big, dtype=np.int64)  # the earliest first copy of a near fingerprint
        if len(self.pairs):
            np.minimum.at(nearest, self.pairs[:, 0], self.first[self.pairs[:, 1]])
            np.minimum.at(nearest, self.pairs[:, 1], self.first[self.pairs[:, 0]])
        positions = np.arange(n)
        own = self.first[self.inverse]
        best = np.minimum(np.where(own < positions, own, big), nearest[self.inverse])
        return np.where(best < positions, best, -1)

    def earlier_of(self, j: int) -> list[int]:
        """Every position i < j within k bits of position j, ascending (for the rare
        caller that needs them all, e.g. when the earliest has j's own id)."""
        u = int(self.inverse[j])
        near = set(self.pairs[self.pairs[:, 0] == u, 1].tolist()) | set(self.pairs[self.pairs[:, 1] == u, 0].tolist())
        near.add(u)
        mask = np.isin(self.inverse[:j], np.fromiter(near, dtype=np.int64))
        return np.flatnonzero(mask).tolist()


def near_pairs(simhashes: np.ndarray, scheme: Scheme, k: int) -> NearPairs:
    """The near-duplicate structure (``NearPairs``) of ``simhashes`` (uint64) within ``k`` bits."""
    scheme.check_k(k)
    return _paired(*distinct([np.asarray(simhashes, dtype=np.uint64)]), scheme, k)


def near_pairs_of_batches(batches: list[np.ndarray], scheme: Scheme, k: int) -> NearPairs:
    """``near_pairs`` of the uint64 arrays ``batches`` taken as one, in order, for a search over
    a whole corpus: the list is emptied as it is read, and the memory of the batches and of
    their sort is given back (``parts.give_back``) before the pair search's comes (at 10^8
    fingerprints 800 MB and more)."""
    scheme.check_k(k)
    unique, first, inverse = distinct(batches)
    give_back()
    return _paired(unique, first, inverse, scheme, k)


def _paired(unique: np.ndarray, first: np.ndarray, inverse: np.ndarray, scheme: Scheme, k: int) -> NearPairs:
    found = list(distinct_pairs(unique, scheme, k))
    pairs = np.concatenate(found) if found else np.empty((0, 2), dtype=np.int64)
    return NearPairs(unique, first, inverse, pairs)


def distinct_pairs(unique: np.ndarray, scheme: Scheme, k: int, parts: int | None = None) -> Iterator[np.ndarray]:
    """Every pair (a, b), a < b, of positions of ``unique`` (distinct uint64 fingerprints)
    within ``k`` bits, once each, as (m, 2) int64 arrays, flag by flag (each flag's search in
    ``parts`` parts, by default ``parts_of``, by its segment's top bits: a pair shares its
    segment, so its part)."""
    n = len(unique)
    if n < 2:
        return
    parts = parts_of(n) if parts is None else parts
    shift = np.uint32(SEGMENT_BITS - parts.bit_length() + 1)
    for flag in range(1, len(scheme.flags) + 1):
        segments = _segments(unique, scheme, flag)
        part_of = (segments >> shift).astype(np.uint16) if parts > 1 else None
        found = []
        for part in range(parts):
            members = np.flatnonzero(part_of == part) if parts > 1 else None  # None: all of them
            mine = segments if members is None else segments[members]
            ordering = np.argsort(mine, kind="stable")
            order, ordered = ordering if members is None else members[ordering], mine[ordering]
            del mine, ordering
            found.append(_in_runs(unique, order, ordered, k))
        del segments, part_of
        pairs = first_shared(unique, np.concatenate(found), scheme, flag)
        if len(pairs):
            yield pairs


def flag_pairs(fingerprints: np.ndarray, scheme: Scheme, flag: int, k: int) -> np.ndarray:
    """The pairs ``distinct_pairs`` finds under ``flag`` alone: (m, 2) int64 positions a < b of
    ``fingerprints`` (distinct uint64) within ``k`` bits that share ``flag``'s segment and no
    earlier flag's. With a fingerprint, ``fingerprints`` must hold every other one that shares
    its segment of ``flag`` (the Spark engine's partitions by a block of the segment:
    jobs/spark/pairs.py); memory is theirs, unparted."""
    segments = _segments(fingerprints, scheme, flag)
    order = np.argsort(segments, kind="stable")
    return first_shared(fingerprints, _in_runs(fingerprints, order, segments[order], k), scheme, flag)


def first_shared(unique: np.ndarray, pairs: np.ndarray, scheme: Scheme, flag: int) -> np.ndarray:
    """``pairs`` (positions of ``unique``, found under ``flag``) less those that share an earlier
    flag's segment: each pair is kept under the first flag whose segments it shares."""
    if flag == 1 or not len(pairs):
        return pairs
    a, b = unique[pairs[:, 0]], unique[pairs[:, 1]]
    seen = np.zeros(len(pairs), dtype=bool)
    for earlier in range(1, flag):
        seen |= scheme.segments(a, earlier) == scheme.segments(b, earlier)
    return pairs[~seen]


def _in_runs(unique: np.ndarray, order: np.ndarray, ordered: np.ndarray, k: int) -> np.ndarray:
    """Pairs within ``k`` bits among the positions ``order`` of ``unique`` whose segments,
    ``ordered``, are sorted: inside each run of equal segments, short runs at once by offset,
    long ones tile by tile."""
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else order[:0]
    lengths = np.diff(np.r_[starts, len(ordered)])
    small = (lengths > 1) & (lengths <= _BLOCK)
    found = [_by_offset(unique, order, starts[small], lengths[small], k)]
    for start, length in zip(starts[lengths > _BLOCK].tolist(), lengths[lengths > _BLOCK].tolist()):
        found.extend(_by_tiles(unique, order[start:start + length], k))
    return np.concatenate(found)


def _segments(unique: np.ndarray, scheme: Scheme, flag: int, step: int = 1 << 20) -> np.ndarray:
    """``scheme.segments`` of ``unique`` as uint32 (a segment is SEGMENT_BITS wide), made
    ``step`` values at a time: the shifts' temporaries are a step's, not the whole's."""
    if len(unique) <= step:
        return scheme.segments(unique, flag).astype(np.uint32)
    out = np.empty(len(unique), np.uint32)
    for start in range(0, len(unique), step):
        out[start:start + step] = scheme.segments(unique[start:start + step], flag)
    return out


def _by_offset(unique: np.ndarray, order: np.ndarray, starts: np.ndarray, lengths: np.ndarray, k: int) -> np.ndarray:
    """Pairs within k bits inside short runs of ``order`` (run i: ``starts[i]``, ``lengths[i]``
    long), compared at offsets 1, 2, ... of the sorted order, all runs at once."""
    at = np.repeat(starts, lengths) + _within(lengths)
    end = np.repeat(starts + lengths, lengths)
    found = []
    for offset in range(1, int(lengths.max(initial=1))):
        alive = at + offset < end
        at, end = at[alive], end[alive]
        if not len(at):
            break
        a, b = order[at], order[at + offset]
        close = np.bitwise_count(unique[a] ^ unique[b]) <= k
        found.append(np.stack([np.minimum(a[close], b[close]), np.maximum(a[close], b[close])], axis=1))
    return np.concatenate(found).astype(np.int64) if found else np.empty((0, 2), dtype=np.int64)


def _within(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., length - 1 for every length, concatenated."""
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _by_tiles(unique: np.ndarray, members: np.ndarray, k: int) -> Iterator[np.ndarray]:
    """Pairs within k bits among ``members`` (a long run), tile by tile: bounded memory."""
    for a in range(0, len(members), _BLOCK):
        left = members[a:a + _BLOCK]
        for b in range(a, len(members), _BLOCK):
            right = members[b:b + _BLOCK]
            close = np.bitwise_count(unique[left][:, None] ^ unique[right][None, :]) <= k
            if a == b:
                close = np.triu(close, 1)
            ii, jj = np.nonzero(close)
            if len(ii):
                x, y = left[ii], right[jj]
                yield np.stack([np.minimum(x, y), np.maximum(x, y)], axis=1).astype(np.int64)


def batch_pairs(simhashes: np.ndarray, scheme: Scheme, k: int) -> set[tuple[int, int]]:
    """Every pair of positions ``(i, j)``, ``i < j``, whose fingerprints differ in at most
    ``k`` bits. Quadratic in the copies of one fingerprint: for tests and small batches."""
    found = near_pairs(simhashes, scheme, k)
    members: dict[int, list[int]] = {}
    for position, u in enumerate(found.inverse.tolist()):
        members.setdefault(u, []).append(position)
    pairs = {(x, y) for group in members.values() for i, x in enumerate(group) for y in group[i + 1:]}
    for a, b in found.pairs.tolist():
        pairs.update((min(x, y), max(x, y)) for x in members[a] for y in members[b])
    return pairs


def earlier_matches(simhashes: np.ndarray, scheme: Scheme, k: int) -> dict[int, list[tuple[int, int]]]:
    """Position ``j`` -> ``[(i, distance), ...]``: every earlier position ``i < j`` of the batch
    whose fingerprint is within ``k`` bits of ``simhashes[j]``, ``i`` ascending. Positions
    with no earlier near-duplicate are absent. Quadratic in copies: for bounded batches
    (a service request)."""
    out: dict[int, list[tuple[int, int]]] = {}
    if len(simhashes) < 2:  # no earlier position (a one-document request: the common case)
        return out
    for i, j in sorted(batch_pairs(simhashes, scheme, k), key=lambda p: (p[1], p[0])):
        out.setdefault(j, []).append((i, (int(simhashes[i]) ^ int(simhashes[j])).bit_count()))
    return out
