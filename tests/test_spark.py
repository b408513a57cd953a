"""load --engine spark against a real HBase and a local Spark (local[2]): the same index,
accounting and rejects as the local engine; reruns; Parquet; the embedded target.

One SparkSession serves the whole module (the JVM helper's jars on its classpath)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.index.schema import table_name
from dedup_hbase.jobs.corpus import Fields, read_records
from dedup_hbase.jobs.local.load import load as local_load
from dedup_hbase.jobs.options import LoadOptions
from dedup_hbase.jobs.spark import inputs

from conftest import TEST_REGIONS, hbase_store_url, shared_corpus

pytestmark = [pytest.mark.spark]

# "replaced": the local engine counts a repeated id of the input written over its earlier record in another
# batch; the Spark engine keeps the last record of an id before it writes, and counts only documents held before
VOLATILE = ("elapsed_s", "docs_per_s", "mb_per_s", "store", "replaced")


def with_zk(url: str) -> str:
    """The test HBase's URL with its ZooKeeper (scripts/test and scripts/hbase-local's port)."""
    if "zk=" in url:
        return url
    return f"{url}&zk=127.0.0.1:{os.environ.get('DEDUP_HBASE_ZK_PORT', '21818')}"


@pytest.fixture
def hbase_pair(hbase_url):
    """Two fresh HBase indexes (spark, local), dropped afterwards."""
    urls = [with_zk(hbase_store_url(hbase_url)) for _ in range(2)]
    for url in urls:
        Index.create(open_store(url), 4, 3, regions=TEST_REGIONS)
    yield urls
    for url in urls:
        with open_store(url) as store:
            store.drop()


def spark_load_to(url: str, spark, files, rejects: Path | None = None, staging: str | None = None, **kw):
    from dedup_hbase.jobs.spark import SparkOptions, spark_load_files

    with open_store(url) as store:
        options = LoadOptions(rejects=str(rejects) if rejects else None, **kw)
        return spark_load_files(Index.open(store), [str(f) for f in files], options, SparkOptions(staging=staging),
                                session=spark).to_dict()


def local_load_to(url: str, files, rejects: Path | None = None, **kw):
    with open_store(url, create=True) as store:
        index = Index.open(store)
        out = open(rejects, "w", encoding="utf-8") if rejects else None
        try:
            records = read_records([str(f) for f in files], "auto", Fields())
            return local_load(index, records, LoadOptions(workers=2, **kw), rejects=out).to_dict()
        finally:
            if out:
                out.close()


def same_report(a: dict, b: dict) -> None:
    strip = lambda r: {k: v for k, v in r.items() if k not in VOLATILE}
    assert strip(a) == strip(b)
    assert list(a["rejected_by_reason"]) == list(b["rejected_by_reason"])  # same order


def index_cells(url: str) -> set[tuple[bytes, bytes]]:
    import happybase

    store = open_store(url)
    connection = happybase.Connection(store.host, store.port)
    try:
        table = connection.table(table_name(store.table_prefix, "index"))
        return {(row, column) for row, cells in table.scan() for column in cells}
    finally:
        connection.close()


def documents(url: str) -> dict[str, tuple[int, dict]]:
    """Every document: simhash (with a sketch: the head's bytes, IndexSpec.head, as one number) and
    metadata without the load time."""
    with open_store(url) as store:
        head = Index.open(store).head
        out = {}
        for key, value in store.iterate("docs"):
            meta = json.loads(value[head:]) if len(value) > head else {}
            meta.pop("loaded", None)
            out[key.decode()] = (int.from_bytes(value[:head], "big"), meta)
        return out


def check_json(url: str, probes: Path) -> str:
    return subprocess.run(["dedup-hbase", "check", "--store", url, "--json", str(probes)], check=True,
                          capture_output=True, text=True).stdout


BAD_LINES = [
    '{"id": "bad-empty", "text": ""}',
    'not json at all',
    '{"text": "a text without an id"}',
    '[1, 2, 3]',
    '{"id": "bad-punct", "text": "。。。！！"}',
    '{"id": "", "text": "an empty id"}',
    '{"id": "bad-sim", "simhash": "xyz"}',
]


def write_inputs(tmp_path: Path, docs: list[str], seed: int = 3) -> list[Path]:
    """docs as JSONL with bad records and a repeated id mixed in, plus a small second file
    (TSV) with bad rows and an invalid UTF-8 line in a text file."""
    rnd = random.Random(seed)
    lines = list(docs)
    for bad in BAD_LINES:
        lines.insert(rnd.randrange(len(lines)), bad)
    repeated = json.loads(docs[10])
    repeated["text"] = json.loads(docs[20])["text"]  # the same id, later, another text: it wins
    lines.insert(rnd.randrange(len(lines) // 2, len(lines)), json.dumps(repeated, ensure_ascii=False))
    main = tmp_path / "corpus.jsonl"
    main.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    tsv = tmp_path / "more.tsv"
    tsv.write_text("id\ttext\ttitle\nt1\t第一条 新闻 内容 关于 经济 发展\tT1\nt2\t\t\nt3\ta\tb\tc\n", encoding="utf-8")
    raw = tmp_path / "lines.txt"
    raw.write_bytes("第一行 文本 内容 经济\n".encode() + b"\xff\xfe broken\n" + "第三行 文本 新闻 报道\n".encode())
    return [main, tsv, raw]


def test_pieces_read_as_the_whole_file(tmp_path):
    """A big uncompressed JSONL file read in pieces: the same records, lines and reasons."""
    lines = [json.dumps({"id": f"d{i}", "text": f"文本 {i} 新闻"}) if i % 7 else ("" if i % 2 else "bad{")
             for i in range(40_000)]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    f = inputs.plan([str(path)], "auto")[0]
    pieces = inputs.pieces(f, 4)
    assert len(pieces) == 1  # under two pieces' worth: read whole
    old = inputs.MIN_PIECE
    inputs.MIN_PIECE = 64 << 10
    try:
        pieces = inputs.pieces(f, 8)
    finally:
        inputs.MIN_PIECE = old
    assert len(pieces) >= 4
    got = []
    for p in pieces:
        from dedup_hbase.jobs.corpus import read_opened

        with open(path, "rb") as raw:
            raw.seek(p.start)
            data = raw.read() if p.end < 0 else raw.read(p.end - p.start)
        got += list(read_opened(io.BytesIO(data), path, p.source, p.fmt, Fields(), None, p.first_line, False))
    assert got == list(read_records([str(path)]))
    (tmp_path / "cr.jsonl").write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert len(inputs.pieces(inputs.plan([str(tmp_path / "cr.jsonl")], "auto")[0], 8)) == 1


def test_partition_targets_are_spark_hash_partitions(spark):
    from pyspark.sql import functions as F

    from dedup_hbase.jobs.spark.rows import partition_targets

    for n in (1, 7, 32):
        targets = partition_targets(n)
        frame = spark.createDataFrame([(v,) for v in targets], "part int").repartition(n, "part")
        placed = {r["part"]: r["p"] for r in frame.select("part", F.spark_partition_id().alias("p")).collect()}
        assert [placed[v] for v in targets] == list(range(n))


EDGES = [0, (1 << 64) - 1, 1 << 63, (1 << 63) - 1, 1, 0x8000000000000001, 0x00FF00FF00FF00FF]


def signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@pytest.mark.parametrize("scheme_name", ["4", "5", "7/3"])
def test_sql_index_keys_are_scheme_index_keys(spark, scheme_name):
    """The index rows built by Spark SQL (rows.py): key + qualifier bit-identical to
    Scheme.index_keys on seeded random simhashes and the edge values; every row on the
    Spark partition of its region."""
    from pyspark.sql import functions as F

    from dedup_hbase.index.layout import Scheme
    from dedup_hbase.jobs.spark import rows

    scheme = Scheme.parse(scheme_name)
    rnd = random.Random(11)
    sims = EDGES + [rnd.getrandbits(64) for _ in range(3000)] + [rnd.getrandbits(64) | (1 << 63) for _ in range(500)]
    ids = [f"d{i}-é中" for i in range(len(sims))]
    frame = spark.createDataFrame([(i, signed(s)) for i, s in zip(ids, sims)], "id string, simhash long")
    splits = [bytes([b]) for b in range(8, 256, 8)] + [bytes([0x80, 0x40])]
    targets = rows.partition_targets(2 * (len(splits) + 1))
    out = (rows.index_rows(frame, scheme, splits, targets, 2).repartition(len(targets), "part")
           .select("key", "qualifier", "part", F.spark_partition_id().alias("p")).collect())
    assert sorted(bytes(r["key"]) + bytes(r["qualifier"]) for r in out) == scheme.index_keys(
        [i.encode() for i in ids], sims)
    from bisect import bisect_right

    for r in out:
        assert r["p"] // 2 == bisect_right(sorted(splits), bytes(r["key"])) and targets[r["p"]] == r["part"]


def test_sql_document_values_are_document_value(spark):
    """Document rows built by Spark SQL: values bit-identical to index.document_value of
    index.document_meta (JSON escapes of every control character, quotes, backslashes,
    non-ASCII; no title, empty title; no length)."""
    from dedup_hbase.index.index import Document, document_meta, document_value
    from dedup_hbase.jobs.spark import rows

    rnd = random.Random(12)
    titles = [None, "", "plain", "中文 “标题”", "".join(chr(c) for c in range(0x21)) + '"\\/\x7f\u2028é']
    data = []
    for i, sim in enumerate(EDGES + [rnd.getrandbits(64) for _ in range(300)]):
        title = titles[i % len(titles)] if i % 7 else "".join(chr(rnd.randrange(0, 0x250)) for _ in range(12))
        data.append((f"id{i}", sim, f"/data/新闻\t{i % 3}\".jsonl", i + 1, title, None if i % 4 == 0 else i * 13))
    frame = spark.createDataFrame([(d[0], signed(d[1]), *d[2:]) for d in data],
                                  "id string, simhash long, source string, line long, title string, length long")
    got = {bytes(r["key"]): bytes(r["value"]) for r in rows.doc_rows(frame, 1_700_000_123, [b"id5"],
                                                                     rows.partition_targets(2), 1).collect()}
    assert got == {d[0].encode(): document_value(Document(d[0], d[1], document_meta(1_700_000_123, *d[2:])))
                   for d in data}


@pytest.mark.hbase
@pytest.mark.slow
def test_20k_documents_same_index_as_the_local_engine(spark, hbase_pair, tmp_path):
    """The issue's CI test: 20,000 documents of the shared corpus (the news items and the
    first English glossary entries), bad records mixed in."""
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = [line.rstrip("\n") for line in f if line.strip()]
    with gzip.open(shared_corpus("jargon_en.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs += [line.rstrip("\n") for line in f if line.strip()][:20_000 - len(docs)]
    assert len(docs) == 20_000
    files = write_inputs(tmp_path, docs)
    spark_url, local_url = hbase_pair
    a = spark_load_to(spark_url, spark, files, tmp_path / "rejects-spark.jsonl")
    b = local_load_to(local_url, files, tmp_path / "rejects-local.jsonl")
    same_report(a, b)
    assert a["read"] == 20_000 + len(BAD_LINES) + 1 + 3 + 1  # + repeated id, TSV rows, the text file (one document); blank lines are not records
    assert a["read"] == a["indexed"] + a["near_duplicates_skipped"] + a["rejected"]
    assert (tmp_path / "rejects-spark.jsonl").read_bytes() == (tmp_path / "rejects-local.jsonl").read_bytes()
    rejected = [json.loads(line) for line in (tmp_path / "rejects-spark.jsonl").read_text().splitlines()]
    assert {(Path(r["source"]).name, r["reason"].split(":")[0]) for r in rejected} >= {
        ("corpus.jsonl", "malformed JSON"), ("corpus.jsonl", "featureless text"), ("more.tsv", "1 more fields than the header has"),
        ("lines.txt", "invalid UTF-8 at byte 31")}
    assert all(r["line"] >= 1 for r in rejected)
    cells = index_cells(spark_url)
    assert len(cells) == 4 * a["new"]
    assert cells == index_cells(local_url)
    assert documents(spark_url) == documents(local_url)
    rnd = random.Random(5)
    probes = tmp_path / "probes.jsonl"
    probes.write_text("\n".join(rnd.sample(docs, 500)) + "\n", encoding="utf-8")
    answers = check_json(spark_url, probes)
    assert answers == check_json(local_url, probes)
    found = [len(json.loads(line)["matches"]) for line in answers.splitlines()]
    assert len(found) == 500 and sum(n >= 1 for n in found) >= 499  # (one id was loaded again with another text)


def sample_docs(n: int, seed: int = 1) -> list[str]:
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = [line.rstrip("\n") for line in f if line.strip()]
    return random.Random(seed).sample(docs, n)


@pytest.mark.hbase
def test_rerun_after_a_kill_between_the_bulk_loads_and_into_a_filled_index(spark, hbase_pair, tmp_path):
    """v1 loaded by the local engine into both; then v2 (some ids with new texts, new ids) by
    the Spark engine in a process of its own, killed with -9 (with its JVM) as soon as it logs
    the index table's bulk load, before the document table's: the index table has v2's rows,
    no new document row was loaded, and the staging folder keeps the document table's HFiles. The same
    load run again removes them, ends with the same index as the local engine's load of v2,
    and leaves nothing staged."""
    import signal

    docs = sample_docs(200)
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "a.jsonl").write_text("\n".join(docs[:150]) + "\n", encoding="utf-8")
    changed = []
    for line in docs[:25]:  # same ids, other texts
        obj = json.loads(line)
        obj["text"] = obj["text"][::-1]
        changed.append(json.dumps(obj, ensure_ascii=False))
    (v2 / "b.jsonl").write_text("\n".join(changed + docs[125:]) + "\n", encoding="utf-8")
    spark_url, local_url = hbase_pair
    for url in hbase_pair:
        local_load_to(url, [v1])
    staging = tmp_path / "staging"
    with open_store(spark_url) as store:
        index_table = table_name(store.table_prefix, "index")
    load = subprocess.Popen(["dedup-hbase", "load", "--store", spark_url, "--engine", "spark", "--spark-master",
                             "local[2]", "--staging", str(staging), "--verbose", "-q", str(v2)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    for line in load.stderr:  # the helper's data source logs each table it loaded (jvm/ HFileSink)
        if f"bulk load of {index_table}: " in line:
            os.killpg(load.pid, signal.SIGKILL)  # the load and its JVM
            break
    assert load.wait() == -signal.SIGKILL, "the load ended before it bulk-loaded its index table"
    load.stderr.close()
    new_ids = {json.loads(line)["id"] for line in docs[150:]}
    assert not new_ids & set(documents(spark_url))  # killed before the document table's bulk load
    assert len(index_cells(spark_url)) > len(index_cells(local_url))  # after the index table's (v2's new rows)
    staged = [p for p in staging.rglob("*") if p.is_file() and not p.name.startswith(".")]  # not Hadoop's .crc
    assert any("/docs/" in str(p) for p in staged)  # the killed run's document HFiles, never loaded
    a = spark_load_to(spark_url, spark, [v2], staging=str(staging))
    b = local_load_to(local_url, [v2])
    assert (a["read"], a["indexed"], a["rejected"]) == (b["read"], b["indexed"], b["rejected"])
    assert a["new"] == b["new"] == 50  # docs[150:200]; the killed run loaded no document row
    assert index_cells(spark_url) == index_cells(local_url)
    assert documents(spark_url) == documents(local_url)
    assert not any(p.is_file() for p in staging.rglob("*"))
    again = spark_load_to(spark_url, spark, [v2], staging=str(staging))
    assert again["already_complete"]


@pytest.mark.hbase
def test_the_same_hfiles_loaded_twice_double_nothing(spark, hbase_pair, tmp_path):
    from dedup_hbase.index.schema import load_schema
    from dedup_hbase.jobs.spark import hbase, hfiles, rows

    url = hbase_pair[0]
    store = open_store(url)
    index = Index.open(store)
    rnd = random.Random(2)
    docs = [(f"h{i}", rnd.getrandbits(64) - (1 << 63)) for i in range(2000)]
    frame = spark.createDataFrame(docs, "id string, simhash long")
    t = load_schema()["tables"]["index"]
    splits = [bytes([i * 16]) for i in range(1, 16)]
    cells = (rows.index_rows(frame, index.scheme, splits, rows.partition_targets(16), 1)
             .repartition(16, "part").sortWithinPartitions("key", "qualifier").select("key", "qualifier", "value"))
    target = store.hfile_target()
    kept = f"file://{tmp_path}/kept"  # without a ZooKeeper: written, not loaded, kept
    spec = hfiles.TableFiles.of(f"{kept}/index", target.tables["index"], "d", t, splits)
    hfiles.write_and_load(cells, None, [spec], [0], kept, 1234567890123, 7)
    written = [f for f in (tmp_path / "kept" / "index" / "d").iterdir() if not f.name.startswith(".")]
    assert len(written) == 16
    # the index table's 8 KB blocks (schema/tables.json), not HBase's 64 KB: a cell is about 40
    # bytes unencoded, so about 200 of them a block, where 64 KB blocks would hold every file's
    # 500 in one
    trailers = [hfile_trailer(f) for f in written]
    assert sum(t["entry_count"] for t in trailers) == 8000 and {t["num_data_index_levels"] for t in trailers} == {1}
    assert 150 <= 8000 / sum(t["data_index_count"] for t in trailers) <= 250
    assert index_cells(url) == set()
    staging = f"file://{tmp_path}/job"
    spec = dataclasses.replace(spec, folder=f"{staging}/index")
    for _ in range(2):
        hfiles.write_and_load(cells, hbase.ZooKeeper.of(target, url), [spec], [0], staging, 1234567890123, 7,
                              copy=True)
        assert len(index_cells(url)) == 8000
        assert not (tmp_path / "job").exists()
    probe = docs[7]
    assert [m.id for m in index.query(probe[1] % (1 << 64))] == ["h7"]


def hfile_trailer(path: Path) -> dict[str, int]:
    """The integer fields of an HFile's (version 3) fixed trailer: its last 4,096 bytes, the
    magic ``TRABLK"$`` and a length-delimited ``FileTrailerProto`` (HBase's HFile.proto)."""
    names = {1: "file_info_offset", 2: "load_on_open_data_offset", 3: "uncompressed_data_index_size",
             4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
             8: "num_data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
             12: "compression_codec"}
    data = path.read_bytes()[-4096:]
    assert data[:8] == b'TRABLK"$' and int.from_bytes(data[-4:], "big") & 0xFFFFFF == 3

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[at]
            value, shift, at = value | (byte & 0x7F) << shift, shift + 7, at + 1
            if byte < 0x80:
                return value, at

    length, at = varint(8)
    end, fields = at + length, {}
    while at < end:
        key, at = varint(at)
        if key & 7 == 2:  # a string or bytes field: skipped
            size, at = varint(at)
            at += size
        else:
            value, at = varint(at)
            fields[names.get(key >> 3, str(key >> 3))] = value
    return fields


def parquet_file(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = [json.loads(line) for line in sample_docs(120, seed=4)]
    ids = [d["id"] for d in docs]
    texts = [d["text"] for d in docs]
    ids[3], texts[5], texts[6] = None, "", "。。。"
    ids[9] = ids[8]  # repeated: the later row wins
    table = pa.table({"id": ids, "text": texts, "title": [d.get("title") for d in docs],
                      "extra": list(range(len(docs)))})
    pq.write_table(table, path, row_group_size=50)
    return path


def test_parquet_local_engine_reads_rows(tmp_path):
    path = parquet_file(tmp_path / "docs.parquet")
    records = list(read_records([str(path)]))
    assert len(records) == 120 and [r.line for r in records] == list(range(1, 121))
    assert records[3].error == "'id' is null" and records[5].text == ""
    assert records[0].title and records[0].source == str(path)


def test_parquet_and_the_embedded_target(spark, tmp_path):
    """Parquet and JSONL, by the Spark engine into an embedded store (the driver writes) and
    by the local engine into another: same report, rejects, documents and answers."""
    files = [parquet_file(tmp_path / "docs.parquet"), *write_inputs(tmp_path, sample_docs(200, seed=6))]
    urls = [str(tmp_path / "spark-store"), str(tmp_path / "local-store")]
    for url in urls:
        with open_store(url, create=True) as store:
            Index.create(store, 4, 3)
    a = spark_load_to(urls[0], spark, files, tmp_path / "rejects-spark.jsonl")
    b = local_load_to(urls[1], files, tmp_path / "rejects-local.jsonl")
    same_report(a, b)
    assert a["rejected_by_reason"]["no 'id' field"] >= 1
    assert (tmp_path / "rejects-spark.jsonl").read_bytes() == (tmp_path / "rejects-local.jsonl").read_bytes()
    assert documents(urls[0]) == documents(urls[1])
    probes = tmp_path / "probes.jsonl"
    probes.write_text("\n".join(sample_docs(60, seed=6)) + "\n", encoding="utf-8")
    assert check_json(urls[0], probes) == check_json(urls[1], probes)


@pytest.mark.hbase
def test_cli_engine_spark(hbase_url, tmp_path):
    """The command line end to end (its own Spark), and its refusals. Beside a local file, a
    CSV on "another file system": a viewfs mount of a local folder, set by ``--spark-conf
    spark.hadoop...`` (which the executors' readers must see), streamed in chunks (records.py)."""
    import csv

    url = with_zk(hbase_store_url(hbase_url))
    subprocess.run(["dedup-hbase", "init", "--store", url], check=True, capture_output=True)
    try:
        corpus = tmp_path / "c.jsonl"
        corpus.write_text("\n".join(sample_docs(50, seed=9)) + "\nnot json\n", encoding="utf-8")
        (tmp_path / "m").mkdir()
        with open(tmp_path / "m" / "more.csv", "w", newline="", encoding="utf-8") as f:
            rows = csv.writer(f)
            rows.writerow(["id", "text"])
            rows.writerows([(f"csv{i}", json.loads(doc)["text"].replace("。", "。\n", 1))
                            for i, doc in enumerate(sample_docs(20, seed=10))] + [("csv-empty", "")])
        mount = f"spark.hadoop.fs.viewfs.mounttable.cli.link./m={(tmp_path / 'm').as_uri()}"
        done = subprocess.run(["dedup-hbase", "load", "--store", url, "--engine", "spark", "--spark-master", "local[2]",
                               "--spark-conf", "spark.sql.shuffle.partitions=4", "--spark-conf", mount, "--json",
                               str(corpus), "viewfs://cli/m/more.csv"], check=True, capture_output=True, text=True)
        assert "jdk.incubator.vector" not in done.stderr  # the JVM's warning of the module Spark adds: said to no one
        report = json.loads(done.stdout)
        assert (report["read"], report["indexed"], report["new"], report["rejected"]) == (72, 70, 70, 2)
        assert {"csv0", "csv19"} <= set(documents(url))
        refused = subprocess.run(["dedup-hbase", "load", "--store", url, "--engine", "spark", "--groups",
                                  str(tmp_path / "g.jsonl"), str(corpus)], capture_output=True, text=True)
        assert (refused.returncode, refused.stderr) == (1, "error: --groups needs --engine local (with the Spark "
                                                           "engine, the groups command writes the groups of a corpus)\n")
        no_zk = re.sub(r"zk=[^&]*&?", "", url)
        refused = subprocess.run(["dedup-hbase", "load", "--store", no_zk, "--engine", "spark", "--restart",
                                  str(corpus)], capture_output=True, text=True)
        assert refused.returncode == 1 and "zk=HOST:PORT" in refused.stderr
    finally:
        with open_store(url) as store:
            store.drop()


@pytest.mark.parametrize("how, when", [("SIGKILL", "working"), ("SIGTERM", "starting")])
def test_a_stopped_spark_load_leaves_no_process(tmp_path, how, when):
    """Issue 14 for the Spark engine: kill the load (SIGKILL) or stop it (SIGTERM) while its
    Spark session starts (its JVM launched) or while Spark works (Python workers running);
    within 10 s neither Spark's JVM nor its Python workers are left (found by a marker in their
    environment). SIGTERM: one line and status 143."""
    import signal
    import time
    import uuid

    from test_interrupt import assert_all_gone, cmdline, descendants, marked, start_time

    store = str(tmp_path / "index")
    subprocess.run(["dedup-hbase", "init", "--store", store], check=True, capture_output=True)
    corpus = tmp_path / "news.jsonl"  # 6,000 news documents: seconds of work for the Python workers
    with gzip.open(shared_corpus("xwlb_zh.jsonl.gz"), "rt", encoding="utf-8") as f:
        corpus.write_text("".join(line for _, line in zip(range(6000), f)), encoding="utf-8")
    marker = uuid.uuid4().hex
    load = subprocess.Popen(["dedup-hbase", "load", "--store", store, "--engine", "spark", "--spark-master",
                             "local[2]", "-q", str(corpus)],
                            env={**os.environ, "DEDUP_HBASE_TEST_MARKER": marker},
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "stderr", "w"))  # Spark's JVM shares it
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # Spark's JVM, and (working) a Python worker of its own
        tree = descendants(load.pid)
        workers = [p for p in tree if b"-m\x00dedup_hbase.jobs.spark_daemon\x00" in cmdline(p)]  # session.py
        if any(cmdline(p).startswith(b"/") and b"/java\x00" in cmdline(p) for p in tree) and (
                when == "starting" or workers):
            break
        assert load.poll() is None, "the load ended before its Spark workers ran"
        time.sleep(0.2)
    else:
        raise AssertionError("Spark's workers never started")
    started = {pid: start_time(pid) for pid in descendants(load.pid)}
    assert len(marked(marker)) >= 2  # the load and its JVM at least
    load.send_signal(getattr(signal, how))
    load.wait(timeout=60)
    err = (tmp_path / "stderr").read_text()
    if how == "SIGTERM":
        assert load.returncode == 143 and err.splitlines() == [
            "interrupted by SIGTERM: the Spark job stopped; run the same command again to load (the job "
            "starts over; what it wrote is written again, nothing doubles)"], err[-2000:]
    assert_all_gone(started, marker)
    if how == "SIGKILL":  # run again, it loads exactly what a clean load does
        rerun = subprocess.run(["dedup-hbase", "load", "--store", store, "--engine", "spark", "--spark-master",
                                "local[2]", "-q", str(corpus)], capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        clean = str(tmp_path / "clean")
        subprocess.run(["dedup-hbase", "init", "--store", clean], check=True, capture_output=True)
        subprocess.run(["dedup-hbase", "load", "--store", clean, "-q", str(corpus)], check=True, capture_output=True)
        assert documents(store) == documents(clean)
        counted = [{k: v for k, v in json.loads(subprocess.run(["dedup-hbase", "stats", "--json", "--store", url],
                                                                 check=True, capture_output=True).stdout).items()
                    if k in ("documents", "index_rows", "index_cells", "rows_per_flag")} for url in (store, clean)]
        assert counted[0] == counted[1] and counted[0]["documents"] == 6000



def fingerprint_lines(label: str, n: int = 3000, seed: int = 21) -> list[str]:
    """Good fingerprint records with every kind of bad one (and odd good ones) mixed in."""
    rnd = random.Random(seed)
    lines = [json.dumps({"id": f"f{i}", "simhash": f"{rnd.getrandbits(64):016x}"}) for i in range(n)]
    odd = [
        '{"id": "bad-hex", "simhash": "xyz"}', '{"id": 42, "simhash": "00000000000000ff"}',
        '{"id": 1.5, "simhash": "00000000000000ff"}', '{"id": "no-simhash"}', "not json at all", "[1, 2]",
        '{"id": "spaced", "simhash": " 0x00000000000000AB "}', '{"id": "upper", "simhash": "ABCDEF0123456789"}',
        json.dumps({"id": "labelled", "simhash": "00000000000000ab", "featurizer": label}),
        '{"id": "text-int", "simhash": "00000000000000ab", "text": 5}',
        json.dumps({"id": "texted", "simhash": "00000000000000ab", "text": "中文 text 𝄞", "title": 'T\n"x"'},
                   ensure_ascii=False),
        '{"id": "dup", "simhash": "00000000000000ab", "id": "dup-last"}', '{"id": "", "simhash": "00000000000000ab"}',
        '{"id": "lone\\ud800", "simhash": "00000000000000ab"}', '{"id": "num-sim", "simhash": 123}',
        '{"id": "nul-sim", "simhash": null}', '{"id": "x", "simhash": "00000000000000ab"} trailing',
        '{"id": "nan", "simhash": "00000000000000ab", "score": NaN}', "   ", "\u3000", "",
        '{"id": "f7", "simhash": "ffffffffffffffff", "featurizer": ""}', '{"id": "t-null", "simhash": '
        '"8000000000000000", "text": null, "title": 7}', '{"id": "' + "x" * 1025 + '", "simhash": "00000000000000ab"}',
        # the id rule (index/ids.py) against the JVM's: numbers, fractions, booleans, null, objects,
        # arrays, 1,024 bytes and one more, non-ASCII, escapes
        '{"id": true, "simhash": "00000000000000ab"}', '{"id": false, "simhash": "00000000000000ab"}',
        '{"id": null, "simhash": "00000000000000ab"}', '{"id": {"a": 1}, "simhash": "00000000000000ab"}',
        '{"id": ["a"], "simhash": "00000000000000ab"}', '{"id": -7, "simhash": "00000000000000ac"}',
        '{"id": 1e2, "simhash": "00000000000000ad"}', '{"id": -0, "simhash": "00000000000000ae"}',
        '{"id": 123456789012345678901234567890, "simhash": "00000000000000af"}',
        '{"id": "' + "é" * 512 + '", "simhash": "00000000000000b0"}', '{"id": "' + "é" * 513 + '", "simhash": "0"}',
        '{"id": "' + "x" * 1024 + '", "simhash": "00000000000000b1"}', '{"id": "中文 ß 𝄞", "simhash": "00000000000000b2"}',
        '{"id": "\\u00e9\\n\\t\\"q\\" \\ud834\\udd1e", "simhash": "00000000000000b3"}',
        '{"id": " ", "simhash": "00000000000000b4"}', '{"id": "\\u0000", "simhash": "00000000000000b5"}',
    ]
    for line in odd:
        lines.insert(rnd.randrange(len(lines)), line)
    return lines


def test_fingerprints_read_in_the_jvm_as_the_local_engine_reads_them(spark, tmp_path, monkeypatch):
    """--fingerprints JSON lines (plain with CRLF and lone CR line ends, read in several splits;
    gzip; a bad UTF-8 line; gzip files cut off and corrupt past the head the planner reads) read
    by the JVM: the same report, rejects (file, line, reason), documents as the local engine (a
    damaged file's records before the damage, then one reject; not a job stopped by Hadoop's
    codec); a record made by another featurizer stops the load before anything is written."""
    from dedup_hbase.errors import IndexMismatch
    from dedup_hbase.jobs.spark import fingerprints, inputs

    urls = [str(tmp_path / "spark-store"), str(tmp_path / "local-store")]
    for url in urls:
        with open_store(url, create=True) as store:
            Index.create(store, 4, 3)
    with open_store(urls[0]) as store:
        label = Index.open(store).fingerprinter.label
    lines = fingerprint_lines(label, n=20_000)
    monkeypatch.setattr(inputs, "MIN_PIECE", 64 << 10)  # the plain file (~0.6 MB) in several splits
    plain, zipped = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    data = "\n".join(lines[:15000]).encode() + b"\r\n" + "\r".join(lines[15000:16000]).encode() + b"\n"
    plain.write_bytes(data[:5000] + b'{"id": "bad-utf8", "simhash": "\xff"}\r\n' + data[5000:])
    zipped.write_bytes(gzip.compress(("\n".join(lines[16000:]) + "\n").encode()))
    cut, crc = tmp_path / "cut.jsonl.gz", tmp_path / "crc.jsonl.gz"
    whole = gzip.compress(("\n".join(lines[:4000]) + "\n").encode())
    cut.write_bytes(cut_off(whole))
    crc.write_bytes(whole[:-8] + bytes(4) + whole[-4:])  # every line whole, its CRC wrong
    damaged = [plain, zipped, cut, crc]
    assert fingerprints.split(inputs.plan(list(map(str, damaged)), "auto"))[1] == []  # all read in the JVM
    corrupt = tmp_path / "corrupt.jsonl.gz"
    corrupt.write_bytes(b"\x1f\x8b" + bytes(range(7, 250)))  # gzip's magic, then no deflate stream
    jvm, rest = fingerprints.split(inputs.plan([str(corrupt)], "auto"))
    assert (jvm.files, [f.path for f in rest]) == ([], [str(corrupt)])  # the Python reader says what is wrong
    a = spark_load_to(urls[0], spark, damaged, tmp_path / "rejects-spark.jsonl", fingerprints=True)
    b = local_load_to(urls[1], damaged, tmp_path / "rejects-local.jsonl", fingerprints=True)
    same_report(a, b)
    assert a["rejected"] >= 10 and a["unlabeled"] == b["unlabeled"] > 0
    assert (tmp_path / "rejects-spark.jsonl").read_bytes() == (tmp_path / "rejects-local.jsonl").read_bytes()
    assert [(r["source"], r["reason"].split(":")[0]) for r in map(json.loads, (tmp_path / "rejects-local.jsonl").open())
            if r["reason"].split(":")[0].endswith(" input")] == [(str(cut), "cut-off input"), (str(crc), "corrupt input")]
    assert documents(urls[0]) == documents(urls[1])
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text("\n".join(lines[:50] + [json.dumps({"id": "o", "simhash": "00000000000000ab",
                                                           "featurizer": "other-v1"})]) + "\n")
    with pytest.raises(IndexMismatch, match=rf"{foreign}:51: the fingerprint of 'o' was made by featurizer other-v1"):
        spark_load_to(urls[0], spark, [foreign], fingerprints=True)


def cut_off(data: bytes) -> bytes:
    """``data`` cut off after two thirds: for a gzip file of 30 KB or more, past the 8 KB head that
    the planner reads (fingerprints.judged), so the JVM's reader meets the cut."""
    return data[:len(data) * 2 // 3]


def gb18030_lines(rnd: random.Random, count: int, json_lines: bool, bad: bool = True) -> bytes:
    """Lines in GB18030 (most of them GBK's two-byte characters), JSON lines or plain text: good
    records, blank ones (an ideographic space is blank: A1 A1 in GBK, C2 A0 in UTF-8 is a
    character here), every line end; with ``bad``, bytes no GB18030 character has and its
    four-byte characters (without: GBK, which ``--encoding auto`` detects)."""
    words = ["国家卫生健康委员会通报", "全国疫情防控最新情况", "长江经济带", "hello", "。。"] + (["𠀀", "€"] if bad else [])
    out = []
    for n in range(count):
        text = "".join(rnd.choice(words) for _ in range(rnd.randint(0, 5)))
        line = (json.dumps({"id": f"g{n}", "text": text}, ensure_ascii=False) if json_lines else text).encode("gb18030")
        roll = rnd.random()
        if roll < 0.05:
            line = rnd.choice([b"\xa1\xa1", b"   ", b"", b"\xc2\xa0"] + ([b"\xff\xfe", line[:-1] + b"\x81"] if bad else []))
        out.append(line + rnd.choice([b"\n", b"\n", b"\r\n", b"\r"]))
    return b"".join(out)


def test_a_batch_of_the_jvms_lines_is_read_as_that_part_of_the_whole_file(tmp_path):
    """fingerprints._read_lines on batches of the JVM's rows cut anywhere (one starting at line 2,
    whose NUL byte a file's head would make a binary file of; blank lines given no row, as the
    fingerprints' checker gives none) gives the records of the whole file as the local reader
    reads it: the head checks are for a file's first line, not a batch's."""
    import pyarrow as pa
    from test_spark_texts import hostile_lines, reference

    from dedup_hbase.jobs.spark import fingerprints, stages
    from dedup_hbase.text.fingerprint import make_fingerprinter

    path = tmp_path / "x.jsonl"
    first = json.dumps({"id": "a", "text": "国家卫生健康委员会通报" * 300}, ensure_ascii=False).encode()  # past the head
    path.write_bytes(first + b'\n{"id": "b", "text": "\x00"}\n\n' + hostile_lines(random.Random(45), 400).replace(b"\r", b"\n"))
    lines = path.read_bytes().split(b"\n")
    rows = [(number, raw) for number, raw in enumerate(lines, 1) if raw.strip()]
    spec = make_fingerprinter().spec
    run = fingerprints._read_lines(Fields(), stages.fingerprint_records(spec, False), {})
    got = []
    for cut in ([rows[:1], rows[1:]], [rows[:150], rows[150:]], [rows]):
        batches = [pa.RecordBatch.from_pydict({"ordinal": [0] * len(part), "line": [n for n, _ in part],
                                               "source": ["x.jsonl"] * len(part), "raw": [r for _, r in part]})
                   for part in cut]
        got.append(sorted((row for batch in run(iter(batches)) for row in batch.to_pylist()),
                          key=lambda r: r["line"]))
    want = reference([inputs.InputFile(0, str(path), "x.jsonl", "auto", None)], Fields(), spec)
    assert got[0] == got[1] == got[2] == want and len(want) > 300
    assert want[1]["line"] == 2 and want[1]["error"]  # the NUL line: one record's error, not the batch's


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "auto"])
def test_remote_line_files_of_texts_cut_by_the_jvm_read_as_the_local_reader_reads_them(spark, tmp_path, monkeypatch,
                                                                                        encoding):
    """Remote JSON lines and text files of texts (HDFS ...) are cut into lines by the JVM's split
    line reader (fingerprints.judged and read: no task holds a whole file; at 10^6 documents on
    the cluster a 187 MB file read whole ran its executor out of heap) and each line is read by
    corpus.py's reader in the file's encoding as its head gives it: hostile lines (CR, CRLF and
    lone CR ends, blank lines, bad UTF-8 or GB18030, malformed JSON ...), plain and gzip, UTF-8
    and GB18030 byte-order marks, in several splits, give every column of every record the local
    reader and fingerprinting give, at the same line numbers (``auto``: GB18030 by its mark, GBK
    detected, a file of bad bytes no encoding fits). A binary file is one record, its lines
    unread; a gzip file whose name does not say so is left to the whole-file reader."""
    import types

    from test_spark_texts import hostile_lines, reference

    from dedup_hbase.jobs.spark import fingerprints, stages
    from dedup_hbase.text.fingerprint import make_fingerprinter

    rnd = random.Random(44)
    data = {"a.jsonl": hostile_lines(rnd, 3000), "b.jsonl.gz": gzip.compress(hostile_lines(rnd, 500)),
            "c.jsonl": b"\xef\xbb\xbf" + hostile_lines(rnd, 200),
            "d.jsonl": b"\x84\x31\x95\x33" + gb18030_lines(rnd, 3000, True),
            "e.txt": gb18030_lines(rnd, 3000, False), "f.jsonl": b'{"id": "a"}\n\x00\x01\x02\n',
            "g.jsonl": gzip.compress(hostile_lines(rnd, 100)), "h.txt": gb18030_lines(rnd, 2000, False, bad=False),
            "i.jsonl.gz": cut_off(gzip.compress(hostile_lines(rnd, 4000)))}
    files = []
    for i, (name, content) in enumerate(data.items()):
        (tmp_path / name).write_bytes(content)
        files.append(inputs.InputFile(i, str(tmp_path / name), name, "lines" if name.endswith(".txt") else "auto", None))
    fields = Fields(encoding=encoding)
    assert fingerprints.split(files, fields, texts=True, session=spark)[0].files == []  # local: read in pieces
    monkeypatch.setattr(inputs, "MIN_PIECE", 1)
    spec = make_fingerprinter().spec
    finish = stages.fingerprint_records(spec, False)
    jvm = fingerprints.judged(spark, files, fields, texts=True)
    read = {f.source for f in files if f.ordinal in jvm.readings}
    refused = {files[ordinal].source for ordinal, _ in jvm.refused}
    assert "f.jsonl" in refused and "g.jsonl" not in read | refused
    assert {"a.jsonl", "b.jsonl.gz"} <= read if encoding == "utf-8" else {"d.jsonl", "h.txt"} <= read
    jvm.files = [f for f in files if f.ordinal in jvm.readings]
    job = types.SimpleNamespace(session=spark, parallelism=64, persist=lambda frame: frame)
    frame, damaged = fingerprints.read(job, jvm, fields, finish)
    assert [f.source for f in damaged] == sorted(read & {"i.jsonl.gz"})  # left to the whole-file reader
    assert "i.jsonl.gz" in read or encoding != "utf-8"
    assert frame.rdd.getNumPartitions() > len(jvm.files)  # in 64 KB splits (the JVM's least), gzip whole
    read -= {"i.jsonl.gz"}
    frame = frame.unionByName(fingerprints.refused_rows(spark, jvm, finish))
    got = sorted((row.asDict(recursive=True) for row in frame.collect()), key=lambda r: (r["ordinal"], r["line"]))
    want = reference([f for f in files if f.source in read | refused], fields, spec)
    assert len(got) == len(want) > 3000 and got == want
    assert [r["error"] for r in got if r["source"] == "f.jsonl"] == [
        "binary data, not text (a NUL byte at byte 12)"]
    reasons = {r["reason"] for r in got if r["error"]}
    assert {"malformed JSON", "invalid UTF-8"} <= reasons if encoding == "utf-8" else "invalid GB18030" in reasons


def test_remote_files_of_other_formats_stream_in_chunks_as_the_local_reader_reads_them(spark, tmp_path):
    """Remote files that no line reader cuts (CSV and TSV, whose quoted fields may hold line
    ends; a whole-file document; a binary or a cut-off compressed file) come through the
    helper's ``dedup-hbase-chunks`` source (records.py): a file's bytes in chunks, in order, in
    one task (small files packed several to a task), so that no task holds a whole file
    (Spark's ``binaryFile`` held it in one row: at 10^6 documents a 187 MB file ran a 1 GB
    executor out of heap). Read by the JVM here in chunks of 4 KB, streamed to corpus.py's
    readers: every column of every record as a local read."""
    from test_spark_texts import check_remote_records, remote_files

    from dedup_hbase.jobs.spark import stages
    from dedup_hbase.text.fingerprint import make_fingerprinter

    files, fields = remote_files(tmp_path)
    finish = stages.fingerprint_records(make_fingerprinter().spec, False)
    options = {"files": "\n".join(Path(f.path).as_uri() for f in files),
               "ordinals": ",".join(str(f.ordinal) for f in files), "chunkBytes": "4096"}
    # a partition a file (partitionBytes 1), the small files packed in one (Spark's 4 MiB at the least),
    # and packed by their sizes (read from one listing of their folder) up to 20,000 bytes a partition
    sizes, packs, packed = [Path(f.path).stat().st_size for f in files], 0, None
    for size in sizes:
        packs, packed = (packs, packed + size) if packed is not None and packed + size <= 20_000 else (packs + 1, size)
    assert 1 < packs < len(files)
    for more, partitions in (({"partitionBytes": "1"}, len(files)), ({}, 1), ({"partitionBytes": "20000"}, packs)):
        frame = spark.read.format("dedup-hbase-chunks").options(**options, **more).load()
        assert frame.rdd.getNumPartitions() == partitions
        assert frame.where("ordinal = 0").count() == -(-Path(files[0].path).stat().st_size // 4096)
        read = frame.mapInArrow(inputs.parse_chunks(fields, finish, {f.ordinal: f for f in files}),
                                stages.FINGERPRINTED_SCHEMA)
        check_remote_records(files, fields, [row.asDict(recursive=True) for row in read.collect()])
