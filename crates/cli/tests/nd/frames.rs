//! Frames built by hand (Ethernet, IPv6, IPv4, ICMPv6, checksums) and
//! sent from the kernel's side through an AF_PACKET socket, so the host
//! receives them as if from the wire.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::support::Netns;

/// The solicited-node multicast group of `addr` (RFC 4291 §2.7.1).
pub fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// The SLAAC address of `prefix` for `mac`: the modified EUI-64
/// interface identifier (RFC 4291 Appendix A, RFC 4862 §5.5.3 d).
pub fn eui64_address(prefix: &str, mac: &str) -> Ipv6Addr {
    let m = parse_mac(mac);
    let prefix: Ipv6Addr = prefix.parse().expect("prefix");
    let iid = [m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]];
    let mut octets = prefix.octets();
    octets[8..].copy_from_slice(&iid);
    Ipv6Addr::from(octets)
}

pub fn parse_mac(mac: &str) -> [u8; 6] {
    let bytes: Vec<u8> = mac
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).expect("hex MAC"))
        .collect();
    bytes.try_into().expect("six octets")
}

/// IEEE 802 Local Experimental EtherType 1: no stack speaks it.
pub const ETHERTYPE_MARKER: u16 = 0x88b5;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// An Ethernet II frame.
pub fn ethernet(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + payload.len());
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&src);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// What became of frames handed to the kernel.
#[derive(Debug, Default)]
pub struct Sent {
    pub sent: usize,
    /// Refused by the kernel (e.g. shorter than an Ethernet header):
    /// never reached the TAP.
    pub refused: usize,
    pub first_error: Option<String>,
}

/// Sends raw frames out of `dev` from a thread in the namespace: the
/// kernel transmits them on the TAP, so the host receives them as if from
/// the wire. `paced` sleeps a millisecond every 32 frames so the TAP's
/// queue (1000 frames) never overflows while the host reads.
pub fn send_frames(ns: &Netns, dev: &str, frames: Vec<Vec<u8>>, paced: bool) -> Sent {
    let dev = std::ffi::CString::new(dev).expect("device name");
    ns.within(move || {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: socket takes no pointers; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        assert!(
            raw >= 0,
            "AF_PACKET socket: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: `dev` is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(dev.as_ptr()) };
        assert_ne!(index, 0, "no interface {dev:?}");
        let mut outcome = Sent::default();
        for (i, frame) in frames.iter().enumerate() {
            // SAFETY: sockaddr_ll is plain data; all zeroes is valid.
            let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            to.sll_family = libc::AF_PACKET as u16;
            to.sll_ifindex = index as i32;
            let ethertype = frame
                .get(12..14)
                .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
            to.sll_protocol = ethertype.to_be();
            // SAFETY: the buffer and the address are live for the call and
            // their lengths are theirs.
            let sent = unsafe {
                libc::sendto(
                    socket.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&to as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if sent == frame.len() as isize {
                outcome.sent += 1;
            } else {
                outcome.refused += 1;
                if outcome.first_error.is_none() {
                    let error = std::io::Error::last_os_error();
                    outcome.first_error = Some(format!("{} bytes: {error}", frame.len()));
                }
            }
            if paced && i % 32 == 31 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        outcome
    })
}

/// An ICMPv6 message with its checksum (RFC 4443 §2.3: over the
/// pseudo-header of RFC 8200 §8.1).
pub fn icmpv6(src: Ipv6Addr, dst: Ipv6Addr, kind: u8, code: u8, body: &[u8]) -> Vec<u8> {
    let mut message = vec![kind, code, 0, 0];
    message.extend_from_slice(body);
    let sum = checksum(&[&pseudo_header6(src, dst, 58, message.len()), &message]);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    message
}

/// An IPv6 packet: the fixed header (hop limit `hop_limit`, payload
/// length that of `payload`) and `payload`.
pub fn ipv6(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: u8,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut packet = vec![0x60, 0, 0, 0];
    packet.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    packet.extend_from_slice(&[next_header, hop_limit]);
    packet.extend_from_slice(&src.octets());
    packet.extend_from_slice(&dst.octets());
    packet.extend_from_slice(payload);
    packet
}

/// The IPv6 pseudo-header for upper-layer checksums (RFC 8200 §8.1).
pub fn pseudo_header6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, len: usize) -> Vec<u8> {
    let mut pseudo = Vec::with_capacity(40);
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&(len as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, next_header]);
    pseudo
}

/// The Internet checksum (RFC 1071) of the concatenated parts.
pub fn checksum(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.concat();
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet with a correct header checksum (RFC 791): `fragment`
/// is the flags-and-offset field, `ident` the Identification (which,
/// with the addresses and protocol, keys reassembly).
pub fn ipv4(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    ident: u16,
    fragment: u16,
    payload: &[u8],
) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut packet = vec![0x45, 0];
    packet.extend_from_slice(&total.to_be_bytes());
    packet.extend_from_slice(&ident.to_be_bytes());
    packet.extend_from_slice(&fragment.to_be_bytes());
    packet.extend_from_slice(&[64, protocol, 0, 0]);
    packet.extend_from_slice(&src.octets());
    packet.extend_from_slice(&dst.octets());
    let sum = checksum(&[&packet]);
    packet[10..12].copy_from_slice(&sum.to_be_bytes());
    packet.extend_from_slice(payload);
    packet
}

/// Protocol numbers and flags used below.
pub const ICMPV4: u8 = 1;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const ICMPV6: u8 = 58;
pub const HOP_BY_HOP: u8 = 0;
pub const FRAGMENT: u8 = 44;
pub const DEST_OPTS: u8 = 60;
pub const NO_NEXT: u8 = 59;
pub const TCP_SYN: u8 = 0x02;
pub const IPV4_MORE_FRAGMENTS: u16 = 0x2000;

/// The Echo identifier of every crafted (malformed) request: the host
/// must answer none. Mutated well-formed requests use another, as some
/// of them stay well formed.
pub const CRAFTED_ECHO_ID: u16 = 0x5e5e;
pub const MUTATED_ECHO_ID: u16 = 0x6d75;

pub fn echo_body(ident: u16, seq: u16) -> Vec<u8> {
    let mut body = ident.to_be_bytes().to_vec();
    body.extend_from_slice(&seq.to_be_bytes());
    body.extend_from_slice(&[0xa5; 24]);
    body
}

/// A Destination Options header (RFC 8200 §4.6) whose options area is
/// `options` padded with PadN to a multiple of 8 bytes.
pub fn dest_options(next: u8, options: &[u8]) -> Vec<u8> {
    let mut header = vec![next, 0];
    header.extend_from_slice(options);
    let pad = (8 - header.len() % 8) % 8;
    match pad {
        0 => {}
        1 => header.push(0),
        n => {
            header.extend_from_slice(&[1, (n - 2) as u8]);
            header.resize(header.len() + n - 2, 0);
        }
    }
    header[1] = (header.len() / 8 - 1) as u8;
    header
}

/// An IPv6 Fragment header (RFC 8200 §4.5).
pub fn fragment_header(next: u8, offset: usize, more: bool, ident: u32) -> Vec<u8> {
    let field = ((offset / 8) << 3) as u16 | u16::from(more);
    let mut header = vec![next, 0];
    header.extend_from_slice(&field.to_be_bytes());
    header.extend_from_slice(&ident.to_be_bytes());
    header
}

/// An Echo Request (RFC 4443 §4.1) in a frame from the kernel's MAC to
/// the host's.
pub fn echo_request6(ends: &Ends<'_>, src: Ipv6Addr, dst: Ipv6Addr, seq: u16) -> Vec<u8> {
    let message = icmpv6(src, dst, 128, 0, &echo_body(CRAFTED_ECHO_ID, seq));
    ethernet(
        parse_mac(ends.host),
        parse_mac(ends.kernel),
        ETHERTYPE_IPV6,
        &ipv6(src, dst, 58, 64, &message),
    )
}

/// A Neighbor Solicitation for `target` from `src` with the kernel's MAC
/// as its source link-layer address (RFC 4861 §4.3): multicast to the
/// solicited-node group, or unicast to the target at the host's MAC (as
/// NUD probes are).
pub fn neighbor_solicitation(
    ends: &Ends<'_>,
    src: Ipv6Addr,
    target: Ipv6Addr,
    unicast: bool,
) -> Vec<u8> {
    let (dst, dst_mac) = if unicast {
        (target, parse_mac(ends.host))
    } else {
        let group = solicited_node(target);
        let g = group.octets();
        (group, [0x33, 0x33, g[12], g[13], g[14], g[15]])
    };
    let mut body = vec![0; 4];
    body.extend_from_slice(&target.octets());
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&parse_mac(ends.kernel));
    let message = icmpv6(src, dst, 135, 0, &body);
    ethernet(
        dst_mac,
        parse_mac(ends.kernel),
        ETHERTYPE_IPV6,
        &ipv6(src, dst, 58, 255, &message),
    )
}

/// The two MACs on the link.
pub struct Ends<'a> {
    pub host: &'a str,
    pub kernel: &'a str,
}
