//! What an association does with an arriving packet: data into the
//! receive stream, status requests owed answers, control packets
//! acknowledging, granting `alloc` and naming gaps to resend, the key
//! exchange, and the close bits.

use wire::xtp::{ControlRepr, DiagCode, Segment, Span, TrafficRepr, XtpOptions, XtpRepr};

use super::association::{Association, Failure, Role, State};
use super::config::ErrorControl;
use super::recv_stream::Arrival;
use crate::probes::{DATA_COPY_ENTER, DATA_COPY_EXIT, XTP_CONTROL_ENTER, XTP_CONTROL_EXIT};
use crate::time::Instant;

/// Gaps remembered as resent for unsolicited reports, at most.
const MAX_NAKED: usize = 1024;

impl Association {
    /// Takes one packet the host matched to this context.
    pub fn input(&mut self, now: Instant, packet: &XtpRepr<'_>) {
        if self.state == State::Closed {
            return;
        }
        self.last_heard = now;
        self.counters.packets_received += 1;
        let options = packet.options;
        if let Segment::Diag { code, .. } = packet.segment {
            // A DIAG ends the context (study §2.3: peer-to-peer diagnostic).
            let failure = match code {
                DiagCode::ContextRefused => Failure::Refused,
                _ => Failure::Reset,
            };
            self.fail(failure);
            return;
        }
        if self.state == State::FirstSent {
            // Anything from the responder proves its context exists.
            self.state = State::Active;
        }
        if self.state == State::Quiet && !options.contains(XtpOptions::END) {
            // The peer missed our END: say it again.
            self.owed.update = true;
        }
        match packet.segment {
            Segment::Data { data, btag } => {
                if let Some(tag) = btag {
                    self.recv.tag(packet.seq, tag);
                }
                self.data_input(now, packet, data)
            }
            Segment::First {
                traffic,
                data,
                btag,
                ..
            } => {
                if let Some(tag) = btag.filter(|_| !data.is_empty()) {
                    self.recv.tag(packet.seq, tag);
                }
                self.adopt_traffic(&traffic);
                if self.role == Role::Responder {
                    self.adopt_service(traffic.service);
                }
                // Each copy of FIRST is answered: the earlier answer may
                // have been lost.
                self.owed.tcntl = self.role == Role::Responder;
                self.first_sync = packet.sync;
                self.data_input(now, packet, data);
            }
            Segment::Cntl(control) => {
                self.counters.cntl_received += 1;
                self.control_input(now, packet, control, &[]);
            }
            Segment::Ecntl { control, spans } => {
                self.counters.ecntl_received += 1;
                if spans.check_order().is_ok() {
                    let spans: Vec<Span> = spans.iter().collect();
                    self.control_input(now, packet, control, &spans);
                }
            }
            Segment::Tcntl {
                control,
                xkey,
                traffic,
            } => {
                self.counters.cntl_received += 1;
                if self.role == Role::Initiator && xkey != 0 {
                    // The key exchange: from now on our packets carry the
                    // responder's key with the return bit.
                    self.peer_key = Some(xkey & !wire::xtp::KEY_RETURN);
                    self.adopt_traffic(&traffic);
                }
                self.control_input(now, packet, control, &[]);
            }
            Segment::Jcntl { .. } | Segment::Diag { .. } => {}
        }
        if options.contains(XtpOptions::END) {
            self.on_end();
        }
        self.arm_wtimer(now);
    }

    /// The peer's traffic specifier: the largest segment it takes, and the
    /// rate and burst it accepts.
    fn adopt_traffic(&mut self, traffic: &TrafficRepr) {
        if let wire::xtp::first::Traffic::Rates {
            maxdata,
            inrate,
            inburst,
            ..
        } = traffic.traffic
        {
            if maxdata > 0 {
                // What both ends' links carry (no path-MTU discovery: a
                // narrower link between them is not seen), and no more
                // than the host's last word on the path (a Packet Too Big,
                // or the trace option's room on a traced association).
                self.maxdata = (self.local_maxdata as usize)
                    .min(maxdata as usize)
                    .min(self.path_limit)
                    .max(1);
            }
            self.rate.limit_to(inrate, inburst);
        }
    }

    fn data_input(&mut self, now: Instant, packet: &XtpRepr<'_>, data: &[u8]) {
        let options = packet.options;
        self.counters.data_packets_received += 1;
        if options.contains(XtpOptions::NOERR) && !self.peer_noerr {
            self.peer_noerr = true;
            self.recv.keep_pieces();
        }
        self.counters.data_bytes_received += data.len() as u64;
        if self.read_abandoned {
            // Abbreviated close: nothing more is taken.
        } else {
            let arrival = {
                let _copy = probe::span_with(DATA_COPY_ENTER, DATA_COPY_EXIT, self.flow, || {
                    (data.len() as u32, 0)
                });
                let read_before = self.recv.read_total();
                let arrival = self.recv.insert(packet.seq, data);
                if self.recv.read_total() > read_before {
                    // A posted driver read took them: the reader's room grew.
                    self.note_alloc_growth();
                }
                arrival
            };
            match arrival {
                Arrival::InOrder | Arrival::Nothing => {}
                Arrival::Duplicate => self.counters.duplicate_packets_received += 1,
                Arrival::OutOfOrder => {
                    self.counters.out_of_order_packets += 1;
                    // Aggressive error control (study §2.7): a gap is
                    // reported at once, not at the next status request.
                    if self.config.fastnak || options.contains(XtpOptions::FASTNAK) {
                        self.owed.update = true;
                        self.owed.fastnak = true;
                    }
                }
            }
        }
        if options.contains(XtpOptions::WCLOSE) {
            self.recv
                .set_end(packet.seq.saturating_add(data.len() as u64));
        }
        if options.contains(XtpOptions::EOM) {
            // The end of a message (a driver write): a posted read
            // holding it is done.
            self.pushed_to = self
                .pushed_to
                .max(packet.seq.saturating_add(data.len() as u64));
        }
        if self.peer_noerr
            && (options.contains(XtpOptions::SREQ)
                || options.contains(XtpOptions::DREQ)
                || options.contains(XtpOptions::WCLOSE))
        {
            // The end of a burst: what is still missing is not coming.
            self.give_up_gap();
        }
        self.common_options(now, packet);
    }

    /// The bits every packet may carry: SREQ, DREQ, RCLOSE, and WCLOSE on
    /// control packets (whose `seq` is then the stream's end).
    fn common_options(&mut self, _now: Instant, packet: &XtpRepr<'_>) {
        let options = packet.options;
        self.peer_sync = packet.sync;
        if options.contains(XtpOptions::DREQ) {
            // DREQ: answered once the data reached the reader (XTP 4.0;
            // the study's "delivered and acknowledged" write, §3.5).
            let upto = match packet.segment {
                Segment::Data { data, .. } | Segment::First { data, .. } => {
                    packet.seq.saturating_add(data.len() as u64)
                }
                _ => packet.seq,
            };
            self.delivery = Some((upto, packet.sync));
        } else if options.contains(XtpOptions::SREQ) {
            self.owed.echo = Some(packet.sync);
        }
        if options.contains(XtpOptions::RCLOSE) && !self.peer_rclosed {
            self.peer_rclosed = true;
            if !(self.send.is_closed() && self.send.all_acked()) {
                // The peer reads no more (abbreviated close): what it has
                // not taken is dropped.
                self.send.abandon();
            }
        }
    }

    fn control_input(
        &mut self,
        now: Instant,
        packet: &XtpRepr<'_>,
        control: ControlRepr,
        spans: &[Span],
    ) {
        let _span = probe::span_with(XTP_CONTROL_ENTER, XTP_CONTROL_EXIT, self.flow, || {
            (spans.len() as u32, control.rseq)
        });
        let options = packet.options;
        if options.contains(XtpOptions::WCLOSE) {
            self.recv.set_end(packet.seq);
            if self.peer_noerr {
                self.give_up_gap();
            }
        }
        self.send.ack(control.rseq);
        let alloc_before = self.peer_alloc;
        if !options.contains(XtpOptions::NOFLOW) {
            self.peer_alloc = self.peer_alloc.max(control.alloc);
        } else {
            self.peer_alloc = u64::MAX;
        }
        if self.peer_alloc > alloc_before || !self.send.blocked_by(self.peer_alloc) {
            self.stalled = 0;
        } else if self.request.is_some_and(|r| r.sync == control.echo) {
            self.stalled = self.stalled.saturating_add(1);
        }
        let solicited = self.request.filter(|r| r.sync == control.echo);
        if let Some((sync, high)) = self.dreq.filter(|&(sync, _)| sync == control.echo) {
            // A DREQ is answered once the reader took the data (even
            // after a later SREQ was answered): what it asked about and
            // the peer holds is delivered.
            self.delivered = self.delivered.max(control.rseq.min(high));
            self.dreq = self.dreq.filter(|&(latest, _)| latest != sync);
        }
        if let Some(request) = solicited {
            self.request = None;
            self.retries = 0;
            self.wtimer_at = None;
            self.naked.clear();
            self.rtt_sample(now.saturating_duration_since(request.at));
            self.recover(control.rseq, spans, request.high, true);
        } else if !spans.is_empty() {
            // An unsolicited report (FASTNAK): the gaps below its last span
            // are lost for sure; what lies beyond may still be on its way.
            let upto = spans.last().map_or(control.rseq, |s| s.right);
            self.recover(control.rseq, spans, upto, false);
        }
        self.common_options(now, packet);
    }

    /// Error control: what below `upto` the peer lacks is sent again, the
    /// gaps alone (selective) or everything from `rseq` (go-back-n).
    fn recover(&mut self, rseq: u64, spans: &[Span], upto: u64, solicited: bool) {
        let upto = upto.min(self.send.high());
        if rseq >= upto {
            return;
        }
        if self.config.noerr {
            // No error control: what the answer shows missing is given
            // up, not resent (the receiver skips it too).
            if solicited {
                self.send.ack(upto);
            }
            return;
        }
        if self.config.error_control == ErrorControl::GoBackN {
            if solicited || self.last_go_back.is_none_or(|at| rseq > at) {
                self.last_go_back = Some(rseq);
                self.counters.go_backs += 1;
                self.counters.naks += 1;
                self.send.go_back(rseq);
            }
            return;
        }
        let mut gaps = Vec::new();
        let mut cursor = rseq;
        for span in spans.iter().filter(|s| s.right > rseq) {
            if span.left > cursor {
                gaps.push((cursor, span.left.min(upto)));
            }
            cursor = cursor.max(span.right);
            if cursor >= upto {
                break;
            }
        }
        if cursor < upto {
            gaps.push((cursor, upto));
        }
        gaps.retain(|&(a, b)| a < b);
        if !solicited {
            gaps.retain(|gap| !self.naked.contains(gap));
            if self.naked.len() > MAX_NAKED {
                // Bounded memory: forgetting only risks a second resend.
                self.naked.clear();
            }
            self.naked.extend(gaps.iter().copied());
        }
        if gaps.is_empty() {
            return;
        }
        self.counters.naks += gaps.len() as u64;
        self.send.schedule(&gaps, solicited);
    }
}
