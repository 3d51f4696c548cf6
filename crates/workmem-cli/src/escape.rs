//! The escaping of text for a terminal: every line `workmem` prints as
//! text, results and errors alike, goes through [`escape_controls`], so a
//! hostile memory directory cannot retitle, clear or reorder a terminal.
//! It knows nothing of what is printed or where.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Returns whether `c` must not reach a terminal raw: what the library
/// refuses in stored text ([`workmem::is_refused_char`]) plus the
/// whitespace controls other than newline and tab (a carriage return or a
/// form feed can still overwrite or clear what was printed).
fn must_escape(c: char) -> bool {
    workmem::is_refused_char(c) || (c.is_control() && c != '\n' && c != '\t')
}

/// Returns `text` with every character that [`must_escape`] names written
/// as `\u{XXXX}`; borrowed when nothing needed escaping (the usual case).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    // Printable ASCII, newlines and tabs (most output) need no escape.
    if text.bytes().all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t')) {
        return Cow::Borrowed(text);
    }
    let Some(start) = text.find(must_escape) else { return Cow::Borrowed(text) };
    if text.contains(ZERO_WIDTH_JOINER) {
        return Cow::Owned(escape_by_grapheme(text));
    }
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..start]);
    for c in text[start..].chars() {
        if must_escape(c) {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// U+200D ZERO WIDTH JOINER.
const ZERO_WIDTH_JOINER: char = '\u{200D}';

/// Escapes `text` as [`escape_controls`] does, one grapheme at a time: a
/// zero-width joiner inside an emoji sequence (woman, U+200D, laptop) is
/// printed as it was accepted, one anywhere else is escaped.
fn escape_by_grapheme(text: &str) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let mut out = String::with_capacity(text.len() + 16);
    for grapheme in text.graphemes(true) {
        let joined =
            grapheme.contains(ZERO_WIDTH_JOINER) && workmem::first_refused_char(grapheme).is_none();
        for c in grapheme.chars() {
            if must_escape(c) && !(joined && c == ZERO_WIDTH_JOINER) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            } else {
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn an_emoji_sequence_prints_whole_and_a_stray_joiner_is_escaped() {
        let technologist = "on call: \u{1F469}\u{200D}\u{1F4BB}";
        assert_eq!(escape_controls(technologist), technologist);
        assert_eq!(
            escape_controls("pass\u{200D}word \u{1F469}\u{200D}\u{1F4BB}\u{1b}"),
            "pass\\u{200d}word \u{1F469}\u{200D}\u{1F4BB}\\u{1b}"
        );
    }

    #[test]
    fn escapes_controls_and_format_characters_but_not_newlines_or_tabs() {
        assert_eq!(escape_controls("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            escape_controls("a\u{1b}]0;pwned\u{7}b\rc\u{9b}d\u{202e}e\u{200b}f"),
            "a\\u{1b}]0;pwned\\u{7}b\\u{d}c\\u{9b}d\\u{202e}e\\u{200b}f"
        );
    }
}
