//! The sender's record of data in flight that went out in segments
//! smaller than the MSS of their time, so that when the path MTU drops it
//! can tell what the path still carried: RFC 1191 §6.5 resends only what
//! a router dropped, and Linux's `tcp_simple_retransmit` marks lost only
//! the segments "larger than the new MSS".
//!
//! Every full-sized segment is larger than any lowered MSS, so only the
//! small ones need remembering; a bulk transfer sends few (the end of a
//! write, the last piece of a resend). The record is bounded: past
//! `capacity` entries the oldest is forgotten, and its bytes are then
//! treated as too big — resent, never lost.
//!
//! Sizes count what a segment takes of the MSS: its payload plus the
//! options other than timestamps (SACK blocks), since the MSS already
//! allows for the timestamps option (RFC 6691 §2).

use std::collections::VecDeque;

use super::seq::Seq;

/// Entries a connection keeps at most.
pub const DEFAULT_CAPACITY: usize = 64;

/// Bytes `start..end`, whose latest transmission was one segment of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Small {
    start: Seq,
    end: Seq,
    size: usize,
}

/// See the module documentation.
#[derive(Debug)]
pub struct SmallSegments {
    /// In the order sent; disjoint (a later transmission of the same
    /// bytes replaces what was recorded of them).
    entries: VecDeque<Small>,
    capacity: usize,
}

impl SmallSegments {
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// A data segment `start..end` taking `size` of the MSS went out (new
    /// or resent), when the MSS was `mss`: it is the latest transmission
    /// of its bytes, and is recorded if smaller than the MSS.
    #[inline]
    pub fn on_send(&mut self, start: Seq, end: Seq, size: usize, mss: usize) {
        // A full-sized segment while nothing is recorded (bulk data)
        // changes nothing: checked here, without a call.
        if self.entries.is_empty() && (size >= mss || start >= end) {
            return;
        }
        self.record(start, end, size, mss);
    }

    #[inline(never)]
    fn record(&mut self, start: Seq, end: Seq, size: usize, mss: usize) {
        self.forget_range(start, end);
        if size >= mss || start >= end || self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back(Small { start, end, size });
    }

    /// SND.UNA reached `una`: what lies below it is no longer in flight.
    pub fn acknowledge(&mut self, una: Seq) {
        // Nearly always empty (bulk data is all full-sized): skip setting
        // up the walk, which costs more than the check on every ACK.
        if self.entries.is_empty() {
            return;
        }
        self.entries.retain_mut(|e| {
            e.start = e.start.max(una);
            e.start < e.end
        });
    }

    /// Forgets everything (a timeout resends it all at the current MSS).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Where the data at `seq` stops being carried by a recorded segment
    /// of at most `mss` (one that fits a path of that MSS), if one holds it.
    pub fn fitting_end(&self, seq: Seq, mss: usize) -> Option<Seq> {
        self.entries
            .iter()
            .find(|e| e.size <= mss && e.start <= seq && seq < e.end)
            .map(|e| e.end)
    }

    /// The first byte after `seq` that a recorded segment of at most `mss`
    /// holds, if any.
    pub fn next_fitting_after(&self, seq: Seq, mss: usize) -> Option<Seq> {
        self.entries
            .iter()
            .filter(|e| e.size <= mss && e.start > seq)
            .map(|e| e.start)
            .min()
    }

    /// Entries recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops what is recorded of `start..end`, keeping the parts of an
    /// entry outside it.
    fn forget_range(&mut self, start: Seq, end: Seq) {
        let overlapping = |e: &Small| e.start < end && start < e.end;
        // Empty for bulk data (all full-sized): skip building the walk.
        if self.entries.is_empty() || !self.entries.iter().any(overlapping) {
            return;
        }
        let mut kept = VecDeque::with_capacity(self.capacity);
        for e in self.entries.drain(..) {
            if !overlapping(&e) {
                kept.push_back(e);
                continue;
            }
            if e.start < start {
                kept.push_back(Small { end: start, ..e });
            }
            if end < e.end {
                kept.push_back(Small { start: end, ..e });
            }
        }
        // Splitting one entry in two may pass the bound by one.
        while kept.len() > self.capacity {
            kept.pop_front();
        }
        self.entries = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Near the wrap, so the examples cross 2^32.
    fn at(offset: usize) -> Seq {
        Seq(u32::MAX - 1000) + offset
    }

    #[test]
    fn only_small_segments_are_recorded_and_found_by_size() {
        let mut log = SmallSegments::new(8);
        log.on_send(at(0), at(1400), 1400, 1400);
        log.on_send(at(1400), at(2000), 600, 1400);
        log.on_send(at(2000), at(3300), 1300, 1400);
        assert_eq!(log.len(), 2);
        assert_eq!(log.fitting_end(at(0), 1200), None, "full-sized");
        assert_eq!(log.fitting_end(at(1400), 1200), Some(at(2000)));
        assert_eq!(log.fitting_end(at(1999), 1200), Some(at(2000)));
        assert_eq!(log.fitting_end(at(2000), 1200), None, "1300 > 1200");
        assert_eq!(log.fitting_end(at(2000), 1300), Some(at(3300)));
        assert_eq!(log.next_fitting_after(at(0), 1200), Some(at(1400)));
        assert_eq!(log.next_fitting_after(at(1400), 1200), None);
        assert_eq!(log.next_fitting_after(at(1400), 1300), Some(at(2000)));
    }

    #[test]
    fn a_later_transmission_replaces_what_it_covers() {
        let mut log = SmallSegments::new(8);
        log.on_send(at(0), at(1000), 1000, 1400);
        // Resent in the middle at full size: the ends keep their record.
        log.on_send(at(200), at(600), 1400, 1400);
        assert_eq!(log.fitting_end(at(100), 1000), Some(at(200)));
        assert_eq!(log.fitting_end(at(300), 1400), None);
        assert_eq!(log.fitting_end(at(700), 1000), Some(at(1000)));
        // Resent small: recorded with its own size.
        log.on_send(at(200), at(600), 400, 1400);
        assert_eq!(log.fitting_end(at(300), 400), Some(at(600)));
    }

    #[test]
    fn acknowledged_data_and_the_oldest_beyond_capacity_are_forgotten() {
        let mut log = SmallSegments::new(2);
        for i in 0..3 {
            log.on_send(at(i * 100), at(i * 100 + 50), 50, 1400);
        }
        assert_eq!(log.len(), 2);
        assert_eq!(log.fitting_end(at(0), 1400), None, "the oldest went");
        log.acknowledge(at(120));
        assert_eq!(log.fitting_end(at(110), 1400), None);
        assert_eq!(log.fitting_end(at(120), 1400), Some(at(150)));
        log.acknowledge(at(300));
        assert!(log.is_empty());
        let mut none = SmallSegments::new(0);
        none.on_send(at(0), at(10), 10, 1400);
        assert!(none.is_empty());
    }
}
