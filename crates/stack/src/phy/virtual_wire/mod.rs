//! The virtual wire: two ends joined by a pair of lock-free bounded queues,
//! one per direction, with optional rate, propagation delay, MTU, loss,
//! duplication, reordering and corruption, all driven by a seed (DESIGN.md,
//! "Links").
//!
//! Time is whatever the caller says it is. Transmit stamps each frame with
//! the instant it arrives at the far end (from `now`, the rate and the
//! delay); receive hands out only frames that have arrived by its `now`.
//! The simulator drives both ends from one virtual clock; the threaded
//! runner puts the ends on two threads, each reading the real clock.
//!
//! Determinism: the sending end decides the fate of each of its frames with
//! its own PRNG, seeded from the wire's seed and the direction, so the same
//! configuration and the same calls give the same frames, packet for packet,
//! even with the ends on different threads.
//!
//! Each end has two rings of `queue_frames` frames, as a NIC does. The
//! transmit ring holds the frames handed over whose last bit has not yet
//! left (a rate-limited wire is a FIFO server): a transmit into a full one
//! fails with [`LinkError::QueueFull`], the device's tail drop, and the
//! interface's device stage keeps the ring from overfilling by watching
//! [`Link::transmit_complete_at`]. The receive side holds what is on its
//! way and what has arrived but not been received, at most `queue_frames`
//! more: a frame beyond that is lost at the receiver and counted there in
//! `dropped_rx_overrun`, as a NIC whose receive ring its host did not
//! drain. So memory is bounded at `2 · queue_frames` frames a direction,
//! plus super-frames lent to the receiving host, which its pool limits.
//!
//! A frame is copied once, into the wire (the sender's gather). A host that
//! receives with [`Link::receive_into`] tells the sender its buffers'
//! layout (size and headroom), and the sender lays each ordinary frame out
//! so, in memory of exactly that size: the receiver then exchanges that
//! memory with its empty pool buffer (page flipping) rather than copying
//! the frame out, and the pool's old memory goes back to the sender for a
//! later frame, as a copied frame's does. Memory is exchanged one for one
//! at the same size, so neither the wire's bound nor the pool's moves.
//!
//! A wire made to carry GSO ([`WireConfig::carries_gso`]) that is
//! unimpaired and unlimited takes a TCP super-frame of segmentation
//! offload whole, as a veth pair passes a GSO `sk_buff` to its peer
//! (`veth_xmit` forwards the buffer; nothing is cut or checksummed on
//! the way), and hands it whole to a receiver that asks for it
//! ([`Link::receive_whole`]). It is one frame of the bound. A wire that
//! serialises at a rate or impairs frames carries only wire-sized
//! frames: its timing and its fates are per frame.

use crate::random::SplitMix64;
use core::cmp::{Ordering, Reverse};
use core::time::Duration;
use std::cell::RefCell;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering as MemoryOrder};
use std::sync::{Arc, OnceLock};
use std::task::Waker;

use crossbeam_queue::ArrayQueue;
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::vnet::{Segmenter, TooLong, VnetHeaderRepr};
use super::{Link, LinkError, LinkStats, Medium, RxBuffer, WholeFrame};
use crate::buffer::{Lender, Lent};
use crate::time::Instant;

mod fate;
mod lane;
#[cfg(test)]
mod tests;

use fate::*;
use lane::*;

/// Largest `queue_frames` accepted: each direction's queue allocates its
/// slots up front, so the bound keeps a typo from allocating gigabytes.
pub const MAX_QUEUE_FRAMES: usize = 1 << 20;

/// Largest super-frame a wire that carries GSO takes: the 64 KiB IP
/// packet of segmentation offload behind its Ethernet header.
pub const GSO_FRAME_MAX: usize = crate::iface::offload::GSO_MAX_SIZE + wire::ethernet::HEADER_LEN;

/// Frame buffers kept for reuse per direction at most.
const RECYCLED_BUFFERS: usize = 256;

/// How a virtual wire behaves, the same in both directions.
#[derive(Debug, Clone, PartialEq)]
pub struct WireConfig {
    /// Framing of its frames.
    pub medium: Medium,
    /// Largest IP packet carried; frames may add `medium.header_len()`.
    pub mtu: usize,
    /// Serialization rate; `None` sends a frame in no time.
    pub rate_bits_per_s: Option<u64>,
    /// Propagation delay, added after serialization.
    pub delay: Duration,
    /// Probability that a frame is lost on the wire.
    pub loss: f64,
    /// Probability that a frame is delivered twice (both copies alike,
    /// corruption included, arriving together).
    pub duplicate: f64,
    /// Probability that a frame is held back by `reorder_delay`, so that
    /// frames sent after it overtake it.
    pub reorder: f64,
    /// How long a reordered frame is held back.
    pub reorder_delay: Duration,
    /// Probability that one random bit of a frame is flipped.
    pub corrupt: f64,
    /// Frames in flight per direction (see the module documentation).
    pub queue_frames: usize,
    /// Seed of both directions' impairments.
    pub seed: u64,
    /// Carries TCP super-frames whole when unimpaired and unlimited (see
    /// the module documentation): what a topology asks for when both ends
    /// receive with GRO.
    pub carries_gso: bool,
}

impl Default for WireConfig {
    /// An unimpaired Ethernet wire: MTU 1500, unlimited rate, no delay.
    fn default() -> Self {
        Self {
            medium: Medium::Ethernet,
            mtu: 1500,
            rate_bits_per_s: None,
            delay: Duration::ZERO,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::ZERO,
            corrupt: 0.0,
            queue_frames: 1024,
            seed: 0,
            carries_gso: false,
        }
    }
}

impl WireConfig {
    /// Whether any frame may be lost, duplicated, held back or corrupted.
    fn impaired(&self) -> bool {
        self.loss > 0.0 || self.duplicate > 0.0 || self.reorder > 0.0 || self.corrupt > 0.0
    }

    /// Refuses settings that mean nothing, rather than guessing.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.mtu == 0 {
            return Err(ConfigError::ZeroMtu);
        }
        if self.rate_bits_per_s == Some(0) {
            return Err(ConfigError::ZeroRate);
        }
        for (name, value) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::Probability { name, value });
            }
        }
        if self.reorder > 0.0 && self.reorder_delay.is_zero() {
            return Err(ConfigError::ReorderWithoutDelay);
        }
        check_queue_frames(self.queue_frames)
    }

    /// Largest frame the wire carries: the MTU plus the link header.
    pub fn max_frame_len(&self) -> usize {
        self.mtu.saturating_add(self.medium.header_len())
    }

    /// Whether super-frames cross whole: asked for, on an Ethernet wire
    /// that neither serialises at a rate nor impairs frames.
    pub fn gso_whole(&self) -> bool {
        self.carries_gso
            && self.medium == Medium::Ethernet
            && self.rate_bits_per_s.is_none()
            && !self.impaired()
    }
}

/// Why a link configuration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("the MTU must be at least 1 byte")]
    ZeroMtu,
    #[error("a rate of 0 bit/s carries nothing (an unlimited rate is `None`)")]
    ZeroRate,
    #[error("{name} is a probability, within [0, 1], not {value}")]
    Probability { name: &'static str, value: f64 },
    #[error("reorder is set but reorder_delay, by which frames are held back, is zero")]
    ReorderWithoutDelay,
    #[error("queue_frames must be within 1..={max}, not {value}")]
    QueueFrames { value: usize, max: usize },
}

pub(super) fn check_queue_frames(value: usize) -> Result<(), ConfigError> {
    if (1..=MAX_QUEUE_FRAMES).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::QueueFrames {
            value,
            max: MAX_QUEUE_FRAMES,
        })
    }
}

/// Makes virtual wires.
pub enum VirtualWire {}

impl VirtualWire {
    /// A wire with two ends; what one end transmits, the other receives.
    pub fn pair(config: WireConfig) -> Result<(WireEnd, WireEnd), ConfigError> {
        config.validate()?;
        // The transmit ring's frames and the receive side's.
        let slots = config.queue_frames.saturating_mul(2);
        let (a_sends, b_receives) = direction(slots);
        let (b_sends, a_receives) = direction(slots);
        let a = WireEnd::new(config.clone(), 0, a_sends, a_receives);
        let b = WireEnd::new(config, 1, b_sends, b_receives);
        Ok((a, b))
    }
}

/// One end of a virtual wire. `Send`, so the two ends may live on
/// different threads.
#[derive(Debug)]
pub struct WireEnd {
    config: WireConfig,
    tx: Transmitter,
    rx: Receiver,
    stats: LinkStats,
    /// When the frame `receive` last returned arrived.
    received_at: Option<Instant>,
}

impl WireEnd {
    fn new(
        config: WireConfig,
        direction: u64,
        sends: SendingHalf,
        receives: ReceivingHalf,
    ) -> Self {
        let rng = direction_rng(config.seed, direction);
        let incoming = Incoming::for_config(receives.frames, &config);
        Self {
            tx: Transmitter {
                lane: sends.lane,
                frames: sends.frames,
                recycled: sends.recycled,
                pushed: 0,
                in_order: config.reorder == 0.0,
                rng,
                busy_until: Instant::ZERO,
                departures: VecDeque::new(),
                wake_pending: false,
                impaired: config.impaired(),
                max_frame_len: config.max_frame_len(),
                layout: None,
            },
            rx: Receiver {
                lane: receives.lane,
                incoming,
                recycled: receives.recycled,
                taken: 0,
                cutting: None,
                told_layout: false,
            },
            config,
            stats: LinkStats::default(),
            received_at: None,
        }
    }

    /// The configuration the wire was made with.
    pub fn config(&self) -> &WireConfig {
        &self.config
    }

    /// Has the far end wake `waker` whenever it pushes a frame towards
    /// this end (even one that arrives later: the woken thread then waits
    /// for [`next_arrival`](Link::next_arrival)). Set once; later calls
    /// are ignored.
    pub fn wake_on_arrival(&self, waker: Waker) {
        let _ = self.rx.lane.waker.set(waker);
    }

    /// Puts the frame made of `parts` (`len` bytes) on its way: through
    /// the transmit ring, its fate and the receive side's bound. Inline in
    /// `transmit`, which calls it for every frame (issue 22).
    #[inline]
    fn send(
        &mut self,
        now: Instant,
        parts: &[&[u8]],
        len: usize,
        gso: Option<Box<VnetHeaderRepr>>,
    ) -> Result<(), LinkError> {
        let departures = &mut self.tx.departures;
        if now >= self.tx.busy_until {
            // Every frame has left (none leaves after `busy_until`): the
            // usual case of an unlimited wire, and it keeps the ring's
            // one entry at its start.
            departures.clear();
        } else {
            while departures.front().is_some_and(|&left| left <= now) {
                departures.pop_front();
            }
        }
        if departures.len() >= self.config.queue_frames {
            self.stats.dropped_queue_full += 1;
            return Err(LinkError::QueueFull);
        }

        let start = now.max(self.tx.busy_until);
        // An unlimited wire clocks a frame out in no time.
        let sent = match self.config.rate_bits_per_s {
            Some(rate) => {
                start + serialization_time(self.config.medium.wire_octets(len), Some(rate))
            }
            None => start,
        };
        self.tx.busy_until = sent;
        departures.push_back(sent);
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len as u64;
        let arrival = if self.config.delay.is_zero() {
            sent
        } else {
            sent + self.config.delay
        };
        if self.tx.impaired {
            return self.send_impaired(parts, len, gso, arrival);
        }
        // An unimpaired wire has no fate to draw: nothing depends on the
        // draws, so skipping them changes no run.
        if !self.tx.has_room() {
            // The frame left; the receiver, whose side is full, loses it.
            self.tx.lane.overrun.fetch_add(1, MemoryOrder::Relaxed);
            return Ok(());
        }
        let gathered = self.tx.gather(parts, len, gso.is_none());
        if !self.tx.push(arrival, gathered, len, gso) {
            // Unreachable: the room check above reserved the slot.
            self.tx.lane.overrun.fetch_add(1, MemoryOrder::Relaxed);
        }
        Ok(())
    }

    /// The rest of [`send`](Self::send) on a wire that impairs frames:
    /// the frame's fate drawn and done, to arrive at `arrival` if nothing
    /// holds it back.
    fn send_impaired(
        &mut self,
        parts: &[&[u8]],
        len: usize,
        gso: Option<Box<VnetHeaderRepr>>,
        mut arrival: Instant,
    ) -> Result<(), LinkError> {
        let fate = Fate::draw(&mut self.tx.rng, &self.config, len);
        // A lost frame still held the wire for its serialization time.
        if fate.lost {
            self.stats.dropped_loss += 1;
            return Ok(());
        }
        // The frame left; the receiver, whose side is full, loses it.
        if !self.tx.has_room() {
            self.tx.lane.overrun.fetch_add(1, MemoryOrder::Relaxed);
            return Ok(());
        }
        let (mut bytes, start) = self.tx.gather(parts, len, gso.is_none());
        if let Some(bit) = fate.corrupt_bit {
            flip_bit(&mut bytes[start..start + len], bit);
            self.stats.corrupted += 1;
        }
        if fate.held_back {
            arrival += self.config.reorder_delay;
            self.stats.reordered += 1;
        }
        // A duplicate needs a second slot; without one the frame goes once.
        let duplicate = fate.duplicated && self.tx.room() >= 2;
        if duplicate {
            // A clone is exactly as long as its length, so a laid-out
            // frame's copy is exchanged as the frame is.
            let copy = bytes.clone();
            if self.tx.push(arrival, (copy, start), len, gso.clone()) {
                self.stats.duplicated += 1;
            }
        }
        if !self.tx.push(arrival, (bytes, start), len, gso) {
            // Unreachable: the room check above reserved the slot.
            self.tx.lane.overrun.fetch_add(1, MemoryOrder::Relaxed);
        }
        Ok(())
    }
}

impl WireEnd {
    /// Starts handing out the super-frame `frame` cut, for `receive`.
    fn cut(&mut self, frame: InFlight) {
        let Some(header) = &frame.gso else {
            return;
        };
        match Segmenter::new(&frame.bytes, header) {
            Ok(cut) => self.rx.cutting = Some((frame, cut)),
            Err(_) => {
                self.stats.dropped_rx_too_long += 1;
                self.rx.recycle(frame.bytes);
            }
        }
    }
}

impl Link for WireEnd {
    fn medium(&self) -> Medium {
        self.config.medium
    }

    fn mtu(&self) -> usize {
        self.config.mtu
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let len = super::frame_len(parts, self.tx.max_frame_len, &mut self.stats)?;
        self.send(now, parts, len, None)
    }

    fn takes_gso(&self) -> bool {
        self.config.gso_whole()
    }

    /// The super-frame crosses as one frame, its partial checksum left for
    /// the receiver (a veth's `CHECKSUM_PARTIAL`).
    fn transmit_gso(
        &mut self,
        now: Instant,
        header: &VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        if !self.config.gso_whole() {
            self.stats.dropped_unsupported += 1;
            return Err(LinkError::Unsupported);
        }
        let max = GSO_FRAME_MAX.max(self.config.max_frame_len());
        let len = super::frame_len(parts, max, &mut self.stats)?;
        self.send(now, parts, len, Some(Box::new(*header)))
    }

    fn carries_gso(&self) -> bool {
        self.config.gso_whole()
    }

    fn receive_whole(
        &mut self,
        now: Instant,
        take: &mut dyn FnMut(WholeFrame<'_>, Option<&VnetHeaderRepr>),
    ) -> bool {
        if self.rx.cutting.is_some() {
            // The receiver turned GRO on while `receive` was cutting.
            let max = self.config.max_frame_len();
            return super::receive_one_cut(self, now, max, take);
        }
        let Some(frame) = self.rx.next_arrived(now) else {
            return false;
        };
        self.stats.rx_frames += 1;
        self.stats.rx_bytes += u64::from(frame.len);
        self.received_at = Some(frame.arrival);
        match frame.gso {
            // A super-frame's memory is lent to the host, and comes back
            // to the sender through the lane when the packet is dropped.
            Some(header) => {
                let lender: Arc<dyn Lender> = self.rx.lane.clone();
                take(
                    WholeFrame::Lent(Lent::new(frame.bytes, lender)),
                    Some(&*header),
                );
            }
            None => {
                take(WholeFrame::Borrowed(frame.frame()), None);
                self.rx.recycle(frame.bytes);
            }
        }
        true
    }

    /// Hands out wire-sized frames only: a super-frame is cut into the
    /// segments that would have crossed the wire, each checksummed, as the
    /// kernel's software GSO does for a device without the offload (what
    /// a receiver without GRO gets; one with it asks for
    /// [`receive_whole`](Link::receive_whole)).
    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        loop {
            if let Some((frame, cut)) = &mut self.rx.cutting {
                match cut.next_into(&frame.bytes, buf) {
                    Some(Ok(len)) => {
                        self.stats.rx_frames += 1;
                        self.stats.rx_bytes += len as u64;
                        self.received_at = Some(frame.arrival);
                        return Some(len);
                    }
                    Some(Err(TooLong)) => self.stats.dropped_rx_too_long += 1,
                    None => {
                        if let Some((frame, _)) = self.rx.cutting.take() {
                            self.rx.recycle(frame.bytes);
                        }
                    }
                }
                continue;
            }
            let frame = self.rx.next_arrived(now)?;
            if frame.gso.is_some() {
                self.cut(frame);
                continue;
            }
            let delivered = super::deliver(frame.frame(), buf, &mut self.stats);
            // A full recycling queue just lets the buffer go.
            self.rx.recycle(frame.bytes);
            if let Some(len) = delivered {
                self.received_at = Some(frame.arrival);
                return Some(len);
            }
        }
    }

    /// As [`receive`](Link::receive), but an ordinary frame laid out as
    /// `buf` holds one (see the module documentation) is exchanged for
    /// `buf`'s memory rather than copied into it; the host's old memory
    /// goes back to the sender as a copied frame's buffer would.
    fn receive_into(&mut self, now: Instant, buf: &mut RxBuffer<'_>) -> Option<usize> {
        if !self.rx.told_layout {
            self.rx.tell_layout(buf);
        }
        loop {
            if self.rx.cutting.is_some() {
                // A super-frame's segments are cut, hence copied.
                return self.receive(now, buf.room());
            }
            let mut frame = self.rx.next_arrived(now)?;
            if frame.gso.is_some() {
                self.cut(frame);
                continue;
            }
            let len = frame.len as usize;
            if frame.start as usize == buf.headroom() && buf.exchange(&mut frame.bytes) {
                // The frame fits: it was laid out in memory of the buffer's
                // size, after its headroom.
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += len as u64;
                self.received_at = Some(frame.arrival);
                self.rx.recycle(frame.bytes);
                self.rx.prefetch_next();
                return Some(len);
            }
            // Sent before the layout was known, or to another layout.
            let delivered = super::deliver(frame.frame(), buf.room(), &mut self.stats);
            self.rx.recycle(frame.bytes);
            if let Some(len) = delivered {
                self.received_at = Some(frame.arrival);
                return Some(len);
            }
        }
    }

    /// Wakes the receiving end's thread if frames went its way: a waking
    /// syscall costs microseconds, which inside `transmit` would land in
    /// the stack's `link.transmit` span. The host flushes after each
    /// poll's frames; the wake is the runner's own work, recorded as
    /// `instrumentation` so the analysis takes it out of the window.
    fn flush(&mut self, _now: Instant) {
        if !std::mem::take(&mut self.tx.wake_pending) {
            return;
        }
        if let Some(waker) = self.tx.lane.waker.get() {
            // No flow: like a capture's copy, it records whenever any
            // flow is traced.
            let _span = probe::span(
                crate::probes::RUNNER_WAKE_ENTER,
                crate::probes::RUNNER_WAKE_EXIT,
                0,
                probe::Flow::traced(0),
                0,
            );
            waker.wake_by_ref();
        }
    }

    fn transmit_ring(&self) -> Option<usize> {
        Some(self.config.queue_frames)
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        // The wire is a FIFO server: the last frame accepted leaves when
        // the wire is next free (a lost frame held it as long).
        (self.stats.tx_frames > 0).then_some(self.tx.busy_until)
    }

    fn received_at(&self) -> Option<Instant> {
        self.received_at
    }

    fn next_arrival(&self) -> Option<Instant> {
        if let Some((frame, _)) = &self.rx.cutting {
            return Some(frame.arrival);
        }
        self.rx.incoming.next_arrival()
    }

    fn may_receive(&self, now: Instant) -> bool {
        self.next_arrival().is_some_and(|arrival| arrival <= now)
    }

    fn stats(&self) -> LinkStats {
        LinkStats {
            dropped_rx_overrun: self.rx.lane.overrun.load(MemoryOrder::Relaxed),
            ..self.stats
        }
    }
}
