"""The row-key layout: how a 64-bit fingerprint becomes index rows and prefix scans.

The idea, explained once (Manku, Jain, Das Sarma, WWW 2007)
-------------------------------------------------------------

Cut the 64 bits of a fingerprint into B blocks. Two fingerprints that differ in at
most k bits can disagree in at most k blocks, so when k <= B - m, at least m blocks
agree exactly (pigeonhole). Store one copy of every fingerprint per combination of
m blocks, keyed by those blocks; a lookup then reads, for every combination, the
copies whose chosen blocks equal the query's. That is one prefix scan per
combination, and every fingerprint within k bits is among the candidates. A final
XOR + popcount keeps the true matches.

::

    simhash  |  a (16)  |  b (16)  |  c (16)  |  d (16)  |      4 blocks, m = 1
    flag 1   |  a  ...                                         segment = a << 16
    flag 2   |  b  ...                                         segment = b << 16
    ...
    simhash  | a (13) | b (13) | c (13) | d (13) | e (12) |    5 blocks, m = 2
    flag 1   | a  b  ...                                       segment = (a,b) << 6
    flag 4   | a  e  ...                                       segment = (a,e) << 7

Row key, 13 bytes, all big-endian::

    segment (4 bytes) | flag (1 byte) | simhash (8 bytes)
    '---- scan prefix: 5 bytes ----'

The *segment* holds the chosen blocks' bits concatenated in block order and
left-aligned in a 32-bit word (low bits zero), so the first key byte is uniformly
spread and regions pre-split on it share the load. Blocks are taken from the most
significant end; when 64 does not divide evenly, the first blocks get the extra bit
(5 blocks: 13, 13, 13, 13, 12 bits). Flags number the block combinations from 1 in
lexicographic order (5 blocks, m = 2: ab, ac, ad, ae, bc, bd, be, cd, ce, de).

An index with several signatures per document (text/signatures.py: the body's SimHash, its
lead's) keeps each signature's rows under flags of its own: signature j (0 for the body) numbers
its combinations from flag ``16 * j + 1`` (the lead of a 4-split: flags 17-20), so a scan of one
signature never meets another's rows and one scheme serves up to 15 signatures of at most 16
flags each.

A row holds one cell per document, its column the document's id. In an index with sketches (a
confirmation, confirm.py, or the short-text rule, text/units.py) the column also holds the
document's sketch, so a scan brings it: the id's bytes with each 0x00 as 0x00 0xFF, then 0x00
0x00, then the sketch's 8 bytes (big-endian), then for a short text under the rule its kept text
(UTF-8); columns sort as their ids do (``cell_qualifier``).

This module does no I/O and knows nothing about stores.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from itertools import combinations
from math import comb
from typing import TYPE_CHECKING

from ..errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

KEY_BYTES = 13
PREFIX_BYTES = 5
SEGMENT_BITS = 32
_KEY = struct.Struct(">IBQ")
_REST = struct.Struct(">Q")
_PREFIX = struct.Struct(">IB")
_U64 = (1 << 64) - 1
_KEY_DTYPE = [("segment", ">u4"), ("flag", "u1"), ("simhash", ">u8")]  # 13 bytes, packed
SIGNATURE_FLAGS = 16  # flags per signature: signature j's flags start at SIGNATURE_FLAGS * j + 1
_FEW = 8  # prefix_ids of at most this many simhashes: one at a time in Python ints
SKETCH_END = b"\x00\x00"  # ends the escaped id of a column with a sketch, before the sketch
SKETCH_BYTES = len(SKETCH_END) + 8  # what a sketch adds to a cell's column (and ``plan``'s bytes)


def cell_qualifier(raw_id: bytes, sketch: int, kept: bytes = b"") -> bytes:
    """The column of a document's index cells in an index with sketches: its id's bytes escaped
    (0x00 -> 0x00 0xFF), ``SKETCH_END``, the sketch (8 bytes, big-endian), then ``kept`` (a short
    text as the short-text rule keeps it, UTF-8: text/units.py; none for other texts). Columns
    sort as the ids do: ``SKETCH_END`` sorts below any byte of an id and below an escaped 0x00."""
    return raw_id.replace(b"\x00", b"\x00\xff") + SKETCH_END + sketch.to_bytes(8, "big") + kept


def split_qualifier(qualifier: bytes) -> tuple[bytes, int, bytes]:
    """``cell_qualifier``'s inverse: (the id's bytes, the sketch, the kept text's bytes)."""
    end = qualifier.find(SKETCH_END)  # an escaped id holds no 0x00 0x00
    escaped = qualifier[:end]
    return (escaped.replace(b"\x00\xff", b"\x00") if b"\x00" in escaped else escaped,
            int.from_bytes(qualifier[end + 2:end + SKETCH_BYTES], "big"), qualifier[end + SKETCH_BYTES:])


@dataclass(frozen=True)
class Scheme:
    """B blocks taken m at a time; guarantees every match within ``max_k`` bits.

    ``Scheme(4, 1)`` is the 4-split (flags 1-4), ``Scheme(5, 2)`` the 5-split
    (flags 1-10); ``first_flag`` moves the flag bytes (``for_signature``), not the blocks.
    Construction checks the parameters; it does not touch a store.
    """

    blocks: int
    take: int
    first_flag: int = 1
    widths: tuple[int, ...] = field(init=False, repr=False)
    shifts: tuple[int, ...] = field(init=False, repr=False)
    flags: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 2 <= self.blocks <= 64:
            raise InvalidInput(f"blocks must be between 2 and 64, not {self.blocks}")
        if not 1 <= self.take < self.blocks:
            raise InvalidInput(f"take must be between 1 and blocks - 1, not {self.take}")
        if self.first_flag - 1 + comb(self.blocks, self.take) > 255 or self.first_flag < 1:
            raise InvalidInput(
                f"{self.blocks} blocks taken {self.take} at a time need "
                f"{comb(self.blocks, self.take)} flags{f' from flag {self.first_flag}' if self.first_flag != 1 else ''}; "
                "a flag is one byte (at most 255)")
        base, extra = divmod(64, self.blocks)
        widths = tuple(base + (1 if i < extra else 0) for i in range(self.blocks))
        shifts, top = [], 64
        for width in widths:
            top -= width
            shifts.append(top)
        flags = tuple(combinations(range(self.blocks), self.take))
        widest = max(sum(widths[i] for i in combo) for combo in flags)
        if widest > SEGMENT_BITS:
            raise InvalidInput(
                f"{self.blocks} blocks taken {self.take} at a time make {widest}-bit "
                f"segments; a segment holds at most {SEGMENT_BITS} bits")
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "shifts", tuple(shifts))
        object.__setattr__(self, "flags", flags)
        # per flag, its blocks as (shift, mask, shift within the segment): ``prefixes`` in a few
        # operations per flag instead of ``segment``'s loop
        object.__setattr__(self, "_parts", tuple(
            (flag, tuple((shifts[i], (1 << widths[i]) - 1,
                          SEGMENT_BITS - sum(widths[j] for j in combo[:n + 1])) for n, i in enumerate(combo)))
            for flag, combo in enumerate(flags, self.first_flag)))

    # -- naming --------------------------------------------------------------

    @property
    def name(self) -> str:
        """``"4"`` and ``"5"`` for the two classic schemes, else ``"B/m"``."""
        if (self.blocks, self.take) in ((4, 1), (5, 2)):
            return str(self.blocks)
        return f"{self.blocks}/{self.take}"

    @classmethod
    def parse(cls, text: str | int) -> "Scheme":
        """``4`` -> 4 blocks taken 1; ``5`` -> 5 blocks taken 2; ``"B/m"`` general."""
        text = str(text).strip()
        if text == "4":
            return cls(4, 1)
        if text == "5":
            return cls(5, 2)
        blocks, sep, take = text.partition("/")
        if sep and blocks.isdigit() and take.isdigit():
            return cls(int(blocks), int(take))
        raise InvalidInput(f"unknown scheme {text!r}: use 4, 5 or BLOCKS/TAKE such as 6/3")

    def for_signature(self, j: int) -> "Scheme":
        """This scheme's blocks under signature ``j``'s flags (j = 0: the body, flags from 1)."""
        if len(self.flags) > SIGNATURE_FLAGS and j:
            raise InvalidInput(f"scheme {self.name} has {len(self.flags)} flags; an index with several "
                               f"signatures takes schemes of at most {SIGNATURE_FLAGS}")
        return Scheme(self.blocks, self.take, SIGNATURE_FLAGS * j + 1)

    @property
    def flag_bytes(self) -> range:
        """The flag bytes of this scheme's rows."""
        return range(self.first_flag, self.first_flag + len(self.flags))

    @property
    def description(self) -> str:
        """``4 blocks taken 1 at a time, 4 rows per document, finds every match within 3 bits``."""
        return (f"{self.blocks} blocks taken {self.take} at a time, {len(self.flags)} rows per document, "
                f"finds every match within {self.max_k} bits")

    @property
    def max_k(self) -> int:
        """The largest Hamming distance for which every match is found."""
        return self.blocks - self.take

    def segment_bits(self, flag: int) -> int:
        """The segment bits of ``flag`` (here and in ``segment(s)``: 1-based, counted from
        ``first_flag``)."""
        return sum(self.widths[i] for i in self.flags[flag - 1])

    def check_k(self, k: int) -> int:
        """Return ``k`` if this scheme finds every match within ``k`` bits, else raise."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidInput(f"k must be a whole number >= 0, not {k!r}")
        if k > self.max_k:
            raise InvalidInput(
                f"k={k} is more than scheme {self.name} can guarantee: {self.blocks} blocks "
                f"taken {self.take} at a time find every match within {self.max_k} bits")
        return k

    # -- keys ----------------------------------------------------------------

    def segment(self, simhash: int, flag: int) -> int:
        """The 32-bit segment of ``simhash`` for ``flag`` (1-based)."""
        value, bits = 0, 0
        for i in self.flags[flag - 1]:
            width = self.widths[i]
            value = (value << width) | ((simhash >> self.shifts[i]) & ((1 << width) - 1))
            bits += width
        return value << (SEGMENT_BITS - bits)

    def segments(self, simhashes: "np.ndarray", flag: int) -> "np.ndarray":
        """``segment`` of every simhash of a uint64 array, vectorised (uint64 result)."""
        import numpy as np

        value = np.zeros(len(simhashes), dtype=np.uint64)
        bits = 0
        for i in self.flags[flag - 1]:
            width = self.widths[i]
            block = (simhashes >> np.uint64(self.shifts[i])) & np.uint64((1 << width) - 1)
            value = (value << np.uint64(width)) | block
            bits += width
        return value << np.uint64(SEGMENT_BITS - bits)

    def key_table(self, simhashes: "np.ndarray") -> bytes:
        """The row keys of many simhashes at once, vectorised, flag by flag: for flag f
        (1-based) and simhash i of n, bytes ``[((f - 1) * n + i) * 13 : ... + 13]`` are
        ``row_keys(s_i)[f - 1]``. The first 5 bytes of each are its scan prefix."""
        import numpy as np

        if len(simhashes) <= _FEW:  # a few (an online add): ``prefixes`` per simhash costs less than numpy's calls
            few = [int(s) for s in simhashes]
            rows = [self.prefixes(s) for s in few]
            return b"".join(rows[i][f] + _REST.pack(s) for f in range(len(self.flags)) for i, s in enumerate(few))
        simhashes = np.asarray(simhashes, dtype=np.uint64)
        table = np.empty((len(self.flags), len(simhashes)), dtype=_KEY_DTYPE)
        for flag in range(1, len(self.flags) + 1):
            table["segment"][flag - 1] = self.segments(simhashes, flag)
            table["flag"][flag - 1] = self.first_flag + flag - 1
            table["simhash"][flag - 1] = simhashes
        return table.tobytes()

    def prefix_ids(self, simhashes: "np.ndarray") -> "np.ndarray":
        """The scan prefixes of many simhashes as integers (segment << 8 | flag), vectorised:
        shape (len(simhashes), flags), uint64; ``prefixes(s)`` are their 5-byte big-endian forms."""
        import numpy as np

        simhashes = np.asarray(simhashes, dtype=np.uint64)
        flags, base = range(1, len(self.flags) + 1), self.first_flag - 1
        if len(simhashes) <= _FEW:  # a few (a service request): ``segment`` per simhash costs less than numpy's calls
            return np.array([[(self.segment(s, f) << 8) | (base + f) for f in flags] for s in simhashes.tolist()],
                            dtype=np.uint64).reshape(len(simhashes), len(self.flags))
        return np.stack([(self.segments(simhashes, flag) << np.uint64(8)) | np.uint64(base + flag)
                         for flag in flags], axis=1)

    def prefixes(self, simhash: int) -> list[bytes]:
        """The 5-byte scan prefixes of ``simhash``, one per flag, in flag order."""
        pack = _PREFIX.pack
        if self.take == 1:
            return [pack(((simhash >> shift) & mask) << at, flag) for flag, ((shift, mask, at),) in self._parts]
        return [pack(sum(((simhash >> shift) & mask) << at for shift, mask, at in parts), flag)
                for flag, parts in self._parts]

    def index_keys(self, raw_ids: "Sequence[bytes]", simhashes: "Sequence[int]") -> list[bytes]:
        """The index keys (row key + document id) of documents, sorted: every flag's row key of
        ``simhashes[i]`` followed by ``raw_ids[i]``. What deleting the documents' index rows needs."""
        table, ids = self.key_table(simhashes), list(raw_ids) * len(self.flags)
        keys = [table[j * KEY_BYTES:(j + 1) * KEY_BYTES] + ids[j] for j in range(len(ids))]
        keys.sort()
        return keys

    def row_keys(self, simhash: int) -> list[bytes]:
        """The 13-byte index row keys of ``simhash``, one per flag, in flag order."""
        if not 0 <= simhash <= _U64:
            raise InvalidInput(f"a simhash is an unsigned 64-bit number, not {simhash!r}")
        return [_KEY.pack(self.segment(simhash, f), self.first_flag + f - 1, simhash)
                for f in range(1, len(self.flags) + 1)]
