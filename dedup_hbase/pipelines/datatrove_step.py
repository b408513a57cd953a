"""A datatrove step (``pip install dedup-hbase[datatrove]``): insert-if-new of the documents that
pass through it against an index, the near ones dropped or tagged. The incremental dedup of a
new dump against every dump seen before:

>>> from datatrove.executor import LocalPipelineExecutor
>>> from datatrove.pipeline.readers import JsonlReader
>>> from datatrove.pipeline.writers import JsonlWriter
>>> from dedup_hbase.pipelines.datatrove_step import NearDuplicates
>>> LocalPipelineExecutor([JsonlReader("dump2/"), NearDuplicates("hbase://host:9090/"),
...                        JsonlWriter("kept/")], tasks=4).run()  # doctest: +SKIP

Each batch of ``batch_size`` documents is ``arrow.add_new`` (the service's rule: nothing indexed
and nothing earlier in the batch within k; several tasks on one HBase index through the store's
fleet locks), and nothing else: the step fingerprints and decides nothing itself.
"""

from __future__ import annotations

import contextlib
from typing import Any

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.utils.batching import batched

from ..errors import InvalidInput
from ..index.index import Index
from ..stores import open_store
from . import arrow

MODES = ("drop", "tag")
KEYS = ("dedup_added", "dedup_via", "dedup_distance", "dedup_error")  # the metadata a document gets


class NearDuplicates(PipelineStep):
    """Insert-if-new of every document against the index at ``store`` (a store URL: each task
    opens it on its first batch and closes it at its end; it must exist: ``dedup-hbase init``).

    Every document gets ``metadata`` ``dedup_added`` (it was indexed), ``dedup_via`` and
    ``dedup_distance`` (the nearest indexed or earlier document within k, where not added) and
    ``dedup_error`` (why it has no fingerprint: an empty or featureless text; such a document is
    not added and not dropped). ``mode="drop"`` forwards only the documents that are not near
    another (those refused go to ``exclusion_writer`` when given); ``mode="tag"`` forwards
    every document. ``batch_size``: the documents of one ``add_new`` call (compared with each
    other in memory).

    Does not: create the index, compare documents of different tasks other than through the
    index, keep the text anywhere (the index holds ids and fingerprints), or tell a document
    seen again under its own id from a new one (its own id indexed counts as near: a dump given
    twice adds nothing the second time). An embedded index is one process's: run it with
    ``workers=1`` (tasks then run one after another in this process); several workers need
    HBase.
    """

    name = "dedup-hbase near-duplicates"
    type = "🫂 - DEDUP"

    def __init__(self, store: str, *, mode: str = "drop", batch_size: int = 1000, exclusion_writer: Any = None,
                 threads: int = 1) -> None:
        super().__init__()
        if not isinstance(store, str) or not store:
            raise InvalidInput(f"store must be a store URL (str), not {store!r}", arguments=("store",))
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}, not {mode!r}", arguments=("mode",))
        for name, value in (("batch_size", batch_size), ("threads", threads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"{name} must be a positive int, not {value!r}", arguments=(name,))
        if exclusion_writer is not None and mode != "drop":
            raise InvalidInput("exclusion_writer is for mode='drop' (mode='tag' forwards every document)",
                               arguments=("exclusion_writer",))
        self.store, self.mode, self.batch_size = store, mode, batch_size
        self.exclusion_writer, self.threads = exclusion_writer, threads

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow as pa

        if data is None:
            return
        writer = self.exclusion_writer if self.exclusion_writer is not None else contextlib.nullcontext()
        index = None
        try:
            with writer as excluded:
                for docs in batched(data, self.batch_size):
                    if index is None:
                        index = Index.open(open_store(self.store))
                    table = pa.table({"id": pa.array([d.id for d in docs], pa.string()),
                                      "text": pa.array([d.text for d in docs], pa.string())})
                    with self.track_time("batch"):
                        out = arrow.add_new(table, index, threads=self.threads)
                    self.stat_update("batches")
                    columns = [out.column(c).to_pylist() for c in ("added", "via", "distance", "error")]
                    for doc, *tags in zip(docs, *columns):
                        doc.metadata.update(zip(KEYS, tags))
                        near = tags[1] is not None
                        self.stat_update("total", "near" if near else "error" if tags[3] else "added")
                        if near and self.mode == "drop":
                            self.stat_update("dropped")
                            if self.exclusion_writer is not None:
                                excluded.write(doc, rank)
                            continue
                        self.stat_update("forwarded")
                        yield doc
        finally:
            if index is not None:
                index.store.close()
