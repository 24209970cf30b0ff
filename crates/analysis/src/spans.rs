//! Spans rebuilt from one thread's enter and exit records, nested as they
//! ran, with the probes' own cost taken out (the IPv6 study's method,
//! `000_…` §4.3.5).
//!
//! Between two consecutive timestamps lies the real work plus one probe's
//! overhead `o`, so a span whose enter and exit are `k` counter reads
//! apart took `(exit - enter) - o·k` of real work (`inclusive`; records
//! that shared a read count once, [`TraceView::probe_steps`]); its `exclusive` time
//! is that minus its children's inclusive time. Both are clamped at 0.
//!
//! Spans of category `instrumentation` (the tool's own work that cannot
//! leave a window, e.g. a capture's copy of a frame in a message's send
//! path, or the runner's wake-up of another thread) are kept, so they can be reported, but their time is
//! not the stack's: it is taken out of the inclusive time of every span
//! around them (and so of their parent's exclusive time), and
//! [`ThreadSpans::instrumentation_between`] gives what a window of records
//! holds of it, for latencies to subtract.

use probe::{Category, Kind, Record};

use crate::view::TraceView;

/// One closed span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Location of the enter record.
    pub enter: u16,
    pub category: Category,
    /// Counter values of the enter and exit records.
    pub start: u64,
    pub end: u64,
    /// Positions of the enter and exit records in the thread's records.
    pub enter_index: usize,
    pub exit_index: usize,
    pub len: u32,
    pub flow: u32,
    pub depth: u16,
    /// Index in [`ThreadSpans::spans`] of the enclosing span.
    pub parent: Option<usize>,
    /// Corrected time, counter units.
    pub inclusive: f64,
    pub exclusive: f64,
}

impl Span {
    /// The tool's own work, not the stack's.
    pub fn is_instrumentation(&self) -> bool {
        self.category == Category::Instrumentation
    }
}

/// Every span of one thread, ordered by enter record.
#[derive(Debug, Clone, Default)]
pub struct ThreadSpans {
    pub spans: Vec<Span>,
    /// Exits with no open enter of the same span (their enter was before
    /// the trace, or dropped).
    pub unmatched_exits: u64,
    /// Enters never closed (the trace ended, or an exit was dropped).
    pub unclosed: u64,
}

impl ThreadSpans {
    /// Counter units of instrumentation inside records `from..=to` of the
    /// thread: the inclusive time of the instrumentation spans wholly
    /// inside (with their probes' cost already out, as every inclusive
    /// time). Nested instrumentation is counted once.
    pub fn instrumentation_between(&self, from: usize, to: usize) -> f64 {
        let first = self.spans.partition_point(|s| s.enter_index < from);
        self.spans[first..]
            .iter()
            .take_while(|s| s.enter_index <= to)
            .filter(|s| s.is_instrumentation() && s.exit_index <= to)
            .map(|s| s.inclusive)
            .sum()
    }
}

struct Open {
    slot: usize,
    /// Inclusive time of the children (instrumentation left out).
    children: f64,
    /// Instrumentation time nested inside, at any depth.
    instrumentation: f64,
}

/// Rebuilds the spans of one thread's `records` (file order).
pub fn rebuild(view: &TraceView, records: &[Record]) -> ThreadSpans {
    let o = view.overhead_cycles.max(0.0);
    let mut out = ThreadSpans::default();
    // Spans are stored when they open (so they are ordered by enter) and
    // completed when they close; slots never closed are removed at the end.
    let mut slots: Vec<Option<Span>> = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let Some(site) = view.sites.get(r.loc as usize) else {
            continue;
        };
        match site.kind {
            Kind::SpanEnter => {
                let parent = stack.last().map(|o| o.slot);
                slots.push(Some(Span {
                    enter: r.loc,
                    category: site.category,
                    start: r.tsc,
                    end: r.tsc,
                    enter_index: i,
                    exit_index: i,
                    len: r.len,
                    flow: r.flow,
                    depth: stack.len().min(u16::MAX as usize) as u16,
                    parent,
                    inclusive: 0.0,
                    exclusive: 0.0,
                }));
                stack.push(Open {
                    slot: slots.len() - 1,
                    children: 0.0,
                    instrumentation: 0.0,
                });
            }
            Kind::SpanExit => {
                let Some(enter) = site.partner else {
                    out.unmatched_exits += 1;
                    continue;
                };
                let is_enter =
                    |open: &Open| slots[open.slot].as_ref().is_some_and(|s| s.enter == enter);
                let Some(at) = stack.iter().rposition(is_enter) else {
                    out.unmatched_exits += 1;
                    continue;
                };
                // Spans opened inside and never closed are abandoned.
                while stack.len() > at + 1 {
                    if let Some(open) = stack.pop() {
                        slots[open.slot] = None;
                        out.unclosed += 1;
                    }
                }
                let Some(open) = stack.pop() else { continue };
                let Some(span) = slots[open.slot].as_mut() else {
                    continue;
                };
                let inner = view.probe_steps(records, span.enter_index, i) as f64;
                let raw = r.tsc.saturating_sub(span.start) as f64;
                span.end = r.tsc.max(span.start);
                span.exit_index = i;
                // Instrumentation inside is not this span's time (nor, for
                // an instrumentation span, its own: it is counted there).
                span.inclusive = (raw - o * inner - open.instrumentation).max(0.0);
                span.exclusive = (span.inclusive - open.children).max(0.0);
                let (inclusive, instrumentation) = (span.inclusive, span.is_instrumentation());
                if let Some(parent) = stack.last_mut() {
                    if instrumentation {
                        parent.instrumentation += inclusive + open.instrumentation;
                    } else {
                        parent.children += inclusive;
                        parent.instrumentation += open.instrumentation;
                    }
                }
            }
            _ => {}
        }
    }
    out.unclosed += stack.len() as u64;
    for open in stack {
        slots[open.slot] = None;
    }
    // Parents are referred to by slot; renumber to the kept spans.
    let mut renumber = vec![None; slots.len()];
    let mut kept = 0usize;
    for (slot, span) in slots.iter().enumerate() {
        if span.is_some() {
            renumber[slot] = Some(kept);
            kept += 1;
        }
    }
    out.spans = slots
        .into_iter()
        .flatten()
        .map(|mut s| {
            s.parent = s.parent.and_then(|p| renumber[p]);
            s
        })
        .collect();
    out
}
