//! The projection index lets `context` use MEMORY.md without parsing
//! curated.json (whose evidence lists grow with the log), and is ignored as
//! soon as either file changes.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::{Seek, Write};

use crate::common::{AS_OF, Project, stamp};
use workmem::DistillOptions;

fn promote(p: &Project) {
    p.add("a1", "decision", 5, None, "Use WAL mode.", "2026-01-01T00:00:00Z");
    p.add("b1", "convention", 5, None, "Run fmt before commits.", "2026-01-02T00:00:00Z");
    p.ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
}

#[test]
fn context_does_not_read_curated_json_while_the_index_is_fresh() {
    let p = Project::new();
    promote(&p);
    let expected = p.ws.context(None).expect("context");
    // Garble curated.json in place, keeping its inode, size and mtime: a
    // context that parsed it would fail.
    let path = p.ws.memory_dir().join("curated.json");
    let meta = fs::metadata(&path).expect("metadata");
    let mut file = fs::OpenOptions::new().write(true).open(&path).expect("open");
    file.write_all(&vec![b'#'; meta.len() as usize]).expect("garble");
    file.set_modified(meta.modified().expect("mtime")).expect("restore mtime");
    drop(file);
    assert_eq!(p.ws.context(None).expect("context from the index"), expected);
    // memory() always checks curated.json, and reports the damage.
    assert!(p.ws.memory().is_err());
}

#[test]
fn a_changed_curated_json_or_memory_md_makes_the_index_stale() {
    let p = Project::new();
    promote(&p);
    let first = p.ws.context(None).expect("context");
    assert!(first.contains("Use WAL mode."));
    // A hand edit of MEMORY.md (same inode) is noticed and repaired.
    let memory = p.ws.memory_dir().join("MEMORY.md");
    let mut file = fs::OpenOptions::new().write(true).open(&memory).expect("open");
    file.seek(std::io::SeekFrom::End(0)).expect("seek");
    file.write_all(b"- injected line\n").expect("edit");
    drop(file);
    let again = p.ws.context(None).expect("context");
    assert_eq!(again, first);
    assert!(!fs::read_to_string(&memory).expect("read").contains("injected"));
    // A new curated state is picked up.
    p.add("c1", "pitfall", 5, None, "Never log tokens.", "2026-01-03T00:00:00Z");
    p.ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
    assert!(p.ws.context(None).expect("context").contains("Never log tokens."));
}

#[test]
fn a_reader_that_cannot_write_the_index_still_answers() {
    let p = Project::new();
    promote(&p);
    let expected = p.ws.context(None).expect("context");
    // Make the index unwritable: a non-empty directory stands in its place.
    let index = p.ws.memory_dir().join(".projection.json");
    fs::remove_file(&index).expect("remove index");
    fs::create_dir(&index).expect("directory");
    fs::write(index.join("keep"), b"x").expect("fill");
    assert_eq!(p.ws.context(None).expect("context without an index"), expected);
    assert_eq!(
        p.ws.memory().expect("memory"),
        fs::read_to_string(p.ws.memory_dir().join("MEMORY.md")).expect("read")
    );
}
