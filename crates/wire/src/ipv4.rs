//! IPv4 (RFC 791) headers with their options kept: the stackscope trace
//! option travels in the IPv4 header (see [`crate::trace_option`]).

use core::fmt;
use core::hash::{Hash, Hasher};
use core::net::Ipv4Addr;

use crate::bytes::{be_u16, put_be_u16};
use crate::checksum;
use crate::ip::{ChecksumMode, IpProtocol};
use crate::tlv;
use crate::trace_option::{self, TraceOption};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLAGS_FRAG_OFFSET: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
    pub const OPTIONS: usize = 20;
}

/// Bits of the flags / fragment-offset word (RFC 791 §3.1).
mod flag {
    pub const RESERVED: u16 = 0x8000;
    pub const DONT_FRAG: u16 = 0x4000;
    pub const MORE_FRAGS: u16 = 0x2000;
    pub const OFFSET_MASK: u16 = 0x1fff;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;
/// Length of the longest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;
/// Bytes of options an IPv4 header can hold.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;
/// Largest fragment offset in bytes: 13 bits counting 8-byte units.
pub const MAX_FRAG_OFFSET: u16 = flag::OFFSET_MASK * 8;

/// Option kinds this module interprets (RFC 791 §3.1).
mod kind {
    pub(crate) use crate::tlv::{END_OF_LIST, NO_OPERATION};
}

/// One IPv4 option (RFC 791 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ipv4Option<'a> {
    /// End of option list (kind 0); what follows is padding.
    EndOfList,
    /// No operation (kind 1), used to align a following option.
    NoOperation,
    /// The stackscope trace option (kind 0x9E, length 6).
    Trace(TraceOption),
    /// Any other option, kept as its kind and data (without the kind and
    /// length bytes).
    Unknown { kind: u8, data: &'a [u8] },
}

impl Ipv4Option<'_> {
    /// Bytes the option occupies on the wire.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::EndOfList | Self::NoOperation => 1,
            Self::Trace(_) => 2 + trace_option::DATA_LEN,
            Self::Unknown { data, .. } => 2 + data.len(),
        }
    }
}

/// How [`tlv::read`] reports a broken IPv4 option.
const OPTION_ERRORS: tlv::Errors = tlv::Errors {
    missing_length: "IPv4 option length byte past header",
    short_length: "IPv4 option length below 2",
    past_end: "IPv4 option runs past header",
};

/// Reads the option at the start of `area` (the rest of an option area);
/// returns it and the bytes it takes (RFC 791 §3.1, see [`tlv`]).
fn read_option(area: &[u8]) -> Result<(Ipv4Option<'_>, usize)> {
    let (kind, data, len) = tlv::read(area, &OPTION_ERRORS)?;
    let option = match kind {
        kind::END_OF_LIST => Ipv4Option::EndOfList,
        kind::NO_OPERATION => Ipv4Option::NoOperation,
        trace_option::IPV4_OPTION_TYPE => Ipv4Option::Trace(TraceOption::parse(data)?),
        kind => Ipv4Option::Unknown { kind, data },
    };
    Ok((option, len))
}

/// The options of an IPv4 header: the raw option area (a multiple of 4
/// bytes, at most 40), validated, held inline without allocation.
#[derive(Clone, Copy)]
pub struct Ipv4Options {
    bytes: [u8; MAX_OPTIONS_LEN],
    len: u8,
}

impl Ipv4Options {
    /// No options.
    pub const EMPTY: Self = Self {
        bytes: [0; MAX_OPTIONS_LEN],
        len: 0,
    };

    /// Validates a header's option area (bytes 20 to IHL*4). Every option
    /// before the first end-of-list must lie inside the area; bytes after
    /// an end-of-list are padding (RFC 791 §3.1) and are kept as they are.
    pub fn parse(area: &[u8]) -> Result<Self> {
        if area.len() > MAX_OPTIONS_LEN {
            return Err(Error::Malformed("IPv4 options longer than 40 bytes"));
        }
        if area.len() & 3 != 0 {
            return Err(Error::Malformed("IPv4 option area not a multiple of 4"));
        }
        let mut pos = 0;
        while pos < area.len() {
            let (option, len) = read_option(&area[pos..])?;
            if option == Ipv4Option::EndOfList {
                break;
            }
            pos += len;
        }
        let mut bytes = [0; MAX_OPTIONS_LEN];
        bytes[..area.len()].copy_from_slice(area);
        Ok(Self {
            bytes,
            len: area.len() as u8,
        })
    }

    /// Lays out `options` in order and pads the area with zeros (an
    /// end-of-list, then zero padding) to a multiple of 4, as RFC 791 §3.1
    /// requires of the header. Refuses an area over 40 bytes, options after
    /// an end-of-list, and `Unknown` options whose kind is one this module
    /// interprets (0, 1, the trace option) or whose data exceeds 253 bytes.
    pub fn from_options(options: &[Ipv4Option<'_>]) -> Result<Self> {
        let mut bytes = [0; MAX_OPTIONS_LEN];
        let mut pos = 0;
        let mut ended = false;
        for option in options {
            if ended {
                return Err(Error::Malformed("IPv4 option after end of option list"));
            }
            let len = option.buffer_len();
            let Some(slot) = bytes.get_mut(pos..pos + len) else {
                return Err(Error::Malformed("IPv4 options longer than 40 bytes"));
            };
            match *option {
                Ipv4Option::EndOfList => {
                    slot[0] = kind::END_OF_LIST;
                    ended = true;
                }
                Ipv4Option::NoOperation => slot[0] = kind::NO_OPERATION,
                Ipv4Option::Trace(trace) => {
                    let mut data = [0; trace_option::DATA_LEN];
                    trace.emit(&mut data);
                    tlv::write(slot, trace_option::IPV4_OPTION_TYPE, &data);
                }
                Ipv4Option::Unknown { kind, data } => {
                    if matches!(
                        kind,
                        kind::END_OF_LIST | kind::NO_OPERATION | trace_option::IPV4_OPTION_TYPE
                    ) {
                        return Err(Error::Malformed("IPv4 unknown option with a known kind"));
                    }
                    // `slot` fits in 40 bytes, so its length fits a byte.
                    tlv::write(slot, kind, data);
                }
            }
            pos += len;
        }
        // Zero padding: the first zero byte, if any, is the end-of-list.
        let padded = pos.next_multiple_of(4);
        Ok(Self {
            bytes,
            len: padded as u8,
        })
    }

    /// The trace option alone, padded to 8 bytes: `9E 06 <flow> 00 00`.
    pub fn with_trace(trace: TraceOption) -> Self {
        match Self::from_options(&[Ipv4Option::Trace(trace)]) {
            Ok(options) => options,
            // Six bytes always fit in forty.
            Err(_) => unreachable!("a lone trace option fits"),
        }
    }

    /// The option area as it goes on the wire.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Length of the option area in bytes (a multiple of 4).
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The options in order, up to and including an end-of-list.
    pub fn iter(&self) -> Ipv4OptionIter<'_> {
        Ipv4OptionIter {
            area: self.as_bytes(),
            pos: 0,
        }
    }

    /// The trace option, if present.
    pub fn trace(&self) -> Option<TraceOption> {
        self.iter().find_map(|option| match option {
            Ipv4Option::Trace(trace) => Some(trace),
            _ => None,
        })
    }
}

impl Default for Ipv4Options {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PartialEq for Ipv4Options {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Ipv4Options {}

impl Hash for Ipv4Options {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for Ipv4Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Ipv4Options {
    type Item = Ipv4Option<'a>;
    type IntoIter = Ipv4OptionIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over validated [`Ipv4Options`].
#[derive(Debug, Clone)]
pub struct Ipv4OptionIter<'a> {
    area: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Ipv4OptionIter<'a> {
    type Item = Ipv4Option<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.area.len() {
            return None;
        }
        // The area was validated when built; an error cannot occur, and
        // would end the iteration rather than panic.
        let (option, len) = read_option(&self.area[self.pos..]).ok()?;
        self.pos = if option == Ipv4Option::EndOfList {
            self.area.len()
        } else {
            self.pos + len
        };
        Some(option)
    }
}

/// A view of an IPv4 packet in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
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

    /// Version 4; IHL at least 5 and the header inside the buffer; total
    /// length covering the header and inside the buffer (which may hold
    /// trailing link padding).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::Malformed("IP version not 4"));
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("IPv4 IHL below 5"));
        }
        if header_len > len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed("IPv4 total length below header length"));
        }
        if total_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn addr_at(&self, range: core::ops::Range<usize>) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[range];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL counts 32-bit words).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The former type-of-service byte: DSCP in the high six bits, ECN in
    /// the low two (RFC 2474, RFC 3168).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Length of header and payload.
    pub fn total_len(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::LENGTH.start)
    }

    pub fn ident(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::IDENT.start)
    }

    fn flags_frag_offset(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET.start)
    }

    /// The reserved flag, which must be zero (RFC 791 §3.1).
    pub fn reserved_flag(&self) -> bool {
        self.flags_frag_offset() & flag::RESERVED != 0
    }

    pub fn dont_frag(&self) -> bool {
        self.flags_frag_offset() & flag::DONT_FRAG != 0
    }

    pub fn more_frags(&self) -> bool {
        self.flags_frag_offset() & flag::MORE_FRAGS != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.flags_frag_offset() & flag::OFFSET_MASK) * 8
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    pub fn checksum(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    pub fn src_addr(&self) -> Ipv4Addr {
        self.addr_at(field::SRC)
    }

    pub fn dst_addr(&self) -> Ipv4Addr {
        self.addr_at(field::DST)
    }

    /// The header (options included), bounded by IHL.
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// The raw option area, bounded by IHL.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The payload, bounded by the total length (link padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }

    /// Whether the header checksum verifies (RFC 791 §3.1: it covers the
    /// header only).
    pub fn verify_checksum(&self) -> bool {
        checksum::verifies(0, self.header())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn set_flags_frag_offset(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::FLAGS_FRAG_OFFSET.start, value)
    }

    fn set_flag(&mut self, mask: u16, on: bool) {
        let word = self.flags_frag_offset() & !mask;
        self.set_flags_frag_offset(if on { word | mask } else { word })
    }

    pub fn set_version(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0x0f) | (value << 4);
    }

    /// Sets IHL from a header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: usize) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value
    }

    pub fn set_total_len(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::LENGTH.start, value)
    }

    pub fn set_ident(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::IDENT.start, value)
    }

    pub fn set_reserved_flag(&mut self, on: bool) {
        self.set_flag(flag::RESERVED, on)
    }

    pub fn set_dont_frag(&mut self, on: bool) {
        self.set_flag(flag::DONT_FRAG, on)
    }

    pub fn set_more_frags(&mut self, on: bool) {
        self.set_flag(flag::MORE_FRAGS, on)
    }

    /// Sets the fragment offset from bytes (a multiple of 8; the low three
    /// bits are dropped).
    pub fn set_frag_offset(&mut self, bytes: u16) {
        let word = self.flags_frag_offset() & !flag::OFFSET_MASK;
        self.set_flags_frag_offset(word | (bytes / 8))
    }

    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value
    }

    pub fn set_protocol(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.into()
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECKSUM.start, value)
    }

    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.octets())
    }

    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.octets())
    }

    /// The raw option area, bounded by IHL.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// The payload, bounded by the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        let end = usize::from(self.total_len());
        &mut self.buffer.as_mut()[start..end]
    }

    /// Computes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let len = self.header_len();
        checksum::fill(&mut self.buffer.as_mut()[..len], field::CHECKSUM.start);
    }
}

/// The meaning of an IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: IpProtocol,
    /// The former type-of-service byte (DSCP and ECN).
    pub dscp_ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes, a multiple of 8.
    pub frag_offset: u16,
    pub ttl: u8,
    /// Bytes of payload after the header.
    pub payload_len: usize,
    pub options: Ipv4Options,
}

impl Ipv4Repr {
    /// Validates a header: lengths (see [`Ipv4Packet::check_len`]), the
    /// checksum under `mode`, and the option TLVs. The reserved flag is
    /// ignored, as a receiver should be liberal (RFC 1122 §1.2.2).
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>, mode: ChecksumMode) -> Result<Self> {
        packet.check_len()?;
        if mode == ChecksumMode::Full && !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        let options = Ipv4Options::parse(packet.options())?;
        Ok(Self {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            protocol: packet.protocol(),
            dscp_ecn: packet.dscp_ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            ttl: packet.ttl(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            options,
        })
    }

    /// Bytes of header this repr emits, options included.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Bytes of header and payload.
    pub const fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes the header and, under `mode`, its checksum. The buffer must
    /// hold at least [`header_len`](Self::header_len) bytes; the payload,
    /// written by the caller, may follow it or live elsewhere. Refuses a
    /// fragment offset that is not a multiple of 8 or exceeds 65528 and a
    /// total length over 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Ipv4Packet<T>,
        mode: ChecksumMode,
    ) -> Result<()> {
        if self.frag_offset & 7 != 0 || self.frag_offset > MAX_FRAG_OFFSET {
            return Err(Error::Malformed(
                "IPv4 fragment offset not a multiple of 8 in range",
            ));
        }
        let total_len = u16::try_from(self.buffer_len())
            .map_err(|_| Error::Malformed("IPv4 packet longer than 65535 bytes"))?;
        let header_len = self.header_len();
        if packet.buffer.as_ref().len() < header_len {
            return Err(Error::Truncated);
        }
        packet.set_version(4);
        packet.set_header_len(header_len);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len(total_len);
        packet.set_ident(self.ident);
        // Whole word at once: clears the reserved flag left in the buffer.
        let mut word = self.frag_offset / 8;
        if self.dont_frag {
            word |= flag::DONT_FRAG;
        }
        if self.more_frags {
            word |= flag::MORE_FRAGS;
        }
        packet.set_flags_frag_offset(word);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
        packet
            .options_mut()
            .copy_from_slice(self.options.as_bytes());
        if mode == ChecksumMode::Full {
            packet.fill_checksum();
        } else {
            packet.set_checksum(0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP packet's header, 192.168.0.1 → 192.168.0.199, DF, TTL 64,
    /// total length 115, header checksum 0xb861.
    #[rustfmt::skip]
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61,
        0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn packet_bytes() -> Vec<u8> {
        let mut bytes = HEADER.to_vec();
        bytes.resize(115, 0x5a);
        bytes
    }

    fn known_repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: IpProtocol::Udp,
            dscp_ecn: 0,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            ttl: 64,
            payload_len: 95,
            options: Ipv4Options::EMPTY,
        }
    }

    /// 10.0.0.1 → 10.0.0.2, TCP, ident 0x1234, MF, offset 1480, TTL 63,
    /// carrying the trace option for flow 0xdeadbeef; no payload. The
    /// checksum, summed by hand: 0x4700+0x001c+0x1234+0x20b9+0x3f06+0x0a00
    /// +0x0001+0x0a00+0x0002+0x9e06+0xdead+0xbeef+0x0000 = 0x308b4, folded
    /// 0x08b7, complemented 0xf748.
    #[rustfmt::skip]
    const TRACED: [u8; 28] = [
        0x47, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x20, 0xb9, 0x3f, 0x06, 0xf7, 0x48,
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
        0x9e, 0x06, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00,
    ];

    fn traced_repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: IpProtocol::Tcp,
            dscp_ecn: 0,
            ident: 0x1234,
            dont_frag: false,
            more_frags: true,
            frag_offset: 1480,
            ttl: 63,
            payload_len: 0,
            options: Ipv4Options::with_trace(TraceOption { flow: 0xdead_beef }),
        }
    }

    #[test]
    fn parses_known_header() {
        let bytes = packet_bytes();
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&packet, ChecksumMode::Full).unwrap(),
            known_repr()
        );
        assert_eq!(packet.payload().len(), 95);
    }

    #[test]
    fn emits_known_header() {
        let mut out = [0xff; 115];
        let repr = known_repr();
        repr.emit(
            &mut Ipv4Packet::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out[..20], HEADER);
    }

    #[test]
    fn traced_header_known_bytes() {
        let repr = traced_repr();
        assert_eq!(repr.header_len(), 28);
        let mut out = [0xff; 28];
        repr.emit(
            &mut Ipv4Packet::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out, TRACED);
        let packet = Ipv4Packet::new_checked(&TRACED[..]).unwrap();
        let parsed = Ipv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(
            parsed.options.trace(),
            Some(TraceOption { flow: 0xdead_beef })
        );
        let options: Vec<_> = parsed.options.iter().collect();
        assert_eq!(
            options,
            [
                Ipv4Option::Trace(TraceOption { flow: 0xdead_beef }),
                Ipv4Option::EndOfList
            ]
        );
    }

    #[test]
    fn skip_mode_neither_fills_nor_verifies() {
        let mut out = [0xff; 28];
        traced_repr()
            .emit(
                &mut Ipv4Packet::new_unchecked(&mut out[..]),
                ChecksumMode::Skip,
            )
            .unwrap();
        assert_eq!(&out[10..12], &[0, 0]);
        let packet = Ipv4Packet::new_checked(&out[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&packet, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        assert_eq!(
            Ipv4Repr::parse(&packet, ChecksumMode::Skip).unwrap(),
            traced_repr()
        );
    }

    #[test]
    fn corrupted_header_fails_checksum() {
        let mut bytes = packet_bytes();
        bytes[8] = 63;
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&packet, ChecksumMode::Full),
            Err(Error::Checksum)
        );
    }

    #[test]
    fn length_checks() {
        let bytes = packet_bytes();
        for len in 0..bytes.len() {
            assert_eq!(
                Ipv4Packet::new_checked(&bytes[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        let malformed = |edit: fn(&mut Vec<u8>)| {
            let mut b = packet_bytes();
            edit(&mut b);
            matches!(Ipv4Packet::new_checked(&b[..]), Err(Error::Malformed(_)))
        };
        assert!(malformed(|b| b[0] = 0x65)); // version 6
        assert!(malformed(|b| b[0] = 0x44)); // IHL 4
        assert!(malformed(|b| b[2..4].copy_from_slice(&19u16.to_be_bytes())));
        let mut b = packet_bytes();
        b[2..4].copy_from_slice(&116u16.to_be_bytes());
        assert_eq!(Ipv4Packet::new_checked(&b[..]), Err(Error::Truncated));
        let mut b = HEADER;
        b[0] = 0x4f; // IHL 15: 60 bytes, buffer 20
        assert_eq!(Ipv4Packet::new_checked(&b[..]), Err(Error::Truncated));
    }

    #[test]
    fn trailing_link_padding_is_excluded() {
        let mut bytes = TRACED.to_vec();
        bytes.extend_from_slice(&[0; 18]);
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert!(packet.payload().is_empty());
        assert_eq!(
            Ipv4Repr::parse(&packet, ChecksumMode::Full).unwrap(),
            traced_repr()
        );
    }

    #[test]
    fn option_validation() {
        let bad = |area: &[u8]| matches!(Ipv4Options::parse(area), Err(Error::Malformed(_)));
        assert!(bad(&[0x94, 0x01, 0x00, 0x00])); // length 1
        assert!(bad(&[0x94, 0x00, 0x00, 0x00])); // length 0
        assert!(bad(&[0x94, 0x05, 0x00, 0x00])); // runs past the area
        assert!(bad(&[0x01, 0x01, 0x01, 0x94])); // length byte missing
        assert!(bad(&[0x9e, 0x05, 0xde, 0xad, 0xbe, 0x00, 0x00, 0x00])); // trace too short
        assert!(bad(&[0x01, 0x01, 0x01])); // not a multiple of 4
        assert!(bad(&[0x01; 44])); // over 40 bytes
                                   // Router alert (RFC 2113) is kept as an unknown option.
        let options = Ipv4Options::parse(&[0x94, 0x04, 0x00, 0x00]).unwrap();
        assert_eq!(
            options.iter().collect::<Vec<_>>(),
            [Ipv4Option::Unknown {
                kind: 0x94,
                data: &[0, 0]
            }]
        );
        // After end-of-list comes padding, not options.
        let options = Ipv4Options::parse(&[0x01, 0x00, 0x94, 0x01]).unwrap();
        assert_eq!(
            options.iter().collect::<Vec<_>>(),
            [Ipv4Option::NoOperation, Ipv4Option::EndOfList]
        );
    }

    #[test]
    fn bad_option_in_packet_is_malformed() {
        let mut bytes = TRACED;
        bytes[21] = 0x01; // trace option length 1
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert!(matches!(
            Ipv4Repr::parse(&packet, ChecksumMode::Skip),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn from_options_pads_and_refuses() {
        let options = Ipv4Options::from_options(&[
            Ipv4Option::NoOperation,
            Ipv4Option::Unknown {
                kind: 0x94,
                data: &[0, 0],
            },
        ])
        .unwrap();
        assert_eq!(
            options.as_bytes(),
            &[0x01, 0x94, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00]
        );
        assert!(Ipv4Options::from_options(&[Ipv4Option::Unknown {
            kind: 0x94,
            data: &[0; 39]
        }])
        .is_err());
        assert!(
            Ipv4Options::from_options(&[Ipv4Option::EndOfList, Ipv4Option::NoOperation]).is_err()
        );
        assert!(Ipv4Options::from_options(&[Ipv4Option::Unknown { kind: 1, data: &[] }]).is_err());
        assert_eq!(Ipv4Options::from_options(&[]).unwrap(), Ipv4Options::EMPTY);
    }

    #[test]
    fn emit_refuses_bad_fields() {
        let mut out = [0; 60];
        let mut packet = Ipv4Packet::new_unchecked(&mut out[..]);
        let mut repr = known_repr();
        repr.frag_offset = 7;
        assert!(repr.emit(&mut packet, ChecksumMode::Full).is_err());
        repr.frag_offset = u16::MAX;
        assert!(repr.emit(&mut packet, ChecksumMode::Full).is_err());
        repr.frag_offset = MAX_FRAG_OFFSET;
        repr.payload_len = 65535 - 19;
        assert!(repr.emit(&mut packet, ChecksumMode::Full).is_err());
        repr.payload_len = 0;
        assert_eq!(
            repr.emit(
                &mut Ipv4Packet::new_unchecked(&mut [0u8; 19][..]),
                ChecksumMode::Full
            ),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn reserved_flag_is_ignored_on_parse_and_cleared_on_emit() {
        let mut bytes = packet_bytes();
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        packet.set_reserved_flag(true);
        packet.fill_checksum();
        let repr = Ipv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(repr, known_repr());
        repr.emit(&mut packet, ChecksumMode::Full).unwrap();
        assert!(!packet.reserved_flag());
        assert_eq!(bytes[..20], HEADER);
    }

    #[test]
    fn setters_keep_neighbouring_bits() {
        let mut bytes = packet_bytes();
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        packet.set_frag_offset(1480);
        packet.set_more_frags(true);
        assert!(packet.dont_frag() && packet.more_frags());
        assert_eq!(packet.frag_offset(), 1480);
        packet.set_dont_frag(false);
        assert!(!packet.dont_frag() && packet.more_frags());
        assert_eq!(packet.frag_offset(), 1480);
    }
}
