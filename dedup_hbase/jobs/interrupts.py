"""Stopping a long job on SIGINT (Ctrl-C) or SIGTERM (a scheduler, ``kill``), and saying what is safe.

SIGINT raises ``KeyboardInterrupt``; inside ``sigterm_raises()`` SIGTERM raises ``Stopped``. Both
are BaseExceptions, so no ``except Exception`` on the way swallows them. A job that knows what
an interruption leaves behind (how many records are written, whether a rerun resumes) turns
them into ``Interrupted`` with that message; the command line prints it and exits with
128 + the signal's number, as a shell does.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Stopped(BaseException):
    """SIGTERM arrived (raised only inside ``sigterm_raises``)."""


class Interrupted(BaseException):
    """A job stopped by a signal; the message says what it left and how to go on."""

    def __init__(self, cause: BaseException, message: str) -> None:
        super().__init__(message)
        self.signal = signal.SIGTERM if isinstance(cause, Stopped) else signal.SIGINT

    @property
    def status(self) -> int:
        return exit_status(self.signal)


STOPS = (KeyboardInterrupt, Stopped)  # what a job catches to say what it leaves behind


def signal_of(stop: BaseException) -> signal.Signals:
    """The signal behind ``KeyboardInterrupt``, ``Stopped`` or ``Interrupted``."""
    if isinstance(stop, Interrupted):
        return stop.signal
    return signal.SIGTERM if isinstance(stop, Stopped) else signal.SIGINT


def exit_status(number: int) -> int:
    """The exit status of a process stopped by signal ``number`` (128 + it, as shells report)."""
    return 128 + int(number)


def _raise_stopped(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Stopped()


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises ``Stopped`` in the main thread meanwhile (elsewhere, and on Windows, a no-op)."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
