"""The Spark engine and an index of the quality options together (``init --signatures
body,lead150 --probes 8,1 --confirm T``, index/confirm.py; each option's own brute force is in
test_confirm.py and test_signatures.py): its load writes every signature's rows and each
document's sketch, cell for cell as the local load, on both stores; ``check --engine spark``
answers a brute force over every signature and probe with the sketches confirming beyond 3 bits
(and the local check's records); ``--add-new`` leaves the index a local ``load
--skip-near-dups`` leaves; a TTL leaves expired documents out under every signature. Needs a
local Spark with the jvm/ helper (and HBase for its cases)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from test_confirm import T, expected_checks
from test_spark import local_load_to, same_report, spark_load_to, with_zk
from test_spark_signatures import index_keys, write_corpus

from dedup_hbase import Index, open_store
from dedup_hbase.index.confirm import CONFIRMED_BEYOND
from dedup_hbase.index.documents import parse_document
from dedup_hbase.index.layout import Scheme

from conftest import TEST_REGIONS, hbase_store_url

pytestmark = pytest.mark.spark
K = 6
OPTIONS = {"signatures": "body,lead150", "probes": "8,1", "confirm": T}  # the option set of docs/quality.md's bar


def documents(url: str) -> dict:
    """Every document row: its simhashes, sketch and metadata, the load time left out."""
    with open_store(url) as store:
        out = {}
        for key, value in store.iterate("docs"):
            doc = parse_document(key.decode(), value, 1, sketch=True)
            doc.meta.pop("loaded", None)
            out[doc.id] = (doc.simhash, doc.more, doc.sketch, doc.meta)
        return out


def news_texts(xwlb_path, n: int) -> list[str]:
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for _, line in zip(range(n), f)]


def write_texts(path, prefix: str, texts) -> None:
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")


@pytest.mark.parametrize("where", ["embedded", pytest.param("hbase", marks=pytest.mark.hbase)])
def test_a_spark_load_writes_the_sketches_as_the_local_engine(spark, where, request, tmp_path, xwlb_path):
    """Every cell as the local load writes it: the index cells' columns hold the escaped id and
    the sketch (an id with a 0x00 byte among them), the document rows the sketch too."""
    corpus, _ = write_corpus(tmp_path, xwlb_path)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "nul\u0000id", "text": "一个编号里有零字节的文档，它的索引列要转义。" * 5}) + "\n")
    if where == "hbase":
        urls = [with_zk(hbase_store_url(request.getfixturevalue("hbase_url"))) for _ in range(2)]
    else:
        urls = [str(tmp_path / "spark-index"), str(tmp_path / "local-index")]
    for url in urls:
        Index.create(open_store(url, create=True), "7/1", K, regions=TEST_REGIONS, **OPTIONS)
    try:
        a = spark_load_to(urls[0], spark, [corpus], tmp_path / "rejects-spark.jsonl")
        b = local_load_to(urls[1], [corpus], tmp_path / "rejects-local.jsonl")
        same_report(a, b)
        assert (a["indexed"], a["new"]) == (1152, 1151)
        keys = index_keys(urls[0])
        assert keys == index_keys(urls[1])
        flags = 2 * len(Scheme.parse("7/1").flags)  # two signatures
        assert sum(key[13:].startswith(b"nul\x00\xffid\x00\x00") for key in keys) == flags
        docs = documents(urls[0])
        assert docs == documents(urls[1]) and len(docs) == 1151
        with open_store(urls[0]) as store:
            index = Index.open(store)
            n3 = next(json.loads(line)["text"] for line in corpus.read_text(encoding="utf-8").splitlines()
                      if line.startswith('{"id": "n3"'))
            assert docs["n3"][2] == index.sketched(n3)[0]  # the sketch of the text
            assert len({sketch for _, _, sketch, _ in docs.values()}) > 1000
    finally:
        if where == "hbase":
            for url in urls:
                with open_store(url) as store:
                    store.drop()


@pytest.mark.hbase
def test_a_spark_check_with_a_confirmation_is_the_brute_force(spark, hbase_url, tmp_path, xwlb_path):
    """Each copy's matches (edits of 3% of the characters, halves, one edit, texts not
    indexed) are those of test_confirm.py's brute force over every signature and probe:
    beyond 3 bits only where the sketches are within T; and the local check's records, with
    every match and with one at most."""
    from test_spark_check import local_records, same_records, spark_check
    from test_spark_signatures import json_lines

    from dedup_hbase.report.copies import Copier, edit_characters

    texts = news_texts(xwlb_path, 400)
    rnd = random.Random(21)
    copier = Copier("zh", edit_characters(texts, rnd))
    originals = texts[:300]
    copies = ([copier.edit3(rnd, t) for t in originals[:120]] + [t[:len(t) // 2] for t in originals[120:160]]
              + [copier.edit1(rnd, t) for t in originals[160:200]] + texts[300:])
    indexed, checked = tmp_path / "originals.jsonl", tmp_path / "copies.jsonl"
    write_texts(indexed, "o", originals)
    nul = "o\u0000160"  # an id with a 0x00 byte (of a text edited once): its cells' column escapes it
    indexed.write_text(indexed.read_text(encoding="utf-8").replace('"id": "o160"', '"id": "o\\u0000160"', 1),
                       encoding="utf-8")
    write_texts(checked, "c", copies)
    url = with_zk(hbase_store_url(hbase_url))
    Index.create(open_store(url), "7/1", K, regions=TEST_REGIONS, **OPTIONS)
    try:
        local_load_to(url, [indexed])
        spark_check(url, spark, [checked], tmp_path / "out")
        got = json_lines(tmp_path / "out")
        answers = {r["id"]: sorted((m["distance"], m["id"], m.get("signature", "body")) for m in r["matches"])
                   for r in got}
        with open_store(url) as store:
            index = Index.open(store)
            expected = expected_checks(index, originals, copies, index.signatures.names)
        expected = {c: sorted((d, nul if i == "o160" else i, s) for d, i, s in found) for c, found in expected.items()}
        assert answers == expected and any(i == nul for found in expected.values() for _, i, _ in found)
        confirmed = sum(d > CONFIRMED_BEYOND for found in expected.values() for d, _, _ in found)
        assert confirmed >= 30, confirmed  # the confirmation is what the test compares
        assert sum(s == "lead150" for found in expected.values() for _, _, s in found) >= 20  # the halves
        same_records(got, local_records(url, checked, fingerprints=False))
        spark_check(url, spark, [checked], tmp_path / "one", max_matches=1)
        same_records(json_lines(tmp_path / "one"), local_records(url, checked, fingerprints=False, max_matches=1))
    finally:
        with open_store(url) as store:
            store.drop()


@pytest.mark.hbase
def test_add_new_with_a_confirmation_leaves_the_index_as_load_skip_near_dups(spark, hbase_url, tmp_path, xwlb_path):
    """``check --engine spark --add-new`` into an index with signatures, probes and a
    confirmation: the index and counts of a local ``load --skip-near-dups`` of the input in one
    batch. The input holds near pairs inside it beyond 3 bits (edits of 3% of the characters
    of a new text, under other ids, and 50 copies of one of them) and copies of indexed texts; a
    load without the confirmation leaves out more of them (the confirmation is what decides)."""
    from test_spark_check import spark_check

    from dedup_hbase.report.copies import Copier, edit_characters

    texts = news_texts(xwlb_path, 500)
    rnd = random.Random(22)
    copier = Copier("zh", edit_characters(texts, rnd))
    indexed, fresh = texts[:200], texts[200:]
    lines = ([{"id": f"e{i}", "text": copier.edit3(rnd, t)} for i, t in enumerate(indexed[:100])]
             + [{"id": f"o{i}", "text": t} for i, t in enumerate(indexed[100:120], 100)]
             + [{"id": f"n{i}", "text": t} for i, t in enumerate(fresh)]
             + [{"id": f"ne{i}", "text": copier.edit3(rnd, t)} for i, t in enumerate(fresh[:150])]
             + [{"id": f"nh{i}", "text": t[:len(t) // 2]} for i, t in enumerate(fresh[150:200])])
    rnd.shuffle(lines)
    lines += [{"id": f"same{i}", "text": lines[0]["text"]} for i in range(50)]
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    write_texts(base, "o", indexed)
    new.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    urls = [with_zk(hbase_store_url(hbase_url)) for _ in range(3)]
    try:
        for url, options in zip(urls, (OPTIONS, OPTIONS, {**OPTIONS, "confirm": None})):
            Index.create(open_store(url), "7/1", K, regions=TEST_REGIONS, **options)
            local_load_to(url, [base])
        local = local_load_to(urls[0], [new], skip_near_dups=True, batch_size=5000)
        unconfirmed = local_load_to(urls[2], [new], skip_near_dups=True, batch_size=5000)
        assert unconfirmed["near_duplicates_skipped"] > local["near_duplicates_skipped"] >= 100
        report = spark_check(urls[1], spark, [new], tmp_path / "out", add_new=True)
        assert (report.added, report.skipped) == (local["indexed"], local["near_duplicates_skipped"])
        assert index_keys(urls[1]) == index_keys(urls[0])
        assert documents(urls[1]) == documents(urls[0])
    finally:
        for url in urls:
            with open_store(url) as store:
                store.drop()


@pytest.mark.hbase
def test_a_spark_check_with_a_confirmation_and_a_ttl_is_the_local_check(spark, hbase_url, tmp_path, xwlb_path):
    """An index with signatures, probes, a confirmation and a TTL: the expiry keeps each id's
    sketch beside it (and reads a document row after both signatures' 16 bytes), so the Spark
    check's records are the local check's; no expired document matches under any signature,
    and matches beyond 3 bits (confirmed) and by the lead are among them."""
    import time

    from test_spark_check import local_records, same_records, spark_check
    from test_spark_signatures import json_lines

    from dedup_hbase import Document
    from dedup_hbase.report.copies import Copier, edit_characters

    texts = news_texts(xwlb_path, 150)
    rnd = random.Random(24)
    copier = Copier("zh", edit_characters(texts, rnd))
    url = with_zk(hbase_store_url(hbase_url))
    index = Index.create(open_store(url), "7/1", K, regions=TEST_REGIONS, ttl=3600, **OPTIONS)
    try:
        now = int(time.time())
        # of each text an expired copy first in id order, its sketch far from the text's (were the
        # sketches not kept beside the ids the expiry keeps, the live copy would get the far one)
        index.write([Document(f"d{i}-{tag}", simhash, {"loaded": loaded}, index.more_signatures(t, simhash),
                              index.sketched(t)[0] ^ flip)
                     for i, t in enumerate(texts) for simhash in [index.fingerprint(t)]
                     for tag, loaded, flip in (("0old", now - 7200, (1 << 32) - 1), ("1new", now, 0))])
        edited = tmp_path / "edited.jsonl"
        write_texts(edited, "e", [copier.edit3(rnd, t) if i % 3 else t[:len(t) // 2] for i, t in enumerate(texts)])
        spark_check(url, spark, [edited], tmp_path / "out")
        got = json_lines(tmp_path / "out")
        same_records(got, local_records(url, edited, fingerprints=False))
        found = [m for r in got for m in r["matches"]]
        assert len(found) >= 60 and not any(m["id"].endswith("old") for m in found)
        assert sum(m["distance"] > CONFIRMED_BEYOND for m in found) >= 10
        assert any(m.get("signature") == "lead150" for m in found)
    finally:
        with open_store(url) as store:
            store.drop()
