#!/usr/bin/env python3
"""Near-duplicate quality harness: does a fingerprint find the copies real copies make?

For a sample of real documents ("originals") it makes near-duplicate variants the ways
copies arise on the web, indexes the originals together with every other document of
the corpus ("distractors"), looks every variant up, and reports per kind of variant:

* recall: the variant finds its own original within k bits;
* false positives per lookup: matches that are clearly other documents, i.e. not the
  original and with a character 4-gram Jaccard below 0.3 with both the variant and its
  original (so natural near-duplicates in the corpus, such as recurring news briefs,
  are not counted as false).

Every fingerprint method runs on the same documents and variants in the same run:
dedup-hbase's featurizers as shipped (``jieba``; ``shingles`` of 4 and 3 characters), and
the ``simhash`` package (leonsim) with its default features and with jieba words. The
fingerprints come from dedup_hbase's public API (``make_fingerprinter``, ``Index``): it
measures what ships, no featurizer of its own. Two helpers of the package's modules serve
the report, not the measurement: ``features.normalize`` for the 4-gram Jaccard that tells a
false match from a natural near-duplicate, and ``boilerplate.boilerplate_reason`` /
``logical_lines`` for ``--show-boilerplate`` (what the rules drop). The ablations that chose
jieba version 2 ran in this harness's earlier revisions (up to commit 41904de);
docs/history/quality-ablation-2026-11-22.md keeps their results.

Lookups are brute force (numpy XOR + popcount over all indexed fingerprints), which
gives exactly the answers of dedup-hbase's index (proven exact in tests/); pass
``--verify-index`` to check that on the real ``Index`` for one method and k.

    python scripts/quality.py --data ../shared/data/xwlb_zh.jsonl.gz
    python scripts/quality.py --data ../shared/data/jargon_en.jsonl.gz --markdown /tmp/jargon.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import multiprocessing
import os
import platform
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dedup_hbase import Document, EmptyDocument, Index, make_fingerprinter, open_store
from dedup_hbase.text.boilerplate import boilerplate_reason, logical_lines
from dedup_hbase.text.features import normalize

FP_JACCARD = 0.3          # below this 4-gram Jaccard a match is "clearly another document"
FP_BUDGET = 0.005         # false positives per lookup allowed when picking the best k

# =====================================================================================
# 1. Variants: copies made the ways copies arise.
#    The strings below are only used to MAKE copies. The candidate featurizers (section
#    2) never see them: they drop boilerplate by general rules about lines.
# =====================================================================================

ZH_SITES = [("新浪新闻", "news.sina.com.cn"), ("网易新闻", "news.163.com"), ("搜狐新闻", "www.sohu.com"),
            ("腾讯新闻", "new.qq.com"), ("凤凰网资讯", "news.ifeng.com"), ("澎湃新闻", "www.thepaper.cn"),
            ("环球网", "world.huanqiu.com"), ("中华网", "news.china.com"), ("东方资讯", "mini.eastday.com"),
            ("北青网", "news.ynet.com"), ("华夏快报", "www.huaxiakb.cn"), ("今日速览", "m.jrsl.com")]
EN_SITES = [("The Hacker Archive", "hackerarchive.org"), ("WordNerd", "wordnerd.io"),
            ("Daily Tech Digest", "dailytechdigest.com"), ("Lexicon Mirror", "lexmirror.net"),
            ("GeekSpeak Wiki", "geekspeak.wiki"), ("Old Net Lore", "oldnetlore.com")]
ZH_SECTIONS = ["首页", "新闻", "国内", "国际", "社会", "财经", "科技", "体育", "娱乐", "军事", "汽车", "房产",
               "教育", "健康", "时政", "评论", "视频", "图片", "专题", "滚动", "要闻", "地方", "文化", "旅游"]
EN_SECTIONS = ["Home", "News", "World", "Tech", "Business", "Science", "Culture", "Opinion", "Video",
               "Archive", "About", "Contact", "Glossary", "Random entry", "Search", "Login", "Forums"]
ZH_NAMES = ["王晓明", "李静", "张伟", "刘洋", "陈晨", "杨帆", "赵敏", "黄磊", "周婷", "吴昊"]
EN_NAMES = ["John Smith", "Alice Chen", "M. Rivera", "Priya Nair", "Tom Becker", "Sara Holm"]
ZH_BRANDS = ["优品汇", "极速云", "乐享", "好学堂", "安心保", "金诚理财", "鲜丰果园", "智行出行", "悦动健身"]
ZH_PRODUCTS = ["智能手表", "云服务器", "少儿英语课", "家庭保险", "理财课程", "有机水果礼盒", "网约车券", "健身年卡"]
ZH_SLOGANS = ["品质生活从这里开始", "让每一天更轻松", "专业的事交给专业的人", "省心省力更省钱", "你值得拥有",
              "好品质看得见", "新年焕新季"]
ZH_TOPICS = ["财经", "科技", "健康", "教育", "职场", "理财", "汽车"]
EN_BRANDS = ["CloudNest", "ByteForge", "Quikr VPN", "LinguaPro", "HostHero", "CodeCamp+", "Nimbus Mail"]
EN_PRODUCTS = ["cloud hosting", "VPN", "language course", "password manager", "coding bootcamp", "email plan"]
EN_SLOGANS = ["Built for builders", "Privacy made simple", "Learn faster, code better",
              "Your data, your rules", "Ship it today", "Fast. Secure. Everywhere."]
EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
             "October", "November", "December"]


def _num(rnd: random.Random, lo: int = 10, hi: int = 99999) -> str:
    n = int(math.exp(rnd.uniform(math.log(lo + 1), math.log(hi + 1)))) - 1
    style = rnd.random()
    if style < 0.2 and n >= 1000:
        return f"{n:,}"
    if style < 0.35 and n >= 10000:
        return f"{n / 10000:.1f}万"
    return str(n)


def _date(rnd: random.Random, lang: str) -> str:
    y, mo, d, h, mi = rnd.randint(2019, 2026), rnd.randint(1, 12), rnd.randint(1, 28), rnd.randint(0, 23), rnd.randint(0, 59)
    if lang == "zh":
        return rnd.choice([f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}", f"{y}年{mo}月{d}日 {h:02d}:{mi:02d}",
                           f"{y}/{mo:02d}/{d:02d}", f"{y}年{mo:02d}月{d:02d}日", f"{rnd.randint(1, 23)}小时前",
                           f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{rnd.randint(0, 59):02d}", f"昨天 {h:02d}:{mi:02d}"])
    return rnd.choice([f"{EN_MONTHS[mo - 1]} {d}, {y}", f"{y}-{mo:02d}-{d:02d}", f"{mo:02d}/{d:02d}/{y}",
                       f"{d} {EN_MONTHS[mo - 1][:3]} {y} {h:02d}:{mi:02d}", f"{rnd.randint(1, 23)} hours ago",
                       f"{EN_MONTHS[mo - 1][:3]} {d}, {y} at {h % 12 + 1}:{mi:02d} {'AM' if h < 12 else 'PM'}"])


def nav_line(rnd, lang):
    if lang == "zh" and rnd.random() < 0.5:
        crumbs = ["首页"] + rnd.sample(ZH_SECTIONS[1:], rnd.randint(1, 3)) + rnd.choice([["正文"], []])
        return rnd.choice(["当前位置：", "您的位置: ", "位置：", ""]) + rnd.choice([" > ", " >> ", " » ", "-"]).join(crumbs)
    if lang == "en" and rnd.random() < 0.4:
        crumbs = ["Home"] + rnd.sample(EN_SECTIONS[1:], rnd.randint(1, 3))
        return rnd.choice(["You are here: ", ""]) + rnd.choice([" > ", " › ", " / ", " » "]).join(crumbs)
    items = rnd.sample(ZH_SECTIONS if lang == "zh" else EN_SECTIONS, rnd.randint(4, 9))
    return rnd.choice([" | ", " ", "  ", " · ", "｜", " / "] if lang == "zh" else [" | ", " · ", " / ", "  "]).join(items)


def meta_line(rnd, lang, site):
    name = rnd.choice(ZH_NAMES if lang == "zh" else EN_NAMES)
    if lang == "zh":
        parts = [rnd.choice(["", "发布时间：", "时间：", "发布于 "]) + _date(rnd, lang),
                 rnd.choice(["来源：", "来源: ", "文章来源："]) + site if rnd.random() < 0.7 else "",
                 rnd.choice(["作者：", "记者 ", "编辑："]) + name if rnd.random() < 0.4 else "",
                 rnd.choice(["阅读 ", "浏览：", "阅读量："]) + _num(rnd) if rnd.random() < 0.5 else ""]
    else:
        parts = [rnd.choice(["", "Posted ", "Published ", "Updated "]) + _date(rnd, lang),
                 rnd.choice(["By ", "by ", "Author: "]) + name if rnd.random() < 0.6 else "",
                 _num(rnd) + rnd.choice([" views", " reads"]) if rnd.random() < 0.5 else ""]
    rnd.shuffle(parts)
    return rnd.choice(["  ", " ", " | ", " · "]).join(p for p in parts if p)


def counter_line(rnd, lang):
    if lang == "zh":
        pool = [lambda: "阅读 " + _num(rnd), lambda: "评论 " + _num(rnd, 1, 999), lambda: f"点赞({_num(rnd, 1, 9999)})",
                lambda: _num(rnd) + "人已读", lambda: "浏览量：" + _num(rnd) + "次", lambda: f"评论({_num(rnd, 0, 500)})",
                lambda: "收藏 " + _num(rnd, 1, 999), lambda: "转发 " + _num(rnd, 1, 999), lambda: "👍 " + _num(rnd, 1, 9999),
                lambda: _num(rnd, 1, 999) + "条评论"]
    else:
        pool = [lambda: _num(rnd) + " views", lambda: _num(rnd, 1, 999) + " comments", lambda: _num(rnd, 1, 9999) + " likes",
                lambda: f"Shares: {_num(rnd, 1, 999)}", lambda: f"Comments ({_num(rnd, 0, 300)})",
                lambda: f"Read {_num(rnd)} times", lambda: f"{rnd.randint(1, 9)}.{rnd.randint(0, 9)}k upvotes"]
    parts = [f() for f in rnd.sample(pool, rnd.randint(1, 4))]
    return rnd.choice(["  ", " ", " | ", " · ", "    "]).join(parts)


def copyright_lines(rnd, lang, site, domain):
    y2 = rnd.randint(2020, 2026)
    y1 = rnd.randint(1996, y2 - 1)
    if lang == "zh":
        pool = [f"Copyright © {y1}-{y2} {site} 版权所有",
                f"{site}版权所有，未经书面授权禁止转载、摘编或以其他方式使用",
                f"Copyright © {y1}-{y2} {domain} All Rights Reserved.",
                f"©{y2} {site}  京ICP证{rnd.randint(100000, 999999)}号  京公网安备 {rnd.randint(10**13, 10**14 - 1)}号",
                f"免责声明：本文转载自{rnd.choice(ZH_SITES)[0]}，仅代表作者个人观点，与本站无关。如有侵权，请联系我们删除。",
                "声明：本站所载文章仅供参考，不构成任何投资建议，据此操作风险自担。",
                f"违法和不良信息举报电话：{rnd.randint(100, 999)}-{rnd.randint(1000000, 9999999)}  举报邮箱：jubao@{domain}",
                f"本文为{site}原创内容，转载请注明出处。"]
    else:
        pool = [f"Copyright © {y1}–{y2} {site}. All rights reserved.",
                f"© {y2} {site} · Terms · Privacy · Cookie settings",
                f"Disclaimer: content is provided as is, without warranty of any kind. {site} is not responsible for errors.",
                f"This page mirrors public-domain text. (c) {y2} {domain}",
                "All trademarks are the property of their respective owners."]
    return rnd.sample(pool, rnd.randint(1, 2))


def editor_line(rnd, lang):
    name = rnd.choice(ZH_NAMES if lang == "zh" else EN_NAMES)
    if lang == "zh":
        return rnd.choice([f"责任编辑：{name}", f"（编辑：{name}）", f"[责任编辑:{name}]", f"编辑 {name} 审核 {rnd.choice(ZH_NAMES)}"])
    return rnd.choice([f"Edited by {name}", f"Editor: {name}", f"Last edited by {name}"])


def share_line(rnd, lang):
    if lang == "zh":
        return rnd.choice(["分享到：", "分享：", ""]) + " ".join(rnd.sample(["微信", "微博", "QQ空间", "QQ好友", "朋友圈", "抖音", "复制链接"], rnd.randint(3, 5)))
    return rnd.choice(["Share: ", "Share this: ", ""]) + " | ".join(rnd.sample(["Facebook", "Twitter", "Reddit", "LinkedIn", "Email", "Copy link"], rnd.randint(3, 5)))


def ad_line(rnd, lang):
    if lang == "zh":
        brand, product, slogan, topic = (rnd.choice(ZH_BRANDS), rnd.choice(ZH_PRODUCTS), rnd.choice(ZH_SLOGANS), rnd.choice(ZH_TOPICS))
        pool = [f"【广告】{brand}{product}限时特惠，全场{rnd.randint(3, 8)}折起，立即抢购>>",
                f"扫描下方二维码，关注“{brand}{topic}”公众号，每天获取最新{topic}资讯",
                f"下载{brand}APP，新用户注册即送{rnd.choice([18, 50, 88, 188, 888])}元红包！",
                f"{brand}——{slogan}。咨询热线：400-{rnd.randint(100, 999)}-{rnd.randint(1000, 9999)}",
                f"点击这里，免费领取{topic}学习资料包",
                f"推荐阅读 | 每天{rnd.randint(5, 30)}分钟，轻松学会{topic}",
                f"{brand}{product}，{slogan}！现在购买立减{rnd.randint(10, 500)}元",
                f"加微信 {rnd.choice('abcdefghjk')}{rnd.randint(10000, 99999)}，领取{product}体验名额"]
    else:
        brand, product, slogan = rnd.choice(EN_BRANDS), rnd.choice(EN_PRODUCTS), rnd.choice(EN_SLOGANS)
        pool = [f"Advertisement: {brand} {product}, {rnd.randint(10, 70)}% off this week only. Shop now at {brand.lower().replace(' ', '')}.com",
                f"Sponsored: try {brand} free for {rnd.choice([7, 14, 30])} days. No credit card required.",
                "Subscribe to our newsletter and never miss an entry!",
                f"Download the {brand} app: https://{brand.lower().replace(' ', '').replace('+', 'plus')}.app/get",
                f"{brand}. {slogan}. Call 1-800-{rnd.randint(100, 999)}-{rnd.randint(1000, 9999)}",
                f"Click here to claim your free {product} trial!",
                f"Looking for {product}? {brand} — {slogan}."]
    return rnd.choice(pool)


def paragraphs(text: str) -> tuple[list[str], str]:
    """Paragraphs and the separator that joins them (blank lines if any, else newlines)."""
    sep = "\n\n" if "\n\n" in text else "\n"
    return [p for p in text.split(sep) if p.strip()], sep


_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=[.](?=\s))")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


class Copier:
    """Makes near-duplicate variants of one corpus's documents, seeded."""

    def __init__(self, lang: str, edit_chars: str):
        self.lang = lang
        self.edit_chars = edit_chars      # characters typical of the corpus, for typos

    def site(self, rnd):
        return rnd.choice(ZH_SITES if self.lang == "zh" else EN_SITES)

    def wrap_lang(self, rnd):
        """Boilerplate language: mostly the document's, sometimes the other one."""
        return self.lang if rnd.random() < 0.85 else ("en" if self.lang == "zh" else "zh")

    # -- kinds ---------------------------------------------------------------------

    def mirror(self, rnd, text, title=None):
        lang = self.wrap_lang(rnd)
        site, domain = self.site(rnd) if lang == self.lang else rnd.choice(ZH_SITES if lang == "zh" else EN_SITES)
        head, foot = [], []
        if rnd.random() < 0.5:
            head.append(rnd.choice([f"{site} - {domain}", f"{site}", f"{site}_{rnd.choice(['手机版', '官方网站', '新闻中心'])}"]
                                   if lang == "zh" else [site, f"{site} | {domain}"]))
        head.append(nav_line(rnd, lang))
        if rnd.random() < 0.5:
            head.append(nav_line(rnd, lang))
        if title and rnd.random() < 0.5:
            head.append(title)
        if rnd.random() < 0.6:
            head.append(meta_line(rnd, lang, site))
        if rnd.random() < 0.5:
            foot.append(editor_line(rnd, lang))
        if rnd.random() < 0.4:
            foot.append(share_line(rnd, lang))
        foot.extend(copyright_lines(rnd, lang, site, domain))
        if rnd.random() < 0.3:
            foot.append(nav_line(rnd, lang))
        sep = "\n\n" if "\n\n" in text else "\n"
        return sep.join(head + [text] + foot)

    def ads(self, rnd, text, title=None):
        paras, sep = paragraphs(text)
        for _ in range(rnd.randint(1, 3)):
            paras.insert(rnd.randint(0, len(paras)), ad_line(rnd, self.wrap_lang(rnd)))
        return sep.join(paras)

    def counters(self, rnd, text, title=None):
        lang = self.lang
        sep = "\n\n" if "\n\n" in text else "\n"
        head = [meta_line(rnd, lang, self.site(rnd)[0])] if rnd.random() < 0.7 else [_date(rnd, lang)]
        foot = [counter_line(rnd, lang)] if rnd.random() < 0.8 else []
        if rnd.random() < 0.3:
            head.append(counter_line(rnd, lang))
        return sep.join(head + [text] + foot)

    def edit(self, rnd, text, share):
        chars = list(text)
        positions = [i for i, c in enumerate(chars) if c.isalnum()]
        if not positions:
            return text
        n = max(1, round(share * len(text)))
        for i in sorted(rnd.sample(positions, min(n, len(positions))), reverse=True):
            op = rnd.random()
            if op < 0.6:      # substitute
                chars[i] = rnd.choice(self.edit_chars)
            elif op < 0.8:    # delete
                del chars[i]
            else:             # insert
                chars.insert(i, rnd.choice(self.edit_chars))
        return "".join(chars)

    def edit1(self, rnd, text, title=None):
        return self.edit(rnd, text, 0.01)

    def edit3(self, rnd, text, title=None):
        return self.edit(rnd, text, 0.03)

    def reorder(self, rnd, text, title=None):
        paras, sep = paragraphs(text)
        if len(paras) >= 3:
            head, rest = paras[0], paras[1:]        # a lead stays on top; the body is shuffled
            for _ in range(10):
                shuffled = rest[:]
                rnd.shuffle(shuffled)
                if shuffled != rest:
                    break
            return sep.join([head] + shuffled)
        if len(paras) == 2:
            return sep.join(paras[::-1])
        parts = sentences(text)
        if len(parts) >= 2:
            cut = rnd.randint(1, len(parts) - 1)
            return "".join(parts[cut:] + parts[:cut])
        return text

    def droplast(self, rnd, text, title=None):
        paras, sep = paragraphs(text)
        if len(paras) >= 3:
            return sep.join(paras[:-1])
        parts = sentences(text)
        if len(parts) >= 2:
            return "".join(parts[:-1])
        return text[: max(1, int(len(text) * 0.8))]

    def reformat(self, rnd, text, title=None):
        """Same words, other typography: full/half-width forms, quotes, spaces, line wrapping."""
        out = text
        if self.lang == "zh":
            if rnd.random() < 0.5:   # punctuation to ASCII (a plain-text mirror)
                out = out.translate(str.maketrans({"，": ",", "：": ":", "（": "(", "）": ")", "；": ";", "！": "!", "？": "?"}))
            if rnd.random() < 0.5:   # full-width digits and letters (a GBK-era page)
                out = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and c.isalnum() else c for c in out)
            out = out.replace("“", rnd.choice(["「", '"'])).replace("”", rnd.choice(["」", '"']))
            if rnd.random() < 0.5:   # spaces between CJK and ASCII
                out = re.sub(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9０-９])|(?<=[A-Za-z0-9０-９])(?=[\u4e00-\u9fff])", " ", out)
            width = rnd.randint(24, 48)
            paras, sep = paragraphs(out)
            if rnd.random() < 0.6:   # hard-wrapped lines
                paras = ["\n".join(p[i:i + width] for i in range(0, len(p), width)) for p in paras]
                sep = "\n\n"
            return sep.join(paras)
        out = out.replace("\u00a0", " ")
        if rnd.random() < 0.5:
            out = out.replace("“", '"').replace("”", '"').replace("‘", "'").replace("’", "'")
        else:
            out = re.sub(r'"([^"\n]*)"', "“\\1”", out)
        if rnd.random() < 0.5:
            out = re.sub(r"\. (?=[A-Z])", ".  ", out)
        paras, sep = paragraphs(out)
        width = rnd.randint(50, 90)
        paras = [_wrap(" ".join(p.split()), width) if rnd.random() < 0.8 else " ".join(p.split()) for p in paras]
        return "\n\n".join(paras)

    def combo_web(self, rnd, text, title=None):
        """A scraped repost: typo-level edits, ads, counters, a mirror frame."""
        return self.mirror(rnd, self.counters(rnd, self.ads(rnd, self.edit1(rnd, text))), title)

    def combo_text(self, rnd, text, title=None):
        """A reworked copy: reordered, last paragraph dropped, retyped."""
        return self.reformat(rnd, self.droplast(rnd, self.reorder(rnd, text)))


def _wrap(text: str, width: int) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


KINDS = ["mirror", "ads", "counters", "edit1", "edit3", "reorder", "droplast", "reformat", "combo_web", "combo_text"]
KIND_DOC = {
    "mirror": "site frame: site name, 1-2 nav bars/breadcrumbs, maybe the title and a source/time/author line on top; "
              "maybe editor and share lines, 1-2 copyright/ICP/disclaimer lines (and a nav bar) below; 15% in the other language",
    "ads": "1-3 ad or call-to-action lines inserted between paragraphs (slogans, coupons, QR codes, hotlines, URLs)",
    "counters": "a time-stamp/source/author/views line on top and/or a counters line (views, comments, likes) below, random values",
    "edit1": "1% of the characters edited (60% substituted, 20% deleted, 20% inserted; characters drawn from the corpus)",
    "edit3": "3% of the characters edited, as edit1",
    "reorder": "paragraphs after the first shuffled (2 paragraphs: swapped; 1 paragraph: sentences rotated)",
    "droplast": "last paragraph dropped (fewer than 3 paragraphs: last sentence)",
    "reformat": "same words, other typography: ASCII vs full-width punctuation/digits, quotes, spaces around Latin, hard line wrapping",
    "combo_web": "edit1 + ads + counters + mirror",
    "combo_text": "reorder + droplast + reformat",
}


# =====================================================================================
# 2. The methods: dedup-hbase as shipped, and the `simhash` package as the peer
# =====================================================================================

METHOD_DOC = {
    "dedup-hbase:jieba": "dedup-hbase as shipped: `make_fingerprinter()`, jieba version 2 (body without boilerplate "
                         "lines, jieba words with HMM off, 2+ characters, numbers kept, words of an alphabet as "
                         "character 4-grams, stop words and punctuation dropped, (1 + ln count) x IDF, unknown words "
                         "= median IDF)",
    "dedup-hbase:shingles4": "dedup-hbase as shipped: `make_fingerprinter(\"shingles\", shingle_size=4)` (character "
                             "4-grams of letters and digits, weight = count)",
    "dedup-hbase:shingles3": "the same with `shingle_size=3`",
    "simhash-pkg:default": "`simhash.Simhash(text)`: its default features (lower-cased `[\\w\\u4e00-\\u9fcc]+` "
                           "characters joined, 4-character windows, md5)",
    "simhash-pkg:jieba-words": "`simhash.Simhash([w for w in tokenizer.cut(text) if w.strip()])`: every jieba token of "
                               "the raw text, punctuation included, as it is commonly done; each occurrence weight 1",
}
ALL_METHODS = list(METHOD_DOC)


# =====================================================================================
# 3. Fingerprinting in worker processes
# =====================================================================================

_WORKER: dict = {}


def _worker_init(methods: list[str]) -> None:
    import jieba
    from simhash import Simhash

    jieba.setLogLevel(30)
    tokenizer = jieba.Tokenizer()
    fns = {
        "dedup-hbase:jieba": make_fingerprinter("jieba").fingerprint,
        "dedup-hbase:shingles4": make_fingerprinter("shingles", shingle_size=4).fingerprint,
        "dedup-hbase:shingles3": make_fingerprinter("shingles", shingle_size=3).fingerprint,
        "simhash-pkg:default": lambda text: Simhash(text).value,
        "simhash-pkg:jieba-words": lambda text: Simhash([w for w in tokenizer.cut(text) if w.strip()]).value,
    }
    unknown = [m for m in methods if m not in fns]
    if unknown:
        raise SystemExit(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(ALL_METHODS)}")
    _WORKER["fns"] = [fns[m] for m in methods]


def _fingerprint_chunk(texts: list[str]) -> list[list[int]]:
    out = []
    for text in texts:
        row = []
        for fn in _WORKER["fns"]:
            try:
                value = fn(text)
            except (EmptyDocument, ValueError, ZeroDivisionError):
                value = -1
            row.append(value if value is not None and value >= 0 else -1)
        out.append(row)
    return out


def fingerprint_all(texts: list[str], methods: list[str], jobs: int) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints uint64 [len(texts), len(methods)], valid bool [same])."""
    chunk = 64
    chunks = [texts[i:i + chunk] for i in range(0, len(texts), chunk)]
    rows: list[list[int]] = []
    t0 = time.time()
    if jobs <= 1:
        _worker_init(methods)
        results = map(_fingerprint_chunk, chunks)
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs, _worker_init, (methods,))
        results = pool.imap(_fingerprint_chunk, chunks)
    for i, part in enumerate(results):
        rows.extend(part)
        if sys.stderr.isatty() and i % 20 == 0:
            print(f"\r  fingerprinted {len(rows):,}/{len(texts):,} in {time.time() - t0:.0f} s", end="", file=sys.stderr)
    if jobs > 1:
        pool.close()
        pool.join()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    raw = np.array(rows, dtype=object).reshape(len(texts), len(methods))
    valid = raw != -1
    fps = np.where(valid, raw, 0).astype(np.uint64)
    return fps, valid


# =====================================================================================
# 4. Evaluation
# =====================================================================================

def shingle_set(text: str) -> frozenset:
    """Character 4-grams of the letters and digits of the normalised text (for Jaccard)."""
    chars = "".join(ch for ch in normalize(text) if ch.isalnum())
    return frozenset(chars[i:i + 4] for i in range(max(1, len(chars) - 3)))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


@dataclass
class Result:
    method: str
    kmax: int
    kcut: int = 0        # false positives are known up to this k
    # per kind: lookups, found[k], fp[k], dup[k] (k = 0..kmax; fp/dup None beyond kcut)
    lookups: dict = field(default_factory=dict)
    found: dict = field(default_factory=dict)
    fp: dict = field(default_factory=dict)
    dup: dict = field(default_factory=dict)
    empty: int = 0
    pairs: tuple = ()
    is_fp: object = None

    def recall(self, kind, k):
        return self.found[kind][k] / self.lookups[kind] if self.lookups[kind] else float("nan")

    def fp_rate(self, kind, k):
        if k > self.kcut:
            return float("inf")
        return self.fp[kind][k] / self.lookups[kind] if self.lookups[kind] else float("nan")

    def overall(self, k):
        kinds = list(self.lookups)
        recall = sum(self.recall(x, k) for x in kinds) / len(kinds)
        if k > self.kcut:
            return recall, float("inf")
        return recall, sum(self.fp[x][k] for x in kinds) / sum(self.lookups.values())

    def best_k(self, kmin=3, kmax=None):
        """The k in kmin..kmax with the highest overall recall at <= FP_BUDGET false positives per lookup."""
        top = self.kmax if kmax is None else min(kmax, self.kmax)
        ok = [k for k in range(kmin, top + 1) if self.overall(k)[1] <= FP_BUDGET]
        return max(ok, key=lambda k: (self.overall(k)[0], -k)) if ok else None


def evaluate(methods, doc_fps, doc_valid, var_fps, var_valid, variants, doc_texts, kmax, cap=2.0, chunk=256):
    """Brute-force lookups of every variant in every method's fingerprints.

    Matches other than the original are classified (Jaccard) up to the largest k at which
    a method has at most ``cap`` of them per lookup; beyond that its false positives are
    reported as unknown (they are above ``cap`` per lookup anyway)."""
    all_pairs = {}     # method -> (vi, di, dist) arrays of non-original matches within kcut
    kcut = {}
    own = {}           # method -> distance of every variant to its own original (99 if either empty)
    origin = np.array([v["orig"] for v in variants])
    for j, m in enumerate(methods):
        docs = doc_fps[:, j]
        bad_docs = ~doc_valid[:, j]
        q_all = var_fps[:, j]
        dist_own = np.bitwise_count(q_all ^ docs[origin]).astype(np.int16)
        dist_own[~var_valid[:, j] | bad_docs[origin]] = 99
        own[m] = dist_own
        vis, dis, ds = [], [], []
        for s in range(0, len(variants), chunk):
            q = q_all[s:s + chunk]
            d = np.bitwise_count(q[:, None] ^ docs[None, :])
            d[:, bad_docs] = 99
            d[~var_valid[s:s + chunk, j], :] = 99
            d[np.arange(len(q)), origin[s:s + chunk]] = 99          # own original handled above
            vi, di = np.nonzero(d <= kmax)
            vis.append(vi + s)
            dis.append(di)
            ds.append(d[vi, di])
        vi, di, ds = np.concatenate(vis), np.concatenate(dis), np.concatenate(ds)
        per_k = np.bincount(ds, minlength=kmax + 1).cumsum()
        ok = [k for k in range(kmax + 1) if per_k[k] <= cap * len(variants)]
        kcut[m] = max(ok) if ok else -1
        keep = ds <= kcut[m]
        all_pairs[m] = (vi[keep], di[keep], ds[keep])

    # Jaccard of every (variant, other doc) pair any method matched, once.
    needed = set()
    for vi, di, _ in all_pairs.values():
        needed.update(zip(vi.tolist(), di.tolist()))
    var_sets, doc_sets = {}, {}

    def doc_set(i):
        if i not in doc_sets:
            doc_sets[i] = shingle_set(doc_texts[i])
        return doc_sets[i]

    sim = {}
    for vi, di in needed:
        if vi not in var_sets:
            var_sets[vi] = shingle_set(variants[vi]["text"])
        sim[vi, di] = max(jaccard(var_sets[vi], doc_set(di)), jaccard(doc_set(variants[vi]["orig"]), doc_set(di)))

    kinds = list(dict.fromkeys(v["kind"] for v in variants))
    kind_of = np.array([kinds.index(v["kind"]) for v in variants])
    results = {}
    for j, m in enumerate(methods):
        r = Result(m, kmax, kcut=kcut[m])
        r.empty = int((~var_valid[:, j]).sum())
        vi, di, ds = all_pairs[m]
        r.pairs = (vi, di, ds)
        is_fp = np.array([sim[a, b] < FP_JACCARD for a, b in zip(vi.tolist(), di.tolist())], dtype=bool)
        r.is_fp = is_fp
        for x, kind in enumerate(kinds):
            sel = kind_of == x
            r.lookups[kind] = int(sel.sum())
            r.found[kind] = [int((own[m][sel] <= k).sum()) for k in range(kmax + 1)]
            in_kind = kind_of[vi] == x if len(vi) else np.zeros(0, bool)
            r.fp[kind] = [int((in_kind & is_fp & (ds <= k)).sum()) if k <= kcut[m] else None for k in range(kmax + 1)]
            r.dup[kind] = [int((in_kind & ~is_fp & (ds <= k)).sum()) if k <= kcut[m] else None for k in range(kmax + 1)]
        results[m] = r
    return results, sim


def background(methods, doc_fps, doc_valid, doc_texts, kmax, cap=1.0, chunk=1024):
    """Corpus-wide false-match rate, independent of the variants: for every pair of indexed
    documents within k bits, is it clearly two different documents (4-gram Jaccard < 0.3)?
    Returns {method: [unrelated documents within k per document, k = 0..kmax] (None where
    a method has more than ``cap`` matching pairs per document)}."""
    n = len(doc_texts)
    sets = {}

    def doc_set(i):
        if i not in sets:
            sets[i] = shingle_set(doc_texts[i])
        return sets[i]

    sim = {}
    out = {}
    for j, m in enumerate(methods):
        docs = doc_fps[:, j]
        bad = ~doc_valid[:, j]
        pi, pj, pd = [], [], []
        for s in range(0, n, chunk):
            d = np.bitwise_count(docs[s:s + chunk, None] ^ docs[None, :])
            d[:, bad] = 99
            d[bad[s:s + chunk], :] = 99
            a, b = np.nonzero(d <= kmax)
            keep = b > a + s
            pi.append(a[keep] + s)
            pj.append(b[keep])
            pd.append(d[a[keep], b[keep]])
        pi, pj, pd = np.concatenate(pi), np.concatenate(pj), np.concatenate(pd)
        per_k = np.bincount(pd, minlength=kmax + 1).cumsum()
        ok = [k for k in range(kmax + 1) if per_k[k] <= cap * n]
        kcut = max(ok) if ok else -1
        sel = pd <= kcut
        unrelated = np.zeros(kmax + 1, int)
        for a, b, d in zip(pi[sel].tolist(), pj[sel].tolist(), pd[sel].tolist()):
            if (a, b) not in sim:
                sim[a, b] = jaccard(doc_set(a), doc_set(b))
            if sim[a, b] < FP_JACCARD:
                unrelated[d:] += 1
        out[m] = [2 * unrelated[k] / n if k <= kcut else None for k in range(kmax + 1)]
    return out


def verify_index(method_index, doc_fps, doc_valid, var_fps, var_valid, k, sample, seed):
    """Check brute force against dedup-hbase's real Index (memory store) for one method."""
    ix = Index.create(open_store("memory:"), None, k)  # the scheme `init --k` would choose
    scheme = ix.scheme.name
    docs = doc_fps[:, method_index]
    ix.add_many([Document(str(i), int(docs[i])) for i in range(len(docs)) if doc_valid[i, method_index]])
    rnd = random.Random(seed)
    picks = [i for i in range(len(var_fps)) if var_valid[i, method_index]]
    picks = rnd.sample(picks, min(sample, len(picks)))
    answers = ix.query_many([int(var_fps[i, method_index]) for i in picks], k)
    valid_docs = np.nonzero(doc_valid[:, method_index])[0]
    for i, got in zip(picks, answers):
        d = np.bitwise_count(docs[valid_docs] ^ var_fps[i, method_index])
        want = sorted(str(x) for x in valid_docs[d <= k])
        if sorted(m.id for m in got) != want:
            raise SystemExit(f"index and brute force disagree on variant {i}: {sorted(m.id for m in got)} vs {want}")
    return scheme, len(picks)


# =====================================================================================
# 5. Reporting
# =====================================================================================

def fmt_pair(r: Result, kind, k):
    if kind == "overall":
        rec, fp = r.overall(k)
    else:
        rec, fp = r.recall(kind, k), r.fp_rate(kind, k)
    if fp == float("inf"):
        return f"{rec:.3f} / **>2**"
    return f"{rec:.3f} / {fp:.4f}" if fp < 0.1 else f"{rec:.3f} / **{fp:.3f}**"


def markdown(results: dict[str, Result], kinds, main_methods, ks_show, bg=None, best_kmax=8) -> str:
    out = []
    # summary: method x k
    out.append("Overall (mean recall over kinds / false positives per lookup), by k; "
               f"best k = the k in 3..{best_kmax} with the highest recall at <= {FP_BUDGET} FP/lookup:\n")
    ks = list(range(ks_show[0], ks_show[1] + 1))
    out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " | best k |")
    out.append("|---|" + "---|" * (len(ks) + 1))
    for m, r in results.items():
        bk = r.best_k(kmax=best_kmax)
        out.append(f"| {m} | " + " | ".join(fmt_pair(r, 'overall', k) for k in ks) + f" | {bk if bk is not None else '-'} |")
    out.append("")
    if bg:
        out.append("Background: clearly different indexed documents (4-gram Jaccard < 0.3) within k bits of an indexed "
                   "document, per document, over all pairs of the index (a steadier estimate of the false-positive rate "
                   "than the lookups, which rest on the sampled originals):\n")
        out.append("| method | " + " | ".join(f"k={k}" for k in ks) + " |")
        out.append("|---|" + "---|" * len(ks))
        for m, rates in bg.items():
            out.append(f"| {m} | " + " | ".join("**>1**" if rates[k] is None else f"{rates[k]:.4f}" for k in ks) + " |")
        out.append("")
    # per kind at k = 3, then at each method's best k
    out.append("Per kind at k = 3, recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(main_methods) + " |")
    out.append("|---|" + "---|" * len(main_methods))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, 3) for m in main_methods) + " |")
    out.append("")
    cols = [(m, results[m].best_k(kmax=best_kmax)) for m in main_methods]
    cols = [(m, k) for m, k in cols if k is not None]
    out.append(f"Per kind at each method's best k (<= {best_kmax}), recall / false positives per lookup:\n")
    out.append("| kind | " + " | ".join(f"{m} k={k}" for m, k in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for kind in kinds + ["overall"]:
        label = "**overall**" if kind == "overall" else kind
        out.append(f"| {label} | " + " | ".join(fmt_pair(results[m], kind, k) for m, k in cols) + " |")
    out.append("")
    return "\n".join(out)


def detect_lang(texts: list[str]) -> str:
    sample = "".join(texts[:500])
    cjk = len(re.findall("[\u3400-\u9fff\uf900-\ufaff]", sample))
    return "zh" if cjk > 0.2 * len(sample) else "en"


def read_corpus(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="JSONL(.gz) with id and text (title optional)")
    parser.add_argument("--originals", type=int, default=1000, help="documents sampled as originals")
    parser.add_argument("--distractors", default="all", help="other documents indexed with them: a number or 'all'")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"variant kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--methods", default="all", help=f"comma-separated methods (default all: {', '.join(ALL_METHODS)})")
    parser.add_argument("--kmax", type=int, default=10, help="largest k evaluated and shown (k = 0..kmax)")
    parser.add_argument("--best-kmax", type=int, default=8,
                        help="largest k considered for a method's best k (schemes beyond 8 cost 66+ index rows per document)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--json", help="write every count to this JSON file")
    parser.add_argument("--verify-index", metavar="METHOD:K",
                        help="check brute force against dedup-hbase's Index for one method at one k "
                             "(e.g. dedup-hbase:jieba:8)")
    parser.add_argument("--no-background", action="store_true", help="skip the all-pairs background false-match rate")
    parser.add_argument("--dump-fp", metavar="METHOD:K", help="print the false positives of one method at one k")
    parser.add_argument("--show-boilerplate", action="store_true",
                        help="print what the boilerplate rules drop from the originals and the variants")
    args = parser.parse_args()
    t_start = time.time()

    methods = ALL_METHODS if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            parser.error(f"unknown kind {k!r}")

    rows = read_corpus(args.data)
    texts_all = [r["text"] for r in rows]
    lang = detect_lang(texts_all)
    rnd = random.Random(args.seed)
    order = list(range(len(rows)))
    rnd.shuffle(order)
    n_orig = min(args.originals, len(rows))
    orig_rows = order[:n_orig]
    others = order[n_orig:]
    if args.distractors != "all":
        others = others[: int(args.distractors)]
    doc_rows = sorted(orig_rows + others)
    pos = {row: i for i, row in enumerate(doc_rows)}
    doc_texts = [texts_all[r] for r in doc_rows]

    # typo characters: drawn from the corpus's own letters
    char_counts = Counter(ch for t in rnd.sample(texts_all, min(2000, len(texts_all))) for ch in t if ch.isalpha())
    edit_chars = "".join(ch * max(1, c // 50) for ch, c in char_counts.most_common(3000))
    copier = Copier(lang, edit_chars)
    variants = []
    for kind in kinds:
        krnd = random.Random(f"{args.seed}:{kind}")
        for row in orig_rows:
            text = getattr(copier, kind)(krnd, texts_all[row], rows[row].get("title"))
            variants.append({"kind": kind, "orig": pos[row], "text": text, "id": rows[row]["id"]})
    print(f"{args.data}: {len(rows):,} documents ({lang}); indexed {len(doc_texts):,} = {n_orig:,} originals + "
          f"{len(others):,} distractors; {len(variants):,} lookups ({len(kinds)} kinds x {n_orig}); "
          f"{len(methods)} methods; {args.jobs} jobs", file=sys.stderr)

    if args.show_boilerplate:
        show_boilerplate(doc_texts, variants)

    t0 = time.time()
    doc_fps, doc_valid = fingerprint_all(doc_texts, methods, args.jobs)
    var_fps, var_valid = fingerprint_all([v["text"] for v in variants], methods, args.jobs)
    t_fp = time.time() - t0
    print(f"  fingerprints in {t_fp:.0f} s", file=sys.stderr)

    t0 = time.time()
    results, sim = evaluate(methods, doc_fps, doc_valid, var_fps, var_valid, variants, doc_texts, args.kmax)
    print(f"  lookups + Jaccard of {len(sim):,} matched pairs in {time.time() - t0:.0f} s", file=sys.stderr)
    if args.dump_fp:
        name, _, k = args.dump_fp.rpartition(":")
        dump_fp(results[name], int(k), variants, doc_texts, [rows[r].get("title") for r in doc_rows], sim)

    bg = None
    if not args.no_background:
        t0 = time.time()
        bg = background(methods, doc_fps, doc_valid, doc_texts, args.kmax)
        print(f"  background pairs in {time.time() - t0:.0f} s", file=sys.stderr)

    if args.verify_index:
        name, _, k = args.verify_index.rpartition(":")
        scheme, n = verify_index(methods.index(name), doc_fps, doc_valid, var_fps, var_valid, int(k), 500, args.seed)
        print(f"  --verify-index: dedup-hbase Index ({scheme}, k={k}) = brute force on {n} lookups", file=sys.stderr)

    main_methods = methods
    total = time.time() - t_start
    header = (f"Data {args.data}: {len(doc_texts):,} documents indexed ({n_orig:,} originals + {len(others):,} "
              f"distractors), {len(variants):,} lookups ({len(kinds)} kinds x {n_orig:,}), seed {args.seed}; "
              f"Python {platform.python_version()}, {args.jobs} jobs on {os.cpu_count()} cores, {total:.0f} s in all "
              f"({t_fp:.0f} s fingerprinting).\n")
    empties = {m: r.empty for m, r in results.items() if r.empty}
    if empties:
        header += f"\nLookups with no features (count as misses): {empties}\n"
    text = header + "\n" + markdown(results, kinds, main_methods, (3, args.kmax), bg, args.best_kmax)
    text += "\nMethods:\n\n" + "\n".join(f"* `{m}`: {METHOD_DOC.get(m, '')}" for m in methods) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, "utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "data": args.data, "seed": args.seed, "originals": n_orig, "distractors": len(others),
            "kinds": kinds, "seconds": total,
            "methods": {m: {"lookups": r.lookups, "found": r.found, "fp": r.fp, "near_dup": r.dup, "empty": r.empty,
                            "best_k": r.best_k(kmax=args.best_kmax), "background": bg and bg[m]} for m, r in results.items()}},
                      indent=1), "utf-8")


def dump_fp(r: Result, k, variants, doc_texts, titles, sim):
    vi, di, ds = r.pairs
    sel = np.nonzero(r.is_fp & (ds <= k))[0] if len(ds) else []
    print(f"{r.method}: {len(sel)} false positives at k <= {k}", file=sys.stderr)
    for i in sel[:40]:
        v = variants[vi[i]]
        o, d = v["orig"], di[i]
        print(f"  [{v['kind']}] d={ds[i]} J={sim[vi[i], d]:.2f} len {len(doc_texts[o])}/{len(doc_texts[d])}\n"
              f"     orig : {titles[o]} | {doc_texts[o][:70]!r}\n     match: {titles[d]} | {doc_texts[d][:70]!r}", file=sys.stderr)


def show_boilerplate(doc_texts, variants):
    reasons, dropped_lines, lines, dropped_chars, chars = Counter(), Counter(), 0, 0, 0
    examples = defaultdict(list)
    for t in doc_texts:
        for line in logical_lines(normalize(t)):
            lines += 1
            chars += len(line)
            why = boilerplate_reason(line)
            if why:
                reasons[why] += 1
                dropped_chars += len(line)
                if len(examples[why]) < 8:
                    examples[why].append(line[:100])
    print(f"originals+distractors: {sum(reasons.values()):,} of {lines:,} lines dropped "
          f"({dropped_chars / max(chars, 1):.2%} of characters): {dict(reasons)}", file=sys.stderr)
    for why, ex in examples.items():
        for e in ex:
            print(f"    [{why}] {e}", file=sys.stderr)
    kept = Counter()
    for v in variants:
        if v["kind"] not in ("mirror", "ads", "counters"):
            continue
        orig_lines = set(logical_lines(normalize(doc_texts[v["orig"]])))
        for line in logical_lines(normalize(v["text"])):
            if line not in orig_lines:
                dropped_lines[boilerplate_reason(line) or "KEPT"] += 1
                if boilerplate_reason(line) is None and kept[v["kind"]] < 15:
                    kept[v["kind"]] += 1
                    print(f"    kept ({v['kind']}): {line[:100]}", file=sys.stderr)
    print(f"added lines in mirror/ads/counters variants: {dict(dropped_lines)}", file=sys.stderr)


if __name__ == "__main__":
    main()
