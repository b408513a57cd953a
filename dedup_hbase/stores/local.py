"""The embedded store: RocksDB (through rocksdict) in a folder, one column family per table.

Why RocksDB: see docs/store-engine.md (measured against LMDB and SQLite). In short:
smallest on disk (under 60 bytes per fingerprint), prefix scans that stop at
the end of their 5-byte prefix by themselves, atomic write batches and a write-ahead log, so a process
killed in the middle of a write reopens with every batch either whole or absent.

One process at a time: RocksDB locks the folder, and a second opener gets a clear
StoreError. Opening happens on first use, not in the constructor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from rocksdict import (BlockBasedOptions, Cache, DBCompressionType, Options, Rdict, ReadOptions,
                       SliceTransform, WriteBatch)

from ..errors import StoreError
from .base import Item, Store, prefix_end

_MARKER = "dedup-hbase-store"
CACHE_BYTES = 512 << 20


def _options(prefix_bytes: int | None, cache):
    """Tuned by measurement (docs/store-engine.md): lz4 upper levels, zstd-9 bottommost
    (under 60 bytes per fingerprint), 4 KiB blocks, one shared block cache, and for the
    index a 5-byte prefix extractor so a prefix scan stops at the end of its prefix.
    No bloom filter: every prefix of a big index is populated, so it only costs space."""
    opts = Options(raw_mode=True)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_bottommost_compression_type(DBCompressionType.zstd())
    opts.set_bottommost_compression_options(-14, 9, 0, 0, True)
    opts.set_level_compaction_dynamic_level_bytes(True)
    opts.set_max_background_jobs(2)
    table = BlockBasedOptions()
    table.set_block_size(4096)
    table.set_block_cache(cache)
    opts.set_block_based_table_factory(table)
    if prefix_bytes:
        opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(prefix_bytes))
    return opts


class LocalStore(Store):
    """RocksDB in folder ``path``. ``create=True`` allows ``create`` to make the folder."""

    def __init__(self, path: str | os.PathLike, create: bool = False) -> None:
        self.path = Path(path)
        self.url = str(path)
        self._may_create = create
        self._db = None
        self._cfs: dict = {}

    # -- tables --------------------------------------------------------------

    def exists(self) -> bool:
        return (self.path / _MARKER).is_file()

    def create(self, schema: dict) -> None:
        if self.exists():
            raise StoreError(f"{self.url}: the tables exist already")
        if self.path.exists() and any(self.path.iterdir()):
            raise StoreError(f"{self.url} exists and is not an empty folder; pick another path")
        self.path.mkdir(parents=True, exist_ok=True)
        # Column family per table; the index's 5-byte scan prefix gets a bloom filter.
        tables = {name: t.get("bloom_prefix_length") for name, t in schema["tables"].items()}
        self._open(tables, create=True)
        # The marker is written last: a folder without it is an unfinished create.
        (self.path / _MARKER).write_text(json.dumps(tables) + "\n")

    def drop(self) -> None:
        self.close()
        if self.path.exists():
            (self.path / _MARKER).unlink(missing_ok=True)
            Rdict.destroy(str(self.path), Options(raw_mode=True))

    def _open(self, tables: dict[str, int | None] | None = None, create: bool = False):
        if self._db is not None:
            return self._db
        if not create and not self.exists():
            raise StoreError(f"no index at {self.url}: create one with `dedup-hbase init`")
        if tables is None:
            tables = json.loads((self.path / _MARKER).read_text())
        cache = Cache(CACHE_BYTES)
        opts = _options(None, cache)
        opts.create_if_missing(create)
        opts.create_missing_column_families(create)
        # Every family, "default" included, gets its options here: on reopen rocksdict
        # otherwise ignores the block cache and falls back to 8 MiB.
        families = {"default": opts, **{name: _options(prefix, cache) for name, prefix in tables.items()}}
        try:
            self._db = Rdict(str(self.path), opts, column_families=families)
        except Exception as e:  # rocksdict raises plain Exception for RocksDB errors
            if "LOCK" in str(e):
                raise StoreError(f"{self.url} is in use by another process") from None
            raise StoreError(f"cannot open {self.url}: {e}") from None
        self._prefix_len = {name: prefix for name, prefix in tables.items()}
        self._same_prefix = ReadOptions()
        self._same_prefix.set_prefix_same_as_start(True)
        self._cfs = {name: self._db.get_column_family(name) for name in tables}
        self._handles = {name: self._db.get_column_family_handle(name) for name in tables}
        return self._db

    def _cf(self, table: str):
        self._open()
        try:
            return self._cfs[table]
        except KeyError:
            raise StoreError(f"{self.url}: no table {table!r}") from None

    # -- data ----------------------------------------------------------------

    def put(self, table: str, items: Iterable[Item]) -> None:
        self._cf(table)
        batch, handle = WriteBatch(raw_mode=True), self._handles[table]
        for key, value in items:
            batch.put(key, value, handle)
        self._db.write(batch)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        return self._cf(table).get(list(keys))

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        cf = self._cf(table)
        out = []
        if not values and self._prefix_len.get(table):
            # Keys of one extractor-sized prefix, collected inside RocksDB in one call.
            same_prefix = self._same_prefix
            size = self._prefix_len[table]
            for prefix in prefixes:
                if len(prefix) == size:
                    out.append([(key, b"") for key in cf.keys(from_key=prefix, read_opt=same_prefix)])
                else:
                    out.append(self._scan_one(cf, prefix, values))
            return out
        return [self._scan_one(cf, prefix, values) for prefix in prefixes]

    @staticmethod
    def _scan_one(cf, prefix: bytes, values: bool) -> list[Item]:
        total_order = ReadOptions()
        total_order.set_total_order_seek(True)
        it = cf.iter(total_order)
        found = []
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if not key.startswith(prefix):
                break
            found.append((key, it.value() if values else b""))
            it.next()
        return found

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        total_order = ReadOptions()
        total_order.set_total_order_seek(True)
        it = self._cf(table).iter(total_order)
        it.seek(start)
        out = []
        while it.valid() and len(out) < limit:
            key = it.key()
            if stop is not None and key >= stop:
                break
            out.append((key, it.value()))
            it.next()
        return out

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        self._cf(table)
        batch, handle = WriteBatch(raw_mode=True), self._handles[table]
        for key in keys:
            batch.delete(key, handle)
        self._db.write(batch)

    def compact(self) -> None:
        """Rewrite every table into its bottommost, zstd-compressed level: the smallest size
        on disk. RocksDB compacts in the background anyway; this finishes it now (seconds per
        million documents). Not part of the store contract."""
        for cf in (self._open() and self._cfs).values():
            cf.compact_range(None, None)

    def close(self) -> None:
        if self._db is not None:
            self._cfs.clear()
            self._handles = {}
            self._db.flush()  # memtables to table files: a smaller folder, a faster reopen
            self._db.close()
            self._db = None


__all__ = ["LocalStore", "prefix_end"]
