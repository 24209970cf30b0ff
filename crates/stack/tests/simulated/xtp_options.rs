//! XTP's per-association options through the host, on the default
//! network: implicit setup (data in FIRST) against explicit, rate control
//! (rate and burst, the peer's traffic specifier obeyed), reservation
//! mode, delivery requests (DREQ), CTIMER keep-alives and CTIMEOUT.

use crate::xtp_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::iface::host::XtpError;
use stack::runner::Simulator;
use stack::socket::xtp::{Failure, RateLimit, Service, State, XtpConfig, XtpHandle};
use xtp_support::*;

fn listen(sim: &mut Simulator, config: XtpConfig) -> XtpHandle {
    let any: IpAddr = "::".parse().unwrap();
    host_mut(sim, "host-b")
        .xtp_listen(SocketAddr::new(any, PORT), config)
        .unwrap()
}

fn remote(sim: &Simulator) -> SocketAddr {
    SocketAddr::new(address_of(sim, "host-b", true), PORT)
}

/// host-a writes `data` right after connecting and closes; returns the
/// virtual time until host-b has read it all (and its end), and host-b's
/// association handle.
fn one_message(sim: &mut Simulator, config: XtpConfig, data: &[u8]) -> (Duration, XtpHandle) {
    let listener = listen(sim, config);
    let start = sim.now();
    let remote = remote(sim);
    let a = host_mut(sim, "host-a").xtp_connect(remote, config).unwrap();
    assert_eq!(host_mut(sim, "host-a").xtp_send(a, data), Ok(data.len()));
    host_mut(sim, "host-a").xtp_shutdown(a).unwrap();
    let (mut server, mut got, mut buf) = (None, Vec::new(), vec![0u8; 65536]);
    let done = sim.run_until_with(Duration::from_secs(30), |sim| {
        let b = host_mut(sim, "host-b");
        server = server.or_else(|| b.xtp_accept(listener).ok());
        let Some(s) = server else { return false };
        loop {
            match b.xtp_recv(s, &mut buf) {
                Ok(0) => return true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(XtpError::WouldBlock) => return false,
                Err(e) => panic!("{e}"),
            }
        }
    });
    assert!(done, "the message did not arrive");
    assert_same(&got, data, "the message");
    (sim.now().saturating_duration_since(start), server.unwrap())
}

#[test]
fn implicit_setup_delivers_in_first_sooner_than_explicit() {
    let message = pattern(1000, 9);
    let mut sim = default_network();
    let implicit = XtpConfig::default();
    let (fast, b) = one_message(&mut sim, implicit, &message);
    let counters = sim
        .host("host-b")
        .unwrap()
        .xtp_association(b)
        .unwrap()
        .counters();
    // The whole message, and its WCLOSE, rode in FIRST.
    assert_eq!(counters.data_packets_received, 1, "{counters:?}");
    assert_eq!(counters.data_bytes_received, 1000);

    let mut sim = default_network();
    let explicit = XtpConfig {
        implicit: false,
        ..XtpConfig::default()
    };
    let (slow, _) = one_message(&mut sim, explicit, &message);
    // Explicit setup waits a round trip (FIRST, TCNTL) before the data.
    assert!(
        fast < slow,
        "implicit {fast:?} is not faster than explicit {slow:?}"
    );
}

#[test]
fn rate_and_burst_pace_the_sender_even_when_only_the_receiver_asks() {
    let limit = RateLimit {
        rate: 1_000_000,
        burst: 10_000,
    };
    let message = pattern(1 << 20, 10);
    for (sender, receiver) in [
        (Some(limit), None),
        // The receiver's traffic specifier (TCNTL) asks for the rate.
        (None, Some(limit)),
    ] {
        let mut sim = default_network();
        let listener = listen(
            &mut sim,
            XtpConfig {
                rate: receiver,
                ..XtpConfig::default()
            },
        );
        let config = XtpConfig {
            rate: sender,
            implicit: false,
            ..XtpConfig::default()
        };
        let remote = remote(&sim);
        let a = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, config)
            .unwrap();
        let mut b = None;
        assert!(sim.run_until_with(Duration::from_secs(5), |sim| {
            b = b.or_else(|| host_mut(sim, "host-b").xtp_accept(listener).ok());
            b.is_some()
                && sim
                    .host("host-a")
                    .unwrap()
                    .xtp_readiness(a)
                    .unwrap()
                    .established
        }));
        let start = sim.now();
        let (at_b, _) = exchange(
            &mut sim,
            (a, b.unwrap()),
            &message,
            &[],
            Duration::from_secs(10),
        );
        assert_same(&at_b, &message, "paced transfer");
        let took = sim.now().saturating_duration_since(start).as_secs_f64();
        // 1 MiB at 1 MB/s: 1.05 s, less the first burst, plus the close.
        assert!((0.95..1.3).contains(&took), "took {took} s");
        let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
        assert!(assoc.counters().rate_stalls > 0);
    }
}

#[test]
fn reservation_mode_grants_only_the_readers_buffer() {
    for reservation in [true, false] {
        let mut sim = default_network();
        let config = XtpConfig {
            reservation,
            ..XtpConfig::default()
        };
        let (a, b) = associate(&mut sim, true, config);
        let data = pattern(400_000, 11);
        let (mut sent, mut got, mut most) = (0, Vec::new(), 0);
        let mut buf = vec![0u8; 4096];
        // A slow reader: one 4 KiB buffer every 5 ms of virtual time.
        let mut done = false;
        for _ in 0..2000 {
            let h = host_mut(&mut sim, "host-a");
            while sent < data.len() {
                match h.xtp_send(a, &data[sent..]) {
                    Ok(n) => sent += n,
                    Err(_) => break,
                }
            }
            sim.run_for(Duration::from_millis(5));
            let h = host_mut(&mut sim, "host-b");
            most = most.max(h.xtp_association(b).unwrap().readable());
            if let Ok(n) = h.xtp_recv(b, &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
            if got.len() == data.len() {
                done = true;
                break;
            }
        }
        assert!(done, "reservation {reservation}: got {}", got.len());
        assert_same(&got, &data, "reserved transfer");
        eprintln!("reservation {reservation}: at most {most} bytes waited");
        if reservation {
            // alloc = read + the reader's 4 KiB: no more than the first
            // grant (64 KiB before any read) ever waits.
            assert!(most <= 64 * 1024, "{most} bytes waited for the reader");
        } else {
            // alloc = read + the 256 KiB buffer.
            assert!(most > 200 * 1024, "only {most} bytes waited");
        }
    }
}

#[test]
fn delivery_requests_are_answered_once_the_reader_took_the_data() {
    for dreq in [true, false] {
        let mut sim = default_network();
        let config = XtpConfig {
            delivery_requests: dreq,
            ..XtpConfig::default()
        };
        let (a, b) = associate(&mut sim, true, config);
        host_mut(&mut sim, "host-a")
            .xtp_send(a, &pattern(20_000, 12))
            .unwrap();
        sim.run_for(Duration::from_millis(20));
        let sender = |sim: &Simulator| {
            let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
            (assoc.send_queued(), assoc.delivered())
        };
        assert_eq!(
            sim.host("host-b")
                .unwrap()
                .xtp_association(b)
                .unwrap()
                .readable(),
            20_000
        );
        // Acknowledged on arrival either way (while data are unacknowledged,
        // WTIMER asks with SREQ, whose answer does not wait for the
        // reader), but not delivered while unread.
        assert_eq!(sender(&sim), (0, 0), "dreq {dreq}");
        let mut buf = vec![0u8; 32768];
        assert_eq!(
            host_mut(&mut sim, "host-b").xtp_recv(b, &mut buf),
            Ok(20_000)
        );
        sim.run_for(Duration::from_millis(20));
        // The DREQ answer comes once the reader took the data.
        let delivered = if dreq { 20_000 } else { 0 };
        assert_eq!(sender(&sim), (0, delivered), "dreq {dreq}");
    }
}

#[test]
fn ctimer_keeps_an_idle_association_alive() {
    let mut sim = default_network();
    let config = XtpConfig {
        ctimer: Duration::from_secs(1),
        ..XtpConfig::default()
    };
    let (a, b) = associate(&mut sim, true, config);
    sim.run_for(Duration::from_secs(10));
    let mut keepalives = 0;
    for (name, h) in [("host-a", a), ("host-b", b)] {
        let assoc = sim.host(name).unwrap().xtp_association(h).unwrap();
        assert_eq!(assoc.state(), State::Active, "{name}");
        assert_eq!(assoc.error(), None, "{name}");
        keepalives += assoc.counters().keepalives;
    }
    assert!(keepalives >= 5, "{keepalives} keep-alives in 10 s");
}

#[test]
fn ctimeout_bounds_the_retries_in_time() {
    let mut sim = default_network();
    let config = XtpConfig {
        retries: 1000,
        wtimer: Duration::from_millis(100),
        ctimeout: Duration::from_secs(3),
        ..XtpConfig::default()
    };
    let nowhere: SocketAddr = "[2001:db8:b::dead]:7036".parse().unwrap();
    let a = host_mut(&mut sim, "host-a")
        .xtp_connect(nowhere, config)
        .unwrap();
    let start = sim.now();
    let failed = sim.run_until_with(Duration::from_secs(60), |sim| {
        sim.host("host-a")
            .unwrap()
            .xtp_association(a)
            .unwrap()
            .error()
            .is_some()
    });
    assert!(failed);
    let took = sim.now().saturating_duration_since(start);
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    assert_eq!(assoc.error(), Some(Failure::TimedOut));
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

/// Two associations from host-a, `first` opened before `second`, each
/// with 20 kB to send at the same instant: how much of `second`'s data
/// host-b holds when `first`'s first byte arrives.
fn second_arrived_before_first(first: XtpConfig, second: XtpConfig) -> usize {
    let mut sim = default_network();
    let listener = listen(&mut sim, XtpConfig::default());
    let remote = remote(&sim);
    let mut ends = Vec::new();
    for config in [first, second] {
        let a = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, config)
            .unwrap();
        let mut b = None;
        assert!(sim.run_until_with(Duration::from_secs(5), |sim| {
            b = b.or_else(|| host_mut(sim, "host-b").xtp_accept(listener).ok());
            b.is_some()
                && sim
                    .host("host-a")
                    .unwrap()
                    .xtp_readiness(a)
                    .unwrap()
                    .established
        }));
        ends.push((a, b.unwrap()));
    }
    for &(a, _) in &ends {
        host_mut(&mut sim, "host-a")
            .xtp_send(a, &pattern(20_000, 13))
            .unwrap();
    }
    let readable = |sim: &Simulator, b| {
        sim.host("host-b")
            .unwrap()
            .xtp_association(b)
            .unwrap()
            .readable()
    };
    let mut seen = None;
    assert!(sim.run_until_with(Duration::from_secs(1), |sim| {
        if readable(sim, ends[0].1) > 0 {
            seen = Some(readable(sim, ends[1].1));
        }
        seen.is_some()
    }));
    seen.unwrap()
}

#[test]
fn sorting_serves_the_higher_priority_association_first() {
    let plain = XtpConfig {
        implicit: false,
        ..XtpConfig::default()
    };
    let urgent = XtpConfig {
        sort: Some(100),
        ..plain
    };
    // Without priorities the host serves associations in slot order: the
    // first one's data leads.
    assert!(second_arrived_before_first(plain, plain) < 20_000);
    // With one, its whole burst leaves first, though opened second.
    assert_eq!(second_arrived_before_first(plain, urgent), 20_000);
}

#[test]
fn noerr_gives_losses_up_and_noflow_lifts_alloc() {
    // NOERR on the impaired network: nothing resent; what arrives is
    // delivered and what is lost is counted, byte for byte.
    let mut sim = network_of(&impaired_topology(7), None);
    let config = XtpConfig {
        noerr: true,
        ..XtpConfig::default()
    };
    let (a, b) = associate(&mut sim, true, config);
    let data = pattern(2 << 20, 14);
    let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(60));
    let ca = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .counters();
    let cb = sim
        .host("host-b")
        .unwrap()
        .xtp_association(b)
        .unwrap()
        .counters();
    assert_eq!(ca.retransmitted_packets, 0, "{ca:?}");
    assert!(cb.bytes_given_up > 0, "the wire lost nothing: {cb:?}");
    assert_eq!(at_b.len() as u64 + cb.bytes_given_up, data.len() as u64);
    assert!(at_b.len() > data.len() * 9 / 10);

    // NOFLOW from the receiver: the sender stops counting on alloc.
    let mut sim = default_network();
    let config = XtpConfig {
        noflow: true,
        ..XtpConfig::default()
    };
    let (a, b) = associate(&mut sim, true, config);
    let data = pattern(1 << 20, 15);
    let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(30));
    assert_same(&at_b, &data, "NOFLOW transfer");
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    assert_eq!(assoc.peer_alloc(), u64::MAX);
}

/// Runs one exchange under `service`: host-a's request (one message),
/// host-b's reply if it sends one; both ends then close on their own.
fn service_exchange(service: Service, reply: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
    let mut sim = default_network();
    let config = XtpConfig {
        service,
        ..XtpConfig::default()
    };
    let listener = listen(&mut sim, XtpConfig::default());
    let remote = remote(&sim);
    let request = pattern(3000, 16);
    let h = host_mut(&mut sim, "host-a");
    let a = h.xtp_connect(remote, config).unwrap();
    assert_eq!(h.xtp_send(a, &request), Ok(3000));
    // One message: the sending half closed with it.
    assert_eq!(h.xtp_send(a, b"more"), Err(XtpError::Shutdown));
    let (mut b, mut at_b, mut at_a, mut replied) = (None, Vec::new(), Vec::new(), false);
    let mut buf = vec![0u8; 8192];
    let done = sim.run_until_with(Duration::from_secs(10), |sim| {
        let hb = host_mut(sim, "host-b");
        b = b.or_else(|| hb.xtp_accept(listener).ok());
        let Some(sb) = b else { return false };
        while let Ok(n) = hb.xtp_recv(sb, &mut buf) {
            if n == 0 {
                break;
            }
            at_b.extend_from_slice(&buf[..n]);
        }
        if at_b.len() == request.len() && !replied {
            replied = true;
            if let Some(reply) = reply {
                assert_eq!(hb.xtp_send(sb, reply), Ok(reply.len()));
            }
        }
        let ha = host_mut(sim, "host-a");
        while let Ok(n) = ha.xtp_recv(a, &mut buf) {
            if n == 0 {
                break;
            }
            at_a.extend_from_slice(&buf[..n]);
        }
        [("host-a", a), ("host-b", sb)]
            .iter()
            .all(|&(n, h)| sim.host(n).unwrap().xtp_readiness(h).unwrap().closed)
    });
    assert!(done, "{service:?}: the association did not close by itself");
    for (name, handle) in [("host-a", a), ("host-b", b.unwrap())] {
        let assoc = sim.host(name).unwrap().xtp_association(handle).unwrap();
        assert_eq!(assoc.service(), service, "{name}");
        assert_eq!(assoc.error(), None, "{name}: {service:?}");
    }
    assert_same(&at_b, &request, "the request");
    (at_b, at_a)
}

#[test]
fn service_types_carry_one_message_each_way_or_one_way() {
    let reply = pattern(5000, 17);
    let (_, at_a) = service_exchange(Service::Transaction, Some(&reply));
    assert_same(&at_a, &reply, "the transaction's reply");
    for datagram in [
        Service::AcknowledgedDatagram,
        Service::UnacknowledgedDatagram,
    ] {
        let (_, at_a) = service_exchange(datagram, None);
        assert!(at_a.is_empty());
    }
    // A message must fit the send buffer whole.
    let mut sim = default_network();
    let config = XtpConfig {
        service: Service::Transaction,
        send_buffer: 1000,
        ..XtpConfig::default()
    };
    let remote = remote(&sim);
    let h = host_mut(&mut sim, "host-a");
    let a = h.xtp_connect(remote, config).unwrap();
    assert_eq!(
        h.xtp_send(a, &[0; 1001]),
        Err(XtpError::MessageTooLarge {
            len: 1001,
            max: 1000
        })
    );
}

#[test]
fn beginning_tags_mark_their_offsets_through_loss() {
    let mut sim = network_of(&impaired_topology(8), None);
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    let data = pattern(600_000, 18);
    let chunk = 5000;
    let (mut next, mut got, mut tags) = (0usize, Vec::new(), Vec::new());
    let mut buf = vec![0u8; 65536];
    let done = sim.run_until_with(Duration::from_secs(60), |sim| {
        let h = host_mut(sim, "host-a");
        // Each 5000-byte record goes tagged with its number; the rest of
        // a record the send buffer did not take goes untagged.
        while next < data.len() {
            let end = ((next / chunk + 1) * chunk).min(data.len());
            let sent = if next % chunk == 0 {
                h.xtp_send_tagged(a, (next / chunk) as u64, &data[next..end])
            } else {
                h.xtp_send(a, &data[next..end])
            };
            match sent {
                Ok(n) => next += n,
                Err(_) => break,
            }
        }
        let h = host_mut(sim, "host-b");
        while let Ok(n) = h.xtp_recv(b, &mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        tags.extend(h.xtp_recv_tags(b).unwrap());
        got.len() == data.len()
    });
    assert!(done, "got {} of {}", got.len(), data.len());
    assert_same(&got, &data, "tagged records");
    let expected: Vec<(u64, u64)> = (0..data.len() / chunk)
        .map(|i| ((i * chunk) as u64, i as u64))
        .collect();
    assert_eq!(tags, expected);
    let counters = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .counters();
    assert!(counters.retransmitted_packets > 0, "{counters:?}");
}

#[test]
fn a_sender_held_by_alloc_probes_ever_more_rarely_and_resumes_at_once() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, true, XtpConfig::default());
    let data = pattern(1 << 20, 19);
    let mut sent = 0;
    // host-b reads nothing for ten seconds: its 256 KiB buffer fills.
    for _ in 0..100 {
        let h = host_mut(&mut sim, "host-a");
        while let Ok(n) = h.xtp_send(a, &data[sent..]) {
            sent += n;
        }
        sim.run_for(Duration::from_millis(100));
    }
    let requests = |sim: &Simulator| {
        sim.host("host-a")
            .unwrap()
            .xtp_association(a)
            .unwrap()
            .counters()
            .sreq_sent
    };
    let held = requests(&sim);
    eprintln!("{held} status requests while held");
    assert!(held < 200, "{held} status requests while held for 10 s");
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    assert_eq!(assoc.error(), None);
    // Reading opens the window: the alloc update restarts the sender.
    let start = sim.now();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let done = sim.run_until_with(Duration::from_secs(10), |sim| {
        let h = host_mut(sim, "host-a");
        while sent < data.len() {
            match h.xtp_send(a, &data[sent..]) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        let h = host_mut(sim, "host-b");
        while let Ok(n) = h.xtp_recv(b, &mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got.len() == data.len()
    });
    assert!(done, "got {} of {}", got.len(), data.len());
    assert_same(&got, &data, "after the stall");
    let took = sim.now().saturating_duration_since(start);
    assert!(took < Duration::from_millis(500), "resumed after {took:?}");
}
