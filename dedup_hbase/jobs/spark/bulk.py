"""HBase as the target of a Spark load: HFiles written in the executors, handed to HBase by
BulkLoadHFiles.

::

    E  last record of each id wins (max of (file, line) per id: one shuffle)
    E  ids the index holds already: their old fingerprints; changed ones' index rows deleted
       (skipped when the document table is empty)
    J  index and document rows (rows.py, Spark SQL), each tagged with its HBase region's
       Spark partition; one shuffle for both tables, sorted by (row, qualifier)
    J  HFiles (the helper's data source, hfiles.py), one per partition and region, in the
       staging folder; the document cells counted on the way (an Observation)
    D  BulkLoadHFiles: the index table, then the document table (a document row is written
       last, as in a local load). A table split or merged since its regions were read refuses
       the files (HBASE-30501): they are cut again at the regions of then, up to CUTS times in
       all (what was loaded is loaded again: the same cells)

Staging: ``<staging>/<load key>/`` (default: the system's temp folder; on a cluster a folder
on the HBase cluster's file system). A rerun of the same load first removes what a killed
run left there; a finished or failed run removes its own (the data source does both).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import uuid

from ...index.index import Index
from ...index.schema import load_schema
from ...index.store import HFileTarget
from ..options import uri_of
from ..reports import LoadReport
from . import hbase, hfiles, rows, stages
from .harness import SparkJob

logger = logging.getLogger(__name__)
CUTS = 3  # cuts of the HFiles at the regions of the moment before a load gives up (the regions keep changing)


def load(job: SparkJob, index: Index, target: HFileTarget, good, report: LoadReport, staging: str | None,
         key: str | None, job_ms: int) -> None:
    """Write the good records (``good``: fingerprinted, no error) into the index's HBase tables;
    ``key`` names the staging folder (a rerun of the same load finds what a killed run left)."""
    from pyspark.sql import functions as F

    clock = job.clock
    schema = load_schema()
    # partitioned by id first: one sort serves both halves of the aggregate (else each sorts);
    # a number of partitions that the cores divide (else adaptive execution picks one by size)
    parallelism = job.parallelism
    winners = (good.repartition(2 * parallelism, "id").groupBy("id")
               .agg(F.max(F.struct("ordinal", "line", "simhash", "source", "title", "length", "more", "sketch", "kept"))
                    .alias("w"))
               .select("id", "w.*"))
    known = 0
    if index.store.scan_range("docs", b"", None, 1):
        # the index holds documents: which of these ids, and with which fingerprint
        winners = job.persist(winners)
        found = winners.select("id", "simhash", "more", "sketch", "kept").mapInArrow(
            stages.old_fingerprints(index.store.url), stages.OLD_SCHEMA).groupBy().sum("known", "replaced").collect()[0]
        known, report.replaced = found[0] or 0, found[1] or 0
        clock("ids in the index already")

    job_dir = f"{staging_root(staging).rstrip('/')}/{key or uuid.uuid4().hex}"
    for attempt in range(1, CUTS + 1):
        try:
            report.new = _cut_and_load(job, index, target, winners, job_dir, schema, parallelism, job_ms) - known
            break
        except hfiles.RegionsChanged as changed:  # a split or a merge since the regions were read
            if attempt == CUTS:
                raise
            logger.warning("the regions of %s changed while the HFiles were written (its files not loaded): "
                           "cutting the files again at the regions of now (cut %d of %d)", changed.table, attempt + 1,
                           CUTS)
    if known:
        job.unpersist(winners)


def _cut_and_load(job: SparkJob, index: Index, target: HFileTarget, winners, job_dir: str, schema: dict,
                  parallelism: int, job_ms: int) -> int:
    """The winners' rows cut into HFiles at the tables' regions of now and bulk-loaded; the
    document cells written (raises hfiles.RegionsChanged when the regions changed meanwhile:
    nothing of that table loaded)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spark, clock = job.session, job.clock
    zk = hbase.ZooKeeper.of(target, index.store.url)
    # Both tables' rows in one shuffle: the first partitions are the index table's (per_region
    # of them per region), the rest the document table's; each sorted by (row, qualifier).
    names = {t: target.tables[t] for t in ("index", "docs")}
    boundaries = hfiles.region_starts(spark, zk, [names["index"], names["docs"]])
    tables, firsts, plans, total = [], [], [], 0
    for table in ("index", "docs"):
        splits = boundaries[names[table]]
        per_region = max(1, math.ceil(2 * parallelism / (len(splits) + 1)))
        tables.append(hfiles.TableFiles.of(f"{job_dir}/{table}", names[table], schema["family"],
                                           schema["tables"][table], splits))
        firsts.append(total)
        plans.append((splits, per_region, total, (len(splits) + 1) * per_region))
        total += plans[-1][3]
    targets = rows.partition_targets(total)
    (i_splits, i_per, i_first, i_count), (d_splits, d_per, d_first, d_count) = plans
    cells = rows.cells(winners, index.schemes, job_ms // 1000, (i_splits, targets[i_first:i_first + i_count], i_per),
                       (d_splits, targets[d_first:d_first + d_count], d_per), index.spec.sketched,
                       index.spec.short is not None)
    counted = Observation("document cells")
    cells = (cells.repartition(total, "part").sortWithinPartitions("key", "qualifier")
             .observe(counted, F.count(F.when(F.col("part").isin(targets[d_first:d_first + d_count]), 1)).alias("docs"))
             .select("key", "qualifier", "value"))
    # the index table, then the document table: a document row last, as in a local load
    hfiles.write_and_load(cells, zk, tables, firsts, job_dir, job_ms, job_ms)
    clock(f"HFiles written and bulk-loaded into {names['index']} and {names['docs']}")
    return counted.get["docs"]


def staging_root(staging: str | None) -> str:
    """The staging folder as a URI (default: the system's temp folder)."""
    if staging is None:
        staging = os.path.join(tempfile.gettempdir(), "dedup-hbase-spark")
    return uri_of(staging)
