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
"""

from __future__ import annotations

import time

from ...errors import InvalidInput
from ...index.arrays import unsigned64
from ...index.index import Document, Index, document_meta
from ..options import LoadOptions, SparkOptions
from ..reports import Checkpoint, LoadReport, rejects_file
from . import bulk, records, stages
from .harness import spark_job

STOPPED = "run the same command again to load (the job starts over; what it wrote is written again, nothing doubles)"


def spark_load_files(index: Index, paths: list[str], options: LoadOptions = LoadOptions(),
                     spark: SparkOptions = SparkOptions(), *, session=None) -> LoadReport:
    """``local.load_files`` as a Spark job: the same options, report and checkpoint (a
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
    index.spec.check_inputs(options.fingerprints)
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
        fingerprinted, helpers = records.fingerprinted(job, paths, options, stages.job_spec(index))
        report = LoadReport()
        with rejects_file(options.rejects) as rejects:
            report.unlabeled = records.account(fingerprinted, report, rejects, index.fingerprinter.label,
                                               options.fingerprints)
        report.indexed = report.read - report.rejected
        job.unpersist(*helpers)
        job.clock("read, fingerprint, account")
        good = records.good(fingerprinted)
        if target is not None:
            bulk.load(job, index, target, good, report, spark.staging, key, job_ms)
        else:
            _driver_writes(index, good, report, options.batch_size, job_ms)
            job.clock("driver writes")
        job.unpersist(fingerprinted)
    report.elapsed_s = job.elapsed()
    marker.save(report, complete=True)
    return report


def _driver_writes(index: Index, good, report: LoadReport, batch_size: int, loaded: int) -> None:
    """The embedded store: ``Index.write`` in input order, batch by batch, as the local load
    does (so repeated ids, replaced fingerprints and ``new`` behave the same)."""
    rows = (good.select("ordinal", "line", "source", "id", "simhash", "title", "length", "more", "sketch")
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
        docs.append(Document(row["id"], unsigned64(row["simhash"]), meta, more, sketch))
        if len(docs) >= batch_size:
            flush()
    flush()

