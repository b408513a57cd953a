"""A pyarrow batch checked and fingerprinted: the columns the Arrow batch API (arrow.py) reads
and the ones it adds.

``fingerprinted`` checks a batch up front (its type, the id and text columns, their types, the
columns it would add not being there already), then fingerprints its text column with the
compiled core reading the Arrow buffers (``Fingerprinter.fingerprint_arrow``: no Python ``str``
per document), and with an index's other signatures (their lead texts are made as ``str``s:
text/signatures.py) and sketch. A row gets its ``simhash`` or its ``error`` (null id, id too
long, null text, featureless text: the words of the bulk jobs' rejects).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EmptyDocument, InvalidInput
from ..index.confirm import parse_short
from ..index.ids import MAX_ID_BYTES, encode_id
from ..text.fingerprint import Fingerprinter
from ..text.signatures import Signatures, settled
from ..text.units import text_sketches

ERROR = "error"
SIMHASH = "simhash"
SKETCH = "sketch"


def signature_column(name: str) -> str:
    """The column of a signature after the body's (``simhash_lead150``)."""
    return f"{SIMHASH}_{name}"


def _pa():
    import pyarrow as pa

    return pa


def check_batch(batch: Any, id_column: str, text_column: str, adds: Sequence[str], what: str = "batch") -> None:
    """Refuse what is not a pyarrow ``RecordBatch`` or ``Table`` with a string ``id_column`` and
    ``text_column`` and none of the columns ``adds``, naming the argument."""
    pa = _pa()
    if not isinstance(batch, (pa.RecordBatch, pa.Table)):
        raise InvalidInput(f"{what} must be a pyarrow RecordBatch or Table, not {type(batch).__name__}",
                           arguments=(what,))
    names = batch.schema.names
    for argument, name in (("id_column", id_column), ("text_column", text_column)):
        if not isinstance(name, str):
            raise InvalidInput(f"{argument} must be a column name (str), not {name!r}", arguments=(argument,))
        if name not in names:
            raise InvalidInput(f"{what} has no column {name!r} ({argument}=): its columns are {', '.join(names)}",
                               arguments=(argument,))
        kind = batch.schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise InvalidInput(f"{argument}={name!r}: a string or large_string column, not {kind} "
                               f"(cast it: {what}.cast(...) or pyarrow.compute.cast)", arguments=(argument,))
    taken = [name for name in adds if name in names]
    if taken:
        raise InvalidInput(f"{what} already has the column{'s' * (len(taken) > 1)} {', '.join(taken)} that this call "
                           "adds: drop or rename it first", arguments=(what,))


def short_rule(short_texts: str) -> str | None:
    """A groups call's ``short_texts`` (``"on"``, the default of ``dedup-hbase groups``, or
    ``"off"``) -> the rule's name (``units.WORDS``) or None; anything else refused naming it."""
    try:
        return parse_short(short_texts)
    except InvalidInput:
        raise InvalidInput(f"short_texts takes 'on' or 'off', not {short_texts!r}", arguments=("short_texts",)) from None


def chunks_of(column) -> list:
    """The arrays of a RecordBatch's column (one) or a Table's (its chunks)."""
    return list(column.chunks) if hasattr(column, "chunks") else [column]


def whole(column):
    """A RecordBatch's column, or a Table's as one array (its chunks joined; none: empty)."""
    return column.combine_chunks() if hasattr(column, "combine_chunks") else column


@dataclass
class Fingerprinted:
    """A batch's fingerprints: per row (``error`` None) its simhash, else why it has none; with
    several signatures ``more`` (n, s - 1), with a confirmation or the short-text rule
    ``sketches``; all uint64, 0 in a row with an error; with the rule ``kepts`` (text/units.py: ""
    but for a short text, and in a row with an error)."""

    ids: Any  # a pyarrow string array, every row
    simhashes: np.ndarray
    errors: list[str | None]
    more: np.ndarray | None = None
    sketches: np.ndarray | None = None
    kepts: list[str] | None = None

    @property
    def good(self) -> np.ndarray:
        """The positions of the rows with a fingerprint."""
        return np.array([i for i, e in enumerate(self.errors) if e is None], dtype=np.int64)


def id_errors(ids) -> dict[int, str]:
    """Position -> why its id is not a document id (``ids.encode_id``'s words), vectorised."""
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.binary_length(ids), 0).to_numpy()
    out = {}
    for i in np.flatnonzero((lengths == 0) | (lengths > MAX_ID_BYTES)).tolist():
        try:
            encode_id(ids[i].as_py())
        except InvalidInput as e:
            out[i] = str(e)
    return out


def fingerprinted(batch: Any, text_column: str, id_column: str, fingerprinter: Fingerprinter,
                  signatures: Signatures = Signatures(), sketcher: Fingerprinter | None = None,
                  threads: int = 1, short: bool = False) -> Fingerprinted:
    """The fingerprints of a checked batch (``check_batch``): the text column's chunks through
    ``Fingerprinter.fingerprint_arrow``, the leads of ``signatures`` after the body (as ``str``s,
    ``Signatures.extra_texts``; a lead without a feature takes the body's simhash, ``settled``),
    the sketches by ``sketcher`` (the index's, from the buffers too); ``short``: an index with the
    short-text rule, whose sketches and kept texts ``units.text_sketches`` makes from each text
    (as ``str``s)."""
    pa = _pa()
    ids = whole(batch.column(id_column))
    texts = chunks_of(batch.column(text_column))
    simhashes, errors = _through(fingerprinter, texts, threads)
    bad = id_errors(ids)
    words = [bad.get(i) or (None if i not in errors else _reason(errors[i])) for i in range(len(simhashes))]
    out = Fingerprinted(ids, simhashes, words)
    good = out.good
    if len(signatures) > 1:
        out.more = np.zeros((len(simhashes), len(signatures) - 1), np.uint64)
        bodies = whole(batch.column(text_column)).take(pa.array(good, pa.int64())).to_pylist()
        parts = [part for text in bodies for part in signatures.extra_texts(text)]
        found, none = fingerprinter.fingerprint_many(parts, threads)
        results = [none[i] if i in none else int(h) for i, h in enumerate(found.tolist())]
        step = len(signatures) - 1
        for j, position in enumerate(good.tolist()):
            out.more[position] = settled(results[j * step:(j + 1) * step], int(simhashes[position]))
    if sketcher is not None:
        out.sketches, _ = _through(sketcher, texts, threads)  # the body's: none where the body has none
    if short:
        others = out.sketches
        out.sketches = np.zeros(len(simhashes), np.uint64)
        bodies = whole(batch.column(text_column)).take(pa.array(good, pa.int64())).to_pylist()
        positions = good.tolist()
        made, kepts = text_sketches(bodies, None if others is None else [int(others[p]) for p in positions])
        out.sketches[positions] = np.array(made, dtype=np.uint64)
        out.kepts = [""] * len(simhashes)
        for p, kept in zip(positions, kepts):
            out.kepts[p] = kept
    return out


def _through(fingerprinter: Fingerprinter, arrays: list, threads: int) -> tuple[np.ndarray, dict[int, str]]:
    hashes, errors, start = [], {}, 0
    for array in arrays:
        found, why = fingerprinter.fingerprint_arrow(array, threads)
        hashes.append(found)
        errors.update({start + i: message for i, message in why.items()})
        start += len(array)
    return (np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)), errors


def _reason(message: str) -> str:
    """A text's error as the bulk jobs' rejects say it (a featureless text's: ``featureless text: ...``)."""
    return f"{EmptyDocument.REASON}: {message}" if message in (EmptyDocument.EMPTY_TEXT, EmptyDocument.NO_FEATURES) \
        else message


def with_columns(batch: Any, columns: Sequence[tuple[str, Any]]) -> Any:
    """``batch`` (RecordBatch or Table) with ``columns`` (name, pyarrow array) appended."""
    for name, array in columns:
        batch = batch.append_column(name, array)
    return batch


def fingerprint_columns(found: Fingerprinted, signatures: Signatures = Signatures()) -> list[tuple[str, Any]]:
    """The columns of ``found``: ``simhash`` (uint64, null where there is an error), each other
    signature's (``simhash_leadN``), ``sketch``, and ``error`` (string, null where there is none)."""
    pa = _pa()
    missing = np.array([e is not None for e in found.errors], dtype=bool)
    columns = [(SIMHASH, pa.array(found.simhashes, pa.uint64(), mask=missing))]
    if found.more is not None:
        columns += [(signature_column(name), pa.array(found.more[:, j], pa.uint64(), mask=missing))
                    for j, name in enumerate(signatures.names[1:])]
    if found.sketches is not None:
        columns.append((SKETCH, pa.array(found.sketches, pa.uint64(), mask=missing)))
    return columns + [(ERROR, pa.array(found.errors, pa.string()))]


def added_names(signatures: Signatures, sketched: bool) -> list[str]:
    """The names of ``fingerprint_columns``'s columns."""
    return [SIMHASH, *(signature_column(n) for n in signatures.names[1:]), *([SKETCH] if sketched else []), ERROR]
