"""The confirmation of matches beyond 3 bits (``init --confirm T``): a second SimHash per document.

A 64-bit SimHash within k bits estimates the angle between two texts' weighted features; at k = 3
two different texts rarely come that close, at k = 8 some do (docs/quality.md: 0.002 false
matches per lookup on the news corpus). An index with a confirmation keeps, per document, a
second SimHash of the same features hashed with another seed (the index's seed plus one: an
independent estimate of the same angle), its *sketch*. A candidate within 3 bits matches as in
any index; a candidate beyond 3 bits (up to k, under any signature or probe) matches only when its
sketch is within ``T`` bits of the query's (Henzinger, SIGIR 2006: confirm SimHash candidates with
a second signal). Measured on docs/quality.md's harness: at k = 8 and T = 14 the false matches go
from 0.0020 per lookup to none, recall from 0.897 to 0.895.

The sketch is kept in each of the document's index cells, beside its id in the cell's column
(layout.py: ``cell_qualifier``), so a lookup confirms what it scans with no read beyond the scan;
the document row keeps it too, after the signatures' simhashes (what a rewrite or a delete
needs to find the old cells). This module does no fingerprinting;
``Index.sketch`` makes a text's sketch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..errors import InvalidInput
from ..text.shorts import MEASURED_BITS, SHORT_FLAG
from .candidates import Run

CONFIRMED_BEYOND = 3  # matches within this many bits need no confirmation
SEED_STEP = 1         # the sketch's mmh3 seed: the index's seed plus this


def check_confirm(confirm: int | None, k: int, probes: bool = False) -> int | None:
    """``confirm`` (the sketch bits allowed, T) checked against ``k`` (matches beyond 3 bits come
    from a k above 3, or from ``probes``: k + 1 bits where only a probe reached); None: none."""
    if confirm is None:
        return None
    if isinstance(confirm, bool) or not isinstance(confirm, int) or not 0 <= confirm <= 64:
        raise InvalidInput(f"confirm= is the bits two sketches may differ in, 0 to 64, not {confirm!r}",
                           arguments=("confirm",))
    if k <= CONFIRMED_BEYOND and not probes:
        raise InvalidInput(f"confirm= confirms matches beyond {CONFIRMED_BEYOND} bits: give k= above "
                           f"{CONFIRMED_BEYOND} (such as k=8 confirm=14) or probes=, not k={k} alone",
                           arguments=("confirm", "k", "probes"))
    return confirm


def check_short(short: int | None) -> int | None:
    """``short`` (the sketch bits two short texts may differ in, text/shorts.py) checked; None: off."""
    if short is not None and (isinstance(short, bool) or not isinstance(short, int) or not 0 <= short <= 64):
        raise InvalidInput(f"short= is the bits two short texts' sketches may differ in, 0 to 64, not {short!r}",
                           arguments=("short",))
    return short


def parse_short(value: str | int | None, default: int | None = MEASURED_BITS) -> int | None:
    """``--short-texts`` as given: not given, ``default`` (the measured bits: the rule is on by
    default); ``off``: None (no rule); else a whole number of bits, checked (``check_short``)."""
    if value is None:
        return default
    if isinstance(value, str):
        if value.strip().lower() == "off":
            return None
        if not value.strip().isdigit():
            raise InvalidInput(f"short= takes off or the bits two short texts' sketches may differ in, 0 to 64, "
                               f"not {value!r}", arguments=("short",))
        value = int(value)
    return check_short(value)


def sketch_spec(spec: dict) -> dict:
    """The fingerprinter spec of an index's sketches: its own, with the seed plus ``SEED_STEP``."""
    return {**spec, "seed": (spec.get("seed", 0) + SEED_STEP) % (1 << 32)}


class Sketched(list):
    """Ids with their sketches beside them, read with their cells elsewhere (the Spark check's
    runs): a run's ids as ``confirmed_runs`` reads them."""

    __slots__ = ("sketches",)

    def __init__(self, ids: Sequence[str], sketches: Sequence[int]) -> None:
        super().__init__(ids)
        self.sketches = sketches

    def with_sketches(self) -> Iterator[tuple[str, int]]:
        return zip(self, self.sketches)


def confirmed_runs(found: Sequence[Sequence[Run]], sketches: Sequence[int], allowed: int | None,
                   short: int | None = None) -> list[list[Run]]:
    """``found`` (per query, its runs, at their distance from the query; their ids read from
    cells with sketches: ``candidates.Ids.with_sketches``) without the documents beyond
    ``CONFIRMED_BEYOND`` bits whose sketch is more than ``allowed`` bits from the query's
    (``sketches``, one per query), and with ``short`` (the short-text rule) at any distance
    those ``sketches_agree`` refuses (every run's ids read); runs left empty dropped. A run's
    ids are read once however many queries of ``found`` share it, and each query tests its
    distinct sketches, not its copies: a run whose ids all agree is kept as it is (100,000
    copies of one text cost a query one test, not 100,000). Reads nothing from the store."""
    seen: dict[int, _Sketches] = {}  # per run's ids (shared between queries): its sketches, read once
    out = []
    for runs, query in zip(found, sketches):
        kept = []
        for r in runs:
            if r.distance <= CONFIRMED_BEYOND and short is None:
                kept.append(r)
                continue
            held = seen.get(id(r.ids))
            if held is None:
                held = seen[id(r.ids)] = _Sketches(r.ids)
            ids = held.agreeing(r.distance, query, allowed, short)
            if ids:
                kept.append(r if ids is r.ids else Run(r.distance, r.simhash, ids))
        out.append(kept)
    return out


class _Sketches:
    """A run's ids by sketch (its distinct sketches, in order of first id), for ``confirmed_runs``."""

    __slots__ = ("ids", "pairs", "distinct", "subsets")

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids  # held: the key of ``confirmed_runs``' ``seen`` is its id()
        self.pairs = list(ids.with_sketches())
        self.distinct = list(dict.fromkeys(sketch for _, sketch in self.pairs))
        self.subsets: dict[tuple[bool, ...], list[str]] = {}

    def agreeing(self, distance: int, query: int, allowed: int | None, short: int | None) -> Sequence[str]:
        """The ids whose sketch ``sketches_agree`` lets match ``query``: ``ids`` itself when all do."""
        agree = tuple(bool(sketches_agree(distance, query, sketch, allowed, short)) for sketch in self.distinct)
        if all(agree):
            return self.ids
        if agree not in self.subsets:
            keep = {sketch for sketch, yes in zip(self.distinct, agree) if yes}
            self.subsets[agree] = [i for i, sketch in self.pairs if sketch in keep]
        return self.subsets[agree]


def sketches_agree(distance, a, b, confirm: int | None, short: int | None):
    """Whether two documents at ``distance`` bits with sketches ``a`` and ``b`` match: the one
    rule of every path (scalars, or numpy arrays of uint64 sketches elementwise). ``short``
    None (an index without the short-text rule, text/shorts.py): within 3 bits always, beyond
    only with ``confirm`` and the sketches within ``confirm`` bits. With ``short``: a pair of
    which either is short (bit 0 of its sketch) matches, at any distance, only when both are
    and their sketches are within ``short`` bits; any other pair as without it."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
        apart = np.bitwise_count(a ^ b)
        plain = (np.asarray(distance) <= CONFIRMED_BEYOND) | ((apart <= confirm) if confirm is not None else False)
        if short is None:
            return plain
        flag_a, flag_b = (a & np.uint64(SHORT_FLAG)) != 0, (b & np.uint64(SHORT_FLAG)) != 0
        return np.where(flag_a | flag_b, flag_a & flag_b & (apart <= short), plain)
    apart = (a ^ b).bit_count()
    if short is not None and (a | b) & SHORT_FLAG:
        return bool(a & b & SHORT_FLAG) and apart <= short
    return distance <= CONFIRMED_BEYOND or (confirm is not None and apart <= confirm)
