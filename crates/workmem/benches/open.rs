//! Opening a workspace whose journal holds many committed transactions:
//! a journal written by the teaching implementation, which never compacts
//! it (workmem's own journal is empty at rest; opening leaves committed
//! transactions to the next writer, which compacts them).
//!
//! Run: `cargo bench -p workmem --bench open`. Prints the median of
//! repeated `Workspace::open` calls for journals of 1, 1,000 and 10,000
//! committed transactions, so the ratio shows whether opening grows with the
//! journal (it must not: only the journal's last line is read).
#![allow(clippy::disallowed_methods)] // the bench builds its fixture directly

use std::fs;
use std::time::Instant;

use workmem::internals::journal::{Adjudication, Intent, JOURNAL_FILE, Phase};
use workmem::{Stamp, Workspace, internals::canon};

fn journal_text(workspace_id: &str, transactions: usize) -> String {
    let at = Stamp::parse("2026-01-01T00:00:00Z").expect("stamp");
    let mut text = String::new();
    for n in 0..transactions {
        let event_id = format!("review:{n}");
        let transaction_id = canon::transaction_id(workspace_id, &event_id);
        let intent = Intent {
            transaction_id,
            workspace_id: workspace_id.to_owned(),
            conflict_id: format!("conflict-{n:016x}"),
            event_id: event_id.clone(),
            prepared_at: at.clone(),
            curated_before: Vec::new(),
            curated_after: Vec::new(),
            curated_sha256_before: None,
            curated_sha256_after: None,
            conflicts_before: Vec::new(),
            conflicts_after: Vec::new(),
            conflicts_sha256_before: None,
            conflicts_sha256_after: None,
            adjudication: Adjudication {
                event_id,
                workspace_id: workspace_id.to_owned(),
                conflict_id: format!("conflict-{n:016x}"),
                case_revision: 1,
                selected_candidate_id: "candidate-0000000000000000".into(),
                actor: "bench".into(),
                rationale: "bench".into(),
                resolved_at: at.clone(),
                prior_active_entry_key: None,
                resulting_active_entry_key: "0000000000000000".into(),
                evidence_ids: ["a", "b"].into_iter().collect(),
                schema_version: 1,
            },
            schema_version: 1,
        };
        let digest = intent.digest();
        for phase in Phase::ALL {
            text.push_str(&intent.phase_line(&digest, phase, &at));
        }
    }
    text
}

fn median_open_micros(root: &std::path::Path, runs: usize) -> f64 {
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let ws = Workspace::open(root, None).expect("open");
            std::hint::black_box(&ws);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut baseline = None;
    for transactions in [1usize, 1_000, 10_000] {
        let root = dir.path().join(format!("p{transactions}"));
        fs::create_dir_all(&root).expect("project");
        let ws = Workspace::open(&root, None).expect("open");
        ws.init().expect("init");
        fs::write(ws.file(JOURNAL_FILE), journal_text(ws.workspace_id(), transactions))
            .expect("journal");
        let size = fs::metadata(ws.file(JOURNAL_FILE)).expect("size").len();
        let median = median_open_micros(&root, 501);
        let base = *baseline.get_or_insert(median);
        println!(
            "open: {transactions:>6} committed transactions ({:>9} journal bytes): median {median:>8.1} us ({:.2}x of one transaction)",
            size,
            median / base
        );
    }
}
