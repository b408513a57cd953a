"""The embedded store's packed index: records per scan prefix, runs, merges.

The store contract suite proves the logical table; these tests prove what is particular to
the packing: the record codec, exact key order with tied sort keys, duplicates written twice,
lookups while unmerged runs exist, merges in the middle of a load, and deletes."""

import json
import random
import signal
import subprocess
import sys

import numpy as np
import pytest

from dedup_hbase import Document, Index, Scheme, open_store
from dedup_hbase.errors import StoreError
from dedup_hbase.stores.local import batch as batch_module
from dedup_hbase.stores.local import packed
from dedup_hbase.stores.local import records as records_module
from dedup_hbase.stores.local.batch import CellBatch
from dedup_hbase.stores.local.records import PackedCells


def batch_of(keys):
    return CellBatch.from_rows(b"".join(k[:13] for k in keys), [k[13:] for k in keys], 5)


def random_keys(rnd, count, ids=lambda rnd: f"d{rnd.randint(0, 99)}"):
    prefixes = [bytes.fromhex(h) for h in ("0001000001", "1234000002", "ffff000004", "8000000003")]
    keys = set()
    for _ in range(count):
        prefix = rnd.choice(prefixes)
        keys.add(prefix + rnd.getrandbits(64).to_bytes(8, "big") + ids(rnd).encode())
        # remainders that differ only in their low bits: they tie on the 64-bit sort key
        keys.add(prefix + rnd.getrandbits(12).to_bytes(8, "big") + ids(rnd).encode())
    # one row, several columns (identical fingerprints)
    keys |= {bytes.fromhex("0001000001") + bytes(8) + q
             for q in (b"b", b"a", b"ab", b"\x00", b"a\x00", b"a\x00\x00", b"\x00a", b"\xff")}  # NULs: see _untie
    return keys


@pytest.mark.parametrize("ids", [lambda rnd: f"d{rnd.randint(0, 99):02d}",  # one width
                                 lambda rnd: "x" * rnd.randint(1, 30),  # varied widths
                                 lambda rnd: "y" * (300 if rnd.random() < 0.01 else rnd.randint(1, 2))],
                         ids=["fixed-width", "variable-width", "few-long-ids"])
@pytest.mark.parametrize("pass_cells", [1 << 20, 7])
@pytest.mark.parametrize("big_record", [1, 10**9], ids=["joined", "gathered"])
@pytest.mark.parametrize("pad_bytes", [256 << 20, 0], ids=["ties-in-numpy", "ties-in-python"])
def test_records_round_trip_in_key_order_without_repeats(ids, pass_cells, big_record, pad_bytes, monkeypatch):
    monkeypatch.setattr(batch_module, "_PACK_CELLS", pass_cells)  # 7: many numpy passes
    monkeypatch.setattr(batch_module, "_UNTIE_PAD_BYTES", pad_bytes)  # both ways of ordering tied cells
    monkeypatch.setattr(batch_module, "_BIG_RECORD", big_record)  # both ways of cutting records
    rnd = random.Random(3)
    keys = random_keys(rnd, 1500, ids)
    shuffled = list(keys) + rnd.sample(sorted(keys), 300)  # 300 cells written twice
    rnd.shuffle(shuffled)
    pids, records = batch_of(shuffled).sorted_unique().pack()
    assert len(records) == 4
    got = [key for pid, record in zip(pids.tolist(), records)
           for key in PackedCells(record).keys(pid.to_bytes(5, "big"))]
    assert got == sorted(keys)
    decoded = CellBatch.from_records(pids.tolist(), records)
    assert [c.tolist() for c in decoded] == [c.tolist() for c in batch_of(sorted(keys))]
    # the same cells from two sorted runs merge to the same records
    half = sorted(keys)
    runs = CellBatch.concat([batch_of(half[::2]), batch_of(half[1::2]), batch_of(half[:50])])
    assert runs.sorted_unique(runs=True).pack()[1] == records


def test_record_layout_is_the_documented_one():
    row = bytes.fromhex("0001000001")
    variable = [row + (5).to_bytes(8, "big") + b"doc-1", row + (7).to_bytes(8, "big") + b"d2"]
    (record,) = batch_of(variable).sorted_unique().pack()[1]
    assert record == (b"\x02\x00\x00\x00" + b"\xff\xff"  # two cells; qualifiers of varied length
                      + (5).to_bytes(8, "big") + (7).to_bytes(8, "big")  # remainders
                      + (5).to_bytes(2, "little") + (2).to_bytes(2, "little")  # lengths of "doc-1", "d2"
                      + b"doc-1d2")
    cells = PackedCells(record)
    assert (len(cells), cells.rests.tolist()) == (2, [5, 7])
    assert [cells.qualifier(0), cells.qualifier(1)] == [b"doc-1", b"d2"]
    fixed = [row + (5).to_bytes(8, "big") + b"d1", row + (7).to_bytes(8, "big") + b"d2"]
    (record,) = batch_of(fixed).sorted_unique().pack()[1]
    assert record == (b"\x02\x00\x00\x00" + b"\x02\x00"  # two cells; every qualifier 2 bytes
                      + (5).to_bytes(8, "big") + (7).to_bytes(8, "big")
                      + b"dd12")  # byte planes: first bytes of both qualifiers, then second bytes
    assert [PackedCells(record).qualifier(1), PackedCells(record).qualifier(0)] == [b"d2", b"d1"]


@pytest.mark.parametrize("ids", [lambda rnd: f"d{rnd.randint(0, 99):02d}", lambda rnd: "x" * rnd.randint(0, 4),
                                 lambda rnd: rnd.choice(["", "a", "b\x00", "\x00", "ab"])],
                         ids=["fixed-width", "variable-width", "empty-and-nul"])
def test_small_merges_in_python_write_numpys_bytes(ids):
    """``merge_small`` (an online add's merge, in Python) gives the prefixes, records and cell
    count that ``from_records``, ``concat``, ``sorted_unique`` and ``pack`` give, on records of
    one to a few dozen cells, runs of one fingerprint, cells written again and in any order."""
    rnd = random.Random(17)
    for _ in range(300):
        keys = sorted(random_keys(rnd, rnd.randint(1, 12), ids))
        old = [k for k in keys if rnd.random() < 0.6]
        fresh = [k for k in keys if k not in old or rnd.random() < 0.2]  # some cells again
        fresh += [fresh[0]] if fresh else []  # one twice in the write itself
        rnd.shuffle(fresh)
        if not fresh:
            continue
        old_pids, old_records = (x.tolist() if i == 0 else x for i, x in enumerate(batch_of(old).sorted_unique().pack())) \
            if old else ([], [])
        got = batch_module.merge_small(old_pids, old_records, batch_of(fresh))
        merged = CellBatch.concat([CellBatch.from_records(old_pids, old_records), batch_of(fresh).sorted_unique()])
        merged = merged.sorted_unique(runs=True)
        pids, records = merged.pack()
        assert got == (pids.tolist(), records, len(merged))
        for record in records:  # and each record alone
            cells = PackedCells(record)
            assert records_module.encode_record(cells.rest_values(), [cells.qualifier(i) for i in range(len(cells))]) \
                == record


def test_qualifiers_of_varied_lengths_whose_total_looks_like_one_length_keep_their_bytes():
    """Lengths 2, 2, 1, 2, 3, 1, 3 make 14 bytes, as seven of 2 would: the cells are still
    gathered one by one (they were once cut as rows of 2 bytes, scrambling the ids)."""
    row = bytes.fromhex("0001000001") + bytes(8)
    keys = [row + q for q in (b"\x00a", b"ab", b"b", b"\x00a", b"d65", b"a", b"d30")]
    batch = batch_of(keys)
    assert sum(batch.qlens.tolist()) == len(keys) * 2
    cells = batch.sorted_unique()
    assert [k for k in PackedCells(cells.pack()[1][0]).keys(row[:5])] == sorted(set(keys))
    assert [batch.take(np.array([6, 0])).quals.tobytes()] == [b"d30\x00a"]


def test_without_removes_exactly_the_doomed_cells():
    keys = sorted(random_keys(random.Random(4), 300))
    doomed = set(keys[::7])
    left = batch_of(keys).without({(int.from_bytes(k[:5], "big"), int.from_bytes(k[5:13], "big"), k[13:])
                                   for k in doomed})
    pids, records = left.sorted_unique().pack()
    assert [k for p, r in zip(pids.tolist(), records) for k in PackedCells(r).keys(p.to_bytes(5, "big"))] == \
        [k for k in keys if k not in doomed]


def brute_force(fps: dict[str, int], q: int, k: int) -> list[tuple[int, str]]:
    return sorted(((v ^ q).bit_count(), doc) for doc, v in fps.items() if (v ^ q).bit_count() <= k)


_DYING_MERGE = """
import os, signal, sys
import numpy as np
from dedup_hbase import Document, Index, Scheme, open_store
from dedup_hbase.stores.local import packed

packed._MERGE_CHUNK_CELLS = 2000  # many slices
store = open_store(sys.argv[1], create=True)
index = Index.create(store, 4, 3)
values = np.random.default_rng(5).integers(0, 2**63, 20_000).tolist()
index.add_many([Document(f"d{i}", v) for i, v in enumerate(values)])
step, calls = getattr(packed.PackedTable, sys.argv[2]), []

def dying(self, *args):  # the step runs (the third time, for a merge slice), then the process dies
    step(self, *args)
    calls.append(1)
    if len(calls) == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)

setattr(packed.PackedTable, sys.argv[2], dying)
store.flush()
"""


@pytest.mark.parametrize("step, nth, runs_left", [("_merge_runs", 3, 4 * 20_000), ("_drop_runs", 1, 0)],
                         ids=["after-3-slices", "after-the-runs-are-dropped"])
def test_kill_9_in_the_middle_of_a_merge_loses_nothing(tmp_path, step, nth, runs_left):
    """A merge writes its records without the write-ahead log and drops the runs only after
    flushing them: killed in the middle or right after, the store reopens with every cell
    exactly once."""
    path = str(tmp_path / "s")
    died = subprocess.run([sys.executable, "-c", _DYING_MERGE, path, step, str(nth)], capture_output=True, text=True)
    assert died.returncode == -signal.SIGKILL, died.stderr
    values = np.random.default_rng(5).integers(0, 2**63, 20_000).tolist()
    expected = sorted(key + f"d{i}".encode() for i, v in enumerate(values) for key in Scheme(4, 1).row_keys(v))
    with open_store(path) as store:
        assert store._table("index").run_cells == runs_left
        assert [key for key, _ in store.iterate("index")] == expected
        assert Index.open(store).stats()["index_cells"] == 4 * 20_000


@pytest.mark.parametrize("uncached_bytes", [1 << 20, 200], ids=["cached", "big-records-past-the-cache"])
@pytest.mark.parametrize("splice_cells", [8192, 2], ids=["sorted-merges", "spliced-merges"])
@pytest.mark.parametrize("bound", ["cells", "bytes"], ids=["slices-by-cells", "slices-by-bytes"])
def test_lookups_exact_with_runs_before_and_after_merges(tmp_path, monkeypatch, uncached_bytes, splice_cells, bound):
    """Loads in many small batches (runs), lookups in the middle (which merge first),
    deletes, re-adds: every lookup equals brute force at every stage, single and batched;
    with every merge into a record of 2 cells or more a splice (``records.splice``) or none;
    merges in slices cut by their cells or by their bytes."""
    monkeypatch.setattr(packed, "_SPLICE_CELLS", splice_cells)
    monkeypatch.setattr(packed, "_SPLICE_SHARE", 1 if splice_cells == 2 else 8)
    monkeypatch.setattr(packed, "_MERGE_CHUNK_CELLS", 500 if bound == "cells" else 10**9)  # merges in many slices
    monkeypatch.setattr(packed, "_MERGE_CHUNK_BYTES", 10**12 if bound == "cells" else 10_000)
    slices, real = [], packed.PackedTable._merge_runs
    monkeypatch.setattr(packed.PackedTable, "_merge_runs", lambda self, runs: slices.append(len(runs)) or real(self, runs))
    monkeypatch.setattr(packed, "DIRECT_CELLS", 0)  # every write as runs
    monkeypatch.setattr(packed, "_UNCACHED_BYTES", uncached_bytes)  # 200: most records read past the cache
    rnd = random.Random(8)
    base = [rnd.getrandbits(64) for _ in range(300)]
    fps = {}
    for i in range(3000):  # near-duplicates of a few bases: many cells per row and prefix
        value = rnd.choice(base) if i % 3 else rnd.getrandbits(64)
        for bit in rnd.sample(range(64), rnd.randint(0, 4)):
            value ^= 1 << bit
        fps[f"doc{i:05d}"] = value
    queries = [rnd.choice(list(fps.values())) ^ (1 << rnd.randrange(64)) for _ in range(60)]
    queries += [rnd.getrandbits(64) for _ in range(60)]

    store = open_store(str(tmp_path / "s"), create=True)
    index = Index.create(store)
    table = store._table("index")

    def check(stage, indexed=fps):
        singles = [[(m.distance, m.id) for m in index.query(q)] for q in queries]
        batched = [[(m.distance, m.id) for m in ms] for ms in index.query_many(queries)]
        expected = [brute_force(indexed, q, 3) for q in queries]
        assert singles == expected, stage
        assert batched == expected, stage

    items = list(fps.items())
    for start in range(0, len(items), 250):
        index.add_many([Document(d, v) for d, v in items[start:start + 250]])
        assert table.run_cells > 0 and table.merged_cells == (4 * 1250 if start > 1000 else 0)
        if start == 1000:
            check("runs merged by the first lookup", dict(items[:1250]))
            assert table.run_cells == 0 and table.merged_cells == 4 * 1250
            assert len(slices) >= 5  # 5,000 cells of about 20 bytes: 10 slices of 500 or of 10,000 bytes
    check("loaded")
    assert bool(table._uncached) == (uncached_bytes == 200)  # the test reads both ways
    assert (table.spliced > 0) == (splice_cells == 2)  # and merges both ways
    index.add_many([Document(d, v) for d, v in items[:500]])  # written again: no duplicates
    gone = index.delete([d for d, _ in items[::5]])
    for d in gone:
        del fps[d]
    check("deleted")
    moved = {d: rnd.getrandbits(64) for d, _ in items[1:200:5]}
    index.add_many([Document(d, v) for d, v in moved.items()])
    fps.update(moved)
    check("re-added with new fingerprints")
    del table  # holds RocksDB column families, which keep the folder locked
    store.close()  # merges the runs
    with open_store(str(tmp_path / "s")) as store:
        index = Index.open(store)
        assert store._table("index").run_cells == 0
        check("reopened")
        cells = sum(1 for _ in store.iterate("index"))
        assert cells == 4 * len(fps) == store._table("index").merged_cells


@pytest.mark.parametrize("small_merge", [0, 10**9, "splice"], ids=["numpy-merges", "python-merges", "spliced"])
def test_small_writes_go_straight_into_the_records_and_stay_exact(tmp_path, monkeypatch, small_merge):
    """Writes of at most DIRECT_CELLS cells with no runs pending are folded in at once (the
    online path; merged in numpy, in Python with ``merge_small``, or spliced into records of 2
    cells or more); with runs pending they join the runs. Lookups equal brute force throughout."""
    if small_merge == "splice":
        monkeypatch.setattr(packed, "_SPLICE_CELLS", 2)
        monkeypatch.setattr(packed, "_SPLICE_SHARE", 1)
    else:
        monkeypatch.setattr(packed, "SMALL_MERGE_CELLS", small_merge)
    rnd = random.Random(12)
    base = [rnd.getrandbits(64) for _ in range(50)]
    fps = {f"d{i:04d}": (rnd.choice(base) ^ (1 << rnd.randrange(64))) if i % 2 else rnd.getrandbits(64)
           for i in range(2400)}
    items = list(fps.items())
    queries = [v ^ (1 << rnd.randrange(64)) for v in rnd.sample(list(fps.values()), 40)] + base[:10]
    store = open_store(str(tmp_path / "s"), create=True)
    index = Index.create(store)
    table = store._table("index")

    def check(indexed):
        expected = [brute_force(indexed, q, 3) for q in queries]
        assert [[(m.distance, m.id) for m in index.query(q)] for q in queries] == expected
        assert [[(m.distance, m.id) for m in ms] for ms in index.query_many(queries)] == expected

    small = packed.DIRECT_CELLS // 4  # documents of the 4-split per direct write
    step = small // 3
    for start in range(0, 1200, step):
        index.add_many([Document(d, v) for d, v in items[start:min(start + step, 1200)]])
        assert table.run_cells == 0 and table.merged_cells == 4 * min(start + step, 1200)
    check(dict(items[:1200]))
    index.add_many([Document(d, v) for d, v in items[1200:1200 + small + 1]])  # one cell too many: runs
    assert table.run_cells == 4 * (small + 1)
    index.add_many([Document(d, v) for d, v in items[1200 + small + 1:2400]][:10])  # runs pending: runs
    assert table.run_cells == 4 * (small + 11)
    check(dict(items[:1200 + small + 11]))  # merged first
    assert table.run_cells == 0
    index.add_many([Document(d, v) for d, v in items[:5]])  # the same cells again: nothing doubled
    assert table.merged_cells == 4 * (1200 + small + 11)
    del table
    store.close()


DIRECT_WRITER = """
import random, sys
from dedup_hbase import Document, Index, open_store
store = open_store(sys.argv[1])
index = Index.open(store)
rnd = random.Random(5)
for batch in range(10_000):
    index.add_many([Document(f"w{batch}-{i}", rnd.getrandbits(64)) for i in range(40)])
    print(batch, flush=True)
"""


def test_kill_9_during_small_writes_loses_no_acknowledged_write(tmp_path):
    path = str(tmp_path / "s")
    with open_store(path, create=True) as store:
        Index.create(store)
    writer = subprocess.Popen([sys.executable, "-c", DIRECT_WRITER, path], stdout=subprocess.PIPE, text=True)
    done = -1
    for line in writer.stdout:  # acknowledged writes
        done = int(line)
        if done == 60:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with open_store(path) as store:
        table = store._table("index")
        ids = {key[13:] for key, _ in store.iterate("index")}
        cells = sum(1 for _ in store.iterate("index"))
        assert {f"w{b}-{i}".encode() for b in range(done + 1) for i in range(40)} <= ids
        assert cells == table.merged_cells == 4 * len(ids) and table.run_cells == 0
        del table


def test_store_of_an_earlier_layout_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "old"
    with open_store(str(path), create=True) as store:
        Index.create(store)
    (path / "dedup-hbase-store").write_text(json.dumps({"index": 5, "docs": None, "meta": None}))
    with pytest.raises(StoreError, match="earlier dedup-hbase.*build the index again in a new folder"):
        Index.open(open_store(str(path)))


def test_index_table_refuses_values_and_short_keys(tmp_path):
    with open_store(str(tmp_path / "s"), create=True) as store:
        Index.create(store)
        with pytest.raises(StoreError, match="keeps keys only"):
            store.put("index", [(bytes(14), b"v")])
        with pytest.raises(StoreError, match="13-byte row key plus a qualifier, not 12 bytes"):
            store.put("index", [(bytes(12), b"")])
        with pytest.raises(StoreError, match="a qualifier is at most 65534 bytes, not 70000"):
            store.put("index", [(bytes(13) + b"q" * 70_000, b"")])


def test_size_on_disk_is_small(tmp_path):
    """The packed index with bottommost zstd: under 60 bytes per fingerprint (4-split)."""
    n = 200_000
    fps = np.random.default_rng(5).integers(0, 2**64, n, dtype=np.uint64).tolist()
    path = tmp_path / "s"
    with open_store(str(path), create=True) as store:
        index = Index.create(store)
        index.add_many([Document(f"doc-{i:07d}", v) for i, v in enumerate(fps)])
        store.compact()
        size = store._db.get_column_family("index").property_int_value("rocksdb.total-sst-files-size")
    assert size / n < 60


def test_a_load_keeps_a_bounded_write_ahead_log(tmp_path, monkeypatch):
    """The log files of a load stay near ``WAL_BYTES`` however much it writes: without the
    bound RocksDB kept every log until the end (the state in "default" never fills a
    memtable), 5 GB of a 10^7 load's 10 GB peak."""
    from dedup_hbase.stores.local import store as store_module

    monkeypatch.setattr(store_module, "WAL_BYTES", 1 << 20)
    path = tmp_path / "s"
    rng = np.random.default_rng(46)
    with open_store(str(path), create=True) as store:
        index = Index.create(store)
        for b in range(30):  # batches of 4,000 documents: 16,000 cells each, written as runs
            values = rng.integers(0, 2**64, 4_000, dtype=np.uint64).tolist()
            index.add_many([Document(f"doc-{b:02d}-{i:05d}", v) for i, v in enumerate(values)])
        logs = sum(f.stat().st_size for f in path.glob("*.log"))
        written = logs + sum(f.stat().st_size for f in path.glob("*.sst"))
        assert store._packed["index"].run_cells == 30 * 16_000  # all of it still in runs: nothing merged yet
    assert written > 12 << 20  # far more than the bound went through the log
    # without the bound, 17.5 MB of logs are kept here; with it, 1.3 MB on an idle machine, and up
    # to 5.0 MB seen in CI while the suite kept both cores busy (RocksDB frees a log only once the
    # flush it asked for has run in the background)
    assert logs < 8 << 20


@pytest.mark.parametrize("ids", [lambda rnd: f"d{rnd.randint(0, 99):02d}", lambda rnd: "x" * rnd.randint(0, 4),
                                 lambda rnd: rnd.choice(["", "a", "b\x00", "\x00", "ab"]),
                                 lambda rnd: rnd.choice(["", "\x00"])],
                         ids=["fixed-width", "variable-width", "empty-and-nul", "widths-0-and-1"])
def test_a_splice_into_a_big_record_writes_the_sorts_bytes(ids):
    """``records.splice`` (a few cells into a big record: the copies of one text) gives the
    record and cell count that decoding, sorting and packing give: runs of one remainder
    (new ids among old ones, before and after them), cells written again, widths that change
    the record from byte planes to lengths and back."""
    rnd = random.Random(23)
    prefix = bytes.fromhex("0001000001")
    for _ in range(200):
        rests = [rnd.choice([0, 7, 2**64 - 1, rnd.getrandbits(64)]) for _ in range(rnd.randint(1, 40))]
        keys = sorted({prefix + r.to_bytes(8, "big") + ids(rnd).encode() for r in rests})
        old = [k for k in keys if rnd.random() < 0.7] or keys[:1]
        fresh = sorted({k for k in keys if k not in old or rnd.random() < 0.2})
        (record,) = batch_of(old).sorted_unique().pack()[1]
        got, added = records_module.splice(record, [int.from_bytes(k[5:13], "big") for k in fresh],
                                           [k[13:] for k in fresh])
        (want,) = batch_of(sorted({*old, *fresh})).sorted_unique().pack()[1]
        assert (got, added) == (want, len(set(fresh) - set(old)))



def test_records_of_one_width_and_of_varied_widths_decode_together():
    """``from_records`` of records with byte planes and with lengths side by side (spans of
    varied-width qualifiers copied whole, planes gathered) gives each record's own cells."""
    rnd = random.Random(31)
    ids = [lambda rnd: f"d{rnd.randint(0, 99):02d}", lambda rnd: "x" * rnd.randint(0, 40)]
    keys = sorted({bytes.fromhex(f"00010000{p:02x}") + rnd.choice([3, rnd.getrandbits(64)]).to_bytes(8, "big")
                   + ids[p % 2](rnd).encode() for p in range(1, 9) for _ in range(rnd.randint(1, 30))})
    pids, records = batch_of(keys).sorted_unique().pack()
    assert {PackedCells(r)._width == records_module.VARIABLE_WIDTH for r in records} == {True, False}
    decoded = CellBatch.from_records(pids.tolist(), records)
    assert [c.tolist() for c in decoded] == [c.tolist() for c in batch_of(keys)]
