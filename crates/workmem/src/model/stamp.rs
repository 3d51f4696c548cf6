//! Timestamps as docs/format.md writes them.
//!
//! A [`Stamp`] keeps the string read from disk verbatim (ids and hashes
//! depend on it) next to the parsed instant, which every ordering decision
//! uses. New stamps are written like Python's `datetime.isoformat()` in UTC
//! with a `Z` suffix: no fraction when the microseconds are zero, else six
//! digits.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::StampError;

/// An RFC 3339 instant with its original text.
#[derive(Clone, Debug)]
pub struct Stamp {
    text: Box<str>,
    at: Timestamp,
}

impl Stamp {
    /// Returns the stamp for `at`, truncated to microseconds and written in
    /// the Python-compatible UTC form.
    pub fn from_timestamp(at: Timestamp) -> Stamp {
        let micros = at.as_microsecond();
        // Microsecond precision is what the Python implementation can store.
        let at = Timestamp::from_microsecond(micros).unwrap_or(at);
        let mut text = String::with_capacity(27);
        push_utc(at, &mut text);
        Stamp { text: text.into_boxed_str(), at }
    }

    /// Parses an RFC 3339 instant with an explicit offset, keeping `text`
    /// verbatim.
    ///
    /// Errors: [`StampError`] saying what is wrong with the text.
    pub fn parse(text: &str) -> Result<Stamp, StampError> {
        let at = parse_instant(text)?;
        Ok(Stamp { text: text.into(), at })
    }

    /// Returns the stamp of `text`, already parsed as `at` by
    /// [`parse_instant`].
    pub(crate) fn from_parts(text: &str, at: Timestamp) -> Stamp {
        Stamp { text: text.into(), at }
    }

    /// Parses any RFC 3339 instant (any offset) and returns it normalised to
    /// the UTC form new records use.
    ///
    /// Errors: as [`Stamp::parse`].
    pub fn parse_normalized(text: &str) -> Result<Stamp, StampError> {
        Ok(Stamp::from_timestamp(parse_instant(text)?))
    }

    /// Returns the text as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Returns the instant.
    pub fn instant(&self) -> Timestamp {
        self.at
    }

    /// Returns the UTC calendar date as `YYYY-MM-DD`.
    pub fn utc_day(&self) -> String {
        // Texts in the UTC `Z` form start with their UTC date.
        if self.text.ends_with('Z') && self.text.len() >= 10 && self.text.is_char_boundary(10) {
            return self.text[..10].to_owned();
        }
        self.at.strftime("%Y-%m-%d").to_string()
    }
}

/// Parses an RFC 3339 instant with an explicit offset.
pub(crate) fn parse_instant(text: &str) -> Result<Timestamp, StampError> {
    match parse_utc_seconds(text.as_bytes()) {
        Some(at) => Ok(at),
        None => parse_rfc3339(text),
    }
}

/// [`parse_instant`] through jiff's parser, for any text.
fn parse_rfc3339(text: &str) -> Result<Timestamp, StampError> {
    // RFC 3339 needs a date, a 'T' and an explicit offset; jiff's parser is
    // more lenient, so the shape is checked first.
    let bytes = text.as_bytes();
    let shaped = bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && matches!(bytes[10], b'T' | b't')
        && (bytes.ends_with(b"Z")
            || bytes.ends_with(b"z")
            || bytes[bytes.len() - 6..].starts_with(b"+")
            || bytes[bytes.len() - 6..].starts_with(b"-"));
    if !shaped {
        return Err(StampError::NotRfc3339);
    }
    // RFC 3339 offsets are -23:59 ..= +23:59; jiff also takes +25:00.
    if !bytes.ends_with(b"Z") && !bytes.ends_with(b"z") {
        let offset = &text[text.len() - 6..];
        let field =
            |range: std::ops::Range<usize>| offset.get(range).and_then(|d| d.parse::<u8>().ok());
        let valid = offset.as_bytes()[3] == b':'
            && field(1..3).is_some_and(|hours| hours <= 23)
            && field(4..6).is_some_and(|minutes| minutes <= 59);
        if !valid {
            return Err(StampError::BadOffset);
        }
    }
    let at = Timestamp::from_str(text).map_err(|_| {
        // A valid date and time whose instant jiff cannot represent (late on
        // 9999-12-31 in UTC) is out of range, not malformed.
        let civil = &text
            [..text.len() - if bytes.ends_with(b"Z") || bytes.ends_with(b"z") { 1 } else { 6 }];
        if jiff::civil::DateTime::from_str(civil).is_ok() {
            out_of_range()
        } else {
            StampError::Invalid
        }
    })?;
    if !(Timestamp::from_second(FIRST_SECOND).unwrap_or(Timestamp::MIN)..=Timestamp::MAX)
        .contains(&at)
    {
        return Err(out_of_range());
    }
    Ok(at)
}

/// Reads the common `YYYY-MM-DDTHH:MM:SSZ` (years 1 to 9998, seconds
/// 0-59) without jiff's parser; `None` for any other text, which
/// [`parse_instant`] then reads the long way (same result: a unit test
/// compares them).
pub(crate) fn parse_utc_seconds(b: &[u8]) -> Option<Timestamp> {
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || b[19] != b'Z' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        b[range]
            .iter()
            .try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1..=9998).contains(&year) || !(1..=month_days).contains(&day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard
    // Hinnant's `days_from_civil`).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Timestamp::from_second(days * 86_400 + hour * 3_600 + minute * 60 + second).ok()
}

/// 0001-01-01T00:00:00Z, the earliest instant Python stores.
const FIRST_SECOND: i64 = -62_135_596_800;

fn out_of_range() -> StampError {
    StampError::OutOfRange { latest: Stamp::from_timestamp(Timestamp::MAX).as_str().to_owned() }
}

impl PartialEq for Stamp {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.text == other.text
    }
}

impl Eq for Stamp {}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Stamp {
    /// Orders by instant; equal instants written differently are ordered by
    /// text so the order stays total and deterministic.
    fn cmp(&self, other: &Self) -> Ordering {
        self.at.cmp(&other.at).then_with(|| self.text.cmp(&other.text))
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Stamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Stamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Appends the UTC form of `at` to `out`: `YYYY-MM-DDTHH:MM:SS` with the
/// microseconds (six digits) when there are any, then `Z`, as Python's
/// `isoformat()` writes it; the fraction counts forward from the civil
/// second, before 1970 too. Digits written in place: every `remember`
/// takes a stamp (through `strftime` it was a fifth of an append's time
/// outside the kernel), and a whole-log distill writes one for most facts
/// into its cache.
pub(crate) fn push_utc(at: Timestamp, out: &mut String) {
    let micros = at.as_microsecond();
    let (seconds, fraction) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) =
        (second_of_day / 3_600, second_of_day % 3_600 / 60, second_of_day % 60);
    if !(0..=9_999).contains(&year) {
        let _ = fmt::Write::write_fmt(
            out,
            format_args!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}"),
        );
        if fraction != 0 {
            let _ = fmt::Write::write_fmt(out, format_args!(".{fraction:06}"));
        }
        out.push('Z');
        return;
    }
    let mut text = *b"0000-00-00T00:00:00.000000Z";
    let fields = [
        (0, year, 4),
        (5, month, 2),
        (8, day, 2),
        (11, hour, 2),
        (14, minute, 2),
        (17, second, 2),
        (20, fraction, 6),
    ];
    for (at, value, width) in fields {
        let mut value = value;
        for digit in text[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    let text = if fraction == 0 { &text[..19] } else { &text[..26] };
    out.push_str(std::str::from_utf8(text).unwrap_or_default());
    out.push('Z');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The UTC form written digit by digit is what `strftime` writes
        /// of the civil time, whole seconds and fractions alike, across
        /// every year an instant can have.
        #[test]
        fn push_utc_agrees_with_strftime(
            seconds in prop_oneof![
                -377_705_116_800i64..253_402_207_200,
                -62_167_219_200i64..253_402_300_800,
                1_500_000_000i64..2_000_000_000,
            ],
            micros in prop_oneof![Just(0i32), 0i32..1_000_000, Just(999_999)],
        ) {
            let at = Timestamp::new(seconds, micros * 1000).unwrap();
            let time = jiff::tz::Offset::UTC.to_datetime(at);
            let base = time.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            let expected = match time.subsec_nanosecond() / 1000 {
                0 => format!("{base}Z"),
                fraction => format!("{base}.{fraction:06}Z"),
            };
            let mut text = String::new();
            push_utc(at, &mut text);
            prop_assert_eq!(text, expected);
        }
    }

    #[test]
    fn a_stamp_before_1970_counts_its_fraction_forward() {
        let at = Timestamp::new(-1, 1_000).unwrap();
        assert_eq!(Stamp::from_timestamp(at).as_str(), "1969-12-31T23:59:59.000001Z");
        let at = Timestamp::new(-62_167_219_200, 0).unwrap();
        assert_eq!(Stamp::from_timestamp(at).as_str(), "0000-01-01T00:00:00Z");
        // An `--at` before 1970 with a fraction is stored as a stamp that
        // reads back (it was written `23:59:59.-999999Z`, which every
        // reader refused).
        let given = Stamp::parse_normalized("1969-12-31T23:59:59.000001+00:00").unwrap();
        assert_eq!(given.as_str(), "1969-12-31T23:59:59.000001Z");
        assert_eq!(Stamp::parse(given.as_str()).unwrap(), given);
    }

    proptest! {
        /// The shortcut for `YYYY-MM-DDTHH:MM:SSZ` reads what jiff reads,
        /// and refuses nothing jiff would read differently.
        #[test]
        fn utc_seconds_shortcut_agrees_with_jiff(
            year in prop_oneof![0u32..10_000, 1965u32..2035],
            month in 0u32..14,
            day in 0u32..33,
            hour in 0u32..26,
            minute in 0u32..62,
            second in 0u32..62,
            tail in prop_oneof![Just("Z"), Just("z"), Just("+00:00"), Just(".5Z")],
        ) {
            let text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{tail}");
            let slow = parse_rfc3339(&text);
            if let Some(fast) = parse_utc_seconds(text.as_bytes()) {
                prop_assert_eq!(Ok(fast), slow.clone(), "{}", text);
            }
            prop_assert_eq!(parse_instant(&text), slow);
        }
    }

    #[test]
    fn utc_seconds_shortcut_reads_the_usual_stamps() {
        for text in [
            "2026-01-02T03:04:05Z",
            "2024-02-29T23:59:59Z",
            "0001-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(
                parse_utc_seconds(text.as_bytes()),
                Some(parse_rfc3339(text).unwrap()),
                "{text}"
            );
        }
        for text in [
            "2025-02-29T00:00:00Z",
            "2026-01-02t03:04:05Z",
            "2026-01-02T03:04:60Z",
            "9999-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_utc_seconds(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn python_isoformat_layout() {
        let whole = Stamp::parse_normalized("2026-01-01T13:00:00+01:00").unwrap();
        assert_eq!(whole.as_str(), "2026-01-01T12:00:00Z");
        let frac = Stamp::parse_normalized("2026-01-01T12:00:00.5Z").unwrap();
        assert_eq!(frac.as_str(), "2026-01-01T12:00:00.500000Z");
        let nanos = Stamp::parse_normalized("2026-01-01T12:00:00.123456789Z").unwrap();
        assert_eq!(nanos.as_str(), "2026-01-01T12:00:00.123456Z");
        assert_eq!(whole.utc_day(), "2026-01-01");
    }

    #[test]
    fn rejects_offset_free_and_garbage() {
        for bad in ["2026-01-01T12:00:00", "2026-01-01", "yesterday", "2026-13-01T00:00:00Z", ""] {
            assert!(Stamp::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn out_of_range_instants_and_offsets_are_refused_clearly() {
        for bad in ["9999-12-31T23:59:59Z", "9999-12-31T00:00:00+00:00", "0000-12-31T23:59:59Z"] {
            let err = Stamp::parse(bad).unwrap_err();
            assert!(matches!(err, StampError::OutOfRange { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("outside the supported range"), "{bad}: {err}");
        }
        for bad in
            ["2026-01-01T00:00:00+25:00", "2026-01-01T00:00:00-24:00", "2026-01-01T00:00:00+23:60"]
        {
            let err = Stamp::parse(bad).unwrap_err();
            assert!(matches!(err, StampError::BadOffset), "{bad}: {err}");
        }
        let latest = Stamp::parse_normalized("9999-12-30T22:00:00Z").unwrap();
        assert_eq!(latest.instant(), Timestamp::from_second(253_402_207_200).unwrap());
        assert!(Stamp::parse("2026-01-01T00:00:00+23:59").is_ok());
        assert!(Stamp::parse("0001-01-01T00:00:00Z").is_ok());
    }

    #[test]
    fn keeps_text_verbatim_and_orders_by_instant() {
        let a = Stamp::parse("2026-01-01T12:00:00+00:00").unwrap();
        let b = Stamp::parse("2026-01-01T11:30:00Z").unwrap();
        assert_eq!(a.as_str(), "2026-01-01T12:00:00+00:00");
        assert!(b < a);
    }
}
