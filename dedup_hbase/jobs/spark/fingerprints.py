"""``--fingerprints`` inputs in JSON lines, read by Spark in the JVM (the helper's data source
``dedup-hbase-fingerprints``: Hadoop's line reader split across tasks, Jackson's parser; reached
by the DataFrame API alone, so through Spark Connect too), no Python call per good record; and
remote JSON lines files of texts cut into lines by the same reader (``read(..., texts=True)``),
so that no task holds a whole file.

The JVM takes a line only when it is plainly good (see jvm/.../JsonLines.java); any other
line comes back with its bytes and is read here by corpus.py's own JSON lines reader, so a
bad record gets the error, reason and (file, line) a local load gives it. Line numbers are
the file's (blank lines counted, as the Python reader counts them).

A file goes to the JVM when its records read the same there: a JSON lines file (by format
or name), plain or compressed as its name says (.gz, .bz2: Hadoop picks the codec by name),
not starting with a byte-order mark, not binary (``corpus.binary_reason`` of its head, which
makes the Python reader reject the whole file as one record). Any other file, and CSV, TSV
and Parquet, go through inputs.py.
"""

from __future__ import annotations

import io
from itertools import groupby
from pathlib import Path

from ...text.encodings import binary_reason
from ..compressed import is_compressed
from ..corpus import Fields, format_of, read_opened
from . import inputs, stages

_CODECS = {".gz": b"\x1f\x8b", ".bz2": b"BZh"}
_OTHER_CODECS = (".deflate", ".zst", ".zstd", ".lz4", ".snappy", ".br", ".xz")
_SNIFF = 8192


def _jvm_reads(f: inputs.InputFile) -> bool:
    if not (f.fmt == "jsonl" or (f.fmt == "auto" and format_of(Path(f.path)) == "jsonl")):
        return False
    suffix = Path(f.path).suffix.lower()
    if suffix in _OTHER_CODECS:
        return False
    if f.remote:
        return True
    with open(f.path, "rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        if suffix in _CODECS:
            if not magic.startswith(_CODECS[suffix]):
                return False
            import bz2
            import gzip

            head = (gzip.GzipFile(fileobj=raw) if suffix == ".gz" else bz2.BZ2File(raw)).read(_SNIFF)
        elif is_compressed(magic):
            return False
        else:
            head = raw.read(_SNIFF)
    return not head.startswith(b"\xef\xbb\xbf") and binary_reason(head) is None


def split(planned: list[inputs.InputFile], texts: bool = False) -> tuple[list[inputs.InputFile], list[inputs.InputFile]]:
    """(the files the JVM reads, the rest), each in input order: JSON lines of fingerprints, or
    with ``texts`` the remote JSON lines files of texts (a local one is read in pieces by Python,
    inputs.pieces; a remote one otherwise only whole, by a task holding all of its bytes)."""
    jvm = [f for f in planned if (f.remote or not texts) and _jvm_reads(f)]
    return jvm, [f for f in planned if f not in jvm]


def read(job, files: list[inputs.InputFile], fields: Fields, finish, texts: bool = False):
    """The fingerprinted records (stages.FINGERPRINTED_SCHEMA) of JSON lines files of
    fingerprints; ``finish``: stages.fingerprint_records, for the lines the JVM leaves. The
    JVM's rows are persisted (``job.persist``: the job unpersists them once the records are),
    so the files are parsed once for both branches. With ``texts`` (files of texts to
    fingerprint) the JVM only cuts the files into lines (JsonLines.java: no simhash field),
    and every line is read by the Python reader and fingerprinted by ``finish``."""
    import os

    from pyspark.sql import functions as F

    spark = job.session
    parallelism = job.parallelism
    uris = [f.path if f.remote else "file://" + os.path.abspath(f.path) for f in files]
    split_bytes = [min(inputs.MAX_PIECE, max(inputs.MIN_PIECE, -(-(0 if f.remote else os.path.getsize(f.path))
                                                                    // parallelism))) for f in files]
    rows = lines_read(spark, uris, [f.ordinal for f in files], split_bytes,
                      [fields.id, fields.text, "" if texts else fields.simhash, fields.title, fields.featurizer])
    sources = F.create_map(*[c for f in files for c in (F.lit(f.ordinal), F.lit(f.source))])
    rows = rows.withColumn("source", sources[F.col("ordinal")])
    if texts:
        return rows.select("ordinal", "line", "source", "raw").mapInArrow(_read_lines(fields, finish),
                                                                          stages.FINGERPRINTED_SCHEMA)
    rows = job.persist(rows)
    none = F.lit(None).cast("string")
    clean = rows.where(F.col("raw").isNull()).select(
        "ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", none.alias("error"),
        none.alias("reason"), "featurizer", F.lit(None).cast("array<bigint>").alias("more"),
        F.lit(None).cast("array<array<bigint>>").alias("masks"), F.lit(None).cast("bigint").alias("sketch"))
    bad = (rows.where(F.col("raw").isNotNull()).select("ordinal", "line", "source", "raw")
           .mapInArrow(_read_lines(fields, finish), stages.FINGERPRINTED_SCHEMA))
    return clean.unionByName(bad)


def lines_read(spark, uris: list[str], ordinals: list[int], split_bytes: list[int], field_names: list[str]):
    """The rows (ordinal, line, id, simhash, title, length, text_bytes, featurizer, raw) of JSON lines files of fingerprints, read and checked
    by the helper's data source in the executors: first the lines of each split counted (a job of
    the line reader alone), then each line read with its line number in its file."""
    reader = spark.read.format("dedup-hbase-fingerprints").options(
        files="\n".join(uris), ordinals=",".join(map(str, ordinals)), splitBytes=",".join(map(str, split_bytes)),
        fields="\t".join(field_names))
    offsets, before, file = [], 0, None
    for _, ordinal, lines in sorted((r["split"], r["ordinal"], r["lines"]) for r in reader.load().collect()):
        before = before if ordinal == file else 0  # a file's first split
        offsets.append(before)
        before, file = before + lines, ordinal
    return reader.option("offsets", ",".join(map(str, offsets))).load()


def _read_lines(fields: Fields, finish):
    """mapInArrow: (ordinal, line, source, raw) -> the records corpus.py's JSON lines reader
    makes of these lines (at their line numbers), fingerprinted by ``finish``. A batch's lines
    of one file are read as one stream, not a reader per line (which cost 9% more of this
    function's CPU on the news texts): the JVM's lines hold no line end, and a line number it
    gave no row (a blank line) is an empty line of the stream."""
    def run(batches):
        for batch in batches:
            columns = batch.to_pydict()
            ordinals, lines, raws = columns["ordinal"], columns["line"], columns["raw"]
            out = []
            order = sorted(range(batch.num_rows), key=lambda i: (ordinals[i], lines[i]))
            for ordinal, rows in groupby(order, key=ordinals.__getitem__):
                rows = list(rows)
                first = lines[rows[0]]
                parts = [b"\n"]  # a blank line first: the reader's binary check is for a file's head
                for i in rows:
                    parts += [b"\n" * (lines[i] - first), raws[i], b"\n"]
                    first = lines[i] + 1
                source = columns["source"][rows[0]]
                out.extend((ordinal, record) for record in read_opened(
                    io.BytesIO(b"".join(parts)), Path(source), source, "jsonl", fields,
                    first_line=lines[rows[0]] - 1, decompress=False))
            if out:
                yield finish(out)
    return run
