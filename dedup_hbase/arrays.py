"""Two numpy helpers shared by the index's batched lookups and the embedded store's codec."""

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
