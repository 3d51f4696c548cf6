//! Structural edits of a client's JSON configuration: one named entry in an
//! object of servers, and one group of a hook event's array.
//!
//! Files are read as JSON with comments and trailing commas (VS Code and
//! Cursor allow both) through a concrete syntax tree, so every comment,
//! blank line, key order and indentation the user wrote survives an edit.
//! Nothing here touches the filesystem: text in, text out.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

use super::format::{EditError, Prune};

/// The command every session-start hook written by `setup` runs; also how
/// `--remove` recognises that hook among the user's.
pub const HOOK_COMMAND: &str = "workmem context --hook";

/// Parses `text`, or an empty document when there is none.
fn parse(text: Option<&str>) -> Result<CstRootNode, EditError> {
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    CstRootNode::parse(text.unwrap_or(""), &options).map_err(|err| EditError::Parse {
        line: err.line_display(),
        message: format!("{} (column {})", err.kind(), err.column_display()),
    })
}

/// Returns the root object, creating it in an empty document.
fn root_object(root: &CstRootNode) -> Result<CstObject, EditError> {
    root.object_value_or_create()
        .ok_or_else(|| EditError::Shape("the top level is not a JSON object".to_owned()))
}

/// Returns the object under `name` in `parent`, if there is one.
fn child_object(parent: &CstObject, name: &str) -> Result<Option<CstObject>, EditError> {
    let Some(prop) = parent.get(name) else { return Ok(None) };
    prop.object_value()
        .map(Some)
        .ok_or_else(|| EditError::Shape(format!("\"{name}\" is not a JSON object")))
}

/// Returns the document's text, ending with a newline when it was created
/// here.
fn render(root: &CstRootNode, created: bool) -> String {
    let mut text = root.to_string();
    if created && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The order keys are written in (others follow, alphabetically): the way
/// the clients' own documentation writes them.
const KEY_ORDER: [&str; 6] = ["name", "type", "matcher", "command", "args", "hooks"];

/// Returns `value` as the syntax tree's input, keys in [`KEY_ORDER`].
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            let rank = |k: &str| KEY_ORDER.iter().position(|o| *o == k).unwrap_or(KEY_ORDER.len());
            pairs.sort_by_key(|(k, _)| rank(k));
            CstInputValue::Object(pairs.into_iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// Whether `text` holds no JSON value at all (only whitespace and
/// comments): then the file is one `setup` may fill from scratch.
fn is_blank(text: Option<&str>) -> bool {
    text.is_none_or(|t| t.trim().is_empty())
}

/// The entry `name` in the object `container` at the top level
/// (`mcpServers.workmem`, `servers.workmem`).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The top-level key holding the servers.
    pub container: &'static str,
    /// The entry's name.
    pub name: &'static str,
    /// The entry's value.
    pub value: Value,
}

impl Entry {
    /// Returns `text` with the entry set to its value: unchanged when it
    /// already has it, replaced when it differs, added otherwise.
    pub fn apply(&self, text: Option<&str>) -> Result<String, EditError> {
        let created = is_blank(text);
        let root = parse(text)?;
        let top = root_object(&root)?;
        match child_object(&top, self.container)? {
            None => {
                top.append(
                    self.container,
                    CstInputValue::Object(vec![(self.name.to_owned(), input(&self.value))]),
                );
            }
            Some(servers) => match servers.get(self.name) {
                Some(prop) => {
                    let current = prop.value().and_then(|v| v.to_serde_value());
                    if current.as_ref() == Some(&self.value) {
                        return Ok(text.unwrap_or_default().to_owned());
                    }
                    prop.set_value(input(&self.value));
                }
                None => {
                    servers.append(self.name, input(&self.value));
                }
            },
        }
        Ok(render(&root, created))
    }

    /// Returns `text` without the entry (`None`: nothing would be left of
    /// the file), pruning what it leaves empty as `prune` says.
    pub fn remove(&self, text: &str, prune: Prune) -> Result<Option<String>, EditError> {
        let root = parse(Some(text))?;
        let Some(top) = root.object_value() else { return Ok(Some(text.to_owned())) };
        let Some(servers) = child_object(&top, self.container)? else {
            return Ok(Some(text.to_owned()));
        };
        let Some(prop) = servers.get(self.name) else { return Ok(Some(text.to_owned())) };
        prop.remove();
        if prune != Prune::Nothing
            && servers.properties().is_empty()
            && let Some(prop) = top.get(self.container)
        {
            prop.remove();
        }
        Ok(finish(&root, &top, prune))
    }
}

/// Returns the document after a removal: `None` when pruning to the file
/// left an empty top-level object.
fn finish(root: &CstRootNode, top: &CstObject, prune: Prune) -> Option<String> {
    if prune == Prune::File && top.properties().is_empty() {
        return None;
    }
    Some(root.to_string())
}

/// One group of a hook event (`hooks.SessionStart[i]`) whose hook runs
/// [`HOOK_COMMAND`], in the shape Claude Code, Codex and Gemini CLI share:
/// `{"matcher"?, "hooks": [{"type": "command", "command", ...}]}`.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The event name (`SessionStart`).
    pub event: &'static str,
    /// The whole group.
    pub group: Value,
}

impl Hook {
    /// Returns `text` with the group in the event's array: unchanged when
    /// it is there, replaced when a group of ours differs, added otherwise.
    pub fn apply(&self, text: Option<&str>) -> Result<String, EditError> {
        let created = is_blank(text);
        let root = parse(text)?;
        let top = root_object(&root)?;
        let Some(hooks) = child_object(&top, "hooks")? else {
            top.append(
                "hooks",
                CstInputValue::Object(vec![(
                    self.event.to_owned(),
                    CstInputValue::Array(vec![input(&self.group)]),
                )]),
            );
            return Ok(render(&root, created));
        };
        let Some(prop) = hooks.get(self.event) else {
            hooks.append(self.event, CstInputValue::Array(vec![input(&self.group)]));
            return Ok(render(&root, created));
        };
        let array = prop.array_value().ok_or_else(|| {
            EditError::Shape(format!("\"hooks.{}\" is not a JSON array", self.event))
        })?;
        match array.elements().into_iter().find(is_ours) {
            Some(group) if group.to_serde_value().as_ref() == Some(&self.group) => {
                return Ok(text.unwrap_or_default().to_owned());
            }
            Some(group) => replace(group, input(&self.group)),
            None => {
                array.append(input(&self.group));
            }
        }
        Ok(render(&root, created))
    }

    /// Returns `text` without the group (`None`: nothing would be left of
    /// the file), pruning what it leaves empty as `prune` says.
    pub fn remove(&self, text: &str, prune: Prune) -> Result<Option<String>, EditError> {
        let root = parse(Some(text))?;
        let Some(top) = root.object_value() else { return Ok(Some(text.to_owned())) };
        let Some(hooks) = child_object(&top, "hooks")? else { return Ok(Some(text.to_owned())) };
        let Some(array) = hooks.get(self.event).and_then(|p| p.array_value()) else {
            return Ok(Some(text.to_owned()));
        };
        let ours: Vec<CstNode> = array.elements().into_iter().filter(is_ours).collect();
        if ours.is_empty() {
            return Ok(Some(text.to_owned()));
        }
        ours.into_iter().for_each(CstNode::remove);
        if prune != Prune::Nothing && array.elements().is_empty() {
            if let Some(prop) = hooks.get(self.event) {
                prop.remove();
            }
            if hooks.properties().is_empty()
                && let Some(prop) = top.get("hooks")
            {
                prop.remove();
            }
        }
        Ok(finish(&root, &top, prune))
    }
}

/// Replaces an array element with `value`.
fn replace(node: CstNode, value: CstInputValue) {
    match node {
        CstNode::Container(container) => match container {
            jsonc_parser::cst::CstContainerNode::Object(o) => {
                o.replace_with(value);
            }
            jsonc_parser::cst::CstContainerNode::Array(a) => {
                a.replace_with(value);
            }
            _ => {}
        },
        CstNode::Leaf(_) => {}
    }
}

/// Whether a hook group runs [`HOOK_COMMAND`] (possibly with more flags).
fn is_ours(group: &CstNode) -> bool {
    let Some(Value::Object(group)) = group.to_serde_value() else { return false };
    let Some(Value::Array(hooks)) = group.get("hooks") else { return false };
    hooks.iter().any(|hook| {
        hook.get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| c == HOOK_COMMAND || c.starts_with(&format!("{HOOK_COMMAND} ")))
    })
}

/// Returns the command and arguments of the entry `name` in `container`
/// of a JSON configuration, for `--check`: `None` when it has none.
///
/// Errors: the file does not parse.
pub fn server_command(
    text: &str,
    container: &str,
    name: &str,
) -> Result<Option<(String, Vec<String>)>, EditError> {
    let root = parse(Some(text))?;
    let Some(top) = root.object_value() else { return Ok(None) };
    let Some(servers) = child_object(&top, container)? else { return Ok(None) };
    let Some(Value::Object(entry)) =
        servers.get(name).and_then(|p| p.value()).and_then(|v| v.to_serde_value())
    else {
        return Ok(None);
    };
    let Some(command) = entry.get("command").and_then(Value::as_str) else { return Ok(None) };
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    Ok(Some((command.to_owned(), args)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry() -> Entry {
        Entry {
            container: "mcpServers",
            name: "workmem",
            value: json!({"command": "workmem", "args": ["mcp"]}),
        }
    }

    #[test]
    fn an_entry_added_to_a_commented_file_is_removed_to_the_same_bytes() {
        let before = "{\n  // my servers\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"} // keep\n  },\n  \"theme\": \"dark\"\n}\n";
        let after = entry().apply(Some(before)).unwrap();
        assert!(after.contains("// my servers") && after.contains("// keep"), "{after}");
        assert!(after.contains("\"workmem\""), "{after}");
        assert_eq!(entry().apply(Some(&after)).unwrap(), after, "a re-run changes nothing");
        assert_eq!(entry().remove(&after, Prune::Nothing).unwrap().as_deref(), Some(before));
    }

    #[test]
    fn a_hook_group_is_added_next_to_the_users_and_removed_alone() {
        let hook = Hook {
            event: "SessionStart",
            group: json!({"matcher": "startup", "hooks": [{"type": "command", "command": HOOK_COMMAND}]}),
        };
        let before = "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]}\n    ]\n  }\n}\n";
        let after = hook.apply(Some(before)).unwrap();
        assert!(after.contains("echo hi") && after.contains(HOOK_COMMAND), "{after}");
        assert_eq!(hook.apply(Some(&after)).unwrap(), after);
        assert_eq!(hook.remove(&after, Prune::Nothing).unwrap().as_deref(), Some(before));
        let fresh = hook.apply(None).unwrap();
        assert_eq!(hook.remove(&fresh, Prune::File).unwrap(), None);
    }
}
