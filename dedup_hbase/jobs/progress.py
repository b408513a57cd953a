"""Progress of long jobs on stderr: documents, docs/s, MB/s, rejects.

On a terminal, a live line (rich). Elsewhere (a log file, a pipeline, a test), a plain line
``progress: N records done and checkpointed, ...`` after a checkpoint at most every ``every``
seconds (0: after every checkpoint), so a log shows how far a long load got; a load shorter
than that prints none.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .corpus import Record

REPORTED_REJECTS = 20


def rate(per_s: float) -> str:
    """A rate for people: whole and grouped from 10 up (4,271), else two significant digits
    (0.033: one 50 MB document in 30 s is not "0 docs/s")."""
    return f"{per_s:,.0f}" if per_s >= 10 or per_s == 0 else f"{per_s:.2g}"


class LoadProgress:
    """A live line ``N docs  D docs/s  M MB/s`` (plain lines off a terminal) and the first
    rejected records. Silent when ``enabled`` is false; ``counts``: false for a job that reports
    no counts as it goes (a Spark job: only the rejected records, no live line)."""

    def __init__(self, enabled: bool = True, every: float = 10.0, counts: bool = True) -> None:
        self.enabled = enabled
        self.console = Console(stderr=True, soft_wrap=True)
        self.rejects = 0
        self.live = enabled and counts and sys.stderr.isatty()
        self.every = every
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=self.console, transient=True, disable=not self.live)
        self._task = None
        self._started = time.perf_counter()
        self._printed = self._started

    def __enter__(self) -> "LoadProgress":
        self._progress.__enter__()
        self._task = self._progress.add_task("starting", total=None)
        self._started = self._printed = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)
        if self.enabled and self.rejects > REPORTED_REJECTS:
            self.console.print(f"... and {self.rejects - REPORTED_REJECTS} more rejected records "
                               "(--rejects FILE keeps them all)", highlight=False)

    def update(self, docs: int, text_bytes: int) -> None:
        """``docs`` records (``text_bytes`` bytes of text) are done and checkpointed."""
        now = time.perf_counter()
        elapsed = max(now - self._started, 1e-9)
        rates = f"{rate(docs / elapsed)} docs/s, {text_bytes / 1e6 / elapsed:.2f} MB/s, {self.rejects} rejected"
        if self.live:
            self._progress.update(self._task, description=f"{docs:,} docs  {rates}")
        elif self.enabled and now - self._printed >= self.every:
            self._printed = now
            print(f"progress: {docs:,} records done and checkpointed, {rates}", file=sys.stderr, flush=True)

    def reject(self, record: Record) -> None:
        self.rejects += 1
        if self.enabled and self.rejects <= REPORTED_REJECTS:
            who = f" ({record.id})" if record.id else ""
            self.console.print(f"rejected {record.where}{who}: {record.error}", highlight=False, markup=False)
