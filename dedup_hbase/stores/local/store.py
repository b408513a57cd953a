"""The embedded store: RocksDB (through rocksdict) in a folder, one column family per table.

Why RocksDB (docs/store-engine.md has the measurements): smallest on disk (zstd), atomic
write batches and a write-ahead log, so a process killed in the middle of a write reopens
with every batch either whole or absent.

The index table is packed: one record per 5-byte scan prefix (packed.py, records.py), so a
lookup reads 4 records (4-split) rather than iterating every candidate key through Python.
The logical table, what ``scan`` and ``iterate`` return, is the design's key layout bit for
bit; nothing outside this package sees the packing.

One writer process at a time: RocksDB locks the folder. A second process (``check``,
``query``, ``stats`` while ``serve`` holds the store) opens it read-only instead: a snapshot
as of its opening, the index's pending runs merged in memory; any write it tries gets a clear
StoreError ("in use by another process"). So does a folder that cannot be written (a read-only
mount, another user's, a full disk), and a store made with ``read_only=True`` is never opened
for writing. RocksDB's errors (a full disk mid-write or at close) are StoreErrors saying what to
do (rocks.store_error). Opening happens on first use, not in the constructor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rocksdict import (
    AccessType,
    BlockBasedOptions,
    BottommostLevelCompaction,
    Cache,
    CompactOptions,
    DBCompressionType,
    Options,
    Rdict,
    WriteBatch,
)

from ...errors import StoreError
from ...index.store import Cells, Item, Store
from .batch import CellBatch
from .packed import PackedTable
from .records import REST_BYTES
from .rocks import Shadow, cannot_write, get_many, store_error, total_order, translated

_MARKER = "dedup-hbase-store"
LAYOUT = 2  # 1: one RocksDB key per index cell; 2: the index packed per scan prefix
CACHE_BYTES = 512 << 20
WAL_BYTES = 512 << 20  # the write-ahead log's files kept at most (about): RocksDB flushes what holds the oldest


def _options(cache, bloom: bool = True):
    """Tuned by measurement (docs/store-engine.md): lz4 upper levels, zstd-9 bottommost
    (under 60 bytes per fingerprint), 4 KiB blocks, one shared block cache. The document
    table has a whole-key bloom filter, so "is this id new?" during a load is answered
    without reading a block; the index has none (at scale every prefix of the 4-split is
    populated, and the filter would only cost space)."""
    opts = Options(raw_mode=True)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_bottommost_compression_type(DBCompressionType.zstd())
    opts.set_bottommost_compression_options(-14, 9, 0, 0, True)
    opts.set_level_compaction_dynamic_level_bytes(True)
    opts.set_max_background_jobs(2)
    table = BlockBasedOptions()
    table.set_block_size(4096)
    table.set_block_cache(cache)
    if bloom:
        table.set_bloom_filter(10, False)
        opts.set_memtable_prefix_bloom_ratio(0.02)  # and one over the keys still in memory
        opts.set_memtable_whole_key_filtering(True)
    opts.set_block_based_table_factory(table)
    return opts


def _runs_options():
    """A packed table's runs: written once, read once by the next merge (without filling
    the block cache), then dropped with their family. Not compressed: lz4 would cost more
    CPU than the bytes it saves in that life."""
    opts = Options(raw_mode=True)
    opts.set_compression_type(DBCompressionType.none())
    opts.set_write_buffer_size(128 << 20)
    opts.set_max_background_jobs(2)
    return opts


class LocalStore(Store):
    """RocksDB in folder ``path``. ``create=True`` allows ``create`` to make the folder;
    ``read_only``: True opens it read-only (the commands that only read); False opens it
    for writing or refuses (a StoreError) when another process holds it or the folder cannot
    be written; None (the default) reads it when it cannot write it."""

    in_process = True

    def __init__(self, path: str | os.PathLike, create: bool = False, read_only: bool | None = None) -> None:
        self.path = Path(path)
        self.url = str(path)
        self._may_create = create
        self._read_only_asked = bool(read_only) and not create
        self._must_write = create or read_only is False
        self._unwritable: str | None = None  # why a write is refused, once opened read-only
        self._shadow: Shadow | None = None
        self._db = None
        self._cfs: dict = {}
        self._packed: dict[str, PackedTable] = {}
        self.read_only = False  # True once opened read-only: another process holds the folder

    # -- tables --------------------------------------------------------------

    def exists(self) -> bool:
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.url} is a file, not a folder: an embedded store's URL names its folder "
                             "(init creates it; give a new path)")
        return (self.path / _MARKER).is_file()

    @translated
    def create(self, schema: dict) -> None:
        if self.exists():
            raise StoreError(f"{self.url}: the tables exist already")
        if self.path.exists() and any(self.path.iterdir()):
            raise StoreError(f"{self.url} exists and is not an empty folder; pick another path")
        self.path.mkdir(parents=True, exist_ok=True)
        # A wide-row table whose row is its scan prefix + 8 bytes (the index) is packed:
        # one record per prefix (packed.py). Every other table is plain keys and values.
        tables = {}
        for name, t in schema["tables"].items():
            prefix, row = t.get("bloom_prefix_length"), t.get("row_key_bytes")
            tables[name] = {"packed": prefix} if prefix and row == prefix + REST_BYTES else {}
        self._open(tables, create=True)
        # The marker is written last: a folder without it is an unfinished create.
        (self.path / _MARKER).write_text(json.dumps({"layout": LAYOUT, "tables": tables}) + "\n")

    def drop(self) -> None:
        self.close()
        if self.path.exists():
            (self.path / _MARKER).unlink(missing_ok=True)
            Rdict.destroy(str(self.path), Options(raw_mode=True))

    def _read_marker(self) -> dict:
        marker = json.loads((self.path / _MARKER).read_text())
        if marker.get("layout") != LAYOUT:
            raise StoreError(f"{self.url} was made by an earlier dedup-hbase (one key per index cell); "
                             "this version packs the index per scan prefix: build the index again in a new folder")
        return marker["tables"]

    def _open(self, tables: dict[str, dict] | None = None, create: bool = False):
        if self._db is not None:
            return self._db
        if not create and not self.exists():
            raise StoreError(f"{self.url}: no tables here (create them first)")
        if tables is None:
            tables = self._read_marker()
        cache = Cache(CACHE_BYTES)
        opts = _options(cache, bloom=False)
        opts.create_if_missing(create)
        # A log file goes only once every family with writes in it has flushed them. The
        # state written beside each batch (a few bytes in "default") never fills a memtable,
        # so under RocksDB's default bound (four times the families' write buffers: GBs) a
        # load kept its logs to the end: 5 GB of the 10 at the peak of a 10^7 load into the
        # 5-split. Past this bound RocksDB flushes the families that hold the oldest log.
        opts.set_max_total_wal_size(WAL_BYTES)
        opts.create_missing_column_families(True)  # the families are named below; a packed
        # table's runs family is missing if a crash came between its drop and its re-creation
        # Every family, "default" included, gets its options here: on reopen rocksdict
        # otherwise ignores the block cache and falls back to 8 MiB.
        families = {"default": opts}
        for name, t in tables.items():
            if t.get("packed"):
                merged, runs = PackedTable.families(name)
                families[merged], families[runs] = _options(cache, bloom=False), _runs_options()
            else:
                families[name] = _options(cache)
        try:
            if self._read_only_asked:
                self._db = self._open_read_only(opts, families)
            else:
                self._db = Rdict(str(self.path), opts, column_families=families)
        except StoreError:
            raise
        except Exception as e:  # rocksdict raises plain Exception for RocksDB errors
            locked = "LOCK" in str(e)
            if self._must_write and locked:
                raise StoreError(f"{self.url} is in use by another process (a load, delete or serve writes to it): "
                                 "run this once it has finished; stats, query and check read it meanwhile") from None
            if self._must_write or not (locked or cannot_write(e)):
                raise (store_error(self.url, e) if cannot_write(e) else StoreError(f"cannot open {self.url}: {e}")) from None
            # another process writes it, or it cannot be written here: read it
            self._db = self._open_read_only(opts, families)
            self._unwritable = (f"{self.url} is in use by another process (opened read-only here: no writes)"
                                if locked else str(store_error(self.url, e)))
        self._packed = {name: PackedTable(self._db, name, t["packed"], _runs_options(), self.read_only)
                        for name, t in tables.items() if t.get("packed")}
        self._cfs = {name: self._db.get_column_family(name) for name in tables if name not in self._packed}
        self._handles = {name: self._db.get_column_family_handle(name) for name in self._cfs}
        return self._db

    def _open_read_only(self, opts, families):
        """The folder as a read-only snapshot (its writer holds the lock). Every table file is
        opened now, so the writer's compactions cannot delete one from under a later read;
        an open that meets such a deletion half way is tried again."""
        opts.set_max_open_files(-1)
        opts.create_if_missing(False)
        for _attempt in range(3):
            try:
                db = Rdict(str(self._shadow.path if self._shadow else self.path), opts, column_families=families,
                           access_type=AccessType.read_only())
                self.read_only = True
                return db
            except Exception as e:
                error = e
                if cannot_write(e) and self._shadow is None:  # rocksdict could not write its file there
                    self._shadow = Shadow(self.path)
        if self._shadow is not None:
            self._shadow.close()
            self._shadow = None
        if self._read_only_asked:
            raise StoreError(f"cannot open {self.url} read-only: {error}") from None
        raise StoreError(f"{self.url} is in use by another process, and opening it read-only failed: {error}") from None

    def _writable(self) -> None:
        self._open()
        if self.read_only:
            raise StoreError(self._unwritable or f"{self.url} was opened read-only (no writes)")

    def _cf(self, table: str):
        self._open()
        try:
            return self._cfs[table]
        except KeyError:
            raise StoreError(f"{self.url}: no table {table!r}") from None

    def _table(self, table: str):
        """The packed table ``table``, or None for a plain one."""
        self._open()
        return self._packed.get(table)

    # -- data ----------------------------------------------------------------

    def _table_to_write(self, table: str) -> PackedTable | None:
        """``_table(table)``, once the store is known to be writable (else StoreError)."""
        self._writable()
        return self._table(table)

    def _batch(self, table: str) -> tuple[WriteBatch, Any]:
        """An empty write batch for the plain table ``table`` and its column family."""
        self._cf(table)
        return WriteBatch(raw_mode=True), self._handles[table]

    @translated
    def put(self, table: str, items: Iterable[Item]) -> None:
        if packed := self._table_to_write(table):
            return packed.put(items)
        batch, handle = self._batch(table)
        for key, value in items:
            batch.put(key, value, handle)
        self._db.write(batch)

    @translated
    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        if packed := self._table_to_write(table):
            return packed.put_cells(CellBatch.from_rows(rows, qualifiers, packed.prefix_bytes, repeat))
        super().put_cells(table, rows, qualifiers, repeat)

    @translated
    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        if packed := self._table(table):
            present = {key for prefix in {k[:packed.prefix_bytes] for k in keys}
                       for key in packed.scan(prefix)}
            return [b"" if key in present else None for key in keys]
        return get_many(self._cf(table), keys)

    @translated
    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        if packed := self._table(table):
            return [[(key, b"") for key in packed.scan(prefix)] for prefix in prefixes]
        cf = self._cf(table)
        return [self._scan_one(cf, prefix, values) for prefix in prefixes]

    @translated
    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        if packed := self._table(table):
            return packed.scan_cells(prefixes)
        return super().scan_cells(table, prefixes)

    def iterate_cells(self, table: str, prefix_bytes: int):
        packed = self._table(table)
        if packed is None or prefix_bytes != packed.prefix_bytes:
            yield from super().iterate_cells(table, prefix_bytes)
            return
        yield from packed.iterate_cells()

    @staticmethod
    def _scan_one(cf, prefix: bytes, values: bool) -> list[Item]:
        it = cf.iter(total_order())
        found = []
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if not key.startswith(prefix):
                break
            found.append((key, it.value() if values else b""))
            it.next()
        return found

    @translated
    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        if packed := self._table(table):
            return [(key, b"") for key in packed.scan_range(start, stop, limit)]
        it = self._cf(table).iter(total_order())
        it.seek(start)
        out = []
        while it.valid() and len(out) < limit:
            key = it.key()
            if stop is not None and key >= stop:
                break
            out.append((key, it.value()))
            it.next()
        return out

    @translated
    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        if packed := self._table_to_write(table):
            return packed.delete(keys)
        batch, handle = self._batch(table)
        for key in keys:
            batch.delete(key, handle)
        self._db.write(batch)

    @translated
    def flush(self) -> None:
        """Fold the index's recent writes into its per-prefix records now (packed.py). Also
        done before any read of the index, on ``close`` and on ``compact``."""
        self._open()
        if self.read_only:
            return
        for packed in self._packed.values():
            packed.merge()

    @translated
    def compact(self) -> None:
        """Merge the index's recent writes and rewrite every table into its bottommost,
        zstd-compressed level: the fastest reads and the smallest size on disk. RocksDB
        compacts in the background anyway; this finishes it now (it reads and writes the
        whole store)."""
        self._writable()
        self.flush()
        force = CompactOptions()  # rewrite even files already at the bottom (a flush may have
        force.set_bottommost_level_compaction(BottommostLevelCompaction.force())  # moved them there as lz4)
        for name in [*self._cfs, *self._packed]:
            self._db.get_column_family(name).compact_range(None, None, force)

    @translated
    def table_bytes(self, table: str) -> int:
        """Bytes of a table's files on disk (RocksDB's SST files; not the write-ahead log)."""
        names = PackedTable.families(table) if self._table(table) else [self._cf(table) and table]
        return sum(self._db.get_column_family(name).property_int_value("rocksdb.total-sst-files-size")
                   for name in names)

    @translated
    def close(self) -> None:
        """Merge the index's recent writes (so the next open reads one record per prefix),
        flush and close; closed also when the merge or the flush fails (a full disk: what was
        written is in the write-ahead log, merged at the next open), which is then raised."""
        if self._db is None:
            return
        try:
            if not self.read_only:
                for packed in self._packed.values():
                    packed.merge()
                self._db.flush()  # memtables to table files: a smaller folder, a faster reopen
        finally:
            self._cfs.clear()
            self._handles = {}
            self._packed = {}
            self._db.close()
            self._db = None
            self.read_only, self._unwritable = False, None
            if self._shadow is not None:
                self._shadow.close()
                self._shadow = None


__all__ = ["LocalStore"]
