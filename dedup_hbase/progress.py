"""Progress display for long jobs (rich, on stderr): documents, docs/s, MB/s, rejects."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .corpus import Record

REPORTED_REJECTS = 20


class LoadProgress:
    """A live line ``N docs  D docs/s  M MB/s`` and the first rejected records.

    Disabled (silent) when ``enabled`` is false; the live line only draws on a terminal.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.console = Console(stderr=True, soft_wrap=True)
        self.rejects = 0
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=self.console, transient=True,
                                  disable=not (enabled and sys.stderr.isatty()))
        self._task = None
        self._started = time.perf_counter()

    def __enter__(self) -> "LoadProgress":
        self._progress.__enter__()
        self._task = self._progress.add_task("starting", total=None)
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)
        if self.enabled and self.rejects > REPORTED_REJECTS:
            self.console.print(f"... and {self.rejects - REPORTED_REJECTS} more rejected records "
                               "(--rejects FILE keeps them all)", highlight=False)

    def update(self, docs: int, text_bytes: int) -> None:
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(self._task, description=(
            f"{docs:,} docs  {docs / elapsed:,.0f} docs/s  {text_bytes / 1e6 / elapsed:.2f} MB/s"
            f"  {self.rejects} rejected"))

    def reject(self, record: Record) -> None:
        self.rejects += 1
        if self.enabled and self.rejects <= REPORTED_REJECTS:
            who = f" ({record.id})" if record.id else ""
            self.console.print(f"rejected {record.where}{who}: {record.error}", highlight=False, markup=False)
