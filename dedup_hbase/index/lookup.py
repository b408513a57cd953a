"""The lookup: the indexed documents within k bits of each of some fingerprints.

One path for one fingerprint and for millions (``Index.query``, ``Index.query_many``): per batch
of at most ``BATCH`` queries, their scan prefixes deduplicated and scanned in key order in one
store call (``candidates.plan``), each distinct indexed fingerprint compared once with each query
(``candidates.runs``: the compare policy), with a TTL the expired documents left out
(``retention.unexpired_runs``), then per query its first matches and their count
(``candidates.bounded``). One query's answer is a ``Matches``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import starmap
from typing import Any, NamedTuple

from ..errors import InvalidInput
from ..text.fingerprint import to_hex
from .candidates import Run, bounded, plan, runs
from .layout import Scheme
from .retention import unexpired_runs
from .store import Store

BATCH = 4096  # queries planned, scanned and compared together (bounds memory)


class Match(NamedTuple):
    id: str
    simhash: int
    distance: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "simhash": to_hex(self.simhash), "distance": self.distance}


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
           ttl: int | None = None) -> list[Matches]:
    """Per simhash (checked: ``check_queries``; ``k`` checked by the caller), its ``Matches``
    in ``store``'s index: at most ``max_matches`` (None: all) and the count; with ``ttl``
    (seconds), only documents younger than it (retention.py)."""
    out: list[Matches] = []
    for start in range(0, len(simhashes), BATCH):
        queries = simhashes[start:start + BATCH]
        prefixes, inverse = plan(scheme, queries)
        found = runs(queries, store.scan_cells("index", prefixes), inverse, k)
        if ttl:
            found = unexpired_runs(store, found, ttl)
        for query_runs in found:
            listed, total = bounded(query_runs, max_matches)
            out.append(Matches(list(starmap(Match, listed)), total, query_runs))
    return out
