"""The polars form of the Arrow batch API (dedup_hbase/pipelines/polars_frames.py): the same rows
and answers as the Arrow calls on the same documents (exact copies, a featureless text, a null),
the Arrow types kept (``simhash`` u64, ``distance`` i8); what is not a DataFrame refused."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.pipelines import arrow, polars_frames

from conftest import shared_texts


@pytest.fixture(scope="module")
def rows(xwlb_path):
    news = list(shared_texts(xwlb_path)[:30])
    texts = news + news[:5] + ["", None]  # exact copies, a featureless text, a null
    return pl.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts})


def test_each_call_is_the_arrow_calls(tmp_path, rows):
    table = pa.table({"id": rows["id"].to_list(), "text": rows["text"].to_list()})
    printed = polars_frames.fingerprints(rows)
    assert printed.schema["simhash"] == pl.UInt64
    assert printed["simhash"].to_list() == arrow.fingerprints(table)["simhash"].to_pylist()
    one, other = (Index.create(open_store(f"local:{tmp_path / name}")) for name in ("one", "other"))
    added = polars_frames.add_new(rows, one)
    expected = arrow.add_new(table, other)
    assert added.select(["added", "via", "distance", "error"]).to_dicts() == \
        expected.select(["added", "via", "distance", "error"]).to_pylist()
    assert added["added"].to_list()[30:35] == [False] * 5 and added.schema["distance"] == pl.Int8
    checked = polars_frames.check(rows, one)
    assert checked["matches"].to_list() == arrow.check(table, other)["matches"].to_pylist()
    grouped = polars_frames.groups([rows[:20], rows[20:]])
    assert grouped.to_dicts() == arrow.groups([table]).to_pylist()
    assert grouped["group"].to_list()[30:35] == grouped["id"].to_list()[:5]


def test_what_is_not_a_frame_is_refused(rows):
    with pytest.raises(InvalidInput, match="frame must be a polars DataFrame, not Table"):
        polars_frames.fingerprints(pa.table({"id": ["a"], "text": ["b"]}))
    with pytest.raises(InvalidInput, match="collect"):
        polars_frames.fingerprints(rows.lazy())
