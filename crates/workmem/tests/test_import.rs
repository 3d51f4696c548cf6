//! Acceptance 11: `import` validates everything before writing, then
//! appends in batches.

use workmem::internals::IMPORT_BATCH;
use workmem::{Error, NewFact};

use crate::common::{Project, fact};

fn items(n: usize) -> Vec<NewFact> {
    // Interleave three days so each batch touches several files.
    (0..n)
        .map(|i| {
            let day = ["2026-01-01", "2026-01-02", "2026-01-03"][i % 3];
            let at = format!("{day}T{:02}:{:02}:{:02}Z", (i / 3600) % 24, (i / 60) % 60, i % 60);
            fact(
                &format!("imp-{i:06}"),
                ["decision", "outcome", "pitfall"][i % 3],
                3,
                None,
                &format!("Fact {i}."),
                &at,
            )
        })
        .collect()
}

#[test]
fn a_bad_item_at_the_end_writes_nothing() {
    let p = Project::new();
    let mut input = items(50);
    input.push(NewFact {
        importance: Some(9),
        ..fact("bad", "outcome", 3, None, "Bad.", "2026-01-01T00:00:00Z")
    });
    let mut calls = 0;
    match p.ws.import(input, &mut |_| calls += 1) {
        Err(Error::InvalidInput { field, item, .. }) => {
            assert_eq!((field.as_str(), item), ("importance", Some(51)));
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
    assert_eq!(calls, 0);
    assert!(!p.ws.memory_dir().exists());

    // With an existing log, nothing changes either.
    p.add("first", "outcome", 3, None, "Existing.", "2026-01-01T00:00:00Z");
    let before = p.snapshot();
    let mut input = items(20);
    input.push(fact("bad", "outcome", 3, Some("Not A Key"), "Bad key.", "2026-01-01T00:00:00Z"));
    let err = p.ws.import(input, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { field, item: Some(21), .. } if field == "memory_key"),
        "{err:?}"
    );
    assert_eq!(p.snapshot(), before);
    // Duplicate ids inside the input are refused too.
    let mut input = items(5);
    input.push(items(1).remove(0));
    let err = p.ws.import(input, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { field, item: Some(6), reason: workmem::Invalid::IdRepeated } if field == "fact_id"),
        "{err:?}"
    );
    assert_eq!(p.snapshot(), before);
}

#[test]
fn appends_in_batches_and_keeps_input_order_per_day() {
    let p = Project::new();
    let n = 2 * IMPORT_BATCH + 1_234;
    let mut progress = Vec::new();
    let stored = p.ws.import(items(n), &mut |done| progress.push(done)).unwrap().facts;
    assert_eq!(progress, [IMPORT_BATCH, 2 * IMPORT_BATCH, n]);
    assert_eq!(stored.len(), n);
    for (day_index, day) in ["2026-01-01", "2026-01-02", "2026-01-03"].iter().enumerate() {
        let text = std::fs::read_to_string(p.day_file(day)).unwrap();
        let expected: String = stored
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == day_index)
            .map(|(_, f)| f.to_line())
            .collect();
        assert!(text == expected, "{day}: file does not hold the facts in input order");
    }
    let all = p.ws.facts().unwrap();
    assert_eq!(all.len(), n);
    let days = p.ws.log_days().unwrap();
    assert_eq!(days.iter().map(|d| d.facts).sum::<usize>(), n);

    // Re-importing the same facts is a no-op; new ones are appended after.
    let again = p.ws.import(items(n + 3), &mut |_| {}).unwrap();
    assert_eq!(again.already_present, n);
    let again = again.facts;
    assert_eq!(again.len(), 3);
    assert_eq!(p.ws.facts().unwrap().len(), n + 3);
    let last_day = std::fs::read_to_string(p.day_file("2026-01-01")).unwrap();
    assert!(
        last_day.ends_with(
            &again
                .iter()
                .filter(|f| f.recorded_at().utc_day() == "2026-01-01")
                .map(workmem::Fact::to_line)
                .collect::<String>()
        )
    );
}
