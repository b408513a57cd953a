//! `fingerprint.simhash_of_hashes`: the weighted 64-bit SimHash.
//!
//! Python: `set_weight = weights @ bits` (int64 per bit), `ones = 2 * set_weight >
//! int(weights.sum())`, bit 63 first. numpy's int64 arithmetic wraps on overflow, so the
//! sums here wrap too (they never come near it with real weights).

use crate::mmh3::hash64;

/// SimHash of `(feature, weight)` pairs, each feature hashed as its UTF-8 with `seed`.
pub fn simhash<'a>(features: impl IntoIterator<Item = (&'a str, i64)>, seed: u32) -> u64 {
    let mut set = [0i64; 64];
    let mut total = 0i64;
    for (feature, weight) in features {
        let h = hash64(feature.as_bytes(), seed);
        total = total.wrapping_add(weight);
        for (bit, sum) in set.iter_mut().enumerate() {
            // branch-free: add the weight where the bit is set
            let mask = -(((h >> bit) & 1) as i64);
            *sum = sum.wrapping_add(weight & mask);
        }
    }
    let mut out = 0u64;
    for (bit, sum) in set.iter().enumerate() {
        if sum.wrapping_mul(2) > total {
            out |= 1 << bit;
        }
    }
    out
}
