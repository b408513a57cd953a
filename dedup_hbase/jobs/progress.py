"""Progress of long jobs on stderr: a load's documents, docs/s, MB/s and rejects; a long read's
count of keys.

On a terminal, a live line (rich). Elsewhere (a log file, a pipeline, a test), a plain line
``progress: N records done and checkpointed, ...`` (a load, after a checkpoint) at most every
``every`` seconds, so a log shows how far a long job got; a job shorter than that prints none.
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


class LiveLine:
    """One line of progress on stderr: live (rich) on a terminal, else a plain ``progress: ...``
    line at most every ``every`` seconds (0: at every ``show``), so a log shows how far a long job
    got; a job shorter than that prints none. Silent when ``enabled`` is false; ``live``: false
    for a job with nothing to show as it goes (plain lines only)."""

    def __init__(self, enabled: bool = True, every: float = 10.0, live: bool = True) -> None:
        self.enabled = enabled
        self.console = Console(stderr=True, soft_wrap=True)
        self.live = enabled and live and sys.stderr.isatty()
        self.every = every
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=self.console, transient=True, disable=not self.live)
        self._task = None
        self._started = time.perf_counter()
        self._printed = self._started

    def __enter__(self):
        self._progress.__enter__()
        self._task = self._progress.add_task("starting", total=None)
        self._started = self._printed = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def show(self, live: str, plain: str | None = None, now: float | None = None) -> None:
        """``live`` on the live line; off a terminal ``plain`` (``live`` when None), if ``every``
        seconds have passed since the last."""
        now = time.perf_counter() if now is None else now
        if self.live:
            self._progress.update(self._task, description=live)
        elif self.enabled and now - self._printed >= self.every:
            self._printed = now
            print(f"progress: {live if plain is None else plain}", file=sys.stderr, flush=True)

    def elapsed(self, now: float) -> float:
        return max(now - self._started, 1e-9)


class CountProgress(LiveLine):
    """``N WHAT read, R WHAT/s`` for a long read (``stats``' full read of the keys)."""

    def __init__(self, what: str, enabled: bool = True, every: float = 10.0) -> None:
        super().__init__(enabled, every)
        self.what = what

    def update(self, count: int) -> None:
        now = time.perf_counter()
        self.show(f"{count:,} {self.what} read, {rate(count / self.elapsed(now))} {self.what}/s", now=now)


class LoadProgress(LiveLine):
    """A live line ``N docs  D docs/s  M MB/s`` (plain lines off a terminal) and the first
    rejected records. Silent when ``enabled`` is false; ``counts``: false for a job that reports
    no counts as it goes (a Spark job: only the rejected records, no live line)."""

    def __init__(self, enabled: bool = True, every: float = 10.0, counts: bool = True) -> None:
        super().__init__(enabled, every, live=counts)
        self.rejects = 0

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        if self.enabled and self.rejects > REPORTED_REJECTS:
            self.console.print(f"... and {self.rejects - REPORTED_REJECTS} more rejected records "
                               "(--rejects FILE keeps them all)", highlight=False)

    def update(self, docs: int, text_bytes: int) -> None:
        """``docs`` records (``text_bytes`` bytes of text) are done and checkpointed."""
        now = time.perf_counter()
        elapsed = self.elapsed(now)
        rates = f"{rate(docs / elapsed)} docs/s, {text_bytes / 1e6 / elapsed:.2f} MB/s, {self.rejects} rejected"
        self.show(f"{docs:,} docs  {rates}", f"{docs:,} records done and checkpointed, {rates}", now)

    def reject(self, record: Record) -> None:
        self.rejects += 1
        if self.enabled and self.rejects <= REPORTED_REJECTS:
            who = f" ({record.id})" if record.id else ""
            self.console.print(f"rejected {record.where}{who}: {record.error}", highlight=False, markup=False)
