//! `features.JiebaFeaturizer` (version 2): jieba's words of the body, HMM off, as terms
//! weighted by sublinear TF-IDF in thousandths.
//!
//! The dictionary and the IDF table are the Python `jieba` package's own files (paths
//! given by `dedup_hbase/native.py`), read with the Python code's rules, so the data are
//! the same by construction. A block is cut by `jieba_cut.rs`, Python jieba's
//! `__cut_DAG_NO_HMM` ported line for line; the split of the text into blocks is done here
//! with Python jieba's classes.

use crate::boilerplate::body_text;
use crate::jieba_cut::{PrefixDict, Scratch, Token, NO_NODE};
use crate::normalize::normalize;
use crate::slice_map::SliceMap;
pub use crate::term_counts::Work;
use crate::term_counts::{count, text_of, A_GRAM, CHUNK_TOKENS, KEEP_TERMS};
use crate::unicode::{is_alnum, is_alpha, is_space, len, splitlines, str_is_alpha, strip};
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicI32, Ordering};

/// `JiebaFeaturizer.GRAM`: characters per n-gram of a word of an alphabet
const GRAM: usize = 4;

/// What a token is as a term: `_terms_of(token)`, with the IDF of a term that is the token
#[derive(Clone, Copy)]
enum Kind {
    /// not `_is_word`: no term
    NotATerm,
    /// `_is_letters`: its padded 4-grams are the terms
    Letters,
    /// the token is the term, with this `idf.get(token, median)`
    Term(i64),
}

/// `kinds` of a node not met yet, and the other kinds but `Term` (the IDFs are above)
const UNSEEN: i32 = i32::MIN;
const NOT_A_TERM: i32 = i32::MIN + 1;
const LETTERS: i32 = i32::MIN + 2;
/// a `Term` whose IDF does not fit here
const BY_TEXT: i32 = i32::MIN + 3;

pub struct JiebaTerms {
    dict: PrefixDict,
    idf: SliceMap<i64>,
    median: i64,
    stop_words: FxHashSet<String>,
    /// the `Kind` of the word of each node of `dict`, learnt the first time a text has
    /// it (the reference keeps the same cache, `JiebaFeaturizer._terms`): a word of the
    /// dictionary is classified once, not at every occurrence
    kinds: Vec<AtomicI32>,
    /// `log_count` of the small counts
    log_counts: Vec<i64>,
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
            kinds: (0..dict.ids()).map(|_| AtomicI32::new(UNSEEN)).collect(),
            dict,
            idf,
            median,
            stop_words: stop_words.into_iter().collect(),
            log_counts: (0..256u32).map(log_count).collect(),
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
        let mut tokens = Vec::new();
        self.tokens(text, &mut tokens, &mut Scratch::default());
        out.extend(tokens.iter().map(|t| &text[t.start..t.end]));
    }

    /// The tokens of `words(text)`, in order: they cover the text, each starts where
    /// the one before ends.
    pub fn tokens(&self, text: &str, out: &mut Vec<Token>, scratch: &mut Scratch) {
        self.tokens_from(text, 0, usize::MAX, out, scratch);
    }

    /// The tokens of the blocks of `text` from byte `base` (where a block starts), block
    /// after block until `out` holds `enough` tokens or the text ends; where the next
    /// block starts (`text.len()` at the end).
    fn tokens_from(
        &self,
        text: &str,
        mut base: usize,
        enough: usize,
        out: &mut Vec<Token>,
        scratch: &mut Scratch,
    ) -> usize {
        // blocks = re_han_default.split(sentence), re_han_default =
        // "([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)"; a Han block goes through
        // __cut_DAG_NO_HMM, any other through re_skip_default "(\r\n|\s)": white space
        // (a "\r\n" pair whole) and every other character are each a token of their own.
        while let Some(first) = text[base..].chars().next() {
            if out.len() >= enough {
                break;
            }
            let han = is_han_default(first);
            let end = text[base..]
                .find(|c| is_han_default(c) != han)
                .map_or(text.len(), |e| base + e);
            let block = &text[base..end];
            if han {
                self.dict.cut(block, base, out, scratch);
            } else {
                let mut chars = block.char_indices().peekable();
                while let Some((i, c)) = chars.next() {
                    let mut end = i + c.len_utf8();
                    if c == '\r' && chars.peek().is_some_and(|&(_, d)| d == '\n') {
                        chars.next();
                        end += 1;
                    }
                    out.push(Token {
                        start: base + i,
                        end: base + end,
                        node: NO_NODE,
                    });
                }
            }
            base = end;
        }
        base
    }

    /// `JiebaFeaturizer.features(text)`: each term and its weight, in first-seen order.
    ///
    /// The body's tokens are taken a few thousand at a time and counted as they come:
    /// what a text holds beyond its normalised body is its distinct terms, not a list
    /// of its tokens or terms (a 50 MB text has millions).
    pub fn each_feature(&self, text: &str, work: &mut Work, sink: &mut dyn FnMut(&str, i64)) {
        let body = body_text(&normalize(text));
        let body_chars = body.chars().filter(|&c| !is_space(c)).count();
        let Work {
            body_chars: _,
            body: _,
            cut,
            tokens,
            codes,
            grams,
            kept,
            terms,
            counts,
            index,
        } = work;
        tokens.clear();
        kept.clear();
        counts.clear();
        index.clear();
        let mut at = 0;
        loop {
            at = self.tokens_from(&body, at, CHUNK_TOKENS, tokens, cut);
            join_letters(&body, tokens);
            // _join_letters looks only at the last token kept: the last of this chunk
            // goes on with the next one
            let last = tokens.len() - usize::from(at < body.len());
            // what the tokens that are words of the dictionary are known to be, gathered
            // first: the loads are independent, so they overlap
            codes.clear();
            codes.extend(tokens[..last].iter().map(|t| {
                self.kinds
                    .get(t.node as usize)
                    .map_or(UNSEEN, |memo| memo.load(Ordering::Relaxed))
            }));
            grams.clear();
            terms.clear();
            for (&token, &code) in tokens[..last].iter().zip(codes.iter()) {
                self.terms_of(&body, token, code, grams, terms);
            }
            count(&body, grams, kept, terms, counts, index);
            tokens.drain(..last);
            if at == body.len() {
                break;
            }
        }
        // weight = _log_count(count) * (gram if term[0] == " " else idf.get(term, median))
        // // 1000
        for &(term, count, idf) in counts.iter() {
            let log_count = match self.log_counts.get(count as usize) {
                Some(&value) => value,
                None => log_count(count),
            };
            sink(
                text_of(&body, kept, &term),
                (log_count * idf).div_euclid(1000),
            );
        }
        // a text with very many distinct terms leaves no buffers of its size behind
        if work.counts.capacity() > KEEP_TERMS {
            *work = Work::default();
        }
        work.body_chars = body_chars;
        work.body = body;
    }

    /// The `Kind` of `word`, a token; `node` is its node when it is a word of the
    /// dictionary (`NO_NODE` if not known), `code` what `kinds` says of the node.
    #[inline]
    fn kind(&self, word: &str, node: u32, code: i32) -> Kind {
        match code {
            UNSEEN => {
                let kind = self.kind_of(word);
                if let Some(memo) = self.kinds.get(node as usize) {
                    let code = match kind {
                        Kind::NotATerm => NOT_A_TERM,
                        Kind::Letters => LETTERS,
                        Kind::Term(idf) => match i32::try_from(idf) {
                            Ok(idf) if idf > BY_TEXT => idf,
                            _ => BY_TEXT,
                        },
                    };
                    // (two threads may both classify a word first: they store the same)
                    memo.store(code, Ordering::Relaxed);
                }
                kind
            }
            NOT_A_TERM => Kind::NotATerm,
            LETTERS => Kind::Letters,
            BY_TEXT => self.kind_of(word),
            idf => Kind::Term(idf as i64),
        }
    }

    /// The `Kind` of `word`, from its text
    fn kind_of(&self, word: &str) -> Kind {
        if !self.is_word(word) {
            Kind::NotATerm
        } else if is_letters(word) {
            Kind::Letters
        } else {
            Kind::Term(self.idf.get(word.as_bytes()).unwrap_or(self.median))
        }
    }

    /// `JiebaFeaturizer._terms_of(token)` with their IDFs: none when it is not a word; the
    /// padded 4-grams of a word of an alphabet (written to `grams`, IDF `median // GRAM`);
    /// the word itself otherwise.
    fn terms_of(
        &self,
        body: &str,
        token: Token,
        code: i32,
        grams: &mut String,
        terms: &mut Vec<(Token, i64)>,
    ) {
        let word = &body[token.start..token.end];
        match self.kind(word, token.node, code) {
            Kind::NotATerm => {}
            Kind::Term(idf) => terms.push((token, idf)),
            Kind::Letters => {
                // padded = f" {token} "; terms = " " + padded[i:i + n] for each i
                let gram = self.median.div_euclid(GRAM as i64);
                let padded: Vec<char> = std::iter::once(' ')
                    .chain(word.chars())
                    .chain(std::iter::once(' '))
                    .collect();
                for chars in padded.windows(GRAM) {
                    let start = grams.len();
                    grams.push(' ');
                    grams.extend(chars);
                    let term = Token {
                        start,
                        end: grams.len(),
                        node: A_GRAM,
                    };
                    terms.push((term, gram));
                }
            }
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

/// `_join_letters(tokens)`: a single non-Han letter is glued to the run of letters before
/// it, in place. Tokens are consecutive ranges of `text`, so a joined token is a range too.
fn join_letters(text: &str, tokens: &mut Vec<Token>) {
    let mut kept = 0;
    for i in 0..tokens.len() {
        let token = tokens[i];
        let mut chars = text[token.start..token.end].chars();
        // len(token) == 1 and out and token.isalpha() and not _is_han(token)
        // and out[-1].isalpha() and _is_letters(out[-1])
        if let (Some(c), None, true) = (chars.next(), chars.next(), kept > 0) {
            let last = &mut tokens[kept - 1];
            let before = &text[last.start..last.end];
            if is_alpha(c) && !is_han(c) && str_is_alpha(before) && is_letters(before) {
                debug_assert_eq!(last.end, token.start);
                last.end = token.end;
                last.node = NO_NODE; // out[-1] += token: a new string
                continue;
            }
        }
        tokens[kept] = token;
        kept += 1;
    }
    tokens.truncate(kept);
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
