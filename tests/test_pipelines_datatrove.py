"""The datatrove step (dedup_hbase/pipelines/datatrove_step.py) in a real ``LocalPipelineExecutor``
on datatrove's JSONL and Parquet readers and writers: its decisions are the brute force's on
planted structure (exact copies, chains, pairs at exactly k and k + 1 bits), batch by batch, in
drop mode (the refused ones in the exclusion writer) and tag mode; on a slice of the news corpus,
two dumps in turn, its answers agree with the CLI's ``check`` on the index it leaves; two tasks
on one HBase index leave no two added documents within k, each refused one near an added one. Exact, seeded, nothing timed."""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.writers import JsonlWriter
from test_pipelines_arrow import K, assert_workers_added_exactly, brute_insert_if_new, hamming, index_of, planted  # noqa: F401 (a fixture)

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.pipelines.datatrove_step import NearDuplicates

from conftest import hbase_store_url

BATCH = 10  # the HBase test's batches


def write_jsonl(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")


def written(folder) -> list[dict]:
    """The documents a datatrove JsonlWriter wrote to ``folder``, in rank and file order."""
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl.gz")) for line in gzip.open(path, "rt")]


def run(pipeline, folder, tasks: int = 1, workers: int = 1) -> None:
    LocalPipelineExecutor(pipeline, tasks=tasks, workers=workers, logging_dir=str(folder / "logs"),
                          start_method="spawn").run()


def news(xwlb_path, start: int, stop: int) -> list[tuple[str, str]]:
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in itertools.islice(f, stop)]
    return [(r["id"], r["text"]) for r in rows[start:]]


def two_dumps_checked_by_the_cli(tmp_path, xwlb_path):
    """News 0-300 loaded by the CLI into an embedded index; news 300-400 with ten copies of loaded
    texts and a featureless one checked by the CLI (``check --json``): (the second dump, the
    index's URL, the CLI's answers)."""
    first, second = news(xwlb_path, 0, 300), news(xwlb_path, 300, 400)
    second += [(f"copy-{i}", t) for i, t in first[:30:3]] + [("punct", "。。。")]
    url = f"local:{tmp_path / 'idx'}"
    write_jsonl(tmp_path / "one.jsonl", first)
    write_jsonl(tmp_path / "two.jsonl", second)
    for command in (["init", "-k", str(K)], ["load", str(tmp_path / "one.jsonl")]):
        subprocess.run(["dedup-hbase", "--store", url, *command], check=True, capture_output=True)
    cli = subprocess.run(["dedup-hbase", "--store", url, "check", str(tmp_path / "two.jsonl"), "--json"],
                         capture_output=True, text=True, check=True)
    return second, url, [json.loads(line) for line in cli.stdout.splitlines()]


def test_arguments_are_checked_up_front():
    for kwargs, argument in [({"store": ""}, "store"), ({"store": "x", "mode": "keep"}, "mode"),
                             ({"store": "x", "batch_size": 0}, "batch_size"),
                             ({"store": "x", "mode": "tag", "exclusion_writer": object()}, "exclusion_writer")]:
        with pytest.raises(InvalidInput) as e:
            NearDuplicates(**kwargs)
        assert e.value.arguments == (argument,)


@pytest.mark.parametrize("mode", ["drop", "tag"])
def test_the_step_is_the_brute_force_on_jsonl_and_parquet(tmp_path, planted, mode):  # noqa: F811
    indexed, queries, simhash = planted
    index_of(tmp_path / "idx", indexed, simhash).store.close()
    rows = [(i, t) for i, t in queries if i is not None and t]  # datatrove's readers skip a document without text
    if mode == "drop":
        write_jsonl(tmp_path / "in" / "dump.jsonl", rows)
        reader = JsonlReader(str(tmp_path / "in"))
    else:
        (tmp_path / "in").mkdir()
        pq.write_table(pa.table({"id": [i for i, _ in rows], "text": [t for _, t in rows]}),
                       tmp_path / "in" / "dump.parquet", row_group_size=50)
        reader = ParquetReader(str(tmp_path / "in"))
    dropped = JsonlWriter(str(tmp_path / "dropped")) if mode == "drop" else None
    step = NearDuplicates(f"local:{tmp_path / 'idx'}", mode=mode, batch_size=40, exclusion_writer=dropped)
    run([reader, step, JsonlWriter(str(tmp_path / "out"))], tmp_path)
    expected = brute_insert_if_new({i: simhash[t] for i, t in indexed}, [(i, simhash.get(t)) for i, t in rows], 40)
    out = {d["id"]: d for d in written(tmp_path / "out")}
    gone = {d["id"]: d for d in written(tmp_path / "dropped")} if mode == "drop" else {}
    assert len(out) + len(gone) == len(rows)
    for (doc_id, text), (added, via, distance) in zip(rows, expected):
        doc = out.get(doc_id) or gone[doc_id]
        meta = doc["metadata"]
        assert (meta["dedup_added"], meta["dedup_via"], meta["dedup_distance"]) == (added, via, distance)
        assert (meta["dedup_error"] is not None) == (text not in simhash)
        assert (doc_id in gone) == (mode == "drop" and via is not None)
    assert sum(a for a, _, _ in expected) and sum(v is not None for _, v, _ in expected)
    with open_store(f"local:{tmp_path / 'idx'}") as store:  # what was added is indexed, nothing else
        assert Index.open(store).stats()["documents"] == len(indexed) + sum(a for a, _, _ in expected)


def test_two_dumps_of_the_news_answer_as_the_cli_check(tmp_path, xwlb_path):
    first, second = news(xwlb_path, 0, 300), news(xwlb_path, 300, 500)
    first += [(f"again-{i}", t) for i, t in first[:5]]  # copies within the first dump: dropped
    second += [(f"copy-{i}", t) for i, t in first[:20:2]]  # exact copies of the first dump
    second += [(f"edit-{i}", "。".join(t.split("。")[:1] + t.split("。")[2:])) for i, t in first[1:40:2]]
    url = f"local:{tmp_path / 'idx'}"
    with open_store(url, create=True) as store:
        Index.create(store, k=K)
    write_jsonl(tmp_path / "one" / "dump.jsonl", first)
    write_jsonl(tmp_path / "two" / "dump.jsonl", second)
    run([JsonlReader(str(tmp_path / "one")), NearDuplicates(url), JsonlWriter(str(tmp_path / "out1"))], tmp_path / "1")
    run([JsonlReader(str(tmp_path / "two")), NearDuplicates(url, mode="tag", batch_size=BATCH),
         JsonlWriter(str(tmp_path / "out2"))], tmp_path / "2")
    docs = written(tmp_path / "out1") + written(tmp_path / "out2")
    assert [d["id"] for d in written(tmp_path / "out1")] == [i for i, _ in first[:300]]
    write_jsonl(tmp_path / "all.jsonl", [(d["id"], d["text"]) for d in docs])
    cli = subprocess.run(["dedup-hbase", "--store", url, "check", str(tmp_path / "all.jsonl"), "--json"],
                         capture_output=True, text=True, check=True)
    answers = [json.loads(line) for line in cli.stdout.splitlines()]
    assert [a["id"] for a in answers] == [d["id"] for d in docs]
    refused = 0
    for doc, answer in zip(docs, answers):
        meta, matches = doc["metadata"], [{"id": m["id"], "distance": m["distance"]} for m in answer["matches"]]
        if meta["dedup_added"]:  # indexed, and no other indexed document within k: no two added within k
            assert matches == [{"id": doc["id"], "distance": 0}]
        else:  # batch_size=1: its nearest was indexed then, and is now
            refused += 1
            assert {"id": meta["dedup_via"], "distance": meta["dedup_distance"]} in matches
            assert doc["id"] not in {m["id"] for m in matches}
    assert refused == 15  # the 10 copies and 5 of the 20 edits (the others are more than k bits away: added)
    assert all(not d["metadata"]["dedup_added"] for d in docs if d["id"].startswith("copy-"))


@pytest.mark.hbase
def test_two_tasks_on_one_hbase_index_add_no_two_within_k(tmp_path, hbase_url, planted):  # noqa: F811
    indexed, queries, simhash = planted
    url = hbase_store_url(hbase_url)
    rows = [(i, t) for i, t in queries if i is not None and t and t in simhash][:100]
    with open_store(url) as store:
        Index.create(store, k=K)
    try:
        for n in range(2):  # two files, two tasks at once: the same texts in the same order, under two ids
            write_jsonl(tmp_path / "in" / f"part{n}.jsonl", [(f"{i}@{n}", t) for i, t in rows])
        run([JsonlReader(str(tmp_path / "in")), NearDuplicates(url, mode="tag", batch_size=BATCH),
             JsonlWriter(str(tmp_path / "out"))], tmp_path, tasks=2, workers=2)
        docs = written(tmp_path / "out")
        assert len(docs) == 2 * len(rows)
        assert_workers_added_exactly(url, [(d["id"], d["metadata"]["dedup_added"], d["metadata"]["dedup_via"],
                                            d["metadata"]["dedup_distance"]) for d in docs], rows, simhash, BATCH)
    finally:
        with open_store(url) as store:
            store.drop()
