//! Raw IP sockets, like Linux `SOCK_RAW`: bound to a family and an IP
//! protocol number, they see every accepted packet of that protocol and
//! send upper-layer messages the host wraps in an IP header.
//!
//! Both directions carry the upper-layer message alone, with addresses and
//! hop limit as metadata. For IPv6 that is what RFC 3542 raw sockets see
//! (never the IPv6 header); IPv4 is treated the same way for consistency.
//! On send the host fills the ICMPv6 checksum, which covers a
//! pseudo-header the application cannot know (RFC 8200 §8.1), so an
//! ICMPv6 message is handed over with its checksum zero.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use probe::Flow;
use wire::ip::IpProtocol;

use super::queues::{Message, Queues};
use super::udp::map_packet_error;
use super::{probe_len, SendError, SocketCounters};
use crate::buffer::{Packet, Pool};
use crate::probes::{SOCKET_SEND_ENTER, SOCKET_SEND_EXIT};

/// The IP version a raw socket speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RawFamily {
    Ipv4,
    Ipv6,
}

impl RawFamily {
    /// The family of `addr`.
    pub fn of(addr: IpAddr) -> RawFamily {
        match addr {
            IpAddr::V4(_) => RawFamily::Ipv4,
            IpAddr::V6(_) => RawFamily::Ipv6,
        }
    }

    /// The family's unspecified address.
    pub fn unspecified(self) -> IpAddr {
        match self {
            RawFamily::Ipv4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            RawFamily::Ipv6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        }
    }
}

/// Bounds of a raw socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawConfig {
    /// Packets the send queue holds before sends are refused.
    pub send_queue_packets: usize,
    /// Packets the receive queue holds before arrivals are dropped.
    pub recv_queue_packets: usize,
    /// Payload bytes the receive queue holds before arrivals are dropped;
    /// a packet larger than this is never accepted.
    pub recv_queue_bytes: usize,
    /// Largest message accepted for sending.
    pub max_packet: usize,
}

impl Default for RawConfig {
    /// A raw socket sees every packet of its protocol (every ICMPv6 for a
    /// ping or ND listener), so it queues more than a UDP socket.
    fn default() -> Self {
        Self {
            send_queue_packets: 64,
            recv_queue_packets: 256,
            recv_queue_bytes: 256 * 1024,
            max_packet: 65_535,
        }
    }
}

/// An upper-layer message with its IP metadata, in either direction.
#[derive(Debug)]
pub struct RawPacket {
    /// The peer: destination when sending, source when received.
    pub remote: IpAddr,
    /// This end: the destination a packet arrived at; when sending, the
    /// family's unspecified address (the host chooses the source).
    pub local: IpAddr,
    /// Hop limit (IPv6) or TTL (IPv4) received, or to send with; 0 when
    /// sending means the host's default.
    pub hop_limit: u8,
    /// The message after the IP header (and, for IPv6, its extension
    /// headers).
    pub payload: Packet,
}

/// A raw IP socket: its family and protocol, queues and counters.
pub struct RawSocket {
    config: RawConfig,
    family: RawFamily,
    protocol: IpProtocol,
    flow: Flow,
    queues: Queues<RawPacket, RawPacket>,
}

impl RawSocket {
    pub fn new(config: RawConfig, family: RawFamily, protocol: IpProtocol, flow: Flow) -> Self {
        Self {
            config,
            family,
            protocol,
            flow,
            queues: Queues::new(
                config.send_queue_packets,
                config.recv_queue_packets,
                config.recv_queue_bytes,
            ),
        }
    }

    pub fn family(&self) -> RawFamily {
        self.family
    }

    pub fn protocol(&self) -> IpProtocol {
        self.protocol
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// The per-flow trace gate (an `SO_LOG`-like option).
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
    }

    /// Queues a copy of the upper-layer message `data` for `remote`, with
    /// `hop_limit` or the host's default.
    pub fn send_to(
        &mut self,
        pool: &Pool,
        data: &[u8],
        remote: IpAddr,
        hop_limit: Option<u8>,
    ) -> Result<(), SendError> {
        let aux = self.queues.next_send();
        let flow = self.flow;
        let len = data.len();
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, flow, || {
            (probe_len(len), aux)
        });
        if len > self.config.max_packet {
            return Err(SendError::TooLarge {
                len,
                max: self.config.max_packet,
            });
        }
        if RawFamily::of(remote) != self.family {
            return Err(SendError::FamilyMismatch);
        }
        self.queues.check_send_room()?;
        let payload = Packet::from_payload(pool, flow, data).map_err(map_packet_error)?;
        let item = RawPacket {
            remote,
            local: self.family.unspecified(),
            hop_limit: hop_limit.unwrap_or(0),
            payload,
        };
        self.queues.enqueue_send(item, len, flow, aux)
    }

    /// The host takes the oldest message to send.
    pub fn dequeue_outgoing(&mut self) -> Option<RawPacket> {
        self.queues.dequeue_send()
    }

    /// Whether a packet of `family` carrying `protocol` is for this socket.
    /// Protocols compare by number, so `Unknown(58)` matches `Icmpv6`.
    pub fn accepts(&self, family: RawFamily, protocol: IpProtocol) -> bool {
        family == self.family && u8::from(protocol) == u8::from(self.protocol)
    }

    /// The host hands over a copy of a received packet. It is dropped and
    /// counted (returning `false`) if the receive queue is full by count or
    /// bytes.
    pub fn deliver(&mut self, packet: RawPacket) -> bool {
        self.queues.deliver(packet, self.flow)
    }

    /// Takes the oldest received packet without copying it.
    pub fn recv(&mut self) -> Option<RawPacket> {
        self.queues.recv()
    }

    /// The application's read: copies the oldest message into `out`
    /// (truncating, the rest discarded) and returns the bytes copied and
    /// the sender.
    pub fn recv_from(&mut self, out: &mut [u8]) -> Option<(usize, IpAddr)> {
        let (copied, packet) = self.queues.recv_into(out)?;
        Some((copied, packet.remote))
    }

    pub fn send_queue_len(&self) -> usize {
        self.queues.send_len()
    }

    pub fn recv_queue_len(&self) -> usize {
        self.queues.recv_len()
    }

    pub fn counters(&self) -> SocketCounters {
        self.queues.counters
    }

    pub fn config(&self) -> &RawConfig {
        &self.config
    }
}

impl std::fmt::Debug for RawSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawSocket")
            .field("family", &self.family)
            .field("protocol", &self.protocol)
            .field("flow", &self.flow)
            .field("send_queue", &self.queues.send_len())
            .field("recv_queue", &self.queues.recv_len())
            .field("counters", &self.queues.counters)
            .finish()
    }
}

impl Message for RawPacket {
    fn payload(&self) -> &Packet {
        &self.payload
    }

    fn payload_mut(&mut self) -> &mut Packet {
        &mut self.payload
    }
}
