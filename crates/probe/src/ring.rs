//! The per-thread record buffer.
//!
//! Each thread owns a preallocated array of records filled front to back.
//! When it is full, new events are dropped and counted: the first events
//! of a run are kept, and a report can say how many were lost. The hot
//! path ([`push`]) does one compare, one 32-byte store and one index
//! bump — no allocation, lock or syscall.
//!
//! Two thread-locals split the job:
//! * `RING` holds only `Cell`s and raw pointers and has no destructor, so
//!   with its `const` initialiser every access compiles to a plain
//!   thread-local address with no "initialised yet?" check.
//! * `OWNER` is a zero-sized value whose destructor frees the buffer when
//!   the thread exits. It is touched only when a buffer is allocated.

use crate::clock;
use crate::record::{Loc, Record};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

/// Capacity, in records, of a ring allocated on first use without
/// [`init_thread`]: 1 Mi records, 32 MiB.
pub const DEFAULT_CAPACITY: usize = 1 << 20;

struct Ring {
    /// First slot of the buffer; null until allocated (and after release).
    slots: Cell<*mut Record>,
    capacity: Cell<usize>,
    len: Cell<usize>,
    dropped: Cell<u64>,
    /// 0 until a number is assigned.
    thread: Cell<u16>,
}

impl Ring {
    const fn new() -> Ring {
        Ring {
            slots: Cell::new(ptr::null_mut()),
            capacity: Cell::new(0),
            len: Cell::new(0),
            dropped: Cell::new(0),
            thread: Cell::new(0),
        }
    }

    fn thread_id(&self) -> u16 {
        if self.thread.get() == 0 {
            // Numbers start at 1; past u16::MAX threads share the last one.
            let n = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
            self.thread.set(n.min(u32::from(u16::MAX)) as u16);
        }
        self.thread.get()
    }

    /// Allocates and pre-touches a buffer of `capacity` records, replacing
    /// any previous one. Returns false (leaving the ring empty) if the
    /// thread is already exiting.
    fn allocate(&self, capacity: usize) -> bool {
        self.release();
        // Registering the owner's destructor fails once the thread's
        // thread-locals are being torn down; do not allocate then, since
        // nothing would free the buffer.
        if OWNER.try_with(|_| ()).is_err() {
            return false;
        }
        let buffer: Box<[Record]> = vec![Record::UNWRITTEN; capacity].into_boxed_slice();
        self.slots.set(Box::into_raw(buffer).cast::<Record>());
        self.capacity.set(capacity);
        self.len.set(0);
        true
    }

    /// Frees the buffer. Capacity drops to 0 first so no later push can
    /// reach the freed memory.
    fn release(&self) {
        let slots = self.slots.replace(ptr::null_mut());
        let capacity = self.capacity.replace(0);
        self.len.set(0);
        if !slots.is_null() {
            // SAFETY: `slots` and `capacity` came from `Box::into_raw` of a
            // `Box<[Record]>` of that length in `allocate`, and were cleared
            // above, so the box is rebuilt and freed exactly once.
            drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(slots, capacity)) });
        }
    }

    fn recorded(&self) -> &[Record] {
        let len = self.len.get();
        if len == 0 {
            return &[];
        }
        // SAFETY: `len > 0` means a buffer is allocated (release zeroes
        // `len`), and the first `len <= capacity` slots were initialised
        // at allocation. The slice lives only as long as `&self` on this
        // thread, during which nothing frees the buffer.
        unsafe { std::slice::from_raw_parts(self.slots.get(), len) }
    }
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

thread_local! {
    static RING: Ring = const { Ring::new() };
    static OWNER: Owner = const { Owner };
}

/// Frees this thread's buffer when the thread exits.
struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        // `RING` has no destructor, so it is still reachable here.
        RING.with(Ring::release);
    }
}

/// Appends one record to this thread's ring (the hot path).
#[inline(always)]
pub(crate) fn push(loc: Loc, len: u32, flow: u32, aux: u64) {
    RING.with(|ring| {
        let tsc = clock::read();
        let at = ring.len.get();
        if at < ring.capacity.get() {
            // The record is built in place: assembling it on the stack and
            // copying it costs a failed store-to-load forward (~5 ns).
            let record = Record::new(tsc, loc, len, flow, aux, ring.thread.get());
            // SAFETY: a non-zero capacity means `slots` points to a live
            // buffer of `capacity` records owned by this thread (see
            // `allocate`/`release`), and `at < capacity`.
            unsafe { ring.slots.get().add(at).write(record) };
            ring.len.set(at + 1);
        } else {
            push_slow(ring, Record::new(tsc, loc, len, flow, aux, 0));
        }
    })
}

/// The ring is full, or not allocated yet on this thread.
#[cold]
#[inline(never)]
fn push_slow(ring: &Ring, mut record: Record) {
    if ring.slots.get().is_null() && ring.allocate(DEFAULT_CAPACITY) {
        record.thread = ring.thread_id();
        // SAFETY: just allocated with DEFAULT_CAPACITY (> 0) slots, len 0.
        unsafe { ring.slots.get().write(record) };
        ring.len.set(1);
        return;
    }
    ring.dropped.set(ring.dropped.get() + 1);
}

/// Allocates this thread's ring with room for `capacity` records (before
/// measuring, so the hot path never allocates), discarding any records
/// and resetting the drop count. Returns the thread's number.
///
/// Re-initialising with the same capacity only clears. A capacity of 0
/// makes every event a counted drop. Every page of the buffer is written
/// here, so the first probes do not take page faults. A capacity whose
/// size in bytes overflows `isize` panics, as `vec!` does.
pub fn init_thread(capacity: usize) -> u16 {
    RING.with(|ring| {
        let id = ring.thread_id();
        if ring.slots.get().is_null() || ring.capacity.get() != capacity {
            ring.allocate(capacity);
        }
        ring.len.set(0);
        ring.dropped.set(0);
        id
    })
}

/// Takes this thread's records, leaving the ring empty (and allocated).
/// The drop count is kept; see [`reset_thread`].
pub fn drain_thread() -> Vec<Record> {
    RING.with(|ring| {
        let records = ring.recorded().to_vec();
        ring.len.set(0);
        records
    })
}

/// Empties this thread's ring and zeroes its drop count.
pub fn reset_thread() {
    RING.with(|ring| {
        ring.len.set(0);
        ring.dropped.set(0);
    })
}

/// Events this thread dropped because its ring was full.
pub fn dropped() -> u64 {
    RING.with(|ring| ring.dropped.get())
}

/// Records currently held by this thread's ring.
pub fn recorded() -> usize {
    RING.with(|ring| ring.len.get())
}

/// Capacity of this thread's ring (0 if not allocated yet).
pub fn capacity() -> usize {
    RING.with(|ring| ring.capacity.get())
}

/// This thread's number as stored in its records (assigned on first use).
pub fn thread_id() -> u16 {
    RING.with(Ring::thread_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    // These run on fresh threads so each test owns its ring.
    fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn lazy_allocation_on_first_push() {
        on_thread(|| {
            assert_eq!(capacity(), 0);
            push(Loc(3), 10, 20, 30);
            assert_eq!(capacity(), DEFAULT_CAPACITY);
            let r = drain_thread();
            assert_eq!(r.len(), 1);
            assert_eq!((r[0].loc, r[0].len, r[0].flow, r[0].aux), (3, 10, 20, 30));
            assert_eq!(r[0].thread, thread_id());
            assert_ne!(r[0].thread, 0);
        });
    }

    #[test]
    fn full_ring_drops_new_events() {
        on_thread(|| {
            init_thread(4);
            for i in 0..10 {
                push(Loc(0), 0, 0, i);
            }
            assert_eq!(dropped(), 6);
            let aux: Vec<u64> = drain_thread().iter().map(|r| r.aux).collect();
            assert_eq!(aux, [0, 1, 2, 3]);
            assert_eq!(dropped(), 6, "drain keeps the drop count");
            reset_thread();
            assert_eq!(dropped(), 0);
        });
    }

    #[test]
    fn zero_capacity_drops_everything() {
        on_thread(|| {
            init_thread(0);
            push(Loc(0), 0, 0, 0);
            assert_eq!(recorded(), 0);
            assert_eq!(dropped(), 1);
        });
    }

    #[test]
    fn reinit_changes_capacity_and_clears() {
        on_thread(|| {
            init_thread(8);
            push(Loc(0), 0, 0, 0);
            init_thread(16);
            assert_eq!((capacity(), recorded()), (16, 0));
            push(Loc(0), 0, 0, 0);
            init_thread(16);
            assert_eq!(recorded(), 0);
        });
    }

    #[test]
    fn threads_get_distinct_numbers() {
        let a = on_thread(thread_id);
        let b = on_thread(thread_id);
        assert_ne!(a, b);
    }
}
