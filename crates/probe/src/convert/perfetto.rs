//! Trace → Chrome / Perfetto JSON trace events.
//!
//! * span enter → `"B"`, span exit → `"E"`, paired per thread like a call
//!   stack; the `E` carries the name of the span it closes (the exit
//!   location's own name is in its args). An exit with no open span on its
//!   thread (its enter was before the trace or dropped) is skipped.
//! * enqueue / dequeue → `"C"` counter named after the queue whose value
//!   is the running queue length (never below 0: a trace may start with
//!   packets already queued).
//! * point → `"i"` instant, thread scope.
//!
//! Events are in time order; `ts` is microseconds since the earliest
//! record; pid is 1 and tid the record's thread. Span and instant events
//! carry `len`, `flow` and `aux` in `args` (counters carry only the
//! length, since every counter arg is drawn as a series).

use super::Timebase;
use crate::location::Kind;
use crate::record::Record;
use crate::trace_file::{LocationEntry, Trace, TraceError};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;

/// What the conversion did with the records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerfettoSummary {
    /// Events written.
    pub events: u64,
    /// Exits skipped for lack of an open span on their thread.
    pub unmatched_exits: u64,
    /// Spans still open at the end of the trace.
    pub unclosed_spans: u64,
}

#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    cat: String,
    ph: &'static str,
    ts: f64,
    pid: u32,
    tid: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    args: Args<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Probe {
        len: u32,
        flow: u32,
        aux: u64,
        loc: &'a str,
    },
    Counter {
        length: u64,
    },
}

/// Writes `{"traceEvents": [...], "displayTimeUnit": "ns"}`.
pub fn write_perfetto(trace: &Trace, out: impl Write) -> Result<PerfettoSummary, TraceError> {
    trace.validate()?;
    let mut out = std::io::BufWriter::new(out);
    let time = Timebase::of(&trace.records, trace.header.counter_hz);

    // Time order across threads; the stable sort keeps each thread's own
    // order for equal stamps.
    let mut order: Vec<&Record> = trace.records.iter().collect();
    order.sort_by_key(|r| r.tsc);

    let mut summary = PerfettoSummary::default();
    let mut open: HashMap<u16, Vec<&str>> = HashMap::new();
    let mut queues: HashMap<&str, u64> = HashMap::new();

    out.write_all(b"{\"traceEvents\":[")?;
    for r in order {
        let Some(l) = trace.location(r) else { continue };
        let ts = time.ns(r.tsc) / 1000.0;
        let event = match l.kind {
            Kind::SpanEnter => {
                open.entry(r.thread).or_default().push(&l.name);
                probe_event(&l.name, l, "B", ts, r)
            }
            Kind::SpanExit => match open.get_mut(&r.thread).and_then(Vec::pop) {
                Some(name) => probe_event(name, l, "E", ts, r),
                None => {
                    summary.unmatched_exits += 1;
                    continue;
                }
            },
            Kind::Point => Event {
                s: Some("t"),
                ..probe_event(&l.name, l, "i", ts, r)
            },
            Kind::Enqueue | Kind::Dequeue => {
                let queue = l.queue.as_deref().unwrap_or(&l.name);
                let length = queues.entry(queue).or_default();
                *length = if l.kind == Kind::Enqueue {
                    length.saturating_add(1)
                } else {
                    length.saturating_sub(1)
                };
                Event {
                    name: queue,
                    cat: category(l),
                    ph: "C",
                    ts,
                    pid: 1,
                    tid: r.thread,
                    s: None,
                    args: Args::Counter { length: *length },
                }
            }
        };
        if summary.events > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &event).map_err(std::io::Error::from)?;
        summary.events += 1;
    }
    out.write_all(b"],\"displayTimeUnit\":\"ns\"}")?;
    out.flush()?;
    summary.unclosed_spans = open.values().map(|s| s.len() as u64).sum();
    Ok(summary)
}

fn probe_event<'a>(
    name: &'a str,
    l: &'a LocationEntry,
    ph: &'static str,
    ts: f64,
    r: &Record,
) -> Event<'a> {
    Event {
        name,
        cat: category(l),
        ph,
        ts,
        pid: 1,
        tid: r.thread,
        s: None,
        args: Args::Probe {
            len: r.len,
            flow: r.flow,
            aux: r.aux,
            loc: &l.name,
        },
    }
}

/// Chrome categories are a comma-separated list: layer and cost category.
fn category(l: &LocationEntry) -> String {
    format!("{},{}", l.layer, l.category)
}
