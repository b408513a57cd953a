//! JSON lines of texts, read and fingerprinted in one pass: the fast path of corpus.py's
//! JSON lines reader (`_jsonl`, `_from_fields`) and batches.py's fingerprinting, for a
//! block of decompressed bytes.
//!
//! The reader is the reference. A line is read here only when it is plainly a good record
//! of text: UTF-8, one JSON object that serde_json parses (which refuses what Python's
//! `json` might read another way: NaN, numbers out of range, lone surrogates), none of the
//! five field names twice, an id that is a non-empty string of at most 1,024 bytes or a
//! JSON integer, a text that is a string, no simhash (absent or null). Every other line
//! that is not blank goes back to the caller, raw with its line end, and its number, for
//! the reader to read (and reject with its own reason). Lines end as Python's universal
//! newlines end them: `\n`, `\r\n` or a lone `\r`.

use crate::{fingerprint_batch, Featurize, Works};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The five input fields of a record (corpus.Fields).
pub struct Fields<'a> {
    pub id: &'a str,
    pub text: &'a str,
    pub simhash: &'a str,
    pub title: &'a str,
    pub featurizer: &'a str,
}

const MAX_ID_BYTES: usize = 1024;

/// What one block came to.
#[derive(Default, Debug, PartialEq)]
pub struct Block {
    /// Bytes of whole lines read; the rest of the block is a line not finished yet
    pub consumed: usize,
    /// The number of the first line not read
    pub next_line: i64,
    /// The records read here: line number, id, title, text length in characters and in
    /// UTF-8 bytes, fingerprint and status (crate::Status)
    pub lines: Vec<i64>,
    pub ids: Vec<String>,
    pub titles: Vec<Option<String>>,
    pub lengths: Vec<i64>,
    pub sizes: Vec<i64>,
    pub hashes: Vec<u64>,
    pub status: Vec<u8>,
    /// The lines left to the reader: number and bytes (line end included)
    pub other_lines: Vec<i64>,
    pub others: Vec<Vec<u8>>,
}

/// One line as a record, if it is plainly a good one: (id, text, title).
fn plain<'a>(line: &'a [u8], fields: &Fields) -> Option<(String, String, Option<String>)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de.deserialize_map(Pick { fields }).ok()?;
    de.end().ok()?;
    let id = match found.id? {
        Value::String(s) if !s.is_empty() && s.len() <= MAX_ID_BYTES => s,
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        _ => return None,
    };
    let Some(Value::String(body)) = found.text else {
        return None;
    };
    if !matches!(found.simhash, None | Some(Value::Null)) {
        return None;
    }
    let title = match found.title {
        Some(Value::String(t)) => Some(t),
        _ => None,
    };
    Some((id, body, title))
}

#[derive(Default)]
struct Found {
    id: Option<Value>,
    text: Option<Value>,
    simhash: Option<Value>,
    title: Option<Value>,
    twice: bool,
}

struct Pick<'f, 'a> {
    fields: &'f Fields<'a>,
}

impl<'de> Visitor<'de> for Pick<'_, '_> {
    type Value = Found;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Found, M::Error> {
        let mut found = Found::default();
        let mut seen_featurizer = false;
        while let Some(key) = map.next_key_seed(Key(self.fields))? {
            let slot = match key {
                Which::Id => &mut found.id,
                Which::Text => &mut found.text,
                Which::Simhash => &mut found.simhash,
                Which::Title => &mut found.title,
                Which::Featurizer => {
                    found.twice |= seen_featurizer;
                    seen_featurizer = true;
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                Which::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            found.twice |= slot.is_some();
            *slot = Some(map.next_value::<Value>()?);
        }
        if found.twice {
            return Err(serde::de::Error::custom("a field twice"));
        }
        Ok(found)
    }
}

enum Which {
    Id,
    Text,
    Simhash,
    Title,
    Featurizer,
    Other,
}

struct Key<'f, 'a>(&'f Fields<'a>);

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = Which;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Which, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = Which;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Which, E> {
        let f = self.0;
        Ok(if key == f.id {
            Which::Id
        } else if key == f.text {
            Which::Text
        } else if key == f.simhash {
            Which::Simhash
        } else if key == f.title {
            Which::Title
        } else if key == f.featurizer {
            Which::Featurizer
        } else {
            Which::Other
        })
    }
}

/// Python's `str.strip()` of a line of ASCII leaves nothing (a blank line); a line with
/// other whitespace goes to the reader, which decides.
fn blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f))
}

/// The end of the line starting at `start` (after its line end), or None when the block
/// does not hold all of it (unless `last`: the block ends the input).
fn line_end(data: &[u8], start: usize, last: bool) -> Option<usize> {
    match memchr2(b'\n', b'\r', &data[start..]) {
        Some(at) => {
            let at = start + at;
            if data[at] == b'\n' {
                Some(at + 1)
            } else if at + 1 < data.len() {
                Some(if data[at + 1] == b'\n' {
                    at + 2
                } else {
                    at + 1
                })
            } else if last {
                Some(at + 1)
            } else {
                None // a \r at the block's end: a \r\n may go on in the next block
            }
        }
        None if last && start < data.len() => Some(data.len()),
        None => None,
    }
}

fn memchr2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&c| c == a || c == b)
}

/// Reads the whole lines of `data` (all of it when `last`), numbered from `first_line`,
/// and fingerprints the texts of the plain records on `threads` threads.
pub fn read_block<F: Featurize>(
    featurizer: &F,
    works: &Works<F::Work>,
    data: &[u8],
    first_line: i64,
    last: bool,
    fields: &Fields,
    seed: u32,
    threads: usize,
) -> Block {
    let mut block = Block::default();
    let mut texts: Vec<String> = Vec::new();
    let (mut start, mut number) = (0, first_line);
    while let Some(end) = line_end(data, start, last) {
        let line = &data[start..end];
        if !blank(line) {
            match plain(line, fields) {
                Some((id, text, title)) => {
                    block.lines.push(number);
                    block.ids.push(id);
                    block.titles.push(title);
                    block.lengths.push(text.chars().count() as i64);
                    block.sizes.push(text.len() as i64);
                    texts.push(text);
                }
                None => {
                    block.other_lines.push(number);
                    block.others.push(line.to_vec());
                }
            }
        }
        start = end;
        number += 1;
    }
    block.consumed = start;
    block.next_line = number;
    let strs: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
    (block.hashes, block.status) = fingerprint_batch(featurizer, &strs, seed, threads, works);
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shingles;

    const FIELDS: Fields = Fields {
        id: "id",
        text: "text",
        simhash: "simhash",
        title: "title",
        featurizer: "featurizer",
    };

    fn read(data: &[u8], last: bool) -> Block {
        read_block(
            &Shingles(3),
            &Works::default(),
            data,
            1,
            last,
            &FIELDS,
            0,
            1,
        )
    }

    #[test]
    fn plain_lines_and_the_rest() {
        let data = b"{\"id\": \"a\", \"text\": \"hello there\", \"title\": \"T\"}\n\n  \r\n{\"id\": 7, \"text\": \"x\\ny\"}\r{\"id\": 1.5, \"text\": \"t\"}\n[1]\n{\"id\": \"b\", \"text\": \"t\", \"simhash\": \"00ff\"}\n{\"id\": \"c\", \"text\": \"t\", \"text\": \"u\"}\n{\"id\": \"d\", \"text\": \"ok\"}";
        let b = read(data, true);
        assert_eq!(b.lines, vec![1, 4, 9]);
        assert_eq!(b.ids, vec!["a", "7", "d"]);
        assert_eq!(b.titles, vec![Some("T".to_string()), None, None]);
        assert_eq!(b.lengths, vec![11, 3, 2]);
        assert_eq!(b.other_lines, vec![5, 6, 7, 8]);
        assert_eq!(b.others[0], b"{\"id\": 1.5, \"text\": \"t\"}\n".to_vec());
        assert_eq!(b.consumed, data.len());
        assert_eq!(b.next_line, 10);
    }

    #[test]
    fn a_block_stops_before_an_unfinished_line() {
        let b = read(b"{\"id\": \"a\", \"text\": \"t\"}\r", false);
        assert_eq!((b.consumed, b.next_line, b.lines.len()), (0, 1, 0));
        let b = read(b"{\"id\": \"a\", \"text\": \"t\"}\r\n{\"id\"", false);
        assert_eq!((b.consumed, b.next_line, b.lines.len()), (26, 2, 1));
        let b = read(b"{\"id\": \"a\", \"text\": \"t\"}\r", true);
        assert_eq!((b.consumed, b.next_line, b.lines.len()), (25, 2, 1));
    }

    #[test]
    fn what_goes_back_to_the_reader() {
        for line in [
            &b"{\"id\": \"\", \"text\": \"t\"}"[..],
            b"{\"id\": null, \"text\": \"t\"}",
            b"{\"id\": true, \"text\": \"t\"}",
            b"{\"id\": 123456789012345678901234567890, \"text\": \"t\"}",
            b"{\"id\": \"a\", \"text\": 5}",
            b"{\"id\": \"a\"}",
            b"{\"id\": \"a\", \"text\": \"t\", \"x\": NaN}",
            b"{\"id\": \"a\", \"text\": \"\\ud800\"}",
            b"{\"id\": \"a\", \"text\": \"t\"} x",
            b"\xef\xbb\xbf{\"id\": \"a\", \"text\": \"t\"}",
            b"{\"id\": \"a\", \"text\": \"\xff\"}",
            b"{\"id\": \"a\", \"text\": \"t\", \"featurizer\": 1, \"featurizer\": 2}",
            b"\x0b{\"id\": \"a\", \"text\": \"t\"}",
        ] {
            let b = read(line, true);
            assert_eq!(
                b.other_lines,
                vec![1],
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        let long = format!("{{\"id\": \"{}\", \"text\": \"t\"}}", "é".repeat(513));
        assert_eq!(read(long.as_bytes(), true).other_lines, vec![1]);
    }
}
