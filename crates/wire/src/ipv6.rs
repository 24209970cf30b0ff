//! The IPv6 fixed header (RFC 8200 §3) and a few address helpers that
//! `core::net::Ipv6Addr` does not provide.
//!
//! Jumbograms (RFC 2675: payload length 0 plus a hop-by-hop jumbo option) are
//! not supported: a payload length of 0 means an empty payload.

use core::net::Ipv6Addr;

use crate::bytes::{be_u16, be_u32, ipv6_at, put_be_u16, put_be_u32, put_ipv6};
use crate::ip::IpProtocol;
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    /// Version (4 bits), traffic class (8 bits), flow label (20 bits).
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;
/// The value of the version field.
pub const VERSION: u8 = 6;
/// The minimum link MTU every IPv6 link must carry (RFC 8200 §5).
pub const MIN_MTU: usize = 1280;
/// Largest value the 20-bit flow label can hold.
pub const MAX_FLOW_LABEL: u32 = 0x000f_ffff;

/// A view of an IPv6 packet in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
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

    /// The fixed header fits, the version is 6, and the payload length lies
    /// within the buffer (which may hold trailing link padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != VERSION {
            return Err(Error::Malformed("IPv6 version is not 6"));
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn ver_tc_flow(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::VER_TC_FLOW.start)
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class: DSCP in the high six bits, ECN in the low two.
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & MAX_FLOW_LABEL
    }

    /// The payload length field: bytes after the fixed header, extension
    /// headers included.
    pub fn payload_len(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::PAYLOAD_LEN.start)
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    pub fn src_addr(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), field::SRC_ADDR.start)
    }

    pub fn dst_addr(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), field::DST_ADDR.start)
    }

    /// Header plus payload, as the payload length field claims.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + usize::from(self.payload_len())
    }

    /// The payload, bounded by the payload length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_ver_tc_flow(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::VER_TC_FLOW.start, value);
    }

    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[0];
        *b = (*b & 0x0f) | (value << 4);
    }

    pub fn set_traffic_class(&mut self, value: u8) {
        let word = (self.ver_tc_flow() & 0xf00f_ffff) | (u32::from(value) << 20);
        self.set_ver_tc_flow(word);
    }

    /// Sets the flow label; bits above the low 20 are ignored.
    pub fn set_flow_label(&mut self, value: u32) {
        let word = (self.ver_tc_flow() & !MAX_FLOW_LABEL) | (value & MAX_FLOW_LABEL);
        self.set_ver_tc_flow(word);
    }

    pub fn set_payload_len(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::PAYLOAD_LEN.start, value);
    }

    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value.into();
    }

    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    pub fn set_src_addr(&mut self, value: Ipv6Addr) {
        put_ipv6(self.buffer.as_mut(), field::SRC_ADDR.start, value);
    }

    pub fn set_dst_addr(&mut self, value: Ipv6Addr) {
        put_ipv6(self.buffer.as_mut(), field::DST_ADDR.start, value);
    }

    /// The payload, bounded by the payload length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The meaning of an IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// The first extension header or the upper-layer protocol.
    pub next_header: IpProtocol,
    /// Bytes after the fixed header (extension headers and upper layer).
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// 20-bit flow label (RFC 6437).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Reads a fixed header after checking its length and version.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Self> {
        packet.check_len()?;
        Ok(Self {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Bytes of header this repr emits.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes of header and payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the fixed header into the first [`HEADER_LEN`] bytes of
    /// `packet`; the payload is the caller's (it may live in another
    /// segment, so the buffer need only hold the header).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) -> Result<()> {
        let payload_len = u16::try_from(self.payload_len)
            .map_err(|_| Error::Unsupported("IPv6 payload longer than 65535 bytes (jumbogram)"))?;
        if self.flow_label > MAX_FLOW_LABEL {
            return Err(Error::Malformed("IPv6 flow label wider than 20 bits"));
        }
        // The header as one fixed-size array: every field's place is
        // known when compiled, so no write needs its own bounds check (an
        // IPv6 packet sent per TCP segment, issue 22).
        let Some(header) = packet.buffer.as_mut().first_chunk_mut::<HEADER_LEN>() else {
            return Err(Error::Truncated);
        };
        let ver_tc_flow =
            (u32::from(VERSION) << 28) | (u32::from(self.traffic_class) << 20) | self.flow_label;
        header[field::VER_TC_FLOW].copy_from_slice(&ver_tc_flow.to_be_bytes());
        header[field::PAYLOAD_LEN].copy_from_slice(&payload_len.to_be_bytes());
        header[field::NEXT_HEADER] = self.next_header.into();
        header[field::HOP_LIMIT] = self.hop_limit;
        header[field::SRC_ADDR].copy_from_slice(&self.src.octets());
        header[field::DST_ADDR].copy_from_slice(&self.dst.octets());
        Ok(())
    }
}

// Address helpers.

/// All-nodes link-local multicast, ff02::1 (RFC 4291 §2.7.1).
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// All-routers link-local multicast, ff02::2 (RFC 4291 §2.7.1).
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
/// All MLDv2-capable routers, ff02::16 (RFC 3810 §5.2.14).
pub const ALL_MLDV2_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);

/// Whether `addr` is link-local unicast, fe80::/10 (RFC 4291 §2.5.6): the
/// same as [`Ipv6Addr::is_unicast_link_local`] (stable since Rust 1.84), which
/// new code can call directly.
pub const fn is_link_local(addr: &Ipv6Addr) -> bool {
    addr.is_unicast_link_local()
}

/// Whether `addr` is a solicited-node multicast address, ff02::1:ffXX:XXXX.
pub const fn is_solicited_node(addr: &Ipv6Addr) -> bool {
    let s = addr.segments();
    s[0] == 0xff02
        && s[1] == 0
        && s[2] == 0
        && s[3] == 0
        && s[4] == 0
        && s[5] == 1
        && s[6] & 0xff00 == 0xff00
}

/// The solicited-node multicast address of a unicast or anycast address:
/// ff02::1:ff00:0/104 plus its low 24 bits (RFC 4291 §2.7.1).
pub const fn solicited_node(addr: &Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | o[13] as u16,
        ((o[14] as u16) << 8) | o[15] as u16,
    )
}

/// The link-local address fe80::/64 with the given 64-bit interface
/// identifier (RFC 4291 §2.5.6, RFC 4862 §5.3).
pub const fn link_local_from_interface_id(interface_id: [u8; 8]) -> Ipv6Addr {
    let i = interface_id;
    Ipv6Addr::new(
        0xfe80,
        0,
        0,
        0,
        u16::from_be_bytes([i[0], i[1]]),
        u16::from_be_bytes([i[2], i[3]]),
        u16::from_be_bytes([i[4], i[5]]),
        u16::from_be_bytes([i[6], i[7]]),
    )
}

/// The low 64 bits of an address: its interface identifier when the prefix
/// is a /64 (RFC 4291 §2.5.1).
pub const fn interface_id(addr: &Ipv6Addr) -> [u8; 8] {
    let o = addr.octets();
    [o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15]]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

    fn repr(payload_len: usize) -> Ipv6Repr {
        Ipv6Repr {
            src: SRC,
            dst: DST,
            next_header: IpProtocol::Udp,
            payload_len,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0x1_2345,
        }
    }

    fn emit(payload: &[u8]) -> Vec<u8> {
        let repr = repr(payload.len());
        let mut buf = vec![0; repr.buffer_len()];
        let mut packet = Ipv6Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut packet).unwrap();
        packet.payload_mut().copy_from_slice(payload);
        buf
    }

    #[test]
    fn emits_known_bytes() {
        let buf = emit(b"ab");
        assert_eq!(&buf[..8], &[0x6b, 0x81, 0x23, 0x45, 0x00, 0x02, 17, 64]);
        assert_eq!(&buf[8..24], &SRC.octets());
        assert_eq!(&buf[24..40], &DST.octets());
        assert_eq!(&buf[40..], b"ab");
    }

    #[test]
    fn round_trip() {
        let buf = emit(b"hello");
        let packet = Ipv6Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&packet).unwrap(), repr(5));
        assert_eq!(packet.payload(), b"hello");
    }

    #[test]
    fn setters_keep_neighbouring_fields() {
        let mut buf = emit(b"");
        let mut packet = Ipv6Packet::new_unchecked(&mut buf[..]);
        packet.set_flow_label(0xfff_ffff);
        assert_eq!(packet.flow_label(), MAX_FLOW_LABEL);
        assert_eq!(packet.traffic_class(), 0xb8);
        packet.set_traffic_class(0x01);
        assert_eq!(packet.version(), 6);
        assert_eq!(packet.flow_label(), MAX_FLOW_LABEL);
        assert_eq!(packet.traffic_class(), 0x01);
    }

    #[test]
    fn wrong_version_and_short_buffers_are_refused() {
        let mut buf = emit(b"xyz");
        for len in 0..buf.len() {
            assert_eq!(Ipv6Packet::new_checked(&buf[..len]), Err(Error::Truncated));
        }
        buf[0] = 0x45;
        assert!(matches!(
            Ipv6Packet::new_checked(&buf[..]),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn trailing_link_padding_is_ignored() {
        let mut buf = emit(b"abc");
        buf.extend_from_slice(&[0xee; 20]);
        let packet = Ipv6Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.payload(), b"abc");
    }

    #[test]
    fn zero_payload_length_is_an_empty_payload() {
        // No jumbogram support: the bytes after the header are padding.
        let mut buf = emit(b"abc");
        buf[4..6].copy_from_slice(&[0, 0]);
        let packet = Ipv6Packet::new_checked(&buf[..]).unwrap();
        assert!(packet.payload().is_empty());
    }

    #[test]
    fn emit_refuses_what_the_header_cannot_hold() {
        let mut buf = [0; HEADER_LEN];
        let mut packet = Ipv6Packet::new_unchecked(&mut buf[..]);
        assert!(repr(70_000).emit(&mut packet).is_err());
        let mut wide = repr(0);
        wide.flow_label = 0x10_0000;
        assert!(wide.emit(&mut packet).is_err());
        let mut short = [0; HEADER_LEN - 1];
        let mut packet = Ipv6Packet::new_unchecked(&mut short[..]);
        assert_eq!(repr(0).emit(&mut packet), Err(Error::Truncated));
    }

    #[test]
    fn address_helpers() {
        let unicast = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0x0211, 0x22ff, 0xfe33, 0x4455);
        let snm = solicited_node(&unicast);
        assert_eq!(snm, "ff02::1:ff33:4455".parse::<Ipv6Addr>().unwrap());
        assert!(is_solicited_node(&snm));
        assert!(!is_solicited_node(&ALL_NODES));
        let ll = link_local_from_interface_id(interface_id(&unicast));
        assert_eq!(ll, "fe80::211:22ff:fe33:4455".parse::<Ipv6Addr>().unwrap());
        assert!(is_link_local(&ll));
        assert!(is_link_local(&"febf::1".parse().unwrap()));
        assert!(!is_link_local(&"fec0::1".parse().unwrap()));
        assert!(!is_link_local(&ALL_NODES));
    }
}
