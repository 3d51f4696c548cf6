//! Codex's TOML configuration (`.codex/config.toml`, `~/.codex/config.toml`):
//! the `[mcp_servers.workmem]` table and the approval of `write_memory`
//! that non-interactive runs (`codex exec`) need, edited with `toml_edit`
//! so the user's comments, order and formatting stay as they were.

use toml_edit::{DocumentMut, Item, Table, Value, value};

use super::format::{EditError, Prune};

/// The server's name in `mcp_servers`.
const NAME: &str = "workmem";
/// The tool that writes, which Codex refuses in `codex exec` unless approved.
pub const WRITE_TOOL: &str = "write_memory";

/// The `[mcp_servers.workmem]` table with the write tool approved.
#[derive(Debug, Clone)]
pub struct CodexServer {
    /// The command Codex starts.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
}

fn parse(text: &str) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>().map_err(|err| {
        let line = err.span().map_or(1, |span| text[..span.start].matches('\n').count() + 1);
        let message = err.message().trim_end().to_owned();
        EditError::Parse { line, message }
    })
}

/// Returns the table under `key` of `table`, creating it implicit (no
/// header line of its own) when missing.
fn table_mut<'a>(table: &'a mut Table, key: &str, path: &str) -> Result<&'a mut Table, EditError> {
    let item = table.entry(key).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    item.as_table_mut().ok_or_else(|| EditError::Shape(format!("`{path}` is not a table")))
}

impl CodexServer {
    /// Whether `doc` already says what this server says.
    fn in_place(&self, doc: &DocumentMut) -> bool {
        let Some(server) = doc.get("mcp_servers").and_then(|s| s.get(NAME)) else { return false };
        let args: Option<Vec<&str>> = server
            .get("args")
            .and_then(Item::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect());
        server.get("command").and_then(Item::as_str) == Some(self.command.as_str())
            && args == Some(self.args.iter().map(String::as_str).collect())
            && server
                .get("tools")
                .and_then(|t| t.get(WRITE_TOOL))
                .and_then(|t| t.get("approval_mode"))
                .and_then(Item::as_str)
                == Some("approve")
    }

    /// Returns `text` with the server table and the approval set.
    pub fn apply(&self, text: Option<&str>) -> Result<String, EditError> {
        let text = text.unwrap_or("");
        let mut doc = parse(text)?;
        if self.in_place(&doc) {
            return Ok(text.to_owned());
        }
        let servers = table_mut(doc.as_table_mut(), "mcp_servers", "mcp_servers")?;
        let server = servers.entry(NAME).or_insert_with(|| Item::Table(Table::new()));
        let server = server
            .as_table_mut()
            .ok_or_else(|| EditError::Shape(format!("`mcp_servers.{NAME}` is not a table")))?;
        server["command"] = value(self.command.as_str());
        server["args"] = value(self.args.iter().map(String::as_str).collect::<toml_edit::Array>());
        let tools = table_mut(server, "tools", "mcp_servers.workmem.tools")?;
        let tool = tools.entry(WRITE_TOOL).or_insert_with(|| Item::Table(Table::new()));
        let tool = tool.as_table_mut().ok_or_else(|| {
            EditError::Shape(format!("`mcp_servers.{NAME}.tools.{WRITE_TOOL}` is not a table"))
        })?;
        tool["approval_mode"] = value("approve");
        Ok(doc.to_string())
    }

    /// Returns `text` without the server table (`None`: nothing would be
    /// left of the file), pruning what it leaves empty as `prune` says.
    pub fn remove(&self, text: &str, prune: Prune) -> Result<Option<String>, EditError> {
        let mut doc = parse(text)?;
        let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) else {
            return Ok(Some(text.to_owned()));
        };
        if servers.remove(NAME).is_none() {
            return Ok(Some(text.to_owned()));
        }
        if prune != Prune::Nothing && servers.is_empty() && servers.is_implicit() {
            doc.remove("mcp_servers");
        }
        if prune == Prune::File
            && doc.is_empty()
            && doc.trailing().as_str().is_none_or(|t| t.trim().is_empty())
        {
            return Ok(None);
        }
        Ok(Some(doc.to_string()))
    }
}

/// Returns the command and arguments of `[mcp_servers.workmem]`, for
/// `--check`: `None` when there is no such table.
///
/// Errors: the file does not parse.
pub fn server_command(text: &str) -> Result<Option<(String, Vec<String>)>, EditError> {
    let doc = parse(text)?;
    let Some(server) = doc.get("mcp_servers").and_then(|s| s.get(NAME)) else { return Ok(None) };
    let Some(command) = server.get("command").and_then(Item::as_str) else { return Ok(None) };
    let args = server
        .get("args")
        .and_then(Item::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    Ok(Some((command.to_owned(), args)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> CodexServer {
        CodexServer { command: "workmem".to_owned(), args: vec!["mcp".to_owned()] }
    }

    #[test]
    fn the_table_comes_out_leaving_the_users_comments_and_tables() {
        for before in [
            "",
            "# my settings\nmodel = \"o3\" # fast\n",
            "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # mine\n",
        ] {
            let after = server().apply(Some(before)).unwrap();
            assert!(after.contains("[mcp_servers.workmem]"), "{after}");
            assert!(after.contains("approval_mode = \"approve\""), "{after}");
            assert_eq!(server().apply(Some(&after)).unwrap(), after, "re-run of {before:?}");
            let back = server().remove(&after, Prune::Containers).unwrap();
            assert_eq!(back.as_deref(), Some(before), "{after}");
        }
    }
}
