"""What the jobs write, defined once for both engines: the records of ``check`` and the folder of
``groups``.

``check``: one record per input record, in input order: ``{"id", "simhash", "matches"}`` (each
match ``{"id", "simhash", "distance"}``, the nearest first) plus ``"match_count"`` when there
are more matches than listed; a rejected record is ``{"id", "source", "line", "error", "simhash": null, "matches": []}``. The
local engine hands them to its caller; the Spark engine writes them under ``OUT/json/``
(JSON lines) and ``OUT/parquet/``.

``groups``, in a folder ``OUT/``: ``documents/part-*.parquet``, one row per document
(``PARQUET_COLUMNS``: ``id``, ``simhash`` 16 hex digits, ``group``, ``size``, ``keep``,
``via``, ``distance``; in input order); ``groups.jsonl``, the groups of two or more as
``{"group": n, "size": s, "ids": [...]}``, numbered from 1 in the order of their first member,
ids in input order (also the format of ``load --groups``, so it carries nothing more);
``dropped.jsonl``, one line per document not kept, in input order: ``{"id", "group", "via",
"distance"}`` (``groups --signatures``: and ``"signature"``, also a Parquet column); ``summary.json``, the job's report (the JSON summary of ``groups --json``, its
``elapsed_s`` as the job's end came). Parquet sits in its own folder so that it reads as one
data set.

``via`` says why a document is dropped: the member of its group it was joined through, and
``distance`` their Hamming distance (at most k); both null for a kept document. A copy of an
earlier document's fingerprint has that fingerprint's first copy as its via (distance 0). The
first copy of any other fingerprint has its parent in the breadth-first spanning tree of the
group's distinct fingerprints (nodes; an edge between two within k bits) grown from the kept
document's: among its neighbours one hop nearer the kept one, the one of least (distance,
first position). So a chain a - b - c (a kept, c more than k from a) drops c via b and b via a;
following via from any document reaches the kept one. The tree has one node per distinct
fingerprint: 100,000 copies of one page cost 100,000 vias of distance 0, no pairs.

With several signatures (``groups --signatures body,lead150``: text/signatures.py) two documents
are near when they are within k bits under any one signature; a group is a component of that. The
tree's nodes are the distinct tuples of the signatures' fingerprints, and its edges, per
signature, join each node to the first node of its fingerprint (distance 0) and the first nodes
of near fingerprints to each other (so 100,000 copies of a lead under different bodies cost
100,000 edges, not their square); an edge's distance and ``signature`` are the least (distance,
signature place, body first) of the signatures joining its two nodes, and the dropped document's
``signature`` names it. Both engines order the edges by the one integer ``via_weight``.

Input order, for both engines: the files in the order ``corpus.read_records`` walks them (the
arguments in turn, a folder in name order), then the records of a file in its order (the Spark
engine: the file's ordinal, then its line, spark/records.position). A group's id is the id of its first member in input order,
and that member is the one kept; a document near no other is a group of one, kept. Each record
is a document: an id given twice is two documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..text.fingerprint import to_hex
from .corpus import Record

CHECK_JSON, CHECK_PARQUET = "json", "parquet"  # OUT/json/*.jsonl, OUT/parquet/ of check --engine spark
DOCUMENTS = "documents"      # OUT/documents/: the Parquet rows of groups
GROUPS_FILE = "groups.jsonl"
DROPPED_FILE = "dropped.jsonl"
SUMMARY_FILE = "summary.json"
DROPPED_FIELDS = ("id", "group", "via", "distance")  # a line of dropped.jsonl, in this order
SIGNATURE = "signature"  # the field and column added with several signatures
SIGNATURE_BITS = 3       # via_weight: distance << 3 | signature (at most 4 signatures)
# the Parquet columns of groups: (name, Arrow type, nullable), as both engines write them
# (Spark's count is not null)
PARQUET_COLUMNS = (("id", "string", True), ("simhash", "string", True), ("group", "string", True),
                   ("size", "int64", False), ("keep", "bool", True), ("via", "string", True),
                   ("distance", "int32", True))


def parquet_columns(signed: bool) -> tuple[tuple[str, str, bool], ...]:
    """The Parquet columns of groups (``signed``: several signatures, a ``signature`` column)."""
    return (*PARQUET_COLUMNS, (SIGNATURE, "string", True)) if signed else PARQUET_COLUMNS


def check_record(record: Record, matches: list[dict[str, Any]], total: int) -> dict[str, Any]:
    """The check record of a fingerprinted record with its ``matches`` (dicts, in order) of
    ``total`` in all; of a rejected record, where it is and why."""
    if record.error:
        return {"id": record.id, "source": record.source, "line": record.line, "error": record.error,
                "simhash": None, "matches": []}  # the keys of every record: a consumer reads r["matches"]
    answer = {"id": record.id, "simhash": to_hex(record.simhash), "matches": matches}
    if total > len(matches):
        answer["match_count"] = total
    return answer


def prepare_out(out: str) -> Path:
    """The groups output folder, created if missing; nothing in it is removed yet (a run that
    fails leaves an earlier output as it was: the writers replace it once the groups are found).
    A folder holding anything but an earlier groups output is refused, untouched."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"out={out} is a file: give a folder (new, empty, or an earlier groups output)",
                           arguments=("out",))
    if folder.is_dir():
        other = sorted(n for n in (p.name for p in folder.iterdir())
                       if n not in (DOCUMENTS, GROUPS_FILE, DROPPED_FILE, SUMMARY_FILE) and not n.startswith((".", "_")))
        if other:
            raise InvalidInput(f"out={out} is not empty and not an earlier groups output (it holds {other[0]}): "
                               "give a new or empty folder", arguments=("out",))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def via_weight(distance, signature):
    """The one integer ordering a groups edge (ints, numpy arrays or Spark columns): its
    distance, then its signature's place (0: body); ``via_parts`` takes it apart."""
    return distance * (1 << SIGNATURE_BITS) + signature


def via_parts(weight, shift_right=None):
    """``via_weight``'s (distance, signature place) of ints or numpy arrays; of a Spark column
    with ``shift_right`` (``pyspark.sql.functions.shiftright``)."""
    mask = (1 << SIGNATURE_BITS) - 1
    if shift_right is not None:
        return shift_right(weight, SIGNATURE_BITS), weight.bitwiseAND(mask)
    return weight >> SIGNATURE_BITS, weight & mask


def dropped_fields(signed: bool) -> tuple[str, ...]:
    """The fields of a ``dropped.jsonl`` line, in order (``signed``: several signatures)."""
    return (*DROPPED_FIELDS, SIGNATURE) if signed else DROPPED_FIELDS


def dropped_line(doc_id: str, group: str, via: str, distance: int, signature: str | None = None) -> str:
    """One line of ``dropped.jsonl`` (newline included); ``signature`` with several signatures."""
    values = (doc_id, group, via, distance) if signature is None else (doc_id, group, via, distance, signature)
    return json.dumps(dict(zip(dropped_fields(signature is not None), values)), ensure_ascii=False) + "\n"


def write_dropped_lines(rows: Iterable[tuple], out: Path | str) -> None:
    """``dropped.jsonl`` from ``(id, group, via, distance[, signature])`` rows, in their order."""
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(dropped_line(*row) for row in rows)


def write_summary(folder: Path | str, summary: dict[str, Any]) -> None:
    """``summary.json`` of a groups output: ``summary`` (the report's ``to_dict``) as one line."""
    Path(folder, SUMMARY_FILE).write_text(json.dumps(summary, ensure_ascii=False) + "\n", encoding="utf-8")
