//! A listener's handshakes: the normal path through the half-open queue,
//! SYN cookies once a flood fills it (a legitimate client still gets in
//! and moves data), stray ACKs answered with RST, and half-open
//! connections that give up.

use std::net::SocketAddr;
use std::time::Duration;

use probe::Flow;
use stack::buffer::{Pool, PoolConfig};
use stack::socket::tcp::connection::{Connection, Reply, TcpConfig};
use stack::socket::tcp::isn::IsnGenerator;
use stack::socket::tcp::listener::{Listener, ListenerConfig, ListenerReply};
use stack::socket::tcp::rules::ChallengeLimiter;
use stack::socket::tcp::seq::Seq;
use stack::socket::tcp::state::State;
use stack::time::Instant;
use wire::tcp::{TcpFlags, TcpRepr};

const SERVER: &str = "[2001:db8::b]:5001";
const CLIENT: &str = "[2001:db8::a]:40000";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn listener(half_open: usize) -> Listener {
    Listener::new(
        addr(SERVER),
        TcpConfig::default(),
        ListenerConfig {
            backlog: 8,
            half_open,
            syn_cookies: true,
            ..ListenerConfig::default()
        },
        1440,
        IsnGenerator::new([11, 22]),
        Flow::untraced(9),
    )
}

fn client(now: Instant) -> Connection {
    Connection::connect(
        TcpConfig::default(),
        addr(CLIENT),
        addr(SERVER),
        Seq(4242),
        1440,
        now,
        Flow::untraced(1),
    )
}

/// Passes segments between a client, the listener and the connection it
/// accepts, with no delay or loss, until `done` or 2000 steps of 1 ms.
struct Rig {
    now: Instant,
    listener: Listener,
    server: Option<Connection>,
    limiter: ChallengeLimiter,
}

impl Rig {
    fn step(&mut self, client: &mut Connection) {
        let now = self.now;
        client.poll_timers(now);
        let from_client: Vec<_> = std::iter::from_fn(|| client.poll_output(now)).collect();
        let mut to_client = Vec::new();
        for out in from_client {
            let payload: Vec<u8> = out
                .payload
                .iter()
                .flat_map(|s| s.as_slice().to_vec())
                .collect();
            match self.server.as_mut() {
                Some(server) => {
                    server.input(now, &out.repr, &[&payload], &mut self.limiter);
                }
                None => {
                    if let ListenerReply::Send(reply) = self.listener.input(
                        now,
                        addr(SERVER),
                        addr(CLIENT),
                        &out.repr,
                        &[&payload],
                        &mut self.limiter,
                    ) {
                        to_client.push((reply, Vec::new()));
                    }
                }
            }
        }
        self.listener.poll_timers(now);
        while let Some((_, _, out)) = self.listener.poll_output(now) {
            to_client.push((out.repr, Vec::new()));
        }
        if self.server.is_none() {
            self.server = self.listener.accept();
        }
        if let Some(server) = self.server.as_mut() {
            server.poll_timers(now);
            while let Some(out) = server.poll_output(now) {
                let payload = out
                    .payload
                    .iter()
                    .flat_map(|s| s.as_slice().to_vec())
                    .collect();
                to_client.push((out.repr, payload));
            }
        }
        for (repr, payload) in to_client {
            if let Reply::Rst(rst) = client.input(now, &repr, &[&payload], &mut self.limiter) {
                panic!("client answered {rst:?}");
            }
        }
        self.now += Duration::from_millis(1);
    }
}

fn rig(half_open: usize) -> Rig {
    Rig {
        now: Instant::from_nanos(10_000_000_000),
        listener: listener(half_open),
        server: None,
        limiter: ChallengeLimiter::default(),
    }
}

/// Connects, sends `len` bytes client to server, returns what arrived.
fn connect_and_send(rig: &mut Rig, len: usize) -> (Connection, Vec<u8>) {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let mut c = client(rig.now);
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65536];
    for _ in 0..5000 {
        rig.step(&mut c);
        if c.state() == State::Established && written < data.len() {
            written += c.send(&pool, &data[written..]).unwrap_or(0);
        }
        if let Some(server) = rig.server.as_mut() {
            let n = server.recv(&mut buf);
            received.extend_from_slice(&buf[..n]);
        }
        if received.len() == data.len() {
            break;
        }
    }
    assert!(
        received == data,
        "{} of {} bytes",
        received.len(),
        data.len()
    );
    (c, received)
}

#[test]
fn a_handshake_through_the_half_open_queue_ends_in_accept() {
    let mut rig = rig(4);
    let (client, _) = connect_and_send(&mut rig, 50_000);
    let server = rig.server.as_ref().unwrap();
    assert_eq!(server.state(), State::Established);
    assert_eq!(server.remote(), addr(CLIENT));
    assert_eq!(rig.listener.half_open_len(), 0);
    assert_eq!(rig.listener.counters().cookies_sent, 0);
    // The full handshake negotiated every option.
    assert!(client.negotiated().unwrap().sack);
}

fn spoofed_syn(i: u16) -> (SocketAddr, TcpRepr) {
    let remote: SocketAddr = format!("[2001:db8::{:x}]:{}", 0x1000 + u32::from(i), 1024 + i)
        .parse()
        .unwrap();
    let syn = TcpRepr {
        src_port: remote.port(),
        dst_port: 5001,
        seq_number: u32::from(i) * 7919,
        ack_number: None,
        flags: TcpFlags::SYN,
        window_len: 65535,
        urgent_pointer: 0,
        max_seg_size: Some(1440),
        window_scale: Some(7),
        sack_permitted: true,
        sack_ranges: [None; 4],
        timestamps: None,
        unknown_options: Default::default(),
        payload_len: 0,
    };
    (remote, syn)
}

#[test]
fn a_syn_flood_fills_only_the_half_open_queue_and_cookies_let_a_client_in() {
    let mut rig = rig(4);
    for i in 0..50 {
        let (remote, syn) = spoofed_syn(i);
        let now = rig.now;
        let reply = rig
            .listener
            .input(now, addr(SERVER), remote, &syn, &[], &mut rig.limiter);
        if i >= 4 {
            let ListenerReply::Send(syn_ack) = reply else {
                panic!("no cookie for SYN {i}");
            };
            assert!(syn_ack.flags.contains(TcpFlags::SYN));
            assert_eq!(syn_ack.ack_number, Some(syn.seq_number + 1));
        }
    }
    assert_eq!(rig.listener.half_open_len(), 4);
    assert_eq!(rig.listener.counters().cookies_sent, 46);
    // A real client now: its handshake rides on a cookie, and data flows.
    let (client, _) = connect_and_send(&mut rig, 100_000);
    assert_eq!(rig.listener.counters().cookies_accepted, 1);
    // A cookie carries the MSS but not window scaling, SACK or timestamps.
    let negotiated = rig.server.as_ref().unwrap().negotiated().unwrap();
    assert_eq!(negotiated.send_mss, 1440);
    assert!(!negotiated.sack);
    assert_eq!(client.state(), State::Established);
}

#[test]
fn a_forged_ack_gets_a_reset_not_a_connection() {
    let mut rig = rig(4);
    let (remote, mut ack) = spoofed_syn(1);
    ack.flags = TcpFlags::empty();
    ack.ack_number = Some(0x1234_5678);
    ack.seq_number = 99;
    let now = rig.now;
    let reply = rig
        .listener
        .input(now, addr(SERVER), remote, &ack, &[], &mut rig.limiter);
    let ListenerReply::Send(rst) = reply else {
        panic!("no RST");
    };
    assert!(rst.flags.contains(TcpFlags::RST));
    assert_eq!(rst.seq_number, 0x1234_5678);
    assert_eq!(rig.listener.counters().cookies_rejected, 1);
    assert!(rig.listener.accept().is_none());
}

#[test]
fn half_open_connections_that_never_complete_are_forgotten() {
    let mut rig = rig(8);
    for i in 0..3 {
        let (remote, syn) = spoofed_syn(i);
        let now = rig.now;
        rig.listener
            .input(now, addr(SERVER), remote, &syn, &[], &mut rig.limiter);
    }
    assert_eq!(rig.listener.half_open_len(), 3);
    // SYN-ACKs are retransmitted with backoff until the retry limit.
    let mut syn_acks = 0;
    for _ in 0..3000 {
        rig.now += Duration::from_secs(1);
        let now = rig.now;
        rig.listener.poll_timers(now);
        while rig.listener.poll_output(now).is_some() {
            syn_acks += 1;
        }
    }
    assert!(syn_acks > 3, "{syn_acks}");
    assert_eq!(rig.listener.half_open_len(), 0);
    assert!(rig.listener.next_deadline().is_none());
}
