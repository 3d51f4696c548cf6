//! Redacting facts (docs/corrections.md, "Redact"): a redaction retracts
//! the facts for good and removes their text from every file of the
//! memory directory, in the one transaction a retraction runs, with the
//! daily files rewritten (each line of a redacted fact replaced by its
//! tombstone) and every cache removed before the record is appended.
//!
//! The facts, their lines and the facts holding the same text are found
//! by one pass over the log; the plan is a retraction's, with the content
//! of every entry and candidate that lists a redacted fact replaced by the
//! marker. The intent holds no text: recovery computes the tombstones
//! again from the files and checks them against the hashes it holds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use crate::error::{Damage, Error, Invalid, Location, Rejected, Result};
use crate::model::canon;
use crate::model::fact::{Fact, REDACTED, redacted_key};
use crate::model::fact_line::FactRecord;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::policy::retractions::Retractions;
use crate::store::atomic_io;
use crate::store::conflict_queue::{Candidate, Case};
use crate::store::corrections::{Action, CORRECTION_SCHEMA_VERSION, Correction};
use crate::store::curated_state::Entry;
use crate::store::fact_log::DayFile;
use crate::store::journal::Adjudication;
use crate::store::names::{
    AUDIT_FILE, CONFLICTS_FILE, CORRECTIONS_FILE, CURATED_FILE, DAILY_DIR, DAY_EXTENSION,
    is_day_name,
};
use crate::store::stream::{self, Redactable};
use crate::workspace::Workspace;
use crate::workspace::retract::{Corrected, Planned, Scope, StagedFile, check_text};

/// A request to redact facts (`workmem redact`): their text leaves every
/// file of the memory directory, and they stop counting for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    /// The facts to redact.
    pub fact_ids: Vec<String>,
    /// The decision and correction records whose actor and rationale it
    /// replaces by the marker (docs/corrections.md, "Records that are not
    /// facts").
    pub event_ids: Vec<String>,
    /// Who redacts them.
    pub actor: String,
    /// Why.
    pub rationale: String,
    /// The record's id: a retry with the same id and the same request
    /// writes nothing.
    pub event_id: String,
    /// When the person made the correction; now when `None`.
    pub recorded_at: Option<Stamp>,
}

/// What a redaction will rewrite, shown before it is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactionPreview {
    /// The facts it redacts, sorted.
    pub fact_ids: Vec<String>,
    /// The decision and correction records it redacts, sorted.
    pub event_ids: Vec<String>,
    /// The files it rewrites: daily files whose lines become tombstones,
    /// and the streams whose records get the marker.
    pub files: Vec<PathBuf>,
    /// The entries whose wording or evidence changes.
    pub entry_keys: Vec<String>,
    /// The conflict cases whose candidates change.
    pub conflict_ids: Vec<String>,
}

/// A redaction planned over the state as stored.
struct Prepared {
    record: Correction,
    planned: Planned,
    files: Vec<StagedFile>,
}

impl Workspace {
    /// Returns what [`Workspace::redact`] would rewrite for `request`,
    /// writing nothing.
    ///
    /// Errors: as [`Workspace::redact`].
    pub fn preview_redaction(&self, request: &Redaction) -> Result<RedactionPreview> {
        check_request(request)?;
        let records = self.corrections()?;
        if let Some(stored) = self.stored_redaction(&records, request)? {
            return Ok(RedactionPreview {
                fact_ids: stored.correction.fact_ids.iter().map(str::to_owned).collect(),
                event_ids: stored
                    .correction
                    .event_ids
                    .iter()
                    .flatten()
                    .map(str::to_owned)
                    .collect(),
                files: Vec::new(),
                entry_keys: Vec::new(),
                conflict_ids: Vec::new(),
            });
        }
        let prepared = self.prepare_redaction(request, &records, false)?;
        Ok(RedactionPreview {
            fact_ids: prepared.record.fact_ids.iter().map(str::to_owned).collect(),
            event_ids: prepared.record.event_ids.iter().flatten().map(str::to_owned).collect(),
            files: prepared.files.iter().map(|f| f.path.clone()).collect(),
            entry_keys: prepared.planned.plan.entries.iter().map(|e| e.key.clone()).collect(),
            conflict_ids: prepared
                .planned
                .plan
                .cases
                .iter()
                .map(|c| c.conflict_id.clone())
                .collect(),
        })
    }

    /// Redacts facts: each line becomes a tombstone, every entry and
    /// candidate worded by one holds the marker instead, the facts are
    /// retracted for good (no restore), and every cache is removed, in one
    /// transaction (docs/corrections.md, "Redact").
    ///
    /// Errors: [`Error::InvalidInput`] for a malformed id, actor or
    /// rationale, a fact id no fact of this workspace has
    /// ([`Invalid::UnknownFacts`]), a fact redacted already
    /// ([`Invalid::AlreadyRedacted`]) or on two lines
    /// ([`Invalid::RepeatedFact`]), or another fact holding the same text
    /// ([`Invalid::SameText`]); otherwise as [`Workspace::retract`].
    pub fn redact(&self, request: Redaction) -> Result<Corrected> {
        self.writable()?;
        check_request(&request)?;
        let _lock = self.lock()?;
        self.finish_pending_locked()?;
        let records = self.corrections()?;
        if let Some(stored) = self.stored_redaction(&records, &request)? {
            return Ok(stored);
        }
        let Prepared { record, planned, files } =
            self.prepare_redaction(&request, &records, true)?;
        let done = self.run_correction(record, planned, false, Some(files))?;
        // Planning a redaction again is a pass over the whole log: the
        // next command need not do it for this one.
        self.record_own_correction()?;
        Ok(done)
    }

    /// The outcome of a retry: the record of `request`'s event id when it
    /// is the same redaction, `None` when the id is new.
    ///
    /// Errors: [`Error::ResolutionRejected`] when the id is used by another
    /// record or decision.
    fn stored_redaction(
        &self,
        records: &[Correction],
        request: &Redaction,
    ) -> Result<Option<Corrected>> {
        let reused = || {
            Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: request.event_id.clone(),
            })
        };
        if let Some(stored) = records.iter().find(|r| r.event_id == request.event_id) {
            // Compared as the record holds them: sorted and unique.
            let named: IdList = request.fact_ids.iter().collect::<BTreeSet<_>>().iter().collect();
            let events: IdList = request.event_ids.iter().collect::<BTreeSet<_>>().iter().collect();
            let same = stored.action == Action::Redact
                && stored.fact_ids == named
                && stored.event_ids.clone().unwrap_or_default() == events
                && stored.actor == request.actor
                && stored.rationale == request.rationale
                && request.recorded_at.as_ref().is_none_or(|at| *at == stored.recorded_at);
            return if same {
                Ok(Some(self.stored_outcome(stored.clone())))
            } else {
                Err(reused())
            };
        }
        if self.dir.find_adjudication(&request.event_id)?.0.is_some() {
            return Err(reused());
        }
        Ok(None)
    }

    /// Finds the facts and records, checks that their text can go, and
    /// plans the redaction: the record, the entries and cases after, and
    /// each file with its tombstones or marked records (a daily file under
    /// its exclusive lock with `lock`).
    fn prepare_redaction(
        &self,
        request: &Redaction,
        records: &[Correction],
        lock: bool,
    ) -> Result<Prepared> {
        let named: BTreeSet<String> = request.fact_ids.iter().cloned().collect();
        let ids: Vec<&str> = named.iter().map(String::as_str).collect();
        let facts: HashMap<String, Fact> = self.facts_with_ids(&ids)?;
        let unknown: Vec<String> =
            named.iter().filter(|id| !facts.contains_key(*id)).cloned().collect();
        if !unknown.is_empty() {
            return Err(Error::invalid("fact_ids", Invalid::UnknownFacts { ids: unknown }));
        }
        let done: Vec<String> =
            facts.values().filter(|f| f.redacted_by.is_some()).map(|f| f.fact_id.clone()).collect();
        if !done.is_empty() {
            return Err(Error::invalid("fact_ids", Invalid::AlreadyRedacted { ids: sorted(done) }));
        }
        // A redaction of records alone reads no line of the log.
        let lines =
            if named.is_empty() { BTreeMap::new() } else { self.redaction_lines(&named, &facts)? };
        let events: BTreeSet<String> = request.event_ids.iter().cloned().collect();
        if let Some(both) = events.intersection(&named).next() {
            return Err(Error::invalid("event_ids", Invalid::RepeatedFact { id: both.clone() }));
        }
        let (event_hashes, streams) = self.record_hashes(&events)?;
        let mut hashes: BTreeMap<String, String> =
            lines.iter().map(|(id, (_, hash))| (id.clone(), hash.clone())).collect();
        hashes.extend(event_hashes);
        let record = Correction {
            action: Action::Redact,
            actor: request.actor.clone(),
            entry_key: None,
            event_id: request.event_id.clone(),
            event_ids: (!events.is_empty()).then(|| events.iter().collect::<IdList>()),
            fact_ids: named.iter().collect::<IdList>(),
            line_sha256: Some(hashes),
            rationale: request.rationale.clone(),
            recorded_at: request.recorded_at.clone().unwrap_or_else(|| self.now()),
            restores: None,
            schema_version: CORRECTION_SCHEMA_VERSION,
            workspace_id: self.workspace_id().to_owned(),
        };
        record
            .check_rules()
            .map_err(|violation| Error::invalid("correction", Invalid::Correction(violation)))?;
        let after = Retractions::from_records(records.iter().chain([&record]));
        let mut scope = Scope::of(&facts);
        scope.domains.extend(self.resolved_domains(&events)?);
        let mut planned = self.plan_in_scope(&record, &after, None, scope)?;
        mark_redacted(&mut planned, &after);
        mark_resolutions(&mut planned, &events);
        mark_keys(&mut planned);
        let mut targets: BTreeMap<String, PathBuf> = lines
            .into_values()
            .map(|(day, _)| (format!("{DAILY_DIR}/{}{DAY_EXTENSION}", day.day), day.path))
            .collect();
        targets.extend(streams.into_iter().map(|name| (name.to_owned(), self.file(name))));
        let files = self.staged(targets, &record, lock)?;
        Ok(Prepared { record, planned, files })
    }

    /// The SHA-256 of the line of each decision and correction record
    /// `named` (by event id), and the streams holding them.
    ///
    /// Errors: [`Invalid::UnknownEvents`] for an id no record has,
    /// [`Invalid::AlreadyRedacted`] for a record holding the marker,
    /// [`Invalid::RepeatedFact`] for an id on two lines.
    fn record_hashes(
        &self,
        named: &BTreeSet<String>,
    ) -> Result<(BTreeMap<String, String>, BTreeSet<&'static str>)> {
        let mut hashes: BTreeMap<String, String> = BTreeMap::new();
        let mut streams = BTreeSet::new();
        let mut done = Vec::new();
        if named.is_empty() {
            return Ok((hashes, streams));
        }
        let mut found = |name: &'static str, event: &str, marked: bool, hash: String| {
            if !named.contains(event) {
                return Ok(());
            }
            if hashes.insert(event.to_owned(), hash).is_some() {
                return Err(Error::invalid(
                    "event_ids",
                    Invalid::RepeatedFact { id: event.to_owned() },
                ));
            }
            if marked {
                done.push(event.to_owned());
            }
            streams.insert(name);
            Ok(())
        };
        let audit = self.dir.read_path(&self.file(AUDIT_FILE))?.unwrap_or_default();
        for (record, hash) in stream::record_lines::<Adjudication>(&audit) {
            found(AUDIT_FILE, &record.event_id, record.is_marked(), hash)?;
        }
        let stream_data = self.dir.read_path(&self.file(CORRECTIONS_FILE))?.unwrap_or_default();
        for (record, hash) in stream::record_lines::<Correction>(&stream_data) {
            found(CORRECTIONS_FILE, &record.event_id, record.is_marked(), hash)?;
        }
        let unknown: Vec<String> =
            named.iter().filter(|id| !hashes.contains_key(*id)).cloned().collect();
        if !unknown.is_empty() {
            return Err(Error::invalid("event_ids", Invalid::UnknownEvents { ids: unknown }));
        }
        if !done.is_empty() {
            return Err(Error::invalid(
                "event_ids",
                Invalid::AlreadyRedacted { ids: sorted(done) },
            ));
        }
        Ok((hashes, streams))
    }

    /// The memory keys of the cases a decision of `events` resolved: their
    /// copies of its actor and rationale get the marker too.
    ///
    /// Errors: as [`MemoryDir::stored_conflicts`](crate::store::memory_dir::MemoryDir).
    fn resolved_domains(&self, events: &BTreeSet<String>) -> Result<BTreeSet<String>> {
        if events.is_empty() {
            return Ok(BTreeSet::new());
        }
        let conflicts = self.dir.stored_conflicts()?;
        Ok(conflicts
            .file
            .records(&self.file(CONFLICTS_FILE), |_| true)?
            .into_iter()
            .filter(|case| case.resolution_event_id.as_ref().is_some_and(|e| events.contains(e)))
            .map(|case| case.memory_key)
            .collect())
    }

    /// Each of `files` (by name in the intent, with its path) with the
    /// tombstones or marked records of `record` in place of the lines it
    /// redacts; with `lock`, read under the file's exclusive lock, which
    /// the staged file holds until it is dropped, so that no append lands
    /// between this read and the rewrite. A file it leaves as it is is left
    /// out.
    ///
    /// Errors: as [`Workspace::redacted_file`].
    fn staged(
        &self,
        files: BTreeMap<String, PathBuf>,
        record: &Correction,
        lock: bool,
    ) -> Result<Vec<StagedFile>> {
        let mut staged = Vec::new();
        for (name, path) in files {
            // A stream that does not exist holds nothing to redact.
            if !path.exists() {
                continue;
            }
            let lock = if lock { Some(atomic_io::lock_for_rewrite(&path)?) } else { None };
            let data = self.dir.read_path(&path)?.unwrap_or_default();
            let rewritten = self.redacted_file(&name, &path, &data, record)?;
            if rewritten == data {
                continue;
            }
            staged.push(StagedFile {
                lock,
                name,
                path,
                sha256_before: canon::sha256_hex(&data),
                sha256_after: canon::sha256_hex(&rewritten),
                data: rewritten,
            });
        }
        Ok(staged)
    }

    /// `data`, the bytes of the file a redaction's intent names `name` (at
    /// `path`), with the lines `record` redacts replaced: a fact's line by
    /// its tombstone, a decision's or correction's by the record marked.
    ///
    /// Errors: as [`FactLog::with_tombstones`](crate::store::fact_log::FactLog::with_tombstones).
    pub(crate) fn redacted_file(
        &self,
        name: &str,
        path: &std::path::Path,
        data: &[u8],
        record: &Correction,
    ) -> Result<Vec<u8>> {
        // The line hashes of the records it names (not of its facts).
        let events = || -> BTreeMap<String, String> {
            let named = record.event_ids.iter().flatten();
            let hashes = record.line_sha256.as_ref();
            named.filter_map(|id| Some((id.to_owned(), hashes?.get(id)?.clone()))).collect()
        };
        Ok(match name {
            AUDIT_FILE => stream::with_marked_records::<Adjudication>(data, &events()),
            CORRECTIONS_FILE => stream::with_marked_records::<Correction>(data, &events()),
            _ => self.log.with_tombstones(path, data, record)?,
        })
    }

    /// Plans a redact record of the stream over the state as stored (one
    /// that arrived through git, docs/corrections.md "Corrections through
    /// git"): the facts taken out as a retraction takes them, the marker
    /// in place of every wording that lists one (whatever the merge kept),
    /// and each daily file that still holds a line the record redacts
    /// (the line whose hash it records) with its tombstone, under its
    /// exclusive lock with `lock` (to write it; a check takes none). Its facts'
    /// lines may be tombstones already, which name no unkeyed entry: the
    /// unkeyed entries that list the facts are found by their lists.
    ///
    /// Errors: as [`Workspace::redact`].
    pub(crate) fn plan_arrived_redaction(
        &self,
        record: &Correction,
        after: &Retractions,
        lock: bool,
    ) -> Result<(Planned, Vec<StagedFile>)> {
        let named: Vec<&str> = record.fact_ids.iter().collect();
        let facts = self.facts_with_ids(&named)?;
        let mut scope = Scope::of(&facts);
        let named = |id: &str| record.fact_ids.contains(id);
        let lists = |ids: &IdList| ids.iter().any(named);
        // The merge may have kept entries and cases of the facts under a
        // key their tombstones no longer hold (a side that did not see the
        // redaction): they are found by their lists.
        for entry in &self.dir.stored_curated()?.file.records(&self.file(CURATED_FILE), |_| true)? {
            if lists(&entry.evidence_ids) || entry.taken_ids().any(named) {
                match &entry.memory_key {
                    Some(key) => scope.domains.insert(key.clone()),
                    None => scope.unkeyed.insert(entry.key.clone()),
                };
            }
        }
        // A case of a decision whose words it redacts holds copies of them.
        let events: BTreeSet<String> =
            record.event_ids.iter().flatten().map(str::to_owned).collect();
        for case in
            &self.dir.stored_conflicts()?.file.records(&self.file(CONFLICTS_FILE), |_| true)?
        {
            let listed =
                case.candidates.iter().any(|c| lists(&c.evidence_ids) || c.taken_ids().any(named))
                    || lists(&case.observed_fact_ids);
            let resolved = case.resolution_event_id.as_ref().is_some_and(|e| events.contains(e));
            if listed || resolved {
                scope.domains.insert(case.memory_key.clone());
            }
        }
        let mut planned = self.plan_in_scope(record, after, None, scope)?;
        mark_redacted(&mut planned, after);
        mark_resolutions(&mut planned, &events);
        mark_keys(&mut planned);
        let mut targets: BTreeMap<String, PathBuf> = BTreeMap::new();
        let hashes = record.line_sha256.as_ref();
        if !record.fact_ids.is_empty() {
            self.log.each_line(|day, line, fact| {
                let hash = hashes.and_then(|h| h.get(fact.fact_id()));
                if hash.is_some_and(|hash| *hash == canon::sha256_hex(line))
                    && record.fact_ids.contains(fact.fact_id())
                {
                    targets
                        .entry(format!("{DAILY_DIR}/{}{DAY_EXTENSION}", day.day))
                        .or_insert_with(|| day.path.clone());
                }
            })?;
        }
        if !events.is_empty() {
            for name in [AUDIT_FILE, CORRECTIONS_FILE] {
                targets.insert(name.to_owned(), self.file(name));
            }
        }
        let files = self.staged(targets, record, lock)?;
        Ok((planned, files))
    }

    /// The daily file and line SHA-256 of each fact of `named` (`facts`,
    /// as read), by one pass over the log.
    ///
    /// Errors: [`Invalid::RepeatedFact`] for an id on two lines,
    /// [`Invalid::SameText`] for other facts with the same normal form as
    /// a named one; as [`Workspace::facts_with_ids`].
    fn redaction_lines(
        &self,
        named: &BTreeSet<String>,
        facts: &HashMap<String, Fact>,
    ) -> Result<BTreeMap<String, (DayFile, String)>> {
        let forms: HashSet<String> =
            facts.values().map(|f| canon::normal_form(&f.content)).collect();
        // A key holding a credential leaves every fact of the domain.
        let keys: HashSet<&str> = facts
            .values()
            .filter_map(|f| f.memory_key.as_deref())
            .filter(|key| redacted_key(key) != *key)
            .collect();
        let mut lines: BTreeMap<String, (DayFile, String)> = BTreeMap::new();
        let mut repeated: Option<String> = None;
        let mut same: Vec<String> = Vec::new();
        self.log.each_line(|day, line, fact| {
            if named.contains(fact.fact_id()) {
                let found = (day.clone(), canon::sha256_hex(line));
                if lines.insert(fact.fact_id().to_owned(), found).is_some() {
                    repeated.get_or_insert_with(|| fact.fact_id().to_owned());
                }
            } else if (fact.content() != REDACTED
                && forms.contains(&canon::normal_form(fact.content())))
                || fact.memory_key().is_some_and(|key| keys.contains(key))
            {
                same.push(fact.fact_id().to_owned());
            }
        })?;
        if let Some(id) = repeated {
            return Err(Error::invalid("fact_ids", Invalid::RepeatedFact { id }));
        }
        if !same.is_empty() {
            return Err(Error::invalid("fact_ids", Invalid::SameText { ids: sorted(same) }));
        }
        Ok(lines)
    }

    /// The path of a file a redaction's intent names (`daily/DAY.jsonl`,
    /// the audit stream or the corrections stream).
    ///
    /// Errors: [`Error::Corrupt`] for any other name (an intent changed by
    /// other hands).
    pub(crate) fn redaction_file(&self, name: &str) -> Result<PathBuf> {
        if name == AUDIT_FILE || name == CORRECTIONS_FILE {
            return Ok(self.file(name));
        }
        let day = name
            .strip_prefix(DAILY_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|rest| rest.strip_suffix(DAY_EXTENSION))
            .filter(|day| is_day_name(day));
        match day {
            Some(day) => Ok(self.log.path_for_day(day)),
            None => Err(Error::corrupt(
                Location::file(self.dir.journal().path()),
                Damage::record(format!(
                    "a redaction names {name:?}, which is not a daily file or a stream"
                )),
            )),
        }
    }
}

/// Checks a redaction's text and ids, before anything is read.
fn check_request(request: &Redaction) -> Result<()> {
    check_text(&request.actor, &request.rationale, &request.event_id)?;
    for id in &request.fact_ids {
        canon::check_id("fact_ids", id)?;
    }
    for id in &request.event_ids {
        canon::check_id("event_ids", id)?;
    }
    if request.fact_ids.is_empty() && request.event_ids.is_empty() {
        return Err(Error::invalid("fact_ids", Invalid::Empty));
    }
    if request.event_ids.contains(&request.event_id) {
        return Err(Error::invalid(
            "event_ids",
            Invalid::UnknownEvents { ids: vec![request.event_id.clone()] },
        ));
    }
    Ok(())
}

/// Replaces a memory key holding a credential by its [`redacted_key`] in
/// every entry and case of the plan's scope (whole domains: a redaction of
/// one fact of such a key redacts them all).
fn mark_keys(planned: &mut Planned) {
    let credential = |key: &str| redacted_key(key) != key;
    edit_entries(
        planned,
        |e| e.memory_key.as_deref().is_some_and(credential),
        |e| e.memory_key = e.memory_key.as_deref().map(redacted_key),
    );
    edit_cases(
        planned,
        |c| credential(&c.memory_key),
        |c| c.memory_key = redacted_key(&c.memory_key),
    );
}

/// Puts the marker in place of the copies of a decision's actor and
/// rationale in every case of the plan's scope that `events` resolved.
fn mark_resolutions(planned: &mut Planned, events: &BTreeSet<String>) {
    let named = |c: &Case| {
        c.resolution_event_id.as_ref().is_some_and(|e| events.contains(e))
            && (c.resolution_actor.as_deref() != Some(REDACTED)
                || c.resolution_rationale.as_deref() != Some(REDACTED))
    };
    edit_cases(planned, named, |c| {
        c.resolution_actor = Some(REDACTED.to_owned());
        c.resolution_rationale = Some(REDACTED.to_owned());
    });
}

/// Puts the marker in place of the wording of every entry and candidate
/// of the plan's scope that must hold it once the plan is applied (see
/// [`Retractions::needs_marker`]; `after`: the facts retracted and redacted
/// with the record), superseded entries and closed cases included: the
/// history must not hold the text either.
fn mark_redacted(planned: &mut Planned, after: &Retractions) {
    edit_entries(
        planned,
        |e| e.content != REDACTED && after.needs_marker(e.evidence_ids.iter().chain(e.taken_ids())),
        |e| REDACTED.clone_into(&mut e.content),
    );
    let worded = |c: &Candidate| {
        c.content != REDACTED && after.needs_marker(c.evidence_ids.iter().chain(c.taken_ids()))
    };
    edit_cases(
        planned,
        |case| case.candidates.iter().any(worded),
        |case| {
            for candidate in case.candidates.iter_mut().filter(|c| worded(c)) {
                REDACTED.clone_into(&mut candidate.content);
            }
        },
    );
}

/// Applies `edit` to each entry of the plan's scope, as the plan leaves
/// it, for which `wanted` holds; an entry the plan did not change joins
/// the plan.
fn edit_entries(planned: &mut Planned, wanted: impl Fn(&Entry) -> bool, edit: impl Fn(&mut Entry)) {
    for entry in &planned.entries {
        let at = planned.plan.entries.iter().position(|e| e.key == entry.key);
        if !wanted(at.map_or(entry, |at| &planned.plan.entries[at])) {
            continue;
        }
        let at = at.unwrap_or_else(|| {
            planned.plan.entries.push(entry.clone());
            planned.plan.entries.len() - 1
        });
        edit(&mut planned.plan.entries[at]);
    }
}

/// Applies `edit` to each case of the plan's scope, as the plan leaves it,
/// for which `wanted` holds; a case the plan did not change joins the
/// plan.
fn edit_cases(planned: &mut Planned, wanted: impl Fn(&Case) -> bool, edit: impl Fn(&mut Case)) {
    for case in &planned.cases {
        let at = planned.plan.cases.iter().position(|c| c.conflict_id == case.conflict_id);
        if !wanted(at.map_or(case, |at| &planned.plan.cases[at])) {
            continue;
        }
        let at = at.unwrap_or_else(|| {
            planned.plan.cases.push(case.clone());
            planned.plan.cases.len() - 1
        });
        edit(&mut planned.plan.cases[at]);
    }
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_unstable();
    ids.dedup();
    ids
}
