"""JSON lines and Parquet rows of texts, read and fingerprinted by the compiled core a block or
batch at a time, in the Spark workers: no Python object per record but its text.

corpus.py's JSON lines reader is the reference. The core (native/src/jsonl.rs) reads a line
only when it is plainly a good record of text, and fingerprints its text in the same call;
every other line comes back with its number and is read here by the reader itself (as
fingerprints.py does with the lines the JVM leaves), so a bad record gets the error, reason
and (file, line) a local load gives it. The records the core reads come out as Arrow
columns built on its buffers. Parquet rows: the plainly good ones are picked by Arrow's
compute functions and their texts fingerprinted in one call; the rest go to
corpus.parquet_record, row by row.

Used when the worker has the core, the input fields have five different names and the
records are fingerprinted from their text (not ``--fingerprints``); else inputs.py reads the
file record by record.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from ...errors import EmptyDocument
from ...index.ids import MAX_ID_BYTES as _MAX_ID_BYTES
from ..corpus import Fields, binary_reason, decompressed, read_opened
from ..reports import reason_of
from . import stages

BLOCK = 4 << 20  # bytes of decompressed input a call of the core reads
_SNIFF = 8192
_ERRORS = {code: f"{EmptyDocument.REASON}: {why}"  # as workers.fingerprint_texts says it
           for code, why in ((1, EmptyDocument.EMPTY_TEXT), (2, EmptyDocument.NO_FEATURES))}


def usable(spec: dict, fields: Fields, use_simhash: bool) -> bool:
    """Whether a worker may read JSON lines of texts with the core (the core is there, the
    five field names differ, texts are fingerprinted)."""
    names = _names(fields)
    return not use_simhash and len(set(names)) == len(names) and stages.fingerprinter(spec).core is not None


def _names(fields: Fields) -> tuple[str, str, str, str, str]:
    """The five field names in the order the core takes them."""
    return fields.id, fields.text, fields.simhash, fields.title, fields.featurizer


def opened(raw, whole: bool) -> io.BufferedIOBase:
    """The decompressed bytes of an opened file (``whole``: all of it, as its magic bytes say;
    else a piece of an uncompressed file). gzip through ISA-L's igzip when the ``isal``
    package is there (the same bytes, in about a third of zlib's CPU), else as corpus.py
    reads it."""
    stream = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if not whole:
        return stream
    if stream.peek(2)[:2] == b"\x1f\x8b":
        try:
            from isal import igzip
        except ImportError:
            pass
        else:
            return io.BufferedReader(igzip.GzipFile(fileobj=stream))
    return decompressed(stream)


def batches(stream: io.BufferedIOBase, ordinal: int, path: str, source: str, fields: Fields, first_line: int,
            spec: dict, finish) -> Iterator:
    """The fingerprinted record batches (stages.FINGERPRINTED_SCHEMA) of JSON lines of text
    (``stream``: decompressed, starting at line ``first_line`` of the file). ``finish``:
    stages.fingerprint_records, for the lines the core leaves to the reader. A file whose
    head is binary is the reader's (one reject for the file)."""
    if first_line == 1 and binary_reason(stream.peek(_SNIFF)[:_SNIFF]) is not None:
        yield from _by_reader(stream, ordinal, path, source, fields, first_line, finish)
        return
    core, names = stages.fingerprinter(spec).core, _names(fields)
    carry, line, size = b"", first_line, BLOCK
    while True:
        chunk = stream.read(size)
        last = not chunk
        data = carry + chunk if carry else chunk
        consumed, line, columns, (numbers, others) = core.read_jsonl(data, line, last, names)
        # a line longer than the block: read on in bigger steps until it ends
        size = BLOCK if consumed or last else 2 * size
        carry = data[consumed:]
        if len(columns[0]):
            yield _arrow(columns, ordinal, source)
        if numbers:
            pairs = []
            for number, raw in zip(numbers, others):
                # a blank line first: the reader's binary check is for a file's head
                for record in read_opened(io.BytesIO(b"\n" + raw), Path(path), source, "jsonl", fields,
                                          first_line=number - 1, decompress=False):
                    pairs.append((ordinal, record))
            if pairs:
                yield finish(pairs)
        if last:
            return


def _by_reader(stream, ordinal: int, path: str, source: str, fields: Fields, first_line: int, finish):
    pairs = [(ordinal, r) for r in read_opened(stream, Path(path), source, "jsonl", fields, first_line=first_line,
                                                 decompress=False)]
    if pairs:
        yield finish(pairs)


def _arrow(columns, ordinal: int, source: str):
    """The core's columns of a block as a batch of stages.FINGERPRINTED_SCHEMA."""
    import numpy as np
    import pyarrow as pa

    lines, ids, id_offsets, titles, title_offsets, present, lengths, sizes, hashes, status = columns
    n = len(lines) // 8
    codes = np.frombuffer(status, np.uint8)
    failed = np.flatnonzero(codes)
    strings = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(id_offsets), pa.py_buffer(ids)])
    has_title = np.frombuffer(present, np.bool_)
    title_valid = None if has_title.all() else pa.py_buffer(np.packbits(has_title, bitorder="little"))
    title = pa.Array.from_buffers(pa.string(), n, [title_valid, pa.py_buffer(title_offsets), pa.py_buffer(titles)])
    simhash_valid = None if not len(failed) else pa.py_buffer(np.packbits(codes == 0, bitorder="little"))
    simhash = pa.Array.from_buffers(pa.int64(), n, [simhash_valid, pa.py_buffer(hashes)])
    if len(failed):
        errors = [None] * n
        for i in failed.tolist():
            errors[i] = _ERRORS[int(codes[i])]
        error = pa.array(errors, pa.string())
        reason = pa.array([reason_of(e) if e else None for e in errors], pa.string())
    else:
        error = reason = pa.nulls(n, pa.string())
    columns = [pa.array(np.full(n, ordinal, np.int32)), pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(lines)]),
               pa.array([source] * n, pa.string()), strings, simhash, title,
               pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(lengths)]),
               pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(sizes)]), error, reason,
               pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays(columns, names=list(stages.FINGERPRINTED_COLUMNS))


def parquet_batch(batch, columns: list[str], fields: Fields, spec: dict, file_of):
    """A batch of Spark's Parquet rows (the record's columns as ``c0``... in ``columns``' order,
    ``_file_path``, ``_row_index``) split in two: the rows that are plainly good records of
    text (an id that is a non-empty string of at most 1,024 bytes or an integer, a text, no
    simhash), fingerprinted in one call of the core (a batch of stages.FINGERPRINTED_SCHEMA,
    or None), and the other rows, for corpus.parquet_record row by row. A batch with a binary
    column (which the reader decodes, or rejects, value by value) is all left to it.
    ``file_of(uri)``: the InputFile of a row's file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = {name: batch.column(f"c{i}") for i, name in enumerate(columns)}
    ids, body = column.get(fields.id), column.get(fields.text)
    if (ids is None or body is None or not _is_text(body.type)
            or any(pa.types.is_binary(c.type) or pa.types.is_large_binary(c.type) for c in column.values())):
        return None, batch
    if _is_text(ids.type):
        plain = pc.and_(ids.is_valid(), pc.and_(pc.greater(pc.binary_length(ids), 0),
                                                 pc.less_equal(pc.binary_length(ids), _MAX_ID_BYTES)))
    elif pa.types.is_integer(ids.type):
        plain = ids.is_valid()
    else:
        return None, batch
    plain = pc.and_(plain, body.is_valid())
    if fields.simhash in column:
        plain = pc.and_(plain, column[fields.simhash].is_null())
    plain = pc.fill_null(plain, False)
    n = pc.sum(plain).as_py() or 0
    if not n:
        return None, batch
    if n == batch.num_rows:  # the usual batch: no copy of its texts
        good, rest = batch, batch.slice(0, 0)
    else:
        good, rest = batch.filter(plain), batch.filter(pc.invert(plain))
    column = {name: good.column(f"c{i}") for i, name in enumerate(columns)}
    body = column[fields.text]
    hashes, errors = stages.fingerprinter(spec).fingerprint_many(body.to_pylist())
    failed = np.zeros(n, np.bool_)
    failed[list(errors)] = True
    messages = [f"{EmptyDocument.REASON}: {errors[i]}" if i in errors else None for i in range(n)] if errors else None
    title = column.get(fields.title)
    paths = good.column("_file_path").dictionary_encode()
    files = [file_of(uri) for uri in paths.dictionary.to_pylist()]
    which = paths.indices
    out = [pc.take(pa.array([f.ordinal for f in files], pa.int32()), which),
           pc.add(good.column("_row_index").cast(pa.int64()), 1),
           pc.take(pa.array([f.source for f in files], pa.string()), which),
           pc.cast(column[fields.id], pa.string()),
           pa.array(hashes.view(np.int64), pa.int64(), mask=failed if errors else None),
           pc.cast(title, pa.string()) if title is not None and _is_text(title.type) else pa.nulls(n, pa.string()),
           pc.utf8_length(body).cast(pa.int64()), pc.binary_length(body).cast(pa.int64()),
           pa.array(messages, pa.string()) if messages else pa.nulls(n, pa.string()),
           pa.array([m and reason_of(m) for m in messages], pa.string()) if messages else pa.nulls(n, pa.string()),
           pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays(out, names=list(stages.FINGERPRINTED_COLUMNS)), rest


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
