//! Issue 4, acceptance 6: the secret guard (docs/design.md) refuses every kind of
//! real credential and lets ordinary engineering prose through. The false
//! positive rate is measured on a committed corpus of commit messages,
//! review comments, ADR lines and agent facts that talk about passwords,
//! tokens, keys and secrets without containing one.

use std::collections::BTreeMap;

use workmem::{Error, NewFact, internals::secret};
use workmem_testutil::credential_samples;

use crate::common::{Project, fact};

#[test]
fn every_credential_kind_is_found_and_named() {
    for (text, kind) in credential_samples() {
        assert_eq!(secret::find(&text), Some(kind), "not detected as {kind}: {text:?}");
    }
}

#[test]
fn a_credential_is_refused_in_content_and_evidence_and_nothing_is_written() {
    let p = Project::new();
    p.add("base", "decision", 3, None, "Existing fact.", "2026-01-01T00:00:00Z");
    let before = p.snapshot();
    for (text, kind) in credential_samples() {
        let mut in_content =
            fact("s1", "decision", 3, None, &format!("Note: {text}"), "2026-01-01T01:00:00Z");
        in_content.evidence = BTreeMap::new();
        let mut in_value =
            fact("s2", "decision", 3, None, "Deploy the worker.", "2026-01-01T01:00:00Z");
        in_value.evidence = BTreeMap::from([("file".to_owned(), text.clone())]);
        for (new, field) in [(in_content, "content"), (in_value, "evidence")] {
            match p.ws.remember(new) {
                Err(err @ Error::InvalidInput { .. }) => {
                    let message = err.to_string();
                    assert!(message.contains(field) && message.contains(kind), "{message}");
                    let hidden = text.lines().next().unwrap_or_default();
                    assert!(!message.contains(hidden), "the message echoes the secret: {message}");
                    assert!(matches!(err, Error::InvalidInput { .. }));
                }
                other => panic!("{kind} in {field} gave {other:?}"),
            }
        }
        assert_eq!(p.snapshot(), before, "a refused {kind} changed the memory directory");
    }
}

#[test]
fn prose_about_credentials_is_stored() {
    let p = Project::new();
    for (i, text) in [
        "Rotate the database password every 90 days.",
        "Services authenticate with bearer tokens issued by the gateway.",
        "The JWT audience must be checked before the signature is trusted.",
        "API keys are shown once and stored hashed.",
        "Secret: rotation happens in the vault, not here.",
    ]
    .into_iter()
    .enumerate()
    {
        let stored =
            p.ws.remember(NewFact { fact_id: Some(format!("p{i}")), ..NewFact::new(text) })
                .unwrap();
        assert_eq!(stored.content(), text);
    }
    assert_eq!(p.ws.facts().unwrap().len(), 5);
}

/// The corpus: one ordinary engineering sentence per line.
const CORPUS: &str = include_str!("fixtures/secret/engineering-prose.txt");

#[test]
fn false_positive_rate_on_engineering_prose_is_below_half_a_percent() {
    let lines: Vec<&str> = CORPUS.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 1_000, "the corpus has only {} sentences", lines.len());
    let flagged: Vec<(&str, &str)> =
        lines.iter().filter_map(|line| secret::find(line).map(|kind| (*line, kind))).collect();
    let rate = flagged.len() as f64 / lines.len() as f64;
    println!(
        "secret guard false positives: {} of {} sentences ({:.3}%)",
        flagged.len(),
        lines.len(),
        rate * 100.0
    );
    for (line, kind) in &flagged {
        println!("  flagged as {kind}: {line}");
    }
    assert!(
        rate < 0.005,
        "false positive rate {:.3}% is not below 0.5%: {flagged:#?}",
        rate * 100.0
    );
}
