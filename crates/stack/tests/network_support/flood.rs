//! Floods for the memory tests (`memory_flood.rs`, `memory_soak.rs`): a
//! link wrapper that feeds a host forged frames without recording what it
//! sends (a recording tap would itself grow with the flood and spoil the
//! measurement), the attack mixes as frames, and the resident set size of
//! this process.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};

use stack::phy::{Link, LinkError, LinkStats, Loopback, Medium};
use stack::runner::Simulator;
use stack::socket::tcp::bare_header;
use stack::socket::tcp::seq::Seq;
use stack::time::Instant;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};

use super::{ethernet, host_mut, ipv4_packet, ipv6_packet};

/// This process's resident set size in KiB (`VmRSS` of
/// `/proc/self/status`), 0 where there is none.
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Shared {
    inject: VecDeque<Vec<u8>>,
    sent: u64,
}

/// The test's side of an [`Injector`].
#[derive(Clone, Default)]
pub struct Feed(Arc<Mutex<Shared>>);

impl Feed {
    /// Wraps `name`'s eth0 in an [`Injector`] and returns its feed.
    pub fn splice(sim: &mut Simulator, name: &str) -> Feed {
        let h = host_mut(sim, name);
        let id = h.interface_id("eth0").unwrap();
        let iface = h.interface_mut(id).unwrap();
        let inner = std::mem::replace(&mut iface.link, Box::new(Loopback::default()));
        let feed = Feed::default();
        iface.link = Box::new(Injector {
            inner,
            feed: feed.clone(),
        });
        feed
    }

    /// Hands `frame` to the host at its next receive.
    pub fn push(&self, frame: Vec<u8>) {
        self.0.lock().unwrap().inject.push_back(frame);
    }

    /// Frames the host transmitted so far.
    pub fn sent(&self) -> u64 {
        self.0.lock().unwrap().sent
    }
}

/// A link that puts the feed's frames in front of the wire's and counts
/// what the host sends; everything else is the inner link's.
pub struct Injector {
    inner: Box<dyn Link + Send>,
    feed: Feed,
}

impl Link for Injector {
    fn medium(&self) -> Medium {
        self.inner.medium()
    }

    fn mtu(&self) -> usize {
        self.inner.mtu()
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.feed.0.lock().unwrap().sent += 1;
        self.inner.transmit(now, parts)
    }

    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        self.inner.transmitted(now, parts);
    }

    fn flush(&mut self, now: Instant) {
        self.inner.flush(now);
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let frame = self.feed.0.lock().unwrap().inject.pop_front();
        if let Some(frame) = frame {
            let n = frame.len().min(buf.len());
            buf[..n].copy_from_slice(&frame[..n]);
            return Some(n);
        }
        self.inner.receive(now, buf)
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        self.inner.transmit_complete_at()
    }

    fn transmit_ring(&self) -> Option<usize> {
        self.inner.transmit_ring()
    }

    fn next_arrival(&self) -> Option<Instant> {
        if !self.feed.0.lock().unwrap().inject.is_empty() {
            return Some(Instant::ZERO);
        }
        self.inner.next_arrival()
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn may_receive(&self, now: Instant) -> bool {
        !self.feed.0.lock().unwrap().inject.is_empty() || self.inner.may_receive(now)
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        self.inner.interface_id()
    }

    fn readable_fd(&self) -> Option<RawFd> {
        self.inner.readable_fd()
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
}

/// xorshift64: a seeded, repeatable stream.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A TCP segment in an Ethernet frame from `src_mac` to `dst_mac`,
/// checksums filled.
pub fn tcp_frame(
    (src_mac, dst_mac): (EthernetAddress, EthernetAddress),
    src: SocketAddr,
    dst: SocketAddr,
    repr: &TcpRepr,
    payload: &[u8],
) -> Vec<u8> {
    let mut repr = *repr;
    repr.payload_len = payload.len();
    let mut tcp = vec![0u8; repr.buffer_len(payload.len())];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut tcp[..]),
        &src.ip(),
        &dst.ip(),
        payload.len(),
        |p| p.copy_from_slice(payload),
        ChecksumMode::Full,
    )
    .expect("emit TCP");
    match (src.ip(), dst.ip()) {
        (IpAddr::V6(s), IpAddr::V6(d)) => ethernet(
            src_mac,
            dst_mac,
            EtherType::Ipv6,
            &ipv6_packet(s, d, IpProtocol::Tcp, 64, &tcp),
        ),
        (IpAddr::V4(s), IpAddr::V4(d)) => ethernet(
            src_mac,
            dst_mac,
            EtherType::Ipv4,
            &ipv4_packet(s, d, IpProtocol::Tcp, 0x4242, 0, false, 64, &tcp),
        ),
        _ => unreachable!("mixed families"),
    }
}

/// Where a SYN flood aims and what it may claim to come from.
pub struct Target {
    /// The victim's MAC and addresses, and the port it listens on.
    pub mac: EthernetAddress,
    pub v4: Ipv4Addr,
    pub v6: Ipv6Addr,
    pub port: u16,
    /// The victim's on-link prefixes (/24 and /64): random sources in them
    /// must be resolved before a SYN-ACK can leave.
    pub net4: Ipv4Addr,
    pub net6: Ipv6Addr,
    /// One resolvable neighbour of each family (it answers SYN-ACKs with
    /// resets), and its MAC.
    pub neighbor_mac: EthernetAddress,
    pub neighbor4: Ipv4Addr,
    pub neighbor6: Ipv6Addr,
}

/// The SYN flood of issue 23, item 5, in a repeatable order: 6000 SYNs
/// from random on-link sources (half IPv4, half IPv6, each from a random
/// MAC), 4000 from the IPv6 neighbour and 4000 from the IPv4 one (random
/// ports), interleaved. Each SYN offers MSS 1460, window scaling and SACK.
pub fn syn_flood_mix(target: &Target, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut frames = Vec::with_capacity(14_000);
    let (mut on_link, mut from6, mut from4) = (6000u32, 4000u32, 4000u32);
    while on_link + from6 + from4 > 0 {
        let r = rng.next();
        let pick = r % u64::from(on_link + from6 + from4);
        let port = 1024 + ((r >> 16) % 60_000) as u16;
        let (src_mac, src, dst) = if pick < u64::from(on_link) {
            on_link -= 1;
            let v6 = !on_link.is_multiple_of(2);
            let (mac, src) = on_link_source(target, rng.next(), v6);
            let dst = if v6 {
                IpAddr::V6(target.v6)
            } else {
                IpAddr::V4(target.v4)
            };
            (mac, src, dst)
        } else if pick < u64::from(on_link + from6) {
            from6 -= 1;
            (
                target.neighbor_mac,
                IpAddr::V6(target.neighbor6),
                IpAddr::V6(target.v6),
            )
        } else {
            from4 -= 1;
            (
                target.neighbor_mac,
                IpAddr::V4(target.neighbor4),
                IpAddr::V4(target.v4),
            )
        };
        let src = SocketAddr::new(src, port);
        let dst = SocketAddr::new(dst, target.port);
        frames.push(tcp_frame(
            (src_mac, target.mac),
            src,
            dst,
            &flood_syn(src, dst, (r >> 8) as u32),
            &[],
        ));
    }
    frames
}

fn flood_syn(src: SocketAddr, dst: SocketAddr, isn: u32) -> TcpRepr {
    let mut syn = bare_header(src.port(), dst.port(), Seq(isn), None, TcpFlags::SYN);
    syn.window_len = 65535;
    syn.max_seg_size = Some(1460);
    syn.window_scale = Some(7);
    syn.sack_permitted = true;
    syn
}

/// The default network (host-a — router — host-b) with host-b listening
/// on [`FloodLab::PORT`] in both families and its eth0 fed by a [`Feed`]; the
/// router is host-b's resolvable neighbour.
pub struct FloodLab {
    pub sim: Simulator,
    pub feed: Feed,
    pub target: Target,
    pub listeners: [stack::iface::host::TcpHandle; 2],
}

impl FloodLab {
    pub const PORT: u16 = 7;

    pub fn start() -> FloodLab {
        use std::time::Duration;
        let mut sim = Simulator::new(&stack::topology::Topology::default_network(), None).unwrap();
        let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
            ["host-a", "host-b"]
                .iter()
                .all(|n| !super::host(sim, n).global_ipv6_addresses().is_empty())
        });
        assert!(ready, "SLAAC did not finish");
        let feed = Feed::splice(&mut sim, "host-b");
        let mac = |sim: &Simulator, name: &str, iface: &str| {
            let h = super::host(sim, name);
            h.interface_mac(h.interface_id(iface).unwrap()).unwrap()
        };
        let IpAddr::V4(v4) = super::address_of(&sim, "host-b", false) else {
            unreachable!()
        };
        let IpAddr::V6(v6) = super::address_of(&sim, "host-b", true) else {
            unreachable!()
        };
        let target = Target {
            mac: mac(&sim, "host-b", "eth0"),
            v4,
            v6,
            port: Self::PORT,
            net4: Ipv4Addr::new(198, 51, 100, 0),
            net6: "2001:db8:b::".parse().unwrap(),
            neighbor_mac: mac(&sim, "router", "eth1"),
            neighbor4: Ipv4Addr::new(198, 51, 100, 1),
            neighbor6: "2001:db8:b::1".parse().unwrap(),
        };
        let h = host_mut(&mut sim, "host-b");
        let listen = |h: &mut stack::iface::host::Host, ip: IpAddr| {
            h.tcp_listen(
                SocketAddr::new(ip, Self::PORT),
                stack::socket::tcp::connection::TcpConfig::default(),
                stack::socket::tcp::listener::ListenerConfig::default(),
            )
            .unwrap()
        };
        let listeners = [
            listen(h, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            listen(h, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        ];
        FloodLab {
            sim,
            feed,
            target,
            listeners,
        }
    }

    /// Feeds `frames` to host-b, `per_ms` each millisecond of virtual
    /// time; returns the largest resident set size seen (sampled every
    /// 100 ms) in KiB.
    pub fn flood(&mut self, frames: Vec<Vec<u8>>, per_ms: usize) -> u64 {
        use std::time::Duration;
        let mut peak = rss_kib();
        let mut frames = frames.into_iter().peekable();
        let mut ms = 0usize;
        while frames.peek().is_some() {
            for frame in frames.by_ref().take(per_ms.max(1)) {
                self.feed.push(frame);
            }
            ms += 1;
            self.sim.run_for(Duration::from_millis(1));
            self.accept_and_close();
            if ms.is_multiple_of(100) {
                peak = peak.max(rss_kib());
            }
        }
        peak.max(rss_kib())
    }

    /// Lets `duration` of virtual time pass; returns the resident set
    /// size at its end and the largest seen on the way, in KiB.
    pub fn quiet(&mut self, duration: std::time::Duration) -> (u64, u64) {
        use std::time::Duration;
        let mut peak = rss_kib();
        let end = self.sim.now() + duration;
        while self.sim.now() < end {
            self.sim.run_for(Duration::from_millis(100));
            self.accept_and_close();
            peak = peak.max(rss_kib());
        }
        (rss_kib(), peak)
    }

    /// Connections that completed a handshake (a forged ACK on a cookie)
    /// are taken and closed, as a server would.
    fn accept_and_close(&mut self) {
        let h = host_mut(&mut self.sim, "host-b");
        for listener in self.listeners {
            while let Ok(conn) = h.tcp_accept(listener) {
                let _ = h.tcp_close(conn);
            }
        }
    }

    /// host-a opens a connection to host-b's port in each family, sends
    /// `len` bytes and closes; host-b takes them all. Panics if the host
    /// does not serve within 20 s of virtual time.
    pub fn serve(&mut self, len: usize) {
        use stack::runner::blocking;
        use std::time::Duration;
        let limit = Duration::from_secs(20);
        for (family, ip) in [
            (0, IpAddr::V6(self.target.v6)),
            (1, IpAddr::V4(self.target.v4)),
        ] {
            let remote = SocketAddr::new(ip, Self::PORT);
            let config = stack::socket::tcp::connection::TcpConfig::default();
            let client = blocking::connect(&mut self.sim, "host-a", remote, config, limit)
                .expect("host-b accepts a connection");
            let server = blocking::accept(&mut self.sim, "host-b", self.listeners[family], limit)
                .expect("host-b's listener hands it over");
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + family) as u8).collect();
            blocking::write_all(&mut self.sim, "host-a", client, &data, limit).expect("write");
            host_mut(&mut self.sim, "host-a")
                .tcp_shutdown(client)
                .expect("shutdown");
            let got = blocking::read_to_end(&mut self.sim, "host-b", server, limit).expect("read");
            assert!(got == data, "{} of {len} bytes arrived intact", got.len());
            let _ = host_mut(&mut self.sim, "host-b").tcp_close(server);
            let _ = host_mut(&mut self.sim, "host-a").tcp_close(client);
        }
    }
}

/// A random on-link source of either family, with a random MAC.
fn on_link_source(target: &Target, r: u64, v6: bool) -> (EthernetAddress, IpAddr) {
    let b = r.to_be_bytes();
    let mac = EthernetAddress([(b[0] & 0xfe) | 0x02, b[1], b[2], b[3], b[4], b[5]]);
    if v6 {
        let net = target.net6.segments();
        let ip = Ipv6Addr::new(
            net[0],
            net[1],
            net[2],
            net[3],
            (r >> 48) as u16 | 0x100,
            (r >> 32) as u16,
            (r >> 16) as u16,
            r as u16 | 0x8000,
        );
        (mac, IpAddr::V6(ip))
    } else {
        let mut o = target.net4.octets();
        let host = 2 + ((r >> 40) % 250) as u8;
        o[3] = if host == target.v4.octets()[3] {
            251
        } else {
            host
        };
        (mac, IpAddr::V4(Ipv4Addr::from(o)))
    }
}

/// The other attacks of the soak, about 9000 frames in a repeatable
/// order: first fragments that are never completed (both families),
/// UDP to closed ports from random on-link sources, SYN+FIN, SYNs with
/// MSS 1, echo requests and UDP from the subnet's broadcast address, UDP
/// to it, and frames of random bytes.
pub fn other_attacks(target: &Target, rng: &mut Rng) -> Vec<Vec<u8>> {
    use super::{fragment6, udp_datagram};
    let mut frames = Vec::with_capacity(9000);
    let broadcast4 = Ipv4Addr::new(
        target.net4.octets()[0],
        target.net4.octets()[1],
        target.net4.octets()[2],
        255,
    );
    for i in 0..9000u32 {
        let r = rng.next();
        let v6 = r & 1 == 0;
        let (mac, src) = on_link_source(target, rng.next(), v6);
        let dst = if v6 {
            IpAddr::V6(target.v6)
        } else {
            IpAddr::V4(target.v4)
        };
        let port = 1024 + ((r >> 8) % 60_000) as u16;
        let from = SocketAddr::new(src, port);
        let to = SocketAddr::new(dst, target.port);
        let frame = match i % 9 {
            // A first fragment of a datagram that never completes.
            0 | 1 => match (src, dst) {
                (IpAddr::V6(s), IpAddr::V6(d)) => {
                    let body = fragment6(r as u32, 0, true, IpProtocol::Udp, &[0x11; 512]);
                    let packet = ipv6_packet(s, d, IpProtocol::Ipv6Frag, 64, &body);
                    ethernet(mac, target.mac, EtherType::Ipv6, &packet)
                }
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    let packet =
                        ipv4_packet(s, d, IpProtocol::Udp, r as u16, 0, true, 64, &[0x11; 512]);
                    ethernet(mac, target.mac, EtherType::Ipv4, &packet)
                }
                _ => unreachable!(),
            },
            // UDP to a closed port: a Port Unreachable to resolve.
            2 => {
                let closed = SocketAddr::new(dst, 40_000 + (r % 1000) as u16);
                let datagram = udp_datagram(from, closed, &[0x22; 64]);
                match (src, dst) {
                    (IpAddr::V6(s), IpAddr::V6(d)) => ethernet(
                        mac,
                        target.mac,
                        EtherType::Ipv6,
                        &ipv6_packet(s, d, IpProtocol::Udp, 64, &datagram),
                    ),
                    (IpAddr::V4(s), IpAddr::V4(d)) => ethernet(
                        mac,
                        target.mac,
                        EtherType::Ipv4,
                        &ipv4_packet(s, d, IpProtocol::Udp, 1, 0, false, 64, &datagram),
                    ),
                    _ => unreachable!(),
                }
            }
            3 => {
                let mut syn = flood_syn(from, to, r as u32);
                syn.flags = TcpFlags::SYN | TcpFlags::FIN;
                tcp_frame((mac, target.mac), from, to, &syn, &[])
            }
            4 => {
                let mut syn = flood_syn(from, to, r as u32);
                syn.max_seg_size = Some(1);
                tcp_frame((mac, target.mac), from, to, &syn, &[])
            }
            // From the directed broadcast, to the host: an echo request.
            5 => {
                let echo = [8, 0, 0xf7, 0xfe, 0, 1, 0, 0];
                let packet = ipv4_packet(
                    broadcast4,
                    target.v4,
                    IpProtocol::Icmp,
                    2,
                    0,
                    false,
                    64,
                    &echo,
                );
                ethernet(mac, target.mac, EtherType::Ipv4, &packet)
            }
            // To the directed broadcast in a unicast frame, closed port.
            6 => {
                let (_, IpAddr::V4(s)) = on_link_source(target, r, false) else {
                    unreachable!()
                };
                let datagram = udp_datagram(
                    SocketAddr::new(IpAddr::V4(s), port),
                    SocketAddr::new(IpAddr::V4(broadcast4), 40_000),
                    &[0x33; 32],
                );
                let packet =
                    ipv4_packet(s, broadcast4, IpProtocol::Udp, 3, 0, false, 64, &datagram);
                ethernet(mac, target.mac, EtherType::Ipv4, &packet)
            }
            // Random bytes behind an IP EtherType.
            _ => {
                let len = 20 + (r % 1400) as usize;
                let mut payload = Vec::with_capacity(len);
                while payload.len() < len {
                    payload.extend_from_slice(&rng.next().to_le_bytes());
                }
                payload.truncate(len);
                let ethertype = if v6 { EtherType::Ipv6 } else { EtherType::Ipv4 };
                ethernet(mac, target.mac, ethertype, &payload)
            }
        };
        frames.push(frame);
    }
    frames
}
