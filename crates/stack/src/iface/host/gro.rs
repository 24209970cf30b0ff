//! Offload in the host: the `ethtool -K` of its interfaces
//! ([`Host::set_offload`]), receive coalescing (GRO) of what one poll
//! takes from a link (see [`crate::iface::offload`]), and the receipt of
//! super-frames from a link that carries them whole.

use probe::Flow;

use super::Host;
use crate::buffer::{Packet, PacketOffload};
use crate::iface::offload::{GroHeld, GroSegment, Offload};
use crate::iface::route::InterfaceId;
use crate::phy::WholeFrame;
use crate::time::Instant;

/// The packet GRO holds, with where it came from.
pub(super) struct Held {
    interface: InterfaceId,
    held: GroHeld,
}

/// What GRO did, per host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GroCounters {
    /// Segments merged into an earlier one of their flow.
    pub merged: u64,
    /// Packets handed to IP input that hold more than one segment.
    pub super_segments: u64,
}

/// Why an offload setting was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    #[error("no interface {0:?}")]
    NoInterface(InterfaceId),
    /// Segmentation offload cuts Ethernet frames: a link of bare IP
    /// (loopback, a tunnel) has none.
    #[error("segmentation offload needs an Ethernet interface")]
    NotEthernet,
}

impl Host {
    /// Turns offloads on or off for `interface`, as `ethtool -K` does:
    /// TSO makes TCP connections leaving by it send super-segments from
    /// their next segment on; GRO merges what arrives on it from the next
    /// poll on. A router does no GRO (what it forwards keeps its wire
    /// segments).
    pub fn set_offload(
        &mut self,
        interface: InterfaceId,
        offload: Offload,
    ) -> Result<(), OffloadError> {
        let entry = self
            .interfaces
            .get_mut(interface.0)
            .ok_or(OffloadError::NoInterface(interface))?;
        if offload.tso && entry.medium != crate::phy::Medium::Ethernet {
            return Err(OffloadError::NotEthernet);
        }
        entry.offload = offload;
        // Connections look at their route's interface again, as after a
        // path-MTU change (`tcp_clamp_to_path`).
        self.path_mtu_changes = self.path_mtu_changes.wrapping_add(1);
        Ok(())
    }

    /// The offloads of `interface`.
    pub fn offload(&self, interface: InterfaceId) -> Option<Offload> {
        self.interfaces.get(interface.0).map(|i| i.offload)
    }

    /// What GRO did.
    pub fn gro_counters(&self) -> GroCounters {
        self.gro_counters
    }

    /// Whether `interface` merges what it receives: GRO on, and not a
    /// router's (what a router forwards keeps its wire segments).
    pub(super) fn merges(&self, interface: InterfaceId) -> bool {
        !self.router
            && self
                .interfaces
                .get(interface.0)
                .is_some_and(|i| i.offload.gro)
    }

    /// Takes the next frame from `interface`'s link, which carries GSO
    /// super-frames whole, for an interface that merges
    /// ([`crate::phy::Link::receive_whole`]): false if none had arrived.
    /// An ordinary frame goes to link input as any other; a super-frame
    /// goes as the merged segment GRO would have made of its segments.
    /// Its checksum, left partial by the sender (a host in this process,
    /// or the kernel behind AF_PACKET) on a path that cannot corrupt it,
    /// counts as verified, as the kernel counts a veth's
    /// `CHECKSUM_PARTIAL`; one a NIC verified says so (`DATA_VALID`).
    pub(super) fn receive_whole(&mut self, now: Instant, interface: InterfaceId) -> bool {
        let pool = &self.pool;
        let entry = &mut self.interfaces[interface.0];
        let mut taken = None;
        let took = entry.link.receive_whole(now, &mut |frame, gso| {
            let packet = match frame {
                // The super-frame's own memory becomes the packet: no copy
                // (unless the lent memory held reached the pool's bound).
                // An ordinary frame is copied into the pool, whose bound
                // holds whatever queues keep it.
                WholeFrame::Lent(lent) if gso.is_some() => Packet::lent(pool, lent, Flow::NONE)
                    .or_else(|lent| Packet::receive_whole(pool, Flow::NONE, lent.bytes())),
                frame => Packet::receive_whole(pool, Flow::NONE, frame.bytes()),
            };
            taken = Some((packet, gso.copied()));
        });
        let Some((packet, gso)) = taken.filter(|_| took) else {
            return false;
        };
        let arrived = entry.link.received_at();
        let Ok(mut packet) = packet else {
            // Unlike `receive`'s, the frame has left the link: it is lost.
            self.count_drop("rx_no_buffer");
            return true;
        };
        entry.counters.rx_frames += 1;
        entry.counters.rx_bytes += packet.len() as u64;
        if let Some(header) = gso {
            packet.set_offload(PacketOffload {
                gso_size: header.gso_size,
                csum_verified: header.needs_csum || header.data_valid,
            });
        }
        self.link_input(now, interface, packet, arrived);
        true
    }

    /// An IP packet from `interface`'s link for IP input: through GRO when
    /// the interface has it, else queued as it is. A packet already merged
    /// (a super-frame received whole) goes on as it is, after what GRO
    /// holds.
    pub(super) fn gro_input(
        &mut self,
        interface: InterfaceId,
        packet: Packet,
        link_multicast: bool,
    ) {
        let gro = !link_multicast && self.merges(interface);
        if gro && packet.offload().gso_size > 0 {
            self.gro_flush();
            self.gro_counters.super_segments += 1;
            self.enqueue_ip_input(interface, packet, link_multicast);
            return;
        }
        let segment = if gro {
            GroSegment::parse(&packet)
        } else {
            None
        };
        let Some(segment) = segment else {
            self.gro_flush();
            self.enqueue_ip_input(interface, packet, link_multicast);
            return;
        };
        let packet = match self.gro.take() {
            Some(mut held) if held.interface == interface => {
                match held.held.try_merge(packet, &segment) {
                    Ok(()) => {
                        self.gro_counters.merged += 1;
                        self.gro = Some(held);
                        return;
                    }
                    Err(packet) => {
                        self.gro = Some(held);
                        packet
                    }
                }
            }
            other => {
                self.gro = other;
                packet
            }
        };
        self.gro_flush();
        self.gro = Some(Held {
            interface,
            held: GroHeld::new(packet, segment),
        });
    }

    /// Hands the packet GRO holds to IP input (at the end of a link's
    /// batch, or when something that does not join it comes).
    pub(super) fn gro_flush(&mut self) {
        let Some(Held { interface, held }) = self.gro.take() else {
            return;
        };
        if held.segments > 1 {
            self.gro_counters.super_segments += 1;
        }
        self.enqueue_ip_input(interface, held.packet, false);
    }
}
