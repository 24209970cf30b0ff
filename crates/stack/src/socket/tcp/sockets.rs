//! A host's TCP sockets: a slab of listeners and connections behind
//! generation-checked handles, and the demultiplexing tables that map an
//! arriving segment to its socket (RFC 9293 §3.10.7: the connection of
//! the exact 4-tuple first, else a listener on the local address, else
//! a wildcard listener on the port).

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};

use super::connection::Connection;
use super::listener::Listener;
use super::state::State;
use crate::hash::FastMap;
use crate::socket::slab::{Slab, SlotKey};

/// The most TCP sockets (listeners, connections, and closed connections
/// still lingering in TIME-WAIT) a host holds.
pub const MAX_SOCKETS: usize = 65_536;

/// A TCP socket of a host. A handle outlives its socket safely: once the
/// slot is reused, the old handle no longer matches its generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpHandle(SlotKey);

/// What a slot holds.
#[derive(Debug)]
pub enum TcpSocket {
    Listener(Box<Listener>),
    Connection(Box<Connection>),
}

/// Byte-stream positions behind the queue probes: a stream queue's
/// enqueue and dequeue events carry the stream offset they reach as
/// `aux`, so analysis pairs a write with the ACK that covers it (and an
/// arrival with the read that drains it) without per-message state here.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamMarks {
    /// Bytes in the send queue when last looked at.
    pub send_queued: usize,
    /// Bytes the application wrote, in total.
    pub written: u64,
    /// Bytes the peer acknowledged, in total.
    pub acked: u64,
    /// Bytes readable when last looked at.
    pub readable: usize,
    /// Bytes that became readable, in total.
    pub delivered: u64,
    /// Bytes the application read, in total.
    pub read: u64,
}

#[derive(Debug)]
pub struct Slot {
    pub socket: TcpSocket,
    /// The application gave the handle up: the slot is freed once the
    /// connection reaches CLOSED.
    pub released: bool,
    pub marks: StreamMarks,
    /// The host's count of path-MTU changes when this connection last
    /// checked its path MTU (`None`: not yet).
    pub path_mtu_seen: Option<u64>,
}

/// Where an arriving segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    Connection(usize),
    Listener(usize),
    None,
}

/// The slab and its lookup tables.
#[derive(Debug)]
pub struct TcpSockets {
    slab: Slab<Slot>,
    connections: FastMap<(SocketAddr, SocketAddr), usize>,
    listeners: FastMap<SocketAddr, usize>,
    /// The connection the last segment went to: a bulk flow's segments
    /// come in runs, and comparing the 4-tuple costs less than hashing
    /// it. Cleared whenever `connections` loses an entry.
    last: Cell<Option<((SocketAddr, SocketAddr), usize)>>,
}

impl Default for TcpSockets {
    fn default() -> Self {
        Self {
            slab: Slab::new(MAX_SOCKETS),
            connections: FastMap::default(),
            listeners: FastMap::default(),
            last: Cell::new(None),
        }
    }
}

impl TcpSockets {
    /// Stores `socket`, registering it for demultiplexing; `None` when
    /// [`MAX_SOCKETS`] are in use.
    pub fn insert(&mut self, socket: TcpSocket) -> Option<TcpHandle> {
        let (index, key) = self.slab.insert(Slot {
            socket,
            released: false,
            marks: StreamMarks::default(),
            path_mtu_seen: None,
        })?;
        match &self.slab.get(index)?.socket {
            TcpSocket::Listener(l) => {
                self.listeners.insert(l.local(), index);
            }
            TcpSocket::Connection(c) => {
                self.connections.insert((c.local(), c.remote()), index);
                self.last.set(None);
            }
        }
        Some(TcpHandle(key))
    }

    /// The slot index of a live handle.
    pub fn index(&self, handle: TcpHandle) -> Option<usize> {
        self.slab.index(handle.0)
    }

    pub fn get(&self, index: usize) -> Option<&Slot> {
        self.slab.get(index)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut Slot> {
        self.slab.get_mut(index)
    }

    /// Frees a slot and its table entries; its handles go stale.
    pub fn remove(&mut self, index: usize) -> Option<TcpSocket> {
        let slot = self.slab.remove(index)?;
        match &slot.socket {
            TcpSocket::Listener(l) => {
                self.listeners.remove(&l.local());
            }
            TcpSocket::Connection(c) => {
                let key = (c.local(), c.remote());
                if self.connections.get(&key) == Some(&index) {
                    self.connections.remove(&key);
                    self.last.set(None);
                }
            }
        }
        Some(slot.socket)
    }

    /// Forgets a connection's 4-tuple (it reached CLOSED): later segments
    /// find no connection and are answered as for a closed port.
    pub fn unregister(&mut self, index: usize) {
        if let Some(Slot {
            socket: TcpSocket::Connection(c),
            ..
        }) = self.slab.get(index)
        {
            let key = (c.local(), c.remote());
            if self.connections.get(&key) == Some(&index) {
                self.connections.remove(&key);
                self.last.set(None);
            }
        }
    }

    /// The socket for a segment from `remote` to `local`.
    pub fn demux(&self, local: SocketAddr, remote: SocketAddr) -> Demux {
        let key = (local, remote);
        if let Some((last, index)) = self.last.get() {
            if last == key {
                return Demux::Connection(index);
            }
        }
        if let Some(&index) = self.connections.get(&key) {
            self.last.set(Some((key, index)));
            return Demux::Connection(index);
        }
        if let Some(&index) = self.listeners.get(&local) {
            return Demux::Listener(index);
        }
        let any = SocketAddr::new(unspecified_like(local), local.port());
        match self.listeners.get(&any) {
            Some(&index) => Demux::Listener(index),
            None => Demux::None,
        }
    }

    /// [`demux`](Self::demux) of the addresses and ports of a segment
    /// (`local` and `remote`, each an IP address and a port), for a caller
    /// that may change the tables: a segment of the connection the last
    /// one went to is matched against that 4-tuple where it is kept, with
    /// no socket address built and no copy of it out of its cell.
    #[inline]
    pub fn demux_parts(&mut self, local: (&IpAddr, u16), remote: (&IpAddr, u16)) -> Demux {
        if let Some(((last_local, last_remote), index)) = self.last.get_mut() {
            if is_socket_addr(last_local, local) && is_socket_addr(last_remote, remote) {
                return Demux::Connection(*index);
            }
        }
        self.demux(
            SocketAddr::new(*local.0, local.1),
            SocketAddr::new(*remote.0, remote.1),
        )
    }

    /// Whether a listener holds `local` exactly, or the wildcard and
    /// `local` overlap on the port (RFC 9293 §3.9.1.2 leaves binding rules
    /// to the implementation; like BSD without SO_REUSEADDR, one listener
    /// per port and family).
    pub fn listening_on(&self, local: SocketAddr) -> bool {
        self.listeners.keys().any(|l| {
            l.port() == local.port()
                && l.is_ipv4() == local.is_ipv4()
                && (l.ip() == local.ip() || l.ip().is_unspecified() || local.ip().is_unspecified())
        })
    }

    /// Whether any socket uses `port` locally.
    pub fn port_in_use(&self, port: u16) -> bool {
        self.listeners.keys().any(|l| l.port() == port)
            || self.connections.keys().any(|(l, _)| l.port() == port)
    }

    /// Whether a connection holds this 4-tuple.
    pub fn connected(&self, local: SocketAddr, remote: SocketAddr) -> bool {
        self.connections.contains_key(&(local, remote))
    }

    /// One past the highest slot index (slots below may be free).
    pub fn slot_count(&self) -> usize {
        self.slab.slot_count()
    }

    /// Indices of every slot in use.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.slab.indices()
    }

    /// Sockets in use.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// SYNs every listener answered with a cookie or dropped for being
    /// over its bounds, so far: while this grows, a flood is on.
    pub fn listener_overflows(&self) -> u64 {
        self.slab
            .values()
            .map(|slot| match &slot.socket {
                TcpSocket::Listener(l) => l.counters().cookies_sent + l.counters().syns_dropped,
                TcpSocket::Connection(_) => 0,
            })
            .sum()
    }

    /// Gives back the room the lookup tables and the listeners' queues
    /// grew beyond what they hold (after a flood of connections).
    pub fn shrink_tables(&mut self) {
        self.connections.shrink_to_fit();
        for index in 0..self.slab.slot_count() {
            if let Some(Slot {
                socket: TcpSocket::Listener(listener),
                ..
            }) = self.slab.get_mut(index)
            {
                listener.shrink_tables();
            }
        }
    }

    /// Connections in `state`, accepted or not (listeners' held ones
    /// excluded).
    pub fn count_in(&self, state: State) -> usize {
        self.slab
            .values()
            .filter(|s| matches!(&s.socket, TcpSocket::Connection(c) if c.state() == state))
            .count()
    }
}

fn unspecified_like(addr: SocketAddr) -> std::net::IpAddr {
    match addr {
        SocketAddr::V4(_) => std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// Whether `addr` equals `SocketAddr::new(ip, port)`: a socket address
/// built that way has no IPv6 flow label and no scope.
#[inline]
fn is_socket_addr(addr: &SocketAddr, (ip, port): (&IpAddr, u16)) -> bool {
    match (addr, ip) {
        (SocketAddr::V6(a), IpAddr::V6(ip)) => {
            a.port() == port && a.ip() == ip && a.flowinfo() == 0 && a.scope_id() == 0
        }
        (SocketAddr::V4(a), IpAddr::V4(ip)) => a.port() == port && a.ip() == ip,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV6};

    /// The last-connection check gives what comparing with the socket
    /// address built from the same address and port gives.
    #[test]
    fn matching_parts_is_matching_the_socket_address() {
        let v6 = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
        let other6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
        let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let mut addrs = vec![
            SocketAddr::new(v6, 80),
            SocketAddr::new(v6, 81),
            SocketAddr::new(other6, 80),
            SocketAddr::new(v4, 80),
            SocketAddr::new(v4, 81),
        ];
        if let IpAddr::V6(ip) = v6 {
            addrs.push(SocketAddr::V6(SocketAddrV6::new(ip, 80, 0, 3)));
            addrs.push(SocketAddr::V6(SocketAddrV6::new(ip, 80, 7, 0)));
        }
        for addr in &addrs {
            for ip in [v6, other6, v4] {
                for port in [80, 81] {
                    assert_eq!(
                        is_socket_addr(addr, (&ip, port)),
                        *addr == SocketAddr::new(ip, port),
                        "{addr} vs {ip} port {port}"
                    );
                }
            }
        }
    }
}
