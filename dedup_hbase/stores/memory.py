"""``memory:``: a store in a Python dict, for unit tests. Gone when the process ends."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence

from ..errors import StoreError
from ..index.store import Item, Store, prefix_end


class _Table:
    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.keys: list[bytes] = []

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self.data:
            insort(self.keys, key)
        self.data[key] = value

    def delete(self, key: bytes) -> None:
        if self.data.pop(key, None) is not None:
            del self.keys[bisect_left(self.keys, key)]

    def range(self, start: bytes, stop: bytes | None, limit: int | None = None) -> list[bytes]:
        lo = bisect_left(self.keys, start)
        hi = len(self.keys) if stop is None else bisect_left(self.keys, stop)
        if limit is not None:
            hi = min(hi, lo + limit)
        return self.keys[lo:hi]


class MemoryStore(Store):
    """Tables of sorted keys in memory. Same answers as every other store."""

    in_process = True

    def __init__(self, url: str = "memory:") -> None:
        self.url = url
        self._tables: dict[str, _Table] | None = None

    def exists(self) -> bool:
        return self._tables is not None

    def create(self, schema: dict) -> None:
        if self._tables is not None:
            raise StoreError(f"{self.url}: the tables exist already")
        self._tables = {name: _Table() for name in schema["tables"]}

    def drop(self) -> None:
        self._tables = None

    def _table(self, name: str) -> _Table:
        if self._tables is None:
            raise StoreError(f"{self.url}: no tables (create them first)")
        try:
            return self._tables[name]
        except KeyError:
            raise StoreError(f"{self.url}: no table {name!r}") from None

    def put(self, table: str, items: Iterable[Item]) -> None:
        t = self._table(table)
        for key, value in items:
            t.put(bytes(key), bytes(value))

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        data = self._table(table).data
        return [data.get(key) for key in keys]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        t = self._table(table)
        return [[(k, t.data[k] if values else b"") for k in t.range(p, prefix_end(p))]
                for p in prefixes]

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        t = self._table(table)
        return [(k, t.data[k]) for k in t.range(start, stop, limit)]

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        t = self._table(table)
        for key in keys:
            t.delete(key)
