"""The short-text rule (text/units.py, ``groups --short-texts on``, the default): two documents of
which either is short are near, at any distance, only when both are, their numbers are the same
and the words of one are among the other's; other pairs as before. The groups are a brute
force's components over every pair with the same rule (``confirm.sketches_agree``), on planted
structure (short and long documents under one fingerprint, short texts a word inserted, a word
substituted, a number changed, pairs at 0-3 bits, with and without a confirmation beyond 3
bits) and on real short texts (unrelated titles sharing one heavy term, true copies); each via
is near its document; both engines (local, Spark local[2]) write the same output byte for byte
on news titles and bodies."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest
from test_groups import local_groups

from dedup_hbase import make_fingerprinter
from dedup_hbase.errors import InvalidInput
from dedup_hbase.index.confirm import kept_of, sketches_agree
from dedup_hbase.index.layout import Scheme
from dedup_hbase.jobs.local.groups import assign
from dedup_hbase.jobs.options import GroupsOptions
from dedup_hbase.text.shorts import SHORT_BELOW, SHORT_FLAG, is_short
from dedup_hbase.text.signatures import Signatures
from dedup_hbase.text.units import WORDS, kept_sketch, text_sketches

T = WORDS


def flip(value: int, bits: int, rnd: random.Random, low: int = 0) -> int:
    for bit in rnd.sample(range(low, 64), bits):
        value ^= 1 << bit
    return value


def test_short_is_by_length_of_the_squeezed_normalized_text():
    assert is_short("字" * (SHORT_BELOW - 1)) and not is_short("字" * SHORT_BELOW)
    assert is_short("字 " * (SHORT_BELOW - 1) + "\n\n")  # white space does not count
    assert not is_short("ＡＢ" * (SHORT_BELOW // 2))  # full-width letters count once normalized


def test_sketches_of_short_texts_are_their_kept_texts():
    (a, b), (ka, kb) = text_sketches(["春节里的中国", "春节近 年味浓"])
    assert (ka, kb) == ("春节里的中国", "春节近 年味浓") and a == kept_sketch(ka) and b == kept_sketch(kb)
    assert a & SHORT_FLAG and b & SHORT_FLAG and a != b
    assert text_sketches([" 春节里的   中国 "])[1] == ["春节里的 中国"]  # white space runs made one
    long = "新闻" * SHORT_BELOW
    assert text_sketches([long, long], [0xFF, None]) == ([0xFE, 0], ["", ""])
    assert text_sketches(["春节里的中国"], [0xFF])[0] == [a]  # a short text's sketch is its text's


def test_the_rule_on_scalars_is_the_rule_on_arrays():
    rnd = random.Random(7)
    words = ["李希在湖南调研", "李希在河南调研", "李希在湖南调研了", "通报七起", "通报八起", "通报七起问题", "春节里的中国"]
    kepts = {kept_sketch(w): w for w in words}
    pool = [*kepts, 0, 0xF0, rnd.getrandbits(64) & ~SHORT_FLAG]
    rows = [(rnd.randrange(8), rnd.choice(pool), rnd.choice(pool)) for _ in range(3000)]
    for confirm in (None, 10):
        for short in (None, T):
            d = np.array([r[0] for r in rows])
            a, b = np.array([r[1] for r in rows], np.uint64), np.array([r[2] for r in rows], np.uint64)
            assert sketches_agree(d, a, b, confirm, short, kepts).tolist() == \
                [sketches_agree(r[0], r[1], r[2], confirm, short, kepts) for r in rows]
    s = {w: kept_sketch(w) for w in words}
    assert sketches_agree(0, s["李希在湖南调研"], s["李希在湖南调研了"], None, T, kepts) is True  # a word inserted
    assert sketches_agree(0, s["李希在湖南调研"], s["李希在河南调研"], None, T, kepts) is False  # a word substituted
    assert sketches_agree(0, s["通报七起"], s["通报八起"], None, T, kepts) is False  # another number
    assert sketches_agree(5, s["通报七起"], s["通报七起"], None, T, kepts) is True  # one text, at any distance
    assert sketches_agree(0, s["通报七起"], 0, None, T, kepts) is False  # a short and a long document
    assert sketches_agree(0, 1, 0, None, None) is True  # as before without the rule


def planted(seed: int) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Simhashes, sketches and the short ones' kept texts: randoms (long and short); families
    around a base fingerprint holding long copies, short texts that are copies, a word inserted
    (near), a word substituted and a number changed (not near), pairs at 1-3 and 4-6 bits, an
    English text with one word misspelled (near), two, or a short word edited (not near); shuffled."""
    rnd = random.Random(seed)
    rows, sketches, texts = [], [], {}

    def add(simhash: int, kept: str | None) -> None:
        rows.append(simhash)
        sketch = 0 if kept is None else kept_sketch(kept)
        sketches.append(sketch)
        if kept is not None:
            texts[sketch] = kept

    for n in range(300):
        add(rnd.getrandbits(64), f"随机{n}号文本" if rnd.random() < 0.5 else None)
    for n in range(60):
        base, text = rnd.getrandbits(64), f"会议第{n}次在京召开"
        add(base, None)
        add(base, None)  # a long copy
        add(base, text)  # short texts of the same fingerprint: copies
        add(base, text)
        add(base, text + "并讲话")  # a word inserted: near
        add(base, text.replace("京", "沪"))  # a word substituted: not near
        add(base, text.replace(f"第{n}次", f"第{n + 1}次"))  # a number changed: not near
        for bits in (1, 2, 3, 4, 6):
            add(flip(base, bits, rnd), rnd.choice((text + "了", text.replace("会议", "大会"))))
            add(flip(base, bits, rnd), None)
        english = f"the committee met in room {n} to review the annual budget"
        add(base, english)
        add(flip(base, n % 5, rnd), english.replace("budget", "budegt"))  # one word misspelled: near
        add(base, english.replace("budget", "budegt").replace("annual", "anual"))  # two: not near
        add(base, english.replace("room", "rome"))  # a short word: not near
    order = list(range(len(rows)))
    rnd.shuffle(order)
    return (np.array([rows[i] for i in order], np.uint64), np.array([sketches[i] for i in order], np.uint64), texts)


def brute_groups(simhashes: np.ndarray, sketches: np.ndarray, texts: dict, k: int, confirm: int | None) -> list[int]:
    n = len(simhashes)
    root = list(range(n))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for a in range(n):
        for b in range(a + 1, n):
            distance = int(simhashes[a] ^ simhashes[b]).bit_count()
            if distance <= k and sketches_agree(distance, int(sketches[a]), int(sketches[b]), confirm, T, texts):
                ra, rb = find(a), find(b)
                root[max(ra, rb)] = min(ra, rb)
    return [find(x) for x in range(n)]


@pytest.mark.parametrize(("k", "scheme", "confirm"), [(3, "4", None), (3, "5", None), (6, "7/1", 10)])
def test_planted_groups_are_the_brute_force_and_each_via_is_near(k, scheme, confirm):
    simhashes, sketches, texts = planted(44 + k)
    group, via, distance, _ = assign(simhashes.copy(), Scheme.parse(scheme), k, None, (sketches, confirm, texts), T)
    expected = brute_groups(simhashes, sketches, texts, k, confirm)
    assert group.tolist() == expected
    assert len(set(expected)) < len(expected) - 300  # the families are grouped
    for j in np.flatnonzero(via >= 0).tolist():
        i = int(via[j])
        d = int(np.bitwise_count(simhashes[i] ^ simhashes[j]))
        assert group[i] == group[j] and d == distance[j] and sketches_agree(d, int(sketches[i]), int(sketches[j]),
                                                                            confirm, T, texts), j
    # without the rule the short texts of a fingerprint all join it: it is what decides
    plain = assign(simhashes.copy(), Scheme.parse(scheme), k, None, None if confirm is None else (sketches, confirm, {}))[0]
    assert len(set(plain.tolist())) < len(set(expected))


UNRELATED = ["春节里的中国", "春节近 年味浓", "李希在福建调研", "李希在湖北调研", "李希在云南调研", "李希在新疆调研"]
COPIES = ["春节里的中国！", "李希在福建调研。", "李希在湖北调研"]
ENGLISH = ["The committee met in the city hall to review the annual budget report",  # and typo copies
           "The committee met in the city hall to review the anual budget report",
           "The committee met in the city hall to review the annual budget reprot!",
           "The committee met in the city hall to review the anual budget reprot"]


def test_real_short_texts_against_a_brute_force(tmp_path):
    rnd = random.Random(44)
    texts = UNRELATED + COPIES + [f"{rnd.choice(UNRELATED)}{rnd.choice('，。！')}" for _ in range(30)]
    texts.append("。".join(texts) * 3)  # one long text
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n"
                           for i, t in enumerate(texts)), encoding="utf-8")
    fp = make_fingerprinter()
    simhashes = np.array([fp.fingerprint(t) for t in texts], np.uint64)
    made, kepts = text_sketches(texts)
    sketches = np.array(made, np.uint64)
    assert int(np.bitwise_count(simhashes[0] ^ simhashes[1])) <= 3  # the fingerprints cannot tell them apart
    expected = brute_groups(simhashes, sketches, kept_of(made, kepts), 3, None)
    local_groups([src], tmp_path / "short", GroupsOptions(short=T))
    local_groups([src], tmp_path / "plain", GroupsOptions())
    lines = [json.loads(x) for x in (tmp_path / "short" / "groups.jsonl").read_text(encoding="utf-8").splitlines()]
    got = list(range(len(texts)))
    for g in lines:
        members = [int(i[1:]) for i in g["ids"]]
        for m in members:
            got[m] = min(members)
    assert got == expected
    assert len({got[i] for i in range(len(UNRELATED))}) == len(UNRELATED)  # none of the unrelated joined
    assert got[len(UNRELATED)] == 0 and got[len(UNRELATED) + 1] == 2 and got[len(UNRELATED) + 2] == 3  # copies
    plain = [json.loads(x) for x in (tmp_path / "plain" / "groups.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(plain) < len(lines) or max(g["size"] for g in plain) > max(g["size"] for g in lines)


def test_what_the_rule_refuses():
    with pytest.raises(InvalidInput, match="short= is 'words' .* or None"):
        GroupsOptions(short="12")
    with pytest.raises(InvalidInput, match="short=12: the short-text rule by character sketches within 12 bits is gone"):
        GroupsOptions(short=12)
    with pytest.raises(InvalidInput, match="groups with the short-text rule .* fingerprints the texts themselves"):
        GroupsOptions(short=T, fingerprints=True)


@pytest.fixture(scope="module")
def shorts(xwlb_path, tmp_path_factory):
    """News titles (short) and bodies (most long), with copies of titles (a mark added, the same)
    and the unrelated titles sharing one heavy term; shuffled."""
    with gzip.open(xwlb_path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(1500), f)]
    rnd = random.Random(45)
    titles = [r["title"] for r in rows if r.get("title")]
    docs = (titles + [r["text"] for r in rows[:300]] + [t + "。" for t in rnd.sample(titles, 100)]
            + rnd.sample(titles, 60) + UNRELATED * 2 + ENGLISH)
    rnd.shuffle(docs)
    path = tmp_path_factory.mktemp("shorts") / "shorts.jsonl"
    path.write_text("".join(json.dumps({"id": f"n{i}", "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(docs)), encoding="utf-8")
    return path


@pytest.mark.spark
@pytest.mark.parametrize(("k", "scheme", "confirm", "signatures"),
                         [(3, None, None, "body"), (6, "7/1", 10, "body"), (3, None, None, "body,lead12")])
def test_both_engines_write_the_same_output(spark, shorts, tmp_path, monkeypatch, k, scheme, confirm, signatures):
    """Under several signatures a node is a tuple of the signatures' fingerprints and the
    sketch, and a short fingerprint holds nodes of other leads: each joins the first node of
    its sketch before the sketches' first nodes are matched. There the Spark engine's tables of
    nodes are not broadcast (as when they hold more than ``BROADCAST_NODES``): the documents'
    rows are joined to them by shuffles."""
    from test_groups import parquet_rows, spark_groups

    from dedup_hbase.jobs.spark import groups

    if signatures != "body":
        monkeypatch.setattr(groups, "BROADCAST_NODES", 0)
    options = GroupsOptions(k=k, scheme=scheme, confirm=confirm, short=T, workers=2,
                            signatures=Signatures.parse(signatures))
    local = local_groups([shorts], tmp_path / "local", options)
    on_spark = spark_groups(spark, [shorts], tmp_path / "spark", options)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in ("elapsed_s", "engine")}
    assert strip(local) == strip(on_spark) and local.to_dict()["short_texts"] == T
    assert "short texts near only by their words" in local.summary()
    assert parquet_rows(tmp_path / "local") == parquet_rows(tmp_path / "spark")
    for name in ("groups.jsonl", "dropped.jsonl"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "spark" / name).read_bytes()
    ids = {d["text"]: d["id"] for d in map(json.loads, shorts.read_text(encoding="utf-8").splitlines())}
    group = {i: g["group"] for g in map(json.loads, (tmp_path / "local" / "groups.jsonl").read_text(encoding="utf-8")
                                        .splitlines()) for i in g["ids"]}
    # one word misspelled is near: at k = 6 the four are one group (5, 5 and 3 bits), at k = 3 the last two
    # (and by their first 12 characters, all four)
    assert len({group.get(ids[t], ids[t]) for t in ENGLISH}) == (1 if k == 6 or signatures != "body" else 3)
    plain = local_groups([shorts], tmp_path / "plain", GroupsOptions(k=k, scheme=scheme, confirm=confirm, workers=2,
                                                                     signatures=options.signatures))
    assert plain.to_dict()["groups"] < local.to_dict()["groups"]  # the rule is what the engines agree on


def test_short_copy_edges_against_a_brute_force():
    """The rule inside fingerprints (both engines call it: the local engine on every flagged
    fingerprint at once, the Spark engine on a task's): members of one fingerprint and sketch
    join the first of them; the first members of two sketches of one fingerprint join when the
    rule says so at distance 0. Planted: copies (one sketch, several members), near and
    unrelated short texts, long texts' sketches, singletons."""
    from dedup_hbase.jobs.local.groups import short_copy_edges

    rnd = random.Random(46)
    words = ["李希在福建调研", "李希在福建调研！", "李希在湖北调研", "春节里的中国", "春节近 年味浓", "the annual budget report",
             "the anual budget report"]
    made, kepts = text_sketches(words)
    texts = kept_of(made, kepts)
    pool = made + [0, 1 << 8, 5 << 20]  # and long texts' sketches (bit 0 clear)
    fingerprint = np.array([rnd.randrange(6) for _ in range(300)], np.int64)
    sketches = np.array([rnd.choice(pool) for _ in range(300)], np.uint64)
    got = short_copy_edges(fingerprint, sketches, None, T, texts)
    head = {}
    for m in range(len(fingerprint)):
        head.setdefault((fingerprint[m], sketches[m]), m)
    want = {(m, head[fingerprint[m], sketches[m]]) for m in range(len(fingerprint))}
    heads = sorted(head.items(), key=lambda item: item[1])
    want |= {(a, b) for (fa, sa), a in heads for (fb, sb), b in heads
             if fa == fb and a < b and sketches_agree(0, int(sa), int(sb), None, T, texts)}
    assert {tuple(map(int, edge)) for edge in got} == want and len(got) == len(want)
    assert len(want) > 300 + 20  # head pairs that agree, beyond each member's own edge
    assert short_copy_edges(fingerprint[:0], sketches[:0], None, T, texts).shape == (0, 2)
