//! One axis of the grid from its flag's text: a comma list whose items may
//! be ranges with a step (`16,32,64`, `100..20000:100`, `16,1K..16K:1K`).
//! Ranges are counted before they are expanded, so a typo cannot allocate
//! (or run) a billion points.

/// The most points a sweep may have (and so the most values one axis may).
pub const MAX_POINTS: u64 = 100_000;

/// One item of a list: a value, or `start..end:step` (end included when
/// the steps land on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    One(u64),
    Range { start: u64, end: u64, step: u64 },
}

impl Item {
    fn len(self) -> u64 {
        match self {
            Item::One(_) => 1,
            Item::Range { start, end, step } => (end - start) / step + 1,
        }
    }
}

/// Parses a numeric axis: `parse_one` reads one number (a size with K/M/G,
/// a rate with k/M/G), `flag` names the flag in errors. A range without a
/// step (`1..4`) steps by 1.
pub fn numbers(
    flag: &str,
    text: &str,
    parse_one: impl Fn(&str) -> Result<u64, String>,
) -> Result<Vec<u64>, String> {
    let items = split(flag, text)?
        .into_iter()
        .map(|item| parse_item(flag, item, &parse_one))
        .collect::<Result<Vec<_>, _>>()?;
    let total = items
        .iter()
        .try_fold(0u64, |sum, item| sum.checked_add(item.len()))
        .unwrap_or(u64::MAX);
    if total > MAX_POINTS {
        return Err(format!(
            "{flag} {text} expands to {total} values: a sweep has at most {MAX_POINTS} points"
        ));
    }
    let mut values = Vec::with_capacity(total as usize);
    for item in items {
        match item {
            Item::One(v) => values.push(v),
            Item::Range { start, end, step } => {
                let mut v = start;
                values.push(v);
                // checked_add: a range ending near u64::MAX must stop, not wrap.
                while let Some(next) = v.checked_add(step).filter(|&n| n <= end) {
                    values.push(next);
                    v = next;
                }
            }
        }
    }
    Ok(values)
}

/// Parses a list of names (protocols, stacks, families) with `parse_one`.
pub fn names<T>(
    flag: &str,
    text: &str,
    parse_one: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Vec<T>, String> {
    split(flag, text)?
        .into_iter()
        .map(|item| {
            parse_one(&item.to_ascii_lowercase())
                .ok_or_else(|| format!("{flag}: `{item}` is not one of {expected}"))
        })
        .collect()
}

/// The comma-separated items, trimmed; an empty list or item is an error.
fn split<'a>(flag: &str, text: &'a str) -> Result<Vec<&'a str>, String> {
    if text.trim().is_empty() {
        return Err(format!("{flag} is empty: give at least one value"));
    }
    text.split(',')
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                Err(format!(
                    "{flag} {text} has an empty item: separate values with single commas"
                ))
            } else {
                Ok(item)
            }
        })
        .collect()
}

fn parse_item(
    flag: &str,
    item: &str,
    parse_one: &impl Fn(&str) -> Result<u64, String>,
) -> Result<Item, String> {
    let one = |text: &str| parse_one(text).map_err(|e| format!("{flag}: {e}"));
    let Some((start, rest)) = item.split_once("..") else {
        return one(item).map(Item::One);
    };
    let (end, step) = match rest.split_once(':') {
        Some((end, step)) => (end, Some(step)),
        None => (rest, None),
    };
    let (start, end) = (one(start)?, one(end)?);
    let step = step.map(one).transpose()?.unwrap_or(1);
    if step == 0 {
        return Err(format!("{flag} {item}: the step must be more than 0"));
    }
    if start > end {
        return Err(format!(
            "{flag} {item}: the range runs backwards; write the smaller end first"
        ));
    }
    Ok(Item::Range { start, end, step })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{parse_rate, parse_size};

    fn sizes(text: &str) -> Result<Vec<u64>, String> {
        numbers("--sizes", text, parse_size)
    }

    #[test]
    fn lists_ranges_and_their_mixtures_expand_in_order() {
        assert_eq!(sizes("16,32,64"), Ok(vec![16, 32, 64]));
        assert_eq!(sizes(" 16 , 4K "), Ok(vec![16, 4096]));
        assert_eq!(sizes("100..500:100"), Ok(vec![100, 200, 300, 400, 500]));
        // The end is included only when a step lands on it.
        assert_eq!(sizes("100..450:100"), Ok(vec![100, 200, 300, 400]));
        assert_eq!(sizes("7..7:3"), Ok(vec![7]));
        assert_eq!(sizes("1..4"), Ok(vec![1, 2, 3, 4]));
        assert_eq!(sizes("16,1K..3K:1K,8"), Ok(vec![16, 1024, 2048, 3072, 8]));
        assert_eq!(
            numbers("--rate", "10M..30M:10M", parse_rate),
            Ok(vec![10_000_000, 20_000_000, 30_000_000])
        );
        // The IPv6 study's sweep: 100 B to 20 000 B in steps of 100.
        let study = sizes("100..20000:100").unwrap();
        assert_eq!(study.len(), 200);
        assert_eq!((study[0], study[199]), (100, 20_000));
    }

    #[test]
    fn a_range_near_the_top_of_u64_stops_instead_of_wrapping() {
        let top = u64::MAX.to_string();
        let start = (u64::MAX - 2).to_string();
        assert_eq!(
            numbers("--n", &format!("{start}..{top}:2"), |t| t
                .parse()
                .map_err(|_| "bad".to_string())),
            Ok(vec![u64::MAX - 2, u64::MAX])
        );
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        let err = |text: &str| sizes(text).unwrap_err();
        assert!(err("").contains("empty"), "{}", err(""));
        assert!(err("16,,32").contains("empty item"));
        assert!(err("16,").contains("empty item"));
        assert!(err("500..100:100").contains("backwards"));
        assert!(err("100..500:0").contains("step must be more than 0"));
        assert!(err("100..").starts_with("--sizes: "));
        assert!(err("12Q").contains("unknown size suffix"));
        assert!(err("1..1000000").contains("at most 100000 points"));
        // Counted, not expanded: this would be 10^18 values.
        assert!(err("1..1000000000000000000:1").contains("at most 100000 points"));
        assert_eq!(sizes("1..100000").map(|v| v.len()), Ok(100_000));
    }

    #[test]
    fn names_parse_case_insensitively_and_refuse_strangers() {
        let parse = |t: &str| match t {
            "tcp" => Some(1),
            "udp" => Some(2),
            _ => None,
        };
        assert_eq!(
            names("--proto", "TCP,udp", parse, "tcp, udp"),
            Ok(vec![1, 2])
        );
        assert_eq!(
            names("--proto", "tcp,sctp", parse, "tcp, udp"),
            Err("--proto: `sctp` is not one of tcp, udp".into())
        );
        assert!(names("--proto", " ", parse, "tcp").is_err());
    }
}
