//! The protobuf timeline, read back with a generic protobuf wire decoder
//! written here from the encoding's rules (not the writer's structs), and
//! checked against the JSON timeline of the same trace.

mod common;

use common::*;
use probe::convert::{write_timeline, Annotation, TimelineFormat, TimelineProcess};
use probe::{Loc, Record, Trace, TraceHeader};
use serde_json::Value;
use std::collections::HashMap;

/// A decoded field: varint, or length-delimited bytes.
#[derive(Clone, Debug)]
enum Field {
    Varint(u64),
    Bytes(Vec<u8>),
}

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint too long");
}

/// Every (field number, value) of one message, in order.
fn fields(b: &[u8]) -> Vec<(u64, Field)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = varint(b, &mut at);
        let value = match key & 7 {
            0 => Field::Varint(varint(b, &mut at)),
            2 => {
                let len = varint(b, &mut at) as usize;
                at += len;
                Field::Bytes(b[at - len..at].to_vec())
            }
            other => panic!("wire type {other} not written by us"),
        };
        out.push((key >> 3, value));
    }
    out
}

fn get(msg: &[(u64, Field)], n: u64) -> Option<&Field> {
    msg.iter().find(|(f, _)| *f == n).map(|(_, v)| v)
}

fn uint(msg: &[(u64, Field)], n: u64) -> Option<u64> {
    match get(msg, n)? {
        Field::Varint(v) => Some(*v),
        Field::Bytes(_) => panic!("field {n} is not a varint"),
    }
}

fn sub(msg: &[(u64, Field)], n: u64) -> Option<Vec<(u64, Field)>> {
    match get(msg, n)? {
        Field::Bytes(b) => Some(fields(b)),
        Field::Varint(_) => panic!("field {n} is not a message"),
    }
}

fn text(msg: &[(u64, Field)], n: u64) -> Option<String> {
    match get(msg, n)? {
        Field::Bytes(b) => Some(String::from_utf8(b.clone()).unwrap()),
        Field::Varint(_) => panic!("field {n} is not a string"),
    }
}

/// What a reader rebuilds: slices (track name, name, begin ns, end ns),
/// thread names by tid, counter values by track name.
#[derive(Default, Debug)]
struct Read {
    slices: Vec<(String, String, u64, u64)>,
    instants: usize,
    threads: HashMap<u64, Option<String>>,
    process_names: Vec<String>,
    counters: HashMap<String, Vec<i64>>,
}

fn read(bytes: &[u8]) -> Read {
    let mut r = Read::default();
    // Track uuid -> display name; per sequence, interned names.
    let mut tracks: HashMap<u64, String> = HashMap::new();
    let mut names: HashMap<(u64, u64), String> = HashMap::new();
    let mut open: HashMap<u64, Vec<(String, u64)>> = HashMap::new();
    let mut cleared: HashMap<u64, bool> = HashMap::new();
    for (n, packet) in fields(bytes) {
        assert_eq!(n, 1, "a Trace holds only packets");
        let Field::Bytes(packet) = packet else {
            panic!("packet not a message")
        };
        let p = fields(&packet);
        let seq = uint(&p, 10).expect("trusted_packet_sequence_id");
        assert_ne!(seq, 0);
        let flags = uint(&p, 13).unwrap_or(0);
        let first = !cleared.contains_key(&seq);
        assert_eq!(
            first,
            flags & 1 == 1,
            "state cleared on the first packet only"
        );
        cleared.insert(seq, true);
        if let Some(interned) = sub(&p, 12) {
            for (field, entry) in &interned {
                let Field::Bytes(entry) = entry else { panic!() };
                let entry = fields(entry);
                let iid = uint(&entry, 1).unwrap();
                let key = (seq, field * 1_000_000 + iid);
                assert!(!names.contains_key(&key), "interned twice");
                names.insert(key, text(&entry, 2).unwrap());
            }
        }
        if let Some(d) = sub(&p, 60) {
            let uuid = uint(&d, 1).unwrap();
            let name = if let Some(t) = sub(&d, 4) {
                let name = text(&t, 5);
                r.threads.insert(uint(&t, 2).unwrap(), name.clone());
                name.unwrap_or_else(|| format!("tid {}", uint(&t, 2).unwrap()))
            } else if let Some(pr) = sub(&d, 3) {
                r.process_names.extend(text(&pr, 6));
                "process".into()
            } else {
                let parent = uint(&d, 5).expect("child tracks have a parent");
                assert!(tracks.contains_key(&parent), "parent described first");
                text(&d, 2).expect("named")
            };
            tracks.insert(uuid, name);
        }
        if let Some(e) = sub(&p, 11) {
            assert_eq!(flags & 2, 2, "events need the incremental state");
            let ts = uint(&p, 8).expect("timestamp");
            let track = uint(&e, 11).expect("track_uuid");
            let track_name = tracks.get(&track).expect("track described").clone();
            let name = || {
                let iid = uint(&e, 10).expect("name_iid");
                names[&(seq, 2_000_000 + iid)].clone()
            };
            match uint(&e, 9).expect("type") {
                1 => open.entry(track).or_default().push((name(), ts)),
                2 => {
                    let (name, begin) = open
                        .get_mut(&track)
                        .and_then(Vec::pop)
                        .expect("an end closes an open slice");
                    assert!(begin <= ts);
                    r.slices.push((track_name, name, begin, ts));
                }
                3 => r.instants += 1,
                4 => {
                    let v = uint(&e, 30).unwrap() as i64;
                    r.counters.entry(track_name).or_default().push(v);
                }
                t => panic!("type {t}"),
            }
        }
    }
    assert!(open.values().all(Vec::is_empty), "every slice closed");
    r.slices.sort();
    r
}

fn write(processes: &[TimelineProcess], format: TimelineFormat) -> Vec<u8> {
    let mut out = Vec::new();
    write_timeline(processes, format, &mut out).unwrap();
    out
}

fn process<'a>(trace: &'a Trace, annotations: &'a [Annotation]) -> TimelineProcess<'a> {
    TimelineProcess {
        trace,
        pid: 1,
        name: Some("unit test".into()),
        thread_names: vec![(1, "host-a".into()), (2, "router".into())],
        annotations,
        origin: None,
    }
}

#[test]
fn protobuf_holds_the_jsons_slices_threads_and_counters() {
    let trace = sample_trace();
    let annotations = [
        Annotation {
            track: "messages".into(),
            name: "message 1".into(),
            begin: 1_100,
            end: 1_600,
        },
        // Overlaps message 1 without nesting: a track of its own.
        Annotation {
            track: "messages".into(),
            name: "message 2".into(),
            begin: 1_300,
            end: 1_700,
        },
    ];
    let p = [process(&trace, &annotations)];
    let read = read(&write(&p, TimelineFormat::Protobuf));
    let json: Value = serde_json::from_slice(&write(&p, TimelineFormat::Json)).unwrap();
    let events = json["traceEvents"].as_array().unwrap();

    let json_slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(read.slices.len(), json_slices);
    assert_eq!(
        read.slices,
        [
            ("host-a".into(), "checksum".into(), 100, 300),
            ("host-a".into(), "send".into(), 0, 500),
            ("messages".into(), "message 1".into(), 100, 600),
            ("messages (overlap 1)".into(), "message 2".into(), 300, 700),
        ]
    );
    assert_eq!(
        read.instants,
        events.iter().filter(|e| e["ph"] == "i").count()
    );
    // Thread names as the JSON's metadata names them.
    let json_names: HashMap<u64, String> = events
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["tid"].as_u64().unwrap() < 1 << 16)
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    let threads: HashMap<u64, String> = read
        .threads
        .iter()
        .map(|(t, n)| (*t, n.clone().unwrap()))
        .collect();
    assert_eq!(threads, json_names);
    assert_eq!(read.process_names, ["unit test"]);
    // The queue: one enqueue (thread 1) and one dequeue (thread 2), each
    // thread's own counter, as in the JSON.
    let json_counters: Vec<(String, i64)> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["args"]["length"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut counters: Vec<(String, i64)> = read
        .counters
        .iter()
        .flat_map(|(n, vs)| vs.iter().map(move |v| (n.clone(), *v)))
        .collect();
    counters.sort();
    let mut expected = json_counters.clone();
    expected.sort();
    assert_eq!(counters, expected);
}

#[test]
fn interleaved_spans_keep_their_own_times() {
    // send 0..2 µs and checksum 1..8 µs on one thread overlap without
    // nesting: both are drawn, the second beside the first.
    let t = |tsc, loc: Loc| Record::new(tsc, loc, 0, 0, 0, 1);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "interleaved"),
        SITES,
        vec![
            t(1000, SEND_ENTER),
            t(2000, CSUM_ENTER),
            t(3000, SEND_EXIT),
            t(9000, CSUM_EXIT),
            // Equal begin and end, and one nested exactly in another.
            t(9000, SEND_ENTER),
            t(9000, CSUM_ENTER),
            t(9000, CSUM_EXIT),
            t(9500, SEND_EXIT),
        ],
    );
    let p = [process(&trace, &[])];
    let read = read(&write(&p, TimelineFormat::Protobuf));
    assert_eq!(
        read.slices,
        [
            ("host-a".into(), "checksum".into(), 8000, 8000),
            ("host-a".into(), "send".into(), 0, 2000),
            ("host-a".into(), "send".into(), 8000, 8500),
            ("host-a (overlap 1)".into(), "checksum".into(), 1000, 8000),
        ]
    );
}

#[test]
fn processes_concatenate_on_their_own_sequences() {
    let trace = sample_trace();
    let a = process(&trace, &[]);
    let b = TimelineProcess {
        pid: 2,
        name: Some("second".into()),
        // Drawn 500 ns later: its origin is 500 cycles before its first record.
        origin: Some(500),
        ..process(&trace, &[])
    };
    let mut bytes = write(&[a], TimelineFormat::Protobuf);
    bytes.extend(write(&[b], TimelineFormat::Protobuf));
    let read = read(&bytes);
    assert_eq!(read.process_names, ["unit test", "second"]);
    assert_eq!(read.slices.len(), 4);
    assert!(read
        .slices
        .contains(&("host-a".into(), "send".into(), 500, 1000)));
}
