"""Thrift2 calls and an HBase filter serialized by hand, as bytes: no I/O, no thriftpy2.

- ``multi_row_range_filter``: a ``MultiRowRangeFilter`` for ``TScan.filterBytes``, which
  takes any filter as a serialized ``FilterProtos.Filter`` (``ThriftUtilities.scanFromThrift``
  -> ``filterFromThrift`` -> ``ProtobufUtil.toFilter``, which calls the named class's
  ``parseFrom``). Its messages (``hbase-protocol-shaded/src/main/protobuf/client/Filter.proto``)
  are small and encoded here, not through a protobuf dependency::

    message Filter { required string name = 1; optional bytes serialized_filter = 2; }
    message RowRange { optional bytes start_row = 1; optional bool start_row_inclusive = 2;
                       optional bytes stop_row = 3; optional bool stop_row_inclusive = 4; }
    message MultiRowRangeFilter { repeated RowRange row_range_list = 1; }

- ``encode_put_multiple`` and ``encode_get_multiple``: whole ``putMultiple`` and
  ``getMultiple`` call messages in Thrift's strict binary protocol, straight from the
  index's fixed-width row keys, without a Python object per cell (thriftpy2 builds a
  ``TPut`` or ``TGet`` object per cell). ``wire.Channel.call_raw`` sends them.

tests/test_hbase_encoding.py proves the messages equal thriftpy2's serialization of the
shipped IDL byte for byte; HBase itself is the test of the filter.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

MULTI_ROW_RANGE_FILTER = "org.apache.hadoop.hbase.filter.MultiRowRangeFilter"

# -- protobuf ----------------------------------------------------------------------


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf varint."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def multi_row_range_filter(ranges: Sequence[tuple[bytes, bytes | None]]) -> bytes:
    """``FilterProtos.Filter`` bytes of a ``MultiRowRangeFilter`` over ``[start, stop)``
    ranges (stop None: no upper bound), for ``TScan.filterBytes``. HBase sorts and merges
    overlapping ranges itself."""
    body = bytearray()
    for start, stop in ranges:
        if stop is not None and stop <= start:
            raise ValueError(f"empty row range [{start!r}, {stop!r})")
        # start inclusive (field 2 = 1), stop exclusive (field 4 = 0); an empty stop row
        # means "to the end of the table" to HBase
        row_range = _field(1, start) + b"\x10\x01" + _field(3, stop or b"") + b"\x20\x00"
        body += _field(1, row_range)
    return _field(1, MULTI_ROW_RANGE_FILTER.encode()) + _field(2, bytes(body))


# -- Thrift binary protocol ----------------------------------------------------------

_I32 = struct.Struct(">i")
_CALL = 0x80010001  # strict binary protocol, version 1, message type CALL
# Thrift type codes (TType): a field header is type (1 byte) + field id (2); a list header
# is element type (1) + size (4); a struct ends with STOP
T_STOP, T_I32, T_STRING, T_STRUCT, T_LIST = 0, 8, 11, 12, 15
_STOP = bytes([T_STOP])


def _message_begin(name: bytes, seqid: int = 0) -> bytes:
    return struct.pack(">Ii", _CALL, len(name)) + name + _I32.pack(seqid)


def _binary_field(field_id: int, data: bytes) -> bytes:
    return struct.pack(">bhi", T_STRING, field_id, len(data)) + data


def encode_put_multiple(table: bytes, family: bytes, rows: bytes | Sequence[bytes], qualifiers: Sequence[bytes],
                        repeat: int = 1, values: Sequence[bytes] | None = None, durability: int | None = None,
                        width: int | None = None) -> bytes:
    """A whole ``putMultiple(table, tputs)`` call message: one ``TPut`` of one cell per row.

    ``rows`` is either a list of row keys, or ``len(qualifiers) * repeat`` row keys of
    ``width`` bytes concatenated (the index's key table). Row j gets the column
    ``family:qualifiers[j % len(qualifiers)]`` with value ``values[j % len(qualifiers)]``
    (empty when None). ``durability`` is a ``TDurability`` number (1 = SKIP_WAL), None
    for the table's default."""
    n = len(qualifiers) * repeat
    if isinstance(rows, (bytes, bytearray, memoryview)):
        if width is None or len(rows) != n * width:
            raise ValueError(f"{len(rows)} bytes of rows for {n} rows of {width} bytes")
        head = struct.pack(">bhi", T_STRING, 1, width)
        keyed = [head + rows[j * width:(j + 1) * width] for j in range(n)]
    else:
        if len(rows) != n:
            raise ValueError(f"{len(rows)} rows for {n} cells")
        keyed = [struct.pack(">bhi", T_STRING, 1, len(row)) + row for row in rows]
    # TPut: 1:row, 2:list<TColumnValue> of one {1:family, 2:qualifier, 3:value}, 6:durability
    column = struct.pack(">bhbi", T_LIST, 2, T_STRUCT, 1) + _binary_field(1, family) + struct.pack(">bh", T_STRING, 2)
    # the TColumnValue ends, then the TPut's 6:durability (i32) if given, then the TPut ends
    tail = _STOP + (struct.pack(">bhi", T_I32, 6, durability) if durability is not None else b"") + _STOP
    if values is None:
        empty = _binary_field(3, b"") + tail
        cells = [column + _I32.pack(len(q)) + q + empty for q in qualifiers]
    else:
        cells = [column + _I32.pack(len(q)) + q + _binary_field(3, v) + tail for q, v in zip(qualifiers, values)]
    cells *= repeat
    parts = [_message_begin(b"putMultiple"), _binary_field(1, table), struct.pack(">bhbi", T_LIST, 2, T_STRUCT, n)]
    parts.extend(map(bytes.__add__, keyed, cells))
    parts.append(_STOP)  # the arguments struct ends
    return b"".join(parts)


def encode_get_multiple(table: bytes, family: bytes, rows: Sequence[bytes]) -> bytes:
    """A whole ``getMultiple(table, tgets)`` call message: ``TGet{1: row, 2: [TColumn{1:
    family}]}`` per row."""
    column = struct.pack(">bhbi", T_LIST, 2, T_STRUCT, 1) + _binary_field(1, family) + _STOP + _STOP  # TColumn, TGet end
    head = struct.pack(">bh", T_STRING, 1)
    parts = [_message_begin(b"getMultiple"), _binary_field(1, table),
             struct.pack(">bhbi", T_LIST, 2, T_STRUCT, len(rows))]
    parts.extend(head + _I32.pack(len(row)) + row + column for row in rows)
    parts.append(_STOP)
    return b"".join(parts)
