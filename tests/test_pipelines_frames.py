"""The pandas form of the Arrow batch API (dedup_hbase/pipelines/frames.py): the same answers as
the Arrow calls, the frame's index kept, fingerprints as UInt64 (no bit lost to a float)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.pipelines import arrow, frames

from conftest import shared_texts


@pytest.fixture(scope="module")
def rows(xwlb_path):
    news = list(shared_texts(xwlb_path)[:30])
    texts = news + news[:5] + ["", None]  # exact copies, a featureless text, a null
    return pd.DataFrame({"id": [f"d{i}" for i in range(len(texts))], "text": texts},
                        index=pd.RangeIndex(100, 100 + len(texts)))


def test_each_call_is_the_arrow_calls(tmp_path, rows):
    table = pa.Table.from_pandas(rows, preserve_index=False)
    printed = frames.fingerprints(rows)
    assert list(printed.index) == list(rows.index)
    assert str(printed["simhash"].dtype) == "UInt64"
    assert [None if pd.isna(h) else int(h) for h in printed["simhash"]] == arrow.fingerprints(table)["simhash"].to_pylist()
    one, other = (Index.create(open_store(f"local:{tmp_path / name}")) for name in ("one", "other"))
    added = frames.add_new(rows, one)
    expected = arrow.add_new(table, other)
    assert added["added"].tolist() == expected["added"].to_pylist()
    assert added["added"].tolist()[30:35] == [False] * 5
    assert [None if pd.isna(v) else v for v in added["via"]] == expected["via"].to_pylist()
    checked = frames.check(rows, one)
    assert [None if m is None else [dict(x) for x in m] for m in checked["matches"]] == \
        arrow.check(table, other)["matches"].to_pylist()
    grouped = frames.groups([rows.iloc[:20], rows.iloc[20:]])
    assert grouped["group"].tolist()[30:35] == grouped["id"].tolist()[:5]
    plain = [[None if pd.isna(v) else v for v in row] for row in grouped.astype(object).values.tolist()]
    assert plain == [list(r.values()) for r in arrow.groups([table]).to_pylist()]


def test_what_is_not_a_frame_is_refused():
    with pytest.raises(InvalidInput, match="frame must be a pandas DataFrame, not Table"):
        frames.fingerprints(pa.table({"id": ["a"], "text": ["b"]}))
