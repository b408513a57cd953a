"""The embedded store: RocksDB (through rocksdict) in a folder, one column family per table.

Why RocksDB: see docs/store-engine.md (measured against LMDB and SQLite). In short:
smallest on disk (prefix-compressed, compressed blocks), a 5-byte prefix bloom
filter per index block, atomic write batches and a write-ahead log, so a process
killed in the middle of a write reopens with every batch either whole or absent.

One process at a time: RocksDB locks the folder, and a second opener gets a clear
StoreError. Opening happens on first use, not in the constructor.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import StoreError
from .base import Item, Store, prefix_end

_MARKER = "dedup-hbase-store"


def _options(prefix_bytes: int | None = None):
    from rocksdict import BlockBasedOptions, DBCompressionType, Options, SliceTransform

    opts = Options(raw_mode=True)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_bottommost_compression_type(DBCompressionType.zstd())
    table = BlockBasedOptions()
    if prefix_bytes:
        opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(prefix_bytes))
        table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
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
        from rocksdict import Options, Rdict

        self.close()
        if self.path.exists():
            (self.path / _MARKER).unlink(missing_ok=True)
            Rdict.destroy(str(self.path), Options(raw_mode=True))

    def _open(self, tables: dict[str, int | None] | None = None, create: bool = False):
        from rocksdict import Options, Rdict

        if self._db is not None:
            return self._db
        if not create and not self.exists():
            raise StoreError(f"no index at {self.url}: create one with `dedup-hbase init`")
        if tables is None:
            tables = json.loads((self.path / _MARKER).read_text())
        opts = _options()
        opts.create_if_missing(create)
        opts.create_missing_column_families(create)
        families = {name: _options(prefix) for name, prefix in tables.items()}
        try:
            self._db = Rdict(str(self.path), opts, column_families=families)
        except Exception as e:  # rocksdict raises plain Exception for RocksDB errors
            if "LOCK" in str(e):
                raise StoreError(f"{self.url} is in use by another process") from None
            raise StoreError(f"cannot open {self.url}: {e}") from None
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
        from rocksdict import WriteBatch

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
        it = self._cf(table).iter()
        out = []
        for prefix in prefixes:
            found = []
            it.seek(prefix)
            while it.valid():
                key = it.key()
                if not key.startswith(prefix):
                    break
                found.append((key, it.value() if values else b""))
                it.next()
            out.append(found)
        return out

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        it = self._cf(table).iter()
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
        from rocksdict import WriteBatch

        self._cf(table)
        batch, handle = WriteBatch(raw_mode=True), self._handles[table]
        for key in keys:
            batch.delete(key, handle)
        self._db.write(batch)

    def close(self) -> None:
        if self._db is not None:
            self._cfs.clear()
            self._handles = {}
            self._db.flush()  # memtables to table files: a smaller folder, a faster reopen
            self._db.close()
            self._db = None


__all__ = ["LocalStore", "prefix_end"]
