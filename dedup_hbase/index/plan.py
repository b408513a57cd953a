"""The space/time trade-off of each scheme for a corpus of N documents (no I/O).

Expected candidates assume uniformly spread fingerprints: each flag's prefix scan
returns N / 2^(segment bits) rows on average. An index of S signatures (text/signatures.py)
keeps S times the rows and bytes, and a lookup makes S times the scans and candidates; a probe
(``init --probes``) is one more lookup of its signature: its scans and candidates again. Real fingerprints are not uniform, so
measure bucket skew on a real index (``dedup-hbase stats``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

from ..errors import InvalidInput
from ..text.signatures import Signatures
from .costs import MEASURED
from .layout import KEY_BYTES, SIGNATURE_FLAGS, SKETCH_BYTES, Scheme

# An HBase KeyValue: key length 4 + value length 4 + row length 2 + row + family
# length 1 + family 1 + qualifier + timestamp 8 + type 1, before encoding/compression.
HBASE_CELL_OVERHEAD = 21


@dataclass(frozen=True)
class PlanRow:
    scheme: str
    blocks: int
    take: int
    max_k: int
    flags: int
    index_rows: int
    key_bytes: int
    hbase_bytes: int
    candidates: float
    signatures: int = 1  # per document: flags, rows, bytes and candidates are of all of them
    scans: int = 0  # prefix scans per lookup, probes included
    embedded_us: float = 0.0  # a batched lookup's µs, modelled from measured runs (costs.py)
    hbase_us: float = 0.0

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def plan(scheme: Scheme, docs: int, id_bytes: int = 16, signatures: int = 1, probes: int = 0,
         sketch: bool = False) -> PlanRow:
    """Rows, bytes, scans and candidates of ``scheme`` for ``docs`` documents of ``signatures``
    signatures, a lookup making ``probes`` probes in all (of every signature); ``sketch``: each
    cell's column also holds the document's sketch (an index with a confirmation: layout.py)."""
    flags = len(scheme.flags) * signatures
    rows = docs * flags
    lookups = signatures + probes
    candidates = lookups * sum(docs / 2 ** scheme.segment_bits(f) for f in range(1, len(scheme.flags) + 1))
    cell = KEY_BYTES + id_bytes + (SKETCH_BYTES if sketch else 0)
    scans = len(scheme.flags) * lookups
    return PlanRow(scheme.name, scheme.blocks, scheme.take, scheme.max_k, flags, rows, rows * cell,
                   rows * (cell + HBASE_CELL_OVERHEAD), candidates, signatures, scans,
                   MEASURED["embedded"].lookup_us(scans, candidates), MEASURED["hbase"].lookup_us(scans, candidates))


def plans(docs: int, k: int = 3, id_bytes: int = 16, signatures: Signatures = Signatures(),
          probes: int = 0, sketch: bool = False) -> list[PlanRow]:
    """``plan`` of every scheme that guarantees ``k`` (``schemes_for``; with several
    ``signatures``, those of at most 16 flags a signature), for ``docs`` documents, a lookup
    making ``probes`` probes in all, a ``sketch`` in each cell or not."""
    if isinstance(docs, bool) or not isinstance(docs, int) or docs < 1:
        raise InvalidInput(f"the number of documents must be at least 1, not {docs!r}")
    count = len(signatures)
    rows = [plan(s, docs, id_bytes, count, probes, sketch) for s in schemes_for(k)
            if count == 1 or len(s.flags) <= SIGNATURE_FLAGS]
    if not rows:
        raise InvalidInput(f"no scheme on the 13-byte row key guarantees k={k}"
                           f"{f' with {count} signatures' if count > 1 else ''}")
    return rows


def table(docs: int, k: int, id_bytes: int, rows: list[PlanRow], signatures: Signatures = Signatures(),
          probes: int = 0, sketch: bool = False) -> str:
    """``plans`` as a table for people (``dedup-hbase plan``), sizes in B, KB, MB, ... (powers of 1000)."""
    lines = [f"{docs:,} documents, k={k}, ids of {id_bytes} bytes"
             f"{f', signatures {signatures.label} (rows and scans of all)' if len(signatures) > 1 else ''}"
             f"{f', {probes} probes a lookup' if probes else ''}"
             f"{f', a sketch in each cell (+{SKETCH_BYTES} bytes)' if sketch else ''}"
             " (uniform fingerprints assumed)",
             f"{'scheme':>7} {'flags':>5} {'max k':>5} {'index rows':>16} {'key bytes':>10} "
             f"{'HBase bytes':>11} {'candidates/lookup':>17}" + (f" {'scans/lookup':>12}" if probes else "")
             + f" {'µs/lookup embedded':>18} {'HBase':>8}"]
    best = {name: min(getattr(r, name) for r in rows) for name in ("embedded_us", "hbase_us")}
    lines += [f"{r.scheme:>7} {r.flags:>5} {r.max_k:>5} {r.index_rows:>16,} {human_bytes(r.key_bytes):>10} "
              f"{human_bytes(r.hbase_bytes):>11} {r.candidates:>17,.1f}" + (f" {r.scans:>12}" if probes else "")
              + "".join(f" {getattr(r, name):>{width - 1},.0f}{'*' if getattr(r, name) == best[name] else ' '}"
                        for name, width in (("embedded_us", 18), ("hbase_us", 8))).rstrip()
              for r in rows]
    lines += ["* the least per store: the scheme `init --docs N` takes there. µs/lookup = fixed + scans x per scan"
              " + candidates x per candidate,", "  fitted to measured checks of 10^5 queries: lookups/s (candidates a"
              " lookup) (dedup_hbase/index/costs.py):"]
    for c in MEASURED.values():
        lines += [f"  {c.store}: {c.fixed:,.0f} + {c.per_scan:,.1f}/scan + {c.per_candidate:,.3f}/candidate µs, from "
                  + ", ".join(f"{r.scheme}-split at {_power(r.docs)} {r.lookups_per_s:,.0f}/s ({r.candidates:,.0f})"
                              for r in c.runs), f"    ({c.basis})"]
        if c.beyond:
            lines += ["    measured beyond the fit, not in it: µs a lookup (the model's): "
                      + ", ".join(f"{b.scheme}-split at {_power(b.docs)} {1e6 / b.lookups_per_s:,.0f} "
                                  f"({modelled_us(c, Scheme.parse(b.scheme), b.docs):,.0f})" for b in c.beyond),
                      f"    ({c.beyond_basis})"]
    return "\n".join(lines)


def modelled_us(costs, scheme: Scheme, docs: int) -> float:
    """The µs of a lookup (one signature, no probes) that ``costs`` (a store's) model for
    ``scheme`` at ``docs`` uniform documents."""
    return costs.lookup_us(len(scheme.flags), plan(scheme, docs).candidates)


def _power(n: int) -> str:
    """10^6 for a power of ten, else the number."""
    digits = str(n)
    return f"10^{len(digits) - 1}" if digits.strip("0") == "1" else f"{n:,}"


def human_bytes(n: float) -> str:
    """``116.0 GB``: a byte count in decimal units, one decimal place (whole bytes below 1 KB)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} EB"


def schemes_for(k: int) -> list[Scheme]:
    """The classic 4- and 5-split where they suffice, and every B blocks taken m at a
    time with B - m = k that fits the row key (flags <= 255, segments <= 32 bits)."""
    found = [Scheme(4, 1), Scheme(5, 2)] if k <= 3 else []
    for blocks in range(k + 1, 65):
        take = blocks - k
        if comb(blocks, take) > 255:
            continue
        try:
            scheme = Scheme(blocks, take)
        except ValueError:
            continue
        if scheme not in found:
            found.append(scheme)
    return found


def best_scheme(k: int, docs: int = 10**9, store: str = "embedded") -> Scheme:
    """The scheme for ``k`` whose batched lookup costs least at ``docs`` documents on ``store``
    ("embedded" or "hbase"), by the costs measured on each (costs.py); fewer flags on a tie."""
    options = schemes_for(k)
    if not options:
        raise InvalidInput(f"no scheme on a 13-byte row key guarantees k={k}")
    costs = MEASURED[store]
    return min(options, key=lambda s: (round(modelled_us(costs, s, docs), 1), len(s.flags)))


def choose_scheme(k: int, scheme: Scheme | str | int | None = None) -> Scheme:
    """The scheme of a new index: ``scheme`` as given (parsed), else the 4-split for
    k <= 3, else ``best_scheme(k)``. Does not check that the scheme guarantees k."""
    if isinstance(scheme, Scheme):
        return scheme
    if scheme is not None:
        return Scheme.parse(scheme)
    return Scheme(4, 1) if isinstance(k, int) and k <= 3 else best_scheme(k)
