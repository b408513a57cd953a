"""The HBase store's data path, through the Thrift2 gateway at
``admin_port``.

Why Thrift2 and not Thrift1 (happybase): a Thrift1 scan is three round trips (open, fetch,
close) and can only be filtered by a filter *string*, and HBase 2.6's ``ParseFilter`` knows no
``MultiRowRangeFilter``. Thrift2's ``getScannerResults`` opens, reads and closes a scanner in
one call, and its ``TScan.filterBytes`` takes any filter serialized (encoding.py). So all the
prefixes of a lookup, or of a whole batch of lookups, are read with one call per region they
fall in (a ``MultiRowRangeFilter`` when a call carries several ranges): one round trip from
here, and on the server one region RPC, where the filter seeks from range to range. The calls
run in parallel over the pool. Puts and gets are hand-serialized ``putMultiple`` and
``getMultiple`` calls of ``batch_size`` cells (encoding.py), also in parallel.

The module's functions are one unit of work on one leased ``Channel`` each (a scan is read to
its end inside it); ``Thrift2Path`` runs them through the ``Gateways`` retry loop. Scans and
gets answer with ``Results`` (results.py: the rows and cells as flat lists, decoded by the
compiled core).
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ...errors import StoreError
from ...index.store import Cells, Item, ListCells, row_width
from .datapath import DataPath
from .encoding import encode_get_multiple, encode_put_multiple, multi_row_range_filter
from .kept import KeptRows
from .results import Results
from .tables import merge_ranges, prefix_range
from .wire import Channel, idl

SKIP_WAL = 1  # Thrift2's TDurability.SKIP_WAL
ROWS_PER_CALL = 20_000  # rows one getScannerResults returns at most; more: the next call goes on

logger = logging.getLogger(__name__)

Ranges = Sequence[tuple[bytes, bytes | None]]


# -- one unit of work on one channel ---------------------------------------------------


def scan_once(channel: Channel, table: bytes, ranges: Ranges, family: bytes, rows: int) -> Results:
    """Up to ``rows`` rows (key order) of the union of ``ranges``
    (sorted, disjoint: ``merge_ranges``): one ``getScannerResults`` call, which opens, reads
    and closes its scanner. Several ranges go as a ``MultiRowRangeFilter``; the scan's own
    start and stop rows are the first range's start and the last one's stop."""
    hb2 = idl()
    scan = hb2.TScan(startRow=ranges[0][0], stopRow=ranges[-1][1], columns=[hb2.TColumn(family=family)],
                     caching=min(rows, 10_000), maxVersions=1,
                     filterBytes=multi_row_range_filter(ranges) if len(ranges) > 1 else None)
    return channel.call_results("getScannerResults", _message("getScannerResults", table, scan, rows))


def _message(method: str, *args) -> bytes:
    """A whole call of ``method(*args)`` in the strict binary protocol, as thriftpy2's client
    sends it (sequence id 0)."""
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport import TMemoryBuffer

    service = idl().THBaseService
    call = getattr(service, method + "_args")(*args)
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    protocol.write_message_begin(method, TMessageType.CALL, 0)
    call.write(protocol)
    protocol.write_message_end()
    return buffer.getvalue()


def scan_ranges(channel: Channel, table: bytes, ranges: Ranges, family: bytes,
                rows_per_call: int = ROWS_PER_CALL) -> Results:
    """Every row of the union of ``ranges`` (sorted, disjoint), in key order: one ``scan_once``
    per ``rows_per_call`` rows (usually one in all; the bound keeps the gateway's memory in
    check)."""
    out: list[Results] = []
    ranges = list(ranges)
    while ranges:
        got = scan_once(channel, table, ranges, family, rows_per_call)
        out.append(got)
        if len(got) < rows_per_call:
            break
        after = got.rows[-1] + b"\x00"  # the smallest row key after the last one read
        ranges = [(max(a, after), b) for a, b in ranges if b is None or b > after]
    return Results.concat(out) if out else Results.of([])


def get_rows(channel: Channel, table: bytes, rows: Sequence[bytes], family: bytes) -> Results:
    """Each row, in order (None where the row is absent): one ``getMultiple``, serialized by hand."""
    return channel.call_results("getMultiple", encode_get_multiple(table, family, rows)) if rows else Results.of([])


def delete_cells(channel: Channel, table: bytes, cells: Sequence[tuple[bytes, bytes | None]], family: bytes,
                 durability: int | None = None) -> None:
    """Delete ``(row, qualifier)`` cells (every version; qualifier None: the whole row)."""
    if not cells:
        return
    hb2 = idl()
    deletes = [hb2.TDelete(row=row, deleteType=hb2.TDeleteType.DELETE_COLUMNS, durability=durability,
                           columns=None if q is None else [hb2.TColumn(family=family, qualifier=q)])
               for row, q in cells]
    channel.call("deleteMultiple", table, deletes)


# -- rows -> what the store returns ---------------------------------------------------------


def prefix_spans(rows: Sequence[bytes], prefixes: Sequence[bytes], row_bytes: int | None = None) -> list[tuple[int, int]]:
    """For each prefix, the rows ``[lo, hi)`` of ``rows`` (sorted) in its ``prefix_range``. A
    row under several prefixes (overlapping or repeated ones) is in each span. (A prefix longer
    than ``row_bytes`` reaches into the qualifiers: the caller filters cells.)"""
    out = []
    for prefix in prefixes:
        start, stop = prefix_range(prefix, row_bytes)
        lo = bisect_left(rows, start)
        out.append((lo, len(rows) if stop is None else bisect_left(rows, stop, lo)))
    return out


def prefix_cells(results: Results, spans: Sequence[tuple[int, int]], prefixes: Sequence[bytes],
                 row_bytes: int) -> list[ListCells]:
    """Each prefix's cells (rows of ``row_bytes`` bytes, its ``span`` of ``results``) as
    ``ListCells``: each row's remaining 1 to 8 bytes after the prefix as a uint64, one per cell
    in key order, and the qualifiers. The rows' last 8 bytes are read into one array once, and a
    prefix's remainders are a slice of them masked to its width: no work per cell in Python."""
    widths = {row_bytes - len(p) for p in prefixes}
    if not widths <= set(range(1, 9)):
        raise ValueError(f"a row-key remainder is 1 to 8 bytes, not {sorted(widths - set(range(1, 9)))}")
    padding, first = bytes(max(0, 8 - row_bytes)), max(0, row_bytes - 8)
    tails = np.frombuffer(b"".join([padding + row[first:row_bytes] for row in results.rows]), dtype=">u8")
    tails = tails[results.cell_rows].astype(np.uint64)
    masked = {w: tails & np.uint64((1 << 8 * w) - 1) for w in widths}
    bounds = np.searchsorted(results.cell_rows, np.array(spans, dtype=np.int64).reshape(-1)).tolist()
    quals = results.qualifiers
    return [ListCells(masked[row_bytes - len(p)][a:b], quals[a:b])
            for p, a, b in zip(prefixes, bounds[0::2], bounds[1::2])]


# -- the path ---------------------------------------------------------------------------------


class Thrift2Path(DataPath):
    """The Thrift2 gateway: one scan call per region, hand-serialized puts and gets. Its
    state: a cache of region boundaries (a plan: a stale one costs a hop inside the gateway,
    never an answer), and while a pass keeps them, its large rows (kept.py).
    ``ranges_per_call``: row ranges one scan call carries at most."""

    bulk_cells = True

    def __init__(self, gateways, tables, *, batch_size: int, wal: bool, ranges_per_call: int) -> None:
        super().__init__(gateways, tables, batch_size=batch_size, wal=wal)
        self.ranges_per_call = ranges_per_call
        self.durability = None if wal else SKIP_WAL
        self._regions: dict[str, list[bytes]] = {}  # region start keys by table
        self._kept: dict[str, KeptRows] | None = None  # by table, while a pass keeps large rows

    def forget_regions(self) -> None:
        self._regions.clear()

    @contextmanager
    def large_rows_kept(self) -> Iterator[None]:
        """``Store.large_rows_kept``: ``scan_cells`` keeps the rows of many cells it reads
        (kept.py) until the block ends. Inside another such block, the outer one's."""
        if self._kept is not None:
            yield
            return
        self._kept = {}
        try:
            yield
        finally:
            self._kept = None

    def put(self, table: str, items: Iterable[Item]) -> None:
        split = [self.tables.split(table, key) + (value,) for key, value in items]
        self._put(table, [row for row, _, _ in split], [q for _, q, _ in split], [v for _, _, v in split])

    def put_cells(self, table: str, rows: bytes, qualifiers: Sequence[bytes], repeat: int = 1) -> None:
        width = row_width(rows, len(qualifiers), repeat)
        self._put(table, rows, qualifiers, None, repeat, width)

    def _put(self, table: str, rows, qualifiers: Sequence[bytes], values: Sequence[bytes] | None,
             repeat: int = 1, width: int | None = None) -> None:
        """Cells as ``putMultiple`` calls of ``batch_size`` cells, in parallel. ``rows`` is a
        list of row keys, or ``width``-byte keys concatenated; cell j is row j, qualifier
        ``j % len(qualifiers)`` (see ``encoding.encode_put_multiple``)."""
        name, family, n = self.tables.name(table), self.tables.family, len(qualifiers)
        total, step = n * repeat, self.batch_size

        def send(start: int) -> None:
            stop = min(start + step, total)
            quals = [qualifiers[j % n] for j in range(start, stop)]
            vals = None if values is None else [values[j % n] for j in range(start, stop)]
            part = rows[start * width:stop * width] if width else rows[start:stop]
            message = encode_put_multiple(name, family, part, quals, 1, vals, self.durability, width)
            self.gateways.run2(lambda channel: channel.call_raw("putMultiple", message))  # a retry resends it
        self.gateways.parallel(send, list(range(0, total, step)))

    def get(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """One getMultiple per batch_size rows, in parallel."""
        name, family = self.tables.name(table), self.tables.family
        cells = [self.tables.split(table, key) for key in keys]
        chunks = self.chunks(sorted({row for row, _ in cells}))
        answers = self.gateways.parallel(
            lambda chunk: self.gateways.run2(lambda channel: get_rows(channel, name, chunk, family)), chunks)
        found = {}
        for results in answers:
            found.update(results.row_cells())
        return [found.get(row, {}).get(q) for row, q in cells]

    def scan(self, table: str, prefixes: Sequence[bytes], values: bool = True) -> list[list[Item]]:
        results, spans = self._scan(table, prefixes)
        return [[(key, value if values else b"") for row, qualifier, value in results.slice(lo, hi).cells()
                 if (key := row + qualifier).startswith(prefix)]
                for prefix, (lo, hi) in zip(prefixes, spans)]

    def scan_cells(self, table: str, prefixes: Sequence[bytes]) -> list[Cells]:
        results, spans = self._scan(table, prefixes, keep=True)
        return prefix_cells(results, spans, prefixes, self.tables.row_bytes(table))

    def scan_range(self, table: str, start: bytes, stop: bytes | None, limit: int) -> list[Item]:
        """getScannerResults calls of up to limit + 1 rows."""
        name, family, n, out = self.tables.name(table), self.tables.family, self.tables.row_bytes(table), []
        row_start = self.tables.split(table, start)[0]
        while stop is None or row_start < stop:
            rows = limit + 1
            found = self.gateways.run2(lambda channel, ranges=[(row_start, stop)], rows=rows:
                                       scan_once(channel, name, ranges, family, rows))
            for row, qualifier, value in found.cells():
                key = row + qualifier if n else row
                if key >= start and (stop is None or key < stop):
                    out.append((key, value))
            if len(out) >= limit or len(found) < rows:
                return out[:limit]
            row_start = found.rows[-1] + b"\x00"
        return out[:limit]

    def delete(self, table: str, keys: Iterable[bytes]) -> None:
        name, family = self.tables.name(table), self.tables.family
        cells = [self.tables.split(table, key) for key in keys]
        self.gateways.parallel(
            lambda chunk: self.gateways.run2(lambda channel: delete_cells(channel, name, chunk, family,
                                                                          self.durability)),
            self.chunks(cells))

    def _region_starts(self, table: str) -> list[bytes]:
        """Start keys of the table's regions (cached): scan calls are planned one per region."""
        starts = self._regions.get(table)
        if starts is None:
            name = self.tables.name(table)
            try:
                locations = self.gateways.call("getAllRegionLocations", name)
                starts = sorted(loc.regionInfo.startKey or b"" for loc in locations) or [b""]
            except StoreError:
                raise
            except Exception as e:  # e.g. a TIOError: one call for all ranges is still exact
                logger.debug("no region locations for %s: %s", name, e)
                starts = [b""]
            self._regions[table] = starts
        return starts

    def _scan(self, table: str, prefixes: Sequence[bytes], keep: bool = False) -> tuple[Results, list[tuple[int, int]]]:
        """The rows under any of ``prefixes`` (key order), and each prefix's span of them
        (``prefix_spans``). The distinct prefixes' row ranges are grouped by region, at most
        ``ranges_per_call`` to a call; the calls run in parallel, each one ``getScannerResults``.
        ``keep``, while a pass keeps large rows: those read before are not read again."""
        if not prefixes:
            return Results.of([]), []
        n = self.tables.row_bytes(table)
        ranges = merge_ranges([prefix_range(p, n) for p in set(prefixes)])
        kept = self._kept.setdefault(table, KeptRows()) if keep and self._kept is not None else None
        skipped: list[bytes] = []
        if kept is not None and kept.rows:
            ranges, skipped = kept.without(ranges)
        results = self._scan_ranges(table, ranges) if ranges else Results.of([])
        if kept is not None:
            kept.remember(results)
            if skipped:
                results = kept.spliced(results, skipped)
        return results, prefix_spans(results.rows, prefixes, n)

    def _scan_ranges(self, table: str, ranges: list[tuple[bytes, bytes | None]]) -> Results:
        """The rows of ``ranges`` (sorted, disjoint), in key order: one call per region and
        ``ranges_per_call`` ranges, in parallel."""
        name, family = self.tables.name(table), self.tables.family
        starts = self._region_starts(table)
        groups: list[list] = []
        last = None
        for r in ranges:
            region = bisect_right(starts, r[0]) - 1
            if region != last or len(groups[-1]) >= self.ranges_per_call:
                groups.append([])
                last = region
            groups[-1].append(r)
        parts = self.gateways.parallel(
            lambda group: self.gateways.run2(lambda channel: scan_ranges(channel, name, group, family)), groups)
        return Results.concat(parts)  # groups are in key order, disjoint
