//! The secret guard (docs/secrets.md): refuses credentials in every field
//! that would be stored (fact content, memory_key, source, fact id,
//! evidence keys and values, adjudication actor, rationale and event id)
//! before a byte is written, and finds them in what is already stored
//! (`Workspace::scan`).
//!
//! A text is first normalized (`normalize`): Unicode format characters
//! (zero-width characters, the soft hyphen, bidi controls) are removed,
//! NFKC folds fullwidth and other compatibility forms, and characters that
//! look like Latin letters or digits (Cyrillic a U+0430, Greek omicron U+03BF, ...) are
//! folded to them by the Unicode confusables data. Then three families of
//! detectors look at it:
//!
//! - provider token formats (`tokens`): AWS, GitHub, GitLab, Slack,
//!   Stripe, OpenAI, Anthropic, Google, npm, Hugging Face, PyPI, Vault, ...,
//!   JWTs, and private key blocks of every kind;
//! - credentials in structured text (`assign`): passwords in URLs,
//!   `Authorization` headers, passwords on command lines and in `.netrc`,
//!   GCP service-account JSON, and a *literal* assigned to a secret-named
//!   variable in any common syntax (`X=`, `X: `, `"x": "..."`, `x := `,
//!   `--password ...`, `Password=...;`);
//! - the judgement of what is a literal (`shape`): a reference
//!   (`os.getenv(...)`, `request.form['password']`, `cfg.db_password`,
//!   `${VAR}`, `<placeholder>`, `changeme`) is not a secret; short common
//!   words count only with strong context; random-looking strings need
//!   less.
//!
//! Messages name the kind of credential and the field, never the value.
//! Pure: nothing here touches the filesystem.

mod assign;
mod normalize;
mod shape;
mod tokens;

use std::borrow::Cow;

use crate::error::{Error, Invalid, Result};

pub use normalize::normalize;

/// The kind named for a literal assigned to a secret-named variable.
pub const ASSIGNMENT: &str = "password or secret assignment";
/// The kind named for a password in the user part of a URL.
pub const URL_PASSWORD: &str = "password in URL";
/// The kind named for a password given to a command on its command line.
pub const COMMAND_LINE_PASSWORD: &str = "password on a command line";
/// The kind named for an `Authorization: Bearer ...` (or token) credential.
pub const BEARER: &str = "bearer token";
/// The kind named for HTTP basic authorization (base64 of `user:password`).
pub const BASIC: &str = "basic authorization";
/// The kind named for a private key in PEM (or PuTTY) form.
pub const PRIVATE_KEY: &str = "private key block";
/// The kind named for a Google Cloud service-account key (JSON).
pub const GCP_SERVICE_ACCOUNT: &str = "GCP service account key";
/// The kind named for a private JSON Web Key.
pub const PRIVATE_JWK: &str = "private JSON Web Key";
/// The kind named for an AWS secret access key assigned to its variable.
pub const AWS_SECRET: &str = "AWS secret access key";

/// Returns every kind of credential the guard can name, sorted and
/// without repeats: the provider token kinds and the structural ones.
pub fn kinds() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = tokens::kinds().collect();
    all.extend([
        ASSIGNMENT,
        URL_PASSWORD,
        COMMAND_LINE_PASSWORD,
        BEARER,
        BASIC,
        PRIVATE_KEY,
        GCP_SERVICE_ACCOUNT,
        PRIVATE_JWK,
        AWS_SECRET,
    ]);
    all.sort_unstable();
    all.dedup();
    all
}

/// Returns the kind of the first credential found in `text`, if any.
pub fn find(text: &str) -> Option<&'static str> {
    let normalized = normalize(text);
    let text = normalized.as_ref();
    // The shortest credential the detectors know (`a://b:c@d`, `pwd=abc`)
    // is longer than this; ids, kinds and sources often are not.
    if text.len() < 7 {
        return None;
    }
    // Ids, hashes, UUIDs and time stamps (hex digits, digits and
    // separators) match no detector: every format needs another letter.
    if text
        .bytes()
        .all(|b| b.is_ascii_hexdigit() || matches!(b, b'-' | b':' | b'.' | b'+' | b'T' | b'Z'))
    {
        return None;
    }
    let lower: Cow<'_, str> = if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    };
    let lower = lower.as_ref();
    let cues = assign::Cues::scan(lower);
    let token = |text| if tokens::may_occur(text) { tokens::find(text) } else { None };
    if cues.is_empty() {
        return token(text);
    }
    assign::find_structured(text, lower, &cues)
        .or_else(|| token(text))
        .or_else(|| assign::find(text, lower, &cues))
}

/// Returns the kind of credential that `value` is when it is stored under
/// `key` (an evidence pair, a JSON member): a literal under a secret-named
/// key, judged as a quoted value (`{"password": "hunter2"}`). Either text
/// on its own is checked by [`find`].
pub fn find_in_pair(key: &str, value: &str) -> Option<&'static str> {
    let key = normalize(key);
    let value = normalize(value);
    assign::judge_pair(key.as_ref(), value.as_ref())
}

/// Refuses `text`, the value of `field`, when it holds a credential.
///
/// Errors: [`Error::InvalidInput`] naming `field` and the kind of secret,
/// never the secret.
pub fn check(field: &str, text: &str) -> Result<()> {
    match find(text) {
        None => Ok(()),
        Some(kind) => Err(Error::invalid(field, Invalid::Secret { kind })),
    }
}

/// Refuses an evidence pair (or any key and value stored together) when
/// the key, the value, or the value under that key holds a credential.
/// The key is named `<field> key`, the value `<field> value`.
///
/// Errors: [`Error::InvalidInput`] naming the part and the kind of secret.
pub fn check_pair(field: &str, key: &str, value: &str) -> Result<()> {
    if let Some(kind) = find(key) {
        return Err(Error::invalid(format!("{field} key"), Invalid::Secret { kind }));
    }
    match find(value).or_else(|| find_in_pair(key, value)) {
        None => Ok(()),
        Some(kind) => Err(Error::invalid(format!("{field} value"), Invalid::Secret { kind })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_field_and_kind_but_not_the_value() {
        let err = check("content", "use password=hunter2 for staging").expect_err("secret");
        let text = err.to_string();
        assert!(text.contains("content") && text.contains(ASSIGNMENT), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let err = check_pair("evidence", "db_password", "hunter2").expect_err("secret");
        assert!(err.to_string().contains("evidence value"), "{err}");
    }

    #[test]
    fn kinds_are_listed_once() {
        let all = kinds();
        assert!(all.len() > 30, "{all:?}");
        assert!(all.contains(&"GitHub token") && all.contains(&ASSIGNMENT));
    }

    #[test]
    fn short_texts_and_generated_ids_pass() {
        for text in ["agent", "user", "decision", "model_tool", "", "a=b"] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
