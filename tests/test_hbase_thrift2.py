"""The Thrift2 data path (stores/hbase/thrift2.py) against a real HBase: one-call multi-range
scans return exactly what one scan per prefix returns (Thrift1, happybase), lookups equal
brute force and the embedded store, bulk puts land every cell once, every call of the shipped
IDL answers. The protobuf filter is hand-encoded (encoding.py), so HBase itself is the test of
the encoding."""

import random

import numpy as np
import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.stores.hbase import thrift2
from dedup_hbase.stores.hbase.encoding import MULTI_ROW_RANGE_FILTER, multi_row_range_filter, varint
from dedup_hbase.stores.hbase.tables import merge_ranges, prefix_range
from dedup_hbase.stores.hbase.wire import Channel, idl
from dedup_hbase.stores.memory import MemoryStore

from conftest import hbase_store_url

pytestmark = pytest.mark.hbase


@pytest.fixture
def stores(hbase_url):
    """Fresh tables on HBase and the same in memory, the reference: (HBase store, memory store)."""
    new, old = open_store(hbase_store_url(hbase_url)), MemoryStore()
    Index.create(new, 4, 3)
    Index.create(old, 4, 3)
    yield new, old
    new.drop()
    new.close()


def test_filter_encoding_by_hand():
    encoded = multi_row_range_filter([(b"ab", b"ac"), (b"\xff", None)])
    name = MULTI_ROW_RANGE_FILTER.encode()
    assert encoded.startswith(b"\x0a" + bytes([len(name)]) + name + b"\x12")
    # RowRange{start "ab", inclusive, stop "ac", exclusive}, RowRange{start ff, inclusive, stop ""}
    assert encoded.endswith(b"\x0a\x0c\x0a\x02ab\x10\x01\x1a\x02ac\x20\x00"
                            b"\x0a\x09\x0a\x01\xff\x10\x01\x1a\x00\x20\x00")
    assert varint(300) == b"\xac\x02"
    with pytest.raises(ValueError):
        multi_row_range_filter([(b"b", b"a")])


def test_ranges():
    assert prefix_range(b"\x01\xff", 4) == (b"\x01\xff", b"\x01\xff\xff\xff\x00")
    assert prefix_range(b"a\xff\xff") == (b"a\xff\xff", b"b")
    assert prefix_range(b"\xff\xff") == (b"\xff\xff", None)
    assert prefix_range(b"") == (b"", None)
    assert merge_ranges([(b"c", b"d"), (b"a", b"b"), (b"b", b"c"), (b"x", None), (b"y", b"z")]) == \
        [(b"a", b"d"), (b"x", None)]


def _index_keys(rnd, n_rows, wide=()):
    """Index keys (13-byte row + id) spread over all first bytes, some rows near 0xff..,
    some prefixes full of 0xff, and ``wide`` rows with many qualifiers each."""
    keys = set()
    for i in range(n_rows):
        row = rnd.getrandbits(104).to_bytes(13, "big")
        if i % 50 == 0:
            row = b"\xff" * rnd.randrange(1, 6) + row
            row = row[:13]
        if i % 70 == 0:
            row = b"\x00" * 5 + row[5:]
        keys.add(row + f"q{i}".encode())
    for row, count in wide:
        keys.update(row + f"w{j:05d}".encode() for j in range(count))
    return sorted(keys)


def cell_keys(cells, prefix: bytes) -> list[bytes]:
    """Whole keys back from a scan prefix's ``Cells`` (13-byte rows)."""
    width = 13 - len(prefix)
    return [prefix + int(rest).to_bytes(8, "big")[8 - width:] + cells.qualifier(i)
            for i, rest in enumerate(cells.rests)]


def test_one_call_scans_equal_per_prefix_scans(stores):
    new, old = stores
    rnd = random.Random(11)
    wide = [(b"\x42\x42\x42\x42\x01" + bytes(8), 3000), (b"\xff" * 13, 500)]
    keys = _index_keys(rnd, 4000, wide)
    new.put("index", ((k, b"") for k in keys))
    old.put("index", ((k, b"") for k in keys))
    prefixes = sorted({k[:5] for k in keys[::7]}) + [b"\xff\xff\xff\xff\xff", b"\xff\xff\xff", b"\x00\x00\x00\x00\x00",
                                                        b"\x42\x42\x42\x42\x01", b"\x42\x42", b"\x42\x42",
                                                        b"\x10\x20\x30\x40\x05", b"\xff", b""]
    rnd.shuffle(prefixes)
    want = old.scan("index", prefixes, values=False)  # the reference, in memory
    assert [[k for k, _ in items] for items in want] == [[k for k in keys if k.startswith(p)] for p in prefixes]
    assert new.scan("index", prefixes, values=False) == want
    for per_call in (1, 3, 10_000):  # more ranges than one call carries: several calls
        with open_store(f"{new.url}&ranges_per_call={per_call}") as store:
            assert store.scan("index", prefixes, values=False) == want
            index_prefixes = [p for p in prefixes if 5 <= len(p) <= 13][:40]  # what the index scans
            cells = store.scan_cells("index", index_prefixes)
            assert [cell_keys(c, p) for c, p in zip(cells, index_prefixes)] == \
                [[k for k in keys if k.startswith(p)] for p in index_prefixes]
    assert new.scan("index", [b""], values=False) == [[(k, b"") for k in keys]]
    assert new.scan("index", [], values=False) == []
    longer = [keys[5][:15], keys[5][:13] + b"w", keys[5]]  # prefixes that reach into the qualifier
    assert new.scan("index", longer, values=False) == old.scan("index", longer, values=False)


def test_scan_calls_continue_past_their_row_limit(stores):
    new, _ = stores
    rnd = random.Random(12)
    keys = _index_keys(rnd, 500, [(b"\x80" * 13, 2000)])
    new.put("index", ((k, b"") for k in keys))
    table = new.tables.name("index")
    ranges = merge_ranges([prefix_range(k[:3], 13) for k in keys[::3]])
    expected = sorted({k[:13] for k in keys if any(a <= k[:13] < b for a, b in ranges)})
    for rows in (1, 2, 7, 100_000):
        results = new.gateways.run2(lambda channel, rows=rows: thrift2.scan_ranges(channel, table, ranges, b"d",
                                                                                   rows_per_call=rows))
        assert results.rows == expected
        wide = results.rows.index(b"\x80" * 13)
        assert (results.cell_rows == wide).sum() == 2000  # a wide row comes back whole


def test_lookups_equal_brute_force_and_the_embedded_store(hbase_url, tmp_path):
    rnd = random.Random(5)
    values = [rnd.getrandbits(64) for _ in range(4000)]
    values += [v ^ (1 << rnd.randrange(64)) for v in values[:300]]  # near-duplicates
    values += [values[7]] * 40  # one fingerprint, many documents: a wide row per flag
    docs = [Document(f"id{i}", v) for i, v in enumerate(values)]
    queries = [v ^ (1 << rnd.randrange(64)) ^ (1 << rnd.randrange(64)) for v in values[:400]]
    queries += [rnd.getrandbits(64) for _ in range(100)] + [values[7]]
    fps = np.array(values, dtype=np.uint64)
    for scheme in (4, 5):
        url = hbase_store_url(hbase_url) + "&ranges_per_call=50"
        hbase = Index.create(open_store(url), scheme, 3)
        embedded = Index.create(open_store(str(tmp_path / f"e{scheme}"), create=True), scheme, 3)
        try:
            hbase.add_many(docs)
            embedded.add_many(docs)
            batched = hbase.query_many(queries)
            assert batched == embedded.query_many(queries)
            singles = [hbase.query(q) for q in queries[:60]] + [hbase.query(queries[-1])]
            assert singles == batched[:60] + [batched[-1]]
            for q, matches in zip(queries, batched):
                distances = np.bitwise_count(fps ^ np.uint64(q))
                truth = sorted((f"id{i}", int(distances[i])) for i in np.flatnonzero(distances <= 3))
                assert sorted((m.id, m.distance) for m in matches) == truth
            assert len(batched[-1]) >= 41  # the 41 copies, and near-duplicates of them
            got = hbase.get(["id7", "nope", "id3"])  # the documents of matches: one multi-get
            assert [d and (d.id, d.simhash) for d in got] == [("id7", values[7]), None, ("id3", values[3])]
        finally:
            hbase.store.drop()
            hbase.store.close()
            embedded.store.close()


def test_bulk_puts_land_every_cell_once(hbase_url):
    url = hbase_store_url(hbase_url) + "&wal=false&batch_size=7&pool_size=3"
    store = open_store(url)
    try:
        index = Index.create(store, 5, 3)
        rnd = random.Random(3)
        docs = [Document(f"w{i}", rnd.getrandbits(64)) for i in range(700)]
        index.add_many(docs)
        index.add_many(docs[:100])  # again: idempotent
        stats = index.stats()
        assert (stats["documents"], stats["index_cells"]) == (700, 7000)
        keys = [k for k, _ in store.iterate("index", page=333)]  # every key, paged
        assert len(keys) == len(set(keys)) == 7000
        assert sorted(k[13:] for k in keys) == sorted(d.id.encode() for d in docs for _ in range(10))
        index.delete(["w1", "w2"])
        assert index.stats()["index_cells"] == 6980
        assert index.get(["w1", "w3"])[0] is None
    finally:
        store.drop()
        store.close()


def test_iterate_pages_through_thrift2(stores):
    new, old = stores
    keys = _index_keys(random.Random(8), 300, [(b"\x33" * 13, 40)])
    new.put("index", ((k, b"") for k in keys))
    old.put("index", ((k, b"") for k in keys))
    for page in (1, 7, 1000):
        assert [k for k, _ in new.iterate("index", page=page)] == keys
        assert [k for k, _ in new.iterate("index", b"\x33", page=page)] == [k for k in keys if k[:1] == b"\x33"]
    assert new.scan_range("index", keys[10], keys[20], 5) == old.scan_range("index", keys[10], keys[20], 5)


def test_every_call_of_the_shipped_idl_answers(hbase_url, monkeypatch):
    """hbase_thrift2.thrift ships cut to the calls dedup-hbase makes: the store's own code
    (create, put, get, scan, delete, the fleet locks with a lease taken over) makes every one
    of them against the real gateway, and each answers; getTableDescriptor, which only the
    tests call, too."""
    made = []
    call, call_raw, call_results = Channel.call, Channel.call_raw, Channel.call_results
    monkeypatch.setattr(Channel, "call", lambda self, method, *args: (made.append(method), call(self, method, *args))[1])
    monkeypatch.setattr(Channel, "call_raw", lambda self, method, message: (made.append(method),
                                                                            call_raw(self, method, message))[1])
    monkeypatch.setattr(Channel, "call_results", lambda self, method, message: (made.append(method),
                                                                                call_results(self, method, message))[1])
    url = hbase_store_url(hbase_url) + "&lease=1"
    index = Index.create(open_store(url), 4, 3)
    try:
        index.add_many([Document("a", 1), Document("b", 2)])
        assert [m.id for m in index.query(1, 0)] == ["a"]
        assert [d.id for d in index.get(["b"])] == ["b"]
        index.delete(["b"])
        holder, taker = index.store.fleet_locks(), open_store(url).fleet_locks()
        held = holder.held([b"lock1"])
        held.__enter__()  # held and never renewed: the other takes it over after a lease
        with taker.held([b"lock1"]):
            assert taker.counters["taken_over"] == 1
            held.__exit__(None, None, None)  # finds its lease taken over
            assert holder.counters["lost"] == 1
        name = idl().TTableName(ns=b"default", qualifier=index.store.tables.name("index"))
        assert Channel(index.store.host, index.store.admin_port).call("getTableDescriptor", name).columns
    finally:
        index.store.drop()
        index.store.close()
    assert set(made) == set(idl().THBaseService.thrift_services)


def test_a_table_made_between_the_check_and_the_creation_is_left_as_it_is(stores, monkeypatch):
    """The race of an ``init`` with the creation of an earlier one that stopped waiting for the
    master (the Thrift2 gateway goes on retrying it, and it lands when the master is back): the
    tables are there, every check said they are not; HBase's answer, TableExistsException, is not
    an error, and what the tables hold stays."""
    from dedup_hbase.index.schema import load_schema
    new, _ = stores
    new.put("index", [(b"k" * 13 + b"doc", b"v")])
    real = Channel.call
    monkeypatch.setattr(Channel, "call", lambda self, method, *args:
                        False if method == "tableExists" else real(self, method, *args))
    new.create(load_schema())  # every createTable answered TableExistsException
    monkeypatch.undo()
    assert new.exists()
    assert new.scan("index", [b"k" * 13]) == [[(b"k" * 13 + b"doc", b"v")]]
