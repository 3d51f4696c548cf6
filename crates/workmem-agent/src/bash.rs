//! The `bash` tool: runs one command in the project directory with a
//! timeout and a cap on the output returned to the model.
//!
//! The command runs as `bash -c COMMAND` (or `sh -c` where bash is
//! missing) in its own process group with stdin closed; on timeout or
//! cancel the whole group is killed. A deny list refuses obviously
//! destructive commands and any command that touches the memory directory
//! or asks the workmem CLI to write: memory is written through
//! `write_memory` only, and conflicts are resolved, and facts retracted,
//! restored or redacted, by the human. The list is a guard against
//! accidents, not a sandbox.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;

use crate::cancel::Cancel;
use crate::tools::ToolOutput;

/// Default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default cap on the characters returned to the model.
pub const DEFAULT_MAX_OUTPUT_CHARS: usize = 50_000;
/// Bytes kept per stream; the rest is read and dropped.
const MAX_CAPTURE_BYTES: usize = 8 * 1024 * 1024;
/// How long output may keep arriving after the shell exits (from
/// background processes holding the pipes) before it is no longer awaited.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);

/// A deny-list rule: the pattern and why it is refused.
struct Rule {
    pattern: &'static str,
    reason: &'static str,
}

const TARGETS: &str = r"(?:/|/\*|~/?|~/\*|\$\{?HOME\}?/?|\$\{?HOME\}?/\*|\.{1,2}/?|\*|\.\*)";

fn rules() -> Vec<(Regex, &'static str)> {
    let rm = format!(
        r#"\brm\s+(?:-{{1,2}}[\w-]*\s+)*-[a-zA-Z]*[rR][a-zA-Z]*\s+(?:-{{1,2}}[\w-]*\s+)*['"]?{TARGETS}['"]?(?:\s|[;&|)]|$)"#
    );
    let rm_long = format!(
        r#"\brm\s+(?:-{{1,2}}[\w-]*\s+)*--recursive\s+(?:-{{1,2}}[\w-]*\s+)*['"]?{TARGETS}['"]?(?:\s|[;&|)]|$)"#
    );
    let owned: Vec<(String, &'static str)> = vec![
        (rm, "recursive removal of a root, home or whole directory"),
        (rm_long, "recursive removal of a root, home or whole directory"),
    ];
    // The project's `.workmem/`, by the name the library gives it; checked
    // last, after the rules that name a command.
    let dot = workmem::workmem_dir(Path::new(""));
    let workmem_dir = (
        format!(r"{}\b", regex::escape(&dot.to_string_lossy())),
        "the memory directory is managed by workmem: use write_memory; the memory is already in your system prompt",
    );
    let fixed = [
        Rule { pattern: r"--no-preserve-root", reason: "removal of the filesystem root" },
        Rule { pattern: r"\bmkfs(?:\.\w+)?\b", reason: "formatting a filesystem" },
        Rule { pattern: r"\b(?:wipefs|shred)\b", reason: "wiping data irrecoverably" },
        Rule { pattern: r"\bdd\b[^;&|]*\bof=/dev/", reason: "writing to a raw device" },
        Rule {
            pattern: r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)",
            reason: "writing to a raw device",
        },
        Rule { pattern: r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", reason: "a fork bomb" },
        Rule { pattern: r"\b(?:shutdown|reboot|halt|poweroff)\b", reason: "stopping the machine" },
        Rule {
            pattern: r"\bchmod\s+(?:-\w+\s+)*-\w*R\w*\s+\S+\s+/(?:\s|$)",
            reason: "changing modes of the whole filesystem",
        },
        Rule {
            pattern: r"\bchown\s+(?:-\w+\s+)*-\w*R\w*\s+\S+\s+/(?:\s|$)",
            reason: "changing owners of the whole filesystem",
        },
        Rule {
            pattern: r"\bgit\s+(?:[^;&|]*\s)?push\s+(?:[^;&|]*\s)?(?:--force\b|--force-with-lease\b|-f\b|\+\S)",
            reason: "a force push rewrites shared history",
        },
        Rule {
            pattern: r"\bgit\s+(?:[^;&|]*\s)?reset\s+(?:[^;&|]*\s)?--hard\b",
            reason: "git reset --hard discards uncommitted work",
        },
        Rule {
            pattern: r"\bgit\s+(?:[^;&|]*\s)?clean\s+(?:[^;&|]*\s)?-\w*f",
            reason: "git clean -f deletes untracked files",
        },
        Rule {
            pattern: r"\bworkmem\b[^;&|]*\s(?:resolve|remember|import|distill|init|demo|chat|mcp|retract|restore|redact)\b",
            reason: "the workmem CLI writes memory, resolves conflicts or corrects the memory: use write_memory, and leave decisions and corrections to the user",
        },
    ];
    owned
        .into_iter()
        .map(|(pattern, reason)| (Regex::new(&pattern), reason))
        .chain(fixed.iter().map(|rule| (Regex::new(rule.pattern), rule.reason)))
        .chain(std::iter::once((Regex::new(&workmem_dir.0), workmem_dir.1)))
        // The patterns are constants checked by the tests below.
        .filter_map(|(regex, reason)| regex.ok().map(|regex| (regex, reason)))
        .collect()
}

/// Returns why `command` is refused, if it is: it matches the deny list,
/// or it names `memory_dir` (the workspace's memory directory).
pub fn refusal(command: &str, memory_dir: Option<&Path>) -> Option<&'static str> {
    let flat = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if memory_dir.and_then(Path::to_str).is_some_and(|dir| dir.len() > 1 && flat.contains(dir)) {
        return Some(
            "the memory directory is managed by workmem: use write_memory; the memory is already in your system \
             prompt",
        );
    }
    rules().into_iter().find(|(regex, _)| regex.is_match(&flat)).map(|(_, reason)| reason)
}

/// Runs commands for the model.
#[derive(Debug, Clone)]
pub struct BashTool {
    /// Where commands run (the project directory).
    pub dir: PathBuf,
    /// The memory directory, which commands may not name.
    pub memory_dir: Option<PathBuf>,
    /// Time a command may run before its process group is killed.
    pub timeout: Duration,
    /// Characters of output returned at most; the middle of longer output
    /// is cut.
    pub max_output_chars: usize,
}

impl BashTool {
    /// Returns a tool running in `dir` with the default timeout and cap.
    pub fn new(dir: impl Into<PathBuf>) -> BashTool {
        BashTool {
            dir: dir.into(),
            memory_dir: None,
            timeout: DEFAULT_TIMEOUT,
            max_output_chars: DEFAULT_MAX_OUTPUT_CHARS,
        }
    }

    /// Runs `command` and returns its (capped) output: stdout, then stderr
    /// under a `[stderr]` line, then a status line unless it exited 0.
    /// Refused commands, spawn failures, timeouts, cancellations and
    /// non-zero exits are errors.
    pub fn run(&self, command: &str, cancel: &Cancel) -> ToolOutput {
        if command.trim().is_empty() {
            return ToolOutput::error("invalid command: empty");
        }
        if let Some(reason) = refusal(command, self.memory_dir.as_deref()) {
            return ToolOutput::error(format!("refused: {reason}. The command was not run."));
        }
        let mut child = match spawn(command, &self.dir) {
            Ok(child) => child,
            Err(err) => return ToolOutput::error(format!("cannot start the shell: {err}")),
        };
        let stdout = Arc::new(Mutex::new(Captured::default()));
        let stderr = Arc::new(Mutex::new(Captured::default()));
        let (done_tx, done_rx) = mpsc::channel();
        let mut readers = 0;
        if let Some(pipe) = child.stdout.take() {
            start_reader(pipe, Arc::clone(&stdout), done_tx.clone());
            readers += 1;
        }
        if let Some(pipe) = child.stderr.take() {
            start_reader(pipe, Arc::clone(&stderr), done_tx.clone());
            readers += 1;
        }
        drop(done_tx);
        let started = Instant::now();
        let ending = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ending::Exited(status),
                Ok(None) => {}
                Err(err) => {
                    kill_group(&mut child);
                    break Ending::Failed(err.to_string());
                }
            }
            if cancel.is_cancelled() {
                kill_group(&mut child);
                break Ending::Cancelled;
            }
            if started.elapsed() >= self.timeout {
                kill_group(&mut child);
                break Ending::TimedOut;
            }
            std::thread::sleep(POLL);
        };
        // Background processes may keep the pipes open; wait a little, then
        // take what arrived (the reader threads end with those processes).
        let grace_end = Instant::now() + DRAIN_GRACE;
        let mut finished = 0;
        while finished < readers {
            let left = grace_end.saturating_duration_since(Instant::now());
            match done_rx.recv_timeout(left) {
                Ok(()) => finished += 1,
                Err(_) => break,
            }
        }
        let out = take(&stdout);
        let err = take(&stderr);
        let mut text = out;
        if !err.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&err);
        }
        let (status_line, is_error) = match ending {
            Ending::Exited(status) if status.success() => (None, false),
            Ending::Exited(status) => (Some(describe_status(status)), true),
            Ending::Failed(message) => {
                (Some(format!("[waiting for the command failed: {message}]")), true)
            }
            Ending::Cancelled => {
                (Some("[cancelled by the user; the command was killed]".to_owned()), true)
            }
            Ending::TimedOut => (
                Some(format!(
                    "[timed out after {} s; the command was killed]",
                    self.timeout.as_secs_f64()
                )),
                true,
            ),
        };
        if finished < readers {
            text.push_str("\n[output still open after the command ended (a background process?); not awaited]");
        }
        let mut text = cap(&text, self.max_output_chars);
        if let Some(line) = status_line {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&line);
        }
        if text.is_empty() {
            text.push_str("(no output)");
        }
        ToolOutput { content: text, is_error }
    }
}

enum Ending {
    Exited(ExitStatus),
    Failed(String),
    Cancelled,
    TimedOut,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: usize,
}

fn spawn(command: &str, dir: &Path) -> std::io::Result<Child> {
    let build = |shell: &str| {
        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group: a timeout kills the whole pipeline,
            // and the terminal's Ctrl-C reaches only the chat, which cancels.
            cmd.process_group(0);
        }
        cmd
    };
    match build("bash").spawn() {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => build("sh").spawn(),
        other => other,
    }
}

fn start_reader(
    mut pipe: impl Read + Send + 'static,
    sink: Arc<Mutex<Captured>>,
    done: mpsc::Sender<()>,
) {
    let spawned =
        std::thread::Builder::new().name("workmem-bash-output".to_owned()).spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let Ok(mut captured) = sink.lock() else { break };
                        let room = MAX_CAPTURE_BYTES.saturating_sub(captured.bytes.len());
                        let kept = n.min(room);
                        captured.bytes.extend_from_slice(&buf[..kept]);
                        captured.dropped += n - kept;
                    }
                }
            }
            let _ = done.send(());
        });
    // Without a reader the output is lost, which the result then shows as
    // missing; the command itself still runs and is waited for.
    drop(spawned);
}

fn take(captured: &Arc<Mutex<Captured>>) -> String {
    let Ok(captured) = captured.lock() else { return String::new() };
    let mut text = String::from_utf8_lossy(&captured.bytes).into_owned();
    if captured.dropped > 0 {
        let _ = write!(text, "\n[{} more bytes not kept]", captured.dropped);
    }
    text
}

fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        // No unsafe here: the kill(1) utility signals the process group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("[exit code {code}]");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("[killed by signal {signal}]");
        }
    }
    "[ended abnormally]".to_owned()
}

/// Returns `text` cut to at most `max` characters plus a marker line: the
/// first fifth and the last four fifths are kept, since errors tend to come
/// last.
pub fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let head = max / 5;
    let tail = max - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n[... {} characters cut: output is capped at {max} characters ...]\n{}",
        &text[..head_end],
        total - max,
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().len(), 16);
    }

    #[test]
    fn destructive_commands_are_refused() {
        for command in [
            "rm -rf /",
            "rm -rf / ",
            "sudo rm -rf --no-preserve-root /",
            "rm -fr ~",
            "rm -rf ~/",
            "rm -r -f $HOME",
            "rm -rf *",
            "rm -rf .",
            "rm -Rf ..",
            "cd x && rm --recursive --force /",
            "rm -rf \"/\"",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "echo x > /dev/sda",
            ":(){ :|:& };:",
            "sudo shutdown -h now",
            "reboot",
            "chmod -R 777 /",
            "git push --force origin main",
            "git push -f",
            "git push origin +main",
            "git reset --hard HEAD~3",
            "git clean -fdx",
            "workmem resolve conflict-1 candidate-2 --revision 1 --event-id e --rationale r",
            "workmem -C . remember 'x'",
            "cat .workmem/memory/MEMORY.md",
            "rm -rf .workmem",
        ] {
            assert!(refusal(command, None).is_some(), "{command:?} should be refused");
        }
    }

    /// Retracting, restoring and redacting are a person's acts: a model
    /// that could would remove the evidence against what it wrote, or the
    /// record of a person's decision.
    #[test]
    fn no_command_can_retract_restore_or_redact() {
        for command in [
            "workmem retract f-17 --rationale wrong",
            "workmem --json retract --entry e-1 --rationale wrong",
            "workmem restore correction:5d1e --rationale right",
            "cd src && workmem redact --scan --yes --rationale leaked",
            "echo '{}' >> .workmem/memory/memory-corrections.jsonl",
        ] {
            assert!(refusal(command, None).is_some(), "{command:?} should be refused");
        }
        assert_eq!(refusal("git restore src/main.rs", None), None);
    }

    #[test]
    fn ordinary_commands_pass() {
        for command in [
            "ls -la",
            "rm -rf target",
            "rm -rf ./build/tmp",
            "rm file.txt",
            "cargo test",
            "git status && git diff",
            "git push origin main",
            "git reset --soft HEAD~1",
            "grep -r shutdown_handler src",
            "echo hello > out.txt",
            "workmem context",
            "workmem conflicts",
            "dd if=/dev/zero of=./blob bs=1k count=1",
        ] {
            assert_eq!(refusal(command, None), None, "{command:?} should pass");
        }
    }

    #[test]
    fn memory_dir_is_refused_by_path() {
        let dir = Path::new("/data/mem");
        assert!(refusal("cat /data/mem/curated.json", Some(dir)).is_some());
        assert!(refusal("cat /data/other", Some(dir)).is_none());
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        assert_eq!(cap("short", 10), "short");
        let text: String = (0..100).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let capped = cap(&text, 50);
        assert!(capped.starts_with(&text[..10]), "{capped}");
        assert!(capped.ends_with(&text[60..]), "{capped}");
        assert!(capped.contains("50 characters cut"), "{capped}");
        let wide = "\u{e9}".repeat(30);
        assert_eq!(cap(&wide, 10).chars().filter(|c| *c == '\u{e9}').count(), 10);
    }

    #[test]
    fn runs_in_dir_and_reports_status() {
        let dir = tempfile::tempdir().unwrap();
        let tool = BashTool::new(dir.path());
        let out = tool.run("pwd; echo oops >&2", &Cancel::new());
        assert!(!out.is_error, "{}", out.content);
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert!(out.content.starts_with(real.to_str().unwrap()), "{}", out.content);
        assert!(out.content.contains("[stderr]\noops"), "{}", out.content);
        let out = tool.run("exit 3", &Cancel::new());
        assert!(out.is_error);
        assert_eq!(out.content, "[exit code 3]");
        let out = tool.run("true", &Cancel::new());
        assert_eq!((out.content.as_str(), out.is_error), ("(no output)", false));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut tool = BashTool::new(dir.path());
        tool.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let out = tool.run("echo started; sleep 30 | cat; echo never", &Cancel::new());
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(out.is_error);
        assert!(out.content.contains("started"), "{}", out.content);
        assert!(out.content.contains("timed out after 0.3 s"), "{}", out.content);
        assert!(!out.content.contains("never"), "{}", out.content);
    }

    #[test]
    fn cancel_stops_a_command() {
        let dir = tempfile::tempdir().unwrap();
        let tool = BashTool::new(dir.path());
        let cancel = Cancel::new();
        let setter = cancel.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            setter.cancel();
        });
        let started = Instant::now();
        let out = tool.run("sleep 30", &cancel);
        thread.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(out.is_error);
        assert!(out.content.contains("cancelled"), "{}", out.content);
    }

    #[test]
    fn long_output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut tool = BashTool::new(dir.path());
        tool.max_output_chars = 1_000;
        let out = tool.run("seq 1 100000", &Cancel::new());
        assert!(!out.is_error);
        assert!(out.content.chars().count() < 1_200, "{}", out.content.len());
        assert!(out.content.starts_with("1\n2\n"));
        assert!(
            out.content.ends_with("99999\n100000\n"),
            "{}",
            &out.content[out.content.len() - 40..]
        );
        assert!(out.content.contains("characters cut"));
    }

    #[test]
    fn refused_command_does_not_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".workmem")).unwrap();
        let tool = BashTool::new(dir.path());
        let out = tool.run("rm -rf .workmem", &Cancel::new());
        assert!(out.is_error);
        assert!(out.content.starts_with("refused:"), "{}", out.content);
        assert!(dir.path().join(".workmem").is_dir());
    }
}
