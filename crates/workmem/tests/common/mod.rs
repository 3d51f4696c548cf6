//! Shared helpers: a temporary project with a workspace on a fixed clock,
//! fact builders with explicit fields, and file snapshots that prove a
//! file was not rewritten (bytes, mtime and inode).
#![allow(dead_code, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use workmem::DistillOptions;
use workmem::{Fact, FixedClock, NewFact, Stamp, Workspace};
use workmem::{Policy, Report};

/// The `as_of` (and clock time) of most tests. With the default policy the
/// cutoff is 2026-01-30T00:00:00Z.
pub const AS_OF: &str = "2026-03-01T00:00:00Z";

/// Parses a stamp that the test knows to be valid.
pub fn stamp(text: &str) -> Stamp {
    Stamp::parse(text).expect("test stamp is valid")
}

/// A temporary project directory and its workspace.
pub struct Project {
    pub dir: tempfile::TempDir,
    pub ws: Workspace,
}

impl Project {
    /// Returns a new empty project whose clock reads [`AS_OF`].
    pub fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = open(dir.path());
        Project { dir, ws }
    }

    /// Returns the project's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Returns a file of the memory directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.ws.file(name)
    }

    /// Returns the daily log file of `day` (`YYYY-MM-DD`).
    pub fn day_file(&self, day: &str) -> PathBuf {
        self.ws.memory_dir().join("daily").join(format!("{day}.jsonl"))
    }

    /// Appends one fact with every field explicit.
    pub fn add(
        &self,
        id: &str,
        kind: &str,
        importance: i64,
        key: Option<&str>,
        content: &str,
        at: &str,
    ) -> Fact {
        self.ws
            .remember(fact(id, kind, importance, key, content, at))
            .expect("remember a valid fact")
    }

    /// Runs distill with the default policy at [`AS_OF`].
    pub fn distill(&self) -> Report {
        self.distill_with(&Policy::default(), AS_OF)
    }

    /// Runs distill with `policy` at `as_of`.
    pub fn distill_with(&self, policy: &Policy, as_of: &str) -> Report {
        self.ws
            .distill(&DistillOptions::new().policy(policy.clone()).as_of(stamp(as_of)))
            .expect("distill")
            .report
    }

    /// Returns curated.json parsed as JSON.
    pub fn curated_json(&self) -> serde_json::Value {
        read_json(&self.file("curated.json"))
    }

    /// Returns conflicts.json parsed as JSON.
    pub fn conflicts_json(&self) -> serde_json::Value {
        read_json(&self.file("conflicts.json"))
    }

    /// Returns a snapshot of every file under the memory directory.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, FileState> {
        snapshot_dir(self.ws.memory_dir())
    }
}

/// Opens the workspace of `project` with a clock fixed at [`AS_OF`].
pub fn open(project: &Path) -> Workspace {
    Workspace::builder(project)
        .clock(Arc::new(FixedClock::new(stamp(AS_OF))))
        .open()
        .expect("open workspace")
}

/// Returns a new fact with every field explicit.
pub fn fact(
    id: &str,
    kind: &str,
    importance: i64,
    key: Option<&str>,
    content: &str,
    at: &str,
) -> NewFact {
    NewFact {
        content: content.to_owned(),
        kind: Some(kind.to_owned()),
        importance: Some(importance),
        memory_key: key.map(str::to_owned),
        source: None,
        evidence: BTreeMap::new(),
        recorded_at: Some(at.to_owned()),
        fact_id: Some(id.to_owned()),
    }
}

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub bytes: Vec<u8>,
    pub modified: SystemTime,
    pub inode: u64,
}

/// Returns the state of `path`, or `None` when it does not exist.
pub fn file_state(path: &Path) -> Option<FileState> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileState {
        bytes: std::fs::read(path).expect("read file"),
        modified: meta.modified().expect("mtime"),
        inode: meta.ino(),
    })
}

/// Returns the state of every file under `dir` (recursively), by path.
pub fn snapshot_dir(dir: &Path) -> BTreeMap<PathBuf, FileState> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(snapshot_dir(&path));
        } else if let Some(state) = file_state(&path) {
            out.insert(path, state);
        }
    }
    out
}

/// Sleeps long enough that a rewrite would get a different mtime.
pub fn let_clock_tick() {
    std::thread::sleep(std::time::Duration::from_millis(30));
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read json file")).expect("valid json")
}

/// Overwrites a file directly (simulating a hand edit, a crash or an
/// attacker), bypassing the library.
pub fn write_raw(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write test file");
}

/// Appends raw bytes to a file, bypassing the library.
pub fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).expect("open for append");
    file.write_all(bytes).expect("append test bytes");
}

/// Returns the active entries of a curated.json value as
/// (content, evidence ids).
pub fn active_contents(state: &workmem::CuratedState) -> Vec<(String, Vec<String>)> {
    state.active_entries().map(|e| (e.content.clone(), e.evidence_ids.to_vec())).collect()
}

/// Overwrites the first `end` bytes of the file at `path` with a line of
/// `#`, keeping its size and modification time: a change its stamp cannot
/// show, which any reader of those bytes would refuse.
pub fn garble_start_keeping_stamp(path: &Path, end: usize) {
    use std::os::unix::fs::FileExt;
    let meta = std::fs::metadata(path).expect("metadata");
    let mut garbage = vec![b'#'; end];
    if let Some(last) = garbage.last_mut() {
        *last = b'\n';
    }
    let file = std::fs::OpenOptions::new().write(true).open(path).expect("open");
    file.write_all_at(&garbage, 0).expect("garble");
    file.set_modified(meta.modified().expect("mtime")).expect("keep mtime");
}
