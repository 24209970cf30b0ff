//! The stackscope trace option (DESIGN.md "Probe events"): a traced flow marks
//! its packets so the receiving stack traces the same flow without prior
//! arrangement. Its data is the sender's 32-bit flow id, big-endian.
//!
//! * IPv6: a destination option of type [`IPV6_OPTION_TYPE`] = 0x1E, an RFC
//!   4727 §1 experimental value whose two high bits are `00` ("skip over this
//!   option", RFC 8200 §4.2), so a stack that does not know it ignores it, and
//!   whose third bit is 0 (data does not change en route).
//! * IPv4: option [`IPV4_OPTION_TYPE`] = 0x9E, the RFC 4727 experimental
//!   value with the copied flag set (RFC 791 §3.1), so every fragment carries
//!   it.

use crate::{Error, Result};

/// IPv6 destination option type (RFC 4727 experimental, action "skip").
pub const IPV6_OPTION_TYPE: u8 = 0x1e;
/// IPv4 option type (RFC 4727 experimental: copied, class 0, number 30).
pub const IPV4_OPTION_TYPE: u8 = 0x9e;
/// Bytes of option data.
pub const DATA_LEN: usize = 4;
/// Bytes a traced IPv6 packet grows by: a Destination Options header
/// holding just the option (2 + 2 + 4).
pub const IPV6_HEADER_LEN: usize = 8;
/// Bytes a traced IPv4 header grows by: the 6-byte option padded to a
/// multiple of four (RFC 791 §3.1).
pub const IPV4_OPTIONS_LEN: usize = 8;

/// A parsed trace option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceOption {
    /// The sending host's flow id.
    pub flow: u32,
}

impl TraceOption {
    /// Reads the option data (without type and length bytes).
    pub fn parse(data: &[u8]) -> Result<Self> {
        let bytes: [u8; DATA_LEN] = data
            .try_into()
            .map_err(|_| Error::Malformed("trace option data is not 4 bytes"))?;
        Ok(Self {
            flow: u32::from_be_bytes(bytes),
        })
    }

    /// Writes the option data (without type and length bytes).
    pub fn emit(&self, data: &mut [u8; DATA_LEN]) {
        *data = self.flow.to_be_bytes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrong_length() {
        let mut data = [0; DATA_LEN];
        TraceOption { flow: 0xdead_beef }.emit(&mut data);
        assert_eq!(TraceOption::parse(&data).unwrap().flow, 0xdead_beef);
        assert!(TraceOption::parse(&data[..3]).is_err());
        assert!(TraceOption::parse(&[0; 5]).is_err());
        // RFC 8200 §4.2: the two high bits 00 mean "skip if unrecognised".
        assert_eq!(IPV6_OPTION_TYPE >> 6, 0);
        // RFC 791: the high bit of an IPv4 option type is the copied flag.
        assert_eq!(IPV4_OPTION_TYPE & 0x80, 0x80);
    }
}
