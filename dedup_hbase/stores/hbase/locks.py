"""Leases on scan prefixes in HBase: exact insert-if-new across ``serve`` processes.

Two fingerprints within k bits share the scan prefix of at least one flag (layout.py), so an
``add?if_new=true`` that holds a lock on every 5-byte scan prefix of its documents while it
looks up and writes cannot interleave with another add whose documents could be near-duplicates
of its own: the second one waits, then sees the first one's documents. Within one process
``online.py`` does this with in-memory locks; across processes these locks are rows of the
``locks`` table (schema/tables.json), one row per lock while held, taken on HBase's atomic
single-row operations through the Thrift2 gateway.

A lock stands for a stripe of the prefixes (``lock_stripes`` S of the store URL, 64 by
default): a prefix's stripe is the high bits of its Fibonacci hash, scaled to S (``stripe``),
so two adds that share a prefix share its stripe and stay exclusive, and an add of d documents
takes at most S locks where it took 4d (100 documents: 64 calls to take and 64 to give back
rather than 400 and 400, each a write of HBase's log). The price: two adds of unrelated documents whose stripes
meet wait for each other (an add of 100 documents holds about every stripe). ``lock_stripes=0``
locks each prefix itself. Every server adding to one index must use the same S: the first
add of a server writes it into the locks table (row ``stripes``) if absent, and a server whose
S differs refuses its adds in one line.

The operations:

- take: ``checkAndPut`` without an expected value (put only if the cell is absent) of a value
  unique to this acquisition: ``owner (host:pid:random) | lease expiry (ms since the epoch) | n``;
- take over an expired lease: ``checkAndMutate`` comparing the old value (EQUAL) and putting ours;
- give back: ``checkAndDelete`` comparing our value (a lease someone took over stays theirs).

(``checkAndMutate`` without a value, the IDL's put-if-absent, fails inside HBase 2's Thrift2
gateway: "Internal error processing checkAndMutate"; ``checkAndPut`` without one works.)
All the locks of an add are first tried at once (in parallel, no waiting); if some are held
by others, the ones taken after the first missing key (in sorted order) are given back, and the
rest are taken one by one in sorted key order, waiting where held: an add waits only while it
holds a sorted prefix of its keys, so two adds never wait for each other in a cycle. A call whose reply was lost is retried by the store's one retry loop; an answer of
"not taken" is then checked by reading the cell: our own unique value there means the first
attempt took it.

Why this is exact, and what a crash or a slow holder does:

- A lease is expired when a waiter has seen the same value in the cell for ``lease`` seconds of
  its own monotonic clock: no comparison of two machines' clocks (the expiry written in the
  value is for people reading the table). The holder counts its lease from just before it sent
  the take, so a waiter (who first read the value after it was written) can take over only
  after the holder's own deadline.
- Before it writes, the holder checks that at least half of its lease is left (else the add
  fails with a StoreError, the service answers 503, nothing written, the same request again is
  safe). The write must then end within that half: the default lease (30 s) is thousands of
  times a normal add's write. A holder stalled longer than that between its check and the end
  of its write (a process paused by the OS or a debugger, a write retried for half a lease)
  breaks the guarantee; it then finds at release that its lease was taken, and logs it.
- A holder that waits long for a later lock (a dead server's lease running out) renews the
  leases it holds (compare-and-set to a fresh value) so they do not expire while it waits.
- A server killed with locks held blocks adds under those prefixes for at most ``lease``
  seconds after a waiter first sees them; nothing is written under them in that time, and the
  killed server's own add either wrote (then its documents are found) or did not (then its
  client got no answer and retries).
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ...errors import StoreError
from .wire import idl

QUALIFIER = b"o"
AGREED = b"stripes"  # the row holding the fleet's lock_stripes
STRIPE_TAG = b"S"  # a stripe's key: the tag and the stripe as 2 bytes (3 bytes: never a 5-byte prefix)
_FIBONACCI = 0x9E3779B97F4A7C15
POLL_S = (0.002, 0.02)  # waiting for a lock: first and longest pause between looks

logger = logging.getLogger(__name__)


def stripe(prefix: bytes, stripes: int) -> int:
    """The stripe (0 .. ``stripes`` - 1) of a scan prefix: the high bits of its Fibonacci hash,
    scaled (the low bits of the product would follow the prefix's last byte, its flag alone)."""
    return ((int.from_bytes(prefix, "big") * _FIBONACCI) % 2**64 * stripes) >> 64


class LeaseLocks:
    """Locks on byte keys (scan prefixes) for one process, on a store's ``locks`` table.

    ``call(method, *args)`` runs one Thrift2 call (``checkAndPut``, ``checkAndMutate``,
    ``checkAndDelete``, ``get``) through the store's retry loop and ``parallel(fn, items)``
    maps over items on the store's threads (``Gateways.call`` and ``Gateways.parallel``,
    connections.py): the store passes them in, so this module knows no connection. No I/O
    until ``held`` is used."""

    def __init__(self, call: Callable, table: bytes, family: bytes, lease_s: float,
                 parallel: Callable = lambda fn, items: [fn(x) for x in items], stripes: int = 64) -> None:
        self.call, self.table, self.family, self.lease_s = call, table, family, lease_s
        self.parallel, self.stripes = parallel, stripes
        self._agreed = False
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._numbers = itertools.count(1)
        self._random = random.Random()
        self.counters = {"taken": 0, "waited": 0, "taken_over": 0, "lost": 0}

    def _value(self) -> bytes:
        expiry_ms = int((time.time() + self.lease_s) * 1000)
        return f"{self.owner}|{expiry_ms}|{next(self._numbers)}".encode()

    def lock_keys(self, prefixes: Sequence[bytes]) -> list[bytes]:
        """The locks' keys of scan ``prefixes``, sorted, each once: their stripes' (or, with
        ``stripes`` 0, the prefixes themselves)."""
        if not self.stripes:
            return sorted(set(prefixes))
        return sorted({STRIPE_TAG + stripe(p, self.stripes).to_bytes(2, "big") for p in prefixes})

    @contextmanager
    def held(self, prefixes: Sequence[bytes]) -> Iterator["Lease"]:
        """Hold the lock of every scan prefix (``lock_keys``) for the body; yields the
        ``Lease``, whose ``check()`` the body calls before it writes. Gives them back after."""
        lease, keys = Lease(self), self.lock_keys(prefixes)
        try:
            try:
                theirs = self._agree()
                tried = [] if theirs else self.parallel(self._try, keys)
            except StoreError as e:
                if self.table.decode() in str(e):  # HBase names a missing table and nothing else
                    raise StoreError(f"{e} (no locks table: create it with the `dedup-hbase schema` line for it "
                                     "in the HBase shell, or use fleet_locks=false)") from None
                raise
            if theirs:
                raise self._refuse(theirs)
            refused = {}
            for key, (mine, sent, taken) in zip(keys, tried):
                if taken:
                    self.counters["taken"] += 1
                    lease.held[key] = (mine, sent)
                else:  # the value tried: if its reply was lost, the cell holds it
                    refused[key] = (mine, sent)
            missing = next((i for i, key in enumerate(keys) if key not in lease.held), len(keys))
            self._give_back(lease, keys[missing:])  # wait only while holding a sorted prefix
            for key in keys[missing:]:
                self._take(key, lease, refused.get(key))  # given back: a fresh value
            yield lease
        finally:
            self._give_back(lease)

    def _agree(self) -> bytes | None:
        """Once: write this process's ``stripes`` into the locks table if no server did, else
        read the one there; returns the fleet's when it differs (the adds would not exclude
        each other's), else None."""
        if self._agreed:
            return None
        mine = str(self.stripes).encode()
        if not self.call("checkAndPut", self.table, AGREED, self.family, QUALIFIER, None, self._put(AGREED, mine)):
            theirs = self._read(AGREED)
            if theirs not in (None, mine):
                return theirs
        self._agreed = True
        return None

    def _refuse(self, theirs: bytes) -> StoreError:
        fleet = theirs.decode(errors="replace")
        return StoreError(f"lock_stripes={self.stripes} is not the fleet's {fleet} (row 'stripes' of the locks table "
                          f"{self.table.decode()}): every server adding to one index must lock alike; give the store "
                          f"URL lock_stripes={fleet}, or delete that row once every server is stopped")

    def _try(self, key: bytes) -> tuple[bytes, float, bool]:
        """One attempt at ``key``, without waiting: (our value, when sent, taken)."""
        mine, sent = self._value(), time.monotonic()
        taken = self.call("checkAndPut", self.table, key, self.family, QUALIFIER, None, self._put(key, mine))
        return mine, sent, taken

    def _take(self, key: bytes, lease: Lease, tried: tuple[bytes, float] | None = None) -> None:
        """Take ``key``, waiting while another holds it. ``tried``: the value of a refused
        attempt, which is ours if that attempt's reply was lost (a value is never reused)."""
        mine, sent = tried or (self._value(), time.monotonic())
        seen, since, pause = None, 0.0, POLL_S[0]
        while True:
            if self.call("checkAndPut", self.table, key, self.family, QUALIFIER, None, self._put(key, mine)):
                break
            current = self._read(key)
            if current == mine:  # the take went through but its reply was lost
                break
            now = time.monotonic()
            if current is None:  # given back meanwhile: try again at once
                continue
            if current != seen:
                seen, since = current, now
                self.counters["waited"] += 1
            elif now - since >= self.lease_s:  # unchanged for a whole lease: its holder is gone
                mine, sent = self._value(), time.monotonic()
                if self._swap(key, current, mine):
                    self.counters["taken_over"] += 1
                    logger.warning("took over the expired lease %r on lock %s", current.decode(errors="replace"),
                                   key.hex())
                    break
                continue
            self._renew_if_due(lease)
            time.sleep(pause * (0.5 + self._random.random()))
            pause = min(pause * 2, POLL_S[1])
        self.counters["taken"] += 1
        lease.held[key] = (mine, sent)

    def _renew_if_due(self, lease: Lease) -> None:
        """While waiting for a later lock: give the held ones fresh values (and a fresh lease)
        once half their lease is gone."""
        if lease.remaining() >= self.lease_s / 2:
            return
        for key, (old, _) in list(lease.held.items()):
            new, sent = self._value(), time.monotonic()
            if not self._swap(key, old, new):
                raise StoreError(f"lost lock {key.hex()} while waiting for another; nothing was written")
            lease.held[key] = (new, sent)

    def _give_back(self, lease: Lease, keys: Sequence[bytes] | None = None) -> None:
        """Give back the held ``keys`` (default: all held), in parallel."""
        chosen = [(key, lease.held.pop(key)[0]) for key in (list(lease.held) if keys is None else keys)
                  if key in lease.held]
        self.parallel(self._give_back_one, chosen)

    def _give_back_one(self, item: tuple[bytes, bytes]) -> None:
        key, mine = item
        try:
            given = self.call("checkAndDelete", self.table, key, self.family, QUALIFIER, mine, self._delete(key))
        except StoreError as e:  # the lease then runs out by itself
            logger.warning("could not give back lock %s (%s); it expires after %s s", key.hex(), e, self.lease_s)
            return
        if not given and self._read(key) not in (None, mine):
            self.counters["lost"] += 1
            logger.error("lock %s was taken over while held: this add may have doubled a near-duplicate "
                         "(a stall longer than half the lease of %s s)", key.hex(), self.lease_s)

    def _swap(self, key: bytes, old: bytes, new: bytes) -> bool:
        hb2 = idl()
        mutations = hb2.TRowMutations(row=key, mutations=[hb2.TMutation(put=self._put(key, new))])
        return self.call("checkAndMutate", self.table, key, self.family, QUALIFIER, hb2.TCompareOp.EQUAL, old,
                         mutations)

    def _read(self, key: bytes) -> bytes | None:
        hb2 = idl()
        result = self.call("get", self.table, hb2.TGet(row=key, columns=[hb2.TColumn(family=self.family)]))
        return next((cv.value for cv in result.columnValues if cv.qualifier == QUALIFIER), None)

    def _put(self, key: bytes, value: bytes):
        hb2 = idl()
        return hb2.TPut(row=key, columnValues=[hb2.TColumnValue(family=self.family, qualifier=QUALIFIER, value=value)])

    def _delete(self, key: bytes):
        hb2 = idl()
        return hb2.TDelete(row=key, columns=[hb2.TColumn(family=self.family, qualifier=QUALIFIER)],
                           deleteType=hb2.TDeleteType.DELETE_COLUMNS)


class Lease:
    """The locks one add holds: key -> (value, monotonic time its take was sent)."""

    def __init__(self, locks: LeaseLocks) -> None:
        self.locks = locks
        self.held: dict[bytes, tuple[bytes, float]] = {}

    def remaining(self) -> float:
        """Seconds until the first of the held leases could be taken over (inf: none held)."""
        if not self.held:
            return float("inf")
        return min(sent for _, sent in self.held.values()) + self.locks.lease_s - time.monotonic()

    def check(self) -> None:
        """Refuse to go on (StoreError) unless at least half the lease is left: the write that
        follows must end before a waiter may take a lock over."""
        left = self.remaining()
        if left < self.locks.lease_s / 2:
            raise StoreError(f"the locks of this add have {max(left, 0):.1f} s of their {self.locks.lease_s} s "
                             "lease left, too little to write safely; nothing was written")

