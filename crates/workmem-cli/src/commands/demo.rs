//! `workmem demo`: an offline walk-through on a fresh workspace (a temporary
//! directory unless `--dir`), told in human text: facts recorded days apart,
//! a distill that promotes some and skips others (and says why, in the
//! words of `workmem explain`, from the decisions the library records while
//! it distills: the demo never restates the policy), a keyed
//! supersession, a tie that becomes a conflict case, its resolution by a
//! human, and the final agent context.
//!
//! Every timestamp is explicit and relative to fixed instants, so the story
//! and its fact and candidate ids are the same on every run (conflict ids
//! also hash the workspace's random id). The demo never touches the
//! user's workspace: it ignores `-C` and `--memory-dir`, and refuses a
//! `--dir` that already holds a `.workmem/` directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use jiff::SignedDuration;
use workmem::{
    Case, CaseStatus, CuratedState, Decision, Fact, FixedClock, NewFact, Policy, Reason, Report,
    Resolution, Stamp, Workspace,
};
use workmem::{DistillOptions, MemoryFile};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::conflicts::describe_case;
use crate::commands::policy::{Run, describe_reason};

/// Arguments of `workmem demo`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem demo
  workmem demo --dir /tmp/workmem-demo   # keep the files to look at afterwards")]
pub struct DemoArgs {
    /// Build the demo workspace here and keep it [default: a temporary directory, removed afterwards]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The first distill runs at this instant; facts are placed relative to it.
const DAY_ZERO: &str = "2026-03-01T12:00:00Z";
/// The later distills run this many days after [`DAY_ZERO`].
const LATER_DAYS: i64 = 40;
const PYTHON_KEY: &str = "runtime.python-version";
const RUNNER_KEY: &str = "test.runner";

/// Runs `workmem demo`.
///
/// Errors: usage error for a `--dir` that already holds a workspace; any
/// library error (none is expected on a fresh directory).
pub fn run(ctx: &Ctx, args: &DemoArgs) -> Result<(), CommandError> {
    let temp;
    let dir: &Path = if let Some(dir) = &args.dir {
        if workmem::workmem_dir(dir).exists() {
            return Err(CommandError::usage(format!(
                "{} already holds a .workmem directory",
                dir.display()
            ))
            .hinted("the demo needs a fresh directory; pick another --dir or omit it"));
        }
        std::fs::create_dir_all(dir).map_err(|err| CommandError::io(dir.display(), &err))?;
        dir
    } else {
        temp = tempfile::Builder::new()
            .prefix("workmem-demo-")
            .tempdir()
            .map_err(|err| CommandError::io("cannot create a temporary directory", &err))?;
        temp.path()
    };
    let mut demo = Demo::new(dir)?;
    demo.tell(args.dir.is_some())?;
    ctx.ui.text(&demo.out)
}

struct Demo {
    ws: Workspace,
    policy: Policy,
    day_zero: Stamp,
    later: Stamp,
    /// Facts recorded so far, in story order.
    facts: Vec<Fact>,
    /// What the previous distill said about each fact, by fact id.
    verdicts: BTreeMap<String, String>,
    out: String,
}

impl Demo {
    fn new(dir: &Path) -> Result<Demo, CommandError> {
        let day_zero = stamp(DAY_ZERO, 0)?;
        let later = stamp(DAY_ZERO, LATER_DAYS)?;
        // The clock only stamps defaults; every fact and distill below names
        // its own instant.
        let ws = Workspace::builder(dir).clock(Arc::new(FixedClock::new(later.clone()))).open()?;
        ws.init()?;
        Ok(Demo {
            ws,
            policy: Policy::default(),
            day_zero,
            later,
            facts: Vec::new(),
            verdicts: Default::default(),
            out: String::new(),
        })
    }

    fn tell(&mut self, keep: bool) -> Result<(), CommandError> {
        let p = self.policy.clone();
        let intro = format!("workmem demo: a fresh workspace in {}", self.ws.project().display());
        self.say(intro);
        self.say(format_args!(
            "Policy: facts must be older than {} days; a group qualifies with importance >= {} or >= {} \
             facts;\nreplacing an active keyed value takes >= {} newer facts.",
            p.minimum_age_days, p.minimum_importance, p.repeat_threshold, p.supersession_repeat_threshold
        ));

        self.facts_over_two_months()?;
        self.first_distill()?;
        self.keyed_value_changes()?;
        let cases = self.tie_becomes_a_case()?;
        self.human_resolves(&cases)?;
        self.distill_again()?;
        self.agent_context(keep)
    }

    /// Chapter 1: the facts recorded over two months.
    fn facts_over_two_months(&mut self) -> Result<(), CommandError> {
        self.chapter("1. Facts recorded over two months");
        self.record(
            "wal-1",
            "decision",
            4,
            None,
            -60,
            "Use SQLite in WAL mode for the local cache",
        )?;
        self.record("fmt-1", "convention", 3, None, -50, "Run cargo fmt before every commit")?;
        self.record("fmt-2", "convention", 3, None, -45, "run cargo fmt   before every commit")?;
        self.record("ci-1", "pitfall", 2, None, -40, "The CI runner has only 2 cores")?;
        self.record("rel-1", "outcome", 5, None, -40, "Released version 0.3")?;
        self.record("jiff-1", "decision", 5, None, -3, "Use jiff for all timestamps")?;
        self.record("py-1", "decision", 4, Some(PYTHON_KEY), -90, "Use Python 3.11")
    }

    /// Chapter 2: the first distill and the memory it makes.
    fn first_distill(&mut self) -> Result<(), CommandError> {
        let day_zero = self.day_zero.clone();
        self.chapter(&format!("2. Distill as of {}", day_zero.as_str()));
        self.distill(&day_zero)?;
        self.memory()
    }

    /// Chapter 3: a keyed value changes once enough newer facts agree.
    fn keyed_value_changes(&mut self) -> Result<(), CommandError> {
        let later = self.later.clone();
        self.chapter(&format!(
            "3. A keyed value changes ({PYTHON_KEY}); distill as of {}",
            later.as_str()
        ));
        self.say("One newer fact proposes Python 3.12:");
        self.record("py-2", "decision", 4, Some(PYTHON_KEY), 2, "Use Python 3.12")?;
        self.distill(&later)?;
        self.say(format_args!(
            "-> one newer fact is not enough: {PYTHON_KEY} keeps revision 1 (Python 3.11)."
        ));
        self.say("\nA second newer fact agrees:");
        self.record("py-3", "decision", 3, Some(PYTHON_KEY), 5, "Use Python 3.12")?;
        self.distill(&later)?;
        self.revisions(PYTHON_KEY)
    }

    /// Chapter 4: a tie becomes a conflict case; returns the cases it made.
    fn tie_becomes_a_case(&mut self) -> Result<Vec<Case>, CommandError> {
        let later = self.later.clone();
        self.chapter(&format!("4. A tie ({RUNNER_KEY}) becomes a conflict case"));
        self.say("Two equally strong, equally recent proposals for the same question:");
        self.record(
            "run-1",
            "convention",
            4,
            Some(RUNNER_KEY),
            6,
            "Run the tests with cargo nextest",
        )?;
        self.record(
            "run-2",
            "convention",
            4,
            Some(RUNNER_KEY),
            6,
            "Run the tests with plain cargo test",
        )?;
        let report = self.distill(&later)?;
        let queue = self.ws.conflicts()?;
        let cases: Vec<Case> = queue
            .cases
            .into_iter()
            .filter(|case| report.conflict_case_ids.contains(&case.conflict_id))
            .collect();
        self.say("-> distill does not guess. The conflict case, with its candidates:");
        for case in &cases {
            for line in describe_case(case) {
                self.say(format_args!("   {line}"));
            }
        }
        self.say("Neither value reaches the memory until a human decides.");
        Ok(cases)
    }

    /// Chapter 5: a human resolves the tie among `cases`.
    fn human_resolves(&mut self, cases: &[Case]) -> Result<(), CommandError> {
        let later = self.later.clone();
        self.chapter("5. A human resolves the tie");
        let Some(case) = cases.first().cloned() else {
            return Err(CommandError::invalid("demo", "the tie did not produce a conflict case"));
        };
        let Some(chosen) = case.candidates.iter().find(|c| c.content.contains("nextest")).cloned()
        else {
            return Err(CommandError::invalid(
                "demo",
                "the conflict case lacks the nextest candidate",
            ));
        };
        self.say(format_args!(
            "$ workmem resolve {} {} --revision {} --event-id demo-decision-1 --actor demo-reviewer \\\n    \
             --rationale 'nextest isolates flaky tests'",
            case.conflict_id, chosen.candidate_id, case.revision
        ));
        let adjudication = self.ws.resolve(Resolution {
            conflict_id: case.conflict_id.clone(),
            candidate_id: chosen.candidate_id.clone(),
            expected_revision: i64::from(case.revision),
            actor: "demo-reviewer".to_owned(),
            rationale: "nextest isolates flaky tests".to_owned(),
            event_id: "demo-decision-1".to_owned(),
            resolved_at: Some(later.clone()),
        })?;
        self.say(format_args!(
            "-> adjudication {} is in the audit stream: {:?} chosen by {}; the new active entry is {}.",
            adjudication.event_id, chosen.content, adjudication.actor, adjudication.resulting_active_entry_key
        ));
        let status =
            self.ws.conflicts()?.get(&case.conflict_id).map_or("missing", |c| c.status.as_str());
        self.say(format_args!("   The case is now {status}."));
        self.revisions(RUNNER_KEY)
    }

    /// Chapter 6: distilling again with the same inputs changes nothing.
    fn distill_again(&mut self) -> Result<(), CommandError> {
        let later = self.later.clone();
        self.chapter("6. Distill again with the same inputs");
        let before = self.state_files()?;
        let report = self.distill_quiet(&later)?;
        let unchanged = before == self.state_files()?;
        let open = self
            .ws
            .conflicts()?
            .cases
            .iter()
            .filter(|case| case.status == CaseStatus::Open)
            .count();
        self.say(format_args!(
            "created {}, updated {}, superseded {}, new conflict cases {}; {open} case(s) open. The rejected \
             candidate cannot come back without new evidence.",
            report.created, report.updated, report.superseded, report.queued_conflicts
        ));
        self.say(if unchanged {
            "curated.json, MEMORY.md and conflicts.json are byte for byte what they were: nothing was rewritten."
        } else {
            "unexpected: the state files changed although the inputs did not."
        });
        Ok(())
    }

    /// Chapter 7: the context an agent receives, and where the files went.
    fn agent_context(&mut self, keep: bool) -> Result<(), CommandError> {
        self.chapter("7. The context an agent receives");
        self.say(
            "Active curated values, the most recent unkeyed facts, and last the keyed facts the policy",
        );
        self.say(
            "has not reviewed yet, as claims; superseded revisions never appear, and no keyed fact",
        );
        self.say("passes for the curated value before the policy or a human accepts it.\n");
        self.say("$ workmem context");
        let context = self.ws.context(None)?;
        self.say(context.trim_end());
        self.say("");
        if keep {
            let kept = format!("The files are kept in {}.", self.ws.memory_dir().display());
            self.say(kept);
        } else {
            self.say("The temporary workspace is removed now (use --dir DIR to keep it).");
        }
        Ok(())
    }

    /// Returns the bytes of the canonical state files (None when missing).
    fn state_files(&self) -> Result<Vec<Option<Vec<u8>>>, CommandError> {
        [MemoryFile::Curated, MemoryFile::View, MemoryFile::Conflicts]
            .into_iter()
            .map(|file| {
                let path = self.ws.file(file.pattern());
                match std::fs::read(&path) {
                    Ok(data) => Ok(Some(data)),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(err) => Err(CommandError::io(path.display(), &err)),
                }
            })
            .collect()
    }

    fn say(&mut self, text: impl std::fmt::Display) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.out, "{text}");
    }

    fn chapter(&mut self, title: &str) {
        self.say(format_args!("\n== {title} =="));
    }

    /// Appends one fact recorded `days` after [`DAY_ZERO`].
    fn record(
        &mut self,
        id: &str,
        kind: &str,
        importance: i64,
        key: Option<&str>,
        days: i64,
        content: &str,
    ) -> Result<(), CommandError> {
        let new = NewFact {
            content: content.to_owned(),
            kind: Some(kind.to_owned()),
            importance: Some(importance),
            memory_key: key.map(str::to_owned),
            source: Some("demo".to_owned()),
            evidence: Default::default(),
            recorded_at: Some(stamp(DAY_ZERO, days)?.as_str().to_owned()),
            fact_id: Some(id.to_owned()),
        };
        let fact = self.ws.remember(new)?;
        let key = fact.memory_key().map(|k| format!(" {k}:")).unwrap_or_default();
        self.say(format_args!(
            "  {:<7} {}  {:<10} importance {}{key} {:?}",
            fact.fact_id(),
            fact.recorded_at().utc_day(),
            fact.kind().as_str(),
            fact.importance(),
            fact.content()
        ));
        self.facts.push(fact);
        Ok(())
    }

    fn distill_quiet(&mut self, as_of: &Stamp) -> Result<Report, CommandError> {
        Ok(self
            .ws
            .distill(&DistillOptions::new().policy(self.policy.clone()).as_of(as_of.clone()))?
            .report)
    }

    /// Runs distill, prints its report and what happened to each fact: the
    /// library's own decisions for this run, in story order.
    fn distill(&mut self, as_of: &Stamp) -> Result<Report, CommandError> {
        let (report, decisions) = self
            .ws
            .distill(
                &DistillOptions::new().policy(self.policy.clone()).as_of(as_of.clone()).explain(),
            )?
            .into_parts();
        self.say(format_args!("\n$ workmem distill --as-of {}", as_of.as_str()));
        for line in crate::commands::distill::describe(&report) {
            self.say(format_args!("  {line}"));
        }
        let curated = self.ws.curated()?;
        let decisions: BTreeMap<&str, &Decision> =
            decisions.iter().map(|d| (d.fact_id.as_str(), d)).collect();
        let first = self.verdicts.is_empty();
        let changed: Vec<(String, String)> = self
            .facts
            .iter()
            .filter_map(|fact| decisions.get(fact.fact_id()))
            .map(|decision| (decision.fact_id.clone(), verdict(decision, &curated)))
            .filter(|(id, verdict)| self.verdicts.get(id) != Some(verdict))
            .collect();
        self.say(if first {
            "What happened to each fact:"
        } else {
            "What changed since the previous distill:"
        });
        if changed.is_empty() {
            self.say("  nothing");
        }
        for (id, verdict) in changed {
            self.say(format_args!("  {id:<7} {verdict}"));
            self.verdicts.insert(id, verdict);
        }
        Ok(report)
    }

    fn memory(&mut self) -> Result<(), CommandError> {
        let memory = self.ws.memory()?;
        self.say("\n$ workmem memory");
        for line in memory.lines() {
            let line = format!("  | {line}");
            self.say(line.trim_end());
        }
        Ok(())
    }

    fn revisions(&mut self, key: &str) -> Result<(), CommandError> {
        let curated = self.ws.curated()?;
        self.say(format_args!("-> {key} now has these revisions:"));
        let lines: Vec<String> = curated
            .entries
            .iter()
            .filter(|e| e.memory_key.as_deref() == Some(key))
            .map(|e| {
                let status = e.status.as_str();
                let link = match (&e.supersedes, &e.superseded_by) {
                    (_, Some(by)) => format!(", superseded by {by}"),
                    (Some(old), None) => format!(", supersedes {old}"),
                    (None, None) => String::new(),
                };
                format!(
                    "   revision {} {:<10} {:?} key {}{link}, evidence {}",
                    e.revision,
                    status,
                    e.content,
                    e.key,
                    e.evidence_ids.iter().collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        for line in lines {
            self.say(line);
        }
        Ok(())
    }
}

/// Returns where a fact stands after a distill, from the library's decision.
///
/// A fact that is evidence of an entry is told by that entry as it is now
/// (whether this run or an earlier one promoted it, and whether a later
/// revision has replaced it), so that "what changed" lists a fact again only
/// when its standing changed; every other reason reads as in `workmem
/// explain`.
fn verdict(decision: &Decision, curated: &CuratedState) -> String {
    let entry_of = |key: &str| curated.entries.iter().find(|entry| entry.key == key);
    match &decision.reason {
        Reason::Promoted { entry_key, .. } | Reason::AlreadyEvidence { entry_key, .. } => {
            if let Some(entry) = entry_of(entry_key) {
                let status = entry.status.as_str();
                return match &entry.memory_key {
                    Some(key) => {
                        format!(
                            "evidence of {key} revision {} ({status}): {:?}",
                            entry.revision, entry.content
                        )
                    }
                    None => format!("promoted: {:?} (seen {}x)", entry.content, entry.occurrences),
                };
            }
            describe_reason(&decision.reason, None, Run::Written)
        }
        reason => {
            let entry =
                reason_entry_key(reason).and_then(entry_of).map(|e| (e.content.as_str(), e.status));
            describe_reason(reason, entry, Run::Written)
        }
    }
}

/// Returns the key of the entry a reason names, if any.
fn reason_entry_key(reason: &Reason) -> Option<&str> {
    match reason {
        Reason::AlreadyEvidence { entry_key, .. }
        | Reason::Promoted { entry_key, .. }
        | Reason::Reinforced { entry_key, .. }
        | Reason::Stale { entry_key, .. }
        | Reason::NeedsMoreEvidence { entry_key, .. } => Some(entry_key),
        _ => None,
    }
}

/// Returns the stamp `days` days after `base`.
fn stamp(base: &str, days: i64) -> Result<Stamp, CommandError> {
    let base = Stamp::parse(base).map_err(|msg| CommandError::invalid("demo timestamp", msg))?;
    Ok(Stamp::from_timestamp(base.instant() + SignedDuration::from_hours(24 * days)))
}
