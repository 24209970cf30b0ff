//! pcapng (draft-ietf-opsawg-pcapng).
//!
//! The writer: one section header, an interface description per interface
//! with nanosecond timestamps, and an enhanced packet block per packet with
//! an optional comment and an optional direction (the `epb_flags` option).
//! Blocks are written in host byte order, as the format allows: the
//! byte-order magic in the section header tells readers which order it is.
//!
//! The readers ([`blocks`] over a byte slice, [`PcapngReader`] over any
//! [`Read`]) understand section headers in either byte order, interface
//! descriptions (link type, snap length, `if_name`, `if_tsresol` in powers
//! of ten or of two, `if_tsoffset`) and enhanced packet blocks (timestamp
//! in nanoseconds, lengths, data, `epb_flags` direction, `opt_comment`);
//! they skip every other block type. Every length is checked against the
//! block that holds it: bad input is a [`wire::Error`](crate::Error), never a
//! panic, and nothing is allocated from a length field before the bytes it
//! claims have been read.

use std::io::{self, Read, Write};

use crate::{Error, Result};

const BLOCK_SECTION_HEADER: u32 = 0x0a0d_0d0a;
const BLOCK_INTERFACE_DESCRIPTION: u32 = 0x0000_0001;
const BLOCK_ENHANCED_PACKET: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const OPT_EPB_FLAGS: u16 = 2;
const OPT_SHB_USERAPPL: u16 = 4;
const OPT_IF_NAME: u16 = 2;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// Longest option value a block may carry (the length field is 16 bits).
const MAX_OPTION_LEN: usize = u16::MAX as usize - 3;

/// Link types (the tcpdump.org LINKTYPE_ registry) the stack's interfaces use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet II / 802.3 frames.
    Ethernet,
    /// Raw IP: the version nibble tells IPv4 from IPv6 (loopback, tunnels).
    RawIp,
    /// Raw IPv4 only.
    Ipv4,
    /// Raw IPv6 only.
    Ipv6,
}

impl LinkType {
    /// The link type a LINKTYPE_ value names, if it is one of these.
    pub const fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(Self::Ethernet),
            101 => Some(Self::RawIp),
            228 => Some(Self::Ipv4),
            229 => Some(Self::Ipv6),
            _ => None,
        }
    }

    /// The registered LINKTYPE_ value.
    pub const fn code(self) -> u16 {
        match self {
            Self::Ethernet => 1,
            Self::RawIp => 101,
            Self::Ipv4 => 228,
            Self::Ipv6 => 229,
        }
    }
}

/// Which way a packet went through the interface: bits 0-1 of the enhanced
/// packet block's `epb_flags` option (0b01 inbound, 0b10 outbound; 0b00,
/// "not available", is what leaving the option out says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Inbound,
    Outbound,
}

impl Direction {
    /// The `epb_flags` word that says only this direction.
    pub const fn epb_flags(self) -> u32 {
        match self {
            Self::Inbound => 0b01,
            Self::Outbound => 0b10,
        }
    }
}

/// Index of an interface inside one pcapng section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InterfaceId(pub u32);

/// One packet to write.
#[derive(Debug, Clone, Copy)]
pub struct CapturedPacket<'a> {
    /// Nanoseconds since the Unix epoch (or since the start of a simulated run).
    pub timestamp_ns: u64,
    /// The bytes as seen on the interface (truncated to the snap length).
    pub data: &'a [u8],
    /// Length on the wire, if larger than `data` (a truncated capture).
    pub original_len: Option<u32>,
    /// A per-packet comment (shown by Wireshark as `frame.comment`).
    pub comment: Option<&'a str>,
    /// Received or sent, if known (Wireshark's `frame.packet_flags_direction`).
    pub direction: Option<Direction>,
}

struct Interface {
    snap_len: u32,
}

/// Writes a pcapng stream to any [`Write`].
pub struct PcapngWriter<W: Write> {
    out: W,
    interfaces: Vec<Interface>,
    scratch: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Starts a section, naming the application that wrote it.
    pub fn new(out: W, application: &str) -> io::Result<Self> {
        let mut writer = Self {
            out,
            interfaces: Vec::new(),
            scratch: Vec::with_capacity(2048),
        };
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_ne_bytes());
        body.extend_from_slice(&1u16.to_ne_bytes()); // major version
        body.extend_from_slice(&0u16.to_ne_bytes()); // minor version
        body.extend_from_slice(&u64::MAX.to_ne_bytes()); // section length: unknown
        push_option(&mut body, OPT_SHB_USERAPPL, application.as_bytes())?;
        push_option_end(&mut body);
        writer.write_block(BLOCK_SECTION_HEADER, &body)?;
        Ok(writer)
    }

    /// Describes an interface; packets name it by the returned id. Timestamps
    /// of its packets are in nanoseconds (`if_tsresol` = 9).
    pub fn add_interface(
        &mut self,
        name: &str,
        link: LinkType,
        snap_len: u32,
    ) -> io::Result<InterfaceId> {
        self.add_interface_with_code(name, link.code(), snap_len)
    }

    /// [`add_interface`](Self::add_interface) with any LINKTYPE_ value (to
    /// copy an interface read from another capture).
    pub fn add_interface_with_code(
        &mut self,
        name: &str,
        link_type: u16,
        snap_len: u32,
    ) -> io::Result<InterfaceId> {
        let id = u32::try_from(self.interfaces.len())
            .map_err(|_| invalid("too many pcapng interfaces"))?;
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&link_type.to_ne_bytes());
        body.extend_from_slice(&0u16.to_ne_bytes()); // reserved
        body.extend_from_slice(&snap_len.to_ne_bytes());
        push_option(&mut body, OPT_IF_NAME, name.as_bytes())?;
        push_option(&mut body, OPT_IF_TSRESOL, &[9])?;
        push_option_end(&mut body);
        self.write_block(BLOCK_INTERFACE_DESCRIPTION, &body)?;
        self.interfaces.push(Interface { snap_len });
        Ok(InterfaceId(id))
    }

    /// Writes one enhanced packet block.
    pub fn write_packet(
        &mut self,
        interface: InterfaceId,
        packet: &CapturedPacket,
    ) -> io::Result<()> {
        let iface = self
            .interfaces
            .get(interface.0 as usize)
            .ok_or_else(|| invalid("packet names an interface that was never added"))?;
        let snap = if iface.snap_len == 0 {
            usize::MAX
        } else {
            iface.snap_len as usize
        };
        let captured = &packet.data[..packet.data.len().min(snap)];
        let captured_len =
            u32::try_from(captured.len()).map_err(|_| invalid("packet longer than 4 GiB"))?;
        let full_len =
            u32::try_from(packet.data.len()).map_err(|_| invalid("packet longer than 4 GiB"))?;
        let original_len = packet.original_len.unwrap_or(full_len).max(full_len);

        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        body.extend_from_slice(&interface.0.to_ne_bytes());
        body.extend_from_slice(&((packet.timestamp_ns >> 32) as u32).to_ne_bytes());
        body.extend_from_slice(&(packet.timestamp_ns as u32).to_ne_bytes());
        body.extend_from_slice(&captured_len.to_ne_bytes());
        body.extend_from_slice(&original_len.to_ne_bytes());
        body.extend_from_slice(captured);
        pad_to_32_bits(&mut body);
        if let Some(direction) = packet.direction {
            push_option(
                &mut body,
                OPT_EPB_FLAGS,
                &direction.epb_flags().to_ne_bytes(),
            )?;
        }
        if let Some(comment) = packet.comment {
            push_option(&mut body, OPT_COMMENT, comment.as_bytes())?;
        }
        if packet.direction.is_some() || packet.comment.is_some() {
            push_option_end(&mut body);
        }
        let result = self.write_block(BLOCK_ENHANCED_PACKET, &body);
        self.scratch = body;
        result
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// A block: type, total length, body (already 32-bit padded), total length.
    fn write_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        let total =
            u32::try_from(body.len() + 12).map_err(|_| invalid("pcapng block too large"))?;
        self.out.write_all(&block_type.to_ne_bytes())?;
        self.out.write_all(&total.to_ne_bytes())?;
        self.out.write_all(body)?;
        self.out.write_all(&total.to_ne_bytes())
    }
}

fn push_option(body: &mut Vec<u8>, code: u16, value: &[u8]) -> io::Result<()> {
    if value.len() > MAX_OPTION_LEN {
        return Err(invalid("pcapng option value longer than 65532 bytes"));
    }
    body.extend_from_slice(&code.to_ne_bytes());
    body.extend_from_slice(&(value.len() as u16).to_ne_bytes());
    body.extend_from_slice(value);
    pad_to_32_bits(body);
    Ok(())
}

fn push_option_end(body: &mut Vec<u8>) {
    body.extend_from_slice(&OPT_END.to_ne_bytes());
    body.extend_from_slice(&0u16.to_ne_bytes());
}

fn pad_to_32_bits(body: &mut Vec<u8>) {
    let padded = body.len().next_multiple_of(4);
    body.resize(padded, 0);
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

// ------------------------------------------------------------------ reading

/// Largest block the readers accept (Wireshark's limit is about the same):
/// a longer one is refused before anything is allocated for it.
pub const MAX_BLOCK_LEN: usize = 16 << 20;

/// Block type, total length, ..., total length.
const BLOCK_FRAMING_LEN: usize = 12;
/// Framing, byte-order magic, versions, section length.
const SECTION_HEADER_MIN_LEN: usize = BLOCK_FRAMING_LEN + 16;
/// Link type, reserved, snap length.
const INTERFACE_FIXED_LEN: usize = 8;
/// Interface id, timestamp (two words), captured and original length.
const PACKET_FIXED_LEN: usize = 20;
/// `if_tsresol` when the option is absent: microseconds.
const DEFAULT_TSRESOL: u8 = 6;

/// Byte order of a section, as its byte-order magic says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

impl ByteOrder {
    fn u16(self, bytes: [u8; 2]) -> u16 {
        match self {
            Self::Little => u16::from_le_bytes(bytes),
            Self::Big => u16::from_be_bytes(bytes),
        }
    }

    fn u32(self, bytes: [u8; 4]) -> u32 {
        match self {
            Self::Little => u32::from_le_bytes(bytes),
            Self::Big => u32::from_be_bytes(bytes),
        }
    }

    fn u64(self, bytes: [u8; 8]) -> u64 {
        match self {
            Self::Little => u64::from_le_bytes(bytes),
            Self::Big => u64::from_be_bytes(bytes),
        }
    }

    /// The `N` bytes at `offset` read as a number in this order, or
    /// truncated if `data` ends before them.
    fn read<const N: usize>(data: &[u8], offset: usize) -> Result<[u8; N]> {
        offset
            .checked_add(N)
            .and_then(|end| data.get(offset..end))
            .and_then(|b| b.try_into().ok())
            .ok_or(Error::Truncated)
    }

    fn u16_at(self, data: &[u8], offset: usize) -> Result<u16> {
        Ok(self.u16(Self::read(data, offset)?))
    }

    fn u32_at(self, data: &[u8], offset: usize) -> Result<u32> {
        Ok(self.u32(Self::read(data, offset)?))
    }

    fn u64_at(self, data: &[u8], offset: usize) -> Result<u64> {
        Ok(self.u64(Self::read(data, offset)?))
    }
}

/// The unit of an interface's timestamps (`if_tsresol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    /// 10^-n seconds.
    Decimal(u8),
    /// 2^-n seconds.
    Binary(u8),
}

impl TsResolution {
    /// Reads the option byte: the high bit says a power of two.
    pub const fn from_option(byte: u8) -> Self {
        if byte & 0x80 == 0 {
            Self::Decimal(byte)
        } else {
            Self::Binary(byte & 0x7f)
        }
    }

    /// `units` of this resolution in nanoseconds (rounded down), or `None`
    /// if that does not fit in a `u64`.
    pub fn to_nanos(self, units: u64) -> Option<u64> {
        match self {
            Self::Decimal(n) if n <= 9 => units.checked_mul(10u64.pow(u32::from(9 - n))),
            // 10^20 exceeds any u64: every value rounds down to 0.
            Self::Decimal(n) if n - 9 >= 20 => Some(0),
            Self::Decimal(n) => Some(units / 10u64.pow(u32::from(n - 9))),
            // n < 128 and units * 10^9 < 2^94: no overflow in u128.
            Self::Binary(n) => u64::try_from((u128::from(units) * 1_000_000_000) >> n).ok(),
        }
    }
}

/// A section header block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionHeader {
    pub byte_order: ByteOrder,
    pub major_version: u16,
    pub minor_version: u16,
    /// Bytes of the section after this block, if the writer knew.
    pub section_len: Option<u64>,
}

/// An interface description block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceDescription<'a> {
    /// The id packets of this section name it by (its position).
    pub id: InterfaceId,
    /// The LINKTYPE_ value ([`LinkType::from_code`] names the usual ones).
    pub link_type: u16,
    /// 0: no limit.
    pub snap_len: u32,
    /// `if_name`.
    pub name: Option<&'a str>,
    /// `if_tsresol` (microseconds if absent).
    pub ts_resolution: TsResolution,
    /// `if_tsoffset`: seconds added to every timestamp (0 if absent).
    pub ts_offset_s: i64,
}

/// An enhanced packet block, its timestamp made nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnhancedPacket<'a> {
    pub interface: InterfaceId,
    /// Nanoseconds, `if_tsresol` and `if_tsoffset` applied.
    pub timestamp_ns: u64,
    /// The captured bytes (the captured length is `data.len()`).
    pub data: &'a [u8],
    /// Length on the wire (at least `data.len()`).
    pub original_len: u32,
    /// From `epb_flags` bits 0-1, if they say inbound or outbound.
    pub direction: Option<Direction>,
    /// The first `opt_comment`.
    pub comment: Option<&'a str>,
}

/// One block of a pcapng stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block<'a> {
    SectionHeader(SectionHeader),
    InterfaceDescription(InterfaceDescription<'a>),
    EnhancedPacket(EnhancedPacket<'a>),
    /// Any other block type, skipped (its framing was checked).
    Other {
        block_type: u32,
    },
}

/// How an interface's timestamps become nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Clock {
    resolution: TsResolution,
    offset_s: i64,
}

impl Clock {
    fn to_nanos(self, units: u64) -> Result<u64> {
        let ns = self.resolution.to_nanos(units).ok_or(Error::Unsupported(
            "pcapng timestamp beyond 2^64 nanoseconds",
        ))?;
        let ns = i128::from(ns) + i128::from(self.offset_s) * 1_000_000_000;
        u64::try_from(ns).map_err(|_| Error::Unsupported("pcapng timestamp outside 0..2^64 ns"))
    }
}

/// What a reader keeps from block to block: the section's byte order and
/// its interfaces' clocks (at most one per interface block read, so no
/// more than the input's size).
#[derive(Debug, Default)]
struct Parser {
    order: Option<ByteOrder>,
    interfaces: Vec<Clock>,
}

const SECTION_HEADER_TYPE_BYTES: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

impl Parser {
    /// From a block's first 12 bytes, its byte order and total length,
    /// checked: at least the framing (or a section header's fixed part), a
    /// multiple of 4, at most [`MAX_BLOCK_LEN`].
    fn frame(&self, head: &[u8]) -> Result<(ByteOrder, usize)> {
        let type_bytes: [u8; 4] = ByteOrder::read(head, 0)?;
        let (order, min_len) = if type_bytes == SECTION_HEADER_TYPE_BYTES {
            let magic: [u8; 4] = ByteOrder::read(head, 8)?;
            let order = if magic == BYTE_ORDER_MAGIC.to_be_bytes() {
                ByteOrder::Big
            } else if magic == BYTE_ORDER_MAGIC.to_le_bytes() {
                ByteOrder::Little
            } else {
                return Err(Error::Malformed("pcapng byte-order magic"));
            };
            (order, SECTION_HEADER_MIN_LEN)
        } else {
            let order = self.order.ok_or(Error::Malformed(
                "pcapng stream does not start with a section header",
            ))?;
            (order, BLOCK_FRAMING_LEN)
        };
        let len = order.u32_at(head, 4)? as usize;
        if len < min_len {
            return Err(Error::Malformed("pcapng block shorter than its fixed part"));
        }
        if !len.is_multiple_of(4) {
            return Err(Error::Malformed("pcapng block length not a multiple of 4"));
        }
        if len > MAX_BLOCK_LEN {
            return Err(Error::Unsupported("pcapng block longer than 16 MiB"));
        }
        Ok((order, len))
    }

    /// Reads one whole block (framing included), updating the state.
    fn parse<'a>(&mut self, block: &'a [u8]) -> Result<Block<'a>> {
        let (order, len) = self.frame(block)?;
        if block.len() != len {
            return Err(Error::Truncated);
        }
        if order.u32_at(block, len - 4)? as usize != len {
            return Err(Error::Malformed("pcapng trailing block length differs"));
        }
        let body = &block[8..len - 4];
        match order.u32_at(block, 0)? {
            BLOCK_SECTION_HEADER => self.section_header(order, body),
            BLOCK_INTERFACE_DESCRIPTION => self.interface(order, body),
            BLOCK_ENHANCED_PACKET => self.packet(order, body),
            block_type => Ok(Block::Other { block_type }),
        }
    }

    fn section_header<'a>(&mut self, order: ByteOrder, body: &'a [u8]) -> Result<Block<'a>> {
        let major_version = order.u16_at(body, 4)?;
        let minor_version = order.u16_at(body, 6)?;
        if major_version != 1 {
            return Err(Error::Unsupported("pcapng major version not 1"));
        }
        let section_len = order.u64_at(body, 8)?;
        for option in Options::new(order, &body[16..]) {
            option?;
        }
        self.order = Some(order);
        self.interfaces.clear();
        Ok(Block::SectionHeader(SectionHeader {
            byte_order: order,
            major_version,
            minor_version,
            section_len: (section_len != u64::MAX).then_some(section_len),
        }))
    }

    fn interface<'a>(&mut self, order: ByteOrder, body: &'a [u8]) -> Result<Block<'a>> {
        let link_type = order.u16_at(body, 0)?;
        let snap_len = order.u32_at(body, 4)?;
        let mut name = None;
        let mut ts_resolution = TsResolution::from_option(DEFAULT_TSRESOL);
        let mut ts_offset_s = 0;
        for option in Options::new(order, &body[INTERFACE_FIXED_LEN.min(body.len())..]) {
            let (code, value) = option?;
            match code {
                OPT_IF_NAME => {
                    name = Some(
                        std::str::from_utf8(value)
                            .map_err(|_| Error::Malformed("pcapng if_name not UTF-8"))?,
                    );
                }
                OPT_IF_TSRESOL => match value {
                    &[byte] => ts_resolution = TsResolution::from_option(byte),
                    _ => return Err(Error::Malformed("pcapng if_tsresol not 1 byte")),
                },
                OPT_IF_TSOFFSET => {
                    ts_offset_s = order.u64(
                        value
                            .try_into()
                            .map_err(|_| Error::Malformed("pcapng if_tsoffset not 8 bytes"))?,
                    ) as i64;
                }
                _ => {}
            }
        }
        let id = u32::try_from(self.interfaces.len())
            .map_err(|_| Error::Unsupported("more than 2^32 pcapng interfaces"))?;
        self.interfaces.push(Clock {
            resolution: ts_resolution,
            offset_s: ts_offset_s,
        });
        Ok(Block::InterfaceDescription(InterfaceDescription {
            id: InterfaceId(id),
            link_type,
            snap_len,
            name,
            ts_resolution,
            ts_offset_s,
        }))
    }

    fn packet<'a>(&self, order: ByteOrder, body: &'a [u8]) -> Result<Block<'a>> {
        let interface = order.u32_at(body, 0)?;
        let units = (u64::from(order.u32_at(body, 4)?) << 32) | u64::from(order.u32_at(body, 8)?);
        let captured_len = order.u32_at(body, 12)? as usize;
        let original_len = order.u32_at(body, 16)?;
        // body.len() >= PACKET_FIXED_LEN here, and is at most 16 MiB.
        let room = body.len() - PACKET_FIXED_LEN;
        if captured_len > room {
            return Err(Error::Truncated);
        }
        let padded = captured_len + (4 - captured_len % 4) % 4;
        if padded > room {
            return Err(Error::Truncated);
        }
        if captured_len > original_len as usize {
            return Err(Error::Malformed(
                "pcapng captured length exceeds original length",
            ));
        }
        let clock = self
            .interfaces
            .get(interface as usize)
            .ok_or(Error::Malformed(
                "pcapng packet names an undescribed interface",
            ))?;
        let data = &body[PACKET_FIXED_LEN..PACKET_FIXED_LEN + captured_len];
        let mut direction = None;
        let mut comment = None;
        for option in Options::new(order, &body[PACKET_FIXED_LEN + padded..]) {
            let (code, value) = option?;
            match code {
                OPT_COMMENT if comment.is_none() => {
                    comment = Some(
                        std::str::from_utf8(value)
                            .map_err(|_| Error::Malformed("pcapng comment not UTF-8"))?,
                    );
                }
                OPT_EPB_FLAGS => {
                    let flags = order.u32(
                        value
                            .try_into()
                            .map_err(|_| Error::Malformed("pcapng epb_flags not 4 bytes"))?,
                    );
                    direction = match flags & 0b11 {
                        0b01 => Some(Direction::Inbound),
                        0b10 => Some(Direction::Outbound),
                        _ => None,
                    };
                }
                _ => {}
            }
        }
        Ok(Block::EnhancedPacket(EnhancedPacket {
            interface: InterfaceId(interface),
            timestamp_ns: clock.to_nanos(units)?,
            data,
            original_len,
            direction,
            comment,
        }))
    }
}

/// The options of a block: (code, value) until `opt_endofopt` or the end
/// of the area; an option running past the area is truncated.
struct Options<'a> {
    order: ByteOrder,
    area: &'a [u8],
    done: bool,
}

impl<'a> Options<'a> {
    fn new(order: ByteOrder, area: &'a [u8]) -> Self {
        Self {
            order,
            area,
            done: false,
        }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<(u16, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.area.is_empty() {
            return None;
        }
        let header = (|| {
            let code = self.order.u16_at(self.area, 0)?;
            let len = usize::from(self.order.u16_at(self.area, 2)?);
            let padded = 4 + len + (4 - len % 4) % 4;
            if padded > self.area.len() {
                return Err(Error::Truncated);
            }
            Ok((code, len, padded))
        })();
        match header {
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
            Ok((OPT_END, _, _)) => {
                self.done = true;
                None
            }
            Ok((code, len, padded)) => {
                let value = &self.area[4..4 + len];
                self.area = &self.area[padded..];
                Some(Ok((code, value)))
            }
        }
    }
}

/// The blocks of a pcapng stream held in memory, in order. After an error
/// it yields nothing more.
pub fn blocks(data: &[u8]) -> Blocks<'_> {
    Blocks {
        data,
        position: 0,
        parser: Parser::default(),
        failed: false,
    }
}

/// Iterator returned by [`blocks`].
#[derive(Debug)]
pub struct Blocks<'a> {
    data: &'a [u8],
    position: usize,
    parser: Parser,
    failed: bool,
}

impl<'a> Blocks<'a> {
    /// Offset of the next block in the data.
    pub fn position(&self) -> usize {
        self.position
    }

    fn next_block(&mut self) -> Result<Block<'a>> {
        let rest = &self.data[self.position..];
        let (_, len) = self.parser.frame(rest)?;
        let block = rest.get(..len).ok_or(Error::Truncated)?;
        let parsed = self.parser.parse(block)?;
        self.position += len;
        Ok(parsed)
    }
}

impl<'a> Iterator for Blocks<'a> {
    type Item = Result<Block<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.data.len() {
            return None;
        }
        let block = self.next_block();
        self.failed = block.is_err();
        Some(block)
    }
}

/// Why a [`PcapngReader`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading pcapng: {0}")]
    Io(#[from] io::Error),
    #[error("pcapng: {0}")]
    Format(#[from] Error),
}

/// Bytes read from the input at a time while filling a block.
const READ_CHUNK: usize = 8 * 1024;

/// Reads a pcapng stream from any [`Read`] one block at a time, keeping
/// only the current block in memory (wrap a file in a `BufReader`).
pub struct PcapngReader<R: Read> {
    input: R,
    parser: Parser,
    block: Vec<u8>,
    done: bool,
}

impl<R: Read> PcapngReader<R> {
    pub fn new(input: R) -> Self {
        Self {
            input,
            parser: Parser::default(),
            block: Vec::new(),
            done: false,
        }
    }

    /// The next block, `None` at the end of the input (or after an error).
    /// A stream ending inside a block is [`Error::Truncated`].
    pub fn next_block(&mut self) -> std::result::Result<Option<Block<'_>>, ReadError> {
        if self.done {
            return Ok(None);
        }
        match self.fill() {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return Ok(None);
            }
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        }
        match self.parser.parse(&self.block) {
            Ok(block) => Ok(Some(block)),
            Err(e) => {
                self.done = true;
                Err(e.into())
            }
        }
    }

    pub fn into_inner(self) -> R {
        self.input
    }

    /// Reads the next whole block into `self.block`; false at a clean end.
    fn fill(&mut self) -> std::result::Result<bool, ReadError> {
        self.block.clear();
        self.read_up_to(BLOCK_FRAMING_LEN)?;
        if self.block.is_empty() {
            return Ok(false);
        }
        // On a short head this fails as the slice reader does.
        let (_, len) = self.parser.frame(&self.block)?;
        self.read_up_to(len)?;
        if self.block.len() < len {
            return Err(Error::Truncated.into());
        }
        Ok(true)
    }

    /// Reads until `self.block` holds `len` bytes or the input ends. The
    /// bytes go through a small stack buffer, so the block buffer grows
    /// with the bytes that arrive, never with what a length field claims.
    fn read_up_to(&mut self, len: usize) -> io::Result<()> {
        let mut chunk = [0u8; READ_CHUNK];
        while self.block.len() < len {
            let want = (len - self.block.len()).min(READ_CHUNK);
            match self.input.read(&mut chunk[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => self.block.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(data: &[u8], offset: usize) -> u32 {
        u32::from_ne_bytes(data[offset..offset + 4].try_into().unwrap())
    }

    /// Walks the blocks of a pcapng stream, checking the framing, and returns
    /// (type, body) pairs.
    fn blocks(data: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < data.len() {
            let kind = u32_at(data, at);
            let total = u32_at(data, at + 4) as usize;
            assert_eq!(total % 4, 0, "block length is a multiple of 4");
            assert_eq!(
                u32_at(data, at + total - 4) as usize,
                total,
                "trailing length"
            );
            out.push((kind, data[at + 8..at + total - 4].to_vec()));
            at += total;
        }
        out
    }

    #[test]
    fn writes_framed_blocks_with_nanosecond_timestamps() {
        let mut w = PcapngWriter::new(Vec::new(), "stackscope test").unwrap();
        let eth = w.add_interface("eth0", LinkType::Ethernet, 0).unwrap();
        let lo = w.add_interface("lo", LinkType::RawIp, 4).unwrap();
        w.write_packet(
            eth,
            &CapturedPacket {
                timestamp_ns: 0x1_0000_0002,
                data: &[1, 2, 3],
                original_len: None,
                comment: Some("hi"),
                direction: None,
            },
        )
        .unwrap();
        w.write_packet(
            lo,
            &CapturedPacket {
                timestamp_ns: 7,
                data: &[9; 10],
                original_len: None,
                comment: None,
                direction: None,
            },
        )
        .unwrap();
        let data = w.into_inner().unwrap();
        let blocks = blocks(&data);
        let kinds: Vec<u32> = blocks.iter().map(|b| b.0).collect();
        assert_eq!(kinds, [BLOCK_SECTION_HEADER, 1, 1, 6, 6]);
        assert_eq!(u32_at(&blocks[0].1, 0), BYTE_ORDER_MAGIC);
        // if_tsresol = 9 follows if_name in each interface block.
        let mut tsresol = OPT_IF_TSRESOL.to_ne_bytes().to_vec();
        tsresol.extend_from_slice(&1u16.to_ne_bytes());
        tsresol.push(9);
        assert!(blocks[1].1.windows(5).any(|w| w == tsresol));

        let first = &blocks[3].1;
        assert_eq!(u32_at(first, 0), 0, "interface id");
        assert_eq!((u32_at(first, 4), u32_at(first, 8)), (1, 2), "timestamp");
        assert_eq!((u32_at(first, 12), u32_at(first, 16)), (3, 3), "lengths");
        assert_eq!(&first[20..23], &[1, 2, 3]);
        assert_eq!(u16::from_ne_bytes([first[24], first[25]]), OPT_COMMENT);
        assert_eq!(
            u16::from_ne_bytes([first[26], first[27]]),
            2,
            "comment length"
        );
        assert_eq!(&first[28..30], b"hi");

        // The second interface's snap length truncates the capture.
        let second = &blocks[4].1;
        assert_eq!((u32_at(second, 12), u32_at(second, 16)), (4, 10));
    }

    #[test]
    fn unknown_interface_is_an_error() {
        let mut w = PcapngWriter::new(Vec::new(), "t").unwrap();
        let packet = CapturedPacket {
            timestamp_ns: 0,
            data: &[],
            original_len: None,
            comment: None,
            direction: None,
        };
        assert!(w.write_packet(InterfaceId(0), &packet).is_err());
    }

    #[test]
    fn direction_is_written_as_epb_flags_before_the_comment() {
        let mut w = PcapngWriter::new(Vec::new(), "t").unwrap();
        let eth = w.add_interface("eth0", LinkType::Ethernet, 0).unwrap();
        for direction in [Direction::Inbound, Direction::Outbound] {
            w.write_packet(
                eth,
                &CapturedPacket {
                    timestamp_ns: 1,
                    data: &[0xaa; 5],
                    original_len: None,
                    comment: Some("c"),
                    direction: Some(direction),
                },
            )
            .unwrap();
        }
        let data = w.into_inner().unwrap();
        let blocks = blocks(&data);
        for (block, flags) in blocks[2..].iter().zip([0b01u32, 0b10]) {
            let body = &block.1;
            // 20 bytes of fixed fields, 5 of data padded to 8.
            let options = &body[28..];
            assert_eq!(u16::from_ne_bytes([options[0], options[1]]), OPT_EPB_FLAGS);
            assert_eq!(u16::from_ne_bytes([options[2], options[3]]), 4);
            assert_eq!(u32_at(options, 4), flags);
            assert_eq!(u16::from_ne_bytes([options[8], options[9]]), OPT_COMMENT);
            assert_eq!(u16::from_ne_bytes([options[10], options[11]]), 1);
            assert_eq!(options[12], b'c');
            // opt_endofopt closes the list.
            assert_eq!(&options[16..20], &[0, 0, 0, 0]);
            assert_eq!(options.len(), 20);
        }
    }

    // -------------------------------------------------------------- reading

    /// Every packet field the reader reports, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct ReadPacket {
        interface: u32,
        timestamp_ns: u64,
        data: Vec<u8>,
        original_len: u32,
        direction: Option<Direction>,
        comment: Option<String>,
    }

    /// (interfaces as (name, link type, snap length), packets) of a
    /// stream read with [`blocks`].
    /// An interface as (name, link type, snap length).
    type ReadInterface = (String, u16, u32);

    fn read_all(data: &[u8]) -> Result<(Vec<ReadInterface>, Vec<ReadPacket>)> {
        let mut interfaces = Vec::new();
        let mut packets = Vec::new();
        for block in super::blocks(data) {
            match block? {
                Block::InterfaceDescription(i) => {
                    assert_eq!(i.id.0 as usize, interfaces.len());
                    interfaces.push((i.name.unwrap_or("").to_owned(), i.link_type, i.snap_len));
                }
                Block::EnhancedPacket(p) => packets.push(owned(&p)),
                Block::SectionHeader(_) => interfaces.clear(),
                Block::Other { .. } => {}
            }
        }
        Ok((interfaces, packets))
    }

    fn owned(p: &EnhancedPacket) -> ReadPacket {
        ReadPacket {
            interface: p.interface.0,
            timestamp_ns: p.timestamp_ns,
            data: p.data.to_vec(),
            original_len: p.original_len,
            direction: p.direction,
            comment: p.comment.map(str::to_owned),
        }
    }

    /// The packets of a stream read with [`PcapngReader`].
    fn stream_all(data: &[u8]) -> std::result::Result<Vec<ReadPacket>, ReadError> {
        let mut reader = PcapngReader::new(data);
        let mut packets = Vec::new();
        while let Some(block) = reader.next_block()? {
            if let Block::EnhancedPacket(p) = block {
                packets.push(owned(&p));
            }
        }
        Ok(packets)
    }

    /// Three interfaces, five packets with and without comments,
    /// directions, truncation; and where each block starts.
    fn sample() -> (Vec<u8>, Vec<ReadPacket>) {
        let mut w = PcapngWriter::new(Vec::new(), "round trip").unwrap();
        let eth = w
            .add_interface("host-a:eth0", LinkType::Ethernet, 0)
            .unwrap();
        let lo = w.add_interface("lo", LinkType::RawIp, 6).unwrap();
        let other = w.add_interface_with_code("usb", 220, 0).unwrap();
        let packets = [
            (
                eth,
                5,
                vec![1u8; 60],
                None,
                Some("first"),
                Some(Direction::Outbound),
            ),
            (
                lo,
                0x1_2345_6789,
                vec![0x60; 10],
                None,
                None,
                Some(Direction::Inbound),
            ),
            (
                eth,
                7,
                vec![2; 3],
                Some(1500),
                Some("ünïcode comment"),
                None,
            ),
            (other, 9, vec![], None, None, None),
            (
                eth,
                u64::MAX,
                vec![3; 1514],
                None,
                Some(""),
                Some(Direction::Inbound),
            ),
        ];
        let mut expected = Vec::new();
        for (iface, ts, data, original_len, comment, direction) in packets {
            w.write_packet(
                iface,
                &CapturedPacket {
                    timestamp_ns: ts,
                    data: &data,
                    original_len,
                    comment,
                    direction,
                },
            )
            .unwrap();
            let snap = if iface == lo { 6 } else { data.len() };
            expected.push(ReadPacket {
                interface: iface.0,
                timestamp_ns: ts,
                data: data[..snap.min(data.len())].to_vec(),
                original_len: original_len.unwrap_or(data.len() as u32),
                direction,
                comment: comment.map(str::to_owned),
            });
        }
        (w.into_inner().unwrap(), expected)
    }

    #[test]
    fn reads_back_what_the_writer_wrote() {
        let (data, expected) = sample();
        let (interfaces, packets) = read_all(&data).unwrap();
        assert_eq!(
            interfaces,
            [
                ("host-a:eth0".to_owned(), 1, 0),
                ("lo".to_owned(), 101, 6),
                ("usb".to_owned(), 220, 0)
            ]
        );
        assert_eq!(packets, expected);
        assert_eq!(stream_all(&data).unwrap(), expected);
        assert_eq!(LinkType::from_code(101), Some(LinkType::RawIp));
        assert_eq!(LinkType::from_code(220), None);
        // The section header says the host's order and an unknown length.
        let first = super::blocks(&data).next().unwrap().unwrap();
        let order = if cfg!(target_endian = "big") {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        assert_eq!(
            first,
            Block::SectionHeader(SectionHeader {
                byte_order: order,
                major_version: 1,
                minor_version: 0,
                section_len: None,
            })
        );
    }

    /// Offsets where the sample's blocks end.
    fn block_ends(data: &[u8]) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut it = super::blocks(data);
        while let Some(block) = it.next() {
            block.unwrap();
            ends.push(it.position());
        }
        ends
    }

    #[test]
    fn truncation_at_every_byte_is_a_clean_error() {
        let (data, expected) = sample();
        let ends = block_ends(&data);
        assert_eq!(*ends.last().unwrap(), data.len());
        for cut in 0..data.len() {
            let short = &data[..cut];
            let at_boundary = cut == 0 || ends.contains(&cut);
            match read_all(short) {
                Ok((_, packets)) => {
                    assert!(at_boundary, "cut at {cut} read without error");
                    assert_eq!(packets[..], expected[..packets.len()]);
                }
                Err(e) => {
                    assert!(!at_boundary, "cut at block end {cut}: {e}");
                    assert_eq!(e, Error::Truncated, "cut at {cut}");
                }
            }
            match stream_all(short) {
                Ok(_) => assert!(at_boundary, "stream cut at {cut} read without error"),
                Err(ReadError::Format(Error::Truncated)) => assert!(!at_boundary),
                Err(e) => panic!("stream cut at {cut}: {e}"),
            }
        }
    }

    /// A big-endian block: type, length, body, length.
    fn be_block(block_type: u32, body: &[u8]) -> Vec<u8> {
        let len = (body.len() + 12) as u32;
        let mut out = block_type.to_be_bytes().to_vec();
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&len.to_be_bytes());
        out
    }

    fn be_option(code: u16, value: &[u8]) -> Vec<u8> {
        let mut out = code.to_be_bytes().to_vec();
        out.extend_from_slice(&(value.len() as u16).to_be_bytes());
        out.extend_from_slice(value);
        out.resize(out.len().next_multiple_of(4), 0);
        out
    }

    /// A big-endian section: an interface in 2^-10 s with a name, one with
    /// no options (microseconds), one in 10^-12 s offset by 10 s, an
    /// unknown block, and a packet on each.
    fn big_endian_section() -> Vec<u8> {
        let mut shb = 0x1a2b_3c4du32.to_be_bytes().to_vec();
        shb.extend_from_slice(&[0, 1, 0, 0]);
        shb.extend_from_slice(&1234u64.to_be_bytes());
        shb.extend_from_slice(&be_option(4, b"someone else"));
        shb.extend_from_slice(&[0; 4]);
        let mut data = be_block(BLOCK_SECTION_HEADER, &shb);

        let mut idb = vec![0, 1, 0, 0, 0, 0, 0xff, 0xff];
        idb.extend_from_slice(&be_option(OPT_IF_NAME, b"big0"));
        idb.extend_from_slice(&be_option(OPT_IF_TSRESOL, &[0x80 | 10]));
        data.extend(be_block(BLOCK_INTERFACE_DESCRIPTION, &idb));
        data.extend(be_block(
            BLOCK_INTERFACE_DESCRIPTION,
            &[0, 228, 0, 0, 0, 0, 0, 0],
        ));
        let mut idb = vec![0, 229, 0, 0, 0, 0, 0, 0];
        idb.extend_from_slice(&be_option(OPT_IF_TSRESOL, &[12]));
        idb.extend_from_slice(&be_option(OPT_IF_TSOFFSET, &10i64.to_be_bytes()));
        idb.extend_from_slice(&[0; 4]);
        data.extend(be_block(BLOCK_INTERFACE_DESCRIPTION, &idb));
        data.extend(be_block(0x0000_0bad, &[1, 2, 3, 4]));

        let packet = |iface: u32, units: u64, payload: &[u8], options: &[u8]| {
            let mut epb = iface.to_be_bytes().to_vec();
            epb.extend_from_slice(&((units >> 32) as u32).to_be_bytes());
            epb.extend_from_slice(&(units as u32).to_be_bytes());
            epb.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            epb.extend_from_slice(&(payload.len() as u32 + 2).to_be_bytes());
            epb.extend_from_slice(payload);
            epb.resize(epb.len().next_multiple_of(4), 0);
            epb.extend_from_slice(options);
            be_block(BLOCK_ENHANCED_PACKET, &epb)
        };
        let mut options = be_option(OPT_EPB_FLAGS, &0b10u32.to_be_bytes());
        options.extend(be_option(OPT_COMMENT, b"big comment"));
        options.extend(be_option(OPT_COMMENT, b"second comment"));
        options.extend_from_slice(&[0; 4]);
        data.extend(packet(0, 3 << 10, &[0xab; 5], &options));
        data.extend(packet(1, 7, &[0xcd; 4], &[]));
        data.extend(packet(2, 2_500_000_000_000, &[0xef; 1], &[]));
        data
    }

    #[test]
    fn reads_a_big_endian_section() {
        let data = big_endian_section();
        let all: Vec<Block> = super::blocks(&data).map(Result::unwrap).collect();
        assert_eq!(
            all[0],
            Block::SectionHeader(SectionHeader {
                byte_order: ByteOrder::Big,
                major_version: 1,
                minor_version: 0,
                section_len: Some(1234),
            })
        );
        assert_eq!(
            all[1],
            Block::InterfaceDescription(InterfaceDescription {
                id: InterfaceId(0),
                link_type: 1,
                snap_len: 0xffff,
                name: Some("big0"),
                ts_resolution: TsResolution::Binary(10),
                ts_offset_s: 0,
            })
        );
        let Block::InterfaceDescription(second) = all[2] else {
            panic!("{:?}", all[2])
        };
        assert_eq!(
            (second.name, second.ts_resolution),
            (None, TsResolution::Decimal(6))
        );
        assert_eq!(all[4], Block::Other { block_type: 0xbad });
        let (_, packets) = read_all(&data).unwrap();
        assert_eq!(
            packets[0],
            ReadPacket {
                interface: 0,
                timestamp_ns: 3_000_000_000,
                data: vec![0xab; 5],
                original_len: 7,
                direction: Some(Direction::Outbound),
                comment: Some("big comment".into()),
            }
        );
        assert_eq!(packets[1].timestamp_ns, 7_000);
        assert_eq!(packets[1].direction, None);
        // 2.5e12 ps = 2.5 s, plus the 10 s offset.
        assert_eq!(packets[2].timestamp_ns, 12_500_000_000);
        assert_eq!(stream_all(&data).unwrap(), packets);
    }

    #[test]
    fn timestamp_resolutions() {
        assert_eq!(TsResolution::from_option(9).to_nanos(5), Some(5));
        assert_eq!(TsResolution::from_option(3).to_nanos(5), Some(5_000_000));
        assert_eq!(TsResolution::from_option(10).to_nanos(55), Some(5));
        assert_eq!(TsResolution::from_option(127).to_nanos(u64::MAX), Some(0));
        assert_eq!(TsResolution::from_option(0).to_nanos(u64::MAX), None);
        assert_eq!(
            TsResolution::from_option(0x80).to_nanos(2),
            Some(2_000_000_000)
        );
        assert_eq!(
            TsResolution::from_option(0x80 | 30).to_nanos(1 << 30),
            Some(1_000_000_000)
        );
        assert_eq!(TsResolution::from_option(0xff).to_nanos(u64::MAX), Some(0));
    }

    /// The sample with the bytes at `at` replaced.
    fn patched(at: usize, bytes: &[u8]) -> Vec<u8> {
        let (mut data, _) = sample();
        data[at..at + bytes.len()].copy_from_slice(bytes);
        data
    }

    fn first_error(data: &[u8]) -> Error {
        read_all(data).expect_err("corrupt input reads")
    }

    #[test]
    fn inconsistent_input_is_an_error() {
        let (data, _) = sample();
        let ends = block_ends(&data);
        let (idb, epb) = (ends[0], ends[3]);
        // Not a pcapng file at all.
        assert!(matches!(
            first_error(b"\x01\x00\x00\x00\x0c\x00\x00\x00\x0c\x00\x00\x00"),
            Error::Malformed(_)
        ));
        // Bad byte-order magic.
        assert!(matches!(
            first_error(&patched(8, &[1, 2, 3, 4])),
            Error::Malformed(_)
        ));
        // Major version 2.
        assert!(matches!(
            first_error(&patched(12, &2u16.to_ne_bytes())),
            Error::Unsupported(_)
        ));
        // Trailing length differs from the leading one.
        let trailing = idb - 4;
        let len = u32_at(&data, trailing);
        assert!(matches!(
            first_error(&patched(trailing, &(len + 4).to_ne_bytes())),
            Error::Malformed(_)
        ));
        // Block length not a multiple of 4, below 12, beyond 16 MiB.
        for bad in [len + 1, 8, 1 << 30] {
            let e = first_error(&patched(idb + 4, &bad.to_ne_bytes()));
            assert!(
                matches!(e, Error::Malformed(_) | Error::Unsupported(_)),
                "{bad}: {e}"
            );
        }
        // A length longer than the input (the last block's), or running
        // into the next block.
        let last = ends[ends.len() - 2];
        let last_len = u32_at(&data, last + 4);
        assert_eq!(
            first_error(&patched(last + 4, &(last_len + 8).to_ne_bytes())),
            Error::Truncated
        );
        assert!(matches!(
            first_error(&patched(idb + 4, &(len + 8).to_ne_bytes())),
            Error::Malformed(_)
        ));
        // Captured length beyond the block, and beyond the original length.
        assert_eq!(
            first_error(&patched(epb + 20, &1000u32.to_ne_bytes())),
            Error::Truncated
        );
        assert!(matches!(
            first_error(&patched(epb + 24, &1u32.to_ne_bytes())),
            Error::Malformed(_)
        ));
        // An undescribed interface.
        assert!(matches!(
            first_error(&patched(epb + 8, &3u32.to_ne_bytes())),
            Error::Malformed(_)
        ));
        // The first packet's comment option claims more than the block.
        let comment_len = epb + 8 + 20 + 60 + 8 + 2;
        assert_eq!(
            u16::from_ne_bytes([data[comment_len], data[comment_len + 1]]),
            5
        );
        assert_eq!(
            first_error(&patched(comment_len, &500u16.to_ne_bytes())),
            Error::Truncated
        );
        // Comment not UTF-8.
        assert!(matches!(
            first_error(&patched(comment_len + 2, &[0xff])),
            Error::Malformed(_)
        ));
        // An if_tsresol of two bytes.
        let tsresol = idb + 8 + 8 + 4 + 12 + 2;
        assert_eq!(u16::from_ne_bytes([data[tsresol], data[tsresol + 1]]), 1);
        assert!(matches!(
            first_error(&patched(tsresol, &2u16.to_ne_bytes())),
            Error::Malformed(_)
        ));
        // Nothing more after an error.
        let bad = patched(epb + 8, &3u32.to_ne_bytes());
        let mut it = super::blocks(&bad);
        assert!(it.by_ref().take(4).all(|b| b.is_ok()));
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn a_lying_block_length_allocates_nothing_big() {
        let (data, _) = sample();
        let ends = block_ends(&data);
        let mut short = data[..ends[0] + 12].to_vec();
        short[ends[0] + 4..ends[0] + 8].copy_from_slice(&((16u32 << 20) - 4).to_ne_bytes());
        let mut reader = PcapngReader::new(&short[..]);
        assert!(matches!(
            reader.next_block(),
            Ok(Some(Block::SectionHeader(_)))
        ));
        assert!(matches!(
            reader.next_block(),
            Err(ReadError::Format(Error::Truncated))
        ));
        assert!(
            reader.block.capacity() <= 4 * short.len(),
            "{}",
            reader.block.capacity()
        );
        assert!(reader.next_block().unwrap().is_none());
    }

    #[test]
    fn a_second_section_starts_over() {
        let (mut data, expected) = sample();
        let (more, _) = sample();
        data.extend_from_slice(&more);
        let (interfaces, packets) = read_all(&data).unwrap();
        assert_eq!(interfaces.len(), 3, "ids restart in each section");
        assert_eq!(packets.len(), 2 * expected.len());
        // Ids are checked per section: the second one has only its own.
        let mut big = big_endian_section();
        big.extend_from_slice(&more);
        assert_eq!(read_all(&big).unwrap().1.len(), 3 + expected.len());
    }
}
