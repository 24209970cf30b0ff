//! The device stage of an interface: the transmit ring between the
//! interface queue and the wire (DESIGN.md, "Data path and probe points":
//! the fifth queue, where a saturated link really queues).
//!
//! A frame takes a slot when the link accepts it and frees it when its
//! last bit has left — the transmit-complete event a NIC signals by
//! writing back its descriptor, and NDIS by its send completion, which the
//! IPv6 study's stop latency included (`000_…` §5.1). While the ring is
//! full the interface keeps frames in its own queue, as a driver stops its
//! queue (Linux's `netif_stop_queue`), so a saturated link backs up into
//! the interface queue instead of dropping at the wire.
//!
//! Completions are observed when the host polls at or after them, as a
//! driver sees an interrupt: the host's next deadline includes the
//! earliest one, so a runner that sleeps wakes for it.

use std::collections::VecDeque;

use probe::Flow;

use crate::probes::{DEVICE_QUEUE_DEQUEUE, DEVICE_QUEUE_ENQUEUE};
use crate::time::Instant;

/// Slots of a device's transmit ring when the link does not say how many
/// frames its transmitter queues (links to the operating system): the
/// default of Linux's e1000 and many NICs since.
pub const DEFAULT_RING_FRAMES: usize = 256;

/// A frame the device holds until its last bit has left.
#[derive(Debug, Clone, Copy)]
struct Slot {
    len: u32,
    flow: Flow,
    complete: Instant,
}

/// Counters of the device stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceCounters {
    /// Frames whose transmission completed.
    pub completed: u64,
    /// Most slots in use at once.
    pub high_water: usize,
    /// Times the interface found the ring full and kept frames back.
    pub ring_full: u64,
}

/// One interface's transmit ring.
#[derive(Debug)]
pub struct DeviceRing {
    slots: VecDeque<Slot>,
    capacity: usize,
    /// Recorded in the probes' `aux`: the interface's number.
    interface: u64,
    pub counters: DeviceCounters,
}

impl DeviceRing {
    /// A ring of `capacity` slots (at least one) for interface number
    /// `interface`.
    pub fn new(capacity: usize, interface: u64) -> Self {
        let capacity = capacity.max(1);
        Self {
            slots: VecDeque::with_capacity(capacity),
            capacity,
            interface,
            counters: DeviceCounters::default(),
        }
    }

    /// Whether a slot is free.
    pub fn has_room(&self) -> bool {
        self.slots.len() < self.capacity
    }

    /// Slots free.
    pub fn free(&self) -> usize {
        self.capacity.saturating_sub(self.slots.len())
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Frames the ring holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Counts that the interface found the ring full.
    pub fn note_full(&mut self) {
        self.counters.ring_full += 1;
    }

    /// The link accepted a frame of `len` bytes of `flow` at `now`; its
    /// last bit leaves at `complete` (`None`: at once). The enqueue is
    /// recorded at `stamp` (the end of the link's transmit, which it
    /// follows with nothing between).
    pub fn push(
        &mut self,
        now: Instant,
        len: usize,
        flow: Flow,
        complete: Option<Instant>,
        stamp: &mut probe::Stamp,
    ) {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        stamp.record(DEVICE_QUEUE_ENQUEUE, len, flow, self.interface);
        self.slots.push_back(Slot {
            len,
            flow,
            // A link never completes a frame before it was handed over.
            complete: complete.unwrap_or(now).max(now),
        });
        self.counters.high_water = self.counters.high_water.max(self.slots.len());
    }

    /// Frees the slots of every frame whose transmission has completed by
    /// `now`, in order, recording each completion.
    pub fn retire(&mut self, now: Instant) {
        // The completions are noticed together: one counter read.
        let mut stamp = probe::Stamp::new();
        while let Some(slot) = self.slots.front().copied() {
            if slot.complete > now {
                break;
            }
            self.slots.pop_front();
            stamp.record(DEVICE_QUEUE_DEQUEUE, slot.len, slot.flow, self.interface);
            self.counters.completed += 1;
        }
    }

    /// When the oldest frame's transmission completes, if the ring holds
    /// one.
    pub fn next_completion(&self) -> Option<Instant> {
        self.slots.front().map(|slot| slot.complete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn at(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    #[test]
    fn frames_leave_in_order_when_their_transmission_completes() {
        let mut ring = DeviceRing::new(4, 0);
        ring.push(
            at(0),
            1514,
            Flow::traced(1),
            Some(at(120)),
            &mut probe::Stamp::new(),
        );
        ring.push(
            at(0),
            1514,
            Flow::traced(1),
            Some(at(240)),
            &mut probe::Stamp::new(),
        );
        ring.push(at(1), 100, Flow::traced(2), None, &mut probe::Stamp::new());
        assert_eq!(ring.next_completion(), Some(at(120)));
        ring.retire(at(119));
        assert_eq!(ring.len(), 3);
        ring.retire(at(120));
        assert_eq!((ring.len(), ring.next_completion()), (2, Some(at(240))));
        // The instant frame waits behind the one before it: a ring is FIFO.
        ring.retire(at(239));
        assert_eq!(ring.len(), 2);
        ring.retire(at(240));
        assert!(ring.is_empty());
        assert_eq!(ring.counters.completed, 3);
        assert_eq!(ring.counters.high_water, 3);
    }

    #[test]
    fn a_full_ring_has_no_room_until_a_frame_completes() {
        let mut ring = DeviceRing::new(2, 0);
        ring.push(
            at(0),
            60,
            Flow::NONE,
            Some(at(10)),
            &mut probe::Stamp::new(),
        );
        assert!(ring.has_room());
        ring.push(
            at(0),
            60,
            Flow::NONE,
            Some(at(20)),
            &mut probe::Stamp::new(),
        );
        assert!(!ring.has_room());
        ring.retire(at(10));
        assert!(ring.has_room());
    }

    #[test]
    fn a_completion_before_the_handover_counts_from_the_handover() {
        let mut ring = DeviceRing::new(1, 0);
        ring.push(
            at(50),
            60,
            Flow::NONE,
            Some(at(10)),
            &mut probe::Stamp::new(),
        );
        assert_eq!(ring.next_completion(), Some(at(50)));
        assert_eq!(DeviceRing::new(0, 0).capacity, 1);
    }
}
