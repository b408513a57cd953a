"""The work done in Spark's Python workers, batch by batch (``mapInArrow``).

Each worker process keeps one Fingerprinter per fingerprint spec (built, and jieba's
dictionary loaded, on the first batch it sees; Spark reuses its Python workers across
tasks) and one index per store URL. Nothing here knows the row-key layout or the document
row: index rows come from the index's ``Scheme.key_table``, replaced documents' old rows
go through ``Index.retire_old_fingerprints``, document values from ``index.document_meta``
and ``index.document_value``, as in a local load.
"""

from __future__ import annotations

import json
import zlib

import numpy as np

from ..arrays import as_unsigned, signed64, unsigned64
from ..batches import fingerprint_batch, reason_of
from ..corpus import Record
from ..fingerprint import Fingerprinter, fingerprinter_from_spec
from ..index import Document, Index, document_meta, document_value
from ..layout import KEY_BYTES, Scheme

FINGERPRINTED_SCHEMA = ("ordinal int, line long, source string, id string, simhash long, title string, "
                        "length long, text_bytes long, error string, reason string")
ROW_SCHEMA = "part int, key binary, qualifier binary, value binary"
OLD_SCHEMA = "known long"

_fingerprinters: dict[str, Fingerprinter] = {}
_indexes: dict[str, Index] = {}


def _fingerprinter(spec: dict) -> Fingerprinter:
    key = json.dumps(spec, sort_keys=True)
    fp = _fingerprinters.get(key)
    if fp is None:
        fp = _fingerprinters[key] = fingerprinter_from_spec(spec)
    return fp


def _index(url: str) -> Index:
    index = _indexes.get(url)
    if index is None:
        from ..stores import open_store

        index = _indexes[url] = Index.open(open_store(url))
    return index


def fingerprint(spec: dict, use_simhash: bool):
    """records (inputs.RECORD_SCHEMA) -> fingerprinted records: simhash or error, as
    ``loader.load`` decides them (``batches.fingerprint_batch``: same checks, same reasons,
    the texts of a batch in one call)."""
    import pyarrow as pa

    def run(batches):
        fp = _fingerprinter(spec)
        for batch in batches:
            cols = batch.to_pydict()
            records = [Record(cols["source"][i], cols["line"][i], cols["id"][i], cols["text"][i],
                              None if cols["simhash"][i] is None else unsigned64(cols["simhash"][i]),
                              cols["title"][i], cols["error"][i]) for i in range(batch.num_rows)]
            fingerprint_batch(fp, records, use_simhash)
            simhash = [None if r.error else signed64(r.simhash) for r in records]
            error = [r.error for r in records]
            reason = [reason_of(r.error) if r.error else None for r in records]
            yield pa.RecordBatch.from_arrays(
                [batch.column("ordinal"), batch.column("line"), batch.column("source"), batch.column("id"),
                 pa.array(simhash, pa.int64()), batch.column("title"), batch.column("length"),
                 batch.column("text_bytes"), pa.array(error, pa.string()), pa.array(reason, pa.string())],
                names=["ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", "error",
                       "reason"])
    return run


def fingerprint_records(spec: dict, use_simhash: bool):
    """(file ordinal, Record) lists -> fingerprinted batches (FINGERPRINTED_SCHEMA): the
    parse and the fingerprint in one pass, no batch in between. The Fingerprinter (jieba's
    dictionary) is built only when texts come."""
    import pyarrow as pa

    def finish(pairs):
        records = [record for _, record in pairs]
        lengths = [len(r.text) if r.text is not None else None for r in records]
        sizes = [len(r.text.encode("utf-8", "surrogateescape")) if r.text else 0 for r in records]
        texts = not use_simhash and any(r.text is not None and not r.error for r in records)
        fingerprint_batch(_fingerprinter(spec) if texts else None, records, use_simhash)
        cols = [[ordinal for ordinal, _ in pairs], [r.line for r in records], [r.source for r in records],
                [r.id for r in records], [None if r.error else signed64(r.simhash) for r in records],
                [r.title for r in records], lengths, sizes, [r.error for r in records],
                [reason_of(r.error) if r.error else None for r in records]]
        types = [pa.int32(), pa.int64(), pa.string(), pa.string(), pa.int64(), pa.string(), pa.int64(), pa.int64(),
                 pa.string(), pa.string()]
        return pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types)], names=[
            "ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", "error", "reason"])
    return finish


def _parts(targets: list[int], regions: np.ndarray, spread: np.ndarray, per_region: int) -> np.ndarray:
    """The Spark partition of each row: region r's rows go to partitions
    r * per_region .. + per_region - 1 (``spread`` picks one), named by the values in
    ``targets`` that Spark's hash partitioning sends exactly there."""
    table = np.asarray(targets, dtype=np.int32)
    return table[regions * per_region + (spread % per_region)]


def _regions(first_bytes_or_keys, splits: list[bytes]) -> np.ndarray:
    from bisect import bisect_right

    if all(len(s) == 1 for s in splits):
        return np.searchsorted(np.array([s[0] for s in splits], dtype=np.uint8),
                               first_bytes_or_keys[0], side="right").astype(np.int64)
    return np.array([bisect_right(splits, k) for k in first_bytes_or_keys[1]()], dtype=np.int64)


def index_rows(scheme_name: str, splits: list[bytes], targets: list[int], per_region: int):
    """winners (id, simhash) -> index rows: key = row key (13 bytes, ``Scheme.key_table``),
    qualifier = document id, empty value; ``part`` = its Spark partition (its region)."""
    import pyarrow as pa

    scheme = Scheme.parse(scheme_name)
    flags = len(scheme.flags)

    def run(batches):
        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            sims = as_unsigned(batch.column("simhash").to_numpy(zero_copy_only=False))
            table = scheme.key_table(sims)
            keys = pa.FixedSizeBinaryArray.from_buffers(pa.binary(KEY_BYTES), n * flags, [None, pa.py_buffer(table)])
            raw = np.frombuffer(table, dtype=np.uint8).reshape(n * flags, KEY_BYTES)
            regions = _regions((raw[:, 0], lambda raw=raw: (bytes(r) for r in raw)), splits)
            spread = raw[:, 12].astype(np.int64)  # low byte of the simhash: uniform
            ids = batch.column("id").cast(pa.binary())
            yield pa.RecordBatch.from_arrays(
                [pa.array(_parts(targets, regions, spread, per_region)), keys.cast(pa.binary()),
                 pa.concat_arrays([ids] * flags), pa.nulls(n * flags, pa.binary()).fill_null(b"")],
                names=["part", "key", "qualifier", "value"])
    return run


def doc_rows(splits: list[bytes], targets: list[int], per_region: int, loaded: int):
    """winners -> document rows: key = id, empty qualifier, value = 8-byte simhash +
    JSON metadata, exactly as ``Index.add_many`` writes them."""
    import pyarrow as pa

    def run(batches):
        for batch in batches:
            cols = batch.to_pydict()
            n = batch.num_rows
            if not n:
                continue
            values, keys = [], []
            for i in range(n):
                meta = document_meta(loaded, cols["source"][i], cols["line"][i], cols["title"][i], cols["length"][i])
                doc = Document(cols["id"][i], unsigned64(cols["simhash"][i]), meta)
                keys.append(doc.id.encode("utf-8"))
                values.append(document_value(doc))
            regions = _regions((np.frombuffer(b"".join(k[:1] or b"\0" for k in keys), dtype=np.uint8),
                                lambda keys=keys: iter(keys)), splits)
            spread = np.array([zlib.crc32(k) for k in keys], dtype=np.int64)  # deterministic (a retried task)
            yield pa.RecordBatch.from_arrays(
                [pa.array(_parts(targets, regions, spread, per_region)), pa.array(keys, pa.binary()),
                 pa.nulls(n, pa.binary()).fill_null(b""), pa.array(values, pa.binary())],
                names=["part", "key", "qualifier", "value"])
    return run


def old_fingerprints(url: str, chunk: int = 1000):
    """winners (id, simhash) -> per batch, how many of its ids the index holds already. Where the old
    fingerprint differs, its index rows are deleted here, through the store, as
    ``Index.add_many`` does before it writes (``Index.retire_old_fingerprints``; idempotent:
    a retried task deletes again)."""
    import pyarrow as pa

    def run(batches):
        index = _index(url)
        for batch in batches:
            ids = batch.column("id").to_pylist()
            sims = as_unsigned(batch.column("simhash").to_numpy(zero_copy_only=False))
            known = 0
            for start in range(0, len(ids), chunk):
                raw = [i.encode("utf-8") for i in ids[start:start + chunk]]
                known += len(raw) - index.retire_old_fingerprints(raw, sims[start:start + chunk]).new
            yield pa.RecordBatch.from_arrays([pa.array([known], pa.int64())], names=["known"])
    return run
