"""``load --engine spark``: the load as one Spark job, HBase written by HFiles and bulk load.

Data flow (D = the driver, E = the executors' Python workers, J = the executors' JVMs)::

    D  plan the input files as corpus.read_records walks them (order = the input order)
    E  parse each file with corpus.py's readers (Parquet: Spark's reader, E turns rows into records)
    E  fingerprint (one Fingerprinter per worker) -> records: simhash or error   [persisted]
    D  accounting (one aggregate) and the rejects, in input order (toLocalIterator)
    E  last record of each id wins (max of (file, line) per id: one shuffle)
    E  ids the index holds already: their old fingerprints; changed ones' index rows deleted
       (skipped when the document table is empty)
    E  index rows from Scheme.key_table, document rows as Index.add_many writes them, each
       tagged with its HBase region; shuffled so a Spark partition holds one region's rows,
       sorted by (row, qualifier)
    J  HFiles (dedup.hbase.spark.HFileWriter: StoreFileWriter, the family's compression,
       encoding and bloom filter), one per partition and region, into the staging folder
    D  BulkLoadHFiles (dedup.hbase.spark.BulkLoad, the driver's JVM): index table, then the
       document table (a document row is written last, as in a local load)

Timestamps: every cell of a job gets one timestamp, the job's start (ms). Index cells are
keyed by (row, document id) with VERSIONS 1, so loading the same HFiles twice leaves one
version of each cell, and a rerun writes the same cells with a newer timestamp: the index
ends the same. Cells newer than any delete marker of an earlier `delete` are visible.

Staging: ``<staging>/<load key>/`` (default: the system's temp folder; on a cluster give a
folder on the HBase cluster's file system). A rerun of the same load first removes what a
killed run left there; a finished or failed run removes its own. BulkLoadHFiles moves the
files into HBase (a copy when the file systems differ).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..arrays import unsigned64
from ..batches import reject_line
from ..corpus import Fields, parquet_columns
from ..errors import DedupError, InvalidInput
from ..index import Document, Index, document_meta
from ..interrupts import STOPS, Interrupted
from ..loader import Checkpoint, LoadOptions, LoadReport
from ..schema import load_schema, table_name
from . import inputs, stages
from .session import helper_jars, make_session
from .session import stop as stop_session

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SparkOptions:
    """Where and how a Spark job runs: the master (``local[*]``, ``yarn``, ``k8s://...``), Spark
    settings (``--spark-conf KEY=VALUE``) and the staging folder or URI of the HFiles."""

    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    staging: str | None = None

    @staticmethod
    def parse_conf(items: list[str] | None) -> dict[str, str]:
        """Spark settings given as KEY=VALUE."""
        conf = {}
        for item in items or []:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise InvalidInput(f"a Spark setting is KEY=VALUE, not {item!r}")
            conf[name.strip()] = value
        return conf


def spark_load_files(index: Index, paths: list[str], options: LoadOptions = LoadOptions(),
                     spark: SparkOptions = SparkOptions()) -> LoadReport:
    """``loader.load_files`` as a Spark job (``spark_load``): the same checkpoint name (a finished
    load is not repeated), the same rejects file (written whole by each run that runs). Options
    the Spark engine cannot do are refused: skipping near-duplicates and their groups look up
    every batch in the index as it grows, which a bulk load does not do. Raises
    ``Interrupted`` on SIGINT or SIGTERM."""
    if options.skip_near_dups or options.groups:
        raise InvalidInput("skipping near-duplicates and writing their groups need the local engine: they "
                           "look up each batch in the index as it grows")
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    try:
        return spark_load(index, paths, fmt=options.fmt, id_field=options.fields.id, text_field=options.fields.text,
                          fingerprints=options.fingerprints, rejects_path=options.rejects,
                          checkpoint=options.checkpoint_key(paths), restart=options.restart,
                          batch_size=options.batch_size, spark_master=spark.master, spark_conf=spark.conf,
                          staging=spark.staging)
    except STOPS as stop:
        raise Interrupted(stop, "the Spark job stopped; run the same command again to load (the job starts "
                                "over; what it wrote is written again, nothing doubles)") from None


class _Clock:
    """Elapsed time of each step, logged (``logging`` at INFO, logger dedup_hbase.spark.job)."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        logger.info("%-28s %7.2f s", step, now - self.last)
        self.last = now


def spark_load(index: Index, files: list[str], *, fmt: str = "auto", id_field: str = "id",
               text_field: str = "text", fingerprints: bool = False, rejects: IO[str] | None = None,
               rejects_path: str | Path | None = None,
               spark_master: str = "local[*]", spark_conf: dict[str, str] | None = None,
               staging: str | None = None, checkpoint: str | None = None, restart: bool = False,
               batch_size: int = 2000, spark=None, _stop_after: str | None = None) -> LoadReport:
    """Load ``files`` into ``index`` with Spark; the same accounting as ``loader.load``.

    HBase target: HFiles + BulkLoadHFiles (the store URL needs ``zk=HOST:PORT``). Any other
    store (embedded): fingerprints in Spark, writes from the driver through ``Index.add_many``.
    ``spark``: an existing SparkSession (with the helper's jars) to use and leave running.
    ``checkpoint``: the load's key (``corpus.input_identity``): a finished load is not
    repeated (``restart`` repeats it); it also names the staging folder. ``rejects`` (an open
    file) or ``rejects_path`` (opened, and replaced, only when the job runs) gets every rejected
    record as a JSON line.
    """
    from ..stores.hbase import HBaseStore

    marker = Checkpoint(index, checkpoint)
    state = None if restart else marker.read()
    if state and state["complete"]:
        report = LoadReport.from_dict(state["report"])
        report.already_complete = True
        return report
    hbase = isinstance(index.store, HBaseStore)
    if hbase and not index.store.zk:
        raise DedupError(f"{index.store.url}: --engine spark bulk-loads through ZooKeeper: add "
                         "zk=HOST:PORT (HBase's hbase.zookeeper.quorum and clientPort) to the store URL")
    started = time.perf_counter()
    job_ms = int(time.time() * 1000)
    own_session = spark is None
    clock = _Clock()
    if own_session:
        submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit gives the jars
        spark = make_session(spark_master, spark_conf, helper_jars() if hbase and not submitted else None)
        clock("spark session")
    try:
        fields = Fields(id=id_field, text=text_field)
        fingerprinted = _fingerprinted(spark, files, fmt, fields, index.fingerprinter.spec, fingerprints)
        from pyspark import StorageLevel

        fingerprinted = fingerprinted.persist(StorageLevel.MEMORY_AND_DISK)
        report = LoadReport()
        if rejects_path is not None:
            with open(rejects_path, "w", encoding="utf-8") as reject_file:
                _account(fingerprinted, report, reject_file)
        else:
            _account(fingerprinted, report, rejects)
        clock("read, fingerprint, account")
        if hbase:
            _bulk_load(spark, index, fingerprinted, report, staging, checkpoint, job_ms, _stop_after, clock)
        else:
            _driver_writes(index, fingerprinted, report, batch_size, job_ms)
            clock("driver writes")
        fingerprinted.unpersist()
    finally:
        if own_session:
            stop_session(spark)
    report.elapsed_s = time.perf_counter() - started
    marker.save(report, complete=True)
    return report


# -- reading -------------------------------------------------------------------------------


def _fingerprinted(spark, files: list[str], fmt: str, fields: Fields, spec: dict, use_simhash: bool):
    """The input records, fingerprinted (stages.FINGERPRINTED_SCHEMA), one DataFrame."""
    from pyspark.sql import functions as F

    fingerprint = stages.fingerprint(spec, use_simhash)
    parallelism = spark.sparkContext.defaultParallelism
    planned = inputs.plan(files, fmt, lambda uri: _list_remote(spark, uri))
    if not planned:
        raise DedupError("no input files")
    parquet = [f for f in planned if inputs.is_parquet(f)]
    lines = [piece for f in planned if not inputs.is_parquet(f) for piece in inputs.pieces(f, parallelism)]
    # fewer pieces than cores (one big compressed file): spread the records over every core
    # before fingerprinting (a shuffle of the texts); else parse and fingerprint in one pass
    spread = len(lines) < parallelism and not parquet and not use_simhash

    finish = {} if spread else {"finish": stages.fingerprint_records(spec, use_simhash)}
    schema = inputs.RECORD_SCHEMA if spread else stages.FINGERPRINTED_SCHEMA
    parts = []
    local = [f for f in lines if not f.remote]
    if local:
        rows = [(f.ordinal, os.path.abspath(f.path), f.source, f.fmt, f.doc_id, f.start, f.end, f.first_line)
                for f in local]
        frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), inputs.FILE_SCHEMA)
        parts.append(frame.mapInArrow(inputs.parse_files(fields, **finish), schema))
    remote = [f for f in lines if f.remote]
    if remote:
        by_uri = {f.path: f for f in remote}
        frame = spark.read.format("binaryFile").load([f.path for f in remote]).select("path", "content")
        parts.append(frame.mapInArrow(inputs.parse_files(fields, by_uri, **finish), schema))
    if parquet:
        by_path = {(f.path if f.remote else os.path.abspath(f.path)): f for f in parquet}
        frame = spark.read.option("mergeSchema", "true").parquet(*by_path)
        columns = parquet_columns(frame.columns, fields)
        selected = frame.select(*[F.col(f"`{c}`").alias(f"c{i}") for i, c in enumerate(columns)],
                                F.col("_metadata.file_path").alias("_file_path"),
                                F.col("_metadata.row_index").alias("_row_index"))
        parts.append(selected.mapInArrow(inputs.parse_parquet_rows(fields, by_path, columns, **finish),
                                         schema))
    records = parts[0]
    for part in parts[1:]:
        records = records.unionByName(part)
    if spread:
        # hash of (file, line): deterministic (a retried task gets the same rows) without the
        # local sort a round-robin repartition does
        records = (records.repartition(parallelism, "ordinal", "line")
                   .mapInArrow(fingerprint, stages.FINGERPRINTED_SCHEMA))
    return records


def _list_remote(spark, uri: str) -> list[tuple[str, str | None]]:
    """Files under a URI through Spark's Hadoop file systems: (uri, path relative to a
    folder given, or None for a file given), sorted, hidden names skipped."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
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


# -- accounting ------------------------------------------------------------------------------


def _account(fingerprinted, report: LoadReport, rejects: IO[str] | None) -> None:
    from pyspark.sql import functions as F

    groups = fingerprinted.groupBy("reason").agg(F.count(F.lit(1)).alias("n"), F.sum("text_bytes").alias("b"),
                                                  F.min(F.struct("ordinal", "line")).alias("first")).collect()
    # reasons in the order a local load meets them (Counter keeps first insertion)
    for row in sorted(groups, key=lambda r: (r["first"]["ordinal"], r["first"]["line"])):
        report.read += row["n"]
        report.text_bytes += row["b"] or 0
        if row["reason"] is not None:
            report.rejected += row["n"]
            report.rejected_by_reason[row["reason"]] += row["n"]
    if rejects is not None and report.rejected:
        bad = (fingerprinted.where(F.col("error").isNotNull()).select("ordinal", "line", "source", "id", "error")
               .orderBy("ordinal", "line"))
        for row in bad.toLocalIterator():
            rejects.write(reject_line(row["source"], row["line"], row["id"], row["error"]))


# -- embedded store: the driver writes ---------------------------------------------------------


def _driver_writes(index: Index, fingerprinted, report: LoadReport, batch_size: int, loaded: int) -> None:
    """Index.add_many in input order, batch by batch, as loader.load does (so repeated ids,
    replaced fingerprints and ``new`` behave the same)."""
    from pyspark.sql import functions as F

    good = (fingerprinted.where(F.col("error").isNull())
            .select("ordinal", "line", "source", "id", "simhash", "title", "length").orderBy("ordinal", "line"))
    docs: list[Document] = []

    def flush() -> None:
        if docs:
            report.new += index.add_many(docs)
            report.indexed += len(docs)
            docs.clear()

    for row in good.toLocalIterator():
        meta = document_meta(loaded // 1000, row["source"], row["line"], row["title"], row["length"])
        docs.append(Document(row["id"], unsigned64(row["simhash"]), meta))
        if len(docs) >= batch_size:
            flush()
    flush()


# -- HBase: HFiles and bulk load ----------------------------------------------------------------


def spark_partition_targets(partitions: int) -> list[int]:
    """For each Spark partition t < ``partitions``, an int whose Spark hash partitioning
    (pmod(murmur3_x86_32(int, seed 42), partitions)) is t, so a column of these values
    puts every row exactly where it is meant to go (one region per partition)."""
    import struct

    import mmh3

    found: dict[int, int] = {}
    value = 0
    while len(found) < partitions:
        target = mmh3.hash(struct.pack("<i", value), 42) % partitions
        found.setdefault(target, value)
        value += 1
    return [found[t] for t in range(partitions)]


def _bulk_load(spark, index: Index, fingerprinted, report: LoadReport, staging: str | None,
               checkpoint: str | None, job_ms: int, stop_after: str | None, clock=lambda step: None) -> None:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    store = index.store
    jvm = spark.sparkContext._jvm
    helper = jvm.dedup.hbase.spark
    quorum, _, port = store.zk.rpartition(":")
    if not quorum or not port.isdigit():
        raise DedupError(f"zk={store.zk!r}: give the ZooKeeper quorum as HOST[,HOST...]:PORT")
    zk = (quorum, int(port), store.zk_parent or "")
    schema = load_schema()
    family = schema["family"]

    good = fingerprinted.where(F.col("error").isNull())
    winners = (good.groupBy("id")
               .agg(F.max(F.struct("ordinal", "line", "simhash", "source", "title", "length")).alias("w"))
               .select("id", "w.*"))
    report.indexed = report.read - report.rejected
    known = 0
    if store.scan_range("docs", b"", None, 1):
        # the index holds documents: which of these ids, and with which fingerprint
        winners = winners.persist(StorageLevel.MEMORY_AND_DISK)
        known = winners.select("id", "simhash").mapInArrow(
            stages.old_fingerprints(store.url), stages.OLD_SCHEMA).groupBy().sum("known").collect()[0][0] or 0
        clock("ids in the index already")

    # Both tables' rows in one shuffle: partitions [0, P_index) are the index table's (per_region
    # of them per region), the rest the document table's; each sorted by (row, qualifier).
    parallelism = spark.sparkContext.defaultParallelism
    tables, firsts, makers, total = [], [], [], 0
    names = {t: table_name(store.table_prefix, t) for t in ("index", "docs")}
    boundaries = dict(zip(("index", "docs"), helper.BulkLoad.splitKeys(*zk, names["index"] + "\n" + names["docs"])
                          .split("\n")))
    root = _staging_root(staging)
    job_dir = f"{root.rstrip('/')}/{checkpoint or uuid.uuid4().hex}"
    for table in ("index", "docs"):
        splits = [bytes.fromhex(h) for h in boundaries[table].split(",") if h]
        per_region = max(1, math.ceil(2 * parallelism / (len(splits) + 1)))
        count = (len(splits) + 1) * per_region
        t = schema["tables"][table]
        tables.append("\t".join([f"{job_dir}/{table}", names[table], family, t["compression"],
                                  t["data_block_encoding"], t["bloom_filter"], str(t.get("bloom_prefix_length") or 0),
                                  "65536", ",".join(x.hex() for x in splits)]))
        firsts.append(total)
        makers.append((splits, per_region, total, count))
        total += count
    targets = spark_partition_targets(total)
    (i_splits, i_per, i_first, i_count), (d_splits, d_per, d_first, d_count) = makers
    index_run = stages.index_rows(index.scheme.name, i_splits, targets[i_first:i_first + i_count], i_per)
    docs_run = stages.doc_rows(d_splits, targets[d_first:d_first + d_count], d_per, job_ms // 1000)

    def both(batches):
        for batch in batches:
            yield from index_run([batch])
            yield from docs_run([batch])

    rows = (winners.mapInArrow(both, stages.ROW_SCHEMA).repartition(total, "part")
            .sortWithinPartitions("key", "qualifier").select("key", "qualifier", "value"))
    fs_delete = _deleter(spark)
    fs_delete(job_dir)  # what a killed run of the same load left
    try:
        firsts_java = spark.sparkContext._gateway.new_array(jvm.int, len(firsts))
        for i, first in enumerate(firsts):
            firsts_java[i] = first
        written = list(helper.HFileWriter.write(rows._jdf.queryExecution().toRdd().toJavaRDD(), "\n".join(tables),
                                                firsts_java, job_ms, job_ms))
        docs_cells = sum(int(w.split("\t")[1]) for w in written if f"/docs/{family}/" in w)
        report.new = docs_cells - known
        clock(f"HFiles ({len(written)})")
        if known:
            winners.unpersist()
        for table in ("index", "docs"):
            if any(f"/{table}/{family}/" in w for w in written):
                helper.BulkLoad.load(*zk, names[table], f"{job_dir}/{table}", False)
                clock(f"bulk load of {names[table]}")
            if stop_after == table:
                raise _Stopped(f"stopped after bulk-loading {names[table]} (test)")
    finally:
        fs_delete(job_dir)


class _Stopped(RuntimeError):
    """Raised by the test hook ``_stop_after``: a load cut off between its two bulk loads."""


def _staging_root(staging: str | None) -> str:
    if staging is None:
        staging = os.path.join(tempfile.gettempdir(), "dedup-hbase-spark")
    if inputs.is_uri(staging) or staging.startswith("file:"):
        return staging
    return "file://" + os.path.abspath(staging)


def _deleter(spark):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def delete(uri: str) -> None:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(conf)
        if fs.exists(path):
            fs.delete(path, True)
    return delete
