//! One iperf3 test, from the client's parameters to its IPERF_DONE: the
//! server's side of the control protocol as a state machine, stepped
//! inside the stack's loop, and the test's data streams.
//!
//! The exchange (the client drives it; the server answers):
//! PARAM_EXCHANGE → the client's parameters → CREATE_STREAMS → the
//! client opens its streams (TCP: a connection that sends the cookie;
//! UDP: a 4-byte connect datagram, answered) → TEST_START, TEST_RUNNING →
//! data → the client's TEST_END → EXCHANGE_RESULTS → the client's results,
//! then the server's → DISPLAY_RESULTS → the client's IPERF_DONE.

use std::net::SocketAddr;
use std::time::Duration;

use stack::time::Instant;

use super::control::{Control, State};
use super::measured::{remote_results, ClientOptions, ClientRun, RemoteResults};
use super::params::{Params, Protocol};
use super::results::{self, ClientStream, StreamResult};
use super::sampling::Sampler;
use super::stream::{Channel, DataStream, Moved};
use super::udp;
use super::COOKIE_LEN;
use crate::cpu::{CpuMeter, CpuPercent};
use crate::error::TrafficError;
use crate::transport::{Peer, Transport};

/// A test with nothing moving (no data, no control message) this long is
/// abandoned: its client is gone.
const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// After TEST_END a receiving server keeps counting until everything the
/// client says it sent arrived, or nothing came for this long (UDP
/// datagrams that were lost never come)…
const DRAIN_QUIET: Duration = Duration::from_millis(250);
/// …and never longer than this.
const DRAIN_LIMIT: Duration = Duration::from_secs(3);

#[derive(Debug)]
enum Phase {
    /// PARAM_EXCHANGE sent: waiting for the parameters.
    Params,
    /// CREATE_STREAMS sent: waiting for the streams.
    Streams,
    /// TEST_RUNNING sent: data moves until the client's TEST_END.
    Running,
    /// EXCHANGE_RESULTS sent: waiting for the client's results.
    Results,
    /// Counting what is still in flight, up to what the client says it sent.
    Drain {
        client: Vec<ClientStream>,
        since: Instant,
    },
    /// Results and DISPLAY_RESULTS sent: waiting for IPERF_DONE.
    Display,
}

/// How a finished test went.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The test as iperf3's server JSON reports it (`-s -J`).
    pub run: Option<Box<ClientRun>>,
    /// One line for the host's log.
    pub text: String,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Where a step left the test.
#[derive(Debug)]
pub enum Progress {
    Going,
    /// Over: how it went, or why it failed.
    Over(Result<Summary, String>),
}

pub struct Session<N: Transport> {
    pub control: Control<N::Stream>,
    cookie: [u8; COOKIE_LEN],
    params: Option<Params>,
    phase: Phase,
    streams: Vec<DataStream<N::Stream, N::Datagrams>>,
    /// One write's bytes (a sending server's TCP writes and datagrams).
    block: Vec<u8>,
    /// A sending server's bytes left under `-n`.
    left: Option<u64>,
    running_at: Option<Instant>,
    ended_at: Option<Instant>,
    cpu: Option<CpuMeter>,
    last_progress: Instant,
    /// Interval reports (`-s -i`), and what samples them.
    interval: Option<Duration>,
    sampler: Option<Sampler>,
    addrs: Vec<(Option<SocketAddr>, Option<SocketAddr>)>,
    client_results: Option<RemoteResults>,
    run: Option<ClientRun>,
}

impl<N: Transport> Session<N> {
    /// A test whose control connection sent `cookie`: asks for the
    /// parameters.
    pub fn new(stream: N::Stream, cookie: [u8; COOKIE_LEN], now: Instant) -> Self {
        let mut control = Control::new(stream);
        control.send_state(State::ParamExchange);
        Self {
            control,
            cookie,
            params: None,
            phase: Phase::Params,
            streams: Vec::new(),
            block: Vec::new(),
            left: None,
            running_at: None,
            ended_at: None,
            cpu: None,
            last_progress: now,
            interval: None,
            sampler: None,
            addrs: Vec::new(),
            client_results: None,
            run: None,
        }
    }

    /// Samples the test every `interval` for its JSON.
    pub fn with_interval(mut self, interval: Option<Duration>) -> Self {
        self.interval = interval;
        self
    }

    fn protocol(&self) -> Option<Protocol> {
        self.params.as_ref().map(|p| p.protocol)
    }

    fn reverse(&self) -> bool {
        self.params.as_ref().is_some_and(|p| p.reverse)
    }

    fn wants_streams(&self) -> bool {
        matches!(self.phase, Phase::Streams)
            && self
                .params
                .as_ref()
                .is_some_and(|p| self.streams.len() < p.parallel)
    }

    /// Whether a new connection that sent `cookie` is one of this test's
    /// TCP streams.
    pub fn takes_tcp_stream(&self, cookie: &[u8]) -> bool {
        cookie == self.cookie && self.wants_streams() && self.protocol() == Some(Protocol::Tcp)
    }

    /// Adds a stream; iperf3 numbers them 1, 3, 4, 5, … (its own way).
    fn add_stream(
        &mut self,
        channel: Channel<N::Stream, N::Datagrams>,
        addrs: (Option<SocketAddr>, Option<SocketAddr>),
        now: Instant,
    ) {
        let id = match self.streams.len() {
            0 => 1,
            n => n as u32 + 2,
        };
        self.streams.push(DataStream::new(id, channel));
        self.addrs.push(addrs);
        self.last_progress = now;
    }

    pub fn add_tcp_stream(&mut self, net: &mut N, stream: N::Stream, now: Instant) {
        let addrs = net
            .stream_addrs(stream)
            .map_or((None, None), |(l, r)| (Some(l), Some(r)));
        self.add_stream(Channel::Tcp(stream), addrs, now);
    }

    /// Takes a datagram that came to `socket` from `peer`: a stream's
    /// data, or a new UDP stream's connect message (answered). True if
    /// it belonged to the test.
    pub fn on_datagram(
        &mut self,
        net: &mut N,
        socket: N::Datagrams,
        peer: Peer,
        data: &[u8],
    ) -> Result<bool, TrafficError> {
        let now = net.now();
        let counting = !self.reverse()
            && matches!(
                self.phase,
                Phase::Running | Phase::Results | Phase::Drain { .. }
            );
        let wide = self.params.as_ref().is_some_and(|p| p.counters_64bit);
        let known = self
            .streams
            .iter_mut()
            .find(|s| matches!(s.channel, Channel::Udp { peer: p, .. } if p == peer));
        if let Some(stream) = known {
            if counting {
                stream.receive_datagram(data, wide, now);
                self.last_progress = now;
            }
            return Ok(true);
        }
        if self.wants_streams() && self.protocol() == Some(Protocol::Udp) && udp::is_connect(data) {
            let remote = match peer {
                Peer::Ip(addr) => Some(addr),
                Peer::Mac(_) => None,
            };
            let local = net.datagram_addr(socket);
            self.add_stream(Channel::Udp { socket, peer }, (local, remote), now);
            // Lost, the client waits: iperf3 3.12 does not ask again.
            net.send_to(socket, &udp::connect_reply(data), peer)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Does what can be done now.
    pub fn step(&mut self, net: &mut N, buf: &mut [u8], moved: &mut Moved) -> Progress {
        match self.try_step(net, buf, moved) {
            Ok(progress) => progress,
            Err(e) => Progress::Over(Err(e.to_string())),
        }
    }

    fn try_step(
        &mut self,
        net: &mut N,
        buf: &mut [u8],
        moved: &mut Moved,
    ) -> Result<Progress, TrafficError> {
        let now = net.now();
        let mut step = Moved::default();
        step.any |= self.control.pump(net, buf)?;
        self.move_data(net, buf, &mut step)?;
        if step.any {
            self.last_progress = now;
        }
        moved.any |= step.any;
        if let Some(at) = step.wake {
            moved.wake_at(at);
        }
        match &self.phase {
            Phase::Params => {
                if let Some(v) = self.control.take_json()? {
                    self.last_progress = now;
                    match Params::parse(&v) {
                        Ok(params) => self.accept_params(params),
                        Err(refusal) => {
                            self.control.send_error(refusal.code);
                            self.control.flush(net)?;
                            return Ok(Progress::Over(Err(format!("refused: {}", refusal.why))));
                        }
                    }
                }
            }
            Phase::Streams => {
                if !self.wants_streams() {
                    self.start(net, now);
                }
            }
            Phase::Running => match self.control.take_byte() {
                None => {
                    let sending = self.reverse();
                    if let Some(sampler) = &mut self.sampler {
                        sampler.tick(net, &self.streams, sending, now, &mut None);
                        if let Some(at) = sampler.next() {
                            moved.wake_at(at);
                        }
                    }
                }
                Some(b) if b == State::TestEnd.byte() => {
                    let sending = self.reverse();
                    if let Some(sampler) = &mut self.sampler {
                        sampler.tick(net, &self.streams, sending, now, &mut None);
                        sampler.finish(net, &self.streams, sending, now, &mut None);
                    }
                    self.ended_at = Some(now);
                    if sending {
                        self.end_sending(net);
                    }
                    self.control.send_state(State::ExchangeResults);
                    self.phase = Phase::Results;
                }
                Some(b) => return Err(unexpected(b, "while the test ran")),
            },
            Phase::Results => {
                if let Some(v) = self.control.take_json()? {
                    let client = results::client_streams(&v)?;
                    self.client_results = remote_results(&v).ok();
                    self.phase = Phase::Drain { client, since: now };
                }
            }
            Phase::Drain { client, since } => {
                let waited = now.saturating_duration_since(*since);
                let quiet = self
                    .streams
                    .iter()
                    .filter_map(|s| s.last_arrival)
                    .max()
                    .map_or(*since, |a| a.max(*since));
                if self.drained(client)
                    || waited >= DRAIN_LIMIT
                    || now.saturating_duration_since(quiet) >= DRAIN_QUIET
                {
                    self.send_results(net);
                    self.control.send_state(State::DisplayResults);
                    self.phase = Phase::Display;
                } else {
                    moved.wake_at(quiet + DRAIN_QUIET);
                }
            }
            Phase::Display => match self.control.take_byte() {
                Some(b) if b == State::IperfDone.byte() => {
                    return Ok(Progress::Over(Ok(self.summary())));
                }
                Some(b) => return Err(unexpected(b, "after the results")),
                // The client has the results; it may close without a word.
                None if self.control.closed => return Ok(Progress::Over(Ok(self.summary()))),
                None => {}
            },
        }
        self.control.flush(net)?;
        if self.control.closed {
            return Err(TrafficError::Invalid(
                "the client closed the control connection before the test's end".into(),
            ));
        }
        if now.saturating_duration_since(self.last_progress) >= IDLE_LIMIT {
            return Err(TrafficError::timeout(
                IDLE_LIMIT,
                "with nothing moving: the client is gone",
            ));
        }
        Ok(Progress::Going)
    }

    fn accept_params(&mut self, params: Params) {
        // What a sending server writes: its content is not checked.
        self.block = (0..params.len).map(|i| (i % 251) as u8).collect();
        self.left = params.bytes;
        self.params = Some(params);
        self.control.send_state(State::CreateStreams);
        self.phase = Phase::Streams;
    }

    /// Every stream is there: the test runs.
    fn start(&mut self, net: &mut N, now: Instant) {
        self.control.send_state(State::TestStart);
        self.control.send_state(State::TestRunning);
        self.running_at = Some(now);
        self.cpu = Some(CpuMeter::start());
        self.sampler = Some(Sampler::start(net, &self.streams, self.interval, now));
        let rate = self.params.as_ref().and_then(|p| p.rate);
        if self.reverse() {
            for stream in &mut self.streams {
                stream.start_sending(rate, now);
            }
        }
        self.phase = Phase::Running;
    }

    /// A sending server's TCP streams get their FIN at TEST_END, as
    /// iperf3's server closes its streams then: iperf3 3.12's client
    /// reads a stream in whole blocks (`-l`) and, once it sent TEST_END,
    /// with blocking reads, so a block the server left half-sent would
    /// keep it reading forever — it never answers EXCHANGE_RESULTS. The
    /// FIN ends that read. The sockets stay open for the results (their
    /// retransmits and buffers).
    fn end_sending(&mut self, net: &mut N) {
        for stream in &self.streams {
            if let Channel::Tcp(s) = stream.channel {
                // A stream the client already reset has nothing to end.
                let _ = net.shutdown(s);
            }
        }
    }

    /// Receives on TCP streams while the test counts; sends while it runs.
    fn move_data(
        &mut self,
        net: &mut N,
        buf: &mut [u8],
        moved: &mut Moved,
    ) -> Result<(), TrafficError> {
        let Some(params) = &self.params else {
            return Ok(());
        };
        if params.reverse {
            if matches!(self.phase, Phase::Running) {
                for stream in &mut self.streams {
                    stream.send(
                        net,
                        &mut self.block,
                        &mut self.left,
                        params.counters_64bit,
                        moved,
                    )?;
                }
            }
        } else if matches!(
            self.phase,
            Phase::Running | Phase::Results | Phase::Drain { .. }
        ) {
            for stream in &mut self.streams {
                stream.receive_tcp(net, buf, moved)?;
            }
        }
        Ok(())
    }

    /// Whether every byte (TCP) or datagram count (UDP) the client says
    /// it sent has arrived.
    fn drained(&self, client: &[ClientStream]) -> bool {
        if self.reverse() {
            return true;
        }
        let udp = self.protocol() == Some(Protocol::Udp);
        self.streams.iter().all(|s| {
            let Some(sent) = client.iter().find(|c| c.id == s.id) else {
                return true;
            };
            if udp {
                s.received.highest >= sent.packets
            } else {
                s.ended || s.received.bytes >= sent.bytes
            }
        })
    }

    /// Sends the server's results: its own counts, its CPU over the test.
    fn send_results(&mut self, net: &mut N) {
        let cpu = self
            .cpu
            .take()
            .map_or(CpuPercent::default(), |m| m.stop().percent());
        let start = self.running_at.unwrap_or_default();
        let end = self.ended_at.unwrap_or_default();
        let reverse = self.reverse();
        let tcp = self.protocol() == Some(Protocol::Tcp);
        let mut congestion = None;
        let mut streams = Vec::with_capacity(self.streams.len());
        for s in &self.streams {
            let retransmits = match s.channel {
                Channel::Tcp(stream) if reverse => net.retransmits(stream),
                _ => None,
            };
            if let (Channel::Tcp(stream), true) = (s.channel, congestion.is_none()) {
                congestion = net.stream_facts(stream).congestion_control;
            }
            // A receiver's window ends at its last byte if that came
            // after TEST_END (the drain); a sender's at TEST_END.
            let last = match s.last_arrival {
                Some(at) if !reverse => at.max(end),
                _ => end,
            };
            streams.push(StreamResult {
                id: s.id,
                bytes: if reverse {
                    s.sent_bytes
                } else {
                    s.received.bytes
                },
                retransmits,
                jitter: if reverse { 0.0 } else { s.received.jitter },
                errors: if reverse { 0 } else { s.received.lost },
                packets: match (tcp, reverse) {
                    (true, _) => 0,
                    (false, true) => s.sent_datagrams,
                    (false, false) => s.received.highest,
                },
                start_time: 0.0,
                end_time: last.saturating_duration_since(start).as_secs_f64(),
            });
        }
        let has_retransmits = reverse && tcp && streams.iter().all(|s| s.retransmits.is_some());
        let value = results::server_results(cpu, has_retransmits, congestion.as_deref(), &streams);
        self.control.send_json(&value);
        self.run = self.measured(net, cpu);
    }

    /// The test as this end measured it, for iperf3's server JSON.
    fn measured(&mut self, net: &mut N, cpu: CpuPercent) -> Option<ClientRun> {
        let params = self.params.as_ref()?;
        let sampler = self.sampler.take()?;
        let sending = params.reverse;
        let duration = match (self.running_at, self.ended_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let (congestion, sndbuf, rcvbuf) = super::client::facts(net, &self.streams);
        let control = net.stream_addrs(self.control.stream);
        let streams = sampler.totals(net, &self.streams, &self.addrs, sending, duration);
        Some(ClientRun {
            options: ClientOptions {
                server: control.map_or(SocketAddr::from(([0, 0, 0, 0], super::PORT)), |c| c.0),
                host_name: String::new(),
                protocol: params.protocol,
                reverse: params.reverse,
                parallel: params.parallel,
                len: params.len,
                rate: params.rate,
                bytes: params.bytes,
                time: params.time,
                window: None,
                interval: self.interval,
                timeout: IDLE_LIMIT,
            },
            cookie: String::from_utf8_lossy(&self.cookie[..COOKIE_LEN - 1]).into_owned(),
            tcp_mss: net.tcp_info(self.control.stream).map(|i| i.mss),
            sndbuf,
            rcvbuf,
            congestion,
            intervals: sampler.intervals,
            streams,
            duration,
            cpu,
            remote: self.client_results.take().unwrap_or_default(),
            server_side: true,
            accepted: control.map(|c| c.1),
        })
    }

    fn summary(&mut self) -> Summary {
        let reverse = self.reverse();
        let bytes_in: u64 = self.streams.iter().map(|s| s.received.bytes).sum();
        let bytes_out: u64 = self.streams.iter().map(|s| s.sent_bytes).sum();
        let seconds = match (self.running_at, self.ended_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let params = self.params.as_ref().map_or(String::new(), Params::describe);
        let mut text = if reverse {
            format!("iperf3 test ({params}): sent {bytes_out} B in {seconds:.3} s")
        } else {
            format!("iperf3 test ({params}): received {bytes_in} B in {seconds:.3} s")
        };
        if self.protocol() == Some(Protocol::Udp) && !reverse {
            let lost: u64 = self.streams.iter().map(|s| s.received.lost).sum();
            let packets: u64 = self.streams.iter().map(|s| s.received.highest).sum();
            text.push_str(&format!(", {lost} of {packets} datagrams lost"));
        }
        Summary {
            run: self.run.take().map(Box::new),
            text,
            bytes_in,
            bytes_out,
        }
    }

    /// Releases the test's connections.
    pub fn close(&mut self, net: &mut N) {
        for stream in &self.streams {
            if let Channel::Tcp(s) = stream.channel {
                net.close(s);
            }
        }
        net.close(self.control.stream);
    }
}

fn unexpected(byte: u8, when: &str) -> TrafficError {
    match State::from_byte(byte) {
        Some(State::ClientTerminate) => {
            TrafficError::Invalid(format!("the client stopped the test {when}"))
        }
        Some(state) => TrafficError::Invalid(format!("the client sent {state:?} {when}")),
        None => TrafficError::Invalid(format!("the client sent state byte {byte} {when}")),
    }
}
