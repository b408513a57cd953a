"""The Ray Data callables (dedup_hbase/pipelines/ray_data.py) in ``Dataset.map_batches`` on a local
Ray cluster this module starts (2 CPUs, a 200 MB object store, no dashboard) and stops:
fingerprints bit for bit the per-document API's on a slice of the news corpus; ``Check`` the
CLI's ``check`` on it; ``AddNew`` (one actor, an embedded index, input order) the brute force on
planted structure (exact copies, chains, pairs at exactly k and k + 1 bits); two ``AddNew``
actors on one HBase index, the same texts under two ids at once: no two added within k, each
refused one near an added one or an earlier row of its batch. Exact, seeded, nothing timed."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
import ray
from test_pipelines_arrow import (  # noqa: F401
    FP,
    K,
    assert_workers_added_exactly,
    batch_of,
    brute_insert_if_new,
    hamming,
    index_of,
    planted,
)
from test_pipelines_datatrove import two_dumps_checked_by_the_cli

from dedup_hbase import Index, open_store
from dedup_hbase.errors import InvalidInput
from dedup_hbase.pipelines import ray_data

from conftest import hbase_store_url

BATCH = 40


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as folder:  # short: Ray's sockets live there
        ray.init(num_cpus=2, object_store_memory=200 * 2**20, include_dashboard=False, _temp_dir=folder,
                 log_to_driver=False, configure_logging=False)
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        try:
            yield
        finally:
            ray.shutdown()


def collect(ds) -> pa.Table:
    """A dataset's rows as one pyarrow Table, in order."""
    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


def test_a_batch_that_is_not_arrow_is_refused():
    with pytest.raises(InvalidInput) as e:
        ray_data.fingerprints({"id": ["a"], "text": ["b"]})
    assert e.value.arguments == ("batch_format",)
    with pytest.raises(InvalidInput) as e:
        ray_data.Check("")
    assert e.value.arguments == ("store",)


def test_fingerprints_and_check_are_the_per_document_api_and_the_cli(tmp_path, xwlb_path):
    second, url, answers = two_dumps_checked_by_the_cli(tmp_path, xwlb_path)
    ds = ray.data.from_arrow(batch_of(second))
    prints = collect(ds.map_batches(ray_data.fingerprints, batch_format="pyarrow", batch_size=BATCH))
    hashes, errors = FP.fingerprint_many([t for _, t in second])
    assert prints["simhash"].to_pylist() == [None if i in errors else h for i, h in enumerate(hashes.tolist())]
    assert [e is not None for e in prints["error"].to_pylist()] == [i in errors for i in range(len(second))]
    out = collect(ds.map_batches(ray_data.Check, fn_constructor_kwargs={"store": url, "max_matches": None},
                         batch_format="pyarrow", batch_size=BATCH, concurrency=1)).to_pylist()
    assert [r["id"] for r in out] == [a["id"] for a in answers]
    for row, answer in zip(out, answers):
        if "error" in answer:
            assert row["error"] == answer["error"] and row["matches"] is None
            continue
        assert row["matches"] == [{"id": m["id"], "distance": m["distance"]} for m in answer["matches"]]
    assert sum(bool(r["matches"]) for r in out) >= 10  # the copies


def test_add_new_in_one_actor_is_the_brute_force(tmp_path, planted):  # noqa: F811
    indexed, queries, simhash = planted
    index_of(tmp_path / "idx", indexed, simhash).store.close()  # the actor opens it
    rows = [(i, t) for i, t in queries if i is not None]
    ds = ray.data.from_arrow(batch_of(rows))
    out = collect(ds.map_batches(ray_data.AddNew, fn_constructor_kwargs={"store": f"local:{tmp_path / 'idx'}"},
                         batch_format="pyarrow", batch_size=BATCH, concurrency=1)).to_pylist()
    expected = brute_insert_if_new({i: simhash[t] for i, t in indexed}, [(i, simhash.get(t)) for i, t in rows], BATCH)
    assert [r["id"] for r in out] == [i for i, _ in rows]
    assert [(r["added"], r["via"], r["distance"]) for r in out] == expected
    assert all(r["error"] for r, (_, t) in zip(out, rows) if t not in simhash)
    assert sum(a for a, _, _ in expected) and sum(v is not None for _, v, _ in expected)


@pytest.mark.hbase
def test_two_actors_on_one_hbase_index_add_no_two_within_k(hbase_url, planted):  # noqa: F811
    _, queries, simhash = planted
    rows = [(i, t) for i, t in queries if i is not None and t in simhash][:120]
    url = hbase_store_url(hbase_url)
    with open_store(url) as store:
        Index.create(store, k=K)
    try:
        blocks = [batch_of([(f"{i}@{n}", t) for i, t in rows]) for n in range(2)]  # one block an actor, at once
        out = collect(ray.data.from_arrow(blocks).map_batches(
            ray_data.AddNew, fn_constructor_kwargs={"store": url}, batch_format="pyarrow", batch_size=10,
            concurrency=2)).to_pylist()
        assert len(out) == 2 * len(rows)
        assert_workers_added_exactly(url, [(r["id"], r["added"], r["via"], r["distance"]) for r in out], rows,
                                     simhash, 10)
    finally:
        with open_store(url) as store:
            store.drop()


def test_an_actor_answers_a_record_batch_too(tmp_path):
    index = Index.create(open_store(f"local:{tmp_path / 'idx'}", create=True), k=K)
    index.store.close()
    actor = ray_data.AddNew(f"local:{tmp_path / 'idx'}")
    batch = pa.record_batch({"id": ["a", "b"], "text": ["国家卫生健康委通报最新疫情"] * 2})
    assert actor(batch).column("added").to_pylist() == [True, False]
