//! The durable-append floor: open with `O_APPEND`, one `write`, `fsync`,
//! close. Every append figure in BENCHMARKS.md is reported as a ratio to
//! this program, measured in the same run.
//!
//! `floor FILE` appends one 256-byte line to FILE and exits.
#![allow(clippy::disallowed_methods)] // this is the baseline, not workmem code

use std::io::Write;

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).expect("usage: floor FILE");
    let line = [b'x'; 255];
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
    file.write_all(&line)?;
    file.write_all(b"\n")?;
    file.sync_all()
}
