"""Table creation through HBase's Thrift2 gateway.

Thrift1 (happybase's ``create_table``) cannot pre-split a table, set a data block
encoding or the family configuration a row-prefix bloom filter needs, and defaults
to VERSIONS 3 with no bloom filter. Thrift2's ``createTable`` can, so the tables are
created from schema/tables.json through it (``thriftpy2``, which happybase already
depends on, loads HBase's own IDL, shipped as hbase_thrift2.thrift).

Without a Thrift2 gateway, run the same DDL (``schema.hbase_shell_ddl``) in the HBase shell.
"""

from __future__ import annotations

from ...errors import StoreError
from ...index.schema import TABLES, split_keys, table_name
from .thrift2 import idl


class AdminGatewayUnreachable(StoreError):
    """No Thrift2 gateway answers where tables are to be created."""


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
            timeToLive=t.get("ttl"))  # seconds (an index made with --ttl); None: forever
        descriptor = hb2.TTableDescriptor(
            tableName=hb2.TTableName(ns=b"default", qualifier=table_name(prefix, name).encode()),
            columns=[column])
        out.append((descriptor, split_keys(t)))
    return out


def create_tables(host: str, port: int, prefix: str, schema: dict, timeout_ms: int = 60000,
                  transport: str = "buffered", protocol: str = "binary") -> None:
    """Create the tables of ``schema`` under ``prefix`` through the Thrift2 gateway at host:port
    (``transport`` buffered or framed, ``protocol`` binary or compact: the store URL's)."""
    from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
    from thriftpy2.rpc import make_client
    from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

    hb2 = idl()
    descriptors = table_descriptors(schema, prefix)
    try:
        client = make_client(
            hb2.THBaseService, host, port, timeout=timeout_ms,
            trans_factory=TFramedTransportFactory() if transport == "framed" else TBufferedTransportFactory(),
            proto_factory=TCompactProtocolFactory() if protocol == "compact" else TBinaryProtocolFactory())
    except Exception as e:
        raise AdminGatewayUnreachable(
            f"creating tables needs HBase's Thrift2 gateway, not reachable at {host}:{port} ({e}); "
            "give its port as ?admin_port=N, or create the tables in the HBase shell") from None
    try:
        for descriptor, splits in descriptors:
            if client.tableExists(descriptor.tableName):
                continue
            client.createTable(descriptor, splits or None)
    except hb2.TIOError as e:
        raise StoreError(f"HBase refused to create the tables: {e.message}") from None
    finally:
        client.close()
