"""Apache HBase through its Thrift gateways: ``hbase://HOST:PORT/?table_prefix=P``.

The data path (scans, puts, gets, deletes) goes through the Thrift2 gateway at
``admin_port`` (``thrift2.py``): all the prefixes of a lookup, or of a batch of lookups,
are read with one ``getScannerResults`` call per region they fall in (a
``MultiRowRangeFilter`` when a call carries several), the calls run in parallel over a pool
of connections; puts are hand-serialized ``putMultiple`` calls of ``batch_size`` cells, also
in parallel. ``api=thrift1`` keeps the path through the Thrift1 gateway at PORT (happybase:
one scanner per prefix, three round trips each; ``mutateRows``), for gateways without
Thrift2 and for before/after measurements. Table admin (exists, drop) uses Thrift1,
creation Thrift2 (``hbase_admin.py``). Why this shape, with measurements:
docs/hbase-data-path.md. The URL's options are listed in url.py.

Every unit of work (a get, one fully consumed scan, one batch of mutations) runs in
``_run``: it leases a pooled connection (Thrift1 or Thrift2), does the work, returns the
connection, and retries on a dropped connection. This is the only retry code of the
package. No scan outlives its lease: results are read completely inside it. The
constructor does no network I/O; the pools connect on first use.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..errors import StoreError
from ..schema import TABLES, load_schema, table_name
from . import thrift2
from .base import Cells, Item, ListCells, Store, row_width
from .url import HBASE_PORT, check_hbase_options

SKIP_WAL = 1  # Thrift2's TDurability.SKIP_WAL

logger = logging.getLogger(__name__)


class HBaseStore(Store):
    """HBase tables behind the store contract. Thread-safe."""

    thread_safe = True

    def __init__(self, host: str = "127.0.0.1", port: int = HBASE_PORT, *, table_prefix: str = "dedup",
                 transport: str = "buffered", protocol: str = "binary", pool_size: int = 4,
                 batch_size: int = 10000, wal: bool = True, timeout: int = 60000, retries: int = 8,
                 admin_port: int = 9091, api: str = "thrift2", ranges_per_call: int = 1000,
                 zk: str | None = None, zk_parent: str | None = None, url: str | None = None) -> None:
        """Checks its arguments (by the rules of the URL options, url.py); connects nowhere."""
        check_hbase_options(table_prefix=table_prefix, transport=transport, protocol=protocol,
                            pool_size=pool_size, batch_size=batch_size, wal=wal, timeout=timeout,
                            retries=retries, admin_port=admin_port, api=api, ranges_per_call=ranges_per_call,
                            **{k: v for k, v in (("zk", zk), ("zk_parent", zk_parent)) if v is not None})
        self.host, self.port, self.admin_port = host, port, admin_port
        self.zk, self.zk_parent = zk, zk_parent  # ZooKeeper: only the Spark engine's bulk load talks to it
        self.table_prefix = table_prefix
        self.transport, self.protocol = transport, protocol
        self.pool_size, self.batch_size, self.wal = pool_size, batch_size, wal
        self.timeout, self.retries = timeout, retries
        self.api, self.ranges_per_call = api, ranges_per_call
        self.url = url or f"hbase://{host}:{port}/?table_prefix={table_prefix}"
        self._pool = None
        self._pool2: thrift2.Pool | None = None
        self._regions: dict[str, list[bytes]] = {}  # region start keys by table: a plan, cached
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        schema = load_schema()
        self._family = schema["family"].encode()
        self._row_bytes: dict[str, int | None] = {name: schema["tables"][name]["row_key_bytes"] for name in TABLES}

    # -- connections and the one retry loop ----------------------------------

    def _connections(self):
        with self._lock:
            if self._pool is None:
                import happybase

                try:
                    self._pool = happybase.ConnectionPool(
                        self.pool_size, host=self.host, port=self.port, timeout=self.timeout,
                        transport=self.transport, protocol=self.protocol)
                except Exception as e:
                    raise StoreError(f"cannot reach HBase at {self.host}:{self.port}: {e}") from None
            return self._pool

    def _connections2(self) -> thrift2.Pool:
        with self._lock:
            if self._pool2 is None:
                self._pool2 = thrift2.Pool(self.pool_size, self.host, self.admin_port, self.timeout,
                                           self.transport, self.protocol)
            return self._pool2

    def _run(self, work, thrift2: bool = False):
        """Run ``work(connection)`` on a leased connection (of the Thrift1 pool, or with
        ``thrift2`` of the Thrift2 pool); retry when it drops.

        Only idempotent work goes through here (puts of the same cells, deletes,
        fully consumed scans), so repeating an attempt is always safe.
        """
        from thriftpy2.thrift import TException
        from thriftpy2.transport import TTransportException

        port = self.admin_port if thrift2 else self.port
        for attempt in range(1, self.retries + 1):
            try:
                if thrift2:
                    with self._connections2().lease() as conn:
                        return work(conn)
                with self._connections().connection() as conn:
                    return work(conn)
            except (OSError, TTransportException) as e:  # OSError: sockets reset, refused, broken
                if attempt == self.retries:
                    raise StoreError(f"HBase at {self.host}:{port} failed {attempt} times: {e}") from None
                logger.debug("HBase call failed (%s), attempt %d of %d", e, attempt, self.retries)
                time.sleep(min(0.2 * 2 ** attempt, 5))
            except TException as e:  # HBase answered with an error (TIOError, TIllegalArgument): no retry
                message = getattr(e, "message", None) or str(e) or type(e).__name__
                raise StoreError(f"HBase at {self.host}:{port} refused the call: {message}") from None

    def _parallel(self, fn, items: list) -> list:
        """``[fn(x) for x in items]``, run on the store's threads when there are several."""
        if len(items) <= 1 or self.pool_size == 1:
            return [fn(x) for x in items]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.pool_size, thread_name_prefix="hbase")
        return list(self._executor.map(fn, items))

    def _name(self, table: str) -> bytes:
        if table not in self._row_bytes:
            raise StoreError(f"{self.url}: no table {table!r}")
        return table_name(self.table_prefix, table).encode()

    def _table(self, conn, table: str):
        return conn.table(self._name(table))

    # -- key <-> (row, column) --------------------------------------------------

    def _split(self, table: str, key: bytes) -> tuple[bytes, bytes]:
        """A key as (row, qualifier): the schema's row_key_bytes, or all of it the row."""
        n = self._row_bytes[table]
        return (key[:n], key[n:]) if n else (key, b"")

    def _cell(self, table: str, key: bytes) -> tuple[bytes, bytes]:
        row, qualifier = self._split(table, key)
        return row, self._family + b":" + qualifier

    @staticmethod
    def _keys(row: bytes, cells: dict) -> list[Item]:
        return [(row + column.split(b":", 1)[1], value) for column, value in sorted(cells.items())]

    def hfile_target(self):
        """HBase takes HFiles (BulkLoadHFiles, through ZooKeeper: the URL's ``zk``)."""
        from .base import HFileTarget

        return HFileTarget(self.zk, self.zk_parent, {t: table_name(self.table_prefix, t) for t in TABLES})

    # -- tables ----------------------------------------------------------------

    def exists(self) -> bool:
        names = {table_name(self.table_prefix, t).encode() for t in TABLES}
        return names <= set(self._run(lambda conn: conn.tables()))

    def create(self, schema: dict) -> None:
        if self.exists():
            raise StoreError(f"{self.url}: the tables exist already")
        from .hbase_admin import create_tables

        create_tables(self.host, self.admin_port, self.table_prefix, schema, self.timeout)

    def drop(self) -> None:
        def work(conn):
            existing = set(conn.tables())
            for t in TABLES:
                name = table_name(self.table_prefix, t)
                if name.encode() in existing:
                    conn.delete_table(name, disable=True)
        self._run(work)
        self._regions.clear()

    # -- data ----------------------------------------------------------------

    def put(self, table: str, items: Iterable[Item]) -> None:
        if self.api == "thrift2":
            split = [self._split(table, key) + (value,) for key, value in items]
            self._put2(table, [row for row, _, _ in split], [q for _, q, _ in split], [v for _, _, v in split])
            return
        cells = [self._cell(table, key) + (value,) for key, value in items]
        for start in range(0, len(cells), self.batch_size):
            chunk = cells[start:start + self.batch_size]

            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=self.wal) as batch:
                    for row, column, value in chunk:
                        batch.put(row, {column: value})
            self._run(work)

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        if self.api != "thrift2":
            return super().put_cells(table, rows, qualifiers, repeat)
        width = row_width(rows, len(qualifiers), repeat)
        self._put2(table, rows, qualifiers, None, repeat, width)

    def _put2(self, table: str, rows, qualifiers: Sequence[bytes], values: Sequence[bytes] | None,
              repeat: int = 1, width: int | None = None) -> None:
        """Cells as ``putMultiple`` calls of ``batch_size`` cells, in parallel. ``rows`` is a
        list of row keys, or ``width``-byte keys concatenated; cell j is row j, qualifier
        ``j % len(qualifiers)`` (see ``thrift2.encode_put_multiple``)."""
        name, n = self._name(table), len(qualifiers)
        durability = None if self.wal else SKIP_WAL
        total, step = n * repeat, self.batch_size

        def send(start: int) -> None:
            stop = min(start + step, total)
            quals = [qualifiers[j % n] for j in range(start, stop)]
            vals = None if values is None else [values[j % n] for j in range(start, stop)]
            part = rows[start * width:stop * width] if width else rows[start:stop]
            message = thrift2.encode_put_multiple(name, self._family, part, quals, 1, vals, durability, width)
            self._run(lambda conn: conn.put_raw(message), thrift2=True)  # a retry resends the same bytes
        self._parallel(send, list(range(0, total, step)))

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        if self.api == "thrift2":  # one getMultiple per batch_size rows, in parallel
            name = self._name(table)
            rows = sorted({self._split(table, key)[0] for key in keys})
            chunks = [rows[i:i + self.batch_size] for i in range(0, len(rows), self.batch_size)]
            found = {}
            answers = self._parallel(
                lambda chunk: self._run(lambda conn: conn.get_rows(name, chunk, self._family), thrift2=True), chunks)
            for chunk, results in zip(chunks, answers):
                for row, result in zip(chunk, results):
                    if result.row is not None:
                        found[row] = {cv.qualifier: cv.value for cv in result.columnValues}
            return [found.get(row, {}).get(q) for row, q in (self._split(table, key) for key in keys)]
        cells = [self._cell(table, key) for key in keys]
        rows = sorted({row for row, _ in cells})
        found = dict(self._run(lambda conn: self._table(conn, table).rows(rows, columns=[self._family])))
        return [found.get(row, {}).get(column) for row, column in cells]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        if self.api == "thrift2":
            return [[(key, cv.value if values else b"") for result in found for cv in result.columnValues
                     if (key := result.row + cv.qualifier).startswith(prefix)]
                    for prefix, found in zip(prefixes, self._scan2(table, prefixes))]
        return self._parallel(lambda p: self._scan_one(table, p, values), list(prefixes))

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        row = self._wide_row_bytes(table)
        if self.api != "thrift2" or not all(0 < row - len(p) <= 8 for p in prefixes):
            return super().scan_cells(table, prefixes)
        return [ListCells(*thrift2.cells_of(found, len(prefix), row))
                for prefix, found in zip(prefixes, self._scan2(table, prefixes))]

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        row_start = self._split(table, start)[0]
        if self.api == "thrift2":
            return self._scan_range2(table, row_start, start, stop, limit)

        def work(conn):
            out = []
            scanner = self._table(conn, table).scan(row_start=row_start, row_stop=stop, columns=[self._family],
                                                    batch_size=min(limit + 1, 1000))
            try:
                for row, cells in scanner:
                    out.extend(item for item in self._keys(row, cells)
                               if item[0] >= start and (stop is None or item[0] < stop))
                    if len(out) >= limit:
                        break
            finally:
                scanner.close()  # closes the server-side scanner on this same connection
            return out[:limit]
        return self._run(work)

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        if self.api == "thrift2":
            name = self._name(table)
            cells = [self._split(table, key) for key in keys]
            durability = None if self.wal else SKIP_WAL
            chunks = [cells[i:i + self.batch_size] for i in range(0, len(cells), self.batch_size)]
            self._parallel(lambda chunk: self._run(
                lambda conn: conn.delete_cells(name, chunk, self._family, durability), thrift2=True), chunks)
            return
        cells = [self._cell(table, key) for key in keys]
        for begin in range(0, len(cells), self.batch_size):
            chunk = cells[begin:begin + self.batch_size]

            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=self.wal) as batch:
                    for row, column in chunk:
                        batch.delete(row, columns=[column])
            self._run(work)

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown()
                self._executor = None
            pool, self._pool = self._pool, None
            pool2, self._pool2 = self._pool2, None
        if pool2 is not None:
            pool2.close()
        if pool is not None:
            while True:  # close idle pooled connections
                try:
                    pool._queue.get_nowait().close()
                except Exception:
                    break

    # -- Thrift1 scans: one scanner per prefix -----------------------------------

    def _scan_one(self, table: str, prefix: bytes, values: bool) -> list[Item]:
        start, stop = thrift2.prefix_range(prefix, self._row_bytes[table])

        def work(conn):
            scan = self._table(conn, table).scan(
                row_start=start, row_stop=stop, columns=[self._family], batch_size=1000,
                filter=None if values else b"KeyOnlyFilter()")
            return [item for row, cells in scan for item in self._keys(row, cells)
                    if item[0].startswith(prefix)]
        found = self._run(work)
        return found if values else [(k, b"") for k, _ in found]

    # -- Thrift2 scans: one call per region ---------------------------------------

    def _region_starts(self, table: str) -> list[bytes]:
        """Start keys of the table's regions (cached): scan calls are planned one per region.
        Only a plan: a stale one costs a region server hop inside the gateway, never an answer."""
        starts = self._regions.get(table)
        if starts is None:
            name = self._name(table)
            try:
                locations = self._run(lambda conn: conn.client.getAllRegionLocations(name), thrift2=True)
                starts = sorted(loc.regionInfo.startKey or b"" for loc in locations) or [b""]
            except StoreError:
                raise
            except Exception as e:  # e.g. a TIOError: one call for all ranges is still exact
                logger.debug("no region locations for %s: %s", name, e)
                starts = [b""]
            self._regions[table] = starts
        return starts

    def _scan2(self, table: str, prefixes: Sequence[bytes]) -> list[list]:
        """For each prefix, its rows (thriftpy2 ``TResult``, key order). The distinct
        prefixes' row ranges are grouped by region, at most ``ranges_per_call`` to a
        call; the calls run in parallel, each one ``getScannerResults``."""
        if not prefixes:
            return []
        n, name = self._row_bytes[table], self._name(table)
        ranges = thrift2.merge_ranges([thrift2.prefix_range(p, n) for p in set(prefixes)])
        starts = self._region_starts(table)
        groups: list[list] = []
        last = None
        for r in ranges:
            region = bisect_right(starts, r[0]) - 1
            if region != last or len(groups[-1]) >= self.ranges_per_call:
                groups.append([])
                last = region
            groups[-1].append(r)
        parts = self._parallel(
            lambda group: self._run(lambda conn: conn.scan_ranges(name, group, self._family), thrift2=True), groups)
        results = [result for part in parts for result in part]  # groups are in key order, disjoint
        return thrift2.split_by_prefix(results, prefixes, n)

    def _scan_range2(self, table: str, row_start: bytes, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        """``scan_range`` through Thrift2: getScannerResults calls of up to limit + 1 rows."""
        name, n, out = self._name(table), self._row_bytes[table], []
        while stop is None or row_start < stop:
            rows = limit + 1
            found = self._run(lambda conn, ranges=[(row_start, stop)], rows=rows:
                              conn.scan_once(name, ranges, self._family, rows), thrift2=True)
            for result in found:
                for cv in result.columnValues:
                    key = result.row + cv.qualifier if n else result.row
                    if key >= start and (stop is None or key < stop):
                        out.append((key, cv.value))
            if len(out) >= limit or len(found) < rows:
                return out[:limit]
            row_start = found[-1].row + b"\x00"
        return out[:limit]
