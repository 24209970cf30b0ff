//! Offload in the host: the `ethtool -K` of its interfaces
//! ([`Host::set_offload`]) and receive coalescing (GRO) of what one poll
//! takes from a link (see [`crate::iface::offload`]).

use super::Host;
use crate::buffer::Packet;
use crate::iface::offload::{GroHeld, GroSegment, Offload};
use crate::iface::route::InterfaceId;

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

    /// An IP packet from `interface`'s link for IP input: through GRO when
    /// the interface has it, else queued as it is.
    pub(super) fn gro_input(
        &mut self,
        interface: InterfaceId,
        packet: Packet,
        link_multicast: bool,
    ) {
        let gro = !self.router
            && !link_multicast
            && self
                .interfaces
                .get(interface.0)
                .is_some_and(|i| i.offload.gro);
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
