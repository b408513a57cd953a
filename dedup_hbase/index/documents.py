"""A document as the index keeps it: its id, fingerprint and metadata, its row in the ``docs``
table, and a batch of documents checked before any of it is written.

A document row's key is the id (ids.py); its value the 8-byte big-endian simhash, then in an
index of several signatures (text/signatures.py) the 8-byte simhash of each other signature,
in an index with sketches (a confirmation, confirm.py, or the short-text rule) the 8-byte sketch,
then the metadata as JSON (none: nothing after them), which under the short-text rule holds a
short text as the index keeps it (``kept``, text/units.py). Every writer (a load on either engine, the
service) builds the metadata with ``document_meta``, so a document reads the same however it
came in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..errors import InvalidInput
from .confirm import check_kepts
from .ids import MAX_ID_BYTES, encode_id
from .layout import Scheme, cell_qualifier

KEPT = "kept"  # the metadata entry of a document row that holds its kept text (the short-text rule)


class Written(NamedTuple):
    """What a write did: how many ids were new, and how many held another fingerprint
    (whose index rows it deleted)."""

    new: int
    replaced: int


@dataclass(slots=True)
class Document:
    """A document as indexed: id, fingerprint and free-form metadata; in an index of several
    signatures, ``more`` holds the simhashes of the signatures after the body, in order; in an
    index with a confirmation, ``sketch`` its second SimHash (confirm.py)."""

    id: str
    simhash: int
    meta: dict[str, Any] = field(default_factory=dict)
    more: tuple[int, ...] = ()
    sketch: int | None = None
    kept: str = ""  # under the short-text rule, a short text as the index keeps it (text/units.py)


def checked_columns(docs: Sequence[Document]) -> tuple[list[bytes], np.ndarray, list[Document]]:
    """The encoded ids, the simhashes (uint64) and the documents of ``docs`` after checking
    them all; of several documents with one id, the last. Vectorised where it can be; the
    first bad document is named."""
    try:
        ids = [d.id.encode("utf-8") for d in docs]
        sims = [d.simhash for d in docs]
        lengths = list(map(len, ids))
        if min(lengths) > 0 and max(lengths) <= MAX_ID_BYTES and set(map(type, sims)) == {int}:
            simhashes = np.array(sims, dtype=np.uint64)  # OverflowError outside 0 .. 2^64 - 1
        else:
            simhashes = None
    except (AttributeError, OverflowError, UnicodeEncodeError):
        simhashes = None
    if simhashes is None:
        for d in docs:
            encode_id(d.id)
            if type(d.simhash) is not int or not 0 <= d.simhash < 1 << 64:
                raise InvalidInput(f"document {d.id!r}: simhash must be an unsigned 64-bit int, not {d.simhash!r}")
        raise AssertionError("unreachable: a document failed the bulk check but none the single one")
    last = dict(zip(ids, range(len(ids))))
    if len(last) == len(ids):
        return ids, simhashes, list(docs)
    keep = list(last.values())
    return list(last), simhashes[keep], [docs[i] for i in keep]


def two_versions(docs: Sequence[Any]) -> tuple[int, int] | None:
    """The positions of the first document (``.id``, ``.simhash``) whose id an earlier one of
    ``docs`` has with another fingerprint, and of that earlier one; None when there is none. An
    insert-if-new refuses such a batch (the service, the Arrow batch API): only one version could
    be indexed, and both would be answered as added."""
    first: dict[str, int] = {}
    for j, doc in enumerate(docs):
        i = first.setdefault(doc.id, j)
        if docs[i].simhash != doc.simhash:
            return j, i
    return None


def document_meta(loaded: int, source: str | None = None, line: int | None = None,
                  title: str | None = None, length: int | None = None, ttl: int | None = None) -> dict[str, Any]:
    """The metadata a document row keeps (``Index.get`` returns it): when it was loaded (Unix
    seconds) and, where known, its source file and line, its title, its text's length in
    characters and its own time to live in seconds (shorter than the index's TTL: retention.py).
    Every writer (a load on either engine, the service) builds it here, so a document reads
    the same however it came in."""
    meta: dict[str, Any] = {}
    if source is not None:
        meta["source"] = source
    if line is not None:
        meta["line"] = line
    meta["loaded"] = loaded
    if title:
        meta["title"] = title
    if length is not None:
        meta["length"] = length
    if ttl is not None:
        meta["ttl"] = ttl
    return meta


def more_columns(docs: Sequence[Document], more: int) -> np.ndarray:
    """The ``more`` simhashes of ``docs`` as a (len(docs), more) uint64 array, after checking that
    every document has ``more`` of them, each an unsigned 64-bit int (the first bad one named)."""
    for d in docs:
        if len(d.more) != more or any(type(s) is not int or not 0 <= s < 1 << 64 for s in d.more):
            raise InvalidInput(f"document {d.id!r}: this index keeps {more + 1} signatures a document, "
                               f"so {more} more unsigned 64-bit simhashes after the body's, not {d.more!r}")
    return np.array([d.more for d in docs], dtype=np.uint64).reshape(len(docs), more)


def signature_columns(simhashes: np.ndarray, docs: Sequence[Document], count: int) -> list[np.ndarray]:
    """Per signature of ``count``, the simhashes of ``docs`` (uint64): the body's (``simhashes``),
    then each of ``more``'s, after checking every document has as many (the first bad one named)."""
    if count == 1:
        if any(d.more for d in docs):
            more_columns(docs, 0)  # raises, naming the document
        return [simhashes]
    return [simhashes, *more_columns(docs, count - 1).T]


def sketch_column(docs: Sequence[Document], sketched: bool = True) -> np.ndarray | None:
    """The sketches of ``docs`` (uint64) in an index that keeps them (``sketched``), after checking
    each is an unsigned 64-bit int; None in one that does not, where a sketch is refused (the
    first bad one named)."""
    if not sketched:
        if kept := next((d for d in docs if d.sketch is not None), None):
            raise InvalidInput(f"document {kept.id!r}: this index keeps no sketch (made without confirm=)",
                               arguments=("confirm",))
        return None
    for d in docs:
        if type(d.sketch) is not int or not 0 <= d.sketch < 1 << 64:
            raise InvalidInput(f"document {d.id!r}: this index confirms matches by a sketch of each document "
                               f"(an unsigned 64-bit int: Index.sketched), not {d.sketch!r}")
    return np.array([d.sketch for d in docs], dtype=np.uint64)


def kept_column(docs: Sequence[Document], sketches: np.ndarray | None, short: bool) -> list[str] | None:
    """The kept texts of ``docs`` in an index with the short-text rule (``short``), checked beside
    their sketches (``confirm.check_kepts``); None in one without it, where a kept text is refused."""
    if not short:
        if kept := next((d for d in docs if d.kept), None):
            raise InvalidInput(f"document {kept.id!r}: this index keeps no text (made without the short-text "
                               "rule, short=off)", arguments=("short",))
        return None
    kepts = [d.kept for d in docs]
    check_kepts(sketches, kepts, [d.id for d in docs])
    return kepts


def document_value(doc: Document) -> bytes:
    """A document row's value: the 8-byte big-endian simhash, those of ``more`` and the sketch
    (if any), then the metadata as JSON, with the kept text (if any) as its entry ``kept``."""
    meta = {**doc.meta, KEPT: doc.kept} if doc.kept else doc.meta
    meta = json.dumps(meta, ensure_ascii=False, separators=(",", ":")) if meta else ""
    sketch = () if doc.sketch is None else (doc.sketch,)
    return b"".join(s.to_bytes(8, "big") for s in (doc.simhash, *doc.more, *sketch)) + meta.encode("utf-8")


def parse_document(doc_id: str, value: bytes, more: int = 0, sketch: bool = False) -> Document:
    """The document of a document row (``document_value``'s inverse) of an index that keeps
    ``more`` signatures after the body, and with ``sketch`` a sketch after them."""
    end = 8 * (1 + more)
    meta_at = end + 8 * sketch
    meta = json.loads(value[meta_at:]) if len(value) > meta_at else {}
    kept = meta.pop(KEPT, "")
    return Document(doc_id, int.from_bytes(value[:8], "big"), meta,
                    tuple(int.from_bytes(value[i:i + 8], "big") for i in range(8, end, 8)),
                    int.from_bytes(value[end:end + 8], "big") if sketch else None, kept)


def stored_simhashes(value: bytes, count: int) -> tuple[int, ...]:
    """The first ``count`` simhashes of a document row's value (the body's first)."""
    return tuple(int.from_bytes(value[i:i + 8], "big") for i in range(0, 8 * count, 8))


def stored_cells(raw_id: bytes, value: bytes, count: int, sketched: bool) -> tuple[bytes, tuple[int, ...]]:
    """Where a document row's document is in the index: (the column of its index cells, its
    ``count`` signatures' simhashes); ``sketched``: an index with a confirmation, whose cells'
    column also holds the sketch (layout.cell_qualifier)."""
    simhashes = stored_simhashes(value, count)
    if not sketched:
        return raw_id, simhashes
    meta_at = 8 * count + 8
    kept = json.loads(value[meta_at:]).get(KEPT, "") if b'"kept"' in value[meta_at:] else ""
    return cell_qualifier(raw_id, int.from_bytes(value[8 * count:meta_at], "big"), kept.encode("utf-8")), simhashes


def index_keys(schemes: Sequence[Scheme], stored: Sequence[tuple[bytes, tuple[int, ...]]]) -> list[bytes]:
    """The index keys of documents given as (the column of their cells, the simhash of each
    signature: ``stored_cells``), under each signature's scheme (``schemes``), sorted: what
    deleting their index cells needs."""
    columns = [c for c, _ in stored]
    return sorted(key for j, scheme in enumerate(schemes)
                  for key in scheme.index_keys(columns, [sims[j] for _, sims in stored]))


def cell_qualifiers(raw_ids: Sequence[bytes], sketches: np.ndarray | None,
                    kepts: Sequence[str] | None = None) -> list[bytes]:
    """The columns of documents' index cells: their ids, or with ``sketches`` (an index with
    sketches) ``layout.cell_qualifier`` of each, with its kept text (``kepts``: "" but for a
    short one under the short-text rule)."""
    if sketches is None:
        return list(raw_ids)
    kepts = kepts or [""] * len(raw_ids)
    return [cell_qualifier(raw, sketch, kept.encode("utf-8")) for raw, sketch, kept in zip(raw_ids, sketches.tolist(), kepts)]


