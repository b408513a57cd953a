"""What a lookup costs on each store, from measured runs, and so which scheme suits N documents.

A batched lookup (``check``) of a scheme at N documents costs, per lookup, about

    fixed + scans x per_scan + candidates x per_candidate

where ``scans`` are the scheme's prefix scans (its flags) and ``candidates`` the cells they return
(plan.py: N / 2^segment bits a flag for uniform fingerprints). The three figures of each store are
fitted (least squares) to whole ``check --fingerprints --json`` commands of the scale bench
(``scripts/bench scale``, docs/benchmarks.md "Scale"; 10^5 queries, half near an indexed
fingerprint): the 4- and the 5-split at 10^5 documents, where the candidates are few and the scans
tell, at 10^6 and (embedded) 10^7, where the candidates tell. A run's candidates are the cells its lookups
read on average, counted on its own index and queries (the bench's planted copies included: one
fingerprint's 1,000 or 10,000 copies triple the 4-split's reads at 10^5). The start of the command
is in ``fixed``. ``MEASURED`` holds those runs, so that ``plan`` can show what its choice rests on;
the fit is made from them when this module is imported. It also holds the checks measured at
larger sizes that the fit leaves out (``Beyond``), so that ``plan`` shows the model's figure
beside what was measured there.

What this does not model: the load (the 5-split writes 2.5 times the rows of the 4-split) and the
disk (plan.py's bytes), the skew of the corpus planned for (plan.py assumes uniform fingerprints), an index
larger than the memory that caches it (HBase's block cache, the page cache: at 10^8 on one HBase the
5-split's lookup measured 4x the model's), probes, signatures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Run:
    """One measured ``check``: ``docs`` indexed, ``scans`` and ``candidates`` a lookup (plan.py's
    figures for the scheme at ``docs``), and the command's lookups per second."""

    scheme: str
    docs: int
    scans: int
    candidates: float
    lookups_per_s: float


@dataclass(frozen=True)
class Beyond:
    """A whole ``check`` measured beyond the fit's sizes and left out of it: ``docs`` indexed
    with ``scheme``, its lookups per second. Not fitted because its cells a lookup cannot be
    counted as the fit's are (at 10^7 and more most of the scale bench's are the planted copies
    of one fingerprint, which HBase reads once a check), or because the index there outgrew the
    memory that caches it, which the model does not know."""

    scheme: str
    docs: int
    lookups_per_s: float


@dataclass(frozen=True)
class StoreCosts:
    """A store's cost of a lookup in µs: ``fixed``, ``per_scan`` and ``per_candidate``, fitted to
    ``runs`` (``basis`` says where they were measured); ``beyond``: checks measured at larger
    sizes, not fitted (``beyond_basis``)."""

    store: str
    fixed: float
    per_scan: float
    per_candidate: float
    runs: tuple[Run, ...]
    basis: str
    beyond: tuple[Beyond, ...] = ()
    beyond_basis: str = ""

    def lookup_us(self, scans: float, candidates: float) -> float:
        """The modelled µs of one batched lookup."""
        return self.fixed + scans * self.per_scan + candidates * self.per_candidate


def fitted(store: str, runs: tuple[Run, ...], basis: str, beyond: tuple[Beyond, ...] = (),
           beyond_basis: str = "") -> StoreCosts:
    """``StoreCosts`` by least squares over the runs' µs a lookup (no figure below 0); ``beyond``
    kept beside the fit, not in it."""
    a = np.array([[1.0, r.scans, r.candidates] for r in runs])
    us = np.array([1e6 / r.lookups_per_s for r in runs])
    fixed, per_scan, per_candidate = (max(0.0, float(x)) for x in np.linalg.lstsq(a, us, rcond=None)[0])
    return StoreCosts(store, fixed, per_scan, per_candidate, runs, basis, beyond, beyond_basis)


# The checks measured: scheme, documents, scans and candidates a lookup, lookups/s.
EMBEDDED = ((("4", 10**5, 4, 20.5, 18255.0), ("5", 10**5, 10, 28.3, 11496.0),
             ("4", 10**6, 4, 187.8, 13252.0), ("5", 10**6, 10, 254.8, 10717.0)),
            (("4", 10**6, 4, 187.8, 12022.0), ("5", 10**6, 10, 254.8, 8719.0),
             ("4", 10**7, 4, 1951.5, 6274.0), ("5", 10**7, 10, 2629.8, 4120.0)))
HBASE = (("4", 10**5, 4, 20.5, 6039.0), ("5", 10**5, 10, 28.3, 4264.0),
         ("4", 10**6, 4, 187.8, 2190.0), ("5", 10**6, 10, 254.8, 1431.0))
EMBEDDED_BASIS = ("scripts/bench scale (seed 7), the machine otherwise idle: at 10^5 and 10^6 at 33ea8d1, at 10^6 "
                  "and 10^7 at b6f5aba, 2026-12-04 (candidates: scripts/benchmarks/scale_truth.py)")
HBASE_BASIS = ("scripts/bench scale (seed 7) at 10^5 and 10^6 documents, with an HBase beside it, at 33ea8d1, "
               "2026-12-04, the machine otherwise idle; HBase: scripts/hbase-local's test instance, C1 JIT")
# The checks measured beyond the fit (docs/benchmarks.md "Scale"): scheme, documents, lookups/s.
EMBEDDED_BEYOND = (("4", 10**8, 2097.0), ("5", 10**8, 3413.0))
HBASE_BEYOND = (("4", 10**7, 799.0), ("5", 10**7, 1966.0), ("4", 10**8, 74.0), ("5", 10**8, 1010.0))
EMBEDDED_BEYOND_BASIS = ("scripts/bench scale at 10^8 (seed 7, 10^5 queries), the 4-split at 493b344 and the 5-split "
                         "at 6249f6b, 2026-12-05")
HBASE_BEYOND_BASIS = ("the scale bench's fingerprints and queries (seed 7) on a standalone HBase of its own (C2), loaded "
                      "by Spark: at 10^7 10^5 queries (17d764f, 2026-12-06); at 10^8 the 5-split's 10^5 and the "
                      "4-split's first 10^3 (7055030, 2026-12-07), the 5-split's 17 GB index table beyond the "
                      "block cache and the page cache")
MEASURED = {"embedded": fitted("embedded", tuple(Run(*r) for run in EMBEDDED for r in run), EMBEDDED_BASIS,
                               tuple(Beyond(*r) for r in EMBEDDED_BEYOND), EMBEDDED_BEYOND_BASIS),
            "hbase": fitted("hbase", tuple(Run(*r) for r in HBASE), HBASE_BASIS,
                            tuple(Beyond(*r) for r in HBASE_BEYOND), HBASE_BEYOND_BASIS)}
