//! TCP and path-MTU discovery through the simulator:
//!
//! * A bulk transfer whose first full-sized segments are too big for the
//!   path recovers at once when the Packet Too Big (IPv6, RFC 8201) or
//!   Fragmentation Needed (IPv4, RFC 1191) arrives: the sender resends
//!   what the router dropped in segments of the new MSS (RFC 1191 §6.5,
//!   RFC 8201 §5.4), without waiting for the retransmission timer, without
//!   treating the drop as congestion, and without sending any byte more
//!   than once more.
//! * An ICMP error that quotes a TCP segment of no connection, or one
//!   outside the connection's SND.UNA..SND.NXT, lowers nothing (RFC 5927
//!   §7.2) and is counted; one that quotes a segment in flight does.
//!
//! host-a's link is wrapped in a
//! [`Splice`](network_support::wiretap::Splice) that records every frame
//! host-a sends and puts forged frames in front of it.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::wiretap::{Seen, Wiretap};
use network_support::{
    address_of, ethernet, host, host_mut, icmpv4_bytes, icmpv6_bytes, ipv4_packet, ipv6_packet,
    two_routers_narrow_middle, wait_for_slaac,
};
use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::congestion::CongestionControl;
use stack::socket::tcp::connection::{Connection, TcpConfig};
use stack::socket::tcp::listener::ListenerConfig;
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Repr};
use wire::icmpv6::Icmpv6Repr;
use wire::ip::IpProtocol;

const PORT: u16 = 5001;
/// The MTU of the link between the two routers: the path's narrowest.
const NARROW_MTU: usize = 1280;
/// The smallest retransmission timeout (RFC 6298 §2.4): the delay a
/// recovery left to the timer would cost.
const MIN_RTO: Duration = Duration::from_secs(1);

// ----- Connections -----------------------------------------------------------

fn mac_of(sim: &Simulator, name: &str) -> EthernetAddress {
    let h = host(sim, name);
    h.interface_mac(h.interface_id("eth0").unwrap()).unwrap()
}

/// A connection from host-a to a listener on host-b, both ends with
/// `config`: (client, server).
fn connect(sim: &mut Simulator, v6: bool, config: TcpConfig) -> (TcpHandle, TcpHandle) {
    let any: IpAddr = if v6 {
        Ipv6Addr::UNSPECIFIED.into()
    } else {
        Ipv4Addr::UNSPECIFIED.into()
    };
    let listener = host_mut(sim, "host-b")
        .tcp_listen(
            SocketAddr::new(any, PORT),
            config,
            ListenerConfig::default(),
        )
        .unwrap();
    let remote = SocketAddr::new(address_of(sim, "host-b", v6), PORT);
    let limit = Duration::from_secs(5);
    let client = blocking::connect(sim, "host-a", remote, config, limit).unwrap();
    let server = blocking::accept(sim, "host-b", listener, limit).unwrap();
    (client, server)
}

fn client(sim: &Simulator, handle: TcpHandle) -> &Connection {
    host(sim, "host-a").tcp_connection(handle).unwrap()
}

fn send_mss(sim: &Simulator, handle: TcpHandle) -> usize {
    client(sim, handle).negotiated().unwrap().send_mss
}

/// A deterministic pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(11) as u8)
        .collect()
}

/// Reads what host-b has for `server` into `got`.
fn drain(sim: &mut Simulator, server: TcpHandle, got: &mut Vec<u8>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match host_mut(sim, "host-b").tcp_recv(server, &mut buf) {
            Ok(0) | Err(TcpError::WouldBlock) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("host-b: recv failed: {e}"),
        }
    }
}

/// Sends `data` from host-a and runs until host-b has read all of it (at
/// most `limit`), returning how long that took.
fn transfer(
    sim: &mut Simulator,
    (client, server): (TcpHandle, TcpHandle),
    data: &[u8],
    limit: Duration,
) -> Duration {
    let start = sim.now();
    let mut sent = 0;
    let mut got = Vec::new();
    let done = sim.run_until_with(limit, |sim| {
        while sent < data.len() {
            match host_mut(sim, "host-a").tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("host-a: send failed: {e}"),
            }
        }
        drain(sim, server, &mut got);
        got.len() >= data.len()
    });
    assert!(done, "{} of {} bytes arrived", got.len(), data.len());
    assert!(got == data, "the bytes differ from what was sent");
    sim.now() - start
}

// ----- Recovery from Packet Too Big ------------------------------------------

/// host-a — r1 — r2 — host-b, the routers' link at 1280 bytes, the hosts'
/// at 1500: host-b offers an MSS host-a's full-sized segments exceed on
/// the path. SLAAC done, host-a's link spliced.
fn narrow_path() -> (Simulator, Wiretap) {
    let mut sim = Simulator::new(&two_routers_narrow_middle(), None).unwrap();
    wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let tap = Wiretap::splice(&mut sim, "host-a");
    (sim, tap)
}

/// How often each byte offset of `data_len` bytes from `base` was sent in
/// `segments` (data segments only, SYN and FIN aside).
fn transmissions(segments: &[Seen], base: u32, data_len: usize) -> Vec<u8> {
    let mut count = vec![0u8; data_len];
    for seg in segments {
        let start = seg.seq().wrapping_sub(base) as usize;
        for c in count.iter_mut().skip(start).take(seg.payload_len()) {
            *c += 1;
        }
    }
    count
}

/// A transfer that starts with segments too big for the path: what the
/// routers dropped is resent as soon as the error arrives, once per step
/// down the path takes (`steps`: how many different MTUs the errors
/// report), at the MTU of `narrowest`.
fn recovers_at_once(
    (mut sim, tap): (Simulator, Wiretap),
    v6: bool,
    config: TcpConfig,
    (steps, narrowest): (u64, usize),
) {
    let ends = connect(&mut sim, v6, config);
    let mss_before = send_mss(&sim, ends.0);
    let options = if config.timestamps { 12 } else { 0 };
    let header = if v6 { 40 + 20 } else { 20 + 20 } + options;
    assert_eq!(mss_before + header, 1500, "host-b offers its link's MSS");

    // A short exchange first: small segments fit the path, and the
    // window's first ACKs make the connection's cwnd its own (no longer
    // the initial window, which is counted in segments).
    transfer(&mut sim, ends, &pattern(200), Duration::from_secs(1));
    let acked = sim.run_until_with(Duration::from_secs(1), |sim| {
        client(sim, ends.0).send_queued() == 0
    });
    assert!(acked, "the exchange was acknowledged");
    let cwnd_before = client(&sim, ends.0).congestion().cwnd();
    let ssthresh_before = client(&sim, ends.0).congestion().ssthresh();

    let data = pattern(256 * 1024);
    let mark = tap.mark();
    let took = transfer(&mut sim, ends, &data, Duration::from_secs(5));
    let conn = client(&sim, ends.0);
    let counters = conn.counters();
    let cc = conn.congestion();
    let segments: Vec<Seen> = tap
        .sent_since(mark)
        .into_iter()
        .filter(|s| s.payload_len() > 0)
        .collect();
    // Nothing was outstanding: the first data segment starts the data.
    let base = segments[0].seq();
    let dropped: Vec<&Seen> = segments.iter().filter(|s| s.ip_len > narrowest).collect();
    let counts = transmissions(&segments, base, data.len());
    let context = format!(
        "{}: took {took:?}, counters {counters:?}, congestion {:?}, cwnd {} (before {cwnd_before}), \
         ssthresh {} (before {ssthresh_before}), {} segments, {} too big, send MSS {}",
        if v6 { "IPv6" } else { "IPv4" },
        cc.stats(),
        cc.cwnd(),
        cc.ssthresh(),
        segments.len(),
        dropped.len(),
        send_mss(&sim, ends.0),
    );
    eprintln!("{context}");
    assert!(!dropped.is_empty(), "no segment was too big\n{context}");
    assert_eq!(send_mss(&sim, ends.0) + header, narrowest, "{context}");
    // Resent at once, once per step: each error is about the first
    // segment too big for a router, and the resend follows it at once.
    assert_eq!(counters.path_mtu_resends, steps, "{context}");
    // No timeout: the whole transfer takes a fraction of the RTO.
    assert_eq!(counters.retransmission_timeouts, 0, "{context}");
    assert!(took < MIN_RTO / 4, "{context}");
    // Not congestion: no recovery episode, no reduction.
    assert_eq!(counters.fast_recoveries, 0, "{context}");
    assert_eq!(cc.stats().congestion_events, 0, "{context}");
    assert_eq!(cc.ssthresh(), ssthresh_before, "{context}");
    assert!(cc.cwnd() >= cwnd_before, "{context}");
    // Each byte went out once in a segment that fits the path, after one
    // try in a segment too big per step at most: nothing resent twice
    // at one size. What was resent is exactly what was dropped.
    for (offset, &count) in counts.iter().enumerate() {
        let too_big = dropped
            .iter()
            .filter(|s| (s.seq().wrapping_sub(base) as usize..).contains(&offset))
            .filter(|s| offset < s.seq().wrapping_sub(base) as usize + s.payload_len())
            .count();
        assert_eq!(count as usize, too_big + 1, "byte {offset}\n{context}");
    }
    let dropped_bytes: usize = dropped.iter().map(|s| s.payload_len()).sum();
    assert_eq!(
        counters.bytes_retransmitted as usize, dropped_bytes,
        "{context}"
    );
    // The last step's resend starts at SND.UNA with a segment sized for
    // the path, a few milliseconds (the routers' round trips) after the
    // first segment too big, not an RTO.
    let first_fit = segments.iter().find(|s| s.ip_len == narrowest).unwrap();
    assert_eq!(first_fit.seq(), base, "{context}");
    let waited = first_fit.at - dropped[0].at;
    assert!(waited < Duration::from_millis(10), "{waited:?}\n{context}");
}

#[test]
fn a_transfer_recovers_at_once_from_packet_too_big() {
    let one_step = (1, NARROW_MTU);
    recovers_at_once(narrow_path(), true, TcpConfig::default(), one_step);
}

#[test]
fn a_transfer_recovers_at_once_from_fragmentation_needed() {
    let one_step = (1, NARROW_MTU);
    recovers_at_once(narrow_path(), false, TcpConfig::default(), one_step);
}

#[test]
fn a_transfer_without_sack_or_timestamps_recovers_at_once_too() {
    let config = TcpConfig {
        sack: false,
        timestamps: false,
        ..TcpConfig::default()
    };
    let one_step = (1, NARROW_MTU);
    recovers_at_once(narrow_path(), true, config, one_step);
    recovers_at_once(narrow_path(), false, config, one_step);
}

/// host-a —1500— r1 —1400— r2 —1280— r3 —1500— host-b, IPv4 only: the
/// segments resent to fit 1400 bytes are too big for the next router.
fn stairs() -> String {
    // (name, [(interface, MTU if not 1500, address)], [(to, via)])
    type Router = (
        &'static str,
        [(&'static str, Option<u16>, &'static str); 2],
        Vec<(&'static str, &'static str)>,
    );
    let routers: [Router; 3] = [
        (
            "r1",
            [
                ("eth0", None, "192.0.2.1/24"),
                ("eth1", Some(1400), "203.0.113.1/24"),
            ],
            vec![("0.0.0.0/0", "203.0.113.2")],
        ),
        (
            "r2",
            [
                ("eth0", Some(1400), "203.0.113.2/24"),
                ("eth1", Some(1280), "198.18.0.1/24"),
            ],
            vec![
                ("192.0.2.0/24", "203.0.113.1"),
                ("198.51.100.0/24", "198.18.0.2"),
            ],
        ),
        (
            "r3",
            [
                ("eth0", Some(1280), "198.18.0.2/24"),
                ("eth1", None, "198.51.100.1/24"),
            ],
            vec![("0.0.0.0/0", "198.18.0.1")],
        ),
    ];
    let wires = [
        ("host-a:eth0", "r1:eth0", "100us"),
        ("r1:eth1", "r2:eth0", "1ms"),
        ("r2:eth1", "r3:eth0", "1ms"),
        ("r3:eth1", "host-b:eth0", "100us"),
    ];
    // (name, address, gateway)
    let hosts = [
        ("host-a", "192.0.2.10/24", "192.0.2.1"),
        ("host-b", "198.51.100.10/24", "198.51.100.1"),
    ];
    let mut text = String::from("\nseed = 3\n");
    for (name, ipv4, via) in hosts {
        text += &format!(
            "\n[[host]]\nname = \"{name}\"\n[[host.interface]]\nname = \"eth0\"\n\
             ipv4 = \"{ipv4}\"\n[[host.route]]\nto = \"0.0.0.0/0\"\nvia = \"{via}\"\n"
        );
    }
    for (name, interfaces, routes) in routers {
        text += &format!("\n[[router]]\nname = \"{name}\"\n");
        for (interface, mtu, ipv4) in interfaces {
            let mtu = mtu.map(|m| format!("mtu = {m}\n")).unwrap_or_default();
            text +=
                &format!("[[router.interface]]\nname = \"{interface}\"\n{mtu}ipv4 = \"{ipv4}\"\n");
        }
        for (to, via) in routes {
            text += &format!("[[router.route]]\nto = \"{to}\"\nvia = \"{via}\"\n");
        }
    }
    for (a, b, delay) in wires {
        text += &format!("\n[[wire]]\na = \"{a}\"\nb = \"{b}\"\ndelay = \"{delay}\"\n");
    }
    text
}

#[test]
fn a_path_mtu_found_in_two_steps_is_resent_for_at_each() {
    let mut sim = Simulator::new(&Topology::from_toml_str(&stairs()).unwrap(), None).unwrap();
    sim.run_for(Duration::from_millis(10));
    let tap = Wiretap::splice(&mut sim, "host-a");
    recovers_at_once((sim, tap), false, TcpConfig::default(), (2, NARROW_MTU));
}

// ----- Errors that quote no live segment -------------------------------------

/// The default network (host-a — router — host-b, 1500 bytes everywhere),
/// SLAAC done, host-a's link spliced, and a connection from host-a to
/// host-b with data in flight: (simulator, tap, ends, the last data
/// segment host-a sent, the first).
struct InFlight {
    sim: Simulator,
    tap: Wiretap,
    v6: bool,
    ends: (TcpHandle, TcpHandle),
    first: Seen,
    last: Seen,
    data: Vec<u8>,
}

fn in_flight(v6: bool) -> InFlight {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let tap = Wiretap::splice(&mut sim, "host-a");
    let ends = connect(&mut sim, v6, TcpConfig::default());
    let data = pattern(64 * 1024);
    let mark = tap.mark();
    let taken = host_mut(&mut sim, "host-a")
        .tcp_send(ends.0, &data)
        .unwrap();
    assert_eq!(taken, data.len());
    // Until the first flight left: its ACKs are at least a round trip
    // away, so all of it is in flight.
    let sent = sim.run_until_with(Duration::from_millis(10), |_| {
        tap.sent_since(mark).iter().any(|s| s.payload_len() > 0)
    });
    assert!(sent, "no data left host-a");
    let flight: Vec<Seen> = tap
        .sent_since(mark)
        .into_iter()
        .filter(|s| s.payload_len() > 0)
        .collect();
    InFlight {
        sim,
        tap,
        v6,
        ends,
        first: flight[0].clone(),
        last: flight[flight.len() - 1].clone(),
        data,
    }
}

impl InFlight {
    /// An ICMP error from the router to host-a saying `mtu` about
    /// `quote` (an IP packet host-a sent, or a forgery of one): Packet
    /// Too Big quoting all of it, or Fragmentation Needed quoting its
    /// header and the first 8 bytes of its data (RFC 792's minimum).
    fn error(&self, quote: &[u8], mtu: u16) -> Vec<u8> {
        let router = mac_of(&self.sim, "router");
        let a = mac_of(&self.sim, "host-a");
        let from = address_of(&self.sim, "host-a", self.v6);
        match from {
            IpAddr::V6(to) => {
                let router_ip: Ipv6Addr = "2001:db8:a::1".parse().unwrap();
                let invoking = &quote[..quote.len().min(1232)];
                let repr = Icmpv6Repr::PacketTooBig {
                    mtu: u32::from(mtu),
                    invoking,
                };
                let icmp = icmpv6_bytes(&repr, router_ip, to);
                let ip = ipv6_packet(router_ip, to, IpProtocol::Icmpv6, 64, &icmp);
                ethernet(router, a, EtherType::Ipv6, &ip)
            }
            IpAddr::V4(to) => {
                let router_ip: Ipv4Addr = "192.0.2.1".parse().unwrap();
                let header_len = usize::from(quote[0] & 0x0f) * 4;
                let repr = Icmpv4Repr::DstUnreachable {
                    reason: Icmpv4DstUnreachable::FragRequired,
                    next_hop_mtu: mtu,
                    invoking: &quote[..quote.len().min(header_len + 8)],
                };
                let icmp = icmpv4_bytes(&repr);
                let ip = ipv4_packet(router_ip, to, IpProtocol::Icmp, 0x77, 0, false, 64, &icmp);
                ethernet(router, a, EtherType::Ipv4, &ip)
            }
        }
    }

    /// Where the TCP header starts in a packet host-a sent.
    fn tcp_at(&self) -> usize {
        if self.v6 {
            wire::ipv6::HEADER_LEN
        } else {
            usize::from(self.last.packet[0] & 0x0f) * 4
        }
    }

    /// The last data segment sent, with its destination port or sequence
    /// number replaced.
    fn forged(&self, dst_port: Option<u16>, seq: Option<u32>) -> Vec<u8> {
        let mut quote = self.last.packet.clone();
        let at = self.tcp_at();
        if let Some(port) = dst_port {
            quote[at + 2..at + 4].copy_from_slice(&port.to_be_bytes());
        }
        if let Some(seq) = seq {
            quote[at + 4..at + 8].copy_from_slice(&seq.to_be_bytes());
        }
        quote
    }

    /// Hands host-a `frames` at once and lets it take them.
    fn inject(&mut self, frames: Vec<Vec<u8>>) {
        for frame in frames {
            self.tap.inject(frame);
        }
        self.sim.run_for(Duration::ZERO);
    }

    fn path_mtu(&self) -> u32 {
        let b = address_of(&self.sim, "host-b", self.v6).to_string();
        let state = host(&self.sim, "host-a").state(self.sim.now());
        let destinations = if self.v6 {
            &state.ipv6_destinations
        } else {
            &state.ipv4_destinations
        };
        destinations
            .iter()
            .find(|d| d.destination == b)
            .map(|d| d.path_mtu)
            .expect("a destination cache entry for host-b")
    }

    fn drops(&self, reason: &str) -> u64 {
        host(&self.sim, "host-a")
            .drops()
            .get(reason)
            .copied()
            .unwrap_or(0)
    }

    /// The rest of the transfer arrives whole.
    fn finish(mut self) {
        let mut got = Vec::new();
        let server = self.ends.1;
        let done = self.sim.run_until_with(Duration::from_secs(5), |sim| {
            drain(sim, server, &mut got);
            got.len() >= 64 * 1024
        });
        assert!(done && got == self.data, "{} bytes arrived", got.len());
    }
}

/// RFC 5927 §7.2: errors quoting a TCP segment of no connection, one
/// below SND.UNA or one not yet sent change nothing and are counted;
/// the same error quoting the segment in flight lowers the path MTU and
/// the MSS, and the connection resends.
fn errors_must_quote_a_segment_in_flight(v6: bool) {
    let mut f = in_flight(v6);
    let mss = send_mss(&f.sim, f.ends.0);
    let mtu: u16 = if v6 { 1280 } else { 1200 };
    assert_eq!(f.path_mtu(), 1500);
    let snd_nxt = f.last.seq().wrapping_add(f.last.payload_len() as u32);
    let forgeries = vec![
        // Another port: no such connection.
        f.error(&f.forged(Some(PORT + 1), None), mtu),
        // Already acknowledged: our SYN's sequence number.
        f.error(&f.forged(None, Some(f.first.seq().wrapping_sub(1))), mtu),
        // Not sent yet: at SND.NXT and far beyond it.
        f.error(&f.forged(None, Some(snd_nxt)), mtu),
        f.error(&f.forged(None, Some(snd_nxt.wrapping_add(1 << 20))), mtu),
    ];
    let count = forgeries.len() as u64;
    f.inject(forgeries);
    let context = format!("{:?}", host(&f.sim, "host-a").drops());
    assert_eq!(f.drops("icmp_pmtu_unmatched"), count, "{context}");
    assert_eq!(f.path_mtu(), 1500, "the destination's path MTU stays");
    assert_eq!(send_mss(&f.sim, f.ends.0), mss, "the MSS stays");
    assert_eq!(client(&f.sim, f.ends.0).counters().path_mtu_resends, 0);

    // The error about the segment in flight is taken.
    let genuine = f.error(&f.last.packet.clone(), mtu);
    f.inject(vec![genuine]);
    assert_eq!(f.drops("icmp_pmtu_unmatched"), count);
    assert_eq!(f.path_mtu(), u32::from(mtu));
    let header = if v6 { 40 + 20 + 12 } else { 20 + 20 + 12 };
    assert_eq!(send_mss(&f.sim, f.ends.0) + header, usize::from(mtu));
    assert_eq!(client(&f.sim, f.ends.0).counters().path_mtu_resends, 1);
    f.finish();
}

#[test]
fn a_packet_too_big_must_quote_a_segment_in_flight() {
    errors_must_quote_a_segment_in_flight(true);
}

#[test]
fn a_fragmentation_needed_must_quote_a_segment_in_flight() {
    errors_must_quote_a_segment_in_flight(false);
}

/// An error about a UDP datagram lowers the destination's path MTU for
/// every protocol (RFC 8201 §5.2): the connection's MSS follows, but it
/// resends nothing until an error about one of its own segments says they
/// were dropped (RFC 1191 §6.5: "only for the specific connection").
fn an_error_about_udp_lowers_the_mss_and_one_about_tcp_resends(v6: bool) {
    let mut f = in_flight(v6);
    let mtu: u16 = if v6 { 1280 } else { 1200 };
    let a = address_of(&f.sim, "host-a", v6);
    let b = address_of(&f.sim, "host-b", v6);
    let udp = network_support::udp_datagram(
        SocketAddr::new(a, 40_000),
        SocketAddr::new(b, 9),
        &pattern(1400),
    );
    let quote = match (a, b) {
        (IpAddr::V6(a), IpAddr::V6(b)) => ipv6_packet(a, b, IpProtocol::Udp, 64, &udp),
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            ipv4_packet(a, b, IpProtocol::Udp, 0x99, 0, false, 64, &udp)
        }
        _ => unreachable!(),
    };
    let error = f.error(&quote, mtu);
    f.inject(vec![error]);
    assert_eq!(f.path_mtu(), u32::from(mtu));
    assert_eq!(f.drops("icmp_pmtu_unmatched"), 0);
    // The MSS follows at the connection's next output.
    let header = if v6 { 40 + 20 + 12 } else { 20 + 20 + 12 };
    assert_eq!(send_mss(&f.sim, f.ends.0) + header, usize::from(mtu));
    assert_eq!(client(&f.sim, f.ends.0).counters().path_mtu_resends, 0);
    // Then the error about its own segment, sent at the old size.
    let genuine = f.error(&f.last.packet.clone(), mtu);
    f.inject(vec![genuine.clone()]);
    assert_eq!(client(&f.sim, f.ends.0).counters().path_mtu_resends, 1);
    // Another error about the same flight resends nothing more.
    f.inject(vec![genuine]);
    assert_eq!(client(&f.sim, f.ends.0).counters().path_mtu_resends, 1);
    f.finish();
}

#[test]
fn an_error_about_udp_lowers_the_mss_and_one_about_tcp_resends_v6() {
    an_error_about_udp_lowers_the_mss_and_one_about_tcp_resends(true);
}

#[test]
fn an_error_about_udp_lowers_the_mss_and_one_about_tcp_resends_v4() {
    an_error_about_udp_lowers_the_mss_and_one_about_tcp_resends(false);
}
