"""The near-duplicate index: documents in, near-duplicates out, over any store.

Tables (see schema/tables.json):

* ``index``: key = 13-byte row key (layout.py) + document id; empty value. One row per
  fingerprint and flag, one column per document id.
* ``docs``: key = document id; value = 8-byte big-endian simhash + JSON metadata.
  Lets ``delete`` find a document's index rows and results show metadata without
  fingerprinting the text again.
* ``meta``: key ``config``; value = JSON of scheme, k and the fingerprinter spec. Also
  small named JSON states kept with the index (``read_state``/``write_state``), such as
  the checkpoints of loads.

Writes go index rows first, document row last, all idempotent: a write cut off at
any point is completed by writing the same documents again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, NamedTuple

import numpy as np

from ..errors import DedupError, IndexMismatch, IndexNotFound, InvalidInput
from ..text.fingerprint import Fingerprinter, describe_spec, fingerprinter_from_spec, make_fingerprinter, to_hex
from .candidates import Run, all_rests, bounded, compare, counted_few, qualifier_at, runs_few
from .ids import MAX_ID_BYTES, encode_id
from .layout import PREFIX_BYTES, Scheme
from .plan import choose_scheme
from .retention import unexpired
from .schema import load_schema
from .store import Cells, Store

FORMAT = 1
_CONFIG_KEY = b"config"
_NUMPY_FROM = 48  # items from which vectorised numpy code beats a Python loop
_BATCH = 4096  # queries compared in one numpy pass (bounds memory)
_SKEWED = 4096  # scanned cells from which a small query takes the once-per-fingerprint path


class Match(NamedTuple):
    id: str
    simhash: int
    distance: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "simhash": to_hex(self.simhash), "distance": self.distance}


class Written(NamedTuple):
    """What a write did: how many ids were new, and how many held another fingerprint
    (whose index rows it deleted)."""

    new: int
    replaced: int


@dataclass(slots=True)
class Document:
    """A document as indexed: id, fingerprint and free-form metadata."""

    id: str
    simhash: int
    meta: dict[str, Any] = field(default_factory=dict)


def _columns(docs: Sequence[Document]) -> tuple[list[bytes], np.ndarray, list[Document]]:
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


def document_value(doc: Document) -> bytes:
    """A document row's value: the 8-byte big-endian simhash, then the metadata as JSON."""
    meta = json.dumps(doc.meta, ensure_ascii=False, separators=(",", ":")) if doc.meta else ""
    return doc.simhash.to_bytes(8, "big") + meta.encode("utf-8")


def _parse_doc(doc_id: str, value: bytes) -> Document:
    meta = json.loads(value[8:]) if len(value) > 8 else {}
    return Document(doc_id, int.from_bytes(value[:8], "big"), meta)


class Index:
    """Near-duplicate lookups over a store. Open with ``Index.create`` or ``Index.open``.

    The index checks arguments before it touches the store; it holds no state beyond
    its configuration, so several processes may write one HBase index at once.
    """

    def __init__(self, store: Store, scheme: Scheme, k: int, fingerprinter: Fingerprinter, ttl: int | None = None):
        self.store, self.ttl = store, ttl  # ttl: seconds a document counts (retention.py), None: always
        self.scheme = scheme
        self.k = scheme.check_k(k)
        self.fingerprinter = fingerprinter

    # -- opening -------------------------------------------------------------

    @classmethod
    def create(cls, store: Store, scheme: Scheme | str | int | None = None, k: int = 3,
               fingerprinter: Fingerprinter | None = None, regions: int | None = None,
               ttl: int | None = None) -> "Index":
        """Create the tables and metadata of a new, empty index in ``store``. Without
        ``scheme``: the 4-split for k <= 3, else the cheapest scheme that finds every match
        within k bits (plan.choose_scheme). Without ``fingerprinter``: jieba, seed 0."""
        scheme = choose_scheme(k, scheme)
        fingerprinter = fingerprinter or make_fingerprinter()
        index = cls(store, scheme, k, fingerprinter, ttl)
        if not store.exists():
            schema = load_schema(regions)
            for table in ("index", "docs") if ttl else ():
                schema["tables"][table]["ttl"] = ttl  # HBase: the column family's TTL
            store.create(schema)
        elif store.get("meta", [_CONFIG_KEY])[0] is not None:
            raise DedupError(f"{store.url} already holds an index; open it, or pick another store")
        # else: tables made beforehand (e.g. from `dedup-hbase schema` in the HBase shell)
        config = {"format": FORMAT, "scheme": scheme.name, "k": k,
                  "fingerprint": fingerprinter.spec, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  **({"ttl_s": ttl} if ttl else {})}
        store.put("meta", [(_CONFIG_KEY, json.dumps(config).encode())])
        return index

    @classmethod
    def open(cls, store: Store, fingerprinter: Fingerprinter | None = None) -> "Index":
        """Open the index in ``store``; refuse one built with another fingerprinter.

        Without ``fingerprinter`` the index's own (as recorded at creation) is used.
        """
        config = cls.read_config(store)
        if config.get("format") != FORMAT:
            raise IndexMismatch(f"{store.url}: index format {config.get('format')}, expected {FORMAT}")
        spec = config["fingerprint"]
        if fingerprinter is None:
            fingerprinter = fingerprinter_from_spec(spec)
        elif fingerprinter.spec != spec:
            raise IndexMismatch(
                f"{store.url} was built with featurizer {describe_spec(spec)}, not "
                f"{describe_spec(fingerprinter.spec)}: fingerprints from different featurizers "
                "are not comparable")
        return cls(store, Scheme.parse(config["scheme"]), config["k"], fingerprinter, config.get("ttl_s"))

    @staticmethod
    def read_config(store: Store) -> dict[str, Any]:
        """The index's configuration (scheme, k, fingerprinter spec, creation time)."""
        if not store.exists():
            raise IndexNotFound(f"no index at {store.url}")
        (raw,) = store.get("meta", [_CONFIG_KEY])
        if raw is None:
            raise IndexNotFound(f"{store.url} has tables but no index metadata")
        return json.loads(raw)

    # -- small states kept with the index -------------------------------------------

    def read_state(self, name: str) -> dict[str, Any] | None:
        """The JSON state saved under ``name`` (e.g. a load's checkpoint), or None."""
        (raw,) = self.store.get("meta", [_state_key(name)])
        return json.loads(raw) if raw else None

    def write_state(self, name: str, state: dict[str, Any]) -> None:
        """Save a small JSON state under ``name``, replacing any earlier one. One row: atomic."""
        self.store.put("meta", [(_state_key(name), json.dumps(state).encode())])

    # -- writing ---------------------------------------------------------------

    def fingerprint(self, text: str) -> int:
        return self.fingerprinter.fingerprint(text)

    def add(self, doc_id: str, text: str | None = None, *, simhash: int | None = None,
            meta: Mapping[str, Any] | None = None) -> int:
        """Index one document from its text or its simhash; returns the simhash."""
        if (text is None) == (simhash is None):
            raise TypeError("give exactly one of text and simhash")
        if simhash is None:
            simhash = self.fingerprint(text)
        self.add_many([Document(doc_id, simhash, dict(meta or {}))])
        return simhash

    def add_many(self, docs: Sequence[Document]) -> int:
        """Index documents; re-adding an id replaces its old fingerprint (of several
        documents with one id here, the last counts). Returns how many ids were new
        (``write`` also says how many were replaced). Checks every document before writing
        any. Does not deduplicate near-duplicates: every document is indexed."""
        return self.write(docs).new

    def write(self, docs: Sequence[Document]) -> Written:
        """``add_many``, saying how many ids were new and how many replaced."""
        if not docs:
            return Written(0, 0)
        ids, simhashes, chosen = _columns(docs)
        written = self.retire_old_fingerprints(ids, simhashes)
        self.store.put_cells("index", self.scheme.key_table(simhashes), ids, repeat=len(self.scheme.flags))
        values = simhashes.astype(">u8").view("V8").tolist()  # 8-byte big-endian simhashes
        for i, d in enumerate(chosen):
            if self.ttl and "loaded" not in d.meta:  # a document's age is its row's (retention.py)
                d = Document(d.id, d.simhash, {**d.meta, "loaded": int(time.time())})
            if d.meta:
                values[i] = document_value(d)
        self.store.put("docs", zip(ids, values))
        return written

    def retire_old_fingerprints(self, raw_ids: Sequence[bytes], simhashes: Sequence[int]) -> Written:
        """Before documents are (re)written: delete the index rows of every id whose stored
        fingerprint differs from its new one in ``simhashes``, so no old row keeps matching.
        Says how many of the ids are new to the index and how many had another fingerprint.
        Writes no new row."""
        old = self.store.get("docs", list(raw_ids))
        known = [i for i, value in enumerate(old) if value is not None]
        replaced = [(raw_ids[i], int.from_bytes(old[i][:8], "big")) for i in known
                    if int.from_bytes(old[i][:8], "big") != int(simhashes[i])]
        if replaced:
            self.store.delete("index", self.scheme.index_keys([r for r, _ in replaced], [o for _, o in replaced]))
        return Written(len(raw_ids) - len(known), len(replaced))

    def delete(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents and their index rows; returns the ids that were present."""
        ids = [encode_id(i) for i in dict.fromkeys(doc_ids)]
        values = self.store.get("docs", ids)
        found = [(raw, v) for raw, v in zip(ids, values) if v is not None]
        self.store.delete("index", self.scheme.index_keys([raw for raw, _ in found],
                                                           [int.from_bytes(v[:8], "big") for _, v in found]))
        self.store.delete("docs", [raw for raw, _ in found])
        return [raw.decode() for raw, _ in found]

    # -- reading ---------------------------------------------------------------

    def get(self, doc_ids: Sequence[str]) -> list[Document | None]:
        """The stored documents (fingerprint and metadata), None for unknown ids."""
        values = self.store.get("docs", [encode_id(i) for i in doc_ids])
        return [None if v is None else _parse_doc(i, v) for i, v in zip(doc_ids, values)]

    def query(self, simhash: int, k: int | None = None) -> list[Match]:
        """Every indexed document within ``k`` bits of ``simhash`` (default: the index's k),
        sorted by distance, then id."""
        return self.query_many([simhash], k)[0]

    def query_many(self, simhashes: Sequence[int], k: int | None = None,
                   max_matches: int | None = None) -> list[list[Match]]:
        """``query`` for many fingerprints at once: the prefixes of all of them are
        deduplicated and scanned in key order, one store call in all. ``max_matches``: at
        most this many matches per query, the first by (distance, id)."""
        if len(simhashes) >= _NUMPY_FROM or max_matches is not None:
            found = [matches for matches, _ in self.query_counted(simhashes, k, max_matches)]
        else:
            k = self._check_queries(simhashes, k)
            per_query = [self.scheme.prefixes(s) for s in simhashes]
            unique = sorted({p for prefixes in per_query for p in prefixes})
            scanned = dict(zip(unique, self.store.scan_cells("index", unique)))
            if sum(map(len, scanned.values())) > _SKEWED:  # many copies under one prefix: once per fingerprint
                found = [matches for matches, _ in self.query_counted(simhashes, k)]
            else:
                found = [self._matches(s, [scanned[p] for p in prefixes], k)
                         for s, prefixes in zip(simhashes, per_query)]
                found = unexpired(self.store, found, self.ttl) if self.ttl else found
        return found

    def query_counted(self, simhashes: Sequence[int], k: int | None = None,
                      max_matches: int | None = None) -> list[tuple[list[Match], int]]:
        """Per query: its matches by (distance, id), at most ``max_matches`` (None: all), and
        how many there are in all. Bounded work per distinct fingerprint, not per copy."""
        if max_matches is not None and (isinstance(max_matches, bool) or not isinstance(max_matches, int)
                                        or max_matches < 1):
            raise InvalidInput(f"max_matches is a whole number >= 1, not {max_matches!r}")
        if 0 < len(simhashes) < _NUMPY_FROM and not self.ttl:  # a few (a service's request): one call
            k = self._check_queries(simhashes, k)
            counted = counted_few(simhashes, *self._scan_few(simhashes), k, max_matches)
        else:
            counted = [bounded(runs, max_matches) for runs in self.query_runs(simhashes, k)]
        return [([Match(i, s, d) for i, s, d in found], total) for found, total in counted]

    def query_runs(self, simhashes: Sequence[int], k: int | None = None) -> list[list[Run]]:
        """Per query, the indexed fingerprints within ``k`` bits with their document ids
        (``candidates.Run``), by (distance, simhash): each distinct fingerprint compared
        once, its ids decoded once per batch of queries."""
        k = self._check_queries(simhashes, k)
        if 0 < len(simhashes) < _NUMPY_FROM:  # a few (a service's request): Python ints unless many cells
            out = runs_few(simhashes, *self._scan_few(simhashes), k)
        else:
            out = []
            for start in range(0, len(simhashes), _BATCH):
                queries = np.asarray(simhashes[start:start + _BATCH], dtype=np.uint64)
                unique, inverse = np.unique(self.scheme.prefix_ids(queries), return_inverse=True)
                scanned = self.store.scan_cells("index", [p.to_bytes(PREFIX_BYTES, "big") for p in unique.tolist()])
                out.extend(compare(queries, scanned, inverse.reshape(len(queries), -1), k))
        return self._unexpired_runs(out) if self.ttl else out

    def _scan_few(self, simhashes: Sequence[int]) -> tuple[list[Cells], list[list[int]]]:
        """The cells of a few queries' prefixes (each scanned once, in key order) and, per
        query, the indexes of its prefixes among them in flag order."""
        per_query = [self.scheme.prefixes(s) for s in simhashes]
        unique = sorted({p for prefixes in per_query for p in prefixes})
        scanned = self.store.scan_cells("index", unique)
        position = {p: i for i, p in enumerate(unique)}
        return scanned, [[position[p] for p in prefixes] for prefixes in per_query]

    def _unexpired_runs(self, found: list[list[Run]]) -> list[list[Run]]:
        """``found`` without the documents older than the TTL (one read of their rows)."""
        every = [[Match(i, r.simhash, r.distance) for runs in found for r in runs for i in r.ids]]
        alive = {m.id for m in unexpired(self.store, every, self.ttl)[0]}
        kept = [[Run(r.distance, r.simhash, [i for i in r.ids if i in alive]) for r in runs] for runs in found]
        return [[r for r in runs if r.ids] for runs in kept]

    def _check_queries(self, simhashes: Sequence[int], k: int | None) -> int:
        for s in simhashes:
            if not isinstance(s, int) or not 0 <= s < 1 << 64:
                raise InvalidInput(f"a simhash is an unsigned 64-bit int, not {s!r}")
        return self.k if k is None else self.scheme.check_k(k)

    @staticmethod
    def _matches(simhash: int, scanned: list[Cells], k: int) -> list[Match]:
        """The cells whose simhash is within k bits, as matches (one per document id)."""
        found: dict[bytes, Match] = {}
        if sum(len(cells) for cells in scanned) < _NUMPY_FROM:
            for cells in scanned:
                for i, candidate in enumerate(cells.rests.tolist()):
                    distance = (candidate ^ simhash).bit_count()
                    if distance <= k:
                        raw_id = cells.qualifier(i)
                        found[raw_id] = Match(raw_id.decode("utf-8"), candidate, distance)
        else:
            candidates = all_rests(scanned)
            distances = np.bitwise_count(candidates ^ np.uint64(simhash))
            hits = np.flatnonzero(distances <= k).tolist()
            ends = list(accumulate(len(cells) for cells in scanned)) if hits else []
            for i in hits:
                raw_id = qualifier_at(scanned, ends, i)
                found[raw_id] = Match(raw_id.decode("utf-8"), int(candidates[i]), int(distances[i]))
        return sorted(found.values(), key=lambda m: (m.distance, m.id))

    def stats(self) -> dict[str, Any]:
        """Counts from a full read of the keys (exact; takes time on a big index)."""
        config = self.read_config(self.store)
        documents = sum(1 for _ in self.store.iterate("docs"))
        rows, cells, per_flag = 0, 0, Counter()
        for prefix, found in self.store.iterate_cells("index", PREFIX_BYTES):
            rests = found.rests  # in key order: a row's cells are neighbours
            distinct = 1 + int(np.count_nonzero(rests[1:] != rests[:-1])) if len(rests) else 0
            cells += len(rests)
            rows += distinct
            per_flag[prefix[PREFIX_BYTES - 1]] += distinct
        return {"store": self.store.url, "documents": documents, "index_rows": rows,
                "index_cells": cells, "scheme": self.scheme.name, "k": self.k,
                "max_k": self.scheme.max_k, "flags": len(self.scheme.flags),
                "featurizer": config["fingerprint"], "created": config.get("created"),
                **({"ttl_s": self.ttl} if self.ttl else {}),
                "rows_per_flag": {str(f): per_flag[f] for f in range(1, len(self.scheme.flags) + 1)}}


def _state_key(name: str) -> bytes:
    """A state's row in the meta table: its name (``config`` is the index's own)."""
    key = name.encode()
    if not key or key == _CONFIG_KEY:
        raise InvalidInput(f"a state name is a non-empty string other than 'config', not {name!r}")
    return key


def fingerprinter_for(store: Store, featurizer: str | None = None, *, shingle_size: int | None = None,
                      seed: int | None = None) -> Fingerprinter:
    """The fingerprinter to use with ``store``: the index's own when the store holds an
    index (refusing other options: its fingerprints could not be loaded there), else the
    one the options name (``make_fingerprinter``: jieba, seed 0 by default)."""
    given = any(x is not None for x in (featurizer, shingle_size, seed))
    wanted = make_fingerprinter(featurizer, shingle_size=shingle_size, seed=seed) if given else None
    if store.exists():
        return Index.open(store, wanted).fingerprinter
    return wanted or make_fingerprinter()
