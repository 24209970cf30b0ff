//! TCP under impairment: two hosts on one wire, the wire losing,
//! reordering, duplicating and corrupting frames, delayed and rate-limited,
//! one profile per seed; every run moves 4 MiB in each direction at once
//! and must deliver both streams byte-exact within a virtual-time limit,
//! with retransmissions that the injected loss explains. Plus windows
//! scaled past 4 MiB on a long fat path, and three regressions the matrix
//! found, pinned down connection to connection.
//!
//! `cargo test` runs 9 seeds (every profile once); the full 100-seed
//! matrix takes about a minute (the stack is optimised in the dev profile
//! too, Cargo.toml):
//!
//! ```text
//! cargo test -p stackscope-stack --test tcp_impairments -- --ignored
//! ```

mod network_support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use network_support::host_mut;
use network_support::tcp::{self, exchange};
use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::phy::LinkStats;
use stack::runner::Simulator;
use stack::socket::tcp::congestion::{Algorithm, CongestionConfig};
use stack::socket::tcp::connection::{TcpConfig, TcpCounters};
use stack::topology::Topology;

/// Bytes each direction carries in a matrix run.
const STREAM: usize = 4 << 20;

// ----- The impairment profiles -----------------------------------------------

/// One wire setting of the matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Profile {
    name: &'static str,
    rate: &'static str,
    delay: &'static str,
    loss: f64,
    duplicate: f64,
    reorder: f64,
    reorder_delay: &'static str,
    corrupt: f64,
    /// Virtual time the whole exchange may take.
    limit: Duration,
}

// The time limits are about three times the slowest of 100 seeds. Loss
// makes runs slow because RFC 6298 puts the RTO at 1 s at least: with
// 10 % loss each way the window stays too small for three duplicate ACKs
// so often that timeouts dominate, and the model of Padhye et al. (SIGCOMM
// 1998) gives about 11 kB/s for p = 0.1, T0 = 1 s, RTT = 2 ms: ~380 s for
// 4 MiB, as measured.
const CLEAN: Profile = Profile {
    name: "clean",
    rate: "1Gbit",
    delay: "1ms",
    loss: 0.0,
    duplicate: 0.0,
    reorder: 0.0,
    reorder_delay: "1ms",
    corrupt: 0.0,
    limit: Duration::from_secs(5),
};

const PROFILES: [Profile; 9] = [
    CLEAN,
    Profile {
        name: "loss 1%",
        loss: 0.01,
        limit: Duration::from_secs(30),
        ..CLEAN
    },
    Profile {
        name: "loss 5%",
        loss: 0.05,
        limit: Duration::from_secs(300),
        ..CLEAN
    },
    Profile {
        name: "loss 10%",
        loss: 0.10,
        limit: Duration::from_secs(1200),
        ..CLEAN
    },
    Profile {
        name: "reorder",
        reorder: 0.05,
        reorder_delay: "500us",
        limit: Duration::from_secs(10),
        ..CLEAN
    },
    Profile {
        name: "duplicate",
        duplicate: 0.05,
        limit: Duration::from_secs(5),
        ..CLEAN
    },
    Profile {
        name: "corrupt",
        corrupt: 0.02,
        limit: Duration::from_secs(120),
        ..CLEAN
    },
    // 4 MiB each way at 20 Mbit/s takes 1.7 s of serialization alone.
    Profile {
        name: "delay+rate",
        rate: "20Mbit",
        delay: "20ms",
        limit: Duration::from_secs(10),
        ..CLEAN
    },
    Profile {
        name: "mixed",
        rate: "100Mbit",
        delay: "5ms",
        loss: 0.02,
        duplicate: 0.02,
        reorder: 0.02,
        reorder_delay: "2ms",
        corrupt: 0.01,
        limit: Duration::from_secs(300),
    },
];

/// What one seed runs: its profile and the TCP variant.
#[derive(Debug, Clone, Copy)]
struct Case {
    seed: u64,
    profile: Profile,
    v6: bool,
    algorithm: Algorithm,
    sack: bool,
}

impl Case {
    /// Deterministic from the seed: the profile cycles with period 9 and
    /// the variant bits with period 8, so (9 and 8 being coprime) 72
    /// consecutive seeds run every profile with every combination of
    /// family, congestion control and SACK.
    fn of(seed: u64) -> Self {
        Self {
            seed,
            profile: PROFILES[(seed % 9) as usize],
            v6: seed.is_multiple_of(2),
            algorithm: if seed % 4 < 2 {
                Algorithm::Cubic
            } else {
                Algorithm::NewReno
            },
            sack: seed % 8 < 4,
        }
    }

    fn describe(&self) -> String {
        format!(
            "seed {} ({}, {}, {:?}, SACK {})",
            self.seed,
            self.profile.name,
            if self.v6 { "IPv6" } else { "IPv4" },
            self.algorithm,
            if self.sack { "on" } else { "off" }
        )
    }

    fn tcp_config(&self) -> TcpConfig {
        TcpConfig {
            sack: self.sack,
            congestion: CongestionConfig {
                algorithm: self.algorithm,
                ..CongestionConfig::default()
            },
            ..TcpConfig::default()
        }
    }
}

/// host-a and host-b on one wire, with static addresses of both families
/// (no router, so no SLAAC to wait for).
fn two_hosts(seed: u64, wire: &str) -> Topology {
    let text = format!(
        r#"
seed = {seed}

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
ipv6 = ["2001:db8::a/64"]

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.11/24"
ipv6 = ["2001:db8::b/64"]

[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
seed = {seed}
{wire}
"#
    );
    Topology::from_toml_str(&text).unwrap_or_else(|e| panic!("topology: {e}\n{text}"))
}

fn wire_keys(p: &Profile) -> String {
    format!(
        "rate = \"{}\"\ndelay = \"{}\"\nloss = {}\nduplicate = {}\nreorder = {}\n\
         reorder_delay = \"{}\"\ncorrupt = {}\n",
        p.rate, p.delay, p.loss, p.duplicate, p.reorder, p.reorder_delay, p.corrupt
    )
}

/// A simulator whose hosts have finished DAD on their static addresses.
fn network(topology: &Topology) -> Simulator {
    let mut sim = Simulator::new(topology, None).unwrap();
    tcp::wait_for_addresses(&mut sim, Duration::from_secs(10));
    sim
}

/// A connection from host-a to a listener on host-b, both accepted. The
/// handshake itself may lose segments: SYN retransmission takes seconds.
fn connect(sim: &mut Simulator, v6: bool, config: TcpConfig) -> (TcpHandle, TcpHandle) {
    tcp::connect(sim, v6, config, Duration::from_secs(60))
}

/// Bytes that differ from seed to seed and from position to position.
fn stream(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let word = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.truncate(len);
    out
}

// ----- The matrix ------------------------------------------------------------

/// The receive window of a matrix run (TcpConfig's default buffer).
const WINDOW: u64 = 256 * 1024;

/// What one run measured.
struct Outcome {
    elapsed: Duration,
    /// host-a's connection (sending up), then host-b's (sending down).
    counters: [TcpCounters; 2],
    /// host-a's end of the wire, then host-b's: each counts the fate of
    /// the frames its host sent.
    links: [LinkStats; 2],
    /// Frames the hosts' own interface queues dropped.
    queue_drops: [u64; 2],
    mss: u64,
}

impl Outcome {
    fn summary(&self, case: &Case) -> String {
        let [a, b] = self.counters;
        format!(
            "{}: {:.2} s; retransmitted {} / {} bytes, timeouts {} / {}, fast {} / {}; \
             wire lost {} / {}, corrupted {} / {}, reordered {} / {}, duplicated {} / {}",
            case.describe(),
            self.elapsed.as_secs_f64(),
            a.bytes_retransmitted,
            b.bytes_retransmitted,
            a.retransmission_timeouts,
            b.retransmission_timeouts,
            a.fast_retransmits,
            b.fast_retransmits,
            self.links[0].dropped_loss,
            self.links[1].dropped_loss,
            self.links[0].corrupted,
            self.links[1].corrupted,
            self.links[0].reordered,
            self.links[1].reordered,
            self.links[0].duplicated,
            self.links[1].duplicated,
        )
    }
}

fn link_stats(h: &Host) -> LinkStats {
    h.interfaces()[0].link.stats()
}

/// Retransmissions in one direction against what the wire did to the
/// sender's frames (`tx`) and to the receiver's, which carry the ACKs
/// (`rx`).
///
/// * Lower bound. Every data byte lost (or corrupted, hence dropped by the
///   checksum) must be sent again, so `bytes_retransmitted` is at least the
///   lost data bytes. Which frames the wire drops is independent of what
///   they carry, so the lost data bytes are estimated as lost frames times
///   the average data bytes per frame sent (pure ACKs included in the
///   average). With tens to hundreds of lost frames per run, the binomial
///   noise of that estimate stays well within the factor of 2 allowed:
///   over 100 seeds the measured ratio was never below 0.9.
/// * Upper bound, what would be absurd. Fast retransmit resends little
///   beyond the lost segments; the measured ratio stayed below 3 except
///   around timeouts and reordering. After a timeout the sender goes back to SND.UNA and
///   resends in sequence without consulting the SACK scoreboard (RFC 6675
///   §5.1 lets it drop the SACK state), so each timeout may resend up to a
///   window the receiver already holds. Reordered and duplicated frames
///   cause spurious fast retransmissions, at most a segment each. So:
///   4 × lost bytes + one window per timeout + one segment per reordered or
///   duplicated frame; and never more than the whole stream (the worst
///   run, at 10 % loss, resent about half of it).
fn check_retransmissions(
    direction: &str,
    c: &TcpCounters,
    (tx, rx): (&LinkStats, &LinkStats),
    queue_drops: u64,
    mss: u64,
) {
    let lost = tx.dropped_loss + tx.corrupted + tx.dropped_queue_full + queue_drops;
    let noise = tx.reordered + rx.reordered + tx.duplicated + rx.duplicated;
    let rtx = c.bytes_retransmitted;
    let context = format!("{direction}: {c:?}, wire {tx:?}");
    if lost == 0 && noise == 0 && rx.dropped_loss == 0 && rx.corrupted == 0 {
        assert_eq!(rtx, 0, "a clean path retransmitted: {context}");
        assert_eq!(c.retransmission_timeouts, 0, "{context}");
        assert_eq!(c.fast_retransmits, 0, "{context}");
        return;
    }
    let per_frame = (c.bytes_sent + rtx) as f64 / tx.tx_frames.max(1) as f64;
    let expected = lost as f64 * per_frame;
    if lost >= 10 {
        assert!(
            rtx > 0,
            "{lost} frames lost, nothing retransmitted: {context}"
        );
        assert!(
            rtx as f64 >= expected / 2.0,
            "{rtx} bytes retransmitted for about {expected:.0} lost: {context}"
        );
    }
    let bound = 4.0 * expected + (c.retransmission_timeouts * WINDOW) as f64 + (noise * mss) as f64;
    assert!(
        rtx as f64 <= bound,
        "{rtx} bytes retransmitted, more than {bound:.0} (about {expected:.0} lost): {context}"
    );
    assert!(
        rtx <= STREAM as u64,
        "resent more than the stream: {context}"
    );
}

fn run_case(case: Case) -> Outcome {
    let topology = two_hosts(case.seed, &wire_keys(&case.profile));
    let mut sim = network(&topology);
    let config = case.tcp_config();
    let handles = connect(&mut sim, case.v6, config);
    let up = stream(STREAM, case.seed * 2 + 1);
    let down = stream(STREAM, case.seed * 2 + 2);
    let start = sim.now();
    let (at_b, at_a) = exchange(&mut sim, handles, &up, &down, case.profile.limit);
    let elapsed = sim.now().saturating_duration_since(start);
    // Byte-exact both ways: no corrupted, reordered or duplicated frame
    // reached the application.
    assert_eq!(at_b.len(), up.len(), "host-b received another length");
    assert!(at_b == up, "host-b received other bytes");
    assert_eq!(at_a.len(), down.len(), "host-a received another length");
    assert!(at_a == down, "host-a received other bytes");

    let hosts = [sim.host("host-a").unwrap(), sim.host("host-b").unwrap()];
    let conns = [
        hosts[0]
            .tcp_connection(handles.0)
            .expect("host-a's connection"),
        hosts[1]
            .tcp_connection(handles.1)
            .expect("host-b's connection"),
    ];
    let negotiated = conns[0].negotiated().unwrap();
    assert_eq!(negotiated.sack, case.sack, "SACK negotiation");
    for conn in conns {
        assert_eq!(conn.congestion().algorithm(), case.algorithm);
    }
    let outcome = Outcome {
        elapsed,
        counters: [conns[0].counters(), conns[1].counters()],
        links: [link_stats(hosts[0]), link_stats(hosts[1])],
        queue_drops: hosts.map(|h| h.interfaces()[0].counters.queue_drops),
        mss: negotiated.send_mss as u64,
    };
    eprintln!("{}", outcome.summary(&case));
    for (i, direction) in ["host-a -> host-b", "host-b -> host-a"].iter().enumerate() {
        check_retransmissions(
            direction,
            &outcome.counters[i],
            (&outcome.links[i], &outcome.links[1 - i]),
            outcome.queue_drops[i],
            outcome.mss,
        );
    }

    // Corruption shows as checksum failures, never as data: a flipped bit
    // in the TCP segment fails the TCP checksum; one in the IPv4 header the
    // header checksum; one in the Ethernet or IPv6 header mostly makes the
    // frame not ours. Most of a full frame is TCP segment, so at least half
    // the corrupted frames must be TCP checksum failures.
    let corrupted: u64 = outcome.links.iter().map(|l| l.corrupted).sum();
    let bad: u64 = hosts
        .iter()
        .map(|h| h.drops().get("tcp_bad_checksum").copied().unwrap_or(0))
        .sum();
    if corrupted > 0 {
        assert!(
            bad > 0 && bad * 2 >= corrupted,
            "{corrupted} frames corrupted, {bad} TCP checksum failures"
        );
    } else {
        assert_eq!(bad, 0, "checksum failures on a path that corrupts nothing");
    }
    for h in hosts {
        // Every segment fits the MTU, SACK blocks included: nothing is
        // fragmented (IPv6) or refused for DF (IPv4).
        assert_eq!(h.counters().ipv6_fragments_sent, 0, "{}", h.name());
        assert_eq!(h.counters().ipv4_fragments_sent, 0, "{}", h.name());
        for (reason, count) in h.drops() {
            let tcp_trouble = reason.starts_with("tcp_") && *reason != "tcp_bad_checksum";
            assert!(
                !tcp_trouble && !reason.contains("fragmentation"),
                "{}: {count} dropped as {reason}",
                h.name()
            );
        }
        assert_eq!(h.pool().stats().exhausted, 0, "{}: pool ran dry", h.name());
    }
    outcome
}

/// Runs `seeds` on a few threads (a simulator is single-threaded; each
/// seed gets its own); panics naming every seed that failed.
fn run_matrix(seeds: impl Iterator<Item = u64>) {
    let seeds: Vec<u64> = seeds.collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = seeds.get(i) else { break };
                let case = Case::of(seed);
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run_case(case))) {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures
                        .lock()
                        .unwrap()
                        .push((seed, format!("{}: {message}", case.describe())));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} seeds failed:\n{}",
        failures.len(),
        seeds.len(),
        failures
            .iter()
            .map(|(_, m)| m.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// 9 seeds: every profile once, the IP family, CUBIC or NewReno and SACK
/// on or off varying across them (CI runs all 100).
#[test]
fn every_impairment_profile_moves_4_mib_each_way_byte_exact() {
    run_matrix(0..9);
}

/// The issue's full matrix: 100 seeds. Too slow for the debug-profile
/// `cargo test` of CI; run it on its own:
/// `cargo test -p stackscope-stack --test tcp_impairments -- --ignored`
#[test]
#[ignore = "100 × 8 MiB through the simulator: run with --ignored (see the doc comment)"]
fn a_hundred_seeds_of_impairments_move_4_mib_each_way_byte_exact() {
    run_matrix(0..100);
}

// ----- Windows past 4 MiB --------------------------------------------------

/// 1 Gbit/s with 20 ms each way: a bandwidth-delay product of 5 MB, so
/// only a window scaled well past 65535 fills the path. 8 MiB buffers
/// need a shift of 8 (65535 · 2^7 is just under 8 MiB); the sender must
/// get more than 4 MiB in flight.
#[test]
fn windows_scale_past_4_mib_on_a_long_fat_path() {
    use stack::socket::tcp::congestion::CongestionControl;
    const BUFFER: usize = 8 << 20;
    const LEN: usize = 16 << 20;
    // Room on the wire for everything in flight: 8 MiB is 5800 frames.
    let topology = two_hosts(
        7,
        "rate = \"1Gbit\"\ndelay = \"20ms\"\nqueue_frames = 8192\n",
    );
    let mut sim = network(&topology);
    let config = TcpConfig {
        send_buffer: BUFFER,
        recv_buffer: BUFFER,
        ..TcpConfig::default()
    };
    let (client, server) = connect(&mut sim, true, config);
    for (name, handle) in [("host-a", client), ("host-b", server)] {
        let n = sim
            .host(name)
            .unwrap()
            .tcp_connection(handle)
            .unwrap()
            .negotiated()
            .unwrap();
        assert_eq!((n.send_window_shift, n.recv_window_shift), (8, 8), "{name}");
    }
    let data = stream(LEN, 1234);
    let mut written = 0;
    let mut shut = false;
    let mut got = Vec::with_capacity(LEN);
    let mut eof = false;
    let mut buf = vec![0u8; 256 * 1024];
    let (mut max_flight, mut max_cwnd) = (0usize, 0usize);
    let start = sim.now();
    let done = sim.run_until_with(Duration::from_secs(20), |sim| {
        let a = host_mut(sim, "host-a");
        while written < LEN {
            match a.tcp_send(client, &data[written..]) {
                Ok(n) => written += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        if written == LEN && !shut {
            a.tcp_shutdown(client).unwrap();
            shut = true;
        }
        let conn = a.tcp_connection(client).unwrap();
        // Acknowledged = written less what the send queue still holds;
        // in flight = sent less acknowledged (no retransmission here).
        let acked = written - conn.send_queued();
        let flight = (conn.counters().bytes_sent as usize).saturating_sub(acked);
        max_flight = max_flight.max(flight);
        max_cwnd = max_cwnd.max(conn.congestion().cwnd());
        let b = host_mut(sim, "host-b");
        while !eof {
            match b.tcp_recv(server, &mut buf) {
                Ok(0) => eof = true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        eof
    });
    let elapsed = sim.now().saturating_duration_since(start);
    assert!(done, "{} of {LEN} bytes after {elapsed:?}", got.len());
    assert!(got == data, "the bytes differ");
    let a = sim.host("host-a").unwrap();
    let counters = a.tcp_connection(client).unwrap().counters();
    assert_eq!(counters.bytes_retransmitted, 0, "{counters:?}");
    // More than 4 MiB outstanding at once: the peer's scaled window and
    // cwnd both went past it (the sender never exceeds either).
    assert!(max_flight > 4 << 20, "at most {max_flight} bytes in flight");
    assert!(max_cwnd > 4 << 20, "cwnd peaked at {max_cwnd}");
    assert!(
        max_flight <= BUFFER,
        "{max_flight} in flight, window {BUFFER}"
    );
    // The pool held an 8 MiB send queue without running dry.
    let pool = a.pool().stats();
    assert_eq!(pool.exhausted, 0, "{pool:?}");
    eprintln!(
        "{LEN} bytes in {elapsed:?}; peak flight {max_flight}, cwnd {max_cwnd}; pool {pool:?} of {}",
        a.pool().config().buffers
    );
}

// ----- Two regressions the matrix found, pinned down -----------------------
//
// Connection to connection on a virtual clock, no host in between: the
// exact segments that went wrong.

mod pair {
    use std::net::SocketAddr;
    use std::time::Duration;

    use probe::Flow;
    use stack::buffer::{Pool, PoolConfig};
    use stack::socket::tcp::connection::{Connection, TcpConfig};
    use stack::socket::tcp::rules::ChallengeLimiter;
    use stack::socket::tcp::seq::Seq;
    use stack::socket::tcp::state::State;
    use stack::time::Instant;
    use wire::tcp::{TcpFlags, TcpRepr};

    /// The MSS both ends announce: an Ethernet MTU over IPv6.
    pub const MSS: u16 = 1440;

    pub type Segment = (TcpRepr, Vec<u8>);

    /// Two established connections and what they share.
    pub struct Pair {
        pub now: Instant,
        pub a: Connection,
        pub b: Connection,
        pub pool: Pool,
        pub limiter: ChallengeLimiter,
    }

    /// Everything `conn` has to send now.
    pub fn drain(conn: &mut Connection, now: Instant) -> Vec<Segment> {
        std::iter::from_fn(|| conn.poll_output(now))
            .map(|out| {
                let payload: Vec<u8> = out
                    .payload
                    .iter()
                    .flat_map(|s| s.as_slice().to_vec())
                    .collect();
                assert_eq!(payload.len(), out.repr.payload_len);
                (out.repr, payload)
            })
            .collect()
    }

    impl Pair {
        /// A (2001:db8::a) connected to B (2001:db8::b) with `config` on
        /// both ends; the handshake on a lossless, instant link.
        pub fn established(config: TcpConfig) -> Self {
            let a_addr: SocketAddr = "[2001:db8::a]:40000".parse().unwrap();
            let b_addr: SocketAddr = "[2001:db8::b]:5001".parse().unwrap();
            let mut now = Instant::from_nanos(1_000_000_000);
            let mut limiter = ChallengeLimiter::default();
            let mut a = Connection::connect(
                config,
                a_addr,
                b_addr,
                Seq(1000),
                MSS,
                now,
                Flow::untraced(1),
            );
            let (syn, _) = drain(&mut a, now).remove(0);
            assert!(syn.flags.contains(TcpFlags::SYN));
            let mut b = Connection::accept(
                config,
                b_addr,
                a_addr,
                &syn,
                Seq(0x8000_0000),
                MSS,
                now,
                Flow::untraced(2),
            );
            for _ in 0..10 {
                now += Duration::from_millis(1);
                for (r, p) in drain(&mut b, now) {
                    a.input(now, &r, &[&p], &mut limiter);
                }
                for (r, p) in drain(&mut a, now) {
                    b.input(now, &r, &[&p], &mut limiter);
                }
            }
            assert_eq!(
                (a.state(), b.state()),
                (State::Established, State::Established)
            );
            let pool = Pool::new(PoolConfig::default()).unwrap();
            Self {
                now,
                a,
                b,
                pool,
                limiter,
            }
        }

        /// `d` of lossless exchange in steps of 1 ms, timers included.
        pub fn run(&mut self, d: Duration) {
            let end = self.now + d;
            while self.now < end {
                self.now += Duration::from_millis(1);
                let now = self.now;
                self.a.poll_timers(now);
                self.b.poll_timers(now);
                for (r, p) in drain(&mut self.a, now) {
                    self.b.input(now, &r, &[&p], &mut self.limiter);
                }
                for (r, p) in drain(&mut self.b, now) {
                    self.a.input(now, &r, &[&p], &mut self.limiter);
                }
            }
        }
    }
}

/// Data crossed both ways but every ACK of it was lost: both ends time
/// out, rewind SND.NXT to SND.UNA and resend data the peer already holds
/// (which the peer drops as old, answering with an ACK). Those ACKs must
/// carry SND.MAX: numbered at the rewound SND.NXT they fall below the
/// receiver's RCV.NXT, are dropped unread as well, and the two ends back
/// off forever (seen as a 10 %-loss seed that never finished).
#[test]
fn acks_lost_both_ways_across_a_timeout_do_not_deadlock() {
    use pair::{drain, Pair};
    let mut p = Pair::established(TcpConfig::default());
    let (up, down) = (stream(20_000, 1), stream(20_000, 2));
    assert_eq!(p.a.send(&p.pool, &up).unwrap(), up.len());
    assert_eq!(p.b.send(&p.pool, &down).unwrap(), down.len());
    let now = p.now;
    let from_a = drain(&mut p.a, now);
    let from_b = drain(&mut p.b, now);
    assert!(
        from_a.len() >= 10 && from_b.len() >= 10,
        "an initial window each way"
    );
    for (r, d) in &from_a {
        p.b.input(now, r, &[d], &mut p.limiter);
    }
    for (r, d) in &from_b {
        p.a.input(now, r, &[d], &mut p.limiter);
    }
    // Every acknowledgment of those segments is lost.
    drain(&mut p.a, now);
    drain(&mut p.b, now);
    p.run(Duration::from_secs(30));
    for (name, conn) in [("a", &p.a), ("b", &p.b)] {
        assert!(
            conn.counters().retransmission_timeouts >= 1,
            "{name}: {:?}",
            conn.counters()
        );
        assert_eq!(
            conn.send_queued(),
            0,
            "{name} never learned its data arrived: {:?}",
            conn.counters()
        );
    }
    let mut buf = vec![0u8; 64 * 1024];
    let n = p.b.recv(&mut buf);
    assert!(buf[..n] == up[..n] && n == up.len());
    let n = p.a.recv(&mut buf);
    assert!(buf[..n] == down[..n] && n == down.len());
}

/// A data segment that also carries SACK blocks (data flowing both ways,
/// the reverse direction with a hole) must shorten its payload by the
/// option's bytes: the MSS counts no options (RFC 6691 §2). Full-MSS
/// payload plus SACK blocks overran the MTU: IPv4 with DF dropped every
/// such segment at the source, IPv6 fragmented it.
#[test]
fn data_segments_carrying_sack_blocks_still_fit_the_mss() {
    use pair::{drain, Pair, MSS};
    let mut p = Pair::established(TcpConfig::default());
    let negotiated = p.a.negotiated().unwrap();
    assert!(negotiated.sack && negotiated.timestamps);
    // A sends three segments; the first is lost, so B holds the other two
    // out of order.
    let segment = negotiated.send_mss;
    p.a.send(&p.pool, &stream(3 * segment, 3)).unwrap();
    let now = p.now;
    let from_a = drain(&mut p.a, now);
    assert_eq!(from_a.len(), 3);
    for (r, d) in &from_a[1..] {
        p.b.input(now, r, &[d], &mut p.limiter);
    }
    // B's own data now rides with SACK blocks for A's hole.
    p.b.send(&p.pool, &stream(10 * segment, 4)).unwrap();
    let from_b = drain(&mut p.b, now);
    let data: Vec<_> = from_b.iter().filter(|(r, _)| r.payload_len > 0).collect();
    assert!(data.len() >= 5, "{} data segments", data.len());
    for (repr, payload) in data {
        assert!(
            repr.sack_ranges.iter().any(Option::is_some),
            "no SACK block: {repr:?}"
        );
        // What the MSS option promised: at most MSS bytes after the fixed
        // 20-byte TCP header, whatever the options.
        let beyond_fixed = repr.header_len() - wire::tcp::HEADER_LEN + payload.len();
        assert!(
            beyond_fixed <= usize::from(MSS),
            "{} option bytes + {} payload > MSS {MSS}",
            repr.header_len() - wire::tcp::HEADER_LEN,
            payload.len()
        );
    }
}

/// The same rewound SND.NXT must not number an abort's RST either (RFC
/// 9293 §3.10.5: <SEQ=SND.NXT>, the next new sequence number): numbered
/// at SND.UNA after a timeout it falls below the peer's RCV.NXT, and the
/// peer drops it (RFC 5961 §3.2), keeping a connection that is gone.
#[test]
fn an_abort_after_a_timeout_still_resets_the_peer() {
    use pair::{drain, Pair};
    use stack::socket::tcp::connection::ConnectionError;
    use stack::socket::tcp::state::State;
    let mut p = Pair::established(TcpConfig::default());
    p.a.send(&p.pool, &stream(20_000, 5)).unwrap();
    let now = p.now;
    for (r, d) in drain(&mut p.a, now) {
        p.b.input(now, &r, &[&d], &mut p.limiter);
    }
    // B's ACKs are lost; A times out and rewinds.
    drain(&mut p.b, now);
    let later = now + Duration::from_secs(3);
    p.a.poll_timers(later);
    assert_eq!(p.a.counters().retransmission_timeouts, 1);
    let rst = p.a.abort().expect("a RST");
    p.b.input(later, &rst, &[], &mut p.limiter);
    assert_eq!(p.b.state(), State::Closed);
    assert_eq!(p.b.error(), Some(ConnectionError::Reset));
}
