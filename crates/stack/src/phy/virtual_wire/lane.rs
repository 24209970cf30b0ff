//! One direction of a virtual wire: the rings its two ends share, the
//! sending end's half ([`Transmitter`]) and the receiving end's
//! ([`Receiver`]), with the reordering heap of a wire that reorders.

use super::*;

/// One direction of the wire: what its sending and receiving ends share.
/// The frames themselves, and the frame buffers going back, travel on
/// single-producer single-consumer rings whose halves the ends own
/// ([`Transmitter`], [`Receiver`]): each end is the only writer of its
/// half, so a frame costs no read-modify-write instruction on the way
/// (issue 22: the multi-producer queues' compare-and-swaps and the shared
/// in-flight counter were six per frame).
#[derive(Debug)]
pub(super) struct Lane {
    /// Frames the receiver of a wire that reorders has taken off the wire
    /// (received or dropped), ever. Only the receiver writes it; with its
    /// own count of frames pushed, the sender knows how many are in
    /// flight. An in-order wire's frames in flight are those on its ring,
    /// so neither end touches this per frame there.
    pub(super) taken: AtomicU64,
    /// Frames lost because the receive side was full, counted by the
    /// sender and reported by the receiver.
    pub(super) overrun: AtomicU64,
    /// Woken after every push: the receiving end's thread, if it sleeps
    /// when idle (see [`WireEnd::wake_on_arrival`]).
    pub(super) waker: OnceLock<Waker>,
    /// Lent super-frames' memory, given back by whichever thread drops
    /// the last reference to it (hence a queue any thread may push to),
    /// for the sender to reuse.
    pub(super) lent_back: ArrayQueue<Vec<u8>>,
    /// The receiving host's buffer layout, set by its first
    /// [`Link::receive_into`]: the sender lays frames out so from then on.
    pub(super) layout: OnceLock<Layout>,
}

/// How a receiving host's pool buffers hold a frame: `size` bytes, the
/// frame after `headroom` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) size: usize,
    pub(super) headroom: usize,
}

/// Lent super-frames come back here, for the sender to reuse.
impl Lender for Lane {
    fn give_back(&self, bytes: Vec<u8>) {
        let _ = self.lent_back.push(bytes);
    }
}

/// The sending end's share of one direction.
pub(super) struct SendingHalf {
    pub(super) lane: Arc<Lane>,
    pub(super) frames: rtrb::Producer<InFlight>,
    pub(super) recycled: rtrb::Consumer<Vec<u8>>,
}

/// The receiving end's share of one direction.
pub(super) struct ReceivingHalf {
    pub(super) lane: Arc<Lane>,
    pub(super) frames: rtrb::Consumer<InFlight>,
    pub(super) recycled: rtrb::Producer<Vec<u8>>,
}

/// One direction of a wire whose receive side holds `slots` frames, in
/// its two shares.
pub(super) fn direction(slots: usize) -> (SendingHalf, ReceivingHalf) {
    let lane = Arc::new(Lane::new(slots));
    let (mut frames_in, mut frames_out) = rtrb::RingBuffer::new(slots);
    let (mut recycled_in, mut recycled_out) =
        rtrb::RingBuffer::new(slots.clamp(1, RECYCLED_BUFFERS));
    touch_every_slot(&mut frames_in, &mut frames_out, || InFlight {
        bytes: Vec::new(),
        arrival: Instant::ZERO,
        gso: None,
        start: 0,
        len: 0,
    });
    touch_every_slot(&mut recycled_in, &mut recycled_out, Vec::new);
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

/// Writes every slot of an empty ring once and takes it back. A ring's
/// memory is only reserved when it is made, so its first lap would fault
/// a page in every 4 KiB (every 85 frames of 48 bytes): microseconds each,
/// inside whatever exchange the frame belonged to (issue 22: every 85th
/// 1-byte TCP exchange took twice the median until the ring had wrapped).
fn touch_every_slot<T>(
    tx: &mut rtrb::Producer<T>,
    rx: &mut rtrb::Consumer<T>,
    empty: impl Fn() -> T,
) {
    while tx.push(empty()).is_ok() {}
    while rx.pop().is_ok() {}
}

impl Lane {
    pub(super) fn new(capacity: usize) -> Self {
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
pub(super) struct InFlight {
    /// The frame is `start..start + len` of them: after the receiver's
    /// headroom if laid out for it, else all of them.
    pub(super) bytes: Vec<u8>,
    pub(super) arrival: Instant,
    /// How to cut it, for a super-frame: boxed, as it is rare and its
    /// copy of up to 64 KiB dwarfs the allocation.
    pub(super) gso: Option<Box<VnetHeaderRepr>>,
    pub(super) start: u32,
    pub(super) len: u32,
}

impl InFlight {
    pub(super) fn frame(&self) -> &[u8] {
        let start = self.start as usize;
        &self.bytes[start..start + self.len as usize]
    }
}

/// A frame the reordering heap holds. The sequence number (per direction,
/// counted as frames come off the ring, which is the sending order)
/// breaks ties in sending order; only a wire that reorders needs it.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) arrival: Instant,
    pub(super) sequence: u64,
    pub(super) frame: InFlight,
}

impl Held {
    pub(super) fn key(&self) -> (Instant, u64) {
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
pub(super) struct Transmitter {
    pub(super) lane: Arc<Lane>,
    /// Frames on their way to the receiver.
    pub(super) frames: rtrb::Producer<InFlight>,
    /// Frame buffers the receiver is done with, back for reuse: without
    /// them every frame is allocated on one thread and freed on another,
    /// and the allocator's cross-thread locking costs more than the copy.
    pub(super) recycled: rtrb::Consumer<Vec<u8>>,
    /// Frames pushed, ever: less the lane's `taken`, those in flight on a
    /// wire that reorders (an in-order wire's ring holds exactly those).
    pub(super) pushed: u64,
    /// The wire never holds a frame back: its receiver reads the ring in
    /// place, so the ring's own free slots are the receive side's room.
    pub(super) in_order: bool,
    pub(super) rng: Pcg64,
    /// When the frame being serialized leaves the sender: a rate-limited
    /// wire is a FIFO server.
    pub(super) busy_until: Instant,
    /// When each frame of the transmit ring has left, oldest first.
    pub(super) departures: VecDeque<Instant>,
    /// Frames were pushed since the receiver was last woken: `flush` wakes
    /// it (the doorbell), once per poll rather than inside every transmit.
    pub(super) wake_pending: bool,
    /// The configuration's [`WireConfig::impaired`] and
    /// [`WireConfig::max_frame_len`], read once (the configuration never
    /// changes) rather than recomputed per frame.
    pub(super) impaired: bool,
    pub(super) max_frame_len: usize,
    /// The receiver's buffer layout, once it has said (the lane's).
    pub(super) layout: Option<Layout>,
}

impl Transmitter {
    /// Room left on the receive side, whose bound is the ring's size
    /// (frames on their way, and arrived but not yet received). The
    /// receiver's count may lag (it is read, not shared in a lock), which
    /// only makes the room smaller: a frame is never pushed past the bound.
    pub(super) fn room(&self) -> usize {
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
    pub(super) fn has_room(&self) -> bool {
        if self.in_order {
            !self.frames.is_full()
        } else {
            self.room() > 0
        }
    }

    /// A buffer for the next frame: one the receiver gave back, else new.
    pub(super) fn buffer(&mut self) -> Vec<u8> {
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
    pub(super) fn gather(
        &mut self,
        parts: &[&[u8]],
        len: usize,
        ordinary: bool,
    ) -> (Vec<u8>, usize) {
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
    #[inline]
    pub(super) fn push(
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
pub(super) struct Receiver {
    pub(super) lane: Arc<Lane>,
    pub(super) incoming: Incoming,
    /// Frame buffers done with, back to the sender. A full ring just lets
    /// the buffer go.
    pub(super) recycled: rtrb::Producer<Vec<u8>>,
    /// Frames taken off a reordering wire, ever (published in the lane's
    /// `taken`; an in-order wire's sender counts the ring's free slots).
    pub(super) taken: u64,
    /// The super-frame `receive` is handing out cut, and its segmenter.
    pub(super) cutting: Option<(InFlight, Segmenter)>,
    /// The host's buffer layout was told to the sender (the lane's).
    pub(super) told_layout: bool,
}

/// Frames pushed and not yet received.
#[derive(Debug)]
pub(super) enum Incoming {
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
pub(super) struct Reordering {
    pub(super) frames: rtrb::Consumer<InFlight>,
    /// Never more than the bound, since its frames are still in flight.
    pub(super) heap: BinaryHeap<Reverse<Held>>,
    /// Frames taken off the ring, ever: the next one's sequence number.
    pub(super) drained: u64,
}

impl Reordering {
    pub(super) fn next_arrival(&mut self) -> Option<Instant> {
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
    pub(super) fn for_config(frames: rtrb::Consumer<InFlight>, config: &WireConfig) -> Self {
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

    /// Inline: the host asks before each frame it receives
    /// (`may_receive`), and an in-order wire answers with one look.
    #[inline]
    pub(super) fn next_arrival(&self) -> Option<Instant> {
        match self {
            Incoming::InOrder(frames) => frames.peek().ok().map(|frame| frame.arrival),
            // No other borrow exists: the only other use is `get_mut` in
            // `pop`, and a `WireEnd` is not `Sync`.
            Incoming::Reordering(reordering) => reordering.try_borrow_mut().ok()?.next_arrival(),
        }
    }

    /// The next frame that has arrived by `now`, taken off.
    #[inline(always)]
    pub(super) fn pop(&mut self, now: Instant) -> Option<InFlight> {
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
    pub(super) fn held(&self) -> usize {
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
    pub(super) fn next_arrived(&mut self, now: Instant) -> Option<InFlight> {
        let frame = self.incoming.pop(now)?;
        if let Incoming::Reordering(_) = self.incoming {
            self.taken += 1;
            self.lane.taken.store(self.taken, MemoryOrder::Release);
        }
        Some(frame)
    }

    /// Gives a frame's buffer back to the sender.
    #[inline]
    pub(super) fn recycle(&mut self, bytes: Vec<u8>) {
        let _ = self.recycled.push(bytes);
    }

    /// Asks for the headers of the next frame on an in-order wire to be
    /// brought into the cache while the host handles this one: exchanged,
    /// not copied, a frame is first read by link input, which would wait
    /// for memory the sender wrote a batch ago.
    #[inline(always)]
    pub(super) fn prefetch_next(&self) {
        if let Incoming::InOrder(frames) = &self.incoming {
            if let Ok(next) = frames.peek() {
                let headers = next.bytes.as_ptr().wrapping_add(next.start as usize);
                // Ethernet, IPv6 and TCP with timestamps: 86 bytes, in at
                // most three lines, each holding one of these.
                for at in [0, 43, 85] {
                    crate::buffer::prefetch(headers.wrapping_add(at));
                }
            }
        }
    }

    /// Tells the sender how the host's buffers hold a frame, once: the
    /// first host to receive into its buffers sets the layout.
    #[cold]
    pub(super) fn tell_layout(&mut self, buf: &RxBuffer<'_>) {
        let _ = self.lane.layout.set(Layout {
            size: buf.size(),
            headroom: buf.headroom(),
        });
        self.told_layout = true;
    }
}
