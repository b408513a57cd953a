//! Python `re` patterns run with Python's meaning.
//!
//! The boilerplate rules are Python `re` patterns (str patterns, no flags). Rust's regex
//! crates read the same syntax but give `\s`, `\d`, `\w` and `\b` Unicode's definitions,
//! which differ from Python's (`\s` is `str.isspace`, `\d` `str.isdecimal`, `\w`
//! `str.isalnum()` or `_`, `\b` a change between `\w` and not `\w`). `translate` rewrites
//! them into explicit classes generated from the interpreter (`unicode`), and Python's
//! lookarounds go to `fancy-regex`, a backtracking engine with Python's leftmost-first
//! preferences. `$` becomes `\z`: the core only matches lines, which hold no `\n`, where
//! Python's `$` (end, or before a final `\n`) is the end.
//!
//! A pattern with lookarounds also gets a prefilter: the same pattern with every
//! lookaround dropped, run by the `regex` crate's automata. Dropping an assertion only
//! lets more text match, so a line the prefilter finds nothing in has no match at all,
//! and most lines take only that fast test.

use crate::unicode::{PY_DECIMAL, PY_SPACE, PY_WORD};

/// A compiled Python pattern.
pub struct PyRegex {
    pub source: &'static str,
    exact: fancy_regex::Regex,
    prefilter: Option<regex::Regex>,
    anchored: fancy_regex::Regex,
    full: fancy_regex::Regex,
}

impl PyRegex {
    pub fn new(source: &'static str) -> PyRegex {
        let exact = translate(source, false);
        let fancy = exact.contains("(?=") || exact.contains("(?!") || exact.contains("(?<");
        let prefilter = fancy.then(|| {
            regex::Regex::new(&translate(source, true))
                .unwrap_or_else(|e| panic!("prefilter of {source:?}: {e}"))
        });
        PyRegex {
            source,
            exact: build(&exact).unwrap_or_else(|e| panic!("{source:?}: {e}")),
            prefilter,
            anchored: build(&format!(r"\A(?:{exact})"))
                .unwrap_or_else(|e| panic!("{source:?}: {e}")),
            full: build(&format!(r"\A(?:{exact})\z")).unwrap_or_else(|e| panic!("{source:?}: {e}")),
        }
    }

    fn maybe(&self, text: &str) -> bool {
        self.prefilter.as_ref().is_none_or(|p| p.is_match(text))
    }

    /// `pattern.search(text) is not None`
    pub fn search(&self, text: &str) -> bool {
        self.maybe(text) && self.exact.is_match(text).expect("regex backtrack limit")
    }

    /// `pattern.match(text) is not None` (anchored at the start)
    pub fn matches_start(&self, text: &str) -> bool {
        self.maybe(text) && self.anchored.is_match(text).expect("regex backtrack limit")
    }

    /// `pattern.fullmatch(text) is not None`
    pub fn full_match(&self, text: &str) -> bool {
        self.maybe(text) && self.full.is_match(text).expect("regex backtrack limit")
    }

    /// The matches of `pattern.finditer(text)`, as byte ranges
    pub fn find_iter(&self, text: &str) -> Vec<(usize, usize)> {
        if !self.maybe(text) {
            return Vec::new();
        }
        self.exact
            .find_iter(text)
            .map(|m| {
                let m = m.expect("regex backtrack limit");
                (m.start(), m.end())
            })
            .collect()
    }

    /// `pattern.split(text)` for a pattern with one group: the pieces between the
    /// matches, each match's group 1 (None when it did not take part) in between
    pub fn split_with_group<'t>(&self, text: &'t str) -> Vec<Option<&'t str>> {
        let mut out = Vec::new();
        let mut last = 0;
        if self.maybe(text) {
            for caps in self.exact.captures_iter(text) {
                let caps = caps.expect("regex backtrack limit");
                let m = caps.get(0).unwrap();
                out.push(Some(&text[last..m.start()]));
                out.push(caps.get(1).map(|g| g.as_str()));
                last = m.end();
            }
        }
        out.push(Some(&text[last..]));
        out
    }

    /// `pattern.sub("", text)` for a pattern anchored with `^` (one match at most)
    pub fn remove_at_start<'t>(&self, text: &'t str) -> &'t str {
        match self.find_iter(text).first() {
            Some(&(0, end)) => &text[end..],
            _ => text,
        }
    }
}

/// Python's `re` has no backtracking limit: neither has the core (a pathological line is
/// slow in both, never an error in one).
fn build(pattern: &str) -> Result<fancy_regex::Regex, fancy_regex::Error> {
    fancy_regex::RegexBuilder::new(pattern)
        .backtrack_limit(usize::MAX)
        .build()
}

/// Python pattern syntax to Rust syntax with Python's classes (see the module comment).
/// With `relax`, lookarounds and `\b` are dropped (the prefilter).
pub fn translate(py: &str, relax: bool) -> String {
    let chars: Vec<char> = py.chars().collect();
    let word_boundary = format!("(?:(?<=[{w}])(?![{w}])|(?<![{w}])(?=[{w}]))", w = PY_WORD);
    let mut out = String::new();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let e = *chars
                .get(i + 1)
                .expect("a pattern does not end in a backslash");
            i += 2;
            let class_body = match e {
                's' => Some(PY_SPACE),
                'd' => Some(PY_DECIMAL),
                'w' => Some(PY_WORD),
                _ => None,
            };
            if let Some(body) = class_body {
                if in_class {
                    out.push_str(body);
                } else {
                    out.push('[');
                    out.push_str(body);
                    out.push(']');
                }
                continue;
            }
            match e {
                'S' if !in_class => {
                    out.push_str("[^");
                    out.push_str(PY_SPACE);
                    out.push(']');
                }
                'b' if !in_class => {
                    if !relax {
                        out.push_str(&word_boundary);
                    }
                }
                'u' => {
                    let hex: String = chars[i..i + 4].iter().collect();
                    i += 4;
                    out.push_str(&format!("\\x{{{hex}}}"));
                }
                'D' | 'W' | 'B' | 'A' | 'Z' | 'S' | 'b' => {
                    panic!("the translation of \\{e} is not written yet (in {py:?})")
                }
                // the same in both syntaxes
                'n' | 't' | 'r' | 'f' | 'v' => {
                    out.push('\\');
                    out.push(e);
                }
                e if e.is_ascii_alphanumeric() => panic!("unexpected escape \\{e} in {py:?}"),
                e => {
                    out.push('\\');
                    out.push(e);
                }
            }
            continue;
        }
        if in_class {
            match c {
                ']' => in_class = false,
                // special inside a Rust class only: nested classes and set operations
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                    i += 1;
                    continue;
                }
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                assert!(
                    chars.get(i + 1) != Some(&']'),
                    "a class starting with ] in {py:?}"
                );
            }
            '$' => out.push_str(r"\z"),
            '(' if relax
                && chars.get(i + 1) == Some(&'?')
                && matches!(chars.get(i + 2), Some('=' | '!' | '<')) =>
            {
                // skip the whole lookaround group
                let mut depth = 0;
                let mut j = i;
                let mut class = false;
                loop {
                    match chars[j] {
                        '\\' => j += 1,
                        '[' if !class => class = true,
                        ']' if class => class = false,
                        '(' if !class => depth += 1,
                        ')' if !class => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}
