//! Memory that comes back after pressure (issue 23): a flood fills
//! queues and tables and touches pool buffers, and touched memory stays
//! resident long after the queues drain. Pressure is the pool holding
//! more than a quarter of its buffers in use, or a listener over its
//! bounds (answering with SYN cookies or dropping SYNs). Once neither has
//! been seen for [`QUIET`], the host releases the free buffers beyond [`Host::pool_keep`] (an eighth:
//! below the pressure mark, so a host idling near the mark does not
//! release and regrow over and over), shrinks the tables a flood grew,
//! and asks the allocator to return the free memory to the system
//! ([`return_free_memory`]). A host that never saw pressure releases
//! nothing, so the preallocated pool stays whole for measurements.

use std::time::Duration;

use super::Host;
use crate::buffer::return_free_memory;
use crate::time::Instant;

/// How long the host must be free of pressure before memory goes back:
/// long enough that a busy transfer's pauses do not release (and regrow)
/// buffers, short enough that a host is back near idle within ten
/// seconds of a flood's end (neighbour resolution of the flood's sources
/// gives up after 3 s, RFC 4861 §10).
pub(super) const QUIET: Duration = Duration::from_secs(5);

/// What the host remembers of pressure since it last gave memory back.
#[derive(Debug, Default)]
pub(super) struct Reclaim {
    /// When pressure was last seen; `None` when it has not been since the
    /// last release (or ever).
    last_pressure: Option<Instant>,
    /// The listeners' overflow count (cookies sent, SYNs dropped) when
    /// last looked at.
    overflows: u64,
    /// Times memory was given back.
    releases: u64,
}

impl Host {
    /// Buffers the pool keeps when quiet: an eighth of its bound, what an
    /// idle host with a few connections uses.
    pub(super) fn pool_keep(&self) -> usize {
        (self.pool.config().buffers / 8).max(64)
    }

    /// Notes pressure, or gives memory back after [`QUIET`] without it.
    pub(super) fn reclaim_memory(&mut self, now: Instant) {
        let keep = self.pool_keep();
        let overflows = self.tcp.listener_overflows();
        let flooded = overflows != self.reclaim.overflows;
        self.reclaim.overflows = overflows;
        if self.pool.in_use() > 2 * keep || flooded {
            self.reclaim.last_pressure = Some(now);
            return;
        }
        let Some(since) = self.reclaim.last_pressure else {
            return;
        };
        if now.saturating_duration_since(since) < QUIET {
            return;
        }
        self.reclaim.last_pressure = None;
        self.reclaim.releases += 1;
        self.pool.release(keep);
        self.tcp.shrink_tables();
        self.input.shrink_to_fit();
        return_free_memory();
    }

    /// When memory may next be given back, while pressure is pending.
    pub(super) fn reclaim_deadline(&self) -> Option<Instant> {
        self.reclaim.last_pressure.map(|since| since + QUIET)
    }

    /// Times the host gave memory back after pressure.
    pub fn memory_releases(&self) -> u64 {
        self.reclaim.releases
    }
}
