//! The ttcp stream transfer, once for every stack: the sender writes
//! `count` buffers of `len` pattern bytes (more while `--time` has not
//! passed), waits until the receiver has acknowledged every byte (the end
//! of iperf3's sender window), closes its half and waits for the
//! receiver's close; the receiver checks every byte until the sender's
//! close.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use stack::time::Instant;

use super::{peer_failed, Program, Rendezvous, Step};
use crate::cpu::CpuMeter;
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::report::{Received, ReceiverSide, SenderSide};
use crate::spec::TransferSpec;
use crate::transport::{Peer, Read, SocketFacts, StreamOptions, Transport};
use crate::verify::StreamVerifier;

/// What both sides of a transfer are given.
#[derive(Debug, Clone)]
pub struct Shared {
    pub spec: TransferSpec,
    pub pattern: Arc<Pattern>,
    pub meter: Arc<Meter>,
    pub rendezvous: Arc<Rendezvous>,
    /// How long the stack may take to configure its addresses, on top of
    /// the spec's time-outs (the reference stack's SLAAC and DAD).
    pub address_grace: Duration,
}

impl Shared {
    fn options(&self) -> StreamOptions {
        StreamOptions {
            protocol: super::stream_protocol(self.spec.protocol),
            xtp: self.spec.xtp,
            buffer: self.spec.sockbuf,
            nodelay: self.spec.nodelay,
            congestion: self.spec.congestion,
        }
    }

    /// The longest wait for the peer before data flows.
    fn setup_limit(&self) -> Duration {
        self.spec.timeout + self.address_grace
    }
}

/// A side's result and what its socket was granted.
#[derive(Debug, Clone)]
pub struct Ended<T> {
    pub side: T,
    pub facts: SocketFacts,
}

/// True once more than `limit` has passed from `since` to `now`.
fn limit_passed(now: Instant, since: Instant, limit: Duration) -> bool {
    now - since > limit
}

/// The receiving side: listens on `bind`, publishes where it listens once
/// it has an address, and checks every byte until the sender closes.
pub struct StreamReceiver<N: Transport> {
    shared: Shared,
    bind: SocketAddr,
    read_len: usize,
    state: Receiving<N>,
    facts: SocketFacts,
    buf: Vec<u8>,
    verifier: StreamVerifier,
}

enum Receiving<N: Transport> {
    Start,
    Listening {
        listener: N::Listener,
        since: Instant,
    },
    Reading {
        conn: N::Stream,
        cpu: CpuMeter,
        /// The first read's time and length: it opens the window.
        first: Option<(Instant, u64)>,
        last: Instant,
    },
}

impl<N: Transport> StreamReceiver<N> {
    /// Reads at most `read_len` bytes per call: the kernel target reads
    /// `-l` bytes as ttcp does; the reference stack drains at least 64 KiB
    /// per call, since each step reads whatever the host has.
    pub fn new(shared: Shared, bind: SocketAddr, read_len: usize) -> Self {
        Self {
            buf: vec![0; read_len.max(1)],
            shared,
            bind,
            read_len,
            state: Receiving::Start,
            facts: SocketFacts::default(),
            verifier: StreamVerifier::new(),
        }
    }

    /// What the listener, then the connection, was granted.
    pub fn facts(&self) -> &SocketFacts {
        &self.facts
    }

    fn publish(&self, net: &mut N) {
        if self.shared.rendezvous.receiver().is_some() {
            return;
        }
        let ip = if self.bind.ip().is_unspecified() {
            net.local_ip(self.shared.spec.family)
        } else {
            Some(self.bind.ip())
        };
        if let Some(ip) = ip {
            self.shared
                .rendezvous
                .publish(Peer::Ip(SocketAddr::new(ip, self.bind.port())));
            net.notify();
        }
    }

    fn finish(
        &mut self,
        net: &mut N,
        conn: N::Stream,
        cpu: CpuMeter,
        first: Option<(Instant, u64)>,
        last: Instant,
    ) -> Step<Ended<ReceiverSide>> {
        net.close(conn);
        let cpu = cpu.stop();
        let counts = self.verifier.finish(&self.shared.pattern);
        let good = counts.bytes - counts.corrupted_bytes - counts.duplicated_bytes;
        Step::Done(Ok(Ended {
            side: ReceiverSide {
                bytes: good,
                elapsed: first.map_or(Duration::ZERO, |(f, _)| last - f),
                opening_bytes: first.map_or(0, |(_, n)| n),
                cpu,
                checks: Received::Stream(counts),
                drops: None,
            },
            facts: self.facts.clone(),
        }))
    }
}

impl<N: Transport> Program<N> for StreamReceiver<N> {
    type Output = Ended<ReceiverSide>;

    fn step(&mut self, net: &mut N) -> Step<Self::Output> {
        if self.shared.rendezvous.failed() {
            return peer_failed();
        }
        match self.state {
            Receiving::Start => match net.listen(self.bind, self.shared.options()) {
                Ok(listener) => {
                    self.facts = net.listener_facts(listener);
                    self.state = Receiving::Listening {
                        listener,
                        since: net.now(),
                    };
                    Step::Again
                }
                Err(e) => Step::Done(Err(e)),
            },
            Receiving::Listening { listener, since } => {
                self.publish(net);
                match net.accept(listener) {
                    Ok(Some(conn)) => {
                        self.facts = net.stream_facts(conn);
                        net.close_listener(listener);
                        self.state = Receiving::Reading {
                            conn,
                            cpu: CpuMeter::start(),
                            first: None,
                            last: net.now(),
                        };
                        Step::Again
                    }
                    Ok(None) if limit_passed(net.now(), since, self.shared.setup_limit()) => {
                        Step::Done(Err(TrafficError::timeout(
                            self.shared.setup_limit(),
                            "waiting for the sender to connect",
                        )))
                    }
                    Ok(None) => Step::Wait(None),
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Receiving::Reading {
                conn,
                cpu,
                ref mut first,
                ref mut last,
            } => {
                loop {
                    match net.recv_into(conn, &mut self.buf, self.read_len) {
                        Ok(Read::Data(n)) => {
                            *last = net.now();
                            first.get_or_insert((*last, n as u64));
                            self.verifier.check(&self.shared.pattern, &self.buf[..n]);
                            self.shared.meter.add_received(n as u64);
                        }
                        Ok(Read::Nothing) => break,
                        Ok(Read::End) => {
                            let (first, last) = (*first, *last);
                            return self.finish(net, conn, cpu, first, last);
                        }
                        Err(e) => return Step::Done(Err(e)),
                    }
                }
                if limit_passed(net.now(), *last, self.shared.spec.timeout) {
                    return Step::Done(Err(TrafficError::timeout(
                        self.shared.spec.timeout,
                        format!(
                            "waiting for data ({} of {} bytes received)",
                            self.verifier.counts().bytes,
                            self.shared.spec.total_bytes()
                        ),
                    )));
                }
                Step::Wait(None)
            }
        }
    }
}

/// The sending side: connects to the published receiver, writes, waits
/// for the acknowledgement of the last byte, closes.
pub struct StreamSender<N: Transport> {
    shared: Shared,
    state: Sending<N>,
    facts: SocketFacts,
    sink: [u8; 64],
}

enum Sending<N: Transport> {
    /// Waiting for the receiver's address and the own one (since the
    /// first step).
    Start {
        since: Option<Instant>,
    },
    Connecting {
        conn: N::Stream,
        since: Instant,
    },
    Writing {
        conn: N::Stream,
        offset: u64,
        started: Instant,
        cpu: CpuMeter,
        stalled_since: Option<Instant>,
        /// A lending interface holds a write that has not returned: it
        /// is followed to its end (its bytes reach the receiver), even
        /// past the spec's last write.
        lent: bool,
    },
    /// Everything written; waiting until the receiver has acknowledged
    /// it all (the end of iperf3's sender window).
    Draining {
        conn: N::Stream,
        offset: u64,
        started: Instant,
        cpu: CpuMeter,
        since: Instant,
    },
    /// Our FIN is queued; waiting for the receiver's close.
    Closing {
        conn: N::Stream,
        side: SenderSide,
        since: Instant,
    },
}

impl<N: Transport> StreamSender<N> {
    pub fn new(shared: Shared) -> Self {
        Self {
            shared,
            state: Sending::Start { since: None },
            facts: SocketFacts::default(),
            sink: [0; 64],
        }
    }

    fn timed_out(&self, what: String) -> Step<Ended<SenderSide>> {
        Step::Done(Err(TrafficError::timeout(self.shared.spec.timeout, what)))
    }

    /// Writes whole `len`-byte buffers at pattern offsets (a partial take
    /// continues mid-buffer at the next step) while the spec says go on.
    fn write(&mut self, net: &mut N) -> Step<Ended<SenderSide>> {
        let Sending::Writing {
            conn,
            ref mut offset,
            started,
            cpu,
            ref mut stalled_since,
            ref mut lent,
        } = self.state
        else {
            unreachable!("write is called while writing");
        };
        let spec = &self.shared.spec;
        let len = spec.len as u64;
        let total = spec.total_bytes();
        while *lent
            || *offset < total
            || *offset % len != 0
            || spec.keep_sending(offset.div_ceil(len), net.now() - started)
        {
            let in_buffer = (*offset % len) as usize;
            // Shared, not copied: an interface that lends buffers (XTP's
            // character driver) references it until the peer read it.
            let data = self.shared.pattern.shared(*offset, spec.len - in_buffer);
            match net.send_shared(conn, &data) {
                Ok(0) => {
                    *lent = net.lends_buffers(conn);
                    let now = net.now();
                    let since = *stalled_since.get_or_insert(now);
                    if limit_passed(net.now(), since, spec.timeout) {
                        let offset = *offset;
                        return self.timed_out(format!(
                            "sending: the receiver stopped reading after {offset} bytes"
                        ));
                    }
                    return Step::Wait(None);
                }
                Ok(n) => {
                    *offset += n as u64;
                    self.shared.meter.add_sent(n as u64);
                    *stalled_since = None;
                    *lent = false;
                }
                Err(e) => {
                    let offset = *offset;
                    return Step::Done(Err(match e {
                        TrafficError::Io { cause, .. }
                            if matches!(
                                cause.kind(),
                                std::io::ErrorKind::BrokenPipe
                                    | std::io::ErrorKind::ConnectionReset
                            ) =>
                        {
                            TrafficError::Invalid(format!(
                                "the receiver closed the connection after {offset} of {total} \
                                 bytes (is it a stackscope ttcp -r?)"
                            ))
                        }
                        TrafficError::Io { cause, .. } => {
                            TrafficError::io(format!("send (after {offset} bytes)"), cause)
                        }
                        other => other,
                    }));
                }
            }
        }
        self.state = Sending::Draining {
            conn,
            offset: *offset,
            started,
            cpu,
            since: net.now(),
        };
        Step::Again
    }
}

impl<N: Transport> Program<N> for StreamSender<N> {
    type Output = Ended<SenderSide>;

    /// Awaiting the receiver's ACKs from the first step to the last: a
    /// host thread that blocked meanwhile would put a wake-up into the
    /// ACK clock and stall the window (the runner keeps its threads
    /// awake, yielding, while a workload awaits; docs/stack.md).
    fn step(&mut self, net: &mut N) -> Step<Self::Output> {
        if matches!(self.state, Sending::Start { since: None }) {
            net.awaiting(true);
        }
        let step = self.send(net);
        if matches!(step, Step::Done(_)) {
            net.awaiting(false);
        }
        step
    }
}

impl<N: Transport> StreamSender<N> {
    fn send(&mut self, net: &mut N) -> Step<Ended<SenderSide>> {
        if self.shared.rendezvous.failed() {
            return peer_failed();
        }
        let spec = &self.shared.spec;
        match self.state {
            Sending::Start { since } => {
                let since = match since {
                    Some(since) => since,
                    None => {
                        self.state = Sending::Start {
                            since: Some(net.now()),
                        };
                        return Step::Again;
                    }
                };
                let own = net.local_ip(spec.family);
                match (own, self.shared.rendezvous.receiver()) {
                    (Some(_), Some(Peer::Ip(dest))) => {
                        match net.connect(dest, self.shared.options()) {
                            Ok(conn) => {
                                self.state = Sending::Connecting { conn, since };
                                Step::Again
                            }
                            Err(e) => Step::Done(Err(e)),
                        }
                    }
                    (_, Some(Peer::Mac(_))) => Step::Done(Err(TrafficError::Invalid(
                        "a stream needs an IP receiver".into(),
                    ))),
                    _ if limit_passed(net.now(), since, self.shared.setup_limit()) => {
                        Step::Done(Err(TrafficError::timeout(
                            self.shared.setup_limit(),
                            format!("waiting for both ends to get an {} address", spec.family),
                        )))
                    }
                    // The receiver's publication wakes reference hosts;
                    // a kernel sender starts after it, so rarely waits.
                    _ => Step::Wait(Some(net.now() + Duration::from_millis(1))),
                }
            }
            Sending::Connecting { conn, since } => match net.established(conn) {
                Ok(true) => {
                    self.facts = net.stream_facts(conn);
                    self.state = Sending::Writing {
                        conn,
                        offset: 0,
                        started: net.now(),
                        cpu: CpuMeter::start(),
                        stalled_since: None,
                        lent: false,
                    };
                    Step::Again
                }
                Ok(false) if limit_passed(net.now(), since, self.shared.setup_limit()) => {
                    Step::Done(Err(TrafficError::timeout(
                        self.shared.setup_limit(),
                        format!("connecting over {} to the receiver", spec.family),
                    )))
                }
                Ok(false) => Step::Wait(None),
                Err(e) => Step::Done(Err(e)),
            },
            Sending::Writing { .. } => self.write(net),
            Sending::Draining {
                conn,
                offset,
                started,
                cpu,
                since,
            } => {
                if net.unacknowledged(conn).is_some_and(|n| n > 0) {
                    if limit_passed(net.now(), since, spec.timeout) {
                        return self.timed_out(
                            "waiting for the receiver to acknowledge the last bytes".into(),
                        );
                    }
                    return Step::Recheck;
                }
                let side = SenderSide {
                    bytes: offset,
                    datagrams: 0,
                    elapsed: (net.now() - started),
                    cpu: cpu.stop(),
                    retransmits: None,
                };
                if let Err(e) = net.shutdown(conn) {
                    return Step::Done(Err(e));
                }
                self.state = Sending::Closing {
                    conn,
                    side,
                    since: net.now(),
                };
                Step::Again
            }
            Sending::Closing {
                conn,
                ref side,
                since,
            } => {
                // The receiver's close, or a reset after it: either way
                // it is done with the data.
                match net.recv(conn, &mut self.sink) {
                    Ok(Read::End) | Err(_) => {
                        let mut side = side.clone();
                        // Counted to the end: retransmissions go on after
                        // the last write.
                        side.retransmits = net.retransmits(conn);
                        net.close(conn);
                        return Step::Done(Ok(Ended {
                            side,
                            facts: self.facts.clone(),
                        }));
                    }
                    Ok(_) => {}
                }
                if limit_passed(net.now(), since, spec.timeout) {
                    return self.timed_out("waiting for the receiver to close".into());
                }
                Step::Wait(None)
            }
        }
    }
}
