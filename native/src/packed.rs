//! A few queries' matches over the embedded store's records, compiled: what
//! `candidates.compare_few` and then `candidates.bounded` give for each query, from the
//! records `PackedCells` reads (`dedup_hbase/stores/local/records.py` describes the format).
//!
//! Per query: the runs of equal remainders under its prefixes, in the prefixes' order, each
//! fingerprint taken once (under its first prefix), kept when within k bits; then its matches
//! by (distance, id), at most `max_matches` of them, and how many there are in all. Exactly
//! the reference's answer, including where it is odd: with more matches than `max_matches`,
//! the count is the sum of the runs' cells (an id held under two fingerprints is counted
//! twice), with fewer it is the number of distinct ids.
//!
//! `None` where the reference must answer instead: a record that does not parse (short, or
//! lengths that overrun it) or an id that is not UTF-8 (the reference raises there).

use rustc_hash::FxHashSet;

const HEADER: usize = 6;
const REST: usize = 8;
const VARIABLE: u16 = 0xFFFF;

/// One record: `n` cells, their big-endian remainders, their qualifiers.
pub struct Record<'a> {
    n: usize,
    rests: &'a [u8],
    quals: Quals<'a>,
}

enum Quals<'a> {
    /// `width` byte planes of `n` bytes: byte t of qualifier i at `t * n + i`
    Planes { width: usize, bytes: &'a [u8] },
    /// qualifier i is `bytes[starts[i]..starts[i + 1]]`
    Lengths { starts: Vec<usize>, bytes: &'a [u8] },
}

impl<'a> Record<'a> {
    /// The record's cells (an empty record: none); None when it is not whole.
    pub fn parse(record: &'a [u8]) -> Option<Record<'a>> {
        if record.is_empty() {
            return Some(Record {
                n: 0,
                rests: &[],
                quals: Quals::Planes {
                    width: 0,
                    bytes: &[],
                },
            });
        }
        let header = record.get(..HEADER)?;
        let n = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
        let width = u16::from_le_bytes(header[4..6].try_into().ok()?);
        let rests_end = HEADER.checked_add(n.checked_mul(REST)?)?;
        let rests = record.get(HEADER..rests_end)?;
        let quals = if width != VARIABLE {
            let width = width as usize;
            Quals::Planes {
                width,
                bytes: record.get(rests_end..rests_end.checked_add(width * n)?)?,
            }
        } else {
            let lengths = record.get(rests_end..rests_end.checked_add(2 * n)?)?;
            let bytes = &record[rests_end + 2 * n..];
            let mut starts = Vec::with_capacity(n + 1);
            let mut at = 0usize;
            starts.push(0);
            for pair in lengths.chunks_exact(2) {
                at += u16::from_le_bytes([pair[0], pair[1]]) as usize;
                starts.push(at);
            }
            if at > bytes.len() {
                return None;
            }
            Quals::Lengths { starts, bytes }
        };
        Some(Record { n, rests, quals })
    }

    fn rest(&self, i: usize) -> u64 {
        u64::from_be_bytes(self.rests[REST * i..REST * (i + 1)].try_into().unwrap())
    }

    /// Qualifier `i` appended to `out`.
    fn qualifier(&self, i: usize, out: &mut Vec<u8>) {
        match &self.quals {
            Quals::Planes { width, bytes } => {
                out.extend((0..*width).map(|t| bytes[t * self.n + i]))
            }
            Quals::Lengths { starts, bytes } => {
                out.extend_from_slice(&bytes[starts[i]..starts[i + 1]])
            }
        }
    }

    /// Qualifier `i` as a str; None when it is not UTF-8.
    fn id(&self, i: usize) -> Option<String> {
        let mut raw = Vec::new();
        self.qualifier(i, &mut raw);
        String::from_utf8(raw).ok()
    }

    /// The runs of equal remainders as (remainder, first cell, cells), in key order.
    fn runs(&self) -> Vec<(u64, usize, usize)> {
        let mut runs: Vec<(u64, usize, usize)> = Vec::new();
        for i in 0..self.n {
            let value = self.rest(i);
            match runs.last_mut() {
                Some(last) if last.0 == value => last.2 += 1,
                _ => runs.push((value, i, 1)),
            }
        }
        runs
    }
}

/// A fingerprint within k bits of a query: its cells are `record`'s `start..start + length`.
struct Run {
    distance: u32,
    simhash: u64,
    record: usize,
    start: usize,
    length: usize,
}

/// A query's matches as (id, simhash, distance) and their count (see the module docstring).
pub type Counted = (Vec<(String, u64, u32)>, usize);

/// Per query (`inverse[q * flags..(q + 1) * flags]`: the indexes in `records` of query q's
/// prefixes in flag order), its matches and their count. None: see the module docstring.
pub fn counted(
    records: &[&[u8]],
    queries: &[u64],
    inverse: &[usize],
    k: u32,
    max_matches: Option<usize>,
) -> Option<Vec<Counted>> {
    let parsed: Vec<Record> = records
        .iter()
        .map(|r| Record::parse(r))
        .collect::<Option<_>>()?;
    let flags = if queries.is_empty() {
        0
    } else {
        inverse.len() / queries.len()
    };
    let mut runs_of: Vec<Option<Vec<(u64, usize, usize)>>> =
        (0..parsed.len()).map(|_| None).collect();
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    let mut out = Vec::with_capacity(queries.len());
    for (q, &query) in queries.iter().enumerate() {
        let mut found: Vec<Run> = Vec::new();
        seen.clear();
        for &prefix in &inverse[q * flags..(q + 1) * flags] {
            let runs = runs_of[prefix].get_or_insert_with(|| parsed[prefix].runs());
            for &(value, start, length) in runs.iter() {
                if seen.contains(&value) {
                    continue;
                }
                let distance = (value ^ query).count_ones();
                if distance <= k {
                    seen.insert(value);
                    found.push(Run {
                        distance,
                        simhash: value,
                        record: prefix,
                        start,
                        length,
                    });
                }
            }
        }
        found.sort_unstable_by_key(|r| (r.distance, r.simhash)); // simhashes are distinct
        out.push(bounded(&parsed, &found, max_matches)?);
    }
    Some(out)
}

/// `candidates.bounded` of one query's runs (sorted by distance, then simhash).
fn bounded(records: &[Record], runs: &[Run], max_matches: Option<usize>) -> Option<Counted> {
    let total: usize = runs.iter().map(|r| r.length).sum();
    let mut out: Vec<(String, u64, u32)> = Vec::new();
    match max_matches {
        Some(max) if total > max => {
            // level by level of distance, the first ids by (id, simhash): within a run the ids
            // are in key order, and no two runs share a simhash, so the order is total
            let mut level_start = 0;
            while level_start < runs.len() && out.len() < max {
                let distance = runs[level_start].distance;
                let level_end = level_start
                    + runs[level_start..]
                        .iter()
                        .take_while(|r| r.distance == distance)
                        .count();
                let room = max - out.len();
                let mut level: Vec<(String, u64)> = Vec::new();
                for r in &runs[level_start..level_end] {
                    for i in r.start..r.start + r.length.min(room) {
                        level.push((records[r.record].id(i)?, r.simhash));
                    }
                }
                level.sort_unstable();
                out.extend(
                    level
                        .into_iter()
                        .take(room)
                        .map(|(id, simhash)| (id, simhash, distance)),
                );
                level_start = level_end;
            }
            Some((out, total))
        }
        _ => {
            // every id once, at its nearest fingerprint (the first run that holds it)
            let mut ids: FxHashSet<String> = FxHashSet::default();
            for r in runs {
                for i in r.start..r.start + r.length {
                    let id = records[r.record].id(i)?;
                    if !ids.contains(&id) {
                        ids.insert(id.clone());
                        out.push((id, r.simhash, r.distance));
                    }
                }
            }
            out.sort_unstable_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
            let count = out.len();
            Some((out, count))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cells: &[(u64, &str)]) -> Vec<u8> {
        let n = cells.len();
        let width = cells.first().map_or(0, |c| c.1.len());
        let fixed = cells.iter().all(|c| c.1.len() == width);
        let mut out = (n as u32).to_le_bytes().to_vec();
        out.extend((if fixed { width as u16 } else { VARIABLE }).to_le_bytes());
        for (rest, _) in cells {
            out.extend(rest.to_be_bytes());
        }
        if fixed {
            for t in 0..width {
                out.extend(cells.iter().map(|c| c.1.as_bytes()[t]));
            }
        } else {
            for (_, id) in cells {
                out.extend((id.len() as u16).to_le_bytes());
            }
            for (_, id) in cells {
                out.extend(id.as_bytes());
            }
        }
        out
    }

    #[test]
    fn ids_by_distance_then_id_each_once_at_its_nearest() {
        let a = record(&[(0b0111, "a"), (0b1000, "b"), (0b1000, "c")]);
        let b = record(&[(0b0001, "c"), (0b0001, "dd"), (0b1000, "b")]);
        let got = counted(&[&a, &b], &[0], &[0, 1], 3, None).unwrap();
        // c is under 8 (distance 1) and 1 (distance 1): it keeps 1, the smaller simhash
        let want = vec![
            ("b".to_string(), 8, 1),
            ("c".to_string(), 1, 1),
            ("dd".to_string(), 1, 1),
            ("a".to_string(), 7, 3),
        ];
        assert_eq!(got, vec![(want, 4)]);
    }

    #[test]
    fn bounded_counts_cells_and_takes_the_first_by_id_within_a_distance() {
        let a = record(&[(1, "x"), (1, "y"), (2, "a"), (2, "z")]);
        let got = counted(&[&a], &[0], &[0], 1, Some(3)).unwrap();
        let want = vec![
            ("a".to_string(), 2, 1),
            ("x".to_string(), 1, 1),
            ("y".to_string(), 1, 1),
        ];
        assert_eq!(got, vec![(want, 4)]);
    }

    #[test]
    fn a_short_record_or_an_id_not_utf8_is_left_to_the_reference() {
        let a = record(&[(1, "x"), (2, "y")]);
        assert!(counted(&[&a[..a.len() - 1]], &[0], &[0], 3, None).is_none());
        let mut bad = record(&[(1, "\u{e9}")]);
        let last = bad.len() - 1;
        bad[last] = 0xFF;
        assert!(counted(&[&bad], &[1], &[0], 3, None).is_none());
        assert_eq!(
            counted(&[&bad], &[!1], &[0], 3, None).unwrap(),
            vec![(vec![], 0)]
        );
    }
}
