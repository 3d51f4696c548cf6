//! How search hits are ranked (docs/search.md): BM25 over the items of one
//! part (the active curated entries, or the facts not retracted), computed
//! by this module alone, whether the items were found through the search
//! index or by reading the records, so both ways give the same hits with
//! the same scores in the same order.
//!
//! An item has two fields, its content and its memory key. Each clause of
//! a query scores in each field it matches: a word by BM25 of how often the
//! field holds it, a phrase by BM25 of how often it occurs there (weighted
//! by the sum of its words' weights), a prefix by 1. The statistics are
//! those of the part as it is now: how many items it has, how many terms
//! each field holds in all, and how many items hold each word of the query
//! in each field; filters narrow the hits, not the statistics. Hits of
//! equal score come in the order of their place: an entry's position among
//! the active entries of curated.json, a fact's daily file and the offset
//! of its line.

use std::cmp::Ordering;

use crate::model::search_text::{self, Clause, Query};

/// The field of an item's content.
pub(crate) const CONTENT: usize = 0;
/// The field of an item's memory key.
pub(crate) const KEY: usize = 1;

/// BM25's saturation of a term's count.
const K1: f32 = 1.2;
/// BM25's normalisation by the field's length.
const B: f32 = 0.75;
/// Bits of a fact's place that hold the offset of its line (the daily
/// file's date above them).
const OFFSET_BITS: u32 = 36;

/// How many items a part holds and how many terms each field holds in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PartStats {
    pub(crate) items: u64,
    pub(crate) tokens: [u64; 2],
}

impl PartStats {
    /// Counts one more item of these field lengths.
    pub(crate) fn add(&mut self, lens: [u64; 2]) {
        self.items += 1;
        self.tokens[CONTENT] += lens[CONTENT];
        self.tokens[KEY] += lens[KEY];
    }

    /// Counts one item of these field lengths less.
    pub(crate) fn remove(&mut self, lens: [u64; 2]) {
        self.items = self.items.saturating_sub(1);
        self.tokens[CONTENT] = self.tokens[CONTENT].saturating_sub(lens[CONTENT]);
        self.tokens[KEY] = self.tokens[KEY].saturating_sub(lens[KEY]);
    }
}

/// The distinct words of a query's word and phrase clauses, sorted: the
/// words whose item counts weigh a match.
pub(crate) fn words(query: &Query) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for clause in &query.clauses {
        match clause {
            Clause::Term(term) => out.push(term),
            Clause::Phrase(terms) => out.extend(terms.iter().map(|(_, term)| term.as_str())),
            Clause::Prefix(_) => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// How a clause scores in one field.
#[derive(Debug, Clone)]
enum Weight {
    /// 1 wherever it matches.
    Prefix,
    /// BM25 of the count, with this weight (idf times `K1 + 1`) per field.
    Counted([f32; 2]),
}

/// The weights of one query's clauses over one part.
#[derive(Debug, Clone)]
pub(crate) struct Ranking {
    weights: Vec<Weight>,
    /// The average length of each field.
    average: [f32; 2],
    /// [`norm`] of each field for the lengths up to [`NORMS`], worked out
    /// once.
    norms: [Vec<f32>; 2],
}

/// How many field lengths [`Ranking`] keeps the norm of.
const NORMS: u64 = 256;

/// BM25's normalisation of a count in a field of `len` terms, where
/// fields hold `average` terms.
fn norm(len: u64, average: f32) -> f32 {
    K1 * (1.0 - B + B * len as f32 / average)
}

/// The inverse document frequency of a word that `doc_freq` of `items`
/// items hold (BM25's, never negative).
fn idf(doc_freq: u64, items: u64) -> f32 {
    let doc_freq = doc_freq.min(items) as f64;
    let items = items as f64;
    (1.0 + (items - doc_freq + 0.5) / (doc_freq + 0.5)).ln() as f32
}

impl Ranking {
    /// The ranking of `query` over a part with `stats`, where
    /// `doc_freq[i][field]` items hold the `i`-th of [`words`] in `field`.
    pub(crate) fn new(query: &Query, stats: &PartStats, doc_freq: &[[u64; 2]]) -> Ranking {
        let words = words(query);
        let freq = |term: &str, field: usize| {
            words.binary_search(&term).map_or(0, |at| doc_freq.get(at).map_or(0, |f| f[field]))
        };
        let weights = query
            .clauses
            .iter()
            .map(|clause| match clause {
                Clause::Prefix(_) => Weight::Prefix,
                Clause::Term(term) => Weight::Counted(
                    [CONTENT, KEY].map(|field| idf(freq(term, field), stats.items) * (K1 + 1.0)),
                ),
                Clause::Phrase(terms) => Weight::Counted([CONTENT, KEY].map(|field| {
                    let sum: f32 =
                        terms.iter().map(|(_, term)| idf(freq(term, field), stats.items)).sum();
                    sum * (K1 + 1.0)
                })),
            })
            .collect();
        let average = [CONTENT, KEY].map(|field| {
            if stats.items == 0 || stats.tokens[field] == 0 {
                1.0
            } else {
                (stats.tokens[field] as f64 / stats.items as f64) as f32
            }
        });
        let norms = average.map(|average| (0..NORMS).map(|len| norm(len, average)).collect());
        Ranking { weights, average, norms }
    }

    /// The score of an item whose fields are `lens` terms long and hold
    /// each clause `counts[clause][field]` times (a prefix: 1 when it
    /// matches there).
    pub(crate) fn score(&self, counts: &[[u32; 2]], lens: [u64; 2]) -> f32 {
        let mut total = 0.0f32;
        for (weight, counts) in self.weights.iter().zip(counts) {
            for field in [CONTENT, KEY] {
                let count = counts[field];
                if count == 0 {
                    continue;
                }
                total += match weight {
                    Weight::Prefix => 1.0,
                    Weight::Counted(weights) => {
                        let count = count as f32;
                        let len = lens[field];
                        let norm = match self.norms[field].get(len as usize) {
                            Some(norm) => *norm,
                            None => norm(len, self.average[field]),
                        };
                        weights[field] * count / (count + norm)
                    }
                };
            }
        }
        total
    }
}

/// The order of hits: higher score first, then the lower place.
pub(crate) fn ranked_order(a: (f32, u64), b: (f32, u64)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Keeps the hits `offset..offset + limit` of `hits` in ranked order.
pub(crate) fn page_of<T>(hits: &mut Vec<(f32, u64, T)>, offset: usize, limit: usize) {
    let order = |a: &(f32, u64, T), b: &(f32, u64, T)| ranked_order((a.0, a.1), (b.0, b.1));
    let end = offset.saturating_add(limit).min(hits.len());
    if offset >= end {
        hits.clear();
        return;
    }
    if end < hits.len() {
        hits.select_nth_unstable_by(end, order);
        hits.truncate(end);
    }
    hits.sort_unstable_by(order);
    hits.drain(..offset);
}

/// The place of the fact whose line starts at `offset` of the daily file
/// of `day` (`YYYY-MM-DD`): the date's digits, then the offset.
pub(crate) fn fact_place(day: &str, offset: u64) -> Option<u64> {
    let digits: String = day.chars().filter(|c| *c != '-').collect();
    if digits.len() != 8 || offset >= 1 << OFFSET_BITS {
        return None;
    }
    let date: u64 = digits.parse().ok()?;
    Some(date << OFFSET_BITS | offset)
}

/// The daily file and offset of a fact's place.
pub(crate) fn fact_at(place: u64) -> (String, u64) {
    let date = place >> OFFSET_BITS;
    let day = format!("{:04}-{:02}-{:02}", date / 10_000, date / 100 % 100, date % 100);
    (day, place & ((1 << OFFSET_BITS) - 1))
}

/// Counts the terms of a text, as [`search_text::each_token`] cuts them.
pub(crate) fn term_count(text: &str) -> u64 {
    let mut count = 0;
    search_text::each_token(text, |_, _, _, _| count += 1);
    count
}

/// Reads items for [`Ranking`] without an index: what each field of an
/// item holds of a query's words, prefixes and phrases.
#[derive(Debug)]
pub(crate) struct Reader<'q> {
    query: &'q Query,
    words: Vec<&'q str>,
    /// For each clause, the index of its word in `words` (a term), of each
    /// of its words with their offsets (a phrase), none (a prefix).
    clause_words: Vec<Vec<(u32, usize)>>,
    phrases: bool,
}

/// What one field of an item holds of a query.
#[derive(Debug, Default, Clone)]
pub(crate) struct FieldRead {
    /// How many terms the field holds.
    pub(crate) len: u64,
    /// How often it holds each word of [`words`].
    pub(crate) counts: Vec<u32>,
    /// Where it holds them (only when the query has a phrase).
    positions: Vec<(usize, u32)>,
    /// For each clause, whether a prefix clause matches a term.
    prefixes: Vec<bool>,
}

impl<'q> Reader<'q> {
    /// The reader of `query`.
    pub(crate) fn new(query: &'q Query) -> Reader<'q> {
        let words = words(query);
        let at = |term: &str| words.binary_search(&term).unwrap_or(0);
        let clause_words = query
            .clauses
            .iter()
            .map(|clause| match clause {
                Clause::Term(term) => vec![(0, at(term))],
                Clause::Phrase(terms) => terms.iter().map(|(offset, t)| (*offset, at(t))).collect(),
                Clause::Prefix(_) => Vec::new(),
            })
            .collect();
        let phrases = query.clauses.iter().any(|c| matches!(c, Clause::Phrase(_)));
        Reader { query, words, clause_words, phrases }
    }

    /// How many clauses the query has.
    pub(crate) fn clause_count(&self) -> usize {
        self.query.clauses.len()
    }

    /// How many distinct words weigh the query's matches.
    pub(crate) fn word_count(&self) -> usize {
        self.words.len()
    }

    /// Reads `text` (a field of an item) into `into`.
    pub(crate) fn read(&self, text: &str, into: &mut FieldRead) {
        into.len = 0;
        into.counts.clear();
        into.counts.resize(self.words.len(), 0);
        into.positions.clear();
        into.prefixes.clear();
        into.prefixes.resize(self.query.clauses.len(), false);
        search_text::each_token(text, |term, position, _, _| {
            into.len += 1;
            if let Ok(at) = self.words.binary_search(&term) {
                into.counts[at] += 1;
                if self.phrases {
                    into.positions.push((at, position));
                }
            }
            for (clause, seen) in self.query.clauses.iter().zip(into.prefixes.iter_mut()) {
                if let Clause::Prefix(prefix) = clause
                    && !*seen
                    && term.starts_with(prefix.as_str())
                {
                    *seen = true;
                }
            }
        });
    }

    /// How often each clause matches in the field `read`: a word's count,
    /// a phrase's occurrences, a prefix's 1 or 0.
    pub(crate) fn clause_counts(&self, read: &FieldRead, field: usize, into: &mut [[u32; 2]]) {
        for (n, clause) in self.query.clauses.iter().enumerate() {
            into[n][field] = match clause {
                Clause::Prefix(_) => u32::from(read.prefixes[n]),
                Clause::Term(_) => read.counts[self.clause_words[n][0].1],
                Clause::Phrase(_) => {
                    let parts = &self.clause_words[n];
                    let (_, first) = parts[0];
                    let has = |word: usize, position: u32| {
                        read.positions.iter().any(|&(w, p)| w == word && p == position)
                    };
                    read.positions
                        .iter()
                        .filter(|&&(w, head)| {
                            w == first
                                && parts[1..].iter().all(|&(offset, word)| has(word, head + offset))
                        })
                        .count() as u32
                }
            };
        }
    }
}

/// Counts the occurrences of a phrase from the sorted positions of each of
/// its words (`positions[i]` those of the word at `offsets[i]`): the
/// positions of the first word where every other word follows at its
/// offset.
pub(crate) fn phrase_count(offsets: &[u32], positions: &[Vec<u32>]) -> u32 {
    let Some(first) = positions.first() else { return 0 };
    first
        .iter()
        .filter(|&&head| {
            offsets[1..]
                .iter()
                .zip(&positions[1..])
                .all(|(offset, at)| at.binary_search(&(head + offset)).is_ok())
        })
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_place_keeps_its_day_and_offset_and_sorts_by_them() {
        let place = fact_place("2026-01-02", 1234).unwrap();
        assert_eq!(fact_at(place), ("2026-01-02".to_owned(), 1234));
        assert!(fact_place("2026-01-02", 99).unwrap() < fact_place("2026-01-03", 0).unwrap());
        assert_eq!(fact_place("2026-1-2", 0), None);
    }

    #[test]
    fn a_page_is_ranked_by_score_then_place() {
        let mut hits = vec![(1.0, 5, 'a'), (2.0, 9, 'b'), (1.0, 3, 'c'), (0.5, 1, 'd')];
        page_of(&mut hits, 1, 2);
        assert_eq!(hits.iter().map(|h| h.2).collect::<String>(), "ca");
    }

    #[test]
    fn a_rarer_word_weighs_more_and_a_longer_field_less() {
        let query = search_text::parse_query("rare common").unwrap();
        let stats = PartStats { items: 100, tokens: [1000, 0] };
        let ranking = Ranking::new(&query, &stats, &[[90, 0], [2, 0]]);
        let common_only = ranking.score(&[[0, 0], [1, 0]], [10, 0]);
        let rare_only = ranking.score(&[[1, 0], [0, 0]], [10, 0]);
        assert!(rare_only > common_only);
        assert!(ranking.score(&[[1, 0], [0, 0]], [40, 0]) < rare_only);
    }
}
