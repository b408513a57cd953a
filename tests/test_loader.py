"""Bulk load: near-duplicates the batch way, groups, accounting, resuming."""

import json
import random

import numpy as np
import pytest

from dedup_hbase import Index, Scheme, open_store
from dedup_hbase.index.neardup import batch_pairs
from dedup_hbase.jobs.corpus import Record
from dedup_hbase.jobs.interrupts import Interrupted
from dedup_hbase.jobs.local.load import load
from dedup_hbase.jobs.options import LoadOptions
from dedup_hbase.text.fingerprint import hamming


def planted(n, seed, clusters=40):
    """n fingerprints: random ones plus clusters of copies 0..4 bits apart."""
    rnd = random.Random(seed)
    out = [rnd.getrandbits(64) for _ in range(n - clusters * 4)]
    for _ in range(clusters):
        base = rnd.getrandbits(64)
        out.append(base)
        for _ in range(3):
            flipped = base
            for bit in rnd.sample(range(64), rnd.randint(0, 4)):
                flipped ^= 1 << bit
            out.append(flipped)
    rnd.shuffle(out)
    return out


@pytest.mark.parametrize("scheme", [Scheme(4, 1), Scheme(5, 2), Scheme(8, 4)], ids=lambda s: s.name)
def test_batch_pairs_equal_brute_force(scheme):
    fps = planted(600, 1)
    k = scheme.max_k
    want = {(i, j) for i in range(len(fps)) for j in range(i + 1, len(fps)) if hamming(fps[i], fps[j]) <= k}
    assert batch_pairs(np.array(fps, dtype=np.uint64), scheme, k) == want
    assert len(want) > 20


def test_batch_pairs_in_big_equal_segment_runs():
    fps = [0xABCD000000000000 | i for i in range(3000)]  # one 4-split segment, 3000 members
    got = batch_pairs(np.array(fps, dtype=np.uint64), Scheme(4, 1), 1)
    assert got == {(i, j) for i in range(3000) for j in range(i + 1, 3000) if hamming(fps[i], fps[j]) <= 1}


def records(fps, bad_every=0):
    for i, f in enumerate(fps):
        if bad_every and i % bad_every == 0:
            yield Record("mem", i + 1, id=f"d{i}", error="invalid UTF-8")
        else:
            yield Record("mem", i + 1, id=f"d{i}", simhash=f)


def expected_kept(fps, batch_size, k, bad_every=0):
    kept = []
    for start in range(0, len(fps), batch_size):
        batch = [(i, fps[i]) for i in range(start, min(start + batch_size, len(fps)))
                 if not (bad_every and i % bad_every == 0)]
        before = list(kept)
        for pos, (i, f) in enumerate(batch):
            if not any(hamming(f, g) <= k for _, g in before) and \
                    not any(hamming(f, g) <= k for _, g in batch[:pos]):
                kept.append((i, f))
    return {f"d{i}" for i, _ in kept}


@pytest.mark.parametrize("batch_size", [10_000, 97])
def test_skip_near_dups_and_groups(tmp_path, batch_size):
    fps = planted(1500, 2)
    index = Index.create(open_store("memory:"), 4, 3)
    groups = tmp_path / "groups.jsonl"
    report = load(index, records(fps, bad_every=50),
                  LoadOptions(fingerprints=True, batch_size=batch_size, skip_near_dups=True, groups=str(groups)))
    kept = expected_kept(fps, len(fps), 3, bad_every=50)  # as one batch, whatever the batch size (left_out.py)
    assert {d.id for d in index.get([f"d{i}" for i in range(len(fps))]) if d} == kept
    assert (report.read, report.rejected, report.indexed) == (1500, 30, len(kept))
    assert report.read == report.indexed + report.near_duplicates_skipped + report.rejected
    assert report.near_duplicates_skipped > 50
    lines = [json.loads(line) for line in groups.read_text().splitlines()]
    assert [g["group"] for g in lines] == list(range(1, len(lines) + 1))
    members = [set(g["ids"]) for g in lines]
    assert all(len(m) >= 2 for m in members)
    grouped = set().union(*members)
    skipped = {f"d{i}" for i in range(len(fps)) if i % 50} - kept
    assert skipped <= grouped  # every skipped document is in the group of what it duplicates
    for g in members:  # a group is connected by near-duplicate pairs
        ids = sorted(g)
        assert all(any(hamming(fps[int(a[1:])], fps[int(b[1:])]) <= 3 for b in ids if b != a) for a in ids)
    assert not (tmp_path / "groups.jsonl.edges").exists()


def test_groups_without_skipping_index_everything(tmp_path):
    fps = planted(400, 3)
    index = Index.create(open_store("memory:"), 5, 3)
    report = load(index, records(fps), LoadOptions(fingerprints=True, groups=str(tmp_path / "g.jsonl")))
    assert (report.indexed, report.near_duplicates_skipped) == (400, 0)
    pairs = {(i, j) for i in range(400) for j in range(i + 1, 400) if hamming(fps[i], fps[j]) <= 3}
    linked = {f"d{i}" for p in pairs for i in p}
    got = set().union(*(json.loads(line)["ids"] for line in (tmp_path / "g.jsonl").read_text().splitlines()))
    assert got == linked


def test_checkpoint_resumes_and_a_finished_load_does_nothing():
    fps = planted(1000, 4)
    index = Index.create(open_store("memory:"), 4, 3)

    def interrupted(n):
        for i, record in enumerate(records(fps)):
            if i == n:
                raise KeyboardInterrupt
            yield record

    options = LoadOptions(fingerprints=True, batch_size=100)
    with pytest.raises(Interrupted, match="^stopped after 400 records, all written and checkpointed; run the same"):
        load(index, interrupted(450), options, checkpoint="job1")
    assert index.stats()["documents"] == 400  # four whole batches written and checkpointed
    report = load(index, records(fps), options, checkpoint="job1")
    assert (report.resumed_after, report.read, report.indexed, report.already_complete) == (400, 1000, 1000, False)
    assert index.stats()["documents"] == 1000
    again = load(index, records(fps), options, checkpoint="job1")
    assert again.already_complete and again.read == 1000
    other = load(index, records(fps[:10]), LoadOptions(fingerprints=True), checkpoint="job2")
    assert (other.read, other.new) == (10, 0)
