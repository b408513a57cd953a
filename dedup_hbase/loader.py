"""Bulk jobs over a stream of records: ``load`` (index them) and ``check`` (look them up).

Both take records from corpus.py in batches, fingerprint them, and account for
every record: ``read == indexed + rejected``. A rejected record (no text, bad JSON,
invalid UTF-8, featureless text, ...) is counted by reason, reported, and skipped;
the job goes on.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import IO, Any

from .corpus import Record
from .errors import EmptyDocument
from .fingerprint import to_hex
from .index import Document, Index, encode_id

Progress = Callable[[int, int], None]  # (records done, text bytes done)


@dataclass
class LoadReport:
    read: int = 0
    indexed: int = 0
    new: int = 0
    rejected: int = 0
    rejected_by_reason: Counter = field(default_factory=Counter)
    text_bytes: int = 0
    elapsed_s: float = 0.0

    @property
    def docs_per_s(self) -> float:
        return self.read / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.text_bytes / 1e6 / self.elapsed_s if self.elapsed_s else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["rejected_by_reason"] = dict(self.rejected_by_reason)
        out["elapsed_s"] = round(self.elapsed_s, 3)
        out["docs_per_s"] = round(self.docs_per_s, 1)
        out["mb_per_s"] = round(self.mb_per_s, 3)
        return out


def fingerprint_record(fingerprint: Callable[[str], int], record: Record,
                       use_simhash: bool = False) -> None:
    """Set ``record.simhash`` from its text (or keep the given one), or set ``record.error``."""
    if record.error:
        return
    try:
        encode_id(record.id)
    except ValueError as e:
        record.error = str(e)
        return
    if use_simhash or record.text is None:
        if record.simhash is None:
            record.error = "no simhash" if use_simhash else "no text"
        return
    try:
        record.simhash = fingerprint(record.text)
    except EmptyDocument as e:
        record.error = f"featureless text: {e}"


def _batches(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    it = iter(records)
    while batch := list(islice(it, size)):
        yield batch


def _reason(error: str) -> str:
    return error.split(":", 1)[0]


def load(index: Index, records: Iterable[Record], *, use_simhash: bool = False,
         batch_size: int = 2000, rejects: IO[str] | None = None,
         on_reject: Callable[[Record], None] | None = None,
         progress: Progress | None = None) -> LoadReport:
    """Index every usable record; returns the accounting. Loading the same records again
    changes nothing (writes are idempotent)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, not {batch_size}")
    report, started = LoadReport(), time.perf_counter()
    for batch in _batches(records, batch_size):
        docs = []
        for record in batch:
            fingerprint_record(index.fingerprint, record, use_simhash)
            report.text_bytes += len(record.text.encode("utf-8", "surrogateescape")) if record.text else 0
            if record.error:
                report.rejected += 1
                report.rejected_by_reason[_reason(record.error)] += 1
                if rejects is not None:
                    rejects.write(json.dumps({"source": record.source, "line": record.line, "id": record.id,
                                              "reason": record.error}, ensure_ascii=False) + "\n")
                if on_reject is not None:
                    on_reject(record)
                continue
            meta = {"source": record.source, "line": record.line, "loaded": int(time.time())}
            if record.title:
                meta["title"] = record.title
            if record.text is not None:
                meta["length"] = len(record.text)
            docs.append(Document(record.id, record.simhash, meta))
        if docs:
            report.new += index.add_many(docs)
            report.indexed += len(docs)
        report.read += len(batch)
        if progress is not None:
            progress(report.read, report.text_bytes)
    report.elapsed_s = time.perf_counter() - started
    return report


def check(index: Index, records: Iterable[Record], *, k: int | None = None,
          use_simhash: bool = False, batch_size: int = 1000) -> Iterator[dict[str, Any]]:
    """For every record, in input order: ``{"id", "simhash", "matches"}``, or
    ``{"id", "source", "line", "error"}`` when it could not be fingerprinted.
    Lookups are batched (``Index.query_many``); nothing is written."""
    for batch in _batches(records, batch_size):
        for record in batch:
            fingerprint_record(index.fingerprint, record, use_simhash)
        good = [r for r in batch if not r.error]
        answers = iter(index.query_many([r.simhash for r in good], k))
        for record in batch:
            if record.error:
                yield {"id": record.id, "source": record.source, "line": record.line, "error": record.error}
            else:
                yield {"id": record.id, "simhash": to_hex(record.simhash),
                       "matches": [m.to_dict() for m in next(answers)]}
