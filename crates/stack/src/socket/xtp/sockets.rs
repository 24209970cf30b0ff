//! A host's XTP sockets: listeners and associations in a slab behind
//! generation-checked handles, and the tables that find an arriving
//! packet's context (study §2.4.1, "Association Identification"; XTP 4.0
//! keys): a key with the return bit is one this host assigned, found by a
//! direct lookup; a key without it is the sender's own, found by sender
//! and key; a FIRST that matches neither goes to the listener on the port
//! its address segment names.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

use probe::Flow;
use wire::ethernet::EthernetAddress;

use super::association::{Association, State};
use super::config::XtpConfig;
use crate::iface::route::InterfaceId;
use crate::random::SplitMix64;
use crate::socket::slab::{Slab, SlotKey};
use crate::socket::tcp::sockets::StreamMarks;

/// The most XTP sockets a host holds.
pub const MAX_SOCKETS: usize = 65_536;
/// Associations a listener holds for `accept` at most; FIRSTs beyond are
/// refused.
pub const BACKLOG: usize = 128;

/// An XTP socket of a host; stale once its slot is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct XtpHandle(SlotKey);

/// How packets reach an association's peer, and where an arriving
/// packet came from: over IP (the peer's address), or directly in
/// Ethernet frames of EtherType 0x817D (the interface and the peer's MAC),
/// as the study's KRM ran XTP on the network driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    Ip(IpAddr),
    Link(InterfaceId, EthernetAddress),
}

/// A port open for FIRST packets.
#[derive(Debug)]
pub struct Listener {
    pub local: SocketAddr,
    pub config: XtpConfig,
    pub flow: Flow,
    /// Associations set up and not yet accepted.
    pub pending: VecDeque<XtpHandle>,
    /// FIRSTs refused because the backlog was full.
    pub refused: u64,
}

#[derive(Debug)]
pub enum XtpSocket {
    Listener(Box<Listener>),
    Association(Box<Association>),
}

#[derive(Debug)]
pub struct Slot {
    pub socket: XtpSocket,
    /// How the association's packets travel (a listener's: unused).
    pub peer: Peer,
    /// The application gave the handle up: freed once closed.
    pub released: bool,
    pub marks: StreamMarks,
    /// The host's count of path-MTU changes when this association last
    /// checked its path (`None`: not yet).
    pub path_mtu_seen: Option<u64>,
}

/// Where an arriving packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    Association(usize),
    Listener(usize),
    None,
}

#[derive(Debug)]
pub struct XtpSockets {
    slab: Slab<Slot>,
    /// Keys this host assigned, to their association.
    by_key: HashMap<u64, usize>,
    /// (peer, peer's key) to the association.
    by_peer: HashMap<(Peer, u64), usize>,
    listeners: HashMap<SocketAddr, usize>,
    rng: SplitMix64,
    /// An application call left packets to send: the next poll is due now.
    pub output_pending: bool,
    /// Packets taken by a context or listener, and packets sent.
    pub received: u64,
    pub sent: u64,
}

impl XtpSockets {
    /// Keys and ports drawn from `seed`, so a run replays exactly.
    pub fn new(seed: u64) -> Self {
        Self {
            slab: Slab::new(MAX_SOCKETS),
            by_key: HashMap::new(),
            by_peer: HashMap::new(),
            listeners: HashMap::new(),
            rng: SplitMix64::new(seed ^ 0x5854_5034_2e30_0000),
            output_pending: false,
            received: 0,
            sent: 0,
        }
    }

    /// A key no context of this host holds: 63 random bits (the top one is
    /// the return bit), never zero.
    pub fn fresh_key(&mut self) -> u64 {
        loop {
            let key = self.rng.next_u64() & !wire::xtp::KEY_RETURN;
            if key != 0 && !self.by_key.contains_key(&key) {
                return key;
            }
        }
    }

    /// A local port no XTP socket uses, from the ephemeral range; 0 if
    /// none is free.
    pub fn free_port(&mut self) -> u16 {
        for _ in 0..65_536 {
            let port = 49152 + (self.rng.next_u64() % 16384) as u16;
            if !self.port_in_use(port) {
                return port;
            }
        }
        0
    }

    pub fn port_in_use(&self, port: u16) -> bool {
        self.slab.values().any(|s| match &s.socket {
            XtpSocket::Listener(l) => l.local.port() == port,
            XtpSocket::Association(a) => a.local().port() == port,
        })
    }

    /// Stores `socket`; `None` when [`MAX_SOCKETS`] are in use.
    pub fn insert(&mut self, socket: XtpSocket, peer: Peer) -> Option<XtpHandle> {
        let (index, key) = self.slab.insert(Slot {
            socket,
            peer,
            released: false,
            marks: StreamMarks::default(),
            path_mtu_seen: None,
        })?;
        match &self.slab.get(index)?.socket {
            XtpSocket::Listener(l) => {
                self.listeners.insert(l.local, index);
            }
            XtpSocket::Association(a) => {
                self.by_key.insert(a.own_key(), index);
                if let Some(key) = a.peer_key() {
                    self.by_peer.insert((peer, key), index);
                }
            }
        }
        Some(XtpHandle(key))
    }

    /// The slot index of a live handle.
    pub fn index(&self, handle: XtpHandle) -> Option<usize> {
        self.slab.index(handle.0)
    }

    pub fn get(&self, index: usize) -> Option<&Slot> {
        self.slab.get(index)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut Slot> {
        self.slab.get_mut(index)
    }

    pub fn association_mut(&mut self, index: usize) -> Option<&mut Association> {
        match &mut self.get_mut(index)?.socket {
            XtpSocket::Association(a) => Some(a),
            XtpSocket::Listener(_) => None,
        }
    }

    /// Frees a slot and its table entries; its handles go stale.
    pub fn remove(&mut self, index: usize) -> Option<XtpSocket> {
        let slot = self.slab.remove(index)?;
        let peer = slot.peer;
        match &slot.socket {
            XtpSocket::Listener(l) => {
                self.listeners.remove(&l.local);
            }
            XtpSocket::Association(a) => {
                if self.by_key.get(&a.own_key()) == Some(&index) {
                    self.by_key.remove(&a.own_key());
                }
                if let Some(key) = a.peer_key() {
                    let entry = (peer, key);
                    if self.by_peer.get(&entry) == Some(&index) {
                        self.by_peer.remove(&entry);
                    }
                }
            }
        }
        Some(slot.socket)
    }

    /// The context for a packet with `key` from `src`.
    pub fn demux(&self, src: Peer, key: u64) -> Demux {
        let index = if key & wire::xtp::KEY_RETURN != 0 {
            self.by_key.get(&(key & !wire::xtp::KEY_RETURN))
        } else {
            self.by_peer.get(&(src, key))
        };
        match index {
            // A return key names our context; it must be the sender's
            // association, or anyone could drive it.
            Some(&i) => match self.get(i) {
                Some(slot) if slot.peer == src => Demux::Association(i),
                _ => Demux::None,
            },
            None => Demux::None,
        }
    }

    /// The listener for a FIRST to `local`: the exact address, else the
    /// wildcard of its family on the port.
    pub fn listener_for(&self, local: SocketAddr) -> Demux {
        if let Some(&i) = self.listeners.get(&local) {
            return Demux::Listener(i);
        }
        let any: IpAddr = match local {
            SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        match self.listeners.get(&SocketAddr::new(any, local.port())) {
            Some(&i) => Demux::Listener(i),
            None => Demux::None,
        }
    }

    /// Whether a listener already holds `local`'s port for its family.
    pub fn listening_on(&self, local: SocketAddr) -> bool {
        self.listeners.keys().any(|l| {
            l.port() == local.port()
                && l.is_ipv4() == local.is_ipv4()
                && (l.ip() == local.ip() || l.ip().is_unspecified() || local.ip().is_unspecified())
        })
    }

    pub fn slot_count(&self) -> usize {
        self.slab.slot_count()
    }

    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.slab.indices()
    }

    pub fn len(&self) -> usize {
        self.slab.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// Associations in `state`.
    pub fn count_in(&self, state: State) -> usize {
        self.slab
            .values()
            .filter(|s| matches!(&s.socket, XtpSocket::Association(a) if a.state() == state))
            .count()
    }
}
