"""Corpus readers: files, folders or stdin -> a stream of records, one at a time.

Formats: JSON lines, CSV, TSV (a header row names the fields), Parquet (a row per
document, the line number is the row number; needs pyarrow), plain text (a
document per line; in a folder, a document per file). Compression (gzip, bzip2,
xz, zstd with the ``zstandard`` package) is recognised by its magic bytes, so
``corpus.jsonl.gz`` and a gzipped stdin both work. Nothing is read whole: memory
stays flat however large the input.

A record that cannot be used is still yielded, with ``error`` saying why, so callers
keep input order and can account for every record: read = used + rejected.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInput
from ..index.ids import document_id
from ..text.fingerprint import parse_hex
from .compressed import DamagedInput, decompressed, kind_of

FORMATS = ("auto", "jsonl", "csv", "tsv", "parquet", "lines", "file")
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv",
                  ".parquet": "parquet"}
STRUCTURED = ("jsonl", "csv", "tsv", "parquet")
_PARQUET_BATCH = 4096
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zstd")
_SNIFF = 8192  # bytes looked at to tell a binary file from text
_BAD_UTF8 = re.compile("[\udc80-\udcff]")
csv.field_size_limit(1 << 30)


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

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Fields:
    """Which input fields hold the id, the text, the simhash, the title and the featurizer
    that made the simhash; and the one character between the fields of a CSV or TSV line
    (``delimiter``; None: a comma for CSV, a tab for TSV)."""

    id: str = "id"
    text: str = "text"
    simhash: str = "simhash"
    title: str = "title"
    featurizer: str = "featurizer"
    delimiter: str | None = None

    def __post_init__(self) -> None:
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
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        name = str(path.relative_to(folder))
        structured = _format_of(path) in STRUCTURED
        yield from _read_file(path, str(path), fmt if fmt != "auto" or structured else "file",
                              fields, doc_id=name)


def _read_file(path: Path, source: str, fmt: str, fields: Fields, doc_id: str | None = None):
    with open(path, "rb") as raw:
        yield from read_opened(raw, path, source, fmt, fields, doc_id)


def read_opened(raw: IO[bytes], path: Path, source: str, fmt: str, fields: Fields = Fields(),
                doc_id: str | None = None, first_line: int = 1, decompress: bool = True) -> Iterator[Record]:
    """Records of one input file already opened (``raw``: its bytes, compressed or not),
    named ``path`` (for the format and the id of a whole-file document) and ``source`` in
    the records. ``fmt`` as in ``read_records``, after folder rules ("file": one document).
    A piece of an uncompressed JSONL or text file that starts at line ``first_line`` reads
    as that part of the whole file (``decompress=False``: the piece's first bytes are text)."""
    kind = _format_of(path) if fmt == "auto" else fmt

    def records() -> Iterator[Record]:
        stream = decompressed(raw) if decompress else io.BufferedReader(raw)
        if kind == "file":
            yield _whole_file(stream, source, doc_id or path.name)
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


def format_of(path: Path) -> str:
    """The format a file's name implies (compression suffixes ignored); "lines" if none."""
    return _format_of(path)


def _format_of(path: Path) -> str:
    suffixes = [s for s in path.suffixes if s not in _COMPRESSED]
    return _SUFFIX_FORMAT.get(suffixes[-1].lower() if suffixes else "", "lines")


def _text(stream: IO[bytes]) -> IO[str]:
    # surrogateescape keeps bad bytes as lone surrogates, so the one bad record is
    # rejected and reading goes on.
    return io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")


def is_compressed(head: bytes) -> bool:
    """Whether a file starting with these bytes is read through a decompressor."""
    return kind_of(head) is not None


def binary_reason(head: bytes) -> str | None:
    """Why the first bytes of a file say it is not text (a NUL byte, or mostly bytes that
    are not UTF-8), or None. A binary file read line by line would index junk."""
    nul = head.find(b"\0")
    if nul >= 0:
        return f"binary data, not text (a NUL byte at byte {nul})"
    decoded = head[:-3].decode("utf-8", "replace") if len(head) > 3 else ""
    if decoded and decoded.count("\ufffd") > 0.1 * len(decoded):
        return "binary data, not text (mostly bytes that are not UTF-8)"
    return None


def _read_stream(stream: IO[bytes], source: str, fmt: str, fields: Fields, first_line: int = 1) -> Iterator[Record]:
    head = stream.peek(_SNIFF)[:_SNIFF] if hasattr(stream, "peek") else b""
    if fmt == "auto":  # stdin: sniff
        start = head[:64].lstrip()
        fmt = "jsonl" if start.startswith(b"{") else "parquet" if start.startswith(b"PAR1") else "lines"
    if fmt == "parquet":
        yield from _parquet(stream, source, fields)
        return
    reason = binary_reason(head) if first_line == 1 else None
    if reason:  # one reject for the whole file
        yield Record(source, first_line, error=reason)
        return
    text = _text(stream)
    if fmt == "jsonl":
        yield from _jsonl(text, source, fields, first_line)
    elif fmt in ("csv", "tsv"):
        yield from _table(text, source, fields, fields.separator(fmt), fmt.upper())
    elif fmt == "lines":
        yield from _lines(text, source, first_line)
    else:
        yield _whole_file(stream, source, source)


def _jsonl(text: IO[str], source: str, fields: Fields, first_line: int = 1) -> Iterator[Record]:
    for number, line in enumerate(text, first_line):
        if not line.strip():
            continue
        if _BAD_UTF8.search(line):
            yield Record(source, number, error="invalid UTF-8")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            yield Record(source, number, error=f"malformed JSON: {e.msg} at column {e.colno}")
            continue
        if not isinstance(obj, dict):
            yield Record(source, number, error=f"a JSON line must be an object, not {type(obj).__name__}")
            continue
        yield _from_fields(obj, source, number, fields)


def _table(text: IO[str], source: str, fields: Fields, delimiter: str, kind: str) -> Iterator[Record]:
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
            elif any(_BAD_UTF8.search(value) for value in row):
                yield Record(source, line, error="invalid UTF-8")
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
    """One Parquet row as a record; text columns that hold bytes must be UTF-8."""
    for key, value in row.items():
        if isinstance(value, (bytes, bytearray)):
            try:
                row[key] = bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                return Record(source, line, error="invalid UTF-8")
    return _from_fields(row, source, line, fields)


def _lines(text: IO[str], source: str, first_line: int = 1) -> Iterator[Record]:
    name = Path(source).name
    for number, line in enumerate(text, first_line):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        if _BAD_UTF8.search(line):
            yield Record(source, number, id=f"{name}:{number}", error="invalid UTF-8")
        else:
            yield Record(source, number, id=f"{name}:{number}", text=line)


def _whole_file(stream: IO[bytes], source: str, doc_id: str) -> Record:
    data = stream.read()
    reason = binary_reason(data[:_SNIFF])
    if reason:
        return Record(source, 1, id=doc_id, error=reason)
    try:
        return Record(source, 1, id=doc_id, text=data.decode("utf-8"))
    except UnicodeDecodeError as e:
        return Record(source, 1, id=doc_id, error=f"invalid UTF-8 at byte {e.start}")


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
    elif text is not None:
        record.text = text
    elif record.simhash is None:
        record.error = f"no {fields.text!r} field (nor {fields.simhash!r})"
    return record


_FLAG_OF = {"id": "--id-field", "text": "--text-field"}


def check_columns(paths: Iterable[str], fmt: str, fields: Fields, fingerprints: bool = False) -> None:
    """Refuse, before a job reads any record, a CSV, TSV or Parquet input whose header has no
    column for the id, or for the text (the simhash with ``fingerprints``): every record would
    be rejected. JSON lines and text have no header: their records are checked one by one."""
    wanted = [("id", fields.id), ("simhash", fields.simhash) if fingerprints else ("text", fields.text)]
    for path in _structured_files(paths, fmt):
        columns = _columns_of(path, fmt, fields)
        for role, name in wanted:
            if columns is not None and name not in columns:
                how = f"; name the {role} column with {_FLAG_OF[role]}" if role in _FLAG_OF else ""
                raise InvalidInput(f"{path} has no {name!r} column (its columns: "
                                   f"{', '.join(columns) or 'none'}){how}")


def _structured_files(paths: Iterable[str], fmt: str) -> Iterator[Path]:
    for path in paths:
        p = Path(path)
        files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")) if p.is_dir() else [p]
        for f in files:
            if path != "-" and f.exists() and (fmt if fmt != "auto" else _format_of(f)) in ("csv", "tsv", "parquet"):
                yield f


def _columns_of(path: Path, fmt: str, fields: Fields) -> list[str] | None:
    """The header of a CSV/TSV file or the schema of a Parquet file; None if unreadable (its
    records then say why)."""
    kind = fmt if fmt != "auto" else _format_of(path)
    try:
        with open(path, "rb") as raw:
            stream = decompressed(raw)
            if kind == "parquet":
                import pyarrow.parquet as pq

                return list(pq.ParquetFile(stream if stream.seekable() else io.BytesIO(stream.read())).schema_arrow.names)
            line = _text(stream).readline()
            return next(csv.reader([line], delimiter=fields.separator(kind)), [])
    except Exception:  # a broken file: its records are rejected with the reason
        return None


def input_identity(paths: Iterable[str], *settings: Any) -> str | None:
    """A key naming these inputs as they are now (paths, sizes, modification times) and
    the settings that shape the records; None when an input is stdin (it cannot be
    read again, so a load from it cannot resume)."""
    import hashlib

    parts: list[Any] = [list(map(repr, settings))]
    for path in paths:
        if path == "-":
            return None
        p = Path(path).resolve()
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        parts.extend((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists())
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]
