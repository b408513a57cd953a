"""The Arrow batch API: pyarrow batches in, the same rows with fingerprints, matches, decisions
or groups out, for a pipeline's step (Ray Data's ``map_batches``, a Hugging Face ``map``, a
loop over Parquet files).

>>> import pyarrow as pa
>>> from dedup_hbase import Index, open_store
>>> from dedup_hbase.pipelines import arrow
>>> index = Index.create(open_store("memory:"))
>>> batch = pa.table({"id": ["a", "b"], "text": ["国家卫生健康委通报最新疫情", "国家卫生健康委通报最新疫情"]})
>>> arrow.add_new(batch, index).column("added").to_pylist()
[True, False]

Four calls, each over the library call its behaviour already has (one path per behaviour):

* ``fingerprints``: ``simhash`` (uint64) per row and, given an index, its other signatures
  (``simhash_leadN``) and ``sketch``; the compiled core reads the text column's Arrow buffers;
* ``check``: per row ``matches`` (list<struct<id: string, distance: int8>>, by distance then id)
  and ``match_count``: the lookups of ``check`` (jobs/local/check.py's ``look_up``);
* ``add_new``: insert-if-new, the service's rule (``OnlineIndex.add(if_new=True)``): per row
  ``added`` and, where not added, ``via`` (its nearest match, by distance then id) and
  ``distance``;
* ``groups``: over an iterable of batches, per row ``group``, ``size``, ``keep``, ``via``,
  ``distance`` (the groups job's semantics and columns: jobs/local/groups.py's ``grouped`` and
  group_output.py's ``groups_table``), holding ids and fingerprints, never texts.

Every call checks its arguments before it fingerprints or reads anything (a missing column or
one of another type is an ``InvalidInput`` naming the argument). A row that cannot be
fingerprinted (a null or featureless text, a null or too long id) is not an error of the call:
its ``error`` says why, and it matches nothing, is not added and is in no group. A RecordBatch
gives a RecordBatch, a Table a Table, the input's columns first.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..index.confirm import sketch_spec
from ..index.documents import two_versions
from ..index.index import Document, Index, document_meta
from ..jobs.corpus import Record
from ..jobs.local.check import look_up
from ..jobs.local.group_output import groups_table
from ..jobs.local.groups import grouped
from ..jobs.options import CheckOptions, GroupsOptions
from ..service.online import OnlineIndex
from ..text.fingerprint import Fingerprinter, fingerprinter_from_spec, make_fingerprinter
from ..text.signatures import Signatures
from .columns import (
    ERROR,
    Fingerprinted,
    added_names,
    check_batch,
    fingerprint_columns,
    fingerprinted,
    short_rule,
    with_columns,
)

MATCHES, MATCH_COUNT = "matches", "match_count"
ADDED, VIA, DISTANCE = "added", "via", "distance"
SOURCE = "arrow"  # the source a row's Record names (its line: the row's position in its batch)
_ONLINE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Index -> its OnlineIndex, for add_new
_ONLINE_LOCK = threading.Lock()


@functools.cache
def default_fingerprinter() -> Fingerprinter:
    """jieba, seed 0 (``make_fingerprinter()``), made once: its dictionary loads on the first call
    that fingerprints, not on every call."""
    return make_fingerprinter()


def match_type():
    """``matches``' type: list<struct<id: string, distance: int8>>."""
    import pyarrow as pa

    return pa.list_(pa.struct([("id", pa.string()), ("distance", pa.int8())]))


def fingerprints(batch: Any, index: Index | None = None, *, id_column: str = "id", text_column: str = "text",
                 fingerprinter: Fingerprinter | None = None, threads: int = 1) -> Any:
    """``batch`` with ``simhash`` (uint64) and ``error`` per row; with an ``index``, its
    fingerprinter, and its other signatures (``simhash_leadN``) and ``sketch`` when it keeps
    them. Without an index, ``fingerprinter`` (default: jieba, seed 0). ``threads``: the
    compiled core's threads (``Fingerprinter.fingerprint_many``). Reads and writes no store;
    probes are not columns (a lookup makes them from the text)."""
    fingerprinter, signatures, sketcher = _fingerprinting(index, fingerprinter)
    short = index is not None and index.spec.short is not None
    return fingerprints_with(batch, fingerprinter, signatures, sketcher, short, id_column=id_column,
                             text_column=text_column, threads=threads)


def fingerprints_with(batch: Any, fingerprinter: Fingerprinter, signatures: Signatures, sketcher: Fingerprinter | None,
                      short: bool, *, id_column: str = "id", text_column: str = "text", threads: int = 1) -> Any:
    """``fingerprints`` with an index's parts given (its ``fingerprinter``, ``signatures``,
    ``sketcher`` and whether it has the ``short``-text rule) instead of the index: where the
    index is not at hand (a Spark worker: spark_frames.py)."""
    check_batch(batch, id_column, text_column, added_names(signatures, sketcher is not None or short))
    found = fingerprinted(batch, text_column, id_column, fingerprinter, signatures, sketcher, threads, short)
    return with_columns(batch, fingerprint_columns(found, signatures))


def check(batch: Any, index: Index, *, id_column: str = "id", text_column: str = "text", k: int | None = None,
          max_matches: int | None = 1000, threads: int = 1) -> Any:
    """``fingerprints(batch, index)`` with each row's ``matches`` in ``index`` (within ``k`` bits,
    default the index's; at most ``max_matches``, the nearest first by (distance, id); None:
    all) and ``match_count`` (how many there are in all): the answers of ``dedup-hbase check``.
    Null for a row with an error. Writes nothing; does not compare the rows with each other
    (``add_new`` does)."""
    _check_index(index)
    options = CheckOptions(k=k, max_matches=max_matches)  # refuses a bad max_matches
    found, out = _prints(batch, index, id_column, text_column, threads, (MATCHES, MATCH_COUNT))
    records = _records(found, index, batch, text_column)
    answers = iter(look_up(index, records, options.k, options.max_matches))
    matches, counts = [], []
    for error in found.errors:
        answer = None if error else next(answers)
        matches.append(None if answer is None else [{"id": m.id, "distance": m.distance} for m in answer])
        counts.append(None if answer is None else answer.total)
    import pyarrow as pa

    return with_columns(out, [(MATCHES, pa.array(matches, match_type())), (MATCH_COUNT, pa.array(counts, pa.int64()))])


def add_new(batch: Any, index: Index | OnlineIndex, *, id_column: str = "id", text_column: str = "text",
            threads: int = 1) -> Any:
    """Insert-if-new, the service's ``add?if_new=true``: a row is indexed only when no indexed
    document and no earlier row of ``batch`` is within the index's k bits of it (its own id
    indexed counts: a batch given twice adds nothing the second time). ``fingerprints(batch,
    index)`` with ``added`` per row and, where not added, ``via`` (the nearest such document,
    by distance then id) and ``distance``; a row with an error is not added (``via`` null).
    ``index`` an ``OnlineIndex`` shares its locks with other callers; an ``Index`` gets one
    OnlineIndex per Index object in this process. A batch with one id under two fingerprints
    is refused before anything is written. Not for an unbounded batch: the rows are compared
    with each other in memory (quadratic in exact copies)."""
    online = _online(index)
    index = online.index
    found, out = _prints(batch, index, id_column, text_column, threads, (ADDED, VIA, DISTANCE))
    good = found.good.tolist()
    ids = found.ids.to_pylist()
    lengths = _lengths(batch, text_column)
    now = int(time.time())
    docs = [Document(ids[i], int(found.simhashes[i]), document_meta(now, length=int(lengths[i])),
                     _more(found, i), _sketch(found, i), _kept(found, i)) for i in good]
    if (twice := two_versions(docs)) is not None:
        raise InvalidInput(f"rows {good[twice[1]]} and {good[twice[0]]} have the id {docs[twice[0]].id!r} with two "
                           "fingerprints: an insert-if-new takes one version of a document", arguments=("batch",))
    probes = None
    if index.spec.probed:
        texts = _texts(batch, text_column, good)
        probes = [index.probe_masks(t) for t in texts]
    decisions = iter(online.add(docs, if_new=True, max_matches=1, probes=probes))
    added, via, distance = [], [], []
    for error in found.errors:
        decision = None if error else next(decisions)
        nearest = decision.matches[0] if decision is not None and decision.matches else None
        added.append(bool(decision is not None and decision.added))
        via.append(None if nearest is None else nearest.id)
        distance.append(None if nearest is None else nearest.distance)
    import pyarrow as pa

    return with_columns(out, [(ADDED, pa.array(added, pa.bool_())), (VIA, pa.array(via, pa.string())),
                              (DISTANCE, pa.array(distance, pa.int8()))])


def groups(batches: Iterable[Any], *, id_column: str = "id", text_column: str = "text", k: int = 3,
           scheme: str | None = None, signatures: str | None = None, confirm: int | None = None,
           short_texts: str = "on", fingerprinter: Fingerprinter | None = None, threads: int = 1) -> Any:
    """The near-duplicate groups of the rows of ``batches`` (RecordBatches or Tables, in order),
    as ``dedup-hbase groups`` finds them with the same ``k``, ``scheme``, ``signatures``,
    ``confirm`` and ``short_texts`` (``"on"``, as there by default: two rows of which either text
    is short are near only by their words, text/units.py; ``"off"``: by their bits alone): one
    pyarrow Table, a row per input row in input order, with the groups job's columns (``id``,
    ``simhash`` as 16 hex digits, ``group``: the id of its first row, ``size``, ``keep``: the
    first row of each group, ``via`` and ``distance``: the kept or earlier row it was joined
    through, with several signatures ``signature``) and ``error``; a row with an error is in no
    group (its columns null but ``id``). Holds every row's id and fingerprints until the last
    batch, and under the rule each distinct short text as it keeps it (under 200 characters), no
    other text; uses no index and writes nothing."""
    import pyarrow as pa

    short = short_rule(short_texts)
    options = GroupsOptions(k=k, scheme=scheme, signatures=Signatures.parse(signatures), confirm=confirm, short=short)
    fingerprinter = fingerprinter or default_fingerprinter()
    if not isinstance(fingerprinter, Fingerprinter):
        raise InvalidInput(f"fingerprinter must be a Fingerprinter, not {type(fingerprinter).__name__}",
                           arguments=("fingerprinter",))
    sketcher = None if confirm is None else fingerprinter_from_spec(sketch_spec(dict(fingerprinter.spec)))
    if isinstance(batches, (pa.RecordBatch, pa.Table)):
        batches = [batches]
    ids, errors, chunks, leads, sketches, texts = [], [], [], [], [], {}
    for batch in batches:
        check_batch(batch, id_column, text_column, (), what="batches")
        found = fingerprinted(batch, text_column, id_column, fingerprinter, options.signatures, sketcher, threads,
                              short is not None)
        good = found.good
        ids.append(found.ids.cast(pa.string()))
        errors += found.errors
        chunks.append(found.simhashes[good])
        if found.more is not None:
            leads.append(found.more[good])
        if found.sketches is not None:
            sketches.append(found.sketches[good])
        for p in good.tolist() if found.kepts is not None else ():  # a short sketch -> its kept text (KeptTexts')
            if found.kepts[p]:
                texts.setdefault(int(found.sketches[p]), found.kepts[p])
    every = pa.chunked_array(ids, pa.string()) if ids else pa.chunked_array([], pa.string())
    positions = np.array([i for i, e in enumerate(errors) if e is None], dtype=np.int64)
    _, linked = grouped(options, chunks, leads, sketches, texts)
    names = options.signatures.names if len(options.signatures) > 1 else None
    table = groups_table(every.take(pa.array(positions, pa.int64())), linked, names=names)
    where = np.full(len(errors), -1, np.int64)
    where[positions] = np.arange(len(positions))
    table = table.take(pa.array(where, pa.int64(), mask=where < 0))  # every input row, in input order
    return table.set_column(0, "id", every).append_column(ERROR, pa.array(errors, pa.string()))


def _fingerprinting(index: Index | None, fingerprinter: Fingerprinter | None) -> tuple:
    if index is not None:
        _check_index(index)
        if fingerprinter is not None:
            raise InvalidInput("give index= or fingerprinter=, not both: an index fingerprints with its own",
                               arguments=("index", "fingerprinter"))
        return index.fingerprinter, index.signatures, index.sketcher
    fingerprinter = default_fingerprinter() if fingerprinter is None else fingerprinter
    if not isinstance(fingerprinter, Fingerprinter):
        raise InvalidInput(f"fingerprinter must be a Fingerprinter, not {type(fingerprinter).__name__}",
                           arguments=("fingerprinter",))
    return fingerprinter, Signatures(), None


def _check_index(index: Any) -> None:
    if not isinstance(index, Index):
        raise InvalidInput(f"index must be an Index (Index.open or Index.create), not {type(index).__name__}",
                           arguments=("index",))


def _online(index: Any) -> OnlineIndex:
    if isinstance(index, OnlineIndex):
        return index
    _check_index(index)
    with _ONLINE_LOCK:  # one OnlineIndex (one set of locks) per Index, whichever thread asks first
        online = _ONLINE.get(index)
        if online is None:
            online = _ONLINE[index] = OnlineIndex(index)
        return online


def _prints(batch: Any, index: Index, id_column: str, text_column: str, threads: int,
            adds: tuple[str, ...]) -> tuple[Fingerprinted, Any]:
    """The fingerprints of ``batch`` as ``index`` makes them, and the batch with their columns."""
    short = index.spec.short is not None
    check_batch(batch, id_column, text_column, (*added_names(index.signatures, index.sketcher is not None or short),
                                                *adds))
    found = fingerprinted(batch, text_column, id_column, index.fingerprinter, index.signatures, index.sketcher,
                          threads, short)
    return found, with_columns(batch, fingerprint_columns(found, index.signatures))


def _records(found: Fingerprinted, index: Index, batch: Any, text_column: str) -> list[Record]:
    """The rows with a fingerprint as the jobs' ``Record``s (their text only where a lookup makes
    probes from it)."""
    good = found.good.tolist()
    ids = found.ids.to_pylist()
    texts = _texts(batch, text_column, good) if index.spec.probed else [None] * len(good)
    return [Record(SOURCE, i, ids[i], text, int(found.simhashes[i]), more=_more(found, i), sketch=_sketch(found, i),
                   kept=_kept(found, i)) for i, text in zip(good, texts)]


def _more(found: Fingerprinted, i: int) -> tuple[int, ...]:
    return () if found.more is None else tuple(int(h) for h in found.more[i])


def _sketch(found: Fingerprinted, i: int) -> int | None:
    return None if found.sketches is None else int(found.sketches[i])


def _kept(found: Fingerprinted, i: int) -> str:
    return "" if found.kepts is None else found.kepts[i]


def _texts(batch: Any, text_column: str, rows: list[int]) -> list[str]:
    import pyarrow as pa

    return batch.column(text_column).take(pa.array(rows, pa.int64())).to_pylist()


def _lengths(batch: Any, text_column: str) -> np.ndarray:
    """Each row's text length in characters (0 for a null), as the service's metadata keeps it."""
    import pyarrow.compute as pc

    column = batch.column(text_column)
    return pc.fill_null(pc.utf8_length(column), 0).to_numpy()
