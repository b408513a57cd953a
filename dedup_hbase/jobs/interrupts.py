"""Stopping a long job on SIGINT (Ctrl-C) or SIGTERM (a scheduler, ``kill``), and saying what is safe.

SIGINT raises ``KeyboardInterrupt``; inside ``sigterm_raises()`` SIGTERM raises ``Stopped``. Both
are BaseExceptions, so no ``except Exception`` on the way swallows them. A job that knows what
an interruption leaves behind (how many records are written, whether a rerun resumes) turns
them into ``Interrupted`` with that message; the command line prints it and exits with
128 + the signal's number, as a shell does.

Python drops such an exception where it can only print it: raised while a weakref callback or a
``__del__`` runs (an import's module lock is freed by one), it is "ignored" and the job would go
on as if no signal had come. ``deliver_dropped_stops()`` (the command line's first step) sends
that signal again, to the main thread, once the callback has returned, and again until the
main thread has taken it.
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


def deliver_dropped_stops() -> None:
    """From now on a ``KeyboardInterrupt`` or ``Stopped`` that Python drops (``sys.unraisablehook``)
    is raised again: its signal is sent to the main thread once the hook has returned. Every other
    unraisable exception is printed as before. Process-wide; the command line calls it, a library
    import does not."""
    sys.unraisablehook = _deliver_again


# while the main thread has not taken a stop sent again, it is sent once more this often, up to
# this many times (10 s: a handler that some code put back in place of the wrapper never says)
RESEND_S, RESENDS = 0.2, 50


def _deliver_again(unraisable) -> None:
    if not isinstance(unraisable.exc_value, STOPS):
        sys.__unraisablehook__(unraisable)
        return
    number = signal_of(unraisable.exc_value)
    if number == signal.SIGTERM:
        signal.signal(signal.SIGTERM, _raise_stopped)  # the dropped one was not a first SIGTERM
    taken = threading.Event()
    handler = signal.getsignal(number)
    watched = threading.current_thread() is threading.main_thread() and callable(handler)
    if watched:  # the signal's handler, told that the stop arrived, then the stop raised as before
        def take(signum, frame) -> None:
            signal.signal(signum, handler)
            taken.set()
            handler(signum, frame)
        signal.signal(number, take)
    hook_running = threading.Lock()
    hook_running.acquire()
    threading.Thread(target=_send, args=(hook_running, number, taken if watched else None),
                     name="deliver-dropped-stop", daemon=True).start()
    hook_running.release()  # the last call here: the signal is handled after the hook returns


def _send(hook_running: threading.Lock, number: int, taken: threading.Event | None) -> None:
    """Send signal ``number`` to the main thread once the hook has returned, and again every
    ``RESEND_S`` until its handler has run (``taken``; None: once), at most ``RESENDS`` times
    more. A signal that arrives just before the main thread blocks in a read is handled
    without waking it: the read blocks on. (One sent while the main thread runs the handler of
    the one before it, a switch of threads between the test of ``taken`` and the send, would
    raise the stop twice, as two Ctrl-Cs do.)"""
    with hook_running:
        pass
    main = threading.main_thread().ident
    signal.pthread_kill(main, number)  # wakes a main thread blocked in a read
    for _ in range(RESENDS if taken is not None else 0):
        if taken.wait(RESEND_S):
            return
        signal.pthread_kill(main, number)


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
