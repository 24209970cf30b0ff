//! One TCP connection's state machine (RFC 9293 §3.10): opening (active,
//! passive and simultaneous), data transfer with the send queue, the
//! reassembler, the retransmission timer and congestion control, closing
//! through TIME-WAIT, and the RST/SYN/ACK rules of RFC 5961.
//!
//! The connection is pure: it is handed arriving segments and the time,
//! and asked for the segments to send. It never reads a clock or touches
//! a link. Loss is recovered by fast retransmit: with SACK, RFC 6675's
//! scoreboard picks what to resend and the pipe paces it; without, the
//! RFC 6582 NewReno rules resend the segment at SND.UNA after three
//! duplicate ACKs and after each partial ACK. The retransmission timeout
//! (go-back-N from SND.UNA) is the last resort.
//!
//! A smaller path MTU is not congestion: when a Packet Too Big or
//! Fragmentation Needed about one of its segments lowers the send MSS,
//! the connection resends what it had in flight at the old size, at once,
//! in segments of the new MSS, and leaves the congestion window alone
//! (RFC 1191 §6.5, RFC 8201 §5.4; Linux's `tcp_simple_retransmit`).
//!
//! This file holds the connection's state and what the application calls;
//! `input` takes arriving segments, `output` runs the timers and builds
//! the segments to send, and `config` holds the settings.

use std::net::SocketAddr;
use std::time::Duration;

use probe::Flow;
use wire::tcp::{TcpFlags, TcpRepr, MAX_SACK_BLOCKS};

use super::assembler::{self, Assembler, AssemblerConfig, SackBlocks};
use super::congestion::{CongestionControl, Controller};
use super::options::{self, LocalOptions, Negotiated};
use super::rtt::{KarnSampler, RttEstimator, TimestampClock};
use super::rules::{self, ChallengeLimiter, RstVerdict};
use super::scoreboard::{NextSeg, NextSegQuery, Scoreboard, DUP_THRESH};
use super::send_buffer::SendBuffer;
use super::seq::Seq;
use super::small_segments::{self, SmallSegments};
use super::state::State;
use super::timers::{Timer, Timers};
use crate::buffer::{PacketError, Pool, SegmentList};
use crate::probes::{TCP_ACK_ENTER, TCP_ACK_EXIT, TCP_RETRANSMIT};
use crate::time::Instant;

/// The most immediate ACKs a connection owes at once (one per
/// out-of-order segment of a burst).
const MAX_OWED_ACKS: u32 = 64;

/// Out-of-order ranges a receive buffer (or SACKed ranges a send buffer)
/// of `bytes` may hold: one per two segments of the smallest common MSS,
/// as a burst of tail drops alternates kept and lost segments, between 32
/// and 1024. Too few and the receiver must drop data it could keep, the
/// sender's SACK view falls behind and recovery ends in a timeout.
fn ranges_for(bytes: usize) -> usize {
    (bytes / (2 * 536)).clamp(32, 1024)
}

mod config;
mod input;
mod output;
#[cfg(test)]
mod tests;

pub use config::{Keepalive, TcpConfig};

/// Why a connection ended abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    #[error("the peer reset the connection")]
    Reset,
    #[error("the peer refused the connection")]
    Refused,
    #[error("the connection timed out")]
    TimedOut,
}

/// A segment to send: the header and its payload, referenced from the
/// send queue.
#[derive(Debug)]
pub struct Outgoing {
    pub repr: TcpRepr,
    pub payload: SegmentList,
    /// For a super-segment (segmentation offload: more payload than one
    /// MSS), the payload of each wire segment it is to be cut into; 0 for
    /// an ordinary segment.
    pub gso_size: u16,
}

impl Outgoing {
    /// A segment of `repr` without payload (SYN, ACK, RST, a probe).
    pub fn header_only(repr: TcpRepr) -> Outgoing {
        Outgoing {
            repr,
            payload: SegmentList::new(),
            gso_size: 0,
        }
    }

    /// A place for [`Connection::poll_output_into`] to write a segment
    /// into (an empty header between ports 0).
    pub fn empty() -> Outgoing {
        Self::header_only(super::bare_header(0, 0, Seq(0), None, TcpFlags::empty()))
    }
}

/// What an arriving segment asks of the caller beyond its own effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Nothing,
    /// Send this RST (no connection state involved).
    Rst(TcpRepr),
}

/// Counters of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpCounters {
    pub segments_sent: u64,
    pub segments_received: u64,
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    /// Segments sent again, by fast retransmit or after a timeout (what
    /// iperf3 reports as `retransmits`).
    pub segments_retransmitted: u64,
    pub retransmission_timeouts: u64,
    pub challenge_acks: u64,
    pub dropped_unacceptable: u64,
    pub dropped_paws: u64,
    pub window_probes: u64,
    pub keepalive_probes: u64,
    /// Loss recovery episodes entered by duplicate ACKs or SACK.
    pub fast_recoveries: u64,
    /// Segments resent by fast retransmit (not by timeout).
    pub fast_retransmits: u64,
    /// Times the connection resent its flight because the path MTU went
    /// below the size it was sent at (RFC 1191 §6.5).
    pub path_mtu_resends: u64,
}

/// A loss recovery episode (RFC 6675 §5, RFC 6582 §3.2).
#[derive(Debug, Clone, Copy)]
struct Recovery {
    /// RecoveryPoint: SND.MAX when the episode began; an ACK beyond it
    /// ends the episode.
    point: Seq,
    /// HighRxt + 1: the end of the highest retransmission.
    high_rxt: Seq,
    /// RescueRxt + 1, once the rescue retransmission went out.
    rescue_rxt: Option<Seq>,
    /// Without SACK: the segment at SND.UNA is owed a retransmission.
    resend_head: bool,
}

/// Resending what a lowered path MTU dropped (RFC 1191 §6.5, RFC 8201
/// §5.4): every unSACKed data byte below `end`, in segments of the new
/// MSS. Like a recovery episode it lasts until SND.UNA reaches `end`,
/// and while it lasts holes in the sequence space are the path's doing,
/// not congestion's.
#[derive(Debug, Clone, Copy)]
struct PmtuResend {
    /// The next byte to resend: the end of the last one resent.
    next: Seq,
    /// SND.MAX when the episode began.
    end: Seq,
}

/// A TCP connection.
#[derive(Debug)]
pub struct Connection {
    config: TcpConfig,
    state: State,
    local: SocketAddr,
    remote: SocketAddr,
    /// The local and remote ports, read for every header without matching
    /// on the socket addresses' family.
    ports: (u16, u16),
    error: Option<ConnectionError>,

    iss: Seq,
    /// Our SYN has been acknowledged: SND.UNA is past it for good.
    syn_acked: bool,
    snd_una: Seq,
    snd_nxt: Seq,
    /// The highest sequence number sent plus one (SND.NXT before a
    /// go-back retransmission rewound SND.NXT).
    snd_max: Seq,
    /// One past the last sub-MSS data segment sent while it is
    /// unacknowledged (Linux's `snd_sml`): Nagle holds the next small
    /// segment only while there is one.
    small_sent_end: Option<Seq>,
    snd_wnd: usize,
    snd_wl1: Seq,
    snd_wl2: Seq,
    max_snd_wnd: usize,
    send: SendBuffer,
    /// One past the last byte the application queued: our FIN's sequence
    /// number once it is queued.
    data_end: Seq,
    /// The application closed its direction: a FIN follows the data.
    fin_queued: bool,

    irs: Seq,
    recv: Assembler,
    /// The peer's FIN, once seen (possibly ahead of missing data).
    peer_fin: Option<Seq>,
    /// The peer's FIN has been consumed: RCV.NXT is one past the data.
    fin_received: bool,

    local_options: LocalOptions,
    negotiated: Option<Negotiated>,
    ts_clock: TimestampClock,
    ts_recent: u32,
    ts_recent_at: Instant,

    rtt: RttEstimator,
    karn: KarnSampler,
    cc: Controller,
    scoreboard: Scoreboard,
    dup_acks: usize,
    recovery: Option<Recovery>,
    /// SND.MAX when the send MSS last went down with data in flight: the
    /// bytes below were sent in segments sized for the old MSS, which the
    /// path may have dropped as too big. `None` once a resend covers
    /// them, or after a timeout resent them all.
    sent_before_mss_drop: Option<Seq>,
    pmtu_resend: Option<PmtuResend>,
    /// Data in flight last sent in segments smaller than the MSS: what a
    /// path-MTU resend may skip.
    small_segments: SmallSegments,
    timers: Timers,
    retries: u32,

    /// An ACK is owed now.
    ack_now: bool,
    /// Further immediate ACKs owed, one per out-of-order or duplicate
    /// segment (RFC 5681 §4.2: each is answered, so the sender counts
    /// duplicate ACKs), at most [`MAX_OWED_ACKS`].
    owed_acks: u32,
    /// The persist timer fired: a zero-window probe is owed.
    probe_due: bool,
    /// The keep-alive timer fired: a keep-alive probe is owed.
    keepalive_due: bool,
    /// Keep-alive probes sent since the peer was last heard.
    keepalive_probes: u32,
    /// Persist intervals doubled so far (RFC 9293 §3.8.6.1: exponential
    /// backoff, no limit on the number of probes).
    persist_backoff: u32,
    /// Full-sized segments received since the last ACK (RFC 9293
    /// §3.8.6.3: ACK at least every second one).
    unacked_segments: u32,
    /// The segment just taken is owed an immediate ACK of its own (out of
    /// order, duplicate or filling a gap), sent by
    /// [`poll_ack`](Self::poll_ack) before the next segment is taken.
    segment_ack_due: bool,
    /// [`poll_ack`](Self::poll_ack) acknowledged part of the segments
    /// arriving in this poll: the rest of the batch is acknowledged at the
    /// poll's output, not left to the delayed-ACK timer.
    batch_acked: bool,
    /// The largest in-order segment received: the peer's segment size as
    /// seen (Linux's `rcv_mss` estimate).
    largest_segment: usize,
    /// A segment shorter than `largest_segment` is waiting for a delayed
    /// ACK: the end of a write, after which a Nagle sender waits.
    small_segment_unacked: bool,
    counters: TcpCounters,
    flow: Flow,
    /// Segmentation offload on the route's interface: new data goes out
    /// in super-segments of up to 64 KiB (`iface::offload`).
    tso: bool,
    /// Tests: every segment takes the full path, none the predicted one.
    #[cfg(test)]
    unpredicted: bool,
}

impl Connection {
    fn new(
        config: TcpConfig,
        local: SocketAddr,
        remote: SocketAddr,
        iss: Seq,
        mss: u16,
        now: Instant,
        flow: Flow,
    ) -> Self {
        let recv_buffer = config.recv_buffer.clamp(1, super::assembler::MAX_CAPACITY);
        let mut recv = Assembler::new(AssemblerConfig {
            capacity: recv_buffer,
            max_ranges: ranges_for(recv_buffer),
            ..AssemblerConfig::default()
        })
        .unwrap_or_else(|_| Assembler::new(AssemblerConfig::default()).expect("default config"));
        recv.set_flow(flow);
        let local_options = LocalOptions {
            mss,
            window_shift: options::window_shift_for(recv_buffer),
            sack: config.sack,
            timestamps: config.timestamps,
        };
        Self {
            config,
            state: State::Closed,
            local,
            remote,
            ports: (local.port(), remote.port()),
            error: None,
            iss,
            syn_acked: false,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            small_sent_end: None,
            snd_wnd: 0,
            snd_wl1: Seq(0),
            snd_wl2: Seq(0),
            max_snd_wnd: 0,
            send: SendBuffer::new(config.send_buffer),
            data_end: iss + 1,
            fin_queued: false,
            irs: Seq(0),
            recv,
            peer_fin: None,
            fin_received: false,
            local_options,
            negotiated: None,
            ts_clock: TimestampClock::new(Duration::from_millis(1), iss.0),
            ts_recent: 0,
            ts_recent_at: now,
            rtt: RttEstimator::new(config.rtt),
            karn: KarnSampler::new(),
            cc: Controller::new(&config.congestion, usize::from(mss.max(1))),
            scoreboard: Scoreboard::new(usize::from(mss.max(1)), ranges_for(config.send_buffer))
                .expect("a non-zero MSS and a small range cap are valid"),
            dup_acks: 0,
            recovery: None,
            sent_before_mss_drop: None,
            pmtu_resend: None,
            small_segments: SmallSegments::new(small_segments::DEFAULT_CAPACITY),
            timers: Timers::default(),
            retries: 0,
            ack_now: false,
            owed_acks: 0,
            probe_due: false,
            keepalive_due: false,
            keepalive_probes: 0,
            persist_backoff: 0,
            unacked_segments: 0,
            segment_ack_due: false,
            batch_acked: false,
            largest_segment: 0,
            small_segment_unacked: false,
            counters: TcpCounters::default(),
            flow,
            tso: false,
            #[cfg(test)]
            unpredicted: false,
        }
    }

    /// An active open (RFC 9293 §3.10.1): SYN-SENT, the SYN goes out at
    /// the next [`poll_output`](Self::poll_output). `mss` is the MSS
    /// option for the outgoing interface.
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        config: TcpConfig,
        local: SocketAddr,
        remote: SocketAddr,
        iss: Seq,
        mss: u16,
        now: Instant,
        flow: Flow,
    ) -> Self {
        let mut c = Self::new(config, local, remote, iss, mss, now, flow);
        c.state = State::SynSent;
        c
    }

    /// A passive open: a listener received `syn` (RFC 9293 §3.10.7.2,
    /// "LISTEN", third check). SYN-RECEIVED; the SYN-ACK goes out next.
    #[allow(clippy::too_many_arguments)]
    pub fn accept(
        config: TcpConfig,
        local: SocketAddr,
        remote: SocketAddr,
        syn: &TcpRepr,
        iss: Seq,
        mss: u16,
        now: Instant,
        flow: Flow,
    ) -> Self {
        let mut c = Self::new(config, local, remote, iss, mss, now, flow);
        c.take_syn(syn, now);
        c.state = State::SynReceived;
        c
    }

    /// A connection a listener rebuilds from a valid SYN cookie (RFC 4987
    /// §3.6) when the handshake's final ACK arrives: ESTABLISHED at once,
    /// with the peer's MSS from the cookie and none of the options a
    /// cookie cannot carry (window scaling, SACK, timestamps).
    #[allow(clippy::too_many_arguments)]
    pub fn from_cookie(
        config: TcpConfig,
        local: SocketAddr,
        remote: SocketAddr,
        iss: Seq,
        irs: Seq,
        peer_mss: usize,
        ack: &TcpRepr,
        mss: u16,
        now: Instant,
        flow: Flow,
    ) -> Self {
        let mut c = Self::new(config, local, remote, iss, mss, now, flow);
        c.irs = irs;
        c.recv.start(irs + 1);
        c.recv.reserve();
        c.local_options.window_shift = 0;
        c.local_options.sack = false;
        c.local_options.timestamps = false;
        let send_mss = peer_mss.min(usize::from(mss)).max(1);
        c.negotiated = Some(Negotiated {
            send_mss,
            send_window_shift: 0,
            recv_window_shift: 0,
            sack: false,
            timestamps: false,
        });
        c.cc.set_mss(send_mss);
        c.scoreboard.set_smss(send_mss);
        c.snd_una = iss + 1;
        c.syn_acked = true;
        c.snd_nxt = iss + 1;
        c.snd_max = iss + 1;
        c.data_end = iss + 1;
        c.snd_wnd = usize::from(ack.window_len);
        c.max_snd_wnd = c.snd_wnd;
        c.snd_wl1 = Seq(ack.seq_number);
        c.snd_wl2 = iss + 1;
        c.state = State::Established;
        c.heard_from_peer(now);
        c
    }

    // ----- What the application sees ---------------------------------------

    pub fn state(&self) -> State {
        self.state
    }

    pub fn error(&self) -> Option<ConnectionError> {
        self.error
    }

    pub fn local(&self) -> SocketAddr {
        self.local
    }

    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    pub fn counters(&self) -> TcpCounters {
        self.counters
    }

    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated
    }

    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    pub fn congestion(&self) -> &Controller {
        &self.cc
    }

    /// Queues application bytes; returns how many were taken (0 when the
    /// send queue is full). Only in states that may send.
    pub fn send(&mut self, pool: &Pool, data: &[u8]) -> Result<usize, PacketError> {
        if !(self.state.can_send()
            || self.state == State::SynSent
            || self.state == State::SynReceived)
            || self.fin_queued
        {
            return Ok(0);
        }
        let taken = self.send.write(pool, self.flow, data)?;
        self.data_end += taken;
        Ok(taken)
    }

    /// The application closed the sending direction (a FIN is queued or
    /// sent).
    pub fn send_closed(&self) -> bool {
        self.fin_queued
    }

    /// The settings the connection was opened with (its buffer sizes and
    /// congestion control, for a run's record).
    pub fn config(&self) -> &TcpConfig {
        &self.config
    }

    /// Bytes of memory the connection holds, about: its own struct, the
    /// receive ring and range list once allocated, and the send queue.
    /// What a listener counts against its byte bound.
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.recv.heap_bytes() + self.send.len()
    }

    /// Bytes in the send queue: unacknowledged and unsent.
    pub fn send_queued(&self) -> usize {
        self.send.len()
    }

    /// Lowers the send MSS to what the path carries: `path_mss` is the
    /// path MTU less the IP and TCP headers (RFC 9293 §3.7.1: the
    /// effective send MSS is bounded by the path MTU, RFC 8201 / RFC
    /// 1191); the timestamp option's bytes come off it too. A larger
    /// value changes nothing. Returns whether the MSS went down.
    ///
    /// The congestion window keeps its bytes (RFC 1191 §6.5: a smaller
    /// PMTU "should not change the congestion window"). What is in flight
    /// is resent only on a Packet Too Big about it
    /// ([`on_packet_too_big`](Self::on_packet_too_big)).
    pub fn clamp_to_path_mss(&mut self, path_mss: usize) -> bool {
        let Some(n) = &mut self.negotiated else {
            return false;
        };
        let options = if n.timestamps {
            options::TIMESTAMPS_OPTION
        } else {
            0
        };
        let mss = path_mss.saturating_sub(options).max(1);
        if mss >= n.send_mss {
            return false;
        }
        n.send_mss = mss;
        self.cc.set_mss(mss);
        self.scoreboard.set_smss(mss);
        self.sent_before_mss_drop = (self.snd_una != self.snd_max).then_some(self.snd_max);
        true
    }

    /// Whether an ICMP error quoting our segment at `seq` can be about a
    /// segment this connection has in flight: SND.UNA ≤ `seq` < SND.NXT
    /// (RFC 5927 §7.2, the check RFC 5961 makes of RSTs applied to ICMP
    /// errors). SND.NXT is taken as the highest sequence number sent
    /// (SND.MAX): after a timeout rewound SND.NXT, the segments beyond it
    /// were still sent, and errors about them still arrive.
    pub fn has_in_flight(&self, seq: Seq) -> bool {
        seq.in_range(self.snd_una, self.snd_max)
    }

    /// A Packet Too Big or Fragmentation Needed about our segment at
    /// `seq`, which the caller checked with
    /// [`has_in_flight`](Self::has_in_flight): the path carries `path_mss`
    /// (as for [`clamp_to_path_mss`](Self::clamp_to_path_mss)).
    ///
    /// RFC 1191 §6.5 (RFC 8201 §5.4 refers to it): the router dropped the
    /// segment, and "the retransmission could be done in immediate
    /// response", in segments no larger than the new PMTU — but only if
    /// the error "actually decreases the PMTU" the segment was sent with,
    /// or a burst of errors about one flight would resend it once per
    /// error. So when `seq` lies in what was sent before the MSS last went
    /// down, everything then in flight, not SACKed and last sent in a
    /// segment larger than the new MSS is deemed lost and resent, once
    /// (as Linux's `tcp_simple_retransmit` marks every segment larger
    /// than the new MSS lost); the congestion window and ssthresh stay as
    /// they are (§6.5: it "should not change the congestion window").
    pub fn on_packet_too_big(&mut self, path_mss: usize, seq: Seq) {
        self.clamp_to_path_mss(path_mss);
        let Some(end) = self.sent_before_mss_drop else {
            return;
        };
        if !self.has_in_flight(seq) || seq >= end {
            return;
        }
        self.sent_before_mss_drop = None;
        self.start_pmtu_resend(end);
    }

    /// Begins resending the data of `snd_una..end` (see
    /// [`PmtuResend`]).
    fn start_pmtu_resend(&mut self, end: Seq) {
        let end = end.min(self.snd_max);
        // Only data was too big: a FIN alone is resent by the timer.
        if end.min(self.data_end) <= self.data_una() {
            return;
        }
        // The episode resends everything below `end`: a go-back-N after a
        // timeout, sending at the old size, stops here.
        self.snd_nxt = self.snd_max;
        // Karn (RFC 6298 §3): the segment being timed may be among those
        // resent; its ACK would time the wrong transmission.
        self.karn.on_retransmit();
        self.pmtu_resend = Some(PmtuResend {
            next: self.snd_una,
            end,
        });
        self.counters.path_mtu_resends += 1;
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// Traces this connection's probes (the SunOS study's `SO_LOG`): with
    /// the gate in mode `traced_flows` only traced flows record, and its
    /// packets carry the trace option so the peer traces them too.
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
        self.recv.set_flow(self.flow);
    }

    /// Room in the send queue.
    pub fn send_room(&self) -> usize {
        if self.fin_queued {
            0
        } else {
            self.send.free()
        }
    }

    /// Copies received in-order bytes out; opening the window may owe
    /// the peer a window update.
    pub fn recv(&mut self, out: &mut [u8]) -> usize {
        let before = self.recv.window();
        let n = self.recv.read(out);
        // RFC 9293 §3.8.6.2.2: tell the peer once the window opened by at
        // least one MSS or half the buffer (receiver-side SWS avoidance).
        // Only a read that took bytes opens it: with a buffer smaller than
        // an MSS, an empty read must not send the same ACK again.
        let mss = usize::from(self.local_options.mss).max(1);
        let threshold = mss.min(self.recv.capacity() / 2).max(1);
        if n > 0 && before < threshold && self.recv.window() >= threshold {
            self.ack_now = true;
        }
        // A reader that empties the buffer after a short segment sends the
        // delayed ACK at once (as Linux does): the sender's Nagle
        // algorithm holds its next short segment until that ACK, and with
        // a small window the two would otherwise wait out the delayed-ACK
        // timer on every write.
        if n > 0 && self.small_segment_unacked && self.recv.readable() == 0 {
            self.ack_now = true;
        }
        n
    }

    /// Bytes ready for [`recv`](Self::recv).
    pub fn readable(&self) -> usize {
        self.recv.readable()
    }

    /// True once the peer's FIN has arrived and every byte before it has
    /// been read: reads will return nothing more.
    pub fn at_eof(&self) -> bool {
        self.fin_received && self.recv.readable() == 0
    }

    /// Closes our direction (RFC 9293 §3.10.4): a FIN follows the queued
    /// data.
    pub fn close(&mut self) {
        match self.state {
            // RFC 9293 §3.10.4: with nothing queued, a CLOSE in SYN-SENT
            // deletes the connection; with data queued, the FIN waits
            // for the handshake, as the RFC has it for SYN-RECEIVED, so a
            // connect-write-shutdown sequence loses nothing.
            State::SynSent if self.data_end == self.iss + 1 => {
                self.state = State::Closed;
                self.timers = Timers::default();
            }
            State::SynSent => self.fin_queued = true,
            State::SynReceived | State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Aborts (RFC 9293 §3.10.5): the RST to send, if the peer knows of
    /// the connection.
    pub fn abort(&mut self) -> Option<TcpRepr> {
        let rst = self.state.is_synchronized() || self.state == State::SynReceived;
        self.state = State::Closed;
        self.timers = Timers::default();
        // <SEQ=SND.NXT> (RFC 9293 §3.10.5) is the highest sequence sent,
        // SND.MAX here: after a timeout rewound SND.NXT, a RST numbered
        // there could fall below the peer's window and be ignored (RFC
        // 5961 §3.2).
        rst.then(|| self.bare(self.snd_max, None, TcpFlags::RST))
    }
}
