//! UDP (RFC 768). The checksum covers the IPv4 or IPv6 pseudo-header; for
//! IPv6 it is mandatory (RFC 8200 §8.1) and a zero checksum is refused.

use core::net::IpAddr;

use crate::bytes::{be_u16, put_be_u16};
use crate::checksum;
use crate::ip::{pseudo_header, ChecksumMode, IpProtocol};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
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

    /// The header fits, and the length field covers the header and lies
    /// within the buffer (which may hold trailing link padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let claimed = usize::from(self.len());
        if claimed < HEADER_LEN {
            return Err(Error::Malformed("UDP length below header length"));
        }
        if claimed > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::SRC_PORT.start)
    }

    pub fn dst_port(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::DST_PORT.start)
    }

    /// The length field: header plus payload.
    pub fn len(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    pub fn checksum(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// The datagram as the length field bounds it (header and payload).
    pub fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// The payload, bounded by the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Whether the checksum verifies over the pseudo-header and datagram. A
    /// zero field means "no checksum" and verifies only for IPv4 (RFC 768).
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        if self.checksum() == 0 {
            return src.is_ipv4();
        }
        let pseudo = pseudo_header(src, dst, IpProtocol::Udp, u32::from(self.len()));
        checksum::verifies(pseudo, self.datagram())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::SRC_PORT.start, value)
    }

    pub fn set_dst_port(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::DST_PORT.start, value)
    }

    pub fn set_len(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::LENGTH.start, value)
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECKSUM.start, value)
    }

    /// The payload, bounded by the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes and stores the checksum. A computed 0x0000 is sent as 0xffff
    /// (RFC 768: zero means "no checksum").
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        let pseudo = pseudo_header(src, dst, IpProtocol::Udp, u32::from(self.len()));
        let sum = checksum::add(pseudo, checksum::sum(self.datagram()));
        let value = match checksum::finish(sum) {
            0 => 0xffff,
            v => v,
        };
        self.set_checksum(value);
    }
}

/// The meaning of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    /// Validates a datagram: ports non-zero at the destination, checksum
    /// verified under `mode` (IPv6 zero checksums refused, RFC 8200 §8.1).
    pub fn parse<T: AsRef<[u8]>>(
        packet: &UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        if packet.dst_port() == 0 {
            return Err(Error::Malformed("UDP destination port 0"));
        }
        if mode == ChecksumMode::Full && !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(Self {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// Bytes of header this repr emits.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes of header and a payload of `payload_len`.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes header and payload into `packet` (whose buffer must hold
    /// `buffer_len(payload_len)` bytes), lets `emit_payload` fill the
    /// payload, then fills the checksum under `mode`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
        mode: ChecksumMode,
    ) -> Result<()> {
        let total = u16::try_from(self.buffer_len(payload_len))
            .map_err(|_| Error::Malformed("UDP datagram longer than 65535 bytes"))?;
        if packet.buffer.as_ref().len() < usize::from(total) {
            return Err(Error::Truncated);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(total);
        packet.set_checksum(0);
        emit_payload(packet.payload_mut());
        if mode == ChecksumMode::Full {
            packet.fill_checksum(src, dst);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    const SRC6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    const DST6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));
    const SRC4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const DST4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

    fn emit(src: &IpAddr, dst: &IpAddr, payload: &[u8]) -> Vec<u8> {
        let repr = UdpRepr {
            src_port: 4000,
            dst_port: 5001,
        };
        let mut buf = vec![0; repr.buffer_len(payload.len())];
        let mut packet = UdpPacket::new_unchecked(&mut buf[..]);
        repr.emit(
            &mut packet,
            src,
            dst,
            payload.len(),
            |p| p.copy_from_slice(payload),
            ChecksumMode::Full,
        )
        .unwrap();
        buf
    }

    #[test]
    fn round_trip_both_families() {
        for (s, d) in [(SRC6, DST6), (SRC4, DST4)] {
            let buf = emit(&s, &d, b"hello");
            let packet = UdpPacket::new_checked(&buf[..]).unwrap();
            let repr = UdpRepr::parse(&packet, &s, &d, ChecksumMode::Full).unwrap();
            assert_eq!((repr.src_port, repr.dst_port), (4000, 5001));
            assert_eq!(packet.payload(), b"hello");
        }
    }

    #[test]
    fn corrupted_payload_fails_checksum() {
        let mut buf = emit(&SRC6, &DST6, b"hello");
        buf[9] ^= 0x01;
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(
            UdpRepr::parse(&packet, &SRC6, &DST6, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        assert!(UdpRepr::parse(&packet, &SRC6, &DST6, ChecksumMode::Skip).is_ok());
    }

    #[test]
    fn zero_checksum_allowed_for_ipv4_only() {
        let mut buf = emit(&SRC4, &DST4, b"x");
        buf[6..8].copy_from_slice(&[0, 0]);
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(UdpRepr::parse(&packet, &SRC4, &DST4, ChecksumMode::Full).is_ok());
        assert_eq!(
            UdpRepr::parse(&packet, &SRC6, &DST6, ChecksumMode::Full),
            Err(Error::Checksum)
        );
    }

    #[test]
    fn lying_length_fields_are_refused() {
        let mut buf = emit(&SRC6, &DST6, b"hello");
        buf[4..6].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(UdpPacket::new_checked(&buf[..]), Err(Error::Truncated));
        buf[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert!(matches!(
            UdpPacket::new_checked(&buf[..]),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn trailing_link_padding_is_ignored() {
        let mut buf = emit(&SRC4, &DST4, b"abc");
        buf.extend_from_slice(&[0; 20]);
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.payload(), b"abc");
        assert!(UdpRepr::parse(&packet, &SRC4, &DST4, ChecksumMode::Full).is_ok());
    }
}
