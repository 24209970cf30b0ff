//! IPv6 in IPv4: a configured tunnel (RFC 4213 §3) over the operating
//! system's IPv4, the 6-over-4 analogue of the MSR study's tunnel link
//! module. Its peer is another reference-stack host at the far end.
//!
//! [`Ipv6InIpv4`] is a raw IPv4 socket for IP protocol 41 bound to the
//! local IPv4 address and connected to the remote one, non-blocking, and a
//! link of medium [`Medium::Ip`] carrying bare IPv6 packets:
//!
//! * **transmit** sends the IPv6 packet as the raw socket's payload; the
//!   kernel adds the IPv4 header (protocol 41, TTL 64) and, since the
//!   tunnel MTU is static, never sets Don't Fragment (RFC 4213 §3.2.1):
//!   IPv4 fragments what the IPv4 path cannot carry whole;
//! * **receive** takes datagrams in batches (`recvmmsg`, as the packet
//!   link does); each arrives with its IPv4 header, which is checked
//!   (version, IHL, total length, protocol 41, source the configured
//!   remote, destination the local address: RFC 4213 §3.6's ingress
//!   check) and stripped; anything else is dropped and counted
//!   ([`TunnelStats`]). The kernel has reassembled IPv4 fragments.
//!
//! The MTU defaults to 1480, the IPv4 link's 1500 less the 20-byte
//! header (RFC 4213 §3.2). A kernel with the `sit` module loaded also
//! claims protocol 41 in each namespace (its `sit0` fallback device): it
//! answers packets no sit tunnel takes with ICMP errors while this socket
//! still receives its copy; those errors come back to the sender as
//! socket errors, counted in [`TunnelStats::icmp_errors`].

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::os::{
    context, invalid, os_result, send_error, send_parts, set_int_option, set_socket_buffers,
};
use super::packet::{check_batch, RingStats, DEFAULT_BATCH};
use super::rx_ring::RxRing;
use super::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// IP protocol number of IPv6 encapsulated in IPv4 (RFC 4213 §3.5).
pub const IPPROTO_IPV6_IN_IPV4: u8 = 41;
/// Bytes of an IPv4 header with options at most.
const MAX_IPV4_HEADER: usize = 60;
const IPV4_HEADER_LEN: usize = 20;
/// Receive system calls one `receive` makes at most when it finds only
/// datagrams to drop.
const MAX_REFILLS: usize = 4;

/// How to open an [`Ipv6InIpv4`] tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelConfig {
    /// This end's IPv4 address (an address of the calling thread's
    /// network namespace): the source of what it sends.
    pub local: Ipv4Addr,
    /// The far end's IPv4 address: where packets go, and the only source
    /// accepted.
    pub remote: Ipv4Addr,
    /// The tunnel MTU (IPv6 packet size), 1280..=65515.
    pub mtu: usize,
    /// Datagrams taken per system call, 1..=[`super::packet::MAX_BATCH`].
    pub batch: usize,
    /// `SO_RCVBUF` and `SO_SNDBUF`; `None` keeps the system's defaults.
    pub socket_buffer_bytes: Option<usize>,
}

impl TunnelConfig {
    /// A tunnel from `local` to `remote` with the default MTU and batch.
    pub fn new(local: Ipv4Addr, remote: Ipv4Addr) -> Self {
        Self {
            local,
            remote,
            mtu: Ipv6InIpv4::DEFAULT_MTU,
            batch: DEFAULT_BATCH,
            socket_buffer_bytes: None,
        }
    }
}

/// What a tunnel drops and meets beyond [`LinkStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunnelStats {
    /// Datagrams without a well-formed IPv4 header (version, IHL, total
    /// length).
    pub rx_malformed: u64,
    /// Datagrams of another IP protocol than 41.
    pub rx_wrong_protocol: u64,
    /// Datagrams from another source than the configured remote, or to
    /// another destination than the local address (RFC 4213 §3.6).
    pub rx_wrong_address: u64,
    /// Payloads that are not IPv6 (version nibble).
    pub rx_not_ipv6: u64,
    /// Packets handed to `transmit` that are not IPv6, refused.
    pub tx_not_ipv6: u64,
    /// ICMPv4 errors about earlier datagrams that the kernel reported on
    /// the socket (the far end unreachable, a `sit` device refusing
    /// them): the send or receive they surfaced in is retried once.
    pub icmp_errors: u64,
    /// Sends refused for another reason than a full queue or the size
    /// (no route, the interface down, ...): returned as
    /// [`LinkError::Down`] or [`LinkError::Os`].
    pub tx_errors: u64,
    /// Receive calls that failed.
    pub rx_errors: u64,
    /// The errno of the latest failed send or receive.
    pub last_error: Option<i32>,
}

/// An IPv6-in-IPv4 configured tunnel end.
pub struct Ipv6InIpv4 {
    fd: OwnedFd,
    local: Ipv4Addr,
    remote: Ipv4Addr,
    mtu: usize,
    ring: RefCell<RxRing>,
    stats: LinkStats,
    tunnel_stats: TunnelStats,
    scratch: Vec<u8>,
}

impl Ipv6InIpv4 {
    /// RFC 4213 §3.2: an IPv4 link's 1500 bytes less the IPv4 header.
    pub const DEFAULT_MTU: usize = 1480;

    /// Opens a tunnel from `local` to `remote` with the default MTU.
    pub fn open(local: Ipv4Addr, remote: Ipv4Addr) -> io::Result<Self> {
        Self::open_with(&TunnelConfig::new(local, remote))
    }

    /// Opens a tunnel as `config` says, in the calling thread's network
    /// namespace. Needs `CAP_NET_RAW`.
    pub fn open_with(config: &TunnelConfig) -> io::Result<Self> {
        check_batch(config.batch)?;
        if !(1280..=65535 - IPV4_HEADER_LEN).contains(&config.mtu) {
            return Err(invalid(format!(
                "a tunnel MTU of {} is impossible: IPv6 needs 1280 and IPv4 carries 65515 at most",
                config.mtu
            )));
        }
        for (what, addr) in [("local", config.local), ("remote", config.remote)] {
            if addr.is_unspecified() || addr.is_multicast() || addr.is_broadcast() {
                return Err(invalid(format!(
                    "the {what} end of a tunnel must be a unicast IPv4 address, not {addr}"
                )));
            }
        }
        // SAFETY: socket takes no pointers; the result is checked below.
        let raw = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::c_int::from(IPPROTO_IPV6_IN_IPV4),
            )
        };
        if raw < 0 {
            return Err(context(
                "open a raw IPv4 socket for protocol 41 (needs CAP_NET_RAW)",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `raw` is a descriptor socket just returned, owned by
        // nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // RFC 4213 §3.2.1: with a static tunnel MTU, DF is not set.
        set_int_option(
            fd.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DONT,
        )
        .map_err(|e| context("clear Don't Fragment on the tunnel socket", e))?;
        if let Some(bytes) = config.socket_buffer_bytes {
            set_socket_buffers(fd.as_raw_fd(), bytes)?;
        }
        // Bound and connected: the kernel delivers only datagrams from
        // `remote` to `local` (checked again here all the same).
        inet_call(fd.as_raw_fd(), config.local, libc::bind)
            .map_err(|e| context(format!("bind the tunnel socket to {}", config.local), e))?;
        inet_call(fd.as_raw_fd(), config.remote, libc::connect)
            .map_err(|e| context(format!("connect the tunnel socket to {}", config.remote), e))?;
        let slot = MAX_IPV4_HEADER + config.mtu;
        Ok(Self {
            fd,
            local: config.local,
            remote: config.remote,
            mtu: config.mtu,
            ring: RefCell::new(RxRing::new(config.batch, slot)),
            stats: LinkStats::default(),
            tunnel_stats: TunnelStats::default(),
            scratch: Vec::new(),
        })
    }

    pub fn local(&self) -> Ipv4Addr {
        self.local
    }

    pub fn remote(&self) -> Ipv4Addr {
        self.remote
    }

    /// The interface identifier of this end's link-local address (RFC 4213
    /// §3.7): the local IPv4 address in the low 32 bits.
    pub fn interface_id(&self) -> [u8; 8] {
        let [a, b, c, d] = self.local.octets();
        [0, 0, 0, 0, a, b, c, d]
    }

    /// This end's link-local address per RFC 4213 §3.7, `fe80::` and
    /// [`interface_id`](Self::interface_id).
    pub fn link_local(&self) -> Ipv6Addr {
        let mut octets = [0u8; 16];
        octets[..2].copy_from_slice(&[0xfe, 0x80]);
        octets[8..].copy_from_slice(&self.interface_id());
        Ipv6Addr::from(octets)
    }

    pub fn tunnel_stats(&self) -> TunnelStats {
        self.tunnel_stats
    }

    pub fn ring_stats(&self) -> RingStats {
        self.ring.borrow().stats
    }

    fn send(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let fd = self.fd.as_raw_fd();
        match send_parts(fd, &[], parts, &mut self.scratch) {
            Err(error) if is_icmp_error(&error) => {
                // An ICMP error about an earlier datagram surfaced here and
                // is now cleared: this packet was not sent yet.
                self.tunnel_stats.icmp_errors += 1;
                send_parts(fd, &[], parts, &mut self.scratch)
            }
            other => other,
        }
    }
}

impl Link for Ipv6InIpv4 {
    fn medium(&self) -> Medium {
        Medium::Ip
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn transmit(&mut self, _now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let len = super::frame_len(parts, self.mtu, &mut self.stats)?;
        let version = parts.iter().find_map(|part| part.first()).map(|b| b >> 4);
        if version != Some(6) {
            self.tunnel_stats.tx_not_ipv6 += 1;
            self.stats.dropped_unsupported += 1;
            return Err(LinkError::Unsupported);
        }
        match self.send(parts) {
            Ok(()) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += len as u64;
                Ok(())
            }
            Err(error) => {
                self.tunnel_stats.last_error = error.raw_os_error();
                Err(send_error(
                    &error,
                    len,
                    self.mtu,
                    &mut self.stats,
                    &mut self.tunnel_stats.tx_errors,
                ))
            }
        }
    }

    fn receive(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        let ring = self.ring.get_mut();
        let fd = self.fd.as_raw_fd();
        for _ in 0..MAX_REFILLS {
            while let Some(frame) = ring.pop() {
                if frame.truncated {
                    self.stats.dropped_rx_too_long += 1;
                    continue;
                }
                let check = decapsulate(frame.bytes, self.local, self.remote);
                match check {
                    Ok(packet) => {
                        if let Some(len) = super::deliver(packet, buf, &mut self.stats) {
                            return Some(len);
                        }
                    }
                    Err(discard) => discard.count(&mut self.tunnel_stats),
                }
            }
            if refill(ring, fd, &mut self.tunnel_stats) == 0 {
                return None;
            }
        }
        None
    }

    fn transmit_ring(&self) -> Option<usize> {
        None
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        None
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn next_arrival(&self) -> Option<Instant> {
        None
    }

    fn readable_fd(&self) -> Option<RawFd> {
        Some(self.as_raw_fd())
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        Some(Ipv6InIpv4::interface_id(self))
    }

    fn may_receive(&self, _now: Instant) -> bool {
        let Ok(mut ring) = self.ring.try_borrow_mut() else {
            return true;
        };
        if ring.has_frames() {
            return true;
        }
        // Errors are counted by the `receive` that follows a `true`; here a
        // pending ICMP error just means "look again".
        match ring.refill(self.fd.as_raw_fd()) {
            Ok(count) => count > 0,
            Err(error) => is_icmp_error(&error),
        }
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

/// Refills `ring`, retrying once after an ICMP error report; the number
/// of datagrams taken.
fn refill(ring: &mut RxRing, fd: RawFd, stats: &mut TunnelStats) -> usize {
    for _ in 0..2 {
        match ring.refill(fd) {
            Ok(count) => return count,
            Err(error) => {
                stats.last_error = error.raw_os_error();
                if is_icmp_error(&error) {
                    stats.icmp_errors += 1;
                    continue;
                }
                stats.rx_errors += 1;
                return 0;
            }
        }
    }
    0
}

/// Errors a raw socket reports from ICMP messages about earlier datagrams.
fn is_icmp_error(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(
            libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENOPROTOOPT
                | libc::EPROTO
        )
    )
}

/// Why a received datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Discard {
    Malformed,
    WrongProtocol,
    WrongAddress,
    NotIpv6,
}

impl Discard {
    fn count(self, stats: &mut TunnelStats) {
        match self {
            Discard::Malformed => stats.rx_malformed += 1,
            Discard::WrongProtocol => stats.rx_wrong_protocol += 1,
            Discard::WrongAddress => stats.rx_wrong_address += 1,
            Discard::NotIpv6 => stats.rx_not_ipv6 += 1,
        }
    }
}

/// The IPv6 packet inside an IPv4 datagram of protocol 41 from `remote` to
/// `local`, or why there is none.
fn decapsulate(datagram: &[u8], local: Ipv4Addr, remote: Ipv4Addr) -> Result<&[u8], Discard> {
    let header = datagram.get(..IPV4_HEADER_LEN).ok_or(Discard::Malformed)?;
    if header[0] >> 4 != 4 {
        return Err(Discard::Malformed);
    }
    let header_len = usize::from(header[0] & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    if header_len < IPV4_HEADER_LEN || total_len < header_len || total_len > datagram.len() {
        return Err(Discard::Malformed);
    }
    if header[9] != IPPROTO_IPV6_IN_IPV4 {
        return Err(Discard::WrongProtocol);
    }
    let src = Ipv4Addr::new(header[12], header[13], header[14], header[15]);
    let dst = Ipv4Addr::new(header[16], header[17], header[18], header[19]);
    if src != remote || dst != local {
        return Err(Discard::WrongAddress);
    }
    let packet = &datagram[header_len..total_len];
    if packet.first().map(|b| b >> 4) != Some(6) {
        return Err(Discard::NotIpv6);
    }
    Ok(packet)
}

/// `bind` or `connect` with an IPv4 socket address (port 0).
fn inet_call(
    fd: RawFd,
    addr: Ipv4Addr,
    call: unsafe extern "C" fn(libc::c_int, *const libc::sockaddr, libc::socklen_t) -> libc::c_int,
) -> io::Result<()> {
    // SAFETY: sockaddr_in is plain data; all zeroes is valid.
    let mut sin: libc::sockaddr_in = unsafe { mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_addr.s_addr = u32::from_ne_bytes(addr.octets());
    // SAFETY: `call` is bind or connect; `sin` is a live sockaddr_in whose
    // size is passed, which they only read; the socket is ours.
    let rc = unsafe {
        call(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    os_result(rc)
}

impl AsFd for Ipv6InIpv4 {
    /// The socket, for a runner that waits for it to become readable.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Ipv6InIpv4 {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl fmt::Debug for Ipv6InIpv4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ipv6InIpv4")
            .field("local", &self.local)
            .field("remote", &self.remote)
            .field("mtu", &self.mtu)
            .field("stats", &self.stats)
            .field("tunnel_stats", &self.tunnel_stats)
            .field("ring_stats", &self.ring_stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const REMOTE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    /// An IPv4 datagram of `protocol` from `src` to `dst` with an IHL of
    /// `words` carrying `payload`.
    fn datagram(protocol: u8, src: Ipv4Addr, dst: Ipv4Addr, words: u8, payload: &[u8]) -> Vec<u8> {
        let header_len = usize::from(words) * 4;
        // An IHL below 5 still gets the fixed header's 20 bytes.
        let mut bytes = vec![0u8; header_len.max(IPV4_HEADER_LEN)];
        bytes[0] = 0x40 | words;
        let total = (bytes.len() + payload.len()) as u16;
        bytes[2..4].copy_from_slice(&total.to_be_bytes());
        bytes[8] = 64;
        bytes[9] = protocol;
        bytes[12..16].copy_from_slice(&src.octets());
        bytes[16..20].copy_from_slice(&dst.octets());
        bytes.extend_from_slice(payload);
        bytes
    }

    #[test]
    fn the_ipv4_header_is_checked_and_stripped() {
        let ipv6 = [0x60u8, 0, 0, 0, 0, 0, 59, 64];
        let good = datagram(41, REMOTE, LOCAL, 5, &ipv6);
        assert_eq!(decapsulate(&good, LOCAL, REMOTE), Ok(&ipv6[..]));
        // Options: the payload starts after the IHL, not at 20.
        let with_options = datagram(41, REMOTE, LOCAL, 6, &ipv6);
        assert_eq!(decapsulate(&with_options, LOCAL, REMOTE), Ok(&ipv6[..]));
        // Trailing bytes past the total length are not the packet's.
        let mut padded = good.clone();
        padded.extend_from_slice(&[0xee; 6]);
        assert_eq!(decapsulate(&padded, LOCAL, REMOTE), Ok(&ipv6[..]));
    }

    #[test]
    fn anything_else_is_dropped_for_a_reason() {
        let ipv6 = [0x60u8, 0, 0, 0];
        let other = Ipv4Addr::new(198, 51, 100, 7);
        let cases = [
            (datagram(4, REMOTE, LOCAL, 5, &ipv6), Discard::WrongProtocol),
            (datagram(41, other, LOCAL, 5, &ipv6), Discard::WrongAddress),
            (datagram(41, REMOTE, other, 5, &ipv6), Discard::WrongAddress),
            (datagram(41, REMOTE, LOCAL, 5, &[0x45, 0]), Discard::NotIpv6),
            (datagram(41, REMOTE, LOCAL, 5, &[]), Discard::NotIpv6),
            (datagram(41, REMOTE, LOCAL, 4, &ipv6), Discard::Malformed),
            (vec![0x45; 12], Discard::Malformed),
            (vec![0x65; 40], Discard::Malformed),
        ];
        for (bytes, reason) in cases {
            assert_eq!(
                decapsulate(&bytes, LOCAL, REMOTE),
                Err(reason),
                "{bytes:x?}"
            );
        }
        // A total length beyond what arrived.
        let mut short = datagram(41, REMOTE, LOCAL, 5, &ipv6);
        short[2..4].copy_from_slice(&200u16.to_be_bytes());
        assert_eq!(decapsulate(&short, LOCAL, REMOTE), Err(Discard::Malformed));
    }

    #[test]
    fn configuration_is_checked_before_any_system_call() {
        let mut config = TunnelConfig::new(LOCAL, REMOTE);
        config.mtu = 1279;
        assert_eq!(
            Ipv6InIpv4::open_with(&config).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let config = TunnelConfig::new(LOCAL, Ipv4Addr::UNSPECIFIED);
        assert_eq!(
            Ipv6InIpv4::open_with(&config).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn tunnels_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Ipv6InIpv4>();
    }
}
