"""The Thrift1 data path (``api=thrift1``): happybase through the Thrift1 gateway at PORT, one
scanner per prefix (three round trips: open, fetch, close), ``mutateRows`` batches. For
gateways without Thrift2, and for before/after measurements of the Thrift2 path.

happybase names a cell's column ``family:qualifier``; ``column`` and ``items`` map keys to
and from that form. Each scanner is read to its end (or closed) inside its lease.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...index.store import Item
from .datapath import DataPath


class Thrift1Path(DataPath):
    """happybase over the Thrift1 gateway. No bulk form of the wide-row calls."""

    def column(self, table: str, key: bytes) -> tuple[bytes, bytes]:
        """A key as (row, ``family:qualifier``)."""
        row, qualifier = self.tables.split(table, key)
        return row, self.tables.family + b":" + qualifier

    @staticmethod
    def items(row: bytes, cells: dict) -> list[Item]:
        """The items of one row as happybase returns it (``{family:qualifier: value}``)."""
        return [(row + column.split(b":", 1)[1], value) for column, value in sorted(cells.items())]

    def _table(self, conn, table: str):
        return conn.table(self.tables.name(table))

    def put(self, table: str, items: Iterable[Item]) -> None:
        for chunk in self.chunks([self.column(table, key) + (value,) for key, value in items]):
            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=self.wal) as batch:
                    for row, column, value in chunk:
                        batch.put(row, {column: value})
            self.gateways.run1(work)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        cells = [self.column(table, key) for key in keys]
        rows = sorted({row for row, _ in cells})
        family = [self.tables.family]
        found = dict(self.gateways.run1(lambda conn: self._table(conn, table).rows(rows, columns=family)))
        return [found.get(row, {}).get(column) for row, column in cells]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        return self.gateways.parallel(lambda p: self._scan_one(table, p, values), list(prefixes))

    def _scan_one(self, table: str, prefix: bytes, values: bool) -> list[Item]:
        start, stop = self.tables.prefix_range(table, prefix)

        def work(conn):
            scan = self._table(conn, table).scan(
                row_start=start, row_stop=stop, columns=[self.tables.family], batch_size=1000,
                filter=None if values else b"KeyOnlyFilter()")
            return [item for row, cells in scan for item in self.items(row, cells) if item[0].startswith(prefix)]
        found = self.gateways.run1(work)
        return found if values else [(k, b"") for k, _ in found]

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        row_start = self.tables.split(table, start)[0]

        def work(conn):
            out = []
            scanner = self._table(conn, table).scan(row_start=row_start, row_stop=stop, columns=[self.tables.family],
                                                    batch_size=min(limit + 1, 1000))
            try:
                for row, cells in scanner:
                    out.extend(item for item in self.items(row, cells)
                               if item[0] >= start and (stop is None or item[0] < stop))
                    if len(out) >= limit:
                        break
            finally:
                scanner.close()  # closes the server-side scanner on this same connection
            return out[:limit]
        return self.gateways.run1(work)

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        for chunk in self.chunks([self.column(table, key) for key in keys]):
            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=self.wal) as batch:
                    for row, column in chunk:
                        batch.delete(row, columns=[column])
            self.gateways.run1(work)
