//! Acceptance 5: identifiers, normal forms and JSON layouts pinned to
//! values computed independently with Python 3.11.
//!
//! The expected values come from the Python snippets below (re-run them
//! with `python3` to check): `hashlib.sha256`, `str.casefold`,
//! `re.sub(r"\s+", " ", s).strip()` and `json.dumps(..., sort_keys=True,
//! ensure_ascii=False)` with the separators of each layout.

// ---- snippet 1: normal forms, ids and fingerprints ----
// import hashlib, json, re
// def norm(s): return re.sub(r"\s+", " ", s).strip().casefold()
// def h(s, n): return hashlib.sha256(s.encode("utf-8")).hexdigest()[:n]
// def canon(o): return json.dumps(o, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
// NF = ["Stra\u00dfe", "  Stra\u00dfe\tIST  ", "\u4e2d\u6587\u3000\u6d4b\u8bd5", "Deploy \U0001F680  NOW",
//       "a\u001cb\u001dc\u001ed\u001ff", "line1\nline2\r\n\tline3", "HELLO World", "hElLo\u00a0WORLD",
//       "\u0130stanbul", "\ufb01le", "\u03a3\u0391\u03a3", "\u2028x\u2029\u0085y", "\u3000\t\n", ""]
// for s in NF: print("NF", repr(s), repr(norm(s)), norm(s).encode("unicode_escape"))
// print("unkeyed decision Strasse", h("decision\0" + norm("Stra\u00dfe"), 16))
// print("unkeyed decision STRASSE", h("decision\0" + norm("  STRASSE "), 16))
// print("unkeyed convention cjk", h("convention\0" + norm("\u4e2d\u6587\u3000\u6d4b\u8bd5"), 16))
// print("unkeyed pitfall emoji", h("pitfall\0" + norm("Deploy \U0001F680  NOW"), 16))
// print("unkeyed decision ws-variant", h("decision\0" + norm("Use\tWAL\u001cmode\n"), 16))
// print("keyed", h("runtime.python-version\0revision:2\0decision\0" + norm("Use Python 3.12."), 16))
// print("keyed rev1 strasse", h("db.engine\0revision:1\0decision\0" + norm("STRASSE"), 16))
// print("keyed rev10", h("db.engine\0revision:10\0pitfall\0" + norm("\U0001F680 Rocket"), 16))
// print("cand", "candidate-" + h("db.engine\0decision\0" + norm("\u4e2d\u6587"), 16))
// print("cand2", "candidate-" + h("db.engine\0decision\0" + norm("Use  POSTGRES."), 16))
// ws = "0123456789abcdef"
// print("txn", "resolution-" + h(ws + "\0" + "evt-1", 24))
// print("wsid", h("/home/user/projects/\u00e9t\u00e9", 16))
// print("wsid2", h("/tmp/proj", 16))
// cands = [
//  {"candidate_id": "candidate-" + h("db.engine\0decision\0" + norm("Use Postgres."), 16), "kind": "decision",
//   "content": "Use Postgres.", "evidence_ids": ["f1", "f2"], "occurrences": 2, "maximum_importance": 4,
//   "first_seen": "2026-01-10T00:00:00Z", "last_seen": "2026-01-12T08:30:00.250000Z", "incumbent": False},
//  {"candidate_id": "candidate-" + h("db.engine\0decision\0" + norm("Nutze Stra\u00dfe \u4e2d\u6587 \U0001F680"), 16), "kind": "decision",
//   "content": "Nutze Stra\u00dfe \u4e2d\u6587 \U0001F680", "evidence_ids": ["f0"], "occurrences": 1, "maximum_importance": 1,
//   "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-01T00:00:00Z", "incumbent": True},
// ]
// cands.sort(key=lambda c: c["candidate_id"])
// for c in cands: print("candid", c["candidate_id"])
// obs = ["f0", "f1", "f2", "f9"]
// fp = hashlib.sha256(canon({"memory_key": "db.engine", "active_entry_key": "00112233aabbccdd", "candidates": cands, "observed_fact_ids": obs}).encode()).hexdigest()
// print("fp", fp)
// print("cid", "conflict-" + h(ws + "\0db.engine\0" + fp, 16))
// fp2 = hashlib.sha256(canon({"memory_key": "db.engine", "active_entry_key": None, "candidates": cands, "observed_fact_ids": obs}).encode()).hexdigest()
// print("fp-null", fp2)
// print("canon sample", canon({"b": [1, "x"], "a": {"\u00e9": "\u0001\n\u2028"}, "\U0001F680": None, "Z": True}))

// ---- snippet 2: JSONL fact line and curated.json layout ----
// import hashlib, json, re
// def norm(s): return re.sub(r"\s+", " ", s).strip().casefold()
// def clean(s): return re.sub(r"\s+", " ", s).strip()
// def h(s, n): return hashlib.sha256(s.encode("utf-8")).hexdigest()[:n]
// fact = {"content": clean("Nutze  Stra\u00dfe \u4e2d\u6587 \U0001F680 \"q\" \\ end"),
//         "evidence": {"file": "src/\u00e9.rs", "note": "a\u0001b\u2028c\td", "url": "https://x/y?z=1"},
//         "fact_id": "f-1", "importance": 4, "kind": "pitfall", "memory_key": "storage.journal",
//         "recorded_at": "2026-01-02T02:04:05.500000Z", "schema_version": 2, "source": "user",
//         "workspace_id": "0123456789abcdef"}
// print(repr(json.dumps(fact, ensure_ascii=False, sort_keys=True) + "\n"))
// WS = "@WORKSPACE@"
// def unkeyed(kind, content, ids, first, last):
//     return {"key": h(kind + "\0" + norm(content), 16), "kind": kind, "content": content, "first_seen": first,
//             "last_seen": last, "evidence_ids": sorted(ids), "occurrences": len(ids), "memory_key": None,
//             "revision": 1, "status": "active", "supersedes": None, "superseded_by": None}
// def keyed(mk, rev, kind, content, ids, first, last):
//     return {"key": h(mk + "\0revision:" + str(rev) + "\0" + kind + "\0" + norm(content), 16), "kind": kind,
//             "content": content, "first_seen": first, "last_seen": last, "evidence_ids": sorted(ids),
//             "occurrences": len(ids), "memory_key": mk, "revision": rev, "status": "active",
//             "supersedes": None, "superseded_by": None}
// e1 = unkeyed("decision", "Nutze Stra\u00dfe.", ["u1"], "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
// e2 = unkeyed("convention", "Run cargo fmt.", ["u2", "u3"], "2026-01-02T10:00:00Z", "2026-01-03T10:00:00.123456Z")
// r1 = keyed("tooling.pm", 1, "decision", "Use npm.", ["k1"], "2026-01-04T00:00:00Z", "2026-01-04T00:00:00Z")
// r2 = keyed("tooling.pm", 2, "decision", "Use pnpm \U0001F680.", ["k2", "k3"], "2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z")
// r1["status"] = "superseded"; r1["superseded_by"] = r2["key"]; r2["supersedes"] = r1["key"]
// entries = sorted([e1, e2, r1, r2], key=lambda e: (e["kind"], e["memory_key"] or "", e["revision"], e["key"]))
// payload = {"schema_version": 2, "workspace_id": WS, "entries": entries}
// text = json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
// print(text.encode("ascii", "backslashreplace").decode())

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use workmem::internals::conflict_queue::{self, Candidate};
use workmem::{Kind, NewFact, internals::canon};

use crate::common::{Project, stamp};

const WS: &str = "0123456789abcdef";

#[test]
fn normal_form_matches_python_casefold_and_whitespace() {
    let cases: [(&str, &str); 14] = [
        ("Stra\u{df}e", "strasse"),
        ("  Stra\u{df}e\tIST  ", "strasse ist"),
        ("\u{4e2d}\u{6587}\u{3000}\u{6d4b}\u{8bd5}", "\u{4e2d}\u{6587} \u{6d4b}\u{8bd5}"),
        ("Deploy \u{1f680}  NOW", "deploy \u{1f680} now"),
        ("a\u{1c}b\u{1d}c\u{1e}d\u{1f}f", "a b c d f"),
        ("line1\nline2\r\n\tline3", "line1 line2 line3"),
        ("HELLO World", "hello world"),
        ("hElLo\u{a0}WORLD", "hello world"),
        ("\u{130}stanbul", "i\u{307}stanbul"),
        ("\u{fb01}le", "file"),
        ("\u{3a3}\u{391}\u{3a3}", "\u{3c3}\u{3b1}\u{3c3}"),
        ("\u{2028}x\u{2029}\u{85}y", "x y"),
        ("\u{3000}\t\n", ""),
        ("", ""),
    ];
    for (input, expected) in cases {
        assert_eq!(canon::normal_form(input), expected, "normal_form({input:?})");
    }
}

#[test]
fn entry_keys_are_pinned() {
    assert_eq!(canon::unkeyed_entry_key("decision", "Stra\u{df}e"), "3d011904a8a5b86e");
    // Case and whitespace variants share the key.
    assert_eq!(canon::unkeyed_entry_key("decision", "  STRASSE "), "3d011904a8a5b86e");
    assert_eq!(
        canon::unkeyed_entry_key("convention", "\u{4e2d}\u{6587}\u{3000}\u{6d4b}\u{8bd5}"),
        "d32fe209f0bc50e8"
    );
    assert_eq!(canon::unkeyed_entry_key("pitfall", "Deploy \u{1f680}  NOW"), "7ed98055c980a451");
    assert_eq!(canon::unkeyed_entry_key("decision", "Use\tWAL\u{1c}mode\n"), "7b5af006ab05b3b1");
    // The kind is part of the key.
    assert_ne!(canon::unkeyed_entry_key("pitfall", "Stra\u{df}e"), "3d011904a8a5b86e");
    assert_eq!(
        canon::keyed_entry_key("runtime.python-version", 2, "decision", "Use Python 3.12."),
        "09da39186bcdd584"
    );
    assert_eq!(canon::keyed_entry_key("db.engine", 1, "decision", "STRASSE"), "9d7f32b54a642ef4");
    assert_eq!(
        canon::keyed_entry_key("db.engine", 1, "decision", "stra\u{df}e"),
        "9d7f32b54a642ef4"
    );
    assert_eq!(
        canon::keyed_entry_key("db.engine", 10, "pitfall", "\u{1f680} Rocket"),
        "e9add4301c3c9914"
    );
}

#[test]
fn candidate_conflict_transaction_and_workspace_ids_are_pinned() {
    assert_eq!(
        canon::candidate_id("db.engine", "decision", "\u{4e2d}\u{6587}"),
        "candidate-d0fa93c876f15c73"
    );
    assert_eq!(
        canon::candidate_id("db.engine", "decision", "Use  POSTGRES."),
        "candidate-be86aecb3654ef75"
    );
    assert_eq!(
        canon::candidate_id("db.engine", "decision", "use postgres.\n"),
        "candidate-be86aecb3654ef75"
    );
    assert_eq!(
        canon::conflict_id(
            WS,
            "db.engine",
            "5430367b87854760e9cb745ba96dcfd773ba4315f6f44fd3074e11291628ba13"
        ),
        "conflict-6717767476cb55a4"
    );
    assert_eq!(canon::transaction_id(WS, "evt-1"), "resolution-00e1457987bc10c1c10eaa6c");
    assert_eq!(canon::workspace_id("/home/user/projects/\u{e9}t\u{e9}"), "8a8b078b2301948a");
    assert_eq!(canon::workspace_id("/tmp/proj"), "29ccbcbce9441d72");
}

fn pinned_candidates() -> Vec<Candidate> {
    let challenger = Candidate {
        candidate_id: canon::candidate_id("db.engine", "decision", "Use Postgres."),
        kind: Kind::Decision,
        content: "Use Postgres.".to_owned(),
        evidence_ids: ["f1", "f2"].into_iter().collect(),
        occurrences: 2,
        maximum_importance: 4,
        first_seen: stamp("2026-01-10T00:00:00Z"),
        last_seen: stamp("2026-01-12T08:30:00.250000Z"),
        incumbent: false,
        released_evidence_ids: Default::default(),
        retracted_evidence_ids: Default::default(),
    };
    let content = "Nutze Stra\u{df}e \u{4e2d}\u{6587} \u{1f680}";
    let incumbent = Candidate {
        candidate_id: canon::candidate_id("db.engine", "decision", content),
        kind: Kind::Decision,
        content: content.to_owned(),
        evidence_ids: ["f0"].into_iter().collect(),
        occurrences: 1,
        maximum_importance: 1,
        first_seen: stamp("2026-01-01T00:00:00Z"),
        last_seen: stamp("2026-01-01T00:00:00Z"),
        incumbent: true,
        released_evidence_ids: Default::default(),
        retracted_evidence_ids: Default::default(),
    };
    assert_eq!(challenger.candidate_id, "candidate-be86aecb3654ef75");
    assert_eq!(incumbent.candidate_id, "candidate-e3e7be5b78bc17ba");
    vec![challenger, incumbent]
}

#[test]
fn fingerprint_is_pinned() {
    let candidates = pinned_candidates();
    let observed: workmem::IdList = ["f0", "f1", "f2", "f9"].into_iter().collect();
    let fp =
        conflict_queue::fingerprint("db.engine", Some("00112233aabbccdd"), &candidates, &observed);
    assert_eq!(fp, "5430367b87854760e9cb745ba96dcfd773ba4315f6f44fd3074e11291628ba13");
    assert_eq!(canon::conflict_id(WS, "db.engine", &fp), "conflict-6717767476cb55a4");
    let fp_null = conflict_queue::fingerprint("db.engine", None, &candidates, &observed);
    assert_eq!(fp_null, "4a703ae8a014d2f0a8ee58e14b29058f699cf9a95fc578f23822f34e540b4d59");
}

/// A correction that moves a candidate's fact to its retracted evidence
/// leaves the case's fingerprint (and so its conflict id) as detected.
#[test]
fn a_corrected_candidate_keeps_the_fingerprint_it_was_detected_with() {
    let mut candidates = pinned_candidates();
    let observed: workmem::IdList = ["f0", "f1", "f2", "f9"].into_iter().collect();
    candidates[0].evidence_ids = ["f2"].into_iter().collect();
    candidates[0].occurrences = 1;
    candidates[0].retracted_evidence_ids = ["f1"].into_iter().collect();
    let fp =
        conflict_queue::fingerprint("db.engine", Some("00112233aabbccdd"), &candidates, &observed);
    assert_eq!(fp, "5430367b87854760e9cb745ba96dcfd773ba4315f6f44fd3074e11291628ba13");
    // Dropped instead of moved, the observation differs.
    candidates[0].retracted_evidence_ids = workmem::IdList::default();
    let dropped =
        conflict_queue::fingerprint("db.engine", Some("00112233aabbccdd"), &candidates, &observed);
    assert_ne!(dropped, fp);
}

#[test]
fn canonical_json_is_pinned() {
    let value =
        json!({"b": [1, "x"], "a": {"\u{e9}": "\u{1}\n\u{2028}"}, "\u{1f680}": null, "Z": true});
    assert_eq!(
        canon::canonical_json(&value),
        "{\"Z\":true,\"a\":{\"\u{e9}\":\"\\u0001\\n\u{2028}\"},\"b\":[1,\"x\"],\"\u{1f680}\":null}"
    );
}

#[test]
fn jsonl_fact_line_layout_is_pinned() {
    let mut evidence = BTreeMap::new();
    evidence.insert("file".to_owned(), "src/\u{e9}.rs".to_owned());
    // A whitespace control (U+001F) still needs a \u escape; other controls
    // are refused in stored text.
    evidence.insert("note".to_owned(), "a\u{1f}b\u{2028}c\td".to_owned());
    evidence.insert("url".to_owned(), "https://x/y?z=1".to_owned());
    let new = NewFact {
        content: "Nutze  Stra\u{df}e \u{4e2d}\u{6587} \u{1f680} \"q\" \\ end".to_owned(),
        kind: Some("pitfall".to_owned()),
        importance: Some(4),
        memory_key: Some("  Storage.Journal ".to_owned()),
        source: Some("user".to_owned()),
        evidence,
        recorded_at: Some("2026-01-02T03:04:05.5+01:00".to_owned()),
        fact_id: Some("f-1".to_owned()),
    };
    let fact = workmem::internals::fact_from_new(
        new,
        WS,
        stamp("2026-03-01T00:00:00Z"),
        || unreachable!(),
    )
    .unwrap();
    assert_eq!(fact.to_line(), EXPECTED_LINE);
    assert_eq!(
        workmem::internals::parse_fact_line(EXPECTED_LINE.trim_end().as_bytes()).unwrap(),
        fact
    );

    // Through a workspace the same bytes land in the daily file.
    let p = Project::new();
    let new = serde_json::from_value::<NewFact>(json!({
        "content": "Nutze  Stra\u{df}e \u{4e2d}\u{6587} \u{1f680} \"q\" \\ end",
        "kind": "pitfall", "importance": 4, "memory_key": "Storage.Journal", "source": "user",
        "evidence": {"file": "src/\u{e9}.rs", "note": "a\u{1f}b\u{2028}c\td", "url": "https://x/y?z=1"},
        "recorded_at": "2026-01-02T02:04:05.500000Z", "fact_id": "f-1",
    }))
    .unwrap();
    p.ws.remember(new).unwrap();
    let written = std::fs::read_to_string(p.day_file("2026-01-02")).unwrap();
    assert_eq!(written, EXPECTED_LINE.replace(WS, p.ws.workspace_id()));
}

const EXPECTED_LINE: &str = "{\"content\": \"Nutze Stra\u{df}e \u{4e2d}\u{6587} \u{1f680} \\\"q\\\" \\\\ end\", \"evidence\": {\"file\": \"src/\u{e9}.rs\", \"note\": \"a\\u001fb\u{2028}c\\td\", \"url\": \"https://x/y?z=1\"}, \"fact_id\": \"f-1\", \"importance\": 4, \"kind\": \"pitfall\", \"memory_key\": \"storage.journal\", \"recorded_at\": \"2026-01-02T02:04:05.500000Z\", \"schema_version\": 2, \"source\": \"user\", \"workspace_id\": \"0123456789abcdef\"}\n";

#[test]
fn curated_json_layout_is_pinned() {
    let p = Project::new();
    p.add("u1", "decision", 5, None, "Nutze Stra\u{df}e.", "2026-01-01T00:00:00Z");
    p.add("u2", "convention", 3, None, "Run  cargo fmt.", "2026-01-02T10:00:00Z");
    p.add("u3", "convention", 3, None, "run cargo FMT.", "2026-01-03T11:00:00.123456+01:00");
    p.add("k1", "decision", 5, Some("tooling.pm"), "Use npm.", "2026-01-04T00:00:00Z");
    p.add("k2", "decision", 4, Some("tooling.pm"), "use PNPM \u{1f680}.", "2026-01-05T00:00:00Z");
    p.add("k3", "decision", 4, Some("tooling.pm"), "Use pnpm \u{1f680}.", "2026-01-06T00:00:00Z");
    p.distill();
    let written = std::fs::read_to_string(p.file("curated.json")).unwrap();
    assert_eq!(written, EXPECTED_CURATED.replace("@WORKSPACE@", p.ws.workspace_id()));
    // The encoder alone gives the same bytes.
    let state = p.ws.curated().unwrap();
    let encoded = state.encode(Path::new("curated.json"), WS).unwrap();
    assert_eq!(String::from_utf8(encoded).unwrap(), EXPECTED_CURATED.replace("@WORKSPACE@", WS));
}

const EXPECTED_CURATED: &str = concat!(
    "{\n",
    "  \"entries\": [\n",
    "    {\n",
    "      \"content\": \"Run cargo fmt.\",\n",
    "      \"evidence_ids\": [\n",
    "        \"u2\",\n",
    "        \"u3\"\n",
    "      ],\n",
    "      \"first_seen\": \"2026-01-02T10:00:00Z\",\n",
    "      \"key\": \"cb00def28334ffa1\",\n",
    "      \"kind\": \"convention\",\n",
    "      \"last_seen\": \"2026-01-03T10:00:00.123456Z\",\n",
    "      \"memory_key\": null,\n",
    "      \"occurrences\": 2,\n",
    "      \"revision\": 1,\n",
    "      \"status\": \"active\",\n",
    "      \"superseded_by\": null,\n",
    "      \"supersedes\": null\n",
    "    },\n",
    "    {\n",
    "      \"content\": \"Nutze Stra\u{df}e.\",\n",
    "      \"evidence_ids\": [\n",
    "        \"u1\"\n",
    "      ],\n",
    "      \"first_seen\": \"2026-01-01T00:00:00Z\",\n",
    "      \"key\": \"31e7c7271faa812f\",\n",
    "      \"kind\": \"decision\",\n",
    "      \"last_seen\": \"2026-01-01T00:00:00Z\",\n",
    "      \"memory_key\": null,\n",
    "      \"occurrences\": 1,\n",
    "      \"revision\": 1,\n",
    "      \"status\": \"active\",\n",
    "      \"superseded_by\": null,\n",
    "      \"supersedes\": null\n",
    "    },\n",
    "    {\n",
    "      \"content\": \"Use npm.\",\n",
    "      \"evidence_ids\": [\n",
    "        \"k1\"\n",
    "      ],\n",
    "      \"first_seen\": \"2026-01-04T00:00:00Z\",\n",
    "      \"key\": \"19c2a6830c8f39fe\",\n",
    "      \"kind\": \"decision\",\n",
    "      \"last_seen\": \"2026-01-04T00:00:00Z\",\n",
    "      \"memory_key\": \"tooling.pm\",\n",
    "      \"occurrences\": 1,\n",
    "      \"revision\": 1,\n",
    "      \"status\": \"superseded\",\n",
    "      \"superseded_by\": \"308a61aab37fae7b\",\n",
    "      \"supersedes\": null\n",
    "    },\n",
    "    {\n",
    "      \"content\": \"Use pnpm \u{1f680}.\",\n",
    "      \"evidence_ids\": [\n",
    "        \"k2\",\n",
    "        \"k3\"\n",
    "      ],\n",
    "      \"first_seen\": \"2026-01-05T00:00:00Z\",\n",
    "      \"key\": \"308a61aab37fae7b\",\n",
    "      \"kind\": \"decision\",\n",
    "      \"last_seen\": \"2026-01-06T00:00:00Z\",\n",
    "      \"memory_key\": \"tooling.pm\",\n",
    "      \"occurrences\": 2,\n",
    "      \"revision\": 2,\n",
    "      \"status\": \"active\",\n",
    "      \"superseded_by\": null,\n",
    "      \"supersedes\": \"19c2a6830c8f39fe\"\n",
    "    }\n",
    "  ],\n",
    "  \"schema_version\": 2,\n",
    "  \"workspace_id\": \"@WORKSPACE@\"\n",
    "}\n",
);
