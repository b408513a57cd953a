"""What the service knows of its store outside the requests: whether it answers (``/readyz``)
and how many documents the index holds (``GET /metrics``).

``Readiness.ask(then)``: a round trip to the store (``probe``: the index's configuration read,
which on HBase asks both Thrift gateways: the tables listed, the metadata row read; on the
embedded store the folder checked and the row read) on a thread of its own, answered ``{"ready":
true}`` when it returns within ``timeout`` seconds, else ``NotReady`` (a 503) with the store's
error or how long it has not answered. One probe runs at a time: requests that come while it
runs wait for it (at most until its ``timeout``), so a store that hangs holds one thread, not
one per request. The thread is a daemon: a store that never answers does not keep the process
from stopping. A change of state (ready, not ready) is logged once, not once per request.

``DocumentCount``: the index's documents, counted in the background (every key of the
documents' table read, a page at a time: ``OnlineIndex.count_documents``) at start and then
every ``every`` seconds (or never: then there is no count), plus this server's own changes since the count (documents added, less
those deleted and expired, from the handlers' counters): no read of the index per scrape. Exact
while this server is the only writer and adds new ids; it drifts by the writes of other
servers on the same HBase, by an add that replaces a document of the same id (counted as one
more), and by the writes made while a count ran, until the next count.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import DedupError
from .batcher import Then
from .documents import RequestError
from .online import OnlineIndex

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 2.0


class NotReady(RequestError):
    """``/readyz``'s 503: the store did not answer, or failed."""

    def __init__(self, message: str) -> None:
        super().__init__(503, message)
        self.body = {"ready": False, "error": message}


class Readiness:
    """``ask(then)`` on the event loop's thread (see the module docstring)."""

    def __init__(self, probe: Callable[[], Any], timeout: float = READY_TIMEOUT_S) -> None:
        self.probe, self.timeout = probe, timeout
        self.running: asyncio.Future | None = None
        self.started = 0.0  # the running probe's start (the loop's clock)
        self.ready: bool | None = None  # the last outcome, for the log

    def ask(self, then: Then) -> None:
        loop = asyncio.get_running_loop()
        if self.running is None:
            self.running, self.started = self._start(loop), loop.time()
        running, answered = self.running, []

        def answer(outcome: BaseException | None) -> None:
            if answered:
                return
            answered.append(True)
            timer.cancel()
            self._note(outcome)
            then(None, outcome) if outcome is not None else then({"ready": True}, None)

        def settled(future: asyncio.Future) -> None:
            answer(future.exception())

        def late() -> None:
            answer(NotReady(f"the store has not answered for {loop.time() - self.started:.1f} s"))

        timer = loop.call_later(max(self.timeout - (loop.time() - self.started), 0), late)
        running.add_done_callback(settled)

    def _start(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future:
        future = loop.create_future()

        def done(error: BaseException | None) -> None:
            self.running = None
            if not future.done():
                future.set_exception(error) if error is not None else future.set_result(None)

        def run() -> None:
            try:
                self.probe()
                error = None
            except DedupError as e:
                error = NotReady(f"the store failed: {e}")
            except Exception as e:  # a bug, or a failure the store does not name: logged with its traceback
                logger.error("the readiness probe failed", exc_info=e)
                error = NotReady(f"the store failed: {type(e).__name__}")
            try:
                loop.call_soon_threadsafe(done, error)
            except RuntimeError:  # the loop closed meanwhile: the server stopped
                pass

        threading.Thread(target=run, name="dedup-ready", daemon=True).start()
        return future

    def _note(self, outcome: BaseException | None) -> None:
        ready = outcome is None
        if ready != self.ready:
            if ready and self.ready is not None:
                logger.warning("ready again: the store answers")
            elif not ready:
                logger.warning("not ready (GET /readyz answers 503): %s", outcome)
        self.ready = ready


class DocumentCount:
    """The index's documents for ``GET /metrics`` (see the module docstring)."""

    def __init__(self, online: OnlineIndex, counts: Callable[[], dict[str, int]]) -> None:
        self.online, self.counts = online, counts
        self.counted: tuple[int, float, int] | None = None  # (documents, when, this server's net adds then)

    @staticmethod
    def net(counts: dict[str, int]) -> int:
        """This server's documents added less deleted and expired, from its counters."""
        return counts.get("documents_added", 0) - counts.get("documents_deleted", 0) - counts.get("documents_expired", 0)

    def value(self, counts: dict[str, int]) -> tuple[int, float] | None:
        """(documents, when last counted) from the handlers' ``counts``; None before a first count."""
        counted = self.counted
        if counted is None:
            return None
        documents, when, net = counted
        return documents + self.net(counts) - net, when

    def count(self) -> None:
        """Count the documents now (a read of every key of the documents' table)."""
        before, started = self.net(self.counts()), time.monotonic()
        documents = self.online.count_documents()
        self.counted = (documents, time.time(), before)
        logger.debug("counted %d documents in %.1f s", documents, time.monotonic() - started)

    def count_until(self, stop: threading.Event, every: float) -> None:
        """``count`` now, then every ``every`` seconds, until ``stop``."""
        while True:
            try:
                self.count()
            except DedupError as e:
                logger.warning("counting the index's documents failed (tried again in %.0f s): %s", every, e)
            if stop.wait(every):
                return
