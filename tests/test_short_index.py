"""An index with the short-text rule (``init --short-texts on``, the default; text/units.py): a
match of which either document is short counts, at any distance, only when both are, their
numbers are the same and the words of one are among the other's. Exact against a brute force with
the same rule (``confirm.sketches_agree``) on planted structure on every store (with and without a
confirmation beyond 3 bits), and on real short texts (news titles, unrelated ones sharing one
heavy term, true copies) for check, load --skip-near-dups, load --groups and the service's check
and add?if_new=true (the Spark engine's load, check and check --add-new: test_spark_check.py);
``--short-texts off`` makes an index without it, one made before the default says so at open, and
one of the rule before (character sketches) is refused in one line."""

import gzip
import json
import random
import subprocess

import pytest
from test_confirm import flip

from dedup_hbase import Document, Index, open_store
from dedup_hbase.errors import IndexOutdated, InvalidInput
from dedup_hbase.index.confirm import kept_of, sketches_agree
from dedup_hbase.stores.memory import MemoryStore
from dedup_hbase.text.shorts import SHORT_FLAG
from dedup_hbase.text.units import WORDS, kept_sketch

T = WORDS


def short_doc(doc_id: str, simhash: int, kept: str) -> Document:
    return Document(doc_id, simhash, {}, (), kept_sketch(kept), kept)


def planted(seed: int, k: int):
    """Queries (simhash, sketch, kept text; short and long) and documents around them at 0 .. k + 1
    bits: short ones that keep the query's text, a word inserted (near), a word substituted or a
    number changed (not near), an unrelated short text, and long ones."""
    rnd = random.Random(seed)
    queries = []
    for q in range(40):
        kept = f"会议第{q}次在京召开" if q % 2 else ""
        queries.append((rnd.getrandbits(64), kept_sketch(kept) if kept else rnd.getrandbits(64) & ~SHORT_FLAG, kept))
    docs = [Document(f"r{i}", rnd.getrandbits(64), {}, (), rnd.getrandbits(64) & ~SHORT_FLAG) for i in range(300)]
    for q, (simhash, _, kept) in enumerate(queries):
        text = kept or f"会议第{q}次在京召开"
        for d in range(k + 2):
            for name, variant in (("same", text), ("inserted", text + "并讲话"), ("substituted", text.replace("京", "沪")),
                                  ("number", text.replace(f"第{q}次", f"第{q + 1}次")), ("other", f"随机{q}号{d}文本")):
                docs.append(short_doc(f"q{q}-d{d}-{name}", flip(simhash, d, rnd), variant))
            docs.append(Document(f"q{q}-d{d}-long", flip(simhash, d, rnd), {}, (), rnd.getrandbits(64) & ~SHORT_FLAG))
    rnd.shuffle(docs)
    return queries, docs


def brute(queries, docs, k, confirm):
    texts = kept_of([d.sketch for d in docs] + [s for _, s, _ in queries], [d.kept for d in docs] + [t for *_, t in queries])
    return [sorted(((doc.simhash ^ simhash).bit_count(), doc.id) for doc in docs
                   if (doc.simhash ^ simhash).bit_count() <= k
                   and sketches_agree((doc.simhash ^ simhash).bit_count(), sketch, doc.sketch, confirm, T, texts))
            for simhash, sketch, _ in queries]


@pytest.mark.parametrize(("k", "scheme", "confirm"), [(3, "4", None), (6, "7/1", 10)])
def test_lookups_are_the_brute_force_on_every_store(store_url, k, scheme, confirm):
    queries, docs = planted(11 + k, k)
    with open_store(store_url, create=True) as store:
        index = Index.create(store, scheme, k, confirm=confirm, short=T)
        index.write(docs)
        asked = dict(sketches=[c for _, c, _ in queries], kepts=[t for *_, t in queries])
        got = index.query_many([s for s, _, _ in queries], **asked)
        expected = brute(queries, docs, k, confirm)
        assert [sorted((m.distance, m.id) for m in found) for found in got] == expected
        assert [found.total for found in got] == [len(e) for e in expected]
        assert any("-inserted" in i for e in expected for _, i in e)  # a word inserted is near
        assert not any(("-substituted" in i or "-number" in i) for e in expected for _, i in e)
        one = index.query_many([s for s, _, _ in queries], max_matches=1, **asked)
        assert [(m[0].distance, m[0].id, m.total) if m else None for m in one] == \
            [(*e[0], len(e)) if e else None for e in expected]
        # the rule is what the test compares: without it the same lookups find more
        plain = [[d for d in docs if (d.simhash ^ s).bit_count() <= 3] for s, _, _ in queries]
        assert sum(map(len, plain)) > sum(map(len, expected)) // 2 + 100
        short = next(d for d in docs if d.kept)
        (stored,) = index.get([short.id])
        assert (stored.simhash, stored.sketch, stored.kept, stored.meta) == (short.simhash, short.sketch, short.kept, {})
        index.write([short_doc(short.id, short.simhash, short.kept + "了")])  # rewritten: its old cells go
        assert short.id not in {m.id for m in index.query_many([short.simhash], sketches=[kept_sketch(short.kept + "吗")],
                                                                kepts=[short.kept + "吗"])[0]}
        index.delete([d.id for d in docs])
        assert list(index.store.iterate("index")) == []  # every cell found again from the document rows
        reopened = Index.open(store)
        assert (reopened.spec.short, reopened.spec.sketched) == (T, True)


UNRELATED = ["春节里的中国", "春节近 年味浓", "李希在福建调研", "李希在湖北调研", "李希在云南调研", "习近平会见菲律宾总统",
             "习近平会见韩国总统"]


def title_texts(xwlb_path) -> tuple[list[str], list[str]]:
    """Originals (``UNRELATED`` and 300 news titles) and copies of them (a full stop added, the
    same, a space made a comma) with 100 other titles."""
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        texts = [t for _, line in zip(range(3000), f) if (t := json.loads(line)["title"])]
    rnd = random.Random(44)
    originals = UNRELATED + rnd.sample(texts, 300)
    copies = ([t + "。" for t in rnd.sample(originals, 60)] + rnd.sample(originals, 40)
              + [t.replace(" ", "，", 1) for t in originals if " " in t][:40] + rnd.sample(texts, 100))
    return originals, copies


@pytest.fixture(scope="module")
def titles(xwlb_path):
    return title_texts(xwlb_path)


def lines(path, texts, prefix):
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return path


def run(*args, check=True):
    done = subprocess.run(["dedup-hbase", *args], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def near(index, a: str, b: str) -> tuple[bool, int]:
    sa, sb = index.fingerprint(a), index.fingerprint(b)
    d = (sa ^ sb).bit_count()
    ka, kb = index.sketched(a)[0], index.sketched(b)[0]
    return d <= index.k and sketches_agree(d, ka, kb, None, T, kept_of([ka, kb], [index.sketched(a)[1], index.sketched(b)[1]])), d


def components(finds: list[list[bool]], ids: list[str]) -> set[frozenset]:
    """The groups of a load: the components (of more than one id) of ``finds[j][i]`` (a lookup
    of j finds the earlier i), by brute force."""
    root = list(range(len(ids)))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for j, row in enumerate(finds):
        for i, found in enumerate(row):
            if found:
                root[find(i)] = find(j)
    members: dict[int, set] = {}
    for j, doc_id in enumerate(ids):
        members.setdefault(find(j), set()).add(doc_id)
    return {frozenset(m) for m in members.values() if len(m) > 1}


def test_check_skip_groups_and_the_service_decide_as_the_rule(tmp_path, titles):
    from test_service import serving

    originals, copies = titles
    index = Index.create(MemoryStore(), short=T)
    expected = {f"c{c}": sorted((d, f"o{o}") for o, original in enumerate(originals)
                                for ok, d in [near(index, copy, original)] if ok)
                for c, copy in enumerate(copies)}
    unrelated_at_3 = [(a, b) for i, a in enumerate(UNRELATED) for b in UNRELATED[i + 1:]
                      if (index.fingerprint(a) ^ index.fingerprint(b)).bit_count() <= 3]
    assert len(unrelated_at_3) >= 3 and not any(near(index, a, b)[0] for a, b in unrelated_at_3)
    assert sum(1 for e in expected.values() if e) >= 100  # the copies are found
    store = str(tmp_path / "index")
    run("--store", store, "init", "--short-texts", "on")
    run("--store", store, "load", str(lines(tmp_path / "o.jsonl", originals, "o")))
    asked = lines(tmp_path / "c.jsonl", copies, "c")
    answers = [json.loads(x) for x in run("--store", store, "check", str(asked), "--json").stdout.splitlines()]
    assert {a["id"]: sorted((m["distance"], m["id"]) for m in a["matches"]) for a in answers} == expected

    texts = originals + copies
    ids = [f"d{j}" for j in range(len(texts))]
    data = lines(tmp_path / "all.jsonl", texts, "d")
    new = [not any(near(index, texts[i], t)[0] for i in range(j)) for j, t in enumerate(texts)]
    assert 60 <= new.count(False) < len(texts)
    run("--store", str(tmp_path / "skip"), "init", "--short-texts", "on")
    report = json.loads(run("--store", str(tmp_path / "skip"), "load", str(data), "--skip-near-dups", "--json").stdout)
    assert report["near_duplicates_skipped"] == new.count(False)
    run("--store", str(tmp_path / "grouped"), "init", "--short-texts", "on")
    run("--store", str(tmp_path / "grouped"), "load", str(data), "--groups", str(tmp_path / "g.jsonl"))
    got = {frozenset(json.loads(x)["ids"]) for x in (tmp_path / "g.jsonl").read_text(encoding="utf-8").splitlines()}
    assert got == components([[near(index, texts[i], t)[0] for i in range(j)] for j, t in enumerate(texts)], ids)
    served = str(tmp_path / "served")
    run("--store", served, "init", "--short-texts", "on")
    with serving(served) as (client, _):
        answer = client.post("/v1/add?if_new=true", json=[{"id": i, "text": t} for i, t in zip(ids, texts)])
        assert answer.status_code == 200 and [a["added"] for a in answer.json()] == new
        checked = client.post("/v1/check", json=[{"id": f"c{j}", "text": t} for j, t in enumerate(copies)])
    local = [json.loads(x) for x in run("--store", served, "check", str(asked), "--json").stdout.splitlines()]
    assert checked.json() == local


def test_what_the_short_text_rule_refuses_and_its_default(tmp_path):
    index = Index.create(MemoryStore(), short=T)
    with pytest.raises(InvalidInput, match="this index matches short texts by their words"):
        index.query_many([1])
    with pytest.raises(InvalidInput, match=r"query 0: a short text's sketch is its kept text's"):
        index.query_many([1], sketches=[1], kepts=[""])
    with pytest.raises(InvalidInput, match=r"document 'a': a short text's sketch is its kept text's"):
        index.write([Document("a", 1, {}, (), kept_sketch("春节"), "春节里")])
    with pytest.raises(InvalidInput, match="short= is 'words' .* not 'twelve'"):
        Index.create(MemoryStore(), short="twelve")
    fingerprints = tmp_path / "f.jsonl"
    fingerprints.write_text('{"id": "f0", "simhash": "0123456789abcdef", "featurizer": "jieba/2;seed=0"}\n', encoding="utf-8")
    store = str(tmp_path / "index")
    run("--store", store, "init")  # the rule by default
    assert json.loads(run("--store", store, "stats", "--json").stdout)["short"] == T
    done = run("--store", store, "load", str(fingerprints), "--fingerprints", check=False)
    assert (done.returncode, done.stderr) == (1, "error: an index with the short-text rule (short texts near by their "
                                                 "words) fingerprints the texts themselves: precomputed fingerprints "
                                                 "(--fingerprints) carry the body's simhash alone; an index made without "
                                                 "the rule (--short-texts off) takes them\n")
    done = run("--store", str(tmp_path / "bad"), "init", "--short-texts", "twelve", check=False)
    assert (done.returncode, done.stderr) == (1, "error: --short-texts takes on or off, not 'twelve'\n")
    done = run("--store", str(tmp_path / "bad"), "init", "--short-texts", "12", check=False)
    assert (done.returncode, done.stderr) == (1, "error: --short-texts takes on or off, not '12' (the sketch bits of the "
                                                 "rule before are gone: short texts are near by their words)\n")
    # an index of the rule before (character sketches within T bits): refused in one line
    with open_store(store) as opened:
        config = Index.read_config(opened)
        opened.put("meta", [(b"config", json.dumps({**config, "short": 12}).encode())])
        with pytest.raises(IndexOutdated, match="matches short texts by character sketches within 12 bits"):
            Index.open(opened)
    off = str(tmp_path / "off")
    run("--store", off, "init", "--short-texts", "off")
    assert run("--store", off, "load", str(fingerprints), "--fingerprints").stderr.startswith("read 1, indexed 1")
    assert "short" not in json.loads(run("--store", off, "stats", "--json").stdout)
    assert Index.read_config(open_store(off))["short"] is None  # said: not an index of before the default
    # an index made before the rule was the default (no "short" in its metadata): as then, said at open
    with open_store(off) as opened:
        config = Index.read_config(opened)
        del config["short"]
        opened.put("meta", [(b"config", json.dumps(config).encode())])
    done = run("--store", off, "stats")
    assert done.stderr == (f"note: {off} was made before the short-text rule was the default: its short texts (under "
                           "200 characters) match on their 64 bits alone, so unrelated ones sharing a term can match; "
                           "for the rule, make it again (dedup-hbase init) and load its documents again\n")
    assert run("--store", off, "load", str(fingerprints), "--fingerprints").returncode == 0
    # groups: the rule by default, off with precomputed fingerprints (they carry no text) or when asked
    texts = lines(tmp_path / "t.jsonl", UNRELATED, "u")
    for extra, short, dropped in (((), T, 0), (("--short-texts", "off"), None, 4)):
        done = json.loads(run("groups", str(texts), "--out", str(tmp_path / f"g{len(extra)}"), "--json", *extra).stdout)
        assert (done.get("short_texts"), done["to_drop"]) == (short, dropped)
    done = run("groups", str(fingerprints), "--fingerprints", "--out", str(tmp_path / "gf"), "--json")
    assert "short_texts" not in json.loads(done.stdout)
