//! Perfetto's native protobuf trace, written from the JSON writer's
//! events (`perfetto.rs`), so both formats hold the same slices.
//!
//! A trace file is a `Trace` message: `repeated TracePacket packet = 1`,
//! so packets are written one by one as length-delimited field 1 and files
//! concatenate into one trace. Only the messages used are declared here,
//! with the field numbers of Perfetto's public protos
//! (`protos/perfetto/trace/trace_packet.proto`,
//! `track_event/track_event.proto`, `track_descriptor.proto`,
//! `process_descriptor.proto`, `thread_descriptor.proto`,
//! `counter_descriptor.proto`, `debug_annotation.proto`,
//! `interned_data/interned_data.proto`).
//!
//! * Each process is one packet sequence (`trusted_packet_sequence_id` =
//!   pid); its first packet clears the incremental state, the rest need
//!   it (names, categories and argument names are interned: sent once in
//!   `interned_data`, then referred to by number).
//! * Tracks: one process track, a thread track per recorder thread (named
//!   like the JSON's `thread_name`), a named track per annotation track
//!   and a counter track per queue, the last two children of the process.
//!   Track ids are `pid << 20 | n`.
//! * A JSON `X` slice becomes a `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pair.
//!   Perfetto nests slices on a track by time, so a slice that overlaps
//!   another without nesting (spans crossing a queue, messages in flight
//!   together) goes on an extra track beside its thread's, "NAME
//!   (overlap N)": every slice keeps its own begin and end.
//! * Instants are `TYPE_INSTANT`; queue lengths `TYPE_COUNTER`.
//! * Timestamps are nanoseconds since the timeline's origin on the default
//!   trace clock.
//!
//! The JSON's `loc` argument is left out: a slice's name is its location's
//! stem and an instant's name is its location.

use super::perfetto::{Args, Event, ANNOTATION_TID};
use prost::Message;
use std::collections::HashMap;
use std::io::{self, Write};

#[derive(Clone, PartialEq, Message)]
pub(crate) struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `TracePacket.SequenceFlags`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

#[derive(Clone, PartialEq, Message)]
pub(crate) struct TrackEvent {
    /// Declared `repeated uint64 category_iids = 3` in proto2: unpacked.
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
}

/// `TrackEvent.Type`.
const TYPE_SLICE_BEGIN: i32 = 1;
const TYPE_SLICE_END: i32 = 2;
const TYPE_INSTANT: i32 = 3;
const TYPE_COUNTER: i32 = 4;

#[derive(Clone, PartialEq, Message)]
pub(crate) struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<Interned>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<Interned>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<Interned>,
}

/// `EventCategory`, `EventName` and `DebugAnnotationName` share this shape.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Interned {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct CounterDescriptor {
    /// `CounterDescriptor.Unit`: UNIT_COUNT = 2.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
}

/// Track ids below this bit are a process's own.
const TRACK_BITS: u32 = 20;

/// Microseconds (the JSON's unit) to whole nanoseconds; negatives are 0.
fn ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// Writes each process as one packet sequence.
pub(super) fn write(
    processes: &[(u32, Option<&str>, Vec<Event>)],
    out: impl Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let mut buf = Vec::new();
    for (pid, name, events) in processes {
        let mut seq = Sequence {
            pid: *pid,
            started: false,
            buf: &mut buf,
            out: &mut out,
            names: Interner::default(),
            categories: Interner::default(),
            arg_names: Interner::default(),
            tracks: 0,
        };
        seq.process(*name, events)?;
    }
    out.flush()
}

/// Strings of one kind interned on a sequence: iids count from 1.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u64>,
}

impl Interner {
    /// The string's iid, and its entry if this is its first use.
    fn id(&mut self, s: &str) -> (u64, Option<Interned>) {
        if let Some(id) = self.ids.get(s) {
            return (*id, None);
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(s.to_string(), id);
        let entry = Interned {
            iid: Some(id),
            name: Some(s.to_string()),
        };
        (id, Some(entry))
    }
}

/// A slice before it is written: its lane is the track it goes on.
struct Slice<'e, 'a> {
    begin: u64,
    end: u64,
    event: &'e Event<'a>,
    lane: usize,
}

/// One packet to write, in the order the key sorts.
struct Emit<'e, 'a> {
    /// (time, 0 for ends and 1 for the rest, order within, 0 begin / 1 end)
    key: (u64, u8, u64, u8),
    what: What<'e, 'a>,
}

enum What<'e, 'a> {
    Begin(&'e Event<'a>, u64),
    End(u64),
    Instant(&'e Event<'a>, u64),
    Counter(u64, i64),
}

struct Sequence<'o, W: Write> {
    pid: u32,
    started: bool,
    buf: &'o mut Vec<u8>,
    out: &'o mut W,
    names: Interner,
    categories: Interner,
    arg_names: Interner,
    /// Tracks made so far (the process track is 0).
    tracks: u64,
}

impl<W: Write> Sequence<'_, W> {
    fn uuid(&self, n: u64) -> u64 {
        (u64::from(self.pid) << TRACK_BITS) | n
    }

    fn new_track(&mut self) -> io::Result<u64> {
        self.tracks += 1;
        if self.tracks >= 1 << TRACK_BITS {
            return Err(io::Error::other(
                "more than a million tracks in one process",
            ));
        }
        Ok(self.uuid(self.tracks))
    }

    fn packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        packet.trusted_packet_sequence_id = Some(self.pid);
        packet.sequence_flags = Some(if self.started {
            SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            SEQ_INCREMENTAL_STATE_CLEARED
        });
        self.started = true;
        self.buf.clear();
        prost::encoding::message::encode(1, &packet, self.buf);
        self.out.write_all(self.buf)
    }

    fn descriptor(&mut self, d: TrackDescriptor) -> io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(0),
            track_descriptor: Some(d),
            ..TracePacket::default()
        })
    }

    fn process(&mut self, name: Option<&str>, events: &[Event]) -> io::Result<()> {
        let pid = i32::try_from(self.pid).unwrap_or(i32::MAX);
        let process_uuid = self.uuid(0);
        self.descriptor(TrackDescriptor {
            uuid: Some(process_uuid),
            process: Some(ProcessDescriptor {
                pid: Some(pid),
                process_name: name.map(str::to_string),
            }),
            ..TrackDescriptor::default()
        })?;
        // Thread and annotation track names (the JSON's metadata).
        let mut thread_names: HashMap<u32, &str> = HashMap::new();
        for e in events.iter().filter(|e| e.ph == "M") {
            if let (Args::Name { name }, "thread_name") = (&e.args, e.name.as_ref()) {
                thread_names.insert(e.tid, name);
            }
        }
        // Slices per track row (tid), in begin order, outer first.
        let mut rows: HashMap<u32, Vec<Slice>> = HashMap::new();
        for e in events.iter().filter(|e| e.ph == "X") {
            let begin = ns(e.ts);
            let end = ns(e.ts + e.dur.unwrap_or(0.0)).max(begin);
            rows.entry(e.tid).or_default().push(Slice {
                begin,
                end,
                event: e,
                lane: 0,
            });
        }
        let mut lanes_of: HashMap<u32, usize> = HashMap::new();
        for (tid, slices) in &mut rows {
            slices.sort_by_key(|s| (s.begin, std::cmp::Reverse(s.end)));
            lanes_of.insert(*tid, assign_lanes(slices));
        }
        // Every row drawn gets a track: threads first, then annotations.
        let mut tids: Vec<u32> = thread_names.keys().copied().collect();
        tids.extend(rows.keys());
        tids.extend(events.iter().filter(|e| e.ph == "i").map(|e| e.tid));
        tids.sort_unstable();
        tids.dedup();
        let mut lane_tracks: HashMap<(u32, usize), u64> = HashMap::new();
        for tid in tids {
            let given = thread_names.get(&tid).copied();
            let base = given.map_or_else(|| format!("thread {tid}"), str::to_string);
            let uuid = self.new_track()?;
            lane_tracks.insert((tid, 0), uuid);
            let descriptor = if tid >= ANNOTATION_TID {
                TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(process_uuid),
                    name: Some(base.clone()),
                    ..TrackDescriptor::default()
                }
            } else {
                TrackDescriptor {
                    uuid: Some(uuid),
                    thread: Some(ThreadDescriptor {
                        pid: Some(pid),
                        tid: Some(i32::try_from(tid).unwrap_or(i32::MAX)),
                        thread_name: given.map(str::to_string),
                    }),
                    ..TrackDescriptor::default()
                }
            };
            self.descriptor(descriptor)?;
            for lane in 1..lanes_of.get(&tid).copied().unwrap_or(1) {
                let lane_uuid = self.new_track()?;
                lane_tracks.insert((tid, lane), lane_uuid);
                self.descriptor(TrackDescriptor {
                    uuid: Some(lane_uuid),
                    parent_uuid: Some(uuid),
                    name: Some(format!("{base} (overlap {lane})")),
                    ..TrackDescriptor::default()
                })?;
            }
        }
        // Counter tracks, one per counter name (thread and queue).
        let mut counters: HashMap<&str, u64> = HashMap::new();
        for e in events.iter().filter(|e| e.ph == "C") {
            if !counters.contains_key(e.name.as_ref()) {
                let uuid = self.new_track()?;
                counters.insert(&e.name, uuid);
                self.descriptor(TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(process_uuid),
                    name: Some(e.name.to_string()),
                    counter: Some(CounterDescriptor { unit: Some(2) }),
                    ..TrackDescriptor::default()
                })?;
            }
        }

        let mut emits: Vec<Emit> = Vec::with_capacity(events.len() * 2);
        let mut order = 0u64;
        for slices in rows.values() {
            for (rank, s) in slices.iter().enumerate() {
                let track = lane_tracks[&(s.event.tid, s.lane)];
                order += 1;
                emits.push(Emit {
                    key: (s.begin, 1, order, 0),
                    what: What::Begin(s.event, track),
                });
                // A slice of no length ends right after its begin; others
                // end before anything begins at their end, the later
                // begun first (an inner slice closes before its outer).
                let key = if s.end == s.begin {
                    (s.begin, 1, order, 1)
                } else {
                    (s.end, 0, u64::MAX - rank as u64, 0)
                };
                emits.push(Emit {
                    key,
                    what: What::End(track),
                });
            }
        }
        for e in events {
            let key = (ns(e.ts), 1, 0, 0);
            let what = match e.ph {
                "i" => What::Instant(e, lane_tracks[&(e.tid, 0)]),
                "C" => match e.args {
                    Args::Counter { length } => {
                        What::Counter(counters[e.name.as_ref()], length as i64)
                    }
                    _ => continue,
                },
                _ => continue,
            };
            order += 1;
            emits.push(Emit {
                key: (key.0, key.1, order, 0),
                what,
            });
        }
        emits.sort_by_key(|e| e.key);
        for emit in emits {
            self.event(emit)?;
        }
        Ok(())
    }

    fn event(&mut self, emit: Emit) -> io::Result<()> {
        let mut interned = InternedData::default();
        let mut event = TrackEvent::default();
        match emit.what {
            What::Begin(e, track) | What::Instant(e, track) => {
                let kind = if matches!(emit.what, What::Begin(..)) {
                    TYPE_SLICE_BEGIN
                } else {
                    TYPE_INSTANT
                };
                event.r#type = Some(kind);
                event.track_uuid = Some(track);
                let (name, new) = self.names.id(&e.name);
                interned.event_names.extend(new);
                event.name_iid = Some(name);
                let (cat, new) = self.categories.id(&e.cat);
                interned.event_categories.extend(new);
                event.category_iids.push(cat);
                if let Args::Probe { len, flow, aux, .. } = e.args {
                    for (arg, value) in [
                        ("len", u64::from(len)),
                        ("flow", u64::from(flow)),
                        ("aux", aux),
                    ] {
                        let (id, new) = self.arg_names.id(arg);
                        interned.debug_annotation_names.extend(new);
                        event.debug_annotations.push(DebugAnnotation {
                            name_iid: Some(id),
                            uint_value: Some(value),
                        });
                    }
                }
            }
            What::End(track) => {
                event.r#type = Some(TYPE_SLICE_END);
                event.track_uuid = Some(track);
            }
            What::Counter(track, value) => {
                event.r#type = Some(TYPE_COUNTER);
                event.track_uuid = Some(track);
                event.counter_value = Some(value);
            }
        }
        let fresh = !(interned.event_names.is_empty()
            && interned.event_categories.is_empty()
            && interned.debug_annotation_names.is_empty());
        self.packet(TracePacket {
            timestamp: Some(emit.key.0),
            track_event: Some(event),
            interned_data: fresh.then_some(interned),
            ..TracePacket::default()
        })
    }
}

/// Puts each slice (sorted by begin, outer first) on the first lane where
/// it nests: after every slice there that ended by its begin, inside the
/// innermost still open. Returns the number of lanes.
fn assign_lanes(slices: &mut [Slice]) -> usize {
    // Per lane, the ends of the slices open on it, innermost last.
    let mut lanes: Vec<Vec<u64>> = Vec::new();
    for s in slices.iter_mut() {
        let mut placed = None;
        for (i, open) in lanes.iter_mut().enumerate() {
            while open.last().is_some_and(|end| *end <= s.begin) {
                open.pop();
            }
            if open.last().is_none_or(|end| *end >= s.end) {
                open.push(s.end);
                placed = Some(i);
                break;
            }
        }
        s.lane = placed.unwrap_or_else(|| {
            lanes.push(vec![s.end]);
            lanes.len() - 1
        });
    }
    lanes.len().max(1)
}
