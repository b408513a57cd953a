"""Bulk jobs over a stream of records: ``load`` (index them) and ``check`` (look them up).

Both read records (corpus.py) in batches, fingerprint them on every core
(workers.py) and account for every record: ``read == indexed + skipped + rejected``.
A rejected record (no text, bad JSON, invalid UTF-8, featureless text, ...) is
counted by reason, reported, and skipped; the job goes on.

Resuming: writes are idempotent (the same document always makes the same keys), and
after every written batch ``load`` saves with the index (``Index.write_state``) how many
input records are done, under a name derived from the inputs' identity
(``load_files``). Run the same load again after a kill and it skips what was done and
finishes the rest; run it once more and it does nothing.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from itertools import islice
from pathlib import Path
from typing import IO, Any

import numpy as np

from .corpus import Fields, Record, input_identity, read_records
from .errors import InvalidInput
from .fingerprint import Fingerprinter, to_hex
from .index import Document, Index, document_meta, encode_id
from .neardup import earlier_matches, write_groups
from .workers import FingerprintPool, fingerprint_texts

Progress = Callable[[int, int], None]  # (records done, text bytes done)


@dataclass
class LoadReport:
    read: int = 0
    indexed: int = 0
    new: int = 0
    near_duplicates_skipped: int = 0
    rejected: int = 0
    rejected_by_reason: Counter = field(default_factory=Counter)
    text_bytes: int = 0
    elapsed_s: float = 0.0
    resumed_after: int = 0      # records done by earlier runs of the same load
    already_complete: bool = False

    @property
    def docs_per_s(self) -> float:
        return self.read / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.text_bytes / 1e6 / self.elapsed_s if self.elapsed_s else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["rejected_by_reason"] = dict(self.rejected_by_reason)
        out["elapsed_s"] = round(self.elapsed_s, 3)
        out["docs_per_s"] = round(self.docs_per_s, 1)
        out["mb_per_s"] = round(self.mb_per_s, 3)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LoadReport":
        known = {f.name for f in fields(cls)}
        report = cls(**{k: v for k, v in data.items() if k in known})
        report.rejected_by_reason = Counter(report.rejected_by_reason)
        return report


def _to_fingerprint(batch: list[Record], use_simhash: bool) -> list[Record]:
    """Check what can be checked without fingerprinting (setting ``error`` where a record
    fails); return the records whose text must be fingerprinted."""
    todo = []
    for record in batch:
        if record.error:
            continue
        try:
            encode_id(record.id)
        except ValueError as e:
            record.error = str(e)
            continue
        if use_simhash or record.text is None:
            if record.simhash is None:
                record.error = "no simhash" if use_simhash else "no text"
        else:
            todo.append(record)
    return todo


def _set_results(todo: list[Record], results: list[int | str]) -> None:
    for record, result in zip(todo, results):
        if isinstance(result, str):
            record.error = result
        else:
            record.simhash = result


def fingerprint_batch(fingerprinter: Fingerprinter | None, batch: list[Record], use_simhash: bool = False) -> None:
    """Set each record's ``simhash`` (from its text, or the one given) or its ``error``, in
    place, with the checks and reasons of a load; the texts in one batch call.
    ``fingerprinter`` may be None when no record has a text to fingerprint."""
    todo = _to_fingerprint(batch, use_simhash)
    if todo:
        _set_results(todo, fingerprint_texts(fingerprinter, [r.text for r in todo]))


def _fingerprinted(records: Iterable[Record], use_simhash: bool, batch_size: int,
                   pool: FingerprintPool) -> Iterator[list[Record]]:
    """``fingerprint_batch`` over a stream of records, batches fingerprinted on the pool's
    workers, yielded in input order."""
    def checked() -> Iterator[tuple[list[Record], list[Record]]]:
        it = iter(records)
        while batch := list(islice(it, batch_size)):
            yield batch, _to_fingerprint(batch, use_simhash)

    for (batch, todo), results in pool.map(checked(), lambda item: [r.text for r in item[1]]):
        _set_results(todo, results)
        yield batch


def reason_of(error: str) -> str:
    """The reason a rejected record is counted under: its error up to the first colon."""
    return error.split(":", 1)[0]


def reject_line(source: str, line: int, doc_id: str | None, reason: str) -> str:
    """A rejected record as the JSON line of a ``--rejects`` file (newline included)."""
    return json.dumps({"source": source, "line": line, "id": doc_id, "reason": reason}, ensure_ascii=False) + "\n"


class Checkpoint:
    """How far a load got, saved with the index under ``load:<key>`` (no key: not saved)."""

    def __init__(self, index: Index, key: str | None) -> None:
        self.index, self.name = index, (f"load:{key}" if key else None)

    def read(self) -> dict[str, Any] | None:
        return self.index.read_state(self.name) if self.name else None

    def save(self, report: LoadReport, complete: bool) -> None:
        if self.name is not None:
            self.index.write_state(self.name, {"records_done": report.read, "complete": complete,
                                               "report": report.to_dict()})


def load(index: Index, records: Iterable[Record], *, use_simhash: bool = False,
         batch_size: int = 2000, workers: int | None = None, skip_near_dups: bool = False,
         groups: str | Path | None = None, checkpoint: str | None = None, restart: bool = False,
         rejects: IO[str] | None = None, on_reject: Callable[[Record], None] | None = None,
         progress: Progress | None = None) -> LoadReport:
    """Index every usable record and return the accounting.

    ``skip_near_dups``: do not index a document within the index's k of one already
    indexed or of an earlier one in the same batch. ``groups``: write the near-duplicate
    groups there as JSON lines. ``checkpoint``: a key naming this load's inputs; with
    it an interrupted load resumes and a finished one is not repeated (``restart``
    ignores a previous run). Without it, loading the same records again rewrites the
    same keys and changes nothing.
    """
    if batch_size < 1:
        raise InvalidInput(f"batch_size must be >= 1, not {batch_size}")
    marker = Checkpoint(index, checkpoint)
    state = None if restart else marker.read()
    report = LoadReport.from_dict(state["report"]) if state else LoadReport()
    if state and state["complete"]:
        report.already_complete = True
        return report
    report.resumed_after = report.read
    edges_path = Path(f"{groups}.edges") if groups else None
    edges = open(edges_path, "a" if state else "w", encoding="utf-8") if edges_path else None
    started = time.perf_counter() - report.elapsed_s
    try:
        with FingerprintPool(index.fingerprinter, 1 if use_simhash else workers) as pool:
            remaining = islice(records, report.read, None)
            for batch in _fingerprinted(remaining, use_simhash, batch_size, pool):
                good = []
                for record in batch:
                    report.text_bytes += len(record.text.encode("utf-8", "surrogateescape")) if record.text else 0
                    if record.error:
                        report.rejected += 1
                        report.rejected_by_reason[reason_of(record.error)] += 1
                        if rejects is not None:
                            rejects.write(reject_line(record.source, record.line, record.id, record.error))
                        if on_reject is not None:
                            on_reject(record)
                    else:
                        good.append(record)
                duplicate_of = _near_duplicates(index, good, edges) if (skip_near_dups or edges) else {}
                docs, now = [], int(time.time())
                for position, record in enumerate(good):
                    if skip_near_dups and position in duplicate_of:
                        report.near_duplicates_skipped += 1
                        continue
                    length = None if record.text is None else len(record.text)
                    docs.append(Document(record.id, record.simhash,
                                         document_meta(now, record.source, record.line, record.title, length)))
                if docs:
                    report.new += index.add_many(docs)
                    report.indexed += len(docs)
                report.read += len(batch)
                report.elapsed_s = time.perf_counter() - started
                marker.save(report, complete=False)
                if progress is not None:
                    progress(report.read, report.text_bytes)
    finally:
        if edges is not None:
            edges.close()
    report.elapsed_s = time.perf_counter() - started
    marker.save(report, complete=True)
    if edges_path is not None:
        with open(edges_path, encoding="utf-8") as f:
            write_groups((tuple(json.loads(line)) for line in f), Path(groups))
        edges_path.unlink()
    return report


def load_files(index: Index, paths: list[str], *, fmt: str = "auto", fields: Fields = Fields(),
               use_simhash: bool = False, skip_near_dups: bool = False, rejects: str | Path | None = None,
               restart: bool = False, **options: Any) -> LoadReport:
    """``load`` the records of files, folders or ``-`` (stdin), resumable: the checkpoint
    is named after the inputs as they are now (paths, sizes, modification times) and the
    settings that shape the records, so rerunning the same command resumes it (stdin
    cannot be read twice: no checkpoint). ``rejects``: a JSONL file of every rejected
    record, appended to when a load resumes. Other options as ``load``."""
    key = input_identity(paths, fmt, fields.id, fields.text, use_simhash, skip_near_dups)
    records = read_records(paths, fmt, fields)
    reject_file = open(rejects, "a" if key and not restart else "w", encoding="utf-8") if rejects else None
    try:
        return load(index, records, use_simhash=use_simhash, skip_near_dups=skip_near_dups, checkpoint=key,
                    restart=restart, rejects=reject_file, **options)
    finally:
        if reject_file is not None:
            reject_file.close()


def fingerprint_records(fingerprinter: Fingerprinter, records: Iterable[Record], *, use_simhash: bool = False,
                        batch_size: int = 1000, workers: int | None = 1) -> Iterator[Record]:
    """Every record, in input order, with ``simhash`` set, or ``error`` saying why not."""
    with FingerprintPool(fingerprinter, workers) as pool:
        for batch in _fingerprinted(records, use_simhash, batch_size, pool):
            yield from batch


def _near_duplicates(index: Index, batch: list[Record], edges: IO[str] | None) -> dict[int, str]:
    """Position in ``batch`` -> the id of an earlier near-duplicate (indexed before this
    batch, or earlier in it); every pair found is written to ``edges``."""
    found: dict[int, str] = {}
    pairs: list[tuple[str, str]] = []
    for position, (record, matches) in enumerate(zip(batch, index.query_many([r.simhash for r in batch]))):
        others = [m.id for m in matches if m.id != record.id]
        if others:
            found[position] = others[0]
            pairs.extend((other, record.id) for other in others)
    simhashes = np.array([r.simhash for r in batch], dtype=np.uint64)
    for j, earlier in earlier_matches(simhashes, index.scheme, index.k).items():
        for i, _ in earlier:
            if batch[i].id != batch[j].id:
                found.setdefault(j, batch[i].id)
                pairs.append((batch[i].id, batch[j].id))
    if edges is not None:
        edges.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    return found


def check(index: Index, records: Iterable[Record], *, k: int | None = None, use_simhash: bool = False,
          batch_size: int = 1000, workers: int | None = 1) -> Iterator[dict[str, Any]]:
    """For every record, in input order: ``{"id", "simhash", "matches"}``, or
    ``{"id", "source", "line", "error"}`` when it could not be fingerprinted.
    Lookups are batched (``Index.query_many``); nothing is written."""
    with FingerprintPool(index.fingerprinter, workers) as pool:
        for batch in _fingerprinted(records, use_simhash, batch_size, pool):
            good = [r for r in batch if not r.error]
            answers = iter(index.query_many([r.simhash for r in good], k))
            for record in batch:
                if record.error:
                    yield {"id": record.id, "source": record.source, "line": record.line, "error": record.error}
                else:
                    yield {"id": record.id, "simhash": to_hex(record.simhash),
                           "matches": [m.to_dict() for m in next(answers)]}
