//! The per-thread record buffer.
//!
//! Each thread owns a preallocated buffer of records filled front to back.
//! When it is full, new events are dropped and counted: the first events
//! of a run are kept, and a report can say how many were lost. The hot
//! path ([`push`]) is one compare of a cursor against the buffer's end, a
//! counter read, one 32-byte store and the cursor's bump — no allocation
//! (the buffer never grows past the capacity set by [`init_thread`]), no
//! lock (the cursor is this thread's own) and no syscall.
//!
//! The cursor is a raw pointer into the buffer, kept in a thread-local of
//! its own that has no destructor, so the hot path reaches it with a
//! plain thread-local access: no destructor-registration check and no
//! `RefCell` borrow flag to set and clear. Recording at the `layers`
//! level cost the TCP bench 8.1–9.0 % with it against 9.9–10.2 % with a
//! `RefCell<Vec>` (3 interleaved runs of `TCP_BENCH_CPU=15` each, load
//! 1.5, issue 22). That gain is the reason for the `unsafe` below.

use crate::clock;
use crate::record::{Loc, Record};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::DEFAULT_CAPACITY;

/// Where this thread's next record goes: all the hot path touches. It has
/// no destructor, so reaching it is a plain thread-local access (no
/// check that a destructor was registered), and it holds no `RefCell`
/// (no borrow flag to set and clear around each record).
struct Cursor {
    /// The next free slot; equal to `end` when the buffer is full (or
    /// not allocated: both null).
    next: Cell<*mut Record>,
    end: Cell<*mut Record>,
    /// The buffer's first slot (null when not allocated): a record is
    /// behind `next` only when `next` is past it.
    start: Cell<*mut Record>,
    /// This thread's number, copied into each record; 0 until assigned.
    thread: Cell<u16>,
}

/// The buffer the cursor points into, with what the hot path does not
/// need. Dropping it (at thread exit) first points the cursor nowhere,
/// then frees the buffer.
struct Ring {
    /// The buffer's first record and its capacity: an allocation made by
    /// `Box<[Record]>` and freed only by `release`.
    start: Cell<*mut Record>,
    capacity: Cell<usize>,
    /// Whether a capacity was chosen (a capacity of 0 is a valid choice).
    allocated: Cell<bool>,
    dropped: Cell<u64>,
}

impl Ring {
    const fn new() -> Ring {
        Ring {
            start: Cell::new(std::ptr::null_mut()),
            capacity: Cell::new(0),
            allocated: Cell::new(false),
            dropped: Cell::new(0),
        }
    }

    /// Replaces the buffer with an empty one of exactly `capacity` records
    /// whose pages are already written, so the first probes take no page
    /// faults, and points the cursor at its start.
    fn allocate(&self, cursor: &Cursor, capacity: usize) {
        self.release(cursor);
        let buffer: Box<[Record]> = vec![Record::UNWRITTEN; capacity].into_boxed_slice();
        let start = Box::into_raw(buffer).cast::<Record>();
        self.start.set(start);
        self.capacity.set(capacity);
        // `wrapping_add` stays within (one past) the allocation just made.
        cursor.next.set(start);
        cursor.start.set(start);
        cursor.end.set(start.wrapping_add(capacity));
        self.allocated.set(true);
    }

    /// Frees the buffer, the cursor pointing nowhere first.
    fn release(&self, cursor: &Cursor) {
        cursor.next.set(std::ptr::null_mut());
        cursor.start.set(std::ptr::null_mut());
        cursor.end.set(std::ptr::null_mut());
        let start = self.start.replace(std::ptr::null_mut());
        if !start.is_null() {
            let slice = std::ptr::slice_from_raw_parts_mut(start, self.capacity.get());
            // SAFETY: `start` and the capacity are those of the boxed slice
            // `allocate` leaked with `Box::into_raw`; it is freed once,
            // here, after the cursor stopped pointing into it.
            drop(unsafe { Box::from_raw(slice) });
        }
        self.capacity.set(0);
    }

    /// Records written so far (the cursor's distance from the start).
    fn len(&self, cursor: &Cursor) -> usize {
        if self.start.get().is_null() {
            return 0;
        }
        (cursor.next.get() as usize - self.start.get() as usize) / Record::SIZE
    }

    /// The records written so far, copied out.
    fn records(&self, cursor: &Cursor) -> Vec<Record> {
        let len = self.len(cursor);
        if len == 0 {
            return Vec::new();
        }
        // SAFETY: the first `len` records of the buffer were written by
        // `push` (or the allocation's fill); the buffer lives until
        // `release`, and this thread, its only user, is here.
        unsafe { std::slice::from_raw_parts(self.start.get(), len) }.to_vec()
    }

    /// Points the cursor back at the start: the ring is empty.
    fn clear(&self, cursor: &Cursor) {
        if !self.start.get().is_null() {
            cursor.next.set(self.start.get());
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // The cursor has no destructor, so it is still reachable here.
        let _ = CURSOR.try_with(|cursor| self.release(cursor));
    }
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

/// Events recorded by threads whose ring was already destroyed (a probe in
/// another thread-local's destructor): counted here, never a panic.
static DROPPED_AFTER_EXIT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CURSOR: Cursor = const {
        Cursor {
            next: Cell::new(std::ptr::null_mut()),
            end: Cell::new(std::ptr::null_mut()),
            start: Cell::new(std::ptr::null_mut()),
            thread: Cell::new(0),
        }
    };
    static RING: Ring = const { Ring::new() };
}

/// This thread's number (assigned on first use).
fn assigned_thread(cursor: &Cursor) -> u16 {
    if cursor.thread.get() == 0 {
        // Numbers start at 1; past u16::MAX threads share the last one.
        let n = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
        cursor.thread.set(n.min(u32::from(u16::MAX)) as u16);
    }
    cursor.thread.get()
}

/// Appends one record to this thread's ring: the path taken only when a
/// probe records. The work is out of line ([`push_to`]), so a probe site
/// whose gate is closed is a load, a compare and a branch, not the ring's
/// code copied into every site of the stack (which cost the stack's data
/// path about 10 % with the gate closed, issue 22).
///
/// Only the thread-local's address is found here, at the site: in a
/// position-independent build the compiler treats a thread-local access
/// as a call that may clobber every argument register, so done inside the
/// out-of-line part it made that part save and restore four registers per
/// record (33 instructions on its fast path, now 19; recording at the
/// `layers` level went from 10.6 % to 8.2 % more instructions than the
/// gate closed in the TCP bench, callgrind).
#[inline(always)]
pub(crate) fn push(loc: Loc, len: u32, flow: u32, aux: u64) {
    CURSOR.with(|cursor| push_to(cursor, loc, len, flow, aux));
}

/// Appends one record made at counter value `tsc`, read earlier for
/// several records ([`crate::Stamp`]).
#[inline(always)]
pub(crate) fn push_at(tsc: u64, loc: Loc, len: u32, flow: u32, aux: u64) {
    CURSOR.with(|cursor| push_to_at(cursor, tsc, loc, len, flow, aux));
}

/// [`push_at`]'s out-of-line part.
#[inline(never)]
fn push_to_at(cursor: &Cursor, tsc: u64, loc: Loc, len: u32, flow: u32, aux: u64) {
    let next = cursor.next.get();
    if next == cursor.end.get() {
        return push_slow(loc, len, flow, aux, Some(tsc));
    }
    // SAFETY: as in `push_to`: `next` lies in [start, end) of this
    // thread's buffer and no reference to the buffer is held.
    unsafe { next.write(Record::new(tsc, loc, len, flow, aux, cursor.thread.get())) };
    cursor.next.set(next.wrapping_add(1));
}

/// Appends one record made at the counter value of this thread's last
/// record if that was made at one of `after` (the work recorded there was
/// the last worth timing before this point), else at a fresh read.
/// Returns the counter value the record carries, `None` if it was not
/// written here (the ring full, or not yet allocated).
#[inline(always)]
pub(crate) fn push_after(after: &[Loc], loc: Loc, len: u32, flow: u32, aux: u64) -> Option<u64> {
    // At most two, as indices (`NONE` for none): the sites pass constants,
    // so the out-of-line part gets two immediates, not a slice to walk.
    // `NONE` is no index a record can hold (not even an unwritten slot's).
    debug_assert!(after.len() <= 2, "at most two locations");
    const NONE: u16 = Loc::MAX_LOCATIONS as u16;
    let index = |i: usize| after.get(i).map_or(NONE, |l| l.index() as u16);
    let after = [index(0), index(1)];
    CURSOR.with(|cursor| push_to_after(cursor, after, loc, len, flow, aux))
}

/// [`push_after`]'s out-of-line part.
#[inline(never)]
fn push_to_after(
    cursor: &Cursor,
    after: [u16; 2],
    loc: Loc,
    len: u32,
    flow: u32,
    aux: u64,
) -> Option<u64> {
    let next = cursor.next.get();
    if next == cursor.end.get() {
        push_slow(loc, len, flow, aux, None);
        return None;
    }
    let mut tsc = None;
    if next != cursor.start.get() {
        // SAFETY: `next` is past the buffer's start and not past its end,
        // so the slot before it lies in the buffer and was written by a
        // push (or the allocation's fill); no reference to it is held.
        let last = unsafe { next.wrapping_sub(1).read() };
        if after.contains(&last.loc) {
            tsc = Some(last.tsc);
        }
    }
    let tsc = tsc.unwrap_or_else(clock::read);
    // SAFETY: as in `push_to`.
    unsafe { next.write(Record::new(tsc, loc, len, flow, aux, cursor.thread.get())) };
    cursor.next.set(next.wrapping_add(1));
    Some(tsc)
}

/// [`push`]'s out-of-line part.
#[inline(never)]
fn push_to(cursor: &Cursor, loc: Loc, len: u32, flow: u32, aux: u64) {
    let next = cursor.next.get();
    if next == cursor.end.get() {
        // A tail call with the same arguments: the fast path keeps
        // them in the registers they came in, saving none.
        return push_slow(loc, len, flow, aux, None);
    }
    let tsc = clock::read();
    // SAFETY: `next` lies in [start, end) of this thread's buffer:
    // `allocate` sets both ends, `clear` moves `next` back to the
    // start, `release` points both nowhere before it frees the
    // buffer, and this function moves `next` on one record at a time,
    // never past `end`; no reference to the buffer is held across
    // this write (`records` copies out and returns).
    unsafe { next.write(Record::new(tsc, loc, len, flow, aux, cursor.thread.get())) };
    cursor.next.set(next.wrapping_add(1));
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

/// The ring is full, not allocated yet on this thread, or already gone.
#[cold]
#[inline(never)]
fn push_slow(loc: Loc, len: u32, flow: u32, aux: u64, tsc: Option<u64>) {
    let allocated = RING.try_with(|ring| {
        if ring.allocated.get() {
            ring.dropped.set(ring.dropped.get() + 1);
            return false;
        }
        CURSOR.with(|cursor| {
            ring.allocate(cursor, DEFAULT_CAPACITY);
            assigned_thread(cursor);
        });
        true
    });
    match allocated {
        // Once per thread: the buffer now has room.
        Ok(true) => match tsc {
            Some(tsc) => push_at(tsc, loc, len, flow, aux),
            None => push(loc, len, flow, aux),
        },
        Ok(false) => {}
        Err(_) => lost_after_exit(),
    }
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
        CURSOR.with(|cursor| {
            let id = assigned_thread(cursor);
            if !ring.allocated.get() || ring.capacity.get() != capacity {
                ring.allocate(cursor, capacity);
            }
            ring.clear(cursor);
            ring.dropped.set(0);
            id
        })
    })
    .unwrap_or(0)
}

/// Takes this thread's records, leaving the ring empty (and allocated).
/// The drop count is kept; see [`reset_thread`].
pub fn drain_thread() -> Vec<Record> {
    RING.try_with(|ring| {
        CURSOR.with(|cursor| {
            let taken = ring.records(cursor);
            ring.clear(cursor);
            taken
        })
    })
    .unwrap_or_default()
}

/// Empties this thread's ring and zeroes its drop count.
pub fn reset_thread() {
    let _ = RING.try_with(|ring| {
        CURSOR.with(|cursor| ring.clear(cursor));
        ring.dropped.set(0);
    });
}

/// Events this thread dropped because its ring was full.
pub fn dropped() -> u64 {
    RING.try_with(|ring| ring.dropped.get()).unwrap_or(0)
}

/// Records currently held by this thread's ring.
pub fn recorded() -> usize {
    RING.try_with(|ring| CURSOR.with(|cursor| ring.len(cursor)))
        .unwrap_or(0)
}

/// Capacity of this thread's ring (0 if not allocated yet).
pub fn capacity() -> usize {
    RING.try_with(|ring| ring.capacity.get()).unwrap_or(0)
}

/// This thread's number as stored in its records (assigned on first use).
pub fn thread_id() -> u16 {
    CURSOR.with(assigned_thread)
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
    fn a_record_after_another_at_the_named_location_shares_its_counter_value() {
        on_thread(|| {
            init_thread(8);
            // Nothing behind the cursor: a fresh read.
            push_after(&[Loc(1)], Loc(2), 0, 0, 0);
            push(Loc(1), 0, 0, 0);
            std::thread::sleep(std::time::Duration::from_millis(1));
            push_after(&[Loc(5), Loc(1)], Loc(2), 0, 0, 0);
            // The last record is at 2, not 1: a fresh read.
            std::thread::sleep(std::time::Duration::from_millis(1));
            push_after(&[Loc(1)], Loc(3), 0, 0, 0);
            let r = drain_thread();
            assert_eq!(r.len(), 4);
            assert!(r[1].tsc >= r[0].tsc);
            assert_eq!(r[2].tsc, r[1].tsc, "shares the read of the record at 1");
            assert!(
                r[3].tsc > r[2].tsc,
                "the record before is at 2: read afresh"
            );
            assert_eq!((r[2].loc, r[3].loc), (2, 3));
            // Emptied, the ring holds no record to share, whatever its
            // slots still hold; nor does an empty list of locations share.
            push(Loc(1), 0, 0, 0);
            let before = drain_thread()[0].tsc;
            std::thread::sleep(std::time::Duration::from_millis(1));
            push_after(&[Loc(1)], Loc(2), 0, 0, 0);
            std::thread::sleep(std::time::Duration::from_millis(1));
            push_after(&[], Loc(1), 0, 0, 0);
            let r = drain_thread();
            assert_eq!(r.len(), 2);
            assert!(r[0].tsc > before, "read afresh after the drain");
            assert!(r[1].tsc > r[0].tsc, "no location given: read afresh");
        });
    }

    #[test]
    fn threads_get_distinct_numbers() {
        let a = on_thread(thread_id);
        let b = on_thread(thread_id);
        assert_ne!(a, b);
    }
}
