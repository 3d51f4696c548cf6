//! What a newcomer meets on the first day: `review` at a terminal never
//! drops what was typed, the README's tour runs literally in a fresh
//! directory, and the small messages (plurals, hints, `-q`) say what
//! happened.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::process::Output;

use serde_json::Value;
use workmem_testutil::Project;

use crate::WORKMEM;

fn project() -> Project {
    Project::new(WORKMEM, "workmem-dayone-")
}

/// Two equally strong values of `db.engine`, distilled into one open case;
/// returns the case.
fn tie(p: &Project) -> Value {
    for content in ["Use Postgres", "Use SQLite"] {
        p.ok(&[
            "remember",
            content,
            "-k",
            "decision",
            "-i",
            "4",
            "--key",
            "db.engine",
            "--at",
            "2026-01-03T10:00:00Z",
        ]);
    }
    p.ok(&["distill", "--as-of", "2026-06-01T00:00:00Z", "-q"]);
    let cases = p.json(&["conflicts"]);
    assert_eq!(cases.as_array().map(Vec::len), Some(1), "{cases}");
    cases[0].clone()
}

/// Starts `workmem review` on a pseudo-terminal in the project.
fn review(p: &Project) -> rexpect::session::PtySession {
    let mut cmd = std::process::Command::new(WORKMEM);
    cmd.env_clear()
        .env("HOME", &p.root)
        .env("USER", "reviewer")
        .env("TERM", "xterm")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&p.root)
        .arg("review");
    rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn workmem review on a pty")
}

#[test]
fn review_asks_again_on_a_wrong_number_an_empty_rationale_and_another_answer() {
    let p = project();
    let case = tie(&p);
    let mut session = review(&p);
    session.exp_string("key db.engine").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("7").unwrap();
    session.exp_string("\"7\" is not a candidate number: type 1 to 2").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("1").unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("   ").unwrap();
    session.exp_string("a decision needs a rationale").unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("prod runs Postgres").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    session.send_line("sure").unwrap();
    session.exp_string("type y to record the decision").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    session.send_line("yes").unwrap();
    session.exp_string("resolved ").unwrap();
    session.exp_string("review done: 1 decided, 0 skipped").unwrap();
    session.exp_eof().unwrap();
    let audit = p.json(&["adjudications"]);
    assert_eq!(audit.as_array().map(Vec::len), Some(1), "{audit}");
    assert_eq!(audit[0]["conflict_id"], case["conflict_id"]);
    assert_eq!(audit[0]["selected_candidate_id"], case["candidates"][0]["candidate_id"]);
    assert_eq!(audit[0]["rationale"], "prod runs Postgres");
    assert_eq!(p.json(&["conflicts"]), serde_json::json!([]));
}

#[test]
fn review_quit_mid_case_leaves_the_case_open_and_says_so() {
    let p = project();
    let case = tie(&p);
    let id = case["conflict_id"].as_str().unwrap();
    // Quit at the rationale, then at the confirmation.
    for answer in ["rationale", "confirm"] {
        let mut session = review(&p);
        session.exp_string("candidate number").unwrap();
        session.send_line("2").unwrap();
        session.exp_string("rationale (q quits)> ").unwrap();
        if answer == "confirm" {
            session.send_line("keep it embedded").unwrap();
            session.exp_string("(y/n)> ").unwrap();
        }
        session.send_line("q").unwrap();
        session.exp_string(&format!("quit: {id} stays open, nothing recorded")).unwrap();
        session.exp_eof().unwrap();
        assert_eq!(p.json(&["adjudications"]), serde_json::json!([]), "{answer}");
        let open = p.json(&["conflicts"]);
        assert_eq!(open[0]["conflict_id"], id, "{answer}");
    }
    // `n` skips it, and says it stays open.
    let mut session = review(&p);
    session.exp_string("candidate number").unwrap();
    session.send_line("2").unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("keep it embedded").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    session.send_line("no").unwrap();
    session.exp_string(&format!("skipped: {id} stays open")).unwrap();
    session.exp_string("review done: 0 decided, 1 skipped").unwrap();
    session.exp_eof().unwrap();
    assert_eq!(p.json(&["adjudications"]), serde_json::json!([]));
}

#[test]
fn review_with_nothing_open_says_so_plainly() {
    let p = project();
    p.ok(&["init", "-q"]);
    let mut session = review(&p);
    // The screen never mentions a review that did not happen.
    let out = session.exp_eof().unwrap();
    assert!(out.contains("no open conflict cases") && !out.contains("review done"), "{out}");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn distill_quiet_prints_nothing_on_success() {
    let p = project();
    tie(&p);
    p.ok(&[
        "remember",
        "Use WAL mode",
        "-k",
        "decision",
        "-i",
        "5",
        "--at",
        "2026-01-01T00:00:00Z",
    ]);
    let out = p.ok(&["distill", "--as-of", "2026-07-01T00:00:00Z", "-q"]);
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    // Without -q the counters are printed.
    let out = p.ok(&["distill", "--as-of", "2026-07-01T00:00:00Z"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("scanned"), "{out:?}");
}

#[test]
fn resolve_offers_a_retry_only_when_one_can_help_and_points_at_conflicts() {
    let p = project();
    let case = tie(&p);
    let id = case["conflict_id"].as_str().unwrap();
    // An unknown case: exit 6, a hint to list the cases, no retry line.
    let out = p.run(&[
        "resolve",
        "conflict-0000000000000000",
        "1",
        "--revision",
        "1",
        "--rationale",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(6));
    let err = stderr(&out);
    assert!(err.contains("hint: `workmem conflicts` lists"), "{err}");
    assert!(!err.contains("--event-id"), "{err}");
    // The placeholder of the README is refused as such.
    let out = p.run(&["resolve", "CONFLICT_ID", "2", "--revision", "1", "--rationale", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("CONFLICT_ID is a placeholder") && err.contains("workmem conflicts"),
        "{err}"
    );
    // A stale revision: exit 3, no retry line.
    let out = p.run(&["resolve", id, "1", "--revision", "7", "--rationale", "x"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!stderr(&out).contains("--event-id"), "{}", stderr(&out));
    // Success names the event id it recorded.
    let out = p.ok(&["resolve", id, "1", "--revision", "1", "--rationale", "prod runs Postgres"]);
    assert!(stderr(&out).contains("recorded as event review:"), "{}", stderr(&out));
    // Nothing open any more, and conflicts says where the case went.
    let out = p.ok(&["conflicts"]);
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("no open conflict cases (1 resolved; --status all lists them)"),
        "{}",
        stderr(&out)
    );
    let out = p.ok(&["conflicts", "--status", "superseded"]);
    assert!(stderr(&out).contains("no superseded conflict cases (1 resolved;"), "{}", stderr(&out));
    // explain refuses its placeholder too.
    let out = p.run(&["explain", "FACT_ID"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("FACT_ID is a placeholder"), "{}", stderr(&out));
}

#[test]
fn the_actor_outside_a_git_repository_is_the_global_git_identity() {
    let p = project();
    let case = tie(&p);
    // The project's `.git` is no repository; HOME holds a global identity.
    std::fs::write(
        p.root.join(".gitconfig"),
        "[user]\n\tname = Grace Hopper\n\temail = grace@example.com\n",
    )
    .unwrap();
    let id = case["conflict_id"].as_str().unwrap();
    let event = p.json(&["resolve", id, "2", "--revision", "1", "--rationale", "keep it embedded"]);
    assert_eq!(event["actor"], "Grace Hopper <grace@example.com>");
}

#[test]
fn init_twice_says_the_workspace_existed_and_counts_are_plural_where_due() {
    let p = project();
    let out = p.ok(&["init"]);
    assert!(!stderr(&out).contains("already existed"), "{}", stderr(&out));
    let out = p.ok(&["init"]);
    assert!(stderr(&out).contains("the workspace already existed"), "{}", stderr(&out));
    for (content, kind) in [
        ("Use WAL mode", "decision"),
        ("Use ruff", "decision"),
        ("Tabs are banned", "convention"),
        ("The cache needs a lock", "pitfall"),
        ("The CI image has no git", "pitfall"),
    ] {
        p.ok(&["remember", content, "-k", kind, "-i", "5", "--at", "2026-01-01T00:00:00Z"]);
    }
    p.ok(&["distill", "--as-of", "2026-07-01T00:00:00Z", "-q"]);
    let status = String::from_utf8_lossy(&p.ok(&["status"]).stdout).into_owned();
    assert!(status.contains("curated     2 decisions, 1 convention, 2 pitfalls"), "{status}");
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Status's count of facts waiting for their age, from the distill cache
/// and, with the cache removed, from the log: both must agree.
fn waiting(p: &Project) -> (Value, Value) {
    let cached = p.json(&["status"])["facts"]["waiting_for_age"].clone();
    for entry in std::fs::read_dir(p.memory()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(".distill-cache") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    (cached, p.json(&["status"])["facts"]["waiting_for_age"].clone())
}

#[test]
fn explain_and_status_agree_with_a_run_made_with_a_shorter_age_gate() {
    let p = project();
    p.ok(&["init", "-q"]);
    let wal = p.json(&["remember", "Use SQLite in WAL mode", "-k", "decision", "-i", "5"]);
    let wal = wal["fact_id"].as_str().unwrap().to_owned();
    for content in ["Use Postgres", "Use SQLite"] {
        p.ok(&[
            "remember",
            content,
            "-k",
            "decision",
            "-i",
            "4",
            "--key",
            "db.engine",
            "--at",
            "2026-11-30T10:00:00Z",
        ]);
    }
    // Before any run, every fact waits.
    assert_eq!(p.json(&["status"])["facts"]["waiting_for_age"], 3);
    // The run that just happened is not "the next distill".
    let out = p.ok(&["distill", "--min-age-days", "0", "--explain"]);
    let report = text(&out);
    assert!(report.contains(&format!("{wal}  promoted into entry")), "{report}");
    assert!(!report.contains("by the next distill"), "{report}");
    assert!(report.contains("tied with an equally strong value"), "{report}");
    // A dry run says it wrote nothing.
    p.ok(&["remember", "Use ruff", "-k", "decision", "-i", "5"]);
    let out = p.ok(&["distill", "--min-age-days", "0", "--explain", "--dry-run"]);
    assert!(text(&out).contains("would be promoted into entry"), "{}", text(&out));
    // Tied facts are tied, not waiting; only "Use ruff" waits.
    let key = text(&p.ok(&["explain", "--key", "db.engine"]));
    assert_eq!(key.matches("tied with an equally strong value").count(), 2, "{key}");
    assert_eq!(waiting(&p), (1.into(), 1.into()));
    p.ok(&["distill", "--min-age-days", "0", "-q"]);
    let case = &p.json(&["conflicts"])[0];
    let id = case["conflict_id"].as_str().unwrap();
    p.ok(&["resolve", id, "1", "--revision", "1", "--rationale", "prod runs Postgres"]);

    let fact = text(&p.ok(&["explain", &wal]));
    assert!(!fact.contains("waiting for age") && fact.contains("promoted into entry"), "{fact}");
    let key = text(&p.ok(&["explain", "--key", "db.engine"]));
    assert!(!key.contains("waiting for age"), "{key}");
    assert!(key.contains("active value \"Use Postgres\""), "{key}");
    assert!(key.contains("rejected by adjudication"), "{key}");
    let json = p.json(&["explain", "--key", "db.engine"]);
    let reasons: Vec<&str> =
        json["facts"].as_array().unwrap().iter().map(|f| f["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons.len(), 2);
    assert!(
        reasons.contains(&"already_evidence") && reasons.contains(&"rejected_by_adjudication"),
        "{reasons:?}"
    );
    let status = text(&p.ok(&["status"]));
    assert!(status.contains("waiting     none"), "{status}");
    assert_eq!(waiting(&p), (0.into(), 0.into()));
    // A fact no run has judged still waits.
    p.ok(&["remember", "Use uv", "-k", "decision", "-i", "5"]);
    assert_eq!(waiting(&p), (1.into(), 1.into()));
}

/// One command of the README's tour and its comment.
#[derive(Debug)]
struct TourStep {
    words: Vec<String>,
    comment: String,
}

/// Returns the commands of the README's tour: the first `sh` block after
/// `## A tour`, one command a line, a comment after `#` (a line holding
/// only a comment continues the previous one).
fn readme_tour() -> Vec<TourStep> {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README.md");
    let tour = &readme[readme.find("\n## A tour").expect("README has a tour section")..];
    let block = &tour[tour.find("```sh\n").expect("the tour has an sh block") + 6..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut steps: Vec<TourStep> = Vec::new();
    for line in block.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            let last = steps.last_mut().expect("a comment line follows a command");
            last.comment.push(' ');
            last.comment.push_str(comment.trim());
            continue;
        }
        let (command, comment) = line.split_once(" #").unwrap_or((line, ""));
        let words = shlex::split(command).expect("the command splits like a shell line");
        assert_eq!(words[0], "workmem", "the tour runs workmem commands only: {line}");
        steps.push(TourStep { words, comment: comment.trim().to_owned() });
    }
    steps
}

/// Returns the double-quoted phrases of a comment.
fn quoted(comment: &str) -> Vec<&str> {
    comment.split('"').skip(1).step_by(2).collect()
}

#[test]
fn the_readme_tour_runs_literally_in_a_fresh_directory() {
    let steps = readme_tour();
    assert!(steps.len() >= 10, "{steps:?}");
    let dir = tempfile::Builder::new().prefix("workmem-tour-").tempdir().unwrap();
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(fresh.join("home")).unwrap();
    let mut conflict_id: Option<String> = None;
    let mut remembered: Vec<String> = Vec::new();
    for step in &steps {
        let args: Vec<String> = step.words[1..]
            .iter()
            .map(|word| match word.as_str() {
                "CONFLICT_ID" => conflict_id.clone().expect("`workmem conflicts` ran before"),
                _ => word.clone(),
            })
            .collect();
        let out = std::process::Command::new(WORKMEM)
            .env_clear()
            .env("HOME", fresh.join("home"))
            .env("USER", "reader")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&fresh)
            .args(&args)
            .output()
            .unwrap();
        let (stdout, stderr) = (text(&out), stderr(&out));
        let shown = format!("{stdout}{stderr}");
        assert!(out.status.success(), "README: workmem {args:?} failed:\n{shown}");
        for phrase in quoted(&step.comment) {
            assert!(
                shown.contains(phrase),
                "README: workmem {args:?} should print {phrase:?}:\n{shown}"
            );
        }
        let has = |flag: &str| args.iter().any(|a| a == flag);
        match args[0].as_str() {
            "init" => assert!(fresh.join(".workmem/memory/daily").is_dir(), "{shown}"),
            "remember" => {
                assert!(stdout.starts_with("remembered "), "{shown}");
                remembered.push(args[1].clone());
            }
            "facts" => assert!(stdout.contains(&remembered[0]), "today's facts: {shown}"),
            "distill" if has("--dry-run") => {
                assert!(stderr.contains("dry run, nothing written"), "{shown}");
                assert!(has("--explain") && stdout.contains("unkeyed facts:"), "{shown}");
            }
            "distill" => assert!(stdout.contains("scanned"), "{shown}"),
            "memory" | "context" => assert!(stdout.starts_with("# Workspace Memory"), "{shown}"),
            "conflicts" => {
                let line = stdout.lines().find(|l| l.contains("  open  ")).expect("an open case");
                conflict_id = Some(line.split_whitespace().next().unwrap().to_owned());
                assert!(stdout.contains("  1. ") && stdout.contains("  2. "), "{shown}");
            }
            "resolve" => {
                let id = conflict_id.as_deref().unwrap();
                assert!(
                    stdout.starts_with(&format!("resolved {id} (revision 1) with ")),
                    "{shown}"
                );
                // The number the README picks is the candidate it names.
                let number = format!("  {}. ", args[2]);
                for phrase in quoted(&step.comment) {
                    let listed = text(
                        &std::process::Command::new(WORKMEM)
                            .env_clear()
                            .current_dir(&fresh)
                            .args(["conflicts", "--status", "all"])
                            .output()
                            .unwrap(),
                    );
                    let line = listed.lines().find(|l| l.starts_with(&number)).unwrap();
                    assert!(
                        line.contains(phrase),
                        "candidate {number} is not {phrase:?}: {listed}"
                    );
                }
            }
            "history" => {
                assert!(stdout.contains("(active)") && stdout.contains("resolved"), "{shown}");
            }
            "explain" => assert!(stdout.contains("active value"), "{shown}"),
            "adjudications" => assert!(stdout.contains(" reader chose "), "{shown}"),
            "verify" => assert!(stderr.contains("is consistent"), "{shown}"),
            "status" => {
                assert!(stdout.contains("waiting     none"), "{shown}");
                assert!(stdout.contains("conflicts   0 open"), "{shown}");
            }
            "scan" => assert!(out.status.code() == Some(0), "{shown}"),
            other => panic!(
                "the README tour runs `workmem {other}`, which this test has no check for: add one"
            ),
        }
    }
    // The whole story happened: a value promoted, a tie decided by a person.
    let p_memory = fresh.join(".workmem/memory/MEMORY.md");
    let memory = std::fs::read_to_string(p_memory).unwrap();
    assert!(
        memory.contains("Use SQLite in WAL mode") && memory.contains("Use Python 3.12"),
        "{memory}"
    );
}

#[test]
fn an_emoji_joined_by_u200d_is_stored_and_printed_whole() {
    let p = project();
    let technologist = "\u{1F469}\u{200D}\u{1F4BB}";
    let content = format!("On call this week: {technologist} Ada");
    let fact = p.json(&["remember", &content]);
    assert_eq!(fact["content"], content.as_str());
    let listed = text(&p.ok(&["facts"]));
    assert!(listed.contains(&content), "{listed}");
    // A joiner between letters is still refused, naming the code point.
    let out = p.run(&["remember", "pass\u{200D}word rotation"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("U+200D"), "{}", stderr(&out));
}
