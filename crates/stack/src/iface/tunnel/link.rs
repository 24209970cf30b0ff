//! The link of a tunnel interface whose link layer is the host's own
//! IPv4. It describes the link (bare IP, the tunnel MTU, the interface
//! identifier of RFC 4213 §3.7) and carries nothing itself: the host
//! encapsulates a tunnel interface's packets before they would reach an
//! interface queue, and queues decapsulated ones for IPv6 input directly,
//! so frames never come here. One that did would be a bug, refused and
//! counted as `dropped_unsupported`.

use std::net::Ipv4Addr;

use crate::phy::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// A tunnel interface's link (see the module docs).
#[derive(Debug)]
pub struct HostIpv4Link {
    mtu: usize,
    local: Ipv4Addr,
    stats: LinkStats,
}

impl HostIpv4Link {
    pub fn new(mtu: usize, local: Ipv4Addr) -> Self {
        Self {
            mtu,
            local,
            stats: LinkStats::default(),
        }
    }
}

impl Link for HostIpv4Link {
    fn medium(&self) -> Medium {
        Medium::Ip
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn transmit(&mut self, _now: Instant, _parts: &[&[u8]]) -> Result<(), LinkError> {
        self.stats.dropped_unsupported += 1;
        Err(LinkError::Unsupported)
    }

    fn receive(&mut self, _now: Instant, _buf: &mut [u8]) -> Option<usize> {
        None
    }

    fn may_receive(&self, _now: Instant) -> bool {
        false
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        None
    }

    fn transmit_ring(&self) -> Option<usize> {
        Some(1)
    }

    fn next_arrival(&self) -> Option<Instant> {
        None
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        Some(super::configured::interface_id(self.local))
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}
