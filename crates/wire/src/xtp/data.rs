//! The data of a DATA (or FIRST) packet and its optional beginning tag: with
//! the BTAG option the first 8 bytes are a tag for the application, kept
//! apart from the data (the study's §2.6 "Support for Encapsulation" and
//! §2.7 "Tagging": written in the first 8 bytes, not interpreted by XTP).
//! Wireshark reads it the same way (`have_btag` in packet-xtp.c, DATA only).

use crate::{Error, Result};

use super::{be_u64, put_be_u64};

/// Length of the beginning tag.
pub const BTAG_LEN: usize = 8;

/// Splits tag and data. With `tagged` the bytes must hold the tag.
pub fn parse_data(bytes: &[u8], tagged: bool) -> Result<(Option<u64>, &[u8])> {
    if !tagged {
        return Ok((None, bytes));
    }
    if bytes.len() < BTAG_LEN {
        return Err(Error::Truncated);
    }
    Ok((Some(be_u64(bytes, 0)), &bytes[BTAG_LEN..]))
}

/// Bytes of tag and data.
pub const fn data_len(btag: Option<u64>, data: &[u8]) -> usize {
    match btag {
        Some(_) => BTAG_LEN + data.len(),
        None => data.len(),
    }
}

/// Writes tag and data into exactly [`data_len`] bytes.
pub fn emit_data(btag: Option<u64>, data: &[u8], out: &mut [u8]) -> Result<()> {
    if out.len() != data_len(btag, data) {
        return Err(Error::Truncated);
    }
    let rest = match btag {
        Some(tag) => {
            put_be_u64(out, 0, tag);
            &mut out[BTAG_LEN..]
        }
        None => out,
    };
    rest.copy_from_slice(data);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_precedes_the_data() {
        let mut out = [0u8; 11];
        emit_data(Some(0x0102_0304_0506_0708), b"abc", &mut out).unwrap();
        assert_eq!(&out, b"\x01\x02\x03\x04\x05\x06\x07\x08abc");
        assert_eq!(
            parse_data(&out, true),
            Ok((Some(0x0102_0304_0506_0708), &b"abc"[..]))
        );
        assert_eq!(parse_data(&out, false), Ok((None, &out[..])));
        assert_eq!(parse_data(&out[..7], true), Err(Error::Truncated));
    }
}
