//! `boilerplate.body_text`: the text's logical lines without the ones that look like
//! site boilerplate, joined.
//!
//! Every pattern here is the source of the Python pattern it mirrors, character for
//! character (`PATTERNS` lists the module-level ones; `dedup_hbase/native.py` refuses
//! the core when they differ from `dedup_hbase/boilerplate.py`'s), run with Python's
//! meaning by `pyre`. Lengths are Python's (code points), and the float comparisons are
//! written as Python evaluates them (`n / 3` is a true division).

use crate::pyre::PyRegex;
use crate::unicode::{is_alnum, is_digit, len, split_whitespace, splitlines, strip};
use rustc_hash::FxHashSet;
use std::borrow::Cow;
use std::sync::OnceLock;

/// `_CJK` / `_RE_CJK`: `[\u3400-\u9fff\uf900-\ufaff]`
#[inline]
pub fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

const LEGAL: &str = r"©|\(c\)\s*\d{4}|copyright|all rights reserved|rights reserved|trademarks?\b|版权所有|版权归|版权声明|^(免责|特别|版权)?声明[:：]|免责|disclaimer|未经[^，。,]{0,6}(授权|许可)|(禁止|谢绝|请勿)[^，。,]{0,4}转载|转载请|如有侵权|侵权[^，。,]{0,4}删除|icp[备证]|公网安备|备案号|举报(电话|邮箱|中心)|terms of (use|service)|privacy (policy|notice)|cookie (settings|policy|preferences)";
const URL: &str = r"https?://\S+|www\.\S+|\b[\w.-]+\.(com|cn|net|org|io|app|wiki|info|gov|edu)(/\S*)?\b|\S+@\S+\.\w+";
/// `_RE_URL_NO_AT`: `URL` without its e-mail form, for a run of non-space characters without '@'
/// (the same matches; that form alone is quadratic in the run's length)
const URL_NO_AT: &str = r"https?://\S+|www\.\S+|\b[\w.-]+\.(com|cn|net|org|io|app|wiki|info|gov|edu)(/\S*)?\b";
const NON_SPACE: &str = r"\S+";
const DATE: &str = r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}|\d{1,2}[-/]\d{1,2}[-/]\d{4}|\d{1,2}:\d{2}|\d+\s*(秒|分钟|小时|天|周|个月)前|昨天|前天|\d+\s*(seconds?|minutes?|hours?|days?|weeks?)\s+ago|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}|\b\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{4}";
const COUNTER: &str = r"(\d[\d,.]*\s*[万千kmw]?\s*(人|条|次)?\s*(阅读|浏览|点击|评论|回复|点赞|赞|收藏|分享|转发|播放|人已读|人看过|views?|reads?|comments?|replies|likes?|upvotes?|shares?|votes?|clicks?|plays?|followers?)(?!\w))|((阅读|浏览|点击|评论|回复|点赞|赞|收藏|分享|转发|播放|人已读|人看过|views?|reads?|comments?|replies|likes?|upvotes?|shares?|votes?|clicks?|plays?|followers?)量?\s*[:：(（]?\s*\d)|read \d[\d,.]* times";
const META_KEY: &str = r"((^|\s|[(（\[【])(来源|出处|作者|编辑|责任编辑|记者|通讯员|审核|校对|发布时间|发布日期|更新时间|时间|日期|source|author|editor|posted|published|updated)\s*[:：])|发布于|(^|\s)(posted|published|updated|(edited|written) by)\s";
const CTA: &str = r"扫码|扫描|二维码|公众号|关注我们|关注|订阅|点击|下载|\bapp\b|注册|领取|抢购|购买|优惠|特惠|折扣|\d折|红包|立减|立即|限时|热线|客服|微信|vx|广告|推广|赞助|推荐阅读|相关阅读|延伸阅读|subscribe|newsletter|sign up|click|download|advert|sponsor|promo|coupon|discount|% off|free trial|shop now|buy now|call \d|order now|learn more|share( this)?\s*:|follow us";
const PHONE: &str =
    r"\b(400|800)[- ]?\d{3}[- ]?\d{4}\b|1-800-\d{3}-\d{4}|\b1[3-9]\d{9}\b|\d{3,4}-\d{7,8}";
const BREADCRUMB: &str = r"(当前位置|您的位置|你的位置|所在位置|位置|you are here|breadcrumbs?)\s*[:：]|(首页|主页|home)\s*(>+|»|›|/|-|→)";
const PROMO_LABEL: &str = r"[(（\[【]?(广告|推广|赞助|推荐阅读|相关阅读|延伸阅读|相关新闻|相关推荐|热门推荐|猜你喜欢|sponsored|advertisement|promoted|ad|related( articles| posts| stories)?|read more|recommended( for you)?|you may also like)\s*[)）\]】]?\s*[:：|｜]";
const SEP: &str = r"\s*(\|+|｜|»|›|•|\s[/·>»\-—–]+\s|(?<=[\u3400-\u9fff\uf900-\ufaff])[>\-_](?=[\u3400-\u9fff\uf900-\ufaff]))\s*|\s{2,}";
const SENT_END: &str = r"[。！？!?；;]|\.(\s|$)";
/// the pattern of `labelled` in `boilerplate_reason`
const LABELLED: &str =
    r"[(（\[【]?(免责声明|版权声明|声明|disclaimer|copyright|legal notice)\s*([:：)）\]】]|$)";
/// `re.sub(r"^[^:：\s]{1,8}\s*[:：]\s*", "", line)` in `boilerplate_reason`
const MENU_LABEL: &str = r"^[^:：\s]{1,8}\s*[:：]\s*";
/// `re.search(r"[!>]|^[【\[]", line)` in `boilerplate_reason`
const LOUD: &str = r"[!>]|^[【\[]";
/// `re.split(r"\n\s*\n", text)` in `logical_lines`
const BLANK_LINE: &str = r"\n\s*\n";

/// The module-level patterns of `boilerplate.py`, by name, as the core has them.
pub const PATTERNS: [(&str, &str); 13] = [
    ("_RE_LEGAL", LEGAL),
    ("_RE_URL", URL),
    ("_RE_URL_NO_AT", URL_NO_AT),
    ("_RE_NON_SPACE", NON_SPACE),
    ("_RE_DATE", DATE),
    ("_RE_COUNTER", COUNTER),
    ("_RE_META_KEY", META_KEY),
    ("_RE_CTA", CTA),
    ("_RE_PHONE", PHONE),
    ("_RE_BREADCRUMB", BREADCRUMB),
    ("_RE_PROMO_LABEL", PROMO_LABEL),
    ("_RE_SEP", SEP),
    ("_SENT_END", SENT_END),
];

struct Rules {
    legal: PyRegex,
    url: PyRegex,
    url_no_at: PyRegex,
    non_space: PyRegex,
    date: PyRegex,
    counter: PyRegex,
    meta_key: PyRegex,
    cta: PyRegex,
    phone: PyRegex,
    breadcrumb: PyRegex,
    promo_label: PyRegex,
    sep: PyRegex,
    sent_end: PyRegex,
    labelled: PyRegex,
    menu_label: PyRegex,
    loud: PyRegex,
    blank_line: regex::Regex,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules {
        legal: PyRegex::new(LEGAL),
        url: PyRegex::new(URL),
        url_no_at: PyRegex::new(URL_NO_AT),
        non_space: PyRegex::new(NON_SPACE),
        date: PyRegex::new(DATE),
        counter: PyRegex::new(COUNTER),
        meta_key: PyRegex::new(META_KEY),
        cta: PyRegex::new(CTA),
        phone: PyRegex::new(PHONE),
        breadcrumb: PyRegex::new(BREADCRUMB),
        promo_label: PyRegex::new(PROMO_LABEL),
        sep: PyRegex::new(SEP),
        sent_end: PyRegex::new(SENT_END),
        labelled: PyRegex::new(LABELLED),
        menu_label: PyRegex::new(MENU_LABEL),
        loud: PyRegex::new(LOUD),
        // the whole text, which may hold "\n": no `$` in it, so the plain translation is exact
        blank_line: regex::Regex::new(&crate::pyre::translate(BLANK_LINE, false)).unwrap(),
    })
}

/// Compile every pattern now (the first document need not pay for it).
pub fn warm_up() {
    rules();
}

/// Number of distinct matched strings: `len({m.group(0) for m in p.finditer(line)})`
fn distinct_matches(p: &PyRegex, line: &str) -> usize {
    let found = p.find_iter(line);
    if found.len() <= 1 {
        return found.len();
    }
    found
        .iter()
        .map(|&(a, b)| &line[a..b])
        .collect::<FxHashSet<_>>()
        .len()
}

/// `url_characters`: the characters of `line` in matches of `_RE_URL`, run by run of non-space
/// characters, a run without '@' without the e-mail form (the same matches); a line without '@' whole
fn url_characters(r: &Rules, line: &str) -> usize {
    if !line.contains('@') {
        return r.url_no_at.find_iter(line).iter().map(|&(a, b)| len(&line[a..b])).sum();
    }
    r.non_space
        .find_iter(line)
        .iter()
        .map(|&(a, b)| {
            let run = &line[a..b];
            let forms = if run.contains('@') { &r.url } else { &r.url_no_at };
            forms.find_iter(run).iter().map(|&(a, b)| len(&run[a..b])).sum::<usize>()
        })
        .sum()
}

/// `boilerplate_reason(line)`: why a normalised, stripped line looks like boilerplate.
pub fn boilerplate_reason(line: &str) -> Option<&'static str> {
    let r = rules();
    debug_assert!(!line.contains('\n'));
    // n = len(line); alnum = sum(map(str.isalnum, line)); digits = sum(map(str.isdigit,
    // line)); cjk = n - len(_RE_CJK.sub("", line)): one pass
    let (mut n, mut alnum, mut digits, mut cjk) = (0usize, 0usize, 0usize, 0usize);
    for c in line.chars() {
        n += 1;
        alnum += is_alnum(c) as usize;
        digits += is_digit(c) as usize;
        cjk += is_cjk(c) as usize;
    }
    // if n == 0: "empty"; if alnum == 0: "symbols"
    if n == 0 {
        return Some("empty");
    }
    if alnum == 0 {
        return Some("symbols");
    }
    let cjk_line = cjk as f64 > n as f64 / 3.0;
    // short = n <= (60 if cjk > n / 3 else 120)
    let short = n <= if cjk_line { 60 } else { 120 };

    // legal = len({m.group(0) for m in _RE_LEGAL.finditer(line)}); labelled = re.match(...)
    // if (legal and short) or ((legal >= 2 or labelled) and n <= 300): "legal"
    // (past 300 characters a line is not short and neither matters: no search)
    if n <= 300 {
        let legal = distinct_matches(&r.legal, line);
        if (legal > 0 && short) || legal >= 2 || r.labelled.matches_start(line) {
            return Some("legal");
        }
    }
    // urls = url_characters(line) if "." in line or "://" in line else 0
    // if urls and (urls >= 0.3 * n or short): "url"
    let urls: usize = if line.contains('.') || line.contains("://") { url_characters(r, line) } else { 0 };
    if urls > 0 && (urls as f64 >= 0.3 * n as f64 || short) {
        return Some("url");
    }
    // menu = re.sub(r"^[^:：\s]{1,8}\s*[:：]\s*", "", line) or line
    let menu = match r.menu_label.remove_at_start(line) {
        "" => line,
        rest => rest,
    };
    // items = [s for s in _RE_SEP.split(menu) if s and s.strip() and not _RE_SEP.fullmatch(s)]
    // (split returns the separators' group 1 too: a lone '>' '-' '_' stays an item)
    // seps = len(_RE_SEP.findall(menu))
    // if seps >= 2 and len(items) >= 3 and n <= 150 and not _SENT_END.search(line): ...
    // (n <= 150 first: the split is the slowest rule, and its answer matters only then)
    if n <= 150 {
        let pieces = r.sep.split_with_group(menu);
        let seps = pieces.len() / 2;
        let items: Vec<usize> = match seps {
            0 | 1 => Vec::new(), // (not needed)
            _ => pieces
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty() && !strip(s).is_empty() && !r.sep.full_match(s))
                .map(len)
                .collect(),
        };
        if seps >= 2 && items.len() >= 3 && !r.sent_end.search(line) {
            // mean = sum(len(s) for s in items) / len(items); longest = max(...)
            let mean = items.iter().sum::<usize>() as f64 / items.len() as f64;
            let longest = *items.iter().max().unwrap();
            // (mean <= 6 and longest <= 10) if cjk > n / 3 else (mean <= 16 and longest <= 30)
            let nav = if cjk_line {
                mean <= 6.0 && longest <= 10
            } else {
                mean <= 16.0 && longest <= 30
            };
            if nav {
                return Some("nav");
            }
        }
    }
    // if n <= 60 and _RE_BREADCRUMB.match(line): "nav"
    if n <= 60 && r.breadcrumb.matches_start(line) {
        return Some("nav");
    }
    // words = menu.split()
    // if (cjk > len(menu) / 3 and len(words) >= (3 if menu != line else 4)
    //     and max(len(w) for w in words) <= 5 and not _SENT_END.search(line)): "nav"
    if cjk as f64 > len(menu) as f64 / 3.0 {
        // (the first word longer than 5 characters settles it: no need to go on)
        let mut words = 0;
        let all_short = split_whitespace(menu).all(|w| {
            words += 1;
            w.chars().nth(5).is_none()
        });
        if all_short && words >= if menu != line { 3 } else { 4 } && !r.sent_end.search(line) {
            return Some("nav");
        }
    }
    // if short: dates, counters, keys = len(findall(...)); sentence = bool(_SENT_END.search(line))
    //   if counters or (dates and (keys or (n <= 50 and not sentence))) or (keys and n <= 40 and not sentence): "meta"
    //   if digits >= 0.3 * alnum and not _SENT_END.search(line): "digits"
    if short {
        let dates = r.date.find_iter(line).len();
        let counters = r.counter.find_iter(line).len();
        let keys = r.meta_key.find_iter(line).len();
        let sentence = r.sent_end.search(line);
        if counters > 0
            || (dates > 0 && (keys > 0 || (n <= 50 && !sentence)))
            || (keys > 0 && n <= 40 && !sentence)
        {
            return Some("meta");
        }
        if digits as f64 >= 0.3 * alnum as f64 && !sentence {
            return Some("digits");
        }
    }
    // if n <= 80: cta = len({m.group(0) for m in _RE_CTA.finditer(line)})
    //   loud = bool(_RE_PHONE.search(line) or _RE_URL.search(line) or re.search(r"[!>]|^[【\[]", line))
    //   if cta >= 2 or (cta and loud) or _RE_PROMO_LABEL.match(line): "ad"
    if n <= 80 {
        let cta = distinct_matches(&r.cta, line);
        let loud = || r.phone.search(line) || r.url.search(line) || r.loud.search(line);
        if cta >= 2 || (cta > 0 && loud()) || r.promo_label.matches_start(line) {
            return Some("ad");
        }
    }
    None
}

/// `_join_lines`: no separator between two CJK characters, a space otherwise.
fn join_lines(lines: &[&str]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    let mut last: Option<char> = None;
    for line in lines {
        if let Some(prev) = last {
            let first_cjk = line.chars().next().is_some_and(is_cjk);
            if !(first_cjk && is_cjk(prev)) {
                out.push(' ');
            }
        }
        out.push_str(line);
        last = line.chars().next_back().or(last);
    }
    out
}

/// `_SENT_END.search(line[-1:] + " ")`: the last character ends a sentence
/// (`[。！？!?；;]`, or `.` followed by the added space)
fn ends_sentence(line: &str) -> bool {
    matches!(
        line.chars().next_back(),
        Some('。' | '！' | '？' | '!' | '?' | '；' | ';' | '.')
    )
}

/// `_is_wrapped(lines)`: a hard-wrapped paragraph
fn is_wrapped(lines: &[&str]) -> bool {
    if lines.len() < 3 {
        return false;
    }
    // widths = [len(line) for line in lines[:-1]]; wide = max(widths)
    let widths: Vec<usize> = lines[..lines.len() - 1].iter().map(|l| len(l)).collect();
    let wide = *widths.iter().max().unwrap();
    let count = widths.len() as f64;
    // wide <= 100 and len(lines[-1]) <= 1.2 * wide
    // and sum(w >= 0.7 * wide for w in widths) >= 0.8 * len(widths)
    // and sum(not _SENT_END.search(line[-1:] + " ") for line in lines[:-1]) >= 0.75 * len(widths)
    wide <= 100
        && len(lines[lines.len() - 1]) as f64 <= 1.2 * wide as f64
        && widths
            .iter()
            .filter(|&&w| w as f64 >= 0.7 * wide as f64)
            .count() as f64
            >= 0.8 * count
        && lines[..lines.len() - 1]
            .iter()
            .filter(|l| !ends_sentence(l))
            .count() as f64
            >= 0.75 * count
}

/// `logical_lines(text)`: stripped non-empty lines, each hard-wrapped block joined.
pub fn logical_lines(text: &str) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    for block in rules().blank_line.split(text) {
        let lines: Vec<&str> = splitlines(block)
            .into_iter()
            .map(strip)
            .filter(|l| !l.is_empty())
            .collect();
        if lines.len() >= 2 && is_wrapped(&lines) {
            out.push(Cow::Owned(join_lines(&lines)));
        } else {
            out.extend(lines.into_iter().map(Cow::Borrowed));
        }
    }
    out
}

/// `body_text(text)`: the logical lines without boilerplate (all of them if every line
/// is), joined by `_join_lines`.
pub fn body_text(text: &str) -> String {
    let lines = logical_lines(text);
    let kept: Vec<&str> = lines
        .iter()
        .map(Cow::as_ref)
        .filter(|l| boilerplate_reason(l).is_none())
        .collect();
    if kept.is_empty() {
        join_lines(&lines.iter().map(Cow::as_ref).collect::<Vec<_>>())
    } else {
        join_lines(&kept)
    }
}
