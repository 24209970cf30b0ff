//! The application's side of XTP multicast: open a sender to a group or a
//! receiver context for a group and port, write, read, close, and look at
//! what a context counted. `docs/xtp.md` ("Multicast") has the protocol.

use std::net::{IpAddr, SocketAddr};

use super::multicast::MulticastError;
use super::xtp_group::{GroupSlot, GroupSocket, XtpGroupHandle};
use super::{Host, InterfaceId};
use crate::probes::{
    RECV_QUEUE_DEQUEUE, SEND_QUEUE_ENQUEUE, SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, SOCKET_SEND_ENTER,
    SOCKET_SEND_EXIT,
};
use crate::socket::probe_len;
use crate::socket::xtp::multicast::sender::Member;
use crate::socket::xtp::multicast::{
    GroupConfig, GroupCounters, GroupReceiver, GroupSender, GroupState,
};

/// Why a multicast call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum XtpGroupError {
    #[error("no such XTP multicast context (closed, or never opened)")]
    InvalidHandle,
    #[error("the context is a receiver")]
    NotSender,
    #[error("the context is a sender")]
    NotReceiver,
    #[error(transparent)]
    Multicast(MulticastError),
    #[error("the interface has no address of {0}'s family to send from")]
    NoSourceAddress(IpAddr),
    #[error("the host holds its maximum number of XTP multicast contexts")]
    TooManySockets,
    #[error("the call would block")]
    WouldBlock,
    #[error("the sending half was closed, or the association is over")]
    Shutdown,
}

/// What a multicast context is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XtpGroupStatus {
    pub state: GroupState,
    /// Sender: receivers it knows (joined, not left or dropped).
    pub receivers: usize,
    /// Sender: every receiver has the bytes below this.
    pub group_rseq: u64,
    /// Receiver: bytes waiting for the reader; whether it read to the end.
    pub readable: usize,
    pub eof: bool,
    pub counters: GroupCounters,
}

impl Host {
    /// A multicast sender on `interface` to `group` (address and port):
    /// joins the group there (the receivers' answers go to it), and sends
    /// FIRST at the next poll; data follow once `config.receivers` joined.
    pub fn xtp_group_sender(
        &mut self,
        interface: InterfaceId,
        group: SocketAddr,
        config: GroupConfig,
    ) -> Result<XtpGroupHandle, XtpGroupError> {
        let (own, joined) = self.xtp_group_join(interface, group.ip())?;
        let ip_header = if own.is_ipv6() { 40 } else { 20 };
        let mtu = self.interfaces[interface.0].link_mtu();
        let maxdata = mtu.saturating_sub(ip_header + wire::xtp::HEADER_LEN);
        let key = self.xtp_groups.fresh_key();
        let local = SocketAddr::new(own, group.port());
        let sender = GroupSender::new(config, key, local, group, maxdata);
        self.xtp_group_insert(GroupSocket::Sender(Box::new(sender)), interface, joined)
    }

    /// A multicast receiver context on `interface` for `group` (address
    /// and port): joins the group there and takes the first sender whose
    /// FIRST names the port.
    pub fn xtp_group_receiver(
        &mut self,
        interface: InterfaceId,
        group: SocketAddr,
        config: GroupConfig,
    ) -> Result<XtpGroupHandle, XtpGroupError> {
        let (own, joined) = self.xtp_group_join(interface, group.ip())?;
        let key = self.xtp_groups.fresh_key();
        let seed = self.xtp_groups.rng.next_u64();
        let receiver = GroupReceiver::new(config, group, own, key, seed);
        self.xtp_group_insert(GroupSocket::Receiver(Box::new(receiver)), interface, joined)
    }

    /// The interface's address of the group's family, and whether this
    /// call joined the group (false: it was joined already).
    fn xtp_group_join(
        &mut self,
        interface: InterfaceId,
        group: IpAddr,
    ) -> Result<(IpAddr, bool), XtpGroupError> {
        let iface = self
            .interfaces
            .get(interface.0)
            .ok_or(XtpGroupError::Multicast(MulticastError::NoInterface(
                interface.0,
            )))?;
        let own = match group {
            IpAddr::V6(g) => self.select_source_v6(interface, g).map(IpAddr::V6),
            IpAddr::V4(_) => iface.v4.as_ref().map(|v4| IpAddr::V4(v4.address)),
        };
        let own = own.ok_or(XtpGroupError::NoSourceAddress(group))?;
        let joined = match self.join_multicast(interface, group) {
            Ok(()) => true,
            Err(MulticastError::AlreadyJoined(_)) => false,
            Err(e) => return Err(XtpGroupError::Multicast(e)),
        };
        Ok((own, joined))
    }

    fn xtp_group_insert(
        &mut self,
        socket: GroupSocket,
        interface: InterfaceId,
        joined: bool,
    ) -> Result<XtpGroupHandle, XtpGroupError> {
        let flow = self.new_flow();
        let group = match &socket {
            GroupSocket::Sender(s) => s.group().ip(),
            GroupSocket::Receiver(r) => r.group().ip(),
        };
        match self
            .xtp_groups
            .insert(GroupSlot::new(socket, interface, flow, joined))
        {
            Some(handle) => {
                self.xtp.output_pending = true;
                Ok(handle)
            }
            None => {
                if joined {
                    let _ = self.leave_multicast(interface, group);
                }
                Err(XtpGroupError::TooManySockets)
            }
        }
    }

    fn xtp_group_sender_mut(
        &mut self,
        handle: XtpGroupHandle,
    ) -> Result<&mut GroupSender, XtpGroupError> {
        match self.xtp_groups.get_mut(handle).map(|s| &mut s.socket) {
            Some(GroupSocket::Sender(s)) => Ok(s),
            Some(GroupSocket::Receiver(_)) => Err(XtpGroupError::NotSender),
            None => Err(XtpGroupError::InvalidHandle),
        }
    }

    /// Copies what fits of `data` into the sender's buffer.
    pub fn xtp_group_send(
        &mut self,
        handle: XtpGroupHandle,
        data: &[u8],
    ) -> Result<usize, XtpGroupError> {
        let slot = self
            .xtp_groups
            .get_mut(handle)
            .ok_or(XtpGroupError::InvalidHandle)?;
        let GroupSocket::Sender(sender) = &mut slot.socket else {
            return Err(XtpGroupError::NotSender);
        };
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, slot.flow, || {
            (probe_len(data.len()), slot.written)
        });
        if matches!(sender.state(), GroupState::Done | GroupState::Closed) {
            return Err(XtpGroupError::Shutdown);
        }
        let n = sender.send(data);
        if n == 0 && !data.is_empty() {
            return Err(XtpGroupError::WouldBlock);
        }
        slot.written += n as u64;
        slot.sent_queued += n;
        probe::record_with(SEND_QUEUE_ENQUEUE, slot.flow, || {
            (probe_len(n), slot.written)
        });
        self.xtp.output_pending = true;
        Ok(n)
    }

    /// Ends the sender's stream (WCLOSE with its last byte).
    pub fn xtp_group_shutdown(&mut self, handle: XtpGroupHandle) -> Result<(), XtpGroupError> {
        self.xtp_group_sender_mut(handle)?.shutdown();
        self.xtp.output_pending = true;
        Ok(())
    }

    /// Reads what arrived in order: `Ok(0)` at the end of the stream,
    /// `WouldBlock` when nothing waits yet.
    pub fn xtp_group_recv(
        &mut self,
        handle: XtpGroupHandle,
        out: &mut [u8],
    ) -> Result<usize, XtpGroupError> {
        let slot = self
            .xtp_groups
            .get_mut(handle)
            .ok_or(XtpGroupError::InvalidHandle)?;
        let GroupSocket::Receiver(receiver) = &mut slot.socket else {
            return Err(XtpGroupError::NotReceiver);
        };
        let _span = probe::span_with(SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, slot.flow, || {
            (probe_len(out.len()), slot.read)
        });
        let n = receiver.recv(out);
        if n > 0 {
            slot.read += n as u64;
            probe::record_with(RECV_QUEUE_DEQUEUE, slot.flow, || (probe_len(n), slot.read));
            return Ok(n);
        }
        if out.is_empty() || receiver.at_eof() {
            return Ok(0);
        }
        if receiver.state() == GroupState::Closed {
            return Err(XtpGroupError::Shutdown);
        }
        Err(XtpGroupError::WouldBlock)
    }

    /// Closes a context: a receiver leaves the association (END, so the
    /// sender stops waiting for it); a sender stops at once. The group is
    /// left if the context joined it.
    pub fn xtp_group_close(&mut self, handle: XtpGroupHandle) -> Result<(), XtpGroupError> {
        let slot = self
            .xtp_groups
            .get_mut(handle)
            .ok_or(XtpGroupError::InvalidHandle)?;
        slot.released = true;
        match &mut slot.socket {
            GroupSocket::Receiver(r) => r.leave(),
            GroupSocket::Sender(_) => {}
        }
        self.xtp.output_pending = true;
        // A sender, or a receiver with nothing to say, goes now.
        self.xtp_group_observe(handle.0);
        Ok(())
    }

    /// What a context is doing and counted.
    pub fn xtp_group_status(&self, handle: XtpGroupHandle) -> Option<XtpGroupStatus> {
        let slot = self.xtp_groups.get(handle)?;
        Some(match &slot.socket {
            GroupSocket::Sender(s) => XtpGroupStatus {
                state: s.state(),
                receivers: s.members().count(),
                group_rseq: s.group_rseq(),
                readable: 0,
                eof: false,
                counters: s.counters(),
            },
            GroupSocket::Receiver(r) => XtpGroupStatus {
                state: r.state(),
                receivers: 0,
                group_rseq: 0,
                readable: r.readable(),
                eof: r.at_eof(),
                counters: r.counters(),
            },
        })
    }

    /// The flow a context's probes record under.
    pub fn xtp_group_flow(&self, handle: XtpGroupHandle) -> Option<probe::Flow> {
        self.xtp_groups.get(handle).map(|s| s.flow)
    }

    /// A sender's receivers: address and what it knows of each.
    pub fn xtp_group_members(&self, handle: XtpGroupHandle) -> Vec<(IpAddr, Member)> {
        match self.xtp_groups.get(handle).map(|s| &s.socket) {
            Some(GroupSocket::Sender(s)) => s.members().map(|(a, m)| (*a, *m)).collect(),
            _ => Vec::new(),
        }
    }
}
