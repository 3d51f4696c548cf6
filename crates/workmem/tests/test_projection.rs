//! Acceptance 9: MEMORY.md is exactly docs/policy.md, repaired when hand-edited;
//! the context shows only active values and recent unkeyed facts, read from
//! the newest daily files.
#![allow(clippy::disallowed_methods)]

use workmem::{ContextOptions, Error};

use crate::common::{Project, fact, file_state, write_raw};

/// Decisions (one keyed, revision 2), conventions and pitfalls, plus values
/// that must never show: an outcome, a superseded revision, an unqualified
/// fact.
fn seeded() -> Project {
    let p = Project::new();
    p.add("d1", "decision", 5, None, "Use PostgreSQL.", "2026-01-01T00:00:00Z");
    p.add("d2", "decision", 4, None, "Adopt the Rust 2024 edition.", "2026-01-02T00:00:00Z");
    p.add("k1", "decision", 5, Some("runtime.python"), "Use Python 3.11.", "2026-01-03T00:00:00Z");
    p.add("k2", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-04T00:00:00Z");
    p.add("k3", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-05T00:00:00Z");
    p.add("c1", "convention", 3, None, "Run cargo fmt.", "2026-01-06T00:00:00Z");
    p.add("c2", "convention", 3, None, "Run cargo fmt.", "2026-01-07T00:00:00Z");
    p.add("c3", "convention", 3, None, "Run cargo fmt.", "2026-01-08T00:00:00Z");
    p.add("c4", "convention", 4, None, "bump dependencies monthly.", "2026-01-09T00:00:00Z");
    p.add("p1", "pitfall", 5, None, "Never call unwrap in the library.", "2026-01-10T00:00:00Z");
    p.add("o1", "outcome", 5, None, "Shipped v1.", "2026-01-11T00:00:00Z");
    p.add("x1", "pitfall", 1, None, "Unqualified pitfall.", "2026-01-12T00:00:00Z");
    let r = p.distill();
    assert_eq!((r.created, r.superseded), (7, 1));
    p
}

const EXPECTED_MEMORY: &str = concat!(
    "# Workspace Memory\n",
    "\n",
    "Derived from append-only project facts. Edit the source log or policy, not this view.\n",
    "\n",
    "## Decisions\n",
    "\n",
    "- Adopt the Rust 2024 edition. (seen 1x; evidence: 1)\n",
    "- Use PostgreSQL. (seen 1x; evidence: 1)\n",
    "- Use Python 3.12. (seen 2x; evidence: 2)\n",
    "\n",
    "## Conventions\n",
    "\n",
    "- Run cargo fmt. (seen 3x; evidence: 3)\n",
    "- bump dependencies monthly. (seen 1x; evidence: 1)\n",
    "\n",
    "## Pitfalls\n",
    "\n",
    "- Never call unwrap in the library. (seen 1x; evidence: 1)\n",
);

#[test]
fn memory_md_matches_spec_8_exactly() {
    let p = seeded();
    assert_eq!(std::fs::read_to_string(p.file("MEMORY.md")).unwrap(), EXPECTED_MEMORY);
    assert_eq!(p.ws.memory().unwrap(), EXPECTED_MEMORY);
}

#[test]
fn sections_appear_only_with_active_entries() {
    let p = Project::new();
    p.add("p1", "pitfall", 5, None, "Only a pitfall.", "2026-01-10T00:00:00Z");
    p.distill();
    assert_eq!(
        p.ws.memory().unwrap(),
        concat!(
            "# Workspace Memory\n",
            "\n",
            "Derived from append-only project facts. Edit the source log or policy, not this view.\n",
            "\n",
            "## Pitfalls\n",
            "\n",
            "- Only a pitfall. (seen 1x; evidence: 1)\n",
        )
    );
}

#[test]
fn hand_edited_memory_md_is_repaired() {
    let p = seeded();
    write_raw(
        &p.file("MEMORY.md"),
        b"# Workspace Memory\n\n- Use MongoDB. (seen 99x; evidence: 99)\n",
    );
    assert_eq!(p.ws.memory().unwrap(), EXPECTED_MEMORY);
    assert_eq!(std::fs::read_to_string(p.file("MEMORY.md")).unwrap(), EXPECTED_MEMORY);
    // An intact file is not rewritten by reading it.
    let before = file_state(&p.file("MEMORY.md")).unwrap();
    crate::common::let_clock_tick();
    p.ws.memory().unwrap();
    p.ws.context(None).unwrap();
    assert_eq!(file_state(&p.file("MEMORY.md")).unwrap(), before);
    // The context is built from the repaired view too.
    write_raw(&p.file("MEMORY.md"), b"tampered\n");
    assert!(!p.ws.context(None).unwrap().contains("tampered"));
    // A deleted MEMORY.md is rebuilt.
    std::fs::remove_file(p.file("MEMORY.md")).unwrap();
    assert_eq!(p.ws.memory().unwrap(), EXPECTED_MEMORY);
    assert!(p.file("MEMORY.md").exists());
    // A distill that changes nothing repairs it as well.
    write_raw(&p.file("MEMORY.md"), b"tampered\n");
    p.distill();
    assert_eq!(std::fs::read_to_string(p.file("MEMORY.md")).unwrap(), EXPECTED_MEMORY);
}

#[test]
fn without_curated_json_an_existing_memory_md_is_never_served() {
    let p = Project::new();
    assert_eq!(p.ws.memory().unwrap(), "");
    assert_eq!(p.ws.context(None).unwrap(), "(no workspace memory yet)");
    p.ws.init().unwrap();
    // MEMORY.md is a rendering, and anyone (a branch, a hand) may have
    // written this one: without curated.json there is no curated part.
    write_raw(&p.file("MEMORY.md"), b"# Hand written\n\n- keep me\n");
    assert_eq!(p.ws.memory().unwrap(), "");
    assert_eq!(p.ws.context(None).unwrap(), "(no workspace memory yet)");
}

#[test]
fn context_shows_only_active_values_and_recent_unkeyed_facts() {
    let p = seeded();
    // A tie: candidates must never reach the prompt.
    p.add("t1", "decision", 5, Some("db.engine"), "CANDIDATE-ONE.", "2026-01-15T00:00:00Z");
    p.add("t2", "decision", 5, Some("db.engine"), "CANDIDATE-TWO.", "2026-01-15T00:00:00Z");
    assert_eq!(p.distill().queued_conflicts, 1);
    // Recent facts: keyed raw facts are newest but must not show.
    p.add("r1", "outcome", 3, None, "Recent one.", "2026-02-20T10:00:00Z");
    p.add("r2", "pitfall", 2, None, "Recent two.", "2026-02-21T10:00:00Z");
    p.add(
        "r3",
        "decision",
        5,
        Some("runtime.python"),
        "KEYED-RAW Use Python 3.13.",
        "2026-02-22T10:00:00Z",
    );
    p.add("r4", "decision", 5, Some("db.engine"), "KEYED-RAW Use Oracle.", "2026-02-23T10:00:00Z");

    // Without the pending part: exactly the teaching implementation's.
    let context = p.ws.context_with(&ContextOptions::new().pending(0)).unwrap();
    // The six newest unkeyed facts, oldest of them first.
    let recent = [
        "- [convention] bump dependencies monthly. (2026-01-09)",
        "- [pitfall] Never call unwrap in the library. (2026-01-10)",
        "- [outcome] Shipped v1. (2026-01-11)",
        "- [pitfall] Unqualified pitfall. (2026-01-12)",
        "- [outcome] Recent one. (2026-02-20)",
        "- [pitfall] Recent two. (2026-02-21)",
    ];
    let expected =
        format!("{}\n\n# Recent Workspace Facts\n\n{}", EXPECTED_MEMORY.trim(), recent.join("\n"));
    assert_eq!(context, expected);
    for hidden in ["KEYED-RAW", "CANDIDATE-", "Use Python 3.11."] {
        assert!(!context.contains(hidden), "context shows {hidden}:\n{context}");
    }
    // By default the keyed facts no entry cites follow, under their own
    // heading: the tied candidates and the two new claims, oldest first.
    // Evidence of any revision (k1, of the superseded one) never shows;
    // the candidates say which open case reviews them.
    let case = p.ws.conflicts().unwrap().cases.remove(0);
    let review = format!(" (under review: {})", case.conflict_id);
    let pending = [
        format!("- [decision] db.engine: CANDIDATE-ONE. (2026-01-15){review}"),
        format!("- [decision] db.engine: CANDIDATE-TWO. (2026-01-15){review}"),
        "- [decision] runtime.python: KEYED-RAW Use Python 3.13. (2026-02-22)".to_owned(),
        "- [decision] db.engine: KEYED-RAW Use Oracle. (2026-02-23)".to_owned(),
    ];
    let with_pending = p.ws.context(None).unwrap();
    assert_eq!(
        with_pending,
        format!(
            "{expected}\n\n# Pending Keyed Facts (recorded, not in the curated memory)\n\n{}",
            pending.join("\n")
        )
    );
    assert!(!with_pending.contains("Use Python 3.11."), "{with_pending}");
    let two = p.ws.context_with(&ContextOptions::new().pending(2)).unwrap();
    assert!(two.ends_with(&pending[2..].join("\n")), "{two}");
    assert!(!two.contains("CANDIDATE-"), "{two}");
    // Fewer recent facts on request.
    let short = p.ws.context_with(&ContextOptions::new().recent(1).pending(0)).unwrap();
    assert!(
        short.ends_with("# Recent Workspace Facts\n\n- [pitfall] Recent two. (2026-02-21)"),
        "{short}"
    );
    let none = p.ws.context_with(&ContextOptions::new().recent(0).pending(0)).unwrap();
    assert_eq!(none, EXPECTED_MEMORY.trim());
}

/// Writes `old` daily file with garbage in the middle, after the state was
/// distilled.
fn corrupt_old_day(p: &Project) -> std::path::PathBuf {
    let old = p.day_file("2026-01-01");
    let text = std::fs::read_to_string(&old).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "this is not json");
    write_raw(&old, (lines.join("\n") + "\n").as_bytes());
    old
}

#[test]
fn recent_facts_come_from_the_newest_files_without_opening_older_ones() {
    let p = Project::new();
    p.add("old1", "decision", 5, None, "Old decision.", "2026-01-01T01:00:00Z");
    p.add("old2", "outcome", 3, None, "Old outcome.", "2026-01-01T02:00:00Z");
    p.distill();
    let mut recent = Vec::new();
    for i in 0..6 {
        let day = if i < 3 { "2026-02-27" } else { "2026-02-28" };
        recent.push(
            p.ws.remember(fact(
                &format!("n{i}"),
                "outcome",
                3,
                None,
                &format!("New {i}."),
                &format!("{day}T0{i}:00:00Z"),
            ))
            .unwrap(),
        );
        p.add(
            &format!("k{i}"),
            "decision",
            3,
            Some("some.key"),
            "Keyed.",
            &format!("{day}T0{i}:30:00Z"),
        );
    }
    let old = corrupt_old_day(&p);
    // The whole log is unreadable ...
    let err = p.ws.facts().unwrap_err();
    assert!(err.to_string().contains(&format!("{}:2", old.display())), "{err}");
    // ... but the six newest unkeyed facts are all in newer files.
    let context = p.ws.context(None).unwrap();
    assert!(context.contains("- Old decision. (seen 1x; evidence: 1)"), "{context}");
    let (recent_part, pending_part) = context
        .split("# Recent Workspace Facts\n\n")
        .nth(1)
        .unwrap()
        .split_once("\n\n# Pending Keyed Facts (recorded, not in the curated memory)\n\n")
        .unwrap();
    let lines: Vec<&str> = recent_part.lines().collect();
    // The six pending keyed facts are in the newer files too.
    assert_eq!(pending_part.matches("- [decision] some.key: Keyed.").count(), 6, "{context}");
    let expected: Vec<String> = recent
        .iter()
        .map(|f| format!("- [outcome] {} ({})", f.content(), f.recorded_at().utc_day()))
        .collect();
    assert_eq!(lines, expected);
    // Asking for one more fact than the newer files hold must open the old
    // file, and fails on its damage.
    let err = p.ws.context(Some(7)).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("{}:2", old.display())), "{err}");
}

#[test]
fn keyed_facts_do_not_count_towards_the_recent_limit() {
    let p = Project::new();
    p.add("old1", "outcome", 3, None, "Old outcome.", "2026-01-01T01:00:00Z");
    p.add("old2", "outcome", 3, None, "Old outcome two.", "2026-01-01T02:00:00Z");
    // Newer files: only 4 unkeyed facts, many keyed ones.
    for i in 0..8 {
        let key = if i % 2 == 0 { None } else { Some("some.key") };
        p.add(
            &format!("n{i}"),
            "outcome",
            3,
            key,
            &format!("New {i}."),
            &format!("2026-02-2{}T00:00:00Z", i % 3 + 5),
        );
    }
    corrupt_old_day(&p);
    assert!(matches!(p.ws.context(None), Err(Error::Corrupt { .. })));
    // The four keyed ones are pending keyed facts, and a fifth would be in
    // the damaged file too.
    let four = p.ws.context_with(&ContextOptions::new().recent(4).pending(4)).unwrap();
    assert_eq!(four.matches("- [outcome] New").count(), 4, "{four}");
    assert_eq!(four.matches("- [outcome] some.key: New").count(), 4, "{four}");
    let five = p.ws.context_with(&ContextOptions::new().recent(4).pending(5));
    assert!(matches!(five, Err(Error::Corrupt { .. })), "{five:?}");
}
