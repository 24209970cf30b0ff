//! A receiving context of a multicast association: takes the sender's
//! stream for its reader, answers FIRST with JCNTL, and answers status
//! requests after a random slot delay unless another receiver's answer
//! made its own useless (damping).
//!
//! Damping rule (docs/xtp.md, "Multicast"): a pending answer is cancelled
//! when another receiver's control packet answering the same request
//! reports an `rseq` and an `alloc` no greater than what this receiver
//! last reported. The sender's least `rseq` and `alloc` are then already
//! at or below that packet's, so this answer could not move the group;
//! comparing with what this receiver *has* instead (the study's "a similar
//! one has already been sent") could leave the sender holding a stale
//! report from it for ever.

use std::net::{IpAddr, SocketAddr};

use wire::xtp::first::{Address, Traffic};
use wire::xtp::{
    AddressRepr, ControlRepr, Segment, Service, TrafficRepr, XtpOptions, XtpRepr, KEY_RETURN,
};

use super::{GroupConfig, GroupCounters, GroupState, MAX_SPANS};
use crate::random::SplitMix64;
use crate::socket::xtp::packet::{Body, Outgoing};
use crate::socket::xtp::recv_stream::RecvStream;
use crate::time::Instant;

/// An answer waiting for its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    due: Instant,
    /// The request's `sync`.
    echo: u32,
    /// A JCNTL (answering FIRST); never damped.
    join: bool,
}

/// What an arriving packet was to the receiver, for the host to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiverInput {
    Taken,
    /// Not for this context (another sender, another port).
    NotOurs,
}

#[derive(Debug)]
pub struct GroupReceiver {
    config: GroupConfig,
    /// The group and port it listens on, and its own address (a source
    /// it ignores: its own control packets are not looped back, but a
    /// second context on the host would hear them).
    group: SocketAddr,
    own: IpAddr,
    key: u64,
    /// The sender's address and key, once its FIRST arrived.
    sender: Option<(IpAddr, u64)>,
    stream: RecvStream,
    state: GroupState,
    pending: Option<Pending>,
    /// What the sender last heard from us.
    reported: Option<(u64, u64)>,
    /// Leave with END at the next poll.
    leaving: bool,
    rng: SplitMix64,
    counters: GroupCounters,
}

impl GroupReceiver {
    pub fn new(config: GroupConfig, group: SocketAddr, own: IpAddr, key: u64, seed: u64) -> Self {
        Self {
            config,
            group,
            own,
            key: key & !KEY_RETURN,
            sender: None,
            stream: RecvStream::new(config.recv_buffer, true),
            state: GroupState::Joining,
            pending: None,
            reported: None,
            leaving: false,
            rng: SplitMix64::new(seed ^ config.seed),
            counters: GroupCounters::default(),
        }
    }

    pub fn group(&self) -> SocketAddr {
        self.group
    }
    pub fn own(&self) -> IpAddr {
        self.own
    }
    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn counters(&self) -> GroupCounters {
        self.counters
    }
    pub fn sender(&self) -> Option<(IpAddr, u64)> {
        self.sender
    }
    pub fn readable(&self) -> usize {
        self.stream.readable()
    }
    pub fn arrived_total(&self) -> u64 {
        self.stream.arrived_total()
    }
    /// The reader took the whole stream.
    pub fn at_eof(&self) -> bool {
        self.stream.at_eof()
    }

    /// Copies readable bytes into `out`.
    pub fn recv(&mut self, out: &mut [u8]) -> usize {
        self.stream.recv(out)
    }

    /// Leaves the association: an END tells the sender to stop waiting
    /// for us (nothing to send before the sender was heard).
    pub fn leave(&mut self) {
        if self.sender.is_some() && self.state != GroupState::Closed {
            self.leaving = true;
        } else {
            self.state = GroupState::Closed;
        }
    }

    /// Whether this context takes a packet from `from` with `key` (the
    /// sender's, or a fellow receiver's answer to it).
    pub fn wants(&self, from: IpAddr, repr: &XtpRepr<'_>) -> bool {
        if self.state == GroupState::Closed || from == self.own {
            return false;
        }
        match self.sender {
            Some((address, key)) => {
                repr.key == key && from == address || repr.key == key | KEY_RETURN
            }
            None => match &repr.segment {
                Segment::First { address, .. } => first_port(address) == Some(self.group.port()),
                _ => false,
            },
        }
    }

    /// A packet [`wants`](Self::wants) accepted.
    pub fn input(&mut self, now: Instant, from: IpAddr, repr: &XtpRepr<'_>) -> ReceiverInput {
        if !self.wants(from, repr) {
            return ReceiverInput::NotOurs;
        }
        if repr.key & KEY_RETURN != 0 {
            self.hear_peer(repr);
            return ReceiverInput::Taken;
        }
        let options = repr.options;
        match &repr.segment {
            Segment::First { traffic, .. } => {
                if traffic.service != Service::MulticastStream {
                    return ReceiverInput::NotOurs;
                }
                if self.sender.is_none() {
                    self.sender = Some((from, repr.key));
                    self.state = GroupState::Streaming;
                }
                // Each copy of FIRST is answered (its JCNTL may be lost).
                self.pending = Some(Pending {
                    due: now + self.slot_delay(),
                    echo: repr.sync,
                    join: true,
                });
                return ReceiverInput::Taken;
            }
            Segment::Data { data, .. } => {
                self.counters.data_received += 1;
                let arrival = self.stream.insert(repr.seq, data);
                if arrival == crate::socket::xtp::recv_stream::Arrival::Duplicate {
                    self.counters.duplicates += 1;
                }
                if options.contains(XtpOptions::WCLOSE) {
                    self.stream
                        .set_end(repr.seq.saturating_add(data.len() as u64));
                }
            }
            Segment::Cntl(_) => {
                if options.contains(XtpOptions::WCLOSE) {
                    self.stream.set_end(repr.seq);
                }
            }
            _ => return ReceiverInput::Taken,
        }
        if self.stream.complete() {
            self.state = GroupState::Done;
        }
        if options.contains(XtpOptions::SREQ) || options.contains(XtpOptions::DREQ) {
            self.ask(now, repr.sync);
        }
        ReceiverInput::Taken
    }

    /// A request: answer after a slot delay (slotting); a newer request
    /// before the slot came takes the pending answer over (a pending JCNTL
    /// then answers it too).
    fn ask(&mut self, now: Instant, sync: u32) {
        match &mut self.pending {
            Some(p) => p.echo = sync,
            None => {
                self.pending = Some(Pending {
                    due: now + self.slot_delay(),
                    echo: sync,
                    join: false,
                })
            }
        }
    }

    fn slot_delay(&mut self) -> std::time::Duration {
        let slot = u64::try_from(self.config.slot.as_nanos()).unwrap_or(u64::MAX);
        if !self.config.slotting || slot == 0 {
            return std::time::Duration::ZERO;
        }
        std::time::Duration::from_nanos(self.rng.next_u64() % slot)
    }

    /// Another receiver's control packet: damping.
    fn hear_peer(&mut self, repr: &XtpRepr<'_>) {
        let control = match &repr.segment {
            Segment::Cntl(c) | Segment::Ecntl { control: c, .. } => *c,
            _ => return,
        };
        if !self.config.damping || repr.options.contains(XtpOptions::END) {
            return;
        }
        let (Some(pending), Some((rseq, alloc))) = (self.pending, self.reported) else {
            return;
        };
        if !pending.join
            && control.echo == pending.echo
            && control.rseq <= rseq
            && control.alloc <= alloc
        {
            self.pending = None;
            self.counters.controls_damped += 1;
        }
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        if self.leaving {
            return None;
        }
        self.pending.map(|p| p.due)
    }

    /// Whether a poll would send something now.
    pub fn wants_output(&self, now: Instant) -> bool {
        self.leaving || self.pending.is_some_and(|p| p.due <= now)
    }

    /// The next packet to send to the group, if any: END when leaving,
    /// else the answer whose slot came.
    pub fn poll_output(&mut self, now: Instant) -> Option<Outgoing> {
        let (_, sender_key) = self.sender?;
        let key = sender_key | KEY_RETURN;
        let control = ControlRepr {
            rseq: self.stream.rseq(),
            alloc: self.stream.alloc(),
            echo: self.pending.map_or(0, |p| p.echo),
        };
        if self.leaving {
            self.leaving = false;
            self.pending = None;
            self.state = GroupState::Closed;
            self.counters.controls_sent += 1;
            return Some(control_packet(key, XtpOptions::END, Body::Cntl(control)));
        }
        let pending = self.pending.filter(|p| p.due <= now)?;
        self.pending = None;
        self.counters.controls_sent += 1;
        self.reported = Some((control.rseq, control.alloc));
        if pending.join {
            let address = AddressRepr {
                domain: 0,
                address: match (self.group.ip(), self.own) {
                    (IpAddr::V4(dst_host), IpAddr::V4(src_host)) => Address::Ipv4 {
                        dst_host,
                        src_host,
                        dst_port: self.group.port(),
                        src_port: self.group.port(),
                    },
                    (IpAddr::V6(dst_host), IpAddr::V6(src_host)) => Address::Ipv6 {
                        dst_host,
                        src_host,
                        dst_port: self.group.port(),
                        src_port: self.group.port(),
                    },
                    _ => Address::Null { address: 0 },
                },
            };
            let traffic = TrafficRepr {
                service: Service::MulticastStream,
                traffic: Traffic::None { traffic: 0 },
            };
            let body = Body::Jcntl {
                control,
                xkey: self.key,
                address,
                traffic,
            };
            return Some(control_packet(key, XtpOptions::empty(), body));
        }
        let spans = self.stream.spans(MAX_SPANS);
        let body = if spans.is_empty() {
            Body::Cntl(control)
        } else {
            Body::Ecntl(control, spans)
        };
        Some(control_packet(key, XtpOptions::empty(), body))
    }
}

fn control_packet(key: u64, options: XtpOptions, body: Body) -> Outgoing {
    Outgoing {
        key,
        options: options | XtpOptions::MULTI,
        sort: 0,
        btag: None,
        sync: 0,
        seq: 0,
        body,
    }
}

/// The destination port FIRST's address segment names.
fn first_port(address: &AddressRepr) -> Option<u16> {
    match address.address {
        Address::Ipv4 { dst_port, .. } | Address::Ipv6 { dst_port, .. } => Some(dst_port),
        Address::Null { .. } => None,
    }
}
