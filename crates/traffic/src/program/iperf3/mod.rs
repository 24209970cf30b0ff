//! An iperf3 server on any [`Transport`] (the reference stack's host in
//! `stackscope host`), so the real `iperf3 -c` measures a stack it runs
//! against: TCP and UDP, `-R`, `-P`, `-t`, `-n`/`-k`, `-l`, `-b`, `-J`.
//! Written from iperf3's public protocol description, one test at a time
//! as iperf3 serves them:
//!
//! * [`control`]: state bytes and length-framed JSON on the control
//!   connection; [`params`]: the client's parameters, checked;
//! * [`session`]: one test's exchange, as a state machine;
//! * [`stream`], [`udp`]: the data streams and UDP's header, losses and
//!   jitter; [`results`]: the results the ends exchange.
//!
//! Every count the server reports is its own: bytes and datagrams as the
//! stack delivered or took them, jitter and losses from the datagrams'
//! headers, retransmits from the stack's connection, CPU from the thread
//! that runs the stack. A receiving server counts until what the client
//! says it sent has arrived (or nothing more comes), so a TCP test's two
//! byte counts agree.

pub mod client;
#[cfg(test)]
mod client_tests;
pub mod control;
pub mod measured;
pub mod output;
pub mod params;
pub mod results;
pub mod sampling;
pub mod session;
pub mod stream;
#[cfg(test)]
mod tests;
pub mod udp;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use stack::time::Instant;

use crate::error::TrafficError;
use crate::program::{Program, Step};
use crate::transport::{DatagramKind, DatagramOptions, Read, StreamOptions, Transport};
use control::State;
use session::{Progress, Session};
pub use stream::Moved;

/// iperf3's port.
pub const PORT: u16 = 5201;
/// The cookie that opens every connection of a test: 36 characters and
/// a NUL.
pub const COOKIE_LEN: usize = 37;
/// A new connection that has not sent its cookie by then is closed.
const COOKIE_WAIT: Duration = Duration::from_secs(10);
/// Connections waiting for their cookie at once; more are closed.
const MAX_PENDING: usize = 256;
/// The UDP sockets' receive queue.
const UDP_QUEUE_BYTES: usize = 4 << 20;
/// Datagrams read per step, so the host's poll is not kept waiting.
const UDP_BUDGET: usize = 256;
/// The read buffer: the largest UDP datagram, and a good TCP read.
const BUF_LEN: usize = 64 * 1024;

/// The server's counters since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Tests that ran to the client's IPERF_DONE.
    pub completed: u64,
    /// Tests refused (options not served) or that failed midway.
    pub failed: u64,
    /// Connections turned away (ACCESS_DENIED) because a test was running.
    pub busy: u64,
    /// Data bytes received and sent over all tests.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// A connection that has not sent its cookie yet.
struct Pending<S> {
    stream: S,
    cookie: Vec<u8>,
    since: Instant,
}

/// The iperf3 server: its listeners and UDP sockets (both families), new
/// connections, and the test being served.
pub struct Server<N: Transport> {
    listeners: Vec<N::Listener>,
    sockets: Vec<N::Datagrams>,
    pending: Vec<Pending<N::Stream>>,
    session: Option<Session<N>>,
    buf: Vec<u8>,
    events: Vec<String>,
    counts: ServerCounts,
    /// Tests' interval reports (`-s -J -i`).
    interval: Option<Duration>,
    /// Finished tests as measured here, for `-s -J`.
    runs: Vec<measured::ClientRun>,
}

impl<N: Transport> Server<N> {
    /// Listens on `port` (TCP and UDP, IPv6 and IPv4).
    pub fn open(net: &mut N, port: u16) -> Result<Self, TrafficError> {
        let mut listeners = Vec::new();
        let mut sockets = Vec::new();
        let any: [IpAddr; 2] = [Ipv6Addr::UNSPECIFIED.into(), Ipv4Addr::UNSPECIFIED.into()];
        for ip in any {
            let local = SocketAddr::new(ip, port);
            listeners.push(net.listen(local, StreamOptions::default())?);
            let options = DatagramOptions {
                buffer: Some(UDP_QUEUE_BYTES),
                datagram_len: 1460,
            };
            sockets.push(net.open_datagrams(&DatagramKind::Udp(local), options)?);
        }
        Ok(Self {
            listeners,
            sockets,
            pending: Vec::new(),
            session: None,
            buf: vec![0; BUF_LEN],
            events: Vec::new(),
            counts: ServerCounts::default(),
            interval: None,
            runs: Vec::new(),
        })
    }

    /// Samples each test every `interval` (its JSON's intervals).
    pub fn set_interval(&mut self, interval: Option<Duration>) {
        self.interval = interval;
    }

    /// The tests finished since the last call, as this end measured them.
    pub fn take_runs(&mut self) -> Vec<measured::ClientRun> {
        std::mem::take(&mut self.runs)
    }

    pub fn counts(&self) -> ServerCounts {
        self.counts
    }

    /// What happened since the last call, one line each (tests begun,
    /// finished, failed).
    pub fn take_events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
    }

    /// Does what can be done now: what moved, and when to look again if
    /// nothing else happens.
    pub fn run(&mut self, net: &mut N) -> Moved {
        let mut moved = Moved::default();
        self.accept(net, &mut moved);
        // A test whose IPERF_DONE came with the next client's connection
        // ends first, so that client is served, not told "busy".
        self.step_session(net, &mut moved);
        self.read_cookies(net, &mut moved);
        self.read_datagrams(net, &mut moved);
        self.step_session(net, &mut moved);
        moved
    }

    /// Steps the running test; a test that is over is closed and counted.
    fn step_session(&mut self, net: &mut N, moved: &mut Moved) {
        if let Some(session) = &mut self.session {
            if let Progress::Over(outcome) = session.step(net, &mut self.buf, moved) {
                session.close(net);
                self.session = None;
                moved.any = true;
                match outcome {
                    Ok(mut summary) => {
                        if let Some(run) = summary.run.take() {
                            self.runs.push(*run);
                        }
                        self.counts.completed += 1;
                        self.counts.bytes_in += summary.bytes_in;
                        self.counts.bytes_out += summary.bytes_out;
                        self.events.push(summary.text);
                    }
                    Err(why) => {
                        self.counts.failed += 1;
                        self.events.push(format!("iperf3 test failed: {why}"));
                    }
                }
            }
        }
    }

    /// Tells a running test's client the server is stopping
    /// (SERVER_TERMINATE) and closes everything; the caller polls the
    /// stack a little longer so it leaves.
    pub fn stop(&mut self, net: &mut N) {
        if let Some(mut session) = self.session.take() {
            session.control.send_state(State::ServerTerminate);
            let _ = session.control.flush(net);
            session.close(net);
            self.counts.failed += 1;
            self.events
                .push("iperf3 test stopped: the host is stopping".into());
        }
        for pending in self.pending.drain(..) {
            net.close(pending.stream);
        }
    }

    fn accept(&mut self, net: &mut N, moved: &mut Moved) {
        let now = net.now();
        for &listener in &self.listeners {
            while let Ok(Some(stream)) = net.accept(listener) {
                moved.any = true;
                if self.pending.len() >= MAX_PENDING {
                    net.close(stream);
                    continue;
                }
                self.pending.push(Pending {
                    stream,
                    cookie: Vec::with_capacity(COOKIE_LEN),
                    since: now,
                });
            }
        }
    }

    /// Reads new connections' cookies (exactly 37 bytes: what follows is
    /// the stream's) and hands each to the test it names, or starts one.
    fn read_cookies(&mut self, net: &mut N, moved: &mut Moved) {
        let now = net.now();
        let mut index = 0;
        while index < self.pending.len() {
            let pending = &mut self.pending[index];
            let want = COOKIE_LEN - pending.cookie.len();
            let mut gone = false;
            match net.recv(pending.stream, &mut self.buf[..want]) {
                Ok(Read::Data(n)) => {
                    pending.cookie.extend_from_slice(&self.buf[..n]);
                    moved.any = true;
                }
                Ok(Read::Nothing) => {}
                Ok(Read::End) | Err(_) => gone = true,
            }
            let late = now.saturating_duration_since(pending.since) >= COOKIE_WAIT;
            if gone || (late && pending.cookie.len() < COOKIE_LEN) {
                net.close(pending.stream);
                self.pending.remove(index);
                continue;
            }
            if pending.cookie.len() < COOKIE_LEN {
                moved.wake_at(pending.since + COOKIE_WAIT);
                index += 1;
                continue;
            }
            // In arrival order: the server numbers a test's streams so.
            let Pending { stream, cookie, .. } = self.pending.remove(index);
            self.place(net, stream, &cookie, now);
        }
    }

    /// A connection with its cookie: a new test, a stream of the running
    /// one, or turned away.
    fn place(&mut self, net: &mut N, stream: N::Stream, cookie: &[u8], now: Instant) {
        match &mut self.session {
            None => {
                let mut fixed = [0; COOKIE_LEN];
                fixed.copy_from_slice(cookie);
                self.session = Some(Session::new(stream, fixed, now).with_interval(self.interval));
                self.events.push("iperf3 test: a client connected".into());
            }
            Some(session) if session.takes_tcp_stream(cookie) => {
                session.add_tcp_stream(net, stream, now);
            }
            Some(_) => {
                // One test at a time, as iperf3: the client says "the
                // server is busy running a test".
                let _ = net.send(stream, &[State::AccessDenied.byte()]);
                net.close(stream);
                self.counts.busy += 1;
            }
        }
    }

    fn read_datagrams(&mut self, net: &mut N, moved: &mut Moved) {
        for &socket in &self.sockets {
            for _ in 0..UDP_BUDGET {
                let Ok(Some((len, peer))) = net.recv_from(socket, &mut self.buf) else {
                    break;
                };
                moved.any = true;
                let Some(session) = &mut self.session else {
                    continue; // no test: nobody's datagram
                };
                if let Err(e) = session.on_datagram(net, socket, peer, &self.buf[..len]) {
                    self.events
                        .push(format!("iperf3: answering a UDP stream failed: {e}"));
                }
            }
        }
    }
}

/// The server as a program: `stackscope iperf -s` on either stack. Serves
/// tests until `stop` says so (or after one with `one_off`, iperf3's
/// `-1`), handing each finished test's line to `log`.
pub struct Serve<N: Transport> {
    port: u16,
    server: Option<Server<N>>,
    stop: Box<dyn FnMut() -> bool + Send>,
    one_off: bool,
    log: Box<dyn FnMut(String) + Send>,
    interval: Option<Duration>,
    on_test: Option<Box<dyn FnMut(measured::ClientRun) + Send>>,
}

impl<N: Transport> Serve<N> {
    pub fn new(
        port: u16,
        stop: impl FnMut() -> bool + Send + 'static,
        one_off: bool,
        log: impl FnMut(String) + Send + 'static,
    ) -> Self {
        Self {
            port,
            server: None,
            stop: Box::new(stop),
            one_off,
            log: Box::new(log),
            interval: None,
            on_test: None,
        }
    }

    /// Hands each finished test, as measured here, to `f` (sampled every
    /// `interval`): `-s -J`.
    pub fn on_test(
        mut self,
        interval: Option<Duration>,
        f: impl FnMut(measured::ClientRun) + Send + 'static,
    ) -> Self {
        self.interval = interval;
        self.on_test = Some(Box::new(f));
        self
    }
}

impl<N: Transport> Program<N> for Serve<N> {
    type Output = ServerCounts;

    fn step(&mut self, net: &mut N) -> Step<ServerCounts> {
        let server = match &mut self.server {
            Some(server) => server,
            None => match Server::open(net, self.port) {
                Ok(mut server) => {
                    server.set_interval(self.interval);
                    (self.log)(format!("Server listening on {}", self.port));
                    self.server.insert(server)
                }
                Err(e) => return Step::Done(Err(e)),
            },
        };
        let moved = server.run(net);
        for line in server.take_events() {
            (self.log)(line);
        }
        for run in server.take_runs() {
            if let Some(f) = &mut self.on_test {
                f(run);
            }
        }
        let counts = server.counts();
        if (self.stop)() {
            server.stop(net);
            for line in server.take_events() {
                (self.log)(line);
            }
            return Step::Done(Ok(server.counts()));
        }
        if self.one_off && counts.completed + counts.failed > 0 {
            return Step::Done(Ok(counts));
        }
        if moved.any {
            return Step::Again;
        }
        // Look at the stop flag at least every 100 ms.
        let soon = net.now() + Duration::from_millis(100);
        Step::Wait(Some(moved.wake.map_or(soon, |w| w.min(soon))))
    }
}
