//! Credentials recognised by their place in a text rather than their
//! shape: a literal assigned to a secret-named variable in any common
//! syntax, a password in a URL, an `Authorization` header, a password on a
//! command line or in a `.netrc`, a GCP service-account or private JSON Web
//! Key document.
//!
//! Assignments are found from the names: every occurrence of a stem
//! (`pass`, `pwd`, `secret`, `token`, `key`, `credential`) is widened to the
//! whole name around it, the name is classified, and what follows it is
//! read as a separator and a value. The value is then judged literal or
//! reference ([`Value`], [`judge`]).
//!
//! All offsets are byte offsets into the normalized text; `lower` is its
//! ASCII lowercase copy, so offsets are shared.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::secret::{
    ASSIGNMENT, AWS_SECRET, BASIC, BEARER, COMMAND_LINE_PASSWORD, GCP_SERVICE_ACCOUNT, PRIVATE_JWK,
    URL_PASSWORD, shape,
};

/// The words that tell which detectors can apply, found in one pass over
/// the lowercase text: stems of secret names, header words, `://`, the
/// commands that take passwords, and the words of `.netrc`, SQL, .NET
/// settings and JSON Web Keys. They are found as a regex alternation of
/// them would find them, leftmost-first: where several begin at one place
/// the first listed wins, and the search goes on after it
/// ([`cue_matches`]).
const CUES: &[&str] = &[
    "pass",
    "pwd",
    "pswd",
    "secret",
    "token",
    "credential",
    "key",
    "authorization",
    "bearer",
    "basic",
    "://",
    "mysql",
    "mariadb",
    "sshpass",
    "redis-cli",
    "docker",
    "curl",
    "machine",
    "login",
    "identified",
    "value",
    "\"kty\"",
];

// One bit per cue word in the tables below.
const _: () = assert!(CUES.len() <= 32);

/// For each byte, the cue words whose byte `at` it is, a bit each (every
/// cue word has three bytes or more).
const fn cue_bytes(at: usize) -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut word = 0;
    while word < CUES.len() {
        table[CUES[word].as_bytes()[at] as usize] |= 1 << word;
        word += 1;
    }
    table
}

/// The cue words by their first and second bytes: built by the compiler,
/// so that a process pays nothing before its first search (every
/// `remember` screens its fields; an automaton of these words cost 66 us
/// to build, and the regex engine's search for them more instructions than
/// the rest of the append).
const CUE_FIRST: [u32; 256] = cue_bytes(0);
const CUE_SECOND: [u32; 256] = cue_bytes(1);

/// The places of the cue words in `lower`, leftmost-first and without
/// overlaps, as `(start, end)`.
fn cue_matches(lower: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = lower.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at + 1 < bytes.len() {
            let mut maybe =
                CUE_FIRST[usize::from(bytes[at])] & CUE_SECOND[usize::from(bytes[at + 1])];
            while maybe != 0 {
                let word = CUES[maybe.trailing_zeros() as usize];
                maybe &= maybe - 1;
                if bytes[at..].starts_with(word.as_bytes()) {
                    let start = at;
                    at += word.len();
                    return Some((start, at));
                }
            }
            at += 1;
        }
        None
    })
}

/// What one pass over a text for [`CUES`] found.
#[derive(Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // one flag per family of detectors
pub(super) struct Cues {
    /// Stems of secret names and header words, with their offsets.
    hits: Vec<(usize, usize)>,
    /// `key` occurs (private keys, key files).
    key: bool,
    /// `://` occurs.
    url: bool,
    /// A command that takes a password occurs.
    command: bool,
    /// `machine` or `login` occurs (`.netrc`).
    netrc: bool,
    /// `identified` occurs (SQL).
    identified: bool,
    /// `value` occurs (.NET settings).
    value: bool,
    /// `"kty"` occurs (a JSON Web Key).
    jwk: bool,
}

impl Cues {
    /// Returns the cues of `lower`, the lowercase text.
    pub(super) fn scan(lower: &str) -> Cues {
        let mut cues = Cues::default();
        for (start, end) in cue_matches(lower) {
            match &lower[start..end] {
                "://" => cues.url = true,
                "mysql" | "mariadb" | "sshpass" | "redis-cli" | "docker" | "curl" => {
                    cues.command = true;
                }
                "machine" | "login" => cues.netrc = true,
                "identified" => cues.identified = true,
                "value" => cues.value = true,
                "\"kty\"" => cues.jwk = true,
                word => {
                    cues.key |= word == "key";
                    cues.hits.push((start, end));
                }
            }
        }
        cues
    }

    /// Returns whether a stem of a secret name occurs.
    fn key_or_name(&self) -> bool {
        !self.hits.is_empty()
    }

    /// Returns whether no detector of this module can apply.
    pub(super) fn is_empty(&self) -> bool {
        self.hits.is_empty()
            && !(self.url
                || self.command
                || self.netrc
                || self.identified
                || self.value
                || self.jwk)
    }
}

/// `scheme://user:password@host`.
static URL_USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"[A-Za-z][A-Za-z0-9+.-]{0,30}://([^\s:/?#@"'<>`]*):([^\s/?#"'<>`]+)@[A-Za-z0-9\[_]"#,
    )
    .expect("URL pattern is valid")
});

/// A `.netrc` entry's password, after `machine`.
static NETRC_MACHINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\s)machine\s+\S+\s+(?:login\s+\S+\s+)?(?:password|passwd)\s+(\S+)")
        .expect("netrc pattern is valid")
});

/// A `.netrc` entry's password after `login` alone (or `default login`),
/// which prose can imitate: the value must look like a password.
static NETRC_LOGIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\s)login\s+\S+\s+(?:password|passwd)\s+(\S+)")
        .expect("netrc pattern is valid")
});

/// SQL: `CREATE USER ... WITH PASSWORD '...'`, `IDENTIFIED BY '...'`.
static SQL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:with\s+(?:encrypted\s+)?password|identified\s+by|password\s*\(\s*)\s*'([^'\n]*)'")
        .expect("SQL pattern is valid")
});

/// .NET settings: `<add key="ApiKey" value="..."/>`.
static KEY_VALUE_ATTRIBUTES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:key|name)\s*=\s*"([^"]{1,100})"\s+value\s*=\s*"([^"]*)""#)
        .expect("attribute pattern is valid")
});

/// A GCP service-account key's secret members.
static GCP_PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""private_key(?:_id)?"\s*:\s*"([^"]{8,})""#).expect("GCP pattern is valid")
});

/// A GCP key id (40 hex digits) under its own name, with or without the
/// rest of the document.
static GCP_KEY_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""private_key_id"\s*:\s*"[0-9a-f]{40}""#).expect("GCP pattern is valid")
});

/// The private members of a JSON Web Key.
static JWK_PRIVATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(?:d|p|q|dp|dq|qi|k)"\s*:\s*"[A-Za-z0-9_-]{16,}""#)
        .expect("JWK pattern is valid")
});

/// Returns the kind of a credential document: a GCP service-account key or
/// a private JSON Web Key.
pub(super) fn find_structured(text: &str, lower: &str, cues: &Cues) -> Option<&'static str> {
    if cues.key && lower.contains("private_key") {
        if GCP_KEY_ID.is_match(text) {
            return Some(GCP_SERVICE_ACCOUNT);
        }
        if (lower.contains("service_account") || lower.contains("gserviceaccount"))
            && GCP_PRIVATE_KEY
                .captures_iter(text)
                .any(|c| !shape::placeholder(&c[1]) && !shape::template_reference(&c[1]))
        {
            return Some(GCP_SERVICE_ACCOUNT);
        }
    }
    if cues.jwk && JWK_PRIVATE.is_match(text) {
        return Some(PRIVATE_JWK);
    }
    None
}

/// Returns the kind of the first credential found by its place in `text`.
pub(super) fn find(text: &str, lower: &str, cues: &Cues) -> Option<&'static str> {
    if cues.url && url_password(text) {
        return Some(URL_PASSWORD);
    }
    if cues.command
        && let Some(kind) = command_line(text, lower)
    {
        return Some(kind);
    }
    let mut done = 0;
    for &(start, end) in &cues.hits {
        let kind = match &lower[start..end] {
            "authorization" => authorization_header(text, end),
            "bearer" => bearer(text, end),
            "basic" => basic(text, end),
            _ => None,
        };
        if kind.is_some() {
            return kind;
        }
        if start < done {
            continue;
        }
        let (found, name_end) = assignment_at(text, lower, start, end);
        if found.is_some() {
            return found;
        }
        if in_prose(text, lower, start, end) {
            return Some(ASSIGNMENT);
        }
        done = name_end;
    }
    // Each pattern below is searched (and compiled, once per process: 0.3
    // to 1.4 ms each) only when the text holds a necessary part of it.
    if cues.netrc
        && may_hold_netrc_machine(lower)
        && NETRC_MACHINE.captures_iter(text).any(|c| netrc_literal(&c[1]))
    {
        return Some(ASSIGNMENT);
    }
    if cues.netrc
        && may_hold_netrc_login(lower)
        && NETRC_LOGIN.captures_iter(text).any(|c| {
            netrc_literal(&c[1]) && (shape::credential_like(&c[1]) || has_digit_or_symbol(&c[1]))
        })
    {
        return Some(ASSIGNMENT);
    }
    if (cues.identified || (cues.key_or_name() && lower.contains("password")))
        && may_hold_sql_password(lower)
        && SQL_PASSWORD.captures_iter(text).any(|c| judge_quoted(Class::Password, &c[1]))
    {
        return Some(ASSIGNMENT);
    }
    if cues.value && may_hold_key_value(lower) {
        for c in KEY_VALUE_ATTRIBUTES.captures_iter(text) {
            if let Some(found) = judge_pair(&c[1], &c[2]) {
                return Some(found);
            }
        }
    }
    None
}

/// Whether `then` occurs in `lower` (a normalized text, ASCII-lowercased)
/// after the first occurrence of any of `words`: what a case-insensitive
/// pattern that matches one of `words` and later `then` needs. (In a
/// normalized text no character but an ASCII letter folds to a letter of
/// these words: NFKC turns the long s and the Kelvin sign into ASCII.)
fn later(lower: &str, words: &[&str], then: &str) -> bool {
    words
        .iter()
        .filter_map(|word| lower.find(word))
        .min()
        .is_some_and(|at| lower[at..].contains(then))
}

/// What [`NETRC_MACHINE`] needs: `machine`, later `passw`.
fn may_hold_netrc_machine(lower: &str) -> bool {
    later(lower, &["machine"], "passw")
}

/// What [`NETRC_LOGIN`] needs: `login`, later `passw`.
fn may_hold_netrc_login(lower: &str) -> bool {
    later(lower, &["login"], "passw")
}

/// What [`SQL_PASSWORD`] needs: `password` or `identified`, later a `'`.
fn may_hold_sql_password(lower: &str) -> bool {
    later(lower, &["password", "identified"], "'")
}

/// What [`KEY_VALUE_ATTRIBUTES`] needs: `key` or `name`, later a `"`.
fn may_hold_key_value(lower: &str) -> bool {
    later(lower, &["key", "name"], "\"")
}

/// Whether some `://` in `text` is followed, before any whitespace or any
/// of `/ ? # " ' < > \``, by an `@`: what [`URL_USERINFO`] needs (its
/// user part and password hold none of those, and the user part no `@`).
fn may_hold_userinfo(text: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), b"://").any(|at| {
        let stop = |c: char| {
            c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`' | '@')
        };
        text[at + 3..].chars().find(|&c| stop(c)) == Some('@')
    })
}

/// Returns the kind of credential `value` is when stored under the name
/// `key`, judged as a quoted value.
pub(super) fn judge_pair(key: &str, value: &str) -> Option<&'static str> {
    let name = key.trim().trim_start_matches('-');
    let class = classify(name)?;
    let value = Value::Quoted(value.trim());
    let context = Context { class: class.0, ..Context::default() };
    judge(&context, &value).then_some(if class.1 { AWS_SECRET } else { ASSIGNMENT })
}

// ---------------------------------------------------------------------------
// Names

/// How strongly a name says that its value is a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Class {
    /// It ends in password, passwd, pwd, pass, passphrase, passcode: any
    /// literal is a password, even a short word.
    Password,
    /// It ends in secret, token, api_key, access_key, private_key,
    /// credential(s), ...: a credential-looking literal is one.
    #[default]
    Secret,
    /// It mentions a secret elsewhere (`secret_key_base`, `token_value`):
    /// only a random-looking literal counts.
    Weak,
}

const PASSWORD_ENDS: &[&str] = &["password", "passwd", "passphrase", "passcode", "pwd", "pswd"];
const SECRET_ENDS: &[&str] = &[
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "credential",
    "credentials",
    "encryptionkey",
    "signingkey",
    "masterkey",
    "hmackey",
    "authkey",
    "clientkey",
    "appkey",
    "licensekey",
];
const WEAK_PARTS: &[&str] =
    &["password", "passwd", "secret", "token", "apikey", "accesskey", "privatekey", "credential"];
/// Words ending in `pass` that are not passwords.
const PASS_WORDS: &[&str] = &[
    "bypass",
    "compass",
    "surpass",
    "overpass",
    "underpass",
    "trespass",
    "encompass",
    "multipass",
    "firstpass",
    "secondpass",
    "singlepass",
    "onepass",
    "twopass",
];
/// Last words of a name that make it about a secret, not the secret:
/// `password_hash`, `token_url`, `secret_name`, `api_key_id`.
const META_ENDS: &[&str] = &[
    "hash",
    "hashed",
    "digest",
    "sha",
    "md5",
    "checksum",
    "fingerprint",
    "id",
    "ids",
    "arn",
    "name",
    "names",
    "type",
    "kind",
    "url",
    "uri",
    "endpoint",
    "path",
    "file",
    "dir",
    "length",
    "len",
    "count",
    "size",
    "ttl",
    "expiry",
    "expires",
    "expire",
    "expiration",
    "timeout",
    "version",
    "header",
    "prefix",
    "suffix",
    "field",
    "policy",
    "rotation",
    "store",
    "manager",
    "provider",
    "source",
    "ref",
    "env",
    "var",
    "format",
    "scope",
    "scopes",
    "regex",
    "pattern",
    "min",
    "max",
    "limit",
    "required",
    "enabled",
    "mode",
    "label",
    "help",
    "hint",
    "error",
    "errors",
    "reset",
    "strength",
    "used",
    "usage",
    "cache",
    "helper",
    "command",
    "cmd",
];

/// Returns the class of a variable name, and whether it names an AWS
/// secret access key; `None` when the name is not secret-named.
fn classify(name: &str) -> Option<(Class, bool)> {
    let joined: String = name
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect();
    if joined.is_empty() {
        return None;
    }
    let aws = joined.contains("aws")
        && (joined.ends_with("secretaccesskey") || joined.ends_with("secretkey"));
    let last = last_word(name);
    if PASSWORD_ENDS.iter().any(|end| joined.ends_with(end)) {
        return Some((Class::Password, aws));
    }
    if joined.ends_with("pass") && (last == "pass" || !PASS_WORDS.contains(&last.as_str())) {
        return Some((Class::Password, aws));
    }
    if SECRET_ENDS.iter().any(|end| joined.ends_with(end)) {
        return Some((Class::Secret, aws));
    }
    if META_ENDS.contains(&last.as_str()) {
        return None;
    }
    WEAK_PARTS.iter().any(|part| joined.contains(part)).then_some((Class::Weak, aws))
}

/// Returns the last word of a name, lowercase: split at separators and
/// at lowercase-to-uppercase changes (`dbPassword` ends in `password`).
fn last_word(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut start = 0;
    for i in 1..bytes.len() {
        let (a, b) = (bytes[i - 1], bytes[i]);
        if !b.is_ascii_alphanumeric() {
            start = i + 1;
        } else if a.is_ascii_lowercase() && b.is_ascii_uppercase() {
            start = i;
        }
    }
    name.get(start..).unwrap_or_default().to_ascii_lowercase()
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

// ---------------------------------------------------------------------------
// Assignments

/// How an assignment is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Separator {
    /// `=`, `:=`, `=>`, `<-`.
    #[default]
    Equals,
    /// `:` (YAML, JSON, JS objects, Go fields, headers, prose).
    Colon,
    /// A flag and its argument: `--password x`.
    Flag,
    /// An XML element: `<password>x</password>`.
    Element,
}

/// What surrounds an assignment.
#[derive(Debug, Clone, Copy, Default)]
struct Context {
    class: Class,
    separator: Separator,
    /// `NAME=value` with an uppercase name and nothing around `=`: an
    /// environment or dotenv line, where a bare word is a literal.
    env_style: bool,
    /// Inside code: call arguments, an object or struct literal, or an
    /// assignment with spaces around `=` (`f(password=pw)`, `x = y`).
    code: bool,
}

/// A value as written after the separator.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    /// A quoted string, without its quotes.
    Quoted(&'a str),
    /// An unquoted token; `alone` when nothing but a terminator follows it
    /// on its line (`password: hunter2`), not a sentence (`Password: must
    /// be ...`).
    Bare { text: &'a str, alone: bool },
}

/// Returns the name `API key: ...` or `client secret = ...` spell in two
/// words, joined by an underscore (`api_key`), when the word at
/// `name_start..end` of `lower` is the second of such a pair.
fn two_word_name(lower: &str, name_start: usize, end: usize) -> Option<String> {
    let bytes = lower.as_bytes();
    if !matches!(&lower[name_start..end], "key" | "token" | "secret" | "password")
        || name_start < 2
        || bytes[name_start - 1] != b' '
    {
        return None;
    }
    // Sliced before the space, an ASCII byte: a char boundary.
    let before = &lower[..name_start - 1];
    let mut two_words = None;
    for first in ["api", "access", "private", "secret", "client", "auth", "bot", "app", "master"] {
        if before.ends_with(first)
            && before.len() >= first.len()
            && (before.len() == first.len()
                || !bytes[before.len() - first.len() - 1].is_ascii_alphanumeric())
        {
            two_words = Some(format!("{first}_{}", &lower[name_start..end]));
        }
    }
    two_words
}

/// Reads the assignment whose name contains the trigger at
/// `trigger_start..trigger_end`; returns its kind when its value is a
/// literal credential, and the end of the name.
fn assignment_at(
    text: &str,
    lower: &str,
    trigger_start: usize,
    trigger_end: usize,
) -> (Option<&'static str>, usize) {
    let bytes = text.as_bytes();
    let mut start = trigger_start;
    while start > 0 && is_name_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = trigger_end;
    while end < bytes.len() && is_name_byte(bytes[end]) {
        end += 1;
    }
    // A trailing dot ends a sentence; leading dashes make a flag.
    while end > start && bytes[end - 1] == b'.' {
        end -= 1;
    }
    let dashes = bytes[start..end].iter().take_while(|&&b| b == b'-').count();
    let name_start = start + dashes;
    if name_start >= end {
        return (None, end);
    }
    let mut name = &text[name_start..end];
    let two_words = two_word_name(lower, name_start, end);
    if let Some(joined) = &two_words {
        name = joined.as_str();
    }
    let Some((class, aws)) = classify(name) else { return (None, end) };
    let kind = if aws { AWS_SECRET } else { ASSIGNMENT };
    let env_name = two_words.is_none()
        && dashes == 0
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');

    // A quoted name (`"password": ...`, `'password' => ...`) closes its
    // quote first.
    let quote_before =
        name_start.checked_sub(1).map(|i| bytes[i]).filter(|b| matches!(b, b'"' | b'\'' | b'`'));
    let mut i = end;
    if let Some(q) = quote_before
        && bytes.get(i) == Some(&q)
    {
        i += 1;
    }
    let gap_before = skip_blanks(bytes, &mut i);
    let element = name_start >= 1 && bytes[name_start - 1] == b'<' && bytes.get(i) == Some(&b'>');
    let separator = if element {
        i += 1;
        Separator::Element
    } else if bytes[i..].starts_with(b":=")
        || bytes[i..].starts_with(b"=>")
        || bytes[i..].starts_with(b"?=")
    {
        i += 2;
        Separator::Equals
    } else if bytes[i..].starts_with(b"==") || bytes[i..].starts_with(b"=~") {
        return (None, end);
    } else if bytes.get(i) == Some(&b'=') {
        i += 1;
        Separator::Equals
    } else if bytes[i..].starts_with(b"::") {
        return (None, end);
    } else if bytes.get(i) == Some(&b':') {
        i += 1;
        Separator::Colon
    } else if dashes > 0 && gap_before > 0 && bytes.get(i).is_some_and(|&b| b != b'-') {
        Separator::Flag
    } else {
        return (None, end);
    };
    let gap_after = if separator == Separator::Element { 0 } else { skip_blanks(bytes, &mut i) };
    let before_name = preceding_byte(bytes, start);
    if separator == Separator::Colon
        && ((start > 0 && bytes[start - 1] == b':') || (gap_before > 0 && gap_after == 0))
    {
        // A link of a colon chain (`arn:aws:secretsmanager:...:secret:x`,
        // `urn:token:...`), or a colon that is not a mapping's (psql's
        // `PASSWORD :'var'`, a conditional's `? a :b`).
        return (None, end);
    }
    if start >= 2 && &bytes[start - 2..start] == b"${" {
        // The name of a parameter expansion (`${PASSWORD:-default}`), not
        // an assignment to it.
        return (None, end);
    }
    let code = matches!(before_name, Some(b'(' | b',' | b'{'))
        || (separator == Separator::Equals && gap_before > 0 && gap_after > 0 && !env_name);
    let env_style = env_name && separator == Separator::Equals && gap_before == 0 && gap_after == 0;
    let Some(value) = read_value(bytes, text, i, separator) else { return (None, end) };
    let mut context = Context { class, separator, env_style, code };
    if let Value::Bare { text: v, .. } = value
        && bytes.get(i + v.len()).is_some_and(|&b| b == b',')
        && separator == Separator::Colon
    {
        // `password: pw,` is an object or struct literal, not YAML.
        context.code = true;
    }
    (judge(&context, &value).then_some(kind), end)
}

/// Skips spaces and tabs; returns how many.
fn skip_blanks(bytes: &[u8], i: &mut usize) -> usize {
    let start = *i;
    while *i < bytes.len() && matches!(bytes[*i], b' ' | b'\t') {
        *i += 1;
    }
    *i - start
}

/// Returns the byte before `start`, skipping spaces and tabs.
fn preceding_byte(bytes: &[u8], start: usize) -> Option<u8> {
    bytes[..start].iter().rev().find(|b| !matches!(b, b' ' | b'\t')).copied()
}

/// Reads the value at `i`.
fn read_value<'a>(
    bytes: &[u8],
    text: &'a str,
    i: usize,
    separator: Separator,
) -> Option<Value<'a>> {
    let first = *bytes.get(i)?;
    if separator == Separator::Element {
        // Only a closed element: `<password>` alone is a placeholder.
        let end = memchr::memchr(b'<', &bytes[i..]).map(|n| i + n)?;
        if !bytes[end..].starts_with(b"</") {
            return None;
        }
        return Some(Value::Quoted(text[i..end].trim()));
    }
    // String prefixes of Python and friends: f"", b'', r"", u"".
    let (quote_at, interpolated) = match (first, bytes.get(i + 1)) {
        (b'f' | b'F', Some(b'"' | b'\'')) => (Some(i + 1), true),
        (b'b' | b'B' | b'r' | b'R' | b'u' | b'U', Some(b'"' | b'\'')) => (Some(i + 1), false),
        (b'"' | b'\'' | b'`', _) => (Some(i), first == b'`'),
        _ => (None, false),
    };
    if let Some(q) = quote_at {
        let quote = bytes[q];
        let mut j = q + 1;
        while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        if j >= bytes.len() || bytes[j] != quote {
            // Unterminated: a quote in prose, or a string cut off.
            return None;
        }
        let inner = &text[q + 1..j];
        if interpolated && inner.contains('{') {
            return None;
        }
        return Some(Value::Quoted(inner));
    }
    if matches!(first, b'\n' | b'\r') {
        return None;
    }
    let mut j = i;
    while j < bytes.len() {
        let b = bytes[j];
        if b.is_ascii_whitespace()
            || matches!(
                b,
                b',' | b';' | b'&' | b'"' | b'\'' | b'`' | b'<' | b'>' | b')' | b']' | b'}'
            )
        {
            break;
        }
        j += 1;
        if matches!(b, b'(' | b'[' | b'{') {
            // A call, a subscript or a template: the rest is its inside.
            break;
        }
    }
    if j == i {
        return None;
    }
    let mut k = j;
    skip_blanks(bytes, &mut k);
    let alone = match bytes.get(k) {
        None => true,
        Some(b) => matches!(
            b,
            b'\n'
                | b'\r'
                | b','
                | b';'
                | b'}'
                | b')'
                | b']'
                | b'#'
                | b'"'
                | b'\''
                | b'`'
                | b'&'
                | b'|'
        ),
    };
    Some(Value::Bare { text: &text[i..j], alone })
}

/// Returns whether `value`, assigned in `context`, is a literal credential.
fn judge(context: &Context, value: &Value<'_>) -> bool {
    match *value {
        Value::Quoted(v) => judge_quoted(context.class, v),
        Value::Bare { text, alone } => judge_bare(context, text, alone),
    }
}

fn judge_quoted(class: Class, v: &str) -> bool {
    if shape::template_reference(v) || shape::placeholder(v) {
        return false;
    }
    let c = shape::classes(v);
    if c.whitespace {
        // A sentence or a prompt ("Enter your password:"), unless it is a
        // short passphrase with digits or symbols.
        let words = v.split_whitespace().count();
        return class == Class::Password
            && words <= 4
            && (c.digit || c.symbol)
            && !v.ends_with(':')
            && !v.ends_with('?');
    }
    if rule_list(v) {
        return false;
    }
    match class {
        Class::Password => {
            if shape::is_number(v) {
                v.len() >= 4
            } else {
                v.len() >= 3
            }
        }
        Class::Secret => {
            !resource_path(v)
                && (shape::credential_like(v)
                    || (v.len() >= 16 && !word_like(v) && !shape::is_date_or_version(v)))
        }
        Class::Weak => weak_literal(v),
    }
}

fn judge_bare(context: &Context, v: &str, alone: bool) -> bool {
    let class = context.class;
    if shape::is_number(v) {
        return class == Class::Password
            && v.len() >= 4
            && (alone || context.separator == Separator::Equals)
            && context.separator != Separator::Flag;
    }
    if reference(context, v) || shape::placeholder(v) {
        return false;
    }
    match context.separator {
        // A sentence after `Password:` is prose; only something that looks
        // generated is a credential there.
        Separator::Colon if !alone => {
            return shape::credential_like(v) && (class != Class::Weak || weak_literal(v));
        }
        Separator::Flag => {
            return match class {
                Class::Password => {
                    shape::credential_like(v) || (v.len() >= 6 && has_digit_or_symbol(v))
                }
                Class::Secret => shape::credential_like(v),
                Class::Weak => weak_literal(v),
            };
        }
        _ => {}
    }
    match class {
        Class::Password => v.len() >= 3,
        Class::Secret => {
            shape::credential_like(v) || (context.env_style && v.len() >= 16 && !word_like(v))
        }
        Class::Weak => weak_literal(v),
    }
}

/// Returns whether `v` is a list of validation rules or flags
/// (`required|string|min:8`), as frameworks write for a password field.
fn rule_list(v: &str) -> bool {
    v.contains('|')
        && v.split('|').all(|rule| {
            let name = rule.split(':').next().unwrap_or(rule);
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
        })
}

fn has_digit_or_symbol(v: &str) -> bool {
    let c = shape::classes(v);
    c.digit || c.symbol
}

/// Returns whether a literal under a weak name is a credential: only a
/// random-looking one that is not a UUID or a path.
fn weak_literal(v: &str) -> bool {
    shape::random_looking(v) && !shape::is_uuid(v) && !resource_path(v)
}

/// Returns whether `v` is a name of words (`same-origin`, `db-credentials`,
/// `read_only`): letters joined by separators, no digits.
fn word_like(v: &str) -> bool {
    v.bytes().all(|b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_' | b'.' | b' '))
        && shape::classes(v).case_changes < 3
}

/// Returns whether `v` names a resource rather than being a value: a path,
/// a URL, an ARN, a secret manager reference.
fn resource_path(v: &str) -> bool {
    let rooted =
        v.starts_with('/') || v.starts_with("./") || v.starts_with("../") || v.starts_with("~/");
    // A path has names for segments; base64 may start with `/` too.
    (rooted && !v.split('/').any(shape::random_looking))
        || v.contains("://")
        || v.starts_with("arn:")
        || v.starts_with("projects/")
        || (v.len() > 2 && v.as_bytes()[1] == b':' && matches!(v.as_bytes()[2], b'\\' | b'/'))
        || v.matches('/').count() >= 2
            && v.split('/').all(|s| {
                s.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
                })
            })
}

/// Returns whether the unquoted `v` refers to a value held elsewhere: a
/// template or shell reference, a call, a subscript, an attribute chain,
/// a path, or (outside environment files) a variable name.
fn reference(context: &Context, v: &str) -> bool {
    let b = v.as_bytes();
    let first = b[0];
    if shape::template_reference(v) || resource_path(v) || colon_chain(v) {
        return true;
    }
    if v.split_once('=').is_some_and(|(option, _)| {
        !option.is_empty() && option.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    }) {
        // Options of their own (`--secret id=npmrc,src=...`): each is
        // judged by its own name.
        return true;
    }
    match first {
        // $VAR, @var, %VAR%, {..}, [..], <..>, (..), *alias, &anchor.
        b'$' | b'@' | b'%' | b'{' | b'[' | b'<' | b'(' | b'*' | b'&' => return true,
        // A YAML tag (`!vault |`, `!Ref DbPassword`).
        b'!' => return b.len() > 1 && b[1..].iter().all(u8::is_ascii_alphabetic),
        _ => {}
    }
    let identifier_start = first.is_ascii_alphabetic() || first == b'_';
    if identifier_start && matches!(b[b.len() - 1], b'(' | b'[' | b'{') {
        return true;
    }
    if context.env_style {
        return false;
    }
    if identifier_start && attribute_chain(v) {
        return true;
    }
    if !identifier_start || !b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
        return false;
    }
    // A bare identifier.
    let lower = v.to_ascii_lowercase();
    if ["pass", "pwd", "secret", "token", "key", "cred", "auth"].iter().any(|s| lower.contains(s)) {
        return true;
    }
    if multi_word_identifier(v) {
        return true;
    }
    context.code && b.iter().all(u8::is_ascii_alphabetic)
}

/// Returns whether the unquoted `v` is a chain of names joined by colons:
/// the tail of an ARN or URN, `host:port`, `image:tag`.
fn colon_chain(v: &str) -> bool {
    v.contains(':')
        && v.split(':').all(|part| {
            part.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        })
}

/// Returns whether `v` is `a.b.c`, `a::b` or `a->b` whose parts are
/// identifiers made of words (digits only at their end).
fn attribute_chain(v: &str) -> bool {
    let normalized = v.replace("::", ".").replace("->", ".").replace("?.", ".");
    let parts: Vec<&str> = normalized.split('.').collect();
    parts.len() >= 2 && parts.iter().all(|p| word_identifier(p))
}

/// Returns whether `part` is an identifier of letters and `_`, with digits
/// only at its end (`db_password`, `v2`, `Config`).
fn word_identifier(part: &str) -> bool {
    let b = part.as_bytes();
    if b.is_empty() || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
        return false;
    }
    let letters_end = b.iter().position(u8::is_ascii_digit).unwrap_or(b.len());
    b[..letters_end].iter().all(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b[letters_end..].iter().all(u8::is_ascii_digit)
}

/// Returns whether `v` is an identifier of several words: `db_password`,
/// `dbPassword`, `DB_PASSWORD`, with digits only at the end of a word.
fn multi_word_identifier(v: &str) -> bool {
    let snake = v.trim_matches('_').contains('_')
        && v.split('_').filter(|p| !p.is_empty()).all(word_identifier);
    let camel = word_identifier(v)
        && shape::classes(v).case_changes >= 1
        && v.as_bytes()[0].is_ascii_lowercase();
    snake || camel
}

// ---------------------------------------------------------------------------
// Credentials in prose

/// Words that begin what a credential opens, between its name and the
/// verb: "the token *for the billing service* is ...".
const PROSE_QUALIFIERS: &[&str] = &["for", "of", "on", "in", "at", "from", "used"];
/// The verbs that give the value: "the token *is* ...", "set the secret
/// *to* ...".
const PROSE_VERBS: &[&str] = &["is", "was", "are", "were", "to", "becomes", "became"];
/// Words between the verb and the value: "is *now* ...".
const PROSE_FILLERS: &[&str] = &["now", "still", "currently", "just", "simply", "set", "to"];
/// The most words of a qualifier.
const MAX_QUALIFIER_WORDS: usize = 6;

/// Returns whether the cue word at `start..end` of `lower` opens a
/// credential given in prose: the word (password, passwd, passphrase,
/// passcode, secret, token, credential(s)), optionally a few words about what it
/// opens (`for the admin console`), then a verb (`is`, `to`, a colon) and
/// the value, or for a password word the value right after it
/// (`passphrase X`). Only a value that looks generated counts: letters
/// mixed with digits or symbols, not a word, a path, a reference or a
/// version ("the token is stored in the keychain", "set the secret to a
/// value from vault" are sentences).
fn in_prose(text: &str, lower: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let mut word_start = start;
    while word_start > 0 && bytes[word_start - 1].is_ascii_alphabetic() {
        word_start -= 1;
    }
    let mut i = end;
    while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    // A word of prose: it stands alone, followed by a space.
    if word_start > 0 && (is_name_byte(bytes[word_start - 1]) || bytes[word_start - 1] == b'$') {
        return false;
    }
    if bytes.get(i) != Some(&b' ') {
        return false;
    }
    let class = match &lower[word_start..i] {
        "password" | "passwd" | "passphrase" | "passcode" => Class::Password,
        "secret" | "token" | "credential" | "credentials" => Class::Secret,
        _ => return false,
    };
    let mut qualifiers = 0;
    loop {
        if skip_blanks(bytes, &mut i) == 0 {
            return false;
        }
        let word_end =
            i + bytes[i..].iter().position(u8::is_ascii_whitespace).unwrap_or(bytes.len() - i);
        let word = &lower[i..word_end];
        if PROSE_VERBS.contains(&word) || word == ":" {
            i = word_end;
            break;
        }
        if qualifiers > 0 && word.len() > 1 && word.ends_with(':') {
            i = word_end;
            break;
        }
        if qualifiers == 0 && !PROSE_QUALIFIERS.contains(&word) {
            // `passphrase X`: the value right after the word.
            return class == Class::Password && prose_value(text, i);
        }
        qualifiers += 1;
        if qualifiers > MAX_QUALIFIER_WORDS || word.contains(['.', ',', ';']) {
            return false;
        }
        i = word_end;
    }
    loop {
        if skip_blanks(bytes, &mut i) == 0 {
            return false;
        }
        let word_end =
            i + bytes[i..].iter().position(u8::is_ascii_whitespace).unwrap_or(bytes.len() - i);
        if !PROSE_FILLERS.contains(&&lower[i..word_end]) {
            return prose_value(text, i);
        }
        i = word_end;
    }
}

/// Returns whether the word at `i` (bare, or quoted with `'`, `"` or a
/// backtick) is a generated-looking literal: random-looking (16
/// characters or more), or a password-like mix of 8 or more (a symbol,
/// or both cases and a digit). Words joined by separators (`base64-encoded`,
/// `sha256-hashed`), `name=value` pairs, references, paths, versions and
/// placeholders are not.
fn prose_value(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    let value = match read_value(bytes, text, i, Separator::Colon) {
        Some(Value::Quoted(v)) => v,
        Some(Value::Bare { text: v, .. }) => {
            v.trim_end_matches(['.', ',', ';', ':', '!', '?', ')'])
        }
        None => return false,
    };
    if value.is_empty() || !shape::credential_like(value) {
        return false;
    }
    let c = shape::classes(value);
    (shape::random_looking(value) || c.symbol || (c.upper && c.lower && c.digit))
        && !value.split_once('=').is_some_and(|(name, _)| word_identifier(name))
        && !shape::template_reference(value)
        && !shape::placeholder(value)
        && !resource_path(value)
        && !colon_chain(value)
        && !matches!(value.as_bytes()[0], b'$' | b'%' | b'@' | b'{' | b'<' | b'(' | b'[')
        && !value.split(['-', '_', '.', '/']).filter(|p| !p.is_empty()).all(word_identifier)
}

// ---------------------------------------------------------------------------
// URLs, headers, command lines, .netrc

fn url_password(text: &str) -> bool {
    may_hold_userinfo(text)
        && URL_USERINFO.captures_iter(text).any(|c| {
            let password = &c[2];
            !shape::template_reference(password)
                && !shape::placeholder(password)
                && !password.starts_with(['$', '{', '<', '%', '*'])
        })
}

/// `Authorization: <scheme> <credential>` (or `= "..."`, or a dict entry).
fn authorization_header(text: &str, end: usize) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let mut i = end;
    if matches!(bytes.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    skip_blanks(bytes, &mut i);
    if !matches!(bytes.get(i), Some(b':' | b'=')) {
        return None;
    }
    i += 1;
    skip_blanks(bytes, &mut i);
    if matches!(bytes.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    let first = token_at(text, i);
    let mut j = i + first.len();
    skip_blanks(bytes, &mut j);
    let second = token_at(text, j);
    if second.is_empty() {
        return bearer_credential(first).then_some(BEARER);
    }
    if first.eq_ignore_ascii_case("basic") {
        return basic_credential(second).then_some(BASIC);
    }
    bearer_credential(second).then_some(BEARER)
}

/// Returns the token at `i`: up to whitespace, a quote or `,;`.
fn token_at(text: &str, i: usize) -> &str {
    let bytes = text.as_bytes();
    let mut j = i;
    while j < bytes.len()
        && !bytes[j].is_ascii_whitespace()
        && !matches!(bytes[j], b'"' | b'\'' | b',' | b';' | b'`')
    {
        j += 1;
    }
    &text[i.min(j)..j]
}

fn bearer(text: &str, end: usize) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let mut i = end;
    if skip_blanks(bytes, &mut i) == 0 {
        return None;
    }
    bearer_credential(token_at(text, i)).then_some(BEARER)
}

fn basic(text: &str, end: usize) -> Option<&'static str> {
    let bytes = text.as_bytes();
    let mut i = end;
    if skip_blanks(bytes, &mut i) == 0 {
        return None;
    }
    basic_credential(token_at(text, i)).then_some(BASIC)
}

/// Returns whether `token`, after `Bearer` or in an `Authorization` header,
/// is a credential: long, generated-looking, not a placeholder.
fn bearer_credential(token: &str) -> bool {
    let token = token.trim_end_matches(['.', ')']);
    if token.len() < 16 || shape::placeholder(token) || shape::template_reference(token) {
        return false;
    }
    if !token.bytes().all(|b| {
        b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'-' | b'=')
    }) {
        return false;
    }
    let c = shape::classes(token);
    ((c.digit && (c.lower || c.upper)) || (c.upper && c.lower && c.case_changes >= 3))
        && shape::entropy(token) >= 3.0
}

/// Returns whether `token`, after `Basic`, is base64 of `user:password`
/// with a real password.
fn basic_credential(token: &str) -> bool {
    let token = token.trim_end_matches(['.', ')']);
    if token.len() < 8 {
        return false;
    }
    let Some(decoded) = base64_decode(token) else { return false };
    let Ok(decoded) = String::from_utf8(decoded) else { return false };
    if !decoded.bytes().all(|b| (0x20..0x7F).contains(&b)) {
        return false;
    }
    match decoded.split_once(':') {
        Some((user, password)) => {
            !user.is_empty()
                && !password.is_empty()
                && !shape::template_reference(password)
                && !shape::placeholder(password)
        }
        None => false,
    }
}

/// Decodes standard or URL-safe base64 (padding optional).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for b in text.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Commands that take a password as an argument, and how.
fn command_line(text: &str, lower: &str) -> Option<&'static str> {
    let commands: [(&str, &[&str], bool); 6] = [
        // (command, password flags taking the next word, -pVALUE glued)
        ("mysql", &[], true),
        ("mariadb", &[], true),
        ("sshpass", &["-p"], true),
        ("redis-cli", &["-a"], false),
        ("docker", &["-p"], false),
        ("curl", &[], false),
    ];
    for (command, flags, glued) in commands {
        let mut from = 0;
        while let Some(at) = lower[from..].find(command).map(|n| from + n) {
            from = at + command.len();
            if at > 0 && lower.as_bytes()[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let line_end = text[at..].find(['\n', '|', ';', '&']).map_or(text.len(), |n| at + n);
            let words: Vec<&str> = text[at..line_end].split_whitespace().collect();
            for (k, word) in words.iter().enumerate() {
                let next = words.get(k + 1).copied();
                let found = if command == "curl" {
                    curl_user(word, next)
                } else if glued
                    && word.len() > 2
                    && word.starts_with("-p")
                    && !word.starts_with("--")
                {
                    command_password(&word[2..], true)
                } else if flags.contains(word) && (command != "docker" || words.contains(&"login"))
                {
                    next.is_some_and(|v| command_password(v, false))
                } else {
                    false
                };
                if found {
                    return Some(COMMAND_LINE_PASSWORD);
                }
            }
        }
    }
    None
}

/// Returns whether `-u user:password` (or `--user`) carries a password.
fn curl_user(word: &str, next: Option<&str>) -> bool {
    let value = match word {
        "-u" | "--user" => next,
        _ => word
            .strip_prefix("--user=")
            .or_else(|| word.strip_prefix("-u").filter(|v| v.contains(':'))),
    };
    let Some(value) = value else { return false };
    let value = value.trim_matches(['"', '\'']);
    match value.split_once(':') {
        Some((user, password)) => !user.is_empty() && command_password(password, true),
        None => false,
    }
}

/// Returns whether a password given on a command line is a literal.
/// `strict` (glued to its flag, or after `user:`) accepts any literal;
/// otherwise the usual placeholders are refused too.
fn command_password(value: &str, strict: bool) -> bool {
    let v = value.trim_matches(['"', '\'']);
    if v.is_empty()
        || shape::template_reference(v)
        || v.starts_with(['$', '<', '{', '%', '*'])
        || shape::masked(v)
    {
        return false;
    }
    if strict {
        return !matches!(
            v.to_ascii_lowercase().as_str(),
            "password" | "pass" | "xxx" | "changeme"
        );
    }
    !shape::placeholder(v) && v.len() >= 3
}

fn netrc_literal(value: &str) -> bool {
    !shape::placeholder(value)
        && !shape::template_reference(value)
        && !value.starts_with(['$', '<', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The cue words as one regex alternation: what [`CUES`] must find.
    fn cues_by_regex(lower: &str) -> Vec<(usize, usize)> {
        let words: Vec<String> = CUES.iter().map(|word| regex::escape(word)).collect();
        let regex = Regex::new(&words.join("|")).unwrap();
        regex.find_iter(lower).map(|m| (m.start(), m.end())).collect()
    }

    proptest! {
        #[test]
        fn the_cue_scan_finds_what_the_alternation_finds(
            parts in proptest::collection::vec(prop_oneof![
                Just("pass"), Just("sshpass"), Just("pswd"), Just("passwd"), Just("key"),
                Just("keychain"), Just("://"), Just(":/"), Just("redis-cli"), Just("\"kty\""),
                Just("login"), Just("machine"), Just("value"), Just("x"), Just(" "), Just("s"),
                Just("ssh"), Just("p"), Just("ass"), Just("-cli"), Just("é"), Just("pwd"),
                Just("tok"), Just("token"), Just("secret"), Just("credential"), Just("bearer"),
                Just("basic"), Just("authorization"), Just("mysql"), Just("mariadb"),
                Just("docker"), Just("curl"), Just("identified"), Just("maria"), Just("cur"),
            ], 0..24)
        ) {
            let text: String = parts.concat();
            let found: Vec<(usize, usize)> = cue_matches(&text).collect();
            prop_assert_eq!(found, cues_by_regex(&text));
        }
    }

    #[test]
    fn a_command_that_takes_a_password_is_one_cue_not_two() {
        let cues = Cues::scan("sshpass -p hunter2 ssh host");
        assert!(cues.command);
        assert!(cues.hits.is_empty(), "`pass` inside `sshpass` is not a cue of its own");
    }

    fn kind(text: &str) -> Option<&'static str> {
        let lower = text.to_ascii_lowercase();
        let cues = Cues::scan(&lower);
        find_structured(text, &lower, &cues).or_else(|| find(text, &lower, &cues))
    }

    #[test]
    fn names_are_classified() {
        assert_eq!(classify("DB_PASSWORD").map(|c| c.0), Some(Class::Password));
        assert_eq!(classify("dbPass").map(|c| c.0), Some(Class::Password));
        assert_eq!(classify("bypass"), None);
        assert_eq!(classify("github-token").map(|c| c.0), Some(Class::Secret));
        assert_eq!(classify("secret_key_base").map(|c| c.0), Some(Class::Weak));
        assert_eq!(classify("password_hash"), None);
        assert_eq!(classify("max_tokens").map(|c| c.0), Some(Class::Weak));
        assert_eq!(classify("monkey"), None);
        assert_eq!(classify("aws_secret_access_key").map(|c| c.1), Some(true));
    }

    #[test]
    fn literals_in_every_syntax() {
        for text in [
            "PGPASSWORD=postgres psql -h db",
            "DB_PASS=s3cr3t",
            "{\"password\": \"hunter2\"}",
            "password: hunter2",
            "password = \"hunter2\"",
            "password := \"hunter2\"",
            "'password' => 'hunter2'",
            "export API_TOKEN='a8Hk2LmQ9xZ0vB4n'",
            "mysql --password=hunter2 -u root",
            "psql --password s3cr3t!x",
            "Server=db;User Id=sa;Password=Str0ng!Pass;",
            "<password>hunter2</password>",
            "api key: 8f7d6a5s4d3f2g1h0j9k",
            "connect(password=\"hunter2\")",
            "?access_token=a8Hk2LmQ9xZ0vB4nW7rT&x=1",
            "CREATE USER app WITH PASSWORD 'hunter2';",
            "ALTER USER 'app'@'%' IDENTIFIED BY 'Tr0ub4dor&3';",
        ] {
            assert_eq!(kind(text), Some(ASSIGNMENT), "{text}");
        }
    }

    #[test]
    fn references_are_not_literals() {
        for text in [
            "api_key=os.getenv('OPENAI_API_KEY')",
            "password=request.form['password']",
            "password=getpass.getpass()",
            "connect(password=cfg.db_password)",
            "max_tokens=4096",
            "password: ${DB_PASSWORD}",
            "token: ${{ secrets.GITHUB_TOKEN }}",
            "password = \"{{ vault_db_password }}\"",
            "export GITHUB_TOKEN=$(gh auth token)",
            "client = OpenAI(api_key=api_key)",
            "def login(username: str, password: str) -> Token:",
            "Password: must be at least 12 characters long.",
            "Secret: rotation happens in the vault, not here.",
            "fetch(url, { credentials: 'include' })",
            "password_hash = bcrypt.hashpw(pw, salt)",
            "<input type=\"password\" name=\"password\">",
            "let api_key = std::env::var(\"API_KEY\")?;",
            "token := r.Header.Get(\"Authorization\")",
            "PWD=/home/app",
            "if not token: raise AuthError()",
            "password: <your password>",
            "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}",
            "docker build --secret id=npmrc,src=$HOME/.npmrc .",
            "ALTER USER app WITH PASSWORD :'app_password';",
            "CREATE USER reporting WITH PASSWORD NULL;",
        ] {
            assert_eq!(kind(text), None, "{text}");
        }
    }

    /// The gates in front of the patterns never turn away a text a
    /// pattern matches: over the ordinary corpus and credentials of each
    /// form, in several cases and spacings.
    #[test]
    fn a_pattern_matches_only_texts_its_gate_lets_through() {
        let corpus = [
            include_str!("../../../tests/fixtures/secret/ordinary-prose.txt"),
            include_str!("../../../tests/fixtures/secret/ordinary-code.txt"),
            include_str!("../../../tests/fixtures/secret/engineering-prose.txt"),
        ];
        let credentials = [
            "postgres://admin:pw@db:5432/app",
            "redis://:s3cr3t@cache:6379 and https://example.com/a?b=c",
            "amqp://guest:p@ss@rabbit/vhost",
            "see https://github.com/org/repo then ftp://u:v@host",
            "machine api.example.com login deploy password hunter2",
            "machine api.example.com\n  login deploy\n  passwd Hunter2!",
            "default login deploy password Xk9#mQ2v",
            "CREATE USER app WITH PASSWORD 'hunter2';",
            "ALTER USER app WITH ENCRYPTED PASSWORD 'Xk9mQ2v'",
            "GRANT ALL ON db.* TO app IDENTIFIED BY 'hunter2'",
            "SET PASSWORD FOR app = PASSWORD('hunter2')",
            "<add key=\"ApiKey\" value=\"Xk9mQ2vL8\"/>",
            "<setting name=\"DbPassword\" value=\"hunter2\"/>",
        ];
        let texts = corpus.iter().flat_map(|c| c.lines()).chain(credentials).flat_map(|line| {
            [line.to_owned(), line.to_ascii_uppercase(), line.replace(' ', "  \t")]
        });
        let mut matched = 0;
        for text in texts {
            let normalized = crate::model::secret::normalize(&text);
            let text = normalized.as_ref();
            let lower = text.to_ascii_lowercase();
            let gates: [(&Regex, bool); 5] = [
                (&URL_USERINFO, may_hold_userinfo(text)),
                (&NETRC_MACHINE, may_hold_netrc_machine(&lower)),
                (&NETRC_LOGIN, may_hold_netrc_login(&lower)),
                (&SQL_PASSWORD, may_hold_sql_password(&lower)),
                (&KEY_VALUE_ATTRIBUTES, may_hold_key_value(&lower)),
            ];
            for (index, (pattern, gate)) in gates.into_iter().enumerate() {
                if pattern.is_match(text) {
                    matched += 1;
                    assert!(gate, "gate {index} turns away {text:?}");
                }
            }
        }
        assert!(matched >= 3 * credentials.len(), "{matched}");
    }

    #[test]
    fn urls_headers_command_lines_and_netrc() {
        assert_eq!(kind("postgres://admin:pw@db:5432/app"), Some(URL_PASSWORD));
        assert_eq!(kind("postgres://app:${DB_PASSWORD}@db/app"), None);
        assert_eq!(kind("mongodb+srv://<user>:<password>@cluster0"), None);
        assert_eq!(kind("Authorization: Basic dXNlcjpodW50ZXIy"), Some(BASIC));
        assert_eq!(kind("basic auth is disabled"), None);
        assert_eq!(kind("Authorization: Bearer a8Hk2LmQ9xZ0vB4nW7rT1yU3"), Some(BEARER));
        assert_eq!(kind("-H 'Authorization: Bearer $TOKEN'"), None);
        assert_eq!(kind("mysql -u root -pSECRET app"), Some(COMMAND_LINE_PASSWORD));
        assert_eq!(kind("mysql -u root -P3306 -p app"), None);
        assert_eq!(kind("curl -u admin:hunter2 https://x"), Some(COMMAND_LINE_PASSWORD));
        assert_eq!(kind("docker run -u 1000:1000 -p 8080:80 app"), None);
        assert_eq!(kind("machine api.example.com login deploy password hunter2"), Some(ASSIGNMENT));
        assert_eq!(kind("the login password is stored hashed"), None);
    }

    #[test]
    fn credentials_given_in_prose_after_a_cue() {
        let token = "k7Qm2Xv9Lp4Rt8Zw3Nb6Hc1D";
        let password = "Vq8#mT2!pL9z";
        for text in [
            format!("the staging deploy token is {token}"),
            format!("set the webhook secret to {password}"),
            format!("password for the admin console: {password}"),
            format!("passphrase {password}"),
            format!("Our deploy password is now {password}."),
            format!("The API token for the billing service is `{token}`."),
            format!("The credentials of the staging bucket are {token}, rotate them"),
            format!("the token for prod : {token}"),
        ] {
            assert_eq!(kind(&text), Some(ASSIGNMENT), "{text}");
        }
        for text in [
            "the token is stored in the keychain",
            "set the secret to a value from vault",
            "passphrase prompts appear on first run",
            "The session token is base64-encoded and signed with RS256.",
            "The secret is sha256-hashed before it is compared.",
            "Password for the test database: see docs/testing.md.",
            "Set the token to $GITHUB_TOKEN in the workflow, never a literal.",
            "The secret is mounted at /run/secrets/db_password in the container.",
            "The token is UTF-8 encoded and URL-safe base64 after signing.",
            "the token is e2e-tested and v2.3.1-compatible",
            "the refresh token is SameSite=Strict",
            "the token is hunter22",
            "the password is dragon",
            "the bypass token for the cache is keyed by user",
            "tokens for the api are issued by the gateway",
            "if token is None: raise AuthError()",
        ] {
            assert_eq!(kind(text), None, "{text}");
        }
    }
}
