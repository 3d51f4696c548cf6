//! The secret guard (docs/secrets.md) on a corpus: generated credentials
//! of every format, syntax and disguise in every stored field must be
//! refused (recall), and ordinary engineering facts, a third of them code,
//! must be stored (false positives). The figures are printed (run with
//! `--nocapture`) and held to their targets: recall at least 99%, false
//! positives at most 0.5% overall and 1% on the code-like facts.
//!
//! Then one test per field and per evasion through a real workspace, the
//! false positives the old guard had, and the ids workmem generates itself.

use std::collections::{BTreeMap, BTreeSet};

use workmem::{Error, Invalid, NewFact, Resolution, Stamp, internals, internals::secret};
use workmem_testutil::{Evasion, Field, Sample, credential_corpus, credential_samples, describe};

use crate::common::Project;

/// One ordinary sentence per line: agent facts about projects.
const PROSE: &str = include_str!("fixtures/secret/ordinary-prose.txt");
/// One code-like fact per line: references to secrets by name, hashes,
/// UUIDs, digests, base64 fixtures, CSS classes, commands.
const CODE: &str = include_str!("fixtures/secret/ordinary-code.txt");
/// Commit messages, review comments and ADR lines about credentials.
const ENGINEERING: &str = include_str!("fixtures/secret/engineering-prose.txt");

fn lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// Returns the fact a sample stores in its field (every other field
/// ordinary).
fn new_fact(sample: &Sample) -> NewFact {
    let mut new = NewFact::new("Deploy the worker after the migration.");
    let text = sample.text.clone();
    match sample.field {
        Field::Content => new.content = text,
        Field::MemoryKey => new.memory_key = Some(text),
        Field::Source => new.source = Some(text),
        Field::FactId => new.fact_id = Some(text),
        Field::EvidenceKey => {
            new.evidence = BTreeMap::from([(text, "src/deploy.rs".to_owned())]);
        }
        Field::EvidenceValue => new.evidence = BTreeMap::from([("note".to_owned(), text)]),
        Field::EvidencePair(key) => new.evidence = BTreeMap::from([(key.to_owned(), text)]),
        Field::Actor | Field::Rationale | Field::EventId => unreachable!("an adjudication field"),
    }
    new
}

/// Returns the resolution a sample puts in its field.
fn resolution(sample: &Sample) -> Resolution {
    let mut r = Resolution {
        conflict_id: "conflict-0123456789abcdef".into(),
        candidate_id: "candidate-0123456789abcdef".into(),
        expected_revision: 1,
        actor: "reviewer@example.com".into(),
        rationale: "Production needs extensions.".into(),
        event_id: "review:1".into(),
        resolved_at: None,
    };
    match sample.field {
        Field::Actor => r.actor.clone_from(&sample.text),
        Field::Rationale => r.rationale.clone_from(&sample.text),
        Field::EventId => r.event_id.clone_from(&sample.text),
        _ => unreachable!("a fact field"),
    }
    r
}

/// Returns the outcome of storing the sample, checked without a
/// workspace: the same validation an append or a resolve runs first.
fn outcome(sample: &Sample) -> Result<(), Error> {
    if sample.field.is_adjudication() {
        resolution(sample).validated().map(drop)
    } else {
        let now = Stamp::parse("2026-03-01T00:00:00Z").unwrap();
        internals::fact_from_new(new_fact(sample), "0123456789abcdef", now, || "f1".into())
            .map(drop)
    }
}

/// Asserts that `message` repeats no credential-looking word of `text`.
fn assert_not_echoed(message: &str, text: &str) {
    for word in text.split(|c: char| c.is_whitespace() || "\"'(){}[],;=:".contains(c)) {
        let credential_like = word.chars().count() >= 6
            && word.chars().any(|c| c.is_ascii_digit() || "!@#%^&*+/~".contains(c));
        assert!(
            !(credential_like && message.contains(word)),
            "the message repeats part of the credential: {message}"
        );
    }
}

#[test]
fn corpus_recall_and_false_positive_rates_meet_their_targets() {
    let corpus = credential_corpus();
    assert!(corpus.len() >= 200, "only {} credential samples", corpus.len());
    // Coverage: every kind the guard names, every field, every evasion.
    let kinds: BTreeSet<&str> = corpus.iter().map(|s| s.kind).collect();
    for kind in secret::kinds() {
        assert!(kinds.contains(kind), "no sample of {kind}");
    }
    for field in Field::ALL {
        assert!(corpus.iter().any(|s| s.field.name() == field.name()), "no sample in {field:?}");
    }
    for evasion in Evasion::ALL {
        assert!(corpus.iter().any(|s| s.evasion == Some(evasion)), "no sample with {evasion:?}");
    }

    let mut missed = Vec::new();
    let mut wrong_kind = Vec::new();
    let mut by_field: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for sample in &corpus {
        let tally = by_field.entry(sample.field.name()).or_default();
        tally.1 += 1;
        match outcome(sample) {
            Err(
                ref err @ Error::InvalidInput { ref field, reason: Invalid::Secret { kind }, .. },
            ) if field == sample.field.name() => {
                tally.0 += 1;
                assert_not_echoed(&err.to_string(), &sample.text);
                if kind != sample.kind {
                    wrong_kind.push(format!("{} ({:?}): named {kind}", sample.label, sample.field));
                }
            }
            other => missed.push(format!(
                "{} in {:?} ({}): {:?}",
                sample.label,
                sample.field,
                describe(&sample.text),
                other.err().map(|e| e.to_string())
            )),
        }
    }
    let recall = 1.0 - missed.len() as f64 / corpus.len() as f64;

    let prose = lines(PROSE);
    let code = lines(CODE);
    let ordinary = prose.len() + code.len();
    assert!(ordinary >= 300, "only {ordinary} ordinary facts");
    assert!(code.len() * 3 >= ordinary, "code-like facts are under a third");
    let flagged = |set: &[&str]| -> Vec<String> {
        set.iter()
            .filter_map(|line| {
                let sample = Sample {
                    text: (*line).to_owned(),
                    kind: "",
                    field: Field::Content,
                    evasion: None,
                    label: String::new(),
                };
                outcome(&sample).err().map(|err| format!("{line}  ->  {err}"))
            })
            .collect()
    };
    let prose_flagged = flagged(&prose);
    let code_flagged = flagged(&code);
    let fp_all = (prose_flagged.len() + code_flagged.len()) as f64 / ordinary as f64;
    let fp_code = code_flagged.len() as f64 / code.len() as f64;

    println!("secret guard corpus:");
    println!(
        "  recall: {} of {} credential samples refused ({:.2}%), {} named with another kind",
        corpus.len() - missed.len(),
        corpus.len(),
        recall * 100.0,
        wrong_kind.len()
    );
    for (field, (found, total)) in &by_field {
        println!("    {field}: {found}/{total}");
    }
    println!(
        "  false positives: {} of {} ordinary facts ({:.2}%); code-like: {} of {} ({:.2}%)",
        prose_flagged.len() + code_flagged.len(),
        ordinary,
        fp_all * 100.0,
        code_flagged.len(),
        code.len(),
        fp_code * 100.0
    );
    for line in missed.iter().chain(&wrong_kind) {
        println!("  missed or misnamed: {line}");
    }
    for line in prose_flagged.iter().chain(&code_flagged) {
        println!("  false positive: {line}");
    }
    assert!(recall >= 0.99, "recall {:.2}% is under 99%: {missed:#?}", recall * 100.0);
    assert!(wrong_kind.is_empty(), "kinds misnamed: {wrong_kind:#?}");
    assert!(fp_all <= 0.005, "false positives {:.2}% over 0.5%", fp_all * 100.0);
    assert!(fp_code <= 0.01, "false positives on code {:.2}% over 1%", fp_code * 100.0);
}

#[test]
fn false_positive_rate_on_engineering_prose_is_below_half_a_percent() {
    let lines = lines(ENGINEERING);
    assert!(lines.len() >= 1_000, "the corpus has only {} sentences", lines.len());
    let flagged: Vec<(&str, &str)> =
        lines.iter().filter_map(|line| secret::find(line).map(|kind| (*line, kind))).collect();
    let rate = flagged.len() as f64 / lines.len() as f64;
    println!(
        "secret guard false positives on review prose: {} of {} sentences ({:.3}%)",
        flagged.len(),
        lines.len(),
        rate * 100.0
    );
    assert!(rate < 0.005, "false positive rate {:.3}%: {flagged:#?}", rate * 100.0);
}

/// Returns the first corpus sample stored in `field` (with no evasion).
fn sample_in(field: Field) -> Sample {
    credential_corpus()
        .into_iter()
        .find(|s| s.field.name() == field.name() && s.evasion.is_none())
        .unwrap_or_else(|| panic!("the corpus has a sample in {field:?}"))
}

fn assert_refused(err: Error, field: Field, sample: &Sample) {
    let message = err.to_string();
    match err {
        Error::InvalidInput { field: named, reason: Invalid::Secret { kind }, .. } => {
            assert_eq!(named, field.name(), "{message}");
            assert_eq!(kind, sample.kind, "{message}");
        }
        other => panic!("{field:?}: expected a secret refusal, got {other:?}"),
    }
    assert!(message.contains(field.name()) && message.contains(sample.kind), "{message}");
    assert_not_echoed(&message, &sample.text);
}

#[test]
fn a_credential_in_each_fact_field_is_refused_and_nothing_is_written() {
    let p = Project::new();
    p.add("base", "decision", 3, None, "Existing fact.", "2026-01-01T00:00:00Z");
    let before = p.snapshot();
    for field in Field::ALL.into_iter().filter(|f| !f.is_adjudication()) {
        let sample = sample_in(field);
        let err = p.ws.remember(new_fact(&sample)).expect_err("a credential is refused");
        assert_refused(err, field, &sample);
        // The same through import, which names the item.
        let items = vec![NewFact::new("An ordinary fact."), new_fact(&sample)];
        match p.ws.import(items, &mut |_| {}) {
            Err(Error::InvalidInput {
                field: named,
                item: Some(2),
                reason: Invalid::Secret { .. },
            }) => {
                assert_eq!(named, field.name());
            }
            other => panic!("import of {field:?}: {other:?}"),
        }
        assert_eq!(p.snapshot(), before, "a refused {field:?} changed the memory directory");
    }
}

#[test]
fn a_credential_in_each_adjudication_field_is_refused_and_nothing_is_written() {
    let p = Project::new();
    p.add("base", "decision", 3, None, "Existing fact.", "2026-01-01T00:00:00Z");
    let before = p.snapshot();
    for field in [Field::Actor, Field::Rationale, Field::EventId] {
        let sample = sample_in(field);
        let err = p.ws.resolve(resolution(&sample)).expect_err("a credential is refused");
        assert_refused(err, field, &sample);
        assert_eq!(p.snapshot(), before, "a refused {field:?} changed the memory directory");
    }
}

#[test]
fn a_credential_in_a_write_memory_tool_call_is_refused_in_each_field() {
    // The MCP server and the agent loop read tool input through this one
    // function and append with `remember`.
    let p = Project::new();
    let before = p.snapshot();
    let token = sample_in(Field::MemoryKey);
    for (field, args) in [
        (
            "content",
            serde_json::json!({"content": token.text, "kind": "decision", "importance": 3}),
        ),
        (
            "memory_key",
            serde_json::json!({"content": "x", "kind": "decision", "importance": 3, "memory_key": token.text}),
        ),
        (
            "evidence value",
            serde_json::json!({"content": "x", "kind": "decision", "importance": 3, "evidence": {"file": token.text}}),
        ),
        (
            "evidence key",
            serde_json::json!({"content": "x", "kind": "decision", "importance": 3, "evidence": {token.text.clone(): "x"}}),
        ),
    ] {
        let new = NewFact::from_tool_input(args.as_object().unwrap()).expect("well-formed input");
        let err = p.ws.remember(new).expect_err("refused");
        assert!(matches!(&err, Error::InvalidInput { field: f, .. } if f == field), "{err}");
        assert_not_echoed(&err.to_string(), &token.text);
    }
    // An unknown field named like a credential is not repeated either.
    let args = serde_json::json!({"content": "x", "kind": "decision", "importance": 3, token.text.clone(): 1});
    let err = NewFact::from_tool_input(args.as_object().unwrap()).expect_err("unknown field");
    assert_not_echoed(&err.to_string(), &token.text);
    assert_eq!(p.snapshot(), before);
}

#[test]
fn every_evasion_is_seen_through() {
    let corpus = credential_corpus();
    for evasion in Evasion::ALL {
        let samples: Vec<&Sample> = corpus.iter().filter(|s| s.evasion == Some(evasion)).collect();
        assert!(samples.len() >= 5, "{evasion:?}: only {} samples", samples.len());
        for sample in samples {
            assert_eq!(
                secret::find(&sample.text),
                Some(sample.kind),
                "{evasion:?} hides {} ({})",
                sample.label,
                describe(&sample.text)
            );
        }
    }
}

#[test]
fn each_evasion_alone_is_seen_through_in_a_name_and_in_a_token() {
    let token = format!("ghp_{}", "Zk3Lm9Qp2Rt7Wx4Yb8Nc6Vd1Hf5Gj0Sa2Ue4");
    let assignment = "DB_PASSWORD=hunter42";
    for evasion in Evasion::ALL {
        let disguised = workmem_testutil::disguise(evasion, &token);
        assert_eq!(secret::find(&disguised), Some("GitHub token"), "{evasion:?} on a token");
        if matches!(evasion, Evasion::GluedPrefix | Evasion::GluedSuffix | Evasion::Fullwidth) {
            continue;
        }
        let name = workmem_testutil::disguise(evasion, "DB_PASSWORD");
        let text = assignment.replace("DB_PASSWORD", &name);
        assert_eq!(secret::find(&text), Some(secret::ASSIGNMENT), "{evasion:?} on a name");
    }
}

#[test]
fn the_false_positives_of_the_old_guard_are_stored() {
    let p = Project::new();
    for (i, text) in [
        "api_key=os.getenv('OPENAI_API_KEY')",
        "password=request.form['password']",
        "password=getpass.getpass()",
        "connect(password=cfg.db_password)",
        "The spinner uses the SpinKit class sk-folding-cube-angle-rotation.",
        "client.messages.create(max_tokens=4096, model=MODEL_ID)",
        "Rotate the database password every 90 days.",
        "Secret: rotation happens in the vault, not here.",
    ]
    .into_iter()
    .enumerate()
    {
        let stored =
            p.ws.remember(NewFact { fact_id: Some(format!("p{i}")), ..NewFact::new(text) })
                .unwrap_or_else(|err| panic!("{text}: {err}"));
        assert_eq!(stored.content(), text);
    }
}

#[test]
fn ids_workmem_generates_are_never_taken_for_credentials() {
    let p = Project::new();
    for n in 0..2_000 {
        let id = uuid_like(n);
        assert_eq!(secret::find(&id), None, "{id}");
        let event = format!("review:{}", &uuid_like(n + 7)[..24]);
        assert_eq!(secret::find(&event), None, "{event}");
    }
    let imported = p
        .ws
        .import((0..200).map(|n| NewFact::new(format!("Imported fact {n}"))).collect(), &mut |_| {})
        .expect("import");
    assert_eq!(imported.facts.len(), 200);
    for _ in 0..200 {
        p.ws.remember(NewFact::new("A fact with a random id")).expect("random ids pass");
    }
}

/// A 32-hex id shaped like the random UUIDs workmem generates.
fn uuid_like(n: u64) -> String {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..32)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdef"[(x % 16) as usize])
        })
        .collect()
}

#[test]
fn the_short_list_has_one_sample_of_every_kind() {
    let samples = credential_samples();
    let kinds: BTreeSet<&str> = samples.iter().map(|(_, kind)| *kind).collect();
    for kind in secret::kinds() {
        assert!(kinds.contains(kind), "no short sample of {kind}");
    }
    for (text, kind) in samples {
        assert_eq!(secret::find(&text), Some(kind), "{}", describe(&text));
    }
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

    /// The guard reads arbitrary text (a hostile memory, any tool input)
    /// without panicking, whatever mix of syntax and Unicode it holds: its
    /// parsers index by bytes, so every cut must fall on a character.
    #[test]
    fn the_guard_never_panics_on_arbitrary_text(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::sample::select(vec![
                    "password", "Password", " = ", "=", ": ", ":", "\"", "'", "`", "--", "-p",
                    "://", "@", "api key", "Bearer ", "Basic ", "Authorization: ", "$", "${",
                    "{", "}", "(", ")", "[", "]", "<", ">", "</", ",", ";", "&", "\\\"", "mysql ",
                    "curl -u ", "machine h login u password ", "sk-", "AKIA", "ghp_", "eyJ",
                    "\"kty\"", "private_key", "-----BEGIN ", "PRIVATE KEY-----", "\n", " ", "\t",
                ]).prop_map(str::to_owned),
                "[\\u{80}-\\u{10FFFF}]{1,3}",
                "[A-Za-z0-9+/=_.-]{1,24}",
            ],
            0..24,
        )
    ) {
        let text: String = parts.concat();
        let first = secret::find(&text);
        proptest::prop_assert_eq!(first, secret::find(&text));
        let _ = secret::check_pair("evidence", &text, &text);
        let half = text.chars().count() / 2;
        let (key, value): (String, String) = (text.chars().take(half).collect(), text.chars().skip(half).collect());
        let _ = secret::find_in_pair(&key, &value);
    }
}
