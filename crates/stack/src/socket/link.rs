//! Link-level sockets, like a Linux `AF_PACKET` / `SOCK_DGRAM` socket
//! bound to one EtherType on one interface: the application sends and
//! receives frame payloads, and the host adds and strips the Ethernet
//! header (the XTP study's raw link-level "NIT" test).
//!
//! The socket only queues payloads with the peer's MAC address; the host
//! checks the interface and EtherType at open, fills in the source
//! address, and demultiplexes received frames by interface and EtherType.

use probe::Flow;
use wire::ethernet::EthernetAddress;

use super::queues::{Message, Queues};
use super::udp::map_packet_error;
use super::{probe_len, SendError, SocketCounters};
use crate::buffer::{Packet, Pool};
use crate::iface::route::InterfaceId;
use crate::probes::{SOCKET_SEND_ENTER, SOCKET_SEND_EXIT};

/// Bounds of a link-level socket. The largest payload is not configured:
/// it is the interface's MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// Frames the send queue holds before sends are refused.
    pub send_queue_frames: usize,
    /// Frames the receive queue holds before arrivals are dropped.
    pub recv_queue_frames: usize,
    /// Payload bytes the receive queue holds before arrivals are dropped.
    pub recv_queue_bytes: usize,
}

impl Default for LinkConfig {
    /// 64 frames each way and 256 KiB received, as a UDP socket: frames
    /// are at most an MTU, so the byte bound allows over a hundred
    /// full-size Ethernet frames.
    fn default() -> Self {
        Self {
            send_queue_frames: 64,
            recv_queue_frames: 64,
            recv_queue_bytes: 256 * 1024,
        }
    }
}

/// A frame the application sent, as the host takes it.
#[derive(Debug)]
pub struct OutgoingFrame {
    pub destination: EthernetAddress,
    /// The payload alone; the host prepends the Ethernet header into its
    /// headroom.
    pub payload: Packet,
}

/// A frame the host received for this socket.
#[derive(Debug)]
pub struct ReceivedFrame {
    pub source: EthernetAddress,
    /// The interface's own address or broadcast: what `AF_PACKET` reports
    /// as the packet type (host or broadcast).
    pub destination: EthernetAddress,
    /// The payload after the Ethernet header, any minimum-frame padding
    /// included (Ethernet II has no length field to remove it by).
    pub payload: Packet,
}

/// A link-level socket: its interface and EtherType, queues and counters.
pub struct LinkSocket {
    config: LinkConfig,
    interface: InterfaceId,
    ethertype: u16,
    /// The interface's MTU when the socket was opened: the largest payload.
    mtu: usize,
    flow: Flow,
    queues: Queues<OutgoingFrame, ReceivedFrame>,
}

impl LinkSocket {
    /// A socket on `interface` for `ethertype`, sending payloads of at
    /// most `mtu` bytes. The host checks that the interface is Ethernet and
    /// that the EtherType is not its own before calling this.
    pub fn new(
        config: LinkConfig,
        interface: InterfaceId,
        ethertype: u16,
        mtu: usize,
        flow: Flow,
    ) -> Self {
        Self {
            config,
            interface,
            ethertype,
            mtu,
            flow,
            queues: Queues::new(
                config.send_queue_frames,
                config.recv_queue_frames,
                config.recv_queue_bytes,
            ),
        }
    }

    pub fn interface(&self) -> InterfaceId {
        self.interface
    }

    pub fn ethertype(&self) -> u16 {
        self.ethertype
    }

    /// The largest payload a send accepts.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// The per-flow trace gate (an `SO_LOG`-like option).
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
    }

    /// Queues a copy of `data` for `destination` (the application's
    /// write). A payload over the MTU is refused, never truncated.
    pub fn send_to(
        &mut self,
        pool: &Pool,
        data: &[u8],
        destination: EthernetAddress,
    ) -> Result<(), SendError> {
        let aux = self.queues.next_send();
        let flow = self.flow;
        let len = data.len();
        let _span = probe::span_with(SOCKET_SEND_ENTER, SOCKET_SEND_EXIT, flow, || {
            (probe_len(len), aux)
        });
        if len > self.mtu {
            return Err(SendError::TooLarge { len, max: self.mtu });
        }
        self.queues.check_send_room()?;
        let payload = Packet::from_payload(pool, flow, data).map_err(map_packet_error)?;
        let item = OutgoingFrame {
            destination,
            payload,
        };
        self.queues.enqueue_send(item, len, flow, aux)
    }

    /// The host takes the oldest frame to send.
    pub fn dequeue_outgoing(&mut self) -> Option<OutgoingFrame> {
        self.queues.dequeue_send()
    }

    /// Whether a frame of `ethertype` received on `interface` is for this
    /// socket.
    pub fn accepts(&self, interface: InterfaceId, ethertype: u16) -> bool {
        self.interface == interface && self.ethertype == ethertype
    }

    /// The host hands over a received frame. It is dropped and counted
    /// (returning `false`) if the receive queue is full by count or bytes.
    pub fn deliver(&mut self, frame: ReceivedFrame) -> bool {
        self.queues.deliver(frame, self.flow)
    }

    /// Takes the oldest received frame without copying it.
    pub fn recv(&mut self) -> Option<ReceivedFrame> {
        self.queues.recv()
    }

    /// The application's read: copies the oldest payload into `out`
    /// (truncating, the rest discarded) and returns the bytes copied and
    /// the sender's MAC address.
    pub fn recv_from(&mut self, out: &mut [u8]) -> Option<(usize, EthernetAddress)> {
        let (copied, frame) = self.queues.recv_into(out)?;
        Some((copied, frame.source))
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

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }
}

impl std::fmt::Debug for LinkSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkSocket")
            .field("interface", &self.interface)
            .field("ethertype", &format_args!("{:#06x}", self.ethertype))
            .field("mtu", &self.mtu)
            .field("flow", &self.flow)
            .field("send_queue", &self.queues.send_len())
            .field("recv_queue", &self.queues.recv_len())
            .field("counters", &self.queues.counters)
            .finish()
    }
}

impl Message for ReceivedFrame {
    fn payload(&self) -> &Packet {
        &self.payload
    }

    fn payload_mut(&mut self) -> &mut Packet {
        &mut self.payload
    }
}
