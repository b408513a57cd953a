"""``hbase://HOST:PORT/?table_prefix=P``: Apache HBase through the Thrift1 gateway (happybase).

URL options (all optional)::

    table_prefix=dedup     tables are P_index, P_docs, P_meta
    transport=buffered     or framed (must match the Thrift server: -threadpool is buffered)
    protocol=binary        or compact
    pool_size=4            pooled connections; the prefix scans of a lookup run in parallel on them
    batch_size=2000        cells per mutateRows call when writing
    wal=true               false: bulk writes skip the write-ahead log (faster; a region server
                           crash before the next flush loses them: rerun the load, it is idempotent)
    timeout=60000          socket timeout in ms
    retries=8              attempts per unit of work (connection dropped, server idle timeout,
                           gateway restarting: about 20 s of back-off in all)
    admin_port=9091        the Thrift2 gateway, used only by ``create`` (split keys, bloom filter,
                           encoding, compression: Thrift1 cannot set them)
    zk=HOST[,HOST]:PORT    HBase's ZooKeeper quorum, used only by ``load --engine spark`` (region
                           boundaries and BulkLoadHFiles talk to HBase directly, not through Thrift)
    zk_parent=/hbase       HBase's root znode (zookeeper.znode.parent), if not the default

Every unit of work (a get, one fully consumed scan, one batch of mutations) runs in
``_run``: it leases a pooled connection, does the work, returns the connection,
and retries on a dropped connection. This is the only retry code of the package.
No scan outlives its lease: results are read completely inside it. The
constructor does no network I/O; the pool connects on first use.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

from ..errors import StoreError
from ..schema import TABLES, table_name
from .base import Item, Store, prefix_end

logger = logging.getLogger(__name__)

_OPTIONS = {"table_prefix": str, "transport": str, "protocol": str, "pool_size": int,
            "batch_size": int, "wal": str, "timeout": int, "retries": int, "admin_port": int,
            "zk": str, "zk_parent": str}
_FAMILY = b"d"


class HBaseStore(Store):
    """HBase tables behind the store contract. Thread-safe."""

    def __init__(self, host: str = "127.0.0.1", port: int = 9090, *, table_prefix: str = "dedup",
                 transport: str = "buffered", protocol: str = "binary", pool_size: int = 4,
                 batch_size: int = 2000, wal: bool = True, timeout: int = 60000, retries: int = 8,
                 admin_port: int = 9091, zk: str | None = None, zk_parent: str | None = None,
                 url: str | None = None) -> None:
        if transport not in ("buffered", "framed"):
            raise ValueError(f"transport must be buffered or framed, not {transport!r}")
        if protocol not in ("binary", "compact"):
            raise ValueError(f"protocol must be binary or compact, not {protocol!r}")
        for name, value in (("pool_size", pool_size), ("batch_size", batch_size), ("retries", retries),
                            ("timeout", timeout)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, not {value}")
        if not table_prefix.replace("_", "").isalnum():
            raise ValueError(f"table_prefix may hold letters, digits and _ only, not {table_prefix!r}")
        self.host, self.port, self.admin_port = host, port, admin_port
        self.zk, self.zk_parent = zk, zk_parent
        self.table_prefix = table_prefix
        self.transport, self.protocol = transport, protocol
        self.pool_size, self.batch_size, self.wal = pool_size, batch_size, wal
        self.timeout, self.retries = timeout, retries
        self.url = url or f"hbase://{host}:{port}/?table_prefix={table_prefix}"
        self._pool = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._row_bytes: dict[str, int | None] = {"index": 13, "docs": None, "meta": None}

    @classmethod
    def from_url(cls, url: str) -> "HBaseStore":
        parts = urlsplit(url)
        if parts.scheme != "hbase" or not parts.hostname:
            raise ValueError(f"an HBase URL looks like hbase://HOST:PORT/?table_prefix=P, not {url!r}")
        kwargs = {}
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            if key not in _OPTIONS:
                raise ValueError(f"unknown HBase URL option {key!r}: use {', '.join(_OPTIONS)}")
            try:
                kwargs[key] = _OPTIONS[key](values[-1])
            except ValueError:
                raise ValueError(f"HBase URL option {key}={values[-1]!r} is not a number") from None
        if "wal" in kwargs:
            if kwargs["wal"] not in ("true", "false"):
                raise ValueError(f"HBase URL option wal must be true or false, not {kwargs['wal']!r}")
            kwargs["wal"] = kwargs["wal"] == "true"
        return cls(parts.hostname, parts.port or 9090, url=url, **kwargs)

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
            except (TTransportException, socket.error, BrokenPipeError) as e:
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
        return (key[:n], _FAMILY + b":" + key[n:]) if n else (key, _FAMILY + b":")

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
        found = dict(self._run(lambda conn: self._table(conn, table).rows(rows, columns=[_FAMILY])))
        return [found.get(row, {}).get(column) for row, column in cells]

    def _scan_one(self, table: str, prefix: bytes, values: bool) -> list[Item]:
        start, stop = self._row_range(table, prefix)

        def work(conn):
            scan = self._table(conn, table).scan(
                row_start=start, row_stop=stop, columns=[_FAMILY], batch_size=1000,
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
            scanner = self._table(conn, table).scan(row_start=row_start, row_stop=stop, columns=[_FAMILY],
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
