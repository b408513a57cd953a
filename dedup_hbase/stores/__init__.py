"""Stores, chosen by URL: ``parse_store_url`` (url.py, pure) says which, ``open_store`` builds it.

The store contract is ``Store`` (index/store.py). Stores: ``memory.py``; the embedded RocksDB
store (the ``local`` package, the default); Apache HBase (the ``hbase`` package, whose one error
a caller may tell apart, ``AdminGatewayUnreachable``, is exported here).
Building a store opens no network connection (HBase connects on first use).
"""

from __future__ import annotations

from ..index.store import Cells, Store
from .hbase import AdminGatewayUnreachable
from .url import ONE_VALUE, StoreURL, parse_store_url

DEFAULT_URL = "dedup-index"
ENV_VAR = "DEDUP_HBASE_STORE"


def open_store(url: str | StoreURL, *, create: bool = False, read_only: bool | None = None) -> Store:
    """The store named by ``url`` (text or a parsed ``StoreURL``). ``create`` lets the
    embedded store make its folder. ``read_only`` (the embedded store's): True opens it
    read-only (a caller that only reads: it then works on a read-only mount or a full disk,
    beside a writer); False for writing, refusing when another process holds it; None reads
    it when it cannot write it. Raises InvalidInput for a bad URL."""
    spec = url if isinstance(url, StoreURL) else parse_store_url(url)
    if spec.kind == "memory":
        from .memory import MemoryStore

        return MemoryStore(spec.url)
    if spec.kind == "hbase":
        from .hbase.store import HBaseStore

        chosen = {k: v for k, v in spec.options.items() if k not in ONE_VALUE}  # api, protocol: one value left
        return HBaseStore(spec.host, spec.port, url=spec.url, **chosen)
    from .local import LocalStore

    return LocalStore(spec.path, create=create, read_only=read_only)


__all__ = ["AdminGatewayUnreachable", "DEFAULT_URL", "ENV_VAR", "Cells", "Store", "StoreURL", "open_store", "parse_store_url"]
