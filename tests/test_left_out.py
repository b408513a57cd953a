"""``load --skip-near-dups`` decides as one batch of the whole input, whatever ``--batch-size``:
a document is left out when an earlier document of the input (or one indexed before the load)
with another id is within k bits, whether that one was kept or left out itself (jobs/local/left_out.py).
Against a pair-by-pair brute force of that rule on planted structure: chains that cross batch
boundaries, copies under one id and under several, pairs at exactly k and k + 1 bits; and on
texts with the short-text rule, the index's cells equal for every batch size. A kill -9 and
resume of such a load: tests/test_crash.py."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.jobs.local.left_out import LeftOut, cache_dir
from dedup_hbase.jobs.local.load import load_files
from dedup_hbase.jobs.options import LoadOptions

from conftest import hbase_store_url

K = 3


def flipped(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed: int) -> list[tuple[str, int]]:
    """(id, simhash) in input order: chains (each link 3 bits from the last, the ends 6 or more
    apart), copies under one id and under another, pairs at exactly 3 and 4 bits, lone ones; the
    order shuffled so that links fall into different batches."""
    rnd = random.Random(seed)
    docs = []
    for c in range(6):  # chains of 4
        value = rnd.getrandbits(64)
        for link in range(4):
            docs.append((f"chain{c}-{link}", value))
            value = flipped(value, 3, rnd)
    for c in range(4):  # copies: three ids, and one id twice
        value = rnd.getrandbits(64)
        docs += [(f"copy{c}-a", value), (f"copy{c}-b", value), (f"copy{c}-c", flipped(value, 1, rnd)),
                 (f"copy{c}-a", flipped(value, 2, rnd))]
    for p in range(4):  # pairs at k and k + 1 bits
        value = rnd.getrandbits(64)
        docs += [(f"at3-{p}", value), (f"at3-{p}x", flipped(value, 3, rnd)),
                 (f"at4-{p}", value ^ (1 << 60) ^ (1 << 61) ^ (1 << 62) ^ (1 << 63)), (f"at4-{p}x", value ^ 0xF)]
    docs += [(f"lone{i}", rnd.getrandbits(64)) for i in range(10)]
    rnd.shuffle(docs)
    return docs


def brute_force(docs: list[tuple[str, int]]) -> set[str]:
    """The ids indexed: those of the documents with no earlier one of another id within K bits."""
    return {doc_id for j, (doc_id, value) in enumerate(docs)
            if not any(other != doc_id and bin(value ^ earlier).count("1") <= K for other, earlier in docs[:j])}


def indexed(store_url: str) -> tuple[set[str], set[bytes]]:
    with open_store(store_url) as store:
        return ({raw.decode() for raw, _ in store.iterate("docs")}, {key for key, _ in store.iterate("index")})


def load(tmp_path: Path, name: str, path: Path, batch_size: int, *init: str) -> tuple[set[str], set[bytes], dict]:
    """A ``load --skip-near-dups --groups`` into a new embedded store: the ids and index keys it
    holds, and the report with the groups written (``"groups"``: each group's ids, as sets)."""
    return load_into(str(tmp_path / name), tmp_path / f"{name}.groups.jsonl", path, batch_size, *init)


def load_into(store: str, groups: Path, path: Path, batch_size: int, *init: str) -> tuple[set[str], set[bytes], dict]:
    """``load``'s, into the new store ``store`` (any URL), its groups written to ``groups``."""
    subprocess.run(["dedup-hbase", "init", "--store", store, *init], check=True, capture_output=True)
    with open_store(store) as s:
        report = load_files(Index.open(s), [str(path)], LoadOptions(fingerprints=init[:2] == ("--short-texts", "off"),
                                                                     batch_size=batch_size, skip_near_dups=True,
                                                                     groups=str(groups)))
    written = sorted(sorted(json.loads(line)["ids"]) for line in groups.read_text().splitlines())
    return (*indexed(store), {**report.to_dict(), "groups": written})


@pytest.mark.parametrize("seed", [1, 2])
def test_every_batch_size_leaves_out_what_one_batch_does(tmp_path, monkeypatch, seed):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    docs = planted(seed)
    path = tmp_path / "fps.jsonl"
    path.write_text("".join(json.dumps({"id": i, "simhash": f"{v:016x}"}) + "\n" for i, v in docs))
    want = brute_force(docs)
    assert 0 < len(want) < len({i for i, _ in docs})  # near-duplicates there to leave out
    results = {}
    for batch_size in (1, 2, 3, 7, len(docs)):
        ids, keys, report = load(tmp_path, f"b{batch_size}", path, batch_size, "--short-texts", "off")
        assert ids == want, (batch_size, sorted(ids ^ want))
        results[batch_size] = (keys, report["near_duplicates_skipped"], report["groups"])
    assert len(set(map(repr, results.values()))) == 1  # the same index rows, count and groups for every size
    assert cache_dir().is_dir() and list(cache_dir().iterdir()) == []  # each load's folder removed as it completed


@pytest.mark.hbase
def test_an_hbase_index_leaves_out_what_one_batch_does(tmp_path, monkeypatch, hbase_url):
    """The main index on HBase, the left-out fingerprints in their embedded store beside it: in
    batches of 3, the ids, index rows, count and groups of one batch into an embedded index."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    docs = planted(3)
    path = tmp_path / "fps.jsonl"
    path.write_text("".join(json.dumps({"id": i, "simhash": f"{v:016x}"}) + "\n" for i, v in docs))
    url = hbase_store_url(hbase_url)
    try:
        on_hbase = load_into(url, tmp_path / "hbase.groups.jsonl", path, 3, "--short-texts", "off")
    finally:
        with open_store(url) as store:
            if store.exists():
                store.drop()
    one = load(tmp_path, "one", path, len(docs), "--short-texts", "off")
    assert on_hbase[0] == brute_force(docs) == one[0]
    assert on_hbase[1] == one[1]
    assert [(r["near_duplicates_skipped"], r["groups"]) for r in (on_hbase[2], one[2])] == [
        (one[2]["near_duplicates_skipped"], one[2]["groups"])] * 2
    assert list(cache_dir().iterdir()) == []


def test_one_embedded_store_named_two_ways_has_one_left_out_folder(tmp_path, monkeypatch):
    """A resume that names the embedded store by another relative path (or through a link)
    finds the folder the first run left: it is named after the store's resolved folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    subprocess.run(["dedup-hbase", "init", "--store", str(tmp_path / "a" / "index")], check=True, capture_output=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    folders = []
    for cwd, name in ((tmp_path / "a", "index"), (tmp_path / "b", "../a/index"), (tmp_path, "link/index")):
        monkeypatch.chdir(cwd)
        with open_store(name) as store:
            folders.append(LeftOut(Index.open(store), "key", fresh=False, resumed=False).folder)
    assert len(set(folders)) == 1 and folders[0].parent == cache_dir()
    with open_store(str(tmp_path / "a" / "index")) as store:
        assert LeftOut(Index.open(store), "other key", fresh=False, resumed=False).folder != folders[0]


def test_a_chain_across_batches_is_left_out_as_in_one_batch(tmp_path):
    """a, b at 3 bits from a, c at 3 bits from b and 6 from a, each in its own batch: b is left
    out (near a), and c too (near b, an earlier document of the input), as in one batch; before
    left_out.py, a batch of one indexed c."""
    a = 0x0123456789ABCDEF
    b, c = a ^ 0b111, a ^ 0b111111
    path = tmp_path / "chain.jsonl"
    path.write_text("".join(json.dumps({"id": i, "simhash": f"{v:016x}"}) + "\n" for i, v in [("a", a), ("b", b), ("c", c)]))
    for batch_size in (1, 3):
        ids, _, report = load(tmp_path, f"c{batch_size}", path, batch_size, "--short-texts", "off")
        assert (ids, report["near_duplicates_skipped"]) == ({"a"}, 2), batch_size


def test_texts_with_the_short_text_rule_leave_out_the_same_for_every_batch_size(tmp_path, xwlb_path):
    """The default index (the short-text rule, sketches in the cells): titles and their edited
    copies, in batches of 1, 5 and all: the same documents and index cells."""
    rnd = random.Random(44)
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        titles = [t for t in (json.loads(line).get("title") for _, line in zip(range(400), f)) if t][:150]
    docs = []
    for i, title in enumerate(titles):
        docs.append({"id": f"t{i}", "text": title})
        if rnd.random() < 0.4:
            docs.append({"id": f"t{i}-copy", "text": title + "。"})
        if rnd.random() < 0.2:
            docs.append({"id": f"t{i}-again", "text": title + "！"})
    rnd.shuffle(docs)
    path = tmp_path / "titles.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    results = {size: load(tmp_path, f"t{size}", path, size) for size in (1, 5, len(docs))}
    ids, keys, report = results[len(docs)]
    assert 0 < report["near_duplicates_skipped"] < len(docs)
    for size, (other_ids, other_keys, other_report) in results.items():
        assert (other_ids, other_keys, other_report["near_duplicates_skipped"], other_report["groups"]) == \
            (ids, keys, report["near_duplicates_skipped"], report["groups"]), size


def test_a_resumed_load_whose_left_out_folder_is_gone_says_so_in_one_line(tmp_path):
    """Killed (-9) half way, the load's left-out fingerprints stay in its folder for the resume;
    deleted meanwhile, the resume refuses in one line (it would decide by batch), and --restart
    loads again from the start, as one batch would."""
    rnd = random.Random(5)
    values = []
    for _ in range(4000):
        values.append(flipped(rnd.choice(values), rnd.randint(0, 3), rnd) if values and rnd.random() < 0.2
                      else rnd.getrandbits(64))
    path = tmp_path / "fps.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "simhash": f"{v:016x}"}) + "\n" for i, v in enumerate(values)))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    store = str(tmp_path / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store, "--short-texts", "off"], check=True, capture_output=True)
    cmd = ["dedup-hbase", "load", "--fingerprints", "--skip-near-dups", "--batch-size", "100", "--store", store, str(path)]
    proc = subprocess.Popen([*cmd, "--progress-every", "0"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("progress: ") and int(line.split()[1].replace(",", "")) >= 2000:
            proc.send_signal(signal.SIGKILL)
            break
    assert proc.wait() == -signal.SIGKILL
    proc.stderr.close()
    (folder,) = (tmp_path / "cache" / "dedup-hbase" / "left-out").iterdir()
    shutil.rmtree(folder)
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.splitlines() == [
        f"error: this load has left out documents already, and the fingerprints it keeps of them ({folder}) "
        "are gone: run it with --restart (writes are idempotent)"], refused.stderr
    subprocess.run([*cmd, "--restart", "-q"], env=env, check=True, capture_output=True)
    docs = list(zip([f"d{i}" for i in range(len(values))], values))
    assert indexed(store)[0] == brute_force_fast(docs)
    assert list(folder.parent.iterdir()) == []


def brute_force_fast(docs: list[tuple[str, int]]) -> set[str]:
    """``brute_force`` with numpy (ids distinct here)."""
    values = np.array([v for _, v in docs], dtype=np.uint64)
    kept = set()
    for j, (doc_id, value) in enumerate(docs):
        x = values[:j] ^ np.uint64(value)
        bits = np.unpackbits(x.view(np.uint8)).reshape(-1, 64).sum(axis=1) if j else np.array([])
        if not (bits <= K).any():
            kept.add(doc_id)
    return kept


def test_one_id_left_out_twice_in_a_batch_keeps_both_fingerprints(tmp_path):
    """y is left out twice in the first batch (near x, then near z); w, in the next batch, is
    near the first y only (3 bits; x is 4 bits away): it is left out, as in one batch."""
    a, b = 0x0F0F0F0F0F0F0F0F, 0x7777000011112222
    w = a ^ 0b1 ^ 0b1110
    docs = [("x", a), ("z", b), ("y", a ^ 0b1), ("y", b ^ 0b1), ("w", w)]
    assert brute_force(docs) == {"x", "z"}
    path = tmp_path / "fps.jsonl"
    path.write_text("".join(json.dumps({"id": i, "simhash": f"{v:016x}"}) + "\n" for i, v in docs))
    for batch_size in (4, 5):
        ids, _, report = load(tmp_path, f"y{batch_size}", path, batch_size, "--short-texts", "off")
        assert (ids, report["near_duplicates_skipped"]) == ({"x", "z"}, 3), batch_size
