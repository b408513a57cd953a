"""The lookup: the indexed documents within k bits of each of some fingerprints.

One path for one fingerprint and for millions (``Index.query``, ``Index.query_many``): per batch
of at most ``BATCH`` queries, their scan prefixes deduplicated and scanned in key order in one
store call (``candidates.plan``), each distinct indexed fingerprint compared once with each query
(``candidates.runs``: the compare policy), with a TTL the expired documents left out
(``retention.unexpired_runs``), then per query its first matches and their count
(``candidates.bounded``). One query's answer is a ``Matches``.

An index of several signatures (text/signatures.py) looks each signature up in its own flags and
merges the answers per query (``merged``): each document once, at its nearest signature (the
first signature on a tie), named in ``Match.signature``. A lookup with *probes* (Sood and
Loguinov, CIKM 2011) also looks up each query with one of its least sure bits flipped
(``Fingerprinter.uncertain_bits``; ``probed``): the documents within k bits of a probe, at their
distance from the query itself, which may be more than k.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import starmap
from typing import Any, NamedTuple

from ..errors import InvalidInput
from ..text.fingerprint import hamming, to_hex
from .candidates import Run, bounded, plan, runs
from .layout import Scheme
from .retention import unexpired_runs
from .store import Store

BATCH = 4096  # queries planned, scanned and compared together (bounds memory)


class Match(NamedTuple):
    """A document within k bits: its fingerprint and distance under ``signature`` (None in an
    index of one signature; else the name of the signature that found it, ``body`` first)."""

    id: str
    simhash: int
    distance: int
    signature: str | None = None

    def __repr__(self) -> str:  # an index of one signature: as before signatures existed
        shown = f"Match(id={self.id!r}, simhash={self.simhash!r}, distance={self.distance!r}"
        return shown + (")" if self.signature is None else f", signature={self.signature!r})")

    def to_dict(self) -> dict[str, Any]:
        found = {"id": self.id, "simhash": to_hex(self.simhash), "distance": self.distance}
        return found if self.signature is None else {**found, "signature": self.signature}


class Matches(list):
    """One query's answer, a list of its ``Match``es by (distance, id): each document once (at
    its nearest fingerprint), at most ``max_matches`` of them.

    ``total``: the match count, how many documents are within k bits in all (distinct ids:
    candidates.py); more than ``len(self)`` exactly when some are not listed. ``runs``: the
    indexed fingerprints within k bits with every one of their documents (``candidates.Run``,
    by (distance, simhash); ids read when asked for), for a caller that must reach every copy
    of a fingerprint without listing them (``load --skip-near-dups`` and ``--groups``)."""

    __slots__ = ("total", "runs")

    def __init__(self, matches: Sequence[Match] = (), total: int | None = None,
                 runs: Sequence[Run] = ()) -> None:
        super().__init__(matches)
        self.total = len(self) if total is None else total
        self.runs = runs


def check_queries(simhashes: Sequence[int], max_matches: int | None) -> None:
    """Refuse a simhash that is not an unsigned 64-bit int, or a ``max_matches`` that is
    neither None nor a whole number >= 1 (InvalidInput)."""
    if max_matches is not None and (isinstance(max_matches, bool) or not isinstance(max_matches, int)
                                    or max_matches < 1):
        raise InvalidInput(f"max_matches is a whole number >= 1, not {max_matches!r}")
    for s in simhashes:
        if not isinstance(s, int) or not 0 <= s < 1 << 64:
            raise InvalidInput(f"a simhash is an unsigned 64-bit int, not {s!r}")


def lookup(store: Store, scheme: Scheme, simhashes: Sequence[int], k: int, max_matches: int | None,
           ttl: int | None = None, head: int = 8) -> list[Matches]:
    """Per simhash (checked: ``check_queries``; ``k`` checked by the caller), its ``Matches``
    in ``store``'s index: at most ``max_matches`` (None: all) and the count; with ``ttl``
    (seconds), only documents younger than it (retention.py; ``head``: the simhash bytes that
    open a document row)."""
    out: list[Matches] = []
    for start in range(0, len(simhashes), BATCH):
        queries = simhashes[start:start + BATCH]
        prefixes, inverse = plan(scheme, queries)
        found = runs(queries, store.scan_cells("index", prefixes), inverse, k)
        if ttl:
            found = unexpired_runs(store, found, ttl, head=head)
        for query_runs in found:
            listed, total = bounded(query_runs, max_matches)
            out.append(Matches(list(starmap(Match, listed)), total, query_runs))
    return out


def merged(names: Sequence[str], answers: Sequence[Sequence[Matches]], max_matches: int | None) -> list[Matches]:
    """Per query, the ``Matches`` of every signature (``answers[j]``: signature ``names[j]``'s,
    each bounded by ``max_matches``, or ``probed``'s, unbounded) as one: each document at its
    nearest signature (on a tie the first), by (distance, id), the first ``max_matches``.
    Exact: a document among the first ``max_matches`` of the union is among the first of the
    answer that is nearest to it. ``total`` counts the distinct documents (every id of the runs
    read, when more than one answer found some); ``runs`` are every answer's."""
    out = []
    for per_query in zip(*answers):
        best: dict[str, Match] = {}
        for name, matches in zip(names, per_query):
            for m in matches:
                if m.id not in best or m.distance < best[m.id].distance:
                    best[m.id] = Match(m.id, m.simhash, m.distance, name)
        listed = sorted(best.values(), key=lambda m: (m.distance, m.id))[:max_matches]
        hit = [matches for matches in per_query if matches.total]
        total = hit[0].total if len(hit) == 1 else len({i for m in hit for run in m.runs for i in run.ids})
        out.append(Matches(listed, total, [run for m in per_query for run in m.runs]))
    return out


def probed(store: Store, scheme: Scheme, simhashes: Sequence[int], masks: Sequence[Sequence[int]], k: int,
           ttl: int | None = None, head: int = 8) -> list[Matches]:
    """Per simhash, every document within ``k`` bits of one of its probes (the simhash with the
    bits of one of its ``masks`` flipped), each once, at its distance from the simhash itself
    (more than k where only a probe reached it), by (distance, id); ``total`` the distinct
    documents; ``runs`` as each probe found them. Every match is listed: a probe's own order is
    not the query's, so ``merged`` bounds them."""
    flat = [(i, q ^ m) for i, (q, ms) in enumerate(zip(simhashes, masks)) for m in ms]
    found = lookup(store, scheme, [p for _, p in flat], k, None, ttl, head)
    best: list[dict[str, Match]] = [{} for _ in simhashes]
    runs_of: list[list[Run]] = [[] for _ in simhashes]
    for (i, _), matches in zip(flat, found):
        runs_of[i].extend(matches.runs)
        for m in matches:
            distance = hamming(m.simhash, simhashes[i])
            if m.id not in best[i] or distance < best[i][m.id].distance:  # a stale id: at its nearest
                best[i][m.id] = Match(m.id, m.simhash, distance)
    return [Matches(sorted(near.values(), key=lambda m: (m.distance, m.id)), len(near), runs)
            for near, runs in zip(best, runs_of)]
