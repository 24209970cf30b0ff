//! CSV and Perfetto output, checked for structure.

mod common;

use common::*;
use probe::convert::{write_csv, write_perfetto};
use probe::{Loc, Record, Trace, TraceHeader};
use serde_json::Value;
use std::collections::HashMap;

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
    assert_eq!(events.len(), 7);
    for e in events {
        assert_eq!(e["pid"], 1);
        assert!(e["ts"].is_f64() || e["ts"].is_u64());
        assert!(e["tid"].is_u64());
    }
    // 1 GHz: 1100 - 1000 cycles = 100 ns = 0.1 us.
    assert_eq!(events[1]["ts"].as_f64().unwrap(), 0.1);
    let point = events.iter().find(|e| e["ph"] == "i").unwrap();
    assert_eq!(point["name"], "link.tx");
    assert_eq!(point["s"], "t");
    assert_eq!(point["args"]["len"], 100);
    assert_eq!(point["cat"], "link,link");
}

#[test]
fn perfetto_spans_pair_per_thread() {
    // Thread 1: A( B( ) ) ; thread 2 interleaved: C( ) ; a stray exit on
    // thread 3; an unclosed enter on thread 2.
    let t = |tsc, loc: Loc, thread| Record::new(tsc, loc, 0, 0, 0, thread);
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "spans"),
        SITES,
        vec![
            t(10, SEND_ENTER, 1),
            t(11, CSUM_ENTER, 2),
            t(12, CSUM_ENTER, 1),
            t(13, CSUM_EXIT, 2),
            t(14, CSUM_EXIT, 1),
            t(15, SEND_EXIT, 3),
            t(16, SEND_EXIT, 1),
            t(17, SEND_ENTER, 2),
        ],
    );
    let (json, summary) = perfetto(&trace);
    assert_eq!(summary.unmatched_exits, 1);
    assert_eq!(summary.unclosed_spans, 1);

    let mut stacks: HashMap<u64, Vec<String>> = HashMap::new();
    let mut pairs = Vec::new();
    for e in events(&json) {
        let tid = e["tid"].as_u64().unwrap();
        let name = e["name"].as_str().unwrap().to_string();
        match e["ph"].as_str().unwrap() {
            "B" => stacks.entry(tid).or_default().push(name),
            "E" => {
                let open = stacks
                    .get_mut(&tid)
                    .and_then(Vec::pop)
                    .expect("E closes a B");
                assert_eq!(open, name, "E carries the name of the span it closes");
                pairs.push((tid, name));
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(
        pairs,
        [
            (2, "checksum.enter".to_string()),
            (1, "checksum.enter".to_string()),
            (1, "send.enter".to_string())
        ]
    );
    assert_eq!(stacks[&2], ["send.enter"]);
}

#[test]
fn perfetto_queue_counters_track_length() {
    let q = |tsc, loc: Loc| Record::new(tsc, loc, 64, 1, 0, 1);
    let trace = Trace::new(
        TraceHeader::new(2e9, 0.0, 0, "queue"),
        SITES,
        vec![
            q(100, TXQ_OUT), // already-queued packet: stays at 0
            q(200, TXQ_IN),
            q(300, TXQ_IN),
            q(400, TXQ_OUT),
            q(500, TXQ_IN),
            q(600, TXQ_OUT),
            q(700, TXQ_OUT),
            q(800, TXQ_OUT),
        ],
    );
    let (json, _) = perfetto(&trace);
    let counters: Vec<(f64, u64)> = events(&json)
        .iter()
        .map(|e| {
            assert_eq!(e["ph"], "C");
            assert_eq!(e["name"], "ifq");
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
fn converters_reject_records_outside_the_table() {
    let mut trace = sample_trace();
    trace.records.push(Record::new(5000, Loc(99), 0, 0, 0, 1));
    assert!(write_csv(&trace, Vec::new()).is_err());
    assert!(write_perfetto(&trace, Vec::new()).is_err());
}

#[test]
fn perfetto_events_are_in_time_order_across_threads() {
    let trace = Trace::new(
        TraceHeader::new(1e9, 0.0, 0, "order"),
        SITES,
        vec![
            Record::new(300, WIRE, 0, 0, 0, 1),
            Record::new(100, WIRE, 0, 0, 0, 2),
            Record::new(200, WIRE, 0, 0, 0, 1),
        ],
    );
    let (json, _) = perfetto(&trace);
    let ts: Vec<f64> = events(&json)
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert_eq!(ts, [0.0, 0.1, 0.2]);
}
