//! One XTP context (study §2.2: "the collection of state information kept
//! within one end system") and the association it forms with its peer:
//! setup, key exchange, the two streams, status requests and WTIMER, the
//! close handshake and the connection timers. Pure state: the host hands
//! it parsed packets ([`input`](Association::input), in `input.rs`) and
//! asks it for packets to send ([`poll_output`](Association::poll_output),
//! in `output.rs`); it never does I/O or reads a clock.

use std::net::SocketAddr;
use std::time::Duration;

use probe::Flow;
use wire::xtp::{DiagCode, DiagValue, XtpOptions};

use super::config::{is_datagram_service, is_message_service, ErrorControl, XtpConfig};
use super::packet::{Body, Outgoing};
use super::rate::RateControl;
use super::recv_stream::RecvStream;
use super::send_stream::SendStream;
use crate::probes::{DATA_COPY_ENTER, DATA_COPY_EXIT};
use crate::socket::probe_len;
use crate::time::Instant;

/// Where an association is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum State {
    /// The initiator sent FIRST and has heard nothing back yet.
    FirstSent,
    /// Both contexts exist: data and control flow.
    Active,
    /// This end sent END: it answers a peer that missed it, then closes.
    Quiet,
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Role {
    Initiator,
    Responder,
}

/// Why an association ended other than by the close handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, serde::Serialize)]
pub enum Failure {
    #[error("the peer refused the association")]
    Refused,
    #[error("the peer aborted the association")]
    Reset,
    #[error("the peer stopped answering (retry count or CTIMEOUT)")]
    TimedOut,
}

/// What an association counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct XtpCounters {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub first_sent: u64,
    pub data_packets_sent: u64,
    pub data_bytes_sent: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub cntl_sent: u64,
    pub ecntl_sent: u64,
    pub tcntl_sent: u64,
    pub cntl_received: u64,
    pub ecntl_received: u64,
    /// Retransmission requests acted on: gaps an ECNTL (or a CNTL's
    /// `rseq` short of what was asked about) named.
    pub naks: u64,
    pub go_backs: u64,
    pub sreq_sent: u64,
    pub dreq_sent: u64,
    /// Controls sent at once for a gap (FASTNAK), not on request.
    pub fastnaks_sent: u64,
    pub wtimer_expiries: u64,
    pub keepalives: u64,
    pub data_packets_received: u64,
    pub data_bytes_received: u64,
    pub duplicate_packets_received: u64,
    /// Bytes given up without error control (NOERR): lost, never resent.
    pub bytes_given_up: u64,
    pub out_of_order_packets: u64,
    pub rate_stalls: u64,
}

/// The status request this end is waiting on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    pub sync: u32,
    /// One past the highest byte sent when asked: the answer accounts for
    /// everything below.
    pub high: u64,
    pub at: Instant,
}

/// Control packets this end owes its peer.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Owed {
    /// Answer a status request carrying this `sync`.
    pub echo: Option<u32>,
    /// The responder's key-exchange answer to FIRST.
    pub tcntl: bool,
    /// An unsolicited control (alloc update, RCLOSE, FASTNAK).
    pub update: bool,
    /// That control reports a gap at once (FASTNAK).
    pub fastnak: bool,
    /// A status request of our own (WTIMER or CTIMER).
    pub probe: bool,
    /// Resend FIRST (initiator, WTIMER before any answer).
    pub first: bool,
}

/// Data bytes of a packet that fits the IPv6 minimum MTU: 1280 less the
/// IPv6 and XTP headers.
pub const IPV6_SAFE_MAXDATA: usize = 1280 - 40 - wire::xtp::HEADER_LEN;

/// An XTP association seen from one end.
#[derive(Debug)]
pub struct Association {
    pub(super) config: XtpConfig,
    pub(super) role: Role,
    pub(super) state: State,
    pub(super) local: SocketAddr,
    pub(super) remote: SocketAddr,
    pub(super) own_key: u64,
    /// The peer's key: the initiator learns it from TCNTL's `xkey`; the
    /// responder knows the initiator's from FIRST.
    pub(super) peer_key: Option<u64>,
    pub(super) flow: Flow,
    pub(super) send: SendStream,
    pub(super) recv: RecvStream,
    pub(super) rate: RateControl,
    /// The peer's `alloc`: new data stays below it.
    pub(super) peer_alloc: u64,
    /// Data bytes per packet this end sends.
    pub(super) maxdata: usize,
    /// The most the host last said the path carries (its MTU less the
    /// headers and, when traced, the trace option): the peer's traffic
    /// specifier never raises `maxdata` past it.
    pub(super) path_limit: usize,
    /// Data bytes per packet this end accepts (its traffic specifier).
    pub(super) local_maxdata: u32,
    /// The sync of our latest status request, and the last one handed out.
    pub(super) sync: u32,
    pub(super) request: Option<Request>,
    /// The peer's latest sync seen (echoed by unsolicited controls).
    pub(super) peer_sync: u32,
    /// The sync of the latest FIRST, which TCNTL answers.
    pub(super) first_sync: u32,
    pub(super) owed: Owed,
    /// DREQ: answer once the reader took everything below `.0`.
    pub(super) delivery: Option<(u64, u32)>,
    /// Everything below this reached the peer's reader (answered DREQs).
    pub(super) delivered: u64,
    /// Our latest DREQ's sync and the highest byte sent when asked.
    pub(super) dreq: Option<(u32, u64)>,
    /// The end of the latest message from the peer (EOM: a driver
    /// write's end): a posted driver read holding it is done.
    pub(super) pushed_to: u64,
    /// The character driver's write in progress: its length and the
    /// sequence number one past it (`driver.rs`).
    pub(super) driver_write: Option<(usize, u64)>,
    pub(super) advertised_alloc: u64,
    /// Bytes of the FIRST packet's data (resent with FIRST), and its tag.
    pub(super) first_len: usize,
    pub(super) first_tag: Option<u64>,
    /// Bytes sent since the last status request.
    pub(super) since_request: usize,
    pub(super) wclose_sent: bool,
    pub(super) peer_rclosed: bool,
    /// Abbreviated close: this end reads no more.
    pub(super) read_abandoned: bool,
    /// The peer sends without error control (NOERR seen on its data).
    pub(super) peer_noerr: bool,
    pub(super) end_sent: bool,
    /// Unsolicited NAK gaps already resent since the last answered
    /// request, so a run of FASTNAKs resends a gap once.
    pub(super) naked: Vec<(u64, u64)>,
    pub(super) last_go_back: Option<u64>,
    pub(super) wtimer_at: Option<Instant>,
    pub(super) retries: u32,
    /// Answered requests in a row that found the sender still held back
    /// by the peer's `alloc` (a reader that does not read): WTIMER backs
    /// off as for unanswered ones, so a stalled association is probed
    /// ever more rarely, as TCP's persist timer is.
    pub(super) stalled: u32,
    pub(super) srtt: Option<Duration>,
    pub(super) rttvar: Duration,
    pub(super) last_heard: Instant,
    pub(super) last_sent: Instant,
    pub(super) quiet_until: Option<Instant>,
    pub(super) error: Option<Failure>,
    pub(super) counters: XtpCounters,
}

/// How the host describes a new association's ends.
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub own_key: u64,
    /// Data bytes per packet the path from here allows.
    pub path_maxdata: usize,
    pub flow: Flow,
}

impl Association {
    fn new(mut config: XtpConfig, role: Role, ends: Ends, now: Instant) -> Self {
        if config.service == wire::xtp::Service::UnacknowledgedDatagram {
            config.noerr = true;
        }
        let keep = config.error_control == ErrorControl::Selective;
        let mut recv = RecvStream::new(config.recv_buffer, keep);
        if config.reservation {
            recv.reserve(config.recv_buffer.min(64 * 1024));
        }
        let advertised_alloc = recv.alloc();
        Self {
            config,
            role,
            state: State::Active,
            local: ends.local,
            remote: ends.remote,
            own_key: ends.own_key,
            peer_key: None,
            flow: ends.flow,
            send: SendStream::new(config.send_buffer),
            recv,
            rate: RateControl::new(config.rate),
            peer_alloc: config.initial_alloc,
            // Until the peer's traffic specifier says what it takes, IPv6
            // packets stay within the minimum link MTU (RFC 8200 §5: 1280),
            // which every path carries unfragmented; IPv4 routers fragment.
            maxdata: if ends.remote.is_ipv6() {
                ends.path_maxdata.clamp(1, IPV6_SAFE_MAXDATA)
            } else {
                ends.path_maxdata.max(1)
            },
            path_limit: ends.path_maxdata.max(1),
            local_maxdata: u32::try_from(ends.path_maxdata).unwrap_or(u32::MAX),
            sync: 0,
            request: None,
            peer_sync: 0,
            first_sync: 0,
            owed: Owed::default(),
            delivery: None,
            delivered: 0,
            dreq: None,
            pushed_to: 0,
            driver_write: None,
            advertised_alloc,
            first_len: 0,
            first_tag: None,
            since_request: 0,
            wclose_sent: false,
            peer_rclosed: false,
            read_abandoned: false,
            peer_noerr: false,
            end_sent: false,
            naked: Vec::new(),
            last_go_back: None,
            wtimer_at: None,
            retries: 0,
            stalled: 0,
            srtt: None,
            rttvar: Duration::ZERO,
            last_heard: now,
            last_sent: now,
            quiet_until: None,
            error: None,
            counters: XtpCounters::default(),
        }
    }

    /// The initiator's context: FIRST leaves at the next output.
    pub fn connect(config: XtpConfig, ends: Ends, now: Instant) -> Self {
        let mut assoc = Self::new(config, Role::Initiator, ends, now);
        assoc.state = State::FirstSent;
        assoc.owed.first = true;
        assoc
    }

    /// The responder's context for a FIRST carrying `peer_key`; the host
    /// then hands it the FIRST itself through [`input`](Self::input).
    pub fn respond(config: XtpConfig, ends: Ends, peer_key: u64, now: Instant) -> Self {
        let mut assoc = Self::new(config, Role::Responder, ends, now);
        assoc.peer_key = Some(peer_key & !wire::xtp::KEY_RETURN);
        assoc
    }

    // ----- What the host and the application see ---------------------------

    pub fn state(&self) -> State {
        self.state
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn local(&self) -> SocketAddr {
        self.local
    }

    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    pub fn own_key(&self) -> u64 {
        self.own_key
    }

    pub fn peer_key(&self) -> Option<u64> {
        self.peer_key
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    pub fn config(&self) -> &XtpConfig {
        &self.config
    }

    pub fn error(&self) -> Option<Failure> {
        self.error
    }

    pub fn counters(&self) -> XtpCounters {
        XtpCounters {
            rate_stalls: self.rate.stalls,
            ..self.counters
        }
    }

    /// Data bytes per packet this end sends now.
    pub fn maxdata(&self) -> usize {
        self.maxdata
    }

    /// The path carries less than this end sends (a Packet Too Big or
    /// Fragmentation Needed taught the host): packets shrink from now on,
    /// resends included (what the path dropped is resent by error
    /// control).
    pub fn clamp_maxdata(&mut self, path_maxdata: usize) {
        self.path_limit = path_maxdata.max(1);
        self.maxdata = self.maxdata.min(self.path_limit);
    }

    /// Traces this association's probes (as TCP's `SO_LOG`): with the
    /// gate in mode `traced_flows` only traced flows record, and its
    /// packets carry the trace option, so the host must fit it in (see
    /// `Host::xtp_set_traced`).
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
    }

    /// The smoothed round-trip time, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The peer answered (or, for the responder, FIRST arrived).
    pub fn established(&self) -> bool {
        self.state != State::FirstSent
    }

    pub fn readable(&self) -> usize {
        self.recv.readable()
    }

    /// Bytes written and not yet acknowledged.
    pub fn send_queued(&self) -> usize {
        self.send.queued()
    }

    pub fn send_room(&self) -> usize {
        self.send.room()
    }

    pub fn send_closed(&self) -> bool {
        self.send.is_closed()
    }

    /// The reader took the peer's whole stream.
    pub fn at_eof(&self) -> bool {
        self.recv.at_eof() || self.read_abandoned
    }

    /// The peer said it reads no more while this end still had data for it.
    pub fn peer_stopped_reading(&self) -> bool {
        self.peer_rclosed && !self.send.is_closed()
    }

    /// Writes bytes; returns how many the send buffer took. Under a
    /// message service the first write is the whole message (all of it or
    /// nothing) and closes the sending half.
    pub fn send(&mut self, data: &[u8]) -> usize {
        if self.state == State::Closed || self.peer_rclosed || self.send.is_closed() {
            return 0;
        }
        let _copy = probe::span_with(DATA_COPY_ENTER, DATA_COPY_EXIT, self.flow, || {
            (probe_len(data.len().min(self.send.room())), 0)
        });
        if is_message_service(self.config.service) {
            if data.len() > self.send.room() {
                return 0;
            }
            let n = self.send.write(data);
            self.send.close();
            return n;
        }
        self.send.write(data)
    }

    /// Writes bytes whose first carries `tag` (BTAG, study §2.6): it
    /// starts a packet of its own; the peer's reader gets the tag with
    /// its stream offset. Not under a message service.
    pub fn send_tagged(&mut self, tag: u64, data: &[u8]) -> usize {
        if self.state == State::Closed
            || self.peer_rclosed
            || self.send.is_closed()
            || is_message_service(self.config.service)
        {
            return 0;
        }
        self.send.write_tagged(tag, data)
    }

    /// The tags of bytes that arrived in order: (stream offset, tag).
    pub fn take_tags(&mut self) -> Vec<(u64, u64)> {
        self.recv.take_tags()
    }

    /// The service the association runs (the initiator's choice).
    pub fn service(&self) -> wire::xtp::Service {
        self.config.service
    }

    /// The responder takes the initiator's service type from FIRST: a
    /// datagram service sends nothing back, so its sending half is closed
    /// from the start; unacknowledged datagrams run without error control.
    pub(super) fn adopt_service(&mut self, service: wire::xtp::Service) {
        self.config.service = service;
        if is_datagram_service(service) {
            self.send.close();
        }
        if service == wire::xtp::Service::UnacknowledgedDatagram {
            self.config.noerr = true;
        }
    }

    /// Reads bytes (nothing while a driver read is posted).
    pub fn recv(&mut self, out: &mut [u8]) -> usize {
        if self.recv.posted_fill().is_some() {
            // A posted driver read takes the bytes first, in order.
            return 0;
        }
        let _copy = probe::span_with(DATA_COPY_ENTER, DATA_COPY_EXIT, self.flow, || {
            (probe_len(out.len().min(self.recv.readable())), 0)
        });
        let mut n = self.recv.recv(out);
        if self.peer_noerr && n < out.len() {
            self.give_up_gap();
            n += self.recv.recv(&mut out[n..]);
        }
        if n > 0 {
            self.note_alloc_growth();
        }
        n
    }

    /// An alloc update is owed once reading opened half the buffer since
    /// the last one the peer heard.
    pub(super) fn note_alloc_growth(&mut self) {
        let grown = self.recv.alloc().saturating_sub(self.advertised_alloc);
        if grown >= (self.config.recv_buffer / 2) as u64 && self.state == State::Active {
            self.owed.update = true;
        }
    }

    /// NOERR: past the gap the reader is stuck at.
    pub(super) fn give_up_gap(&mut self) {
        self.counters.bytes_given_up += self.recv.skip_gap();
    }

    /// The largest `alloc` heard from the peer (`u64::MAX` once it said
    /// NOFLOW).
    pub fn peer_alloc(&self) -> u64 {
        self.peer_alloc
    }

    /// Graceful close of the sending half (WCLOSE after the data).
    pub fn close(&mut self) {
        self.send.close();
    }

    /// Abbreviated close: this end reads no more (RCLOSE now, the rest of
    /// the peer's data discarded) and sends no more than it wrote.
    pub fn close_abbreviated(&mut self) {
        self.send.close();
        if !self.recv.complete() {
            self.recv.discard();
            self.read_abandoned = true;
            self.owed.update = true;
        }
    }

    /// Abortive close: the context ends now; the packet telling the peer
    /// (DIAG with END) is returned unless the peer never knew of it.
    pub fn abort(&mut self) -> Option<Outgoing> {
        let known = self.state != State::Closed;
        self.state = State::Closed;
        known.then(|| Outgoing {
            key: self.out_key(),
            options: XtpOptions::END,
            sort: self.config.sort.unwrap_or(0),
            btag: None,
            sync: self.sync,
            seq: self.send.nxt(),
            body: Body::Diag(
                DiagCode::ContextAbandoned,
                DiagValue::Unspecified,
                "aborted by the application",
            ),
        })
    }

    /// The key this end's packets carry (study §2.4.1, "Association
    /// Identification"; XTP 4.0 key exchange): the peer's own key with the
    /// return bit once known, so the peer finds its context by a direct
    /// key lookup; before the initiator learns the responder's key, its
    /// own key without the bit (the responder then looks it up by
    /// sender and key).
    pub(super) fn out_key(&self) -> u64 {
        match self.peer_key {
            Some(peer) => peer | wire::xtp::KEY_RETURN,
            None => self.own_key,
        }
    }

    // ----- Close handshake -------------------------------------------------

    /// This end has everything the peer will send (or gave up reading).
    pub(super) fn read_done(&self) -> bool {
        self.read_abandoned || self.recv.complete()
    }

    /// The peer has everything this end will send, and said so (RCLOSE).
    pub(super) fn write_done(&self) -> bool {
        self.send.is_closed() && self.send.all_acked() && self.peer_rclosed
    }

    /// Both streams are finished: the next control carries END (XTP 4.0
    /// graceful close: WCLOSE and RCLOSE each way, then END).
    pub(super) fn ready_to_end(&self) -> bool {
        self.state == State::Active && self.read_done() && self.write_done()
    }

    /// END arrived from the peer: the end of the close handshake if both
    /// streams are finished, else an abortive close.
    pub(super) fn on_end(&mut self) {
        match self.state {
            State::Quiet | State::Closed => self.state = State::Closed,
            _ if self.read_done() && self.write_done() => self.state = State::Closed,
            _ => self.fail(Failure::Reset),
        }
    }

    pub(super) fn fail(&mut self, failure: Failure) {
        if self.state != State::Closed {
            self.error = Some(failure);
            self.state = State::Closed;
        }
    }

    // ----- Timers ----------------------------------------------------------

    /// WTIMER from the round-trip estimate (as RFC 6298 derives its RTO:
    /// SRTT + 4 RTTVAR), backed off per unanswered request.
    pub(super) fn wtimer(&self) -> Duration {
        let base = match self.srtt {
            Some(srtt) => (srtt + self.rttvar * 4).max(self.config.wtimer_min),
            None => self.config.wtimer,
        };
        let backoff = 1u32 << (self.retries + self.stalled).min(6);
        (base * backoff).min(Duration::from_secs(60))
    }

    pub(super) fn rtt_sample(&mut self, sample: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(sample);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((srtt * 7 + sample) / 8);
            }
        }
    }

    /// Whether this end waits on its peer: WTIMER runs while it does.
    fn waiting(&self) -> bool {
        match self.state {
            State::FirstSent => true,
            State::Active => {
                self.send.in_flight()
                    || self.send.blocked_by(self.peer_alloc)
                    || (self.send.is_closed() && !self.write_done())
                    || self.awaits_delivery()
                    || (self.read_done() && !self.end_sent && self.write_done())
            }
            State::Quiet | State::Closed => false,
        }
    }

    /// Arms WTIMER when this end waits and it is not running.
    pub(super) fn arm_wtimer(&mut self, now: Instant) {
        if !self.waiting() {
            self.wtimer_at = None;
            self.retries = 0;
            return;
        }
        if self.wtimer_at.is_none() {
            self.wtimer_at = Some(now + self.wtimer());
        }
    }

    /// When [`poll_timers`](Self::poll_timers) next has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        let ctimer = (self.state == State::Active).then(|| self.last_sent + self.config.ctimer);
        [self.wtimer_at, self.quiet_until, ctimer]
            .into_iter()
            .flatten()
            .min()
    }

    /// When the rate lets a held-back sender go on (RTIMER), if it is.
    pub fn rate_deadline(&self) -> Option<Instant> {
        if self.state == State::Closed || !self.send.can_send(self.peer_alloc) {
            return None;
        }
        self.rate.deadline()
    }

    /// Runs the timers due at `now`: WTIMER (resend FIRST or ask for
    /// status; the retry count and CTIMEOUT end it), CTIMER (keep-alive
    /// status request on an idle association), the quiet period after END.
    pub fn poll_timers(&mut self, now: Instant) {
        if self.quiet_until.is_some_and(|t| t <= now) {
            self.quiet_until = None;
            self.state = State::Closed;
        }
        if self.state == State::Closed {
            self.wtimer_at = None;
            return;
        }
        if self.wtimer_at.is_some_and(|t| t <= now) {
            self.wtimer_at = None;
            self.counters.wtimer_expiries += 1;
            self.retries += 1;
            let silent = now.saturating_duration_since(self.last_heard);
            if self.retries > self.config.retries || silent >= self.config.ctimeout {
                self.fail(Failure::TimedOut);
                return;
            }
            if self.state == State::FirstSent {
                self.owed.first = true;
            } else {
                self.owed.probe = true;
            }
            self.wtimer_at = Some(now + self.wtimer());
        }
        if self.state == State::Active
            && !self.waiting()
            && now.saturating_duration_since(self.last_sent) >= self.config.ctimer
        {
            if now.saturating_duration_since(self.last_heard) >= self.config.ctimeout {
                self.fail(Failure::TimedOut);
                return;
            }
            self.counters.keepalives += 1;
            self.owed.probe = true;
            self.last_sent = now;
        }
    }
}
