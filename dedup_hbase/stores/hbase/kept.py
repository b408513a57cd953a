"""Rows of many cells, read once in a pass: ``KeptRows``.

A lookup reads every row under its scan prefixes, whole. The copies of one fingerprint are one
row of the index under each of its flags, one cell per copy: a page copied 10^5 times is a row of
10^5 cells, and ``check`` read it again in every batch of queries that held one near it. At 10^7
fingerprints, 49 such queries among 10^4 took most of the region server's and the Thrift2
gateway's time (docs/benchmarks.md, "HBase's lookups by block size").

While a pass keeps them (``Store.large_rows_kept``: ``check``), a row of at least ``LARGE_ROW``
cells is kept once a scan has read it; the pass's later scans leave it out of their row ranges
(``without``) and put it back into their answer where it belongs (``spliced``), so the answer is
the one a full read gives, as of the row's first read.

What it does not do: see cells written to a kept row after its first read (by this process or
another): a pass that writes, or that must see others' writes as they land, keeps nothing. Rows
are kept in memory up to ``KEPT_CELLS`` cells in all; rows met after that are read each time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

from .results import Results

LARGE_ROW = 10_000  # cells from which a row is kept (a fingerprint with this many copies)
KEPT_CELLS = 2_000_000  # cells kept in all, at most (170 MiB with 16-byte ids, measured)

Ranges = Sequence[tuple[bytes, bytes | None]]


class KeptRows:
    """The large rows one pass has read from one table: row key -> its ``Results`` (one row)."""

    def __init__(self) -> None:
        self.rows: dict[bytes, Results] = {}
        self.cells = 0

    def without(self, ranges: Ranges) -> tuple[list[tuple[bytes, bytes | None]], list[bytes]]:
        """``ranges`` (sorted, disjoint ``[start, stop)``; stop None: to the table's end) with
        every kept row in them cut out, and the rows cut out, in key order."""
        kept = sorted(self.rows)
        out, skipped = [], []
        for start, stop in ranges:
            lo = bisect_left(kept, start)
            hi = len(kept) if stop is None else bisect_left(kept, stop, lo)
            for row in kept[lo:hi]:
                if start < row:
                    out.append((start, row))
                skipped.append(row)
                start = row + b"\x00"  # the smallest key after the row
            if stop is None or start < stop:
                out.append((start, stop))
        return out, skipped

    def remember(self, results: Results) -> None:
        """Keep the rows of ``results`` (whole rows, as a scan returns them) of ``LARGE_ROW``
        cells or more, while fewer than ``KEPT_CELLS`` are kept."""
        if not len(results.cell_rows):
            return
        sizes = np.bincount(results.cell_rows, minlength=len(results.rows))
        for i in np.flatnonzero(sizes >= LARGE_ROW).tolist():
            size = int(sizes[i])
            if self.cells + size > KEPT_CELLS:
                return
            if results.rows[i] not in self.rows:
                self.rows[results.rows[i]] = results.slice(i, i + 1)
                self.cells += size

    def spliced(self, results: Results, skipped: Sequence[bytes]) -> Results:
        """``results`` (sorted rows) with the kept rows ``skipped`` (sorted) put back in key order."""
        parts, at = [], 0
        for row in skipped:
            i = bisect_left(results.rows, row, at)
            parts += [results.slice(at, i), self.rows[row]]
            at = i
        parts.append(results.slice(at, len(results)))
        return Results.concat(parts)
