//! End-to-end tests of `workmem setup` and `workmem context --hook`, on
//! real files in temporary projects, with `HOME` pointed at a temporary
//! directory.
//!
//! The last tests run the real clients from npm (Claude Code, Codex CLI,
//! Gemini CLI) and ask each one to list its MCP servers after `setup` and
//! after `--remove`. They find the clients in the directory that
//! `WORKMEM_TEST_AGENT_CLIENTS` names; `cargo xtask test` installs the
//! pinned versions into target/agent-clients and sets it. Without the
//! variable those tests fail with a message saying how to install them.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// A temporary root holding `home/` and `project/` (a git-like project).
struct Env {
    root: TempDir,
}

/// Every file and directory under a root: path -> (bytes, inode).
type Tree = BTreeMap<PathBuf, Option<(Vec<u8>, u64)>>;

impl Env {
    fn new() -> Env {
        let root = tempfile::Builder::new().prefix("workmem-setup-").tempdir().unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        std::fs::create_dir_all(root.path().join("project/.git")).unwrap();
        Env { root }
    }

    fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path().join("project")).unwrap()
    }

    fn home(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path().join("home")).unwrap()
    }

    /// Returns the binary with a cleared environment (HOME, and PATH with
    /// the binary's directory first), run in the project.
    fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_workmem"));
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", path_with(&[]))
            .current_dir(self.project());
        cmd
    }

    /// Runs `workmem ARGS`, returns (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// Runs `workmem ARGS --json`, which must succeed.
    fn json(&self, args: &[&str]) -> Value {
        let (code, stdout, stderr) = self.run(&[args, &["--json"]].concat());
        assert_eq!(code, 0, "{args:?}: {stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

/// Returns PATH with `dirs` first, then the binary's directory, then the
/// test process's PATH.
fn path_with(dirs: &[&Path]) -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_workmem")).parent().unwrap().to_path_buf();
    let mut all: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    all.push(bin);
    if let Some(path) = std::env::var_os("PATH") {
        all.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(all).unwrap()
}

/// Returns every file (bytes and inode) and directory under `root`, `.git`
/// left out.
fn tree(root: &Path) -> Tree {
    use std::os::unix::fs::MetadataExt;
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel == Path::new(".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(rel, None);
                stack.push(path);
            } else {
                out.insert(rel, Some((std::fs::read(&path).unwrap(), meta.ino())));
            }
        }
    }
    out
}

/// Returns the tree without inodes: what a byte-for-byte comparison needs
/// when files may have been replaced by equal ones.
fn bytes(tree: &Tree) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    tree.iter().map(|(p, v)| (p.clone(), v.as_ref().map(|(b, _)| b.clone()))).collect()
}

/// One client, as the tests see it.
struct Spec {
    client: &'static str,
    /// The files setup creates in an empty project.
    files: &'static [&'static str],
    /// The MCP configuration file.
    mcp: &'static str,
    /// That file as a user wrote it: another server, comments where the
    /// format has them, other keys.
    users: &'static str,
    /// Lines of `users` that must survive `setup` (comments, the other server).
    kept: &'static [&'static str],
    /// An invalid version of the MCP file and the line the error names.
    malformed: (&'static str, usize),
    /// The instruction file.
    instructions: &'static str,
}

const SPECS: [Spec; 5] = [
    Spec {
        client: "claude-code",
        files: &[".mcp.json", ".claude/settings.json", "CLAUDE.md"],
        mcp: ".mcp.json",
        users: "{\n  \"mcpServers\": {\n    \"github\": {\n      \"command\": \"gh-mcp\",\n      \"args\": []\n    }\n  }\n}\n",
        kept: &["\"github\": {", "\"command\": \"gh-mcp\","],
        malformed: ("{\n  \"mcpServers\": {\n    \"github\": \n  }\n}\n", 4),
        instructions: "CLAUDE.md",
    },
    Spec {
        client: "codex",
        files: &[".codex/config.toml", ".codex/hooks.json", "AGENTS.md"],
        mcp: ".codex/config.toml",
        users: "# my Codex settings\nmodel = \"o3\" # the fast one\n\n[mcp_servers.github]\ncommand = \"gh-mcp\" # from brew\nargs = []\n",
        kept: &[
            "# my Codex settings",
            "model = \"o3\" # the fast one",
            "command = \"gh-mcp\" # from brew",
        ],
        malformed: ("model = \"o3\"\n[mcp_servers.github\ncommand = \"gh-mcp\"\n", 2),
        instructions: "AGENTS.md",
    },
    Spec {
        client: "cursor",
        files: &[".cursor/mcp.json", ".cursor/rules/workmem.mdc"],
        mcp: ".cursor/mcp.json",
        users: "{\n  // servers for this repo\n  \"mcpServers\": {\n    \"github\": {\n      \"command\": \"gh-mcp\", // from brew\n      \"args\": [],\n    },\n  },\n}\n",
        kept: &["// servers for this repo", "\"command\": \"gh-mcp\", // from brew"],
        malformed: ("{\n  \"mcpServers\": {\n    \"github\": {\"command\": }\n  }\n}\n", 3),
        instructions: ".cursor/rules/workmem.mdc",
    },
    Spec {
        client: "vscode",
        files: &[".vscode/mcp.json", ".github/copilot-instructions.md"],
        mcp: ".vscode/mcp.json",
        users: "{\n  /* shared with the team */\n  \"inputs\": [],\n  \"servers\": {\n    // GitHub's server\n    \"github\": {\n      \"type\": \"http\",\n      \"url\": \"https://api.githubcopilot.com/mcp/\"\n    }\n  }\n}\n",
        kept: &[
            "/* shared with the team */",
            "// GitHub's server",
            "\"url\": \"https://api.githubcopilot.com/mcp/\"",
        ],
        malformed: ("{\n  \"servers\": {\n    \"github\": [\n  }\n}\n", 4),
        instructions: ".github/copilot-instructions.md",
    },
    Spec {
        client: "gemini",
        files: &[".gemini/settings.json", "GEMINI.md"],
        mcp: ".gemini/settings.json",
        users: "{\n  // my settings\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"} // from brew\n  }\n}\n",
        kept: &[
            "// my settings",
            "\"theme\": \"GitHub\",",
            "\"github\": {\"command\": \"gh-mcp\"}",
            "// from brew",
        ],
        malformed: (
            "{\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\" \"args\": []}\n  }\n}\n",
            4,
        ),
        instructions: "GEMINI.md",
    },
];

/// The user's own instructions, kept around the managed block.
const USERS_NOTES: &str = "# Notes for agents\n\nRun `make check` before committing.\n";

#[test]
fn setup_writes_each_clients_files_into_an_empty_project_and_a_rerun_writes_nothing() {
    for spec in &SPECS {
        let env = Env::new();
        let out = env.json(&["setup", spec.client]);
        assert_eq!(out["client"], spec.client);
        let created: Vec<String> = out["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                assert_eq!(f["action"], "create", "{}: {f}", spec.client);
                let path = PathBuf::from(f["path"].as_str().unwrap());
                path.strip_prefix(env.project()).unwrap().display().to_string()
            })
            .collect();
        assert_eq!(created, spec.files, "{}", spec.client);

        let mcp = env.read(spec.mcp);
        assert!(mcp.contains("\"workmem\"") || mcp.contains("[mcp_servers.workmem]"), "{mcp}");
        assert!(
            mcp.contains("command = \"workmem\"") || mcp.contains("\"command\": \"workmem\""),
            "{mcp}"
        );
        assert!(!mcp.contains(&*env.project().to_string_lossy()), "no machine path: {mcp}");
        let notes = env.read(spec.instructions);
        assert!(notes.contains("<!-- workmem:begin") && notes.contains("<!-- workmem:end -->"));
        assert!(notes.contains("search_memory") && notes.contains("write_memory"), "{notes}");
        let hooked =
            spec.files.iter().any(|f| f.ends_with("settings.json") || f.ends_with("hooks.json"));
        if hooked {
            let all: String = spec.files.iter().map(|f| env.read(f)).collect();
            assert!(
                all.contains("\"command\": \"workmem context --hook\""),
                "{}: {all}",
                spec.client
            );
        }

        let before = tree(&env.project());
        let again = env.json(&["setup", spec.client]);
        assert!(
            again["files"].as_array().unwrap().iter().all(|f| f["action"] == "unchanged"),
            "{again}"
        );
        assert_eq!(tree(&env.project()), before, "{}: a re-run writes nothing", spec.client);
    }
}

#[test]
fn setup_keeps_other_servers_and_comments_and_remove_restores_every_byte() {
    for spec in &SPECS {
        let env = Env::new();
        env.write(spec.mcp, spec.users);
        env.write(spec.instructions, USERS_NOTES);
        if spec.client == "claude-code" {
            env.write(
                ".claude/settings.json",
                "{\n  \"permissions\": {\"allow\": [\"Bash(make check)\"]},\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"echo hello\"}]}\n    ]\n  }\n}\n",
            );
        }
        let before = tree(&env.project());

        let (code, _, stderr) = env.run(&["setup", spec.client]);
        assert_eq!(code, 0, "{}: {stderr}", spec.client);
        let mcp = env.read(spec.mcp);
        for line in spec.kept {
            assert!(mcp.contains(line), "{}: lost {line:?}:\n{mcp}", spec.client);
        }
        assert!(mcp.contains("workmem"), "{mcp}");
        let notes = env.read(spec.instructions);
        assert!(
            notes.starts_with(USERS_NOTES) && notes.contains("<!-- workmem:end -->"),
            "{notes}"
        );
        if spec.client == "claude-code" {
            let settings = env.read(".claude/settings.json");
            assert!(
                settings.contains("echo hello") && settings.contains("Bash(make check)"),
                "{settings}"
            );
            assert!(settings.contains("workmem context --hook"), "{settings}");
        }

        let out = env.json(&["setup", spec.client, "--remove"]);
        assert!(out["files"].as_array().unwrap().iter().all(|f| f["action"] != "create"), "{out}");
        assert_eq!(
            bytes(&tree(&env.project())),
            bytes(&before),
            "{}: --remove gives back every file byte for byte",
            spec.client
        );
        let again = env.json(&["setup", spec.client, "--remove"]);
        assert!(
            again["files"].as_array().unwrap().iter().all(|f| f["action"] == "unchanged"),
            "{again}"
        );
    }
}

#[test]
fn print_shows_the_diff_and_writes_nothing() {
    for spec in &SPECS {
        let env = Env::new();
        env.write(spec.mcp, spec.users);
        let before = tree(&env.project());
        let (code, stdout, stderr) = env.run(&["setup", spec.client, "--print"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(tree(&env.project()), before, "{}: --print writes nothing", spec.client);
        let printed = env.json(&["setup", spec.client, "--print"]);
        let first = &printed["files"][0];
        assert_eq!(first["action"], "update", "{printed}");
        assert!(
            first["diff"].as_str().unwrap().starts_with(&format!("--- a/{}\n", spec.mcp)),
            "{printed}"
        );
        assert_eq!(tree(&env.project()), before);
        assert!(stdout.contains(&format!("--- a/{}\n+++ b/{}\n", spec.mcp, spec.mcp)), "{stdout}");
        assert!(
            stdout.contains(&format!("--- /dev/null\n+++ b/{}\n", spec.instructions)),
            "{stdout}"
        );
        assert!(stdout.lines().any(|l| l.starts_with('+') && l.contains("workmem")), "{stdout}");
        // The diff is exactly what setup then writes.
        env.run(&["setup", spec.client]);
        let (_, after, _) = env.run(&["setup", spec.client, "--print"]);
        assert_eq!(after, "", "{}: nothing left to print", spec.client);
        let (_, removal, _) = env.run(&["setup", spec.client, "--remove", "--print"]);
        assert!(removal.contains("+++ /dev/null"), "{removal}");
    }
}

#[test]
fn a_malformed_config_is_left_untouched_with_an_error_naming_the_file_and_line() {
    for spec in &SPECS {
        let env = Env::new();
        env.write(spec.mcp, spec.malformed.0);
        let before = tree(&env.project());
        let (code, stdout, stderr) = env.run(&["setup", spec.client]);
        assert_eq!(code, 2, "{}: {stdout}{stderr}", spec.client);
        let path = env.project().join(spec.mcp);
        assert!(
            stderr.contains(&format!("{}: line {}", path.display(), spec.malformed.1)),
            "{stderr}"
        );
        assert!(stderr.contains("hint: nothing was written"), "{stderr}");
        assert_eq!(
            tree(&env.project()),
            before,
            "{}: nothing written, not even the other files",
            spec.client
        );
        let (code, _, stderr) = env.run(&["setup", spec.client, "--remove"]);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(tree(&env.project()), before);
    }
}

#[test]
fn user_scope_writes_under_home_and_remove_gives_it_back() {
    for spec in &SPECS {
        let env = Env::new();
        std::fs::create_dir_all(env.home().join(".codex")).unwrap();
        std::fs::write(env.home().join(".codex/config.toml"), "# mine\nmodel = \"o3\"\n").unwrap();
        let before = tree(&env.home());
        let out = env.json(&["setup", spec.client, "--scope", "user"]);
        assert_eq!(out["scope"], "user");
        for file in out["files"].as_array().unwrap() {
            let path = PathBuf::from(file["path"].as_str().unwrap());
            assert!(path.starts_with(env.home()), "{}: {}", spec.client, path.display());
            assert!(path.is_file(), "{}", path.display());
        }
        assert_eq!(tree(&env.project()).len(), 0, "{}: nothing in the project", spec.client);
        env.json(&["setup", spec.client, "--scope", "user", "--remove"]);
        assert_eq!(bytes(&tree(&env.home())), bytes(&before), "{}", spec.client);
    }
}

#[test]
fn codex_setup_approves_the_write_tool_and_says_so() {
    let env = Env::new();
    let (code, _, stderr) = env.run(&["setup", "codex"]);
    assert_eq!(code, 0);
    assert!(stderr.contains("approval_mode = \"approve\""), "{stderr}");
    let config = env.read(".codex/config.toml");
    assert!(
        config.contains("[mcp_servers.workmem.tools.write_memory]\napproval_mode = \"approve\""),
        "{config}"
    );
}

#[test]
fn setup_says_when_workmem_is_not_on_path() {
    let env = Env::new();
    let out = env.cmd().env("PATH", "/nonexistent").args(["setup", "gemini"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("`workmem` is not on PATH"), "{stderr}");
    let (_, _, stderr) = env.run(&["setup", "gemini"]);
    assert!(!stderr.contains("not on PATH"), "{stderr}");
}

#[test]
fn check_starts_each_configured_server_and_lists_its_tools() {
    let env = Env::new();
    // Claude Code is used on this machine (its directory in HOME).
    std::fs::create_dir(env.home().join(".claude")).unwrap();
    env.run(&["setup", "claude-code"]);
    env.run(&["setup", "vscode"]);
    let out = env.json(&["setup", "--check"]);
    let clients = out["clients"].as_array().unwrap();
    let find = |client: &str, scope: &str| {
        clients
            .iter()
            .find(|c| c["client"] == client && c["scope"] == scope)
            .unwrap_or_else(|| panic!("{client} {scope} in {out}"))
    };
    for client in ["claude-code", "vscode"] {
        let c = find(client, "project");
        assert_eq!(c["configured"], true, "{c}");
        let tools: Vec<&str> =
            c["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert!(tools.contains(&"write_memory") && tools.contains(&"get_context"), "{c}");
        assert!(c.get("problem").is_none(), "{c}");
    }
    assert_eq!(find("claude-code", "user")["configured"], false);
    assert!(clients.iter().all(|c| c["client"] != "gemini"), "gemini is not used here: {out}");

    // A server that names a missing program fails the check.
    env.write(
        ".gemini/settings.json",
        "{\"mcpServers\": {\"workmem\": {\"command\": \"workmem-gone\"}}}\n",
    );
    // And so does one that exits at once.
    env.write(".cursor/mcp.json", "{\"mcpServers\": {\"workmem\": {\"command\": \"false\"}}}\n");
    let (code, stdout, stderr) = env.run(&["setup", "--check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let cursor = stdout
        .lines()
        .find(|l| l.starts_with("cursor (project"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        cursor.contains("configured; the server exited before answering")
            || cursor.contains("configured; the server closed its input"),
        "{cursor}"
    );
    assert!(
        stdout.contains(
            "gemini (project, .gemini/settings.json): configured; `workmem-gone` is not found"
        ),
        "{stdout}"
    );
    assert!(stderr.contains("error: 2 configured workmem server(s) cannot be started"), "{stderr}");
}

/// Runs `workmem context --hook` and returns its JSON, checking it exits 0
/// with nothing on stderr and within `limit`.
fn hook(env: &Env, limit: Duration) -> Value {
    let started = Instant::now();
    let out = env.cmd().args(["context", "--hook"]).output().unwrap();
    assert!(started.elapsed() < limit, "the hook took {:?}", started.elapsed());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_context_hook_prints_the_context_and_never_fails() {
    let env = Env::new();
    // No memory yet.
    let out = hook(&env, Duration::from_secs(10));
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        out["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("no memory yet")
    );
    assert!(!env.project().join(".workmem").exists(), "the hook creates nothing");

    let (code, _, stderr) =
        env.run(&["remember", "Use WAL mode for the cache", "-k", "decision", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let out = hook(&env, Duration::from_secs(10));
    let context = out["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("- [decision] Use WAL mode for the cache ("), "{context}");
    assert!(out.get("systemMessage").is_none(), "{out}");

    // Locked by a writer: the hook does not wait for it.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(env.project().join(".workmem/memory/.lock"))
        .unwrap();
    lock.lock().unwrap();
    let out = hook(&env, Duration::from_secs(5));
    assert!(
        out["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("Use WAL"),
        "{out}"
    );
    lock.unlock().unwrap();

    // Corrupt: one line of notice, exit 0.
    let daily = std::fs::read_dir(env.project().join(".workmem/memory/daily"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&daily, "{not json\n{\"also\": \"not a fact\"}\n").unwrap();
    std::fs::write(env.project().join(".workmem/memory/curated.json"), "garbage").unwrap();
    let out = hook(&env, Duration::from_secs(10));
    let notice = out["systemMessage"].as_str().unwrap_or_else(|| panic!("{out}"));
    assert!(notice.starts_with("workmem: project memory not loaded ("), "{notice}");
    assert!(!notice.contains('\n'), "one line: {notice}");
    assert_eq!(out["hookSpecificOutput"]["additionalContext"], notice);

    // An unreadable memory directory (a file in its place) too.
    std::fs::remove_dir_all(env.project().join(".workmem/memory")).unwrap();
    std::fs::write(env.project().join(".workmem/memory"), "not a directory").unwrap();
    let out = hook(&env, Duration::from_secs(10));
    assert!(out["hookSpecificOutput"]["additionalContext"].as_str().is_some(), "{out}");
}

#[test]
fn the_context_hook_stays_within_what_claude_code_shows_whole() {
    let env = Env::new();
    let mut lines = String::new();
    for n in 0..400 {
        writeln!(
            lines,
            "{{\"content\": \"Fact number {n} about the build, long enough to take some room in the context\", \"kind\": \"outcome\", \"importance\": 3}}"
        )
        .unwrap();
    }
    env.write("facts.jsonl", &lines);
    // No budget of the workspace's own: the hook's limit is the one that
    // holds (recent facts take at most a quarter of a budget).
    env.write(".workmem/config.toml", "[context]\nbudget = 0\n");
    let (code, _, stderr) = env.run(&["import", "facts.jsonl", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let out = hook(&env, Duration::from_secs(10));
    let context = out["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.chars().count() <= 10_000, "{}", context.chars().count());
    let (_, full, _) = env.run(&["context", "--recent", "400"]);
    assert!(full.chars().count() > 10_000, "the plain context is larger: {}", full.len());
}

// ---- the real clients ----

/// Returns the directory holding `claude`, `codex` and `gemini`, named by
/// `WORKMEM_TEST_AGENT_CLIENTS`; without it the test fails.
fn clients_dir() -> PathBuf {
    match std::env::var_os("WORKMEM_TEST_AGENT_CLIENTS") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            for program in ["claude", "codex", "gemini"] {
                assert!(
                    dir.join(program).exists(),
                    "WORKMEM_TEST_AGENT_CLIENTS={} has no `{program}`: run `cargo xtask clients`",
                    dir.display()
                );
            }
            dir
        }
        _ => panic!(
            "WORKMEM_TEST_AGENT_CLIENTS is not set. These tests run the real Claude Code, Codex CLI and Gemini \
             CLI from npm: run the test suite with `cargo xtask test` (it installs the pinned versions into \
             target/agent-clients with npm and sets the variable), or run `cargo xtask clients` and set \
             WORKMEM_TEST_AGENT_CLIENTS to target/agent-clients/node_modules/.bin"
        ),
    }
}

/// Runs a client's command in the project with the test's HOME; returns
/// stdout and stderr together.
fn client(env: &Env, dir: &Path, program: &str, args: &[&str]) -> String {
    let (stdout, stderr) = client_output(env, dir, program, args);
    format!("{stdout}{stderr}")
}

/// Runs a client's command like [`client`]; returns stdout and stderr.
fn client_output(env: &Env, dir: &Path, program: &str, args: &[&str]) -> (String, String) {
    let out = Command::new(dir.join(program))
        .env_clear()
        .env("HOME", env.home())
        .env("PATH", path_with(&[dir]))
        .env("NO_COLOR", "1")
        .env("CI", "1")
        .args(args)
        .current_dir(env.project())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{program} {args:?}: {stdout}{stderr}");
    (stdout, stderr)
}

#[test]
fn claude_code_lists_workmem_after_setup_and_not_after_remove() {
    let dir = clients_dir();
    let env = Env::new();
    // User scope: Claude Code starts the server and reports it connected.
    env.run(&["setup", "claude-code", "--scope", "user"]);
    let listed = client(&env, &dir, "claude", &["mcp", "list"]);
    assert!(
        listed.lines().any(|l| l.starts_with("workmem: workmem mcp") && l.contains("Connected")),
        "{listed}"
    );
    env.run(&["setup", "claude-code", "--scope", "user", "--remove"]);
    let listed = client(&env, &dir, "claude", &["mcp", "list"]);
    assert!(!listed.contains("workmem:"), "{listed}");
    // Project scope: listed, waiting for the person's one-time approval;
    // once they approve it, Claude Code starts it from the project.
    env.run(&["setup", "claude-code"]);
    let listed = client(&env, &dir, "claude", &["mcp", "list"]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("workmem: workmem mcp") && l.contains("Pending approval")),
        "{listed}"
    );
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        "{\"enabledMcpjsonServers\": [\"workmem\"]}\n",
    )
    .unwrap();
    let listed = client(&env, &dir, "claude", &["mcp", "list"]);
    assert!(
        listed.lines().any(|l| l.starts_with("workmem: workmem mcp") && l.contains("Connected")),
        "{listed}"
    );
    env.run(&["setup", "claude-code", "--remove"]);
    let listed = client(&env, &dir, "claude", &["mcp", "list"]);
    assert!(!listed.contains("workmem:"), "{listed}");
}

#[test]
fn codex_lists_workmem_after_setup_and_not_after_remove() {
    let dir = clients_dir();
    let env = Env::new();
    let listed = |env: &Env| -> Vec<Value> {
        let (text, _) = client_output(env, &dir, "codex", &["mcp", "list", "--json"]);
        serde_json::from_str::<Vec<Value>>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let workmem = |servers: &[Value]| servers.iter().find(|s| s["name"] == "workmem").cloned();
    // The user trusts the project, as Codex asks before reading .codex/.
    std::fs::create_dir_all(env.home().join(".codex")).unwrap();
    let trust = format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", env.project().display());
    std::fs::write(env.home().join(".codex/config.toml"), &trust).unwrap();
    for scope in ["project", "user"] {
        env.run(&["setup", "codex", "--scope", scope]);
        let server =
            workmem(&listed(&env)).unwrap_or_else(|| panic!("{scope}: workmem not listed"));
        assert_eq!(server["enabled"], true, "{server}");
        assert_eq!(server["transport"]["command"], "workmem", "{server}");
        env.run(&["setup", "codex", "--scope", scope, "--remove"]);
        assert_eq!(workmem(&listed(&env)), None, "{scope}");
    }
    assert_eq!(std::fs::read_to_string(env.home().join(".codex/config.toml")).unwrap(), trust);
}

#[test]
fn gemini_cli_lists_workmem_connected_after_setup_and_not_after_remove() {
    let dir = clients_dir();
    let env = Env::new();
    // The user trusts the project, as Gemini CLI asks before reading .gemini/.
    std::fs::create_dir_all(env.home().join(".gemini")).unwrap();
    let trusted = serde_json::json!({ env.project().display().to_string(): "TRUST_FOLDER" });
    std::fs::write(env.home().join(".gemini/trustedFolders.json"), trusted.to_string()).unwrap();
    env.run(&["setup", "gemini"]);
    let listed = client(&env, &dir, "gemini", &["mcp", "list"]);
    assert!(
        listed.lines().any(|l| l.contains("workmem: workmem mcp") && l.contains("Connected")),
        "{listed}"
    );
    env.run(&["setup", "gemini", "--remove"]);
    let listed = client(&env, &dir, "gemini", &["mcp", "list"]);
    assert!(!listed.contains("workmem:"), "{listed}");
}

#[test]
fn an_instruction_file_that_is_a_link_is_edited_where_it_points() {
    let env = Env::new();
    env.write("AGENTS.md", USERS_NOTES);
    std::os::unix::fs::symlink("AGENTS.md", env.project().join("CLAUDE.md")).unwrap();
    let before = tree(&env.project());
    let (code, _, stderr) = env.run(&["setup", "claude-code"]);
    assert_eq!(code, 0, "{stderr}");
    let link = std::fs::symlink_metadata(env.project().join("CLAUDE.md")).unwrap();
    assert!(link.file_type().is_symlink(), "the link stays a link");
    assert!(env.read("AGENTS.md").contains("<!-- workmem:end -->"));
    env.run(&["setup", "claude-code", "--remove"]);
    assert_eq!(bytes(&tree(&env.project())), bytes(&before));
    assert!(
        std::fs::symlink_metadata(env.project().join("CLAUDE.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
