//! The application's XTP calls on a host, shaped like the TCP ones:
//! listen, connect, accept, send, recv, shutdown (WCLOSE), close, abort,
//! readiness, and the association's state and counters. Every call is
//! non-blocking: what cannot happen yet returns [`XtpError::WouldBlock`].

use std::net::{IpAddr, SocketAddr};

use probe::Flow;

use super::Host;
use crate::iface::route::InterfaceId;
use crate::probes::{
    RECV_QUEUE_DEQUEUE, SEND_QUEUE_ENQUEUE, SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, SOCKET_SEND_ENTER,
    SOCKET_SEND_EXIT,
};
use crate::socket::probe_len;
use crate::socket::tcp::sockets::StreamMarks;
use crate::socket::xtp::association::{Association, Ends, Failure, State};
use crate::socket::xtp::config::XtpConfig;
use crate::socket::xtp::sockets::{Listener, Peer, XtpHandle, XtpSocket};
use wire::ethernet::EthernetAddress;

/// Why an XTP call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum XtpError {
    #[error("no such XTP socket (closed, or never opened)")]
    InvalidHandle,
    #[error("the socket is a listener")]
    IsListener,
    #[error("the socket is not a listener")]
    NotListener,
    #[error("{0} is already in use")]
    AddressInUse(SocketAddr),
    #[error("{0} is not an address of this host")]
    AddressNotLocal(IpAddr),
    #[error("no route to {0}")]
    NoRoute(IpAddr),
    #[error("no source address can reach {0}")]
    NoSourceAddress(IpAddr),
    #[error("no local port is free")]
    NoFreePort,
    #[error("the host holds its maximum number of XTP sockets")]
    TooManySockets,
    #[error("the call would block")]
    WouldBlock,
    #[error("the sending half was closed (WCLOSE)")]
    Shutdown,
    #[error("the peer reads no more (RCLOSE)")]
    PeerStoppedReading,
    #[error("a {len}-byte message exceeds the {max}-byte send buffer of a message service")]
    MessageTooLarge { len: usize, max: usize },
    #[error("no driver write or read is in progress on this association")]
    NotInProgress,
    #[error("{0}")]
    Association(Failure),
}

/// What a socket is ready for now (like `poll(2)`'s events).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XtpReadiness {
    pub readable: bool,
    pub writable: bool,
    /// A listener has an association for `accept`.
    pub acceptable: bool,
    /// The peer's context exists (its answer arrived, or FIRST did).
    pub established: bool,
    pub closed: bool,
    pub error: Option<Failure>,
}

impl Host {
    /// Listens for FIRST packets on `local` (the unspecified address: every
    /// address of its family). One listener per port and family.
    pub fn xtp_listen(
        &mut self,
        local: SocketAddr,
        config: XtpConfig,
    ) -> Result<XtpHandle, XtpError> {
        let mut local = local;
        if local.port() == 0 {
            local.set_port(self.xtp_free_port()?);
        }
        if !local.ip().is_unspecified() && !self.xtp_is_local(local.ip()) {
            return Err(XtpError::AddressNotLocal(local.ip()));
        }
        if self.xtp.listening_on(local) {
            return Err(XtpError::AddressInUse(local));
        }
        let listener = Listener {
            local,
            config,
            flow: self.new_flow(),
            pending: Default::default(),
            refused: 0,
        };
        self.xtp
            .insert(
                XtpSocket::Listener(Box::new(listener)),
                Peer::Ip(local.ip()),
            )
            .ok_or(XtpError::TooManySockets)
    }

    /// Opens an association to `remote`: FIRST leaves at the next poll,
    /// carrying what was written by then (implicit setup) or alone
    /// (explicit setup, `config.implicit` false).
    pub fn xtp_connect(
        &mut self,
        remote: SocketAddr,
        config: XtpConfig,
    ) -> Result<XtpHandle, XtpError> {
        let now = self.clock;
        let flow = Flow::NONE;
        let source = match remote.ip() {
            IpAddr::V6(dst) => {
                let route = self
                    .ipv6_route(now, dst, None, flow)
                    .ok_or(XtpError::NoRoute(remote.ip()))?;
                let source = self
                    .select_source_v6(route.interface, dst)
                    .ok_or(XtpError::NoSourceAddress(remote.ip()))?;
                IpAddr::V6(source)
            }
            IpAddr::V4(dst) => {
                let route = self
                    .ipv4_route(now, dst, flow)
                    .ok_or(XtpError::NoRoute(remote.ip()))?;
                IpAddr::V4(route.source)
            }
        };
        self.xtp_open(
            SocketAddr::new(source, 0),
            remote,
            Peer::Ip(remote.ip()),
            config,
        )
    }

    /// Opens an association to `remote` (the host and port its FIRST's
    /// address segment names) carried directly in Ethernet frames of
    /// EtherType 0x817D on `interface`, to the peer's MAC `mac`, with no
    /// IP header (the study's KRM on the network driver). The local
    /// address named is the interface's of `remote`'s family.
    pub fn xtp_connect_link(
        &mut self,
        interface: InterfaceId,
        mac: EthernetAddress,
        remote: SocketAddr,
        config: XtpConfig,
    ) -> Result<XtpHandle, XtpError> {
        let iface = self
            .interfaces
            .get(interface.0)
            .ok_or(XtpError::NoRoute(remote.ip()))?;
        if iface.medium != crate::phy::Medium::Ethernet {
            return Err(XtpError::NoRoute(remote.ip()));
        }
        let source = match remote.ip() {
            IpAddr::V6(dst) => self.select_source_v6(interface, dst).map(IpAddr::V6),
            IpAddr::V4(_) => iface.v4.as_ref().map(|v4| IpAddr::V4(v4.address)),
        }
        .ok_or(XtpError::NoSourceAddress(remote.ip()))?;
        let peer = Peer::Link(interface, mac);
        self.xtp_open(SocketAddr::new(source, 0), remote, peer, config)
    }

    fn xtp_open(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        peer: Peer,
        config: XtpConfig,
    ) -> Result<XtpHandle, XtpError> {
        let now = self.clock;
        let flow = self.new_flow();
        let local = SocketAddr::new(local.ip(), self.xtp_free_port()?);
        let ends = Ends {
            local,
            remote,
            own_key: self.xtp.fresh_key(),
            path_maxdata: self.xtp_path_maxdata(now, peer, flow),
            flow,
        };
        let assoc = Association::connect(config, ends, now);
        let handle = self
            .xtp
            .insert(XtpSocket::Association(Box::new(assoc)), peer)
            .ok_or(XtpError::TooManySockets)?;
        self.xtp.output_pending = true;
        Ok(handle)
    }

    /// The next association a listener set up.
    pub fn xtp_accept(&mut self, listener: XtpHandle) -> Result<XtpHandle, XtpError> {
        let index = self.xtp.index(listener).ok_or(XtpError::InvalidHandle)?;
        loop {
            let next = match self.xtp.get_mut(index).map(|s| &mut s.socket) {
                Some(XtpSocket::Listener(l)) => l.pending.pop_front(),
                _ => return Err(XtpError::NotListener),
            };
            let Some(handle) = next else {
                return Err(XtpError::WouldBlock);
            };
            // One freed before it was accepted is skipped.
            if self.xtp.index(handle).is_some() {
                return Ok(handle);
            }
        }
    }

    /// Queues bytes; returns how many the send buffer took (at least one,
    /// or `WouldBlock` when it is full).
    pub fn xtp_send(&mut self, handle: XtpHandle, data: &[u8]) -> Result<usize, XtpError> {
        let (assoc, marks) = self.xtp_stream(handle)?;
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, assoc.flow(), || {
            (probe_len(data.len()), marks.written)
        });
        write_refusal(assoc)?;
        let max = assoc.config().send_buffer;
        if crate::socket::xtp::config::is_message_service(assoc.service()) && data.len() > max {
            return Err(XtpError::MessageTooLarge {
                len: data.len(),
                max,
            });
        }
        let taken = assoc.send(data);
        if taken == 0 {
            return if data.is_empty() {
                Ok(0)
            } else {
                Err(XtpError::WouldBlock)
            };
        }
        record_written(marks, assoc.flow(), taken);
        self.xtp.output_pending = true;
        Ok(taken)
    }

    /// Queues bytes whose first is tagged with `tag` (the 8-byte beginning
    /// tag, BTAG): they start a packet, and the peer learns the tag and
    /// the stream offset it marks from [`xtp_recv_tags`](Self::xtp_recv_tags).
    /// Takes what fits, like `xtp_send`; the rest is untagged.
    pub fn xtp_send_tagged(
        &mut self,
        handle: XtpHandle,
        tag: u64,
        data: &[u8],
    ) -> Result<usize, XtpError> {
        let (assoc, marks) = self.xtp_stream(handle)?;
        write_refusal(assoc)?;
        let taken = assoc.send_tagged(tag, data);
        if taken == 0 {
            return Err(XtpError::WouldBlock);
        }
        record_written(marks, assoc.flow(), taken);
        self.xtp.output_pending = true;
        Ok(taken)
    }

    /// The beginning tags of bytes that arrived in order, each with the
    /// stream offset of the byte it marks; taken.
    pub fn xtp_recv_tags(&mut self, handle: XtpHandle) -> Result<Vec<(u64, u64)>, XtpError> {
        let (assoc, _) = self.xtp_stream(handle)?;
        Ok(assoc.take_tags())
    }

    /// Reads received bytes: `Ok(0)` is the end of the peer's stream (its
    /// WCLOSE, everything before it read); `WouldBlock`: nothing yet.
    pub fn xtp_recv(&mut self, handle: XtpHandle, out: &mut [u8]) -> Result<usize, XtpError> {
        let (assoc, marks) = self.xtp_stream(handle)?;
        let _span = probe::span_with(SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, assoc.flow(), || {
            (probe_len(out.len()), marks.read)
        });
        let n = assoc.recv(out);
        if n > 0 {
            marks.read += n as u64;
            marks.readable = assoc.readable();
            probe::record_with(RECV_QUEUE_DEQUEUE, assoc.flow(), || {
                (probe_len(n), marks.read)
            });
            self.xtp.output_pending = true;
            return Ok(n);
        }
        if out.is_empty() || assoc.at_eof() {
            return Ok(0);
        }
        if let Some(error) = assoc.error() {
            return Err(XtpError::Association(error));
        }
        if assoc.state() == State::Closed {
            return Ok(0);
        }
        Err(XtpError::WouldBlock)
    }

    /// Closes the sending half: WCLOSE follows the queued data; the
    /// association still receives.
    pub fn xtp_shutdown(&mut self, handle: XtpHandle) -> Result<(), XtpError> {
        let (assoc, _) = self.xtp_stream(handle)?;
        assoc.close();
        self.xtp.output_pending = true;
        Ok(())
    }

    /// Closes the association and gives up the handle. The queued data
    /// still go and the close handshake runs in the background; if the
    /// peer's stream was not read to its end, this end stops reading
    /// (abbreviated close: RCLOSE now, the rest discarded). A listener
    /// aborts the associations it held unaccepted.
    pub fn xtp_close(&mut self, handle: XtpHandle) -> Result<(), XtpError> {
        let index = self.xtp.index(handle).ok_or(XtpError::InvalidHandle)?;
        match self.xtp.get_mut(index).map(|s| &mut s.socket) {
            Some(XtpSocket::Association(assoc)) => {
                if assoc.at_eof() {
                    assoc.close();
                } else {
                    assoc.close_abbreviated();
                }
            }
            Some(XtpSocket::Listener(_)) => return self.xtp_close_listener(index),
            None => return Err(XtpError::InvalidHandle),
        }
        if let Some(slot) = self.xtp.get_mut(index) {
            slot.released = true;
        }
        self.xtp.output_pending = true;
        self.xtp_observe(index);
        Ok(())
    }

    /// Abortive close: END (on a DIAG) tells the peer, and the handle is
    /// given up at once.
    pub fn xtp_abort(&mut self, handle: XtpHandle) -> Result<(), XtpError> {
        let index = self.xtp.index(handle).ok_or(XtpError::InvalidHandle)?;
        let peer = match self.xtp.get(index) {
            Some(slot) if matches!(slot.socket, XtpSocket::Listener(_)) => {
                return Err(XtpError::IsListener)
            }
            Some(slot) => slot.peer,
            None => return Err(XtpError::InvalidHandle),
        };
        let Some(XtpSocket::Association(mut assoc)) = self.xtp.remove(index) else {
            return Err(XtpError::InvalidHandle);
        };
        if let Some(out) = assoc.abort() {
            let ends = (assoc.local(), assoc.remote());
            self.xtp_emit(self.clock, assoc.flow(), ends, peer, &out);
        }
        Ok(())
    }

    fn xtp_close_listener(&mut self, index: usize) -> Result<(), XtpError> {
        let Some(XtpSocket::Listener(listener)) = self.xtp.remove(index) else {
            return Err(XtpError::InvalidHandle);
        };
        for handle in listener.pending {
            let _ = self.xtp_abort(handle);
        }
        Ok(())
    }

    /// Traces an association (`SO_LOG`, as `tcp_set_traced`): its probes
    /// record under a traced flow and its packets carry the trace option,
    /// for which they shrink at the next output.
    pub fn xtp_set_traced(&mut self, handle: XtpHandle, traced: bool) -> Result<(), XtpError> {
        let index = self.xtp.index(handle).ok_or(XtpError::InvalidHandle)?;
        let slot = self.xtp.get_mut(index).ok_or(XtpError::InvalidHandle)?;
        let XtpSocket::Association(assoc) = &mut slot.socket else {
            return Err(XtpError::IsListener);
        };
        assoc.set_traced(traced);
        // The trace option takes room from every packet: clamp again.
        slot.path_mtu_seen = None;
        Ok(())
    }

    /// What the socket is ready for.
    pub fn xtp_readiness(&self, handle: XtpHandle) -> Result<XtpReadiness, XtpError> {
        let index = self.xtp.index(handle).ok_or(XtpError::InvalidHandle)?;
        Ok(match self.xtp.get(index).map(|s| &s.socket) {
            Some(XtpSocket::Listener(l)) => XtpReadiness {
                acceptable: !l.pending.is_empty(),
                ..XtpReadiness::default()
            },
            Some(XtpSocket::Association(a)) => {
                let closed = a.state() == State::Closed;
                let error = a.error();
                XtpReadiness {
                    readable: a.readable() > 0 || a.at_eof() || error.is_some() || closed,
                    writable: error.is_some() || closed || (!a.send_closed() && a.send_room() > 0),
                    acceptable: false,
                    established: a.established(),
                    closed,
                    error,
                }
            }
            None => return Err(XtpError::InvalidHandle),
        })
    }

    /// An association's state, options and counters.
    pub fn xtp_association(&self, handle: XtpHandle) -> Option<&Association> {
        let index = self.xtp.index(handle)?;
        match &self.xtp.get(index)?.socket {
            XtpSocket::Association(a) => Some(a),
            XtpSocket::Listener(_) => None,
        }
    }

    /// A listener's state (its backlog and refusals).
    pub fn xtp_listener(&self, handle: XtpHandle) -> Option<&Listener> {
        let index = self.xtp.index(handle)?;
        match &self.xtp.get(index)?.socket {
            XtpSocket::Listener(l) => Some(l),
            XtpSocket::Association(_) => None,
        }
    }

    /// XTP sockets the host holds, closing ones included.
    pub fn xtp_socket_count(&self) -> usize {
        self.xtp.len()
    }

    /// XTP packets this host took and sent.
    pub fn xtp_packet_counts(&self) -> (u64, u64) {
        (self.xtp.received, self.xtp.sent)
    }

    pub(super) fn xtp_stream(
        &mut self,
        handle: XtpHandle,
    ) -> Result<(&mut Association, &mut StreamMarks), XtpError> {
        let index = self.xtp.index(handle).ok_or(XtpError::InvalidHandle)?;
        let slot = self.xtp.get_mut(index).ok_or(XtpError::InvalidHandle)?;
        match &mut slot.socket {
            XtpSocket::Association(a) => Ok((a, &mut slot.marks)),
            XtpSocket::Listener(_) => Err(XtpError::IsListener),
        }
    }

    fn xtp_free_port(&mut self) -> Result<u16, XtpError> {
        match self.xtp.free_port() {
            0 => Err(XtpError::NoFreePort),
            port => Ok(port),
        }
    }

    /// Whether `ip` is one of the host's unicast addresses (assigned or
    /// still tentative).
    fn xtp_is_local(&self, ip: IpAddr) -> bool {
        self.interfaces.iter().any(|i| match ip {
            IpAddr::V4(a) => i.v4.as_ref().is_some_and(|v4| v4.address == a),
            IpAddr::V6(a) => {
                i.v6.addresses.entries().any(|e| e.address() == a)
                    || i.pending_manual.iter().any(|c| c.address == a)
            }
        })
    }
}

/// Why a write to `assoc` cannot be taken now, if it cannot: the
/// association failed, this end closed its sending half, or the peer
/// reads no more.
pub(super) fn write_refusal(assoc: &Association) -> Result<(), XtpError> {
    if let Some(error) = assoc.error() {
        return Err(XtpError::Association(error));
    }
    if assoc.send_closed() {
        return Err(XtpError::Shutdown);
    }
    if assoc.peer_stopped_reading() {
        return Err(XtpError::PeerStoppedReading);
    }
    Ok(())
}

/// Counts `n` bytes the application wrote and records their entry into
/// the send queue.
pub(super) fn record_written(marks: &mut StreamMarks, flow: Flow, n: usize) {
    marks.written += n as u64;
    marks.send_queued += n;
    probe::record_with(SEND_QUEUE_ENQUEUE, flow, || (probe_len(n), marks.written));
}
