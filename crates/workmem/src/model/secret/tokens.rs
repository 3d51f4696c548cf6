//! Provider token formats: credentials recognisable by their own shape
//! (a fixed prefix and a body of a known alphabet and length), wherever
//! they appear. Each format names the literals one of which every token
//! of it contains (its anchors); one pass over a text, through tables of
//! the anchors' first two bytes, tells which formats can occur, and only their
//! patterns are compiled (once per process, on first use), searched and
//! checked.
//! Compiling every pattern up front cost a process 5 ms, more than the
//! rest of a `remember`, for any text with a path or a long word in it.
//!
//! The patterns carry no boundary assertions, so that the regex engine can
//! use their literal prefixes to skip most of a text; the boundaries are
//! checked on each candidate instead. Left boundaries let `_`, `-` and
//! lowercase text touch an uppercase token (`prod_AKIA...`), and right
//! boundaries let a suffix such as `_prod` follow one.

use std::sync::OnceLock;

use regex::Regex;

use crate::model::secret::{PRIVATE_KEY, shape};

/// What may touch a token on one side.
#[derive(Debug, Clone, Copy)]
enum Edge {
    /// Anything.
    Any,
    /// Not an ASCII letter or digit.
    NotAlnum,
    /// Not an uppercase letter or digit (for all-uppercase tokens).
    NotUpperAlnum,
    /// Not a letter, digit, `_` or `-` (for tokens that contain them).
    NotWord,
    /// Not a character of a token or an encoded blob (a letter, a digit,
    /// `_ - . / +`): for short prefixes that base64 text and dotted names
    /// also hold (`EAAA`, `s.`).
    NotTokenChar,
}

impl Edge {
    fn allows(self, c: Option<u8>) -> bool {
        let Some(c) = c else { return true };
        match self {
            Edge::Any => true,
            Edge::NotAlnum => !c.is_ascii_alphanumeric(),
            Edge::NotUpperAlnum => !(c.is_ascii_uppercase() || c.is_ascii_digit()),
            Edge::NotWord => !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-'),
            Edge::NotTokenChar => {
                !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/' | b'+'))
            }
        }
    }
}

/// One token format.
struct Format {
    kind: &'static str,
    pattern: &'static str,
    /// Literals one of which every match of `pattern` contains (checked
    /// against the pattern's syntax by a test).
    anchors: &'static [&'static str],
    left: Edge,
    right: Edge,
    /// Length of the fixed prefix: the body that [`Check`] judges follows it.
    prefix: usize,
    check: Check,
}

/// What a candidate's body must look like beyond the pattern.
#[derive(Debug, Clone, Copy)]
enum Check {
    /// The pattern says it all.
    None,
    /// Not a mask (`ghp_xxxxxxxx...`).
    NotMasked,
    /// Generated-looking, see [`shape::token_body`].
    Generated,
    /// Random-looking, see [`shape::random_looking`]: for prefixes short
    /// or common enough that a long word could follow them.
    Random,
    /// Hex digits that are not all decimal digits.
    HexWithLetter,
    /// An Azure SAS signature: the text also carries the `sv=` version.
    SasVersion,
}

const fn format(
    kind: &'static str,
    pattern: &'static str,
    anchors: &'static [&'static str],
    left: Edge,
    right: Edge,
    prefix: usize,
    check: Check,
) -> Format {
    Format { kind, pattern, anchors, left, right, prefix, check }
}

use Check as C;
use Edge as E;

/// Every format, most specific first (`sk-ant-` before `sk-`).
const FORMATS: &[Format] = &[
    format(
        PRIVATE_KEY,
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----",
        &["-----BEGIN"],
        E::Any,
        E::Any,
        0,
        C::None,
    ),
    format(
        PRIVATE_KEY,
        r"PuTTY-User-Key-File-[0-9]+:",
        &["PuTTY-User-Key-File-"],
        E::NotAlnum,
        E::Any,
        0,
        C::None,
    ),
    format(
        "AWS access key",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
        &[
            "A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA",
            "APKA",
        ],
        E::NotUpperAlnum,
        E::NotUpperAlnum,
        4,
        C::NotMasked,
    ),
    format(
        "GitHub token",
        r"gh[pousr]_[A-Za-z0-9]{36,255}",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        E::NotAlnum,
        E::Any,
        4,
        C::NotMasked,
    ),
    format(
        "GitHub token",
        r"github_pat_[A-Za-z0-9_]{50,255}",
        &["github_pat_"],
        E::NotAlnum,
        E::Any,
        11,
        C::NotMasked,
    ),
    format(
        "GitLab token",
        r"gl(?:pat|ptt|dt|rt|cbt|oas|soat|ffct|ft|imt|agent|wt)-[A-Za-z0-9_.-]{20,}",
        &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glffct-",
            "glft-", "glimt-", "glagent-", "glwt-",
        ],
        E::NotAlnum,
        E::Any,
        0,
        C::Generated,
    ),
    format(
        "GitLab token",
        r"GR1348941[A-Za-z0-9_-]{20,}",
        &["GR1348941"],
        E::NotAlnum,
        E::Any,
        9,
        C::Generated,
    ),
    format(
        "Slack token",
        r"xox[abposre]-[0-9]{6,}-[A-Za-z0-9-]{8,}",
        &["xox"],
        E::NotAlnum,
        E::Any,
        5,
        C::NotMasked,
    ),
    format(
        "Slack token",
        r"xapp-[0-9]-[A-Za-z0-9-]{20,}",
        &["xapp-"],
        E::NotAlnum,
        E::Any,
        7,
        C::Generated,
    ),
    format(
        "Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
        &["hooks.slack.com/"],
        E::Any,
        E::Any,
        0,
        C::Generated,
    ),
    format(
        "Stripe key",
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        E::NotAlnum,
        E::Any,
        8,
        C::Generated,
    ),
    format(
        "Stripe key",
        r"whsec_[A-Za-z0-9+/]{24,}",
        &["whsec_"],
        E::NotAlnum,
        E::Any,
        6,
        C::Generated,
    ),
    format(
        "Anthropic API key",
        r"sk-ant-[A-Za-z0-9_-]{20,}",
        &["sk-ant-"],
        E::NotAlnum,
        E::Any,
        7,
        C::Generated,
    ),
    format(
        "OpenAI API key",
        r"sk-[A-Za-z0-9_-]{20,}",
        &["sk-"],
        E::NotAlnum,
        E::Any,
        3,
        C::Generated,
    ),
    format(
        "Google API key",
        r"AIza[0-9A-Za-z_-]{35}",
        &["AIza"],
        E::NotAlnum,
        E::NotAlnum,
        4,
        C::NotMasked,
    ),
    format(
        "Google OAuth client secret",
        r"GOCSPX-[A-Za-z0-9_-]{28}",
        &["GOCSPX-"],
        E::NotAlnum,
        E::Any,
        7,
        C::NotMasked,
    ),
    format(
        "Google OAuth token",
        r"ya29\.[0-9A-Za-z_-]{30,}",
        &["ya29."],
        E::NotAlnum,
        E::Any,
        5,
        C::Generated,
    ),
    format(
        "JSON Web Token",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        &["eyJ"],
        E::NotAlnum,
        E::Any,
        0,
        C::None,
    ),
    format(
        "npm token",
        r"npm_[A-Za-z0-9]{36}",
        &["npm_"],
        E::NotAlnum,
        E::NotAlnum,
        4,
        C::Generated,
    ),
    format(
        "Hugging Face token",
        r"hf_[A-Za-z0-9]{34,40}",
        &["hf_"],
        E::NotAlnum,
        E::NotAlnum,
        3,
        C::Generated,
    ),
    format(
        "Hugging Face token",
        r"api_org_[A-Za-z0-9]{34}",
        &["api_org_"],
        E::NotAlnum,
        E::NotAlnum,
        8,
        C::Generated,
    ),
    format(
        "SendGrid API key",
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        &["SG."],
        E::NotAlnum,
        E::NotAlnum,
        3,
        C::NotMasked,
    ),
    format(
        "Azure storage key",
        r"AccountKey[ \t]*=[ \t]*[A-Za-z0-9+/]{40,}={0,2}",
        &["AccountKey"],
        E::NotAlnum,
        E::Any,
        11,
        C::NotMasked,
    ),
    format(
        "Azure storage key",
        r"SharedAccessKey[ \t]*=[ \t]*[A-Za-z0-9+/]{30,}={0,2}",
        &["SharedAccessKey"],
        E::NotAlnum,
        E::Any,
        16,
        C::NotMasked,
    ),
    format(
        "Azure SAS token",
        r"sig=[A-Za-z0-9%+/]{40,}",
        &["sig="],
        E::NotAlnum,
        E::Any,
        4,
        C::SasVersion,
    ),
    format(
        "Azure AD client secret",
        r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        &["Q~"],
        E::NotWord,
        E::NotAlnum,
        0,
        C::None,
    ),
    format(
        "Twilio API key",
        r"SK[0-9a-fA-F]{32}",
        &["SK"],
        E::NotAlnum,
        E::NotAlnum,
        2,
        C::HexWithLetter,
    ),
    format(
        "DigitalOcean token",
        r"do[opr]_v1_[a-f0-9]{64}",
        &["doo_v1_", "dop_v1_", "dor_v1_"],
        E::NotAlnum,
        E::NotAlnum,
        7,
        C::NotMasked,
    ),
    format(
        "Shopify token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        E::NotAlnum,
        E::NotAlnum,
        6,
        C::NotMasked,
    ),
    format(
        "PyPI token",
        r"pypi-AgE[A-Za-z0-9_-]{50,}",
        &["pypi-AgE"],
        E::NotAlnum,
        E::Any,
        8,
        C::NotMasked,
    ),
    format(
        "Vault token",
        r"hv[sbr]\.[A-Za-z0-9_-]{24,}",
        &["hvs.", "hvb.", "hvr."],
        E::NotAlnum,
        E::Any,
        4,
        C::Generated,
    ),
    format(
        "Vault token",
        r"s\.[A-Za-z0-9]{24}",
        &["s."],
        E::NotTokenChar,
        E::NotWord,
        2,
        C::Random,
    ),
    format(
        "Telegram bot token",
        r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}",
        &[":AA"],
        E::NotAlnum,
        E::NotAlnum,
        0,
        C::None,
    ),
    format(
        "Discord webhook",
        r"discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{40,}",
        &["discord"],
        E::Any,
        E::Any,
        0,
        C::None,
    ),
    format(
        "Mailgun key",
        r"key-[0-9a-f]{32}",
        &["key-"],
        E::NotAlnum,
        E::NotAlnum,
        4,
        C::HexWithLetter,
    ),
    format(
        "Mailchimp key",
        r"[0-9a-f]{32}-us[0-9]{1,2}",
        &["-us"],
        E::NotAlnum,
        E::NotAlnum,
        0,
        C::None,
    ),
    format(
        "Databricks token",
        r"dapi[0-9a-f]{32}",
        &["dapi"],
        E::NotAlnum,
        E::NotAlnum,
        4,
        C::HexWithLetter,
    ),
    format(
        "age secret key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        &["AGE-SECRET-KEY-1"],
        E::NotAlnum,
        E::Any,
        16,
        C::NotMasked,
    ),
    format(
        "Postman API key",
        r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}",
        &["PMAK-"],
        E::NotAlnum,
        E::Any,
        5,
        C::None,
    ),
    format(
        "Grafana token",
        r"glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}",
        &["glsa_"],
        E::NotAlnum,
        E::Any,
        5,
        C::Generated,
    ),
    format(
        "Grafana token",
        r"glc_[A-Za-z0-9+/]{32,}={0,2}",
        &["glc_"],
        E::NotAlnum,
        E::Any,
        4,
        C::Generated,
    ),
    format(
        "Sentry token",
        r"sntry[su]_[A-Za-z0-9+/=_-]{40,}",
        &["sntrys_", "sntryu_"],
        E::NotAlnum,
        E::Any,
        6,
        C::Generated,
    ),
    format(
        "Linear API key",
        r"lin_api_[A-Za-z0-9]{40}",
        &["lin_api_"],
        E::NotAlnum,
        E::NotAlnum,
        8,
        C::Generated,
    ),
    format(
        "Notion token",
        r"ntn_[A-Za-z0-9]{40,}",
        &["ntn_"],
        E::NotAlnum,
        E::Any,
        4,
        C::Generated,
    ),
    format(
        "Notion token",
        r"secret_[A-Za-z0-9]{43}",
        &["secret_"],
        E::NotAlnum,
        E::NotAlnum,
        7,
        C::Random,
    ),
    format(
        "Atlassian API token",
        r"(?:ATATT3|ATBB)[A-Za-z0-9_=.-]{32,}",
        &["ATATT3", "ATBB"],
        E::NotAlnum,
        E::Any,
        4,
        C::Generated,
    ),
    format(
        "Doppler token",
        r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
        &["dp."],
        E::NotAlnum,
        E::Any,
        6,
        C::Generated,
    ),
    format(
        "Square token",
        r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}",
        &["sq0atp-", "sq0csp-"],
        E::NotAlnum,
        E::Any,
        7,
        C::Generated,
    ),
    format(
        "Square token",
        r"EAAA[A-Za-z0-9_-]{40,}",
        &["EAAA"],
        E::NotTokenChar,
        E::NotWord,
        4,
        C::Random,
    ),
    format(
        "Heroku API key",
        r"HRKU-[A-Za-z0-9_-]{60}",
        &["HRKU-"],
        E::NotAlnum,
        E::Any,
        5,
        C::Generated,
    ),
    format(
        "New Relic key",
        r"NRAK-[A-Z0-9]{27}",
        &["NRAK-"],
        E::NotAlnum,
        E::NotAlnum,
        5,
        C::NotMasked,
    ),
    format(
        "Supabase token",
        r"sbp_[a-f0-9]{40}",
        &["sbp_"],
        E::NotAlnum,
        E::NotAlnum,
        4,
        C::NotMasked,
    ),
];

/// Each format's pattern, compiled when a text first holds its anchor.
static PATTERNS: [OnceLock<Regex>; FORMATS.len()] = [const { OnceLock::new() }; FORMATS.len()];

fn pattern(index: usize) -> &'static Regex {
    PATTERNS[index]
        .get_or_init(|| Regex::new(FORMATS[index].pattern).expect("token patterns are valid"))
}

// One bit per format in [`candidates`].
const _: () = assert!(FORMATS.len() <= 64);

/// For each byte, the formats with an anchor whose byte `at` it is, a bit
/// each (every anchor has two bytes or more).
const fn anchor_bytes(at: usize) -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut format = 0;
    while format < FORMATS.len() {
        let anchors = FORMATS[format].anchors;
        let mut anchor = 0;
        while anchor < anchors.len() {
            table[anchors[anchor].as_bytes()[at] as usize] |= 1 << format;
            anchor += 1;
        }
        format += 1;
    }
    table
}

/// The formats by their anchors' first and second bytes: built by the
/// compiler, so a process pays nothing to look for anchors (an automaton
/// of them cost 0.1-0.17 ms to build).
const FIRST_BYTE: [u64; 256] = anchor_bytes(0);
const SECOND_BYTE: [u64; 256] = anchor_bytes(1);

/// Returns, as a bit set, the formats whose anchors occur in `text`.
fn candidates(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut found = 0u64;
    for (at, pair) in bytes.windows(2).enumerate() {
        let mut maybe =
            FIRST_BYTE[usize::from(pair[0])] & SECOND_BYTE[usize::from(pair[1])] & !found;
        while maybe != 0 {
            let format = maybe.trailing_zeros() as usize;
            maybe &= maybe - 1;
            if FORMATS[format]
                .anchors
                .iter()
                .any(|anchor| bytes[at..].starts_with(anchor.as_bytes()))
                && anchored_edge(format, bytes, at)
            {
                found |= 1 << format;
            }
        }
    }
    found
}

/// Returns whether an anchor of `format` at `at` can begin a token: the
/// formats whose short anchors open every match (`s.`, `EAAA`) must have
/// their left edge there, so that `tests.` or `docs.` in a text compiles
/// and searches nothing.
fn anchored_edge(format: usize, bytes: &[u8], at: usize) -> bool {
    let left = FORMATS[format].left;
    !matches!(left, Edge::NotTokenChar) || left.allows(at.checked_sub(1).map(|i| bytes[i]))
}

/// Returns the kinds of every format.
pub(super) fn kinds() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|f| f.kind)
}

/// Returns whether a provider token can occur in `text`: every format
/// holds a run of at least 16 characters of the token alphabets
/// (`A-Z a-z 0-9 _ - . + / = ~ %`), or a PEM dash line. Most prose has no
/// such run, and skips the regex search.
pub(super) fn may_occur(text: &str) -> bool {
    let mut run = 0;
    for b in text.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'_' | b'-' | b'.' | b'+' | b'/' | b'=' | b'~' | b'%')
        {
            run += 1;
            if run >= 16 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    memchr::memmem::find(text.as_bytes(), b"-----").is_some()
}

/// Returns the kind of the first provider token in `text`, if any.
pub(super) fn find(text: &str) -> Option<&'static str> {
    let set = candidates(text);
    (0..FORMATS.len()).filter(|index| set & 1 << index != 0).find_map(|index| {
        let format = &FORMATS[index];
        let bytes = text.as_bytes();
        let mut start = 0;
        while let Some(m) = pattern(index).find_at(text, start) {
            let before = m.start().checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(m.end()).copied();
            if format.left.allows(before)
                && format.right.allows(after)
                && passes(format, m.as_str().get(format.prefix..).unwrap_or_default(), text)
            {
                return Some(format.kind);
            }
            // Try again one character on: a rejected candidate must not
            // hide an overlapping one.
            start = m.start() + 1;
            while !text.is_char_boundary(start) {
                start += 1;
            }
        }
        None
    })
}

fn passes(format: &Format, body: &str, text: &str) -> bool {
    match format.check {
        Check::None => true,
        Check::NotMasked => !shape::masked(body),
        Check::Generated => shape::token_body(body),
        Check::Random => shape::random_looking(body),
        Check::HexWithLetter => body.bytes().any(|b| b.is_ascii_alphabetic()),
        Check::SasVersion => text.contains("sv=") && !shape::masked(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_lets_every_format_through() {
        assert!(may_occur("-----BEGIN RSA PRIVATE KEY-----"));
        assert!(may_occur("PuTTY-User-Key-File-3: ssh-rsa"));
        assert!(!may_occur("Run the migrations before the integration tests."));
    }

    #[test]
    fn every_pattern_compiles_and_has_a_kind() {
        for index in 0..FORMATS.len() {
            pattern(index);
        }
        assert!(FORMATS.iter().all(|f| !f.kind.is_empty() && !f.anchors.is_empty()));
    }

    /// Sound anchors: every match of a pattern begins with one of the
    /// literals its syntax says a match begins with, or holds a literal
    /// that its top-level sequence requires; each of those must hold an
    /// anchor.
    #[test]
    fn every_match_of_a_pattern_holds_one_of_its_anchors() {
        use regex_syntax::hir::HirKind;
        use regex_syntax::hir::literal::{ExtractKind, Extractor};
        for format in FORMATS {
            let hir = regex_syntax::parse(format.pattern).expect("token patterns parse");
            let anchored = |literal: &[u8]| {
                format.anchors.iter().any(|a| memchr::memmem::find(literal, a.as_bytes()).is_some())
            };
            let prefixes = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
            let by_prefix = prefixes.literals().is_some_and(|literals| {
                !literals.is_empty() && literals.iter().all(|l| anchored(l.as_bytes()))
            });
            let by_part = matches!(hir.kind(), HirKind::Concat(parts) if parts.iter().any(
                |part| matches!(part.kind(), HirKind::Literal(l) if anchored(&l.0))
            ));
            assert!(
                by_prefix || by_part,
                "{}: {:?} proves none of {:?}",
                format.kind,
                prefixes,
                format.anchors
            );
        }
    }

    /// The first-byte table finds exactly the formats whose anchors a text
    /// holds, anywhere in it, several at once.
    #[test]
    fn candidates_are_the_formats_whose_anchors_occur() {
        let corpus = [
            include_str!("../../../tests/fixtures/secret/ordinary-prose.txt"),
            include_str!("../../../tests/fixtures/secret/ordinary-code.txt"),
            include_str!("../../../tests/fixtures/secret/engineering-prose.txt"),
        ];
        let every_anchor: String =
            FORMATS.iter().flat_map(|f| f.anchors).copied().collect::<Vec<_>>().join(" ");
        let texts = corpus.iter().flat_map(|c| c.lines()).chain([
            every_anchor.as_str(),
            "sk-ant-x then sk-y and ghp_ at the end: ghp_",
            "AKIAAKIA xoxb- Q~ -us",
        ]);
        let mut seen = 0u64;
        for text in texts {
            let expected = FORMATS.iter().enumerate().fold(0u64, |set, (index, f)| {
                let holds = f.anchors.iter().any(|anchor| {
                    text.match_indices(anchor)
                        .any(|(at, _)| anchored_edge(index, text.as_bytes(), at))
                });
                set | u64::from(holds) << index
            });
            assert_eq!(candidates(text), expected, "{text}");
            seen |= expected;
        }
        assert_eq!(seen.count_ones() as usize, FORMATS.len());
    }

    /// Paths, keys and hyphenated words pass the gate of a long run but
    /// name no format: nothing is compiled for them.
    #[test]
    fn ordinary_long_runs_name_no_format() {
        for text in [
            "src/store/fact_log.rs",
            "runtime.python-version",
            "hello-there-note and docs/design.md",
            "crates/workmem-cli/src/cli.rs --all-targets",
        ] {
            assert!(may_occur(text), "{text}");
            assert_eq!(candidates(text), 0, "{text}");
        }
        assert_ne!(candidates("token ghp_0123"), 0);
    }

    #[test]
    fn edges_let_a_suffix_touch_an_uppercase_token() {
        let key = format!("AKIA{}", "Q7RZ4MX2BN5KPL3W");
        assert_eq!(find(&format!("{key}_prod")), Some("AWS access key"));
        assert_eq!(find(&format!("prod{key}")), Some("AWS access key"));
        assert_eq!(find(&format!("X{key}")), None);
        assert_eq!(find(&format!("{key}9")), None);
    }

    #[test]
    fn css_classes_are_not_keys() {
        assert_eq!(find("<div class=\"sk-folding-cube sk-folding-cube-angle-rotation\">"), None);
        assert_eq!(find("task-queue-worker-priority-high"), None);
    }

    #[test]
    fn legacy_notion_square_and_vault_forms_are_tokens() {
        let body = "k7Qm2Xv9Lp4Rt8Zw3Nb6Hc1D";
        let notion = format!("secret_{body}{}", &body[..19]);
        assert_eq!(find(&notion), Some("Notion token"));
        assert_eq!(find(&format!("Authorization: {notion}")), Some("Notion token"));
        assert_eq!(find("secret_key_base_for_the_rails_application_12"), None);
        let square = format!("EAAA{body}{body}{}", &body[..12]);
        assert_eq!(find(&square), Some("Square token"));
        assert_eq!(find(&format!("ssh-rsa AAAAB3NzaC1yc2{square}")), None);
        assert_eq!(find(&format!("blob/{square}")), None);
        let vault = format!("s.{body}");
        assert_eq!(find(&format!("VAULT_TOKEN={vault}")), Some("Vault token"));
        assert_eq!(find(&format!("login with {vault}.")), Some("Vault token"));
        assert_eq!(find(&format!("items.{body}")), None);
        assert_eq!(find(&format!("{vault}x")), None);
        assert_eq!(find("see the docs.internationalizationsupport page"), None);
    }
}
