"""A load killed with -9 in the middle of writing leaves a store that reopens consistent,
and running the same load again completes it exactly."""

import json
import random
import signal
import subprocess
import time

import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.index import encode_id

N = 100_000


@pytest.fixture(scope="module")
def fingerprints(tmp_path_factory):
    path = tmp_path_factory.mktemp("crash") / "fps.jsonl"
    rnd = random.Random(11)
    with open(path, "w") as f:
        for i in range(N):
            f.write(json.dumps({"id": f"d{i:06d}", "simhash": f"{rnd.getrandbits(64):016x}"}) + "\n")
    return path


def load_cmd(store, path):
    return ["dedup-hbase", "load", "--fingerprints", "--batch-size", "500", "-q", "--store", store, str(path)]


def consistent(store_path):
    """Every document row has all its index rows; returns (documents, index cells)."""
    with open_store(store_path) as store:
        index = Index.open(store)
        docs = list(store.iterate("docs"))
        cells = {key for key, _ in store.iterate("index")}
        for raw_id, value in docs:
            simhash = int.from_bytes(value[:8], "big")
            assert all(k + raw_id in cells for k in index.scheme.row_keys(simhash)), raw_id
        return len(docs), len(cells)


@pytest.fixture(scope="module")
def clean_load_seconds(tmp_path_factory, fingerprints):
    store = str(tmp_path_factory.mktemp("clean") / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    started = time.monotonic()
    subprocess.run(load_cmd(store, fingerprints), check=True, capture_output=True)
    return time.monotonic() - started


def killed_load(store, fingerprints, delay):
    """Start the load, SIGKILL it after ``delay`` s; True if it was killed mid-way."""
    proc = subprocess.Popen(load_cmd(store, fingerprints), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    return proc.wait() == -signal.SIGKILL


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.85])
def test_kill_9_mid_load_then_rerun(tmp_path, fingerprints, clean_load_seconds, fraction):
    store = str(tmp_path / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    delay = clean_load_seconds * fraction * random.uniform(0.9, 1.1)
    while not killed_load(store, fingerprints, delay):  # finished first: start over, kill sooner
        delay *= 0.7
    docs, cells = consistent(store)  # reopens, and no document lacks index rows
    assert docs <= N and cells >= 4 * docs
    subprocess.run(load_cmd(store, fingerprints), check=True, capture_output=True)
    assert consistent(store) == (N, 4 * N)
    with open_store(store) as s:
        raw = [encode_id(f"d{i:06d}") for i in range(0, N, 997)]
        assert all(v is not None for v in s.get("docs", raw))
