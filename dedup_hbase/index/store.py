"""The store contract: named tables of sorted byte keys to byte values.

Every store (memory, the embedded one, HBase) implements these calls, and one contract
test suite (tests/store_contract.py) runs against each. A store knows nothing of
fingerprints; the index composes keys, the store keeps them sorted. How a store holds
its data on disk or on a server is its own business and shows nowhere in this contract.

How keys map to a wide-column store is declared per table in ``schema/tables.json``:
a table with ``row_key_bytes = n`` splits a key into an n-byte row and a column
qualifier (the index table: 13-byte row key, document id as qualifier, so identical
fingerprints share one row); other tables store the whole key as the row.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInput
from .schema import row_key_bytes

Item = tuple[bytes, bytes]


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class Cells(ABC):
    """The cells of a wide-row table under one scan prefix, in key order, read-only.

    ``rests`` are the row keys' bytes after the prefix as unsigned big-endian integers
    (a numpy uint64 array; at most 8 bytes); ``qualifier(i)`` is cell i's column. Cells
    have no values. A store may decode lazily: ``rests`` alone must be cheap."""

    __slots__ = ()

    @property
    @abstractmethod
    def rests(self) -> np.ndarray:
        """The row-key remainders, uint64 (any byte order), in key order."""

    @abstractmethod
    def qualifier(self, i: int) -> bytes:
        """The column qualifier of cell ``i``."""

    def __len__(self) -> int:
        return len(self.rests)

    def rest_values(self) -> Sequence[int]:
        """``rests`` as Python ints (what a loop in Python reads)."""
        return self.rests.tolist()

    def runs(self) -> Sequence[tuple[int, int, int]]:
        """The runs of equal remainders (the copies of one fingerprint are neighbours), as
        (remainder, first cell, cells), in key order."""
        rests = self.rest_values()
        if len(rests) <= 1:  # the usual prefix of a sparse index
            return [(rests[0], 0, 1)] if rests else []
        runs, start = [], 0
        for i in range(1, len(rests)):
            if rests[i] != rests[start]:
                runs.append((rests[start], start, i - start))
                start = i
        runs.append((rests[start], start, len(rests) - start))
        return runs


class ListCells(Cells):
    """Cells held as an array of remainders and a list of qualifiers: what a store that
    keeps one key per cell returns."""

    __slots__ = ("_rests", "_qualifiers")

    def __init__(self, rests: np.ndarray, qualifiers: Sequence[bytes]) -> None:
        if len(rests) != len(qualifiers):
            raise ValueError(f"{len(rests)} remainders but {len(qualifiers)} qualifiers")
        self._rests, self._qualifiers = rests, qualifiers

    @classmethod
    def from_keys(cls, keys: Sequence[bytes], prefix_bytes: int, row_bytes: int) -> "ListCells":
        """From whole keys (row + qualifier) in key order, all under one prefix."""
        width = row_bytes - prefix_bytes
        if not 0 < width <= 8:
            raise ValueError(f"a row-key remainder is 1 to 8 bytes, not {width}")
        padding = bytes(8 - width)
        rests = np.frombuffer(b"".join([padding + k[prefix_bytes:row_bytes] for k in keys]), dtype=">u8")
        return cls(rests, [k[row_bytes:] for k in keys])

    @property
    def rests(self) -> np.ndarray:
        return self._rests

    def qualifier(self, i: int) -> bytes:
        return self._qualifiers[i]


@dataclass(frozen=True)
class HFileTarget:
    """A store that takes HFiles (``Store.hfile_target``): HBase's ZooKeeper (``zk``:
    HOST[,HOST...]:PORT, None when the store was not told it; ``zk_parent``: the root znode,
    None for HBase's default) and the HBase table name of each of the store's tables."""

    zk: str | None
    zk_parent: str | None
    tables: dict[str, str]


class Store(ABC):
    """A sorted key-value store with named tables.

    Constructors do no network I/O; the embedded store opens its files on first use.
    Calls are not thread-safe unless a store says so (``thread_safe``); otherwise use one
    store per thread or process, or a lock.
    """

    url: str
    thread_safe: bool = False  # True: one store object may serve several threads at once
    in_process: bool = False  # True: calls are work in this process (no network wait)

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
        """Delete every table and its data. Not part of normal use: tests (no command drops an index;
        a user deletes its folder or its HBase tables)."""
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

    def fleet_locks(self):
        """Locks shared by every process using this store (``held(keys)``, see
        stores/hbase_locks.py), or None where the store has none: the embedded store has one
        writer process, whose in-process locks suffice."""
        return None

    def close(self) -> None:  # noqa: B027 (a store without resources has nothing to release)
        """Release files or connections. Safe to call twice."""

    # -- cells of a wide-row table, in bulk ------------------------------------
    # The index's hot path. These defaults build one key per cell on top of put and
    # scan; a store may answer them its own faster way.

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        """Write cells with empty values: ``rows`` is ``repeat * len(qualifiers)`` row keys
        of one length concatenated, and row j's column is ``qualifiers[j % len(qualifiers)]``
        (the index writes a batch's rows flag by flag, each flag's in document order). Same
        effect as ``put`` of ``(row_j + qualifiers[j % len(qualifiers)], b"")``; not atomic
        beyond what ``put`` is."""
        width = row_width(rows, len(qualifiers), repeat)
        keys = sorted(rows[j * width:(j + 1) * width] + qualifiers[j % len(qualifiers)]
                      for j in range(len(qualifiers) * repeat))
        self.put(table, ((key, b"") for key in keys))

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        """For each prefix of a wide-row table, its cells (see ``Cells``): the rows whose
        key starts with the prefix, each column a cell. Does not return values."""
        row = self._wide_row_bytes(table)
        return [ListCells.from_keys([key for key, _ in items], len(prefix), row)
                for prefix, items in zip(prefixes, self.scan(table, prefixes, values=False))]

    def large_rows_kept(self) -> AbstractContextManager:
        """A context for one thread's read-only pass (``check``): meanwhile ``scan_cells`` may
        keep the rows of many cells it reads (a fingerprint's thousands of copies) and answer
        later scans with them rather than read them again, as of their first read. Not for a
        pass that writes, or that must see writes as they land. Stores that read such rows
        cheaply keep nothing (the default); the HBase store keeps them (stores/hbase/kept.py)."""
        return nullcontext()

    def iterate_cells(self, table: str, prefix_bytes: int) -> Iterator[tuple[bytes, Cells]]:
        """Every ``prefix_bytes``-long prefix of a wide-row table with its cells, in key
        order. Pages like ``iterate``."""
        row = self._wide_row_bytes(table)
        prefix, keys = None, []
        for key, _ in self.iterate(table):
            if key[:prefix_bytes] != prefix:
                if keys:
                    yield prefix, ListCells.from_keys(keys, prefix_bytes, row)
                prefix, keys = key[:prefix_bytes], []
            keys.append(key)
        if keys:
            yield prefix, ListCells.from_keys(keys, prefix_bytes, row)

    # -- upkeep: no-ops where a store has nothing to do --------------------------

    def flush(self) -> None:  # noqa: B027 (most stores store writes in their final form)
        """Finish work a store defers after writes, so that the next read does not pay for
        it (the embedded store folds recent index writes into its per-prefix records). A
        no-op where writes are stored in their final form at once. Reads are always
        exact, flushed or not."""

    def compact(self) -> None:
        """``flush``, then rewrite stored data in its smallest, fastest-to-read form, where
        a store can do that on request. May take long; never needed for correct answers."""
        self.flush()

    def table_bytes(self, table: str) -> int | None:
        """Bytes a table takes on disk, where the store can tell (else None)."""
        return None

    def hfile_target(self) -> HFileTarget | None:
        """Where HFiles of this store's tables are bulk-loaded, for a store that takes them
        (HBase); None for any other (the Spark engine then writes through the store)."""
        return None

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

    def _wide_row_bytes(self, table: str) -> int:
        """The row-key length of a wide-row table (schema/tables.json)."""
        row = row_key_bytes(table)
        if row is None:
            raise InvalidInput(f"table {table!r} is not a wide-row table (no row_key_bytes in the schema)")
        return row

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def row_width(rows: bytes, qualifiers: int, repeat: int) -> int:
    """The length of each row key of ``put_cells``; refuses rows that do not split evenly."""
    if repeat < 1 or (qualifiers == 0) != (len(rows) == 0):
        raise InvalidInput(f"{len(rows)} bytes of row keys for {qualifiers} qualifiers x {repeat}")
    width, rest = divmod(len(rows), max(qualifiers * repeat, 1))
    if rest:
        raise InvalidInput(f"{len(rows)} bytes of row keys do not split into {qualifiers * repeat} rows")
    return width
