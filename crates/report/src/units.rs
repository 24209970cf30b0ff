//! Sizes as a recipe writes them: `4K` is 4096 bytes, shown as "4 KiB"
//! (not "4.10 kB"); a size that is no multiple of 1024 stays in bytes.

/// `4 KiB`, `256 KiB`, `1 MiB`, `1460 B`.
pub fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, unit) in UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{} {unit}", bytes / scale);
        }
    }
    format!("{bytes} B")
}

/// [`size`] of a byte count held as a number; a fractional or negative
/// one is not a size and is printed as it is.
pub fn size_f64(bytes: f64) -> String {
    if bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes < 1e18 {
        size(bytes as u64)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_multiples_in_binary_units_and_the_rest_in_bytes() {
        assert_eq!(size(4096), "4 KiB");
        assert_eq!(size(262_144), "256 KiB");
        assert_eq!(size(1 << 20), "1 MiB");
        assert_eq!(size(1536), "1536 B");
        assert_eq!(size(1460), "1460 B");
        assert_eq!(size(0), "0 B");
        assert_eq!(size_f64(4096.0), "4 KiB");
        assert_eq!(size_f64(1.5), "1.5 B");
    }
}
