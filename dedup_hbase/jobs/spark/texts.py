"""Texts in the Spark workers: Parquet rows of texts fingerprinted a batch at a time, and the
bytes of an input file opened for corpus.py's readers (decompressed as a local load does).

Parquet rows: the plainly good ones (an id that is a non-empty string of at most
``ids.MAX_ID_BYTES`` bytes or an integer, a text, no simhash) are picked by Arrow's compute
functions and their texts fingerprinted in one call of the compiled core, no Python object per
row but its text; every other row goes to ``corpus.parquet_record``, row by row, which gives it
the record or the error a local load gives it. Used when the worker has the core, the input
fields have five different names and the records are fingerprinted from their text (not
``--fingerprints``); else inputs.py reads every row with ``corpus.parquet_record``.
"""

from __future__ import annotations

import io

from ...errors import EmptyDocument
from ...index.ids import MAX_ID_BYTES
from ..corpus import Fields, decompressed
from ..reports import reason_of
from . import stages


def usable(spec: dict, fields: Fields, use_simhash: bool) -> bool:
    """Whether a worker may fingerprint Parquet rows of texts a batch at a time (the core is
    there, the five field names differ, texts are fingerprinted, one signature: the body's, no probes,
    no sketch)."""
    names = (fields.id, fields.text, fields.simhash, fields.title, fields.featurizer)
    return (not use_simhash and len(set(names)) == len(names) and not {"signatures", "probes", "sketch", "short"} & set(spec)
            and stages.fingerprinter(spec).core is not None)


def opened(raw, whole: bool) -> io.BufferedIOBase:
    """The decompressed bytes of an opened file (``whole``: all of it, as its magic bytes say,
    through corpus.py's decompressor; else a piece of an uncompressed file). Not ISA-L's gzip,
    though it takes about half of zlib's CPU: cut off, it gives up to 128 KB fewer of the bytes
    before the cut than zlib does, and its error for corrupt data is none that
    compressed.checked knows, so a local load and a Spark one would keep different records."""
    stream = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    return decompressed(stream) if whole else stream


def parquet_batch(batch, columns: list[str], fields: Fields, spec: dict, file_of):
    """A batch of Spark's Parquet rows (the record's columns as ``c0``... in ``columns``' order,
    ``_file_path``, ``_row_index``) split in two: the rows that are plainly good records of
    text (an id that is a non-empty string of at most ``MAX_ID_BYTES`` bytes or an integer, a
    text, no simhash), fingerprinted in one call of the core (a batch of stages.FINGERPRINTED_SCHEMA,
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
                                                 pc.less_equal(pc.binary_length(ids), MAX_ID_BYTES)))
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
           pa.nulls(n, pa.string()), pa.nulls(n, pa.list_(pa.int64())), pa.nulls(n, pa.list_(pa.list_(pa.int64()))),
           pa.nulls(n, pa.int64()), pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays(out, names=list(stages.FINGERPRINTED_COLUMNS)), rest


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
