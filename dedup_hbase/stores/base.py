"""The store contract: named tables of sorted byte keys to byte values.

Every store (memory, the embedded one, HBase) implements these few calls, and one
contract test suite (tests/test_store_contract.py) runs against each. A store knows
nothing of fingerprints; the index composes keys, the store keeps them sorted.

How keys map to a wide-column store is declared per table in ``schema/tables.json``:
a table with ``row_key_bytes = n`` splits a key into an n-byte row and a column
qualifier (the index table: 13-byte row key, document id as qualifier, so identical
fingerprints share one row); other tables store the whole key as the row.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence

from .cells import Cells

Item = tuple[bytes, bytes]


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class Store(ABC):
    """A sorted key-value store with named tables.

    Constructors do no network I/O; the embedded store opens its files, nothing more.
    Calls are not thread-safe unless a store says so; use one store per thread or process.
    """

    url: str

    # -- tables --------------------------------------------------------------

    @abstractmethod
    def exists(self) -> bool:
        """True when the tables of ``schema`` have been created in this store."""

    @abstractmethod
    def create(self, schema: dict) -> None:
        """Create the tables described by ``schema`` (from schema/tables.json).

        Raises StoreError when they exist already; it never drops data.
        """

    def drop(self) -> None:
        """Delete every table and its data. Not part of normal use; tests and ``init --force``."""
        raise NotImplementedError(f"{type(self).__name__} cannot drop its tables")

    # -- data ----------------------------------------------------------------

    @abstractmethod
    def put(self, table: str, items: Iterable[Item]) -> None:
        """Write ``(key, value)`` pairs; an existing key is overwritten.

        Writes are idempotent. A single call is atomic in the embedded store; in HBase
        each row is atomic, a call is not.
        """

    @abstractmethod
    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of ``keys`` in the same order, None where a key is absent."""

    @abstractmethod
    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        """For each prefix, every ``(key, value)`` whose key starts with it, in key order.

        The result is fully read before the call returns (no lazy iterator holds a
        connection). With ``values=False`` values come back as ``b""`` and the store may
        skip reading them.
        """

    @abstractmethod
    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        """Up to ``limit`` items with ``start <= key < stop`` (``stop`` None: to the end)."""

    @abstractmethod
    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        """Remove ``keys``; absent keys are ignored."""

    def close(self) -> None:
        """Release files or connections. Safe to call twice."""

    # -- cells of a wide-row table, in bulk ------------------------------------
    # The index's hot path. These defaults build one key per cell on top of put and
    # scan; the embedded store overrides them with its packed records (packed.py).

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        """Write cells with empty values: ``rows`` is ``repeat * len(qualifiers)`` row keys
        of one length concatenated, and row j's column is ``qualifiers[j % len(qualifiers)]``
        (the index writes a batch's rows flag by flag, each flag's in document order). Same
        effect as ``put`` of ``(row_j + qualifiers[j % len(qualifiers)], b"")``; not atomic
        beyond what ``put`` is."""
        width = _row_width(rows, len(qualifiers), repeat)
        keys = sorted(rows[j * width:(j + 1) * width] + qualifiers[j % len(qualifiers)]
                      for j in range(len(qualifiers) * repeat))
        self.put(table, ((key, b"") for key in keys))

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        """For each prefix, the cells whose row key is that prefix plus 8 bytes, as ``Cells``
        (those 8 bytes as uint64, and the qualifiers). Does not return values."""
        return [Cells.from_keys([key for key, _ in items], len(prefix))
                for prefix, items in zip(prefixes, self.scan(table, prefixes, values=False))]

    def iterate_cells(self, table: str, prefix_bytes: int) -> Iterator[tuple[bytes, Cells]]:
        """Every ``prefix_bytes``-long prefix of the table with its cells (row keys of the
        prefix plus 8 bytes), in key order. Pages like ``iterate``."""
        prefix, keys = None, []
        for key, _ in self.iterate(table):
            if key[:prefix_bytes] != prefix:
                if keys:
                    yield prefix, Cells.from_keys(keys, prefix_bytes)
                prefix, keys = key[:prefix_bytes], []
            keys.append(key)
        if keys:
            yield prefix, Cells.from_keys(keys, prefix_bytes)

    # -- conveniences built on the contract ------------------------------------

    def iterate(self, table: str, prefix: bytes = b"", page: int = 10_000) -> Iterator[Item]:
        """Every item under ``prefix`` in key order, fetched ``page`` items per call.

        Each page is a separate, complete ``scan_range``, so no store resource stays
        open between pages, however slowly the caller consumes them.
        """
        start, stop = prefix, prefix_end(prefix)
        while True:
            items = self.scan_range(table, start, stop, page)
            yield from items
            if len(items) < page:
                return
            start = items[-1][0] + b"\x00"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def _row_width(rows: bytes, qualifiers: int, repeat: int) -> int:
    """The length of each row key of ``put_cells``; refuses rows that do not split evenly."""
    if repeat < 1 or (qualifiers == 0) != (len(rows) == 0):
        raise ValueError(f"{len(rows)} bytes of row keys for {qualifiers} qualifiers x {repeat}")
    width, rest = divmod(len(rows), max(qualifiers * repeat, 1))
    if rest:
        raise ValueError(f"{len(rows)} bytes of row keys do not split into {qualifiers * repeat} rows")
    return width
