//! The text the detectors see: format characters removed, NFKC, and
//! look-alike characters folded to the Latin letters and digits they
//! imitate, so that one zero-width space, a soft hyphen, a fullwidth A
//! (U+FF21) or a Cyrillic r (U+0440) cannot hide a credential.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use crate::model::text::is_refused_char;

/// Returns `text` as the detectors see it.
///
/// 1. Control and Unicode format characters (general category Cf: zero-width
///    space and joiners, soft hyphen, bidi controls, tags, ...) are removed,
///    except whitespace.
/// 2. NFKC: fullwidth and other compatibility forms become their ordinary
///    characters (fullwidth AKIA, U+FF21 U+FF2B U+FF29 U+FF21, is `AKIA`;
///    a no-break space is a space).
/// 3. Each remaining non-ASCII character whose confusable prototype (the
///    Unicode confusables data, UTS #39 skeleton) is ASCII becomes that
///    prototype: Cyrillic a (U+0430) and Greek omicron (U+03BF) become `a`
///    and `o`, a non-breaking hyphen `-`. Default-ignorable characters
///    disappear.
///    ASCII is never changed (the skeleton would map `0` to `O` and `1` to
///    `l`, which would break the shape of every token).
/// 4. An escaped quote (`\"`) becomes a quote, so JSON pasted inside a
///    JSON string reads as JSON.
///
/// Plain printable ASCII without escaped quotes, most text, is returned
/// as is without a copy.
pub fn normalize(text: &str) -> Cow<'_, str> {
    let plain = text.bytes().all(|b| (0x20..0x7F).contains(&b) || matches!(b, b'\n' | b'\t'));
    let escaped = memchr::memchr(b'\\', text.as_bytes()).is_some();
    if plain && !escaped {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    if plain {
        out.push_str(text);
    } else {
        // Format characters go before NFKC: between two characters they
        // would otherwise stop a composition.
        let kept = text.chars().filter(|&c| !is_refused_char(c));
        for c in kept.nfkc() {
            if c.is_ascii() {
                out.push(c);
            } else {
                fold(c, &mut out);
            }
        }
    }
    if escaped {
        out = out.replace("\\\"", "\"").replace("\\'", "'");
    }
    Cow::Owned(out)
}

/// Pushes the ASCII prototype of `c` when it has one, else `c` itself.
fn fold(c: char, out: &mut String) {
    // Ideographs and the scripts of East Asia are the bulk of non-Latin
    // text and have no ASCII prototype worth folding; skip the lookup.
    if matches!(u32::from(c), 0x3040..=0x9FFF | 0xAC00..=0xD7AF) {
        out.push(c);
        return;
    }
    let mut buffer = [0u8; 4];
    let start = out.len();
    for p in unicode_security::skeleton(c.encode_utf8(&mut buffer)) {
        if !p.is_ascii() {
            out.truncate(start);
            out.push(c);
            return;
        }
        // The prototype of every vertical stroke (`I`, `l`, `1`, Greek
        // iota U+0399, Cyrillic U+0406) is `l`; a capital look-alike
        // stands for `I`.
        out.push(if p == 'l' && c.is_uppercase() { 'I' } else { p });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_borrowed_and_unchanged() {
        let text = "password=hunter2 0O1l";
        assert!(matches!(normalize(text), Cow::Borrowed(_)));
        assert_eq!(normalize(text), text);
    }

    #[test]
    fn format_characters_fullwidth_and_look_alikes_are_undone() {
        // Zero-width space, soft hyphen, word joiner inside a word.
        assert_eq!(normalize("pass\u{200B}wo\u{00AD}r\u{2060}d"), "password");
        // Fullwidth letters and digits.
        assert_eq!(normalize("\u{FF21}\u{FF2B}\u{FF29}\u{FF21}\u{FF10}"), "AKIA0");
        // Cyrillic a, o, p, e, c and Greek omicron.
        assert_eq!(normalize("\u{0440}\u{0430}ssw\u{043E}rd"), "password");
        assert_eq!(normalize("s\u{0435}\u{0441}r\u{0435}t t\u{03BF}ken"), "secret token");
        // Capital iotas stand for I, not l.
        assert_eq!(normalize("\u{0391}K\u{0399}A \u{0399}\u{0456}"), "AKIA Ii");
        // A no-break space and a non-breaking hyphen.
        assert_eq!(normalize("a\u{00A0}b\u{2011}c"), "a b-c");
        // Letters with accents and ideographs stay.
        assert_eq!(normalize("caf\u{00E9} \u{5BC6}\u{7801}"), "caf\u{00E9} \u{5BC6}\u{7801}");
    }

    #[test]
    fn escaped_quotes_read_as_quotes() {
        assert_eq!(normalize(r#"{\"password\": \"x\"}"#), r#"{"password": "x"}"#);
    }
}
