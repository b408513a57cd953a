"""The compiled core (native/, ``dedup_hbase_core``) gives exactly the Python reference's
features, fingerprints and margins: every document of the shared corpora, random hostile text
(hypothesis, derandomized so every run tries the same examples), and each step on its
own (normalisation of every code point, boilerplate rules line by line, jieba's cut).
Any difference fails; nothing here falls back to the reference.

The reference is the Python code with pure jieba (``JiebaFeaturizer(fast=False)``, and
``Fingerprinter(..., native=False)``), never rjieba.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path

import mmh3
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup_hbase.errors import EmptyDocument, InvalidInput
from dedup_hbase.jobs import workers
from dedup_hbase.text import boilerplate, native, shorts, units
from dedup_hbase.text.features import JiebaFeaturizer, ShingleFeaturizer, normalize
from dedup_hbase.text.fingerprint import Fingerprinter, Hasher, margins_of

from conftest import reference_features, reference_texts, require_or_skip, shared_texts

try:
    import dedup_hbase_core as core
except ImportError:  # scripts/setup builds it wherever cargo is
    if shutil.which("cargo"):
        raise
    require_or_skip("the compiled core is not installed (no cargo here)")

SEEDS = [0, 1, 0xDEADBEEF, 2**32 - 1]
REFERENCE = JiebaFeaturizer(fast=False)
JIEBA = Fingerprinter(JiebaFeaturizer(), 0)._core
SHINGLES = {n: Fingerprinter(ShingleFeaturizer(n), 0)._core for n in (1, 2, 4, 7)}


def reference_features_of(name: str, text: str) -> dict[str, int]:
    return REFERENCE.features(text) if name == "jieba" else ShingleFeaturizer(int(name[8:])).features(text)


def core_features(name: str, text: str) -> dict[str, int]:
    return JIEBA.features(text) if name == "jieba" else SHINGLES[int(name[8:])].features(text)


def make(name: str):
    return JiebaFeaturizer() if name == "jieba" else ShingleFeaturizer(int(name[8:]))


@cache
def both(name: str, seed: int) -> tuple[Fingerprinter, Fingerprinter]:
    """(core, reference) fingerprinters; the core one must really use the core."""
    fast = Fingerprinter(make(name), seed)
    slow = Fingerprinter(REFERENCE if name == "jieba" else make(name), seed, native=False)
    assert fast._core is not None and slow._core is None
    return fast, slow


def reference_squeezed(text: str) -> str:
    """The reference's ``shorts.squeezed(text)``: Python's normalize and body_text alone."""
    return "".join(boilerplate.body_text(normalize(text)).split())


def squeezed_length(text: str) -> int:
    return len(reference_squeezed(text))


def assert_same_bodies(fast: Fingerprinter, texts: list[str], name: str) -> None:
    """``fingerprint_bodies``: the fingerprints of ``fingerprint_many``, and of each text with
    one its body's length as the reference takes it (jieba), or None (shingles: no body); with
    ``keep_below``, the bodies of those shorter, as the reference makes them (the kept texts of
    the short-text rule are made of them: ``units.stored``)."""
    want = fast.fingerprint_many(texts)
    surrogates = {i for i, t in enumerate(texts) if re.search("[\ud800-\udfff]", t)}
    expected = [squeezed_length(t) if name == "jieba" and i not in want[1] and i not in surrogates else None
                for i, t in enumerate(texts)]
    for keep_below in (0, 60, shorts.SHORT_BELOW):
        hashes, errors, chars, bodies = fast.fingerprint_bodies(texts, keep_below=keep_below)
        assert np.array_equal(hashes, want[0]) and errors == want[1] and chars == expected
        assert bodies == [boilerplate.body_text(normalize(t)) if n is not None and n < keep_below else None
                          for t, n in zip(texts, chars)]
    short = [i for i, n in enumerate(expected) if n is not None and n < shorts.SHORT_BELOW]
    assert units.text_sketches([texts[i] for i in short], None, [expected[i] for i in short],
                               [bodies[i] for i in short]) == units.text_sketches([texts[i] for i in short])


def assert_same_fingerprints(texts: list[str], name: str, seed: int) -> None:
    fast, slow = both(name, seed)
    got, want = fast.fingerprint_many(texts), slow.fingerprint_many(texts)
    assert got[1] == want[1]
    assert got[0].dtype == np.uint64 and np.array_equal(got[0], want[0])
    assert_same_bodies(fast, texts, name)
    assert slow.fingerprint_bodies(texts, keep_below=shorts.SHORT_BELOW)[2:] == ([None] * len(texts),) * 2  # the
    # Python path: shorts.py takes them


def in_use() -> bool:
    """A jieba Fingerprinter takes the compiled core."""
    return Fingerprinter(JiebaFeaturizer()).uses_core


# -- the path in use, and its guards ------------------------------------------------------


def test_the_core_is_in_use():
    assert in_use(), native.describe()
    assert native.describe().startswith("compiled core dedup-hbase-core")
    assert Fingerprinter(JiebaFeaturizer())._core is not None
    assert Fingerprinter(ShingleFeaturizer(3))._core is not None
    assert Fingerprinter(JiebaFeaturizer(fast=False))._core is None  # the reference stays Python


def test_the_core_has_boilerplate_py_patterns():
    assert core.PATTERNS == {name: getattr(boilerplate, name).pattern for name in core.PATTERNS}


def test_the_core_is_refused_with_another_unicode_version(monkeypatch):
    monkeypatch.setattr(native, "unicodedata", type(sys)("unicodedata"), raising=True)
    native.unicodedata.unidata_version = "1.0.0"
    native._load.cache_clear()
    try:
        assert not in_use()
        assert "Unicode" in native.describe() and native.describe().startswith("Python reference")
        assert Fingerprinter(JiebaFeaturizer())._core is None
    finally:
        monkeypatch.undo()
        native._load.cache_clear()
    assert in_use()


def test_the_core_is_refused_when_a_pattern_changed(monkeypatch):
    import re

    monkeypatch.setattr(boilerplate, "_RE_PHONE", re.compile(boilerplate._RE_PHONE.pattern + "|x"))
    native._load.cache_clear()
    try:
        assert not in_use() and "_RE_PHONE" in native.describe()
    finally:
        monkeypatch.undo()
        native._load.cache_clear()


def test_environment_variable_turns_the_core_off(monkeypatch):
    monkeypatch.setenv(native.ENV, "0")
    native._load.cache_clear()
    try:
        assert not in_use() and Fingerprinter(JiebaFeaturizer())._core is None
    finally:
        monkeypatch.delenv(native.ENV)
        native._load.cache_clear()


def test_the_core_read_jiebas_idf_table_as_python_does():
    assert JIEBA.core.idf_table() == REFERENCE._idf


# -- every document of the shared corpora -------------------------------------------------


@pytest.mark.slow
@pytest.mark.reference  # conftest.py: in one process with the others of the reference
@pytest.mark.parametrize("name", ["xwlb_zh.jsonl.gz", "jargon_en.jsonl.gz"])
@pytest.mark.parametrize("featurizer", ["jieba", "shingles4"])
def test_every_shared_document(xwlb_path, name, featurizer):
    path = xwlb_path.parent / name
    texts, want = list(reference_texts(path)), reference_features(path, featurizer)
    differing = [i for i, text in enumerate(texts) if core_features(featurizer, text) != want[i]]
    assert differing == []
    # the core's batch against the reference's SimHash of the reference's features
    hashes, errors = both(featurizer, 0)[0].fingerprint_many(texts)
    hasher = Hasher(0)
    assert sorted(errors) == [i for i, features in enumerate(want) if not features]
    assert [int(h) for i, h in enumerate(hashes) if want[i]] == [hasher.simhash(f) for f in want if f]
    # the short-text rule's lengths (shorts.py), of every text: the reference's body is cheap
    assert_same_bodies(both(featurizer, 0)[0], list(shared_texts(path)), featurizer)
    # the core's margins (how sure each bit is: what a lookup's probes flip) of every 7th document
    for i in range(0, len(texts), 7):
        if want[i]:
            got = both(featurizer, 0)[0].margins(texts[i])
            assert got.dtype == np.int64 and np.array_equal(got, margins_of(hasher, want[i]))
            assert int("".join("1" if m > 0 else "0" for m in got), 2) == int(hashes[i])


def large_document(xwlb_path, jargon_path, size: int, seed: int) -> str:
    """About ``size`` bytes, seeded: news and glossary texts and runs of the hostile pieces below,
    glued by nothing, a space, a letter or line breaks (a letter between two words of an
    alphabet is where _join_letters joins across whatever boundary the core cuts the text at)."""
    rng = random.Random(seed)
    zh, en = shared_texts(xwlb_path), shared_texts(jargon_path)
    parts, total = [], 0
    while total < size:
        kind = rng.random()
        part = (rng.choice(zh) if kind < 0.5 else rng.choice(en) if kind < 0.7
                else "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40))))
        parts += [part, rng.choice(["", " ", "x", "a b", "\n", "\n\n", "中"])]
        total += len(part.encode("utf-8"))
    return "".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize(("size", "lines"), [(1_000_000, True), (300_000, False)])
def test_a_large_document_is_the_references(xwlb_path, jargon_path, size, lines):
    """A document of megabytes, with its line breaks or as one line (the core takes its tokens
    a few thousand at a time and NFKC a character at a time: a large text crosses many of those
    boundaries): the same features, in the same order, and the same fingerprint."""
    text = large_document(xwlb_path, jargon_path, size, seed=35)
    if not lines:
        text = " ".join(text.splitlines())
    assert unicodedata.normalize("NFKC", text) != text  # NFKC changes it: the slow path of normalize
    want = REFERENCE.features(text)
    assert len(want) > 10_000
    assert list(core_features("jieba", text).items()) == list(want.items())
    fast, slow = both("jieba", 7)
    assert fast.fingerprint(text) == slow.fingerprint(text) == Hasher(7).simhash(want)


PEAK_RSS = """import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"""


@pytest.mark.slow
def test_a_large_document_takes_a_few_times_its_size_of_memory(xwlb_path, tmp_path):
    """``fingerprint --file`` of one 10 MB document (the news corpus, repeated) peaks at less than
    8 bytes of memory per byte of text above the same command's peak for a short document (the
    core measured 3.8; before it took its tokens and terms as lists, 13)."""
    texts = "\n".join(shared_texts(xwlb_path))
    size = 10_000_000
    text = (texts * (size // len(texts.encode("utf-8")) + 1)).encode("utf-8")[:size].decode("utf-8", "ignore")
    peaks = {}
    for name, doc in (("short", "国家卫生健康委员会今天通报最新疫情"), ("large", text)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({"id": name, "text": doc}, ensure_ascii=False) + "\n", encoding="utf-8")
        out = subprocess.run([sys.executable, "-c", PEAK_RSS, sys.executable, "-m", "dedup_hbase", "fingerprint",
                              "--file", str(path), "--store", str(tmp_path / "none")],
                             capture_output=True, text=True, check=True)
        peaks[name] = int(out.stdout) * 1024
    assert peaks["large"] - peaks["short"] < 8 * size, peaks


# -- random hostile text --------------------------------------------------------------------

SCRIPTS = ["abc", "Zebra", "Привет", "Ωμέγα", "ΣΑΣ", "مرحبا", "שלום", "नमस्ते", "สวัสดี", "ひらがな", "カタカナ",
           "ｶﾀｶﾅ", "한국어", "\u1100\u1161\u11a8", "\u1100\u1161", "가\u11a8", "中华人民共和国", "国家", "通报",
           "生态环境", "卫生健康委", "长江", "t恤", "㐀", "鿕", "鿖", "鿿", "𠀀", "豈", "ß", "İstanbul", "ﬁ", "ﬀ",
           "Ⅻ", "½", "²", "①", "Ꭰ", "ꭰ", "µ", "ǅ", "Å", "e\u0301", "a\u0308\u0301", "e\u0301\u0327", "\u0327",
           "\u0301\u0301", "ᄀ", "ﾞ", "ｶﾞ", "の", "\u3099", "が", "c++", "c#", "3.5%", "1,234", "e.g.", "s-300",
           "x_y", "a&b", "的", "了", "我们", "the", "and", "iphone14pro", "8.1zb数据"]
WIDE = [chr(c) for c in range(0xFF01, 0xFF5F)] + ["\u3000", "￥", "￡", "｡", "､"]
MARKS = ["\u0300", "\u0301", "\u0308", "\u0327", "\u20dd", "\u1ab0", "\u302a", "\u0e31", "\u094d", "\u200d",
         "\ufe0f", "\u200b", "\ufeff", "\u00ad"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇨🇳", "❤️", "🔥", "©️", "™", "℃", "№", "㎏", "㍿"]
CONTROLS = ["\x00", "\x07", "\t", "\x0b", "\x0c", "\r", "\n", "\r\n", "\x1c", "\x1d", "\x1e", "\x1f", "\x7f",
            "\x85", "\xa0", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", " ", "  "]
PUNCT = list("，。！？；：、“”‘’（）【】《》…—·|｜»›•>-_/:.,!?;()[]@#%&*+=~^$'\"")
BOILERPLATE = ["阅读 1234", "阅读量：5万", "1.2w次播放", "12 views", "3 comments", "read 3 times", "2022-09-01 12:30",
               "2022年9月1日", "09/01/2022", "3小时前", "昨天", "5 days ago", "jan 5, 2023", "5 march 2023",
               "http://www.example.com/a?b=1", "https://x.cn", "www.news.cn", "foo.bar.com/x", "me@mail.com",
               "© 2023 版权所有", "(c) 2020", "all rights reserved", "trademarks", "trademark", "免责声明：",
               "未经授权禁止转载", "icp备12345号", "terms of use", "privacy policy", "首页 > 新闻 > 国内",
               "首页>新闻", "当前位置：", "you are here:", "| 关于我们 | 联系我们 |", "新闻 | 体育 | 财经 | 娱乐",
               "home / news / world", "a • b • c", "扫码关注公众号", "点击下载app", "app", "apps", "限时优惠",
               "400-123-4567", "13812345678", "010-12345678", "1-800-555-1234", "call 5", "来源：新华社",
               "记者 张三", "责任编辑：李四", "posted by admin", "source: x", "广告：", "【推广】", "related posts:",
               "share this:", "follow us", "subscribe", "% off", "立即购买!", "推荐阅读", "9折", "vx", "热线"]
# word characters for Python's re (str.isalnum or _) and not for Unicode's \w, or the reverse: \b and
# (?!\w) next to them are where a regex engine with Unicode's classes would differ
BOUNDARY = ["²", "½", "\u0301", "\u203f", "\u200d", "\u0e31", "Ⅻ", "_", "app", "apps", "trademark", "jan", "400"]
PIECES = SCRIPTS + WIDE + MARKS + EMOJI + CONTROLS + PUNCT + BOILERPLATE + BOUNDARY

piece = st.one_of(st.sampled_from(PIECES), st.characters(), st.text(max_size=3))
line = st.lists(piece, max_size=20).map("".join)
long_line = st.builds(lambda p, k: p * k, st.sampled_from(SCRIPTS + BOILERPLATE + PUNCT), st.integers(30, 300))
# a hard-wrapped paragraph: lines of about one width
wrapped = st.builds(lambda w, n, end: "\n".join(["新闻联播今天的主要内容有"[:w]] * n + [end]),
                    st.integers(2, 12), st.integers(2, 6), st.sampled_from(["完。", "end", "续", "a."]))
separator = st.sampled_from(["\n", "\n\n", "\r\n", "\r", "\n \n", "\n\t\n", "\x1c", "\x85", "\u2028", "\u2029",
                             "\x0b", "\x0c", " ", ""])
text = st.lists(st.tuples(st.one_of(line, line, line, st.sampled_from(BOILERPLATE), wrapped, long_line), separator),
                max_size=10).map(lambda parts: "".join(a + b for a, b in parts))

HYPOTHESIS = settings(max_examples=400, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_sketches_of_a_batch_are_each_texts_and_a_lone_surrogate_raises():
    """``units.text_sketches`` of a batch with copies, long texts and confirmation sketches is
    that of each text; its kept texts are the reference's bodies (the core's and the Python path's
    alike); a lone surrogate (refused by the core, then by the reference's UTF-8, as in the
    fingerprint) raises UnicodeEncodeError."""
    rnd = random.Random(5)
    texts = ["".join(rnd.choice("春眠不觉晓处处闻啼鸟 ab.") for _ in range(rnd.randrange(1, 260))) for _ in range(50)]
    others = [rnd.getrandbits(64) if i % 3 else None for i in range(len(texts))]
    texts, others = texts + texts[:20], others + others[:20]
    got = units.text_sketches(texts, others)
    each = [units.text_sketches([t], [o]) for t, o in zip(texts, others)]
    assert got == ([e[0][0] for e in each], [e[1][0] for e in each])
    sketches, kepts = got
    assert sketches[50:] == sketches[:20] and 10 < sum(s & shorts.SHORT_FLAG for s in sketches) < 70
    reference = shorts._core[:]
    try:
        shorts._core[:] = [None]  # shorts.py's Python path
        assert units.text_sketches(texts, others) == got
    finally:
        shorts._core[:] = reference
    assert all(k == (" ".join(boilerplate.body_text(normalize(t)).split()) if shorts.is_short(t) else "")
               for t, k in zip(texts, kepts))
    with pytest.raises(UnicodeEncodeError):
        units.text_sketches(["ab\ud800cd"])


@HYPOTHESIS
@given(text)
def test_random_text_normalises_the_same(text):
    assert core.normalize(text) == normalize(text)


@HYPOTHESIS
@given(text)
def test_random_text_has_the_same_body(text):
    text = normalize(text)
    assert core.body_text(text) == boilerplate.body_text(text)


# a line of about any length between markers: every length threshold of the rules (40, 50, 60, 80,
# 120, 150, 300 characters) is crossed with and without markers
sized_line = st.builds(lambda a, filler, k, b: a + filler * k + b, st.sampled_from(BOILERPLATE + [""]),
                       st.sampled_from(["新闻", "abc ", "中 ", "a", "国家通报。", " | ", "1"]), st.integers(0, 160),
                       st.sampled_from(BOILERPLATE + [""]))


@HYPOTHESIS
@given(st.one_of(line, sized_line, st.sampled_from(BOILERPLATE),
                 st.lists(st.sampled_from(BOILERPLATE + PUNCT + SCRIPTS + BOUNDARY + [" "]), max_size=12).map("".join)))
def test_random_lines_get_the_same_boilerplate_reason(line):
    line = boilerplate.logical_lines(normalize(line))
    for one in line:
        assert core.boilerplate_reason(one) == boilerplate.boilerplate_reason(one), one
        assert boilerplate.url_characters(one) == url_characters_of_the_line(one), one


def url_characters_of_the_line(line: str) -> int:
    """What url_characters counts run by run, from the whole line at once."""
    return sum(len(m.group(0)) for m in boilerplate._RE_URL.finditer(line))


@pytest.mark.parametrize("email", ["", " 投稿 me@mail.com"])
def test_a_long_line_of_cjk_text_gets_the_references_reason(xwlb_path, email):
    """A line of 20,000 characters of news with few spaces (a text without line breaks), with and
    without an e-mail address: the core's reason is the reference's, and the URL characters
    counted run by run are the whole line's."""
    texts = shared_texts(xwlb_path)[:200]
    line = normalize("".join(random.Random(4).sample(texts, 40)).replace("\n", ""))[:20_000] + email
    assert core.boilerplate_reason(line) == boilerplate.boilerplate_reason(line)
    assert boilerplate.url_characters(line) == url_characters_of_the_line(line) > 0


@HYPOTHESIS
@given(text)
def test_random_text_has_the_same_jieba_words(text):
    text = boilerplate.body_text(normalize(text))
    assert JIEBA.core.words(text) == REFERENCE.words(text)


@HYPOTHESIS
@given(text, st.sampled_from(["jieba", "shingles1", "shingles2", "shingles4", "shingles7"]))
def test_random_text_has_the_same_features(text, featurizer):
    assert core_features(featurizer, text) == reference_features_of(featurizer, text)


@HYPOTHESIS
@given(text, st.sampled_from(["jieba", "shingles2", "shingles4"]), st.sampled_from(SEEDS))
def test_random_text_has_the_same_margins(text, featurizer, seed):
    fast, slow = both(featurizer, seed)
    try:
        want = slow.margins(text)
    except EmptyDocument as e:
        with pytest.raises(EmptyDocument, match=re.escape(str(e))):
            fast.margins(text)
        return
    got = fast.margins(text)
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert int("".join("1" if m > 0 else "0" for m in got), 2) == fast.fingerprint(text)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text, min_size=1, max_size=8), st.sampled_from(SEEDS))
@pytest.mark.parametrize("featurizer", ["jieba", "shingles4", "shingles2"])
def test_random_batches_have_the_same_fingerprints(featurizer, texts, seed):
    assert_same_fingerprints(texts, featurizer, seed)


@pytest.mark.parametrize("line", ["下载 app\u0327", "下载 app\u203f", "下载 \u200dapp", "下载 app\u0e31", "12 views\u0327",
                                  "12 views\u203f", "阅读 12 次\u0327", "jan\u0327 5, 2023", "\u200djan 5, 2023",
                                  "call 400-123-4567\u0327", "\u200d13812345678 热线", "trademarks\u0327 ©",
                                  "foo.bar.com\u0327 下载", "foo.bar.com\u203f", "新闻_体育_财经", "首页->新闻",
                                  "a\u3000|\u3000b | c"])
def test_word_boundaries_are_pythons(line):
    r"""Python's \b and (?!\w) use str.isalnum (or _): a combining mark, U+203F and the
    zero-width joiner are not word characters there, and are in Unicode's \w."""
    line = normalize(line)
    assert core.boilerplate_reason(line) == boilerplate.boilerplate_reason(line)
    assert core.body_text(line) == boilerplate.body_text(line)


@pytest.mark.parametrize("n", [40, 41, 50, 51, 60, 61, 80, 81, 120, 121, 150, 151, 200, 300, 301])
@pytest.mark.parametrize("marker", ["", "版权所有 免责 ", "免责声明：", "阅读 12 ", "2022-09-01 来源：", "扫码关注 ",
                                    "新闻 | 体育 | ", "首页 > "])
@pytest.mark.parametrize("filler", ["新", "a", "a ", "1"])
def test_length_thresholds(n, marker, filler):
    """Lines right at and past every length threshold of the rules."""
    line = (marker + filler * n)[:n]
    assert core.boilerplate_reason(line) == boilerplate.boilerplate_reason(line), line


# -- every code point, and the edges --------------------------------------------------------


def test_every_code_point_normalises_the_same():
    differing = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
                 and core.normalize(chr(cp)) != normalize(chr(cp))]
    assert differing == []


def test_every_canonical_pair_composes_the_same():
    """A starter followed by each combining mark, twice in both orders: composition,
    blocking and canonical reordering."""
    marks = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000 and unicodedata.combining(chr(cp))]
    starters = "aeiouAEIOUcnsyzCNSYZ\u0391\u03b9\u0415\u0438\u05d0\u0627\u0915\u0b47\u0cc6\u0dd9\u1025\u3046\u30cf\u1100ᄀ가"
    texts = [s + m + n for s in starters for m in marks[::7] for n in (marks[::53] + ["\u0301", "\u0327", ""])]
    assert [core.normalize(t) for t in texts] == [normalize(t) for t in texts]


@pytest.mark.parametrize("text", ["", " ", " \t\n\u3000", "\x1c\x1d", "的 了 我们", "!!! ，。", "a", "中", "a b c",
                                  "\ud800", "中华人民共和国\udfff", "\udc80abc def", "\ud83d\ude00"])
@pytest.mark.parametrize("featurizer", ["jieba", "shingles4"])
def test_empty_featureless_and_surrogate_texts(text, featurizer):
    """Featureless text gets the reference's EmptyDocument message; a lone surrogate
    (which cannot enter the core) gets the reference's own answer."""
    fast, slow = both(featurizer, 0)
    got, want = fast.fingerprint_many([text, "国家通报长江生态环境"]), slow.fingerprint_many([text, "国家通报长江生态环境"])
    assert got[1] == want[1] and np.array_equal(got[0], want[0])
    outcome = []
    for f in (fast, slow):
        try:
            outcome.append(f.fingerprint(text))
        except ValueError as e:
            outcome.append(repr(e))
    assert outcome[0] == outcome[1]


def test_a_batch_refuses_what_is_not_a_str_as_the_reference_does():
    fast, slow = both("jieba", 0)
    for f in (fast, slow):
        with pytest.raises(TypeError, match="text must be a str, not bytes"):
            f.fingerprint_many(["ok text", b"bytes"])


def test_workers_give_the_same_results():
    texts = ["国家卫生健康委通报", "", "的", "hello world of near duplicates", "\udc80 text 文本"]
    fast, slow = both("jieba", 0)
    assert workers.fingerprint_texts(fast, texts) == workers.fingerprint_texts(slow, texts)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=70), st.sampled_from(SEEDS))
def test_mmh3(data, seed):
    assert core.hash64(data, seed) == mmh3.hash64(data, seed, signed=False)[0]


def test_the_batch_threads_give_the_same_answer():
    texts = [f"第{i}条新闻：国家卫生健康委通报长江生态环境" for i in range(200)] + ["", "的"]
    one = JIEBA.core.fingerprint_batch(texts, 7, 1)
    assert JIEBA.core.fingerprint_batch(texts, 7, 3) == one


@pytest.mark.parametrize("featurizer", ["jieba", "shingles4"])
@pytest.mark.parametrize("threads", [2, 3, 64])
def test_fingerprint_many_on_threads_is_the_reference(xwlb_path, featurizer, threads):
    """Fingerprinter.fingerprint_many(texts, threads): the reference's answers in input
    order, whatever the number of threads (more than the batch's chunks too); the texts
    without features and a lone surrogate (which the reference fingerprints) in between."""
    texts = list(shared_texts(xwlb_path)[:300])
    texts[7:7] = ["", "的 了", "中华人民共和国\udfff", " \t"]
    fast, slow = both(featurizer, 1)
    got, want = fast.fingerprint_many(texts, threads=threads), slow.fingerprint_many(texts)
    assert got[1] == want[1] and {7, 10} <= set(got[1])
    assert np.array_equal(got[0], want[0]) and got[0][9] != 0
    # the Python path takes the argument and stays on the calling thread
    python = slow.fingerprint_many(texts[:20], threads=threads)
    assert python[1] == want[1] and np.array_equal(python[0], want[0][:20])


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2", None])
def test_fingerprint_many_refuses_a_thread_count_that_is_not_a_positive_integer(threads):
    for f in both("jieba", 0):
        with pytest.raises(InvalidInput, match=f"threads must be a positive integer, not {threads!r}"):
            f.fingerprint_many(["国家通报"], threads=threads)


@pytest.mark.slow
def test_the_cores_own_tests_pass():
    """native/'s Rust tests: among them, that a batch given 3 threads works on 3 texts at
    once, and that every line boundary of str.splitlines starts with a byte the core's
    splitlines decodes."""
    native_dir = Path(__file__).resolve().parent.parent / "native"
    result = subprocess.run(["cargo", "test", "--quiet", "--no-default-features", "--lib"],
                            cwd=native_dir, capture_output=True, text=True,
                            env={**os.environ, "PYO3_PYTHON": sys.executable})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "test result: ok" in result.stdout
