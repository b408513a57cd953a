import os
import subprocess
import sys

import mmh3
import pytest

from dedup_hbase.errors import EmptyDocument
from dedup_hbase.features import JiebaFeaturizer, ShingleFeaturizer, make_featurizer, normalize
from dedup_hbase.fingerprint import Fingerprinter, Hasher, hamming, parse_hex, to_hex


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
    for bad in ("123", "0123456789abcdeg", "", "0123456789abcdef0"):
        with pytest.raises(ValueError, match="16 hex digits"):
            parse_hex(bad)
    assert hamming(0b1011, 0b0001) == 2


def test_normalize_nfkc_casefold():
    assert normalize("ＡＢＣ１２３ Straße") == "abc123 strasse"


def test_jieba_features_drop_punctuation_and_stop_words():
    featurizer = JiebaFeaturizer()
    features = featurizer.features("长江的生态环境，长江！")
    idf, median = featurizer._idf
    assert features == {"长江": 2 * idf["长江"], "生态环境": idf["生态环境"]}
    assert featurizer.features("zzqxj")["zzqxj"] == median  # unknown word: median IDF


def test_shingles():
    assert ShingleFeaturizer(3).features("Ab-cd ab") == {"abc": 1, "bcd": 1, "cda": 1, "dab": 1}
    assert ShingleFeaturizer(4).features("ab") == {"ab": 1}
    with pytest.raises(ValueError, match="shingle size"):
        ShingleFeaturizer(0)
    with pytest.raises(ValueError, match="unknown featurizer 'x'"):
        make_featurizer("x")


@pytest.mark.parametrize("text,reason", [("", "empty text"), ("  \n", "empty text"),
                                         ("，。！的了", "no features")])
def test_featureless_text_is_rejected(text, reason):
    with pytest.raises(EmptyDocument, match=reason):
        Fingerprinter(JiebaFeaturizer()).fingerprint(text)


def test_own_tokenizer_and_no_logging_setup():
    import logging

    import jieba

    Fingerprinter(JiebaFeaturizer()).fingerprint("国家卫生健康委通报最新疫情")
    assert not jieba.dt.initialized, "jieba's global tokenizer must stay unused"
    assert logging.getLogger("jieba").handlers == []


SCRIPT = ("from dedup_hbase.features import make_featurizer;"
          "from dedup_hbase.fingerprint import Fingerprinter, to_hex;"
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
