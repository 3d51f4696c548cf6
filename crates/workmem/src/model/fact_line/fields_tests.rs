//! Holds every codec of a fact to [`FACT_FIELDS`]: each test asks a codec
//! for each field of the list by name, and a field a codec does not know
//! fails the test with its name.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{FactRecord, FactSummary, RawFact, scan_compact};
use crate::model::fact::{Fact, NewFact};
use crate::model::fact_fields::FACT_FIELDS;
use crate::model::stamp::Stamp;

const WS: &str = "0123456789abcdef";

/// A fact with every field set (none left to its default).
fn full_fact() -> Fact {
    let new = NewFact {
        content: "The CI runs on Python 3.12".to_owned(),
        kind: Some("decision".to_owned()),
        importance: Some(4),
        memory_key: Some("runtime.python-version".to_owned()),
        source: Some("user".to_owned()),
        evidence: BTreeMap::from([("file".to_owned(), "pyproject.toml".to_owned())]),
        recorded_at: Some("2026-01-05T10:00:00Z".to_owned()),
        fact_id: Some("f-0001".to_owned()),
    };
    let now = Stamp::parse("2026-01-06T00:00:00Z").expect("stamp");
    Fact::from_new(new, WS, now, || unreachable!("the id is given")).expect("valid")
}

/// The line of [`full_fact`] as a JSON object, key by key.
fn line_fields(fact: &Fact) -> serde_json::Map<String, Value> {
    match serde_json::from_str(fact.to_line().trim_end()).expect("JSON") {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn names(filter: impl Fn(&crate::model::fact_fields::FactField) -> bool) -> Vec<&'static str> {
    FACT_FIELDS.iter().filter(|f| filter(f)).map(|f| f.name).collect()
}

#[test]
fn the_line_encoder_writes_every_listed_field_and_no_other() {
    let fact = full_fact();
    let line = fact.to_line();
    let fields = line_fields(&fact);
    let written: Vec<&str> = fields.keys().map(String::as_str).collect();
    assert_eq!(written, names(|_| true), "the struct and FACT_FIELDS disagree");
    // In the listed order, too: the line's keys are sorted.
    let mut at = 0;
    for field in &FACT_FIELDS {
        let key = format!("\"{}\": ", field.name);
        let found = line[at..].find(&key).unwrap_or_else(|| panic!("{} out of order", field.name));
        at += found + key.len();
    }
}

#[test]
fn both_line_decoders_read_every_field() {
    let fact = full_fact();
    let line = fact.to_line();
    let expected = line_fields(&fact);
    let fast = scan_compact(line.trim_end()).expect("the fast decoder reads workmem's own line");
    for field in &FACT_FIELDS {
        assert_eq!(fast_value(&fast, field.name), expected[field.name], "{}", field.name);
    }
    let parsed = Fact::parse_line(line.trim_end().as_bytes()).expect("serde reads it");
    assert_eq!(parsed, fact);
}

/// The value the fast decoder read for `name`.
fn fast_value(raw: &RawFact<'_>, name: &str) -> Value {
    match name {
        "content" => json!(raw.content),
        "evidence" => json!(raw.evidence.as_ref().map(|e| {
            e.0.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()
        })),
        "fact_id" => json!(raw.fact_id),
        "importance" => json!(raw.importance),
        "kind" => json!(raw.kind),
        "memory_key" => json!(raw.memory_key),
        "recorded_at" => json!(raw.recorded_at),
        "schema_version" => json!(raw.schema_version),
        "source" => json!(raw.source),
        "workspace_id" => json!(raw.workspace_id),
        other => panic!("the fast decoder does not know the field {other}"),
    }
}

/// The value a summary keeps of `name`; `None` for a field it leaves out.
fn summary_value(summary: &FactSummary, name: &str) -> Option<Value> {
    match name {
        "content" => Some(json!(summary.content())),
        "fact_id" => Some(json!(summary.fact_id())),
        "importance" => Some(json!(summary.importance())),
        "kind" => Some(json!(summary.kind().as_str())),
        "memory_key" => Some(json!(summary.memory_key())),
        "recorded_at" => Some(json!(summary.stamp_text())),
        "source" => Some(json!(summary.source())),
        "evidence" | "schema_version" | "workspace_id" => None,
        other => panic!("the summary does not know the field {other}"),
    }
}

#[test]
fn the_summary_keeps_exactly_the_summary_fields() {
    let fact = full_fact();
    let expected = line_fields(&fact);
    let summary = FactSummary::parse_for(fact.to_line().trim_end().as_bytes(), WS).expect("reads");
    for field in &FACT_FIELDS {
        let kept = summary_value(&summary, field.name);
        assert_eq!(kept.is_some(), field.in_summary, "{}", field.name);
        if let Some(value) = kept {
            assert_eq!(value, expected[field.name], "{}", field.name);
        }
    }
}

#[test]
fn the_distill_cache_line_keeps_every_summary_field() {
    let fact = full_fact();
    let summary = FactSummary::parse_for(fact.to_line().trim_end().as_bytes(), WS).expect("reads");
    let mut line = String::new();
    assert!(crate::store::distill_cache::write_fact(&summary, &mut line));
    let back = crate::store::distill_cache::read_fact(line.trim_end()).expect("reads back");
    for field in FACT_FIELDS.iter().filter(|f| f.in_summary) {
        assert_eq!(
            summary_value(&back, field.name),
            summary_value(&summary, field.name),
            "{}",
            field.name
        );
    }
    assert_eq!(back, summary);
}

#[test]
fn the_tool_schema_offers_exactly_the_tool_fields() {
    let schema = crate::tool_input::write_memory_schema();
    let offered: Vec<&str> =
        schema["properties"].as_object().expect("properties").keys().map(String::as_str).collect();
    let mut listed = names(|f| f.from_tool);
    listed.sort_unstable();
    assert_eq!(offered, listed, "the write_memory schema and FACT_FIELDS disagree");
}
