"""The service in production, what an operator sees: a real `dedup-hbase serve` process over
real sockets. `GET /metrics`, parsed by prometheus_client's parser, counts exactly the requests
sent (by endpoint and status, their documents, their latencies, the joined checks' batches, the
documents added and refused, the fleet's leases, the index's documents); the access log has a
line per request and no text, id or token; `/readyz` answers 503 while the HBase it uses is
frozen or its gateways are down, 200 once they are back, while `/healthz` answers all along."""

import json
import signal
import subprocess
import time
import uuid
from datetime import datetime

import httpx
import pytest

from dedup_hbase import open_store

from conftest import ROOT, hbase_store_url
from processes import signal_process
from serving import started

# without the short-text rule (the default's): these tests add documents by their simhash alone
NO_SHORT = ("--short-texts", "off")
READER, WRITER = "reader-token-0123456789", "writer-token-0123456789"
TOKENS = f"{READER} read\n{WRITER} read,write,delete\n"


def scrape(client: httpx.Client) -> dict:
    """``GET /metrics`` parsed by prometheus_client: {(sample name, labels as a sorted tuple): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    response = client.get("/metrics", headers={"authorization": f"Bearer {READER}"})
    assert response.status_code == 200 and response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def by(samples: dict, name: str, *labels: str) -> dict:
    """The samples named ``name``, keyed by the values of ``labels``."""
    return {tuple(dict(key)[label] for label in labels): value for (sample, key), value in samples.items()
            if sample == name}


def doc(i: str, simhash: int) -> dict:
    return {"id": i, "simhash": f"{simhash:016x}"}


def test_metrics_and_the_access_log_count_exactly_the_requests_sent(store_url, tmp_path):
    subprocess.run(["dedup-hbase", "init", "--store", store_url, *NO_SHORT], check=True, capture_output=True)
    tokens, access = tmp_path / "tokens", tmp_path / "access.log"
    tokens.write_text(TOKENS)
    a, b, c = 0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x5DDCD9E58ABDDC86
    reader, writer = {"authorization": f"Bearer {READER}"}, {"authorization": f"Bearer {WRITER}"}
    with started(store_url, "--tokens", str(tokens), "--access-log", str(access), log=tmp_path / "serve.log") as (
            url, _), httpx.Client(base_url=url, timeout=120) as client:
        scrapes, deadline = 1, time.monotonic() + 120
        while ("dedup_index_documents", ()) not in scrape(client):  # counted at start, in the background
            assert time.monotonic() < deadline, "the index's documents were never counted"
            scrapes += 1
            time.sleep(0.1)
        sent = []  # (endpoint, method, status, documents) of every request, in order

        def call(endpoint: str, method: str, path: str, status: int, documents: int = 0, **kwargs) -> None:
            response = client.request(method, path, **kwargs)
            assert response.status_code == status, (method, path, response.text)
            sent.append((endpoint, method, status, documents))

        for i, simhash in enumerate([a, b, c, a ^ 1, b ^ 3]):
            call("check", "POST", "/v1/check", 200, 1, json=[doc(f"q{i}", simhash)], headers=reader)
        for i in range(2):
            call("check", "POST", "/v1/check", 200, 2, json=[doc(f"p{i}", a), doc(f"r{i}", c)], headers=reader)
        call("check", "POST", "/v1/check", 400, content=b"{not json", headers=reader)
        call("check", "POST", "/v1/check", 401, json=[doc("x", a)])
        for i, simhash in (("a", a), ("b", b), ("a-near", a ^ 1), ("c", c)):  # a-near: refused by if_new
            call("add", "POST", "/v1/add?if_new=true", 200, 1, json=[doc(i, simhash)], headers=writer)
        call("add", "POST", "/v1/add?if_new=true", 403, json=[doc("y", a)], headers=reader)
        call("docs", "GET", "/v1/docs/a", 200, headers=reader)
        call("docs", "GET", "/v1/docs/zzz", 404, headers=reader)
        call("docs", "DELETE", "/v1/docs/b", 200, headers=writer)
        call("stats", "GET", "/v1/stats", 200, headers=reader)
        for path in ("/healthz", "/healthz", "/readyz"):
            call(path[1:], "GET", path, 200)
        call("other", "GET", "/v1/nothing", 404)
        samples = scrape(client)
    requests: dict = {("metrics", "200"): scrapes}  # the scrapes before the last, which is counted once answered
    documents: dict = {("metrics", "200"): 0}
    for endpoint, _, status, docs in sent:
        requests[endpoint, str(status)] = requests.get((endpoint, str(status)), 0) + 1
        documents[endpoint, str(status)] = documents.get((endpoint, str(status)), 0) + docs
    assert by(samples, "dedup_http_requests_total", "endpoint", "status") == requests
    assert by(samples, "dedup_http_request_documents_total", "endpoint", "status") == documents
    counts = by(samples, "dedup_http_request_duration_seconds_count", "endpoint")
    assert counts == {(e,): sum(n for (end, _), n in requests.items() if end == e) for e, _ in requests}
    buckets = by(samples, "dedup_http_request_duration_seconds_bucket", "endpoint", "le")
    for (endpoint,), count in counts.items():
        mine = sorted(((float(le), n) for (e, le), n in buckets.items() if e == endpoint))
        assert [n for _, n in mine] == sorted(n for _, n in mine) and mine[-1] == (float("inf"), count)
        assert 0 < by(samples, "dedup_http_request_duration_seconds_sum", "endpoint")[(endpoint,)] < 600
    # each check was alone: a batch of its own documents
    assert (samples[("dedup_check_batch_documents_count", ())], samples[("dedup_check_batch_documents_sum", ())]) == (7, 9)
    assert samples[("dedup_check_batch_documents_bucket", (("le", "1.0"),))] == 5
    assert samples[("dedup_check_batch_documents_bucket", (("le", "2.0"),))] == 7
    assert {name: samples[(f"dedup_{name}_total", ())] for name in (
        "documents_checked", "documents_added", "documents_refused", "documents_deleted", "documents_expired",
        "store_errors", "internal_errors")} == {"documents_checked": 9, "documents_added": 3, "documents_refused": 1,
                                                "documents_deleted": 1, "documents_expired": 0, "store_errors": 0,
                                                "internal_errors": 0}
    assert samples[("dedup_index_documents", ())] == 2  # counted 0 at start, then 3 added and 1 deleted
    assert abs(samples[("dedup_index_documents_counted_timestamp_seconds", ())] - time.time()) < 600
    assert samples[("process_start_time_seconds", ())] > 0
    leases = by(samples, "dedup_fleet_leases_total", "event")
    if store_url.startswith("hbase://"):  # each add?if_new=true of one document: a lease on its 4 scan prefixes
        assert leases == {("taken",): 16, ("waited",): 0, ("taken_over",): 0, ("lost",): 0}
    else:
        assert leases == {}

    lines = access.read_text().splitlines()
    logged = [json.loads(line) for line in lines]
    mine = [entry for entry in logged if entry["endpoint"] != "metrics"]
    assert [(e["endpoint"], e["method"], e["status"], e["documents"]) for e in mine] == sent
    assert len(logged) - len(mine) == scrapes + 1
    for entry in logged:
        assert list(entry) == ["time", "endpoint", "method", "status", "documents", "duration_ms", "remote"]
        assert datetime.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S.%fZ") and entry["duration_ms"] >= 0
        host, port = entry["remote"].rsplit(":", 1)
        assert host == "127.0.0.1" and port.isdigit()
    text = access.read_text()
    for secret in (READER, WRITER, "a-near", "zzz", "/v1/", f"{a:016x}", "simhash", "not json"):
        assert secret not in text  # no token, id, path, fingerprint or body


def test_healthz_readyz_and_an_access_log_on_stderr_on_the_embedded_store(tmp_path):
    """Also: without tokens /metrics is open, and with --count-every never it has no document count."""
    store, log = str(tmp_path / "index"), tmp_path / "serve.log"
    subprocess.run(["dedup-hbase", "init", "--store", store, *NO_SHORT], check=True, capture_output=True)
    with started(store, "--access-log", "-", "--count-every", "never", log=log) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as client:
        assert client.get("/readyz").json() == {"ready": True}
        assert client.get("/healthz").json() == {"ok": True}
        assert client.head("/readyz").status_code == 200
        assert client.post("/v1/add", json=[doc("a", 12345)]).status_code == 200
        samples = scrape(client)
        assert samples[("dedup_documents_added_total", ())] == 1 and ("dedup_index_documents", ()) not in samples
    lines = log.read_text().splitlines()
    assert lines[0].startswith("serving ") and lines[-1] == "stopped by SIGTERM"
    assert [(json.loads(line)["endpoint"], json.loads(line)["method"]) for line in lines[1:-1]] == [
        ("readyz", "GET"), ("healthz", "GET"), ("readyz", "HEAD"), ("add", "POST"), ("metrics", "GET")]


@pytest.mark.hbase
def test_the_document_count_takes_in_other_writers_at_its_next_count(hbase_url, tmp_path):
    """Another writer of the same HBase tables (a load): the gauge misses its documents until
    the next count (every 2 s here), then has them."""
    store = hbase_store_url(hbase_url)
    subprocess.run(["dedup-hbase", "init", "--store", store, *NO_SHORT], check=True, capture_output=True)
    try:
        with started(store, "--count-every", "2s", log=tmp_path / "serve.log") as (url, _), \
                httpx.Client(base_url=url, timeout=60) as client:
            assert client.post("/v1/add", json=[doc("mine", 1)]).status_code == 200
            corpus = tmp_path / "other.jsonl"
            corpus.write_text("".join(json.dumps(doc(f"other{i}", 1000 + i)) + "\n" for i in range(5)))
            subprocess.run(["dedup-hbase", "load", "--store", store, "--fingerprints", str(corpus), "-q"], check=True,
                           capture_output=True)
            deadline = time.monotonic() + 120
            while scrape(client).get(("dedup_index_documents", ())) != 6:
                assert time.monotonic() < deadline, scrape(client).get(("dedup_index_documents", ()))
                time.sleep(0.2)
    finally:
        with open_store(store) as opened:
            opened.drop()


def readiness(url: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    response = httpx.get(f"{url}/readyz", timeout=120)
    return response.status_code, response.json(), time.monotonic() - started


def wait_ready(url: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while (answer := readiness(url))[0] != 200:
        assert time.monotonic() < deadline, f"/readyz never answered 200 again: {answer}"
        time.sleep(0.5)
    assert answer[1] == {"ready": True}


@pytest.mark.hbase
@pytest.mark.slow
def test_readyz_follows_the_hbase_it_uses(own_hbase, tmp_path):
    """Frozen (SIGSTOP of the master and both gateways): 503 after the probe's 2 s, then at
    once while that probe still waits; /healthz and /metrics answer all along. Thawed: 200.
    The Thrift2 gateway (the data path's) killed: 503; started again: 200."""
    base, env, folder = own_hbase
    store = f"{base}&table_prefix=r{uuid.uuid4().hex[:8]}"
    launcher = ROOT / "scripts" / "hbase-local"
    subprocess.run(["dedup-hbase", "init", "--store", store, *NO_SHORT], check=True, capture_output=True)
    with started(store, log=tmp_path / "serve.log") as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        assert readiness(url)[:2] == (200, {"ready": True})
        try:
            for name in ("master", "thrift", "thrift2"):
                signal_process(folder, name, signal.SIGSTOP)
            status, body, seconds = readiness(url)
            assert (status, body) == (503, {"ready": False, "error": body["error"]}), body
            assert body["error"].startswith("the store has not answered for ") and 1.5 < seconds < 60, (body, seconds)
            status, body, seconds = readiness(url)  # the same probe still waits: no second one
            assert status == 503 and body["error"].startswith("the store has not answered for ")
            assert client.get("/healthz").json() == {"ok": True}
            assert client.get("/metrics").status_code == 200
        finally:
            for name in ("master", "thrift", "thrift2"):
                signal_process(folder, name, signal.SIGCONT)
        wait_ready(url)
        try:
            signal_process(folder, "thrift2", signal.SIGKILL)
            deadline = time.monotonic() + 60
            while (answer := readiness(url))[0] == 200:
                assert time.monotonic() < deadline, "/readyz answered 200 with the Thrift2 gateway killed"
                time.sleep(0.2)
            assert answer[0] == 503 and answer[1]["ready"] is False
        finally:  # started again (the launcher starts a gateway that is not running)
            subprocess.run([str(launcher), "restart-thrift2"], env=env, capture_output=True)
        wait_ready(url)
    log = (tmp_path / "serve.log").read_text()
    assert "not ready (GET /readyz answers 503): " in log and "ready again: the store answers" in log
