"""Memory a job has let go, given back to the system between its phases.

glibc's allocator keeps freed blocks of its heap for later use: after a job's phase lets go of
arrays that came from the heap (its dynamic threshold sends blocks of up to 32 MB there once a
larger one has been freed), the process keeps their pages, and a `groups` run of 10^7
fingerprints held 80 MB more than it used. ``give_back`` asks glibc to return every whole free
page (``malloc_trim``); elsewhere (another C library) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the freed pages of the heap to the system (a no-op without glibc)."""
    trim = _trim()
    if trim is not None:
        trim(0)
