//! The words of full-text search: how a text is cut into the terms the
//! search index holds, how a query is read, whether a text matches a query
//! (the brute-force rule the index must agree with) and the snippet that
//! shows where.
//!
//! A text is cut at Unicode word boundaries (UAX #29), and a word again at
//! ASCII punctuation (`config.toml`, `snake_case`, `db.engine` are two
//! words each); each word that holds a letter or a digit is a term, in NFKC
//! and case-folded. Chinese and
//! Japanese are written without spaces, so a run of Han, Hiragana or
//! Katakana characters gives one term per character and one per pair of
//! neighbours: a query of one character finds its unigram, a longer run
//! finds the text that holds it by its pairs at consecutive positions.
//!
//! A query is a list of clauses that must all match, in the content or in
//! the memory key: a word; a word ending in `*` (a prefix); a phrase in
//! double quotes (its words at consecutive positions). Anything else
//! (operators, punctuation, brackets) is only a separator.

use unicode_normalization::UnicodeNormalization as _;
use unicode_segmentation::UnicodeSegmentation as _;

use crate::error::{Error, Invalid, Result};
use crate::model::text::is_refused_char;

/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The most clauses (words, prefixes, phrases) of one query.
pub const MAX_QUERY_CLAUSES: usize = 32;
/// The shortest prefix before a `*`, in characters.
pub(crate) const MIN_PREFIX_CHARS: usize = 2;

/// One term of a text, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The normal form.
    pub(crate) term: String,
    /// Its position (a CJK unigram and the pair it starts share one).
    pub(crate) position: u32,
    /// Its byte range in the text.
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// A unit of a text before it becomes terms: a word, or a run of CJK
/// characters.
enum Unit<'t> {
    Word { text: &'t str, start: usize, end: usize },
    Run { chars: Vec<(char, usize, usize)> },
}

/// Returns whether `c` is written without spaces between words: Han,
/// Hiragana, Katakana (and the iteration marks).
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x3005 | 0x3007 | 0x3041..=0x309F | 0x30A0..=0x30FF | 0x31F0..=0x31FF
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF66..=0xFF9F
        | 0x20000..=0x3FFFF)
}

/// Cuts `text` into words and CJK runs, in order.
fn units(text: &str) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    let mut run: Vec<(char, usize, usize)> = Vec::new();
    for (start, segment) in text.split_word_bound_indices() {
        if segment.chars().all(is_cjk) {
            if run.last().is_some_and(|&(_, _, last)| last != start) {
                out.push(Unit::Run { chars: std::mem::take(&mut run) });
            }
            run.extend(
                segment.char_indices().map(|(at, c)| (c, start + at, start + at + c.len_utf8())),
            );
            continue;
        }
        if !run.is_empty() {
            out.push(Unit::Run { chars: std::mem::take(&mut run) });
        }
        // Word boundaries keep `config.toml`, `snake_case` and `it's`
        // whole: their parts are words too.
        let mut at = 0;
        for part in segment.split(|c: char| c.is_ascii_punctuation()) {
            let from = start + at;
            at += part.len() + 1;
            if part.chars().any(char::is_alphanumeric) {
                out.push(Unit::Word { text: part, start: from, end: from + part.len() });
            }
        }
    }
    if !run.is_empty() {
        out.push(Unit::Run { chars: run });
    }
    out
}

/// Returns the normal form of a word: NFKC, case-folded.
pub(crate) fn normal(word: &str) -> String {
    if word.is_ascii() {
        return word.to_ascii_lowercase();
    }
    let composed: String = word.nfkc().collect();
    caseless::default_case_fold_str(&composed)
}

/// Returns the terms of `text` as the index holds them.
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    each_token(text, |term, position, start, end| {
        out.push(Token { term: term.to_owned(), position, start, end });
    });
    out
}

/// Calls `each` with every term of `text` as the index holds them, in
/// order: its normal form, its position and its byte range. What
/// [`tokens`] returns, without a string for each term.
pub(crate) fn each_token(text: &str, mut each: impl FnMut(&str, u32, usize, usize)) {
    if text.is_ascii() {
        ascii_tokens(text, each);
        return;
    }
    let mut position = 0u32;
    for unit in units(text) {
        match unit {
            Unit::Word { text, start, end } => {
                each(&normal(text), position, start, end);
                position += 1;
            }
            Unit::Run { chars } => {
                for (i, &(c, start, end)) in chars.iter().enumerate() {
                    let at = position + i as u32;
                    each(&normal(c.encode_utf8(&mut [0; 4])), at, start, end);
                    if let Some(&(next, _, next_end)) = chars.get(i + 1) {
                        let pair: String = [c, next].iter().collect();
                        each(&normal(&pair), at, start, next_end);
                    }
                }
                position += chars.len() as u32;
            }
        }
    }
}

/// The terms of an ASCII text: its runs of letters and digits, lowercase.
/// In ASCII, Unicode word boundaries never fall between two letters or
/// digits, and every other character is a boundary or punctuation, which
/// [`units`] cuts at: the same terms, without the segmentation's cost.
fn ascii_tokens(text: &str, mut each: impl FnMut(&str, u32, usize, usize)) {
    let bytes = text.as_bytes();
    let mut term = String::new();
    let mut position = 0u32;
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        term.clear();
        term.extend(bytes[start..at].iter().map(|b| char::from(b.to_ascii_lowercase())));
        each(&term, position, start, at);
        position += 1;
    }
}

/// Returns the terms by which a query finds `text`: its words, and for
/// each CJK run its pairs (its one character when it has one), each with
/// its position.
fn query_terms(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut position = 0u32;
    for unit in units(text) {
        match unit {
            Unit::Word { text, .. } => {
                out.push((position, normal(text)));
                position += 1;
            }
            Unit::Run { chars } => {
                if let [(c, _, _)] = chars[..] {
                    out.push((position, normal(c.encode_utf8(&mut [0; 4]))));
                }
                for (i, pair) in chars.windows(2).enumerate() {
                    let pair: String = [pair[0].0, pair[1].0].iter().collect();
                    out.push((position + i as u32, normal(&pair)));
                }
                position += chars.len() as u32;
            }
        }
    }
    out
}

/// One condition of a query.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Clause {
    /// A term.
    Term(String),
    /// Any term starting with this.
    Prefix(String),
    /// Terms at these positions relative to the first (at least two).
    Phrase(Vec<(u32, String)>),
}

/// A parsed query: every clause must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub(crate) clauses: Vec<Clause>,
}

/// Reads a query (see the module docs).
///
/// Errors: [`Error::InvalidInput`] naming `query` for a query longer than
/// [`MAX_QUERY_CHARS`], with a control or format character, with no word
/// to search for or with more than [`MAX_QUERY_CLAUSES`] clauses.
pub(crate) fn parse_query(text: &str) -> Result<Query> {
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Error::invalid("query", Invalid::TooLong { chars, max: MAX_QUERY_CHARS }));
    }
    if let Some(c) = text.chars().find(|&c| is_refused_char(c)) {
        return Err(Error::invalid(
            "query",
            Invalid::ControlCharacter { code_point: u32::from(c) },
        ));
    }
    let mut clauses: Vec<Clause> = Vec::new();
    for (n, part) in text.split('"').enumerate() {
        if n % 2 == 1 {
            clauses.extend(phrase(query_terms(part)));
            continue;
        }
        // Outside quotes: each word a clause, `word*` a prefix, each CJK
        // run one clause.
        for unit in units(part) {
            match unit {
                Unit::Word { text, end, .. } => {
                    let word = normal(text);
                    if part.get(end..).is_some_and(|rest| rest.starts_with('*'))
                        && word.chars().count() >= MIN_PREFIX_CHARS
                    {
                        clauses.push(Clause::Prefix(word));
                    } else {
                        clauses.push(Clause::Term(word));
                    }
                }
                Unit::Run { chars } => {
                    let run: String = chars.iter().map(|&(c, _, _)| c).collect();
                    clauses.extend(phrase(query_terms(&run)));
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    clauses.retain(|clause| seen.insert(clause.clone()));
    if clauses.is_empty() {
        return Err(Error::invalid(
            "query",
            Invalid::Malformed {
                rule: "text with at least one word (letters or digits) to search for",
            },
        ));
    }
    if clauses.len() > MAX_QUERY_CLAUSES {
        return Err(Error::invalid(
            "query",
            Invalid::TooMany { count: clauses.len(), max: MAX_QUERY_CLAUSES },
        ));
    }
    Ok(Query { clauses })
}

/// Returns the clause of a phrase's terms: none when it has no term, a
/// term when it has one.
fn phrase(mut terms: Vec<(u32, String)>) -> Option<Clause> {
    match terms.len() {
        0 => None,
        1 => terms.pop().map(|(_, term)| Clause::Term(term)),
        _ => {
            let first = terms[0].0;
            Some(Clause::Phrase(terms.into_iter().map(|(at, term)| (at - first, term)).collect()))
        }
    }
}

impl Clause {
    /// Returns the byte ranges of `tokens` where this clause matches.
    fn spans(&self, tokens: &[Token]) -> Vec<(usize, usize)> {
        match self {
            Clause::Term(term) => {
                tokens.iter().filter(|t| t.term == *term).map(|t| (t.start, t.end)).collect()
            }
            Clause::Prefix(prefix) => tokens
                .iter()
                .filter(|t| t.term.starts_with(prefix.as_str()))
                .map(|t| (t.start, t.end))
                .collect(),
            Clause::Phrase(terms) => {
                let mut out = Vec::new();
                let (_, first) = &terms[0];
                for head in tokens.iter().filter(|t| t.term == *first) {
                    let mut end = head.end;
                    let all = terms[1..].iter().all(|(offset, term)| {
                        let at = head.position + offset;
                        tokens.iter().find(|t| t.position == at && t.term == *term).is_some_and(
                            |t| {
                                end = end.max(t.end);
                                true
                            },
                        )
                    });
                    if all {
                        out.push((head.start, end));
                    }
                }
                out
            }
        }
    }
}

impl Query {
    /// Returns whether an item with this content and memory key matches:
    /// every clause in one of them. The rule the index must agree with.
    pub(crate) fn matches(&self, content: &str, memory_key: Option<&str>) -> bool {
        let content = tokens(content);
        let key = memory_key.map(tokens).unwrap_or_default();
        self.clauses
            .iter()
            .all(|clause| !clause.spans(&content).is_empty() || !clause.spans(&key).is_empty())
    }

    /// Returns up to [`SNIPPET_CHARS`] characters of `content` around its
    /// first match, each match in `**`, with `...` where it was cut.
    pub(crate) fn snippet(&self, content: &str) -> String {
        let tokens = tokens(content);
        let mut spans: Vec<(usize, usize)> =
            self.clauses.iter().flat_map(|clause| clause.spans(&tokens)).collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let total = content.chars().count();
        let (from, to) = if total <= SNIPPET_CHARS {
            (0, content.len())
        } else {
            let first = merged.first().map_or(0, |&(start, _)| start);
            let before = content[..first].chars().count();
            let start_char = before.saturating_sub(SNIPPET_CHARS / 4).min(total - SNIPPET_CHARS);
            let from = content.char_indices().nth(start_char).map_or(0, |(at, _)| at);
            let to = content[from..]
                .char_indices()
                .nth(SNIPPET_CHARS)
                .map_or(content.len(), |(at, _)| from + at);
            (from, to)
        };
        let mut out = String::new();
        if from > 0 {
            out.push_str("...");
        }
        let mut at = from;
        for &(start, end) in &merged {
            if end <= from || start >= to {
                continue;
            }
            let (start, end) = (start.max(from), end.min(to));
            out.push_str(&content[at..start]);
            out.push_str("**");
            out.push_str(&content[start..end]);
            out.push_str("**");
            at = end;
        }
        out.push_str(&content[at..to]);
        if to < content.len() {
            out.push_str("...");
        }
        out
    }
}

/// The most characters of content a snippet shows.
pub const SNIPPET_CHARS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<(u32, String)> {
        tokens(text).into_iter().map(|t| (t.position, t.term)).collect()
    }

    #[test]
    fn words_are_cut_at_unicode_boundaries_and_folded() {
        assert_eq!(
            terms("Use SQLite's WAL-mode, Stra\u{df}e."),
            [(0, "use"), (1, "sqlite"), (2, "s"), (3, "wal"), (4, "mode"), (5, "strasse")]
                .map(|(p, t)| (p, t.to_owned()))
        );
    }

    /// The terms of `text` by the general rule (segmentation, then
    /// punctuation), without the ASCII shortcut.
    fn general_terms(text: &str) -> Vec<(u32, String, usize, usize)> {
        let mut out = Vec::new();
        let mut position = 0u32;
        for unit in units(text) {
            if let Unit::Word { text, start, end } = unit {
                out.push((position, normal(text), start, end));
                position += 1;
            }
        }
        out
    }

    fn fast_terms(text: &str) -> Vec<(u32, String, usize, usize)> {
        tokens(text).into_iter().map(|t| (t.position, t.term, t.start, t.end)).collect()
    }

    #[test]
    fn ascii_terms_are_those_of_word_boundaries() {
        for text in [
            "Use SQLite's WAL-mode, config.toml and snake_case: 3.14, U.S.A., x86_64!",
            "a\tb\r\nc  d--e__f ''g'' \"h\" 1,000,000 v2.0-rc1 @home #tag $x %y ^z",
            "",
            "   ",
            "...",
            "_",
            "a",
            "ab'cd",
            "e.g.",
            "10:30",
            "foo/bar\\baz",
        ] {
            assert_eq!(fast_terms(text), general_terms(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn ascii_terms_agree_with_the_general_rule(text in "[ -~\t\n\r]{0,60}") {
            proptest::prop_assert_eq!(fast_terms(&text), general_terms(&text));
        }
    }

    #[test]
    fn cjk_runs_give_unigrams_and_pairs() {
        assert_eq!(
            terms("\u{6570}\u{636e}\u{5e93} ok"),
            [
                (0, "\u{6570}"),
                (0, "\u{6570}\u{636e}"),
                (1, "\u{636e}"),
                (1, "\u{636e}\u{5e93}"),
                (2, "\u{5e93}"),
                (3, "ok")
            ]
            .map(|(p, t)| (p, t.to_owned()))
        );
    }

    #[test]
    fn queries_read_words_prefixes_phrases_and_runs() {
        let query = parse_query("pars* \"wal mode\" AND (x) \u{6570}\u{636e}\u{5e93}").unwrap();
        assert_eq!(
            query.clauses,
            [
                Clause::Prefix("pars".into()),
                Clause::Phrase(vec![(0, "wal".into()), (1, "mode".into())]),
                Clause::Term("and".into()),
                Clause::Term("x".into()),
                Clause::Phrase(vec![
                    (0, "\u{6570}\u{636e}".into()),
                    (1, "\u{636e}\u{5e93}".into())
                ]),
            ]
        );
        assert!(query.matches("parser uses WAL mode and x for \u{6570}\u{636e}\u{5e93}", None));
        assert!(!query.matches("parser uses mode WAL and x for \u{6570}\u{636e}\u{5e93}", None));
        assert!(!query.matches("parser uses WAL mode and x for \u{6570}\u{636e}", None));
    }

    #[test]
    fn hostile_queries_are_refused_clearly() {
        for bad in ["", "  ** ()", "\"\"", &"a ".repeat(600), "a\u{1b}[2J", "a\u{202e}b"] {
            let err = parse_query(bad).unwrap_err().to_string();
            assert!(err.contains("query"), "{bad:?}: {err}");
        }
        let many = (0..40).map(|n| format!("w{n}")).collect::<Vec<_>>().join(" ");
        assert!(parse_query(&many).unwrap_err().to_string().contains("at most 32"));
    }

    #[test]
    fn snippets_mark_matches() {
        let query = parse_query("wal").unwrap();
        assert_eq!(query.snippet("Use WAL mode"), "Use **WAL** mode");
        let long = format!("{} WAL {}", "x".repeat(300), "y".repeat(300));
        let snippet = query.snippet(&long);
        assert!(snippet.starts_with("...") && snippet.ends_with("..."), "{snippet}");
        assert!(snippet.contains("**WAL**"));
    }
}
