//! `workmem explain`, `distill --explain` and configuration files, end to
//! end: every reason in text and JSON, config precedence (user file <
//! workspace file < flags) and every configuration error.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const AS_OF: &str = "2026-06-01T00:00:00Z";

struct Project {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::Builder::new().prefix("workmem-explain-").tempdir().expect("temp dir");
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join(".git")).expect("project");
        std::fs::create_dir_all(dir.path().join("xdg")).expect("xdg");
        Project { dir, root }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_workmem"))
            .env_clear()
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .env("USER", "reviewer")
            .current_dir(&self.root)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("spawn workmem")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8")
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).expect("json")
    }

    fn fact(
        &self,
        id: &str,
        content: &str,
        kind: &str,
        importance: u8,
        key: Option<&str>,
        at: &str,
    ) {
        let imp = importance.to_string();
        let mut args =
            vec!["remember", content, "-k", kind, "-i", &imp, "--at", at, "--id", id, "-q"];
        if let Some(key) = key {
            args.extend(["--key", key]);
        }
        self.ok(&args);
    }

    fn user_config(&self, text: &str) -> PathBuf {
        let path = self.dir.path().join("xdg/workmem/config.toml");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    fn workspace_config(&self, text: &str) -> PathBuf {
        let path = self.root.join(".workmem/config.toml");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }
}

/// Builds a workspace where every reason occurs at `AS_OF`, and returns it.
fn every_reason() -> Project {
    let p = Project::new();
    // db.engine: SQLite active; Postgres and MySQL tie; Oracle has one fact.
    p.fact("s1", "Use SQLite.", "decision", 4, Some("db.engine"), "2026-01-01T00:00:00Z");
    p.ok(&["distill", "--as-of", AS_OF, "-q"]);
    p.fact("s2", "use  sqlite.", "decision", 3, Some("db.engine"), "2026-01-03T00:00:00Z");
    p.fact("p1", "Use Postgres.", "decision", 4, Some("db.engine"), "2026-02-01T00:00:00Z");
    p.fact("p2", "Use Postgres.", "decision", 4, Some("db.engine"), "2026-02-10T00:00:00Z");
    p.fact("m1", "Use MySQL.", "decision", 4, Some("db.engine"), "2026-02-02T00:00:00Z");
    p.fact("m2", "Use MySQL.", "decision", 4, Some("db.engine"), "2026-02-10T00:00:00Z");
    p.fact("d1", "Use DuckDB.", "decision", 3, Some("db.engine"), "2026-02-03T00:00:00Z");
    p.fact("d2", "Use DuckDB.", "decision", 3, Some("db.engine"), "2026-02-04T00:00:00Z");
    p.fact("o1", "Use Oracle.", "decision", 5, Some("db.engine"), "2026-01-05T00:00:00Z");
    p.fact("old", "Use Access.", "decision", 5, Some("db.engine"), "2025-12-01T00:00:00Z");
    p.fact("old2", "Use Access.", "decision", 5, Some("db.engine"), "2025-12-02T00:00:00Z");
    // Unkeyed facts.
    p.fact("young", "Cache the schema.", "decision", 5, None, "2026-05-30T00:00:00Z");
    p.fact("done", "Released 1.0.", "outcome", 5, None, "2026-01-01T00:00:00Z");
    p.fact("weak", "Prefer short names.", "convention", 2, None, "2026-01-01T00:00:00Z");
    p.fact("strong", "Never log tokens.", "pitfall", 5, None, "2026-01-01T00:00:00Z");
    // style.indent: a tie that a human resolves; the loser stays rejected.
    p.fact("t1", "Use tabs.", "convention", 4, Some("style.indent"), "2026-01-02T00:00:00Z");
    p.fact("t2", "Use spaces.", "convention", 4, Some("style.indent"), "2026-01-02T00:00:00Z");
    p.ok(&["distill", "--as-of", AS_OF, "-q"]);
    let cases = p.json(&["conflicts"]);
    let case = cases
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["memory_key"] == "style.indent")
        .expect("case");
    let tabs = case["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["content"] == "Use tabs.")
        .expect("tabs");
    let revision = case["revision"].to_string();
    p.ok(&[
        "resolve",
        case["conflict_id"].as_str().expect("id"),
        tabs["candidate_id"].as_str().expect("id"),
        "--revision",
        &revision,
        "--event-id",
        "review:indent",
        "--rationale",
        "house style",
        "-q",
    ]);
    p
}

/// A decision chose tabs (t1) over spaces (t2, both dated Jan 2); a fact
/// for spaces recorded afterwards but dated Jan 1, then a retraction of
/// all of the chosen value's evidence: the domain stays without a value,
/// and explain names the retracted value the decision chose as the one
/// the fact is not newer than.
#[test]
fn a_backdated_fact_after_a_decision_whose_value_was_retracted_is_stale() {
    let p = every_reason();
    p.fact("t3", "Use spaces.", "convention", 4, Some("style.indent"), "2026-01-01T00:00:00Z");
    p.ok(&["retract", "t1", "--rationale", "recorded for another repository", "-q"]);
    p.ok(&["distill", "--as-of", AS_OF, "-q"]);
    let json = p.json(&["explain", "t3", "--as-of", AS_OF]);
    assert_eq!(json["reason"], "stale", "{json}");
    assert_eq!(json["active_last_seen"], "2026-01-02T00:00:00Z", "{json}");
    assert_eq!(
        (&json["entry"]["content"], &json["entry"]["status"]),
        (&"Use tabs.".into(), &"retracted".into())
    );
    let human = p.ok(&["explain", "t3", "--as-of", AS_OF]);
    assert!(
        human.contains("stale: not newer than the value a decision chose, entry")
            && human.contains("(retracted; last seen 2026-01-02T00:00:00Z when decided)"),
        "{human}"
    );
    let memory = p.ok(&["memory"]);
    assert!(!memory.contains("Use spaces.") && !memory.contains("Use tabs."), "{memory}");
}

#[test]
fn every_reason_in_text_and_json() {
    let p = every_reason();
    let expectations = [
        ("young", "waiting_for_age", "waiting for age"),
        ("done", "not_stable_kind", "not a stable kind"),
        ("weak", "below_thresholds", "below the thresholds"),
        ("strong", "already_evidence", "promoted into entry"),
        ("s1", "already_evidence", "revision 1 (active)"),
        ("s2", "already_evidence", "promoted into entry"),
        ("p1", "tied", "conflict case"),
        ("m2", "tied", "awaits a human decision"),
        ("d1", "lost_to_stronger_proposal", "losing to a stronger proposal"),
        ("o1", "needs_more_evidence", "needs more evidence"),
        ("old", "stale", "stale: not newer than the active value"),
        ("t2", "rejected_by_adjudication", "rejected by adjudication review:indent"),
    ];
    for (id, reason, text) in expectations {
        let json = p.json(&["explain", id, "--as-of", AS_OF]);
        assert_eq!(json["reason"], reason, "{id}: {json}");
        assert_eq!(json["fact"]["fact_id"], id);
        let human = p.ok(&["explain", id, "--as-of", AS_OF]);
        assert!(human.contains(text), "{id}: {human}");
    }
    // A fact the next distill would promote, and one that reinforces.
    p.fact("new1", "Document every flag.", "convention", 5, None, "2026-01-10T00:00:00Z");
    p.fact("s3", "Use SQLite.", "decision", 2, Some("db.engine"), "2026-01-11T00:00:00Z");
    let promoted = p.json(&["explain", "new1", "--as-of", AS_OF]);
    assert_eq!(promoted["reason"], "promoted");
    assert_eq!(promoted["revision"], 1);
    assert_eq!(promoted["entry"]["content"], "Document every flag.");
    assert!(p.ok(&["explain", "new1", "--as-of", AS_OF]).contains("promoted into entry"));
    let reinforced = p.json(&["explain", "s3", "--as-of", AS_OF]);
    assert_eq!(reinforced["reason"], "reinforced");
    assert!(p.ok(&["explain", "s3", "--as-of", AS_OF]).contains("reinforcing the active value"));
    // explain writes nothing: distill afterwards still has work to do.
    let report = p.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["created"], 1);
    assert_eq!(report["updated"], 1);
    // An unknown fact is invalid input naming the field.
    let out = p.run(&["explain", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fact_id"));
}

#[test]
fn explain_key_and_distill_explain_list_every_proposal() {
    let p = every_reason();
    let key = p.json(&["explain", "--key", "DB.Engine", "--as-of", AS_OF]);
    assert_eq!(key["memory_key"], "db.engine");
    assert_eq!(key["active"]["content"], "Use SQLite.");
    let reasons: Vec<(String, String)> = key["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .map(|f| {
            (
                f["fact"]["fact_id"].as_str().expect("id").to_owned(),
                f["reason"].as_str().expect("r").to_owned(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 11, "{reasons:?}");
    assert!(reasons.contains(&("d2".into(), "lost_to_stronger_proposal".into())));
    let text = p.ok(&["explain", "--key", "db.engine", "--as-of", AS_OF]);
    assert!(text.starts_with("db.engine: active value \"Use SQLite.\""), "{text}");
    assert!(text.contains("p2  \"Use Postgres.\": tied"), "{text}");

    let run = p.json(&["distill", "--dry-run", "--explain", "--as-of", AS_OF]);
    assert_eq!(run["conflicts"], 1);
    let decisions = run["decisions"].as_array().expect("decisions");
    assert!(decisions.iter().any(|d| d["fact_id"] == "p1" && d["reason"] == "tied"));
    assert!(decisions.iter().any(|d| d["fact_id"] == "weak" && d["reason"] == "below_thresholds"));
    let text = p.ok(&["distill", "--dry-run", "--explain", "--as-of", AS_OF]);
    assert!(text.contains("key db.engine:") && text.contains("unkeyed facts:"), "{text}");
    assert!(text.contains("  o1  needs more evidence"), "{text}");
}

#[test]
fn configuration_precedence_is_user_then_workspace_then_flags() {
    let p = Project::new();
    p.fact("a", "Keep functions short.", "convention", 3, None, "2026-01-01T00:00:00Z");
    p.fact("u", "Pin the toolchain.", "convention", 2, None, "2026-05-20T00:00:00Z");
    let reason = |args: &[&str]| {
        let mut all = vec!["explain", "a", "--as-of", AS_OF];
        all.extend_from_slice(args);
        p.json(&all)["reason"].as_str().expect("reason").to_owned()
    };
    assert_eq!(reason(&[]), "below_thresholds");
    p.user_config("[policy]\nminimum_importance = 3\n");
    assert_eq!(reason(&[]), "promoted");
    p.workspace_config("[policy]\nminimum_importance = 5\n");
    assert_eq!(reason(&[]), "below_thresholds");
    assert_eq!(reason(&["--min-importance", "2"]), "promoted");
    // Keys the workspace file leaves alone still come from the user file.
    p.user_config("[policy]\nminimum_importance = 3\nrepeat_threshold = 1\n");
    assert_eq!(reason(&[]), "promoted");
    // Per-source overrides: a `user` fact 12 days old with importance 2.
    p.workspace_config("[policy.source.user]\nminimum_age_days = 7\nminimum_importance = 2\n");
    let u = p.json(&["explain", "u", "--as-of", AS_OF]);
    assert_eq!(u["reason"], "promoted", "{u}");
    // Context settings.
    p.workspace_config("[context]\nrecent_facts = 1\nbudget = 0\n");
    let context = p.json(&["context"]);
    assert_eq!(context["context"].as_str().expect("text").matches("\n- [").count(), 1, "{context}");
}

#[test]
fn configuration_errors_name_the_key_and_the_file() {
    let p = Project::new();
    p.ok(&["init", "-q"]);
    let cases = [
        ("[polcy]\n", "unknown key `polcy`"),
        ("[policy]\nminimum_importanc = 3\n", "unknown key `policy.minimum_importanc`"),
        (
            "[policy.source.user]\nrepeat_threshold = 3\n",
            "unknown key `policy.source.user.repeat_threshold`",
        ),
        ("[context]\nwidth = 3\n", "unknown key `context.width`"),
        ("[policy]\nminimum_importance = 7\n", "`policy.minimum_importance`"),
        ("[policy]\nminimum_importance = \"high\"\n", "`policy.minimum_importance`"),
        ("[policy]\nsupersession_repeat_threshold = 1\n", "`policy.supersession_repeat_threshold`"),
        ("[policy]\nminimum_age_days = -1\n", "`policy.minimum_age_days`"),
        ("[policy]\nstable_kinds = [\"idea\"]\n", "`policy.stable_kinds`"),
        (
            "[policy.source.user]\nminimum_importance = 0\n",
            "`policy.source.user.minimum_importance`",
        ),
        ("[context]\nbudget = 10\n", "context_budget"),
        ("policy = 3\n", "`policy`"),
        ("[policy\n", "not valid TOML"),
    ];
    for (text, needle) in cases {
        for user in [false, true] {
            let path = if user { p.user_config(text) } else { p.workspace_config(text) };
            let out = p.run(&["facts", "--all"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
            assert!(stderr.contains(needle), "{text}: {stderr}");
            assert!(stderr.contains(&path.display().to_string()), "{text}: {stderr}");
            std::fs::remove_file(&path).expect("remove");
        }
    }
    let out = p.run(&["facts", "--all"]);
    assert!(out.status.success());
}

/// Appends a retraction of `facts` to the project's corrections stream
/// (the state the retract command leaves for facts that are evidence of
/// nothing).
fn retract(p: &Project, event: &str, facts: &[&str]) {
    let workspace = p.json(&["status"])["workspace_id"].as_str().expect("an id").to_owned();
    let record = serde_json::json!({
        "action": "retract", "actor": "Ada <ada@example.com>", "entry_key": null,
        "event_id": event, "fact_ids": facts, "rationale": "recorded against the wrong service",
        "recorded_at": "2026-05-01T09:00:00Z", "restores": null,
        "schema_version": 1, "workspace_id": workspace,
    });
    let path = p.root.join(".workmem/memory/memory-corrections.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&record.to_string());
    text.push('\n');
    std::fs::write(path, text).expect("write the stream");
}

#[test]
fn explain_and_review_show_a_retracted_fact_with_its_record() {
    let p = Project::new();
    p.fact("e1", "Use Postgres", "decision", 4, Some("db.engine"), "2026-01-03T10:00:00Z");
    p.fact("e2", "Use MySQL", "decision", 4, Some("db.engine"), "2026-01-03T10:00:00Z");
    p.fact("e3", "Use SQLite", "decision", 4, Some("db.engine"), "2026-05-20T10:00:00Z");
    retract(&p, "correction:1", &["e3"]);

    let explained = p.json(&["explain", "e3", "--as-of", AS_OF]);
    assert_eq!(explained["reason"], "retracted", "{explained}");
    assert_eq!(explained["event_ids"], serde_json::json!(["correction:1"]));
    assert_eq!(explained["fact"]["fact_id"], "e3");
    let text = p.ok(&["explain", "e3", "--as-of", AS_OF]);
    assert!(text.contains("retracted by correction:1"), "{text}");
    // The key's other facts are judged without it: a tie of e1 and e2.
    let key = p.json(&["explain", "--key", "db.engine", "--as-of", AS_OF]);
    let reasons: Vec<&str> =
        key["facts"].as_array().unwrap().iter().map(|f| f["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["tied", "tied", "retracted"], "{key}");
    // Plain `facts` leaves it out; `--all` marks it.
    let listed = p.json(&["facts", "--all", "--key", "db.engine"]);
    assert_eq!(listed.as_array().unwrap().len(), 3);
    assert_eq!(listed[2]["retracted_by"], serde_json::json!(["correction:1"]));
    let recent = p.json(&["facts", "--recent", "10"]);
    let ids: Vec<&str> =
        recent.as_array().unwrap().iter().map(|f| f["fact_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["e1", "e2"]);

    // review shows the case of db.engine with the key's corrections.
    p.ok(&["distill", "--as-of", AS_OF, "-q"]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_workmem"));
    cmd.env_clear()
        .env("HOME", p.dir.path())
        .env("XDG_CONFIG_HOME", p.dir.path().join("xdg"))
        .env("USER", "reviewer")
        .env("TERM", "xterm")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&p.root)
        .arg("review");
    let mut session =
        rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn workmem review");
    session.exp_string("key db.engine").unwrap();
    session
        .exp_string(
            "correction correction:1 (retract) by Ada <ada@example.com> at \
             2026-05-01T09:00:00Z: facts e3: recorded against the wrong service",
        )
        .unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("q").unwrap();
    session.exp_eof().unwrap();
}
