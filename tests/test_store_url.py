"""Store URLs: the pure parser on good and bad URLs, and the factory's choice of store."""

import pytest

from dedup_hbase.errors import InvalidInput
from dedup_hbase.stores import StoreURL, open_store, parse_store_url
from dedup_hbase.stores.hbase.store import HBaseStore
from dedup_hbase.stores.local import LocalStore
from dedup_hbase.stores.memory import MemoryStore

GOOD = [
    ("dedup-index", StoreURL("local", "dedup-index", path="dedup-index")),
    ("  news-index  ", StoreURL("local", "news-index", path="news-index")),
    ("/data/idx", StoreURL("local", "/data/idx", path="/data/idx")),
    ("local:/data/idx", StoreURL("local", "local:/data/idx", path="/data/idx")),
    ("local:rel/a:b", StoreURL("local", "local:rel/a:b", path="rel/a:b")),
    ("./odd:name", StoreURL("local", "./odd:name", path="./odd:name")),
    ("C:\\indexes\\news", StoreURL("local", "C:\\indexes\\news", path="C:\\indexes\\news")),
    ("memory:", StoreURL("memory", "memory:")),
    ("hbase://127.0.0.1:9090/?table_prefix=news",
     StoreURL("hbase", "hbase://127.0.0.1:9090/?table_prefix=news", host="127.0.0.1", port=9090,
              options={"table_prefix": "news"})),
    ("hbase://hb-gw.example.org", StoreURL("hbase", "hbase://hb-gw.example.org", host="hb-gw.example.org",
                                           port=9090)),
    ("hbase://h:19090/", StoreURL("hbase", "hbase://h:19090/", host="h", port=19090)),
    ("hbase://h/?zk=zk1,zk2:2181&zk_parent=/hbase-unsecure",
     StoreURL("hbase", "hbase://h/?zk=zk1,zk2:2181&zk_parent=/hbase-unsecure", host="h", port=9090,
              options={"zk": "zk1,zk2:2181", "zk_parent": "/hbase-unsecure"})),
    ("hbase://h/?wal=false&pool_size=8&batch_size=500&transport=framed&timeout=5000"
     "&retries=3&admin_port=19091&table_prefix=a_1&api=thrift2&protocol=binary",
     StoreURL("hbase", "hbase://h/?wal=false&pool_size=8&batch_size=500&transport=framed"
              "&timeout=5000&retries=3&admin_port=19091&table_prefix=a_1&api=thrift2&protocol=binary", host="h",
              port=9090, options={"wal": False, "pool_size": 8, "batch_size": 500, "transport": "framed",
                                  "timeout": 5000, "retries": 3, "admin_port": 19091, "table_prefix": "a_1",
                                  "api": "thrift2", "protocol": "binary"})),
    ("hbase://h/?fleet_locks=false&lease=5",
     StoreURL("hbase", "hbase://h/?fleet_locks=false&lease=5", host="h", port=9090,
              options={"fleet_locks": False, "lease": 5})),
]

BAD = [
    ("", "a store URL is a non-empty string"),
    ("   ", "a store URL is a non-empty string"),
    (None, "a store URL is a non-empty string, not None"),
    ("memory:x", "the memory store takes no path"),
    ("local:", "local: needs a folder"),
    ("s3://bucket/x", "unknown store URL scheme 's3:'"),
    ("redis:localhost", "unknown store URL scheme 'redis:'"),
    ("hbase:/h:9090", "an HBase URL looks like hbase://HOST:PORT/?table_prefix=P"),
    ("hbase://", "an HBase URL looks like hbase://HOST:PORT/?table_prefix=P"),
    ("hbase://h:90x0/", "the port of 'hbase://h:90x0/' is not a number"),
    ("hbase://h:99999/", "the port of 'hbase://h:99999/' is not a number"),
    ("hbase://h/tables", "an HBase URL has no path"),
    ("hbase://user:pw@h/", "an HBase URL has no user, password or #fragment"),
    ("hbase://h/?pool=3", "unknown HBase URL option 'pool': use table_prefix, transport"),
    ("hbase://h/?pool_size=0", "HBase URL option pool_size must be a whole number >= 1, not '0'"),
    ("hbase://h/?pool_size=two", "HBase URL option pool_size must be a whole number >= 1, not 'two'"),
    ("hbase://h/?batch_size=-5", "HBase URL option batch_size must be a whole number >= 1, not '-5'"),
    ("hbase://h/?admin_port=70000", "HBase URL option admin_port must be a whole number between 1 and 65535"),
    ("hbase://h/?wal=no", "HBase URL option wal must be true or false, not 'no'"),
    ("hbase://h/?transport=http", "HBase URL option transport must be buffered or framed, not 'http'"),
    ("hbase://h/?protocol=compact", "HBase URL option protocol=compact is gone: both gateways speak the binary "
                                    "protocol (compact served only the retired api=thrift1); drop it or say "
                                    "protocol=binary"),
    ("hbase://h/?api=thrift1", "HBase URL option api=thrift1 is gone: the data path is Thrift2's alone (the happybase "
                               "path was slower on every load and lookup measured: docs/benchmarks.md); drop it or "
                               "say api=thrift2"),
    ("hbase://h/?fleet_locks=no", "HBase URL option fleet_locks must be true or false, not 'no'"),
    ("hbase://h/?lease=0", "HBase URL option lease must be a whole number between 1 and 86400, not '0'"),
    ("hbase://h/?table_prefix=my-tables", "table_prefix may hold letters, digits and _ only, not 'my-tables'"),
    ("hbase://h/?table_prefix=", "table_prefix may hold letters, digits and _ only, not ''"),
    ("hbase://h/?wal=true&wal=false", "HBase URL option wal is given twice"),
    ("hbase://h/?zk=zkhost", "HBase URL option zk is HOST[,HOST...]:PORT (the ZooKeeper quorum), not 'zkhost'"),
    ("hbase://h/?zk=:2181", "HBase URL option zk is HOST[,HOST...]:PORT"),
    ("hbase://h/?zk_parent=hbase", "HBase URL option zk_parent is a znode path such as /hbase, not 'hbase'"),
]


@pytest.mark.parametrize("url, expected", GOOD, ids=[u for u, _ in GOOD])
def test_good_urls(url, expected):
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url, message", BAD, ids=[repr(u) for u, _ in BAD])
def test_bad_urls_say_what_is_wrong(url, message):
    with pytest.raises(InvalidInput) as caught:
        parse_store_url(url)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)  # library callers may catch ValueError


def test_factory_builds_the_named_store_without_touching_it(tmp_path):
    memory = open_store("memory:")
    assert isinstance(memory, MemoryStore) and not memory.exists()
    local = open_store(f"local:{tmp_path / 'idx'}")
    assert isinstance(local, LocalStore) and local.url == str(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()  # nothing made before create
    hbase = open_store("hbase://nowhere.invalid:1/?table_prefix=x&pool_size=2&wal=false")  # no connection made
    assert isinstance(hbase, HBaseStore)
    assert (hbase.host, hbase.port, hbase.table_prefix, hbase.pool_size, hbase.wal) == ("nowhere.invalid", 1, "x",
                                                                                          2, False)
    assert open_store(parse_store_url("memory:")).url == "memory:"


def test_hbase_store_checks_its_arguments_by_the_url_rules():
    with pytest.raises(InvalidInput, match="pool_size must be a whole number >= 1, not '0'"):
        HBaseStore("h", pool_size=0)
    with pytest.raises(InvalidInput, match="wal must be True or False"):
        HBaseStore("h", wal="false")
