//! Character properties and `str` helpers with Python's definitions.
//!
//! The tables are generated at build time from the interpreter the core is built for
//! (`gen_tables.py`), so `is_alnum` is that Python's `str.isalnum`, `is_space` its
//! `str.isspace` (and `re`'s `\s`), and so on. `UNIDATA_VERSION` is checked against the
//! running interpreter when the core is loaded (`dedup_hbase/native.py`).

#[allow(clippy::all)]
mod tables {
    include!(concat!(env!("OUT_DIR"), "/unicode_tables.rs"));
}

pub use tables::{PYTHON_VERSION, PY_DECIMAL, PY_SPACE, PY_WORD, UNIDATA_VERSION};

const ALNUM: u8 = 1;
const ALPHA: u8 = 1 << 1;
const DIGIT: u8 = 1 << 2;
const DECIMAL: u8 = 1 << 3;
const SPACE: u8 = 1 << 4;
const LINEBREAK: u8 = 1 << 5;
const CASEFOLD: u8 = 1 << 6;
const NFKC_QUICK: u8 = 1 << 7;

#[inline(always)]
fn flags(c: char) -> u8 {
    let cp = c as u32;
    tables::FLAG_BLOCKS[tables::FLAG_INDEX[(cp >> 8) as usize] as usize][(cp & 0xFF) as usize]
}

/// `ch.isalnum()`
#[inline]
pub fn is_alnum(c: char) -> bool {
    flags(c) & ALNUM != 0
}

/// `ch.isalpha()`
#[inline]
pub fn is_alpha(c: char) -> bool {
    flags(c) & ALPHA != 0
}

/// `ch.isdigit()` (not `re`'s `\d`, which is `isdecimal`)
#[inline]
pub fn is_digit(c: char) -> bool {
    flags(c) & DIGIT != 0
}

/// `ch.isdecimal()`, `re`'s `\d`
#[inline]
pub fn is_decimal(c: char) -> bool {
    flags(c) & DECIMAL != 0
}

/// `ch.isspace()`, `re`'s `\s`
#[inline]
pub fn is_space(c: char) -> bool {
    flags(c) & SPACE != 0
}

/// A line boundary of `str.splitlines` (`\r\n` is handled by `splitlines` itself)
#[inline]
pub fn is_linebreak(c: char) -> bool {
    flags(c) & LINEBREAK != 0
}

/// `ch.casefold() != ch`
#[inline]
pub fn casefold_changes(c: char) -> bool {
    flags(c) & CASEFOLD != 0
}

/// NFKC leaves the character alone whatever surrounds it: no decomposition, combining
/// class 0, never the second character of a composition.
#[inline]
pub fn nfkc_quick(c: char) -> bool {
    flags(c) & NFKC_QUICK != 0
}

/// `unicodedata.combining(ch)`
pub fn ccc(c: char) -> u8 {
    let cp = c as u32;
    match tables::CCC.binary_search_by_key(&cp, |&(k, _)| k) {
        Ok(i) => tables::CCC[i].1,
        Err(_) => 0,
    }
}

/// `unicodedata.normalize("NFKD", ch)` when it differs from `ch`
pub fn nfkd(c: char) -> Option<&'static str> {
    let cp = c as u32;
    tables::DECOMP
        .binary_search_by_key(&cp, |&(k, _)| k)
        .ok()
        .map(|i| tables::DECOMP[i].1)
}

/// The character NFC composes `a` (a starter) and `b` into, if any
pub fn compose(a: char, b: char) -> Option<char> {
    let key = ((a as u64) << 32) | b as u64;
    tables::COMPOSE
        .binary_search_by_key(&key, |&(k, _)| k)
        .ok()
        .map(|i| char::from_u32(tables::COMPOSE[i].1).expect("a composite is a char"))
}

/// `ch.casefold()` when it differs from `ch`
pub fn casefold(c: char) -> Option<&'static str> {
    let cp = c as u32;
    tables::CASEFOLD
        .binary_search_by_key(&cp, |&(k, _)| k)
        .ok()
        .map(|i| tables::CASEFOLD[i].1)
}

/// `s.strip()`: Python white space off both ends
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `s.split()`: runs of Python white space separate the words
pub fn split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|w| !w.is_empty())
}

/// `s.splitlines()`: `\r\n` or any one line boundary ends a line; no empty last line
/// after a final boundary
pub fn splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // every line boundary is a control character or starts with byte 0xC2 (U+0085)
        // or 0xE2 (U+2028, U+2029): the other bytes need no decoding (a test checks it)
        let b = bytes[i];
        if b >= 0x20 && b != 0xC2 && b != 0xE2 {
            i += 1;
            continue;
        }
        let c = s[i..].chars().next().expect("i is at a character");
        let mut end = i + c.len_utf8();
        if is_linebreak(c) {
            out.push(&s[start..i]);
            if c == '\r' && bytes.get(end) == Some(&b'\n') {
                end += 1;
            }
            start = end;
        }
        i = end;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// `s.isalpha()`: not empty and every character a letter
pub fn str_is_alpha(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_alpha)
}

/// Length in code points, Python's `len(s)`
#[inline]
pub fn len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_boundaries_start_with_the_bytes_splitlines_decodes() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if is_linebreak(c) {
                let mut buf = [0; 4];
                let first = c.encode_utf8(&mut buf).as_bytes()[0];
                assert!(first < 0x20 || first == 0xC2 || first == 0xE2, "{c:?}");
            }
        }
    }

    #[test]
    fn splitlines_is_pythons() {
        // "a\r\nb\rc\nd\x85e\u2028f\u2029g\x1ch\x0bi\x0cj".splitlines() and
        // "\n\nx\r".splitlines()
        assert_eq!(
            splitlines("a\r\nb\rc\nd\u{85}e\u{2028}f\u{2029}g\x1ch\x0bi\x0cj\u{2027}\u{a0}"),
            [
                "a",
                "b",
                "c",
                "d",
                "e",
                "f",
                "g",
                "h",
                "i",
                "j\u{2027}\u{a0}"
            ]
        );
        assert_eq!(splitlines("\n\nx\r"), ["", "", "x"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
    }
}
