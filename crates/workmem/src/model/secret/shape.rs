//! What a value looks like: a random credential, a word, a placeholder, a
//! reference to a value kept elsewhere. The detectors ask these questions
//! of the text after an assignment, a header or a token prefix.

/// Returns the Shannon entropy of `text` in bits per byte.
pub(super) fn entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = text.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The character classes of a text.
#[allow(clippy::struct_excessive_bools)] // one flag per class, read by name
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Classes {
    pub lower: bool,
    pub upper: bool,
    pub digit: bool,
    /// Symbols people put in passwords (`!@#$%^&*+=?~`), not the
    /// separators of words and identifiers (`-_.`).
    pub symbol: bool,
    /// Changes from a lowercase to an uppercase letter (`camelCase` has
    /// one per word; a random string many).
    pub case_changes: usize,
    pub whitespace: bool,
}

pub(super) fn classes(text: &str) -> Classes {
    let mut c = Classes::default();
    let mut previous_upper = None;
    for ch in text.chars() {
        match ch {
            'a'..='z' => {
                c.lower = true;
                previous_upper = Some(false);
            }
            'A'..='Z' => {
                c.upper = true;
                if previous_upper == Some(false) {
                    c.case_changes += 1;
                }
                previous_upper = Some(true);
            }
            '0'..='9' => c.digit = true,
            '!' | '@' | '#' | '$' | '%' | '^' | '&' | '*' | '+' | '=' | '?' | '~' => {
                c.symbol = true;
            }
            ch if ch.is_whitespace() => c.whitespace = true,
            _ => {}
        }
    }
    c
}

/// Returns whether `text` looks like a credential rather than a word, a
/// name, a number or a date: at least 8 characters without whitespace that
/// mix letters with digits or symbols, or upper and lower case several
/// times, with some entropy.
pub(super) fn credential_like(text: &str) -> bool {
    if text.len() < 8 || is_number(text) || is_date_or_version(text) {
        return false;
    }
    let c = classes(text);
    if c.whitespace {
        return false;
    }
    let letters = c.lower || c.upper;
    let mixed = (c.digit && letters)
        || (c.upper && c.lower && c.case_changes >= 3)
        || (c.symbol && (letters || c.digit));
    mixed && entropy(text) >= 2.5
}

/// Returns whether `text` looks randomly generated: credential-like, at
/// least 16 characters and 3 bits of entropy per character.
pub(super) fn random_looking(text: &str) -> bool {
    text.len() >= 16 && credential_like(text) && entropy(text) >= 3.0
}

/// Returns whether the body of a prefixed token looks generated rather
/// than like words joined by hyphens (`sk-folding-cube-angle-rotation`, a
/// CSS class): a digit, mixed case, or a long unbroken run, and no mask.
pub(super) fn token_body(body: &str) -> bool {
    if masked(body) {
        return false;
    }
    let c = classes(body);
    let longest_run =
        body.split(|ch: char| !ch.is_ascii_alphanumeric()).map(str::len).max().unwrap_or(0);
    distinct(body) >= 6 && (c.digit || (c.upper && c.lower) || longest_run >= 16)
}

fn distinct(text: &str) -> usize {
    let mut seen = [false; 128];
    text.bytes().filter(|&b| b < 128).for_each(|b| seen[usize::from(b)] = true);
    seen.iter().filter(|&&s| s).count()
}

/// Returns whether `text` is a mask or filler rather than a value:
/// `********`, `xxxxxxxx`, `XXXX-XXXX`, or a run of eight equal
/// characters.
pub(super) fn masked(text: &str) -> bool {
    if text.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '#' | '?' | '-' | '_' | '\u{2022}'))
    {
        return true;
    }
    let bytes = text.as_bytes();
    let mut run = 1;
    for pair in bytes.windows(2) {
        if pair[0] == pair[1] {
            run += 1;
            if run >= 8 {
                return true;
            }
        } else {
            run = 1;
        }
    }
    false
}

/// Returns whether `text` is a decimal number (with an optional sign,
/// point or exponent).
pub(super) fn is_number(text: &str) -> bool {
    let t = text.strip_prefix(['-', '+']).unwrap_or(text);
    !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'e' | b'E'))
        && t.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// Returns whether `text` is a date, a time stamp or a version number
/// (`2026-01-05`, `2026-01-05T09:30:00Z`, `v1.2.3`, `1.4.0-rc.1`).
pub(super) fn is_date_or_version(text: &str) -> bool {
    let b = text.as_bytes();
    let date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit);
    let v = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let version = core.contains('.')
        && core.split('.').all(|part| !part.is_empty() && part.bytes().all(|x| x.is_ascii_digit()));
    date || version
}

/// Returns whether `text` is a UUID (`8-4-4-4-12` hex digits).
pub(super) fn is_uuid(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(part, len)| part.len() == len && part.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Words that, as a whole value, stand for a value rather than being one:
/// types, booleans, empty markers, and the obvious placeholders.
const PLACEHOLDER_WORDS: &[&str] = &[
    "none",
    "null",
    "nil",
    "undefined",
    "empty",
    "blank",
    "na",
    "redacted",
    "hidden",
    "masked",
    "omitted",
    "removed",
    "elided",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pass",
    "pwd",
    "token",
    "apikey",
    "key",
    "value",
    "credential",
    "credentials",
    "changeme",
    "changeit",
    "placeholder",
    "example",
    "sample",
    "dummy",
    "todo",
    "tbd",
    "fixme",
    "required",
    "optional",
    "unset",
    "notset",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "default",
    "auto",
    "string",
    "str",
    "text",
    "bytes",
    "int",
    "integer",
    "number",
    "bool",
    "boolean",
    "any",
    "object",
    "test",
    "foo",
    "bar",
    "baz",
    "foobar",
    "xxx",
    "abc",
];

/// Parts of a word that say it is a placeholder wherever they appear.
const PLACEHOLDER_PARTS: &[&str] =
    &["example", "placeholder", "changeme", "redacted", "dummy", "notreal", "replaceme"];

/// Stems of the names of secrets, as they appear inside placeholder
/// values (`your-api-key`, `<token>`, `MY_PASSWORD_HERE`).
const STEMS: &[&str] = &["pass", "pwd", "secret", "token", "key", "cred", "auth"];

/// Returns whether `value` (already unquoted) is an obvious placeholder
/// rather than a value: empty, a mask, wrapped in `<>`, `{}`, `[]`, `%%`
/// or `__`, a placeholder word (`changeme`, `none`, `string`, ...), or a
/// phrase like `your-password-here`.
pub(super) fn placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.len() < 2 || masked(v) {
        return true;
    }
    let wrapped = [("<", ">"), ("{", "}"), ("[", "]"), ("%", "%"), ("__", "__"), ("(", ")")];
    if wrapped.iter().any(|(open, close)| v.starts_with(open) && v.ends_with(close)) {
        return true;
    }
    let word: String =
        v.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    if word.is_empty() {
        return true;
    }
    if PLACEHOLDER_WORDS.contains(&word.as_str())
        || PLACEHOLDER_PARTS.iter().any(|part| word.contains(part))
    {
        return true;
    }
    let names_a_secret = STEMS.iter().any(|stem| word.contains(stem));
    names_a_secret
        && (["your", "my", "insert", "enter", "replace", "put", "the", "some", "new", "real"]
            .iter()
            .any(|p| word.starts_with(p))
            || word.ends_with("here")
            || word.ends_with("goeshere"))
}

/// Returns whether `value` refers to a value kept elsewhere by the syntax
/// of a template or shell: `$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`, `{{ var }}`,
/// `#{var}`, `%(name)s`, `%s`, `{name}`.
pub(super) fn template_reference(value: &str) -> bool {
    let v = value.trim();
    let b = v.as_bytes();
    if b.first() == Some(&b'$')
        && b.get(1).is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'_' | b'{' | b'('))
    {
        return true;
    }
    ["${", "{{", "#{", "%(", "%s", "$("].iter().any(|open| v.contains(open))
        || (v.contains('{') && v.contains('}') && v.len() <= 64 && !v.contains(' '))
        || (v.starts_with('%') && v.ends_with('%') && v.len() > 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_told_from_words() {
        for yes in ["s3cr3t-value-42", "Summer2024!", "xK9mP2qL", "abcd1234efgh", "P@ssw0rd"] {
            assert!(credential_like(yes), "{yes}");
        }
        for no in [
            "same-origin",
            "include",
            "SecretManager",
            "2026-01-05T09:30:00Z",
            "1.4.0-rc.1",
            "4096",
            "read-only",
            "hunter2",
        ] {
            assert!(!credential_like(no), "{no}");
        }
    }

    #[test]
    fn placeholders_and_references() {
        for p in [
            "changeme",
            "<password>",
            "your-password-here",
            "YOUR_API_KEY",
            "xxx",
            "********",
            "{password}",
            "none",
            "string",
            "__TOKEN__",
        ] {
            assert!(placeholder(p), "{p}");
        }
        for r in ["$DB_PASSWORD", "${DB_PASSWORD}", "$(cat /run/pw)", "{{ vault_pw }}", "%(pw)s"] {
            assert!(template_reference(r), "{r}");
        }
        for literal in ["hunter2", "Tr0ub4dor&3", "postgres"] {
            assert!(!placeholder(literal) && !template_reference(literal), "{literal}");
        }
    }

    #[test]
    fn token_bodies_and_masks() {
        assert!(!token_body("folding-cube-angle-rotation"));
        assert!(token_body("proj-a8Hk2LmQ9xZ0vB4nW7rT1yU3"));
        assert!(masked("xxxxxxxxxxxxxxxxxxxx"));
        assert!(!masked("a8Hk2LmQ9xZ0vB4nW7rT"));
        assert!(is_uuid("123e4567-e89b-12d3-a456-426614174000"));
    }
}
