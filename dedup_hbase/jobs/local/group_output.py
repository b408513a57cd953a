"""The local engine's groups written out (outputs.py defines the files) from ``Linked``
groups, in bounded memory: the documents' ids wait in a spill file beside the output while the
groups are found (``IdSpill``), and the Parquet rows are made and written a slice of the input
at a time; only the ids of documents in groups are held, to name groups and vias.

``groups_table`` makes the rows of one slice: the same function for a whole input (the Arrow
batch API, pipelines/arrow.py) and for each slice of a ``groups`` run.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..outputs import (
    DOCUMENTS,
    DROPPED_FILE,
    GROUPS_FILE,
    parquet_columns,
    write_dropped_lines,
    write_group_lines,
)
from ..reports import GroupsReport
from .linked import Linked

SPILL = ".ids.arrow"  # in the output folder while a groups run reads its input
ROWS = 1 << 20  # Parquet rows made and written at a time (one row group each)


class IdSpill:
    """The ids of a run's usable documents, in input order, in an Arrow IPC file in the output
    folder (removed by ``close``): written batch by batch as the input is read, read back in
    slices of at least ``ROWS``."""

    def __init__(self, folder: Path) -> None:
        import pyarrow as pa

        self.path = folder / SPILL
        self.schema = pa.schema([("id", pa.string())])
        self._writer = pa.ipc.new_file(str(self.path), self.schema)
        self.count = 0

    def append(self, ids) -> None:
        """Add a pyarrow string array of ids."""
        import pyarrow as pa

        if len(ids):
            self._writer.write_batch(pa.record_batch([ids], schema=self.schema))
            self.count += len(ids)

    def finish(self) -> None:
        """End the writing (the file can then be read)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def slices(self, rows: int = ROWS) -> Iterator[tuple[int, object]]:
        """(first position, pyarrow string array) of consecutive slices of about ``rows`` ids,
        read from the file one batch at a time."""
        import pyarrow as pa

        self.finish()
        with pa.OSFile(str(self.path)) as source:
            reader = pa.ipc.open_file(source)
            pending, size, start = [], 0, 0
            for i in range(reader.num_record_batches):
                pending.append(reader.get_batch(i).column(0))
                size += len(pending[-1])
                if size >= rows:
                    yield start, pa.concat_arrays(pending)
                    pending, start, size = [], start + size, 0
            if pending:
                yield start, pa.concat_arrays(pending)

    def close(self) -> None:
        """Stop writing, if still writing, and remove the file."""
        try:
            self.finish()
        finally:
            self.path.unlink(missing_ok=True)


def hex_digits(simhashes: np.ndarray) -> np.ndarray:
    """16 lower-case hex digits of every uint64 (``fingerprint.to_hex``), vectorised."""
    raw = np.asarray(simhashes, dtype=np.uint64).astype(">u8").tobytes().hex().encode("ascii")
    return np.frombuffer(raw, dtype="S16").astype(str) if raw else np.empty(0, dtype=str)


def member_ids(slices, linked: Linked):
    """The ids of ``linked``'s members, in their order (``slices``: ``IdSpill.slices``' pairs)."""
    import pyarrow as pa

    taken = []
    for start, ids in slices:
        lo, hi = np.searchsorted(linked.members, [start, start + len(ids)])
        taken.append(ids.take(pa.array(linked.members[lo:hi] - start, pa.int64())))
    return pa.concat_arrays(taken) if taken else pa.array([], pa.string())


def groups_table(ids, linked: Linked, start: int = 0, members=None, names: tuple[str, ...] | None = None):
    """The groups' Parquet rows (outputs.parquet_columns) of positions ``start`` .. ``start +
    len(ids)`` as a pyarrow Table, in input order (``ids``: theirs, a pyarrow string array;
    ``members``: the ids of ``linked.members``, None when ``ids`` is the whole input;
    ``names``: the signatures' names, None for the body alone)."""
    import pyarrow as pa

    n = len(ids)
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    members = ids.take(pa.array(linked.members, pa.int64())) if members is None else members
    lo, hi = np.searchsorted(linked.members, [start, start + n])
    mine = linked.members[lo:hi] - start
    group, via = np.arange(start, start + n, dtype=np.int64), np.full(n, -1, np.int64)
    size, distance, place = np.ones(n, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    group[mine], via[mine] = linked.group[lo:hi], linked.via[lo:hi]
    size[mine], distance[mine], place[mine] = linked.size[lo:hi], linked.distance[lo:hi], linked.place[lo:hi]
    both = pa.chunked_array([ids, members], pa.string())  # this slice's ids, then every member's

    def named(positions: np.ndarray):  # positions (-1: none) -> ids
        inside = (positions >= start) & (positions < start + n)
        index = np.where(inside, positions - start, n + np.searchsorted(linked.members, positions))
        return both.take(pa.array(index, pa.int64(), mask=positions < 0))

    columns = parquet_columns(names is not None)
    schema = pa.schema([pa.field(name, pa.type_for_alias(kind), nullable) for name, kind, nullable in columns])
    signature = [pa.array(names, pa.string()).take(pa.array(place, pa.int64(), mask=via < 0))] if names else []
    return pa.table([ids, pa.array(hex_digits(linked.simhashes(start, start + n)), pa.string()), named(group),
                     pa.array(size, pa.int64()), pa.array(group == np.arange(start, start + n), pa.bool_()),
                     named(via), pa.array(distance, pa.int32(), mask=via < 0), *signature], schema=schema)


def write(folder: Path, spill: IdSpill, linked: Linked, report: GroupsReport,
          names: tuple[str, ...] | None = None, rows: int = ROWS) -> None:
    """``documents/part-00000.parquet``, ``groups.jsonl`` and ``dropped.jsonl`` of ``linked``
    (the ids in ``spill``; ``names``: the signatures' names, None for the body alone), a slice
    of about ``rows`` at a time; counts the groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    members = member_ids(spill.slices(rows), linked)
    kept = linked.group == linked.members
    report.groups = linked.n - int((~kept).sum())
    report.multi_groups = int(kept.sum())
    shutil.rmtree(folder / DOCUMENTS, ignore_errors=True)  # an earlier output's files (Spark's: several)
    (folder / DOCUMENTS).mkdir()
    writer = None
    try:
        for start, ids in spill.slices(rows):
            table = groups_table(ids, linked, start, members, names)
            if writer is None:
                writer = pq.ParquetWriter(folder / DOCUMENTS / "part-00000.parquet", table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no usable document: the file with its columns and no row
        pq.write_table(groups_table(pa.array([], pa.string()), linked, 0, members, names),
                       folder / DOCUMENTS / "part-00000.parquet")
    order = np.argsort(linked.group, kind="stable")  # by group (its first member), input order within
    listed = members.take(pa.array(order, pa.int64())).to_pylist()
    grouped = linked.group[order]
    cuts = np.r_[np.flatnonzero(grouped[1:] != grouped[:-1]) + 1, len(grouped)].tolist() if len(grouped) else []
    write_group_lines((listed[a:b] for a, b in zip([0, *cuts], cuts)), folder / GROUPS_FILE)
    dropped = np.flatnonzero(~kept)
    write_dropped_lines(_dropped_rows(members, linked, dropped, names), folder / DROPPED_FILE)


def _dropped_rows(members, linked: Linked, dropped: np.ndarray, names: tuple[str, ...] | None) -> Iterator[tuple]:
    """``dropped.jsonl``'s rows of the members at ``dropped`` (indices into them, ascending)."""
    import pyarrow as pa

    for at in range(0, len(dropped), 65_536):
        mine = dropped[at:at + 65_536]
        columns = [members.take(pa.array(where, pa.int64())).to_pylist()
                   for where in (mine, np.searchsorted(linked.members, linked.group[mine]),
                                 np.searchsorted(linked.members, linked.via[mine]))]
        columns.append(linked.distance[mine].tolist())
        if names is not None:
            columns.append([names[p] for p in linked.place[mine].tolist()])
        yield from zip(*columns)
