"""Skewed corpora: many copies of one page cost work and memory in proportion to the copies.

Exact against brute force on planted structure (copies by the thousand, chains whose ends are
more than k apart, pairs at exactly k and k + 1 bits, a bucket of thousands of distinct
fingerprints), and counted: n copies give n - 1 edges, never n²/2 pairs."""

import json
import random

import numpy as np
import pytest

from dedup_hbase import Document, Index, Match, Scheme, open_store
from dedup_hbase.index.neardup import near_pairs
from dedup_hbase.index.store import Cells
from dedup_hbase.jobs.corpus import Record
from dedup_hbase.jobs.local.check import check
from dedup_hbase.jobs.local.components import roots
from dedup_hbase.jobs.local.load import load
from dedup_hbase.jobs.options import CheckOptions, LoadOptions
from dedup_hbase.text.fingerprint import hamming

from planted import K, brute_components, brute_pairs, flip, planted


@pytest.mark.parametrize("scheme", [Scheme(4, 1), Scheme(5, 2)], ids=lambda s: s.name)
def test_pairs_and_groups_equal_brute_force(scheme):
    fps = planted(11)
    found = near_pairs(np.array(fps, dtype=np.uint64), scheme, K)
    unique = found.unique.tolist()
    assert unique == sorted(set(fps))
    got = {tuple(p) for p in found.pairs.tolist()}
    assert len(got) == len(found.pairs)  # each pair once
    want = brute_pairs(unique)
    assert got == want
    assert len(want) > 1000  # the bucket and the near copies are really there
    # groups over positions: the edges span exactly the components of all pairs within k
    edges = found.edges()
    assert len(edges) == (len(fps) - len(unique)) + len(want)  # n copies: n - 1 edges
    by_value = brute_components(len(unique), want)
    index_of = {v: i for i, v in enumerate(unique)}
    expected = {}
    for position, f in enumerate(fps):
        expected.setdefault(by_value[index_of[f]], []).append(position)
    got_groups = {}
    for position, r in enumerate(roots(len(fps), edges).tolist()):
        got_groups.setdefault(r, []).append(position)
    assert sorted(got_groups.values()) == sorted(expected.values())
    assert all(r == members[0] for r, members in got_groups.items())  # the root: the first member


def test_earliest_earlier_equals_brute_force():
    rnd = random.Random(5)
    fps = [rnd.getrandbits(64) for _ in range(300)]
    fps += [fps[7]] * 50 + [flip(fps[9], 3, rnd) for _ in range(20)] + [flip(fps[11], 4, rnd)]
    rnd.shuffle(fps)
    got = near_pairs(np.array(fps, dtype=np.uint64), Scheme(4, 1), K).earliest_earlier().tolist()
    want = [next((i for i in range(j) if hamming(fps[i], fps[j]) <= K), -1) for j in range(len(fps))]
    assert got == want


def copies(n, simhash=0x0123456789ABCDEF, prefix="c"):
    return [Record("mem", i + 1, id=f"{prefix}{i}", simhash=simhash) for i in range(n)]


def test_load_groups_of_many_copies_is_linear(tmp_path, monkeypatch):
    """n copies of one fingerprint, in batches: one group, from fewer than 2n edges (counted as
    the load hands them to the component search), never the n²/2 pairs."""
    import dedup_hbase.jobs.local.load as loading

    n = 20_000
    edges = []
    real_id_groups = loading.id_groups
    monkeypatch.setattr(loading, "id_groups", lambda pairs: real_id_groups(edges.append(p) or p for p in pairs))
    index = Index.create(open_store("memory:"), 4, K)
    groups = tmp_path / "groups.jsonl"
    report = load(index, copies(n), LoadOptions(fingerprints=True, batch_size=3000, groups=str(groups)))
    assert n - 1 <= len(edges) < 2 * n
    assert report.indexed == n
    lines = [json.loads(line) for line in groups.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["size"] == n
    assert set(lines[0]["ids"]) == {f"c{i}" for i in range(n)}


def test_skip_near_dups_of_many_copies_keeps_the_first(tmp_path):
    n = 20_000
    index = Index.create(open_store("memory:"), 5, K)
    report = load(index, copies(n), LoadOptions(fingerprints=True, batch_size=3000, skip_near_dups=True))
    assert (report.indexed, report.near_duplicates_skipped) == (1, n - 1)
    assert index.get(["c0", "c1"])[1] is None and index.get(["c0"])[0].id == "c0"


def test_check_against_many_copies_is_bounded_and_counts_them_all():
    n = 5_000
    index = Index.create(open_store("memory:"), 4, K)
    load(index, copies(n), LoadOptions(fingerprints=True))
    load(index, [Record("mem", 1, id="near", simhash=0x0123456789ABCDEF ^ 0b111)], LoadOptions(fingerprints=True))
    answers = list(check(index, copies(300, prefix="q"), CheckOptions(fingerprints=True, max_matches=10)))
    assert len(answers) == 300
    want = sorted(f"c{i}" for i in range(n))[:10]
    for answer in answers:
        assert [m["id"] for m in answer["matches"]] == want
        assert {m["distance"] for m in answer["matches"]} == {0}
        assert answer["match_count"] == n + 1
    everything = index.query(0x0123456789ABCDEF)
    assert everything.total == n + 1 and len(everything) == n + 1
    assert everything[-1].id == "near" and everything[-1].distance == 3
    few = list(check(index, copies(1, simhash=0x0123456789ABCDEF ^ 0b111, prefix="x"),
                     CheckOptions(fingerprints=True, max_matches=10_000)))
    assert "match_count" not in few[0] and len(few[0]["matches"]) == n + 1


class CountedCells(Cells):
    """A store's cells, counting the ids read from them (``reads``: one list for all)."""

    def __init__(self, cells: Cells, reads: list) -> None:
        self.cells, self.reads = cells, reads

    @property
    def rests(self):
        return self.cells.rests

    def qualifier(self, i: int) -> bytes:
        self.reads.append(i)
        return self.cells.qualifier(i)


def test_a_hundred_thousand_copies_are_read_in_proportion_to_the_copies():
    """100,000 copies of one fingerprint, a near document and a stale row of one copy under a
    near fingerprint: a bounded lookup reads the ids it lists and counts the rest by their runs'
    sizes (however many queries of a batch hit the copies), a whole one reads each id once; never
    one read per pair of copies, nor per copy and query."""
    n, simhash = 100_000, 0x0123456789ABCDEF
    index = Index.create(open_store("memory:"), 4, K)
    index.add_many([Document(f"c{i:06}", simhash) for i in range(n)] + [Document("near", simhash ^ 0b111)])
    index.store.put_cells("index", index.scheme.key_table(np.array([simhash ^ 0b11], dtype=np.uint64)),
                          [b"c000005"], repeat=4)
    reads: list = []
    scan_cells = index.store.scan_cells
    index.store.scan_cells = lambda table, prefixes: [CountedCells(c, reads) for c in scan_cells(table, prefixes)]
    first = index.query(simhash, max_matches=10)
    assert [m.id for m in first] == [f"c{i:06}" for i in range(10)] and first.total == n + 2
    assert len(reads) <= 10  # the listed ids
    reads.clear()
    batch = index.query_many([simhash] * 300 + [simhash ^ 1] * 300, max_matches=10)
    assert all(m == first and m.total == n + 2 for m in batch[:300])
    assert all(m.total == n + 2 and m[0].distance == 1 for m in batch[300:])
    assert len(reads) <= 2 * len(first)  # ids shared by the queries of a batch
    reads.clear()
    every = index.query(simhash)
    assert len(every) == n + 1 and every.total == n + 2 and every[-1] == Match("near", simhash ^ 0b111, 3)
    assert len(reads) <= n + 2  # each id once


def test_copies_of_one_short_text_cost_in_proportion_to_the_copies(tmp_path, monkeypatch):
    """n copies of one short text in the default index (the short-text rule: every run's
    sketches are tested) through load --groups, load --skip-near-dups and check, in batches:
    the sketches tested once per query and distinct sketch, each batch's run chained once
    (confirm._Sketches, load.py's ``walked``), never once per pair of copies (n²/2 = 18 million);
    load --groups walks the copies once, then joins each to a stand-in (1,000 + ... + 5,000 before)."""
    import dedup_hbase.index.confirm as confirming
    import dedup_hbase.jobs.local.load as loading

    n, text = 6_000, "春眠不觉晓，处处闻啼鸟。"
    tested, walked = [], []
    real_agree, real_chain = confirming.sketches_agree, loading._chain
    monkeypatch.setattr(confirming, "sketches_agree", lambda *a: tested.append(1) or real_agree(*a))
    monkeypatch.setattr(loading, "_chain", lambda chained, key, ids, part: walked.append(len(ids))
                        or real_chain(chained, key, ids, part))
    records = [Record("mem", i + 1, id=f"c{i}", text=text) for i in range(n)]
    index = Index.create(open_store("memory:"), 4, K, short="words")
    groups = tmp_path / "groups.jsonl"
    report = load(index, records, LoadOptions(batch_size=1000, groups=str(groups)))
    assert report.indexed == n and sum(walked) <= 1000 and len(tested) <= 2 * n  # one batch's copies: stand-ins
    lines = [json.loads(line) for line in groups.read_text().splitlines()]
    assert len(lines) == 1 and set(lines[0]["ids"]) == {f"c{i}" for i in range(n)}
    answers = list(check(index, records[:300], CheckOptions(max_matches=10)))
    assert [a["match_count"] for a in answers] == [n] * 300 and len(tested) <= 2 * n + 300
    skipping = Index.create(open_store("memory:"), 4, K, short="words")
    report = load(skipping, records, LoadOptions(batch_size=1000, skip_near_dups=True))
    assert (report.indexed, report.near_duplicates_skipped) == (1, n - 1)



@pytest.mark.parametrize("hot", [3, 10**9], ids=["stand-ins", "every-record-looked-up"])
def test_load_groups_with_stand_ins_equal_the_brute_force(tmp_path, hot, monkeypatch):
    """Copies of a hot fingerprint joined to an identical looked-up record (load.py, ``_stand_in``)
    give the groups of every pair the rule joins: exact copies, short texts with a word inserted
    (near) or substituted (not near), long texts and an edit, unrelated short texts, in a seeded
    order and batches of 40; with stand-ins most copies are not looked up."""
    import dedup_hbase.jobs.local.load as loading
    from dedup_hbase.index.confirm import kept_of, sketches_agree

    monkeypatch.setattr(loading, "HOT", hot)
    poem, title = "春眠不觉晓，处处闻啼鸟。", "习近平会见菲律宾总统"
    body = "".join(f"第{i}段：长江经济带生态环境保护发生了转折性变化，沿江省市共抓大保护。" for i in range(12))
    texts = ([poem] * 150 + [poem + "夜来风雨声"] * 20 + [poem.replace("啼鸟", "鸣蝉")] * 20 + [title] * 80
             + [title.replace("菲律宾", "韩国")] * 20 + [body] * 90 + [body + "新的一段话在这里。"] * 10
             + [f"无关的短文{i}号" for i in range(20)])
    random.Random(23).shuffle(texts)
    index = Index.create(open_store("memory:"), 4, K, short="words")
    asked, real = [], index.query_many
    monkeypatch.setattr(index, "query_many", lambda simhashes, *a: asked.append(len(simhashes)) or real(simhashes, *a))
    groups = tmp_path / "groups.jsonl"
    load(index, [Record("mem", j + 1, id=f"d{j}", text=t) for j, t in enumerate(texts)],
         LoadOptions(batch_size=40, groups=str(groups)))

    distinct = sorted(set(texts))
    fingerprints = {t: (index.fingerprint(t), *index.sketched(t)) for t in distinct}
    kept = kept_of([f[1] for f in fingerprints.values()], [f[2] for f in fingerprints.values()])
    root = {t: t for t in distinct}

    def find(t):
        while root[t] != t:
            t = root[t]
        return t

    for a in distinct:
        for b in distinct:
            d = hamming(fingerprints[a][0], fingerprints[b][0])
            if d <= K and sketches_agree(d, fingerprints[a][1], fingerprints[b][1], None, index.spec.short, kept):
                root[find(a)] = find(b)
    members: dict[str, set] = {}
    for j, t in enumerate(texts):
        members.setdefault(find(t), set()).add(f"d{j}")
    expected = {frozenset(m) for m in members.values() if len(m) > 1}
    got = {frozenset(json.loads(line)["ids"]) for line in groups.read_text(encoding="utf-8").splitlines()}
    assert got == expected and len(expected) >= 5
    assert sum(asked) == len(texts) if hot > len(texts) else sum(asked) < len(texts) // 2


@pytest.mark.parametrize("options", [{"signatures": "body,lead150", "short": "words"}, {"k": 6, "confirm": 14}],
                         ids=["signatures", "confirmation"])
def test_stand_ins_give_the_groups_of_every_record_looked_up(tmp_path, monkeypatch, options):
    """Indexes of several signatures, and with a confirmation beyond 3 bits: a load with stand-ins
    (from the third copy) gives the groups of the load that looks every record up, and looks up
    fewer than half of the records."""
    import dedup_hbase.jobs.local.load as loading

    body = "".join(f"第{i}段：长江经济带生态环境保护发生了转折性变化，沿江省市共抓大保护。" for i in range(12))
    texts = ([body] * 120 + [body + "新的一段话在这里。"] * 40 + ["春眠不觉晓，处处闻啼鸟。"] * 60
             + [f"第{i}条：" + body[: 40 + i] for i in range(40)])
    random.Random(29).shuffle(texts)
    got = {}
    for hot in (3, 10**9):
        monkeypatch.setattr(loading, "HOT", hot)
        index = Index.create(open_store("memory:"), **{"k": K, **options})
        asked, real = [], index.query_many
        monkeypatch.setattr(index, "query_many", lambda simhashes, *a, real=real, asked=asked:
                            asked.append(len(simhashes)) or real(simhashes, *a))
        groups = tmp_path / f"groups-{hot}.jsonl"
        load(index, [Record("mem", j + 1, id=f"d{j}", text=t) for j, t in enumerate(texts)],
             LoadOptions(batch_size=40, groups=str(groups)))
        got[hot] = ({frozenset(json.loads(line)["ids"]) for line in groups.read_text(encoding="utf-8").splitlines()},
                    sum(asked))
    assert got[3][0] == got[10**9][0] and len(got[3][0]) >= 2
    assert got[10**9][1] == len(texts) and got[3][1] < len(texts) // 2
