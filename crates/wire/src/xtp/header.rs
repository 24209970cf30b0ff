//! The 32-byte common header every XTP 4.0 packet starts with, and the
//! checksum over it.

use crate::bytes::{be_u16, be_u32, put_be_u16, put_be_u32};
use crate::checksum;
use crate::{Error, Result};

use super::options::{PacketType, XtpOptions};
use super::{be_u64, put_be_u64, VERSION_4};

mod field {
    use core::ops::Range;
    pub const KEY: Range<usize> = 0..8;
    /// 24 option bits, then the packet-type byte.
    pub const CMD: Range<usize> = 8..12;
    pub const PTYPE: usize = 11;
    pub const DLEN: Range<usize> = 12..16;
    pub const CHECK: Range<usize> = 16..18;
    pub const SORT: Range<usize> = 18..20;
    pub const SYNC: Range<usize> = 20..24;
    pub const SEQ: Range<usize> = 24..32;
}

/// Length of the common header.
pub const HEADER_LEN: usize = 32;

/// A view of an XTP packet in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XtpPacket<T: AsRef<[u8]>> {
    pub(super) buffer: T,
}

impl<T: AsRef<[u8]>> XtpPacket<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// The header fits and `dlen` lies within the buffer. Bytes after the
    /// segment (link padding: over Ethernet a short packet is padded to 46
    /// bytes) are allowed and ignored.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let dlen = usize::try_from(self.dlen()).map_err(|_| Error::Truncated)?;
        if dlen > len - HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The context key, its top bit the return bit
    /// ([`KEY_RETURN`](super::KEY_RETURN)).
    pub fn key(&self) -> u64 {
        be_u64(self.buffer.as_ref(), field::KEY.start)
    }

    /// The whole `cmd` field: options (high 24 bits) and packet-type byte.
    pub fn cmd(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::CMD.start)
    }

    pub fn options(&self) -> XtpOptions {
        XtpOptions::from_bits(self.cmd() >> 8)
    }

    /// The packet-type byte: version (3 bits) and format (5 bits).
    pub fn ptype(&self) -> u8 {
        self.buffer.as_ref()[field::PTYPE]
    }

    /// The version, 1 for XTP 4.0.
    pub fn version(&self) -> u8 {
        self.ptype() >> 5
    }

    pub fn packet_type(&self) -> PacketType {
        PacketType::from(self.ptype() & 0x1f)
    }

    /// Length of the segment after the header.
    pub fn dlen(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::DLEN.start)
    }

    pub fn check(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECK.start)
    }

    /// Priority of the packet when the SORT option is set.
    pub fn sort(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::SORT.start)
    }

    /// Handshake value a control packet echoes back (`echo`).
    pub fn sync(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::SYNC.start)
    }

    /// Sequence number of the first data byte (64-bit in 4.0).
    pub fn seq(&self) -> u64 {
        be_u64(self.buffer.as_ref(), field::SEQ.start)
    }

    /// The header and segment, as `dlen` bounds them (padding excluded).
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..HEADER_LEN + self.dlen() as usize]
    }

    /// The segment, as `dlen` bounds it.
    pub fn segment(&self) -> &[u8] {
        &self.packet()[HEADER_LEN..]
    }

    /// The bytes the checksum covers: the header always, the segment
    /// unless NOCHECK (4.0; Wireshark's dissector sums the same bytes).
    pub fn checksummed(&self) -> &[u8] {
        if self.options().contains(XtpOptions::NOCHECK) {
            &self.buffer.as_ref()[..HEADER_LEN]
        } else {
            self.packet()
        }
    }

    /// Whether the checksum verifies: the ones'-complement sum of the
    /// covered bytes, the check field included, is all ones.
    pub fn verify_checksum(&self) -> bool {
        checksum::verifies(0, self.checksummed())
    }

    /// Checks the version is 4.0's, the first thing a receiver must know.
    pub fn check_version(&self) -> Result<()> {
        if self.version() == VERSION_4 {
            Ok(())
        } else {
            Err(Error::Unsupported("XTP version other than 4.0"))
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> XtpPacket<T> {
    pub fn set_key(&mut self, value: u64) {
        put_be_u64(self.buffer.as_mut(), field::KEY.start, value)
    }

    pub fn set_cmd(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::CMD.start, value)
    }

    /// Sets the options, keeping the packet-type byte.
    pub fn set_options(&mut self, options: XtpOptions) {
        let ptype = u32::from(self.ptype());
        self.set_cmd((options.bits() << 8) | ptype);
    }

    /// Sets version (low 3 bits of `version`) and packet type (low 5 bits).
    pub fn set_ptype(&mut self, version: u8, packet_type: PacketType) {
        self.buffer.as_mut()[field::PTYPE] = (version << 5) | (u8::from(packet_type) & 0x1f);
    }

    pub fn set_dlen(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::DLEN.start, value)
    }

    pub fn set_check(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECK.start, value)
    }

    pub fn set_sort(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::SORT.start, value)
    }

    pub fn set_sync(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::SYNC.start, value)
    }

    pub fn set_seq(&mut self, value: u64) {
        put_be_u64(self.buffer.as_mut(), field::SEQ.start, value)
    }

    /// The segment, as `dlen` bounds it.
    pub fn segment_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + self.dlen() as usize;
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes and stores the checksum over the covered bytes. Unlike UDP's,
    /// a zero field does not mean "no checksum" (Wireshark verifies it like
    /// any other value), so the value is stored as is.
    pub fn fill_checksum(&mut self) {
        self.set_check(0);
        let value = checksum::checksum(self.checksummed());
        self.set_check(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dlen: u32, options: XtpOptions) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_LEN + dlen as usize];
        let mut p = XtpPacket::new_unchecked(&mut buf[..]);
        p.set_key(0x0123_4567_89ab_cdef);
        p.set_ptype(VERSION_4, PacketType::Data);
        p.set_options(options);
        p.set_dlen(dlen);
        p.set_sort(7);
        p.set_sync(0xdead_beef);
        p.set_seq(1 << 40);
        p.segment_mut().fill(0x5a);
        p.fill_checksum();
        buf
    }

    #[test]
    fn fields_land_where_the_dissector_reads_them() {
        let buf = header(4, XtpOptions::EOM | XtpOptions::NOFLOW);
        assert_eq!(&buf[..8], &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        // cmd: options 0x010400, then version 1 / DATA = 0x20.
        assert_eq!(&buf[8..12], &[0x01, 0x04, 0x00, 0x20]);
        assert_eq!(&buf[12..16], &[0, 0, 0, 4]);
        assert_eq!(&buf[18..20], &[0, 7]);
        assert_eq!(&buf[20..24], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&buf[24..32], &[0, 0, 1, 0, 0, 0, 0, 0]);
        let p = XtpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.version(), VERSION_4);
        assert_eq!(p.packet_type(), PacketType::Data);
        assert_eq!(p.options(), XtpOptions::EOM | XtpOptions::NOFLOW);
        assert!(p.verify_checksum());
    }

    #[test]
    fn checksum_covers_the_segment_unless_nocheck() {
        let mut buf = header(4, XtpOptions::empty());
        buf[HEADER_LEN] ^= 1;
        assert!(!XtpPacket::new_checked(&buf[..]).unwrap().verify_checksum());

        let mut buf = header(4, XtpOptions::NOCHECK);
        buf[HEADER_LEN] ^= 1;
        let p = XtpPacket::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum(), "NOCHECK leaves the segment uncovered");
        buf[19] ^= 1;
        assert!(!XtpPacket::new_checked(&buf[..]).unwrap().verify_checksum());
    }

    #[test]
    fn lying_lengths_are_refused_and_padding_ignored() {
        assert_eq!(
            XtpPacket::new_checked(&[0u8; 31][..]),
            Err(Error::Truncated)
        );
        let mut buf = header(4, XtpOptions::empty());
        buf[12..16].copy_from_slice(&5u32.to_be_bytes());
        assert_eq!(XtpPacket::new_checked(&buf[..]), Err(Error::Truncated));
        buf[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(XtpPacket::new_checked(&buf[..]), Err(Error::Truncated));

        let mut padded = header(1, XtpOptions::empty());
        padded.extend_from_slice(&[0xff; 13]);
        let p = XtpPacket::new_checked(&padded[..]).unwrap();
        assert_eq!(p.segment(), &[0x5a]);
        assert!(p.verify_checksum(), "padding is outside the checksum");
    }
}
