"""Corpus readers: files, folders or stdin -> a stream of records, one at a time.

Formats (``holds``: one rule for every command): JSON lines, CSV, TSV (a header row names the
fields), Parquet (a row per document, the line number is the row number), any other file one text
document (``--format lines``: a document per line). Compression (gzip, bzip2, xz, zstd) is known by
its magic bytes: ``corpus.jsonl.gz`` and a gzipped stdin both work. Memory stays flat.

A record that cannot be used is still yielded, with ``error`` saying why, so callers keep
input order and can account for every record: read = used + rejected.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInput
from ..index.ids import document_id
from ..text import encodings
from ..text.encodings import binary_reason
from ..text.fingerprint import parse_hex
from .compressed import UNREADABLE, DamagedInput, decompressed

FORMATS = ("auto", "jsonl", "csv", "tsv", "parquet", "lines", "file")
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv",
                  ".parquet": "parquet"}
STRUCTURED = ("jsonl", "csv", "tsv", "parquet")
_PARQUET_BATCH = 4096
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd")
_SNIFF = 8192  # bytes looked at to tell a binary file from text
_BAD_BYTES = re.compile("[\udc80-\udcff]")  # a byte not of the encoding, kept by surrogateescape
csv.field_size_limit(1 << 30)
NO_ENCODING = "binary data, not text (no encoding fits its bytes)"  # --encoding auto found none
log = logging.getLogger(__name__)  # the encoding --encoding auto chose for each file, at INFO


@dataclass
class Record:
    """One input document, or why it could not be read (``error``)."""

    source: str
    line: int
    id: str | None = None
    text: str | None = None
    simhash: int | None = None
    title: str | None = None
    error: str | None = None
    featurizer: str | None = None  # which featurizer made ``simhash`` (fingerprint records say)
    more: tuple[int, ...] = ()  # an index of several signatures: the simhashes after the body's
    sketch: int | None = None   # an index with a confirmation: the body's second SimHash (index/confirm.py)
    kept: str = ""              # the short-text rule: a short text as the index keeps it (text/units.py)

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Fields:
    """Which input fields hold the id, the text, the simhash, the title and the featurizer
    that made the simhash; the one character between the fields of a CSV or TSV line
    (``delimiter``; None: a comma for CSV, a tab for TSV); and the ``encoding`` of the bytes
    (text/encodings.py: utf-8, gb18030, big5, ..., or auto, detected per file)."""

    id: str = "id"
    text: str = "text"
    simhash: str = "simhash"
    title: str = "title"
    featurizer: str = "featurizer"
    delimiter: str | None = None
    encoding: str = encodings.DEFAULT

    def __post_init__(self) -> None:
        object.__setattr__(self, "encoding", encodings.check_encoding(self.encoding))
        if self.delimiter is not None and (len(self.delimiter) != 1 or self.delimiter in "\r\n\"'"):
            raise InvalidInput(f"a delimiter is one character (not a quote or a line break), not {self.delimiter!r}")

    def separator(self, fmt: str) -> str:
        """The character between the fields of a line of a ``fmt`` ("csv" or "tsv") file."""
        return self.delimiter or ("," if fmt == "csv" else "\t")


def read_records(paths: Iterable[str], fmt: str = "auto", fields: Fields = Fields(),
                 stdin: IO[bytes] | None = None) -> Iterator[Record]:
    """Records of every path in turn; ``-`` is stdin, a folder is walked in name order."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    for path in paths:
        if path == "-":
            yield from _until_damaged(lambda: _read_stream(decompressed(stdin or sys.stdin.buffer), "<stdin>", fmt,
                                                           fields), "<stdin>")
        elif Path(path).is_dir():
            yield from _read_folder(Path(path), fmt, fields)
        elif Path(path).exists():
            yield from _read_file(Path(path), str(path), fmt, fields)
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")


def _read_folder(folder: Path, fmt: str, fields: Fields) -> Iterator[Record]:
    unreadable: list[OSError] = []
    files = [Path(top, name) for top, _, names in os.walk(folder, onerror=unreadable.append) for name in names]
    for e in unreadable:  # a folder that cannot be listed: one reject, the rest goes on
        yield Record(str(e.filename), 1, error=f"{UNREADABLE}: {e.strerror}")
    for path in sorted(p for p in files if p.is_file() and not p.name.startswith(".")):
        yield from _read_file(path, str(path), holds(path, fmt), fields, doc_id=str(path.relative_to(folder)))


def _read_file(path: Path, source: str, fmt: str, fields: Fields, doc_id: str | None = None):
    try:
        raw = open(path, "rb")
    except OSError as e:  # no permission, an I/O error: one reject, the rest goes on
        yield Record(source, 1, id=doc_id, error=f"{UNREADABLE}: {e.strerror}")
        return
    with raw:
        yield from read_opened(raw, path, source, fmt, fields, doc_id)


def read_opened(raw: IO[bytes], path: Path, source: str, fmt: str, fields: Fields = Fields(),
                doc_id: str | None = None, first_line: int = 1, decompress: bool = True) -> Iterator[Record]:
    """Records of one input file already opened (``raw``: its bytes, compressed or not),
    named ``path`` (for the format and the id of a whole-file document) and ``source`` in
    the records. ``fmt`` as in ``read_records``, after folder rules ("file": one document).
    A piece of an uncompressed JSONL or text file that starts at line ``first_line`` reads
    as that part of the whole file (``decompress=False``: text, ``raw`` itself if it is buffered)."""
    kind = holds(path, fmt)

    def records() -> Iterator[Record]:
        stream = decompressed(raw) if decompress else raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
        if kind == "file":
            yield _whole_file(stream, source, doc_id or path.name, fields.encoding)
        else:
            yield from _read_stream(stream, source, kind, fields, first_line)

    yield from _until_damaged(records, source, first_line, doc_id)


def _until_damaged(records, source: str, first_line: int = 1, doc_id: str | None = None) -> Iterator[Record]:
    """The records of ``records()``, then, if its compressed data turns out cut off or corrupt,
    one rejected record after the last one read, saying so (compressed.DamagedInput)."""
    last = first_line - 1
    try:
        for record in records():
            last = record.line
            yield record
    except DamagedInput as e:
        where = f"after line {last}" if last >= first_line else "before its first line"
        yield Record(source, last + 1, id=doc_id, error=f"{e.reason}: {where}, {e.detail}")


def holds(path: Path, fmt: str = "auto") -> str:
    """What a file holds, the one rule of every command (named or in a folder alike): ``fmt``
    when given (``--format``), else its name's: JSON lines, CSV, TSV or Parquet; any other file
    is one text document ("file"; ``--format lines``: a document per line)."""
    if fmt != "auto":
        return fmt
    kind = format_of(path)
    return kind if kind in STRUCTURED else "file"


def format_of(path: Path) -> str:
    """The format a file's name implies (compression suffixes ignored); "lines" if none."""
    suffixes = [s for s in path.suffixes if s not in _COMPRESSED]
    return _SUFFIX_FORMAT.get(suffixes[-1].lower() if suffixes else "", "lines")


def _text(stream: IO[bytes], encoding: str) -> IO[str]:
    # surrogateescape keeps bad bytes as lone surrogates, so the one bad record is
    # rejected and reading goes on.
    return io.TextIOWrapper(stream, encoding=encoding, errors="surrogateescape", newline="")


def encoding_of(head: bytes, wanted: str, source: str, say: bool = True) -> tuple[str | None, int]:
    """The encoding a file starting with ``head`` is read in (``wanted``, or the one detected for
    ``auto``, said in the log when ``say``; None when none fits) and the length of its byte-order
    mark, which is not read."""
    chosen = encodings.detect(head) if wanted == encodings.AUTO else wanted
    if wanted == encodings.AUTO and say:
        log.info("%s: read as %s (--encoding auto)", source, encodings.label(chosen) if chosen else "nothing: no encoding fits")
    marked = encodings.bom(head, chosen or encodings.DEFAULT)
    return chosen, marked[1] if marked else 0


def _read_stream(stream: IO[bytes], source: str, fmt: str, fields: Fields, first_line: int = 1) -> Iterator[Record]:
    head = stream.peek(_SNIFF)[:_SNIFF] if hasattr(stream, "peek") else b""
    if fmt == "auto":  # stdin: sniff
        start = head[:64].lstrip()
        fmt = "jsonl" if start.startswith(b"{") else "parquet" if start.startswith(b"PAR1") else "lines"
    if fmt == "parquet":
        yield from _parquet(stream, source, fields)
        return
    if fmt == "file":
        yield _whole_file(stream, source, source, fields.encoding)
        return
    encoding, reason = fields.encoding, None
    if first_line == 1:
        encoding, skip = encoding_of(head, fields.encoding, source)
        head = head[len(stream.read(skip)):]
        reason = binary_reason(head, encoding) if encoding else NO_ENCODING
    if reason:  # one reject for the whole file
        yield Record(source, first_line, error=reason)
        return
    text, invalid = _text(stream, encoding), f"invalid {encodings.label(encoding)}"
    if fmt == "jsonl":
        yield from _jsonl(text, source, fields, first_line, invalid)
    elif fmt in ("csv", "tsv"):
        yield from _table(text, source, fields, fields.separator(fmt), fmt.upper(), invalid)
    else:
        yield from _lines(text, source, first_line, invalid)


def _jsonl(text: IO[str], source: str, fields: Fields, first_line: int = 1, invalid: str = "invalid UTF-8"
           ) -> Iterator[Record]:
    for number, line in enumerate(text, first_line):
        if not line.strip():
            continue
        if _BAD_BYTES.search(line):
            yield Record(source, number, error=invalid)
            continue
        try:  # without its line end: an error's column is the line's, however the line ended
            obj = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as e:
            yield Record(source, number, error=f"malformed JSON: {e.msg.removesuffix(' at')} at column {e.colno}")
            continue
        except RecursionError:
            yield Record(source, number, error="malformed JSON: nested too deeply")
            continue
        except ValueError as e:  # an integer of more digits than Python converts
            yield Record(source, number, error=f"malformed JSON: {e}")
            continue
        if not isinstance(obj, dict):
            yield Record(source, number, error=f"a JSON line must be an object, not {type(obj).__name__}")
            continue
        yield _from_fields(obj, source, number, fields)


def _table(text: IO[str], source: str, fields: Fields, delimiter: str, kind: str, invalid: str = "invalid UTF-8"
           ) -> Iterator[Record]:
    """Rows of a CSV or TSV file under its header; a record is reported at its first line
    (a quoted field may span several)."""
    reader = csv.reader(text, delimiter=delimiter)
    start = 1
    try:
        header = next(reader, None)
        if header is None:
            return
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if not row:  # a blank line
                continue
            if len(row) > len(header):
                yield Record(source, line, error=f"{len(row) - len(header)} more fields than the header has")
            elif any(_BAD_BYTES.search(value) for value in row):
                yield Record(source, line, error=invalid)
            else:
                yield _from_fields(dict(zip(header, row)), source, line, fields)
    except csv.Error as e:
        yield Record(source, start, error=f"malformed {kind}: {e}")


def _parquet(stream: IO[bytes], source: str, fields: Fields) -> Iterator[Record]:
    """Rows of a Parquet file; the line of a record is its row number (from 1). Only the
    id, text, simhash and title columns are read; a missing column reads as an absent field."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidInput("Parquet input needs the pyarrow package, a dependency of dedup-hbase: pip install pyarrow") from None
    if not (hasattr(stream, "seekable") and stream.seekable()):
        stream = io.BytesIO(stream.read())  # Parquet's footer is at the end: stdin is read whole
    try:
        parquet = pq.ParquetFile(stream)
    except Exception as e:  # pyarrow.ArrowInvalid: not a Parquet file
        yield Record(source, 1, error=f"malformed Parquet: {e}")
        return
    yield from parquet_records(parquet.iter_batches(batch_size=_PARQUET_BATCH, columns=parquet_columns(
        parquet.schema_arrow.names, fields)), source, fields)


def parquet_columns(names: Iterable[str], fields: Fields) -> list[str]:
    """The columns of a Parquet schema that a record reads."""
    wanted = (fields.id, fields.text, fields.simhash, fields.title, fields.featurizer)
    return [name for name in dict.fromkeys(wanted) if name in set(names)]


def parquet_records(batches, source: str, fields: Fields, first_line: int = 1) -> Iterator[Record]:
    """Records of Arrow record batches of Parquet rows (line = row number, counted from
    ``first_line``); a row is read as a JSON object would be (null = absent)."""
    number = first_line
    for batch in batches:
        for row in batch.to_pylist():
            yield parquet_record(row, source, number, fields)
            number += 1


def parquet_record(row: dict[str, Any], source: str, line: int, fields: Fields) -> Record:
    """One Parquet row as a record; text columns that hold bytes must be of the encoding."""
    for key, value in row.items():
        if isinstance(value, (bytes, bytearray)):
            try:
                row[key] = encodings.decode(bytes(value), fields.encoding)
            except UnicodeDecodeError:
                return Record(source, line, error=f"invalid {encodings.label(fields.encoding)}")
    return _from_fields(row, source, line, fields)


def _lines(text: IO[str], source: str, first_line: int = 1, invalid: str = "invalid UTF-8") -> Iterator[Record]:
    name = Path(source).name
    for number, line in enumerate(text, first_line):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        if _BAD_BYTES.search(line):
            yield Record(source, number, id=f"{name}:{number}", error=invalid)
        else:
            yield Record(source, number, id=f"{name}:{number}", text=line)


def _whole_file(stream: IO[bytes], source: str, doc_id: str, wanted: str = encodings.DEFAULT) -> Record:
    data = stream.read()
    encoding, skip = encoding_of(data[:1 << 16], wanted, source)
    reason = binary_reason(data[skip:skip + _SNIFF], encoding) if encoding else NO_ENCODING
    if reason:
        return Record(source, 1, id=doc_id, error=reason)
    try:
        return Record(source, 1, id=doc_id, text=data[skip:].decode(encoding))
    except UnicodeDecodeError as e:
        return Record(source, 1, id=doc_id, error=f"invalid {encodings.label(encoding)} at byte {e.start}")


def _from_fields(obj: dict[str, Any], source: str, line: int, fields: Fields) -> Record:
    record = Record(source, line)
    if fields.id not in obj:
        record.error = f"no {fields.id!r} field"
        return record
    try:
        record.id = document_id(obj[fields.id], fields.id)
    except InvalidInput as e:
        record.error = str(e)
        return record
    title = obj.get(fields.title)
    record.title = title if isinstance(title, str) else None
    text, simhash = obj.get(fields.text), obj.get(fields.simhash)
    if simhash not in (None, ""):
        try:
            record.simhash = parse_hex(str(simhash))
        except ValueError as e:
            record.error = f"bad {fields.simhash!r}: {e}"
            return record
        made_by = obj.get(fields.featurizer)
        record.featurizer = made_by if isinstance(made_by, str) and made_by else None
    if text is None and fields.text in obj and record.simhash is None:
        record.error = f"{fields.text!r} is null"
    elif text is not None and not isinstance(text, str):
        record.error = f"{fields.text!r} is not a string"
    elif text is not None and not _is_unicode(text):
        record.error = f"{fields.text!r} holds a lone surrogate (a \\ud800-\\udfff escape): not Unicode text"
    elif text is not None:
        record.text = text
    elif record.simhash is None:
        record.error = f"no {fields.text!r} field (nor {fields.simhash!r})"
    if record.title is not None and not _is_unicode(record.title):
        record.title = None  # metadata, not part of the fingerprint: left out as a non-string one is
    return record


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def columns_of(path: Path, fmt: str, fields: Fields) -> list[str] | None:
    """The header of a CSV/TSV file or the schema of a Parquet file; None if unreadable (its
    records then say why)."""
    kind = fmt if fmt != "auto" else format_of(path)
    try:
        with open(path, "rb") as raw:
            stream = decompressed(raw)
            if kind == "parquet":
                import pyarrow.parquet as pq

                return list(pq.ParquetFile(stream if stream.seekable() else io.BytesIO(stream.read())).schema_arrow.names)
            encoding, skip = encoding_of(stream.peek(1 << 16), fields.encoding, str(path), say=False)
            stream.read(skip)
            line = _text(stream, encoding or encodings.DEFAULT).readline()
            return next(csv.reader([line], delimiter=fields.separator(kind)), [])
    except Exception:  # a broken file: its records are rejected with the reason
        return None
