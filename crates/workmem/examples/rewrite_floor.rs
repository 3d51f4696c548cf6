//! The floor of a distill that changes curated.json: what any program must
//! do to replace the workspace's canonical files durably, with no policy,
//! no decoding and no encoding. The incremental distill figures in
//! BENCHMARKS.md are compared with this program, measured in the same run.
//!
//! `rewrite_floor DAILY_DIR STATE_DIR` stats every file of `DAILY_DIR`
//! (how a reader learns what was appended to the log), then replaces
//! `STATE_DIR/curated.json` and then `STATE_DIR/MEMORY.md` each with a copy
//! of itself: the same bytes written beside it, fsynced, renamed over it,
//! the directory fsynced. Point `STATE_DIR` at copies: the files keep their
//! bytes but not their inodes.
#![allow(clippy::disallowed_methods)] // this is the baseline, not workmem code

use std::fs::File;
use std::path::Path;

fn replace_with_copy(dir: &Path, name: &str) -> std::io::Result<()> {
    let path = dir.join(name);
    let temp = dir.join(format!(".{name}.floor.tmp"));
    let mut to = File::create(&temp)?;
    std::io::copy(&mut File::open(&path)?, &mut to)?;
    to.sync_all()?;
    std::fs::rename(&temp, &path)?;
    File::open(dir)?.sync_all()
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(daily), Some(state)) = (args.next(), args.next()) else {
        panic!("usage: rewrite_floor DAILY_DIR STATE_DIR");
    };
    for entry in std::fs::read_dir(daily)? {
        std::fs::symlink_metadata(entry?.path())?;
    }
    let state = Path::new(&state);
    replace_with_copy(state, "curated.json")?;
    replace_with_copy(state, "MEMORY.md")
}
