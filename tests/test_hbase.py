"""The HBase store against a real HBase: table layout, same answers as the embedded
store on the real corpus, recovery from dropped connections, WAL-off writes."""

import gzip
import json
import os
import random
import socket
import subprocess
import time

import pytest

from dedup_hbase import Document, Index, open_store
from dedup_hbase.errors import StoreError
from dedup_hbase.index.schema import table_name
from dedup_hbase.stores.hbase.wire import Channel, idl

from conftest import ROOT, hbase_store_url, require_or_skip

pytestmark = pytest.mark.hbase


@pytest.fixture
def hbase_index_url(hbase_url):
    url = hbase_store_url(hbase_url)
    yield url
    with open_store(url) as store:
        store.drop()


def thrift2_client(store):
    return Channel(store.host, store.admin_port)


def test_init_creates_tables_as_the_schema_says(hbase_index_url):
    subprocess.run(["dedup-hbase", "init", "--store", hbase_index_url, "--regions", "8"], check=True,
                   capture_output=True)
    store = open_store(hbase_index_url)
    hb2 = idl()
    client = thrift2_client(store)
    name = hb2.TTableName(ns=b"default", qualifier=table_name(store.table_prefix, "index").encode())
    (family,) = client.call("getTableDescriptor", name).columns
    assert (family.name, family.maxVersions) == (b"d", 1)
    assert family.bloomnFilterType == hb2.TBloomFilterType.ROWPREFIX_FIXED_LENGTH
    assert family.configuration == {"RowPrefixBloomFilter.prefix_length": "5"}
    assert family.dataBlockEncoding == hb2.TDataBlockEncoding.FAST_DIFF
    assert family.compressionType == hb2.TCompressionAlgorithm.GZ
    assert family.blockSize == 8192  # docs/benchmarks.md: HBase's lookups by block size
    starts = sorted(r.regionInfo.startKey for r in client.call("getAllRegionLocations", name.qualifier))
    assert starts == [b""] + [bytes([i * 32]) for i in range(1, 8)]
    client.close()
    assert Index.open(store).stats()["documents"] == 0


def test_init_without_a_thrift2_gateway_says_what_to_do(hbase_url):
    """Whether the tables exist, creating them and the data go through Thrift2: where its gateway
    does not answer, init fails at once (no retries) with one line naming that gateway."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nowhere = s.getsockname()[1]
    base, _, query = hbase_store_url(hbase_url).partition("?")
    options = [o for o in query.split("&") if o and not o.startswith("admin_port=")] + [f"admin_port={nowhere}"]
    url = f"{base}?{'&'.join(options)}"
    result = subprocess.run(["dedup-hbase", "init", "--store", url], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (1, (
        f"error: cannot reach HBase's Thrift2 gateway (the URL's admin_port) at 127.0.0.1:{nowhere}: "
        f"Could not connect to ('127.0.0.1', {nowhere})\n"))
    with pytest.raises(StoreError, match="^cannot reach HBase's Thrift2 gateway"):
        open_store(url).exists()


def test_describe_from_the_hbase_shell(hbase_index_url):
    launcher = ROOT / "scripts" / "hbase-local"
    if subprocess.run([str(launcher), "status"], capture_output=True).returncode != 0:
        require_or_skip("the HBase shell runs from scripts/hbase-local, which is not running here")
    Index.create(open_store(hbase_index_url), 5, 3)
    index_table = table_name(open_store(hbase_index_url).table_prefix, "index")
    out = subprocess.run([str(ROOT / "scripts" / "hbase-local"), "shell"], check=True, capture_output=True,
                         text=True, input=f"describe '{index_table}'\nget_splits '{index_table}'\n").stdout
    for expected in ("VERSIONS => '1'", "BLOOMFILTER => 'ROWPREFIX_FIXED_LENGTH'",
                     "CONFIGURATION => {'RowPrefixBloomFilter.prefix_length' => '5'}",
                     "DATA_BLOCK_ENCODING => 'FAST_DIFF'", "COMPRESSION => 'GZ'", "BLOCKSIZE => '8192",
                     "Total number of splits = 16"):
        assert expected in out, out


def test_same_answers_as_the_embedded_store(hbase_index_url, xwlb_path, tmp_path):
    """All of the shared corpus loaded into both stores; check on 2,000 documents."""
    rnd = random.Random(8)
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        sample = [line for line in f if rnd.random() < 0.11][:2000]
    assert len(sample) == 2000
    probes = tmp_path / "probes.jsonl"
    probes.write_text("".join(sample), encoding="utf-8")
    answers = []
    for url in (hbase_index_url, str(tmp_path / "embedded")):
        subprocess.run(["dedup-hbase", "init", "--store", url], check=True, capture_output=True)
        load = subprocess.run(["dedup-hbase", "load", "--store", url, "--json", str(xwlb_path)],
                              check=True, capture_output=True, text=True)
        assert json.loads(load.stdout)["read"] == 19_339
        check = subprocess.run(["dedup-hbase", "check", "--store", url, "--json", str(probes)],
                               check=True, capture_output=True, text=True)
        answers.append([json.loads(line) for line in check.stdout.splitlines()])
    hbase, embedded = answers
    assert len(hbase) == 2000 and hbase == embedded
    assert sum(len(a.get("matches", [])) for a in hbase) > 2000  # self-matches plus real near-duplicates
    stats = [json.loads(subprocess.run(["dedup-hbase", "stats", "--store", url, "--json"], check=True,
                                       capture_output=True, text=True).stdout)
             for url in (hbase_index_url, str(tmp_path / "embedded"))]
    keys = ("documents", "index_rows", "index_cells", "rows_per_flag")
    assert [{k: s[k] for k in keys} for s in stats][0] == {k: stats[1][k] for k in keys}


def test_exact_lookups_and_parallel_equals_sequential(hbase_url):
    rnd = random.Random(4)
    docs = {f"d{i}": rnd.getrandbits(64) for i in range(3000)}
    queries = [v ^ (1 << rnd.randrange(64)) ^ (1 << rnd.randrange(64)) for v in list(docs.values())[:200]]
    memory = Index.create(open_store("memory:"), 5, 3)
    memory.add_many([Document(i, f) for i, f in docs.items()])
    url = hbase_store_url(hbase_url)
    try:
        Index.create(open_store(url), 5, 3).add_many([Document(i, f) for i, f in docs.items()])
        for pool_size in (1, 6):
            index = Index.open(open_store(f"{url}&pool_size={pool_size}"))
            assert index.query_many(queries) == memory.query_many(queries)
            assert [index.query(q) for q in queries[:20]] == [memory.query(q) for q in queries[:20]]
            index.store.close()
    finally:
        open_store(url).drop()


def test_a_missing_table_is_a_store_error_naming_it(hbase_url, caplog):
    """HBase's own errors (here TableNotFoundException) come back as one StoreError, at once,
    not as a Thrift exception or after the retries meant for dropped connections."""
    url = hbase_store_url(hbase_url) + "&retries=3"
    store = open_store(url)
    name = table_name(store.table_prefix, "docs")
    caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
    for call in (lambda: store.get("docs", [b"x"]), lambda: store.scan_range("docs", b"", None, 5),
                 lambda: store.put("docs", [(b"x", b"y")])):
        with pytest.raises(StoreError, match=f"HBase at .* refused the call: .*{name}"):
            call()
    assert [r.message for r in caplog.records if "attempt" in r.message] == []  # not retried
    store.close()


def test_wal_off_and_small_batches_write_everything(hbase_url):
    url = hbase_store_url(hbase_url) + "&wal=false&batch_size=7"
    store = open_store(url)
    try:
        index = Index.create(store, 4, 3)
        index.add_many([Document(f"w{i}", i * 7919) for i in range(500)])
        assert index.stats()["index_cells"] == 2000
        assert [m.id for m in index.query(7919 * 3, 0)] == ["w3"]
    finally:
        store.drop()


def test_recovers_from_connections_the_server_dropped(hbase_url):
    """The Thrift server closes sockets idle longer than its read timeout; the next
    calls must still succeed (the store's one retry loop reconnects)."""
    idle_ms = int(os.environ.get("DEDUP_HBASE_THRIFT_READ_TIMEOUT_MS", "0"))
    if not idle_ms or idle_ms > 15000:
        require_or_skip("needs a server started with DEDUP_HBASE_THRIFT_READ_TIMEOUT_MS <= 15000 (scripts/test does)")
    store = open_store(hbase_store_url(hbase_url) + "&pool_size=3")
    try:
        index = Index.create(store, 4, 3)
        index.add_many([Document("x", 12345)])
        assert [m.id for m in index.query(12345)] == ["x"]  # all pooled connections in use
        time.sleep(idle_ms / 1000 + 2)
        assert [m.id for m in index.query(12345)] == ["x"]
        index.add_many([Document("y", 12345)])
        assert [m.id for m in index.query_many([12345, 1])[0]] == ["x", "y"]
    finally:
        store.drop()


def test_load_survives_a_thrift_gateway_restart(own_hbase):
    """The gateway of the data path (Thrift2) is killed and restarted in the middle of a
    load: the load finishes by itself with the right counts (retries in the store,
    idempotent writes; the retry loop is the same for the Thrift1 path).

    The load reads stdin, so it is mid-load by construction, however fast the machine:
    the first half is fed, the gateway restarts once part of it is in HBase (the rest
    may still be in flight), then the second half is fed and stdin closed."""
    hbase_url, env, _ = own_hbase
    launcher = ROOT / "scripts" / "hbase-local"
    n = 60_000
    rnd = random.Random(9)
    lines = [json.dumps({"id": f"r{i}", "simhash": f"{rnd.getrandbits(64):016x}"}) + "\n" for i in range(n)]
    url = hbase_store_url(hbase_url) + "&retries=12"
    subprocess.run(["dedup-hbase", "init", "--store", url, "--short-texts", "off"], check=True, capture_output=True)  # fingerprints alone
    try:
        load = subprocess.Popen(["dedup-hbase", "load", "--fingerprints", "--batch-size", "1000", "--json",
                                 "--store", url, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        load.stdin.write("".join(lines[: n // 2]))
        load.stdin.flush()
        probe, deadline = open_store(url), time.monotonic() + 120
        while sum(1 for _ in probe.iterate("docs")) < n // 4:
            assert load.poll() is None, load.stderr.read()
            assert time.monotonic() < deadline, "the first quarter never reached HBase"
            time.sleep(0.2)
        probe.close()
        subprocess.run([str(launcher), "restart-thrift2"], check=True, capture_output=True, env=env)
        load.stdin.write("".join(lines[n // 2:]))
        out, err = load.communicate(timeout=600)
        assert load.returncode == 0, err
        report = json.loads(out)
        assert (report["read"], report["indexed"], report["rejected"]) == (n, n, 0)
        stats = Index.open(open_store(url)).stats()
        assert (stats["documents"], stats["index_cells"]) == (n, 4 * n)
    finally:
        open_store(url).drop()


@pytest.mark.parametrize("gateway", ["thrift", "thrift2"])
def test_pooled_connections_to_a_restarted_gateway_are_replaced(own_hbase, gateway, caplog):
    """Every pooled connection of a gateway dies with it (SIGKILL, then a new gateway on the
    same port): the next calls drop the dead connections and succeed on new ones, for each
    gateway's own pool (Thrift2's: the data, which tables exist; Thrift1's: listing and dropping them)."""
    hbase_url, env, _ = own_hbase
    launcher = ROOT / "scripts" / "hbase-local"
    store = open_store(hbase_store_url(hbase_url) + "&pool_size=3&retries=12")
    try:
        index = Index.create(store, 4, 3)
        index.add_many([Document(f"p{i}", 1000 + i) for i in range(50)])
        before = index.query_many([1000 + i for i in range(50)])  # every pooled connection in use
        tables = lambda: store.gateways.run1(lambda conn: conn.tables())  # Thrift1's calls: listing, dropping
        assert tables()  # a Thrift1 connection in its pool
        subprocess.run([str(launcher), f"restart-{gateway}"], check=True, capture_output=True, env=env)
        caplog.set_level("DEBUG", logger="dedup_hbase.stores.hbase.connections")
        if gateway == "thrift":
            assert tables()
        assert index.query_many([1000 + i for i in range(50)]) == before
        assert any("attempt 1 of 12" in r.message for r in caplog.records)  # a dead connection was dropped
        index.add_many([Document("after", 1000)])
        assert sorted(m.id for m in index.query(1000, 0)) == ["after", "p0"]
    finally:
        store.drop()
        store.close()
