"""Fingerprinting on every core, batches in order, at most ``2 x workers`` in flight (so
memory stays flat however long the input is).

With the compiled core (native.py) the workers are threads of this process: the core
releases the GIL for a whole batch, so threads run in parallel, with no copying of texts
between processes and one dictionary in memory. On the Python path they are processes,
started with ``spawn`` (the parent holds open store handles and threads, which do not
survive ``fork`` well); each builds its Fingerprinter once, from the fingerprinter's spec,
in the pool initializer; that per-process fingerprinter is the only module state, and it
lives in worker processes only.

Worker processes never outlive the process that started them:

* they ask the kernel for SIGKILL when their parent dies (Linux ``PR_SET_PDEATHSIG``; on
  other systems a thread watches the parent and exits the worker when it is gone), so a
  parent killed with SIGKILL, or by the OOM killer, takes its workers with it;
* they ignore SIGINT: a Ctrl-C reaches the whole process group, and it is the parent that
  decides to stop (``pool.terminate()``: the workers write nothing, so killing them loses
  nothing);
* leaving the pool's ``with`` block on an exception terminates them at once; on success it
  waits for them to exit.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from ..errors import EmptyDocument, InvalidInput
from ..text.fingerprint import Fingerprinter, fingerprinter_from_spec
from ..text.shorts import SHORT_BELOW
from ..text.units import text_sketches

T = TypeVar("T")
Result = int | str  # a simhash, or why there is none

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_worker: Fingerprinter | None = None  # set in each worker process by _start
_sketcher: Fingerprinter | None = None  # likewise, for an index with a confirmation


def die_with_parent(parent: int) -> None:
    """Make this process end when process ``parent`` (its parent now) ends, however it ends."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
            if os.getppid() != parent:  # the parent died before the request: no signal will come
                os._exit(1)
            return

    def watch() -> None:  # elsewhere: notice being orphaned, once a second, off the hot path
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _start(spec: dict, parent: int, sketch_spec: dict | None = None) -> None:
    global _worker, _sketcher
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker = fingerprinter_from_spec(spec)
    _worker.fingerprint("warm up the tokenizer")
    _sketcher = fingerprinter_from_spec(sketch_spec) if sketch_spec is not None else None


def fingerprint_texts(fingerprinter: Fingerprinter, texts: list[str], bodies: bool = False) -> list[Result]:
    """Simhash of each text, or the reason it has none (featureless text); with ``bodies``,
    also (a second and a third list) each body's characters without white space or None, and
    each short text's body or None (``Fingerprinter.fingerprint_bodies``)."""
    hashes, errors, *more = (fingerprinter.fingerprint_bodies(texts, keep_below=SHORT_BELOW) if bodies
                             else fingerprinter.fingerprint_many(texts))
    done = [f"{EmptyDocument.REASON}: {errors[i]}" if i in errors else h for i, h in enumerate(hashes.tolist())]
    return (done, *more) if bodies else done


def fingerprint_both(fingerprinter: Fingerprinter, texts: list[str], sketcher: Fingerprinter | None,
                     sketch_texts: list[str], short: bool = False) -> list[Result]:
    """``fingerprint_texts`` of ``texts``, then (an index with a confirmation) of ``sketch_texts``
    by the ``sketcher``, in one list. With ``short`` (the short-text rule; ``sketch_texts`` the
    first of ``texts``) the sketches after the fingerprints are ``units.text_sketches``', which
    tells a short text by the body's length the fingerprint's featurizer took (None: a text
    without a fingerprint), and after them each text's kept text ("" but for a short one)."""
    if not short:
        done = fingerprint_texts(fingerprinter, texts)
        return done + fingerprint_texts(sketcher, sketch_texts) if sketcher is not None and sketch_texts else done
    done, chars, bodies = fingerprint_texts(fingerprinter, texts, bodies=True)
    others = fingerprint_texts(sketcher, sketch_texts) if sketcher is not None and sketch_texts else ()
    made = [i for i in range(len(sketch_texts)) if not isinstance(done[i], str)]  # the texts with a fingerprint
    sketches, kepts = text_sketches([sketch_texts[i] for i in made],
                                    [others[i] if others and isinstance(others[i], int) else None for i in made],
                                    [chars[i] for i in made], [bodies[i] for i in made])
    out: list[Result] = [None] * len(sketch_texts)
    kept: list[Result] = [""] * len(sketch_texts)
    for i, sketch, text in zip(made, sketches, kepts):
        out[i], kept[i] = sketch, text
    return done + out + kept


def _work(texts: list[str], sketch_texts: list[str], short: bool) -> list[Result]:
    return fingerprint_both(_worker, texts, _sketcher, sketch_texts, short)


@contextmanager
def _sigint_ignored():
    """SIGINT ignored in this process meanwhile (processes started then keep ignoring it; a
    Python started with SIGINT ignored leaves it so). Only the main thread can do this."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class FingerprintPool:
    """``map(batches, texts_of)`` -> ``(batch, results)`` in input order.

    With ``workers == 1`` everything runs in the calling thread (no pool is started).
    """

    def __init__(self, fingerprinter: Fingerprinter, workers: int | None = None,
                 sketcher: Fingerprinter | None = None, short: bool = False) -> None:
        workers = default_workers() if workers is None else workers
        if workers < 1:
            raise InvalidInput(f"workers must be >= 1, not {workers}")
        self.fingerprinter = fingerprinter
        self.sketcher = sketcher  # an index with a confirmation: its texts' second SimHash, on the workers too
        self.short = short  # the short-text rule: each text's sketch and kept text are text/units.py's (fingerprint_both)
        self.workers = workers
        self._processes = None  # the Python path's worker processes
        self._threads: ThreadPoolExecutor | None = None  # the compiled core's worker threads

    @property
    def kind(self) -> str:
        """How the batches are spread: "threads" (the compiled core), "processes", or "none"."""
        if self.workers == 1:
            return "none"
        return "threads" if self.fingerprinter.uses_core else "processes"

    def __enter__(self) -> FingerprintPool:
        if self.kind == "threads":
            self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="fingerprint")
        elif self.kind == "processes":
            context = multiprocessing.get_context("spawn")
            with _sigint_ignored():  # inherited through exec: no Ctrl-C window before _start runs
                self._processes = context.Pool(self.workers, initializer=_start, initargs=(
                    self.fingerprinter.spec, os.getpid(), self.sketcher.spec if self.sketcher is not None else None))
        return self

    def __exit__(self, kind, *exc) -> None:
        threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)  # a batch in the core ends within a second
        processes, self._processes = self._processes, None
        if processes is not None:
            if kind is None:
                processes.close()  # every batch is done: let the workers exit
            else:
                processes.terminate()  # interrupted or failed: stop them now; they write nothing
            processes.join()

    def _submit(self, texts: list[str], sketch_texts: list[str]) -> Callable[[], list[Result]]:
        """Start fingerprinting ``texts`` (and sketching ``sketch_texts``); returns what waits for the results."""
        if self._threads is not None:
            return self._threads.submit(fingerprint_both, self.fingerprinter, texts, self.sketcher, sketch_texts,
                                        self.short).result
        return self._processes.apply_async(_work, (texts, sketch_texts, self.short)).get

    def map(self, batches: Iterable[T], texts_of: Callable[[T], list[str]],
            sketch_of: Callable[[T], list[str]] = lambda batch: []) -> Iterator[tuple[T, list[Result]]]:
        """Per batch, the results of its ``texts_of``, then (with a sketcher or ``short``) the
        sketches of its ``sketch_of``, then (``short``) their kept texts (``fingerprint_both``)."""
        if self._threads is None and self._processes is None:
            for batch in batches:
                yield batch, fingerprint_both(self.fingerprinter, texts_of(batch), self.sketcher, sketch_of(batch),
                                              self.short)
            return
        pending: deque = deque()
        for batch in batches:
            pending.append((batch, self._submit(texts_of(batch), sketch_of(batch))))
            if len(pending) >= 2 * self.workers:
                done, result = pending.popleft()
                yield done, result()
        while pending:
            done, result = pending.popleft()
            yield done, result()
