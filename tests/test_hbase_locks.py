"""The lease protocol of stores/hbase/locks.py on an in-memory stand-in for HBase's atomic
single-cell calls and a fake clock (no server, no sleeping): a lease is taken over only once
a waiter has seen it unchanged for a whole lease, a lost reply still counts as taken, a holder
with too little lease left refuses to write, and waiting happens only while holding a sorted
prefix of the keys. The real HBase runs of the same protocol: tests/test_fleet.py."""

import pytest

from dedup_hbase.errors import StoreError
from dedup_hbase.stores.hbase import locks as hbase_locks
from dedup_hbase.stores.hbase.locks import AGREED, STRIPE_TAG, LeaseLocks, stripe


class Clock:
    """time.monotonic/time.time/time.sleep of the module: sleeping advances the clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeHBase:
    """The four calls the locks make, on a dict of cells; ``log`` records them in order.
    ``on_wait(key)`` runs whenever a take is refused (another holder acting meanwhile)."""

    def __init__(self) -> None:
        self.cells: dict[bytes, bytes] = {}
        self.log: list[tuple[str, bytes]] = []
        self.lose_next_reply = False
        self.on_wait = None

    def __call__(self, method, table, row, *args):
        row = row.row if method == "get" else row  # get(table, TGet)
        value = self.cells.get(row)
        self.log.append((method, row))
        if method == "get":
            from dedup_hbase.stores.hbase.wire import idl

            hb2 = idl()
            cvs = [] if value is None else [hb2.TColumnValue(family=b"d", qualifier=b"o", value=value)]
            return hb2.TResult(row=row if cvs else None, columnValues=cvs)
        if method == "checkAndPut":
            _, _, expected, put = args
            if value != expected:
                if self.on_wait:
                    self.on_wait(row)
                return False
            self.cells[row] = put.columnValues[0].value
            if self.lose_next_reply:
                self.lose_next_reply = False
                return False
            return True
        if method == "checkAndMutate":
            _, _, _, expected, mutations = args
            if value != expected:
                return False
            self.cells[row] = mutations.mutations[0].put.columnValues[0].value
            return True
        if method == "checkAndDelete":
            _, _, expected, _ = args
            if value != expected:
                return False
            del self.cells[row]
            return True
        raise AssertionError(method)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(hbase_locks, "time", clock)
    return clock


def held(hbase) -> dict:
    """The cells of locks (the row of the fleet's lock_stripes left out)."""
    return {key: value for key, value in hbase.cells.items() if key != AGREED}


def locks(hbase, lease=10, stripes=0):
    """Locks on the keys themselves (stripes=0), as the protocol's tests name them."""
    return LeaseLocks(hbase, b"t_locks", b"d", lease, stripes=stripes)


def test_a_dead_holders_lease_is_taken_over_after_a_whole_lease_seen_unchanged(clock):
    hbase = FakeHBase()
    hbase.cells[b"k1"] = b"dead:1:x|0|1"  # a holder that never gives it back
    mine = locks(hbase)
    started = clock.now
    with mine.held([b"k1"]) as lease:
        assert clock.now - started >= 10  # waited a whole lease first
        assert hbase.cells[b"k1"].startswith(mine.owner.encode())
        lease.check()  # a fresh lease: writing is safe
    assert mine.counters["taken_over"] == 1 and held(hbase) == {}


def test_a_lease_that_keeps_changing_is_never_taken_over(clock):
    """A live holder that gives back and takes again (a new value each time) is waited for."""
    hbase = FakeHBase()
    hbase.cells[b"k1"] = b"other|0|0"
    turns = iter(range(1, 200))

    def other_holder_acts(row):
        n = next(turns)
        if n == 150:  # gives it back at last
            del hbase.cells[row]
        else:
            hbase.cells[row] = f"other|0|{n}".encode()

    hbase.on_wait = other_holder_acts
    mine = locks(hbase, lease=0.05)
    with mine.held([b"k1"]):
        pass
    assert mine.counters["taken_over"] == 0 and mine.counters["taken"] == 1


def test_a_take_whose_reply_was_lost_counts_as_taken(clock):
    hbase = FakeHBase()
    hbase.lose_next_reply = True
    mine = locks(hbase)
    with mine.held([b"k1"]):
        assert hbase.cells[b"k1"].startswith(mine.owner.encode())
    assert held(hbase) == {} and mine.counters["taken_over"] == 0


def test_a_holder_with_less_than_half_its_lease_left_refuses_to_write(clock):
    hbase = FakeHBase()
    with locks(hbase).held([b"k1"]) as lease:
        clock.sleep(4.9)
        lease.check()
        clock.sleep(0.2)
        with pytest.raises(StoreError, match="too little to write safely; nothing was written"):
            lease.check()


def test_it_waits_only_while_holding_a_sorted_prefix_of_its_keys(clock):
    """k2 held by another: k1 and k3 are tried at once, k3 is given back, then k2 and k3 are
    taken in order, so no two adds can each hold what the other waits for."""
    hbase = FakeHBase()
    hbase.cells[b"k2"] = b"other|0|1"
    released = []

    def other_gives_back(row):
        if len(released) == 0 and row == b"k2":
            released.append(row)
            del hbase.cells[row]

    hbase.on_wait = other_gives_back
    mine = locks(hbase)
    with mine.held([b"k3", b"k2", b"k1", b"k2"]):
        assert sorted(held(hbase)) == [b"k1", b"k2", b"k3"]
    calls = [(m, r) for m, r in hbase.log if m != "get" and r != AGREED]
    first_k3 = calls.index(("checkAndPut", b"k3"))
    assert ("checkAndDelete", b"k3") in calls[first_k3:]  # given back while waiting for k2
    gave_back = calls.index(("checkAndDelete", b"k3"))
    assert calls.index(("checkAndPut", b"k2"), gave_back) < calls.index(("checkAndPut", b"k3"), gave_back)
    assert held(hbase) == {}


def test_prefixes_lock_their_stripes_and_equal_prefixes_one_stripe():
    """An add locks each scan prefix's stripe (the high bits of its Fibonacci hash, scaled):
    the 400 prefixes of 100 random fingerprints (4-split) spread over 63 of 64 stripes and 197
    of 256 (chance expects 63.9 and 202; a hash whose low bits follow the prefix's last byte,
    its flag, gives 4); the same prefix always the same stripe; stripes 0 the prefixes."""
    import random

    from dedup_hbase.index.layout import Scheme

    rnd, scheme = random.Random(3), Scheme(4, 1)
    prefixes = [p for _ in range(100) for p in scheme.prefixes(rnd.getrandbits(64))]
    assert len(set(prefixes)) == 400
    assert len({stripe(p, 64) for p in prefixes}) == 63 and len({stripe(p, 256) for p in prefixes}) == 197
    assert all(0 <= stripe(p, 7) < 7 for p in prefixes)
    keys = locks(FakeHBase(), stripes=64).lock_keys(prefixes + prefixes[:10])
    assert keys == sorted({STRIPE_TAG + stripe(p, 64).to_bytes(2, "big") for p in prefixes}) and len(keys) == 63
    assert all(len(key) == 3 for key in keys)  # never a 5-byte prefix of a lock per prefix
    assert locks(FakeHBase(), stripes=0).lock_keys(prefixes) == sorted(set(prefixes))


def test_servers_must_lock_alike():
    """The first add writes the fleet's stripes; a server of the same stripes adds, one of
    other stripes is refused in one line saying what to give, before it takes any lock."""
    hbase = FakeHBase()
    with locks(hbase, stripes=64).held([b"abcde"]):
        pass
    assert hbase.cells == {AGREED: b"64"}
    with locks(hbase, stripes=64).held([b"abcde"]):
        pass
    before = len(hbase.log)
    with pytest.raises(StoreError, match=r"^lock_stripes=16 is not the fleet's 64 \(row 'stripes' of the locks table "
                                         r"t_locks\): every server adding to one index must lock alike; give the "
                                         r"store URL lock_stripes=64, or delete that row once every server is stopped$"):
        with locks(hbase, stripes=16).held([b"abcde"]):
            pass
    assert [m for m, _ in hbase.log[before:]] == ["checkAndPut", "get"] and hbase.cells == {AGREED: b"64"}
