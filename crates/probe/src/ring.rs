//! The per-thread record buffer.
//!
//! Each thread owns a preallocated vector of records filled front to back.
//! When it is full, new events are dropped and counted: the first events
//! of a run are kept, and a report can say how many were lost. The hot
//! path ([`push`]) does one capacity compare, one 32-byte store and one
//! length bump — no allocation (the vector never grows past the capacity
//! set by [`init_thread`]), no lock (the `RefCell` is this thread's own) and
//! no syscall.

use crate::clock;
use crate::record::{Loc, Record};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::DEFAULT_CAPACITY;

struct Ring {
    /// Its capacity is the ring's; `push` never lets it grow.
    records: RefCell<Vec<Record>>,
    /// Whether a capacity was chosen (a capacity of 0 is a valid choice).
    allocated: Cell<bool>,
    dropped: Cell<u64>,
    /// 0 until a number is assigned.
    thread: Cell<u16>,
}

impl Ring {
    const fn new() -> Ring {
        Ring {
            records: RefCell::new(Vec::new()),
            allocated: Cell::new(false),
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

    /// Replaces the buffer with an empty one of exactly `capacity` records
    /// whose pages are already written, so the first probes take no page
    /// faults.
    fn allocate(&self, capacity: usize) {
        let mut records = Vec::with_capacity(capacity);
        records.resize(capacity, Record::UNWRITTEN);
        records.clear();
        *self.records.borrow_mut() = records;
        self.allocated.set(true);
    }
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

/// Events recorded by threads whose ring was already destroyed (a probe in
/// another thread-local's destructor): counted here, never a panic.
static DROPPED_AFTER_EXIT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static RING: Ring = const { Ring::new() };
}

/// Appends one record to this thread's ring: the path taken only when a
/// probe records. Out of line, so a probe site whose gate is closed is a
/// load, a compare and a branch, not the ring's code copied into every
/// site of the stack (which cost the stack's data path about 10 % with
/// the gate closed, issue 22).
#[inline(never)]
pub(crate) fn push(loc: Loc, len: u32, flow: u32, aux: u64) {
    let pushed = RING.try_with(|ring| {
        let tsc = clock::read();
        let mut records = ring.records.borrow_mut();
        if records.len() < records.capacity() {
            records.push(Record::new(tsc, loc, len, flow, aux, ring.thread.get()));
        } else {
            drop(records);
            push_slow(ring, Record::new(tsc, loc, len, flow, aux, 0));
        }
    });
    if pushed.is_err() {
        lost_after_exit();
    }
}

#[cold]
#[inline(never)]
fn lost_after_exit() {
    DROPPED_AFTER_EXIT.fetch_add(1, Ordering::Relaxed);
}

/// Events dropped, process-wide, because their thread's ring was already
/// destroyed (probes fired from thread-local destructors at thread exit).
pub fn dropped_after_exit() -> u64 {
    DROPPED_AFTER_EXIT.load(Ordering::Relaxed)
}

/// The ring is full, or not allocated yet on this thread.
#[cold]
#[inline(never)]
fn push_slow(ring: &Ring, mut record: Record) {
    if !ring.allocated.get() {
        ring.allocate(DEFAULT_CAPACITY);
        record.thread = ring.thread_id();
        ring.records.borrow_mut().push(record);
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
    RING.try_with(|ring| {
        let id = ring.thread_id();
        if !ring.allocated.get() || ring.records.borrow().capacity() != capacity {
            ring.allocate(capacity);
        }
        ring.records.borrow_mut().clear();
        ring.dropped.set(0);
        id
    })
    .unwrap_or(0)
}

/// Takes this thread's records, leaving the ring empty (and allocated).
/// The drop count is kept; see [`reset_thread`].
pub fn drain_thread() -> Vec<Record> {
    RING.try_with(|ring| {
        let mut records = ring.records.borrow_mut();
        let taken = records.to_vec();
        records.clear();
        taken
    })
    .unwrap_or_default()
}

/// Empties this thread's ring and zeroes its drop count.
pub fn reset_thread() {
    let _ = RING.try_with(|ring| {
        ring.records.borrow_mut().clear();
        ring.dropped.set(0);
    });
}

/// Events this thread dropped because its ring was full.
pub fn dropped() -> u64 {
    RING.try_with(|ring| ring.dropped.get()).unwrap_or(0)
}

/// Records currently held by this thread's ring.
pub fn recorded() -> usize {
    RING.try_with(|ring| ring.records.borrow().len())
        .unwrap_or(0)
}

/// Capacity of this thread's ring (0 if not allocated yet).
pub fn capacity() -> usize {
    RING.try_with(|ring| ring.records.borrow().capacity())
        .unwrap_or(0)
}

/// This thread's number as stored in its records (assigned on first use).
pub fn thread_id() -> u16 {
    RING.try_with(Ring::thread_id).unwrap_or(0)
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
