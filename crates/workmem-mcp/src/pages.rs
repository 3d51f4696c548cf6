//! Bounded results: every tool result and resource holds at most
//! [`MAX_RESULT_CHARS`] characters, so no client has to cut it (Claude Code
//! replaces a longer result with a short preview the model cannot use).
//!
//! Lists that can be long come in pages, each as large as fits, with an
//! opaque `next_cursor` for the next one; items have a compact shape (long
//! evidence values and candidate wordings are cut, marked as cut, with
//! their full form one call or one command away).
//!
//! Paging is stable under appends and reviews, for the snapshot the first
//! page saw:
//!
//! - `list_recent_facts` fixes its window on the first page: the `limit`
//!   newest facts, by (recorded_at, fact_id). Pages go back in time from the
//!   newest, and each later page lists facts strictly older than the last
//!   one listed and no older than the window's oldest. Every fact of the
//!   window is listed exactly once; a fact appended meanwhile is newer than
//!   the window (never listed) unless it was backdated into it (`--at`,
//!   `import`), in which case it is listed at most once.
//! - `list_conflicts` lists open cases by conflict_id; each later page
//!   lists the open cases after the last id listed. A case open throughout
//!   is listed exactly once; one resolved meanwhile is no longer open, and
//!   one opened meanwhile is listed at most once.
//!
//! A cursor is `wm1.`, the hex of a small JSON object naming the list and
//! its bounds, and a check of both keyed with the workspace id (which no
//! tool shows): it carries no state of the server and never expires, and a
//! cursor made by hand is refused, so that no listing goes past its limit
//! (at most 1,000 facts over all pages).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use workmem::{Case, Error, Fact, Invalid, Stamp, Workspace};

use crate::tools::{DEFAULT_LIMIT, MAX_LIMIT};

/// Facts listed when no limit is given, and the most a listing may hold.
const LIMITS: (usize, usize) = (DEFAULT_LIMIT as usize, MAX_LIMIT as usize);

/// The most characters of any tool result's text or resource's text.
pub const MAX_RESULT_CHARS: usize = 25_000;

/// Evidence values longer than this many characters are cut in a listed
/// fact.
pub const EVIDENCE_VALUE_CHARS: usize = 120;
/// Candidate wordings longer than this many characters are cut in a listed
/// conflict.
pub const CANDIDATE_CHARS: usize = 200;
/// Candidates shown per case in `list_conflicts`; the rest are counted.
pub const CANDIDATES_SHOWN: usize = 10;
/// Evidence ids shown per candidate in a conflict's detail; the rest are
/// counted.
pub const EVIDENCE_IDS_SHOWN: usize = 5;

/// Facts read for one later page of `list_recent_facts`: more than any
/// page can hold (a listed fact takes at least 90 characters).
const FACTS_PER_READ: usize = 300;
/// Room kept in a page for its `next_cursor` and the closing brackets.
const CURSOR_ROOM: usize = 600;
const CURSOR_PREFIX: &str = "wm1.";

/// A position in the log's order: a fact's (recorded_at, fact_id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    at: String,
    id: String,
}

impl Position {
    fn of(fact: &Fact) -> Position {
        Position { at: fact.recorded_at().as_str().to_owned(), id: fact.fact_id().to_owned() }
    }

    /// Returns the position as the log orders it.
    fn key(&self) -> Result<(jiff::Timestamp, &str), Error> {
        let at = Stamp::parse(&self.at).map_err(|_| bad_cursor())?;
        Ok((at.instant(), self.id.as_str()))
    }
}

/// What a cursor says: which list, and where its next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "list", rename_all = "snake_case", deny_unknown_fields)]
enum Cursor {
    /// The next page of `list_recent_facts`: facts before `before`, not
    /// before `from` (the window's oldest), after `listed` facts of a
    /// listing of `limit`; `capped` once a limit other than the first
    /// page's was given, which then bounds the facts listed in all.
    RecentFacts { from: Position, before: Position, listed: usize, limit: usize, capped: bool },
    /// The next page of `list_conflicts`: open cases after `after`.
    Conflicts { after: String },
    /// The next page of one case's detail: its candidates after the
    /// `after`-th.
    Candidates { conflict_id: String, after: usize },
}

impl Cursor {
    fn encode(&self, ws: &Workspace) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{CURSOR_PREFIX}{}.{}", hex::encode(&json), check(ws, json.as_bytes()))
    }

    fn decode(ws: &Workspace, text: &str) -> Result<Cursor, Error> {
        text.strip_prefix(CURSOR_PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .and_then(|(hex_text, mac)| {
                let json = hex::decode(hex_text).ok()?;
                (check(ws, &json) == mac).then_some(json)
            })
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or_else(bad_cursor)
    }
}

/// The check of a cursor's JSON: 16 hex digits of SHA-256 over the
/// workspace id and the JSON (a JSON object followed by anything is no
/// longer JSON, so the hash's length extension gives nothing).
fn check(ws: &Workspace, json: &[u8]) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(b"workmem-mcp cursor\n");
    hash.update(ws.workspace_id().as_bytes());
    hash.update(b"\n");
    hash.update(json);
    hex::encode(&hash.finalize()[..8])
}

fn bad_cursor() -> Error {
    Error::invalid(
        "cursor",
        Invalid::Malformed { rule: "the next_cursor of an earlier result of this tool, unchanged" },
    )
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Returns the compact form of a JSON value's text length.
fn size(value: &Value) -> usize {
    chars(&value.to_string())
}

/// Returns `text` cut after `max` characters, with what was cut said.
fn cut(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some((end, _)) => {
            let rest = chars(&text[end..]);
            (format!("{}... ({rest} more characters)", &text[..end]), true)
        }
    }
}

/// Returns the listed form of a fact: every field but the workspace id and
/// schema version; `memory_key` and `evidence` only when present, evidence
/// values over [`EVIDENCE_VALUE_CHARS`] cut (and `evidence_cut` set).
pub fn compact_fact(fact: &Fact) -> Value {
    let mut item = Map::new();
    item.insert("fact_id".into(), fact.fact_id().into());
    item.insert("recorded_at".into(), fact.recorded_at().as_str().into());
    item.insert("kind".into(), fact.kind().as_str().into());
    item.insert("importance".into(), fact.importance().into());
    item.insert("source".into(), fact.source().into());
    if let Some(key) = fact.memory_key() {
        item.insert("memory_key".into(), key.into());
    }
    item.insert("content".into(), fact.content().into());
    if !fact.evidence().is_empty() {
        let mut any_cut = false;
        let evidence: Map<String, Value> = fact
            .evidence()
            .iter()
            .map(|(key, value)| {
                let (value, was_cut) = cut(value, EVIDENCE_VALUE_CHARS);
                any_cut |= was_cut;
                (key.clone(), Value::String(value))
            })
            .collect();
        item.insert("evidence".into(), Value::Object(evidence));
        if any_cut {
            item.insert("evidence_cut".into(), true.into());
        }
    }
    Value::Object(item)
}

/// Returns one page of `list_recent_facts` (`{"facts": [...],
/// "next_cursor"?}`): on the first page (`cursor` `None`) the newest of the
/// `limit` most recent facts, else the next older ones of the same window,
/// as many as fit in `max_chars`; each page oldest first. With a cursor,
/// `limit` (the first page's when `None`) still bounds the facts listed
/// over all pages.
///
/// Errors: [`Error::InvalidInput`] naming `cursor`; the workspace's errors.
pub fn recent_facts_page(
    ws: &Workspace,
    limit: Option<usize>,
    cursor: Option<&str>,
    max_chars: usize,
) -> Result<Value, Error> {
    let decoded = cursor.map(|text| Cursor::decode(ws, text)).transpose()?;
    let (candidates, from, listed, limit, capped) = match decoded {
        None => {
            let limit = limit.unwrap_or(LIMITS.0);
            let window = ws.recent_facts(limit)?;
            let from = window.first().map(Position::of);
            (window, from, 0, limit, false)
        }
        Some(Cursor::RecentFacts { from, before, listed, limit: first, capped }) => {
            let lowest = from.key()?;
            let before_at = Stamp::parse(&before.at).map_err(|_| bad_cursor())?;
            let mut older = ws.recent_facts_before(&before_at, &before.id, FACTS_PER_READ)?;
            older.retain(|f| (f.recorded_at().instant(), f.fact_id()) >= lowest);
            // The first page's limit fixed the window (a fact backdated
            // into it while paging is listed too); a new limit bounds what
            // the listing holds in all.
            let limit = limit.unwrap_or(first).min(LIMITS.1);
            let capped = capped || limit != first;
            if capped {
                let left = limit.saturating_sub(listed);
                if older.len() > left {
                    older.drain(..older.len() - left);
                }
            }
            (older, Some(from), listed, limit, capped)
        }
        Some(_) => return Err(bad_cursor()),
    };
    // Newest first, as many as fit.
    let room = max_chars.saturating_sub(CURSOR_ROOM + chars(r#"{"facts":[]}"#));
    let mut used = 0;
    let mut page: Vec<(&Fact, Value)> = Vec::new();
    for fact in candidates.iter().rev() {
        let item = compact_fact(fact);
        let cost = size(&item) + 1;
        if used + cost > room && !page.is_empty() {
            break;
        }
        used += cost;
        page.push((fact, item));
    }
    let more = page.len() < candidates.len();
    let next = match (more, from, page.last()) {
        (true, Some(from), Some((oldest, _))) => Some(
            Cursor::RecentFacts {
                from,
                before: Position::of(oldest),
                listed: listed + page.len(),
                limit,
                capped,
            }
            .encode(ws),
        ),
        _ => None,
    };
    page.reverse();
    let facts: Vec<Value> = page.into_iter().map(|(_, item)| item).collect();
    let mut result = json!({ "facts": facts });
    if let Some(next) = next {
        result["next_cursor"] = next.into();
    }
    Ok(result)
}

/// Returns the listed form of an open case: its id, memory key and the
/// wordings of its candidates (each cut at [`CANDIDATE_CHARS`], at most
/// [`CANDIDATES_SHOWN`] of them, the rest counted).
pub fn compact_case(case: &Case) -> Value {
    let candidates: Vec<Value> = case
        .candidates
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|candidate| cut(&candidate.content, CANDIDATE_CHARS).0.into())
        .collect();
    let mut item = json!({
        "conflict_id": case.conflict_id,
        "memory_key": case.memory_key,
        "candidates": candidates,
    });
    let hidden = case.candidates.len().saturating_sub(CANDIDATES_SHOWN);
    if hidden > 0 {
        item["more_candidates"] = hidden.into();
    }
    item
}

/// Returns one page of `list_conflicts` (`{"open_cases": N, "conflicts":
/// [...], "next_cursor"?}`): the open cases by conflict_id, after the
/// cursor's, as many as fit in `max_chars`.
///
/// Errors: [`Error::InvalidInput`] naming `cursor`; the workspace's errors.
pub fn conflicts_page(
    ws: &Workspace,
    cursor: Option<&str>,
    max_chars: usize,
) -> Result<Value, Error> {
    let after = match cursor.map(|text| Cursor::decode(ws, text)).transpose()? {
        None => None,
        Some(Cursor::Conflicts { after }) => Some(after),
        Some(_) => return Err(bad_cursor()),
    };
    let queue = ws.conflicts()?;
    let mut open: Vec<&Case> = queue.cases.iter().filter(|case| case.is_open()).collect();
    open.sort_by(|a, b| a.conflict_id.cmp(&b.conflict_id));
    let total = open.len();
    let rest: Vec<&Case> = open
        .into_iter()
        .filter(|case| after.as_deref().is_none_or(|after| case.conflict_id.as_str() > after))
        .collect();
    let room =
        max_chars.saturating_sub(CURSOR_ROOM + chars(r#"{"open_cases":,"conflicts":[]}"#) + 20);
    let mut used = 0;
    let mut page: Vec<Value> = Vec::new();
    let mut last: Option<&str> = None;
    for case in &rest {
        let item = compact_case(case);
        let cost = size(&item) + 1;
        if used + cost > room && !page.is_empty() {
            break;
        }
        used += cost;
        page.push(item);
        last = Some(&case.conflict_id);
    }
    let mut result = json!({ "open_cases": total, "conflicts": page });
    if let (true, Some(last)) =
        (result["conflicts"].as_array().map_or(0, Vec::len) < rest.len(), last)
    {
        result["next_cursor"] = Cursor::Conflicts { after: last.to_owned() }.encode(ws).into();
    }
    Ok(result)
}

/// Returns one case in detail (`{"conflict": {...}, "next_cursor"?}`):
/// status, revision, when it was detected, and each candidate with its
/// number, id, kind, whole wording, counts, dates and first
/// [`EVIDENCE_IDS_SHOWN`] evidence ids, and how a human decides it. The
/// candidates come in pages, as many as fit in `max_chars`: with `cursor`
/// (this case's `next_cursor`), the ones after the last listed.
///
/// Errors: [`Error::InvalidInput`] naming `conflict_id` when no case has
/// it, or `cursor` when it is not this case's; the workspace's errors.
pub fn conflict_detail(
    ws: &Workspace,
    conflict_id: &str,
    cursor: Option<&str>,
    max_chars: usize,
) -> Result<Value, Error> {
    let skip = match cursor.map(|text| Cursor::decode(ws, text)).transpose()? {
        None => 0,
        Some(Cursor::Candidates { conflict_id: id, after }) if id == conflict_id => after,
        Some(_) => return Err(bad_cursor()),
    };
    let queue = ws.conflicts()?;
    let Some(case) = queue.get(conflict_id) else {
        return Err(Error::invalid(
            "conflict_id",
            Invalid::Malformed {
                rule: "the conflict_id of a case of this workspace, as list_conflicts lists it",
            },
        ));
    };
    let mut detail = json!({
        "conflict_id": case.conflict_id,
        "memory_key": case.memory_key,
        "status": case.status.as_str(),
        "revision": case.revision,
        "detected_at": case.detected_at.as_str(),
        "active_entry_key": case.active_entry_key,
        "selected_candidate_id": case.selected_candidate_id,
        "candidates": [],
        "decided_by": format!(
            "a human, with `workmem review` or `workmem resolve {} <candidate number or id> --revision {} --rationale '...'`",
            case.conflict_id, case.revision
        ),
    });
    let room = max_chars.saturating_sub(size(&json!({ "conflict": detail })) + CURSOR_ROOM);
    let mut used = 0;
    let mut shown: Vec<Value> = Vec::new();
    for (number, candidate) in case.candidates.iter().enumerate().skip(skip) {
        let ids: Vec<&str> = candidate.evidence_ids.iter().take(EVIDENCE_IDS_SHOWN).collect();
        let item = json!({
            "number": number + 1,
            "candidate_id": candidate.candidate_id,
            "kind": candidate.kind.as_str(),
            "content": candidate.content,
            "incumbent": candidate.incumbent,
            "occurrences": candidate.occurrences,
            "maximum_importance": candidate.maximum_importance,
            "first_seen": candidate.first_seen.as_str(),
            "last_seen": candidate.last_seen.as_str(),
            "evidence_ids": ids,
            "more_evidence_ids": candidate.evidence_ids.len().saturating_sub(ids.len()),
        });
        let cost = size(&item) + 1;
        if used + cost > room && !shown.is_empty() {
            break;
        }
        used += cost;
        shown.push(item);
    }
    let next = skip + shown.len();
    let hidden = case.candidates.len().saturating_sub(next);
    detail["candidates"] = shown.into();
    let mut result = json!({ "conflict": detail });
    if hidden > 0 {
        result["conflict"]["more_candidates"] = hidden.into();
        result["next_cursor"] =
            Cursor::Candidates { conflict_id: case.conflict_id.clone(), after: next }
                .encode(ws)
                .into();
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use workmem::{DistillOptions, NewFact};

    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), None).unwrap();
        ws.init().unwrap();
        (dir, ws)
    }

    fn at(n: usize) -> String {
        format!("2026-01-{:02}T{:02}:{:02}:00Z", 1 + n / 1440 % 28, n / 60 % 24, n % 60)
    }

    fn add(ws: &Workspace, id: &str, when: &str, content: &str) {
        ws.remember(NewFact {
            fact_id: Some(id.to_owned()),
            recorded_at: Some(when.to_owned()),
            ..NewFact::new(content)
        })
        .unwrap();
    }

    /// Pages through `list_recent_facts` with `limit`, running `between`
    /// after each page; returns the ids listed and the number of pages.
    fn all_pages(
        ws: &Workspace,
        limit: usize,
        mut between: impl FnMut(usize),
    ) -> (Vec<String>, usize) {
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        for page_number in 1.. {
            let page =
                recent_facts_page(ws, Some(limit), cursor.as_deref(), MAX_RESULT_CHARS).unwrap();
            assert!(size(&page) <= MAX_RESULT_CHARS, "page {page_number}: {}", size(&page));
            let facts = page["facts"].as_array().unwrap();
            assert!(!facts.is_empty(), "an empty page");
            ids.extend(facts.iter().map(|f| f["fact_id"].as_str().unwrap().to_owned()));
            match page.get("next_cursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return (ids, page_number),
            }
            between(page_number);
        }
        unreachable!()
    }

    #[test]
    fn the_largest_fact_fits_a_page_with_its_evidence_cut() {
        let (_dir, ws) = workspace();
        let evidence: BTreeMap<String, String> =
            (0..32).map(|i| (format!("{i:02}{}", "\"".repeat(98)), "\"".repeat(4_000))).collect();
        ws.remember(NewFact {
            content: "\"".repeat(2_000),
            memory_key: Some("k".repeat(120)),
            fact_id: Some("f".repeat(200)),
            source: Some("s".repeat(64)),
            evidence,
            ..NewFact::default()
        })
        .unwrap();
        let page = recent_facts_page(&ws, Some(1), None, MAX_RESULT_CHARS).unwrap();
        assert!(size(&page) <= MAX_RESULT_CHARS - CURSOR_ROOM, "{}", size(&page));
        let fact = &page["facts"][0];
        assert_eq!(fact["content"].as_str().unwrap().len(), 2_000);
        assert_eq!(fact["evidence_cut"], true);
        let value = fact["evidence"].as_object().unwrap().values().next().unwrap();
        assert!(value.as_str().unwrap().ends_with("... (3880 more characters)"), "{value}");
    }

    #[test]
    fn pages_list_the_window_once_while_facts_are_appended() {
        let (_dir, ws) = workspace();
        let content = "A fact long enough that a page holds a few dozen of them. ".repeat(4);
        let facts = (0..1_500).map(|n| NewFact {
            fact_id: Some(format!("f{n:04}")),
            recorded_at: Some(at(n)),
            ..NewFact::new(content.clone())
        });
        ws.import(facts.collect(), &mut |_| {}).unwrap();
        let window: Vec<String> =
            ws.recent_facts(1_000).unwrap().iter().map(|f| f.fact_id().to_owned()).collect();
        let mut backdated = BTreeSet::new();
        let (ids, pages) = all_pages(&ws, 1_000, |page| {
            // Newer than the window: never listed.
            add(&ws, &format!("new{page}"), "2026-03-01T00:00:00Z", "Appended while paging.");
            // Backdated into the window's older end, not yet listed.
            let id = format!("back{page}");
            add(&ws, &id, &at(600), "Backdated while paging.");
            backdated.insert(id);
        });
        assert!(pages > 5, "{pages} pages");
        let listed: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(listed.len(), ids.len(), "a fact listed twice");
        assert!(window.iter().all(|id| listed.contains(id)), "a fact of the window is missing");
        for id in &ids {
            assert!(window.contains(id) || backdated.contains(id), "{id} is not in the window");
        }
        assert!(ids.iter().all(|id| !id.starts_with("new")));
        // A small window fits in one page, exactly as before.
        let (ids, pages) = all_pages(&ws, 3, |_| {});
        assert_eq!(pages, 1);
        let newest: Vec<String> =
            ws.recent_facts(3).unwrap().iter().map(|f| f.fact_id().to_owned()).collect();
        assert_eq!(ids, newest);
    }

    #[test]
    fn a_cursor_is_checked_and_belongs_to_its_list() {
        let (_dir, ws) = workspace();
        for n in 0..3 {
            add(&ws, &format!("f{n}"), &at(n), "x");
        }
        let conflicts = Cursor::Conflicts { after: "conflict-1".into() }.encode(&ws);
        // A cursor made by hand (its JSON without the check, or with
        // another workspace's) is refused.
        let json = r#"{"list":"recent_facts","from":{"at":"2020-01-01T00:00:00Z","id":"a"},"before":{"at":"2030-01-01T00:00:00Z","id":"z"},"listed":0,"limit":1000,"capped":false}"#;
        let forged = format!("wm1.{}.0000000000000000", hex::encode(json));
        let unchecked = format!("wm1.{}", hex::encode(json));
        let (_other_dir, other) = workspace();
        let foreign = Cursor::Conflicts { after: "conflict-1".into() }.encode(&other);
        for bad in [
            "",
            "wm1.",
            "wm1.zz",
            "abc",
            &conflicts,
            &format!("{}00", &conflicts),
            &forged,
            &unchecked,
        ] {
            let err = recent_facts_page(&ws, Some(10), Some(bad), MAX_RESULT_CHARS).unwrap_err();
            assert!(err.to_string().starts_with("invalid cursor"), "{bad}: {err}");
        }
        assert!(conflicts_page(&ws, Some(&foreign), MAX_RESULT_CHARS).is_err());
        let facts = Cursor::RecentFacts {
            from: Position { at: at(0), id: "f0".into() },
            before: Position { at: "yesterday".into(), id: "f2".into() },
            listed: 1,
            limit: 10,
            capped: false,
        }
        .encode(&ws);
        assert!(recent_facts_page(&ws, Some(10), Some(&facts), MAX_RESULT_CHARS).is_err());
        assert!(conflicts_page(&ws, Some(&facts), MAX_RESULT_CHARS).is_err());
        assert!(Cursor::decode(&ws, &conflicts).is_ok());
    }

    /// Writes `keys` memory keys with two tied values each, of `long`
    /// characters, and distills them into open cases.
    fn ties(ws: &Workspace, keys: usize, long: usize) {
        for n in 0..keys {
            for (value, id) in [("A", "a"), ("B", "b")] {
                ws.remember(NewFact {
                    content: format!("{value}{}", "v".repeat(long)),
                    kind: Some("decision".into()),
                    importance: Some(4),
                    memory_key: Some(format!("tie.k{n}")),
                    fact_id: Some(format!("t{n}{id}")),
                    recorded_at: Some("2026-01-01T00:00:00Z".into()),
                    ..NewFact::default()
                })
                .unwrap();
            }
        }
        let as_of = Stamp::parse("2026-06-01T00:00:00Z").unwrap();
        let distilled = ws.distill(&DistillOptions::new().as_of(as_of)).unwrap();
        assert_eq!(distilled.report.queued_conflicts, keys);
    }

    #[test]
    fn open_cases_come_in_pages_each_once_while_one_is_resolved() {
        let (_dir, ws) = workspace();
        ties(&ws, 150, 300);
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = conflicts_page(&ws, cursor.as_deref(), MAX_RESULT_CHARS).unwrap();
            pages += 1;
            assert!(size(&page) <= MAX_RESULT_CHARS, "{}", size(&page));
            let cases = page["conflicts"].as_array().unwrap();
            for case in cases {
                let candidates = case["candidates"].as_array().unwrap();
                assert_eq!(candidates.len(), 2);
                // Wordings are cut at 200 characters.
                assert!(candidates[0].as_str().unwrap().ends_with("... (101 more characters)"));
            }
            listed.extend(cases.iter().map(|c| c["conflict_id"].as_str().unwrap().to_owned()));
            let Some(next) = page.get("next_cursor").and_then(Value::as_str) else { break };
            cursor = Some(next.to_owned());
            if pages == 1 {
                // Resolving a listed case must not shift the next pages.
                let queue = ws.conflicts().unwrap();
                let case = queue.get(&listed[0]).unwrap();
                ws.resolve(workmem::Resolution {
                    conflict_id: case.conflict_id.clone(),
                    candidate_id: case.candidates[0].candidate_id.clone(),
                    expected_revision: 1,
                    actor: "Ada <ada@example.com>".into(),
                    rationale: "decided while paging".into(),
                    event_id: "review:paging".into(),
                    resolved_at: None,
                })
                .unwrap();
            }
        }
        assert!(pages > 1);
        let unique: BTreeSet<&String> = listed.iter().collect();
        assert_eq!(unique.len(), 150, "{pages} pages");
        assert_eq!(listed.len(), 150);
    }

    #[test]
    fn a_limit_given_with_a_cursor_bounds_the_listing() {
        let (_dir, ws) = workspace();
        for n in 0..40 {
            add(&ws, &format!("f{n:02}"), &at(n), &"x".repeat(1_500));
        }
        // 40 facts of 1,500 characters: about 15 a page.
        let first = recent_facts_page(&ws, Some(40), None, MAX_RESULT_CHARS).unwrap();
        let shown = first["facts"].as_array().unwrap().len();
        assert!(shown < 40, "{shown}");
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        // A new, smaller limit with the cursor: the listing ends at it.
        let second =
            recent_facts_page(&ws, Some(shown + 3), Some(&cursor), MAX_RESULT_CHARS).unwrap();
        assert_eq!(second["facts"].as_array().unwrap().len(), 3, "{second}");
        assert!(second.get("next_cursor").is_none());
        // A new limit larger than one page: later pages keep to it.
        let mut capped = Some(cursor.clone());
        let mut in_all = shown;
        while let Some(next) = capped {
            let page =
                recent_facts_page(&ws, Some(shown + 20), Some(&next), MAX_RESULT_CHARS).unwrap();
            in_all += page["facts"].as_array().unwrap().len();
            capped = page.get("next_cursor").and_then(Value::as_str).map(str::to_owned);
        }
        assert_eq!(in_all, shown + 20);
        // Without a limit, the first page's holds: every fact of the 40.
        let (ids, _) = all_pages(&ws, 40, |_| {});
        assert_eq!(ids.len(), 40);
        let mut cursor = Some(cursor);
        let mut total = shown;
        while let Some(next) = cursor {
            let page = recent_facts_page(&ws, None, Some(&next), MAX_RESULT_CHARS).unwrap();
            total += page["facts"].as_array().unwrap().len();
            cursor = page.get("next_cursor").and_then(Value::as_str).map(str::to_owned);
        }
        assert_eq!(total, 40);
    }

    #[test]
    fn a_case_in_detail_is_bounded_and_names_its_candidates() {
        let (_dir, ws) = workspace();
        ties(&ws, 1, 1_900);
        let id = ws.conflicts().unwrap().cases[0].conflict_id.clone();
        let detail = conflict_detail(&ws, &id, None, MAX_RESULT_CHARS).unwrap();
        assert!(size(&detail) <= MAX_RESULT_CHARS);
        let case = &detail["conflict"];
        assert_eq!(case["status"], "open");
        assert_eq!(case["candidates"].as_array().unwrap().len(), 2);
        assert_eq!(case["candidates"][0]["content"].as_str().unwrap().chars().count(), 1_901);
        // A tighter bound shows fewer candidates, counts the rest and pages
        // to them.
        let tight = conflict_detail(&ws, &id, None, 3_000).unwrap();
        assert!(size(&tight) <= 3_000, "{}", size(&tight));
        assert_eq!(tight["conflict"]["candidates"].as_array().unwrap().len(), 1);
        assert_eq!(tight["conflict"]["more_candidates"], 1);
        let cursor = tight["next_cursor"].as_str().unwrap();
        let rest = conflict_detail(&ws, &id, Some(cursor), 3_000).unwrap();
        assert_eq!(rest["conflict"]["candidates"][0]["number"], 2);
        assert!(
            rest.get("next_cursor").is_none() && rest["conflict"].get("more_candidates").is_none()
        );
        let err =
            conflict_detail(&ws, "conflict-0000000000000000", None, MAX_RESULT_CHARS).unwrap_err();
        assert!(err.to_string().starts_with("invalid conflict_id"), "{err}");
    }
}
