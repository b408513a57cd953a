//! A text's features counted as its terms come (`Counter(terms)` of
//! `JiebaFeaturizer.features`), chunk after chunk of its tokens: what a text holds beyond
//! its normalised body is its distinct terms, not a list of its tokens or terms.

use crate::jieba_cut::{Scratch, Token};
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;

/// The node of a term that is a 4-gram: its range is in `Work::grams`, not in the text
/// (no node of the dictionary has it: ids are below 2^31)
pub const A_GRAM: u32 = u32::MAX - 2;

/// Tokens taken from the body at a time (a few blocks more when a block is long)
pub const CHUNK_TOKENS: usize = 4096;

/// The most distinct terms whose buffers a `Work` keeps for the next text
pub const KEEP_TERMS: usize = 1 << 18;

/// The node of a 4-gram term kept in `Work::kept` (a distinct gram of the text)
const KEPT_GRAM: u32 = u32::MAX - 3;

/// The buffers of one text's features, kept from text to text (one per thread).
#[derive(Default)]
pub struct Work {
    /// the characters of the last text's body that are not white space (`str.isspace`):
    /// `len(shorts.squeezed(text))`, what tells a short text (text/shorts.py)
    pub body_chars: usize,
    /// the last text's body (`shorts.body(text)`: normalized, boilerplate lines dropped)
    pub body: String,
    pub cut: Scratch,
    /// the tokens of a chunk of the body
    pub tokens: Vec<Token>,
    /// `kinds` of each token's node
    pub codes: Vec<i32>,
    /// the 4-grams of the chunk's words of an alphabet, one after the other
    pub grams: String,
    /// the distinct 4-grams of the text, for `counts` (node `KEPT_GRAM`)
    pub kept: String,
    /// the chunk's terms, in order, with their IDFs: tokens, or (node `A_GRAM`) ranges
    /// of `grams`
    pub terms: Vec<(Token, i64)>,
    /// `Counter(terms)`: each distinct term (its first occurrence), its count and its IDF
    pub counts: Vec<(Token, u32, i64)>,
    /// the positions in `counts`, by the term's text
    pub index: HashTable<u32>,
}

/// The text of a counted term: a range of the body, or (`KEPT_GRAM`) of `kept`
#[inline]
pub fn text_of<'a>(body: &'a str, kept: &'a str, t: &Token) -> &'a str {
    if t.node == KEPT_GRAM {
        &kept[t.start..t.end]
    } else {
        &body[t.start..t.end]
    }
}

/// `Counter(terms)` continued with a chunk's terms, in first-seen order; a 4-gram seen
/// the first time is copied from `grams` to `kept`.
pub fn count(
    body: &str,
    grams: &str,
    kept: &mut String,
    terms: &[(Token, i64)],
    counts: &mut Vec<(Token, u32, i64)>,
    index: &mut HashTable<u32>,
) {
    for &(term, idf) in terms {
        let key = if term.node == A_GRAM {
            &grams[term.start..term.end]
        } else {
            &body[term.start..term.end]
        };
        let hash = FxBuildHasher.hash_one(key);
        let found = index.find(hash, |&i| text_of(body, kept, &counts[i as usize].0) == key);
        match found {
            Some(&i) => counts[i as usize].1 += 1,
            None => {
                let term = if term.node == A_GRAM {
                    let start = kept.len();
                    kept.push_str(key);
                    Token {
                        start,
                        end: kept.len(),
                        node: KEPT_GRAM,
                    }
                } else {
                    term
                };
                index.insert_unique(hash, counts.len() as u32, |&i| {
                    FxBuildHasher.hash_one(text_of(body, kept, &counts[i as usize].0))
                });
                counts.push((term, 1, idf));
            }
        }
    }
}
