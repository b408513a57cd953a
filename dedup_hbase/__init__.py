"""dedup-hbase: near-duplicate detection with 64-bit SimHash over a prefix-scan index.

>>> from dedup_hbase import Index, open_store
>>> index = Index.create(open_store("memory:"), scheme=4, k=3)
>>> index.add("a", "国家卫生健康委通报最新疫情")
>>> index.query(index.fingerprint("国家卫生健康委通报最新疫情"))

The names below are imported when first used, so that ``import dedup_hbase`` (and the
command line's start) costs nothing until they are.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"  # the one place; pyproject.toml reads it

_HOMES = {
    "errors": ("DedupError", "EmptyDocument", "IndexMismatch", "IndexNotFound", "InvalidInput", "StoreError"),
    "text.features": ("JiebaFeaturizer", "ShingleFeaturizer", "make_featurizer"),
    "text.fingerprint": ("Fingerprinter", "hamming", "make_fingerprinter", "parse_hex", "to_hex"),
    "index.index": ("Document", "Index", "Match", "Matches"),
    "index.layout": ("Scheme",),
    "stores": ("Store", "open_store", "parse_store_url"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_HOME_OF)


def __getattr__(name: str):
    if name not in _HOME_OF:
        raise AttributeError(f"module 'dedup_hbase' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME_OF[name]}", __name__), name)


def __dir__() -> list[str]:
    return [*globals(), *__all__]
