//! A host's pool of preallocated, fixed-size buffers.
//!
//! Every buffer is allocated when the pool is made, so the data path does
//! not ask the system allocator for packet memory. A flood touches many
//! of them, and touched memory stays resident; once the pressure is over
//! the owner may [`release`](Pool::release) free buffers beyond a number
//! to keep (and hand the memory back to the system with
//! [`return_free_memory`](super::return_free_memory)). Released buffers
//! are made again on demand, up to the configured number: the bound on
//! memory never changes.
//!
//! A [`Buffer`] is a counted reference, shared by the packets and segments
//! that hold its bytes. Its count lives in the same allocation as the
//! buffer's bookkeeping, and that allocation goes back to the pool with the
//! memory: after the pool is made, sending or receiving a packet calls the
//! system allocator for neither its bytes nor its reference count
//! (issue 22: `Rc::new` per packet was about 5 % of the data path), but
//! for a lent super-frame's count (below).
//!
//! A pool buffer points back at its pool for its whole life, free or in
//! use, so neither handing it out nor freeing it touches that reference
//! (issue 22: setting and clearing it was about 60 instructions per
//! packet). The free list therefore holds buffers that hold the pool: the
//! last [`Pool`] handle dropped empties the free list, which breaks that
//! cycle, and buffers freed after it go to the allocator, not to a list
//! nobody can take from.
//!
//! A link may also exchange an empty buffer's memory for memory of the
//! same length and capacity that already holds a received frame (a
//! virtual wire: see [`RxBuffer`](crate::phy::RxBuffer)): the pool then
//! holds other memory than it made, but as many buffers, each as big.
//!
//! A buffer may also be [lent](Lent) by a link: the memory a GSO
//! super-frame arrived in (a virtual wire's frame, an AF_PACKET receive
//! slot) becomes the received packet's storage, and goes back to the
//! link, not to the pool, when the last reference is dropped (as a veth
//! hands its peer the `sk_buff` itself). The pool accounts for it: lent
//! memory held at once never exceeds the pool's own bound in bytes
//! ([`Pool::lend`] refuses beyond it, and the host copies instead), and
//! counts as in use for the host's memory pressure. Each lent frame
//! costs one small allocation for its reference count.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::ops::{Deref, Range};
use std::rc::Rc;
use std::sync::Arc;

use probe::Flow;

use crate::probes::{BUFFER_ALLOC_ENTER, BUFFER_ALLOC_EXIT, BUFFER_FREE_ENTER, BUFFER_FREE_EXIT};

/// Sizes of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Bytes per buffer, headroom included.
    pub buffer_size: usize,
    /// Bytes at the front of a packet's head buffer reserved for headers:
    /// the largest link header of any interface plus IP and transport
    /// headers with options.
    pub headroom: usize,
    /// Buffers in the pool at most; all are allocated up front.
    pub buffers: usize,
}

impl PoolConfig {
    /// A pool for links of up to `mtu` whose buffers each hold a whole
    /// frame: the default sizes (8192 buffers) for Ethernet's 1500, bigger
    /// and fewer buffers (about 64 MiB in all, at least 1024) for jumbo
    /// frames. For hosts on real links, where bursts come in batches.
    pub fn for_mtu(mtu: usize) -> Self {
        let default = Self::default();
        let needed = default.headroom + mtu + wire::ethernet::TAGGED_HEADER_LEN;
        if needed <= default.buffer_size {
            return Self {
                buffers: 8192,
                ..default
            };
        }
        // Rounded up to 256 bytes.
        let buffer_size = needed.div_ceil(256) * 256;
        Self {
            buffer_size,
            buffers: (64 * 1024 * 1024 / buffer_size).max(1024),
            ..default
        }
    }
}

impl Default for PoolConfig {
    /// Room for a 1500-byte MTU frame plus headroom, 4096 buffers (9 MiB).
    fn default() -> Self {
        Self {
            buffer_size: 2304,
            headroom: 256,
            buffers: 4096,
        }
    }
}

/// A pool configuration that cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolConfigError {
    #[error("headroom of {headroom} bytes leaves no room in a {buffer_size}-byte buffer")]
    NoRoomAfterHeadroom { headroom: usize, buffer_size: usize },
    #[error("a pool needs at least one buffer")]
    NoBuffers,
    #[error("buffers of {buffer_size} bytes are too big: packets address them with 32 bits")]
    BufferTooBig { buffer_size: usize },
}

/// Counters of a pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub allocated: u64,
    pub freed: u64,
    /// Allocations refused because every buffer was in use.
    pub exhausted: u64,
    /// Most buffers in use at once.
    pub high_water: usize,
    /// Free buffers given back by [`Pool::release`].
    pub released: u64,
    /// Buffers made again after a release, on demand.
    pub regrown: u64,
    /// Frames whose lent memory became a buffer ([`Pool::lend`]).
    pub lent: u64,
    /// Lent frames refused because the lent memory held would have
    /// exceeded the pool's bound.
    pub lend_refused: u64,
    /// Bytes of lent memory held now, and at most at once.
    pub lent_bytes: usize,
    pub lent_high_water: usize,
}

struct Shared {
    config: PoolConfig,
    /// Free buffers, each referenced by nothing else. Each points back at
    /// this pool: the last `Pool` handle's drop empties the list, so the
    /// cycle does not keep the memory alive.
    free: RefCell<Vec<Rc<Slot>>>,
    /// `Pool` handles alive. Once none is, nothing can allocate again: a
    /// freed buffer is dropped instead of listed.
    handles: Cell<usize>,
    /// Buffers that exist, in use or free: `config.buffers` until a
    /// release.
    allocated: Cell<usize>,
    /// Buffers handed out, ever. The per-packet counters are kept apart
    /// from `stats` so the data path bumps one integer instead of copying
    /// the whole record in and out; `freed` is derived (every buffer
    /// handed out is in use or was freed).
    handed_out: Cell<u64>,
    high_water: Cell<usize>,
    /// Bytes of lent memory held by buffers now.
    lent_bytes: Cell<usize>,
    /// The rare counters: `exhausted`, `released`, `regrown`, and the
    /// lent ones.
    stats: Cell<PoolStats>,
}

/// A host's buffer pool. Cloning shares it; a host and everything it owns
/// live on one thread, so it is not `Send`.
pub struct Pool {
    shared: Rc<Shared>,
}

impl Clone for Pool {
    fn clone(&self) -> Self {
        let handles = &self.shared.handles;
        handles.set(handles.get() + 1);
        Pool {
            shared: Rc::clone(&self.shared),
        }
    }
}

impl Drop for Pool {
    /// The last handle frees the free buffers, which point back at the
    /// pool; buffers still in use keep it until they are dropped.
    fn drop(&mut self) {
        let handles = &self.shared.handles;
        handles.set(handles.get() - 1);
        if handles.get() == 0 {
            let free = std::mem::take(&mut *self.shared.free.borrow_mut());
            drop(free);
        }
    }
}

impl Pool {
    /// Allocates every buffer now, so the data path never asks the system
    /// allocator for packet memory.
    pub fn new(config: PoolConfig) -> Result<Self, PoolConfigError> {
        if config.buffers == 0 {
            return Err(PoolConfigError::NoBuffers);
        }
        if u32::try_from(config.buffer_size).is_err() {
            return Err(PoolConfigError::BufferTooBig {
                buffer_size: config.buffer_size,
            });
        }
        if config.headroom >= config.buffer_size {
            return Err(PoolConfigError::NoRoomAfterHeadroom {
                headroom: config.headroom,
                buffer_size: config.buffer_size,
            });
        }
        let shared = Rc::new(Shared {
            config,
            free: RefCell::new(Vec::with_capacity(config.buffers)),
            handles: Cell::new(1),
            allocated: Cell::new(config.buffers),
            handed_out: Cell::new(0),
            high_water: Cell::new(0),
            lent_bytes: Cell::new(0),
            stats: Cell::new(PoolStats::default()),
        });
        shared
            .free
            .borrow_mut()
            .extend((0..config.buffers).map(|_| Slot::fresh(&shared)));
        Ok(Self { shared })
    }

    pub fn config(&self) -> PoolConfig {
        self.shared.config
    }

    pub fn stats(&self) -> PoolStats {
        let handed_out = self.shared.handed_out.get();
        PoolStats {
            allocated: handed_out,
            freed: handed_out - self.in_use_here() as u64,
            high_water: self.shared.high_water.get(),
            lent_bytes: self.shared.lent_bytes.get(),
            ..self.shared.stats.get()
        }
    }

    /// Buffers currently handed out, with lent memory held counted in
    /// buffers' worth (rounded up): what the host's memory pressure reads.
    pub fn in_use(&self) -> usize {
        let size = self.shared.config.buffer_size.max(1);
        self.in_use_here() + self.shared.lent_bytes.get().div_ceil(size)
    }

    /// Buffers of the pool's own handed out.
    fn in_use_here(&self) -> usize {
        self.shared.allocated.get() - self.shared.free.borrow().len()
    }

    /// Makes the memory a link lent a buffer for `flow`, without copying,
    /// unless the lent memory held would then exceed the pool's bound in
    /// bytes (or the memory is of 4 GiB, more than a packet addresses):
    /// then it is handed back (counted as `lend_refused`) for the
    /// caller to copy into pool buffers, whose exhaustion is counted.
    pub fn lend(&self, mut lent: Lent, flow: Flow) -> Result<Buffer, Lent> {
        let shared = &self.shared;
        let size = lent.bytes.capacity();
        let bound = shared.config.buffers * shared.config.buffer_size;
        let held = shared.lent_bytes.get() + size;
        let mut stats = shared.stats.get();
        // Packets address a buffer with 32 bits (`Packet`'s offsets).
        if held > bound || u32::try_from(size).is_err() {
            stats.lend_refused += 1;
            shared.stats.set(stats);
            return Err(lent);
        }
        // A `Lent` always has its lender until it is consumed: the field is
        // an `Option` only so that `Drop` (and this, which consumes the
        // `Lent`) can move it out, as safe code cannot move a field out
        // of a type with `Drop`. So `None` cannot happen; were it to, the
        // `Lent` is handed back, as one over the bound is.
        debug_assert!(lent.lender.is_some(), "a Lent without its lender");
        let Some(lender) = lent.lender.take() else {
            return Err(lent);
        };
        shared.lent_bytes.set(held);
        stats.lent += 1;
        stats.lent_high_water = stats.lent_high_water.max(held);
        shared.stats.set(stats);
        Ok(Buffer {
            slot: ManuallyDrop::new(Rc::new(Slot {
                data: std::mem::take(&mut lent.bytes),
                home: Home::Lender {
                    lender,
                    pool: Rc::clone(shared),
                },
                flow: Cell::new(flow),
            })),
        })
    }

    /// Buffers that exist, handed out or free.
    pub fn allocated(&self) -> usize {
        self.shared.allocated.get()
    }

    /// Drops free buffers until no more than `keep` exist (those in use
    /// stay), and the free list's own spare room; returns how many were
    /// dropped. The most recently freed go first: they are the ones a
    /// burst touched, while the oldest may never have been written (and
    /// so hold no resident memory).
    pub fn release(&self, keep: usize) -> usize {
        let mut free = self.shared.free.borrow_mut();
        let allocated = self.shared.allocated.get();
        let excess = allocated.saturating_sub(keep).min(free.len());
        let remaining = free.len() - excess;
        free.truncate(remaining);
        free.shrink_to_fit();
        self.shared.allocated.set(allocated - excess);
        let mut stats = self.shared.stats.get();
        stats.released += excess as u64;
        self.shared.stats.set(stats);
        excess
    }

    /// Takes a buffer for `flow` (whose trace flag gates the probes), or
    /// `None` when every buffer is in use (counted as `exhausted`). The
    /// buffer is unshared: [`Buffer::get_mut`] gives its bytes.
    ///
    /// The span's guard is made only for an allocation that is recorded,
    /// out of line: with the gate closed this is the check and the
    /// allocation alone, inlined (as the compiler does on its own with
    /// probes compiled out). Out of line, with its guard, `alloc` cost the
    /// TCP bench about 100 instructions per frame (callgrind, issue 22).
    #[inline(always)]
    pub fn alloc(&self, flow: Flow) -> Option<Buffer> {
        if probe::would_record(BUFFER_ALLOC_ENTER, flow) {
            return self.alloc_recorded(flow);
        }
        self.take(flow)
    }

    /// [`Pool::alloc`] inside its probe's span.
    #[inline(never)]
    fn alloc_recorded(&self, flow: Flow) -> Option<Buffer> {
        let _span = probe::span(BUFFER_ALLOC_ENTER, BUFFER_ALLOC_EXIT, 0, flow, 0);
        self.take(flow)
    }

    /// [`Pool::alloc`]'s work.
    #[inline(always)]
    fn take(&self, flow: Flow) -> Option<Buffer> {
        let shared = &*self.shared;
        let (slot, free_left) = {
            let mut free = shared.free.borrow_mut();
            let slot = free.pop();
            // The next buffer handed out is the one now on top: its
            // bookkeeping, cold after a batch, is fetched while this one
            // is used, rather than missed when it is handed out.
            if let Some(next) = free.last() {
                prefetch_slot(next);
            }
            (slot, free.len())
        };
        let slot = match slot {
            Some(slot) => slot,
            None => self.regrow()?,
        };
        // Only unshared slots are put on the free list, so this buffer is
        // the only reference: no packet handed out sees the flow change.
        debug_assert_eq!(Rc::strong_count(&slot), 1, "a shared free buffer");
        slot.flow.set(flow);
        shared.handed_out.set(shared.handed_out.get() + 1);
        let in_use = shared.allocated.get() - free_left;
        if in_use > shared.high_water.get() {
            shared.high_water.set(in_use);
        }
        Some(Buffer {
            slot: ManuallyDrop::new(slot),
        })
    }

    /// A buffer made again after a release, while fewer than `buffers`
    /// exist (the bound never changes); else the pool is exhausted.
    #[cold]
    fn regrow(&self) -> Option<Rc<Slot>> {
        let shared = &*self.shared;
        let mut stats = shared.stats.get();
        let allocated = shared.allocated.get();
        let slot = if allocated < shared.config.buffers {
            shared.allocated.set(allocated + 1);
            stats.regrown += 1;
            Some(Slot::fresh(&self.shared))
        } else {
            stats.exhausted += 1;
            None
        };
        shared.stats.set(stats);
        slot
    }
}

/// Asks for `slot`'s allocation (the reference count and the bookkeeping
/// after it, in two cache lines) to be brought into the cache, without
/// waiting for it.
#[inline(always)]
fn prefetch_slot(slot: &Rc<Slot>) {
    // The count lies 16 bytes before the value, the flow 48 after it.
    let value = Rc::as_ptr(slot).cast::<u8>();
    super::prefetch(value.wrapping_sub(16));
    super::prefetch(value.wrapping_add(48));
}

/// A buffer's memory and whose it is: one allocation, made when the pool
/// is, behind the reference count.
struct Slot {
    data: Vec<u8>,
    /// Where it goes when the last reference is dropped; a pool's buffer
    /// keeps its pool while free too.
    home: Home,
    /// Set when handed out, while unshared.
    flow: Cell<Flow>,
}

enum Home {
    Pool(Rc<Shared>),
    /// Back to the link that lent it, its bytes no longer held against
    /// the pool's bound.
    Lender {
        lender: Arc<dyn Lender>,
        pool: Rc<Shared>,
    },
}

impl Slot {
    /// A new buffer of `pool`'s size, belonging to it.
    fn fresh(pool: &Rc<Shared>) -> Rc<Slot> {
        Rc::new(Slot {
            data: vec![0u8; pool.config.buffer_size],
            home: Home::Pool(Rc::clone(pool)),
            flow: Cell::new(Flow::NONE),
        })
    }
}

/// A link that lends the memory frames arrive in (a virtual wire's lane,
/// an AF_PACKET ring's spares). It may be called from any thread's host,
/// hence `Send + Sync`.
pub trait Lender: Send + Sync {
    /// Takes back `bytes`, lent with [`Lent::new`] or [`Lent::part`], for
    /// reuse.
    fn give_back(&self, bytes: Vec<u8>);
}

/// A frame's bytes lent by a link: [`Pool::lend`] makes them a buffer
/// without copying; dropped unused, they go straight back.
pub struct Lent {
    bytes: Vec<u8>,
    /// Where in `bytes` the frame is.
    range: Range<usize>,
    lender: Option<Arc<dyn Lender>>,
}

impl Lent {
    /// All of `bytes` is the frame.
    pub fn new(bytes: Vec<u8>, lender: Arc<dyn Lender>) -> Lent {
        let range = 0..bytes.len();
        Lent {
            bytes,
            range,
            lender: Some(lender),
        }
    }

    /// The frame is `range` of `bytes` (clamped to them): a receive slot
    /// with a header in front or room behind.
    pub fn part(bytes: Vec<u8>, range: Range<usize>, lender: Arc<dyn Lender>) -> Lent {
        let end = range.end.min(bytes.len());
        Lent {
            range: range.start.min(end)..end,
            bytes,
            lender: Some(lender),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }

    /// Where the frame lies in the buffer [`Pool::lend`] makes.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(lender) = self.lender.take() {
            lender.give_back(std::mem::take(&mut self.bytes));
        }
    }
}

/// A counted reference to one buffer of a pool. Clones share the buffer
/// (the packets and segments that reference its bytes); when the last one
/// is dropped, the buffer and its reference count go back to the pool.
pub struct Buffer {
    /// Always there: it is taken only by the buffer's drop, which must
    /// own it to send it home. (An `Option` would be checked at every use
    /// of the bytes.)
    slot: ManuallyDrop<Rc<Slot>>,
}

impl Buffer {
    pub fn capacity(&self) -> usize {
        self.len()
    }

    /// Asks for the buffer's bookkeeping to be brought into the cache
    /// ahead of its use, without waiting for it.
    #[inline]
    pub fn prefetch(&self) {
        prefetch_slot(&self.slot);
    }

    /// The flow the buffer was allocated for.
    pub fn flow(&self) -> Flow {
        self.slot.flow.get()
    }

    /// The bytes, writable if no other reference shares the buffer (so no
    /// packet already handed out can see them change).
    pub fn get_mut(&mut self) -> Option<&mut [u8]> {
        self.memory_mut().map(Vec::as_mut_slice)
    }

    /// The memory itself, if unshared, for a link to receive into: it may
    /// exchange it for memory of the same length and capacity that already
    /// holds the frame ([`RxBuffer`](crate::phy::RxBuffer) allows no other
    /// change, so the pool's bound in bytes holds).
    pub(crate) fn memory_mut(&mut self) -> Option<&mut Vec<u8>> {
        let slot = Rc::get_mut(&mut self.slot)?;
        Some(&mut slot.data)
    }
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        Buffer {
            slot: ManuallyDrop::new(Rc::clone(&self.slot)),
        }
    }
}

impl Deref for Buffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.slot.data
    }
}

impl Drop for Buffer {
    /// Dropping a reference that is not the last only counts down, inline
    /// (most drops are of a shared buffer's clones); the last frees.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this is the buffer's drop, so `slot` is taken once and
        // never used again.
        let slot = unsafe { ManuallyDrop::take(&mut self.slot) };
        if Rc::strong_count(&slot) == 1 {
            free(slot);
        }
    }
}

/// The last reference to a buffer is dropped: the buffer goes home.
#[inline(never)]
fn free(mut slot: Rc<Slot>) {
    // Held by a weak reference too (none is ever made): it stays.
    let Some(owned) = Rc::get_mut(&mut slot) else {
        return;
    };
    let flow = owned.flow.get();
    match &mut owned.home {
        Home::Pool(pool) => {
            // The list cannot hold the slot that holds the pool while the
            // slot is borrowed for it: the pool is reached through a
            // pointer, not a count taken and given back (issue 22).
            let pool = Rc::as_ptr(pool);
            // As in `Pool::alloc`: the span's guard only where recorded.
            if probe::would_record(BUFFER_FREE_ENTER, flow) {
                return_to_pool_recorded(pool, slot, flow);
            } else {
                return_to_pool(pool, slot);
            }
        }
        Home::Lender { lender, pool } => {
            let _span = probe::span(BUFFER_FREE_ENTER, BUFFER_FREE_EXIT, 0, flow, 0);
            let bytes = std::mem::take(&mut owned.data);
            pool.lent_bytes
                .set(pool.lent_bytes.get().saturating_sub(bytes.capacity()));
            lender.give_back(bytes);
            // The count's allocation too, inside the span.
            drop(slot);
        }
    }
}

/// A freed slot goes back on its pool's free list, or is dropped when no
/// handle to the pool is left.
#[inline(always)]
fn return_to_pool(pool: *const Shared, slot: Rc<Slot>) {
    // SAFETY: the slot holds a count on the pool, so the pool is alive
    // while the slot is, and the slot lives on in the list (the pool's
    // own) it is pushed into; nothing here holds a reference to the pool
    // across the move of the slot.
    if unsafe { (*pool).handles.get() } > 0 {
        // SAFETY: as above; the slot is alive until the push ends.
        unsafe { (*pool).free.borrow_mut().push(slot) };
    } else {
        // No handle left to allocate from: the memory goes.
        drop(slot);
    }
}

/// [`return_to_pool`] inside the free's probe span.
#[inline(never)]
fn return_to_pool_recorded(pool: *const Shared, slot: Rc<Slot>, flow: Flow) {
    let _span = probe::span(BUFFER_FREE_ENTER, BUFFER_FREE_EXIT, 0, flow, 0);
    return_to_pool(pool, slot);
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(buffers: usize) -> Pool {
        Pool::new(PoolConfig {
            buffer_size: 64,
            headroom: 16,
            buffers,
        })
        .unwrap()
    }

    /// A lender that keeps what it is given back.
    #[derive(Default)]
    struct Kept(std::sync::Mutex<Vec<Vec<u8>>>);

    impl Lender for Kept {
        fn give_back(&self, bytes: Vec<u8>) {
            self.0.lock().unwrap().push(bytes);
        }
    }

    #[test]
    fn lent_memory_is_bounded_by_the_pool_and_goes_back_to_its_lender() {
        // A bound of 4 × 64 bytes.
        let pool = pool(4);
        let lender = Arc::new(Kept::default());
        let lend = |n: usize| Lent::part(vec![7; n], 2..n, lender.clone());
        let first = pool.lend(lend(200), Flow::NONE).ok().unwrap();
        assert_eq!(&first[2..200], &[7; 198][..]);
        assert_eq!(pool.stats().lent_bytes, 200);
        assert_eq!(pool.in_use(), 4, "200 lent bytes count as 4 buffers' worth");
        // Another 100 would hold 300 > 256: refused, handed back unused.
        let refused = pool.lend(lend(100), Flow::NONE).err().unwrap();
        assert_eq!(refused.bytes().len(), 98);
        drop(refused);
        assert_eq!(lender.0.lock().unwrap().len(), 1, "given back unused");
        let shared = first.clone();
        drop(first);
        assert_eq!(lender.0.lock().unwrap().len(), 1, "still shared");
        drop(shared);
        let back = lender.0.lock().unwrap();
        assert_eq!((back.len(), back[1].len()), (2, 200), "the memory itself");
        let stats = pool.stats();
        assert_eq!(
            (stats.lent, stats.lend_refused, stats.lent_bytes),
            (1, 1, 0)
        );
        assert_eq!((stats.lent_high_water, pool.in_use()), (200, 0));
    }

    #[test]
    fn exhaustion_is_counted_and_memory_bounded() {
        let pool = pool(2);
        let a = pool.alloc(Flow::NONE).unwrap();
        let b = pool.alloc(Flow::NONE).unwrap();
        assert!(pool.alloc(Flow::NONE).is_none());
        assert_eq!(pool.stats().exhausted, 1);
        assert_eq!(pool.in_use(), 2);
        drop(a);
        assert_eq!(pool.in_use(), 1);
        let c = pool.alloc(Flow::NONE).expect("a freed buffer is reused");
        assert_eq!(c.capacity(), 64);
        drop((b, c));
        let s = pool.stats();
        assert_eq!((s.allocated, s.freed, s.high_water), (3, 3, 2));
    }

    #[test]
    fn released_buffers_come_back_on_demand_within_the_bound() {
        let pool = pool(8);
        let held: Vec<Buffer> = (0..6).map(|_| pool.alloc(Flow::NONE).unwrap()).collect();
        // In use buffers are never released: only the 2 free ones go.
        assert_eq!(pool.release(0), 2);
        assert_eq!((pool.allocated(), pool.in_use()), (6, 6));
        drop(held);
        assert_eq!(pool.release(3), 3);
        assert_eq!((pool.allocated(), pool.in_use()), (3, 0));
        // Demand makes them again, up to the configured 8 and no more.
        let again: Vec<Buffer> = (0..8).map(|_| pool.alloc(Flow::NONE).unwrap()).collect();
        assert!(pool.alloc(Flow::NONE).is_none());
        let s = pool.stats();
        assert_eq!((s.released, s.regrown, s.exhausted), (5, 5, 1));
        assert_eq!(pool.allocated(), 8);
        assert!(again.iter().all(|b| b.capacity() == 64));
    }

    #[test]
    fn a_shared_buffer_returns_when_its_last_reference_goes() {
        let pool = pool(1);
        let mut first = pool.alloc(Flow::NONE).unwrap();
        first.get_mut().expect("a fresh buffer is unshared")[0] = 7;
        let memory = first.as_ptr();
        let mut second = first.clone();
        assert!(second.get_mut().is_none(), "shared bytes cannot change");
        drop(first);
        assert_eq!((pool.in_use(), second[0]), (1, 7));
        assert!(second.get_mut().is_some(), "the last reference may write");
        drop(second);
        assert_eq!(pool.in_use(), 0);
        let again = pool.alloc(Flow::NONE).unwrap();
        assert_eq!(again.as_ptr(), memory, "the same buffer, not a new one");
        assert_eq!(pool.stats().freed, 1);
    }

    #[test]
    fn free_buffers_do_not_keep_their_pool_alive() {
        let pool = pool(4);
        let shared = Rc::downgrade(&pool.shared);
        let held = pool.alloc(Flow::NONE).unwrap();
        drop(pool.alloc(Flow::NONE).unwrap());
        drop(pool);
        assert!(shared.upgrade().is_some(), "a buffer in use holds the pool");
        drop(held);
        assert!(
            shared.upgrade().is_none(),
            "the pool and its memory are gone"
        );
    }

    #[test]
    fn the_free_list_outlives_all_but_the_last_handle() {
        let pool = pool(2);
        let shared = Rc::downgrade(&pool.shared);
        let other = pool.clone();
        let first = pool.alloc(Flow::NONE).unwrap();
        let memory = first.as_ptr();
        drop(first);
        drop(pool);
        // Another handle is left: the freed buffer is still there to reuse.
        let again = other.alloc(Flow::NONE).unwrap();
        assert_eq!(again.as_ptr(), memory, "the same buffer, not a new one");
        assert_eq!((other.in_use(), other.stats().freed), (1, 1));
        drop(other);
        assert!(shared.upgrade().is_some(), "a buffer in use holds the pool");
        // Freed with no handle left: the memory goes, and the pool with it.
        drop(again);
        assert!(shared.upgrade().is_none(), "nothing left holds the pool");
    }

    #[test]
    fn nonsense_configs_are_refused() {
        let config = |buffer_size, headroom, buffers| PoolConfig {
            buffer_size,
            headroom,
            buffers,
        };
        assert_eq!(
            Pool::new(config(64, 16, 0)).err(),
            Some(PoolConfigError::NoBuffers)
        );
        assert!(matches!(
            Pool::new(config(64, 64, 1)),
            Err(PoolConfigError::NoRoomAfterHeadroom { .. })
        ));
    }
}
