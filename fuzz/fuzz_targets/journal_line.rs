//! Arbitrary bytes as one transaction-journal line:
//! `journal::parse_record::<JournalLine>` must never panic, and every line
//! it accepts must round-trip through `to_line`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use workmem::internals::journal::{self, JournalLine};

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = journal::parse_record::<JournalLine>(data) {
        let line = record.to_line();
        let back = journal::parse_record::<JournalLine>(line.trim_end_matches('\n').as_bytes())
            .expect("a parsed journal line re-parses");
        assert_eq!(back, record, "journal line does not round-trip");
        assert_eq!(back.to_line(), line, "journal line is not stable");
    }
});
