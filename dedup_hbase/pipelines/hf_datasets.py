"""Hugging Face ``datasets`` functions for ``Dataset.map(batched=True)`` (``pip install
dedup-hbase[hf]``), over the Arrow batch API (arrow.py):

>>> from datasets import Dataset
>>> from dedup_hbase import Index, open_store
>>> from dedup_hbase.pipelines import hf_datasets
>>> index = Index.create(open_store("memory:"))
>>> ds = Dataset.from_dict({"id": ["a", "b"], "text": ["国家卫生健康委通报最新疫情"] * 2})
>>> ds.with_format("arrow").map(hf_datasets.add_new(index), batched=True)["added"].to_pylist()
[True, False]

Each factory returns the function ``map`` calls on a batch: the dataset ``with_format("arrow")``
gives it a pyarrow Table (no Python object per row) and it returns the ``arrow`` call's Table,
the batch's columns and the new ones with their Arrow types (``simhash`` uint64, ``matches``
list<struct<id, distance: int8>>). It refuses the default batch, a dict of Python lists:
``map`` would store a ``simhash`` above 2**63 as a negative int64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput
from ..index.index import Index
from . import arrow


def fingerprints(index: Index | None = None, **options: Any) -> Callable[[Any], Any]:
    """The function of ``arrow.fingerprints(batch, index, **options)``."""
    return _batched(lambda table: arrow.fingerprints(table, index, **options), options)


def check(index: Index, **options: Any) -> Callable[[Any], Any]:
    """The function of ``arrow.check(batch, index, **options)``: each row's ``matches`` and
    ``match_count`` in ``index``. Writes nothing; does not compare rows with each other."""
    _index(index)
    return _batched(lambda table: arrow.check(table, index, **options), options)


def add_new(index: Index, **options: Any) -> Callable[[Any], Any]:
    """The function of ``arrow.add_new(batch, index, **options)``: insert-if-new, ``added``,
    ``via``, ``distance`` per row. ``datasets`` cannot hash the function (it holds an open
    index) and warns once: each ``map`` calls it anew, never answering from a cache.
    ``num_proc`` > 1 copies the function to other processes: an embedded index is one
    process's (keep ``num_proc=1``)."""
    _index(index)
    return _batched(lambda table: arrow.add_new(table, index, **options), options)


def _index(index: Any) -> None:
    if not isinstance(index, Index):
        raise InvalidInput(f"index must be an Index (Index.open or Index.create), not {type(index).__name__}",
                           arguments=("index",))


def _batched(call: Callable[[Any], Any], options: dict[str, Any]) -> Callable[[Any], Any]:
    def function(batch: Any) -> Any:
        import pyarrow as pa

        if not isinstance(batch, (pa.Table, pa.RecordBatch)):
            raise InvalidInput(f"a batch must be a pyarrow Table, not {type(batch).__name__}: "
                               "dataset.with_format(\"arrow\").map(..., batched=True)", arguments=("batch",))
        return call(batch)

    return function
