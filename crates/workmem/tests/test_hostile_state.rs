//! Issue 4, acceptance 4: hostile durable state (a cloned repository may
//! carry anything in its memory directory). Each case is refused with a
//! clear error naming the file and the problem, and no operation changes a
//! byte of any file of the memory directory.
#![allow(clippy::disallowed_methods)] // tests plant hostile files directly

use std::fs;
use std::path::PathBuf;

use workmem::DistillOptions;
use workmem::internals::journal::{AUDIT_FILE, JOURNAL_FILE};
use workmem::{Error, NewFact, Policy, Workspace};

use crate::test_torn_writes::{AS_OF, Tied, files, stamp};

/// The daily file that holds the newest facts of a [`Tied`] project plus
/// one more: hostile lines go before its last line, so that readers of
/// recent facts (the context) must read them too.
const DAY: &str = "daily/2026-05-01.jsonl";

struct Hostile {
    tied: Tied,
    /// A valid fact line of this workspace (without newline).
    line: String,
    /// The open conflict case, read before any damage.
    case: workmem::Case,
}

impl Hostile {
    fn new() -> Hostile {
        let tied = Tied::new();
        let ws = tied.open();
        let fact = |id: &str, at: &str| NewFact {
            content: format!("Nightly build {id} passed."),
            recorded_at: Some(at.into()),
            fact_id: Some(id.into()),
            ..NewFact::default()
        };
        let first = ws.remember(fact("n1", "2026-05-01T01:00:00Z")).expect("remember");
        ws.remember(fact("n2", "2026-05-01T02:00:00Z")).expect("remember");
        let case = tied.case();
        Hostile { tied, line: first.to_line().trim_end().to_owned(), case }
    }

    fn memory(&self) -> PathBuf {
        self.tied.memory()
    }

    /// Puts `bad` (a line without newline) between the two lines of [`DAY`].
    fn plant_line(&self, bad: &[u8]) {
        let path = self.memory().join(DAY);
        let text = fs::read(&path).expect("read day");
        let cut = text.iter().position(|&b| b == b'\n').expect("two lines") + 1;
        let mut out = text[..cut].to_vec();
        out.extend_from_slice(bad);
        out.push(b'\n');
        out.extend_from_slice(&text[cut..]);
        fs::write(&path, out).expect("plant");
    }

    /// The valid line with the value of `field` replaced by raw JSON `json`.
    fn with_field(&self, field: &str, json: &str) -> String {
        let mut value: serde_json::Value = serde_json::from_str(&self.line).expect("valid line");
        value[field] = serde_json::from_str(json).expect("test JSON");
        value.to_string()
    }
}

/// A named operation on a workspace.
type Op<'a> = (&'a str, Box<dyn Fn(&Workspace) -> Result<(), Error> + 'a>);

/// A named damage to a file and the error it must cause.
type Damage = (&'static str, Box<dyn Fn(&[u8]) -> Vec<u8>>, Expect<'static>);

/// The error variant an operation must fail with.
#[derive(Clone, Copy)]
enum Fails {
    Corrupt,
    Scope,
    Version,
}

/// What an operation's error must say.
struct Expect<'a> {
    /// The kind of error.
    fails: Fails,
    /// File name the message must contain.
    file: &'a str,
    /// Words the message must contain (the problem).
    words: &'a [&'a str],
}

fn check_error(label: &str, op: &str, result: Result<(), Error>, expect: &Expect) {
    let err = match result {
        Ok(()) => panic!("{label}: {op} succeeded on hostile state"),
        Err(err) => err,
    };
    let message = err.to_string();
    let variant_matches = match expect.fails {
        Fails::Corrupt => matches!(err, Error::Corrupt { .. }),
        Fails::Scope => matches!(err, Error::Scope { .. }),
        Fails::Version => matches!(err, Error::UnsupportedVersion { .. }),
    };
    assert!(variant_matches, "{label}: {op}: {message}");
    assert!(
        message.contains(expect.file),
        "{label}: {op}: the message does not name {}: {message}",
        expect.file
    );
    for word in expect.words {
        assert!(
            message.contains(word),
            "{label}: {op}: the message does not say {word:?}: {message}"
        );
    }
}

/// Runs every operation that reads the daily log and checks each fails as
/// expected and nothing changes.
fn assert_log_refused(h: &Hostile, label: &str, expect: &Expect) {
    let memory = h.memory();
    let before = files(&memory);
    let ws = h.tied.open();
    let policy = Policy::default();
    let ops: Vec<Op> = vec![
        ("facts", Box::new(|ws| ws.facts().map(drop))),
        ("facts_on", Box::new(|ws| ws.facts_on("2026-05-01").map(drop))),
        ("log_days", Box::new(|ws| ws.log_days().map(drop))),
        ("context", Box::new(|ws| ws.context(None).map(drop))),
        (
            "distill",
            Box::new(move |ws| {
                ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(stamp(AS_OF)))
                    .map(|d| d.report)
                    .map(drop)
            }),
        ),
        (
            "remember with an explicit id",
            Box::new(|ws| {
                ws.remember(NewFact {
                    fact_id: Some("late".into()),
                    ..NewFact::new("After the damage.")
                })
                .map(drop)
            }),
        ),
        (
            "resolve",
            Box::new(|ws| {
                let mut request = h.tied.decision(&h.case);
                request.event_id = "hostile:1".into();
                ws.resolve(request).map(drop)
            }),
        ),
    ];
    for (op, run) in &ops {
        check_error(label, op, run(&ws), expect);
        assert_eq!(files(&memory), before, "{label}: {op} changed the memory directory");
    }
    let problems = ws.verify().expect("verify reads");
    assert!(
        problems.iter().any(|p| reported(p, expect)),
        "{label}: verify does not report it: {problems:?}"
    );
    assert_eq!(files(&memory), before, "{label}: verify changed the memory directory");
}

/// Whether verify's `problem` is the expected one (file, line and words).
fn reported(problem: &workmem::Problem, expect: &Expect) -> bool {
    let place = match problem.line {
        Some(line) => format!("{}:{line}", problem.file),
        None => problem.file.clone(),
    };
    place.contains(expect.file) && expect.words.iter().all(|w| problem.message.contains(w))
}

fn day_line<'a>(words: &'a [&'a str]) -> Expect<'a> {
    Expect { fails: Fails::Corrupt, file: "2026-05-01.jsonl:2", words }
}

#[test]
fn invalid_utf8_in_a_log_line() {
    let h = Hostile::new();
    let mut bad =
        h.line.replace("Nightly build n1 passed.", "Nightly build \u{fffd} passed.").into_bytes();
    let at = bad.windows(3).position(|w| w == "\u{fffd}".as_bytes()).expect("marker");
    bad.splice(at..at + 3, [0xff, 0xfe]);
    h.plant_line(&bad);
    assert_log_refused(&h, "invalid UTF-8", &day_line(&["not valid UTF-8"]));
}

#[test]
fn a_json_line_that_is_not_an_object() {
    for (json, found) in [
        ("[1, 2]", "an array"),
        ("\"a fact\"", "a string"),
        ("42", "an integer"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let h = Hostile::new();
        h.plant_line(json.as_bytes());
        let words = ["not a JSON object", found];
        assert_log_refused(&h, json, &day_line(&words));
    }
}

#[test]
fn a_wrong_type_in_each_field_of_a_fact() {
    let cases: [(&str, &str); 13] = [
        ("content", "5"),
        ("evidence", "\"file.rs\""),
        ("evidence", "{\"file\": 7}"),
        ("fact_id", "12"),
        ("importance", "\"4\""),
        ("importance", "3.0"),
        ("kind", "[\"decision\"]"),
        ("memory_key", "{}"),
        ("recorded_at", "1767225600"),
        ("schema_version", "\"2\""),
        ("source", "false"),
        ("workspace_id", "null"),
        ("content", "null"),
    ];
    for (field, json) in cases {
        let h = Hostile::new();
        let bad = h.with_field(field, json);
        h.plant_line(bad.as_bytes());
        let label = format!("{field} = {json}");
        let word = format!("invalid {field}");
        let words = [word.as_str(), "expected"];
        assert_log_refused(&h, &label, &day_line(&words));
    }
}

#[test]
fn an_unknown_schema_version_of_a_fact() {
    let h = Hostile::new();
    h.plant_line(h.with_field("schema_version", "3").as_bytes());
    assert_log_refused(
        &h,
        "fact schema 3",
        &day_line(&["unsupported fact schema_version 3", "supported: 1, 2"]),
    );
}

#[test]
fn a_fact_of_another_workspace() {
    let h = Hostile::new();
    h.plant_line(h.with_field("workspace_id", "\"0123456789abcdef\"").as_bytes());
    let expect = Expect {
        fails: Fails::Scope,
        file: "2026-05-01.jsonl:2",
        words: &["belongs to workspace 0123456789abcdef"],
    };
    assert_log_refused(&h, "other workspace", &expect);
}

/// Runs the operations named in `ops` and checks each fails as expected
/// and nothing changes; verify must report the problem.
fn assert_state_refused(h: &Hostile, label: &str, expect: &Expect, ops: &[&str]) {
    let memory = h.memory();
    let before = files(&memory);
    // Opening is allowed to fail only with the expected error.
    let ws = match Workspace::open(&h.tied.root, None) {
        Ok(ws) => ws,
        Err(err) => {
            check_error(label, "open", Err(err), expect);
            assert_eq!(files(&memory), before, "{label}: open changed the memory directory");
            return;
        }
    };
    for op in ops {
        let result = match *op {
            "facts" => ws.facts().map(drop),
            "distill" => {
                ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).map(|d| d.report).map(drop)
            }
            "remember" => ws
                .remember(NewFact {
                    fact_id: Some("late".into()),
                    ..NewFact::new("After the damage.")
                })
                .map(drop),
            "memory" => ws.memory().map(drop),
            "context" => ws.context(None).map(drop),
            "curated" => ws.curated().map(drop),
            "conflicts" => ws.conflicts().map(drop),
            "history" => ws.history("db.engine").map(drop),
            "resolve" => {
                let mut request = h.tied.decision(&h.case);
                request.event_id = "hostile:1".into();
                ws.resolve(request).map(drop)
            }
            other => panic!("unknown op {other}"),
        };
        check_error(label, op, result, expect);
        assert_eq!(files(&memory), before, "{label}: {op} changed the memory directory");
    }
    let problems = ws.verify().expect("verify reads");
    assert!(
        problems.iter().any(|p| reported(p, expect)),
        "{label}: verify does not report it: {problems:?}"
    );
    assert_eq!(files(&memory), before, "{label}: verify changed the memory directory");
}

const STATE_OPS: &[&str] = &["distill", "memory", "context", "curated", "history", "resolve"];
const QUEUE_OPS: &[&str] = &["distill", "conflicts", "history", "resolve"];

#[test]
fn curated_json_truncated_empty_or_from_another_workspace() {
    let cases: Vec<Damage> = vec![
        (
            "truncated",
            Box::new(|b: &[u8]| b[..b.len() / 2].to_vec()),
            Expect { fails: Fails::Corrupt, file: "curated.json", words: &["not valid JSON"] },
        ),
        (
            "empty",
            Box::new(|_: &[u8]| Vec::new()),
            Expect { fails: Fails::Corrupt, file: "curated.json", words: &["not valid JSON"] },
        ),
        (
            "another workspace",
            Box::new(|b: &[u8]| other_workspace(b)),
            Expect {
                fails: Fails::Scope,
                file: "curated.json",
                words: &["belongs to workspace 0123456789abcdef"],
            },
        ),
        (
            "schema 4",
            Box::new(|b: &[u8]| {
                String::from_utf8_lossy(b)
                    .replace("\"schema_version\": 2", "\"schema_version\": 4")
                    .into_bytes()
            }),
            Expect {
                fails: Fails::Version,
                file: "curated.json",
                words: &["unsupported curated schema_version 4"],
            },
        ),
    ];
    for (label, damage, expect) in cases {
        let h = Hostile::new();
        let path = h.memory().join("curated.json");
        fs::write(&path, damage(&fs::read(&path).expect("read"))).expect("damage");
        assert_state_refused(&h, &format!("curated.json {label}"), &expect, STATE_OPS);
    }
}

#[test]
fn conflicts_json_truncated_empty_from_another_workspace_or_forged() {
    let cases: Vec<Damage> = vec![
        (
            "truncated",
            Box::new(|b: &[u8]| b[..b.len() / 3].to_vec()),
            Expect { fails: Fails::Corrupt, file: "conflicts.json", words: &["not valid JSON"] },
        ),
        (
            "empty",
            Box::new(|_: &[u8]| Vec::new()),
            Expect { fails: Fails::Corrupt, file: "conflicts.json", words: &["not valid JSON"] },
        ),
        (
            "another workspace",
            Box::new(|b: &[u8]| other_workspace(b)),
            Expect {
                fails: Fails::Scope,
                file: "conflicts.json",
                words: &["belongs to workspace 0123456789abcdef"],
            },
        ),
        (
            "forged fingerprint",
            Box::new(|b: &[u8]| {
                let mut value: serde_json::Value = serde_json::from_slice(b).expect("valid");
                value["cases"][0]["fingerprint"] = serde_json::Value::String("0".repeat(64));
                let mut text = serde_json::to_string_pretty(&value).expect("json");
                text.push('\n');
                text.into_bytes()
            }),
            Expect { fails: Fails::Corrupt, file: "conflicts.json", words: &["fingerprint"] },
        ),
        (
            "schema 3",
            Box::new(|b: &[u8]| {
                String::from_utf8_lossy(b)
                    .replace("\"schema_version\": 1", "\"schema_version\": 3")
                    .into_bytes()
            }),
            Expect {
                fails: Fails::Version,
                file: "conflicts.json",
                words: &["unsupported conflicts schema_version 3"],
            },
        ),
    ];
    for (label, damage, expect) in cases {
        let h = Hostile::new();
        let path = h.memory().join("conflicts.json");
        fs::write(&path, damage(&fs::read(&path).expect("read"))).expect("damage");
        assert_state_refused(&h, &format!("conflicts.json {label}"), &expect, QUEUE_OPS);
    }
}

#[test]
fn an_unknown_schema_version_in_the_journal_or_audit_stream() {
    // The journal is empty at rest: the damaged line belongs to a
    // transaction left by a crash. Unfinished (after its curated_applied
    // line), opening must recover it and refuses instead; committed but
    // not yet compacted, opening reads only the last line, and the writers
    // that compact it refuse.
    for (file, phases, ops) in [
        (JOURNAL_FILE, 2, &[][..]),
        (JOURNAL_FILE, 5, &["distill", "resolve"][..]),
        (AUDIT_FILE, 5, &["resolve"][..]),
    ] {
        let h = Hostile::new();
        let case = h.tied.case();
        let run = h.tied.interrupted(&h.tied.decision(&case));
        if file == JOURNAL_FILE {
            run.crash_after(&h.tied, phases);
        }
        let path = h.memory().join(file);
        let text = fs::read_to_string(&path).expect("read");
        let mut first: serde_json::Value =
            serde_json::from_str(text.lines().next().expect("a line")).expect("json");
        first["schema_version"] = serde_json::json!(2);
        let rest: String = text.lines().skip(1).flat_map(|l| [l, "\n"]).collect();
        fs::write(&path, format!("{first}\n{rest}")).expect("damage");
        let label = format!("{file} after {phases} phases");
        let name = format!("{file}:1");
        let expect =
            Expect { fails: Fails::Corrupt, file: &name, words: &["unsupported schema_version 2"] };
        assert_state_refused(&h, &label, &expect, ops);
        // Verify reports it even where opening for work refuses.
        let before = files(&h.memory());
        let checker = Workspace::builder(&h.tied.root).open_read_only().expect("read-only");
        let problems = checker.verify().expect("verify reads");
        assert!(
            problems.iter().any(|p| reported(p, &expect)),
            "{label}: verify does not report it: {problems:?}"
        );
        assert_eq!(files(&h.memory()), before, "{label}: verify changed the memory directory");
    }
}

fn other_workspace(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid");
    let id = value["workspace_id"].as_str().expect("workspace id").to_owned();
    text.replace(&id, "0123456789abcdef").into_bytes()
}

/// Issue 12, item 7: control and format characters (ESC, OSC, BEL, C1,
/// bidi overrides, zero-width) in any text field of a stored fact are
/// refused on read like a bad content, naming the field and the code point.
#[test]
fn control_and_format_characters_in_each_text_field_of_a_fact_line() {
    let cases: [(&str, &str, &str, &str); 7] = [
        ("content", "\"Nightly build \\u200b passed.\"", "invalid content", "U+200B"),
        ("content", "\"Nightly \\u202ebuild passed.\"", "invalid content", "U+202E"),
        ("source", "\"agent\\u001b]0;pwned\\u0007\"", "invalid source", "U+001B"),
        ("source", "\"ag\\u2066ent\"", "invalid source", "U+2066"),
        ("evidence", "{\"file\\u009b\": \"a.rs\"}", "invalid evidence", "U+009B"),
        ("evidence", "{\"file\": \"a.rs\\u001b[2J\"}", "invalid evidence", "U+001B"),
        ("evidence", "{\"file\": \"a\\u200d.rs\"}", "invalid evidence", "U+200D"),
    ];
    for (field, json, word, code) in cases {
        let h = Hostile::new();
        h.plant_line(h.with_field(field, json).as_bytes());
        let label = format!("{field} = {json}");
        assert_log_refused(&h, &label, &day_line(&[word, code]));
    }
}

/// Issue 12, item 7: the same characters are refused on append in every
/// text field, naming the field, and nothing is written.
#[test]
fn control_and_format_characters_are_refused_on_append_and_resolve() {
    let h = Hostile::new();
    let ws = h.tied.open();
    let before = files(&h.memory());
    let evidence =
        |key: &str, value: &str| [(key.to_owned(), value.to_owned())].into_iter().collect();
    let cases: Vec<(NewFact, &str, &str)> = vec![
        (NewFact::new("Read \u{202e}txt.exe"), "content", "U+202E"),
        (NewFact::new("zero\u{200b}width"), "content", "U+200B"),
        (
            NewFact { source: Some("user\u{1b}]2;x\u{7}".into()), ..NewFact::new("x") },
            "source",
            "U+001B",
        ),
        (NewFact { source: Some("us\u{feff}er".into()), ..NewFact::new("x") }, "source", "U+FEFF"),
        (NewFact { evidence: evidence("k\u{9b}", "v"), ..NewFact::new("x") }, "evidence", "U+009B"),
        (NewFact { evidence: evidence("k", "v\u{7}"), ..NewFact::new("x") }, "evidence", "U+0007"),
        (
            NewFact { evidence: evidence("k", "v\u{2067}"), ..NewFact::new("x") },
            "evidence",
            "U+2067",
        ),
    ];
    for (new, field, code) in cases {
        match ws.remember(new.clone()) {
            Err(Error::InvalidInput {
                field: got,
                reason: reason @ workmem::Invalid::ControlCharacter { .. },
                ..
            }) => {
                assert!(got.starts_with(field), "{new:?}: {got}");
                assert!(reason.to_string().contains(code), "{new:?}: {reason}");
            }
            other => panic!("{new:?} gave {other:?}"),
        }
    }
    for (actor, rationale, field) in [
        ("rev\u{1b}[2Jiewer", "Production needs extensions.", "actor"),
        ("reviewer", "Because \u{202e}snoisnetxe", "rationale"),
        ("re\u{85}\u{9d}viewer", "ok", "actor"),
    ] {
        let mut request = h.tied.decision(&h.case);
        request.actor = actor.into();
        request.rationale = rationale.into();
        match ws.resolve(request) {
            Err(Error::InvalidInput { field: got, .. }) => {
                assert_eq!(got, field, "{actor:?} {rationale:?}");
            }
            other => panic!("{actor:?} {rationale:?} gave {other:?}"),
        }
    }
    assert_eq!(
        files(&h.memory()),
        before,
        "a refused append or resolve changed the memory directory"
    );
    // Ordinary non-ASCII text and whitespace controls still pass.
    ws.remember(NewFact {
        source: Some("r\u{e9}viseur".into()),
        ..NewFact::new("Caf\u{e9}\tau\u{a0}lait \u{4e2d}")
    })
    .expect("plain Unicode is fine");
}

/// Issue 12, item 7: a hostile audit stream or review queue whose actor or
/// rationale carries terminal escapes is refused like any invalid record.
#[test]
fn control_characters_in_a_stored_actor_or_rationale() {
    for (file, field, ops) in [
        (AUDIT_FILE, "actor", &["resolve"][..]),
        (AUDIT_FILE, "rationale", &["resolve"][..]),
        ("conflicts.json", "resolution_actor", QUEUE_OPS),
        ("conflicts.json", "resolution_rationale", QUEUE_OPS),
    ] {
        let h = Hostile::new();
        let ws = h.tied.open();
        ws.resolve(h.tied.decision(&h.case)).expect("resolve");
        let path = h.memory().join(file);
        let text = fs::read_to_string(&path).expect("read");
        let original = if field.ends_with("actor") {
            "reviewer@example.com"
        } else {
            "Production needs extensions."
        };
        let hostile = text.replace(original, "x\\u001b]0;pwned\\u0007y");
        assert_ne!(hostile, text, "{file}: {field} not found");
        fs::write(&path, hostile).expect("damage");
        let word = format!("invalid {field}");
        let expect = Expect { fails: Fails::Corrupt, file, words: &[&word, "U+001B"] };
        assert_state_refused(&h, &format!("{file} {field}"), &expect, ops);
    }
}

/// What to plant where a regular file is expected.
#[derive(Debug, Clone, Copy)]
enum Special {
    Fifo,
    Directory,
    Device,
}

impl Special {
    /// Creates the special file at `path` (removing what is there).
    fn plant(self, path: &std::path::Path) {
        let _ = fs::remove_file(path);
        let status = match self {
            Special::Fifo => std::process::Command::new("mkfifo").arg(path).status(),
            Special::Directory => return fs::create_dir(path).expect("plant a directory"),
            // The null device's numbers: reading it never blocks, but it is
            // no log either.
            Special::Device => {
                std::process::Command::new("mknod").arg(path).args(["c", "1", "3"]).status()
            }
        };
        assert!(status.is_ok_and(|s| s.success()), "cannot plant {self:?} at {}", path.display());
    }

    fn words(self) -> &'static str {
        match self {
            Special::Fifo => "is a FIFO (named pipe), not a regular file",
            Special::Directory => "is a directory, not a regular file",
            Special::Device => "is a character device, not a regular file",
        }
    }
}

/// Every regular file below `dir` with its bytes, never opening anything
/// else (a FIFO would block the reader).
fn regular_files(dir: &std::path::Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            let kind = fs::symlink_metadata(&path).expect("stat").file_type();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                out.insert(path.clone(), fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// Runs `op` on its own thread and returns its result, or panics naming
/// `label` when it has not finished after 20 seconds (it hangs). A thread
/// stuck on `fifo` is released by opening the FIFO for writing.
fn within_time<T: Send + 'static>(
    label: &str,
    fifo: Option<&std::path::Path>,
    op: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(op());
    });
    if let Ok(value) = receive.recv_timeout(std::time::Duration::from_secs(20)) {
        value
    } else {
        if let Some(fifo) = fifo {
            use std::os::unix::fs::OpenOptionsExt;
            drop(fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(fifo));
        }
        panic!("{label} hangs");
    }
}

/// Issue 12, item 8: a FIFO, a directory or a device where a daily log or a
/// state file is expected is refused as corruption naming the file, without
/// blocking, and nothing changes.
#[test]
fn a_fifo_directory_or_device_where_a_file_is_expected() {
    let targets: [(&str, &[&str]); 6] = [
        // The newest day, so that the context reads it too.
        (
            "daily/2026-05-09.jsonl",
            &["facts", "log_days", "context", "distill", "verify", "remember"],
        ),
        ("curated.json", &["memory", "context", "distill", "verify"]),
        ("conflicts.json", &["conflicts", "distill", "verify"]),
        (AUDIT_FILE, &["adjudications", "verify"]),
        (JOURNAL_FILE, &["open", "verify"]),
        ("MEMORY.md", &["memory"]),
    ];
    for (target, ops) in targets {
        for special in [Special::Fifo, Special::Directory, Special::Device] {
            let h = Hostile::new();
            let ws = h.tied.open();
            ws.resolve(h.tied.decision(&h.case)).expect("resolve");
            let memory = h.memory();
            let path = memory.join(target);
            special.plant(&path);
            let before = regular_files(&memory);
            let fifo = matches!(special, Special::Fifo).then(|| path.clone());
            for op in ops {
                let label = format!("{special:?} at {target}: {op}");
                let ws = ws.clone();
                let root = h.tied.root.clone();
                let name = op.to_string();
                let result = within_time(&label, fifo.as_deref(), move || -> Result<(), Error> {
                    match name.as_str() {
                        "open" => Workspace::open(&root, None).map(drop),
                        "facts" => ws.facts().map(drop),
                        "log_days" => ws.log_days().map(drop),
                        // Appending to the pipe would lose the fact.
                        "remember" => ws
                            .remember(NewFact {
                                recorded_at: Some("2026-05-09T12:00:00Z".into()),
                                ..NewFact::new("Appended to a pipe?")
                            })
                            .map(drop),
                        "context" => ws.context(None).map(drop),
                        "memory" => ws.memory().map(drop),
                        "conflicts" => ws.conflicts().map(drop),
                        "adjudications" => ws.adjudications().map(drop),
                        "distill" => ws
                            .distill(&DistillOptions::new().as_of(stamp(AS_OF)))
                            .map(|d| d.report)
                            .map(drop),
                        "verify" => match ws.verify() {
                            // Reported as a problem, or refused outright.
                            Ok(problems)
                                if problems
                                    .iter()
                                    .any(|p| p.message.contains("not a regular file")) =>
                            {
                                Err(Error::corrupt(
                                    workmem::Location::file(&root),
                                    workmem::Damage::Record { problem: format!("{problems:?}") },
                                ))
                            }
                            Ok(problems) => panic!("verify is clean: {problems:?}"),
                            Err(err) => Err(err),
                        },
                        other => panic!("unknown op {other}"),
                    }
                });
                let file_name = std::path::Path::new(target)
                    .file_name()
                    .expect("name")
                    .to_str()
                    .expect("utf-8");
                let expect =
                    Expect { fails: Fails::Corrupt, file: file_name, words: &[special.words()] };
                check_error(&label, op, result, &expect);
                assert_eq!(regular_files(&memory), before, "{label} changed the memory directory");
            }
        }
    }
}

/// Issue 12, item 6: a checkout whose `.workmem` or `.workmem/memory` is a
/// symbolic link is refused on open (nothing is written through it); a
/// memory directory named explicitly may be a link.
#[test]
fn a_symlinked_workmem_or_memory_directory() {
    for linked in [".workmem", ".workmem/memory"] {
        let dir = tempfile::tempdir().expect("temp");
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).expect("outside");
        let link = project.join(linked);
        fs::create_dir_all(link.parent().expect("parent")).expect("project");
        std::os::unix::fs::symlink(&outside, &link).expect("link");
        let expect = Expect { fails: Fails::Corrupt, file: linked, words: &["symbolic link"] };
        check_error(linked, "open", Workspace::open(&project, None).map(drop), &expect);
        assert_eq!(
            fs::read_dir(&outside).expect("list").count(),
            0,
            "{linked}: something was written outside"
        );
        // Named explicitly, a path through the link is the caller's choice.
        let ws = Workspace::open(&project, Some(&link.join("store")))
            .expect("an explicit memory directory");
        ws.remember(NewFact::new("Stored where the user said.")).expect("remember");
        assert!(outside.join("store/daily").is_dir(), "{linked}");
    }
}

/// Issue 12, item 11: temporary files a crashed atomic replace left in the
/// memory directory (`.` + name + `.tmp`) are removed by the next command
/// that replaces a file under the workspace lock; nothing else is touched.
/// An append with an id takes the lock but replaces nothing: it leaves
/// them for the next such writer.
#[test]
fn leftover_temporary_files_are_removed_under_the_lock() {
    for op in ["distill", "resolve"] {
        let h = Hostile::new();
        let memory = h.memory();
        let leftovers =
            [".curated.json.Ab12Cd.tmp", ".MEMORY.md.x9Y8z7.tmp", ".conflicts.json.000000.tmp"];
        for name in leftovers {
            fs::write(memory.join(name), b"half a write").expect("plant");
        }
        let keep = ["notes.tmp", ".keep.tmp.bak"];
        for name in keep {
            fs::write(memory.join(name), b"not ours").expect("plant");
        }
        fs::create_dir(memory.join(".a-directory.tmp")).expect("plant dir");
        let ws = h.tied.open();
        let new = NewFact {
            fact_id: Some(format!("with-an-id-{op}")),
            ..NewFact::new("Appended under the lock.")
        };
        ws.remember(new).expect("remember with an id");
        for name in leftovers {
            assert!(memory.join(name).exists(), "{op}: an append removed {name}");
        }
        match op {
            "distill" => drop(
                ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill").report,
            ),
            _ => drop(ws.resolve(h.tied.decision(&h.case)).expect("resolve")),
        }
        for name in leftovers {
            assert!(!memory.join(name).exists(), "{op}: {name} was not removed");
        }
        for name in keep {
            assert!(memory.join(name).exists(), "{op}: {name} was removed");
        }
        assert!(memory.join(".a-directory.tmp").is_dir(), "{op}: a directory was removed");
        // Reads take no lock and remove nothing.
        fs::write(memory.join(".curated.json.later1.tmp"), b"x").expect("plant");
        ws.facts().expect("facts");
        ws.memory().expect("memory");
        assert!(
            memory.join(".curated.json.later1.tmp").exists(),
            "{op}: a read removed a temporary"
        );
    }
}

/// A distill intent this clone did not write (planted, or arrived through
/// git) is never applied: not one of another version, workspace or shape,
/// nor a well-formed one naming the curated.json in place with a
/// conflicts.json that would close the open case. Reads leave it, verify
/// reports it, writers refuse naming `workmem journal`, whose discard
/// removes it.
#[test]
fn a_distill_intent_this_clone_did_not_write_is_never_applied() {
    let forged = |ws: &Workspace| {
        let curated = fs::read(ws.file("curated.json")).expect("curated");
        let empty_queue = format!(
            "{{\n  \"cases\": [],\n  \"schema_version\": 1,\n  \"workspace_id\": \"{}\"\n}}\n",
            ws.workspace_id()
        );
        serde_json::json!({
            "conflicts": empty_queue,
            "curated_sha256": workmem::internals::canon::sha256_hex(&curated),
            "schema_version": 1,
            "workspace_id": ws.workspace_id(),
        })
        .to_string()
    };
    type Plant = Box<dyn Fn(&Workspace) -> String>;
    let texts: Vec<Plant> = vec![
        Box::new(|ws| {
            format!(
                r#"{{"conflicts": null, "curated_sha256": "00", "schema_version": 2, "workspace_id": "{}"}}"#,
                ws.workspace_id()
            )
        }),
        Box::new(|_| {
            r#"{"conflicts": null, "curated_sha256": "00", "schema_version": 1, "workspace_id": "0123456789abcdef"}"#.to_owned()
        }),
        Box::new(|_| r#"{"schema_version": 1, "extra": true}"#.to_owned()),
        Box::new(forged),
    ];
    for text in texts {
        let h = Hostile::new();
        let ws = h.tied.open();
        let path = h.memory().join(".distill-pending.json");
        let planted = text(&ws);
        fs::write(&path, &planted).expect("plant");
        // Reads leave it; verify reports it as not written here.
        assert!(
            ws.conflicts().expect("conflicts").cases.iter().any(workmem::Case::is_open),
            "{planted}"
        );
        let problems = ws.verify().expect("verify");
        assert!(
            problems.iter().any(|p| p.file.ends_with(".distill-pending.json")
                && p.message.contains("did not write")),
            "{planted}: {problems:?}"
        );
        let before = files(&h.memory());
        let options = workmem::DistillOptions::new().as_of(stamp(AS_OF));
        let expect = Expect {
            fails: Fails::Corrupt,
            file: ".distill-pending.json",
            words: &["did not write", "never applied"],
        };
        check_error(&planted, "distill", ws.distill(&options).map(drop), &expect);
        assert_eq!(files(&h.memory()), before, "{planted}: a refused intent changed the memory");
        let shown = ws.discard_foreign_transactions().expect("discard");
        assert_eq!(shown.distill_intent.map(|i| i.written_here), Some(false), "{planted}");
        assert!(!path.exists(), "{planted}: the intent was not discarded");
        ws.distill(&options).expect(&planted);
        let open = ws.conflicts().expect("conflicts");
        assert!(
            open.cases.iter().any(|c| c.conflict_id == h.case.conflict_id && c.is_open()),
            "{planted}: the open case was closed"
        );
    }
}

/// A FIFO, a directory, a device or a symlink where the append trail (a
/// cache) is expected costs only the slow path: appends with and without an
/// id, an import, distills and `status` all succeed without blocking and
/// see every fact, and nothing is written through the link.
#[test]
fn a_special_file_where_the_append_trail_is_expected() {
    for special in [Some(Special::Fifo), Some(Special::Directory), Some(Special::Device), None] {
        let h = Hostile::new();
        let ws = h.tied.open();
        ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
        let facts_before = ws.facts().expect("facts").len();
        let trail = h.memory().join(".append-trail");
        let outside = h.tied.root.join("outside");
        if let Some(special) = special {
            special.plant(&trail);
        } else {
            fs::write(&outside, b"").expect("outside file");
            let _ = fs::remove_file(&trail);
            std::os::unix::fs::symlink(&outside, &trail).expect("symlink");
        }
        let fifo = matches!(special, Some(Special::Fifo)).then(|| trail.clone());
        let label = format!("{special:?} at .append-trail");
        let ws = ws.clone();
        let counts = within_time(&label, fifo.as_deref(), move || {
            let at = |n: u32| Some(format!("2026-05-01T0{n}:30:00Z"));
            ws.remember(NewFact { recorded_at: at(3), ..NewFact::new("A plain note.") })?;
            ws.remember(NewFact {
                recorded_at: at(4),
                fact_id: Some("with-id".into()),
                ..NewFact::new("A note with an id.")
            })?;
            let items = vec![NewFact { recorded_at: at(5), ..NewFact::new("An imported note.") }];
            ws.import(items, &mut |_| {})?;
            let options = DistillOptions::new().as_of(stamp(AS_OF));
            let first = ws.distill(&options)?.report.scanned;
            let again = ws.distill(&options)?.report.scanned;
            Ok::<_, Error>((first, again, ws.facts()?.len()))
        })
        .unwrap_or_else(|err| panic!("{label}: {err}"));
        assert_eq!(counts.0, counts.1, "{label}");
        assert_eq!(counts.2, facts_before + 3, "{label}");
        if special.is_none() {
            assert!(fs::read(&outside).expect("outside").is_empty(), "{label}: wrote through");
        }
    }
}

/// A FIFO, a directory, a device or a symlink where a cache of the state
/// files' writers is expected (`.hash-checkpoints`, `.conflicts-layout`,
/// `.valid-hashes`) costs only the slow path: a resolution and the distills
/// around it succeed without blocking, the case is closed, and nothing is
/// written through the link.
#[test]
fn a_special_file_where_a_state_files_cache_is_expected() {
    for name in [".hash-checkpoints", ".conflicts-layout", ".valid-hashes"] {
        for special in [Some(Special::Fifo), Some(Special::Directory), Some(Special::Device), None]
        {
            let h = Hostile::new();
            let ws = h.tied.open();
            ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
            let cache = h.memory().join(name);
            let outside = h.tied.root.join("outside");
            let _ = fs::remove_file(&cache);
            if let Some(special) = special {
                special.plant(&cache);
            } else {
                fs::write(&outside, b"").expect("outside file");
                std::os::unix::fs::symlink(&outside, &cache).expect("symlink");
            }
            let fifo = matches!(special, Some(Special::Fifo)).then(|| cache.clone());
            let label = format!("{special:?} at {name}");
            let (ws, decision) = (ws.clone(), h.tied.decision(&h.case));
            let open = within_time(&label, fifo.as_deref(), move || {
                let options = DistillOptions::new().as_of(stamp(AS_OF));
                ws.resolve(decision)?;
                ws.distill(&options)?;
                ws.distill(&options)?;
                Ok::<_, Error>(ws.conflicts()?.cases.iter().filter(|c| c.is_open()).count())
            })
            .unwrap_or_else(|err| panic!("{label}: {err}"));
            assert_eq!(open, 0, "{label}");
            if special.is_none() {
                assert!(fs::read(&outside).expect("outside").is_empty(), "{label}: wrote through");
            }
        }
    }
}
