"""RocksDB (rocksdict) helpers shared by the embedded store and its packed tables: read options,
a multi-get, RocksDB's errors as StoreErrors, and a way to open a folder that cannot be written."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rocksdict import ReadOptions

from ...errors import StoreError

ROCKSDICT_CONFIG = "rocksdict-config.json"  # the file rocksdict writes into a database's folder
_PROBE = 64  # keys looked up one by one to see whether most are absent


def total_order() -> ReadOptions:
    """Read options for iterating in plain key order, whatever prefix extractor is set."""
    opts = ReadOptions()
    opts.set_total_order_seek(True)
    return opts


def read_once() -> ReadOptions:
    """Read options for values read once and replaced (a merge's old records): they are
    kept out of the block cache, which would otherwise fill with dead versions."""
    opts = ReadOptions()
    opts.fill_cache(False)
    return opts


def get_many(cf, keys: Sequence[bytes], read_opt: ReadOptions | None = None) -> list[bytes | None]:
    """The values of ``keys`` in column family ``cf`` (None: absent), in order.

    rocksdict's multi-get pays for every key, even an absent one; one ``get`` per key is
    cheaper for an absent key (the bloom filter answers) and dearer for a present one. A
    load of new documents asks for absent keys, a reload for present ones: the first
    ``_PROBE`` keys decide."""
    head = [cf.get(key, read_opt=read_opt) for key in keys[:_PROBE]]
    if len(keys) <= _PROBE:
        return head
    rest = keys[_PROBE:]
    if sum(value is None for value in head) * 2 >= len(head):
        return head + [cf.get(key, read_opt=read_opt) for key in rest]
    return head + cf.get(list(rest), read_opt=read_opt)


# RocksDB's errors reach Python as plain ``Exception``s (rocksdict's choice) whose text starts
# with RocksDB's status ("IO error: ..."); an error writing rocksdict's own file is an OSError
# without an errno whose text ends with Rust's "(os error N)".
_FULL = ("No space left on device", "os error 28")
_READ_ONLY = ("Read-only file system", "os error 30")
_NOT_ALLOWED = ("Permission denied", "os error 13")


def is_rocks_error(e: BaseException) -> bool:
    """Whether ``e`` is an error rocksdict raised for RocksDB or for one of its own files."""
    text = str(e)
    if type(e) is Exception:
        return text.startswith(("IO error", "Corruption", "Invalid argument")) or cannot_write(e)
    return isinstance(e, OSError) and e.errno is None and "(os error " in text


def cannot_write(e: BaseException) -> bool:
    """Whether ``e`` (from rocksdict) says the store's folder cannot be written: a read-only
    file system, no permission, or a full disk (reading it still works)."""
    return isinstance(e, Exception) and any(s in str(e) for s in _FULL + _READ_ONLY + _NOT_ALLOWED)


def store_error(url: str, e: BaseException) -> StoreError:
    """A RocksDB error (``is_rocks_error``) as one line saying what is wrong and what to do."""
    text = " ".join(str(e).split())
    if any(s in text for s in _FULL):
        return StoreError(f"{url}: the disk is full ({text}): free space on it and run the same command again "
                          "(what was written is kept; a load resumes after its last checkpoint)")
    if any(s in text for s in _READ_ONLY + _NOT_ALLOWED):
        return StoreError(f"{url} cannot be written here ({text}): stats, query and check read it as it is; "
                          "init, load, delete and serve need it writable")
    return StoreError(f"{url}: {text}")


def translated(method):
    """A store method whose RocksDB errors are ``store_error``s (the store has a ``url``)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            if not is_rocks_error(e):
                raise
            raise store_error(self.url, e) from e
    return wrapper


class Shadow:
    """rocksdict writes its configuration file into a database's folder on every open, read-only
    ones too, so a folder that cannot be written (a read-only mount, another user's, a full
    disk) cannot be opened by it even to read. A Shadow is a temporary folder of symbolic links to
    every file of the database but that one: RocksDB opens it read-only, rocksdict writes its
    file there. Removed by ``close``."""

    def __init__(self, path: Path) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="dedup-hbase-read-")
        self.path = Path(self._folder.name)
        for entry in path.iterdir():
            if entry.name != ROCKSDICT_CONFIG:
                (self.path / entry.name).symlink_to(entry.resolve())

    def close(self) -> None:
        self._folder.cleanup()
