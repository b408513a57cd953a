"""The hand-serialized Thrift2 calls (stores/hbase/encoding.py) against thriftpy2's serialization of
the shipped IDL (hbase_thrift2.thrift): byte for byte, with no server. HBase decodes what
thriftpy2 encodes, so equal bytes are a call HBase understands."""

import random

import pytest
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from dedup_hbase.stores.hbase.encoding import encode_get_multiple, encode_put_multiple
from dedup_hbase.stores.hbase.wire import idl

hb2 = idl()


def reference(method: str, **args) -> bytes:
    """The whole call message ``method(**args)`` as thriftpy2 writes it (strict binary protocol)."""
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin(method, TMessageType.CALL, 0)
    protocol.write_struct(getattr(hb2.THBaseService, f"{method}_args")(**args))
    protocol.write_message_end()
    return buffer.getvalue()


def tputs(rows, qualifiers, values=None, durability=None):
    return [hb2.TPut(row=row, durability=durability,
                     columnValues=[hb2.TColumnValue(family=b"d", qualifier=q, value=b"" if values is None else v)])
            for row, q, v in zip(rows, qualifiers, values or [None] * len(rows))]


def random_bytes(rnd: random.Random, low: int, high: int) -> bytes:
    return rnd.randbytes(rnd.randint(low, high))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("durability", [None, 1, 3])
def test_put_multiple_bytes_equal_thriftpy2(seed, durability):
    rnd = random.Random(seed)
    n = rnd.randint(1, 40)
    rows = [random_bytes(rnd, 0, 30) for _ in range(n)]
    quals = [random_bytes(rnd, 0, 20) for _ in range(n)]
    values = [random_bytes(rnd, 0, 50) for _ in range(n)]
    assert encode_put_multiple(b"p_docs", b"d", rows, quals, 1, values, durability) == reference(
        "putMultiple", table=b"p_docs", tputs=tputs(rows, quals, values, durability))
    assert encode_put_multiple(b"p_docs", b"d", rows, quals, 1, None, durability) == reference(
        "putMultiple", table=b"p_docs", tputs=tputs(rows, quals, None, durability))


@pytest.mark.parametrize("repeat", [1, 4])
def test_put_multiple_of_fixed_width_rows_equals_thriftpy2(repeat):
    """The index's form: ``len(qualifiers) * repeat`` 13-byte rows concatenated, row j's
    qualifier ``qualifiers[j % len(qualifiers)]``."""
    rnd = random.Random(repeat)
    quals = [random_bytes(rnd, 1, 16) for _ in range(7)]
    rows = [rnd.randbytes(13) for _ in range(len(quals) * repeat)]
    expected = reference("putMultiple", table=b"p_index",
                         tputs=tputs(rows, [quals[j % len(quals)] for j in range(len(rows))]))
    assert encode_put_multiple(b"p_index", b"d", b"".join(rows), quals, repeat, width=13) == expected


@pytest.mark.parametrize("seed", range(3))
def test_get_multiple_bytes_equal_thriftpy2(seed):
    rnd = random.Random(seed)
    rows = [random_bytes(rnd, 0, 30) for _ in range(rnd.randint(1, 50))]
    tgets = [hb2.TGet(row=row, columns=[hb2.TColumn(family=b"d")]) for row in rows]
    assert encode_get_multiple(b"p_docs", b"d", rows) == reference("getMultiple", table=b"p_docs", tgets=tgets)
