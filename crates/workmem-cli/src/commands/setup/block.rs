//! The managed block `setup` keeps in a client's instruction file
//! (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, `.github/copilot-instructions.md`,
//! Cursor's `.cursor/rules/workmem.mdc`): what the agent should do with the
//! project's memory, between two marker lines.
//!
//! The block is appended after the user's text with one newline before it
//! (a blank line when the file ends with a newline), replaced in place on
//! a re-run when its wording changed, and taken out with that newline on
//! `--remove`; the user's text around it is never touched.

use super::format::Prune;

/// The first line of every managed block (up to its end).
const BEGIN: &str = "<!-- workmem:begin";
/// The last line of every managed block.
const END: &str = "<!-- workmem:end -->";

/// The instructions, in the words of this project.
const INSTRUCTIONS: &str = "\
## Project memory (workmem)

This project keeps a durable memory of its decisions, conventions and
pitfalls, served by the `workmem` MCP server.

- Before asking the user about this project (how something is done here,
  why, what was decided), search the memory: `search_memory` with a few
  keywords, or `get_context` for the whole curated memory.
- When you learn something the next session would otherwise have to
  rediscover, write it with `write_memory`: one fact per call, one or two
  plain sentences, never a credential.
- Kinds: `decision` (a choice and its reason), `convention` (how things are
  done here), `pitfall` (what breaks and how to avoid it), `outcome` (what
  was tried and what came of it).
- Give a `memory_key` when the fact answers a question whose answer may
  change: lowercase words joined by `.`, `-` or `_` that name the question,
  not the answer (`runtime.python-version`, `db.migration-tool`). Reuse the
  key the memory already has for that question.
- Importance runs 1-5: 5 for what breaks the build or loses data when
  forgotten, 3 when unsure.
- A keyed fact becomes the project's value only after review; never decide
  a conflict yourself: when `list_conflicts` shows open cases, tell the user
  (`workmem review`).
";

/// A managed block and, for a file `setup` creates, what goes above it.
#[derive(Debug, Clone)]
pub struct Block {
    /// Text above the block in a new file (Cursor's rule front matter).
    pub header: &'static str,
    /// The whole block, marker lines included, ending with a newline.
    pub text: String,
}

impl Block {
    /// Returns the block of instructions with `header` for a new file.
    pub fn instructions(header: &'static str) -> Block {
        let text = format!(
            "{BEGIN} (written by `workmem setup`; `workmem setup --remove` takes it out) -->\n{INSTRUCTIONS}{END}\n"
        );
        Block { header, text }
    }

    /// Returns `text` with the block in it.
    pub fn apply(&self, text: Option<&str>) -> String {
        match text {
            None | Some("") => format!("{}{}", self.header, self.text),
            Some(text) => match span(text) {
                Some((start, end)) => format!("{}{}{}", &text[..start], self.text, &text[end..]),
                None => format!("{text}\n{}", self.text),
            },
        }
    }

    /// Returns `text` without the block and the newline `apply` put before
    /// it (`None`: nothing but the block and its header was left).
    pub fn remove(&self, text: &str, prune: Prune) -> Option<String> {
        let Some((mut start, end)) = span(text) else { return Some(text.to_owned()) };
        if start > 0 && text.as_bytes()[start - 1] == b'\n' {
            start -= 1;
        }
        let rest = format!("{}{}", &text[..start], &text[end..]);
        let only_header = rest.trim_end_matches('\n') == self.header.trim_end_matches('\n');
        if prune == Prune::File && only_header {
            return None;
        }
        Some(rest)
    }
}

/// Returns the byte range of the managed block in `text`: from the start
/// of its first marker line to the end of its last (newline included).
fn span(text: &str) -> Option<(usize, usize)> {
    let start = line_starting(text, BEGIN, 0)?;
    let end_line = line_starting(text, END, start)?;
    let end = text[end_line..].find('\n').map_or(text.len(), |i| end_line + i + 1);
    Some((start, end))
}

/// Returns the offset of the first line at or after `from` that starts
/// with `prefix`.
fn line_starting(text: &str, prefix: &str, from: usize) -> Option<usize> {
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        if line.starts_with(prefix) {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_comes_out_with_exactly_the_newline_it_brought() {
        let block = Block::instructions("");
        for before in ["# Notes\n", "# Notes", "# Notes\n\n", "a\n<!-- not ours -->\n"] {
            let after = block.apply(Some(before));
            assert_eq!(block.apply(Some(&after)), after, "re-run of {before:?}");
            assert_eq!(block.remove(&after, Prune::Nothing).as_deref(), Some(before));
        }
        let fresh = block.apply(None);
        assert_eq!(block.remove(&fresh, Prune::File), None);
        let rule = Block::instructions("---\nalwaysApply: true\n---\n\n");
        assert_eq!(rule.remove(&rule.apply(None), Prune::File), None);
    }
}
