"""Fingerprinting on every core: a process pool, one tokenizer per worker, batches in order.

Workers are started with ``spawn`` (the parent holds open store handles and threads,
which do not survive ``fork`` well). Each builds its Fingerprinter once, from the
index's spec, in the pool initializer; that per-process fingerprinter is the only
module state, and it lives in worker processes only. At most ``2 x workers`` batches
are in flight, so memory stays flat however long the input is.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from .features import featurizer_from_spec
from .fingerprint import Fingerprinter

T = TypeVar("T")
Result = int | str  # a simhash, or why there is none

_worker: Fingerprinter | None = None  # set in each worker process by _start


def _start(spec: dict) -> None:
    global _worker
    _worker = Fingerprinter(featurizer_from_spec(spec), spec.get("seed", 0))
    _worker.fingerprint("warm up the tokenizer")


def fingerprint_texts(fingerprinter: Fingerprinter, texts: list[str]) -> list[Result]:
    """Simhash of each text, or the reason it has none (featureless text)."""
    hashes, errors = fingerprinter.fingerprint_many(texts)
    return [f"featureless text: {errors[i]}" if i in errors else h for i, h in enumerate(hashes.tolist())]


def _work(texts: list[str]) -> list[Result]:
    return fingerprint_texts(_worker, texts)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class FingerprintPool:
    """``map(batches, texts_of)`` -> ``(batch, results)`` in input order.

    With ``workers == 1`` everything runs in this process (no pool is started).
    """

    def __init__(self, fingerprinter: Fingerprinter, workers: int | None = None) -> None:
        workers = default_workers() if workers is None else workers
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        self.fingerprinter = fingerprinter
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> "FingerprintPool":
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start, initargs=(self.fingerprinter.spec,))
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def map(self, batches: Iterable[T], texts_of: Callable[[T], list[str]]) -> Iterator[tuple[T, list[Result]]]:
        if self._pool is None:
            for batch in batches:
                yield batch, fingerprint_texts(self.fingerprinter, texts_of(batch))
            return
        pending: deque = deque()
        for batch in batches:
            pending.append((batch, self._pool.submit(_work, texts_of(batch))))
            if len(pending) >= 2 * self.workers:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
