"""The rows of a Thrift2 reply that answers with a ``list<TResult>`` (``getScannerResults``,
``getMultiple``), flat: ``Results``.

Why flat: a lookup's scan returns tens to thousands of rows, and thriftpy2 builds a
``TResult`` and a ``TColumnValue`` object per row and cell (about 3.5 µs a row: the client's
CPU bounded ``check`` against HBase, docs/benchmarks.md). So a binary-protocol reply is read
from the socket as bytes (``wire.Channel.call_results``) and decoded by the compiled core
(native/src/thrift.rs) into four lists, no object per row. The reference is thriftpy2's
decoding (``Results.of``): used without the core and for any reply the core does not take (an
exception, a form HBase does not write); the two give equal ``Results`` on every reply
(tests/test_hbase_results.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass(frozen=True)
class Results:
    """Rows (``None`` for a row a ``getMultiple`` did not find), in the reply's order, and their
    cells: cell j belongs to row ``cell_rows[j]`` (non-decreasing), with ``qualifiers[j]`` and
    ``values[j]``. (The cells' family and timestamps are not kept: the store reads one family,
    one version.)"""

    rows: list
    cell_rows: np.ndarray
    qualifiers: list
    values: list

    @classmethod
    def of(cls, results: Sequence) -> Results:
        """The reference: from thriftpy2's ``TResult`` objects."""
        rows, cell_rows, qualifiers, values = [], [], [], []
        for i, result in enumerate(results or ()):
            rows.append(result.row)
            for cv in result.columnValues or ():
                cell_rows.append(i)
                qualifiers.append(cv.qualifier)
                values.append(cv.value)
        return cls(rows, np.array(cell_rows, dtype=np.int64), qualifiers, values)

    @classmethod
    def decoded(cls, rows: list, cell_rows: bytes, qualifiers: list, values: list) -> Results:
        """From the compiled core's ``thrift_results`` (the cells' rows as little-endian u32)."""
        return cls(rows, np.frombuffer(cell_rows, dtype="<u4").astype(np.int64), qualifiers, values)

    @classmethod
    def concat(cls, parts: Sequence[Results]) -> Results:
        """The rows of ``parts``, one after the other."""
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p.rows) for p in parts[:-1]])
        return cls(list(chain.from_iterable(p.rows for p in parts)),
                   np.concatenate([p.cell_rows + o for p, o in zip(parts, offsets)] or [np.zeros(0, np.int64)]),
                   list(chain.from_iterable(p.qualifiers for p in parts)),
                   list(chain.from_iterable(p.values for p in parts)))

    def __len__(self) -> int:
        return len(self.rows)

    def slice(self, lo: int, hi: int) -> Results:
        """Rows ``lo`` to ``hi`` (not included) and their cells."""
        a, b = np.searchsorted(self.cell_rows, [lo, hi])
        return Results(self.rows[lo:hi], self.cell_rows[a:b] - lo, self.qualifiers[a:b], self.values[a:b])

    def cells(self) -> zip:
        """(row, qualifier, value) of each cell, in order."""
        rows = self.rows
        return zip((rows[i] for i in self.cell_rows.tolist()), self.qualifiers, self.values)

    def row_cells(self) -> dict:
        """Each found row's cells: row -> {qualifier: value}."""
        out: dict = {row: {} for row in self.rows if row is not None}
        for row, qualifier, value in self.cells():
            if row is not None:
                out[row][qualifier] = value
        return out

    def __eq__(self, other) -> bool:
        return (isinstance(other, Results) and self.rows == other.rows and self.qualifiers == other.qualifiers
                and self.values == other.values and np.array_equal(self.cell_rows, other.cell_rows))
