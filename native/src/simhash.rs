//! `fingerprint.simhash_of_hashes`: the weighted 64-bit SimHash.
//!
//! Python: `set_weight = weights @ bits` (int64 per bit), `ones = 2 * set_weight >
//! int(weights.sum())`, bit 63 first. numpy's int64 arithmetic wraps on overflow, so the
//! sums here wrap too (they never come near it with real weights).

use crate::mmh3::hash64;

/// The sums of one SimHash, fed a feature at a time.
pub struct SimHash {
    seed: u32,
    set: [i64; 64],
    total: i64,
    pub features: usize,
}

impl SimHash {
    pub fn new(seed: u32) -> SimHash {
        SimHash {
            seed,
            set: [0; 64],
            total: 0,
            features: 0,
        }
    }

    /// One feature: its weight counts for every bit set in its hash (UTF-8, `seed`).
    #[inline]
    pub fn add(&mut self, feature: &str, weight: i64) {
        let h = hash64(feature.as_bytes(), self.seed);
        self.features += 1;
        self.total = self.total.wrapping_add(weight);
        for (bit, sum) in self.set.iter_mut().enumerate() {
            // branch-free: add the weight where the bit is set
            let mask = -(((h >> bit) & 1) as i64);
            *sum = sum.wrapping_add(weight & mask);
        }
    }

    /// `Fingerprinter.margins`: `2 * set_weight[i] - total` per bit, bit 63 first (wrapping,
    /// as numpy's int64); bit i of `finish` is 1 exactly where its margin is positive.
    pub fn margins(&self) -> [i64; 64] {
        let mut out = [0i64; 64];
        for (bit, sum) in self.set.iter().enumerate() {
            out[63 - bit] = sum.wrapping_mul(2).wrapping_sub(self.total);
        }
        out
    }

    /// Bit i is 1 when `2 * set_weight[i] > total`.
    pub fn finish(&self) -> u64 {
        let mut out = 0u64;
        for (bit, sum) in self.set.iter().enumerate() {
            if sum.wrapping_mul(2) > self.total {
                out |= 1 << bit;
            }
        }
        out
    }
}
