"""Apache HBase through its Thrift gateways: ``hbase://HOST:PORT/?table_prefix=P``.

``HBaseStore`` implements the store contract (index/store.py) by composing the package's
parts, each with its own small interface:

- ``Gateways`` (connections.py): pools of connections to the Thrift1 gateway at PORT (which
  tables exist, dropping them) and the Thrift2 gateway at ``admin_port`` (the data), the one retry loop, the store's threads;
- ``Tables`` (tables.py): table names under the prefix, keys as HBase cells;
- the data path (datapath.py): ``Thrift2Path`` (thrift2.py: one scan call per region for all
  prefixes of a lookup or batch, hand-serialized puts and gets);
- ``Admin`` (admin.py): exists, create (through Thrift2), drop;
- ``LeaseLocks`` (locks.py): the fleet locks, on the locks table through ``Gateways.call``.

The URL's options are listed in url.py; why the data path has this shape, with
measurements: docs/hbase-data-path.md. The constructor does no network I/O; the pools
connect on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from ...index.schema import row_key_bytes
from ...index.store import Cells, HFileTarget, Item, Store
from ..url import HBASE_PORT, check_hbase_options
from .admin import Admin
from .connections import Gateways
from .datapath import DataPath
from .locks import LeaseLocks
from .tables import Tables
from .thrift2 import Thrift2Path


class HBaseStore(Store):
    """HBase tables behind the store contract. Thread-safe."""

    thread_safe = True

    def __init__(self, host: str = "127.0.0.1", port: int = HBASE_PORT, *, table_prefix: str = "dedup",
                 transport: str = "buffered", pool_size: int = 4,
                 batch_size: int = 10000, wal: bool = True, timeout: int = 60000, retries: int = 8,
                 admin_port: int = 9091, ranges_per_call: int = 1000,
                 zk: str | None = None, zk_parent: str | None = None, fleet_locks: bool = True, lease: int = 30,
                 lock_stripes: int = 64, url: str | None = None) -> None:
        """Checks its arguments (by the rules of the URL options, url.py); connects nowhere."""
        check_hbase_options(table_prefix=table_prefix, transport=transport,
                            pool_size=pool_size, batch_size=batch_size, wal=wal, timeout=timeout,
                            retries=retries, admin_port=admin_port, ranges_per_call=ranges_per_call,
                            fleet_locks=fleet_locks, lease=lease, lock_stripes=lock_stripes,
                            **{k: v for k, v in (("zk", zk), ("zk_parent", zk_parent)) if v is not None})
        self.host, self.port, self.admin_port = host, port, admin_port
        self.zk, self.zk_parent = zk, zk_parent  # ZooKeeper: only the Spark engine's bulk load talks to it
        self.table_prefix = table_prefix
        self.transport = transport
        self.pool_size, self.batch_size, self.wal = pool_size, batch_size, wal
        self.timeout, self.retries = timeout, retries
        self.ranges_per_call = ranges_per_call
        self.use_fleet_locks, self.lease, self.lock_stripes = fleet_locks, lease, lock_stripes
        self.url = url or f"hbase://{host}:{port}/?table_prefix={table_prefix}"
        self.tables = Tables(table_prefix, self.url)
        self.gateways = Gateways(host, port, admin_port, pool_size=pool_size, timeout=timeout, retries=retries,
                                 transport=transport)
        self.data: DataPath = Thrift2Path(self.gateways, self.tables, batch_size=batch_size, wal=wal,
                                          ranges_per_call=ranges_per_call)
        self.admin = Admin(self.gateways, self.tables)
        self._locks: LeaseLocks | None = None
        self._lock = threading.Lock()

    def fleet_locks(self) -> LeaseLocks | None:
        """Leases in the locks table (locks.py), unless the URL says fleet_locks=false."""
        if not self.use_fleet_locks:
            return None
        with self._lock:
            if self._locks is None:
                self._locks = LeaseLocks(self.gateways.call, self.tables.name("locks"), self.tables.family,
                                         self.lease, self.gateways.parallel, self.lock_stripes)
            return self._locks

    def hfile_target(self) -> HFileTarget:
        """HBase takes HFiles (BulkLoadHFiles, through ZooKeeper: the URL's ``zk``)."""
        return HFileTarget(self.zk, self.zk_parent, self.tables.names())

    # -- tables ----------------------------------------------------------------

    def exists(self) -> bool:
        return self.admin.exists()

    def create(self, schema: dict) -> None:
        self.admin.create(schema)

    def drop(self) -> None:
        self.admin.drop()
        self.data.forget_regions()

    # -- data: the chosen path ----------------------------------------------------

    def put(self, table: str, items: Iterable[Item]) -> None:
        self.data.put(table, items)

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        if self.data.bulk_cells:
            self.data.put_cells(table, rows, qualifiers, repeat)
        else:
            super().put_cells(table, rows, qualifiers, repeat)

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        return self.data.get(table, keys) if keys else []

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        return self.data.scan(table, prefixes, values)

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        row = row_key_bytes(table)  # None: not a wide-row table (the contract's default refuses it)
        if self.data.bulk_cells and row and all(0 < row - len(p) <= 8 for p in prefixes):
            return self.data.scan_cells(table, prefixes)
        return super().scan_cells(table, prefixes)

    def large_rows_kept(self):
        return self.data.large_rows_kept()

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        return self.data.scan_range(table, start, stop, limit)

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        self.data.delete(table, keys)

    def close(self) -> None:
        self.gateways.close()
