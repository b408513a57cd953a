"""Store URLs, parsed: a pure function from text to a ``StoreURL``, no I/O, no store built.

=====================================  ==========================================
URL                                    store
=====================================  ==========================================
``PATH`` or ``local:PATH``             the embedded store in folder PATH (default)
``memory:``                            in-process dict, for tests
``hbase://HOST[:PORT]/?OPTION=V&...``  Apache HBase through its Thrift gateways
=====================================  ==========================================

HBase options (all optional; ``HBASE_OPTIONS`` below is the one list of them)::

    table_prefix=dedup     tables are P_index, P_docs, P_meta, P_locks
    transport=buffered     or framed (must match the Thrift server: -threadpool is buffered)
                           (both gateways speak the binary protocol: protocol=binary)
    api=thrift2            the data path, the only one left (api=thrift1 is refused, saying why)
    pool_size=4            pooled connections (of each gateway); scan and put calls run in parallel
    batch_size=10000       cells per putMultiple call when writing
    ranges_per_call=1000   row ranges one Thrift2 scan call carries at most
    wal=true               false: bulk writes skip the write-ahead log (faster; a region server
                           crash before the next flush loses them: rerun the load, it is idempotent)
    timeout=60000          socket timeout in ms; a call not answered in it is tried once more, then
                           fails (HBase's master or region servers down behind the gateway): 2 x timeout
    retries=8              attempts per unit of work (connection dropped, server idle timeout,
                           gateway restarting: about 20 s of back-off in all)
    admin_port=9091        the Thrift2 gateway: the data (one scan call per region for all prefixes of
                           a lookup or batch, putMultiple) and table creation
                           (split keys, bloom filter, encoding, compression: Thrift1 cannot set them)
    zk=HOST[,HOST]:PORT    HBase's ZooKeeper quorum, used only by ``load --engine spark`` (region
                           boundaries and BulkLoadHFiles talk to HBase directly, not through Thrift)
    zk_parent=/hbase       HBase's root znode (zookeeper.znode.parent), if not the default
    fleet_locks=true       add?if_new=true takes a lease on each scan prefix in the locks table, so
                           that it is exact across any number of servers on these tables (hbase/locks.py);
                           false: exact only within one process (one server does all the adds)
    lease=30               seconds a dead server's locks block others at most (from when they see them)
    lock_stripes=64        the locks stand for stripes of the scan prefixes: an add takes at most this
                           many (0: one per prefix, 4 a document); the same on every server of an index

``open_store`` (stores/__init__.py) turns a ``StoreURL`` into a store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..errors import InvalidInput

KINDS = ("local", "memory", "hbase")
HBASE_PORT = 9090
USAGE = "use PATH, local:PATH, memory: or hbase://HOST:PORT/?table_prefix=P"


def _whole(name: str, low: int = 1, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= (high or int(text)):
            bound = f"between {low} and {high}" if high else f">= {low}"
            raise InvalidInput(f"HBase URL option {name} must be a whole number {bound}, not {text!r}")
        return int(text)
    return parse


def _choice(name: str, *choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise InvalidInput(f"HBase URL option {name} must be {' or '.join(choices)}, not {text!r}")
        return text
    return parse


def _table_prefix(text: str) -> str:
    if not text.replace("_", "").isalnum() or not text.isascii():
        raise InvalidInput(f"HBase URL option table_prefix may hold letters, digits and _ only, not {text!r}")
    return text


def _zk(text: str) -> str:
    hosts, sep, port = text.rpartition(":")
    if not sep or not hosts or not port.isdigit() or not all(h and " " not in h for h in hosts.split(",")):
        raise InvalidInput(f"HBase URL option zk is HOST[,HOST...]:PORT (the ZooKeeper quorum), not {text!r}")
    return text


def _zk_parent(text: str) -> str:
    if not text.startswith("/") or " " in text:
        raise InvalidInput(f"HBase URL option zk_parent is a znode path such as /hbase, not {text!r}")
    return text


def _wal(text: str) -> bool:
    return _choice("wal", "true", "false")(text) == "true"


def _one_left(key: str, kept: str, why: str) -> Callable[[str], str]:
    """An option of which one value is left (``kept``, still accepted); the others went: ``why``."""
    def parse(text: str) -> str:
        if text != kept:
            raise InvalidInput(f"HBase URL option {key}={text} is gone: {why}; drop it or say {key}={kept}")
        return text
    return parse


ONE_VALUE = ("api", "protocol")  # options with one value left: parsed, checked, passed to no store

HBASE_OPTIONS: dict[str, Callable[[str], Any]] = {
    "table_prefix": _table_prefix,
    "transport": _choice("transport", "buffered", "framed"),
    "api": _one_left("api", "thrift2", "the data path is Thrift2's alone (the happybase path was slower on every "
                                       "load and lookup measured: docs/benchmarks.md)"),
    "protocol": _one_left("protocol", "binary", "both gateways speak the binary protocol (compact served only the "
                                               "retired api=thrift1)"),
    "pool_size": _whole("pool_size"),
    "batch_size": _whole("batch_size"),
    "wal": _wal,
    "timeout": _whole("timeout"),
    "retries": _whole("retries"),
    "admin_port": _whole("admin_port", 1, 65535),
    "ranges_per_call": _whole("ranges_per_call"),
    "zk": _zk,
    "zk_parent": _zk_parent,
    "fleet_locks": lambda text: _choice("fleet_locks", "true", "false")(text) == "true",
    "lease": _whole("lease", 1, 86400),
    "lock_stripes": _whole("lock_stripes", 0, 65535),
}


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: ``kind`` (local, memory or hbase) and what that kind needs:
    ``path`` (local); ``host``, ``port`` and ``options`` (hbase: only the options the URL
    gives, typed). ``url`` is the text as given, trimmed."""

    kind: str
    url: str
    path: str | None = None
    host: str | None = None
    port: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


def parse_store_url(url: str) -> StoreURL:
    """Parse and check ``url``; raise InvalidInput naming what is wrong. Pure: no I/O."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput(f"a store URL is a non-empty string, not {url!r}; {USAGE}")
    url = url.strip()
    if url.startswith("hbase:"):
        return _parse_hbase(url)
    scheme, sep, rest = url.partition(":")
    if sep and scheme == "memory":
        if rest:
            raise InvalidInput(f"the memory store takes no path: write memory:, not {url!r}")
        return StoreURL("memory", url)
    if sep and scheme == "local":
        if not rest:
            raise InvalidInput(f"local: needs a folder, as in local:PATH, not {url!r}")
        return StoreURL("local", url, path=rest)
    # a one-letter "scheme" is a Windows drive; a path with a separator before the colon is a path
    if sep and len(scheme) > 1 and "/" not in scheme and "\\" not in scheme:
        raise InvalidInput(f"unknown store URL scheme {scheme + ':'!r} in {url!r}: {USAGE}")
    return StoreURL("local", url, path=url)


def _parse_hbase(url: str) -> StoreURL:
    parts = urlsplit(url)
    if not url.startswith("hbase://") or not parts.hostname:
        raise InvalidInput(f"an HBase URL looks like hbase://HOST:PORT/?table_prefix=P, not {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise InvalidInput(f"the port of {url!r} is not a number between 0 and 65535") from None
    if parts.path not in ("", "/"):
        raise InvalidInput(f"an HBase URL has no path (tables are named by ?table_prefix=P), not {parts.path!r}")
    if parts.fragment or parts.username or parts.password:
        raise InvalidInput(f"an HBase URL has no user, password or #fragment: {url!r}")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if key not in HBASE_OPTIONS:
            raise InvalidInput(f"unknown HBase URL option {key!r}: use {', '.join(HBASE_OPTIONS)}")
        if key in options:
            raise InvalidInput(f"HBase URL option {key} is given twice in {url!r}")
        options[key] = HBASE_OPTIONS[key](value)
    return StoreURL("hbase", url, host=parts.hostname, port=port or HBASE_PORT, options=options)


def check_hbase_options(**options: Any) -> None:
    """Check typed HBase options (as a library caller passes them) by the URL's rules."""
    for key, value in options.items():
        flag = key in ("wal", "fleet_locks")
        text = ("true" if value else "false") if flag and isinstance(value, bool) else str(value)
        if flag and not isinstance(value, bool):
            raise InvalidInput(f"{key} must be True or False, not {value!r}")
        HBASE_OPTIONS[key](text)
