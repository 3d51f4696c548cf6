//! Acceptance 10: every invalid input of docs/format.md through
//! `Workspace::remember` is `Error::InvalidInput` naming the field, and
//! nothing is written.

use std::collections::BTreeMap;

use workmem::{Error, NewFact};

use crate::common::{Project, fact};

fn base() -> NewFact {
    fact("ok-1", "decision", 3, Some("db.engine"), "Valid content.", "2026-01-01T00:00:00Z")
}

/// Every invalid input with the field its error must name.
fn invalid_inputs() -> Vec<(NewFact, &'static str)> {
    let with = |edit: &dyn Fn(&mut NewFact)| {
        let mut new = base();
        edit(&mut new);
        new
    };
    let mut many = BTreeMap::new();
    for i in 0..33 {
        many.insert(format!("k{i}"), "v".to_owned());
    }
    vec![
        (with(&|n| n.content = String::new()), "content"),
        (with(&|n| n.content = " \t\n\u{3000}\u{1c} ".into()), "content"),
        (with(&|n| n.content = "x".repeat(2_001)), "content"),
        // 2,001 characters of two bytes each: counted in characters.
        (with(&|n| n.content = "\u{e9}".repeat(2_001)), "content"),
        (with(&|n| n.importance = Some(0)), "importance"),
        (with(&|n| n.importance = Some(6)), "importance"),
        (with(&|n| n.importance = Some(-1)), "importance"),
        (with(&|n| n.importance = Some(256 + 3)), "importance"),
        (with(&|n| n.kind = Some("idea".to_owned())), "kind"),
        (with(&|n| n.kind = Some(String::new())), "kind"),
        (with(&|n| n.kind = Some("decisions".to_owned())), "kind"),
        (with(&|n| n.memory_key = Some("Bad Key".to_owned())), "memory_key"),
        (with(&|n| n.memory_key = Some(String::new())), "memory_key"),
        (with(&|n| n.memory_key = Some("1abc".to_owned())), "memory_key"),
        (with(&|n| n.memory_key = Some("a..b".to_owned())), "memory_key"),
        (with(&|n| n.memory_key = Some("a.".to_owned())), "memory_key"),
        (with(&|n| n.memory_key = Some("caf\u{e9}".to_owned())), "memory_key"),
        (with(&|n| n.memory_key = Some("a".repeat(121))), "memory_key"),
        (with(&|n| n.fact_id = Some(String::new())), "fact_id"),
        (with(&|n| n.fact_id = Some("-leading-dash".to_owned())), "fact_id"),
        (with(&|n| n.fact_id = Some("has space".to_owned())), "fact_id"),
        (with(&|n| n.fact_id = Some("\u{e9}t\u{e9}".to_owned())), "fact_id"),
        (with(&|n| n.fact_id = Some("a".repeat(201))), "fact_id"),
        (with(&|n| n.recorded_at = Some("2026-01-01".to_owned())), "recorded_at"),
        (with(&|n| n.recorded_at = Some("2026-01-01T12:00:00".to_owned())), "recorded_at"),
        (with(&|n| n.recorded_at = Some("yesterday".to_owned())), "recorded_at"),
        (with(&|n| n.recorded_at = Some("2026-13-01T00:00:00Z".to_owned())), "recorded_at"),
        (with(&|n| n.recorded_at = Some("2026-02-30T00:00:00Z".to_owned())), "recorded_at"),
        (with(&|n| n.recorded_at = Some(String::new())), "recorded_at"),
        (with(&|n| n.source = Some("two words".to_owned())), "source"),
        (with(&|n| n.source = Some(String::new())), "source"),
        (with(&|n| n.evidence = many.clone()), "evidence"),
        (with(&|n| n.evidence = BTreeMap::from([(String::new(), "v".to_owned())])), "evidence"),
        // docs/design.md: credentials are refused before anything is written.
        (with(&|n| n.content = "Deploy key AKIAIOSFODNN7EXAMPLE for CI.".into()), "content"),
        (with(&|n| n.content = "Set password=hunter2hunter2 in the env.".into()), "content"),
        (
            with(&|n| {
                n.evidence =
                    BTreeMap::from([("token".to_owned(), "ghp_".to_owned() + &"a7Kq".repeat(9))]);
            }),
            "evidence value",
        ),
    ]
}

fn assert_invalid(p: &Project, new: NewFact, field: &str) {
    match p.ws.remember(new.clone()) {
        Err(err @ Error::InvalidInput { .. }) => {
            let Error::InvalidInput { field: got, .. } = &err else { unreachable!() };
            assert_eq!(got, field, "{new:?}: {err}");
            assert!(matches!(err, Error::InvalidInput { .. }));
        }
        other => panic!("{new:?} gave {other:?}"),
    }
}

#[test]
fn invalid_input_on_a_fresh_project_creates_nothing() {
    for (new, field) in invalid_inputs() {
        let p = Project::new();
        assert_invalid(&p, new, field);
        assert!(!p.ws.memory_dir().exists(), "memory dir created for an invalid {field}");
        assert!(!p.path().join(".workmem").exists());
    }
}

#[test]
fn invalid_input_on_an_existing_memory_changes_nothing() {
    let p = Project::new();
    p.ws.remember(base()).unwrap();
    p.add("d2", "decision", 5, None, "Use WAL.", "2026-01-02T00:00:00Z");
    p.distill();
    let before = p.snapshot();
    for (new, field) in invalid_inputs() {
        assert_invalid(&p, new, field);
        assert_eq!(p.snapshot(), before, "an invalid {field} changed the memory directory");
    }
}

#[test]
fn boundary_values_are_accepted() {
    let p = Project::new();
    let mut new = base();
    new.content = format!("  {}  ", "\u{e9}".repeat(2_000));
    new.importance = Some(5);
    new.memory_key = Some(format!(" {} ", "A".repeat(120)));
    new.fact_id = Some(format!("A{}", "b".repeat(199)));
    new.recorded_at = Some("2026-01-01T01:00:00+01:00".to_owned());
    let stored = p.ws.remember(new).unwrap();
    assert_eq!(stored.content().chars().count(), 2_000);
    assert_eq!(stored.memory_key(), Some("a".repeat(120).as_str()));
    assert_eq!(stored.recorded_at().as_str(), "2026-01-01T00:00:00Z");
    let mut low = base();
    low.fact_id = Some("x".to_owned());
    low.importance = Some(1);
    low.kind = Some("outcome".to_owned());
    low.memory_key = None;
    p.ws.remember(low).unwrap();
    assert_eq!(p.ws.facts().unwrap().len(), 2);
}

#[test]
fn a_reused_fact_id_with_other_content_is_refused() {
    let p = Project::new();
    p.ws.remember(base()).unwrap();
    // An identical retry is a no-op.
    p.ws.remember(base()).unwrap();
    assert_eq!(p.ws.facts().unwrap().len(), 1);
    let before = p.snapshot();
    let mut other = base();
    other.content = "Different content.".to_owned();
    assert_invalid(&p, other, "fact_id");
    assert_eq!(p.snapshot(), before);
}

#[test]
fn facts_on_refuses_a_day_that_is_not_a_date() {
    let p = Project::new();
    let stored = p.ws.remember(base()).unwrap();
    // A file outside daily/ that workmem would never write.
    crate::common::write_raw(&p.file("outside.jsonl"), stored.to_line().as_bytes());
    for day in ["../outside", "2026-01-01/../../outside", "notes"] {
        match p.ws.facts_on(day) {
            Err(Error::InvalidInput { .. }) => {}
            other => panic!("facts_on({day:?}) gave {other:?}"),
        }
    }
}
