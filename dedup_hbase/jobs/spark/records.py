"""The input records of a Spark load, fingerprinted: one DataFrame (stages.FINGERPRINTED_SCHEMA),
assembled on the driver from the planned input files (inputs.py).

Text is read where it lies and fingerprinted in the same task, never shuffled first: each
file (or piece of a big uncompressed one, or Parquet row group) is a task whose Python
worker parses it and fingerprints it with the compiled core: JSON lines and Parquet rows
that are plainly good records a block at a time (texts.py), everything else with
corpus.py's readers. A compressed file cannot be cut: one gzip file is one task, on one core (split it
into many files to use many; docs/spark.md). ``--fingerprints`` inputs in JSON lines, CSV
or Parquet are parsed by Spark's own readers in the JVM (fingerprints.py).
"""

from __future__ import annotations

import json
import os

from ...errors import DedupError
from ..corpus import Fields, parquet_columns
from . import fingerprints, hadoop, inputs, stages

FEW_FILES = 64  # files (or pieces) of local input read from a JVM-built table (file_rows)


def fingerprinted(spark, paths: list[str], fmt: str, fields: Fields, spec: dict, use_simhash: bool,
                  persisted: list):
    """Every record of ``paths``: its simhash, or its error and reason. DataFrames persisted on
    the way are appended to ``persisted`` (to unpersist once the records are)."""
    from pyspark.sql import functions as F

    planned = inputs.plan(paths, fmt, lambda uri: hadoop.list_files(spark, uri))
    if not planned:
        raise DedupError("no input files")
    parts = []
    finish = stages.fingerprint_records(spec, use_simhash)
    if use_simhash:
        jvm_read, planned = fingerprints.split(planned)
        if jvm_read:
            parts.append(fingerprints.read(spark, jvm_read, fields, finish, persisted))
    parallelism = spark.sparkContext.defaultParallelism
    parquet = [f for f in planned if inputs.is_parquet(f)]
    lines = [piece for f in planned if not inputs.is_parquet(f) for piece in inputs.pieces(f, parallelism)]
    local = [f for f in lines if not f.remote]
    if local:
        rows = [(f.ordinal, os.path.abspath(f.path), f.source, f.fmt, f.doc_id, f.start, f.end, f.first_line)
                for f in local]
        parts.append(file_rows(spark, rows).mapInArrow(inputs.parse_files(fields, finish, None, spec, use_simhash),
                                                        stages.FINGERPRINTED_SCHEMA))
    remote = [f for f in lines if f.remote]
    if remote:
        by_uri = {f.path: f for f in remote}
        frame = spark.read.format("binaryFile").load([f.path for f in remote]).select("path", "content")
        parts.append(frame.mapInArrow(inputs.parse_files(fields, finish, by_uri, spec, use_simhash), stages.FINGERPRINTED_SCHEMA))
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
    before the ones that read them (the first costs a Python process's start); more: a
    parallelized Python list (the literal would go with every task)."""
    from pyspark.sql import functions as F

    if len(rows) > FEW_FILES:
        return spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), inputs.FILE_SCHEMA)
    names = [column.split()[0] for column in inputs.FILE_SCHEMA.split(", ")]
    table = F.from_json(F.lit(json.dumps([dict(zip(names, row)) for row in rows])),
                        "array<struct<" + ",".join(c.replace(" ", ":") for c in inputs.FILE_SCHEMA.split(", ")) + ">>")
    return (spark.range(0, len(rows), 1, len(rows))
            .select(F.element_at(table, F.col("id").cast("int") + 1).alias("f")).select("f.*"))
