//! TCP through the host: connections between host-a and host-b across the
//! default network's router, over IPv6 and IPv4, with the socket API
//! (listen / connect / accept / send / recv / shutdown / close) and the
//! blocking calls; RST for closed ports; sockets freed after TIME-WAIT.

mod network_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use network_support::tcp::{self, exchange, varied, PORT};
use network_support::*;
use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::{ConnectionError, TcpConfig};
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::tcp::state::State;
use stack::topology::Topology;

fn network() -> Simulator {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    // Until SLAAC has given both hosts a global address (DAD included).
    tcp::wait_for_addresses(&mut sim, Duration::from_secs(60));
    sim
}

fn listen(sim: &mut Simulator, name: &str, v6: bool) -> TcpHandle {
    let any: IpAddr = if v6 {
        "::".parse().unwrap()
    } else {
        "0.0.0.0".parse().unwrap()
    };
    host_mut(sim, name)
        .tcp_listen(
            SocketAddr::new(any, PORT),
            TcpConfig::default(),
            ListenerConfig::default(),
        )
        .unwrap()
}

/// A connection from host-a to a listener on host-b, both ends with
/// `config`: (client, server).
fn connected(sim: &mut Simulator, v6: bool, config: TcpConfig) -> (TcpHandle, TcpHandle) {
    tcp::connect(sim, v6, config, Duration::from_secs(10))
}

fn transfer_both_ways(v6: bool) {
    let mut sim = network();
    let (client, server) = connected(&mut sim, v6, TcpConfig::default());
    let up = varied(1 << 20, 1);
    let down = varied(700_000, 2);
    let (at_b, at_a) = exchange(
        &mut sim,
        (client, server),
        &up,
        &down,
        Duration::from_secs(60),
    );
    assert!(
        at_b == up,
        "host-b received {} bytes, not the {} sent",
        at_b.len(),
        up.len()
    );
    assert!(
        at_a == down,
        "host-a received {} bytes, not the {} sent",
        at_a.len(),
        down.len()
    );
    let conn = sim.host("host-a").unwrap().tcp_connection(client).unwrap();
    let negotiated = conn.negotiated().unwrap();
    assert!(negotiated.sack && negotiated.timestamps);
    // MTU 1500 less IP, TCP and the timestamp option.
    let ip = if v6 { 40 } else { 20 };
    assert_eq!(negotiated.send_mss, 1500 - ip - 20 - 12);
    for (name, handle) in [("host-a", client), ("host-b", server)] {
        host_mut(&mut sim, name).tcp_close(handle).unwrap();
    }
    // After 2·MSL both ends have let go of everything but the listener.
    sim.run_for(Duration::from_secs(125));
    assert_eq!(sim.host("host-a").unwrap().tcp_socket_count(), 0);
    assert_eq!(sim.host("host-b").unwrap().tcp_socket_count(), 1);
    for name in ["host-a", "host-b"] {
        let h = sim.host(name).unwrap();
        assert_eq!(drops(h, "tcp_bad_checksum"), 0, "{name}");
        assert!(h.counters().tcp_sent > 100 && h.counters().tcp_received > 100);
    }
}

fn drops(h: &Host, reason: &str) -> u64 {
    h.drops().get(reason).copied().unwrap_or(0)
}

#[test]
fn a_megabyte_each_way_over_ipv6() {
    transfer_both_ways(true);
}

#[test]
fn a_megabyte_each_way_over_ipv4() {
    transfer_both_ways(false);
}

#[test]
fn a_closed_port_refuses_with_a_reset() {
    let mut sim = network();
    for v6 in [true, false] {
        let remote = SocketAddr::new(address_of(&sim, "host-b", v6), 4444);
        let err = blocking::connect(
            &mut sim,
            "host-a",
            remote,
            TcpConfig::default(),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert_eq!(
            err,
            blocking::BlockingError::Tcp(TcpError::Connection(ConnectionError::Refused))
        );
    }
    assert_eq!(sim.host("host-b").unwrap().counters().tcp_resets_sent, 2);
}

#[test]
fn listeners_refuse_duplicates_and_foreign_addresses() {
    let mut sim = network();
    listen(&mut sim, "host-b", true);
    let h = host_mut(&mut sim, "host-b");
    let again = h.tcp_listen(
        SocketAddr::new("::".parse().unwrap(), PORT),
        TcpConfig::default(),
        ListenerConfig::default(),
    );
    assert!(matches!(again, Err(TcpError::AddressInUse(_))));
    let foreign = h.tcp_listen(
        SocketAddr::new("2001:db8:ffff::1".parse().unwrap(), 80),
        TcpConfig::default(),
        ListenerConfig::default(),
    );
    assert!(matches!(foreign, Err(TcpError::AddressNotLocal(_))));
    // The IPv4 wildcard on the same port is a different family: allowed.
    assert!(h
        .tcp_listen(
            SocketAddr::new("0.0.0.0".parse().unwrap(), PORT),
            TcpConfig::default(),
            ListenerConfig::default()
        )
        .is_ok());
}

#[test]
fn handles_go_stale_once_their_socket_is_gone() {
    let mut sim = network();
    let (client, server) = connected(&mut sim, true, TcpConfig::default());
    host_mut(&mut sim, "host-a").tcp_abort(client).unwrap();
    assert_eq!(
        host_mut(&mut sim, "host-a").tcp_send(client, b"x"),
        Err(TcpError::InvalidHandle)
    );
    sim.run_for(Duration::from_millis(50));
    // The reset reached the server: its reads report it.
    let mut buf = [0u8; 8];
    assert_eq!(
        host_mut(&mut sim, "host-b").tcp_recv(server, &mut buf),
        Err(TcpError::Connection(ConnectionError::Reset))
    );
    assert_eq!(
        host_mut(&mut sim, "host-b").tcp_state(server),
        Ok(State::Closed)
    );
}

#[test]
fn simultaneous_close_passes_through_closing_to_time_wait() {
    let mut sim = network();
    let config = TcpConfig {
        time_wait: Duration::from_secs(2),
        ..TcpConfig::default()
    };
    let (client, server) = connected(&mut sim, true, config);
    // Both FINs leave in the same instant: each crosses the other's.
    host_mut(&mut sim, "host-a").tcp_shutdown(client).unwrap();
    host_mut(&mut sim, "host-b").tcp_shutdown(server).unwrap();
    let mut seen_closing = [false; 2];
    let both_time_wait = sim.run_until_with(Duration::from_secs(1), |sim| {
        let states = [
            sim.host("host-a").unwrap().tcp_state(client).unwrap(),
            sim.host("host-b").unwrap().tcp_state(server).unwrap(),
        ];
        for (seen, state) in seen_closing.iter_mut().zip(states) {
            *seen |= state == State::Closing;
        }
        states.iter().all(|s| *s == State::TimeWait)
    });
    assert!(both_time_wait);
    assert_eq!(seen_closing, [true, true], "RFC 9293 §3.6, Figure 13");
    // TIME-WAIT lasts its 2 s, then the connections are gone.
    sim.run_for(Duration::from_millis(1900));
    assert_eq!(
        sim.host("host-a").unwrap().tcp_state(client),
        Ok(State::TimeWait)
    );
    sim.run_for(Duration::from_millis(200));
    assert_eq!(
        sim.host("host-a").unwrap().tcp_state(client),
        Ok(State::Closed)
    );
}

/// Moves `data` from host-a to host-b over IPv6 on a new connection with
/// `config`, checking it arrives byte-exact: the client and the time taken.
fn one_way(sim: &mut Simulator, config: TcpConfig, data: &[u8]) -> (TcpHandle, Duration) {
    let (client, server) = connected(sim, true, config);
    let start = sim.now();
    let (got, _) = exchange(sim, (client, server), data, &[], Duration::from_secs(60));
    assert!(got == data, "byte-exact");
    (client, sim.now() - start)
}

/// host-a — r1 — r2 — host-b with a 1280-byte MTU between the routers:
/// both hosts' links carry 1500, so only the path MTU can tell them.
fn narrow_middle() -> Simulator {
    let mut sim = Simulator::new(&two_routers_narrow_middle(), None).unwrap();
    tcp::wait_for_addresses(&mut sim, Duration::from_secs(60));
    sim
}

#[test]
fn the_send_mss_follows_the_path_mtu() {
    for v6 in [true, false] {
        let mut sim = narrow_middle();
        let (client, server) = connected(&mut sim, v6, TcpConfig::default());
        let ip = if v6 { 40 } else { 20 };
        let mss = |sim: &Simulator| {
            let c = sim.host("host-a").unwrap().tcp_connection(client).unwrap();
            c.negotiated().unwrap().send_mss
        };
        // Both ends offered MSS for 1500-byte links.
        assert_eq!(mss(&sim), 1500 - ip - 20 - 12);
        let data = varied(300_000, 9);
        blocking::write_all(&mut sim, "host-a", client, &data, Duration::from_secs(60)).unwrap();
        host_mut(&mut sim, "host-a").tcp_shutdown(client).unwrap();
        let got =
            blocking::read_to_end(&mut sim, "host-b", server, Duration::from_secs(120)).unwrap();
        assert!(got == data, "got {} of {} bytes", got.len(), data.len());
        // Packet Too Big (RFC 8201) or Fragmentation Needed (RFC 1191)
        // lowered the path MTU, and the connection's segments with it.
        assert_eq!(mss(&sim), 1280 - ip - 20 - 12, "IPv6: {v6}");
        let r1 = sim.host("r1").unwrap().counters();
        assert!(r1.icmpv6_errors_sent + r1.icmpv4_errors_sent >= 1);
        assert_eq!(
            sim.host("host-a").unwrap().counters().ipv6_fragments_sent,
            0
        );
    }
}

#[test]
fn a_tail_drop_burst_is_repaired_by_sack_without_a_timeout() {
    // host-a's 1 Gbit/s wire queues 1024 frames, and the interface 1024
    // more behind them: slow start overruns both
    // and a burst of tail drops leaves hundreds of holes, kept and lost
    // segments alternating. The receiver must keep every out-of-order
    // segment and the sender's scoreboard every SACKed range, or recovery
    // stalls until the retransmission timer fires.
    let mut sim = network();
    let config = TcpConfig {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        ..TcpConfig::default()
    };
    let data = varied(24 << 20, 5);
    let (client, took) = one_way(&mut sim, config, &data);
    let seconds = took.as_secs_f64();
    let a = sim.host("host-a").unwrap();
    // The device ring (as deep as the wire's queue) fills, the interface
    // queue behind it fills, and it tail-drops.
    let interface = &a.interfaces()[0];
    let wire_drops = interface.counters.queue_drops + interface.counters.tx_link_errors;
    let counters = a.tcp_connection(client).unwrap().counters();
    assert!(wire_drops > 50, "the queue overflowed: {wire_drops} drops");
    assert_eq!(counters.retransmission_timeouts, 0, "{counters:?}");
    assert!(counters.fast_retransmits >= wire_drops / 2, "{counters:?}");
    // Close to the 1 Gbit/s line rate (goodput at most 1428/1514 of it).
    let bits_per_second = data.len() as f64 * 8.0 / seconds;
    assert!(bits_per_second > 0.8e9, "{bits_per_second:.3e} bit/s");
}

#[test]
fn the_short_tail_of_a_write_does_not_wait_for_a_delayed_ack() {
    // A write of whole segments and a short tail, the connection left
    // open (as a ttcp sender waits for the last ACK before closing).
    // Plain Nagle held the tail until the last full segment was ACKed;
    // the receiver delays that ACK 40 ms when the full segments are odd
    // in number. With Minshall's modification only an unacknowledged
    // earlier short segment holds it.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../topologies/fast-ethernet.toml"),
    )
    .unwrap();
    for full_segments in 1..=4 {
        let mut sim = Simulator::new(&Topology::from_toml_str(&text).unwrap(), None).unwrap();
        sim.run_for(Duration::from_millis(1));
        let (client, server) = connected(&mut sim, true, TcpConfig::default());
        let mss = {
            let c = sim.host("host-a").unwrap().tcp_connection(client).unwrap();
            c.negotiated().unwrap().send_mss
        };
        let data = varied(full_segments * mss + 100, 5);
        let start = sim.now();
        assert_eq!(
            host_mut(&mut sim, "host-a").tcp_send(client, &data),
            Ok(data.len())
        );
        let mut got = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        assert!(sim.run_until_with(Duration::from_secs(1), |sim| {
            while let Ok(n @ 1..) = host_mut(sim, "host-b").tcp_recv(server, &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
            got.len() == data.len()
        }));
        assert!(got == data, "byte-exact");
        // A few segments' wire time (about 0.12 ms each) and a round
        // trip; the delayed-ACK timer would add 40 ms.
        let took = sim.now() - start;
        assert!(
            took < Duration::from_millis(5),
            "{full_segments} full segments and a tail took {took:?}"
        );
    }
}

#[test]
fn small_socket_buffers_with_nagle_do_not_wait_for_delayed_acks() {
    // The SunOS study's 4 KB socket buffers on a 100 Mbit/s wire, Nagle
    // on: each write's last short segment is ACKed when the reader drains
    // its buffer, not 40 ms later by the delayed-ACK timer.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../topologies/fast-ethernet.toml"),
    )
    .unwrap();
    let mut sim = Simulator::new(&Topology::from_toml_str(&text).unwrap(), None).unwrap();
    // DAD is off in this profile: the addresses are usable at once.
    sim.run_for(Duration::from_millis(1));
    let config = TcpConfig {
        send_buffer: 4096,
        recv_buffer: 4096,
        ..TcpConfig::default()
    };
    let (_, took) = one_way(&mut sim, config, &varied(256 * 1024, 3));
    // 64 windows of 4 KB, each about 0.35 ms of wire and round trip: some
    // 25 ms; waiting for the delayed ACK would take over a second.
    assert!(took < Duration::from_millis(200), "took {took:?}");
}
