"""``--fingerprints`` inputs in JSON lines, read by Spark in the JVM (the helper's data source
``dedup-hbase-fingerprints``: Hadoop's line reader split across tasks, Jackson's parser; reached
by the DataFrame API alone, so through Spark Connect too), no Python call per good record; and
remote JSON lines and text (``--format lines``) files of texts cut into lines by the same reader
(``JvmRead.texts``), in UTF-8 or any encoding whose files can be cut at their line-end bytes
(``encodings.cut_at_line_ends``: GB18030, Big5 ...), so that no task holds a whole file.

The JVM takes a line only when it is plainly good (see jvm/.../JsonLines.java); any other
line comes back with its bytes and is read here by corpus.py's own JSON lines reader, so a
bad record gets the error, reason and (file, line) a local load gives it. Line numbers are
the file's (blank lines counted, as the Python reader counts them).

A file goes to the JVM when its records read the same there: a JSON lines file (by format
or name; of texts, a text file too), plain or compressed as its name says (.gz, .bz2: Hadoop
picks the codec by name). Its head is read first (a local file's here, a remote one's by the
data source, in one small job: ``_heads``) and judged as a local read judges a file's head: its
encoding (``--encoding auto``: detected), the byte-order mark dropped (Hadoop's reader drops a
UTF-8 one itself), and a binary file, or one no encoding fits, refused as one record on the
driver, its lines never read.
Any other file (a compressed one whose name does not say so, a corrupt one, UTF-16), and CSV,
TSV (a quoted field may hold a line end) and Parquet, go through inputs.py.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from ...text.encodings import DEFAULT, binary_reason, cut_at_line_ends
from ..compressed import is_compressed
from ..corpus import NO_ENCODING, Fields, Record, encoding_of, holds, read_opened
from . import inputs, stages

_CODECS = {".gz": b"\x1f\x8b", ".bz2": b"BZh"}
_OTHER_CODECS = (".deflate", ".zst", ".zstd", ".lz4", ".snappy", ".br", ".xz")
_SNIFF = 8192


@dataclass(frozen=True)
class Reading:
    """How the Python reader reads the JVM's lines of one file: as ``fmt`` (jsonl or lines), in
    ``encoding`` (the file's own, chosen from its head), ``strip`` bytes of a byte-order mark
    left on its first line (a GB18030 one: Hadoop's reader drops only UTF-8's)."""
    fmt: str = "jsonl"
    encoding: str = DEFAULT
    strip: int = 0


@dataclass
class JvmRead:
    """What the JVM's line reader reads (``split``): ``files`` in input order, each read as
    ``readings`` says (by ordinal); ``refused``: (ordinal, record) of the remote files whose
    head the Python reader would refuse whole (binary, or no encoding fits), one record each,
    their lines not read; ``texts``: files of texts to fingerprint (every line read by Python)."""
    texts: bool = False
    files: list[inputs.InputFile] = field(default_factory=list)
    readings: dict[int, Reading] = field(default_factory=dict)
    refused: list[tuple[int, Record]] = field(default_factory=list)


def _kind(f: inputs.InputFile, texts: bool) -> str | None:
    """The format the JVM's lines of ``f`` are read as, or None when the JVM does not read it."""
    kind = holds(Path(f.path), f.fmt)
    if kind not in (("jsonl", "lines") if texts else ("jsonl",)):
        return None
    return None if Path(f.path).suffix.lower() in _OTHER_CODECS else kind


def split(planned: list[inputs.InputFile], fields: Fields = Fields(), texts: bool = False,
          session=None) -> tuple[JvmRead, list[inputs.InputFile]]:
    """(what the JVM reads, the rest in input order): JSON lines of fingerprints, or with
    ``texts`` the remote JSON lines and text files of texts (a local one is read in pieces by
    Python, inputs.pieces; a remote one otherwise only by one task, which streams its bytes:
    inputs.parse_chunks), each as ``judged`` finds it. A remote file's head is read through
    ``session``; without one, no remote file goes to the JVM."""
    wanted = [f for f in planned if (session is not None if f.remote else not texts) and _kind(f, texts)]
    jvm = judged(session, wanted, fields, texts)
    taken = set(jvm.readings) | {ordinal for ordinal, _ in jvm.refused}
    jvm.files = [f for f in planned if f.ordinal in jvm.readings]
    return jvm, [f for f in planned if f.ordinal not in taken]


def judged(session, files: list[inputs.InputFile], fields: Fields, texts: bool) -> JvmRead:
    """``files`` judged by their heads (a local file's read here, a remote one's in the
    executors: ``_heads``) as a local read judges a file's head: each read as ``Reading`` says,
    refused as one record, or left out of the JvmRead (read by one task, inputs.py: a compressed
    file its name does not name, a damaged one, an encoding that cannot be cut at line ends,
    another encoding than UTF-8 for fingerprints)."""
    out = JvmRead(texts)
    remote = [f for f in files if f.remote]
    heads = {**(_heads(session, remote) if remote else {}), **{f.ordinal: _local_head(f) for f in files if not f.remote}}
    for f in files:
        magic, head = heads[f.ordinal]
        suffix = Path(f.path).suffix.lower()
        if (not magic.startswith(_CODECS[suffix]) if suffix in _CODECS else is_compressed(magic)) or head is None:
            continue
        encoding, skip = encoding_of(head, fields.encoding, f.source)
        reason = binary_reason(head[skip:], encoding) if encoding else NO_ENCODING
        if reason:
            out.refused.append((f.ordinal, Record(f.source, 1, error=reason)))
        elif cut_at_line_ends(encoding) and (texts or encoding == DEFAULT):
            strip = 0 if head.startswith(codecs.BOM_UTF8) else skip
            out.readings[f.ordinal] = Reading(_kind(f, texts), encoding, strip)
    return out


def _local_head(f: inputs.InputFile) -> tuple[bytes, bytes | None]:
    """``_heads`` of a local file, read here: through the codec its name picks, as Hadoop's."""
    suffix = Path(f.path).suffix.lower()
    with open(f.path, "rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        if suffix not in _CODECS:
            return magic, raw.read(_SNIFF)
        import bz2
        import gzip

        try:
            return magic, (gzip.GzipFile(fileobj=raw) if suffix == ".gz" else bz2.BZ2File(raw)).read(_SNIFF)
        except (OSError, EOFError):  # not that codec's data, or cut short
            return magic, None


def _heads(session, files: list[inputs.InputFile]) -> dict[int, tuple[bytes, bytes | None]]:
    """Per file (by ordinal): its first bytes as stored, and its first ``_SNIFF`` bytes as its
    line reader reads them (None: that stream cannot be read), read in the executors."""
    rows = session.read.format("dedup-hbase-fingerprints").options(
        files="\n".join(f.path for f in files), ordinals=",".join(str(f.ordinal) for f in files),
        splitBytes=",".join("0" for _ in files), fields="\t" * 4, heads="true").load().collect()
    return {r["ordinal"]: (bytes(r["magic"]), None if r["head"] is None else bytes(r["head"])) for r in rows}


def refused_rows(session, jvm: JvmRead, finish):
    """The records of the files ``judged`` refused, fingerprinted (an error each) on the driver."""
    batch = finish(jvm.refused)
    return session.createDataFrame(batch.to_pylist(), stages.FINGERPRINTED_SCHEMA)


def read(job, jvm: JvmRead, fields: Fields, finish) -> tuple[object, list[inputs.InputFile]]:
    """(the fingerprinted records (stages.FINGERPRINTED_SCHEMA) of ``jvm.files``, or None when
    there are none; the files the JVM found damaged). ``jvm.files``: JSON lines files of
    fingerprints, or of texts; ``finish``: stages.fingerprint_records, for the lines the JVM
    leaves. A compressed file that the JVM's count of lines finds cut off or corrupt past its
    head is not read here: the caller leaves it to inputs.py's whole-file reader, which keeps
    the records before the damage and rejects the rest in one record, as a local read does.
    The JVM's rows are persisted (``job.persist``: the job unpersists them once the records
    are), so the files are parsed once for both branches. With ``jvm.texts`` (files of texts
    to fingerprint) the JVM only cuts the files into lines (JsonLines.java: no simhash field),
    and every line is read by the Python reader and fingerprinted by ``finish``."""
    import os

    from pyspark.sql import functions as F

    spark = job.session
    parallelism = job.parallelism
    files, texts = jvm.files, jvm.texts
    uris = [f.path if f.remote else "file://" + os.path.abspath(f.path) for f in files]
    split_bytes = [min(inputs.MAX_PIECE, max(inputs.MIN_PIECE, -(-(0 if f.remote else os.path.getsize(f.path))
                                                                    // parallelism))) for f in files]
    rows, damaged = lines_read(spark, uris, [f.ordinal for f in files], split_bytes,
                               [fields.id, fields.text, "" if texts else fields.simhash, fields.title,
                                fields.featurizer])
    damaged = [f for f in files if f.ordinal in damaged]
    if rows is None:
        return None, damaged
    files = [f for f in files if f not in damaged]
    sources = F.create_map(*[c for f in files for c in (F.lit(f.ordinal), F.lit(f.source))])
    rows = rows.withColumn("source", sources[F.col("ordinal")])
    if texts:
        return rows.select("ordinal", "line", "source", "raw").mapInArrow(_read_lines(fields, finish, jvm.readings),
                                                                          stages.FINGERPRINTED_SCHEMA), damaged
    rows = job.persist(rows)
    none = F.lit(None).cast("string")
    clean = rows.where(F.col("raw").isNull()).select(
        "ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", none.alias("error"),
        none.alias("reason"), "featurizer", F.lit(None).cast("array<bigint>").alias("more"),
        F.lit(None).cast("array<array<bigint>>").alias("masks"), F.lit(None).cast("bigint").alias("sketch"),
        F.lit(None).cast("string").alias("kept"))
    bad = (rows.where(F.col("raw").isNotNull()).select("ordinal", "line", "source", "raw")
           .mapInArrow(_read_lines(fields, finish, jvm.readings), stages.FINGERPRINTED_SCHEMA))
    return clean.unionByName(bad), damaged


def lines_read(spark, uris: list[str], ordinals: list[int], split_bytes: list[int],
               field_names: list[str]) -> tuple[object, set[int]]:
    """(the rows (ordinal, line, id, simhash, title, length, text_bytes, featurizer, raw) of JSON
    lines files, read and checked by the helper's data source in the executors, or None; the
    ordinals of the compressed files found damaged, whose lines are not read): first the lines
    of each split counted (a job of the line reader alone), then each line of the files that
    are not damaged read with its line number in its file."""
    def reader(chosen: list[int]):
        return spark.read.format("dedup-hbase-fingerprints").options(
            files="\n".join(uris[i] for i in chosen), ordinals=",".join(str(ordinals[i]) for i in chosen),
            splitBytes=",".join(str(split_bytes[i]) for i in chosen), fields="\t".join(field_names))

    counts = sorted((r["split"], r["ordinal"], r["lines"]) for r in reader(list(range(len(uris)))).load().collect())
    damaged = {ordinal for _, ordinal, lines in counts if lines < 0}
    offsets, before, file = [], 0, None
    for _, ordinal, lines in counts:
        if ordinal in damaged:
            continue
        before = before if ordinal == file else 0  # a file's first split
        offsets.append(before)
        before, file = before + lines, ordinal
    kept = [i for i, ordinal in enumerate(ordinals) if ordinal not in damaged]
    return (reader(kept).option("offsets", ",".join(map(str, offsets))).load() if kept else None), damaged


def _read_lines(fields: Fields, finish, readings: dict[int, Reading]):
    """mapInArrow: (ordinal, line, source, raw) -> the records corpus.py's reader makes of these
    lines (at their line numbers; each file's as its ``readings`` says), fingerprinted by
    ``finish``. A batch's lines of one file are read as one stream, not a reader per line (which
    cost 9% more of this function's CPU on the news texts): the JVM's lines hold no line end, and
    a line number it gave no row (a blank line of fingerprints) is an empty line of the stream."""
    def run(batches):
        for batch in batches:
            columns = batch.to_pydict()
            ordinals, lines, raws = columns["ordinal"], columns["line"], columns["raw"]
            out = []
            order = sorted(range(batch.num_rows), key=lambda i: (ordinals[i], lines[i]))
            for ordinal, rows in groupby(order, key=ordinals.__getitem__):
                rows = list(rows)
                reading = readings.get(ordinal, Reading())
                first = lines[rows[0]]
                pad = 2 if first == 2 else 1  # blank lines first: the stream starts at line 0 or after 1,
                parts = [b"\n" * pad]         # never at line 1 (the head checks are for a file's start)
                for i in rows:
                    raw = raws[i][reading.strip:] if lines[i] == 1 else raws[i]
                    parts += [b"\n" * (lines[i] - first), raw, b"\n"]
                    first = lines[i] + 1
                source = columns["source"][rows[0]]
                read_as = fields if reading.encoding == fields.encoding else dataclasses.replace(
                    fields, encoding=reading.encoding)
                out.extend((ordinal, record) for record in read_opened(
                    io.BytesIO(b"".join(parts)), Path(source), source, reading.fmt, read_as,
                    first_line=lines[rows[0]] - pad, decompress=False))
            if out:
                yield finish(out)
    return run
