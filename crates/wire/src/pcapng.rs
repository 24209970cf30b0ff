//! A pcapng writer (draft-ietf-opsawg-pcapng): one section header, an
//! interface description per interface with nanosecond timestamps, and an
//! enhanced packet block per packet with an optional comment and an optional
//! direction (the `epb_flags` option).
//!
//! Blocks are written in host byte order, as the format allows: the
//! byte-order magic in the section header tells readers which order it is.

use std::io::{self, Write};

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
        let id = u32::try_from(self.interfaces.len())
            .map_err(|_| invalid("too many pcapng interfaces"))?;
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&link.code().to_ne_bytes());
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
}
