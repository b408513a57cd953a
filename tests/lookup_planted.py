"""Planted structure for the index's lookups and its brute-force answers, shared by the store
contract (memory, embedded and HBase stores: store_contract.py) and tests/test_index.py.

Exact copies (60 of one fingerprint), a chain of one-bit steps, pairs at exactly k and k + 1
bits, noise, and stale rows: ids indexed under a second fingerprint (as two writers of one id
that raced leave them), one beside the copies and one twice at one distance from a query."""

import random

import numpy as np

from dedup_hbase.text.fingerprint import hamming


def flip(value: int, bits) -> int:
    for b in bits:
        value ^= 1 << b
    return value


def planted(seed: int, k: int):
    """(fingerprints per id: every id's fingerprints, two for a stale id; queries)."""
    rnd = random.Random(seed)
    base = [rnd.getrandbits(64) for _ in range(4)]
    docs: dict[str, list[int]] = {f"copy-{n:03}": [base[0]] for n in range(60)}
    step = base[1]
    for n, bit in enumerate(rnd.sample(range(64), 8)):
        step = flip(step, [bit])
        docs[f"chain-{n}"] = [step]
    for distance in (0, k, k + 1):
        docs[f"pair-{distance}"] = [flip(base[2], rnd.sample(range(64), distance))]
    docs.update({f"noise-{n}": [rnd.getrandbits(64)] for n in range(150)})
    docs["copy-007"].append(flip(base[0], rnd.sample(range(64), 2)))  # stale, near its copies
    twin = base[3]
    docs["twin"] = [flip(twin, [3]), flip(twin, [40])]  # stale: both at 1 bit from ``twin``
    queries = base + [docs["chain-4"][0], flip(base[0], [5]), flip(base[2], rnd.sample(range(64), 1)),
                      docs["copy-007"][1], rnd.getrandbits(64)]
    queries += [rnd.getrandbits(64) for _ in range(50)]  # many queries: the batched path too
    return docs, queries


def write(index, docs: dict[str, list[int]]) -> None:
    """Index every id at its first fingerprint, then the stale ones' other index rows as a
    raced writer leaves them (index rows, no document row)."""
    from dedup_hbase import Document

    index.add_many([Document(i, fps[0]) for i, fps in docs.items()])
    for doc_id, fps in docs.items():
        for other in fps[1:]:
            index.store.put_cells("index", index.scheme.key_table(np.array([other], dtype=np.uint64)),
                                  [doc_id.encode()], repeat=len(index.scheme.flags))


def brute_force(docs: dict[str, list[int]], query: int, k: int) -> list[tuple[int, str, int]]:
    """Every id within k bits as (distance, id, simhash), by (distance, id): each id once, at
    its nearest fingerprint (of two at one distance, the smaller)."""
    found = []
    for doc_id, fps in docs.items():
        near = sorted((hamming(f, query), f) for f in fps if hamming(f, query) <= k)
        if near:
            found.append((near[0][0], doc_id, near[0][1]))
    return sorted(found)


def runs_of(docs: dict[str, list[int]], query: int, k: int) -> list[tuple[int, int, list[str]]]:
    """The indexed fingerprints within k bits as (distance, simhash, sorted ids), by (distance, simhash)."""
    ids: dict[int, list[str]] = {}
    for doc_id, fps in docs.items():
        for f in fps:
            if hamming(f, query) <= k:
                ids.setdefault(f, []).append(doc_id)
    return sorted((hamming(f, query), f, sorted(i)) for f, i in ids.items())


def assert_lookups_are_brute_force(index, docs, queries, k: int) -> int:
    """``query_many`` (and ``query`` for a few) at ``k`` with every bound from 1 to one past the
    most matches, and none: the first matches by (distance, id), the count of entries (an id
    under two fingerprints within k counts twice), the runs. Returns the most matches of a query (the test shows it planted what it meant to)."""
    want = [brute_force(docs, q, k) for q in queries]
    runs = [runs_of(docs, q, k) for q in queries]
    most = max(map(len, want))
    for max_matches in [None, *range(1, most + 2)]:
        got = index.query_many(queries, k, max_matches)
        singles = (0, 3, 7) if max_matches in (None, 1, most) else (0,)
        singles = {i: index.query(queries[i], k, max_matches) for i in singles}
        for i, matches in enumerate(got):
            assert [(m.distance, m.id, m.simhash) for m in matches] == want[i][:max_matches], (i, max_matches)
            assert matches.total == sum(len(ids) for _, _, ids in runs[i]), (i, max_matches)
            assert [(r.distance, r.simhash, list(r.ids)) for r in matches.runs] == runs[i]
            if i in singles:
                assert singles[i] == matches and singles[i].total == matches.total
                assert [(r.distance, r.simhash, list(r.ids)) for r in singles[i].runs] == runs[i]
    return most
