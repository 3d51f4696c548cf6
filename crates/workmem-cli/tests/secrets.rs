//! The secret guard from the command line: a credential in any field of
//! `remember`, `import` or `resolve` exits 2 naming the field and the kind,
//! with nothing written and nothing of the credential printed (text or
//! `--json`, stdout or stderr); and `workmem scan` finds credentials
//! already stored, by hand or by a hostile checkout, without printing them
//! and without writing.

#![allow(clippy::disallowed_methods)] // tests plant files by hand

use std::io::Write as _;
use std::process::Output;

use serde_json::{Value, json};
use workmem_testutil::{Field, Project, Sample, credential_corpus};

use crate::WORKMEM;

fn project() -> Project {
    Project::new(WORKMEM, "workmem-secrets")
}

fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Returns the parts of `secret` that output must never contain: every
/// run of 8 characters or more without whitespace or quotes that has a
/// digit or a symbol, cut to its last 10 characters.
fn fragments(secret: &str) -> Vec<String> {
    secret
        .split(|c: char| c.is_whitespace() || "\"'=:,;{}()<>".contains(c))
        .filter(|w| {
            w.chars().count() >= 8
                && w.chars().any(|c| c.is_ascii_digit() || "!@#%^&*+/".contains(c))
        })
        .map(|w| w.chars().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect())
        .collect()
}

fn assert_not_printed(out: &Output, secret: &str, label: &str) {
    let (stdout, stderr) = texts(out);
    for part in fragments(secret) {
        assert!(
            !stdout.contains(&part) && !stderr.contains(&part),
            "{label}: output repeats the credential\nstdout: {stdout}\nstderr: {stderr}"
        );
    }
}

fn assert_refused(out: &Output, field: &str, kind: &str, secret: &str, label: &str) {
    let (stdout, stderr) = texts(out);
    assert_eq!(out.status.code(), Some(2), "{label}: {stderr}");
    assert!(stderr.contains(field) && stderr.contains(kind), "{label}: {stderr}");
    assert!(stdout.is_empty() || stdout.trim() == "", "{label}: printed {stdout}");
    assert_not_printed(out, secret, label);
}

/// Returns one sample stored in `field`, with no evasion.
fn sample(field: Field) -> Sample {
    credential_corpus()
        .into_iter()
        .find(|s| s.field == field && s.evasion.is_none())
        .unwrap_or_else(|| panic!("a sample in {field:?}"))
}

/// The `remember` arguments that put `sample` in its field.
fn remember_args(sample: &Sample) -> Vec<String> {
    let text = sample.text.clone();
    let mut args = vec!["remember".to_owned()];
    match sample.field {
        Field::Content => args.push(text),
        Field::MemoryKey => {
            args.extend(["Ordinary.".into(), format!("--key={text}")]);
        }
        Field::Source => {
            args.extend(["Ordinary.".into(), format!("--source={text}")]);
        }
        Field::FactId => {
            args.extend(["Ordinary.".into(), format!("--id={text}")]);
        }
        Field::EvidenceKey => {
            args.extend(["Ordinary.".into(), "-e".into(), format!("{text}=src/x.rs")]);
        }
        Field::EvidenceValue => {
            args.extend(["Ordinary.".into(), "-e".into(), format!("note={text}")]);
        }
        Field::EvidencePair(key) => {
            args.extend(["Ordinary.".into(), "-e".into(), format!("{key}={text}")]);
        }
        _ => unreachable!("a fact field"),
    }
    args
}

/// The JSON item that puts `sample` in its field.
fn import_item(sample: &Sample) -> Value {
    let mut item = json!({"content": "Ordinary.", "kind": "decision", "importance": 3});
    let text = sample.text.clone();
    match sample.field {
        Field::Content => item["content"] = json!(text),
        Field::MemoryKey => item["memory_key"] = json!(text),
        Field::Source => item["source"] = json!(text),
        Field::FactId => item["fact_id"] = json!(text),
        Field::EvidenceKey => item["evidence"] = json!({text: "src/x.rs"}),
        Field::EvidenceValue => item["evidence"] = json!({"note": text}),
        Field::EvidencePair(key) => item["evidence"] = json!({key: text}),
        _ => unreachable!("a fact field"),
    }
    item
}

#[test]
fn a_credential_in_each_field_of_remember_and_import_exits_2_without_echo() {
    let project = project();
    project.ok(&["init", "-q"]);
    project.ok(&["remember", "An ordinary fact.", "--at", "2026-01-01T00:00:00Z"]);
    let before = project.files();
    let input = project.root.join("input.jsonl");
    for field in Field::ALL.into_iter().filter(|f| !f.is_adjudication()) {
        let sample = sample(field);
        let args = remember_args(&sample);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for json in [false, true] {
            let mut all = args.clone();
            if json {
                all.push("--json");
            }
            let out = project.run(&all);
            assert_refused(
                &out,
                field.name(),
                sample.kind,
                &sample.text,
                &format!("remember {field:?} json={json}"),
            );
            if json {
                let error: Value = serde_json::from_slice(&out.stderr).expect("a JSON error");
                assert_eq!(error["error"]["kind"], "invalid_input");
            }
        }
        let lines = format!("{}\n{}\n", json!({"content": "Fine."}), import_item(&sample));
        std::fs::write(&input, lines).unwrap();
        let out = project.run(&["import", input.to_str().unwrap()]);
        assert_refused(&out, field.name(), sample.kind, &sample.text, &format!("import {field:?}"));
        assert!(texts(&out).1.contains("line 2"), "{}", texts(&out).1);
        std::fs::remove_file(&input).unwrap();
        assert_eq!(project.files(), before, "a refused {field:?} changed the memory directory");
    }
}

#[test]
fn a_credential_in_each_field_of_resolve_exits_2_without_echo() {
    let project = project();
    project.ok(&["init", "-q"]);
    let before = project.files();
    for field in [Field::Actor, Field::Rationale, Field::EventId] {
        let sample = sample(field);
        let (mut actor, mut rationale, mut event) =
            ("reviewer".to_owned(), "Production needs it.".to_owned(), "review:1".to_owned());
        match field {
            Field::Actor => actor.clone_from(&sample.text),
            Field::Rationale => rationale.clone_from(&sample.text),
            _ => event.clone_from(&sample.text),
        }
        let (actor, rationale, event) = (
            format!("--actor={actor}"),
            format!("--rationale={rationale}"),
            format!("--event-id={event}"),
        );
        for json in [false, true] {
            let mut args = vec![
                "resolve",
                "conflict-0123456789abcdef",
                "candidate-0123456789abcdef",
                "--revision",
                "1",
                &actor,
                &rationale,
                &event,
            ];
            if json {
                args.push("--json");
            }
            let out = project.run(&args);
            assert_refused(
                &out,
                field.name(),
                sample.kind,
                &sample.text,
                &format!("resolve {field:?}"),
            );
        }
    }
    assert_eq!(project.files(), before);
}

#[test]
fn a_credential_in_a_malformed_argument_or_line_is_not_quoted() {
    let project = project();
    project.ok(&["init", "-q"]);
    let token = credential_corpus()
        .into_iter()
        .find(|s| s.kind == "GitHub token" && s.field == Field::FactId)
        .expect("a GitHub token")
        .text;
    // An evidence argument without `=`, a kind, an instant.
    for args in [
        vec!["remember".to_owned(), "x".to_owned(), "-e".to_owned(), token.clone()],
        vec!["remember".to_owned(), "x".to_owned(), format!("--kind={token}")],
        vec!["remember".to_owned(), "x".to_owned(), format!("--at={token}")],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = project.run(&args);
        assert_eq!(out.status.code(), Some(2), "{}", texts(&out).1);
        assert_not_printed(&out, &token, &format!("{:?}", &args[..2]));
    }
    // An import line whose field has the wrong type or an unknown name.
    let input = project.root.join("bad.jsonl");
    for line in
        [json!({"content": "x", "importance": token}), json!({"content": "x", token.clone(): 1})]
    {
        std::fs::write(&input, format!("{line}\n")).unwrap();
        let out = project.run(&["import", input.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", texts(&out).1);
        assert_not_printed(&out, &token, "import");
    }
}

/// The arguments of the command lines that put `secret` where the issue
/// of echoed credentials found it quoted: as the content (a private key
/// reads as an unknown flag), a second positional, a number, a date, an
/// instant, a status, an id or key to look up, a project directory, a
/// file to import and a subcommand.
fn echo_prone_lines(secret: &str) -> Vec<Vec<String>> {
    let lines: Vec<Vec<&str>> = vec![
        vec!["remember", secret],
        vec!["remember", "An ordinary fact.", secret],
        vec!["remember", "An ordinary fact.", "-i", secret],
        vec!["remember", "An ordinary fact.", "--kind", secret],
        vec!["remember", "An ordinary fact.", "--source", secret],
        vec!["remember", "An ordinary fact.", "--id", secret],
        vec!["remember", "An ordinary fact.", "--at", secret],
        vec!["remember", "An ordinary fact.", "-e", secret],
        vec!["facts", "--day", secret],
        vec!["facts", "--recent", secret],
        vec!["facts", "--status", secret],
        vec!["distill", "--as-of", secret],
        vec!["explain", secret],
        vec!["explain", "--key", secret],
        vec!["history", secret],
        vec!["conflicts", "--status", secret],
        vec!["context", "--recent", secret],
        vec!["resolve", secret, "1", "--revision", "1", "--rationale", "why"],
        vec!["resolve", "c1", "1", "--revision", secret, "--rationale", "why"],
        vec!["-C", secret, "status"],
        vec!["import", secret],
        vec![secret],
    ];
    let mut out = Vec::new();
    for line in lines {
        let line: Vec<String> = line.into_iter().map(str::to_owned).collect();
        let mut json = vec!["--json".to_owned()];
        json.extend(line.iter().cloned());
        out.push(line);
        out.push(json);
    }
    out
}

#[test]
fn no_usage_or_validation_error_quotes_a_token_a_private_key_or_an_unknown_secret() {
    let project = project();
    project.ok(&["init", "-q"]);
    let corpus = credential_corpus();
    let first = |kind: &str| {
        corpus
            .iter()
            .find(|s| s.kind == kind && s.evasion.is_none() && !s.text.contains(' '))
            .map_or_else(|| panic!("a bare {kind}"), |s| s.text.clone())
    };
    let token = first("GitHub token");
    let key = corpus
        .iter()
        .find(|s| s.text.starts_with("-----BEGIN OPENSSH"))
        .expect("an OpenSSH private key")
        .text
        .clone();
    // A credential of a format the guard does not know: only the rule of
    // each field stands between it and the output.
    let unknown = format!("acmeprov_{}", &token[4..]);
    assert!(workmem::find_secret(&unknown).is_none(), "the unknown secret is unknown");
    let before = project.files();
    for (secret, known) in [(&token, true), (&key, true), (&unknown, false)] {
        for line in echo_prone_lines(secret) {
            let args: Vec<&str> = line.iter().map(String::as_str).collect();
            let out = project.run(&args);
            let shown = line.join(" ").replace(secret.as_str(), "<SECRET>");
            if out.status.success() {
                // An unknown secret can pass a field's rule and be stored
                // (then it is output like any stored value).
                assert!(!known, "`{shown}` accepted a credential: {}", texts(&out).0);
                continue;
            }
            assert_not_printed(&out, secret, &shown);
            let (stdout, stderr) = texts(&out);
            assert!(
                !stderr.contains(secret.as_str()) && !stdout.contains(secret.as_str()),
                "{shown}"
            );
            if line[0] == "--json" {
                let doc: Value = serde_json::from_str(stderr.trim())
                    .unwrap_or_else(|err| panic!("`{shown}`: {err}: {stderr}"));
                assert!(doc["error"]["message"].is_string(), "{shown}: {stderr}");
            }
        }
        if known {
            assert_eq!(project.files(), before, "a refused credential wrote nothing");
        }
    }
}

// ---------------------------------------------------------------------------
// scan

/// Appends raw lines to a daily file, as a hand edit or another tool would.
fn plant(project: &Project, day: &str, lines: &[String]) {
    let path = project.memory().join("daily").join(format!("{day}.jsonl"));
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

fn fact_line(id: &str, content: &str, evidence: &Value, workspace: &str) -> String {
    json!({
        "content": content,
        "evidence": evidence,
        "fact_id": id,
        "importance": 3,
        "kind": "decision",
        "memory_key": null,
        "recorded_at": "2026-01-05T10:00:00Z",
        "schema_version": 2,
        "source": "agent",
        "workspace_id": workspace,
    })
    .to_string()
}

fn workspace_id(project: &Project) -> String {
    let init = project.json(&["init"]);
    init["workspace_id"].as_str().expect("workspace id").to_owned()
}

#[test]
fn scan_finds_a_credential_planted_in_a_daily_file_and_prints_no_value() {
    let project = project();
    let id = workspace_id(&project);
    project.ok(&[
        "remember",
        "Use WAL mode for the cache.",
        "--at",
        "2026-01-05T09:00:00Z",
        "--id",
        "ok-1",
    ]);
    let corpus = credential_corpus();
    let token = corpus.iter().find(|s| s.kind == "GitHub token").expect("token").text.clone();
    let aws = corpus
        .iter()
        .find(|s| s.kind == "AWS access key" && !s.text.contains(' '))
        .expect("aws")
        .text
        .clone();
    let url = "postgres://admin:Kq8vR2zT9m@db.internal/app";
    plant(
        &project,
        "2026-01-05",
        &[
            fact_line("planted-1", &format!("CI pushes with {token}"), &json!({}), &id),
            fact_line(
                "planted-2",
                "Ordinary content.",
                &json!({"db_password": "hunter42", "log": aws}),
                &id,
            ),
            // Not JSON at all: still checked, as text.
            format!("garbage {url} garbage"),
        ],
    );
    let before = project.files();
    let secrets = [token.as_str(), aws.as_str(), url, "hunter42"];

    let out = project.run(&["scan"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for expected in [
        "2026-01-05.jsonl:2: fact planted-1 content: GitHub token",
        "2026-01-05.jsonl:3: fact planted-2 evidence value: password or secret assignment",
        "2026-01-05.jsonl:3: fact planted-2 evidence value: AWS access key",
        "2026-01-05.jsonl:4: text: password in URL",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in\n{stdout}");
    }
    assert!(stderr.contains("4 credentials found"), "{stderr}");
    for secret in secrets {
        assert_not_printed(&out, secret, "scan");
        assert!(!stdout.contains(secret) && !stderr.contains(secret));
    }

    let out = project.run(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let findings = doc["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 4, "{doc}");
    for finding in findings {
        for key in ["file", "line", "fact_id", "field", "kind"] {
            assert!(finding.get(key).is_some(), "{key} missing in {finding}");
        }
        assert!(finding["file"].as_str().unwrap().ends_with("daily/2026-01-05.jsonl"));
    }
    assert_eq!(findings[0]["fact_id"], "planted-1");
    assert_eq!(findings[0]["line"], 2);
    assert_eq!(findings[0]["field"], "content");
    assert_eq!(findings[3]["fact_id"], Value::Null);
    let error: Value = serde_json::from_slice(&out.stderr).expect("a JSON error");
    assert_eq!(error["error"]["kind"], "secrets_found");
    for secret in secrets {
        assert_not_printed(&out, secret, "scan --json");
    }
    // Scanning wrote nothing, not even a lock file.
    assert_eq!(project.files(), before);
}

#[test]
fn scan_of_a_clean_memory_exits_0() {
    let project = project();
    project.ok(&["init", "-q"]);
    for text in [
        "api_key=os.getenv('OPENAI_API_KEY')",
        "Rotate the database password every 90 days.",
        "The spinner uses sk-folding-cube-angle-rotation.",
    ] {
        project.ok(&["remember", text]);
    }
    let out = project.run(&["scan"]);
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert!(texts(&out).0.is_empty());
    assert!(texts(&out).1.contains("no credentials found"));
    let out = project.run(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc, json!({"findings": [], "unreadable": []}));
}

#[test]
fn scan_reads_every_stored_file_even_when_invalid_or_of_another_workspace() {
    let project = project();
    project.ok(&["init", "-q"]);
    let memory = project.memory();
    let corpus = credential_corpus();
    let token = |kind: &str| -> String {
        corpus.iter().find(|s| s.kind == kind && !s.text.contains(' ')).expect(kind).text.clone()
    };
    let (slack, stripe, npm, vault) =
        (token("Slack token"), token("Stripe key"), token("npm token"), token("Vault token"));
    // A cloned repository's memory: another workspace id, invalid state.
    plant(
        &project,
        "2025-12-31",
        &[fact_line("f-1", &format!("Slack bot uses {slack}"), &json!({}), "ffffffffffffffff")],
    );
    std::fs::write(
        memory.join("curated.json"),
        format!(
            "{{\n  \"entries\": [\n    {{\n      \"content\": \"Pay with {stripe}\",\n      \"key\": \"0123456789abcdef\"\n    }}\n  ],\n  \"schema_version\": 99\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        memory.join("conflict-adjudications.jsonl"),
        format!("{}\n", json!({"event_id": "review:7", "actor": "ci", "rationale": format!("published with {npm}")})),
    )
    .unwrap();
    std::fs::write(memory.join("conflicts.json"), "{ not json at all\n").unwrap();
    std::fs::write(memory.join("MEMORY.md"), format!("# Workspace Memory\n\n- Vault: {vault}\n"))
        .unwrap();
    let before = project.files();
    let out = project.run(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", texts(&out).1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<(String, Value, String, String)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap();
            let name = file.rsplit('/').next().unwrap().to_owned();
            (
                name,
                f["line"].clone(),
                f["field"].as_str().unwrap().to_owned(),
                f["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = vec![
        ("2025-12-31.jsonl".to_owned(), json!(1), "content".to_owned(), "Slack token".to_owned()),
        (
            "conflict-adjudications.jsonl".to_owned(),
            json!(1),
            "rationale".to_owned(),
            "npm token".to_owned(),
        ),
        ("curated.json".to_owned(), json!(4), "content".to_owned(), "Stripe key".to_owned()),
        ("MEMORY.md".to_owned(), json!(3), "text".to_owned(), "Vault token".to_owned()),
    ];
    assert_eq!(found, expected, "{doc}");
    let records: Vec<&Value> =
        doc["findings"].as_array().unwrap().iter().map(|f| &f["record"]).collect();
    assert_eq!(records[1], "event review:7");
    assert_eq!(records[2], "entry 0123456789abcdef");
    for secret in [&slack, &stripe, &npm, &vault] {
        assert_not_printed(&out, secret, "scan of hostile state");
    }
    // Other commands refuse this state; scan only reads it.
    assert_eq!(project.files(), before);
}

#[test]
fn scan_reports_a_file_it_cannot_read_and_does_not_call_the_memory_clean() {
    let project = project();
    project.ok(&["init", "-q"]);
    let outside = project.root.join("outside.jsonl");
    std::fs::write(&outside, "{}\n").unwrap();
    std::os::unix::fs::symlink(&outside, project.memory().join("daily/2026-01-05.jsonl")).unwrap();
    let out = project.run(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", texts(&out).1);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["findings"], json!([]));
    let unreadable = doc["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{doc}");
    assert!(unreadable[0]["message"].as_str().unwrap().contains("symbolic link"), "{doc}");
}
