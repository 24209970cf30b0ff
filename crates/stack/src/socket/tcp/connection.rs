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

use std::net::SocketAddr;
use std::time::Duration;

use probe::Flow;
use wire::tcp::{TcpFlags, TcpRepr, MAX_SACK_BLOCKS};

use super::assembler::{self, Assembler, AssemblerConfig, SackBlocks};
use super::congestion::{CongestionConfig, CongestionControl, Controller};
use super::options::{self, LocalOptions, Negotiated};
use super::rtt::{KarnSampler, RttConfig, RttEstimator, TimestampClock};
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

/// A connection's settings.
#[derive(Debug, Clone, Copy)]
pub struct TcpConfig {
    /// Bytes the send queue holds (SO_SNDBUF).
    pub send_buffer: usize,
    /// Bytes the receive buffer holds (SO_RCVBUF); bounds the window.
    pub recv_buffer: usize,
    pub sack: bool,
    pub timestamps: bool,
    /// TCP_NODELAY: send small segments while data is in flight (no
    /// Nagle, RFC 9293 §3.7.4).
    pub nodelay: bool,
    /// The longest an ACK is delayed (RFC 9293 §3.8.6.3: < 0.5 s).
    pub delayed_ack: Duration,
    /// How long TIME-WAIT lasts: 2·MSL (RFC 9293 §3.4.2).
    pub time_wait: Duration,
    /// Retransmissions of one segment before the connection is dropped
    /// (RFC 9293 §3.8.3, R2).
    pub max_retries: u32,
    /// Keep-alive probing (SO_KEEPALIVE), off by default (RFC 9293
    /// §3.8.4: it MUST default to off).
    pub keepalive: Option<Keepalive>,
    pub rtt: RttConfig,
    pub congestion: CongestionConfig,
}

/// When an idle connection is probed (RFC 1122 §4.2.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Silence before the first probe (RFC 9293 §3.8.4: no less than two
    /// hours by default; settable).
    pub idle: Duration,
    /// Between unanswered probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is dropped.
    pub count: u32,
}

impl Default for Keepalive {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(2 * 3600),
            interval: Duration::from_secs(75),
            count: 9,
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            sack: true,
            timestamps: true,
            nodelay: false,
            delayed_ack: Duration::from_millis(40),
            time_wait: Duration::from_secs(60),
            max_retries: 15,
            keepalive: None,
            rtt: RttConfig::default(),
            congestion: CongestionConfig::default(),
        }
    }
}

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

    // ----- Arriving segments -----------------------------------------------

    /// Processes an arriving segment (RFC 9293 §3.10.7), its payload
    /// already checked against the checksum. The payload is given as the
    /// parts it lies in, in order (one slice for a segment received whole;
    /// the pieces of the buffers of a segment receive offload merged or IP
    /// reassembled), so it is copied once, into the receive buffer.
    pub fn input(
        &mut self,
        now: Instant,
        seg: &TcpRepr,
        payload: &[&[u8]],
        challenges: &mut ChallengeLimiter,
    ) -> Reply {
        self.counters.segments_received += 1;
        match self.state {
            State::Closed | State::Listen => Reply::Nothing,
            State::SynSent => self.input_syn_sent(now, seg),
            State::Established => {
                let payload_len = assembler::payload_len(payload);
                if self.predicted(seg, payload_len) {
                    self.input_predicted(now, seg, payload, payload_len);
                    self.heard_from_peer(now);
                    Reply::Nothing
                } else {
                    self.input_synchronizing(now, seg, payload, challenges)
                }
            }
            _ => self.input_synchronizing(now, seg, payload, challenges),
        }
    }

    /// Header prediction (Van Jacobson's; BSD's `tcp_input` and Linux's
    /// `tcp_rcv_established` fast path): an ESTABLISHED segment without
    /// SYN, RST or FIN, at RCV.NXT and within the window, its ACK
    /// acceptable and no older than SND.UNA, its timestamp no older than
    /// TS.Recent. Every check of §3.10.7.4 before the ACK field is then
    /// known to pass, and [`input_predicted`](Self::input_predicted) does
    /// what the full path does for it without asking again.
    #[inline]
    fn predicted(&self, seg: &TcpRepr, payload_len: usize) -> bool {
        #[cfg(test)]
        if self.unpredicted {
            return false;
        }
        let (Some(ack), Some((tsval, _))) = (seg.ack_number.map(Seq), seg.timestamps) else {
            return false;
        };
        let rcv_nxt = self.rcv_nxt();
        !seg.flags
            .intersects(TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST)
            && self.negotiated.is_some_and(|n| n.timestamps)
            // RFC 7323 §5.3: not older than TS.Recent, so PAWS passes.
            && tsval.wrapping_sub(self.ts_recent) as i32 >= 0
            && Seq(seg.seq_number) == rcv_nxt
            // §3.10.7.4's acceptability, for a segment at RCV.NXT.
            && seg.payload_len == payload_len
            && payload_len <= self.recv.window()
            && self.snd_una <= ack
            && rules::ack_acceptable(ack, self.snd_una, self.snd_max, self.max_snd_wnd)
    }

    /// [`input_checked`](Self::input_checked) for a segment
    /// [`predicted`](Self::predicted) holds for: its ACK, TS.Recent, its
    /// payload (no SYN, RST or FIN to look at).
    fn input_predicted(&mut self, now: Instant, seg: &TcpRepr, payload: &[&[u8]], len: usize) {
        let seq = Seq(seg.seq_number);
        if let Some(ack) = seg.ack_number {
            self.take_ack(now, seq, Seq(ack), seg);
        }
        // RFC 7323 §4.3: the segment covers RCV.NXT, so its TSval is
        // TS.Recent now.
        if let Some((tsval, _)) = seg.timestamps {
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
        if len > 0 && self.state.can_receive() {
            self.take_payload(seq, payload, len);
        }
        self.try_consume_fin(now);
    }

    /// SYN-SENT (§3.10.7.3).
    fn input_syn_sent(&mut self, now: Instant, seg: &TcpRepr) -> Reply {
        let ack = seg.ack_number.map(Seq);
        if let Some(ack) = ack {
            if ack <= self.iss || ack > self.snd_max {
                if seg.flags.contains(TcpFlags::RST) {
                    return Reply::Nothing;
                }
                return Reply::Rst(self.bare(ack, None, TcpFlags::RST));
            }
        }
        if seg.flags.contains(TcpFlags::RST) {
            if ack.is_some() {
                self.fail(ConnectionError::Refused);
            }
            return Reply::Nothing;
        }
        if !seg.flags.contains(TcpFlags::SYN) {
            return Reply::Nothing;
        }
        self.take_syn(seg, now);
        match ack {
            Some(ack) => {
                self.take_ack_of_syn(ack, seg, now);
                self.state = if self.fin_queued {
                    State::FinWait1
                } else {
                    State::Established
                };
                self.ack_now = true;
                self.heard_from_peer(now);
            }
            None => {
                // Simultaneous open (§3.5, Figure 8): answer with SYN-ACK.
                self.state = State::SynReceived;
                self.snd_nxt = self.iss;
            }
        }
        Reply::Nothing
    }

    /// Records the peer's SYN: IRS, RCV.NXT and the negotiated options.
    fn take_syn(&mut self, syn: &TcpRepr, now: Instant) {
        self.irs = Seq(syn.seq_number);
        self.recv.start(self.irs + 1);
        let ipv6 = self.remote.is_ipv6();
        let negotiated = options::negotiate(
            &self.local_options,
            syn,
            ipv6,
            usize::from(self.local_options.mss),
        );
        self.cc.set_mss(negotiated.send_mss);
        self.scoreboard.set_smss(negotiated.send_mss);
        if let (true, Some((tsval, _))) = (negotiated.timestamps, syn.timestamps) {
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
        self.negotiated = Some(negotiated);
        // The window in a SYN is never scaled (RFC 7323 §2.2).
        self.snd_wnd = usize::from(syn.window_len);
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = self.irs;
    }

    /// Our SYN is acknowledged.
    fn take_ack_of_syn(&mut self, ack: Seq, seg: &TcpRepr, now: Instant) {
        // Synchronized: now the receive ring is worth its memory (a
        // half-open connection holds none, see `Assembler`).
        self.recv.reserve();
        self.snd_una = ack;
        self.syn_acked = true;
        self.snd_wl2 = ack;
        self.timers.cancel(Timer::Retransmit);
        self.retries = 0;
        if let Some(rtt) = self.karn.on_ack(ack, now) {
            self.rtt.sample(rtt);
        }
        if seg.flags.contains(TcpFlags::SYN) {
            self.snd_wnd = usize::from(seg.window_len);
        } else {
            self.snd_wnd = self.scaled_window(seg.window_len);
            self.snd_wl1 = Seq(seg.seq_number);
        }
        self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
    }

    fn scaled_window(&self, field: u16) -> usize {
        let shift = self.negotiated.map_or(0, |n| n.send_window_shift);
        usize::from(field) << shift
    }

    /// Every state from SYN-RECEIVED on (§3.10.7.4).
    fn input_synchronizing(
        &mut self,
        now: Instant,
        seg: &TcpRepr,
        payload: &[&[u8]],
        challenges: &mut ChallengeLimiter,
    ) -> Reply {
        let reply = self.input_checked(now, seg, payload, challenges);
        self.heard_from_peer(now);
        reply
    }

    /// The peer is alive: restart the keep-alive clock.
    fn heard_from_peer(&mut self, now: Instant) {
        self.keepalive_probes = 0;
        self.keepalive_due = false;
        match self.config.keepalive {
            Some(keepalive) if self.state.is_synchronized() && self.state != State::TimeWait => {
                self.timers.set(Timer::Keepalive, now + keepalive.idle);
            }
            _ => self.timers.cancel(Timer::Keepalive),
        }
    }

    /// RFC 1122 §4.2.3.6: probe, and give up after `count` unanswered
    /// probes.
    fn on_keepalive_timeout(&mut self, now: Instant) {
        let Some(keepalive) = self.config.keepalive else {
            return;
        };
        if self.keepalive_probes >= keepalive.count {
            self.fail(ConnectionError::TimedOut);
            return;
        }
        self.keepalive_probes += 1;
        self.keepalive_due = true;
        self.timers.set(Timer::Keepalive, now + keepalive.interval);
    }

    fn input_checked(
        &mut self,
        now: Instant,
        seg: &TcpRepr,
        payload: &[&[u8]],
        challenges: &mut ChallengeLimiter,
    ) -> Reply {
        let seq = Seq(seg.seq_number);
        let seg_len = seg.segment_len();
        let rcv_nxt = self.rcv_nxt();
        let rcv_wnd = self.recv.window();

        // PAWS (RFC 7323 §5.3) before the sequence check.
        let timestamps = self.negotiated.is_some_and(|n| n.timestamps);
        if timestamps && !seg.flags.contains(TcpFlags::RST) {
            if let Some((tsval, _)) = seg.timestamps {
                let idle = now.saturating_duration_since(self.ts_recent_at);
                if options::paws_rejects(self.ts_recent, idle, tsval) {
                    self.counters.dropped_paws += 1;
                    self.ack_now = true;
                    return Reply::Nothing;
                }
            }
        }

        // First: sequence acceptability.
        if !rules::acceptable(seq, seg_len, rcv_nxt, rcv_wnd) {
            self.counters.dropped_unacceptable += 1;
            if !seg.flags.contains(TcpFlags::RST) {
                self.ack_now = true;
            }
            return Reply::Nothing;
        }

        // Second: RST (RFC 5961 §3.2).
        if seg.flags.contains(TcpFlags::RST) {
            match rules::rst_verdict(seq, rcv_nxt, rcv_wnd) {
                RstVerdict::Reset => {
                    let error = if self.state == State::SynReceived {
                        ConnectionError::Refused
                    } else {
                        ConnectionError::Reset
                    };
                    self.fail(error);
                }
                RstVerdict::Challenge => self.challenge(now, challenges),
                RstVerdict::Drop => {}
            }
            return Reply::Nothing;
        }

        // Fourth: a SYN in a synchronized state is answered with a
        // challenge ACK and otherwise ignored (RFC 5961 §4.2).
        if seg.flags.contains(TcpFlags::SYN) && self.state != State::SynReceived {
            self.challenge(now, challenges);
            return Reply::Nothing;
        }

        // Fifth: the ACK field.
        let Some(ack) = seg.ack_number.map(Seq) else {
            return Reply::Nothing;
        };
        if self.state == State::SynReceived {
            if self.snd_una < ack && ack <= self.snd_max {
                self.take_ack_of_syn(ack, seg, now);
                self.state = if self.fin_queued {
                    State::FinWait1
                } else {
                    State::Established
                };
            } else {
                return Reply::Rst(self.bare(ack, None, TcpFlags::RST));
            }
        }
        if !rules::ack_acceptable(ack, self.snd_una, self.snd_max, self.max_snd_wnd) {
            // RFC 5961 §5.2: too old or not yet sent: ACK and drop. The
            // ACK is a challenge ACK, under the §7 limit like the others.
            self.challenge(now, challenges);
            return Reply::Nothing;
        }
        self.take_ack(now, seq, ack, seg);

        // Timestamps: update TS.Recent for segments covering RCV.NXT
        // (RFC 7323 §4.3).
        if let (true, Some((tsval, _))) = (timestamps, seg.timestamps) {
            if seq <= rcv_nxt {
                self.ts_recent = tsval;
                self.ts_recent_at = now;
            }
        }

        // Seventh: the payload.
        let payload_len = assembler::payload_len(payload);
        if payload_len > 0 && self.state.can_receive() {
            self.take_payload(seq, payload, payload_len);
        }

        // Eighth: FIN.
        if seg.flags.contains(TcpFlags::FIN) {
            self.peer_fin.get_or_insert(seq + payload_len);
            self.ack_now = true;
        }
        self.try_consume_fin(now);
        Reply::Nothing
    }

    fn challenge(&mut self, now: Instant, challenges: &mut ChallengeLimiter) {
        if challenges.allow(now) {
            self.counters.challenge_acks += 1;
            self.ack_now = true;
        }
    }

    /// An acceptable ACK (§3.10.7.4, fifth check, ESTABLISHED and on).
    fn take_ack(&mut self, now: Instant, seq: Seq, ack: Seq, seg: &TcpRepr) {
        let _span = probe::span_with(TCP_ACK_ENTER, TCP_ACK_EXIT, self.flow, || {
            (ack.since(self.snd_una) as u32, 0)
        });
        let sack = self.negotiated.is_some_and(|n| n.sack);
        let window_before = self.snd_wnd;
        let advanced = ack > self.snd_una;
        let acked = ack.since(self.snd_una);
        if advanced {
            // Bytes of data acknowledged: not the SYN, not our FIN.
            let data_acked = ack.min(self.data_end).since(self.data_una());
            self.send.acknowledge(data_acked);
            let fin_acked = self.fin_queued && ack == self.data_end + 1;
            self.snd_una = ack;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.retries = 0;
            let sample = self
                .timestamp_sample(now, seg)
                .or_else(|| self.karn.on_ack(ack, now));
            if let Some(rtt) = sample {
                self.rtt.sample(rtt);
            }
            self.end_pmtu_resend();
            let flight = self.snd_max.since(self.snd_una);
            self.cc.on_ack(now, acked, flight, self.rtt.srtt());
            // RFC 6298 §5.2 and §5.3: stop the timer when all is
            // acknowledged, otherwise restart it.
            if self.snd_una == self.snd_max {
                self.timers.cancel(Timer::Retransmit);
            } else {
                self.timers.set(Timer::Retransmit, now + self.rtt.rto());
            }
            if fin_acked {
                self.our_fin_acked(now);
            }
        }
        // An ACK without blocks while nothing is SACKed (the common case)
        // leaves the scoreboard as it is: no update to make.
        let no_blocks = seg.sack_ranges.iter().all(Option::is_none);
        let newly_sacked = if sack && !(no_blocks && self.scoreboard.is_empty()) {
            let blocks = SackBlocks::from_wire(&seg.sack_ranges);
            self.scoreboard
                .update(self.snd_una, self.snd_max, blocks.as_slice())
                .is_duplicate_ack()
        } else {
            false
        };
        self.detect_loss(now, ack, acked, advanced, newly_sacked, seg, window_before);
        // The send window (§3.10.7.4: only from segments no older than the
        // last window update).
        if self.snd_wl1 < seq || (self.snd_wl1 == seq && self.snd_wl2 <= ack) {
            self.snd_wnd = self.scaled_window(seg.window_len);
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
            if self.snd_wnd > 0 {
                self.timers.cancel(Timer::Persist);
                self.probe_due = false;
                self.persist_backoff = 0;
            }
        }
    }

    /// Forgets path-MTU state SND.UNA has passed: the resend episode is
    /// over once everything it resent is acknowledged.
    fn end_pmtu_resend(&mut self) {
        self.small_segments.acknowledge(self.snd_una);
        if self.pmtu_resend.is_some_and(|e| self.snd_una >= e.end) {
            self.pmtu_resend = None;
        }
        if self
            .sent_before_mss_drop
            .is_some_and(|end| self.snd_una >= end)
        {
            self.sent_before_mss_drop = None;
        }
    }

    /// Duplicate ACKs, entering and leaving loss recovery (RFC 6675 §5
    /// with SACK, RFC 6582 §3.2 without).
    #[allow(clippy::too_many_arguments)]
    fn detect_loss(
        &mut self,
        now: Instant,
        ack: Seq,
        acked: usize,
        advanced: bool,
        newly_sacked: bool,
        seg: &TcpRepr,
        window_before: usize,
    ) {
        let sack = self.negotiated.is_some_and(|n| n.sack);
        let flight = self.snd_max.since(self.snd_una);
        if advanced {
            self.dup_acks = 0;
            if let Some(recovery) = &mut self.recovery {
                if ack >= recovery.point {
                    // A full acknowledgment ends the episode.
                    self.recovery = None;
                    self.cc.on_recovery_exit(now, flight);
                } else if !sack {
                    // NewReno partial ACK (RFC 6582 §3.2 step 3): the next
                    // hole is at SND.UNA; deflate the window by what left.
                    recovery.resend_head = true;
                    self.cc.on_partial_ack(acked);
                }
            }
            return;
        }
        // RFC 6675 §2: with SACK a duplicate ACK is one that SACKs new
        // data; RFC 5681 §2: without, one that changes nothing while data
        // is outstanding.
        let duplicate = if sack {
            newly_sacked
        } else {
            seg.payload_len == 0
                && self.snd_una != self.snd_max
                && self.scaled_window(seg.window_len) == window_before
                && !seg.flags.contains(TcpFlags::SYN)
                && !seg.flags.contains(TcpFlags::FIN)
        };
        if !duplicate {
            return;
        }
        self.dup_acks += 1;
        if self.recovery.is_some() {
            if !sack {
                // RFC 5681 §3.2 step 4: inflate by one segment.
                self.cc.on_duplicate_acks(1);
            }
            return;
        }
        if self.pmtu_resend.is_some() {
            // The holes are what the path dropped as too big, being resent
            // now: not a congestion signal (RFC 1191 §6.5).
            return;
        }
        let enter = if sack {
            self.scoreboard
                .should_enter_recovery(self.dup_acks, self.snd_una)
        } else {
            self.dup_acks >= DUP_THRESH
        };
        if enter {
            self.counters.fast_recoveries += 1;
            self.cc.on_congestion_event(now, flight);
            if !sack {
                self.cc.on_duplicate_acks(DUP_THRESH);
            }
            self.karn.on_retransmit();
            self.recovery = Some(Recovery {
                point: self.snd_max,
                high_rxt: self.snd_una,
                rescue_rxt: None,
                resend_head: true,
            });
        }
    }

    fn timestamp_sample(&self, now: Instant, seg: &TcpRepr) -> Option<Duration> {
        if !self.negotiated.is_some_and(|n| n.timestamps) {
            return None;
        }
        seg.timestamps
            .and_then(|(_, tsecr)| self.ts_clock.rtt_sample(now, tsecr))
    }

    fn our_fin_acked(&mut self, now: Instant) {
        match self.state {
            State::FinWait1 => self.state = State::FinWait2,
            State::Closing => self.enter_time_wait(now),
            State::LastAck => self.state = State::Closed,
            _ => {}
        }
    }

    /// Takes the `len` bytes of `payload` (its parts) in at `seq`.
    fn take_payload(&mut self, seq: Seq, payload: &[&[u8]], len: usize) {
        let outcome = self.recv.write(seq, payload);
        if outcome.advanced == 0 || outcome.fills_gap || self.recv.has_holes() {
            // Out of order, duplicate or filling a gap: ACK at once (RFC
            // 5681 §4.2), once per segment, so the sender's duplicate ACKs
            // flow even when several arrive together.
            if self.ack_now {
                self.owed_acks = (self.owed_acks + 1).min(MAX_OWED_ACKS);
            }
            self.ack_now = true;
            self.segment_ack_due = true;
        } else {
            // In order: ACK every second segment (RFC 9293 §3.8.6.3 asks
            // for at least every second full-sized one; the sender's
            // segment size after options is not known here, so every
            // data segment counts), otherwise within the delayed-ACK time.
            // A segment receive offload merged counts as the full-sized
            // segments it holds.
            let mss = usize::from(self.local_options.mss).max(1);
            let segments = len.div_ceil(mss).max(1);
            self.unacked_segments = self
                .unacked_segments
                .saturating_add(u32::try_from(segments).unwrap_or(u32::MAX));
            if segments == 1 {
                self.largest_segment = self.largest_segment.max(len);
                if len < self.largest_segment {
                    self.small_segment_unacked = true;
                }
            }
            if self.unacked_segments >= 2 {
                self.ack_now = true;
            }
        }
    }

    /// Consumes the peer's FIN once every byte before it has arrived.
    fn try_consume_fin(&mut self, now: Instant) {
        let Some(fin) = self.peer_fin else { return };
        if self.fin_received || self.recv.rcv_nxt() != fin {
            return;
        }
        self.fin_received = true;
        self.ack_now = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                if self.snd_una == self.data_end + 1 {
                    self.enter_time_wait(now);
                } else {
                    self.state = State::Closing;
                }
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.timers.cancel(Timer::Retransmit);
        self.timers.set(Timer::Linger, now + self.config.time_wait);
    }

    fn fail(&mut self, error: ConnectionError) {
        self.error = Some(error);
        self.state = State::Closed;
        self.timers = Timers::default();
    }

    // ----- Sequence-space bookkeeping --------------------------------------

    /// RCV.NXT: past the in-order data, and the peer's FIN once taken.
    /// The sequence number of the first data byte the send queue holds:
    /// SND.UNA once our SYN is acknowledged, ISS + 1 before. A flag, not a
    /// comparison with ISS + 1: modulo 2^32 that comparison flips once
    /// 2^31 bytes have gone by.
    fn data_una(&self) -> Seq {
        if self.syn_acked {
            self.snd_una
        } else {
            self.iss + 1
        }
    }

    fn rcv_nxt(&self) -> Seq {
        self.recv.rcv_nxt() + usize::from(self.fin_received)
    }

    // ----- Timers and output -----------------------------------------------

    /// When the connection next needs attention.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Handles every timer due at `now`.
    pub fn poll_timers(&mut self, now: Instant) {
        while let Some(timer) = self.timers.pop_expired(now) {
            match timer {
                Timer::Retransmit => self.on_retransmit_timeout(now),
                Timer::DelayedAck => self.ack_now = true,
                Timer::Linger => self.state = State::Closed,
                Timer::Persist => self.probe_due = true,
                Timer::Keepalive => self.on_keepalive_timeout(now),
            }
        }
    }

    /// RFC 6298 §5.4–5.7: back off, shrink the window (RFC 5681 §3.1) and
    /// resend from SND.UNA.
    fn on_retransmit_timeout(&mut self, now: Instant) {
        if self.snd_una == self.snd_max {
            return;
        }
        self.retries += 1;
        if self.retries > self.config.max_retries {
            self.fail(ConnectionError::TimedOut);
            return;
        }
        self.counters.retransmission_timeouts += 1;
        probe::record_with(TCP_RETRANSMIT, self.flow, || {
            (self.snd_max.since(self.snd_una) as u32, 1)
        });
        self.rtt.on_timeout();
        self.karn.on_retransmit();
        let flight = self.snd_max.since(self.snd_una);
        self.cc.on_retransmission_timeout(now, flight);
        // RFC 6675 §5.1: after a timeout the SACK information may be
        // stale (the receiver may renege); start over from SND.UNA.
        self.scoreboard.clear();
        self.recovery = None;
        self.dup_acks = 0;
        // Go-back-N resends everything at the current MSS: an error about
        // an older, larger segment has nothing left to resend.
        self.pmtu_resend = None;
        self.sent_before_mss_drop = None;
        self.snd_nxt = self.snd_una;
        self.timers.set(Timer::Retransmit, now + self.rtt.rto());
    }

    /// The next segment to send at `now`, if any: SYN or SYN-ACK, data
    /// within the send and congestion windows, FIN, or a bare ACK.
    pub fn poll_output(&mut self, now: Instant) -> Option<Outgoing> {
        // The segments that arrived after the last of this batch's ACKs
        // are acknowledged with the batch (a lone one still waits).
        if std::mem::take(&mut self.batch_acked) && self.unacked_segments > 0 {
            self.ack_now = true;
        }
        let out = match self.state {
            State::Closed | State::Listen | State::TimeWait => self.take_ack_only(now),
            State::SynSent | State::SynReceived => self.output_syn(now),
            _ => self.output_synchronized(now),
        };
        if let Some(out) = &out {
            self.sent(out);
        }
        if self.unacked_segments > 0 && !self.timers.is_armed(Timer::DelayedAck) {
            self.timers
                .set(Timer::DelayedAck, now + self.config.delayed_ack);
        }
        out
    }

    /// A bare ACK that cannot wait for [`poll_output`](Self::poll_output),
    /// owed by the segment just taken. The host asks after every arriving
    /// segment, so when one poll takes a batch of segments (a TAP or
    /// AF_PACKET link hands over dozens at once) each ACK goes out as its
    /// segment is taken, acknowledging what arrived up to then, with the
    /// window of that moment:
    ///
    /// * RFC 5681 §4.2 (and RFC 9293 §3.8.6.3): an ACK SHOULD be generated
    ///   for at least every second full-sized segment. One stretch ACK for
    ///   the whole batch would hold back a sender whose window grows by at
    ///   most L·SMSS per ACK (RFC 3465 §2.2) and bunch its transmissions.
    /// * RFC 5681 §4.2: an out-of-order segment, or one filling a gap, is
    ///   answered at once; its ACK's first SACK block holds it (RFC 2018
    ///   §4), so a burst with many holes reports every one of them.
    pub fn poll_ack(&mut self, now: Instant) -> Option<Outgoing> {
        if self.unacked_segments < 2 && !self.segment_ack_due {
            return None;
        }
        // Returned as the callee built it, not unwrapped and rewrapped (a
        // move of the whole segment).
        let out = self.take_ack_only(now);
        if let Some(ack) = &out {
            self.sent(ack);
            self.batch_acked = true;
        }
        out
    }

    /// Bookkeeping for a segment handed out: one carrying an ACK pays for
    /// the ACK owed (and one of the further immediate ones).
    fn sent(&mut self, out: &Outgoing) {
        self.counters.segments_sent += 1;
        self.record_size(&out.repr);
        if out.repr.ack_number.is_some() {
            self.ack_now = self.owed_acks > 0;
            self.owed_acks = self.owed_acks.saturating_sub(1);
            self.segment_ack_due = false;
            self.unacked_segments = 0;
            self.small_segment_unacked = false;
            self.timers.cancel(Timer::DelayedAck);
        }
    }

    /// Records a data segment's size for path-MTU resends: its payload
    /// and its options other than timestamps (SACK blocks), which the
    /// send MSS does not allow for.
    fn record_size(&mut self, repr: &TcpRepr) {
        if repr.payload_len == 0 {
            return;
        }
        let timestamps = if repr.timestamps.is_some() {
            options::TIMESTAMPS_OPTION
        } else {
            0
        };
        let options = repr.header_len() - wire::tcp::HEADER_LEN;
        let size = repr.payload_len + options.saturating_sub(timestamps);
        let start = Seq(repr.seq_number);
        self.small_segments
            .on_send(start, start + repr.payload_len, size, self.send_mss());
    }

    /// The next segment of a synchronized connection, by precedence: a
    /// path-MTU resend, a fast retransmission, new data, then what goes
    /// without data ([`output_without_data`](Self::output_without_data),
    /// which `output_data` hands over to). The data segment, the common
    /// one, is built in the caller's place: an `or_else` chain moved the
    /// whole (200-byte) `Option<Outgoing>` at each link, even when empty.
    fn output_synchronized(&mut self, now: Instant) -> Option<Outgoing> {
        if self.pmtu_resend.is_some() {
            let out = self.output_pmtu_resend(now);
            if out.is_some() {
                return out;
            }
        }
        if self.recovery.is_some() {
            let out = self.output_recovery(now);
            if out.is_some() {
                return out;
            }
        }
        self.output_data(now)
    }

    /// A segment without new data, when there is none to send: a window
    /// probe, a keep-alive probe or a bare ACK, in that order.
    fn output_without_data(&mut self, now: Instant) -> Option<Outgoing> {
        if self.probe_due {
            return self.output_window_probe(now);
        }
        if self.keepalive_due {
            return self.output_keepalive(now);
        }
        self.take_ack_only(now)
    }

    fn output_syn(&mut self, now: Instant) -> Option<Outgoing> {
        if self.snd_nxt != self.iss {
            return self.take_ack_only(now);
        }
        let ack = (self.state == State::SynReceived).then(|| self.rcv_nxt());
        let mut repr = self.bare(self.iss, ack, TcpFlags::SYN);
        repr.max_seg_size = Some(self.local_options.mss);
        repr.window_scale = Some(self.local_options.window_shift);
        // A SYN's window is not scaled (RFC 7323 §2.2).
        repr.window_len = self.recv.window().min(usize::from(u16::MAX)) as u16;
        repr.sack_permitted =
            self.local_options.sack && (ack.is_none() || self.negotiated.is_some_and(|n| n.sack));
        let offer_ts = self.local_options.timestamps
            && (ack.is_none() || self.negotiated.is_some_and(|n| n.timestamps));
        repr.timestamps = offer_ts.then(|| (self.ts_clock.tsval(now), self.ts_recent));
        if ack.is_none() {
            repr.timestamps = repr.timestamps.map(|(v, _)| (v, 0));
        }
        self.snd_nxt = self.iss + 1;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        if self.karn.on_send(self.snd_nxt, now) {
            // Timing the SYN.
        }
        self.timers
            .set_if_idle(Timer::Retransmit, now + self.rtt.rto());
        Some(Outgoing::header_only(repr))
    }

    /// New data (and our FIN) within the windows; else, when nothing
    /// goes, [`output_without_data`](Self::output_without_data).
    fn output_data(&mut self, now: Instant) -> Option<Outgoing> {
        let data_end = self.data_end;
        let unsent = data_end.since(self.snd_nxt);
        let flight = self.snd_nxt.since(self.snd_una);
        let window = self.snd_wnd.min(self.cc.cwnd());
        let room = match self.recovery {
            // In recovery the pipe, not the flight, meters new data (RFC
            // 6675 §5 step (C)); the peer's window still bounds it. During
            // a path-MTU resend, which paces itself by its own pipe, the
            // flight does: new data waits for what is being resent.
            Some(r) if self.negotiated.is_some_and(|n| n.sack) && self.pmtu_resend.is_none() => {
                let pipe = self.scoreboard.pipe(self.snd_una, self.snd_max, r.high_rxt);
                self.cc
                    .cwnd()
                    .saturating_sub(pipe)
                    .min(self.snd_wnd.saturating_sub(flight))
            }
            _ => window.saturating_sub(flight),
        };
        let mss = self.payload_mss();
        let mut len = unsent.min(self.segment_limit(mss)).min(room);
        if len > mss && len < unsent {
            // A super-segment is cut at MSS boundaries: one the window
            // cuts short ends on a whole segment, so no small one is sent
            // in the middle of the data (Linux's `tcp_mss_split_point`).
            len -= len % mss;
        }
        // Nagle (RFC 9293 §3.7.4) with Minshall's modification, as Linux
        // has it (tcp_minshall_check): hold a small segment only while an
        // earlier small one is unacknowledged, unless it is the last
        // before our FIN. Still one small segment per round trip, but the
        // tail of a bulk write no longer waits for the peer's delayed ACK
        // of an odd full segment: with plain Nagle a 16 MiB transfer over
        // 100 Mbit/s lost that 40 ms in some repetitions and not others.
        // Cleared once acknowledged, so that sequence numbers wrapping
        // under a long transfer cannot make an old one look unacknowledged.
        let small_unacked = match self.small_sent_end {
            Some(end) if end > self.snd_una => true,
            _ => {
                self.small_sent_end = None;
                false
            }
        };
        if len > 0
            && len < mss
            && flight > 0
            && small_unacked
            && !self.config.nodelay
            && !self.fin_queued
        {
            len = 0;
        }
        let fin = self.fin_queued && self.snd_nxt + len == data_end && self.state.fin_queued();
        if len == 0 && !(fin && self.snd_nxt == data_end) {
            // Data waits on a zero window with nothing in flight to bring
            // an update: start probing (RFC 9293 §3.8.6.1).
            if unsent > 0 && flight == 0 && self.snd_wnd == 0 {
                let interval = self
                    .rtt
                    .rto()
                    .saturating_mul(1 << self.persist_backoff.min(16))
                    .min(self.config.rtt.max_rto);
                self.timers.set_if_idle(Timer::Persist, now + interval);
            }
            return self.output_without_data(now);
        }
        let offset = self.snd_nxt.since(self.data_una());
        let payload = self.send.segments(offset, len);
        let mut flags = TcpFlags::empty();
        if fin {
            flags.insert(TcpFlags::FIN);
        }
        if len > 0 && self.snd_nxt + len == data_end {
            flags.insert(TcpFlags::PSH);
        }
        let mut repr = self.bare(self.snd_nxt, Some(self.rcv_nxt()), flags);
        repr.payload_len = len;
        self.decorate(&mut repr, now);
        let seq = self.snd_nxt;
        self.snd_nxt = seq + len + usize::from(fin);
        if len % mss != 0 {
            // Its last (or only) wire segment is a small one.
            self.small_sent_end = Some(self.snd_nxt);
        }
        if self.snd_nxt > self.snd_max {
            self.karn.on_send(self.snd_nxt, now);
            self.snd_max = self.snd_nxt;
            self.counters.bytes_sent += len as u64;
        } else {
            self.counters.bytes_retransmitted += len as u64;
            self.counters.segments_retransmitted += 1;
        }
        self.timers
            .set_if_idle(Timer::Retransmit, now + self.rtt.rto());
        Some(Outgoing {
            repr,
            payload,
            gso_size: self.gso_size(len, mss),
        })
    }

    /// A fast retransmission, if one is due: with SACK, whatever NextSeg
    /// picks while the pipe leaves a segment's room under cwnd (RFC 6675
    /// §5 step (C)); without, the segment at SND.UNA once per dup-ACK
    /// threshold and per partial ACK (RFC 6582 §3.2).
    fn output_recovery(&mut self, now: Instant) -> Option<Outgoing> {
        let mut recovery = self.recovery?;
        if self.pmtu_resend.is_some() {
            // The path-MTU resend covers every hole up to SND.MAX as it
            // was (at or beyond the recovery point): recovery resending
            // them as well would send them twice.
            return None;
        }
        let mss = self.payload_mss();
        let (start, len) = if self.negotiated.is_some_and(|n| n.sack) {
            let pipe = self
                .scoreboard
                .pipe(self.snd_una, self.snd_max, recovery.high_rxt);
            if self.cc.cwnd() < pipe + mss {
                return None;
            }
            let query = NextSegQuery {
                snd_una: self.snd_una,
                snd_max: self.snd_max,
                high_rxt: recovery.high_rxt,
                rescue_rxt: recovery.rescue_rxt,
                new_data: 0,
            };
            match self.scoreboard.next_seg(&query) {
                NextSeg::Lost { start, len } | NextSeg::Unsacked { start, len } => {
                    let len = len.min(mss);
                    recovery.high_rxt = recovery.high_rxt.max(start + len);
                    (start, len)
                }
                NextSeg::Rescue { start, len } => {
                    recovery.rescue_rxt = Some(recovery.point);
                    (start, len.min(mss))
                }
                NextSeg::NewData { .. } | NextSeg::Nothing => return None,
            }
        } else {
            if !recovery.resend_head {
                return None;
            }
            recovery.resend_head = false;
            (self.snd_una, mss)
        };
        self.recovery = Some(recovery);
        let out = self.retransmission(now, start, len)?;
        self.counters.fast_retransmits += 1;
        probe::record(TCP_RETRANSMIT, out.repr.payload_len as u32, self.flow, 0);
        Some(out)
    }

    /// The next piece of a path-MTU resend episode, if the congestion
    /// window has room for it: the first unSACKed run from where the
    /// episode got to, at most one (new) MSS. The segment at SND.UNA
    /// restarts the retransmission timer, so the timer runs from the
    /// resend, not from the dropped original (as Linux's
    /// `tcp_xmit_retransmit_queue` does).
    fn output_pmtu_resend(&mut self, now: Instant) -> Option<Outgoing> {
        let mut episode = self.pmtu_resend?;
        let from = episode.next.max(self.snd_una);
        let data_end = episode.end.min(self.data_end);
        let (start, run_end) = self.pmtu_next_run(from, data_end)?;
        let len = run_end.since(start).min(self.payload_mss());
        if self.pmtu_pipe(&episode) + len > self.cc.cwnd() {
            return None;
        }
        episode.next = start + len;
        self.pmtu_resend = Some(episode);
        let mut out = self.retransmission(now, start, len)?;
        // A FIN that went with the last data goes with it again.
        if start + len == self.data_end && episode.end > self.data_end {
            out.repr.flags.insert(TcpFlags::FIN);
        }
        if start == self.snd_una {
            self.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
        // aux 2: a resend for the path MTU (0 fast retransmit, 1 timeout).
        probe::record(TCP_RETRANSMIT, out.repr.payload_len as u32, self.flow, 2);
        Some(out)
    }

    /// The next run of `from..end` a path-MTU resend sends: not SACKed,
    /// and not last sent in a small segment that fits the new MSS (the
    /// path carried that one).
    fn pmtu_next_run(&self, from: Seq, end: Seq) -> Option<(Seq, Seq)> {
        let mss = self.send_mss();
        let mut at = from;
        loop {
            let (start, hole_end) = self.scoreboard.unsacked_from(at, end)?;
            if let Some(fit_end) = self.small_segments.fitting_end(start, mss) {
                at = fit_end;
                continue;
            }
            let stop = self
                .small_segments
                .next_fitting_after(start, mss)
                .map_or(hole_end, |fit| fit.min(hole_end));
            return Some((start, stop));
        }
    }

    /// The bytes in the network during a path-MTU resend: what it resent
    /// and what was sent after it began, less what is SACKed. What is
    /// still to be resent is not in the network (the path dropped it), so
    /// the episode resends up to a congestion window's worth at once,
    /// then one segment per segment acknowledged.
    fn pmtu_pipe(&self, episode: &PmtuResend) -> usize {
        let una = self.snd_una;
        let unsacked = |lo: Seq, hi: Seq| {
            hi.since(lo)
                .saturating_sub(self.scoreboard.sacked_between(lo, hi))
        };
        unsacked(una, episode.next.max(una)) + unsacked(episode.end.max(una), self.snd_max)
    }

    /// Resends the data bytes `start..start + len` (clamped to what was
    /// sent) without moving SND.NXT.
    fn retransmission(&mut self, now: Instant, start: Seq, len: usize) -> Option<Outgoing> {
        let start = start.max(self.data_una());
        let end = (start + len).min(self.snd_max).min(self.data_end);
        let len = end.since(start);
        if len == 0 {
            return None;
        }
        let offset = start.since(self.data_una());
        let payload = self.send.segments(offset, len);
        let mut repr = self.bare(start, Some(self.rcv_nxt()), TcpFlags::empty());
        repr.payload_len = len;
        self.decorate(&mut repr, now);
        self.karn.on_retransmit();
        self.counters.bytes_retransmitted += len as u64;
        self.counters.segments_retransmitted += 1;
        self.timers
            .set_if_idle(Timer::Retransmit, now + self.rtt.rto());
        // At most one MSS: never a super-segment.
        Some(Outgoing {
            repr,
            payload,
            gso_size: 0,
        })
    }

    /// Turns segmentation offload on or off (the host does, from the
    /// route's interface).
    pub fn set_segment_offload(&mut self, on: bool) {
        self.tso = on;
    }

    /// The most payload one segment of new data carries: one MSS, or
    /// with segmentation offload a super-segment of whole MSS up to 64
    /// KiB.
    fn segment_limit(&self, mss: usize) -> usize {
        if self.tso {
            crate::iface::offload::tso_max_payload(mss)
        } else {
            mss
        }
    }

    /// [`Outgoing::gso_size`] of a data segment of `len` bytes sent with
    /// `mss` (its [`payload_mss`](Self::payload_mss)): `mss` if it is a
    /// super-segment (longer than one MSS), else 0.
    fn gso_size(&self, len: usize, mss: usize) -> u16 {
        if self.tso && len > mss {
            u16::try_from(mss).unwrap_or(0)
        } else {
            0
        }
    }

    fn send_mss(&self) -> usize {
        self.negotiated
            .map_or(usize::from(self.local_options.mss), |n| n.send_mss)
    }

    /// The most payload a data segment sent now may carry: the send MSS
    /// less the SACK option [`decorate`](Self::decorate) will add. The MSS
    /// counts no options, so "the sender MUST reduce the TCP data length
    /// to account for any IP or TCP options that it is including" (RFC
    /// 6691 §2, RFC 9293 §3.7.1); the timestamp option is already off
    /// the send MSS. Without this, a segment that piggybacks SACK blocks
    /// (data flowing both ways with holes) exceeds the path MTU: IPv4
    /// with DF drops it at the source, IPv6 fragments it.
    fn payload_mss(&self) -> usize {
        let mss = self.send_mss();
        match self.negotiated {
            Some(n) if n.sack && self.recv.has_holes() => {
                let max = if n.timestamps {
                    wire::tcp::MAX_SACK_BLOCKS_WITH_TIMESTAMPS
                } else {
                    MAX_SACK_BLOCKS
                };
                // A block per out-of-order range, plus a D-SACK block at
                // most; each 8 bytes, after two NOPs, kind and length.
                let blocks = (self.recv.hole_count() + 1).min(max);
                mss.saturating_sub(4 + 8 * blocks).max(1)
            }
            _ => mss,
        }
    }

    /// A zero-window probe: a segment one below SND.UNA, which the peer
    /// must answer with an ACK carrying its current window (as Linux
    /// probes; it disturbs no sequence state, so a peer that keeps
    /// answering is probed forever, never timed out).
    fn output_window_probe(&mut self, now: Instant) -> Option<Outgoing> {
        if !self.probe_due {
            return None;
        }
        self.probe_due = false;
        self.persist_backoff = self.persist_backoff.saturating_add(1);
        self.counters.window_probes += 1;
        Some(self.probe(now, Seq(self.snd_una.0.wrapping_sub(1))))
    }

    /// A keep-alive probe: SEG.SEQ = SND.NXT - 1 and no data (RFC 1122
    /// §4.2.3.6), which the peer answers with an ACK.
    fn output_keepalive(&mut self, now: Instant) -> Option<Outgoing> {
        if !self.keepalive_due {
            return None;
        }
        self.keepalive_due = false;
        self.counters.keepalive_probes += 1;
        Some(self.probe(now, Seq(self.snd_nxt.0.wrapping_sub(1))))
    }

    /// A data-less segment at an already-acknowledged `seq`: the peer
    /// cannot accept it and answers with an ACK carrying its state.
    fn probe(&mut self, now: Instant, seq: Seq) -> Outgoing {
        let mut repr = self.bare(seq, Some(self.rcv_nxt()), TcpFlags::empty());
        self.decorate(&mut repr, now);
        Outgoing::header_only(repr)
    }

    fn take_ack_only(&mut self, now: Instant) -> Option<Outgoing> {
        if !self.ack_now || self.state == State::Closed || self.state == State::SynSent {
            return None;
        }
        // A bare ACK carries SND.MAX, not SND.NXT: a retransmission
        // timeout rewinds SND.NXT to SND.UNA (go-back-N), and an ACK
        // numbered there lies below the peer's RCV.NXT once the peer has
        // the data whose ACKs were lost, so the peer finds it unacceptable
        // and drops it unread (RFC 9293 §3.10.7.4) — with data flowing
        // both ways, both ends then back off forever, each dropping the
        // other's ACKs. (BSD's tcp_output likewise numbers pure ACKs with
        // snd_max.)
        let mut repr = self.bare(self.snd_max, Some(self.rcv_nxt()), TcpFlags::empty());
        self.decorate(&mut repr, now);
        Some(Outgoing::header_only(repr))
    }

    /// Window, timestamps and SACK blocks of a non-SYN segment.
    fn decorate(&mut self, repr: &mut TcpRepr, now: Instant) {
        let negotiated = self.negotiated.unwrap_or(Negotiated {
            send_mss: usize::from(self.local_options.mss),
            send_window_shift: 0,
            recv_window_shift: 0,
            sack: false,
            timestamps: false,
        });
        let window = self.recv.window() >> negotiated.recv_window_shift;
        repr.window_len = window.min(usize::from(u16::MAX)) as u16;
        if negotiated.timestamps {
            repr.timestamps = Some((self.ts_clock.tsval(now), self.ts_recent));
        }
        if negotiated.sack && self.recv.has_holes() {
            let max = if negotiated.timestamps {
                wire::tcp::MAX_SACK_BLOCKS_WITH_TIMESTAMPS
            } else {
                MAX_SACK_BLOCKS
            };
            repr.sack_ranges = self.recv.sack_blocks(max).to_wire();
        }
    }

    /// A header with the connection's ports and nothing else.
    fn bare(&self, seq: Seq, ack: Option<Seq>, flags: TcpFlags) -> TcpRepr {
        super::bare_header(self.local.port(), self.remote.port(), seq, ack, flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::PoolConfig;

    /// An established connection whose SND.UNA is `distance` bytes past
    /// its ISS, as after a long transfer (white-box: a real one would
    /// have to move gigabytes first).
    fn after(distance: usize) -> (Connection, Pool) {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let local = "[2001:db8::a]:40000".parse().unwrap();
        let remote = "[2001:db8::b]:5001".parse().unwrap();
        let mut c = Connection::connect(
            TcpConfig::default(),
            local,
            remote,
            Seq(0x8000_0000),
            1440,
            Instant::ZERO,
            Flow::untraced(1),
        );
        c.state = State::Established;
        c.syn_acked = true;
        c.negotiated = Some(Negotiated {
            send_mss: 1428,
            send_window_shift: 0,
            recv_window_shift: 0,
            sack: true,
            timestamps: false,
        });
        let una = c.iss + 1 + distance;
        (c.snd_una, c.snd_nxt, c.snd_max, c.data_end) = (una, una, una, una);
        c.snd_wnd = 65_535;
        (c, pool)
    }

    #[test]
    fn data_is_found_however_far_the_stream_has_gone() {
        // Past 2^31 bytes, ISS + 1 compares as *after* SND.UNA modulo
        // 2^32: the send queue's offsets must not depend on it.
        for distance in [
            0usize,
            1 << 20,
            (1 << 31) - 1,
            1 << 31,
            (1 << 31) + 7,
            u32::MAX as usize,
        ] {
            let (mut c, pool) = after(distance);
            let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
            assert_eq!(c.send(&pool, &data).unwrap(), 3000);
            let out = c.poll_output(Instant::ZERO).expect("a segment");
            let payload: Vec<u8> = out
                .payload
                .iter()
                .flat_map(|s| s.as_slice().to_vec())
                .collect();
            assert_eq!(out.repr.seq_number, c.snd_una.0, "distance {distance}");
            assert_eq!(payload.len(), out.repr.payload_len);
            assert_eq!(payload[..], data[..payload.len()], "distance {distance}");
            // An ACK of the first segment frees exactly its bytes.
            let mut ack = bare_ack(&c, out.repr.seq_number.wrapping_add(payload.len() as u32));
            ack.window_len = 65_535;
            c.input(Instant::ZERO, &ack, &[], &mut ChallengeLimiter::default());
            assert_eq!(c.send_queued(), 3000 - payload.len(), "distance {distance}");
        }
    }

    /// Two connected ends (client, server) with their pool, every segment
    /// of each taking the full input path when `unpredicted`.
    struct World {
        ends: [Connection; 2],
        /// Segments in flight towards end 0 and end 1.
        flight: [Vec<(TcpRepr, Vec<u8>)>; 2],
        pool: Pool,
        now: Instant,
        /// Segments that took the predicted path.
        predicted: usize,
        /// What each step sent, for comparison across worlds.
        log: Vec<String>,
    }

    impl World {
        fn new(unpredicted: bool) -> World {
            let pool = Pool::new(PoolConfig::default()).unwrap();
            let a: SocketAddr = "[2001:db8::a]:40000".parse().unwrap();
            let b: SocketAddr = "[2001:db8::b]:5001".parse().unwrap();
            let config = TcpConfig {
                send_buffer: 24 * 1024,
                recv_buffer: 6 * 1024,
                ..TcpConfig::default()
            };
            let now = Instant::ZERO;
            let mut client =
                Connection::connect(config, a, b, Seq(0xfff0_0000), 1000, now, Flow::untraced(1));
            let syn = client.poll_output(now).expect("a SYN").repr;
            let server =
                Connection::accept(config, b, a, &syn, Seq(7), 1000, now, Flow::untraced(2));
            let mut world = World {
                ends: [client, server],
                flight: [Vec::new(), Vec::new()],
                pool,
                now,
                predicted: 0,
                log: Vec::new(),
            };
            for end in &mut world.ends {
                end.unpredicted = unpredicted;
            }
            world.output();
            world
        }

        /// Every segment both ends have to send, into flight.
        fn output(&mut self) {
            for from in 0..2 {
                while let Some(out) = self.ends[from].poll_output(self.now) {
                    self.sent(from, out);
                }
            }
        }

        fn sent(&mut self, from: usize, out: Outgoing) {
            let payload: Vec<u8> = out
                .payload
                .iter()
                .flat_map(|s| s.as_slice().to_vec())
                .collect();
            self.log.push(format!("{from} {:?} {payload:?}", out.repr));
            self.flight[1 - from].push((out.repr, payload));
        }

        /// Delivers the segment at `index` of those in flight to `to`.
        fn deliver(&mut self, to: usize, index: usize, keep: bool) {
            let Some((seg, payload)) = self.flight[to].get(index).cloned() else {
                return;
            };
            if !keep {
                self.flight[to].remove(index);
            }
            let end = &mut self.ends[to];
            if end.state == State::Established && end.predicted(&seg, payload.len()) {
                self.predicted += 1;
            }
            let reply = end.input(
                self.now,
                &seg,
                &[&payload],
                &mut ChallengeLimiter::default(),
            );
            self.log.push(format!("{to} reply {reply:?}"));
            if let Some(ack) = self.ends[to].poll_ack(self.now) {
                self.sent(to, ack);
            }
        }

        /// The state of both ends, whichever path they were told to take.
        fn state(&self) -> String {
            format!("{:?}", self.ends).replace("unpredicted: true", "unpredicted: false")
        }

        fn step(&mut self, (op, arg): (u8, u16)) {
            let end = usize::from(arg & 1);
            let arg = usize::from(arg >> 1);
            match op % 8 {
                0 => {
                    let data: Vec<u8> = (0..arg * 40).map(|i| i as u8).collect();
                    let _ = self.ends[end].send(&self.pool, &data);
                }
                1..=3 => self.deliver(end, 0, false),
                4 => {
                    // Out of order, or lost.
                    let len = self.flight[end].len();
                    self.deliver(end, arg % len.max(1), arg % 5 == 0);
                }
                5 => {
                    let mut out = vec![0; arg * 30];
                    self.ends[end].recv(&mut out);
                }
                6 => {
                    self.now += Duration::from_millis(arg as u64 % 300);
                    for c in &mut self.ends {
                        c.poll_timers(self.now);
                    }
                }
                _ => {
                    if arg % 7 == 0 {
                        self.ends[end].close();
                    }
                }
            }
            self.output();
        }
    }

    proptest::proptest! {
        /// Header prediction is an optimization only: a connection whose
        /// segments all take the full input path sends exactly the same
        /// segments and ends in exactly the same state, through data both
        /// ways, loss, reordering, duplicates, zero windows, timeouts and
        /// closing.
        #[test]
        fn predicted_input_matches_the_full_path(
            ops in proptest::collection::vec((0u8..8, 0u16..512), 1..400),
        ) {
            let mut fast = World::new(false);
            let mut full = World::new(true);
            for &op in &ops {
                fast.step(op);
                full.step(op);
                proptest::prop_assert_eq!(&fast.log, &full.log);
                proptest::prop_assert_eq!(fast.state(), full.state());
            }
            proptest::prop_assert_eq!(full.predicted, 0);
        }
    }

    /// A bulk transfer takes the predicted path for most segments (the
    /// property above would pass vacuously otherwise).
    #[test]
    fn bulk_transfer_is_predicted() {
        let mut world = World::new(false);
        for _ in 0..200 {
            world.step((0, 100 << 1));
            for _ in 0..8 {
                world.step((1, 1));
                world.step((1, 0));
            }
            world.step((5, 400 << 1 | 1));
        }
        let received = world.ends[1].counters().segments_received as usize;
        assert!(
            world.predicted * 10 > received * 9,
            "{} of {received}",
            world.predicted
        );
    }

    fn bare_ack(c: &Connection, ack: u32) -> TcpRepr {
        super::super::bare_header(
            c.remote.port(),
            c.local.port(),
            c.recv.rcv_nxt(),
            Some(Seq(ack)),
            TcpFlags::empty(),
        )
    }
}
