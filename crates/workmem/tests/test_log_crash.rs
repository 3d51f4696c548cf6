//! Acceptance 6: crash safety of the daily log (docs/format.md).
#![allow(clippy::disallowed_methods)]

use workmem::DistillOptions;
use workmem::{Error, Fact};

use crate::common::{Project, append_raw, fact, write_raw};

const DAY: &str = "2026-01-01";

fn two_facts(p: &Project) -> (Fact, Fact) {
    let a = p.add("a1", "outcome", 3, None, "First.", "2026-01-01T01:00:00Z");
    let b = p.add("b1", "decision", 4, Some("db.engine"), "Second.", "2026-01-01T02:00:00Z");
    (a, b)
}

#[test]
fn torn_final_line_is_ignored_and_repaired_before_the_next_append() {
    let p = Project::new();
    let (a, b) = two_facts(&p);
    let log = p.day_file(DAY);
    // A crash in the middle of an append leaves half a record.
    let torn = &a.to_line().replace("a1", "torn")[..40];
    append_raw(&log, torn.as_bytes());

    let facts = p.ws.facts().unwrap();
    assert_eq!(facts, vec![a.clone(), b.clone()]);
    assert_eq!(p.ws.facts_on(DAY).unwrap().len(), 2);
    assert!(p.ws.context(None).is_ok());
    assert_eq!(p.ws.distill(&DistillOptions::new()).unwrap().report.scanned, 2);

    let c = p.add("c1", "pitfall", 5, None, "Third.", "2026-01-01T03:00:00Z");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, format!("{}{}{}", a.to_line(), b.to_line(), c.to_line()));
    assert_eq!(p.ws.facts().unwrap(), vec![a, b, c]);
}

#[test]
fn torn_tail_of_another_days_file_is_repaired_by_an_import_too() {
    let p = Project::new();
    let (a, b) = two_facts(&p);
    let log = p.day_file(DAY);
    append_raw(&log, b"{\"content\": \"half");
    let imported =
        p.ws.import(
            vec![
                fact("c1", "outcome", 3, None, "Same day.", "2026-01-01T05:00:00Z"),
                fact("d1", "outcome", 3, None, "Next day.", "2026-01-02T05:00:00Z"),
            ],
            &mut |_| {},
        )
        .unwrap()
        .facts;
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, format!("{}{}{}", a.to_line(), b.to_line(), imported[0].to_line()));
    assert_eq!(p.ws.facts().unwrap().len(), 4);
}

#[test]
fn complete_but_unterminated_final_record_is_kept_and_terminated() {
    let p = Project::new();
    let (a, b) = two_facts(&p);
    let log = p.day_file(DAY);
    // The crash hit after the record but before its newline.
    let whole = a
        .to_line()
        .replace("\"fact_id\": \"a1\"", "\"fact_id\": \"a2\"")
        .replace("First.", "Unterminated.");
    append_raw(&log, whole.trim_end().as_bytes());
    let c = p.add("c1", "pitfall", 5, None, "Third.", "2026-01-01T03:00:00Z");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, format!("{}{}{}{}", a.to_line(), b.to_line(), whole, c.to_line()));
    assert_eq!(p.ws.facts().unwrap().len(), 4);
}

#[test]
fn garbage_in_the_middle_is_corruption_naming_file_and_line() {
    let p = Project::new();
    let (a, b) = two_facts(&p);
    let log = p.day_file(DAY);
    write_raw(&log, format!("{}{{\"content\": \"tor\n{}", a.to_line(), b.to_line()).as_bytes());
    let err = p.ws.facts().unwrap_err();
    match &err {
        Error::Corrupt { location, .. } => {
            assert_eq!(location.path, log);
            assert_eq!(location.line, Some(2));
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(matches!(err, Error::Corrupt { .. }));
    let message = err.to_string();
    assert!(message.contains(&format!("{}:2", log.display())), "{message}");
    // Corruption is never skipped or repaired by an append: the append is
    // refused or leaves the damage for a human, and reads keep failing.
    let _ = p.ws.remember(fact("c1", "outcome", 3, None, "After.", "2026-01-01T09:00:00Z"));
    assert!(matches!(p.ws.facts(), Err(Error::Corrupt { .. })));
    assert!(matches!(
        p.ws.distill(&DistillOptions::new()).map(|d| d.report),
        Err(Error::Corrupt { .. })
    ));

    // An invalid record (valid JSON, bad field) in the middle is corruption too.
    write_raw(
        &log,
        format!(
            "{}{}{}",
            a.to_line(),
            a.to_line().replace("\"importance\": 3", "\"importance\": 9"),
            b.to_line()
        )
        .as_bytes(),
    );
    let err = p.ws.facts().unwrap_err();
    assert!(err.to_string().contains(&format!("{}:2", log.display())), "{err}");
    assert!(err.to_string().contains("importance"), "{err}");
}

#[test]
fn files_with_other_names_in_daily_are_ignored() {
    let p = Project::new();
    two_facts(&p);
    write_raw(&p.ws.memory_dir().join("daily").join("notes.txt"), b"garbage\n");
    write_raw(&p.ws.memory_dir().join("daily").join("2026-01-01.jsonl.bak"), b"garbage\n");
    write_raw(&p.ws.memory_dir().join("daily").join("2026-1-1.jsonl"), b"garbage\n");
    assert_eq!(p.ws.facts().unwrap().len(), 2);
}
