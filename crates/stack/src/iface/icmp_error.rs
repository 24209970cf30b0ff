//! When an ICMP error may be originated about a packet, and the body of the
//! error message: RFC 4443 §2.4 for ICMPv6, RFC 1122 §3.2.2 and RFC 1812
//! §4.3.2 for ICMPv4.
//!
//! Pure functions: the caller describes the invoking packet (what it has
//! already learnt while processing it: whether it is itself an ICMP error,
//! whether it arrived as link-layer multicast, whether its source is a
//! known anycast address), names the error it wants to send, and passes
//! the destination's [`IcmpRateLimiter`] with `now`. Nothing here reads a
//! clock or sends.
//!
//! The rules that need no rate-limit token are checked first, so an error
//! refused by rule never spends one; a [`Suppressed`] reason is what the
//! caller counts (per [`Suppressed::name`]).
//!
//! For an error that arrives, [`quoted_ipv6`] and [`quoted_ipv4`] read the
//! packet it quotes as far as the receiver needs to hand it to the upper
//! layer that sent it (RFC 4443 §2.4(d), RFC 1122 §3.2.2), and
//! [`Quoted::tcp`] the part of a TCP header that identifies a connection
//! and a segment (RFC 5927 §7.2 checks the connection against it).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Repr, Icmpv4TimeExceeded};
use wire::icmpv6::{
    truncate_invoking, DstUnreachableReason, Icmpv6Repr, ParamProblemReason, TimeExceededReason,
};
use wire::ip::IpProtocol;
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::ipv6_fragment::Ipv6FragmentHeader;

use crate::iface::route::IcmpRateLimiter;
use crate::time::Instant;

/// Why an ICMP error was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suppressed {
    /// The invoking packet is itself an ICMP error message or a Redirect
    /// (RFC 4443 §2.4(e.1), (e.2); RFC 1122 §3.2.2; RFC 1812 §4.3.2.7).
    InvokingIsError,
    /// The invoking packet was destined to a multicast (or IPv4 broadcast)
    /// address, or sent as link-layer multicast or broadcast (RFC 4443
    /// §2.4(e.3)–(e.5); RFC 1122 §3.2.2; RFC 1812 §4.3.2.7).
    MulticastDestination,
    /// The invoking packet's source does not identify a single node
    /// (RFC 4443 §2.4(e.6); RFC 1122 §3.2.2; RFC 1812 §4.3.2.7).
    SourceNotUnique,
    /// The invoking IPv4 packet is a fragment other than the first
    /// (RFC 1122 §3.2.2; RFC 1812 §4.3.2.7).
    NonInitialFragment,
    /// The token bucket is empty (RFC 4443 §2.4(f); RFC 1812 §4.3.2.8).
    RateLimited,
}

impl Suppressed {
    /// Every reason, for counter tables.
    pub const ALL: [Suppressed; 5] = [
        Self::InvokingIsError,
        Self::MulticastDestination,
        Self::SourceNotUnique,
        Self::NonInitialFragment,
        Self::RateLimited,
    ];

    /// A stable name for counters and the state dump.
    pub const fn name(self) -> &'static str {
        match self {
            Self::InvokingIsError => "invoking_is_icmp_error",
            Self::MulticastDestination => "multicast_destination",
            Self::SourceNotUnique => "source_not_unique",
            Self::NonInitialFragment => "non_initial_fragment",
            Self::RateLimited => "rate_limited",
        }
    }
}

// ---------------------------------------------------------------- ICMPv6

/// What the caller knows about the packet an ICMPv6 error would be about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvokingV6 {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// Sent as link-layer multicast or broadcast (RFC 4443 §2.4(e.4),
    /// (e.5)). A multicast `dst` is detected from the address as well.
    pub dst_was_multicast_or_link_multicast: bool,
    /// The packet is an ICMPv6 error message (type < 128, RFC 4443 §2.1) or
    /// a Redirect (RFC 4443 §2.4(e.1), (e.2)).
    pub is_icmpv6_error: bool,
    /// `src` is known to this node to be an anycast address (RFC 4443
    /// §2.4(e.6)); anycast addresses are not distinguishable from unicast
    /// by their form (RFC 4291 §2.6).
    pub src_is_anycast: bool,
    /// The packet was originated by this node (so a loopback source names
    /// this node, RFC 4291 §2.5.3).
    pub locally_originated: bool,
}

/// An ICMPv6 error to send (RFC 4443 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6ErrorKind {
    /// §3.1.
    DstUnreachable(DstUnreachableReason),
    /// §3.2: the MTU of the next-hop link.
    PacketTooBig { mtu: u32 },
    /// §3.3.
    TimeExceeded(TimeExceededReason),
    /// §3.4. `option_type` is the Option Type octet that caused a code-2
    /// error (RFC 8200 §4.2), `None` otherwise.
    ParamProblem {
        reason: ParamProblemReason,
        pointer: u32,
        option_type: Option<u8>,
    },
}

impl Icmpv6ErrorKind {
    /// RFC 4443 §2.4(e.3): the two errors that may be sent about a packet
    /// to a multicast address: "(1) the Packet Too Big Message ... to allow
    /// Path MTU discovery to work for IPv6 multicast, and (2) the Parameter
    /// Problem Message, Code 2 ... reporting an unrecognized IPv6 option
    /// ... that has the Option Type highest-order two bits set to 10".
    pub fn allowed_for_multicast(&self) -> bool {
        match *self {
            Self::PacketTooBig { .. } => true,
            Self::ParamProblem {
                reason: ParamProblemReason::UnrecognizedOption,
                option_type: Some(option_type),
                ..
            } => option_type >> 6 == 0b10,
            _ => false,
        }
    }
}

/// Whether an ICMPv6 `kind` error may be originated about `invoking`
/// (RFC 4443 §2.4(e), (f)). On `Ok` one token of `limiter` is spent.
pub fn may_send_icmpv6_error(
    invoking: &InvokingV6,
    kind: &Icmpv6ErrorKind,
    limiter: &mut IcmpRateLimiter,
    now: Instant,
) -> Result<(), Suppressed> {
    // §2.4(e.1), (e.2): never about an ICMPv6 error or a Redirect.
    if invoking.is_icmpv6_error {
        return Err(Suppressed::InvokingIsError);
    }
    // §2.4(e.6): "a packet whose source address does not uniquely identify
    // a single node. E.g., the IPv6 Unspecified Address, an IPv6 multicast
    // address, or an address known by the ICMP message originator to be an
    // IPv6 anycast address." Loopback (RFC 4291 §2.5.3) names a single
    // node only for a packet this node sent itself.
    let src = invoking.src;
    if src.is_unspecified()
        || src.is_multicast()
        || invoking.src_is_anycast
        || (src.is_loopback() && !invoking.locally_originated)
    {
        return Err(Suppressed::SourceNotUnique);
    }
    // §2.4(e.3)–(e.5): not about a packet to a multicast address or sent
    // as link-layer multicast or broadcast, except Packet Too Big and
    // Parameter Problem code 2 for an option of action 10.
    let multicast = invoking.dst.is_multicast() || invoking.dst_was_multicast_or_link_multicast;
    if multicast && !kind.allowed_for_multicast() {
        return Err(Suppressed::MulticastDestination);
    }
    // §2.4(f): "an IPv6 node MUST limit the rate of ICMPv6 error messages
    // it originates".
    if !limiter.allow(now) {
        return Err(Suppressed::RateLimited);
    }
    Ok(())
}

/// The invoking packet cut to its declared length when the IPv6 header
/// says it is shorter than the buffer (link-layer padding is not part of
/// the packet). Jumbograms (payload length 0, RFC 2675) and unparsable
/// headers are left whole.
fn declared_v6(invoking: &[u8]) -> &[u8] {
    match Ipv6Packet::new_checked(invoking) {
        Ok(packet) if packet.payload_len() != 0 => {
            let len = wire::ipv6::HEADER_LEN + usize::from(packet.payload_len());
            invoking.get(..len).unwrap_or(invoking)
        }
        _ => invoking,
    }
}

/// The ICMPv6 message of a `kind` error about `invoking` (the invoking
/// packet from its IPv6 header). RFC 4443 §2.4(c): "Every ICMPv6 error
/// message ... MUST include as much of the IPv6 offending (invoking) packet
/// ... as possible without making the error message packet exceed the
/// minimum IPv6 MTU" — with the fixed 40-byte header (the error carries no
/// extension headers), the message is at most 1240 bytes.
pub fn icmpv6_error_body(kind: Icmpv6ErrorKind, invoking_packet: &[u8]) -> Icmpv6Repr<'_> {
    let invoking = truncate_invoking(declared_v6(invoking_packet));
    match kind {
        Icmpv6ErrorKind::DstUnreachable(reason) => Icmpv6Repr::DstUnreachable { reason, invoking },
        // §3.2: "The MTU of the next-hop link".
        Icmpv6ErrorKind::PacketTooBig { mtu } => Icmpv6Repr::PacketTooBig { mtu, invoking },
        Icmpv6ErrorKind::TimeExceeded(reason) => Icmpv6Repr::TimeExceeded { reason, invoking },
        // §3.4: "Pointer: Identifies the octet offset within the invoking
        // packet where the error was detected."
        Icmpv6ErrorKind::ParamProblem {
            reason, pointer, ..
        } => Icmpv6Repr::ParamProblem {
            reason,
            pointer,
            invoking,
        },
    }
}

// ---------------------------------------------------------------- ICMPv4

/// RFC 1812 §4.3.2.3: the ICMP error datagram SHOULD contain "as much of
/// the original datagram as possible without the length of the ICMP
/// datagram exceeding 576 bytes". We follow it on hosts too: RFC 1122
/// §3.2.2 asks for "at least the first 8 data octets", so more is allowed.
pub const MAX_ICMPV4_ERROR_DATAGRAM: usize = 576;
/// The error's own IPv4 header: 20 bytes, no options are sent.
const IPV4_HEADER_LEN: usize = wire::ipv4::HEADER_LEN;
/// Largest part of the invoking datagram an ICMPv4 error carries: 548.
pub const MAX_ICMPV4_INVOKING_LEN: usize =
    MAX_ICMPV4_ERROR_DATAGRAM - IPV4_HEADER_LEN - wire::icmpv4::HEADER_LEN;

/// What the caller knows about the datagram an ICMPv4 error would be about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvokingV4 {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// `dst` is a broadcast address of an attached subnet, or the datagram
    /// arrived as link-layer broadcast or multicast. 255.255.255.255 and
    /// 224/4 are detected from the address as well.
    pub dst_was_broadcast_or_multicast: bool,
    /// The datagram is an ICMP error message (Destination Unreachable,
    /// Source Quench, Redirect, Time Exceeded, Parameter Problem; RFC 1122
    /// §3.2.2).
    pub is_icmp_error: bool,
    /// Fragment offset of the datagram in bytes.
    pub frag_offset: u16,
    /// `src` is known to be a broadcast address of an attached subnet.
    pub src_is_subnet_broadcast: bool,
    /// Originated by this node (a loopback source then names this node).
    pub locally_originated: bool,
}

/// An ICMPv4 error to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv4ErrorKind {
    /// RFC 792 Destination Unreachable of any code but 4 (use
    /// [`FragNeeded`](Self::FragNeeded) for it): the word is unused.
    DstUnreachable(Icmpv4DstUnreachable),
    /// Destination Unreachable code 4, fragmentation needed and DF set,
    /// with the next-hop MTU (RFC 1191 §4).
    FragNeeded { next_hop_mtu: u16 },
    /// RFC 792 Time Exceeded.
    TimeExceeded(Icmpv4TimeExceeded),
    /// RFC 792 Parameter Problem, the pointer to the offending octet.
    ParamProblem { pointer: u8 },
}

/// Whether `src` identifies a single host (RFC 1122 §3.2.2: not "a zero
/// address, a loopback address, a broadcast address, a multicast address,
/// or a Class E address"; RFC 1812 §4.3.2.7 repeats the list).
fn v4_source_is_single_host(invoking: &InvokingV4) -> bool {
    let src = invoking.src;
    let class_e = src.octets()[0] >= 240; // 240/4, limited broadcast included
    !(src.is_unspecified()
        || (src.is_loopback() && !invoking.locally_originated)
        || src.is_broadcast()
        || src.is_multicast()
        || class_e
        || invoking.src_is_subnet_broadcast)
}

/// Whether an ICMPv4 error (of any kind) may be originated about `invoking`
/// (RFC 1122 §3.2.2, RFC 1812 §4.3.2.7, rate limit RFC 1812 §4.3.2.8). On
/// `Ok` one token of `limiter` is spent. RFC 1122 has no counterpart of
/// RFC 4443's multicast exceptions: every kind is refused about a
/// broadcast or multicast datagram.
pub fn may_send_icmpv4_error(
    invoking: &InvokingV4,
    limiter: &mut IcmpRateLimiter,
    now: Instant,
) -> Result<(), Suppressed> {
    // RFC 1122 §3.2.2: "An ICMP error message MUST NOT be sent as the
    // result of receiving: * an ICMP error message, or ..."
    if invoking.is_icmp_error {
        return Err(Suppressed::InvokingIsError);
    }
    // "* a datagram whose source address does not define a single host".
    if !v4_source_is_single_host(invoking) {
        return Err(Suppressed::SourceNotUnique);
    }
    // "* a datagram destined to an IP broadcast or IP multicast address,
    // or * a datagram sent as a link-layer broadcast".
    let dst = invoking.dst;
    if dst.is_broadcast() || dst.is_multicast() || invoking.dst_was_broadcast_or_multicast {
        return Err(Suppressed::MulticastDestination);
    }
    // "* a non-initial fragment".
    if invoking.frag_offset != 0 {
        return Err(Suppressed::NonInitialFragment);
    }
    // RFC 1812 §4.3.2.8: a router "SHOULD" limit the rate of ICMP errors
    // it originates; hosts use the same bucket.
    if !limiter.allow(now) {
        return Err(Suppressed::RateLimited);
    }
    Ok(())
}

/// The invoking datagram cut to its declared total length (link-layer
/// padding is not part of it) when the header parses and says so.
fn declared_v4(invoking: &[u8]) -> &[u8] {
    match Ipv4Packet::new_checked(invoking) {
        Ok(packet) => invoking
            .get(..usize::from(packet.total_len()))
            .unwrap_or(invoking),
        Err(_) => invoking,
    }
}

/// The ICMPv4 message of a `kind` error about `invoking_packet` (the
/// invoking datagram from its IPv4 header). Quotes the invoking header and
/// as much data as keeps the error datagram within
/// [`MAX_ICMPV4_ERROR_DATAGRAM`] (RFC 1812 §4.3.2.3), which always covers
/// RFC 792's "internet header + 64 bits of data" (60 + 8 ≤ 548).
pub fn icmpv4_error_body(kind: Icmpv4ErrorKind, invoking_packet: &[u8]) -> Icmpv4Repr<'_> {
    let declared = declared_v4(invoking_packet);
    let invoking = declared
        .get(..declared.len().min(MAX_ICMPV4_INVOKING_LEN))
        .unwrap_or(declared);
    match kind {
        Icmpv4ErrorKind::DstUnreachable(reason) => Icmpv4Repr::DstUnreachable {
            reason,
            // RFC 792: "unused", sent as zero — except with code 4 (RFC
            // 1191 §4), which the caller should express as FragNeeded.
            next_hop_mtu: 0,
            invoking,
        },
        Icmpv4ErrorKind::FragNeeded { next_hop_mtu } => Icmpv4Repr::DstUnreachable {
            reason: Icmpv4DstUnreachable::FragRequired,
            next_hop_mtu,
            invoking,
        },
        Icmpv4ErrorKind::TimeExceeded(reason) => Icmpv4Repr::TimeExceeded { reason, invoking },
        Icmpv4ErrorKind::ParamProblem { pointer } => Icmpv4Repr::ParamProblem { pointer, invoking },
    }
}

// ------------------------------------------------- Errors that arrive

/// The packet an arriving ICMP error quotes, read as far as its upper
/// layer: RFC 4443 §2.4(d) and RFC 1122 §3.2.2 hand an error to the
/// upper-layer protocol of the invoking packet, which "extracts" it from
/// the quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quoted<'a> {
    /// The invoking packet's source: ours, if we sent it.
    pub src: IpAddr,
    /// Its destination: whose path MTU a Packet Too Big lowers.
    pub dst: IpAddr,
    /// Its upper-layer protocol.
    pub protocol: IpProtocol,
    /// Whether `upper` starts with the upper-layer header: false for a
    /// fragment other than the first, whose header another fragment holds.
    pub initial: bool,
    /// The upper-layer header and data, as far as the error quotes them.
    pub upper: &'a [u8],
}

/// What identifies a quoted TCP segment: ports and sequence number, in its
/// first 8 octets, which every ICMP error carries (RFC 792: "the internet
/// header plus the first 64 bits of the original datagram's data"; RFC
/// 4443 quotes more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotedTcp {
    /// The local end: the segment's source address and port.
    pub local: SocketAddr,
    /// The remote end: its destination address and port.
    pub remote: SocketAddr,
    /// SEG.SEQ of the quoted segment.
    pub seq: u32,
}

impl Quoted<'_> {
    /// The quoted TCP segment's identity, if the quote is of a TCP
    /// header and long enough to hold it.
    pub fn tcp(&self) -> Option<QuotedTcp> {
        if self.protocol != IpProtocol::Tcp || !self.initial {
            return None;
        }
        let header = self.upper.get(..8)?;
        Some(QuotedTcp {
            local: SocketAddr::new(self.src, u16::from_be_bytes([header[0], header[1]])),
            remote: SocketAddr::new(self.dst, u16::from_be_bytes([header[2], header[3]])),
            seq: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
        })
    }
}

/// Reads the IPv6 packet an ICMPv6 error quotes (from its IPv6 header,
/// possibly cut short): `None` if the quote is not an IPv6 header or its
/// extension headers cannot be walked to the upper layer.
pub fn quoted_ipv6(invoking: &[u8]) -> Option<Quoted<'_>> {
    if invoking.len() < wire::ipv6::HEADER_LEN || invoking[0] >> 4 != 6 {
        return None;
    }
    // Not `new_checked`: the quote may end before the payload length says.
    let ip = Ipv6Packet::new_unchecked(invoking);
    let payload = &invoking[wire::ipv6::HEADER_LEN..];
    let end = wire::ipv6_ext_header::walk_chain(payload, ip.next_header()).ok()?;
    let rest = payload.get(end.offset..)?;
    let (protocol, initial, upper) = if end.protocol == IpProtocol::Ipv6Frag {
        // A fragment other than the first (RFC 8200 §4.5): the upper layer
        // is named, its header is not here.
        let fragment = Ipv6FragmentHeader::new_checked(rest).ok()?;
        (fragment.next_header(), false, &[][..])
    } else {
        (end.protocol, true, rest)
    };
    Some(Quoted {
        src: IpAddr::V6(ip.src_addr()),
        dst: IpAddr::V6(ip.dst_addr()),
        protocol,
        initial,
        upper,
    })
}

/// Reads the IPv4 datagram an ICMPv4 error quotes (from its IPv4 header,
/// possibly cut short): `None` if the quote is not a whole IPv4 header.
pub fn quoted_ipv4(invoking: &[u8]) -> Option<Quoted<'_>> {
    if invoking.len() < wire::ipv4::HEADER_LEN || invoking[0] >> 4 != 4 {
        return None;
    }
    // Not `new_checked`: the quote may end before the total length says.
    let ip = Ipv4Packet::new_unchecked(invoking);
    let header_len = ip.header_len();
    if header_len < wire::ipv4::HEADER_LEN {
        return None;
    }
    let upper = invoking.get(header_len..)?;
    Some(Quoted {
        src: IpAddr::V4(ip.src_addr()),
        dst: IpAddr::V4(ip.dst_addr()),
        protocol: ip.protocol(),
        initial: ip.frag_offset() == 0,
        upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iface::route::RateLimitConfig;

    fn v6(src: Ipv6Addr, dst: Ipv6Addr) -> InvokingV6 {
        InvokingV6 {
            src,
            dst,
            dst_was_multicast_or_link_multicast: false,
            is_icmpv6_error: false,
            src_is_anycast: false,
            locally_originated: false,
        }
    }

    fn unlimited() -> IcmpRateLimiter {
        IcmpRateLimiter::new(RateLimitConfig {
            burst: 1,
            interval: core::time::Duration::ZERO,
        })
    }

    #[test]
    fn names_are_distinct() {
        for (i, a) in Suppressed::ALL.iter().enumerate() {
            for b in &Suppressed::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn loopback_source_only_when_local() {
        let kind = Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::PortUnreachable);
        let mut inv = v6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        let mut rl = unlimited();
        assert_eq!(
            may_send_icmpv6_error(&inv, &kind, &mut rl, Instant::ZERO),
            Err(Suppressed::SourceNotUnique)
        );
        inv.locally_originated = true;
        assert_eq!(
            may_send_icmpv6_error(&inv, &kind, &mut rl, Instant::ZERO),
            Ok(())
        );
    }

    /// A TCP header's first 8 bytes: ports 40000 → 5001, SEQ 0x01020304.
    const TCP_START: [u8; 8] = [0x9c, 0x40, 0x13, 0x89, 1, 2, 3, 4];

    fn ipv6_header(next_header: u8) -> Vec<u8> {
        let mut header = vec![0u8; 40];
        header[0] = 0x60;
        header[5] = 200; // payload length, more than is quoted
        header[6] = next_header;
        header[23] = 0xa; // 2001:db8::a → 2001:db8::b
        header[8..12].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        header[24..28].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        header[39] = 0xb;
        header
    }

    #[test]
    fn a_quoted_ipv6_tcp_segment_names_its_connection_through_extension_headers() {
        let local: IpAddr = "2001:db8::a".parse().unwrap();
        let remote: IpAddr = "2001:db8::b".parse().unwrap();
        let expected = QuotedTcp {
            local: SocketAddr::new(local, 40000),
            remote: SocketAddr::new(remote, 5001),
            seq: 0x0102_0304,
        };
        let mut plain = ipv6_header(6);
        plain.extend_from_slice(&TCP_START);
        let quoted = quoted_ipv6(&plain).unwrap();
        assert_eq!((quoted.src, quoted.dst), (local, remote));
        assert_eq!(quoted.tcp(), Some(expected));
        // After a destination options header (the trace option's).
        let mut with_options = ipv6_header(60);
        with_options.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        with_options.extend_from_slice(&TCP_START);
        assert_eq!(quoted_ipv6(&with_options).unwrap().tcp(), Some(expected));
        // Cut inside the TCP header: TCP, but nothing to check it by.
        let cut = quoted_ipv6(&plain[..44]).unwrap();
        assert_eq!(cut.protocol, IpProtocol::Tcp);
        assert_eq!(cut.tcp(), None);
        // A fragment other than the first: TCP without its header.
        let mut later = ipv6_header(44);
        later.extend_from_slice(&[6, 0, 0x05, 0x00, 0, 0, 0, 1]);
        later.extend_from_slice(&TCP_START);
        let fragment = quoted_ipv6(&later).unwrap();
        assert_eq!(
            (fragment.protocol, fragment.initial),
            (IpProtocol::Tcp, false)
        );
        assert_eq!(fragment.tcp(), None);
        // Not IPv6, or shorter than its header.
        assert_eq!(quoted_ipv6(&plain[..39]), None);
        let mut v4 = plain.clone();
        v4[0] = 0x45;
        assert_eq!(quoted_ipv6(&v4), None);
    }

    #[test]
    fn a_quoted_ipv4_tcp_segment_needs_only_its_first_8_bytes() {
        // 192.0.2.10 → 198.51.100.10, TCP, 24 bytes of header (options).
        let mut datagram = vec![0x46, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0];
        datagram.extend_from_slice(&[192, 0, 2, 10, 198, 51, 100, 10, 1, 1, 1, 1]);
        datagram.extend_from_slice(&TCP_START);
        let quoted = quoted_ipv4(&datagram).unwrap();
        let tcp = quoted.tcp().unwrap();
        assert_eq!(tcp.local, "192.0.2.10:40000".parse().unwrap());
        assert_eq!(tcp.remote, "198.51.100.10:5001".parse().unwrap());
        assert_eq!(tcp.seq, 0x0102_0304);
        assert_eq!(quoted_ipv4(&datagram[..31]).unwrap().tcp(), None);
        // A later fragment (offset 185 × 8) quotes no TCP header.
        let mut later = datagram.clone();
        later[6..8].copy_from_slice(&[0x00, 0xb9]);
        assert_eq!(quoted_ipv4(&later).unwrap().tcp(), None);
        // UDP is no TCP.
        let mut udp = datagram.clone();
        udp[9] = 17;
        assert_eq!(quoted_ipv4(&udp).unwrap().protocol, IpProtocol::Udp);
        assert_eq!(quoted_ipv4(&udp).unwrap().tcp(), None);
        // A header length below 20, or beyond the quote.
        let mut short = datagram.clone();
        short[0] = 0x44;
        assert_eq!(quoted_ipv4(&short), None);
        assert_eq!(quoted_ipv4(&datagram[..22]), None);
    }

    #[test]
    fn padding_is_not_quoted() {
        // IPv4 header declaring 28 bytes, followed by 18 bytes of padding.
        let mut buf = [0u8; 46];
        buf[0] = 0x45;
        buf[3] = 28;
        let repr = icmpv4_error_body(Icmpv4ErrorKind::ParamProblem { pointer: 1 }, &buf);
        assert_eq!(repr.data().len(), 28);
        // Garbage is quoted as given, without panicking.
        let repr = icmpv4_error_body(Icmpv4ErrorKind::ParamProblem { pointer: 1 }, &[1, 2]);
        assert_eq!(repr.data(), &[1, 2]);
    }
}
