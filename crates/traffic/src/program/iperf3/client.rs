//! An iperf3 client on any [`Transport`]: `stackscope iperf -c`, which
//! measures against Debian's `iperf3 -s` (or this crate's [`Server`]) with
//! iperf3's own control protocol. The exchange, from the client's side:
//! cookie; PARAM_EXCHANGE → the parameters; CREATE_STREAMS → the data
//! streams (TCP connections that send the cookie, or UDP sockets that
//! send the connect message and wait for its reply); TEST_START,
//! TEST_RUNNING → data until `-t` or `-n` is reached; TEST_END;
//! EXCHANGE_RESULTS → both ends' results; DISPLAY_RESULTS → IPERF_DONE.
//!
//! [`Server`]: super::Server

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use stack::time::Instant;

use super::control::{Control, State};
pub use super::measured::{
    remote_results, ClientOptions, ClientRun, Interval, RemoteResults, StreamInterval, StreamTotals,
};
use super::params::Protocol;
use super::results::{self, StreamResult};
use super::sampling::{IntervalHook, Sampler};
use super::stream::{Channel, DataStream, Moved};
use super::COOKIE_LEN;
use crate::cpu::{CpuMeter, CpuPercent};
use crate::error::TrafficError;
use crate::program::{Program, Step};
use crate::transport::{DatagramKind, DatagramOptions, Peer, StreamOptions, Transport};

#[derive(Debug)]
enum Phase {
    /// The control connection is opening.
    Connecting,
    /// The cookie went: waiting for PARAM_EXCHANGE, then CREATE_STREAMS.
    Params,
    /// Opening stream `streams.len()`; UDP: the connect message went
    /// from its socket at `since`.
    Streams {
        pending: Option<PendingStream>,
    },
    /// Every stream is open: waiting for TEST_START and TEST_RUNNING.
    Starting,
    Running,
    /// TEST_END sent: waiting for EXCHANGE_RESULTS, then the server's
    /// results, then DISPLAY_RESULTS.
    Results {
        sent: bool,
        got: bool,
    },
}

/// What a step leaves to do.
enum Next {
    Done(Box<ClientRun>),
    Again,
    Wait(Instant),
}

#[derive(Debug)]
enum PendingStream {
    Tcp { stream: usize, cookie_sent: usize },
    Udp { socket: usize },
}

/// What is told each stream's number and addresses as it opens.
type ConnectedHook = Box<dyn FnMut(u32, SocketAddr, SocketAddr) + Send>;

/// The client: a program whose output is the run's [`ClientRun`].
pub struct Client<N: Transport> {
    options: ClientOptions,
    cookie: [u8; COOKIE_LEN],
    phase: Phase,
    control: Option<Control<N::Stream>>,
    stream_opts: StreamOptions,
    /// Streams being opened (TCP connections, UDP sockets).
    tcp_opening: Vec<N::Stream>,
    udp_opening: Vec<N::Datagrams>,
    streams: Vec<DataStream<N::Stream, N::Datagrams>>,
    addrs: Vec<(Option<SocketAddr>, Option<SocketAddr>)>,
    buf: Vec<u8>,
    block: Vec<u8>,
    left: Option<u64>,
    last_news: Instant,
    running_at: Option<Instant>,
    ended_at: Option<Instant>,
    sampler: Option<Sampler>,
    cpu: Option<CpuMeter>,
    cpu_used: CpuPercent,
    remote: RemoteResults,
    on_interval: Option<IntervalHook>,
    on_connected: Option<ConnectedHook>,
    tcp_mss: Option<u64>,
}

/// 36 characters of iperf3's cookie alphabet and a NUL, from the clock
/// and the process id (it names a test, it guards nothing).
pub fn make_cookie() -> [u8; COOKIE_LEN] {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut state = nanos ^ (u64::from(std::process::id()) << 32);
    let mut cookie = [0; COOKIE_LEN];
    for c in cookie.iter_mut().take(COOKIE_LEN - 1) {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        *c = ALPHABET[(z % ALPHABET.len() as u64) as usize];
    }
    cookie
}

impl<N: Transport> Client<N> {
    pub fn new(options: ClientOptions, now: Instant) -> Self {
        let stream_opts = StreamOptions {
            buffer: options.window,
            ..StreamOptions::default()
        };
        let block = (0..options.len).map(|i| (i % 251) as u8).collect();
        Self {
            left: options.bytes,
            options,
            cookie: make_cookie(),
            phase: Phase::Connecting,
            control: None,
            stream_opts,
            tcp_opening: Vec::new(),
            udp_opening: Vec::new(),
            streams: Vec::new(),
            addrs: Vec::new(),
            buf: vec![0; 64 * 1024],
            block,
            last_news: now,
            running_at: None,
            ended_at: None,
            sampler: None,
            cpu: None,
            cpu_used: CpuPercent::default(),
            remote: RemoteResults::default(),
            on_interval: None,
            on_connected: None,
            tcp_mss: None,
        }
    }

    /// Calls `f` with each interval as it ends (iperf3's live lines).
    pub fn on_interval(mut self, f: impl FnMut(&Interval) + Send + 'static) -> Self {
        self.on_interval = Some(Box::new(f));
        self
    }

    /// Calls `f` with each stream's socket number and addresses as it
    /// opens (iperf3's "connected to" lines).
    pub fn on_connected(
        mut self,
        f: impl FnMut(u32, SocketAddr, SocketAddr) + Send + 'static,
    ) -> Self {
        self.on_connected = Some(Box::new(f));
        self
    }

    pub fn cookie_text(&self) -> String {
        String::from_utf8_lossy(&self.cookie[..COOKIE_LEN - 1]).into_owned()
    }

    fn udp(&self) -> bool {
        self.options.protocol == Protocol::Udp
    }

    fn rate(&self) -> Option<u64> {
        match (self.options.rate, self.options.protocol) {
            (Some(0), _) | (None, Protocol::Tcp) => None,
            (None, Protocol::Udp) => Some(super::params::DEFAULT_UDP_RATE),
            (Some(r), _) => Some(r),
        }
    }

    /// The parameters as iperf3 3.12's client sends them.
    fn params(&self) -> Value {
        let o = &self.options;
        let mut v = json!({
            "omit": 0,
            "time": if o.bytes.is_some() { 0 } else { o.time },
            "num": o.bytes.unwrap_or(0),
            "blockcount": 0,
            "parallel": o.parallel,
            "len": o.len,
            "pacing_timer": 1000,
            "client_version": "3.12",
        });
        v[if self.udp() { "udp" } else { "tcp" }] = Value::Bool(true);
        if o.reverse {
            v["reverse"] = Value::Bool(true);
        }
        if let Some(rate) = self.rate() {
            v["bandwidth"] = rate.into();
        }
        if let Some(w) = o.window {
            v["window"] = w.into();
        }
        v
    }

    fn seconds(&self, at: Instant) -> f64 {
        self.running_at
            .map_or(0.0, |s| at.saturating_duration_since(s).as_secs_f64())
    }

    fn control(&mut self) -> Result<&mut Control<N::Stream>, TrafficError> {
        self.control
            .as_mut()
            .ok_or_else(|| TrafficError::Invalid("iperf3: no control connection".into()))
    }

    /// A state byte from the server, with its errors made plain.
    fn next_state(&mut self) -> Result<Option<State>, TrafficError> {
        let control = self.control()?;
        let Some(byte) = control.take_byte() else {
            if control.closed {
                return Err(TrafficError::Invalid(
                    "iperf3: the server closed the control connection".into(),
                ));
            }
            return Ok(None);
        };
        match State::from_byte(byte) {
            Some(State::AccessDenied) => Err(TrafficError::Invalid(
                "iperf3: the server is busy running a test. try again later".into(),
            )),
            Some(State::ServerTerminate) => Err(TrafficError::Invalid(
                "iperf3: the server has terminated".into(),
            )),
            Some(State::ServerError) => Err(TrafficError::Invalid(
                "iperf3: the server refused the test (SERVER_ERROR)".into(),
            )),
            Some(state) => Ok(Some(state)),
            None => Err(TrafficError::Invalid(format!(
                "iperf3: the server sent state byte {byte}"
            ))),
        }
    }

    fn try_step(&mut self, net: &mut N) -> Result<Next, TrafficError> {
        let now = net.now();
        let mut moved = Moved::default();
        if let Some(control) = &mut self.control {
            moved.any |= control.pump(net, &mut self.buf)?;
        }
        match &mut self.phase {
            Phase::Connecting => {
                if self.control.is_none() {
                    let stream = net.connect(self.options.server, StreamOptions::default())?;
                    self.control = Some(Control::new(stream));
                }
                let stream = self.control()?.stream;
                if net.established(stream)? {
                    self.tcp_mss = net.tcp_info(stream).map(|i| i.mss);
                    let cookie = self.cookie;
                    // The control connection's outbox keeps what the
                    // stack has no room for yet.
                    self.control()?.send_raw(&cookie);
                    self.phase = Phase::Params;
                    moved.any = true;
                }
            }
            Phase::Params => match self.next_state()? {
                Some(State::ParamExchange) => {
                    let params = self.params();
                    self.control()?.send_json(&params);
                    moved.any = true;
                }
                Some(State::CreateStreams) => {
                    self.phase = Phase::Streams { pending: None };
                    moved.any = true;
                }
                Some(other) => return Err(unexpected(other, "before the streams")),
                None => {}
            },
            Phase::Streams { .. } => moved.any |= self.open_streams(net, now)?,
            Phase::Starting => match self.next_state()? {
                Some(State::TestStart) => moved.any = true,
                Some(State::TestRunning) => {
                    self.start(net, now);
                    moved.any = true;
                }
                Some(other) => return Err(unexpected(other, "before the test ran")),
                None => {}
            },
            Phase::Running => {
                self.move_data(net, &mut moved)?;
                if let Some(state) = self.next_state()? {
                    return Err(unexpected(state, "while the test ran"));
                }
                let now = net.now();
                self.tick_intervals(net, now);
                if self.finished(now) {
                    self.end(net, now);
                    moved.any = true;
                } else if let Some(running) = self.running_at {
                    if self.options.bytes.is_none() {
                        moved.wake_at(running + Duration::from_secs(self.options.time));
                    }
                    if let Some(at) = self.sampler.as_ref().and_then(Sampler::next) {
                        moved.wake_at(at);
                    }
                }
            }
            Phase::Results { sent, got } => {
                if !*sent {
                    match self.next_state()? {
                        Some(State::ExchangeResults) => {
                            let ours = self.results(net);
                            self.control()?.send_json(&ours);
                            if let Phase::Results { sent, .. } = &mut self.phase {
                                *sent = true;
                            }
                            moved.any = true;
                        }
                        Some(other) => return Err(unexpected(other, "after TEST_END")),
                        None => {}
                    }
                } else if !*got {
                    if let Some(v) = self.control()?.take_json()? {
                        self.remote = remote_results(&v)?;
                        if let Phase::Results { got, .. } = &mut self.phase {
                            *got = true;
                        }
                        moved.any = true;
                    }
                } else {
                    match self.next_state()? {
                        Some(State::DisplayResults) => {
                            let control = self.control()?;
                            control.send_state(State::IperfDone);
                            control.flush(net)?;
                            return Ok(Next::Done(Box::new(self.finish(net))));
                        }
                        Some(other) => return Err(unexpected(other, "after the results")),
                        None => {}
                    }
                }
            }
        }
        if let Some(control) = &mut self.control {
            moved.any |= control.flush(net)?;
        }
        if moved.any {
            self.last_news = now;
        } else if !matches!(self.phase, Phase::Running)
            && now.saturating_duration_since(self.last_news) >= self.options.timeout
        {
            return Err(TrafficError::timeout(
                self.options.timeout,
                format!("for the iperf3 server at {}", self.options.server),
            ));
        }
        if moved.any {
            return Ok(Next::Again);
        }
        let limit = self.last_news + self.options.timeout;
        Ok(Next::Wait(moved.wake.map_or(limit, |w| w.min(limit))))
    }

    /// Opens the streams one at a time, so the server numbers them in the
    /// order this end does (1, 3, 4, …).
    fn open_streams(&mut self, net: &mut N, now: Instant) -> Result<bool, TrafficError> {
        let Phase::Streams { pending } = &mut self.phase else {
            return Ok(false);
        };
        let mut pending = pending.take();
        let mut moved = false;
        match &mut pending {
            None => {
                let socket = if self.udp() {
                    let family_any = match self.options.server {
                        SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
                        SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
                    };
                    let options = DatagramOptions {
                        buffer: self.options.window.or(Some(4 << 20)),
                        datagram_len: self.options.len,
                    };
                    let socket = net.open_datagrams(&DatagramKind::Udp(family_any), options)?;
                    // iperf3 writes the connect message in its host's
                    // byte order; the server answers in the same.
                    let message = 0x3637_3839u32.to_ne_bytes();
                    net.send_to(socket, &message, Peer::Ip(self.options.server))?;
                    self.udp_opening.push(socket);
                    PendingStream::Udp {
                        socket: self.udp_opening.len() - 1,
                    }
                } else {
                    let stream = net.connect(self.options.server, self.stream_opts)?;
                    self.tcp_opening.push(stream);
                    PendingStream::Tcp {
                        stream: self.tcp_opening.len() - 1,
                        cookie_sent: 0,
                    }
                };
                pending = Some(socket);
                moved = true;
            }
            Some(PendingStream::Tcp {
                stream,
                cookie_sent,
            }) => {
                let handle = self.tcp_opening[*stream];
                if net.established(handle)? {
                    let n = net.send(handle, &self.cookie[*cookie_sent..])?;
                    *cookie_sent += n;
                    moved = n > 0;
                    if *cookie_sent == COOKIE_LEN {
                        let addrs = net
                            .stream_addrs(handle)
                            .map_or((None, None), |(l, r)| (Some(l), Some(r)));
                        self.add_stream(Channel::Tcp(handle), addrs);
                        pending = None;
                    }
                }
            }
            Some(PendingStream::Udp { socket }) => {
                let handle = self.udp_opening[*socket];
                if let Some((len, from)) = net.recv_from(handle, &mut self.buf)? {
                    moved = true;
                    if from == Peer::Ip(self.options.server) && len == 4 {
                        let server = Peer::Ip(self.options.server);
                        let local = net.datagram_addr(handle);
                        self.add_stream(
                            Channel::Udp {
                                socket: handle,
                                peer: server,
                            },
                            (local, Some(self.options.server)),
                        );
                        pending = None;
                    }
                }
            }
        }
        let _ = now;
        let done = pending.is_none() && self.streams.len() == self.options.parallel;
        self.phase = Phase::Streams { pending };
        if done {
            self.phase = Phase::Starting;
            moved = true;
        }
        Ok(moved)
    }

    fn add_stream(
        &mut self,
        channel: Channel<N::Stream, N::Datagrams>,
        addrs: (Option<SocketAddr>, Option<SocketAddr>),
    ) {
        let id = match self.streams.len() {
            0 => 1,
            n => n as u32 + 2,
        };
        if let (Some(f), (Some(local), Some(remote))) = (&mut self.on_connected, addrs) {
            f(5 + self.streams.len() as u32, local, remote);
        }
        self.streams.push(DataStream::new(id, channel));
        self.addrs.push(addrs);
    }

    fn start(&mut self, net: &mut N, now: Instant) {
        self.running_at = Some(now);
        self.cpu = Some(CpuMeter::start());
        self.sampler = Some(Sampler::start(
            net,
            &self.streams,
            self.options.interval,
            now,
        ));
        if !self.options.reverse {
            let rate = self.rate();
            for stream in &mut self.streams {
                stream.start_sending(rate, now);
            }
        }
        self.phase = Phase::Running;
    }

    fn move_data(&mut self, net: &mut N, moved: &mut Moved) -> Result<(), TrafficError> {
        let udp = self.udp();
        for stream in &mut self.streams {
            if !self.options.reverse {
                stream.send(net, &mut self.block, &mut self.left, false, moved)?;
            } else if udp {
                let Channel::Udp { socket, peer } = stream.channel else {
                    continue;
                };
                for _ in 0..256 {
                    let Some((len, from)) = net.recv_from(socket, &mut self.buf)? else {
                        break;
                    };
                    moved.any = true;
                    if from == peer {
                        stream.receive_datagram(&self.buf[..len], false, net.now());
                    }
                }
            } else {
                stream.receive_tcp(net, &mut self.buf, moved)?;
            }
        }
        Ok(())
    }

    fn finished(&self, now: Instant) -> bool {
        let Some(running) = self.running_at else {
            return false;
        };
        match self.options.bytes {
            Some(n) if self.options.reverse => {
                self.streams.iter().map(|s| s.received.bytes).sum::<u64>() >= n
                    || self.streams.iter().all(|s| s.ended)
            }
            Some(_) => self.left == Some(0),
            None => {
                now.saturating_duration_since(running) >= Duration::from_secs(self.options.time)
            }
        }
    }

    /// Closes the intervals that ended by `now`.
    fn tick_intervals(&mut self, net: &mut N, now: Instant) {
        let sending = !self.options.reverse;
        if let Some(sampler) = &mut self.sampler {
            sampler.tick(net, &self.streams, sending, now, &mut self.on_interval);
        }
    }

    fn end(&mut self, net: &mut N, now: Instant) {
        if let Some(sampler) = &mut self.sampler {
            let sending = !self.options.reverse;
            sampler.finish(net, &self.streams, sending, now, &mut self.on_interval);
        }
        self.ended_at = Some(now);
        if let Some(meter) = self.cpu.take() {
            self.cpu_used = meter.stop().percent();
        }
        if let Some(control) = &mut self.control {
            control.send_state(State::TestEnd);
        }
        self.phase = Phase::Results {
            sent: false,
            got: false,
        };
    }

    /// This end's results for the exchange.
    fn results(&mut self, net: &mut N) -> Value {
        let sending = !self.options.reverse;
        let tcp = !self.udp();
        let end = self.ended_at.map_or(0.0, |e| self.seconds(e));
        let mut congestion = None;
        let streams: Vec<StreamResult> = self
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let retransmits = match (&self.sampler, sending) {
                    (Some(sampler), true) => sampler.retransmits(net, i, s),
                    _ => None,
                };
                if let (Channel::Tcp(h), None) = (s.channel, &congestion) {
                    congestion = net.stream_facts(h).congestion_control;
                }
                StreamResult {
                    id: s.id,
                    bytes: if sending {
                        s.sent_bytes
                    } else {
                        s.received.bytes
                    },
                    retransmits,
                    jitter: if sending { 0.0 } else { s.received.jitter },
                    errors: if sending { 0 } else { s.received.lost },
                    packets: match (tcp, sending) {
                        (true, _) => 0,
                        (false, true) => s.sent_datagrams,
                        (false, false) => s.received.highest,
                    },
                    start_time: 0.0,
                    end_time: end,
                }
            })
            .collect();
        let has = sending && tcp && streams.iter().all(|s| s.retransmits.is_some());
        results::server_results(self.cpu_used, has, congestion.as_deref(), &streams)
    }

    fn finish(&mut self, net: &mut N) -> ClientRun {
        let sending = !self.options.reverse;
        let duration = match (self.running_at, self.ended_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let (congestion, sndbuf, rcvbuf) = facts(net, &self.streams);
        let (streams, intervals) = match self.sampler.take() {
            Some(sampler) => (
                sampler.totals(net, &self.streams, &self.addrs, sending, duration),
                sampler.intervals,
            ),
            None => (Vec::new(), Vec::new()),
        };
        for s in &self.streams {
            match s.channel {
                Channel::Tcp(h) => net.close(h),
                Channel::Udp { socket, .. } => net.close_datagrams(socket),
            }
        }
        if let Some(control) = &self.control {
            net.close(control.stream);
        }
        ClientRun {
            options: self.options.clone(),
            cookie: self.cookie_text(),
            tcp_mss: self.tcp_mss,
            sndbuf,
            rcvbuf,
            congestion,
            intervals,
            streams,
            duration,
            cpu: self.cpu_used,
            remote: std::mem::take(&mut self.remote),
            server_side: false,
            accepted: None,
        }
    }
}

/// The streams' congestion control and granted buffers (the first TCP
/// stream's), as iperf3 reports them.
pub fn facts<N: Transport>(
    net: &mut N,
    streams: &[DataStream<N::Stream, N::Datagrams>],
) -> (Option<String>, Option<usize>, Option<usize>) {
    for s in streams {
        if let Channel::Tcp(h) = s.channel {
            let facts = net.stream_facts(h);
            return (
                facts.congestion_control,
                facts.granted.send,
                facts.granted.recv,
            );
        }
    }
    (None, None, None)
}

impl<N: Transport> Program<N> for Client<N> {
    type Output = ClientRun;

    fn step(&mut self, net: &mut N) -> Step<ClientRun> {
        match self.try_step(net) {
            Ok(Next::Done(run)) => Step::Done(Ok(*run)),
            Ok(Next::Again) => Step::Again,
            Ok(Next::Wait(at)) => Step::Wait(Some(at)),
            Err(e) => Step::Done(Err(e)),
        }
    }
}

fn unexpected(state: State, when: &str) -> TrafficError {
    TrafficError::Invalid(format!("iperf3: the server sent {state:?} {when}"))
}
