"""Near-duplicates inside a batch of fingerprints, the batch way, and their groups.

Within a batch, the same pigeonhole argument as the index applies (layout.py): two
fingerprints within k bits agree on the blocks of at least one flag. So, per flag,
sort the batch by that flag's segment and compare only fingerprints with equal
segments; no lookup per document. Against what is already indexed, a load uses
``Index.query_many`` (the prefixes of the whole batch, scanned in key order).

Groups: every near-duplicate pair found during a load is an edge; the groups are the
connected components ("N related articles"), written at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .layout import Scheme

_BLOCK = 1024  # compare equal-segment runs in blocks of this many, to bound memory


def batch_pairs(simhashes: np.ndarray, scheme: Scheme, k: int) -> set[tuple[int, int]]:
    """Every pair of positions ``(i, j)``, ``i < j``, whose fingerprints differ in at
    most ``k`` bits (``k`` within the scheme's guarantee)."""
    scheme.check_k(k)
    n = len(simhashes)
    pairs: set[tuple[int, int]] = set()
    if n < 2:
        return pairs
    for flag in range(1, len(scheme.flags) + 1):
        segments = scheme.segments(simhashes, flag)
        order = np.argsort(segments, kind="stable")
        ordered = segments[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], n]
        for start, end in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist()):
            _pairs_in_run(simhashes, np.sort(order[start:end]), k, pairs)
    return pairs


def earlier_matches(simhashes: np.ndarray, scheme: Scheme, k: int) -> dict[int, list[tuple[int, int]]]:
    """Position ``j`` -> ``[(i, distance), ...]``: every earlier position ``i < j`` of the batch
    whose fingerprint is within ``k`` bits of ``simhashes[j]``, ``i`` ascending. Positions
    with no earlier near-duplicate are absent."""
    out: dict[int, list[tuple[int, int]]] = {}
    for i, j in sorted(batch_pairs(simhashes, scheme, k), key=lambda p: (p[1], p[0])):
        out.setdefault(j, []).append((i, (int(simhashes[i]) ^ int(simhashes[j])).bit_count()))
    return out


def _pairs_in_run(simhashes: np.ndarray, members: np.ndarray, k: int, pairs: set) -> None:
    for a in range(0, len(members), _BLOCK):
        left = members[a:a + _BLOCK]
        right = members[a:]
        close = np.bitwise_count(simhashes[left][:, None] ^ simhashes[right][None, :]) <= k
        ii, jj = np.nonzero(close)
        for i, j in zip(left[ii].tolist(), right[jj].tolist()):
            if i < j:
                pairs.add((i, j))


def write_groups(edges: Iterable[tuple[str, str]], out: Path) -> int:
    """Connected components of the near-duplicate edges, as JSON lines
    ``{"group": n, "size": s, "ids": [...]}`` (ids in first-seen order); returns the count."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    with open(out, "w", encoding="utf-8") as f:
        for n, ids in enumerate(groups.values(), 1):
            f.write(json.dumps({"group": n, "size": len(ids), "ids": ids}, ensure_ascii=False) + "\n")
    return len(groups)
