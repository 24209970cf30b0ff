//! How often a receiving host acknowledges, when a poll takes many
//! segments at once (as from a TAP or AF_PACKET link, which hand over
//! dozens of frames per poll): RFC 5681 §4.2 and RFC 9293 §3.8.6.3 want
//! an ACK for at least every second full-sized segment, each covering
//! what had arrived by then — not one stretch ACK per poll — while a lone
//! segment still waits for the delayed-ACK timer.
//!
//! host-a sends to host-b over the unlimited wire. host-b's link is
//! wrapped in a [`Splice`](network_support::wiretap::Splice) that records every frame host-b sends and can
//! hold back what arrives, so a whole flight reaches host-b in one poll,
//! and lose chosen segments of it.

use crate::network_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use network_support::wiretap::{Mark, Seen, Wiretap};
use network_support::{host, host_mut};
use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::congestion::{CongestionConfig, InitialWindow};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::time::Instant;
use stack::topology::Topology;
use wire::tcp::TcpRepr;

const PORT: u16 = 5001;

fn unlimited() -> Simulator {
    let text = include_str!("../../../../topologies/unlimited.toml");
    let mut sim = Simulator::new(&Topology::from_toml_str(text).unwrap(), None).unwrap();
    // DAD is off: the addresses are usable at once.
    sim.run_for(Duration::from_millis(1));
    sim
}

/// A connection from host-a to host-b over IPv6 or IPv4: (client,
/// server). host-a may send 128 segments before its first ACK, so any
/// flight a test asks for leaves in one go.
fn connected(sim: &mut Simulator, v6: bool) -> (TcpHandle, TcpHandle) {
    let (any, b): (IpAddr, IpAddr) = if v6 {
        ("::".parse().unwrap(), "2001:db8:1::b".parse().unwrap())
    } else {
        ("0.0.0.0".parse().unwrap(), "192.0.2.2".parse().unwrap())
    };
    let listener = host_mut(sim, "host-b")
        .tcp_listen(
            SocketAddr::new(any, PORT),
            TcpConfig::default(),
            ListenerConfig::default(),
        )
        .unwrap();
    let config = TcpConfig {
        congestion: CongestionConfig {
            initial_window: InitialWindow::Segments(128),
            ..CongestionConfig::default()
        },
        ..TcpConfig::default()
    };
    let limit = Duration::from_secs(5);
    let remote = SocketAddr::new(b, PORT);
    let client = blocking::connect(sim, "host-a", remote, config, limit).unwrap();
    let server = blocking::accept(sim, "host-b", listener, limit).unwrap();
    (client, server)
}

/// Reads everything host-b has received; returns how many bytes.
fn drain(sim: &mut Simulator, server: TcpHandle) -> usize {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match host_mut(sim, "host-b").tcp_recv(server, &mut buf) {
            Ok(0) | Err(TcpError::WouldBlock) => return total,
            Ok(n) => total += n,
            Err(e) => panic!("recv failed: {e}"),
        }
    }
}

/// host-a sends `n` full-sized segments, which host-b takes in one poll:
/// the segments host-b sends from then on (for 100 ms), with when, and
/// the instant the flight arrived.
fn flight(
    sim: &mut Simulator,
    tap: &Wiretap,
    (client, server): (TcpHandle, TcpHandle),
    n: usize,
) -> (Vec<Seen>, Instant) {
    let mss = host(sim, "host-a")
        .tcp_connection(client)
        .unwrap()
        .negotiated()
        .unwrap()
        .send_mss;
    let data = vec![0x5a; n * mss];
    tap.hold(true);
    let mark = tap.mark();
    let mut sent = 0;
    while sent < data.len() {
        sent += host_mut(sim, "host-a")
            .tcp_send(client, &data[sent..])
            .unwrap();
    }
    // Everything leaves host-a and waits on host-b's wire.
    sim.run_for(Duration::from_millis(1));
    tap.hold(false);
    sim.run_for(Duration::from_millis(100));
    let arrivals = tap.received_since(mark);
    assert_eq!(arrivals.len(), n, "{n} segments arrived");
    assert!(
        arrivals.iter().all(|at| *at == arrivals[0]),
        "in one poll: {arrivals:?}"
    );
    assert_eq!(drain(sim, server), data.len());
    (tap.sent_since(mark), arrivals[0])
}

/// RFC 5681 §4.2: a flight of `n` full-sized segments taken in one poll
/// draws ceil(n/2) ACKs at once, each acknowledging two more segments
/// than the last (the last one, for an odd flight, one), each with the
/// window left at that point; no stretch ACK covers the whole flight.
#[test]
fn a_flight_taken_in_one_poll_is_acknowledged_every_second_segment() {
    for v6 in [true, false] {
        let mut sim = unlimited();
        let tap = Wiretap::splice(&mut sim, "host-b");
        let ends = connected(&mut sim, v6);
        let mss = host(&sim, "host-a")
            .tcp_connection(ends.0)
            .unwrap()
            .negotiated()
            .unwrap()
            .send_mss;
        let shift = host(&sim, "host-b")
            .tcp_connection(ends.1)
            .unwrap()
            .negotiated()
            .unwrap()
            .recv_window_shift;
        let buffer = TcpConfig::default().recv_buffer;
        // host-b's last ACK so far: the SYN-ACK's.
        let mut acked = tap
            .sent_since(Mark::default())
            .last()
            .and_then(|s| s.repr.ack_number)
            .unwrap();
        // The first flight fits the SYN-ACK's unscaled window (RFC 7323
        // §2.2); later ones have the scaled window of its ACKs.
        for n in [2usize, 64, 63, 9] {
            let (sent, arrived) = flight(&mut sim, &tap, ends, n);
            let acks: Vec<_> = sent.iter().filter(|s| s.is_pure_ack()).collect();
            assert_eq!(acks.len(), sent.len(), "v6 {v6}, {n} segments: only ACKs");
            assert_eq!(
                acks.len(),
                n.div_ceil(2),
                "v6 {v6}: {n} segments in one poll draw an ACK per two, not {} \
                 (RFC 5681 §4.2)",
                acks.len()
            );
            let start = acked;
            for (i, Seen { at, repr: ack, .. }) in acks.iter().enumerate() {
                let segments = (2 * (i + 1)).min(n);
                let expect = start.wrapping_add((segments * mss) as u32);
                assert_eq!(*at, arrived, "v6 {v6}, {n} segments: ACK {i} at once");
                assert_eq!(
                    ack.ack_number,
                    Some(expect),
                    "v6 {v6}, {n} segments: ACK {i} covers {segments} segments"
                );
                // The window is what is free once those segments are in
                // (host-b's buffer was empty before the flight).
                assert_eq!(
                    usize::from(ack.window_len),
                    (buffer - segments * mss) >> shift,
                    "v6 {v6}, {n} segments: ACK {i}'s window"
                );
            }
            acked = start.wrapping_add((n * mss) as u32);
        }
        // A lone segment still waits for the delayed-ACK timer (RFC 9293
        // §3.8.6.3).
        let (sent, arrived) = flight(&mut sim, &tap, ends, 1);
        assert_eq!(sent.len(), 1, "v6 {v6}: one ACK for one segment");
        let Seen { at, repr: ack, .. } = &sent[0];
        assert!(sent[0].is_pure_ack());
        assert_eq!(ack.ack_number, Some(acked.wrapping_add(mss as u32)));
        assert_eq!(
            at.saturating_duration_since(arrived),
            TcpConfig::default().delayed_ack,
            "v6 {v6}: the lone segment's ACK is delayed"
        );
    }
}

/// RFC 5681 §4.2: each out-of-order segment of a flight taken in one poll
/// is answered at once by an ACK of its own, whose first SACK block holds
/// that segment (RFC 2018 §4), so the sender learns of every hole — not
/// one copy of the poll's final SACK blocks per segment.
#[test]
fn out_of_order_segments_in_one_poll_are_each_answered_with_their_own_sack_block() {
    for v6 in [true, false] {
        let mut sim = unlimited();
        let tap = Wiretap::splice(&mut sim, "host-b");
        let ends = connected(&mut sim, v6);
        // A first flight makes host-a's view of the window a scaled one.
        let (sent, _) = flight(&mut sim, &tap, ends, 2);
        let start = sent.last().and_then(|s| s.repr.ack_number).unwrap();
        let (client, server) = ends;
        let mss = host(&sim, "host-a")
            .tcp_connection(client)
            .unwrap()
            .negotiated()
            .unwrap()
            .send_mss;
        let at = |segment: usize| start.wrapping_add((segment * mss) as u32);
        // 16 segments, of which the 4th, 8th and 12th are lost.
        for lost in [3, 7, 11] {
            tap.lose(at(lost));
        }
        let data = vec![0x3c; 16 * mss];
        tap.hold(true);
        let mark = tap.mark();
        let mut written = 0;
        while written < data.len() {
            written += host_mut(&mut sim, "host-a")
                .tcp_send(client, &data[written..])
                .unwrap();
        }
        sim.run_for(Duration::from_millis(1));
        tap.hold(false);
        sim.run_for(Duration::from_millis(100));
        let arrived = tap.received_since(mark)[0];
        let acks: Vec<TcpRepr> = tap
            .sent_since(mark)
            .into_iter()
            .filter(|s| s.at == arrived && s.is_pure_ack())
            .map(|s| s.repr)
            .collect();
        // Segments 0 and 1 draw an ACK; 2 waits for the next; every one
        // from 4 on is out of order and answered at once (4 also covering
        // 2), each with its own range first.
        let mut expect = vec![(2, None)];
        for segment in [4, 5, 6, 8, 9, 10, 12, 13, 14, 15] {
            let first = match segment {
                4..=6 => (4, segment + 1),
                8..=10 => (8, segment + 1),
                _ => (12, segment + 1),
            };
            expect.push((3, Some(first)));
        }
        let seen: Vec<(u32, Option<(u32, u32)>)> = acks
            .iter()
            .take(expect.len())
            .map(|a| (a.ack_number.unwrap(), a.sack_ranges[0]))
            .collect();
        let expect: Vec<(u32, Option<(u32, u32)>)> = expect
            .into_iter()
            .map(|(ack, first)| (at(ack), first.map(|(l, r)| (at(l), at(r)))))
            .collect();
        assert_eq!(seen, expect, "v6 {v6}: ACK numbers and first SACK blocks");
        // Which is enough for host-a to resend the three at once, without
        // waiting for its retransmission timer.
        assert_eq!(drain(&mut sim, server), data.len(), "v6 {v6}: repaired");
        let counters = host(&sim, "host-a")
            .tcp_connection(client)
            .unwrap()
            .counters();
        assert_eq!(counters.retransmission_timeouts, 0, "v6 {v6}: {counters:?}");
    }
}

/// A bulk transfer over the unlimited wire, where the sender's flights
/// reach the receiver a poll at a time: the receiver sends at least one
/// ACK per two data segments (it used to send one per poll: 100 for
/// 5899 segments).
#[test]
fn a_bulk_transfer_is_acknowledged_every_second_segment() {
    let mut sim = unlimited();
    let (client, server) = connected(&mut sim, true);
    let data = vec![0xa5; 8 << 20];
    let (mut sent, mut got) = (0, 0);
    let done = sim.run_until_with(Duration::from_secs(30), |sim| {
        while sent < data.len() {
            match host_mut(sim, "host-a").tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("send failed: {e}"),
            }
        }
        got += drain(sim, server);
        got == data.len()
    });
    assert!(done, "{got} of {} bytes arrived", data.len());
    sim.run_for(Duration::from_secs(1));
    let b = host(&sim, "host-b")
        .tcp_connection(server)
        .unwrap()
        .counters();
    // host-b sends nothing but ACKs (its SYN-ACK among them).
    let (acks, segments) = (b.segments_sent, b.segments_received);
    assert!(
        2 * acks >= segments,
        "{acks} ACKs for {segments} segments (RFC 5681 §4.2)"
    );
}
