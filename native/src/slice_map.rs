//! A hash map whose keys are slices of one text it owns: no allocation per key. The IDF
//! table is about 270,000 keys; one allocation each would be most of its load time.

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;
use std::hash::BuildHasher;

pub struct SliceMap<V: Copy> {
    text: Vec<u8>,
    /// (start, length) of each key in `text`, and its value
    table: HashTable<(u32, u32, V)>,
}

fn hash(key: &[u8]) -> u64 {
    FxBuildHasher.hash_one(key)
}

fn slice(text: &[u8], start: u32, len: u32) -> &[u8] {
    &text[start as usize..(start + len) as usize]
}

impl<V: Copy> SliceMap<V> {
    /// An empty map over ``text`` (at most 4 GiB), room for ``capacity`` keys.
    pub fn new(text: Vec<u8>, capacity: usize) -> Result<SliceMap<V>, String> {
        if text.len() > u32::MAX as usize {
            return Err("a table over 4 GiB".into());
        }
        Ok(SliceMap {
            text,
            table: HashTable::with_capacity(capacity),
        })
    }

    pub fn text(&self) -> &[u8] {
        &self.text
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The value of ``key``, if it is a key.
    pub fn get(&self, key: &[u8]) -> Option<V> {
        let text = &self.text;
        self.table
            .find(hash(key), |&(s, l, _)| slice(text, s, l) == key)
            .map(|&(_, _, v)| v)
    }

    /// Make ``text[start..start + len]`` a key with ``value``; an existing key keeps its
    /// value unless ``replace``.
    pub fn set(&mut self, start: usize, len: usize, value: V, replace: bool) {
        let SliceMap { text, table } = self;
        let key = &text[start..start + len];
        let entry = table.entry(
            hash(key),
            |&(s, l, _)| slice(text, s, l) == key,
            |&(s, l, _)| hash(slice(text, s, l)),
        );
        match entry {
            Entry::Occupied(mut found) => {
                if replace {
                    found.get_mut().2 = value;
                }
            }
            Entry::Vacant(free) => {
                free.insert((start as u32, len as u32, value));
            }
        }
    }

    /// Every key and its value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], V)> {
        self.table
            .iter()
            .map(|&(s, l, v)| (slice(&self.text, s, l), v))
    }

    /// The offset in ``text`` of ``part``, a slice of it.
    pub fn offset_in(text: &[u8], part: &[u8]) -> usize {
        part.as_ptr() as usize - text.as_ptr() as usize
    }
}
