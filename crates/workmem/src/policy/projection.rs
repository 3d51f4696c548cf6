//! Prompt projection (docs/policy.md): the exact MEMORY.md text and the
//! bounded agent context. Pure functions; the workspace decides when to
//! read or write files.
//!
//! MEMORY.md lists every active entry and is never truncated. The agent
//! context is MEMORY.md plus a few recent unkeyed facts and a few pending
//! keyed facts (claims the policy has not accepted yet, under their own
//! heading), held within a character budget: when the whole text does not
//! fit, the highest-priority entries are kept (more evidence, then latest
//! `last_seen`, then content) with an overflow line, and recent facts, then
//! pending keyed facts, fill what is left, each whole or not at all. Keyed
//! raw facts never reach the curated part or the recent facts, and
//! superseded revisions never appear. The same bounded rendering of the
//! curated part alone serves readers that must not receive all of
//! MEMORY.md ([`render_memory_within`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::fact::{Fact, Kind};
use crate::model::stamp::Stamp;
use crate::store::curated_file::EntryHead;
use crate::store::curated_state::Entry;

/// What the projection needs of an active curated entry: its line in
/// MEMORY.md and its priority in the bounded context. Kept in the
/// workspace's projection index so `context` need not parse curated.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projected {
    /// The entry key.
    pub key: String,
    /// The entry kind.
    pub kind: Kind,
    /// The wording.
    pub content: String,
    /// Its occurrences.
    pub occurrences: u64,
    /// Number of evidence ids.
    pub evidence: usize,
    /// Its latest evidence.
    pub last_seen: Stamp,
}

impl From<&Entry> for Projected {
    fn from(entry: &Entry) -> Projected {
        Projected {
            key: entry.key.clone(),
            kind: entry.kind,
            content: entry.content.clone(),
            occurrences: entry.occurrences,
            evidence: entry.evidence_ids.len(),
            last_seen: entry.last_seen.clone(),
        }
    }
}

impl From<&EntryHead> for Projected {
    fn from(head: &EntryHead) -> Projected {
        Projected {
            key: head.key.clone(),
            kind: head.kind,
            content: head.content.clone(),
            occurrences: head.occurrences,
            // A valid state has as many evidence ids as occurrences.
            evidence: usize::try_from(head.occurrences).unwrap_or(usize::MAX),
            last_seen: head.last_seen.clone(),
        }
    }
}

/// Returns the projections of the active entries among `entries`.
pub fn project<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Projected> {
    entries
        .into_iter()
        .filter(|e| e.is_active() && e.kind != Kind::Outcome)
        .map(Projected::from)
        .collect()
}

/// Returns, for each memory key of `entries`, the latest `last_seen` of
/// its entries of any status: a keyed fact recorded later can be evidence
/// of none of them (an entry's `last_seen` is its latest evidence).
pub fn latest_evidence_by_domain<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> BTreeMap<String, Stamp> {
    latest_by_domain(entries.into_iter().map(|e| (e.memory_key.as_ref(), &e.last_seen)))
}

fn latest_by_domain<'a>(
    seen: impl IntoIterator<Item = (Option<&'a String>, &'a Stamp)>,
) -> BTreeMap<String, Stamp> {
    let mut latest: BTreeMap<String, Stamp> = BTreeMap::new();
    for (key, last_seen) in seen {
        let Some(key) = key else { continue };
        match latest.get_mut(key) {
            Some(seen) if seen.instant() >= last_seen.instant() => {}
            Some(seen) => *seen = last_seen.clone(),
            None => {
                latest.insert(key.clone(), last_seen.clone());
            }
        }
    }
    latest
}

/// What MEMORY.md and the context need of a curated state: its active
/// entries, projected, and the latest evidence of each keyed domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    /// The active entries, projected.
    pub entries: Vec<Projected>,
    /// The latest evidence of each keyed domain, over every revision.
    pub domains: BTreeMap<String, Stamp>,
}

impl Projection {
    /// Returns the projection of a whole state's entries.
    pub fn of_entries(entries: &[Entry]) -> Projection {
        Projection { entries: project(entries), domains: latest_evidence_by_domain(entries) }
    }

    /// Returns the projection of a valid curated.json's entry heads.
    pub(crate) fn of_heads<'a>(
        heads: impl IntoIterator<Item = &'a EntryHead> + Clone,
    ) -> Projection {
        Projection {
            entries: heads
                .clone()
                .into_iter()
                .filter(|h| h.is_active() && h.kind != Kind::Outcome)
                .map(Projected::from)
                .collect(),
            domains: latest_by_domain(
                heads.into_iter().map(|h| (h.memory_key.as_ref(), &h.last_seen)),
            ),
        }
    }

    /// Returns the MEMORY.md text.
    pub fn render_memory(&self) -> String {
        render_sections(&self.entries.iter().collect::<Vec<_>>(), None)
    }
}

const TITLE: &str = "# Workspace Memory\n\nDerived from append-only project facts. Edit the source log or policy, not this view.";
const RECENT_TITLE: &str = "# Recent Workspace Facts";
const PENDING_TITLE: &str = "# Pending Keyed Facts (recorded, not in the curated memory)";
const EMPTY_CONTEXT: &str = "(no workspace memory yet)";

/// Default number of recent facts in the agent context.
pub const DEFAULT_RECENT_FACTS: usize = 6;
/// Default number of pending keyed facts in the agent context.
pub const DEFAULT_PENDING_FACTS: usize = 6;
/// Most pending keyed facts the agent context may hold.
pub const MAX_PENDING_FACTS: usize = 100;
/// Default character budget of the agent context.
pub const DEFAULT_CONTEXT_BUDGET: usize = 24_000;
/// Smallest non-zero budget accepted: room for the headings and one line.
pub const MIN_CONTEXT_BUDGET: usize = 200;

fn section_title(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Decision => Some("## Decisions"),
        Kind::Convention => Some("## Conventions"),
        Kind::Pitfall => Some("## Pitfalls"),
        Kind::Outcome => None,
    }
}

fn item_line(entry: &Projected) -> String {
    format!("- {} (seen {}x; evidence: {})", entry.content, entry.occurrences, entry.evidence)
}

/// Returns the MEMORY.md text of the active entries among `entries`.
pub fn render_memory<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> String {
    let active = project(entries);
    render_sections(&active.iter().collect::<Vec<_>>(), None)
}

/// Renders the given active entries by section; `overflow` adds the
/// overflow line to the last section.
fn render_sections(active: &[&Projected], overflow: Option<usize>) -> String {
    let mut out = String::from(TITLE);
    let mut any = false;
    for kind in [Kind::Decision, Kind::Convention, Kind::Pitfall] {
        let mut items: Vec<&&Projected> = active.iter().filter(|e| e.kind == kind).collect();
        if items.is_empty() {
            continue;
        }
        items.sort_by(|a, b| (&a.content, &a.key).cmp(&(&b.content, &b.key)));
        out.push_str("\n\n");
        out.push_str(section_title(kind).unwrap_or_default());
        out.push('\n');
        for item in items {
            out.push('\n');
            out.push_str(&item_line(item));
        }
        any = true;
    }
    if let Some(hidden) = overflow {
        out.push_str(if any { "\n" } else { "\n\n" });
        out.push_str(&overflow_line(hidden));
    }
    out.push('\n');
    out
}

fn overflow_line(hidden: usize) -> String {
    format!("- ({hidden} more entries not shown: run `workmem memory` or `workmem search`)")
}

fn recent_line(fact: &Fact) -> String {
    format!("- [{}] {} ({})", fact.kind, fact.content, fact.recorded_at.utc_day())
}

/// A keyed fact that is not evidence of any curated entry: what the
/// context's pending part shows of it. Kept in the workspace's pending
/// index, so it holds only what the line needs and the fact's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingFact {
    /// The fact id.
    pub fact_id: String,
    /// Its kind.
    pub kind: Kind,
    /// Its memory key.
    pub memory_key: String,
    /// Its content.
    pub content: String,
    /// When it was recorded.
    pub recorded_at: Stamp,
    /// The open conflict case one of whose candidates it is evidence of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_review: Option<String>,
}

impl PendingFact {
    /// Returns the pending view of `fact`, or `None` for an unkeyed fact.
    pub fn of(fact: &Fact) -> Option<PendingFact> {
        Some(PendingFact {
            fact_id: fact.fact_id.clone(),
            kind: fact.kind,
            memory_key: fact.memory_key.clone()?,
            content: fact.content.clone(),
            recorded_at: fact.recorded_at.clone(),
            under_review: None,
        })
    }

    /// The order of facts in the log: (recorded_at instant, fact_id).
    pub fn order(&self) -> (jiff::Timestamp, &str) {
        (self.recorded_at.instant(), &self.fact_id)
    }
}

fn pending_line(fact: &PendingFact) -> String {
    let review =
        fact.under_review.as_deref().map(|id| format!(" (under review: {id})")).unwrap_or_default();
    format!(
        "- [{}] {}: {} ({}){review}",
        fact.kind,
        fact.memory_key,
        fact.content,
        fact.recorded_at.utc_day()
    )
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Returns the agent context from `memory_md` (the MEMORY.md text) or the
/// active `entries` it renders, `recent` unkeyed facts and `pending` keyed
/// facts (each oldest first), within `budget` characters (0: unbounded).
///
/// `entries` is used only when the unbounded text exceeds the budget.
/// Then the recent and pending facts are chosen first, newest first, each
/// whole or not at all, within a quarter of the budget together (an agent
/// always sees what it has just written), and the curated part fills the
/// rest with the entries of highest priority: those whose keys `relevant`
/// returns (most relevant first), then more evidence, the latest
/// `last_seen`, content.
pub fn render_context(
    memory_md: &str,
    entries: &[Projected],
    recent: &[Fact],
    pending: &[PendingFact],
    budget: usize,
    relevant: &dyn Fn() -> Vec<String>,
) -> String {
    let recent_facts: Vec<&Fact> = recent.iter().filter(|f| f.memory_key.is_none()).collect();
    let recent: Vec<String> = recent_facts.iter().map(|f| recent_line(f)).collect();
    let pending_lines: Vec<String> = pending.iter().map(pending_line).collect();
    let full = join_context(memory_md.trim(), &recent, &pending_lines);
    if budget == 0 || chars(&full) <= budget {
        return full;
    }
    // Both parts, newest first, within a quarter of the budget.
    let mut order: Vec<(jiff::Timestamp, bool, usize)> = recent_facts
        .iter()
        .enumerate()
        .map(|(i, f)| (f.recorded_at.instant(), false, i))
        .chain(pending.iter().enumerate().map(|(i, f)| (f.recorded_at.instant(), true, i)))
        .collect();
    order.sort_by(|a, b| b.cmp(a));
    let mut room = budget / 4;
    let (mut keep_recent, mut keep_pending) =
        (vec![false; recent.len()], vec![false; pending.len()]);
    let mut headers = [false; 2];
    for (_, is_pending, i) in order {
        let line = if is_pending { &pending_lines[i] } else { &recent[i] };
        let title = if is_pending { PENDING_TITLE } else { RECENT_TITLE };
        // A part costs its title and the blank line before it.
        let header = if headers[usize::from(is_pending)] { 0 } else { 2 + chars(title) + 1 };
        let cost = header + 1 + chars(line);
        if cost > room {
            break;
        }
        room -= cost;
        headers[usize::from(is_pending)] = true;
        if is_pending { keep_pending[i] = true } else { keep_recent[i] = true }
    }
    let pick = |lines: &[String], keep: &[bool]| -> Vec<String> {
        lines.iter().zip(keep).filter(|(_, k)| **k).map(|(l, _)| l.clone()).collect()
    };
    let (recent, pending) = (pick(&recent, &keep_recent), pick(&pending_lines, &keep_pending));
    let facts_len = chars(&join_context("", &recent, &pending));
    let facts_len = if recent.is_empty() && pending.is_empty() { 0 } else { facts_len + 2 };
    let curated = bounded_curated(memory_md, entries, budget.saturating_sub(facts_len), &relevant);
    join_context(&curated, &recent, &pending)
}

/// Returns MEMORY.md (`memory_md`, rendering the active `entries`) when it
/// has at most `budget` characters, and otherwise the same layout holding
/// only the entries that fit, by the context's priority, with the overflow
/// line naming how many are not shown and `workmem memory`, which shows
/// them all. The result ends with a newline, as MEMORY.md does.
///
/// A MEMORY.md without a curated state behind it (`entries` empty: a file
/// kept as it was found) is cut after its last whole line that fits, and a
/// closing line says so.
pub fn render_memory_within(memory_md: &str, entries: &[Projected], budget: usize) -> String {
    if chars(memory_md) <= budget {
        return memory_md.to_owned();
    }
    if entries.is_empty() {
        let mut kept = String::new();
        let room = budget.saturating_sub(chars(UNRENDERED_CUT) + 1);
        let mut used = 0;
        for line in memory_md.lines() {
            let cost = chars(line) + 1;
            if used + cost > room {
                break;
            }
            used += cost;
            kept.push_str(line);
            kept.push('\n');
        }
        kept.push_str(UNRENDERED_CUT);
        kept.push('\n');
        return kept;
    }
    let mut bounded = bounded_curated(memory_md, entries, budget.saturating_sub(1), &Vec::new);
    bounded.push('\n');
    bounded
}

/// The last line of a MEMORY.md cut by [`render_memory_within`] when no
/// curated state renders it.
const UNRENDERED_CUT: &str = "- (the rest of MEMORY.md is not shown: run `workmem memory`)";

/// Returns the curated part of a bounded context: the trimmed MEMORY.md
/// layout with the highest-priority entries that fit in `budget`
/// characters, and the overflow line when some do not.
fn bounded_curated(
    memory_md: &str,
    entries: &[Projected],
    budget: usize,
    relevant: &dyn Fn() -> Vec<String>,
) -> String {
    let mut active: Vec<&Projected> = entries.iter().filter(|e| e.kind != Kind::Outcome).collect();
    let ranked: std::collections::HashMap<String, usize> =
        relevant().into_iter().enumerate().map(|(rank, key)| (key, rank)).collect();
    let rank = |e: &Projected| ranked.get(&e.key).copied().unwrap_or(usize::MAX);
    active.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| b.evidence.cmp(&a.evidence))
            .then_with(|| b.last_seen.instant().cmp(&a.last_seen.instant()))
            .then_with(|| a.content.cmp(&b.content))
            .then_with(|| a.key.cmp(&b.key))
    });

    // Size of the curated part for the first `n` entries of `active`, built
    // incrementally: title, one heading per section present, one line each.
    let total = active.len();
    let mut used = chars(TITLE);
    let mut sections = [false; 3];
    let mut shown = 0;
    let fits = |used: usize, hidden: usize, any: bool| {
        let overflow =
            if hidden > 0 { chars(&overflow_line(hidden)) + if any { 1 } else { 2 } } else { 0 };
        used + overflow <= budget
    };
    for entry in &active {
        let slot = entry.kind as usize;
        let heading = if sections[slot] {
            0
        } else {
            2 + chars(section_title(entry.kind).unwrap_or_default()) + 1
        };
        let next = used + heading + 1 + chars(&item_line(entry));
        if !fits(next, total - shown - 1, true) {
            break;
        }
        used = next;
        sections[slot] = true;
        shown += 1;
    }
    let hidden = total - shown;
    if total == 0 && memory_md.trim().is_empty() {
        String::new()
    } else {
        render_sections(&active[..shown], (hidden > 0).then_some(hidden)).trim().to_owned()
    }
}

fn join_context(curated: &str, recent: &[String], pending: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !curated.is_empty() {
        parts.push(curated.to_owned());
    }
    for (title, lines) in [(RECENT_TITLE, recent), (PENDING_TITLE, pending)] {
        if lines.is_empty() {
            continue;
        }
        let mut block = String::from(title);
        block.push('\n');
        for line in lines {
            block.push('\n');
            block.push_str(line);
        }
        parts.push(block);
    }
    if parts.is_empty() { EMPTY_CONTEXT.to_owned() } else { parts.join("\n\n") }
}
