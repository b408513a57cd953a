"""The Spark DataFrame calls (dedup_hbase/pipelines/spark_frames.py) in a classic local session:
each equal, row for row, to the Arrow batch API's call on the same rows (arrow.py, itself tested
against a brute force on this planted structure: exact copies, pairs at exactly k and k + 1
bits, chains, rows with an error), the DataFrame's other columns kept and its row order; ``check``
against a real HBase index, read in bulk by the executors. Through Spark Connect:
tests/test_spark_connect.py."""

from __future__ import annotations

import pytest
from test_pipelines_arrow import K, batch_of, planted  # noqa: F401 (a fixture)
from test_short_index import UNRELATED
from test_spark import with_zk

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.index.index import Document
from dedup_hbase.pipelines import arrow, spark_frames

from conftest import hbase_store_url

pytestmark = [pytest.mark.spark]


def frame_of(spark, rows):
    """A DataFrame of (n, id, text) in 3 partitions, in the order of ``rows``."""
    return spark.createDataFrame([(n, i, t) for n, (i, t) in enumerate(rows)], "n long, id string, text string") \
        .repartitionByRange(3, "n").sortWithinPartitions("n")


def signed(value: int | None) -> int | None:
    return None if value is None else value - (1 << 64) if value >= 1 << 63 else value


def as_dicts(rows):
    return None if rows is None else [r.asDict() for r in rows]


def test_fingerprints_are_the_arrow_apis(spark, planted):  # noqa: F811
    indexed, queries, _ = planted
    rows = indexed + queries
    got = spark_frames.fingerprints(frame_of(spark, rows)).orderBy("n").collect()
    want = arrow.fingerprints(batch_of(rows)).to_pylist()
    assert [r.asDict() for r in got] == [{"n": n, "id": w["id"], "text": w["text"], "simhash": signed(w["simhash"]),
                                          "error": w["error"]} for n, w in enumerate(want)]
    assert sum(w["error"] is not None for w in want) == 4


@pytest.mark.parametrize("options, added", [
    ({"preset": "recall"}, ["simhash", "simhash_lead150", "sketch", "error"]),
    ({"short": "words"}, ["simhash", "sketch", "error"]),
    ({}, ["simhash", "error"]),
])
def test_fingerprints_of_an_index_are_the_arrow_apis(spark, planted, options, added, tmp_path):  # noqa: F811
    """With an index (its lead signature and sketch; the default's short-text sketch): the index
    read on the driver only, an embedded one too."""
    _, queries, _ = planted
    url = f"local:{tmp_path / 'idx'}"
    with open_store(url, create=True) as store:
        index = Index.create(store, k=K, **options)
        want = arrow.fingerprints(batch_of(queries), index).to_pylist()
    got = spark_frames.fingerprints(frame_of(spark, queries), url).orderBy("n").collect()
    assert [c for c in want[0] if c not in ("id", "text")] == added
    assert [r.asDict() for r in got] == [{"n": n, **w, **{c: signed(w[c]) for c in added if c != "error"}}
                                         for n, w in enumerate(want)]


@pytest.mark.parametrize("short_texts", ["on", "off"])
def test_groups_are_the_arrow_apis(spark, planted, short_texts):  # noqa: F811
    """Also with short titles that share a fingerprint (春节里的中国 / 春节近 年味浓 at 0 bits), which
    the short-text rule (on by default, as in `groups`) keeps apart and the bits alone join."""
    indexed, queries, _ = planted
    titles = [(None, t) for t in UNRELATED + [t + "。" for t in UNRELATED]]
    rows = [(f"{i}#{p}", t) for p, (i, t) in enumerate(r for r in indexed + queries + titles if r[1] is not None)]
    got = spark_frames.groups(frame_of(spark, rows), k=K, short_texts=short_texts).collect()
    want = arrow.groups([batch_of(rows)], k=K, short_texts=short_texts).to_pylist()
    assert [r["n"] for r in got] == list(range(len(rows)))  # the DataFrame's order
    columns = ("id", "group", "size", "keep", "via", "distance", "error")
    assert [tuple(r[c] for c in columns) for r in got] == [tuple(w[c] for c in columns) for w in want]
    assert sum(bool(w["keep"]) and w["size"] > 1 for w in want) > 5
    assert any(w["keep"] is False and w["via"] != w["group"] for w in want)  # a chain
    group = {t: w["group"] for (_, t), w in zip(rows, want)}
    assert (group["春节里的中国"] == group["春节近 年味浓"]) == (short_texts == "off")
    assert group["春节里的中国"] == group["春节里的中国。"]  # a full stop added: a copy either way


@pytest.mark.hbase
def test_check_of_an_hbase_index_is_the_arrow_apis(spark, planted, hbase_url, tmp_path):  # noqa: F811
    indexed, queries, simhash = planted
    url = with_zk(hbase_store_url(hbase_url))
    index = Index.create(open_store(url), 4, K)
    try:
        index.add_many([Document(i, simhash[t]) for i, t in indexed])
        for limit in (None, 1):
            got = spark_frames.check(frame_of(spark, queries), url, staging=str(tmp_path / "staging"),
                                     max_matches=limit).collect()
            want = arrow.check(batch_of(queries), index, max_matches=limit).to_pylist()
            assert [r["n"] for r in got] == list(range(len(queries)))
            assert [(r["id"], r["simhash"], r["error"], as_dicts(r["matches"]), r["match_count"]) for r in got] == [
                (w["id"], signed(w["simhash"]), w["error"], w["matches"], w["match_count"]) for w in want]
        assert any(w["match_count"] and w["match_count"] > 1 for w in want)  # cut to one, counted
        assert list((tmp_path / "staging").iterdir()) == []  # the probes removed
    finally:
        index.store.drop()


def test_arguments_are_checked_up_front(spark):
    frame = spark.createDataFrame([("a", "x")], "id string, body string")
    cases = [
        (lambda: spark_frames.fingerprints(frame), "text_column='text': the DataFrame has no such column"),
        (lambda: spark_frames.fingerprints(frame, text_column="body", id_column="doc"),
         "id_column='doc': the DataFrame has no such column"),
        (lambda: spark_frames.fingerprints(spark_frames.fingerprints(frame, text_column="body"), text_column="body"),
         "the DataFrame has a column 'simhash' already, which fingerprints adds"),
        (lambda: spark_frames.fingerprints(spark.createDataFrame([(1, "x")], "id long, text string")),
         "id_column='id': a string or large_string column, not int64"),
        (lambda: spark_frames.groups(frame, text_column="body", k=4, scheme="4"), "k"),
        (lambda: spark_frames.groups(frame, text_column="body", short_texts="yes"),
         "short_texts takes 'on' or 'off', not 'yes'"),
        (lambda: spark_frames.check(frame, "memory:", staging="x", text_column="body"),
         "check reads an HBase index (hbase://...) in bulk"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert message in str(caught.value)
