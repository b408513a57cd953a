"""The rjieba fast path gives exactly the reference (jieba) features, document by document.

Without the HMM (the jieba featurizer's setting since version 2) rjieba cuts exactly as
jieba does, so every document takes the fast path when rjieba is installed.
"""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup_hbase.text.features import JiebaFeaturizer, normalize
from dedup_hbase.text.fingerprint import Hasher

from conftest import reference_features, reference_texts, require_or_skip, shared_corpus

try:
    import rjieba  # noqa: F401
except ImportError:
    require_or_skip("the fast path needs rjieba (pip install rjieba; the test extra has it)")

FAST, REFERENCE = JiebaFeaturizer(fast=True), JiebaFeaturizer(fast=False)


def test_fast_path_is_taken():
    assert FAST._fast_tokenizer is not None and REFERENCE._fast_tokenizer is None


@pytest.mark.slow
@pytest.mark.reference  # conftest.py: in one process with the others of the reference
@pytest.mark.parametrize("name", ["xwlb_zh.jsonl.gz", "jargon_en.jsonl.gz"])
def test_same_fingerprint_for_every_shared_document(name):
    path = shared_corpus(name)
    want = reference_features(path, "jieba")
    hasher = Hasher()
    differing = []
    for i, text in enumerate(reference_texts(path)):
        fast = FAST.features(text)
        if fast != want[i] or (fast and hasher.simhash(fast) != hasher.simhash(want[i])):
            differing.append(i)
    assert len(want) > 100 and differing == []


# The text jieba's HMM-on path and rjieba split differently (found with version 1);
# without the HMM they agree on all of it.
@pytest.mark.parametrize("text", ["俄军使用了s-300防空导弹系统，报道见e.g.网站", "增长3.5%，达到120亿元",
                                  "hello world. well-known 8.1zb数据 c++ c# a&b x_y", "ひらがな Привет 한국어",
                                  "2022年9月1日 12:30 iphone14pro\r\n𠀀鿿㐀 😀 t恤"])
def test_same_cut_as_jieba_on_text_that_differed_with_the_hmm(text):
    text = normalize(text)
    assert FAST.words(text) == REFERENCE.words(text)


ALPHABET = st.sampled_from(
    list("abcxyz0129+#&._%-@/:,'\"()!?  \n\t\r·—…，。") + ["\r\n", "ß", "é", "ひ", "가", "П", "㐀", "鿕", "鿖",
                                                           "𠀀", "😀", "\u0301", "c++", "t恤", "3.5%", "1,234",
                                                           "e.g.", "s-300", "长江", "生态环境", "国家", "通报",
                                                           "卫生", "健康委", "中华人民共和国", "的", "了"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(ALPHABET, max_size=30).map("".join))
def test_same_cut_as_jieba_on_random_text(text):
    text = normalize(text)
    assert FAST.words(text) == REFERENCE.words(text)


def test_a_lone_surrogate_takes_the_reference_cut():
    """rjieba takes UTF-8 only; a str with a lone surrogate is cut by jieba, as the reference."""
    text = "长江经济带\ud800生态环境保护 abc\udfff"
    assert FAST.features(text) == REFERENCE.features(text) != {}
