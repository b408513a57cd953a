"""The Arrow batch API (dedup_hbase/pipelines/arrow.py) and the core's reading of Arrow buffers.

Fingerprints: bit for bit the per-document API's (``Fingerprinter.fingerprint`` /
``fingerprint_many``) on the whole news corpus as string, large_string, a slice and a chunked
Table, on hostile random text (hypothesis, derandomized) with nulls, empty strings and non-BMP
characters, through the core and the Python reference. Check, insert-if-new and groups: against
a brute force on planted structure (exact copies, pairs at exactly k and k + 1 bits, chains) on
the embedded store, and equal to the CLI's library calls (``check``, the service's add, the
groups job) on the same input. Exact assertions, seeded randomness, nothing timed.
"""

from __future__ import annotations

import itertools
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_native import text as hostile_text

from dedup_hbase import Index, open_store
from dedup_hbase.errors import EmptyDocument, InvalidInput
from dedup_hbase.index.index import Document
from dedup_hbase.jobs.corpus import read_records
from dedup_hbase.jobs.local.check import check as check_job
from dedup_hbase.jobs.local.groups import group_files
from dedup_hbase.jobs.options import CheckOptions, GroupsOptions
from dedup_hbase.pipelines import arrow
from dedup_hbase.service.documents import RequestDoc
from dedup_hbase.service.handlers import DedupService
from dedup_hbase.service.online import OnlineIndex
from dedup_hbase.text.features import JiebaFeaturizer
from dedup_hbase.text.fingerprint import Fingerprinter, make_fingerprinter

from conftest import shared_texts

K = 3
FP = make_fingerprinter()
REFERENCE = Fingerprinter(JiebaFeaturizer(fast=False), native=False)
assert FP.uses_core and not REFERENCE.uses_core


def per_document(fingerprinter: Fingerprinter, texts: list[str | None]) -> list[int | str]:
    """Each text's simhash, or why it has none, one call of the per-document API a text."""
    out: list[int | str] = []
    for text in texts:
        if text is None:
            out.append("no text")
            continue
        try:
            out.append(fingerprinter.fingerprint(text))
        except EmptyDocument as e:
            out.append(str(e))
    return out


def through_arrow(fingerprinter: Fingerprinter, array) -> list[int | str]:
    hashes, errors = fingerprinter.fingerprint_arrow(array)
    return [errors.get(i, h) for i, h in enumerate(hashes.tolist())]


# -- fingerprints -----------------------------------------------------------------


@pytest.mark.slow
def test_the_news_corpus_from_its_buffers_is_the_per_document_apis(xwlb_path):
    texts = list(shared_texts(xwlb_path))
    hashes, errors = FP.fingerprint_many(texts)
    expected = [errors.get(i, h) for i, h in enumerate(hashes.tolist())]
    assert sum(isinstance(e, int) for e in expected) > 19_000
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(texts, kind)
        assert through_arrow(FP, array) == expected
        assert through_arrow(FP, array.slice(101, 4_000)) == expected[101:4_101]
    table = pa.table({"id": [str(i) for i in range(len(texts))],
                      "text": pa.chunked_array([texts[i:i + 3_000] for i in range(0, len(texts), 3_000)])})
    assert table.column("text").num_chunks == 7
    out = arrow.fingerprints(table, threads=2)
    assert out.column("simhash").to_pylist() == [h if isinstance(h, int) else None for h in expected]
    # the Python reference on a sample (the core is the reference on the whole corpus: test_native.py)
    sample = pa.array(texts[::250], pa.large_string()).slice(3)
    assert through_arrow(REFERENCE, sample) == expected[::250][3:]


HYPOTHESIS = settings(max_examples=150, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NON_BMP = st.sampled_from(["😀", "𠀀", "𝔘𝔫𝔦", "👨\u200d👩\u200d👧", "\U0010fffd", "🇨🇳字"])
texts = st.lists(st.one_of(st.none(), st.just(""), hostile_text, NON_BMP, st.tuples(hostile_text, NON_BMP).map("".join)),
                 max_size=12)


@HYPOTHESIS
@given(texts, st.booleans(), st.integers(0, 4), st.integers(0, 4))
def test_hostile_text_from_buffers_is_the_per_document_apis(texts, large, cut_front, cut_back):
    array = pa.array(texts, pa.large_string() if large else pa.string())
    stop = max(len(texts) - cut_back, min(cut_front, len(texts)))
    window = array.slice(min(cut_front, len(texts)), stop - min(cut_front, len(texts)))
    expected = per_document(FP, window.to_pylist())
    assert through_arrow(FP, window) == expected
    assert through_arrow(REFERENCE, window) == per_document(REFERENCE, window.to_pylist()) == expected


def test_bytes_that_are_not_utf8_and_offsets_that_do_not_fit():
    good = pa.array(["国家卫生健康委通报最新疫情", "新闻联播今天的主要内容有"])
    _, offsets, data = good.buffers()
    broken = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"\xff" + data.to_pybytes()[1:])])
    hashes, errors = FP.fingerprint_arrow(broken)
    assert errors == {0: "not UTF-8"} and hashes[1] == FP.fingerprint("新闻联播今天的主要内容有")
    core = FP.core.core  # buffers pyarrow would refuse to make an array of
    with pytest.raises(ValueError, match="do not fit the data buffer"):
        core.fingerprint_arrow(offsets, data.to_pybytes()[:5], 4, 0, 2, None, 0)
    with pytest.raises(ValueError, match="the offsets buffer holds 12 bytes"):
        core.fingerprint_arrow(offsets, data, 4, 1, 2, None, 0)
    with pytest.raises(TypeError, match="data must be a buffer"):
        core.fingerprint_arrow(offsets, "text", 4, 0, 2, None, 0)
    with pytest.raises(TypeError, match="not int64"):
        FP.fingerprint_arrow(pa.array([1, 2]))
    assert through_arrow(FP, pa.array([], pa.string())) == []
    assert through_arrow(FP, pa.array([None, None], pa.string())) == ["no text", "no text"]


def test_an_index_adds_its_other_signatures_and_sketch(tmp_path, xwlb_path):
    index = Index.create(open_store(f"local:{tmp_path / 'idx'}"), k=3, preset="recall")
    docs = list(shared_texts(xwlb_path)[:40]) + ["", None, "。。。"]
    batch = pa.record_batch({"id": [f"d{i}" for i in range(len(docs))], "text": docs})
    out = arrow.fingerprints(batch, index)
    assert isinstance(out, pa.RecordBatch)
    assert out.schema.names == ["id", "text", "simhash", "simhash_lead150", "sketch", "error"]
    rows = out.to_pylist()
    for row, text in zip(rows[:40], docs):
        assert row["simhash"] == index.fingerprint(text) and row["error"] is None
        assert (row["simhash_lead150"],) == index.more_signatures(text, row["simhash"])
        assert row["sketch"] == index.sketched(text)[0]
    assert [r["error"] for r in rows[40:]] == ["featureless text: empty text", "no text",
                                               f"featureless text: {EmptyDocument.NO_FEATURES}"]
    assert all(r["simhash"] is None and r["sketch"] is None for r in rows[40:])


def test_arguments_are_checked_up_front(tmp_path):
    index = Index.create(open_store("memory:"))
    batch = pa.table({"id": ["a"], "text": ["国家卫生健康委通报最新疫情"], "n": [1]})
    cases = [
        (lambda: arrow.fingerprints({"id": ["a"]}), "batch must be a pyarrow RecordBatch or Table, not dict"),
        (lambda: arrow.fingerprints(batch, text_column="body"), "batch has no column 'body' (text_column=): its "
                                                                "columns are id, text, n"),
        (lambda: arrow.fingerprints(batch, id_column="n"), "id_column='n': a string or large_string column, not int64"),
        (lambda: arrow.fingerprints(arrow.fingerprints(batch)), "batch already has the columns simhash, error"),
        (lambda: arrow.check(batch, "memory:"), "index must be an Index"),
        (lambda: arrow.check(batch, index, max_matches=0), "max_matches is a whole number >= 1, not 0"),
        (lambda: arrow.check(batch, index, k=9), "k"),
        (lambda: arrow.add_new(pa.table({"id": ["a", "a"], "text": ["国家卫生健康委通报最新疫情", "新闻联播今天的主要内容有"]}),
                               index), "rows 0 and 1 have the id 'a' with two fingerprints"),
        (lambda: arrow.fingerprints(batch, index, fingerprinter=FP), "give index= or fingerprinter=, not both"),
        (lambda: list(arrow.groups([batch, {"id": []}])), "batches must be a pyarrow RecordBatch or Table, not dict"),
        (lambda: arrow.groups([batch], k=4, scheme="4"), "k"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert message in str(caught.value)
    assert index.get(["a"]) == [None]  # the refused insert-if-new wrote nothing


# -- planted structure: check, insert-if-new and groups against a brute force ------------


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def variants(text: str) -> list[str]:
    """``text`` without one of its sentences, for each of its first sentences: near copies."""
    parts = text.split("。")
    return ["。".join(parts[:i] + parts[i + 1:]) for i in range(min(len(parts) - 1, 6))]


@pytest.fixture(scope="module")
def planted(xwlb_path):
    """(indexed: [(id, text)], queries: [(id, text)], simhash of a text): news documents and their
    near copies, with exact copies, pairs at exactly k and k + 1 bits and chains among them,
    and rows with an error among the queries."""
    rng = random.Random(48)
    news = [t for t in shared_texts(xwlb_path)[:1_500] if t.count("。") >= 4]
    base = rng.sample(news, 120)
    near = [v for t in base for v in variants(t)]
    every = base + near
    hashes, errors = FP.fingerprint_many(every)
    simhash = {t: int(h) for i, (t, h) in enumerate(zip(every, hashes.tolist())) if i not in errors}
    indexed = [(f"n{i}", t) for i, t in enumerate(base[:80])] + [(f"dup{i}", t) for i, t in enumerate(base[:5])]
    indexed += [(f"w{i}", variants(t)[0]) for i, t in enumerate(base[:20])]  # chains: query ~ variant ~ base
    copies = [(f"copy{i}", t) for i, t in enumerate(base[:10])]  # exact copies of indexed documents
    queries = copies + [(f"v{i}", t) for i, t in enumerate(near)] + [(f"b{i}", t) for i, t in enumerate(base[80:])]
    queries += [("n3", base[3])]  # an indexed document itself
    rng.shuffle(queries)
    queries[5:5] = [("nul", None), ("empty", ""), (None, base[0]), ("punct", "。。。")]
    found = [simhash[t] for _, t in queries if t in simhash]
    distances = {hamming(a, b) for a, b in itertools.combinations(found, 2)}
    assert {0, K, K + 1} <= distances  # exact copies and both sides of k
    return indexed, queries, simhash


def batch_of(rows, kind=pa.string()):
    return pa.table({"id": pa.array([i for i, _ in rows], pa.string()), "text": pa.array([t for _, t in rows], kind)})


def index_of(path, indexed, simhash) -> Index:
    index = Index.create(open_store(f"local:{path}"), k=K)
    index.add_many([Document(i, simhash[t]) for i, t in indexed])
    return index


def test_check_is_the_brute_force_and_the_check_job(tmp_path, planted):
    indexed, queries, simhash = planted
    index = index_of(tmp_path / "idx", indexed, simhash)
    out = arrow.check(batch_of(queries, pa.large_string()), index, max_matches=None).to_pylist()
    chained = 0
    for row, (doc_id, text) in zip(out, queries):
        if text not in simhash or doc_id is None:
            assert row["matches"] is None and row["match_count"] is None and row["error"]
            continue
        brute = sorted(((hamming(simhash[text], simhash[t]), i) for i, t in indexed
                        if hamming(simhash[text], simhash[t]) <= K))
        assert row["matches"] == [{"id": i, "distance": d} for d, i in brute]
        assert row["match_count"] == len(brute)
        chained += len(brute) > 1
    assert chained  # a query near several indexed documents
    pairs = [hamming(simhash[q], simhash[t]) for _, q in queries if q in simhash for _, t in indexed]
    assert K in pairs and K + 1 in pairs  # a match at exactly k, and a pair at k + 1 that is none
    limited = arrow.check(batch_of(queries), index, max_matches=1).to_pylist()
    assert [r["match_count"] for r in limited] == [r["match_count"] for r in out]
    assert [r["matches"] for r in limited] == [None if r["matches"] is None else r["matches"][:1] for r in out]
    # the check job (the CLI's `check`) on the same documents as JSON lines
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in queries
                            if t is not None and i is not None), encoding="utf-8")
    records = list(check_job(index, read_records([str(path)]), CheckOptions(max_matches=None)))
    mine = [r for r in out if r["id"] is not None and r["text"] is not None]
    assert len(records) == len(mine)
    for record, row in zip(records, mine):
        assert record["id"] == row["id"]
        if "error" in record:
            assert record["error"] == row["error"]
            continue
        assert [{"id": m["id"], "distance": m["distance"]} for m in record["matches"]] == row["matches"]
        assert record.get("match_count", len(record["matches"])) == row["match_count"]


def test_insert_if_new_is_the_brute_force_and_the_services(tmp_path, planted):
    indexed, queries, simhash = planted
    index = index_of(tmp_path / "idx", indexed, simhash)
    out = arrow.add_new(batch_of(queries), index).to_pylist()
    known = {i: simhash[t] for i, t in indexed}
    earlier: list[tuple[str, int]] = []
    refused_by_batch = 0
    for row, (doc_id, text) in zip(out, queries):
        if text not in simhash or doc_id is None:
            assert row["added"] is False and row["via"] is None and row["error"]
            continue
        h = simhash[text]
        near = sorted((hamming(h, other), i) for i, other in [*known.items(), *earlier] if hamming(h, other) <= K)
        earlier.append((doc_id, h))
        assert row["added"] == (not near)
        assert (row["via"], row["distance"]) == ((near[0][1], near[0][0]) if near else (None, None))
        refused_by_batch += bool(near) and near[0][1] not in known
    assert refused_by_batch  # an earlier row of the batch, not the index, was the nearest
    added = [r["id"] for r in out if r["added"]]
    assert all(d is not None for d in index.get(added))
    assert not any(r["added"] for r in arrow.add_new(batch_of(queries), index).to_pylist())  # again: nothing new
    # the service's add?if_new=true on a second index of the same documents
    other = index_of(tmp_path / "other", indexed, simhash)
    service = DedupService(OnlineIndex(other))
    docs = [RequestDoc(p, i, t, None) for p, (i, t) in enumerate(queries) if i is not None and t is not None]
    answers = {a["id"]: a for a in service.add(docs, if_new=True)}
    for row in out:
        if row["id"] is None or row["text"] is None:
            continue
        answer = answers[row["id"]]
        assert answer["added"] == row["added"]
        assert (answer["matches"][0]["id"], answer["matches"][0]["distance"]) == (row["via"], row["distance"]) \
            if answer.get("matches") else row["via"] is None


def test_groups_are_the_brute_force_and_the_groups_job(tmp_path, planted):
    indexed, queries, simhash = planted
    rows = [(i, t) for i, t in indexed + queries if i is not None]
    rows = [(f"{i}#{p}", t) for p, (i, t) in enumerate(rows)]  # ids unique: the brute force names rows by id
    table = batch_of(rows)
    out = arrow.groups([table.slice(0, 50), table.slice(50, 100).to_batches()[0], table.slice(150)], k=K,
                       short_texts="off")  # the brute force below is by the bits alone
    assert out.num_rows == len(rows)
    got = out.to_pylist()
    good = [(p, i, simhash[t]) for p, (i, t) in enumerate(rows) if t in simhash]
    parent = list(range(len(good)))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for (a, (_, _, x)), (b, (_, _, y)) in itertools.combinations(enumerate(good), 2):
        if hamming(x, y) <= K:
            parent[max(root(a), root(b))] = min(root(a), root(b))  # the root: the earliest member
    by_id = {i: h for _, i, h in good}
    for n, (p, doc_id, h) in enumerate(good):
        row = got[p]
        first = good[root(n)][1]
        assert (row["id"], row["group"], row["keep"], row["error"]) == (doc_id, first, doc_id == first, None)
        assert row["size"] == sum(root(m) == root(n) for m in range(len(good)))
        if not row["keep"]:
            assert row["distance"] == hamming(h, by_id[row["via"]]) <= K
            assert got[[r["id"] for r in got].index(row["via"])]["group"] == first
    assert sum(bool(r["keep"]) and r["size"] > 1 for r in got) > 5
    assert any(r["keep"] is False and r["via"] != r["group"] for r in got)  # a chain: joined through another
    errors = [r for r, (_, t) in zip(got, rows) if t not in simhash]
    assert errors and all(r["group"] is None and r["keep"] is None and r["error"] for r in errors)
    # the groups job (the CLI's `groups`) on the same documents
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows
                            if t is not None), encoding="utf-8")
    group_files([str(path)], str(tmp_path / "out"), GroupsOptions(k=K, workers=1), FP)
    written = pq.read_table(tmp_path / "out" / "documents").to_pylist()
    assert written == [r for r in out.drop_columns(["error"]).to_pylist() if r["group"] is not None]
    assert all(r["simhash"] == f"{by_id[r['id']]:016x}" for r in written)


def test_groups_apply_the_short_text_rule_as_the_groups_job_by_default(tmp_path, xwlb_path):
    """News titles with planted copies and unrelated titles that share a fingerprint (春节里的中国 /
    春节近 年味浓 at 0 bits, 习近平会见菲律宾总统 / 习近平会见韩国总统 at 3): by default the groups are the
    CLI's `groups` (the short-text rule, on by default there), row for row, and the brute force
    of the rule (``confirm.sketches_agree``); ``short_texts="off"`` gives the job's --short-texts
    off; anything else is refused naming the argument."""
    from test_short_index import title_texts

    from dedup_hbase.index.confirm import kept_of, sketches_agree
    from dedup_hbase.text.units import WORDS

    originals, copies = title_texts(xwlb_path)
    texts = originals + copies
    rows = [(f"t{p}", t) for p, t in enumerate(texts)]
    path = tmp_path / "titles.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    table = batch_of(rows)
    parts = [table.slice(0, 200), table.slice(200, 150).to_batches()[0], table.slice(350)]
    for short_texts, short in (("on", WORDS), ("off", None)):
        out = arrow.groups(parts, k=K, short_texts=short_texts)
        group_files([str(path)], str(tmp_path / short_texts), GroupsOptions(k=K, workers=1, short=short), FP)
        written = pq.read_table(tmp_path / short_texts / "documents").to_pylist()
        assert written == [r for r in out.drop_columns(["error"]).to_pylist() if r["group"] is not None]
        if short is None:
            off = {r["group"] for r in out.to_pylist() if not r["keep"]}
    index = Index.create(open_store("memory:"), 4, K, short=WORDS)
    prints = {t: (index.fingerprint(t), *index.sketched(t)) for t in set(texts)}
    kept = kept_of([f[1] for f in prints.values()], [f[2] for f in prints.values()])
    root = list(range(len(texts)))

    def find(a):
        while root[a] != a:
            a = root[a]
        return a

    for a, b in itertools.combinations(range(len(texts)), 2):
        (x, sx, _), (y, sy, _) = prints[texts[a]], prints[texts[b]]
        if hamming(x, y) <= K and sketches_agree(hamming(x, y), sx, sy, None, WORDS, kept):
            root[max(find(a), find(b))] = min(find(a), find(b))
    got = arrow.groups(parts, k=K).to_pylist()
    assert [r["group"] for r in got] == [f"t{find(p)}" for p in range(len(texts))]
    assert got[texts.index("春节近 年味浓")]["group"] != got[texts.index("春节里的中国")]["group"]
    assert off - {r["group"] for r in got if not r["keep"]}  # without the rule, groups the rule keeps apart
    with pytest.raises(InvalidInput, match="short_texts takes 'on' or 'off', not 'yes'") as refused:
        arrow.groups(parts, short_texts="yes")
    assert refused.value.arguments == ("short_texts",)


def test_empty_batches_and_large_string_ids():
    index = Index.create(open_store("memory:"))
    schema = pa.schema([("id", pa.large_string()), ("text", pa.large_string())])
    empty = pa.Table.from_batches([], schema)
    assert empty.column("text").num_chunks == 0
    for call in (lambda b: arrow.fingerprints(b), lambda b: arrow.check(b, index), lambda b: arrow.add_new(b, index)):
        out = call(empty)
        assert out.num_rows == 0 and out.schema.names[:3] == ["id", "text", "simhash"]
    assert arrow.groups([empty, empty]).num_rows == 0
    one = pa.table({"id": pa.array(["a"], pa.large_string()), "text": pa.array(["国家卫生健康委通报最新疫情"],
                                                                             pa.large_string())})
    assert arrow.add_new(one, index).column("added").to_pylist() == [True]
    assert arrow.groups([one, one.to_batches()[0]]).column("group").to_pylist() == ["a", "a"]


def test_the_recall_preset_answers_as_the_check_job_and_the_service(tmp_path, planted):
    """Several signatures, probes and a confirmation: the leads and probes made from the texts
    as the check job and the service make them."""
    indexed, queries, _ = planted
    rows = [(i, t) for i, t in queries if i is not None and t is not None]
    one, other = (Index.create(open_store(f"local:{tmp_path / name}"), k=3, preset="recall") for name in ("one", "other"))
    for index in (one, other):
        index.add_many([Document(i, index.fingerprint(t), {}, index.more_signatures(t, index.fingerprint(t)),
                                 index.sketched(t)[0]) for i, t in indexed[:60]])
    out = arrow.check(batch_of(rows), one, max_matches=None).to_pylist()
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    records = list(check_job(one, read_records([str(path)]), CheckOptions(max_matches=None)))
    assert [[(m["id"], m["distance"]) for m in r["matches"]] for r in records] == \
        [[(m["id"], m["distance"]) for m in r["matches"] or []] for r in out]
    assert sum(bool(r["matches"]) for r in out) > 20
    added = arrow.add_new(batch_of(rows), one).to_pylist()
    answers = DedupService(OnlineIndex(other)).add([RequestDoc(p, i, t, None) for p, (i, t) in enumerate(rows)],
                                                    if_new=True)
    assert [a["added"] for a in answers] == [r["added"] for r in added]
    assert [(a["matches"][0]["id"], a["matches"][0]["distance"]) if a.get("matches") else (None, None)
            for a in answers] == [(r["via"], r["distance"]) for r in added]


def test_an_index_with_the_short_text_rule_sketches_and_answers_as_the_check_job(tmp_path, xwlb_path):
    """``init --short-texts on`` (text/units.py): the sketch column is the index's own
    (``Index.sketched``: a short text's is the hash of its kept text), and a check of news titles,
    unrelated ones among them that share one dominant term, answers as the check job."""
    import gzip

    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        titles = [json.loads(line)["title"] for _, line in zip(range(400), f)]
    index = Index.create(open_store(f"local:{tmp_path / 'idx'}"), k=3, short="words")
    index.add_many([Document(f"t{i}", index.fingerprint(t), {}, (), *index.sketched(t))
                    for i, t in enumerate(titles[:300])])
    rows = [(f"q{i}", t) for i, t in enumerate(titles)]
    out = arrow.check(batch_of(rows), index, max_matches=None).to_pylist()
    assert [r["sketch"] for r in out] == [index.sketched(t)[0] for _, t in rows]
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in rows),
                    encoding="utf-8")
    records = list(check_job(index, read_records([str(path)]), CheckOptions(max_matches=None)))
    assert [[(m["id"], m["distance"]) for m in r["matches"]] for r in records] == \
        [[(m["id"], m["distance"]) for m in r["matches"] or []] for r in out]
    assert sum(bool(r["matches"]) for r in out) >= 300  # each indexed title finds itself


def brute_insert_if_new(indexed: dict[str, int], rows: list[tuple[str, int | None]],
                        batch_size: int) -> list[tuple[bool, str | None, int | None]]:
    """Insert-if-new by brute force, batch by batch (the adapters' batches): per row (added,
    via, distance); a row is refused when an indexed document or an earlier row of its batch is
    within K, via the nearest by (distance, id); ``None`` for a row without a fingerprint."""
    known, out = dict(indexed), []
    for start in range(0, len(rows), batch_size):
        earlier: list[tuple[str, int]] = []
        for doc_id, h in rows[start:start + batch_size]:
            if h is None:
                out.append((False, None, None))
                continue
            near = sorted((hamming(h, o), i) for i, o in [*known.items(), *earlier] if hamming(h, o) <= K)
            earlier.append((doc_id, h))
            out.append((not near, near[0][1], near[0][0]) if near else (True, None, None))
        known.update((i, h) for (i, h), (added, _, _) in zip(rows[start:start + batch_size], out[start:]) if added)
    return out


def assert_workers_added_exactly(url, answers, rows, simhash, batch: int) -> None:
    """Two workers' insert-if-new of the same ``rows`` under ids ``{id}@{worker}`` into one index
    at ``url`` (``answers``: (id, added, via, distance) of every row): no two added within K; each
    refused one near (at its distance) an added one or an earlier row of its own batch of
    ``batch``; the index holds exactly the added ones."""
    place = {f"{i}@{n}": p for n in range(2) for p, (i, _) in enumerate(rows)}
    h = {f"{i}@{n}": simhash[t] for n in range(2) for i, t in rows}
    assert sorted(a[0] for a in answers) == sorted(place)
    added = [me for me, was_added, _, _ in answers if was_added]
    assert all(hamming(h[a], h[b]) > K for a, b in itertools.combinations(added, 2))
    for me, was_added, via, distance in answers:
        if not was_added:
            assert via in added or (via.split("@")[1] == me.split("@")[1]
                                    and place[via] // batch == place[me] // batch and place[via] < place[me])
            assert distance == hamming(h[me], h[via]) <= K
    with open_store(url) as store:
        index = Index.open(store)
        assert index.stats()["documents"] == len(added)
        assert all(d is not None for d in index.get(added))
