//! ICMPv4 (RFC 792): echo, and the error messages a stack sends and must
//! understand — destination unreachable (with the RFC 1191 next-hop MTU),
//! time exceeded, parameter problem. Other message types are recognised by
//! the view but unsupported by the repr.

use crate::bytes::{be_u16, be_u32, put_be_u16, put_be_u32};
use crate::checksum;
use crate::ip::ChecksumMode;
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// The 32-bit "rest of header", whose meaning depends on the type.
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQ_NO: Range<usize> = 6..8;
    /// RFC 1191 §4: the low 16 bits of the unused word of a
    /// "fragmentation needed" message.
    pub const NEXT_HOP_MTU: Range<usize> = 6..8;
    /// RFC 792: the octet of the invoking header where the problem lies.
    pub const POINTER: usize = 4;
    pub const DATA: usize = 8;
}

/// Length of the ICMPv4 header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::DATA;

/// ICMPv4 message types (IANA "ICMP Type Numbers"); unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Message {
    EchoReply,
    DstUnreachable,
    /// Deprecated by RFC 6633.
    SourceQuench,
    Redirect,
    EchoRequest,
    RouterAdvert,
    RouterSolicit,
    TimeExceeded,
    ParamProblem,
    Timestamp,
    TimestampReply,
    Unknown(u8),
}

impl From<u8> for Icmpv4Message {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::EchoReply,
            3 => Self::DstUnreachable,
            4 => Self::SourceQuench,
            5 => Self::Redirect,
            8 => Self::EchoRequest,
            9 => Self::RouterAdvert,
            10 => Self::RouterSolicit,
            11 => Self::TimeExceeded,
            12 => Self::ParamProblem,
            13 => Self::Timestamp,
            14 => Self::TimestampReply,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv4Message> for u8 {
    fn from(value: Icmpv4Message) -> Self {
        match value {
            Icmpv4Message::EchoReply => 0,
            Icmpv4Message::DstUnreachable => 3,
            Icmpv4Message::SourceQuench => 4,
            Icmpv4Message::Redirect => 5,
            Icmpv4Message::EchoRequest => 8,
            Icmpv4Message::RouterAdvert => 9,
            Icmpv4Message::RouterSolicit => 10,
            Icmpv4Message::TimeExceeded => 11,
            Icmpv4Message::ParamProblem => 12,
            Icmpv4Message::Timestamp => 13,
            Icmpv4Message::TimestampReply => 14,
            Icmpv4Message::Unknown(other) => other,
        }
    }
}

/// Destination-unreachable codes (RFC 792; 6–12 RFC 1122 §3.2.2.1; 13–15
/// RFC 1812 §5.2.7.1). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4DstUnreachable {
    NetUnreachable,
    HostUnreachable,
    ProtoUnreachable,
    PortUnreachable,
    /// Fragmentation needed and DF set; carries the next-hop MTU (RFC 1191).
    FragRequired,
    SrcRouteFailed,
    DstNetUnknown,
    DstHostUnknown,
    SrcHostIsolated,
    NetProhibited,
    HostProhibited,
    NetUnreachableForTos,
    HostUnreachableForTos,
    /// Communication administratively prohibited.
    AdminProhibited,
    HostPrecedenceViolation,
    PrecedenceCutoff,
    Unknown(u8),
}

impl From<u8> for Icmpv4DstUnreachable {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::NetUnreachable,
            1 => Self::HostUnreachable,
            2 => Self::ProtoUnreachable,
            3 => Self::PortUnreachable,
            4 => Self::FragRequired,
            5 => Self::SrcRouteFailed,
            6 => Self::DstNetUnknown,
            7 => Self::DstHostUnknown,
            8 => Self::SrcHostIsolated,
            9 => Self::NetProhibited,
            10 => Self::HostProhibited,
            11 => Self::NetUnreachableForTos,
            12 => Self::HostUnreachableForTos,
            13 => Self::AdminProhibited,
            14 => Self::HostPrecedenceViolation,
            15 => Self::PrecedenceCutoff,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv4DstUnreachable> for u8 {
    fn from(value: Icmpv4DstUnreachable) -> Self {
        use Icmpv4DstUnreachable::*;
        match value {
            NetUnreachable => 0,
            HostUnreachable => 1,
            ProtoUnreachable => 2,
            PortUnreachable => 3,
            FragRequired => 4,
            SrcRouteFailed => 5,
            DstNetUnknown => 6,
            DstHostUnknown => 7,
            SrcHostIsolated => 8,
            NetProhibited => 9,
            HostProhibited => 10,
            NetUnreachableForTos => 11,
            HostUnreachableForTos => 12,
            AdminProhibited => 13,
            HostPrecedenceViolation => 14,
            PrecedenceCutoff => 15,
            Unknown(other) => other,
        }
    }
}

/// Time-exceeded codes (RFC 792). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4TimeExceeded {
    /// Time to live exceeded in transit.
    TtlExpired,
    /// Fragment reassembly time exceeded.
    FragReassembly,
    Unknown(u8),
}

impl From<u8> for Icmpv4TimeExceeded {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::TtlExpired,
            1 => Self::FragReassembly,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv4TimeExceeded> for u8 {
    fn from(value: Icmpv4TimeExceeded) -> Self {
        match value {
            Icmpv4TimeExceeded::TtlExpired => 0,
            Icmpv4TimeExceeded::FragReassembly => 1,
            Icmpv4TimeExceeded::Unknown(other) => other,
        }
    }
}

/// A view of an ICMPv4 message in a byte buffer. The message has no length
/// field: it is the whole buffer (the IPv4 payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
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

    /// The 8-byte header fits; every type this crate reads has one.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message::from(self.buffer.as_ref()[field::TYPE])
    }

    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// The 32-bit rest-of-header word, whatever the type.
    pub fn rest_of_header(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::REST.start)
    }

    /// Echo identifier (echo request and reply).
    pub fn echo_ident(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::ECHO_IDENT.start)
    }

    /// Echo sequence number (echo request and reply).
    pub fn echo_seq_no(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::ECHO_SEQ_NO.start)
    }

    /// Next-hop MTU of a "fragmentation needed" message (RFC 1191 §4);
    /// zero from routers that predate RFC 1191. Read whatever the type and
    /// code: the low 16 bits of the rest-of-header word.
    pub fn next_hop_mtu(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::NEXT_HOP_MTU.start)
    }

    /// Parameter-problem pointer: the octet of the invoking header in error.
    pub fn pointer(&self) -> u8 {
        self.buffer.as_ref()[field::POINTER]
    }

    /// Everything after the header: echo data, or the invoking datagram's
    /// header and leading data of an error message.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }

    /// Whether the checksum verifies over the whole message (RFC 792: no
    /// pseudo-header).
    pub fn verify_checksum(&self) -> bool {
        checksum::verifies(0, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    pub fn set_msg_type(&mut self, value: Icmpv4Message) {
        self.buffer.as_mut()[field::TYPE] = value.into()
    }

    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECKSUM.start, value)
    }

    pub fn set_rest_of_header(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::REST.start, value)
    }

    pub fn set_echo_ident(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::ECHO_IDENT.start, value)
    }

    pub fn set_echo_seq_no(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::ECHO_SEQ_NO.start, value)
    }

    pub fn set_next_hop_mtu(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::NEXT_HOP_MTU.start, value)
    }

    pub fn set_pointer(&mut self, value: u8) {
        self.buffer.as_mut()[field::POINTER] = value
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }

    /// Computes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        checksum::fill(self.buffer.as_mut(), field::CHECKSUM.start);
    }
}

/// The meaning of an ICMPv4 message; variable parts borrow the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    DstUnreachable {
        reason: Icmpv4DstUnreachable,
        /// The low 16 bits of the rest-of-header word, whatever the code.
        /// RFC 1191 §4 gives it a meaning, the next-hop MTU, only with
        /// [`Icmpv4DstUnreachable::FragRequired`] (zero there from routers
        /// that predate RFC 1191); with other codes the word is unused and
        /// sent as zero (RFC 792). Parse keeps the value received and emit
        /// writes the value given, for every code, so a parsed message
        /// re-emits unchanged: build messages of other codes with zero.
        next_hop_mtu: u16,
        /// The invoking IPv4 header and leading data.
        invoking: &'a [u8],
    },
    TimeExceeded {
        reason: Icmpv4TimeExceeded,
        /// The invoking IPv4 header and leading data.
        invoking: &'a [u8],
    },
    /// Code 0, "pointer indicates the error" (RFC 792).
    ParamProblem {
        /// Octet of the invoking header where the problem was found.
        pointer: u8,
        /// The invoking IPv4 header and leading data.
        invoking: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// Validates a message: the checksum under `mode`, then type and code.
    /// Echo messages must have code 0 (RFC 792). Unused rest-of-header bits
    /// are ignored. Other types, and parameter-problem codes other than 0,
    /// are unsupported.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Icmpv4Packet<&'a T>,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        if mode == ChecksumMode::Full && !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        // Borrow for 'a, the lifetime of the buffer, not of the view.
        let buffer: &'a [u8] = <T as AsRef<[u8]>>::as_ref(packet.buffer);
        let data = &buffer[field::DATA..];
        let code = packet.msg_code();
        match packet.msg_type() {
            Icmpv4Message::EchoRequest | Icmpv4Message::EchoReply if code != 0 => {
                Err(Error::Malformed("ICMPv4 echo code not 0"))
            }
            Icmpv4Message::EchoRequest => Ok(Self::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            }),
            Icmpv4Message::EchoReply => Ok(Self::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            }),
            Icmpv4Message::DstUnreachable => Ok(Self::DstUnreachable {
                reason: Icmpv4DstUnreachable::from(code),
                next_hop_mtu: packet.next_hop_mtu(),
                invoking: data,
            }),
            Icmpv4Message::TimeExceeded => Ok(Self::TimeExceeded {
                reason: Icmpv4TimeExceeded::from(code),
                invoking: data,
            }),
            Icmpv4Message::ParamProblem if code == 0 => Ok(Self::ParamProblem {
                pointer: packet.pointer(),
                invoking: data,
            }),
            Icmpv4Message::ParamProblem => {
                Err(Error::Unsupported("ICMPv4 parameter problem code not 0"))
            }
            _ => Err(Error::Unsupported("ICMPv4 message type")),
        }
    }

    /// The data after the header: echo data or the invoking datagram.
    pub const fn data(&self) -> &'a [u8] {
        match *self {
            Self::EchoRequest { data, .. } | Self::EchoReply { data, .. } => data,
            Self::DstUnreachable { invoking, .. }
            | Self::TimeExceeded { invoking, .. }
            | Self::ParamProblem { invoking, .. } => invoking,
        }
    }

    /// Whether this is an error message (RFC 1122 §3.2.2: never sent in
    /// answer to another error message).
    pub const fn is_error(&self) -> bool {
        !matches!(self, Self::EchoRequest { .. } | Self::EchoReply { .. })
    }

    /// Bytes of header this repr emits.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Bytes of the whole message.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Writes the header, copies the data, and fills the checksum under
    /// `mode`. The message is the first [`buffer_len`](Self::buffer_len)
    /// bytes of the buffer (the checksum covers exactly those); hand the
    /// receiver exactly that much.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv4Packet<T>,
        mode: ChecksumMode,
    ) -> Result<()> {
        let len = self.buffer_len();
        if packet.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        // Unused rest-of-header bits are sent as zero (RFC 792).
        packet.set_rest_of_header(0);
        match *self {
            Self::EchoRequest { ident, seq_no, .. } | Self::EchoReply { ident, seq_no, .. } => {
                let msg_type = if matches!(self, Self::EchoRequest { .. }) {
                    Icmpv4Message::EchoRequest
                } else {
                    Icmpv4Message::EchoReply
                };
                packet.set_msg_type(msg_type);
                packet.set_msg_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Self::DstUnreachable {
                reason,
                next_hop_mtu,
                ..
            } => {
                packet.set_msg_type(Icmpv4Message::DstUnreachable);
                packet.set_msg_code(reason.into());
                packet.set_next_hop_mtu(next_hop_mtu);
            }
            Self::TimeExceeded { reason, .. } => {
                packet.set_msg_type(Icmpv4Message::TimeExceeded);
                packet.set_msg_code(reason.into());
            }
            Self::ParamProblem { pointer, .. } => {
                packet.set_msg_type(Icmpv4Message::ParamProblem);
                packet.set_msg_code(0);
                packet.set_pointer(pointer);
            }
        }
        packet.data_mut()[..len - HEADER_LEN].copy_from_slice(self.data());
        packet.set_checksum(0);
        if mode == ChecksumMode::Full {
            checksum::fill(&mut packet.buffer.as_mut()[..len], field::CHECKSUM.start);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echo request, ident 0x1234, sequence 1, data "abcd". Checksum by
    /// hand: 0x0800+0x1234+0x0001+0x6162+0x6364 = 0xdefb, complement 0x2104.
    const ECHO: [u8; 12] = [
        0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    /// Fragmentation needed, next-hop MTU 1400, quoting a 1500-byte UDP
    /// packet's header (checksum field zero) and its first 8 data bytes.
    #[rustfmt::skip]
    const FRAG_NEEDED: [u8; 36] = [
        0x03, 0x04, 0x0c, 0x83, 0x00, 0x00, 0x05, 0x78,
        0x45, 0x00, 0x05, 0xdc, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,
        10, 0, 0, 1, 10, 0, 0, 2,
        0, 1, 2, 3, 4, 5, 6, 7,
    ];

    #[test]
    fn echo_request_known_bytes() {
        let packet = Icmpv4Packet::new_checked(&ECHO[..]).unwrap();
        let repr = Icmpv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 1,
                data: b"abcd"
            }
        );
        let mut out = [0xff; 12];
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out, ECHO);
    }

    #[test]
    fn frag_needed_known_bytes() {
        let packet = Icmpv4Packet::new_checked(&FRAG_NEEDED[..]).unwrap();
        let repr = Icmpv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::FragRequired,
                next_hop_mtu: 1400,
                invoking: &FRAG_NEEDED[8..]
            }
        );
        assert!(repr.is_error());
        let mut out = [0xff; 36];
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out, FRAG_NEEDED);
    }

    #[test]
    fn error_messages_round_trip() {
        let invoking = &FRAG_NEEDED[8..];
        for repr in [
            Icmpv4Repr::TimeExceeded {
                reason: Icmpv4TimeExceeded::FragReassembly,
                invoking,
            },
            Icmpv4Repr::ParamProblem {
                pointer: 9,
                invoking,
            },
            Icmpv4Repr::EchoReply {
                ident: 7,
                seq_no: 9,
                data: &[],
            },
        ] {
            let mut out = vec![0; repr.buffer_len()];
            repr.emit(
                &mut Icmpv4Packet::new_unchecked(&mut out[..]),
                ChecksumMode::Full,
            )
            .unwrap();
            let packet = Icmpv4Packet::new_checked(&out[..]).unwrap();
            assert_eq!(
                Icmpv4Repr::parse(&packet, ChecksumMode::Full).unwrap(),
                repr
            );
        }
    }

    #[test]
    fn truncated_and_bad_checksum() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Icmpv4Packet::new_checked(&ECHO[..len]),
                Err(Error::Truncated)
            );
        }
        let mut bytes = ECHO;
        bytes[11] ^= 1;
        let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            Icmpv4Repr::parse(&packet, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        assert!(Icmpv4Repr::parse(&packet, ChecksumMode::Skip).is_ok());
    }

    #[test]
    fn refused_types_and_codes() {
        let parse = |msg_type: u8, code: u8| {
            let mut bytes = ECHO;
            bytes[0] = msg_type;
            bytes[1] = code;
            let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
            // Keep only what does not borrow `bytes`.
            Icmpv4Repr::parse(&packet, ChecksumMode::Skip).map(|repr| match repr {
                Icmpv4Repr::DstUnreachable { reason, .. } => Some(reason),
                _ => None,
            })
        };
        assert!(matches!(parse(8, 1), Err(Error::Malformed(_))));
        assert!(matches!(parse(0, 3), Err(Error::Malformed(_))));
        assert!(matches!(parse(5, 0), Err(Error::Unsupported(_))));
        assert!(matches!(parse(13, 0), Err(Error::Unsupported(_))));
        assert!(matches!(parse(12, 1), Err(Error::Unsupported(_))));
        assert_eq!(parse(3, 200), Ok(Some(Icmpv4DstUnreachable::Unknown(200))));
    }

    #[test]
    fn next_hop_mtu_is_kept_for_every_code() {
        // Port unreachable with a non-zero low word: parse reports it as is
        // (as the repr's documentation says) and emit writes it back.
        let mut bytes = FRAG_NEEDED;
        bytes[1] = 3;
        bytes[6..8].copy_from_slice(&0x1234u16.to_be_bytes());
        Icmpv4Packet::new_unchecked(&mut bytes[..]).fill_checksum();
        let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
        let repr = Icmpv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::PortUnreachable,
                next_hop_mtu: 0x1234,
                invoking: &bytes[8..]
            }
        );
        let mut out = [0xff; 36];
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn emit_into_short_buffer_is_truncated() {
        let repr = Icmpv4Repr::EchoRequest {
            ident: 1,
            seq_no: 2,
            data: b"abc",
        };
        let mut out = [0; 10];
        assert_eq!(
            repr.emit(
                &mut Icmpv4Packet::new_unchecked(&mut out[..]),
                ChecksumMode::Full
            ),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn code_numbers_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Icmpv4Message::from(v)), v);
            assert_eq!(u8::from(Icmpv4DstUnreachable::from(v)), v);
            assert_eq!(u8::from(Icmpv4TimeExceeded::from(v)), v);
        }
    }
}
