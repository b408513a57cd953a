"""How the embedded store keeps the index table: one packed record per scan prefix.

The logical table is the design's wide-row layout, bit for bit: row key = segment(4) +
flag(1) + simhash(8), one column per document id, no value; ``scan`` returns exactly those
keys. Physically RocksDB holds the cells of one 5-byte scan prefix in one record (records.py),
much as HBase packs rows into HFile blocks: a lookup reads 4 records (4-split) instead of
iterating ~4N/65536 keys one Python call each (docs/store-engine.md).

Two column families:

* ``<table>``: the merged records, key = the 5-byte prefix.
* ``<table>.runs``: cells written since the last merge, as runs. Key = the first
  byte of the prefix + an 8-byte write number; value = every cell of that write whose
  prefix starts with that byte (``CellBatch.encode``). A write of 100,000 documents is
  then 256 records, not one per touched prefix, and never reads.

``merge`` folds the runs into the merged records, rewriting only the records of the
prefixes the runs touch, in slices of the key space to bound memory. It runs before any
read (a lookup then reads only merged records, one point get per flag), on ``close`` and
on ``compact``; never in the middle of writes. A write-only bulk load therefore rewrites
every record once, at the end, however many batches it had; a load that looks up every
batch (``--skip-near-dups``) merges each batch once, at a cost proportional to the records
it touches; the first lookup after a big write waits for its merge. A merge cut off by a
crash is harmless: merging is a set union, and the runs go only after it (its writes skip the
write-ahead log and are flushed to table files before the runs are dropped).

A small write (at most ``DIRECT_CELLS`` cells: a few documents, as an online service adds
them) when no runs are pending skips the runs: it reads the records it touches, merges and
rewrites them in one atomic write with the log on, so lookups after it have nothing to merge.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from rocksdict import WriteBatch, WriteOptions

from ...errors import StoreError
from .batch import SMALL_MERGE_CELLS, CellBatch, merge_small
from .records import MAX_QUALIFIER_BYTES, REST_BYTES, PackedCells, splice
from .rocks import get_many, read_once, total_order

RUN_KEY_PREFIX = 1  # runs are partitioned by the first byte of the scan prefix
DIRECT_CELLS = 1024  # writes of at most this many cells (about 250 documents), no runs pending: no runs
_MERGE_CHUNK_CELLS = 500_000  # cells (runs + merged) merged per slice: bounds memory ...
_MERGE_CHUNK_BYTES = 12 << 20  # ... and their bytes, for wide cells (a short text kept in each: about 230 bytes)
_READ_PER_GET = 4  # records read in a pass cost about what one point get costs
_SPLICE_CELLS = 8192  # a record of this many cells or more gets a few new cells by a splice, not a sort
_SPLICE_SHARE = 8  # ... when at most one in this many of its cells are new
_UNCACHED_BYTES = 1 << 20  # a record this big (tens of thousands of copies of one text) is read past the cache
_STATE = struct.Struct(">QQQ")  # last write number, merged cells, cells in runs
_EMPTY = PackedCells.empty()
_NO_LOG = WriteOptions()
_NO_LOG.disable_wal = True  # merge writes: the runs they come from stay until they are flushed


class PackedTable:
    """One packed table of a RocksDB database (see the module docstring)."""

    def __init__(self, db, name: str, prefix_bytes: int, runs_options, read_only: bool = False) -> None:
        """``runs_options``: the RocksDB options of the runs family, which a merge drops
        and creates again (a missing runs family is an empty one: open the database with
        ``create_missing_column_families``). ``read_only``: ``db`` is a read-only snapshot;
        pending runs are merged in memory, not written."""
        self.name, self.read_only = name, read_only
        self._overlay: dict[bytes, bytes] | None = None  # read-only: records merged in memory
        self.prefix_bytes = prefix_bytes
        self.row_bytes = prefix_bytes + REST_BYTES
        self._db = db
        self._merged = db.get_column_family(name)
        self._merged_handle = db.get_column_family_handle(name)
        self._runs_name, self._runs_options = name + ".runs", runs_options
        self._runs = db.get_column_family(self._runs_name)
        self._runs_handle = db.get_column_family_handle(self._runs_name)
        self._default_handle = db.get_column_family_handle("default")
        self._state_key = f"{name}.state".encode()
        raw = db.get(self._state_key)
        self._seq, self.merged_cells, self.run_cells = _STATE.unpack(raw) if raw else (0, 0, 0)
        # prefixes whose record this process wrote at _UNCACHED_BYTES or more: a load that
        # looks up every batch rewrites such a record every batch, and the block cache would
        # fill with its dead versions (one block each); a lookup reads them past the cache
        self._uncached: set[bytes] = set()
        self.spliced = 0  # records this process merged new cells into by a splice (_splice_big)

    @staticmethod
    def families(name: str) -> list[str]:
        """The column families of packed table ``name``."""
        return [name, name + ".runs"]

    def _prefixes(self, pids: np.ndarray) -> list[bytes]:
        """Integer prefixes as ``prefix_bytes``-long big-endian keys."""
        size = self.prefix_bytes
        table = np.ascontiguousarray(pids.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - size:])
        return table.view(f"V{size}").ravel().tolist()  # void items become bytes, zeros kept

    # -- writing ---------------------------------------------------------------

    def put_cells(self, batch: CellBatch) -> None:
        """Add cells. A small write with no runs pending goes straight into the merged
        records (read, merge, rewrite the records it touches, in one logged atomic write), so
        the next lookup has nothing to merge: the online path, a few documents per call. A
        bigger one is added as one run per first prefix byte: one atomic write, no read, no
        sort beyond that partitioning (the merge sorts)."""
        if not len(batch):
            return
        if int(batch.qlens.max()) > MAX_QUALIFIER_BYTES:
            raise StoreError(f"table {self.name}: a qualifier is at most {MAX_QUALIFIER_BYTES} bytes, "
                             f"not {int(batch.qlens.max())}")
        if not self.run_cells and len(batch) <= DIRECT_CELLS:
            self._fold(batch, logged=True, is_sorted=False)
            return
        parts = (batch.pids >> np.uint64(8 * (self.prefix_bytes - RUN_KEY_PREFIX))).astype(f"u{RUN_KEY_PREFIX}")
        order = np.argsort(parts, kind="stable")  # a radix sort; the merge sorts the cells
        batch, parts = batch.take(order), parts[order]
        bounds = np.flatnonzero(np.diff(parts)) + 1
        starts, ends = [0, *bounds.tolist()], [*bounds.tolist(), len(batch)]
        qoff = np.concatenate(([0], np.cumsum(batch.qlens)))
        self._seq += 1
        write = WriteBatch(raw_mode=True)
        for lo, hi in zip(starts, ends):
            key = int(parts[lo]).to_bytes(RUN_KEY_PREFIX, "big") + self._seq.to_bytes(8, "big")
            write.put(key, batch.select(lo, hi, qoff).encode(), self._runs_handle)
        self.run_cells += len(batch)
        self._save_state(write)
        self._db.write(write)

    def put(self, items: Iterable[tuple[bytes, bytes]]) -> None:
        rows, quals = [], []
        for key, value in items:
            if len(key) < self.row_bytes:
                raise StoreError(f"table {self.name}: a key is a {self.row_bytes}-byte row key plus a "
                                 f"qualifier, not {len(key)} bytes")
            if value:
                raise StoreError(f"table {self.name} keeps keys only; got a {len(value)}-byte value")
            rows.append(key[:self.row_bytes])
            quals.append(key[self.row_bytes:])
        if rows:
            self.put_cells(CellBatch.from_rows(b"".join(rows), quals, self.prefix_bytes))

    def delete(self, keys: Iterable[bytes]) -> None:
        """Remove cells: merges pending runs, then rewrites the records concerned."""
        doomed: dict[bytes, set] = defaultdict(set)
        for key in keys:
            if len(key) >= self.row_bytes:
                doomed[key[:self.prefix_bytes]].add(
                    (int.from_bytes(key[:self.prefix_bytes], "big"),
                     int.from_bytes(key[self.prefix_bytes:self.row_bytes], "big"), key[self.row_bytes:]))
        if not doomed:
            return
        self.merge()
        prefixes = sorted(doomed)
        write = WriteBatch(raw_mode=True)
        for prefix, record in zip(prefixes, self._merged.get(prefixes)):
            if record is None:
                continue
            before = CellBatch.from_records([int.from_bytes(prefix, "big")], [record])
            after = before.without(doomed[prefix])
            self.merged_cells -= len(before) - len(after)
            if len(after):
                write.put(prefix, after.pack()[1][0], self._merged_handle)
            else:
                write.delete(prefix, self._merged_handle)
        self._save_state(write)
        self._db.write(write)

    def merge(self) -> None:
        """Fold every run into the merged records, then delete the runs (read-only: merge
        them in memory, once: the snapshot does not change)."""
        if not self.run_cells:  # exact: saved in the same atomic write as the runs
            return
        if self.read_only:
            if self._overlay is None:
                self._overlay = self._merge_in_memory()
            return
        # A slice of whole partitions at a time; its cost is its runs plus the merged cells
        # of its partitions (estimated as an even share of all of them).
        # A slice's bytes: its runs' own, and its merged cells' at the runs' bytes a cell.
        per_part = self.merged_cells / 256 ** RUN_KEY_PREFIX
        runs, cost, size, last = [], 0.0, 0.0, None
        once = total_order()
        once.fill_cache(False)  # the runs are read once and deleted: keep them out of the block cache
        for key, record in self._runs.items(read_opt=once):
            part = key[:RUN_KEY_PREFIX]
            batch = CellBatch.decode(record)
            if part != last:
                if cost >= _MERGE_CHUNK_CELLS or size >= _MERGE_CHUNK_BYTES:
                    self._merge_runs(runs)
                    runs, cost, size = [], 0.0, 0.0
                cost += per_part
                size += per_part * len(record) / max(len(batch), 1)
                last = part
            runs.append(batch)
            cost += len(batch)
            size += len(record)
        self._merge_runs(runs)
        self._drop_runs()

    def _merge_in_memory(self) -> dict[bytes, bytes]:
        """The records the pending runs would give, by prefix, without writing them."""
        runs = [CellBatch.decode(record) for _, record in self._runs.items(read_opt=total_order())]
        if not runs:
            return {}
        fresh = CellBatch.concat(runs).sorted_unique()
        old_pids, old_records = self._records_of(fresh.prefixes())
        merged = (CellBatch.concat([CellBatch.from_records(old_pids, old_records), fresh]).sorted_unique(runs=True)
                  if old_records else fresh)
        pids, records = merged.pack()
        return dict(zip(self._prefixes(pids), records))

    def _records(self, from_key: bytes | None = None):
        """(prefix, record) of every merged record from ``from_key`` on, in key order, with
        the in-memory merge of a read-only snapshot in place of the stored records."""
        stored = self._merged.items(read_opt=total_order(), **({} if from_key is None else {"from_key": from_key}))
        if not self._overlay:
            yield from stored
            return
        extra = sorted(item for item in self._overlay.items() if from_key is None or item[0] >= from_key)
        i = 0
        for prefix, record in stored:
            while i < len(extra) and extra[i][0] < prefix:
                yield extra[i]
                i += 1
            if i < len(extra) and extra[i][0] == prefix:
                yield extra[i]
                i += 1
            else:
                yield prefix, record
        yield from extra[i:]

    def _drop_runs(self) -> None:
        """Delete every run: drop the runs family and create it again, which frees its
        files at once (a range delete + compaction would rewrite them).
        The merged records are flushed to table files first, so the runs go only after them."""
        self._merged.flush()  # the merged records (written without the log) to table files,
        self._db.flush()  # and the state with them
        del self._runs, self._runs_handle
        self._db.drop_column_family(self._runs_name)
        self._runs = self._db.create_column_family(self._runs_name, self._runs_options)
        self._runs_handle = self._db.get_column_family_handle(self._runs_name)
        self.run_cells = 0
        write = WriteBatch(raw_mode=True)
        self._save_state(write)
        self._db.write(write)

    def _merge_runs(self, runs: list[CellBatch]) -> None:
        if runs:
            self._fold(CellBatch.concat(runs).sorted_unique(), logged=False)

    def _fold(self, fresh: CellBatch, logged: bool, is_sorted: bool = True) -> None:
        """Merge cells (sorted and unique unless ``is_sorted`` is False) into the records of
        their prefixes, in one atomic write: with the write-ahead log, or without it when the
        caller makes it durable (a merge flushes before the runs it came from are dropped). A
        merge of a few cells (an online add) runs in Python (``merge_small``), a bigger one in
        numpy; a few cells into a big record are spliced in (``_splice_big``)."""
        old_pids, old_records = self._records_of(fresh.prefixes() if is_sorted else np.unique(fresh.pids))
        spliced, fresh, old_pids, old_records = self._splice_big(fresh, is_sorted, old_pids, old_records)
        before = sum(len(PackedCells(record)) for record in old_records)
        if not len(fresh):
            prefixes, records, after = [], [], 0
        elif before + len(fresh) <= SMALL_MERGE_CELLS:
            pids, records, after = merge_small(old_pids, old_records, fresh)
            prefixes = [pid.to_bytes(self.prefix_bytes, "big") for pid in pids]
        else:
            fresh = fresh if is_sorted else fresh.sorted_unique()
            merged = CellBatch.concat([CellBatch.from_records(old_pids, old_records), fresh]).sorted_unique(runs=True) \
                if old_records else fresh
            merged_pids, records = merged.pack()
            prefixes, after = self._prefixes(merged_pids), len(merged)
        write = WriteBatch(raw_mode=True)
        for prefix, record in [*zip(prefixes, records), *((prefix, record) for prefix, record, _ in spliced)]:
            write.put(prefix, record, self._merged_handle)
            if len(record) >= _UNCACHED_BYTES:
                self._uncached.add(prefix)
        self.merged_cells += after - before + sum(added for _, _, added in spliced)
        self._save_state(write)
        if logged:
            self._db.write(write)
        else:
            self._db.write(write, write_opt=_NO_LOG)

    def _splice_big(self, fresh: CellBatch, is_sorted: bool, old_pids: list[int], old_records: list[bytes]):
        """The records of at least ``_SPLICE_CELLS`` cells that get at most one new cell in
        ``_SPLICE_SHARE`` of theirs, with their new cells put in by ``records.splice``:
        (their (prefix, record, cells added)), the other new cells (sorted and unique if
        ``is_sorted``), the other old records' prefixes and records. Many copies of one text
        loaded a batch at a time then cost a copy of their record per batch, not its sort."""
        cells_in = [len(PackedCells(record)) for record in old_records]
        big = [i for i, n in enumerate(cells_in) if n >= _SPLICE_CELLS]
        if not big:
            return [], fresh, old_pids, old_records
        fresh = fresh if is_sorted else fresh.sorted_unique()
        big_pids = np.array([old_pids[i] for i in big], dtype=np.uint64)
        lows, highs = (np.searchsorted(fresh.pids, big_pids, side).tolist() for side in ("left", "right"))
        qoff = np.concatenate(([0], np.cumsum(fresh.qlens)))
        spliced, taken, dropped = [], np.zeros(len(fresh), dtype=bool), set()
        for i, lo, hi in zip(big, lows, highs):
            if (hi - lo) * _SPLICE_SHARE > cells_in[i]:
                continue
            cells = fresh.select(lo, hi, qoff)
            ends = np.cumsum(cells.qlens).tolist()
            raw = cells.quals.tobytes()
            record, added = splice(old_records[i], cells.rests.tolist(),
                                   [raw[a:b] for a, b in zip([0, *ends], ends)])
            spliced.append((old_pids[i].to_bytes(self.prefix_bytes, "big"), record, added))
            taken[lo:hi] = True
            dropped.add(i)
            self.spliced += 1
        if not dropped:
            return [], fresh, old_pids, old_records
        rest = [i for i in range(len(old_records)) if i not in dropped]
        return spliced, fresh.take(np.flatnonzero(~taken)), [old_pids[i] for i in rest], [old_records[i] for i in rest]

    def _records_of(self, pids: np.ndarray) -> tuple[list[int], list[bytes]]:
        """The merged records that exist among prefixes ``pids`` (sorted, unique).

        One point get per prefix, or one pass over the records between the first and the
        last prefix when RocksDB estimates there are few of them (a bulk load into a new
        or small index: most prefixes have no record yet, and a pass costs less than a get
        per prefix)."""
        lo, hi = int(pids[0]), int(pids[-1])
        estimate = self._merged.property_int_value("rocksdb.estimate-num-keys") or 0
        if estimate * (hi - lo + 1) / 256 ** self.prefix_bytes > _READ_PER_GET * len(pids):
            found = zip(pids.tolist(), get_many(self._merged, self._prefixes(pids), read_once()))
            present = [(pid, record) for pid, record in found if record is not None]
            return [pid for pid, _ in present], [record for _, record in present]
        in_range: list[tuple[int, bytes]] = []
        once = total_order()
        once.fill_cache(False)  # these records are about to be replaced
        for key, record in self._merged.items(from_key=lo.to_bytes(self.prefix_bytes, "big"), read_opt=once):
            pid = int.from_bytes(key, "big")
            if pid > hi:
                break
            in_range.append((pid, record))
        if not in_range:
            return [], []
        wanted = np.isin(np.array([pid for pid, _ in in_range], dtype=np.uint64), pids).tolist()
        present = [item for item, keep in zip(in_range, wanted) if keep]
        return [pid for pid, _ in present], [record for _, record in present]

    def _save_state(self, write: WriteBatch) -> None:
        write.put(self._state_key, _STATE.pack(self._seq, max(self.merged_cells, 0), self.run_cells),
                  self._default_handle)

    # -- reading ---------------------------------------------------------------

    def scan_cells(self, prefixes: Sequence[bytes]) -> list[PackedCells]:
        """The cells under each ``prefix_bytes``-long prefix (merges pending runs first)."""
        if {*map(len, prefixes)} - {self.prefix_bytes}:
            wrong = next(len(p) for p in prefixes if len(p) != self.prefix_bytes)
            raise StoreError(f"table {self.name}: a cell scan takes {self.prefix_bytes}-byte prefixes, not {wrong} bytes")
        self.merge()
        big = self._uncached.intersection(prefixes)
        records = self._merged.get(list(prefixes)) if not big else \
            [self._merged.get(p, read_opt=read_once() if p in big else None) for p in prefixes]
        if self._overlay:
            records = [self._overlay.get(prefix, record) for prefix, record in zip(prefixes, records)]
        return [_EMPTY if record is None else PackedCells(record) for record in records]

    def iterate_cells(self):
        """(prefix, Cells) of every prefix, in key order (merges pending runs first)."""
        self.merge()
        for prefix, record in self._records():
            yield prefix, PackedCells(record)

    def scan(self, prefix: bytes) -> list[bytes]:
        """Every key starting with ``prefix``, in key order (merges pending runs first)."""
        if len(prefix) >= self.prefix_bytes:
            (cells,) = self.scan_cells([prefix[:self.prefix_bytes]])
            return [k for k in cells.keys(prefix[:self.prefix_bytes]) if k.startswith(prefix)]
        stop = prefix.rstrip(b"\xff")
        return self.scan_range(prefix, stop[:-1] + bytes([stop[-1] + 1]) if stop else None, None)

    def scan_range(self, start: bytes, stop: bytes | None, limit: int | None) -> list[bytes]:
        """Keys with ``start <= key < stop``, at most ``limit`` of them, in key order
        (merges pending runs first)."""
        self.merge()
        out: list[bytes] = []
        for prefix, record in self._records(start[:self.prefix_bytes]):
            if stop is not None and prefix >= stop:
                break
            for key in PackedCells(record).keys(prefix):
                if key < start:
                    continue
                if (stop is not None and key >= stop) or (limit is not None and len(out) >= limit):
                    return out
                out.append(key)
        return out

