//! What a newcomer meets on the first day: `review` at a terminal never
//! drops what was typed, the README's tour runs literally in a fresh
//! directory, and the small messages (plurals, hints, `-q`) say what
//! happened.

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
