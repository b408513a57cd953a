"""Retention: an index made with ``init --ttl DURATION`` forgets documents older than that.

A document's age is counted from its last write (an add, or an upsert that rewrites it).
HBase expires cells by itself: the index and docs tables get the TTL as their column family's
``TTL`` at creation, so its reads skip older cells and its compactions drop them. The embedded
store keeps no time per cell in its packed index records, so the index does it there, and on
HBase too (one rule for both): a lookup keeps only the matches whose document row exists and
was written within the TTL (``loaded`` in its metadata: the index writes it for every document
of an index with a TTL), and ``remove_expired`` deletes the older documents and their index
cells (``serve`` runs it at start and then every TTL/2, at most hourly).

An add may give its documents a shorter life than the index's TTL (the service's
``POST /v1/add?ttl=DURATION``): their metadata keeps it as ``ttl`` (seconds), and they expire
that long after their write, by the same rule (HBase keeps their cells until the column
family's TTL, but no lookup returns them, and ``remove_expired`` deletes them).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidInput
from .candidates import Run
from .ids import encode_id

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+)([smhd])")


def parse_duration(text: str) -> int:
    """Seconds of a duration such as ``90s``, ``15m``, ``12h``, ``30d``."""
    found = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if not found or int(found.group(1)) < 1:
        raise InvalidInput(f"a duration is a whole number >= 1 and a unit s, m, h or d (90s, 12h, 30d), not {text!r}")
    return int(found.group(1)) * UNITS[found.group(2)]


def describe(seconds: int) -> str:
    """``parse_duration``'s inverse, in the largest whole unit: 2592000 -> ``30d``."""
    for unit in ("d", "h", "m"):
        if seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"


def expires_at(value: bytes | None, ttl: int, head: int = 8) -> float | None:
    """When the document of a document row expires: ``ttl`` seconds (the index's) after it was
    written (``loaded`` of its metadata), or its own ``ttl`` after (an add given a shorter one);
    None: no row or no time. ``head``: the bytes of simhashes before the metadata (8 a
    signature)."""
    if value is None or len(value) <= head:
        return None
    return meta_expires_at(json.loads(value[head:]), ttl)


def meta_expires_at(meta: dict[str, Any], ttl: int) -> float | None:
    """``expires_at`` of a document's metadata (``Document.meta``)."""
    loaded, own = meta.get("loaded"), meta.get("ttl")
    if loaded is None:
        return None
    return loaded + (ttl if own is None else min(own, ttl))


def unexpired_runs(store: Any, found: Sequence[Sequence[Run]], ttl: int, now: float | None = None,
                   head: int = 8) -> list[list[Run]]:
    """``found`` (per query, its runs) without the documents that have expired (``expires_at``)
    or have no row, runs left empty dropped: one read of the document rows of every id of the
    runs (the lookup of an index with a TTL, and ``check --engine spark``'s, call it)."""
    ids = sorted({doc_id for runs in found for r in runs for doc_id in r.ids})
    if not ids:
        return [list(runs) for runs in found]
    now = time.time() if now is None else now
    ends = [expires_at(v, ttl, head) for v in store.get("docs", [encode_id(i) for i in ids])]
    alive = {i for i, end in zip(ids, ends) if end is not None and end > now}
    kept = [[Run(r.distance, r.simhash, [i for i in r.ids if i in alive]) for r in runs] for runs in found]
    return [[r for r in runs if r.ids] for runs in kept]


def expired_ids(store: Any, ttl: int, now: float | None = None, head: int = 8) -> list[str]:
    """Every document that has expired (``expires_at``; a read of the whole docs table)."""
    now = time.time() if now is None else now
    return [key.decode("utf-8") for key, value in store.iterate("docs")
            if (end := expires_at(value, ttl, head)) is not None and end <= now]


def remove_expired(index: Any, chunk: int = 10_000) -> int:
    """Delete the documents of ``index`` older than its TTL, and their index cells; how many."""
    if not index.ttl:
        return 0
    doomed: Sequence[str] = expired_ids(index.store, index.ttl, head=index.head)
    for start in range(0, len(doomed), chunk):
        index.delete(doomed[start:start + chunk])
    return len(doomed)
