//! A temporary git-like project and a `workmem` binary run in it with a
//! cleared environment. The binary is the caller's: only the CLI's own
//! tests know its path (`env!("CARGO_BIN_EXE_workmem")`), so they pass it
//! in; test modules add their helpers through extension traits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A project directory (holding `.git`) inside a temporary directory.
pub struct Project {
    _dir: tempfile::TempDir,
    /// The `workmem` binary the commands run.
    pub bin: PathBuf,
    /// The project directory.
    pub root: PathBuf,
}

impl Project {
    /// Returns a new project under the system temporary directory, whose
    /// commands run the binary `bin`.
    pub fn new(bin: impl Into<PathBuf>, prefix: &str) -> Project {
        Project::inside(bin, tempfile::Builder::new().prefix(prefix).tempdir().expect("temp dir"))
    }

    /// Returns a new project in `dir`, which it keeps alive, whose commands
    /// run the binary `bin`.
    pub fn inside(bin: impl Into<PathBuf>, dir: tempfile::TempDir) -> Project {
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join(".git")).expect("project");
        Project { _dir: dir, bin: bin.into(), root }
    }

    /// Returns the memory directory.
    pub fn memory(&self) -> PathBuf {
        self.root.join(".workmem/memory")
    }

    /// Returns `workmem ARGS` in the project, with a cleared environment and
    /// no standard input.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.env_clear()
            .env("HOME", &self.root)
            .env("USER", "reviewer")
            .current_dir(&self.root)
            .args(args);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `workmem ARGS`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("spawn workmem")
    }

    /// Runs `workmem ARGS`, which must succeed.
    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// Runs `workmem ARGS --json`, which must succeed, and parses stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--json");
        serde_json::from_slice(&self.ok(&all).stdout).expect("json output")
    }

    /// Every file of the memory directory, by path relative to it, with its
    /// bytes (the lock file included: a failed command must not even create
    /// it), but the distill cache, the id index, the known-valid hashes and
    /// the append trail: caches that distill, resolve and appends keep up
    /// to date as they go.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.memory()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.expect("entry").path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                if name.starts_with(".distill-cache")
                    || name == ".id-index"
                    || name == ".valid-hashes"
                    || name == ".append-trail"
                    || name == ".hash-checkpoints"
                    || name == ".conflicts-layout"
                    || name == ".journal-owner"
                    || name == ".distill-owner"
                {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = std::fs::read(&path).expect("read");
                    out.insert(
                        path.strip_prefix(self.memory()).expect("prefix").to_path_buf(),
                        bytes,
                    );
                }
            }
        }
        out
    }
}

/// Every file under `dir` (recursively: caches, temporaries and index
/// folders included) whose bytes hold `text`, sorted: the byte search
/// that shows a redacted text is gone.
///
/// # Panics
///
/// When a directory or file under `dir` cannot be read.
pub fn files_holding(dir: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read the directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .expect("read the file")
                .windows(text.len())
                .any(|window| window == text.as_bytes())
            {
                found.push(path.display().to_string());
            }
        }
    }
    found.sort();
    found
}
