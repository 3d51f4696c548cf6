//! Arbitrary bytes as one audit-stream line:
//! `journal::parse_record::<Adjudication>` must never panic, and every line
//! it accepts must round-trip through `to_line`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use workmem::internals::journal::{self, Adjudication};

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = journal::parse_record::<Adjudication>(data) {
        let line = record.to_line();
        let back = journal::parse_record::<Adjudication>(line.trim_end_matches('\n').as_bytes())
            .expect("a parsed adjudication re-parses");
        assert_eq!(back, record, "adjudication does not round-trip");
        assert_eq!(back.to_line(), line, "adjudication line is not stable");
    }
});
