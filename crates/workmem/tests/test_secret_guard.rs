//! Issue 4, acceptance 6: the secret guard (SPEC 10) refuses every kind of
//! real credential and lets ordinary engineering prose through. The false
//! positive rate is measured on a committed corpus of commit messages,
//! review comments, ADR lines and agent facts that talk about passwords,
//! tokens, keys and secrets without containing one.

use std::collections::BTreeMap;

use workmem::{Error, NewFact, secret};

use crate::common::{Project, fact};

/// Credentials of every kind the guard knows, with the kind it must name.
/// Built at run time so that the source holds no literal credential.
pub fn credential_samples() -> Vec<(String, &'static str)> {
    let alnum = |n: usize| -> String {
        let set = b"aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0z";
        (0..n).map(|i| set[(i * 7 + 3) % set.len()] as char).collect()
    };
    let upper = |n: usize| -> String {
        let set = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        (0..n).map(|i| set[(i * 11 + 5) % set.len()] as char).collect()
    };
    vec![
        (format!("AKIA{}", upper(16)), "AWS access key"),
        (format!("Use ASIA{} for the temporary session", upper(16)), "AWS access key"),
        (format!("aws_secret_access_key = {}/{}", alnum(20), alnum(19)), "AWS secret access key"),
        (format!("ghp_{}", alnum(36)), "GitHub token"),
        (format!("CI uses gho_{} today", alnum(36)), "GitHub token"),
        (format!("github_pat_11{}_{}", upper(20), alnum(59)), "GitHub token"),
        (format!("glpat-{}", alnum(20)), "GitLab token"),
        (format!("xoxb-{}-{}-{}", "1234567890", "9876543210", alnum(24)), "Slack token"),
        (format!("xoxp-{}-{}", "1234567890", alnum(32)), "Slack token"),
        (format!("https://hooks.slack.com/services/T{}/B{}/{}", upper(8), upper(8), alnum(24)), "Slack webhook"),
        (format!("sk-{}", alnum(48)), "OpenAI API key"),
        (format!("OPENAI key sk-proj-{}", alnum(64)), "OpenAI API key"),
        (format!("sk-ant-api03-{}", alnum(93)), "Anthropic API key"),
        (format!("sk_live_{}", alnum(24)), "Stripe key"),
        (format!("rk_live_{}", alnum(24)), "Stripe key"),
        (format!("sk_test_{}", alnum(24)), "Stripe key"),
        (format!("AIza{}", alnum(35)), "Google API key"),
        (format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", alnum(64)), "private key block"),
        (format!("-----BEGIN PRIVATE KEY-----\n{}", alnum(64)), "private key block"),
        ("-----BEGIN EC PRIVATE KEY-----".to_owned(), "private key block"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----".to_owned(), "private key block"),
        ("-----BEGIN ENCRYPTED PRIVATE KEY-----".to_owned(), "private key block"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----".to_owned(), "private key block"),
        (format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.{}", alnum(43)), "JSON Web Token"),
        (format!("Authorization: Bearer {}", alnum(40)), "bearer token"),
        ("db password=hunter2".to_owned(), "password or secret assignment"),
        ("DB_PASSWORD=correct-horse-battery-staple".to_owned(), "password or secret assignment"),
        ("api_key: 'abcd1234efgh'".to_owned(), "password or secret assignment"),
        ("secret: s3cr3t-value-42".to_owned(), "password or secret assignment"),
        ("passwd = \"x9!kQ2zz\"".to_owned(), "password or secret assignment"),
        (format!("client_secret={}", alnum(32)), "password or secret assignment"),
        (format!("apikey={}", alnum(24)), "password or secret assignment"),
    ]
}

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
        let mut in_content = fact("s1", "decision", 3, None, &format!("Note: {text}"), "2026-01-01T01:00:00Z");
        in_content.evidence = BTreeMap::new();
        let mut in_value = fact("s2", "decision", 3, None, "Deploy the worker.", "2026-01-01T01:00:00Z");
        in_value.evidence = BTreeMap::from([("file".to_owned(), text.clone())]);
        for (new, field) in [(in_content, "content"), (in_value, "evidence")] {
            match p.ws.remember(new) {
                Err(err @ Error::InvalidInput { .. }) => {
                    let message = err.to_string();
                    assert!(message.contains(field) && message.contains(kind), "{message}");
                    let hidden = text.lines().next().unwrap_or_default();
                    assert!(!message.contains(hidden), "the message echoes the secret: {message}");
                    assert_eq!(err.exit_code(), 2);
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
        let stored = p.ws.remember(NewFact { fact_id: Some(format!("p{i}")), ..NewFact::new(text) }).unwrap();
        assert_eq!(stored.content, text);
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
    println!("secret guard false positives: {} of {} sentences ({:.3}%)", flagged.len(), lines.len(), rate * 100.0);
    for (line, kind) in &flagged {
        println!("  flagged as {kind}: {line}");
    }
    assert!(rate < 0.005, "false positive rate {:.3}% is not below 0.5%: {flagged:#?}", rate * 100.0);
}
