//! Acceptance 13: the agent context is bounded by a character budget
//! (docs/policy.md), keeps the highest-priority entries with an exact overflow
//! line, and is the unbounded text whenever that fits.
#![allow(clippy::disallowed_methods)]

use serde_json::{Value, json};
use workmem::{Config, ContextOptions, Entry, Workspace, internals::canon, internals::projection};

use crate::common::{Project, fact, write_raw};

const WORDS: [&str; 7] = ["Always", "Avoid", "Prefer", "never", "Keep", "Use", "Document"];

/// Writes a valid curated.json with `n` active unkeyed entries whose
/// evidence counts and last_seen values tie often, so every priority key
/// (evidence, last_seen, content) matters.
fn write_many(p: &Project, n: usize) {
    let kinds = ["decision", "convention", "pitfall"];
    let entries: Vec<Value> = (0..n)
        .map(|i| {
            let kind = kinds[i % 3];
            let content = format!("{} rule {} for module {:04} of the system.", WORDS[(i * 31) % 7], (i * 17) % 13, i);
            let evidence: Vec<String> = (0..=((i * 7) % 5)).map(|j| format!("e{i:04}-{j}")).collect();
            let last_seen = format!("2026-01-{:02}T00:00:00Z", 1 + (i * 11) % 9);
            json!({
                "key": canon::unkeyed_entry_key(kind, &content), "kind": kind, "content": content,
                "first_seen": "2025-12-01T00:00:00Z", "last_seen": last_seen,
                "occurrences": evidence.len(), "evidence_ids": evidence,
                "memory_key": null, "revision": 1, "status": "active", "supersedes": null, "superseded_by": null,
            })
        })
        .collect();
    let payload =
        json!({"schema_version": 2, "workspace_id": p.ws.workspace_id(), "entries": entries});
    p.ws.init().unwrap();
    // Written as this clone writes it: the entries cite no fact of the log,
    // which a curated.json that arrived from elsewhere is checked against.
    let bytes = serde_json::to_string_pretty(&payload).unwrap();
    let state = workmem::CuratedState::decode(
        bytes.as_bytes(),
        &p.file("curated.json"),
        p.ws.workspace_id(),
    )
    .unwrap();
    workmem::internals::save_curated(&p.ws, &state).unwrap();
}

fn with_budget(ws: &Workspace, budget: usize) -> Workspace {
    Workspace::builder(ws.project())
        .config(Config { context_budget: budget, ..Config::default() })
        .open()
        .unwrap()
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Entries in context priority: more evidence, then latest last_seen, then
/// content.
fn by_priority(entries: &[Entry]) -> Vec<&Entry> {
    let mut sorted: Vec<&Entry> = entries.iter().filter(|e| e.is_active()).collect();
    sorted.sort_by(|a, b| {
        b.evidence_ids
            .len()
            .cmp(&a.evidence_ids.len())
            .then(b.last_seen.instant().cmp(&a.last_seen.instant()))
            .then(a.content.cmp(&b.content))
    });
    sorted
}

fn overflow(hidden: usize) -> String {
    format!("- ({hidden} more entries not shown: run `workmem memory` or `workmem search`)")
}

#[test]
fn two_thousand_entries_stay_within_the_budget() {
    let p = Project::new();
    write_many(&p, 2_000);
    // Recent unkeyed facts compete for the same budget.
    for i in 0..3 {
        p.add(
            &format!("r{i}"),
            "outcome",
            3,
            None,
            &format!("Recent fact {i}."),
            &format!("2026-02-2{i}T00:00:00Z"),
        );
    }
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 2_000);
    // MEMORY.md itself is never truncated.
    let memory = p.ws.memory().unwrap();
    assert_eq!(memory.lines().filter(|l| l.starts_with("- ")).count(), 2_000);
    assert!(chars(&memory) > 24_000);

    let budget = Config::default().context_budget;
    assert_eq!(budget, 24_000);
    let context = p.ws.context(None).unwrap();
    assert!(chars(&context) <= budget, "context has {} chars", chars(&context));

    let curated_part = context.split("\n\n# Recent Workspace Facts").next().unwrap();
    let shown: Vec<&str> =
        curated_part.lines().filter(|l| l.starts_with("- ") && !l.starts_with("- (")).collect();
    let k = shown.len();
    assert!(k > 100 && k < 2_000, "{k} entries shown");

    // Exactly the k highest-priority entries, laid out like MEMORY.md with
    // the overflow line closing the last section.
    let priority = by_priority(&state.entries);
    let expected_curated = format!(
        "{}\n{}",
        projection::render_memory(priority[..k].iter().copied()).trim(),
        overflow(2_000 - k)
    );
    assert_eq!(curated_part, expected_curated);
    assert!(curated_part.ends_with(&overflow(2_000 - k)));
    // The next entry would not have fitted (even with a shorter overflow
    // line): the budget is used, not wasted.
    let next_line = format!(
        "- {} (seen {}x; evidence: {})",
        priority[k].content,
        priority[k].occurrences,
        priority[k].evidence_ids.len()
    );
    // (The facts, chosen first, take what they need of the budget.)
    let facts_part = chars(&context) - chars(curated_part);
    assert!(chars(curated_part) + 1 + chars(&next_line) - 1 > budget - facts_part);

    // Recent facts are chosen first, within a quarter of the budget, each
    // whole or not at all, newest kept.
    assert!(facts_part <= budget / 4, "{facts_part}");
    if let Some(recent) = context.split("\n\n# Recent Workspace Facts\n\n").nth(1) {
        let lines: Vec<&str> = recent.lines().collect();
        assert_eq!(lines.len(), 3, "all three fit in a quarter of the budget");
        let all = [
            "- [outcome] Recent fact 0. (2026-02-20)",
            "- [outcome] Recent fact 1. (2026-02-21)",
            "- [outcome] Recent fact 2. (2026-02-22)",
        ];
        assert_eq!(lines, all[3 - lines.len()..]);
    }
}

#[test]
fn priority_puts_more_evidence_first_then_recency_then_content() {
    let p = Project::new();
    write_many(&p, 2_000);
    let ws = with_budget(&p.ws, 600);
    let context = ws.context(Some(0)).unwrap();
    assert!(chars(&context) <= 600, "{context}");
    let state = p.ws.curated().unwrap();
    let priority = by_priority(&state.entries);
    // The top entries have 5 evidence ids and the latest last_seen (01-09).
    assert_eq!(priority[0].evidence_ids.len(), 5);
    assert_eq!(priority[0].last_seen.as_str(), "2026-01-09T00:00:00Z");
    let shown: Vec<&str> =
        context.lines().filter(|l| l.starts_with("- ") && !l.starts_with("- (")).collect();
    assert!(!shown.is_empty());
    let k = shown.len();
    let expected = format!(
        "{}\n{}",
        projection::render_memory(priority[..k].iter().copied()).trim(),
        overflow(2_000 - k)
    );
    assert_eq!(context, expected);
}

#[test]
fn under_the_budget_the_context_is_the_unbounded_text() {
    let p = Project::new();
    write_many(&p, 12);
    for i in 0..8 {
        p.add(
            &format!("r{i}"),
            "outcome",
            3,
            None,
            &format!("Recent fact {i}."),
            &format!("2026-02-1{i}T00:00:00Z"),
        );
    }
    let unbounded = with_budget(&p.ws, 0).context(None).unwrap();
    let memory = p.ws.memory().unwrap();
    assert!(unbounded.starts_with(memory.trim()));
    assert!(!unbounded.contains("more entries not shown"));
    assert_eq!(p.ws.context(None).unwrap(), unbounded);
    let exact = chars(&unbounded);
    assert_eq!(with_budget(&p.ws, exact).context(None).unwrap(), unbounded);

    // One character less: the recent facts are chosen first, newest first
    // within a quarter of the budget, and the curated part fills the rest.
    let tight = with_budget(&p.ws, exact - 1).context(None).unwrap();
    assert!(chars(&tight) < exact);
    let (curated, recent) = tight.split_once("\n\n# Recent Workspace Facts\n\n").unwrap();
    assert!(chars(recent) + 28 <= (exact - 1) / 4, "{tight}");
    assert!(recent.ends_with("- [outcome] Recent fact 7. (2026-02-17)"), "{tight}");
    assert!(curated.contains("more entries not shown") || curated == memory.trim(), "{tight}");
}

#[test]
fn recent_facts_are_whole_or_absent_at_every_budget() {
    let p = Project::new();
    write_many(&p, 30);
    for i in 0..6 {
        p.ws.remember(fact(
            &format!("r{i}"),
            "outcome",
            3,
            None,
            &format!("Recent fact number {i}."),
            &format!("2026-02-1{i}T00:00:00Z"),
        ))
        .unwrap();
    }
    let full = with_budget(&p.ws, 0).context(None).unwrap();
    for budget in (200..=chars(&full) + 10).step_by(37) {
        let context = with_budget(&p.ws, budget).context(None).unwrap();
        assert!(chars(&context) <= budget, "budget {budget}: {} chars", chars(&context));
        for line in context.lines().filter(|l| l.starts_with("- [")) {
            assert!(full.lines().any(|f| f == line), "budget {budget}: partial line {line:?}");
        }
        for line in context
            .lines()
            .filter(|l| l.starts_with("- ") && !l.starts_with("- (") && !l.starts_with("- ["))
        {
            assert!(full.lines().any(|f| f == line), "budget {budget}: partial entry {line:?}");
        }
        if budget >= chars(&full) {
            assert_eq!(context, full);
        }
    }
}

#[test]
fn a_bounded_memory_keeps_the_top_entries_and_says_how_many_it_leaves_out() {
    let p = Project::new();
    write_many(&p, 2_000);
    let memory = p.ws.memory().unwrap();
    assert!(chars(&memory) > 25_000);
    // Large enough: MEMORY.md itself, byte for byte.
    assert_eq!(p.ws.memory_within(chars(&memory)).unwrap(), memory);
    let bounded = p.ws.memory_within(25_000).unwrap();
    assert!(chars(&bounded) <= 25_000, "{} characters", chars(&bounded));
    assert!(bounded.ends_with('\n'));
    // The context's priority and layout, closed by the overflow line.
    let state = p.ws.curated().unwrap();
    let priority = by_priority(&state.entries);
    let k = bounded.lines().filter(|l| l.starts_with("- ") && !l.starts_with("- (")).count();
    assert!(k > 100 && k < 2_000, "{k}");
    let expected = format!(
        "{}\n{}\n",
        projection::render_memory(priority[..k].iter().copied()).trim(),
        overflow(2_000 - k)
    );
    assert_eq!(bounded, expected);
    // The file is untouched.
    assert_eq!(std::fs::read_to_string(p.file("MEMORY.md")).unwrap(), memory);
}

#[test]
fn a_hand_written_memory_without_curated_state_is_never_served() {
    let p = Project::new();
    p.ws.init().unwrap();
    let text =
        (0..400).map(|i| format!("- hand-written line {i:03}")).collect::<Vec<_>>().join("\n");
    write_raw(&p.file("MEMORY.md"), text.as_bytes());
    assert_eq!(p.ws.memory_within(1_000).unwrap(), "");
    assert_eq!(p.ws.memory().unwrap(), "");
    assert!(!p.ws.context(None).unwrap().contains("hand-written"));
}

#[test]
fn what_was_just_written_and_what_the_task_needs_are_in_a_full_context() {
    let p = Project::new();
    write_many(&p, 2_000);
    // A keyed fact just written: chosen before the curated part.
    p.ws.remember(fact(
        "k-new",
        "decision",
        4,
        Some("runtime.python-version"),
        "Use Python 3.13.",
        "2026-02-20T00:00:00Z",
    ))
    .unwrap();
    let context = p.ws.context(None).unwrap();
    assert!(chars(&context) <= 24_000);
    assert!(context.contains("more entries not shown: run `workmem memory` or `workmem search`"));
    assert!(
        context.ends_with(
            "# Pending Keyed Facts (recorded, not in the curated memory)\n\n\
             - [decision] runtime.python-version: Use Python 3.13. (2026-02-20)"
        ),
        "{context}"
    );
    // An entry with one piece of evidence is not among the top entries ...
    let entry = "module 1995 of the system. (seen 1x; evidence: 1)";
    assert!(!context.contains(entry));
    // ... but a task that names it brings it in first.
    let asked = p.ws.context_with(&ContextOptions::new().query("module 1995")).unwrap();
    assert!(chars(&asked) <= 24_000);
    assert!(asked.contains(entry), "{asked}");
    assert!(asked.contains("Use Python 3.13."));
    // A query that cannot be read is an error, not a silent context.
    assert!(p.ws.context_with(&ContextOptions::new().query("\u{7}")).is_err());
}
