"""``check --add-new`` on the local engine: the records answer against the index as it was (those
of a plain ``check``), then the new documents are indexed as ``load --skip-near-dups`` indexes
them (the same cells and document rows, the same counts); its refusals. The Spark engine's
``check --add-new`` and ``load --skip-near-dups``: test_spark_check.py."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from dedup_hbase import open_store

BATCH = 1000  # check's batch (CheckOptions.batch_size): the load compared with it takes the same


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["dedup-hbase", *args], capture_output=True, text=True, input=stdin)


def line(doc_id: str, simhash: int) -> str:
    return json.dumps({"id": doc_id, "simhash": f"{simhash:016x}"})


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed: int = 5) -> tuple[list[str], list[str]]:
    """An index of 400 fingerprints and 2,500 to check: near indexed ones (0-4 bits), copies of
    one page, chains a - b - c (ends 6 bits apart), pairs at exactly 3 and 4 bits, an indexed id
    again, random ones, two rejects; shuffled, so near pairs straddle the batches."""
    rnd = random.Random(seed)
    bases = [rnd.getrandbits(64) for _ in range(400)]
    indexed = [line(f"d{i}", b) for i, b in enumerate(bases)]
    page = rnd.getrandbits(64)
    new = [line("d7", bases[7])] + [line(f"copy{i}", page) for i in range(200)]
    new += [line(f"near{i}", flip(b, rnd.randint(0, 4), rnd)) for i, b in enumerate(rnd.choices(bases, k=500))]
    for i in range(80):
        a = rnd.getrandbits(64)
        b = flip(a, 3, rnd)
        new += [line(f"chain{i}a", a), line(f"chain{i}b", b), line(f"chain{i}c", flip(b, 3, rnd)),
                line(f"pair{i}k", flip(a, 3, rnd) ^ (1 << 63)), line(f"pair{i}x", flip(a, 4, rnd))]
    new += [line(f"r{i}", rnd.getrandbits(64)) for i in range(2498 - len(new))]
    rnd.shuffle(new)
    new[700:700] = ['{"id": "bad", "simhash": "xyz"}', '{"simhash": "0000000000000001"}']
    return indexed, new


def contents(path: Path) -> tuple[set, dict]:
    """The index table's cells and the document rows (their load time left out)."""
    with open_store(f"local:{path}") as store:
        cells = set(store.iterate("index"))
        docs = {}
        for key, value in store.iterate("docs"):
            meta = json.loads(value[8:])
            meta.pop("loaded")
            docs[key] = (value[:8], meta)
    return cells, docs


def test_check_add_new_answers_as_check_then_indexes_as_load_skip_near_dups(tmp_path):
    indexed, new = planted()
    (tmp_path / "base.jsonl").write_text("\n".join(indexed) + "\n")
    (tmp_path / "new.jsonl").write_text("\n".join(new) + "\n")
    stores = {name: tmp_path / name for name in ("checked", "added", "loaded")}
    for store in stores.values():
        assert run("init", "--store", f"local:{store}", "--short-texts", "off").returncode == 0
        assert run("load", "--store", f"local:{store}", "--fingerprints", "-q", str(tmp_path / "base.jsonl")).returncode == 0
    plain = run("check", "--store", f"local:{stores['checked']}", "--fingerprints", "--json", str(tmp_path / "new.jsonl"))
    added = run("check", "--store", f"local:{stores['added']}", "--fingerprints", "--json", "--add-new",
                str(tmp_path / "new.jsonl"))
    loaded = run("load", "--store", f"local:{stores['loaded']}", "--fingerprints", "--skip-near-dups", "--json",
                 "--batch-size", str(BATCH), str(tmp_path / "new.jsonl"))
    assert (plain.returncode, added.returncode, loaded.returncode) == (0, 0, 0), added.stderr
    assert added.stdout == plain.stdout  # the records: against the index as it was
    report = json.loads(loaded.stdout)
    assert report["near_duplicates_skipped"] > 700 and report["rejected"] == 2
    with_matches = sum(1 for r in map(json.loads, plain.stdout.splitlines()) if r.get("matches"))
    assert added.stderr == (f"checked 2,500 documents: {with_matches:,} with matches, 2 rejected; added the "
                            f"{report['indexed']:,} that match no other document, in the index or earlier in the "
                            f"input (skipped {report['near_duplicates_skipped']:,} that do)\n")
    assert contents(stores["added"]) == contents(stores["loaded"])
    assert contents(stores["checked"]) != contents(stores["added"])  # the plain check wrote nothing


def test_check_add_new_refusals(tmp_path):
    store = f"local:{tmp_path / 'i'}"
    assert run("init", "--store", store, "--short-texts", "off").returncode == 0
    (tmp_path / "q.jsonl").write_text(line("a", 1) + "\n")
    refused = run("check", "--store", store, "--fingerprints", "--add-new", "-", stdin=line("a", 1) + "\n")
    assert (refused.returncode, refused.stderr) == (1, "error: --add-new reads its input twice (the records against "
                                                       "the index as it was, then the new documents indexed): give "
                                                       "files, not stdin\n")
    refused = run("check", "--store", store, "--fingerprints", "--add-new", "--k", "2", str(tmp_path / "q.jsonl"))
    assert (refused.returncode, refused.stderr) == (1, "error: --add-new finds near-duplicates within the index's k "
                                                       "(3), not --k 2\n")
    assert run("stats", "--store", store, "--json").stdout.count('"documents": 0') == 1  # nothing written
