"""The HBase store's two data paths, one class each, behind the store's one retry loop.

``Thrift2Path`` (``api=thrift2``, the default): all the prefixes of a lookup or batch read with
one ``getScannerResults`` call per region (a ``MultiRowRangeFilter`` when a call carries
several), hand-serialized ``putMultiple``/``getMultiple`` (thrift2.py), the calls in parallel.
``Thrift1Path`` (``api=thrift1``): happybase through the Thrift1 gateway, a scanner per prefix
and ``mutateRows`` batches, for gateways without Thrift2 and for before/after measurements.

A path holds no connection and no state of its own beyond a cache of region boundaries: every
unit of work goes through ``store._run`` (the retry loop, hbase.py), and what one store call
means (keys split into row and qualifier by the schema, batch sizes, durability) comes from
the store.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from ...errors import StoreError
from ...index.store import Cells, Item, ListCells, Store, row_width
from . import thrift2

SKIP_WAL = 1  # Thrift2's TDurability.SKIP_WAL

logger = logging.getLogger(__name__)


class Thrift1Path:
    """happybase over the Thrift1 gateway. The wide-row calls are the contract's defaults."""

    def __init__(self, store) -> None:
        self.s = store

    def forget_regions(self) -> None:
        """Nothing cached: each scan finds its regions through the gateway."""

    def _table(self, conn, table: str):
        return conn.table(self.s._name(table))

    def put(self, table: str, items: Iterable[Item]) -> None:
        s = self.s
        cells = [s._cell(table, key) + (value,) for key, value in items]
        for start in range(0, len(cells), s.batch_size):
            chunk = cells[start:start + s.batch_size]

            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=s.wal) as batch:
                    for row, column, value in chunk:
                        batch.put(row, {column: value})
            s._run(work)

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        Store.put_cells(self.s, table, rows, qualifiers, repeat)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        s = self.s
        cells = [s._cell(table, key) for key in keys]
        rows = sorted({row for row, _ in cells})
        found = dict(s._run(lambda conn: self._table(conn, table).rows(rows, columns=[s._family])))
        return [found.get(row, {}).get(column) for row, column in cells]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        return self.s._parallel(lambda p: self._scan_one(table, p, values), list(prefixes))

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        return Store.scan_cells(self.s, table, prefixes)

    def _scan_one(self, table: str, prefix: bytes, values: bool) -> list[Item]:
        s = self.s
        start, stop = thrift2.prefix_range(prefix, s._row_bytes[table])

        def work(conn):
            scan = self._table(conn, table).scan(
                row_start=start, row_stop=stop, columns=[s._family], batch_size=1000,
                filter=None if values else b"KeyOnlyFilter()")
            return [item for row, cells in scan for item in s._keys(row, cells) if item[0].startswith(prefix)]
        found = s._run(work)
        return found if values else [(k, b"") for k, _ in found]

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        s = self.s
        row_start = s._split(table, start)[0]

        def work(conn):
            out = []
            scanner = self._table(conn, table).scan(row_start=row_start, row_stop=stop, columns=[s._family],
                                                    batch_size=min(limit + 1, 1000))
            try:
                for row, cells in scanner:
                    out.extend(item for item in s._keys(row, cells)
                               if item[0] >= start and (stop is None or item[0] < stop))
                    if len(out) >= limit:
                        break
            finally:
                scanner.close()  # closes the server-side scanner on this same connection
            return out[:limit]
        return s._run(work)

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        s = self.s
        cells = [s._cell(table, key) for key in keys]
        for begin in range(0, len(cells), s.batch_size):
            chunk = cells[begin:begin + s.batch_size]

            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=s.wal) as batch:
                    for row, column in chunk:
                        batch.delete(row, columns=[column])
            s._run(work)


class Thrift2Path:
    """The Thrift2 gateway: one scan call per region, hand-serialized puts and gets."""

    def __init__(self, store) -> None:
        self.s = store
        self._regions: dict[str, list[bytes]] = {}  # region start keys by table: a plan, cached

    def forget_regions(self) -> None:
        self._regions.clear()

    def _call(self, work):
        return self.s._run(work, thrift2=True)

    def put(self, table: str, items: Iterable[Item]) -> None:
        split = [self.s._split(table, key) + (value,) for key, value in items]
        self._put(table, [row for row, _, _ in split], [q for _, q, _ in split], [v for _, _, v in split])

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        width = row_width(rows, len(qualifiers), repeat)
        self._put(table, rows, qualifiers, None, repeat, width)

    def _put(self, table: str, rows, qualifiers: Sequence[bytes], values: Sequence[bytes] | None,
             repeat: int = 1, width: int | None = None) -> None:
        """Cells as ``putMultiple`` calls of ``batch_size`` cells, in parallel. ``rows`` is a
        list of row keys, or ``width``-byte keys concatenated; cell j is row j, qualifier
        ``j % len(qualifiers)`` (see ``thrift2.encode_put_multiple``)."""
        s = self.s
        name, n = s._name(table), len(qualifiers)
        durability = None if s.wal else SKIP_WAL
        total, step = n * repeat, s.batch_size

        def send(start: int) -> None:
            stop = min(start + step, total)
            quals = [qualifiers[j % n] for j in range(start, stop)]
            vals = None if values is None else [values[j % n] for j in range(start, stop)]
            part = rows[start * width:stop * width] if width else rows[start:stop]
            message = thrift2.encode_put_multiple(name, s._family, part, quals, 1, vals, durability, width)
            self._call(lambda conn: conn.put_raw(message))  # a retry resends the same bytes
        s._parallel(send, list(range(0, total, step)))

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """One getMultiple per batch_size rows, in parallel."""
        s = self.s
        name = s._name(table)
        rows = sorted({s._split(table, key)[0] for key in keys})
        chunks = [rows[i:i + s.batch_size] for i in range(0, len(rows), s.batch_size)]
        found = {}
        answers = s._parallel(lambda chunk: self._call(lambda conn: conn.get_rows(name, chunk, s._family)), chunks)
        for chunk, results in zip(chunks, answers):
            for row, result in zip(chunk, results):
                if result.row is not None:
                    found[row] = {cv.qualifier: cv.value for cv in result.columnValues}
        return [found.get(row, {}).get(q) for row, q in (s._split(table, key) for key in keys)]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        return [[(key, cv.value if values else b"") for result in found for cv in result.columnValues
                 if (key := result.row + cv.qualifier).startswith(prefix)]
                for prefix, found in zip(prefixes, self._scan(table, prefixes))]

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        row = self.s._wide_row_bytes(table)
        if not all(0 < row - len(p) <= 8 for p in prefixes):
            return Store.scan_cells(self.s, table, prefixes)
        return [ListCells(*thrift2.cells_of(found, len(prefix), row))
                for prefix, found in zip(prefixes, self._scan(table, prefixes))]

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        """getScannerResults calls of up to limit + 1 rows."""
        s = self.s
        row_start = s._split(table, start)[0]
        name, n, out = s._name(table), s._row_bytes[table], []
        while stop is None or row_start < stop:
            rows = limit + 1
            found = self._call(lambda conn, ranges=[(row_start, stop)], rows=rows:
                               conn.scan_once(name, ranges, s._family, rows))
            for result in found:
                for cv in result.columnValues:
                    key = result.row + cv.qualifier if n else result.row
                    if key >= start and (stop is None or key < stop):
                        out.append((key, cv.value))
            if len(out) >= limit or len(found) < rows:
                return out[:limit]
            row_start = found[-1].row + b"\x00"
        return out[:limit]

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        s = self.s
        name = s._name(table)
        cells = [s._split(table, key) for key in keys]
        durability = None if s.wal else SKIP_WAL
        chunks = [cells[i:i + s.batch_size] for i in range(0, len(cells), s.batch_size)]
        s._parallel(lambda chunk: self._call(lambda conn: conn.delete_cells(name, chunk, s._family, durability)),
                    chunks)

    def _region_starts(self, table: str) -> list[bytes]:
        """Start keys of the table's regions (cached): scan calls are planned one per region.
        Only a plan: a stale one costs a region server hop inside the gateway, never an answer."""
        starts = self._regions.get(table)
        if starts is None:
            name = self.s._name(table)
            try:
                locations = self._call(lambda conn: conn.client.getAllRegionLocations(name))
                starts = sorted(loc.regionInfo.startKey or b"" for loc in locations) or [b""]
            except StoreError:
                raise
            except Exception as e:  # e.g. a TIOError: one call for all ranges is still exact
                logger.debug("no region locations for %s: %s", name, e)
                starts = [b""]
            self._regions[table] = starts
        return starts

    def _scan(self, table: str, prefixes: Sequence[bytes]) -> list[list]:
        """For each prefix, its rows (thriftpy2 ``TResult``, key order). The distinct
        prefixes' row ranges are grouped by region, at most ``ranges_per_call`` to a
        call; the calls run in parallel, each one ``getScannerResults``."""
        if not prefixes:
            return []
        s = self.s
        n, name = s._row_bytes[table], s._name(table)
        ranges = thrift2.merge_ranges([thrift2.prefix_range(p, n) for p in set(prefixes)])
        starts = self._region_starts(table)
        groups: list[list] = []
        last = None
        for r in ranges:
            region = bisect_right(starts, r[0]) - 1
            if region != last or len(groups[-1]) >= s.ranges_per_call:
                groups.append([])
                last = region
            groups[-1].append(r)
        parts = s._parallel(lambda group: self._call(lambda conn: conn.scan_ranges(name, group, s._family)), groups)
        results = [result for part in parts for result in part]  # groups are in key order, disjoint
        return thrift2.split_by_prefix(results, prefixes, n)
