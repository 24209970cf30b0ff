//! The four IPC queues of the SunOS study (`001_…` §2 and Figures 11–16),
//! and the device's transmit ring after the interface queue (the fifth):
//! for each queue of the trace's location table and each thread that fired
//! its probes, the queue's length over time in packets and bytes, the
//! delay of what passed through it, its arrival and departure rates, and
//! summary figures.
//!
//! Queues are found by the `queue` name of the enqueue and dequeue
//! locations in the trace's own table (`send_socket`, `interface`,
//! `ip_input`, `receive_socket` and `device` in the reference stack), never
//! by number.
//!
//! **Pairing** (docs/probe.md, "Queue pairing"), per flow of a queue:
//!
//! * a *byte stream* (TCP's send and receive socket queues) records byte
//!   counts in `len` and the stream offset reached in `aux`: an enqueue
//!   covers the bytes from the previous enqueue's offset (or, the first
//!   time, from `aux - len`) up to `aux`; a dequeue takes every queued
//!   byte below its `aux`. A byte's delay runs from the enqueue that
//!   covered it to the first dequeue that does. A flow is a byte stream
//!   when every enqueue and every dequeue advances `aux` by exactly its
//!   `len` (`len > 0`, and the first one's `aux ≥ len`), as the stack's
//!   stream probes do; when a datagram flow happens to satisfy this too,
//!   both pairings give the same answer.
//! * otherwise the queue is a FIFO of *datagrams* per (flow, `aux`): a
//!   socket's datagram queues number messages in `aux` (so the key is one
//!   message), the interface and IP input queues put the interface number
//!   in `aux` (so the key is one interface's FIFO, which each flow's
//!   frames keep in order).
//!
//! A dequeue that takes nothing queued in the trace (it was queued before
//! the trace began) is counted in `unmatched_dequeues`, never a panic; the
//! length never goes below zero. Within a thread, a counter that steps
//! back (a core migration) is clamped so time never decreases, so every
//! delay is `≥ 0`.
//!
//! Times are nanoseconds since the trace's earliest record (as the CSV
//! converter counts them).

use std::collections::{BTreeMap, VecDeque};

use probe::Kind;
use serde::Serialize;

use crate::histogram::{Histogram, Summary};
use crate::view::TraceView;

/// Default bound on the points of a length series.
pub const DEFAULT_MAX_POINTS: usize = 4_000;
/// Default width of a rate window: 1 ms.
pub const DEFAULT_WINDOW_NS: f64 = 1e6;

/// How finely to report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueOptions {
    /// Most points in each length series (at least 4); a longer series is
    /// cut into stretches of which the maximum and the last point are
    /// kept, so peaks survive.
    pub max_points: usize,
    /// Width of the rate windows, nanoseconds (not finite or `≤ 0` means
    /// the default).
    pub window_ns: f64,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            max_points: DEFAULT_MAX_POINTS,
            window_ns: DEFAULT_WINDOW_NS,
        }
    }
}

/// The queue's length after an event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LengthPoint {
    pub t_ns: f64,
    /// Datagrams queued; for a byte stream, writes (enqueues) with bytes
    /// still queued.
    pub packets: u64,
    pub bytes: u64,
}

/// One dequeue that took something queued in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DelaySample {
    /// When it was dequeued.
    pub t_ns: f64,
    /// Delay of the oldest byte it took (a datagram's delay).
    pub delay_ns: f64,
    /// Byte-weighted mean delay of what it took (a datagram's delay).
    pub mean_delay_ns: f64,
    /// Bytes it took that had been queued in the trace.
    pub bytes: u64,
    pub flow: u32,
}

/// Arrivals and departures in one window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateWindow {
    /// Start of the window.
    pub t_ns: f64,
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub departures: u64,
    pub departure_bytes: u64,
    /// The counts divided by the window's width (the last window too).
    pub arrival_packets_per_s: f64,
    pub arrival_bytes_per_s: f64,
    pub departure_packets_per_s: f64,
    pub departure_bytes_per_s: f64,
}

/// Rates over the queue's active interval (its first to its last event
/// on the thread); 0 when that interval is empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rates {
    pub active_ns: f64,
    pub arrival_packets_per_s: f64,
    pub arrival_bytes_per_s: f64,
    pub departure_packets_per_s: f64,
    pub departure_bytes_per_s: f64,
}

/// What was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub enqueues: u64,
    pub dequeues: u64,
    /// Bytes the probes recorded (`len`).
    pub enqueued_bytes: u64,
    pub dequeued_bytes: u64,
    /// Dequeues paired with something queued in the trace.
    pub matched_dequeues: u64,
    /// Dequeues of what was queued before the trace began.
    pub unmatched_dequeues: u64,
    /// Bytes dequeued that were queued before the trace began.
    pub unmatched_bytes: u64,
    /// Byte-stream records that contradict the stream's offsets (an
    /// offset that does not advance): ignored.
    pub inconsistent: u64,
    /// Still queued when the trace ended.
    pub left_packets: u64,
    pub left_bytes: u64,
    /// Flows paired as datagrams and as byte streams.
    pub datagram_flows: u64,
    pub stream_flows: u64,
}

/// Summary figures; lengths are maxima and time-weighted means over the
/// active interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct QueueStats {
    pub max_packets: u64,
    pub max_bytes: u64,
    pub mean_packets: f64,
    pub mean_bytes: f64,
    /// Of the samples' `delay_ns`.
    pub delay: Option<Summary>,
}

/// One queue on one thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueTrace {
    /// The locations' `queue` name.
    pub queue: String,
    pub thread: u16,
    pub counts: QueueCounts,
    /// A step series: each point holds until the next; at most
    /// `max_points`.
    pub length: Vec<LengthPoint>,
    /// Points before downsampling (one per event).
    pub length_events: u64,
    /// One per matched dequeue, in order.
    pub delays: Vec<DelaySample>,
    pub rates: Rates,
    /// Width of the rate windows actually used.
    pub window_ns: f64,
    /// Fixed windows from the first event on, in order. Only windows with
    /// events are listed, each followed by the next window when that one
    /// is empty (rates 0), so a plot drops to zero in a quiet stretch and
    /// the list is never longer than twice the events.
    pub windows: Vec<RateWindow>,
    pub stats: QueueStats,
}

impl QueueTrace {
    /// The distribution of the delay samples (`delay_ns`).
    pub fn delay_histogram(&self, bins_per_decade: u32) -> Histogram {
        Histogram::from_samples(self.delays.iter().map(|d| d.delay_ns), bins_per_decade)
    }
}

/// The queue names of the trace's location table, in table order.
pub fn queue_names(view: &TraceView) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for site in &view.sites {
        if !matches!(site.kind, Kind::Enqueue | Kind::Dequeue) {
            continue;
        }
        if let Some(q) = &site.queue {
            if !names.contains(q) {
                names.push(q.clone());
            }
        }
    }
    names
}

/// One queue event, time already relative and clamped.
#[derive(Debug, Clone, Copy)]
struct Event {
    t: f64,
    enqueue: bool,
    len: u32,
    flow: u32,
    aux: u64,
}

/// Every queue of the table on every thread that fired its probes: by
/// queue in table order, then by thread.
pub fn analyse(view: &TraceView, options: &QueueOptions) -> Vec<QueueTrace> {
    let names = queue_names(view);
    // Per location: (queue index, is enqueue).
    let role: Vec<Option<(usize, bool)>> = view
        .sites
        .iter()
        .map(|site| {
            let enqueue = match site.kind {
                Kind::Enqueue => true,
                Kind::Dequeue => false,
                _ => return None,
            };
            let q = names.iter().position(|n| Some(n) == site.queue.as_ref())?;
            Some((q, enqueue))
        })
        .collect();
    let origin = view.first_tsc();
    let mut out: Vec<(usize, QueueTrace)> = Vec::new();
    for (&thread, records) in &view.threads {
        let mut events: Vec<Vec<Event>> = vec![Vec::new(); names.len()];
        let mut last = origin;
        for r in records {
            // Time never decreases within a thread.
            last = last.max(r.tsc);
            let Some(Some((q, enqueue))) = role.get(r.loc as usize) else {
                continue;
            };
            events[*q].push(Event {
                t: view.ns((last - origin) as f64),
                enqueue: *enqueue,
                len: r.len,
                flow: r.flow,
                aux: r.aux,
            });
        }
        for (q, events) in events.into_iter().enumerate() {
            if !events.is_empty() {
                out.push((q, one_queue(&names[q], thread, &events, options)));
            }
        }
    }
    out.sort_by_key(|(q, t)| (*q, t.thread));
    out.into_iter().map(|(_, t)| t).collect()
}

/// Per flow: is it a byte stream (see the module docs)?
fn stream_flows(events: &[Event]) -> BTreeMap<u32, bool> {
    // Per flow: last enqueue offset, last dequeue offset, still a stream.
    let mut check: BTreeMap<u32, (Option<u64>, Option<u64>, bool)> = BTreeMap::new();
    for e in events {
        let state = check.entry(e.flow).or_insert((None, None, true));
        let last = if e.enqueue {
            &mut state.0
        } else {
            &mut state.1
        };
        let len = u64::from(e.len);
        let advances = len > 0
            && match *last {
                None => e.aux >= len,
                Some(prev) => prev.checked_add(len) == Some(e.aux),
            };
        state.2 &= advances;
        *last = Some(e.aux);
    }
    check.into_iter().map(|(flow, s)| (flow, s.2)).collect()
}

/// A stretch of a byte stream still queued: offsets `[start, end)`.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    start: u64,
    end: u64,
    t: f64,
}

#[derive(Default)]
struct Stream {
    enq_high: Option<u64>,
    deq_low: Option<u64>,
    chunks: VecDeque<Chunk>,
}

fn one_queue(name: &str, thread: u16, events: &[Event], options: &QueueOptions) -> QueueTrace {
    let streams = stream_flows(events);
    let mut counts = QueueCounts {
        stream_flows: streams.values().filter(|&&s| s).count() as u64,
        datagram_flows: streams.values().filter(|&&s| !s).count() as u64,
        ..QueueCounts::default()
    };
    let t0 = events.first().map_or(0.0, |e| e.t);
    let t1 = events.last().map_or(t0, |e| e.t);
    let active = (t1 - t0).max(0.0);
    let window_ns = if options.window_ns.is_finite() && options.window_ns > 0.0 {
        options.window_ns
    } else {
        DEFAULT_WINDOW_NS
    };
    // Window number → (arrivals, arrival bytes, departures, departure bytes).
    let mut counted: BTreeMap<u64, (u64, u64, u64, u64)> = BTreeMap::new();

    let mut fifos: BTreeMap<(u32, u64), VecDeque<(f64, u64)>> = BTreeMap::new();
    let mut stream_state: BTreeMap<u32, Stream> = BTreeMap::new();
    let (mut packets, mut bytes) = (0u64, 0u64);
    let (mut max_packets, mut max_bytes) = (0u64, 0u64);
    let (mut area_packets, mut area_bytes) = (0.0f64, 0.0f64);
    let mut prev_t = t0;
    let mut length: Vec<LengthPoint> = Vec::with_capacity(events.len());
    let mut delays: Vec<DelaySample> = Vec::new();

    for e in events {
        area_packets += packets as f64 * (e.t - prev_t);
        area_bytes += bytes as f64 * (e.t - prev_t);
        prev_t = e.t;
        let len = u64::from(e.len);
        // Saturating: a window number past u64 shares the last window.
        let window = counted.entry(((e.t - t0) / window_ns) as u64).or_default();
        let is_stream = streams.get(&e.flow).copied().unwrap_or(false);
        if e.enqueue {
            counts.enqueues += 1;
            counts.enqueued_bytes = counts.enqueued_bytes.saturating_add(len);
            window.0 += 1;
            window.1 = window.1.saturating_add(len);
            if is_stream {
                let s = stream_state.entry(e.flow).or_default();
                let start = s
                    .enq_high
                    .unwrap_or_else(|| e.aux.saturating_sub(len))
                    .max(s.deq_low.unwrap_or(0));
                if e.aux > start {
                    s.chunks.push_back(Chunk {
                        start,
                        end: e.aux,
                        t: e.t,
                    });
                    packets += 1;
                    bytes = bytes.saturating_add(e.aux - start);
                    s.enq_high = Some(e.aux);
                } else {
                    counts.inconsistent += 1;
                }
            } else {
                fifos
                    .entry((e.flow, e.aux))
                    .or_default()
                    .push_back((e.t, len));
                packets += 1;
                bytes = bytes.saturating_add(len);
            }
        } else {
            counts.dequeues += 1;
            counts.dequeued_bytes = counts.dequeued_bytes.saturating_add(len);
            window.2 += 1;
            window.3 = window.3.saturating_add(len);
            if is_stream {
                let s = stream_state.entry(e.flow).or_default();
                let from = s.deq_low.unwrap_or_else(|| e.aux.saturating_sub(len));
                if e.aux <= from {
                    counts.inconsistent += 1;
                } else {
                    let mut matched = 0u64;
                    let mut weighted = 0.0f64;
                    let mut oldest: Option<f64> = None;
                    while let Some(front) = s.chunks.front_mut() {
                        if front.start >= e.aux {
                            break;
                        }
                        let end = front.end.min(e.aux);
                        let n = end - front.start;
                        matched += n;
                        weighted += n as f64 * (e.t - front.t);
                        oldest.get_or_insert(front.t);
                        bytes = bytes.saturating_sub(n);
                        if end == front.end {
                            s.chunks.pop_front();
                            packets = packets.saturating_sub(1);
                        } else {
                            front.start = end;
                        }
                    }
                    counts.unmatched_bytes += (e.aux - from).saturating_sub(matched);
                    s.deq_low = Some(e.aux);
                    match oldest {
                        Some(t_enq) => {
                            counts.matched_dequeues += 1;
                            delays.push(DelaySample {
                                t_ns: e.t,
                                delay_ns: e.t - t_enq,
                                // Rounding must not put the mean past the oldest.
                                mean_delay_ns: (weighted / matched as f64).min(e.t - t_enq),
                                bytes: matched,
                                flow: e.flow,
                            });
                        }
                        None => counts.unmatched_dequeues += 1,
                    }
                }
            } else {
                let key = (e.flow, e.aux);
                let queued = fifos.get_mut(&key).and_then(VecDeque::pop_front);
                if fifos.get(&key).is_some_and(VecDeque::is_empty) {
                    fifos.remove(&key);
                }
                match queued {
                    Some((t_enq, queued_len)) => {
                        packets = packets.saturating_sub(1);
                        bytes = bytes.saturating_sub(queued_len);
                        counts.matched_dequeues += 1;
                        delays.push(DelaySample {
                            t_ns: e.t,
                            delay_ns: e.t - t_enq,
                            mean_delay_ns: e.t - t_enq,
                            bytes: queued_len,
                            flow: e.flow,
                        });
                    }
                    None => {
                        counts.unmatched_dequeues += 1;
                        counts.unmatched_bytes = counts.unmatched_bytes.saturating_add(len);
                    }
                }
            }
        }
        max_packets = max_packets.max(packets);
        max_bytes = max_bytes.max(bytes);
        length.push(LengthPoint {
            t_ns: e.t,
            packets,
            bytes,
        });
    }
    counts.left_packets = packets;
    counts.left_bytes = bytes;

    let per_s = |n: u64, ns: f64| if ns > 0.0 { n as f64 * 1e9 / ns } else { 0.0 };
    let last_window = counted.keys().next_back().copied().unwrap_or(0);
    let mut windows: Vec<RateWindow> = Vec::with_capacity(2 * counted.len());
    for (&k, &(arrivals, arrival_bytes, departures, departure_bytes)) in &counted {
        windows.push(RateWindow {
            t_ns: t0 + k as f64 * window_ns,
            arrivals,
            arrival_bytes,
            departures,
            departure_bytes,
            arrival_packets_per_s: per_s(arrivals, window_ns),
            arrival_bytes_per_s: per_s(arrival_bytes, window_ns),
            departure_packets_per_s: per_s(departures, window_ns),
            departure_bytes_per_s: per_s(departure_bytes, window_ns),
        });
        let next = k.saturating_add(1);
        if next <= last_window && !counted.contains_key(&next) {
            windows.push(RateWindow {
                t_ns: t0 + next as f64 * window_ns,
                arrivals: 0,
                arrival_bytes: 0,
                departures: 0,
                departure_bytes: 0,
                arrival_packets_per_s: 0.0,
                arrival_bytes_per_s: 0.0,
                departure_packets_per_s: 0.0,
                departure_bytes_per_s: 0.0,
            });
        }
    }
    let rates = Rates {
        active_ns: active,
        arrival_packets_per_s: per_s(counts.enqueues, active),
        arrival_bytes_per_s: per_s(counts.enqueued_bytes, active),
        departure_packets_per_s: per_s(counts.dequeues, active),
        departure_bytes_per_s: per_s(counts.dequeued_bytes, active),
    };
    let stats = QueueStats {
        max_packets,
        max_bytes,
        mean_packets: if active > 0.0 {
            area_packets / active
        } else {
            0.0
        },
        mean_bytes: if active > 0.0 {
            area_bytes / active
        } else {
            0.0
        },
        delay: Summary::of(delays.iter().map(|d| d.delay_ns)),
    };
    let length_events = length.len() as u64;
    QueueTrace {
        queue: name.to_string(),
        thread,
        counts,
        length: downsample(length, options.max_points),
        length_events,
        delays,
        rates,
        window_ns,
        windows,
        stats,
    }
}

/// At most `max_points` (at least 4) points: the series is cut into
/// consecutive stretches, and of each the point of its largest byte count
/// (carrying the stretch's largest packet count too) and its last point
/// are kept, in time order.
pub fn downsample(points: Vec<LengthPoint>, max_points: usize) -> Vec<LengthPoint> {
    let cap = max_points.max(4);
    if points.len() <= cap {
        return points;
    }
    let stretches = cap / 2;
    let size = points.len().div_ceil(stretches);
    let mut out = Vec::with_capacity(cap);
    for chunk in points.chunks(size) {
        let mut peak = 0;
        for (i, p) in chunk.iter().enumerate() {
            if p.bytes > chunk[peak].bytes {
                peak = i;
            }
        }
        let max_packets = chunk.iter().map(|p| p.packets).max().unwrap_or(0);
        out.push(LengthPoint {
            packets: max_packets,
            ..chunk[peak]
        });
        if peak + 1 != chunk.len() {
            out.push(chunk[chunk.len() - 1]);
        }
    }
    out
}
