//! TCP (RFC 9293 §3.1) with the options of RFC 9293 §3.2, RFC 7323 (window
//! scale, timestamps) and RFC 2018 (SACK).
//!
//! TCP carries no length field: a segment is the whole buffer handed to
//! [`TcpPacket`], as bounded by the IP layer. The checksum covers the IPv4 or
//! IPv6 pseudo-header with that length (RFC 9293 §3.1, RFC 8200 §8.1).

use core::fmt;
use core::net::{IpAddr, Ipv6Addr};
use core::ops;

use crate::bytes::{be_u16, be_u32, put_be_u16, put_be_u32};
use crate::checksum;
use crate::ip::{pseudo_header, ChecksumMode, IpProtocol};
use crate::tlv;
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUMBER: Range<usize> = 4..8;
    pub const ACK_NUMBER: Range<usize> = 8..12;
    /// Data offset (high nibble) and the reserved bits (low nibble).
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

/// Option kinds this module models (IANA "TCP Option Kind Numbers").
mod kind {
    pub(crate) use crate::tlv::{END_OF_LIST, NO_OPERATION};
    pub const MAX_SEG_SIZE: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK_RANGE: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;

    pub const fn is_modeled(kind: u8) -> bool {
        matches!(
            kind,
            END_OF_LIST
                | NO_OPERATION
                | MAX_SEG_SIZE
                | WINDOW_SCALE
                | SACK_PERMITTED
                | SACK_RANGE
                | TIMESTAMPS
        )
    }
}

/// Length of the TCP header without options.
pub const HEADER_LEN: usize = 20;
/// Largest header: a data offset of 15 words.
pub const MAX_HEADER_LEN: usize = 60;
/// Largest options area.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;
/// Most SACK blocks one option carries (RFC 2018 §3: 8·n + 2 ≤ 40).
pub const MAX_SACK_BLOCKS: usize = 4;
/// Most SACK blocks that fit beside the timestamps option: RFC 2018 §3,
/// "if the Timestamp option is used, [...] at most 3 SACK blocks" (10 bytes
/// of timestamps plus 8·n + 2 of SACK fit in 40 bytes only for n ≤ 3). A
/// [`TcpRepr`] with timestamps and more blocks than this does not fit:
/// [`TcpRepr::header_len`] exceeds [`MAX_HEADER_LEN`] and [`TcpRepr::emit`]
/// fails. A stack that sends timestamps sends at most this many blocks.
pub const MAX_SACK_BLOCKS_WITH_TIMESTAMPS: usize = 3;
// Checked at compile time: 10 + 8·3 + 2 = 36 ≤ 40 < 44 = 10 + 8·4 + 2.
const _: () = assert!(
    10 + 2 + 8 * MAX_SACK_BLOCKS_WITH_TIMESTAMPS <= MAX_OPTIONS_LEN
        && 10 + 2 + 8 * (MAX_SACK_BLOCKS_WITH_TIMESTAMPS + 1) > MAX_OPTIONS_LEN
);

/// The eight control bits of RFC 9293 §3.1 (byte 13 of the header), as a
/// small bit set. Every `u8` is a valid value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: Self = Self(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: Self = Self(0x02);
    /// Reset the connection.
    pub const RST: Self = Self(0x04);
    /// Push function.
    pub const PSH: Self = Self(0x08);
    /// The acknowledgment number field is significant.
    pub const ACK: Self = Self(0x10);
    /// The urgent pointer field is significant.
    pub const URG: Self = Self(0x20);
    /// ECN-Echo (RFC 3168 §6.1).
    pub const ECE: Self = Self(0x40);
    /// Congestion Window Reduced (RFC 3168 §6.1).
    pub const CWR: Self = Self(0x80);

    const NAMES: [(Self, &'static str); 8] = [
        (Self::CWR, "CWR"),
        (Self::ECE, "ECE"),
        (Self::URG, "URG"),
        (Self::ACK, "ACK"),
        (Self::PSH, "PSH"),
        (Self::RST, "RST"),
        (Self::SYN, "SYN"),
        (Self::FIN, "FIN"),
    ];

    pub const fn empty() -> Self {
        Self(0)
    }

    pub const fn all() -> Self {
        Self(0xff)
    }

    /// The flags of a header's flag byte.
    pub const fn from_bits(bits: u8) -> Self {
        Self(bits)
    }

    /// The flag byte as it is on the wire.
    pub const fn bits(self) -> u8 {
        self.0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub const fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// The flags of `self` that are not in `other`.
    pub const fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Self) {
        self.0 &= !other.0;
    }

    /// Inserts `other` if `value`, removes it otherwise.
    pub fn set(&mut self, other: Self, value: bool) {
        if value {
            self.insert(other)
        } else {
            self.remove(other)
        }
    }
}

impl ops::BitOr for TcpFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl ops::BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.insert(rhs)
    }
}

impl ops::BitAnd for TcpFlags {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        self.intersection(rhs)
    }
}

impl ops::Sub for TcpFlags {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        self.difference(rhs)
    }
}

impl ops::Not for TcpFlags {
    type Output = Self;
    fn not(self) -> Self {
        Self(!self.0)
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TcpFlags(")?;
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("empty")?;
        }
        f.write_str(")")
    }
}

/// A view of a TCP segment in a byte buffer. The buffer is the whole segment
/// (header, options and payload), as the IP layer bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
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

    /// The fixed header fits, the data offset is at least 5 words (RFC 9293
    /// §3.1) and the header it claims lies within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("TCP data offset below 5"));
        }
        if header_len > len {
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

    pub fn seq_number(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::SEQ_NUMBER.start)
    }

    /// The acknowledgment number field, meaningful only with ACK set.
    pub fn ack_number(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::ACK_NUMBER.start)
    }

    /// The data offset field: header length in 32-bit words.
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFFSET] >> 4
    }

    /// Header length in bytes, options included (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The four reserved bits between data offset and flags (RFC 9293 §3.1:
    /// zero when sent, ignored when received), as the low nibble.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFFSET] & 0x0f
    }

    pub fn flags(&self) -> TcpFlags {
        TcpFlags::from_bits(self.buffer.as_ref()[field::FLAGS])
    }

    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }

    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }

    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }

    pub fn psh(&self) -> bool {
        self.flags().contains(TcpFlags::PSH)
    }

    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }

    pub fn urg(&self) -> bool {
        self.flags().contains(TcpFlags::URG)
    }

    pub fn ece(&self) -> bool {
        self.flags().contains(TcpFlags::ECE)
    }

    pub fn cwr(&self) -> bool {
        self.flags().contains(TcpFlags::CWR)
    }

    /// The raw window field (unscaled).
    pub fn window_len(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::WINDOW.start)
    }

    pub fn checksum(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// The urgent pointer field, meaningful only with URG set.
    pub fn urgent_pointer(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::URGENT.start)
    }

    /// The options area (between the fixed header and the data offset).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The options of the options area, in order.
    pub fn option_iter(&self) -> TcpOptionIter<'_> {
        TcpOptionIter::new(self.options())
    }

    /// The whole segment: header, options and payload.
    pub fn segment(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The payload: everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Whether the checksum verifies over the pseudo-header and the segment.
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        let Ok(len) = u32::try_from(self.buffer.as_ref().len()) else {
            return false;
        };
        let pseudo = pseudo_header(src, dst, IpProtocol::Tcp, len);
        checksum::verifies(pseudo, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn set_src_port(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::SRC_PORT.start, value)
    }

    pub fn set_dst_port(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::DST_PORT.start, value)
    }

    pub fn set_seq_number(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::SEQ_NUMBER.start, value)
    }

    pub fn set_ack_number(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::ACK_NUMBER.start, value)
    }

    /// Sets the data offset (in 32-bit words, low nibble of `value`),
    /// keeping the reserved bits.
    pub fn set_data_offset(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::DATA_OFFSET];
        *byte = (value << 4) | (*byte & 0x0f);
    }

    /// Sets the reserved bits (low nibble of `value`), keeping the data offset.
    pub fn set_reserved(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::DATA_OFFSET];
        *byte = (*byte & 0xf0) | (value & 0x0f);
    }

    pub fn set_flags(&mut self, flags: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = flags.bits();
    }

    fn set_flag(&mut self, flag: TcpFlags, value: bool) {
        let mut flags = self.flags();
        flags.set(flag, value);
        self.set_flags(flags);
    }

    pub fn set_fin(&mut self, value: bool) {
        self.set_flag(TcpFlags::FIN, value)
    }

    pub fn set_syn(&mut self, value: bool) {
        self.set_flag(TcpFlags::SYN, value)
    }

    pub fn set_rst(&mut self, value: bool) {
        self.set_flag(TcpFlags::RST, value)
    }

    pub fn set_psh(&mut self, value: bool) {
        self.set_flag(TcpFlags::PSH, value)
    }

    pub fn set_ack(&mut self, value: bool) {
        self.set_flag(TcpFlags::ACK, value)
    }

    pub fn set_urg(&mut self, value: bool) {
        self.set_flag(TcpFlags::URG, value)
    }

    pub fn set_ece(&mut self, value: bool) {
        self.set_flag(TcpFlags::ECE, value)
    }

    pub fn set_cwr(&mut self, value: bool) {
        self.set_flag(TcpFlags::CWR, value)
    }

    pub fn set_window_len(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::WINDOW.start, value)
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECKSUM.start, value)
    }

    pub fn set_urgent_pointer(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::URGENT.start, value)
    }

    /// The options area, as the data offset bounds it.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// The payload: everything after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes and stores the checksum over the pseudo-header and the whole
    /// buffer. Unlike UDP, a computed 0x0000 is sent as is.
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        // A segment longer than u32::MAX cannot exist on any IP path; the
        // saturated length only keeps this total.
        let len = u32::try_from(self.buffer.as_ref().len()).unwrap_or(u32::MAX);
        let pseudo = pseudo_header(src, dst, IpProtocol::Tcp, len);
        let sum = checksum::add(pseudo, checksum::sum(self.buffer.as_ref()));
        self.set_checksum(checksum::finish(sum));
    }
}

/// How [`tlv::read`] reports a broken TCP option.
const OPTION_ERRORS: tlv::Errors = tlv::Errors {
    missing_length: "TCP option length past the options area",
    short_length: "TCP option length below 2",
    past_end: "TCP option past the options area",
};

/// One TCP option (RFC 9293 §3.2, RFC 7323, RFC 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpOption<'a> {
    /// Kind 0: the end of the options; what follows is padding.
    EndOfList,
    /// Kind 1: one byte of alignment filler.
    NoOperation,
    /// Kind 2, length 4: the largest segment the sender will receive.
    MaxSegmentSize(u16),
    /// Kind 3, length 3: the window shift count (RFC 7323 §2.2).
    WindowScale(u8),
    /// Kind 4, length 2 (RFC 2018 §2).
    SackPermitted,
    /// Kind 5, length 8·n + 2 with n in 1..=4: (left edge, right edge) blocks
    /// (RFC 2018 §3). The blocks are the `Some` entries, in order.
    SackRange([Option<(u32, u32)>; MAX_SACK_BLOCKS]),
    /// Kind 8, length 10 (RFC 7323 §3.2).
    Timestamps { tsval: u32, tsecr: u32 },
    /// Any other kind: the data after the kind and length bytes.
    Unknown { kind: u8, data: &'a [u8] },
}

impl<'a> TcpOption<'a> {
    /// Reads the option at the start of `bytes` (the rest of an options
    /// area); returns it and the bytes it takes. A length below 2 or past the
    /// end of `bytes`, or a wrong length for a modeled kind, is malformed
    /// (RFC 9293 §3.1: "MUST be prepared to handle an illegal option length").
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, usize)> {
        let (kind, data, len) = tlv::read(bytes, &OPTION_ERRORS)?;
        let option = match kind {
            kind::END_OF_LIST => Self::EndOfList,
            kind::NO_OPERATION => Self::NoOperation,
            kind::MAX_SEG_SIZE => match data.len() {
                2 => Self::MaxSegmentSize(be_u16(data, 0)),
                _ => return Err(Error::Malformed("TCP MSS option length is not 4")),
            },
            kind::WINDOW_SCALE => match *data {
                [shift] => Self::WindowScale(shift),
                _ => return Err(Error::Malformed("TCP window scale option length is not 3")),
            },
            kind::SACK_PERMITTED => {
                if !data.is_empty() {
                    return Err(Error::Malformed(
                        "TCP SACK-permitted option length is not 2",
                    ));
                }
                Self::SackPermitted
            }
            kind::SACK_RANGE => {
                if data.is_empty() || data.len() % 8 != 0 {
                    return Err(Error::Malformed(
                        "TCP SACK option length is not 8n + 2 with n >= 1",
                    ));
                }
                if data.len() / 8 > MAX_SACK_BLOCKS {
                    return Err(Error::Malformed("TCP SACK option with more than 4 blocks"));
                }
                let mut blocks = [None; MAX_SACK_BLOCKS];
                for (slot, block) in blocks.iter_mut().zip(data.chunks_exact(8)) {
                    *slot = Some((be_u32(block, 0), be_u32(block, 4)));
                }
                Self::SackRange(blocks)
            }
            kind::TIMESTAMPS => {
                if data.len() != 8 {
                    return Err(Error::Malformed("TCP timestamps option length is not 10"));
                }
                Self::Timestamps {
                    tsval: be_u32(data, 0),
                    tsecr: be_u32(data, 4),
                }
            }
            kind => Self::Unknown { kind, data },
        };
        Ok((option, len))
    }

    /// Bytes this option takes on the wire.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::EndOfList | Self::NoOperation => 1,
            Self::MaxSegmentSize(_) => 4,
            Self::WindowScale(_) => 3,
            Self::SackPermitted => 2,
            Self::SackRange(blocks) => 2 + 8 * blocks.iter().flatten().count(),
            Self::Timestamps { .. } => 10,
            Self::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buffer`; returns the bytes written.
    /// A SACK option without blocks, or an unknown option whose length does
    /// not fit its length byte, is malformed.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        match self {
            Self::SackRange(blocks) if blocks.iter().all(Option::is_none) => {
                return Err(Error::Malformed("TCP SACK option without blocks"))
            }
            Self::Unknown { .. } if len > usize::from(u8::MAX) => {
                return Err(Error::Malformed("TCP option longer than 255 bytes"))
            }
            _ => {}
        }
        let Some(out) = buffer.get_mut(..len) else {
            return Err(Error::Truncated);
        };
        match *self {
            Self::EndOfList => out[0] = kind::END_OF_LIST,
            Self::NoOperation => out[0] = kind::NO_OPERATION,
            Self::MaxSegmentSize(mss) => tlv::write(out, kind::MAX_SEG_SIZE, &mss.to_be_bytes()),
            Self::WindowScale(shift) => out.copy_from_slice(&[kind::WINDOW_SCALE, 3, shift]),
            Self::SackPermitted => out.copy_from_slice(&[kind::SACK_PERMITTED, 2]),
            Self::SackRange(blocks) => {
                // `len` is at most 34, so it fits its length byte.
                out[..2].copy_from_slice(&[kind::SACK_RANGE, len as u8]);
                for (chunk, &(left, right)) in
                    out[2..].chunks_exact_mut(8).zip(blocks.iter().flatten())
                {
                    put_be_u32(chunk, 0, left);
                    put_be_u32(chunk, 4, right);
                }
            }
            Self::Timestamps { tsval, tsecr } => {
                out[..2].copy_from_slice(&[kind::TIMESTAMPS, 10]);
                put_be_u32(out, 2, tsval);
                put_be_u32(out, 6, tsecr);
            }
            // Checked above: `len` fits in a byte.
            Self::Unknown { kind, data } => tlv::write(out, kind, data),
        }
        Ok(len)
    }
}

/// Iterator over an options area. Yields each option, stops after
/// [`TcpOption::EndOfList`] (the rest is padding), and stops after the first
/// error, which it yields. Never panics on any input.
#[derive(Debug, Clone)]
pub struct TcpOptionIter<'a> {
    rest: &'a [u8],
}

impl<'a> TcpOptionIter<'a> {
    /// Iterates over the options in `area`.
    pub const fn new(area: &'a [u8]) -> Self {
        Self { rest: area }
    }
}

impl<'a> Iterator for TcpOptionIter<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match TcpOption::parse(self.rest) {
            Ok((TcpOption::EndOfList, _)) => {
                self.rest = &[];
                Some(Ok(TcpOption::EndOfList))
            }
            Ok((option, used)) => {
                self.rest = &self.rest[used..];
                Some(Ok(option))
            }
            Err(error) => {
                self.rest = &[];
                Some(Err(error))
            }
        }
    }
}

impl core::iter::FusedIterator for TcpOptionIter<'_> {}

/// The raw options (kind, length, data) of kinds this module does not model,
/// kept so that they are re-emitted unchanged. Holds at most
/// [`MAX_OPTIONS_LEN`] bytes, without allocating.
#[derive(Clone, Copy)]
pub struct TcpUnknownOptions {
    bytes: [u8; MAX_OPTIONS_LEN],
    len: u8,
}

impl TcpUnknownOptions {
    pub const fn new() -> Self {
        Self {
            bytes: [0; MAX_OPTIONS_LEN],
            len: 0,
        }
    }

    /// Appends an option of `kind` with `data`. Modeled kinds (which have
    /// fields of their own in [`TcpRepr`]) and options past the capacity are
    /// refused.
    pub fn push(&mut self, kind: u8, data: &[u8]) -> Result<()> {
        if kind::is_modeled(kind) {
            return Err(Error::Malformed("TCP option kind is modeled, not unknown"));
        }
        let start = usize::from(self.len);
        let end = start + 2 + data.len();
        if end > MAX_OPTIONS_LEN {
            return Err(Error::Malformed("unknown TCP options exceed 40 bytes"));
        }
        // `end` <= 40, so both the option length and `end` fit a byte.
        tlv::write(&mut self.bytes[start..end], kind, data);
        self.len = end as u8;
        Ok(())
    }

    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// The options as they are emitted.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The held options, each a [`TcpOption::Unknown`].
    pub fn iter(&self) -> TcpOptionIter<'_> {
        TcpOptionIter::new(self.as_bytes())
    }
}

impl Default for TcpUnknownOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for TcpUnknownOptions {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for TcpUnknownOptions {}

impl core::hash::Hash for TcpUnknownOptions {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for TcpUnknownOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Bytes of RFC 7323 Appendix A's timestamps layout: NOP, NOP, kind 8,
/// length 10, TSval, TSecr.
const PREDICTED_TIMESTAMPS_LEN: usize = 12;

/// The options area of RFC 7323 Appendix A's recommended layout for a
/// segment carrying only timestamps.
#[inline]
fn predicted_timestamps_bytes(tsval: u32, tsecr: u32) -> [u8; PREDICTED_TIMESTAMPS_LEN] {
    let mut bytes = [0u8; PREDICTED_TIMESTAMPS_LEN];
    bytes[..4].copy_from_slice(&[kind::NO_OPERATION, kind::NO_OPERATION, kind::TIMESTAMPS, 10]);
    bytes[4..8].copy_from_slice(&tsval.to_be_bytes());
    bytes[8..].copy_from_slice(&tsecr.to_be_bytes());
    bytes
}

/// The timestamps of an options area that is exactly RFC 7323 Appendix A's
/// layout, as nearly every segment of a connection with timestamps has
/// (Linux's `tcp_parse_aligned_timestamp` looks for the same): read without
/// walking the options. `None` for any other area, which the general
/// parser then reads.
#[inline]
fn predicted_timestamps(options: &[u8]) -> Option<(u32, u32)> {
    let bytes: &[u8; PREDICTED_TIMESTAMPS_LEN] = options.try_into().ok()?;
    if bytes[..4] != [kind::NO_OPERATION, kind::NO_OPERATION, kind::TIMESTAMPS, 10] {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(4), word(8)))
}

/// The meaning of a TCP header and its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq_number: u32,
    /// `Some` iff the ACK flag is set.
    pub ack_number: Option<u32>,
    /// Every control bit except ACK, which `ack_number` stands for. An ACK
    /// bit here is ignored by [`emit`](Self::emit).
    pub flags: TcpFlags,
    /// The raw window field; scaling is the stack's business.
    pub window_len: u16,
    /// The urgent pointer field, meaningful only with URG but kept as is.
    pub urgent_pointer: u16,
    pub max_seg_size: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// SACK blocks (left edge, right edge); no SACK option if all `None`.
    /// With `timestamps`, at most [`MAX_SACK_BLOCKS_WITH_TIMESTAMPS`] fit.
    pub sack_ranges: [Option<(u32, u32)>; MAX_SACK_BLOCKS],
    /// (TSval, TSecr) of the timestamps option.
    pub timestamps: Option<(u32, u32)>,
    /// Options of other kinds, kept and re-emitted after the modeled ones.
    pub unknown_options: TcpUnknownOptions,
    pub payload_len: usize,
}

/// An options area laid out for emission; `len` counts every byte even past
/// the capacity, so an overflow is measured, never written.
struct OptionsLayout {
    bytes: [u8; MAX_OPTIONS_LEN],
    len: usize,
}

impl OptionsLayout {
    fn put(&mut self, data: &[u8]) {
        let end = self.len + data.len();
        if let Some(out) = self.bytes.get_mut(self.len..end) {
            out.copy_from_slice(data);
        }
        self.len = end;
    }

    fn put_option(&mut self, option: TcpOption<'_>) {
        let mut scratch = [0u8; MAX_OPTIONS_LEN];
        // Only modeled options with at most 4 SACK blocks come here, all of
        // them at most 34 bytes.
        if let Ok(n) = option.emit(&mut scratch) {
            self.put(&scratch[..n]);
        }
    }

    fn put_nops(&mut self, count: usize, aligned: bool) {
        if aligned {
            for _ in 0..count {
                self.put(&[kind::NO_OPERATION]);
            }
        }
    }

    fn fits(&self) -> bool {
        self.len <= MAX_OPTIONS_LEN
    }
}

/// An options area ready to emit (see [`TcpRepr::options`]).
enum EmittedOptions {
    /// Timestamps alone, in RFC 7323 Appendix A's layout.
    Timestamps([u8; PREDICTED_TIMESTAMPS_LEN]),
    /// Any other set of options, laid out by [`TcpRepr::layout_options`].
    Laid(OptionsLayout),
}

impl EmittedOptions {
    /// Bytes of the area, padding included, even past 40 (see
    /// [`fits`](Self::fits)).
    #[inline]
    fn len(&self) -> usize {
        match self {
            Self::Timestamps(bytes) => bytes.len(),
            Self::Laid(layout) => layout.len,
        }
    }

    #[inline]
    fn fits(&self) -> bool {
        self.len() <= MAX_OPTIONS_LEN
    }

    /// The bytes to write; empty for an area that does not fit.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Timestamps(bytes) => bytes,
            Self::Laid(layout) => layout.bytes.get(..layout.len).unwrap_or_default(),
        }
    }
}

impl TcpRepr {
    /// Validates a segment: data offset at least 5 and within the buffer,
    /// destination port non-zero, checksum verified under `mode`, options
    /// well-formed. Of a repeated option the last one counts.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &TcpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        // Port 0 is reserved and never a valid destination (RFC 9293 §3.1
        // via the IANA port registry).
        if packet.dst_port() == 0 {
            return Err(Error::Malformed("TCP destination port 0"));
        }
        if mode == ChecksumMode::Full && !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        let options = packet.options();
        // The common case returns the repr as it is built, in the caller's
        // place: no copy of it (130 bytes) out of a local.
        if let Some((tsval, tsecr)) = predicted_timestamps(options) {
            return Ok(Self::with_fixed_fields(packet, Some((tsval, tsecr))));
        }
        let mut repr = Self::with_fixed_fields(packet, None);
        for option in TcpOptionIter::new(options) {
            match option? {
                TcpOption::EndOfList | TcpOption::NoOperation => {}
                TcpOption::MaxSegmentSize(mss) => repr.max_seg_size = Some(mss),
                TcpOption::WindowScale(shift) => repr.window_scale = Some(shift),
                TcpOption::SackPermitted => repr.sack_permitted = true,
                TcpOption::SackRange(blocks) => repr.sack_ranges = blocks,
                TcpOption::Timestamps { tsval, tsecr } => repr.timestamps = Some((tsval, tsecr)),
                // Each came from an options area of at most 40 bytes, so they
                // all fit together.
                TcpOption::Unknown { kind, data } => repr.unknown_options.push(kind, data)?,
            }
        }
        Ok(repr)
    }

    /// The fixed header's fields of a checked `packet`, with `timestamps`
    /// and no other option. Always inlined: out of line (as a closure it
    /// was) it cost a call and a copy of the repr at both of `parse`'s uses.
    #[inline(always)]
    fn with_fixed_fields<T: AsRef<[u8]>>(
        packet: &TcpPacket<T>,
        timestamps: Option<(u32, u32)>,
    ) -> Self {
        let flags = packet.flags();
        Self {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: flags.contains(TcpFlags::ACK).then(|| packet.ack_number()),
            flags: flags - TcpFlags::ACK,
            window_len: packet.window_len(),
            urgent_pointer: packet.urgent_pointer(),
            max_seg_size: None,
            window_scale: None,
            sack_permitted: false,
            sack_ranges: [None; MAX_SACK_BLOCKS],
            timestamps,
            unknown_options: TcpUnknownOptions::new(),
            payload_len: packet.payload().len(),
        }
    }

    /// The flag byte emitted: `flags` with ACK set iff `ack_number` is.
    pub fn wire_flags(&self) -> TcpFlags {
        let mut flags = self.flags;
        flags.set(TcpFlags::ACK, self.ack_number.is_some());
        flags
    }

    /// Sequence space the segment takes: payload plus one each for SYN and
    /// FIN (RFC 9293 §3.4).
    pub fn segment_len(&self) -> usize {
        self.payload_len
            + usize::from(self.flags.contains(TcpFlags::SYN))
            + usize::from(self.flags.contains(TcpFlags::FIN))
    }

    /// Lays out the options, padded with EOL to a multiple of 4. `aligned`
    /// adds NOPs so 32-bit fields start on 4-byte boundaries, in the layout
    /// of RFC 7323 Appendix A (MSS, SACK-permitted + timestamps, NOP + WS,
    /// NOP NOP + SACK); unknown options follow unaligned.
    fn layout_options(&self, aligned: bool) -> OptionsLayout {
        let mut out = OptionsLayout {
            bytes: [0; MAX_OPTIONS_LEN],
            len: 0,
        };
        if let Some(mss) = self.max_seg_size {
            out.put_option(TcpOption::MaxSegmentSize(mss));
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some((tsval, tsecr))) => {
                out.put_option(TcpOption::SackPermitted);
                out.put_option(TcpOption::Timestamps { tsval, tsecr });
            }
            (true, None) => {
                out.put_nops(2, aligned);
                out.put_option(TcpOption::SackPermitted);
            }
            (false, Some((tsval, tsecr))) => {
                out.put_nops(2, aligned);
                out.put_option(TcpOption::Timestamps { tsval, tsecr });
            }
            (false, None) => {}
        }
        if let Some(shift) = self.window_scale {
            out.put_nops(1, aligned);
            out.put_option(TcpOption::WindowScale(shift));
        }
        if self.sack_ranges.iter().any(Option::is_some) {
            out.put_nops(2, aligned);
            out.put_option(TcpOption::SackRange(self.sack_ranges));
        }
        out.put(self.unknown_options.as_bytes());
        // RFC 9293 §3.1: the header is padded with zeros to a 32-bit
        // boundary; a zero byte is End of Option List.
        let padded = out.len.next_multiple_of(4);
        while out.len < padded {
            out.put(&[kind::END_OF_LIST]);
        }
        out
    }

    /// The timestamps, when they are the only option: nearly every
    /// segment of a connection once it is established.
    #[inline]
    fn only_timestamps(&self) -> Option<(u32, u32)> {
        let alone = self.max_seg_size.is_none()
            && self.window_scale.is_none()
            && !self.sack_permitted
            && self.sack_ranges.iter().all(Option::is_none)
            && self.unknown_options.is_empty();
        self.timestamps.filter(|_| alone)
    }

    /// The options area to emit: timestamps alone in RFC 7323 Appendix A's
    /// layout, written directly (what `layout_options(true)` gives them,
    /// without its general walk: nearly every segment takes this path); else
    /// the aligned layout if it fits in 40 bytes, else the packed one (which
    /// may itself not fit; `emit` then refuses). Inlined so that the
    /// common case costs the caller no call and no 40-byte layout.
    #[inline]
    fn options(&self) -> EmittedOptions {
        if let Some((tsval, tsecr)) = self.only_timestamps() {
            return EmittedOptions::Timestamps(predicted_timestamps_bytes(tsval, tsecr));
        }
        let aligned = self.layout_options(true);
        EmittedOptions::Laid(if aligned.fits() {
            aligned
        } else {
            self.layout_options(false)
        })
    }

    /// Bytes of header this repr emits: 20 plus the options padded to a
    /// multiple of 4. Above [`MAX_HEADER_LEN`] the options do not fit (as
    /// with timestamps and more than [`MAX_SACK_BLOCKS_WITH_TIMESTAMPS`]
    /// SACK blocks) and [`emit`](Self::emit) returns an error; nothing
    /// panics.
    #[inline]
    pub fn header_len(&self) -> usize {
        // Timestamps alone (nearly every segment) are measured without
        // laying any option out.
        if self.only_timestamps().is_some() {
            return HEADER_LEN + PREDICTED_TIMESTAMPS_LEN;
        }
        self.laid_header_len()
    }

    /// [`header_len`](Self::header_len) of any other set of options.
    #[inline(never)]
    fn laid_header_len(&self) -> usize {
        HEADER_LEN + self.options().len()
    }

    /// Bytes of header and a payload of `payload_len`.
    pub fn buffer_len(&self, payload_len: usize) -> usize {
        self.header_len() + payload_len
    }

    /// Writes the header alone (options included, checksum zero) into
    /// `header` and returns its length: what [`emit`](Self::emit) writes
    /// before the payload, whatever `payload_len` says (the caller sums
    /// and places the checksum). A segment with timestamps alone (nearly
    /// every one a connection sends) is written field by field into the
    /// fixed array, without `emit`'s checks and slicing; any other goes
    /// through `emit`. Options that do not fit are [`Error::Malformed`].
    #[inline]
    pub fn emit_header(&self, header: &mut [u8; MAX_HEADER_LEN]) -> Result<usize> {
        let Some((tsval, tsecr)) = self.only_timestamps() else {
            return self.emit_header_general(header);
        };
        const LEN: usize = HEADER_LEN + PREDICTED_TIMESTAMPS_LEN;
        header[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        header[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        header[field::SEQ_NUMBER].copy_from_slice(&self.seq_number.to_be_bytes());
        header[field::ACK_NUMBER].copy_from_slice(&self.ack_number.unwrap_or(0).to_be_bytes());
        // Data offset in words; RFC 9293 §3.1: reserved bits zero.
        header[field::DATA_OFFSET] = ((LEN / 4) as u8) << 4;
        header[field::FLAGS] = self.wire_flags().bits();
        header[field::WINDOW].copy_from_slice(&self.window_len.to_be_bytes());
        header[field::CHECKSUM].copy_from_slice(&[0, 0]);
        header[field::URGENT].copy_from_slice(&self.urgent_pointer.to_be_bytes());
        header[HEADER_LEN..LEN].copy_from_slice(&predicted_timestamps_bytes(tsval, tsecr));
        Ok(LEN)
    }

    /// [`emit_header`](Self::emit_header) of any other set of options.
    #[inline(never)]
    fn emit_header_general(&self, header: &mut [u8; MAX_HEADER_LEN]) -> Result<usize> {
        let header_len = self.header_len();
        let repr = Self {
            payload_len: 0,
            ..*self
        };
        // The addresses only bound the length, which a header alone never
        // reaches, and the checksum is skipped.
        let any = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        let mut view = TcpPacket::new_unchecked(&mut header[..]);
        repr.emit(&mut view, &any, &any, 0, |_| {}, ChecksumMode::Skip)?;
        Ok(header_len)
    }

    /// Writes header and options into the first `buffer_len(payload_len)`
    /// bytes of `packet` (slice its buffer to exactly that: the segment is
    /// the whole buffer), lets `emit_payload` fill the payload, then fills
    /// the checksum under `mode`. `payload_len` must equal
    /// `self.payload_len`. Options that do not fit in 40 bytes (for one,
    /// timestamps with more than [`MAX_SACK_BLOCKS_WITH_TIMESTAMPS`] SACK
    /// blocks) are [`Error::Malformed`]: emit then writes nothing and never
    /// panics.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut TcpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
        mode: ChecksumMode,
    ) -> Result<()> {
        if payload_len != self.payload_len {
            return Err(Error::Malformed(
                "TCP payload length differs from the repr's",
            ));
        }
        let options = self.options();
        if !options.fits() {
            return Err(Error::Malformed("TCP options exceed 40 bytes"));
        }
        let header_len = HEADER_LEN + options.len();
        let total = header_len
            .checked_add(payload_len)
            .ok_or(Error::Malformed("TCP segment length overflows"))?;
        // The pseudo-header length is 16 bits for IPv4, 32 for IPv6.
        let limit = if src.is_ipv4() && dst.is_ipv4() {
            usize::from(u16::MAX)
        } else {
            u32::MAX as usize
        };
        if total > limit {
            return Err(Error::Malformed("TCP segment too long for its IP family"));
        }
        let Some(buffer) = packet.buffer.as_mut().get_mut(..total) else {
            return Err(Error::Truncated);
        };
        let mut view = TcpPacket::new_unchecked(buffer);
        view.set_src_port(self.src_port);
        view.set_dst_port(self.dst_port);
        view.set_seq_number(self.seq_number);
        view.set_ack_number(self.ack_number.unwrap_or(0));
        // At most 60 bytes: 15 words fit the nibble.
        view.set_data_offset((header_len / 4) as u8);
        // RFC 9293 §3.1: reserved bits are zero when sent.
        view.set_reserved(0);
        view.set_flags(self.wire_flags());
        view.set_window_len(self.window_len);
        view.set_checksum(0);
        view.set_urgent_pointer(self.urgent_pointer);
        view.options_mut().copy_from_slice(options.as_bytes());
        emit_payload(view.payload_mut());
        if mode == ChecksumMode::Full {
            view.fill_checksum(src, dst);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::reference;
    use core::net::{Ipv4Addr, Ipv6Addr};

    const SRC6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    const DST6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));
    const SRC4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const DST4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));

    /// An established connection's ACK with only timestamps, in RFC 7323
    /// Appendix A's layout (what the fast paths read and write) and in a
    /// packed one (timestamps, then End of List), which the general parser
    /// reads: the same repr either way, and emitting gives the aligned one.
    #[test]
    fn timestamps_alone_read_and_write_the_appendix_a_layout() {
        let header = |options: &[u8]| {
            let mut bytes = vec![
                0xc3, 0x50, 0x00, 0x50, 0, 0, 0, 9, 0, 0, 0, 7, 0x80, 0x10, 0x01, 0x00, 0, 0, 0, 0,
            ];
            bytes.extend_from_slice(options);
            bytes
        };
        let aligned = header(&[1, 1, 8, 10, 0, 0, 0x30, 0x39, 0xde, 0xad, 0xbe, 0xef]);
        let packed = header(&[8, 10, 0, 0, 0x30, 0x39, 0xde, 0xad, 0xbe, 0xef, 0, 0]);
        let read = |bytes: &[u8]| {
            let packet = TcpPacket::new_checked(bytes).unwrap();
            TcpRepr::parse(&packet, &SRC6, &DST6, ChecksumMode::Skip).unwrap()
        };
        let (from_aligned, from_packed) = (read(&aligned), read(&packed));
        assert_eq!(from_aligned, from_packed);
        assert_eq!(from_aligned.timestamps, Some((12345, 0xdead_beef)));
        assert_eq!(from_aligned.ack_number, Some(7));
        assert_eq!(from_aligned.header_len(), 32);
        let emitted = emit(&from_packed, &SRC6, &DST6, &[]);
        assert_eq!(emitted[20..32], aligned[20..32]);
        // Any other option beside them takes the general layout.
        let with_ws = TcpRepr {
            window_scale: Some(7),
            ..from_aligned
        };
        let emitted = emit(&with_ws, &SRC6, &DST6, &[]);
        assert_eq!(
            emitted[20..36],
            [1, 1, 8, 10, 0, 0, 0x30, 0x39, 0xde, 0xad, 0xbe, 0xef, 1, 3, 3, 7]
        );
    }

    /// Timestamps alone are written directly (`options`), in the bytes the
    /// general aligned layout gives them, which the packed one does not.
    #[test]
    fn timestamps_alone_written_directly_match_the_general_layout() {
        let repr = TcpRepr {
            ack_number: Some(7),
            flags: TcpFlags::empty(),
            max_seg_size: None,
            window_scale: None,
            sack_permitted: false,
            timestamps: Some((0x0102_0304, 0xa0b0_c0d0)),
            ..syn_repr()
        };
        let direct = repr.options();
        assert!(matches!(direct, EmittedOptions::Timestamps(_)));
        let general = repr.layout_options(true);
        assert_eq!(direct.as_bytes(), &general.bytes[..general.len]);
        assert_eq!(
            direct.as_bytes(),
            [1, 1, 8, 10, 1, 2, 3, 4, 0xa0, 0xb0, 0xc0, 0xd0]
        );
        assert_eq!(repr.header_len(), HEADER_LEN + general.len);
    }

    /// A SYN as Linux sends it: MSS 1460, SACK-permitted, timestamps
    /// (123456, 0), NOP, window scale 7. Checksum field zero.
    const SYN: [u8; 40] = [
        0xc3, 0x50, 0x00, 0x50, // ports 50000 -> 80
        0x01, 0x02, 0x03, 0x04, // seq
        0x00, 0x00, 0x00, 0x00, // ack
        0xa0, 0x02, 0xfa, 0xf0, // offset 10, SYN, window 64240
        0x00, 0x00, 0x00, 0x00, // checksum, urgent pointer
        0x02, 0x04, 0x05, 0xb4, // MSS 1460
        0x04, 0x02, // SACK permitted
        0x08, 0x0a, 0x00, 0x01, 0xe2, 0x40, 0x00, 0x00, 0x00, 0x00, // timestamps
        0x01, // NOP
        0x03, 0x03, 0x07, // window scale 7
    ];

    fn syn_repr() -> TcpRepr {
        TcpRepr {
            src_port: 50000,
            dst_port: 80,
            seq_number: 0x0102_0304,
            ack_number: None,
            flags: TcpFlags::SYN,
            window_len: 64240,
            urgent_pointer: 0,
            max_seg_size: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            sack_ranges: [None; 4],
            timestamps: Some((123_456, 0)),
            unknown_options: TcpUnknownOptions::new(),
            payload_len: 0,
        }
    }

    /// Pseudo-header bytes built by hand from RFC 9293 §3.1 / RFC 8200 §8.1.
    fn pseudo_bytes(src: &IpAddr, dst: &IpAddr, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&d.octets());
                out.extend_from_slice(&[0, 6]);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&d.octets());
                out.extend_from_slice(&(len as u32).to_be_bytes());
                out.extend_from_slice(&[0, 0, 0, 6]);
            }
            _ => unreachable!(),
        }
        out
    }

    fn reference_checksum(src: &IpAddr, dst: &IpAddr, segment: &[u8]) -> u16 {
        let mut all = pseudo_bytes(src, dst, segment.len());
        all.extend_from_slice(segment);
        !reference::sum(&all)
    }

    fn emit(repr: &TcpRepr, src: &IpAddr, dst: &IpAddr, payload: &[u8]) -> Vec<u8> {
        let mut buf = vec![0; repr.buffer_len(payload.len())];
        let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
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

    fn parse(buf: &[u8], src: &IpAddr, dst: &IpAddr) -> Result<TcpRepr> {
        let packet = TcpPacket::new_checked(buf)?;
        TcpRepr::parse(&packet, src, dst, ChecksumMode::Full)
    }

    /// A segment with the given options area (a multiple of 4 bytes) and a
    /// valid checksum over the IPv6 pseudo-header.
    fn with_options(options: &[u8]) -> Vec<u8> {
        let mut buf = SYN[..HEADER_LEN].to_vec();
        buf[field::DATA_OFFSET] = ((HEADER_LEN + options.len()) / 4) as u8 * 16;
        buf.extend_from_slice(options);
        TcpPacket::new_unchecked(&mut buf[..]).fill_checksum(&SRC6, &DST6);
        buf
    }

    #[test]
    fn hand_built_syn_with_known_checksum() {
        for (src, dst, known) in [(SRC4, DST4, 0x1f23), (SRC6, DST6, 0x47b2)] {
            let expected = reference_checksum(&src, &dst, &SYN);
            assert_eq!(expected, known);
            let mut buf = SYN;
            buf[16..18].copy_from_slice(&expected.to_be_bytes());

            let packet = TcpPacket::new_checked(&buf[..]).unwrap();
            assert!(packet.syn() && !packet.ack() && !packet.fin());
            assert_eq!(packet.header_len(), 40);
            assert!(packet.payload().is_empty());
            let options: Vec<_> = packet.option_iter().map(|o| o.unwrap()).collect();
            assert_eq!(
                options,
                [
                    TcpOption::MaxSegmentSize(1460),
                    TcpOption::SackPermitted,
                    TcpOption::Timestamps {
                        tsval: 123_456,
                        tsecr: 0
                    },
                    TcpOption::NoOperation,
                    TcpOption::WindowScale(7),
                ]
            );
            let repr = TcpRepr::parse(&packet, &src, &dst, ChecksumMode::Full).unwrap();
            assert_eq!(repr, syn_repr());
            assert_eq!(repr.segment_len(), 1);

            // The emitted layout is the same bytes, checksum included.
            assert_eq!(repr.header_len(), 40);
            assert_eq!(emit(&repr, &src, &dst, &[]), buf);
        }
    }

    #[test]
    fn corrupted_segment_fails_checksum() {
        let mut buf = emit(&syn_repr(), &SRC4, &DST4, &[]);
        buf[5] ^= 0x40;
        let packet = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(
            TcpRepr::parse(&packet, &SRC4, &DST4, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        assert!(TcpRepr::parse(&packet, &SRC4, &DST4, ChecksumMode::Skip).is_ok());
        // The right checksum for the other family does not verify here.
        let buf = emit(&syn_repr(), &SRC6, &DST6, &[]);
        assert_eq!(parse(&buf, &SRC4, &DST4), Err(Error::Checksum));
    }

    #[test]
    fn data_offset_is_validated() {
        let repr = TcpRepr {
            payload_len: 4,
            ..syn_repr()
        };
        let mut buf = emit(&repr, &SRC6, &DST6, b"data");
        for offset in 0..5 {
            TcpPacket::new_unchecked(&mut buf[..]).set_data_offset(offset);
            assert!(matches!(
                TcpPacket::new_checked(&buf[..]),
                Err(Error::Malformed(_))
            ));
        }
        // 44 bytes: offset 11 fits, 12 does not.
        TcpPacket::new_unchecked(&mut buf[..]).set_data_offset(11);
        assert!(TcpPacket::new_checked(&buf[..]).is_ok());
        TcpPacket::new_unchecked(&mut buf[..]).set_data_offset(12);
        assert_eq!(TcpPacket::new_checked(&buf[..]), Err(Error::Truncated));
        assert_eq!(TcpPacket::new_checked(&buf[..19]), Err(Error::Truncated));
    }

    #[test]
    fn destination_port_zero_is_refused() {
        let mut repr = syn_repr();
        repr.dst_port = 0;
        let buf = emit(&repr, &SRC6, &DST6, &[]);
        assert!(matches!(
            parse(&buf, &SRC6, &DST6),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn reserved_bits_are_readable_and_independent_of_offset() {
        let mut buf = emit(&syn_repr(), &SRC6, &DST6, &[]);
        let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
        packet.set_reserved(0x0b);
        assert_eq!((packet.data_offset(), packet.reserved()), (10, 0x0b));
        packet.set_data_offset(6);
        assert_eq!((packet.data_offset(), packet.reserved()), (6, 0x0b));
        packet.set_data_offset(10);
        packet.fill_checksum(&SRC6, &DST6);
        // Ignored on receipt, zero on sending (RFC 9293 §3.1).
        let repr = parse(&buf, &SRC6, &DST6).unwrap();
        assert_eq!(repr, syn_repr());
        assert_eq!(emit(&repr, &SRC6, &DST6, &[])[12] & 0x0f, 0);
    }

    #[test]
    fn every_flag_byte_round_trips() {
        for bits in 0..=255u8 {
            let flags = TcpFlags::from_bits(bits);
            let mut repr = syn_repr();
            repr.flags = flags - TcpFlags::ACK;
            repr.ack_number = flags.contains(TcpFlags::ACK).then_some(0xdead_beef);
            repr.urgent_pointer = 0x1234;
            repr.payload_len = 2;
            let buf = emit(&repr, &SRC4, &DST4, b"xy");
            assert_eq!(buf[field::FLAGS], bits);
            let packet = TcpPacket::new_checked(&buf[..]).unwrap();
            assert_eq!(packet.flags(), flags);
            assert_eq!(
                TcpRepr::parse(&packet, &SRC4, &DST4, ChecksumMode::Full),
                Ok(repr)
            );
        }
    }

    #[test]
    fn each_flag_accessor_owns_one_bit() {
        type Pair = (
            TcpFlags,
            fn(&TcpPacket<&mut [u8]>) -> bool,
            fn(&mut TcpPacket<&mut [u8]>, bool),
        );
        let table: [Pair; 8] = [
            (TcpFlags::FIN, |p| p.fin(), |p, v| p.set_fin(v)),
            (TcpFlags::SYN, |p| p.syn(), |p, v| p.set_syn(v)),
            (TcpFlags::RST, |p| p.rst(), |p, v| p.set_rst(v)),
            (TcpFlags::PSH, |p| p.psh(), |p, v| p.set_psh(v)),
            (TcpFlags::ACK, |p| p.ack(), |p, v| p.set_ack(v)),
            (TcpFlags::URG, |p| p.urg(), |p, v| p.set_urg(v)),
            (TcpFlags::ECE, |p| p.ece(), |p, v| p.set_ece(v)),
            (TcpFlags::CWR, |p| p.cwr(), |p, v| p.set_cwr(v)),
        ];
        for (flag, get, set) in table {
            let mut buf = [0u8; HEADER_LEN];
            let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
            set(&mut packet, true);
            assert!(get(&packet));
            assert_eq!(packet.flags(), flag);
            packet.set_flags(TcpFlags::all());
            set(&mut packet, false);
            assert!(!get(&packet));
            assert_eq!(packet.flags(), !flag);
        }
        assert_eq!(
            format!("{:?}", TcpFlags::SYN | TcpFlags::ACK),
            "TcpFlags(ACK | SYN)"
        );
        assert_eq!(format!("{:?}", TcpFlags::empty()), "TcpFlags(empty)");
    }

    #[test]
    fn zero_and_one_length_options_are_malformed() {
        for len in [0u8, 1] {
            let buf = with_options(&[0x01, 0x22, len, 0x00]);
            let packet = TcpPacket::new_checked(&buf[..]).unwrap();
            let items: Vec<_> = packet.option_iter().collect();
            assert_eq!(items.len(), 2, "NOP, then the error, then nothing");
            assert!(matches!(items[1], Err(Error::Malformed(_))));
            assert!(matches!(
                parse(&buf, &SRC6, &DST6),
                Err(Error::Malformed(_))
            ));
        }
    }

    #[test]
    fn options_past_the_area_are_malformed() {
        for options in [
            &[0x01, 0x01, 0x01, 0x02][..],                   // kind with no length
            &[0x01, 0x01, 0x02, 0x04][..],                   // MSS cut short
            &[0x01, 0x01, 0x22, 0x09, 0, 0, 0, 0][..],       // unknown past end
            &[0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0][..], // fine ...
        ] {
            let buf = with_options(options);
            let result = parse(&buf, &SRC6, &DST6);
            if options[0] == 0x08 {
                assert_eq!(result.unwrap().timestamps, Some((1, 2)));
            } else {
                assert!(matches!(result, Err(Error::Malformed(_))), "{options:?}");
            }
        }
        // ... but the same option with its tail cut off by the data offset.
        let mut buf = with_options(&[0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0]);
        TcpPacket::new_unchecked(&mut buf[..]).set_data_offset(7);
        assert!(TcpPacket::new_checked(&buf[..])
            .unwrap()
            .option_iter()
            .any(|o| o.is_err()));
    }

    #[test]
    fn wrong_lengths_for_modeled_kinds_are_malformed() {
        for options in [
            [0x02, 0x03, 0x05, 0x00], // MSS length 3
            [0x03, 0x02, 0x00, 0x00], // window scale length 2
            [0x04, 0x03, 0x00, 0x00], // SACK permitted length 3
            [0x05, 0x02, 0x00, 0x00], // SACK without blocks
            [0x05, 0x04, 0x00, 0x00], // SACK length not 8n + 2
            [0x08, 0x04, 0x00, 0x00], // timestamps length 4
        ] {
            assert!(
                matches!(TcpOption::parse(&options), Err(Error::Malformed(_))),
                "{options:?}"
            );
        }
    }

    #[test]
    fn sack_with_five_blocks_is_malformed() {
        // 8 * 5 + 2 = 42 bytes: past any 40-byte options area ...
        let mut option = vec![0x05, 42];
        option.extend((0..40u8).map(|i| i + 1));
        let mut area = option[..40].to_vec();
        let buf = with_options(&area);
        assert!(matches!(
            parse(&buf, &SRC6, &DST6),
            Err(Error::Malformed(_))
        ));
        // ... and refused by itself even where the bytes are there.
        assert!(matches!(
            TcpOption::parse(&option),
            Err(Error::Malformed(_))
        ));
        // Four blocks are fine.
        area.truncate(34);
        area[1] = 34;
        area.extend_from_slice(&[0, 0]);
        let repr = parse(&with_options(&area), &SRC6, &DST6).unwrap();
        assert_eq!(repr.sack_ranges[0], Some((0x0102_0304, 0x0506_0708)));
        assert!(repr.sack_ranges[3].is_some());
    }

    #[test]
    fn unknown_option_is_kept_and_re_emitted() {
        // An MPTCP-like option (kind 30) and a TCP-AO-like one (kind 29).
        let options = [
            0x1e, 0x06, 0xaa, 0xbb, 0xcc, 0xdd, 0x02, 0x04, 0x05, 0xb4, 0x1d, 0x03, 0x42, 0x00,
            0x00, 0x00,
        ];
        let buf = with_options(&options);
        let repr = parse(&buf, &SRC6, &DST6).unwrap();
        assert_eq!(repr.max_seg_size, Some(1460));
        assert_eq!(
            repr.unknown_options.as_bytes(),
            [0x1e, 0x06, 0xaa, 0xbb, 0xcc, 0xdd, 0x1d, 0x03, 0x42]
        );
        let kept: Vec<_> = repr.unknown_options.iter().map(|o| o.unwrap()).collect();
        assert_eq!(
            kept,
            [
                TcpOption::Unknown {
                    kind: 30,
                    data: &[0xaa, 0xbb, 0xcc, 0xdd]
                },
                TcpOption::Unknown {
                    kind: 29,
                    data: &[0x42]
                },
            ]
        );
        let repr = TcpRepr {
            payload_len: 7,
            ..repr
        };
        let out = emit(&repr, &SRC6, &DST6, b"payload");
        let packet = TcpPacket::new_checked(&out[..]).unwrap();
        assert!(packet.options().windows(9).any(|w| w == kept_bytes()));
        assert_eq!(packet.payload(), b"payload");
        assert_eq!(parse(&out, &SRC6, &DST6), Ok(repr));

        fn kept_bytes() -> &'static [u8] {
            &[0x1e, 0x06, 0xaa, 0xbb, 0xcc, 0xdd, 0x1d, 0x03, 0x42]
        }
    }

    #[test]
    fn payload_len_mismatch_and_short_buffer_are_refused() {
        let repr = syn_repr();
        let mut buf = [0u8; 64];
        let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
        assert!(matches!(
            repr.emit(&mut packet, &SRC6, &DST6, 3, |_| {}, ChecksumMode::Full),
            Err(Error::Malformed(_))
        ));
        let mut short = [0u8; 39];
        let mut packet = TcpPacket::new_unchecked(&mut short[..]);
        assert_eq!(
            repr.emit(&mut packet, &SRC6, &DST6, 0, |_| {}, ChecksumMode::Full),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn options_that_do_not_fit_are_refused() {
        let mut repr = syn_repr();
        repr.unknown_options.push(0xfe, &[0; 30]).unwrap();
        // 4 + 2 + 10 + 3 + 32 = 51 bytes even packed.
        assert!(repr.header_len() > MAX_HEADER_LEN);
        let mut buf = [0u8; 128];
        let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
        assert!(matches!(
            repr.emit(&mut packet, &SRC6, &DST6, 0, |_| {}, ChecksumMode::Full),
            Err(Error::Malformed(_))
        ));
        assert!(buf.iter().all(|&b| b == 0), "nothing written");
    }

    #[test]
    fn timestamps_leave_room_for_three_sack_blocks_only() {
        let mut repr = syn_repr();
        repr.flags = TcpFlags::empty();
        repr.ack_number = Some(1);
        repr.max_seg_size = None;
        repr.window_scale = None;
        repr.sack_permitted = false;
        repr.sack_ranges = [Some((1, 2)), Some((3, 4)), Some((5, 6)), Some((7, 8))];
        assert!(repr.header_len() > MAX_HEADER_LEN);
        let mut buf = [0u8; 128];
        let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
        assert_eq!(
            repr.emit(&mut packet, &SRC4, &DST4, 0, |_| {}, ChecksumMode::Full),
            Err(Error::Malformed("TCP options exceed 40 bytes"))
        );
        assert!(buf.iter().all(|&b| b == 0), "nothing written");
        repr.sack_ranges[MAX_SACK_BLOCKS_WITH_TIMESTAMPS] = None;
        assert!(repr.header_len() <= MAX_HEADER_LEN);
        let buf = emit(&repr, &SRC4, &DST4, &[]);
        assert_eq!(parse(&buf, &SRC4, &DST4), Ok(repr));
    }

    #[test]
    fn packed_layout_is_used_when_aligned_does_not_fit() {
        // MSS + timestamps + 3 SACK blocks: 40 bytes packed, 44 aligned.
        let mut repr = syn_repr();
        repr.window_scale = None;
        repr.sack_permitted = false;
        repr.ack_number = Some(7);
        repr.sack_ranges = [Some((1, 2)), Some((3, 4)), Some((5, 6)), None];
        repr.payload_len = 1;
        assert_eq!(repr.header_len(), MAX_HEADER_LEN);
        let buf = emit(&repr, &SRC4, &DST4, b"z");
        assert_eq!(parse(&buf, &SRC4, &DST4), Ok(repr));
    }

    #[test]
    fn aligned_layouts() {
        let mut repr = syn_repr();
        repr.max_seg_size = None;
        repr.sack_permitted = false;
        repr.window_scale = None;
        repr.ack_number = Some(1);
        let buf = emit(&repr, &SRC6, &DST6, &[]);
        assert_eq!(&buf[20..24], &[1, 1, 8, 10], "NOP NOP timestamps");
        repr.timestamps = None;
        repr.sack_ranges[0] = Some((10, 20));
        let buf = emit(&repr, &SRC6, &DST6, &[]);
        assert_eq!(&buf[20..24], &[1, 1, 5, 10], "NOP NOP SACK");
        assert_eq!(buf.len(), 32);
        repr.sack_ranges = [None; 4];
        assert_eq!(repr.header_len(), HEADER_LEN);
        repr.window_scale = Some(14);
        let buf = emit(&repr, &SRC6, &DST6, &[]);
        assert_eq!(&buf[20..], &[1, 3, 3, 14], "NOP window scale");
    }

    #[test]
    fn end_of_list_stops_the_options() {
        // Anything after EOL is padding, even bytes that look like options.
        let buf = with_options(&[0x02, 0x04, 0x01, 0x00, 0x00, 0x22, 0x00, 0xff]);
        let repr = parse(&buf, &SRC6, &DST6).unwrap();
        assert_eq!(repr.max_seg_size, Some(0x0100));
        assert!(repr.unknown_options.is_empty());
        let packet = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.option_iter().count(), 2);
    }

    #[test]
    fn unknown_store_refuses_modeled_kinds_and_overflow() {
        let mut store = TcpUnknownOptions::new();
        for kind in [0, 1, 2, 3, 4, 5, 8] {
            assert!(store.push(kind, &[]).is_err());
        }
        store.push(30, &[0; 36]).unwrap();
        assert_eq!(store.len(), 38);
        assert!(store.push(31, &[0]).is_err());
        store.push(31, &[]).unwrap();
        assert_eq!(store.len(), MAX_OPTIONS_LEN);
        assert!(store.push(32, &[]).is_err());
        store.clear();
        assert!(store.is_empty());
        assert_eq!(store, TcpUnknownOptions::default());
    }

    #[test]
    fn option_emit_round_trips_and_refuses_bad_options() {
        let options = [
            TcpOption::EndOfList,
            TcpOption::NoOperation,
            TcpOption::MaxSegmentSize(536),
            TcpOption::WindowScale(14),
            TcpOption::SackPermitted,
            TcpOption::SackRange([Some((1, 2)), Some((3, 4)), None, None]),
            TcpOption::Timestamps { tsval: 5, tsecr: 6 },
            TcpOption::Unknown {
                kind: 254,
                data: &[0x12, 0x34],
            },
        ];
        for option in options {
            let mut buf = [0u8; 40];
            let n = option.emit(&mut buf).unwrap();
            assert_eq!(n, option.buffer_len());
            assert_eq!(TcpOption::parse(&buf[..n]), Ok((option, n)));
            assert_eq!(option.emit(&mut buf[..n - 1]), Err(Error::Truncated));
        }
        let mut buf = [0u8; 300];
        assert!(TcpOption::SackRange([None; 4]).emit(&mut buf).is_err());
        let data = [0u8; 254];
        assert!(TcpOption::Unknown {
            kind: 99,
            data: &data
        }
        .emit(&mut buf)
        .is_err());
    }

    #[test]
    fn segment_len_counts_syn_and_fin() {
        let mut repr = syn_repr();
        repr.payload_len = 10;
        assert_eq!(repr.segment_len(), 11);
        repr.flags = TcpFlags::FIN | TcpFlags::PSH;
        assert_eq!(repr.segment_len(), 11);
        repr.flags = TcpFlags::SYN | TcpFlags::FIN;
        assert_eq!(repr.segment_len(), 12);
        repr.flags = TcpFlags::empty();
        assert_eq!(repr.segment_len(), 10);
    }

    #[test]
    fn a_computed_zero_checksum_is_kept() {
        // Search for a segment whose checksum is 0x0000 and check that it
        // both is sent as zero and verifies.
        let mut repr = syn_repr();
        repr.timestamps = None;
        repr.max_seg_size = None;
        repr.sack_permitted = false;
        repr.window_scale = None;
        for window in 0..=u16::MAX {
            repr.window_len = window;
            let buf = emit(&repr, &SRC4, &DST4, &[]);
            if buf[16..18] == [0, 0] {
                assert_eq!(parse(&buf, &SRC4, &DST4), Ok(repr));
                return;
            }
        }
        panic!("no window value gives a zero checksum");
    }
}
