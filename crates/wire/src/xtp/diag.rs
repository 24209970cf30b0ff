//! DIAG: why a packet was refused. `code`(4) and `val`(4), then a message
//! (text, for people) filling the rest of the segment. Code and value names
//! are Wireshark's `diag_code_vals` and `diag_val_vals`.

use crate::bytes::{be_u32, put_be_u32};
use crate::{Error, Result};

/// Length of the DIAG segment before its message.
pub const DIAG_FIXED_LEN: usize = 8;

/// What went wrong. Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiagCode {
    ContextRefused,
    ContextAbandoned,
    InvalidContext,
    RequestRefused,
    JoinRefused,
    ProtocolError,
    MaxPacketSizeError,
    Unknown(u32),
}

impl From<u32> for DiagCode {
    fn from(value: u32) -> Self {
        match value {
            1 => Self::ContextRefused,
            2 => Self::ContextAbandoned,
            3 => Self::InvalidContext,
            4 => Self::RequestRefused,
            5 => Self::JoinRefused,
            6 => Self::ProtocolError,
            7 => Self::MaxPacketSizeError,
            other => Self::Unknown(other),
        }
    }
}

impl From<DiagCode> for u32 {
    fn from(value: DiagCode) -> Self {
        match value {
            DiagCode::ContextRefused => 1,
            DiagCode::ContextAbandoned => 2,
            DiagCode::InvalidContext => 3,
            DiagCode::RequestRefused => 4,
            DiagCode::JoinRefused => 5,
            DiagCode::ProtocolError => 6,
            DiagCode::MaxPacketSizeError => 7,
            DiagCode::Unknown(other) => other,
        }
    }
}

/// The reason in detail. Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiagValue {
    Unspecified,
    NoListener,
    OptionsRefused,
    AddressFormatNotSupported,
    MalformedAddressFormat,
    TrafficFormatNotSupported,
    TrafficSpecificationRefused,
    MalformedTrafficFormat,
    NoProviderForService,
    NoResource,
    HostGoingDown,
    InvalidRetransmissionRequest,
    ContextInImproperState,
    JoinRequestDenied,
    Unknown(u32),
}

const VALUES: [DiagValue; 14] = [
    DiagValue::Unspecified,
    DiagValue::NoListener,
    DiagValue::OptionsRefused,
    DiagValue::AddressFormatNotSupported,
    DiagValue::MalformedAddressFormat,
    DiagValue::TrafficFormatNotSupported,
    DiagValue::TrafficSpecificationRefused,
    DiagValue::MalformedTrafficFormat,
    DiagValue::NoProviderForService,
    DiagValue::NoResource,
    DiagValue::HostGoingDown,
    DiagValue::InvalidRetransmissionRequest,
    DiagValue::ContextInImproperState,
    DiagValue::JoinRequestDenied,
];

impl From<u32> for DiagValue {
    fn from(value: u32) -> Self {
        usize::try_from(value)
            .ok()
            .and_then(|i| VALUES.get(i).copied())
            .unwrap_or(Self::Unknown(value))
    }
}

impl From<DiagValue> for u32 {
    fn from(value: DiagValue) -> Self {
        match value {
            DiagValue::Unknown(other) => other,
            // The table holds every named value; its index is the number.
            known => VALUES.iter().position(|v| *v == known).unwrap_or(0) as u32,
        }
    }
}

/// Code, value and message of a DIAG segment.
pub fn parse_diag(segment: &[u8]) -> Result<(DiagCode, DiagValue, &[u8])> {
    if segment.len() < DIAG_FIXED_LEN {
        return Err(Error::Truncated);
    }
    Ok((
        DiagCode::from(be_u32(segment, 0)),
        DiagValue::from(be_u32(segment, 4)),
        &segment[DIAG_FIXED_LEN..],
    ))
}

/// Writes a DIAG segment into exactly `8 + message.len()` bytes.
pub fn emit_diag(code: DiagCode, value: DiagValue, message: &[u8], out: &mut [u8]) -> Result<()> {
    if out.len() != DIAG_FIXED_LEN + message.len() {
        return Err(Error::Truncated);
    }
    put_be_u32(out, 0, code.into());
    put_be_u32(out, 4, value.into());
    out[DIAG_FIXED_LEN..].copy_from_slice(message);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_values_round_trip() {
        for v in 0..20u32 {
            assert_eq!(u32::from(DiagCode::from(v)), v);
            assert_eq!(u32::from(DiagValue::from(v)), v);
        }
        assert_eq!(DiagValue::from(1), DiagValue::NoListener);
        assert_eq!(DiagValue::from(13), DiagValue::JoinRequestDenied);
        assert_eq!(DiagCode::from(u32::MAX), DiagCode::Unknown(u32::MAX));
    }

    #[test]
    fn message_follows_code_and_value() {
        let mut out = [0u8; 10];
        emit_diag(
            DiagCode::ContextRefused,
            DiagValue::NoListener,
            b"no",
            &mut out,
        )
        .unwrap();
        assert_eq!(&out, &[0, 0, 0, 1, 0, 0, 0, 1, b'n', b'o']);
        assert_eq!(
            parse_diag(&out),
            Ok((DiagCode::ContextRefused, DiagValue::NoListener, &b"no"[..]))
        );
        assert_eq!(parse_diag(&out[..7]), Err(Error::Truncated));
    }
}
