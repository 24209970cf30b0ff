//! TCP sequence numbers: 32-bit values compared modulo 2^32 (RFC 9293
//! §3.4). `a < b` means `b` lies less than 2^31 ahead of `a`; comparisons
//! are only meaningful between numbers within 2^31 of each other, which
//! the window rules guarantee.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Seq(pub u32);

impl Seq {
    /// The next sequence number.
    pub fn add_one(self) -> Seq {
        Seq(self.0.wrapping_add(1))
    }

    /// Bytes from `earlier` up to this number; zero if `earlier` is not
    /// before it.
    pub fn since(self, earlier: Seq) -> usize {
        let d = self.0.wrapping_sub(earlier.0) as i32;
        d.max(0) as usize
    }

    /// The later of two numbers.
    pub fn max(self, other: Seq) -> Seq {
        if self >= other {
            self
        } else {
            other
        }
    }

    /// The earlier of two numbers.
    pub fn min(self, other: Seq) -> Seq {
        if self <= other {
            self
        } else {
            other
        }
    }

    /// `low <= self < high`, modulo 2^32.
    pub fn in_range(self, low: Seq, high: Seq) -> bool {
        low <= self && self < high
    }
}

impl PartialOrd for Seq {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Seq {
    /// Modular order: the sign of the 32-bit difference. Not a total order
    /// over all of u32 (a point 2^31 away compares as before), but
    /// consistent within any window of less than 2^31.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.wrapping_sub(other.0) as i32).cmp(&0)
    }
}

impl Add<usize> for Seq {
    type Output = Seq;
    /// The number `n` bytes after this one.
    fn add(self, n: usize) -> Seq {
        Seq(self.0.wrapping_add(n as u32))
    }
}

impl AddAssign<usize> for Seq {
    fn add_assign(&mut self, n: usize) {
        *self = *self + n;
    }
}

impl Sub for Seq {
    type Output = i64;
    /// The signed distance from `other` to `self`.
    fn sub(self, other: Seq) -> i64 {
        i64::from(self.0.wrapping_sub(other.0) as i32)
    }
}

impl fmt::Debug for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq({})", self.0)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap_around() {
        let near_top = Seq(u32::MAX - 10);
        let wrapped = near_top + 20;
        assert_eq!(wrapped, Seq(9));
        assert!(near_top < wrapped);
        assert_eq!(wrapped - near_top, 20);
        assert_eq!(near_top - wrapped, -20);
        assert_eq!(wrapped.since(near_top), 20);
        assert_eq!(near_top.since(wrapped), 0);
        assert!(Seq(u32::MAX).in_range(near_top, wrapped));
        assert!(!wrapped.in_range(near_top, wrapped));
        assert_eq!(near_top.max(wrapped), wrapped);
        assert_eq!(near_top.min(wrapped), near_top);
    }
}
