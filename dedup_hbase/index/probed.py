"""A batch's matches among its own documents as an index of several signatures would find
them: probes (a lookup of each simhash with bits flipped), a confirmation by a second sketch,
the short-text rule. neardup.py gives the plain case, every pair within k bits.

Used where a batch must be answered as if its earlier documents were already indexed: the
service's requests (``earlier_probed``: each distinct lookup against the earlier ones by XOR,
for bounded batches), a local load's ``--skip-near-dups`` and ``--groups`` (``earliest_other``;
``found_edges``, through neardup's pair search), and ``groups``' confirmation
(``first_per_sketch``). Copies cost what the answer holds, never their square.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import ranges, unique_rows
from .confirm import CONFIRMED_BEYOND, sketches_agree
from .layout import Scheme
from .neardup import near_pairs


def earlier_probed(columns: Sequence[Sequence[int]], masks: Sequence[Sequence[Sequence[int]]] | None,
                   k: int, confirm: tuple[Sequence[int], int | None, str | None, dict] | None = None
                   ) -> dict[int, list[tuple[int, int, int]]]:
    """``earlier_matches`` of an index of several signatures, with probes or a confirmation:
    position ``j`` -> ``[(i, distance, signature place), ...]``, every earlier ``i`` that a
    lookup of ``j`` would find if ``i`` were indexed (under signature ``p``: ``columns[p][i]``
    within ``k`` bits of ``columns[p][j]`` or of one of its probes, ``masks[j][p]`` flipped one
    at a time; with ``confirm`` (the sketches, the bits allowed, the short-text rule or None,
    a short sketch -> its kept text) only as ``confirm.sketches_agree`` says), once, at its nearest signature (the first on
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
                   k: int, confirm: tuple[Sequence[int], int | None, str | None, dict] | None,
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
             k: int, confirm: tuple[Sequence[int], int | None, str | None, dict] | None
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
                confirm: tuple[Sequence[int], int | None, str | None, dict] | None = None) -> np.ndarray:
    """(m, 2) positions (i, j), i < j, spanning the components of "a lookup of ``j`` finds
    ``i``" over every signature and probe (``earlier_probed``'s relation), linear in copies: per
    signature, each copy of a fingerprint to its first copy, and each lookup of ``j`` (its
    simhash and probes) to the first copy of every fingerprint it finds that came before ``j``;
    with ``confirm`` (the sketches, the bits allowed, the short-text rule or None, its texts), a
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
            keyed = unique_rows([found.inverse[:n], sketches])[1]
            head = np.full(n, n, dtype=np.int64)
            np.minimum.at(head, keyed, np.arange(n))
            own = head[keyed]
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


def _confirmed(fingerprint: np.ndarray, sketches: np.ndarray, rule: tuple, j: np.ndarray,
               u: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """(m, 2) positions (i, j), i < j: for each found pair (``j``, fingerprint ``u`` at
    ``distance`` bits of ``j``'s), the first copy ``i`` of each sketch among ``u``'s copies
    (``fingerprint``: position -> its fingerprint) whose sketch ``confirm.sketches_agree`` lets
    join ``j``'s (``rule``: the bits allowed, the short-text rule, its texts)."""
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
    firsts = unique_rows([fingerprint, sketches])[0]
    firsts = firsts[np.lexsort((firsts, fingerprint[firsts]))]  # by fingerprint, then first member
    of = fingerprint[firsts]
    begins = np.searchsorted(of, wanted, "left")
    counts = np.searchsorted(of, wanted, "right") - begins
    return np.repeat(np.arange(len(wanted)), counts), firsts[ranges(begins, counts)]
