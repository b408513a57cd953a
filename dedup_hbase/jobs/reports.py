"""What a bulk job reports, on either engine, and the accounting every job keeps.

Every record read is accounted for: ``read == used + rejected``, the rejected ones counted by
their reason (``reason_of``: an error up to its first colon) in the order they were first met,
and written, where the user asks for them, to a ``--rejects`` file as one JSON line each
(``reject_line``). ``JobReport`` holds that accounting; ``LoadReport``, ``CheckReport`` and
``GroupsReport`` add what each job does with the records it used. Both engines fill the same
report: the local engine record by record (``JobReport.count``), the Spark engine from one
aggregate (``JobReport.count_rows``).

A load is resumable: ``Checkpoint`` saves its report with the index after every written batch.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import IO, Any

from ..index.index import Index
from .compressed import DAMAGED, UNREADABLE
from .corpus import Record
from .options import DEFAULT_K
from .progress import rate


def reason_of(error: str) -> str:
    """The reason a rejected record is counted under: its error up to the first colon."""
    return error.split(":", 1)[0]


def reject_line(source: str, line: int, doc_id: str | None, reason: str) -> str:
    """A rejected record as the JSON line of a ``--rejects`` file (newline included)."""
    return json.dumps({"source": source, "line": line, "id": doc_id, "reason": reason}, ensure_ascii=False) + "\n"


@contextmanager
def rejects_file(path: str | None, append: bool = False) -> Iterator[IO[str] | None]:
    """The ``--rejects`` file opened for writing (``append``: a resumed load adds to it), or
    None when there is none; closed at the end of the block."""
    if path is None:
        yield None
        return
    # a file name that is not UTF-8 (its bytes kept by surrogateescape) is written as \udcXX escapes:
    # JSON for the same string, whose os.fsencode gives the name's bytes back
    with open(path, "a" if append else "w", encoding="utf-8", errors="backslashreplace") as f:
        yield f


@dataclass
class JobReport:
    """The accounting of every job: records read, rejected (by reason, in the order first met),
    the bytes of their texts, and the job's time."""

    read: int = 0
    rejected: int = 0
    rejected_by_reason: Counter = field(default_factory=Counter)
    text_bytes: int = 0
    elapsed_s: float = 0.0
    damaged: list[str] = field(default_factory=list)  # "FILE: error" of each input cut off or corrupt

    def count(self, batch: list[Record], rejects: IO[str] | None = None,
              on_reject: Callable[[Record], None] | None = None) -> list[Record]:
        """Count a fingerprinted batch: read, text bytes, rejects (each written to ``rejects``
        and handed to ``on_reject``); returns its good records, in order."""
        good = []
        for record in batch:
            size = len(record.text.encode("utf-8", "surrogateescape")) if record.text else 0
            if record.error:
                self.count_rows(reason_of(record.error), 1, size)
                if reason_of(record.error) in DAMAGED:
                    self.damaged.append(f"{record.source}: {record.error}")
                if rejects is not None:
                    rejects.write(reject_line(record.source, record.line, record.id, record.error))
                if on_reject is not None:
                    on_reject(record)
            else:
                self.count_rows(None, 1, size)
                good.append(record)
        return good

    def count_rows(self, reason: str | None, rows: int, text_bytes: int = 0) -> None:
        """Count ``rows`` records read, with ``text_bytes`` bytes of text, rejected for
        ``reason`` unless it is None."""
        self.read += rows
        self.text_bytes += text_bytes
        if reason is not None:
            self.rejected += rows
            self.rejected_by_reason[reason] += rows

    def reasons(self) -> str:
        """The rejects by reason, most first, for a summary line: "2 malformed JSON, 1 ..."."""
        return ", ".join(f"{n} {r}" for r, n in self.rejected_by_reason.most_common())

    def damage(self) -> str | None:
        """What was wrong with the inputs that were cut off or corrupt (their records before the
        damage are used, those after it are lost), or None."""
        if not self.damaged:
            return None
        more = f" (and {len(self.damaged) - 1} more inputs)" if len(self.damaged) > 1 else ""
        if UNREADABLE in self.damaged[0]:
            return f"{self.damaged[0]}{more}: give it read permission (or copy it) and run the same command again"
        return (f"{self.damaged[0]}{more}: the records before it are used; replace the file (download or copy it "
                "again) and run the same command again")

    def failure(self, max_rejects: float | None = None) -> str | None:
        """Why this job counts as failed for its rejects, or None: an input cut off or corrupt
        (``damage``); more than ``max_rejects`` rejected (a count, or a fraction of the records
        read when below 1); without a limit, every record rejected (a job that used nothing of
        what it was given)."""
        if self.damaged:
            return self.damage()
        if not self.rejected:
            return None
        if max_rejects is None:
            return f"every record was rejected ({self.rejected:,} of {self.read:,})" if self.rejected == self.read else None
        limit = max_rejects * self.read if max_rejects < 1 else max_rejects
        if self.rejected > limit:
            allowed = f"{max_rejects:.2%} of {self.read:,}" if max_rejects < 1 else f"{int(max_rejects):,}"
            return f"{self.rejected:,} records were rejected, more than --max-rejects allows ({allowed})"
        return None


LOAD_KEYS = ("read", "indexed", "new", "near_duplicates_skipped", "rejected", "rejected_by_reason", "text_bytes",
             "elapsed_s", "resumed_after", "already_complete", "replaced", "unlabeled", "rejects_written", "damaged")


@dataclass
class LoadReport(JobReport):
    indexed: int = 0
    new: int = 0
    near_duplicates_skipped: int = 0
    resumed_after: int = 0      # records done by earlier runs of the same load
    already_complete: bool = False
    replaced: int = 0           # documents the index held with another fingerprint
    unlabeled: int = 0          # precomputed fingerprints that did not say which featurizer made them
    rejects_written: bool = False  # a finished load run again wrote its rejects file anew
    repeated: int = 0           # records whose id came earlier in the same batch (the last one kept)

    @property
    def docs_per_s(self) -> float:
        return self.read / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.text_bytes / 1e6 / self.elapsed_s if self.elapsed_s else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in LOAD_KEYS}
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

    def summary(self, featurizer: str | None = None) -> str:
        """For people: what was read, indexed, skipped and rejected, and how fast; then, on
        lines of their own, what needs a second look (``featurizer``: the index's label)."""
        if self.already_complete:
            wrote = f"; its {self.rejected} rejected records written again" if self.rejects_written else ""
            return (f"already loaded (read {self.read}, indexed {self.indexed}): nothing to do{wrote}; "
                    "--restart loads again")
        reasons = self.reasons()
        resumed = f"resumed after {self.resumed_after}; " if self.resumed_after else ""
        skipped = f", skipped {self.near_duplicates_skipped} near-duplicates" if self.near_duplicates_skipped else ""
        replaced = f", {self.replaced} replaced" if self.replaced else ""
        lines = [f"{resumed}read {self.read}, indexed {self.indexed} ({self.new} new{replaced}){skipped}, rejected "
                 f"{self.rejected}{f' ({reasons})' if reasons else ''} in {self.elapsed_s:.1f} s: "
                 f"{rate(self.docs_per_s)} docs/s, {self.mb_per_s:.2f} MB/s"]
        if self.replaced:
            lines.append(f"note: {self.replaced} documents were in the index with another fingerprint: "
                         "their old index rows are gone")
        if self.repeated:
            lines.append(f"note: {self.repeated} records had the id of an earlier record of the load: the last of "
                         "each id is kept")
        if self.unlabeled:
            lines.append(f"note: {self.unlabeled} fingerprints did not say which featurizer made them (no "
                         f"'featurizer' field): taken as the index's own{f' ({featurizer})' if featurizer else ''}")
        return "\n".join(lines)


@dataclass
class CheckReport(JobReport):
    """A check: records read (``documents`` in its summary), those with a match, those
    rejected; with ``add_new`` the documents indexed and those left out as near-duplicates;
    ``out``: where the Spark engine wrote the records."""

    with_matches: int = 0
    added: int | None = None
    skipped: int | None = None
    out: str = ""

    def to_dict(self) -> dict:
        d = {"documents": self.read, "with_matches": self.with_matches, "rejected": self.rejected}
        if self.added is not None:
            d["added"], d["near_duplicates_skipped"] = self.added, self.skipped
        return {**d, "out": self.out, "elapsed_s": round(self.elapsed_s, 3)}

    def summary(self) -> str:
        """For people. A document's match may be itself (its id indexed already), which
        ``--add-new`` does not count against it: the summary says so, lest "100 with matches,
        added 150" read as a contradiction."""
        added = (f"; added the {self.added:,} that match no other document, in the index or earlier in the input "
                 f"(skipped {self.skipped:,} that do)" if self.added is not None else "")
        return (f"checked {self.read:,} documents: {self.with_matches:,} with matches, "
                f"{self.rejected:,} rejected{added}{f'; records in {self.out}' if self.out else ''}")


@dataclass
class GroupsReport(JobReport):
    documents: int = 0
    groups: int = 0
    multi_groups: int = 0       # groups of two or more (the lines of groups.jsonl)
    scheme: str = ""
    k: int = DEFAULT_K
    engine: str = "local"
    signatures: str = "body"    # groups --signatures: the signatures' names, comma-separated
    confirm: int | None = None  # groups --confirm: the sketch bits allowed beyond 3 bits
    short: str | None = None    # groups --short-texts: the short-text rule ("words": text/units.py), None: off

    @property
    def to_drop(self) -> int:
        return self.documents - self.groups

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "documents": self.documents, "groups": self.groups,
                "multi_groups": self.multi_groups, "to_drop": self.to_drop, "rejected": self.rejected,
                "rejected_by_reason": dict(self.rejected_by_reason), "scheme": self.scheme, "k": self.k,
                "engine": self.engine, **({"signatures": self.signatures} if self.signatures != "body" else {}),
                **({"confirm": self.confirm} if self.confirm is not None else {}),
                **({"short_texts": self.short} if self.short is not None else {}), "elapsed_s": round(self.elapsed_s, 3)}

    def summary(self) -> str:
        reasons = self.reasons()
        return (f"{self.documents} documents in {self.groups} groups ({self.multi_groups} of two or more): "
                f"keep {self.groups}, drop {self.to_drop}; read {self.read}, rejected {self.rejected}"
                f"{f' ({reasons})' if reasons else ''}; k={self.k}, scheme {self.scheme}, "
                f"{f'signatures {self.signatures}, ' if self.signatures != 'body' else ''}"
                f"{f'confirmed within {self.confirm} bits, ' if self.confirm is not None else ''}"
                f"{'short texts near only by their words, ' if self.short is not None else ''}{self.engine} engine, "
                f"{self.elapsed_s:.1f} s")


class Checkpoint:
    """How far a load got, saved with the index under ``load:<key>`` (no key: not saved)."""

    def __init__(self, index: Index, key: str | None) -> None:
        self.index, self.name = index, (f"load:{key}" if key else None)

    def read(self) -> dict[str, Any] | None:
        return self.index.read_state(self.name) if self.name else None

    def finished(self, restart: bool) -> LoadReport | None:
        """The report of a finished run of this load (marked ``already_complete``), unless
        ``restart``; else None."""
        state = None if restart else self.read()
        if state and state["complete"]:
            report = LoadReport.from_dict(state["report"])
            report.already_complete = True
            return report
        return None

    def save(self, report: LoadReport, complete: bool) -> None:
        if self.name is not None:
            self.index.write_state(self.name, {"records_done": report.read, "complete": complete,
                                               "report": report.to_dict()})
