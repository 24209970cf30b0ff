//! One counter read shared by records made at the same point.
//!
//! A counter read is most of a record's cost (`rdtsc` takes about 14 ns on
//! the development VM). Where records follow one another with nothing
//! between them worth timing — a queue's dequeue and the start of the
//! stage it feeds, the end of one stage and the enqueue it ends with, a
//! batch of completions noticed at one poll — they may share one read: the
//! counter is read at the first record made with the [`Stamp`] and reused
//! by the others. Such records carry equal counter values, which is how
//! analysis knows that only one probe's overhead lies between them.

use crate::gate::Flow;
use crate::record::Loc;
use crate::span::SpanGuard;

/// A counter value read at most once, by the first record that needs it.
#[derive(Debug, Default)]
pub struct Stamp {
    #[cfg_attr(not(feature = "probes"), allow(dead_code))]
    tsc: Option<u64>,
}

impl Stamp {
    /// A stamp not yet read.
    pub const fn new() -> Stamp {
        Stamp { tsc: None }
    }

    /// Whether the stamp holds a counter value: a record made with it
    /// passed the gate (and was kept unless the ring was full).
    #[inline(always)]
    pub fn is_read(&self) -> bool {
        #[cfg(feature = "probes")]
        return self.tsc.is_some();
        #[cfg(not(feature = "probes"))]
        false
    }

    #[cfg(feature = "probes")]
    #[inline(always)]
    pub(crate) fn read(&mut self) -> u64 {
        *self.tsc.get_or_insert_with(crate::clock::read)
    }

    /// [`crate::record`] at this stamp's counter value.
    #[inline(always)]
    pub fn record(&mut self, loc: Loc, len: u32, flow: Flow, aux: u64) {
        self.record_with(loc, flow, || (len, aux));
    }

    /// [`crate::record_with`] at this stamp's counter value.
    #[inline(always)]
    pub fn record_with(&mut self, loc: Loc, flow: Flow, args: impl FnOnce() -> (u32, u64)) {
        #[cfg(feature = "probes")]
        if crate::gate::is_open_at(flow, loc) {
            let (len, aux) = args();
            crate::ring::push_at(self.read(), loc, len, flow.id, aux);
        }
        #[cfg(not(feature = "probes"))]
        let _ = (loc, flow, args);
    }

    /// [`Stamp::record_with`] at the counter value of this thread's last
    /// record if that was made at one of `after`, one or two locations
    /// (the record follows the work recorded there with nothing worth
    /// timing between: the next packet's dequeue after the last one's
    /// processing, in one loop); else, or with `after` empty, at a fresh
    /// read, as [`Stamp::record_with`]. Records made with the stamp after
    /// it share that value.
    #[inline(always)]
    pub fn record_after(
        &mut self,
        after: &[Loc],
        loc: Loc,
        flow: Flow,
        args: impl FnOnce() -> (u32, u64),
    ) {
        #[cfg(feature = "probes")]
        if crate::gate::is_open_at(flow, loc) {
            let (len, aux) = args();
            match self.tsc {
                Some(tsc) => crate::ring::push_at(tsc, loc, len, flow.id, aux),
                None => self.tsc = crate::ring::push_after(after, loc, len, flow.id, aux),
            }
        }
        #[cfg(not(feature = "probes"))]
        let _ = (after, loc, flow, args);
    }

    /// [`crate::span_with`] whose enter is at this stamp's counter value
    /// (its exit is read when it ends).
    #[inline(always)]
    pub fn span_with(
        &mut self,
        enter: Loc,
        exit: Loc,
        flow: Flow,
        args: impl FnOnce() -> (u32, u64),
    ) -> SpanGuard {
        crate::span::open(enter, exit, flow, args, self)
    }
}
