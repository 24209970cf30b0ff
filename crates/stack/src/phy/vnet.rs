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
use wire::ipv6_ext_header::Ipv6ExtHeader;
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
    /// tag, another GSO type, an IP fragment, an IPv6 routing header,
    /// headers that do not add up (a checksum start elsewhere than the
    /// transport header the IP headers lead to), segments too long for
    /// the 16-bit IP and UDP length fields.
    pub fn new(frame: &[u8], header: &VnetHeaderRepr) -> Result<Self> {
        Self::with_len(frame, frame.len(), header)
    }

    /// [`new`](Self::new) for a super-frame held as scatter-gather `parts`
    /// (concatenated in order), as the stack's own packets are: its
    /// headers must all be in the first part (the head buffer every layer
    /// prepended its header into), the payload may be anywhere after.
    /// Cut it with [`next_from_parts`](Self::next_from_parts).
    pub fn for_parts(parts: &[&[u8]], header: &VnetHeaderRepr) -> Result<Self> {
        let len = parts
            .iter()
            .fold(0usize, |sum, part| sum.saturating_add(part.len()));
        let head = parts.first().copied().unwrap_or_default();
        Self::with_len(head, len, header)
    }

    /// Sets up the cutting of a super-frame of `len` bytes whose headers
    /// are at the start of `head`.
    fn with_len(head: &[u8], len: usize, header: &VnetHeaderRepr) -> Result<Self> {
        let frame = head;
        let l3 = wire::ethernet::HEADER_LEN;
        let v6 = is_ipv6(frame)?;
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
        let l4 = if v6 {
            ipv6_transport_offset(frame, l3, protocol)?
        } else {
            ipv4_transport_offset(frame, l3, protocol)?
        };
        // A frame GRO merged carries no checksum start; one the sender left
        // the checksum of does, and it must be the transport header.
        if header.csum_start != 0 && usize::from(header.csum_start) != l4 {
            return Err(Error::Malformed(
                "checksum start not at the transport header",
            ));
        }
        let headers = l4 + transport_header_len(frame, l4, tcp)?;
        if headers >= len || headers > frame.len() {
            return Err(Error::Truncated);
        }
        let gso_size = usize::from(header.gso_size);
        if gso_size == 0 {
            return Err(Error::Malformed("GSO size 0"));
        }
        let segmenter = Self {
            len,
            l3,
            l4,
            headers,
            v6,
            tcp,
            gso_size,
            offset: 0,
            index: 0,
        };
        segmenter.check_length_fields()?;
        Ok(segmenter)
    }

    /// Whether the longest segment's lengths fit their 16-bit fields: the
    /// IPv4 total length (RFC 791 §3.1), the IPv6 payload length (RFC 8200
    /// §3; jumbograms, RFC 2675, are not made here) and the UDP length
    /// (RFC 768), which is no longer than either.
    fn check_length_fields(&self) -> Result<()> {
        let fixed_header = if self.v6 { wire::ipv6::HEADER_LEN } else { 0 };
        let ip_len = self.max_segment_len() - self.l3 - fixed_header;
        if ip_len > usize::from(u16::MAX) {
            return Err(Error::Unsupported(
                "segments too long for the IP length field",
            ));
        }
        Ok(())
    }

    /// Offset of the transport header in the frame.
    pub fn transport_offset(&self) -> usize {
        self.l4
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
        self.next_from_parts(&[frame], buf)
    }

    /// [`next_into`](Self::next_into) for the super-frame as the `parts`
    /// given to [`for_parts`](Self::for_parts): the headers and this
    /// segment's payload are gathered from them into `buf`.
    pub fn next_from_parts(
        &mut self,
        parts: &[&[u8]],
        buf: &mut [u8],
    ) -> Option<core::result::Result<usize, TooLong>> {
        let len = parts
            .iter()
            .fold(0usize, |sum, part| sum.saturating_add(part.len()));
        if len < self.len {
            return None;
        }
        let cut = self.next_cut()?;
        let out_len = self.headers + cut.len;
        let Some(out) = buf.get_mut(..out_len) else {
            return Some(Err(TooLong));
        };
        gather(parts, 0, &mut out[..self.headers]);
        gather(parts, self.headers + cut.at, &mut out[self.headers..]);
        let (headers, payload) = out.split_at_mut(self.headers);
        let payload_sum = wire::checksum::sum(payload);
        self.fix_headers(headers, out_len, cut, payload_sum);
        Some(Ok(out_len))
    }

    /// Cuts the next segment of the super-frame in `parts` (as given to
    /// [`for_parts`](Self::for_parts)) without copying its payload: writes
    /// the segment's headers, made its own (checksum over its payload in
    /// `parts` included), into `header`, and returns their length and
    /// where the segment's payload lies in the super-frame, for a link
    /// that gathers the frame from parts (scatter-gather, as a NIC's TSO
    /// engine reads the payload where it is). [`TooLong`] when the headers
    /// do not fit `header` (that segment is skipped), `None` when all are
    /// out.
    pub fn next_header_from_parts(
        &mut self,
        parts: &[&[u8]],
        header: &mut [u8],
    ) -> Option<core::result::Result<(usize, core::ops::Range<usize>), TooLong>> {
        let len = parts
            .iter()
            .fold(0usize, |sum, part| sum.saturating_add(part.len()));
        if len < self.len {
            return None;
        }
        let cut = self.next_cut()?;
        let Some(out) = header.get_mut(..self.headers) else {
            return Some(Err(TooLong));
        };
        gather(parts, 0, out);
        let payload = self.headers + cut.at..self.headers + cut.at + cut.len;
        let payload_sum = sum_of(parts, payload.clone());
        self.fix_headers(out, self.headers + cut.len, cut, payload_sum);
        Some(Ok((self.headers, payload)))
    }

    /// How many segments are left to cut.
    pub fn segments_left(&self) -> usize {
        let payload = self.len - self.headers;
        payload.saturating_sub(self.offset).div_ceil(self.gso_size)
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

    /// Makes the copied `headers` those of `cut`, a segment of `seg_len`
    /// bytes (headers and payload) whose payload sums to `payload_sum`.
    fn fix_headers(&self, headers: &mut [u8], seg_len: usize, cut: Cut, payload_sum: u16) {
        let (src, dst) = if self.v6 {
            self.fix_ipv6(headers, seg_len)
        } else {
            self.fix_ipv4(headers, seg_len, cut.index)
        };
        let transport_len = seg_len - self.l4;
        let transport = &mut headers[self.l4..];
        if self.tcp {
            fix_tcp(transport, transport_len, payload_sum, cut, &src, &dst);
        } else {
            fix_udp(transport, transport_len, payload_sum, &src, &dst);
        }
    }

    /// The IPv6 payload length of a segment (RFC 8200 §3; it fits 16 bits:
    /// `new` checked the longest segment's); its addresses.
    fn fix_ipv6(&self, headers: &mut [u8], seg_len: usize) -> (IpAddr, IpAddr) {
        let payload_len = seg_len - self.l3 - wire::ipv6::HEADER_LEN;
        let mut packet = Ipv6Packet::new_unchecked(&mut headers[self.l3..]);
        packet.set_payload_len(payload_len as u16);
        (packet.src_addr().into(), packet.dst_addr().into())
    }

    /// The IPv4 total length, identification (the super-frame's plus the
    /// segment's number, as the kernel's `inet_gso_segment` does) and
    /// header checksum of a segment (RFC 791 §3.1; the length fits 16
    /// bits: `new` checked the longest segment's); its addresses.
    fn fix_ipv4(&self, headers: &mut [u8], seg_len: usize, index: u16) -> (IpAddr, IpAddr) {
        let total_len = seg_len - self.l3;
        let mut packet = Ipv4Packet::new_unchecked(&mut headers[self.l3..]);
        packet.set_total_len(total_len as u16);
        packet.set_ident(packet.ident().wrapping_add(index));
        packet.fill_checksum();
        (packet.src_addr().into(), packet.dst_addr().into())
    }
}

/// Copies `out.len()` bytes of the concatenation of `parts`, from
/// `offset` on, into `out` (the caller checked they are there).
fn gather(parts: &[&[u8]], offset: usize, out: &mut [u8]) {
    let mut filled = 0;
    for piece in crate::buffer::pieces(parts, offset..offset + out.len()) {
        out[filled..filled + piece.len()].copy_from_slice(piece);
        filled += piece.len();
    }
}

/// The sequence number, flags and checksum of one TCP segment of
/// `segment_len` bytes whose `header` this is and whose payload sums to
/// `payload_sum`: its payload starts `cut.at` bytes after the super-frame's,
/// so its sequence number is that much further (RFC 9293 §3.4); FIN and PSH
/// belong to the end of the data (RFC 9293 §3.1, §3.9.1), CWR to the first
/// segment after a congestion window reduction (RFC 3168 §6.1.2), as the
/// kernel's `tcp_gso_segment` keeps them.
fn fix_tcp(
    header: &mut [u8],
    segment_len: usize,
    payload_sum: u16,
    cut: Cut,
    src: &IpAddr,
    dst: &IpAddr,
) {
    let mut packet = TcpPacket::new_unchecked(&mut header[..]);
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
    packet.set_checksum(0);
    let checksum = transport_checksum(src, dst, IpProtocol::Tcp, header, segment_len, payload_sum);
    TcpPacket::new_unchecked(header).set_checksum(checksum);
}

/// The length and checksum of one UDP datagram, of `datagram_len` bytes,
/// whose `header` this is and whose payload sums to `payload_sum`.
fn fix_udp(header: &mut [u8], datagram_len: usize, payload_sum: u16, src: &IpAddr, dst: &IpAddr) {
    let mut packet = UdpPacket::new_unchecked(&mut header[..]);
    // RFC 768: the length of header and data (it fits 16 bits: the
    // segmenter checked its longest segment's lengths).
    packet.set_len(datagram_len as u16);
    packet.set_checksum(0);
    // RFC 768: a computed zero is sent as all ones (zero would mean "no
    // checksum", which IPv6 forbids, RFC 8200 §8.1).
    let checksum =
        match transport_checksum(src, dst, IpProtocol::Udp, header, datagram_len, payload_sum) {
            0 => 0xffff,
            checksum => checksum,
        };
    UdpPacket::new_unchecked(header).set_checksum(checksum);
}

/// The transport checksum of a segment of `len` bytes: its `header`
/// (checksum field zero; a whole number of 16-bit words, so the payload's
/// sum joins it unswapped) and a payload summing to `payload_sum`, under
/// the pseudo-header of `src`, `dst` and `protocol` (RFC 9293 §3.1, RFC
/// 768, RFC 8200 §8.1).
fn transport_checksum(
    src: &IpAddr,
    dst: &IpAddr,
    protocol: IpProtocol,
    header: &[u8],
    len: usize,
    payload_sum: u16,
) -> u16 {
    let pseudo = wire::ip::pseudo_header(src, dst, protocol, len as u32);
    wire::checksum::finish(wire::checksum::combine(&[
        pseudo,
        wire::checksum::sum(header),
        payload_sum,
    ]))
}

/// The ones'-complement sum of the bytes `range` of the concatenation of
/// `parts` (RFC 1071 §2(B): a piece that starts at an odd offset adds its
/// sum byte-swapped).
fn sum_of(parts: &[&[u8]], range: core::ops::Range<usize>) -> u16 {
    let (mut total, mut odd) = (0u16, false);
    for piece in crate::buffer::pieces(parts, range) {
        let sum = wire::checksum::sum(piece);
        total = wire::checksum::add(total, if odd { sum.swap_bytes() } else { sum });
        odd ^= piece.len() % 2 == 1;
    }
    total
}

/// Whether the frame's EtherType is IPv6 (or IPv4); anything else (a VLAN
/// tag among them) is not cut.
fn is_ipv6(frame: &[u8]) -> Result<bool> {
    let ethertype = frame.get(12..14).ok_or(Error::Truncated)?;
    match u16::from_be_bytes([ethertype[0], ethertype[1]]) {
        0x0800 => Ok(false),
        0x86dd => Ok(true),
        _ => Err(Error::Unsupported("GSO frame neither IPv4 nor IPv6")),
    }
}

/// Bytes of the transport header at `l4`: a TCP header's data offset
/// (RFC 9293 §3.1), or a UDP header's 8.
fn transport_header_len(frame: &[u8], l4: usize, tcp: bool) -> Result<usize> {
    if !tcp {
        return Ok(wire::udp::HEADER_LEN);
    }
    let offset = *frame.get(l4 + 12).ok_or(Error::Truncated)?;
    let len = usize::from(offset >> 4) * 4;
    if len < wire::tcp::HEADER_LEN {
        return Err(Error::Malformed("TCP data offset below 5"));
    }
    Ok(len)
}

/// Offset in `frame` of the transport header of the IPv4 packet at `l3`,
/// which must be version 4, carry `protocol` and not be a fragment (a
/// fragment holds only part of a transport packet, RFC 791 §2.3, and
/// cannot be cut into whole ones).
fn ipv4_transport_offset(frame: &[u8], l3: usize, protocol: IpProtocol) -> Result<usize> {
    let header = frame
        .get(l3..l3 + wire::ipv4::HEADER_LEN)
        .ok_or(Error::Truncated)?;
    let packet = Ipv4Packet::new_unchecked(header);
    if packet.version() != 4 {
        return Err(Error::Malformed("IP version not 4"));
    }
    if packet.header_len() < wire::ipv4::HEADER_LEN {
        return Err(Error::Malformed("IPv4 IHL below 5"));
    }
    if packet.more_frags() || packet.frag_offset() != 0 {
        return Err(Error::Unsupported("IPv4 fragment"));
    }
    if packet.protocol() != protocol {
        return Err(Error::Malformed("IPv4 protocol not that of the GSO type"));
    }
    Ok(l3 + packet.header_len())
}

/// Offset in `frame` of the transport header of the IPv6 packet at `l3`,
/// which must be version 6 and carry `protocol`, found as a receiver finds
/// it: after the extension headers (RFC 8200 §4), of which it steps over
/// hop-by-hop options (first only, §4.1) and destination options (§4.6).
/// It refuses a routing header (§4.4: the pseudo-header would take the
/// final destination, §8.1, which is not the one in the header) and a
/// fragment header (§4.5: a fragment cannot be cut into whole packets).
fn ipv6_transport_offset(frame: &[u8], l3: usize, protocol: IpProtocol) -> Result<usize> {
    let header = frame
        .get(l3..l3 + wire::ipv6::HEADER_LEN)
        .ok_or(Error::Truncated)?;
    let packet = Ipv6Packet::new_unchecked(header);
    if packet.version() != wire::ipv6::VERSION {
        return Err(Error::Malformed("IP version not 6"));
    }
    let mut next_header = packet.next_header();
    let mut at = l3 + wire::ipv6::HEADER_LEN;
    for index in 0..=wire::ipv6_ext_header::MAX_CHAIN_HEADERS {
        match next_header {
            found if found == protocol => return Ok(at),
            IpProtocol::HopByHop if index == 0 => {}
            IpProtocol::Ipv6Opts => {}
            IpProtocol::Ipv6Route => return Err(Error::Unsupported("IPv6 routing header")),
            IpProtocol::Ipv6Frag => return Err(Error::Unsupported("IPv6 fragment")),
            _ => {
                return Err(Error::Malformed(
                    "IPv6 upper layer not that of the GSO type",
                ))
            }
        }
        let rest = frame.get(at..).ok_or(Error::Truncated)?;
        let extension = Ipv6ExtHeader::new_checked(rest)?;
        next_header = extension.next_header();
        at += extension.header_len();
    }
    Err(Error::Malformed("IPv6 extension header chain too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Extension headers for [`super_frame`]: hop-by-hop options (8 bytes),
    /// destination options (16), routing (8, segments left 0), fragment (8,
    /// offset 0, more fragments).
    const HOP_BY_HOP: u8 = 0;
    const DESTINATION: u8 = 60;
    const ROUTING: u8 = 43;
    const FRAGMENT: u8 = 44;

    /// A GSO super-frame as a kernel hands it over (without the
    /// `virtio_net_hdr`): Ethernet; IPv4 (`ipv4_flags` in its flags and
    /// fragment offset word) or IPv6 behind `extensions`; TCP (FIN, PSH,
    /// CWR and ACK set) or UDP; then `payload` bytes.
    fn super_frame(
        v6: bool,
        tcp: bool,
        extensions: &[u8],
        ipv4_flags: u16,
        payload: usize,
    ) -> Vec<u8> {
        let protocol = if tcp { 6 } else { 17 };
        let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        if v6 {
            let first = extensions.first().copied().unwrap_or(protocol);
            frame.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 0, first, 64]);
            let src: core::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
            let dst: core::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
            frame.extend_from_slice(&src.octets());
            frame.extend_from_slice(&dst.octets());
            for (index, &kind) in extensions.iter().enumerate() {
                let next = extensions.get(index + 1).copied().unwrap_or(protocol);
                frame.extend_from_slice(&match kind {
                    DESTINATION => vec![next, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                    ROUTING => vec![next, 0, 4, 0, 0, 0, 0, 0],
                    FRAGMENT => vec![next, 0, 0, 1, 0, 0, 0, 9],
                    _ => vec![next, 0, 0, 0, 0, 0, 0, 0],
                });
            }
        } else {
            frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 0, 0xff, 0xfe]);
            frame.extend_from_slice(&ipv4_flags.to_be_bytes());
            frame.extend_from_slice(&[64, protocol, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
        }
        if tcp {
            frame.extend_from_slice(&[0x30, 0x39, 0, 80, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1]);
            frame.extend_from_slice(&[5 << 4, 0x80 | 0x10 | 0x08 | 0x01, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            frame.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 0, 0, 0]);
        }
        frame.extend((0..payload).map(|i| (i % 251) as u8));
        frame
    }

    /// The `virtio_net_hdr` of a GSO frame.
    fn gso_header(gso: Gso, gso_size: u16, csum_start: u16) -> VnetHeaderRepr {
        VnetHeaderRepr {
            needs_csum: csum_start != 0,
            gso,
            gso_size,
            csum_start,
            csum_offset: if gso == Gso::UdpL4 { 6 } else { 16 },
            ..VnetHeaderRepr::default()
        }
    }

    /// Every segment of `frame`, each checked to be a packet a receiver
    /// takes: IP length and checksums right where its headers lead.
    fn cut(frame: &[u8], header: &VnetHeaderRepr) -> Vec<Vec<u8>> {
        let mut segmenter = Segmenter::new(frame, header).unwrap();
        let mut buf = vec![0u8; 70_000];
        let mut segments = Vec::new();
        while let Some(result) = segmenter.next_into(frame, &mut buf) {
            let segment = buf[..result.unwrap()].to_vec();
            assert_valid(&segment);
            segments.push(segment);
        }
        segments
    }

    /// The segment's IP header is right and its transport checksum
    /// verifies, with the transport header found as a receiver finds it.
    fn assert_valid(segment: &[u8]) {
        let ip = &segment[14..];
        let (src, dst, protocol, transport): (IpAddr, IpAddr, _, _) = if ip[0] >> 4 == 6 {
            let packet = Ipv6Packet::new_checked(ip).unwrap();
            assert_eq!(packet.total_len(), ip.len());
            let end =
                wire::ipv6_ext_header::walk_chain(packet.payload(), packet.next_header()).unwrap();
            let transport = &ip[wire::ipv6::HEADER_LEN + end.offset..];
            let (src, dst) = (packet.src_addr().into(), packet.dst_addr().into());
            (src, dst, end.protocol, transport)
        } else {
            let packet = Ipv4Packet::new_checked(ip).unwrap();
            assert_eq!(usize::from(packet.total_len()), ip.len());
            assert!(packet.verify_checksum());
            let (src, dst) = (packet.src_addr().into(), packet.dst_addr().into());
            (src, dst, packet.protocol(), &ip[packet.header_len()..])
        };
        match protocol {
            IpProtocol::Tcp => {
                let tcp = TcpPacket::new_checked(transport).unwrap();
                assert!(tcp.verify_checksum(&src, &dst), "TCP checksum");
            }
            IpProtocol::Udp => {
                let udp = UdpPacket::new_checked(transport).unwrap();
                assert_eq!(usize::from(udp.len()), transport.len());
                assert!(udp.verify_checksum(&src, &dst), "UDP checksum");
            }
            other => panic!("a segment of {other:?}"),
        }
    }

    #[test]
    fn a_header_round_trips_in_the_hosts_byte_order() {
        let header = VnetHeaderRepr {
            needs_csum: true,
            data_valid: false,
            gso: Gso::TcpV6,
            gso_ecn: true,
            hdr_len: 74,
            gso_size: 1440,
            csum_start: 54,
            csum_offset: 16,
        };
        let mut bytes = [0u8; HEADER_LEN + 1];
        header.emit(&mut bytes).unwrap();
        assert_eq!(
            bytes[..2],
            [flags::NEEDS_CSUM, gso_type::TCPV6 | gso_type::ECN]
        );
        assert_eq!(bytes[4..6], 1440u16.to_ne_bytes());
        assert_eq!(bytes[6..8], 54u16.to_ne_bytes());
        assert_eq!(VnetHeaderRepr::parse(&bytes), Ok(header));
        // Unknown flag bits are ignored; unknown GSO types kept.
        bytes[0] |= 0x04;
        bytes[1] = gso_type::UDP;
        let parsed = VnetHeaderRepr::parse(&bytes).unwrap();
        assert!(parsed.needs_csum);
        assert_eq!(parsed.gso, Gso::Unknown(gso_type::UDP));
        assert_eq!(
            VnetHeaderRepr::parse(&bytes[..HEADER_LEN - 1]),
            Err(Error::Truncated)
        );
        assert_eq!(header.emit(&mut [0u8; 9]), Err(Error::Truncated));
    }

    #[test]
    fn accept_completes_partial_checksums_and_refuses_impossible_ones() {
        // A UDP/IPv4 datagram whose checksum field holds the pseudo-header
        // sum, as a kernel leaves it.
        let mut frame = super_frame(false, false, &[], 0, 4);
        let pseudo =
            wire::checksum::pseudo_header_v4([192, 0, 2, 1].into(), [192, 0, 2, 2].into(), 17, 12);
        frame[40..42].copy_from_slice(&pseudo.to_be_bytes());
        let header = VnetHeaderRepr {
            needs_csum: true,
            csum_start: 34,
            csum_offset: 6,
            ..VnetHeaderRepr::default()
        };
        let mut packet = vec![0u8; HEADER_LEN];
        header.emit(&mut packet).unwrap();
        packet.extend_from_slice(&frame);
        let mut completed = packet.clone();
        match accept(&mut completed, true) {
            Accepted::Frame {
                frame,
                checksum_completed: true,
            } => assert!(wire::checksum::verifies(pseudo, &frame[34..])),
            other => panic!("{other:?}"),
        }
        // Without NEEDS_CSUM the frame is left as it is.
        let mut plain = packet.clone();
        plain[0] = 0;
        assert!(matches!(
            accept(&mut plain, true),
            Accepted::Frame { frame, checksum_completed: false } if frame == &packet[HEADER_LEN..]
        ));
        // A checksum field past the end, or no whole header: malformed.
        let mut outside = packet.clone();
        outside[8..10].copy_from_slice(&11u16.to_ne_bytes());
        assert!(matches!(accept(&mut outside, true), Accepted::Malformed));
        assert!(matches!(
            accept(&mut packet[..9], true),
            Accepted::Malformed
        ));
    }

    #[test]
    fn accept_hands_gso_frames_to_a_segmenter_unless_told_not_to() {
        let mut packet = vec![0u8; HEADER_LEN];
        gso_header(Gso::TcpV4, 500, 34).emit(&mut packet).unwrap();
        packet.extend_from_slice(&super_frame(false, true, &[], 0, 1200));
        let mut copy = packet.clone();
        let Accepted::Gso(mut segmenter) = accept(&mut copy, true) else {
            panic!("not cut");
        };
        assert_eq!(copy, packet, "the frame is left for the segmenter");
        assert_eq!(segmenter.header_len(), 54);
        assert_eq!(segmenter.max_segment_len(), 554);
        let mut buf = [0u8; 600];
        let frame = &packet[HEADER_LEN..];
        let lens: Vec<_> = std::iter::from_fn(|| segmenter.next_into(frame, &mut buf)).collect();
        assert_eq!(lens, [Ok(554), Ok(554), Ok(254)]);
        assert!(matches!(
            accept(&mut packet, false),
            Accepted::GsoRefused(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_partial_checksum_is_completed() {
        // An IPv4 UDP datagram 10.0.0.1:1 -> 10.0.0.2:2, "hi", behind an
        // Ethernet header, its checksum field holding the pseudo-header
        // sum as a kernel leaves it.
        let mut frame = vec![0u8; 14 + 20];
        frame.extend_from_slice(&[0, 1, 0, 2, 0, 10, 0, 0, b'h', b'i']);
        let pseudo =
            wire::checksum::pseudo_header_v4([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 17, 10);
        frame[34 + 6..34 + 8].copy_from_slice(&pseudo.to_be_bytes());
        assert!(complete_checksum(&mut frame, 34, 6));
        assert!(wire::checksum::verifies(pseudo, &frame[34..]));
        // Offsets beyond the frame are refused, never a panic.
        assert!(!complete_checksum(&mut frame, 34, 9));
        assert!(!complete_checksum(&mut frame, usize::MAX, 2));
        assert!(!complete_checksum(&mut frame, 100, 0));
    }

    #[test]
    fn a_tcp_gso_frame_is_cut_into_valid_segments() {
        for (v6, gso, l4) in [(false, Gso::TcpV4, 34), (true, Gso::TcpV6, 54)] {
            let frame = super_frame(v6, true, &[], 0, 2500);
            let segments = cut(&frame, &gso_header(gso, 1000, l4));
            let l4 = usize::from(l4);
            let lens: Vec<usize> = segments.iter().map(|s| s.len() - l4 - 20).collect();
            assert_eq!(lens, [1000, 1000, 500]);
            let payload: Vec<u8> = segments
                .iter()
                .flat_map(|s| s[l4 + 20..].to_vec())
                .collect();
            assert_eq!(payload, frame[l4 + 20..]);
            for (index, segment) in segments.iter().enumerate() {
                let seq = u32::from_be_bytes(segment[l4 + 4..l4 + 8].try_into().unwrap());
                assert_eq!(seq, 0xffff_ff00u32.wrapping_add(1000 * index as u32));
                let flags = segment[l4 + 13];
                assert_eq!(
                    flags & 0x09 != 0,
                    index == 2,
                    "FIN and PSH on the last only"
                );
                assert_eq!(flags & 0x80 != 0, index == 0, "CWR on the first only");
                assert_eq!(flags & 0x10, 0x10, "ACK on all");
                if !v6 {
                    let ident = u16::from_be_bytes([segment[18], segment[19]]);
                    assert_eq!(ident, 0xfffeu16.wrapping_add(index as u16));
                }
            }
        }
    }

    /// Cutting a super-frame held in parts split at odd places, with the
    /// payload left in place, makes the same segments as cutting a copy.
    #[test]
    fn segments_cut_in_place_from_parts_match_copied_ones() {
        for (v6, tcp, gso, l4) in [
            (false, true, Gso::TcpV4, 34u16),
            (true, true, Gso::TcpV6, 54),
            (true, false, Gso::UdpL4, 54),
        ] {
            let frame = super_frame(v6, tcp, &[], 0, 4001);
            let header = gso_header(gso, 999, l4);
            let expected = cut(&frame, &header);
            let head_len = usize::from(l4) + if tcp { 20 } else { 8 } + 3;
            let parts: Vec<&[u8]> = vec![
                &frame[..head_len],
                &frame[head_len..head_len + 1],
                &frame[head_len + 1..2000],
                &frame[2000..2001],
                &frame[2001..],
            ];
            let mut segmenter = Segmenter::for_parts(&parts, &header).unwrap();
            assert_eq!(segmenter.segments_left(), 5);
            let mut headers = [0u8; 128];
            let mut made = Vec::new();
            while let Some(result) = segmenter.next_header_from_parts(&parts, &mut headers) {
                let (len, payload) = result.unwrap();
                let mut segment = headers[..len].to_vec();
                segment.extend_from_slice(&frame[payload]);
                assert_valid(&segment);
                made.push(segment);
            }
            assert_eq!(made, expected, "v6 {v6} tcp {tcp}");
            // Headers that do not fit are refused, segment by segment.
            let mut segmenter = Segmenter::for_parts(&parts, &header).unwrap();
            assert_eq!(
                segmenter.next_header_from_parts(&parts, &mut [0u8; 20]),
                Some(Err(TooLong))
            );
            assert_eq!(segmenter.segments_left(), 4);
        }
    }

    #[test]
    fn a_udp_gso_frame_is_cut_into_datagrams() {
        for (v6, l4) in [(false, 34), (true, 54)] {
            let frame = super_frame(v6, false, &[], 0, 2100);
            let segments = cut(&frame, &gso_header(Gso::UdpL4, 1400, l4));
            let l4 = usize::from(l4);
            let lens: Vec<u16> = segments
                .iter()
                .map(|s| u16::from_be_bytes([s[l4 + 4], s[l4 + 5]]))
                .collect();
            assert_eq!(lens, [1408, 708]);
        }
    }

    #[test]
    fn gso_frames_it_cannot_cut_are_refused() {
        let frame = super_frame(true, true, &[], 0, 100);
        let new = |frame: &[u8], gso, gso_size, csum_start| {
            Segmenter::new(frame, &gso_header(gso, gso_size, csum_start))
        };
        assert!(new(&frame, Gso::TcpV6, 50, 54).is_ok());
        // The ECN bit is only a marker.
        let ecn = VnetHeaderRepr {
            gso_ecn: true,
            ..gso_header(Gso::TcpV6, 50, 54)
        };
        assert!(Segmenter::new(&frame, &ecn).is_ok());
        assert!(new(&frame, Gso::TcpV4, 50, 54).is_err(), "family");
        let ufo = Gso::from(gso_type::UDP);
        assert!(new(&frame, ufo, 50, 54).is_err(), "UFO");
        assert!(new(&frame, Gso::TcpV6, 0, 54).is_err(), "size 0");
        assert!(new(&frame, Gso::TcpV6, 50, 20).is_err(), "offset");
        // GRO-merged frames carry no checksum start.
        assert!(new(&frame, Gso::TcpV6, 50, 0).is_ok());
        assert!(new(&frame, Gso::UdpL4, 50, 54).is_err(), "protocol");
        assert!(new(&frame[..60], Gso::TcpV6, 50, 54).is_err(), "short");
        assert!(new(&frame, Gso::TcpV6, 50, 5000).is_err(), "beyond");
        // A buffer too small for a segment skips just that one.
        let mut segmenter = new(&frame, Gso::TcpV6, 60, 54).unwrap();
        let mut small = [0u8; 120];
        assert_eq!(segmenter.next_into(&frame, &mut small), Some(Err(TooLong)));
        assert_eq!(segmenter.next_into(&frame, &mut small), Some(Ok(114)));
        assert_eq!(segmenter.next_into(&frame, &mut small), None);
    }

    /// Found by the fuzzer (`vnet_frame`): a checksum start beyond the
    /// fixed IPv6 header was taken for the transport header without looking
    /// at the extension headers, so a UDP GSO type over a TCP packet, or a
    /// start one byte off, made segments whose checksums (and UDP lengths)
    /// were written where no receiver looks.
    #[test]
    fn a_checksum_start_off_the_transport_header_is_refused() {
        let tcp = super_frame(true, true, &[HOP_BY_HOP, DESTINATION], 0, 300);
        let l4 = 14 + 40 + 8 + 16;
        assert!(Segmenter::new(&tcp, &gso_header(Gso::TcpV6, 100, l4)).is_ok());
        assert!(Segmenter::new(&tcp, &gso_header(Gso::UdpL4, 100, l4)).is_err());
        let udp = super_frame(true, false, &[], 0, 300);
        assert!(Segmenter::new(&udp, &gso_header(Gso::UdpL4, 100, 54)).is_ok());
        assert!(Segmenter::new(&udp, &gso_header(Gso::UdpL4, 100, 55)).is_err());
        let v4 = super_frame(false, true, &[], 0, 300);
        assert!(Segmenter::new(&v4, &gso_header(Gso::TcpV4, 100, 34)).is_ok());
        assert!(Segmenter::new(&v4, &gso_header(Gso::TcpV4, 100, 38)).is_err());
    }

    /// Found by the fuzzer (`vnet_frame`): a GSO size near 64 KiB over a
    /// super-frame that long made segments whose IPv6 payload length (or
    /// IPv4 total length, or UDP length) wrapped around 16 bits.
    #[test]
    fn segments_longer_than_the_length_fields_are_refused() {
        for (v6, tcp, l4, transport) in [
            (false, true, 34, 20),
            (true, true, 54, 20),
            (false, false, 34, 8),
            (true, false, 54, 8),
        ] {
            let gso = match (v6, tcp) {
                (false, true) => Gso::TcpV4,
                (true, true) => Gso::TcpV6,
                _ => Gso::UdpL4,
            };
            let frame = super_frame(v6, tcp, &[], 0, 70_000);
            let header = |size: usize| gso_header(gso, size as u16, l4 as u16);
            // The longest segment whose length still fits: 65535 bytes
            // from the IP header on (IPv4) or after the fixed one (IPv6).
            let fits = 65535 + 14 + if v6 { 40 } else { 0 } - l4 - transport;
            let segments = cut(&frame, &header(fits));
            assert_eq!(segments[0].len(), l4 + transport + fits);
            assert!(Segmenter::new(&frame, &header(fits + 1)).is_err());
            assert!(Segmenter::new(&frame, &header(65535)).is_err());
        }
    }

    /// Found by the fuzzer (`vnet_frame`, the IPv4 one; the IPv6 ones by
    /// its templates): fragments and IPv6 routing headers were cut, making
    /// segments that are fragments, or whose pseudo-header should have
    /// taken the routing header's final destination (RFC 8200 §8.1).
    #[test]
    fn fragments_and_routing_headers_are_refused() {
        for extension in [ROUTING, FRAGMENT] {
            let frame = super_frame(true, true, &[extension], 0, 300);
            assert!(Segmenter::new(&frame, &gso_header(Gso::TcpV6, 100, 62)).is_err());
            assert!(Segmenter::new(&frame, &gso_header(Gso::TcpV6, 100, 0)).is_err());
        }
        let dont_fragment = super_frame(false, true, &[], 0x4000, 300);
        assert!(Segmenter::new(&dont_fragment, &gso_header(Gso::TcpV4, 100, 34)).is_ok());
        for flags in [0x2000, 0x0001, 0x4001] {
            let fragment = super_frame(false, true, &[], flags, 300);
            assert!(Segmenter::new(&fragment, &gso_header(Gso::TcpV4, 100, 34)).is_err());
        }
    }

    #[test]
    fn ipv6_options_headers_are_stepped_over_like_a_receiver_does() {
        let frame = super_frame(true, true, &[HOP_BY_HOP, DESTINATION], 0, 250);
        for csum_start in [78, 0] {
            let segments = cut(&frame, &gso_header(Gso::TcpV6, 100, csum_start));
            let lens: Vec<_> = segments.iter().map(Vec::len).collect();
            assert_eq!(lens, [198, 198, 148]);
        }
        // Hop-by-hop options only first (RFC 8200 §4.1).
        let late = super_frame(true, true, &[DESTINATION, HOP_BY_HOP], 0, 250);
        assert!(Segmenter::new(&late, &gso_header(Gso::TcpV6, 100, 0)).is_err());
    }

    #[test]
    fn a_wrong_ip_version_is_refused() {
        let mut v4 = super_frame(false, true, &[], 0, 300);
        v4[14] = 0x65;
        assert!(Segmenter::new(&v4, &gso_header(Gso::TcpV4, 100, 34)).is_err());
        let mut v6 = super_frame(true, true, &[], 0, 300);
        v6[14] = 0x40;
        assert!(Segmenter::new(&v6, &gso_header(Gso::TcpV6, 100, 54)).is_err());
    }
}
