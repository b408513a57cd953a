"""Boilerplate: the lines a copy of a text gains on the way through the web.

Mirrors, scrapers and aggregators wrap a text in site navigation, time stamps, view
counters, by-lines, ads and copyright lines, which change from copy to copy and would
move the fingerprint. ``body_text`` drops such lines by general rules about a single
line (its length, its share of digits, separators between short items, URLs, and a few
general marker words such as ©, 版权所有, 免责声明, ICP备, "views", "subscribe"), never
by any site's own strings. It also joins hard-wrapped paragraphs, so a re-wrapped copy
has the same body. Input is normalised text (``features.normalize``).

On the shared corpora the rules drop about 0.1% (Chinese news) and 0.3% (English
glossary) of the characters of the real texts; docs/quality.md lists the rules and what
they catch.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_CJK = r"\u3400-\u9fff\uf900-\ufaff"
_RE_CJK = re.compile(f"[{_CJK}]")
_RE_LEGAL = re.compile(
    r"©|\(c\)\s*\d{4}|copyright|all rights reserved|rights reserved|trademarks?\b|版权所有|版权归|版权声明|"
    r"^(免责|特别|版权)?声明[:：]|免责|disclaimer|"
    r"未经[^，。,]{0,6}(授权|许可)|(禁止|谢绝|请勿)[^，。,]{0,4}转载|转载请|如有侵权|侵权[^，。,]{0,4}删除|"
    r"icp[备证]|公网安备|备案号|举报(电话|邮箱|中心)|"
    r"terms of (use|service)|privacy (policy|notice)|cookie (settings|policy|preferences)")
_URL_FORMS = r"https?://\S+|www\.\S+|\b[\w.-]+\.(com|cn|net|org|io|app|wiki|info|gov|edu)(/\S*)?\b"
_RE_URL = re.compile(_URL_FORMS + r"|\S+@\S+\.\w+")
# _RE_URL without its e-mail form, for a run of non-space characters without "@", where that form
# cannot match (the same matches): that form alone takes time quadratic in the run's length (\S+
# from every start), and CJK text has few spaces (see url_characters)
_RE_URL_NO_AT = re.compile(_URL_FORMS)
_RE_NON_SPACE = re.compile(r"\S+")
_RE_DATE = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}|\d{1,2}[-/]\d{1,2}[-/]\d{4}|\d{1,2}:\d{2}|"
    r"\d+\s*(秒|分钟|小时|天|周|个月)前|昨天|前天|\d+\s*(seconds?|minutes?|hours?|days?|weeks?)\s+ago|"
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}|"
    r"\b\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{4}")
_COUNT_WORDS = (r"阅读|浏览|点击|评论|回复|点赞|赞|收藏|分享|转发|播放|人已读|人看过|views?|reads?|comments?|"
                r"replies|likes?|upvotes?|shares?|votes?|clicks?|plays?|followers?")
_RE_COUNTER = re.compile(
    rf"(\d[\d,.]*\s*[万千kmw]?\s*(人|条|次)?\s*({_COUNT_WORDS})(?!\w))|"
    rf"(({_COUNT_WORDS})量?\s*[:：(（]?\s*\d)|read \d[\d,.]* times")
_RE_META_KEY = re.compile(
    r"((^|\s|[(（\[【])(来源|出处|作者|编辑|责任编辑|记者|通讯员|审核|校对|发布时间|发布日期|更新时间|时间|日期|"
    r"source|author|editor|posted|published|updated)\s*[:：])|"
    r"发布于|(^|\s)(posted|published|updated|(edited|written) by)\s")
_RE_CTA = re.compile(
    r"扫码|扫描|二维码|公众号|关注我们|关注|订阅|点击|下载|\bapp\b|注册|领取|抢购|购买|优惠|特惠|折扣|\d折|红包|"
    r"立减|立即|限时|热线|客服|微信|vx|广告|推广|赞助|推荐阅读|相关阅读|延伸阅读|"
    r"subscribe|newsletter|sign up|click|download|advert|sponsor|promo|coupon|discount|% off|free trial|"
    r"shop now|buy now|call \d|order now|learn more|share( this)?\s*:|follow us")
_RE_PHONE = re.compile(r"\b(400|800)[- ]?\d{3}[- ]?\d{4}\b|1-800-\d{3}-\d{4}|\b1[3-9]\d{9}\b|\d{3,4}-\d{7,8}")
_RE_BREADCRUMB = re.compile(r"(当前位置|您的位置|你的位置|所在位置|位置|you are here|breadcrumbs?)\s*[:：]|"
                            r"(首页|主页|home)\s*(>+|»|›|/|-|→)")
_RE_PROMO_LABEL = re.compile(
    r"[(（\[【]?(广告|推广|赞助|推荐阅读|相关阅读|延伸阅读|相关新闻|相关推荐|热门推荐|猜你喜欢|sponsored|advertisement|"
    r"promoted|ad|related( articles| posts| stories)?|read more|recommended( for you)?|you may also like)"
    r"\s*[)）\]】]?\s*[:：|｜]")
# separators of menu items: unambiguous ones anywhere; '/', '·', '>', '-', dashes only between
# spaces (or, for '>', '-', '_', between CJK characters), so paths, names (夏巴兹·谢里夫),
# arrows and identifiers are not taken for menus
_RE_SEP = re.compile(rf"\s*(\|+|｜|»|›|•|\s[/·>»\-—–]+\s|(?<=[{_CJK}])[>\-_](?=[{_CJK}]))\s*|\s{{2,}}")
_SENT_END = re.compile(r"[。！？!?；;]|\.(\s|$)")


def url_characters(line: str) -> int:
    """The characters of ``line`` in matches of _RE_URL (``finditer``), counted run by run of
    non-space characters: every form matches inside one run, and a ``\\b`` at a run's ends sees
    a space or the string's end alike, so the matches are the line's. A run without "@" is
    matched without the e-mail form (the same matches), the form whose time is quadratic in a
    run's length; a run with "@" still takes that time. A line without "@" is matched whole."""
    if "@" not in line:
        return sum(len(m.group(0)) for m in _RE_URL_NO_AT.finditer(line))
    total = 0
    for run in _RE_NON_SPACE.finditer(line):
        text = run.group(0)
        total += sum(len(m.group(0)) for m in (_RE_URL if "@" in text else _RE_URL_NO_AT).finditer(text))
    return total


def boilerplate_reason(line: str) -> str | None:
    """Why a (normalised, stripped) line looks like site boilerplate rather than text, or
    None. Rules about the line only: its length, digits, separators, URLs and a few
    general marker words (copyright, counters, calls to action)."""
    n = len(line)
    if n == 0:
        return "empty"
    alnum = sum(map(str.isalnum, line))
    if alnum == 0:
        return "symbols"
    digits = sum(map(str.isdigit, line))
    cjk = n - len(_RE_CJK.sub("", line))
    short = n <= (60 if cjk > n / 3 else 120)

    # copyright, licences, disclaimers: a short line with one marker, a longer one with two
    legal = len({m.group(0) for m in _RE_LEGAL.finditer(line)})
    labelled = re.match(r"[(（\[【]?(免责声明|版权声明|声明|disclaimer|copyright|legal notice)\s*([:：)）\]】]|$)", line)
    if (legal and short) or ((legal >= 2 or labelled) and n <= 300):
        return "legal"
    # mostly URLs / e-mail addresses (each needs a '.' or '://'; the check skips _RE_URL, slow on long
    # runs of letters, for most lines of Chinese text)
    urls = url_characters(line) if "." in line or "://" in line else 0
    if urls and (urls >= 0.3 * n or short):
        return "url"
    # navigation bars, breadcrumbs, share bars: several short items between separators,
    # maybe after a short label ("位置：", "share:")
    menu = re.sub(r"^[^:：\s]{1,8}\s*[:：]\s*", "", line) or line
    items = [s for s in _RE_SEP.split(menu) if s and s.strip() and not _RE_SEP.fullmatch(s)]
    seps = len(_RE_SEP.findall(menu))
    if seps >= 2 and len(items) >= 3 and n <= 150 and not _SENT_END.search(line):
        mean = sum(len(s) for s in items) / len(items)
        longest = max(len(s) for s in items)
        if (mean <= 6 and longest <= 10) if cjk > n / 3 else (mean <= 16 and longest <= 30):
            return "nav"
    # a labelled breadcrumb ("当前位置：", "you are here:")
    if n <= 60 and _RE_BREADCRUMB.match(line):
        return "nav"
    # a CJK line of several very short space-separated items (a menu without separators)
    words = menu.split()
    if (cjk > len(menu) / 3 and len(words) >= (3 if menu != line else 4) and max(len(w) for w in words) <= 5
            and not _SENT_END.search(line)):
        return "nav"
    # time stamps, counters and by-lines
    if short:
        dates = len(_RE_DATE.findall(line))
        counters = len(_RE_COUNTER.findall(line))
        keys = len(_RE_META_KEY.findall(line))
        sentence = bool(_SENT_END.search(line))
        if counters or (dates and (keys or (n <= 50 and not sentence))) or (keys and n <= 40 and not sentence):
            return "meta"
        if digits >= 0.3 * alnum and not _SENT_END.search(line):
            return "digits"
    # advertising and calls to action: marker words in a short line, or an ad-like signal
    if n <= 80:
        cta = len({m.group(0) for m in _RE_CTA.finditer(line)})
        loud = bool(_RE_PHONE.search(line) or _RE_URL.search(line) or re.search(r"[!>]|^[【\[]", line))
        if cta >= 2 or (cta and loud) or _RE_PROMO_LABEL.match(line):
            return "ad"
    return None


def _join_lines(lines: list[str]) -> str:
    """Join kept lines: no separator between two CJK characters (undoes hard wrapping of
    Chinese text), a space otherwise."""
    out = []
    for line in lines:
        if out and not (_RE_CJK.match(line[:1]) and _RE_CJK.match(out[-1][-1:])):
            out.append(" ")
        out.append(line)
    return "".join(out)


def _is_wrapped(lines: list[str]) -> bool:
    """Lines of one block that look like a hard-wrapped paragraph: at least 3 lines, the
    lines before the last of about the same width (at most 100 characters), the last not
    longer (20% slack for ragged word wrapping; lines of ads or a menu above a paragraph
    are not its wrapped lines), and most of them ending inside a sentence."""
    if len(lines) < 3:
        return False
    widths = [len(line) for line in lines[:-1]]
    wide = max(widths)
    return (wide <= 100 and len(lines[-1]) <= 1.2 * wide
            and sum(w >= 0.7 * wide for w in widths) >= 0.8 * len(widths)
            and sum(not _SENT_END.search(line[-1:] + " ") for line in lines[:-1]) >= 0.75 * len(widths))


def logical_lines(text: str) -> list[str]:
    """The lines of a normalised text, with hard-wrapped paragraphs (blocks between blank
    lines) joined into one line each, so the rules judge a paragraph, not a fragment."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if len(lines) >= 2 and _is_wrapped(lines):
            out.append(_join_lines(lines))
        else:
            out.extend(lines)
    return out


def body_text(text: str, drop_boilerplate: bool = True, join: bool = True) -> str:
    """The body of normalised ``text``: its logical lines without those that look like
    boilerplate (all of them if every line does), joined as ``_join_lines`` does (or by
    newlines when ``join`` is false)."""
    lines = logical_lines(text)
    if drop_boilerplate:
        kept = [line for line in lines if boilerplate_reason(line) is None]
        lines = kept or lines
    return _join_lines(lines) if join else "\n".join(lines)



def lead_text(text: str, chars: int, reason: Callable[[str], str | None] = boilerplate_reason) -> str:
    """``body_text(text, join=False)[:chars]``, judging only the lines it needs: the kept lines
    until they hold ``chars`` characters (all the lines when none is kept). ``reason``: the rule
    that judges a line (``boilerplate_reason``, or the compiled core's: native.line_rule)."""
    lines = logical_lines(text)
    kept, size = [], 0
    for line in lines:
        if reason(line) is None:
            kept.append(line)
            size += len(line) + 1
            if size > chars:  # joined by newlines, the kept lines hold ``chars`` characters
                break
    return "\n".join(kept or lines)[:chars]
