"""check --engine spark against a real HBase and a local Spark (local[2]): the records of the
local ``check --json`` on the same index, exactly (as sets of records); skew (a prefix holding
thousands of copies of one fingerprint) bounded with the true count; --add-new leaves the
index as ``load --skip-near-dups`` of the same input does; the refusals. An index with the
short-text rule (text/shorts.py): a Spark load writes the local load's cells and rows, its check
gives the local check's records and the brute force's matches, its --add-new the index of ``load
--skip-near-dups``.

One SparkSession serves the whole module (the JVM helper's jars on its classpath)."""

from __future__ import annotations

import glob
import gzip
import itertools
import json
import random
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_spark import with_zk

from dedup_hbase import Index, open_store
from dedup_hbase.jobs.corpus import Fields, read_records
from dedup_hbase.jobs.local.check import check as local_check
from dedup_hbase.jobs.local.load import load as local_load
from dedup_hbase.jobs.options import CheckOptions, LoadOptions
from dedup_hbase.stores.memory import MemoryStore

from conftest import TEST_REGIONS, hbase_store_url, shared_corpus

pytestmark = [pytest.mark.spark]


@pytest.fixture
def hbase_index(hbase_url):
    """A fresh HBase index URL (4-split, k = 3), dropped afterwards."""
    urls = []

    def make(ttl=None, short=None):
        urls.append(with_zk(hbase_store_url(hbase_url)))
        Index.create(open_store(urls[-1]), 4, 3, regions=TEST_REGIONS, ttl=ttl, short=short)
        return urls[-1]
    yield make
    for url in urls:
        with open_store(url) as store:
            store.drop()


def flip(value: int, bits: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), bits):
        value ^= 1 << bit
    return value


def fp_line(doc_id: str, simhash: int) -> str:
    return json.dumps({"id": doc_id, "simhash": f"{simhash:016x}"})


def planted(seed: int = 11, copies: int = 3000):
    """An index (bases, their near variants at 0 to 4 bits, ``copies`` copies of one base) and
    2,000 queries near them or random, with two bad records: (index lines, query lines)."""
    rnd = random.Random(seed)
    bases = [rnd.getrandbits(64) for _ in range(800)]
    indexed = []
    for i, base in enumerate(bases):
        indexed.append(fp_line(f"d{i}", base))
        indexed += [fp_line(f"d{i}v{c}", flip(base, rnd.randint(0, 4), rnd)) for c in range(rnd.choice([0, 1, 3]))]
    indexed += [fp_line(f"copy{c:05d}", bases[0]) for c in range(copies)]
    queries = [fp_line(f"q{i}", flip(rnd.choice(bases), rnd.randint(0, 5), rnd) if rnd.random() < 0.7
                       else rnd.getrandbits(64)) for i in range(1998)]
    queries[5:5] = ['{"id": "bad-sim", "simhash": "xyz"}', '{"simhash": "0000000000000001"}']
    queries.append(fp_line("d3", bases[3]))  # an indexed id looked up again
    return indexed, queries


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def load_local(url: str, path: Path, fingerprints: bool = True, **kw) -> dict:
    with open_store(url) as store:
        records = read_records([str(path)], "auto", Fields())
        return local_load(Index.open(store), records, LoadOptions(fingerprints=fingerprints, workers=2, **kw)).to_dict()


def local_records(url: str, path: Path, fingerprints: bool = True, **kw) -> list[dict]:
    with open_store(url) as store:
        return list(local_check(Index.open(store), read_records([str(path)], "auto", Fields()),
                                CheckOptions(fingerprints=fingerprints, **kw)))


def spark_check(url: str, spark, paths, out: Path, **kw):
    from dedup_hbase.jobs.spark import SparkOptions, spark_check_files

    with open_store(url) as store:
        return spark_check_files(Index.open(store), [str(p) for p in paths], CheckOptions(out=str(out), **kw),
                                 SparkOptions(), session=spark)


def json_records(out: Path) -> list[dict]:
    files = glob.glob(f"{out}/json/*.jsonl")
    assert files
    return [json.loads(line) for f in files for line in open(f, encoding="utf-8")]


def same_records(a: list[dict], b: list[dict]) -> None:
    """Equal as sets of records (by id, then whole)."""
    key = lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False)
    assert len(a) == len(b)
    assert sorted(map(key, a)) == sorted(map(key, b))


def test_check_gives_the_records_of_the_local_check(hbase_index, spark, tmp_path, monkeypatch):
    url = hbase_index()
    indexed, queries = planted()
    load_local(url, write(tmp_path / "index.jsonl", indexed))
    probes = write(tmp_path / "q.jsonl", queries)
    expected = local_records(url, probes, max_matches=1000)
    assert sum(1 for r in expected if r.get("matches")) > 800  # the test looks at matches
    assert any("error" in r for r in expected)
    report = spark_check(url, spark, [probes], tmp_path / "out", fingerprints=True)
    got = json_records(tmp_path / "out")
    same_records(got, expected)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["json", "parquet"]  # no probes left
    assert (report.read, report.rejected) == (2001, 2)
    assert report.with_matches == sum(1 for r in expected if r.get("matches"))
    # the Parquet output holds the same records
    table = pq.read_table(tmp_path / "out" / "parquet").to_pylist()
    assert sorted(r["id"] or "" for r in table) == sorted(r["id"] or "" for r in expected)
    by_id = {r["id"]: r for r in table if r["error"] is None}
    for r in expected:
        if "error" not in r:
            assert by_id[r["id"]]["matches"] == r["matches"]
            assert by_id[r["id"]]["match_count"] == r.get("match_count")
    # a task's prefixes read by many scans (a scan per 50 probes, cut between prefixes): the same
    monkeypatch.setattr("dedup_hbase.jobs.spark.check.SCAN_PROBES", 50)
    spark_check(url, spark, [probes], tmp_path / "chunked", fingerprints=True)
    same_records(json_records(tmp_path / "chunked"), expected)


def test_skewed_prefix_is_bounded_with_the_true_count(hbase_index, spark, tmp_path):
    """3,000 copies of one fingerprint and its near variants in the index (one index row read
    in several parts); queries at it (and copies of one query: one lookup): at most
    max_matches each, by (distance, id), and the true count, as the local check says."""
    url = hbase_index()
    indexed, queries = planted(seed=5)
    load_local(url, write(tmp_path / "index.jsonl", indexed))
    base = int(json.loads(indexed[0])["simhash"], 16)
    rnd = random.Random(9)
    with open_store(url) as store:  # stale rows: two copies also under a fingerprint 2 bits away
        index = Index.open(store)   # (the match count is of index entries: each stale row counts)
        stale = np.array([flip(base, 2, rnd)] * 2, dtype=np.uint64)
        store.put_cells("index", index.scheme.key_table(stale), [b"copy00005", b"copy02999"], repeat=4)
    skewed = [fp_line(f"s{i}", flip(base, i % 3, rnd)) for i in range(300)] + queries[:200]
    probes = write(tmp_path / "q.jsonl", skewed)
    for limit in (7, 10_000):
        expected = local_records(url, probes, max_matches=limit)
        spark_check(url, spark, [probes], tmp_path / f"out{limit}", fingerprints=True, max_matches=limit)
        got = json_records(tmp_path / f"out{limit}")
        same_records(got, expected)
        counted = [r for r in got if (r["id"] or "").startswith("s")]
        if limit == 7:
            assert all(len(r["matches"]) == 7 and r["match_count"] >= 3000 for r in counted)
            within = {json.loads(line)["id"] for line in indexed
                      if bin(int(json.loads(line)["simhash"], 16) ^ base).count("1") <= 3}
            exact = [r for r in counted if int(r["simhash"], 16) == base]
            assert exact and all(r["match_count"] == len(within) + 2 for r in exact)  # entries: + 2 stale rows
        else:
            assert any(len(r["matches"]) > 3000 and "match_count" not in r for r in counted)


def test_check_of_news_texts_with_rejects(hbase_index, spark, tmp_path):
    """Texts fingerprinted in the executors (the shared news corpus): 600 indexed, 1,000
    checked (half of them indexed, a third of them cut short), bad records among them."""
    url = hbase_index()
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in itertools.islice(f, 1100)]
    write(tmp_path / "index.jsonl", [json.dumps(d, ensure_ascii=False) for d in docs[:600]])
    load_local(url, tmp_path / "index.jsonl", fingerprints=False)
    probes = []
    for i, d in enumerate(docs[100:1100]):
        text = d["text"][: len(d["text"]) * 9 // 10] if i % 3 == 0 else d["text"]
        probes.append(json.dumps({"id": f"n{i}", "text": text}, ensure_ascii=False))
    probes[7:7] = ['{"id": "bad-empty", "text": ""}', "not json at all", '{"text": "no id"}']
    path = write(tmp_path / "news.jsonl", probes)
    expected = local_records(url, path, fingerprints=False)
    assert sum(1 for r in expected if r.get("matches")) >= 300
    report = spark_check(url, spark, [path], tmp_path / "out")
    same_records(json_records(tmp_path / "out"), expected)
    assert report.rejected == sum(1 for r in expected if "error" in r) == 3


def test_a_page_indexed_again_changed_counts_as_the_local_check(hbase_index, spark, tmp_path):
    """An index with the short-text rule looks texts up through signed.py's merge (the local
    lookup's own ``bounded`` and ``merged``). News pages loaded, then loaded again with a
    sentence added under the same ids, and the first load's index cells written back: those ids
    under two fingerprints (stale rows). The originals checked: a page near both of its
    fingerprints is listed once, and the match count is the local check's, the index entries
    (2), not the distinct ids (1, which Spark's own merge counted before it was the local one)."""
    from test_short_index import T

    url = hbase_index(short=T)
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in itertools.islice(f, 300)]
    write(tmp_path / "v1.jsonl", [json.dumps({"id": d["id"], "text": d["text"]}, ensure_ascii=False) for d in docs])
    write(tmp_path / "v2.jsonl", [json.dumps({"id": d["id"], "text": d["text"] + "本台记者报道。"}, ensure_ascii=False)
                                  for d in docs])
    load_local(url, tmp_path / "v1.jsonl", fingerprints=False)
    with open_store(url) as store:
        first = store.scan_range("index", b"", None, 10_000)
    load_local(url, tmp_path / "v2.jsonl", fingerprints=False)  # a page's old rows removed
    with open_store(url) as store:
        store.put("index", first)  # and back
    for limit in (1, 10):
        expected = local_records(url, tmp_path / "v1.jsonl", fingerprints=False, max_matches=limit)
        stale = [r for r in expected if len(r["matches"]) == 1 and r.get("match_count") == 2
                 and r["matches"][0]["id"] == r["id"]]
        assert len(stale) >= 100  # near both of its fingerprints (127 of 300)
        spark_check(url, spark, [tmp_path / "v1.jsonl"], tmp_path / f"out{limit}", max_matches=limit)
        same_records(json_records(tmp_path / f"out{limit}"), expected)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["dedup-hbase", *args], capture_output=True, text=True)


def test_refusals(hbase_index, tmp_path):
    url = hbase_index()
    path = write(tmp_path / "q.jsonl", [fp_line("a", 1)])
    result = run_cli("check", "--store", url, str(path), "--engine", "spark")
    assert result.returncode == 1
    assert result.stderr.strip() == "error: check --engine spark writes its records to a folder: give --out DIR"
    result = run_cli("check", "--store", url, str(path), "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert result.stderr.strip() == "error: --out needs --engine spark (the local engine writes its records to stdout)"
    local = f"local:{tmp_path / 'embedded'}"
    assert run_cli("init", "--store", local).returncode == 0
    result = run_cli("check", "--store", local, str(path), "--engine", "spark", "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    assert result.stderr.strip() == ("error: check --engine spark reads an HBase index (hbase://...); use the "
                                     "local engine here")
    result = run_cli("load", "--store", local, str(path), "--engine", "spark", "--skip-near-dups")
    assert (result.returncode, result.stderr.strip()) == (1, "error: --skip-near-dups with --engine spark reads the "
                                                             "index in bulk: an HBase index (hbase://...); use the "
                                                             "local engine here")


def add_new_input(seed: int = 21) -> tuple[list[str], list[str]]:
    """An index and 2,000 documents to add: near the index, near each other (copies, chains
    a - b - c whose ends are more than k apart, pairs at k and k + 1 bits), an indexed id
    again (itself: not a near-duplicate), a repeated id, random ones, and rejects."""
    rnd = random.Random(seed)
    bases = [rnd.getrandbits(64) for _ in range(300)]
    indexed = [fp_line(f"d{i}", b) for i, b in enumerate(bases)]
    lines = [fp_line("d1", bases[1]), fp_line("d2", flip(bases[2], 2, rnd))]
    page = rnd.getrandbits(64)
    lines += [fp_line(f"copy{i}", page) for i in range(300)]
    lines += [fp_line(f"near{i}", flip(b, rnd.randint(0, 4), rnd)) for i, b in enumerate(rnd.choices(bases, k=400))]
    for i in range(60):
        a = rnd.getrandbits(64)
        b = flip(a, 3, rnd)
        c = flip(b, 3, rnd)
        lines += [fp_line(f"chain{i}a", a), fp_line(f"chain{i}b", b), fp_line(f"chain{i}c", c),
                  fp_line(f"pair{i}k", flip(a, 3, rnd) ^ (1 << 63)), fp_line(f"pair{i}x", flip(c, 4, rnd))]
    lines += [fp_line("same", page), fp_line("same", rnd.getrandbits(64))]
    lines += [fp_line(f"r{i}", rnd.getrandbits(64)) for i in range(2000 - len(lines))]
    rnd.shuffle(lines)
    lines[10:10] = ['{"id": "bad-sim", "simhash": "xyz"}', '{"simhash": "0000000000000001"}']
    return indexed, lines


def index_state(url: str) -> tuple[dict, set, dict]:
    from test_spark import documents, index_cells

    with open_store(url) as store:
        stats = Index.open(store).stats()
    for volatile in ("store", "created"):
        stats.pop(volatile)
    return stats, index_cells(url), documents(url)


def test_add_new_leaves_the_index_as_load_skip_near_dups(hbase_index, spark, tmp_path):
    """``check --add-new`` and ``load --skip-near-dups`` on the Spark engine (one code: adding.py)
    leave the index the local engine's ``load --skip-near-dups`` leaves (the input in one batch)."""
    from test_spark import spark_load_to

    indexed, lines = add_new_input()
    base = write(tmp_path / "index.jsonl", indexed)
    path = write(tmp_path / "new.jsonl", lines)
    local_url, spark_url, spark_load_url = hbase_index(), hbase_index(), hbase_index()
    for url in (local_url, spark_url, spark_load_url):
        load_local(url, base)
    local = load_local(local_url, path, skip_near_dups=True, batch_size=5000)
    report = spark_check(spark_url, spark, [path], tmp_path / "out", fingerprints=True, add_new=True)
    assert local["near_duplicates_skipped"] > 600  # the input is mostly near-duplicates
    assert (report.added, report.skipped) == (local["indexed"], local["near_duplicates_skipped"])
    assert index_state(spark_url) == index_state(local_url)
    loaded = spark_load_to(spark_load_url, spark, [path], fingerprints=True, skip_near_dups=True)
    numbers = lambda r: (r["read"], r["indexed"], r["new"], r["near_duplicates_skipped"], r["rejected"])
    assert numbers(loaded) == numbers(local)
    assert index_state(spark_load_url) == index_state(local_url)


def test_expired_documents_do_not_match(hbase_index, spark, tmp_path):
    """An index with a TTL: documents loaded longer ago than it match on neither engine."""
    import time

    from dedup_hbase.index.index import Document

    url = hbase_index(ttl=3600)
    rnd = random.Random(4)
    bases = [rnd.getrandbits(64) for _ in range(100)]
    now = int(time.time())
    docs = [Document(f"d{i}{tag}", flip(b, rnd.randint(0, 3), rnd), {"loaded": loaded})
            for i, b in enumerate(bases) for tag, loaded in (("old", now - 7200), ("new", now))]
    with open_store(url) as store:
        Index.open(store).write(docs)
    probes = write(tmp_path / "q.jsonl", [fp_line(f"q{i}", b) for i, b in enumerate(bases)])
    expected = local_records(url, probes)
    spark_check(url, spark, [probes], tmp_path / "out", fingerprints=True)
    got = json_records(tmp_path / "out")
    same_records(got, expected)
    found = {m["id"] for r in got for m in r["matches"]}
    assert found and not any(i.endswith("old") for i in found)


def test_short_texts_load_check_and_add_new_as_the_local_engine(hbase_index, spark, tmp_path):
    """Real short texts (news titles: unrelated ones sharing one heavy term, true copies) in an
    index with the short-text rule: what each engine writes and answers, and the brute force."""
    from test_short_index import T, lines, near, title_texts
    from test_spark import documents, index_cells, same_report, spark_load_to

    originals, copies = title_texts(shared_corpus("xwlb_zh.jsonl.gz"))
    rule = Index.create(MemoryStore(), short=T)
    expected = {f"c{c}": sorted((d, f"o{o}") for o, original in enumerate(originals)
                                for ok, d in [near(rule, copy, original)] if ok) for c, copy in enumerate(copies)}
    assert sum(1 for e in expected.values() if e) >= 100
    base, asked = lines(tmp_path / "o.jsonl", originals, "o"), lines(tmp_path / "c.jsonl", copies, "c")
    spark_url, local_url = hbase_index(short=T), hbase_index(short=T)
    report = spark_load_to(spark_url, spark, [base])
    same_report(report, load_local(local_url, base, fingerprints=False))
    assert index_cells(spark_url) == index_cells(local_url) and documents(spark_url) == documents(local_url)
    local = local_records(local_url, asked, fingerprints=False)
    assert {r["id"]: sorted((m["distance"], m["id"]) for m in r["matches"]) for r in local} == expected
    spark_check(spark_url, spark, [asked], tmp_path / "out")
    same_records(json_records(tmp_path / "out"), local)
    both = lines(tmp_path / "all.jsonl", copies + originals[::3], "n")
    skipped = load_local(local_url, both, fingerprints=False, skip_near_dups=True, batch_size=5000)
    added = spark_check(spark_url, spark, [both], tmp_path / "out", add_new=True)
    assert skipped["near_duplicates_skipped"] >= 100
    assert (added.added, added.skipped) == (skipped["indexed"], skipped["near_duplicates_skipped"])
    assert index_state(spark_url) == index_state(local_url)
