"""The work done in Spark's Python workers, batch by batch (``mapInArrow``): fingerprinting
texts, the old fingerprints of ids the index holds already, and the expiry and confirmation
of found runs.

Each worker process keeps one Fingerprinter per fingerprint spec (built, and jieba's
dictionary loaded, on the first batch with texts it sees; Spark reuses its Python workers
across tasks) and one index per store URL. A batch's texts go to the compiled core in one
``fingerprint_many`` call (the GIL released while it works). Replaced documents' old rows
go through ``Index.retire_old_fingerprints``, as in a local load. The rows written to HBase
are not built here (rows.py: Spark SQL expressions).
"""

from __future__ import annotations

import json

import numpy as np

from ...index.arrays import as_unsigned, signed64
from ...index.candidates import Run
from ...index.confirm import Sketched, confirmed_runs
from ...index.index import Index
from ...index.retention import unexpired_runs
from ...text.fingerprint import Fingerprinter, fingerprinter_from_spec
from ...text.signatures import Signatures
from ..batches import fingerprint_batch
from ..reports import reason_of

# more: the simhashes of the signatures after the body (an index of several: text/signatures.py), else null;
# masks: per signature, the bits a lookup with probes flips (Signatures.probe_masks), else null;
# sketch: an index with a confirmation or the short-text rule: the text's sketch (index/confirm.py,
# text/units.py), else null; kept: under the short-text rule, a short text as the index keeps it ("" for another)
FINGERPRINTED_SCHEMA = ("ordinal int, line long, source string, id string, simhash long, title string, "
                        "length long, text_bytes long, error string, reason string, featurizer string, "
                        "more array<bigint>, masks array<array<bigint>>, sketch long, kept string")
FINGERPRINTED_COLUMNS = ("ordinal", "line", "source", "id", "simhash", "title", "length", "text_bytes", "error",
                         "reason", "featurizer", "more", "masks", "sketch", "kept")
# a signature's runs of a lookup key (signed.py): at distance from the key's simhash of that signature
SIGNED_RUNS_SCHEMA = ("key string, j int, simhash long, distance int, ids array<string>, sketches array<bigint>, "
                      "kepts array<string>, sketch long, kept string")
OLD_SCHEMA = "known long, replaced long"

_fingerprinters: dict[str, Fingerprinter] = {}
_indexes: dict[str, Index] = {}


def job_spec(index: Index, lookups: bool = False) -> dict:
    """What the workers need to fingerprint for ``index`` (``IndexSpec.worker_spec``): its
    fingerprinter's spec, the signatures' names, for ``lookups`` the probes, the sketches' spec."""
    return index.spec.worker_spec(index.fingerprinter.spec, lookups)


def signatures_of(spec: dict) -> Signatures:
    return Signatures.parse(spec.get("signatures"))


def fingerprinter(spec: dict) -> Fingerprinter:
    """This worker's Fingerprinter of ``spec`` (a ``job_spec``; one per spec and process)."""
    key = json.dumps(spec, sort_keys=True)
    fp = _fingerprinters.get(key)
    if fp is None:
        fp = _fingerprinters[key] = fingerprinter_from_spec({k: v for k, v in spec.items()
                                                              if k not in ("signatures", "probes", "sketch", "short")})
    return fp


def index_of(url: str) -> Index:
    """This worker's index of the store at ``url`` (one per URL and process)."""
    index = _indexes.get(url)
    if index is None:
        from ...stores import open_store

        index = _indexes[url] = Index.open(open_store(url))
    return index


def fingerprint_records(spec: dict, use_simhash: bool):
    """(file ordinal, Record) lists -> fingerprinted batches (FINGERPRINTED_SCHEMA): the
    parse and the fingerprint in one pass, no batch in between. The Fingerprinter (jieba's
    dictionary) is built only when texts come. ``spec``: a ``job_spec`` (with several
    signatures, each record's ``more`` too; with a sketch spec, each record's ``sketch``)."""
    import pyarrow as pa

    signatures, probes = signatures_of(spec), spec.get("probes")

    def masks(record) -> list | None:
        if record.error or not probes:
            return None
        return [[signed64(m) for m in ms] for ms in signatures.probe_masks(fingerprinter(spec), record.text, probes)]

    short = bool(spec.get("short"))  # the short-text rule's sketch and kept text (text/units.py)

    def sketches(records) -> tuple[list, list]:
        return ([None if r.error or r.sketch is None else signed64(r.sketch) for r in records],
                [r.kept if short and not r.error and r.sketch is not None else None for r in records])

    def finish(pairs):
        records = [record for _, record in pairs]
        lengths = [len(r.text) if r.text is not None else None for r in records]
        sizes = [len(r.text.encode("utf-8", "surrogateescape")) if r.text else 0 for r in records]
        texts = not use_simhash and any(r.text is not None and not r.error for r in records)
        fingerprint_batch(fingerprinter(spec) if texts else None, records, use_simhash, signatures,
                          fingerprinter(spec["sketch"]) if texts and "sketch" in spec else None, short)
        cols = [[ordinal for ordinal, _ in pairs], [r.line for r in records], [r.source for r in records],
                [r.id for r in records], [None if r.error else signed64(r.simhash) for r in records],
                [r.title for r in records], lengths, sizes, [r.error for r in records],
                [reason_of(r.error) if r.error else None for r in records], [r.featurizer for r in records],
                [None if r.error or not r.more else [signed64(m) for m in r.more] for r in records],
                [masks(r) for r in records], *sketches(records)]
        types = [pa.int32(), pa.int64(), pa.string(), pa.string(), pa.int64(), pa.string(), pa.int64(), pa.int64(),
                 pa.string(), pa.string(), pa.string(), pa.list_(pa.int64()), pa.list_(pa.list_(pa.int64())),
                 pa.int64(), pa.string()]
        return pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types)],
                                          names=list(FINGERPRINTED_COLUMNS))
    return finish


def old_fingerprints(url: str, chunk: int = 1000):
    """winners (id, simhash, more, sketch, kept) -> per batch, how many of its ids the index holds already and how
    many of those with another fingerprint. Where the old fingerprint differs, its index rows
    are deleted here, through the store, as ``Index.write`` does before it writes
    (``Index.retire_old_fingerprints``; idempotent: a retried task deletes again)."""
    import pyarrow as pa

    def run(batches):
        index = index_of(url)
        for batch in batches:
            ids = batch.column("id").to_pylist()
            sims = as_unsigned(batch.column("simhash").to_numpy(zero_copy_only=False))
            more = batch.column("more").to_pylist()
            sketches = as_unsigned(batch.column("sketch").to_numpy(zero_copy_only=False)) \
                if index.spec.sketched else None
            kepts = batch.column("kept").to_pylist() if index.spec.short is not None else None
            extra = len(index.signatures) - 1
            columns = [sims] + [as_unsigned(np.array([m[j] for m in more], np.int64)) for j in range(extra)]
            known = replaced = 0
            for start in range(0, len(ids), chunk):
                raw = [i.encode("utf-8") for i in ids[start:start + chunk]]
                written = index.retire_old_fingerprints(raw, sims[start:start + chunk],
                                                        [c[start:start + chunk] for c in columns],
                                                        None if sketches is None else sketches[start:start + chunk],
                                                        None if kepts is None else kepts[start:start + chunk])
                known += len(raw) - written.new
                replaced += written.replaced
            yield pa.RecordBatch.from_arrays([pa.array([known], pa.int64()), pa.array([replaced], pa.int64())],
                                             names=["known", "replaced"])
    return run


def expire_runs(url: str):
    """(query, run) batches (RUNS_SCHEMA, every id of a run) -> the same without the
    documents older than the index's TTL (runs left empty dropped; the sketches of the ids
    kept beside them), a run's total the documents left (``check --engine spark``'s runs, and
    signed.py's)."""

    def run(batches):
        import pyarrow as pa

        index = index_of(url)
        for batch in batches:
            queries, simhashes, distances, ids, sketches, kepts = (batch.column(n).to_pylist() for n in (
                "query", "simhash", "distance", "ids", "sketches", "kepts"))
            found = unexpired_runs(index.store, [[Run(d, s, i)] for d, s, i in zip(distances, simhashes, ids)],
                                   index.ttl, head=index.head)
            kept = [(n, runs[0]) for n, runs in enumerate(found) if runs]
            their = [None if sketches[n] is None else [dict(zip(ids[n], sketches[n]))[i] for i in r.ids]
                     for n, r in kept]
            texts = [None if kepts[n] is None else [dict(zip(ids[n], kepts[n]))[i] for i in r.ids] for n, r in kept]
            cols = [[queries[n] for n, _ in kept], [r.simhash for _, r in kept], [r.distance for _, r in kept],
                    [len(r.ids) for _, r in kept], [list(r.ids) for _, r in kept], their, texts]
            types = [pa.int64(), pa.int64(), pa.int32(), pa.int64(), pa.list_(pa.string()), pa.list_(pa.int64()),
                     pa.list_(pa.string())]
            yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types)],
                                             names=["query", "simhash", "distance", "total", "ids", "sketches", "kepts"])
    return run


def confirm_runs(url: str):
    """SIGNED_RUNS_SCHEMA batches (a lookup key's runs with their ids' sketches, read with their
    cells, and the key's sketch: signed.py) -> the same without the documents beyond 3 bits
    whose sketch the key's does not confirm, and with the short-text rule those of any distance
    it does not match (``confirm.confirmed_runs``; no read), runs left empty dropped, the
    sketches of the ids no longer carried."""

    def run(batches):
        import pyarrow as pa

        index = index_of(url)
        allowed, short = index.confirm, index.spec.short
        mask = (1 << 64) - 1
        for batch in batches:
            keys, places, simhashes, distances, ids, theirs, texts, sketches, kepts = (
                batch.column(n).to_pylist() for n in ("key", "j", "simhash", "distance", "ids", "sketches", "kepts",
                                                      "sketch", "kept"))
            found = confirmed_runs([[Run(d, s, Sketched(i, [x & mask for x in t], k))]
                                    for d, s, i, t, k in zip(distances, simhashes, ids, theirs, texts)],
                                   [s & mask for s in sketches], allowed, short,
                                   [k or "" for k in kepts] if short is not None else None)
            kept = [(n, runs[0]) for n, runs in enumerate(found) if runs]
            cols = [[keys[n] for n, _ in kept], [places[n] for n, _ in kept], [r.simhash for _, r in kept],
                    [r.distance for _, r in kept], [list(r.ids) for _, r in kept], [None] * len(kept),
                    [None] * len(kept), [sketches[n] for n, _ in kept], [kepts[n] for n, _ in kept]]
            types = [pa.string(), pa.int32(), pa.int64(), pa.int32(), pa.list_(pa.string()), pa.list_(pa.int64()),
                     pa.list_(pa.string()), pa.int64(), pa.string()]
            yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, types)],
                                             names=["key", "j", "simhash", "distance", "ids", "sketches", "kepts",
                                                    "sketch", "kept"])
    return run
