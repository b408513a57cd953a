"""Near-copies of documents made the ways copies arise on the web, seeded: the variants that
``tune`` (tune.py) looks up and that ``scripts/quality.py`` measures methods with.

``KINDS`` names each way (``KIND_DOC`` says what it does): a site's frame around the text
(``mirror``), ad lines between paragraphs (``ads``), time-stamp and counter lines
(``counters``), 1% and 3% of the characters edited (``edit1``, ``edit3``), paragraphs
reordered (``reorder``), the last paragraph dropped (``droplast``), the same words retyped
(``reformat``), and two combinations. ``Copier(lang, edit_chars)`` makes them: every method
takes a ``random.Random`` and the text, so a seed gives the same copies. The strings below
only make copies; the featurizers never see them (they drop boilerplate by general rules
about lines, text/boilerplate.py).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter

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


def detect_lang(texts: list[str]) -> str:
    sample = "".join(texts[:500])
    cjk = len(re.findall("[\u3400-\u9fff\uf900-\ufaff]", sample))
    return "zh" if cjk > 0.2 * len(sample) else "en"


def edit_characters(texts: list[str], rnd: random.Random) -> str:
    """Characters for typos, drawn from the texts' own letters (up to 2,000 texts sampled),
    each repeated in proportion to how often it occurs."""
    counts = Counter(ch for t in rnd.sample(texts, min(2000, len(texts))) for ch in t if ch.isalpha())
    return "".join(ch * max(1, c // 50) for ch, c in counts.most_common(3000)) or "abcdefghijklmnopqrstuvwxyz"


def copier_for(texts: list[str], rnd: random.Random) -> Copier:
    """A Copier for a corpus: its language (``detect_lang``) and its typo characters."""
    return Copier(detect_lang(texts), edit_characters(texts, rnd))
