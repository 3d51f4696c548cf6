//! Memory that travels, tested in real git repositories: the `git` binary,
//! clones at different paths, `workmem share`, divergent facts, distills
//! and human decisions on each side, then `git merge`, `git pull --rebase`,
//! `git cherry-pick` and `git stash pop` through workmem's merge driver; a
//! merge without the driver finished by `workmem merge --continue`; a moved
//! project taken over by `workmem adopt`; and a property test over random
//! divergent histories merged both ways.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::Value;

use crate::WORKMEM;
use crate::git_world::{AS_OF, Clone, World, text};

/// A shared repository `a` whose memory holds a tie on `db.engine`
/// (sqlite against postgres, equally strong), one settled unkeyed decision
/// and an open case; returns it.
fn shared_with_a_tie(world: &World) -> Clone<'_> {
    let a = world.init("alice/app");
    a.ok(&["init", "-q"]);
    a.remember("Use SQLite for the cache", Some("db.engine"), "2026-01-05T09:00:00Z");
    a.remember("Use Postgres for the cache", Some("db.engine"), "2026-01-05T09:00:00Z");
    a.remember("Pin the toolchain in rust-toolchain.toml", None, "2026-01-06T09:00:00Z");
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    assert!(a.open_case("db.engine").is_some());
    let shared = a.json(&["share"]);
    assert_eq!(shared["workspace_id"].as_str().unwrap().len(), 16);
    a.commit_all("share project memory");
    a
}

#[test]
fn share_pins_the_id_writes_the_git_files_and_a_fresh_clone_configures_the_driver() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let status = a.json(&["status"]);
    let id = status["workspace_id"].as_str().unwrap().to_owned();
    assert_eq!(status["pinned"], true, "{status}");
    assert_eq!(
        status["sharing"],
        serde_json::json!({
            "git": true,
            "attributes": true,
            "merge_driver": true,
            "routed": true,
            "misrouted": []
        })
    );
    assert!(a.ok(&["status"]).contains("shared through git; merge driver configured"));
    let pin = std::fs::read_to_string(a.dir.join(".workmem/workspace.toml")).unwrap();
    assert!(pin.contains(&format!("id = \"{id}\"")), "{pin}");
    let ignore = std::fs::read_to_string(a.dir.join(".workmem/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "memory/.*"), "{ignore}");
    let attributes = std::fs::read_to_string(a.dir.join(".workmem/.gitattributes")).unwrap();
    for file in
        ["memory/daily/*.jsonl", "memory/curated.json", "memory/conflicts.json", "memory/MEMORY.md"]
    {
        assert!(attributes.contains(&format!("{file} merge=workmem")), "{attributes}");
    }
    // The lock and caches are not committed.
    let tracked = a.git(&["ls-files", ".workmem"]);
    assert!(!tracked.contains(".lock") && !tracked.contains(".projection"), "{tracked}");
    assert!(tracked.contains(".workmem/workspace.toml"), "{tracked}");
    // Share again: nothing to write.
    assert_eq!(a.json(&["share"])["files"], serde_json::json!([]));

    // A clone at another path has the same id and gets the driver from its
    // first command, which says so.
    let b = world.clone_of(&a, "bob/work/app");
    assert!(b.git_output(&["config", "--get", "merge.workmem.driver"]).stdout.is_empty());
    let out = b.run(&["remember", "from bob"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("configured workmem's merge driver"),
        "{}",
        text(&out)
    );
    assert!(
        b.git(&["config", "--get", "merge.workmem.driver"]).contains("merge driver %O %A %B %P")
    );
    assert_eq!(b.json(&["status"])["workspace_id"], id.as_str());
    b.verify_clean();
}

#[test]
fn two_different_decisions_about_one_case_are_both_kept_and_neither_is_applied() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    let c = world.clone_of(&a, "carol/checkouts/app");

    let fa = a.remember("Alice's outcome", None, "2026-02-01T10:00:00Z");
    a.decide("db.engine", "Use SQLite for the cache", "review:alice");
    a.commit_all("alice decides");
    let fb = b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    b.decide("db.engine", "Use Postgres for the cache", "review:bob");
    b.commit_all("bob decides");

    // Merge bob into alice.
    a.pull(&b, false);
    a.verify_clean();
    let facts = a.fact_ids();
    assert!(facts.contains(&fa) && facts.contains(&fb));
    assert_eq!(facts.len(), facts.iter().collect::<BTreeSet<_>>().len(), "a fact twice: {facts:?}");
    let events = a.event_ids();
    assert_eq!(
        events.iter().collect::<BTreeSet<_>>(),
        ["review:alice".to_owned(), "review:bob".to_owned()].iter().collect()
    );
    // Neither value is applied; the case is open again for a human, and
    // status counts the two decisions set aside.
    assert_eq!(a.active("db.engine"), None);
    assert_eq!(a.json(&["status"])["set_aside_decisions"], 2);
    let case = a.open_case("db.engine").expect("the case is open again");
    assert_eq!(case["status"], "open");
    // The next distill keeps it under review, and a human decides it.
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    assert_eq!(a.open_case("db.engine").unwrap()["conflict_id"], case["conflict_id"]);
    a.decide("db.engine", "Use SQLite for the cache", "review:alice-again");
    assert_eq!(a.active("db.engine").as_deref(), Some("Use SQLite for the cache"));
    a.verify_clean();
    assert!(a.journal_is_empty());
    a.commit_all("alice decides again");

    // Carol agreed with alice: the earlier of the two equal decisions
    // closes the case, and both stay in the audit.
    c.decide("db.engine", "Use SQLite for the cache", "review:carol");
    c.commit_all("carol decides");
    let ac = world.clone_of(&c, "carol/merge");
    ac.pull(&a, false);
    ac.verify_clean();
    assert_eq!(ac.active("db.engine").as_deref(), Some("Use SQLite for the cache"));
    let events: BTreeSet<String> = ac.event_ids().into_iter().collect();
    for event in ["review:alice", "review:bob", "review:carol", "review:alice-again"] {
        assert!(events.contains(event), "{event}: {events:?}");
    }
}

#[test]
fn merging_either_way_gives_the_same_memory() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    a.remember("Alice's outcome", None, "2026-02-01T10:00:00Z");
    a.remember("Use tokio for async", Some("runtime.async"), "2026-02-02T10:00:00Z");
    a.decide("db.engine", "Use SQLite for the cache", "review:alice");
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    a.commit_all("alice");
    b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    b.remember("Use smol for async", Some("runtime.async"), "2026-02-02T10:00:00Z");
    b.remember("Pin the toolchain in rust-toolchain.toml", None, "2026-02-03T09:00:00Z");
    b.ok(&["distill", "--as-of", AS_OF, "-q"]);
    b.commit_all("bob");

    let ab = world.clone_of(&a, "merge/ab");
    ab.pull(&b, false);
    let ba = world.clone_of(&b, "merge/ba");
    ba.pull(&a, false);
    ab.verify_clean();
    ba.verify_clean();
    assert_eq!(ab.memory_files(), ba.memory_files());
    // Alice's decision stands: bob never touched the case.
    assert_eq!(ab.active("db.engine").as_deref(), Some("Use SQLite for the cache"));
    // The unkeyed decision both reinforced holds the evidence of both.
    let memory = ab.ok(&["memory"]);
    assert!(memory.contains("Pin the toolchain in rust-toolchain.toml (seen 2x"), "{memory}");
}

#[test]
fn rebase_cherry_pick_and_stash_pop_merge_memory_files_too() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    let fa = a.remember("Alice's outcome", None, "2026-02-01T10:00:00Z");
    a.decide("db.engine", "Use SQLite for the cache", "review:alice");
    a.commit_all("alice");
    let fb = b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    b.commit_all("bob 1");
    let fb2 = b.remember("Bob's second outcome", None, "2026-02-01T12:00:00Z");
    b.commit_all("bob 2");

    // pull --rebase: bob's two commits replayed on alice's.
    b.pull(&a, true);
    b.verify_clean();
    let facts = b.fact_ids();
    for id in [&fa, &fb, &fb2] {
        assert_eq!(facts.iter().filter(|f| *f == id).count(), 1, "{id}: {facts:?}");
    }
    assert_eq!(b.event_ids(), ["review:alice"]);

    // cherry-pick one of bob's commits onto a fresh branch of alice's past.
    let c = world.clone_of(&a, "carol/app");
    let fc = c.remember("Carol's outcome", None, "2026-02-01T09:00:00Z");
    c.commit_all("carol");
    c.git(&["fetch", "-q", b.dir.to_str().unwrap(), "main"]);
    c.git(&["cherry-pick", "FETCH_HEAD~1"]);
    c.verify_clean();
    let facts = c.fact_ids();
    assert!(facts.contains(&fc) && facts.contains(&fb) && !facts.contains(&fb2), "{facts:?}");

    // stash pop over a pull that changed the same daily file.
    let d = world.clone_of(&a, "dave/app");
    let fd = d.remember("Dave's uncommitted outcome", None, "2026-02-01T08:00:00Z");
    d.git(&["stash", "-q"]);
    d.pull(&b, false);
    d.git(&["stash", "pop", "-q"]);
    d.verify_clean();
    let facts = d.fact_ids();
    assert!(facts.contains(&fd) && facts.contains(&fb2), "{facts:?}");
}

#[test]
fn without_the_driver_commands_refuse_and_merge_continue_finishes_from_the_index() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    let fa = a.remember("Alice's outcome", None, "2026-02-01T10:00:00Z");
    a.decide("db.engine", "Use SQLite for the cache", "review:alice");
    a.commit_all("alice");
    let fb = b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    b.ok(&["distill", "--as-of", AS_OF, "-q"]);
    b.commit_all("bob");
    // A clone without the driver, as with a merge tool that ignores it.
    b.git(&["config", "--remove-section", "merge.workmem"]);
    let out =
        b.git_output(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    assert!(!out.status.success(), "git merged without the driver: {}", text(&out));

    let out = b.run(&["facts", "--all"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("conflict markers") && stderr.contains("workmem merge --continue"),
        "{stderr}"
    );

    let merged = b.json(&["merge", "--continue"]);
    // The daily log both sides appended to (MEMORY.md is not committed).
    assert_eq!(
        merged["merged"],
        serde_json::json!([".workmem/memory/daily/2026-02-01.jsonl"]),
        "{merged}"
    );
    b.git(&["commit", "-q", "--no-edit"]);
    b.verify_clean();
    let facts = b.fact_ids();
    assert!(facts.contains(&fa) && facts.contains(&fb));
    assert_eq!(b.event_ids(), ["review:alice"]);
    assert_eq!(b.active("db.engine").as_deref(), Some("Use SQLite for the cache"));
    assert!(b.git(&["status", "--porcelain"]).trim().is_empty());
}

const JOURNAL: &str = ".workmem/memory/conflict-resolution-transactions.jsonl";

#[test]
fn share_keeps_the_journal_and_memory_md_out_of_commits_and_untracks_them() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let ignore = std::fs::read_to_string(a.dir.join(".workmem/.gitignore")).unwrap();
    for line in ["/memory/conflict-resolution-transactions.jsonl", "/memory/MEMORY.md"] {
        assert!(ignore.lines().any(|l| l == line), "{line}: {ignore}");
    }
    let tracked = a.git(&["ls-files", ".workmem"]);
    assert!(!tracked.contains("MEMORY.md") && !tracked.contains("transactions"), "{tracked}");
    // A repository shared by an earlier version committed both: share
    // untracks them (and only them), keeping the files on disk.
    a.ok(&["memory", "-q"]);
    std::fs::write(a.dir.join(JOURNAL), "").unwrap();
    a.git(&["add", "-f", JOURNAL, ".workmem/memory/MEMORY.md"]);
    a.git(&["commit", "-q", "-m", "as an earlier version shared it"]);
    let shared = a.json(&["share"]);
    let untracked: BTreeSet<&str> =
        shared["untracked"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(untracked, [JOURNAL, ".workmem/memory/MEMORY.md"].into_iter().collect(), "{shared}");
    assert!(a.memory().join("MEMORY.md").exists());
    let staged = a.git(&["diff", "--cached", "--name-status"]);
    assert_eq!(staged.lines().count(), 2, "{staged}");
    assert!(staged.lines().all(|l| l.starts_with('D')), "{staged}");
    assert_eq!(a.json(&["share"])["untracked"], serde_json::json!([]));
}

#[test]
fn a_prepared_transaction_that_arrives_through_git_is_never_applied() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    b.ok(&["status", "-q"]);
    // On alice's machine a decision stops right after its `prepared`
    // line, and the journal is forced into a commit.
    let case = a.open_case("db.engine").unwrap();
    let candidate = case["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["content"] == "Use Postgres for the cache")
        .unwrap()["candidate_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = a
        .world
        .command(crate::WORKMEM, &a.dir)
        .args(["resolve", case["conflict_id"].as_str().unwrap(), &candidate])
        .args(["--revision", &case["revision"].to_string(), "--event-id", "review:alice"])
        .args(["--actor", "Alice", "--rationale", "nobody decided this in bob's clone"])
        .env("WORKMEM_FAILPOINT", "after_prepared")
        .output()
        .unwrap();
    assert!(!out.status.success(), "resolve did not stop (failpoints feature?): {}", text(&out));
    let journal = std::fs::read(a.dir.join(JOURNAL)).unwrap();
    assert!(String::from_utf8_lossy(&journal).contains("\"Alice\""));
    a.git(&["add", "-f", JOURNAL]);
    a.git(&["commit", "-q", "-m", "a journal in flight"]);

    b.git(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    assert_eq!(std::fs::read(b.dir.join(JOURNAL)).unwrap(), journal);
    // Read commands complete nothing and do not fail.
    assert_eq!(b.open_case("db.engine").unwrap()["status"], "open");
    b.fact_ids();
    assert_eq!(b.event_ids(), Vec::<String>::new());
    assert_eq!(b.active("db.engine"), None);
    assert_eq!(std::fs::read(b.dir.join(JOURNAL)).unwrap(), journal);
    // Verify reports it, naming the way out.
    let out = b.run(&["verify", "--json"]);
    assert!(!out.status.success(), "{}", text(&out));
    let problems: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        problems["problems"].as_array().unwrap().iter().any(|p| {
            let message = p["message"].as_str().unwrap();
            p["file"].as_str().unwrap().ends_with("conflict-resolution-transactions.jsonl")
                && message.contains("not prepared by this clone")
                && message.contains("\"Alice\"")
                && message.contains("workmem journal --discard")
        }),
        "{problems}"
    );
    // Writing commands refuse, naming the command that shows and discards it.
    let conflict = case["conflict_id"].as_str().unwrap();
    let revision = case["revision"].to_string();
    let resolve = [
        "resolve",
        conflict,
        &candidate,
        "--revision",
        &revision,
        "--event-id",
        "review:bob",
        "--rationale",
        "bob decides",
    ];
    for args in [&["distill", "--as-of", AS_OF][..], &resolve] {
        let out = b.run(args);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("did not prepare") && stderr.contains("`workmem journal`"),
            "{stderr}"
        );
    }
    assert_eq!(b.event_ids(), Vec::<String>::new());
    // `journal` shows it; `--discard` discards it.
    let shown = b.json(&["journal"]);
    let transaction = &shown["transactions"][0];
    assert_eq!(transaction["prepared_here"], false, "{shown}");
    assert_eq!(transaction["committed"], false, "{shown}");
    assert_eq!(transaction["adjudication"]["actor"], "Alice", "{shown}");
    assert!(b.ok(&["journal"]).contains("NOT prepared by this clone"));
    let discarded = b.json(&["journal", "--discard"]);
    assert_eq!(discarded["discarded"], serde_json::json!([transaction["transaction_id"]]));
    assert!(b.journal_is_empty());
    b.verify_clean();
    b.ok(&["distill", "--as-of", AS_OF, "-q"]);
    assert_eq!(b.open_case("db.engine").unwrap()["status"], "open");
    assert_eq!(b.event_ids(), Vec::<String>::new());

    // In alice's own clone the same transaction is hers: the next command
    // finishes it.
    a.ok(&["status", "-q"]);
    assert_eq!(a.event_ids(), ["review:alice"]);
    assert_eq!(a.active("db.engine").as_deref(), Some("Use Postgres for the cache"));
    assert!(a.journal_is_empty());
}

/// The stderr of a command that must fail with `code`.
fn refused(clone: &Clone<'_>, args: &[&str], code: i32) -> String {
    let out = clone.run(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_merge_the_driver_could_not_run_is_refused_until_merge_continue_finishes_it() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    b.ok(&["status", "-q"]);
    let fa = a.remember("Alice's outcome", None, "2026-02-01T10:00:00Z");
    a.decide("db.engine", "Use SQLite for the cache", "review:alice");
    a.commit_all("alice");
    let fb = b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    b.commit_all("bob");
    // The binary that configured the driver is gone (moved, reinstalled,
    // another container): git cannot run it and leaves bob's versions, with
    // no conflict markers, and unmerged entries in its index.
    b.git(&["config", "merge.workmem.driver", "/nonexistent/workmem merge driver %O %A %B %P"]);
    let out =
        b.git_output(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    assert!(!out.status.success(), "git merged without a driver: {}", text(&out));
    let daily = std::fs::read(b.memory().join("daily/2026-02-01.jsonl")).unwrap();
    assert!(!workmem_has_markers(&daily), "the driver's failure leaves ours, without markers");
    for args in [&["facts", "--all"][..], &["status"], &["verify"], &["memory"], &["distill"]] {
        let stderr = refused(&b, args, 4);
        assert!(
            stderr.contains("unmerged memory files") && stderr.contains("workmem merge --continue"),
            "{args:?}: {stderr}"
        );
        // The first command also configured the driver again.
        assert_eq!(stderr.contains("no longer exists"), args[0] == "facts", "{args:?}: {stderr}");
    }
    assert!(!b.git(&["config", "merge.workmem.driver"]).contains("/nonexistent/"));
    // Appends stay possible (merge --continue keeps them).
    let out =
        b.run(&["remember", "Appended while unmerged", "--at", "2026-02-01T12:00:00Z", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let late: Value = serde_json::from_slice(&out.stdout).unwrap();
    let late = late["fact_id"].as_str().unwrap().to_owned();
    let out = b.run(&["merge", "--continue"]);
    assert!(out.status.success(), "{}", text(&out));
    b.git(&["commit", "-q", "--no-edit"]);
    b.verify_clean();
    let facts = b.fact_ids();
    for id in [&fa, &fb, &late] {
        assert!(facts.contains(id), "{id}: {facts:?}");
    }
    assert_eq!(b.event_ids(), ["review:alice"]);
    assert_eq!(b.active("db.engine").as_deref(), Some("Use SQLite for the cache"));
}

fn workmem_has_markers(data: &[u8]) -> bool {
    String::from_utf8_lossy(data).lines().any(|l| l.starts_with("<<<<<<< ") || l == "=======")
}

#[test]
fn a_driver_whose_binary_is_gone_is_configured_again_by_the_next_command() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    a.git(&["config", "merge.workmem.driver", "'/gone/bin/workmem' merge driver %O %A %B %P"]);
    let out = a.run(&["facts", "--all"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/gone/bin/workmem"), "{}", text(&out));
    let driver = a.git(&["config", "merge.workmem.driver"]);
    assert!(!driver.contains("/gone/") && driver.contains("merge driver %O %A %B %P"), "{driver}");
    // A working driver is left alone.
    let out = a.run(&["facts", "--all"]);
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{}", text(&out));
}

#[test]
fn attributes_that_no_longer_route_memory_files_are_reported_and_named_as_the_cause() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    b.ok(&["status", "-q"]);
    assert_eq!(b.json(&["status"])["sharing"]["routed"], true);
    // A branch rewrites the attributes.
    std::fs::write(a.dir.join(".workmem/.gitattributes"), "* merge=union\n").unwrap();
    a.commit_all("merge everything as text");
    b.pull(&a, false);
    let status = b.json(&["status"]);
    assert_eq!(status["sharing"]["routed"], false, "{status}");
    let misrouted = status["sharing"]["misrouted"].as_array().unwrap();
    assert!(
        misrouted
            .iter()
            .any(|m| m["path"] == ".workmem/memory/curated.json" && m["merge"] == "union"),
        "{status}"
    );
    assert!(b.ok(&["status"]).contains("NOT merged by workmem's driver"));
    let out = b.run(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["file"] == ".workmem/memory/curated.json"
                && p["message"].as_str().unwrap().contains("merge=union")),
        "{report}"
    );
    // Both sides change curated.json: git joins the two versions as text.
    a.remember("Use tokio for async", Some("runtime.async"), "2026-02-02T10:00:00Z");
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    a.commit_all("alice distills");
    b.remember("Use smol for async", Some("runtime.async"), "2026-02-02T10:00:00Z");
    b.remember("Pin the toolchain in rust-toolchain.toml", None, "2026-02-03T09:00:00Z");
    b.ok(&["distill", "--as-of", AS_OF, "-q"]);
    b.commit_all("bob distills");
    b.git(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    // Every read refuses, naming the likely cause.
    for args in [&["memory"][..], &["status"], &["context"]] {
        let stderr = refused(&b, args, 4);
        assert!(
            stderr.contains("curated.json")
                && stderr.contains("likely cause")
                && stderr.contains("merge=union"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_changed_pin_is_refused_by_the_driver_and_named_with_its_commit() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let id = a.json(&["status"])["workspace_id"].as_str().unwrap().to_owned();
    let attributes = std::fs::read_to_string(a.dir.join(".workmem/.gitattributes")).unwrap();
    assert!(attributes.contains("workspace.toml merge=workmem"), "{attributes}");
    let b = world.clone_of(&a, "bob/app");
    b.ok(&["status", "-q"]);
    let pin = a.dir.join(".workmem/workspace.toml");
    let pinned = std::fs::read_to_string(&pin).unwrap();

    // Both sides change the pin: the driver refuses, git stops, and every
    // command names merge --continue.
    std::fs::write(&pin, pinned.replace(&id, "0123456789abcdef")).unwrap();
    a.commit_all("alice changes the id");
    let bpin = b.dir.join(".workmem/workspace.toml");
    std::fs::write(&bpin, pinned.replace(&id, "fedcba9876543210")).unwrap();
    b.commit_all("bob changes the id");
    let out =
        b.git_output(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("never changes"), "{}", text(&out));
    let stderr = refused(&b, &["facts", "--all"], 4);
    assert!(stderr.contains("workspace.toml") && stderr.contains("merge --continue"), "{stderr}");
    let stderr = refused(&b, &["merge", "--continue"], 4);
    assert!(stderr.contains("would change the pinned workspace id"), "{stderr}");
    b.git(&["merge", "--abort"]);

    // One side changes it: git takes it without a driver; the clone is
    // told which file and commit to revert.
    let c = at_share(&world, &a);
    c.ok(&["status", "-q"]);
    c.git(&["pull", "-q", "--no-rebase", "--no-edit", a.dir.to_str().unwrap(), "main"]);
    let commit = a.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let stderr = refused(&c, &["facts", "--all"], 5);
    assert!(
        stderr.contains(&commit[..12])
            && stderr.contains(&format!("git checkout {commit}^ -- .workmem/workspace.toml")),
        "{stderr}"
    );
    c.git(&["checkout", &format!("{commit}^"), "--", ".workmem/workspace.toml"]);
    c.ok(&["facts", "--all"]);
    assert_eq!(c.json(&["status"])["workspace_id"], id.as_str());
}

/// Returns a clone of `a` at its first shared commit (before any change of
/// the pin).
fn at_share<'w>(world: &'w World, a: &Clone<'w>) -> Clone<'w> {
    let c = world.clone_of(a, "carol/app");
    c.git(&["reset", "-q", "--hard", "HEAD~1"]);
    c
}

#[test]
fn a_moved_project_is_refused_naming_adopt_and_adopt_takes_it_over() {
    let world = World::new();
    let a = world.init("old/place/app");
    a.ok(&["init", "-q"]);
    let fact = a.remember("Written before the move", Some("db.engine"), "2026-01-05T09:00:00Z");
    a.ok(&["distill", "--as-of", AS_OF, "-q"]);
    let status = a.json(&["status"]);
    let old_id = status["workspace_id"].as_str().unwrap().to_owned();
    assert_eq!(status["pinned"], false, "{status}");
    assert_eq!(status["sharing"]["attributes"], false, "{status}");
    std::fs::create_dir_all(world.path("new/place")).unwrap();
    std::fs::rename(&a.dir, world.path("new/place/app")).unwrap();
    let moved = Clone { world: &world, dir: world.path("new/place/app") };

    let out = moved.run(&["facts", "--all"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&old_id) && stderr.contains("workmem adopt"), "{stderr}");
    let out = moved.run(&["remember", "after the move"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));

    let adopted = moved.json(&["adopt"]);
    assert_eq!(adopted["workspace_id"], old_id.as_str());
    assert_eq!(moved.json(&["status"])["pinned"], true);
    assert_ne!(adopted["previous_path_id"], old_id.as_str());
    moved.verify_clean();
    assert_eq!(moved.fact_ids(), [fact]);
    moved.remember("after the move", None, "2026-01-06T09:00:00Z");
    moved.verify_clean();
    // Adopting again changes nothing.
    assert_eq!(moved.json(&["adopt"])["pinned_now"], false);
}

#[test]
fn adopt_refuses_a_memory_holding_two_workspaces() {
    let world = World::new();
    let a = world.init("one/app");
    a.ok(&["init", "-q"]);
    a.remember("Mine", None, "2026-01-05T09:00:00Z");
    let b = world.init("two/app");
    b.ok(&["init", "-q"]);
    b.remember("Theirs", None, "2026-01-07T09:00:00Z");
    std::fs::copy(
        b.memory().join("daily/2026-01-07.jsonl"),
        a.memory().join("daily/2026-01-07.jsonl"),
    )
    .unwrap();
    std::fs::rename(&a.dir, world.path("moved")).unwrap();
    let moved = Clone { world: &world, dir: world.path("moved") };
    let out = moved.run(&["adopt"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 workspaces"), "{}", text(&out));
    assert!(!moved.dir.join(".workmem/workspace.toml").exists());
}

/// One step of a random history on one side.
#[derive(Debug, Clone)]
enum Step {
    /// A fact: unkeyed (`key` None) or keyed, one of a few values, at a day.
    Remember { key: Option<u8>, value: u8, day: u8 },
    /// A distill at a day of 2027.
    Distill { day: u8 },
    /// A decision on the open case of a key, choosing the candidate at
    /// `pick` (modulo their number).
    Decide { key: u8, pick: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (proptest::option::of(0u8..2), 0u8..3, 0u8..20)
            .prop_map(|(key, value, day)| Step::Remember { key, value, day }),
        2 => (0u8..5).prop_map(|day| Step::Distill { day }),
        2 => (0u8..2, 0u8..3).prop_map(|(key, pick)| Step::Decide { key, pick }),
    ]
}

const KEYS: [&str; 2] = ["db.engine", "runtime.async"];

impl Clone<'_> {
    fn apply(&self, steps: &[Step], side: &str) {
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Remember { key, value, day } => {
                    let at = format!("2026-03-{:02}T10:00:00Z", day + 1);
                    let content = format!("Value {value}");
                    self.remember(&content, key.map(|k| KEYS[usize::from(k)]), &at);
                }
                Step::Distill { day } => {
                    self.ok(&[
                        "distill",
                        "--as-of",
                        &format!("2027-01-{:02}T00:00:00Z", day + 1),
                        "-q",
                    ]);
                }
                Step::Decide { key, pick } => {
                    let Some(case) = self.open_case(KEYS[usize::from(*key)]) else { continue };
                    let candidates = case["candidates"].as_array().unwrap();
                    let chosen = &candidates[usize::from(*pick) % candidates.len()];
                    self.decide(
                        KEYS[usize::from(*key)],
                        chosen["content"].as_str().unwrap(),
                        &format!("review:{side}:{i}"),
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random operations on two clones from a random common base, merged
    /// both ways: verify is clean, every fact and event id of either side is
    /// present once, every domain holds a value one side held or none (until
    /// the policy or a human decides) or is under review, and both merges
    /// give the same memory.
    #[test]
    fn random_divergent_histories_merge_both_ways_to_the_same_valid_memory(
        base in proptest::collection::vec(step(), 0..6),
        ours in proptest::collection::vec(step(), 0..6),
        theirs in proptest::collection::vec(step(), 0..6),
    ) {
        let world = World::new();
        let a = world.init("a/app");
        a.ok(&["init", "-q"]);
        a.apply(&base, "base");
        a.json(&["share"]);
        a.commit_all("base");
        let b = world.clone_of(&a, "b/app");
        a.apply(&ours, "a");
        a.commit_all("a");
        b.apply(&theirs, "b");
        b.commit_all("b");
        let held: BTreeMap<&str, BTreeSet<Option<String>>> = KEYS
            .iter()
            .map(|key| (*key, [a.active(key), b.active(key)].into_iter().collect()))
            .collect();
        let facts: BTreeSet<String> = a.fact_ids().into_iter().chain(b.fact_ids()).collect();
        let events: BTreeSet<String> = a.event_ids().into_iter().chain(b.event_ids()).collect();

        let ab = world.clone_of(&a, "merge/ab");
        ab.pull(&b, false);
        let ba = world.clone_of(&b, "merge/ba");
        ba.pull(&a, false);
        prop_assert!(a.journal_is_empty() && b.journal_is_empty());
        for merged in [&ab, &ba] {
            merged.verify_clean();
            prop_assert!(merged.journal_is_empty());
            let ids = merged.fact_ids();
            prop_assert_eq!(ids.len(), facts.len());
            prop_assert_eq!(ids.into_iter().collect::<BTreeSet<_>>(), facts.clone());
            let merged_events = merged.event_ids();
            prop_assert_eq!(merged_events.len(), events.len());
            prop_assert_eq!(merged_events.into_iter().collect::<BTreeSet<_>>(), events.clone());
            for key in KEYS {
                let active = merged.active(key);
                let under_review = merged.open_case(key).is_some();
                prop_assert!(
                    active.is_none() || under_review || held[key].contains(&active),
                    "{} holds {:?}, which neither side held ({:?})", key, active, held[key]
                );
            }
        }
        prop_assert_eq!(ab.memory_files(), ba.memory_files());
    }
}

#[test]
fn a_reopened_case_shows_the_decisions_it_set_aside() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    let case = a.open_case("db.engine").unwrap();
    let id = case["conflict_id"].as_str().unwrap().to_owned();
    let number = |content: &str| {
        let index = case["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c["content"] == content)
            .unwrap();
        (index + 1).to_string()
    };
    let (postgres, sqlite) =
        (number("Use Postgres for the cache"), number("Use SQLite for the cache"));
    for (clone, candidate, actor, why, at) in [
        (&a, &postgres, "Alice <alice@example.com>", "prod runs Postgres", "2027-01-02T00:00:00Z"),
        (&b, &sqlite, "Bob <bob@example.com>", "keep it embedded", "2027-01-03T00:00:00Z"),
    ] {
        clone.ok(&[
            "resolve",
            &id,
            candidate,
            "--revision",
            "1",
            "--actor",
            actor,
            "--rationale",
            why,
            "--at",
            at,
        ]);
        clone.commit_all("decide db.engine");
    }
    a.pull(&b, false);
    assert_eq!(a.open_case("db.engine").unwrap()["status"], "open");

    let alice = format!(
        "Alice <alice@example.com> chose {postgres}. \"Use Postgres for the cache\" at 2027-01-02T00:00:00Z"
    );
    let bob = format!(
        "Bob <bob@example.com> chose {sqlite}. \"Use SQLite for the cache\" at 2027-01-03T00:00:00Z"
    );
    // conflicts: the open case, then what was decided and set aside.
    let listed = a.ok(&["conflicts"]);
    assert!(
        listed.contains("2 decisions set aside (a merge kept decisions that disagree"),
        "{listed}"
    );
    assert!(listed.contains(&alice) && listed.contains("\"prod runs Postgres\""), "{listed}");
    assert!(listed.contains(&bob) && listed.contains("\"keep it embedded\""), "{listed}");
    let json = a.json(&["conflicts"]);
    let aside = json[0]["set_aside_decisions"].as_array().unwrap();
    assert_eq!(aside.len(), 2, "{json}");
    assert_eq!(aside[0]["rationale"], "prod runs Postgres");
    assert_eq!(aside[1]["actor"], "Bob <bob@example.com>");
    // status lists them too.
    let status = a.ok(&["status"]);
    assert!(status.contains("set aside   2 decisions a merge kept without applying"), "{status}");
    assert!(status.contains(&format!("db.engine (open again): {alice}")), "{status}");
    assert!(status.contains(&bob), "{status}");
    // adjudications marks both, in text and JSON.
    let audit = a.ok(&["adjudications"]);
    assert_eq!(audit.matches("[set aside: it does not close its case]").count(), 2, "{audit}");
    let audit = a.json(&["adjudications"]);
    assert!(audit.as_array().unwrap().iter().all(|r| r["set_aside"] == true), "{audit}");

    // review shows them before asking.
    let mut cmd = std::process::Command::new(WORKMEM);
    cmd.env_clear()
        .env("HOME", world.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("USER", "ada")
        .env("TERM", "xterm")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(&a.dir)
        .arg("review");
    let mut session = rexpect::session::spawn_command(cmd, Some(20_000)).unwrap();
    session.exp_string("2 decisions set aside").unwrap();
    session.exp_string(&alice).unwrap();
    session.exp_string(&bob).unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line(&postgres).unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("we talked: prod runs Postgres").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    session.send_line("y").unwrap();
    session.exp_string("review done: 1 decided").unwrap();
    session.exp_eof().unwrap();
    // The new decision closes the case; the two earlier stay set aside.
    let audit = a.json(&["adjudications"]);
    let marks: Vec<bool> =
        audit.as_array().unwrap().iter().map(|r| r["set_aside"].as_bool().unwrap()).collect();
    assert_eq!(marks, [true, true, false]);
    let listed = a.ok(&["conflicts", "--status", "all"]);
    assert!(
        listed.contains("2 decisions set aside (another decision closes the case)"),
        "{listed}"
    );
}

/// Appends a retraction of `facts` to `clone`'s corrections stream, as a
/// clone whose workmem wrote it would have.
fn append_retraction(clone: &Clone<'_>, event: &str, facts: &[&str]) {
    let workspace = clone.json(&["facts", "--all"])[0]["workspace_id"].as_str().unwrap().to_owned();
    let record = serde_json::json!({
        "action": "retract", "actor": "Ada <ada@example.com>", "entry_key": null,
        "event_id": event, "fact_ids": facts, "rationale": "recorded by mistake",
        "recorded_at": "2026-02-02T09:00:00Z", "restores": null, "schema_version": 1,
        "workspace_id": workspace,
    });
    let path = clone.memory().join("memory-corrections.jsonl");
    let mut data = std::fs::read(&path).unwrap_or_default();
    data.extend_from_slice(format!("{record}\n").as_bytes());
    std::fs::write(path, data).unwrap();
}

#[test]
fn corrections_made_in_two_clones_merge_through_git_as_a_union() {
    let world = World::new();
    let a = shared_with_a_tie(&world);
    let b = world.clone_of(&a, "bob/app");
    let fa = a.remember("Use tokio for async", Some("runtime.async"), "2026-02-01T10:00:00Z");
    append_retraction(&a, "correction:alice", &[&fa]);
    a.commit_all("alice retracts");
    let fb = b.remember("Bob's outcome", None, "2026-02-01T11:00:00Z");
    append_retraction(&b, "correction:bob", &[&fb]);
    b.commit_all("bob retracts");

    // Both sides appended to the end of one file: without the driver, git
    // would stop on a conflict.
    a.pull(&b, false);
    let merged = std::fs::read_to_string(a.memory().join("memory-corrections.jsonl")).unwrap();
    let events: Vec<String> = merged
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["correction:alice", "correction:bob"], "{merged}");
    assert!(a.git(&["status", "--porcelain"]).trim().is_empty(), "the merge finished");
    let counts = &a.json(&["status"])["corrections"];
    assert_eq!(
        *counts,
        serde_json::json!({"records": 2, "retracted_facts": 2, "redacted_facts": 0, "redacted_records": 0}),
        "{counts}"
    );
    let status = a.ok(&["status"]);
    assert!(status.contains("corrections 2 records: 2 facts retracted, 0 redacted"), "{status}");
    // A retracted fact counts as not recorded: only `facts --all` lists
    // it, marked with the record.
    assert_eq!(a.json(&["facts", "--day", "2026-02-01"]), serde_json::json!([]));
    let all = a.json(&["facts", "--all"]);
    let listed = all.as_array().unwrap().iter().find(|f| f["fact_id"] == fb.as_str()).unwrap();
    assert_eq!(listed["retracted_by"], serde_json::json!(["correction:bob"]), "{all}");
    let shown = a.ok(&["facts", "--all"]);
    assert!(shown.contains(&format!("({fb})  [retracted by correction:bob]")), "{shown}");
    // history shows the correction that names a fact of the key.
    let history = a.json(&["history", "runtime.async"]);
    assert_eq!(history["corrections"][0]["event_id"], "correction:alice", "{history}");
    assert_eq!(history["corrections"].as_array().unwrap().len(), 1, "{history}");
    let shown = a.ok(&["history", "runtime.async"]);
    assert!(
        shown.contains(&format!(
            "correction correction:alice (retract) by Ada <ada@example.com> at \
             2026-02-02T09:00:00Z: facts {fa}: recorded by mistake"
        )),
        "{shown}"
    );

    // A memory shared by an earlier version does not route the stream:
    // once the stream exists, status says so, and `share` routes it.
    let path = a.dir.join(".workmem/.gitattributes");
    let attributes = std::fs::read_to_string(&path).unwrap();
    let line = "memory/memory-corrections.jsonl merge=workmem";
    assert!(attributes.lines().any(|l| l == line), "{attributes}");
    let earlier = attributes.replace(&format!("{line}\n"), "");
    std::fs::write(&path, earlier).unwrap();
    let status = a.json(&["status"]);
    assert_eq!(status["sharing"]["routed"], false, "{status}");
    let misrouted = status["sharing"]["misrouted"].as_array().unwrap();
    assert!(
        misrouted.iter().any(|m| m["path"] == ".workmem/memory/memory-corrections.jsonl"),
        "{status}"
    );
    a.ok(&["share"]);
    assert_eq!(a.json(&["status"])["sharing"]["routed"], true);
}
