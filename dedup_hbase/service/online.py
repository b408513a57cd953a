"""The online path: one index shared by concurrent requests, with insert-if-new.

A crawler asks, for every page it fetches, "have I seen this, or nearly this?" and keeps the
page only if not. ``OnlineIndex.add(docs, if_new=True)`` answers and indexes in one step: a
document is indexed only when no indexed document and no earlier document of the same call
is within k bits of it, and the answer says which documents were added and what each one
matched.

Exact within one process. Two fingerprints within k bits share the scan prefix of at least one
flag (the pigeonhole argument of layout.py), so a call holds a lock for every scan prefix of
its documents while it looks up and writes: two calls whose documents could be near-duplicates
of each other never interleave, and the second one sees the first one's documents. The locks
are striped (4,096 of them, taken in order, so two calls never deadlock); calls about unrelated
documents run side by side. A store that is not thread-safe (the embedded one) gets one lock
for every call instead. In an index of several signatures or with probes a document's lookup
also reads its other signatures' flags and its probes' prefixes, so a call holds the scan
prefixes of each signature's simhash (under that signature's flags) and of each probe: a
document that one lookup would find shares one of them with it.

Across processes (several servers on one HBase) the store's fleet locks do the same
(``Store.fleet_locks``; on HBase, leases in its locks table: stores/hbase/locks.py, which argues
exactness, crashes and expiry): an add with ``if_new`` also holds a lease on every scan prefix
of its documents, and checks that enough of it is left before it writes. An upsert (without
``if_new``) takes none: it writes whatever is indexed, and an insert-if-new that races with it
is answered as if it came first. With the fleet locks off (``fleet_locks=false`` in an HBase
URL) two servers that receive near-duplicates of each other at the same moment can both add
them: nothing is lost, the cost is a near-duplicate pair in the index.

A document's own id counts like any other: the same document sent twice (by two clients,
or again in one call) is added once, and the second answer is ``added: false`` with the
document itself among its matches. So retrying a call whose answer was lost doubles nothing,
and its answers say which documents are now indexed. Without ``if_new`` every document is
written (upsert by id: its old fingerprint is replaced).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..index.confirm import kept_of
from ..index.ids import encode_id
from ..index.index import Document, Index, Match, Matches
from ..index.layout import Scheme
from ..index.neardup import earlier_matches
from ..index.probed import earlier_probed
from ..index.retention import expired_ids, expires_at
from ..text.fingerprint import to_hex

STRIPES = 1 << 12
COUNT_PAGE = 1_000  # documents' keys a store call of count_documents reads: a short hold of the store
COUNT_PAGE_SHARED = 10_000  # the same where the store serves several calls at once (holds nothing)
_FIB_INT = 0x9E3779B97F4A7C15  # multiplicative hashing: scan prefixes -> stripes
_FIBONACCI = np.uint64(_FIB_INT)
_U64 = (1 << 64) - 1
_FEW = 32  # simhashes up to which their stripes are found in Python ints


@dataclass(frozen=True, slots=True)
class Decision:
    """What ``add`` did with one document: added or not, and its near-duplicates (indexed
    documents, and earlier documents of the same call)."""

    id: str
    simhash: int
    added: bool
    matches: list[Match]
    match_count: int | None = None  # how many there are, when ``matches`` is only the first of them

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "simhash": to_hex(self.simhash), "added": self.added,
               "matches": [m.to_dict() for m in self.matches]}
        if self.match_count is not None and self.match_count > len(self.matches):
            out["match_count"] = self.match_count
        return out


class OnlineIndex:
    """An Index shared by concurrent callers (threads): lookups, upserts, insert-if-new,
    documents and deletes. Thread-safe whatever the store; exact insert-if-new within one
    process (see the module docstring for several)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._stripes = [threading.Lock() for _ in range(STRIPES)]
        # a store that is not thread-safe is used by one call at a time
        self._store_lock = nullcontext() if index.store.thread_safe else threading.Lock()
        self.fleet = index.store.fleet_locks()  # None: this process is the only writer

    def store_free(self) -> bool:
        """False while another call holds a store that serves one call at a time (a call
        made now would wait for it)."""
        return not (isinstance(self._store_lock, type(threading.Lock())) and self._store_lock.locked())

    def config(self) -> dict[str, Any]:
        """The index's configuration, read from the store (a round trip)."""
        with self._store_lock:
            return Index.read_config(self.index.store)

    def stats(self) -> dict[str, Any]:
        """``Index.stats``: exact counts from a read of every key."""
        with self._store_lock:
            return self.index.stats()

    def count_documents(self, page: int | None = None) -> int:
        """The index's documents: every key of the documents' table read, ``page`` at a time
        (``COUNT_PAGE``, or ``COUNT_PAGE_SHARED`` on a store that serves several calls at once:
        HBase, where a page holds nothing and a bigger one saves round trips); after each page
        the count rests as long as the page took, the store free. So a store that serves one
        call at a time is held for a page, not for the whole count, and the requests get it
        between pages: a count that took the store back at once starved them (10^8 documents on
        the embedded store: 20 single lookups a second during the count's 2 minutes, 5,462
        without it). The count takes at most half of a core. Exact when nothing writes
        meanwhile; off by at most the writes made while it counts."""
        page = page or (COUNT_PAGE_SHARED if self.index.store.thread_safe else COUNT_PAGE)
        start, total = b"", 0
        while True:
            began = time.perf_counter()
            with self._store_lock:
                items = self.index.store.scan_range("docs", start, None, page)
            total += len(items)
            if len(items) < page:
                return total
            start = items[-1][0] + b"\x00"
            time.sleep(time.perf_counter() - began)

    def query_many(self, simhashes: Sequence[int], k: int | None = None, max_matches: int | None = None,
                   more: Sequence[tuple[int, ...]] | None = None,
                   probes: Sequence[tuple[tuple[int, ...], ...]] | None = None,
                   sketches: Sequence[int] | None = None, kepts: Sequence[str] | None = None) -> list[Matches]:
        """``Index.query_many``: per query at most ``max_matches`` matches and (``.total``) the
        count; ``more``, ``probes``, ``sketches`` and ``kepts`` as it takes them (an index of
        several signatures, probes, a confirmation, the short-text rule)."""
        with self._store_lock:
            return self.index.query_many(simhashes, k, max_matches, more, probes, sketches, kepts)

    def get(self, doc_ids: Sequence[str]) -> list[Document | None]:
        with self._store_lock:
            return self.index.get(doc_ids)

    def delete(self, doc_ids: Sequence[str]) -> list[str]:
        with self._held(self._locked(self._stored(doc_ids))), self._store_lock:
            return self.index.delete(doc_ids)

    def add(self, docs: Sequence[Document], *, if_new: bool = True, max_matches: int | None = None,
            probes: Sequence[tuple[tuple[int, ...], ...]] | None = None) -> list[Decision]:
        """Index ``docs`` (all of them, or with ``if_new`` only those with no near-duplicate
        indexed or earlier in ``docs``) and say, per document in order, what was done, with
        at most ``max_matches`` of its near-duplicates (the first by (distance, id)) and,
        when there are more, how many. In an index of several signatures each document
        carries its others (``Document.more``); with probes, ``probes`` gives each document's
        (``Index.probe_masks``): a near-duplicate is what a lookup of the document finds.

        Checks every document before writing any (``Index.add_many``). A store error part
        way leaves some of the chosen documents written and others not; the same call again
        gives the same answers and leaves the index as one successful call would."""
        if not docs:
            return []
        simhashes = [d.simhash for d in docs]
        more, _, sketches, kepts = self.index.spec.lookup_args(docs, masks=lambda d: None)
        locked = self._locked(docs, probes)
        with self._held(locked), self._store_lock, self._fleet_held(locked if if_new else []) as lease:
            found = self.index.query_many(simhashes, None, max_matches, more, probes, sketches, kepts)
            earlier = self._earlier_matches(docs, probes)
            decisions = []
            for i, (doc, matches) in enumerate(zip(docs, found)):
                near = sorted(matches + earlier.get(i, []), key=lambda m: (m.distance, m.id))[:max_matches]
                count = matches.total + len(earlier.get(i, []))
                decisions.append(Decision(doc.id, doc.simhash, not (if_new and count), near, count))
            if lease is not None:
                lease.check()
            self.index.add_many([doc for doc, decision in zip(docs, decisions) if decision.added])
        return decisions

    def remove_expired(self, chunk: int = 1000) -> int:
        """Delete the documents older than the index's TTL and their index cells (retention.py),
        each chunk under the locks of its documents and checked again there, so a document
        written meanwhile stays. Returns how many were deleted."""
        ttl, removed = self.index.ttl, 0
        if not ttl:
            return 0
        with self._store_lock:
            doomed = expired_ids(self.index.store, ttl, head=self.index.head)
        for start in range(0, len(doomed), chunk):
            ids = doomed[start:start + chunk]
            with self._held(self._locked(self._stored(ids))), self._store_lock:
                now = time.time()
                values = self.index.store.get("docs", [encode_id(i) for i in ids])
                removed += len(self.index.delete([i for i, v in zip(ids, values)
                                                  if (end := expires_at(v, ttl, self.index.head)) is not None
                                                  and end <= now]))
        return removed

    def _earlier_matches(self, docs: Sequence[Document],
                         probes: Sequence[tuple[tuple[int, ...], ...]] | None = None) -> dict[int, list[Match]]:
        """Position -> the earlier documents of ``docs`` a lookup of it would find if indexed."""
        index = self.index
        if not (index.lookup_options or probes):
            simhashes = np.array([d.simhash for d in docs], dtype=np.uint64)
            return {j: [Match(docs[i].id, docs[i].simhash, distance) for i, distance in found]
                    for j, found in earlier_matches(simhashes, index.scheme, index.k).items()}
        columns = [[d.simhash for d in docs], *map(list, zip(*(d.more for d in docs)))][:len(index.signatures)]
        names = index.signatures.names if len(index.signatures) > 1 else (None,)
        sketches = [d.sketch for d in docs]
        confirm = (sketches, index.confirm, index.spec.short,
                   kept_of(sketches, [d.kept for d in docs])) if index.spec.sketched else None
        return {j: [Match(docs[i].id, columns[place][i], distance, names[place]) for i, distance, place in found]
                for j, found in earlier_probed(columns, probes, index.k, confirm).items()}

    def _stored(self, doc_ids: Sequence[str]) -> list[Document]:
        with self._store_lock:
            return [d for d in self.index.get(doc_ids) if d is not None]

    def _locked(self, docs: Sequence[Document],
                probes: Sequence[tuple[tuple[int, ...], ...]] | None = None) -> list[tuple[Scheme, list[int]]]:
        """What a call about ``docs`` locks: per signature, its scheme and the fingerprints whose
        scan prefixes it holds (each document's simhash of that signature and, with ``probes``,
        each of its probes). Two documents a lookup of either would find share a prefix."""
        out = []
        for place, scheme in enumerate(self.index.schemes):
            own = [d.simhash if place == 0 else d.more[place - 1] for d in docs]
            flipped = [s ^ m for s, masks in zip(own, probes or ()) if place < len(masks) for m in masks[place]]
            out.append((scheme, own + flipped))
        return out

    @staticmethod
    def _prefix_ids(locked: Sequence[tuple[Scheme, Sequence[int]]]) -> np.ndarray:
        return np.concatenate([scheme.prefix_ids(np.asarray(simhashes, dtype=np.uint64)).ravel()
                               for scheme, simhashes in locked])

    @contextmanager
    def _fleet_held(self, locked: Sequence[tuple[Scheme, Sequence[int]]]) -> Iterator[Any]:
        """The fleet locks of every scan prefix of ``locked`` (``_locked``; their 5-byte keys);
        yields the lease, or None without fleet locks or fingerprints."""
        if self.fleet is None or not any(simhashes for _, simhashes in locked):
            yield None
            return
        keys = [int(p).to_bytes(5, "big") for p in np.unique(self._prefix_ids(locked)).tolist()]
        with self.fleet.held(keys) as lease:
            yield lease

    def _stripes_of(self, locked: Sequence[tuple[Scheme, Sequence[int]]]) -> list[int]:
        """The stripes of every scan prefix of ``locked``, sorted (the order locks are taken in)."""
        if sum(len(simhashes) for _, simhashes in locked) <= _FEW:  # a service's add: Python ints cost less
            return sorted({(int.from_bytes(p, "big") * _FIB_INT & _U64) >> (64 - 12)
                           for scheme, simhashes in locked for s in simhashes for p in scheme.prefixes(s)})
        return np.unique((self._prefix_ids(locked) * _FIBONACCI) >> np.uint64(64 - 12)).tolist()

    @contextmanager
    def _held(self, locked: Sequence[tuple[Scheme, Sequence[int]]]) -> Iterator[None]:
        """Hold the stripe locks of every scan prefix of ``locked`` (``_locked``), taken in order."""
        if not any(simhashes for _, simhashes in locked):
            yield
            return
        locks = [self._stripes[i] for i in self._stripes_of(locked)]
        for lock in locks:
            lock.acquire()
        try:
            yield
        finally:
            for lock in reversed(locks):
                lock.release()
