//! Python jieba's cut of a block with the HMM off, ported line for line: the prefix
//! dictionary of `Tokenizer.gen_pfdict`, the DAG of `get_DAG`, the route of `calc` and the
//! token stream of `__cut_DAG_NO_HMM` (jieba 0.42.1, `jieba/__init__.py`).
//!
//! A hash map of words and their prefixes loads in a fraction of the time a trie takes to
//! build from 349,000 words, and it is the reference's own data structure, so its answers
//! are the reference's by construction: the same frequencies (a repeated word keeps its
//! last one, `total` counts every line), the same log-probability sums in the same order,
//! the same tie-break (the larger end position wins, as Python's `max` over tuples does).

use crate::slice_map::SliceMap;

pub struct PrefixDict {
    /// `FREQ`: every word with its frequency, and every prefix of a word that is not a word
    /// itself with 0; keys are slices of the dictionary's text
    freq: SliceMap<u64>,
    /// `log(total)`, total = the sum of the frequencies of every line
    log_total: f64,
}

impl PrefixDict {
    /// The dictionary as `gen_pfdict` reads it: lines split on `\n`, `line.strip()` (ASCII
    /// white space, the file is read as bytes), decoded, `word, freq = line.split(' ')[:2]`,
    /// `freq = int(freq)`. A line the reference would refuse makes the core refuse.
    pub fn load(dict: Vec<u8>) -> Result<PrefixDict, String> {
        // the words, in order: (start, length, frequency)
        let mut words: Vec<(usize, usize, u64)> = Vec::with_capacity(400_000);
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
            let line = line.trim_ascii();
            let text = std::str::from_utf8(line).map_err(|_| bad("not UTF-8"))?;
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
            words.push((SliceMap::<u64>::offset_in(&dict, line), word.len(), count));
        }
        if total == 0 {
            return Err("the dictionary is empty".into());
        }
        let mut freq = SliceMap::new(dict, 2 * words.len())?;
        for &(start, len, count) in &words {
            // lfreq[word] = freq (a repeated word: its last frequency) ...
            freq.set(start, len, count, true);
            // ... and every prefix not yet present gets 0 (a prefix ends where a character
            // starts: at a byte that is not a UTF-8 continuation byte)
            for end in 1..len {
                if freq.text()[start + end] & 0xC0 != 0x80 {
                    freq.set(start, end, 0, false);
                }
            }
        }
        Ok(PrefixDict {
            freq,
            log_total: (total as f64).ln(),
        })
    }

    /// `__cut_DAG_NO_HMM(sentence)`: the tokens of one block, in order.
    pub fn cut<'t>(&self, sentence: &'t str, out: &mut Vec<&'t str>) {
        // byte offset of every character, and of the end
        let at: Vec<usize> = sentence
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(sentence.len()))
            .collect();
        let n = at.len() - 1;
        let piece = |from: usize, to: usize| &sentence[at[from]..at[to]]; // sentence[from:to]

        // get_DAG: the end positions x of the words sentence[k:x + 1] starting at k
        let mut dag: Vec<Vec<usize>> = Vec::with_capacity(n);
        for k in 0..n {
            let mut ends = Vec::new();
            let mut i = k;
            while i < n {
                match self.freq.get(piece(k, i + 1).as_bytes()) {
                    Some(count) => {
                        if count > 0 {
                            ends.push(i);
                        }
                    }
                    None => break,
                }
                i += 1;
            }
            if ends.is_empty() {
                ends.push(k);
            }
            dag.push(ends);
        }

        // calc: route[idx] = max((log(FREQ.get(sentence[idx:x + 1]) or 1) - logtotal
        //                         + route[x + 1][0], x) for x in DAG[idx])
        let mut route: Vec<(f64, usize)> = vec![(0.0, 0); n + 1];
        for idx in (0..n).rev() {
            let mut best: Option<(f64, usize)> = None;
            for &x in &dag[idx] {
                let count = match self.freq.get(piece(idx, x + 1).as_bytes()) {
                    Some(c) if c > 0 => c,
                    _ => 1,
                };
                let value = ((count as f64).ln() - self.log_total) + route[x + 1].0;
                // tuples compare by value, then by x; the ends come in increasing order
                if best.is_none_or(|(v, _)| value >= v) {
                    best = Some((value, x));
                }
            }
            route[idx] = best.expect("every DAG entry has an end");
        }

        // the tokens: runs of single ASCII letters and digits (re_eng) joined
        let mut x = 0;
        let mut buf_start: Option<usize> = None;
        while x < n {
            let y = route[x].1 + 1;
            let single_eng = y == x + 1 && sentence.as_bytes()[at[x]].is_ascii_alphanumeric();
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
