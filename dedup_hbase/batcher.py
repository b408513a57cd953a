"""Concurrent requests joined into one library call.

The index answers a batch of documents for far less per document than one at a time (the
lookup of one fingerprint costs the embedded store about 140 µs, of 20 at once about 25 µs
each), and a service gets its documents one request at a time. ``Batcher`` joins them without
waiting for anyone: a call that finds no batch running starts one at once with its own
documents; calls that arrive while batches run queue up, and when a batch ends the next one
takes every call queued (up to ``max_docs`` documents). Under no load a request is answered
as fast as alone; under load the batches grow with the queue.

Only for a function whose answer for one document does not depend on the other documents of
the call (``check``: a lookup per document), so that joining calls changes no answer. A batch
that raises raises in every call it joined.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any


class Batcher:
    """``await batcher(items)`` is ``fn(items)``, run in ``executor`` joined with the calls
    queued meanwhile, at most ``parallel`` batches at once. Used from one event loop."""

    def __init__(self, fn: Callable[[list], list], executor: Executor, max_items: int, parallel: int = 1) -> None:
        if max_items < 1 or parallel < 1:
            raise ValueError(f"max_items and parallel must be >= 1, not {max_items} and {parallel}")
        self.fn, self.executor, self.max_items, self.parallel = fn, executor, max_items, parallel
        self._queued: deque[tuple[Sequence, asyncio.Future]] = deque()
        self._running = 0
        self.batches = 0  # batches run so far (for tests and stats)

    async def __call__(self, items: Sequence) -> list[Any]:
        future = asyncio.get_running_loop().create_future()
        self._queued.append((items, future))
        if self._running < self.parallel:
            self._start()
        return await future

    def _start(self) -> None:
        calls, size = [], 0
        while self._queued and (not calls or size + len(self._queued[0][0]) <= self.max_items):
            items, future = self._queued.popleft()
            if not future.done():  # a cancelled call is dropped
                calls.append((items, future))
                size += len(items)
        if not calls:
            return
        self._running += 1
        self.batches += 1
        joined = list(calls[0][0]) if len(calls) == 1 else [item for items, _ in calls for item in items]
        done = asyncio.get_running_loop().run_in_executor(self.executor, self.fn, joined)
        done.add_done_callback(lambda done: self._finish(calls, done))

    def _finish(self, calls: list[tuple[Sequence, asyncio.Future]], done: asyncio.Future) -> None:
        self._running -= 1
        if self._queued:
            self._start()
        error = done.exception() if not done.cancelled() else asyncio.CancelledError()
        start = 0
        for items, future in calls:
            if not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(done.result()[start:start + len(items)])
            start += len(items)
