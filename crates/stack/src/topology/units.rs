//! Durations ("2ms", "150us", "1.5s") and bit rates ("100Mbit", "1Gbit", or
//! a bare integer of bits per second) as topology files write them.
//!
//! Decimal prefixes are SI (1 kbit = 1000 bit), as in `tc`. "bps" is
//! refused rather than guessed at: `tc` reads it as *bytes* per second.

use core::fmt;
use core::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest delay a wire may have: enough for any real path, short enough
/// that instants never overflow.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);
/// Fastest rate a wire may have (10 Tbit/s).
pub const MAX_RATE_BITS_PER_S: u64 = 10_000_000_000_000;

const DURATION_UNITS: [(&str, u128); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

const RATE_PREFIXES: [(&str, u128); 5] = [
    ("k", 1_000),
    ("m", 1_000_000),
    ("g", 1_000_000_000),
    ("t", 1_000_000_000_000),
    ("", 1),
];

/// Parses a duration with a unit (`ns`, `us`/`µs`, `ms`, `s`); `"0"` alone
/// is zero. Fractions are allowed when they come to whole nanoseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let (number, nanos_per_unit) = DURATION_UNITS
        .iter()
        .find_map(|&(unit, scale)| {
            let number = text.strip_suffix(unit)?;
            (!number.is_empty()).then_some((number, scale))
        })
        .ok_or_else(|| {
            format!("`{text}` is not a duration: write a number and a unit (ns, us, ms, s), e.g. \"2ms\"")
        })?;
    let nanos = scale_decimal(number, nanos_per_unit)
        .ok_or_else(|| format!("`{text}` is not a whole number of nanoseconds"))?;
    let max = MAX_DELAY.as_nanos();
    if nanos > max {
        return Err(format!(
            "`{text}` is longer than the limit of {}",
            format_duration(MAX_DELAY)
        ));
    }
    // nanos <= MAX_DELAY, so it fits in u64.
    Ok(Duration::from_nanos(nanos as u64))
}

/// Writes a duration in the largest unit that keeps it whole.
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if nanos.is_multiple_of(scale) {
            return format!("{}{unit}", nanos / scale);
        }
    }
    format!("{nanos}ns")
}

/// Parses a rate in bits per second: `"9600bit"`, `"100Mbit"`,
/// `"1.5Gbit/s"` (prefix case-insensitive), within `1..=MAX_RATE_BITS_PER_S`.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower.ends_with("bps") {
        return Err(format!(
            "`{trimmed}` is ambiguous (tc reads \"bps\" as bytes per second): write bits, e.g. \"100Mbit\""
        ));
    }
    let without_per_second = lower.strip_suffix("/s").unwrap_or(&lower);
    let Some(scaled) = without_per_second.strip_suffix("bit") else {
        return Err(format!(
            "`{trimmed}` is not a rate: write e.g. \"100Mbit\" or \"1Gbit\""
        ));
    };
    let (number, multiplier) = RATE_PREFIXES
        .iter()
        .find_map(|&(prefix, multiplier)| Some((scaled.strip_suffix(prefix)?, multiplier)))
        .unwrap_or((scaled, 1));
    let bits = scale_decimal(number, multiplier)
        .ok_or_else(|| format!("`{trimmed}` is not a whole number of bits per second"))?;
    check_rate(bits).map_err(|message| format!("`{trimmed}`: {message}"))
}

fn check_rate(bits: u128) -> Result<u64, String> {
    if bits == 0 {
        return Err("a rate of 0 carries nothing (omit `rate` for an unlimited one)".to_owned());
    }
    if bits > MAX_RATE_BITS_PER_S as u128 {
        return Err(format!(
            "above the limit of {}",
            format_rate(MAX_RATE_BITS_PER_S)
        ));
    }
    Ok(bits as u64)
}

/// Writes a rate with the largest prefix that keeps it whole.
pub fn format_rate(bits_per_s: u64) -> String {
    for (prefix, scale) in [
        ("T", 1_000_000_000_000),
        ("G", 1_000_000_000),
        ("M", 1_000_000),
        ("k", 1_000),
    ] {
        if bits_per_s.is_multiple_of(scale) {
            return format!("{}{prefix}bit", bits_per_s / scale);
        }
    }
    format!("{bits_per_s}bit")
}

/// `number` (digits, optionally with a fraction) times `scale`, when whole.
/// Bounded: at most 20 integer and 18 fraction digits.
fn scale_decimal(number: &str, scale: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 20 || fraction.len() > 18 {
        return None;
    }
    if !all_digits(whole) || !all_digits(fraction) || (number.contains('.') && fraction.is_empty())
    {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let mut value = whole.checked_mul(scale)?;
    if !fraction.is_empty() {
        let numerator: u128 = fraction.parse::<u128>().ok()?.checked_mul(scale)?;
        let denominator = 10u128.pow(fraction.len() as u32);
        if !numerator.is_multiple_of(denominator) {
            return None;
        }
        value = value.checked_add(numerator / denominator)?;
    }
    Some(value)
}

/// A duration as a topology file writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileDuration(pub Duration);

impl Serialize for FileDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for FileDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text)
            .map(FileDuration)
            .map_err(de::Error::custom)
    }
}

/// A rate as a topology file writes it: a string with a unit, or an
/// integer of bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileRate(pub u64);

impl Serialize for FileRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_rate(self.0))
    }
}

impl<'de> Deserialize<'de> for FileRate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RateVisitor)
    }
}

struct RateVisitor;

impl Visitor<'_> for RateVisitor {
    type Value = FileRate;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a rate such as \"100Mbit\", or an integer of bits per second")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<FileRate, E> {
        parse_rate(text).map(FileRate).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, bits: i64) -> Result<FileRate, E> {
        let bits = u128::try_from(bits).map_err(|_| E::custom("a rate cannot be negative"))?;
        check_rate(bits).map(FileRate).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, bits: u64) -> Result<FileRate, E> {
        check_rate(bits as u128).map(FileRate).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_every_unit() {
        for (text, nanos) in [
            ("0", 0),
            ("0s", 0),
            ("2ms", 2_000_000),
            ("150us", 150_000),
            ("150µs", 150_000),
            ("7ns", 7),
            ("1.5s", 1_500_000_000),
            ("0.25ms", 250_000),
            (" 3s ", 3_000_000_000),
            ("3600s", 3_600_000_000_000),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_nanos(nanos)),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_durations_are_refused() {
        for text in [
            "",
            "2",
            "ms",
            "2 h",
            "-1ms",
            "1.5ns",
            "1.ms",
            ".5ms",
            "3601s",
            "1e3ms",
            "2mss",
            "99999999999999999999999s",
        ] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }

    #[test]
    fn durations_print_in_the_largest_whole_unit() {
        for (nanos, text) in [
            (0, "0s"),
            (2_000_000, "2ms"),
            (150_000, "150us"),
            (1_500_000_000, "1500ms"),
            (7, "7ns"),
        ] {
            let duration = Duration::from_nanos(nanos);
            assert_eq!(format_duration(duration), text);
            assert_eq!(parse_duration(text), Ok(duration));
        }
    }

    #[test]
    fn rates_parse_with_si_prefixes() {
        for (text, bits) in [
            ("9600bit", 9_600),
            ("100Mbit", 100_000_000),
            ("100mbit", 100_000_000),
            ("1Gbit", 1_000_000_000),
            ("1.5Gbit/s", 1_500_000_000),
            ("64kbit", 64_000),
            ("10Tbit", 10_000_000_000_000),
        ] {
            assert_eq!(parse_rate(text), Ok(bits), "{text}");
        }
    }

    #[test]
    fn bad_rates_are_refused() {
        for text in [
            "", "100", "100Mbps", "100MB", "0bit", "0Gbit", "11Tbit", "1.5bit", "Mbit", "-1Mbit",
            "1 Mbit",
        ] {
            assert!(parse_rate(text).is_err(), "{text}");
        }
    }

    #[test]
    fn rates_print_with_the_largest_whole_prefix() {
        for (bits, text) in [
            (100_000_000, "100Mbit"),
            (1_500_000_000, "1500Mbit"),
            (9_600, "9600bit"),
            (1_000_000_000, "1Gbit"),
        ] {
            assert_eq!(format_rate(bits), text);
            assert_eq!(parse_rate(text), Ok(bits));
        }
    }
}
