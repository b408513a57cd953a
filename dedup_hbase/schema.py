"""Table definitions, read from ``schema/tables.json``, and the HBase shell DDL made from them."""

from __future__ import annotations

import json
from importlib import resources

TABLES = ("index", "docs", "meta")


def load_schema(regions: int | None = None) -> dict:
    """The table definitions; ``regions`` overrides the index table's region count."""
    text = resources.files("dedup_hbase._schema").joinpath("tables.json").read_text("utf-8")
    schema = json.loads(text)
    if regions is not None:
        if not 1 <= regions <= 256:
            raise ValueError(f"regions must be between 1 and 256, not {regions}")
        schema["tables"]["index"]["regions"] = regions
    return schema


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
                 f"COMPRESSION => '{t['compression']}'"]
        if t["bloom_filter"] == "ROWPREFIX_FIXED_LENGTH":
            attrs.append("CONFIGURATION => {'RowPrefixBloomFilter.prefix_length' => "
                         f"'{t['bloom_prefix_length']}'}}")
        line = f"create '{table_name(prefix, name)}', {{{', '.join(attrs)}}}"
        splits = split_keys(t)
        if splits:
            line += ", SPLITS => [" + ", ".join(f"'\\x{s[0]:02X}'" for s in splits) + "]"
        lines.append(line)
    return "\n".join(lines) + "\n"
