"""The input records of a Spark job, fingerprinted: one DataFrame (stages.FINGERPRINTED_SCHEMA),
assembled on the driver from the planned input files (inputs.py), and their accounting.

Text is read where it lies and fingerprinted in the same task, never shuffled first: each
file (or piece of a big uncompressed one, or Parquet row group) is a task whose Python
worker parses it with corpus.py's readers and fingerprints it (Parquet rows that are plainly
good records a batch at a time: texts.py). A compressed file cannot be cut: one gzip file is
one task, on one core (split it into many files to use many; docs/spark.md).
``--fingerprints`` inputs in JSON lines are read in the JVM (fingerprints.py), and so are the
lines of remote JSON lines and ``--format lines`` files of texts (HDFS, S3 ...: Hadoop's line
reader in splits; each line then read and fingerprinted by the Python worker), in UTF-8, GB18030,
Big5 or another encoding whose line ends are single bytes. Any other remote file (CSV, TSV, a
whole-file document, UTF-16) is read by one task, which streams its bytes a chunk at a time
(inputs.parse_chunks): one core reads it, so many files rather than one big one use many.
"""

from __future__ import annotations

import json
import os
from typing import IO

from ...errors import DedupError
from ...text.encodings import DEFAULT
from ..batches import check_featurizers
from ..compressed import DAMAGED
from ..corpus import Fields, Record, parquet_columns
from ..options import InputOptions
from ..reports import JobReport, reject_line
from . import files, fingerprints, inputs, stages
from .harness import SparkJob
from .rows import partition_targets

FEW_FILES = 64  # files (or pieces) of local input read from a JVM-built table (file_rows)
LINE_BITS = 40  # a record's position: its file's ordinal << 40 | its line (files of under 2^40 lines)


def fingerprinted(job: SparkJob, paths: list[str], options: InputOptions, spec: dict) -> tuple:
    """Every record of ``paths``, persisted: its simhash, or its error and reason; and the
    frames persisted on the way, which the job unpersists once the records are computed."""
    helpers = len(job.persisted)
    frame = job.persist(_records(job, paths, options.fmt, options.fields, spec, options.fingerprints))
    return frame, job.persisted[helpers:-1]


def _records(job: SparkJob, paths: list[str], fmt: str, fields: Fields, spec: dict, use_simhash: bool):
    from pyspark.sql import functions as F

    spark = job.session
    planned = inputs.plan(paths, fmt, lambda uri: files.list_files(spark, uri))
    if not planned:
        raise DedupError("no input files")
    parts = []
    finish = stages.fingerprint_records(spec, use_simhash)
    if fields.encoding == DEFAULT or not use_simhash:  # fingerprints in UTF-8, remote texts by their heads
        jvm, planned = fingerprints.split(planned, fields, texts=not use_simhash, session=spark)
        if jvm.files:
            frame, damaged = fingerprints.read(job, jvm, fields, finish)
            parts += [frame] if frame is not None else []
            planned += damaged  # read whole by the Python reader: its records, then one reject
        if jvm.refused:
            parts.append(fingerprints.refused_rows(spark, jvm, finish))
    parallelism = job.parallelism
    parquet = [f for f in planned if inputs.is_parquet(f)]
    lines = [piece for f in planned if not inputs.is_parquet(f)  # another encoding: each file read whole (auto: its head)
             for piece in (inputs.pieces(f, parallelism) if fields.encoding == DEFAULT else [f])]
    local = [f for f in lines if not f.remote]
    if local:
        rows = [(f.ordinal, os.path.abspath(f.path), f.source, f.fmt, f.doc_id, f.start, f.end, f.first_line)
                for f in local]
        parts.append(file_rows(spark, rows).mapInArrow(inputs.parse_files(fields, finish),
                                                        stages.FINGERPRINTED_SCHEMA))
    remote = [f for f in lines if f.remote]
    if remote:
        frame = spark.read.format("dedup-hbase-chunks").options(
            files="\n".join(f.path for f in remote), ordinals=",".join(str(f.ordinal) for f in remote),
            chunkBytes=str(inputs.CHUNK_BYTES)).load()
        parts.append(frame.mapInArrow(inputs.parse_chunks(fields, finish, {f.ordinal: f for f in remote}),
                                      stages.FINGERPRINTED_SCHEMA))
    if parquet:
        by_path = {(f.path if f.remote else os.path.abspath(f.path)): f for f in parquet}
        frame = spark.read.option("mergeSchema", "true").parquet(*by_path)
        columns = parquet_columns(frame.columns, fields)
        selected = frame.select(*[F.col(f"`{c}`").alias(f"c{i}") for i, c in enumerate(columns)],
                                F.col("_metadata.file_path").alias("_file_path"),
                                F.col("_metadata.row_index").alias("_row_index"))
        parts.append(selected.mapInArrow(inputs.parse_parquet_rows(fields, finish, by_path, columns, spec, use_simhash),
                                         stages.FINGERPRINTED_SCHEMA))
    records = parts[0]
    for part in parts[1:]:
        records = records.unionByName(part)
    return records


def file_rows(spark, rows: list[tuple]):
    """The planned files (inputs.FILE_SCHEMA), one per partition. A few: built in the JVM (a
    range of row numbers, each picking its row from one literal), so no Python worker runs
    before the ones that read them (the first costs a Python process's start); more: the
    Python list as a table, each row sent to a partition of its own (the literal would go with
    every task)."""
    from pyspark.sql import functions as F

    if len(rows) > FEW_FILES:
        targets = partition_targets(len(rows))
        table = spark.createDataFrame([(*row, targets[i]) for i, row in enumerate(rows)],
                                      f"{inputs.FILE_SCHEMA}, part int")
        return table.repartition(len(rows), "part").drop("part")
    names = [column.split()[0] for column in inputs.FILE_SCHEMA.split(", ")]
    table = F.from_json(F.lit(json.dumps([dict(zip(names, row)) for row in rows])),
                        "array<struct<" + ",".join(c.replace(" ", ":") for c in inputs.FILE_SCHEMA.split(", ")) + ">>")
    return (spark.range(0, len(rows), 1, len(rows))
            .select(F.element_at(table, F.col("id").cast("int") + 1).alias("f")).select("f.*"))


def position():
    """A record's place in the input order as one long column: its file's ordinal in the top
    23 bits, its line in the low 40 (up to 8,388,607 files of up to 2^40 lines each): Spark
    orders and aggregates one long with less work than a struct of two."""
    from pyspark.sql import functions as F

    return F.shiftleft(F.col("ordinal").cast("long"), LINE_BITS).bitwiseOR(F.col("line"))


def good(records):
    """The records that were not rejected."""
    from pyspark.sql import functions as F

    return records.where(F.col("error").isNull())


def account(records, report: JobReport, rejects: IO[str] | None, label: str, use_simhash: bool,
            on_reject=None) -> int:
    """Count the ``records`` (fingerprinted) into ``report``, from one aggregate: read, rejected by
    reason (in the order a local job meets them), text bytes, the inputs cut off or corrupt; the
    rejects written to ``rejects`` and handed to ``on_reject`` (a Record each) in input order.
    With ``use_simhash`` the featurizer check (``batches.check_featurizers``: the first record,
    in input order, whose fingerprint another featurizer made stops the job before anything is
    written); returns how many fingerprints did not say which featurizer made them."""
    from pyspark.sql import functions as F

    good = F.col("error").isNull()
    aggregates = [F.count(F.lit(1)).alias("n"), F.sum("text_bytes").alias("b"), F.min(position()).alias("first")]
    if use_simhash:
        foreign = good & F.col("featurizer").isNotNull() & (F.col("featurizer") != F.lit(label))
        aggregates += [F.sum(F.when(good & F.col("featurizer").isNull(), 1).otherwise(0)).alias("unlabeled"),
                       F.min(F.when(foreign, F.struct("ordinal", "line", "source", "id", "featurizer"))).alias("foreign")]
    unlabeled = 0
    rows = sorted(records.groupBy("reason").agg(*aggregates).collect(), key=lambda r: r["first"])
    for row in rows:
        report.count_rows(row["reason"], row["n"], row["b"] or 0)
        if row["reason"] is None and use_simhash:
            unlabeled += row["unlabeled"]
            if row["foreign"] is not None:
                f = row["foreign"]
                check_featurizers([Record(f["source"], f["line"], f["id"], featurizer=f["featurizer"])], label)
    if any(row["reason"] in DAMAGED for row in rows):  # each cut-off or corrupt input, as a local job says it
        cut = records.where(F.col("reason").isin(*DAMAGED)).select("ordinal", "line", "source", "error")
        report.damaged += [f"{r['source']}: {r['error']}" for r in cut.orderBy("ordinal", "line").collect()]
    if (rejects is not None or on_reject is not None) and report.rejected:
        bad = (records.where(F.col("error").isNotNull()).select("ordinal", "line", "source", "id", "error")
               .orderBy("ordinal", "line"))
        for row in bad.toLocalIterator():
            if rejects is not None:
                rejects.write(reject_line(row["source"], row["line"], row["id"], row["error"]))
            if on_reject is not None:
                on_reject(Record(row["source"], row["line"], row["id"], error=row["error"]))
    return unlabeled
