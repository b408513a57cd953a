"""Every call of a Spark job into the JVM (py4j): Hadoop's file systems, and the project's
JVM helper (jvm/, ``dedup.hbase.spark``) with its protocol of tab- and newline-separated
strings, spoken here and nowhere else. PySpark has no public way to the JVM (its gateway
``SparkContext._jvm`` and ``_jsc``, a DataFrame's ``_jdf``, the session's ``_jsparkSession``):
this module is the one place that reaches them.

The helper's calls:

* ``BulkLoad.splitKeys(quorum, port, parent, "table\\ntable")`` -> one line per table: its
  region start keys but the first, hex, comma-joined.
* ``HFileWriter.write(rows, specs, firstPartitions, timestamp, tag)``: ``specs`` one line
  per table, TAB-separated (``TableFiles.line``); returns "path TAB cells TAB bytes" per file.
* ``BulkLoad.load(quorum, port, parent, table, folder, copy)`` -> files loaded.
* ``JsonLines.read(jsc, uri, ordinal, fields, splitBytes)`` -> rows of JSON_LINES_SCHEMA.
* ``IndexLookup.runs(probes, quorum, port, parent, table, family, flags, k, limit, chunk)``
  -> rows of RUNS_SCHEMA: the index read by the executors with HBase's own client.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import DedupError
from ...index.store import HFileTarget


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


@dataclass(frozen=True)
class TableFiles:
    """What the HFile writer needs for one table: where its files go, the table, its
    family's settings (schema/tables.json) and its region start keys."""

    folder: str
    table: str
    family: str
    compression: str
    encoding: str
    bloom: str
    bloom_prefix: int
    splits: list[bytes]
    block_size: int = 65536

    def line(self) -> str:
        return "\t".join([self.folder, self.table, self.family, self.compression, self.encoding, self.bloom,
                          str(self.bloom_prefix), str(self.block_size), ",".join(s.hex() for s in self.splits)])


@dataclass(frozen=True)
class Written:
    path: str
    cells: int
    bytes: int


def _helper(spark):
    return spark.sparkContext._jvm.dedup.hbase.spark


def region_starts(spark, zk: ZooKeeper, tables: list[str]) -> dict[str, list[bytes]]:
    """Each table's region start keys but the first (empty) one."""
    lines = _helper(spark).BulkLoad.splitKeys(*zk.args(), "\n".join(tables)).split("\n")
    return {table: [bytes.fromhex(h) for h in line.split(",") if h] for table, line in zip(tables, lines)}


def write_hfiles(spark, rows, tables: list[TableFiles], firsts: list[int], timestamp: int, tag: int) -> list[Written]:
    """HFiles of ``rows`` (a DataFrame of key, qualifier, value, sorted within partitions;
    partition p belongs to the last table whose ``firsts`` entry is at most p), written in
    the executors' JVMs from Spark's internal rows."""
    gateway = spark.sparkContext._gateway
    firsts_java = gateway.new_array(spark.sparkContext._jvm.int, len(firsts))
    for i, first in enumerate(firsts):
        firsts_java[i] = first
    written = _helper(spark).HFileWriter.write(rows._jdf.queryExecution().toRdd().toJavaRDD(),
                                               "\n".join(t.line() for t in tables), firsts_java, timestamp, tag)
    out = []
    for line in written:
        path, cells, size = line.split("\t")
        out.append(Written(path, int(cells), int(size)))
    return out


def bulk_load(spark, zk: ZooKeeper, table: str, folder: str, copy: bool = False) -> int:
    """BulkLoadHFiles of every HFile under ``folder/<family>/`` into ``table`` (from the
    driver's JVM); the number of files loaded. A file that no longer fits one region (the
    table split or merged since the files were cut) is not split (HBASE-30501: a retried load
    of split files lost data before HBase 2.6.8): RegionsChanged, and so when the regions are
    seen mid-change. Any other failure: BulkLoadFailed with the JVM's causes, read while the
    JVM still answers (a py4j error's text can no longer be read once Spark has stopped)."""
    try:
        loaded = _helper(spark).BulkLoad.load(*zk.args(), table, folder, copy)
    except Exception as e:
        raise BulkLoadFailed(_text(e)) from None
    if loaded < 0:
        raise RegionsChanged(table)
    return loaded


class BulkLoadFailed(DedupError):
    """BulkLoadHFiles stopped for a reason other than the table's regions changing."""


class RegionsChanged(DedupError):
    """A table's regions split or merged between reading them and bulk-loading HFiles cut at
    them: the load stopped (what it loaded before is loaded again, cell for cell, by a load of
    files cut anew)."""

    def __init__(self, table: str):
        super().__init__(f"the regions of {table} changed (a split or a merge) while the HFiles were written: "
                         "not loaded (a load that splits HFiles can lose data, HBASE-30501); run the same command "
                         "again: it cuts the files at the regions of then")
        self.table = table


def _text(error: Exception) -> str:
    """What py4j gives of a JVM error: its message's last line that names the JVM's error
    (BulkLoad's causes), else the whole text (whose str() may itself fail)."""
    try:
        text = str(error)
    except Exception:
        return type(error).__name__
    lines = [line for line in text.splitlines() if "bulk load of " in line]
    return lines[0][lines[0].index("bulk load of "):] if lines else text


def _fs(spark, uri: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def list_files(spark, uri: str) -> list[tuple[str, str | None]]:
    """Files under a URI through Spark's Hadoop file systems: (uri, path relative to a
    folder given, or None for a file given), sorted, hidden names skipped."""
    path, fs = _fs(spark, uri)
    status = fs.getFileStatus(path)
    if not status.isDirectory():
        return [(status.getPath().toString(), None)]
    root = status.getPath().toString().rstrip("/") + "/"
    found, it = [], fs.listFiles(path, True)
    while it.hasNext():
        name = it.next().getPath().toString()
        relative = name[len(root):] if name.startswith(root) else name
        if not any(part.startswith((".", "_")) for part in relative.split("/")):
            found.append((name, relative))
    return sorted(found, key=lambda x: x[1])


def rename_suffix(spark, uri: str, old: str, new: str) -> None:
    """Rename the files directly in the folder ``uri`` whose names end with ``old`` to end
    with ``new`` (e.g. Spark's text part files to ``.jsonl``)."""
    path, fs = _fs(spark, uri)
    jvm = spark.sparkContext._jvm
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if status.isFile() and name.endswith(old):
            fs.rename(status.getPath(), jvm.org.apache.hadoop.fs.Path(path, name[:-len(old)] + new))


def delete(spark, uri: str) -> None:
    """Remove a file or folder (recursively) if it is there."""
    path, fs = _fs(spark, uri)
    if fs.exists(path):
        fs.delete(path, True)


JSON_LINES_SCHEMA = ("ordinal int, line long, id string, simhash long, title string, length long, "
                     "text_bytes long, featurizer string, raw binary")


def json_lines(spark, uri: str, ordinal: int, field_names: list[str], split_bytes: int):
    """The helper's ``JsonLines.read``: the rows (JSON_LINES_SCHEMA) of a JSON lines file of
    precomputed fingerprints, read and checked in the executors' JVMs; ``field_names``: the
    id, text, simhash, title and featurizer fields."""
    rdd = _helper(spark).JsonLines.read(spark.sparkContext._jsc, uri, ordinal, "\t".join(field_names), split_bytes)
    return _frame(spark, rdd, JSON_LINES_SCHEMA)


RUNS_SCHEMA = "query long, simhash long, distance int, total long, ids array<string>, sketches array<bigint>"


def index_runs(spark, zk: ZooKeeper, table: str, family: str, probes, flags: int, k: int, limit: int | None,
               chunk: int, sketched: bool = False):
    """The helper's ``IndexLookup.runs``: per (query, prefix) row of ``probes`` (sorted by
    prefix within partitions), the index rows under the prefix within ``k`` bits of the
    query, read in the executors' JVMs (RUNS_SCHEMA: query, simhash, distance, the
    fingerprint's document count, its first ``limit`` ids or all when None, and with
    ``sketched`` (an index with a confirmation: index/confirm.py) their sketches, else null);
    ``flags``: the scheme's number of flags; ``chunk``: probes per scan. No TTL is applied."""
    rdd = _helper(spark).IndexLookup.runs(probes.select("query", "prefix")._jdf.queryExecution().toRdd().toJavaRDD(),
                                          *zk.args(), table, family, flags, k, -1 if limit is None else limit, chunk,
                                          sketched)
    return _frame(spark, rdd, RUNS_SCHEMA)


def _frame(spark, rdd, schema: str):
    """A DataFrame of a JavaRDD of Rows made by the helper, with the schema given as DDL."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import _parse_datatype_string

    parsed = spark._jsparkSession.parseDataType(_parse_datatype_string(schema).json())
    return DataFrame(spark._jsparkSession.createDataFrame(rdd, parsed), spark)


def single_file(spark, folder: str, target: str) -> None:
    """The one data file a job wrote into ``folder`` (Spark's ``part-*``; none when it wrote no
    rows: then an empty file) moved to ``target``, then ``folder`` removed."""
    jvm = spark.sparkContext._jvm
    path, fs = _fs(spark, folder)
    destination = jvm.org.apache.hadoop.fs.Path(target)
    if fs.exists(destination):
        fs.delete(destination, False)
    parts = [s.getPath() for s in fs.listStatus(path) if s.getPath().getName().startswith("part-")]
    if len(parts) > 1:
        raise DedupError(f"{folder}: {len(parts)} files where one was written")
    if parts:
        if not fs.rename(parts[0], destination):
            raise DedupError(f"could not move {parts[0].toString()} to {target}")
    else:
        fs.create(destination, True).close()
    fs.delete(path, True)
