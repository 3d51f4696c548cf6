//! What `setup` writes for each client, and where, at each scope.
//!
//! Every client gets the MCP server entry (`workmem mcp`, found on `PATH`
//! by name, so a committed project file works in every clone) and the
//! managed block of its instruction file where it has one; clients with
//! hooks (Claude Code, Codex, Gemini CLI) also get a session-start hook
//! running `workmem context --hook`, and Codex the approval `codex exec`
//! needs before `write_memory` may write.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::block::Block;
use super::edit::{FilePlan, Part};
use super::json::{self, HOOK_COMMAND};
use super::toml::CodexServer;

/// An agent client `setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code
    #[value(name = "claude-code", alias = "claude")]
    ClaudeCode,
    /// OpenAI Codex CLI
    #[value(name = "codex")]
    Codex,
    /// Cursor
    #[value(name = "cursor")]
    Cursor,
    /// VS Code (GitHub Copilot agent mode)
    #[value(name = "vscode", alias = "copilot")]
    Vscode,
    /// Gemini CLI
    #[value(name = "gemini", alias = "gemini-cli")]
    Gemini,
}

impl Client {
    /// Every client, in the order `--check` reports them.
    pub const ALL: [Client; 5] =
        [Client::ClaudeCode, Client::Codex, Client::Cursor, Client::Vscode, Client::Gemini];

    /// Returns the client's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Gemini => "gemini",
        }
    }

    /// Returns the client's own program, whose presence on `PATH` counts
    /// as the client being installed.
    pub fn program(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude",
            Client::Codex => "codex",
            Client::Cursor => "cursor",
            Client::Vscode => "code",
            Client::Gemini => "gemini",
        }
    }
}

/// Where a configuration goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// The project's files, to commit and share
    Project,
    /// Your own files, for every project
    User,
}

impl Scope {
    /// Returns the scope's name.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// The directories the plans are made from.
#[derive(Debug, Clone)]
pub struct Places {
    /// The project directory.
    pub project: PathBuf,
    /// The user's home directory.
    pub home: PathBuf,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub codex_home: PathBuf,
    /// VS Code's user settings directory.
    pub vscode_user: PathBuf,
}

impl Places {
    /// Returns the places from the environment: `HOME` (or the OS's idea
    /// of it), `CODEX_HOME`, `XDG_CONFIG_HOME` / `APPDATA`.
    pub fn from_env(project: PathBuf) -> Option<Places> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(std::env::home_dir)?;
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map_or_else(|| home.join(".codex"), PathBuf::from);
        let vscode_user = if cfg!(target_os = "macos") {
            home.join("Library/Application Support/Code/User")
        } else if cfg!(windows) {
            std::env::var_os("APPDATA")
                .map_or_else(|| home.join("AppData/Roaming"), PathBuf::from)
                .join("Code/User")
        } else {
            std::env::var_os("XDG_CONFIG_HOME")
                .filter(|h| !h.is_empty())
                .map_or_else(|| home.join(".config"), PathBuf::from)
                .join("Code/User")
        };
        Some(Places { project, home, codex_home, vscode_user })
    }
}

/// Where a client reads its MCP servers, for `--check`.
#[derive(Debug, Clone)]
pub enum McpFile {
    /// A JSON file with servers under this top-level key.
    Json(PathBuf, &'static str),
    /// Codex's TOML configuration.
    Toml(PathBuf),
}

impl McpFile {
    /// Returns the file's path.
    pub fn path(&self) -> &Path {
        match self {
            McpFile::Json(path, _) | McpFile::Toml(path) => path,
        }
    }
}

/// What `setup` does for one client at one scope.
#[derive(Debug)]
pub struct ClientPlan {
    /// The files and what goes in each.
    pub files: Vec<FilePlan>,
    /// Where the server entry is.
    pub mcp: McpFile,
    /// Directories whose presence shows the client is used here.
    pub marks: Vec<PathBuf>,
    /// What the user should know (printed on stderr).
    pub notes: Vec<String>,
}

/// The session-start hook group of Claude Code and Codex: at start-up,
/// after `/clear`, and after a compaction, which drops what the first
/// injection gave (a resumed session still has it).
fn start_hook() -> Part {
    Part::JsonHook(json::Hook {
        event: "SessionStart",
        group: json!({
            "matcher": "startup|clear|compact",
            "hooks": [{"type": "command", "command": HOOK_COMMAND}]
        }),
    })
}

fn file(path: PathBuf, parts: Vec<Part>) -> FilePlan {
    FilePlan { path, parts }
}

fn entry(container: &'static str, value: serde_json::Value) -> Part {
    Part::JsonEntry(json::Entry { container, name: "workmem", value })
}

fn instructions(header: &'static str) -> Part {
    Part::Block(Block::instructions(header))
}

/// Cursor's front matter: a rule applied to every request.
const CURSOR_RULE_HEADER: &str = "---\n\
description: How to use the project's workmem memory\n\
alwaysApply: true\n\
---\n\n";

/// Returns the plan of `client` at `scope`.
pub fn plan(client: Client, scope: Scope, places: &Places) -> ClientPlan {
    match client {
        Client::ClaudeCode => claude_code(scope, places),
        Client::Codex => codex(scope, places),
        Client::Cursor => cursor(scope, places),
        Client::Vscode => vscode(scope, places),
        Client::Gemini => gemini(scope, places),
    }
}

/// Cursor and VS Code start servers outside the project: name it with the
/// editor's own variable rather than a path of this machine.
fn editor_args() -> serde_json::Value {
    json!(["-C", "${workspaceFolder}", "mcp"])
}

/// Returns Claude Code's plan at `scope`.
fn claude_code(scope: Scope, places: &Places) -> ClientPlan {
    let p = &places.project;
    let h = &places.home;
    match scope {
        Scope::Project => ClientPlan {
            files: vec![
                file(
                    p.join(".mcp.json"),
                    vec![entry(
                        "mcpServers",
                        json!({"type": "stdio", "command": "workmem", "args": ["mcp"]}),
                    )],
                ),
                file(p.join(".claude/settings.json"), vec![start_hook()]),
                file(p.join("CLAUDE.md"), vec![instructions("")]),
            ],
            mcp: McpFile::Json(p.join(".mcp.json"), "mcpServers"),
            marks: vec![p.join(".claude"), h.join(".claude")],
            notes: vec![
            "Claude Code asks each person once to approve a server of .mcp.json: start `claude` \
             here and accept it (or approve it under /mcp)"
                .to_owned(),
        ],
        },
        Scope::User => ClientPlan {
            files: vec![
                file(
                    h.join(".claude.json"),
                    vec![entry(
                        "mcpServers",
                        json!({"type": "stdio", "command": "workmem", "args": ["mcp"]}),
                    )],
                ),
                file(h.join(".claude/settings.json"), vec![start_hook()]),
                file(h.join(".claude/CLAUDE.md"), vec![instructions("")]),
            ],
            mcp: McpFile::Json(h.join(".claude.json"), "mcpServers"),
            marks: vec![h.join(".claude"), h.join(".claude.json")],
            notes: Vec::new(),
        },
    }
}

/// Returns Codex's plan at `scope`.
fn codex(scope: Scope, places: &Places) -> ClientPlan {
    let p = &places.project;
    let dir = if scope == Scope::Project { p.join(".codex") } else { places.codex_home.clone() };
    let agents = if scope == Scope::Project { p.join("AGENTS.md") } else { dir.join("AGENTS.md") };
    let mut notes = vec![format!(
        "Codex: write_memory approved for runs without a person to ask (codex exec): \
         [mcp_servers.workmem.tools.write_memory] approval_mode = \"approve\"; the other tools only read"
    )];
    if scope == Scope::Project {
        notes.push(
            "Codex reads .codex/ only in a project you trust, and runs a hook once you have \
             reviewed it (/hooks)"
                .to_owned(),
        );
    }
    ClientPlan {
        files: vec![
            file(
                dir.join("config.toml"),
                vec![Part::Toml(CodexServer {
                    command: "workmem".to_owned(),
                    args: vec!["mcp".to_owned()],
                })],
            ),
            file(dir.join("hooks.json"), vec![start_hook()]),
            file(agents, vec![instructions("")]),
        ],
        mcp: McpFile::Toml(dir.join("config.toml")),
        marks: vec![dir],
        notes,
    }
}

/// Returns Cursor's plan at `scope`.
fn cursor(scope: Scope, places: &Places) -> ClientPlan {
    let p = &places.project;
    let h = &places.home;
    let editor_args = editor_args();
    let dir = if scope == Scope::Project { p.join(".cursor") } else { h.join(".cursor") };
    let mut files = vec![file(
        dir.join("mcp.json"),
        vec![entry("mcpServers", json!({"command": "workmem", "args": editor_args}))],
    )];
    let mut notes = Vec::new();
    if scope == Scope::Project {
        files.push(file(dir.join("rules/workmem.mdc"), vec![instructions(CURSOR_RULE_HEADER)]));
    } else {
        notes.push(
            "Cursor keeps user rules in its settings, not in a file: run `workmem setup cursor` \
             in a project for the rule that tells the agent how to use the memory"
                .to_owned(),
        );
    }
    ClientPlan {
        files,
        mcp: McpFile::Json(dir.join("mcp.json"), "mcpServers"),
        marks: vec![dir],
        notes,
    }
}

/// Returns VS Code's plan at `scope`.
fn vscode(scope: Scope, places: &Places) -> ClientPlan {
    let p = &places.project;
    let editor_args = editor_args();
    let (mcp, marks) = if scope == Scope::Project {
        (p.join(".vscode/mcp.json"), vec![p.join(".vscode")])
    } else {
        (places.vscode_user.join("mcp.json"), vec![places.vscode_user.clone()])
    };
    let mut files = vec![file(
        mcp.clone(),
        vec![entry("servers", json!({"type": "stdio", "command": "workmem", "args": editor_args}))],
    )];
    let mut notes = Vec::new();
    if scope == Scope::Project {
        files.push(file(p.join(".github/copilot-instructions.md"), vec![instructions("")]));
    } else {
        notes.push(
            "VS Code has no user instruction file: run `workmem setup vscode` in a project for \
             .github/copilot-instructions.md"
                .to_owned(),
        );
    }
    ClientPlan { files, mcp: McpFile::Json(mcp, "servers"), marks, notes }
}

/// Returns Gemini CLI's plan at `scope`.
fn gemini(scope: Scope, places: &Places) -> ClientPlan {
    let p = &places.project;
    let h = &places.home;
    let dir = if scope == Scope::Project { p.join(".gemini") } else { h.join(".gemini") };
    let memo = if scope == Scope::Project { p.join("GEMINI.md") } else { dir.join("GEMINI.md") };
    let hook = Part::JsonHook(json::Hook {
        event: "SessionStart",
        group: json!({
            "hooks": [{"name": "workmem-context", "type": "command", "command": HOOK_COMMAND}]
        }),
    });
    let mut notes = Vec::new();
    if scope == Scope::Project {
        notes.push(
            "Gemini CLI reads a project's .gemini/settings.json only in a trusted folder"
                .to_owned(),
        );
    }
    ClientPlan {
        files: vec![
            file(
                dir.join("settings.json"),
                vec![entry("mcpServers", json!({"command": "workmem", "args": ["mcp"]})), hook],
            ),
            file(memo, vec![instructions("")]),
        ],
        mcp: McpFile::Json(dir.join("settings.json"), "mcpServers"),
        marks: vec![dir],
        notes,
    }
}
