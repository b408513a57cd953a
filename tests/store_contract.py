"""The store contract as a test suite: every store gives the same answers to the same calls.

A store backend's test class inherits ``StoreContract`` and provides one fixture,
``new_store``: a store object with no tables yet (the suite creates them), dropped or
discarded afterwards by the fixture. That is all a new backend needs to prove itself::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def new_store(self, tmp_path):
            yield MyStore(tmp_path / "x")

tests/test_store_contract.py runs it on the memory, embedded and HBase stores.
"""

import random

import numpy as np
import pytest
from lookup_planted import assert_lookups_are_brute_force, planted, write

from dedup_hbase import Index, Scheme
from dedup_hbase.errors import StoreError
from dedup_hbase.index.schema import load_schema
from dedup_hbase.index.store import Cells


def runs_of(rests: list[int]) -> list[tuple[int, int, int]]:
    """(remainder, first cell, cells) of each run of equal remainders: what ``Cells.runs`` gives."""
    out: list[tuple[int, int, int]] = []
    for i, rest in enumerate(rests):
        if out and out[-1][0] == rest:
            out[-1] = (rest, out[-1][1], out[-1][2] + 1)
        else:
            out.append((rest, i, 1))
    return out


def index_key(segment: int, flag: int, simhash: int, doc: str) -> bytes:
    return segment.to_bytes(4, "big") + bytes([flag]) + simhash.to_bytes(8, "big") + doc.encode()


class StoreContract:
    """Inherit and provide the ``new_store`` fixture (see the module docstring)."""

    @pytest.fixture
    def store(self, new_store):
        assert not new_store.exists()
        new_store.create(load_schema(regions=4))
        assert new_store.exists()
        yield new_store
        new_store.close()

    def test_put_get_overwrite_delete(self, store):
        store.put("docs", [(b"a", b"1"), (b"b", b"\x00\xff"), ("é".encode(), b"")])
        assert store.get("docs", [b"b", b"zz", b"a", "é".encode()]) == [b"\x00\xff", None, b"1", b""]
        store.put("docs", [(b"a", b"2")])
        store.delete("docs", [b"b", b"never"])
        assert store.get("docs", [b"a", b"b"]) == [b"2", None]
        assert store.get("docs", []) == []


    def test_get_many_mostly_present_and_mostly_absent(self, store):
        present = [f"p{i}".encode() for i in range(300)]
        store.put("docs", [(k, k[::-1]) for k in present])
        asked = present[:200] + [b"q1", b"q2"]  # present first: the store may choose its way by the first
        assert store.get("docs", asked) == [k[::-1] for k in present[:200]] + [None, None]
        asked = [f"q{i}".encode() for i in range(200)] + present[:3]  # absent first
        assert store.get("docs", asked) == [None] * 200 + [k[::-1] for k in present[:3]]


    def test_put_cells_rows_flag_by_flag_with_repeated_qualifiers(self, store):
        rnd = random.Random(8)
        docs = [f"doc{i}".encode() for i in range(50)] + [b"\x00", b"x" * 300]
        rows = [index_key(rnd.choice([0, 0x00010000, 0xFFFF0000]), flag, rnd.getrandbits(64), "")
                for flag in (1, 2, 3) for _ in docs]
        store.put_cells("index", b"".join(rows), docs, repeat=3)
        run = index_key(0x00010000, 4, 77, "")  # one fingerprint, every document: one run of cells
        store.put_cells("index", run * len(docs), docs)
        expected = sorted([row + docs[j % len(docs)] for j, row in enumerate(rows)] + [run + d for d in docs])
        prefixes = sorted({k[:5] for k in expected})
        assert [k for found in store.scan("index", prefixes, values=False) for k, _ in found] == expected
        for prefix, cells in zip(prefixes, store.scan_cells("index", prefixes)):
            mine = [k for k in expected if k.startswith(prefix)]
            assert cells.rests.tolist() == [int.from_bytes(k[5:13], "big") for k in mine]
            assert [cells.qualifier(i) for i in range(len(cells))] == [k[13:] for k in mine]
            assert list(cells.runs()) == runs_of([int.from_bytes(k[5:13], "big") for k in mine])
        with pytest.raises(ValueError, match="do not split|qualifiers x 2"):
            store.put_cells("index", b"".join(rows), docs, repeat=2)


    def test_index_keys_scan_by_prefix_in_key_order(self, store):
        rnd = random.Random(5)
        keys = {index_key(rnd.choice([0, 0x00010000, 0xFFFF0000, 0x80000000]), rnd.randint(1, 4),
                          rnd.getrandbits(64), f"doc{rnd.randint(0, 50)}") for _ in range(400)}
        # identical fingerprint, several documents: one row, several columns
        keys |= {index_key(0x12340000, 1, 7, d) for d in ("x", "y", "z")}
        store.put("index", [(k, b"") for k in keys])
        prefixes = sorted({k[:5] for k in keys}) + [b"\x55\x55\x00\x00\x01", b"\xff\xff\xff\xff\xff"]
        got = store.scan("index", prefixes, values=False)
        assert got == [[(k, b"") for k in sorted(keys) if k.startswith(p)] for p in prefixes]
        assert [k for k, _ in store.scan("index", [bytes.fromhex("1234000001")])[0]] == [
            index_key(0x12340000, 1, 7, d) for d in ("x", "y", "z")]


    def test_scan_prefix_edges(self, store):
        keys = [b"a", b"a\x00", b"a\xff", b"a\xff\xff", b"b", b"\xff", b"\xff\xff"]
        store.put("docs", [(k, k) for k in keys])
        assert store.scan("docs", [b"a", b"a\xff", b"\xff", b"c"]) == [
            [(k, k) for k in keys[:4]], [(b"a\xff", b"a\xff"), (b"a\xff\xff", b"a\xff\xff")],
            [(b"\xff", b"\xff"), (b"\xff\xff", b"\xff\xff")], []]


    def test_scan_range_pages_and_iterate(self, store):
        keys = [f"k{i:04d}".encode() for i in range(2500)]
        store.put("docs", [(k, k[1:]) for k in keys])
        assert store.scan_range("docs", b"k0010", b"k0013", 100) == [(k, k[1:]) for k in keys[10:13]]
        assert store.scan_range("docs", b"k", None, 5) == [(k, k[1:]) for k in keys[:5]]
        assert [k for k, _ in store.iterate("docs", b"k1", page=300)] == [k for k in keys if k.startswith(b"k1")]
        assert sum(1 for _ in store.iterate("docs", page=1000)) == 2500


    def test_tables_are_separate_and_create_twice_fails(self, store):
        store.put("meta", [(b"config", b"{}")])
        assert store.get("docs", [b"config"]) == [None]
        with pytest.raises(StoreError, match="exist"):
            store.create(load_schema())


    def test_iterate_pages_through_wide_rows(self, store):
        """Pages smaller than a row (many documents share one fingerprint) lose nothing."""
        keys = sorted({index_key(0x00010000, 1, 99, f"doc{i:03d}") for i in range(30)}
                      | {index_key(s << 16, 2, s, "x") for s in range(0, 65536, 4099)})
        store.put("index", [(k, b"") for k in keys])
        for page in (1, 7, 29, 30, 31, 1000):
            assert [k for k, _ in store.iterate("index", page=page)] == keys
        assert [k for k, _ in store.scan_range("index", keys[3], keys[9], 100)] == keys[3:9]

    def test_cells_are_the_contract_type_and_iterate_like_scans(self, store):
        rnd = random.Random(6)
        keys = sorted({index_key(rnd.choice([0x00010000, 0x7F000000, 0xFFFF0000]), rnd.randint(1, 4),
                                 rnd.getrandbits(64), f"doc{rnd.randint(0, 30)}") for _ in range(300)})
        store.put("index", [(k, b"") for k in keys])
        walked = list(store.iterate_cells("index", 5))
        assert [prefix for prefix, _ in walked] == sorted({k[:5] for k in keys})
        for prefix, cells in walked:
            assert isinstance(cells, Cells)
            mine = [k for k in keys if k.startswith(prefix)]
            assert len(cells) == len(mine)
            assert np.asarray(cells.rests, dtype=np.uint64).tolist() == [int.from_bytes(k[5:13], "big") for k in mine]
            assert [cells.qualifier(i) for i in range(len(cells))] == [k[13:] for k in mine]
            assert list(cells.runs()) == runs_of([int.from_bytes(k[5:13], "big") for k in mine])
        (empty,) = store.scan_cells("index", [b"\x55\x55\x00\x00\x01"])
        assert len(empty) == 0 and len(empty.rests) == 0 and list(empty.runs()) == []

    def test_flush_and_compact_change_no_answer(self, store):
        keys = [index_key(s << 16, 1 + s % 4, s * 7919, f"d{s}") for s in range(0, 4000, 7)]
        store.put("index", [(k, b"") for k in keys])
        store.put("docs", [(b"a", b"1")])
        before = [k for k, _ in store.iterate("index")]
        store.flush()
        store.compact()
        assert [k for k, _ in store.iterate("index")] == before == sorted(keys)
        assert store.get("docs", [b"a"]) == [b"1"]
        size = store.table_bytes("index")
        assert size is None or size > 0

    @pytest.mark.parametrize("scheme", [Scheme(4, 1), Scheme(5, 2)], ids=lambda s: s.name)
    def test_index_lookups_are_brute_force(self, store, scheme):
        """The index over this store: planted structure (lookup_planted.py: copies, a chain,
        pairs at k and k + 1 bits, noise, stale rows) answered as brute force, every k, every
        bound; one query or many."""
        index = Index.create(store, scheme, scheme.max_k)
        docs, queries = planted(21, scheme.max_k)
        write(index, docs)
        assert [assert_lookups_are_brute_force(index, docs, queries, k) for k in range(scheme.max_k + 1)] == [60] * 4
        copies = index.query(queries[0], 3, 10)  # the copies and, 2 bits away, a stale row of one of them
        assert [len(r.ids) for r in copies.runs] == [60, 1] and copies.total == 61
        twin = index.query(queries[3], 1)  # one id under two fingerprints at 1 bit: listed once, counted twice
        assert [len(r.ids) for r in twin.runs] == [1, 1] and [m.id for m in twin] == ["twin"] and twin.total == 2
