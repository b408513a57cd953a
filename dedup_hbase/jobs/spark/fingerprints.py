"""``--fingerprints`` inputs in JSON lines, read by Spark in the JVM (the helper's
``JsonLines``: Hadoop's line reader split across tasks, Jackson's parser), no Python call
per good record.

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
from pathlib import Path

from ...text.encodings import binary_reason
from ..compressed import is_compressed
from ..corpus import Fields, format_of, read_opened
from . import hadoop, inputs, stages

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


def split(planned: list[inputs.InputFile]) -> tuple[list[inputs.InputFile], list[inputs.InputFile]]:
    """(the files the JVM reads, the rest), each in input order."""
    jvm = [f for f in planned if _jvm_reads(f)]
    return jvm, [f for f in planned if f not in jvm]


def read(job, files: list[inputs.InputFile], fields: Fields, finish):
    """The fingerprinted records (stages.FINGERPRINTED_SCHEMA) of JSON lines files of
    fingerprints; ``finish``: stages.fingerprint_records, for the lines the JVM leaves. The
    JVM's rows are persisted (``job.persist``: the job unpersists them once the records are),
    so the files are parsed once for both branches."""
    import os

    from pyspark.sql import functions as F

    spark = job.session
    parallelism = job.parallelism
    names = [fields.id, fields.text, fields.simhash, fields.title, fields.featurizer]
    frames = []
    for f in files:
        uri = f.path if f.remote else "file://" + os.path.abspath(f.path)
        size = 0 if f.remote else os.path.getsize(f.path)
        split_bytes = min(inputs.MAX_PIECE, max(inputs.MIN_PIECE, -(-size // parallelism)))
        frames.append(hadoop.json_lines(spark, uri, f.ordinal, names, split_bytes)
                      .withColumn("source", F.lit(f.source)))
    rows = frames[0]
    for frame in frames[1:]:
        rows = rows.unionByName(frame)
    rows = job.persist(rows)
    none = F.lit(None).cast("string")
    clean = rows.where(F.col("raw").isNull()).select(
        "ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", none.alias("error"),
        none.alias("reason"), "featurizer", F.lit(None).cast("array<bigint>").alias("more"),
        F.lit(None).cast("array<array<bigint>>").alias("masks"), F.lit(None).cast("bigint").alias("sketch"))
    bad = (rows.where(F.col("raw").isNotNull()).select("ordinal", "line", "source", "raw")
           .mapInArrow(_read_lines(fields, finish), stages.FINGERPRINTED_SCHEMA))
    return clean.unionByName(bad)


def _read_lines(fields: Fields, finish):
    """mapInArrow: (ordinal, line, source, raw) -> the records corpus.py's JSON lines reader
    makes of these lines (at their line numbers), fingerprinted by ``finish``."""
    def run(batches):
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                # a blank line first: the reader's binary check is for a file's head, not a line
                stream = io.BytesIO(b"\n" + row["raw"])
                for record in read_opened(stream, Path(row["source"]), row["source"], "jsonl", fields,
                                          first_line=row["line"] - 1, decompress=False):
                    out.append((row["ordinal"], record))
            if out:
                yield finish(out)
    return run
