"""candidates.py: ``compare_few`` (Python ints, a service's few queries) gives exactly what
``compare`` (numpy) gives: the same runs, distances, order and ids, a fingerprint under
several prefixes of one query taken once. ``counted_few`` by the compiled core gives
exactly what the reference gives on the embedded store's records, hostile ones included."""

import random

import numpy as np
import pytest

from dedup_hbase.index.candidates import compare, compare_few, counted_few
from dedup_hbase.index.store import ListCells
from dedup_hbase.stores.local.records import PackedCells, encode_record
from dedup_hbase.text import native


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


# counted_few: the compiled core's answer (native/src/packed.rs) over the embedded store's
# records against the reference's (compare_few or compare, then bounded), on hostile records

def reference_counted(monkeypatch, *args):
    with monkeypatch.context() as m:
        m.setattr(native, "packed_counted", lambda: None)
        return counted_few(*args)


def outcome(fn, *args):
    """``fn(*args)``, or the type and message of what it raised."""
    try:
        return fn(*args)
    except Exception as e:  # the reference's own error is the expected answer
        return type(e), str(e)


IDS = [b"", b"a", b"b", b"news-0001", b"news-0002", "新闻-7".encode(), "é".encode(), b"\x00x", b"z" * 40]


def random_record(rnd: random.Random, queries: list[int]) -> bytes:
    """One prefix's record: runs of copies near a query or anywhere, ids of one length or of
    many (some shared between fingerprints: stale rows), non-ASCII, empty, NUL; or no cells."""
    cells = set()
    width = rnd.choice((None, 0, 3, 9))  # one length for every id, or any
    for _ in range(rnd.choice((0, 1, 1, 2, 5, 12))):
        value = flip(rnd, rnd.choice(queries), rnd.randint(0, 6)) if rnd.random() < 0.7 else rnd.getrandbits(64)
        for _ in range(rnd.choice((1, 1, 2, 3, 30))):
            doc = rnd.choice(IDS) if width is None else bytes(rnd.randrange(97, 100) for _ in range(width))
            cells.add((value, doc))
    if not cells:
        return b""
    cells = sorted(cells)
    return encode_record([v for v, _ in cells], [q for _, q in cells])


def test_counted_few_by_the_core_is_the_reference_on_random_records(monkeypatch):
    assert native.packed_counted() is not None, native.describe()
    rnd = random.Random(20)
    for _ in range(1500):
        queries = [rnd.getrandbits(64) for _ in range(rnd.randint(1, 12))]
        scanned = [PackedCells(random_record(rnd, queries)) for _ in range(rnd.randint(1, 20))]
        flags = rnd.randint(1, 10)
        inverse = [[rnd.randrange(len(scanned)) for _ in range(flags)] for _ in queries]
        args = (queries, scanned, inverse, rnd.randint(0, 7), rnd.choice((None, 1, 2, 3, 7, 40, 1000)))
        got = counted_few(*args)
        assert got == reference_counted(monkeypatch, *args)
        assert all(type(i) is str and type(s) is int and type(d) is int for found, _ in got for i, s, d in found)


def test_counted_few_leaves_a_record_it_cannot_read_to_the_reference(monkeypatch):
    """An id that is not UTF-8 (the reference raises when it decodes it, not before) and a
    record cut short (the reference reads what is there): the reference's answer either way."""
    good = encode_record([5, 9], [b"ok", b"ok"])
    bad_id = encode_record([5, 9], [b"\xff\xfe", b"ok"])
    for records, queries in [([bad_id], [5]), ([bad_id], [9]), ([good[:-1]], [5]), ([good[:-3], good], [9]),
                             ([b"\x01\x00\x00\x00\xff\xff" + bytes(8) + b"\x05\x00ab"], [0])]:
        scanned = [PackedCells(r) for r in records]
        args = (queries, scanned, [list(range(len(records)))], 1, None)
        assert outcome(counted_few, *args) == outcome(reference_counted, monkeypatch, *args)
    with pytest.raises(UnicodeDecodeError):
        counted_few([5], [PackedCells(bad_id)], [[0]], 1, None)
    assert counted_few([9], [PackedCells(bad_id)], [[0]], 0, None) == [([("ok", 9, 0)], 1)]


def test_counted_few_takes_other_cells_the_python_way():
    """Cells that are not records of the embedded store (``packed_record`` is None) are compared
    by the reference; a few of them beside records too."""
    listed = ListCells(np.array([5, 5], dtype=np.uint64), [b"a", b"b"])
    packed = PackedCells(encode_record([4], [b"c"]))
    assert listed.packed_record() is None and packed.packed_record() is not None
    assert counted_few([5], [listed, packed], [[0, 1]], 1, 2) == [([("a", 5, 0), ("b", 5, 0)], 3)]
