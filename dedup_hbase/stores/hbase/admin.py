"""The store's tables as a whole: whether they exist, creating them, dropping them.

Creation goes through the Thrift2 gateway: Thrift1 (happybase's ``create_table``) cannot
pre-split a table, set a data block encoding or the family configuration a row-prefix bloom
filter needs, and defaults to VERSIONS 3 with no bloom filter; Thrift2's ``createTable`` can,
so the tables are made from schema/tables.json through it, each on a connection of its own,
side by side, not retried: a Thrift2 gateway that is not there is ``AdminGatewayUnreachable``
at once, and the same DDL then runs in the HBase shell (``schema.hbase_shell_ddl``,
``dedup-hbase schema``). Whether the tables exist goes through the Thrift2 pool (``tableExists``:
hbase:meta, not the master), dropping them (side by side too) through the Thrift1 gateway's
pool; both through the retry loop (connections.py).
"""

from __future__ import annotations

from ...errors import StoreError
from ...index.schema import TABLES, split_keys, table_name
from . import AdminGatewayUnreachable
from .connections import Gateways
from .tables import Tables
from .wire import idl


class Admin:
    """Table admin for the tables ``tables`` names, on ``gateways``."""

    def __init__(self, gateways: Gateways, tables: Tables) -> None:
        self.gateways, self.tables = gateways, tables

    def exists(self) -> bool:
        """True when every table of the schema is there (but the locks table: older stores have
        none). Thrift2's ``tableExists`` reads hbase:meta on a region server, so this answers while
        HBase's master is down (listing the tables would wait for the master): a store opens, and
        its lookups and writes go on, as HBase's own clients do."""
        hb2 = idl()
        names = [hb2.TTableName(ns=b"default", qualifier=name.encode())
                 for t, name in self.tables.names().items() if t != "locks"]
        return all(self.gateways.parallel(lambda n: self.gateways.call("tableExists", n), names))

    def create(self, schema: dict) -> None:
        """Create the tables of ``schema``, side by side (HBase's master runs the creations in
        parallel); a StoreError when they exist already. A table that appeared meanwhile (its
        creation by an earlier ``init`` that stopped waiting for the master, which the Thrift2
        gateway goes on retrying) is left as it is."""
        if self.exists():
            raise StoreError(f"{self.tables.url}: the tables exist already")
        self.gateways.parallel(self._create_one, table_descriptors(schema, self.tables.prefix))

    def _create_one(self, table: tuple[object, list[bytes]]) -> None:
        """One table (descriptor, split keys), on a Thrift2 connection of its own."""
        hb2 = idl()
        descriptor, splits = table
        channel = self.gateways.channel()
        try:
            channel.open()
        except Exception as e:
            raise AdminGatewayUnreachable(
                f"creating tables needs HBase's Thrift2 gateway, not reachable at {channel.host}:{channel.port} "
                f"({e}); give its port as ?admin_port=N, or create the tables in the HBase shell") from None
        try:
            if not channel.call("tableExists", descriptor.tableName):
                channel.call("createTable", descriptor, splits or None)
        except hb2.TIOError as e:
            if "TableExistsException" in (e.message or ""):
                # made between the check and the creation: by another init, or by the gateway
                # still retrying the creation of an init that gave up waiting for the master
                return
            raise StoreError(f"HBase refused to create the tables: {e.message}") from None
        except TimeoutError:
            raise StoreError(f"HBase did not create the tables within {channel.timeout_ms / 1000:g} s (no answer "
                             f"through the Thrift2 gateway at {channel.host}:{channel.port}): creating a table needs "
                             "HBase's master; is it running? `dedup-hbase init` again once it is") from None
        finally:
            channel.close()

    def drop(self) -> None:
        """Delete every table of the schema that is there, with its data, side by side."""
        existing = set(self.gateways.run1(lambda conn: conn.tables()))
        names = [name for name in self.tables.names().values() if name.encode() in existing]
        self.gateways.parallel(self._drop_one, names)

    def _drop_one(self, name: str) -> None:
        self.gateways.run1(lambda conn: conn.delete_table(name, disable=True))


def table_descriptors(schema: dict, prefix: str) -> list[tuple[object, list[bytes]]]:
    """Thrift2 table descriptors and split keys for every table of ``schema``."""
    hb2 = idl()
    family = schema["family"].encode()
    out = []
    for name in TABLES:
        t = schema["tables"][name]
        config = {}
        if t["bloom_filter"] == "ROWPREFIX_FIXED_LENGTH":
            config["RowPrefixBloomFilter.prefix_length"] = str(t["bloom_prefix_length"])
        column = hb2.TColumnFamilyDescriptor(
            name=family, maxVersions=t["versions"], configuration=config or None,
            bloomnFilterType=getattr(hb2.TBloomFilterType, t["bloom_filter"]),
            dataBlockEncoding=getattr(hb2.TDataBlockEncoding, t["data_block_encoding"]),
            compressionType=getattr(hb2.TCompressionAlgorithm, t["compression"]),
            blockSize=t.get("block_size"),  # None: HBase's 64 KB
            timeToLive=t.get("ttl"))  # seconds (an index made with --ttl); None: forever
        descriptor = hb2.TTableDescriptor(
            tableName=hb2.TTableName(ns=b"default", qualifier=table_name(prefix, name).encode()),
            columns=[column])
        out.append((descriptor, split_keys(t)))
    return out
