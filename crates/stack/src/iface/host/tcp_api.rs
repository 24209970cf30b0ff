//! The application's TCP calls on a host: listen, connect, accept, send,
//! recv, shutdown, close, abort, and readiness. Every call is
//! non-blocking, like a socket with `O_NONBLOCK`: what cannot happen yet
//! returns [`TcpError::WouldBlock`] and happens after a later
//! [`Host::poll`]. (The blocking convenience calls for tools drive a
//! simulator: `runner::blocking`.)

use std::net::{IpAddr, SocketAddr};

use super::Host;
use crate::probes::{
    RECV_QUEUE_DEQUEUE, SEND_QUEUE_ENQUEUE, SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, SOCKET_SEND_ENTER,
    SOCKET_SEND_EXIT,
};
use crate::socket::probe_len;
use crate::socket::tcp::connection::{Connection, ConnectionError, Outgoing, TcpConfig};
use crate::socket::tcp::listener::{Listener, ListenerConfig};
use crate::socket::tcp::options;
use crate::socket::tcp::sockets::{StreamMarks, TcpHandle, TcpSocket};
use crate::socket::tcp::state::State;

/// Why a TCP call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TcpError {
    #[error("no such TCP socket (closed, or never opened)")]
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
    #[error("no ephemeral port is free")]
    NoEphemeralPort,
    #[error("the host holds its maximum number of TCP sockets")]
    TooManySockets,
    #[error("the call would block")]
    WouldBlock,
    #[error("the socket was shut down for sending")]
    Shutdown,
    #[error("{0}")]
    Connection(ConnectionError),
    #[error("the buffer pool is exhausted")]
    PoolExhausted,
}

/// What a socket is ready for now (like `poll(2)`'s events).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpReadiness {
    /// `recv` returns data, end of stream or an error without blocking.
    pub readable: bool,
    /// `send` takes at least one byte (or fails) without blocking.
    pub writable: bool,
    /// A listener has a connection for `accept`.
    pub acceptable: bool,
    /// The handshake completed (the connection is or was synchronized).
    pub established: bool,
    /// The connection reached CLOSED (normally or not).
    pub closed: bool,
    pub error: Option<ConnectionError>,
}

impl Host {
    /// Listens on `local` (the unspecified address: every address of its
    /// family). One listener per port and family.
    pub fn tcp_listen(
        &mut self,
        local: SocketAddr,
        config: TcpConfig,
        listen: ListenerConfig,
    ) -> Result<TcpHandle, TcpError> {
        let mut local = local;
        if local.port() == 0 {
            local.set_port(self.tcp_free_port()?);
        }
        if !local.ip().is_unspecified() && !self.is_local_address(local.ip()) {
            return Err(TcpError::AddressNotLocal(local.ip()));
        }
        if self.tcp.listening_on(local) {
            return Err(TcpError::AddressInUse(local));
        }
        let mss = self.tcp_listen_mss(local);
        let flow = self.new_flow();
        let listener = Listener::new(local, config, listen, mss, self.tcp_isn, flow);
        self.tcp
            .insert(TcpSocket::Listener(Box::new(listener)))
            .ok_or(TcpError::TooManySockets)
    }

    /// Opens a connection to `remote` from an ephemeral port of the
    /// source address the route selects (RFC 6724 for IPv6). The SYN goes
    /// out at the next poll; the handle becomes writable once
    /// established.
    pub fn tcp_connect(
        &mut self,
        remote: SocketAddr,
        config: TcpConfig,
    ) -> Result<TcpHandle, TcpError> {
        let now = self.clock;
        let flow = self.new_flow();
        let (source, mtu) = match remote.ip() {
            IpAddr::V6(dst) => {
                let route = self
                    .ipv6_route(now, dst, None, flow)
                    .ok_or(TcpError::NoRoute(remote.ip()))?;
                let source = self
                    .select_source_v6(route.interface, dst)
                    .ok_or(TcpError::NoSourceAddress(remote.ip()))?;
                let mtu = self.interfaces[route.interface.0].link_mtu();
                (IpAddr::V6(source), mtu)
            }
            IpAddr::V4(dst) => {
                let route = self
                    .ipv4_route(now, dst, flow)
                    .ok_or(TcpError::NoRoute(remote.ip()))?;
                let mtu = self.interfaces[route.interface.0].link_mtu();
                (IpAddr::V4(route.source), mtu)
            }
        };
        let local = SocketAddr::new(source, self.tcp_free_port()?);
        // RFC 9293 §3.7.1: the MSS option says what this interface can
        // receive.
        let mss = options::mss_for_mtu(mtu, remote.is_ipv6());
        let iss = self.tcp_isn.isn(now, local, remote);
        let conn = Connection::connect(config, local, remote, iss, mss, now, flow);
        let handle = self
            .tcp
            .insert(TcpSocket::Connection(Box::new(conn)))
            .ok_or(TcpError::TooManySockets)?;
        self.tcp_output_pending = true;
        Ok(handle)
    }

    /// The next established connection of a listener.
    pub fn tcp_accept(&mut self, listener: TcpHandle) -> Result<TcpHandle, TcpError> {
        let index = self.tcp.index(listener).ok_or(TcpError::InvalidHandle)?;
        let Some(slot) = self.tcp.get_mut(index) else {
            return Err(TcpError::InvalidHandle);
        };
        let TcpSocket::Listener(l) = &mut slot.socket else {
            return Err(TcpError::NotListener);
        };
        let conn = l.accept().ok_or(TcpError::WouldBlock)?;
        match self.tcp.insert(TcpSocket::Connection(Box::new(conn))) {
            Some(handle) => {
                if let Some(index) = self.tcp.index(handle) {
                    self.tcp_observe(index);
                }
                Ok(handle)
            }
            None => Err(TcpError::TooManySockets),
        }
    }

    /// Queues bytes for sending; returns how many the send queue took (at
    /// least one, or `WouldBlock` when it is full).
    pub fn tcp_send(&mut self, handle: TcpHandle, data: &[u8]) -> Result<usize, TcpError> {
        let pool = self.pool.clone();
        let (conn, marks) = self.tcp_stream(handle)?;
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, conn.flow(), || {
            (probe_len(data.len()), marks.written)
        });
        if let Some(error) = conn.error() {
            return Err(TcpError::Connection(error));
        }
        if conn.send_closed()
            || !(conn.state().can_send()
                || matches!(conn.state(), State::SynSent | State::SynReceived))
        {
            return Err(TcpError::Shutdown);
        }
        let taken = conn
            .send(&pool, data)
            .map_err(|_| TcpError::PoolExhausted)?;
        if taken == 0 {
            return if data.is_empty() {
                Ok(0)
            } else {
                Err(TcpError::WouldBlock)
            };
        }
        marks.written += taken as u64;
        marks.send_queued += taken;
        probe::record_with(SEND_QUEUE_ENQUEUE, conn.flow(), || {
            (probe_len(taken), marks.written)
        });
        self.tcp_output_pending = true;
        Ok(taken)
    }

    /// Reads received bytes: `Ok(0)` is the end of the stream (the peer
    /// closed and everything before its FIN was read), `WouldBlock` means
    /// nothing has arrived yet.
    pub fn tcp_recv(&mut self, handle: TcpHandle, out: &mut [u8]) -> Result<usize, TcpError> {
        let (conn, marks) = self.tcp_stream(handle)?;
        let _span = probe::span_with(SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, conn.flow(), || {
            (probe_len(out.len()), marks.read)
        });
        let n = conn.recv(out);
        if n > 0 {
            marks.read += n as u64;
            marks.readable = conn.readable();
            probe::record_with(RECV_QUEUE_DEQUEUE, conn.flow(), || {
                (probe_len(n), marks.read)
            });
            // Reading opens the window: an update may be owed.
            self.tcp_output_pending = true;
            return Ok(n);
        }
        if out.is_empty() || conn.at_eof() {
            return Ok(0);
        }
        if let Some(error) = conn.error() {
            return Err(TcpError::Connection(error));
        }
        if conn.state() == State::Closed {
            return Ok(0);
        }
        Err(TcpError::WouldBlock)
    }

    /// Closes the sending direction (a FIN follows the queued data); the
    /// socket can still receive.
    pub fn tcp_shutdown(&mut self, handle: TcpHandle) -> Result<(), TcpError> {
        let conn = self.tcp_connection_mut(handle)?;
        conn.close();
        self.tcp_output_pending = true;
        Ok(())
    }

    /// Closes the socket and gives up the handle. A connection finishes
    /// sending its queued data and closes in the background (through
    /// TIME-WAIT); if received data was left unread it is reset instead
    /// (RFC 9293 §3.10.4 via RFC 1122 §4.2.2.13), so the peer learns the
    /// data was lost. A listener resets the connections it held.
    pub fn tcp_close(&mut self, handle: TcpHandle) -> Result<(), TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        let unread = match self.tcp.get(index).map(|s| &s.socket) {
            Some(TcpSocket::Connection(conn)) => conn.readable() > 0,
            Some(TcpSocket::Listener(_)) => {
                return self.tcp_close_listener(index);
            }
            None => return Err(TcpError::InvalidHandle),
        };
        if unread {
            return self.tcp_abort(handle);
        }
        if let Some(slot) = self.tcp.get_mut(index) {
            slot.released = true;
            if let TcpSocket::Connection(conn) = &mut slot.socket {
                conn.close();
            }
        }
        self.tcp_output_pending = true;
        self.tcp_observe(index);
        Ok(())
    }

    /// Resets the connection (RFC 9293 §3.10.5) and gives up the handle.
    pub fn tcp_abort(&mut self, handle: TcpHandle) -> Result<(), TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        if let Some(TcpSocket::Listener(_)) = self.tcp.get(index).map(|s| &s.socket) {
            return Err(TcpError::IsListener);
        }
        let Some(TcpSocket::Connection(conn)) = self.tcp.remove(index) else {
            return Err(TcpError::InvalidHandle);
        };
        self.tcp_reset(*conn);
        Ok(())
    }

    /// Aborts a connection the host no longer holds, sending its RST if
    /// the peer knows of it.
    fn tcp_reset(&mut self, mut conn: Connection) {
        if let Some(rst) = conn.abort() {
            let ends = (conn.local().ip(), conn.remote().ip());
            let mut rst = Outgoing::header_only(rst);
            self.tcp_emit(self.clock, conn.flow(), ends, &mut rst, None);
        }
    }

    fn tcp_close_listener(&mut self, index: usize) -> Result<(), TcpError> {
        let Some(TcpSocket::Listener(mut listener)) = self.tcp.remove(index) else {
            return Err(TcpError::InvalidHandle);
        };
        for conn in listener.take_all() {
            self.tcp_reset(conn);
        }
        Ok(())
    }

    /// Traces a connection or listener (`SO_LOG`): see
    /// [`Connection::set_traced`](crate::socket::tcp::connection::Connection::set_traced).
    pub fn tcp_set_traced(&mut self, handle: TcpHandle, traced: bool) -> Result<(), TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        let Some(slot) = self.tcp.get_mut(index) else {
            return Err(TcpError::InvalidHandle);
        };
        // The trace option takes room from every segment: clamp again.
        slot.path_mtu_seen = None;
        match Some(&mut slot.socket) {
            Some(TcpSocket::Connection(c)) => c.set_traced(traced),
            Some(TcpSocket::Listener(l)) => l.set_traced(traced),
            None => return Err(TcpError::InvalidHandle),
        }
        Ok(())
    }

    /// The connection's state (a listener is LISTEN).
    pub fn tcp_state(&self, handle: TcpHandle) -> Result<State, TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        match self.tcp.get(index).map(|s| &s.socket) {
            Some(TcpSocket::Connection(c)) => Ok(c.state()),
            Some(TcpSocket::Listener(_)) => Ok(State::Listen),
            None => Err(TcpError::InvalidHandle),
        }
    }

    /// What the socket is ready for.
    pub fn tcp_readiness(&self, handle: TcpHandle) -> Result<TcpReadiness, TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        Ok(match self.tcp.get(index).map(|s| &s.socket) {
            Some(TcpSocket::Listener(l)) => TcpReadiness {
                acceptable: l.pending() > 0,
                ..TcpReadiness::default()
            },
            Some(TcpSocket::Connection(c)) => {
                let state = c.state();
                let closed = state == State::Closed;
                let error = c.error();
                TcpReadiness {
                    readable: c.readable() > 0 || c.at_eof() || error.is_some() || closed,
                    writable: error.is_some()
                        || closed
                        || state.can_send() && !state.fin_queued() && c.send_room() > 0,
                    acceptable: false,
                    established: state.is_synchronized() || c.negotiated().is_some(),
                    closed,
                    error,
                }
            }
            None => return Err(TcpError::InvalidHandle),
        })
    }

    /// A connection's full state: counters, RTT, congestion control.
    pub fn tcp_connection(&self, handle: TcpHandle) -> Option<&Connection> {
        let index = self.tcp.index(handle)?;
        match &self.tcp.get(index)?.socket {
            TcpSocket::Connection(c) => Some(c),
            TcpSocket::Listener(_) => None,
        }
    }

    /// A listener's state and counters.
    pub fn tcp_listener(&self, handle: TcpHandle) -> Option<&Listener> {
        let index = self.tcp.index(handle)?;
        match &self.tcp.get(index)?.socket {
            TcpSocket::Listener(l) => Some(l),
            TcpSocket::Connection(_) => None,
        }
    }

    /// TCP sockets the host holds, lingering closed ones included.
    pub fn tcp_socket_count(&self) -> usize {
        self.tcp.len()
    }

    /// A connection and its stream marks, for the data calls.
    fn tcp_stream(
        &mut self,
        handle: TcpHandle,
    ) -> Result<(&mut Connection, &mut StreamMarks), TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        let slot = self.tcp.get_mut(index).ok_or(TcpError::InvalidHandle)?;
        match &mut slot.socket {
            TcpSocket::Connection(conn) => Ok((conn, &mut slot.marks)),
            TcpSocket::Listener(_) => Err(TcpError::IsListener),
        }
    }

    fn tcp_connection_mut(&mut self, handle: TcpHandle) -> Result<&mut Connection, TcpError> {
        let index = self.tcp.index(handle).ok_or(TcpError::InvalidHandle)?;
        match self.tcp.get_mut(index).map(|s| &mut s.socket) {
            Some(TcpSocket::Connection(c)) => Ok(c),
            Some(TcpSocket::Listener(_)) => Err(TcpError::IsListener),
            None => Err(TcpError::InvalidHandle),
        }
    }

    fn tcp_free_port(&mut self) -> Result<u16, TcpError> {
        match self.ephemeral_port() {
            0 => Err(TcpError::NoEphemeralPort),
            port => Ok(port),
        }
    }

    /// The MSS a listener offers: from the MTU of the interface holding
    /// its address, or the smallest MTU of all for a wildcard listener
    /// (never more than any arrival interface can take).
    fn tcp_listen_mss(&self, local: SocketAddr) -> u16 {
        let owner = self.interfaces.iter().find(|i| match local.ip() {
            IpAddr::V4(a) => i.v4.as_ref().is_some_and(|v4| v4.address == a),
            IpAddr::V6(a) => i.v6.addresses.entries().any(|e| e.address() == a),
        });
        let mtu = match owner {
            Some(i) => i.link_mtu(),
            None => self
                .interfaces
                .iter()
                .map(|i| i.link_mtu())
                .min()
                .unwrap_or(1280),
        };
        options::mss_for_mtu(mtu, local.is_ipv6())
    }

    /// Whether `ip` is one of the host's unicast addresses (assigned or
    /// still tentative, so a listener can open before DAD finishes).
    fn is_local_address(&self, ip: IpAddr) -> bool {
        self.interfaces.iter().any(|i| match ip {
            IpAddr::V4(a) => i.v4.as_ref().is_some_and(|v4| v4.address == a),
            IpAddr::V6(a) => {
                i.v6.addresses.entries().any(|e| e.address() == a)
                    || i.pending_manual.iter().any(|c| c.address == a)
            }
        })
    }
}
