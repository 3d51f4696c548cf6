//! Arbitrary bytes as one daily-log line: `Fact::parse_line` must never
//! panic, and every line it accepts must round-trip through `to_line`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(fact) = workmem::internals::parse_fact_line(data) {
        let line = fact.to_line();
        let back = workmem::internals::parse_fact_line(line.trim_end_matches('\n').as_bytes()).expect("a parsed fact re-parses");
        assert_eq!(back, fact, "fact does not round-trip");
        assert_eq!(back.to_line(), line, "fact line is not stable");
    }
});
