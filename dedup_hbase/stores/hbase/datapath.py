"""What a data path of the HBase store is: the data calls of the store contract
(index/store.py) on HBase cells, through one of the Thrift gateways.

A path holds no connection: every unit of work goes through the ``Gateways`` retry loop
(connections.py), keys become cells by ``Tables`` (tables.py), and each path sends
``batch_size`` cells to a call at most, with the write-ahead log or without (``wal``).
``Thrift2Path`` (thrift2.py) implements it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext

from ...index.store import Cells, Item
from .connections import Gateways
from .tables import Tables


class DataPath(ABC):
    """The store's data calls on one gateway; thread-safe as ``Gateways`` is.

    ``bulk_cells``: the path answers ``put_cells`` and ``scan_cells`` (the index's wide-row
    calls) itself, for prefixes that leave 1 to 8 bytes of a row; else the store answers
    them by the contract's defaults over ``put`` and ``scan``."""

    bulk_cells = False

    def __init__(self, gateways: Gateways, tables: Tables, *, batch_size: int, wal: bool) -> None:
        self.gateways, self.tables = gateways, tables
        self.batch_size, self.wal = batch_size, wal

    @abstractmethod
    def put(self, table: str, items: Iterable[Item]) -> None:
        """``Store.put``."""

    @abstractmethod
    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """``Store.get``, for at least one key."""

    @abstractmethod
    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        """``Store.scan``."""

    @abstractmethod
    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        """``Store.scan_range``."""

    @abstractmethod
    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        """``Store.delete``."""

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        """``Store.put_cells``, where ``bulk_cells``."""
        raise NotImplementedError(f"{type(self).__name__} has no bulk form of put_cells")

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        """``Store.scan_cells``, where ``bulk_cells``, for prefixes that leave 1 to 8 bytes of a row."""
        raise NotImplementedError(f"{type(self).__name__} has no bulk form of scan_cells")

    def large_rows_kept(self) -> AbstractContextManager:
        """``Store.large_rows_kept``: a path that keeps nothing, by default."""
        return nullcontext()

    def forget_regions(self) -> None:  # noqa: B027 (a path without a cache has nothing to forget)
        """Forget what the path knows of the tables' regions (after they are dropped)."""

    def chunks(self, items: Sequence) -> list:
        """``items`` in slices of ``batch_size``."""
        return [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]
