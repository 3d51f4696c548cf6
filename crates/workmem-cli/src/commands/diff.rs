//! `workmem diff REV_RANGE`: what a git revision range changes in the
//! memory, for code review, read from git's objects without a checkout.
//!
//! Range semantics (docs/cli.md): `A..B` and `A...B` both compare the
//! merge base of A and B with B (what the branch B adds, as a pull request
//! shows it); a single revision R compares R's first parent with R (a root
//! commit with an empty memory). The memory directory is found in each tree
//! at the path it has in the work tree (default `.workmem/memory`, or
//! `--memory-dir` relative to the repository's top), the pin at
//! `.workmem/workspace.toml` of the project.
//!
//! This module runs git (`rev-parse`, `merge-base`, `ls-tree`, `cat-file
//! --batch`) and hands the bytes to [`workmem::MemoryDiff::between`], which
//! decodes them as untrusted input. It never writes anything, never opens
//! the workspace (no recovery runs) and never checks anything out.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use clap::Args;
use workmem::{
    DiffDecision, DiffEntries, Entry, Fact, Finding, MemoryDiff, MemorySnapshot, Problem,
};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::DiffOutput;

/// Arguments of `workmem diff`.
#[derive(Debug, Args)]
#[command(after_help = "Ranges:
  A..B, A...B   what B adds since it forked from A: the merge base of A and B
                against B (an omitted side is HEAD)
  R             what the commit R changes: R's first parent against R

Output: `+` lines are added by the range, `-` lines removed, `!` lines need a
reviewer's attention (decisions set aside, files that do not decode).

Examples:
  workmem diff main..feature
  workmem diff origin/main...HEAD --json
  workmem diff HEAD            # what the last commit changed
  workmem diff \"$BASE_SHA..$HEAD_SHA\"   # a pull request, in CI")]
pub struct DiffArgs {
    /// The revisions to compare: `A..B`, `A...B` or one commit
    #[arg(value_name = "REV_RANGE")]
    pub range: String,
}

/// Runs `workmem diff`.
///
/// Errors: exit 2 for a range that names no commit, commits without a
/// merge base, or a project outside a git repository; exit 1 when git
/// cannot run.
pub fn run(ctx: &Ctx, args: &DiffArgs) -> Result<(), CommandError> {
    let repo = Repo::of(ctx)?;
    let config = crate::config_load::load(&ctx.project)?;
    let (base, head) = repo.range(&args.range)?;
    let snapshot = |commit: Option<&str>| -> Result<MemorySnapshot, CommandError> {
        match commit {
            Some(commit) => repo.snapshot(commit),
            None => Ok(MemorySnapshot::new(&repo.memory_dir)),
        }
    };
    let diff = MemoryDiff::between(&snapshot(base.as_deref())?, &snapshot(Some(&head))?, &config);
    let memory_dir = repo.memory_dir.to_string_lossy();
    if ctx.ui.is_json() {
        return ctx.ui.json(&DiffOutput {
            base: base.as_deref(),
            head: &head,
            memory_dir: &memory_dir,
            diff: &diff,
        });
    }
    let base_name = base.as_deref().map_or("(empty tree)", short);
    if diff.is_empty() {
        return ctx.ui.line(format!(
            "no memory changes between {base_name} and {} ({memory_dir})",
            short(&head)
        ));
    }
    ctx.ui.lines(render(&diff, &format!("{base_name}..{} ({memory_dir})", short(&head))))
}

/// Returns the first 12 digits of a commit id.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// Returns the text of `diff`, read like a code diff: a heading per part,
/// `+` for what the range adds, `-` for what it removes, `!` for what needs
/// attention. Every line is printed with control characters escaped.
fn render(diff: &MemoryDiff, title: &str) -> Vec<String> {
    let mut out = vec![format!("memory diff {title}")];
    let mut section = |heading: String, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push(String::new());
            out.push(heading);
            out.extend(lines);
        }
    };
    section(
        format!("facts added ({})", diff.facts_added.len()),
        diff.facts_added.iter().map(|fact| format!("+ {}", fact_line(fact))).collect(),
    );
    section(
        format!(
            "facts removed ({}): the log is append-only; merging this range deletes them from \
             every clone that takes it",
            diff.facts_removed.len()
        ),
        diff.facts_removed.iter().map(|fact| format!("- {}", fact_line(fact))).collect(),
    );
    section(
        format!("decisions added ({})", diff.decisions_added.len()),
        diff.decisions_added.iter().map(|d| format!("+ {}", decision_line(d))).collect(),
    );
    section(
        format!(
            "decisions removed ({}): the audit stream is append-only; a human decision is gone",
            diff.decisions_removed.len()
        ),
        diff.decisions_removed.iter().map(|d| format!("- {}", decision_line(d))).collect(),
    );
    section(
        format!(
            "decisions set aside ({}): their outcome no longer holds at the head",
            diff.decisions_set_aside.len()
        ),
        diff.decisions_set_aside
            .iter()
            .map(|d| {
                format!(
                    "! {}: {}",
                    decision_line(d),
                    d.set_aside.as_deref().unwrap_or("does not close its case")
                )
            })
            .collect(),
    );
    let entry_lines = entry_lines(&diff.entries);
    section(format!("curated entries ({})", entry_lines.len()), entry_lines);
    let context = &diff.context;
    let mut context_lines: Vec<String> = Vec::new();
    context_lines.extend(context.removed.iter().map(|line| format!("- {line}")));
    context_lines.extend(context.added.iter().map(|line| format!("+ {line}")));
    section("agent context".to_owned(), context_lines);
    if !context.complete {
        section(
            "agent context".to_owned(),
            vec![
                "! not compared: a file it needs does not decode at one revision (below)"
                    .to_owned(),
            ],
        );
    }
    section(
        format!(
            "credentials ({}): withheld from the lists above; take them out of the branch \
             before it is merged (a committed credential stays in git's history)",
            diff.credentials.len()
        ),
        diff.credentials.iter().map(credential_line).collect(),
    );
    for (side, problems) in [("base", &diff.problems_at_base), ("head", &diff.problems_at_head)] {
        section(
            format!(
                "files that do not decode at the {side} ({}): not compared, not trusted",
                problems.len()
            ),
            problems.iter().map(|p| format!("! {}", problem_line(p))).collect(),
        );
    }
    out
}

/// Returns the lines of the curated entries the range changes: `+` for a
/// revision it creates, `-` for one it supersedes, retracts or deletes.
fn entry_lines(entries: &DiffEntries) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    lines.extend(entries.created.iter().map(|e| {
        let state = if e.is_active() {
            "created"
        } else if e.is_contested() {
            "created, contested: under review until a person decides"
        } else {
            "created, already superseded"
        };
        format!("+ {}  ({state})", entry_line(e))
    }));
    lines.extend(entries.superseded.iter().map(|e| {
        format!(
            "- {}  (superseded by {})",
            entry_line(e),
            e.superseded_by.as_deref().unwrap_or("another revision")
        )
    }));
    lines.extend(entries.retracted.iter().map(|e| {
        if e.is_contested() {
            format!("- {}  (contested: under review until a person decides)", entry_line(e))
        } else {
            format!("- {}  (left the memory: its record is gone from curated.json)", entry_line(e))
        }
    }));
    lines.extend(entries.removed.iter().map(|e| {
        format!("- {}  (history deleted: curated.json keeps every revision)", entry_line(e))
    }));
    lines
}

/// Returns the line of a credential the range would commit.
fn credential_line(found: &Finding) -> String {
    format!(
        "! {}: {} {}: {}",
        found.file,
        found.record.as_deref().unwrap_or("record"),
        found.field,
        found.kind
    )
}

fn fact_line(fact: &Fact) -> String {
    let key = fact.memory_key().map(|key| format!("{key}: ")).unwrap_or_default();
    format!(
        "{} [{}] {key}{}  (source {}, importance {}, id {})",
        fact.recorded_at(),
        fact.kind(),
        fact.content(),
        fact.source(),
        fact.importance(),
        fact.fact_id()
    )
}

fn decision_line(decision: &DiffDecision) -> String {
    let record = &decision.record;
    let key = decision.memory_key.as_deref().unwrap_or("(case not found)");
    let chosen = match &decision.chosen_content {
        Some(content) => format!("{content:?}"),
        None => record.selected_candidate_id.clone(),
    };
    format!(
        "{} {} on {key} ({}): chose {chosen}, by {}: {}",
        record.resolved_at, record.event_id, record.conflict_id, record.actor, record.rationale
    )
}

fn entry_line(entry: &Entry) -> String {
    let key = match &entry.memory_key {
        Some(key) => format!("{key} revision {}: ", entry.revision),
        None => String::new(),
    };
    format!(
        "[{}] {key}{}  (key {}, seen {}x)",
        entry.kind, entry.content, entry.key, entry.occurrences
    )
}

fn problem_line(problem: &Problem) -> String {
    match problem.line {
        Some(line) => format!("{}:{line}: {}", problem.file, problem.message),
        None => format!("{}: {}", problem.file, problem.message),
    }
}

/// The git repository of the project, and where the memory lives in its
/// trees.
struct Repo {
    /// The top of the work tree (where git runs).
    top: PathBuf,
    /// The memory directory, relative to the top.
    memory_dir: PathBuf,
    /// The workspace pin, relative to the top.
    pin: PathBuf,
}

impl Repo {
    /// Returns the repository of `ctx`'s project.
    ///
    /// Errors: a usage error outside a git repository or for a memory
    /// directory outside it.
    fn of(ctx: &Ctx) -> Result<Repo, CommandError> {
        let project = std::fs::canonicalize(&ctx.project).unwrap_or_else(|_| ctx.project.clone());
        let Some(top) = crate::git::toplevel(&project) else {
            return Err(CommandError::usage(format!(
                "{} is not inside a git repository: `workmem diff` reads the memory from git's \
                 commits",
                project.display()
            ))
            .hinted("run it in a clone, or pass -C PROJECT_DIR"));
        };
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let memory =
            ctx.memory_dir.clone().unwrap_or_else(|| workmem::default_memory_dir(&project));
        let inside = |path: &Path| path.strip_prefix(&top).ok().map(Path::to_path_buf);
        let Some(memory_dir) = inside(&memory).filter(|p| !p.as_os_str().is_empty()) else {
            return Err(CommandError::usage(format!(
                "the memory directory {} is not inside the git repository at {}",
                memory.display(),
                top.display()
            ))
            .hinted("a memory that git does not hold has no revisions to compare"));
        };
        let pin = inside(&workmem::pin_file(&project))
            .unwrap_or_else(|| workmem::pin_file(Path::new("")));
        Ok(Repo { top, memory_dir, pin })
    }

    /// Runs git in the top of the work tree with `args` (pathspecs taken
    /// literally).
    ///
    /// Errors: I/O error when git cannot run.
    fn git<I, S>(&self, args: I) -> Result<Output, CommandError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .arg("--literal-pathspecs")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|err| {
                CommandError::io("cannot run git", &err).hinted("`workmem diff` needs git on PATH")
            })
    }

    /// Returns the base (`None`: the empty tree) and head commits of
    /// `range` by the semantics in the module docs.
    ///
    /// Errors: a usage error naming the revision that is not a commit, or
    /// commits without a merge base.
    fn range(&self, range: &str) -> Result<(Option<String>, String), CommandError> {
        let split = range.split_once("...").or_else(|| range.split_once(".."));
        let Some((from, to)) = split else {
            let head = self.commit(range)?;
            return Ok((self.first_parent(&head)?, head));
        };
        let (from, to) = (
            self.commit(if from.is_empty() { "HEAD" } else { from })?,
            self.commit(if to.is_empty() { "HEAD" } else { to })?,
        );
        let out = self.git(["merge-base", from.as_str(), to.as_str()])?;
        let base = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || base.is_empty() {
            return Err(CommandError::usage(format!(
                "{} has no merge base: the two sides share no history",
                quoted(range)
            ))
            .hinted("compare one commit with `workmem diff COMMIT`, or give related branches"));
        }
        Ok((Some(base), to))
    }

    /// Returns the full id of the commit `rev` names.
    ///
    /// Errors: a usage error when it names none.
    fn commit(&self, rev: &str) -> Result<String, CommandError> {
        let refused = || {
            CommandError::usage(format!(
                "REV_RANGE: {} is not a commit of the repository at {}",
                quoted(rev),
                self.top.display()
            ))
            .hinted("give a branch, a tag or a commit id: `A..B`, `A...B` or one commit")
        };
        if rev.is_empty() || rev.starts_with('-') || rev.contains(char::is_whitespace) {
            return Err(refused());
        }
        let out = self.git([
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ])?;
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || id.is_empty() {
            return Err(refused());
        }
        Ok(id)
    }

    /// Returns the first parent of `commit`, `None` for a root commit.
    ///
    /// Errors: I/O error when git cannot run.
    fn first_parent(&self, commit: &str) -> Result<Option<String>, CommandError> {
        let out = self.git(["rev-parse", "--verify", "--quiet", &format!("{commit}^1")])?;
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok((out.status.success() && !id.is_empty()).then_some(id))
    }

    /// Returns the memory files and the pin of `commit`'s tree.
    ///
    /// Errors: a usage or I/O error when git cannot list or read them.
    fn snapshot(&self, commit: &str) -> Result<MemorySnapshot, CommandError> {
        let out = self.git([
            OsStr::new("ls-tree"),
            OsStr::new("-r"),
            OsStr::new("-z"),
            OsStr::new("--full-tree"),
            OsStr::new(commit),
            OsStr::new("--"),
            self.memory_dir.as_os_str(),
            self.pin.as_os_str(),
        ])?;
        if !out.status.success() {
            return Err(git_failed("ls-tree", &out));
        }
        // "<mode> SP <type> SP <object> TAB <path>" NUL
        let mut wanted: Vec<(PathBuf, Option<String>)> = Vec::new();
        for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let text = String::from_utf8_lossy(record);
            let Some((meta, path)) = text.split_once('\t') else { continue };
            let mut parts = meta.split(' ');
            let (Some(mode), Some(kind), Some(object)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let regular = kind == "blob" && (mode == "100644" || mode == "100755");
            wanted.push((PathBuf::from(path), regular.then(|| object.to_owned())));
        }
        let blobs = self.blobs(wanted.iter().filter_map(|(_, object)| object.as_deref()))?;
        let read = |object: &Option<String>| object.as_ref().and_then(|o| blobs.get(o).cloned());
        let mut snapshot = MemorySnapshot::new(&self.memory_dir);
        for (path, object) in &wanted {
            if *path == self.pin {
                snapshot = snapshot.with_pin(path, read(object));
            } else if let Ok(name) = path.strip_prefix(&self.memory_dir) {
                snapshot = snapshot.with_file(name.to_string_lossy(), read(object));
            }
        }
        Ok(snapshot)
    }

    /// Returns the content of each blob in `objects`, read in one `git
    /// cat-file --batch`.
    ///
    /// Errors: an I/O error when git cannot run or its output is cut short.
    fn blobs<'a>(
        &self,
        objects: impl Iterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, Vec<u8>>, CommandError> {
        let mut input = String::new();
        for object in objects {
            input.push_str(object);
            input.push('\n');
        }
        if input.is_empty() {
            return Ok(BTreeMap::new());
        }
        let cannot = |err: &std::io::Error| CommandError::io("cannot read git objects", err);
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| cannot(&err))?;
        let mut stdin =
            child.stdin.take().ok_or_else(|| cannot(&std::io::Error::other("no stdin")))?;
        // Written from another thread: git answers while it reads, and a
        // full pipe on either side would otherwise stop both.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let mut data = Vec::new();
        let read = child.stdout.take().map(|mut out| out.read_to_end(&mut data));
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let status = child.wait().map_err(|err| cannot(&err))?;
        if let Some(Err(err)) = read {
            return Err(cannot(&err));
        }
        written.map_err(|err| cannot(&err))?;
        if !status.success() {
            return Err(cannot(&std::io::Error::other(format!(
                "git cat-file exited with {status}"
            ))));
        }
        parse_batch(&data)
            .ok_or_else(|| cannot(&std::io::Error::other("malformed git cat-file output")))
    }
}

/// Parses `git cat-file --batch` output: per object, `<oid> <type>
/// <size>\n<content>\n` (or `<oid> missing\n`, left out).
fn parse_batch(mut data: &[u8]) -> Option<BTreeMap<String, Vec<u8>>> {
    let mut blobs = BTreeMap::new();
    while !data.is_empty() {
        let end = data.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(&data[..end]).ok()?;
        data = &data[end + 1..];
        let mut parts = header.split(' ');
        let (Some(object), Some(kind)) = (parts.next(), parts.next()) else { return None };
        if kind == "missing" {
            continue;
        }
        let size: usize = parts.next()?.parse().ok()?;
        let content = data.get(..size)?;
        if kind == "blob" {
            blobs.insert(object.to_owned(), content.to_vec());
        }
        data = data.get(size + 1..)?;
    }
    Some(blobs)
}

/// Returns the error of a git command that failed.
fn git_failed(what: &str, out: &Output) -> CommandError {
    CommandError::usage(format!(
        "`git {what}` failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Returns `rev` quoted for a message, unless the secret guard finds a
/// credential in it (then it is not repeated).
fn quoted(rev: &str) -> String {
    if workmem::find_secret(rev).is_some() {
        "the revision given (not shown: it looks like a credential)".to_owned()
    } else {
        format!("`{rev}`")
    }
}

#[cfg(test)]
mod tests {
    use super::parse_batch;

    #[test]
    fn cat_file_batch_output_parses_blobs_and_skips_missing_objects() {
        let data = b"aa blob 3\nabc\nbb missing\ncc blob 0\n\n";
        let blobs = parse_batch(data).unwrap();
        assert_eq!(blobs.get("aa").map(Vec::as_slice), Some(&b"abc"[..]));
        assert_eq!(blobs.get("cc").map(Vec::as_slice), Some(&b""[..]));
        assert!(!blobs.contains_key("bb"));
        assert!(parse_batch(b"aa blob 10\nabc\n").is_none());
    }
}
