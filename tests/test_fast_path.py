"""The rjieba fast path gives exactly the reference (jieba) features, document by document."""

import gzip
import json

import pytest

from dedup_hbase.features import JiebaFeaturizer, fast_path_safe, normalize
from dedup_hbase.fingerprint import Hasher

rjieba = pytest.importorskip("rjieba", reason="the fast path needs rjieba (pip install rjieba)")

FAST, REFERENCE = JiebaFeaturizer(fast=True), JiebaFeaturizer(fast=False)


def texts(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["xwlb_zh.jsonl.gz", "jargon_en.jsonl.gz"])
def test_same_fingerprint_for_every_shared_document(xwlb_path, name):
    documents = texts(xwlb_path.parent / name)
    hasher = Hasher()
    differing = []
    for i, text in enumerate(documents):
        fast, reference = FAST.features(text), REFERENCE.features(text)
        if fast != reference or (fast and hasher.simhash(fast) != hasher.simhash(reference)):
            differing.append(i)
    assert differing == []
    if name.startswith("xwlb"):  # the fast path really is taken for Chinese news
        assert sum(fast_path_safe(normalize(t)) for t in documents) > 0.9 * len(documents)


def test_documents_rjieba_splits_differently_take_the_reference_path():
    text = "俄军使用了s-300防空导弹系统，报道见e.g.网站"
    assert rjieba.Jieba().cut(normalize(text), True) != list(REFERENCE._tokenizer.cut(normalize(text)))
    assert not fast_path_safe(normalize(text))
    assert FAST.features(text) == REFERENCE.features(text)


@pytest.mark.parametrize("text,safe", [("国家卫生健康委通报最新疫情", True), ("增长3.5%，达到120亿元", True),
                                       ("hello world.", True), ("s-300导弹", False), ("8.1zb数据", False),
                                       ("well-known", False), ("ひらがな", False), ("Привет", False)])
def test_fast_path_rule(text, safe):
    assert fast_path_safe(normalize(text)) is safe
