"""The embedded store's record codec: the cells of one scan prefix in one RocksDB record.

The index table's logical layout is the design's: row key = scan prefix (segment 4 B +
flag 1 B) + an 8-byte remainder (the simhash), one column per document id. A lookup
needs, per scan prefix, every remainder (to XOR with the query) and the qualifiers of the
few that match. ``PackedCells`` is exactly that for one prefix, over one record, and
``encode_record`` writes one record; batch.py holds many cells of many prefixes as numpy
columns, which the embedded store sorts, merges and packs into records of this format.

Record of one prefix:

    n        uint32 little-endian   number of cells
    width    uint16 little-endian   the length w of every qualifier, if all have one length;
                                    else 0xFFFF
    rests    n x 8 bytes            row-key remainders, big-endian as in the key
    then, for one length:
    quals    w planes of n bytes    plane t holds byte t of every qualifier
    else:
    lengths  n x uint16 LE          the length of each qualifier (at most 65,535 bytes)
    quals    bytes                  the qualifiers, concatenated

Qualifiers of one length are stored transposed ("byte planes") because document ids such
as ``news-0012345`` share most of their bytes position by position: a plane of equal bytes
costs zstd almost nothing, the ids in a row cost several bytes each. Lengths rather than
end offsets for the same reason: ids of similar length give lengths that compress to
almost nothing, end offsets grow and do not.

Cells in a record are in logical key order (remainder, then qualifier) and unique.
Nothing here touches RocksDB; nothing outside the embedded store uses this format.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from ...index.store import Cells

REST_BYTES = 8  # the remainder of a row key after its scan prefix: the simhash
HEADER_BYTES = 6
VARIABLE_WIDTH = 0xFFFF  # the width field of a record whose qualifiers differ in length
MAX_QUALIFIER_BYTES = VARIABLE_WIDTH - 1  # a length must fit the uint16 width field
_NO_RESTS = np.zeros(0, dtype=">u8")
_COUNTS = struct.Struct("<IH")  # the header: n, width
_RESTS = [struct.Struct(f">{n}Q") for n in range(64)]  # the remainders of a small record, one call


class PackedCells(Cells):
    """The cells under one scan prefix, over one record (the store contract's ``Cells``).
    Decodes lazily: a lookup that matches nothing never touches the qualifiers."""

    __slots__ = ("_record", "_n", "_width", "_starts")

    def __init__(self, record: bytes) -> None:
        self._record = record
        self._n, self._width = _COUNTS.unpack_from(record) if record else (0, 0)
        self._starts: list[int] | None = None  # variable-width qualifiers: offsets, made at first use

    def __len__(self) -> int:
        return self._n

    @property
    def rests(self) -> np.ndarray:
        if not self._n:
            return _NO_RESTS
        return np.frombuffer(self._record, dtype=">u8", count=self._n, offset=HEADER_BYTES)

    def rest_values(self) -> Sequence[int]:
        n = self._n
        if not n:
            return ()
        return (_RESTS[n] if n < len(_RESTS) else struct.Struct(f">{n}Q")).unpack_from(self._record, HEADER_BYTES)

    def runs(self) -> Sequence[tuple[int, int, int]]:
        if self._n <= 1:  # the usual record of a sparse index: no tuple of remainders to make
            return ((int.from_bytes(self._record[HEADER_BYTES:HEADER_BYTES + REST_BYTES], "big"), 0, 1),) if self._n else ()
        return super().runs()

    def qualifier(self, i: int) -> bytes:
        record, quals = self._record, HEADER_BYTES + REST_BYTES * self._n
        if self._width != VARIABLE_WIDTH:  # byte t of qualifier i is at quals + t * n + i
            return record[quals + i:quals + self._width * self._n:self._n]
        if self._starts is None:  # once per record: reading every qualifier stays linear
            lengths = np.frombuffer(record, "<u2", self._n, quals)
            self._starts = (quals + 2 * self._n + np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))).tolist()
        return record[self._starts[i]:self._starts[i + 1]]

    def keys(self, prefix: bytes) -> list[bytes]:
        """The logical keys (prefix + remainder + qualifier), in stored order."""
        record = self._record
        return [prefix + record[HEADER_BYTES + REST_BYTES * i:HEADER_BYTES + REST_BYTES * (i + 1)] + self.qualifier(i)
                for i in range(self._n)]

    @classmethod
    def empty(cls) -> "PackedCells":
        return cls(b"")


def encode_record(rests: Sequence[int], quals: Sequence[bytes]) -> bytes:
    """The record of one prefix's cells (remainders and qualifiers, in key order, unique), in
    Python: the bytes ``CellBatch.pack`` writes (tests/test_packed.py compares them), for a
    few cells, where numpy's cost per call is most of ``pack``'s."""
    n = len(rests)
    lengths = list(map(len, quals))
    width = lengths[0] if min(lengths) == max(lengths) else VARIABLE_WIDTH
    if max(lengths) > MAX_QUALIFIER_BYTES:
        raise ValueError(f"a qualifier is at most {MAX_QUALIFIER_BYTES} bytes")
    head = _COUNTS.pack(n, width) + (_RESTS[n] if n < len(_RESTS) else struct.Struct(f">{n}Q")).pack(*rests)
    if width != VARIABLE_WIDTH:  # byte planes (one qualifier is its own)
        return head + (quals[0] if n == 1 else b"".join(map(bytes, zip(*quals))))
    return head + struct.pack(f"<{n}H", *lengths) + b"".join(quals)


def splice(record: bytes, rests: Sequence[int], quals: Sequence[bytes]) -> tuple[bytes, int]:
    """``record`` with the cells (``rests[j]``, ``quals[j]``) added (in key order, unique; a
    cell the record holds already is skipped): (the new record, the cells added). The bytes
    ``encode_record`` gives for all the cells (tests/test_packed.py compares them).

    For a few cells into a big record (the copies of one text, added a batch at a time): a
    binary search per cell among the record's cells of its remainder, then one copy of the
    record with the cells put in. The record's cells are never decoded one by one, so a
    batch costs a copy of the record, not a sort of it. Does not check qualifier lengths."""
    old = PackedCells(record)
    n, width = old._n, old._width
    old_rests = old.rests.astype(np.uint64)
    new = np.asarray(rests, dtype=np.uint64)
    lows, highs = np.searchsorted(old_rests, new, "left").tolist(), np.searchsorted(old_rests, new, "right").tolist()
    at, kept = [], []
    for j, (lo, hi) in enumerate(zip(lows, highs)):
        qual, end = quals[j], hi
        while lo < hi:  # the first of the remainder's cells whose qualifier is not below
            mid = (lo + hi) // 2
            if old.qualifier(mid) < qual:
                lo = mid + 1
            else:
                hi = mid
        if lo < end and old.qualifier(lo) == qual:
            continue  # written again
        at.append(lo)
        kept.append(j)
    if not kept:
        return record, 0
    added_rests = new[kept]
    added = [quals[j] for j in kept]
    rests_bytes = np.insert(old_rests, at, added_rests).astype(">u8").tobytes()
    start = HEADER_BYTES + REST_BYTES * n
    if width != VARIABLE_WIDTH and all(len(q) == width for q in added):  # byte planes stay planes
        planes = np.frombuffer(record, np.uint8, width * n, start).reshape(width, n)
        columns = np.frombuffer(b"".join(added), np.uint8).reshape(len(added), width).T
        body = np.insert(planes, at, columns, axis=1).tobytes()
        return _COUNTS.pack(n + len(added), width) + rests_bytes + body, len(added)
    if width == VARIABLE_WIDTH:
        lengths = np.frombuffer(record, "<u2", n, start)
        flat = record[start + 2 * n:]
    else:  # one width before, several now: the planes back to qualifiers one after another
        lengths = np.full(n, width, dtype="<u2")
        flat = np.frombuffer(record, np.uint8, width * n, start).reshape(width, n).T.tobytes()
    offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))[at].tolist()
    pieces, done = [], 0
    for offset, qual in zip(offsets, added):
        pieces += (flat[done:offset], qual)
        done = offset
    pieces.append(flat[done:])
    new_lengths = np.insert(lengths.astype("<u2"), at, [len(q) for q in added]).astype("<u2").tobytes()
    return _COUNTS.pack(n + len(added), VARIABLE_WIDTH) + rests_bytes + new_lengths + b"".join(pieces), len(added)
