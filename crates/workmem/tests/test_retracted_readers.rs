//! Every reader treats a retracted fact as not recorded
//! (docs/corrections.md, "What every reader does with a retracted fact"):
//! the policy never sees one, the caches that can yield a fact are not used
//! after a correction they do not reflect, and the context, the recent
//! facts, `status` and `explain` leave it out or say it is retracted. The
//! facts retracted here are evidence of nothing yet (waiting for the age
//! gate, pending claims), a state the retract command produces too; the
//! records are written by hand.
#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::fs;
use std::os::unix::fs::MetadataExt;

use serde_json::json;
use workmem::internals::corrections::CORRECTIONS_FILE;
use workmem::{
    ContextOptions, DistillOptions, IdList, Policy, Reason, Resolution, Retraction, Status,
    Workspace, internals,
};

use crate::common::{AS_OF, Project, open, stamp};

/// Appends to `project`'s corrections stream a retraction of `facts`
/// under `event`.
fn retract(project: &Project, event: &str, facts: &[&str]) {
    let mut facts = facts.to_vec();
    facts.sort_unstable();
    let record = json!({
        "action": "retract", "actor": "Ada <ada@example.com>", "entry_key": null,
        "event_id": event, "fact_ids": facts, "rationale": "recorded by mistake",
        "recorded_at": "2026-02-20T09:00:00Z", "restores": null,
        "schema_version": 1, "workspace_id": project.ws.workspace_id(),
    });
    let path = project.file(CORRECTIONS_FILE);
    let mut text = fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&record.to_string());
    text.push('\n');
    fs::write(path, text).unwrap();
}

/// The contents of the active entries of curated.json, sorted.
fn active(ws: &Workspace) -> Vec<String> {
    let mut out: Vec<String> = ws
        .curated()
        .unwrap()
        .entries
        .iter()
        .filter(|e| e.is_active())
        .map(|e| e.content.clone())
        .collect();
    out.sort();
    out
}

/// Every fact of the log: an id, the content of the entry it could make.
/// u1 and u2 (unkeyed, important) wait for the age gate at [`AS_OF`]; k1
/// and k2 tie on `db.engine` once aged; p1 is a pending claim of
/// `ci.runner`.
fn young_facts() -> Project {
    let project = Project::new();
    project.add("u1", "convention", 5, None, "Deploy on Fridays", "2026-02-20T09:00:00Z");
    project.add("u2", "convention", 5, None, "Tag every release", "2026-02-20T10:00:00Z");
    project.add("k1", "decision", 4, Some("db.engine"), "Use Postgres", "2026-02-21T09:00:00Z");
    project.add("k2", "decision", 4, Some("db.engine"), "Use MySQL", "2026-02-21T09:00:00Z");
    project.add("p1", "decision", 3, Some("ci.runner"), "Use Buildkite", "2026-02-22T09:00:00Z");
    project
}

const LATER: &str = "2026-04-01T00:00:00Z";

fn distill_at(ws: &Workspace, as_of: &str) -> workmem::Distilled {
    ws.distill(&DistillOptions::new().as_of(stamp(as_of))).unwrap()
}

fn remove_caches(project: &Project) {
    for entry in fs::read_dir(project.ws.memory_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') && path.is_file() {
            fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn a_fact_retracted_while_it_waits_is_never_promoted_nor_opens_a_case() {
    let project = young_facts();
    // Everything waits: the run leaves a cache that holds the young facts.
    let first = distill_at(&project.ws, AS_OF);
    assert_eq!((first.report.scanned, first.active_entries), (0, 0));
    retract(&project, "correction:1", &["u1", "k2"]);

    // Aged: u1 is not promoted, and k1 stands alone on db.engine (k2 would
    // have tied with it and opened a case).
    let later = distill_at(&project.ws, LATER);
    assert_eq!(active(&project.ws), ["Tag every release", "Use Postgres"]);
    assert!(project.ws.conflicts().unwrap().cases.is_empty());
    assert_eq!(later.report.scanned, 3, "{:?}", later.report);
    let curated = fs::read(project.file("curated.json")).unwrap();

    // A cold run over the same log says the same.
    remove_caches(&project);
    fs::remove_file(project.file("curated.json")).unwrap();
    fs::remove_file(project.file("MEMORY.md")).unwrap();
    let cold = distill_at(&open(project.path()), LATER);
    assert_eq!(cold.report, later.report);
    assert_eq!(fs::read(project.file("curated.json")).unwrap(), curated);

    // Without the correction, the same log ties on db.engine and promotes
    // u1: the test above can fail.
    fs::remove_file(project.file(CORRECTIONS_FILE)).unwrap();
    let other = Project::new();
    for fact in project.ws.facts().unwrap() {
        other.add(
            fact.fact_id(),
            fact.kind().as_str(),
            i64::from(fact.importance()),
            fact.memory_key(),
            fact.content(),
            fact.recorded_at().as_str(),
        );
    }
    distill_at(&other.ws, LATER);
    assert_eq!(active(&other.ws), ["Deploy on Fridays", "Tag every release"]);
    assert_eq!(other.ws.conflicts().unwrap().cases.len(), 1);
}

#[test]
fn the_distill_cache_is_not_used_after_a_correction_it_does_not_reflect() {
    let project = young_facts();
    // Everything aged: u1 and u2 promoted, db.engine tied, p1 below the
    // thresholds (evidence of nothing).
    let run = distill_at(&project.ws, LATER);
    assert_eq!((run.report.scanned, run.report.skipped), (5, 3), "{:?}", run.report);
    // Nothing new: the cache answers, and counts the same.
    let again = distill_at(&project.ws, LATER).report;
    assert_eq!((again.scanned, again.skipped, again.created), (5, 5, 0), "{again:?}");
    // A correction of a fact that is evidence of nothing changes no
    // derived file; "nothing new" from the cache would still count p1.
    retract(&project, "correction:1", &["p1"]);
    let after = distill_at(&project.ws, LATER);
    assert_eq!((after.report.scanned, after.report.skipped), (4, 4), "{:?}", after.report);
    // And the cache the run left reflects the correction.
    assert_eq!(distill_at(&project.ws, LATER).report, after.report);
    let header = fs::read_to_string(project.file(".distill-cache")).unwrap();
    let stream = fs::read(project.file(CORRECTIONS_FILE)).unwrap();
    assert!(
        header.lines().any(|l| l.starts_with(&format!("corrections {} ", stream.len()))),
        "{header}"
    );
}

#[test]
fn facts_that_age_from_a_cache_built_after_a_correction_stay_out() {
    let project = young_facts();
    retract(&project, "correction:1", &["u1", "k2"]);
    // The cache is built with the correction in force, while all wait.
    assert_eq!(distill_at(&project.ws, AS_OF).report.scanned, 0);
    let units = project.file(".distill-cache.units");
    let inode = fs::metadata(&units).unwrap().ino();
    // Time passes: the facts age, and the run starts from the cache.
    let later = distill_at(&project.ws, LATER);
    assert_eq!(
        fs::metadata(&units).unwrap().ino(),
        inode,
        "the run started from the cache (it appends to its units file)"
    );
    assert_eq!(active(&project.ws), ["Tag every release", "Use Postgres"]);
    assert!(project.ws.conflicts().unwrap().cases.is_empty());
    assert_eq!(later.report.scanned, 3, "{:?}", later.report);
}

#[test]
fn a_retracted_fact_is_neither_recent_nor_pending_in_the_context() {
    let project = young_facts();
    let context = |ws: &Workspace| ws.context_with(&ContextOptions::new()).unwrap();
    // The pending index is written by this read.
    let before = context(&project.ws);
    assert!(before.contains("Deploy on Fridays") && before.contains("Use Buildkite"), "{before}");
    assert!(project.file(".pending.json").exists());
    retract(&project, "correction:1", &["u1", "p1"]);
    let after = context(&project.ws);
    assert!(!after.contains("Deploy on Fridays"), "{after}");
    assert!(!after.contains("Use Buildkite"), "{after}");
    assert!(after.contains("Tag every release") && after.contains("Use MySQL"), "{after}");
    // So does a handle opened afresh (the index written now reflects it).
    assert_eq!(context(&open(project.path())), after);
    let recent: Vec<String> =
        project.ws.recent_facts(10).unwrap().iter().map(|f| f.fact_id().to_owned()).collect();
    assert_eq!(recent, ["u2", "k1", "k2"]);
    let older = project.ws.recent_facts_before(&stamp("2026-03-01T00:00:00Z"), "z", 10).unwrap();
    assert_eq!(older.len(), 3);
}

#[test]
fn status_never_counts_a_retracted_fact_as_waiting() {
    let project = young_facts();
    let waiting = |ws: &Workspace| ws.overview(Some(stamp(AS_OF))).unwrap().facts;
    // Without a cache (a dry run over the log), then from the cache.
    assert_eq!(waiting(&project.ws).waiting_for_age, 5);
    retract(&project, "correction:1", &["u1", "p1"]);
    let counts = waiting(&project.ws);
    assert_eq!((counts.total, counts.waiting_for_age), (5, 3));
    distill_at(&project.ws, AS_OF);
    assert!(project.file(".distill-cache").exists());
    let counts = waiting(&project.ws);
    assert_eq!((counts.total, counts.waiting_for_age), (5, 3));
}

#[test]
fn explain_gives_a_retracted_fact_the_reason_retracted_with_its_records() {
    let project = young_facts();
    retract(&project, "correction:1", &["u1"]);
    retract(&project, "correction:2", &["u1", "k2"]);
    let policy = Policy::default();
    let explained = project.ws.explain_fact("u1", &policy, Some(stamp(LATER))).unwrap();
    assert_eq!(
        explained.reason,
        Reason::Retracted { event_ids: vec!["correction:1".into(), "correction:2".into()] }
    );
    assert!(explained.entry.is_none());
    let json = serde_json::to_value(&explained).unwrap();
    assert_eq!(json["reason"], "retracted");
    assert_eq!(json["event_ids"], json!(["correction:1", "correction:2"]));
    // The other facts of the key are judged without it: k1 is promoted.
    let key = project.ws.explain_key("db.engine", &policy, Some(stamp(LATER))).unwrap();
    let reasons: Vec<(&str, bool)> = key
        .facts
        .iter()
        .map(|f| (f.fact.fact_id(), matches!(f.reason, Reason::Retracted { .. })))
        .collect();
    assert_eq!(reasons, [("k1", false), ("k2", true)]);
    assert!(key.facts[0].reason.is_promoted(), "{:?}", key.facts[0].reason);
    // distill --explain lists every fact in log order, the retracted ones
    // with their reason.
    let run =
        project.ws.distill(&DistillOptions::new().as_of(stamp(LATER)).dry_run().explain()).unwrap();
    let order: Vec<&str> = run.decisions.iter().map(|d| d.fact_id.as_str()).collect();
    assert_eq!(order, ["u1", "u2", "k1", "k2", "p1"]);
    assert!(matches!(run.decisions[0].reason, Reason::Retracted { .. }));
    assert!(matches!(run.decisions[3].reason, Reason::Retracted { .. }));
}

/// Retracts `facts` as the retract command leaves the state: the record,
/// and each entry's evidence moved to its retracted evidence, an entry
/// left with none `retracted` (keeping its dates). For facts no open case
/// rests on.
fn retract_evidence(project: &Project, event: &str, facts: &[&str]) {
    retract(project, event, facts);
    let mut state = project.ws.curated().unwrap();
    for entry in &mut state.entries {
        if !entry.evidence_ids.iter().any(|id| facts.contains(&id)) {
            continue;
        }
        let kept: IdList = entry.evidence_ids.iter().filter(|id| !facts.contains(id)).collect();
        let taken = entry.evidence_ids.iter().filter(|id| facts.contains(id));
        entry.retracted_evidence_ids = IdList::union(&entry.retracted_evidence_ids, taken);
        entry.occurrences = kept.len() as u64;
        entry.evidence_ids = kept;
        if entry.evidence_ids.is_empty() {
            entry.status = Status::Retracted;
        }
    }
    state.schema_version = 3;
    internals::save_curated(&project.ws, &state).unwrap();
}

/// The revisions of `memory_key`: (revision, content, status).
fn revisions(ws: &Workspace, memory_key: &str) -> Vec<(u32, String, Status)> {
    let mut out: Vec<(u32, String, Status)> = ws
        .curated()
        .unwrap()
        .entries
        .into_iter()
        .filter(|e| e.memory_key.as_deref() == Some(memory_key))
        .map(|e| (e.revision, e.content, e.status))
        .collect();
    out.sort_by_key(|r| r.0);
    out
}

fn without_value(ws: &Workspace) -> Vec<String> {
    ws.overview(Some(stamp(AS_OF))).unwrap().without_value
}

#[test]
fn a_domain_whose_active_value_was_retracted_gets_the_value_its_facts_support() {
    let project = Project::new();
    project.add("k1", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-05T09:00:00Z");
    project.add("k2", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-06T09:00:00Z");
    project.distill();
    project.add("s1", "decision", 4, Some("db.engine"), "Use MySQL", "2026-01-10T09:00:00Z");
    project.add("s2", "decision", 4, Some("db.engine"), "Use MySQL", "2026-01-11T09:00:00Z");
    project.distill();
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [(1, "Use Postgres".into(), Status::Superseded), (2, "Use MySQL".into(), Status::Active)]
    );
    retract_evidence(&project, "correction:1", &["s1", "s2"]);
    assert_eq!(without_value(&project.ws), ["db.engine"]);
    assert!(!project.ws.context(None).unwrap().contains("MySQL"));

    // The superseded revision's facts are judged again: Postgres is the
    // value they support, a new revision after the retracted one.
    project.distill();
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [
            (1, "Use Postgres".into(), Status::Superseded),
            (2, "Use MySQL".into(), Status::Retracted),
            (3, "Use Postgres".into(), Status::Active),
        ]
    );
    let state = project.ws.curated().unwrap();
    let r2 = state.entries.iter().find(|e| e.revision == 2).unwrap();
    let r3 = state.entries.iter().find(|e| e.revision == 3).unwrap();
    assert_eq!(r3.supersedes.as_deref(), Some(r2.key.as_str()));
    assert_eq!(r2.superseded_by.as_deref(), Some(r3.key.as_str()));
    assert_eq!(r3.evidence_ids.iter().collect::<Vec<_>>(), ["k1", "k2"]);
    assert!(without_value(&project.ws).is_empty());
    assert!(project.ws.memory().unwrap().contains("Use Postgres"));
    assert_eq!(project.ws.verify().unwrap(), []);
    // A fixpoint: the next run changes nothing.
    let curated = fs::read(project.file("curated.json")).unwrap();
    project.distill();
    assert_eq!(fs::read(project.file("curated.json")).unwrap(), curated);
}

#[test]
fn a_tie_among_the_remaining_facts_opens_a_case() {
    let project = Project::new();
    project.add("k1", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-05T09:00:00Z");
    project.add("k2", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-05T10:00:00Z");
    // Single challengers: too few facts to replace Postgres.
    project.add("m1", "decision", 4, Some("db.engine"), "Use MySQL", "2026-01-06T09:00:00Z");
    project.add("q1", "decision", 4, Some("db.engine"), "Use SQLite", "2026-01-06T09:00:00Z");
    project.distill();
    assert_eq!(revisions(&project.ws, "db.engine"), [(1, "Use Postgres".into(), Status::Active)]);
    assert!(project.ws.conflicts().unwrap().cases.is_empty());
    retract_evidence(&project, "correction:1", &["k1", "k2"]);
    project.distill();
    // MySQL and SQLite are equally strong: a person chooses.
    let queue = project.ws.conflicts().unwrap();
    assert_eq!(queue.cases.len(), 1);
    let case = &queue.cases[0];
    assert!(case.is_open() && case.memory_key == "db.engine");
    let mut values: Vec<&str> = case.candidates.iter().map(|c| c.content.as_str()).collect();
    values.sort_unstable();
    assert_eq!(values, ["Use MySQL", "Use SQLite"]);
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [(1, "Use Postgres".into(), Status::Retracted)]
    );
    assert_eq!(without_value(&project.ws), ["db.engine"]);
}

#[test]
fn a_domain_where_nothing_qualifies_stays_without_a_value() {
    let project = Project::new();
    project.add("k1", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-05T09:00:00Z");
    project.add("k2", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-05T10:00:00Z");
    project.add("l1", "decision", 2, Some("db.engine"), "Use MySQL", "2026-01-06T09:00:00Z");
    project.distill();
    retract_evidence(&project, "correction:1", &["k1", "k2"]);
    let report = project.distill();
    assert_eq!(report.created, 0, "{report:?}");
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [(1, "Use Postgres".into(), Status::Retracted)]
    );
    assert!(project.ws.conflicts().unwrap().cases.is_empty());
    assert_eq!(without_value(&project.ws), ["db.engine"]);
    assert!(!project.ws.memory().unwrap().contains("Postgres"));
}

#[test]
fn the_values_a_decision_rejected_stay_rejected_when_its_choice_is_retracted() {
    let project = Project::new();
    for (id, value, at) in [
        ("p1", "Use Postgres", "2026-01-05T09:00:00Z"),
        ("p2", "Use Postgres", "2026-01-06T09:00:00Z"),
        ("m1", "Use MySQL", "2026-01-05T09:00:00Z"),
        ("m2", "Use MySQL", "2026-01-06T09:00:00Z"),
    ] {
        project.add(id, "decision", 4, Some("db.engine"), value, at);
    }
    project.distill();
    let case = project.ws.conflicts().unwrap().cases.remove(0);
    let mysql = case.candidates.iter().find(|c| c.content == "Use MySQL").unwrap();
    project
        .ws
        .resolve(Resolution {
            conflict_id: case.conflict_id.clone(),
            candidate_id: mysql.candidate_id.clone(),
            expected_revision: i64::from(case.revision),
            actor: "Ada".into(),
            rationale: "the service already runs it".into(),
            event_id: "decision:1".into(),
            resolved_at: None,
        })
        .unwrap();
    assert_eq!(revisions(&project.ws, "db.engine"), [(1, "Use MySQL".into(), Status::Active)]);
    retract_evidence(&project, "correction:1", &["m1", "m2"]);

    // Postgres, which the person rejected, is not promoted from the facts
    // they saw: the domain stays without a value.
    let explained = project.ws.explain_fact("p1", &Policy::default(), Some(stamp(AS_OF))).unwrap();
    assert!(
        matches!(&explained.reason, Reason::RejectedByAdjudication { event_id, .. } if event_id == "decision:1"),
        "{:?}",
        explained.reason
    );
    let report = project.distill();
    assert_eq!(report.created, 0, "{report:?}");
    assert_eq!(revisions(&project.ws, "db.engine"), [(1, "Use MySQL".into(), Status::Retracted)]);
    assert_eq!(without_value(&project.ws), ["db.engine"]);
    assert_eq!(project.ws.adjudications().unwrap().len(), 1);

    // New evidence, which the decision did not see, can promote it.
    project.add("p3", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-20T09:00:00Z");
    project.distill();
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [(1, "Use MySQL".into(), Status::Retracted), (2, "Use Postgres".into(), Status::Active)]
    );
    assert!(without_value(&project.ws).is_empty());
    assert_eq!(project.ws.verify().unwrap(), []);
}

#[test]
fn a_retracted_unkeyed_entry_comes_back_on_new_facts_only() {
    let project = Project::new();
    project.add("u1", "convention", 5, None, "Deploy on Fridays", "2026-01-05T09:00:00Z");
    project.add("u2", "convention", 5, None, "Deploy on Fridays", "2026-01-06T09:00:00Z");
    project.distill();
    retract_evidence(&project, "correction:1", &["u1", "u2"]);
    project.distill();
    let entry = |ws: &Workspace| ws.curated().unwrap().entries.remove(0);
    assert_eq!(entry(&project.ws).status, Status::Retracted);
    assert!(!project.ws.memory().unwrap().contains("Fridays"));
    // A fact too weak to be promoted on its own does not bring it back.
    project.add("u3", "convention", 2, None, "deploy on fridays", "2026-01-10T09:00:00Z");
    project.distill();
    assert_eq!(entry(&project.ws).status, Status::Retracted);
    // Recorded again and promoted: the same entry, on the new facts.
    project.add("u4", "convention", 5, None, "Deploy on Fridays", "2026-01-11T09:00:00Z");
    project.distill();
    let back = entry(&project.ws);
    assert_eq!(back.status, Status::Active);
    assert_eq!(back.evidence_ids.iter().collect::<Vec<_>>(), ["u3", "u4"]);
    assert_eq!(back.retracted_evidence_ids.iter().collect::<Vec<_>>(), ["u1", "u2"]);
    assert_eq!(back.first_seen.as_str(), "2026-01-10T09:00:00Z");
    assert_eq!(back.content, "Deploy on Fridays");
}

#[test]
fn after_the_retract_command_a_decided_domain_waits_for_new_evidence() {
    let project = Project::new();
    for (id, value, at) in [
        ("p1", "Use Postgres", "2026-01-05T09:00:00Z"),
        ("p2", "Use Postgres", "2026-01-06T09:00:00Z"),
        ("m1", "Use MySQL", "2026-01-05T09:00:00Z"),
        ("m2", "Use MySQL", "2026-01-06T09:00:00Z"),
    ] {
        project.add(id, "decision", 4, Some("db.engine"), value, at);
    }
    project.distill();
    let case = project.ws.conflicts().unwrap().cases.remove(0);
    let mysql = case.candidates.iter().find(|c| c.content == "Use MySQL").unwrap();
    project
        .ws
        .resolve(Resolution {
            conflict_id: case.conflict_id.clone(),
            candidate_id: mysql.candidate_id.clone(),
            expected_revision: i64::from(case.revision),
            actor: "Ada".into(),
            rationale: "the service already runs it".into(),
            event_id: "decision:1".into(),
            resolved_at: None,
        })
        .unwrap();
    // The command, not a hand edit: its transaction leaves MySQL retracted.
    project
        .ws
        .retract(Retraction {
            fact_ids: vec!["m1".into(), "m2".into()],
            entry_key: None,
            actor: "Ada <ada@example.com>".into(),
            rationale: "recorded against the wrong service".into(),
            event_id: "correction:1".into(),
            recorded_at: Some(stamp("2026-02-20T09:00:00Z")),
        })
        .unwrap();
    assert_eq!(revisions(&project.ws, "db.engine"), [(1, "Use MySQL".into(), Status::Retracted)]);
    assert_eq!(project.distill().created, 0);
    assert_eq!(without_value(&project.ws), ["db.engine"]);
    assert_eq!(project.ws.verify().unwrap(), []);
    project.add("p3", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-20T09:00:00Z");
    project.distill();
    assert_eq!(
        revisions(&project.ws, "db.engine"),
        [(1, "Use MySQL".into(), Status::Retracted), (2, "Use Postgres".into(), Status::Active)]
    );
    assert_eq!(project.ws.verify().unwrap(), []);
}
