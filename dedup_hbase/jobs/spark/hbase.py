"""HBase seen from a Spark job: its ZooKeeper (the executors' and the driver's way to the
region servers), and the index read in bulk by the JVM helper's data source
``dedup-hbase-lookup`` (jvm/ IndexLookup) through the DataFrame API alone, so that it runs
through Spark Connect too."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import DedupError
from ...index.store import HFileTarget
from . import files


@dataclass(frozen=True)
class ZooKeeper:
    quorum: str
    port: int
    parent: str

    @classmethod
    def of(cls, target: HFileTarget, url: str) -> "ZooKeeper":
        """HBase's ZooKeeper from a store's ``hfile_target``; refuses one without it."""
        if not target.zk:
            raise DedupError(f"{url}: the Spark engine reaches HBase through ZooKeeper: add zk=HOST:PORT "
                             "(HBase's hbase.zookeeper.quorum and clientPort) to the store URL")
        quorum, _, port = target.zk.rpartition(":")
        if not quorum or not port.isdigit():
            raise DedupError(f"zk={target.zk!r}: give the ZooKeeper quorum as HOST[,HOST...]:PORT")
        return cls(quorum, int(port), target.zk_parent or "")


RUNS_SCHEMA = ("query long, simhash long, distance int, total long, ids array<string>, sketches array<bigint>, "
               "kepts array<string>")


def index_runs(spark, zk: ZooKeeper, table: str, family: str, probes, folder: str, flags: int, k: int,
               limit: int | None, chunk: int, sketched: bool = False):
    """Per (query, prefix) row of ``probes`` (sorted by prefix within partitions), the index
    rows under the prefix within ``k`` bits of the query, read in the executors' JVMs
    (RUNS_SCHEMA: query, simhash, distance, the fingerprint's document count, its first
    ``limit`` ids or all when None, and with ``sketched`` (an index with sketches:
    index/confirm.py) their sketches and kept texts, else null); ``flags``: the scheme's number of flags;
    ``chunk``: probes per scan. The probes are written first, a file per partition, to
    ``folder`` (replaced; on a file system the executors share: remove it with
    ``files.remove`` once the runs are no longer read); a task reads one file. No TTL is
    applied."""
    from pyspark.sql import functions as F

    files.write_folder(probes.select(F.concat_ws(" ", "query", "prefix").alias("value")), folder, "")
    options = dict(probes=folder, quorum=zk.quorum, port=str(zk.port), parent=zk.parent, table=table, family=family,
                   flags=str(flags), k=str(k), limit=str(-1 if limit is None else limit), chunk=str(chunk),
                   sketched=str(sketched).lower())
    return spark.read.format("dedup-hbase-lookup").options(**options).load()
