//! The secret guard (docs/design.md): refuses credentials in anything that
//! would be stored (fact content, evidence, adjudication actor and
//! rationale) before a byte is written.
//!
//! Detection is by the shape of real credentials (provider key prefixes,
//! PEM blocks, JWTs, bearer tokens) and by assignments such as
//! `password=...` or `api_key: "..."` that carry a concrete value. Prose
//! that only mentions tokens or passwords passes. Messages name the kind of
//! secret and the field, never the secret itself.

use std::sync::LazyLock;

use regex::Regex;

use crate::error::{Error, Invalid, Result};

struct Detector {
    kind: &'static str,
    pattern: Regex,
}

fn detector(kind: &'static str, pattern: &str) -> Detector {
    Detector { kind, pattern: Regex::new(pattern).expect("secret patterns are valid") }
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    vec![
        detector("private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        detector(
            "AWS access key",
            r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        ),
        detector(
            "AWS secret access key",
            r#"(?i)\baws_?secret_?access_?key\b\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}\b"#,
        ),
        detector(
            "GitHub token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
        ),
        detector("GitLab token", r"\bgl(?:pat|ptt|dt|rt|cbt|oas)-[A-Za-z0-9_-]{20,}"),
        detector("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        detector(
            "Slack webhook",
            r"hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
        ),
        detector("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        detector("OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        detector("Stripe key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        detector("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
        detector(
            "JSON Web Token",
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        ),
        detector("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*"),
    ]
});

/// `name = value` / `name: value` with a credential-like name, also as the
/// last part of a longer name (`DB_PASSWORD=...`, `stripe-api-key: ...`).
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(?:[a-z0-9]+[_-])*(password|passwd|pwd|passphrase|api[_-]?key|apikey|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?token|auth[_-]?token|private[_-]?key)\b\s*(=|:)\s*("[^"]*"|'[^']*'|[^\s,;]+)"#,
    )
    .expect("assignment pattern is valid")
});

/// Fragments (lowercase) of which every detector needs at least one. Text
/// without any of them cannot match, so the regexes are neither compiled nor
/// run for it: most facts pay a substring scan, not a regex search.
const TRIGGERS: &[&str] = &[
    "-----begin",
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "aipa",
    "anpa",
    "anva",
    "a3t",
    "aws",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "glptt-",
    "gldt-",
    "glrt-",
    "glcbt-",
    "gloas-",
    "xox",
    "hooks.slack",
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "aiza",
    "eyj",
    "bearer",
    "pass",
    "pwd",
    "key",
    "secret",
    "token",
];

fn may_hold_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    TRIGGERS.iter().any(|needle| lower.contains(needle))
}

/// Returns the kind of the first credential found in `text`, if any.
pub fn find(text: &str) -> Option<&'static str> {
    if !may_hold_secret(text) {
        return None;
    }
    for d in DETECTORS.iter() {
        if d.pattern.is_match(text) {
            return Some(d.kind);
        }
    }
    for caps in ASSIGNMENT.captures_iter(text) {
        let separator = &caps[2];
        let raw = &caps[3];
        let quoted = raw.len() >= 2 && (raw.starts_with('"') || raw.starts_with('\''));
        let value = if quoted { &raw[1..raw.len() - 1] } else { raw };
        if is_placeholder(value) {
            continue;
        }
        // `name=value` (and any quoted value) is an assignment; `Name: word`
        // is usually prose, so an unquoted value after ':' must look like a
        // credential: long, with a digit or a symbol.
        let credential_like = value.chars().count() >= 8
            && value.chars().any(|c| c.is_ascii_digit() || "!@#$%^&*_-+=/.~".contains(c))
            && !value.chars().all(|c| c.is_ascii_alphabetic() || c == '-');
        if separator == "=" || quoted || credential_like {
            return Some("password or secret assignment");
        }
    }
    None
}

fn is_placeholder(value: &str) -> bool {
    // Trailing punctuation of the sentence or the code span around it.
    let v = value.trim_end_matches(['.', ')', ']', '}', '`', '\'', '"']);
    if v.chars().count() < 3 {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    let exact = [
        "none",
        "null",
        "nil",
        "empty",
        "redacted",
        "changeme",
        "placeholder",
        "example",
        "xxx",
        "***",
        "...",
        "true",
        "false",
        "required",
        "optional",
        "unset",
        "secret",
        "password",
        "string",
        "str",
        "value",
        "todo",
        "tbd",
    ];
    exact.contains(&lower.as_str())
        || v.chars().all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
        || v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.starts_with('%')
        || lower.starts_with("os.environ")
        || lower.starts_with("env")
        || lower.starts_with("process.env")
        || lower.starts_with("getenv")
        || lower.starts_with("settings.")
        || lower.starts_with("config.")
        || lower.starts_with("self.")
        || lower.contains("vault")
        || lower.starts_with("secrets.")
}

/// Refuses `text` when it holds a credential.
///
/// Errors: [`Error::InvalidInput`] naming `field` and the kind of secret,
/// never the secret.
pub fn check(field: &str, text: &str) -> Result<()> {
    match find(text) {
        None => Ok(()),
        Some(kind) => Err(Error::invalid(field, Invalid::Secret { kind })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind() {
        let samples = [
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE", "private key block"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key block"),
            ("key AKIAIOSFODNN7EXAMPLE here", "AWS access key"),
            ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
            ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "GitHub token"),
            ("glpat-abcdefghij0123456789", "GitLab token"),
            ("xoxb-123456789012-abcdefghij", "Slack token"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "Anthropic API key"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "OpenAI API key"),
            ("sk_live_abcdefghijklmnop0123", "Stripe key"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "JSON Web Token",
            ),
            ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "bearer token"),
            ("db password=hunter2", "password or secret assignment"),
            ("api_key: 'abcd1234'", "password or secret assignment"),
            ("secret: s3cr3t-value-42", "password or secret assignment"),
        ];
        for (text, kind) in samples {
            assert_eq!(find(text), Some(kind), "{text}");
        }
    }

    #[test]
    fn every_detector_needs_a_trigger() {
        // The samples of `finds_each_kind` all pass the prefilter; ordinary
        // text mostly does not.
        assert!(!may_hold_secret("Run the migrations before the integration tests"));
        assert!(may_hold_secret("Bearer abc"));
    }

    #[test]
    fn prose_passes() {
        let prose = [
            "Rotate the database password every 90 days.",
            "Never store API tokens in the repository.",
            "The api_key is read from the environment at startup.",
            "Password: must be at least 12 characters long.",
            "Secret: rotation happens in the vault, not here.",
            "password=$DB_PASSWORD in the compose file",
            "Set api_key=<your key> in .env.example",
            "Use a bearer token for the admin API.",
            "JWTs expire after 15 minutes; refresh them with the session cookie.",
            "Tasks look like sk-1234 in Jira.",
            "The secret_key setting comes from os.environ['SECRET_KEY'].",
        ];
        for text in prose {
            assert_eq!(find(text), None, "{text}");
        }
    }

    #[test]
    fn message_names_kind_not_value() {
        let err = check("content", "use password=hunter2 for staging").expect_err("secret");
        let text = err.to_string();
        assert!(
            text.contains("content") && text.contains("password or secret assignment"),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
    }
}
