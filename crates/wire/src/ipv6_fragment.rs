//! The fragment header (RFC 8200 §4.5): next header, fragment offset in
//! 8-octet units, the M ("more fragments") flag and a 32-bit identification.

use crate::bytes::{be_u16, be_u32, put_be_u16, put_be_u32};
use crate::ip::IpProtocol;
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const NEXT_HEADER: usize = 0;
    pub const RESERVED: usize = 1;
    /// Fragment offset (13 bits), reserved (2 bits), M flag (1 bit).
    pub const OFFSET_FLAGS: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..8;
}

/// Length of the fragment header.
pub const HEADER_LEN: usize = 8;
/// Largest fragment offset in bytes: 13 bits of 8-octet units.
pub const MAX_FRAG_OFFSET: usize = 0xfff8;

const OFFSET_MASK: u16 = 0xfff8;
const MORE_FRAGS: u16 = 0x0001;

/// A view of a fragment header at the start of a byte buffer (the buffer
/// may go on into the fragment data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6FragmentHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6FragmentHeader<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// The 8 header bytes are present.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Bytes of the header (always [`HEADER_LEN`]).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    fn offset_flags(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::OFFSET_FLAGS.start)
    }

    /// Offset of this fragment's data in the original fragmentable part, in
    /// bytes (the field counts 8-octet units in its high 13 bits).
    pub fn frag_offset(&self) -> usize {
        usize::from(self.offset_flags() & OFFSET_MASK)
    }

    /// The M flag: more fragments follow.
    pub fn more_frags(&self) -> bool {
        self.offset_flags() & MORE_FRAGS != 0
    }

    pub fn ident(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::IDENT.start)
    }

    /// An atomic fragment: offset 0 and no more fragments (RFC 6946), to
    /// be processed at once without reassembly.
    pub fn is_atomic(&self) -> bool {
        self.frag_offset() == 0 && !self.more_frags()
    }

    /// The bytes after the header in the buffer.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6FragmentHeader<T> {
    fn set_offset_flags(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::OFFSET_FLAGS.start, value);
    }

    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value.into();
    }

    /// Zeroes both reserved fields (RFC 8200 §4.5: zero on transmission).
    pub fn clear_reserved(&mut self) {
        self.buffer.as_mut()[field::RESERVED] = 0;
        let word = self.offset_flags() & (OFFSET_MASK | MORE_FRAGS);
        self.set_offset_flags(word);
    }

    /// Sets the offset in bytes; the low three bits are dropped (offsets
    /// are multiples of 8), as are bits above [`MAX_FRAG_OFFSET`].
    pub fn set_frag_offset(&mut self, value: usize) {
        let units = (value & MAX_FRAG_OFFSET) as u16;
        let word = (self.offset_flags() & !OFFSET_MASK) | units;
        self.set_offset_flags(word);
    }

    pub fn set_more_frags(&mut self, value: bool) {
        let word = (self.offset_flags() & !MORE_FRAGS) | u16::from(value);
        self.set_offset_flags(word);
    }

    pub fn set_ident(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::IDENT.start, value);
    }
}

/// The meaning of a fragment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6FragmentRepr {
    pub next_header: IpProtocol,
    /// Offset in bytes, a multiple of 8 up to [`MAX_FRAG_OFFSET`].
    pub frag_offset: usize,
    pub more_frags: bool,
    pub ident: u32,
}

impl Ipv6FragmentRepr {
    /// Reads a fragment header; reserved bits are ignored on receipt
    /// (RFC 8200 §4.5).
    pub fn parse<T: AsRef<[u8]>>(header: &Ipv6FragmentHeader<T>) -> Result<Self> {
        header.check_len()?;
        Ok(Self {
            next_header: header.next_header(),
            frag_offset: header.frag_offset(),
            more_frags: header.more_frags(),
            ident: header.ident(),
        })
    }

    /// Bytes of the header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `header`,
    /// reserved fields zeroed.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        header: &mut Ipv6FragmentHeader<T>,
    ) -> Result<()> {
        if !self.frag_offset.is_multiple_of(8) || self.frag_offset > MAX_FRAG_OFFSET {
            return Err(Error::Malformed(
                "fragment offset not a multiple of 8 below 65536",
            ));
        }
        if header.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        header.set_next_header(self.next_header);
        header.buffer.as_mut()[field::RESERVED] = 0;
        header.set_offset_flags(self.frag_offset as u16 | u16::from(self.more_frags));
        header.set_ident(self.ident);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hand_made_header() {
        // UDP, reserved 0xff (ignored), offset 185 units (1480 bytes),
        // reserved bits set, M set, ident 0x01020304.
        let bytes = [17, 0xff, 0x05, 0xcf, 1, 2, 3, 4, 0xaa];
        let header = Ipv6FragmentHeader::new_checked(&bytes[..]).unwrap();
        let repr = Ipv6FragmentRepr::parse(&header).unwrap();
        assert_eq!(
            repr,
            Ipv6FragmentRepr {
                next_header: IpProtocol::Udp,
                frag_offset: 1480,
                more_frags: true,
                ident: 0x0102_0304,
            }
        );
        assert!(!header.is_atomic());
        assert_eq!(header.payload(), &[0xaa]);

        let mut out = [0xff; HEADER_LEN];
        repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, [17, 0, 0x05, 0xc9, 1, 2, 3, 4]);
    }

    #[test]
    fn truncated_header() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Ipv6FragmentHeader::new_checked(&[0u8; 8][..len]),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn setters_and_atomic() {
        let mut buf = [0xffu8; 8];
        let mut header = Ipv6FragmentHeader::new_unchecked(&mut buf[..]);
        header.clear_reserved();
        header.set_frag_offset(0);
        header.set_more_frags(false);
        assert!(header.is_atomic());
        header.set_frag_offset(MAX_FRAG_OFFSET);
        header.set_more_frags(true);
        assert_eq!(header.frag_offset(), MAX_FRAG_OFFSET);
        assert!(header.more_frags());
        assert_eq!(buf[1..4], [0, 0xff, 0xf9]);
    }

    #[test]
    fn emit_refuses_bad_offsets() {
        let mut out = [0; HEADER_LEN];
        for frag_offset in [4, MAX_FRAG_OFFSET + 8] {
            let repr = Ipv6FragmentRepr {
                next_header: IpProtocol::Tcp,
                frag_offset,
                more_frags: false,
                ident: 0,
            };
            assert!(repr
                .emit(&mut Ipv6FragmentHeader::new_unchecked(&mut out[..]))
                .is_err());
        }
    }
}
