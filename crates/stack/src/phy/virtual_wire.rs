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

/// One direction of the wire: what its sending and receiving ends share.
/// The frames themselves, and the frame buffers going back, travel on
/// single-producer single-consumer rings whose halves the ends own
/// ([`Transmitter`], [`Receiver`]): each end is the only writer of its
/// half, so a frame costs no read-modify-write instruction on the way
/// (issue 22: the multi-producer queues' compare-and-swaps and the shared
/// in-flight counter were six per frame).
#[derive(Debug)]
struct Lane {
    /// Frames the receiver of a wire that reorders has taken off the wire
    /// (received or dropped), ever. Only the receiver writes it; with its
    /// own count of frames pushed, the sender knows how many are in
    /// flight. An in-order wire's frames in flight are those on its ring,
    /// so neither end touches this per frame there.
    taken: AtomicU64,
    /// Frames lost because the receive side was full, counted by the
    /// sender and reported by the receiver.
    overrun: AtomicU64,
    /// Woken after every push: the receiving end's thread, if it sleeps
    /// when idle (see [`WireEnd::wake_on_arrival`]).
    waker: OnceLock<Waker>,
    /// Lent super-frames' memory, given back by whichever thread drops
    /// the last reference to it (hence a queue any thread may push to),
    /// for the sender to reuse.
    lent_back: ArrayQueue<Vec<u8>>,
    /// The receiving host's buffer layout, set by its first
    /// [`Link::receive_into`]: the sender lays frames out so from then on.
    layout: OnceLock<Layout>,
}

/// How a receiving host's pool buffers hold a frame: `size` bytes, the
/// frame after `headroom` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    size: usize,
    headroom: usize,
}

/// Lent super-frames come back here, for the sender to reuse.
impl Lender for Lane {
    fn give_back(&self, bytes: Vec<u8>) {
        let _ = self.lent_back.push(bytes);
    }
}

/// The sending end's share of one direction.
struct SendingHalf {
    lane: Arc<Lane>,
    frames: rtrb::Producer<InFlight>,
    recycled: rtrb::Consumer<Vec<u8>>,
}

/// The receiving end's share of one direction.
struct ReceivingHalf {
    lane: Arc<Lane>,
    frames: rtrb::Consumer<InFlight>,
    recycled: rtrb::Producer<Vec<u8>>,
}

/// One direction of a wire whose receive side holds `slots` frames, in
/// its two shares.
fn direction(slots: usize) -> (SendingHalf, ReceivingHalf) {
    let lane = Arc::new(Lane::new(slots));
    let (frames_in, frames_out) = rtrb::RingBuffer::new(slots);
    let (recycled_in, recycled_out) = rtrb::RingBuffer::new(slots.clamp(1, RECYCLED_BUFFERS));
    (
        SendingHalf {
            lane: lane.clone(),
            frames: frames_in,
            recycled: recycled_out,
        },
        ReceivingHalf {
            lane,
            frames: frames_out,
            recycled: recycled_in,
        },
    )
}

impl Lane {
    fn new(capacity: usize) -> Self {
        Self {
            taken: AtomicU64::new(0),
            overrun: AtomicU64::new(0),
            waker: OnceLock::new(),
            lent_back: ArrayQueue::new(capacity.clamp(1, RECYCLED_BUFFERS)),
            layout: OnceLock::new(),
        }
    }
}

/// A frame on its way, stamped with when it arrives: 48 bytes, so that an
/// ordinary wire's ring entries stay small.
#[derive(Debug)]
struct InFlight {
    /// The frame is `start..start + len` of them: after the receiver's
    /// headroom if laid out for it, else all of them.
    bytes: Vec<u8>,
    arrival: Instant,
    /// How to cut it, for a super-frame: boxed, as it is rare and its
    /// copy of up to 64 KiB dwarfs the allocation.
    gso: Option<Box<VnetHeaderRepr>>,
    start: u32,
    len: u32,
}

impl InFlight {
    fn frame(&self) -> &[u8] {
        let start = self.start as usize;
        &self.bytes[start..start + self.len as usize]
    }
}

/// A frame the reordering heap holds. The sequence number (per direction,
/// counted as frames come off the ring, which is the sending order)
/// breaks ties in sending order; only a wire that reorders needs it.
#[derive(Debug)]
struct Held {
    arrival: Instant,
    sequence: u64,
    frame: InFlight,
}

impl Held {
    fn key(&self) -> (Instant, u64) {
        (self.arrival, self.sequence)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The sending half of an end.
#[derive(Debug)]
struct Transmitter {
    lane: Arc<Lane>,
    /// Frames on their way to the receiver.
    frames: rtrb::Producer<InFlight>,
    /// Frame buffers the receiver is done with, back for reuse: without
    /// them every frame is allocated on one thread and freed on another,
    /// and the allocator's cross-thread locking costs more than the copy.
    recycled: rtrb::Consumer<Vec<u8>>,
    /// Frames pushed, ever: less the lane's `taken`, those in flight on a
    /// wire that reorders (an in-order wire's ring holds exactly those).
    pushed: u64,
    /// The wire never holds a frame back: its receiver reads the ring in
    /// place, so the ring's own free slots are the receive side's room.
    in_order: bool,
    rng: Pcg64,
    /// When the frame being serialized leaves the sender: a rate-limited
    /// wire is a FIFO server.
    busy_until: Instant,
    /// When each frame of the transmit ring has left, oldest first.
    departures: VecDeque<Instant>,
    /// Frames were pushed since the receiver was last woken: `flush` wakes
    /// it (the doorbell), once per poll rather than inside every transmit.
    wake_pending: bool,
    /// The configuration's [`WireConfig::impaired`] and
    /// [`WireConfig::max_frame_len`], read once (the configuration never
    /// changes) rather than recomputed per frame.
    impaired: bool,
    max_frame_len: usize,
    /// The receiver's buffer layout, once it has said (the lane's).
    layout: Option<Layout>,
}

impl Transmitter {
    /// Room left on the receive side, whose bound is the ring's size
    /// (frames on their way, and arrived but not yet received). The
    /// receiver's count may lag (it is read, not shared in a lock), which
    /// only makes the room smaller: a frame is never pushed past the bound.
    fn room(&self) -> usize {
        if self.in_order {
            // The frames not yet received are those on the ring.
            return self.frames.slots();
        }
        let in_flight = self.pushed - self.lane.taken.load(MemoryOrder::Acquire);
        self.frames
            .buffer()
            .capacity()
            .saturating_sub(usize::try_from(in_flight).unwrap_or(usize::MAX))
    }

    /// Whether the receive side has room for one more frame: on an
    /// in-order wire, the ring's cached read position answers without
    /// reading the receiver's (shared) one until the ring looks full.
    fn has_room(&self) -> bool {
        if self.in_order {
            !self.frames.is_full()
        } else {
            self.room() > 0
        }
    }

    /// A buffer for the next frame: one the receiver gave back, else new.
    fn buffer(&mut self) -> Vec<u8> {
        self.recycled
            .pop()
            .ok()
            .or_else(|| self.lane.lent_back.pop())
            .unwrap_or_default()
    }

    /// The frame made of `parts` (`len` bytes), gathered into a buffer,
    /// and where in it the frame starts. An ordinary frame is laid out as
    /// the receiver's pool buffers hold one, if it has said how and the
    /// frame fits, so that it can take the memory as it is; a super-frame
    /// (which no pool buffer holds) starts at 0.
    #[inline(always)]
    fn gather(&mut self, parts: &[&[u8]], len: usize, ordinary: bool) -> (Vec<u8>, usize) {
        if self.layout.is_none() {
            self.layout = self.lane.layout.get().copied();
        }
        let mut bytes = self.buffer();
        match self.layout {
            Some(Layout { size, headroom }) if ordinary && len <= size.saturating_sub(headroom) => {
                if bytes.len() == size {
                    // Memory the receiver's pool gave back, or a frame's
                    // laid out so: written in place.
                    let mut at = headroom;
                    for part in parts {
                        bytes[at..at + part.len()].copy_from_slice(part);
                        at += part.len();
                    }
                } else {
                    // A new buffer (the ring of those given back was empty)
                    // or a super-frame's: made `size` long, at exactly that
                    // capacity if it has less, zeroing only around the
                    // frame.
                    bytes.clear();
                    bytes.reserve_exact(size);
                    bytes.resize(headroom, 0);
                    for part in parts {
                        bytes.extend_from_slice(part);
                    }
                    bytes.resize(size, 0);
                }
                (bytes, headroom)
            }
            _ => {
                bytes.clear();
                bytes.reserve(len);
                for part in parts {
                    bytes.extend_from_slice(part);
                }
                (bytes, 0)
            }
        }
    }

    /// Pushes one copy of the `len` bytes at `start` of `bytes`; false
    /// only if the ring is full, which the room check before it rules out.
    fn push(
        &mut self,
        arrival: Instant,
        (bytes, start): (Vec<u8>, usize),
        len: usize,
        gso: Option<Box<VnetHeaderRepr>>,
    ) -> bool {
        // Below 4 GiB: a frame is at most a super-frame, and a layout's
        // size is a pool buffer's (which `Pool::new` bounds).
        let frame = InFlight {
            bytes,
            arrival,
            gso,
            start: start as u32,
            len: len as u32,
        };
        if self.frames.push(frame).is_ok() {
            self.pushed += 1;
            // Woken after the push (at `flush`), so a receiver that looked
            // before it and is about to sleep is woken (or finds its park
            // token set).
            self.wake_pending = true;
            true
        } else {
            false
        }
    }
}

/// The receiving half of an end.
#[derive(Debug)]
struct Receiver {
    lane: Arc<Lane>,
    incoming: Incoming,
    /// Frame buffers done with, back to the sender. A full ring just lets
    /// the buffer go.
    recycled: rtrb::Producer<Vec<u8>>,
    /// Frames taken off a reordering wire, ever (published in the lane's
    /// `taken`; an in-order wire's sender counts the ring's free slots).
    taken: u64,
    /// The super-frame `receive` is handing out cut, and its segmenter.
    cutting: Option<(InFlight, Segmenter)>,
    /// The host's buffer layout was told to the sender (the lane's).
    told_layout: bool,
}

/// Frames pushed and not yet received.
#[derive(Debug)]
enum Incoming {
    /// A wire that never holds a frame back delivers in sending order
    /// (every frame's arrival is its departure plus the same delay, and
    /// departures only grow), so it reads the ring in place.
    InOrder(rtrb::Consumer<InFlight>),
    /// A wire that holds frames back keeps what it has taken off the ring
    /// in a heap, earliest arrival first, so frames held back are
    /// overtaken. A `RefCell` because `next_arrival(&self)` drains the
    /// ring into the heap.
    Reordering(RefCell<Reordering>),
}

/// The receiving half of a wire that reorders.
#[derive(Debug)]
struct Reordering {
    frames: rtrb::Consumer<InFlight>,
    /// Never more than the bound, since its frames are still in flight.
    heap: BinaryHeap<Reverse<Held>>,
    /// Frames taken off the ring, ever: the next one's sequence number.
    drained: u64,
}

impl Reordering {
    fn next_arrival(&mut self) -> Option<Instant> {
        while let Ok(frame) = self.frames.pop() {
            let sequence = self.drained;
            self.drained += 1;
            self.heap.push(Reverse(Held {
                arrival: frame.arrival,
                sequence,
                frame,
            }));
        }
        self.heap.peek().map(|held| held.0.arrival)
    }
}

impl Incoming {
    fn for_config(frames: rtrb::Consumer<InFlight>, config: &WireConfig) -> Self {
        if config.reorder > 0.0 {
            Incoming::Reordering(RefCell::new(Reordering {
                frames,
                heap: BinaryHeap::new(),
                drained: 0,
            }))
        } else {
            Incoming::InOrder(frames)
        }
    }

    fn next_arrival(&self) -> Option<Instant> {
        match self {
            Incoming::InOrder(frames) => frames.peek().ok().map(|frame| frame.arrival),
            // No other borrow exists: the only other use is `get_mut` in
            // `pop`, and a `WireEnd` is not `Sync`.
            Incoming::Reordering(reordering) => reordering.try_borrow_mut().ok()?.next_arrival(),
        }
    }

    /// The next frame that has arrived by `now`, taken off.
    #[inline(always)]
    fn pop(&mut self, now: Instant) -> Option<InFlight> {
        match self {
            Incoming::InOrder(frames) => {
                if frames.peek().ok()?.arrival > now {
                    return None;
                }
                frames.pop().ok()
            }
            Incoming::Reordering(reordering) => {
                let reordering = reordering.get_mut();
                if reordering.next_arrival()? > now {
                    return None;
                }
                reordering.heap.pop().map(|Reverse(held)| held.frame)
            }
        }
    }

    /// Frames taken off the ring and not yet received.
    #[cfg(test)]
    fn held(&self) -> usize {
        match self {
            Incoming::InOrder(_) => 0,
            Incoming::Reordering(reordering) => reordering.borrow().heap.len(),
        }
    }
}

impl Receiver {
    /// The next frame that has arrived by `now`, taken off the wire (it no
    /// longer counts against the bound).
    #[inline(always)]
    fn next_arrived(&mut self, now: Instant) -> Option<InFlight> {
        let frame = self.incoming.pop(now)?;
        if let Incoming::Reordering(_) = self.incoming {
            self.taken += 1;
            self.lane.taken.store(self.taken, MemoryOrder::Release);
        }
        Some(frame)
    }

    /// Gives a frame's buffer back to the sender.
    fn recycle(&mut self, bytes: Vec<u8>) {
        let _ = self.recycled.push(bytes);
    }

    /// Asks for the headers of the next frame on an in-order wire to be
    /// brought into the cache while the host handles this one: exchanged,
    /// not copied, a frame is first read by link input, which would wait
    /// for memory the sender wrote a batch ago.
    #[inline(always)]
    fn prefetch_next(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Incoming::InOrder(frames) = &self.incoming {
            if let Ok(next) = frames.peek() {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                let headers = next
                    .bytes
                    .as_ptr()
                    .wrapping_add(next.start as usize)
                    .cast::<i8>();
                // Ethernet, IPv6 and TCP with timestamps: 86 bytes, in at
                // most three lines, each holding one of these.
                // SAFETY: SSE, which has the prefetch instruction, is part
                // of x86_64's baseline; a prefetch reads nothing into the
                // program and cannot fault, whatever the address.
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(headers);
                    _mm_prefetch::<_MM_HINT_T0>(headers.wrapping_add(43));
                    _mm_prefetch::<_MM_HINT_T0>(headers.wrapping_add(85));
                }
            }
        }
    }

    /// Tells the sender how the host's buffers hold a frame, once: the
    /// first host to receive into its buffers sets the layout.
    #[cold]
    fn tell_layout(&mut self, buf: &RxBuffer<'_>) {
        let _ = self.lane.layout.set(Layout {
            size: buf.size(),
            headroom: buf.headroom(),
        });
        self.told_layout = true;
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
    /// the transmit ring, its fate and the receive side's bound.
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

/// What happens to one frame. All five draws are made for every frame
/// sent, whatever the probabilities, so changing one impairment does not
/// reshuffle the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Fate {
    lost: bool,
    duplicated: bool,
    held_back: bool,
    /// Index of the bit to flip, if the frame is corrupted.
    corrupt_bit: Option<u64>,
}

impl Fate {
    fn draw(rng: &mut Pcg64, config: &WireConfig, len: usize) -> Self {
        let lost = chance(rng.next_u64(), config.loss);
        let duplicated = chance(rng.next_u64(), config.duplicate);
        let held_back = chance(rng.next_u64(), config.reorder);
        let corrupt = chance(rng.next_u64(), config.corrupt);
        let bits = (len as u64).saturating_mul(8);
        let bit = below(rng.next_u64(), bits);
        Self {
            lost,
            duplicated,
            held_back,
            // An empty frame has no bit to flip.
            corrupt_bit: (corrupt && bits > 0).then_some(bit),
        }
    }
}

/// True with probability `probability`, from one uniform 64-bit draw.
fn chance(draw: u64, probability: f64) -> bool {
    // The top 53 bits make a uniform value in [0, 1) with every f64 step.
    let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
    unit < probability
}

/// A value in `0..bound` (0 if `bound` is 0), by scaling a uniform draw.
fn below(draw: u64, bound: u64) -> u64 {
    ((u128::from(draw) * u128::from(bound)) >> 64) as u64
}

fn flip_bit(bytes: &mut [u8], bit: u64) {
    let Ok(index) = usize::try_from(bit / 8) else {
        return;
    };
    if let Some(byte) = bytes.get_mut(index) {
        *byte ^= 1 << (bit % 8);
    }
}

/// Time to clock `len` bytes onto a link of `rate` bits per second,
/// rounded up to the nanosecond.
fn serialization_time(len: usize, rate_bits_per_s: Option<u64>) -> Duration {
    let Some(rate) = rate_bits_per_s.filter(|&rate| rate > 0) else {
        return Duration::ZERO;
    };
    let bit_nanos = (len as u128) * 8 * 1_000_000_000;
    let nanos = bit_nanos.div_ceil(u128::from(rate));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The PRNG of one direction: PCG-64 with a 256-bit seed expanded by
/// SplitMix64 from the wire's seed and the direction, so the two
/// directions draw unrelated sequences.
fn direction_rng(seed: u64, direction: u64) -> Pcg64 {
    let mut expand = SplitMix64::new(seed ^ direction.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_exact_mut(8) {
        chunk.copy_from_slice(&expand.next_u64().to_le_bytes());
    }
    Pcg64::from_seed(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_rounds_up_to_the_nanosecond() {
        assert_eq!(serialization_time(1500, None), Duration::ZERO);
        // 1500 bytes at 1 Gbit/s: 12 µs.
        assert_eq!(
            serialization_time(1500, Some(1_000_000_000)),
            Duration::from_micros(12)
        );
        // 1 byte at 3 bit/s: 8/3 s, rounded up.
        assert_eq!(
            serialization_time(1, Some(3)),
            Duration::from_nanos(2_666_666_667)
        );
        assert_eq!(
            serialization_time(usize::MAX, Some(1)),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn chance_is_never_for_zero_and_always_for_one() {
        for draw in [0, 1, u64::MAX / 2, u64::MAX] {
            assert!(!chance(draw, 0.0));
            assert!(chance(draw, 1.0));
        }
        assert!(chance(0, 0.5) && !chance(u64::MAX, 0.5));
    }

    #[test]
    fn below_stays_in_range() {
        assert_eq!(below(u64::MAX, 0), 0);
        assert_eq!(below(u64::MAX, 8), 7);
        assert_eq!(below(0, 8), 0);
    }

    #[test]
    fn directions_and_seeds_draw_different_sequences() {
        let first = |seed, direction| direction_rng(seed, direction).next_u64();
        assert_eq!(first(7, 0), first(7, 0));
        assert_ne!(first(7, 0), first(7, 1));
        assert_ne!(first(7, 0), first(8, 0));
    }

    #[test]
    fn nonsense_configurations_are_refused() {
        let ok = WireConfig::default();
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            WireConfig {
                mtu: 0,
                ..ok.clone()
            },
            WireConfig {
                rate_bits_per_s: Some(0),
                ..ok.clone()
            },
            WireConfig {
                loss: 1.5,
                ..ok.clone()
            },
            WireConfig {
                duplicate: -0.1,
                ..ok.clone()
            },
            WireConfig {
                corrupt: f64::NAN,
                ..ok.clone()
            },
            WireConfig {
                reorder: 0.5,
                ..ok.clone()
            },
            WireConfig {
                queue_frames: 0,
                ..ok.clone()
            },
            WireConfig {
                queue_frames: MAX_QUEUE_FRAMES + 1,
                ..ok.clone()
            },
        ];
        for config in cases {
            assert!(config.validate().is_err(), "{config:?}");
            assert!(VirtualWire::pair(config).is_err());
        }
    }

    #[test]
    fn receive_side_holds_no_more_than_the_bound() {
        // In order (read off the ring in place) and reordering (drained
        // into the receiver's heap): either way the frames count against
        // the bound until received.
        for reorder in [0.0, 0.5] {
            let config = WireConfig {
                queue_frames: 3,
                reorder,
                reorder_delay: Duration::from_micros(1),
                ..WireConfig::default()
            };
            let (mut a, mut b) = VirtualWire::pair(config).unwrap();
            // Unlimited rate: every frame leaves at once, so the transmit
            // ring never fills and the receive side's bound (twice the
            // ring) holds.
            for _ in 0..6 {
                a.transmit(Instant::ZERO, &[&[1, 2, 3]]).unwrap();
            }
            assert!(b.next_arrival().is_some());
            let held = if reorder > 0.0 { 6 } else { 0 };
            assert_eq!(b.rx.incoming.held(), held, "reorder {reorder}");
            // The next one is lost at the receiver.
            assert_eq!(a.transmit(Instant::ZERO, &[&[1]]), Ok(()));
            assert_eq!(b.stats().dropped_rx_overrun, 1);
            assert_eq!(a.stats().dropped_queue_full, 0);
            // A frame received makes room for one more.
            let mut buf = [0u8; 64];
            let late = Instant::from_nanos(1_000_000_000);
            assert_eq!(b.receive(late, &mut buf), Some(3));
            assert_eq!(a.transmit(Instant::ZERO, &[&[2]]), Ok(()));
            assert_eq!(b.stats().dropped_rx_overrun, 1, "reorder {reorder}");
            assert_eq!(a.transmit(Instant::ZERO, &[&[3]]), Ok(()));
            assert_eq!(b.stats().dropped_rx_overrun, 2, "reorder {reorder}");
        }
    }

    /// Frame buffers on their way back to `end`'s far end: the ring the
    /// receiver recycles into, and lent super-frames given back.
    fn buffers_going_back(end: &WireEnd) -> usize {
        let ring = &end.rx.recycled;
        ring.buffer().capacity() - ring.slots() + end.rx.lane.lent_back.len()
    }

    #[test]
    fn super_frames_cross_whole_only_on_a_wire_made_for_them() {
        let gso = WireConfig {
            carries_gso: true,
            ..WireConfig::default()
        };
        for (config, whole) in [
            (gso.clone(), true),
            (WireConfig::default(), false),
            (
                WireConfig {
                    rate_bits_per_s: Some(1_000_000_000),
                    ..gso.clone()
                },
                false,
            ),
            (
                WireConfig {
                    corrupt: 0.001,
                    ..gso.clone()
                },
                false,
            ),
        ] {
            let (mut a, _b) = VirtualWire::pair(config).unwrap();
            assert_eq!((a.takes_gso(), a.carries_gso()), (whole, whole));
            if !whole {
                let header = VnetHeaderRepr::default();
                assert_eq!(
                    a.transmit_gso(Instant::ZERO, &header, &[&[0; 3000]]),
                    Err(LinkError::Unsupported)
                );
            }
        }
        let (mut a, mut b) = VirtualWire::pair(gso).unwrap();
        let header = VnetHeaderRepr {
            needs_csum: true,
            gso: crate::phy::vnet::Gso::TcpV6,
            gso_size: 1428,
            ..VnetHeaderRepr::default()
        };
        let frame: Vec<u8> = (0..60_000u32).map(|i| i as u8).collect();
        a.transmit_gso(Instant::ZERO, &header, &[&frame[..100], &frame[100..]])
            .unwrap();
        a.transmit(Instant::ZERO, &[&[7; 60]]).unwrap();
        let too_long = GSO_FRAME_MAX + 1;
        assert!(a
            .transmit_gso(Instant::ZERO, &header, &[&vec![0; too_long]])
            .is_err());
        assert_eq!(a.stats().tx_frames, 2, "one frame each");
        let mut got = Vec::new();
        let mut lent = Vec::new();
        let recycled_before = buffers_going_back(&b);
        while b.receive_whole(Instant::ZERO, &mut |frame, gso| {
            got.push((frame.bytes().to_vec(), gso.copied()));
            if let WholeFrame::Lent(l) = frame {
                lent.push(l);
            }
        }) {}
        assert_eq!(got, [(frame, Some(header)), (vec![7; 60], None)]);
        // The super-frame's memory was lent, not copied, and comes back
        // to the lane only when the host lets it go; the ordinary frame's
        // went back at once.
        assert_eq!(lent.len(), 1, "only the super-frame is lent");
        assert_eq!(buffers_going_back(&b), recycled_before + 1);
        let pool = crate::buffer::Pool::new(crate::buffer::PoolConfig::default()).unwrap();
        let buffer = pool
            .lend(lent.pop().unwrap(), probe::Flow::NONE)
            .ok()
            .unwrap();
        assert_eq!(buffer.len(), 60_000);
        assert_eq!(buffers_going_back(&b), recycled_before + 1);
        drop(buffer);
        assert_eq!(buffers_going_back(&b), recycled_before + 2);
        assert_eq!(b.stats().rx_frames, 2);
        // `receive` cannot take a super-frame: it is dropped and counted.
        a.transmit_gso(Instant::ZERO, &header, &[&[0; 3000]])
            .unwrap();
        assert_eq!(b.receive(Instant::ZERO, &mut [0; 1514]), None);
        assert_eq!(b.stats().dropped_rx_too_long, 1);
    }

    /// Where the next frame on its way to `end` lies in memory.
    fn next_frame_address(end: &WireEnd) -> *const u8 {
        let Incoming::InOrder(frames) = &end.rx.incoming else {
            panic!("an in-order wire");
        };
        frames.peek().expect("a frame on its way").frame().as_ptr()
    }

    /// The packet `end` receives into a buffer of `pool`, if any.
    fn receive_packet(end: &mut WireEnd, pool: &Pool) -> Option<crate::buffer::Packet> {
        crate::buffer::Packet::receive_into(pool, probe::Flow::NONE, |buf| {
            end.receive_into(Instant::ZERO, buf)
        })
        .unwrap()
    }

    use crate::buffer::{Pool, PoolConfig};

    #[test]
    fn a_received_frame_is_the_memory_it_crossed_in() {
        let (mut a, mut b) = VirtualWire::pair(WireConfig::default()).unwrap();
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let headroom = pool.config().headroom;
        // Sent before the receiver said how its buffers hold a frame: copied.
        a.transmit(Instant::ZERO, &[&[1; 14], &[2; 60]]).unwrap();
        let sent = next_frame_address(&b);
        let early = receive_packet(&mut b, &pool).unwrap();
        let bytes = early.parts().next().unwrap();
        assert_ne!(bytes.as_ptr(), sent, "no layout yet: copied");
        assert_eq!((bytes.len(), early.headroom()), (74, headroom));
        assert_eq!((bytes[13], bytes[14]), (1, 2));
        // Now laid out as the pool's buffers are, and exchanged: the
        // packet's bytes are where the sender wrote them.
        for len in [60, 1514, 1500 + 14 - 1] {
            let frame: Vec<u8> = (0..len).map(|i| i as u8).collect();
            a.transmit(Instant::ZERO, &[&frame[..14], &frame[14..]])
                .unwrap();
            let sent = next_frame_address(&b);
            let packet = receive_packet(&mut b, &pool).unwrap();
            let bytes = packet.parts().next().unwrap();
            assert_eq!(bytes.as_ptr(), sent, "a {len}-byte frame was copied");
            assert_eq!(bytes, &frame[..]);
            assert_eq!(packet.headroom(), headroom, "headroom kept");
        }
        let stats = b.stats();
        assert_eq!(
            (stats.rx_frames, stats.rx_bytes),
            (4, 74 + 60 + 1514 + 1513)
        );
        assert_eq!(b.received_at(), Some(Instant::ZERO));
        // A host whose buffers are laid out otherwise gets a copy.
        let other = Pool::new(PoolConfig {
            buffer_size: 4096,
            headroom: 128,
            buffers: 4,
        })
        .unwrap();
        a.transmit(Instant::ZERO, &[&[9; 100]]).unwrap();
        let sent = next_frame_address(&b);
        let packet = receive_packet(&mut b, &other).unwrap();
        let bytes = packet.parts().next().unwrap();
        assert_ne!(bytes.as_ptr(), sent, "another layout: copied");
        assert_eq!((bytes, packet.headroom()), (&[9; 100][..], 128));
        // A wrapper that only forwards `receive` (as a capture does) gets
        // `Link`'s default: a copy.
        a.transmit(Instant::ZERO, &[&[5; 100]]).unwrap();
        let sent = next_frame_address(&b);
        let packet = crate::buffer::Packet::receive_into(&pool, probe::Flow::NONE, |buf| {
            Copying(&mut b).receive_into(Instant::ZERO, buf)
        })
        .unwrap()
        .unwrap();
        let bytes = packet.parts().next().unwrap();
        assert_ne!(bytes.as_ptr(), sent, "the default copies");
        assert_eq!((bytes, packet.headroom()), (&[5; 100][..], headroom));
        assert!(receive_packet(&mut b, &pool).is_none());
    }

    /// A wrapper forwarding `receive` only.
    struct Copying<'a>(&'a mut WireEnd);

    impl Link for Copying<'_> {
        fn medium(&self) -> Medium {
            self.0.medium()
        }
        fn mtu(&self) -> usize {
            self.0.mtu()
        }
        fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
            self.0.transmit(now, parts)
        }
        fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
            self.0.receive(now, buf)
        }
        fn transmit_complete_at(&self) -> Option<Instant> {
            self.0.transmit_complete_at()
        }
        fn transmit_ring(&self) -> Option<usize> {
            self.0.transmit_ring()
        }
        fn next_arrival(&self) -> Option<Instant> {
            self.0.next_arrival()
        }
        fn received_at(&self) -> Option<Instant> {
            self.0.received_at()
        }
        fn stats(&self) -> LinkStats {
            self.0.stats()
        }
    }

    #[test]
    fn exchanged_memory_stays_bounded() {
        // Reordering too: its frames are laid out and exchanged alike.
        for reorder in [0.0, 0.3] {
            let config = WireConfig {
                queue_frames: 4,
                reorder,
                reorder_delay: Duration::from_nanos(10),
                duplicate: reorder,
                ..WireConfig::default()
            };
            let (mut a, mut b) = VirtualWire::pair(config).unwrap();
            let config = PoolConfig {
                buffers: 8,
                ..PoolConfig::default()
            };
            let pool = Pool::new(config).unwrap();
            let memories = |pool: &Pool| {
                let all: Vec<_> = (0..8)
                    .map(|_| pool.alloc(probe::Flow::NONE).unwrap())
                    .collect();
                let mut memories: Vec<_> = all.iter().map(|buffer| buffer.as_ptr()).collect();
                memories.sort();
                memories
            };
            let before = memories(&pool);
            let mut held = VecDeque::new();
            let mut received = 0;
            for i in 0..2000usize {
                let now = Instant::from_nanos(i as u64 * 10);
                a.transmit(now, &[&vec![i as u8; 60 + i % 1455]]).unwrap();
                // Packets are held a while, as a host holds some.
                while let Some(packet) =
                    crate::buffer::Packet::receive_into(&pool, probe::Flow::NONE, |buf| {
                        b.receive_into(now + Duration::from_nanos(20), buf)
                    })
                    .unwrap()
                {
                    received += 1;
                    held.push_back(packet);
                    if held.len() > 5 {
                        held.pop_front();
                    }
                }
            }
            drop(held);
            assert!(received > 1900, "reorder {reorder}: {received} received");
            // The pool has its own number of buffers, each of its size.
            assert_eq!((pool.allocated(), pool.in_use()), (8, 0));
            let mut all: Vec<_> = (0..8)
                .map(|_| pool.alloc(probe::Flow::NONE).unwrap())
                .collect();
            for buffer in &mut all {
                let memory = buffer.memory_mut().unwrap();
                assert_eq!((memory.len(), memory.capacity()), (2304, 2304));
            }
            drop(all);
            assert_ne!(
                memories(&pool),
                before,
                "reorder {reorder}: nothing exchanged"
            );
            // The wire holds what it did: a ring's worth going back at most.
            assert!(buffers_going_back(&b) <= 8);
            assert_eq!(b.next_arrival(), None);
        }
    }

    #[test]
    fn the_transmit_ring_holds_the_frames_not_yet_sent() {
        let config = WireConfig {
            queue_frames: 2,
            // 976 bytes hold an Ethernet wire for 1000 octets (with its
            // FCS, preamble and gap): 8 µs.
            rate_bits_per_s: Some(1_000_000_000),
            ..WireConfig::default()
        };
        let (mut a, _b) = VirtualWire::pair(config).unwrap();
        let frame = [0u8; 976];
        a.transmit(Instant::ZERO, &[&frame]).unwrap();
        a.transmit(Instant::ZERO, &[&frame]).unwrap();
        assert_eq!(a.transmit_complete_at(), Some(Instant::from_nanos(16_000)));
        assert_eq!(
            a.transmit(Instant::from_nanos(7_999), &[&frame]),
            Err(LinkError::QueueFull)
        );
        assert_eq!(a.stats().dropped_queue_full, 1);
        // The first frame has left: its slot is free.
        a.transmit(Instant::from_nanos(8_000), &[&frame]).unwrap();
        assert_eq!(a.transmit_complete_at(), Some(Instant::from_nanos(24_000)));
    }
}
