//! `features.ShingleFeaturizer` (version 1): the overlapping character n-grams of the
//! letters and digits of the normalised text, weighted by count.

use crate::normalize::normalize;
use crate::unicode::is_alnum;
use rustc_hash::FxHashMap;

/// `ShingleFeaturizer(n).features(text)`, in first-seen order.
pub fn each_feature(text: &str, n: usize, sink: &mut dyn FnMut(&str, i64)) {
    // chars = "".join(ch for ch in normalize(text) if ch.isalnum())
    let chars: Vec<char> = normalize(text).chars().filter(|&c| is_alnum(c)).collect();
    // if 0 < len(chars) < n: {chars: 1}
    if !chars.is_empty() && chars.len() < n {
        return sink(&chars.iter().collect::<String>(), 1);
    }
    // Counter(chars[i:i + n] for i in range(len(chars) - n + 1))
    let mut index: FxHashMap<&[char], usize> = FxHashMap::default();
    let mut counts: Vec<(&[char], i64)> = Vec::new();
    for gram in chars.windows(n) {
        match index.get(gram) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(gram, counts.len());
                counts.push((gram, 1));
            }
        }
    }
    let mut term = String::new();
    for (gram, count) in counts {
        term.clear();
        term.extend(gram);
        sink(&term, count);
    }
}
