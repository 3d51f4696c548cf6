//! The distill policy (docs/policy.md): a pure function from the fact log,
//! the curated state and the conflict queue to their next versions and a
//! report.
//!
//! It never touches the filesystem and never reads the clock: `as_of` is an
//! input. Equal inputs give equal outputs, and running it again on its own
//! output with the same `as_of` changes nothing (the fixpoint of 5.3f).

use std::collections::{BTreeMap, BTreeSet};

// A fast seeded hasher: the policy hashes every fact id and normal form.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use jiff::SignedDuration;

use crate::model::canon;
use crate::model::fact::Kind;
use crate::model::fact_line::FactRecord;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::policy::PolicyError;
pub use crate::policy::report::{Decision, Reason, Report};
pub use crate::policy::rules::{MAX_AGE_DAYS, Policy, SourcePolicy};
use crate::store::conflict_queue::{self, Candidate, Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry, Revision, Status, push_revision};

/// The policy's result: the reason alone for damage of the curated state.
type Result<T> = std::result::Result<T, PolicyError>;

/// The result of [`distill`].
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Next curated state.
    pub curated: CuratedState,
    /// Next conflict queue.
    pub queue: ConflictQueue,
    /// Whether `curated` differs from the input.
    pub curated_changed: bool,
    /// Whether `queue` differs from the input.
    pub queue_changed: bool,
    /// Counters.
    pub report: Report,
    /// Per-fact decisions, in fact order; empty unless requested.
    pub decisions: Vec<Decision>,
    /// How many of the report's `skipped` facts were already evidence of
    /// an entry (promoted by an earlier run), as opposed to not promoted.
    pub already_evidence: usize,
    /// What a distill cache keeps of the run; `None` unless collected.
    pub collected: Option<Collected>,
}

/// What a run leaves for the next one to start from (see
/// [`RunOptions::partial`]): its candidates left unpromoted, and what each
/// memory key it judged contributes to the report of a run that finds
/// nothing new.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Ids of the candidate facts that are not evidence after the run
    /// (a partial run's: see [`RunOptions::partial`]).
    pub pending: Vec<String>,
    /// The same facts of a whole run ([`RunOptions::collected`]), by position
    /// in its input, grouped by memory key (in input order).
    pub pending_keyed: BTreeMap<String, Vec<usize>>,
    /// The same facts of a whole run without a memory key, by unkeyed
    /// group: the group's entry key and the positions of its facts (in
    /// input order).
    pub pending_unkeyed: Vec<(String, Vec<usize>)>,
    /// For each memory key with candidates: the facts counted `stale` in
    /// its final round, and the conflict case of its tie, if any.
    pub domains: BTreeMap<String, (usize, Option<String>)>,
    /// Whether the input state is one a cache may start from: every
    /// evidence id of the curated state is a fact of the log, aged at
    /// `as_of`, and of the entry's memory key.
    pub cacheable: bool,
}

/// What a partial run knows of the log beyond the facts it is given: for
/// each memory key it judges, every fact id in the log with that key and
/// the fact's importance.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Memory key -> (fact id, importance) of every fact with that key.
    pub domains: HashMap<String, Vec<(String, u8)>>,
}

/// Returns the `observed_fact_ids` of a domain: every fact id in the log
/// with `memory_key`, plus every candidate's evidence, sorted and unique.
pub fn observed_fact_ids<'a>(
    domain_fact_ids: impl IntoIterator<Item = &'a str>,
    candidates: &[Candidate],
) -> IdList {
    let mut ids: BTreeSet<&str> = domain_fact_ids.into_iter().collect();
    for candidate in candidates {
        ids.extend(candidate.evidence_ids.iter());
    }
    ids.into_iter().collect()
}

struct Proposal<'a, F: FactRecord> {
    kind: Kind,
    facts: Vec<&'a F>,
    /// The facts' ids, sorted.
    ids: Vec<&'a str>,
    max_importance: u8,
    first: Stamp,
    last: Stamp,
    /// Wording: highest importance, newest, largest id.
    wording: &'a F,
}

impl<'a, F: FactRecord> Proposal<'a, F> {
    fn new(kind: Kind, facts: Vec<&'a F>) -> Proposal<'a, F> {
        let first =
            facts.iter().min_by_key(|f| f.instant()).expect("non-empty group").recorded_at();
        let last = facts.iter().max_by_key(|f| f.instant()).expect("non-empty group").recorded_at();
        let wording = *facts
            .iter()
            .max_by(|a, b| {
                (a.importance(), a.instant(), &a.fact_id()).cmp(&(
                    b.importance(),
                    b.instant(),
                    &b.fact_id(),
                ))
            })
            .expect("non-empty group");
        let max_importance = facts.iter().map(|f| f.importance()).max().unwrap_or(1);
        let mut ids: Vec<&'a str> = facts.iter().map(|f| f.fact_id()).collect();
        ids.sort_unstable();
        Proposal { kind, facts, ids, max_importance, first, last, wording }
    }

    fn owned_ids(&self) -> IdList {
        let bytes = self.ids.iter().map(|id| id.len()).sum();
        let mut list = IdList::with_capacity(self.ids.len(), bytes);
        list.extend(self.ids.iter());
        list
    }

    fn score(&self) -> (u8, usize, jiff::Timestamp) {
        (self.max_importance, self.facts.len(), self.last.instant())
    }

    /// A group qualifies when any fact meets its own source's importance
    /// threshold, or it has `repeat_threshold` distinct facts.
    fn qualifies(&self, policy: &Policy) -> bool {
        self.facts.iter().any(|f| f.importance() >= policy.importance_for(f.source()))
            || self.facts.len() as u64 >= u64::from(policy.repeat_threshold)
    }

    fn below_thresholds(&self, policy: &Policy) -> Reason {
        Reason::BelowThresholds {
            importance: self.max_importance,
            minimum_importance: self
                .facts
                .iter()
                .map(|f| policy.importance_for(f.source()))
                .min()
                .unwrap_or(5),
            facts: self.facts.len(),
            repeat_threshold: policy.repeat_threshold,
        }
    }

    fn candidate(&self, memory_key: &str) -> Candidate {
        Candidate {
            candidate_id: canon::candidate_id(
                memory_key,
                self.kind.as_str(),
                self.wording.content(),
            ),
            kind: self.kind,
            content: self.wording.content().to_owned(),
            evidence_ids: self.owned_ids(),
            occurrences: self.ids.len() as u64,
            maximum_importance: self.max_importance,
            first_seen: self.first.clone(),
            last_seen: self.last.clone(),
            incumbent: false,
            released_evidence_ids: IdList::new(),
            retracted_evidence_ids: IdList::new(),
        }
    }
}

/// How a run of the policy goes: over the whole log or only some units of
/// it, and what it keeps beyond the next state. The default judges the
/// whole log and keeps nothing more.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions<'k> {
    /// Record, for every fact, where it stands and why.
    explain: bool,
    /// Collect what a distill cache keeps.
    collect: bool,
    /// Judge only the units of the facts given (a partial run).
    known: Option<&'k Known>,
}

impl<'k> RunOptions<'k> {
    /// Returns the options of a run that also records, for every fact,
    /// where it stands and why ([`Outcome::decisions`]). The same code
    /// decides both.
    pub fn explained() -> RunOptions<'k> {
        RunOptions { explain: true, ..RunOptions::default() }
    }

    /// Returns the options of a run that also collects what a distill
    /// cache keeps ([`Outcome::collected`]). The facts must hold each fact
    /// id once, as the log's reader returns them (no set of seen ids is
    /// kept).
    pub fn collected() -> RunOptions<'k> {
        RunOptions { collect: true, ..RunOptions::default() }
    }

    /// Returns the options of a run over only some units of the log, which
    /// collects like [`RunOptions::collected`]: the facts are every
    /// candidate (aged, of a stable kind, evidence of no entry) of the
    /// memory keys and unkeyed groups to judge, and `known` gives, for each
    /// of those memory keys, every fact id of the log with the key. Units
    /// without a fact are not judged: the caller knows they would not
    /// change. The curated state and the queue need only hold the entries
    /// and cases of the units judged (the outcome's are those, changed).
    /// The report counts only the facts given.
    pub fn partial(known: &'k Known) -> RunOptions<'k> {
        RunOptions { collect: true, known: Some(known), ..RunOptions::default() }
    }

    /// Whether the run judges the whole log and collects for a cache.
    fn whole_collected(&self) -> bool {
        self.collect && self.known.is_none()
    }
}

/// Runs the policy over `facts` (all facts of the workspace, any order) at
/// `as_of`, starting from `curated` (consumed: the outcome holds the new
/// state, which is `curated` itself when nothing changed).
///
/// Errors: [`PolicyError::Curated`] when a new revision's key collides with an
/// existing entry; [`crate::Error::InvalidInput`] for an invalid policy.
pub fn distill<F: FactRecord>(
    facts: &[F],
    curated: CuratedState,
    queue: &ConflictQueue,
    policy: &Policy,
    as_of: &Stamp,
    workspace_id: &str,
) -> Result<Outcome> {
    distill_with(facts, curated, queue, policy, as_of, workspace_id, RunOptions::default())
}

/// Runs the policy like [`distill`], over the units and keeping what
/// `options` says.
///
/// Errors: as [`distill`].
pub fn distill_with<F: FactRecord>(
    facts: &[F],
    curated: CuratedState,
    queue: &ConflictQueue,
    policy: &Policy,
    as_of: &Stamp,
    workspace_id: &str,
    options: RunOptions<'_>,
) -> Result<Outcome> {
    debug_assert!(
        !options.whole_collected() || {
            let mut ids: Vec<&str> = facts.iter().map(FactRecord::fact_id).collect();
            ids.sort_unstable();
            ids.windows(2).all(|pair| pair[0] != pair[1])
        }
    );
    policy.validate()?;
    let citations = Citations::of(&curated, facts, options);
    let schema_version = curated.schema_version;
    // The memory keys under review (after a merge), which are judged even
    // without a new candidate.
    let contested_keys: Vec<String> = curated
        .entries
        .iter()
        .filter(|e| e.is_contested())
        .filter_map(|e| e.memory_key.clone())
        .collect();
    let mut run = Run {
        reasons: HashMap::new(),
        record: options.explain,
        collected: options.collect.then(Collected::default),
        entries: curated.entries,
        index: HashMap::new(),
        active: HashMap::new(),
        retracted: HashMap::new(),
        contested: HashMap::new(),
        cases: queue.cases.clone(),
        domain_cases: HashMap::new(),
        report: Report::default(),
        curated_changed: false,
        queue_changed: false,
        policy,
        as_of,
        workspace_id,
        partial: options.known.is_some(),
        base: facts.as_ptr().addr(),
        size: size_of::<F>().max(1),
    };
    // (Its indexes are built when it is split, after the grouping.)
    let (units, tally) = group(facts, queue, &citations, &contested_keys, &mut run, options);
    let run = judge_units(run, facts, units, &citations, options)?;
    let schemas = (schema_version, queue.schema_version);
    Ok(outcome(run, facts, schemas, &tally, citations.cited))
}

/// The facts the conflict cases judged, with what that makes them: the
/// evidence of an open case's candidates is tied, the evidence of a
/// resolved case's losing candidates is rejected by its adjudication (a
/// later case of a key overrides an earlier one). For a fact too young
/// for this run's policy that an earlier run, made with a shorter age
/// gate, put in a case: see [`young_fact_ids_judged`].
fn judged_in_cases(queue: &ConflictQueue) -> HashMap<&str, Reason> {
    let mut cases: Vec<&Case> = queue.cases.iter().collect();
    cases.sort_by_key(|case| case.revision);
    let mut judged = HashMap::new();
    for case in cases {
        for candidate in &case.candidates {
            let reason = match case.status {
                CaseStatus::Open => Reason::Tied { conflict_id: case.conflict_id.clone() },
                CaseStatus::Resolved
                    if case.selected_candidate_id.as_deref()
                        != Some(candidate.candidate_id.as_str()) =>
                {
                    Reason::RejectedByAdjudication {
                        conflict_id: case.conflict_id.clone(),
                        event_id: case.resolution_event_id.clone().unwrap_or_default(),
                    }
                }
                _ => continue,
            };
            for id in &candidate.evidence_ids {
                judged.insert(id, reason.clone());
            }
        }
    }
    judged
}

/// The ids among `young` (facts too young for a policy) that the state
/// already judged: evidence of a curated entry (`cited`), or of a case's
/// candidate as [`judged_in_cases`] counts it. What a status count of
/// waiting facts leaves out, as an explained run does.
pub(crate) fn young_fact_ids_judged<'a>(
    young: impl IntoIterator<Item = &'a str>,
    cited: impl Fn(&str) -> bool,
    queue: &ConflictQueue,
) -> std::collections::HashSet<&'a str> {
    let in_cases = judged_in_cases(queue);
    young.into_iter().filter(|id| cited(id) || in_cases.contains_key(id)).collect()
}

/// The first instant at which `fact` is old enough for `policy` (a fact
/// recorded late in 9999 never ages within the range of instants: it
/// waits until the last one).
pub(crate) fn eligible_at<F: FactRecord>(fact: &F, policy: &Policy) -> Stamp {
    Stamp::from_timestamp(
        fact.instant()
            .checked_add(SignedDuration::from_hours(
                24 * i64::from(policy.age_days_for(fact.source())),
            ))
            .and_then(|at| at.checked_add(SignedDuration::from_micros(1)))
            .unwrap_or(jiff::Timestamp::MAX),
    )
}

/// The entry each fact is already evidence of, and what a cache must know
/// of those citations.
struct Citations {
    /// By fact position (empty when no entry cites anything, or for a
    /// partial run's candidates, which are not evidence).
    entry_of: Vec<Option<u32>>,
    /// How many fact ids the curated state cites.
    cited: usize,
    /// The memory key of each entry, by position, when a whole run
    /// collects for a cache.
    entry_keys: Vec<Option<String>>,
    /// By entry position: a superseded revision of a domain whose latest
    /// revision is retracted (docs/corrections.md, "Re-judging a domain
    /// whose active revision was retracted"). Its evidence is judged
    /// again, as if no revision held it.
    reopened: Vec<bool>,
}

impl Citations {
    fn of<F: FactRecord>(curated: &CuratedState, facts: &[F], options: RunOptions<'_>) -> Self {
        let mut cited = 0usize;
        let entry_of = if options.known.is_some() {
            Vec::new()
        } else {
            let evidence_of: HashMap<&str, u32> = curated
                .entries
                .iter()
                .zip(0..)
                .flat_map(|(e, index)| e.evidence_ids.iter().map(move |id| (id, index)))
                .collect();
            cited = evidence_of.len();
            if evidence_of.is_empty() {
                Vec::new()
            } else {
                facts.iter().map(|f| evidence_of.get(f.fact_id()).copied()).collect()
            }
        };
        // A cache may start from this state only if every cited id is a
        // fact of the log, aged, and of its entry's memory key (checked
        // while grouping).
        let entry_keys = if options.whole_collected() {
            curated.entries.iter().map(|e| e.memory_key.clone()).collect()
        } else {
            Vec::new()
        };
        let without_value = domains_without_value(&curated.entries);
        let reopened = if without_value.is_empty() || entry_of.is_empty() {
            Vec::new()
        } else {
            curated
                .entries
                .iter()
                .map(|e| {
                    e.status == Status::Superseded
                        && e.memory_key.as_deref().is_some_and(|key| without_value.contains(key))
                })
                .collect()
        };
        Citations { entry_of, cited, entry_keys, reopened }
    }

    /// The position of the entry the fact at `position` is evidence of.
    fn entry(&self, position: usize) -> Option<usize> {
        self.entry_of.get(position).copied().flatten().map(|e| e as usize)
    }

    /// The position of the entry the fact at `position` is evidence of,
    /// unless that entry's evidence is judged again (see `reopened`).
    fn judged_entry(&self, position: usize) -> Option<usize> {
        self.entry(position).filter(|&e| !self.reopened.get(e).copied().unwrap_or(false))
    }
}

/// The memory keys whose latest revision is retracted: a correction took
/// the evidence of their active value, and no value replaced it yet.
pub(crate) fn domains_without_value(entries: &[Entry]) -> HashSet<&str> {
    let mut latest: HashMap<&str, &Entry> = HashMap::new();
    for entry in entries.iter().filter(|e| !e.is_contested()) {
        let Some(key) = entry.memory_key.as_deref() else { continue };
        let slot = latest.entry(key).or_insert(entry);
        if entry.revision > slot.revision {
            *slot = entry;
        }
    }
    latest.into_iter().filter(|(_, e)| e.is_retracted()).map(|(key, _)| key).collect()
}

/// The units a run judges, in the order it judges them.
struct Units<'a, F> {
    /// The unkeyed groups (a hash of the same kind and normal form), by
    /// entry key, in key order.
    unkeyed: Vec<(String, Vec<&'a F>)>,
    /// The candidates of each memory key, in key order.
    keyed: Vec<(&'a str, Groups<'a, F>)>,
    /// Every fact id of the log with each memory key.
    domain_ids: HashMap<&'a str, Vec<&'a str>>,
}

/// What the grouping counted that the outcome reports.
struct Tally {
    already_evidence: usize,
    /// Whether every cited fact seen is aged and of its entry's memory key.
    cacheable: bool,
    /// How many of the cited fact ids were seen.
    cited_found: usize,
}

/// Sorts the facts into the units the run judges, with the domains of
/// `contested_keys` among them, noting (when recording) the facts it does
/// not judge: too young, of an unstable kind, already evidence.
fn group<'a, F: FactRecord>(
    facts: &'a [F],
    queue: &ConflictQueue,
    citations: &Citations,
    contested_keys: &'a [String],
    run: &mut Run<'_>,
    options: RunOptions<'a>,
) -> (Units<'a, F>, Tally) {
    let (policy, as_of, record) = (run.policy, run.as_of, run.record);
    let judged_in_cases = if record { judged_in_cases(queue) } else { HashMap::new() };
    let default_cutoff = policy.cutoff_for("", as_of);
    let mut tally =
        Tally { already_evidence: 0, cacheable: options.whole_collected(), cited_found: 0 };
    let mut aged = 0usize;
    let mut unkeyed: HashMap<(Kind, String), Vec<&F>> = HashMap::new();
    // Grouped by hash, judged in memory-key order below.
    let mut keyed: HashMap<&str, Groups<'_, F>> = HashMap::new();
    let mut domain_ids: HashMap<&str, Vec<&str>> = HashMap::new();
    // A whole collected run's facts are unique already (see
    // `RunOptions::collected`).
    let unique = options.whole_collected();
    let mut seen: HashSet<&str> =
        if unique { HashSet::new() } else { HashSet::with_capacity(facts.len()) };
    for (position, fact) in facts.iter().enumerate() {
        if !unique && !seen.insert(fact.fact_id()) {
            continue;
        }
        if let Some(key) = fact.memory_key()
            && options.known.is_none()
        {
            domain_ids.entry(key).or_default().push(fact.fact_id());
        }
        let cutoff = if policy.sources.is_empty() {
            default_cutoff
        } else {
            policy.cutoff_for(fact.source(), as_of)
        };
        if tally.cacheable
            && let Some(index) = citations.entry(position)
        {
            tally.cited_found += 1;
            tally.cacheable = fact.instant() < cutoff
                && citations.entry_keys[index]
                    .as_deref()
                    .is_none_or(|key| fact.memory_key() == Some(key));
        }
        if fact.instant() >= cutoff {
            if record {
                // A fact an earlier run (with a shorter age gate) or a
                // person already judged is reported as what happened to
                // it, not as waiting.
                let reason = match citations.entry(position) {
                    Some(index) => already_evidence(&run.entries[index]),
                    None => judged_in_cases.get(fact.fact_id()).cloned().unwrap_or_else(|| {
                        Reason::WaitingForAge { until: eligible_at(fact, policy) }
                    }),
                };
                run.note(fact, reason);
            }
            continue;
        }
        aged += 1;
        if !policy.stable_kinds.contains(&fact.kind()) {
            run.report.skipped += 1;
            run.note(fact, Reason::NotStableKind { kind: fact.kind() });
            continue;
        }
        if let Some(index) = citations.judged_entry(position) {
            run.report.skipped += 1;
            tally.already_evidence += 1;
            if record {
                let reason = already_evidence(&run.entries[index]);
                run.note(fact, reason);
            }
            continue;
        }
        match fact.memory_key() {
            None => unkeyed
                .entry((fact.kind(), canon::normal_form(fact.content())))
                .or_default()
                .push(fact),
            Some(key) => keyed
                .entry(key)
                .or_default()
                .entry((fact.kind(), canon::normal_form(fact.content())))
                .or_default()
                .push(fact),
        }
    }
    run.report.scanned = aged;
    // A domain under review is judged even without a new candidate: its
    // case is opened from the values in dispute (a partial run judges only
    // the domains it knows).
    for key in contested_keys {
        if options.known.is_none_or(|known| known.domains.contains_key(key)) {
            keyed.entry(key.as_str()).or_default();
        }
    }
    let mut keyed: Vec<(&str, Groups<'_, F>)> = keyed.into_iter().collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if let Some(known) = options.known {
        for (key, _) in &keyed {
            let ids = known.domains.get(*key).map(Vec::as_slice).unwrap_or_default();
            domain_ids.insert(key, ids.iter().map(|(id, _)| id.as_str()).collect());
        }
    }
    // One entry key per group (a hash of the same kind and normal form),
    // handled in key order.
    let mut unkeyed: Vec<(String, Vec<&F>)> = unkeyed
        .into_iter()
        .map(|((kind, _), group)| {
            (canon::unkeyed_entry_key(kind.as_str(), group[0].content()), group)
        })
        .collect();
    unkeyed.sort_by(|a, b| a.0.cmp(&b.0));
    (Units { unkeyed, keyed, domain_ids }, tally)
}

/// Judges the units: the unkeyed groups and the keyed domains touch
/// disjoint entries (and only the domains touch cases), so the groups are
/// judged on another thread while the domains are judged here, each with
/// the entries of its kind; the entries are put in canonical order after.
/// (Keys are hashes of different things: one made by each half cannot
/// meet unless 64-bit hashes collide, which the state's invariants refuse
/// on save.)
fn judge_units<'p, F: FactRecord>(
    run: Run<'p>,
    facts: &[F],
    units: Units<'_, F>,
    citations: &Citations,
    options: RunOptions<'_>,
) -> Result<Run<'p>> {
    let Units { unkeyed, keyed, domain_ids } = units;
    // Importance of every fact that can be evidence of a keyed entry (an
    // incumbent's maximum_importance): the keyed facts, plus whatever the
    // keyed entries already cite. Only a tie with an incumbent needs it:
    // built then, once. (By the positions of the entries read at the
    // start.)
    let keyed_entries: Vec<bool> = run.entries.iter().map(|e| e.memory_key.is_some()).collect();
    let keyed_keys: Vec<&str> = keyed.iter().map(|(key, _)| *key).collect();
    let build_importance = || -> HashMap<&str, u8> {
        if let Some(known) = options.known {
            keyed_keys
                .iter()
                .filter_map(|key| known.domains.get(*key))
                .flatten()
                .map(|(id, importance)| (id.as_str(), *importance))
                .collect()
        } else {
            let cited =
                |position: usize| citations.entry(position).is_some_and(|e| keyed_entries[e]);
            facts
                .iter()
                .enumerate()
                .filter(|&(position, f)| f.memory_key().is_some() || cited(position))
                .map(|(_, f)| (f.fact_id(), f.importance()))
                .collect()
        }
    };
    let importance = std::cell::OnceCell::new();
    let importance = || importance.get_or_init(build_importance);
    let (mut unkeyed_run, mut keyed_run) = run.split();
    std::thread::scope(|scope| -> Result<Run<'_>> {
        let groups_judged = scope.spawn(move || {
            for (key, group) in unkeyed {
                unkeyed_run.unkeyed_group(key, group);
            }
            unkeyed_run
        });
        let mut domains_judged = Ok(());
        for (memory_key, proposals) in keyed {
            let ids = domain_ids.get(memory_key).map(Vec::as_slice).unwrap_or_default();
            domains_judged = keyed_run.keyed_domain(memory_key, proposals, ids, &importance);
            if domains_judged.is_err() {
                break;
            }
        }
        let unkeyed_run =
            groups_judged.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        domains_judged?;
        Ok(unkeyed_run.merge(keyed_run))
    })
}

/// Puts the judged run's state, queue, report and decisions in the order
/// the outcome keeps them.
fn outcome<F: FactRecord>(
    run: Run<'_>,
    facts: &[F],
    (schema_version, queue_schema): (u32, u32),
    tally: &Tally,
    cited: usize,
) -> Outcome {
    let mut curated_out = CuratedState { schema_version, entries: run.entries };
    curated_out.sort();
    if run.curated_changed {
        curated_out.schema_version =
            schema_version.max(crate::store::curated_state::CURATED_SCHEMA_VERSION);
    }
    let mut queue_out = ConflictQueue { cases: run.cases, schema_version: queue_schema };
    queue_out.sort();
    let mut decisions = Vec::new();
    if run.record {
        let mut reasons = run.reasons;
        let mut done: HashSet<&str> = HashSet::new();
        for fact in facts {
            if done.insert(fact.fact_id())
                && let Some(reason) = reasons.remove(fact.fact_id())
            {
                decisions.push(Decision {
                    fact_id: fact.fact_id().to_owned(),
                    memory_key: fact.memory_key().map(str::to_owned),
                    reason,
                });
            }
        }
    }
    let collected = run.collected.map(|mut collected| {
        collected.cacheable = tally.cacheable && tally.cited_found == cited;
        collected
    });
    Outcome {
        curated: curated_out,
        queue: queue_out,
        curated_changed: run.curated_changed,
        queue_changed: run.queue_changed,
        report: run.report,
        decisions,
        already_evidence: tally.already_evidence,
        collected,
    }
}

/// What a fact already cited by `entry` is reported as.
fn already_evidence(entry: &Entry) -> Reason {
    Reason::AlreadyEvidence {
        entry_key: entry.key.clone(),
        revision: entry.revision,
        status: entry.status,
    }
}

/// The facts of one memory key by proposal: (kind, normal form).
type Groups<'f, F> = BTreeMap<(Kind, String), Vec<&'f F>>;

// Its flags are independent: what to record, what changed, what kind of run.
#[allow(clippy::struct_excessive_bools)]
struct Run<'p> {
    /// Per-fact reasons, when recording.
    reasons: HashMap<String, Reason>,
    record: bool,
    /// What a cache keeps, when collecting.
    collected: Option<Collected>,
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    /// The position of each memory key's active entry.
    active: HashMap<String, usize>,
    /// The position of the latest revision of each memory key whose
    /// latest revision is retracted (no active value).
    retracted: HashMap<String, usize>,
    /// The positions of each memory key's contested entries (a domain
    /// under review after a merge).
    contested: HashMap<String, Vec<usize>>,
    cases: Vec<Case>,
    /// The positions in `cases` of each memory key's cases.
    domain_cases: HashMap<String, Vec<usize>>,
    report: Report,
    curated_changed: bool,
    queue_changed: bool,
    policy: &'p Policy,
    as_of: &'p Stamp,
    workspace_id: &'p str,
    /// Whether it is a partial run (`known`): what `collected` records of
    /// pending facts.
    partial: bool,
    /// The address and size of the input's facts, to tell the position of
    /// a fact from a reference to it (every reference is into the input).
    base: usize,
    size: usize,
}

/// A unit the policy judges on its own: an unkeyed group (by its entry
/// key) or a memory key.
enum Unit<'k> {
    Group(String),
    Domain(&'k str),
}

/// The losing candidates of the adjudication that produced the active value
/// (or the retracted revision a domain without a value ends with), and what
/// it chose.
struct Rejected {
    conflict_id: String,
    event_id: String,
    losers: HashMap<String, IdList>,
    /// The entry the decision made or kept active.
    chosen_entry: String,
    /// The newest fact of the chosen value as the person saw it (the
    /// candidate's `last_seen` as detected): only a fact dated after it is
    /// newer evidence, whatever a correction took from the entry since.
    chosen_last_seen: Option<Stamp>,
}

/// How a proposal fared in one round.
#[derive(Clone, PartialEq, Eq)]
enum Verdict {
    Qualified,
    Skipped(Reason),
}

impl<'p> Run<'p> {
    /// Splits the run, once its facts are grouped, into one for the
    /// unkeyed groups (the unkeyed entries, no cases, and what the run has
    /// counted, noted and collected so far) and one for the keyed domains
    /// (the keyed entries and every case, nothing counted yet); see
    /// [`Run::merge`].
    fn split(self) -> (Run<'p>, Run<'p>) {
        let (unkeyed, keyed): (Vec<Entry>, Vec<Entry>) =
            self.entries.into_iter().partition(|e| e.memory_key.is_none());
        let mut keyed = Run {
            reasons: HashMap::new(),
            record: self.record,
            collected: self.collected.as_ref().map(|_| Collected::default()),
            entries: keyed,
            index: HashMap::new(),
            active: HashMap::new(),
            retracted: HashMap::new(),
            contested: HashMap::new(),
            cases: self.cases,
            domain_cases: HashMap::new(),
            report: Report::default(),
            curated_changed: false,
            queue_changed: false,
            policy: self.policy,
            as_of: self.as_of,
            workspace_id: self.workspace_id,
            partial: self.partial,
            base: self.base,
            size: self.size,
        };
        let mut unkeyed = Run { entries: unkeyed, cases: Vec::new(), ..self };
        unkeyed.reindex();
        keyed.reindex();
        (unkeyed, keyed)
    }

    /// Puts the two runs of [`Run::split`] back together once judged: the
    /// entries of both (in no particular order), the cases, counts, notes
    /// and what was collected. Its indexes are left stale: nothing is
    /// judged after.
    fn merge(mut self, keyed: Run<'p>) -> Run<'p> {
        self.entries.extend(keyed.entries);
        self.cases = keyed.cases;
        self.reasons.extend(keyed.reasons);
        self.report.add(keyed.report);
        self.curated_changed |= keyed.curated_changed;
        self.queue_changed |= keyed.queue_changed;
        if let (Some(collected), Some(keyed)) = (&mut self.collected, keyed.collected) {
            collected.pending.extend(keyed.pending);
            collected.pending_keyed = keyed.pending_keyed;
            collected.domains = keyed.domains;
        }
        self
    }

    fn note<F: FactRecord>(&mut self, fact: &F, reason: Reason) {
        if self.record {
            self.reasons.insert(fact.fact_id().to_owned(), reason);
        }
    }

    fn note_all<F: FactRecord>(&mut self, facts: &[&F], reason: &Reason) {
        if self.record {
            for fact in facts {
                self.reasons.insert(fact.fact_id().to_owned(), reason.clone());
            }
        }
    }

    /// The positions in the input of `facts` (none for a partial run,
    /// which records ids).
    /// Records, when collecting for the cache, `facts` left pending in
    /// `unit`: their ids in a partial run, else their positions.
    fn keep_pending<F: FactRecord>(&mut self, unit: Unit<'_>, facts: &[&F]) {
        if self.collected.is_none() {
            return;
        }
        let positions = self.positions(facts);
        let partial = self.partial;
        let Some(collected) = &mut self.collected else { return };
        if partial {
            collected.pending.extend(facts.iter().map(|f| f.fact_id().to_owned()));
            return;
        }
        match unit {
            Unit::Group(key) => collected.pending_unkeyed.push((key, positions)),
            Unit::Domain(memory_key) => {
                let pending = collected.pending_keyed.entry(memory_key.to_owned()).or_default();
                pending.extend(positions);
                pending.sort_unstable();
            }
        }
    }

    fn positions<F: FactRecord>(&self, facts: &[&F]) -> Vec<usize> {
        if self.partial {
            return Vec::new();
        }
        facts.iter().map(|f| (std::ptr::from_ref(*f).addr() - self.base) / self.size).collect()
    }

    fn reindex(&mut self) {
        self.index = self.entries.iter().enumerate().map(|(i, e)| (e.key.clone(), i)).collect();
        self.active.clear();
        self.contested.clear();
        self.retracted.clear();
        let mut latest: HashMap<&str, usize> = HashMap::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let Some(key) = entry.memory_key.as_ref() else { continue };
            if entry.is_active() {
                self.active.entry(key.clone()).or_insert(i);
            } else if entry.is_contested() {
                self.contested.entry(key.clone()).or_default().push(i);
                continue;
            }
            let slot = latest.entry(key).or_insert(i);
            if entry.revision > self.entries[*slot].revision {
                *slot = i;
            }
        }
        for (key, i) in latest {
            if self.entries[i].is_retracted() {
                self.retracted.insert(key.to_owned(), i);
            }
        }
        self.domain_cases.clear();
        for (i, case) in self.cases.iter().enumerate() {
            self.domain_cases.entry(case.memory_key.clone()).or_default().push(i);
        }
    }

    /// The positions in `cases` of the cases of `memory_key`.
    fn cases_of(&self, memory_key: &str) -> Vec<usize> {
        self.domain_cases.get(memory_key).cloned().unwrap_or_default()
    }

    fn unkeyed_group<F: FactRecord>(&mut self, key: String, group: Vec<&F>) {
        let proposal = Proposal::new(group[0].kind(), group);
        let count = proposal.facts.len();
        let key_for_note = if self.record { key.clone() } else { String::new() };
        let existing = self.index.get(&key).copied();
        // A retracted entry (a correction took all its evidence) comes back
        // only as a new promotion would make it, on the new facts.
        let retracted = existing.filter(|&i| self.entries[i].is_retracted());
        if let Some(i) = existing.filter(|_| retracted.is_none()) {
            self.entries[i].merge_evidence(
                proposal.ids.iter().copied(),
                &proposal.first,
                &proposal.last,
            );
            self.report.updated += 1;
        } else if proposal.qualifies(self.policy) {
            // Unkeyed wording: highest importance, then earliest, then smallest id.
            let wording = proposal
                .facts
                .iter()
                .min_by(|a, b| {
                    (std::cmp::Reverse(a.importance()), a.instant(), &a.fact_id()).cmp(&(
                        std::cmp::Reverse(b.importance()),
                        b.instant(),
                        &b.fact_id(),
                    ))
                })
                .expect("non-empty group");
            if let Some(i) = retracted {
                let entry = &mut self.entries[i];
                wording.content().clone_into(&mut entry.content);
                entry.first_seen = proposal.first.clone();
                entry.last_seen = proposal.last.clone();
                entry.evidence_ids = proposal.owned_ids();
                entry.occurrences = count as u64;
                entry.status = Status::Active;
            } else {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push(Entry {
                    key,
                    kind: proposal.kind,
                    content: wording.content().to_owned(),
                    first_seen: proposal.first.clone(),
                    last_seen: proposal.last.clone(),
                    evidence_ids: proposal.owned_ids(),
                    occurrences: count as u64,
                    released_evidence_ids: IdList::new(),
                    retracted_evidence_ids: IdList::new(),
                    memory_key: None,
                    revision: 1,
                    status: Status::Active,
                    supersedes: None,
                    superseded_by: None,
                });
            }
            self.report.created += 1;
        } else {
            self.report.skipped += count;
            let reason = proposal.below_thresholds(self.policy);
            self.note_all(&proposal.facts, &reason);
            self.keep_pending(Unit::Group(key), &proposal.facts);
            return;
        }
        self.report.eligible += count;
        self.curated_changed = true;
        self.note_all(&proposal.facts, &Reason::Promoted { entry_key: key_for_note, revision: 1 });
    }

    fn active_index(&self, memory_key: &str) -> Option<usize> {
        self.active.get(memory_key).copied()
    }

    /// The latest revision of `memory_key` when it is retracted (the
    /// domain has no active value).
    fn retracted_latest(&self, memory_key: &str) -> Option<usize> {
        self.retracted.get(memory_key).copied()
    }

    fn keyed_domain<'i, F: FactRecord>(
        &mut self,
        memory_key: &str,
        groups: BTreeMap<(Kind, String), Vec<&F>>,
        domain_fact_ids: &[&str],
        importance: &dyn Fn() -> &'i HashMap<&'i str, u8>,
    ) -> Result<()> {
        let mut active = self.active_index(memory_key);
        // A domain whose active revision was retracted: the next value
        // supersedes the retracted revision, and the decision that chose
        // it keeps its rejections in force.
        let retracted = if active.is_none() { self.retracted_latest(memory_key) } else { None };
        if let Some(contested) = self.contested.get(memory_key).cloned() {
            self.under_review(memory_key, groups, active, &contested, domain_fact_ids, importance);
            return Ok(());
        }
        let mut proposals: Vec<Proposal<'_, F>> = Vec::with_capacity(groups.len());
        for ((kind, normal), facts) in groups {
            let reinforces = active.is_some_and(|i| {
                let entry = &self.entries[i];
                entry.kind == kind && canon::normal_form(&entry.content) == normal
            });
            let proposal = Proposal::new(kind, facts);
            if let (true, Some(i)) = (reinforces, active) {
                // 5.3a: more evidence for the active value, never a revision.
                self.reinforce(i, &proposal);
                let entry = &self.entries[i];
                let reason =
                    Reason::Reinforced { entry_key: entry.key.clone(), revision: entry.revision };
                self.note_all(&proposal.facts, &reason);
            } else {
                proposals.push(proposal);
            }
        }

        let mut tie: Option<Vec<usize>> = None;
        let mut verdicts: Vec<Verdict>;
        loop {
            let rejected = active
                .or(retracted)
                .and_then(|i| self.rejected_by_adjudication(memory_key, &self.entries[i]));
            verdicts = proposals
                .iter()
                .map(|p| {
                    self.judge(memory_key, p, active.map(|i| &self.entries[i]), rejected.as_ref())
                })
                .collect();
            let qualified: Vec<usize> =
                (0..proposals.len()).filter(|&i| verdicts[i] == Verdict::Qualified).collect();
            let Some(best) = qualified.iter().map(|&i| proposals[i].score()).max() else { break };
            let winners: Vec<usize> =
                qualified.iter().copied().filter(|&i| proposals[i].score() == best).collect();
            if winners.len() > 1 {
                tie = Some(winners);
                break;
            }
            // 5.3d: a unique best becomes the next revision; 5.3f: the rest
            // are judged again against it.
            let winner = proposals.remove(winners[0]);
            active = Some(self.promote(memory_key, active.or(retracted), &winner)?);
        }

        // Every proposal left was not promoted; its final verdict counts.
        let conflict_id = if let Some(tied) = &tie {
            let tied: Vec<&Proposal<'_, F>> = tied.iter().map(|&i| &proposals[i]).collect();
            Some(self.queue_tie(memory_key, active, &tied, domain_fact_ids, importance))
        } else {
            // 5.4: the domain was settled this run; open cases are moot.
            for i in self.cases_of(memory_key) {
                let case = &mut self.cases[i];
                if case.is_open() {
                    case.status = CaseStatus::Superseded;
                    case.superseded_at = Some(self.as_of.clone());
                    self.queue_changed = true;
                }
            }
            None
        };
        let mut stale = 0;
        for (index, (proposal, verdict)) in proposals.iter().zip(verdicts).enumerate() {
            self.report.skipped += proposal.facts.len();
            self.keep_pending(Unit::Domain(memory_key), &proposal.facts);
            let reason = match verdict {
                Verdict::Skipped(reason) => reason,
                // 5.3e: a tie fails closed; qualified facts are skipped.
                Verdict::Qualified => {
                    let conflict_id = conflict_id.clone().unwrap_or_default();
                    if tie.as_ref().is_some_and(|tied| tied.contains(&index)) {
                        Reason::Tied { conflict_id }
                    } else {
                        Reason::LostToStrongerProposal { conflict_id }
                    }
                }
            };
            if matches!(reason, Reason::Stale { .. }) {
                self.report.stale += proposal.facts.len();
                stale += proposal.facts.len();
            }
            self.note_all(&proposal.facts, &reason);
        }
        if let Some(collected) = &mut self.collected {
            collected.domains.insert(memory_key.to_owned(), (stale, conflict_id));
        }
        Ok(())
    }

    /// 5.3b: the latest resolved case of the domain, when it produced the
    /// current active entry (or the retracted revision the domain ends
    /// with, which a merge may have renumbered: then the one holding the
    /// value it chose): its losing candidates (id -> evidence ids), with
    /// the case id and event id.
    fn rejected_by_adjudication(&self, memory_key: &str, active: &Entry) -> Option<Rejected> {
        let active_key = active.key.as_str();
        let latest = self
            .domain_cases
            .get(memory_key)?
            .iter()
            .map(|&i| &self.cases[i])
            .filter(|c| c.status == CaseStatus::Resolved)
            .max_by_key(|c| c.revision)?;
        let renumbered =
            || active.is_retracted() && latest.selected_candidate_id == active.candidate_id();
        if latest.resulting_active_entry_key.as_deref() != Some(active_key) && !renumbered() {
            return None;
        }
        let chosen = latest.selected_candidate_id.as_deref().and_then(|id| latest.candidate(id));
        Some(Rejected {
            conflict_id: latest.conflict_id.clone(),
            event_id: latest.resolution_event_id.clone().unwrap_or_default(),
            chosen_entry: active_key.to_owned(),
            chosen_last_seen: chosen.map(|c| c.last_seen.clone()),
            losers: latest
                .candidates
                .iter()
                .filter(|c| {
                    Some(c.candidate_id.as_str()) != latest.selected_candidate_id.as_deref()
                })
                .map(|c| (c.candidate_id.clone(), c.evidence_ids.clone()))
                .collect(),
        })
    }

    fn judge<F: FactRecord>(
        &self,
        memory_key: &str,
        proposal: &Proposal<'_, F>,
        active: Option<&Entry>,
        rejected: Option<&Rejected>,
    ) -> Verdict {
        if let Some(rejected) = rejected {
            let id =
                canon::candidate_id(memory_key, proposal.kind.as_str(), proposal.wording.content());
            // Rejected while it holds no fact the person did not see: a
            // correction may have taken some of what they saw, and what is
            // left is no new evidence.
            if rejected
                .losers
                .get(&id)
                .is_some_and(|losers| proposal.ids.iter().all(|fact| losers.contains(fact)))
            {
                return Verdict::Skipped(Reason::RejectedByAdjudication {
                    conflict_id: rejected.conflict_id.clone(),
                    event_id: rejected.event_id.clone(),
                });
            }
        }
        if !proposal.qualifies(self.policy) {
            return Verdict::Skipped(proposal.below_thresholds(self.policy));
        }
        // docs/policy.md: the count test comes first, then recency; the order
        // decides which facts the report counts as `stale`.
        if let Some(active) = active
            && (proposal.facts.len() as u64) < u64::from(self.policy.supersession_repeat_threshold)
        {
            return Verdict::Skipped(Reason::NeedsMoreEvidence {
                entry_key: active.key.clone(),
                facts: proposal.facts.len(),
                supersession_repeat_threshold: self.policy.supersession_repeat_threshold,
            });
        }
        // A decision holds until newer evidence: a challenger of the value a
        // person chose, or of the retracted revision that value ended in,
        // needs a fact dated after the chosen value's newest fact as the
        // person saw it. A correction that took the chosen value's newest
        // facts lowers the entry's `last_seen`, but it does not make older
        // facts newer evidence (docs/policy.md, step 3c).
        let decided =
            rejected.and_then(|r| Some((r.chosen_entry.as_str(), r.chosen_last_seen.as_ref()?)));
        let bar = match (active, decided) {
            (Some(active), Some((_, chosen))) if chosen.instant() > active.last_seen.instant() => {
                Some((active.key.as_str(), chosen))
            }
            (Some(active), _) => Some((active.key.as_str(), &active.last_seen)),
            (None, decided) => decided,
        };
        if let Some((entry_key, last_seen)) = bar
            && proposal.last.instant() <= last_seen.instant()
        {
            return Verdict::Skipped(Reason::Stale {
                entry_key: entry_key.to_owned(),
                active_last_seen: last_seen.clone(),
            });
        }
        Verdict::Qualified
    }

    fn promote<F: FactRecord>(
        &mut self,
        memory_key: &str,
        active: Option<usize>,
        winner: &Proposal<'_, F>,
    ) -> Result<usize> {
        let superseding = active.is_some();
        let revision = Revision {
            memory_key,
            kind: winner.kind,
            content: winner.wording.content().to_owned(),
            evidence_ids: winner.owned_ids(),
            first_seen: winner.first.clone(),
            last_seen: winner.last.clone(),
        };
        let index = &self.index;
        let position =
            push_revision(&mut self.entries, active, revision, |key| index.contains_key(key))
                .map_err(PolicyError::Curated)?;
        let (key, revision) = (self.entries[position].key.clone(), self.entries[position].revision);
        self.index.insert(key, position);
        self.active.insert(memory_key.to_owned(), position);
        if superseding {
            self.report.superseded += 1;
        }
        self.report.created += 1;
        self.report.eligible += winner.facts.len();
        self.curated_changed = true;
        if self.record {
            let reason =
                Reason::Promoted { entry_key: self.entries[position].key.clone(), revision };
            self.note_all(&winner.facts, &reason);
        }
        Ok(position)
    }

    /// Adds `proposal`'s facts to the evidence of entry `i` (the value
    /// they state), never a revision.
    fn reinforce<F: FactRecord>(&mut self, i: usize, proposal: &Proposal<'_, F>) {
        self.entries[i].merge_evidence(
            proposal.ids.iter().copied(),
            &proposal.first,
            &proposal.last,
        );
        self.report.updated += 1;
        self.report.eligible += proposal.facts.len();
        self.curated_changed = true;
    }

    /// Judges a domain under review after a merge (docs/sharing.md,
    /// "diverged"): facts of the active value or of a value in dispute add
    /// to its evidence; every other proposal waits; no revision is made,
    /// and the values in dispute, with the active one, are the candidates
    /// of a case for a person.
    fn under_review<'i, F: FactRecord>(
        &mut self,
        memory_key: &str,
        groups: BTreeMap<(Kind, String), Vec<&F>>,
        active: Option<usize>,
        contested: &[usize],
        domain_fact_ids: &[&str],
        importance: &dyn Fn() -> &'i HashMap<&'i str, u8>,
    ) {
        let mut waiting: Vec<Vec<&F>> = Vec::new();
        let mut reinforced: Vec<(Vec<&F>, usize)> = Vec::new();
        for ((kind, normal), facts) in groups {
            let held = active.into_iter().chain(contested.iter().copied()).find(|&i| {
                let entry = &self.entries[i];
                entry.kind == kind && canon::normal_form(&entry.content) == normal
            });
            let Some(i) = held else {
                waiting.push(facts);
                continue;
            };
            let proposal = Proposal::new(kind, facts);
            self.reinforce(i, &proposal);
            reinforced.push((proposal.facts, i));
        }
        let importance = importance();
        let mut candidates: Vec<Candidate> =
            contested.iter().map(|&i| self.entry_candidate(memory_key, i, importance)).collect();
        let active_entry_key = active.map(|i| {
            candidates.push(self.entry_candidate(memory_key, i, importance));
            self.entries[i].key.clone()
        });
        let conflict_id = (candidates.len() >= 2)
            .then(|| self.open_case(memory_key, active_entry_key, candidates, domain_fact_ids));
        for (facts, i) in reinforced {
            let entry = &self.entries[i];
            let reason = if entry.is_active() {
                Reason::Reinforced { entry_key: entry.key.clone(), revision: entry.revision }
            } else {
                Reason::UnderReview { conflict_id: conflict_id.clone() }
            };
            self.note_all(&facts, &reason);
        }
        for facts in waiting {
            self.report.skipped += facts.len();
            self.keep_pending(Unit::Domain(memory_key), &facts);
            self.note_all(&facts, &Reason::UnderReview { conflict_id: conflict_id.clone() });
        }
        if let Some(collected) = &mut self.collected {
            collected.domains.insert(memory_key.to_owned(), (0, conflict_id));
        }
    }

    fn queue_tie<'i, F: FactRecord>(
        &mut self,
        memory_key: &str,
        active: Option<usize>,
        tied: &[&Proposal<'_, F>],
        domain_fact_ids: &[&str],
        importance: &dyn Fn() -> &'i HashMap<&'i str, u8>,
    ) -> String {
        let mut candidates: Vec<Candidate> = tied.iter().map(|p| p.candidate(memory_key)).collect();
        let active_entry_key = active.map(|i| {
            candidates.push(self.entry_candidate(memory_key, i, importance()));
            self.entries[i].key.clone()
        });
        self.open_case(memory_key, active_entry_key, candidates, domain_fact_ids)
    }

    /// The candidate entry `i` of `memory_key` is: an incumbent when it is
    /// the active value, else a contested value. Its highest importance is
    /// that of its evidence facts still in the log, else 1.
    fn entry_candidate(
        &self,
        memory_key: &str,
        i: usize,
        importance: &HashMap<&str, u8>,
    ) -> Candidate {
        let entry = &self.entries[i];
        let maximum_importance = entry
            .evidence_ids
            .iter()
            .filter_map(|id| importance.get(id).copied())
            .max()
            .unwrap_or(1);
        Candidate {
            candidate_id: canon::candidate_id(memory_key, entry.kind.as_str(), &entry.content),
            kind: entry.kind,
            content: entry.content.clone(),
            evidence_ids: entry.evidence_ids.clone(),
            occurrences: entry.occurrences,
            maximum_importance,
            first_seen: entry.first_seen.clone(),
            last_seen: entry.last_seen.clone(),
            incumbent: entry.is_active(),
            released_evidence_ids: IdList::new(),
            retracted_evidence_ids: IdList::new(),
        }
    }

    /// Queues the case of `candidates` for `memory_key` (5.3e): reused when
    /// its conflict id exists, else opened, superseding the domain's open
    /// cases. Returns its conflict id.
    fn open_case(
        &mut self,
        memory_key: &str,
        active_entry_key: Option<String>,
        mut candidates: Vec<Candidate>,
        domain_fact_ids: &[&str],
    ) -> String {
        candidates.sort_by(|a, b| a.candidate_id.cmp(&b.candidate_id));
        let observed = observed_fact_ids(domain_fact_ids.iter().copied(), &candidates);
        let fingerprint = conflict_queue::fingerprint(
            memory_key,
            active_entry_key.as_deref(),
            &candidates,
            &observed,
        );
        let conflict_id = canon::conflict_id(self.workspace_id, memory_key, &fingerprint);
        self.report.conflicts += 1;
        self.report.conflict_case_ids.push(conflict_id.clone());
        // (A conflict id hashes its memory key: only the domain's cases can
        // hold it.)
        let domain = self.cases_of(memory_key);
        if domain.iter().any(|&i| self.cases[i].conflict_id == conflict_id) {
            return conflict_id;
        }
        let mut revision = 0;
        for i in domain {
            let case = &mut self.cases[i];
            revision = revision.max(case.revision);
            if case.is_open() {
                case.status = CaseStatus::Superseded;
                case.superseded_at = Some(self.as_of.clone());
            }
        }
        self.domain_cases.entry(memory_key.to_owned()).or_default().push(self.cases.len());
        self.cases.push(Case {
            conflict_id: conflict_id.clone(),
            workspace_id: self.workspace_id.to_owned(),
            memory_key: memory_key.to_owned(),
            revision: revision + 1,
            fingerprint,
            status: CaseStatus::Open,
            candidates,
            observed_fact_ids: observed,
            active_entry_key,
            detected_at: self.as_of.clone(),
            resolved_at: None,
            selected_candidate_id: None,
            resolution_event_id: None,
            resolution_actor: None,
            resolution_rationale: None,
            resulting_active_entry_key: None,
            superseded_at: None,
        });
        self.report.queued_conflicts += 1;
        self.queue_changed = true;
        conflict_id
    }
}
