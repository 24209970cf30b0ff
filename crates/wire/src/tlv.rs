//! The option lists of the IPv4 header (RFC 791 §3.1) and the TCP header
//! (RFC 9293 §3.1) share one encoding: kind 0 (end of option list) and kind
//! 1 (no operation) are a single byte; every other option is a kind byte, a
//! length byte counting the kind and length bytes themselves, then the data.

use crate::{Error, Result};

/// End of option list: the rest of the area is padding.
pub(crate) const END_OF_LIST: u8 = 0;
/// No operation: one byte of alignment filler.
pub(crate) const NO_OPERATION: u8 = 1;

/// The messages a protocol reports for each way an option can be broken,
/// so that IPv4 and TCP keep errors of their own.
pub(crate) struct Errors {
    /// No length byte after the kind.
    pub missing_length: &'static str,
    /// A length below 2.
    pub short_length: &'static str,
    /// No option at all, or one running past the end of the area.
    pub past_end: &'static str,
}

/// Reads the option at the start of `area`: its kind, its data (empty for
/// end-of-list and no-operation) and the bytes it occupies. Never trusts the
/// length byte and never panics.
pub(crate) fn read<'a>(area: &'a [u8], errors: &Errors) -> Result<(u8, &'a [u8], usize)> {
    let Some(&kind) = area.first() else {
        return Err(Error::Malformed(errors.past_end));
    };
    if kind == END_OF_LIST || kind == NO_OPERATION {
        return Ok((kind, &[], 1));
    }
    let Some(&len) = area.get(1) else {
        return Err(Error::Malformed(errors.missing_length));
    };
    let len = usize::from(len);
    if len < 2 {
        return Err(Error::Malformed(errors.short_length));
    }
    let Some(data) = area.get(2..len) else {
        return Err(Error::Malformed(errors.past_end));
    };
    Ok((kind, data, len))
}

/// Writes an option of `kind` carrying `data` over the whole of `out`, whose
/// length (`2 + data.len()`, at most 255) the caller has checked.
pub(crate) fn write(out: &mut [u8], kind: u8, data: &[u8]) {
    out[0] = kind;
    // The caller checked that the length fits its byte.
    out[1] = out.len() as u8;
    out[2..].copy_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERRORS: Errors = Errors {
        missing_length: "missing",
        short_length: "short",
        past_end: "past",
    };

    #[test]
    fn reads_each_form() {
        assert_eq!(read(&[0, 9, 9], &ERRORS), Ok((0, &[][..], 1)));
        assert_eq!(read(&[1, 9], &ERRORS), Ok((1, &[][..], 1)));
        assert_eq!(read(&[7, 4, 1, 2, 3], &ERRORS), Ok((7, &[1, 2][..], 4)));
        assert_eq!(read(&[7, 2], &ERRORS), Ok((7, &[][..], 2)));
    }

    #[test]
    fn refuses_each_break() {
        assert_eq!(read(&[], &ERRORS), Err(Error::Malformed("past")));
        assert_eq!(read(&[7], &ERRORS), Err(Error::Malformed("missing")));
        assert_eq!(read(&[7, 1], &ERRORS), Err(Error::Malformed("short")));
        assert_eq!(read(&[7, 0], &ERRORS), Err(Error::Malformed("short")));
        assert_eq!(read(&[7, 5, 0, 0], &ERRORS), Err(Error::Malformed("past")));
    }

    #[test]
    fn writes_kind_length_data() {
        let mut out = [0xff; 5];
        write(&mut out, 0x94, &[1, 2, 3]);
        assert_eq!(out, [0x94, 5, 1, 2, 3]);
    }
}
