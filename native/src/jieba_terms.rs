//! `features.JiebaFeaturizer` (version 2): jieba's words of the body, HMM off, as terms
//! weighted by sublinear TF-IDF in thousandths.
//!
//! The dictionary and the IDF table are the Python `jieba` package's own files (paths
//! given by `dedup_hbase/native.py`), read with the Python code's rules, so the data are
//! the same by construction. A block is cut by `jieba_cut.rs`, Python jieba's
//! `__cut_DAG_NO_HMM` ported line for line; the split of the text into blocks is done here
//! with Python jieba's classes.

use crate::boilerplate::body_text;
use crate::jieba_cut::{PrefixDict, Scratch};
use crate::normalize::normalize;
use crate::slice_map::SliceMap;
use crate::unicode::{is_alnum, is_alpha, len, splitlines, str_is_alpha, strip};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;

/// `JiebaFeaturizer.GRAM`: characters per n-gram of a word of an alphabet
const GRAM: usize = 4;

pub struct JiebaTerms {
    dict: PrefixDict,
    idf: SliceMap<i64>,
    median: i64,
    stop_words: FxHashSet<String>,
}

impl JiebaTerms {
    /// The dictionary text (`jieba/dict.txt`), the IDF table text (`jieba/analyse/idf.txt`)
    /// and the stop words of `features._STOP_WORDS`.
    pub fn new(dict: Vec<u8>, idf: String, stop_words: Vec<String>) -> Result<JiebaTerms, String> {
        // the two tables load side by side (most of the start time of `query TEXT`)
        let (dict, idf) = std::thread::scope(|scope| {
            let idf = scope.spawn(|| load_idf(idf));
            (
                PrefixDict::load(&dict),
                idf.join().expect("the IDF loader panicked"),
            )
        });
        let (dict, (idf, median)) = (dict?, idf?);
        Ok(JiebaTerms {
            dict,
            idf,
            median,
            stop_words: stop_words.into_iter().collect(),
        })
    }

    /// The IDF table (word, IDF in thousandths) and its median.
    pub fn idf_table(&self) -> (impl Iterator<Item = (&str, i64)>, i64) {
        let words = self
            .idf
            .iter()
            .map(|(w, v)| (std::str::from_utf8(w).expect("the table is a str"), v));
        (words, self.median)
    }

    /// `JiebaFeaturizer.words(text)` with the HMM off: Python jieba's `cut`
    /// (`Tokenizer.cut(text, HMM=False)`).
    pub fn words<'t>(&self, text: &'t str, out: &mut Vec<&'t str>) {
        // blocks = re_han_default.split(sentence), re_han_default =
        // "([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)"; a Han block goes through
        // __cut_DAG_NO_HMM, any other through re_skip_default "(\r\n|\s)": white space
        // (a "\r\n" pair whole) and every other character are each a token of their own.
        let mut scratch = Scratch::default();
        let mut rest = text;
        while let Some(first) = rest.chars().next() {
            let han = is_han_default(first);
            let end = rest
                .find(|c| is_han_default(c) != han)
                .unwrap_or(rest.len());
            let (block, tail) = rest.split_at(end);
            rest = tail;
            if han {
                self.dict.cut(block, out, &mut scratch);
            } else {
                let mut chars = block.char_indices().peekable();
                while let Some((i, c)) = chars.next() {
                    let mut end = i + c.len_utf8();
                    if c == '\r' && chars.peek().is_some_and(|&(_, d)| d == '\n') {
                        chars.next();
                        end += 1;
                    }
                    out.push(&block[i..end]);
                }
            }
        }
    }

    /// `JiebaFeaturizer.features(text)`: each term and its weight, in first-seen order.
    pub fn each_feature(&self, text: &str, sink: &mut dyn FnMut(&str, i64)) {
        let body = body_text(&normalize(text));
        let mut tokens = Vec::new();
        self.words(&body, &mut tokens);
        let mut terms: Vec<Cow<str>> = Vec::with_capacity(tokens.len());
        for token in join_letters(&tokens) {
            self.terms_of(token, &mut terms);
        }
        // Counter(terms), in first-seen order
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        let mut counts: Vec<(&str, u32)> = Vec::new();
        for term in &terms {
            match index.get(term.as_ref()) {
                Some(&i) => counts[i].1 += 1,
                None => {
                    index.insert(term, counts.len());
                    counts.push((term, 1));
                }
            }
        }
        // gram = median // GRAM; weight = _log_count(count) * (gram if term[0] == " " else
        // idf.get(term, median)) // 1000
        let gram = self.median.div_euclid(GRAM as i64);
        for (term, count) in counts {
            let idf = if term.starts_with(' ') {
                gram
            } else {
                self.idf.get(term.as_bytes()).unwrap_or(self.median)
            };
            sink(term, (log_count(count) * idf).div_euclid(1000));
        }
    }

    /// `JiebaFeaturizer._terms_of(token)`: none when it is not a word; the padded
    /// 4-grams of a word of an alphabet; the word itself otherwise.
    fn terms_of<'t>(&self, token: Cow<'t, str>, terms: &mut Vec<Cow<'t, str>>) {
        if !self.is_word(&token) {
            return;
        }
        if is_letters(&token) {
            // padded = f" {token} "; terms = " " + padded[i:i + n] for each i
            let padded: Vec<char> = std::iter::once(' ')
                .chain(token.chars())
                .chain(std::iter::once(' '))
                .collect();
            for gram in padded.windows(GRAM) {
                let mut term = String::with_capacity(1 + gram.len() * 4);
                term.push(' ');
                term.extend(gram);
                terms.push(Cow::Owned(term));
            }
        } else {
            terms.push(token);
        }
    }

    /// `_is_word(token)`: two characters or more, not a stop word, a letter or digit in it
    fn is_word(&self, token: &str) -> bool {
        len(token) >= 2 && !self.stop_words.contains(token) && token.chars().any(is_alnum)
    }
}

/// `re_han_default` of Python jieba: `[\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]`
#[inline]
fn is_han_default(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FD5}' | 'a'..='z' | 'A'..='Z' | '0'..='9' | '+' | '#' | '&' | '.' | '_' | '%' | '-')
}

/// `features._is_han`: `"\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"`
#[inline]
fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// `_is_letters(token)`: a letter in it and no Han character
fn is_letters(token: &str) -> bool {
    token.chars().any(is_alpha) && !token.chars().any(is_han)
}

/// `_join_letters(tokens)`: a single non-Han letter is glued to the run of letters before it.
fn join_letters<'t>(tokens: &[&'t str]) -> Vec<Cow<'t, str>> {
    let mut out: Vec<Cow<'t, str>> = Vec::with_capacity(tokens.len());
    for &token in tokens {
        let mut chars = token.chars();
        let single = match (chars.next(), chars.next()) {
            (Some(c), None) => Some(c),
            _ => None,
        };
        // len(token) == 1 and out and token.isalpha() and not _is_han(token)
        // and out[-1].isalpha() and _is_letters(out[-1])
        if let (Some(c), Some(last)) = (single, out.last_mut()) {
            if is_alpha(c) && !is_han(c) && str_is_alpha(last) && is_letters(last) {
                last.to_mut().push(c);
                continue;
            }
        }
        out.push(Cow::Borrowed(token));
    }
    out
}

/// `_log_count(count)`: `1000 + round(1000 * math.log(count))`, ties to even as Python rounds
fn log_count(count: u32) -> i64 {
    1000 + (1000.0 * (count as f64).ln()).round_ties_even() as i64
}

/// The IDF table as `JiebaFeaturizer._idf` reads it: `text.splitlines()`, each
/// `line.strip().partition(" ")`, kept when the value is not empty, as
/// `round(float(value) * 1000)`; the median is `sorted(values)[len // 2]`.
fn load_idf(text: String) -> Result<(SliceMap<i64>, i64), String> {
    let mut entries: Vec<(usize, usize, i64)> = Vec::with_capacity(400_000);
    for (i, line) in splitlines(&text).into_iter().enumerate() {
        let line = strip(line);
        let (word, value) = match line.split_once(' ') {
            Some(pair) => pair,
            None => continue,
        };
        if value.is_empty() {
            continue;
        }
        // float(value): plain decimal numbers only here (Python also takes "1_0", " 1",
        // "infinity" ...); anything else makes the core refuse
        if !value.bytes().all(|b| {
            b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'E' || b == b'-' || b == b'+'
        }) {
            return Err(format!(
                "IDF line {}: a value the core does not read like Python",
                i + 1
            ));
        }
        let value: f64 = value
            .parse()
            .map_err(|_| format!("IDF line {}: not a number", i + 1))?;
        let start = SliceMap::<i64>::offset_in(text.as_bytes(), word.as_bytes());
        entries.push((start, word.len(), (value * 1000.0).round_ties_even() as i64));
    }
    let mut idf = SliceMap::new(text.into_bytes(), entries.len())?;
    for (start, len, value) in entries {
        idf.set(start, len, value, true); // idf[word] = ...: a repeated word keeps its last value
    }
    if idf.is_empty() {
        return Err("the IDF table is empty".into());
    }
    let mut values: Vec<i64> = idf.iter().map(|(_, v)| v).collect();
    values.sort_unstable();
    let median = values[values.len() / 2];
    Ok((idf, median))
}
