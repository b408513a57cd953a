"""Small numpy helpers shared across the package: ranges of consecutive pieces (the index's
batched lookups, the embedded store's codec) and the one conversion between unsigned 64-bit
fingerprints and the signed 64-bit integers of Spark, Arrow and Parquet columns."""

from __future__ import annotations

import numpy as np


def starts(lengths: np.ndarray) -> np.ndarray:
    """Where each of consecutive pieces of ``lengths`` starts: the exclusive cumulative sum."""
    return np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)


def ranges(begins: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(b, b + n)`` for every (b, n), vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(begins - starts(lengths), lengths)
    return shift + np.arange(total, dtype=np.int64)


def unique_rows(columns) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of equal-length integer ``columns``: each one's first position (in the
    order of the distinct rows), and per row the number of its distinct row. As
    ``np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)[1:]``
    (the same positions and numbers: rows sorted by the columns' values, left first), without
    the stack and its sort of rows as one structured value (several times slower; and a signed
    column stacked beside an unsigned one is made floating point)."""
    n = len(columns[0])
    order = np.lexsort(columns[::-1])  # stable: a distinct row's first entry is its first position
    new = np.zeros(n, bool)
    new[:1] = True
    for column in columns:
        ordered = column[order]
        new[1:] |= ordered[1:] != ordered[:-1]
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


_WRAP = 1 << 64


def signed64(value: int) -> int:
    """An unsigned 64-bit value as the signed 64-bit integer with the same bits."""
    return value - _WRAP if value >= 1 << 63 else value


def unsigned64(value: int) -> int:
    """A signed (or unsigned) 64-bit integer as the unsigned value with the same bits."""
    return value % _WRAP


def as_unsigned(values) -> np.ndarray:
    """int64 (or uint64) values as uint64 with the same bits, without copying where possible."""
    array = np.asarray(values)
    return array if array.dtype == np.uint64 else array.astype(np.int64, copy=False).view(np.uint64)


def as_signed(values) -> np.ndarray:
    """uint64 (or int64) values as int64 with the same bits."""
    return as_unsigned(values).view(np.int64)
