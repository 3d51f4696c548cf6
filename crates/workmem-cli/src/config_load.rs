//! Loads the configuration the library receives: defaults, then the user
//! file (`$XDG_CONFIG_HOME/workmem/config.toml`, else
//! `~/.config/workmem/config.toml`), then the workspace file
//! (`<project>/.workmem/config.toml`); command-line flags are applied on top
//! by the commands. A later source overrides an earlier one key by key.
//!
//! Unknown keys and invalid values are errors naming the file, line, column
//! and key, never the file's content: a hostile checkout may point its
//! configuration at a credentials file, so no message quotes a value or a
//! source line. The workspace file is part of an untrusted checkout: a
//! symlinked `.workmem` or `.workmem/config.toml` is refused, and neither
//! file is read unless it is a regular file (a FIFO would block).
//!
//! ```toml
//! [policy]
//! minimum_age_days = 30
//! minimum_importance = 4
//! repeat_threshold = 2
//! supersession_repeat_threshold = 2
//! stable_kinds = ["decision", "convention", "pitfall"]
//!
//! [policy.source.user]        # facts a person confirmed promote sooner
//! minimum_age_days = 7
//! minimum_importance = 3
//!
//! [context]
//! recent_facts = 6
//! pending_facts = 6           # keyed facts not yet in the memory; 0 turns them off
//! budget = 24000              # characters; 0 means unbounded
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};
use workmem::{Config, Kind, Policy};

use crate::command_error::CommandError;

/// Returns the user configuration file, if a home can be determined.
pub fn user_file() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("workmem/config.toml"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".config/workmem/config.toml"))
}

/// The name of the configuration file, in the user's configuration folder
/// and in the project's `.workmem/`.
const CONFIG_FILE: &str = "config.toml";

/// Returns the workspace configuration file of `project`.
pub fn workspace_file(project: &Path) -> PathBuf {
    workmem::workmem_dir(project).join(CONFIG_FILE)
}

/// Returns the configuration of `project`: defaults, then the user file,
/// then the workspace file.
///
/// Errors: exit 2 naming the file, line, column and key for invalid TOML,
/// an unknown key or an invalid value; exit 4 for a symlinked `.workmem` or
/// workspace file, or a configuration file that is not a regular file.
pub fn load(project: &Path) -> Result<Config, CommandError> {
    let mut config = Config::default();
    if let Some(path) = user_file() {
        // The user's own file may be a link (dotfile managers make them).
        let text = workmem::read_user_file(&path)?;
        apply_text(&mut config, &path, text)?;
    }
    let path = workspace_file(project);
    let text = workmem::read_workspace_file(project, CONFIG_FILE)?;
    apply_text(&mut config, &path, text)?;
    Ok(config)
}

/// Applies the contents of the file at `path` to `config` (`None`: the file
/// does not exist, nothing changes).
///
/// Errors: as [`load`].
fn apply_text(config: &mut Config, path: &Path, data: Option<Vec<u8>>) -> Result<(), CommandError> {
    let Some(data) = data else { return Ok(()) };
    let text = String::from_utf8(data).map_err(|err| {
        let offset = err.utf8_error().valid_up_to();
        let bytes = err.into_bytes();
        let (line, column) = line_column(&bytes[..offset]);
        CommandError::invalid(
            "config",
            format!("{}:{line}:{column}: not valid UTF-8", path.display()),
        )
    })?;
    let file = File { path, text: &text };
    let table = DeTable::parse(&text).map_err(|err| file.syntax_error(&err))?;
    apply_table(config, table.get_ref(), &file)?;
    config
        .validate()
        .map_err(|err| CommandError::invalid("config", format!("{err} (in {})", path.display())))
}

/// A configuration file being applied: where errors point.
struct File<'a> {
    path: &'a Path,
    text: &'a str,
}

impl File<'_> {
    /// Returns `path:line:column` of the start of `span`.
    fn place(&self, span: &Range<usize>) -> String {
        let end = span.start.min(self.text.len());
        let (line, column) = line_column(&self.text.as_bytes()[..end]);
        format!("{}:{line}:{column}", self.path.display())
    }

    /// Returns the error of a document that is not valid TOML: where, the
    /// parser's message (which names what it expected, never the text)
    /// and the key of that line when it has one.
    fn syntax_error(&self, err: &toml::de::Error) -> CommandError {
        let span = err.span().unwrap_or(0..0);
        let message = err.message().lines().next().unwrap_or("").trim();
        // The parser's message names tokens and keys, not values; still,
        // never repeat anything that looks like a credential.
        let message = if message.is_empty() || workmem::find_secret(message).is_some() {
            "syntax error".to_owned()
        } else {
            message.to_owned()
        };
        let key =
            self.key_of_line(span.start).map(|key| format!(" (key `{key}`)")).unwrap_or_default();
        CommandError::invalid(
            "config",
            format!("{}: not valid TOML: {message}{key}", self.place(&span)),
        )
    }

    /// Returns the bare key assigned on the line holding `offset`, if the
    /// line is a plain `key = ...` assignment whose key is not credential
    /// shaped.
    fn key_of_line(&self, offset: usize) -> Option<&str> {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next()?;
        let key = line.split_once('=')?.0.trim();
        let bare = !key.is_empty()
            && key.len() <= 64
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        (bare && workmem::find_secret(key).is_none()).then_some(key)
    }

    fn unknown(&self, key: &str, span: &Range<usize>) -> CommandError {
        let key = if workmem::find_secret(key).is_some() {
            "(not shown: it looks like a credential)"
        } else {
            key
        };
        CommandError::invalid("config", format!("{}: unknown key `{key}`", self.place(span)))
            .hinted("known keys: policy.{minimum_age_days, minimum_importance, repeat_threshold, supersession_repeat_threshold, stable_kinds, source.<name>.{minimum_age_days, minimum_importance}}, context.{recent_facts, pending_facts, budget}")
    }

    fn bad(&self, key: &str, span: &Range<usize>, message: impl std::fmt::Display) -> CommandError {
        CommandError::invalid("config", format!("{}: `{key}` {message}", self.place(span)))
    }

    fn section<'t, 'i>(
        &self,
        value: &'t Spanned<DeValue<'i>>,
        key: &str,
    ) -> Result<&'t DeTable<'i>, CommandError> {
        match value.get_ref() {
            DeValue::Table(table) => Ok(table),
            _ => Err(self.bad(key, &value.span(), "must be a table")),
        }
    }

    /// Returns the integer at `value`, checked to lie in `range` (one of
    /// the library's ranges); the message states the range, never the value
    /// found.
    fn integer<T>(
        &self,
        value: &Spanned<DeValue<'_>>,
        key: &str,
        range: &std::ops::RangeInclusive<T>,
    ) -> Result<T, CommandError>
    where
        T: Copy + TryFrom<i64> + PartialOrd + std::fmt::Display,
    {
        let accepted = range;
        let in_range = |n: i64| T::try_from(n).ok().filter(|n| accepted.contains(n));
        let range = format!("must be an integer from {} to {}", accepted.start(), accepted.end());
        match value.get_ref() {
            DeValue::Integer(n) => match i64::from_str_radix(n.as_str(), n.radix()) {
                Ok(n) => in_range(n).ok_or_else(|| self.bad(key, &value.span(), range)),
                Err(_) => Err(self.bad(key, &value.span(), range)),
            },
            other => {
                Err(self.bad(key, &value.span(), format!("{range}, not {}", other.type_str())))
            }
        }
    }
}

/// Returns the 1-based line and column (in characters) just after `before`.
fn line_column(before: &[u8]) -> (usize, usize) {
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

fn apply_table(
    config: &mut Config,
    table: &DeTable<'_>,
    file: &File<'_>,
) -> Result<(), CommandError> {
    for (key, value) in table {
        match key.get_ref().as_ref() {
            "policy" => apply_policy(config, file.section(value, "policy")?, file)?,
            "context" => {
                for (name, value) in file.section(value, "context")? {
                    let full = format!("context.{}", name.get_ref());
                    match name.get_ref().as_ref() {
                        "recent_facts" => {
                            config.recent_facts =
                                file.integer(value, &full, &Config::RECENT_FACTS)?;
                        }
                        "pending_facts" => {
                            config.pending_facts =
                                file.integer(value, &full, &Config::PENDING_FACTS)?;
                        }
                        "budget" => {
                            // 0 (unbounded) or the library's range.
                            let budget = 0..=*Config::CONTEXT_BUDGET.end();
                            config.context_budget = file.integer(value, &full, &budget)?;
                        }
                        _ => return Err(file.unknown(&full, &name.span())),
                    }
                }
            }
            other => return Err(file.unknown(other, &key.span())),
        }
    }
    Ok(())
}

fn apply_policy(
    config: &mut Config,
    table: &DeTable<'_>,
    file: &File<'_>,
) -> Result<(), CommandError> {
    let policy = &mut config.policy;
    for (name, value) in table {
        let full = format!("policy.{}", name.get_ref());
        match name.get_ref().as_ref() {
            "minimum_age_days" => {
                policy.minimum_age_days = file.integer(value, &full, &Policy::AGE_DAYS)?;
            }
            "minimum_importance" => {
                policy.minimum_importance = file.integer(value, &full, &Policy::IMPORTANCE)?;
            }
            "repeat_threshold" => {
                policy.repeat_threshold = file.integer(value, &full, &Policy::REPEAT_THRESHOLD)?;
            }
            "supersession_repeat_threshold" => {
                policy.supersession_repeat_threshold =
                    file.integer(value, &full, &Policy::SUPERSESSION_REPEAT_THRESHOLD)?;
            }
            "stable_kinds" => {
                let DeValue::Array(items) = value.get_ref() else {
                    return Err(file.bad(&full, &value.span(), "must be a list of kind names"));
                };
                policy.stable_kinds = items
                    .iter()
                    .map(|item| {
                        match item.get_ref() {
                            DeValue::String(name) => Kind::parse(name).ok(),
                            _ => None,
                        }
                        .ok_or_else(|| {
                            file.bad(
                                &full,
                                &item.span(),
                                "items must be decision, convention, pitfall or outcome",
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "source" => {
                for (source, overrides) in file.section(value, &full)? {
                    let prefix = format!("policy.source.{}", source.get_ref());
                    let slot = policy.sources.entry(source.get_ref().to_string()).or_default();
                    for (name, value) in file.section(overrides, &prefix)? {
                        let full = format!("{prefix}.{}", name.get_ref());
                        match name.get_ref().as_ref() {
                            "minimum_age_days" => {
                                slot.minimum_age_days =
                                    Some(file.integer(value, &full, &Policy::AGE_DAYS)?);
                            }
                            "minimum_importance" => {
                                slot.minimum_importance =
                                    Some(file.integer(value, &full, &Policy::IMPORTANCE)?);
                            }
                            _ => return Err(file.unknown(&full, &name.span())),
                        }
                    }
                }
            }
            _ => return Err(file.unknown(&full, &name.span())),
        }
    }
    Ok(())
}
