"""A load killed with -9 in the middle of writing leaves a store that reopens consistent,
and running the same load again finishes it: exactly the documents and index rows of a
clean load, none lost, none doubled.

The kill comes at a known point, not after a guessed delay: the load prints a progress line
after every checkpoint (``--progress-every 0``), and the test kills it as soon as a line says
that a given share of the records is written; the load is then writing the next batch."""

import json
import random
import signal
import subprocess

import pytest

from dedup_hbase import Index, open_store

N = 30_000  # 60 checkpoints of 500: a kill lands between two of them
MODES = {"plain": [], "skip-near-dups": ["--skip-near-dups"]}
pytestmark = pytest.mark.slow  # 30,000 documents, several loads each


@pytest.fixture(scope="module")
def fingerprints(tmp_path_factory):
    """Random fingerprints, one in ten a copy of an earlier one with 0-3 bits flipped."""
    path = tmp_path_factory.mktemp("crash") / "fps.jsonl"
    rnd = random.Random(11)
    values = []
    for _ in range(N):
        if values and rnd.random() < 0.1:
            value = rnd.choice(values)
            for bit in rnd.sample(range(64), rnd.randint(0, 3)):
                value ^= 1 << bit
        else:
            value = rnd.getrandbits(64)
        values.append(value)
    with open(path, "w") as f:
        for i, value in enumerate(values):
            f.write(json.dumps({"id": f"d{i:06d}", "simhash": f"{value:016x}"}) + "\n")
    return path


def load_cmd(store, path, mode, *extra):
    return ["dedup-hbase", "load", "--fingerprints", "--batch-size", "500", "--store", store,
            *MODES[mode], *extra, str(path)]


def contents(store_path):
    """(document ids, index keys), after checking every document has all its index rows."""
    with open_store(store_path) as store:
        index = Index.open(store)
        docs = list(store.iterate("docs"))
        keys = {key for key, _ in store.iterate("index")}
        for raw_id, value in docs:
            simhash = int.from_bytes(value[:8], "big")
            assert all(k + raw_id in keys for k in index.scheme.row_keys(simhash)), raw_id
        return {raw_id for raw_id, _ in docs}, keys


@pytest.fixture(scope="module")
def clean(tmp_path_factory, fingerprints):
    """mode -> (the document ids, the index keys) of a load that was not interrupted."""
    out = {}
    for mode in MODES:
        store = str(tmp_path_factory.mktemp("clean") / "store")
        subprocess.run(["dedup-hbase", "init", "--store", store, "--short-texts", "off"], check=True, capture_output=True)  # fingerprints alone
        subprocess.run(load_cmd(store, fingerprints, mode, "-q"), check=True, capture_output=True)
        out[mode] = contents(store)
    assert len(out["skip-near-dups"][0]) < len(out["plain"][0]) == N
    return out


def killed_load(store, fingerprints, mode, records):
    """Start the load and SIGKILL it once a progress line says ``records`` or more are written
    and checkpointed; returns how many the last line said."""
    proc = subprocess.Popen(load_cmd(store, fingerprints, mode, "--progress-every", "0"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done = 0
    for line in proc.stderr:
        if line.startswith("progress: "):
            done = int(line.split()[1].replace(",", ""))
            if done >= records:
                proc.send_signal(signal.SIGKILL)
                break
    assert proc.wait() == -signal.SIGKILL, "the load ended before it could be killed mid-way"
    proc.stderr.close()
    return done


# each mode killed early or late, the plain load at both ends (six combinations cost CI a minute more)
@pytest.mark.parametrize("mode, fraction", [("plain", 0.3), ("skip-near-dups", 0.6), ("plain", 0.85)])
def test_kill_9_mid_load_then_rerun(tmp_path, fingerprints, clean, mode, fraction):
    clean_docs, clean_keys = clean[mode]
    store = str(tmp_path / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store, "--short-texts", "off"], check=True, capture_output=True)  # fingerprints alone
    done = killed_load(store, fingerprints, mode, int(N * fraction))
    assert N * fraction <= done < N
    docs, keys = contents(store)  # reopens, and no document lacks index rows
    assert docs <= clean_docs and len(docs) > 0
    rerun = subprocess.run(load_cmd(store, fingerprints, mode, "--json"), check=True,
                           capture_output=True, text=True)
    report = json.loads(rerun.stdout)
    assert report["resumed_after"] >= done  # it resumed from the checkpoint the kill left
    assert report["read"] == N == report["indexed"] + report["near_duplicates_skipped"] + report["rejected"]
    assert contents(store) == (clean_docs, clean_keys)
