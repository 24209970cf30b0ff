//! Span guards: an enter probe now, the matching exit probe on drop.

use crate::gate::Flow;
use crate::record::Loc;
use std::marker::PhantomData;

/// Keeps a guard on the thread that opened it (`*const ()` is neither
/// `Send` nor `Sync`): an exit recorded on another thread would land in the
/// wrong ring and leave both threads' spans unpaired.
type NotSend = PhantomData<*const ()>;

/// Records `exit` when dropped, with the same flow and aux as the enter
/// record (and `len`, unless changed with [`SpanGuard::set_len`]).
///
/// The exit is recorded exactly when the enter was, whatever the gate
/// says by then, so spans in a trace are never half-open because the mode
/// changed in between.
#[cfg(feature = "probes")]
#[must_use = "the span ends when the guard is dropped"]
pub struct SpanGuard {
    /// The exit to record, for a span whose enter was recorded.
    exit: Option<Exit>,
    _thread_bound: NotSend,
}

/// What an armed span's exit record carries.
#[cfg(feature = "probes")]
struct Exit {
    loc: Loc,
    len: u32,
    flow: u32,
    aux: u64,
}

/// Without the `probes` feature a guard is empty and dropping it does
/// nothing.
#[cfg(not(feature = "probes"))]
#[must_use = "the span ends when the guard is dropped"]
pub struct SpanGuard {
    _thread_bound: NotSend,
}

impl SpanGuard {
    /// Sets the `len` the exit record will carry (e.g. bytes produced).
    #[inline(always)]
    pub fn set_len(&mut self, len: u32) {
        #[cfg(feature = "probes")]
        if let Some(exit) = &mut self.exit {
            exit.len = len;
        }
        #[cfg(not(feature = "probes"))]
        let _ = len;
    }
}

impl SpanGuard {
    /// Ends the span now, its exit at `stamp`'s counter value, which the
    /// records made with `stamp` after it share.
    #[inline(always)]
    pub fn end_at(mut self, stamp: &mut crate::Stamp) {
        #[cfg(feature = "probes")]
        if let Some(exit) = self.exit.take() {
            crate::ring::push_at(stamp.read(), exit.loc, exit.len, exit.flow, exit.aux);
        }
        #[cfg(not(feature = "probes"))]
        let _ = (&mut self, stamp);
    }

    /// Ends the span now, where its last work worth timing was recorded at
    /// one of `last` (one or two locations: a queue's enqueue, a nested
    /// span's exit): its exit shares the counter read of this thread's
    /// last record if that was made at one of `last`, as [`crate::Stamp`]
    /// records do, and reads the counter afresh otherwise (the span ended
    /// early, before reaching them).
    #[inline(always)]
    pub fn end_after(mut self, last: &[Loc]) {
        #[cfg(feature = "probes")]
        if let Some(exit) = self.exit.take() {
            crate::ring::push_after(last, exit.loc, exit.len, exit.flow, exit.aux);
        }
        #[cfg(not(feature = "probes"))]
        let _ = (&mut self, last);
    }
}

#[cfg(feature = "probes")]
impl Drop for SpanGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(exit) = &self.exit {
            crate::ring::push(exit.loc, exit.len, exit.flow, exit.aux);
        }
    }
}

/// Records `enter` now (if the gate is open for `flow`) and returns a
/// guard that records `exit` when dropped.
#[inline(always)]
pub fn span(enter: Loc, exit: Loc, len: u32, flow: Flow, aux: u64) -> SpanGuard {
    span_with(enter, exit, flow, || (len, aux))
}

/// [`span`] with its `len` and `aux` computed by `args` only when the gate
/// is open (see [`crate::record_with`]).
#[inline(always)]
pub fn span_with(
    enter: Loc,
    exit: Loc,
    flow: Flow,
    args: impl FnOnce() -> (u32, u64),
) -> SpanGuard {
    open(enter, exit, flow, args, None)
}

/// Opens a span, its enter at `stamp`'s counter value if given.
#[inline(always)]
pub(crate) fn open<'a>(
    enter: Loc,
    exit: Loc,
    flow: Flow,
    args: impl FnOnce() -> (u32, u64),
    stamp: impl Into<Option<&'a mut crate::Stamp>>,
) -> SpanGuard {
    #[cfg(feature = "probes")]
    {
        if !crate::gate::is_open_at(flow, enter) {
            return SpanGuard {
                exit: None,
                _thread_bound: PhantomData,
            };
        }
        let (len, aux) = args();
        match stamp.into() {
            Some(stamp) => crate::ring::push_at(stamp.read(), enter, len, flow.id, aux),
            None => crate::ring::push(enter, len, flow.id, aux),
        }
        SpanGuard {
            exit: Some(Exit {
                loc: exit,
                len,
                flow: flow.id,
                aux,
            }),
            _thread_bound: PhantomData,
        }
    }
    #[cfg(not(feature = "probes"))]
    {
        let _ = (enter, exit, flow, args, stamp.into());
        SpanGuard {
            _thread_bound: PhantomData,
        }
    }
}
