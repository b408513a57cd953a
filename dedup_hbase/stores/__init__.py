"""Stores, chosen by URL.

=====================================  ==========================================
URL                                    store
=====================================  ==========================================
``PATH`` or ``local:PATH``             the embedded store in folder PATH (default)
``memory:``                            in-process dict, for tests
``hbase://HOST:PORT/?table_prefix=P``  Apache HBase through the Thrift1 gateway
=====================================  ==========================================

``open_store`` parses and checks the URL and builds the store object; it opens no
network connection (HBase connects on first use).
"""

from __future__ import annotations

from .base import Store

DEFAULT_URL = "dedup-index"
ENV_VAR = "DEDUP_HBASE_STORE"


def open_store(url: str, *, create: bool = False) -> Store:
    """The store named by ``url``. ``create`` lets the embedded store make its folder."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("a store URL is a non-empty string")
    url = url.strip()
    if url == "memory:":
        from .memory import MemoryStore

        return MemoryStore(url)
    if url.startswith("hbase://"):
        from .hbase import HBaseStore

        return HBaseStore.from_url(url)
    scheme, sep, rest = url.partition(":")
    if sep and scheme == "local":
        url = rest
    elif sep and len(scheme) > 1 and "/" not in scheme and "\\" not in scheme:
        raise ValueError(f"unknown store URL {url!r}: use PATH, local:PATH, memory: or hbase://HOST:PORT")
    from .local import LocalStore

    return LocalStore(url, create=create)


__all__ = ["DEFAULT_URL", "ENV_VAR", "Store", "open_store"]
