//! A trie of characters held in one open-addressing hash table of 8-byte slots: a node is
//! the slot of the edge that leads to it (parent, character), and that slot also holds the
//! node's value (a small number: the caller keeps a table of what it stands for). A step
//! down the trie is one probe of one table: one cache line, where a map of edges and a
//! table of values by node would touch three, and a small table keeps more of the part a
//! text uses in the cache.
//!
//! The table is at most 60% full (linear probing; a failed step, which ends every walk,
//! stops at the first empty slot). A node's id is its slot: ids are below `ids()` and
//! change only while the trie is built (`TrieBuilder`).

/// The root's id (the empty key); no slot has it.
pub const ROOT: u32 = (1 << PARENT_BITS) - 2;
/// A node's value is below this.
pub const VALUES: u32 = 1 << VALUE_BITS;

/// A slot: parent (24 bits), value (19 bits), character (21 bits), high to low
const PARENT_BITS: u32 = 24;
const VALUE_BITS: u32 = 19;
const CHAR_BITS: u32 = 21;
const VALUE_SHIFT: u32 = CHAR_BITS;
const PARENT_SHIFT: u32 = CHAR_BITS + VALUE_BITS;
const VALUE_MASK: u64 = ((VALUES - 1) as u64) << VALUE_SHIFT;
/// An empty slot (its parent is no node)
const EMPTY: u64 = u64::MAX;
/// `first` of a character the root has no child by
const NONE: u32 = u32::MAX;
/// The root's children by the characters below this are also in a plain array.
const DIRECT: usize = 0x1_0000;
/// The largest share of the slots in use
const LOAD: f64 = 0.6;

#[inline(always)]
fn edge(parent: u32, c: u32) -> u64 {
    ((parent as u64) << PARENT_SHIFT) | c as u64
}

pub struct Trie {
    slots: Vec<u64>,
    /// a Bloom filter of the edges, about 8 bits an edge: most failed steps (more than
    /// half the steps of a text: each walk ends with one) are answered here, from a table
    /// small enough to stay in the cache, instead of by a probe of `slots`
    filter: Vec<u64>,
    /// 64 - log2(filter.len())
    filter_shift: u32,
    /// 64 - log2(slots.len()): the home slot of an edge is the top bits of its hash
    shift: u32,
    /// the root's child by each character below `DIRECT` (`NONE`: none)
    first: Vec<u32>,
}

impl Trie {
    fn with_slots(slots: usize) -> Trie {
        let slots = slots.next_power_of_two().max(2);
        Trie {
            slots: vec![EMPTY; slots],
            filter: vec![u64::MAX; 1], // lets every edge through until `finish`
            filter_shift: 64,
            shift: 64 - slots.trailing_zeros(),
            first: vec![NONE; DIRECT],
        }
    }

    /// The word of `filter` of an edge, and its two bits in it
    #[inline(always)]
    fn filter_bits(&self, edge: u64) -> (usize, u64) {
        let h = edge.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        // (a shift by 64 is no shift: the one word of an unfiltered trie is word 0)
        let word = h.checked_shr(self.filter_shift).unwrap_or(0) as usize;
        (word, (1 << (h & 63)) | (1 << ((h >> 6) & 63)))
    }

    /// Fill the filter from the edges in the table.
    fn build_filter(&mut self) {
        let edges = self.slots.iter().filter(|&&s| s != EMPTY).count();
        let words = (edges / 8).next_power_of_two().max(1);
        self.filter = vec![0; words];
        self.filter_shift = 64 - words.trailing_zeros();
        for i in 0..self.slots.len() {
            if self.slots[i] != EMPTY {
                let (word, bits) = self.filter_bits(self.slots[i] & !VALUE_MASK);
                self.filter[word] |= bits;
            }
        }
    }

    /// Node ids are below this (for tables by node).
    pub fn ids(&self) -> usize {
        self.slots.len()
    }

    #[inline(always)]
    fn home(&self, edge: u64) -> usize {
        (edge.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The child of `node` by `c`.
    #[inline(always)]
    pub fn child(&self, node: u32, c: char) -> Option<u32> {
        let c = c as u32;
        if node == ROOT && (c as usize) < DIRECT {
            return match self.first[c as usize] {
                NONE => None,
                child => Some(child),
            };
        }
        let edge = edge(node, c);
        let (word, bits) = self.filter_bits(edge);
        if self.filter[word] & bits != bits {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(edge);
        loop {
            let slot = self.slots[i];
            if slot & !VALUE_MASK == edge {
                return Some(i as u32);
            }
            if slot == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The node of `key`, when it is a key of the trie (not the root).
    pub fn find(&self, key: &str) -> Option<u32> {
        let mut node = ROOT;
        for c in key.chars() {
            node = self.child(node, c)?;
        }
        (node != ROOT).then_some(node)
    }

    /// The value of `node` (not the root).
    #[inline(always)]
    pub fn value(&self, node: u32) -> u32 {
        ((self.slots[node as usize] & VALUE_MASK) >> VALUE_SHIFT) as u32
    }

    /// A slot for a new edge with value 0; the table has a free one.
    fn place(&mut self, parent: u32, c: u32) -> u32 {
        let edge = edge(parent, c);
        let mask = self.slots.len() - 1;
        let mut i = self.home(edge);
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = edge;
        if parent == ROOT && (c as usize) < DIRECT {
            self.first[c as usize] = i as u32;
        }
        i as u32
    }
}

/// A trie being filled; `finish` gives the trie.
pub struct TrieBuilder {
    trie: Trie,
    /// every node in the order it was made: its parent's place in this list (or ROOT)
    /// and its character; a parent comes before its children
    made: Vec<(u32, u32)>,
    /// the slot of each node of `made`
    slot_of: Vec<u32>,
    /// the place in `made` of each slot's node
    made_at: Vec<u32>,
}

impl TrieBuilder {
    /// Room for about `nodes` nodes before the table grows.
    pub fn new(nodes: usize) -> TrieBuilder {
        let slots = (nodes as f64 / LOAD) as usize + 1;
        let trie = Trie::with_slots(slots);
        let made_at = vec![NONE; trie.ids()];
        TrieBuilder {
            trie,
            made: Vec::with_capacity(nodes),
            slot_of: Vec::with_capacity(nodes),
            made_at,
        }
    }

    /// The node of `key` (not empty), made with value 0 along with each missing prefix
    /// of it. Its id holds until the next `insert`.
    pub fn insert(&mut self, key: &str) -> Result<u32, String> {
        let room = self.made.len() + key.chars().count();
        if room as f64 > LOAD * self.trie.ids() as f64 {
            self.grow(room)?;
        }
        let mut node = ROOT;
        for c in key.chars() {
            node = match self.trie.child(node, c) {
                Some(child) => child,
                None => {
                    let parent = match node {
                        ROOT => ROOT,
                        node => self.made_at[node as usize],
                    };
                    let child = self.trie.place(node, c as u32);
                    self.made_at[child as usize] = self.made.len() as u32;
                    self.made.push((parent, c as u32));
                    self.slot_of.push(child);
                    child
                }
            };
        }
        Ok(node)
    }

    /// Set the value of `node` (an id `insert` gave, not the root) to `value` < `VALUES`.
    pub fn set(&mut self, node: u32, value: u32) {
        assert!(value < VALUES, "a trie value out of range");
        let slot = &mut self.trie.slots[node as usize];
        *slot = (*slot & !VALUE_MASK) | ((value as u64) << VALUE_SHIFT);
    }

    /// A table twice as large, or more, with room for `nodes`: every node placed again,
    /// parents first.
    fn grow(&mut self, nodes: usize) -> Result<(), String> {
        let mut slots = 2 * self.trie.ids();
        while nodes as f64 > LOAD * slots as f64 {
            slots *= 2;
        }
        if slots > ROOT as usize {
            return Err("a dictionary of too many prefixes for the core".into());
        }
        let old = std::mem::replace(&mut self.trie, Trie::with_slots(slots));
        self.made_at = vec![NONE; self.trie.ids()];
        for i in 0..self.made.len() {
            let (parent, c) = self.made[i];
            let parent = match parent {
                ROOT => ROOT,
                parent => self.slot_of[parent as usize],
            };
            let slot = self.trie.place(parent, c);
            let value = old.value(self.slot_of[i]);
            self.slot_of[i] = slot;
            self.made_at[slot as usize] = i as u32;
            self.set(slot, value);
        }
        Ok(())
    }

    pub fn finish(self) -> Trie {
        let mut trie = self.trie;
        trie.build_filter();
        trie
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_prefixes_values_and_growth() {
        let words = [
            "中华",
            "中华人民",
            "中",
            "华人",
            "a",
            "ab",
            "abc",
            "x\u{10000}y",
            "\u{10FFFF}",
        ];
        // room for 2 nodes: the table grows several times
        let mut builder = TrieBuilder::new(2);
        for (i, w) in words.iter().enumerate() {
            let node = builder.insert(w).unwrap();
            builder.set(node, VALUES - 1 - i as u32);
        }
        let trie = builder.finish();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(
                trie.value(trie.find(w).unwrap()),
                VALUES - 1 - i as u32,
                "{w}"
            );
        }
        for prefix in ["中华人", "x", "x\u{10000}"] {
            assert_eq!(trie.value(trie.find(prefix).unwrap()), 0, "{prefix}");
        }
        for absent in ["", "人", "中华人民共和国", "b", "abcd", "y", "\u{10FFFE}"] {
            assert_eq!(trie.find(absent), None, "{absent}");
        }
        let node = trie.find("中华").unwrap();
        assert_eq!(trie.child(node, '人'), trie.find("中华人"));
        assert_eq!(trie.child(ROOT, '中'), trie.find("中"));
    }
}
