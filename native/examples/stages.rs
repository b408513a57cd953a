//! Where the core's time goes: each step of the jieba fingerprint over a corpus, timed in
//! this thread's CPU seconds (the machine is shared: CPU time is the steadier measure).
//!
//!     cargo run --release --no-default-features --example stages -- \
//!         DICT IDF STOP_WORDS TEXTS [ROUNDS]
//!
//! DICT and IDF are jieba's `dict.txt` and `analyse/idf.txt`, STOP_WORDS one word a line
//! (`features._STOP_WORDS`), TEXTS the documents as UTF-8, each ended by a NUL byte.
//! Each step is timed on its own input (the output of the step before), so the lines add
//! up to the whole fingerprint.

use dedup_hbase_core::boilerplate::body_text;
use dedup_hbase_core::jieba_terms::JiebaTerms;
use dedup_hbase_core::normalize::normalize;
use std::hint::black_box;

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn timed<T>(rounds: usize, mut step: impl FnMut() -> T) -> f64 {
    let started = cpu_seconds();
    for _ in 0..rounds {
        black_box(step());
    }
    (cpu_seconds() - started) / rounds as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: stages DICT IDF STOP_WORDS TEXTS [ROUNDS]");
        std::process::exit(2);
    }
    let read = |path: &str| std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rounds: usize = args.get(5).map_or(3, |r| r.parse().expect("ROUNDS"));
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
    println!("load: {:.3} s", started.elapsed().as_secs_f64());

    let corpus = String::from_utf8(read(&args[4])).expect("UTF-8 texts");
    let texts: Vec<&str> = corpus.split_terminator('\0').collect();
    let mb = corpus.len() as f64 / 1e6;
    let normalized: Vec<String> = texts.iter().map(|t| normalize(t)).collect();
    let bodies: Vec<String> = normalized.iter().map(|t| body_text(t)).collect();

    let mut words = Vec::new();
    let steps: [(&str, f64); 5] = [
        (
            "normalize",
            timed(rounds, || {
                texts.iter().map(|t| normalize(t).len()).sum::<usize>()
            }),
        ),
        (
            "body_text",
            timed(rounds, || {
                normalized.iter().map(|t| body_text(t).len()).sum::<usize>()
            }),
        ),
        (
            "words (jieba cut)",
            timed(rounds, || {
                let mut n = 0;
                for body in &bodies {
                    words.clear();
                    terms.words(body, &mut words);
                    n += words.len();
                }
                n
            }),
        ),
        (
            "features (all of the above + terms)",
            timed(rounds, || {
                let mut n = 0i64;
                for text in &texts {
                    terms.each_feature(text, &mut |_, w| n += w);
                }
                n
            }),
        ),
        (
            "fingerprint (all)",
            timed(rounds, || {
                texts
                    .iter()
                    .map(|t| dedup_hbase_core::fingerprint(&terms, t, 0).unwrap_or(0))
                    .fold(0u64, |a, b| a ^ b)
            }),
        ),
    ];
    println!(
        "{} texts, {mb:.1} MB, {rounds} rounds, CPU seconds a round:",
        texts.len()
    );
    let (_, all) = steps[4];
    for (name, seconds) in steps {
        println!(
            "  {name:<40} {seconds:7.3} s  {:6.1} MB/s  {:5.1}%",
            mb / seconds,
            100.0 * seconds / all
        );
    }
}
