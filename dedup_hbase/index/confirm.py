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
``Index.sketched`` makes a text's sketch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ..errors import InvalidInput
from ..text.shorts import SHORT_FLAG
from ..text.units import WORDS, kept_sketch, near
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


def check_short(short: str | None) -> str | None:
    """``short`` (the short-text rule, text/units.py: ``WORDS``) checked; None: off. The rule of
    character sketches within T bits that indexes made before it recorded as a number is gone:
    such a number is refused in one line (make the index again)."""
    if short is not None and short != WORDS:
        if isinstance(short, int) and not isinstance(short, bool):
            raise InvalidInput(f"short={short}: the short-text rule by character sketches within {short} bits is "
                               f"gone; short texts are now near by their words (short={WORDS!r}, the default: "
                               "docs/quality.md): make the index again with this version", arguments=("short",))
        raise InvalidInput(f"short= is {WORDS!r} (the short-text rule) or None (off), not {short!r}",
                           arguments=("short",))
    return short


def parse_short(value: str | None, default: str | None = WORDS) -> str | None:
    """``--short-texts`` as given: not given, ``default`` (the rule is on by default); ``on``:
    ``WORDS``; ``off``: None (no rule); anything else refused."""
    if value is None:
        return default
    word = value.strip().lower()
    if word in ("on", WORDS):
        return WORDS
    if word == "off":
        return None
    hint = " (the sketch bits of the rule before are gone: short texts are near by their words)" if word.isdigit() else ""
    raise InvalidInput(f"--short-texts takes on or off, not {value!r}{hint}", arguments=("short",))


def check_kepts(sketches: Sequence[int], kepts: Sequence[str] | None, ids: Sequence[str] | None = None) -> None:
    """Under the short-text rule, each document's (or query's) kept text beside its sketch: a
    short text's sketch is ``units.kept_sketch`` of its kept text, another's has bit 0 clear and
    no kept text (""). The first that is not so is named (``ids``: by id)."""
    if kepts is None or len(kepts) != len(sketches):
        raise InvalidInput("this index matches short texts by their words (short='words'): give each "
                           "document's kept text (units.text_sketches) beside its sketch, or look texts up",
                           arguments=("short",))
    for n, (sketch, kept) in enumerate(zip(sketches, kepts)):
        if not isinstance(kept, str) or (kept_sketch(kept) if kept else int(sketch) & ~SHORT_FLAG) != int(sketch):
            who = f"document {ids[n]!r}" if ids is not None else f"query {n}"
            raise InvalidInput(f"{who}: a short text's sketch is its kept text's (units.text_sketches), and "
                               f"another's has bit 0 clear, not {kept!r} with sketch {int(sketch):#x}",
                               arguments=("short",))


def kept_of(sketches: Sequence[int] | None, kepts: Sequence[str] | None) -> dict[int, str]:
    """A short sketch -> its kept text, of documents' ``sketches`` and ``kepts`` (None: none):
    what ``sketches_agree`` decides a pair of short texts by."""
    return {int(s): k for s, k in zip(sketches or (), kepts or ()) if k}


def sketch_spec(spec: dict) -> dict:
    """The fingerprinter spec of an index's sketches: its own, with the seed plus ``SEED_STEP``."""
    return {**spec, "seed": (spec.get("seed", 0) + SEED_STEP) % (1 << 32)}


class Sketched(list):
    """Ids with their sketches (and kept texts: "" for all but short ones under the short-text
    rule) beside them, read with their cells elsewhere (the Spark check's runs): a run's ids as
    ``confirmed_runs`` reads them."""

    __slots__ = ("sketches", "kepts")

    def __init__(self, ids: Sequence[str], sketches: Sequence[int], kepts: Sequence[str] | None = None) -> None:
        super().__init__(ids)
        self.sketches = sketches
        self.kepts = kepts

    def with_sketches(self) -> Iterator[tuple[int, int, str]]:
        return zip(range(len(self)), self.sketches, self.kepts or [""] * len(self))


def confirmed_runs(found: Sequence[Sequence[Run]], sketches: Sequence[int], allowed: int | None,
                   short: str | None = None, kepts: Sequence[str] | None = None) -> list[list[Run]]:
    """``found`` (per query, its runs, at their distance from the query; their ids read from
    cells with sketches: ``candidates.Ids.with_sketches``) without the documents beyond
    ``CONFIRMED_BEYOND`` bits whose sketch is more than ``allowed`` bits from the query's
    (``sketches``, one per query), and with ``short`` (the short-text rule; ``kepts``, per query
    its kept text) at any distance those ``sketches_agree`` refuses (every run's ids read); runs
    left empty dropped. A run's ids are read once however many queries of ``found`` share it,
    and each query tests its distinct sketches, not its copies: a run whose ids all agree is
    kept as it is (100,000 copies of one text cost a query one test, not 100,000). Reads
    nothing from the store."""
    seen: dict[int, _Sketches] = {}  # per run's ids (shared between queries): its sketches, read once
    texts = kept_of(sketches, kepts)  # sketch -> kept text, of the queries and (as read) the cells
    out = []
    for runs, query in zip(found, sketches):
        kept = []
        for r in runs:
            if r.distance <= CONFIRMED_BEYOND and short is None:
                kept.append(r)
                continue
            held = seen.get(id(r.ids))
            if held is None:
                held = seen[id(r.ids)] = _Sketches(r.ids, texts)
            ids = held.agreeing(r.distance, query, allowed, short, texts)
            if ids:
                kept.append(r if ids is r.ids else Run(r.distance, r.simhash, ids))
        out.append(kept)
    return out


class _Sketches:
    """A run's ids by sketch (its distinct sketches, in order of first id), for ``confirmed_runs``;
    the kept texts its cells hold go into ``texts``. Decodes only the ids it returns of a run
    not all of whose sketches agree."""

    __slots__ = ("ids", "pairs", "distinct", "subsets")

    def __init__(self, ids: Sequence[str], texts: dict[int, str]) -> None:
        self.ids = ids  # held: the key of ``confirmed_runs``' ``seen`` is its id()
        self.pairs = []
        for position, sketch, kept in ids.with_sketches():
            self.pairs.append((position, sketch))
            if kept:
                texts[sketch] = kept
        self.distinct = list(dict.fromkeys(sketch for _, sketch in self.pairs))
        self.subsets: dict[tuple[bool, ...], list[str]] = {}

    def agreeing(self, distance: int, query: int, allowed: int | None, short: str | None,
                 texts: Mapping[int, str]) -> Sequence[str]:
        """The ids whose sketch ``sketches_agree`` lets match ``query``: ``ids`` itself when all do."""
        agree = tuple(bool(sketches_agree(distance, query, sketch, allowed, short, texts)) for sketch in self.distinct)
        if all(agree):
            return self.ids
        if agree not in self.subsets:
            keep = {sketch for sketch, yes in zip(self.distinct, agree) if yes}
            self.subsets[agree] = [self.ids[p] for p, sketch in self.pairs if sketch in keep]
        return self.subsets[agree]


def sketches_agree(distance, a, b, confirm: int | None, short: str | None, texts: Mapping[int, str] | None = None):
    """Whether two documents at ``distance`` bits with sketches ``a`` and ``b`` match: the one
    rule of every path (scalars, or numpy arrays of uint64 sketches elementwise). ``short``
    None (an index without the short-text rule): within 3 bits always, beyond only with
    ``confirm`` and the sketches within ``confirm`` bits. With ``short`` (text/units.py): a pair
    of which either is short (bit 0 of its sketch) matches, at any distance, only when both are
    and they keep one text (equal sketches: ``units.kept_sketch``) or their kept texts (``texts``:
    a short sketch -> its kept text) are ``units.near``; any other pair as without it."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.broadcast_arrays(np.asarray(a, np.uint64), np.asarray(b, np.uint64))
        plain = np.asarray(distance) <= CONFIRMED_BEYOND
        if confirm is not None:
            plain = plain | (np.bitwise_count(a ^ b) <= confirm)
        if short is None:
            return plain
        flag_a, flag_b = (a & np.uint64(SHORT_FLAG)) != 0, (b & np.uint64(SHORT_FLAG)) != 0
        out = np.where(flag_a | flag_b, flag_a & flag_b & (a == b), plain)
        for n in zip(*np.nonzero(flag_a & flag_b & (a != b))):
            out[n] = near(texts[int(a[n])], texts[int(b[n])])
        return out
    if short is not None and (a | b) & SHORT_FLAG:
        return bool(a & b & SHORT_FLAG) and (a == b or near(texts[a], texts[b]))
    return distance <= CONFIRMED_BEYOND or (confirm is not None and (a ^ b).bit_count() <= confirm)
