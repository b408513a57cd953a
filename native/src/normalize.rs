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
            push_folded_nfkc(&mut out, text);
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

/// `unicodedata.normalize("NFKC", text).casefold()` into `out` (a character at a time:
/// the buffers hold one run of characters that may still compose, never the text)
fn push_folded_nfkc(out: &mut String, text: &str) {
    nfkc_each(text, |c| push_folded_char(out, c));
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
    let mut out = String::with_capacity(text.len());
    nfkc_each(text, |c| out.push(c));
    Cow::Owned(out)
}

/// The characters of `unicodedata.normalize("NFKC", text)`, in order, to `emit`.
///
/// Full compatibility decomposition, then the canonical ordering of each run of
/// non-starters (a stable sort by combining class), then canonical composition: a
/// character joins the last starter when nothing between them blocks it (a character of
/// class 0, or of a class >= its own). The ordering never moves a character past a
/// starter, and the composition changes only the last starter: what comes before the
/// last starter of each step is final, and is passed on at once.
pub fn nfkc_each(text: &str, mut emit: impl FnMut(char)) {
    let mut composer = Composer::default();
    // decomposed characters and their classes, from the last starter on
    let mut chars: Vec<(char, u8)> = Vec::new();
    let mut push = |c: char, chars: &mut Vec<(char, u8)>| {
        let class = ccc(c);
        if class == 0 && !chars.is_empty() {
            chars
                .drain(..)
                .for_each(|(c, class)| composer.push(c, class, &mut emit));
        }
        push_ordered(chars, c, class);
    };
    for c in text.chars() {
        match nfkd(c) {
            Some(d) => d.chars().for_each(|d| push(d, &mut chars)),
            None => push(c, &mut chars),
        }
    }
    chars
        .drain(..)
        .for_each(|(c, class)| composer.push(c, class, &mut emit));
    composer.out.drain(..).for_each(&mut emit);
}

/// Canonical composition of a stream of ordered characters: `out` holds the characters
/// from the last starter on (the ones before it are passed on).
#[derive(Default)]
struct Composer {
    out: Vec<char>,
    /// `out[0]` is a starter (else no starter was met yet)
    starter: bool,
    last_class: u8,
}

impl Composer {
    fn push(&mut self, c: char, class: u8, emit: &mut impl FnMut(char)) {
        if self.starter {
            let adjacent = self.out.len() == 1;
            let blocked = !adjacent && (self.last_class == 0 || self.last_class >= class);
            if !blocked {
                if let Some(composite) = compose(self.out[0], c) {
                    self.out[0] = composite;
                    return;
                }
            }
        }
        if class == 0 {
            self.out.drain(..).for_each(&mut *emit);
            self.starter = true;
        }
        self.out.push(c);
        self.last_class = class;
    }
}

fn push_ordered(chars: &mut Vec<(char, u8)>, c: char, class: u8) {
    let mut at = chars.len();
    if class != 0 {
        while at > 0 && chars[at - 1].1 > class {
            at -= 1;
        }
    }
    chars.insert(at, (c, class));
}
