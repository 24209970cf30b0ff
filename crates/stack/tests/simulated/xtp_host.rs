//! XTP through the host: associations between host-a and host-b across
//! the default network's router, over IPv6 and IPv4: the FIRST/TCNTL key
//! exchange, byte-exact transfers both ways at once, the graceful close
//! (WCLOSE, RCLOSE, END) freeing both contexts, the abortive close, and a
//! FIRST to a port nobody listens on refused by DIAG.

use crate::xtp_support;

use std::net::SocketAddr;
use std::time::Duration;

use stack::iface::host::XtpError;
use stack::socket::xtp::{ErrorControl, Failure, Role, State, XtpConfig};
use wire::xtp::KEY_RETURN;
use xtp_support::*;

#[test]
fn first_and_tcntl_exchange_keys() {
    let mut sim = default_network();
    let config = XtpConfig {
        implicit: false,
        ..XtpConfig::default()
    };
    let (a, b) = associate(&mut sim, true, config);
    let ha = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    let hb = sim.host("host-b").unwrap().xtp_association(b).unwrap();
    assert_eq!(ha.role(), Role::Initiator);
    assert_eq!(hb.role(), Role::Responder);
    // Each end knows the other's key; neither carries the return bit.
    assert_eq!(ha.peer_key(), Some(hb.own_key()));
    assert_eq!(hb.peer_key(), Some(ha.own_key()));
    assert_eq!(ha.own_key() & KEY_RETURN, 0);
    assert_ne!(ha.own_key(), 0);
    assert_eq!(ha.state(), State::Active);
    assert_eq!(ha.counters().first_sent, 1);
    assert_eq!(hb.counters().tcntl_sent, 1);
    // Default network: MTU 1500 on both ends.
    assert_eq!(ha.maxdata(), 1500 - 40 - 32);
    assert!(ha.srtt().is_some(), "the TCNTL answered FIRST's SREQ");
}

fn transfer_both_ways(v6: bool, config: XtpConfig) {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, v6, config);
    let up = pattern(3 << 20, 1);
    let down = pattern(1 << 20, 2);
    let (at_b, at_a) = exchange(&mut sim, (a, b), &up, &down, Duration::from_secs(60));
    assert_same(&at_b, &up, "host-a to host-b");
    assert_same(&at_a, &down, "host-b to host-a");
    let counters = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .counters();
    assert_eq!(
        counters.retransmitted_bytes, 0,
        "a clean path loses nothing"
    );
    assert!(counters.data_bytes_sent >= up.len() as u64);
    assert!(counters.sreq_sent > 0);
    for (name, handle) in [("host-a", a), ("host-b", b)] {
        host_mut(&mut sim, name).xtp_close(handle).unwrap();
    }
    sim.run_for(Duration::from_secs(5));
    // Both contexts are gone; the listener stays.
    assert_eq!(sim.host("host-a").unwrap().xtp_socket_count(), 0);
    assert_eq!(sim.host("host-b").unwrap().xtp_socket_count(), 1);
    for name in ["host-a", "host-b"] {
        let h = sim.host(name).unwrap();
        assert_eq!(drops(h, "xtp_bad_checksum"), 0, "{name}");
        assert_eq!(drops(h, "xtp_malformed"), 0, "{name}");
    }
}

#[test]
fn megabytes_each_way_over_ipv6() {
    transfer_both_ways(true, XtpConfig::default());
}

#[test]
fn megabytes_each_way_over_ipv4() {
    transfer_both_ways(false, XtpConfig::default());
}

#[test]
fn go_back_n_nocheck_and_explicit_setup_transfer_too() {
    transfer_both_ways(
        true,
        XtpConfig {
            error_control: ErrorControl::GoBackN,
            nocheck: true,
            implicit: false,
            ..XtpConfig::default()
        },
    );
}

#[test]
fn graceful_close_ends_both_contexts_without_error() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    let data = pattern(100_000, 3);
    let (at_b, at_a) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(10));
    assert_same(&at_b, &data, "host-a to host-b");
    assert!(at_a.is_empty());
    // Both halves closed (WCLOSE each way, RCLOSE each way): END follows
    // without any further call, and neither side saw an error.
    let closed = sim.run_until_with(Duration::from_secs(5), |sim| {
        ["host-a", "host-b"].iter().zip([a, b]).all(|(n, h)| {
            let r = sim.host(n).unwrap().xtp_readiness(h).unwrap();
            r.closed
        })
    });
    assert!(closed, "the close handshake did not finish");
    for (name, handle) in [("host-a", a), ("host-b", b)] {
        let assoc = sim.host(name).unwrap().xtp_association(handle).unwrap();
        assert_eq!(assoc.error(), None, "{name}");
        assert_eq!(assoc.state(), State::Closed, "{name}");
    }
}

#[test]
fn abort_resets_the_peer() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, false, XtpConfig::default());
    host_mut(&mut sim, "host-a")
        .xtp_send(a, &pattern(5000, 4))
        .unwrap();
    sim.run_for(Duration::from_millis(50));
    host_mut(&mut sim, "host-a").xtp_abort(a).unwrap();
    sim.run_for(Duration::from_millis(50));
    let hb = sim.host("host-b").unwrap();
    assert_eq!(hb.xtp_association(b).unwrap().error(), Some(Failure::Reset));
    let mut buf = [0u8; 8192];
    // What arrived before the abort can still be read, then the error.
    let h = host_mut(&mut sim, "host-b");
    assert_eq!(h.xtp_recv(b, &mut buf), Ok(5000));
    assert_eq!(
        h.xtp_recv(b, &mut buf),
        Err(XtpError::Association(Failure::Reset))
    );
    assert!(matches!(
        h.xtp_send(b, b"late"),
        Err(XtpError::Association(Failure::Reset))
    ));
    assert!(matches!(
        host_mut(&mut sim, "host-a").xtp_send(a, b"x"),
        Err(XtpError::InvalidHandle)
    ));
}

#[test]
fn a_first_nobody_listens_for_is_refused() {
    let mut sim = default_network();
    for v6 in [true, false] {
        let remote = SocketAddr::new(address_of(&sim, "host-b", v6), 4444);
        let a = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, XtpConfig::default())
            .unwrap();
        sim.run_for(Duration::from_millis(100));
        let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
        assert_eq!(assoc.error(), Some(Failure::Refused));
    }
    assert_eq!(drops(sim.host("host-b").unwrap(), "xtp_no_listener"), 2);
}

#[test]
fn a_silent_peer_times_the_association_out() {
    let mut sim = default_network();
    let config = XtpConfig {
        retries: 3,
        ..XtpConfig::default()
    };
    // A FIRST to an address nobody has: no answer, ever.
    let nowhere: SocketAddr = "[2001:db8:b::dead]:7036".parse().unwrap();
    let a = host_mut(&mut sim, "host-a")
        .xtp_connect(nowhere, config)
        .unwrap();
    sim.run_for(Duration::from_secs(30));
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    assert_eq!(assoc.error(), Some(Failure::TimedOut));
    assert_eq!(assoc.counters().first_sent, 4, "FIRST and three retries");
}

#[test]
fn abbreviated_close_stops_the_sender_and_frees_both_contexts() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    let data = pattern(2 << 20, 5);
    let (mut sent, mut read) = (0, 0);
    let mut buf = vec![0u8; 8192];
    // The reader takes 100 kB, then closes before the stream's end.
    let stopped = sim.run_until_with(Duration::from_secs(10), |sim| {
        let h = host_mut(sim, "host-a");
        loop {
            match h.xtp_send(a, &data[sent..]) {
                Ok(n) => sent += n,
                Err(XtpError::WouldBlock) => break,
                Err(XtpError::PeerStoppedReading) => return true,
                Err(e) => panic!("{e}"),
            }
        }
        let h = host_mut(sim, "host-b");
        if read < 100_000 {
            if let Ok(n) = h.xtp_recv(b, &mut buf) {
                read += n;
            }
            if read >= 100_000 {
                h.xtp_close(b).unwrap();
            }
        }
        false
    });
    assert!(stopped, "the sender never heard RCLOSE");
    assert!(sent < data.len(), "the close came before the end");
    host_mut(&mut sim, "host-a").xtp_close(a).unwrap();
    sim.run_for(Duration::from_secs(5));
    assert_eq!(sim.host("host-a").unwrap().xtp_socket_count(), 0);
    assert_eq!(sim.host("host-b").unwrap().xtp_socket_count(), 1);
}

/// host-a — r1 — r2 — host-b with a 1280-byte link between the routers,
/// narrower than either host's: only Packet Too Big tells the sender.
fn narrow_middle() -> stack::topology::Topology {
    let text = include_str!("../../../../topologies/two-routers.toml")
        .replacen(
            "name = \"eth1\"\nipv4 = \"203.0.113.1/24\"",
            "name = \"eth1\"\nmtu = 1280\nipv4 = \"203.0.113.1/24\"",
            1,
        )
        .replacen(
            "name = \"eth0\"\nipv4 = \"203.0.113.2/24\"",
            "name = \"eth0\"\nmtu = 1280\nipv4 = \"203.0.113.2/24\"",
            1,
        );
    assert!(text.matches("mtu = 1280").count() == 2);
    stack::topology::Topology::from_toml_str(&text).unwrap()
}

#[test]
fn packet_too_big_shrinks_the_packets_of_an_association() {
    let mut sim = network_of(&narrow_middle(), None);
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    // Both hosts' links carry 1500 bytes: the traffic specifiers agree on
    // 1428 bytes of data, which the middle link cannot carry.
    let before = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .maxdata();
    assert_eq!(before, 1500 - 40 - 32);
    let data = pattern(1 << 20, 6);
    let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(30));
    assert_same(&at_b, &data, "through the narrow link");
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    assert_eq!(assoc.maxdata(), 1280 - 40 - 32);
    assert!(assoc.counters().retransmitted_packets > 0);
}

#[test]
fn a_traced_association_leaves_room_for_the_trace_option() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    host_mut(&mut sim, "host-a")
        .xtp_set_traced(a, true)
        .unwrap();
    let data = pattern(300_000, 7);
    let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(10));
    assert_same(&at_b, &data, "traced transfer");
    let h = sim.host("host-a").unwrap();
    let assoc = h.xtp_association(a).unwrap();
    assert!(assoc.flow().traced);
    // The 8-byte trace option fits: no packet needed fragmenting.
    assert_eq!(assoc.maxdata(), 1500 - 40 - 32 - 8);
    assert_eq!(h.counters().ipv6_fragments_sent, 0);
}
