"""Ray Data callables for ``Dataset.map_batches`` (``pip install dedup-hbase[ray]``), over the Arrow
batch API (arrow.py), with ``batch_format="pyarrow"``:

>>> import ray
>>> from dedup_hbase.pipelines import ray_data
>>> ds = ray.data.read_parquet("dump2/")  # doctest: +SKIP
>>> ds.map_batches(ray_data.fingerprints, batch_format="pyarrow")  # doctest: +SKIP
>>> ds.map_batches(ray_data.AddNew, fn_constructor_kwargs={"store": "hbase://host:9090/"},
...                concurrency=4, batch_format="pyarrow")  # doctest: +SKIP

``fingerprints`` is a function (no index: Ray runs it in tasks); ``Check`` and ``AddNew`` are
classes, run by Ray in actors: each actor opens the index at ``store`` once and answers every
batch it is given with ``arrow.check`` or ``arrow.add_new``. Several ``AddNew`` actors on one
HBase index rely on the store's fleet locks, as the service's servers do: the result is that of
one writer (no two added within k). An embedded index is one process's: ``concurrency=1``.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..index.index import Index
from ..stores import open_store
from . import arrow


def fingerprints(batch: Any, *, id_column: str = "id", text_column: str = "text") -> Any:
    """``arrow.fingerprints(batch)`` with the default fingerprinter (jieba, seed 0): ``simhash``
    and ``error``. For an index's own fingerprinter and signatures, ``Check`` gives them too."""
    return arrow.fingerprints(_table(batch), id_column=id_column, text_column=text_column)


class _OnIndex:
    def __init__(self, store: str, *, id_column: str = "id", text_column: str = "text", threads: int = 1) -> None:
        if not isinstance(store, str) or not store:
            raise InvalidInput(f"store must be a store URL (str), not {store!r}", arguments=("store",))
        self.index = Index.open(open_store(store))
        self.columns = {"id_column": id_column, "text_column": text_column, "threads": threads}


class Check(_OnIndex):
    """Per batch, ``arrow.check(batch, index)``: ``matches`` and ``match_count`` (and the
    fingerprints' columns) of each row in the index at ``store``. Writes nothing; does not
    compare rows with each other. ``k`` and ``max_matches``: as ``arrow.check``'s."""

    def __init__(self, store: str, *, k: int | None = None, max_matches: int | None = 1000, **columns: Any) -> None:
        super().__init__(store, **columns)
        self.k, self.max_matches = k, max_matches

    def __call__(self, batch: Any) -> Any:
        return arrow.check(_table(batch), self.index, k=self.k, max_matches=self.max_matches, **self.columns)


class AddNew(_OnIndex):
    """Per batch, ``arrow.add_new(batch, index)``: insert-if-new into the index at ``store``,
    ``added`` per row and ``via``, ``distance`` where not added. Does not drop the rows not added
    (a ``Dataset.filter`` on ``added`` does) nor order batches: which of two near rows in batches
    of two actors is added is the one whose batch took the index's locks first (with
    ``DataContext.execution_options.preserve_order`` and one actor, input order)."""

    def __call__(self, batch: Any) -> Any:
        return arrow.add_new(_table(batch), self.index, **self.columns)


def _table(batch: Any) -> Any:
    import pyarrow as pa

    if not isinstance(batch, (pa.Table, pa.RecordBatch)):
        raise InvalidInput(f"a batch must be a pyarrow Table, not {type(batch).__name__}: "
                           "map_batches(..., batch_format=\"pyarrow\")", arguments=("batch_format",))
    return batch
