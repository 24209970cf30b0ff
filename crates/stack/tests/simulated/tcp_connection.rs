//! Two TCP connections joined by an in-memory link with delay and seeded
//! loss, on a virtual clock: handshakes, byte-exact transfers through
//! retransmission timeouts, closing through TIME-WAIT, and RFC 5961.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use probe::Flow;
use stack::buffer::{Pool, PoolConfig};
use stack::socket::tcp::connection::{Connection, ConnectionError, Outgoing, Reply, TcpConfig};
use stack::socket::tcp::rules::ChallengeLimiter;
use stack::socket::tcp::seq::Seq;
use stack::socket::tcp::state::State;
use stack::time::Instant;
use wire::tcp::{TcpFlags, TcpRepr};

const A: &str = "[2001:db8::a]:40000";
const B: &str = "[2001:db8::b]:5001";
const MSS: u16 = 1440;

/// One direction of the link: segments in flight with their arrival time.
#[derive(Default)]
struct Direction {
    in_flight: VecDeque<(Instant, TcpRepr, Vec<u8>)>,
}

struct Net {
    now: Instant,
    delay: Duration,
    /// Drop one segment in `loss_every` (0: none), deterministically.
    loss_every: u64,
    sent: u64,
    dropped: u64,
    /// Drop B's next segment that carries no data (a window update).
    drop_next_ack_from_b: bool,
    /// The passive end's settings.
    b_config: TcpConfig,
    a_to_b: Direction,
    b_to_a: Direction,
    limiter: ChallengeLimiter,
}

impl Net {
    fn new(delay_ms: u64, loss_every: u64) -> Self {
        Self {
            now: Instant::from_nanos(1_000_000_000),
            delay: Duration::from_millis(delay_ms),
            loss_every,
            sent: 0,
            dropped: 0,
            drop_next_ack_from_b: false,
            b_config: config(),
            a_to_b: Direction::default(),
            b_to_a: Direction::default(),
            limiter: ChallengeLimiter::default(),
        }
    }

    fn carry(&mut self, out: Outgoing, a_to_b: bool) {
        self.sent += 1;
        // Never drop SYNs here: handshake loss has its own test.
        let syn = out.repr.flags.contains(TcpFlags::SYN);
        if !syn && self.loss_every > 0 && self.sent.is_multiple_of(self.loss_every) {
            self.dropped += 1;
            return;
        }
        let payload: Vec<u8> = out
            .payload
            .iter()
            .flat_map(|s| s.as_slice().to_vec())
            .collect();
        assert_eq!(payload.len(), out.repr.payload_len);
        let dir = if a_to_b {
            &mut self.a_to_b
        } else {
            &mut self.b_to_a
        };
        dir.in_flight
            .push_back((self.now + self.delay, out.repr, payload));
    }
}

fn pool() -> Pool {
    Pool::new(PoolConfig {
        buffer_size: 2304,
        headroom: 0,
        buffers: 4096,
    })
    .unwrap()
}

fn config() -> TcpConfig {
    TcpConfig {
        time_wait: Duration::from_secs(2),
        ..TcpConfig::default()
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Runs until `done` or `limit` of simulated time; `b` is made by the
/// first SYN to arrive (the listener's passive open).
fn run(
    net: &mut Net,
    a: &mut Connection,
    b: &mut Option<Connection>,
    limit: Duration,
    mut step: impl FnMut(&mut Net, &mut Connection, &mut Option<Connection>),
    done: impl Fn(&Connection, &Option<Connection>) -> bool,
) {
    let end = net.now + limit;
    while net.now < end && !done(a, b) {
        step(net, a, b);
        a.poll_timers(net.now);
        while let Some(out) = a.poll_output(net.now) {
            net.carry(out, true);
        }
        if let Some(b) = b.as_mut() {
            b.poll_timers(net.now);
            while let Some(out) = b.poll_output(net.now) {
                net.carry(out, false);
            }
        }
        let now = net.now;
        while net
            .a_to_b
            .in_flight
            .front()
            .is_some_and(|(at, _, _)| *at <= now)
        {
            let (_, repr, payload) = net.a_to_b.in_flight.pop_front().unwrap();
            match b {
                Some(b) => {
                    b.input(now, &repr, &[&payload], &mut net.limiter);
                }
                None if repr.flags.contains(TcpFlags::SYN) && repr.ack_number.is_none() => {
                    *b = Some(Connection::accept(
                        net.b_config,
                        addr(B),
                        addr(A),
                        &repr,
                        Seq(0x8000_0000),
                        MSS,
                        now,
                        Flow::untraced(2),
                    ));
                }
                None => {}
            }
        }
        while net
            .b_to_a
            .in_flight
            .front()
            .is_some_and(|(at, _, _)| *at <= now)
        {
            let (_, repr, payload) = net.b_to_a.in_flight.pop_front().unwrap();
            if let Reply::Rst(rst) = a.input(now, &repr, &[&payload], &mut net.limiter) {
                panic!("A answered with RST {rst:?}");
            }
        }
        net.now += Duration::from_micros(100);
    }
}

fn client(iss: u32) -> Connection {
    Connection::connect(
        config(),
        addr(A),
        addr(B),
        Seq(iss),
        MSS,
        Instant::from_nanos(1_000_000_000),
        Flow::untraced(1),
    )
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Moves `data` from A to B, then closes both ends; returns what B read.
fn transfer(net: &mut Net, data: &[u8], iss: u32) -> (Vec<u8>, Connection, Connection) {
    let pool = pool();
    let mut a = client(iss);
    let mut b = None;
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65536];
    run(
        net,
        &mut a,
        &mut b,
        Duration::from_secs(600),
        |_, a, b| {
            if written < data.len() && a.state() == State::Established {
                written += a.send(&pool, &data[written..]).unwrap_or(0);
                if written == data.len() {
                    a.close();
                }
            }
            if let Some(b) = b {
                loop {
                    let n = b.recv(&mut buf);
                    if n == 0 {
                        break;
                    }
                    received.extend_from_slice(&buf[..n]);
                }
                if b.at_eof() && b.state() == State::CloseWait {
                    b.close();
                }
            }
        },
        |a, b| {
            a.state() == State::TimeWait && b.as_ref().is_some_and(|b| b.state() == State::Closed)
        },
    );
    (received, a, b.expect("the passive end exists"))
}

#[test]
fn a_megabyte_moves_byte_exact_and_both_ends_close() {
    let mut net = Net::new(1, 0);
    let data = pattern(1 << 20);
    let (received, a, b) = transfer(&mut net, &data, 1000);
    assert_eq!(received.len(), data.len());
    assert!(received == data, "payload differs");
    assert_eq!(a.state(), State::TimeWait);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(a.counters().retransmission_timeouts, 0);
    let negotiated = a.negotiated().unwrap();
    assert!(negotiated.timestamps && negotiated.sack);
    assert_eq!(negotiated.send_mss, usize::from(MSS) - 12);
    // Round trips were measured: 2 ms of link delay.
    let srtt = a.rtt().srtt().unwrap();
    assert!(srtt >= Duration::from_millis(2), "{srtt:?}");
}

#[test]
fn loss_is_repaired_by_retransmission_and_sequence_numbers_wrap() {
    // Every 23rd segment lost, ISN just below 2^32 so the stream wraps.
    let mut net = Net::new(1, 23);
    let data = pattern(300_000);
    let (received, a, _) = transfer(&mut net, &data, u32::MAX - 1000);
    assert!(net.dropped > 0);
    assert!(received == data, "payload differs after loss");
    let counters = a.counters();
    assert!(counters.fast_retransmits + counters.retransmission_timeouts > 0);
    assert!(counters.bytes_retransmitted > 0);
}

#[test]
fn time_wait_ends_after_its_time() {
    let mut net = Net::new(1, 0);
    let (_, mut a, _) = transfer(&mut net, b"bye", 5);
    assert_eq!(a.state(), State::TimeWait);
    a.poll_timers(net.now + Duration::from_secs(3));
    assert_eq!(a.state(), State::Closed);
}

#[test]
fn simultaneous_open_reaches_established_on_both_ends() {
    let mut net = Net::new(1, 0);
    let mut a = client(100);
    let mut b = Connection::connect(
        config(),
        addr(B),
        addr(A),
        Seq(900),
        MSS,
        net.now,
        Flow::untraced(2),
    );
    for _ in 0..100 {
        let now = net.now;
        let from_a: Vec<Outgoing> = std::iter::from_fn(|| a.poll_output(now)).collect();
        let from_b: Vec<Outgoing> = std::iter::from_fn(|| b.poll_output(now)).collect();
        for out in from_a {
            b.input(now, &out.repr, &[], &mut net.limiter);
        }
        for out in from_b {
            a.input(now, &out.repr, &[], &mut net.limiter);
        }
        net.now += Duration::from_millis(1);
    }
    assert_eq!(a.state(), State::Established);
    assert_eq!(b.state(), State::Established);
}

#[test]
fn a_syn_to_a_closed_port_style_reset_refuses_the_connection() {
    let mut net = Net::new(1, 0);
    let mut a = client(7);
    let syn = a.poll_output(net.now).unwrap().repr;
    // The peer's stack answers RST+ACK (RFC 9293 §3.10.7.1).
    let mut rst = syn;
    rst.src_port = syn.dst_port;
    rst.dst_port = syn.src_port;
    rst.seq_number = 0;
    rst.ack_number = Some(syn.seq_number.wrapping_add(1));
    rst.flags = TcpFlags::RST;
    rst.timestamps = None;
    a.input(net.now, &rst, &[], &mut net.limiter);
    assert_eq!(a.state(), State::Closed);
    assert_eq!(a.error(), Some(ConnectionError::Refused));
}

#[test]
fn in_window_rst_and_syn_get_challenge_acks_and_exact_rst_resets() {
    let mut net = Net::new(1, 0);
    let mut a = client(1);
    let mut b = None;
    run(
        &mut net,
        &mut a,
        &mut b,
        Duration::from_secs(1),
        |_, _, _| {},
        |a, b| {
            a.state() == State::Established
                && b.as_ref().is_some_and(|b| b.state() == State::Established)
        },
    );
    let mut b = b.unwrap();
    let now = net.now;
    // A blind RST one byte off RCV.NXT: a challenge ACK, no reset.
    let probe = a.poll_output(now);
    assert!(probe.is_none());
    let rcv_nxt = Seq(1) + 1; // B's view of A's next byte: ISS + 1
    let mut rst = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq_number: (rcv_nxt + 10).0,
        ack_number: None,
        flags: TcpFlags::RST,
        window_len: 0,
        urgent_pointer: 0,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamps: None,
        unknown_options: Default::default(),
        payload_len: 0,
    };
    b.input(now, &rst, &[], &mut net.limiter);
    assert_eq!(b.state(), State::Established);
    assert_eq!(b.counters().challenge_acks, 1);
    let challenge = b.poll_output(now).expect("a challenge ACK");
    assert_eq!(challenge.repr.ack_number, Some(rcv_nxt.0));
    // A SYN inside the connection: another challenge, still established.
    let mut syn = rst;
    syn.flags = TcpFlags::SYN;
    syn.seq_number = rcv_nxt.0;
    b.input(now, &syn, &[], &mut net.limiter);
    assert_eq!(b.state(), State::Established);
    assert_eq!(b.counters().challenge_acks, 2);
    // The exact sequence number resets.
    rst.seq_number = rcv_nxt.0;
    b.input(now, &rst, &[], &mut net.limiter);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.error(), Some(ConnectionError::Reset));
}

#[test]
fn a_zero_window_is_probed_until_a_lost_window_update_is_repeated() {
    let mut net = Net::new(1, 0);
    net.b_config.recv_buffer = 16 * 1024;
    let pool = pool();
    let mut a = client(3);
    let mut b = None;
    let data = pattern(100_000);
    let mut written = 0;
    let received = std::cell::RefCell::new(Vec::new());
    let mut buf = vec![0u8; 65536];
    let start = net.now;
    run(
        &mut net,
        &mut a,
        &mut b,
        Duration::from_secs(120),
        |net, a, b| {
            let Some(b) = b.as_mut() else { return };
            if written < data.len() && a.state() == State::Established {
                written += a.send(&pool, &data[written..]).unwrap_or(0);
            }
            // The reader sleeps for 3 s, letting the window close; its
            // first window update after waking is lost.
            if net.now >= start + Duration::from_secs(3) {
                let mut received = received.borrow_mut();
                if b.readable() > 0 && received.is_empty() {
                    net.drop_next_ack_from_b = true;
                }
                let n = b.recv(&mut buf);
                received.extend_from_slice(&buf[..n]);
            }
        },
        |_, _| received.borrow().len() == data.len(),
    );
    let received = received.into_inner();
    assert_eq!(received.len(), data.len());
    assert!(received == data);
    assert!(a.counters().window_probes > 0, "{:?}", a.counters());
    assert_eq!(a.counters().retransmission_timeouts, 0);
}

#[test]
fn a_receive_buffer_below_one_mss_sends_one_window_update_per_read() {
    // The SunOS study's stop-and-wait run: 1 KB socket buffers, 1024-byte
    // messages. Reads that find nothing must not send ACKs; each read
    // that empties the buffer sends one window update.
    let mut net = Net::new(1, 0);
    net.b_config.recv_buffer = 1024;
    let pool = pool();
    let mut a = client(5);
    let mut b = None;
    let messages = 20;
    let data = pattern(1024 * messages);
    let mut written = 0;
    let received = std::cell::RefCell::new(Vec::new());
    let mut buf = vec![0u8; 4096];
    let mut empty_reads = 0u64;
    run(
        &mut net,
        &mut a,
        &mut b,
        Duration::from_secs(60),
        |_, a, b| {
            if written < data.len() && a.state() == State::Established {
                written += a.send(&pool, &data[written..]).unwrap_or(0);
            }
            if let Some(b) = b.as_mut() {
                let n = b.recv(&mut buf);
                if n == 0 {
                    empty_reads += 1;
                }
                received.borrow_mut().extend_from_slice(&buf[..n]);
            }
        },
        |_, _| received.borrow().len() == data.len(),
    );
    assert!(received.into_inner() == data);
    assert!(empty_reads > 100, "the reader polled: {empty_reads}");
    // B sends: the SYN-ACK, an ACK per data segment and a window update
    // per read that emptied its buffer; an ACK per empty read would be
    // hundreds.
    let from_b = b.unwrap().counters().segments_sent;
    assert!(
        from_b <= 1 + 2 * messages as u64 + 4,
        "B sent {from_b} segments for {messages} messages"
    );
}

/// Moves `len` bytes with every `loss_every`-th segment lost, with or
/// without SACK; returns the sender's counters.
fn lossy_transfer(
    len: usize,
    loss_every: u64,
    sack: bool,
) -> stack::socket::tcp::connection::TcpCounters {
    let mut net = Net::new(5, loss_every);
    net.b_config.sack = sack;
    let data = pattern(len);
    let (received, a, _) = transfer(&mut net, &data, 77);
    assert!(received == data, "payload differs (sack {sack})");
    a.counters()
}

#[test]
fn fast_retransmit_repairs_most_losses_with_and_without_sack() {
    for sack in [true, false] {
        let counters = lossy_transfer(2_000_000, 50, sack);
        assert!(counters.fast_recoveries > 0, "sack {sack}: {counters:?}");
        assert!(
            counters.retransmission_timeouts * 4 < counters.fast_recoveries,
            "sack {sack}: timeouts should be the exception: {counters:?}"
        );
    }
}

#[test]
fn keepalive_probes_an_idle_peer_and_drops_a_silent_one() {
    use stack::socket::tcp::connection::Keepalive;
    let mut net = Net::new(1, 0);
    let keepalive = TcpConfig {
        keepalive: Some(Keepalive {
            idle: Duration::from_secs(10),
            interval: Duration::from_secs(1),
            count: 3,
        }),
        ..config()
    };
    let mut a = Connection::connect(
        keepalive,
        addr(A),
        addr(B),
        Seq(50),
        MSS,
        net.now,
        Flow::untraced(1),
    );
    let mut b = None;
    // 35 s of silence from the application: the peer answers each probe.
    run(
        &mut net,
        &mut a,
        &mut b,
        Duration::from_secs(35),
        |_, _, _| {},
        |_, _| false,
    );
    assert_eq!(a.state(), State::Established);
    let answered = a.counters().keepalive_probes;
    assert!(answered >= 3, "{:?}", a.counters());
    // Now the peer goes silent (every segment lost): idle, three probes,
    // then the connection is dropped.
    net.loss_every = 1;
    run(
        &mut net,
        &mut a,
        &mut b,
        Duration::from_secs(20),
        |_, _, _| {},
        |a, _| a.state() == State::Closed,
    );
    assert_eq!(a.state(), State::Closed);
    assert_eq!(a.error(), Some(ConnectionError::TimedOut));
    assert_eq!(a.counters().keepalive_probes, answered + 3);
}
