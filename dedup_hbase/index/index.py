"""The near-duplicate index: documents in, near-duplicates out, over any store.

Tables (see schema/tables.json):

* ``index``: key = 13-byte row key (layout.py) + document id (with a confirmation, the id
  escaped and the sketch: layout.py, confirm.py); empty value. One row per fingerprint and
  flag, one column per document.
* ``docs``: key = document id; value = 8-byte big-endian simhash (one per signature in an
  index of several) + JSON metadata. Lets ``delete`` find a document's index rows and results
  show metadata without fingerprinting the text again.
* ``meta``: key ``config``; value = JSON of scheme, k, the fingerprinter spec and, in an index
  of several signatures (``signatures``: body, leads; text/signatures.py), their names. Also
  small named JSON states kept with the index (``read_state``/``write_state``), such as
  the checkpoints of loads.

Writes go index rows first, document row last, all idempotent: a write cut off at
any point is completed by writing the same documents again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import DedupError, IndexMismatch, IndexNotFound, IndexOutdated, InvalidInput
from ..text.fingerprint import Fingerprinter, describe_spec, fingerprinter_from_spec, make_fingerprinter
from ..text.signatures import Signatures
from ..text.units import text_sketches
from .confirm import sketch_spec
from .documents import (
    Document,
    Written,
    cell_qualifiers,
    checked_columns,
    document_meta,
    document_value,
    index_keys,
    kept_column,
    parse_document,
    signature_columns,
    sketch_column,
    stored_cells,
)
from .ids import encode_id
from .layout import PREFIX_BYTES, Scheme, split_qualifier
from .lookup import Match, Matches, check_queries, confirmation, signed_lookup
from .schema import load_schema
from .spec import IndexSpec, preset_options
from .store import Store

# Document, Written, document_meta, document_value (documents.py), Match and Matches (lookup.py)
# are part of the index's interface: importable from here
__all__ = ["FORMAT", "Document", "Index", "Match", "Matches", "Written", "document_meta", "document_value",
           "fingerprinter_for"]

FORMAT = 1
SKETCHES_IN = "cells"  # an index with a confirmation keeps the sketches in its index cells (confirm.py)
_CONFIG_KEY = b"config"


class Index:
    """Near-duplicate lookups over a store. Open with ``Index.create`` or ``Index.open``.

    The index checks arguments before it touches the store; it holds no state beyond
    its configuration, so several processes may write one HBase index at once.
    """

    def __init__(self, store: Store, spec: IndexSpec, fingerprinter: Fingerprinter):
        self.store, self.spec, self.fingerprinter = store, spec, fingerprinter
        self.scheme, self.k, self.signatures = spec.scheme, spec.k, spec.signatures
        self.probes = spec.probes    # per signature: its unsure bits a lookup flips
        self.confirm = spec.confirm  # sketch bits allowed beyond 3 bits, None: off
        self.ttl = spec.ttl          # seconds a document counts (retention.py), None: always
        self.schemes = spec.schemes  # one per signature
        self.sketcher = fingerprinter_from_spec(sketch_spec(fingerprinter.spec)) if spec.confirmed else None
        self.head = spec.head  # the bytes of a document row before its metadata
        # made before the short-text rule was the default (its metadata has no "short"): short
        # texts match on their 64 bits alone, as then (text/shorts.py)
        self.before_short_default = False

    # -- opening -------------------------------------------------------------

    @classmethod
    def create(cls, store: Store, scheme: Scheme | str | int | None = None, k: int = 3,
               fingerprinter: Fingerprinter | None = None, regions: int | None = None,
               ttl: int | None = None, signatures: Signatures | str | None = None,
               probes: Sequence[int] | str | None = None, confirm: int | None = None,
               preset: str | None = None, short: str | None = None) -> "Index":
        """Create the tables and metadata of a new, empty index in ``store``. Without
        ``scheme``: the 4-split for k <= 3, else the cheapest scheme that finds every match
        within k bits (plan.choose_scheme). Without ``fingerprinter``: jieba, seed 0. Without
        ``signatures``: the body's alone (``"body,lead150"``: text/signatures.py). ``probes``
        (``"8"`` or ``"8,4"``: per signature, how many of a query's least sure bits a lookup
        flips, one at a time; lookup.py): none. ``confirm`` (T: matches beyond 3 bits need their
        sketches within T bits; confirm.py, k above 3): none. ``short`` (the short-text rule,
        ``"words"``: text/units.py): none. ``preset`` (spec.PRESETS: "recall")
        sets signatures, probes and confirm as measured; an option given beside it overrides its."""
        options = preset_options(preset, signatures=signatures, probes=probes, confirm=confirm)
        fingerprinter = fingerprinter or make_fingerprinter()
        index = cls(store, IndexSpec.make(scheme, k, ttl=ttl, short=short, **options), fingerprinter)
        if not store.exists():
            schema = load_schema(regions)
            for table in ("index", "docs") if ttl else ():
                schema["tables"][table]["ttl"] = ttl  # HBase: the column family's TTL
            store.create(schema)
        elif store.get("meta", [_CONFIG_KEY])[0] is not None:
            raise DedupError(f"{store.url} already holds an index; open it, or pick another store")
        # else: tables made beforehand (e.g. from `dedup-hbase schema` in the HBase shell)
        config = {"format": FORMAT, **index.spec.config(), "fingerprint": fingerprinter.spec,
                  "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  **({"sketches": SKETCHES_IN} if index.spec.sketched else {})}
        store.put("meta", [(_CONFIG_KEY, json.dumps(config).encode())])
        return index

    @classmethod
    def open(cls, store: Store, fingerprinter: Fingerprinter | None = None,
             signatures: Signatures | str | None = None) -> "Index":
        """Open the index in ``store``; refuse one built with another fingerprinter, or other
        signatures than ``signatures`` when given.

        Without ``fingerprinter`` (``signatures``) the index's own, as recorded at creation.
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
        own = Signatures.parse(config.get("signatures"))
        if signatures is not None:
            wanted = signatures if isinstance(signatures, Signatures) else Signatures.parse(signatures)
            if wanted != own:
                raise IndexMismatch(f"{store.url} was built with signatures {own.label}, not {wanted.label}: "
                                    "its rows hold no other signature; make a new index for those")
        if "confirm" in config and config.get("sketches") != SKETCHES_IN:
            raise IndexOutdated(f"{store.url} keeps its sketches in its document rows alone (made by an earlier "
                                "dedup-hbase): make it again with the same options and load its documents again")
        if isinstance(config.get("short"), int):
            raise IndexOutdated(f"{store.url} matches short texts by character sketches within {config['short']} bits "
                                "(made by an earlier dedup-hbase; short texts are now near by their words): make it "
                                "again with the same options and load its documents again")
        index = cls(store, IndexSpec.from_config(config), fingerprinter)
        index.before_short_default = "short" not in config
        return index

    @staticmethod
    def read_config(store: Store) -> dict[str, Any]:
        """The index's configuration (scheme, k, fingerprinter spec, creation time)."""
        if not store.exists():
            raise IndexNotFound(f"no index at {store.url}")
        (raw,) = store.get("meta", [_CONFIG_KEY])
        if raw is None:
            raise IndexNotFound(f"{store.url} has tables but no index metadata")
        return json.loads(raw)

    @property
    def lookup_options(self) -> str | None:
        """What this index looks up beyond one signature without probes or a confirmation (what
        a lookup of a simhash alone cannot give: ``IndexSpec.needs_texts``); None: nothing."""
        return self.spec.needs_texts()

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

    def more_signatures(self, text: str, simhash: int) -> tuple[int, ...]:
        """The simhashes of ``text``'s signatures after the body (whose simhash is ``simhash``):
        () in an index of one signature. A signature whose text has no feature takes the body's
        simhash (text/signatures.py)."""
        return self.signatures.more(self.fingerprinter.fingerprint, text, simhash)

    def probe_masks(self, text: str) -> tuple[tuple[int, ...], ...]:
        """Per signature, the bits a lookup of ``text`` flips one at a time (``probes`` of them:
        its least sure, ``Fingerprinter.uncertain_bits``); () for a signature without probes.
        A lead without a feature probes the body's bits, as its simhash is the body's."""
        return self.signatures.probe_masks(self.fingerprinter, text, self.probes)

    def lookup_args(self, records: Sequence[Any]) -> tuple:
        """``query_many``'s ``more``, ``probes`` and ``sketches`` for fingerprinted records (each
        with ``.text``, ``.more`` and ``.sketch``): what this index's lookups take (IndexSpec)."""
        return self.spec.lookup_args(records, lambda r: self.probe_masks(r.text))

    def sketched(self, text: str) -> tuple[int | None, str]:
        """``text``'s sketch and kept text, made in one pass: the sketch in an index with a
        confirmation (confirm.py) or the short-text rule (text/units.py: ``text_sketches``), else
        None; the kept text "" but for a short text under the rule."""
        other = None if self.sketcher is None else self.sketcher.fingerprint(text)
        sketches, kepts = text_sketches([text], [other]) if self.spec.short is not None else ([other], [""])
        return sketches[0], kepts[0]

    def add(self, doc_id: str, text: str | None = None, *, simhash: int | None = None,
            meta: Mapping[str, Any] | None = None, more: tuple[int, ...] = (), sketch: int | None = None,
            kept: str = "") -> int:
        """Index one document from its text, or its simhash (and in an index of several
        signatures, ``more``: the other signatures' simhashes; with sketches, its ``sketch``;
        under the short-text rule, its ``kept`` text); returns the simhash."""
        if (text is None) == (simhash is None):
            raise TypeError("give exactly one of text and simhash")
        if simhash is None:
            simhash = self.fingerprint(text)
            more, (sketch, kept) = self.more_signatures(text, simhash), self.sketched(text)
        self.add_many([Document(doc_id, simhash, dict(meta or {}), tuple(more), sketch, kept)])
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
        ids, simhashes, chosen = checked_columns(docs)  # all checked before a write
        columns = signature_columns(simhashes, chosen, len(self.signatures))
        sketches = sketch_column(chosen, self.spec.sketched)
        kepts = kept_column(chosen, sketches, self.spec.short is not None)
        stored = columns + ([sketches] if sketches is not None else [])
        written = self.retire_old_fingerprints(ids, simhashes, columns, sketches, kepts)
        self.store.put_cells("index", b"".join(s.key_table(c) for s, c in zip(self.schemes, columns)),
                             cell_qualifiers(ids, sketches, kepts), repeat=sum(len(s.flags) for s in self.schemes))
        values = np.stack(stored, axis=1).astype(">u8").view(f"V{8 * len(stored)}").ravel().tolist()
        for i, d in enumerate(chosen):
            if self.ttl and "loaded" not in d.meta:  # a document's age is its row's (retention.py)
                d = Document(d.id, d.simhash, {**d.meta, "loaded": int(time.time())}, d.more, d.sketch, d.kept)
            if d.meta or d.kept:
                values[i] = document_value(d)
        self.store.put("docs", zip(ids, values))
        return written

    def retire_old_fingerprints(self, raw_ids: Sequence[bytes], simhashes: Sequence[int],
                                columns: Sequence[np.ndarray] | None = None,
                                sketches: np.ndarray | None = None, kepts: Sequence[str] | None = None) -> Written:
        """Before documents are (re)written: delete the index rows of every id whose stored
        fingerprints differ from its new ones (``simhashes``, and per signature ``columns``;
        with a confirmation, or whose sketch differs from ``sketches``), so no old row keeps
        matching. Says how many of the ids are new to the index and how many had other
        fingerprints. Writes no new row."""
        columns = [np.asarray(simhashes, dtype=np.uint64)] if columns is None else columns
        sketched = self.spec.sketched
        if sketched and (sketches is None or len(sketches) != len(raw_ids)):
            raise InvalidInput("this index keeps a sketch of each document (confirm=): give the documents' sketches",
                               arguments=("confirm",))
        new = cell_qualifiers(raw_ids, sketches if sketched else None, kepts)
        old = self.store.get("docs", list(raw_ids))
        known = [i for i, value in enumerate(old) if value is not None]
        stored = {i: stored_cells(raw_ids[i], old[i], len(self.signatures), sketched) for i in known}
        replaced = [stored[i] for i in known if stored[i] != (new[i], tuple(int(c[i]) for c in columns))]
        if replaced:
            self.store.delete("index", index_keys(self.schemes, replaced))
        return Written(len(raw_ids) - len(known), len(replaced))


    def delete(self, doc_ids: Iterable[str]) -> list[str]:
        """Remove documents and their index rows; returns the ids that were present."""
        ids = [encode_id(i) for i in dict.fromkeys(doc_ids)]
        values = self.store.get("docs", ids)
        found = [(raw, v) for raw, v in zip(ids, values) if v is not None]
        sketched = self.spec.sketched
        self.store.delete("index", index_keys(self.schemes, [stored_cells(raw, v, len(self.signatures), sketched)
                                                             for raw, v in found]))
        self.store.delete("docs", [raw for raw, _ in found])
        return [raw.decode() for raw, _ in found]

    # -- reading ---------------------------------------------------------------

    def get(self, doc_ids: Sequence[str]) -> list[Document | None]:
        """The stored documents (fingerprint and metadata), None for unknown ids."""
        values = self.store.get("docs", [encode_id(i) for i in doc_ids])
        more, sketch = len(self.signatures) - 1, self.spec.sketched
        return [None if v is None else parse_document(i, v, more, sketch) for i, v in zip(doc_ids, values)]

    def query(self, simhash: int, k: int | None = None, max_matches: int | None = None,
              more: tuple[int, ...] | None = None, probes: tuple[tuple[int, ...], ...] | None = None,
              sketch: int | None = None, kept: str = "") -> Matches:
        """The indexed documents within ``k`` bits of ``simhash`` (default: the index's k), by
        distance, then id, at most ``max_matches`` of them (None: all): a list of ``Match``es
        that also says how many there are in all (``.total``) and holds the indexed
        fingerprints within k with all their documents (``.runs``); ``Matches`` in lookup.py.
        In an index of several signatures, ``more`` (``more_signatures``) looks up the others
        too: a document within k under any of them matches (without ``more``: the body's).
        ``probes`` (``probe_masks``) also looks up the query with each of those bits flipped:
        a document within k of a probe matches, at its distance from the query (lookup.py). In an
        index with a confirmation, ``sketch`` (``sketched``) confirms the matches beyond 3 bits
        (confirm.py); under the short-text rule ``kept`` (``sketched`` too) is the query's text as the
        rule compares it (text/units.py)."""
        return self.query_many([simhash], k, max_matches, None if more is None else [more],
                               None if probes is None else [probes], None if sketch is None else [sketch],
                               [kept] if self.spec.short is not None else None)[0]

    def query_text(self, text: str, k: int | None = None, max_matches: int | None = None,
                   simhash: int | None = None) -> Matches:
        """``query`` of a document's text: its simhash (``simhash``, when the caller made it
        already), its other signatures' and its probes, as this index keeps and looks them up."""
        simhash = self.fingerprint(text) if simhash is None else simhash
        more = self.more_signatures(text, simhash) if len(self.signatures) > 1 else None
        return self.query(simhash, k, max_matches, more, self.probe_masks(text) if any(self.probes) else None,
                          *self.sketched(text))

    def query_many(self, simhashes: Sequence[int], k: int | None = None, max_matches: int | None = None,
                   more: Sequence[tuple[int, ...]] | None = None,
                   probes: Sequence[tuple[tuple[int, ...], ...]] | None = None,
                   sketches: Sequence[int] | None = None, kepts: Sequence[str] | None = None) -> list[Matches]:
        """``query`` for many fingerprints at once, in order: the scan prefixes of each batch
        of them deduplicated and scanned in key order, one store call per batch (lookup.py),
        each indexed fingerprint compared once however many documents it holds; with ``more``
        (per query, its other signatures' simhashes) each signature so, and with ``probes`` (per
        query, per signature, its bits to flip) each probe so, merged per query; ``sketches`` (per
        query) confirm the matches beyond 3 bits in an index with a confirmation (a k above 3
        needs them there; confirm.py), and with ``kepts`` (per query, its kept text) decide a
        pair with a short text under the short-text rule (text/units.py)."""
        check_queries(simhashes, max_matches)
        k = self.k if k is None else self.scheme.check_k(k)
        confirm = confirmation(self.confirm, k, any(self.probes), simhashes, sketches, self.spec.short, kepts)
        columns = [list(simhashes)]
        if more is not None:
            if len(more) != len(simhashes) or any(len(m) != len(self.signatures) - 1 for m in more):
                raise InvalidInput(f"this index keeps signatures {self.signatures.label}: give "
                                   f"{len(self.signatures) - 1} more simhashes for each query")
            columns += map(list, zip(*more)) if simhashes else [[] for _ in self.signatures.names[1:]]
            for column in columns[1:]:
                check_queries(column, None)
        if probes is not None and len(probes) != len(simhashes):
            raise InvalidInput(f"give the probes of each query: {len(probes)} for {len(simhashes)} queries")
        names = list(self.signatures.names[:len(columns)]) if len(self.signatures) > 1 else [None]
        return signed_lookup(self.store, self.schemes, names, columns, probes, k, max_matches, self.ttl, self.head,
                             confirm, split_qualifier if self.spec.sketched else None)

    def stats(self, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        """Counts from a full read of the keys (exact; takes time on a big index: minutes at 10^7
        documents on HBase). ``progress``, if given, is called with the keys read so far (the
        documents', then the index cells') as the read goes on."""
        config = self.read_config(self.store)
        documents = 0
        for documents, _ in enumerate(self.store.iterate("docs"), 1):
            if progress is not None and documents % 65_536 == 0:
                progress(documents)
        rows, cells, per_flag = 0, 0, Counter()
        for prefix, found in self.store.iterate_cells("index", PREFIX_BYTES):
            rests = found.rests  # in key order: a row's cells are neighbours
            distinct = 1 + int(np.count_nonzero(rests[1:] != rests[:-1])) if len(rests) else 0
            cells += len(rests)
            rows += distinct
            per_flag[prefix[PREFIX_BYTES - 1]] += distinct
            if progress is not None:
                progress(documents + cells)
        return {"store": self.store.url, "documents": documents, "index_rows": rows,
                "index_cells": cells, "scheme": self.scheme.name, "k": self.k,
                "max_k": self.scheme.max_k, "flags": len(self.scheme.flags),
                "featurizer": config["fingerprint"], "created": config.get("created"),
                **self.spec.summary(),
                "rows_per_flag": {str(f): per_flag[f] for s in self.schemes for f in s.flag_bytes}}


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
