//! The `virtio_net_hdr` in front of each frame of a link whose kernel side
//! leaves work to "hardware" (an AF_PACKET socket with `PACKET_VNET_HDR`,
//! [`super::packet`]), and that work done in software on receive.
//!
//! * [`VnetHeaderRepr`] is the header's meaning, parsed and emitted in the
//!   style of the `wire` crate's `Repr`s (virtio 1.2 §5.1.6 "Device
//!   Operation", `struct virtio_net_hdr`).
//! * [`accept`] reads one received (header, frame) pair: a frame whose
//!   transport checksum the sender left partial (`CHECKSUM_PARTIAL`, the
//!   default for a kernel sending over veth) gets it completed
//!   ([`complete_checksum`]), as a NIC would have done; a GSO super-frame
//!   gets a [`Segmenter`].
//! * [`Segmenter`] cuts a GSO super-frame (TCP or UDP over IPv4 or IPv6,
//!   from a kernel that left segmentation to "hardware", or what GRO
//!   merged on a real NIC) into the frames that would have crossed the
//!   wire, as the kernel's software GSO (`skb_gso_segment`) does.
//!
//! Everything here is byte work over frames that come from the kernel and,
//! through GRO, from the network: it never panics, never trusts a field
//! and never allocates. The fuzz target `vnet_frame` (crates/stack/fuzz)
//! checks that, and that every segment it makes carries correct checksums.

use core::net::IpAddr;

use wire::ip::IpProtocol;
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::tcp::{TcpFlags, TcpPacket};
use wire::udp::UdpPacket;
use wire::{Error, Result};

/// Bytes of `struct virtio_net_hdr` (the legacy layout without
/// `num_buffers`, which is what packet sockets use).
pub const HEADER_LEN: usize = 10;

/// Bits of the header's `flags` (virtio 1.2 §5.1.6).
pub mod flags {
    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the transport checksum at
    /// `csum_start + csum_offset` holds only the pseudo-header sum.
    pub const NEEDS_CSUM: u8 = 1;
    /// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was already verified.
    pub const DATA_VALID: u8 = 2;
}

/// Values of the header's `gso_type` (virtio 1.2 §5.1.6), as on the wire.
pub mod gso_type {
    /// `VIRTIO_NET_HDR_GSO_NONE`: not a GSO frame.
    pub const NONE: u8 = 0;
    /// `VIRTIO_NET_HDR_GSO_TCPV4`: TCP over IPv4 (TSO).
    pub const TCPV4: u8 = 1;
    /// `VIRTIO_NET_HDR_GSO_UDP`: IPv4 UDP fragmentation (UFO), not
    /// segmentation.
    pub const UDP: u8 = 3;
    /// `VIRTIO_NET_HDR_GSO_TCPV6`: TCP over IPv6.
    pub const TCPV6: u8 = 4;
    /// `VIRTIO_NET_HDR_GSO_UDP_L4`: UDP segmentation (USO), either family.
    pub const UDP_L4: u8 = 5;
    /// `VIRTIO_NET_HDR_GSO_ECN`: a bit on top of the type, saying the TCP
    /// super-frame has CWR set (on its first segment only).
    pub const ECN: u8 = 0x80;
}

/// What kind of GSO frame a header announces (its `gso_type` without the
/// ECN bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Gso {
    /// An ordinary frame.
    #[default]
    None,
    TcpV4,
    TcpV6,
    /// UDP segmentation, IPv4 or IPv6.
    UdpL4,
    /// Anything else (UFO among them): not cut here.
    Unknown(u8),
}

impl From<u8> for Gso {
    fn from(value: u8) -> Self {
        match value {
            gso_type::NONE => Self::None,
            gso_type::TCPV4 => Self::TcpV4,
            gso_type::TCPV6 => Self::TcpV6,
            gso_type::UDP_L4 => Self::UdpL4,
            other => Self::Unknown(other),
        }
    }
}

impl From<Gso> for u8 {
    fn from(value: Gso) -> Self {
        match value {
            Gso::None => gso_type::NONE,
            Gso::TcpV4 => gso_type::TCPV4,
            Gso::TcpV6 => gso_type::TCPV6,
            Gso::UdpL4 => gso_type::UDP_L4,
            Gso::Unknown(other) => other,
        }
    }
}

/// The meaning of a `virtio_net_hdr`:
///
/// ```text
/// struct virtio_net_hdr { u8 flags; u8 gso_type; u16 hdr_len;
///                         u16 gso_size; u16 csum_start; u16 csum_offset; }
/// ```
///
/// Its 16-bit fields are in the host's byte order: packet sockets use the
/// legacy header, whose fields are in the guest's native order (virtio 1.2
/// §5.1.6.1 "Legacy Interface: Device Operation"; the kernel's `vio_le()`
/// is little-endian only on little-endian hosts). Offsets count from the
/// start of the Ethernet frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VnetHeaderRepr {
    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum is left to the receiver.
    pub needs_csum: bool,
    /// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was verified.
    pub data_valid: bool,
    /// The GSO type, ECN bit aside.
    pub gso: Gso,
    /// The ECN bit of `gso_type`.
    pub gso_ecn: bool,
    /// Bytes of headers (Ethernet, IP, transport) of a GSO frame; a hint
    /// only, never trusted here.
    pub hdr_len: u16,
    /// Payload bytes per segment of a GSO frame (the MSS for TCP).
    pub gso_size: u16,
    /// Where the checksummed part starts (the transport header).
    pub csum_start: u16,
    /// Where, from `csum_start`, the checksum field is.
    pub csum_offset: u16,
}

impl VnetHeaderRepr {
    /// Reads the header at the start of `bytes` (which may go on with the
    /// frame). Unknown flag bits are ignored.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let header = bytes.get(..HEADER_LEN).ok_or(Error::Truncated)?;
        let field = |at: usize| u16::from_ne_bytes([header[at], header[at + 1]]);
        Ok(Self {
            needs_csum: header[0] & flags::NEEDS_CSUM != 0,
            data_valid: header[0] & flags::DATA_VALID != 0,
            gso: Gso::from(header[1] & !gso_type::ECN),
            gso_ecn: header[1] & gso_type::ECN != 0,
            hdr_len: field(2),
            gso_size: field(4),
            csum_start: field(6),
            csum_offset: field(8),
        })
    }

    /// Bytes the header takes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `bytes`.
    pub fn emit(&self, bytes: &mut [u8]) -> Result<()> {
        let header = bytes.get_mut(..HEADER_LEN).ok_or(Error::Truncated)?;
        let mut flag_bits = 0;
        if self.needs_csum {
            flag_bits |= flags::NEEDS_CSUM;
        }
        if self.data_valid {
            flag_bits |= flags::DATA_VALID;
        }
        header[0] = flag_bits;
        header[1] = u8::from(self.gso) | if self.gso_ecn { gso_type::ECN } else { 0 };
        for (at, value) in [
            (2, self.hdr_len),
            (4, self.gso_size),
            (6, self.csum_start),
            (8, self.csum_offset),
        ] {
            header[at..at + 2].copy_from_slice(&value.to_ne_bytes());
        }
        Ok(())
    }
}

/// What a received (header, frame) pair is, after [`accept`].
#[derive(Debug)]
pub enum Accepted<'a> {
    /// An ordinary frame, ready for the stack: these bytes (the Ethernet
    /// frame), whose transport checksum was completed here if
    /// `checksum_completed`.
    Frame {
        frame: &'a [u8],
        checksum_completed: bool,
    },
    /// A GSO super-frame, to be cut with this segmenter (over the bytes
    /// after the header).
    Gso(Segmenter),
    /// A GSO super-frame that is not cut: segmentation is off, or a kind
    /// or layout the segmenter does not handle (why).
    GsoRefused(Error),
    /// An impossible header: shorter than [`HEADER_LEN`], or checksum
    /// offsets outside the frame.
    Malformed,
}

/// Reads one received `packet` (a `virtio_net_hdr`, then the Ethernet
/// frame), as the receive side of a virtio device would (virtio 1.2
/// §5.1.6.4 "Processing of Incoming Packets"): a partial checksum is
/// completed in place; a GSO frame is handed to a [`Segmenter`] when
/// `segment_gso` says so, else refused.
pub fn accept(packet: &mut [u8], segment_gso: bool) -> Accepted<'_> {
    let Ok(header) = VnetHeaderRepr::parse(packet) else {
        return Accepted::Malformed;
    };
    let frame = &mut packet[HEADER_LEN..];
    if header.gso != Gso::None {
        if !segment_gso {
            return Accepted::GsoRefused(Error::Unsupported("GSO segmentation is off"));
        }
        return match Segmenter::new(frame, &header) {
            Ok(segmenter) => Accepted::Gso(segmenter),
            Err(error) => Accepted::GsoRefused(error),
        };
    }
    if header.needs_csum {
        let (start, offset) = (header.csum_start.into(), header.csum_offset.into());
        if !complete_checksum(frame, start, offset) {
            return Accepted::Malformed;
        }
    }
    Accepted::Frame {
        frame,
        checksum_completed: header.needs_csum,
    }
}

/// Finishes a `CHECKSUM_PARTIAL` transport checksum: the field at `start +
/// offset` holds the pseudo-header sum, so the checksum of everything from
/// `start` on is the field's new value (virtio 1.2 §5.1.6.2: "the checksum
/// on the packet is incomplete"). As the kernel's `skb_checksum_help`
/// does, a zero result is stored as 0xffff (the same in ones' complement,
/// and what UDP needs, RFC 768). False, with `frame` untouched, when the
/// field lies outside the frame.
pub fn complete_checksum(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let Some(field) = start.checked_add(offset) else {
        return false;
    };
    if field.checked_add(2).is_none_or(|end| end > frame.len()) {
        return false;
    }
    let sum = match wire::checksum::checksum(&frame[start..]) {
        0 => 0xffff,
        sum => sum,
    };
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    true
}

/// A segment that does not fit the caller's buffer (it is skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

/// Cuts a GSO super-frame (one TCP or UDP packet of many MSS behind one set
/// of headers) into the frames that would have crossed the wire, as the
/// kernel's software segmentation (`skb_gso_segment`) does: every segment
/// gets a copy of the headers with its own IP length (and IPv4
/// identification and header checksum), TCP sequence number and flags
/// (FIN and PSH on the last only, CWR on the first only) or UDP length, and
/// a complete transport checksum.
///
/// It keeps no borrow of the frame (so the buffer the frame is in can be
/// used meanwhile): each [`next_into`](Self::next_into) is given the same
/// frame again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segmenter {
    /// Length of the Ethernet frame.
    len: usize,
    /// Offsets of the IP header and the transport header, and the length
    /// of all headers.
    l3: usize,
    l4: usize,
    headers: usize,
    v6: bool,
    tcp: bool,
    /// Payload bytes per segment.
    gso_size: usize,
    /// Payload bytes handed out so far, and segments.
    offset: usize,
    index: u16,
}

/// Where one segment's payload comes from in the super-frame.
#[derive(Debug, Clone, Copy)]
struct Cut {
    /// Offset of its payload in the super-frame's payload, and length.
    at: usize,
    len: usize,
    /// Its number (from 0) and whether it is the first or the last.
    index: u16,
    first: bool,
    last: bool,
}

impl Segmenter {
    /// Checks the GSO `frame` (Ethernet header on) that `header` announces
    /// and sets up its segmentation, or says why it cannot be cut: a VLAN
    /// tag, another GSO type, headers that do not add up.
    pub fn new(frame: &[u8], header: &VnetHeaderRepr) -> Result<Self> {
        let l3 = wire::ethernet::HEADER_LEN;
        let ethertype = u16::from_be_bytes([
            *frame.get(12).ok_or(Error::Truncated)?,
            *frame.get(13).ok_or(Error::Truncated)?,
        ]);
        let v6 = match ethertype {
            0x0800 => false,
            0x86dd => true,
            _ => return Err(Error::Unsupported("GSO frame neither IPv4 nor IPv6")),
        };
        let tcp = match header.gso {
            Gso::TcpV4 if !v6 => true,
            Gso::TcpV6 if v6 => true,
            Gso::UdpL4 => false,
            _ => return Err(Error::Unsupported("GSO type")),
        };
        let protocol = if tcp {
            IpProtocol::Tcp
        } else {
            IpProtocol::Udp
        };
        let csum_start = usize::from(header.csum_start);
        let l4 = if v6 {
            ipv6_transport_offset(frame, l3, protocol, csum_start)?
        } else {
            ipv4_transport_offset(frame, l3, protocol)?
        };
        let transport = if tcp {
            let offset = *frame.get(l4 + 12).ok_or(Error::Truncated)?;
            usize::from(offset >> 4) * 4
        } else {
            wire::udp::HEADER_LEN
        };
        let headers = l4 + transport.max(wire::udp::HEADER_LEN);
        let gso_size = usize::from(header.gso_size);
        if tcp && transport < wire::tcp::HEADER_LEN {
            return Err(Error::Malformed("TCP data offset below 5"));
        }
        if gso_size == 0 {
            return Err(Error::Malformed("GSO size 0"));
        }
        if headers >= frame.len() {
            return Err(Error::Truncated);
        }
        Ok(Self {
            len: frame.len(),
            l3,
            l4,
            headers,
            v6,
            tcp,
            gso_size,
            offset: 0,
            index: 0,
        })
    }

    /// Bytes of headers every segment starts with.
    pub fn header_len(&self) -> usize {
        self.headers
    }

    /// The longest segment it makes: the headers and `gso_size` bytes of
    /// payload (or all of it, if less).
    pub fn max_segment_len(&self) -> usize {
        self.headers + self.gso_size.min(self.len - self.headers)
    }

    /// Writes the next segment of `frame` (the frame given to
    /// [`new`](Self::new)) into `buf`: its length, [`TooLong`] when it does
    /// not fit (that segment is skipped), `None` when all are out (or
    /// `frame` is not as long as it was).
    pub fn next_into(
        &mut self,
        frame: &[u8],
        buf: &mut [u8],
    ) -> Option<core::result::Result<usize, TooLong>> {
        let frame = frame.get(..self.len)?;
        let cut = self.next_cut()?;
        let out_len = self.headers + cut.len;
        let Some(out) = buf.get_mut(..out_len) else {
            return Some(Err(TooLong));
        };
        out[..self.headers].copy_from_slice(&frame[..self.headers]);
        out[self.headers..].copy_from_slice(&frame[self.headers + cut.at..][..cut.len]);
        self.fix_headers(out, cut);
        Some(Ok(out_len))
    }

    /// The next segment's share of the payload, if any is left.
    fn next_cut(&mut self) -> Option<Cut> {
        let payload = self.len - self.headers;
        if self.offset >= payload {
            return None;
        }
        let len = self.gso_size.min(payload - self.offset);
        let cut = Cut {
            at: self.offset,
            len,
            index: self.index,
            first: self.offset == 0,
            last: self.offset + len == payload,
        };
        self.offset += len;
        self.index = self.index.wrapping_add(1);
        Some(cut)
    }

    /// Makes the copied headers of `out` (one whole segment) those of `cut`.
    fn fix_headers(&self, out: &mut [u8], cut: Cut) {
        let (src, dst) = if self.v6 {
            self.fix_ipv6(out)
        } else {
            self.fix_ipv4(out, cut.index)
        };
        let transport = &mut out[self.l4..];
        let transport_len = transport.len();
        if self.tcp {
            let mut packet = TcpPacket::new_unchecked(transport);
            fix_tcp(&mut packet, cut);
            packet.set_checksum(0);
            let checksum = transport_checksum(&src, &dst, IpProtocol::Tcp, packet.segment());
            packet.set_checksum(checksum);
        } else {
            let mut packet = UdpPacket::new_unchecked(transport);
            // RFC 768: the length of header and data.
            packet.set_len(transport_len as u16);
            packet.set_checksum(0);
            // RFC 768: a computed zero is sent as all ones (zero would mean
            // "no checksum", which IPv6 forbids, RFC 8200 §8.1).
            let checksum = match transport_checksum(&src, &dst, IpProtocol::Udp, packet.datagram())
            {
                0 => 0xffff,
                checksum => checksum,
            };
            packet.set_checksum(checksum);
        }
    }

    /// The IPv6 payload length of a segment (RFC 8200 §3); its addresses.
    fn fix_ipv6(&self, out: &mut [u8]) -> (IpAddr, IpAddr) {
        let payload_len = out.len() - self.l3 - wire::ipv6::HEADER_LEN;
        let mut packet = Ipv6Packet::new_unchecked(&mut out[self.l3..]);
        packet.set_payload_len(payload_len as u16);
        (packet.src_addr().into(), packet.dst_addr().into())
    }

    /// The IPv4 total length, identification (the super-frame's plus the
    /// segment's number, as the kernel's `inet_gso_segment` does) and
    /// header checksum of a segment (RFC 791 §3.1); its addresses.
    fn fix_ipv4(&self, out: &mut [u8], index: u16) -> (IpAddr, IpAddr) {
        let total_len = out.len() - self.l3;
        let mut packet = Ipv4Packet::new_unchecked(&mut out[self.l3..]);
        packet.set_total_len(total_len as u16);
        packet.set_ident(packet.ident().wrapping_add(index));
        packet.fill_checksum();
        (packet.src_addr().into(), packet.dst_addr().into())
    }
}

/// The sequence number and flags of one TCP segment: its payload starts
/// `cut.at` bytes after the super-frame's, so its sequence number is that
/// much further (RFC 9293 §3.4); FIN and PSH belong to the end of the data
/// (RFC 9293 §3.1, §3.9.1), CWR to the first segment after a congestion
/// window reduction (RFC 3168 §6.1.2), as the kernel's `tcp_gso_segment`
/// keeps them.
fn fix_tcp(packet: &mut TcpPacket<&mut [u8]>, cut: Cut) {
    let seq = packet.seq_number().wrapping_add(cut.at as u32);
    packet.set_seq_number(seq);
    let mut flags = packet.flags();
    if !cut.last {
        flags.remove(TcpFlags::FIN.union(TcpFlags::PSH));
    }
    if !cut.first {
        flags.remove(TcpFlags::CWR);
    }
    packet.set_flags(flags);
}

/// The transport checksum of `segment` (header and payload, checksum field
/// zero) under the pseudo-header of `src`, `dst` and `protocol` (RFC 9293
/// §3.1, RFC 768, RFC 8200 §8.1).
fn transport_checksum(src: &IpAddr, dst: &IpAddr, protocol: IpProtocol, segment: &[u8]) -> u16 {
    let pseudo = wire::ip::pseudo_header(src, dst, protocol, segment.len() as u32);
    wire::checksum::finish(wire::checksum::add(pseudo, wire::checksum::sum(segment)))
}

/// Offset in `frame` of the transport header of the IPv4 packet at `l3`,
/// which must carry `protocol`.
fn ipv4_transport_offset(frame: &[u8], l3: usize, protocol: IpProtocol) -> Result<usize> {
    let ihl = usize::from(*frame.get(l3).ok_or(Error::Truncated)? & 0x0f) * 4;
    if ihl < wire::ipv4::HEADER_LEN {
        return Err(Error::Malformed("IPv4 IHL below 5"));
    }
    if IpProtocol::from(*frame.get(l3 + 9).ok_or(Error::Truncated)?) != protocol {
        return Err(Error::Malformed("IPv4 protocol not that of the GSO type"));
    }
    Ok(l3 + ihl)
}

/// Offset in `frame` of the transport header of the IPv6 packet at `l3`,
/// which must carry `protocol`: where the checksum starts (after any
/// extension headers) when the sender left the checksum to us; a frame GRO
/// merged has no checksum start, and then (as right after the fixed header
/// always) the next header must say so.
fn ipv6_transport_offset(
    frame: &[u8],
    l3: usize,
    protocol: IpProtocol,
    csum_start: usize,
) -> Result<usize> {
    let fixed_end = l3 + wire::ipv6::HEADER_LEN;
    let l4 = if csum_start > l3 {
        csum_start
    } else {
        fixed_end
    };
    if l4 < fixed_end {
        return Err(Error::Malformed("checksum start inside the IPv6 header"));
    }
    let next_header = IpProtocol::from(*frame.get(l3 + 6).ok_or(Error::Truncated)?);
    if l4 == fixed_end && next_header != protocol {
        return Err(Error::Malformed(
            "IPv6 next header not that of the GSO type",
        ));
    }
    Ok(l4)
}
