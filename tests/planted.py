"""Planted near-duplicate structure and its brute-force answers, shared by the tests of the
pair search (test_skew.py) and of groups (test_groups.py)."""

import random

import numpy as np

from dedup_hbase.text.fingerprint import hamming

K = 3


def flip(value, bits, rnd):
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed, randoms=1500, pages=(1200,), bucket=2500):
    """Fingerprints with the structures that break a pair search, shuffled (seeded): ``randoms``
    random ones; per entry of ``pages``, that many exact copies of one page (one page under many
    URLs) and 30 near copies of it; 40 chains a - b - c (a and c more than k apart, joined
    through b); 40 pairs at exactly k and 40 at k + 1 bits; a bucket of ``bucket`` distinct
    fingerprints sharing 48 bits."""
    rnd = random.Random(seed)
    out = [rnd.getrandbits(64) for _ in range(randoms)]
    for n in pages:
        page = rnd.getrandbits(64)
        out += [page] * n
        out += [flip(page, 2, rnd) for _ in range(30)]
    for _ in range(40):
        a = rnd.getrandbits(64)
        b = flip(a, 3, rnd)
        c = b
        while hamming(a, c) <= K:
            c = flip(b, 3, rnd)
        out += [a, b, c]
    for bits in (K, K + 1):
        for _ in range(40):
            a = rnd.getrandbits(64)
            out += [a, flip(a, bits, rnd)]
    base = rnd.getrandbits(64) & ~0xFFFF
    out += [base | rnd.getrandbits(16) for _ in range(bucket)]
    rnd.shuffle(out)
    return out


def brute_pairs(values, k=K, block=1024):
    """Every pair of positions of distinct ``values`` within k bits, by XOR (all pairs, in
    blocks of rows)."""
    v = np.asarray(values, dtype=np.uint64)
    found = set()
    for start in range(0, len(v), block):
        close = np.bitwise_count(v[start:start + block, None] ^ v[None, :]) <= k
        i, j = np.nonzero(close)
        i = i + start
        found.update(zip(i[i < j].tolist(), j[i < j].tolist()))
    return found


def brute_components(n, pairs):
    parent = list(range(n))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [root(x) for x in range(n)]


def brute_groups(fps, k=K):
    """Per position of ``fps``: the first position of its group (all pairs within k bits by
    XOR, components by union-find)."""
    unique = sorted(set(fps))
    index_of = {v: i for i, v in enumerate(unique)}
    by_value = brute_components(len(unique), brute_pairs(unique, k))
    first = {}
    for position, f in enumerate(fps):
        first.setdefault(by_value[index_of[f]], position)
    return [first[by_value[index_of[f]]] for f in fps]


def brute_via(fps, k=K):
    """Per position of ``fps``: ``(via position or None, distance or None)`` as outputs.py
    defines them, the slow way: all pairs of distinct fingerprints by XOR, a breadth-first
    search per group in plain Python from the kept document's fingerprint, each fingerprint's
    parent the least (distance, first position) among its neighbours one hop nearer."""
    from collections import deque

    first = {}
    for position, f in enumerate(fps):
        first.setdefault(f, position)
    unique = sorted(first, key=first.get)  # in order of first position
    index_of = {f: i for i, f in enumerate(unique)}
    near: dict[int, list[int]] = {i: [] for i in range(len(unique))}
    for a, b in brute_pairs(unique, k):
        near[a].append(b)
        near[b].append(a)
    group = brute_groups(fps, k)
    parent: dict[int, int | None] = {}
    for root in (i for i, f in enumerate(unique) if group[first[f]] == first[f]):
        parent[root] = None
        level, queue = {root: 0}, deque([root])
        while queue:
            u = queue.popleft()
            for w in near[u]:
                if w not in level:
                    level[w] = level[u] + 1
                    queue.append(w)
        for w, depth in level.items():
            if depth:
                parent[w] = min((hamming(unique[w], unique[p]), first[unique[p]], p)
                                for p in near[w] if level[p] == depth - 1)[2]
    out = []
    for position, f in enumerate(fps):
        if first[f] != position:
            out.append((first[f], 0))
        else:
            p = parent[index_of[f]]
            out.append((None, None) if p is None else (first[unique[p]], hamming(f, unique[p])))
    return out

