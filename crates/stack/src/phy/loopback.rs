//! Loopback: what an interface transmits comes straight back to it, in
//! order, at the instant it was sent. It carries bare IP packets
//! ([`Medium::Ip`]), as Linux's `lo` does, through a bounded FIFO that drops
//! at the tail when full.

use std::collections::VecDeque;

use super::virtual_wire::{check_queue_frames, ConfigError};
use super::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// A frame waiting to be received, and when it was sent (its arrival).
#[derive(Debug)]
struct Queued {
    sent_at: Instant,
    bytes: Vec<u8>,
}

/// A loopback interface's link.
#[derive(Debug)]
pub struct Loopback {
    mtu: usize,
    queue_frames: usize,
    queue: VecDeque<Queued>,
    stats: LinkStats,
}

impl Loopback {
    /// Linux's loopback MTU.
    pub const DEFAULT_MTU: usize = 65535;
    pub const DEFAULT_QUEUE_FRAMES: usize = 1024;

    /// A loopback with the default MTU and queue bound.
    pub fn new() -> Self {
        Self {
            mtu: Self::DEFAULT_MTU,
            queue_frames: Self::DEFAULT_QUEUE_FRAMES,
            queue: VecDeque::new(),
            stats: LinkStats::default(),
        }
    }

    /// A loopback carrying packets of up to `mtu` bytes, holding at most
    /// `queue_frames` of them.
    pub fn with_limits(mtu: usize, queue_frames: usize) -> Result<Self, ConfigError> {
        if mtu == 0 {
            return Err(ConfigError::ZeroMtu);
        }
        check_queue_frames(queue_frames)?;
        Ok(Self {
            mtu,
            queue_frames,
            ..Self::new()
        })
    }

    /// Frames sent and not yet received.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

impl Default for Loopback {
    fn default() -> Self {
        Self::new()
    }
}

impl Link for Loopback {
    fn medium(&self) -> Medium {
        Medium::Ip
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let len = super::frame_len(parts, self.mtu, &mut self.stats)?;
        if self.queue.len() >= self.queue_frames {
            self.stats.dropped_queue_full += 1;
            return Err(LinkError::QueueFull);
        }
        let mut bytes = Vec::with_capacity(len);
        for part in parts {
            bytes.extend_from_slice(part);
        }
        self.queue.push_back(Queued {
            sent_at: now,
            bytes,
        });
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len as u64;
        Ok(())
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while self.queue.front().is_some_and(|next| next.sent_at <= now) {
            let frame = self.queue.pop_front()?;
            if let Some(len) = super::deliver(&frame.bytes, buf, &mut self.stats) {
                return Some(len);
            }
        }
        None
    }

    fn transmit_ring(&self) -> Option<usize> {
        Some(self.queue_frames)
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        None
    }

    /// At once: a frame is there as soon as it was sent.
    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.queue.front().map(|next| next.sent_at)
    }

    fn may_receive(&self, now: Instant) -> bool {
        self.next_arrival().is_some_and(|arrival| arrival <= now)
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_validated() {
        assert_eq!(
            Loopback::with_limits(0, 8).unwrap_err(),
            ConfigError::ZeroMtu
        );
        assert!(Loopback::with_limits(1500, 0).is_err());
        let lo = Loopback::with_limits(1500, 8).unwrap();
        assert_eq!((lo.mtu(), lo.medium()), (1500, Medium::Ip));
    }

    #[test]
    fn frames_come_back_in_order_and_not_before_they_were_sent() {
        let mut lo = Loopback::new();
        let t = Instant::from_nanos(10);
        lo.transmit(t, &[b"ab", b"c"]).unwrap();
        lo.transmit(t, &[b"d"]).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(lo.receive(Instant::from_nanos(9), &mut buf), None);
        assert_eq!(lo.receive(t, &mut buf), Some(3));
        assert_eq!(&buf[..3], b"abc");
        assert_eq!(lo.receive(t, &mut buf), Some(1));
        assert_eq!(lo.receive(t, &mut buf), None);
    }
}
