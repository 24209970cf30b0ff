//! Trace → Perfetto timeline: Chrome JSON trace events, or Perfetto's
//! native protobuf (`perfetto_proto`, written from the same events).
//!
//! * A span becomes one `"X"` (complete) slice with `ts` and `dur`, so
//!   spans that overlap without nesting (queue-crossing spans, reassembly)
//!   are drawn as they happened. An exit location named `NAME.exit` closes
//!   an open `NAME.enter` of the same thread, preferring one with the same
//!   flow and aux (DESIGN.md: aux pairs head with end), else the latest.
//!   An exit with no such enter, or an enter never closed, is counted in
//!   the summary, not drawn.
//! * enqueue / dequeue → `"C"` counter of that queue's length on that
//!   thread (each host of the threaded runner has its own queues), named
//!   `QUEUE (thread N)`. A dequeue at length 0 (the trace began with
//!   packets queued) keeps the counter at 0 and is counted.
//! * point → `"i"` instant, thread scope.
//!
//! Each thread's records keep their file order (the order they happened
//! on that thread) even if the counter stepped back across a core
//! migration: a thread's timestamps are clamped to never decrease. `ts` is
//! microseconds since the earliest record; pid is 1, tid the record's
//! thread. Events are written in time order.
//!
//! [`write_perfetto_annotated`] adds what an analysis found: named threads
//! (`thread_name` metadata) and slices on tracks of their own (a
//! message's whole path, its send path, its receive path), each from one
//! counter value to another of the same clock. [`write_timeline`] writes
//! several traces as processes of one timeline, in either format.

use super::Timebase;
use crate::location::Kind;
use crate::record::Record;
use crate::trace_file::{LocationEntry, Trace, TraceError};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

/// What the conversion did with the records; a report shows these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerfettoSummary {
    /// Events written.
    pub events: u64,
    /// Exits with no open enter of the same span on their thread.
    pub unmatched_exits: u64,
    /// Enters never closed by the end of the trace.
    pub unclosed_spans: u64,
    /// Spans closed while a later-opened span on the same thread was still
    /// open (they overlap instead of nesting).
    pub interleaved_spans: u64,
    /// Dequeues seen at queue length 0.
    pub dequeues_below_zero: u64,
    /// Records whose counter value was below an earlier one of their thread.
    pub clamped_timestamps: u64,
}

/// A slice an analysis adds: `name` on its own track `track` (tracks
/// with equal names share a row), from counter value `begin` to `end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub track: String,
    pub name: String,
    pub begin: u64,
    pub end: u64,
}

/// Rows for annotation tracks start here, above any recorder thread
/// number.
pub(super) const ANNOTATION_TID: u32 = 1 << 16;

/// One trace event as the JSON writes it; the protobuf writer
/// (`perfetto_proto`) reads the same list.
#[derive(Serialize)]
pub(super) struct Event<'a> {
    pub(super) name: Cow<'a, str>,
    pub(super) cat: String,
    pub(super) ph: &'static str,
    /// Microseconds since the timeline's origin.
    pub(super) ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) dur: Option<f64>,
    pub(super) pid: u32,
    pub(super) tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) s: Option<&'static str>,
    pub(super) args: Args<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Args<'a> {
    Probe {
        len: u32,
        flow: u32,
        aux: u64,
        loc: &'a str,
    },
    Counter {
        length: u64,
    },
    Name {
        name: &'a str,
    },
    None {},
}

/// An enter waiting for its exit.
struct OpenSpan<'a> {
    stem: &'a str,
    enter: &'a LocationEntry,
    record: &'a Record,
    ts: f64,
}

/// The span a location opens or closes: its name without `.enter`/`.exit`.
fn span_stem(name: &str) -> &str {
    name.strip_suffix(".enter")
        .or_else(|| name.strip_suffix(".exit"))
        .unwrap_or(name)
}

/// Records in time order, each thread's in file order, with each thread's
/// counter values clamped to never decrease.
fn ordered<'a>(records: &'a [Record], summary: &mut PerfettoSummary) -> Vec<(u64, &'a Record)> {
    let mut latest: HashMap<u16, u64> = HashMap::new();
    let mut order: Vec<(u64, &Record)> = records
        .iter()
        .map(|r| {
            let seen = latest.entry(r.thread).or_insert(r.tsc);
            if r.tsc < *seen {
                summary.clamped_timestamps += 1;
            } else {
                *seen = r.tsc;
            }
            (*seen, r)
        })
        .collect();
    // Stable: equal stamps keep file order.
    order.sort_by_key(|(tsc, _)| *tsc);
    order
}

/// Writes `{"traceEvents": [...], "displayTimeUnit": "ns"}`.
pub fn write_perfetto(trace: &Trace, out: impl Write) -> Result<PerfettoSummary, TraceError> {
    write_perfetto_annotated(trace, &[], &[], out)
}

/// As [`write_perfetto`], with `thread_names` (recorder thread number,
/// name) and `annotations` drawn on tracks of their own.
pub fn write_perfetto_annotated(
    trace: &Trace,
    thread_names: &[(u16, String)],
    annotations: &[Annotation],
    out: impl Write,
) -> Result<PerfettoSummary, TraceError> {
    let process = TimelineProcess {
        trace,
        pid: 1,
        name: None,
        thread_names: thread_names.to_vec(),
        annotations,
        origin: None,
    };
    write_timeline(&[process], TimelineFormat::Json, out)
}

/// A timeline file's format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimelineFormat {
    /// Perfetto's native protobuf trace (a stream of TracePackets).
    #[default]
    Protobuf,
    /// Chrome trace-event JSON.
    Json,
}

impl TimelineFormat {
    /// The file name extension a viewer expects.
    pub fn extension(self) -> &'static str {
        match self {
            TimelineFormat::Protobuf => "pftrace",
            TimelineFormat::Json => "json",
        }
    }
}

/// One process on a timeline: a trace, its names and what an analysis
/// found in it.
pub struct TimelineProcess<'a> {
    pub trace: &'a Trace,
    /// Process id on the timeline; distinct per process (the protobuf
    /// writer derives track ids and its packet sequence from it).
    pub pid: u32,
    /// The process's name (none: left unnamed).
    pub name: Option<String>,
    /// (recorder thread number, name).
    pub thread_names: Vec<(u16, String)>,
    pub annotations: &'a [Annotation],
    /// The counter value drawn at time 0 (none: the trace's earliest
    /// record). Processes whose traces stamp one clock share it so their
    /// events line up; records before it are drawn at 0.
    pub origin: Option<u64>,
}

/// Writes `processes` as one timeline in `format`; the summary adds up
/// every process's.
pub fn write_timeline(
    processes: &[TimelineProcess],
    format: TimelineFormat,
    out: impl Write,
) -> Result<PerfettoSummary, TraceError> {
    let mut summary = PerfettoSummary::default();
    let mut all = Vec::with_capacity(processes.len());
    for p in processes {
        let (events, one) = process_events(p)?;
        summary.events += one.events;
        summary.unmatched_exits += one.unmatched_exits;
        summary.unclosed_spans += one.unclosed_spans;
        summary.interleaved_spans += one.interleaved_spans;
        summary.dequeues_below_zero += one.dequeues_below_zero;
        summary.clamped_timestamps += one.clamped_timestamps;
        all.push((p.pid, p.name.as_deref(), events));
    }
    match format {
        TimelineFormat::Json => write_json(&all, out)?,
        TimelineFormat::Protobuf => super::perfetto_proto::write(&all, out)?,
    }
    Ok(summary)
}

/// Names for a trace's threads from its description: the reference
/// stack's writers name each thread's host (`{"threads": {"N": {"host":
/// …}}}`), the kernel probes' threads are CPUs. The lab's timelines and
/// `trace perfetto` both name threads this way.
pub fn thread_names(trace: &Trace) -> Vec<(u16, String)> {
    let mut threads: Vec<u16> = trace.records.iter().map(|r| r.thread).collect();
    threads.sort_unstable();
    threads.dedup();
    let described: Option<serde_json::Value> = serde_json::from_str(&trace.header.description).ok();
    if let Some(map) = described
        .as_ref()
        .and_then(|d| d.get("threads"))
        .and_then(|t| t.as_object())
    {
        return map
            .iter()
            .filter_map(|(id, t)| Some((id.parse().ok()?, t.get("host")?.as_str()?.to_string())))
            .collect();
    }
    if trace.header.description.contains(KERNEL_MARK) {
        return threads
            .into_iter()
            .map(|cpu| (cpu, format!("kernel, CPU {cpu}")))
            .collect();
    }
    Vec::new()
}

/// What the kernel probes' trace descriptions say (kernel-probe's session).
const KERNEL_MARK: &str = "kernel probes (eBPF)";

/// A process name for a trace: the reference stack's description names
/// its run, the kernel probes' is text.
pub fn process_name(trace: &Trace) -> String {
    let text = &trace.header.description;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(d) => match (d["run"].as_str(), d["stack"].as_str()) {
            (Some(run), Some(stack)) => format!("{run} ({stack} stack)"),
            (Some(run), None) => run.to_string(),
            _ => text.clone(),
        },
        Err(_) => text.clone(),
    }
}

/// One process's events (metadata first, then in time order) and what the
/// conversion did.
fn process_events<'a>(
    p: &'a TimelineProcess<'a>,
) -> Result<(Vec<Event<'a>>, PerfettoSummary), TraceError> {
    let trace = p.trace;
    let (thread_names, annotations) = (&p.thread_names, p.annotations);
    trace.validate()?;
    let mut summary = PerfettoSummary::default();
    let order = ordered(&trace.records, &mut summary);
    let time = Timebase {
        start: p
            .origin
            .unwrap_or_else(|| order.first().map_or(0, |(tsc, _)| *tsc)),
        hz: trace.header.counter_hz,
    };
    let mut open: HashMap<u16, Vec<OpenSpan>> = HashMap::new();
    // Per (thread, queue): the counter track's name and the queue length.
    let mut queues: HashMap<(u16, &str), (String, u64)> = HashMap::new();
    let mut events: Vec<Event> = Vec::new();

    for (tsc, r) in order {
        let Some(l) = trace.location(r) else { continue };
        let ts = time.ns(tsc) / 1000.0;
        match l.kind {
            Kind::SpanEnter => open.entry(r.thread).or_default().push(OpenSpan {
                stem: span_stem(&l.name),
                enter: l,
                record: r,
                ts,
            }),
            Kind::SpanExit => {
                let stack = open.entry(r.thread).or_default();
                let stem = span_stem(&l.name);
                let same_stem = |s: &&OpenSpan| s.stem == stem;
                let exact = stack.iter().rposition(|s| {
                    same_stem(&s) && s.record.flow == r.flow && s.record.aux == r.aux
                });
                let Some(at) = exact.or_else(|| stack.iter().rposition(|s| same_stem(&s))) else {
                    summary.unmatched_exits += 1;
                    continue;
                };
                if at + 1 != stack.len() {
                    summary.interleaved_spans += 1;
                }
                let span = stack.remove(at);
                events.push(Event {
                    dur: Some(ts - span.ts),
                    ..probe_event(span.stem, span.enter, "X", span.ts, span.record)
                });
            }
            Kind::Point => events.push(Event {
                s: Some("t"),
                ..probe_event(&l.name, l, "i", ts, r)
            }),
            Kind::Enqueue | Kind::Dequeue => {
                let queue = l.queue.as_deref().unwrap_or(&l.name);
                let (name, length) = queues
                    .entry((r.thread, queue))
                    .or_insert_with(|| (format!("{queue} (thread {})", r.thread), 0));
                if l.kind == Kind::Enqueue {
                    *length += 1;
                } else if *length == 0 {
                    summary.dequeues_below_zero += 1;
                } else {
                    *length -= 1;
                }
                events.push(Event {
                    name: Cow::Owned(name.clone()),
                    cat: category(l),
                    ph: "C",
                    ts,
                    dur: None,
                    pid: 1,
                    tid: u32::from(r.thread),
                    s: None,
                    args: Args::Counter { length: *length },
                });
            }
        }
    }
    summary.unclosed_spans = open.values().map(|s| s.len() as u64).sum();
    let mut tracks: Vec<&str> = Vec::new();
    for a in annotations {
        let row = match tracks.iter().position(|t| *t == a.track) {
            Some(row) => row,
            None => {
                tracks.push(&a.track);
                tracks.len() - 1
            }
        };
        let begin = time.ns(a.begin.max(time.start)) / 1000.0;
        let end = time.ns(a.end.max(a.begin).max(time.start)) / 1000.0;
        events.push(Event {
            name: Cow::Borrowed(&a.name),
            cat: "analysis".into(),
            ph: "X",
            ts: begin,
            dur: Some(end - begin),
            pid: 1,
            tid: ANNOTATION_TID + row as u32,
            s: None,
            args: Args::None {},
        });
    }
    // Slices are emitted when they close; put everything in time order.
    events.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    // Names first: metadata has no time.
    let names = thread_names
        .iter()
        .map(|(thread, name)| (u32::from(*thread), name.as_str()))
        .chain(
            tracks
                .iter()
                .enumerate()
                .map(|(row, name)| (ANNOTATION_TID + row as u32, *name)),
        );
    let process = p.name.as_deref().map(|name| Event {
        name: Cow::Borrowed("process_name"),
        cat: "__metadata".into(),
        ph: "M",
        ts: 0.0,
        dur: None,
        pid: p.pid,
        tid: 0,
        s: None,
        args: Args::Name { name },
    });
    let metadata: Vec<Event> = process
        .into_iter()
        .chain(names.map(|(tid, name)| Event {
            name: Cow::Borrowed("thread_name"),
            cat: "__metadata".into(),
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: p.pid,
            tid,
            s: None,
            args: Args::Name { name },
        }))
        .collect();
    let mut events: Vec<Event> = metadata.into_iter().chain(events).collect();
    for e in &mut events {
        e.pid = p.pid;
    }
    summary.events = events.len() as u64;
    Ok((events, summary))
}

/// `{"traceEvents": [...], "displayTimeUnit": "ns"}`, processes one after
/// the other.
fn write_json(
    processes: &[(u32, Option<&str>, Vec<Event>)],
    out: impl Write,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    out.write_all(b"{\"traceEvents\":[")?;
    let events = processes.iter().flat_map(|(_, _, events)| events);
    for (i, event) in events.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, event).map_err(std::io::Error::from)?;
    }
    out.write_all(b"],\"displayTimeUnit\":\"ns\"}")?;
    out.flush()
}

fn probe_event<'a>(
    name: &'a str,
    l: &'a LocationEntry,
    ph: &'static str,
    ts: f64,
    r: &Record,
) -> Event<'a> {
    Event {
        name: Cow::Borrowed(name),
        cat: category(l),
        ph,
        ts,
        dur: None,
        pid: 1,
        tid: u32::from(r.thread),
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
