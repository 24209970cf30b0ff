//! TCP handshake corner cases and attacks, through the hosts of the
//! default network (host-a — router — host-b): simultaneous open through
//! the socket API, the fields of the RST that refuses a SYN, recovery from
//! a half-open connection after the server restarts, RFC 5961's defences
//! against blind in-window RST, SYN and data injection (with the challenge
//! ACK rate limit), and a SYN flood against a busy listener.
//!
//! Forged segments are put in front of host-b as if they had arrived on
//! its wire (from the router, as an off-path attacker's would), and every
//! frame a host sends is recorded, by wrapping the host's link in a
//! [`Splice`](network_support::wiretap::Splice).

use crate::network_support;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::wiretap::{Mark, Seen, Wiretap};
use network_support::{address_of, ethernet, host, host_mut, ipv4_packet, ipv6_packet, warm_up};
use stack::iface::host::{Host, HostConfig, InterfaceConfig, StaticRoute, TcpError, TcpHandle};
use stack::phy::Loopback;
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::bare_header;
use stack::socket::tcp::connection::{ConnectionError, TcpConfig};
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::tcp::seq::Seq;
use stack::socket::tcp::state::State;
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};

const PORT: u16 = 5001;
/// TcpConfig's default receive buffer: the window host-b offers.
const WINDOW: u32 = 256 * 1024;

/// A segment header from `src` to `dst`.
fn header(
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: Option<u32>,
    flags: TcpFlags,
) -> TcpRepr {
    let mut repr = bare_header(src.port(), dst.port(), Seq(seq), ack.map(Seq), flags);
    repr.window_len = 65535;
    repr
}

/// An Ethernet frame carrying `repr` and `payload` from `src` to `dst`,
/// checksums filled.
fn frame(
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
            &ipv6_packet(s, d, IpProtocol::Tcp, 60, &tcp),
        ),
        (IpAddr::V4(s), IpAddr::V4(d)) => ethernet(
            src_mac,
            dst_mac,
            EtherType::Ipv4,
            &ipv4_packet(s, d, IpProtocol::Tcp, 0x4242, 0, false, 60, &tcp),
        ),
        _ => unreachable!("mixed families"),
    }
}

// ----- The network ---------------------------------------------------------

/// The default network once SLAAC has given both hosts a global address,
/// with both hosts' links spliced.
fn network() -> (Simulator, Wiretap, Wiretap) {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !host(sim, n).global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    let a = Wiretap::splice(&mut sim, "host-a");
    let b = Wiretap::splice(&mut sim, "host-b");
    (sim, a, b)
}

fn mac_of(sim: &Simulator, name: &str, interface: &str) -> EthernetAddress {
    let h = host(sim, name);
    h.interface_mac(h.interface_id(interface).unwrap()).unwrap()
}

fn any(v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        "0.0.0.0".parse().unwrap()
    }
}

fn listen(sim: &mut Simulator, name: &str, v6: bool) -> TcpHandle {
    host_mut(sim, name)
        .tcp_listen(
            SocketAddr::new(any(v6), PORT),
            TcpConfig::default(),
            ListenerConfig::default(),
        )
        .unwrap()
}

/// Writes all of `data` and reads until `expect` bytes came back on the
/// other end; returns them.
fn send_and_receive(
    sim: &mut Simulator,
    (from, tx): (&str, TcpHandle),
    (to, rx): (&str, TcpHandle),
    data: &[u8],
) -> Vec<u8> {
    blocking::write_all(sim, from, tx, data, Duration::from_secs(10)).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let done = sim.run_until_with(Duration::from_secs(10), |sim| {
        loop {
            match host_mut(sim, to).tcp_recv(rx, &mut buf) {
                Ok(0) | Err(TcpError::WouldBlock) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{to}: recv failed: {e}"),
            }
        }
        got.len() >= data.len()
    });
    assert!(done, "{} of {} bytes arrived", got.len(), data.len());
    got
}

/// A deterministic pattern.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(9) as u8 ^ seed)
        .collect()
}

/// An established connection from host-a to a listener on host-b, idle,
/// with everything needed to forge segments on its four-tuple.
struct Established {
    sim: Simulator,
    tap_a: Wiretap,
    tap_b: Wiretap,
    listener: TcpHandle,
    client: TcpHandle,
    server: TcpHandle,
    /// host-a's end of the connection, and host-b's.
    a: SocketAddr,
    b: SocketAddr,
    /// Forged frames for host-b come from the router's MAC.
    macs_to_b: (EthernetAddress, EthernetAddress),
}

impl Established {
    fn new(v6: bool) -> Self {
        let (mut sim, tap_a, tap_b) = network();
        let listener = listen(&mut sim, "host-b", v6);
        let remote = SocketAddr::new(address_of(&sim, "host-b", v6), PORT);
        let client = blocking::connect(
            &mut sim,
            "host-a",
            remote,
            TcpConfig::default(),
            Duration::from_secs(5),
        )
        .unwrap();
        let server =
            blocking::accept(&mut sim, "host-b", listener, Duration::from_secs(5)).unwrap();
        let a = host(&sim, "host-a").tcp_connection(client).unwrap().local();
        let b = host(&sim, "host-b").tcp_connection(server).unwrap().local();
        let macs_to_b = (
            mac_of(&sim, "router", "eth1"),
            mac_of(&sim, "host-b", "eth0"),
        );
        let mut e = Self {
            sim,
            tap_a,
            tap_b,
            listener,
            client,
            server,
            a,
            b,
            macs_to_b,
        };
        // Some data each way, then quiet (delayed ACKs out).
        let up = pattern(3000, 1);
        assert!(e.send_up(&up) == up);
        let down = pattern(2000, 2);
        let got = send_and_receive(&mut e.sim, ("host-b", server), ("host-a", client), &down);
        assert!(got == down);
        e.sim.run_for(Duration::from_secs(1));
        e
    }

    fn send_up(&mut self, data: &[u8]) -> Vec<u8> {
        send_and_receive(
            &mut self.sim,
            ("host-a", self.client),
            ("host-b", self.server),
            data,
        )
    }

    /// host-b's RCV.NXT and SND.NXT, read off host-a's last segment (the
    /// connection is idle: everything sent was received and acknowledged).
    fn b_view(&self) -> (u32, u32) {
        let last = self
            .tap_a
            .sent_since(Mark::default())
            .into_iter()
            .rev()
            .find(|s| s.src == self.a && s.dst == self.b)
            .expect("host-a sent on the connection");
        let rcv_nxt = last
            .repr
            .seq_number
            .wrapping_add(last.repr.segment_len() as u32);
        (rcv_nxt, last.repr.ack_number.unwrap())
    }

    /// Puts a segment "from host-a" in front of host-b now.
    fn forge(&mut self, repr: &TcpRepr, payload: &[u8]) {
        let f = frame(self.macs_to_b, self.a, self.b, repr, payload);
        self.tap_b.inject_at(self.sim.now(), f);
    }

    /// What host-b sent to host-a's end since `mark`.
    fn sent_by_b(&self, mark: Mark) -> Vec<Seen> {
        self.tap_b
            .sent_since(mark)
            .into_iter()
            .filter(|s| s.src == self.b && s.dst == self.a)
            .collect()
    }

    fn server_state(&self) -> State {
        host(&self.sim, "host-b").tcp_state(self.server).unwrap()
    }

    fn challenge_acks(&self) -> u64 {
        host(&self.sim, "host-b")
            .tcp_connection(self.server)
            .unwrap()
            .counters()
            .challenge_acks
    }
}

// ----- Simultaneous open ---------------------------------------------------

/// Both hosts connect to each other at the same virtual instant, each
/// from the port the other targets: the SYNs cross, each end goes SYN-SENT
/// → SYN-RECEIVED and answers with a SYN-ACK carrying its own ISS again
/// (RFC 9293 §3.5, Figure 8), and both reach ESTABLISHED with no listener
/// anywhere.
///
/// The socket API picks ephemeral ports itself, but the simulator is
/// deterministic: a first run learns which ports `tcp_connect` picks, and
/// a second, identical run makes the same calls at the same instant aimed
/// at those ports (the port choice does not depend on the destination).
#[test]
fn simultaneous_open_through_the_socket_api() {
    for v6 in [true, false] {
        let prepare = || {
            let (mut sim, tap_a, tap_b) = network();
            let (a, b) = (
                address_of(&sim, "host-a", v6),
                address_of(&sim, "host-b", v6),
            );
            // Neighbour and ARP caches warm, so both SYNs leave at once.
            warm_up(&mut sim, "host-a", "host-b", b, a);
            (sim, tap_a, tap_b, a, b)
        };
        let connect = |sim: &mut Simulator, from: &str, to: IpAddr, port: u16| {
            let h = host_mut(sim, from);
            let handle = h
                .tcp_connect(SocketAddr::new(to, port), TcpConfig::default())
                .unwrap();
            (handle, h.tcp_connection(handle).unwrap().local().port())
        };
        let (ports_a, ports_b) = {
            let (mut sim, _, _, a, b) = prepare();
            let (_, pa) = connect(&mut sim, "host-a", b, 1);
            let (_, pb) = connect(&mut sim, "host-b", a, 1);
            (pa, pb)
        };
        let (mut sim, tap_a, tap_b, a, b) = prepare();
        let start = sim.now();
        let (ha, pa) = connect(&mut sim, "host-a", b, ports_b);
        let (hb, pb) = connect(&mut sim, "host-b", a, ports_a);
        assert_eq!(
            (pa, pb),
            (ports_a, ports_b),
            "the replay picked other ports"
        );
        let (mark_a, mark_b) = (tap_a.mark(), tap_b.mark());
        let both = sim.run_until_with(Duration::from_secs(5), |sim| {
            host(sim, "host-a").tcp_readiness(ha).unwrap().established
                && host(sim, "host-b").tcp_readiness(hb).unwrap().established
        });
        assert!(both, "v6 {v6}: not established");
        sim.run_for(Duration::from_millis(100));
        assert_eq!(host(&sim, "host-a").tcp_state(ha), Ok(State::Established));
        assert_eq!(host(&sim, "host-b").tcp_state(hb), Ok(State::Established));
        let sent = [tap_a.sent_since(mark_a), tap_b.sent_since(mark_b)];
        let syn_time = |s: &[Seen]| s.iter().find(|s| s.is(TcpFlags::SYN)).unwrap().at;
        assert_eq!(syn_time(&sent[0]), start);
        assert_eq!(syn_time(&sent[1]), start);
        for (name, segments) in ["host-a", "host-b"].iter().zip(&sent) {
            let syns: Vec<&Seen> = segments
                .iter()
                .filter(|s| s.is(TcpFlags::SYN) && s.repr.ack_number.is_none())
                .collect();
            let syn_acks: Vec<&Seen> = segments
                .iter()
                .filter(|s| s.is(TcpFlags::SYN) && s.repr.ack_number.is_some())
                .collect();
            assert_eq!(syns.len(), 1, "{name}: {segments:#?}");
            assert_eq!(syn_acks.len(), 1, "{name}: {segments:#?}");
            // The SYN-ACK repeats the SYN's ISS.
            assert_eq!(
                syn_acks[0].repr.seq_number, syns[0].repr.seq_number,
                "{name}"
            );
            assert!(syn_acks[0].at > syns[0].at);
            assert!(
                !segments.iter().any(|s| s.is(TcpFlags::RST)),
                "{name} reset"
            );
        }
        // Each SYN-ACK acknowledges the other end's SYN.
        assert_eq!(
            sent[0]
                .iter()
                .find(|s| s.is(TcpFlags::SYN) && s.repr.ack_number.is_some())
                .unwrap()
                .repr
                .ack_number,
            Some(sent[1][0].repr.seq_number.wrapping_add(1))
        );
        // A working connection: data both ways.
        let up = pattern(50_000, 3);
        assert!(send_and_receive(&mut sim, ("host-a", ha), ("host-b", hb), &up) == up);
        let down = pattern(40_000, 4);
        assert!(send_and_receive(&mut sim, ("host-b", hb), ("host-a", ha), &down) == down);
    }
}

// ----- Closed ports --------------------------------------------------------

/// RFC 9293 §3.10.7.1: a segment for no connection and no listener is
/// answered by a RST that the sender accepts: for a segment without ACK,
/// <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK> (the SYN counts in SEG.LEN);
/// for one with ACK, <SEQ=SEG.ACK><CTL=RST>; a RST is never answered.
#[test]
fn the_reset_for_a_closed_port_acknowledges_exactly_what_arrived() {
    for v6 in [true, false] {
        let (mut sim, tap_a, tap_b) = network();
        let b = SocketAddr::new(address_of(&sim, "host-b", v6), 4444);
        // A real connection attempt first.
        let mark = tap_b.mark();
        let err = blocking::connect(
            &mut sim,
            "host-a",
            b,
            TcpConfig::default(),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert_eq!(
            err,
            blocking::BlockingError::Tcp(TcpError::Connection(ConnectionError::Refused))
        );
        let syn = tap_a
            .sent_since(Mark::default())
            .into_iter()
            .find(|s| s.dst == b && s.is(TcpFlags::SYN))
            .unwrap();
        let rsts = tap_b.sent_since(mark);
        assert_eq!(rsts.len(), 1, "{rsts:#?}");
        let rst = &rsts[0];
        assert!(rst.is(TcpFlags::RST) && !rst.is(TcpFlags::SYN));
        assert_eq!((rst.src, rst.dst), (b, syn.src));
        assert_eq!(rst.repr.seq_number, 0);
        assert_eq!(
            rst.repr.ack_number,
            Some(syn.repr.seq_number.wrapping_add(1))
        );
        assert_eq!(rst.repr.payload_len, 0);

        // Forged ones, from a port of host-a that has no connection.
        let a = SocketAddr::new(address_of(&sim, "host-a", v6), 33333);
        let macs = (
            mac_of(&sim, "router", "eth1"),
            mac_of(&sim, "host-b", "eth0"),
        );
        // A segment, its payload, and the RST's (SEQ, ACK) if one is due.
        type Case<'a> = (TcpRepr, &'a [u8], Option<(u32, Option<u32>)>);
        let cases: [Case; 5] = [
            // SYN carrying 100 bytes: both count.
            (
                header(a, b, 0xFFFF_FFF0, None, TcpFlags::SYN),
                &[7u8; 100],
                Some((0, Some(0x0000_0055))),
            ),
            // A FIN without ACK: the FIN counts.
            (
                header(a, b, 5000, None, TcpFlags::FIN),
                &[],
                Some((0, Some(5001))),
            ),
            // With ACK: the RST takes its sequence number from it.
            (
                header(a, b, 77, Some(0xDEAD_BEEF), TcpFlags::empty()),
                b"data",
                Some((0xDEAD_BEEF, None)),
            ),
            (
                header(a, b, 78, Some(12345), TcpFlags::SYN),
                &[],
                Some((12345, None)),
            ),
            // A RST is dropped silently.
            (header(a, b, 79, Some(1), TcpFlags::RST), &[], None),
        ];
        let resets_before = host(&sim, "host-b").counters().tcp_resets_sent;
        for (repr, payload, expected) in cases {
            let mark = tap_b.mark();
            tap_b.inject_at(sim.now(), frame(macs, a, b, &repr, payload));
            sim.run_for(Duration::from_millis(10));
            let replies = tap_b.sent_since(mark);
            match expected {
                None => assert!(replies.is_empty(), "answered a RST: {replies:#?}"),
                Some((seq, ack)) => {
                    assert_eq!(replies.len(), 1, "{repr:?}: {replies:#?}");
                    let r = &replies[0];
                    assert_eq!((r.src, r.dst), (b, a));
                    assert!(r.is(TcpFlags::RST));
                    assert_eq!(r.repr.seq_number, seq, "{repr:?}");
                    assert_eq!(r.repr.ack_number, ack, "{repr:?}");
                }
            }
        }
        assert_eq!(
            host(&sim, "host-b").counters().tcp_resets_sent,
            resets_before + 4
        );
    }
}

// ----- Half-open recovery --------------------------------------------------

/// Replaces host `name` by a freshly booted one on the same link, with the
/// same addresses and routes but no state at all: a crash and restart.
fn restart(sim: &mut Simulator, name: &str) {
    let topology = Topology::default_network();
    let node = topology.node(name).unwrap();
    let spec = &node.interfaces[0];
    let h = host_mut(sim, name);
    let id = h.interface_id(&spec.name).unwrap();
    let link = std::mem::replace(
        &mut h.interface_mut(id).unwrap().link,
        Box::new(Loopback::default()),
    );
    let mut config = HostConfig::new(name, false);
    config.seed = 0xB007_0002;
    let routes: Vec<StaticRoute> = node
        .routes
        .iter()
        .map(|r| StaticRoute {
            to: r.to,
            via: r.via,
        })
        .collect();
    let interface = InterfaceConfig {
        name: spec.name.clone(),
        link,
        mac: spec.mac,
        ipv4: spec.ipv4,
        ipv6: spec.ipv6.clone(),
        advertise: Vec::new(),
        dad_transmits: None,
    };
    *h = Host::new(config, vec![interface], &routes).unwrap();
}

/// RFC 9293 §3.5.2 (half-open connections): the server crashes and comes
/// back knowing nothing. The client's next segment finds no connection and
/// draws a RST numbered from its ACK field, which the client must accept
/// (it is exactly its RCV.NXT, so RFC 5961 lets it through): the client
/// learns of the reset, and a new connection to the restarted server
/// works.
#[test]
fn a_restarted_server_resets_the_stale_connection_and_a_new_one_works() {
    for v6 in [true, false] {
        let mut e = Established::new(v6);
        restart(&mut e.sim, "host-b");
        let new_listener = listen(&mut e.sim, "host-b", v6);
        // The client knows nothing yet; its next write goes to a host
        // with no such connection (over IPv6 first waiting for the new
        // host's SLAAC: retransmissions carry it over).
        let mark_a = e.tap_a.mark();
        let mark_b = e.tap_b.mark();
        host_mut(&mut e.sim, "host-a")
            .tcp_send(e.client, b"are you there?")
            .unwrap();
        let client = e.client;
        let reset = e.sim.run_until_with(Duration::from_secs(30), |sim| {
            host(sim, "host-a")
                .tcp_readiness(client)
                .unwrap()
                .error
                .is_some()
        });
        assert!(reset, "v6 {v6}: the client never learned of the restart");
        let readiness = host(&e.sim, "host-a").tcp_readiness(client).unwrap();
        assert_eq!(readiness.error, Some(ConnectionError::Reset));
        assert_eq!(host(&e.sim, "host-a").tcp_state(client), Ok(State::Closed));
        let mut buf = [0u8; 16];
        assert_eq!(
            host_mut(&mut e.sim, "host-a").tcp_recv(client, &mut buf),
            Err(TcpError::Connection(ConnectionError::Reset))
        );
        // The RST answered the data segment: SEQ = its ACK, no ACK flag.
        let data = e
            .tap_a
            .sent_since(mark_a)
            .into_iter()
            .rfind(|s| s.src == e.a && s.repr.payload_len > 0)
            .unwrap();
        let rsts: Vec<Seen> = e
            .tap_b
            .sent_since(mark_b)
            .into_iter()
            .filter(|s| s.is(TcpFlags::RST))
            .collect();
        assert_eq!(rsts.len(), 1, "{rsts:#?}");
        assert_eq!((rsts[0].src, rsts[0].dst), (e.b, e.a));
        assert_eq!(Some(rsts[0].repr.seq_number), data.repr.ack_number);
        assert_eq!(rsts[0].repr.ack_number, None);
        // The restarted service listens again on the port, so the RST is
        // the listener's (RFC 9293 §3.10.7.2: an ACK in LISTEN is bad): a
        // stray ACK that is no valid SYN cookie, and no connection.
        let l = host(&e.sim, "host-b").tcp_listener(new_listener).unwrap();
        assert_eq!(l.counters().cookies_rejected, 1);
        assert_eq!((l.pending(), l.half_open_len()), (0, 0));
        host_mut(&mut e.sim, "host-a").tcp_close(client).unwrap();

        // A new connection to the restarted server.
        let remote = SocketAddr::new(address_of(&e.sim, "host-b", v6), PORT);
        let client = blocking::connect(
            &mut e.sim,
            "host-a",
            remote,
            TcpConfig::default(),
            Duration::from_secs(5),
        )
        .unwrap();
        let server =
            blocking::accept(&mut e.sim, "host-b", new_listener, Duration::from_secs(5)).unwrap();
        let up = pattern(100_000, 5);
        assert!(send_and_receive(&mut e.sim, ("host-a", client), ("host-b", server), &up) == up);
    }
}

// ----- RFC 5961: blind in-window attacks -------------------------------------

/// RFC 5961 §3.2: a RST inside the window but not at RCV.NXT earns a
/// challenge ACK (<SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>) and changes
/// nothing; one outside the window is dropped silently; only a RST at
/// exactly RCV.NXT resets the connection.
#[test]
fn only_an_exact_rst_resets_an_in_window_one_is_challenged() {
    for v6 in [true, false] {
        let mut e = Established::new(v6);
        let (rcv_nxt, snd_nxt) = e.b_view();
        let (a, b) = (e.a, e.b);

        let mark = e.tap_b.mark();
        e.forge(
            &header(a, b, rcv_nxt.wrapping_add(1000), None, TcpFlags::RST),
            &[],
        );
        e.sim.run_for(Duration::from_millis(10));
        let replies = e.sent_by_b(mark);
        assert_eq!(replies.len(), 1, "v6 {v6}: {replies:#?}");
        let challenge = &replies[0];
        assert!(challenge.is_pure_ack(), "{challenge:?}");
        assert_eq!(challenge.repr.seq_number, snd_nxt);
        assert_eq!(challenge.repr.ack_number, Some(rcv_nxt));
        assert_eq!(e.challenge_acks(), 1);
        assert_eq!(e.server_state(), State::Established);

        // Outside the window, either side: no answer at all.
        let mark = e.tap_b.mark();
        for seq in [rcv_nxt.wrapping_sub(1), rcv_nxt.wrapping_add(WINDOW + 1000)] {
            e.forge(&header(a, b, seq, None, TcpFlags::RST), &[]);
            e.sim.run_for(Duration::from_millis(10));
        }
        assert!(e.sent_by_b(mark).is_empty(), "{:#?}", e.sent_by_b(mark));
        assert_eq!(e.challenge_acks(), 1);
        assert_eq!(e.server_state(), State::Established);
        // The client saw only a duplicate ACK: the connection still works.
        let up = pattern(30_000, 6);
        assert!(e.send_up(&up) == up);

        // The exact sequence number: reset, and no reply to it.
        let (rcv_nxt, _) = e.b_view();
        let mark = e.tap_b.mark();
        e.forge(&header(a, b, rcv_nxt, None, TcpFlags::RST), &[]);
        e.sim.run_for(Duration::from_millis(10));
        assert!(e.sent_by_b(mark).is_empty());
        assert_eq!(e.server_state(), State::Closed);
        let mut buf = [0u8; 8];
        assert_eq!(
            host_mut(&mut e.sim, "host-b").tcp_recv(e.server, &mut buf),
            Err(TcpError::Connection(ConnectionError::Reset))
        );
    }
}

/// RFC 5961 §4.2: a SYN on a synchronized connection, wherever its
/// sequence number falls, is answered with an ACK and otherwise ignored:
/// no reset, no new connection, the old one intact.
#[test]
fn a_blind_syn_on_an_established_connection_is_challenged_and_ignored() {
    for v6 in [true, false] {
        let mut e = Established::new(v6);
        let (rcv_nxt, snd_nxt) = e.b_view();
        let (a, b) = (e.a, e.b);
        let resets = host(&e.sim, "host-b").counters().tcp_resets_sent;
        let syns = host(&e.sim, "host-b")
            .tcp_listener(e.listener)
            .unwrap()
            .counters()
            .syns;
        for (i, seq) in [
            rcv_nxt.wrapping_add(5000),
            rcv_nxt,
            rcv_nxt.wrapping_add(WINDOW * 4),
        ]
        .into_iter()
        .enumerate()
        {
            let mut syn = header(a, b, seq, None, TcpFlags::SYN);
            syn.max_seg_size = Some(1440);
            syn.sack_permitted = true;
            syn.window_scale = Some(7);
            let mark = e.tap_b.mark();
            e.forge(&syn, &[]);
            e.sim.run_for(Duration::from_millis(10));
            let replies = e.sent_by_b(mark);
            assert_eq!(replies.len(), 1, "v6 {v6}, SYN {i}: {replies:#?}");
            assert!(replies[0].is_pure_ack(), "{:?}", replies[0]);
            assert_eq!(replies[0].repr.seq_number, snd_nxt);
            assert_eq!(replies[0].repr.ack_number, Some(rcv_nxt));
            assert_eq!(e.server_state(), State::Established);
        }
        // The two in the window count as challenges.
        assert_eq!(e.challenge_acks(), 2);
        let listener = host(&e.sim, "host-b").tcp_listener(e.listener).unwrap();
        assert_eq!((listener.half_open_len(), listener.pending()), (0, 0));
        assert_eq!(listener.counters().syns, syns, "a SYN reached the listener");
        assert_eq!(host(&e.sim, "host-b").counters().tcp_resets_sent, resets);
        let up = pattern(30_000, 7);
        assert!(e.send_up(&up) == up);
    }
}

/// RFC 5961 §5.2: data whose ACK field lies outside [SND.UNA -
/// MAX.SND.WND, SND.NXT] is dropped (and answered with an ACK), however
/// well its sequence number was guessed, so blind data injection needs
/// both numbers right. The client's real bytes at that sequence number
/// then arrive as if nothing had happened.
#[test]
fn injected_data_with_an_unacceptable_ack_is_dropped() {
    for v6 in [true, false] {
        let mut e = Established::new(v6);
        let (rcv_nxt, snd_nxt) = e.b_view();
        let (a, b) = (e.a, e.b);
        for ack in [
            // Acknowledges data host-b never sent.
            snd_nxt.wrapping_add(100_000),
            // Far older than any window host-a offered.
            snd_nxt.wrapping_sub(10_000_000),
        ] {
            let mark = e.tap_b.mark();
            e.forge(
                &header(a, b, rcv_nxt, Some(ack), TcpFlags::PSH),
                b"EVIL BYTES",
            );
            e.sim.run_for(Duration::from_millis(10));
            let replies = e.sent_by_b(mark);
            assert_eq!(replies.len(), 1, "v6 {v6}, ack {ack}: {replies:#?}");
            assert!(replies[0].is_pure_ack());
            assert_eq!(
                replies[0].repr.ack_number,
                Some(rcv_nxt),
                "the data was taken"
            );
            let mut buf = [0u8; 64];
            assert_eq!(
                host_mut(&mut e.sim, "host-b").tcp_recv(e.server, &mut buf),
                Err(TcpError::WouldBlock)
            );
            assert_eq!(e.server_state(), State::Established);
        }
        // The genuine bytes for the same sequence numbers.
        let up = pattern(20_000, 8);
        assert!(e.send_up(&up) == up);
    }
}

/// RFC 5961 §7: challenge ACKs are limited (1000 per second per host, as
/// Linux's default), so a flood of forged RSTs cannot make the host a
/// reflector. 3000 in-window RSTs over 0.75 s draw exactly 1000 challenge
/// ACKs; once the second is over, challenges resume.
#[test]
fn challenge_acks_are_rate_limited() {
    let mut e = Established::new(true);
    let (rcv_nxt, _) = e.b_view();
    let (a, b) = (e.a, e.b);
    let mark = e.tap_b.mark();
    let start = e.sim.now();
    for i in 0..3000u32 {
        e.forge(
            &header(a, b, rcv_nxt.wrapping_add(1 + i), None, TcpFlags::RST),
            &[],
        );
        e.sim.run_for(Duration::from_micros(250));
    }
    assert!(e.sim.now() < start + Duration::from_secs(1));
    let replies = e.sent_by_b(mark);
    assert_eq!(replies.len(), 1000, "challenge ACKs sent for 3000 RSTs");
    assert!(replies.iter().all(Seen::is_pure_ack));
    assert_eq!(e.challenge_acks(), 1000);
    assert_eq!(e.server_state(), State::Established);
    // The next second: challenged again.
    e.sim.run_for(Duration::from_millis(300));
    let mark = e.tap_b.mark();
    e.forge(
        &header(a, b, rcv_nxt.wrapping_add(7), None, TcpFlags::RST),
        &[],
    );
    e.sim.run_for(Duration::from_millis(10));
    assert_eq!(e.sent_by_b(mark).len(), 1);
    assert_eq!(e.challenge_acks(), 1001);
    let up = pattern(10_000, 9);
    assert!(e.send_up(&up) == up);
}

// ----- SYN flood -------------------------------------------------------------

/// 5000 SYNs from spoofed addresses and ports (a prefix the router has no
/// route for, so the SYN-ACKs die there) hit the listener over 0.2 s while
/// an established connection of the same listener moves 1 MiB each way
/// (paced by the application over the first 0.13 s, so the whole transfer
/// runs under the flood) and a new client connects. The half-open queue
/// fills to its bound and no further; the rest of the flood gets SYN
/// cookies (RFC 4987 §3.6), no state; the transfer completes byte-exact;
/// the new client gets in on a cookie and moves data.
#[test]
fn a_syn_flood_neither_stalls_a_transfer_nor_locks_out_a_new_client() {
    const FLOOD: u32 = 5000;
    const PER_MS: u32 = 25;
    const LEN: usize = 1 << 20;
    /// Bytes the application may have written after `ms` milliseconds.
    const PACE: usize = 8 * 1024;
    let mut e = Established::new(true);
    let half_open_bound = ListenerConfig::default().half_open;
    let listener = e.listener;
    let syns_before = host(&e.sim, "host-b")
        .tcp_listener(listener)
        .unwrap()
        .counters()
        .syns;
    let (client, server) = (e.client, e.server);
    let up = pattern(LEN, 10);
    let down = pattern(LEN, 11);
    let mut sides = [Side::default(), Side::default()];
    let mut buf = vec![0u8; 64 * 1024];
    let mark_b = e.tap_b.mark();
    let remote = SocketAddr::new(e.b.ip(), PORT);
    let mut newcomer: Option<TcpHandle> = None;
    let mut accepted: Option<TcpHandle> = None;
    let mut max_half_open = 0;
    let mut received_when_full = None;
    let mut max_sockets = 0;
    let mut transfer_done_at = None;
    let mut sent = 0u32;
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let start = e.sim.now();
    let mut step = 0usize;
    loop {
        // A millisecond's worth of flood.
        let now = e.sim.now();
        for _ in 0..PER_MS.min(FLOOD - sent) {
            let r = next();
            let ip = Ipv6Addr::new(
                0x2001,
                0xdb8,
                0xf,
                (r >> 48) as u16,
                0,
                0,
                (r >> 32) as u16,
                r as u16,
            );
            let src = SocketAddr::new(IpAddr::V6(ip), 1024 + (r >> 16) as u16 % 60000);
            let mut syn = header(src, e.b, (r >> 8) as u32, None, TcpFlags::SYN);
            syn.max_seg_size = Some(1440);
            syn.window_scale = Some(7);
            syn.sack_permitted = true;
            e.tap_b
                .inject_at(now, frame(e.macs_to_b, src, e.b, &syn, &[]));
            sent += 1;
        }
        // Well into the flood, a new client.
        if step == 50 {
            let h = host_mut(&mut e.sim, "host-a");
            newcomer = Some(h.tcp_connect(remote, TcpConfig::default()).unwrap());
        }
        let allow = ((step + 1) * PACE).min(LEN);
        e.sim.run_until_with(Duration::from_millis(1), |sim| {
            pump(
                host_mut(sim, "host-a"),
                client,
                &up[..allow],
                LEN,
                &mut sides[0],
                &mut buf,
            );
            pump(
                host_mut(sim, "host-b"),
                server,
                &down[..allow],
                LEN,
                &mut sides[1],
                &mut buf,
            );
            let b = host_mut(sim, "host-b");
            if accepted.is_none() {
                accepted = b.tcp_accept(listener).ok();
            }
            let l = b.tcp_listener(listener).unwrap();
            max_half_open = max_half_open.max(l.half_open_len());
            if max_half_open == half_open_bound && received_when_full.is_none() {
                received_when_full = Some(sides[1].got.len());
            }
            max_sockets = max_sockets.max(b.tcp_socket_count());
            false
        });
        step += 1;
        if transfer_done_at.is_none() && sides.iter().all(|s| s.shut && s.eof) {
            transfer_done_at = Some(e.sim.now());
        }
        if sent == FLOOD && transfer_done_at.is_some() && accepted.is_some() {
            break;
        }
        assert!(
            e.sim.now() < start + Duration::from_secs(20),
            "stalled: flood {sent}, host-a sent {} got {}, host-b sent {} got {}, accepted {accepted:?}",
            sides[0].sent,
            sides[0].got.len(),
            sides[1].sent,
            sides[1].got.len()
        );
    }
    let flood_end = start + Duration::from_millis(u64::from(FLOOD / PER_MS));
    let [a_side, b_side] = sides;
    assert!(b_side.got == up, "host-b got {} bytes", b_side.got.len());
    assert!(a_side.got == down, "host-a got {} bytes", a_side.got.len());
    // The transfer ran under the flood: most of it after the half-open
    // queue was full, all of it before the flood ended.
    let when_full = received_when_full.expect("the half-open queue never filled");
    assert!(
        when_full < LEN / 4,
        "{when_full} bytes had arrived when the queue filled"
    );
    assert!(transfer_done_at.unwrap() <= flood_end);

    let b = host(&e.sim, "host-b");
    let l = b.tcp_listener(listener).unwrap();
    let counters = l.counters();
    assert_eq!(
        max_half_open, half_open_bound,
        "the half-open queue's high-water mark"
    );
    // Every flood SYN reached the listener; past the bound, each got a
    // cookie instead of state.
    let syns = counters.syns - syns_before;
    assert!((1..=3).contains(&(syns - u64::from(FLOOD))), "{counters:?}");
    assert_eq!(
        counters.cookies_sent + half_open_bound as u64,
        syns,
        "{counters:?}"
    );
    assert_eq!(counters.cookies_accepted, 1, "{counters:?}");
    // Listener, the old connection, the new one: nothing per SYN.
    assert!(max_sockets <= 3, "{max_sockets} sockets");
    assert_eq!(b.pool().stats().exhausted, 0);
    // A SYN-ACK went out for every flood SYN, cookie or not.
    let syn_acks = e
        .tap_b
        .sent_since(mark_b)
        .iter()
        .filter(|s| s.is(TcpFlags::SYN) && s.repr.ack_number.is_some())
        .count();
    assert!(syn_acks >= FLOOD as usize, "{syn_acks} SYN-ACKs");

    // The newcomer, established on a cookie, works (without the options a
    // cookie cannot carry).
    let newcomer = newcomer.unwrap();
    let accepted = accepted.unwrap();
    assert!(
        host(&e.sim, "host-a")
            .tcp_readiness(newcomer)
            .unwrap()
            .established
    );
    let negotiated = host(&e.sim, "host-b")
        .tcp_connection(accepted)
        .unwrap()
        .negotiated()
        .unwrap();
    assert!(!negotiated.sack && !negotiated.timestamps);
    let data = pattern(200_000, 12);
    assert!(
        send_and_receive(
            &mut e.sim,
            ("host-a", newcomer),
            ("host-b", accepted),
            &data
        ) == data
    );
}

/// One end of a two-way transfer.
#[derive(Default)]
struct Side {
    sent: usize,
    shut: bool,
    got: Vec<u8>,
    eof: bool,
}

/// Sends what fits of `data` (what the application has so far), shuts
/// down once all `len` bytes are written, reads what arrived.
fn pump(h: &mut Host, handle: TcpHandle, data: &[u8], len: usize, side: &mut Side, buf: &mut [u8]) {
    while side.sent < data.len() {
        match h.tcp_send(handle, &data[side.sent..]) {
            Ok(n) => side.sent += n,
            Err(TcpError::WouldBlock) => break,
            Err(e) => panic!("{}: send failed: {e}", h.name()),
        }
    }
    if side.sent == len && !side.shut {
        h.tcp_shutdown(handle).unwrap();
        side.shut = true;
    }
    while !side.eof {
        match h.tcp_recv(handle, buf) {
            Ok(0) => side.eof = true,
            Ok(n) => side.got.extend_from_slice(&buf[..n]),
            Err(TcpError::WouldBlock) => break,
            Err(e) => panic!("{}: recv failed: {e}", h.name()),
        }
    }
}
