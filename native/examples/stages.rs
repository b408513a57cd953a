//! Where the core's time goes: the steps of the jieba fingerprint over a corpus, timed in
//! this thread's CPU seconds, the least of a few rounds (the machine is shared: CPU time
//! is the steadier measure, and the rounds a neighbour slowed are the longer ones).
//!
//!     cargo run --release --no-default-features --example stages -- \
//!         DICT IDF STOP_WORDS TEXTS [ROUNDS [STEP]]
//!
//! DICT and IDF are jieba's `dict.txt` and `analyse/idf.txt`, STOP_WORDS one word a line
//! (`features._STOP_WORDS`), TEXTS the documents as UTF-8, each ended by a NUL byte;
//! STEP runs only the steps whose name starts with it. `normalize`, `body_text` and `cut`
//! each take the output of the step before; `features` and `fingerprint` are the whole
//! path (so `features` less the three is the terms and weights, and `fingerprint` less
//! `features` mmh3 and the SimHash).

use dedup_hbase_core::boilerplate::body_text;
use dedup_hbase_core::jieba_cut::Scratch;
use dedup_hbase_core::jieba_terms::{JiebaTerms, Work};
use dedup_hbase_core::normalize::normalize;

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// A step over the whole corpus (its result: something the optimiser must compute)
type Step<'a> = Box<dyn FnMut() -> u64 + 'a>;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: stages DICT IDF STOP_WORDS TEXTS [ROUNDS [STEP]]");
        std::process::exit(2);
    }
    let read = |path: &str| std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rounds: usize = args.get(5).map_or(3, |r| r.parse().expect("ROUNDS"));
    let only = args.get(6).map_or("", String::as_str);
    let stop: Vec<String> = String::from_utf8(read(&args[3]))
        .expect("UTF-8 stop words")
        .lines()
        .map(str::to_owned)
        .collect();
    let started = std::time::Instant::now();
    let terms = JiebaTerms::new(
        read(&args[1]),
        String::from_utf8(read(&args[2])).expect("UTF-8 IDF table"),
        stop,
    )
    .expect("the tables load");
    dedup_hbase_core::boilerplate::warm_up();
    println!("load: {:.3} s (wall)", started.elapsed().as_secs_f64());

    let corpus = String::from_utf8(read(&args[4])).expect("UTF-8 texts");
    let texts: Vec<&str> = corpus.split_terminator('\0').collect();
    let mb = corpus.len() as f64 / 1e6;
    let normalized: Vec<String> = texts.iter().map(|t| normalize(t)).collect();
    let bodies: Vec<String> = normalized.iter().map(|t| body_text(t)).collect();

    let mut tokens = Vec::new();
    let mut scratch = Scratch::default();
    let mut work = Work::default();
    let steps: Vec<(&str, Step)> = vec![
        (
            "normalize",
            Box::new(|| texts.iter().map(|t| normalize(t).len() as u64).sum()),
        ),
        (
            "body_text",
            Box::new(|| normalized.iter().map(|t| body_text(t).len() as u64).sum()),
        ),
        (
            "cut (jieba's words)",
            Box::new(|| {
                let mut n = 0;
                for body in &bodies {
                    tokens.clear();
                    terms.tokens(body, &mut tokens, &mut scratch);
                    n += tokens.len() as u64;
                }
                n
            }),
        ),
        (
            "features (all of the above + terms)",
            Box::new(|| {
                let mut n = 0i64;
                for text in &texts {
                    terms.each_feature(text, &mut work, &mut |_, w| n += w);
                }
                n as u64
            }),
        ),
        (
            "fingerprint (all)",
            Box::new(|| {
                let mut work = Work::default();
                texts
                    .iter()
                    .map(|t| dedup_hbase_core::fingerprint(&terms, t, 0, &mut work).unwrap_or(0))
                    .fold(0, |a, b| a ^ b)
            }),
        ),
    ];
    println!(
        "{} texts, {mb:.1} MB, CPU seconds (the least of {rounds} rounds):",
        texts.len()
    );
    for (name, mut step) in steps {
        if !name.starts_with(only) {
            continue;
        }
        let seconds = (0..rounds)
            .map(|_| {
                let started = cpu_seconds();
                std::hint::black_box(step());
                cpu_seconds() - started
            })
            .fold(f64::INFINITY, f64::min);
        println!("  {name:<40} {seconds:7.3} s  {:6.1} MB/s", mb / seconds);
    }
}
