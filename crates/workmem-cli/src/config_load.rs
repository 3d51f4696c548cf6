//! Loads the configuration the library receives: defaults, then the user
//! file (`$XDG_CONFIG_HOME/workmem/config.toml`, else
//! `~/.config/workmem/config.toml`), then the workspace file
//! (`<project>/.workmem/config.toml`); command-line flags are applied on top
//! by the commands. A later source overrides an earlier one key by key.
//!
//! Unknown keys and invalid values are errors naming the key and the file.
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
//! budget = 24000              # characters; 0 means unbounded
//! ```

use std::path::{Path, PathBuf};

use toml::{Table, Value};
use workmem::{Config, Kind};

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

/// Returns the workspace configuration file of `project`.
pub fn workspace_file(project: &Path) -> PathBuf {
    project.join(".workmem/config.toml")
}

/// Returns the configuration of `project`: defaults, then the user file,
/// then the workspace file.
///
/// Errors: exit 2 naming the file (and key) for unreadable TOML, an unknown
/// key or an invalid value.
pub fn load(project: &Path) -> Result<Config, CommandError> {
    let mut config = Config::default();
    for path in user_file().into_iter().chain([workspace_file(project)]) {
        apply_file(&mut config, &path)?;
    }
    Ok(config)
}

/// Applies one file to `config` (a missing file changes nothing).
///
/// Errors: as [`load`].
pub fn apply_file(config: &mut Config, path: &Path) -> Result<(), CommandError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(CommandError::io(format!("cannot read {}", path.display()), &err)),
    };
    let table: Table = text.parse().map_err(|err: toml::de::Error| {
        CommandError::invalid("config", format!("{} is not valid TOML: {}", path.display(), err.to_string().trim()))
    })?;
    apply_table(config, &table, path)?;
    config.validate().map_err(|err| CommandError::invalid("config", format!("{err} (in {})", path.display())))
}

fn apply_table(config: &mut Config, table: &Table, path: &Path) -> Result<(), CommandError> {
    for (key, value) in table {
        match key.as_str() {
            "policy" => apply_policy(config, section(value, "policy", path)?, path)?,
            "context" => {
                for (name, value) in section(value, "context", path)? {
                    let full = format!("context.{name}");
                    match name.as_str() {
                        "recent_facts" => config.recent_facts = integer(value, &full, path, 0, 1_000)? as usize,
                        "budget" => config.context_budget = integer(value, &full, path, 0, 100_000_000)? as usize,
                        _ => return Err(unknown(&full, path)),
                    }
                }
            }
            _ => return Err(unknown(key, path)),
        }
    }
    Ok(())
}

fn apply_policy(config: &mut Config, table: &Table, path: &Path) -> Result<(), CommandError> {
    let policy = &mut config.policy;
    for (name, value) in table {
        let full = format!("policy.{name}");
        match name.as_str() {
            "minimum_age_days" => policy.minimum_age_days = integer(value, &full, path, 0, 365_000)? as u32,
            "minimum_importance" => policy.minimum_importance = integer(value, &full, path, 1, 5)? as u8,
            "repeat_threshold" => policy.repeat_threshold = integer(value, &full, path, 1, 1_000_000)? as u32,
            "supersession_repeat_threshold" => {
                policy.supersession_repeat_threshold = integer(value, &full, path, 2, 1_000_000)? as u32;
            }
            "stable_kinds" => {
                let Value::Array(items) = value else {
                    return Err(bad(&full, path, "must be a list of kind names"));
                };
                policy.stable_kinds = items
                    .iter()
                    .map(|item| {
                        item.as_str().and_then(|name| Kind::parse(name).ok()).ok_or_else(|| {
                            bad(&full, path, format!("{item:?} is not decision, convention, pitfall or outcome"))
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "source" => {
                for (source, overrides) in section(value, &full, path)? {
                    let prefix = format!("policy.source.{source}");
                    let slot = policy.sources.entry(source.clone()).or_default();
                    for (name, value) in section(overrides, &prefix, path)? {
                        let full = format!("{prefix}.{name}");
                        match name.as_str() {
                            "minimum_age_days" => {
                                slot.minimum_age_days = Some(integer(value, &full, path, 0, 365_000)? as u32);
                            }
                            "minimum_importance" => {
                                slot.minimum_importance = Some(integer(value, &full, path, 1, 5)? as u8);
                            }
                            _ => return Err(unknown(&full, path)),
                        }
                    }
                }
            }
            _ => return Err(unknown(&full, path)),
        }
    }
    Ok(())
}

fn section<'a>(value: &'a Value, key: &str, path: &Path) -> Result<&'a Table, CommandError> {
    value.as_table().ok_or_else(|| bad(key, path, "must be a table"))
}

fn integer(value: &Value, key: &str, path: &Path, min: i64, max: i64) -> Result<i64, CommandError> {
    match value.as_integer() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(n) => Err(bad(key, path, format!("{n} is outside {min}-{max}"))),
        None => Err(bad(key, path, format!("{value:?} is not an integer"))),
    }
}

fn unknown(key: &str, path: &Path) -> CommandError {
    CommandError::invalid("config", format!("unknown key `{key}` in {}", path.display()))
        .hinted("known keys: policy.{minimum_age_days, minimum_importance, repeat_threshold, supersession_repeat_threshold, stable_kinds, source.<name>.{minimum_age_days, minimum_importance}}, context.{recent_facts, budget}")
}

fn bad(key: &str, path: &Path, message: impl std::fmt::Display) -> CommandError {
    CommandError::invalid("config", format!("`{key}` in {}: {message}", path.display()))
}
