"""The Arrow batch API (arrow.py) for pandas DataFrames: a DataFrame in, a DataFrame out, the
same rows in the same order with the frame's own index, the columns ``arrow`` adds as nullable
pandas types (``simhash`` as ``UInt64``: a float would lose bits). pandas is not a dependency of
dedup-hbase: a caller that has DataFrames has it. Each call converts (``pyarrow.Table.from_pandas``
and ``to_pandas``: a copy of the columns) and does nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidInput
from . import arrow


def _table(frame: Any, what: str = "frame"):
    import pandas as pd
    import pyarrow as pa

    if not isinstance(frame, pd.DataFrame):
        raise InvalidInput(f"{what} must be a pandas DataFrame, not {type(frame).__name__}", arguments=(what,))
    return pa.Table.from_pandas(frame, preserve_index=False)


def _frame(table: Any, index: Any):
    import pandas as pd
    import pyarrow as pa

    nullable = {pa.uint64(): pd.UInt64Dtype(), pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int8(): pd.Int8Dtype(), pa.bool_(): pd.BooleanDtype()}
    out = table.to_pandas(types_mapper=nullable.get)
    if index is not None:
        out.index = index
    return out


def fingerprints(frame: Any, index=None, **options: Any):
    """``arrow.fingerprints`` of a DataFrame (``options``: its keyword arguments)."""
    return _frame(arrow.fingerprints(_table(frame), index, **options), frame.index)


def check(frame: Any, index, **options: Any):
    """``arrow.check`` of a DataFrame; ``matches`` holds a list of ``{"id", "distance"}`` a row."""
    return _frame(arrow.check(_table(frame), index, **options), frame.index)


def add_new(frame: Any, index, **options: Any):
    """``arrow.add_new`` (insert-if-new, the service's rule) of a DataFrame."""
    return _frame(arrow.add_new(_table(frame), index, **options), frame.index)


def groups(frames: Iterable[Any], **options: Any):
    """``arrow.groups`` of DataFrames in order: one DataFrame, a row per input row (a new index)."""
    import pandas as pd

    if isinstance(frames, pd.DataFrame):
        frames = [frames]
    return _frame(arrow.groups((_table(f, "frames") for f in frames), **options), None)
