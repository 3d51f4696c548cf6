//! Acceptance 3: keyed supersession (docs/policy.md-d).

use workmem::DistillOptions;
use workmem::{Report, Status, internals::canon};

use crate::common::Project;

const KEY: &str = "runtime.python-version";

#[test]
fn keyed_supersession_lifecycle() {
    let p = Project::new();
    p.add("a1", "decision", 4, Some(KEY), "Use Python 3.11.", "2026-01-01T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 1, eligible: 1, created: 1, ..Report::default() });
    let rev1_key = canon::keyed_entry_key(KEY, 1, "decision", "Use Python 3.11.");
    assert_eq!(p.ws.curated().unwrap().active_for(KEY).unwrap().key, rev1_key);

    // One newer, more important fact never replaces the active value.
    p.add("b1", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-10T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 2, skipped: 2, ..Report::default() });
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 1);
    assert_eq!(state.active_for(KEY).unwrap().key, rev1_key);

    // A second one does: revision 2, mutual links, statuses.
    p.add("b2", "decision", 3, Some(KEY), "use  python 3.12.", "2026-01-12T00:00:00Z");
    assert_eq!(
        p.distill(),
        Report {
            scanned: 3,
            eligible: 2,
            created: 1,
            skipped: 1,
            superseded: 1,
            ..Report::default()
        }
    );
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 2);
    let rev2_key = canon::keyed_entry_key(KEY, 2, "decision", "Use Python 3.12.");
    let rev1 = state.entries.iter().find(|e| e.revision == 1).unwrap();
    let rev2 = state.entries.iter().find(|e| e.revision == 2).unwrap();
    assert_eq!(rev1.key, rev1_key);
    assert_eq!(rev1.status, Status::Superseded);
    assert_eq!(rev1.superseded_by.as_deref(), Some(rev2_key.as_str()));
    assert_eq!(rev1.supersedes, None);
    assert_eq!(rev1.evidence_ids, ["a1"]);
    assert_eq!(rev2.key, rev2_key);
    assert_eq!(rev2.status, Status::Active);
    // Wording from the most important fact (b1), not the newest (b2).
    assert_eq!(rev2.content, "Use Python 3.12.");
    assert_eq!(rev2.supersedes.as_deref(), Some(rev1_key.as_str()));
    assert_eq!(rev2.superseded_by, None);
    assert_eq!(rev2.memory_key.as_deref(), Some(KEY));
    assert_eq!(rev2.evidence_ids, ["b1", "b2"]);
    assert_eq!(
        (rev2.first_seen.as_str(), rev2.last_seen.as_str()),
        ("2026-01-10T00:00:00Z", "2026-01-12T00:00:00Z")
    );
    assert!(p.ws.memory().unwrap().contains("- Use Python 3.12. (seen 2x; evidence: 2)"));
    assert!(!p.ws.memory().unwrap().contains("3.11"));

    // Later-arriving older evidence for the old value is stale: no rollback.
    p.add("c1", "decision", 5, Some(KEY), "Use Python 3.11.", "2026-01-05T00:00:00Z");
    p.add("c2", "decision", 5, Some(KEY), "Use Python 3.11.", "2026-01-11T00:00:00Z");
    p.add("c3", "decision", 5, Some(KEY), "Use Python 3.11.", "2026-01-12T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 6, skipped: 6, stale: 3, ..Report::default() });
    let after = p.ws.curated().unwrap();
    assert_eq!(after, state, "stale evidence changed the curated state");

    // Facts repeating the active value only add evidence.
    p.add("d1", "decision", 1, Some(KEY), "USE PYTHON\t3.12.", "2026-01-20T00:00:00Z");
    assert_eq!(
        p.distill(),
        Report { scanned: 7, eligible: 1, updated: 1, skipped: 6, stale: 3, ..Report::default() }
    );
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 2);
    let active = state.active_for(KEY).unwrap();
    assert_eq!(active.key, rev2_key);
    assert_eq!(active.revision, 2);
    assert_eq!(active.content, "Use Python 3.12.");
    assert_eq!(active.evidence_ids, ["b1", "b2", "d1"]);
    assert_eq!(active.occurrences, 3);
    assert_eq!(active.last_seen.as_str(), "2026-01-20T00:00:00Z");
}

#[test]
fn challenger_must_be_strictly_newer_than_last_seen() {
    let p = Project::new();
    p.add("a1", "decision", 4, Some(KEY), "Use Python 3.11.", "2026-01-10T00:00:00Z");
    p.distill();
    // Two facts, the newest exactly at the active last_seen: stale.
    p.add("b1", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-09T00:00:00Z");
    p.add("b2", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-10T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 3, skipped: 3, stale: 2, ..Report::default() });
    // Reinforcing the active value moves last_seen; still stale.
    p.add("a2", "decision", 1, Some(KEY), "Use Python 3.11.", "2026-01-15T00:00:00Z");
    p.add("b3", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-14T00:00:00Z");
    let r = p.distill();
    assert_eq!((r.created, r.updated, r.stale), (0, 1, 3));
    // One strictly newer fact makes the challenger win with all its facts.
    p.add("b4", "decision", 2, Some(KEY), "Use Python 3.12.", "2026-01-16T00:00:00Z");
    let r = p.distill();
    assert_eq!((r.created, r.superseded, r.eligible, r.stale), (1, 1, 4, 0));
    let active = p.ws.curated().unwrap().active_for(KEY).unwrap().clone();
    assert_eq!(active.evidence_ids, ["b1", "b2", "b3", "b4"]);
    // Keyed wording: highest importance, then newest, then largest id.
    assert_eq!(active.content, "Use Python 3.12.");
}

#[test]
fn keyed_wording_prefers_importance_then_newest_then_largest_id() {
    let p = Project::new();
    p.add("x1", "decision", 4, Some(KEY), "use python 3.13.", "2026-01-01T00:00:00Z");
    p.add("x2", "decision", 4, Some(KEY), "Use Python 3.13.", "2026-01-02T00:00:00Z");
    p.add("x0", "decision", 4, Some(KEY), "USE PYTHON 3.13.", "2026-01-02T00:00:00Z");
    p.add("x3", "decision", 2, Some(KEY), "Use python 3.13!", "2026-01-03T00:00:00Z");
    p.distill();
    let state = p.ws.curated().unwrap();
    let active = state.active_for(KEY).unwrap();
    assert_eq!(active.content, "Use Python 3.13.");
    assert_eq!(active.evidence_ids, ["x0", "x1", "x2"]);
}

/// Issue 12: docs/policy.md checks the supersession count before the recency
/// test, so a lone challenger that is also not newer than the active value
/// is skipped for lack of evidence, not counted stale.
#[test]
fn a_lone_old_challenger_needs_more_evidence_and_is_not_stale() {
    let p = Project::new();
    p.add("a1", "decision", 4, Some(KEY), "Use Python 3.11.", "2026-01-10T00:00:00Z");
    p.distill();
    p.add("b1", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-05T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 2, skipped: 2, ..Report::default() });
    let (_, decisions) =
        p.ws.distill(
            &DistillOptions::new()
                .as_of(crate::common::stamp(crate::common::AS_OF))
                .dry_run()
                .explain(),
        )
        .unwrap()
        .into_parts();
    let b1 = decisions.iter().find(|d| d.fact_id == "b1").unwrap();
    assert!(
        matches!(b1.reason, workmem::Reason::NeedsMoreEvidence { facts: 1, .. }),
        "{:?}",
        b1.reason
    );
    // With two such facts the count test passes and recency stops them.
    p.add("b2", "decision", 5, Some(KEY), "Use Python 3.12.", "2026-01-06T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 3, skipped: 3, stale: 2, ..Report::default() });
}
