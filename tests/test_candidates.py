"""candidates.py: ``compare_few`` (Python ints, a service's few queries) gives exactly what
``compare`` (numpy) gives: the same runs, distances, order and ids, a fingerprint under
several prefixes of one query taken once."""

import random

import numpy as np

from dedup_hbase.candidates import compare, compare_few
from dedup_hbase.stores.base import ListCells


def flip(rnd: random.Random, value: int, bits: int) -> int:
    for b in rnd.sample(range(64), bits):
        value ^= 1 << b
    return value


def test_compare_few_answers_as_compare_on_random_prefixes_with_runs_and_shared_fingerprints():
    rnd = random.Random(11)
    for _ in range(200):
        queries = [rnd.getrandbits(64) for _ in range(rnd.randint(1, 12))]
        scanned = []
        for _ in range(rnd.randint(1, 20)):
            values = []
            for _ in range(rnd.randint(0, 6)):  # near a query, or anywhere; some repeated (a run)
                value = flip(rnd, rnd.choice(queries), rnd.randint(0, 5)) if rnd.random() < 0.7 else rnd.getrandbits(64)
                values += [value] * rnd.choice((1, 1, 2, 3))
            values.sort()
            scanned.append(ListCells(np.array(values, dtype=np.uint64), [f"d{i}".encode() for i in range(len(values))]))
        flags = rnd.randint(1, 4)
        inverse = [[rnd.randrange(len(scanned)) for _ in range(flags)] for _ in queries]
        k = rnd.randint(0, 4)
        expected = compare(np.array(queries, dtype=np.uint64), scanned, np.array(inverse), k)
        got = compare_few(queries, scanned, inverse, k)
        as_lists = [[(r.distance, r.simhash, list(r.ids)) for r in runs] for runs in expected]
        assert [[(r.distance, r.simhash, list(r.ids)) for r in runs] for runs in got] == as_lists
