//! Usage errors that never repeat what was typed.
//!
//! A command line can hold a credential: `workmem remember "$(cat key)"`
//! with a private key that clap reads as an unknown flag, a token given
//! as a second positional or to a numeric option. clap's own messages quote
//! the offending argument (twice, with its `--` tip), so every parse error
//! is rendered here instead, from its kind and the context clap attached:
//! the argument's name as defined, the rule (possible values, counts, the
//! value parser's reason) and the usage line, all of which come from the
//! command's definition. The contexts that hold what the user typed (the
//! unknown argument, the invalid value, and the suggestions that quote
//! them) are never written.

use std::fmt::Write as _;

use clap::builder::{StyledStr, Styles};
use clap::error::{ContextKind, ContextValue, ErrorFormatter, ErrorKind};

/// The error formatter of every usage error `workmem` prints.
pub struct SafeFormatter;

/// A usage error ready to print.
pub type UsageError = clap::error::Error<SafeFormatter>;

/// Returns `err` as a usage error that renders without user input.
///
/// An error built from a raw message (clap's own consistency checks, which
/// carry no context) keeps only its kind: its message is text this module
/// cannot vouch for.
pub fn safe(err: clap::Error, cmd: &clap::Command) -> UsageError {
    let raw = err.context().next().is_none()
        && !matches!(
            err.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    if raw { UsageError::new(err.kind()).with_cmd(cmd) } else { err.apply() }
}

/// Returns the first line of `err`'s message without `error: `: the
/// message of `--json` error output.
pub fn message(err: &UsageError) -> String {
    let rendered = err.render().to_string();
    rendered.lines().next().unwrap_or("usage error").trim_start_matches("error: ").to_owned()
}

impl ErrorFormatter for SafeFormatter {
    fn format_error(error: &UsageError) -> StyledStr {
        let styles = Styles::default();
        let (bad, good, literal) = (styles.get_error(), styles.get_valid(), styles.get_literal());
        let mut out = StyledStr::new();
        let _ = write!(out, "{bad}error:{bad:#} ");
        let mut tips = write_headline(&mut out, error);
        write_lists(&mut out, error, &mut tips);
        if !tips.is_empty() {
            out.push_str("\n");
        }
        for tip in tips {
            let _ = write!(out, "\n  {good}tip:{good:#} {tip}");
        }
        if let Some(ContextValue::StyledStr(usage)) = error.get(ContextKind::Usage) {
            out.push_str("\n\n");
            let _ = write!(out, "{}", usage.ansi());
        }
        let _ = write!(out, "\n\nFor more information, try '{literal}--help{literal:#}'.\n");
        out
    }
}

/// Writes the first line of `error`'s message, from its kind and the
/// names the definition gives; returns the tips the kind calls for.
fn write_headline(out: &mut StyledStr, error: &UsageError) -> Vec<String> {
    let styles = Styles::default();
    let (good, literal) = (styles.get_valid(), styles.get_literal());
    let arg = string(error, ContextKind::InvalidArg);
    let typed = string(error, ContextKind::InvalidValue);
    let mut tips: Vec<String> = Vec::new();
    match error.kind() {
        ErrorKind::UnknownArgument => {
            // InvalidArg is what was typed here, not a defined name.
            if arg.is_some_and(looks_like_an_option) {
                out.push_str("unexpected argument starting with '-' found");
                // clap suggests `--` where the command takes values.
                if error.get(ContextKind::Suggested).is_some() {
                    tips.push("to pass a value that starts with '-', put '--' before it".into());
                }
            } else {
                out.push_str("unexpected extra argument found");
                tips.push("quote a value that holds spaces, so that it is one argument".into());
            }
        }
        ErrorKind::InvalidSubcommand => out.push_str("unrecognized subcommand"),
        ErrorKind::InvalidValue => match arg {
            Some(arg) if typed.is_some_and(str::is_empty) => {
                let _ = write!(
                    out,
                    "a value is required for '{literal}{arg}{literal:#}' but none was supplied"
                );
            }
            Some(arg) => {
                let _ = write!(out, "invalid value for '{literal}{arg}{literal:#}'");
            }
            None => out.push_str("invalid value for one of the arguments"),
        },
        ErrorKind::ValueValidation => {
            match arg {
                Some(arg) => {
                    let _ = write!(out, "invalid value for '{literal}{arg}{literal:#}'");
                }
                None => out.push_str("invalid value for one of the arguments"),
            }
            // The reason of the value parser: the standard parsers'
            // and this crate's name the rule, never the value (clap's
            // ranged integer parser quotes it: `count_up_to` replaces it).
            if let Some(reason) = std::error::Error::source(error) {
                let _ = write!(out, ": {reason}");
            }
        }
        ErrorKind::TooManyValues => match arg {
            Some(arg) => {
                let _ = write!(
                    out,
                    "unexpected extra value for '{literal}{arg}{literal:#}'; no more were expected"
                );
            }
            None => out.push_str("unexpected value for an argument found"),
        },
        ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            let expected = number(error, ContextKind::MinValues)
                .or_else(|| number(error, ContextKind::ExpectedNumValues));
            let actual = number(error, ContextKind::ActualNumValues);
            match (arg, expected, actual) {
                (Some(arg), Some(expected), Some(actual)) => {
                    let _ = write!(
                        out,
                        "{expected} values required for '{literal}{arg}{literal:#}' but {actual} given"
                    );
                }
                _ => out.push_str(error.kind().as_str().unwrap_or("wrong number of values")),
            }
        }
        ErrorKind::ArgumentConflict => write_conflict(out, error, arg),
        ErrorKind::NoEquals => match arg {
            Some(arg) => {
                let _ = write!(
                    out,
                    "equal sign is needed when assigning values to '{literal}{arg}{literal:#}'"
                );
            }
            None => out.push_str(error.kind().as_str().unwrap_or("equal sign needed")),
        },
        ErrorKind::MissingRequiredArgument => match error.get(ContextKind::InvalidArg) {
            Some(ContextValue::Strings(names)) => {
                out.push_str("the following required arguments were not provided:");
                for name in names {
                    let _ = write!(out, "\n  {good}{name}{good:#}");
                }
            }
            _ => {
                out.push_str(error.kind().as_str().unwrap_or("a required argument is missing"));
            }
        },
        kind => out.push_str(kind.as_str().unwrap_or("invalid command line")),
    }
    tips
}

/// Writes the message of an argument given twice or with another it
/// excludes (both names come from the definition).
fn write_conflict(out: &mut StyledStr, error: &UsageError, arg: Option<&str>) {
    let styles = Styles::default();
    let bad = styles.get_error();
    let prior = error.get(ContextKind::PriorArg);
    match (arg, prior) {
        (Some(arg), Some(ContextValue::String(prior))) if prior == arg => {
            let _ = write!(out, "the argument '{bad}{arg}{bad:#}' cannot be used multiple times");
        }
        (Some(arg), Some(ContextValue::String(prior))) => {
            let _ = write!(
                out,
                "the argument '{bad}{arg}{bad:#}' cannot be used with '{bad}{prior}{bad:#}'"
            );
        }
        (Some(arg), Some(ContextValue::Strings(priors))) => {
            let _ = write!(out, "the argument '{bad}{arg}{bad:#}' cannot be used with:");
            for prior in priors {
                let _ = write!(out, "\n  {bad}{prior}{bad:#}");
            }
        }
        (Some(arg), _) => {
            let _ = write!(
                out,
                "the argument '{bad}{arg}{bad:#}' cannot be used with one or more of the \
                 other specified arguments"
            );
        }
        (None, _) => out.push_str(error.kind().as_str().unwrap_or("argument conflict")),
    }
}

/// Writes the lists of possible values and subcommands the definition
/// gives, and puts its suggestions first among `tips`.
fn write_lists(out: &mut StyledStr, error: &UsageError, tips: &mut Vec<String>) {
    let styles = Styles::default();
    let good = styles.get_valid();
    // Lists and suggestions drawn from the definition.
    for (context, what) in [
        (ContextKind::ValidValue, "possible values"),
        (ContextKind::ValidSubcommand, "subcommands"),
    ] {
        if let Some(ContextValue::Strings(values)) = error.get(context)
            && !values.is_empty()
        {
            let _ = write!(out, "\n  [{what}: {}]", values.join(", "));
        }
    }
    for (context, what) in [
        (ContextKind::SuggestedSubcommand, "subcommand"),
        (ContextKind::SuggestedArg, "argument"),
        (ContextKind::SuggestedValue, "value"),
    ] {
        let names = match error.get(context) {
            Some(ContextValue::String(name)) => vec![name.clone()],
            Some(ContextValue::Strings(names)) => names.clone(),
            _ => Vec::new(),
        };
        if !names.is_empty() {
            let quoted: Vec<String> =
                names.iter().map(|name| format!("'{good}{name}{good:#}'")).collect();
            tips.insert(0, format!("a similar {what} exists: {}", quoted.join(", ")));
        }
    }
}

/// Returns the string context `kind` of `error`.
fn string(error: &UsageError, kind: ContextKind) -> Option<&str> {
    match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    }
}

/// Returns the number context `kind` of `error`.
fn number(error: &UsageError, kind: ContextKind) -> Option<isize> {
    match error.get(kind) {
        Some(&ContextValue::Number(n)) => Some(n),
        _ => None,
    }
}

/// Whether an unknown argument was read as an option: it starts with `-`
/// and is not a lone `-` (which clap passes on as a value).
fn looks_like_an_option(typed: &str) -> bool {
    typed.starts_with('-') && typed.len() > 1
}

/// A value parser for a count from 0 to `max` whose error names the rule
/// and never the value (clap's ranged parser quotes the number given).
pub fn count_up_to(max: usize) -> impl clap::builder::TypedValueParser<Value = u16> {
    move |text: &str| -> Result<u16, NotACount> {
        text.parse::<u16>().ok().filter(|n| usize::from(*n) <= max).ok_or(NotACount { max })
    }
}

/// A count outside 0 to `max`, or no whole number at all.
#[derive(Debug, thiserror::Error)]
#[error("expected a whole number from 0 to {max}")]
pub struct NotACount {
    /// The largest count allowed.
    max: usize,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::ffi::OsString;

    use clap::error::ErrorKind;
    use clap::{CommandFactory, Parser};
    use workmem_testutil::{credential_samples, describe};

    use crate::cli::Cli;

    /// Credentials of several shapes: a token, private key blocks (which
    /// start with `-`), a webhook URL, a password in a URL and an
    /// assignment with spaces.
    fn secrets() -> Vec<String> {
        let wanted = [
            "GitHub token",
            "private key block",
            "Slack webhook",
            "password in URL",
            "AWS access key",
            "password on a command line",
        ];
        let mut out: Vec<String> = credential_samples()
            .into_iter()
            .filter(|(_, kind)| wanted.contains(kind))
            .map(|(text, _)| text)
            .collect();
        // The bare token and key block, as a shell substitution passes them.
        out.push(
            credential_samples()
                .into_iter()
                .map(|(text, _)| text)
                .flat_map(|t| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                .find(|word| word.starts_with("ghp_"))
                .expect("a GitHub token"),
        );
        assert!(out.iter().any(|s| s.starts_with("-----BEGIN")), "a private key block");
        assert!(out.len() >= wanted.len(), "every wanted kind: {}", out.len());
        out
    }

    /// The pieces of `secret` that must never be printed: itself, and each
    /// of its words of 8 characters or more.
    fn pieces(secret: &str) -> Vec<&str> {
        let mut pieces = vec![secret];
        pieces.extend(secret.split_whitespace().filter(|w| w.len() >= 8));
        pieces
    }

    /// Every command path (`["workmem", "remember"]`), with its command.
    fn command_paths(
        cmd: &clap::Command,
        path: Vec<String>,
        out: &mut Vec<(Vec<String>, clap::Command)>,
    ) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            let mut sub_path = path.clone();
            sub_path.push(sub.get_name().to_owned());
            command_paths(sub, sub_path, out);
        }
    }

    /// A value `arg` accepts: its first possible value, else a number.
    fn valid_value(arg: &clap::Arg) -> String {
        arg.get_possible_values()
            .first()
            .map_or_else(|| "1".to_owned(), |value| value.get_name().to_owned())
    }

    /// The arguments a command needs to parse: each required positional
    /// and option with a valid value.
    fn required(cmd: &clap::Command) -> Vec<String> {
        let mut out = Vec::new();
        for arg in cmd.get_arguments().filter(|arg| arg.is_required_set()) {
            if let Some(long) = arg.get_long() {
                out.push(format!("--{long}"));
                out.push(valid_value(arg));
            }
        }
        for arg in cmd.get_positionals().filter(|arg| arg.is_required_set()) {
            out.push(valid_value(arg));
        }
        out
    }

    /// The command lines that put `secret` where each parse error of
    /// `cmd` arises: as an unknown option, an extra positional, a
    /// subcommand, the value of every option (spelt `--opt S`, `--opt=S`,
    /// `-o S`, `-oS`, twice, and with invalid UTF-8), the value of a flag.
    fn lines_for(path: &[String], cmd: &clap::Command, secret: &str) -> Vec<Vec<OsString>> {
        let words = |parts: &[&str]| -> Vec<OsString> {
            path.iter().map(OsString::from).chain(parts.iter().map(OsString::from)).collect()
        };
        let base = required(cmd);
        let base: Vec<&str> = base.iter().map(String::as_str).collect();
        let with = |extra: &[&str]| -> Vec<OsString> {
            let mut parts = base.clone();
            parts.extend_from_slice(extra);
            words(&parts)
        };
        let mut lines = vec![
            words(&[secret]),
            with(&[secret]),
            with(&[secret, secret]),
            with(&["--", secret, secret]),
            with(&[&format!("--{secret}")]),
            with(&[&format!("-{secret}")]),
            words(&[secret, "--json"]),
        ];
        if path.len() > 1 {
            // The secret in place of the subcommand.
            let mut line: Vec<OsString> =
                path[..path.len() - 1].iter().map(OsString::from).collect();
            line.push(secret.into());
            lines.push(line);
        }
        #[cfg(unix)]
        let not_utf8 = {
            use std::os::unix::ffi::OsStringExt;
            let mut bytes = secret.as_bytes().to_vec();
            bytes.push(0xFF);
            OsString::from_vec(bytes)
        };
        #[cfg(unix)]
        {
            let mut line = with(&[]);
            line.push(not_utf8.clone());
            lines.push(line);
        }
        for arg in cmd.get_arguments() {
            let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values())
                || matches!(arg.get_action(), clap::ArgAction::Set | clap::ArgAction::Append);
            let mut spellings = Vec::new();
            if let Some(long) = arg.get_long() {
                spellings.push(format!("--{long}"));
            }
            if let Some(short) = arg.get_short() {
                spellings.push(format!("-{short}"));
            }
            for flag in &spellings {
                if takes_value {
                    lines.push(with(&[flag, secret]));
                    lines.push(with(&[flag, secret, secret]));
                    lines.push(with(&[flag, secret, flag, secret]));
                    lines.push(with(&[flag, &valid_value(arg), flag, secret]));
                    #[cfg(unix)]
                    {
                        let mut line = with(&[flag]);
                        line.push(not_utf8.clone());
                        lines.push(line);
                    }
                } else {
                    lines.push(with(&[flag, flag, secret]));
                }
                let glued = if flag.starts_with("--") {
                    format!("{flag}={secret}")
                } else {
                    format!("{flag}{secret}")
                };
                lines.push(with(&[&glued]));
            }
        }
        lines
    }

    /// The command line `line` for a failure message, `secret` hidden.
    fn shown(line: &[OsString], secret: &str) -> String {
        let words: Vec<String> =
            line.iter().map(|word| word.to_string_lossy().replace(secret, "<SECRET>")).collect();
        words.join(" ")
    }

    #[test]
    fn no_parse_error_of_any_command_repeats_a_credential() {
        let mut root = Cli::command();
        root.build();
        let mut paths = Vec::new();
        command_paths(&root, vec![root.get_name().to_owned()], &mut paths);
        assert!(paths.len() >= 20, "only {} commands", paths.len());
        let mut kinds = BTreeSet::new();
        let mut errors = 0;
        for secret in secrets() {
            for (path, cmd) in &paths {
                for line in lines_for(path, cmd, &secret) {
                    let Err(err) = Cli::try_parse_from(&line) else { continue };
                    if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                        continue;
                    }
                    kinds.insert(format!("{:?}", err.kind()));
                    errors += 1;
                    let err = super::safe(err, &Cli::command());
                    let text = err.render().to_string();
                    let json = super::message(&err);
                    for piece in pieces(&secret) {
                        assert!(
                            !text.contains(piece) && !json.contains(piece),
                            "`{}` with {} repeats it:\n{text}",
                            shown(&line, &secret),
                            describe(&secret)
                        );
                    }
                    assert!(text.starts_with("error: ") && text.contains("--help"), "{text}");
                }
            }
        }
        for kind in [
            "UnknownArgument",
            "InvalidValue",
            "ValueValidation",
            "InvalidSubcommand",
            "TooManyValues",
            "ArgumentConflict",
            "MissingRequiredArgument",
            "InvalidUtf8",
        ] {
            assert!(kinds.contains(kind), "no {kind} error among {kinds:?}");
        }
        assert!(errors > 1_000, "only {errors} parse errors driven");
    }

    #[test]
    fn a_usage_error_names_the_argument_the_rule_and_the_usage() {
        let render = |line: &[&str]| {
            let err = Cli::try_parse_from(line).expect_err("a usage error");
            super::safe(err, &Cli::command()).render().to_string()
        };
        let text = render(&["workmem", "conflicts", "--status", "pending"]);
        assert!(text.contains("invalid value for '--status <STATUS>'"), "{text}");
        assert!(text.contains("[possible values: open,"), "{text}");
        assert!(!text.contains("pending"), "{text}");
        let text = render(&["workmem", "remember", "a fact", "-i", "many"]);
        assert!(text.contains("'--importance <N>': invalid digit found in string"), "{text}");
        let text = render(&["workmem", "context", "--recent", "5000"]);
        assert!(text.contains("expected a whole number from 0 to 1000"), "{text}");
        assert!(!text.contains("5000"), "{text}");
        let text = render(&["workmem", "remember", "-----BEGIN x"]);
        assert!(text.contains("put '--' before it"), "{text}");
        assert!(text.contains("Usage: workmem remember [OPTIONS] <CONTENT>"), "{text}");
        let text = render(&["workmem", "facts", "--al"]);
        assert!(text.contains("a similar argument exists: '--all'"), "{text}");
        let text = render(&["workmem", "conflict"]);
        assert!(text.contains("a similar subcommand exists: 'conflicts'"), "{text}");
        let text = render(&["workmem", "facts", "--all", "--recent", "3"]);
        assert!(text.contains("cannot be used with"), "{text}");
    }
}
