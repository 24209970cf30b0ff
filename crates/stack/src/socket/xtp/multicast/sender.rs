//! The sending end of a multicast association: the stream, what each
//! receiver reported, and the requests that drive error control.
//!
//! Rules (docs/xtp.md, "Multicast"): the group's `rseq` is the least of
//! the receivers' and frees the send buffer; new data never pass the
//! least `alloc`; an answer to the latest request has its gaps (below what
//! was sent when the request went out, outside its spans) resent to the
//! group, each range once per request; a receiver that answers nothing
//! for `retries` requests in a row while holding the group back, with no
//! answer heard that could have damped it, drops out (the study's "if a
//! receiver cannot keep up a multicast conversation, it will drop out").

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use wire::xtp::first::Traffic;
use wire::xtp::{
    Address, AddressRepr, ControlRepr, Segment, Service, TrafficRepr, XtpOptions, XtpRepr,
    KEY_RETURN,
};

use super::{gaps, GroupConfig, GroupCounters, GroupState, MAX_RECEIVERS};
use crate::socket::xtp::packet::{Body, Outgoing};
use crate::socket::xtp::send_stream::SendStream;
use crate::time::Instant;

/// Ranges scheduled again within one request round at most; reports
/// past it wait for the next request.
const MAX_RESEND_RANGES: usize = 1024;

/// What the sender knows of one receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Its key (JCNTL's `xkey`).
    pub key: u64,
    /// The highest `rseq` and `alloc` it reported.
    pub rseq: u64,
    pub alloc: u64,
    /// The request (`sync`) it last answered.
    answered: u32,
    /// Requests in a row it left unanswered while it held the group back
    /// and nothing heard could have damped it.
    silent: u32,
}

/// What an arriving packet was to the sender, for the host to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderInput {
    Taken,
    /// A join past [`MAX_RECEIVERS`], or after data were freed.
    Refused,
    /// A control from a receiver that never joined.
    Unknown,
    /// Not a receiver's packet type.
    Ignored,
}

#[derive(Debug)]
pub struct GroupSender {
    config: GroupConfig,
    key: u64,
    local: SocketAddr,
    group: SocketAddr,
    maxdata: usize,
    stream: SendStream,
    members: BTreeMap<IpAddr, Member>,
    state: GroupState,
    /// The latest request's `sync`, and the stream's high mark then.
    sync: u32,
    request_high: u64,
    /// Least `rseq` heard answering the latest request.
    heard_min: Option<u64>,
    /// Ranges scheduled again since the latest request.
    resent_round: Vec<(u64, u64)>,
    first_due: bool,
    request_due: bool,
    /// FIRSTs sent without enough joins, requests in a row not answered by all.
    firsts: u32,
    unanswered: u32,
    wtimer: Option<Instant>,
    /// Bytes sent as new since the last request (a request every quarter
    /// of the send buffer, as unicast).
    since_request: usize,
    counters: GroupCounters,
}

impl GroupSender {
    /// A sender from `local` to `group` with `key`, sending packets of at
    /// most `maxdata` bytes; FIRST goes out at the first poll.
    pub fn new(
        config: GroupConfig,
        key: u64,
        local: SocketAddr,
        group: SocketAddr,
        maxdata: usize,
    ) -> Self {
        Self {
            config,
            key: key & !KEY_RETURN,
            local,
            group,
            maxdata: maxdata.max(1),
            stream: SendStream::new(config.send_buffer),
            members: BTreeMap::new(),
            state: GroupState::Joining,
            sync: 0,
            request_high: 0,
            heard_min: None,
            resent_round: Vec::new(),
            first_due: true,
            request_due: false,
            firsts: 0,
            unanswered: 0,
            wtimer: None,
            since_request: 0,
            counters: GroupCounters::default(),
        }
    }

    pub fn key(&self) -> u64 {
        self.key
    }
    pub fn local(&self) -> SocketAddr {
        self.local
    }
    pub fn group(&self) -> SocketAddr {
        self.group
    }
    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn counters(&self) -> GroupCounters {
        self.counters
    }
    pub fn members(&self) -> impl Iterator<Item = (&IpAddr, &Member)> {
        self.members.iter()
    }
    /// Bytes held for the receivers (written, not yet had by all).
    pub fn send_queued(&self) -> usize {
        self.stream.queued()
    }
    /// The group's `rseq`: every receiver has every byte below it.
    pub fn group_rseq(&self) -> u64 {
        self.stream.una()
    }

    /// Copies what fits of `data` into the send buffer.
    pub fn send(&mut self, data: &[u8]) -> usize {
        if self.stream.is_closed() || self.state == GroupState::Closed {
            return 0;
        }
        self.stream.write(data)
    }

    /// No more data: WCLOSE goes with the last byte.
    pub fn shutdown(&mut self) {
        self.stream.close();
        if self.state == GroupState::Streaming && !self.stream.can_send(self.group_alloc()) {
            self.request_due = true;
        }
    }

    /// New data never pass the least `alloc` of the receivers.
    fn group_alloc(&self) -> u64 {
        self.members.values().map(|m| m.alloc).min().unwrap_or(0)
    }

    fn outstanding(&self) -> bool {
        self.stream.in_flight()
            || self.stream.blocked_by(self.group_alloc())
            || (self.stream.is_closed() && !self.stream.all_acked())
    }

    /// A packet from `from` under our key with the return bit.
    pub fn input(&mut self, from: IpAddr, repr: &XtpRepr<'_>) -> SenderInput {
        // A JCNTL from a known receiver answers a request like a CNTL
        // (its join was pending when the request came) but carries no
        // spans: its gaps wait for a CNTL or ECNTL.
        let (control, spans, gaps_known) = match &repr.segment {
            Segment::Jcntl { control, xkey, .. } if !self.members.contains_key(&from) => {
                return self.join(from, *control, *xkey)
            }
            Segment::Jcntl { control, .. } => (*control, Vec::new(), false),
            Segment::Cntl(control) => (*control, Vec::new(), true),
            Segment::Ecntl { control, spans } => (
                *control,
                spans.iter().map(|s| (s.left, s.right)).collect(),
                true,
            ),
            _ => return SenderInput::Ignored,
        };
        self.counters.controls_received += 1;
        if repr.options.contains(XtpOptions::END) {
            // The receiver left: it holds nothing back from now on.
            if self.members.remove(&from).is_some() {
                self.counters.receivers_left += 1;
                self.advance();
            }
            return SenderInput::Taken;
        }
        let high = self.stream.high();
        let Some(member) = self.members.get_mut(&from) else {
            return SenderInput::Unknown;
        };
        // Untrusted: never past what was sent.
        let rseq = control.rseq.min(high);
        member.rseq = member.rseq.max(rseq);
        member.alloc = member.alloc.max(control.alloc);
        member.silent = 0;
        if control.echo == self.sync {
            member.answered = self.sync;
            self.heard_min = Some(self.heard_min.map_or(rseq, |m| m.min(rseq)));
            if gaps_known {
                self.resend_gaps(rseq, &spans);
            }
        }
        self.advance();
        SenderInput::Taken
    }

    fn join(&mut self, from: IpAddr, control: ControlRepr, xkey: u64) -> SenderInput {
        // A receiver joins at byte 0: once bytes were freed it cannot have
        // them (late join is not built).
        if self.members.len() >= MAX_RECEIVERS || self.stream.una() > 0 {
            self.counters.receivers_refused += 1;
            return SenderInput::Refused;
        }
        self.members.insert(
            from,
            Member {
                key: xkey,
                rseq: control.rseq.min(self.stream.high()),
                alloc: control.alloc,
                answered: control.echo,
                silent: 0,
            },
        );
        self.counters.receivers_joined += 1;
        if self.state == GroupState::Joining && self.members.len() >= self.config.receivers.max(1) {
            self.state = GroupState::Streaming;
            self.wtimer = None;
            self.unanswered = 0;
        }
        self.advance();
        SenderInput::Taken
    }

    /// Schedules the gaps of an answer to the latest request, each range
    /// once per request (another receiver's report of the same loss adds
    /// nothing).
    fn resend_gaps(&mut self, rseq: u64, spans: &[(u64, u64)]) {
        let missing = gaps(rseq.max(self.stream.una()), self.request_high, spans);
        let mut fresh = Vec::new();
        for (start, stop) in missing {
            fresh.extend(gaps(start, stop, &self.resent_round));
        }
        // Untrusted spans: the ranges held for one round stay bounded.
        if fresh.is_empty() || self.resent_round.len() >= MAX_RESEND_RANGES {
            return;
        }
        self.stream.schedule(&fresh, false);
        self.resent_round.extend(fresh);
        self.resent_round.sort_unstable();
        merge(&mut self.resent_round);
    }

    /// Frees what every receiver has; notes the end of the stream.
    fn advance(&mut self) {
        if self.state == GroupState::Joining || self.state == GroupState::Closed {
            return;
        }
        let Some(least) = self.members.values().map(|m| m.rseq).min() else {
            // Every receiver left or dropped out: nobody to send to.
            self.state = GroupState::Closed;
            self.wtimer = None;
            self.request_due = false;
            return;
        };
        self.stream.ack(least);
        if self.stream.is_closed() && self.stream.all_acked() {
            self.state = GroupState::Done;
            self.wtimer = None;
            self.request_due = false;
        }
    }

    /// The next packet to send to the group, if any.
    pub fn poll_output(&mut self, now: Instant) -> Option<Outgoing> {
        match self.state {
            GroupState::Joining if self.first_due => {
                self.first_due = false;
                self.firsts += 1;
                return Some(self.first(now));
            }
            GroupState::Streaming => {}
            _ => return None,
        }
        let alloc = self.group_alloc();
        if let Some(piece) = self.stream.next_piece(alloc, self.maxdata) {
            let data = self.stream.bytes(piece.seq, piece.len);
            let end = piece.seq + piece.len as u64;
            let mut options = XtpOptions::MULTI;
            if self.stream.end() == Some(end) {
                options |= XtpOptions::WCLOSE;
            }
            self.counters.data_packets += 1;
            if piece.resent {
                self.counters.resent_packets += 1;
                self.counters.resent_bytes += piece.len as u64;
            } else {
                self.since_request += piece.len;
            }
            // The last packet of a burst (nothing more may go now) asks for
            // status, as does every quarter of the send buffer.
            let burst_end = !self.stream.can_send(alloc);
            let mut sync = self.sync;
            if burst_end || self.request_due || self.since_request >= self.config.send_buffer / 4 {
                options |= XtpOptions::SREQ;
                sync = self.new_request(now);
            }
            return Some(Outgoing {
                key: self.key,
                options,
                sort: 0,
                btag: None,
                sync,
                seq: piece.seq,
                body: Body::Data(data),
            });
        }
        if !self.request_due {
            return None;
        }
        let mut options = XtpOptions::MULTI | XtpOptions::SREQ;
        if self
            .stream
            .end()
            .is_some_and(|end| self.stream.nxt() >= end)
        {
            options |= XtpOptions::WCLOSE;
        }
        let sync = self.new_request(now);
        Some(Outgoing {
            key: self.key,
            options,
            sort: 0,
            btag: None,
            sync,
            seq: self.stream.nxt(),
            body: Body::Cntl(ControlRepr {
                rseq: 0,
                alloc: 0,
                echo: 0,
            }),
        })
    }

    fn first(&mut self, now: Instant) -> Outgoing {
        self.counters.requests += 1;
        self.sync = self.sync.wrapping_add(1);
        self.wtimer = Some(now + self.config.wtimer);
        let address = match (self.group.ip(), self.local.ip()) {
            (IpAddr::V4(dst_host), IpAddr::V4(src_host)) => Address::Ipv4 {
                dst_host,
                src_host,
                dst_port: self.group.port(),
                src_port: self.local.port(),
            },
            (IpAddr::V6(dst_host), IpAddr::V6(src_host)) => Address::Ipv6 {
                dst_host,
                src_host,
                dst_port: self.group.port(),
                src_port: self.local.port(),
            },
            // The host opens a sender from an address of the group's family.
            _ => Address::Null { address: 0 },
        };
        Outgoing {
            key: self.key,
            options: XtpOptions::MULTI | XtpOptions::SREQ,
            sort: 0,
            btag: None,
            sync: self.sync,
            seq: 0,
            body: Body::First {
                address: AddressRepr { domain: 0, address },
                traffic: TrafficRepr {
                    service: Service::MulticastStream,
                    traffic: Traffic::Rates {
                        maxdata: u32::try_from(self.maxdata).unwrap_or(u32::MAX),
                        inrate: 0,
                        inburst: 0,
                        outrate: 0,
                        outburst: 0,
                    },
                },
                data: Vec::new(),
            },
        }
    }

    /// Starts a request round: counts who left the last one unanswered.
    fn new_request(&mut self, now: Instant) -> u32 {
        let previous = self.sync;
        let heard = self.heard_min;
        let high = self.request_high;
        let mut dropped = Vec::new();
        let mut missing = false;
        for (address, member) in &mut self.members {
            let held_back = member.rseq < high;
            // An answer at or below what it last told us could have damped it.
            let damped = heard.is_some_and(|h| h <= member.rseq);
            if member.answered == previous || !held_back || damped {
                member.silent = 0;
            } else {
                missing = true;
                member.silent += 1;
                if member.silent > self.config.retries {
                    dropped.push(*address);
                }
            }
        }
        for address in dropped {
            self.members.remove(&address);
            self.counters.receivers_dropped += 1;
        }
        // WTIMER backs off while a receiver stays silent (study: one that
        // "cannot keep up ... will drop out", after `retries`).
        self.unanswered = if missing {
            self.unanswered.saturating_add(1)
        } else {
            0
        };
        self.sync = self.sync.wrapping_add(1);
        self.request_high = self.stream.high();
        self.heard_min = None;
        self.resent_round.clear();
        self.request_due = false;
        self.since_request = 0;
        self.counters.requests += 1;
        let backoff = self.config.wtimer * 2u32.pow(self.unanswered.min(5));
        self.wtimer = Some(now + backoff);
        self.advance();
        self.sync
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.wtimer
    }

    /// WTIMER: FIRST again while too few joined, else a request while the
    /// group holds anything back.
    pub fn poll_timers(&mut self, now: Instant) {
        if self.wtimer.is_none_or(|t| t > now) {
            return;
        }
        self.wtimer = None;
        match self.state {
            GroupState::Joining if self.firsts > self.config.retries => {
                self.state = GroupState::Closed;
            }
            GroupState::Joining => self.first_due = true,
            GroupState::Streaming if self.outstanding() => self.request_due = true,
            _ => {}
        }
    }

    /// Whether a poll would send something now.
    pub fn wants_output(&self) -> bool {
        match self.state {
            GroupState::Joining => self.first_due,
            GroupState::Streaming => self.request_due || self.stream.can_send(self.group_alloc()),
            _ => false,
        }
    }

    /// The WTIMER period now (for tests of the backoff).
    pub fn wtimer_period(&self) -> Duration {
        self.config.wtimer * 2u32.pow(self.unanswered.min(5))
    }
}

/// Merges overlapping or touching ranges of a sorted list.
fn merge(ranges: &mut Vec<(u64, u64)>) {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(start, stop) in ranges.iter() {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(stop),
            _ => out.push((start, stop)),
        }
    }
    *ranges = out;
}
