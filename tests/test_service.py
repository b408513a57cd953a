"""The dedup service, a real `dedup-hbase serve` process on loopback, driven by a real HTTP
client, on the embedded store and on the real HBase: the same answers as `check --json`,
insert-if-new exact under concurrent clients, and a 4xx for every kind of bad input without
the service ever stopping."""

import gzip
import json
import os
import random
import signal
import subprocess
import threading
from contextlib import contextmanager

import httpx
import pytest

# the service's indexes without the short-text rule (the default's: test_short_index.py tests the
# service under it): these tests add and look up documents by their simhash alone
NO_SHORT = ("--short-texts", "off")


def cli(*args, input=None):
    result = subprocess.run(["dedup-hbase", *args], capture_output=True, text=True, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextmanager
def serving(store_url, *options):
    """`dedup-hbase serve --port 0` running; yields (client, the process); SIGTERM at the end."""
    proc = subprocess.Popen(["dedup-hbase", "serve", "--store", store_url, "--port", "0", *options],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert line.startswith("serving "), line + proc.stderr.read()
    url = line.split(" on ", 1)[1].split(" ", 1)[0]
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0 and rest.strip().endswith("stopped by SIGTERM"), rest


def run_clients(client, count: int) -> None:
    """``client(i)`` for i in range(count), each on its own thread, all at once; the first
    exception a thread raised is raised here (an assertion in a thread alone only warns)."""
    failures = []

    def run(i: int) -> None:
        try:
            client(i)
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


@pytest.fixture(scope="module")
def news(xwlb_path):
    rnd = random.Random(21)
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    return rnd.sample(docs, 3000)


def test_answers_equal_check_json(store_url, news, tmp_path):
    corpus, probes = tmp_path / "corpus.jsonl", tmp_path / "probes.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in news[:2500]), encoding="utf-8")
    rnd = random.Random(3)
    sample = rnd.sample(news, 400)  # 5 in 6 indexed, the others not
    probes.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in sample), encoding="utf-8")
    cli("init", "--store", store_url, *NO_SHORT)
    cli("load", "--store", store_url, str(corpus), "-q")
    expected = [json.loads(line) for line in cli("check", "--store", store_url, str(probes), "--json").splitlines()]
    assert sum(len(e["matches"]) > 0 for e in expected) >= 300  # the test compares real matches
    with serving(store_url) as (client, _):
        got = []
        for start in range(0, len(sample), 100):
            batch = [{"id": d["id"], "text": d["text"]} for d in sample[start:start + 100]]
            response = client.post("/v1/check", json=batch)
            assert response.status_code == 200, response.text
            got += response.json()
        assert got == expected
        by_simhash = client.post("/v1/check", json=[{"id": e["id"], "simhash": e["simhash"]} for e in expected[:50]])
        assert by_simhash.json() == expected[:50]


def clusters(seed: int, count: int = 40, members: int = 5):
    """Near-duplicate clusters: members within 1 bit of their base (within 2 of each other),
    bases far apart. Returns {doc id: (cluster, simhash)}."""
    rnd = random.Random(seed)
    docs = {}
    for c in range(count):
        base = rnd.getrandbits(64)
        for m in range(members):
            docs[f"c{c:02d}-m{m}"] = (c, base if m == 0 else base ^ (1 << rnd.randrange(64)))
    return docs


def test_if_new_under_concurrent_clients_adds_each_cluster_once(store_url):
    cli("init", "--store", store_url, *NO_SHORT)
    docs = clusters(7)
    ids = list(docs)
    with serving(store_url) as (client, _):
        answers, lock = [], threading.Lock()

        def client_thread(seed: int) -> None:
            rnd = random.Random(seed)
            with httpx.Client(base_url=str(client.base_url), timeout=120) as mine:
                for _ in range(10):  # overlapping batches: the same documents from several threads
                    batch = [{"id": i, "simhash": f"{docs[i][1]:016x}"} for i in rnd.sample(ids, 20)]
                    response = mine.post("/v1/add?if_new=true", json=batch)
                    assert response.status_code == 200, response.text
                    with lock:
                        answers.extend(response.json())

        run_clients(client_thread, 8)
        assert len(answers) == 8 * 10 * 20
        final = client.post("/v1/add?if_new=true", json=[{"id": i, "simhash": f"{docs[i][1]:016x}"} for i in ids])
        answers += final.json()
        added = [a["id"] for a in answers if a["added"]]
        assert final.status_code == 200 and not any(a["added"] for a in final.json())  # the threads added every cluster
        assert sorted(docs[i][0] for i in added) == list(range(40))  # every cluster added once, no more
        for a in answers:
            if not a["added"]:
                assert a["matches"] and {docs[m["id"]][0] for m in a["matches"]} == {docs[a["id"]][0]}
        stats = client.get("/v1/stats?full=true").json()
        assert stats["index"]["documents"] == 40 and stats["index"]["index_cells"] == 160
        stored = [client.get(f"/v1/docs/{i}") for i in added]
        assert [r.json()["simhash"] for r in stored] == [f"{docs[i][1]:016x}" for i in added]


def test_upsert_get_and_delete(store_url):
    cli("init", "--store", store_url, *NO_SHORT)
    with serving(store_url) as (client, _):
        two = [{"id": "a", "simhash": "00000000000000ff"}, {"id": "b", "simhash": "00000000000000fe"}]
        assert [a["added"] for a in client.post("/v1/add", json=two).json()] == [True, True]  # no if_new
        again = client.post("/v1/add?if_new=true", json=[two[0]]).json()
        assert again == [{"id": "a", "simhash": "00000000000000ff", "added": False, "matches": [
            {"id": "a", "simhash": "00000000000000ff", "distance": 0},
            {"id": "b", "simhash": "00000000000000fe", "distance": 1}]}]
        assert client.get("/v1/docs/a").json()["simhash"] == "00000000000000ff"
        assert client.delete("/v1/docs/a").json() == {"deleted": "a"}
        assert client.get("/v1/docs/a").status_code == 404
        assert client.delete("/v1/docs/a").json() == {"error": "no document 'a'"}
        assert [m["id"] for m in client.post("/v1/check", json=[two[0]]).json()[0]["matches"]] == ["b"]
        assert client.get("/healthz").json() == {"ok": True}


BAD = [
    (b"{not json", 400, "the body is not JSON"),
    (b'{"id": "a", "text": "x"}', 400, "the body is a JSON array of documents, not a JSON object"),
    (b'["a"]', 400, "document 0: a document is a JSON object, not a JSON string"),
    (b'[{"text": "x"}]', 400, "document 0: no id (a string or a whole number)"),
    (b'[{"id": 1.5, "text": "x"}]', 400, "document 0: bad 'id': 1.5 is a fraction (an id is a string or a whole number)"),
    (b'[{"id": null, "text": "x"}]', 400, "document 0: 'id' is null"),
    (b'[{"id": "", "text": "x"}]', 400, "document 0: 'id' is empty"),
    (json.dumps([{"id": "x" * 10_000, "text": "x"}]).encode(), 400,
     "document 0: document id longer than 1024 bytes: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (10,000 characters)"),
    (b'[{"id": "ok", "text": "x"}, {"id": "b"}]', 400, "document 1 ('b'): give its text or its simhash"),
    (b'[{"id": "b", "text": "x", "simhash": "00000000000000ff"}]', 400,
     "document 0 ('b'): give its text or its simhash, not both"),
    (b'[{"id": "b", "simhash": "xyz"}]', 400, "document 0 ('b'): the simhash is 16 hex digits, not 'xyz'"),
    (b'[{"id": "b", "text": ["x"]}]', 400, "document 0 ('b'): the text is a JSON array, not a string"),
    (json.dumps([{"id": "big", "text": "长" * 400}]).encode(), 413,
     "document 0 ('big'): the text is 1,200 bytes, over the limit of 1,000"),
    (json.dumps([{"id": str(i), "simhash": "00000000000000ff"} for i in range(6)]).encode(), 413,
     "a request holds at most 5 documents, not 6"),
    (b"[" + b" " * 30_000 + b"]", 413, "the body is 30,002 bytes, over the limit of 20,000"),
]


def test_every_kind_of_bad_input_gets_its_4xx_and_the_service_keeps_answering(store_url):
    cli("init", "--store", store_url, *NO_SHORT)
    with serving(store_url, "--max-docs", "5", "--max-text-bytes", "1000", "--max-body-bytes", "20000") as (client, proc):
        for body, status, message in BAD:
            for path in ("/v1/check", "/v1/add?if_new=true"):
                response = client.post(path, content=body, headers={"content-type": "application/json"})
                assert (response.status_code, response.json()["error"][:len(message)]) == (status, message), body[:60]
                assert len(response.content) < 500  # no input echoed whole (a 10,000-character id)
        named = client.post("/v1/add", json=[{"id": "ok", "text": "x"}, {"id": "b"}]).json()
        assert (named["document"], named["id"]) == (1, "b")
        assert client.post("/v1/add?if_new=maybe", json=[]).json() == {"error": "if_new is true or false, not 'maybe'"}
        assert client.get("/v1/nothing").status_code == 404 and client.put("/v1/check").status_code == 405
        assert client.get("/v1/docs/none").status_code == 404
        featureless = client.post("/v1/add?if_new=true", json=[{"id": "f", "text": "!!!"}]).json()
        assert featureless == [{"id": "f", "added": False, "error": "featureless text: no features (only punctuation, "
                                "white space, stop words or single characters)"}]
        assert client.get("/healthz").json() == {"ok": True} and proc.poll() is None
        assert client.get("/v1/stats").json()["server"]["refused"] == 2 * len(BAD) + 3
        # nothing of the refused requests was written
        assert client.get("/v1/stats?full=true").json()["index"]["documents"] == 0


def test_the_service_starts_no_process_that_could_outlive_it(tmp_path):
    """Requests are served by threads of the one process: no child exists to be orphaned."""
    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    with serving(store) as (client, proc):
        assert client.post("/v1/add", json=[{"id": "a", "text": "长江经济带生态环境保护"}]).status_code == 200
        children = [entry for entry in os.listdir("/proc") if entry.isdigit() and _parent(entry) == proc.pid]
        assert children == []


def _parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def test_check_query_and_stats_read_a_store_that_serve_holds(tmp_path):
    """The embedded store has one writer (the server); other processes read it read-only, as
    of their opening, with the index's unmerged writes merged in memory; writers are refused."""
    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    docs = clusters(8, count=120)  # 600 documents: 2,400 index cells, more than one direct write
    ids = list(docs)
    with serving(store) as (client, _):
        small = client.post("/v1/add", json=[{"id": i, "simhash": f"{docs[i][1]:016x}"} for i in ids[:5]])
        big = client.post("/v1/add", json=[{"id": i, "simhash": f"{docs[i][1]:016x}"} for i in ids[5:500]])
        assert small.status_code == big.status_code == 200  # the big one is left as unmerged runs
        probes = tmp_path / "probes.jsonl"
        probes.write_text("".join(json.dumps({"id": f"p-{i}", "simhash": f"{docs[i][1]:016x}"}) + "\n"
                                  for i in ids), encoding="utf-8")
        found = [json.loads(line) for line in cli("check", "--store", store, str(probes), "--json").splitlines()]
        expected = client.post("/v1/check", json=[{"id": f"p-{i}", "simhash": f"{docs[i][1]:016x}"} for i in ids]).json()
        assert found == expected and sum(bool(f["matches"]) for f in found) >= 500
        queried = json.loads(cli("query", "--store", store, "--simhash", f"{docs[ids[0]][1]:016x}", "--json"))
        assert ids[0] in [m["id"] for m in queried["matches"]]
        stats = json.loads(cli("stats", "--store", store, "--json"))
        assert stats["documents"] == 500 and stats["index_cells"] == 2000
        writer = subprocess.run(["dedup-hbase", "delete", "--store", store, ids[0]], capture_output=True, text=True)
        assert writer.returncode != 0 and "in use by another process" in writer.stderr, writer.stderr
        assert client.get(f"/v1/docs/{ids[0]}").status_code == 200


def test_a_second_serve_or_load_on_a_held_embedded_store_is_refused_at_start(tmp_path):
    """One writer: a second ``serve`` (or ``load``) on an embedded store another ``serve`` holds
    ends at start with one line and status 1, rather than serving and answering every add 503."""
    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "simhash": "5ddcd9e58abddc86"}\n', encoding="utf-8")
    with serving(store) as (client, _):
        for args in (["serve", "--port", "0"], ["load", "--fingerprints", str(tmp_path / "docs.jsonl")]):
            second = subprocess.run(["dedup-hbase", *args, "--store", store], capture_output=True, text=True,
                                    timeout=120)
            assert (second.returncode, second.stdout, second.stderr) == (1, "", (
                f"error: {store} is in use by another process (a load, delete or serve writes to it): run this "
                "once it has finished; stats, query and check read it meanwhile\n"))
        added = client.post("/v1/add", json=[{"id": "a", "simhash": "5ddcd9e58abddc86"}])
        assert added.status_code == 200 and added.json()[0]["added"]


def added_when_expired(client, copy: dict) -> None:
    """Once ``copy`` matches nothing (at most a minute), ``add?if_new=true`` adds it."""
    import time

    deadline = time.monotonic() + 60
    while client.post("/v1/check", json=[copy]).json()[0]["matches"]:
        assert time.monotonic() < deadline, "the document never expired"
        time.sleep(0.2)
    answer = client.post("/v1/add?if_new=true", json=[copy]).json()[0]
    assert answer["added"] and answer["matches"] == []


def test_ttl_an_expired_document_stops_matching_and_its_copy_is_added(store_url):
    """An index made with --ttl 3s: a document stops matching once older than that, an
    insert-if-new of its copy then adds the copy, and the service removes the old one. (That
    a document matches while fresh on an index with a TTL: the next test's ``kept``.)"""
    import time

    cli("init", "--store", store_url, *NO_SHORT, "--ttl", "3s")
    assert json.loads(cli("stats", "--store", store_url, "--json"))["ttl_s"] == 3
    original, copy = {"id": "a", "simhash": "5ddcd9e58abddc86"}, {"id": "a-copy", "simhash": "5ddcd9e58abddc87"}
    with serving(store_url) as (client, _):
        assert client.get("/v1/stats").json()["ttl_s"] == 3
        assert client.post("/v1/add?if_new=true", json=[original]).json()[0]["added"]
        added_when_expired(client, copy)
        deadline = time.monotonic() + 60
        while client.get("/v1/docs/a").status_code != 404:  # removed (embedded) or expired (HBase)
            assert time.monotonic() < deadline, "the expired document was never removed"
            time.sleep(0.2)


def test_an_adds_own_ttl_expires_its_documents_sooner_than_the_index(store_url):
    """An index with a TTL of an hour: documents added with ``ttl=2s`` stop matching after 2 s
    and an insert-if-new of a copy then adds it, while a document added without one matches
    before and after; a ttl longer than the index's or not a duration is a 400 naming it."""
    cli("init", "--store", store_url, *NO_SHORT, "--ttl", "1h")
    short, kept = {"id": "short", "simhash": "5ddcd9e58abddc86"}, {"id": "kept", "simhash": "0123456789abcdef"}
    short_copy, kept_copy = {"id": "short-copy", "simhash": "5ddcd9e58abddc87"}, {"id": "kept-copy", "simhash":
                                                                                   "0123456789abcdee"}
    with serving(store_url) as (client, _):
        assert client.post("/v1/add?if_new=true&ttl=2s", json=[short]).json()[0]["added"]
        assert client.post("/v1/add?if_new=true", json=[kept]).json()[0]["added"]
        assert client.get("/v1/docs/short").json()["meta"]["ttl"] == 2
        assert "ttl" not in client.get("/v1/docs/kept").json()["meta"]
        assert [m["id"] for m in client.post("/v1/check", json=[kept_copy]).json()[0]["matches"]] == ["kept"]
        added_when_expired(client, short_copy)
        assert [m["id"] for m in client.post("/v1/check", json=[kept_copy]).json()[0]["matches"]] == ["kept"]
        for ttl, error in [("2h", "ttl=2h is longer than the index's TTL (1h): no document outlives it"),
                           ("soon", "ttl: a duration is a whole number >= 1 and a unit s, m, h or d (90s, 12h, 30d), "
                                    "not 'soon'")]:
            refused = client.post(f"/v1/add?ttl={ttl}", json=[kept_copy])
            assert (refused.status_code, refused.json()) == (400, {"error": error})
        assert client.get("/v1/docs/kept-copy").status_code == 404  # nothing written


def test_a_ttl_on_an_index_without_one_is_refused(store_url):
    cli("init", "--store", store_url, *NO_SHORT)
    with serving(store_url) as (client, _):
        refused = client.post("/v1/add?if_new=true&ttl=1h", json=[{"id": "a", "simhash": "0123456789abcdef"}])
        assert refused.status_code == 400
        assert refused.json() == {"error": "ttl=1h: this index keeps documents forever (made without init --ttl); "
                                           "a request's ttl shortens an index's TTL, it cannot give one"}
        assert client.get("/v1/docs/a").status_code == 404


def test_a_document_with_many_matches_gets_the_nearest_and_the_true_count(store_url, tmp_path):
    base = 0x0123456789ABCDEF
    rows = [{"id": f"copy{i:04d}", "simhash": f"{base:016x}"} for i in range(300)]
    rows += [{"id": f"near{i}", "simhash": f"{base ^ (1 << i):016x}"} for i in range(3)]  # 1 bit away
    corpus = tmp_path / "copies.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli("init", "--store", store_url, *NO_SHORT)
    cli("load", "--store", store_url, str(corpus), "--fingerprints", "-q")
    probe = [{"id": "probe", "simhash": f"{base ^ 1:016x}"}]  # near0 itself, 1 bit from the copies, 2 from near1, near2
    expected = json.loads(cli("check", "--store", store_url, "--fingerprints", "--max-matches", "4", "--json", "-",
                              input=json.dumps(probe[0]) + "\n"))
    assert [(m["id"], m["distance"]) for m in expected["matches"]] == [("near0", 0), ("copy0000", 1), ("copy0001", 1),
                                                                        ("copy0002", 1)]
    assert expected["match_count"] == 303
    with serving(store_url, "--max-matches", "4") as (client, _):
        assert client.post("/v1/check", json=probe).json() == [expected]
        (added,) = client.post("/v1/add?if_new=true", json=probe).json()
        assert added == {"id": "probe", "simhash": expected["simhash"], "added": False,
                         "matches": expected["matches"], "match_count": 303}
        few = [{"id": "alone", "simhash": f"{~base & (2**64 - 1):016x}"}]
        assert client.post("/v1/check", json=few).json() == [{"id": "alone", "simhash": few[0]["simhash"],
                                                              "matches": []}]


def test_concurrent_one_document_requests_answer_as_alone(store_url, news, tmp_path):
    """One document per request from 8 clients at once: the checks are joined into batches
    (batcher.py) and the adds queued in turn, and every answer is what the document gets
    alone: `check --json`'s record; each cluster added once."""
    corpus, probes = tmp_path / "corpus.jsonl", tmp_path / "probes.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in news[:1500]), encoding="utf-8")
    sample = random.Random(4).sample(news, 400)
    probes.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in sample), encoding="utf-8")
    cli("init", "--store", store_url, *NO_SHORT)
    cli("load", "--store", store_url, str(corpus), "-q")
    expected = {e["id"]: e for e in map(json.loads, cli("check", "--store", store_url, str(probes), "--json").splitlines())}
    docs = clusters(9)
    ids = list(docs)
    with serving(store_url) as (client, _):
        checked, added, lock = {}, [], threading.Lock()

        def client_thread(seed: int) -> None:
            rnd = random.Random(seed)
            with httpx.Client(base_url=str(client.base_url), timeout=120) as mine:
                for d in sample[seed::8]:
                    response = mine.post("/v1/check", json=[{"id": d["id"], "text": d["text"]}])
                    assert response.status_code == 200, response.text
                    with lock:
                        checked[d["id"]] = response.json()
                for i in rnd.sample(ids, 60):
                    response = mine.post("/v1/add?if_new=true", json=[{"id": i, "simhash": f"{docs[i][1]:016x}"}])
                    assert response.status_code == 200, response.text
                    with lock:
                        added.extend(a["id"] for a in response.json() if a["added"])

        run_clients(client_thread, 8)
        assert checked == {i: [e] for i, e in expected.items()}
        assert sorted(docs[i][0] for i in added) == sorted({docs[i][0] for i in added})  # no cluster twice


def test_every_route_and_every_miss_answer_json_with_the_same_headers(tmp_path):
    """Every answer, of every route, error or not, and of a path or method no route has: compact
    UTF-8 JSON, `content-length` then `content-type: application/json` after uvicorn's `date`
    and `server`; a miss names the method and path (404, 405); a GET route answers HEAD with
    the headers alone; a trailing slash is another path."""
    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    with serving(store) as (client, _):
        answers = [client.post("/v1/add", json=[{"id": "长江", "text": "长江经济带生态环境保护发生了转折性变化"}]),
                   client.post("/v1/check", json=[{"id": "q", "text": "长江经济带生态环境保护发生了转折性变化！"}]),
                   client.post("/v1/check", content=b"[1]"), client.post("/v1/add?if_new=no", content=b"[]"),
                   client.get("/v1/docs/长江"), client.get("/v1/docs/none"), client.get("/v1/stats"),
                   client.get("/v1/stats?full=maybe"), client.get("/healthz"), client.get("/v1/check"),
                   client.put("/v1/check"), client.post("/healthz"), client.get("/v1/nothing"),
                   client.post("/v1/check/", content=b"[]"), client.get("/v1/docs"), client.delete("/v1/docs/长江")]
        for response in answers:
            assert response.content == json.dumps(response.json(), ensure_ascii=False, separators=(",", ":")).encode()
            names = [name for name, _ in response.headers.raw]
            assert names == [b"date", b"server", b"content-length", b"content-type"], response.headers.raw
            assert response.headers["content-type"] == "application/json"
        assert [r.status_code for r in answers] == [200, 200, 400, 400, 200, 404, 200, 400, 200, 405, 405, 405, 404,
                                                    404, 404, 200]
        assert answers[1].json()[0]["matches"][0]["id"] == "长江"
        assert [r.json()["error"] for r in answers[9:15]] == [
            "GET /v1/check: Method Not Allowed", "PUT /v1/check: Method Not Allowed",
            "POST /healthz: Method Not Allowed", "GET /v1/nothing: Not Found", "POST /v1/check/: Not Found",
            "GET /v1/docs: Not Found"]
        assert answers[-1].json() == {"deleted": "长江"}
        for path, like in (("/healthz", answers[8]), ("/v1/docs/none", answers[5])):
            head = client.head(path)
            assert (head.status_code, head.content) == (like.status_code, b"")
            assert head.headers.raw[2:] == like.headers.raw[2:]  # content-length and content-type as for GET
        head = client.head("/v1/check")
        assert (head.status_code, head.content, head.headers["content-length"]) == (
            405, b"", str(len(b'{"error":"HEAD /v1/check: Method Not Allowed"}')))


def test_the_hot_paths_json_reads_and_writes_as_the_json_module():
    """``load_json`` and ``render_documents`` (orjson when installed) give the json module's
    values, errors and bytes, also where orjson alone would not: integers beyond 64 bits,
    NaN, lone surrogates, UTF-16 bodies, control characters."""
    from dedup_hbase.service.documents import load_json, render, render_documents

    bodies = [b'[{"id": 99999999999999999999999, "text": "x"}]', b'[{"id": 7, "simhash": 1e400}]', b"NaN",
              b'[{"id": "\\ud800", "text": "a"}]', '[{"id": "é", "text": "b"}]'.encode("utf-16"),
              b'99999999999999999999999', b'[{"id": "a", "text": "\\u0000\\u001f\\u2028\\"\\\\\\t", "n": 1.5}]',
              b'{"a": 1, "a": 2}', b"[1,]", b"\xff"]
    for body in bodies:
        try:
            expected = ("value", json.loads(body))
        except ValueError as e:
            expected = ("error", type(e), str(e))
        try:
            got = ("value", load_json(body))
        except ValueError as e:
            got = ("error", type(e), str(e))
        assert repr(got) == repr(expected), body  # repr: NaN != NaN, 1 != 1.0
    rnd = random.Random(5)
    for _ in range(300):
        text = "".join(chr(rnd.choice([rnd.randrange(0, 0x80), rnd.randrange(0x80, 0xD800), rnd.randrange(0xE000, 0x110000)]))
                       for _ in range(rnd.randint(0, 12)))
        answer = [{"id": text, "simhash": "00ff00ff00ff00ff", "added": rnd.random() < 0.5, "error": None,
                   "matches": [{"id": text[::-1], "simhash": "0123456789abcdef", "distance": rnd.randint(0, 3)}],
                   "match_count": rnd.choice([1, 2**63, -2**63])}]
        assert render_documents(answer) == render(answer)
    with pytest.raises(UnicodeEncodeError):  # as render: a lone surrogate cannot be UTF-8
        render_documents([{"id": "\ud800"}])
    assert render_documents([{"n": 2**70}]) == render([{"n": 2**70}])


def raw_exchange(url: str, data: bytes, answers: int) -> list[bytes]:
    """``data`` written to a new connection as is; the first ``answers`` responses read back
    whole (each by its content-length), the ``date`` header's value blanked."""
    import socket

    host, port = url.split("//", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(data)
        return read_answers(sock, answers)


def read_answers(sock, answers: int) -> list[bytes]:
    """The next ``answers`` responses on ``sock`` (an interim ``100 Continue`` besides), the
    ``date`` header's value blanked."""
    import re

    buffer, out = b"", []
    while len(out) < answers:
        if buffer.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):  # an interim answer, not counted
            out.append(buffer[:25])
            buffer = buffer[25:]
            answers += 1
            continue
        head_end = buffer.find(b"\r\n\r\n")
        if head_end >= 0:
            length = int(re.search(rb"content-length: (\d+)", buffer[:head_end]).group(1))
            if len(buffer) >= head_end + 4 + length:
                out.append(re.sub(rb"date: [^\r]*", b"date: -", buffer[:head_end + 4 + length]))
                buffer = buffer[head_end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {len(out)} answers"
        buffer += chunk
    assert not buffer, buffer
    return out


def post(path: str, body: bytes, *headers: bytes, version: bytes = b"HTTP/1.1") -> bytes:
    return b"\r\n".join([b"POST " + path + b" " + version, b"host: x", b"content-type: application/json",
                         b"content-length: %d" % len(body), *headers, b"", body])


def test_the_document_endpoints_answer_the_same_bytes_whatever_form_the_request_takes(tmp_path):
    """`POST /v1/check` and `/v1/add` as a plain keep-alive request (the fast lane,
    http_lane.py) and in every form the lane leaves to the ASGI application (a percent-escaped
    path, `connection: close`, HTTP/1.0 kept alive or not, `expect: 100-continue`, a chunked
    body) answer the same bytes, errors included (but `connection: close` where the connection
    closes); pipelined requests after a lane request are answered in order on one connection."""
    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    with serving(store) as (client, _):
        url = str(client.base_url).rstrip("/")
        client.post("/v1/add", json=[{"id": "长江", "text": "长江经济带生态环境保护发生了转折性变化"}])
        bodies = [json.dumps([{"id": "q", "text": "长江经济带生态环境保护发生了转折性变化！"}], ensure_ascii=False).encode(),
                  b"[1]", b"not json", json.dumps([{"id": "z", "simhash": "00ff00ff00ff00ff"}]).encode(), b"[]"]
        for body in bodies:  # added once first: then every add below answers alike ("added": false)
            client.post("/v1/add?if_new=true", content=body)
            for path, escaped in ((b"/v1/check", b"/v1/%63heck"), (b"/v1/add?if_new=true", b"/v1/%61dd?if_new=true"),
                                  (b"/v1/add?if_new=maybe", b"/v1/%61dd?if_new=maybe")):
                plain, escaped_answer = raw_exchange(url, post(path, body) + post(escaped, body), 2)
                assert plain == escaped_answer and plain.startswith(b"HTTP/1.1 "), (plain, escaped_answer)
                (closing,) = raw_exchange(url, post(path, body, b"connection: close"), 1)
                assert closing == plain.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n", 1)
                assert raw_exchange(url, post(path, body, version=b"HTTP/1.0"), 1) == [closing]
                for keep in (b"connection: keep-alive", b"proxy-connection: keep-alive"):  # HTTP/1.0 kept alive
                    assert raw_exchange(url, post(path, body, keep, version=b"HTTP/1.0"), 1) == [closing]
                expecting = [raw_exchange(url, post(p, body, b"expect: 100-continue"), 1) for p in (path, escaped)]
                assert expecting[0] == expecting[1] and expecting[0][-1] == plain, expecting  # 100 if it reads the body
                chunked = b"\r\n".join([b"POST " + path + b" HTTP/1.1", b"host: x", b"transfer-encoding: chunked",
                                        b"", b"%x" % len(body), body, b"0", b"", b""])
                (by_chunks,) = raw_exchange(url, chunked, 1)
                assert by_chunks == plain
        pipelined = b"".join(post(b"/v1/check", json.dumps([{"id": f"p{i}", "text": "长江经济带"}]).encode())
                             for i in range(5))
        answers = raw_exchange(url, pipelined, 5)
        assert [json.loads(a.split(b"\r\n\r\n", 1)[1])[0]["id"] for a in answers] == [f"p{i}" for i in range(5)]
        # both ways are counted in one place: each request once, each refusal once
        before = client.get("/v1/stats").json()["server"]
        raw_exchange(url, post(b"/v1/check", b"[1]") + post(b"/v1/%63heck", b"[1]") + post(b"/v1/check", b"[]"), 3)
        after = client.get("/v1/stats").json()["server"]
        assert (after["requests"] - before["requests"], after["refused"] - before["refused"]) == (4, 2)


def test_keep_alive_timeout_closes_a_connection_only_when_idle(tmp_path):
    """uvicorn's keep-alive timeout (5 s), kept by the lane's one timer per connection
    (http_lane.py): a connection sending requests (on the lane and the ASGI way) a second apart
    for longer than the timeout stays open; left idle, the server closes it."""
    import socket
    import time

    store = str(tmp_path / "index")
    cli("init", "--store", store, *NO_SHORT)
    body = json.dumps([{"id": "q", "text": "长江经济带生态环境保护发生了转折性变化"}], ensure_ascii=False).encode()
    with serving(store) as (client, _):
        host, port = str(client.base_url).rstrip("/").split("//", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as sock:
            for i in range(8):
                sock.sendall(post(b"/v1/check" if i % 2 else b"/v1/%63heck", body))
                (answer,) = read_answers(sock, 1)
                assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
                time.sleep(1)
            assert sock.recv(65536) == b""  # closed by the server once idle for the timeout
