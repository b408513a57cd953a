//! Python jieba's cut of a block with the HMM off: the prefix dictionary of
//! `Tokenizer.gen_pfdict`, the DAG of `get_DAG`, the route of `calc` and the token stream
//! of `__cut_DAG_NO_HMM` (jieba 0.42.1, `jieba/__init__.py`).
//!
//! `FREQ` (every word and every prefix of a word) is held as a trie: one node per key,
//! whose edges are one hash table keyed by (node, next character), so a step of the DAG
//! walk is one integer lookup, and `sentence[k:i + 1] in FREQ` for growing `i` is one step
//! further from where the last test stopped. The keys and frequencies are the reference's
//! by construction: a repeated word keeps its last frequency, `total` counts every line,
//! a prefix that is not a word has frequency 0. `get_DAG` and `calc` are fused: `calc`
//! goes from the last position to the first and needs only the ends of the words
//! starting at `idx`, in increasing order, which is the order the walk from `idx` finds
//! them in; the log-probability sums are the reference's, in the same order, and ties go
//! to the later end as Python's `max` over tuples does.

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

/// The children of the root for the characters below this are in a plain array.
const DIRECT: usize = 0x1_0000;

pub struct PrefixDict {
    /// the root's child for each character below `DIRECT` (0: none; the root is node 0)
    first: Vec<u32>,
    /// `(node << 32) | character` -> child node, for every other edge
    edges: HashMap<u64, u32, FxBuildHasher>,
    /// per node: `log(FREQ[key]) - logtotal` when its key is a word of frequency > 0,
    /// NaN otherwise (a prefix, or a word listed with frequency 0)
    weight: Vec<f64>,
    /// `-logtotal`: `log(1) - logtotal`, the weight of a character `FREQ` does not have
    unknown: f64,
}

/// Buffers of one cut, kept from block to block.
#[derive(Default)]
pub struct Scratch {
    chars: Vec<char>,
    /// byte offset of each character of the block, and of its end
    at: Vec<usize>,
    /// `route[idx] = (log-probability, end)`, `route[N] = (0, 0)`
    route: Vec<(f64, usize)>,
}

impl PrefixDict {
    /// The dictionary as `gen_pfdict` reads it: lines split on `\n`, `line.strip()` (ASCII
    /// white space, the file is read as bytes), decoded, `word, freq = line.split(' ')[:2]`,
    /// `freq = int(freq)`. A line the reference would refuse makes the core refuse.
    pub fn load(dict: &[u8]) -> Result<PrefixDict, String> {
        let mut trie = PrefixDict {
            first: vec![0; DIRECT],
            edges: HashMap::with_capacity_and_hasher(700_000, FxBuildHasher),
            weight: Vec::with_capacity(1_000_000),
            unknown: 0.0,
        };
        // per node: its frequency (0 for a prefix)
        let mut freq: Vec<u64> = Vec::with_capacity(1_000_000);
        freq.push(0); // the root: the empty string, never looked up
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
            let mut node = 0u32;
            for c in word.chars() {
                node = match trie.child(node, c) {
                    Some(child) => child,
                    None => {
                        let child = u32::try_from(freq.len())
                            .map_err(|_| bad("more than 2^32 prefixes"))?;
                        freq.push(0);
                        trie.add_child(node, c, child);
                        child
                    }
                };
            }
            freq[node as usize] = count;
        }
        if total == 0 {
            return Err("the dictionary is empty".into());
        }
        let log_total = (total as f64).ln();
        // log(FREQ.get(word) or 1) - logtotal, as calc computes it
        trie.weight = freq
            .into_iter()
            .map(|f| {
                if f > 0 {
                    (f as f64).ln() - log_total
                } else {
                    f64::NAN
                }
            })
            .collect();
        trie.unknown = 1f64.ln() - log_total;
        Ok(trie)
    }

    #[inline(always)]
    fn child(&self, node: u32, c: char) -> Option<u32> {
        if node == 0 && (c as usize) < DIRECT {
            return match self.first[c as usize] {
                0 => None,
                child => Some(child),
            };
        }
        self.edges.get(&(((node as u64) << 32) | c as u64)).copied()
    }

    fn add_child(&mut self, node: u32, c: char, child: u32) {
        if node == 0 && (c as usize) < DIRECT {
            self.first[c as usize] = child;
        } else {
            self.edges.insert(((node as u64) << 32) | c as u64, child);
        }
    }

    /// `__cut_DAG_NO_HMM(sentence)`: the tokens of one block, in order.
    pub fn cut<'t>(&self, sentence: &'t str, out: &mut Vec<&'t str>, scratch: &mut Scratch) {
        let Scratch { chars, at, route } = scratch;
        chars.clear();
        at.clear();
        for (i, c) in sentence.char_indices() {
            chars.push(c);
            at.push(i);
        }
        at.push(sentence.len());
        let n = chars.len();
        route.clear();
        route.resize(n + 1, (0.0, 0));

        // calc: route[idx] = max((log(FREQ.get(sentence[idx:x + 1]) or 1) - logtotal
        //                         + route[x + 1][0], x) for x in DAG[idx])
        // with DAG[idx] (get_DAG) the ends x of the words sentence[idx:x + 1] of frequency
        // > 0 found while sentence[idx:x + 1] in FREQ, or [idx] when there is none
        for idx in (0..n).rev() {
            let mut best: Option<(f64, usize)> = None;
            let mut x = idx;
            let mut node = self.child(0, chars[idx]);
            while let Some(key) = node {
                let weight = self.weight[key as usize];
                if !weight.is_nan() {
                    let value = weight + route[x + 1].0;
                    // tuples compare by value, then by x; the ends come in increasing order
                    if best.is_none_or(|(v, _)| value >= v) {
                        best = Some((value, x));
                    }
                }
                x += 1;
                if x == n {
                    break;
                }
                node = self.child(key, chars[x]);
            }
            route[idx] = best.unwrap_or((self.unknown + route[idx + 1].0, idx));
        }

        // the tokens: runs of single ASCII letters and digits (re_eng) joined
        let piece = |from: usize, to: usize| &sentence[at[from]..at[to]]; // sentence[from:to]
        let mut x = 0;
        let mut buf_start: Option<usize> = None;
        while x < n {
            let y = route[x].1 + 1;
            let single_eng = y == x + 1 && chars[x].is_ascii_alphanumeric();
            if single_eng {
                buf_start.get_or_insert(x);
            } else {
                if let Some(start) = buf_start.take() {
                    out.push(piece(start, x));
                }
                out.push(piece(x, y));
            }
            x = y;
        }
        if let Some(start) = buf_start {
            out.push(piece(start, n));
        }
    }
}
