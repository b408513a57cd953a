"""The Hugging Face ``datasets`` functions (dedup_hbase/pipelines/hf_datasets.py) in a real
``Dataset.map(batched=True)`` on the dataset ``with_format("arrow")``: ``add_new`` the brute force
on planted structure (exact copies, chains, pairs at exactly k and k + 1 bits), batch by batch;
``fingerprints`` the per-document API's and ``check`` the CLI's ``check`` on a slice of the news
corpus, the columns with the Arrow batch API's types; the default batch (a dict of lists) and a
wrong argument refused. Exact, seeded, nothing timed."""

from __future__ import annotations

import pyarrow as pa
import pytest
from datasets import Dataset
from test_pipelines_arrow import FP, K, brute_insert_if_new, index_of, planted  # noqa: F401 (a fixture)
from test_pipelines_datatrove import two_dumps_checked_by_the_cli

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.pipelines import hf_datasets

BATCH = 40


def dataset(rows) -> Dataset:
    return Dataset.from_dict({"id": [i for i, _ in rows], "text": [t for _, t in rows]}).with_format("arrow")


def test_add_new_is_the_brute_force(tmp_path, planted):  # noqa: F811
    indexed, queries, simhash = planted
    index = index_of(tmp_path / "idx", indexed, simhash)
    out = dataset(queries).map(hf_datasets.add_new(index), batched=True, batch_size=BATCH)
    assert out.features["simhash"].dtype == "uint64" and out.features["distance"].dtype == "int8"
    got = out.with_format(None).to_list()
    expected = brute_insert_if_new({i: simhash[t] for i, t in indexed},
                                   [(i, simhash.get(t) if i is not None else None) for i, t in queries], BATCH)
    assert [(r["added"], r["via"], r["distance"]) for r in got] == expected
    assert all(r["error"] for r, (i, t) in zip(got, queries) if t not in simhash or i is None)
    assert index.stats()["documents"] == len(indexed) + sum(a for a, _, _ in expected)


def test_fingerprints_and_check_are_the_per_document_api_and_the_cli(tmp_path, xwlb_path):
    second, url, answers = two_dumps_checked_by_the_cli(tmp_path, xwlb_path)
    prints = dataset(second).map(hf_datasets.fingerprints(), batched=True, batch_size=BATCH)
    hashes, errors = FP.fingerprint_many([t for _, t in second])
    assert prints["simhash"].to_pylist() == [None if i in errors else h for i, h in enumerate(hashes.tolist())]
    with open_store(url) as store:
        out = dataset(second).map(hf_datasets.check(Index.open(store), max_matches=None), batched=True,
                                  batch_size=BATCH)
    assert out.features["matches"].feature["distance"].dtype == "int8"
    rows = out.with_format(None).to_list()
    assert [r["id"] for r in rows] == [a["id"] for a in answers]
    for row, answer in zip(rows, answers):
        if "error" in answer:
            assert row["error"] == answer["error"] and row["matches"] is None
            continue
        assert row["matches"] == [{"id": m["id"], "distance": m["distance"]} for m in answer["matches"]]
    assert sum(bool(r["matches"]) for r in rows) >= 10  # the copies


def test_the_default_batch_and_a_wrong_index_are_refused():
    index = Index.create(open_store("memory:"), k=K)
    plain = Dataset.from_dict({"id": ["a"], "text": ["国家卫生健康委通报最新疫情"]})
    with pytest.raises(InvalidInput, match='with_format\\("arrow"\\)'):
        plain.map(hf_datasets.add_new(index), batched=True)
    with pytest.raises(InvalidInput) as e:
        hf_datasets.check("memory:")
    assert e.value.arguments == ("index",)
    assert hf_datasets.fingerprints()(pa.table({"id": ["a"], "text": ["。"]}))["error"].to_pylist()[0]
