"""What the Spark job reads: the input files, planned on the driver exactly as
``corpus.read_records`` walks them, and parsed in the Python workers with corpus.py's
own readers, so every record has the same source, line, id, text and error as in a
local load.

* Line formats (JSONL, CSV, TSV, text, whole files; plain or compressed): one row per
  file, one file per task. A local file is opened by its path in the worker (nothing is
  read whole); a file on another file system (``hdfs://``, ``s3a://``...) comes through the
  helper's ``dedup-hbase-chunks`` source (jvm/.../FileChunks.java) as its bytes in chunks of
  ``CHUNK_BYTES``, in order, a file in one task (small files several to a task, one after
  another), read by the worker as a stream (``ChunkStream``): the task holds a few chunks at a
  time, never the whole file.
* Parquet: Spark's own Parquet reader (row groups split across tasks); the line of a
  record is its row number in the file (``_metadata.row_index`` + 1), as in a local load.

Every record carries ``ordinal`` (the file's place in the input order) and ``line``:
together they give the input order that "the last of several records with one id
wins" needs.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..corpus import FORMATS, Fields, format_of, holds, parquet_record, read_opened
from ..options import is_uri
from . import texts

FILE_SCHEMA = ("ordinal int, path string, source string, fmt string, doc_id string, start long, end long, "
               "first_line long")
BATCH = 2000
MIN_PIECE = 4 << 20     # bytes: a big uncompressed JSONL or text file is read in pieces of at least this
MAX_PIECE = 128 << 20
CHUNK_BYTES = 1 << 20   # a remote file's bytes come to its task in rows of this many


@dataclass(frozen=True)
class InputFile:
    ordinal: int
    path: str       # a local path, or a URI Spark's Hadoop file systems read
    source: str     # as a local load names it in records and rejects
    fmt: str        # a corpus format, "file" for a document per file
    doc_id: str | None  # the id of a whole-file document (folders)
    start: int = 0      # a piece of the file: bytes start..end (end -1: to the end), whose
    end: int = -1       # first line is line first_line of the file
    first_line: int = 1

    @property
    def remote(self) -> bool:
        return is_uri(self.path)


def plan(paths: list[str], fmt: str, list_remote=None) -> list[InputFile]:
    """The files of ``paths`` in the order ``corpus.read_records`` reads them.
    ``list_remote(uri)``: the files under a URI, sorted (Hadoop file systems, from the driver)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    out: list[InputFile] = []

    def add(path: str, source: str, file_fmt: str, doc_id: str | None = None) -> None:
        out.append(InputFile(len(out), path, source, file_fmt, doc_id))

    for path in paths:
        local = local_path(path)
        if local is None:
            if list_remote is None:
                raise ValueError(f"cannot list {path}")
            for uri, relative in list_remote(path):
                add(uri, uri, holds(Path(uri), fmt), relative)
        elif (p := Path(local)).is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")):
                add(str(f), str(f), holds(f, fmt), str(f.relative_to(p)))
        else:
            add(local, local, holds(p, fmt))
    return out


def local_path(path: str) -> str | None:
    """The file or folder of this machine that the input ``path`` names (a ``file:`` URI's path),
    None for a URI of another file system (listed by the session). Raises ValueError for stdin
    (``-``) and FileNotFoundError where nothing is: a job checks its inputs with this before its
    session starts, so a missing local input costs no session."""
    if path == "-":
        raise ValueError("the Spark engine reads files, not stdin: save the input to a file "
                         "(or use the local engine)")
    if is_uri(path):
        return None
    if path.startswith("file:"):
        path = unquote(urlsplit(path).path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or folder: {path}")
    return path


def pieces(f: InputFile, parallelism: int) -> list[InputFile]:
    """A local, uncompressed JSONL or text file cut at line ends into pieces read by
    separate tasks (each knows the number of its first line); any other file: itself.
    Files holding a carriage return are not cut (a lone CR ends a line for the readers)."""
    from ..compressed import is_compressed

    fmt = format_of(Path(f.path)) if f.fmt == "auto" else f.fmt
    if f.remote or fmt not in ("jsonl", "lines"):
        return [f]
    size = Path(f.path).stat().st_size
    piece = min(MAX_PIECE, max(MIN_PIECE, -(-size // max(1, parallelism))))
    if size < 2 * piece:
        return [f]
    with open(f.path, "rb") as raw:
        if is_compressed(raw.read(6)):
            return [f]
        raw.seek(0)
        cuts, lines, position, target = [(0, 1)], 1, 0, piece
        while block := raw.read(8 << 20):
            if b"\r" in block:
                return [f]
            while position + len(block) > target:
                newline = block.find(b"\n", max(0, target - position))
                if newline < 0:
                    break
                cut = position + newline + 1
                if cut < size:
                    cuts.append((cut, lines + block.count(b"\n", 0, newline + 1)))
                target = cut + piece
            lines += block.count(b"\n")
            position += len(block)
    bounds = [c for c, _ in cuts[1:]] + [-1]
    return [InputFile(f.ordinal, f.path, f.source, fmt, f.doc_id, start, end, first)
            for (start, first), end in zip(cuts, bounds)]


def is_parquet(f: InputFile) -> bool:
    return f.fmt == "parquet" or (f.fmt == "auto" and format_of(Path(f.path)) == "parquet")


# -- in the Python workers ----------------------------------------------------------------


def parse_files(fields: Fields, finish):
    """mapInArrow function: rows of local files (FILE_SCHEMA) -> record batches, read with
    corpus.py's readers (gzip by texts.opened). ``finish``: turns a list of (file ordinal,
    Record) into the output batch (stages.fingerprint_records: fingerprinted in the same pass)."""
    def run(batches):
        for batch in batches:
            for row in batch.to_pylist():
                f = InputFile(**row)
                if f.start == 0 and f.end < 0:
                    yield from _parsed(f, open(f.path, "rb"), True, fields, finish)
                    continue
                with open(f.path, "rb") as raw:
                    raw.seek(f.start)
                    piece = io.BytesIO(raw.read() if f.end < 0 else raw.read(f.end - f.start))
                yield from _parsed(f, piece, False, fields, finish)
    return run


def parse_chunks(fields: Fields, finish, by_ordinal: dict[int, InputFile]):
    """mapInArrow function: the ``dedup-hbase-chunks`` rows (ordinal, chunk) of remote files,
    each file's chunks in order and together in one partition -> record batches, each file read
    as a stream of its chunks by corpus.py's readers (as ``parse_files`` reads a local file).
    What a reader leaves of a file (it stops at damage, or at a binary file's head) is skipped
    by ``groupby`` on to the next file."""
    def run(batches):
        rows = ((ordinal, chunk) for batch in batches
                for ordinal, chunk in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()))
        for ordinal, chunks in groupby(rows, key=itemgetter(0)):
            stream = ChunkStream(chunk for _, chunk in chunks)
            yield from _parsed(by_ordinal[ordinal], stream, True, fields, finish)
    return run


def _parsed(f: InputFile, raw, whole: bool, fields: Fields, finish) -> Iterator:
    """The record batches of one opened file (closed at the end)."""
    with raw:
        out = []
        for record in read_opened(texts.opened(raw, whole), Path(f.path), f.source, f.fmt, fields,
                                  f.doc_id, f.first_line, decompress=False):
            out.append((f.ordinal, record))
            if len(out) >= BATCH:
                yield finish(out)
                out = []
        if out:
            yield finish(out)


class ChunkStream(io.RawIOBase):
    """A file's bytes as a raw stream over ``chunks``, an iterator of them in order."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._chunk, self._at = chunks, b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        """Fills ``buffer`` across chunks, short only at the file's end, as a local file's read
        does (the readers' look at a file's head, ``peek``, sees as much as in a local read)."""
        view, n = memoryview(buffer).cast("B"), 0
        while n < len(view):
            if self._at == len(self._chunk):
                chunk = next(self._chunks, None)
                if chunk is None:
                    break
                self._chunk, self._at = chunk, 0
                continue
            step = min(len(view) - n, len(self._chunk) - self._at)
            view[n:n + step] = self._chunk[self._at:self._at + step]
            self._at += step
            n += step
        return n


def parse_parquet_rows(fields: Fields, finish, by_path: dict[str, InputFile], columns: list[str],
                       spec: dict | None = None, use_simhash: bool = True):
    """mapInArrow function: Spark's Parquet rows (the record's columns + file_path, row_index)
    -> records, as ``corpus`` reads a Parquet file. With ``spec`` (the fingerprint spec) and
    the compiled core in the worker, the rows that are plainly good records of text are
    fingerprinted a batch at a time by texts.py; the rest here, row by row."""
    def run(batches) -> Iterator:
        fast = spec is not None and texts.usable(spec, fields, use_simhash)
        for batch in batches:
            if fast:
                done, batch = texts.parquet_batch(batch, columns, fields, spec, lambda uri: by_path[_local_key(uri)])
                if done is not None:
                    yield done
            out = []
            for row in batch.to_pylist():
                f = by_path[_local_key(row.pop("_file_path"))]
                line = row.pop("_row_index") + 1
                obj = {name: row[f"c{i}"] for i, name in enumerate(columns) if f"c{i}" in row}
                out.append((f.ordinal, parquet_record(obj, f.source, line, fields)))
            if out:
                yield finish(out)
    return run


def _local_key(uri: str) -> str:
    """``file:///a/b`` -> ``/a/b`` (the key of a local file); other URIs unchanged."""
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return str(Path(unquote(parts.path)))
    return uri
