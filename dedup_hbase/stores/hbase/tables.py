"""The store's tables in HBase: their names, their column family, and how a key of the
store contract (index/store.py) is an HBase cell, by schema/tables.json.

A table with ``row_key_bytes = n`` splits a key into an n-byte row and a column qualifier
(the index table: identical fingerprints share a row, one column per document); any other
table keeps the whole key as the row and an empty qualifier. Every cell is in the one
family. Also the row ranges a scan prefix covers (``prefix_range``, ``merge_ranges``), which
both data paths plan their scans by. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import StoreError
from ...index.schema import TABLES, load_schema, table_name
from ...index.store import prefix_end


class Tables:
    """The tables under ``prefix`` (``url`` names the store in errors)."""

    def __init__(self, prefix: str, url: str) -> None:
        schema = load_schema()
        self.prefix, self.url = prefix, url
        self.family: bytes = schema["family"].encode()
        self._row_bytes: dict[str, int | None] = {name: schema["tables"][name]["row_key_bytes"] for name in TABLES}

    def names(self) -> dict[str, str]:
        """The HBase name of every table of the schema, by the store's name for it."""
        return {t: table_name(self.prefix, t) for t in TABLES}

    def name(self, table: str) -> bytes:
        """The HBase name of ``table``; a StoreError for a table the schema does not have."""
        if table not in self._row_bytes:
            raise StoreError(f"{self.url}: no table {table!r}")
        return table_name(self.prefix, table).encode()

    def row_bytes(self, table: str) -> int | None:
        """The length of the table's rows, None where the whole key is the row."""
        if table not in self._row_bytes:
            self.name(table)  # raises
        return self._row_bytes[table]

    def split(self, table: str, key: bytes) -> tuple[bytes, bytes]:
        """A key as (row, qualifier)."""
        n = self.row_bytes(table)
        return (key[:n], key[n:]) if n else (key, b"")

    def prefix_range(self, table: str, prefix: bytes) -> tuple[bytes, bytes | None]:
        """The row range of the keys of ``table`` that start with ``prefix`` (``prefix_range``)."""
        return prefix_range(prefix, self.row_bytes(table))


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
