"""Precomputed fingerprints (``--fingerprints``) read a block of lines at a time.

A JSON-lines file of ``{"id": ..., "simhash": ...}`` holds a line per document: 10^8 lines for
10^8 documents. Read a record at a time (corpus.read_records, then batches.to_fingerprint) a
line costs about 7 µs of Python, most of a 10^8 ``groups`` run. Here a block of whole lines
(``BLOCK`` bytes) is parsed by Arrow's JSON reader and checked as columns, and a block is taken
this way only when every line in it is plainly good:

- each line is one JSON object starting at the line's first byte (no blank lines, no second
  object, no carriage return but before a line feed: the record reader's lines are the same);
- the object has the id and simhash fields, and perhaps the featurizer field, nothing else;
- every id a non-empty string of at most ``MAX_ID_BYTES`` bytes of UTF-8 (Arrow refuses invalid
  UTF-8 and lone surrogates), every simhash exactly 16 hex digits, every featurizer absent,
  empty or ``featurizer``.

Any other block is read by the record reader from its first line, so that reader stays the one
rule: a file read here gives the same ids, simhashes, featurizers and rejects (with their lines)
as read record by record (tests/test_fingerprint_blocks.py, on hostile input too). Other inputs
(stdin, Parquet, CSV, another encoding, a byte-order mark) are read record by record whole.
``groups --fingerprints`` reads this way; ``load`` and ``check`` keep the record reader (their
time is in the index and the lookups: docs/benchmarks.md, "Groups").
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path

import numpy as np

from ..index.ids import MAX_ID_BYTES
from ..text import encodings
from .batches import to_fingerprint
from .compressed import UNREADABLE, DamagedInput, decompressed
from .corpus import Fields, Record, encoding_of, holds, read_opened, read_records

BLOCK = 8 << 20
_READ = 1 << 16
_SNIFF = 8192
_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


@dataclass
class Part:
    """Fingerprints of consecutive input lines: the good ones' ids (an Arrow string array) and
    simhashes (uint64), the rejected records in input order, the good records that said which
    featurizer made them (read record by record only; a block checks its own), and the bytes
    of text the good records carried (a record may hold a text beside its simhash)."""

    ids: object
    simhashes: np.ndarray
    rejected: list[Record] = field(default_factory=list)
    featurized: list[Record] = field(default_factory=list)
    text_bytes: int = 0

    @classmethod
    def of(cls, records: list[Record]) -> Part:
        """The part of records read one at a time, checked as ``to_fingerprint`` checks them."""
        import pyarrow as pa

        to_fingerprint(records, use_simhash=True)
        good = [r for r in records if not r.error]
        return cls(pa.array([r.id for r in good], pa.string()),
                   np.fromiter((r.simhash for r in good), np.uint64, len(good)),
                   [r for r in records if r.error], [r for r in good if r.featurizer is not None],
                   sum(len(r.text.encode("utf-8", "surrogateescape")) for r in good if r.text))


def fingerprint_parts(paths: Iterable[str], fmt: str, fields: Fields, featurizer: str,
                      batch_size: int = 2000) -> Iterator[Part]:
    """The parts of every path in turn (as corpus.read_records takes paths); a part read record
    by record holds at most ``batch_size`` records. ``featurizer``: the label a block's
    featurizer field may hold (another one is left to the record reader, whose records the
    caller checks: batches.check_featurizers)."""
    for path in paths:
        if path != "-" and Path(path).is_file() and holds(Path(path), fmt) == "jsonl":
            yield from _file(Path(path), fields, featurizer, batch_size)
        else:
            yield from _parts(read_records([path], fmt, fields), batch_size)


def _parts(records: Iterable[Record], batch_size: int) -> Iterator[Part]:
    it = iter(records)
    while batch := list(islice(it, batch_size)):
        yield Part.of(batch)


def _file(path: Path, fields: Fields, featurizer: str, batch_size: int) -> Iterator[Part]:
    source = str(path)
    try:
        raw = open(path, "rb")
    except OSError as e:
        yield Part.of([Record(source, 1, error=f"{UNREADABLE}: {e.strerror}")])
        return
    with raw:
        yield from _stream(decompressed(raw), path, fields, featurizer, batch_size)


def _stream(stream, path: Path, fields: Fields, featurizer: str, batch_size: int) -> Iterator[Part]:
    source, line = str(path), 1
    try:
        head = stream.peek(_SNIFF)[:_SNIFF]
        chosen, skip = encoding_of(head, fields.encoding, source, say=False)
        if chosen != encodings.DEFAULT or skip or encodings.binary_reason(head, chosen):
            yield from _parts(read_opened(stream, path, source, "jsonl", fields, decompress=False), batch_size)
            return
        encoding_of(head, fields.encoding, source)  # said as the record reader says it (--encoding auto)
        utf8 = replace(fields, encoding=encodings.DEFAULT)
        for block in _blocks(stream):
            part = _parsed(block, fields, featurizer)
            if part is not None:
                yield part
            else:
                yield from _parts(read_opened(io.BytesIO(block), path, source, "jsonl", utf8, first_line=line,
                                              decompress=False), batch_size)
            line += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")  # the record reader's lines
    except DamagedInput as e:
        where = f"after line {line - 1}" if line > 1 else "before its first line"
        yield Part.of([Record(source, line, error=f"{e.reason}: {where}, {e.detail}")])


def _blocks(stream) -> Iterator[bytes]:
    """Whole lines of about ``BLOCK`` bytes (the last one perhaps without its line feed). Where
    compressed data turns out damaged, the whole lines read before it come first."""
    buffer = bytearray()
    try:
        while data := stream.read1(_READ):  # one read of the source at a time: little lost to damage
            buffer += data
            cut = buffer.rfind(b"\n") + 1 if len(buffer) >= BLOCK else 0
            if cut:
                yield bytes(buffer[:cut])
                del buffer[:cut]
    except DamagedInput:
        cut = buffer.rfind(b"\n") + 1
        if cut:
            yield bytes(buffer[:cut])
        raise
    if buffer:
        yield bytes(buffer)


def _parsed(block: bytes, fields: Fields, featurizer: str) -> Part | None:
    """The part of a block whose every line is plainly good (the module's rules), else None."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    if not block.endswith(b"\n"):
        block += b"\n"
    raw = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(raw == 10)
    if raw[0] != 123 or (raw[ends[:-1] + 1] != 123).any() or block.count(b"\r") != block.count(b"\r\n"):
        return None
    names = dict.fromkeys((fields.id, fields.simhash, fields.featurizer))
    schema = pa.schema([(name, pa.string()) for name in names])
    try:
        table = pj.read_json(pa.BufferReader(block), read_options=pj.ReadOptions(block_size=len(block) + 1),
                             parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"))
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    if table.num_rows != len(ends):
        return None
    try:
        block.decode("utf-8")  # Arrow's reader lets some invalid UTF-8 through
    except UnicodeDecodeError:
        return None
    ids, hexes = table.column(fields.id).combine_chunks(), table.column(fields.simhash).combine_chunks()
    if ids.null_count or hexes.null_count:
        return None
    lengths = pc.binary_length(ids)
    if pc.min(lengths).as_py() < 1 or pc.max(lengths).as_py() > MAX_ID_BYTES:
        return None
    simhashes = _hex(hexes)
    if simhashes is None:
        return None
    if fields.featurizer not in (fields.id, fields.simhash):
        said = table.column(fields.featurizer).combine_chunks().drop_null()
        if len(said) and not pc.all(pc.is_in(said, value_set=pa.array(["", featurizer]))).as_py():
            return None
    return Part(ids, simhashes)


def _hex(hexes) -> np.ndarray | None:
    """uint64 of an Arrow string array of 16 hex digits each, or None if any is not."""
    import pyarrow.compute as pc

    n = len(hexes)
    if n and (pc.min(pc.binary_length(hexes)).as_py() != 16 or pc.max(pc.binary_length(hexes)).as_py() != 16):
        return None
    offsets, data = hexes.buffers()[1:3]
    start = np.frombuffer(offsets, np.int32, 1, hexes.offset * 4)[0]
    digits = _HEX[np.frombuffer(data, np.uint8, 16 * n, start).reshape(n, 16)]
    if (digits == 255).any():
        return None
    packed = (digits[:, 0::2] << 4) | digits[:, 1::2]  # the 8 bytes of each, most significant first
    return np.ascontiguousarray(packed).view(">u8").ravel().astype(np.uint64)
