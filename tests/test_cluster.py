"""The Spark jobs on a real cluster of separate processes on this host (scripts/cluster-local:
HDFS with 2 DataNodes, HBase with 2 region servers on it, Spark standalone with 2 workers,
started and stopped by this module), run as a user runs them: from a virtualenv made by
``pip install`` of the project (conftest.py's ``pip_installed``, not the checkout's), in another
folder, with the executors' Python environment packed by ``dedup-hbase pack-env`` and shipped
with each job (``--spark-env``). Inputs and outputs on HDFS, HFiles staged on HDFS.

* without the packed environment a job stops with one line;
* the executors run the shipped Python (a task reports ``sys.executable``: inside the archive
  unpacked in its working folder), and ``groups`` gives the local engine's output;
* a load of 10^5 documents with a Spark worker killed (-9) part way: the index equal, cell for
  cell, to the local engine's load of the same input; the index's regions on both region
  servers;
* ``check --add-new`` (on the one worker left): the local engine's records, and the index
  then as ``load --skip-near-dups`` leaves it.

DEDUP_HBASE_TEST_CLUSTER_DIR / _PORT: the cluster's folder and base port (default
<repo>/.cluster-test, 24660); DEDUP_HBASE_TEST_CLUSTER_ENV=FILE: use the running cluster of
that cluster.env instead (not started, not stopped; its worker 1 is killed).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
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
def cluster(cluster_start, pip_installed):
    """The running cluster's cluster.env (and what scripts/cluster-local needs), once both the
    cluster and the pip-installed virtualenv are ready (they are made side by side)."""
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


def on_cluster(cluster, venv: Path, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(cluster, venv, cwd, *args, "--engine", "spark", "--spark-master", cluster["SPARK_MASTER"],
               "--spark-env", str(cwd / "env.tar.gz"), "--verbose", check=check)


def news(n: int, step: int) -> list[dict]:
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [{"id": r["id"], "text": r["text"]} for r in records[::step][:n]]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_without_the_packed_environment_a_job_stops_with_one_line(cluster, pip_installed, work):
    write_jsonl(work / "few.jsonl", news(5, 1))
    hdfs(cluster, "-put", "-f", str(work / "few.jsonl"), "/tmp/few.jsonl")
    done = run(cluster, pip_installed, work, "groups", "--engine", "spark", "--spark-master", cluster["SPARK_MASTER"],
               "--out", f"{cluster['HDFS']}/tmp/few-groups", f"{cluster['HDFS']}/tmp/few.jsonl", check=False)
    ours = [line for line in done.stderr.splitlines() if not line.startswith("WARNING: ")]  # the JVM's
    assert (done.returncode, ours) == (1, [
        "error: the Spark executors cannot run dedup-hbase (No module named 'dedup_hbase'): ship an environment "
        "made by `dedup-hbase pack-env ARCHIVE` with --spark-env ARCHIVE"]), done.stderr[-3000:]


def test_groups_on_the_cluster_run_the_shipped_python_and_equal_the_local_engine(cluster, pip_installed, work):
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = news(3000, 6)
    pq.write_table(pa.Table.from_pylist(records), work / "news.parquet")
    hdfs(cluster, "-put", "-f", str(work / "news.parquet"), "/tmp/news.parquet")
    done = on_cluster(cluster, pip_installed, work, "groups", "--out", f"{cluster['HDFS']}/tmp/news-groups",
                      f"{cluster['HDFS']}/tmp/news.parquet")
    pythons = [json.loads("{" + line.split("{", 1)[1]) for line in done.stderr.splitlines()
               if "executors' Python: {" in line]
    work_dirs = [Path(cluster["DEDUP_HBASE_CLUSTER_DIR"]) / "data" / f"worker{i}" / "work" for i in (1, 2)]
    assert pythons and {Path(p["python"]).parents[4] in work_dirs for p in pythons} == {True}, done.stderr[-2000:]
    for found in pythons:  # <worker dir>/<app>/<executor>/env/bin/python: the archive, unpacked there
        env = Path(found["python"]).parent.parent
        assert env.name == "env" and found["dedup_hbase"] == str(env / "lib/python3.11/site-packages/dedup_hbase/__init__.py")
    run(cluster, pip_installed, work, "groups", "--out", str(work / "local-groups"), str(work / "news.parquet"))
    hdfs(cluster, "-get", f"{cluster['HDFS']}/tmp/news-groups", str(work / "spark-groups"))
    for name in ("groups.jsonl",):
        assert sorted((work / "spark-groups" / name).read_text().splitlines()) == \
            sorted((work / "local-groups" / name).read_text().splitlines())
    rows = lambda folder: sorted(pq.read_table(folder / "documents").to_pylist(), key=lambda r: r["id"])
    assert rows(work / "spark-groups") == rows(work / "local-groups")
    assert any(r["size"] > 1 for r in rows(work / "local-groups"))  # near-duplicates were there to find


def fingerprint_input(n: int, seed: int = 5) -> tuple[list[dict], list[dict]]:
    """n --fingerprints records: 3,000 news texts' own fingerprints, near variants (1 to 4 bits)
    of them and of random ones, random fill, a few ids repeated (the last wins); and the news
    records for a check (1,000 of the indexed texts under other ids, 500 not indexed)."""
    rnd = random.Random(seed)
    texts = news(4500, 4)
    fp = make_fingerprinter()
    hashes = [fp.fingerprint(r["text"]) for r in texts[:3000]]
    records = [{"id": r["id"], "simhash": f"{h:016x}"} for r, h in zip(texts[:3000], hashes)]
    while len(records) < n:
        base = rnd.choice(hashes) if rnd.random() < 0.3 else rnd.getrandbits(64)
        for bit in rnd.sample(range(64), rnd.randint(0, 4)):
            base ^= 1 << bit
        records.append({"id": f"r{len(records)}", "simhash": f"{base:016x}"})
    for i in range(0, 300, 3):  # an id again, later, another fingerprint: it wins
        records.append({"id": records[i]["id"], "simhash": f"{rnd.getrandbits(64):016x}"})
    probes = [{"id": f"again-{r['id']}", "text": r["text"]} for r in texts[:1000]] + texts[3000:]
    return records, probes


def table_cells(url: str, table: str) -> dict[tuple[bytes, bytes], bytes]:
    """Every cell of one of an index's HBase tables (index, docs): (row, column) -> value; a
    document's load time left out of its value, its source file named without its folder (the
    same file, read from HDFS by one engine and from this machine by the other)."""
    import happybase

    store = open_store(url)
    connection = happybase.Connection(store.host, store.port)
    try:
        cells = {}
        for row, columns in connection.table(table_name(store.table_prefix, table)).scan(batch_size=5000):
            for column, value in columns.items():
                if table == "docs" and len(value) > 8:
                    meta = json.loads(value[8:])
                    meta.pop("loaded", None)
                    meta["source"] = meta["source"].rsplit("/", 1)[-1]
                    value = value[:8] + json.dumps(meta, sort_keys=True).encode()
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
def loaded(cluster, pip_installed, work):
    """10^5 documents loaded on the cluster (a worker killed -9 while the HFiles are written)
    and by the local engine, each into its own index: (spark URL, local URL, the check's
    news records)."""
    records, probes = fingerprint_input(100_000)
    write_jsonl(work / "fps.jsonl", records)
    hdfs(cluster, "-put", "-f", str(work / "fps.jsonl"), "/tmp/fps.jsonl")
    urls = [f"{cluster['DEDUP_HBASE_STORE']}&table_prefix=cl{os.getpid()}{name}" for name in ("s", "l")]
    for url in urls:
        run(cluster, pip_installed, work, "init", "--store", url, "--regions", "8")
    command = [str(pip_installed / "bin" / "dedup-hbase"), "load", "--store", urls[0], "--fingerprints", "--engine",
               "spark", "--spark-master", cluster["SPARK_MASTER"], "--spark-env", str(work / "env.tar.gz"),
               "--staging", cluster["DEDUP_HBASE_CLUSTER_STAGING"], "--json", f"{cluster['HDFS']}/tmp/fps.jsonl"]
    with open(work / "load.err", "w") as err:
        load = subprocess.Popen(command, cwd=work, env=clean_env(**cluster), stdout=subprocess.PIPE, stderr=err,
                                text=True)
        while staged_files(cluster) == 0:  # the HFiles are being written
            assert load.poll() is None, (work / "load.err").read_text()[-3000:]
            time.sleep(0.3)
        subprocess.run([str(SCRIPT), "kill", "worker", "1"], env=clean_env(**cluster), check=True, capture_output=True)
        assert load.poll() is None  # part way
        out, _ = load.communicate(timeout=900)
    assert load.returncode == 0, (work / "load.err").read_text()[-4000:]
    spark_report = json.loads(out)
    local_report = json.loads(run(cluster, pip_installed, work, "load", "--store", urls[1], "--fingerprints", "--json",
                                  "-q", str(work / "fps.jsonl")).stdout)
    # ("replaced": the local engine counts an id of an earlier batch of the same load, 100 here;
    # the Spark load keeps the last record of each id before it writes: 0)
    numbers = lambda r: (r["read"], r["indexed"], r["new"], r["rejected"])
    assert numbers(spark_report) == numbers(local_report) == (100_100, 100_100, 100_000, 0), (spark_report,
                                                                                             local_report)
    yield urls[0], urls[1], probes
    for url in urls:
        with open_store(url) as store:
            store.drop()


def test_a_load_with_a_worker_killed_equals_the_local_engines_cell_for_cell(loaded):
    spark_url, local_url, _ = loaded
    for table in ("index", "docs"):
        cells = table_cells(spark_url, table)
        assert len(cells) == (400_000 if table == "index" else 100_000)
        assert cells == table_cells(local_url, table)
    assert len(region_servers(spark_url, "index")) == 2


def test_check_add_new_on_the_cluster_equals_the_local_engine(cluster, pip_installed, work, loaded):
    spark_url, local_url, probes = loaded
    write_jsonl(work / "probes.jsonl", probes)
    hdfs(cluster, "-put", "-f", str(work / "probes.jsonl"), "/tmp/probes.jsonl")
    out = f"{cluster['HDFS']}/tmp/check-{os.getpid()}"
    on_cluster(cluster, pip_installed, work, "check", "--store", spark_url, "--out", out, "--add-new", "--staging",
               cluster["DEDUP_HBASE_CLUSTER_STAGING"], f"{cluster['HDFS']}/tmp/probes.jsonl")
    hdfs(cluster, "-get", out, str(work / "check"))
    spark_records = [json.loads(line) for f in sorted((work / "check" / "json").glob("*.jsonl"))
                     for line in f.read_text(encoding="utf-8").splitlines()]
    local = run(cluster, pip_installed, work, "check", "--store", local_url, "--json", str(work / "probes.jsonl"))
    local_records = [json.loads(line) for line in local.stdout.splitlines()]
    key = lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False)
    assert sorted(map(key, spark_records)) == sorted(map(key, local_records))
    assert sum(1 for r in local_records if r.get("matches")) >= 1000  # the indexed texts were found
    run(cluster, pip_installed, work, "load", "--store", local_url, "--skip-near-dups", "--batch-size", "10000", "-q",
        str(work / "probes.jsonl"))
    for table in ("index", "docs"):
        assert table_cells(spark_url, table) == table_cells(local_url, table)
