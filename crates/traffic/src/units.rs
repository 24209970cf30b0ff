//! Human-readable figures: decimal units, as iperf3 and ttcp print rates.

/// `1.23 GB`, `456.7 kB`, `12 B` (powers of 1000).
pub fn bytes(n: u64) -> String {
    scaled(n as f64, "B")
}

/// `945.6 Mbit/s`.
pub fn bits_per_second(bps: f64) -> String {
    scaled(bps, "bit/s")
}

fn scaled(value: f64, unit: &str) -> String {
    const PREFIXES: [&str; 5] = ["", "k", "M", "G", "T"];
    let mut v = value;
    let mut i = 0;
    while v.abs() >= 1000.0 && i + 1 < PREFIXES.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.2} {}{unit}", PREFIXES[i])
    }
}

/// Parses a size like `8192`, `4K`, `64k`, `1M`, `2MB`, `1G` (binary
/// multiples: K = 1024), as ttcp and iperf3 read `-b` and `-l`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size: use a number with an optional K, M or G"))?;
    let multiplier: u64 = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(format!("`{text}`: unknown size suffix (use K, M or G)")),
    };
    n.checked_mul(multiplier)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Parses a rate like `100M`, `1.5G`, `64k` in bits per second (decimal
/// multiples: M = 10^6, as iperf3's `-b`).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a rate: use e.g. 100M (bits per second)"))?;
    let multiplier = match suffix.trim().to_ascii_lowercase().trim_end_matches("bps") {
        "" => 1e0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => return Err(format!("`{text}`: unknown rate suffix (use k, M or G)")),
    };
    let bps = n * multiplier;
    if !(bps.is_finite() && (1.0..=1e12).contains(&bps)) {
        return Err(format!("`{text}` is out of range: use 1 bit/s to 1000G"));
    }
    Ok(bps as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates_parse_with_their_conventions() {
        assert_eq!(parse_size("8192"), Ok(8192));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("2MB"), Ok(2 << 20));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999999G").is_err());
        assert_eq!(parse_rate("100M"), Ok(100_000_000));
        assert_eq!(parse_rate("1.5G"), Ok(1_500_000_000));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn figures_print_in_decimal_units() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1_234_567), "1.23 MB");
        assert_eq!(bits_per_second(945_600_000.0), "945.60 Mbit/s");
    }
}
