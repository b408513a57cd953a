"""Concurrent requests joined into one trip to a worker thread.

The index answers a batch of documents for less per document than one at a time, and a
service gets its documents one request at a time. ``Batcher`` joins them without waiting for
anyone: a call that finds no batch running starts one at once with its own documents; calls
that arrive while batches run queue up, and when a batch ends the next one takes every call
queued (up to ``max_items`` documents). Under no load a request is answered as soon as alone;
under load the batches grow with the queue.

Two ways to run a batch:

- joined (``join=True``): one call of ``fn`` with the documents of every call in it, its
  answers handed back in order. Only for a function whose answer for one document does not
  depend on the other documents of the call (``check``: a lookup per document), so that
  joining calls changes no answer. A batch that raises raises in every call it joined.
- in turn (``join=False``): ``fn`` once per call, one after the other on one thread, each
  call's exception its own. For calls that must not be joined (``add``: a document is
  compared with the earlier documents of its call) on a store that serves one call at a
  time anyway: the calls then queue here, in order, instead of as threads on the store's
  lock, and pay one hand-off to a thread per batch instead of per call.

Small batches on the event loop itself (``inline_max``): a batch of at most that many items
runs on the loop's own thread, with no hand-off. For a function that is in-process CPU work
(the embedded store: a fingerprint and a lookup, no network wait), where a hand-off to a
thread and back costs more than such a batch. Such a batch starts at the end of the loop's
current turn instead of at once, so that the requests that arrived in the same turn join it; a
bigger batch (and any batch while ``inline_ok()`` is false: the store busy on a thread) goes to
the executor as above, so a large request never holds up the loop.

A call gives a callback, ``then(answer, None)`` or ``then(None, error)``, called on the event
loop's thread once its batch is done (no future, no loop turn between a batch's end and its
answers); not called for a batch cancelled by the executor's shutdown (the service stops). The
batcher does not limit how many calls queue. ``observe``, if given, is called with the items
of every batch as it starts, on the loop's thread (the service's metrics).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

Then = Callable[[Any, BaseException | None], None]  # a call's callback: (answer, None) or (None, error)


class Batcher:
    """``batcher.submit(then, items, *args)`` calls ``then`` with ``fn(items, *args)``'s
    answer or exception, run in ``executor`` in a batch with the calls queued meanwhile, at
    most ``parallel`` batches at once; a batch of at most ``inline_max`` items on the loop's
    thread instead (when ``inline_ok()``, if given, is true); ``observe(items)`` told of each
    batch. Used from one event loop."""

    def __init__(self, fn: Callable[..., list], executor: Executor, max_items: int, parallel: int = 1,
                 join: bool = True, inline_max: int = 0, inline_ok: Callable[[], bool] | None = None,
                 observe: Callable[[int], None] | None = None) -> None:
        if max_items < 1 or parallel < 1 or inline_max < 0:
            raise ValueError(f"max_items and parallel must be >= 1 and inline_max >= 0, not {max_items}, "
                             f"{parallel} and {inline_max}")
        self.fn, self.executor, self.max_items, self.parallel, self.join = fn, executor, max_items, parallel, join
        self.inline_max, self.inline_ok, self.observe = inline_max, inline_ok, observe
        self._queued: deque[tuple[Sequence, tuple, Then]] = deque()  # (items, args, then)
        self._running = 0
        self._scheduled = False  # a start is due at the end of the loop's turn (inline_max)
        self.batches = 0  # batches run so far
        self.inline_batches = 0  # of them, run on the loop's thread

    def submit(self, then: Then, items: Sequence, *args: Any) -> None:
        """Queue ``fn(items, *args)``; ``then`` gets its outcome (see the module docstring).
        An exception ``then`` raises goes to the loop's exception handler (logged), not to the
        other calls."""
        if args and self.join:
            raise TypeError("a joined batch passes no arguments but the items")
        self._queued.append((items, args, then))
        if self._running < self.parallel:
            if not self.inline_max:
                self._start()
            elif not self._scheduled:  # the calls of this turn of the loop join the batch
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._start)

    @property
    def queued(self) -> int:
        """Calls waiting for a batch."""
        return len(self._queued)

    def _start(self) -> None:
        self._scheduled = False
        if self._running >= self.parallel:
            return  # started meanwhile; the running batch's end starts the next
        calls, size = [], 0
        while self._queued and (not calls or size + len(self._queued[0][0]) <= self.max_items):
            call = self._queued.popleft()
            calls.append(call)
            size += len(call[0])
        self.batches += 1
        if self.observe is not None:
            self.observe(size)
        if size <= self.inline_max and (self.inline_ok is None or self.inline_ok()):
            self.inline_batches += 1
            try:
                outcomes = self._run([c[:2] for c in calls])
            except Exception as e:  # a joined batch's error is every call's
                outcomes = [(None, e)] * len(calls)
            self._settle(calls, outcomes)
            if self._queued and not self._scheduled:  # calls beyond max_items
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._start)
            return
        self._running += 1
        done = asyncio.get_running_loop().run_in_executor(self.executor, self._run, [c[:2] for c in calls])
        done.add_done_callback(lambda done: self._finish(calls, done))

    def _run(self, calls: list[tuple[Sequence, tuple]]) -> list[tuple[Any, BaseException | None]]:
        """In the executor (or inline): each call's (answer, None) or (None, its exception)."""
        if self.join:
            joined = list(calls[0][0]) if len(calls) == 1 else [item for items, _ in calls for item in items]
            answers, start, out = self.fn(joined), 0, []
            for items, _ in calls:
                out.append((answers[start:start + len(items)], None))
                start += len(items)
            return out
        out = []
        for items, args in calls:
            try:
                out.append((self.fn(items, *args), None))
            except Exception as e:  # this call's own
                out.append((None, e))
        return out

    def _finish(self, calls: list[tuple], done: asyncio.Future) -> None:
        self._running -= 1
        if self._queued:
            if not self.inline_max:
                self._start()
            elif not self._scheduled:  # perhaps inline: after these answers, not before them
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._start)
        if done.cancelled():
            outcomes = [(None, asyncio.CancelledError())] * len(calls)
        elif done.exception() is not None:
            outcomes = [(None, done.exception())] * len(calls)
        else:
            outcomes = done.result()
        self._settle(calls, outcomes)

    @staticmethod
    def _settle(calls: list[tuple], outcomes: list[tuple[Any, BaseException | None]]) -> None:
        """Each call's ``then`` called with its outcome (none for a cancelled batch)."""
        for (_, _, then), (answer, error) in zip(calls, outcomes):
            if isinstance(error, asyncio.CancelledError):
                continue
            try:
                then(answer, error)
            except Exception as e:  # a bug in the callback: reported as asyncio reports a callback's; the next calls are answered
                asyncio.get_running_loop().call_exception_handler({"message": "a batcher's callback raised", "exception": e})
