"""``load --engine spark``: the load as one Spark job; into HBase by HFiles and bulk load.

Data flow (D = the driver, E = the executors' Python workers, J = the executors' JVMs)::

    D  plan the input files as corpus.read_records walks them (order = the input order)
    E  parse and fingerprint each file, piece or row group in one task (records.py)
       -> records: simhash or error   [persisted]
    D  accounting (one aggregate), the featurizer check of precomputed fingerprints, and
       the rejects in input order (toLocalIterator)
    J  HBase: HFiles and bulk loads (bulk.py)
    D  any other store (embedded): the driver writes through ``Index.write``, batch by
       batch in input order, as a local load does

Timestamps: every cell of a job gets one timestamp, the job's start (ms). Index cells are
keyed by (row, document id) with VERSIONS 1, so loading the same HFiles twice leaves one
version of each cell, and a rerun writes the same cells with a newer timestamp: the index
ends the same. Cells newer than any delete marker of an earlier `delete` are visible.

Steps are timed in the log (``logging`` at INFO, logger dedup_hbase.jobs.spark.job).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import IO

from ...errors import InvalidInput
from ...index.arrays import unsigned64
from ...index.index import Document, Index, document_meta
from ..batches import reject_line
from ..corpus import Record, check_columns
from ..interrupts import STOPS, Interrupted
from ..loader import Checkpoint, LoadOptions, LoadReport, check_featurizers
from . import bulk, inputs, records
from .session import helper_jars, make_session
from .session import stop as stop_session

logger = logging.getLogger(__name__)
_LINE_BITS = 40  # the line's bits in a record's place (_account)
SMALL_INPUT = 16 << 20  # bytes of local input under which the job's JVM compiles with C1 only (session.py)


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
                     spark: SparkOptions = SparkOptions(), *, session=None) -> LoadReport:
    """``loader.load_files`` as a Spark job: the same options, report and checkpoint (a
    finished load is not repeated; ``options.restart`` repeats it), the same rejects file
    (written whole by each run that runs). ``session``: a running SparkSession (with the
    helper's jars) to use and leave running; else one is started for the job and stopped.
    Options the Spark engine cannot do are refused: skipping near-duplicates and their groups
    look up every batch in the index as it grows, which a bulk load does not do. Raises
    ``Interrupted`` on SIGINT or SIGTERM."""
    if options.skip_near_dups or options.groups:
        raise InvalidInput("skipping near-duplicates and writing their groups need the local engine: they "
                           "look up each batch in the index as it grows")
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    check_columns([p for p in paths if not inputs.is_uri(p)], options.fmt, options.fields, options.fingerprints)
    try:
        return _run(index, paths, options, spark, session)
    except STOPS as stop:
        raise Interrupted(stop, "the Spark job stopped; run the same command again to load (the job starts "
                                "over; what it wrote is written again, nothing doubles)") from None


class _Clock:
    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self, step: str) -> None:
        now = time.perf_counter()
        logger.info("%-28s %7.2f s", step, now - self.last)
        self.last = now


def _run(index: Index, paths: list[str], options: LoadOptions, spark: SparkOptions, session) -> LoadReport:
    key = options.checkpoint_key(paths)
    marker = Checkpoint(index, key)
    state = None if options.restart else marker.read()
    if state and state["complete"]:
        report = LoadReport.from_dict(state["report"])
        report.already_complete = True
        return report
    target = index.store.hfile_target()
    if target is not None:
        from .hadoop import ZooKeeper

        ZooKeeper.of(target, index.store.url)  # refused before a session starts
    started = time.perf_counter()
    job_ms = int(time.time() * 1000)
    own_session = session is None
    clock = _Clock()
    if own_session:
        session = start_session(spark, "dedup-hbase load", paths, jars=target is not None)
        clock("spark session")
    done = False
    try:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        persisted: list = []
        fingerprinted = records.fingerprinted(session, paths, options.fmt, options.fields, index.fingerprinter.spec,
                                              options.fingerprints, persisted).persist(StorageLevel.MEMORY_AND_DISK)
        report = LoadReport()
        if options.rejects is not None:
            with open(options.rejects, "w", encoding="utf-8") as reject_file:
                _account(fingerprinted, report, reject_file, index.fingerprinter.label, options.fingerprints)
        else:
            _account(fingerprinted, report, None, index.fingerprinter.label, options.fingerprints)
        report.indexed = report.read - report.rejected
        for frame in persisted:
            frame.unpersist()
        clock("read, fingerprint, account")
        good = fingerprinted.where(F.col("error").isNull())
        if target is not None:
            bulk.load(session, index, target, good, report, spark.staging, key, job_ms, clock)
        else:
            _driver_writes(index, good, report, options.batch_size, job_ms)
            clock("driver writes")
        fingerprinted.unpersist()
        done = True
    finally:
        if own_session:
            stop_session(session, done)
            clock("spark session stop")
    report.elapsed_s = time.perf_counter() - started
    marker.save(report, complete=True)
    return report


def start_session(spark: SparkOptions, name: str, paths: list[str], jars: bool):
    """The SparkSession of one job (``name``: its app name) on ``paths``: the ``jvm/`` helper's
    jars when ``jars`` and not under spark-submit (which gives them), C1 only for a small input;
    a local JVM writes its class archive at its end when there is none yet (``stop(session,
    done=True)`` keeps it, session.py)."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    return make_session(spark.master, {"spark.app.name": name, **spark.conf},
                        helper_jars() if jars and not submitted else None, small=_input_bytes(paths) < SMALL_INPUT,
                        make_archive=True)


def _input_bytes(paths: list[str]) -> int:
    """The bytes of the local files under ``paths`` (a remote input counts as large)."""
    total = 0
    for path in paths:
        if inputs.is_uri(path):
            return SMALL_INPUT
        for root, _, names in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
            total += sum(os.path.getsize(os.path.join(root, n)) for n in names if os.path.isfile(os.path.join(root, n)))
    return total


def _account(fingerprinted, report: LoadReport, rejects: IO[str] | None, label: str, use_simhash: bool) -> None:
    """Read, rejected by reason (in the order a local load meets them), text bytes; with
    ``use_simhash`` the featurizer check (``loader.check_featurizers``: the first record,
    in input order, whose fingerprint another featurizer made stops the load before
    anything is written) and the unlabeled count; the rejects, in input order."""
    from pyspark.sql import functions as F

    good = F.col("error").isNull()
    # a record's place in the input as one long, (file ordinal, line) in order: a min of it
    # costs Spark a fraction of a min of a struct (files of under 2^40 lines)
    place = F.col("ordinal").cast("long") * F.lit(1 << _LINE_BITS) + F.col("line")
    aggregates = [F.count(F.lit(1)).alias("n"), F.sum("text_bytes").alias("b"), F.min(place).alias("first")]
    if use_simhash:
        foreign = good & F.col("featurizer").isNotNull() & (F.col("featurizer") != F.lit(label))
        aggregates += [F.sum(F.when(good & F.col("featurizer").isNull(), 1).otherwise(0)).alias("unlabeled"),
                       F.min(F.when(foreign, F.struct("ordinal", "line", "source", "id", "featurizer"))).alias("foreign")]
    groups = fingerprinted.groupBy("reason").agg(*aggregates).collect()
    for row in sorted(groups, key=lambda r: r["first"]):
        report.read += row["n"]
        report.text_bytes += row["b"] or 0
        if row["reason"] is not None:
            report.rejected += row["n"]
            report.rejected_by_reason[row["reason"]] += row["n"]
        elif use_simhash:
            report.unlabeled += row["unlabeled"]
            if row["foreign"] is not None:
                f = row["foreign"]
                check_featurizers([Record(f["source"], f["line"], f["id"], featurizer=f["featurizer"])], label)
    if rejects is not None and report.rejected:
        bad = (fingerprinted.where(F.col("error").isNotNull()).select("ordinal", "line", "source", "id", "error")
               .orderBy("ordinal", "line"))
        for row in bad.toLocalIterator():
            rejects.write(reject_line(row["source"], row["line"], row["id"], row["error"]))


def _driver_writes(index: Index, good, report: LoadReport, batch_size: int, loaded: int) -> None:
    """The embedded store: ``Index.write`` in input order, batch by batch, as loader.load
    does (so repeated ids, replaced fingerprints and ``new`` behave the same)."""
    rows = good.select("ordinal", "line", "source", "id", "simhash", "title", "length").orderBy("ordinal", "line")
    docs: list[Document] = []

    def flush() -> None:
        if docs:
            written = index.write(docs)
            report.new += written.new
            report.replaced += written.replaced
            docs.clear()

    for row in rows.toLocalIterator():
        meta = document_meta(loaded // 1000, row["source"], row["line"], row["title"], row["length"])
        docs.append(Document(row["id"], unsigned64(row["simhash"]), meta))
        if len(docs) >= batch_size:
            flush()
    flush()
