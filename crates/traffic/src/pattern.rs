//! The payload pattern every sender writes and every receiver checks.
//!
//! The pattern is a periodic sequence of 8-byte words: word `j` (for
//! `0 <= j < PERIOD_WORDS`) holds `j` in its low 32 bits and a 32-bit
//! check of `j` in its high bits, little-endian. Byte `o` of a stream is
//! byte `o mod PERIOD_BYTES` of the period.
//!
//! Two properties make it cheap and telling:
//! * senders write slices of one precomputed [`Pattern`] table (no fill on
//!   the hot path) and receivers compare with `==` on slices (memcmp);
//! * on a mismatch, any 8 received bytes that form a valid word say where
//!   in the sender's stream they came from, so a receiver can tell missing
//!   and duplicated bytes from corrupted ones and re-synchronise.
//!
//! The period is a prime number of words, so no power-of-two buffer or
//! segment size lines up with it: a displacement of a whole buffer or
//! segment is always visible. It is short (64 KiB) so the table stays in
//! the cache beside the socket buffers: `stackscope ttcp --pair -6 -l
//! 131072 -n 8192` moved 17–21 Gbit/s with a 512 KiB period and 26–29
//! Gbit/s with this one, as fast as with checking switched off.

use bytes::Bytes;

/// Words in one period: a prime (2^13 - 1).
pub const PERIOD_WORDS: u64 = 8191;
/// Bytes in one period (about 64 KiB).
pub const PERIOD_BYTES: u64 = PERIOD_WORDS * 8;

/// The check half of word `j`: a multiplicative hash, never equal to the
/// low half for any `j` in the period, so zeroed or copied-over memory
/// does not pass as pattern.
fn check(j: u32) -> u32 {
    (u64::from(j)
        .wrapping_add(0x9E37_79B9)
        .wrapping_mul(0x2545_F491_4F6C_DD1D)
        >> 32) as u32
        | 1
}

/// The 8 bytes of word `j`.
pub fn word(j: u64) -> [u8; 8] {
    let j = (j % PERIOD_WORDS) as u32;
    let value = u64::from(j) | (u64::from(check(j)) << 32);
    value.to_le_bytes()
}

/// Decodes 8 received bytes: the word index they hold, if they are a
/// valid pattern word.
pub fn decode(bytes: &[u8; 8]) -> Option<u64> {
    let value = u64::from_le_bytes(*bytes);
    let j = value as u32;
    (u64::from(j) < PERIOD_WORDS && check(j) == (value >> 32) as u32).then_some(u64::from(j))
}

/// One period of the pattern plus enough of the next that any slice of up
/// to `max_len` bytes, starting anywhere in the period, is contiguous.
/// Shared, so clones and [`shared`](Pattern::shared) slices cost a
/// reference count, not a copy.
#[derive(Clone)]
pub struct Pattern {
    bytes: Bytes,
    max_len: usize,
}

impl Pattern {
    /// Builds the table for slices of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        let total = PERIOD_BYTES as usize + max_len;
        let mut bytes = Vec::with_capacity(total + 8);
        let mut j = 0u64;
        while bytes.len() < total {
            bytes.extend_from_slice(&word(j));
            j += 1;
        }
        bytes.truncate(total);
        Self {
            bytes: Bytes::from(bytes),
            max_len,
        }
    }

    /// Longest slice [`at`](Self::at) serves.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The `len` pattern bytes at stream offset `offset`.
    ///
    /// # Panics
    /// If `len` exceeds [`max_len`](Self::max_len): a sizing bug in the
    /// caller, never a consequence of input.
    pub fn at(&self, offset: u64, len: usize) -> &[u8] {
        assert!(len <= self.max_len, "pattern slice longer than the table");
        let start = (offset % PERIOD_BYTES) as usize;
        &self.bytes[start..start + len]
    }
}

impl Pattern {
    /// [`at`](Self::at) as a shared buffer of its own (no copy): what a
    /// write that lends its buffer hands over.
    ///
    /// # Panics
    /// As [`at`](Self::at).
    pub fn shared(&self, offset: u64, len: usize) -> Bytes {
        assert!(len <= self.max_len, "pattern slice longer than the table");
        let start = (offset % PERIOD_BYTES) as usize;
        self.bytes.slice(start..start + len)
    }
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pattern")
            .field("max_len", &self.max_len)
            .finish()
    }
}

/// The signed distance from stream offset `from` to `to`, both taken
/// modulo the period: the displacement in (-PERIOD/2, PERIOD/2].
pub fn displacement(from: u64, to: u64) -> i64 {
    let period = PERIOD_BYTES as i64;
    let d = ((to % PERIOD_BYTES) as i64 - (from % PERIOD_BYTES) as i64).rem_euclid(period);
    if d > period / 2 {
        d - period
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_of_the_period_decodes_to_itself() {
        for j in 0..PERIOD_WORDS {
            assert_eq!(decode(&word(j)), Some(j));
        }
    }

    #[test]
    fn zeroes_and_shifted_words_are_not_pattern() {
        assert_eq!(decode(&[0; 8]), None);
        let table = Pattern::new(64);
        // Any misaligned 8 bytes of the table (straddling two words) fail.
        let mut valid = 0;
        for start in 0..4096usize {
            let bytes: [u8; 8] = table.bytes[start..start + 8].try_into().unwrap();
            if decode(&bytes).is_some() {
                valid += 1;
                assert_eq!(start % 8, 0, "misaligned bytes at {start} decoded");
            }
        }
        assert_eq!(valid, 4096 / 8);
    }

    #[test]
    fn slices_wrap_around_the_period() {
        let table = Pattern::new(100);
        let tail = table.at(PERIOD_BYTES - 8, 16);
        assert_eq!(&tail[..8], &word(PERIOD_WORDS - 1));
        assert_eq!(&tail[8..], &word(0));
        assert_eq!(table.at(PERIOD_BYTES + 3, 5), table.at(3, 5));
    }

    #[test]
    fn displacement_is_signed_and_modular() {
        assert_eq!(displacement(100, 150), 50);
        assert_eq!(displacement(150, 100), -50);
        assert_eq!(displacement(PERIOD_BYTES - 10, 10), 20);
        assert_eq!(displacement(10, PERIOD_BYTES - 10), -20);
    }
}
