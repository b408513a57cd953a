"""``groups`` on this machine: every pair of input documents within k bits (neardup.py's
pigeonhole search), their connected components (components.py), and which document of each
group to keep; the output as outputs.py defines it.

The usable records are numbered 0, 1, ... in input order; copies of one fingerprint are one
node of the pair search (n copies: n - 1 edges), and a group's first member in input order is
its id and the document kept.

Each dropped document's ``via`` (outputs.py defines it): a later copy of a fingerprint, its
first copy (distance 0); the first copy of a fingerprint, its parent in the breadth-first tree
of the group's distinct fingerprints grown from the kept one (components.tree_parents, ties
broken by (distance, first position)).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from ...index.layout import Scheme
from ...index.neardup import near_pairs
from ...text.fingerprint import Fingerprinter
from ..batches import check_featurizers, fingerprinted
from ..corpus import read_records
from ..options import GroupsOptions
from ..outputs import (
    DOCUMENTS,
    DROPPED_FIELDS,
    DROPPED_FILE,
    GROUPS_FILE,
    PARQUET_COLUMNS,
    prepare_out,
    write_dropped_lines,
    write_group_lines,
    write_summary,
)
from ..reports import GroupsReport, rejects_file
from ..workers import FingerprintPool
from .components import groups_of, roots, tree_parents


def assign(simhashes: np.ndarray, scheme: Scheme, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per position (input order): the position of its group's first member, the position
    of its ``via`` (-1 for a kept document) and their distance (-1 likewise)."""
    found = near_pairs(simhashes, scheme, k)
    # distinct fingerprints ranked by their first position: the smallest rank of a component
    # is its earliest document, and ranks order ties as first positions do
    order = np.argsort(found.first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    edges = rank[found.pairs] if len(found.pairs) else np.empty((0, 2), np.int64)
    component = roots(len(order), edges)
    weights = np.bitwise_count(found.unique[found.pairs[:, 0]] ^ found.unique[found.pairs[:, 1]]) if len(edges) else []
    parent, weight = tree_parents(len(order), edges, np.asarray(weights, np.int64), component == np.arange(len(order)))
    first_of = found.first[order]  # rank -> first position
    positions = np.arange(len(simhashes))
    own = found.first[found.inverse]
    tree = parent[rank[found.inverse]]
    via = np.where(own != positions, own, np.where(tree >= 0, first_of[np.maximum(tree, 0)], -1))
    distance = np.where(own != positions, 0, weight[rank[found.inverse]])
    return first_of[component[rank]][found.inverse], via, distance


def group_files(paths: list[str], out: str, options: GroupsOptions, fingerprinter: Fingerprinter) -> GroupsReport:
    """Read and fingerprint ``paths`` (as ``load``: every core), find the groups and write
    them to the folder ``out`` (outputs.py)."""
    import pyarrow as pa

    options.check_inputs(paths)
    folder = prepare_out(out)
    started = time.perf_counter()
    report = GroupsReport(k=options.k)
    ids: list = []  # pyarrow string arrays, one per batch: compact, whatever the corpus holds
    chunks: list[np.ndarray] = []
    with rejects_file(options.rejects) as rejects, FingerprintPool(fingerprinter, options.pool_workers) as pool:
        records = read_records(paths, options.fmt, options.fields)
        for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool):
            good = report.count(batch, rejects)
            if options.fingerprints:
                check_featurizers(good, fingerprinter.label, "the one asked for (--featurizer)")
            ids.append(pa.array([r.id for r in good], pa.string()))
            chunks.append(np.fromiter((r.simhash for r in good), dtype=np.uint64, count=len(good)))
    simhashes = np.concatenate(chunks) if chunks else np.empty(0, np.uint64)
    scheme = options.scheme_for(len(simhashes))
    report.documents, report.scheme = len(simhashes), scheme.name
    write(folder, pa.chunked_array(ids, pa.string()), simhashes, *assign(simhashes, scheme, options.k), report)
    report.elapsed_s = time.perf_counter() - started
    write_summary(folder, report.to_dict())
    return report


def hex_digits(simhashes: np.ndarray) -> np.ndarray:
    """16 lower-case hex digits of every uint64 (``fingerprint.to_hex``), vectorised."""
    raw = np.asarray(simhashes, dtype=np.uint64).astype(">u8").tobytes().hex().encode("ascii")
    return np.frombuffer(raw, dtype="S16").astype(str) if raw else np.empty(0, dtype=str)


def write(folder: Path, ids, simhashes: np.ndarray, group: np.ndarray, via: np.ndarray, distance: np.ndarray,
          report: GroupsReport) -> None:
    """``documents/part-00000.parquet``, ``groups.jsonl`` and ``dropped.jsonl`` (``ids``: a
    pyarrow chunked string array in input order; ``group``: each position's group's first
    position; ``via`` and ``distance`` as ``assign`` gives them); counts the groups."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    n = len(ids)
    sizes = np.bincount(group, minlength=n).astype(np.int64)
    keep = group == np.arange(n)
    report.groups = int(keep.sum())
    report.multi_groups = int((keep & (sizes > 1)).sum())
    schema = pa.schema([pa.field(name, pa.type_for_alias(kind), nullable) for name, kind, nullable in PARQUET_COLUMNS])
    group_ids = ids.take(pa.array(group, pa.int64()))
    via_ids = ids.take(pa.array(via, pa.int64(), mask=via < 0))
    table = pa.table([ids, pa.array(hex_digits(simhashes), pa.string()), group_ids,
                      pa.array(sizes[group], pa.int64()), pa.array(keep, pa.bool_()), via_ids,
                      pa.array(distance, pa.int32(), mask=via < 0)], schema=schema)
    shutil.rmtree(folder / DOCUMENTS, ignore_errors=True)  # an earlier output's files (Spark's: several)
    (folder / DOCUMENTS).mkdir()
    pq.write_table(table, folder / DOCUMENTS / "part-00000.parquet")
    members, cuts = groups_of(group)
    listed = ids.take(pa.array(members, pa.int64())).to_pylist()
    write_group_lines((listed[cuts[g]:cuts[g + 1]] for g in range(len(cuts) - 1)), folder / GROUPS_FILE)
    dropped = table.filter(pc.invert(table["keep"])).select(list(DROPPED_FIELDS))
    write_dropped_lines((row for batch in dropped.to_batches(65_536)
                         for row in zip(*(column.to_pylist() for column in batch.columns))), folder / DROPPED_FILE)
