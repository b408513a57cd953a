"""What the report package reads: a ``groups`` output folder (jobs/outputs.py defines it) and
the texts of chosen documents from the inputs the job read.

Texts are found by reading the inputs again (jobs/corpus.py, the same formats and fields),
keeping only the records whose id is asked for: memory in proportion to the ids asked for,
not to the corpus. An id given to several records is the first of them in input order (an
output names documents by id only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..jobs.corpus import Fields, read_records
from ..jobs.outputs import DOCUMENTS, SUMMARY_FILE


@dataclass(frozen=True)
class Text:
    """A document's text and where it was read."""

    id: str
    text: str
    source: str
    line: int


def texts_of(paths: list[str], ids: Iterable[str], fmt: str = "auto", fields: Fields = Fields()) -> dict[str, Text]:
    """The texts of ``ids`` in ``paths`` (the first record of each id; an id absent from the
    inputs, or whose record has no text, is absent from the answer)."""
    wanted, found = set(ids), {}
    if not wanted:
        return found
    with closing(read_records(paths, fmt, fields)) as records:  # closes the file when it stops early
        for record in records:
            if record.id in wanted and record.id not in found and record.text is not None:
                found[record.id] = Text(record.id, record.text, record.source, record.line)
                if len(found) == len(wanted):
                    break
    return found


def groups_folder(out: str) -> Path:
    """The folder of a groups output, or InvalidInput saying what is missing."""
    folder = Path(out)
    if not (folder / DOCUMENTS).is_dir():
        raise InvalidInput(f"{out} is not a groups output (no {DOCUMENTS}/ folder in it): "
                           "give the --out folder of `dedup-hbase groups`")
    return folder


def documents(out: str, columns: list[str] | None = None, where: tuple[str, Any] | None = None):
    """The Parquet rows of a groups output as a pyarrow Table (``where``: (column, value),
    read with Parquet's filter pushdown), in input order."""
    import pyarrow.parquet as pq

    folder = groups_folder(out)
    filters = [(where[0], "=", where[1])] if where else None
    table = pq.read_table(folder / DOCUMENTS, columns=columns, filters=filters)
    if "via" not in table.column_names and (columns is None or "via" in columns):
        raise InvalidInput(f"{out} was written by an older dedup-hbase (no via column): run `dedup-hbase groups` again")
    return table


def summary(out: str) -> dict[str, Any] | None:
    """The job's report as ``groups --json`` printed it (``summary.json``), or None when the
    output has none (written by an older version)."""
    path = groups_folder(out) / SUMMARY_FILE
    return json.loads(path.read_text("utf-8")) if path.exists() else None
