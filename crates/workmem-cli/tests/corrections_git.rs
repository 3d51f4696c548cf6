//! Corrections that arrive through git, in real repositories: one clone
//! retracts (or restores) a fact that is evidence of an active entry and
//! commits; another clone, with facts and a distill of its own, pulls.
//! The first command after the merge applies the correction to the merged
//! state, so that `memory`, `context` and `search` no longer serve the
//! retracted value, `verify` is clean and `history` shows the record; in
//! both merge directions, and through `workmem diff` on a branch.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use serde_json::Value;

use workmem_testutil::files_holding;

use crate::git_world::{AS_OF, Clone, World, text};

const WRONG: &str = "Use tokio for async";

/// A shared repository `a` whose memory holds the active entry
/// `runtime.async` (tokio, from one fact) and a settled `db.engine`;
/// returns it with the fact id of the tokio fact.
fn shared(world: &World) -> (Clone<'_>, String) {
    let a = world.init("alice/app");
    a.ok(&["init", "-q"]);
    let wrong = a.remember(WRONG, Some("runtime.async"), "2026-01-05T09:00:00Z");
    a.remember("Use SQLite for the cache", Some("db.engine"), "2026-01-05T10:00:00Z");
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    assert_eq!(a.active("runtime.async").as_deref(), Some(WRONG));
    a.ok(&["share", "-q"]);
    a.commit_all("share project memory");
    (a, wrong)
}

const PIN: &str = "Pin the toolchain in rust-toolchain.toml";

/// Gives `b` facts and a distill of its own, committed; returns the fact
/// id of its unkeyed convention.
fn bob_works(b: &Clone<'_>) -> String {
    b.remember("Run the tests with nextest", Some("ci.runner"), "2026-02-01T11:00:00Z");
    let pin = b.remember(PIN, None, "2026-02-01T12:00:00Z");
    b.ok(&["distill", "--as-of", AS_OF, "-q"]);
    b.commit_all("bob");
    pin
}

fn retract(clone: &Clone<'_>, fact: &str, event: &str) {
    clone.ok(&[
        "retract",
        fact,
        "--rationale",
        "recorded by mistake",
        "--event-id",
        event,
        "--actor",
        "Ada <ada@example.com>",
        "--at",
        "2026-03-01T09:00:00Z",
    ]);
}

fn restore(clone: &Clone<'_>, target: &str, event: &str) {
    clone.ok(&[
        "restore",
        target,
        "--rationale",
        "it was right after all",
        "--event-id",
        event,
        "--actor",
        "Ada <ada@example.com>",
        "--at",
        "2026-03-02T09:00:00Z",
    ]);
}

/// The status of the entry of `key` with `content`, as curated.json holds
/// it.
fn curated_status(clone: &Clone<'_>, content: &str) -> String {
    let data = std::fs::read(clone.memory().join("curated.json")).unwrap();
    let curated: Value = serde_json::from_slice(&data).unwrap();
    let entry = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == content)
        .unwrap_or_else(|| panic!("no entry {content}: {curated}"));
    entry["status"].as_str().unwrap().to_owned()
}

/// Whether `memory`, `context` and `search` (for the first word of
/// `content` after "Use") serve `content`.
fn served(clone: &Clone<'_>, content: &str) -> [bool; 3] {
    let memory = clone.ok(&["memory"]);
    let context = clone.json(&["context"])["context"].as_str().unwrap().to_owned();
    let term = content.split(' ').nth(1).unwrap();
    let search = clone.json(&["search", term]);
    let found = search.to_string().contains(content);
    [memory.contains(content), context.contains(content), found]
}

/// `verify` reports `needle` with a non-zero exit.
fn verify_reports(clone: &Clone<'_>, needle: &str) -> String {
    let out = clone.run(&["verify"]);
    let shown = text(&out);
    assert!(!out.status.success(), "verify should fail: {shown}");
    assert!(shown.contains(needle), "{shown}");
    shown
}

const LATE: &str = "Use tracing for logs";

/// `a` (as [`shared`]) and its clone `b`: alice records the tracing fact
/// and commits it without distilling; bob pulls it, works and distills, so
/// that only bob's curated.json has the tracing entry. Returns both clones
/// and the fact ids of tokio and tracing.
fn diverged(world: &World) -> (Clone<'_>, Clone<'_>, String, String) {
    let (a, wrong) = shared(world);
    let b = world.clone_of(&a, "bob/app");
    let late = a.remember(LATE, Some("logging.crate"), "2026-01-20T09:00:00Z");
    a.commit_all("alice records tracing");
    b.pull(&a, false);
    bob_works(&b);
    assert_eq!(b.active("logging.crate").as_deref(), Some(LATE));
    (a, b, wrong, late)
}

#[test]
fn a_retraction_that_arrives_by_pull_is_applied_before_anything_is_served() {
    let world = World::new();
    let (a, b, wrong, late) = diverged(&world);
    assert_eq!(served(&b, WRONG), [true, true, true]);
    retract(&a, &wrong, "correction:alice");
    retract(&a, &late, "correction:alice-late");
    a.commit_all("alice retracts");

    b.pull(&a, false);
    // The merge driver took the retraction of the entry alice's state
    // held. Of the tracing entry, only bob's state knows: git merged the
    // files and no workmem command has run since, so a read-only verify
    // reports that correction as waiting, with the way out.
    assert_eq!(curated_status(&b, WRONG), "retracted");
    assert_eq!(curated_status(&b, LATE), "active");
    let shown = verify_reports(&b, "correction:alice-late");
    assert!(shown.contains("not applied") && shown.contains("workmem memory"), "{shown}");
    assert!(!shown.contains("retract correction:alice by"), "{shown}");
    // The first command applies it, before it serves anything.
    let memory = b.ok(&["memory"]);
    assert!(!memory.contains(WRONG) && !memory.contains(LATE), "{memory}");
    assert!(memory.contains("Run the tests with nextest"), "{memory}");
    assert_eq!(curated_status(&b, LATE), "retracted");
    assert_eq!(served(&b, WRONG), [false, false, false]);
    assert_eq!(served(&b, LATE), [false, false, false]);
    b.verify_clean();
    assert!(b.journal_is_empty());
    let history = b.json(&["history", "logging.crate"]);
    assert_eq!(history["corrections"][0]["event_id"], "correction:alice-late", "{history}");
    let shown = b.ok(&["history", "logging.crate"]);
    assert!(shown.contains("correction correction:alice-late (retract) by Ada"), "{shown}");
    // Bob's own work is untouched.
    assert_eq!(b.active("ci.runner").as_deref(), Some("Run the tests with nextest"));

    // Committed, the merged state is what alice gets back: the same.
    b.commit_all("bob applies alice's correction");
    a.pull(&b, false);
    assert_eq!(served(&a, WRONG), [false, false, false]);
    assert!(!a.ok(&["memory"]).contains(LATE));
    a.verify_clean();
    let curated =
        |clone: &Clone<'_>| std::fs::read_to_string(clone.memory().join("curated.json")).unwrap();
    assert_eq!(curated(&a), curated(&b));
}

#[test]
fn the_other_merge_direction_and_merge_continue_apply_it_too() {
    let world = World::new();
    let (a, wrong) = shared(&world);
    let b = world.clone_of(&a, "bob/app");
    let pin = bob_works(&b);
    retract(&a, &wrong, "correction:alice");
    a.commit_all("alice retracts");

    // Alice, who made the correction, merges bob's side (whose curated.json
    // still holds the entry active).
    a.pull(&b, false);
    assert_eq!(served(&a, WRONG), [false, false, false]);
    a.verify_clean();
    assert_eq!(a.active("ci.runner").as_deref(), Some("Run the tests with nextest"));

    // Carol, on bob's side with a retraction of her own, merges alice's
    // side without the driver: git stops on the corrections stream both
    // appended to, and `merge --continue` finishes the merge and applies
    // alice's correction.
    let c = world.clone_of(&b, "carol/app");
    retract(&c, &pin, "correction:carol");
    assert!(!c.ok(&["memory"]).contains(PIN));
    c.commit_all("carol retracts");
    c.git(&["config", "--remove-section", "merge.workmem"]);
    let out =
        c.git_output(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    assert!(!out.status.success(), "git merged without the driver: {}", text(&out));
    let merged = c.json(&["merge", "--continue"]);
    assert!(merged["merged"].to_string().contains("memory-corrections.jsonl"), "{merged}");
    assert_eq!(curated_status(&c, WRONG), "retracted");
    c.git(&["commit", "-q", "--no-edit"]);
    assert_eq!(served(&c, WRONG), [false, false, false]);
    assert!(!c.ok(&["memory"]).contains(PIN));
    c.verify_clean();
    assert_eq!(c.json(&["status"])["corrections"]["retracted_facts"], 2);
}

#[test]
fn a_restore_that_arrives_later_brings_the_value_back() {
    let world = World::new();
    let (a, b, _, late) = diverged(&world);
    let bobs = b.git(&["rev-parse", "HEAD"]).trim().to_owned();
    retract(&a, &late, "correction:alice");
    a.commit_all("alice retracts");
    b.pull(&a, false);
    assert_eq!(served(&b, LATE), [false, false, false]);
    b.commit_all("bob merges");

    restore(&a, "correction:alice", "correction:alice-undo");
    a.commit_all("alice restores");
    b.pull(&a, false);
    // Alice's state never held the entry: only the record arrives.
    assert_eq!(curated_status(&b, LATE), "retracted");
    verify_reports(&b, "correction:alice-undo");
    assert_eq!(b.active("logging.crate").as_deref(), Some(LATE));
    assert_eq!(served(&b, LATE), [true, true, true]);
    b.verify_clean();
    let history = b.json(&["history", "logging.crate"]);
    let events: Vec<&str> = history["corrections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["correction:alice", "correction:alice-undo"], "{history}");

    // A retraction and its restore arriving together change nothing: a
    // clone of bob's work from before both pulls alice's main.
    let c = world.clone_of(&b, "carol/app");
    c.git(&["reset", "-q", "--hard", &bobs]);
    assert_eq!(c.active("logging.crate").as_deref(), Some(LATE));
    let curated = || {
        let data = std::fs::read(c.memory().join("curated.json")).unwrap();
        serde_json::from_slice::<Value>(&data).unwrap()["entries"].clone()
    };
    let before = curated();
    c.pull(&a, false);
    c.ok(&["status", "-q"]);
    c.verify_clean();
    assert_eq!(c.active("logging.crate").as_deref(), Some(LATE));
    assert_eq!(curated(), before);
}

#[test]
fn a_retraction_made_on_a_branch_shows_in_diff() {
    let world = World::new();
    let (a, wrong) = shared(&world);
    a.git(&["checkout", "-q", "-b", "fix"]);
    retract(&a, &wrong, "correction:alice");
    a.commit_all("retract the tokio convention");
    let diff = a.json(&["diff", "main..fix"]);
    let retracted: Vec<&str> = diff["entries"]["retracted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(retracted, [WRONG], "{diff}");
    assert!(diff["context"]["removed"].to_string().contains(WRONG), "{diff}");
    let shown = a.ok(&["diff", "main..fix"]);
    assert!(shown.contains(WRONG), "{shown}");

    // Merged into main from another clone, it is applied there too.
    let b = world.clone_of(&a, "bob/app");
    b.git(&["checkout", "-q", "main"]);
    bob_works(&b);
    b.git(&["merge", "-q", "--no-edit", "origin/fix"]);
    assert_eq!(served(&b, WRONG), [false, false, false]);
    b.verify_clean();
}

/// A crash at every durable boundary of applying a correction that
/// arrived, then the next command: the correction is applied whole, once.
#[cfg(feature = "failpoints")]
#[test]
fn a_crash_while_applying_an_arrived_correction_ends_in_all_of_it() {
    const FAILPOINTS: [&str; 8] = [
        "after_prepared",
        "after_curated_write",
        "after_curated_applied",
        "after_conflict_write",
        "after_conflict_closed",
        "after_correction_write",
        "after_correction_appended",
        "after_committed",
    ];
    for failpoint in FAILPOINTS {
        let world = World::new();
        let (a, b, _, late) = diverged(&world);
        retract(&a, &late, "correction:alice");
        a.commit_all("alice retracts");
        b.pull(&a, false);
        let out = crate::git_world::timed(
            world
                .command(crate::WORKMEM, &b.dir)
                .args(["memory"])
                .env("WORKMEM_FAILPOINT", failpoint),
        );
        assert!(!out.status.success(), "{failpoint}: did not abort: {}", text(&out));
        assert_eq!(served(&b, LATE), [false, false, false], "{failpoint}");
        assert_eq!(curated_status(&b, LATE), "retracted", "{failpoint}");
        b.verify_clean();
        // (A committed transaction is compacted by the next writer.)
        assert!(b.journal_is_empty() || failpoint == "after_committed", "{failpoint}");
        let stream = std::fs::read_to_string(b.memory().join("memory-corrections.jsonl")).unwrap();
        assert_eq!(stream.lines().count(), 1, "{failpoint}: {stream}");
    }
}

/// Alice redacts the tokio fact and commits; bob, whose caches and own
/// daily file of that day hold the text, pulls: the merge driver keeps
/// the tombstone in place of the line, and the first command applies the
/// redaction to bob's merged state and removes his caches, so that no
/// file of bob's memory directory holds the text; in both directions.
#[test]
fn a_redaction_that_arrives_by_pull_leaves_the_text_nowhere() {
    for bob_pulls in [true, false] {
        let world = World::new();
        let (a, wrong) = shared(&world);
        let b = world.clone_of(&a, "bob/app");
        // Bob adds a fact to the same day, and warms every cache.
        b.remember("Use tokio-console to debug tasks", None, "2026-01-05T11:00:00Z");
        b.ok(&["distill", "--as-of", AS_OF, "-q"]);
        assert_eq!(served(&b, WRONG), [true, true, true]);
        b.commit_all("bob");
        a.ok(&[
            "redact",
            &wrong,
            "--rationale",
            "it held a token",
            "--event-id",
            "correction:redact",
            "--actor",
            "Ada <ada@example.com>",
            "--at",
            "2026-03-01T09:00:00Z",
            "--yes",
        ]);
        a.commit_all("alice redacts");
        assert!(files_holding(&a.memory(), WRONG).is_empty());
        let (to, from) = if bob_pulls { (&b, &a) } else { (&a, &b) };
        to.pull(from, false);
        to.ok(&["memory"]);
        assert_eq!(
            files_holding(&to.memory(), WRONG),
            Vec::<String>::new(),
            "pulled by bob: {bob_pulls}"
        );
        assert_eq!(served(to, WRONG), [false, false, false]);
        to.verify_clean();
        // Bob's own fact of that day is kept.
        assert!(to.memory().join("daily/2026-01-05.jsonl").exists());
        let facts = to.json(&["facts", "--all"]);
        assert!(facts.to_string().contains("tokio-console"), "{facts}");
    }
}

/// A decision and a retraction whose rationale an older version let a
/// token into: one clone redacts them with `redact --scan` while the
/// other records a correction of its own; after the merge, in either
/// direction, no file holds the token, the decision and the retraction
/// stand, and verify is clean.
#[test]
fn a_redaction_of_records_that_arrives_by_pull_leaves_the_text_nowhere() {
    let token = workmem_testutil::credential_in("GitHub token", workmem_testutil::Field::Content);
    for bob_pulls in [true, false] {
        let world = World::new();
        let (a, wrong) = shared(&world);
        for (value, days) in
            [("Use 8 connections", ["02", "03"]), ("Use 16 connections", ["02", "03"])]
        {
            for day in days {
                a.remember(value, Some("db.pool"), &format!("2026-01-{day}T09:00:00Z"));
            }
        }
        a.ok(&["distill", "--as-of", AS_OF, "-q"]);
        a.decide("db.pool", "Use 16 connections", "review:pool");
        retract(&a, &wrong, "correction:wrong");
        // What an older version wrote: the token in both rationales and in
        // the case's copy of the decision's.
        for name in files_holding(&a.memory(), "decided in review")
            .into_iter()
            .chain(files_holding(&a.memory(), "recorded by mistake"))
        {
            let path = a.memory().join(&name);
            let data = std::fs::read_to_string(&path).unwrap();
            let data =
                data.replace("decided in review", &token).replace("recorded by mistake", &token);
            std::fs::write(&path, data).unwrap();
        }
        a.commit_all("records written by an older version");
        let b = world.clone_of(&a, "bob/app");
        let pin = bob_works(&b);
        retract(&b, &pin, "correction:pin");
        b.commit_all("bob retracts");
        let out = a.ok(&["redact", "--scan", "--rationale", "a token in the records", "--yes"]);
        assert!(out.contains("review:pool") && out.contains("correction:wrong"), "{out}");
        a.commit_all("alice redacts");
        assert_eq!(files_holding(&a.memory(), &token), Vec::<String>::new());
        let (to, from) = if bob_pulls { (&b, &a) } else { (&a, &b) };
        to.pull(from, false);
        to.ok(&["memory"]);
        assert_eq!(
            files_holding(&to.memory(), &token),
            Vec::<String>::new(),
            "pulled by bob: {bob_pulls}"
        );
        to.verify_clean();
        assert_eq!(to.active("db.pool").as_deref(), Some("Use 16 connections"));
        let history = to.ok(&["history", "db.pool"]);
        assert!(history.contains("resolved") && !history.contains(&token), "{history}");
        assert!(to.event_ids().iter().any(|e| e == "review:pool"));
        let stream = std::fs::read_to_string(to.memory().join("memory-corrections.jsonl")).unwrap();
        for event in ["correction:wrong", "correction:pin"] {
            assert_eq!(
                stream.matches(&format!("\"event_id\": \"{event}\"")).count(),
                1,
                "{event}: {stream}"
            );
        }
    }
}

/// Facts whose memory key an older version let a token into: one clone
/// redacts them with `redact --scan` (the key is replaced in the
/// tombstones, entries and case of the domain) while the other works on,
/// or decides the key's case; after the merge, in either direction, no
/// file holds the key, the decision stays on record, and verify is clean.
#[test]
fn a_redacted_memory_key_that_arrives_by_pull_is_nowhere() {
    let key = workmem_testutil::credential_in("GitLab token", workmem_testutil::Field::MemoryKey)
        .to_ascii_lowercase();
    redacted_case_merges(&key, &["redact", "--scan"], "a token in a memory key");
}

/// The same with an ordinary key and the facts' wordings redacted by id:
/// the case bob decided keeps its candidates as he saw them, worded by
/// the marker.
#[test]
fn a_redacted_case_that_arrives_by_pull_keeps_a_decision_made_meanwhile() {
    redacted_case_merges("ci.runners", &["redact", "k1", "k2", "k3", "k4"], "Use 16 runners.");
}

/// Alice holds a tie of `key` (facts k1-k4, "Use 8 runners." and "Use 16
/// runners."), shared with bob, who works on and, in two of the four
/// runs, decides the case; alice runs `redact` (`args`, then the
/// rationale and --yes) and both merge, in either direction. After the
/// merge no file holds `gone`, verify is clean, and bob's decision stays
/// on record.
fn redacted_case_merges(key: &str, args: &[&str], gone: &str) {
    for (bob_pulls, bob_decides) in [(true, false), (false, false), (true, true), (false, true)] {
        let world = World::new();
        let (a, _) = shared(&world);
        let facts = a.json(&["facts", "--all"]);
        let workspace = facts[0]["workspace_id"].as_str().unwrap().to_owned();
        let lines = workmem_testutil::tied_fact_lines(&workspace, key, "2026-01-20");
        std::fs::write(a.memory().join("daily/2026-01-20.jsonl"), lines).unwrap();
        a.ok(&["distill", "--as-of", AS_OF, "-q"]);
        a.commit_all("facts written by an older version");
        let b = world.clone_of(&a, "bob/app");
        bob_works(&b);
        if bob_decides {
            // Bob decides the key's case, which alice's redaction closes.
            b.decide(key, "Use 16 runners.", "review:runners");
            b.commit_all("bob decides");
        }
        let mut redact = args.to_vec();
        redact.extend(["--rationale", "it must not be stored", "--yes"]);
        a.ok(&redact);
        assert_eq!(files_holding(&a.memory(), gone), Vec::<String>::new());
        a.commit_all("alice redacts");
        let (to, from) = if bob_pulls { (&b, &a) } else { (&a, &b) };
        to.pull(from, false);
        to.ok(&["memory"]);
        assert_eq!(
            files_holding(&to.memory(), gone),
            Vec::<String>::new(),
            "pulled by bob: {bob_pulls}, bob decides: {bob_decides}"
        );
        to.verify_clean();
        to.ok(&["scan"]);
        let facts = to.json(&["facts", "--all"]);
        assert!(facts.to_string().contains("nextest"), "bob's work is kept: {facts}");
        // Bob's decision stays on record.
        assert_eq!(to.event_ids().iter().any(|e| e == "review:runners"), bob_decides);
    }
}
