//! End-to-end tests of the `workmem` binary: each test runs the real binary
//! in its own temporary project with a cleared environment, and checks exit
//! codes, `--json` shapes, stderr messages and what is (not) written.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

/// A temporary root holding `home/` and `project/` (a git-like project).
struct Env {
    root: TempDir,
}

impl Env {
    fn new() -> Env {
        let root = tempfile::Builder::new().prefix("workmem-cli-").tempdir().unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        std::fs::create_dir_all(root.path().join("project/.git")).unwrap();
        Env { root }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    fn memory(&self) -> PathBuf {
        self.project().join(".workmem/memory")
    }

    fn daily(&self, day: &str) -> PathBuf {
        self.memory().join(format!("daily/{day}.jsonl"))
    }

    /// Returns the binary with a cleared environment, run in `dir`.
    fn cmd_in(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_workmem"));
        cmd.env_clear().env("HOME", self.root().join("home")).current_dir(dir);
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }

    /// Returns the binary run in the project directory.
    fn cmd(&self) -> Command {
        self.cmd_in(&self.project())
    }

    /// Runs a command that must succeed and returns its stdout as JSON.
    fn json(&self, args: &[&str]) -> Value {
        let out =
            self.cmd().args(args).arg("--json").assert().success().get_output().stdout.clone();
        serde_json::from_slice(&out)
            .unwrap_or_else(|err| panic!("{args:?}: {err}: {}", String::from_utf8_lossy(&out)))
    }

    /// Runs a command that must succeed and returns its stdout.
    fn text(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).assert().success().get_output().stdout.clone();
        String::from_utf8(out).unwrap()
    }

    /// Appends a fact at `at` with `kind`, `importance` and an optional key.
    fn remember(&self, content: &str, kind: &str, importance: u8, key: Option<&str>, at: &str) {
        let mut cmd = self.cmd();
        cmd.args(["remember", content, "-k", kind, "-i", &importance.to_string(), "--at", at]);
        if let Some(key) = key {
            cmd.args(["--key", key]);
        }
        cmd.assert().success();
    }
}

/// Returns every file and directory below `dir` with the bytes of files.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(relative, None);
                stack.push(path);
            } else {
                out.insert(relative, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

const FACT_KEYS: [&str; 10] = [
    "content",
    "evidence",
    "fact_id",
    "importance",
    "kind",
    "memory_key",
    "recorded_at",
    "schema_version",
    "source",
    "workspace_id",
];

const REPORT_KEYS: [&str; 10] = [
    "conflict_case_ids",
    "conflicts",
    "created",
    "eligible",
    "queued_conflicts",
    "scanned",
    "skipped",
    "stale",
    "superseded",
    "updated",
];

/// Records a promotable fact, a keyed tie and an outcome, all aged at
/// 2026-06-01.
fn seed_story(env: &Env) {
    env.remember("Use WAL mode", "decision", 5, None, "2026-01-01T10:00:00Z");
    env.remember("Released 0.1", "outcome", 5, None, "2026-01-02T10:00:00Z");
    env.remember("Use nextest", "convention", 4, Some("test.runner"), "2026-01-03T10:00:00Z");
    env.remember("Use cargo test", "convention", 4, Some("test.runner"), "2026-01-03T10:00:00Z");
}

const AS_OF: &str = "2026-06-01T00:00:00Z";

#[test]
fn init_prints_paths_and_workspace_id() {
    let env = Env::new();
    let out = env.json(&["init"]);
    assert_eq!(keys(&out), ["memory_dir", "project", "workspace_id"]);
    let id = out["workspace_id"].as_str().unwrap();
    assert_eq!(id.len(), 16);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    let project = std::fs::canonicalize(env.project()).unwrap();
    assert_eq!(out["project"], project.to_str().unwrap());
    assert_eq!(out["memory_dir"], project.join(".workmem/memory").to_str().unwrap());
    assert!(env.memory().join("daily").is_dir());

    let human = env.text(&["init"]);
    assert!(human.contains(id), "{human}");
    assert!(human.contains(".workmem/memory"), "{human}");
    let quiet = env.text(&["init", "-q"]);
    assert_eq!(quiet.trim_end(), project.join(".workmem/memory").to_str().unwrap());
}

#[test]
fn remember_prints_the_stored_fact() {
    let env = Env::new();
    let fact = env.json(&[
        "remember",
        "  Use   Python 3.12 ",
        "-k",
        "decision",
        "-i",
        "4",
        "--key",
        " Runtime.Python-Version ",
        "-e",
        "file=pyproject.toml",
        "-e",
        "commit=abc=def",
        "--at",
        "2026-01-05T10:30:00+01:00",
        "--id",
        "py-1",
    ]);
    assert_eq!(keys(&fact), FACT_KEYS);
    assert_eq!(fact["content"], "Use Python 3.12");
    assert_eq!(fact["kind"], "decision");
    assert_eq!(fact["importance"], 4);
    assert_eq!(fact["memory_key"], "runtime.python-version");
    assert_eq!(fact["source"], "user");
    assert_eq!(
        fact["evidence"],
        serde_json::json!({"file": "pyproject.toml", "commit": "abc=def"})
    );
    assert_eq!(fact["recorded_at"], "2026-01-05T09:30:00Z");
    assert_eq!(fact["fact_id"], "py-1");
    assert_eq!(fact["schema_version"], 2);
    assert!(env.daily("2026-01-05").is_file());

    let defaults = env.json(&["remember", "tests pass"]);
    assert_eq!(defaults["kind"], "outcome");
    assert_eq!(defaults["importance"], 3);
    assert_eq!(defaults["source"], "user");
    assert_eq!(defaults["memory_key"], Value::Null);
    assert_eq!(defaults["fact_id"].as_str().unwrap().len(), 32);

    let human = env.text(&["remember", "built ok", "--id", "b-1", "--at", "2026-01-05T00:00:00Z"]);
    assert!(human.starts_with("remembered b-1 (outcome, importance 3"), "{human}");
    let quiet = env.text(&["remember", "built again", "--id", "b-2", "-q"]);
    assert_eq!(quiet, "b-2\n");
}

#[test]
fn facts_and_logs_list_what_was_recorded() {
    let env = Env::new();
    env.remember("first", "outcome", 3, None, "2026-01-01T08:00:00Z");
    env.remember("second", "decision", 4, Some("a.b"), "2026-01-01T09:00:00Z");
    env.remember("third", "pitfall", 2, None, "2026-01-03T09:00:00Z");
    let today = env.json(&["remember", "today's fact"]);

    let on_day = env.json(&["facts", "--day", "2026-01-01"]);
    let contents: Vec<&str> =
        on_day.as_array().unwrap().iter().map(|f| f["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["first", "second"]);
    assert_eq!(keys(&on_day[0]), FACT_KEYS);

    let all = env.json(&["facts", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 4);
    let recent = env.json(&["facts", "--recent", "2"]);
    let contents: Vec<&str> =
        recent.as_array().unwrap().iter().map(|f| f["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["third", "today's fact"]);
    let keyed = env.json(&["facts", "--all", "--key", "A.B"]);
    assert_eq!(keyed.as_array().unwrap().len(), 1);
    assert_eq!(keyed[0]["content"], "second");

    // Default: today's UTC day.
    let default = env.json(&["facts"]);
    assert_eq!(default.as_array().unwrap().len(), 1);
    assert_eq!(default[0]["fact_id"], today["fact_id"]);

    let human = env.text(&["facts", "--day", "2026-01-01"]);
    assert_eq!(human.lines().count(), 2);
    assert!(human.contains("2026-01-01T09:00:00Z  decision   4 a.b: second"), "{human}");
    assert_eq!(env.text(&["facts", "--day", "2025-12-31"]), "");

    env.cmd()
        .args(["facts", "--day", "../../etc/passwd"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--day"));
    env.cmd().args(["facts", "--day", "2026-02-30"]).assert().code(2);
    env.cmd().args(["facts", "--all", "--recent", "3"]).assert().code(2);

    let logs = env.json(&["logs"]);
    let logs = logs.as_array().unwrap();
    assert_eq!(logs.len(), 3);
    assert_eq!(logs[0], serde_json::json!({"day": "2026-01-01", "facts": 2}));
    assert_eq!(logs[1], serde_json::json!({"day": "2026-01-03", "facts": 1}));
    let human = env.text(&["logs"]);
    assert!(human.starts_with("2026-01-01  2 facts\n2026-01-03  1 fact\n"), "{human}");
}

#[test]
fn context_lists_pending_keyed_facts_with_pending_and_the_config_key() {
    let env = Env::new();
    env.cmd().args(["init", "-q"]).assert().success();
    env.remember("Shipped v1", "outcome", 3, None, "2026-01-01T09:00:00Z");
    for (n, at) in ["2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z", "2026-01-04T09:00:00Z"]
        .into_iter()
        .enumerate()
    {
        env.remember(&format!("Use Python 3.1{n}"), "decision", 4, Some("runtime.python"), at);
    }
    let heading = "# Pending Keyed Facts (recorded, not in the curated memory)";
    let recent = "# Recent Workspace Facts\n\n- [outcome] Shipped v1 (2026-01-01)";
    let claims = [
        "- [decision] runtime.python: Use Python 3.10 (2026-01-02)",
        "- [decision] runtime.python: Use Python 3.11 (2026-01-03)",
        "- [decision] runtime.python: Use Python 3.12 (2026-01-04)",
    ];
    assert_eq!(env.text(&["context"]), format!("{recent}\n\n{heading}\n\n{}\n", claims.join("\n")));
    assert_eq!(
        env.text(&["context", "--pending", "2"]),
        format!("{recent}\n\n{heading}\n\n{}\n", claims[1..].join("\n"))
    );
    // 0 turns the part off: the context the teaching implementation prints.
    assert_eq!(env.text(&["context", "--pending", "0"]), format!("{recent}\n"));
    env.cmd().args(["context", "--pending", "101"]).assert().code(2);

    // The same from the configuration; the flag still wins.
    let config = env.project().join(".workmem/config.toml");
    std::fs::write(&config, "[context]\npending_facts = 1\n").unwrap();
    assert_eq!(env.text(&["context"]), format!("{recent}\n\n{heading}\n\n{}\n", claims[2]));
    assert_eq!(env.text(&["context", "--pending", "0"]), format!("{recent}\n"));
    std::fs::write(&config, "[context]\npending_facts = 0\n").unwrap();
    assert_eq!(env.text(&["context"]), format!("{recent}\n"));
    std::fs::write(&config, "[context]\npending_facts = 101\n").unwrap();
    let out = env.cmd().arg("context").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`context.pending_facts` must be an integer from 0 to 100"),
        "{stderr}"
    );
}

#[test]
fn distill_memory_context_and_conflicts() {
    let env = Env::new();
    seed_story(&env);

    let report = env.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(keys(&report), REPORT_KEYS);
    assert_eq!(report["created"], 1);
    assert_eq!(report["conflicts"], 1);
    assert_eq!(report["queued_conflicts"], 1);
    let case_id = report["conflict_case_ids"][0].as_str().unwrap().to_owned();
    assert!(case_id.starts_with("conflict-"));

    let memory = env.json(&["memory"]);
    assert_eq!(keys(&memory), ["memory"]);
    let text = memory["memory"].as_str().unwrap();
    assert!(text.starts_with("# Workspace Memory\n"), "{text}");
    assert!(text.contains("- Use WAL mode (seen 1x; evidence: 1)"), "{text}");
    assert_eq!(env.text(&["memory"]), text);

    let context = env.json(&["context"]);
    assert_eq!(keys(&context), ["context"]);
    let text = context["context"].as_str().unwrap();
    assert!(text.contains("# Recent Workspace Facts"), "{text}");
    assert!(text.contains("- [outcome] Released 0.1 (2026-01-02)"), "{text}");
    // Keyed raw facts never reach the curated part or the recent facts;
    // the context lists them last, as pending claims.
    let (main, pending) = text
        .split_once("\n\n# Pending Keyed Facts (recorded, not in the curated memory)\n\n")
        .expect("pending keyed facts");
    assert!(!main.contains("nextest"), "a keyed raw fact outside its part: {text}");
    assert!(pending.contains("- [convention] test.runner: Use nextest (2026-01-03)"), "{text}");
    let without_pending = env.json(&["context", "--pending", "0"]);
    assert_eq!(without_pending["context"].as_str().unwrap(), main);
    let without_recent = env.json(&["context", "--recent", "0"]);
    assert!(!without_recent["context"].as_str().unwrap().contains("Recent Workspace Facts"));
    assert!(env.text(&["context"]).contains("- Use WAL mode"));

    let open = env.json(&["conflicts"]);
    let open = open.as_array().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["conflict_id"], case_id.as_str());
    assert_eq!(open[0]["status"], "open");
    assert_eq!(open[0]["memory_key"], "test.runner");
    assert_eq!(open[0]["candidates"].as_array().unwrap().len(), 2);
    for field in ["fingerprint", "observed_fact_ids", "revision", "detected_at", "workspace_id"] {
        assert!(open[0].get(field).is_some(), "case lacks {field}");
    }
    assert_eq!(env.json(&["conflicts", "--status", "all"]).as_array().unwrap().len(), 1);
    assert_eq!(env.json(&["conflicts", "--status", "resolved"]).as_array().unwrap().len(), 0);
    assert_eq!(env.json(&["conflicts", "--status", "superseded"]).as_array().unwrap().len(), 0);
    env.cmd().args(["conflicts", "--status", "closed"]).assert().code(2);
    let human = env.text(&["conflicts"]);
    assert!(
        human.contains(&case_id)
            && human.contains("Use nextest")
            && human.contains("Use cargo test"),
        "{human}"
    );

    let human = env.text(&["distill", "--as-of", AS_OF]);
    assert!(human.contains("scanned") && human.contains(&case_id), "{human}");
    assert!(human.contains("nothing changed"), "{human}");
}

#[test]
fn distill_policy_flags_are_applied_and_validated() {
    let env = Env::new();
    env.remember("Young and minor", "pitfall", 2, None, "2026-05-31T00:00:00Z");
    let strict = env.json(&["distill", "--as-of", AS_OF, "--dry-run"]);
    assert_eq!(strict["scanned"], 0);
    let loose = env.json(&[
        "distill",
        "--as-of",
        AS_OF,
        "--dry-run",
        "--min-age-days",
        "0",
        "--min-importance",
        "2",
    ]);
    assert_eq!(loose["scanned"], 1);
    assert_eq!(loose["created"], 1);
    let repeat = env.json(&[
        "distill",
        "--as-of",
        AS_OF,
        "--dry-run",
        "--min-age-days",
        "0",
        "--repeat",
        "1",
    ]);
    assert_eq!(repeat["created"], 1);

    for (flag, value, field) in [
        ("--min-importance", "9", "minimum_importance"),
        ("--repeat", "0", "repeat_threshold"),
        ("--supersede-repeat", "1", "supersession_repeat_threshold"),
        ("--as-of", "yesterday", "--as-of"),
    ] {
        env.cmd()
            .args(["distill", flag, value])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(field));
    }
}

#[test]
fn project_is_discovered_from_a_subdirectory_holding_workmem() {
    let env = Env::new();
    let outer = env.root().join("outer");
    // An inner .git must not win over an outer .workmem.
    let deep = outer.join("inner/src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::create_dir_all(outer.join("inner/.git")).unwrap();
    let init =
        env.cmd_in(&outer).args(["init", "--json"]).assert().success().get_output().stdout.clone();
    let init: Value = serde_json::from_slice(&init).unwrap();

    let from_deep =
        env.cmd_in(&deep).args(["init", "--json"]).assert().success().get_output().stdout.clone();
    let from_deep: Value = serde_json::from_slice(&from_deep).unwrap();
    assert_eq!(from_deep, init);
    env.cmd_in(&deep)
        .args(["remember", "found it", "--at", "2026-01-01T00:00:00Z"])
        .assert()
        .success();
    assert!(outer.join(".workmem/memory/daily/2026-01-01.jsonl").is_file());
    assert!(!deep.join(".workmem").exists());
    assert!(!outer.join("inner/.workmem").exists());
}

#[test]
fn project_falls_back_to_the_nearest_git_directory() {
    let env = Env::new();
    let sub = env.project().join("src/module");
    std::fs::create_dir_all(&sub).unwrap();
    let out =
        env.cmd_in(&sub).args(["init", "--json"]).assert().success().get_output().stdout.clone();
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["project"], std::fs::canonicalize(env.project()).unwrap().to_str().unwrap());
    assert!(env.memory().is_dir());

    // -C wins over discovery, and must name a directory.
    let other = env.root().join("other");
    std::fs::create_dir(&other).unwrap();
    env.cmd_in(&sub).args(["-C", "../../../other", "init"]).assert().success();
    assert!(other.join(".workmem/memory").is_dir());
    // The path is not repeated: what names nothing may be a credential.
    env.cmd()
        .args(["-C", "missing", "init"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-C/--project does not exist"))
        .stderr(predicate::str::contains("missing").not());
}

#[test]
fn memory_dir_flag_and_environment_redirect_the_store() {
    let env = Env::new();
    env.cmd()
        .args(["--memory-dir", "../store", "remember", "via flag", "--at", "2026-01-01T00:00:00Z"])
        .assert()
        .success();
    assert!(env.root().join("store/daily/2026-01-01.jsonl").is_file());
    assert!(!env.project().join(".workmem").exists());

    let env_dir = env.root().join("env-store");
    env.cmd()
        .env("WORKMEM_MEMORY_DIR", &env_dir)
        .args(["remember", "via env", "--at", "2026-01-02T00:00:00Z"])
        .assert()
        .success();
    assert!(env_dir.join("daily/2026-01-02.jsonl").is_file());
    assert!(!env.project().join(".workmem").exists());

    let listed = env
        .cmd()
        .env("WORKMEM_MEMORY_DIR", &env_dir)
        .args(["facts", "--all", "--json"])
        .assert()
        .success();
    let listed: Value = serde_json::from_slice(&listed.get_output().stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["content"], "via env");

    // The flag overrides the environment.
    let init = env
        .cmd()
        .env("WORKMEM_MEMORY_DIR", &env_dir)
        .args(["--memory-dir", "../store", "init", "--json"])
        .assert()
        .success();
    let init: Value = serde_json::from_slice(&init.get_output().stdout).unwrap();
    let store = std::fs::canonicalize(env.root().join("store")).unwrap();
    assert_eq!(init["memory_dir"], store.to_str().unwrap());
}

#[test]
fn invalid_remember_input_exits_2_names_the_field_and_writes_nothing() {
    let env = Env::new();
    let too_long = "x".repeat(2001);
    // Built at run time so the source holds no token-shaped string.
    let secret = format!("push with ghp_{}", "a1".repeat(18));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![""], "content"),
        (vec![" \t "], "content"),
        (vec![&too_long], "content"),
        (vec![&secret], "secret"),
        (vec!["x", "-i", "0"], "importance"),
        (vec!["x", "-i", "6"], "importance"),
        (vec!["x", "-k", "idea"], "kind"),
        (vec!["x", "--key", "Bad Key"], "memory_key"),
        (vec!["x", "--key", "9lives"], "memory_key"),
        (vec!["x", "--id=-leading-dash"], "fact_id"),
        (vec!["x", "--id", ".dot"], "fact_id"),
        (vec!["x", "--id", "has space"], "fact_id"),
        (vec!["x", "--at", "2026-01-01"], "recorded_at"),
        (vec!["x", "--at", "2026-01-01T00:00:00"], "recorded_at"),
        (vec!["x", "--at", "2026-13-01T00:00:00Z"], "recorded_at"),
    ];
    // Once on a fresh project (nothing may be created), once on a
    // workspace holding a fact (nothing may change).
    for populated in [false, true] {
        if populated {
            env.remember("existing", "outcome", 3, None, "2026-01-01T00:00:00Z");
        }
        let before = snapshot(env.root());
        for (args, field) in &cases {
            env.cmd()
                .arg("remember")
                .args(args)
                .assert()
                .code(2)
                .stderr(predicate::str::contains(*field));
            let json = env.cmd().arg("remember").args(args).arg("--json").assert().code(2);
            let error: Value = serde_json::from_slice(&json.get_output().stderr).unwrap();
            assert_eq!(error["error"]["kind"], "invalid_input", "{args:?}");
            assert!(error["error"]["message"].as_str().unwrap().contains(field), "{args:?}");
            assert!(json.get_output().stdout.is_empty());
            assert_eq!(snapshot(env.root()), before, "{args:?} changed the tree");
        }
    }
}

#[test]
fn content_of_exactly_2000_characters_is_accepted() {
    let env = Env::new();
    // Multi-byte characters: the limit counts characters, not bytes.
    let content = "\u{e9}".repeat(2000);
    let fact = env.json(&["remember", &content]);
    assert_eq!(fact["content"].as_str().unwrap().chars().count(), 2000);
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    env.cmd().assert().code(2);
    env.cmd().args(["frobnicate"]).assert().code(2);
    env.cmd().args(["remember"]).assert().code(2);
    env.cmd()
        .args(["remember", "x", "-i", "many"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--importance"));
    env.cmd()
        .args(["remember", "x", "-e", "novalue"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("KEY=VALUE"));
    env.cmd()
        .args(["remember", "x", "-e", "a=1", "-e", "a=2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("evidence"));
    let json = env.cmd().args(["remember", "x", "--bogus", "--json"]).assert().code(2);
    let error: Value = serde_json::from_slice(&json.get_output().stderr).unwrap();
    assert_eq!(error["error"]["kind"], "usage");
    let message = error["error"]["message"].as_str().unwrap();
    assert_eq!(message, "unexpected argument starting with '-' found");
    assert!(!env.project().join(".workmem").exists());
}

#[test]
fn help_documents_exit_codes_environment_and_examples() {
    let env = Env::new();
    let help = env.text(&["--help"]);
    for needle in [
        "Exit codes:",
        "WORKMEM_MEMORY_DIR",
        "4  corruption",
        "5  scope error",
        "6  resolution rejected",
    ] {
        assert!(help.contains(needle), "top-level help lacks {needle:?}");
    }
    for command in [
        "init",
        "remember",
        "import",
        "facts",
        "logs",
        "distill",
        "memory",
        "context",
        "conflicts",
        "demo",
    ] {
        let help = env.text(&[command, "--help"]);
        assert!(help.contains("Examples:"), "{command} --help lacks examples");
        assert!(
            help.contains(&format!("workmem {command}")),
            "{command} --help has no example of itself"
        );
        let summary = help.lines().next().unwrap();
        assert!(!summary.ends_with('.'), "{command}: {summary:?}");
    }
}

#[test]
fn import_with_one_bad_line_exits_2_names_the_line_and_writes_nothing() {
    let env = Env::new();
    env.cmd().arg("init").assert().success();
    let good = r#"{"content": "good", "kind": "decision", "importance": 4, "recorded_at": "2026-01-01T00:00:00Z"}"#;
    let cases = [
        (r#"{"content": "bad", "importance": 9}"#, "importance on line 3"),
        (r#"{"content": "bad", "colour": "red"}"#, "line 3"),
        (r#"{"content": "#, "line 3"),
        (r#"{"content": "bad", "memory_key": "No Way"}"#, "memory_key on line 3"),
        (r#"{"content": "bad", "fact_id": "dup"}"#, "fact_id on line 5"),
    ];
    let before = snapshot(env.root());
    for (bad, expected) in cases {
        // Line 2 is blank; with the last case, "dup" appears twice.
        let input =
            format!("{good}\n\n{bad}\n{good}\n{}\n", r#"{"content": "also", "fact_id": "dup"}"#);
        let file = env.root().join("home/facts.jsonl");
        std::fs::write(&file, &input).unwrap();
        let before_with_file = snapshot(env.root());
        env.cmd().args(["import", file.to_str().unwrap()]).assert().code(2).stderr(
            predicate::str::contains(expected).and(predicate::str::contains("facts.jsonl")),
        );
        env.cmd()
            .args(["import", "-", "--json"])
            .write_stdin(input)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expected));
        assert_eq!(snapshot(env.root()), before_with_file, "{bad}");
        std::fs::remove_file(&file).unwrap();
    }
    assert_eq!(snapshot(env.root()), before);
}

#[test]
fn import_appends_every_fact_of_a_good_file() {
    let env = Env::new();
    let mut input = String::new();
    for day in 1..=3 {
        let _ = writeln!(
            input,
            "{{\"content\": \"fact {day}\", \"kind\": \"pitfall\", \"importance\": 2, \"memory_key\": null, \
             \"source\": \"ci\", \"evidence\": {{\"run\": \"{day}\"}}, \"recorded_at\": \"2026-01-0{day}T00:00:00Z\", \
             \"fact_id\": \"imp-{day}\"}}"
        );
    }
    let file = env.root().join("home/good.jsonl");
    std::fs::write(&file, &input).unwrap();
    let out = env.json(&["import", file.to_str().unwrap()]);
    assert_eq!(out, serde_json::json!({"imported": 3, "already_present": 0}));
    let all = env.json(&["facts", "--all"]);
    let ids: Vec<&str> =
        all.as_array().unwrap().iter().map(|f| f["fact_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["imp-1", "imp-2", "imp-3"]);
    assert_eq!(all[0]["source"], "ci");
    assert_eq!(all[0]["evidence"]["run"], "1");

    // Re-importing identical facts with explicit ids stores nothing twice.
    let again = env.cmd().args(["import", "--json"]).write_stdin(input).assert().success();
    let again: Value = serde_json::from_slice(&again.get_output().stdout).unwrap();
    assert_eq!(again, serde_json::json!({"imported": 0, "already_present": 3}));
    assert_eq!(env.json(&["facts", "--all"]).as_array().unwrap().len(), 3);

    let human = env
        .cmd()
        .args(["import", "-"])
        .write_stdin("{\"content\": \"from stdin\"}\n")
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&human.get_output().stdout), "imported 1 fact\n");
}

#[test]
fn a_fact_of_another_workspace_is_a_scope_error() {
    let env = Env::new();
    env.remember("mine", "outcome", 3, None, "2026-01-01T00:00:00Z");
    let foreign = r#"{"content": "theirs", "evidence": {}, "fact_id": "f-1", "importance": 3, "kind": "outcome", "memory_key": null, "recorded_at": "2026-01-02T00:00:00Z", "schema_version": 2, "source": "agent", "workspace_id": "0000000000000000"}"#;
    std::fs::write(env.daily("2026-01-02"), format!("{foreign}\n")).unwrap();
    env.cmd().args(["facts", "--all"]).assert().code(5).stderr(
        predicate::str::contains("2026-01-02.jsonl:1")
            .and(predicate::str::contains("0000000000000000")),
    );
    let json = env.cmd().args(["facts", "--all", "--json"]).assert().code(5);
    let error: Value = serde_json::from_slice(&json.get_output().stderr).unwrap();
    assert_eq!(error["error"]["kind"], "scope");
}

#[test]
fn garbage_inside_a_daily_log_is_corruption_naming_file_and_line() {
    let env = Env::new();
    env.remember("one", "outcome", 3, None, "2026-01-01T00:00:00Z");
    let path = env.daily("2026-01-01");
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{good}this is not json\n{good}")).unwrap();
    for args in [
        &["facts", "--all"][..],
        &["facts", "--day", "2026-01-01"],
        &["logs"],
        &["distill", "--dry-run"],
    ] {
        env.cmd().args(args).assert().code(4).stderr(
            predicate::str::contains("2026-01-01.jsonl:2").and(predicate::str::contains("error:")),
        );
    }
}

#[test]
fn a_torn_final_line_is_ignored() {
    let env = Env::new();
    env.remember("complete", "outcome", 3, None, "2026-01-01T00:00:00Z");
    let path = env.daily("2026-01-01");
    let good = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{good}{{\"content\": \"torn")).unwrap();
    let all = env.json(&["facts", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 1);
    // The next append repairs the tail instead of fusing with it.
    env.remember("after the crash", "outcome", 3, None, "2026-01-01T01:00:00Z");
    let all = env.json(&["facts", "--all"]);
    let contents: Vec<&str> =
        all.as_array().unwrap().iter().map(|f| f["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["complete", "after the crash"]);
}

#[cfg(unix)]
#[test]
fn a_relative_path_and_a_symlink_give_the_same_workspace_id() {
    let env = Env::new();
    let link = env.root().join("link");
    std::os::unix::fs::symlink(env.project(), &link).unwrap();
    let id = |dir: &Path, project: &str| {
        let out = env.cmd_in(dir).args(["-C", project, "init", "--json"]).assert().success();
        let out: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        out["workspace_id"].as_str().unwrap().to_owned()
    };
    let absolute = id(env.root(), env.project().to_str().unwrap());
    assert_eq!(id(env.root(), "project"), absolute);
    assert_eq!(id(&env.project().join(".git"), ".."), absolute);
    assert_eq!(id(env.root(), "link"), absolute);
    assert_eq!(id(env.root(), "./link/."), absolute);
    assert_ne!(id(env.root(), "home"), absolute);
}

#[test]
fn demo_tells_the_story_and_exits_0() {
    let env = Env::new();
    let started = std::time::Instant::now();
    let out = env.text(&["demo"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    for needle in [
        "waiting for age",
        "not a stable kind: outcome facts",
        "below the thresholds",
        "needs more evidence",
        "one newer fact is not enough",
        "tied with an equally strong value",
        "revision 2 active",
        "superseded by",
        "conflict-",
        "candidate-",
        "awaits a human",
        "adjudication demo-decision-1",
        "The case is now resolved",
        "# Recent Workspace Facts",
        "nothing was rewritten",
    ] {
        assert!(out.contains(needle), "demo output lacks {needle:?}:\n{out}");
    }
    assert!(!env.project().join(".workmem").exists(), "the demo must not touch the project");

    let dir = env.root().join("kept");
    env.cmd().args(["demo", "--dir", dir.to_str().unwrap()]).assert().success();
    assert!(dir.join(".workmem/memory/curated.json").is_file());
    assert!(dir.join(".workmem/memory/conflicts.json").is_file());
    env.cmd().args(["demo", "--dir", dir.to_str().unwrap()]).assert().code(2);
}

#[test]
fn dry_run_writes_nothing() {
    let env = Env::new();
    seed_story(&env);
    let before = snapshot(env.root());
    let report = env.json(&["distill", "--as-of", AS_OF, "--dry-run"]);
    assert_eq!(report["created"], 1);
    assert_eq!(report["queued_conflicts"], 1);
    let human = env.cmd().args(["distill", "--as-of", AS_OF, "--dry-run"]).assert().success();
    assert!(String::from_utf8_lossy(&human.get_output().stderr).contains("dry run"));
    assert_eq!(snapshot(env.root()), before);
    assert!(!env.memory().join("curated.json").exists());
}

#[test]
fn a_second_identical_distill_rewrites_nothing() {
    let env = Env::new();
    seed_story(&env);
    env.json(&["distill", "--as-of", AS_OF]);
    let files = ["curated.json", "MEMORY.md", "conflicts.json"];
    let stat = |name: &str| {
        let path = env.memory().join(name);
        let meta = std::fs::metadata(&path).unwrap();
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        (std::fs::read(&path).unwrap(), meta.modified().unwrap(), inode)
    };
    let before: Vec<_> = files.iter().map(|name| stat(name)).collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let report = env.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["created"], 0);
    assert_eq!(report["queued_conflicts"], 0);
    let after: Vec<_> = files.iter().map(|name| stat(name)).collect();
    assert!(before == after, "a no-op distill rewrote a state file");
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_is_a_silent_success() {
    use std::io::Read;
    use std::process::Stdio;

    let env = Env::new();
    let mut input = String::new();
    for i in 0..3000 {
        let _ = writeln!(
            input,
            "{{\"content\": \"fact number {i} with some padding to fill the pipe\", \"recorded_at\": \"2026-01-01T00:00:00Z\"}}"
        );
    }
    env.cmd().args(["import", "-"]).write_stdin(input).assert().success();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_workmem"))
        .args(["facts", "--all"])
        .env_clear()
        .current_dir(env.project())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn a_moved_checkout_is_refused_with_exit_5_naming_both_ids_and_nothing_is_written() {
    let env = Env::new();
    let old_id = env.json(&["init"])["workspace_id"].as_str().unwrap().to_owned();
    env.remember("Use WAL mode", "decision", 4, None, "2026-01-01T00:00:00Z");
    let moved = env.root().join("moved");
    std::fs::rename(env.project(), &moved).unwrap();
    let new_id =
        env.cmd_in(&moved).args(["init", "--json"]).assert().code(0).get_output().stdout.clone();
    let new_id = serde_json::from_slice::<Value>(&new_id).unwrap()["workspace_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = snapshot(&moved.join(".workmem"));
    for at in ["2026-01-01T05:00:00Z", "2026-01-09T00:00:00Z"] {
        let out = env
            .cmd_in(&moved)
            .args(["remember", "x", "--at", at])
            .assert()
            .code(5)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&old_id) && stderr.contains(&new_id), "{stderr}");
        assert!(stderr.contains("2026-01-01.jsonl"), "{stderr}");
    }
    env.cmd_in(&moved).args(["remember", "y", "--id", "y-1"]).assert().code(5);
    assert_eq!(snapshot(&moved.join(".workmem")), before, "a refused append wrote");
    // Moved back, the memory reads and writes as before.
    std::fs::rename(&moved, env.project()).unwrap();
    env.cmd()
        .args(["facts", "--all"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Use WAL mode"));
    env.cmd().args(["remember", "z"]).assert().success();
}

#[test]
fn outside_a_project_only_init_creates_a_workspace() {
    let env = Env::new();
    let bare = env.root().join("bare");
    std::fs::create_dir(&bare).unwrap();
    for args in
        [&["remember", "x"][..], &["distill"], &["facts"], &["context"], &["import", "-"], &["mcp"]]
    {
        let out = env.cmd_in(&bare).args(args).assert().code(2).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("not inside a project") && stderr.contains("workmem init"),
            "{args:?}: {stderr}"
        );
        assert!(!bare.join(".workmem").exists(), "{args:?} created a workspace");
    }
    // -C names a directory, not a project: the same rule applies.
    env.cmd().args(["-C", "../bare", "remember", "x"]).assert().code(2);
    assert!(!bare.join(".workmem").exists());
    // An explicit memory directory is a workspace named by the user.
    let store = env.root().join("store");
    env.cmd_in(&bare)
        .args(["--memory-dir", store.to_str().unwrap(), "remember", "x"])
        .assert()
        .success();
    // init creates one, and then every command works there.
    env.cmd_in(&bare).arg("init").assert().success();
    env.cmd_in(&bare).args(["remember", "x"]).assert().success();
    env.cmd_in(&bare).args(["facts"]).assert().success().stdout(predicate::str::contains("x"));
}

#[test]
fn the_mcp_server_never_serves_the_root_or_home_implicitly() {
    let env = Env::new();
    let home = env.root().join("home");
    // A home directory that is a project (a dotfiles repository).
    std::fs::create_dir(home.join(".git")).unwrap();
    for dir in [Path::new("/"), home.as_path()] {
        let out = env.cmd_in(dir).arg("mcp").assert().code(2).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("refusing to serve") || stderr.contains("not inside a project"),
            "{stderr}"
        );
        assert!(stderr.contains("-C"), "{stderr}");
    }
    assert!(!home.join(".workmem").exists());
    // Named explicitly, the home project is served (until stdin closes).
    env.cmd_in(&home).args(["-C", ".", "mcp"]).write_stdin("").assert().success();
}

/// Every file and directory below `dir` with its bytes (files) and mtime:
/// a rewrite, a replacement, a new file or a new directory all show.
fn snapshot_with_times(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let meta = std::fs::metadata(&next).unwrap();
        out.insert(next.strip_prefix(dir).unwrap().to_path_buf(), (None, meta.modified().unwrap()));
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                out.insert(
                    path.strip_prefix(dir).unwrap().to_path_buf(),
                    (Some(std::fs::read(&path).unwrap()), modified),
                );
            }
        }
    }
    out
}

const JOURNAL: &str = "conflict-resolution-transactions.jsonl";
const AUDIT: &str = "conflict-adjudications.jsonl";

/// The story with its tie being resolved by a process killed at
/// `failpoint` (the binary is built with `--features failpoints`): with
/// `after_conflict_closed`, the canonical files hold the decision, the
/// audit stream does not, and the journal holds three phases.
fn resolve_crashed_at(env: &Env, failpoint: &str) {
    seed_story(env);
    let report = env.json(&["distill", "--as-of", AS_OF]);
    let case_id = report["conflict_case_ids"][0].as_str().unwrap().to_owned();
    let cases = env.json(&["conflicts"]);
    let candidate = cases[0]["candidates"][0]["candidate_id"].as_str().unwrap().to_owned();
    let revision = cases[0]["revision"].to_string();
    env.cmd().args(["verify"]).assert().success();
    let out = env
        .cmd()
        .env("WORKMEM_FAILPOINT", failpoint)
        .args([
            "resolve",
            &case_id,
            &candidate,
            "--revision",
            &revision,
            "--event-id",
            "e1",
            "--actor",
            "Ada",
            "--rationale",
            "Faster",
            "--at",
            "2026-06-02T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(6),
        "resolve did not abort at {failpoint} (built without --features failpoints?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `verify --json`, checks it exits 4 and changed nothing, and
/// returns its problems.
fn verify_problems(env: &Env) -> Vec<Value> {
    let before = snapshot_with_times(&env.project());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = env.cmd().args(["verify", "--json"]).assert().code(4).get_output().clone();
    assert_eq!(snapshot_with_times(&env.project()), before, "verify changed the project");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(keys(&report), ["ok", "problems"]);
    assert_eq!(report["ok"], false);
    let problems = report["problems"].as_array().unwrap().clone();
    for problem in &problems {
        assert_eq!(keys(problem), ["file", "line", "message"]);
    }
    problems
}

#[test]
fn verify_reports_an_unfinished_transaction_instead_of_recovering_it() {
    let env = Env::new();
    resolve_crashed_at(&env, "after_conflict_closed");
    assert!(!env.memory().join(AUDIT).exists(), "the crash came before the audit write");
    let problems = verify_problems(&env);
    assert!(
        problems.iter().any(|p| p["file"].as_str().unwrap().ends_with(JOURNAL)
            && p["line"] == 1
            && p["message"]
                .as_str()
                .unwrap()
                .contains("is not committed (last phase conflict_closed)")),
        "{problems:?}"
    );
    // Text mode: the same list as `file:line: message`, still no write.
    let before = snapshot_with_times(&env.project());
    env.cmd()
        .arg("verify")
        .assert()
        .code(4)
        .stdout(predicate::str::contains(format!("{JOURNAL}:1: transaction resolution-")));
    assert_eq!(snapshot_with_times(&env.project()), before);
    // The next ordinary command recovers and compacts the journal; then
    // verify is clean.
    env.json(&["facts", "--all"]);
    assert_eq!(std::fs::read(env.memory().join(JOURNAL)).unwrap(), b"");
    env.cmd().args(["verify", "--json"]).assert().success();
}

#[test]
fn verify_lists_a_tampered_intent_as_a_problem() {
    let env = Env::new();
    resolve_crashed_at(&env, "after_prepared");
    let journal = env.memory().join(JOURNAL);
    let mut prepared: Value =
        serde_json::from_str(std::fs::read_to_string(&journal).unwrap().trim_end()).unwrap();
    prepared["intent"]["adjudication"]["rationale"] = Value::from("edited");
    std::fs::write(&journal, format!("{prepared}\n")).unwrap();
    let problems = verify_problems(&env);
    assert!(
        problems.iter().any(|p| p["file"].as_str().unwrap().ends_with(JOURNAL)
            && p["line"] == 1
            && p["message"].as_str().unwrap().contains("intent was modified")),
        "{problems:?}"
    );
}

#[test]
fn verify_of_a_missing_memory_directory_is_a_problem_and_creates_nothing() {
    let env = Env::new();
    let problems = verify_problems(&env);
    assert!(
        problems.iter().any(|p| p["file"].as_str().unwrap().ends_with(".workmem/memory")
            && p["message"].as_str().unwrap().contains("memory directory does not exist")),
        "{problems:?}"
    );
    assert!(!env.project().join(".workmem").exists());
}

/// Returns the first character of `text` a terminal could act on: a control
/// character other than newline and tab, or a format character (bidi
/// overrides, zero-width characters, the byte order mark).
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
    })
}

/// Issue 12, item 7: control and format characters are refused in every
/// text field of `remember` (exit 2, nothing written), and text output
/// never writes one raw, even when it comes from a file workmem shows as is
/// or from an error message quoting hostile input.
#[test]
fn control_characters_are_refused_and_never_printed_raw() {
    let env = Env::new();
    env.remember("existing", "outcome", 3, None, "2026-01-01T00:00:00Z");
    let before = snapshot(env.root());
    let cases: [(&[&str], &str); 5] = [
        (&["Read \u{202e}txt.exe"], "content"),
        (&["x", "--source", "us\u{200b}er"], "source"),
        (&["x", "--source", "user\u{1b}]0;pwned\u{7}"], "source"),
        (&["x", "-e", "file=a.rs\u{1b}]0;pwned\u{7}"], "evidence"),
        (&["x", "-e", "fi\u{9b}le=a.rs"], "evidence"),
    ];
    for (args, field) in cases {
        let out = env.cmd().arg("remember").args(args).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains(field), "{args:?}: {stderr}");
        assert_eq!(raw_control(&stderr), None, "{args:?}: raw control character in {stderr:?}");
        assert_eq!(snapshot(env.root()), before, "{args:?} changed the tree");
    }
    // MEMORY.md without curated.json is never served, escapes or not.
    std::fs::write(
        env.memory().join("MEMORY.md"),
        "# Workspace Memory\n\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{9b}31m\u{202e}gnp.exe\n",
    )
    .unwrap();
    for command in ["memory", "context"] {
        let stdout = env.text(&[command]);
        assert_eq!(raw_control(&stdout), None, "{command}: raw control character in {stdout:?}");
        assert!(!stdout.contains("pwned"), "{command}: {stdout:?}");
    }
    // An error message quoting hostile input (an unknown configuration key).
    std::fs::write(env.project().join(".workmem/config.toml"), "\"\\u001b]0;pwned\\u0007\" = 1\n")
        .unwrap();
    let out = env.cmd().args(["facts"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("config.toml"), "{stderr}");
    assert_eq!(raw_control(&stderr), None, "raw control character in {stderr:?}");
}

/// A fake AWS credentials file (the documented example keys).
const CREDENTIALS: &str = "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
                           aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";

/// Asserts `stderr` repeats nothing of [`CREDENTIALS`]' values.
fn assert_no_credential(stderr: &str, label: &str) {
    for needle in ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "EXAMPLEKEY"] {
        assert!(!stderr.contains(needle), "{label}: the error quotes the file: {stderr}");
    }
}

/// Issue 12, item 6: a `.workmem/config.toml` linked to a credentials file
/// is refused by every command without printing a byte of it, and a
/// configuration error in a regular file names file, line, column and key
/// but never the content.
#[test]
fn a_symlinked_config_is_refused_and_config_errors_never_quote_the_file() {
    let env = Env::new();
    env.remember("existing", "outcome", 3, None, "2026-01-01T00:00:00Z");
    let aws = env.root().join("home/.aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(aws.join("credentials"), CREDENTIALS).unwrap();
    let config = env.project().join(".workmem/config.toml");
    std::os::unix::fs::symlink(aws.join("credentials"), &config).unwrap();
    let before = snapshot(&env.memory());
    for args in
        [&["facts", "--all"][..], &["context"], &["distill"], &["remember", "x"], &["verify"]]
    {
        let out = env.cmd().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
        assert!(
            stderr.contains("config.toml") && stderr.contains("symbolic link"),
            "{args:?}: {stderr}"
        );
        assert_no_credential(&stderr, &format!("{args:?}"));
        assert_eq!(snapshot(&env.memory()), before, "{args:?} changed the memory directory");
    }
    // The same text in a regular file: a TOML error with place and key.
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, CREDENTIALS).unwrap();
    let out = env.cmd().args(["facts", "--all"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("config.toml:2:"), "no line and column: {stderr}");
    assert!(stderr.contains("aws_access_key_id"), "no key: {stderr}");
    assert_no_credential(&stderr, "TOML error");
    // A value of the wrong type: place and key, not the value.
    std::fs::write(&config, "[policy]\nminimum_importance = \"hunter2-is-my-password\"\n").unwrap();
    let out = env.cmd().args(["facts", "--all", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("config.toml:2:22") && stderr.contains("`policy.minimum_importance`"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "the error quotes the value: {stderr}");
    // A FIFO is refused without blocking.
    std::fs::remove_file(&config).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&config).status().unwrap().success());
    let out = env
        .cmd()
        .args(["facts", "--all"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("config.toml") && stderr.contains("not a regular file"), "{stderr}");
}

/// Issue 12, item 6: a symlinked `.workmem` or `.workmem/memory` is refused
/// (nothing is written through it); a memory directory named explicitly
/// may be a link.
#[test]
fn a_symlinked_workmem_or_memory_directory_is_refused_unless_named() {
    for linked in [".workmem", ".workmem/memory"] {
        let env = Env::new();
        let outside = env.root().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let link = env.project().join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        for args in
            [&["remember", "Written outside?"][..], &["init"], &["facts", "--all"], &["distill"]]
        {
            let out = env.cmd().args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(4), "{linked} {args:?}: {stderr}");
            assert!(
                stderr.contains(linked) && stderr.contains("symbolic link"),
                "{linked} {args:?}: {stderr}"
            );
            assert_eq!(
                std::fs::read_dir(&outside).unwrap().count(),
                0,
                "{linked} {args:?} wrote outside"
            );
        }
    }
    // Named explicitly, a linked memory directory is the user's choice.
    let env = Env::new();
    let outside = env.root().join("store");
    std::fs::create_dir_all(&outside).unwrap();
    let link = env.root().join("store-link");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    env.cmd().args(["remember", "Named store."]).arg("--memory-dir").arg(&link).assert().success();
    env.cmd()
        .args(["remember", "Named store, env."])
        .env("WORKMEM_MEMORY_DIR", &link)
        .assert()
        .success();
    assert!(outside.join("daily").is_dir());
}

/// Issue 12, item 11: instants outside what workmem can store, and offsets
/// outside RFC 3339's -23:59..+23:59, are invalid input (exit 2) with a
/// clear message; the latest storable instant works through distill and
/// explain without an arithmetic overflow.
#[test]
fn late_year_9999_instants_and_bad_offsets_are_invalid_input() {
    let env = Env::new();
    let cases: [(&[&str], &str); 6] = [
        (&["remember", "x", "--at", "9999-12-31T23:59:59Z"], "outside the supported range"),
        (&["remember", "x", "--at", "9999-12-31T12:00:00+00:00"], "outside the supported range"),
        (&["remember", "x", "--at", "2026-01-01T00:00:00+25:00"], "-23:59 to +23:59"),
        (&["remember", "x", "--at", "2026-01-01T00:00:00-24:00"], "-23:59 to +23:59"),
        (&["distill", "--as-of", "9999-12-31T23:59:59Z"], "outside the supported range"),
        (&["distill", "--as-of", "2026-06-01T00:00:00+25:00"], "-23:59 to +23:59"),
    ];
    for (args, needle) in cases {
        let out = env.cmd().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("overflow") && !stderr.contains("parameter"),
            "{args:?}: internal message: {stderr}"
        );
    }
    // The latest storable instant: stored, and distill and explain at it
    // work (the fact waits for an age it can never reach).
    let late = "9999-12-30T21:00:00Z";
    let fact = env.json(&[
        "remember", "Late.", "-k", "decision", "-i", "5", "--key", "late.key", "--at", late,
    ]);
    let id = fact["fact_id"].as_str().unwrap().to_owned();
    let as_of = "9999-12-30T22:00:00Z";
    let report = env.json(&["distill", "--as-of", as_of]);
    assert_eq!(report["scanned"], 0, "{report}");
    let explained = env.json(&["explain", &id, "--as-of", as_of]);
    assert_eq!(explained["reason"], "waiting_for_age", "{explained}");
    env.cmd().args(["explain", "--key", "late.key", "--as-of", as_of]).assert().success();
    env.cmd().args(["distill", "--explain", "--as-of", as_of]).assert().success();
}

/// Runs `workmem args` in `env`'s project with the memory directory on a
/// read-only bind mount (a private mount namespace); `None` when this
/// machine cannot make one (not root, or no `unshare`).
fn run_on_read_only_mount(env: &Env, args: &[&str]) -> Option<std::process::Output> {
    let memory = env.memory();
    let script = format!(
        "mount --bind '{d}' '{d}' && mount -o remount,ro,bind '{d}' '{d}' && exec \"$0\" \"$@\"",
        d = memory.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script, env!("CARGO_BIN_EXE_workmem")])
        .args(args)
        .env_clear()
        .env("HOME", env.root().join("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(env.project())
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("unshare") || stderr.contains("mount:") {
        return None;
    }
    Some(out)
}

/// Issue 12, item 11: on a read-only mount, `memory` and `context` answer
/// from curated.json when MEMORY.md is stale, without writing.
#[test]
fn memory_and_context_answer_on_a_read_only_mount_with_a_stale_memory_md() {
    let env = Env::new();
    env.remember("Use WAL mode.", "decision", 5, None, "2026-01-01T00:00:00Z");
    env.cmd().args(["distill", "--as-of", "2026-06-01T00:00:00Z", "-q"]).assert().success();
    let expected = env.text(&["memory"]);
    assert!(expected.contains("Use WAL mode."), "{expected}");
    std::fs::write(env.memory().join("MEMORY.md"), "# Stale\n").unwrap();
    let before = snapshot(&env.memory());
    for command in ["memory", "context"] {
        // A test that cannot set itself up fails: it is never a silent pass.
        let out = run_on_read_only_mount(&env, &[command]).expect(
            "this test needs a read-only bind mount: run it as root with unshare (util-linux)",
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
        assert!(
            stdout.contains("Use WAL mode.") && !stdout.contains("# Stale"),
            "{command}: {stdout}"
        );
        assert_eq!(snapshot(&env.memory()), before, "{command} wrote on a read-only mount");
    }
    // The proof that the mount was read-only: a write fails there.
    let out = run_on_read_only_mount(&env, &["remember", "x"]).unwrap();
    assert_ne!(out.status.code(), Some(0));
    // Writable again, a read repairs MEMORY.md.
    assert_eq!(env.text(&["memory"]), expected);
    assert_eq!(std::fs::read_to_string(env.memory().join("MEMORY.md")).unwrap(), expected);
}

/// A project with one open tie on `test.runner`; returns the case.
fn tied_case(env: &Env) -> Value {
    seed_story(env);
    env.cmd().args(["distill", "--as-of", AS_OF, "-q"]).assert().success();
    env.json(&["conflicts"])[0].clone()
}

#[test]
fn resolve_generates_and_prints_an_event_id_that_a_retry_can_reuse() {
    let env = Env::new();
    let case = tied_case(&env);
    let conflict = case["conflict_id"].as_str().unwrap();
    let out = env
        .cmd()
        .args(["resolve", conflict, "1", "--revision", "1", "--rationale", "CI runs it"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let event_id = stderr
        .split_whitespace()
        .find(|word| word.starts_with("review:"))
        .unwrap_or_else(|| panic!("no event id printed: {stderr}"))
        .to_owned();
    // A recorded decision needs no retry: the flag is offered only when
    // an I/O failure leaves it unknown whether the decision was recorded.
    assert!(!stderr.contains("--event-id"), "{stderr}");
    // The retry with the printed id is the same decision, written once.
    let retry = env.json(&[
        "resolve",
        conflict,
        "1",
        "--revision",
        "1",
        "--rationale",
        "CI runs it",
        "--event-id",
        &event_id,
    ]);
    assert_eq!(retry["event_id"], event_id.as_str());
    assert_eq!(retry["selected_candidate_id"], case["candidates"][0]["candidate_id"]);
    let audit = std::fs::read_to_string(env.memory().join("conflict-adjudications.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 1);
}

#[test]
fn resolve_takes_a_candidate_by_number_and_refuses_a_number_out_of_range() {
    let env = Env::new();
    let case = tied_case(&env);
    let conflict = case["conflict_id"].as_str().unwrap();
    let before = snapshot(&env.memory());
    let out = env
        .cmd()
        .args(["resolve", conflict, "3", "--revision", "1", "--rationale", "r", "--event-id", "e1"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 is not a candidate number"));
    assert_eq!(snapshot(&env.memory()), before);
    let listed = env.text(&["conflicts"]);
    assert!(
        listed
            .contains(&format!("  2. {}", case["candidates"][1]["candidate_id"].as_str().unwrap()))
    );
    let decision = env.json(&[
        "resolve",
        conflict,
        "2",
        "--revision",
        "1",
        "--rationale",
        "r",
        "--event-id",
        "e1",
    ]);
    assert_eq!(decision["selected_candidate_id"], case["candidates"][1]["candidate_id"]);
}

#[test]
fn the_actor_defaults_to_git_user_name_and_email_else_the_os_user() {
    let env = Env::new();
    let case = tied_case(&env);
    let conflict = case["conflict_id"].as_str().unwrap();
    // A real repository with a configured identity.
    std::fs::remove_dir_all(env.project().join(".git")).unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(env.project())
            .env("HOME", env.root().join("home"))
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "user.name", "Ada Lovelace"]);
    git(&["config", "user.email", "ada@example.com"]);
    let decision = env.json(&[
        "resolve",
        conflict,
        "1",
        "--revision",
        "1",
        "--rationale",
        "r",
        "--event-id",
        "e1",
    ]);
    assert_eq!(decision["actor"], "Ada Lovelace <ada@example.com>");

    // Outside git, the OS user; --actor overrides both.
    let env = Env::new();
    let case = tied_case(&env);
    let conflict = case["conflict_id"].as_str().unwrap();
    let out = env
        .cmd()
        .env("USER", "grace")
        .args(["resolve", conflict, "1", "--revision", "1", "--rationale", "r", "--event-id", "e2"])
        .args(["--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(serde_json::from_slice::<Value>(&out).unwrap()["actor"], "grace");
}

#[test]
fn status_reports_facts_waiting_memory_conflicts_and_writes_nothing() {
    let env = Env::new();
    env.cmd().arg("init").assert().success();
    let fresh = env.json(&["status"]);
    assert_eq!(fresh["facts"]["total"], 0);
    assert_eq!(fresh["facts"]["waiting_for_age"], 0);
    assert!(fresh["facts"]["first_eligible_at"].is_null());
    assert_eq!(fresh["curated"], serde_json::json!({}));
    assert_eq!(fresh["open_conflicts"], 0);

    seed_story(&env);
    // Recorded now: too young for the policy, and today's.
    env.cmd().args(["remember", "Use Rust 1.95", "-k", "decision", "-i", "4"]).assert().success();
    env.cmd().args(["distill", "-q"]).assert().success();
    let before = snapshot(&env.memory());
    let status = env.json(&["status"]);
    assert_eq!(snapshot(&env.memory()), before, "status wrote");
    assert_eq!(status["facts"]["total"], 5);
    assert_eq!(status["facts"]["today"], 1);
    assert_eq!(status["facts"]["waiting_for_age"], 1);
    let first = status["facts"]["first_eligible_at"].as_str().unwrap();
    let today = env.json(&["facts"])[0]["recorded_at"].as_str().unwrap().to_owned();
    assert!(first > today.as_str(), "{first} is not after {today}");
    assert_eq!(status["curated"], serde_json::json!({"decision": 1}));
    assert_eq!(status["open_conflicts"], 1);
    assert_eq!(status["unfinished_transactions"], 0);
    assert_eq!(status["workspace_id"], env.json(&["init"])["workspace_id"]);
    let text = env.text(&["status"]);
    for words in ["5 in the log, 1 recorded today", "1 too young", "1 decision", "1 open"] {
        assert!(text.contains(words), "{words:?} missing:\n{text}");
    }
}

#[test]
fn on_day_one_distill_and_memory_say_what_waits_and_until_when() {
    let env = Env::new();
    env.cmd().arg("init").assert().success();
    let empty = env.cmd().arg("memory").assert().success().get_output().clone();
    assert!(String::from_utf8_lossy(&empty.stderr).contains("the log is empty"));
    env.cmd().args(["remember", "Use Rust 1.95", "-k", "decision", "-i", "4"]).assert().success();
    let first = env.json(&["status"])["facts"]["first_eligible_at"].as_str().unwrap().to_owned();
    for args in [&["distill"][..], &["memory"]] {
        let out = env.cmd().args(args).assert().success().get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("1 fact waits for the age gate")
                && stderr.contains(&format!("eligible at {first}"))
                && stderr.contains("workmem explain"),
            "{args:?}: {stderr}"
        );
    }
    // --json keeps its shape.
    assert_eq!(env.json(&["memory"]), serde_json::json!({"memory": ""}));
    assert!(env.json(&["distill"]).get("scanned").is_some());
    // Once something is curated, no day-one line.
    env.remember("Use WAL mode", "decision", 5, None, "2026-01-01T00:00:00Z");
    let out = env.cmd().arg("distill").assert().success().get_output().clone();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("nothing is curated"));
}

#[test]
fn distill_tells_facts_promoted_earlier_from_facts_not_promoted() {
    let env = Env::new();
    seed_story(&env);
    let first = env.text(&["distill", "--as-of", AS_OF]);
    assert!(!first.contains("already promoted"), "{first}");
    let second = env.text(&["distill", "--as-of", AS_OF]);
    assert!(
        second.contains("of the skipped: 1 already promoted by an earlier run, 3 not promoted"),
        "{second}"
    );
    // --json keeps the report's fields.
    let report = env.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["skipped"], 4);
    assert!(report.get("already_evidence").is_none());
}

/// Starts `workmem review` on a pseudo-terminal in the project.
fn review_session(env: &Env) -> rexpect::session::PtySession {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_workmem"));
    cmd.env_clear()
        .env("HOME", env.root().join("home"))
        .env("TERM", "xterm")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(env.project())
        .arg("review");
    rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn workmem review on a pty")
}

#[test]
fn review_resolves_skips_quits_and_refuses_a_case_changed_meanwhile() {
    let env = Env::new();
    // Three ties: lint.tool, test.runner (seed_story) and zz.format.
    seed_story(&env);
    for (content, key) in [
        ("Use ruff", "lint.tool"),
        ("Use black", "lint.tool"),
        ("Use tabs", "zz.format"),
        ("Use spaces", "zz.format"),
    ] {
        env.remember(content, "convention", 4, Some(key), "2026-01-03T10:00:00Z");
    }
    env.cmd().args(["distill", "--as-of", AS_OF, "-q"]).assert().success();
    let cases = env.json(&["conflicts"]);
    assert_eq!(cases.as_array().unwrap().len(), 3);
    let id = |key: &str| {
        cases.as_array().unwrap().iter().find(|c| c["memory_key"] == key).unwrap()["conflict_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // A real repository with an identity: the actor of the decisions.
    std::fs::remove_dir_all(env.project().join(".git")).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "user.name", "Ada Lovelace"],
        &["config", "user.email", "ada@example.com"],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.project())
            .env("HOME", env.root().join("home"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    // Session 1: skip lint.tool; while test.runner is shown, another
    // process decides it, so the confirmation is refused as stale.
    let mut session = review_session(&env);
    session.exp_string("key lint.tool").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("").unwrap();
    session.exp_string("key test.runner").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("1").unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("CI already uses it").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    let runner = id("test.runner");
    env.cmd()
        .args([
            "resolve",
            &runner,
            "2",
            "--revision",
            "1",
            "--rationale",
            "by hand",
            "--event-id",
            "elsewhere",
        ])
        .assert()
        .success();
    session.send_line("y").unwrap();
    session.exp_string("stale, not recorded").unwrap();
    session.exp_string("key zz.format").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("q").unwrap();
    session.exp_string("review done: 0 decided, 1 skipped").unwrap();
    session.exp_eof().unwrap();

    // Session 2: decide lint.tool, then quit at zz.format.
    let mut session = review_session(&env);
    session.exp_string("key lint.tool").unwrap();
    session.exp_string("evidence of").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("2").unwrap();
    session.exp_string("rationale (q quits)> ").unwrap();
    session.send_line("The formatter we already run").unwrap();
    session.exp_string("(y/n)> ").unwrap();
    session.send_line("y").unwrap();
    session.exp_string("resolved ").unwrap();
    session.exp_string("key zz.format").unwrap();
    session.exp_string("candidate number").unwrap();
    session.send_line("q").unwrap();
    session.exp_string("review done: 1 decided, 0 skipped").unwrap();
    session.exp_eof().unwrap();

    let audit = env.json(&["adjudications"]);
    let audit = audit.as_array().unwrap();
    assert_eq!(audit.len(), 2, "{audit:?}");
    assert_eq!(audit[0]["event_id"], "elsewhere");
    let mine = &audit[1];
    assert_eq!(mine["conflict_id"], id("lint.tool").as_str());
    assert_eq!(mine["actor"], "Ada Lovelace <ada@example.com>");
    assert_eq!(mine["rationale"], "The formatter we already run");
    assert!(mine["event_id"].as_str().unwrap().starts_with("review:"), "{mine}");
    let open = env.json(&["conflicts"]);
    assert_eq!(open.as_array().unwrap().len(), 1);
    assert_eq!(open[0]["memory_key"], "zz.format");
}

#[test]
fn review_without_a_terminal_points_at_resolve() {
    let env = Env::new();
    env.cmd().arg("init").assert().success();
    let out = env.cmd().arg("review").assert().code(2).get_output().clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs a terminal") && stderr.contains("workmem resolve"), "{stderr}");
}
