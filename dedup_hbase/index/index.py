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
from typing import Any

import numpy as np

from ..errors import DedupError, IndexMismatch, IndexNotFound, InvalidInput
from ..text.fingerprint import Fingerprinter, describe_spec, fingerprinter_from_spec, make_fingerprinter
from .documents import Document, Written, checked_columns, document_meta, document_value, parse_document
from .ids import encode_id
from .layout import PREFIX_BYTES, Scheme
from .lookup import Match, Matches, check_queries, lookup
from .plan import choose_scheme
from .schema import load_schema
from .store import Store

# Document, Written, document_meta, document_value (documents.py), Match and Matches (lookup.py)
# are part of the index's interface: importable from here
__all__ = ["FORMAT", "Document", "Index", "Match", "Matches", "Written", "document_meta", "document_value",
           "fingerprinter_for"]

FORMAT = 1
_CONFIG_KEY = b"config"


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
        ids, simhashes, chosen = checked_columns(docs)
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
        return [None if v is None else parse_document(i, v) for i, v in zip(doc_ids, values)]

    def query(self, simhash: int, k: int | None = None, max_matches: int | None = None) -> Matches:
        """The indexed documents within ``k`` bits of ``simhash`` (default: the index's k), by
        distance, then id, at most ``max_matches`` of them (None: all): a list of ``Match``es
        that also says how many there are in all (``.total``) and holds the indexed
        fingerprints within k with all their documents (``.runs``); ``Matches`` in lookup.py."""
        return self.query_many([simhash], k, max_matches)[0]

    def query_many(self, simhashes: Sequence[int], k: int | None = None,
                   max_matches: int | None = None) -> list[Matches]:
        """``query`` for many fingerprints at once, in order: the scan prefixes of each batch
        of them deduplicated and scanned in key order, one store call per batch (lookup.py),
        each indexed fingerprint compared once however many documents it holds."""
        check_queries(simhashes, max_matches)
        k = self.k if k is None else self.scheme.check_k(k)
        return lookup(self.store, self.scheme, simhashes, k, max_matches, self.ttl)

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
