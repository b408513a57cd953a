"""The kept texts of a local ``groups`` run's short documents (text/units.py), in a file beside
the output while the groups are found: what memory holds per distinct short text is its sketch
and where its text lies (24 bytes), not a Python string and a dict entry (a dict cost about 100
bytes more a text, measured on 10^6 distinct short texts: docs/benchmarks.md). The short-text rule reads a kept
text only for a pair of short documents it decides (``confirm.sketches_agree``).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

KEPT = ".kept-texts"  # in the output folder while a groups run finds its groups


class KeptTexts(Mapping):
    """A short sketch -> its kept text (``units.kept_sketch`` of it): written a batch at a time
    (``add``), read once ``seal``ed (``texts[sketch]``: a binary search among the sketches, the
    text read from a memory map of the file). ``close`` removes the file. Does not check that
    one sketch is one text: a sketch is a hash of its text, and the first text added for a
    sketch is the one read."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / KEPT
        self._file = self.path.open("wb")
        self._sketches: list[np.ndarray] = []
        self._ends: list[np.ndarray] = []
        self._size = 0
        self._keys = np.empty(0, np.uint64)
        self._starts = self._stops = np.empty(0, np.int64)
        self._map: mmap.mmap | None = None

    def add(self, sketches: Sequence[int], kepts: Sequence[str]) -> None:
        """A batch's documents: their sketches and kept texts ("": not short, left out); a
        batch's copies of one text written once."""
        batch = {sketch: kept for sketch, kept in zip(sketches, kepts) if kept}
        if not batch:
            return
        data = [kept.encode("utf-8") for kept in batch.values()]
        ends = self._size + np.cumsum(np.fromiter(map(len, data), np.int64, len(data)))
        self._file.write(b"".join(data))
        self._size = int(ends[-1])
        self._sketches.append(np.fromiter(batch, np.uint64, len(batch)))
        self._ends.append(ends)

    def seal(self) -> KeptTexts:
        """End the writing; the texts can then be read. Returns itself."""
        self._file.close()
        if self._sketches:
            sketches, ends = np.concatenate(self._sketches), np.concatenate(self._ends)
            self._sketches, self._ends = [], []
            self._keys, first = np.unique(sketches, return_index=True)
            self._starts, self._stops = np.r_[0, ends[:-1]][first], ends[first]
        if self._size:
            with self.path.open("rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return self

    def __getitem__(self, sketch: int) -> str:
        if not isinstance(sketch, int | np.integer) or not 0 <= sketch < 1 << 64:
            raise KeyError(sketch)
        i = int(np.searchsorted(self._keys, np.uint64(sketch)))
        if i == len(self._keys) or int(self._keys[i]) != sketch:
            raise KeyError(sketch)
        return self._map[int(self._starts[i]):int(self._stops[i])].decode("utf-8")

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys.tolist())

    def close(self) -> None:
        """Let the memory map and the file go, and remove the file."""
        try:
            if self._map is not None:
                self._map.close()
                self._map = None
            self._file.close()
        finally:
            self.path.unlink(missing_ok=True)
