"""Apache HBase through the Thrift1 gateway (happybase): ``hbase://HOST:PORT/?table_prefix=P``.

The URL's options are listed in url.py. Every unit of work (a get, one fully consumed scan,
one batch of mutations) runs in ``_run``: it leases a pooled connection, does the work,
returns the connection, and retries on a dropped connection. This is the only retry code
of the package. No scan outlives its lease: results are read completely inside it. The
constructor does no network I/O; the pool connects on first use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..errors import StoreError
from ..schema import TABLES, load_schema, table_name
from .base import Item, Store, prefix_end
from .url import HBASE_PORT, check_hbase_options

logger = logging.getLogger(__name__)


class HBaseStore(Store):
    """HBase tables behind the store contract. Thread-safe."""

    thread_safe = True

    def __init__(self, host: str = "127.0.0.1", port: int = HBASE_PORT, *, table_prefix: str = "dedup",
                 transport: str = "buffered", protocol: str = "binary", pool_size: int = 4,
                 batch_size: int = 2000, wal: bool = True, timeout: int = 60000, retries: int = 8,
                 admin_port: int = 9091, zk: str | None = None, zk_parent: str | None = None,
                 url: str | None = None) -> None:
        """Checks its arguments (by the rules of the URL options, url.py); connects nowhere."""
        check_hbase_options(table_prefix=table_prefix, transport=transport, protocol=protocol,
                            pool_size=pool_size, batch_size=batch_size, wal=wal, timeout=timeout,
                            retries=retries, admin_port=admin_port,
                            **{k: v for k, v in (("zk", zk), ("zk_parent", zk_parent)) if v is not None})
        self.host, self.port, self.admin_port = host, port, admin_port
        self.zk, self.zk_parent = zk, zk_parent  # ZooKeeper: only the Spark engine's bulk load talks to it
        self.table_prefix = table_prefix
        self.transport, self.protocol = transport, protocol
        self.pool_size, self.batch_size, self.wal = pool_size, batch_size, wal
        self.timeout, self.retries = timeout, retries
        self.url = url or f"hbase://{host}:{port}/?table_prefix={table_prefix}"
        self._pool = None
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

    def _run(self, work):
        """Run ``work(connection)`` on a leased connection; retry when it drops.

        Only idempotent work goes through here (puts of the same cells, deletes,
        fully consumed scans), so repeating an attempt is always safe.
        """
        from thriftpy2.transport import TTransportException

        for attempt in range(1, self.retries + 1):
            try:
                with self._connections().connection() as conn:
                    return work(conn)
            except (OSError, TTransportException) as e:  # OSError: sockets reset, refused, broken
                if attempt == self.retries:
                    raise StoreError(f"HBase at {self.host}:{self.port} failed {attempt} times: {e}") from None
                logger.debug("HBase call failed (%s), attempt %d of %d", e, attempt, self.retries)
                time.sleep(min(0.2 * 2 ** attempt, 5))

    def _table(self, conn, table: str):
        if table not in self._row_bytes:
            raise StoreError(f"{self.url}: no table {table!r}")
        return conn.table(table_name(self.table_prefix, table))

    # -- key <-> (row, column) --------------------------------------------------

    def _cell(self, table: str, key: bytes) -> tuple[bytes, bytes]:
        n = self._row_bytes[table]
        return (key[:n], self._family + b":" + key[n:]) if n else (key, self._family + b":")

    @staticmethod
    def _keys(row: bytes, cells: dict) -> list[Item]:
        return [(row + column.split(b":", 1)[1], value) for column, value in sorted(cells.items())]

    def _row_range(self, table: str, prefix: bytes) -> tuple[bytes, bytes | None]:
        n = self._row_bytes[table]
        if n and len(prefix) < n:
            # Rows are exactly n bytes: this stop row shares the whole prefix with the start
            # row, which lets HBase use the row-prefix bloom filter (a stop of prefix+1 would not).
            return prefix, prefix + b"\xff" * (n - len(prefix)) + b"\x00"
        row = prefix[:n] if n else prefix
        return row, (row + b"\x00" if n else prefix_end(prefix))

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

    # -- data ----------------------------------------------------------------

    def put(self, table: str, items: Iterable[Item]) -> None:
        cells = [self._cell(table, key) + (value,) for key, value in items]
        for start in range(0, len(cells), self.batch_size):
            chunk = cells[start:start + self.batch_size]

            def work(conn, chunk=chunk):
                with self._table(conn, table).batch(wal=self.wal) as batch:
                    for row, column, value in chunk:
                        batch.put(row, {column: value})
            self._run(work)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        cells = [self._cell(table, key) for key in keys]
        rows = sorted({row for row, _ in cells})
        found = dict(self._run(lambda conn: self._table(conn, table).rows(rows, columns=[self._family])))
        return [found.get(row, {}).get(column) for row, column in cells]

    def _scan_one(self, table: str, prefix: bytes, values: bool) -> list[Item]:
        start, stop = self._row_range(table, prefix)

        def work(conn):
            scan = self._table(conn, table).scan(
                row_start=start, row_stop=stop, columns=[self._family], batch_size=1000,
                filter=None if values else b"KeyOnlyFilter()")
            return [item for row, cells in scan for item in self._keys(row, cells)
                    if item[0].startswith(prefix)]
        found = self._run(work)
        return found if values else [(k, b"") for k, _ in found]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        if len(prefixes) <= 1 or self.pool_size == 1:
            return [self._scan_one(table, p, values) for p in prefixes]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.pool_size, thread_name_prefix="hbase-scan")
        return list(self._executor.map(lambda p: self._scan_one(table, p, values), prefixes))

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        row_start = start[:self._row_bytes[table]] if self._row_bytes[table] else start

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
        if pool is not None:
            while True:  # close idle pooled connections
                try:
                    pool._queue.get_nowait().close()
                except Exception:
                    break
