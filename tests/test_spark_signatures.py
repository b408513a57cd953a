"""The Spark load of an index of several signatures (``init --signatures body,lead150``): every
signature's index rows and the document rows (each signature's 8 bytes, then the metadata) are,
cell for cell, what the local engine's load writes, on HBase (HFiles and bulk loads) and on the
embedded store (the driver writes); a check of either index then answers the same, lead matches
named. Needs a local Spark with the jvm/ helper (and HBase for its case)."""

from __future__ import annotations

import gzip
import json
import random
import subprocess

import pytest
from test_spark import BAD_LINES, local_load_to, same_report, spark_load_to, with_zk

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
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


@pytest.mark.parametrize("where", ["embedded", pytest.param("hbase", marks=pytest.mark.hbase)])
def test_a_spark_load_writes_every_signature_as_the_local_engine(spark, where, request, tmp_path, xwlb_path):
    corpus, copies = write_corpus(tmp_path, xwlb_path)
    if where == "hbase":
        urls = [with_zk(hbase_store_url(request.getfixturevalue("hbase_url"))) for _ in range(2)]
    else:
        urls = [str(tmp_path / "spark-index"), str(tmp_path / "local-index")]
    for url in urls:
        Index.create(open_store(url, create=True), 4, 3, signatures="body,lead150", probes="8,1")
    try:
        a = spark_load_to(urls[0], spark, [corpus], tmp_path / "rejects-spark.jsonl")
        b = local_load_to(urls[1], [corpus], tmp_path / "rejects-local.jsonl")
        same_report(a, b)
        assert (a["indexed"], a["new"], a["rejected"]) == (1151, 1150, len(BAD_LINES))
        assert (tmp_path / "rejects-spark.jsonl").read_bytes() == (tmp_path / "rejects-local.jsonl").read_bytes()
        keys = index_keys(urls[0])
        assert keys == index_keys(urls[1])
        assert len(keys) == 2 * 4 * 1150 and {key[4] for key in keys} == {1, 2, 3, 4, 17, 18, 19, 20}
        docs = documents(urls[0])
        assert docs == documents(urls[1]) and len(docs) == 1150
        assert sum(body != lead for body, (lead,), _ in docs.values()) > 900  # the leads' own (a short text: its body)
        checked = [subprocess.run(["dedup-hbase", "check", "--store", url, "--json", str(copies)], check=True,
                                  capture_output=True, text=True).stdout for url in urls]
        assert checked[0] == checked[1]
        answers = [json.loads(line) for line in checked[0].splitlines()]
        assert sum(any(m.get("signature") == "lead150" for m in a["matches"]) for a in answers) >= 100
        if where == "embedded":  # refused before a session starts: precomputed fingerprints carry the body's alone
            with pytest.raises(InvalidInput, match="an index with signatures body,lead150 fingerprints the texts"):
                spark_load_to(urls[0], None, [corpus], fingerprints=True)
    finally:
        if where == "hbase":
            for url in urls:
                with open_store(url) as store:
                    store.drop()



@pytest.mark.hbase
def test_a_spark_check_of_signatures_and_probes_is_brute_force(spark, hbase_url, tmp_path, xwlb_path):
    """``check --engine spark`` of an index of body,lead150 with probes 8,1: each copy's matches
    those of a brute force over every signature and probe (fingerprinted from the library's
    parts), and the local check's records, with every match and with one at most (the count)."""
    from test_signatures import expected_checks
    from test_spark_check import local_records, same_records, spark_check

    from dedup_hbase.jobs.options import CheckOptions
    from dedup_hbase.jobs.spark import SparkOptions, spark_check_files
    from dedup_hbase.report.copies import Copier, edit_characters

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(400), f)]
    rnd = random.Random(9)
    copier = Copier("zh", edit_characters(texts, rnd))
    originals, others = texts[:300], texts[300:]
    copies = ([t[:len(t) // 2] for t in originals[:100]] + [copier.edit1(rnd, t) for t in originals[100:200]]
              + [t[:len(t) // 2] for t in others])
    indexed, checked = tmp_path / "originals.jsonl", tmp_path / "copies.jsonl"
    indexed.write_text("".join(json.dumps({"id": f"o{i}", "text": t}, ensure_ascii=False) + "\n"
                               for i, t in enumerate(originals)), encoding="utf-8")
    checked.write_text("".join(json.dumps({"id": f"c{i}", "text": t}, ensure_ascii=False) + "\n"
                               for i, t in enumerate(copies)) + '{"id": "bad", "text": ""}\n', encoding="utf-8")
    url = with_zk(hbase_store_url(hbase_url))
    Index.create(open_store(url), 4, 3, signatures="body,lead150", probes="8,1")
    try:
        local_load_to(url, [indexed])
        spark_check(url, spark, [checked], tmp_path / "out")
        got = json_lines(tmp_path / "out")
        assert len(got) == len(copies) + 1 and [r for r in got if "error" in r][0]["id"] == "bad"
        answers = {r["id"]: sorted((m["distance"], m["id"], m["signature"]) for m in r["matches"])
                   for r in got if "error" not in r}
        expected = expected_checks(originals, copies, (8, 1))
        assert answers == expected
        assert sum(any(s == "lead150" for _, _, s in found) for found in expected.values()) >= 50
        same_records(got, local_records(url, checked, fingerprints=False))
        spark_check(url, spark, [checked], tmp_path / "one", max_matches=1)
        same_records(json_lines(tmp_path / "one"), local_records(url, checked, fingerprints=False, max_matches=1))
        with open_store(url) as store:
            for options, message in ((CheckOptions(out=str(tmp_path / "x"), fingerprints=True),
                                      "an index with signatures body,lead150 fingerprints the texts themselves"),):
                with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
                    spark_check_files(Index.open(store), [str(checked)], options, SparkOptions(), session=None)
    finally:
        with open_store(url) as store:
            store.drop()


@pytest.mark.hbase
def test_add_new_of_signatures_and_probes_leaves_the_index_as_load_skip_near_dups(spark, hbase_url, tmp_path,
                                                                                   xwlb_path):
    """``check --engine spark --add-new`` into an index of body,lead150 with probes 8,1: the
    index (every signature's cells, the document rows) is what a local ``load --skip-near-dups``
    of the input in one batch leaves, and the counts its counts: copies of indexed texts (halves,
    exact copies, an indexed id again) and near pairs inside the input (a text, then its half and
    its quarter, under other ids) left out, new texts added."""
    from test_spark_check import spark_check

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(500), f)]
    rnd = random.Random(12)
    indexed, fresh = texts[:200], texts[200:]
    lines = ([{"id": f"h{i}", "text": t[:len(t) // 2]} for i, t in enumerate(indexed[:80])]
             + [{"id": f"x{i}", "text": t} for i, t in enumerate(indexed[80:120])]
             + [{"id": f"o{i}", "text": t} for i, t in enumerate(indexed[120:140], 120)]
             + [{"id": f"n{i}", "text": t} for i, t in enumerate(fresh)]
             + [{"id": f"nh{i}", "text": t[:len(t) // 2]} for i, t in enumerate(fresh[:100])]
             + [{"id": f"nq{i}", "text": t[:len(t) // 4]} for i, t in enumerate(fresh[:100])])
    rnd.shuffle(lines)
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    base.write_text("".join(json.dumps({"id": f"o{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(indexed)), encoding="utf-8")
    new.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    urls = [with_zk(hbase_store_url(hbase_url)) for _ in range(2)]
    try:
        for url in urls:
            Index.create(open_store(url), 4, 3, signatures="body,lead150", probes="8,1")
            local_load_to(url, [base])
        local = local_load_to(urls[0], [new], skip_near_dups=True, batch_size=5000)
        report = spark_check(urls[1], spark, [new], tmp_path / "out", add_new=True)
        assert local["near_duplicates_skipped"] >= 150 and local["indexed"] >= 250  # 178 and 462
        assert (report.added, report.skipped) == (local["indexed"], local["near_duplicates_skipped"])
        assert index_keys(urls[1]) == index_keys(urls[0])
        assert documents(urls[1]) == documents(urls[0])
    finally:
        for url in urls:
            with open_store(url) as store:
                store.drop()


def json_lines(out) -> list[dict]:
    return [json.loads(line) for f in sorted((out / "json").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines()]


@pytest.mark.hbase
def test_a_spark_check_of_signatures_leaves_expired_documents_out(spark, hbase_url, tmp_path, xwlb_path):
    """An index of body,lead150 with a TTL: a document loaded longer ago than it matches under no
    signature on either engine (its document row read after both signatures' 16 bytes)."""
    import time

    from test_spark_check import local_records, same_records, spark_check

    from dedup_hbase import Document

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(60), f)]
    url = with_zk(hbase_store_url(hbase_url))
    index = Index.create(open_store(url), 4, 3, signatures="body,lead150", ttl=3600)
    try:
        now = int(time.time())
        docs = []
        for i, text in enumerate(texts):
            simhash = index.fingerprint(text)
            docs += [Document(f"d{i}{tag}", simhash, {"loaded": loaded}, index.more_signatures(text, simhash))
                     for tag, loaded in (("old", now - 7200), ("new", now))]
        index.write(docs)
        halves = tmp_path / "halves.jsonl"
        halves.write_text("".join(json.dumps({"id": f"h{i}", "text": t[:len(t) // 2]}, ensure_ascii=False) + "\n"
                                  for i, t in enumerate(texts)), encoding="utf-8")
        spark_check(url, spark, [halves], tmp_path / "out")
        got = json_lines(tmp_path / "out")
        same_records(got, local_records(url, halves, fingerprints=False))
        found = {m["id"] for r in got for m in r["matches"]}
        assert len(found) >= 40 and not any(i.endswith("old") for i in found)
        assert any(m["signature"] == "lead150" for r in got for m in r["matches"])
    finally:
        with open_store(url) as store:
            store.drop()


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
