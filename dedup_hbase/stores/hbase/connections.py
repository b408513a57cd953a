"""Connections to HBase's two Thrift gateways, and the one retry loop of the package.

``Gateways`` keeps a pool of connections to each gateway, made on first use: happybase
connections to the Thrift1 gateway at PORT, ``wire.Channel``s to the Thrift2 gateway at
``admin_port``. A unit of work (a get, a scan read to its end, one batch of mutations) runs
in ``run1`` or ``run2``: it leases a connection, does the work on it and gives it back; when
the connection drops (a socket reset or refused: a gateway restarting, or closing
sockets idle longer than its read timeout) the pool's idle connections are closed too (as old
as the one that dropped) and the work runs again on a fresh connection, up to ``retries``
attempts with growing pauses. A call the gateway takes and does not answer within
the socket timeout (``timeout``: HBase's master or region servers down behind it) is tried once
more, not ``retries`` times: a command against an HBase that does not answer ends within about
twice the timeout (2 x 60 s by default) with one line saying so (``no_answer``). Only
idempotent work goes through here (reads, puts of the same cells, deletes), so running it
again is safe; the fleet locks' check-and-set
calls read the cell after a "no" (locks.py). An error HBase answers with (a missing table, an
illegal argument) is a StoreError at once, not retried. No work keeps anything of its lease:
a scan is read completely inside it.

``parallel`` maps a function over items on the store's threads (the calls of one batch, in
parallel over the pools). Nothing here knows tables, keys or cells.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from ...errors import StoreError
from . import GatewayUnreachable
from .wire import Channel

logger = logging.getLogger(__name__)


TIMEOUTS = 2  # calls of one unit of work that may time out: a second timeout ends it (bounded: 2 x timeout)


def no_answer(host: str, port: int, timeout_ms: int, times: int) -> str:
    """The one line for a gateway that took a call and did not answer it: what may be down."""
    tries = "twice" if times == 2 else f"{times} time(s)"
    return (f"no answer from HBase at {host}:{port} within {timeout_ms / 1000:g} s ({tries}): the Thrift gateway "
            "there took the call, so it or HBase behind it is not answering (a frozen gateway; HBase's master, "
            "which table admin needs; or the region servers holding the tables or hbase:meta)")


class Pool:
    """Up to ``size`` connections, made by ``connect()`` when none is idle. ``lease`` opens one
    (its ``open()``: connects unless connected), hands it out and takes it back; one whose
    work raised is closed, not returned (the next lease makes a fresh one).

    Also the Thrift1 pool: happybase's own pool offers no way to close its idle connections,
    so the store pools happybase connections here too."""

    def __init__(self, size: int, connect: Callable) -> None:
        self.size, self.connect = size, connect
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)

    @contextmanager
    def lease(self) -> Iterator:
        self._slots.acquire()
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self.connect()
            try:
                conn.open()
                yield conn
            except BaseException:
                conn.close()
                raise
            self._idle.put(conn)
        finally:
            self._slots.release()

    def warm(self) -> None:
        """Open one connection now and keep it idle (an unreachable gateway raises here)."""
        with self.lease():
            pass

    def close(self) -> None:
        """Close the idle connections."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class Gateways:
    """Both gateways of one HBase for one store: pools of ``pool_size`` connections each, the
    retry loop, the store's threads. Thread-safe. No I/O until the first unit of work."""

    def __init__(self, host: str, port: int, admin_port: int, *, pool_size: int = 4, timeout: int = 60000,
                 retries: int = 8, transport: str = "buffered") -> None:
        self.host, self.port, self.admin_port = host, port, admin_port
        self.pool_size, self.timeout, self.retries = pool_size, timeout, retries
        self.transport = transport
        self._lock = threading.Lock()
        self._pools: dict[bool, Pool] = {}  # Thrift2's (True), Thrift1's (False)
        self._executor: ThreadPoolExecutor | None = None

    def channel(self) -> Channel:
        """A new connection to the Thrift2 gateway, not yet open: what the Thrift2 pool holds,
        and what table creation uses alone, without retries (admin.py)."""
        return Channel(self.host, self.admin_port, self.timeout, self.transport)

    def _pool(self, thrift2: bool) -> Pool:
        with self._lock:
            pool = self._pools.get(thrift2)
            if pool is None:
                pool = self._pools[thrift2] = self._new_pool(thrift2)
            return pool

    def _new_pool(self, thrift2: bool) -> Pool:
        """A gateway's pool (``Channel``s to Thrift2's, happybase connections to Thrift1's); one
        connection is opened at once, so that a gateway not there at the first call fails at
        once (StoreError), not after the retries."""
        def connect():
            import happybase

            return happybase.Connection(self.host, self.port, timeout=self.timeout, autoconnect=False,
                                        transport=self.transport)
        pool = Pool(self.pool_size, self.channel if thrift2 else connect)
        try:
            pool.warm()
        except Exception as e:
            reason = getattr(e, "message", None) or str(e)
            if thrift2:  # the gateway of the data, of whether the tables exist and of creating them
                raise GatewayUnreachable(self.host, self.admin_port, reason,
                                         "'s Thrift2 gateway (the URL's admin_port)") from None
            raise GatewayUnreachable(self.host, self.port, reason) from None
        return pool

    def run1(self, work: Callable):
        """``work(connection)`` on a leased happybase connection to the Thrift1 gateway, retried
        when the connection drops; its result."""
        return self._run(work, thrift2=False)

    def run2(self, work: Callable):
        """``work(channel)`` on a leased ``Channel`` to the Thrift2 gateway, retried when the
        connection drops; its result."""
        return self._run(work, thrift2=True)

    def call(self, method: str, *args):
        """One Thrift2 call by name (``Channel.call``), through ``run2``."""
        return self._run(lambda channel: channel.call(method, *args), thrift2=True)

    def _run(self, work: Callable, thrift2: bool):
        from thriftpy2.thrift import TException
        from thriftpy2.transport import TTransportException

        port = self.admin_port if thrift2 else self.port
        timeouts = 0
        for attempt in range(1, self.retries + 1):
            try:
                with self._pool(thrift2).lease() as conn:
                    return work(conn)
            except TimeoutError:  # the gateway took the call; nothing answered within the timeout
                timeouts += 1
                if timeouts == TIMEOUTS or attempt == self.retries:
                    raise StoreError(no_answer(self.host, port, self.timeout, timeouts)) from None
                logger.debug("HBase call timed out, attempt %d of %d", attempt, self.retries)
            except (OSError, TTransportException) as e:  # OSError: sockets reset, refused, broken
                if attempt == self.retries:
                    raise StoreError(f"HBase at {self.host}:{port} failed {attempt} times: {e}") from None
                self._pool(thrift2).close()  # the other idle ones are as old: the next try on a new one
                logger.debug("HBase call failed (%s), attempt %d of %d", e, attempt, self.retries)
                time.sleep(min(0.2 * 2 ** attempt, 5))
            except TException as e:  # HBase answered with an error (TIOError, TIllegalArgument): no retry
                message = getattr(e, "message", None) or str(e) or type(e).__name__
                raise StoreError(f"HBase at {self.host}:{port} refused the call: {message}") from None

    def parallel(self, fn: Callable, items: list) -> list:
        """``[fn(x) for x in items]``, run on the store's threads when there are several."""
        if len(items) <= 1 or self.pool_size == 1:
            return [fn(x) for x in items]
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.pool_size, thread_name_prefix="hbase")
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        """Stop the threads, close the idle connections. The next unit of work starts afresh."""
        with self._lock:
            executor, self._executor = self._executor, None
            pools, self._pools = list(self._pools.values()), {}
        if executor is not None:
            executor.shutdown()
        for pool in pools:
            pool.close()
