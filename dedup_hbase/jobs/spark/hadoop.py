"""Every call of a Spark job into the JVM (py4j): the project's JVM helper (jvm/,
``dedup.hbase.spark``) with its protocol of tab- and newline-separated strings, spoken here and
nowhere else. PySpark has no public way to the JVM (its gateway
``SparkContext._jvm`` and ``_jsc``, a DataFrame's ``_jdf``, the session's ``_jsparkSession``):
this module is the one place that reaches them.

The helper's call (its data sources, reached without py4j, are hfiles.py's, files.py's and
fingerprints.py's):

* ``IndexLookup.runs(probes, quorum, port, parent, table, family, flags, k, limit, chunk)``
  -> rows of RUNS_SCHEMA: the index read by the executors with HBase's own client.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import DedupError
from ...index.store import HFileTarget
from .connect import is_connect


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

    def args(self) -> tuple[str, int, str]:
        return self.quorum, self.port, self.parent


def _classic(spark, what: str) -> None:
    """Refuse, in one line, a Spark Connect session: this module's calls need py4j."""
    if is_connect(spark):
        raise DedupError(f"{what} does not run through Spark Connect yet (docs/spark.md#spark-connect): "
                         "use --spark-master")


def _helper(spark, what: str):
    _classic(spark, what)
    return spark.sparkContext._jvm.dedup.hbase.spark


RUNS_SCHEMA = "query long, simhash long, distance int, total long, ids array<string>, sketches array<bigint>"


def index_runs(spark, zk: ZooKeeper, table: str, family: str, probes, flags: int, k: int, limit: int | None,
               chunk: int, sketched: bool = False):
    """The helper's ``IndexLookup.runs``: per (query, prefix) row of ``probes`` (sorted by
    prefix within partitions), the index rows under the prefix within ``k`` bits of the
    query, read in the executors' JVMs (RUNS_SCHEMA: query, simhash, distance, the
    fingerprint's document count, its first ``limit`` ids or all when None, and with
    ``sketched`` (an index with a confirmation: index/confirm.py) their sketches, else null);
    ``flags``: the scheme's number of flags; ``chunk``: probes per scan. No TTL is applied."""
    rdd = _helper(spark, "check --engine spark").IndexLookup.runs(probes.select("query", "prefix")._jdf.queryExecution().toRdd().toJavaRDD(),
                                          *zk.args(), table, family, flags, k, -1 if limit is None else limit, chunk,
                                          sketched)
    return _frame(spark, rdd, RUNS_SCHEMA)


def _frame(spark, rdd, schema: str):
    """A DataFrame of a JavaRDD of Rows made by the helper, with the schema given as DDL."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import _parse_datatype_string

    parsed = spark._jsparkSession.parseDataType(_parse_datatype_string(schema).json())
    return DataFrame(spark._jsparkSession.createDataFrame(rdd, parsed), spark)
