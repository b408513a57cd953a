//! Python jieba's cut of a block with the HMM off: the prefix dictionary of
//! `Tokenizer.gen_pfdict`, the DAG of `get_DAG`, the route of `calc` and the token stream
//! of `__cut_DAG_NO_HMM` (jieba 0.42.1, `jieba/__init__.py`).
//!
//! `FREQ` (every word and every prefix of a word) is held as a trie (`trie.rs`), so
//! `sentence[k:i + 1] in FREQ` for growing `i` is one step further from where the last
//! test stopped; each node holds the number of its frequency, whose `log(freq) -
//! logtotal` is computed once, at load. The keys and frequencies are the reference's by
//! construction: a repeated word keeps its last frequency, `total` counts every line, a
//! prefix that is not a word has frequency 0.
//! `get_DAG` and `calc` are fused: `calc` goes from the last position to the first and
//! needs only the ends of the words starting at `idx`, in increasing order, which is the
//! order the walk from `idx` finds them in; the log-probability sums are the reference's,
//! in the same order, and ties go to the later end as Python's `max` over tuples does.

use crate::trie::{Trie, TrieBuilder, ROOT, VALUES};
use rustc_hash::FxHashMap;

pub struct PrefixDict {
    /// `FREQ`; the value of a node is the place of its frequency in `weights`
    trie: Trie,
    /// `log(freq) - logtotal` of each frequency of the dictionary, NaN for 0 (a prefix,
    /// or a word listed with 0: not a word for `get_DAG`)
    weights: Vec<f64>,
    /// `log(1) - logtotal`: the weight of a character `FREQ` does not have
    unknown: f64,
}

/// `Token::node` of a token that is not a word of `FREQ` (or not known to be one)
pub const NO_NODE: u32 = u32::MAX;

/// A token: `text[start..end]`, and its node when it is a word of `FREQ` (`NO_NODE`
/// when it is not, or not known to be).
#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub node: u32,
}

/// Buffers of one cut, kept from block to block.
#[derive(Default)]
pub struct Scratch {
    chars: Vec<char>,
    /// byte offset of each character of the block, and of its end
    at: Vec<usize>,
    /// `route[idx] = (log-probability, end)`, `route[N] = (0, 0)`, and the node of the
    /// word `sentence[idx:end + 1]` (`NO_NODE` when it is not a word of `FREQ`)
    route: Vec<(f64, usize, u32)>,
}

impl PrefixDict {
    /// The dictionary as `gen_pfdict` reads it: lines split on `\n`, `line.strip()` (ASCII
    /// white space, the file is read as bytes), decoded, `word, freq = line.split(' ')[:2]`,
    /// `freq = int(freq)`. A line the reference would refuse makes the core refuse.
    pub fn load(dict: &[u8]) -> Result<PrefixDict, String> {
        let lines = dict.iter().filter(|&&b| b == b'\n').count();
        let mut trie = TrieBuilder::new(lines + lines / 2);
        // the frequencies, numbered as they come (0 first: the value of a prefix)
        let mut counts: FxHashMap<u64, u32> = FxHashMap::default();
        counts.insert(0, 0);
        let mut total: u64 = 0;
        let mut lines = dict.split(|&b| b == b'\n').peekable();
        let mut lineno = 0;
        while let Some(line) = lines.next() {
            lineno += 1;
            if line.is_empty() && lines.peek().is_none() {
                break; // the end of the last line, not a line
            }
            let bad = |why: &str| {
                format!("dictionary line {lineno}: {why} (the core reads only what jieba reads)")
            };
            let text = std::str::from_utf8(line.trim_ascii()).map_err(|_| bad("not UTF-8"))?;
            let mut parts = text.split(' ');
            let (word, count) = match (parts.next(), parts.next()) {
                (Some(w), Some(f)) if !w.is_empty() => (w, f),
                _ => return Err(bad("not `word freq`")),
            };
            // int(freq): plain ASCII digits only here; anything else makes the core refuse
            if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("a frequency that is not plain digits"));
            }
            let count: u64 = count.parse().map_err(|_| bad("a frequency out of range"))?;
            total = total
                .checked_add(count)
                .ok_or_else(|| bad("a total out of range"))?;
            // lfreq[word] = freq (a repeated word: its last frequency), and every prefix
            // not yet present gets 0: the nodes on the way
            let node = trie.insert(word)?;
            let next = counts.len() as u32;
            let value = *counts.entry(count).or_insert(next);
            if value >= VALUES {
                return Err(bad("more different frequencies than the core holds"));
            }
            trie.set(node, value);
        }
        if total == 0 {
            return Err("the dictionary is empty".into());
        }
        let log_total = (total as f64).ln();
        // log(FREQ.get(word) or 1) - logtotal, as calc computes it
        let mut weights = vec![f64::NAN; counts.len()];
        for (count, value) in counts {
            if count > 0 {
                weights[value as usize] = (count as f64).ln() - log_total;
            }
        }
        Ok(PrefixDict {
            trie: trie.finish(),
            weights,
            unknown: 1f64.ln() - log_total,
        })
    }

    /// Node ids are below this (for tables by node).
    pub fn ids(&self) -> usize {
        self.trie.ids()
    }

    /// The node of `key`, when `key` is a key of `FREQ` (a word or a prefix of one).
    pub fn find(&self, key: &str) -> Option<u32> {
        self.trie.find(key)
    }

    /// `__cut_DAG_NO_HMM(sentence)`: the tokens of one block, `sentence`, which starts
    /// at byte `base` of the text, in order.
    pub fn cut(&self, sentence: &str, base: usize, out: &mut Vec<Token>, scratch: &mut Scratch) {
        let Scratch { chars, at, route } = scratch;
        chars.clear();
        at.clear();
        for (i, c) in sentence.char_indices() {
            chars.push(c);
            at.push(base + i);
        }
        at.push(base + sentence.len());
        let n = chars.len();
        route.clear();
        route.resize(n + 1, (0.0, 0, NO_NODE));

        // calc: route[idx] = max((log(FREQ.get(sentence[idx:x + 1]) or 1) - logtotal
        //                         + route[x + 1][0], x) for x in DAG[idx])
        // with DAG[idx] (get_DAG) the ends x of the words sentence[idx:x + 1] of frequency
        // > 0 found while sentence[idx:x + 1] in FREQ, or [idx] when there is none
        for idx in (0..n).rev() {
            let mut best: Option<(f64, usize, u32)> = None;
            let mut x = idx;
            let mut node = self.trie.child(ROOT, chars[idx]);
            while let Some(key) = node {
                let weight = self.weights[self.trie.value(key) as usize];
                if !weight.is_nan() {
                    let value = weight + route[x + 1].0;
                    // tuples compare by value, then by x; the ends come in increasing order
                    if best.is_none_or(|(v, _, _)| value >= v) {
                        best = Some((value, x, key));
                    }
                }
                x += 1;
                if x == n {
                    break;
                }
                node = self.trie.child(key, chars[x]);
            }
            route[idx] = best.unwrap_or((self.unknown + route[idx + 1].0, idx, NO_NODE));
        }

        // the tokens: runs of single ASCII letters and digits (re_eng) joined
        let piece = |from: usize, to: usize, node: u32| Token {
            start: at[from],
            end: at[to],
            node,
        }; // sentence[from:to]
        let mut x = 0;
        let mut buf_start: Option<usize> = None;
        while x < n {
            let (_, end, node) = route[x];
            let y = end + 1;
            let single_eng = y == x + 1 && chars[x].is_ascii_alphanumeric();
            if single_eng {
                buf_start.get_or_insert(x);
            } else {
                if let Some(start) = buf_start.take() {
                    out.push(piece(start, x, NO_NODE));
                }
                out.push(piece(x, y, node));
            }
            x = y;
        }
        if let Some(start) = buf_start {
            out.push(piece(start, n, NO_NODE));
        }
    }
}
