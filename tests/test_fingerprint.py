import os
import subprocess
import sys

import mmh3
import pytest

from dedup_hbase.errors import EmptyDocument
from dedup_hbase.text.features import JiebaFeaturizer, ShingleFeaturizer, make_featurizer, normalize
from dedup_hbase.text.fingerprint import Fingerprinter, Hasher, hamming, parse_hex, to_hex


def reference_simhash(weighted, seed=0):
    """Bit by bit, straight from the definition."""
    out = 0
    for bit in range(64):
        on = sum(w for f, w in weighted.items() if mmh3.hash64(f.encode(), seed, signed=False)[0] >> bit & 1)
        off = sum(weighted.values()) - on
        out |= (on > off) << bit
    return out


def test_single_feature_fingerprint_is_its_hash():
    h = mmh3.hash64("长江".encode(), 0, signed=False)[0]
    assert Hasher().simhash({"长江": 5}) == h


def test_heavier_feature_wins_and_seed_matters():
    a, b = (mmh3.hash64(x.encode(), 7, signed=False)[0] for x in ("a", "b"))
    assert Hasher(7).simhash({"a": 3, "b": 1}) == a
    assert Hasher(7).simhash({"a": 1, "b": 3}) == b
    # a tie is not "outweigh": bits where a and b differ are 0
    assert Hasher(7).simhash({"a": 2, "b": 2}) == a & b


@pytest.mark.parametrize("weighted", [
    {"x": 1, "y": 1, "z": 1}, {"长江": 13900, "经济": 5200, "发展": 3100, "生态": 8000},
    {f"w{i}": i * 37 % 101 + 1 for i in range(300)},
])
def test_vectorised_simhash_equals_reference(weighted):
    assert Hasher().simhash(weighted) == reference_simhash(weighted)


def test_hex_round_trip_and_errors():
    assert to_hex(0xABC) == "0000000000000abc"
    assert parse_hex("0x0123456789ABCDEF") == 0x0123456789ABCDEF
    for bad in ("123", "0123456789abcdeg", "", "0123456789abcdef0",
                "0123_456789abcde", "+123456789abcdef", "-123456789abcdef", "٠١٢٣٤٥٦٧٨٩abcdef",
                "0123456789abcde\n", "0123456789ABCDEF\x00", "0x0x23456789abcdef"):  # int(.., 16) takes some
        with pytest.raises(ValueError, match="16 hex digits"):
            parse_hex(bad)
    assert parse_hex(" 0123456789abcdef\n") == 0x0123456789ABCDEF  # surrounding space is not part of it
    assert hamming(0b1011, 0b0001) == 2


def test_hex_parsing_takes_exactly_sixteen_ascii_hex_digits_on_random_strings():
    """20,000 seeded strings of 14-18 characters drawn from hex digits, their capitals, and
    characters int() or lower() treat specially: parsed exactly when, stripped, lower-cased and
    without a leading 0x, they are 16 of 0-9a-f, else refused."""
    import random

    rnd = random.Random(44)
    alphabet = "0123456789abcdefABCDEF" * 4 + "_+- x\u0660\u0130\uff10g\n"
    for _ in range(20_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(14, 18)))
        digits = text.strip().lower().removeprefix("0x")
        if len(digits) == 16 and all(c in "0123456789abcdef" for c in digits):
            assert parse_hex(text) == int(digits, 16)
        else:
            with pytest.raises(ValueError, match="16 hex digits"):
                parse_hex(text)


def test_normalize_nfkc_casefold():
    assert normalize("ＡＢＣ１２３ Straße") == "abc123 strasse"


def test_jieba_features_drop_punctuation_stop_words_and_single_characters():
    featurizer = JiebaFeaturizer()
    features = featurizer.features("长江的生态环境，长江！")
    idf, median = featurizer._idf
    # weight (1000 + round(1000 ln count)) x IDF // 1000: 长江 twice, 的 a stop word (and one character)
    assert features == {"长江": 1693 * idf["长江"] // 1000, "生态环境": idf["生态环境"]}
    assert featurizer.features("长江 2035 年")["2035"] == median  # numbers are words; unknown: median IDF


def test_jieba_words_of_an_alphabet_become_character_4_grams():
    featurizer = JiebaFeaturizer()
    _, median = featurizer._idf
    assert featurizer.features("hackers") == dict.fromkeys(
        ["  hac", " hack", " acke", " cker", " kers", " ers "], median // 4)
    # jieba cuts Cyrillic, kana and hangul into letters: they are glued back into words
    assert set(featurizer.features("Привет мир")) == {"  при", " прив", " риве", " ивет", " вет ", "  мир", " мир "}
    assert featurizer.features("한국어 텍스트") and featurizer.features("ひらがなカタカナ")
    # a typo changes a few of a word's terms, not all of them
    a, b = featurizer.features("near duplicate detection"), featurizer.features("near duplicaet detection")
    assert len(a.keys() & b.keys()) >= 0.6 * len(a)


def test_jieba_features_ignore_boilerplate_lines():
    featurizer = JiebaFeaturizer()
    body = "长江经济带生态环境保护发生了转折性变化。\n沿江省市共抓大保护、不搞大开发。"
    copy = ("首页 > 新闻 > 国内 > 正文\n2024-05-01 10:32  来源：某某网  阅读 12,345\n" + body
            + "\n责任编辑：张伟\nCopyright © 2010-2024 某某网 版权所有\n阅读 3.4万  评论 120  点赞(56)")
    assert featurizer.features(copy) == featurizer.features(body)
    # a hard-wrapped copy has the same body
    wrapped = "\n".join(body[i:i + 12] for i in range(0, len(body), 12))
    assert featurizer.features(wrapped) == featurizer.features(body)


def test_an_index_of_another_featurizer_version_is_refused_with_why():
    from dedup_hbase.errors import FeaturizerVersionMismatch
    from dedup_hbase.text.features import featurizer_from_spec

    assert featurizer_from_spec({"name": "jieba", "version": 2, "params": {}}).spec["version"] == 2
    with pytest.raises(FeaturizerVersionMismatch, match=r"^the index was built with featurizer jieba version 1, "
                                                        r"this dedup-hbase has version 2: fingerprints from different "
                                                        r"featurizer versions are not comparable$"):
        featurizer_from_spec({"name": "jieba", "version": 1, "params": {"hmm": True}})


def test_shingles():
    assert ShingleFeaturizer(3).features("Ab-cd ab") == {"abc": 1, "bcd": 1, "cda": 1, "dab": 1}
    assert ShingleFeaturizer(4).features("ab") == {"ab": 1}
    with pytest.raises(ValueError, match="shingle size"):
        ShingleFeaturizer(0)
    with pytest.raises(ValueError, match="unknown featurizer 'x'"):
        make_featurizer("x")


@pytest.mark.parametrize("text,reason", [("", "empty text"), ("  \n", "empty text"),
                                         ("，。！的了", "no features"), ("猫", "no features")])
def test_featureless_text_is_rejected(text, reason):
    with pytest.raises(EmptyDocument, match=reason):
        Fingerprinter(JiebaFeaturizer()).fingerprint(text)


def test_own_tokenizer_and_no_logging_setup():
    import logging

    import jieba

    Fingerprinter(JiebaFeaturizer()).fingerprint("国家卫生健康委通报最新疫情")
    assert not jieba.dt.initialized, "jieba's global tokenizer must stay unused"
    assert logging.getLogger("jieba").handlers == []


SCRIPT = ("from dedup_hbase.text.features import make_featurizer;"
          "from dedup_hbase.text.fingerprint import Fingerprinter, to_hex;"
          "print(to_hex(Fingerprinter(make_featurizer('jieba')).fingerprint('党的二十大召开在即，广大干部群众倍感振奋。')),"
          " to_hex(Fingerprinter(make_featurizer('shingles')).fingerprint('Near-duplicate detection at scale')))")


def test_deterministic_across_processes():
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert len(outputs) == 1
    here = Fingerprinter(make_featurizer("jieba")).fingerprint("党的二十大召开在即，广大干部群众倍感振奋。")
    assert outputs.pop().split()[0] == to_hex(here)
