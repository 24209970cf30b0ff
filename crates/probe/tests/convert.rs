//! CSV and Perfetto output, checked for structure.

mod common;

use common::*;
use probe::convert::{write_csv, write_perfetto};
use probe::{Loc, Record, Trace, TraceHeader};
use serde_json::Value;

fn perfetto(trace: &Trace) -> (Value, probe::convert::PerfettoSummary) {
    let mut out = Vec::new();
    let summary = write_perfetto(trace, &mut out).unwrap();
    (serde_json::from_slice(&out).expect("valid JSON"), summary)
}

fn events(json: &Value) -> &Vec<Value> {
    json["traceEvents"].as_array().expect("traceEvents array")
}

#[test]
fn csv_has_a_header_and_one_row_per_record() {
    let trace = sample_trace();
    let mut out = Vec::new();
    write_csv(&trace, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "tsc,ns,thread,loc,name,layer,kind,category,queue,len,flow,aux"
    );
    assert_eq!(lines.len(), 1 + trace.records.len());
    // 1 GHz counter: ns equals tsc minus the first tsc.
    assert_eq!(
        lines[1],
        "1000,0.0,1,0,send.enter,transport,span_enter,protocol_send,,100,7,1000"
    );
    assert_eq!(
        lines[4],
        "1400,400.0,1,4,ifq.enqueue,link,enqueue,link,ifq,100,7,1400"
    );
    assert!(lines.iter().all(|l| l.split(',').count() == 12));
}

#[test]
fn csv_quotes_awkward_names() {
    let mut trace = sample_trace();
    trace.locations[6].name = "odd,\"name\"".into();
    let mut out = Vec::new();
    write_csv(&trace, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text
        .lines()
        .last()
        .unwrap()
        .contains(",\"odd,\"\"name\"\"\","));
}

#[test]
fn perfetto_document_shape() {
    let (json, summary) = perfetto(&sample_trace());
    assert_eq!(json["displayTimeUnit"], "ns");
    let events = events(&json);
    assert_eq!(events.len() as u64, summary.events);
    // Two spans, two queue counters, one instant.
    let phases: Vec<&str> = events.iter().map(|e| e["ph"].as_str().unwrap()).collect();
    assert_eq!(phases, ["X", "X", "C", "C", "i"]);
    for e in events {
        assert_eq!(e["pid"], 1);
        assert!(e["ts"].is_f64() || e["ts"].is_u64());
        assert!(e["tid"].is_u64());
    }
    // 1 GHz: 1100 - 1000 cycles = 100 ns = 0.1 us; checksum took 200 ns.
    assert_eq!(events[1]["name"], "checksum");
    assert_eq!(events[1]["ts"].as_f64().unwrap(), 0.1);
    assert_eq!(events[1]["dur"].as_f64().unwrap(), 0.2);
    let point = events.iter().find(|e| e["ph"] == "i").unwrap();
    assert_eq!(point["name"], "link.tx");
    assert_eq!(point["s"], "t");
    assert_eq!(point["args"]["len"], 100);
    assert_eq!(point["cat"], "link,link");
}

/// (name, tid, ts, dur) of every slice.
fn slices(json: &Value) -> Vec<(String, u64, f64, f64)> {
    events(json)
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn perfetto_spans_pair_per_thread() {
    // Thread 1: send( checksum( ) ); thread 2 interleaved: checksum( );
    // a stray exit on thread 3; an unclosed enter on thread 2.
    let t = |tsc, loc: Loc, thread| Record::new(tsc, loc, 0, 0, 0, thread);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "spans"),
        SITES,
        vec![
            t(1000, SEND_ENTER, 1),
            t(2000, CSUM_ENTER, 2),
            t(3000, CSUM_ENTER, 1),
            t(4000, CSUM_EXIT, 2),
            t(5000, CSUM_EXIT, 1),
            t(6000, SEND_EXIT, 3),
            t(7000, SEND_EXIT, 1),
            t(8000, SEND_ENTER, 2),
        ],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.unmatched_exits, 1);
    assert_eq!(summary.unclosed_spans, 1);
    assert_eq!(summary.interleaved_spans, 0);
    assert_eq!(
        slices(&json),
        [
            ("send".to_string(), 1, 0.0, 6.0),
            ("checksum".to_string(), 2, 1.0, 2.0),
            ("checksum".to_string(), 1, 2.0, 2.0),
        ]
    );
}

#[test]
fn perfetto_overlapping_spans_close_their_own_enter() {
    // send opens, checksum opens, send closes before checksum: the spans
    // overlap without nesting, and each keeps its own duration.
    let t = |tsc, loc: Loc| Record::new(tsc, loc, 0, 0, 0, 1);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "overlap"),
        SITES,
        vec![
            t(1000, SEND_ENTER),
            t(2000, CSUM_ENTER),
            t(3000, SEND_EXIT),
            t(9000, CSUM_EXIT),
        ],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.interleaved_spans, 1);
    assert_eq!((summary.unmatched_exits, summary.unclosed_spans), (0, 0));
    assert_eq!(
        slices(&json),
        [
            ("send".to_string(), 1, 0.0, 2.0),
            ("checksum".to_string(), 1, 1.0, 7.0),
        ]
    );
}

#[test]
fn perfetto_pairs_same_span_by_flow_and_aux() {
    // Two sends in flight on one thread (flows 1 and 2) close in the order
    // they opened; flow and aux say which is which.
    let t = |tsc, loc: Loc, flow, aux| Record::new(tsc, loc, 0, flow, aux, 1);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "pairs"),
        SITES,
        vec![
            t(1000, SEND_ENTER, 1, 10),
            t(2000, SEND_ENTER, 2, 20),
            t(3000, SEND_EXIT, 1, 10),
            t(5000, SEND_EXIT, 2, 20),
        ],
    );
    let (json, _) = perfetto(&trace);
    let flows: Vec<(u64, f64)> = events(&json)
        .iter()
        .map(|e| {
            (
                e["args"]["flow"].as_u64().unwrap(),
                e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(flows, [(1, 2.0), (2, 3.0)]);
}

#[test]
fn perfetto_keeps_each_threads_order_when_the_counter_steps_back() {
    // A core migration can make a thread's counter go back a little: the
    // exit still follows its enter, with the timestamp clamped.
    let t = |tsc, loc: Loc| Record::new(tsc, loc, 0, 0, 0, 1);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "migration"),
        SITES,
        vec![t(5000, SEND_ENTER), t(4990, SEND_EXIT)],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.clamped_timestamps, 1);
    assert_eq!((summary.unmatched_exits, summary.unclosed_spans), (0, 0));
    assert_eq!(slices(&json), [("send".to_string(), 1, 0.0, 0.0)]);
}

#[test]
fn perfetto_queue_counters_track_length() {
    let q = |tsc, loc: Loc| Record::new(tsc, loc, 64, 1, 0, 1);
    let trace = Trace::new(
        TraceHeader::new(2e9, 0.0, 0, "queue"),
        SITES,
        vec![
            q(100, TXQ_OUT), // already-queued packet: stays at 0, counted
            q(200, TXQ_IN),
            q(300, TXQ_IN),
            q(400, TXQ_OUT),
            q(500, TXQ_IN),
            q(600, TXQ_OUT),
            q(700, TXQ_OUT),
            q(800, TXQ_OUT),
        ],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.dequeues_below_zero, 2);
    let counters: Vec<(f64, u64)> = events(&json)
        .iter()
        .map(|e| {
            assert_eq!(e["ph"], "C");
            assert_eq!(e["name"], "ifq (thread 1)");
            (
                e["ts"].as_f64().unwrap(),
                e["args"]["length"].as_u64().unwrap(),
            )
        })
        .collect();
    let lengths: Vec<u64> = counters.iter().map(|c| c.1).collect();
    assert_eq!(lengths, [0, 1, 2, 1, 2, 1, 0, 0]);
    // 2 GHz: 100 cycles = 50 ns = 0.05 us apart.
    assert!((counters[1].0 - 0.05).abs() < 1e-9);
}

#[test]
fn perfetto_queue_counters_are_per_thread() {
    // Two hosts' interface queues, one per thread, must not merge.
    let q = |tsc, loc: Loc, thread| Record::new(tsc, loc, 64, 1, 0, thread);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "queues"),
        SITES,
        vec![q(100, TXQ_IN, 1), q(200, TXQ_IN, 2), q(300, TXQ_OUT, 1)],
    );
    let (json, _) = perfetto(&trace);
    let counters: Vec<(String, u64)> = events(&json)
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["args"]["length"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counters,
        [
            ("ifq (thread 1)".to_string(), 1),
            ("ifq (thread 2)".to_string(), 1),
            ("ifq (thread 1)".to_string(), 0),
        ]
    );
}

#[test]
fn converters_reject_records_outside_the_table() {
    let mut trace = sample_trace();
    trace.records.push(Record::new(5000, Loc(99), 0, 0, 0, 1));
    assert!(write_csv(&trace, Vec::new()).is_err());
    assert!(write_perfetto(&trace, Vec::new()).is_err());
}

#[test]
fn perfetto_events_are_in_time_order_across_threads() {
    // Each thread's records are in its own order in the file (as drained
    // from its ring); the output interleaves the threads by time.
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "order"),
        SITES,
        vec![
            Record::new(100, WIRE, 0, 0, 0, 1),
            Record::new(300, WIRE, 0, 0, 0, 1),
            Record::new(200, WIRE, 0, 0, 0, 2),
        ],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.clamped_timestamps, 0);
    let order: Vec<(f64, u64)> = events(&json)
        .iter()
        .map(|e| (e["ts"].as_f64().unwrap(), e["tid"].as_u64().unwrap()))
        .collect();
    assert_eq!(order, [(0.0, 1), (0.1, 2), (0.2, 1)]);
}

#[test]
fn annotations_get_tracks_of_their_own_and_threads_their_names() {
    let trace = sample_trace();
    let annotations = [
        probe::convert::Annotation {
            track: "messages".into(),
            name: "message 1".into(),
            begin: 1_100,
            end: 1_600,
        },
        probe::convert::Annotation {
            track: "messages: send path".into(),
            name: "send 1".into(),
            begin: 1_100,
            end: 1_300,
        },
        // Before the first record: clamped to it, never negative.
        probe::convert::Annotation {
            track: "messages".into(),
            name: "early".into(),
            begin: 10,
            end: 900,
        },
    ];
    let mut out = Vec::new();
    probe::convert::write_perfetto_annotated(
        &trace,
        &[(1, "host-a".to_string())],
        &annotations,
        &mut out,
    )
    .unwrap();
    let json: Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = events(&json);
    let named: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(named.len(), 3, "{named:?}");
    assert!(named.contains(&(1, "host-a")));
    let track = |name: &str| named.iter().find(|(_, n)| *n == name).unwrap().0;
    assert_ne!(track("messages"), track("messages: send path"));
    assert!(
        track("messages") > u64::from(u16::MAX),
        "above every thread"
    );
    let slice = |name: &str| events.iter().find(|e| e["name"] == name).unwrap();
    // 1 GHz counter, first record at 1000: 1100 is 0.1 µs in, 500 ns long.
    let m = slice("message 1");
    assert_eq!(m["ph"], "X");
    assert_eq!(m["tid"].as_u64().unwrap(), track("messages"));
    assert!((m["ts"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    assert!((m["dur"].as_f64().unwrap() - 0.5).abs() < 1e-9);
    let early = slice("early");
    assert_eq!(early["ts"].as_f64().unwrap(), 0.0);
    assert_eq!(early["dur"].as_f64().unwrap(), 0.0);
    assert_eq!(
        slice("send 1")["tid"].as_u64().unwrap(),
        track("messages: send path")
    );
}
