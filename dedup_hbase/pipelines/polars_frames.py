"""The Arrow batch API (arrow.py) for polars DataFrames (``pip install dedup-hbase[polars]``): a
DataFrame in, a DataFrame out, the same rows in the same order, the columns ``arrow`` adds with
their Arrow types (``simhash`` u64, ``matches`` list[struct[id, distance: i8]]). Each call is
``DataFrame.to_arrow`` (polars' strings are Arrow's ``large_string``, which ``arrow`` reads as
they are), the ``arrow`` call and ``polars.from_arrow``, and nothing else. A LazyFrame is not
taken: ``collect()`` it first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidInput
from . import arrow


def _table(frame: Any, what: str = "frame"):
    import polars as pl

    if not isinstance(frame, pl.DataFrame):
        raise InvalidInput(f"{what} must be a polars DataFrame, not {type(frame).__name__}"
                           f"{' (collect() it)' if isinstance(frame, pl.LazyFrame) else ''}", arguments=(what,))
    return frame.to_arrow()


def _frame(table: Any):
    import polars as pl

    return pl.from_arrow(table)


def fingerprints(frame: Any, index=None, **options: Any):
    """``arrow.fingerprints`` of a DataFrame (``options``: its keyword arguments)."""
    return _frame(arrow.fingerprints(_table(frame), index, **options))


def check(frame: Any, index, **options: Any):
    """``arrow.check`` of a DataFrame: ``matches`` and ``match_count`` per row; writes nothing."""
    return _frame(arrow.check(_table(frame), index, **options))


def add_new(frame: Any, index, **options: Any):
    """``arrow.add_new`` (insert-if-new, the service's rule) of a DataFrame."""
    return _frame(arrow.add_new(_table(frame), index, **options))


def groups(frames: Iterable[Any], **options: Any):
    """``arrow.groups`` of DataFrames in order: one DataFrame, a row per input row."""
    import polars as pl

    if isinstance(frames, pl.DataFrame):
        frames = [frames]
    return _frame(arrow.groups((_table(f, "frames") for f in frames), **options))
