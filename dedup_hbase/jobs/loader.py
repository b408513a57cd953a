"""Bulk loads: every record of the inputs indexed or rejected, accounted for, resumable.

``load_files`` reads records (corpus.py) in batches, fingerprints them on every core
(batches.py, workers.py), writes them (``Index.add_many``) and accounts for every
record: ``read == indexed + skipped + rejected``. A rejected record (no text, bad JSON,
invalid UTF-8, featureless text, ...) is counted by reason, reported, and skipped; the
load goes on. ``check`` looks records up the same way and writes nothing.

Resuming: writes are idempotent (the same document always makes the same keys), and
after every written batch ``load`` saves with the index (``Index.write_state``) how many
input records are done, under a name derived from the inputs' identity and the options
that shape the records (``LoadOptions.checkpoint_key``). Run the same load again after a
kill and it skips what was done and finishes the rest; run it once more and it does nothing.

The same ``LoadOptions`` drive the Spark engine (spark/); engines.py picks the engine.
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

from ..errors import InvalidInput
from ..index.index import Document, Index, document_meta
from ..index.neardup import near_pairs
from ..text.fingerprint import to_hex
from .batches import check_batching, check_featurizers, fingerprinted, reason_of, reject_line
from .corpus import Fields, Record, check_columns, input_identity, read_records
from .groups import write_groups
from .interrupts import STOPS, Interrupted
from .workers import FingerprintPool

Progress = Callable[[int, int], None]  # (records done, text bytes done)


@dataclass(frozen=True)
class LoadOptions:
    """What a load does with its inputs, on either engine (the options of ``dedup-hbase load``).

    ``fingerprints``: records carry a precomputed ``simhash``; their text is not read.
    ``skip_near_dups``: a document within k bits of one indexed or earlier in the load is
    left out. ``groups``: write the near-duplicate groups found to this JSONL file.
    ``rejects``: write every rejected record to this JSONL file. ``restart``: ignore the
    checkpoint of an earlier run. ``batch_size``: documents per batch (fingerprint, write,
    checkpoint). ``workers``: fingerprinting workers of the local engine (None: one per core).
    ``max_rejects``: how many rejected records make the load count as failed (a count, or a
    fraction of the records read when below 1; None: only a load that rejected every record);
    see ``LoadReport.failure``.
    """

    fmt: str = "auto"
    fields: Fields = Fields()
    fingerprints: bool = False
    skip_near_dups: bool = False
    groups: str | None = None
    rejects: str | None = None
    restart: bool = False
    batch_size: int = 2000
    workers: int | None = None
    max_rejects: float | None = None

    def __post_init__(self) -> None:
        check_batching(self.fmt, self.batch_size, self.workers)
        if self.max_rejects is not None and (self.max_rejects < 0 or (1 <= self.max_rejects != int(self.max_rejects))):
            raise InvalidInput(f"max_rejects is a whole number or a fraction below 1, not {self.max_rejects}")

    @staticmethod
    def parse_max_rejects(text: str | None) -> float | None:
        """``--max-rejects``: ``10`` (records), ``0.01`` or ``1%`` (of the records read)."""
        if text is None:
            return None
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            value = -1.0
        if value < 0 or (value >= 1 and value != int(value)) or (text.endswith("%") and value >= 1):
            raise InvalidInput(f"--max-rejects is a number of records (10), or a share of them (0.01 or 1%), "
                               f"not {text!r}")
        return int(value) if value >= 1 else value

    def checkpoint_key(self, paths: list[str]) -> str | None:
        """The name of this load's checkpoint: the inputs as they are now and the options that
        shape the records; None for stdin (it cannot be read twice)."""
        return input_identity(paths, self.fmt, self.fields.id, self.fields.text, self.fingerprints,
                              self.skip_near_dups)


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
    replaced: int = 0           # documents the index held with another fingerprint
    unlabeled: int = 0          # precomputed fingerprints that did not say which featurizer made them
    rejects_written: bool = False  # a finished load run again wrote its rejects file anew

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

    def summary(self, featurizer: str | None = None) -> str:
        """For people: what was read, indexed, skipped and rejected, and how fast; then, on
        lines of their own, what needs a second look (``featurizer``: the index's label)."""
        if self.already_complete:
            wrote = f"; its {self.rejected} rejected records written again" if self.rejects_written else ""
            return (f"already loaded (read {self.read}, indexed {self.indexed}): nothing to do{wrote}; "
                    "--restart loads again")
        reasons = ", ".join(f"{n} {r}" for r, n in self.rejected_by_reason.most_common())
        resumed = f"resumed after {self.resumed_after}; " if self.resumed_after else ""
        skipped = f", skipped {self.near_duplicates_skipped} near-duplicates" if self.near_duplicates_skipped else ""
        replaced = f", {self.replaced} replaced" if self.replaced else ""
        lines = [f"{resumed}read {self.read}, indexed {self.indexed} ({self.new} new{replaced}){skipped}, rejected "
                 f"{self.rejected}{f' ({reasons})' if reasons else ''} in {self.elapsed_s:.1f} s: "
                 f"{self.docs_per_s:,.0f} docs/s, {self.mb_per_s:.2f} MB/s"]
        if self.replaced:
            lines.append(f"note: {self.replaced} documents were in the index with another fingerprint: "
                         "their old index rows are gone")
        if self.unlabeled:
            lines.append(f"note: {self.unlabeled} fingerprints did not say which featurizer made them (no "
                         f"'featurizer' field): taken as the index's own{f' ({featurizer})' if featurizer else ''}")
        return "\n".join(lines)

    def failure(self, max_rejects: float | None = None) -> str | None:
        """Why this load counts as failed for its rejects, or None: more than ``max_rejects``
        rejected (a count, or a fraction of the records read when below 1); without a limit,
        every record rejected (a load that indexed nothing of what it was given)."""
        if not self.rejected:
            return None
        if max_rejects is None:
            return f"every record was rejected ({self.rejected:,} of {self.read:,})" if self.rejected == self.read else None
        limit = max_rejects * self.read if max_rejects < 1 else max_rejects
        if self.rejected > limit:
            allowed = f"{max_rejects:.2%} of {self.read:,}" if max_rejects < 1 else f"{int(max_rejects):,}"
            return f"{self.rejected:,} records were rejected, more than --max-rejects allows ({allowed})"
        return None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LoadReport":
        known = {f.name for f in fields(cls)}
        report = cls(**{k: v for k, v in data.items() if k in known})
        report.rejected_by_reason = Counter(report.rejected_by_reason)
        return report


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


def load(index: Index, records: Iterable[Record], options: LoadOptions = LoadOptions(), *,
         checkpoint: str | None = None, rejects: IO[str] | None = None,
         on_reject: Callable[[Record], None] | None = None, progress: Progress | None = None) -> LoadReport:
    """Index every usable record and return the accounting (``options``: see LoadOptions;
    ``fmt`` and ``fields`` are the reader's business and unused here).

    ``checkpoint``: a key naming this load's inputs; with it an interrupted load resumes
    and a finished one is not repeated. Without it, loading the same records again
    rewrites the same keys and changes nothing. ``rejects``: an open file for the
    rejected records. Raises ``Interrupted`` on SIGINT (and SIGTERM inside
    ``interrupts.sigterm_raises``), saying how far the load got.
    """
    marker = Checkpoint(index, checkpoint)
    state = None if options.restart else marker.read()
    report = LoadReport.from_dict(state["report"]) if state else LoadReport()
    if state and state["complete"]:
        report.already_complete = True
        return report
    report.resumed_after = done = report.read
    edges_path = Path(f"{options.groups}.edges") if options.groups else None
    edges = open(edges_path, "a" if state else "w", encoding="utf-8") if edges_path else None
    started = time.perf_counter() - report.elapsed_s
    chained: set[int] = set()  # indexed fingerprints whose copies are in the edges
    try:
        with FingerprintPool(index.fingerprinter, 1 if options.fingerprints else options.workers) as pool:
            remaining = islice(records, report.read, None)
            for batch in fingerprinted(remaining, options.fingerprints, options.batch_size, pool):
                good = _account(batch, report, rejects, on_reject)
                if options.fingerprints:
                    report.unlabeled += check_featurizers(good, index.fingerprinter.label)
                duplicate_of = _near_duplicates(index, good, edges, chained) if (options.skip_near_dups or edges) else {}
                docs, now = [], int(time.time())
                for position, record in enumerate(good):
                    if options.skip_near_dups and position in duplicate_of:
                        report.near_duplicates_skipped += 1
                        continue
                    length = None if record.text is None else len(record.text)
                    docs.append(Document(record.id, record.simhash,
                                         document_meta(now, record.source, record.line, record.title, length)))
                if docs:
                    written = index.write(docs)
                    report.new += written.new
                    report.replaced += written.replaced
                    report.indexed += len(docs)
                report.read += len(batch)
                report.elapsed_s = time.perf_counter() - started
                marker.save(report, complete=False)
                done = report.read
                if progress is not None:
                    progress(report.read, report.text_bytes)
    except STOPS as stop:
        then = ("run the same command again to resume" if checkpoint
                else "a load from stdin cannot resume: run it again (writes are idempotent)")
        raise Interrupted(stop, f"stopped after {done:,} records, all written and checkpointed; {then}") from None
    finally:
        if edges is not None:
            edges.close()
    report.elapsed_s = time.perf_counter() - started
    marker.save(report, complete=True)
    if edges_path is not None:
        with open(edges_path, encoding="utf-8") as f:
            write_groups((tuple(json.loads(line)) for line in f), Path(options.groups))
        edges_path.unlink()
    return report


def _account(batch: list[Record], report: LoadReport, rejects: IO[str] | None,
             on_reject: Callable[[Record], None] | None) -> list[Record]:
    """Count a fingerprinted batch's bytes and rejects into ``report``; return its good records."""
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
    return good


def load_files(index: Index, paths: list[str], options: LoadOptions = LoadOptions(), *,
               on_reject: Callable[[Record], None] | None = None, progress: Progress | None = None) -> LoadReport:
    """``load`` the records of files, folders or ``-`` (stdin), resumable: rerunning the
    same command resumes it (``LoadOptions.checkpoint_key``; stdin cannot be read twice:
    no checkpoint). ``options.rejects``: a JSONL file of every rejected record, appended to
    when a load resumes, written anew when a finished load is run again. A CSV, TSV or
    Parquet input without the columns the load needs is refused before anything is read."""
    check_columns(paths, options.fmt, options.fields, options.fingerprints)
    key = options.checkpoint_key(paths)
    records = read_records(paths, options.fmt, options.fields)
    reject_file = (open(options.rejects, "a" if key and not options.restart else "w", encoding="utf-8")
                   if options.rejects else None)
    try:
        report = load(index, records, options, checkpoint=key, rejects=reject_file, on_reject=on_reject,
                      progress=progress)
    finally:
        if reject_file is not None:
            reject_file.close()
    if report.already_complete and options.rejects and report.rejected:
        _write_rejects_again(index, paths, options)
        report.rejects_written = True
    return report


def _write_rejects_again(index: Index, paths: list[str], options: LoadOptions) -> None:
    """The rejects file of a finished load, from the inputs read (and fingerprinted) again;
    nothing is written to the index."""
    with open(options.rejects, "w", encoding="utf-8") as out, \
            FingerprintPool(index.fingerprinter, 1 if options.fingerprints else options.workers) as pool:
        records = read_records(paths, options.fmt, options.fields)
        for batch in fingerprinted(records, options.fingerprints, options.batch_size, pool):
            out.writelines(reject_line(r.source, r.line, r.id, r.error) for r in batch if r.error)


def _near_duplicates(index: Index, batch: list[Record], edges: IO[str] | None, chained: set[int]) -> dict[int, str]:
    """Position in ``batch`` -> the id of an earlier near-duplicate (indexed before this
    batch, or earlier in it), the first by (distance, id). To ``edges``, pairs spanning the
    same groups as every pair found: each document to one document of every indexed
    fingerprint it matches, each indexed fingerprint's copies once per load (``chained``:
    the fingerprints done), each copy to its first copy in the batch and the first copies
    of near fingerprints. Linear in the copies of a fingerprint, never quadratic."""
    found: dict[int, str] = {}
    pairs: list[tuple[str, str]] = []
    for position, (record, matches) in enumerate(zip(batch, index.query_many([r.simhash for r in batch], None, 1))):
        runs = matches.runs
        others = [(run.distance, other) for run in runs
                  if (other := next((i for i in run.ids[:2] if i != record.id), None)) is not None]
        if others:
            found[position] = min(others)[1]
        for run in runs if edges is not None else ():
            other = next((i for i in run.ids[:2] if i != record.id), None)
            if other is not None:
                pairs.append((other, record.id))
            if run.simhash not in chained:
                chained.add(run.simhash)
                pairs.extend((run.ids[0], i) for i in run.ids[1:])
    simhashes = np.array([r.simhash for r in batch], dtype=np.uint64)
    near = near_pairs(simhashes, index.scheme, index.k)
    earliest = near.earliest_earlier()
    for j in np.flatnonzero(earliest >= 0).tolist():
        i = int(earliest[j])
        if batch[i].id == batch[j].id:  # the same id twice: its earliest other id, if any
            i = next((x for x in near.earlier_of(j) if batch[x].id != batch[j].id), -1)
        if i >= 0:
            found.setdefault(j, batch[i].id)
    if edges is not None:
        pairs.extend((batch[i].id, batch[j].id) for i, j in near.edges().tolist() if batch[i].id != batch[j].id)
        edges.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    return found


def check(index: Index, records: Iterable[Record], *, k: int | None = None, use_simhash: bool = False,
          batch_size: int = 1000, workers: int | None = 1, max_matches: int | None = None) -> Iterator[dict[str, Any]]:
    """For every record, in input order: ``{"id", "simhash", "matches"}``, or
    ``{"id", "source", "line", "error"}`` when it could not be fingerprinted.
    ``max_matches``: at most this many matches per record, the first by (distance, id); a
    record with more also says ``"match_count"``, how many documents there are in all (each
    counted once: candidates.py). Lookups are batched (``Index.query_many``: once per
    distinct fingerprint); nothing is written."""
    with FingerprintPool(index.fingerprinter, workers) as pool:
        for batch in fingerprinted(records, use_simhash, batch_size, pool):
            good = [r for r in batch if not r.error]
            answers = iter(index.query_many([r.simhash for r in good], k, max_matches))
            for record in batch:
                if record.error:
                    yield {"id": record.id, "source": record.source, "line": record.line, "error": record.error}
                    continue
                matches = next(answers)
                answer = {"id": record.id, "simhash": to_hex(record.simhash), "matches": [m.to_dict() for m in matches]}
                if matches.total > len(matches):
                    answer["match_count"] = matches.total
                yield answer
