"""Two RocksDB (rocksdict) helpers shared by the embedded store and its packed tables."""

from __future__ import annotations

from collections.abc import Sequence

from rocksdict import ReadOptions

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
