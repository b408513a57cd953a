"""Many cells of many scan prefixes as numpy columns (``CellBatch``): what the embedded store
sorts, merges and packs into its per-prefix records (records.py has the format) without a
Python loop per cell; and ``merge_small``, the same merge in Python ints for a few cells (an
online add), where numpy's cost per call is most of the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, groupby
from operator import itemgetter
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...index.arrays import ranges
from ...index.arrays import starts as _starts
from .records import HEADER_BYTES, MAX_QUALIFIER_BYTES, REST_BYTES, VARIABLE_WIDTH, PackedCells, encode_record

_PACK_CELLS = 1 << 18  # cells packed per numpy pass
_RANK_BITS = 32  # prefixes spanning more bits are ranked before sorting
_BIG_RECORD = 16  # cells per record from which records are joined from slices, not gathered
SMALL_MERGE_CELLS = 256  # cells (old and new) up to which ``merge_small`` merges records, not numpy
_UNTIE_PAD_BYTES = 256 << 20  # tied cells are sorted in numpy while their padded qualifiers fit this


def _squeeze(pids: np.ndarray) -> np.ndarray:
    """Prefixes (segment << 8 | flag) as small integers in the same order: the segments'
    common trailing zero bits (the layout left-aligns the blocks) and the flags' unused
    high bits dropped, the smallest subtracted. The 4-split's come out below 2^19, the
    5-split's below 2^30, leaving most of a 64-bit sort key to the remainder."""
    segments, flags = pids >> np.uint64(8), pids & np.uint64(0xFF)
    common = int(np.bitwise_or.reduce(segments))
    zeros = (common & -common).bit_length() - 1 if common else 0
    squeezed = ((segments >> np.uint64(zeros)) << np.uint64(max(int(flags.max()).bit_length(), 1))) | flags
    return squeezed - squeezed.min()


def _spans(lo: np.ndarray, hi: np.ndarray, size: int) -> np.ndarray:
    """A mask of ``size`` bytes, true within each span ``[lo[i], hi[i])`` (disjoint)."""
    edges = np.zeros(size + 1, dtype=np.int8)
    np.add.at(edges, lo, 1)  # a span may end where the next begins
    np.add.at(edges, hi, -1)
    return np.cumsum(edges[:-1], dtype=np.int8).astype(bool)


def _gather(quals: np.ndarray, qlens: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The qualifier bytes of cells ``order`` (cell i: ``qlens[i]`` bytes of ``quals``)."""
    if len(qlens) and (qlens == qlens[0]).all():  # all one length: rows of a 2-D array (the total
        # alone does not say so: lengths 2, 1 and 3 make 6 bytes as three of 2 do)
        return np.take(quals.reshape(len(qlens), -1), order, axis=0).ravel()  # (faster than [order])
    width = int(qlens.max(initial=0))
    if width * len(qlens) <= 2 * len(quals) + 64:  # lengths alike: padded to rows, a row per cell
        padded = np.zeros((len(qlens), width), dtype=np.uint8)
        padded[np.arange(width) < qlens[:, None]] = quals
        return np.take(padded, order, axis=0)[np.arange(width) < qlens[order][:, None]]
    return quals[ranges(_starts(qlens)[order], qlens[order])]


class CellBatch(NamedTuple):
    """Cells of many prefixes as parallel columns: ``pids`` (the prefix as an integer),
    ``rests`` (uint64), ``qlens`` (qualifier lengths) and ``quals`` (uint8, concatenated)."""

    pids: np.ndarray
    rests: np.ndarray
    qlens: np.ndarray
    quals: np.ndarray

    def __len__(self) -> int:
        return len(self.pids)

    @classmethod
    def from_rows(cls, rows: bytes, qualifiers: Sequence[bytes], prefix_bytes: int, repeat: int = 1) -> "CellBatch":
        """From row keys concatenated (each ``prefix_bytes + 8`` long) and their qualifiers:
        row j has ``qualifiers[j % len(qualifiers)]`` (``repeat`` rows per qualifier)."""
        width = prefix_bytes + REST_BYTES
        table = np.frombuffer(rows, dtype=np.uint8).reshape(-1, width)
        if len(table) != len(qualifiers) * repeat:
            raise ValueError(f"{len(table)} rows but {len(qualifiers)} qualifiers x {repeat}")
        padded = np.zeros((len(table), 8), dtype=np.uint8)
        padded[:, 8 - prefix_bytes:] = table[:, :prefix_bytes]
        return cls(padded.view(">u8").ravel().astype(np.uint64),
                   np.ascontiguousarray(table[:, prefix_bytes:]).view(">u8").ravel().astype(np.uint64),
                   np.tile(np.fromiter(map(len, qualifiers), dtype=np.int64, count=len(qualifiers)), repeat),
                   np.tile(np.frombuffer(b"".join(qualifiers), dtype=np.uint8), repeat))

    @classmethod
    def from_records(cls, pids: Sequence[int], records: Sequence[bytes]) -> "CellBatch":
        """Decode records (``pids[i]`` the prefix of ``records[i]``), vectorised."""
        if not records:
            return cls.concat([])
        sizes = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
        at = _starts(sizes)
        buf = np.frombuffer(b"".join(records), dtype=np.uint8)
        head = np.ascontiguousarray(buf[at[:, None] + np.arange(HEADER_BYTES)])
        counts = head[:, :4].copy().view("<u4").ravel().astype(np.int64)
        widths = head[:, 4:].copy().view("<u2").ravel().astype(np.int64)
        n = int(counts.sum())
        rec = np.repeat(np.arange(len(records)), counts)  # the record of each cell
        local = np.arange(n) - np.repeat(_starts(counts), counts)  # its place in the record
        size, body = counts[rec], at[rec] + HEADER_BYTES + REST_BYTES * counts[rec]  # body: after the rests
        rests = buf[(at[rec] + HEADER_BYTES + REST_BYTES * local)[:, None] + np.arange(REST_BYTES)]
        qlens = widths[rec]
        variable = qlens == VARIABLE_WIDTH
        qstart = body + local  # fixed width: byte t of the qualifier is at qstart + t * size
        if variable.any():
            lengths = buf[(body + 2 * local)[variable][:, None] + np.arange(2)].view("<u2").ravel().astype(np.int64)
            qlens[variable] = lengths
            before = np.cumsum(lengths) - lengths  # of the qualifiers of earlier cells ...
            before -= np.repeat(before[local[variable] == 0], counts[widths == VARIABLE_WIDTH])  # ... of its record
            qstart[variable] = body[variable] + 2 * size[variable] + before
        if not variable.any() and n and (qlens == qlens[0]).all():  # the usual case: one id length
            quals = buf[qstart[:, None] + np.arange(int(qlens[0])) * size[:, None]].ravel()
        else:
            quals = np.empty(int(qlens.sum()), dtype=np.uint8)
            out = _starts(qlens)
            if variable.any():  # a record's qualifiers of varied length are one span, in cell order:
                # copied as spans (a gather would hold 8 bytes of index per byte: 200,000 ids with
                # their kept texts made gigabytes of indexes)
                whole = widths == VARIABLE_WIDTH
                lo = at[whole] + HEADER_BYTES + (REST_BYTES + 2) * counts[whole]
                hi = at[whole] + sizes[whole]
                first = out[_starts(counts)[whole]]
                quals[_spans(first, first + hi - lo, len(quals))] = buf[_spans(lo, hi, len(buf))]
            fixed = np.flatnonzero(~variable)  # byte planes: byte t of a qualifier every ``size`` bytes
            cell = np.repeat(fixed, qlens[fixed])
            t = ranges(np.zeros(len(fixed), dtype=np.int64), qlens[fixed])
            quals[out[cell] + t] = buf[qstart[cell] + t * size[cell]]
        return cls(np.repeat(np.asarray(pids, dtype=np.uint64), counts),
                   rests.view(">u8").ravel().astype(np.uint64), qlens, quals)

    @classmethod
    def concat(cls, batches: Sequence["CellBatch"]) -> "CellBatch":
        if not batches:
            return cls(np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
        if len(batches) == 1:
            return batches[0]
        return cls(*(np.concatenate(column) for column in zip(*batches)))

    def encode(self) -> bytes:
        """The whole batch as one record (count, then each column): how runs are kept."""
        return b"".join((len(self).to_bytes(HEADER_BYTES, "little"), self.pids.astype("<u8").tobytes(),
                         self.rests.astype("<u8").tobytes(), self.qlens.astype("<u4").tobytes(),
                         self.quals.tobytes()))

    @classmethod
    def decode(cls, record: bytes) -> "CellBatch":
        n = int.from_bytes(record[:HEADER_BYTES], "little")
        pids = np.frombuffer(record, "<u8", n, HEADER_BYTES)
        rests = np.frombuffer(record, "<u8", n, HEADER_BYTES + 8 * n)
        qlens = np.frombuffer(record, "<u4", n, HEADER_BYTES + 16 * n).astype(np.int64)
        return cls(pids, rests, qlens, np.frombuffer(record, np.uint8, offset=HEADER_BYTES + 20 * n))

    def select(self, lo: int, hi: int, qoff: np.ndarray) -> "CellBatch":
        """Cells ``lo`` to ``hi - 1``; ``qoff`` = the qualifier offsets, ``[0, *cumsum(qlens)]``."""
        return CellBatch(self.pids[lo:hi], self.rests[lo:hi], self.qlens[lo:hi],
                         self.quals[int(qoff[lo]):int(qoff[hi])])

    def take(self, order: np.ndarray) -> "CellBatch":
        return CellBatch(self.pids[order], self.rests[order], self.qlens[order],
                         _gather(self.quals, self.qlens, order))

    def sorted_unique(self, runs: bool = False) -> "CellBatch":
        """The same cells in key order (prefix, remainder, qualifier), duplicates removed.

        One sort on a 64-bit key: the prefix in the high bits (``_squeeze``d, or ranked
        when that leaves too few bits), the top bits of the remainder below. Inputs that
        are concatenated sorted runs sort in near-linear time (say so with ``runs=True``).
        Cells whose keys tie (same prefix, remainders equal in their top bits) are put in
        exact order afterwards, in Python: they are few."""
        n = len(self)
        if n == 0:
            return self
        kind = "stable" if runs else "quicksort"  # ties are ordered below, so either is exact
        ranks = _squeeze(self.pids)
        if int(ranks.max()).bit_length() > _RANK_BITS:  # else rank the distinct prefixes
            by_prefix = np.argsort(self.pids, kind=kind)
            sorted_pids = self.pids[by_prefix]
            ranks = np.empty(n, dtype=np.uint64)
            ranks[by_prefix] = np.cumsum(np.concatenate(([0], sorted_pids[1:] != sorted_pids[:-1])), dtype=np.uint64)
        bits = max(int(ranks.max()).bit_length(), 1)
        key = (ranks << np.uint64(64 - bits)) | (self.rests >> np.uint64(bits))
        order = np.argsort(key, kind=kind)
        key = key[order]
        ties = np.flatnonzero(key[1:] == key[:-1])
        if len(ties):
            order = self._untie(order, ties)
        return self.take(order)

    def _untie(self, order: np.ndarray, ties: np.ndarray) -> np.ndarray:
        """Put runs of cells with equal sort keys in exact (remainder, qualifier) order and
        drop exact repeats (a cell written twice). All runs in one numpy sort, the
        qualifiers padded to one width (200,000 copies of one fingerprint tie whole);
        in Python only when padding would cost more than ``_UNTIE_PAD_BYTES``."""
        runs = np.split(ties, np.flatnonzero(np.diff(ties) != 1) + 1)
        lo = np.array([int(run[0]) for run in runs])
        length = np.array([len(run) + 1 for run in runs])
        at = ranges(lo, length)  # positions in ``order`` of every tied cell, ascending
        cells = order[at]
        lens = self.qlens[cells]
        width = int(lens.max(initial=0))
        if width * len(cells) > _UNTIE_PAD_BYTES:
            return self._untie_slowly(order, runs)
        width = max(width, 1)  # each cell's ``width`` bytes from its start (a window over the
        # qualifiers: one index per cell, not per byte), then the bytes past its end zeroed
        padded = sliding_window_view(np.concatenate((self.quals, np.zeros(width, np.uint8))), width)[
            _starts(self.qlens)[cells]]
        padded[np.arange(width) >= lens[:, None]] = 0
        quals = padded.view(f"S{width}").ravel()  # compares as bytes, trailing NULs dropped:
        run = np.repeat(np.arange(len(runs)), length)     # the length breaks those ties (shorter first)
        rests = self.rests[cells]
        by = np.lexsort((lens, quals, rests, run))
        cells, lens, quals, rests, run = cells[by], lens[by], quals[by], rests[by], run[by]
        order[at] = cells
        keep = np.ones(len(order), dtype=bool)
        keep[at[1:]] = ~((run[1:] == run[:-1]) & (rests[1:] == rests[:-1]) & (quals[1:] == quals[:-1])
                         & (lens[1:] == lens[:-1]))
        return order[keep]

    def _untie_slowly(self, order: np.ndarray, runs: list[np.ndarray]) -> np.ndarray:
        """``_untie`` one run at a time in Python, for qualifiers too long to pad."""
        starts = np.concatenate(([0], np.cumsum(self.qlens)[:-1])).tolist()
        raw, qlens, rests = self.quals.tobytes(), self.qlens.tolist(), self.rests
        keep = np.ones(len(order), dtype=bool)
        for run in runs:
            lo, hi = int(run[0]), int(run[-1]) + 2
            cells = sorted((int(rests[i]), raw[starts[i]:starts[i] + qlens[i]], i) for i in order[lo:hi].tolist())
            order[lo:hi] = [i for _, _, i in cells]
            for j in range(1, len(cells)):
                keep[lo + j] = cells[j][:2] != cells[j - 1][:2]
        return order[keep]

    def without(self, doomed: set[tuple[int, int, bytes]]) -> "CellBatch":
        """The cells not in ``doomed`` (a set of (pid, rest, qualifier))."""
        if not doomed or not len(self):
            return self
        starts = np.concatenate(([0], np.cumsum(self.qlens)[:-1]))
        raw = self.quals.tobytes()
        keep = [(p, r, raw[s:s + n]) not in doomed for p, r, s, n
                in zip(self.pids.tolist(), self.rests.tolist(), starts.tolist(), self.qlens.tolist())]
        return self.take(np.flatnonzero(keep))

    def prefixes(self) -> np.ndarray:
        """The distinct prefixes of a sorted batch, in order."""
        if not len(self):
            return self.pids
        return self.pids[np.concatenate(([True], self.pids[1:] != self.pids[:-1]))]

    def pack(self) -> tuple[np.ndarray, list[bytes]]:
        """One record per prefix of a sorted, unique batch: (prefixes, records), vectorised
        in slices of about ``_PACK_CELLS`` cells to bound memory."""
        n = len(self)
        if n == 0:
            return np.zeros(0, np.uint64), []
        first = np.flatnonzero(np.concatenate(([True], self.pids[1:] != self.pids[:-1])))
        bounds = [0, *np.searchsorted(first, np.arange(_PACK_CELLS, n, _PACK_CELLS)).tolist(), len(first)]
        qoff = np.concatenate(([0], np.cumsum(self.qlens)))
        records: list[bytes] = []
        for lo, hi in zip(bounds, bounds[1:]):
            if hi > lo:
                start, stop = int(first[lo]), int(first[hi]) if hi < len(first) else n
                part = self.select(start, stop, qoff)
                records += part._pack(first[lo:hi] - start)
        return self.pids[first], records

    def _pack(self, first: np.ndarray) -> list[bytes]:
        """The records of a sorted slice whose prefixes start at ``first``.

        Each record is four pieces, each contiguous in one of four streams built
        vectorised: its header, its remainders (big-endian, in cell order), its qualifier
        lengths (variable width only) and its qualifier bytes (fixed width: as byte
        planes). Records are cut from the streams with one numpy gather when they are
        small (the 5-split: about one cell each), by joining four slices each when they
        are big (the 4-split: a Python step per record is cheaper than an index per byte)."""
        n, groups = len(self), len(first)
        if self.qlens.max(initial=0) > MAX_QUALIFIER_BYTES:
            raise ValueError(f"a qualifier is at most {MAX_QUALIFIER_BYTES} bytes")
        counts = np.diff(np.append(first, n))
        qoff = np.concatenate(([0], np.cumsum(self.qlens)))
        fixed = np.minimum.reduceat(self.qlens, first) == np.maximum.reduceat(self.qlens, first)
        headers = np.empty(groups, dtype=[("n", "<u4"), ("width", "<u2")])
        headers["n"], headers["width"] = counts, np.where(fixed, self.qlens[first], VARIABLE_WIDTH)
        streams = [headers.tobytes(), self.rests.astype(">u8").tobytes(),
                   self.qlens.astype("<u2").tobytes(), self._planes(first, counts, fixed, qoff)]
        base = np.cumsum([0] + [len(b) for b in streams[:-1]])
        pieces = np.empty((groups, 4, 2), dtype=np.int64)  # (start in the streams, length)
        pieces[:, 0] = np.stack([base[0] + HEADER_BYTES * np.arange(groups), np.full(groups, HEADER_BYTES)], axis=1)
        pieces[:, 1] = np.stack([base[1] + REST_BYTES * first, REST_BYTES * counts], axis=1)
        pieces[:, 2] = np.stack([base[2] + 2 * first, np.where(fixed, 0, 2 * counts)], axis=1)
        pieces[:, 3] = np.stack([base[3] + qoff[first], qoff[first + counts] - qoff[first]], axis=1)
        source = b"".join(streams)
        if n >= _BIG_RECORD * groups:
            bounds = pieces.reshape(groups, 8).tolist()
            return [b"".join((source[a:a + i], source[b:b + j], source[c:c + k], source[d:d + m]))
                    for a, i, b, j, c, k, d, m in bounds]
        flat = np.frombuffer(source, dtype=np.uint8)[ranges(pieces[..., 0].ravel(), pieces[..., 1].ravel())]
        edges = np.concatenate(([0], np.cumsum(pieces[..., 1].sum(axis=1)))).tolist()
        flat = flat.tobytes()
        return [flat[a:b] for a, b in zip(edges, edges[1:])]

    def _planes(self, first: np.ndarray, counts: np.ndarray, fixed: np.ndarray, qoff: np.ndarray) -> bytes:
        """The qualifier bytes in stored order: as they are for a record of variable
        width, as byte planes (byte t of every qualifier, then byte t + 1) for a record
        whose qualifiers have one width."""
        planar = fixed & (counts > 1)  # one qualifier is its own planes
        if not planar.any():
            return self.quals.tobytes()
        out = self.quals.copy()
        cells = np.flatnonzero(np.repeat(planar, counts))  # the cells of fixed-width records
        group = np.repeat(np.arange(len(first)), counts)[cells]
        local, size, width = cells - first[group], counts[group], self.qlens[cells]
        for w in np.unique(width).tolist():  # ids of one length are the usual case: one pass
            these = width == w
            start = qoff[first[group[these]]]  # where the record's qualifier bytes start
            source = qoff[cells[these]][:, None] + np.arange(w)
            target = (start + local[these])[:, None] + np.arange(w) * size[these][:, None]
            out[target] = self.quals[source]
        return out.tobytes()


def merge_small(old_pids: Sequence[int], old_records: Sequence[bytes],
                fresh: CellBatch) -> tuple[list[int], list[bytes], int]:
    """Records ``old_records`` (of prefixes ``old_pids``) with the cells of ``fresh`` (any
    order, duplicates allowed) merged: the prefixes, their records and the cells in them, in
    Python ints and bytes: what ``CellBatch.concat``, ``sorted_unique`` and ``pack`` give, for
    a merge of at most ``SMALL_MERGE_CELLS`` cells (a service's add: 4 cells and the records
    they join)."""
    cells: set[tuple[int, int, bytes]] = set()
    for pid, record in zip(old_pids, old_records):
        old = PackedCells(record)
        cells.update(zip([pid] * len(old), old.rest_values(), map(old.qualifier, range(len(old)))))
    quals, ends = fresh.quals.tobytes(), list(accumulate(fresh.qlens.tolist()))
    cells.update(zip(fresh.pids.tolist(), fresh.rests.tolist(), map(quals.__getitem__, map(slice, [0, *ends], ends))))
    pids, records = [], []
    for pid, group in groupby(sorted(cells), key=itemgetter(0)):
        mine = list(group)
        pids.append(pid)
        records.append(encode_record([rest for _, rest, _ in mine], [qual for _, _, qual in mine]))
    return pids, records, len(cells)

