"""The compiled core's reading of Thrift2 replies (native/src/thrift.rs) against the reference,
thriftpy2's decoding of the shipped IDL (stores/hbase/results.py, wire.reference_results):

* on replies of every shape the IDL allows, serialized by thriftpy2 (rows absent, cells with and
  without their optional fields, empty values, stale and partial flags, fields this IDL does
  not know), the same ``Results``; the reply's length exact, and every shorter prefix of it
  incomplete;
* on hostile bytes (seeded mutations of those replies, random bytes behind a valid header): no
  crash, and whatever the core decodes equals the reference's decoding of the same bytes (it
  answers None, for the reference to decode, on anything but HBase's canonical form);
* on the bytes a real HBase's Thrift2 gateway sends (a multi-range scan, a getMultiple with
  absent rows): the same ``Results``, and the store's answers the same with the core and
  without it.
"""

from __future__ import annotations

import random

import pytest

from dedup_hbase.stores.hbase import wire
from dedup_hbase.stores.hbase.results import Results
from dedup_hbase.text.native import usable_core

core = usable_core()
pytestmark = pytest.mark.skipif(not hasattr(core, "thrift_results"), reason="the compiled core is not built")


def serialized(method: str, results, seq: int = 1) -> bytes:
    """A whole reply of ``method`` answering ``results`` (thriftpy2 ``TResult``), as HBase's
    gateway would send it in the strict binary protocol."""
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport import TMemoryBuffer

    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin(method, TMessageType.REPLY, seq)
    getattr(wire.idl().THBaseService, method + "_result")(success=results).write(protocol)
    protocol.write_message_end()
    return buffer.getvalue()


def random_results(rnd: random.Random, n: int) -> list:
    hb2 = wire.idl()
    blob = lambda most: bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, most)))
    out = []
    for _ in range(n):
        if rnd.random() < 0.1:  # a row getMultiple did not find
            out.append(hb2.TResult(columnValues=[]))
            continue
        cells = [hb2.TColumnValue(family=b"d", qualifier=blob(20), value=blob(12),
                                  timestamp=rnd.getrandbits(40) if rnd.random() < 0.8 else None,
                                  tags=blob(4) if rnd.random() < 0.1 else None,
                                  type=rnd.randint(0, 5) if rnd.random() < 0.2 else None)
                 for _ in range(rnd.choice([0, 1, 1, 1, 2, 5]))]
        out.append(hb2.TResult(row=blob(16), columnValues=cells,
                               stale=rnd.random() < 0.1 if rnd.random() < 0.5 else None,
                               partial=rnd.random() < 0.1 if rnd.random() < 0.5 else None))
    return out


def decoded(reply: bytes) -> Results | None:
    found = core.thrift_results(reply)
    return None if found is None else Results.decoded(*found)


@pytest.mark.parametrize("method", ["getScannerResults", "getMultiple"])
def test_every_shape_of_reply_decodes_as_the_reference(method):
    rnd = random.Random(3)
    for n in (0, 1, 2, 7, 60, 500):
        reply = serialized(method, random_results(rnd, n), seq=n)
        want = wire.reference_results(method, reply)
        assert decoded(reply) == want
        assert len(want) == n
        assert core.thrift_reply_length(reply) == len(reply)
        assert core.thrift_reply_length(reply + b"\x00") == len(reply)  # what follows is not read
        assert [core.thrift_reply_length(reply[:cut]) for cut in range(len(reply))] == [None] * len(reply)


def test_fields_this_idl_does_not_know_are_skipped_as_the_reference_skips_them():
    """A field id of a newer HBase's IDL in a cell and in a result (a struct, a list, a map, an
    i32): skipped by both."""
    rnd = random.Random(4)
    reply = serialized("getScannerResults", random_results(rnd, 3))
    # after the first cell's family field (type 11, id 1, length 1, b"d"): unknown fields 9-12
    unknown = (bytes([12, 0, 9]) + bytes([8, 0, 1]) + (5).to_bytes(4, "big") + b"\x00"
               + bytes([15, 0, 10, 11]) + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + b"a" + (0).to_bytes(4, "big")
               + bytes([13, 0, 11, 8, 8]) + (1).to_bytes(4, "big") + bytes(8)
               + bytes([8, 0, 12]) + (7).to_bytes(4, "big"))
    at = reply.index(bytes([11, 0, 1, 0, 0, 0, 1]) + b"d") + 8
    changed = reply[:at] + unknown + reply[at:]
    want = wire.reference_results("getScannerResults", changed)
    assert want == wire.reference_results("getScannerResults", reply)
    assert decoded(changed) == want
    assert core.thrift_reply_length(changed) == len(changed)


def test_hostile_bytes_never_crash_and_what_is_decoded_is_the_references():
    rnd = random.Random(5)
    valid = [serialized("getScannerResults", random_results(rnd, n)) for n in (1, 3, 20)]
    taken = 0
    for trial in range(3000):
        reply = bytearray(rnd.choice(valid))
        kind = trial % 4
        if kind == 0:  # bytes flipped
            for _ in range(rnd.randint(1, 4)):
                reply[rnd.randrange(len(reply))] = rnd.getrandbits(8)
        elif kind == 1:  # cut short, or longer
            reply = reply[:rnd.randrange(len(reply))] if rnd.random() < 0.5 else reply + bytes([rnd.getrandbits(8)])
        elif kind == 2:  # bytes inserted
            at = rnd.randrange(len(reply))
            reply[at:at] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 6)))
        else:  # random bytes behind a valid header
            header = len(b"\x80\x01\x00\x02") + 4 + len(b"getScannerResults") + 4
            reply = reply[:header] + bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 200)))
        reply = bytes(reply)
        try:
            length = core.thrift_reply_length(reply)
        except ValueError:
            length = "malformed"
        assert length is None or length == "malformed" or 0 < length <= len(reply)
        found = decoded(reply)
        if found is not None:
            taken += 1
            assert found == wire.reference_results("getScannerResults", reply), trial
            assert length == len(reply)
    assert taken > 100  # mutations that left a canonical reply (a value's byte changed) were decoded


def test_an_exception_reply_is_the_references_to_raise():
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport import TMemoryBuffer

    hb2 = wire.idl()
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin("getMultiple", TMessageType.REPLY, 1)
    hb2.THBaseService.getMultiple_result(io=hb2.TIOError(message="region moved")).write(protocol)
    protocol.write_message_end()
    reply = buffer.getvalue()
    assert core.thrift_reply_length(reply) == len(reply)
    assert core.thrift_results(reply) is None
    with pytest.raises(hb2.TIOError, match="region moved"):
        wire.reference_results("getMultiple", reply)


@pytest.mark.hbase
def test_a_real_gateways_replies_decode_as_the_reference_and_the_store_answers_the_same(hbase_url, monkeypatch):
    from dedup_hbase import open_store
    from dedup_hbase.stores.hbase import thrift2
    from dedup_hbase.stores.hbase.encoding import encode_get_multiple
    from dedup_hbase.stores.hbase.tables import merge_ranges, prefix_range

    from conftest import hbase_store_url

    rnd = random.Random(6)
    store = open_store(hbase_store_url(hbase_url))
    try:
        from dedup_hbase.index.index import Index

        Index.create(store, 4, 3)
        keys = sorted({bytes([0, 0, 0, rnd.randrange(4), rnd.randrange(1, 5)]) + rnd.getrandbits(64).to_bytes(8, "big")
                       + rnd.getrandbits(48).to_bytes(6, "big") for _ in range(3000)})
        store.put("index", ((k, b"") for k in keys))
        store.put("docs", ((k[5:13], k[13:] * 3) for k in keys[:50]))
        table = store.tables.name("index")
        ranges = merge_ranges([prefix_range(k[:7], 13) for k in keys[::5]])
        scan = thrift2._message("getScannerResults", table, wire.idl().TScan(
            startRow=ranges[0][0], stopRow=ranges[-1][1], columns=[wire.idl().TColumn(family=b"d")], caching=10_000,
            maxVersions=1, filterBytes=thrift2.multi_row_range_filter(ranges)), 100_000)
        rows = sorted({k[5:13] for k in keys[:50]}) + [b"absent-%d" % i for i in range(5)]
        get = encode_get_multiple(store.tables.name("docs"), b"d", rows)
        for method, message in (("getScannerResults", scan), ("getMultiple", get)):
            def raw(channel, message=message):
                channel.open()
                channel._transport.write(message)
                channel._transport.flush()
                return channel._reply_bytes(core)
            reply = store.gateways.run2(raw)
            want = wire.reference_results(method, reply)
            assert decoded(reply) == want and len(want) > 40
            assert None in want.rows if method == "getMultiple" else len(want.qualifiers) > 500
        prefixes = [k[:7] for k in keys[::5]] + [k[:12] for k in keys[::7]]
        with_core = store.scan_cells("index", prefixes), store.scan("index", prefixes), store.get("docs", [k[5:13] for k in keys[:60]])
        monkeypatch.setattr(wire, "usable_core", lambda: None)  # the reference path: thriftpy2's objects
        without = store.scan_cells("index", prefixes), store.scan("index", prefixes), store.get("docs", [k[5:13] for k in keys[:60]])
        cells = lambda found: [(c.rests.tolist(), [c.qualifier(i) for i in range(len(c.rests))]) for c in found]
        assert with_core[1:] == without[1:]
        assert cells(with_core[0]) == cells(without[0])
        assert sum(len(c.rests) for c in with_core[0]) >= 600
    finally:
        store.drop()
        store.close()
