"""A small client for HBase's Thrift2 gateway, for the data path: one-call multi-range
scans, bulk puts, multi-gets, bulk deletes.

Why Thrift2 and not Thrift1 (happybase): a Thrift1 scan is three round trips (open,
fetch, close) and can only be filtered by a filter *string*, and HBase 2.6's
``ParseFilter`` knows no ``MultiRowRangeFilter`` (it registers 19 filters, none of them
takes row ranges). Thrift2's ``getScannerResults`` opens, reads and closes a scanner in
one call, and its ``TScan.filterBytes`` takes any filter as a serialized
``FilterProtos.Filter`` (``ThriftUtilities.scanFromThrift`` -> ``filterFromThrift`` ->
``ProtobufUtil.toFilter``, which calls the named class's ``parseFrom``). So every
prefix of a query, or of a whole batch of queries, is one ``MultiRowRangeFilter``
scan: one round trip from here, and on the server one region RPC per region the
scan's span crosses, where the filter seeks from range to range.

The protobuf messages (``hbase-protocol-shaded/src/main/protobuf/client/Filter.proto``)
are small and encoded here by hand, not through a protobuf dependency::

    message Filter { required string name = 1; optional bytes serialized_filter = 2; }
    message RowRange { optional bytes start_row = 1; optional bool start_row_inclusive = 2;
                       optional bytes stop_row = 3; optional bool stop_row_inclusive = 4; }
    message MultiRowRangeFilter { repeated RowRange row_range_list = 1; }

Puts are serialized here too (``putMultiple`` in Thrift's binary protocol), straight
from the index's fixed-width row keys, without a Python object per cell: thriftpy2
spends about 5 µs of client CPU per ``TPut``, the hand-made bytes about 0.7 µs, and the
client shares the machine's cores with the gateway and the region server.

Everything here is one call on one connection; nothing retries. The caller (the HBase
store's ``_run``) leases a ``Connection`` from a ``Pool`` and retries the whole unit of
work on a dropped connection; every call here is idempotent (reads, puts of the same
cells, deletes). A scan is fully read inside its call: no server-side scanner outlives it.
"""

from __future__ import annotations

import functools
import queue
import struct
import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources

import numpy as np

from ...index.store import prefix_end

MULTI_ROW_RANGE_FILTER = "org.apache.hadoop.hbase.filter.MultiRowRangeFilter"
ROWS_PER_CALL = 20_000  # rows one getScannerResults returns at most; more: the next call goes on

@functools.cache
def idl():
    """HBase's Thrift2 IDL (shipped as hbase_thrift2.thrift), loaded once per process."""
    import thriftpy2

    path = resources.files("dedup_hbase.stores.hbase").joinpath("hbase_thrift2.thrift")
    with resources.as_file(path) as file:
        return thriftpy2.load(str(file), module_name="hbase_thrift2_thrift")


# -- protobuf, by hand -------------------------------------------------------------


def _varint(n: int) -> bytes:
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
    return _varint(number << 3 | 2) + _varint(len(data)) + data


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


def prefix_range(prefix: bytes, row_bytes: int | None = None) -> tuple[bytes, bytes | None]:
    """The row range ``[start, stop)`` holding every row that starts with ``prefix``.

    With rows of exactly ``row_bytes`` bytes the stop row shares the whole prefix with the
    start row (``prefix + ff.. + 00``); otherwise it is the next prefix (None when the
    prefix is all 0xff bytes or empty: no upper bound)."""
    if row_bytes and len(prefix) < row_bytes:
        return prefix, prefix + b"\xff" * (row_bytes - len(prefix)) + b"\x00"
    if row_bytes:
        return prefix[:row_bytes], prefix[:row_bytes] + b"\x00"
    return prefix, prefix_end(prefix)


def merge_ranges(ranges: Sequence[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
    """Sorted, with overlapping and touching ranges joined (what HBase does with them too)."""
    out: list[list] = []
    for start, stop in sorted(ranges, key=lambda r: r[0]):
        if out and (out[-1][1] is None or start <= out[-1][1]):
            if out[-1][1] is not None and (stop is None or stop > out[-1][1]):
                out[-1][1] = stop
            continue
        out.append([start, stop])
    return [(a, b) for a, b in out]


# -- Thrift binary protocol, by hand (puts) ----------------------------------------

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
    family}]}`` per row (thriftpy2 spends about 5 µs of client CPU per ``TGet`` object)."""
    column = struct.pack(">bhbi", T_LIST, 2, T_STRUCT, 1) + _binary_field(1, family) + _STOP + _STOP  # TColumn, TGet end
    head = struct.pack(">bh", T_STRING, 1)
    parts = [_message_begin(b"getMultiple"), _binary_field(1, table),
             struct.pack(">bhbi", T_LIST, 2, T_STRUCT, len(rows))]
    parts.extend(head + _I32.pack(len(row)) + row + column for row in rows)
    parts.append(_STOP)
    return b"".join(parts)


# -- connections ---------------------------------------------------------------


class Connection:
    """One socket to a Thrift2 gateway (thriftpy2 client). Not thread-safe; lease it
    from a ``Pool``. Opens its socket on the first call."""

    def __init__(self, host: str, port: int, timeout_ms: int = 60000, transport: str = "buffered",
                 protocol: str = "binary") -> None:
        self.host, self.port, self.timeout_ms = host, port, timeout_ms
        self.transport, self.protocol = transport, protocol
        self._client = None

    @property
    def client(self):
        if self._client is None:
            from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
            from thriftpy2.rpc import make_client
            from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

            self._client = make_client(
                idl().THBaseService, self.host, self.port, timeout=self.timeout_ms,
                trans_factory=TFramedTransportFactory() if self.transport == "framed" else TBufferedTransportFactory(),
                proto_factory=TCompactProtocolFactory() if self.protocol == "compact" else TBinaryProtocolFactory())
        return self._client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:
                pass

    # -- reads -------------------------------------------------------------

    def scan_once(self, table: bytes, ranges: Sequence[tuple[bytes, bytes | None]], family: bytes,
                  rows: int) -> list:
        """Up to ``rows`` rows (thriftpy2 ``TResult``, key order) of the union of ``ranges``
        (sorted, disjoint: ``merge_ranges``): one ``getScannerResults`` call, which opens,
        reads and closes its scanner. Several ranges go as a ``MultiRowRangeFilter``; the
        scan's own start and stop rows are the first range's start and the last one's stop."""
        hb2 = idl()
        scan = hb2.TScan(startRow=ranges[0][0], stopRow=ranges[-1][1], columns=[hb2.TColumn(family=family)],
                         caching=min(rows, 10_000), maxVersions=1,
                         filterBytes=multi_row_range_filter(ranges) if len(ranges) > 1 else None)
        return self.client.getScannerResults(table, scan, rows)

    def scan_ranges(self, table: bytes, ranges: Sequence[tuple[bytes, bytes | None]], family: bytes,
                    rows_per_call: int = ROWS_PER_CALL) -> list:
        """Every row of the union of ``ranges`` (sorted, disjoint), in key order: one
        ``scan_once`` per ``rows_per_call`` rows (usually one in all; the bound keeps the
        gateway's memory in check)."""
        out: list = []
        ranges = list(ranges)
        while ranges:
            got = self.scan_once(table, ranges, family, rows_per_call)
            out.extend(got)
            if len(got) < rows_per_call:
                return out
            after = got[-1].row + b"\x00"  # the smallest row key after the last one read
            ranges = [(max(a, after), b) for a, b in ranges if b is None or b > after]
        return out

    def get_rows(self, table: bytes, rows: Sequence[bytes], family: bytes) -> list:
        """``TResult`` of each row, in order (``row`` None where the row is absent): one
        ``getMultiple``, its request serialized here (``encode_get_multiple``)."""
        if not rows:
            return []
        client = self.client
        client._oprot.trans.write(encode_get_multiple(table, family, rows))
        client._oprot.trans.flush()
        return client._recv("getMultiple")

    # -- writes ------------------------------------------------------------

    def put_raw(self, message: bytes) -> None:
        """Send a ``putMultiple`` message made by ``encode_put_multiple`` and read its reply."""
        client = self.client
        client._oprot.trans.write(message)
        client._oprot.trans.flush()
        client._recv("putMultiple")

    def delete_cells(self, table: bytes, cells: Sequence[tuple[bytes, bytes | None]], family: bytes,
                     durability: int | None = None) -> None:
        """Delete ``(row, qualifier)`` cells (every version; qualifier None: the whole row)."""
        if not cells:
            return
        hb2 = idl()
        deletes = [hb2.TDelete(row=row, deleteType=hb2.TDeleteType.DELETE_COLUMNS, durability=durability,
                               columns=None if q is None else [hb2.TColumn(family=family, qualifier=q)])
                   for row, q in cells]
        self.client.deleteMultiple(table, deletes)


class Pool:
    """Up to ``size`` Thrift2 connections, created on demand. ``lease`` hands one out and
    takes it back; a connection whose call raised is closed, not returned (the next lease
    opens a fresh socket)."""

    def __init__(self, size: int, host: str, port: int, timeout_ms: int = 60000, transport: str = "buffered",
                 protocol: str = "binary") -> None:
        self.size = size
        self._args = (host, port, timeout_ms, transport, protocol)
        self._idle: queue.LifoQueue[Connection] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)

    @contextmanager
    def lease(self) -> Iterator[Connection]:
        self._slots.acquire()
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = Connection(*self._args)
            try:
                yield conn
            except BaseException:
                conn.close()
                raise
            self._idle.put(conn)
        finally:
            self._slots.release()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


# -- results -> cells ---------------------------------------------------------------


def split_by_prefix(results: Sequence, prefixes: Sequence[bytes], row_bytes: int | None = None) -> list[list]:
    """For each prefix, the rows of ``results`` (sorted by row) in its ``prefix_range``, in
    order. A row under several prefixes (overlapping or repeated ones) goes to each. (A
    prefix longer than ``row_bytes`` reaches into the qualifiers: the caller filters cells.)"""
    rows = [r.row for r in results]
    out = []
    for prefix in prefixes:
        start, stop = prefix_range(prefix, row_bytes)
        lo = bisect_left(rows, start)
        hi = len(rows) if stop is None else bisect_left(rows, stop, lo)
        out.append(results[lo:hi])
    return out


def cells_of(results: Sequence, prefix_bytes: int, row_bytes: int) -> tuple[np.ndarray, list[bytes]]:
    """The cells of rows of ``row_bytes`` bytes under one ``prefix_bytes``-long prefix, as
    ``ListCells`` wants them: each row's remaining 1 to 8 bytes as a uint64 (one per cell,
    in key order) and the qualifiers. Builds no object per cell beyond its qualifier."""
    padding = bytes(8 - (row_bytes - prefix_bytes))
    rests, quals = bytearray(), []
    for result in results:
        rest = padding + result.row[prefix_bytes:row_bytes]
        for cv in result.columnValues:
            rests += rest
            quals.append(cv.qualifier)
    return np.frombuffer(bytes(rests), dtype=">u8"), quals
