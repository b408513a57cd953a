"""Corpus-wide near-duplicate groups (``dedup-hbase groups``), no index needed: every pair of
input documents within k bits (neardup.py's pigeonhole search), their connected components,
and which document of each group to keep.

Input order, defined once for both engines: the files in the order ``corpus.read_records``
walks them (the arguments in turn, a folder in name order), then the records of a file in
its order. The local engine numbers the usable records 0, 1, ... in that order; the Spark
engine orders them by ``ORDER`` (the file's ordinal, then its line; spark/groups.py).

A group's id (``group``) is the id of its first member in input order, and that member is the
one kept (``keep``); a document near no other is a group of one, kept. Each record is a
document: an id given twice is two documents.

The scheme of the pair search fits the number of documents N (``GroupsOptions.scheme_for``),
whatever index exists: with the 4-split a flag's bucket holds about N / 2^16 fingerprints,
compared pairwise; with the 5-split (10 flags) about N / 2^26, at 2.5 times the sorting.
Measured: ``near_pairs(numpy.random.default_rng(1).integers(0, 2**64, N, numpy.uint64),
Scheme, 3)``, one process on a busy 2-core machine, 4-split against 5-split: 100,000: 0.13 s /
0.27 s; 300,000: 1.0 / 1.1 s; 500,000: 1.4 / 1.3 s; 1,000,000: 4.0 / 2.5 s; 2,000,000: 14.7 /
8.6 s. So the 4-split below ``SCHEME_5_FROM`` (400,000) documents, the 5-split from there;
``--scheme`` overrides it.

Output, in a folder (``OUT/``): ``documents/part-*.parquet``, one row per document
(``id``, ``simhash`` 16 hex digits, ``group``, ``size`` int64, ``keep`` bool; both engines
write them in input order); ``groups.jsonl``, the groups of two or more as
``{"group": n, "size": s, "ids": [...]}``, numbered from 1 in the order of their first
member, ids in input order (the format of ``load --groups``, whose writer is
``write_groups`` here). Parquet sits in its own folder so that it reads as one data set.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from ..index.layout import Scheme
from ..index.neardup import near_pairs
from ..index.plan import best_scheme
from ..text.fingerprint import Fingerprinter
from .batches import check_batching, check_featurizers, fingerprinted, reason_of, reject_line
from .corpus import Fields, check_columns, read_records
from .workers import FingerprintPool

DEFAULT_K = 3
SCHEME_5_FROM = 400_000  # documents from which the 5-split's pair search beats the 4-split's (measured)
ORDER = ("ordinal", "line")  # the input order as columns of the Spark engine's records
DOCUMENTS = "documents"      # OUT/documents/: the Parquet rows
GROUPS_FILE = "groups.jsonl"
# the Parquet columns: (name, Arrow type, nullable), as both engines write them (Spark's count is not null)
PARQUET_COLUMNS = (("id", "string", True), ("simhash", "string", True), ("group", "string", True),
                   ("size", "int64", False), ("keep", "bool", True))


@dataclass(frozen=True)
class GroupsOptions:
    """The options of ``dedup-hbase groups`` on either engine: how inputs are read (as
    ``load``), ``k``, the ``scheme`` (None: by corpus size, ``scheme_for``), ``rejects`` (a
    JSONL file of every rejected record), ``batch_size`` and ``workers`` (local engine)."""

    fmt: str = "auto"
    fields: Fields = Fields()
    fingerprints: bool = False
    k: int = DEFAULT_K
    scheme: str | None = None
    rejects: str | None = None
    batch_size: int = 2000
    workers: int | None = None

    def __post_init__(self) -> None:
        check_batching(self.fmt, self.batch_size, self.workers)
        if self.scheme is not None:
            Scheme.parse(self.scheme).check_k(self.k)

    def scheme_for(self, documents: int) -> Scheme:
        """The given scheme, else the 4-split below ``SCHEME_5_FROM`` documents and the
        5-split from there on; a scheme that cannot guarantee k is refused, and a k above 3
        gets ``plan.best_scheme`` (the 4- and 5-split find every match within 3 bits only)."""
        if self.scheme is not None:
            scheme = Scheme.parse(self.scheme)
        elif self.k > 3:
            scheme = best_scheme(self.k, max(documents, 1))
        else:
            scheme = Scheme(5, 2) if documents >= SCHEME_5_FROM else Scheme(4, 1)
        scheme.check_k(self.k)
        return scheme


@dataclass
class GroupsReport:
    read: int = 0
    documents: int = 0
    groups: int = 0
    multi_groups: int = 0       # groups of two or more (the lines of groups.jsonl)
    rejected: int = 0
    rejected_by_reason: Counter = field(default_factory=Counter)
    scheme: str = ""
    k: int = DEFAULT_K
    engine: str = "local"
    elapsed_s: float = 0.0

    @property
    def to_drop(self) -> int:
        return self.documents - self.groups

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "documents": self.documents, "groups": self.groups,
                "multi_groups": self.multi_groups, "to_drop": self.to_drop, "rejected": self.rejected,
                "rejected_by_reason": dict(self.rejected_by_reason), "scheme": self.scheme, "k": self.k,
                "engine": self.engine, "elapsed_s": round(self.elapsed_s, 3)}

    def summary(self) -> str:
        reasons = ", ".join(f"{n} {r}" for r, n in self.rejected_by_reason.most_common())
        return (f"{self.documents} documents in {self.groups} groups ({self.multi_groups} of two or more): "
                f"keep {self.groups}, drop {self.to_drop}; read {self.read}, rejected {self.rejected}"
                f"{f' ({reasons})' if reasons else ''}; k={self.k}, scheme {self.scheme}, {self.engine} engine, "
                f"{self.elapsed_s:.1f} s")

    def count_reject(self, error: str) -> None:
        self.rejected += 1
        self.rejected_by_reason[reason_of(error)] += 1


def prepare_out(out: str) -> Path:
    """The output folder, created if missing; nothing in it is removed yet (a run that fails
    leaves an earlier output as it was: the writers replace it once the groups are found).
    A folder holding anything but an earlier groups output is refused, untouched."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"--out {out} is a file: give a folder (new, empty, or an earlier groups output)")
    if folder.is_dir():
        other = sorted(n for n in (p.name for p in folder.iterdir())
                       if n not in (DOCUMENTS, GROUPS_FILE) and not n.startswith((".", "_")))
        if other:
            raise InvalidInput(f"--out {out} is not empty and not an earlier groups output (it holds {other[0]}): "
                               "give a new or empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def roots(count: int, edges: np.ndarray) -> np.ndarray:
    """Connected components of nodes 0..count-1 and (e, 2) ``edges``, vectorised (hooking on
    the smaller label, then pointer jumping, until every edge agrees): node -> the smallest
    node of its component. Linear work per round; rounds grow with log of the longest path."""
    label = np.arange(count, dtype=np.int64)
    if not len(edges):
        return label
    a, b = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    while True:
        la, lb = label[a], label[b]
        differ = la != lb
        if not differ.any():
            return label
        a, b, la, lb = a[differ], b[differ], la[differ], lb[differ]
        low, high = np.minimum(la, lb), np.maximum(la, lb)
        np.minimum.at(label, high, low)  # hook the larger root under the smaller label
        while True:  # compress: every node points to its root
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped


def assign(simhashes: np.ndarray, scheme: Scheme, k: int) -> np.ndarray:
    """Per position (input order), the position of its group's first member."""
    found = near_pairs(simhashes, scheme, k)
    # distinct fingerprints ranked by their first position: the smallest rank of a component
    # is its earliest document
    order = np.argsort(found.first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    component = roots(len(order), rank[found.pairs] if len(found.pairs) else np.empty((0, 2), np.int64))
    return found.first[order[component[rank]]][found.inverse]


def group_files(paths: list[str], out: str, options: GroupsOptions, fingerprinter: Fingerprinter) -> GroupsReport:
    """The local engine: read and fingerprint ``paths`` (as ``load``: every core), find the
    groups and write them to ``out`` (see the module's docstring)."""
    import pyarrow as pa

    check_columns(paths, options.fmt, options.fields, options.fingerprints)
    folder = prepare_out(out)
    started = time.perf_counter()
    report = GroupsReport(k=options.k)
    ids: list = []  # pyarrow string arrays, one per batch: compact, whatever the corpus holds
    chunks: list[np.ndarray] = []
    rejects = open(options.rejects, "w", encoding="utf-8") if options.rejects else None
    try:
        with FingerprintPool(fingerprinter, 1 if options.fingerprints else options.workers) as pool:
            records = read_records(paths, options.fmt, options.fields)
            for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool):
                report.read += len(batch)
                good = []
                for record in batch:
                    if record.error:
                        report.count_reject(record.error)
                        if rejects is not None:
                            rejects.write(reject_line(record.source, record.line, record.id, record.error))
                    else:
                        good.append(record)
                if options.fingerprints:
                    check_featurizers(good, fingerprinter.label, "the one asked for (--featurizer)")
                ids.append(pa.array([r.id for r in good], pa.string()))
                chunks.append(np.fromiter((r.simhash for r in good), dtype=np.uint64, count=len(good)))
    finally:
        if rejects is not None:
            rejects.close()
    simhashes = np.concatenate(chunks) if chunks else np.empty(0, np.uint64)
    scheme = options.scheme_for(len(simhashes))
    report.documents, report.scheme = len(simhashes), scheme.name
    group = assign(simhashes, scheme, options.k)
    write_local(folder, pa.chunked_array(ids, pa.string()), simhashes, group, report)
    report.elapsed_s = time.perf_counter() - started
    return report


def hex_digits(simhashes: np.ndarray) -> np.ndarray:
    """16 lower-case hex digits of every uint64 (``fingerprint.to_hex``), vectorised."""
    raw = np.asarray(simhashes, dtype=np.uint64).astype(">u8").tobytes().hex().encode("ascii")
    return np.frombuffer(raw, dtype="S16").astype(str) if raw else np.empty(0, dtype=str)


def write_local(folder: Path, ids, simhashes: np.ndarray, group: np.ndarray, report: GroupsReport) -> None:
    """``documents/part-00000.parquet`` and ``groups.jsonl`` of the local engine (``ids``: a
    pyarrow chunked string array in input order); counts the groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(ids)
    sizes = np.bincount(group, minlength=n).astype(np.int64)
    keep = group == np.arange(n)
    report.groups = int(keep.sum())
    report.multi_groups = int((keep & (sizes > 1)).sum())
    schema = pa.schema([pa.field(name, pa.type_for_alias(kind), nullable) for name, kind, nullable in PARQUET_COLUMNS])
    table = pa.table([ids, pa.array(hex_digits(simhashes), pa.string()), ids.take(pa.array(group, pa.int64())),
                      pa.array(sizes[group], pa.int64()), pa.array(keep, pa.bool_())], schema=schema)
    shutil.rmtree(folder / DOCUMENTS, ignore_errors=True)  # an earlier output's files (Spark's: several)
    (folder / DOCUMENTS).mkdir()
    pq.write_table(table, folder / DOCUMENTS / "part-00000.parquet")
    members = np.flatnonzero(sizes[group] > 1)
    members = members[np.argsort(group[members], kind="stable")]  # by group (first member), then input order
    bounds = np.flatnonzero(np.r_[True, group[members][1:] != group[members][:-1]]) if len(members) else []
    cuts = np.r_[bounds, len(members)].astype(np.int64)
    listed = ids.take(pa.array(members, pa.int64())).to_pylist()
    write_group_lines((listed[cuts[g]:cuts[g + 1]] for g in range(len(cuts) - 1)), folder / GROUPS_FILE)


def write_groups(edges: Iterable[tuple[str, str]], out: Path) -> int:
    """``load --groups``: connected components of near-duplicate edges between ids, as
    ``write_group_lines`` (ids in first-seen order); returns the count."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    found: dict[str, list[str]] = {}
    for x in parent:
        found.setdefault(root(x), []).append(x)
    return write_group_lines(found.values(), out)


def group_line(number: int, ids: list[str]) -> str:
    """One line of a groups file (newline included)."""
    return json.dumps({"group": number, "size": len(ids), "ids": ids}, ensure_ascii=False) + "\n"


def write_group_lines(groups: Iterable[list[str]], out: Path | str) -> int:
    """``{"group": n, "size": s, "ids": [...]}`` per group, n from 1; returns the count."""
    count = 0
    with open(out, "w", encoding="utf-8") as f:
        for count, ids in enumerate(groups, 1):
            f.write(group_line(count, ids))
    return count
