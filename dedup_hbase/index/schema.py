"""Table definitions, read from ``schema/tables.json``, and the HBase shell DDL made from them."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from ..errors import InvalidInput

TABLES = ("index", "docs", "meta", "locks")


@cache
def _schema_text() -> str:
    return resources.files("dedup_hbase._schema").joinpath("tables.json").read_text("utf-8")


def load_schema(regions: int | None = None) -> dict:
    """The table definitions (a fresh copy); ``regions`` overrides the index table's region count."""
    schema = json.loads(_schema_text())
    if regions is not None:
        if isinstance(regions, bool) or not isinstance(regions, int) or not 1 <= regions <= 256:
            raise InvalidInput(f"regions must be between 1 and 256, not {regions!r}")
        schema["tables"]["index"]["regions"] = regions
    return schema


def row_key_bytes(table: str) -> int | None:
    """The row-key length of a wide-row table (a key is that many bytes of row, then the
    column qualifier), or None for a table whose whole key is the row."""
    widths = _row_key_widths()
    if table not in widths:
        raise InvalidInput(f"no table {table!r} in the schema: the tables are {', '.join(widths)}")
    return widths[table]


@cache
def _row_key_widths() -> dict[str, int | None]:
    return {name: t["row_key_bytes"] for name, t in load_schema()["tables"].items()}


def split_keys(table: dict) -> list[bytes]:
    """Region boundaries: ``regions`` equal ranges of the first key byte."""
    n = table["regions"] if table.get("split_on_first_byte") else 1
    return [bytes([i * 256 // n]) for i in range(1, n)]


def table_name(prefix: str, table: str) -> str:
    """The HBase table name of ``table`` under a prefix (``prefix_table``; no prefix: plain)."""
    return f"{prefix}_{table}" if prefix else table


def hbase_shell_ddl(schema: dict, prefix: str = "dedup") -> str:
    """HBase shell commands that create the tables of ``schema``."""
    family = schema["family"]
    lines = [f"# dedup-hbase tables, generated from schema/tables.json (table prefix {prefix!r})"]
    for name in TABLES:
        t = schema["tables"][name]
        attrs = [f"NAME => '{family}'", f"VERSIONS => {t['versions']}",
                 f"BLOOMFILTER => '{t['bloom_filter']}'",
                 f"DATA_BLOCK_ENCODING => '{t['data_block_encoding']}'",
                 f"COMPRESSION => '{t['compression']}'"] + ([f"TTL => {t['ttl']}"] if t.get("ttl") else [])
        if t.get("block_size"):
            attrs.append(f"BLOCKSIZE => '{t['block_size']}'")
        if t["bloom_filter"] == "ROWPREFIX_FIXED_LENGTH":
            attrs.append("CONFIGURATION => {'RowPrefixBloomFilter.prefix_length' => "
                         f"'{t['bloom_prefix_length']}'}}")
        line = f"create '{table_name(prefix, name)}', {{{', '.join(attrs)}}}"
        splits = split_keys(t)
        if splits:
            line += ", SPLITS => [" + ", ".join(f"'\\x{s[0]:02X}'" for s in splits) + "]"
        lines.append(line)
    return "\n".join(lines) + "\n"
