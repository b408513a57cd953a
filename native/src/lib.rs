//! dedup-hbase's compiled fingerprint core: the whole text-to-fingerprint path of the
//! `jieba` (version 2) and `shingles` (version 1) featurizers, bit-identical to the
//! Python reference in `dedup_hbase/` (features.py, boilerplate.py, fingerprint.py).
//!
//! One module per step: `unicode` (Python's character data), `normalize` (NFKC +
//! casefold), `pyre` (Python `re` patterns with Python's meaning), `boilerplate` (the
//! line rules of `body_text`), `jieba_terms` (jieba words, terms, TF-IDF weights),
//! `shingles`, `mmh3`, `simhash`.
//! The Python bindings are in `python` below; the wrapper that picks the core or the
//! reference is `dedup_hbase/native.py`.

use std::sync::Mutex;

pub mod boilerplate;
pub mod jieba_cut;
pub mod jieba_terms;
pub mod mmh3;
pub mod normalize;
pub mod pyre;
pub mod shingles;
pub mod simhash;
pub mod slice_map;
pub mod term_counts;
pub mod thrift;
pub mod trie;
pub mod unicode;

/// What a document's fingerprint came to (the batch's status byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    /// `EmptyDocument("empty text")`: no features and `text.strip()` is empty
    EmptyText = 1,
    /// `EmptyDocument("no features (...)")`
    NoFeatures = 2,
    /// A lone surrogate: the text cannot cross into Rust; the caller uses the reference
    Surrogate = 3,
    /// An Arrow string array's null: no text
    Null = 4,
    /// An Arrow string array's value that is not UTF-8 (Arrow's format forbids it; a caller
    /// that built the buffers by hand can still hand one over)
    NotUtf8 = 5,
}

/// A featurizer the core mirrors.
pub trait Featurize: Send + Sync {
    /// The buffers of one text, kept from text to text (one per thread).
    type Work: Default + Send;

    /// Each `(feature, weight)` of `text`, in the order the Python dict has them.
    fn each_feature(&self, text: &str, work: &mut Self::Work, sink: &mut dyn FnMut(&str, i64));

    /// After `each_feature` of a text with `work`: its body's characters that are not white
    /// space (`len(shorts.squeezed(text))`), where the featurizer took the body; else None.
    fn body_chars(&self, _work: &Self::Work) -> Option<usize> {
        None
    }

    /// After `each_feature` of a text with `work`: its body (`shorts.body(text)`), where the
    /// featurizer took the body; else None.
    fn body<'w>(&self, _work: &'w Self::Work) -> Option<&'w str> {
        None
    }

    /// `featurizer.features(text)`
    fn features(&self, text: &str) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        self.each_feature(text, &mut Self::Work::default(), &mut |f, w| {
            out.push((f.to_owned(), w))
        });
        out
    }
}

impl Featurize for jieba_terms::JiebaTerms {
    type Work = jieba_terms::Work;

    fn each_feature(&self, text: &str, work: &mut Self::Work, sink: &mut dyn FnMut(&str, i64)) {
        jieba_terms::JiebaTerms::each_feature(self, text, work, sink)
    }

    fn body_chars(&self, work: &Self::Work) -> Option<usize> {
        Some(work.body_chars)
    }

    fn body<'w>(&self, work: &'w Self::Work) -> Option<&'w str> {
        Some(&work.body)
    }
}

pub struct Shingles(pub usize);

impl Featurize for Shingles {
    type Work = ();

    fn each_feature(&self, text: &str, _: &mut (), sink: &mut dyn FnMut(&str, i64)) {
        shingles::each_feature(text, self.0, sink)
    }
}

/// The sums of `text`'s SimHash, or why there is none.
fn sums<F: Featurize>(
    featurizer: &F,
    text: &str,
    seed: u32,
    work: &mut F::Work,
) -> Result<simhash::SimHash, Status> {
    let mut simhash = simhash::SimHash::new(seed);
    featurizer.each_feature(text, work, &mut |feature, weight| {
        simhash.add(feature, weight)
    });
    if simhash.features == 0 {
        // "empty text" if not text.strip() else "no features (...)"
        return Err(if unicode::strip(text).is_empty() {
            Status::EmptyText
        } else {
            Status::NoFeatures
        });
    }
    Ok(simhash)
}

/// `Fingerprinter.fingerprint(text)`: the SimHash, or why there is none.
pub fn fingerprint<F: Featurize>(
    featurizer: &F,
    text: &str,
    seed: u32,
    work: &mut F::Work,
) -> Result<u64, Status> {
    sums(featurizer, text, seed, work).map(|simhash| simhash.finish())
}

/// `Fingerprinter.margins(text)`: how sure each bit of the SimHash is, or why there is none.
pub fn margins<F: Featurize>(
    featurizer: &F,
    text: &str,
    seed: u32,
    work: &mut F::Work,
) -> Result<[i64; 64], Status> {
    sums(featurizer, text, seed, work).map(|simhash| simhash.margins())
}

/// The `Work` buffers of the calls before, for the next ones: a call takes one for each
/// of its threads and gives it back, so buffers grown for one text serve the next call's
/// (a call with one text is most of the calls of `query TEXT` and of the service).
pub struct Works<W>(Mutex<Vec<W>>);

impl<W: Default> Default for Works<W> {
    fn default() -> Self {
        Works(Mutex::new(Vec::new()))
    }
}

impl<W: Default> Works<W> {
    /// `f` with buffers of a call before (or new ones), which are then kept.
    pub fn with<R>(&self, f: impl FnOnce(&mut W) -> R) -> R {
        let taken = self.0.lock().ok().and_then(|mut kept| kept.pop());
        let mut work = taken.unwrap_or_default();
        let result = f(&mut work);
        if let Ok(mut kept) = self.0.lock() {
            kept.push(work);
        }
        result
    }
}

/// Texts a worker takes at a time from a batch split over threads
const CHUNK: usize = 8;

/// Fingerprints of a batch, and each text's status byte; `None` texts (lone surrogates)
/// get `Status::Surrogate`. With `threads` > 1 that many threads take chunks of the batch
/// until none is left (texts differ in length: no thread waits for another's share).
pub fn fingerprint_batch<F: Featurize>(
    featurizer: &F,
    texts: &[Option<&str>],
    seed: u32,
    threads: usize,
    works: &Works<F::Work>,
) -> (Vec<u64>, Vec<u8>) {
    let (hashes, status, _, _) = fingerprint_bodies(featurizer, texts, seed, threads, 0, works);
    (hashes, status)
}

/// A batch's fingerprints, statuses, bodies' characters and the bodies kept
pub type Bodies = (Vec<u64>, Vec<u8>, Vec<u32>, Vec<Option<String>>);

/// `fingerprint_batch`, and of each text with a fingerprint its body's characters that are
/// not white space (`Featurize::body_chars`; `u32::MAX` where the featurizer took no body)
/// and, where they are fewer than `keep_below`, its body (`Featurize::body`; else None)
pub fn fingerprint_bodies<F: Featurize>(
    featurizer: &F,
    texts: &[Option<&str>],
    seed: u32,
    threads: usize,
    keep_below: u32,
    works: &Works<F::Work>,
) -> Bodies {
    let mut hashes = vec![0u64; texts.len()];
    let mut status = vec![0u8; texts.len()];
    let mut bodies = vec![u32::MAX; texts.len()];
    let mut kept: Vec<Option<String>> = vec![None; texts.len()];
    let run = |texts: &[Option<&str>],
               hashes: &mut [u64],
               status: &mut [u8],
               bodies: &mut [u32],
               kept: &mut [Option<String>],
               work: &mut F::Work| {
        let outs = hashes.iter_mut().zip(status.iter_mut()).zip(bodies.iter_mut()).zip(kept.iter_mut());
        for (text, (((h, s), b), k)) in texts.iter().zip(outs) {
            match text {
                None => *s = Status::Surrogate as u8,
                Some(text) => match fingerprint(featurizer, text, seed, work) {
                    Ok(value) => {
                        *h = value;
                        if let Some(n) = featurizer.body_chars(work) {
                            *b = u32::try_from(n).unwrap_or(u32::MAX - 1);
                            if *b < keep_below {
                                *k = featurizer.body(work).map(str::to_owned);
                            }
                        }
                    }
                    Err(why) => *s = why as u8,
                },
            }
        }
    };
    let threads = threads.clamp(1, texts.len().div_ceil(CHUNK).max(1));
    if threads == 1 {
        works.with(|work| run(texts, &mut hashes, &mut status, &mut bodies, &mut kept, work));
    } else {
        let chunks = std::sync::Mutex::new(
            texts
                .chunks(CHUNK)
                .zip(hashes.chunks_mut(CHUNK))
                .zip(status.chunks_mut(CHUNK))
                .zip(bodies.chunks_mut(CHUNK))
                .zip(kept.chunks_mut(CHUNK)),
        );
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    works.with(|work| loop {
                        let next = chunks.lock().expect("a worker panicked").next();
                        let Some(((((t, h), s), b), k)) = next else { break };
                        run(t, h, s, b, k, work);
                    })
                });
            }
        });
    }
    (hashes, status, bodies, kept)
}

/// The texts of an Arrow `string` (`width` 4) or `large_string` (`width` 8) array from its
/// buffers, as `pyarrow.Array.buffers()` gives them: the little-endian offsets, the UTF-8 data
/// and the validity bitmap (`None`: no nulls), for the `length` values from value `offset` on
/// (a slice). No copy: each text borrows `data`. A null or a value that is not UTF-8 is `None`
/// with its status (`Status::Null`, `Status::NotUtf8`), every other status 0. Offsets that do
/// not fit the buffers, or go backwards, are an error (no text is read then).
pub fn arrow_texts<'a>(
    offsets: &[u8],
    data: &'a [u8],
    width: usize,
    offset: usize,
    length: usize,
    validity: Option<&[u8]>,
) -> Result<(Vec<Option<&'a str>>, Vec<u8>), String> {
    if width != 4 && width != 8 {
        return Err(format!("offsets are 4 or 8 bytes wide, not {width}"));
    }
    let end = offset
        .checked_add(length)
        .ok_or_else(|| "offset + length overflows".to_string())?;
    if offsets.len() < (end + 1) * width {
        return Err(format!(
            "the offsets buffer holds {} bytes: {} values from {offset} need {}",
            offsets.len(),
            length,
            (end + 1) * width
        ));
    }
    if let Some(bits) = validity {
        if bits.len() * 8 < end {
            return Err(format!(
                "the validity bitmap holds {} bits, {end} needed",
                bits.len() * 8
            ));
        }
    }
    let at = |i: usize| -> Result<usize, String> {
        let raw = &offsets[i * width..(i + 1) * width];
        let value = if width == 4 {
            i32::from_le_bytes(raw.try_into().unwrap()) as i64
        } else {
            i64::from_le_bytes(raw.try_into().unwrap())
        };
        usize::try_from(value).map_err(|_| format!("offset {i} is negative ({value})"))
    };
    let mut texts = Vec::with_capacity(length);
    let mut status = vec![0u8; length];
    let mut start = at(offset)?;
    for (j, s) in status.iter_mut().enumerate() {
        let stop = at(offset + j + 1)?;
        if stop < start || stop > data.len() {
            return Err(format!(
                "value {j}'s offsets {start}..{stop} do not fit the data buffer ({} bytes)",
                data.len()
            ));
        }
        let valid = validity.is_none_or(|bits| bits[(offset + j) / 8] >> ((offset + j) % 8) & 1 == 1);
        texts.push(if !valid {
            *s = Status::Null as u8;
            None
        } else {
            match std::str::from_utf8(&data[start..stop]) {
                Ok(text) => Some(text),
                Err(_) => {
                    *s = Status::NotUtf8 as u8;
                    None
                }
            }
        });
        start = stop;
    }
    Ok((texts, status))
}

/// `fingerprint_batch` of an Arrow string array's buffers (`arrow_texts`): the fingerprints
/// and statuses, a null's `Status::Null` and a value not UTF-8's `Status::NotUtf8`.
pub fn fingerprint_arrow<F: Featurize>(
    featurizer: &F,
    texts: &[Option<&str>],
    reasons: &[u8],
    seed: u32,
    threads: usize,
    works: &Works<F::Work>,
) -> (Vec<u64>, Vec<u8>) {
    let (hashes, mut status) = fingerprint_batch(featurizer, texts, seed, threads, works);
    for (s, &why) in status.iter_mut().zip(reasons) {
        if why != 0 {
            *s = why;
        }
    }
    (hashes, status)
}

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    /// One feature a text: the text itself. The texts named "meet" wait until as many
    /// of them as `meet` says are being worked on at once.
    struct Meeting {
        meet: usize,
        arrived: Mutex<usize>,
        all_here: Condvar,
    }

    impl Featurize for Meeting {
        type Work = ();

        fn each_feature(&self, text: &str, _: &mut (), sink: &mut dyn FnMut(&str, i64)) {
            if text.starts_with("meet") {
                let mut arrived = self.arrived.lock().unwrap();
                *arrived += 1;
                self.all_here.notify_all();
                // (the timeout only turns a batch that never runs them at once into a failure)
                let (arrived, _) = self
                    .all_here
                    .wait_timeout_while(arrived, Duration::from_secs(60), |n| *n < self.meet)
                    .unwrap();
                assert!(
                    *arrived >= self.meet,
                    "the texts were not worked on at once"
                );
            }
            if !text.is_empty() {
                sink(text, 1);
            }
        }
    }

    fn meeting(meet: usize) -> Meeting {
        Meeting {
            meet,
            arrived: Mutex::new(0),
            all_here: Condvar::new(),
        }
    }

    #[test]
    fn a_batch_runs_on_as_many_threads_as_it_is_given() {
        // three texts that must be worked on at the same time, in three different chunks
        let mut texts: Vec<String> = (0..37).map(|i| format!("text {i}")).collect();
        for (i, at) in [0, CHUNK, 2 * CHUNK].into_iter().enumerate() {
            texts[at] = format!("meet {i}");
        }
        texts[5] = String::new();
        let strs: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
        let (hashes, status) = fingerprint_batch(&meeting(3), &strs, 7, 3, &Works::default());
        // in input order, as one thread gives them
        let (one, one_status) = fingerprint_batch(&meeting(1), &strs, 7, 1, &Works::default());
        assert_eq!((hashes, status.clone()), (one, one_status));
        assert_eq!(status[5], Status::EmptyText as u8);
        assert_eq!(status.iter().filter(|&&s| s != 0).count(), 1);
    }

    #[test]
    fn arrow_buffers_sliced_with_nulls_and_bad_bytes() {
        // ["a", null, "", "\u{1F600}x", <not UTF-8>] as int32 offsets, then the same as int64
        let mut data = "a\u{1F600}x".as_bytes().to_vec();
        data.push(0xff);
        let ends = [0i64, 1, 1, 1, 6, 7];
        let validity = [0b1_1101u8];
        for width in [4usize, 8] {
            let offsets: Vec<u8> = ends
                .iter()
                .flat_map(|&e| {
                    if width == 4 {
                        (e as i32).to_le_bytes().to_vec()
                    } else {
                        e.to_le_bytes().to_vec()
                    }
                })
                .collect();
            let (texts, status) = arrow_texts(&offsets, &data, width, 0, 5, Some(&validity)).unwrap();
            assert_eq!(texts, [Some("a"), None, Some(""), Some("\u{1F600}x"), None]);
            assert_eq!(status, [0, Status::Null as u8, 0, 0, Status::NotUtf8 as u8]);
            // a slice of the middle three
            let (texts, status) = arrow_texts(&offsets, &data, width, 1, 3, Some(&validity)).unwrap();
            assert_eq!(texts, [None, Some(""), Some("\u{1F600}x")]);
            assert_eq!(status, [Status::Null as u8, 0, 0]);
            assert!(arrow_texts(&offsets, &data, width, 2, 4, None).is_err()); // past the offsets
            assert!(arrow_texts(&offsets, &data[..3], width, 0, 5, None).is_err()); // past the data
            let (texts, _) = arrow_texts(&offsets, &data, width, 0, 0, None).unwrap();
            assert!(texts.is_empty());
        }
        assert!(arrow_texts(&[0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0], b"ab", 4, 0, 2, None).is_err()); // backwards
    }

    #[test]
    fn more_threads_than_chunks_and_surrogates() {
        let strs = [Some("a"), None, Some(""), Some("b")];
        let works = Works::default();
        let (hashes, status) = fingerprint_batch(&meeting(1), &strs, 0, 16, &works);
        assert_eq!(
            status,
            [0, Status::Surrogate as u8, Status::EmptyText as u8, 0]
        );
        assert_eq!(hashes[0], mmh3::hash64(b"a", 0)); // one feature: its own hash
        assert_eq!(
            fingerprint_batch(&meeting(1), &[], 0, 4, &works),
            (vec![], vec![])
        );
    }
}
