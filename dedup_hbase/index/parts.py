"""Searches over many fingerprints in bounded memory: the values cut into parts by their top
bits, each part sorted and compared on its own, so that a search's transient arrays are a
part's (about 2^20 values) whatever the whole holds; positions as int32 below 2^31; and the
memory a phase let go given back to the system before the next one starts.

glibc's allocator keeps freed blocks of its heap for later use (its dynamic threshold sends
arrays of up to 32 MB there once a larger one has been freed), so a process that let go of a
phase's arrays kept their pages: `groups` of 10^8 fingerprints held 1.4 GB more than it used
during its pair search. ``give_back`` asks glibc to return every whole free page
(``malloc_trim``); with another C library it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np


def parts_of(n: int) -> int:
    """How many parts a search over ``n`` values is cut into, a power of two: about 2^20
    values a part (one below 2^21), at most 2^12."""
    return 1 << min(12, max(0, n.bit_length() - 21))


def position_type(n: int) -> type:
    """The integer type of positions among ``n``: int32 below 2^31 (half the memory of a
    position array at 10^8), else int64."""
    return np.int32 if n < 2**31 else np.int64


def distinct(batches: list[np.ndarray], parts: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)`` of the uint64 arrays
    ``batches`` taken as one (the same three arrays, positions as ``position_type``), in
    ``parts`` parts by the top bits (a power of two; by default ``parts_of``). The batches are
    first moved into their parts, each let go once moved (the list is emptied), then each
    part is made unique and let go: the memory is about 16 bytes a value besides a part's
    sort, never the input and its sort at once, nor the parts' results and their whole."""
    n = sum(len(batch) for batch in batches)
    kind = position_type(n)
    parts = parts_of(n) if parts is None else parts
    bits = parts.bit_length() - 1
    values: list[list[np.ndarray]] = [[] for _ in range(parts)]
    positions: list[list[np.ndarray]] = [[] for _ in range(parts)]
    offset = 0
    batches.reverse()
    while batches:
        batch = np.asarray(batches.pop(), dtype=np.uint64)
        if not bits:  # one part (a small search: a request's, a batch's)
            values[0].append(batch)
            positions[0].append(np.arange(offset, offset + len(batch), dtype=kind))
        else:
            code = (batch >> np.uint64(64 - bits)).astype(np.uint16)
            order = np.argsort(code, kind="stable")  # a radix sort of 16-bit codes
            cuts = np.searchsorted(code[order], np.arange(parts + 1))
            for part in np.flatnonzero(np.diff(cuts)).tolist():
                mine = order[cuts[part]:cuts[part + 1]]
                values[part].append(batch[mine])
                positions[part].append((mine + offset).astype(kind))
            del code, order
        offset += len(batch)
        del batch
    inverse = np.empty(n, kind)
    unique, first, done = np.empty(n, np.uint64), np.empty(n, kind), 0  # untouched pages take no memory
    for part in range(parts):
        if not values[part]:
            continue
        mine, at = np.concatenate(values[part]), np.concatenate(positions[part])
        values[part] = positions[part] = None
        part_unique, part_first, local = np.unique(mine, return_index=True, return_inverse=True)
        inverse[at] = local.ravel() + done
        unique[done:done + len(part_unique)] = part_unique
        first[done:done + len(part_unique)] = at[part_first]
        done += len(part_unique)
    unique.resize(done, refcheck=False)  # in place (no copy beside it); nothing else refers to them
    first.resize(done, refcheck=False)
    return unique, first, inverse


@functools.cache
def _trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the freed pages of the heap to the system (a no-op without glibc). It walks the
    heap (milliseconds on a fragmented one): for the end of a large phase, never per request."""
    trim = _trim()
    if trim is not None:
        trim(0)
