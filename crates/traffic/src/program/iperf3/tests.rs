//! The server against a small iperf3 client written here from the same
//! protocol description, both on the reference stack's simulator (the
//! real client is driven by `crates/cli/tests/interop_iperf3.rs`, as
//! root).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use stack::iface::host::Host;
use stack::runner::{Next, Simulator};
use stack::topology::Topology;

use super::control::{Control, State};
use super::{Server, COOKIE_LEN, PORT};
use crate::reference::net::HostStream;
use crate::transport::{Read, StreamOptions, Transport};

const COOKIE: &[u8; COOKIE_LEN] = b"abcdefghijklmnopqrstuvwxyz0123456789\0";

/// The default network, SLAAC done: host-b's address.
fn network() -> (Simulator, SocketAddr) {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    let b = sim.host("host-b").unwrap().global_ipv6_addresses()[0];
    (sim, SocketAddr::new(b.into(), PORT))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Connect,
    Cookie,
    Params,
    Streams,
    Start,
    Data,
    Results,
    ServerResults,
    Display,
    Done,
}

/// A TCP client: `parallel` streams of `bytes` each, then the exchange.
/// `reverse` (`-R`): the server sends; once `bytes` arrived on each
/// stream the client sends TEST_END and, as iperf3 3.12's client, reads
/// its streams on until they end before it answers EXCHANGE_RESULTS.
struct Client {
    server: SocketAddr,
    parallel: usize,
    bytes: u64,
    reverse: bool,
    stage: Stage,
    control: Option<Control<HostStream>>,
    streams: Vec<(HostStream, bool, u64)>,
    states: Vec<u8>,
    results: Option<Value>,
    buf: Vec<u8>,
}

impl Client {
    fn new(server: SocketAddr, parallel: usize, bytes: u64) -> Self {
        Self {
            server,
            parallel,
            bytes,
            reverse: false,
            stage: Stage::Connect,
            control: None,
            streams: Vec::new(),
            states: Vec::new(),
            results: None,
            buf: vec![0; 65536],
        }
    }

    fn reversed(mut self) -> Self {
        self.reverse = true;
        self
    }

    /// Reverse: reads what the server sent; true once every stream ended.
    fn read_streams(&mut self, net: &mut Host) -> bool {
        let mut all_ended = true;
        for (s, ended, received) in &mut self.streams {
            while !*ended {
                match net.recv(*s, &mut self.buf).unwrap() {
                    Read::Data(n) => *received += n as u64,
                    Read::Nothing => break,
                    Read::End => *ended = true,
                }
            }
            all_ended &= *ended;
        }
        all_ended
    }

    fn step(&mut self, net: &mut Host) {
        if let Some(control) = &mut self.control {
            control.pump(net, &mut self.buf).unwrap();
        }
        match self.stage {
            Stage::Connect => {
                let s = net.connect(self.server, StreamOptions::default()).unwrap();
                self.control = Some(Control::new(s));
                self.stage = Stage::Cookie;
            }
            Stage::Cookie => {
                let s = self.control.as_ref().unwrap().stream;
                if net.established(s).unwrap() {
                    assert_eq!(net.send(s, COOKIE).unwrap(), COOKIE_LEN);
                    self.stage = Stage::Params;
                }
            }
            Stage::Params => {
                if self.expect(State::ParamExchange) {
                    let params = if self.reverse {
                        json!({"tcp": true, "omit": 0, "time": 1, "num": 0, "reverse": true,
                            "bandwidth": 20_000_000,
                            "parallel": self.parallel, "len": 8192, "client_version": "test"})
                    } else {
                        json!({"tcp": true, "omit": 0, "time": 0,
                            "num": self.bytes * self.parallel as u64, "parallel": self.parallel,
                            "len": 8192, "client_version": "test"})
                    };
                    self.control.as_mut().unwrap().send_json(&params);
                    self.stage = Stage::Streams;
                }
            }
            Stage::Streams => {
                if self.streams.is_empty() && !self.expect(State::CreateStreams) {
                    return;
                }
                // One at a time, as iperf3: the server numbers them in
                // the order their cookies come.
                let opened = self.streams.len();
                match self.streams.last_mut() {
                    Some((s, sent_cookie, _)) if !*sent_cookie => {
                        if net.established(*s).unwrap() {
                            assert_eq!(net.send(*s, COOKIE).unwrap(), COOKIE_LEN);
                            *sent_cookie = true;
                        }
                    }
                    _ if opened < self.parallel => {
                        let s = net.connect(self.server, StreamOptions::default()).unwrap();
                        self.streams.push((s, false, 0));
                    }
                    _ => {
                        // The cookies are sent: the flag now says the
                        // stream ended (reverse).
                        for (_, flag, _) in &mut self.streams {
                            *flag = false;
                        }
                        self.stage = Stage::Start;
                    }
                }
            }
            Stage::Start => {
                while let Some(b) = self.control.as_mut().unwrap().take_byte() {
                    self.states.push(b);
                }
                if self
                    .states
                    .ends_with(&[State::TestStart.byte(), State::TestRunning.byte()])
                {
                    self.stage = Stage::Data;
                }
            }
            Stage::Data if self.reverse => {
                self.read_streams(net);
                if self.streams.iter().all(|(_, _, got)| *got >= self.bytes) {
                    self.control.as_mut().unwrap().send_state(State::TestEnd);
                    self.stage = Stage::Results;
                }
            }
            Stage::Data => {
                let block = [7u8; 8192];
                for (s, _, sent) in &mut self.streams {
                    while *sent < self.bytes {
                        let want = (self.bytes - *sent).min(block.len() as u64) as usize;
                        let n = net.send(*s, &block[..want]).unwrap();
                        if n == 0 {
                            break;
                        }
                        *sent += n as u64;
                    }
                }
                if self.streams.iter().all(|(_, _, sent)| *sent == self.bytes) {
                    self.control.as_mut().unwrap().send_state(State::TestEnd);
                    self.stage = Stage::Results;
                }
            }
            Stage::Results => {
                // iperf3 3.12 reads on after TEST_END (blocking, in
                // whole blocks): it sees the server's message only once
                // its streams' last block is complete or they ended.
                if self.reverse && !self.read_streams(net) {
                    return;
                }
                if self.expect(State::ExchangeResults) {
                    let streams: Vec<Value> = self
                        .streams
                        .iter()
                        .enumerate()
                        .map(|(i, (_, _, sent))| {
                            json!({"id": if i == 0 { 1 } else { i + 2 }, "bytes": sent,
                                "retransmits": 0, "jitter": 0, "errors": 0, "packets": 0})
                        })
                        .collect();
                    let results = json!({"cpu_util_total": 1.0, "cpu_util_user": 0.5,
                        "cpu_util_system": 0.5, "sender_has_retransmits": 1, "streams": streams});
                    self.control.as_mut().unwrap().send_json(&results);
                    self.stage = Stage::ServerResults;
                }
            }
            Stage::ServerResults => {
                if let Some(v) = self.control.as_mut().unwrap().take_json().unwrap() {
                    self.results = Some(v);
                    self.stage = Stage::Display;
                }
            }
            Stage::Display => {
                if self.expect(State::DisplayResults) {
                    self.control.as_mut().unwrap().send_state(State::IperfDone);
                    self.stage = Stage::Done;
                }
            }
            Stage::Done => {}
        }
        if let Some(control) = &mut self.control {
            control.flush(net).unwrap();
        }
    }

    /// Whether the next state byte is `state` (consumed); any other is a
    /// failure.
    fn expect(&mut self, state: State) -> bool {
        match self.control.as_mut().unwrap().take_byte() {
            None => false,
            Some(b) => {
                assert_eq!(State::from_byte(b), Some(state), "at {:?}", self.stage);
                self.states.push(b);
                true
            }
        }
    }
}

/// Steps the server on host-b and `client` on host-a until the client is
/// done (or `limit` of virtual time passed).
fn run(sim: &mut Simulator, server: &mut Server<Host>, client: &mut Client, limit: Duration) {
    let done = sim.drive(limit, |sim| {
        server.run(sim.host_mut("host-b").unwrap());
        client.step(sim.host_mut("host-a").unwrap());
        if client.stage == Stage::Done {
            return Next::Done;
        }
        Next::At(Some(sim.now() + Duration::from_millis(1)))
    });
    assert!(
        done,
        "the client stopped at {:?} (streams: ended, bytes: {:?}; states {:?}; server: {:?})",
        client.stage,
        client
            .streams
            .iter()
            .map(|s| (s.1, s.2))
            .collect::<Vec<_>>(),
        client.states,
        server.take_events()
    );
}

#[test]
fn a_tcp_test_runs_to_the_end_and_the_server_counts_every_byte() {
    let (mut sim, address) = network();
    let mut server = Server::open(sim.host_mut("host-b").unwrap(), PORT).unwrap();
    let mut client = Client::new(address, 2, 300_000);
    run(&mut sim, &mut server, &mut client, Duration::from_secs(30));
    let results = client.results.take().unwrap();
    let streams = results["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    for (stream, id) in streams.iter().zip([1, 3]) {
        assert_eq!(stream["id"], id, "iperf3's numbering: 1, 3, 4, …");
        assert_eq!(stream["bytes"], 300_000, "the server counted every byte");
        assert_eq!(stream["retransmits"], -1, "the server did not send");
        let end = stream["end_time"].as_f64().unwrap();
        assert!(end > 0.0 && end < 30.0, "{end}");
    }
    assert_eq!(results["sender_has_retransmits"], 0);
    assert_eq!(results["congestion_used"], "cubic");
    for key in ["cpu_util_total", "cpu_util_user", "cpu_util_system"] {
        assert!(results[key].as_f64().is_some_and(|x| x >= 0.0), "{key}");
    }
    // Run to its end: the next test is served (the server is free).
    let _ = sim.drive(Duration::from_secs(1), |sim| {
        server.run(sim.host_mut("host-b").unwrap());
        if server.counts().completed > 0 {
            return Next::Done;
        }
        Next::At(Some(sim.now() + Duration::from_millis(1)))
    });
    let counts = server.counts();
    assert_eq!((counts.completed, counts.failed), (1, 0));
    assert_eq!(counts.bytes_in, 600_000);
    let events = server.take_events();
    assert!(
        events.iter().any(|e| e.contains("received 600000 B")),
        "{events:?}"
    );
}

#[test]
fn a_second_client_meanwhile_is_told_the_server_is_busy() {
    let (mut sim, address) = network();
    let mut server = Server::open(sim.host_mut("host-b").unwrap(), PORT).unwrap();
    let mut first = Client::new(address, 1, 1000);
    // The first test reaches its parameters.
    let _ = sim.drive(Duration::from_secs(5), |sim| {
        server.run(sim.host_mut("host-b").unwrap());
        first.step(sim.host_mut("host-a").unwrap());
        if first.stage == Stage::Streams {
            return Next::Done;
        }
        Next::At(Some(sim.now() + Duration::from_millis(1)))
    });
    let a = sim.host_mut("host-a").unwrap();
    let second = a.connect(address, StreamOptions::default()).unwrap();
    let mut control = Control::new(second);
    let mut cookie_sent = false;
    let mut buf = vec![0; 1024];
    let mut answer = None;
    let _ = sim.drive(Duration::from_secs(5), |sim| {
        server.run(sim.host_mut("host-b").unwrap());
        let a = sim.host_mut("host-a").unwrap();
        if !cookie_sent && a.established(second).unwrap() {
            a.send(second, b"ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ\0")
                .unwrap();
            cookie_sent = true;
        }
        let _ = control.pump(a, &mut buf);
        answer = control.take_byte();
        if answer.is_some() {
            return Next::Done;
        }
        Next::At(Some(sim.now() + Duration::from_millis(1)))
    });
    assert_eq!(answer, Some(State::AccessDenied.byte()));
    assert_eq!(server.counts().busy, 1);
}

#[test]
fn a_reverse_tests_streams_end_at_test_end_so_iperf3s_client_stops_reading() {
    let (mut sim, address) = network();
    let mut server = Server::open(sim.host_mut("host-b").unwrap(), PORT).unwrap();
    let mut client = Client::new(address, 2, 200_000).reversed();
    run(&mut sim, &mut server, &mut client, Duration::from_secs(30));
    let results = client.results.take().unwrap();
    let streams = results["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    for ((stream, id), (_, ended, received)) in streams.iter().zip([1, 3]).zip(&client.streams) {
        assert_eq!(stream["id"], id);
        assert!(*ended, "the stream ended at TEST_END");
        assert_eq!(
            stream["bytes"].as_u64(),
            Some(*received),
            "the server sent what the client read"
        );
    }
}
