"""text/units.py: when two short texts are near (the same numbers; the words of one among the
other's), on pairs read by eye in docs/quality.md."""

from __future__ import annotations

import pytest

from dedup_hbase.text.units import near, numbers, stored, words

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
]

SAME_ITEMS = [  # copies of one item: words inserted or left out, moved, punctuation
    ("国家主席习近平发表二〇二四年新年贺词", "国家主席习近平将发表二〇二四年新年贺词"),
    ("中国造船业三大指标继续全球领跑", "中国造船业三大指标继续领跑全球"),
    ("李强会见老挝人民革命党中央总书记、国家主席通伦", "李强会见老挝人民革命党中央总书记、国家主席"),
    ("巴称以军袭击加沙地带多地致90人死亡", "巴称以军袭击加沙地带多地 致超90人死亡"),
    ("The cat sat on the mat.", "the cat sat on the  mat"),
    ("The cat sat on the mat", "The black cat sat on the mat"),
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
