//! Acceptance 1: workspaces are isolated and identified by the canonical
//! project path; a record of another workspace is a scope error.
#![allow(clippy::disallowed_methods)]

use std::path::{Component, Path, PathBuf};

use workmem::DistillOptions;
use workmem::{Error, internals::canon};

use crate::common::{Project, append_raw, open, write_raw};

/// Returns `target` as a path relative to the current directory.
fn relative_to_cwd(target: &Path) -> PathBuf {
    let cwd = std::fs::canonicalize(std::env::current_dir().expect("cwd")).expect("canonical cwd");
    let target = std::fs::canonicalize(target).expect("canonical target");
    let base: Vec<Component<'_>> = cwd.components().collect();
    let goal: Vec<Component<'_>> = target.components().collect();
    let common = base.iter().zip(&goal).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for part in &goal[common..] {
        out.push(part.as_os_str());
    }
    out
}

#[test]
fn two_projects_never_share_facts() {
    let a = Project::new();
    let b = Project::new();
    a.add("shared-id", "decision", 5, None, "Only in A.", "2026-01-01T00:00:00Z");
    b.add("other", "pitfall", 4, Some("db.engine"), "Only in B.", "2026-01-01T00:00:00Z");
    assert_ne!(a.ws.workspace_id(), b.ws.workspace_id());
    let a_facts = a.ws.facts().unwrap();
    let b_facts = b.ws.facts().unwrap();
    assert_eq!(a_facts.iter().map(workmem::Fact::content).collect::<Vec<_>>(), ["Only in A."]);
    assert_eq!(b_facts.iter().map(workmem::Fact::content).collect::<Vec<_>>(), ["Only in B."]);
    assert_eq!(a_facts[0].workspace_id(), a.ws.workspace_id());
    // Distilling one project promotes nothing in the other.
    a.distill();
    b.distill();
    assert_eq!(a.ws.curated().unwrap().entries.len(), 1);
    assert!(b.ws.memory().unwrap().contains("Only in B."));
    assert!(!b.ws.memory().unwrap().contains("Only in A."));
    assert!(!a.ws.context(None).unwrap().contains("Only in B."));
}

#[test]
fn relative_path_and_symlink_give_one_workspace_id() {
    let project = Project::new();
    let canonical = std::fs::canonicalize(project.path()).unwrap();
    let expected = canon::workspace_id(canonical.to_str().unwrap());
    assert_eq!(project.ws.workspace_id(), expected);

    let relative = relative_to_cwd(project.path());
    assert!(relative.is_relative(), "{relative:?}");
    assert_eq!(open(&relative).workspace_id(), expected);

    let dotted = project.path().join(".").join("sub").join("..");
    std::fs::create_dir(project.path().join("sub")).unwrap();
    assert_eq!(open(&dotted).workspace_id(), expected);

    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("link-to-project");
    std::os::unix::fs::symlink(project.path(), &link).unwrap();
    let via_link = open(&link);
    assert_eq!(via_link.workspace_id(), expected);
    assert_eq!(via_link.project(), canonical);

    // Both handles read and write the same log.
    via_link
        .remember(crate::common::fact(
            "via-link",
            "outcome",
            3,
            None,
            "Written via link.",
            "2026-01-01T00:00:00Z",
        ))
        .unwrap();
    let ids: Vec<String> =
        project.ws.facts().unwrap().iter().map(|f| f.fact_id().to_owned()).collect();
    assert_eq!(ids, ["via-link"]);
}

#[test]
fn a_log_line_from_another_workspace_is_a_scope_error() {
    let a = Project::new();
    let b = Project::new();
    a.add("a1", "outcome", 3, None, "A's fact.", "2026-01-01T00:00:00Z");
    let b_fact = b.add("b1", "outcome", 3, None, "B's fact.", "2026-01-01T00:00:00Z");
    let a_log = a.day_file("2026-01-01");
    append_raw(&a_log, b_fact.to_line().as_bytes());

    let err = a.ws.facts().unwrap_err();
    assert!(matches!(err, Error::Scope { .. }), "{err}");
    match &err {
        Error::Scope { location, found, expected } => {
            assert_eq!(location.path, a_log);
            assert_eq!(location.line, Some(2));
            assert_eq!(found, b.ws.workspace_id());
            assert_eq!(expected, a.ws.workspace_id());
        }
        other => panic!("expected a scope error, got {other:?}"),
    }
    // Every reader of the log refuses it, and distill writes nothing.
    assert!(matches!(a.ws.context(None), Err(Error::Scope { .. })));
    assert!(matches!(
        a.ws.distill(&DistillOptions::new()).map(|d| d.report),
        Err(Error::Scope { .. })
    ));
    assert!(!a.file("curated.json").exists());
}

#[test]
fn state_files_from_another_workspace_are_scope_errors() {
    let a = Project::new();
    let b = Project::new();
    for p in [&a, &b] {
        p.add("d1", "decision", 5, None, "Use WAL mode.", "2026-01-01T00:00:00Z");
        p.distill();
    }
    // A copied curated.json keeps B's workspace id: reading it in A fails.
    let copied = std::fs::read(b.file("curated.json")).unwrap();
    write_raw(&a.file("curated.json"), &copied);
    let err = a.ws.curated().unwrap_err();
    assert!(matches!(err, Error::Scope { .. }), "{err:?}");
    assert!(matches!(err, Error::Scope { .. }));
    assert!(matches!(a.ws.memory(), Err(Error::Scope { .. })));
}
