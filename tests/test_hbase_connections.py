"""The HBase store's connection layer (stores/hbase/connections.py) without a server: the pool
hands out at most its size, reuses a connection that worked and drops one whose work raised;
the retry loop retries a dropped connection and gives up with a StoreError naming the gateway,
and a call that times out once more only; a gateway not there at the first call fails at once. The same against a real HBase,
with gateways restarted and idle sockets closed by the server: tests/test_hbase.py."""

import socket
import threading

import pytest

from dedup_hbase.errors import StoreError
from dedup_hbase.stores import open_store
from dedup_hbase.stores.hbase.connections import Gateways, Pool
from dedup_hbase.stores.hbase.wire import idl


class Conn:
    made = 0

    def __init__(self) -> None:
        Conn.made += 1
        self.number, self.opened, self.closed = Conn.made, 0, False

    def open(self) -> None:
        self.opened += 1

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fresh_numbers():
    Conn.made = 0


def test_the_pool_reuses_a_connection_that_worked_and_drops_one_that_raised():
    pool = Pool(2, Conn)
    with pool.lease() as a:
        with pool.lease() as b:
            assert (a.number, b.number) == (1, 2)
    with pool.lease() as again:
        assert again is a and again.opened == 2  # the last one given back; opened again (a no-op if open)
    with pytest.raises(ValueError):
        with pool.lease() as failing:
            raise ValueError("the work failed")
    assert failing is a and failing.closed
    with pool.lease() as c, pool.lease() as d:
        assert (c.number, d.number) == (2, 3)  # the dropped one replaced by a new one
    pool.close()
    assert c.closed and d.closed


def test_the_pool_leases_at_most_its_size():
    pool = Pool(1, Conn)
    order = []
    with pool.lease():
        waiter = threading.Thread(target=lambda: pool.lease().__enter__() and order.append("second"))
        waiter.start()
        waiter.join(0.2)
        order.append("first given back")
    waiter.join()
    assert order == ["first given back", "second"]


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_gateway_that_went_away_is_retried_then_named(caplog):
    """The pool made while the gateway was there (one connection opened); then it is gone: its
    socket reset, every new connection refused: retried, then a StoreError naming the gateway."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    gateways = Gateways("127.0.0.1", unused_port(), port, retries=2, timeout=2000)
    gateways.run2(lambda channel: None)  # the pool made, one connection open (in the listen backlog)
    server.close()  # the backlog's connection reset, the port closed
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    with pytest.raises(StoreError, match=f"HBase at 127.0.0.1:{port} failed 2 times"):
        gateways.call("get", b"t", idl().TGet(row=b"r"))
    assert [r.message for r in caplog.records if "attempt" in r.message] == [
        caplog.records[0].message]  # one retry logged, then the error
    assert "attempt 1 of 2" in caplog.records[0].message
    gateways.close()


@pytest.mark.parametrize("thrift2", [False, True])
def test_a_gateway_that_is_not_there_at_the_first_call_fails_at_once(caplog, thrift2):
    ports = unused_port(), unused_port()
    store = open_store(f"hbase://127.0.0.1:{ports[0]}/?admin_port={ports[1]}&retries=3")
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    first_call = store.exists if thrift2 else store.drop  # tableExists on Thrift2; drop lists the tables on Thrift1
    for _ in range(2):  # and again at the next call: no pool was kept
        gateway = "HBase's Thrift2 gateway \\(the URL's admin_port\\)" if thrift2 else "HBase"
        with pytest.raises(StoreError, match=f"^cannot reach {gateway} at 127.0.0.1:{ports[thrift2]}: Could not connect"):
            first_call()
    assert [r for r in caplog.records if "attempt" in r.message] == []
    store.close()


@pytest.fixture
def listening_port():
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


def test_a_dropped_connection_is_retried_on_a_fresh_one_and_a_bug_is_not(listening_port):
    gateways = Gateways("127.0.0.1", unused_port(), listening_port, retries=3)
    seen = []

    def drops_once(channel):
        seen.append(channel)
        if len(seen) == 1:
            raise ConnectionResetError("the gateway went away")
        return "answer"

    assert gateways.run2(drops_once) == "answer"
    assert len(seen) == 2 and seen[0] is not seen[1]  # the dropped one was not leased again

    def bug(channel):
        seen.append(channel)
        raise KeyError("a bug, not a dropped connection")

    with pytest.raises(KeyError):
        gateways.run2(bug)
    assert len(seen) == 3
    gateways.close()


def test_after_a_dropped_connection_the_idle_ones_are_not_tried_one_by_one(listening_port):
    """A gateway closes sockets idle longer than its read timeout (HBase's Thrift: 60 s), so after
    a long step every idle connection of a pool is dead: the first that turns out dropped closes
    the others, and the work runs again on a new connection, not once per dead one with a longer
    pause each time (seen at 10^6 documents on the cluster: three failed attempts, 2.8 s)."""
    gateways = Gateways("127.0.0.1", unused_port(), listening_port, pool_size=4, retries=8)
    pool = gateways._pool(True)
    with pool.lease() as a, pool.lease() as b, pool.lease() as c:
        dead = {id(a), id(b), id(c)}
    seen = []

    def work(channel):
        seen.append(id(channel))
        if id(channel) in dead:
            raise ConnectionResetError("closed by the gateway while idle")
        return "answer"

    assert gateways.run2(work) == "answer"
    assert len(seen) == 2 and seen[0] in dead and seen[1] not in dead
    gateways.close()


def test_a_call_taken_and_never_answered_is_tried_twice_then_named(listening_port, caplog):
    """A gateway that takes the call and never answers (frozen, or HBase behind it down): the
    unit of work times out twice, not ``retries`` times, and the line says what may be down."""
    gateways = Gateways("127.0.0.1", unused_port(), listening_port, retries=8, timeout=300)
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    with pytest.raises(StoreError) as raised:
        gateways.call("get", b"t", idl().TGet(row=b"r"))
    assert str(raised.value) == (
        f"no answer from HBase at 127.0.0.1:{listening_port} within 0.3 s (twice): the Thrift gateway there took "
        "the call, so it or HBase behind it is not answering (a frozen gateway; HBase's master, which table admin "
        "needs; or the region servers holding the tables or hbase:meta)")
    assert [r.message for r in caplog.records if "attempt" in r.message] == ["HBase call timed out, attempt 1 of 8"]
    gateways.close()
