//! Arriving segments (RFC 9293 §3.10.7): the SYN-SENT and synchronized
//! rules, header prediction, ACK processing with loss detection, and the
//! payload and FIN into the receive buffer.

use super::*;

impl Connection {
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
    pub(super) fn predicted(&self, seg: &TcpRepr, payload_len: usize) -> bool {
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
    pub(super) fn take_syn(&mut self, syn: &TcpRepr, now: Instant) {
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
    pub(super) fn heard_from_peer(&mut self, now: Instant) {
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
    pub(super) fn on_keepalive_timeout(&mut self, now: Instant) {
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
                .or_else(|| self.karn.on_ack_nanos(ack, now));
            if let Some(rtt) = sample {
                self.rtt.sample_nanos(rtt);
            }
            self.end_pmtu_resend();
            let flight = self.snd_max.since(self.snd_una);
            self.cc.on_ack(now, acked, flight, self.rtt.srtt());
            // RFC 6298 §5.2 and §5.3: stop the timer when all is
            // acknowledged, otherwise restart it.
            if self.snd_una == self.snd_max {
                self.timers.cancel(Timer::Retransmit);
            } else {
                self.timers.set(Timer::Retransmit, self.rtt.deadline(now));
            }
            if fin_acked {
                self.our_fin_acked(now);
            }
        }
        // An ACK without blocks while nothing is SACKed (the common case)
        // leaves the scoreboard as it is: no update to make.
        let newly_sacked = sack
            && !(self.scoreboard.is_empty() && seg.sack_ranges.iter().all(Option::is_none))
            && self.take_sack_blocks(seg);
        // Loss detection has nothing to do for an ACK that advances
        // outside recovery (but reset the count of duplicates), nor for
        // one that cannot be a duplicate (RFC 6675 §2: with SACK it SACKs
        // new data; RFC 5681 §2: without, data is outstanding).
        let may_be_duplicate = if sack {
            newly_sacked
        } else {
            self.snd_una != self.snd_max
        };
        if advanced && self.recovery.is_none() {
            self.dup_acks = 0;
        } else if advanced || may_be_duplicate {
            self.detect_loss(now, ack, acked, advanced, newly_sacked, seg, window_before);
        }
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

    /// Updates the scoreboard from an ACK's SACK blocks (RFC 6675 §5);
    /// true if the ACK is a duplicate by RFC 6675 §2 (it SACKs new data).
    /// Out of line: a loss-free transfer never has blocks to take.
    #[cold]
    #[inline(never)]
    fn take_sack_blocks(&mut self, seg: &TcpRepr) -> bool {
        let blocks = SackBlocks::from_wire(&seg.sack_ranges);
        self.scoreboard
            .update(self.snd_una, self.snd_max, blocks.as_slice())
            .is_duplicate_ack()
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
    /// with SACK, RFC 6582 §3.2 without). Out of line: `take_ack` calls
    /// it only in recovery or for an ACK that may be a duplicate.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
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

    /// The RTT an ACK's TSecr measures (RFC 7323 §4.1), in nanoseconds.
    fn timestamp_sample(&self, now: Instant, seg: &TcpRepr) -> Option<u64> {
        if !self.negotiated.is_some_and(|n| n.timestamps) {
            return None;
        }
        seg.timestamps
            .and_then(|(_, tsecr)| self.ts_clock.rtt_sample_nanos(now, tsecr))
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
            // No division for a segment of at most one MSS (all but
            // merged ones).
            let segments = if len <= mss { 1 } else { len.div_ceil(mss) };
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

    pub(super) fn fail(&mut self, error: ConnectionError) {
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
    pub(super) fn data_una(&self) -> Seq {
        if self.syn_acked {
            self.snd_una
        } else {
            self.iss + 1
        }
    }

    pub(super) fn rcv_nxt(&self) -> Seq {
        self.recv.rcv_nxt() + usize::from(self.fin_received)
    }
}
