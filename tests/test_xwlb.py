"""All of the shared Chinese news corpus, through the command line: load once, check
everything, and compare 2,000+ lookups with a brute-force scan (with the default index's
short-text rule: text/units.py)."""

import gzip
import json
import random
import subprocess

import numpy as np
import pytest

from dedup_hbase.index.confirm import kept_of, sketches_agree
from dedup_hbase.text.units import WORDS, text_sketches

pytestmark = pytest.mark.slow


def brute_force(ids, fps, query, k, rule=None):
    """The documents within ``k`` bits of ``query``; with ``rule`` (the sketches of ``ids`` and of
    the query, and a short sketch -> its kept text) those the short-text rule lets match."""
    distances = np.bitwise_count(fps ^ np.uint64(query))
    hits = np.nonzero(distances <= k)[0]
    if rule is not None:
        sketches, mine, texts = rule
        hits = [i for i in hits if sketches_agree(int(distances[i]), mine, int(sketches[i]), None, WORDS, texts)]
    return sorted((int(distances[i]), ids[i]) for i in hits)


@pytest.fixture(scope="module")
def checked(xwlb_path, tmp_path_factory):
    store = str(tmp_path_factory.mktemp("xwlb") / "store")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    load = subprocess.run(["dedup-hbase", "load", "--store", store, "--json", str(xwlb_path)],
                          check=True, capture_output=True, text=True)
    report = json.loads(load.stdout)
    check = subprocess.run(["dedup-hbase", "check", "--store", store, "--json", str(xwlb_path)],
                           check=True, capture_output=True, text=True)
    return report, [json.loads(line) for line in check.stdout.splitlines()]


def test_whole_corpus_loaded_in_one_load(checked):
    report, answers = checked
    assert report["read"] == 19_339 == len(answers)
    assert report["read"] == report["indexed"] + report["rejected"]
    assert report["indexed"] == sum(1 for a in answers if "matches" in a)
    assert report["indexed"] >= 19_300


def test_every_document_finds_itself(checked):
    _, answers = checked
    for a in answers:
        if "matches" in a:
            assert {"id": a["id"], "simhash": a["simhash"], "distance": 0} in a["matches"]


def test_check_equals_brute_force(checked, xwlb_path):
    _, answers = checked
    good = [a for a in answers if "matches" in a]
    ids = [a["id"] for a in good]
    fps = np.array([int(a["simhash"], 16) for a in good], dtype=np.uint64)
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        text_of = {row["id"]: row["text"] for row in map(json.loads, f)}
    sketches, kepts = text_sketches([text_of[i] for i in ids])
    texts = kept_of(sketches, kepts)
    sample = random.Random(3).sample(range(len(good)), 2500)
    with_neighbours = refused = 0
    for i in sample:
        got = [(m["distance"], m["id"]) for m in good[i]["matches"]]
        assert got == brute_force(ids, fps, int(good[i]["simhash"], 16), 3, (sketches, sketches[i], texts))
        with_neighbours += len(got) > 1
        refused += len(brute_force(ids, fps, int(good[i]["simhash"], 16), 3)) > len(got)
    assert with_neighbours > 0  # the corpus has natural near-duplicates; the test sees some
    assert refused > 0  # and short ones the rule keeps apart (二次会议 / 三次会议: other numbers)
