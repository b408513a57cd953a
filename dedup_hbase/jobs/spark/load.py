"""``load --engine spark``: the load as one Spark job; into HBase by HFiles and bulk load.

Data flow (D = the driver, E = the executors' Python workers, J = the executors' JVMs)::

    D  plan the input files as corpus.read_records walks them (order = the input order)
    E  parse and fingerprint each file, piece or row group in one task (records.py)
       -> records: simhash or error   [persisted]
    D  accounting (one aggregate), the featurizer check of precomputed fingerprints, and
       the rejects in input order (toLocalIterator)
    J  HBase: HFiles and bulk loads (bulk.py); with ``skip_near_dups`` only the documents that
       match nothing in the index nor earlier in the input (check.py's lookups, then adding.py:
       ``check --add-new``'s rule and code)
    D  any other store (embedded): the driver writes through ``Index.write``, batch by
       batch in input order, as a local load does

Timestamps: every cell of a job gets one timestamp, the job's start (ms). Index cells are
keyed by (row, document id) with VERSIONS 1, so loading the same HFiles twice leaves one
version of each cell, and a rerun writes the same cells with a newer timestamp: the index
ends the same. Cells newer than any delete marker of an earlier `delete` are visible.
"""

from __future__ import annotations

import time
import uuid

from ...errors import InvalidInput
from ...index.arrays import unsigned64
from ...index.index import Document, Index, document_meta
from ..options import LoadOptions, SparkOptions
from ..reports import Checkpoint, LoadReport, rejects_file
from . import bulk, files, records, stages
from .harness import SparkJob, spark_job

STOPPED = "run the same command again to load (the job starts over; what it wrote is written again, nothing doubles)"


def spark_load_files(index: Index, paths: list[str], options: LoadOptions = LoadOptions(),
                     spark: SparkOptions = SparkOptions(), *, session=None, on_reject=None) -> LoadReport:
    """``local.load_files`` as a Spark job: the same options, report and checkpoint (a
    finished load is not repeated; ``options.restart`` repeats it), the same rejects file
    (written whole by each run that runs), each reject handed to ``on_reject`` in input order
    once the records are fingerprinted. ``session``: a running SparkSession (with the
    helper's jars) to use and leave running; else one is started for the job and stopped.
    ``options.skip_near_dups``: into an HBase index, the documents within k bits of one indexed
    or earlier in the input are left out (``check --add-new``'s job, without its records).
    The groups of a load (``options.groups``) are the local engine's. Raises ``Interrupted`` on
    SIGINT or SIGTERM."""
    if options.groups:
        raise InvalidInput("groups= needs engine=local (with the Spark engine, the groups command writes the "
                           "groups of a corpus)", arguments=("groups", "engine"))
    if options.skip_near_dups and index.store.hfile_target() is None:
        raise InvalidInput("skip_near_dups=True with engine=spark reads the index in bulk: an HBase index "
                           "(hbase://...); use the local engine here", arguments=("skip_near_dups", "engine"))
    if "-" in paths:
        raise InvalidInput("the Spark engine reads files and folders (local, HDFS, S3 ...), not stdin")
    index.spec.check_inputs(options.fingerprints, lookups=options.skip_near_dups)
    options.check_inputs(paths)
    key = options.checkpoint_key(paths)
    marker = Checkpoint(index, key)
    finished = marker.finished(options.restart)
    if finished is not None:
        return finished
    target = index.store.hfile_target()
    if target is not None:
        from .hbase import ZooKeeper

        ZooKeeper.of(target, index.store.url)  # refused before a session starts
    job_ms = int(time.time() * 1000)
    # the helper's jars: its data sources write HBase's HFiles and read --fingerprints
    with spark_job("dedup-hbase load", spark, paths, jars=target is not None or options.fingerprints,
                   session=session, then=STOPPED) as job:
        fingerprinted, helpers = records.fingerprinted(job, paths, options,
                                                       stages.job_spec(index, lookups=options.skip_near_dups))
        report = LoadReport()
        with rejects_file(options.rejects) as rejects:
            report.unlabeled = records.account(fingerprinted, report, rejects, index.fingerprinter.label,
                                               options.fingerprints, on_reject)
        report.indexed = report.read - report.rejected
        job.unpersist(*helpers)
        job.clock("read, fingerprint, account")
        good = records.good(fingerprinted)
        if options.skip_near_dups:
            _only_new(job, index, fingerprinted, report, spark.staging)
        elif target is not None:
            bulk.load(job, index, target, good, report, spark.staging, key, job_ms)
        else:
            _driver_writes(index, good, report, options.batch_size, job_ms)
            job.clock("driver writes")
        job.unpersist(fingerprinted)
    report.elapsed_s = job.elapsed()
    marker.save(report, complete=True)
    return report


def _only_new(job: SparkJob, index: Index, fingerprinted, report: LoadReport, staging: str | None) -> None:
    """The documents of ``fingerprinted`` that match nothing in the index nor earlier in the
    input, bulk-loaded (check.py's lookups, adding.py's rule); counted into ``report``."""
    from .adding import add_new
    from .check import answer_records

    staged = f"{bulk.staging_root(staging).rstrip('/')}/lookup-{uuid.uuid4().hex}"
    try:
        # one match listed is enough: adding.py asks whether one with another id is there
        answers = job.persist(answer_records(job, index, fingerprinted, index.k, 1, staged))
        job.clock("look up in the index")
        report.indexed, report.near_duplicates_skipped = add_new(job, index, fingerprinted, answers, staging, report)
        job.unpersist(answers)
    finally:
        files.remove(job.session, staged)


def _driver_writes(index: Index, good, report: LoadReport, batch_size: int, loaded: int) -> None:
    """The embedded store: ``Index.write`` in input order, batch by batch, as the local load
    does (so repeated ids, replaced fingerprints and ``new`` behave the same)."""
    rows = (good.select("ordinal", "line", "source", "id", "simhash", "title", "length", "more", "sketch", "kept")
            .orderBy("ordinal", "line"))
    docs: list[Document] = []

    def flush() -> None:
        if docs:
            written = index.write(docs)
            report.new += written.new
            report.replaced += written.replaced
            docs.clear()

    for row in rows.toLocalIterator():
        meta = document_meta(loaded // 1000, row["source"], row["line"], row["title"], row["length"])
        more = tuple(unsigned64(m) for m in row["more"] or ())
        sketch = None if row["sketch"] is None else unsigned64(row["sketch"])
        docs.append(Document(row["id"], unsigned64(row["simhash"]), meta, more, sketch, row["kept"] or ""))
        if len(docs) >= batch_size:
            flush()
    flush()

