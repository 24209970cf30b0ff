//! Timers and the segments to send: data under the windows, recovery
//! and PMTU resends, probes, keep-alives and ACKs, each decorated with
//! the options the connection negotiated.

use super::*;

impl Connection {
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
        self.timers.set(Timer::Retransmit, self.rtt.deadline(now));
    }

    /// The next segment to send at `now`, if any: SYN or SYN-ACK, data
    /// within the send and congestion windows, FIN, or a bare ACK.
    pub fn poll_output(&mut self, now: Instant) -> Option<Outgoing> {
        let mut out = Outgoing::empty();
        self.poll_output_into(now, &mut out).then_some(out)
    }

    /// [`poll_output`](Self::poll_output) into the caller's `out`: true
    /// if a segment was written there (every field of it), false if
    /// there is none (`out` then holds whatever it held). The host reuses
    /// one `out` for every segment: returned by value, the segment (200
    /// bytes) was copied at each return and again into the host.
    pub fn poll_output_into(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        // The segments that arrived after the last of this batch's ACKs
        // are acknowledged with the batch (a lone one still waits).
        if std::mem::take(&mut self.batch_acked) && self.unacked_segments > 0 {
            self.ack_now = true;
        }
        let sent = match self.state {
            State::Closed | State::Listen | State::TimeWait => self.take_ack_only(now, out),
            State::SynSent | State::SynReceived => self.output_syn(now, out),
            _ => self.output_synchronized(now, out),
        };
        if sent {
            self.sent(out);
        }
        if self.unacked_segments > 0 && !self.timers.is_armed(Timer::DelayedAck) {
            self.timers
                .set(Timer::DelayedAck, now + self.config.delayed_ack);
        }
        sent
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
        if !self.ack_due() {
            return None;
        }
        let mut out = Outgoing::empty();
        self.poll_ack_into(now, &mut out).then_some(out)
    }

    /// Whether [`poll_ack`](Self::poll_ack) may have an ACK to send: the
    /// host asks before it sets up a segment for one.
    #[inline]
    pub fn ack_due(&self) -> bool {
        self.unacked_segments >= 2 || self.segment_ack_due
    }

    /// [`poll_ack`](Self::poll_ack) into the caller's `out`, as
    /// [`poll_output_into`](Self::poll_output_into).
    pub fn poll_ack_into(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        if !self.ack_due() || !self.take_ack_only(now, out) {
            return false;
        }
        self.sent(out);
        self.batch_acked = true;
        true
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
        let mss = self.send_mss();
        // A full-sized segment while nothing is recorded (bulk data) is
        // at least the MSS whatever its options: `on_send` would change
        // nothing, so its header is not measured.
        if repr.payload_len >= mss && self.small_segments.is_empty() {
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
            .on_send(start, start + repr.payload_len, size, mss);
    }

    /// The next segment of a synchronized connection, by precedence: a
    /// path-MTU resend, a fast retransmission, new data, then what goes
    /// without data ([`output_without_data`](Self::output_without_data),
    /// which `output_data` hands over to).
    fn output_synchronized(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        if (self.pmtu_resend.is_some() || self.recovery.is_some()) && self.output_repair(now, out) {
            return true;
        }
        self.output_data(now, out)
    }

    /// A path-MTU resend or a fast retransmission, if one is due. Out of
    /// line: the bulk transfer's segments never take it.
    #[cold]
    #[inline(never)]
    fn output_repair(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        let repair = if self.pmtu_resend.is_some() {
            self.output_pmtu_resend(now)
        } else {
            None
        };
        match repair.or_else(|| self.recovery.and_then(|_| self.output_recovery(now))) {
            Some(segment) => {
                *out = segment;
                true
            }
            None => false,
        }
    }

    /// A segment without new data, when there is none to send: a window
    /// probe, a keep-alive probe or a bare ACK, in that order.
    fn output_without_data(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        if self.probe_due || self.keepalive_due {
            return self.output_probe(now, out);
        }
        self.take_ack_only(now, out)
    }

    /// A window probe or keep-alive probe, whichever is due. Out of line
    /// (rare).
    #[cold]
    #[inline(never)]
    fn output_probe(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        let probe = if self.probe_due {
            self.output_window_probe(now)
        } else {
            self.output_keepalive(now)
        };
        match probe {
            Some(segment) => {
                *out = segment;
                true
            }
            None => false,
        }
    }

    /// The SYN or SYN-ACK, or an ACK while one is owed. Out of line: once
    /// per connection.
    #[cold]
    #[inline(never)]
    fn output_syn(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        if self.snd_nxt != self.iss {
            return self.take_ack_only(now, out);
        }
        *out = self.syn(now);
        true
    }

    /// Our SYN (or SYN-ACK), with the options we offer.
    fn syn(&mut self, now: Instant) -> Outgoing {
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
            .set_if_idle(Timer::Retransmit, self.rtt.deadline(now));
        Outgoing::header_only(repr)
    }

    /// New data (and our FIN) within the windows; else, when nothing
    /// goes, [`output_without_data`](Self::output_without_data).
    fn output_data(&mut self, now: Instant, out: &mut Outgoing) -> bool {
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
            return self.output_without_data(now, out);
        }
        let offset = self.snd_nxt.since(self.data_una());
        self.send.segments_into(offset, len, &mut out.payload);
        let mut flags = TcpFlags::empty();
        if fin {
            flags.insert(TcpFlags::FIN);
        }
        if len > 0 && self.snd_nxt + len == data_end {
            flags.insert(TcpFlags::PSH);
        }
        self.header_into(&mut out.repr, self.snd_nxt, flags, now);
        out.repr.payload_len = len;
        out.gso_size = self.gso_size(len, mss);
        let seq = self.snd_nxt;
        self.snd_nxt = seq + len + usize::from(fin);
        // Up to one MSS (every segment without segmentation offload) no
        // division is needed.
        let partial = if len <= mss {
            len != 0 && len != mss
        } else {
            len % mss != 0
        };
        if partial {
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
            .set_if_idle(Timer::Retransmit, self.rtt.deadline(now));
        true
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
            self.timers.set(Timer::Retransmit, self.rtt.deadline(now));
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
        let mut repr = self.bare(start, None, TcpFlags::empty());
        self.header_into(&mut repr, start, TcpFlags::empty(), now);
        repr.payload_len = len;
        self.karn.on_retransmit();
        self.counters.bytes_retransmitted += len as u64;
        self.counters.segments_retransmitted += 1;
        self.timers
            .set_if_idle(Timer::Retransmit, self.rtt.deadline(now));
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
        let mut repr = self.bare(seq, None, TcpFlags::empty());
        self.header_into(&mut repr, seq, TcpFlags::empty(), now);
        Outgoing::header_only(repr)
    }

    fn take_ack_only(&mut self, now: Instant, out: &mut Outgoing) -> bool {
        if !self.ack_now || self.state == State::Closed || self.state == State::SynSent {
            return false;
        }
        // A bare ACK carries SND.MAX, not SND.NXT: a retransmission
        // timeout rewinds SND.NXT to SND.UNA (go-back-N), and an ACK
        // numbered there lies below the peer's RCV.NXT once the peer has
        // the data whose ACKs were lost, so the peer finds it unacceptable
        // and drops it unread (RFC 9293 §3.10.7.4) — with data flowing
        // both ways, both ends then back off forever, each dropping the
        // other's ACKs. (BSD's tcp_output likewise numbers pure ACKs with
        // snd_max.)
        self.header_into(&mut out.repr, self.snd_max, TcpFlags::empty(), now);
        out.payload.clear();
        out.gso_size = 0;
        true
    }

    /// The header of a non-SYN segment at `seq` acknowledging RCV.NXT,
    /// with its window, timestamps and SACK blocks
    /// ([`decorate`](Self::decorate)), written over `repr`. Out of line:
    /// data segments and bare ACKs share one copy of it (the repr is 130
    /// bytes to write).
    #[inline(never)]
    fn header_into(&mut self, repr: &mut TcpRepr, seq: Seq, flags: TcpFlags, now: Instant) {
        *repr = self.bare(seq, Some(self.rcv_nxt()), flags);
        self.decorate(repr, now);
    }

    /// Window, timestamps and SACK blocks of a non-SYN segment.
    fn decorate(&mut self, repr: &mut TcpRepr, now: Instant) {
        // Before a SYN is taken nothing is negotiated: an unscaled window,
        // no options.
        let (shift, timestamps, sack) = match self.negotiated {
            Some(n) => (n.recv_window_shift, n.timestamps, n.sack),
            None => (0, false, false),
        };
        let window = self.recv.window() >> shift;
        repr.window_len = window.min(usize::from(u16::MAX)) as u16;
        if timestamps {
            repr.timestamps = Some((self.ts_clock.tsval(now), self.ts_recent));
        }
        if sack && self.recv.has_holes() {
            let max = if timestamps {
                wire::tcp::MAX_SACK_BLOCKS_WITH_TIMESTAMPS
            } else {
                MAX_SACK_BLOCKS
            };
            repr.sack_ranges = self.recv.sack_blocks(max).to_wire();
        }
    }

    /// A header with the connection's ports and nothing else.
    pub(super) fn bare(&self, seq: Seq, ack: Option<Seq>, flags: TcpFlags) -> TcpRepr {
        super::super::bare_header(self.ports.0, self.ports.1, seq, ack, flags)
    }
}
