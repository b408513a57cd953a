//! `features.normalize`: Unicode NFKC, then `str.casefold`.
//!
//! Python: `text.translate(_FULL_WIDTH)` (full-width ASCII to its NFKC form: a shortcut
//! that does not change the NFKC result), NFKC unless `unicodedata.is_normalized` says
//! it is already (again the same result), then `casefold()`. So the output is
//! `casefold(NFKC(text))`, which is what this module computes, with the interpreter's
//! own decomposition, combining-class, composition and case-folding data (`unicode`).

use crate::unicode::{casefold, casefold_changes, ccc, compose, nfkc_quick, nfkd};
use std::borrow::Cow;

/// `normalize(text)`: NFKC, then case folding.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // The common case in one pass: every character is one NFKC leaves alone, or a
    // full-width ASCII character or the ideographic space (Python's `_FULL_WIDTH`
    // shortcut), whose NFKC form is one ASCII character that composes with nothing.
    for c in text.chars() {
        let c = if nfkc_quick(c) {
            c
        } else if let Some(narrow) = full_width(c) {
            narrow
        } else {
            out.clear();
            push_folded(&mut out, &nfkc(text));
            return out;
        };
        push_folded_char(&mut out, c);
    }
    out
}

/// `_FULL_WIDTH`: U+FF01..U+FF5E and U+3000 to their NFKC forms (gen_tables.py checks
/// that these are their forms)
#[inline]
fn full_width(c: char) -> Option<char> {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0),
        '\u{3000}' => Some(' '),
        _ => None,
    }
}

/// `text.casefold()`
fn push_folded(out: &mut String, text: &str) {
    text.chars().for_each(|c| push_folded_char(out, c));
}

#[inline]
fn push_folded_char(out: &mut String, c: char) {
    if casefold_changes(c) {
        out.push_str(casefold(c).expect("a character that changes has a folding"));
    } else {
        out.push(c);
    }
}

/// `unicodedata.normalize("NFKC", text)`
pub fn nfkc(text: &str) -> Cow<'_, str> {
    if text.chars().all(nfkc_quick) {
        return Cow::Borrowed(text);
    }
    // Full compatibility decomposition, then the canonical ordering of each run of
    // non-starters (a stable sort by combining class) ...
    let mut chars: Vec<(char, u8)> = Vec::with_capacity(text.len());
    for c in text.chars() {
        match nfkd(c) {
            Some(d) => d.chars().for_each(|d| push_ordered(&mut chars, d)),
            None => push_ordered(&mut chars, c),
        }
    }
    // ... then canonical composition: a character joins the last starter when nothing
    // between them blocks it (a character of class 0, or of a class >= its own).
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut starter: Option<usize> = None;
    let mut last_class = 0u8;
    for (c, class) in chars {
        if let Some(s) = starter {
            let adjacent = s + 1 == out.len();
            let blocked = !adjacent && (last_class == 0 || last_class >= class);
            if !blocked {
                if let Some(composite) = compose(out[s], c) {
                    out[s] = composite;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(out.len());
        }
        out.push(c);
        last_class = class;
    }
    Cow::Owned(out.into_iter().collect())
}

fn push_ordered(chars: &mut Vec<(char, u8)>, c: char) {
    let class = ccc(c);
    let mut at = chars.len();
    if class != 0 {
        while at > 0 && chars[at - 1].1 > class {
            at -= 1;
        }
    }
    chars.insert(at, (c, class));
}
