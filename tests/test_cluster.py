"""The Spark jobs on a real cluster of separate processes on this host (scripts/cluster-local:
HDFS with 2 DataNodes, HBase with 2 region servers on it, Spark standalone with 2 workers,
started and stopped by this module), run as a user runs them: from a virtualenv made by
``pip install`` of the project (conftest.py's ``pip_installed``, not the checkout's), in another
folder, with the executors' Python environment packed by ``dedup-hbase pack-env`` and shipped
with each job (``--spark-env``). Inputs and outputs on HDFS, HFiles staged on HDFS.

* without the packed environment a job stops with one line;
* the executors run the shipped Python (a task reports ``sys.executable``: inside the archive
  unpacked in its working folder), and ``groups``, with a Spark worker killed (-9) part way,
  gives the local engine's output;
* a load of 30,000 fingerprints with a Spark worker killed part way and a region server killed just
  before the bulk load: it finishes, or stops with one line and the same command run again
  finishes; the index equal, cell for cell, to the local engine's load of the same input; the
  index's regions on both region servers before and after;
* an index of ``init --preset recall`` (signatures, probes, a confirmation), loaded through a
  Spark Connect server beside the cluster's master (the environment shipped as the session's
  artifact): the local engine's cells; ``check --add-new`` in classic mode with a worker and a
  region server killed part way: the local engine's records, and the index then as ``load
  --skip-near-dups`` leaves it;
* a region split forced while a load's HFiles are written: the files are refused (the
  HBASE-30501 guard), cut again at the new regions and loaded: the local engine's index;
* HBase's master killed (the balancer off and no region in transition first): ``stats``,
  ``check`` and ``load`` answer; ``init`` ends with one line
  after its timeout; ``scripts/cluster-local restart master``, and ``init`` works;
* three ``dedup-hbase serve`` on the cluster's HBase, clients sending near-duplicate clusters
  with ``add?if_new=true``, a region server killed part way: each cluster indexed once;
* YARN beside the cluster (``scripts/cluster-local yarn start``): ``load``, ``check --add-new``
  and ``groups`` with ``--spark-master yarn``, a NodeManager killed with its containers while
  the load's HFiles are written: the local engine's cells, records and groups.

Every killed role is started again (``scripts/cluster-local restart``) in the background while
the test goes on with its local work, and is serving again before the next test starts; after
the load's region server, the balancer run too (the loaded index's regions on both again).

DEDUP_HBASE_TEST_CLUSTER_DIR / _PORT: the cluster's folder and base port (default
<repo>/.cluster-test, 24660); DEDUP_HBASE_TEST_CLUSTER_ENV=FILE: use the running cluster of
that cluster.env instead (not started, not stopped; its worker 1 and region server 1 are killed
and started again).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from dedup_hbase import open_store
from dedup_hbase.index.schema import table_name
from dedup_hbase.text.fingerprint import make_fingerprinter

from conftest import ROOT, require_or_skip, shared_corpus

pytestmark = [pytest.mark.spark, pytest.mark.hbase, pytest.mark.slow]
SCRIPT = ROOT / "scripts" / "cluster-local"
LEFT_OUT = ("PYTHONPATH", "DEDUP_HBASE_STORE", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME",
            "DEDUP_HBASE_SPARK_JARS", "DEDUP_HBASE_SPARK_ENV")


def clean_env(**more: str) -> dict[str, str]:
    """This environment without what points into the checkout or at another store or Spark."""
    return {**{k: v for k, v in os.environ.items() if k not in LEFT_OUT}, **more}


def read_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            out[name] = value.strip("'")
    return out


@pytest.fixture(scope="module")
def cluster_start(tmp_path_factory):
    """scripts/cluster-local start, launched (the caller waits: ``cluster``)."""
    given = os.environ.get("DEDUP_HBASE_TEST_CLUSTER_ENV")
    if given:
        yield None, read_env(Path(given))
        return
    if not os.environ.get("JAVA_HOME") and subprocess.run(["which", "java"], capture_output=True).returncode:
        require_or_skip("Java is not installed: no cluster")
    folder = Path(os.environ.get("DEDUP_HBASE_TEST_CLUSTER_DIR", ROOT / ".cluster-test"))
    env = clean_env(DEDUP_HBASE_CLUSTER_DIR=str(folder),
                    DEDUP_HBASE_CLUSTER_PORT=os.environ.get("DEDUP_HBASE_TEST_CLUSTER_PORT", "24660"),
                    DEDUP_HBASE_PYTHON=os.environ.get("DEDUP_HBASE_PYTHON", sys.executable))
    log = open(tmp_path_factory.mktemp("cluster-start") / "start.log", "w")
    process = subprocess.Popen([str(SCRIPT), "start"], env=env, stdout=log, stderr=subprocess.STDOUT)
    env["START_LOG"] = log.name
    try:
        yield process, env
    finally:
        process.kill()
        subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True)
        log.close()


@pytest.fixture(scope="module")
def cluster(cluster_start, pip_installed, work):
    """The running cluster's cluster.env (and what scripts/cluster-local needs), once the cluster,
    the pip-installed virtualenv and the packed environment are ready (made while it starts)."""
    process, env = cluster_start
    if process is None:
        return env
    assert process.wait(timeout=600) == 0, Path(env["START_LOG"]).read_text()[-3000:]
    return {**env, **read_env(Path(env["DEDUP_HBASE_CLUSTER_DIR"]) / "cluster.env")}


@pytest.fixture(scope="module")
def work(tmp_path_factory, pip_installed):
    """A folder outside the checkout, with the packed environment of the pip-installed
    dedup-hbase in it."""
    folder = tmp_path_factory.mktemp("cluster-work")
    packed = subprocess.run([str(pip_installed / "bin" / "dedup-hbase"), "pack-env", "env.tar.gz", "--json"],
                            cwd=folder, env=clean_env(), capture_output=True, text=True)
    assert packed.returncode == 0, packed.stderr[-3000:]
    assert json.loads(packed.stdout)["python"] == "/usr/bin/python3.11"
    return folder


def run(cluster, venv: Path, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The pip-installed dedup-hbase, in ``cwd``, with the cluster's environment."""
    done = subprocess.run([str(venv / "bin" / "dedup-hbase"), *args], cwd=cwd, capture_output=True, text=True,
                          env=clean_env(**cluster), timeout=900)
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


def hdfs(cluster, *args: str) -> None:
    subprocess.run([str(SCRIPT), "hdfs", *args], env=clean_env(**cluster), check=True, capture_output=True)


def cl(cluster, *args: str) -> str:
    """scripts/cluster-local ARGS (kill, restart, admin) on the cluster; its output."""
    env = clean_env(**{**cluster, "DEDUP_HBASE_PYTHON": os.environ.get("DEDUP_HBASE_PYTHON", sys.executable)})
    done = subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def restore(cluster, role: str, n: str, balance: bool = False) -> None:
    """A killed role started again; ``balance``: then the balancer run (the regions of the
    tables there are on both region servers again; a table made later is spread over both
    anyway)."""
    cl(cluster, "restart", role, n)
    if balance and role == "regionserver":
        cl(cluster, "admin", "balance")


class Restarts:
    """Killed roles started again (restore()) in the background while a test goes on with its
    local work; ``wait()`` before the cluster is needed whole again (every test starts so)."""

    def __init__(self):
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def start(self, cluster, role: str, n: str, balance: bool = False) -> None:
        def run():
            try:
                restore(cluster, role, n, balance)
            except BaseException as e:  # raised in wait()
                self.errors.append(e)

        self.threads.append(threading.Thread(target=run, daemon=True))
        self.threads[-1].start()

    def wait(self) -> None:
        while self.threads:
            self.threads.pop().join()
        if self.errors:
            raise self.errors.pop()


@pytest.fixture(scope="module")
def restarts(cluster_start):
    """The module's Restarts, waited for before each test and before the cluster stops."""
    restarting = Restarts()
    yield restarting
    restarting.wait()


@pytest.fixture(autouse=True)
def cluster_whole(restarts):
    restarts.wait()


def spark_args(cluster, cwd: Path) -> list[str]:
    return ["--engine", "spark", "--spark-master", cluster["SPARK_MASTER"], "--spark-env", str(cwd / "env.tar.gz"),
            "--verbose"]


def on_cluster(cluster, venv: Path, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(cluster, venv, cwd, *args, *spark_args(cluster, cwd), check=check)


def with_faults(cluster, venv: Path, cwd: Path, args: list[str], faults, restarts: Restarts,
                balance: bool = False) -> subprocess.CompletedProcess:
    """The pip-installed dedup-hbase ARGS started in ``cwd``; ``faults``: (when, ARGS...): once
    ``when(stderr so far)`` is true, ``scripts/cluster-local ARGS`` (``kill ROLE N``; or ARGS a
    function: called), the job still running then (part way). The killed roles are started again
    once the job has ended, in the background (``restarts``; ``balance``: and the balancer run,
    restore())."""
    err = cwd / f"job-{time.monotonic_ns()}.err"
    with open(err, "w") as f:
        job = subprocess.Popen([str(venv / "bin" / "dedup-hbase"), *args], cwd=cwd, env=clean_env(**cluster),
                               stdout=subprocess.PIPE, stderr=f, text=True)
    try:
        for when, *fault in faults:
            while not when(err.read_text()):
                assert job.poll() is None, err.read_text()[-4000:]
                time.sleep(0.3)
            fault[0]() if callable(fault[0]) else cl(cluster, *fault)
            assert job.poll() is None, err.read_text()[-4000:]  # part way
        out, _ = job.communicate(timeout=900)
    finally:
        if job.poll() is None:
            job.kill()
        for _, what, *role in faults:
            if what == "kill":
                restarts.start(cluster, *role, balance=balance)
    return subprocess.CompletedProcess(job.args, job.returncode, out, err.read_text())


def step_done(step: str):
    """A ``with_kills`` trigger: the job's --verbose log has passed ``step``."""
    return lambda log: step in log


def exact_or_one_line(done: subprocess.CompletedProcess, again, restarts: Restarts) -> tuple[str, subprocess.CompletedProcess]:
    """A job run through a fault either finished (``finished``) or stopped with one line
    ``error: ...`` (after --verbose's traceback, one of a DedupError: not a bug's), and then
    ``again()`` (the same command, once the killed roles are back) finished (``stopped, then
    finished``)."""
    if done.returncode == 0:
        return "finished", done
    lines = done.stderr.strip().splitlines()
    last = lines[-1]
    expected = "Traceback" not in done.stderr or lines[-2].startswith("dedup_hbase.errors.")
    assert (done.returncode, last.startswith("error: "), expected) == (1, True, True), done.stderr[-4000:]
    restarts.wait()
    rerun = again()
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    return f"stopped ({last}), then finished", rerun


def check_equals_local(cluster, venv: Path, work: Path, out: str, folder: str, local_url: str,
                       name: str) -> list[dict]:
    """The records a Spark ``check --out OUT`` wrote on HDFS (fetched into ``work/folder``), as a
    set equal to the local engine's ``check --json`` of ``work/name`` against ``local_url``;
    the local records."""
    hdfs(cluster, "-get", out, str(work / folder))
    spark_records = [json.loads(line) for f in sorted((work / folder / "json").glob("*.jsonl"))
                     for line in f.read_text(encoding="utf-8").splitlines()]
    local = run(cluster, venv, work, "check", "--store", local_url, "--json", str(work / name))
    local_records = [json.loads(line) for line in local.stdout.splitlines()]
    key = lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False)
    assert sorted(map(key, spark_records)) == sorted(map(key, local_records))
    return local_records


def news(n: int, step: int) -> list[dict]:
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [{"id": r["id"], "text": r["text"]} for r in records[::step][:n]]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def added_inputs(cluster, work: Path, prefix: str, texts: list[dict], indexed: int, halves: int, copies: int,
                 seed: int) -> None:
    """The inputs of a ``check --add-new`` test, in ``work`` and on HDFS (/tmp/PREFIX-base.jsonl,
    /tmp/PREFIX-new.jsonl): the first ``indexed`` texts, then halves of ``halves`` of them, copies
    of ``copies`` of them and the next 1,000 or what is left (sampled with ``seed``)."""
    rnd = random.Random(seed)
    base = texts[:indexed]
    new = ([{"id": f"half-{r['id']}", "text": r["text"][:len(r["text"]) // 2]} for r in rnd.sample(base, halves)]
           + [{"id": f"again-{r['id']}", "text": r["text"]} for r in rnd.sample(base, copies)]
           + texts[indexed:indexed + 1000])
    for name, records in ((f"{prefix}-base", base), (f"{prefix}-new", new)):
        write_jsonl(work / f"{name}.jsonl", records)
        hdfs(cluster, "-put", "-f", str(work / f"{name}.jsonl"), f"/tmp/{name}.jsonl")


def test_without_the_packed_environment_a_job_stops_with_one_line(cluster, pip_installed, work):
    write_jsonl(work / "few.jsonl", news(5, 1))
    hdfs(cluster, "-put", "-f", str(work / "few.jsonl"), "/tmp/few.jsonl")
    done = run(cluster, pip_installed, work, "groups", "--engine", "spark", "--spark-master", cluster["SPARK_MASTER"],
               "--out", f"{cluster['HDFS']}/tmp/few-groups", f"{cluster['HDFS']}/tmp/few.jsonl", check=False)
    assert (done.returncode, done.stderr.splitlines()) == (1, [
        "error: the Spark executors cannot run dedup-hbase (No module named 'dedup_hbase'): ship an environment "
        "made by `dedup-hbase pack-env ARCHIVE` with --spark-env ARCHIVE"]), done.stderr[-3000:]


def gbk_inputs(folder: Path) -> Path:
    """JSON lines of news titles in GBK and in GB18030 (with its byte-order mark), some titles
    twice, a binary file, and GBK titles gzipped and cut off past the head that the planner reads
    (the JVM's count of lines finds the cut; the file is then read whole, as a local read reads
    it): what ``--encoding auto`` must read per file."""
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        titles = [json.loads(line)["title"] for line in f][:4000]
    lines = lambda name, ids, sep: sep.join(json.dumps({"id": f"{name}{n}", "text": titles[i]}, ensure_ascii=False)
                                            for n, i in enumerate(ids))
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((lines("a", list(range(3000)) + list(range(200)), "\n") + "\r\n").encode("gbk", "replace"))
    (folder / "b.jsonl").write_bytes(b"\x84\x31\x95\x33" + lines("b", range(2900, 4000), "\r\n").encode("gb18030"))
    (folder / "c.jsonl").write_bytes(b"\x00\x01 not text\n" * 50)
    cut = gzip.compress((lines("d", range(1000, 3000), "\n") + "\n").encode("gbk", "replace"), mtime=0)
    (folder / "d.jsonl.gz").write_bytes(cut[:len(cut) * 2 // 3])
    return folder


def test_groups_with_a_worker_killed_run_the_shipped_python_and_equal_the_local_engine(cluster, pip_installed, work,
                                                                                      restarts):
    """Groups of news texts in Parquet and of titles in GBK and GB18030 JSON lines (``--encoding
    auto``: each file judged by its head, then cut into lines by the JVM's line reader, not read
    whole by one task) with a worker killed: the shipped Python ran them, and the groups, the
    documents, the rejects (a featureless title, a binary file, a cut-off gzip file) and the
    exit status (3: an input cut off) are the local engine's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = news(3000, 6)
    pq.write_table(pa.Table.from_pylist(records), work / "news.parquet")
    hdfs(cluster, "-put", "-f", str(work / "news.parquet"), "/tmp/news.parquet")
    hdfs(cluster, "-put", "-f", str(gbk_inputs(work / "gbk")), "/tmp/gbk")
    # worker 1 killed once the input is read and fingerprinted: its executor and shuffle
    # output lost, the pairs and components computed again on worker 2
    options = ["--encoding", "auto", "--json"]
    done = with_faults(cluster, pip_installed, work, ["groups", *spark_args(cluster, work), *options, "--rejects",
                      str(work / "spark.rejects"), "--out", f"{cluster['HDFS']}/tmp/news-groups",
                      f"{cluster['HDFS']}/tmp/news.parquet", f"{cluster['HDFS']}/tmp/gbk"],
                      [(step_done("read, fingerprint, account"), "kill", "worker", "1")], restarts)
    assert done.returncode == 3, done.stderr[-4000:]
    assert "gbk/a.jsonl: read as GB18030 (--encoding auto)" in done.stderr, done.stderr[-3000:]
    pythons = [json.loads("{" + line.split("{", 1)[1]) for line in done.stderr.splitlines()
               if "executors' Python: {" in line]
    work_dirs = [Path(cluster["DEDUP_HBASE_CLUSTER_DIR"]) / "data" / f"worker{i}" / "work" for i in (1, 2)]
    assert pythons and {Path(p["python"]).parents[4] in work_dirs for p in pythons} == {True}, done.stderr[-2000:]
    for found in pythons:  # <worker dir>/<app>/<executor>/env/bin/python: the archive, unpacked there
        env = Path(found["python"]).parent.parent
        assert env.name == "env" and found["dedup_hbase"] == str(env / "lib/python3.11/site-packages/dedup_hbase/__init__.py")
    local = run(cluster, pip_installed, work, "groups", *options, "--rejects", str(work / "local.rejects"), "--out",
                str(work / "local-groups"), str(work / "news.parquet"), str(work / "gbk"), check=False)
    assert local.returncode == 3, local.stderr[-3000:]
    assert done.stderr.splitlines()[-1].replace(f"{cluster['HDFS']}/tmp/", f"{work}/") == local.stderr.splitlines()[-1]
    hdfs(cluster, "-get", f"{cluster['HDFS']}/tmp/news-groups", str(work / "spark-groups"))
    for name in ("groups.jsonl", "dropped.jsonl"):
        assert (work / "spark-groups" / name).read_text() == (work / "local-groups" / name).read_text(), name
    rows = lambda folder: sorted(pq.read_table(folder / "documents").to_pylist(), key=lambda r: r["id"])
    assert rows(work / "spark-groups") == rows(work / "local-groups")
    assert any(r["size"] > 1 for r in rows(work / "local-groups"))  # near-duplicates were there to find
    summary = lambda out: {k: v for k, v in json.loads(out).items() if k not in ("out", "engine", "elapsed_s")}
    assert summary(done.stdout) == summary(local.stdout) and summary(local.stdout)["rejected_by_reason"] == {
        "featureless text": 2, "binary data, not text (a NUL byte at byte 0)": 1, "cut-off input": 1}
    assert (work / "spark.rejects").read_text().replace(f"{cluster['HDFS']}/tmp/", f"{work}/") == \
        (work / "local.rejects").read_text()
    assert {r["id"] for r in rows(work / "local-groups") if r["size"] > 1} >= {f"a{3000 + i}" for i in range(200)}


def fingerprint_input(n: int, seed: int = 5) -> list[dict]:
    """n --fingerprints records: 3,000 news texts' own fingerprints, near variants (1 to 4 bits)
    of them and of random ones, random fill, a few ids repeated (the last wins)."""
    rnd = random.Random(seed)
    texts = news(3000, 4)
    fp = make_fingerprinter()
    hashes = [fp.fingerprint(r["text"]) for r in texts]
    records = [{"id": r["id"], "simhash": f"{h:016x}"} for r, h in zip(texts, hashes)]
    while len(records) < n:
        base = rnd.choice(hashes) if rnd.random() < 0.3 else rnd.getrandbits(64)
        for bit in rnd.sample(range(64), rnd.randint(0, 4)):
            base ^= 1 << bit
        records.append({"id": f"r{len(records)}", "simhash": f"{base:016x}"})
    for i in range(0, 300, 3):  # an id again, later, another fingerprint: it wins
        records.append({"id": records[i]["id"], "simhash": f"{rnd.getrandbits(64):016x}"})
    return records


def table_cells(url: str, table: str, head: int = 8) -> dict[tuple[bytes, bytes], bytes]:
    """Every cell of one of an index's HBase tables (index, docs): (row, column) -> value; a
    document's load time left out of its value, its source file named without its folder (the
    same file, read from HDFS by one engine and from this machine by the other). ``head``: the
    bytes of a document row before its metadata (``Index.head``)."""
    import happybase

    store = open_store(url)
    connection = happybase.Connection(store.host, store.port)
    try:
        cells = {}
        for row, columns in connection.table(table_name(store.table_prefix, table)).scan(batch_size=5000):
            for column, value in columns.items():
                if table == "docs" and len(value) > head:
                    meta = json.loads(value[head:])
                    meta.pop("loaded", None)
                    meta["source"] = meta["source"].rsplit("/", 1)[-1]
                    value = value[:head] + json.dumps(meta, sort_keys=True).encode()
                cells[row, column] = value
        return cells
    finally:
        connection.close()


def region_servers(url: str, table: str) -> set[str]:
    import happybase

    store = open_store(url)
    connection = happybase.Connection(store.host, store.port)
    try:
        name = table_name(store.table_prefix, table)
        return {cells[b"info:server"].decode() for row, cells in connection.table("hbase:meta").scan(
            row_prefix=f"{name},".encode(), columns=[b"info:server"]) if b"info:server" in cells}
    finally:
        connection.close()


def staged_files(cluster) -> int:
    """Files under the cluster's HFile staging folder (WebHDFS)."""
    folder = cluster["DEDUP_HBASE_CLUSTER_STAGING"].split("//", 1)[1].split("/", 1)[1]
    with urllib.request.urlopen(f"{cluster['NAMENODE_WEB']}/webhdfs/v1/{folder}?op=GETCONTENTSUMMARY&user.name=root",
                                timeout=10) as answer:
        return json.load(answer)["ContentSummary"]["fileCount"]


@pytest.fixture(scope="module")
def loaded(cluster, pip_installed, work, restarts):
    """30,000 documents loaded on the cluster (a worker and a region server killed -9 while the
    HFiles are written, before they are bulk-loaded) and by the local engine, each into its own
    index: (spark URL, local URL)."""
    records = fingerprint_input(30_000)
    write_jsonl(work / "fps.jsonl", records)
    hdfs(cluster, "-put", "-f", str(work / "fps.jsonl"), "/tmp/fps.jsonl")
    urls = [f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("s", "l")]
    for url in urls:
        run(cluster, pip_installed, work, "init", "--store", url, "--regions", "8", "--short-texts", "off")  # fingerprints alone
    assert len(region_servers(urls[0], "index")) == 2  # the regions on both region servers
    command = ["load", "--store", urls[0], "--fingerprints", *spark_args(cluster, work), "--staging",
               cluster["DEDUP_HBASE_CLUSTER_STAGING"], "--json", f"{cluster['HDFS']}/tmp/fps.jsonl"]
    # worker 1 killed while the HFiles are written (the staging folder has files), then region
    # server 1: the data source's commit (HFileSink: BulkLoadHFiles, a few seconds later) meets
    # its regions unassigned or moving (the write and the bulk load are one step of the job's
    # log since the data source does both: no step between them to kill at)
    done = with_faults(cluster, pip_installed, work, command, [
        (lambda log: staged_files(cluster) > 0, "kill", "worker", "1"),
        (lambda log: True, "kill", "regionserver", "1")], restarts, balance=True)
    outcome, done = exact_or_one_line(done, lambda: run(cluster, pip_installed, work, *command, check=False), restarts)
    print(f"load with worker 1 and region server 1 killed: {outcome}")
    out = done.stdout
    spark_report = json.loads(out)
    local_report = json.loads(run(cluster, pip_installed, work, "load", "--store", urls[1], "--fingerprints", "--json",
                                  "-q", str(work / "fps.jsonl")).stdout)
    # ("replaced": the local engine counts an id of an earlier batch of the same load, 100 here;
    # the Spark load keeps the last record of each id before it writes: 0)
    numbers = lambda r: (r["read"], r["indexed"], r["new"], r["rejected"])
    assert numbers(spark_report) == numbers(local_report) == (30_100, 30_100, 30_000, 0), (spark_report,
                                                                                             local_report)
    yield urls[0], urls[1]
    for url in urls:
        with open_store(url) as store:
            store.drop()


def test_a_load_with_a_worker_and_a_region_server_killed_equals_the_local_engines_cell_for_cell(loaded, restarts):
    spark_url, local_url = loaded
    for table in ("index", "docs"):
        cells = table_cells(spark_url, table)
        assert len(cells) == (120_000 if table == "index" else 30_000)
        assert cells == table_cells(local_url, table)
    restarts.wait()  # the region server back, the balancer run
    assert len(region_servers(spark_url, "index")) == 2


def test_the_quality_options_through_connect_and_check_add_new_with_faults_equal_the_local_engine(
        cluster, pip_installed, work, restarts):
    """An index made by the pip-installed package with ``init --preset recall`` (docs/quality.md's
    bar: signatures body,lead150, probes 8,1, a confirmation). 1,500 news texts loaded through a
    Spark Connect server beside the cluster's master (``scripts/cluster-local connect``; the
    packed environment shipped as the session's artifact, unpacked in the session's folder of the
    workers' working folders; texts fingerprinted, leads and sketches made by the shipped Python;
    HFiles bulk-loaded by the server) give the local engine's cells. Then, in classic mode,
    ``check --add-new`` of 1,500 texts (halves and copies of indexed ones, new ones) with a worker
    and a region server killed part way (lookups and confirmations in the executors, HBase's
    client there) gives the local engine's records, and the index a local ``load
    --skip-near-dups`` leaves (the Connect server stopped first: its application holds every core
    of the workers, a classic job would wait for them). (One test for both modes: each Spark job
    on the cluster costs a session of its own, and the cells and records are the same comparison.
    ``groups`` through Connect is test_spark_connect.py's, on local[2]: on the cluster it proved
    nothing this load does not, the environment shipped as the session's artifact, and cost about
    80 s alone, 170 s in the suite.)"""
    added_inputs(cluster, work, "q", news(3000, 3), 1500, 300, 200, seed=11)
    urls = [f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("qs", "ql")]
    staging = ["--staging", cluster["DEDUP_HBASE_CLUSTER_STAGING"]]
    started = cl(cluster, "connect", "start")
    try:
        remote = ["--engine", "spark", "--spark-remote", re.search(r"ready: (sc://\S+)", started).group(1),
                  "--spark-env", str(work / "env.tar.gz"), "--verbose"]
        for url in urls:
            run(cluster, pip_installed, work, "init", "--store", url, "--regions", "4", "--preset", "recall")
        done = run(cluster, pip_installed, work, "load", "--store", urls[0], *staging, *remote,
                   f"{cluster['HDFS']}/tmp/q-base.jsonl")
        pythons = [json.loads("{" + line.split("{", 1)[1]) for line in done.stderr.splitlines()
                   if "executors' Python: {" in line]
        work_dirs = [Path(cluster["DEDUP_HBASE_CLUSTER_DIR"]) / "data" / f"worker{i}" / "work" for i in (1, 2)]
        assert pythons and {Path(p["python"]).parents[5] in work_dirs for p in pythons} == {True}, done.stderr[-2000:]
        for found in pythons:  # <worker dir>/<app>/<executor>/<session>/env/bin/python: the artifact, unpacked
            env = Path(found["python"]).parent.parent
            assert env.name == "env" and found["dedup_hbase"] == str(env / "lib/python3.11/site-packages/dedup_hbase/__init__.py")
        cl(cluster, "connect", "stop")  # its application holds every core of the workers
        run(cluster, pip_installed, work, "load", "--store", urls[1], "-q", str(work / "q-base.jsonl"))
        for table in ("index", "docs"):  # the document rows: two simhashes and the sketch, then the metadata
            assert table_cells(urls[0], table, 24) == table_cells(urls[1], table, 24)
        out = f"{cluster['HDFS']}/tmp/check-{os.getpid()}"
        command = ["check", "--store", urls[0], "--out", out, "--add-new", *staging, *spark_args(cluster, work),
                   f"{cluster['HDFS']}/tmp/q-new.jsonl"]
        # once the input is read and fingerprinted: worker 1 killed, then region server 1 while the
        # executors look the fingerprints up in the index (HBase's client in the executors)
        done = with_faults(cluster, pip_installed, work, command, [
            (step_done("read, fingerprint, plan"), "kill", "worker", "1"),
            (step_done("read, fingerprint, plan"), "kill", "regionserver", "1")], restarts)
        outcome, _ = exact_or_one_line(done, lambda: run(cluster, pip_installed, work, *command, check=False), restarts)
        print(f"check with worker 1 and region server 1 killed: {outcome}")
        local_records = check_equals_local(cluster, pip_installed, work, out, "check", urls[1], "q-new.jsonl")
        # the copies of indexed texts were found (500 planted; a half under 200 characters of a longer text is
        # short, and the short-text rule keeps it from its original: 358 found at 328d750)
        assert sum(1 for r in local_records if r.get("matches")) >= 340
        assert sum(any(m.get("signature") == "lead150" for m in r["matches"]) for r in local_records) >= 100
        run(cluster, pip_installed, work, "load", "--store", urls[1], "--skip-near-dups", "--batch-size", "10000", "-q",
            str(work / "q-new.jsonl"))
        for table in ("index", "docs"):
            assert table_cells(urls[0], table, 24) == table_cells(urls[1], table, 24)
    finally:
        restarts.wait()
        cl(cluster, "connect", "stop")
        for url in urls:
            with open_store(url) as store:
                store.drop()


def test_a_region_split_while_the_hfiles_are_written_leaves_the_index_exact(cluster, pip_installed, work, restarts):
    """20,000 documents loaded into an index of 4 regions; once the HFiles are being written (the
    regions were read), the index table's first region split (HBase's Admin, connected before:
    ``scripts/cluster-local admin split``). BulkLoadHFiles must not split the files (HBASE-30501):
    they are refused, and the load cuts them again at the 5 regions of now (a warning says so)
    and loads the index equal, cell for cell, to the local engine's load."""
    records = fingerprint_input(20_000, seed=7)
    write_jsonl(work / "fps20k.jsonl", records)
    hdfs(cluster, "-put", "-f", str(work / "fps20k.jsonl"), "/tmp/fps20k.jsonl")
    urls = [f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("p", "q")]
    for url in urls:
        run(cluster, pip_installed, work, "init", "--store", url, "--regions", "4", "--short-texts", "off")  # fingerprints alone
    go = work / "split-now"
    index_table = table_name(open_store(urls[0]).table_prefix, "index")
    env = clean_env(**{**cluster, "DEDUP_HBASE_PYTHON": os.environ.get("DEDUP_HBASE_PYTHON", sys.executable)})
    split = subprocess.Popen([str(SCRIPT), "admin", "split", index_table, "10", str(go)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    command = ["load", "--store", urls[0], "--fingerprints", *spark_args(cluster, work), "--staging",
               cluster["DEDUP_HBASE_CLUSTER_STAGING"], f"{cluster['HDFS']}/tmp/fps20k.jsonl"]
    try:
        done = with_faults(cluster, pip_installed, work, command,
                           [(lambda log: staged_files(cluster) > 0, go.touch)], restarts)
        assert split.wait(timeout=300) == 0, split.stderr.read()[-3000:]
    finally:
        split.kill()
    assert "4 -> 5 regions" in split.stdout.read()
    assert done.returncode == 0, done.stderr[-4000:]
    assert (f"dedup_hbase.jobs.spark.bulk: the regions of {index_table} changed while the HFiles were written (its files not loaded): cutting "
            "the files again at the regions of now (cut 2 of 3)") in done.stderr.splitlines(), done.stderr[-4000:]
    run(cluster, pip_installed, work, "load", "--store", urls[1], "--fingerprints", "-q", str(work / "fps20k.jsonl"))
    try:
        for table in ("index", "docs"):
            assert table_cells(urls[0], table) == table_cells(urls[1], table)
    finally:
        for url in urls:
            with open_store(url) as store:
                store.drop()


def test_the_service_with_a_region_server_killed_indexes_each_cluster_once(cluster, tmp_path, restarts):
    """tests/test_fleet.py's crawler fleet (three `dedup-hbase serve` processes, six client threads
    sending overlapping ``add?if_new=true`` batches of 200 near-duplicate clusters; a 503 is sent
    again) on the cluster's HBase, region server 1 killed (-9) once 100 documents are indexed:
    every cluster ends with exactly one document indexed."""
    from test_fleet import CLUSTERS, clusters, indexed_per_cluster, run_fleet

    url = f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}f"
    made = subprocess.run(["dedup-hbase", "init", "--store", url, "--regions", "4", "--short-texts", "off"], capture_output=True, text=True,
                          env=clean_env(**cluster))
    assert made.returncode == 0, made.stderr
    assert len(region_servers(url, "index")) == 2
    docs = clusters(22)
    killed = []

    def kill_part_way(procs, clients_running) -> None:
        with open_store(url) as store:
            while clients_running() and len(store.scan_range("docs", b"", None, 100)) < 100:
                time.sleep(0.2)
        assert clients_running()  # part way
        cl(cluster, "kill", "regionserver", "1")
        killed.append(time.monotonic())

    try:
        answers, _ = run_fleet(url, docs, kill_when=kill_part_way)
        assert killed
        indexed = indexed_per_cluster(url, docs)
        assert {c: len(ids) for c, ids in indexed.items()} == {c: 1 for c in range(CLUSTERS)}
        assert sorted(a["id"] for a in answers if a["added"]) == sorted(i for ids in indexed.values() for i in ids)
    finally:
        restarts.start(cluster, "regionserver", "1")
        with open_store(url) as store:
            store.drop()


def test_with_the_master_down_the_index_answers_and_init_says_so_in_one_line(cluster, pip_installed, work):
    """HBase's master killed (-9): ``stats``, ``check`` and ``load`` of an index answer (whether its
    tables exist is read from hbase:meta on a region server, not asked of the master; before,
    ``stats`` ran about 8 minutes before it failed); ``init``, which needs the master, ends after
    its URL's timeout with one line. ``scripts/cluster-local restart master``: ``init`` works."""
    rnd = random.Random(17)
    fps = [{"id": f"m{i}", "simhash": f"{rnd.getrandbits(64):016x}"} for i in range(300)]
    write_jsonl(work / "m-base.jsonl", fps[:200])
    write_jsonl(work / "m-more.jsonl", fps[200:])
    url, other = (f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("m", "n"))
    run(cluster, pip_installed, work, "init", "--store", url, "--regions", "2", "--short-texts", "off")
    run(cluster, pip_installed, work, "load", "--store", url, "--fingerprints", "-q", str(work / "m-base.jsonl"))
    # nothing moving when the master dies: a region the balancer moves then (after the region server
    # a test before restarted, its periodic run may) stays closed until the master is back, and a
    # read of it waits for that (a run of this test once: `stats` without an answer for 2 x 60 s)
    cl(cluster, "admin", "quiet")
    cl(cluster, "kill", "master")
    try:
        stats = json.loads(run(cluster, pip_installed, work, "stats", "--store", url, "--json").stdout)
        assert stats["documents"] == 200
        checked = [json.loads(line) for line in run(cluster, pip_installed, work, "check", "--store", url,
                                                     "--fingerprints", "--json", str(work / "m-base.jsonl")).stdout.splitlines()]
        assert [(r["id"], [m["id"] for m in r["matches"]]) for r in checked] == [(f["id"], [f["id"]]) for f in fps[:200]]
        loaded = json.loads(run(cluster, pip_installed, work, "load", "--store", url, "--fingerprints", "--json", "-q",
                                str(work / "m-more.jsonl")).stdout)
        assert (loaded["indexed"], loaded["new"]) == (100, 100)
        refused = run(cluster, pip_installed, work, "init", "--store", f"{other}&timeout=5000", "--short-texts", "off",
                      check=False)
        port = cluster["DEDUP_HBASE_STORE"].split("admin_port=")[1].split("&")[0]
        assert (refused.returncode, refused.stderr.splitlines()) == (1, [
            f"error: HBase did not create the tables within 5 s (no answer through the Thrift2 gateway at "
            f"127.0.0.1:{port}): creating a table needs HBase's master; is it running? `dedup-hbase init` again "
            "once it is"])
    finally:
        restore(cluster, "master", "")
        cl(cluster, "admin", "balancer", "on")
    run(cluster, pip_installed, work, "init", "--store", other, "--short-texts", "off")
    for each in (url, other):
        with open_store(each) as store:
            store.drop()


def yarn_rest(cluster, path: str) -> dict:
    """GET ``/ws/v1/cluster/PATH`` of YARN's ResourceManager (its REST API), as JSON."""
    with urllib.request.urlopen(f"{cluster['YARN_RESOURCEMANAGER_WEB']}/ws/v1/cluster/{path}", timeout=10) as answer:
        return json.load(answer)


def yarn_nodes_lost(cluster, count: int, timeout: float = 60) -> None:
    """Wait until YARN's ResourceManager has ``count`` NodeManagers as LOST (a silent one is lost
    after 10 s, yarn-site.xml), so that no container goes to a dead node."""
    deadline = time.monotonic() + timeout
    while len(nodes := (yarn_rest(cluster, "nodes?states=LOST")["nodes"] or {}).get("node", [])) != count:
        assert time.monotonic() < deadline, nodes
        time.sleep(0.5)


def yarn_nodemanager_without_the_master(cluster) -> str:
    """The number (1 or 2) of the NodeManager that runs none of the running application's
    master: its executors only."""
    apps = yarn_rest(cluster, "apps?states=RUNNING")["apps"]["app"]
    assert len(apps) == 1, apps
    master = apps[0]["amHostHttpAddress"].rsplit(":", 1)[1]
    webs = {n: cluster[f"YARN_NODEMANAGER{n}_WEB"].rsplit(":", 1)[1] for n in ("1", "2")}
    return next(n for n, port in webs.items() if port != master)


def test_the_three_jobs_on_yarn_with_a_nodemanager_killed_equal_the_local_engine(cluster, pip_installed, work,
                                                                                restarts):
    """The three Spark jobs from the pip-installed venv with ``--spark-master yarn`` on YARN beside
    the cluster (``scripts/cluster-local yarn start``: a ResourceManager and two NodeManagers on
    its HDFS), the packed environment on HDFS (YARN unpacks it once per node, for every job),
    the JVM helper's jars shipped into each container's working folder (``spark.yarn.dist.jars``,
    the executors' class path naming them there). ``load`` of 1,000 news texts with the
    NodeManager that runs executors only killed (-9, its containers with it: a node lost) while the
    HFiles are written: the local engine's cells. Then, with that node still lost (YARN has it as
    LOST; one executor, beside the application master on the node left), ``check --add-new`` of
    900 (halves and copies of loaded texts, new ones): the local engine's records, and the index as
    ``load --skip-near-dups`` leaves it; ``groups`` of both sets: the local engine's files, byte
    for byte, and rows."""
    import pyarrow.parquet as pq

    added_inputs(cluster, work, "y", news(1600, 5), 1000, 150, 150, seed=13)
    hdfs(cluster, "-mkdir", "-p", "/tmp/yarn-env")
    hdfs(cluster, "-put", "-f", str(work / "env.tar.gz"), "/tmp/yarn-env/env.tar.gz")
    urls = [f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("ys", "yl")]
    staging = ["--staging", cluster["DEDUP_HBASE_CLUSTER_STAGING"]]
    assert "YARN ready" in cl(cluster, "yarn", "start")
    try:
        yarn = {**cluster, **read_env(Path(cluster["DEDUP_HBASE_CLUSTER_DIR"]) / "cluster.env")}
        on_yarn = ["--engine", "spark", "--spark-master", "yarn", "--spark-env",
                   f"{cluster['HDFS']}/tmp/yarn-env/env.tar.gz", "--verbose"]
        for url in urls:
            run(cluster, pip_installed, work, "init", "--store", url, "--regions", "4")
        killed = []

        def lose_a_node():
            killed.append(yarn_nodemanager_without_the_master(yarn))
            cl(cluster, "kill", "nodemanager", killed[-1])

        command = ["load", "--store", urls[0], *staging, *on_yarn, f"{cluster['HDFS']}/tmp/y-base.jsonl"]
        done = with_faults(yarn, pip_installed, work, command, [(lambda log: staged_files(cluster) > 0, lose_a_node)],
                           restarts)
        outcome, done = exact_or_one_line(done, lambda: run(yarn, pip_installed, work, *command, check=False), restarts)
        print(f"load on YARN with nodemanager {killed[0]} killed: {outcome}")
        local_dirs = [Path(cluster["DEDUP_HBASE_CLUSTER_DIR"]) / "data" / f"nodemanager{i}" / "local" for i in (1, 2)]
        pythons = [Path(json.loads("{" + line.split("{", 1)[1])["python"]) for line in done.stderr.splitlines()
                   if "executors' Python: {" in line]
        # <local dir>/filecache/<n>/env.tar.gz/bin/python: YARN's public cache of the archive, linked as ./env
        assert pythons and all(any(d in p.parents for d in local_dirs) for p in pythons), done.stderr[-2000:]
        run(cluster, pip_installed, work, "load", "--store", urls[1], "-q", str(work / "y-base.jsonl"))
        for table in ("index", "docs"):
            assert table_cells(urls[0], table, 16) == table_cells(urls[1], table, 16)

        yarn_nodes_lost(yarn, 1)
        on_one_node = [*on_yarn, "--spark-conf", "spark.executor.instances=1"]
        out = f"{cluster['HDFS']}/tmp/ycheck-{os.getpid()}"
        run(yarn, pip_installed, work, "check", "--store", urls[0], "--out", out, "--add-new", *staging, *on_one_node,
            f"{cluster['HDFS']}/tmp/y-new.jsonl")
        local_records = check_equals_local(yarn, pip_installed, work, out, "ycheck", urls[1], "y-new.jsonl")
        assert sum(1 for r in local_records if r.get("matches")) >= 150  # the copies at least
        run(cluster, pip_installed, work, "load", "--store", urls[1], "--skip-near-dups", "--batch-size", "10000", "-q",
            str(work / "y-new.jsonl"))
        for table in ("index", "docs"):
            assert table_cells(urls[0], table, 16) == table_cells(urls[1], table, 16)

        run(yarn, pip_installed, work, "groups", *on_one_node, "--out", f"{cluster['HDFS']}/tmp/ygroups-{os.getpid()}",
            f"{cluster['HDFS']}/tmp/y-base.jsonl", f"{cluster['HDFS']}/tmp/y-new.jsonl")
        run(cluster, pip_installed, work, "groups", "--out", str(work / "ylocal-groups"), str(work / "y-base.jsonl"),
            str(work / "y-new.jsonl"))
        hdfs(cluster, "-get", f"{cluster['HDFS']}/tmp/ygroups-{os.getpid()}", str(work / "yspark-groups"))
        for name in ("groups.jsonl", "dropped.jsonl"):
            assert (work / "yspark-groups" / name).read_text() == (work / "ylocal-groups" / name).read_text(), name
        rows = lambda folder: sorted(pq.read_table(folder / "documents").to_pylist(), key=lambda r: r["id"])
        assert rows(work / "yspark-groups") == rows(work / "ylocal-groups")
        assert sum(r["size"] > 1 for r in rows(work / "ylocal-groups")) >= 300  # the copies and their originals
    finally:
        cl(cluster, "yarn", "stop")
        for url in urls:
            with open_store(url) as store:
                store.drop()
