//! Real git repositories for the tests of memory that travels: a world of
//! clones at different paths, each a git work tree with a workmem project
//! at its top, driven by the `git` binary and the `workmem` binary with a
//! cleared environment. Shared by `sharing` and `trust`.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::WORKMEM;

/// How long one command may run before the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `cmd` to completion with its output captured, killing it and
/// failing the test when it runs longer than [`LIMIT`].
pub(crate) fn timed(cmd: &mut Command) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(output) = rx.recv_timeout(LIMIT) else {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("{cmd:?} did not finish within {LIMIT:?}");
    };
    output.unwrap()
}

pub(crate) const AS_OF: &str = "2027-01-01T00:00:00Z";

/// A temporary directory holding a `home/` and any number of clones.
pub(crate) struct World {
    root: TempDir,
}

/// One clone: a git work tree with a workmem project at its top.
pub(crate) struct Clone<'w> {
    pub(crate) world: &'w World,
    pub(crate) dir: PathBuf,
}

impl World {
    pub(crate) fn new() -> World {
        let root = tempfile::Builder::new().prefix("workmem-share-").tempdir().unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        World { root }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// Returns `program` with a cleared environment: a home of its own, no
    /// system git configuration, fixed identities.
    pub(crate) fn command(&self, program: &str, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Ada Lovelace")
            .env("GIT_AUTHOR_EMAIL", "ada@example.com")
            .env("GIT_COMMITTER_NAME", "Ada Lovelace")
            .env("GIT_COMMITTER_EMAIL", "ada@example.com")
            .env("USER", "ada")
            .current_dir(dir)
            .stdin(Stdio::null());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }

    /// Creates a repository at `name` with a README committed.
    pub(crate) fn init(&self, name: &str) -> Clone<'_> {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        let clone = Clone { world: self, dir };
        clone.git(&["init", "-q", "-b", "main"]);
        std::fs::write(clone.dir.join("README"), "a project\n").unwrap();
        clone.git(&["add", "README"]);
        clone.git(&["commit", "-q", "-m", "start"]);
        clone
    }

    /// Clones `from` to `name`.
    pub(crate) fn clone_of(&self, from: &Clone<'_>, name: &str) -> Clone<'_> {
        let dir = self.path(name);
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let out = self
            .command("git", self.root.path())
            .args(["clone", "-q"])
            .arg(&from.dir)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "clone: {}", String::from_utf8_lossy(&out.stderr));
        Clone { world: self, dir }
    }
}

pub(crate) fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

impl Clone<'_> {
    pub(crate) fn git_output(&self, args: &[&str]) -> Output {
        self.world.command("git", &self.dir).args(args).output().unwrap()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = self.git_output(args);
        assert!(out.status.success(), "git {args:?} in {}: {}", self.dir.display(), text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `workmem args` here; fails the test when it does not exit
    /// within a minute (a command blocked on a FIFO, say).
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        timed(self.world.command(WORKMEM, &self.dir).args(args))
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "workmem {args:?} in {}: {}", self.dir.display(), text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    pub(crate) fn memory(&self) -> PathBuf {
        self.dir.join(".workmem/memory")
    }

    pub(crate) fn remember(&self, content: &str, key: Option<&str>, at: &str) -> String {
        let mut args = vec!["remember", content, "-k", "decision", "-i", "4", "--at", at];
        if let Some(key) = key {
            args.extend(["--key", key]);
        }
        self.json(&args)["fact_id"].as_str().unwrap().to_owned()
    }

    /// Pulls `from`'s main (merging, or rebasing with `rebase`), after a
    /// first workmem command in this clone, as a user's would be.
    pub(crate) fn pull(&self, from: &Clone<'_>, rebase: bool) {
        self.ok(&["status", "-q"]);
        let mode = if rebase { "--rebase" } else { "--no-rebase" };
        self.git(&["pull", "-q", mode, "--no-edit", from.dir.to_str().unwrap(), "main"]);
    }

    /// Commits everything in the work tree; returns the commit's id.
    pub(crate) fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// `workmem verify` must be clean.
    pub(crate) fn verify_clean(&self) {
        let out = self.run(&["verify", "--json"]);
        assert!(out.status.success(), "verify in {}: {}", self.dir.display(), text(&out));
    }

    pub(crate) fn fact_ids(&self) -> Vec<String> {
        let facts = self.json(&["facts", "--all"]);
        facts
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["fact_id"].as_str().unwrap().to_owned())
            .collect()
    }

    pub(crate) fn event_ids(&self) -> Vec<String> {
        let records = self.json(&["adjudications"]);
        records
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["event_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Whether the journal holds nothing (it must at rest, so that it never
    /// needs merging).
    pub(crate) fn journal_is_empty(&self) -> bool {
        let path = self.memory().join("conflict-resolution-transactions.jsonl");
        std::fs::metadata(path).map_or(true, |meta| meta.len() == 0)
    }

    /// The open case of `key`, if any.
    pub(crate) fn open_case(&self, key: &str) -> Option<Value> {
        let cases = self.json(&["conflicts"]);
        cases.as_array().unwrap().iter().find(|c| c["memory_key"] == key).cloned()
    }

    /// Resolves the open case of `key` choosing the candidate whose content
    /// is `content`; returns the event id.
    pub(crate) fn decide(&self, key: &str, content: &str, event: &str) -> String {
        self.decide_with(key, content, event, &[])
    }

    /// [`Clone::decide`] with more arguments for `resolve` (`--actor ...`).
    pub(crate) fn decide_with(
        &self,
        key: &str,
        content: &str,
        event: &str,
        more: &[&str],
    ) -> String {
        let case = self.open_case(key).unwrap_or_else(|| panic!("no open case for {key}"));
        let candidate = case["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["content"] == content)
            .unwrap_or_else(|| panic!("no candidate {content}: {case}"))["candidate_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let revision = case["revision"].to_string();
        let conflict = case["conflict_id"].as_str().unwrap().to_owned();
        let mut args = vec![
            "resolve",
            &conflict,
            &candidate,
            "--revision",
            &revision,
            "--event-id",
            event,
            "--rationale",
            "decided in review",
            "--at",
            "2027-01-02T00:00:00Z",
        ];
        args.extend_from_slice(more);
        self.ok(&args);
        event.to_owned()
    }

    /// The active value of `key`, if any.
    pub(crate) fn active(&self, key: &str) -> Option<String> {
        let history = self.json(&["history", key]);
        history["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["status"] == "active")
            .map(|r| r["content"].as_str().unwrap().to_owned())
    }

    /// Every memory file's bytes, MEMORY.md rendered first.
    pub(crate) fn memory_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        self.ok(&["memory", "-q"]);
        let mut files = BTreeMap::new();
        let mut stack = vec![self.memory()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    stack.push(path);
                } else if !name.starts_with('.') {
                    files.insert(
                        path.strip_prefix(self.memory()).unwrap().to_path_buf(),
                        std::fs::read(&path).unwrap(),
                    );
                }
            }
        }
        files
    }
}
