//! Prompt projection (docs/policy.md): the exact MEMORY.md text and the
//! bounded agent context. Pure functions; the workspace decides when to
//! read or write files.
//!
//! MEMORY.md lists every active entry and is never truncated. The agent
//! context is MEMORY.md plus a few recent unkeyed facts, held within a
//! character budget: when the whole text does not fit, the highest-priority
//! entries are kept (more evidence, then latest `last_seen`, then content)
//! with an overflow line, and recent facts fill what is left, each whole or
//! not at all. Keyed raw facts, candidates and superseded revisions never
//! appear.

use serde::{Deserialize, Serialize};

use crate::model::fact::{Fact, Kind};
use crate::model::stamp::Stamp;
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

/// Returns the projections of the active entries among `entries`.
pub fn project<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Projected> {
    entries
        .into_iter()
        .filter(|e| e.is_active() && e.kind != Kind::Outcome)
        .map(Projected::from)
        .collect()
}

const TITLE: &str = "# Workspace Memory\n\nDerived from append-only project facts. Edit the source log or policy, not this view.";
const RECENT_TITLE: &str = "# Recent Workspace Facts";
const EMPTY_CONTEXT: &str = "(no workspace memory yet)";

/// Default number of recent facts in the agent context.
pub const DEFAULT_RECENT_FACTS: usize = 6;
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
    format!("- ({hidden} more entries not shown: run `workmem memory`)")
}

fn recent_line(fact: &Fact) -> String {
    format!("- [{}] {} ({})", fact.kind, fact.content, fact.recorded_at.utc_day())
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Returns the agent context from `memory_md` (the MEMORY.md text) or the
/// active `entries` it renders, and `recent` unkeyed facts (oldest first),
/// within `budget` characters (0: unbounded).
///
/// `entries` is used only when the unbounded text exceeds the budget.
pub fn render_context(
    memory_md: &str,
    entries: &[Projected],
    recent: &[Fact],
    budget: usize,
) -> String {
    let recent: Vec<&Fact> = recent.iter().filter(|f| f.memory_key.is_none()).collect();
    let full = join_context(memory_md.trim(), &recent);
    if budget == 0 || chars(&full) <= budget {
        return full;
    }
    let mut active: Vec<&Projected> = entries.iter().filter(|e| e.kind != Kind::Outcome).collect();
    active.sort_by(|a, b| {
        b.evidence
            .cmp(&a.evidence)
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
    let curated = if total == 0 && memory_md.trim().is_empty() {
        String::new()
    } else {
        render_sections(&active[..shown], (hidden > 0).then_some(hidden)).trim().to_owned()
    };

    // Recent facts fill what is left, newest first, each whole or not at all.
    let mut room = budget.saturating_sub(chars(&curated));
    let mut kept: Vec<&Fact> = Vec::new();
    let mut header = (if curated.is_empty() { 0 } else { 2 }) + chars(RECENT_TITLE) + 1;
    for fact in recent.iter().rev() {
        let cost = header + 1 + chars(&recent_line(fact));
        if cost > room {
            break;
        }
        room -= cost;
        header = 0;
        kept.push(fact);
    }
    kept.reverse();
    join_context(&curated, &kept)
}

fn join_context(curated: &str, recent: &[&Fact]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !curated.is_empty() {
        parts.push(curated.to_owned());
    }
    if !recent.is_empty() {
        let mut block = String::from(RECENT_TITLE);
        block.push('\n');
        for fact in recent {
            block.push('\n');
            block.push_str(&recent_line(fact));
        }
        parts.push(block);
    }
    if parts.is_empty() { EMPTY_CONTEXT.to_owned() } else { parts.join("\n\n") }
}
