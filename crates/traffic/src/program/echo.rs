//! Delay mode once for every stack (the XTP study's `dela`, the SunOS
//! study's stop-and-wait): a client sends a `len`-byte request, the server
//! returns it whole, the client times the round trip and checks the
//! answer. One exchange is outstanding at a time.
//!
//! Streams: requests are `len` pattern bytes on one connection with Nagle
//! off at both ends (else Nagle and delayed ACKs would be what is
//! measured). Datagrams (UDP, link frames): each request is a test
//! datagram of kind Echo numbered by its exchange; a late answer to an
//! earlier exchange is ignored, a missing one counts as lost after
//! `crate::echo::answer_wait`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stack::time::Instant;

use super::datagrams::SENTINEL_REPEATS;
use super::{peer_failed, DatagramEnd, Program, Rendezvous, Step};
use crate::datagram::{self, Kind};
use crate::echo::answer_wait;
use crate::error::TrafficError;
use crate::pattern::Pattern;
use crate::spec::EchoSpec;
use crate::transport::{DatagramOptions, Peer, Read, SocketFacts, StreamOptions, Transport};

/// What both ends of an echo series are given.
#[derive(Debug, Clone)]
pub struct Shared {
    pub spec: EchoSpec,
    pub pattern: Arc<Pattern>,
    pub rendezvous: Arc<Rendezvous>,
    /// How long the stack may take to configure its addresses.
    pub address_grace: Duration,
    /// For link-level frames: the interface (empty: the first).
    pub interface: String,
}

impl Shared {
    fn setup_limit(&self) -> Duration {
        self.spec.timeout + self.address_grace
    }

    fn stream_options(&self) -> StreamOptions {
        StreamOptions {
            protocol: super::stream_protocol(self.spec.protocol),
            xtp: self.spec.xtp,
            buffer: self.spec.sockbuf,
            nodelay: true,
            congestion: self.spec.congestion,
        }
    }

    fn datagram_options(&self) -> DatagramOptions {
        DatagramOptions {
            buffer: self.spec.sockbuf,
            datagram_len: self.spec.len,
        }
    }

    /// This end's protocol, family and interface.
    fn end(&self) -> DatagramEnd<'_> {
        DatagramEnd {
            protocol: self.spec.protocol,
            family: self.spec.family,
            interface: &self.interface,
        }
    }

    /// Publishes the server's address once it has one.
    fn publish<N: Transport>(&self, net: &mut N, bind: SocketAddr) -> bool {
        match self.end().address(net, Some(bind)) {
            Some(own) => {
                self.rendezvous.publish(own);
                net.notify();
                true
            }
            None => false,
        }
    }

    fn address_timeout<T>(&self, whose: &str) -> Step<T> {
        Step::Done(Err(TrafficError::timeout(
            self.setup_limit(),
            format!("waiting for {whose} to get an {} address", self.spec.family),
        )))
    }
}

/// What the client measured.
#[derive(Debug, Clone, Default)]
pub struct Exchanges {
    /// Round-trip time of each answered exchange, in order.
    pub rtt_ns: Vec<u64>,
    pub lost: u64,
    pub corrupted: u64,
    pub facts: SocketFacts,
    /// Times the stack's runner put a thread to sleep inside a measured
    /// exchange, over the run until the last answer
    /// ([`Transport::naps_in_exchanges`]); `None` where the stack has no
    /// such runner.
    pub runner_naps: Option<u64>,
}

/// The server: echoes every byte (stream) or datagram back until the
/// client is done.
pub struct EchoServer<N: Transport> {
    shared: Shared,
    bind: SocketAddr,
    state: Serving<N>,
    since: Instant,
    buf: Vec<u8>,
    /// Stream bytes read and not yet sent back.
    pending: Vec<u8>,
    /// Through a lending interface: the buffer being written back.
    lent: Option<Bytes>,
    /// A connection per exchange: the listener, to accept the next.
    listener: Option<N::Listener>,
}

/// The most an echo server reads at once.
const ECHO_READ: usize = 65_536;

enum Serving<N: Transport> {
    Start,
    Listening(N::Listener),
    Stream(N::Stream),
    Datagrams {
        socket: N::Datagrams,
        published: bool,
        /// When the last request came (or the socket opened).
        last: Instant,
    },
}

impl<N: Transport> EchoServer<N> {
    pub fn new(shared: Shared, bind: SocketAddr) -> Self {
        Self {
            shared,
            bind,
            state: Serving::Start,
            since: Instant::ZERO,
            buf: vec![0; ECHO_READ],
            pending: Vec::new(),
            lent: None,
            listener: None,
        }
    }

    fn serve_stream(&mut self, net: &mut N, conn: N::Stream) -> Step<()> {
        if net.lends_buffers(conn) {
            return self.serve_lending(net, conn);
        }
        loop {
            while !self.pending.is_empty() {
                match net.send(conn, &self.pending) {
                    Ok(0) => return Step::Wait(None),
                    Ok(n) => {
                        self.pending.drain(..n);
                    }
                    Err(e) => return Step::Done(Err(e)),
                }
            }
            match net.recv(conn, &mut self.buf) {
                Ok(Read::Data(n)) => self.pending.extend_from_slice(&self.buf[..n]),
                Ok(Read::Nothing) => return Step::Wait(None),
                Ok(Read::End) => return self.client_closed(net, conn),
                Err(e) => return Step::Done(Err(e)),
            }
        }
    }
}

impl<N: Transport> EchoServer<N> {
    /// The client closed its connection: the end, or, with a connection
    /// per exchange, back to accept the next.
    fn client_closed(&mut self, net: &mut N, conn: N::Stream) -> Step<()> {
        net.close(conn);
        match self.listener {
            Some(listener) => {
                self.state = Serving::Listening(listener);
                self.since = net.now();
                Step::Again
            }
            None => Step::Done(Ok(())),
        }
    }

    /// Echoes through an interface that lends and posts buffers (XTP's
    /// character driver): the buffer a read filled is written back as it
    /// is, no copy, and comes back for the next read once delivered.
    fn serve_lending(&mut self, net: &mut N, conn: N::Stream) -> Step<()> {
        loop {
            if let Some(answer) = &self.lent {
                match net.send_shared(conn, answer) {
                    Ok(0) => return Step::Wait(None),
                    Ok(_) => {
                        let answer = self.lent.take().expect("an answer is lent");
                        // Ours again once delivered: reused, not freed.
                        self.buf = match answer.try_into_mut() {
                            Ok(mine) => mine.into(),
                            Err(_) => Vec::with_capacity(ECHO_READ),
                        };
                    }
                    Err(e) => return Step::Done(Err(e)),
                }
            }
            match net.recv_into(conn, &mut self.buf, ECHO_READ) {
                Ok(Read::Data(n)) => {
                    let mut got = std::mem::take(&mut self.buf);
                    got.truncate(n);
                    self.lent = Some(Bytes::from(got));
                }
                Ok(Read::Nothing) => return Step::Wait(None),
                Ok(Read::End) => return self.client_closed(net, conn),
                Err(e) => return Step::Done(Err(e)),
            }
        }
    }
}

impl<N: Transport> Program<N> for EchoServer<N> {
    type Output = ();

    fn step(&mut self, net: &mut N) -> Step<()> {
        if self.shared.rendezvous.failed() {
            return peer_failed();
        }
        match self.state {
            Serving::Start => {
                let opened = if self.shared.spec.protocol.is_stream() {
                    net.listen(self.bind, self.shared.stream_options())
                        .map(Serving::Listening)
                } else {
                    let kind = self.shared.end().socket(Some(self.bind));
                    net.open_datagrams(&kind, self.shared.datagram_options())
                        .map(|socket| Serving::Datagrams {
                            socket,
                            published: false,
                            last: net.now(),
                        })
                };
                match opened {
                    Ok(state) => {
                        self.state = state;
                        self.since = net.now();
                        Step::Again
                    }
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Serving::Listening(listener) => {
                if self.shared.rendezvous.receiver().is_none() {
                    self.shared.publish(net, self.bind);
                }
                if self.listener.is_some() && self.shared.rendezvous.has_sender_finished() {
                    net.close_listener(listener);
                    return Step::Done(Ok(()));
                }
                match net.accept(listener) {
                    Ok(Some(conn)) => {
                        if self.shared.spec.connect_each {
                            // The next exchange comes on a new connection.
                            self.listener = Some(listener);
                        } else {
                            net.close_listener(listener);
                        }
                        self.state = Serving::Stream(conn);
                        Step::Again
                    }
                    Ok(None) if (net.now() - self.since) > self.shared.setup_limit() => {
                        Step::Done(Err(TrafficError::timeout(
                            self.shared.setup_limit(),
                            "waiting for the echo client to connect",
                        )))
                    }
                    Ok(None) => Step::Wait(None),
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Serving::Stream(conn) => self.serve_stream(net, conn),
            Serving::Datagrams {
                socket,
                ref mut published,
                ref mut last,
            } => {
                if !*published {
                    if !self.shared.publish(net, self.bind) {
                        if (net.now() - self.since) > self.shared.setup_limit() {
                            return self.shared.address_timeout("the echo server");
                        }
                        return Step::Wait(None);
                    }
                    *published = true;
                    *last = net.now();
                }
                loop {
                    let (n, from) = match net.recv_from(socket, &mut self.buf) {
                        Ok(Some(got)) => got,
                        Ok(None) => break,
                        Err(e) => return Step::Done(Err(e)),
                    };
                    *last = net.now();
                    let request = datagram::strip_padding(&self.buf[..n]);
                    if matches!(datagram::parse_header(request), Ok(h) if h.kind == Kind::End) {
                        net.close_datagrams(socket);
                        return Step::Done(Ok(()));
                    }
                    // Echo anything else, damaged or not: the client judges.
                    let len = request.len();
                    let _ = net.send_to(socket, &self.buf[..len], from);
                }
                // The client went quiet without saying goodbye, or said so
                // in this process.
                if self.shared.rendezvous.has_sender_finished()
                    || (net.now() - *last) > self.shared.spec.timeout
                {
                    net.close_datagrams(socket);
                    return Step::Done(Ok(()));
                }
                Step::Wait(None)
            }
        }
    }
}

/// The client: `count` exchanges, timed from the request's first byte
/// handed over to the answer's last byte taken.
pub struct EchoClient<N: Transport> {
    shared: Shared,
    state: Asking<N>,
    since: Instant,
    request: Vec<u8>,
    answer: Vec<u8>,
    exchanges: Exchanges,
    seq: u64,
}

enum Asking<N: Transport> {
    Start,
    /// Waiting for the server's address and the own one.
    Peer(Channel<N>),
    Connecting(N::Stream),
    Stream {
        conn: N::Stream,
        written: usize,
        read: usize,
        /// When this exchange's request was first offered: a write that
        /// takes nothing at first (a lending interface's, until
        /// delivered) is still inside the exchange.
        began: Option<Instant>,
    },
    Datagrams {
        socket: N::Datagrams,
        dest: Peer,
        sent: Option<Instant>,
    },
}

/// A client's open socket before the exchanges.
enum Channel<N: Transport> {
    Stream,
    Datagrams(N::Datagrams),
}

impl<N: Transport> EchoClient<N> {
    pub fn new(shared: Shared) -> Self {
        let len = shared.spec.len;
        let count = shared.spec.count.min(1 << 24) as usize;
        Self {
            shared,
            state: Asking::Start,
            since: Instant::ZERO,
            request: vec![0; len],
            answer: vec![0; len.max(65_536)],
            exchanges: Exchanges {
                rtt_ns: Vec::with_capacity(count),
                ..Exchanges::default()
            },
            seq: 0,
        }
    }

    fn done(&mut self, net: &mut N) -> Step<Exchanges> {
        self.exchanges.runner_naps = net.naps_in_exchanges();
        self.shared.rendezvous.sender_finished();
        Step::Done(Ok(std::mem::take(&mut self.exchanges)))
    }

    fn stream_exchange(&mut self, net: &mut N) -> Step<Exchanges> {
        let Asking::Stream {
            conn,
            ref mut written,
            ref mut read,
            ref mut began,
        } = self.state
        else {
            unreachable!("called while exchanging on a stream");
        };
        let spec = &self.shared.spec;
        let len = spec.len;
        if self.seq == spec.count {
            net.close(conn);
            return self.done(net);
        }
        let request = self.shared.pattern.shared(self.seq * len as u64, len);
        let began_at = match *began {
            Some(at) => at,
            None => {
                net.exchange(true);
                *began.insert(net.now())
            }
        };
        let writing = *written < len;
        while *written < len {
            let sent = if *written == 0 {
                // Whole: an interface that lends buffers takes it so.
                net.send_shared(conn, &request)
            } else {
                net.send(conn, &request[*written..])
            };
            match sent {
                Ok(0) => break,
                Ok(n) => *written += n,
                Err(e) => return Step::Done(Err(e)),
            }
        }
        if writing {
            // The answer cannot be here yet: the server has not had the
            // request. Wait for it rather than look in vain.
            return Step::Wait(None);
        }
        while *read < len {
            let got = if *read == 0 {
                // Whole: an interface that posts buffers fills it so.
                net.recv_into(conn, &mut self.answer, len)
            } else {
                net.recv(conn, &mut self.answer[*read..len])
            };
            match got {
                Ok(Read::Data(n)) => {
                    *read += n;
                    if self.answer.len() < len {
                        // A posted read came back short (it held the end
                        // of a write): the rest is read into place.
                        self.answer.resize(len, 0);
                    }
                }
                Ok(Read::Nothing) => break,
                Ok(Read::End) => {
                    return Step::Done(Err(TrafficError::Invalid(
                        "echo: the server closed the connection".into(),
                    )))
                }
                Err(e) => return Step::Done(Err(e)),
            }
        }
        if *read == len {
            self.exchanges
                .rtt_ns
                .push((net.now() - began_at).as_nanos() as u64);
            net.exchange(false);
            if self.answer[..len] != *request {
                self.exchanges.corrupted += 1;
            }
            self.seq += 1;
            *written = 0;
            *read = 0;
            *began = None;
            if spec.connect_each {
                // Closed outside the timed window; the next exchange
                // connects anew.
                net.close(conn);
                if self.seq == spec.count {
                    return self.done(net);
                }
                self.state = Asking::Peer(Channel::Stream);
            }
            return Step::Again;
        }
        if (net.now() - began_at) > spec.timeout {
            return Step::Done(Err(TrafficError::timeout(
                spec.timeout,
                format!("waiting for the answer to exchange {}", self.seq),
            )));
        }
        Step::Wait(None)
    }

    fn datagram_exchange(&mut self, net: &mut N) -> Step<Exchanges> {
        let Asking::Datagrams {
            socket,
            dest,
            ref mut sent,
        } = self.state
        else {
            unreachable!("called while exchanging datagrams");
        };
        let spec = &self.shared.spec;
        let wait = answer_wait(spec);
        if self.seq == spec.count {
            // Goodbye, several times: the server stops on the first.
            datagram::write(
                &mut self.request,
                Kind::End,
                spec.count,
                0,
                &self.shared.pattern,
            );
            for _ in 0..SENTINEL_REPEATS {
                let _ = net.send_to(socket, &self.request, dest);
            }
            net.close_datagrams(socket);
            return self.done(net);
        }
        let Some(at) = *sent else {
            datagram::write(
                &mut self.request,
                Kind::Echo,
                self.seq,
                0,
                &self.shared.pattern,
            );
            let now = net.now();
            return match net.send_to(socket, &self.request, dest) {
                Ok(true) => {
                    net.exchange(true);
                    *sent = Some(now);
                    // The answer cannot be here yet: wait for it.
                    Step::Wait(Some(now + wait))
                }
                Ok(false) => Step::Wait(None),
                Err(e) => Step::Done(Err(e)),
            };
        };
        loop {
            let n = match net.recv_from(socket, &mut self.answer) {
                Ok(Some((n, _))) => n,
                Ok(None) => break,
                Err(e) => return Step::Done(Err(e)),
            };
            let elapsed = net.now() - at;
            let answer = datagram::strip_padding(&self.answer[..n]);
            match datagram::check(answer, &self.shared.pattern) {
                Ok(h) if h.kind == Kind::Echo && h.seq == self.seq && answer.len() == spec.len => {
                    self.exchanges.rtt_ns.push(elapsed.as_nanos() as u64);
                    net.exchange(false);
                    self.seq += 1;
                    *sent = None;
                    return Step::Again;
                }
                // A late answer to an earlier exchange.
                Ok(h) if h.kind == Kind::Echo && h.seq < self.seq => {}
                _ => self.exchanges.corrupted += 1,
            }
        }
        if (net.now() - at) > wait {
            net.exchange(false);
            self.exchanges.lost += 1;
            self.seq += 1;
            *sent = None;
            return Step::Again;
        }
        Step::Wait(Some(at + wait))
    }
}

impl<N: Transport> Program<N> for EchoClient<N> {
    type Output = Exchanges;

    /// Awaiting answers from the first step to the last (the runner keeps
    /// its threads awake meanwhile), whether the series ends well or not.
    fn step(&mut self, net: &mut N) -> Step<Exchanges> {
        if matches!(self.state, Asking::Start) {
            net.awaiting(true);
        }
        let step = self.ask(net);
        if matches!(step, Step::Done(_)) {
            net.exchange(false);
            net.awaiting(false);
        }
        step
    }
}

impl<N: Transport> EchoClient<N> {
    fn ask(&mut self, net: &mut N) -> Step<Exchanges> {
        if self.shared.rendezvous.failed() {
            return peer_failed();
        }
        match self.state {
            Asking::Start => {
                self.since = net.now();
                if self.shared.spec.protocol.is_stream() {
                    self.state = Asking::Peer(Channel::Stream);
                    return Step::Again;
                }
                let kind = self.shared.end().socket(None);
                match net.open_datagrams(&kind, self.shared.datagram_options()) {
                    Ok(socket) => {
                        self.exchanges.facts =
                            net.datagram_facts(socket, self.shared.datagram_options());
                        self.state = Asking::Peer(Channel::Datagrams(socket));
                        Step::Again
                    }
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Asking::Peer(ref channel) => {
                let own = self.shared.end().address(net, None);
                let Some(dest) = own.and(self.shared.rendezvous.receiver()) else {
                    if (net.now() - self.since) > self.shared.setup_limit() {
                        return self.shared.address_timeout("both ends");
                    }
                    return Step::Wait(Some(net.now() + Duration::from_millis(1)));
                };
                self.state = match (channel, dest) {
                    (Channel::Stream, Peer::Ip(addr)) => {
                        let began = net.now();
                        match net.connect(addr, self.shared.stream_options()) {
                            // A transaction with its setup: the request is
                            // offered at once (XTP's FIRST carries it; TCP
                            // sends it after its handshake), the clock
                            // running from the connect call.
                            Ok(conn) if self.shared.spec.connect_each => {
                                net.exchange(true);
                                if self.seq == 0 {
                                    self.exchanges.facts = net.stream_facts(conn);
                                }
                                Asking::Stream {
                                    conn,
                                    written: 0,
                                    read: 0,
                                    began: Some(began),
                                }
                            }
                            Ok(conn) => Asking::Connecting(conn),
                            Err(e) => return Step::Done(Err(e)),
                        }
                    }
                    (Channel::Datagrams(socket), dest) => Asking::Datagrams {
                        socket: *socket,
                        dest,
                        sent: None,
                    },
                    (Channel::Stream, Peer::Mac(_)) => {
                        return Step::Done(Err(TrafficError::Invalid(
                            "a stream needs an IP server".into(),
                        )))
                    }
                };
                Step::Again
            }
            Asking::Connecting(conn) => match net.established(conn) {
                Ok(true) => {
                    self.exchanges.facts = net.stream_facts(conn);
                    self.state = Asking::Stream {
                        conn,
                        written: 0,
                        read: 0,
                        began: None,
                    };
                    Step::Again
                }
                Ok(false) if (net.now() - self.since) > self.shared.setup_limit() => {
                    Step::Done(Err(TrafficError::timeout(
                        self.shared.setup_limit(),
                        "connecting to the echo server",
                    )))
                }
                Ok(false) => Step::Wait(None),
                Err(e) => Step::Done(Err(e)),
            },
            Asking::Stream { .. } => self.stream_exchange(net),
            Asking::Datagrams { .. } => self.datagram_exchange(net),
        }
    }
}
