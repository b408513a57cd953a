"""candidates.py: the two paths of the compare policy give the same answers (``plan`` in
Python ints and in numpy; ``compare_few`` and ``compare``: the same runs, distances, order and
ids, a fingerprint under several prefixes of one query taken once); ``bounded`` is brute force
on runs that share ids (stale rows), with the count of distinct ids; and the count reads the
ids of the other runs and a few of the biggest, never every id of it."""

import random

import numpy as np
import pytest

from dedup_hbase import Scheme
from dedup_hbase.index import candidates
from dedup_hbase.index.candidates import Ids, Run, bounded, compare, compare_few, plan
from dedup_hbase.index.store import Cells, ListCells
from dedup_hbase.stores.local.records import PackedCells, encode_record


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
            ids = [f"d{i}".encode() for i in range(len(values))]
            if rnd.random() < 0.5:  # a store's plain cells, or the embedded store's record
                scanned.append(ListCells(np.array(values, dtype=np.uint64), ids))
            else:
                scanned.append(PackedCells(encode_record(values, ids) if values else b""))
        flags = rnd.randint(1, 4)
        inverse = [[rnd.randrange(len(scanned)) for _ in range(flags)] for _ in queries]
        k = rnd.randint(0, 4)
        expected = compare(np.array(queries, dtype=np.uint64), scanned, np.array(inverse), k)
        got = compare_few(queries, scanned, inverse, k)
        as_lists = [[(r.distance, r.simhash, list(r.ids)) for r in runs] for runs in expected]
        assert [[(r.distance, r.simhash, list(r.ids)) for r in runs] for runs in got] == as_lists


@pytest.mark.parametrize("scheme", [Scheme(4, 1), Scheme(5, 2)], ids=lambda s: s.name)
def test_plan_in_python_ints_is_the_plan_in_numpy(scheme, monkeypatch):
    rnd = random.Random(12)
    for _ in range(100):
        queries = [rnd.getrandbits(64) for _ in range(rnd.randint(1, 20))]
        queries += [flip(rnd, rnd.choice(queries), rnd.randint(0, 3)) for _ in range(rnd.randint(0, 10))]
        few = plan(scheme, queries)
        with monkeypatch.context() as m:
            m.setattr(candidates, "FEW_QUERIES", 0)
            many = plan(scheme, queries)
        assert few[0] == many[0] and sorted(few[0]) == few[0] and len(set(few[0])) == len(few[0])
        assert np.asarray(few[1]).tolist() == np.asarray(many[1]).tolist()
        assert [[few[0][i] for i in row] for row in few[1]] == [scheme.prefixes(q) for q in queries]


def random_runs(rnd: random.Random) -> list[Run]:
    """A query's runs by (distance, simhash), ids sorted in each, some ids in several runs."""
    pool = [f"d{i:02}" for i in range(rnd.choice((3, 10, 40)))]
    simhashes = rnd.sample(range(1000), rnd.randint(0, 8))
    runs = [Run(rnd.randint(0, 3), s, sorted(rnd.sample(pool, rnd.randint(1, len(pool))))) for s in simhashes]
    return sorted(runs, key=lambda r: (r.distance, r.simhash))


def test_bounded_is_brute_force_on_runs_sharing_ids():
    """Each id once, at its nearest fingerprint (of two at one distance, the smaller), by
    (distance, id), at most ``max_matches``; the count: the runs' entries (an id under two
    fingerprints counts twice), listed all or not."""
    rnd = random.Random(13)
    for _ in range(400):
        runs = random_runs(rnd)
        nearest = {}
        for r in runs:
            for i in r.ids:
                nearest[i] = min(nearest.get(i, (9, 0)), (r.distance, r.simhash))
        want = sorted((d, i, s) for i, (d, s) in nearest.items())
        for max_matches in (None, *range(1, len(want) + 2)):
            found, count = bounded(runs, max_matches)
            assert [(d, i, s) for i, s, d in found] == want[:max_matches]
            assert count == sum(len(r.ids) for r in runs)


class CountedCells(Cells):
    """``n`` cells of one fingerprint with ids ``d000000``...; counts the ids read."""

    def __init__(self, n: int) -> None:
        self.n, self.reads = n, 0

    @property
    def rests(self) -> np.ndarray:
        return np.zeros(self.n, dtype=np.uint64)

    def qualifier(self, i: int) -> bytes:
        self.reads += 1
        return f"d{i:06}".encode()


def test_the_count_of_a_big_run_beside_stale_rows_reads_only_the_listed_ids():
    """200,000 copies of one fingerprint and, near them, runs holding some of the same ids
    (stale rows) and others: the first matches read the ids they list, and the count is the
    runs' sizes, read without reading an id."""
    big = CountedCells(200_000)
    runs = [Run(0, 5, Ids(big, 0, 200_000)), Run(1, 7, ["d000003", "d199999", "e1"]), Run(2, 6, ["d100000", "e2"])]
    found, count = bounded(runs, 10)
    assert [i for i, _, _ in found] == [f"d{i:06}" for i in range(10)] and count == 200_005
    assert big.reads == 10
    everything, count = bounded(runs, None)
    assert len(everything) == 200_002 and count == 200_005  # listed once each, counted once per fingerprint
