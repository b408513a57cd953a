"""index/arrays.py: ``unique_rows`` gives numpy's distinct rows (first positions, inverse) exactly."""

from __future__ import annotations

import numpy as np
import pytest

from dedup_hbase.index.arrays import unique_rows


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 50_000])
def test_unique_rows_is_numpys(n):
    rng = np.random.default_rng(n)
    small = rng.integers(0, 40, n).astype(np.int64)  # many repeats
    high = rng.integers(0, 6, n).astype(np.uint64) * np.uint64(3 << 61)  # top bits set: signed views negative
    for columns in ([small], [small, high.view(np.int64)], [high, high], [high, small.astype(np.uint64), high]):
        first, inverse = unique_rows(columns)
        _, first_np, inverse_np = np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)
        assert first.tolist() == first_np.tolist() and inverse.tolist() == inverse_np.ravel().tolist()
        rows = list(zip(*(c.tolist() for c in columns)))
        assert [rows[i] for i in first] == sorted(set(rows))  # distinct rows by value, each at its first position
        assert all(rows.index(rows[i]) == i for i in first[:50])


def test_unique_rows_of_nothing():
    first, inverse = unique_rows([np.empty(0, np.uint64), np.empty(0, np.int64)])
    assert first.tolist() == [] and inverse.tolist() == []
