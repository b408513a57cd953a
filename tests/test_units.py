"""text/units.py: when two short texts are near (the same numbers; the words of one among the
other's), on pairs read by eye in docs/quality.md."""

from __future__ import annotations

import pytest

from dedup_hbase.text.units import misspelled, near, numbers, reason, stored, words

OTHER_ITEMS = [  # two items cut from one template: a word substituted, or a number
    ("李希在湖南调研", "李希在河南调研"),
    ("李强会见塞尔维亚总统", "李强会见塞尔维亚总理"),
    ("中央纪委国家监委公开通报七起违反中央八项规定精神典型问题", "中央纪委国家监委公开通报八起违反中央八项规定精神典型问题"),
    ("十四届全国人大三次会议第三场“代表通道”开启", "十四届全国人大一次会议第三场“代表通道”开启"),
    ("上半年我国海洋生产总值5.5万亿元", "上半年我国海洋生产总值5.1万亿元"),
    ("【第33届夏季奥林匹克运动会】中国体育代表团再夺3金", "【第33届夏季奥林匹克运动会】中国体育代表团再夺2金"),
    ("二十四节气·冬至", "二十四节气·小满"),
    ("春节里的中国", "春节近 年味浓"),
    ("The cat sat on the mat", "The cat sat on the hat"),
    ("A house for sale", "A horse for sale"),  # one edit, but under TYPO_WORDS words
    ("A hash table maps keys to values through a hash function", "A hash table maps keys to values through a hash fraction"),
    ("A hash table maps keys to values through a hash function", "A hash table mpas keys to values through a hash functoin"),
    ("A hash table maps keys to values through a hash function 2024", "A hash table maps keys to values through a hash function 2025"),
]

SAME_ITEMS = [  # copies of one item: words inserted or left out, moved, punctuation
    ("国家主席习近平发表二〇二四年新年贺词", "国家主席习近平将发表二〇二四年新年贺词"),
    ("中国造船业三大指标继续全球领跑", "中国造船业三大指标继续领跑全球"),
    ("李强会见老挝人民革命党中央总书记、国家主席通伦", "李强会见老挝人民革命党中央总书记、国家主席"),
    ("巴称以军袭击加沙地带多地致90人死亡", "巴称以军袭击加沙地带多地 致超90人死亡"),
    ("The cat sat on the mat.", "the cat sat on the  mat"),
    ("The cat sat on the mat", "The black cat sat on the mat"),
    ("A hash table maps keys to values through a hash function", "A hash table maps keys to values through a hash functoin"),
    ("A hash table maps keys to values through a hash function", "A hash table maps keys to vaules through a hash function quickly"),
]


@pytest.mark.parametrize(("a", "b"), OTHER_ITEMS)
def test_other_items_are_not_near(a, b):
    assert not near(stored(a), stored(b))
    assert not near(stored(b), stored(a))


@pytest.mark.parametrize(("a", "b"), SAME_ITEMS)
def test_copies_of_one_item_are_near(a, b):
    assert near(stored(a), stored(b))
    assert near(stored(b), stored(a))


def test_words_and_numbers():
    kept = stored("  Hello,   World 2024年 第三次会议 增长5.5%  ")
    assert kept == "hello, world 2024年 第三次会议 增长5.5%"
    assert words(kept) == {"hello", "world", "2024", "年", "第", "三", "次", "会", "议", "增", "长", "5"}
    assert numbers(kept) == ("2024", "5", "5", "三")  # sorted: a copy with its sentences moved keeps them
    assert near(stored("3日发布。增长5%。"), stored("增长5%。3日发布。")) and not near(stored("3日"), stored("5日"))
    assert near(kept, kept)


@pytest.mark.parametrize(("x", "y", "expected"), [
    ("merge", "merge", False), ("merge", "marge", True), ("merge", "merges", True), ("merge", "mege", True),
    ("merge", "mrege", True), ("merge", "megre", True), ("merge", "emrge", True), ("merge", "mgree", False),
    ("merge", "morgue", False), ("hat", "mat", False), ("hats", "mats", False), ("hats", "hat", False),
    ("12345", "12346", False), ("merge1", "merge2", False),
])
def test_misspelled(x, y, expected):
    assert misspelled(x, y) is expected and misspelled(y, x) is expected


def test_reason_names_the_misspelled_word():
    a, b = (stored(t) for t in ("A hash table maps keys to values through a hash function",
                                "A hash table maps keys to values through a hash functoin"))
    assert reason(a, b) == ("the same numbers, and the words of one among the other's but one misspelled: "
                            "function / functoin")
    assert reason(b, a).endswith("misspelled: functoin / function")
    c = stored("A hash table maps keys to values through a hash fraction")
    assert reason(a, c) == "words of each the other lacks: function against fraction"
