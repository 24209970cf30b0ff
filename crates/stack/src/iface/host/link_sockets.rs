//! Link-level sockets: the glue between Ethernet input/output and the
//! link sockets' queues, and the checks made when one is opened.

use wire::ethernet::{EtherType, EthernetAddress, MIN_ETHERTYPE};

use super::Host;
use crate::buffer::Packet;
use crate::iface::route::InterfaceId;
use crate::phy::Medium;
use crate::socket::{OutgoingFrame, ReceivedFrame};

/// Why a link-level socket could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkOpenError {
    #[error("the host has no interface {0}")]
    NoSuchInterface(InterfaceId),
    #[error("interface {name} has no link header (not Ethernet), so no EtherType to bind")]
    NotEthernet { name: String },
    #[error("EtherType {0:#06x} is handled by the stack itself (IPv4, ARP or IPv6)")]
    Reserved(u16),
    #[error("{0:#06x} is an IEEE 802.3 length, not an EtherType (those start at 0x0600)")]
    NotAnEthertype(u16),
    #[error("EtherType 0x8100 is the IEEE 802.1Q tag, which the stack does not handle")]
    VlanTag,
}

/// Where a received Ethernet frame came from and was sent to.
#[derive(Debug, Clone, Copy)]
pub(super) struct FrameAddresses {
    pub src: EthernetAddress,
    pub dst: EthernetAddress,
}

impl Host {
    /// The checks `link_open` makes: an Ethernet interface, and an
    /// EtherType that is a type and not one the stack consumes itself
    /// (a socket there would silently miss every frame).
    pub(super) fn check_link_open(
        &self,
        interface: InterfaceId,
        ethertype: u16,
    ) -> Result<usize, LinkOpenError> {
        let iface = self
            .interfaces
            .get(interface.0)
            .ok_or(LinkOpenError::NoSuchInterface(interface))?;
        if iface.medium != Medium::Ethernet {
            return Err(LinkOpenError::NotEthernet {
                name: iface.name.clone(),
            });
        }
        if ethertype < MIN_ETHERTYPE {
            return Err(LinkOpenError::NotAnEthertype(ethertype));
        }
        match EtherType::from(ethertype) {
            EtherType::Ipv4 | EtherType::Arp | EtherType::Ipv6 => {
                Err(LinkOpenError::Reserved(ethertype))
            }
            EtherType::Vlan => Err(LinkOpenError::VlanTag),
            EtherType::Unknown(_) => Ok(iface.link_mtu()),
        }
    }

    /// A received frame of an EtherType the stack does not handle itself,
    /// its Ethernet header stripped: every link socket bound to the
    /// interface and EtherType gets it (as every matching `AF_PACKET`
    /// socket does), sharing the frame's buffers. Only frames to the
    /// interface's own address or broadcast are delivered: the multicast
    /// addresses the interface accepts are IPv6 groups, not the socket's.
    pub(super) fn link_socket_input(
        &mut self,
        interface: InterfaceId,
        ethertype: u16,
        addresses: FrameAddresses,
        packet: Packet,
    ) {
        let Some(last) = self
            .link
            .iter()
            .rposition(|s| s.accepts(interface, ethertype))
        else {
            self.count_drop("ethertype_unsupported");
            return;
        };
        let FrameAddresses { src, dst } = addresses;
        if dst != self.interfaces[interface.0].mac && !dst.is_broadcast() {
            self.count_drop("link_multicast_refused");
            return;
        }
        for index in 0..last {
            if !self.link[index].accepts(interface, ethertype) {
                continue;
            }
            let Some(copy) = self.share(&packet) else {
                self.count_drop("link_no_buffer");
                continue;
            };
            self.link_deliver(index, src, dst, copy);
        }
        self.link_deliver(last, src, dst, packet);
    }

    fn link_deliver(
        &mut self,
        index: usize,
        source: EthernetAddress,
        destination: EthernetAddress,
        payload: Packet,
    ) {
        self.counters.link_received += 1;
        let accepted = self.link[index].deliver(ReceivedFrame {
            source,
            destination,
            payload,
        });
        if !accepted {
            self.count_drop("link_receive_queue_full");
        }
    }

    /// A second packet referencing `packet`'s bytes (a new, empty head
    /// buffer and shared segments), or `None` when the pool is empty.
    fn share(&self, packet: &Packet) -> Option<Packet> {
        let segments = packet.segments(0..packet.len()).ok()?;
        let mut copy = Packet::new(&self.pool, packet.flow()).ok()?;
        for segment in segments {
            copy.append_segment(segment);
        }
        Some(copy)
    }

    /// Sends every frame queued on link socket `index`.
    pub(super) fn link_socket_output(&mut self, index: usize) {
        let socket = &self.link[index];
        let (interface, ethertype, flow) = (socket.interface(), socket.ethertype(), socket.flow());
        while let Some(frame) = self.link[index].dequeue_outgoing() {
            let OutgoingFrame {
                destination,
                mut payload,
            } = frame;
            // The socket's trace flag now, as UDP output does.
            payload.set_flow(flow);
            self.counters.link_sent += 1;
            self.ethernet_output(interface, destination, EtherType::from(ethertype), payload);
        }
    }
}
