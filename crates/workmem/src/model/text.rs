//! Which characters a stored or printed text may hold: no control
//! characters and no Unicode format characters, in every field, on append
//! and on read.

use unicode_segmentation::UnicodeSegmentation;

use crate::error::{Error, Invalid, Result};

/// Returns whether `c` is whitespace in Python's `str.isspace` sense.
pub(crate) fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Unicode format characters (general category Cf): bidi overrides and
/// isolates, zero-width characters, the byte order mark, tags and the like.
/// Sorted, inclusive ranges; a unit test checks that every character the
/// `regex` crate's Unicode tables call Cf is covered.
const FORMAT_CHARACTERS: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Returns whether `c` is refused in every stored or printed text field: a
/// control character (C0, DEL, C1) that is not whitespace, or a Unicode
/// format character (bidi overrides, zero-width characters, ...). Such
/// characters would reach terminals and prompts verbatim: an escape
/// sequence can retitle or clear a terminal, a bidi override can make text
/// read differently from what it is. Whitespace controls are not refused
/// here: content, actor and rationale collapse them, source and evidence
/// keys refuse them separately.
pub fn is_refused_char(c: char) -> bool {
    let code = u32::from(c);
    match code {
        0..=0x1F | 0x7F..=0x9F => !is_space(c),
        0x20..=0x7E | 0xA0..=0xAC => false,
        _ => FORMAT_CHARACTERS
            .binary_search_by(|&(start, end)| {
                if end < code {
                    std::cmp::Ordering::Less
                } else if start > code {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok(),
    }
}

/// Returns the first character of `text` that [`is_refused_char`] refuses.
/// The one validator of characters for every text field (content, source,
/// evidence, actor, rationale), on append and on read.
///
/// One exception: a zero-width joiner inside an emoji sequence (the
/// technologist emoji is woman, U+200D, laptop) joins two pictographs into
/// one, as the grapheme rules of Unicode's text segmentation (UAX 29, rule
/// GB11) say; there it is part of the character people typed, and allowed.
/// Everywhere else (between letters, at the end) it stays refused. The
/// secret guard folds it away either way.
pub(crate) fn refused_character(text: &str) -> Option<char> {
    // Printable ASCII is never refused: skip to the first other byte (a
    // char boundary, since every byte before it is ASCII).
    let start = text.bytes().position(|b| !(0x20..0x7F).contains(&b))?;
    let found = text[start..].chars().find(|&c| is_refused_char(c))?;
    if found != ZERO_WIDTH_JOINER {
        return Some(found);
    }
    // A joiner: look at each where it stands, grapheme by grapheme (the
    // start of the text is a grapheme boundary).
    text.graphemes(true).find_map(|grapheme| {
        let mut chars = grapheme.chars().peekable();
        while let Some(c) = chars.next() {
            if !is_refused_char(c) {
                continue;
            }
            if c != ZERO_WIDTH_JOINER {
                return Some(c);
            }
            match chars.peek() {
                Some(&next) if joins_pictographs(next) => {}
                _ => return Some(c),
            }
        }
        None
    })
}

/// U+200D ZERO WIDTH JOINER.
const ZERO_WIDTH_JOINER: char = '\u{200D}';

/// Returns whether a joiner that a grapheme cluster holds together with the
/// `next` character does so by the emoji rule (GB11): `next` is a
/// pictograph, which a joiner alone would not hold (a combining mark or
/// another joiner would be, by GB9, and stays refused).
fn joins_pictographs(next: char) -> bool {
    let mut pair = [0u8; 8];
    let len = ZERO_WIDTH_JOINER.encode_utf8(&mut pair).len();
    let len = len + next.encode_utf8(&mut pair[len..]).len();
    std::str::from_utf8(&pair[..len]).is_ok_and(|pair| pair.graphemes(true).count() == 2)
        && !is_refused_char(next)
}

/// Returns the first character of `text` that a stored text field refuses:
/// as [`is_refused_char`], but a zero-width joiner that joins an emoji
/// sequence is allowed. For a printer that must show stored text as it
/// was accepted.
pub fn first_refused_char(text: &str) -> Option<char> {
    refused_character(text)
}

/// Checks that `text`, the value of `field`, holds no character that
/// [`is_refused_char`] refuses.
///
/// Errors: [`Error::InvalidInput`] naming the field and the character's
/// code point (never the text).
pub(crate) fn check_text(field: &str, text: &str) -> Result<()> {
    match refused_character(text) {
        None => Ok(()),
        Some(c) => {
            Err(Error::invalid(field, Invalid::ControlCharacter { code_point: u32::from(c) }))
        }
    }
}

pub(crate) fn refused_message(c: char) -> String {
    Invalid::ControlCharacter { code_point: u32::from(c) }.to_string()
}

#[cfg(test)]
mod tests {
    use super::refused_character;

    #[test]
    fn a_joiner_is_allowed_only_inside_an_emoji_sequence() {
        let technologist = "woman technologist \u{1F469}\u{200D}\u{1F4BB} on call";
        assert_eq!(refused_character(technologist), None);
        // A family of four, and a skin tone before the joiner.
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}";
        assert_eq!(refused_character(family), None);
        assert_eq!(refused_character("\u{1F469}\u{1F3FD}\u{200D}\u{1F52C}"), None);
        for refused in [
            "pass\u{200D}word",
            "\u{200D}\u{1F4BB} first",
            "\u{1F469}\u{200D}",
            "\u{1F469}\u{200D} laptop",
            "\u{1F469}\u{200D}\u{200D}\u{1F4BB}",
            "\u{1F469}\u{200D}\u{0301}",
            "ok \u{1F469}\u{200D}\u{1F4BB} then pass\u{200D}word",
        ] {
            assert_eq!(refused_character(refused), Some('\u{200D}'), "{refused:?}");
        }
        // Another format character next to an emoji is still refused.
        assert_eq!(refused_character("\u{1F469}\u{200D}\u{1F4BB}\u{202E}"), Some('\u{202E}'));
    }
}
