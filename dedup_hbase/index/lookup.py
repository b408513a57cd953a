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
from .candidates import Run, Split, bounded, plan, runs
from .confirm import CONFIRMED_BEYOND, check_kepts, confirmed_runs
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
    of a fingerprint without listing them (``load --skip-near-dups`` and ``--groups``);
    ``run_signatures``: in an index of several signatures, the name of each run's signature
    (a run is the documents of one fingerprint under it), else None."""

    __slots__ = ("total", "runs", "run_signatures")

    def __init__(self, matches: Sequence[Match] = (), total: int | None = None,
                 runs: Sequence[Run] = (), run_signatures: Sequence[str] | None = None) -> None:
        super().__init__(matches)
        self.total = len(self) if total is None else total
        self.runs = runs
        self.run_signatures = run_signatures


def check_queries(simhashes: Sequence[int], max_matches: int | None) -> None:
    """Refuse a simhash that is not an unsigned 64-bit int, or a ``max_matches`` that is
    neither None nor a whole number >= 1 (InvalidInput)."""
    if max_matches is not None and (isinstance(max_matches, bool) or not isinstance(max_matches, int)
                                    or max_matches < 1):
        raise InvalidInput(f"max_matches is a whole number >= 1, not {max_matches!r}")
    for s in simhashes:
        if not isinstance(s, int) or not 0 <= s < 1 << 64:
            raise InvalidInput(f"a simhash is an unsigned 64-bit int, not {s!r}")


class Confirm(NamedTuple):
    """A lookup's confirmation (confirm.py): per query its sketch, the sketch bits allowed, and
    under the short-text rule per query its kept text."""

    sketches: Sequence[int]
    allowed: int | None
    short: str | None = None
    kepts: Sequence[str] | None = None  # the short-text rule: per query its kept text (text/units.py)


def confirmation(allowed: int | None, k: int, probes: bool, simhashes: Sequence[int],
                 sketches: Sequence[int] | None, short: str | None = None,
                 kepts: Sequence[str] | None = None) -> Confirm | None:
    """The confirmation of a lookup of ``simhashes`` within ``k`` bits in an index that allows
    ``allowed`` sketch bits (None: an index without a confirmation; ``probes``: it probes, so
    matches reach k + 1): None where none applies (no confirmation, or nothing beyond 3 bits);
    refuses sketches an index does not take, and a lookup without them that needs them. ``short``:
    the index's short-text rule (text/units.py), which applies at any distance, with per query its
    kept text (``kepts``: "" but for a short one, ``check_kepts``)."""
    if short is not None:
        if sketches is None or len(sketches) != len(simhashes):
            raise InvalidInput("this index matches short texts by their words (short=): look a text up "
                               "(query TEXT, check; Index.query_text), or give each query's sketch",
                               arguments=("short",))
        check_queries(sketches, None)
        check_kepts(sketches, kepts)
        return Confirm(sketches, allowed, short, kepts)
    if allowed is None:
        if sketches is not None:
            raise InvalidInput("this index keeps no sketch (made without confirm=): give no sketches", arguments=("confirm",))
        return None
    if k <= CONFIRMED_BEYOND and not probes:  # no match beyond 3 bits
        return None
    if sketches is None or len(sketches) != len(simhashes):
        raise InvalidInput(f"this index confirms matches beyond {CONFIRMED_BEYOND} bits by a sketch of the "
                           "text (confirm=): look a text up (query TEXT, check; Index.query_text), or give each "
                           "query's sketch", arguments=("confirm",))
    check_queries(sketches, None)
    return Confirm(sketches, allowed)


def lookup(store: Store, scheme: Scheme, simhashes: Sequence[int], k: int, max_matches: int | None,
           ttl: int | None = None, head: int = 8, confirm: Confirm | None = None,
           split: Split | None = None) -> list[Matches]:
    """Per simhash (checked: ``check_queries``; ``k`` checked by the caller), its ``Matches``
    in ``store``'s index: at most ``max_matches`` (None: all) and the count; with ``confirm``,
    beyond 3 bits only the documents whose sketch it confirms (confirm.py: the sketches are in
    the cells, ``split`` reads them; an index with a confirmation gives ``split`` whether or not
    a lookup confirms); with ``ttl`` (seconds), only documents younger than it (retention.py;
    ``head``: the bytes that open a document row before its metadata)."""
    out: list[Matches] = []
    for start in range(0, len(simhashes), BATCH):
        queries = simhashes[start:start + BATCH]
        prefixes, inverse = plan(scheme, queries)
        found = runs(queries, store.scan_cells("index", prefixes), inverse, k, split)
        if confirm is not None:
            found = confirmed_runs(found, confirm.sketches[start:start + BATCH], confirm.allowed, confirm.short,
                                   None if confirm.kepts is None else confirm.kepts[start:start + BATCH])
        if ttl:
            found = unexpired_runs(store, found, ttl, head=head)
        for query_runs in found:
            listed, total = bounded(query_runs, max_matches)
            out.append(Matches(list(starmap(Match, listed)), total, query_runs))
    return out


def merged(names: Sequence[str], answers: Sequence[Sequence[Matches]], max_matches: int | None) -> list[Matches]:
    """Per query, the answers of every signature and probe (``answers[j]``, of signature
    ``names[j]``, each bounded by ``max_matches`` and ordered by distance from the query) as one:
    each document at its nearest signature (on a tie the first), by (distance, id), the first
    ``max_matches``. Exact: a document among the first ``max_matches`` of the union is among the
    first of the answer that is nearest to it. ``total`` counts the distinct documents (when
    more than one answer found some: every id of their runs read, once for the queries that
    share those runs); ``runs`` are every answer's."""
    out, counted = [], {}  # the distinct documents of a set of runs (shared by the queries of a batch), once
    for per_query in zip(*answers):
        best: dict[str, Match] = {}
        for name, matches in zip(names, per_query):
            for m in matches:
                if m.id not in best or m.distance < best[m.id].distance:
                    best[m.id] = Match(m.id, m.simhash, m.distance, name)
        listed = sorted(best.values(), key=lambda m: (m.distance, m.id))[:max_matches]
        hit = [matches for matches in per_query if matches.total]
        if len(hit) == 1:
            total = hit[0].total
        else:
            key = tuple(sorted(id(run.ids) for m in hit for run in m.runs))
            if key not in counted:
                counted[key] = len({i for m in hit for run in m.runs for i in run.ids})
            total = counted[key]
        out.append(Matches(listed, total, [run for m in per_query for run in m.runs],
                           [name for name, m in zip(names, per_query) for _ in m.runs]))
    return out


def probed(store: Store, scheme: Scheme, simhashes: Sequence[int], masks: Sequence[Sequence[int]], k: int,
           max_matches: int | None, ttl: int | None = None, head: int = 8,
           confirm: Confirm | None = None, split: Split | None = None) -> list[Matches]:
    """Per simhash, the documents within ``k`` bits of one of its probes (the simhash with the
    bits of one of its ``masks`` flipped), at their distance from the simhash itself (more than
    k where only a probe reached them): ``lookup``'s answer with the runs every probe found, each
    fingerprint once, at that distance (``confirm``: beyond 3 bits of it, confirmed). Skew-proof
    as a lookup: a run's ids are read when listed."""
    flat = [(i, q ^ m) for i, (q, ms) in enumerate(zip(simhashes, masks)) for m in ms]
    found = lookup(store, scheme, [p for _, p in flat], k, 1, split=split)
    near: list[dict[int, Run]] = [{} for _ in simhashes]
    for (i, _), matches in zip(flat, found):
        for run in matches.runs:
            if run.simhash not in near[i]:
                near[i][run.simhash] = Run(hamming(run.simhash, simhashes[i]), run.simhash, run.ids)
    joined: list[list[Run]] = [list(runs_of.values()) for runs_of in near]
    if confirm is not None:
        joined = confirmed_runs(joined, confirm.sketches, confirm.allowed, confirm.short, confirm.kepts)
    if ttl:
        joined = unexpired_runs(store, joined, ttl, head=head)
    out = []
    for runs_of in joined:
        query_runs = sorted(runs_of, key=lambda r: (r.distance, r.simhash))
        listed, total = bounded(query_runs, max_matches)
        out.append(Matches(list(starmap(Match, listed)), total, query_runs))
    return out


def signed_lookup(store: Store, schemes: Sequence[Scheme], names: list, columns: Sequence[Sequence[int]],
                  probes: Sequence[Sequence[Sequence[int]]] | None, k: int, max_matches: int | None,
                  ttl: int | None, head: int, confirm: Confirm | None = None,
                  split: Split | None = None) -> list[Matches]:
    """The lookup of an index's queries: per signature j (``schemes[j]``, named ``names[j]``:
    None for an index of one signature) the queries' ``columns[j]``, and with ``probes`` (per
    query, per signature, the bits to flip) each probe; merged per query (``merged``); each
    answer beyond 3 bits ``confirm``ed (``split``: ``lookup``'s)."""
    answers = [lookup(store, scheme, column, k, max_matches, ttl, head, confirm, split)
               for scheme, column in zip(schemes, columns)]
    signature = list(range(len(columns)))
    for j, (scheme, column) in enumerate(zip(schemes, columns)):
        masks = [p[j] if j < len(p) else () for p in probes or ()]
        if any(masks):
            answers.append(probed(store, scheme, column, masks, k, max_matches, ttl, head, confirm, split))
            signature.append(j)
    if len(answers) == 1 and names == [None]:
        return answers[0]
    return merged([names[j] for j in signature], answers, max_matches)


def parse_probes(text: Sequence[int] | str | int | None) -> tuple[int, ...]:
    """``"8,4"`` (or a list, as an index's metadata keeps it) -> (8, 4); None -> ()."""
    if text is None:
        return ()
    if isinstance(text, int) and not isinstance(text, bool):
        return (text,)
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        return tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise InvalidInput(f"probes are whole numbers, one per signature (8 or 8,4), not {text!r}") from None


def check_probes(probes: Sequence[int], signatures: int) -> tuple[int, ...]:
    """``probes`` for each of ``signatures`` signatures (0 for those not given), each 0..64."""
    if len(probes) > signatures:
        raise InvalidInput(f"{len(probes)} probe counts for {signatures} signature{'s' if signatures > 1 else ''}: "
                           "give one per signature, the body's first")
    for count in probes:
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 64:
            raise InvalidInput(f"a probe count is a whole number from 0 to 64, not {count!r}")
    return tuple(probes) + (0,) * (signatures - len(probes))
