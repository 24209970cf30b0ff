//! The datagram transfer, once for every stack and for UDP and link-level
//! frames alike (the XTP study's UDP and raw runs): start sentinels,
//! sequence-numbered data datagrams (paced with `--rate`), then end
//! sentinels repeated until the receiver echoes one back; the receiver
//! counts loss, duplication, reordering and corruption
//! ([`crate::session`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use stack::time::Instant;

use super::{peer_failed, DatagramEnd, Program, Rendezvous, Step};
use crate::cpu::{CpuMeter, CpuUsage};
use crate::datagram::{self, Kind};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::report::{ReceiverSide, SenderSide};
use crate::session::ReceiveSession;
use crate::spec::{Protocol, TransferSpec};
use crate::transport::{DatagramOptions, Peer, SocketFacts, Transport};
use crate::verify::Arrival;

use super::stream::Ended;

/// Start sentinels are sent this many times, `SENTINEL_GAP` apart, so
/// one lost sentinel does not lose the run.
pub const SENTINEL_REPEATS: usize = 5;
pub const SENTINEL_GAP: Duration = Duration::from_millis(2);
/// The end sentinel is repeated every `SENTINEL_GAP` until the receiver
/// acknowledges it (it echoes the sentinel back) or this long has passed:
/// a backlog in a queue can swallow any fixed number of sentinels, and a
/// receiver without one counts no loss after the last datagram it saw.
pub const END_WAIT: Duration = Duration::from_secs(2);
/// A datagram receiver's buffer: larger than any datagram or frame, so
/// none is cut by the read.
const RECV_BUF: usize = 65_536;

/// What both sides of a datagram transfer are given.
#[derive(Debug, Clone)]
pub struct Shared {
    pub spec: TransferSpec,
    pub pattern: Arc<Pattern>,
    pub meter: Arc<Meter>,
    pub rendezvous: Arc<Rendezvous>,
    /// How long the stack may take to configure its addresses.
    pub address_grace: Duration,
    /// For link-level frames: the interface (empty: the first).
    pub interface: String,
}

impl Shared {
    fn options(&self) -> DatagramOptions {
        DatagramOptions {
            buffer: self.spec.sockbuf,
            datagram_len: self.spec.len,
        }
    }

    fn setup_limit(&self) -> Duration {
        self.spec.timeout + self.address_grace
    }

    /// This end's protocol, family and interface.
    fn end(&self) -> DatagramEnd<'_> {
        DatagramEnd {
            protocol: self.spec.protocol,
            family: self.spec.family,
            interface: &self.interface,
        }
    }
}

/// The receiving side: opens its socket, publishes its address, checks
/// every datagram until the end sentinel (which it echoes back), or
/// until the sender has been silent for the spec's time-out.
pub struct DatagramReceiver<N: Transport> {
    shared: Shared,
    bind: SocketAddr,
    socket: Option<N::Datagrams>,
    facts: SocketFacts,
    session: Option<ReceiveSession>,
    since: Instant,
    buf: Vec<u8>,
}

impl<N: Transport> DatagramReceiver<N> {
    /// Receives on `bind` (UDP; link frames take the interface of
    /// `shared`).
    pub fn new(shared: Shared, bind: SocketAddr) -> Self {
        Self {
            shared,
            bind,
            socket: None,
            facts: SocketFacts::default(),
            session: None,
            since: Instant::ZERO,
            buf: vec![0; RECV_BUF],
        }
    }

    /// What the socket was granted, once open.
    pub fn facts(&self) -> &SocketFacts {
        &self.facts
    }

    fn finish(&mut self, net: &mut N, socket: N::Datagrams) -> Step<Ended<ReceiverSide>> {
        self.shared.rendezvous.receiver_finished();
        net.notify();
        let mut side = self
            .session
            .take()
            .map(ReceiveSession::finish)
            .expect("a session runs while receiving");
        if let Some(n) = net.receive_queue_drops(socket).filter(|&n| n > 0) {
            side.drops
                .get_or_insert_with(Default::default)
                .insert("socket_receive_queue_full".into(), n);
        }
        net.close_datagrams(socket);
        Step::Done(Ok(Ended {
            side,
            facts: self.facts.clone(),
        }))
    }
}

impl<N: Transport> Program<N> for DatagramReceiver<N> {
    type Output = Ended<ReceiverSide>;

    fn step(&mut self, net: &mut N) -> Step<Self::Output> {
        if self.shared.rendezvous.failed() {
            return peer_failed();
        }
        let Some(socket) = self.socket else {
            let kind = self.shared.end().socket(Some(self.bind));
            return match net.open_datagrams(&kind, self.shared.options()) {
                Ok(socket) => {
                    self.facts = net.datagram_facts(socket, self.shared.options());
                    self.socket = Some(socket);
                    self.since = net.now();
                    Step::Again
                }
                Err(e) => Step::Done(Err(e)),
            };
        };
        let Some(session) = self.session.as_mut() else {
            if let Some(own) = self.shared.end().address(net, Some(self.bind)) {
                self.shared.rendezvous.publish(own);
                net.notify();
                self.session = Some(ReceiveSession::new(self.shared.spec.circuit, net.now()));
                return Step::Again;
            }
            if (net.now() - self.since) > self.shared.setup_limit() {
                return Step::Done(Err(TrafficError::timeout(
                    self.shared.setup_limit(),
                    format!(
                        "waiting for the receiving end to get an {} address",
                        self.shared.spec.family
                    ),
                )));
            }
            return Step::Wait(None);
        };
        loop {
            let (n, from) = match net.recv_from(socket, &mut self.buf) {
                Ok(Some(got)) => got,
                Ok(None) => break,
                Err(e) => return Step::Done(Err(e)),
            };
            let frame = datagram::strip_padding(&self.buf[..n]);
            let len = frame.len();
            if let Arrival::End { .. } =
                session.arrival(&self.shared.pattern, frame, &self.shared.meter, net.now())
            {
                // The acknowledgement: the sentinel, echoed. Lost or
                // refused, the sender stops after END_WAIT anyway.
                let _ = net.send_to(socket, &self.buf[..len], from);
                return self.finish(net, socket);
            }
        }
        let waiting_for = match self.shared.spec.protocol {
            Protocol::Raw => "waiting for the first frame",
            _ => "waiting for the first datagram",
        };
        match session.quiet(self.shared.spec.timeout, waiting_for, net.now()) {
            Ok(true) => self.finish(net, socket),
            Ok(false) => Step::Wait(None),
            Err(e) => Step::Done(Err(e)),
        }
    }
}

/// Where the sender is.
#[derive(Debug, Clone, Copy)]
enum Phase {
    Open,
    WaitingForPeer,
    Start {
        dest: Peer,
        sent: usize,
        next: Instant,
    },
    Data {
        dest: Peer,
    },
    End {
        dest: Peer,
        next: Instant,
    },
}

/// The sending side.
pub struct DatagramSender<N: Transport> {
    shared: Shared,
    socket: Option<N::Datagrams>,
    facts: SocketFacts,
    phase: Phase,
    since: Instant,
    buf: Vec<u8>,
    answer: Vec<u8>,
    seq: u64,
    started: Option<Instant>,
    ended: Option<Instant>,
    elapsed: Duration,
    cpu: Option<CpuMeter>,
    cpu_usage: CpuUsage,
    pacer: Option<Pacer>,
    /// Since when the socket has refused every datagram.
    stalled_since: Option<Instant>,
}

impl<N: Transport> DatagramSender<N> {
    pub fn new(shared: Shared) -> Self {
        Self {
            buf: vec![0; shared.spec.len],
            shared,
            socket: None,
            facts: SocketFacts::default(),
            phase: Phase::Open,
            since: Instant::ZERO,
            answer: vec![0; RECV_BUF],
            seq: 0,
            started: None,
            ended: None,
            elapsed: Duration::ZERO,
            cpu: None,
            cpu_usage: CpuUsage::default(),
            pacer: None,
            stalled_since: None,
        }
    }

    fn side(&self) -> SenderSide {
        SenderSide {
            bytes: self.seq * self.shared.spec.len as u64,
            datagrams: self.seq,
            elapsed: self.elapsed,
            cpu: self.cpu_usage,
            retransmits: None,
        }
    }

    /// Sends data datagrams until the socket's queue is full, the pacer
    /// says wait, or all are sent; `Some` step when the sender must stop
    /// here for now.
    fn send_data(
        &mut self,
        net: &mut N,
        socket: N::Datagrams,
        dest: Peer,
    ) -> Option<Step<Ended<SenderSide>>> {
        let spec = &self.shared.spec;
        let started = self.started.unwrap_or_else(|| net.now());
        while spec.keep_sending(self.seq, net.now() - started) {
            if let Some(pacer) = &self.pacer {
                let due = pacer.due();
                if net.now() < due {
                    return Some(Step::Wait(Some(due)));
                }
            }
            datagram::write(
                &mut self.buf,
                Kind::Data,
                self.seq,
                spec.circuit,
                &self.shared.pattern,
            );
            match net.send_to(socket, &self.buf, dest) {
                Ok(true) => {
                    self.stalled_since = None;
                    self.seq += 1;
                    self.shared.meter.add_sent(spec.len as u64);
                    if let Some(pacer) = &mut self.pacer {
                        pacer.sent(spec.len);
                    }
                }
                Ok(false) => {
                    // Back-pressure; a queue that never drains is a fault.
                    let now = net.now();
                    let since = *self.stalled_since.get_or_insert(now);
                    if (net.now() - since) > spec.timeout {
                        return Some(Step::Done(Err(TrafficError::timeout(
                            spec.timeout,
                            "the sending stack stopped taking datagrams",
                        ))));
                    }
                    return Some(Step::Wait(None));
                }
                Err(e) => return Some(Step::Done(Err(e))),
            }
        }
        None
    }

    /// True once the receiver has acknowledged the end (an echoed end
    /// sentinel, or the word of a receiver in this process).
    fn end_acknowledged(&mut self, net: &mut N, socket: N::Datagrams) -> bool {
        if self.shared.rendezvous.has_receiver_finished() {
            return true;
        }
        while let Ok(Some((n, _))) = net.recv_from(socket, &mut self.answer) {
            let answer = datagram::strip_padding(&self.answer[..n]);
            // Raw circuits share an Ethertype and a station: only the
            // own circuit's echo counts.
            if matches!(
                datagram::parse_header(answer),
                Ok(h) if h.kind == Kind::End && h.circuit == self.shared.spec.circuit
            ) {
                return true;
            }
        }
        false
    }
}

impl<N: Transport> Program<N> for DatagramSender<N> {
    type Output = Ended<SenderSide>;

    fn step(&mut self, net: &mut N) -> Step<Self::Output> {
        let spec = self.shared.spec.clone();
        let Some(socket) = self.socket else {
            let kind = self.shared.end().socket(None);
            return match net.open_datagrams(&kind, self.shared.options()) {
                Ok(socket) => {
                    self.facts = net.datagram_facts(socket, self.shared.options());
                    self.socket = Some(socket);
                    self.phase = Phase::WaitingForPeer;
                    self.since = net.now();
                    Step::Again
                }
                Err(e) => Step::Done(Err(e)),
            };
        };
        let failed = self.shared.rendezvous.failed();
        let now = net.now();
        match self.phase {
            Phase::Open | Phase::WaitingForPeer => {
                if failed {
                    return peer_failed();
                }
                let own = self.shared.end().address(net, None);
                match (own, self.shared.rendezvous.receiver()) {
                    (Some(_), Some(dest)) => {
                        self.phase = Phase::Start {
                            dest,
                            sent: 0,
                            next: now,
                        };
                        Step::Again
                    }
                    _ if (net.now() - self.since) > self.shared.setup_limit() => {
                        Step::Done(Err(TrafficError::timeout(
                            self.shared.setup_limit(),
                            format!("waiting for both ends to get an {} address", spec.family),
                        )))
                    }
                    _ => Step::Wait(Some(now + Duration::from_millis(1))),
                }
            }
            Phase::Start { dest, sent, next } => {
                if failed {
                    return peer_failed();
                }
                if now < next {
                    return Step::Wait(Some(next));
                }
                if sent == SENTINEL_REPEATS {
                    self.started = Some(net.now());
                    self.cpu = Some(CpuMeter::start());
                    self.pacer = spec.rate_bps.map(|bps| Pacer::new(bps, net.now()));
                    self.phase = Phase::Data { dest };
                    return Step::Again;
                }
                datagram::write(
                    &mut self.buf,
                    Kind::Start,
                    spec.count,
                    spec.circuit,
                    &self.shared.pattern,
                );
                // A refused sentinel is retried at the next gap.
                let sent = match net.send_to(socket, &self.buf, dest) {
                    Ok(true) => sent + 1,
                    Ok(false) => sent,
                    Err(e) => return Step::Done(Err(e)),
                };
                self.phase = Phase::Start {
                    dest,
                    sent,
                    next: now + SENTINEL_GAP,
                };
                Step::Wait(Some(now + SENTINEL_GAP))
            }
            Phase::Data { dest } => {
                if failed {
                    return peer_failed();
                }
                if let Some(step) = self.send_data(net, socket, dest) {
                    return step;
                }
                // A paced sender's window ends where its last datagram's
                // slot at the rate does: n datagrams take n slots, not the
                // n - 1 gaps between their releases (pace.rs). Behind the
                // pace, it ends at the last send.
                let end = self
                    .pacer
                    .as_ref()
                    .map_or(net.now(), |p| p.due().max(net.now()));
                self.elapsed = self.started.map_or(Duration::ZERO, |s| end - s);
                self.cpu_usage = self.cpu.map_or(CpuUsage::default(), |c| c.stop());
                self.ended = Some(net.now());
                self.phase = Phase::End {
                    dest,
                    next: net.now(),
                };
                Step::Again
            }
            Phase::End { dest, next } => {
                let waited = self.ended.is_some_and(|t| (net.now() - t) > END_WAIT);
                if failed || waited || self.end_acknowledged(net, socket) {
                    net.close_datagrams(socket);
                    return Step::Done(Ok(Ended {
                        side: self.side(),
                        facts: self.facts.clone(),
                    }));
                }
                if now < next {
                    return Step::Wait(Some(next));
                }
                datagram::write(
                    &mut self.buf,
                    Kind::End,
                    self.seq,
                    spec.circuit,
                    &self.shared.pattern,
                );
                // Errors (the receiver's port already closed) end nothing
                // early: the acknowledgement may still be on its way.
                let _ = net.send_to(socket, &self.buf, dest);
                self.phase = Phase::End {
                    dest,
                    next: now + SENTINEL_GAP,
                };
                Step::Wait(Some(now + SENTINEL_GAP))
            }
        }
    }
}
