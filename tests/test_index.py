"""Exactness: lookups return exactly the brute-force set, for every k the scheme allows."""

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup_hbase import Document, Index, IndexMismatch, IndexNotFound, Scheme, open_store
from dedup_hbase.text.features import make_featurizer
from dedup_hbase.text.fingerprint import Fingerprinter, hamming

SCHEMES = [Scheme(4, 1), Scheme(5, 2), Scheme(2, 1), Scheme(4, 2), Scheme(7, 3), Scheme(8, 4)]


def flip(value, bits):
    for b in bits:
        value ^= 1 << b
    return value


def brute_force(docs, query, k):
    return sorted(((hamming(f, query), i) for i, f in docs.items() if hamming(f, query) <= k))


@st.composite
def corpus(draw):
    query = draw(st.integers(0, 2**64 - 1))
    planted = {}
    for n, distance in enumerate(draw(st.lists(st.integers(0, 4), min_size=1, max_size=25))):
        bits = draw(st.lists(st.integers(0, 63), min_size=distance, max_size=distance, unique=True))
        planted[f"p{n}"] = flip(query, bits)
    rnd = random.Random(draw(st.integers(0, 2**32)))
    planted.update({f"r{n}": rnd.getrandbits(64) for n in range(draw(st.integers(0, 200)))})
    return query, planted


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.name)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corpus())
def test_lookup_equals_brute_force(scheme, data):
    query, docs = data
    index = Index.create(open_store("memory:"), scheme, scheme.max_k)
    index.add_many([Document(i, f) for i, f in docs.items()])
    for k in range(scheme.max_k + 1):
        got = [(m.distance, m.id) for m in index.query(query, k)]
        assert got == brute_force(docs, query, k)
        assert all(m.simhash == docs[m.id] for m in index.query(query, k))
    many = index.query_many([query, docs["p0"]])
    assert many[0] == index.query(query) and many[1] == index.query(docs["p0"])


def test_k_above_guarantee_is_refused():
    index = Index.create(open_store("memory:"), 4, 3)
    with pytest.raises(ValueError, match="k=4 is more than scheme 4 can guarantee"):
        index.query(0, k=4)
    with pytest.raises(ValueError, match="k=4 is more than scheme 5"):
        Index.create(open_store("memory:"), 5, 4)


def test_identical_fingerprints_share_rows_and_delete():
    store = open_store("memory:")
    index = Index.create(store, 4, 3)
    index.add_many([Document("a", 42), Document("b", 42), Document("c", 43)])
    stats = index.stats()
    assert (stats["documents"], stats["index_rows"], stats["index_cells"]) == (3, 8, 12)
    assert [m.id for m in index.query(42, 0)] == ["a", "b"]
    assert index.delete(["a", "zz"]) == ["a"]
    assert [m.id for m in index.query(42, 1)] == ["b", "c"]
    assert index.stats()["index_cells"] == 8


def test_re_adding_an_id_replaces_its_fingerprint():
    index = Index.create(open_store("memory:"), 5, 3)
    index.add("x", simhash=0)
    assert index.add_many([Document("x", 2**64 - 1, {"title": "new"})]) == 0
    assert index.query(0) == []
    assert [m.id for m in index.query(2**64 - 1)] == ["x"]
    assert index.get(["x", "y"]) == [Document("x", 2**64 - 1, {"title": "new"}), None]
    assert index.stats()["index_cells"] == 10


def test_metadata_checked_on_open():
    store = open_store("memory:")
    with pytest.raises(IndexNotFound, match="no index at memory:"):
        Index.open(store)
    Index.create(store, 5, 2, Fingerprinter(make_featurizer("shingles", n=3)))
    index = Index.open(store)
    assert (index.scheme, index.k, index.fingerprinter.spec["params"]) == (Scheme(5, 2), 2, {"n": 3})
    with pytest.raises(IndexMismatch, match=r"built with featurizer shingles v1 \(n=3; seed 0\), "
                                            r"not jieba v2 \(seed 0\)"):
        Index.open(store, Fingerprinter(make_featurizer("jieba")))
    with pytest.raises(IndexMismatch, match="seed 9"):
        Index.open(store, Fingerprinter(make_featurizer("shingles", n=3), seed=9))


def test_bad_documents_refused_before_any_write():
    store = open_store("memory:")
    index = Index.create(store, 4, 3)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        index.add_many([Document("ok", 1), Document("bad", 2**64)])
    with pytest.raises(ValueError, match="non-empty string"):
        index.add_many([Document("", 1)])
    for bad in (-1, 1.0, True, "1f", np.uint64(1)):
        with pytest.raises(ValueError, match=re.escape(f"document 'b': simhash must be an unsigned 64-bit int, not {bad!r}")):
            index.add_many([Document("a", 1), Document("b", bad), Document("c", 3)])
    with pytest.raises(ValueError, match="non-empty string, not b'x'"):
        index.add_many([Document("a", 1), Document(b"x", 1)])
    with pytest.raises(ValueError, match="longer than 1024 bytes"):
        index.add_many([Document("a", 1), Document("y" * 1025, 1)])
    assert index.stats()["documents"] == 0


def test_a_repeated_id_in_one_batch_keeps_its_last_fingerprint():
    index = Index.create(open_store("memory:"), 4, 3)
    first, last, other = 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0F0F0F0F0F0F0F0F
    assert index.add_many([Document("a", first), Document("b", other), Document("a", last, {"v": 2})]) == 2
    assert [(m.id, m.distance) for m in index.query(last)] == [("a", 0)]
    assert index.query(first) == [] and index.get(["a"])[0].meta == {"v": 2}
    assert index.stats()["index_cells"] == 8


@pytest.fixture
def core_calls(monkeypatch):
    """The compiled core's lookup compare, counting its calls (the test must reach it)."""
    from dedup_hbase.text import native
    core = native.packed_counted()
    assert core is not None, native.describe()
    calls = []

    def counted(*args):
        calls.append(len(args[1]))
        return core(*args)
    monkeypatch.setattr(native, "packed_counted", lambda: counted)
    return calls


def reference_answers(monkeypatch, index, queries, k, max_matches):
    from dedup_hbase.text import native
    with monkeypatch.context() as m:
        m.setattr(native, "packed_counted", lambda: None)
        return index.query_counted(queries, k, max_matches)


@pytest.mark.parametrize("scheme", [Scheme(4, 1), Scheme(5, 2)], ids=lambda s: s.name)
def test_a_few_queries_on_the_embedded_store_are_brute_force_by_the_core(scheme, tmp_path, core_calls, monkeypatch):
    """Planted structure (60 exact copies, a chain of one-bit steps, pairs at exactly k and
    k + 1 bits, noise) in the embedded store: a service's few queries, answered by the
    compiled core, are the brute-force matches with the true count, and the reference's."""
    rnd = random.Random(21)
    k = scheme.max_k
    base = [rnd.getrandbits(64) for _ in range(3)]
    docs = {f"copy-{n:03}": base[0] for n in range(60)}
    step = base[1]
    for n, bit in enumerate(rnd.sample(range(64), 8)):
        step = flip(step, [bit])
        docs[f"chain-{n}"] = step
    for distance in (0, k, k + 1):
        docs[f"pair-{distance}"] = flip(base[2], rnd.sample(range(64), distance))
    docs.update({f"noise-{n}": rnd.getrandbits(64) for n in range(300)})
    index = Index.create(open_store(str(tmp_path / "index")), scheme, k)
    index.add_many([Document(i, f) for i, f in docs.items()])
    queries = base + [docs["chain-4"], flip(base[0], [5]), flip(base[2], rnd.sample(range(64), 1)), rnd.getrandbits(64)]
    for distance in range(k + 1):
        for max_matches in (None, 1, 2, 59, 60, 61):
            got = index.query_counted(queries, distance, max_matches)
            assert got == reference_answers(monkeypatch, index, queries, distance, max_matches)
            for query, (matches, total) in zip(queries, got):
                want = brute_force(docs, query, distance)
                assert total == len(want)
                assert [(m.distance, m.id) for m in matches] == want[:max_matches]
                assert all(m.simhash == docs[m.id] for m in matches)
    assert len(core_calls) == (k + 1) * 6


def test_the_shared_corpus_in_the_embedded_store_answers_by_the_core_as_the_reference(xwlb_path, tmp_path, core_calls,
                                                                                       monkeypatch):
    """The real corpus indexed whole, with 3 copies each of 2,000 of its documents (runs of
    one fingerprint); requests of 1 to 40 fingerprints, as the service sends them (indexed
    ones and ones 1 to 4 bits away), answered alike by the core and the reference."""
    import gzip
    import json
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line) for line in f]
    index = Index.create(open_store(str(tmp_path / "index")), 4, 3)
    hashes, errors = index.fingerprinter.fingerprint_many([t["text"] for t in texts])
    docs = [Document(t["id"], int(h)) for i, (t, h) in enumerate(zip(texts, hashes.tolist())) if i not in errors]
    rnd = random.Random(22)
    copies = [Document(f"{d.id}#{n}", d.simhash) for d in rnd.sample(docs, 2000) for n in range(3)]
    index.add_many(docs + copies)
    fingerprints = [d.simhash for d in docs]
    matched = 0
    for _ in range(60):
        queries = [flip(s, rnd.sample(range(64), rnd.choice((0, 0, 1, 2, 3, 4))))
                   for s in rnd.sample(fingerprints, rnd.randint(1, 40))]
        k, max_matches = rnd.randint(0, 3), rnd.choice((None, 1, 3, 20))
        got = index.query_counted(queries, k, max_matches)
        assert got == reference_answers(monkeypatch, index, queries, k, max_matches)
        matched += sum(total > 1 for _, total in got)
    assert len(core_calls) == 60 and matched > 50  # copies found, not only the query itself
