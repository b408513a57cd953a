"""Apache HBase through its Thrift gateways: ``hbase://HOST:PORT/?table_prefix=P``.

The data path (scans, puts, gets, deletes; ``hbase_paths.py``, one class per path) goes
through the Thrift2 gateway at ``admin_port`` (``thrift2.py``): all the prefixes of a lookup, or of a batch of lookups,
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
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ...errors import StoreError
from ...index.schema import TABLES, load_schema, table_name
from ...index.store import Cells, Item, Store
from ..url import HBASE_PORT, check_hbase_options
from . import thrift2
from .locks import LeaseLocks
from .paths import Thrift1Path, Thrift2Path

logger = logging.getLogger(__name__)


class HBaseStore(Store):
    """HBase tables behind the store contract. Thread-safe."""

    thread_safe = True

    def __init__(self, host: str = "127.0.0.1", port: int = HBASE_PORT, *, table_prefix: str = "dedup",
                 transport: str = "buffered", protocol: str = "binary", pool_size: int = 4,
                 batch_size: int = 10000, wal: bool = True, timeout: int = 60000, retries: int = 8,
                 admin_port: int = 9091, api: str = "thrift2", ranges_per_call: int = 1000,
                 zk: str | None = None, zk_parent: str | None = None, fleet_locks: bool = True, lease: int = 30,
                 url: str | None = None) -> None:
        """Checks its arguments (by the rules of the URL options, url.py); connects nowhere."""
        check_hbase_options(table_prefix=table_prefix, transport=transport, protocol=protocol,
                            pool_size=pool_size, batch_size=batch_size, wal=wal, timeout=timeout,
                            retries=retries, admin_port=admin_port, api=api, ranges_per_call=ranges_per_call,
                            fleet_locks=fleet_locks, lease=lease,
                            **{k: v for k, v in (("zk", zk), ("zk_parent", zk_parent)) if v is not None})
        self.host, self.port, self.admin_port = host, port, admin_port
        self.zk, self.zk_parent = zk, zk_parent  # ZooKeeper: only the Spark engine's bulk load talks to it
        self.table_prefix = table_prefix
        self.transport, self.protocol = transport, protocol
        self.pool_size, self.batch_size, self.wal = pool_size, batch_size, wal
        self.timeout, self.retries = timeout, retries
        self.api, self.ranges_per_call = api, ranges_per_call
        self.use_fleet_locks, self.lease = fleet_locks, lease
        self._data = Thrift2Path(self) if api == "thrift2" else Thrift1Path(self)  # no I/O
        self._locks: LeaseLocks | None = None
        self.url = url or f"hbase://{host}:{port}/?table_prefix={table_prefix}"
        self._pool = None
        self._pool2: thrift2.Pool | None = None
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
        fully consumed scans), so repeating an attempt is always safe; the one exception,
        the locks' check-and-set calls, read the cell after a "no" (hbase_locks.py).
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

    def fleet_locks(self) -> LeaseLocks | None:
        """Leases in the locks table (hbase_locks.py), unless the URL says fleet_locks=false."""
        if not self.use_fleet_locks:
            return None
        with self._lock:
            if self._locks is None:
                self._locks = LeaseLocks(self._call2, self._name("locks"), self._family, self.lease, self._parallel)
            return self._locks

    def _call2(self, method: str, *args):
        """One Thrift2 call by name (the locks' check-and-set calls), through the retry loop."""
        return self._run(lambda conn: getattr(conn.client, method)(*args), thrift2=True)

    def _name(self, table: str) -> bytes:
        if table not in self._row_bytes:
            raise StoreError(f"{self.url}: no table {table!r}")
        return table_name(self.table_prefix, table).encode()

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
        from ...index.store import HFileTarget

        return HFileTarget(self.zk, self.zk_parent, {t: table_name(self.table_prefix, t) for t in TABLES})

    # -- tables ----------------------------------------------------------------

    def exists(self) -> bool:
        names = {table_name(self.table_prefix, t).encode() for t in TABLES if t != "locks"}  # older stores have none
        return names <= set(self._run(lambda conn: conn.tables()))

    def create(self, schema: dict) -> None:
        if self.exists():
            raise StoreError(f"{self.url}: the tables exist already")
        from .admin import create_tables

        create_tables(self.host, self.admin_port, self.table_prefix, schema, self.timeout, self.transport, self.protocol)

    def drop(self) -> None:
        def work(conn):
            existing = set(conn.tables())
            for t in TABLES:
                name = table_name(self.table_prefix, t)
                if name.encode() in existing:
                    conn.delete_table(name, disable=True)
        self._run(work)
        self._data.forget_regions()

    # -- data: the chosen path (hbase_paths.py) ---------------------------------

    def put(self, table: str, items: Iterable[Item]) -> None:
        self._data.put(table, items)

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        self._data.put_cells(table, rows, qualifiers, repeat)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        return self._data.get(table, keys) if keys else []

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        return self._data.scan(table, prefixes, values)

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        return self._data.scan_cells(table, prefixes)

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        return self._data.scan_range(table, start, stop, limit)

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        self._data.delete(table, keys)

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
