"""A crawler fleet on one HBase: three real `dedup-hbase serve` processes, six client threads
sending overlapping insert-if-new batches drawn from 200 near-duplicate clusters. With the
fleet locks (the default) every cluster ends with exactly one document indexed, also when one
server is killed with SIGKILL while it holds locks (the others take its leases over after the
lease); with them off, servers racing on the same clusters index near-duplicate pairs."""

import random
import signal
import subprocess
import threading
import time
from contextlib import ExitStack, contextmanager

import httpx
import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.stores.hbase.locks import AGREED

from conftest import hbase_store_url

pytestmark = pytest.mark.hbase

CLUSTERS, MEMBERS, PER_ROUND, THREADS, SERVERS = 200, 5, 10, 6, 3
ATTEMPTS = 30  # a request sent again (to the next server) after a dead server or a 503, as a client does
SETTLE = 0.5  # seconds for the calls a stopped server had sent to HBase to be done (far less than the lease)


def clusters(seed: int) -> dict[str, tuple[int, int]]:
    """{doc id: (cluster, simhash)}: members within 1 bit of their base (within 2 of each
    other, so within k = 3), bases at least 16 bits apart."""
    rnd, docs, bases = random.Random(seed), {}, []
    while len(bases) < CLUSTERS:
        base = rnd.getrandbits(64)
        if all(bin(base ^ b).count("1") >= 16 for b in bases):
            bases.append(base)
    for c, base in enumerate(bases):
        for m in range(MEMBERS):
            docs[f"c{c:03d}-m{m}"] = (c, base if m == 0 else base ^ (1 << rnd.randrange(64)))
    return docs


@pytest.fixture
def fleet_url(hbase_url):
    url = hbase_store_url(hbase_url)
    result = subprocess.run(["dedup-hbase", "init", "--store", url, "--short-texts", "off"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    yield url
    with open_store(url) as store:
        store.drop()


@contextmanager
def server(url: str):
    """A `dedup-hbase serve --port 0` process; yields (its base URL, the process)."""
    proc = subprocess.Popen(["dedup-hbase", "serve", "--store", url, "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("serving "), line + proc.stderr.read()
        yield line.split(" on ", 1)[1].split(" ", 1)[0], proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def run_fleet(url: str, docs: dict[str, tuple[int, int]], kill_when=None) -> list[dict]:
    """Rounds of PER_ROUND clusters; in each, every thread sends one member of each (thread t
    member (t + c) % MEMBERS: threads t and t + 5 send the same document), shuffled, to server
    t % 3, all threads released together. A request that fails (a dead server, or a 503: the
    service says sending it again is safe) goes to the next server. ``kill_when(procs)`` runs
    beside the clients. Returns every answer."""
    by_cluster: dict[int, list[str]] = {}
    for doc_id, (c, _) in docs.items():
        by_cluster.setdefault(c, []).append(doc_id)
    answers, failures, lock = [], [], threading.Lock()
    barrier = threading.Barrier(THREADS)
    with ExitStack() as stack:
        servers = [stack.enter_context(server(url)) for _ in range(SERVERS)]
        bases = [base for base, _ in servers]

        def client(t: int) -> None:
            try:
                send(t)
            except BaseException as e:  # the others must not wait for this thread at the barrier
                failures.append(e)
                barrier.abort()

        def send(t: int) -> None:
            rnd = random.Random(100 + t)
            with httpx.Client(timeout=120) as http:
                for first in range(0, CLUSTERS, PER_ROUND):
                    batch = [by_cluster[c][(t + c) % MEMBERS] for c in range(first, first + PER_ROUND)]
                    rnd.shuffle(batch)
                    body = [{"id": i, "simhash": f"{docs[i][1]:016x}"} for i in batch]
                    barrier.wait()
                    outcomes: list[str] = []
                    for attempt in range(ATTEMPTS):
                        try:
                            response = http.post(f"{bases[(t + attempt) % SERVERS]}/v1/add?if_new=true", json=body)
                        except httpx.TransportError as e:  # a dead server: the next one
                            outcomes.append(repr(e))
                            continue
                        if response.status_code == 200:
                            with lock:
                                answers.extend(response.json())
                            break
                        assert response.status_code == 503, response.text  # the store failed: again is safe
                        outcomes.append(response.text)
                    else:
                        raise AssertionError(f"thread {t}: no server answered for clusters from {first}: {outcomes}")

        threads = [threading.Thread(target=client, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        if kill_when is not None:
            kill_when([proc for _, proc in servers], lambda: any(thread.is_alive() for thread in threads))
        for thread in threads:
            thread.join()
        first_failure = next((f for f in failures if not isinstance(f, threading.BrokenBarrierError)), None)
        if failures:
            raise first_failure or failures[0]
        stats = [httpx.get(f"{base}/v1/stats").json() for base, proc in servers if proc.poll() is None]
    return answers, stats


def indexed_per_cluster(url: str, docs: dict[str, tuple[int, int]]) -> dict[int, set[str]]:
    """Read back through the index: for each cluster, the ids indexed within k of its members."""
    with open_store(url) as store:
        index = Index.open(store)
        found = index.query_many([s for _, s in docs.values()])
        assert index.stats()["documents"] == sum(1 for _ in store.iterate("docs"))
    out: dict[int, set[str]] = {c: set() for c in range(CLUSTERS)}
    for (c, _), matches in zip(docs.values(), found):
        for m in matches:
            assert docs[m.id][0] == c, f"{m.id} matched a member of cluster {c}"
            out[c].add(m.id)
    return out


def test_each_cluster_is_indexed_once_across_three_servers(fleet_url):
    docs = clusters(20)
    answers, stats = run_fleet(fleet_url, docs)
    indexed = indexed_per_cluster(fleet_url, docs)
    assert {c: len(ids) for c, ids in indexed.items()} == {c: 1 for c in range(CLUSTERS)}
    added = sorted(a["id"] for a in answers if a["added"])
    assert added == sorted(i for ids in indexed.values() for i in ids)  # each added answer is the one indexed
    assert all(a["matches"] for a in answers if not a["added"])
    assert sum(s["fleet_locks"]["waited"] for s in stats) > 0  # the servers did contend


def test_a_server_killed_holding_locks_blocks_the_others_only_for_the_lease(fleet_url):
    url = fleet_url + "&lease=3"
    docs = clusters(21)
    killed, left = [], []

    def kill_when_holding(procs, clients_running) -> None:
        """SIGKILL server 0 while it holds locks: stopped (SIGSTOP), and once the calls it had
        sent have settled (SETTLE s) the locks table read; killed if the table shows a lock of
        it, else let go on (SIGCONT) and tried again. Notes the locks it left."""
        victim = procs[0]

        def victims(held):
            return [key for key, value in held
                    if key != AGREED and value.split(b"|")[0].rsplit(b":", 2)[1] == str(victim.pid).encode()]

        with open_store(url) as store:
            while clients_running():
                victim.send_signal(signal.SIGSTOP)
                time.sleep(SETTLE)
                if victims(store.scan_range("locks", b"", None, 1000)):
                    victim.send_signal(signal.SIGKILL)
                    killed.append(victim.wait())
                    left.extend(victims(store.scan_range("locks", b"", None, 1000)))
                    return
                victim.send_signal(signal.SIGCONT)
        raise AssertionError("server 0 was never seen holding a lock")

    answers, stats = run_fleet(url, docs, kill_when_holding)
    assert killed == [-signal.SIGKILL]
    assert left  # a stopped server gives nothing back: what the table showed, it left
    indexed = indexed_per_cluster(url, docs)
    assert {c: len(ids) for c, ids in indexed.items()} == {c: 1 for c in range(CLUSTERS)}  # none lost, none doubled
    # the locks it left belonged to an add in flight: its client sent it again to another server,
    # which needed the same locks and took them over after the lease
    assert sum(s["fleet_locks"]["taken_over"] for s in stats) >= 1
    with open_store(url) as store:
        assert store.scan_range("locks", b"", None, 10) == [(AGREED, b"64")]  # every lock given back


def test_without_fleet_locks_racing_servers_double_clusters(fleet_url):
    """The control: the same run with fleet_locks=false indexes near-duplicate pairs (three
    servers answer the same clusters at the same moment, each exact only within itself)."""
    url = fleet_url + "&fleet_locks=false"
    docs = clusters(22)
    answers, stats = run_fleet(url, docs)
    indexed = indexed_per_cluster(url, docs)
    assert all(ids for ids in indexed.values())
    doubled = sum(len(ids) > 1 for ids in indexed.values())
    print(f"clusters doubled without fleet locks: {doubled} of {CLUSTERS}")
    assert doubled > 0
    assert all(s["fleet_locks"] is None for s in stats)


def test_a_store_without_a_locks_table_says_what_to_do(hbase_url):
    from dedup_hbase.errors import StoreError

    with open_store(hbase_store_url(hbase_url) + "&retries=1") as store:
        with pytest.raises(StoreError, match="no locks table: create it with the `dedup-hbase schema` line"):
            with store.fleet_locks().held([b"abcde"]):
                pass


def test_a_server_locking_otherwise_is_refused(fleet_url):
    """The first add writes the fleet's lock_stripes into the locks table; a store of other
    stripes is refused its adds in one line, one of the same stripes goes on."""
    from dedup_hbase.errors import StoreError

    with open_store(fleet_url) as store:
        with store.fleet_locks().held([b"abcde"]):
            pass
        assert store.scan_range("locks", b"", None, 10) == [(AGREED, b"64")]
    with open_store(fleet_url + "&lock_stripes=0") as store:
        with pytest.raises(StoreError, match=r"^lock_stripes=0 is not the fleet's 64 \(row 'stripes' of the locks "
                                             r"table [^)]*\): every server adding to one index must lock alike; "
                                             r"give the store URL lock_stripes=64, or delete"):
            with store.fleet_locks().held([b"abcde"]):
                pass
    with open_store(fleet_url + "&lock_stripes=64") as store:
        with store.fleet_locks().held([b"abcde"]):
            assert len(store.scan_range("locks", b"", None, 10)) == 2  # the stripe's lock, held
