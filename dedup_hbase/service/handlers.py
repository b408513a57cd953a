"""The service's handlers over one ``OnlineIndex``: what each endpoint does with checked
documents and parameters, and what it answers (a JSON value), with this server's counters.

Answers come in input order and are the records of the CLI's ``--json`` (a match is ``{"id",
"simhash", "distance"}``): at most ``Limits.max_matches`` matches per document, the nearest
first by (distance, id), and ``"match_count"`` when there are more. A text without features
is not an error of the request: its answer is ``{"id", "error"}`` in its place (``"added":
false`` for add). A handler raises ``RequestError`` for what the request asked wrongly (404:
no such document; 400: a bad ``ttl``), ``StoreError`` when the store fails; ``failure`` turns
any exception into the HTTP status and JSON body of the answer.

Concurrent checks are joined into one call of the index (batcher.py), a store error in it
being each joined request's. Adds are not joined (an add compares a document with the
earlier documents of its own request); on a store that serves one call at a time (the
embedded one) they queue in order for one thread instead of as threads on its lock. On an
in-process store a batch of at most ``INLINE_DOCS`` documents runs on the event loop's thread
(no hand-off to a thread and back); a bigger one, and any batch on a store across a network,
on the handlers' threads, so that the event loop keeps answering. The other handlers run on
those threads (app.py hands them over). Nothing here reads HTTP: app.py does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import DedupError, EmptyDocument, InvalidInput, StoreError
from ..index.documents import two_versions
from ..index.index import Document, Index, Matches, document_meta
from ..index.retention import describe, meta_expires_at, parse_duration
from ..text.fingerprint import parse_hex, to_hex
from ..text.terms import TOP, differing_bits, weighted_terms, weightiest
from .batcher import Batcher
from .documents import Limits, RequestDoc, RequestError, bad
from .metrics import Metrics, Sources
from .online import OnlineIndex
from .probes import DocumentCount, NotReady, Readiness

logger = logging.getLogger(__name__)

THREADS = 32  # requests in the store or fingerprinting at once
CHECK_BATCHES = 4  # batches of checks at once on a thread-safe store
INLINE_DOCS = 32  # on an in-process store, batches of at most this many documents run on the event loop


class DedupService:
    """The request handlers, over one OnlineIndex, with this server's counters. ``checks``
    and ``adds`` (None on a thread-safe store: the thread pool) are the batchers the HTTP
    application awaits; the other handlers are plain functions for the thread pool.
    ``metrics`` counts the answered requests and the joined checks (metrics.py), ``readiness``
    and ``documents`` know the store outside the requests (probes.py)."""

    def __init__(self, online: OnlineIndex, limits: Limits = Limits()) -> None:
        self.online, self.limits = online, limits
        self.started = time.time()
        self.counters: Counter = Counter()
        self._lock = threading.Lock()
        self.metrics = Metrics()
        self.readiness = Readiness(online.config)
        self.documents = DocumentCount(online, self.counts)
        self.threads = ThreadPoolExecutor(THREADS, thread_name_prefix="dedup-request")  # started on first use
        store = online.index.store
        self.inline = store.in_process
        inline = {"inline_max": INLINE_DOCS, "inline_ok": online.store_free} if self.inline else {}
        self.checks = Batcher(self.check, self.threads, limits.max_docs,
                              parallel=CHECK_BATCHES if store.thread_safe else 1, observe=self.metrics.batch,
                              **inline)
        self.adds = None if store.thread_safe else Batcher(self.add, self.threads, limits.max_docs, join=False,
                                                           **inline)

    def count(self, **increments: int) -> None:
        """Add to this server's counters (``GET /v1/stats``: ``server``); any thread."""
        counters = self.counters
        with self._lock:
            for name, n in increments.items():
                counters[name] += n

    def counts(self) -> dict[str, int]:
        """A copy of this server's counters; any thread."""
        with self._lock:
            return dict(self.counters)

    def sources(self) -> Sources:
        """What ``GET /metrics`` shows besides ``metrics`` (metrics.py's ``Sources``)."""
        counts, fleet = self.counts(), self.online.fleet
        return Sources(counts, None if fleet is None else dict(fleet.counters), self.documents.value(counts))

    def fingerprint(self, docs: list[RequestDoc]) -> None:
        """Set each text document's simhash, or its error (a text without features): one
        batch call; on an in-process store, a batch small enough for the event loop one call
        per text (no arrays to make and read). In an index of several signatures or with
        probes, also each text's other simhashes and probes (``signed``)."""
        texts = [d for d in docs if d.text is not None]
        self._simhashes(texts)
        if self.online.index.lookup_options:
            signed(self.online.index, docs)

    def _simhashes(self, texts: list[RequestDoc]) -> None:
        if self.inline and len(texts) <= INLINE_DOCS:
            fingerprint = self.online.index.fingerprinter.fingerprint
            for doc in texts:
                try:
                    doc.simhash = fingerprint(doc.text)
                except EmptyDocument as e:
                    doc.error = f"{EmptyDocument.REASON}: {e}"
            return
        hashes, errors = self.online.index.fingerprinter.fingerprint_many([d.text for d in texts])
        for i, (doc, simhash) in enumerate(zip(texts, hashes.tolist())):
            if i in errors:
                doc.error = f"{EmptyDocument.REASON}: {errors[i]}"
            else:
                doc.simhash = simhash

    def check(self, docs: list[RequestDoc]) -> list[dict[str, Any]]:
        """``POST /v1/check``: each document's matches (a batch of joined requests' documents)."""
        self.fingerprint(docs)
        good = [d for d in docs if d.error is None]
        more, probes, sketches, kepts = lookup_parts(self.online.index, good)
        found = iter(self.online.query_many([d.simhash for d in good], None, self.limits.max_matches, more, probes,
                                            sketches, kepts))
        self.count(documents_checked=len(docs), check_calls=1)  # one per batch of joined requests
        return [{"id": d.id, "error": d.error} if d.error else checked(d, next(found)) for d in docs]

    def explain(self, docs: list[RequestDoc], answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``POST /v1/check?explain=true``: ``check``'s answers with, for a document given by
        its text, ``"terms"``: its ``TOP`` weightiest terms as ``[term, weight]`` (the
        fingerprint's features and weights, text/terms.py: the ``explain`` command's), and for
        each match ``"differing_bits"`` (63 = the most significant). The index keeps no texts,
        so a match's own terms, and which terms the two share, are not known here: the
        ``explain`` command shows them from the inputs. A check without ``explain`` does not
        come here (app.py)."""
        features, names = self.online.index.fingerprinter, self.online.index.signatures.names
        for doc, answer in zip(docs, answers):
            if doc.error is not None:
                continue
            own = dict(zip(names, (doc.simhash, *doc.more)))  # a match's bits against its signature's
            for match in answer["matches"]:
                match["differing_bits"] = differing_bits(own[match.get("signature", "body")], parse_hex(match["simhash"]))
            if doc.text is not None:
                terms, _ = weightiest(weighted_terms(features, doc.text), {}, TOP)
                answer["terms"] = [[t.term, t.weight] for t in terms]
        return answers

    def request_ttl(self, value: str | None) -> int | None:
        """An add's ``ttl`` (a duration such as ``12h``) in seconds, checked against the
        index's TTL; None when not given. RequestError (400) when it is not a duration, is
        longer than the index's TTL, or the index has none (documents kept forever: a request
        shortens an index's TTL, it does not give one)."""
        if value is None:
            return None
        try:
            seconds = parse_duration(value)
        except InvalidInput as e:
            raise RequestError(400, f"ttl: {e}") from None
        index_ttl = self.online.index.ttl
        if not index_ttl:
            raise RequestError(400, f"ttl={value}: this index keeps documents forever (made without init --ttl); "
                                    "a request's ttl shortens an index's TTL, it cannot give one")
        if seconds > index_ttl:
            raise RequestError(400, f"ttl={value} is longer than the index's TTL ({describe(index_ttl)}): "
                                    "no document outlives it")
        return seconds

    def add(self, docs: list[RequestDoc], if_new: bool, ttl: int | None = None) -> list[dict[str, Any]]:
        """``POST /v1/add``: ``OnlineIndex.add``'s decisions. ``ttl``: these documents' own time
        to live in seconds (``request_ttl``), else the index's."""
        self.fingerprint(docs)
        good = [d for d in docs if d.error is None]
        if if_new:
            one_version(good)
        now = int(time.time())
        written = [Document(d.id, d.simhash, document_meta(now, length=None if d.text is None else len(d.text), ttl=ttl),
                            d.more, d.sketch, d.kept) for d in good]
        _, probes, _, _ = lookup_parts(self.online.index, good)
        decisions = iter(self.online.add(written, if_new=if_new, max_matches=self.limits.max_matches, probes=probes))
        out = [{"id": d.id, "added": False, "error": d.error} if d.error else next(decisions).to_dict() for d in docs]
        added = sum(1 for a in out if a["added"])
        self.count(documents_added=added, documents_offered=len(docs), documents_refused=len(good) - added)
        return out

    def document(self, doc_id: str) -> dict[str, Any]:
        """``GET /v1/docs/ID``."""
        (doc,) = self.online.get([doc_id])
        ttl = self.online.index.ttl
        if doc is not None and ttl and (end := meta_expires_at(doc.meta, ttl)) is not None and end <= time.time():
            raise RequestError(404, f"no document {doc_id!r} (it expired; it is removed at the next sweep)")
        if doc is None:
            raise RequestError(404, f"no document {doc_id!r}")
        return {"id": doc.id, "simhash": to_hex(doc.simhash), "meta": doc.meta}

    def delete(self, doc_id: str) -> dict[str, Any]:
        """``DELETE /v1/docs/ID``."""
        if not self.online.delete([doc_id]):
            raise RequestError(404, f"no document {doc_id!r}")
        self.count(documents_deleted=1)
        return {"deleted": doc_id}

    def stats(self, full: bool) -> dict[str, Any]:
        """``GET /v1/stats``: the index's configuration and this server's counters; ``full``
        adds ``OnlineIndex.stats`` (reads every key)."""
        index = self.online.index
        out: dict[str, Any] = {"store": index.store.url, "scheme": index.scheme.name, "k": index.k, "ttl_s": index.ttl,
                               "featurizer": index.fingerprinter.spec, "uptime_s": round(time.time() - self.started, 1),
                               "server": dict(self.counters)}
        fleet = self.online.fleet
        out["fleet_locks"] = None if fleet is None else {"lease_s": fleet.lease_s, "owner": fleet.owner, **fleet.counters}
        if full:
            out["index"] = self.online.stats()
        return out

    def expire_until(self, stop: threading.Event) -> None:
        """With a TTL: remove expired documents now, then every TTL/2 (1 s to 1 h), until ``stop``."""
        interval = min(max(self.online.index.ttl / 2, 1), 3600)
        while True:
            try:
                self.count(documents_expired=self.online.remove_expired())
            except DedupError as e:
                logger.warning("removing expired documents failed (tried again in %.0f s): %s", interval, e)
            if stop.wait(interval):
                return

    def failure(self, e: Exception, method: str, path: str) -> tuple[int, Any]:
        """A request's error as (HTTP status, JSON body), counted; a bug is logged with its
        traceback and answered 500 (the service keeps answering)."""
        if isinstance(e, NotReady):  # /readyz: not counted, and logged by Readiness when the state changes
            return e.status, e.body
        if isinstance(e, RequestError):
            self.count(refused=1)
            return e.status, e.body
        if isinstance(e, StoreError):
            self.count(store_errors=1)
            logger.warning("store error: %s", e)
            return 503, {"error": f"the store failed: {e}; the same request again is safe"}
        if isinstance(e, DedupError):
            self.count(refused=1)
            return 400, {"error": str(e)}
        self.count(internal_errors=1)
        logger.error("internal error on %s %s", method, path, exc_info=e)
        return 500, {"error": "internal error (logged by the service)"}


def signed(index: Index, docs: list[RequestDoc]) -> None:
    """For an index of several signatures, with probes or a confirmation (whose requests hold
    texts alone: documents.needs_texts): each fingerprinted text's other simhashes (``more``),
    probes (``masks``) and sketch, as ``Index.query_text`` makes them."""
    for doc in docs:
        if doc.error is None:
            doc.more = index.more_signatures(doc.text, doc.simhash)  # () for the body alone
            doc.masks = index.probe_masks(doc.text) if index.spec.probed else ()
            doc.sketch, doc.kept = index.sketched(doc.text)


def lookup_parts(index: Index, docs: list[RequestDoc]) -> tuple[list | None, list | None, list | None, list | None]:
    """``docs``' ``more``, ``probes``, sketches and kept texts as ``Index.query_many`` takes them
    (None: not kept)."""
    return index.spec.lookup_args(docs)


def one_version(docs: list[RequestDoc]) -> None:
    """Refuse an insert-if-new that holds two versions of one document (one id, two fingerprints):
    only one of them could be indexed, and both would be answered as added."""
    if (found := two_versions(docs)) is not None:
        doc, other = docs[found[0]], docs[found[1]]
        raise bad(doc.position, f"its id is document {other.position}'s too, with another fingerprint: an "
                                "insert-if-new takes one version of a document", doc_id=doc.id)


def checked(doc: RequestDoc, matches: Matches) -> dict[str, Any]:
    """A checked document's answer: as ``check --json``, ``match_count`` when not all are listed."""
    answer = {"id": doc.id, "simhash": to_hex(doc.simhash), "matches": [m.to_dict() for m in matches]}
    if matches.total > len(matches):
        answer["match_count"] = matches.total
    return answer
