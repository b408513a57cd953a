"""The confirmation of matches beyond 3 bits (``init --confirm T``): a second SimHash per document.

A 64-bit SimHash within k bits estimates the angle between two texts' weighted features; at k = 3
two different texts rarely come that close, at k = 8 some do (docs/quality.md: 0.002 false
matches per lookup on the news corpus). An index with a confirmation keeps, per document, a
second SimHash of the same features hashed with another seed (the index's seed plus one: an
independent estimate of the same angle), its *sketch*, in the document's row after the
signatures' simhashes. A candidate within 3 bits matches as in any index; a candidate beyond 3
bits (up to k, under any signature or probe) matches only when its sketch is within ``T`` bits of
the query's (Henzinger, SIGIR 2006: confirm SimHash candidates with a second signal). Measured on
docs/quality.md's harness: at k = 8 and T = 14 the false matches go from 0.0020 per lookup to none,
recall from 0.897 to 0.895.

The sketches of the candidates beyond 3 bits are read from their document rows: one read of the
rows of a lookup batch's such candidates (none when every candidate is within 3 bits; in an index
with a TTL too, the expiry's read of the batch's rows serves it: lookup.py). This
module does no fingerprinting; ``Index.sketch`` makes a text's sketch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInput
from .candidates import Run
from .ids import encode_id

CONFIRMED_BEYOND = 3  # matches within this many bits need no confirmation
SEED_STEP = 1         # the sketch's mmh3 seed: the index's seed plus this


def check_confirm(confirm: int | None, k: int, probes: bool = False) -> int | None:
    """``confirm`` (the sketch bits allowed, T) checked against ``k`` (matches beyond 3 bits come
    from a k above 3, or from ``probes``: k + 1 bits where only a probe reached); None: none."""
    if confirm is None:
        return None
    if isinstance(confirm, bool) or not isinstance(confirm, int) or not 0 <= confirm <= 64:
        raise InvalidInput(f"--confirm is the bits two sketches may differ in, 0 to 64, not {confirm!r}")
    if k <= CONFIRMED_BEYOND and not probes:
        raise InvalidInput(f"--confirm confirms matches beyond {CONFIRMED_BEYOND} bits: give --k above "
                           f"{CONFIRMED_BEYOND} (such as --k 8 --confirm 14) or --probes, not --k {k} alone")
    return confirm


def sketch_spec(spec: dict) -> dict:
    """The fingerprinter spec of an index's sketches: its own, with the seed plus ``SEED_STEP``."""
    return {**spec, "seed": (spec.get("seed", 0) + SEED_STEP) % (1 << 32)}


def confirmed_runs(store, found: Sequence[Sequence[Run]], sketches: Sequence[int], allowed: int,
                   at: int) -> list[list[Run]]:
    """``found`` (per query, its runs, at their distance from the query) without the documents
    beyond ``CONFIRMED_BEYOND`` bits whose sketch (8 bytes at ``at`` of their document row) is
    more than ``allowed`` bits from the query's (``sketches``, one per query) or that have no
    row; runs left empty dropped. One read of the rows of every such document."""
    ids = sorted({i for runs in found for r in runs if r.distance > CONFIRMED_BEYOND for i in r.ids})
    if not ids:
        return [list(runs) for runs in found]
    values = store.get("docs", [encode_id(i) for i in ids])
    stored = {i: int.from_bytes(v[at:at + 8], "big") for i, v in zip(ids, values) if v is not None and len(v) >= at + 8}
    out = []
    for runs, query in zip(found, sketches):
        kept = [r if r.distance <= CONFIRMED_BEYOND else
                Run(r.distance, r.simhash, [i for i in r.ids if i in stored and (stored[i] ^ query).bit_count() <= allowed])
                for r in runs]
        out.append([r for r in kept if r.ids])
    return out
