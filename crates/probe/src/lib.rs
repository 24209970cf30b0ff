//! Probe recorder, location table, calibration and trace files.
//!
//! A probe is one call, [`record`], at a function head or end, a queue
//! operation or any point of interest. It appends a 32-byte [`Record`]
//! (counter value, location id, length, flow, aux) to a preallocated
//! per-thread ring — no allocation, lock or syscall — when the run-time
//! [gate] is open for the probe's [`Flow`]. After a run the rings
//! are drained ([`drain_thread`]) and written, with the location table and
//! the measured clock frequency and probe overhead, as a self-describing
//! [trace file](trace_file), which [converters](convert) turn into CSV or
//! Perfetto JSON.
//!
//! ```
//! use probe::{locations, Category, Flow, Kind, Layer, Mode};
//!
//! locations! {
//!     pub static SITES;
//!     SEND_ENTER = ("send.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
//!     SEND_EXIT = ("send.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
//! }
//!
//! probe::init_thread(1024);
//! probe::set_mode(Mode::All);
//! {
//!     let _span = probe::span(SEND_ENTER, SEND_EXIT, 1460, Flow::traced(7), 1);
//!     // ... the work being measured ...
//! }
//! probe::set_mode(Mode::Off);
//! let records = probe::drain_thread();
//! # #[cfg(feature = "probes")]
//! assert_eq!(records.len(), 2);
//! ```
//!
//! Built without the `probes` feature, [`record`] and [`span`] compile to
//! nothing and the thread functions return empty results.

pub mod calibrate;
pub mod clock;
pub mod convert;
pub mod gate;
pub mod location;
mod record;
#[cfg(feature = "probes")]
mod ring;
#[cfg(not(feature = "probes"))]
#[path = "ring_disabled.rs"]
mod ring;
mod span;
mod stamp;
mod stats;
pub mod trace_file;

pub use gate::{level, mode, set_level, set_mode, Flow, Level, Mode};
pub use location::{Category, Kind, Layer, Location};
pub use record::{Loc, Record};
pub use ring::{
    capacity, drain_thread, dropped, dropped_after_exit, init_thread, recorded, reset_thread,
    thread_id,
};
pub use span::{span, span_with, SpanGuard};
pub use stamp::Stamp;
pub use trace_file::{LocationEntry, Trace, TraceError, TraceHeader, TraceWriter};

/// Capacity, in records, of a ring allocated on first use without
/// [`init_thread`]: 1 Mi records, 32 MiB.
pub const DEFAULT_CAPACITY: usize = 1 << 20;

/// Whether this build has probes compiled in (the `probes` feature).
pub const ENABLED: bool = cfg!(feature = "probes");

/// Records one event at `loc` if the gate is open for `flow`.
///
/// The hot path: one relaxed atomic load for the gate, one counter read,
/// one 32-byte store into this thread's ring. When the ring is full the
/// event is dropped and counted ([`dropped`]).
#[inline(always)]
pub fn record(loc: Loc, len: u32, flow: Flow, aux: u64) {
    #[cfg(feature = "probes")]
    if gate::is_open_at(flow, loc) {
        ring::push(loc, len, flow.id, aux);
    }
    #[cfg(not(feature = "probes"))]
    let _ = (loc, len, flow, aux);
}

/// Records one event at `loc` if the gate is open for `flow`, its `len`
/// and `aux` computed by `args` only then.
///
/// For a site whose arguments cost something to compute (a packet's length
/// walks its chain): with the gate closed the site is the gate check alone.
/// Arguments passed to [`record`] are computed before the check, and the
/// compiler does not always move them after it (issue 22: closed sites
/// cost 10–25 instructions each where the check is 3).
#[inline(always)]
pub fn record_with(loc: Loc, flow: Flow, args: impl FnOnce() -> (u32, u64)) {
    #[cfg(feature = "probes")]
    if gate::is_open_at(flow, loc) {
        let (len, aux) = args();
        ring::push(loc, len, flow.id, aux);
    }
    #[cfg(not(feature = "probes"))]
    let _ = (loc, flow, args);
}

/// A record decided now and written later, once the work it marks is
/// done (a queue's enqueue after the push, which a stage ending at that
/// record, `SpanGuard::end_after`, must not leave outside it): the gate is
/// asked once, here, and `args` computed only for a record that is kept.
#[inline(always)]
pub fn defer(loc: Loc, flow: Flow, args: impl FnOnce() -> (u32, u64)) -> Deferred {
    #[cfg(feature = "probes")]
    return Deferred {
        pending: gate::is_open_at(flow, loc).then(|| {
            let (len, aux) = args();
            (loc, len, flow.id, aux)
        }),
    };
    #[cfg(not(feature = "probes"))]
    {
        let _ = (loc, flow, args);
        Deferred {}
    }
}

/// A record [`defer`]red: written by [`Deferred::record`], or never if
/// dropped.
#[must_use = "a deferred record is written only by `record`"]
pub struct Deferred {
    #[cfg(feature = "probes")]
    pending: Option<(Loc, u32, u32, u64)>,
}

impl Deferred {
    /// No record: for a site that may have nothing to defer.
    #[inline(always)]
    pub const fn none() -> Deferred {
        Deferred {
            #[cfg(feature = "probes")]
            pending: None,
        }
    }

    /// Writes the record now, if the gate was open when it was deferred.
    #[inline(always)]
    pub fn record(self) {
        #[cfg(feature = "probes")]
        if let Some((loc, len, flow, aux)) = self.pending {
            ring::push(loc, len, flow, aux);
        }
    }
}

/// Whether [`record`] at `loc` would record for `flow` now: for a site
/// whose record needs work to compute (a clock read), so that work is done
/// only when it is kept.
#[inline(always)]
pub fn would_record(loc: Loc, flow: Flow) -> bool {
    #[cfg(feature = "probes")]
    return gate::is_open_at(flow, loc);
    #[cfg(not(feature = "probes"))]
    {
        let _ = (loc, flow);
        false
    }
}

/// Serialises unit tests that change the global gate mode.
#[cfg(test)]
pub(crate) fn test_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
