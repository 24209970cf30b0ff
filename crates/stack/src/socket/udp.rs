//! UDP sockets (RFC 768): datagrams in, datagrams out, no connection.
//!
//! The socket only queues payloads; the host adds and checks the UDP
//! header (checksum rules included) and chooses routes and source
//! addresses.

use std::net::SocketAddr;

use probe::Flow;

use super::queues::{Message, Queues};
use super::{probe_len, SendError, SocketCounters};
use crate::buffer::{Packet, PacketError, Pool};
use crate::probes::{SOCKET_SEND_ENTER, SOCKET_SEND_EXIT};

/// The largest UDP payload over IPv4: a datagram's 65 535 bytes (RFC 791
/// Total Length) less the 20-byte IPv4 header and the 8-byte UDP header
/// (RFC 768).
pub const MAX_UDP4_PAYLOAD: usize = 65_535 - 20 - 8;

/// The largest UDP payload over IPv6 without jumbograms: the 65 535 bytes
/// of Payload Length (RFC 8200 §3; the fixed header does not count) less
/// the 8-byte UDP header. Extension headers would take from it, but this
/// host sends none with UDP (RFC 8200 §4.5: the fragmentable part, UDP
/// header included, is at most 65 535 bytes).
pub const MAX_UDP6_PAYLOAD: usize = 65_535 - 8;

/// The largest UDP payload for `remote`'s family.
pub fn max_payload_to(remote: SocketAddr) -> usize {
    if remote.is_ipv6() {
        MAX_UDP6_PAYLOAD
    } else {
        MAX_UDP4_PAYLOAD
    }
}

/// Bounds of a UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpConfig {
    /// Datagrams the send queue holds before sends are refused.
    pub send_queue_datagrams: usize,
    /// Datagrams the receive queue holds before arrivals are dropped.
    pub recv_queue_datagrams: usize,
    /// Payload bytes the receive queue holds before arrivals are dropped
    /// (like `SO_RCVBUF`); a datagram larger than this is never accepted.
    pub recv_queue_bytes: usize,
    /// Largest payload accepted for sending, to any destination. The
    /// destination's family limits it further: at most
    /// [`MAX_UDP4_PAYLOAD`] to an IPv4 peer, [`MAX_UDP6_PAYLOAD`] to an
    /// IPv6 one.
    pub max_datagram: usize,
}

impl Default for UdpConfig {
    /// 64 datagrams each way, 256 KiB received, and no limit of its own on
    /// the payload: whatever the destination's family allows (65 527
    /// bytes over IPv6, 65 507 over IPv4).
    fn default() -> Self {
        Self {
            send_queue_datagrams: 64,
            recv_queue_datagrams: 64,
            recv_queue_bytes: 256 * 1024,
            max_datagram: MAX_UDP6_PAYLOAD,
        }
    }
}

/// A datagram the application sent, as the host takes it.
#[derive(Debug)]
pub struct OutgoingDatagram {
    /// The socket's bound address, if any, when the host took the
    /// datagram (so an ephemeral port assigned after the send applies).
    pub local: Option<SocketAddr>,
    pub remote: SocketAddr,
    /// The payload alone; the host prepends the headers into its headroom.
    pub payload: Packet,
    /// The hop limit set on the socket at the time of the send, if any.
    pub hop_limit: Option<u8>,
}

/// A datagram the host received for this socket.
#[derive(Debug)]
pub struct ReceivedDatagram {
    pub remote: SocketAddr,
    /// The destination it arrived at.
    pub local: SocketAddr,
    /// The payload, UDP header stripped; possibly a segment chain
    /// (reassembled fragments).
    pub payload: Packet,
}

/// A queued outgoing datagram, before the host fills in `local`.
#[derive(Debug)]
struct Queued {
    remote: SocketAddr,
    payload: Packet,
    hop_limit: Option<u8>,
}

/// A UDP socket: its binding, options, queues and counters.
pub struct UdpSocket {
    config: UdpConfig,
    flow: Flow,
    local: Option<SocketAddr>,
    hop_limit: Option<u8>,
    queues: Queues<Queued, ReceivedDatagram>,
}

impl UdpSocket {
    pub fn new(config: UdpConfig, flow: Flow) -> Self {
        Self {
            config,
            flow,
            local: None,
            hop_limit: None,
            queues: Queues::new(
                config.send_queue_datagrams,
                config.recv_queue_datagrams,
                config.recv_queue_bytes,
            ),
        }
    }

    /// Binds to `local`. Port 0 asks the host for an ephemeral port, which
    /// it sets with [`set_local_port`](Self::set_local_port); an
    /// unspecified address receives on every address of its family.
    pub fn bind(&mut self, local: SocketAddr) {
        self.local = Some(local);
    }

    pub fn local(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The host's ephemeral port assignment. An unbound socket has no
    /// family yet, so the host binds it with [`bind`](Self::bind) instead;
    /// here it is left unchanged.
    pub fn set_local_port(&mut self, port: u16) {
        if let Some(local) = &mut self.local {
            local.set_port(port);
        }
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// The per-flow trace gate (an `SO_LOG`-like option): with the probe
    /// mode `traced_flows`, only traced sockets record.
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
    }

    /// The hop limit for datagrams sent from now on; `None` is the
    /// host's default.
    pub fn set_hop_limit(&mut self, hop_limit: Option<u8>) {
        self.hop_limit = hop_limit;
    }

    pub fn hop_limit(&self) -> Option<u8> {
        self.hop_limit
    }

    /// Queues a copy of `data` for `remote` (the application's write).
    /// A socket bound to one family cannot send to the other.
    pub fn send_to(
        &mut self,
        pool: &Pool,
        data: &[u8],
        remote: SocketAddr,
    ) -> Result<(), SendError> {
        let aux = self.queues.next_send();
        let flow = self.flow;
        let len = data.len();
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, flow, || {
            (probe_len(len), aux)
        });
        // A socket bound to one family cannot send to the other; the
        // destination's family bounds the payload (RFC 768 over RFC 791
        // or RFC 8200).
        if self
            .local
            .is_some_and(|local| local.is_ipv4() != remote.is_ipv4())
        {
            return Err(SendError::FamilyMismatch);
        }
        let family_max = max_payload_to(remote);
        if len > family_max {
            return Err(SendError::DatagramTooLarge {
                len,
                max: family_max,
                family: if remote.is_ipv6() { "IPv6" } else { "IPv4" },
            });
        }
        if len > self.config.max_datagram {
            return Err(SendError::TooLarge {
                len,
                max: self.config.max_datagram,
            });
        }
        self.queues.check_send_room()?;
        let payload = Packet::from_payload(pool, flow, data).map_err(map_packet_error)?;
        let item = Queued {
            remote,
            payload,
            hop_limit: self.hop_limit,
        };
        self.queues.enqueue_send(item, len, flow, aux)
    }

    /// The host takes the oldest datagram to send.
    pub fn dequeue_outgoing(&mut self) -> Option<OutgoingDatagram> {
        let Queued {
            remote,
            payload,
            hop_limit,
        } = self.queues.dequeue_send()?;
        Some(OutgoingDatagram {
            local: self.local,
            remote,
            payload,
            hop_limit,
        })
    }

    /// Whether a datagram arriving at `local` is for this socket: same
    /// family and port, and the bound address is either unspecified
    /// (the wildcard) or exactly `local`'s.
    pub fn accepts(&self, local: SocketAddr) -> bool {
        let Some(bound) = self.local else {
            return false;
        };
        bound.is_ipv4() == local.is_ipv4()
            && bound.port() == local.port()
            && (bound.ip().is_unspecified() || bound.ip() == local.ip())
    }

    /// The host hands over a received datagram. It is dropped and counted
    /// (returning `false`) if the receive queue is full by count or bytes.
    /// The queue probes use this socket's flow, traced if either the
    /// socket or the packet (trace option) is.
    pub fn deliver(&mut self, datagram: ReceivedDatagram) -> bool {
        self.queues.deliver(datagram, self.flow)
    }

    /// The application's read: copies the oldest datagram into `out` and
    /// returns the bytes copied and the sender. As on any datagram socket,
    /// what does not fit `out` is discarded.
    pub fn recv_from(&mut self, out: &mut [u8]) -> Option<(usize, SocketAddr)> {
        let (copied, datagram) = self.queues.recv_into(out)?;
        Some((copied, datagram.remote))
    }

    /// Takes the oldest received datagram without copying it.
    pub fn recv(&mut self) -> Option<ReceivedDatagram> {
        self.queues.recv()
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

    pub fn config(&self) -> &UdpConfig {
        &self.config
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("flow", &self.flow)
            .field("local", &self.local)
            .field("send_queue", &self.queues.send_len())
            .field("recv_queue", &self.queues.recv_len())
            .field("counters", &self.queues.counters)
            .finish()
    }
}

/// A copy into the pool can only fail for lack of buffers.
pub(super) fn map_packet_error(_: PacketError) -> SendError {
    SendError::PoolExhausted
}

impl Message for ReceivedDatagram {
    fn payload(&self) -> &Packet {
        &self.payload
    }

    fn payload_mut(&mut self) -> &mut Packet {
        &mut self.payload
    }
}
