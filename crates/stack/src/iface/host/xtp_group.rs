//! XTP multicast in the host: the table of multicast contexts (senders
//! and receivers, `socket::xtp::multicast`), packets to a group handed to
//! them, what they send emitted to the group, their timers, and the
//! stream-queue probes, as `xtp.rs` does for unicast associations.

use std::net::{IpAddr, SocketAddr};

use probe::Flow;
use wire::xtp::{Segment, XtpOptions, XtpRepr, KEY_RETURN};

use super::Host;
use crate::iface::route::InterfaceId;
use crate::probes::{
    RECV_QUEUE_ENQUEUE, SEND_QUEUE_DEQUEUE, XTP_CONTROL_ENTER, XTP_CONTROL_EXIT, XTP_RETRANSMIT,
    XTP_TIMER_ENTER, XTP_TIMER_EXIT,
};
use crate::random::SplitMix64;
use crate::socket::probe_len;
use crate::socket::xtp::multicast::receiver::ReceiverInput;
use crate::socket::xtp::multicast::sender::SenderInput;
use crate::socket::xtp::multicast::{GroupReceiver, GroupSender, GroupState};
use crate::socket::xtp::sockets::Peer;
use crate::time::Instant;

/// Multicast contexts a host holds at most.
pub const MAX_GROUP_SOCKETS: usize = 64;

/// Packets one context sends per poll at most (as unicast's budget).
const OUTPUT_BUDGET: usize = 64;

/// A multicast sender or receiver context of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct XtpGroupHandle(pub(super) usize);

#[derive(Debug)]
pub(super) enum GroupSocket {
    Sender(Box<GroupSender>),
    Receiver(Box<GroupReceiver>),
}

#[derive(Debug)]
pub(super) struct GroupSlot {
    pub socket: GroupSocket,
    pub interface: InterfaceId,
    pub flow: Flow,
    /// The context joined the group itself (and leaves it when freed).
    pub joined: bool,
    /// The application closed it: freed once its last packet left.
    pub released: bool,
    /// Probe marks: bytes written, queued to send, acknowledged by all;
    /// arrived in order, read.
    pub written: u64,
    pub sent_queued: usize,
    acked: u64,
    arrived: u64,
    pub read: u64,
}

impl GroupSlot {
    pub fn new(socket: GroupSocket, interface: InterfaceId, flow: Flow, joined: bool) -> Self {
        Self {
            socket,
            interface,
            flow,
            joined,
            released: false,
            written: 0,
            sent_queued: 0,
            acked: 0,
            arrived: 0,
            read: 0,
        }
    }
}

/// The host's multicast contexts.
#[derive(Debug)]
pub struct XtpGroups {
    pub(super) slots: Vec<Option<GroupSlot>>,
    pub(super) rng: SplitMix64,
}

impl XtpGroups {
    pub fn new(seed: u64) -> Self {
        Self {
            slots: Vec::new(),
            // Apart from the unicast keys' generator.
            rng: SplitMix64::new(seed ^ 0x5854_505f_4d43_4153),
        }
    }

    /// A random key: never zero, return bit clear.
    pub(super) fn fresh_key(&mut self) -> u64 {
        loop {
            let key = self.rng.next_u64() & !KEY_RETURN;
            if key != 0 {
                return key;
            }
        }
    }

    /// Stores `slot`; none when the table is full.
    pub(super) fn insert(&mut self, slot: GroupSlot) -> Option<XtpGroupHandle> {
        if let Some(index) = self.slots.iter().position(Option::is_none) {
            self.slots[index] = Some(slot);
            return Some(XtpGroupHandle(index));
        }
        if self.slots.len() >= MAX_GROUP_SOCKETS {
            return None;
        }
        self.slots.push(Some(slot));
        Some(XtpGroupHandle(self.slots.len() - 1))
    }

    pub(super) fn get(&self, handle: XtpGroupHandle) -> Option<&GroupSlot> {
        self.slots.get(handle.0)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, handle: XtpGroupHandle) -> Option<&mut GroupSlot> {
        self.slots.get_mut(handle.0)?.as_mut()
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.slots
            .iter()
            .flatten()
            .filter_map(|slot| match &slot.socket {
                GroupSocket::Sender(s) => s.next_deadline(),
                GroupSocket::Receiver(r) => r.next_deadline(),
            })
            .min()
    }
}

impl Host {
    /// An XTP packet from `from` to the multicast `group`: to every
    /// context of that group it is for (a receiver's answer goes to the
    /// sender and to the other receivers, which damp theirs).
    pub(super) fn xtp_group_input(
        &mut self,
        now: Instant,
        from: IpAddr,
        group: IpAddr,
        repr: &XtpRepr<'_>,
    ) {
        if !repr.options.contains(XtpOptions::MULTI) {
            self.count_drop("xtp_group_not_multi");
            return;
        }
        let mut taken = false;
        let mut refusals: Vec<&'static str> = Vec::new();
        let control = matches!(
            repr.segment,
            Segment::Cntl(_) | Segment::Ecntl { .. } | Segment::Jcntl { .. }
        );
        for index in 0..self.xtp_groups.slots.len() {
            let Some(slot) = self.xtp_groups.slots[index].as_mut() else {
                continue;
            };
            // Control processing, as unicast's `xtp.control` span.
            let _span =
                control.then(|| probe::span(XTP_CONTROL_ENTER, XTP_CONTROL_EXIT, 0, slot.flow, 0));
            match &mut slot.socket {
                GroupSocket::Sender(s)
                    if s.group().ip() == group && repr.key == s.key() | KEY_RETURN =>
                {
                    taken = true;
                    match s.input(from, repr) {
                        SenderInput::Refused => refusals.push("xtp_group_join_refused"),
                        SenderInput::Unknown => refusals.push("xtp_group_unknown_receiver"),
                        SenderInput::Taken | SenderInput::Ignored => {}
                    }
                }
                GroupSocket::Receiver(r) if r.group().ip() == group => {
                    taken |= r.input(now, from, repr) == ReceiverInput::Taken;
                }
                _ => {}
            }
            self.xtp_group_observe(index);
        }
        for reason in refusals {
            self.count_drop(reason);
        }
        if !taken {
            self.count_drop("xtp_group_no_context");
        }
        self.xtp.output_pending = true;
    }

    /// Sends what every multicast context has to send, to its group.
    pub(super) fn xtp_group_output(&mut self, now: Instant) {
        for index in 0..self.xtp_groups.slots.len() {
            for sent in 0..=OUTPUT_BUDGET {
                if sent == OUTPUT_BUDGET {
                    self.xtp.output_pending = true;
                    break;
                }
                let Some(slot) = self.xtp_groups.slots[index].as_mut() else {
                    break;
                };
                let flow = slot.flow;
                let mut resent = false;
                let (out, ends) = match &mut slot.socket {
                    GroupSocket::Sender(s) => {
                        let before = s.counters().resent_packets;
                        let out = s.poll_output(now);
                        resent = s.counters().resent_packets > before;
                        (out, (s.local(), s.group()))
                    }
                    GroupSocket::Receiver(r) => {
                        let group = r.group();
                        let own = SocketAddr::new(r.own(), group.port());
                        (r.poll_output(now), (own, group))
                    }
                };
                let Some(out) = out else {
                    break;
                };
                if resent {
                    // Selective resend to the group (`aux` 0, as unicast's).
                    probe::record_with(XTP_RETRANSMIT, flow, || (probe_len(out.data_len()), 0));
                }
                self.xtp_emit(now, flow, ends, Peer::Ip(ends.1.ip()), &out);
            }
            self.xtp_group_observe(index);
        }
    }

    /// Runs the multicast timers that are due.
    pub(super) fn xtp_group_timers(&mut self, now: Instant) {
        for index in 0..self.xtp_groups.slots.len() {
            let Some(slot) = self.xtp_groups.slots[index].as_mut() else {
                continue;
            };
            let flow = slot.flow;
            match &mut slot.socket {
                GroupSocket::Sender(s) if s.next_deadline().is_some_and(|t| t <= now) => {
                    let _span = probe::span(XTP_TIMER_ENTER, XTP_TIMER_EXIT, 0, flow, 0);
                    s.poll_timers(now);
                    self.xtp.output_pending = true;
                }
                GroupSocket::Receiver(r) if r.wants_output(now) => {
                    // A slot came: the answer leaves at this poll's output.
                    self.xtp.output_pending = true;
                }
                _ => {}
            }
            self.xtp_group_observe(index);
        }
    }

    pub(super) fn xtp_group_next_deadline(&self) -> Option<Instant> {
        self.xtp_groups.next_deadline()
    }

    /// The stream-queue probes for what changed (bytes every receiver has
    /// left the sender's queue; bytes in order joined a receiver's), and
    /// frees a released context whose last packet left.
    pub(super) fn xtp_group_observe(&mut self, index: usize) {
        let Some(slot) = self
            .xtp_groups
            .slots
            .get_mut(index)
            .and_then(Option::as_mut)
        else {
            return;
        };
        let flow = slot.flow;
        let finished = match &slot.socket {
            GroupSocket::Sender(s) => {
                let queued = s.send_queued();
                if queued < slot.sent_queued {
                    let acked = slot.sent_queued - queued;
                    slot.acked += acked as u64;
                    probe::record_with(SEND_QUEUE_DEQUEUE, flow, || (probe_len(acked), slot.acked));
                }
                slot.sent_queued = queued;
                true
            }
            GroupSocket::Receiver(r) => {
                let arrived = r.arrived_total();
                if arrived > slot.arrived {
                    let joined = arrived - slot.arrived;
                    slot.arrived = arrived;
                    probe::record_with(RECV_QUEUE_ENQUEUE, flow, || {
                        (probe_len(joined as usize), arrived)
                    });
                }
                r.state() == GroupState::Closed && !r.wants_output(Instant::ZERO)
            }
        };
        if slot.released && finished {
            let (interface, joined, group) = (slot.interface, slot.joined, group_of(slot));
            self.xtp_groups.slots[index] = None;
            if joined {
                let _ = self.leave_multicast(interface, group);
            }
        }
    }
}

/// The group address a context is for.
pub(super) fn group_of(slot: &GroupSlot) -> IpAddr {
    match &slot.socket {
        GroupSocket::Sender(s) => s.group().ip(),
        GroupSocket::Receiver(r) => r.group().ip(),
    }
}
