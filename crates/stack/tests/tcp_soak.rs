//! TCP over a long run: connections opened, used both ways and closed,
//! over and over, on an impaired network (loss, duplication, reordering,
//! a 1280-byte MTU on the far link). Nothing may leak: after each round
//! every connection is gone (TIME-WAIT included), the buffer pool is back
//! where it started, and the process's resident memory stops growing once
//! warmed up.
//!
//! The short version runs in CI; the soak is the README's command:
//! `STACKSCOPE_SOAK_SECS=600 cargo test --release -p stackscope-stack
//! --test tcp_soak -- --ignored --nocapture`.

mod network_support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use network_support::*;
use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::Simulator;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::topology::Topology;

const PORT: u16 = 7000;
/// Connections per round.
const PARALLEL: usize = 4;

fn config() -> TcpConfig {
    TcpConfig {
        // Short TIME-WAIT so rounds end quickly on the virtual clock.
        time_wait: Duration::from_secs(1),
        ..TcpConfig::default()
    }
}

fn network() -> Simulator {
    let topology = Topology::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../topologies/impaired.toml"
    ))
    .unwrap();
    let mut sim = Simulator::new(&topology, None).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    sim
}

/// Resident set size of this process, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One round: `PARALLEL` connections from host-a, half over IPv6 and half
/// over IPv4, each moving `bytes` each way, then closed; returns once
/// every connection is gone from both hosts.
fn round(sim: &mut Simulator, listeners: &[TcpHandle], round: usize, bytes: usize) {
    let targets: Vec<SocketAddr> = (0..PARALLEL)
        .map(|i| {
            let b = sim.host("host-b").unwrap();
            let ip = if i % 2 == 0 {
                IpAddr::V6(b.global_ipv6_addresses()[0])
            } else {
                IpAddr::V4(b.ipv4_addresses()[0])
            };
            SocketAddr::new(ip, PORT)
        })
        .collect();
    let data: Vec<u8> = (0..bytes).map(|i| (i * 31 + round) as u8).collect();
    let clients: Vec<TcpHandle> = targets
        .iter()
        .map(|&t| host_mut(sim, "host-a").tcp_connect(t, config()).unwrap())
        .collect();
    let mut servers: Vec<TcpHandle> = Vec::new();
    // Per end: bytes sent, shut down, bytes received, end of stream.
    let mut ends: Vec<(String, TcpHandle, usize, bool, usize, bool)> = clients
        .iter()
        .map(|&c| ("host-a".to_string(), c, 0, false, 0, false))
        .collect();
    let mut buf = vec![0u8; 64 * 1024];
    let finished = sim.run_until_with(Duration::from_secs(600), |sim| {
        for &l in listeners {
            while let Ok(s) = host_mut(sim, "host-b").tcp_accept(l) {
                servers.push(s);
                ends.push(("host-b".to_string(), s, 0, false, 0, false));
            }
        }
        for (name, handle, sent, shut, got, eof) in ends.iter_mut() {
            let h = host_mut(sim, name);
            while *sent < data.len() {
                match h.tcp_send(*handle, &data[*sent..]) {
                    Ok(n) => *sent += n,
                    Err(TcpError::WouldBlock) => break,
                    Err(e) => panic!("round {round}: {name} send: {e}"),
                }
            }
            if *sent == data.len() && !*shut {
                h.tcp_shutdown(*handle).unwrap();
                *shut = true;
            }
            while !*eof {
                match h.tcp_recv(*handle, &mut buf) {
                    Ok(0) => *eof = true,
                    Ok(n) => {
                        assert_eq!(&buf[..n], &data[*got..*got + n], "round {round}: {name}");
                        *got += n;
                    }
                    Err(TcpError::WouldBlock) => break,
                    Err(e) => panic!("round {round}: {name} recv: {e}"),
                }
            }
        }
        ends.len() == 2 * PARALLEL && ends.iter().all(|e| e.3 && e.5)
    });
    if !finished {
        for e in &ends {
            let h = sim.host(&e.0).unwrap();
            eprintln!(
                "{} {:?}: sent {} shut {} got {} eof {} state {:?} {:?}",
                e.0,
                e.1,
                e.2,
                e.3,
                e.4,
                e.5,
                h.tcp_state(e.1),
                h.tcp_connection(e.1).map(|c| c.counters())
            );
        }
        eprintln!("a drops {:?}", sim.host("host-a").unwrap().drops());
        eprintln!("b drops {:?}", sim.host("host-b").unwrap().drops());
        eprintln!("now {:?}", sim.now());
    }
    assert!(finished, "round {round} did not finish");
    for e in &ends {
        assert_eq!(e.4, bytes, "round {round}: {} got {} bytes", e.0, e.4);
        host_mut(sim, &e.0).tcp_close(e.1).unwrap();
    }
    // FIN exchanges and TIME-WAIT (1 s) end every connection.
    let gone = sim.run_until_with(Duration::from_secs(120), |sim| {
        sim.host("host-a").unwrap().tcp_socket_count() == 0
            && sim.host("host-b").unwrap().tcp_socket_count() == listeners.len()
    });
    assert!(gone, "round {round}: connections linger");
}

/// host-b's listeners, one per family.
fn listen(sim: &mut Simulator) -> Vec<TcpHandle> {
    let h = host_mut(sim, "host-b");
    ["::", "0.0.0.0"]
        .iter()
        .map(|any| {
            let local = SocketAddr::new(any.parse().unwrap(), PORT);
            h.tcp_listen(local, config(), ListenerConfig::default())
                .unwrap()
        })
        .collect()
}

/// Pool buffers in use across the network's hosts.
fn pool_in_use(sim: &Simulator) -> usize {
    sim.hosts().iter().map(|h| h.pool().in_use()).sum()
}

/// What a soak saw: rounds run, resident bytes after round 10 and at
/// most after it.
struct Soaked {
    rounds: usize,
    warm_rss: u64,
    peak_rss: u64,
}

fn soak(rounds_or_time: impl Fn(usize, Duration) -> bool, bytes: usize) -> Soaked {
    let mut sim = network();
    let listeners = listen(&mut sim);
    let start = Instant::now();
    round(&mut sim, &listeners, 0, bytes);
    let mut rounds = 1;
    let mut warm_rss = None;
    let mut peak_rss = 0;
    while rounds_or_time(rounds, start.elapsed()) {
        round(&mut sim, &listeners, rounds, bytes);
        rounds += 1;
        // Every buffer a round took goes back once the network is idle
        // (reassembly and neighbour queues let go within their timeouts).
        let drained = sim.run_until_with(Duration::from_secs(120), |sim| pool_in_use(sim) == 0);
        assert!(
            drained,
            "round {rounds}: buffers still in use per host: {:?}",
            sim.hosts()
                .iter()
                .map(|h| (h.name().to_string(), h.pool().in_use()))
                .collect::<Vec<_>>()
        );
        // The allocator warms up over the first rounds; after that the
        // resident size stays put.
        if rounds == 10 {
            warm_rss = Some(resident_bytes());
        }
        if let Some(warm) = warm_rss {
            let now = resident_bytes();
            peak_rss = peak_rss.max(now);
            assert!(
                now <= warm + warm / 10 + (4 << 20),
                "resident memory grew from {warm} to {now} bytes by round {rounds}"
            );
        }
    }
    Soaked {
        rounds,
        warm_rss: warm_rss.unwrap_or(0),
        peak_rss,
    }
}

#[test]
fn rounds_of_connections_leave_nothing_behind() {
    let soaked = soak(|done, _| done < 12, 40_000);
    assert_eq!(soaked.rounds, 12);
}

#[test]
#[ignore = "a soak of STACKSCOPE_SOAK_SECS seconds (default 600): run in release with --ignored"]
fn a_long_soak_grows_no_memory() {
    let secs: u64 = std::env::var("STACKSCOPE_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let limit = Duration::from_secs(secs);
    let soaked = soak(|_, elapsed| elapsed < limit, 1 << 20);
    println!(
        "soak: {} rounds of {PARALLEL} connections x 1 MiB each way in {secs} s; \
         resident {:.1} MiB after round 10, at most {:.1} MiB after it, {:.1} MiB at the end",
        soaked.rounds,
        soaked.warm_rss as f64 / 1048576.0,
        soaked.peak_rss as f64 / 1048576.0,
        resident_bytes() as f64 / 1048576.0,
    );
}
