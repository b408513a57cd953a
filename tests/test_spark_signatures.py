"""The Spark check of an index of several signatures under skew, and the helpers of the Spark
tests of the quality options. That a Spark load of ``--signatures body,lead150 --probes 8,1
--confirm T`` writes the local load's cells (both stores), that its check is a brute force over
every signature and probe, that ``--add-new`` leaves the index of ``load --skip-near-dups``, and
expiry under several signatures: tests/test_spark_confirm.py, with all the options together."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from test_spark import BAD_LINES, with_zk

from dedup_hbase import Index, open_store
from dedup_hbase.index.documents import parse_document

from conftest import hbase_store_url

pytestmark = pytest.mark.spark


def write_corpus(tmp_path, xwlb_path) -> tuple:
    """1,000 news texts, 150 of them again under other ids cut to their first half (what the
    lead finds), a repeated id (the last wins) and every kind of bad record; and the copies to
    check: 300 half texts, 100 of them of texts not loaded."""
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(1100), f)]
    rnd = random.Random(8)
    lines = [json.dumps({"id": f"n{i}", "text": t}, ensure_ascii=False) for i, t in enumerate(texts[:1000])]
    lines += [json.dumps({"id": f"half{i}", "text": texts[i][:len(texts[i]) // 2]}, ensure_ascii=False)
              for i in rnd.sample(range(1000), 150)]
    lines.append(json.dumps({"id": "n7", "text": texts[1050]}, ensure_ascii=False))
    for bad in BAD_LINES:
        lines.insert(rnd.randrange(len(lines)), bad)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    copies = tmp_path / "copies.jsonl"
    picks = rnd.sample(range(1000), 200) + list(range(1000, 1100))
    copies.write_text("".join(json.dumps({"id": f"c{i}", "text": texts[i][:len(texts[i]) // 2]}, ensure_ascii=False)
                              + "\n" for i in picks), encoding="utf-8")
    return corpus, copies


def index_keys(url: str) -> set[bytes]:
    with open_store(url) as store:
        return {key for key, _ in store.iterate("index")}


def documents(url: str) -> dict:
    """Every document row: its signatures' simhashes and metadata, the load time left out."""
    with open_store(url) as store:
        out = {}
        for key, value in store.iterate("docs"):
            doc = parse_document(key.decode(), value, 1)
            doc.meta.pop("loaded", None)
            out[doc.id] = (doc.simhash, doc.more, doc.meta)
        return out


def json_lines(out) -> list[dict]:
    return [json.loads(line) for f in sorted((out / "json").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines()]


@pytest.mark.hbase
def test_a_spark_check_of_signatures_reads_many_copies_once_per_key(spark, hbase_url, tmp_path, xwlb_path):
    """Skew: 5,000 copies of one news text (both signatures' runs 5,000 ids long) and 200 records
    checked, most of them that text again: the local check's records, every copy counted once
    (match_count 5,000, not 10,000 for the two signatures), at most --max-matches listed."""
    from test_spark_check import local_records, same_records, spark_check

    from dedup_hbase import Document

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(20), f)]
    url = with_zk(hbase_store_url(hbase_url))
    index = Index.create(open_store(url), 4, 3, signatures="body,lead150", probes="8,1")
    try:
        simhash = index.fingerprint(texts[0])
        more = index.more_signatures(texts[0], simhash)
        index.write([Document(f"copy{i:05}", simhash, {}, more) for i in range(5000)])
        checked = tmp_path / "checked.jsonl"
        checked.write_text("".join(json.dumps({"id": f"q{i}", "text": texts[0] if i % 10 else texts[i % 20]},
                                              ensure_ascii=False) + "\n" for i in range(200)), encoding="utf-8")
        spark_check(url, spark, [checked], tmp_path / "out", max_matches=3)
        got = json_lines(tmp_path / "out")
        same_records(got, local_records(url, checked, fingerprints=False, max_matches=3))
        copies = [r for r in got if r["matches"] and r["matches"][0]["id"] == "copy00000"]
        assert len(copies) >= 180 and {r["match_count"] for r in copies} == {5000}
        assert all(len(r["matches"]) == 3 for r in copies)
    finally:
        with open_store(url) as store:
            store.drop()
