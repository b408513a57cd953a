"""Exactness: lookups return exactly the brute-force set, for every k the scheme allows."""

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup_hbase import Document, Index, IndexMismatch, IndexNotFound, Match, Scheme, open_store
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


def test_one_answer_type_says_the_count_and_holds_the_runs():
    """``query`` and ``query_many`` answer with ``Matches``: a list of matches (what the README
    prints) with the count of documents (``total``) and the runs; bounds refused plainly."""
    index = Index.create(open_store("memory:"), 4, 3)
    index.add_many([Document(f"c{n}", 42) for n in range(5)] + [Document("near", 43), Document("far", 2**63)])
    found = index.query(42, max_matches=2)
    assert type(found).__name__ == "Matches" and isinstance(found, list)
    assert found == [Match("c0", 42, 0), Match("c1", 42, 0)] and found.total == 6
    assert repr(found) == "[Match(id='c0', simhash=42, distance=0), Match(id='c1', simhash=42, distance=0)]"
    assert [(r.distance, r.simhash, list(r.ids)) for r in found.runs] == [(0, 42, [f"c{n}" for n in range(5)]),
                                                                        (1, 43, ["near"])]
    every = index.query(42)
    assert len(every) == every.total == 6 and every[-1] == Match("near", 43, 1)
    assert index.query_many([42, 2**63, 7], 0, 1) == [[Match("c0", 42, 0)], [Match("far", 2**63, 0)], []]
    assert [m.total for m in index.query_many([42, 2**63, 7], 0, 1)] == [5, 1, 0]
    assert index.query_many([]) == []
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(ValueError, match=re.escape(f"max_matches is a whole number >= 1, not {bad!r}")):
            index.query(42, max_matches=bad)
    for bad in (-1, 2**64, 1.0, np.uint64(3)):
        with pytest.raises(ValueError, match=re.escape(f"a simhash is an unsigned 64-bit int, not {bad!r}")):
            index.query_many([42, bad])


def test_the_shared_corpus_in_the_embedded_store_is_brute_force(xwlb_path, tmp_path):
    """The real corpus indexed whole, with 3 copies each of 2,000 of its documents (runs of
    one fingerprint); requests of 1 to 60 fingerprints, as the service and ``check`` send
    them (indexed ones and ones 1 to 4 bits away): brute force, the count of documents."""
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
    every = {d.id: d.simhash for d in docs + copies}  # the last fingerprint of an id counts
    ids, values = list(every), np.array(list(every.values()), dtype=np.uint64)
    fingerprints = [d.simhash for d in docs]
    matched = 0
    for _ in range(60):
        queries = [flip(s, rnd.sample(range(64), rnd.choice((0, 0, 1, 2, 3, 4))))
                   for s in rnd.sample(fingerprints, rnd.randint(1, 60))]
        k, max_matches = rnd.randint(0, 3), rnd.choice((None, 1, 3, 20))
        for query, got in zip(queries, index.query_many(queries, k, max_matches)):
            distances = np.bitwise_count(values ^ np.uint64(query))
            want = sorted((int(distances[i]), ids[i]) for i in np.flatnonzero(distances <= k).tolist())
            assert [(m.distance, m.id) for m in got] == want[:max_matches] and got.total == len(want)
            matched += got.total > 1
    assert matched > 50  # copies found, not only the query itself
