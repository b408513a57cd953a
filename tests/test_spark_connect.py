"""The Spark engine through Spark Connect: a real Connect server (scripts/connect-local, from the
PySpark wheel, with the JVM helper's jars) and a real HBase; the command run as a user runs it,
``dedup-hbase load --engine spark --spark-remote sc://...``, in a process of its own, whose
index must equal, cell for cell, the local engine's load of the same input, whose groups
the local engine's byte for byte (of texts and of fingerprints), and whose check records (and
``--add-new``'s index) the local engine's; the DataFrame calls (pipelines/spark_frames.py) give
the Arrow batch API's answers. A server started without the
helper's jars is one line; so is a remote beside a master."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from test_groups import parquet_rows, parquet_schema
from test_pipelines_arrow import K, batch_of, planted  # noqa: F401 (a fixture)
from test_spark import documents, hbase_pair, index_cells, local_load_to, sample_docs  # noqa: F401 (a fixture)

from dedup_hbase import Index, open_store

pytestmark = [pytest.mark.spark, pytest.mark.hbase]

REPO = Path(__file__).resolve().parent.parent
PORT, BARE_PORT = 15112, 15113  # beside scripts/connect-local's default (15102)


def connect_local(command: str, port: int, folder: Path, jars: str = "helper") -> str:
    env = {**os.environ, "DEDUP_HBASE_CONNECT_PORT": str(port), "DEDUP_HBASE_CONNECT_DIR": str(folder),
           "DEDUP_HBASE_CONNECT_JARS": jars, "DEDUP_HBASE_PYTHON": sys.executable,
           "DEDUP_HBASE_CONNECT_JIT": "c1"}  # a test's jobs are short (docs/testing.md)
    done = subprocess.run([str(REPO / "scripts" / "connect-local"), command], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Connect server with the helper's jars, on local[2]."""
    folder = tmp_path_factory.mktemp("connect")
    said = connect_local("start", PORT, folder)
    assert said.startswith(f"connect-local: ready: sc://127.0.0.1:{PORT} (master local[2], jars: helper;")
    yield f"sc://127.0.0.1:{PORT}"
    connect_local("stop", PORT, folder)


def dedup_hbase(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    return subprocess.run([str(Path(sys.executable).parent / "dedup-hbase"), *args], capture_output=True, text=True,
                          env=env, timeout=600)


def corpus(folder: Path, near: int = 0) -> Path:
    """300 news texts with an exact copy under a new id, a repeated id (the later wins), a line
    that is not JSON and a record without text; and ``near`` texts again with a character
    added, each under a new id."""
    docs = sample_docs(300, seed=8)
    copy = json.loads(docs[3])
    copy["id"] = "copy-of-3"
    again = json.loads(docs[5])
    again["text"] = again["text"][::-1]
    edited = [{**json.loads(d), "id": f"near-{i}", "text": json.loads(d)["text"] + "。"}
              for i, d in enumerate(docs[10:10 + near])]
    lines = docs + [json.dumps(copy, ensure_ascii=False), json.dumps(again, ensure_ascii=False), "{not json",
                    json.dumps({"id": "empty"})] + [json.dumps(e, ensure_ascii=False) for e in edited]
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n".join(lines[:150]) + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text("\n".join(lines[150:]) + "\n", encoding="utf-8")
    return folder


def test_a_load_through_spark_connect_equals_the_local_engines_cell_for_cell(server, hbase_pair, tmp_path):  # noqa: F811
    connect_url, local_url = hbase_pair
    files = corpus(tmp_path / "in")
    done = dedup_hbase("load", "--store", connect_url, "--engine", "spark", "--spark-remote", server,
                       "--staging", str(tmp_path / "staging"), "--rejects", str(tmp_path / "rejects.jsonl"), "--json",
                       str(files))
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    want = local_load_to(local_url, [files], rejects=tmp_path / "local-rejects.jsonl")
    assert (got["read"], got["indexed"], got["rejected"], got["new"]) == (
        want["read"], want["indexed"], want["rejected"], want["new"]) == (304, 302, 2, 301)
    assert (tmp_path / "rejects.jsonl").read_bytes() == (tmp_path / "local-rejects.jsonl").read_bytes()
    assert index_cells(connect_url) == index_cells(local_url)
    assert len(index_cells(connect_url)) == 4 * 301
    assert documents(connect_url) == documents(local_url)
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))
    again = dedup_hbase("load", "--store", connect_url, "--engine", "spark", "--spark-remote", server, "--json",
                        str(files))
    assert again.returncode == 0 and json.loads(again.stdout)["already_complete"]


def test_check_and_add_new_through_spark_connect_equal_the_local_engines(server, hbase_pair, tmp_path):  # noqa: F811
    """``check --engine spark --add-new`` through Connect on an index holding half the corpus:
    the records of the local check of the same index, then the index of ``load
    --skip-near-dups`` of the same input; the lookup's probes (``--out``/_lookup) gone."""
    from test_spark_check import json_records, load_local, local_records, same_records

    connect_url, local_url = hbase_pair
    base = tmp_path / "base.jsonl"
    base.write_text("\n".join(sample_docs(300, seed=8)[:150]) + "\n", encoding="utf-8")
    for url in hbase_pair:
        local_load_to(url, [base])
    lines = [line for f in sorted(corpus(tmp_path / "in", near=20).iterdir()) for line in f.read_text("utf-8").splitlines()]
    given = tmp_path / "check.jsonl"
    given.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = dedup_hbase("check", "--store", connect_url, "--engine", "spark", "--spark-remote", server, "--out",
                       str(tmp_path / "out"), "--add-new", "--json", str(given))
    assert done.returncode == 0, done.stderr
    expected = local_records(local_url, given, fingerprints=False)
    assert sum(1 for r in expected if r.get("matches")) >= 150 + 20  # the copies of the indexed half, the near texts
    same_records(json_records(tmp_path / "out"), expected)
    local = load_local(local_url, given, fingerprints=False, skip_near_dups=True)
    report = json.loads(done.stdout)
    assert (report["added"], report["near_duplicates_skipped"]) == (local["indexed"], local["near_duplicates_skipped"])
    assert index_cells(connect_url) == index_cells(local_url)
    assert documents(connect_url) == documents(local_url)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["json", "parquet"]


def test_groups_through_spark_connect_equal_the_local_engines_byte_for_byte(server, tmp_path):
    files = corpus(tmp_path / "in", near=20)
    on_connect = dedup_hbase("groups", "--engine", "spark", "--spark-remote", server, "--out", str(tmp_path / "c"),
                             "--json", str(files))
    assert on_connect.returncode == 0, on_connect.stderr
    local = dedup_hbase("groups", "--out", str(tmp_path / "l"), "--json", str(files))
    assert local.returncode == 0, local.stderr
    strip = lambda said: {k: v for k, v in json.loads(said).items() if k not in ("elapsed_s", "engine", "out")}
    assert strip(on_connect.stdout) == strip(local.stdout)
    assert json.loads(local.stdout)["to_drop"] == 21  # the copy and the 20 near texts
    for name in ("groups.jsonl", "dropped.jsonl"):
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "l" / name).read_bytes()
    assert parquet_rows(tmp_path / "c") == parquet_rows(tmp_path / "l")
    assert parquet_schema(tmp_path / "c") == parquet_schema(tmp_path / "l")
    assert not [p.name for p in (tmp_path / "c").iterdir() if p.name.startswith(("_", "."))]  # nothing left staged


def test_groups_of_fingerprints_through_spark_connect_equal_the_local_engines(server, tmp_path):
    """groups --fingerprints through Connect: JSON lines of fingerprints (every kind of bad
    record among them, test_spark.fingerprint_lines) read by the helper's data source on the
    server, with near copies planted at 1 and 3 bits: the local engine's outputs byte for byte."""
    from test_spark import fingerprint_lines

    rnd = random.Random(4)
    lines = fingerprint_lines("jieba/2;seed=0", n=2000, seed=4)  # the default featurizer's label
    for i, line in enumerate(rnd.sample(lines[:2000], 40)):
        record = json.loads(line)
        flipped = int(record["simhash"], 16)
        for bit in rnd.sample(range(64), 3 if i % 2 else 1):
            flipped ^= 1 << bit
        lines.append(json.dumps({"id": f"near-{i}", "simhash": f"{flipped:016x}"}))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("\n".join(lines[:1000]) + "\n", encoding="utf-8")
    (tmp_path / "in" / "b.jsonl").write_text("\n".join(lines[1000:]) + "\n", encoding="utf-8")
    said = {}
    for name, engine in (("c", ["--engine", "spark", "--spark-remote", server]), ("l", [])):
        done = dedup_hbase("groups", *engine, "--fingerprints", "--out", str(tmp_path / name), "--json",
                           "--rejects", str(tmp_path / f"{name}.rejects"), str(tmp_path / "in"))
        assert done.returncode == 0, done.stderr
        said[name] = {k: v for k, v in json.loads(done.stdout).items() if k not in ("elapsed_s", "engine", "out")}
    assert said["c"] == said["l"] and said["l"]["rejected"] > 10 and said["l"]["to_drop"] >= 40
    for name in ("groups.jsonl", "dropped.jsonl"):
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "l" / name).read_bytes()
    assert (tmp_path / "c.rejects").read_bytes() == (tmp_path / "l.rejects").read_bytes()


LIST_THROUGH_CONNECT = """
import json, sys
from dedup_hbase.errors import InvalidInput
from dedup_hbase.jobs.spark.files import list_files
from dedup_hbase.jobs.spark.connect import connect_session
session = connect_session(sys.argv[1], {})
try:
    list_files(session, sys.argv[3])
except InvalidInput as e:
    missing = str(e)
print(json.dumps([list_files(session, sys.argv[2]), missing]))
session.stop()
"""


FRAMES_THROUGH_CONNECT = """
import json, sys
from pyspark.sql import SparkSession
from dedup_hbase.pipelines import spark_frames

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
rows = json.loads(open(sys.argv[2], encoding="utf-8").read())
df = spark.createDataFrame([(n, i, t) for n, (i, t) in enumerate(rows)], "n long, id string, text string")
plain = lambda r: {k: [m.asDict() for m in v] if isinstance(v, list) else v for k, v in r.asDict().items()}
found = [[plain(r) for r in spark_frames.fingerprints(df).orderBy("n").collect()],
         [plain(r) for r in spark_frames.groups(df.where("id is not null"), k=3).collect()],
         [plain(r) for r in spark_frames.check(df, sys.argv[3], staging=sys.argv[4]).collect()]]
print(json.dumps(found))
spark.stop()
"""


def test_the_dataframe_calls_through_connect_are_the_arrow_apis(server, hbase_pair, planted, tmp_path):  # noqa: F811
    """spark_frames' fingerprints, groups and check (of an HBase index) through a Connect session
    (a process of its own): row for row the Arrow batch API's answers, as in a classic session
    (tests/test_spark_frames.py)."""
    from test_spark_frames import signed

    from dedup_hbase.index.index import Document
    from dedup_hbase.pipelines import arrow

    indexed, queries, simhash = planted
    url = hbase_pair[0]
    index = Index.open(open_store(url))
    index.add_many([Document(i, simhash[t]) for i, t in indexed])
    (tmp_path / "rows.json").write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", FRAMES_THROUGH_CONNECT, server, str(tmp_path / "rows.json"), url,
                           str(tmp_path / "staging")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    printed, grouped, checked = json.loads(done.stdout.strip().splitlines()[-1])
    batch = batch_of(queries)
    want = arrow.fingerprints(batch).to_pylist()
    assert printed == [{"n": n, **w, "simhash": signed(w["simhash"])} for n, w in enumerate(want)]
    named = [(i, t) for i, t in queries if i is not None]
    want = arrow.groups([batch_of(named)], k=K).to_pylist()
    columns = ("id", "group", "size", "keep", "via", "distance", "error")
    assert [tuple(r[c] for c in columns) for r in grouped] == [tuple(w[c] for c in columns) for w in want]
    want = arrow.check(batch, index).to_pylist()
    assert [(r["n"], r["simhash"], r["error"], r["matches"], r["match_count"]) for r in checked] == [
        (n, signed(w["simhash"]), w["error"], w["matches"], w["match_count"]) for n, w in enumerate(want)]
    assert sum(bool(w["matches"]) for w in want) > 100


def test_remote_inputs_are_listed_through_connect(server, tmp_path):
    """files.list_files through a Connect session (in a process of its own: PySpark's Connect
    client, once used, leaves a process unable to start a classic session): the listing of
    test_spark_fixed_cost's tree, by the server's file index."""
    from test_spark_fixed_cost import listing_tree

    expected = listing_tree(tmp_path / "in")
    done = subprocess.run([sys.executable, "-c", LIST_THROUGH_CONNECT, server, f"file://{tmp_path}/in",
                           f"file://{tmp_path}/nothing"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    listed, missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert [tuple(f) for f in listed] == expected
    assert missing == f"file://{tmp_path}/nothing: no such file or folder"


# a job's session whose server stops before the job ends: the session's stop returns at once (the
# client's release is retried for a second, not ten minutes), and so does the process's exit
SESSION_OUTLIVED = """
import sys
from dedup_hbase.jobs.spark.connect import connect_session
from dedup_hbase.jobs.spark.session import stop
spark = connect_session(sys.argv[1], {})
print("connected", flush=True)
sys.stdin.readline()  # the server stopped meanwhile
stop(spark)
print("stopped", flush=True)
"""


def test_a_connect_server_without_the_helpers_jars_is_one_line_and_a_session_outlived_stops(hbase_pair,  # noqa: F811
                                                                                             tmp_path):
    connect_local("start", BARE_PORT, tmp_path / "bare", jars="none")
    try:
        done = dedup_hbase("load", "--store", hbase_pair[0], "--engine", "spark", "--spark-remote",
                           f"sc://127.0.0.1:{BARE_PORT}", str(corpus(tmp_path / "in")))
        session = subprocess.Popen([sys.executable, "-c", SESSION_OUTLIVED, f"sc://127.0.0.1:{BARE_PORT}"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert session.stdout.readline() == "connected\n"
    finally:
        connect_local("stop", BARE_PORT, tmp_path / "bare")
    out, err = session.communicate("\n", timeout=120)
    assert (session.returncode, out) == (0, "stopped\n"), err[-2000:]
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the Spark session of sc://127.0.0.1:{BARE_PORT} lacks dedup-hbase's JVM helper (the data source "
        "dedup-hbase-regions is not on its class path): start the server with the helper's jars on its driver's "
        "and executors' class path (scripts/connect-local does; docs/spark.md#spark-connect)")
    assert index_cells(hbase_pair[0]) == set()


@pytest.mark.parametrize("args, said", [
    (["load", "--store", "memory:", "--engine", "spark", "--spark-master", "local[2]", "--spark-remote",
      "sc://127.0.0.1:1", "x.jsonl"],
     "give --spark-master or --spark-remote (or SPARK_REMOTE), not both: a Spark Connect server runs its jobs on "
     "its own master"),
    (["load", "--store", "memory:", "--engine", "spark", "--spark-remote", "127.0.0.1:1", "x.jsonl"],
     "a Spark Connect server is sc://HOST:PORT, not '127.0.0.1:1'"),
    # nothing listens there: at once, not after the client's retries, and the process exits (the
    # client's exit hook would call the server again, retrying for ten minutes: the timeout below)
    (["groups", "--engine", "spark", "--spark-remote", "sc://127.0.0.1:1", "IN", "--out", "o"],
     "error: the Spark Connect server at sc://127.0.0.1:1 does not answer: cannot connect to 127.0.0.1:1 "
     "(Connection refused)"),
    # a missing local input before the server is called (it does not answer either)
    (["groups", "--engine", "spark", "--spark-remote", "sc://127.0.0.1:1", "x.jsonl", "--out", "o"],
     "error: no such file or folder: x.jsonl"),
])
def test_what_does_not_run_through_connect_is_refused_in_one_line(args, said, tmp_path):
    (tmp_path / "IN").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    done = subprocess.run([str(Path(sys.executable).parent / "dedup-hbase"), *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr.strip().splitlines()[-1]


def test_a_port_that_is_no_connect_server_is_one_line_at_once(tmp_path):
    """An HTTP server where a Connect server was expected accepts the connection and answers no
    gRPC: said after the first call's short retries (about a second), with the settings given;
    before, the client retried that call for about ten minutes (the timeout below)."""
    import http.server
    import threading

    (tmp_path / "IN").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    remote = f"sc://127.0.0.1:{httpd.server_address[1]}"
    try:
        done = subprocess.run([str(Path(sys.executable).parent / "dedup-hbase"), "groups", "--engine", "spark",
                               "--spark-remote", remote, "--spark-conf", "spark.sql.shuffle.partitions=3", "IN",
                               "--out", "o"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    finally:
        httpd.shutdown()
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: the Spark Connect server at {remote} does not answer: "), last
    assert "Failed parsing HTTP/2" in last
