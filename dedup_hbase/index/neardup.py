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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .arrays import ranges
from .confirm import CONFIRMED_BEYOND, sketches_agree
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
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else order[:0]
            lengths = np.diff(np.r_[starts, len(ordered)])
            small = (lengths > 1) & (lengths <= _BLOCK)
            found.append(_by_offset(unique, order, starts[small], lengths[small], k))
            for start, length in zip(starts[lengths > _BLOCK].tolist(), lengths[lengths > _BLOCK].tolist()):
                found.extend(_by_tiles(unique, order[start:start + length], k))
        del segments, part_of
        pairs = np.concatenate(found)
        if flag > 1 and len(pairs):  # a pair sharing an earlier flag's segment was found there
            a, b = unique[pairs[:, 0]], unique[pairs[:, 1]]
            seen = np.zeros(len(pairs), dtype=bool)
            for earlier in range(1, flag):
                seen |= scheme.segments(a, earlier) == scheme.segments(b, earlier)
            pairs = pairs[~seen]
        if len(pairs):
            yield pairs


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


def earlier_probed(columns: Sequence[Sequence[int]], masks: Sequence[Sequence[Sequence[int]]] | None,
                   k: int, confirm: tuple[Sequence[int], int | None, int | None] | None = None
                   ) -> dict[int, list[tuple[int, int, int]]]:
    """``earlier_matches`` of an index of several signatures, with probes or a confirmation:
    position ``j`` -> ``[(i, distance, signature place), ...]``, every earlier ``i`` that a
    lookup of ``j`` would find if ``i`` were indexed (under signature ``p``: ``columns[p][i]``
    within ``k`` bits of ``columns[p][j]`` or of one of its probes, ``masks[j][p]`` flipped one
    at a time; with ``confirm`` (the sketches, the bits allowed, the short-text rule's bits or
    None) only as ``confirm.sketches_agree`` says), once, at its nearest signature (the first on
    a tie), at its distance from ``j``'s own simhash; ``i`` ascending. The lookups are compared
    once per distinct lookup (``_lookups``), so copies cost what the answer holds: for bounded
    batches (a service request), whose answers list every earlier copy."""
    keys, finds = _lookups(columns, masks, k, confirm)
    at: dict[int, list[int]] = {}
    out: dict[int, list[tuple[int, int, int]]] = {}
    for j, u in enumerate(keys.tolist()):
        found = sorted((i, d, place) for v, (d, place) in finds[u].items() for i in at.get(v, ()))
        if found:
            out[j] = found
        at.setdefault(u, []).append(j)
    return out


def earliest_other(columns: Sequence[Sequence[int]], masks: Sequence[Sequence[Sequence[int]]] | None,
                   k: int, confirm: tuple[Sequence[int], int | None, int | None] | None,
                   ids: Sequence[str]) -> dict[int, int]:
    """Position ``j`` -> the first position ``i < j`` of ``earlier_probed(...)[j]`` whose id is
    not ``ids[j]`` (positions without one absent), linear in copies: per distinct lookup only its
    first position and its first with another id than that one's can be the answer."""
    keys, finds = _lookups(columns, masks, k, confirm)
    n = len(keys)
    first = np.full(len(finds), n, dtype=np.int64)
    np.minimum.at(first, keys, np.arange(n))
    other = np.full(len(finds), n, dtype=np.int64)  # per lookup, its first position with another id than its first's
    for j, u in enumerate(keys.tolist()):
        if other[u] == n and ids[j] != ids[first[u]]:
            other[u] = j
    candidates: dict[int, list[tuple[int, int]]] = {}  # per lookup, (first, other) of those it finds, by first
    out: dict[int, int] = {}
    for j, u in enumerate(keys.tolist()):
        if u not in candidates:
            candidates[u] = sorted((int(first[v]), int(other[v])) for v in finds[u])
        best = n
        for head, then in candidates[u]:
            if head >= min(best, j):
                break
            if ids[head] != ids[j]:
                best = head
                break
            best = min(best, then)
        if best < j:
            out[j] = best
    return out


def _lookups(columns: Sequence[Sequence[int]], masks: Sequence[Sequence[Sequence[int]]] | None,
             k: int, confirm: tuple[Sequence[int], int | None, int | None] | None
             ) -> tuple[np.ndarray, list[dict[int, tuple[int, int]]]]:
    """The positions' distinct lookups (their fingerprints under every signature, probes and
    sketch: equal ones find the same) and what each finds: (position -> lookup, numbered by first
    position; per lookup ``u``, lookup ``v`` -> (distance, signature place) for every ``v`` that
    ``u`` finds, itself included, at its nearest signature, the first on a tie). ``v`` is
    compared only when its first position comes before ``u``'s last: no other can be earlier
    than one of ``u``'s positions. Quadratic in distinct lookups, never in copies."""
    n = len(columns[0])
    numbers: dict[tuple, int] = {}
    fields = [*columns, *([confirm[0]] if confirm is not None else []),
              *([[tuple(map(tuple, m)) for m in masks]] if masks is not None else [])]
    keys = np.fromiter((numbers.setdefault(key, len(numbers)) for key in zip(*fields)), np.int64, n)
    firsts = np.full(len(numbers), n, dtype=np.int64)
    np.minimum.at(firsts, keys, np.arange(n))
    lasts = np.zeros(len(numbers), dtype=np.int64)
    np.maximum.at(lasts, keys, np.arange(n))
    befores = np.searchsorted(firsts, lasts).tolist()  # per lookup, those first seen before its last position
    bases = [np.asarray(column, dtype=np.uint64)[firsts] for column in columns]
    sketches = None if confirm is None else np.asarray(confirm[0], dtype=np.uint64)[firsts]
    finds: list[dict[int, tuple[int, int]]] = []
    for u, (j, before) in enumerate(zip(firsts.tolist(), befores)):
        best = {u: (0, 0)}  # itself: 0 bits under the first signature, and sketches_agree holds at 0 bits
        for place, base in enumerate(bases):
            flips = masks[j][place] if masks is not None and place < len(masks[j]) else ()
            queries = np.array([int(base[u]), *(int(base[u]) ^ m for m in flips)], dtype=np.uint64)
            hit = (np.bitwise_count(base[:before, None] ^ queries[None, :]) <= k).any(axis=1)
            if u < before:
                hit[u] = False
            near = np.flatnonzero(hit)
            if not len(near):
                continue
            distance = np.bitwise_count(base[near] ^ base[u]).astype(np.int64)
            if sketches is not None:
                agree = np.asarray(sketches_agree(distance, sketches[near], sketches[u], *confirm[1:]), dtype=bool)
                near, distance = near[agree], distance[agree]
            for v, d in zip(near.tolist(), distance.tolist()):
                if (d, place) < best.get(v, (65, 0)):
                    best[v] = (d, place)
        finds.append(best)
    return keys, finds


def found_edges(columns: Sequence[Sequence[int]], masks: Sequence[Sequence[Sequence[int]]] | None,
                schemes: Sequence[Scheme], k: int,
                confirm: tuple[Sequence[int], int | None, int | None] | None = None) -> np.ndarray:
    """(m, 2) positions (i, j), i < j, spanning the components of "a lookup of ``j`` finds
    ``i``" over every signature and probe (``earlier_probed``'s relation), linear in copies: per
    signature, each copy of a fingerprint to its first copy, and each lookup of ``j`` (its
    simhash and probes) to the first copy of every fingerprint it finds that came before ``j``;
    with ``confirm`` (the sketches, the bits allowed, the short-text rule's bits or None), a
    fingerprint beyond 3 bits of ``j``'s own (with the short-text rule, any fingerprint) to the first
    copy of each of its sketches that ``confirm.sketches_agree`` lets join ``j``'s, and (the
    short-text rule) each copy to the first copy of its fingerprint and sketch alone."""
    n = len(columns[0])
    sketches = None if confirm is None else np.asarray(confirm[0], dtype=np.uint64)
    out = [np.empty((0, 2), np.int64)]
    for place, (column, scheme) in enumerate(zip(columns, schemes)):
        base = np.asarray(column, dtype=np.uint64)
        flips = [masks[j][place] if masks is not None and place < len(masks[j]) else () for j in range(n)]
        owner = np.repeat(np.arange(n), [1 + len(f) for f in flips])
        lookups = np.array([q for j in range(n) for q in (int(base[j]), *(int(base[j]) ^ m for m in flips[j]))],
                           dtype=np.uint64)
        found = near_pairs(np.concatenate([base, lookups]), scheme, k)
        first = np.full(len(found.unique), n, dtype=np.int64)  # per fingerprint its first copy (n: none)
        np.minimum.at(first, found.inverse[:n], np.arange(n))
        own = first[found.inverse[:n]]
        if sketches is not None and confirm[2] is not None:  # a copy joins the first of its fingerprint and sketch
            _, keyed = np.unique(np.stack([found.inverse[:n], sketches.view(np.int64)], axis=1), axis=0,
                                 return_inverse=True)
            head = np.full(n, n, dtype=np.int64)
            np.minimum.at(head, keyed.ravel(), np.arange(n))
            own = head[keyed.ravel()]
        copies = np.flatnonzero(own != np.arange(n))
        out.append(np.stack([own[copies], copies], axis=1))
        # each lookup's fingerprint to itself and to its near fingerprints, both ways
        src = np.concatenate([np.arange(len(found.unique)), found.pairs[:, 0], found.pairs[:, 1]])
        dst = np.concatenate([np.arange(len(found.unique)), found.pairs[:, 1], found.pairs[:, 0]])
        order = np.argsort(src, kind="stable")
        src, dst = src[order], dst[order]
        asked = found.inverse[n:]
        starts, ends = np.searchsorted(src, asked, "left"), np.searchsorted(src, asked, "right")
        counts = ends - starts
        at = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        j, u = np.repeat(owner, counts), dst[at]
        if sketches is not None:
            distance = np.bitwise_count(base[j] ^ found.unique[u])
            far = (distance > CONFIRMED_BEYOND) | (confirm[2] is not None)
            out.append(_confirmed(found.inverse[:n], sketches, confirm[1:], j[far], u[far], distance[far]))
            j, u = j[~far], u[~far]
        i = first[u]
        keep = i < j
        out.append(np.stack([i[keep], j[keep]], axis=1))
    return np.unique(np.concatenate(out).astype(np.int64), axis=0)


def _confirmed(fingerprint: np.ndarray, sketches: np.ndarray, rule: tuple[int | None, int | None], j: np.ndarray,
               u: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """(m, 2) positions (i, j), i < j: for each found pair (``j``, fingerprint ``u`` at
    ``distance`` bits of ``j``'s), the first copy ``i`` of each sketch among ``u``'s copies
    (``fingerprint``: position -> its fingerprint) whose sketch ``confirm.sketches_agree`` lets
    join ``j``'s (``rule``: the bits allowed, the short-text rule's)."""
    which, i = first_per_sketch(fingerprint, sketches, u)
    j = j[which]
    keep = (i < j) & sketches_agree(distance[which], sketches[i], sketches[j], *rule)
    return np.stack([i[keep], j[keep]], axis=1)


def first_per_sketch(fingerprint: np.ndarray, sketches: np.ndarray,
                     wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each entry of ``wanted`` (fingerprints, numbered as ``fingerprint`` numbers them), the
    first member of each sketch among the members of that fingerprint (``fingerprint`` and
    ``sketches``: per member, members in order): (the entry's index, repeated per sketch; that
    member). Copies of one fingerprint and sketch count once: linear in the copies."""
    firsts = np.unique(np.stack([fingerprint, sketches.view(np.int64)], axis=1), axis=0, return_index=True)[1]
    firsts = firsts[np.lexsort((firsts, fingerprint[firsts]))]  # by fingerprint, then first member
    of = fingerprint[firsts]
    begins = np.searchsorted(of, wanted, "left")
    counts = np.searchsorted(of, wanted, "right") - begins
    return np.repeat(np.arange(len(wanted)), counts), firsts[ranges(begins, counts)]
