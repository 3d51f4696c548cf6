//! The chat configuration: which endpoint, key, model and token budget,
//! read through a lookup function so that the caller decides where values
//! come from (the process environment, then a project `.env` file).

use std::collections::BTreeMap;

/// The official Messages API endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Reply token budget when `WORKMEM_MAX_TOKENS` is not set.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Largest accepted `WORKMEM_MAX_TOKENS`.
pub const MAX_MAX_TOKENS: u32 = 1_000_000;

/// Variable holding the API key.
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
/// Variable holding the endpoint base URL.
pub const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";
/// Variable holding the model id.
pub const MODEL_VAR: &str = "MODEL_ID";
/// Variable holding the reply token budget.
pub const MAX_TOKENS_VAR: &str = "WORKMEM_MAX_TOKENS";

/// Resolved chat configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// The API key (sent as `x-api-key`).
    pub api_key: String,
    /// The endpoint base URL, without a trailing slash.
    pub base_url: String,
    /// The model id.
    pub model: String,
    /// Reply token budget.
    pub max_tokens: u32,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches a log or panic message.
        f.debug_struct("Settings")
            .field("api_key", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// Why the configuration is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A required variable is unset or empty.
    #[error("{name} is not set")]
    Missing {
        /// The variable.
        name: &'static str,
    },
    /// A variable has a value this crate cannot use.
    #[error("{name} is invalid: {message}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl Settings {
    /// Returns the settings read through `lookup` (variable name to value;
    /// empty values count as unset).
    ///
    /// Errors: [`SettingsError::Missing`] for `MODEL_ID` or
    /// `ANTHROPIC_API_KEY`; [`SettingsError::Invalid`] for a base URL that is
    /// not http(s) or a token budget that is not an integer in
    /// 1..=1,000,000.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let model = get(MODEL_VAR).ok_or(SettingsError::Missing { name: MODEL_VAR })?;
        let api_key = get(API_KEY_VAR).ok_or(SettingsError::Missing { name: API_KEY_VAR })?;
        let base_url = get(BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(SettingsError::Invalid {
                name: BASE_URL_VAR,
                message: format!("{base_url:?} does not start with http:// or https://"),
            });
        }
        let base_url = base_url.trim_end_matches('/').to_owned();
        let max_tokens = match get(MAX_TOKENS_VAR) {
            None => DEFAULT_MAX_TOKENS,
            Some(text) => {
                text.parse::<u32>().ok().filter(|n| (1..=MAX_MAX_TOKENS).contains(n)).ok_or_else(
                    || SettingsError::Invalid {
                        name: MAX_TOKENS_VAR,
                        message: format!("{text:?} is not an integer from 1 to {MAX_MAX_TOKENS}"),
                    },
                )?
            }
        };
        Ok(Settings { api_key, base_url, model, max_tokens })
    }

    /// Returns the URL of the messages endpoint.
    pub fn messages_url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }
}

/// Returns the assignments of a `.env` file: `NAME=value` lines, with an
/// optional `export ` prefix, `#` comment lines, and values optionally
/// wrapped in single or double quotes. Malformed lines are ignored; a
/// later assignment wins.
pub fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((name, value)) = line.split_once('=') else { continue };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(quote @ ('"' | '\'')) => match value[1..].find(quote) {
                Some(end) => &value[1..=end],
                None => &value[1..],
            },
            // An unquoted value ends at a ` #` comment.
            _ => value.split(" #").next().unwrap_or(value).trim_end(),
        };
        vars.insert(name.to_owned(), value.to_owned());
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn model_is_required() {
        let err = Settings::from_lookup(lookup(&[(API_KEY_VAR, "k")])).unwrap_err();
        assert_eq!(err, SettingsError::Missing { name: MODEL_VAR });
        let err =
            Settings::from_lookup(lookup(&[(API_KEY_VAR, "k"), (MODEL_VAR, "  ")])).unwrap_err();
        assert_eq!(err, SettingsError::Missing { name: MODEL_VAR });
    }

    #[test]
    fn defaults_and_overrides() {
        let s = Settings::from_lookup(lookup(&[(API_KEY_VAR, "k"), (MODEL_VAR, "m")])).unwrap();
        assert_eq!(s.base_url, DEFAULT_BASE_URL);
        assert_eq!(s.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(s.messages_url(), "https://api.anthropic.com/v1/messages");
        let s = Settings::from_lookup(lookup(&[
            (API_KEY_VAR, "k"),
            (MODEL_VAR, "m"),
            (BASE_URL_VAR, "http://127.0.0.1:9/"),
            (MAX_TOKENS_VAR, "100"),
        ]))
        .unwrap();
        assert_eq!(s.messages_url(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(s.max_tokens, 100);
        assert!(!format!("{s:?}").contains("\"k\""));
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in ["0", "-1", "ten", "1000001"] {
            let err = Settings::from_lookup(lookup(&[
                (API_KEY_VAR, "k"),
                (MODEL_VAR, "m"),
                (MAX_TOKENS_VAR, bad),
            ]))
            .unwrap_err();
            assert!(matches!(err, SettingsError::Invalid { name: MAX_TOKENS_VAR, .. }), "{bad}");
        }
        let err = Settings::from_lookup(lookup(&[
            (API_KEY_VAR, "k"),
            (MODEL_VAR, "m"),
            (BASE_URL_VAR, "ftp://x"),
        ]))
        .unwrap_err();
        assert!(matches!(err, SettingsError::Invalid { name: BASE_URL_VAR, .. }));
    }

    #[test]
    fn dotenv_forms() {
        let vars = parse_dotenv(
            "# comment\nMODEL_ID=claude-x\nexport ANTHROPIC_API_KEY = \"sk abc\" \nA='q # not a comment'\n\
             B=plain # trailing\nnot a line\n=x\nMODEL_ID=later\n",
        );
        assert_eq!(vars.get("MODEL_ID").map(String::as_str), Some("later"));
        assert_eq!(vars.get("ANTHROPIC_API_KEY").map(String::as_str), Some("sk abc"));
        assert_eq!(vars.get("A").map(String::as_str), Some("q # not a comment"));
        assert_eq!(vars.get("B").map(String::as_str), Some("plain"));
        assert_eq!(vars.len(), 4);
    }
}
