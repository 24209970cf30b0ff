//! ICMPv6 (RFC 4443): the message view, its error and echo messages, and the
//! dispatch to Neighbor Discovery ([`crate::ndisc`], RFC 4861) and Multicast
//! Listener Discovery ([`crate::mld`], RFC 2710 / RFC 3810).
//!
//! ICMPv6 has no length field of its own: the message is the whole upper-layer
//! payload of the IPv6 packet, so the buffer given to [`Icmpv6Packet`] must be
//! exactly that payload (the IPv6 layer trims link padding). The checksum
//! covers the IPv6 pseudo-header with next header 58 and the message length
//! (RFC 4443 §2.3).

use core::net::Ipv6Addr;

use crate::bytes;
use crate::checksum;
use crate::ip::ChecksumMode;
use crate::mld::MldRepr;
use crate::ndisc::NdiscRepr;
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// The first word of the message body: echo identifier and sequence
    /// number, Packet Too Big MTU, Parameter Problem pointer, or unused.
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQ_NO: Range<usize> = 6..8;
    pub const MTU: Range<usize> = 4..8;
    pub const POINTER: Range<usize> = 4..8;
}

/// Length of the type, code and checksum fields every message starts with.
pub const HEADER_LEN: usize = 4;
/// Length of the header of error and echo messages: type, code, checksum and
/// one 32-bit word.
pub const ERROR_HEADER_LEN: usize = 8;
/// The IPv6 minimum link MTU (RFC 8200 §5).
pub const IPV6_MIN_MTU: usize = 1280;
/// Length of the fixed IPv6 header, which an error message travels behind.
const IPV6_HEADER_LEN: usize = 40;
/// Largest ICMPv6 error message: an error "must not exceed the minimum IPv6
/// MTU" together with its IPv6 header (RFC 4443 §2.4(c)).
pub const MAX_ERROR_MESSAGE_LEN: usize = IPV6_MIN_MTU - IPV6_HEADER_LEN;
/// Largest part of the invoking packet an error message may carry.
pub const MAX_INVOKING_LEN: usize = MAX_ERROR_MESSAGE_LEN - ERROR_HEADER_LEN;

/// Cuts an invoking packet to the most an error message may carry
/// (RFC 4443 §2.4(c)).
pub fn truncate_invoking(invoking: &[u8]) -> &[u8] {
    &invoking[..invoking.len().min(MAX_INVOKING_LEN)]
}

/// ICMPv6 message types (IANA "ICMPv6 Parameters"); unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Message {
    DstUnreachable,
    PacketTooBig,
    TimeExceeded,
    ParamProblem,
    EchoRequest,
    EchoReply,
    /// Multicast Listener Query, MLDv1 or MLDv2 (130).
    MldQuery,
    /// MLDv1 Multicast Listener Report (131).
    MldReport,
    /// MLDv1 Multicast Listener Done (132).
    MldDone,
    RouterSolicit,
    RouterAdvert,
    NeighborSolicit,
    NeighborAdvert,
    Redirect,
    /// MLDv2 Multicast Listener Report (143).
    MldReportV2,
    Unknown(u8),
}

impl Icmpv6Message {
    /// Error messages have types 0..=127, informational ones 128..=255
    /// (RFC 4443 §2.1). An unknown error must still reach the upper layer,
    /// an unknown informational message is discarded (§2.4(a), (b)).
    pub fn is_error(self) -> bool {
        u8::from(self) < 128
    }

    /// Length of the fixed part of this message type, before any variable
    /// data, options, sources or records.
    pub fn fixed_len(self) -> usize {
        match self {
            Self::DstUnreachable
            | Self::PacketTooBig
            | Self::TimeExceeded
            | Self::ParamProblem
            | Self::EchoRequest
            | Self::EchoReply => ERROR_HEADER_LEN,
            Self::MldQuery | Self::MldReport | Self::MldDone => crate::mld::V1_LEN,
            Self::MldReportV2 => crate::mld::REPORT_V2_HEADER_LEN,
            Self::RouterSolicit => crate::ndisc::ROUTER_SOLICIT_LEN,
            Self::RouterAdvert => crate::ndisc::ROUTER_ADVERT_LEN,
            Self::NeighborSolicit => crate::ndisc::NEIGHBOR_SOLICIT_LEN,
            Self::NeighborAdvert => crate::ndisc::NEIGHBOR_ADVERT_LEN,
            Self::Redirect => crate::ndisc::REDIRECT_LEN,
            Self::Unknown(_) => HEADER_LEN,
        }
    }
}

impl From<u8> for Icmpv6Message {
    fn from(value: u8) -> Self {
        match value {
            1 => Self::DstUnreachable,
            2 => Self::PacketTooBig,
            3 => Self::TimeExceeded,
            4 => Self::ParamProblem,
            128 => Self::EchoRequest,
            129 => Self::EchoReply,
            130 => Self::MldQuery,
            131 => Self::MldReport,
            132 => Self::MldDone,
            133 => Self::RouterSolicit,
            134 => Self::RouterAdvert,
            135 => Self::NeighborSolicit,
            136 => Self::NeighborAdvert,
            137 => Self::Redirect,
            143 => Self::MldReportV2,
            other => Self::Unknown(other),
        }
    }
}

impl From<Icmpv6Message> for u8 {
    fn from(value: Icmpv6Message) -> Self {
        match value {
            Icmpv6Message::DstUnreachable => 1,
            Icmpv6Message::PacketTooBig => 2,
            Icmpv6Message::TimeExceeded => 3,
            Icmpv6Message::ParamProblem => 4,
            Icmpv6Message::EchoRequest => 128,
            Icmpv6Message::EchoReply => 129,
            Icmpv6Message::MldQuery => 130,
            Icmpv6Message::MldReport => 131,
            Icmpv6Message::MldDone => 132,
            Icmpv6Message::RouterSolicit => 133,
            Icmpv6Message::RouterAdvert => 134,
            Icmpv6Message::NeighborSolicit => 135,
            Icmpv6Message::NeighborAdvert => 136,
            Icmpv6Message::Redirect => 137,
            Icmpv6Message::MldReportV2 => 143,
            Icmpv6Message::Unknown(other) => other,
        }
    }
}

/// Destination Unreachable codes (RFC 4443 §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstUnreachableReason {
    /// 0: no route to destination.
    NoRoute,
    /// 1: communication administratively prohibited.
    AdminProhibited,
    /// 2: beyond scope of source address.
    BeyondScope,
    /// 3: address unreachable.
    AddrUnreachable,
    /// 4: port unreachable.
    PortUnreachable,
    /// 5: source address failed ingress/egress policy.
    FailedPolicy,
    /// 6: reject route to destination.
    RejectRoute,
    Unknown(u8),
}

impl From<u8> for DstUnreachableReason {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::NoRoute,
            1 => Self::AdminProhibited,
            2 => Self::BeyondScope,
            3 => Self::AddrUnreachable,
            4 => Self::PortUnreachable,
            5 => Self::FailedPolicy,
            6 => Self::RejectRoute,
            other => Self::Unknown(other),
        }
    }
}

impl From<DstUnreachableReason> for u8 {
    fn from(value: DstUnreachableReason) -> Self {
        match value {
            DstUnreachableReason::NoRoute => 0,
            DstUnreachableReason::AdminProhibited => 1,
            DstUnreachableReason::BeyondScope => 2,
            DstUnreachableReason::AddrUnreachable => 3,
            DstUnreachableReason::PortUnreachable => 4,
            DstUnreachableReason::FailedPolicy => 5,
            DstUnreachableReason::RejectRoute => 6,
            DstUnreachableReason::Unknown(other) => other,
        }
    }
}

/// Time Exceeded codes (RFC 4443 §3.3). Codes not defined there are kept,
/// as for the other error types: the error must still reach the upper layer
/// (in the spirit of RFC 4443 §2.4(a)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceededReason {
    /// 0: hop limit exceeded in transit.
    HopLimitExceeded,
    /// 1: fragment reassembly time exceeded.
    FragReassemblyExceeded,
    Unknown(u8),
}

impl From<u8> for TimeExceededReason {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::HopLimitExceeded,
            1 => Self::FragReassemblyExceeded,
            other => Self::Unknown(other),
        }
    }
}

impl From<TimeExceededReason> for u8 {
    fn from(value: TimeExceededReason) -> Self {
        match value {
            TimeExceededReason::HopLimitExceeded => 0,
            TimeExceededReason::FragReassemblyExceeded => 1,
            TimeExceededReason::Unknown(other) => other,
        }
    }
}

/// Parameter Problem codes (RFC 4443 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamProblemReason {
    /// 0: erroneous header field encountered.
    ErroneousHeaderField,
    /// 1: unrecognized Next Header type encountered.
    UnrecognizedNextHeader,
    /// 2: unrecognized IPv6 option encountered.
    UnrecognizedOption,
    Unknown(u8),
}

impl From<u8> for ParamProblemReason {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::ErroneousHeaderField,
            1 => Self::UnrecognizedNextHeader,
            2 => Self::UnrecognizedOption,
            other => Self::Unknown(other),
        }
    }
}

impl From<ParamProblemReason> for u8 {
    fn from(value: ParamProblemReason) -> Self {
        match value {
            ParamProblemReason::ErroneousHeaderField => 0,
            ParamProblemReason::UnrecognizedNextHeader => 1,
            ParamProblemReason::UnrecognizedOption => 2,
            ParamProblemReason::Unknown(other) => other,
        }
    }
}

/// A view of an ICMPv6 message in a byte buffer holding exactly the message.
///
/// Every accessor is total: a field that lies past the end of the buffer
/// (only possible for a field of another message type, or without
/// `new_checked`) reads as zero. Setters panic on a buffer too short for
/// their field; `emit` checks the length first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Type, code and checksum fit, and so does the fixed part of the
    /// message type ([`Icmpv6Message::fixed_len`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < self.msg_type().fixed_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole message.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Length of the message (the buffer).
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.as_ref().is_empty()
    }

    pub(crate) fn u8_at(&self, offset: usize) -> u8 {
        bytes::u8_or_zero(self.buffer.as_ref(), offset)
    }

    pub(crate) fn u16_at(&self, offset: usize) -> u16 {
        bytes::be_u16_or_zero(self.buffer.as_ref(), offset)
    }

    pub(crate) fn u32_at(&self, offset: usize) -> u32 {
        bytes::be_u32_or_zero(self.buffer.as_ref(), offset)
    }

    pub(crate) fn ipv6_addr_at(&self, offset: usize) -> Ipv6Addr {
        bytes::ipv6_at_or_zero(self.buffer.as_ref(), offset)
    }

    /// The bytes from `offset` to the end; empty if the buffer is shorter.
    pub(crate) fn tail(&self, offset: usize) -> &[u8] {
        self.buffer.as_ref().get(offset..).unwrap_or(&[])
    }

    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message::from(self.u8_at(field::TYPE))
    }

    pub fn msg_code(&self) -> u8 {
        self.u8_at(field::CODE)
    }

    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM.start)
    }

    /// Echo Request / Reply identifier (RFC 4443 §4.1).
    pub fn echo_ident(&self) -> u16 {
        self.u16_at(field::ECHO_IDENT.start)
    }

    /// Echo Request / Reply sequence number.
    pub fn echo_seq_no(&self) -> u16 {
        self.u16_at(field::ECHO_SEQ_NO.start)
    }

    /// Packet Too Big: the MTU of the next-hop link (RFC 4443 §3.2).
    pub fn mtu(&self) -> u32 {
        self.u32_at(field::MTU.start)
    }

    /// Parameter Problem: offset of the error in the invoking packet
    /// (RFC 4443 §3.4).
    pub fn pointer(&self) -> u32 {
        self.u32_at(field::POINTER.start)
    }

    /// The message after its fixed part: echo data, the invoking packet of
    /// an error, ND options, MLDv2 sources or records.
    pub fn payload(&self) -> &[u8] {
        self.tail(self.payload_offset())
    }

    /// Where the variable part starts. An MLD query is MLDv2, with a longer
    /// fixed part, when it is at least 28 bytes long (RFC 3810 §8.1).
    fn payload_offset(&self) -> usize {
        match self.msg_type() {
            Icmpv6Message::MldQuery if self.len() >= crate::mld::QUERY_V2_HEADER_LEN => {
                crate::mld::QUERY_V2_HEADER_LEN
            }
            other => other.fixed_len(),
        }
    }

    /// Whether the checksum verifies over the IPv6 pseudo-header and the
    /// whole message (RFC 4443 §2.3).
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let data = self.buffer.as_ref();
        checksum::verifies(pseudo_header_sum(src, dst, data.len()), data)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv6Packet<&'a T> {
    /// The whole message, borrowed for as long as the underlying buffer.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        let buffer: &'a T = self.buffer;
        buffer.as_ref()
    }

    /// The bytes from `offset` on, borrowed for as long as the buffer.
    pub(crate) fn tail_of_buffer(&self, offset: usize) -> &'a [u8] {
        self.bytes().get(offset..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// The whole buffer, for writers in the ND and MLD modules.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    pub(crate) fn set_bytes_at(&mut self, offset: usize, value: &[u8]) {
        bytes::put_bytes(self.buffer.as_mut(), offset, value);
    }

    pub(crate) fn set_u16_at(&mut self, offset: usize, value: u16) {
        bytes::put_be_u16(self.buffer.as_mut(), offset, value);
    }

    pub(crate) fn set_u32_at(&mut self, offset: usize, value: u32) {
        bytes::put_be_u32(self.buffer.as_mut(), offset, value);
    }

    pub(crate) fn set_ipv6_addr_at(&mut self, offset: usize, value: Ipv6Addr) {
        bytes::put_ipv6(self.buffer.as_mut(), offset, value);
    }

    pub fn set_msg_type(&mut self, value: Icmpv6Message) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    pub fn set_checksum(&mut self, value: u16) {
        self.set_u16_at(field::CHECKSUM.start, value);
    }

    pub fn set_echo_ident(&mut self, value: u16) {
        self.set_u16_at(field::ECHO_IDENT.start, value);
    }

    pub fn set_echo_seq_no(&mut self, value: u16) {
        self.set_u16_at(field::ECHO_SEQ_NO.start, value);
    }

    pub fn set_mtu(&mut self, value: u32) {
        self.set_u32_at(field::MTU.start, value);
    }

    pub fn set_pointer(&mut self, value: u32) {
        self.set_u32_at(field::POINTER.start, value);
    }

    /// The message after its fixed part (see [`payload`](Self::payload)).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let offset = self.payload_offset();
        self.buffer.as_mut().get_mut(offset..).unwrap_or(&mut [])
    }

    /// Computes and stores the checksum over the pseudo-header and the whole
    /// buffer. ICMPv6 has no "no checksum" value, so 0x0000 is stored as is.
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        let sum = checksum::add(pseudo_header_sum(src, dst, data.len()), checksum::sum(data));
        self.set_checksum(checksum::finish(sum));
    }
}

/// The IPv6 pseudo-header sum for an ICMPv6 message of `len` bytes.
fn pseudo_header_sum(src: &Ipv6Addr, dst: &Ipv6Addr, len: usize) -> u16 {
    // A message longer than u32::MAX cannot be carried even in a jumbogram;
    // saturating keeps the function total (the checksum then fails).
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    checksum::pseudo_header_v6(*src, *dst, crate::IpProtocol::Icmpv6.into(), len)
}

/// The meaning of an ICMPv6 message. Variable parts borrow the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6Repr<'a> {
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
        reason: DstUnreachableReason,
        /// As much of the invoking packet as fits (RFC 4443 §2.4(c)).
        invoking: &'a [u8],
    },
    PacketTooBig {
        mtu: u32,
        invoking: &'a [u8],
    },
    TimeExceeded {
        reason: TimeExceededReason,
        invoking: &'a [u8],
    },
    ParamProblem {
        reason: ParamProblemReason,
        /// Offset in the invoking packet of the octet where the error was
        /// detected.
        pointer: u32,
        invoking: &'a [u8],
    },
    /// Neighbor Discovery, types 133..=137.
    Ndisc(NdiscRepr<'a>),
    /// Multicast Listener Discovery, types 130, 131, 132 and 143.
    Mld(MldRepr<'a>),
}

impl<'a> Icmpv6Repr<'a> {
    /// Validates a message: its fixed part fits, the checksum verifies under
    /// `mode` (pseudo-header from `src` and `dst`), and the type-specific
    /// rules hold. Unknown types are `Error::Unsupported`; the caller tells
    /// errors from informational messages with [`Icmpv6Message::is_error`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Icmpv6Packet<&'a T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        if mode == ChecksumMode::Full && !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        let rest = packet.tail_of_buffer(ERROR_HEADER_LEN);
        match packet.msg_type() {
            Icmpv6Message::EchoRequest | Icmpv6Message::EchoReply => {
                // RFC 4443 §4.1, §4.2: code 0 is the only one defined.
                if packet.msg_code() != 0 {
                    return Err(Error::Malformed("ICMPv6 echo code is not 0"));
                }
                let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
                Ok(if packet.msg_type() == Icmpv6Message::EchoRequest {
                    Self::EchoRequest {
                        ident,
                        seq_no,
                        data: rest,
                    }
                } else {
                    Self::EchoReply {
                        ident,
                        seq_no,
                        data: rest,
                    }
                })
            }
            Icmpv6Message::DstUnreachable => Ok(Self::DstUnreachable {
                reason: packet.msg_code().into(),
                invoking: rest,
            }),
            // RFC 4443 §3.2: the code is "ignored by the receiver".
            Icmpv6Message::PacketTooBig => Ok(Self::PacketTooBig {
                mtu: packet.mtu(),
                invoking: rest,
            }),
            Icmpv6Message::TimeExceeded => Ok(Self::TimeExceeded {
                reason: packet.msg_code().into(),
                invoking: rest,
            }),
            Icmpv6Message::ParamProblem => Ok(Self::ParamProblem {
                reason: packet.msg_code().into(),
                pointer: packet.pointer(),
                invoking: rest,
            }),
            Icmpv6Message::RouterSolicit
            | Icmpv6Message::RouterAdvert
            | Icmpv6Message::NeighborSolicit
            | Icmpv6Message::NeighborAdvert
            | Icmpv6Message::Redirect => NdiscRepr::parse(packet).map(Self::Ndisc),
            Icmpv6Message::MldQuery
            | Icmpv6Message::MldReport
            | Icmpv6Message::MldDone
            | Icmpv6Message::MldReportV2 => MldRepr::parse(packet).map(Self::Mld),
            Icmpv6Message::Unknown(_) => Err(Error::Unsupported("ICMPv6 message type")),
        }
    }

    /// The message type this repr emits.
    pub fn msg_type(&self) -> Icmpv6Message {
        match self {
            Self::EchoRequest { .. } => Icmpv6Message::EchoRequest,
            Self::EchoReply { .. } => Icmpv6Message::EchoReply,
            Self::DstUnreachable { .. } => Icmpv6Message::DstUnreachable,
            Self::PacketTooBig { .. } => Icmpv6Message::PacketTooBig,
            Self::TimeExceeded { .. } => Icmpv6Message::TimeExceeded,
            Self::ParamProblem { .. } => Icmpv6Message::ParamProblem,
            Self::Ndisc(repr) => repr.msg_type(),
            Self::Mld(repr) => repr.msg_type(),
        }
    }

    /// Bytes of the whole message this repr emits.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::EchoRequest { data, .. } | Self::EchoReply { data, .. } => {
                ERROR_HEADER_LEN + data.len()
            }
            Self::DstUnreachable { invoking, .. }
            | Self::PacketTooBig { invoking, .. }
            | Self::TimeExceeded { invoking, .. }
            | Self::ParamProblem { invoking, .. } => ERROR_HEADER_LEN + invoking.len(),
            Self::Ndisc(repr) => repr.buffer_len(),
            Self::Mld(repr) => repr.buffer_len(),
        }
    }

    /// Writes the message into the first [`buffer_len`](Self::buffer_len)
    /// bytes of `packet` and, under `mode`, fills the checksum over them.
    /// Invoking packets are written as given: cut them with
    /// [`truncate_invoking`] first.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv6Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        mode: ChecksumMode,
    ) -> Result<()> {
        let len = self.buffer_len();
        let buffer = packet
            .buffer
            .as_mut()
            .get_mut(..len)
            .ok_or(Error::Truncated)?;
        let mut view = Icmpv6Packet::new_unchecked(buffer);
        match *self {
            Self::EchoRequest {
                ident,
                seq_no,
                data,
            }
            | Self::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                view.set_msg_type(self.msg_type());
                view.set_msg_code(0);
                view.set_echo_ident(ident);
                view.set_echo_seq_no(seq_no);
                view.payload_mut().copy_from_slice(data);
            }
            Self::DstUnreachable { reason, invoking } => {
                emit_error(&mut view, self.msg_type(), reason.into(), 0, invoking);
            }
            Self::PacketTooBig { mtu, invoking } => {
                emit_error(&mut view, self.msg_type(), 0, mtu, invoking);
            }
            Self::TimeExceeded { reason, invoking } => {
                emit_error(&mut view, self.msg_type(), reason.into(), 0, invoking);
            }
            Self::ParamProblem {
                reason,
                pointer,
                invoking,
            } => {
                emit_error(&mut view, self.msg_type(), reason.into(), pointer, invoking);
            }
            Self::Ndisc(ref repr) => repr.emit(&mut view)?,
            Self::Mld(ref repr) => repr.emit(&mut view)?,
        }
        view.set_checksum(0);
        if mode == ChecksumMode::Full {
            view.fill_checksum(src, dst);
        }
        Ok(())
    }
}

/// Writes an error message whose buffer is exactly header plus `invoking`.
fn emit_error(
    view: &mut Icmpv6Packet<&mut [u8]>,
    msg_type: Icmpv6Message,
    code: u8,
    word: u32,
    invoking: &[u8],
) {
    view.set_msg_type(msg_type);
    view.set_msg_code(code);
    // The second word is the MTU, the pointer, or unused (sent as zero).
    view.set_mtu(word);
    view.payload_mut().copy_from_slice(invoking);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

    fn emit(repr: &Icmpv6Repr) -> Vec<u8> {
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(
            &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
            &SRC,
            &DST,
            ChecksumMode::Full,
        )
        .unwrap();
        buf
    }

    fn parse(buf: &[u8]) -> Result<Icmpv6Repr<'_>> {
        let packet = Icmpv6Packet::new_checked(buf)?;
        Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Full)
    }

    #[test]
    fn echo_request_known_bytes() {
        // An echo request from fe80::1 to fe80::2, ident 0x1234, seq 1,
        // data "hi". Checksum worked by hand: pseudo-header words
        // fe80+1+fe80+2+len 10+next header 58 = 0x1fd47, folded 0xfd48;
        // message words 8000+0000+1234+0001+6869 = 0xfa9e;
        // 0xfd48 + 0xfa9e = 0x1f7e6 -> 0xf7e7; complement 0x0818.
        let repr = Icmpv6Repr::EchoRequest {
            ident: 0x1234,
            seq_no: 1,
            data: b"hi",
        };
        let buf = emit(&repr);
        assert_eq!(
            buf,
            [0x80, 0x00, 0x08, 0x18, 0x12, 0x34, 0x00, 0x01, b'h', b'i']
        );
        assert_eq!(parse(&buf), Ok(repr));
    }

    #[test]
    fn echo_reply_round_trip_and_nonzero_code_refused() {
        let repr = Icmpv6Repr::EchoReply {
            ident: 7,
            seq_no: 9,
            data: &[1, 2, 3, 4, 5],
        };
        let mut buf = emit(&repr);
        assert_eq!(parse(&buf), Ok(repr));
        buf[1] = 1;
        let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
        assert!(matches!(
            Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Skip),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn corrupted_message_fails_checksum_only_in_full_mode() {
        let mut buf = emit(&Icmpv6Repr::EchoRequest {
            ident: 1,
            seq_no: 2,
            data: b"payload",
        });
        buf[9] ^= 0x40;
        let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        assert!(Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Skip).is_ok());
    }

    #[test]
    fn checksum_covers_the_pseudo_header() {
        let buf = emit(&Icmpv6Repr::EchoRequest {
            ident: 1,
            seq_no: 2,
            data: b"x",
        });
        let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
        assert!(packet.verify_checksum(&SRC, &DST));
        let other = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 3);
        assert!(!packet.verify_checksum(&SRC, &other));
    }

    #[test]
    fn error_messages_round_trip() {
        let invoking = [0x60, 0, 0, 0, 0, 8, 17, 64];
        let reprs = [
            Icmpv6Repr::DstUnreachable {
                reason: DstUnreachableReason::PortUnreachable,
                invoking: &invoking,
            },
            Icmpv6Repr::DstUnreachable {
                reason: DstUnreachableReason::Unknown(9),
                invoking: &invoking,
            },
            Icmpv6Repr::PacketTooBig {
                mtu: 1280,
                invoking: &invoking,
            },
            Icmpv6Repr::TimeExceeded {
                reason: TimeExceededReason::FragReassemblyExceeded,
                invoking: &invoking,
            },
            Icmpv6Repr::ParamProblem {
                reason: ParamProblemReason::UnrecognizedNextHeader,
                pointer: 6,
                invoking: &invoking,
            },
        ];
        for repr in reprs {
            let buf = emit(&repr);
            assert_eq!(buf.len(), 16);
            assert_eq!(parse(&buf), Ok(repr));
        }
    }

    #[test]
    fn packet_too_big_known_layout() {
        let buf = emit(&Icmpv6Repr::PacketTooBig {
            mtu: 0x0000_05dc,
            invoking: &[0xaa],
        });
        assert_eq!(buf[0], 2);
        assert_eq!(buf[1], 0);
        assert_eq!(&buf[4..8], &[0, 0, 0x05, 0xdc]);
        assert_eq!(buf[8], 0xaa);
    }

    #[test]
    fn unknown_time_exceeded_code_is_kept() {
        let invoking = [0x60, 0, 0, 0];
        let mut buf = emit(&Icmpv6Repr::TimeExceeded {
            reason: TimeExceededReason::HopLimitExceeded,
            invoking: &invoking,
        });
        buf[1] = 2;
        let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
        let repr = Icmpv6Repr::TimeExceeded {
            reason: TimeExceededReason::Unknown(2),
            invoking: &invoking,
        };
        assert_eq!(
            Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Skip),
            Ok(repr)
        );
        let again = emit(&repr);
        assert_eq!(again[1], 2);
        assert_eq!(parse(&again), Ok(repr));
    }

    #[test]
    fn code_numbers_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Icmpv6Message::from(v)), v);
            assert_eq!(u8::from(DstUnreachableReason::from(v)), v);
            assert_eq!(u8::from(TimeExceededReason::from(v)), v);
            assert_eq!(u8::from(ParamProblemReason::from(v)), v);
        }
    }

    #[test]
    fn unknown_types_are_unsupported() {
        let mut buf = [200, 0, 0, 0];
        let mut packet = Icmpv6Packet::new_unchecked(&mut buf[..]);
        packet.fill_checksum(&SRC, &DST);
        assert_eq!(parse(&buf), Err(Error::Unsupported("ICMPv6 message type")));
        assert!(!Icmpv6Message::from(200).is_error());
        assert!(Icmpv6Message::from(100).is_error());
    }

    #[test]
    fn short_buffers_are_truncated() {
        assert_eq!(parse(&[]), Err(Error::Truncated));
        assert_eq!(parse(&[128, 0, 0]), Err(Error::Truncated));
        // An echo request needs its identifier and sequence number.
        assert_eq!(parse(&[128, 0, 0, 0, 0, 0, 0]), Err(Error::Truncated));
    }

    #[test]
    fn accessors_are_total_on_short_buffers() {
        let packet = Icmpv6Packet::new_unchecked(&[1u8, 2][..]);
        assert_eq!(packet.msg_code(), 2);
        assert_eq!(packet.checksum(), 0);
        assert_eq!(packet.mtu(), 0);
        assert_eq!(packet.payload(), &[] as &[u8]);
    }

    #[test]
    fn emit_into_short_buffer_fails() {
        let repr = Icmpv6Repr::EchoRequest {
            ident: 0,
            seq_no: 0,
            data: b"abc",
        };
        let mut buf = [0u8; 10];
        assert_eq!(
            repr.emit(
                &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
                &SRC,
                &DST,
                ChecksumMode::Full
            ),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn invoking_limit_keeps_errors_within_minimum_mtu() {
        assert_eq!(MAX_INVOKING_LEN, 1232);
        let big = [0u8; 2000];
        let invoking = truncate_invoking(&big);
        let repr = Icmpv6Repr::DstUnreachable {
            reason: DstUnreachableReason::NoRoute,
            invoking,
        };
        assert_eq!(repr.buffer_len() + 40, IPV6_MIN_MTU);
        assert_eq!(truncate_invoking(&big[..10]).len(), 10);
    }
}
