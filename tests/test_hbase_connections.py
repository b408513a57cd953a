"""The HBase store's connection layer (stores/hbase/connections.py) without a server: the pool
hands out at most its size, reuses a connection that worked and drops one whose work raised;
the retry loop retries a dropped connection and gives up with a StoreError naming the gateway;
a Thrift1 gateway not there at the first call fails at once. The same against a real HBase,
with gateways restarted and idle sockets closed by the server: tests/test_hbase.py."""

import socket
import threading

import pytest

from dedup_hbase.errors import StoreError
from dedup_hbase.stores import open_store
from dedup_hbase.stores.hbase.connections import Gateways, Pool


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


def test_a_thrift2_gateway_that_is_not_there_is_retried_then_named(caplog):
    port = unused_port()
    gateways = Gateways("127.0.0.1", unused_port(), port, retries=2, timeout=2000)
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    with pytest.raises(StoreError, match=f"HBase at 127.0.0.1:{port} failed 2 times"):
        gateways.call("get", b"t", None)
    assert [r.message for r in caplog.records if "attempt" in r.message] == [
        caplog.records[0].message]  # one retry logged, then the error
    assert "attempt 1 of 2" in caplog.records[0].message


def test_a_thrift1_gateway_that_is_not_there_at_the_first_call_fails_at_once(caplog):
    port = unused_port()
    store = open_store(f"hbase://127.0.0.1:{port}/?admin_port={unused_port()}&retries=3")
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    for _ in range(2):  # and again at the next call: no pool was kept
        with pytest.raises(StoreError, match=f"cannot reach HBase at 127.0.0.1:{port}"):
            store.exists()
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
