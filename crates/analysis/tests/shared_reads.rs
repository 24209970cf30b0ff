//! Records made at one counter read (`probe::Stamp`) carry the same
//! counter value, and only a read puts a probe's overhead between two
//! timestamps: spans and windows take out one overhead per read, not per
//! record.

mod support;

use analysis::spans::rebuild;
use probe::{Category, Kind, Layer, Location};
use support::{loc, records, view};

static TABLE: &[Location] = &[
    loc(
        "iface.queue.dequeue",
        Layer::Link,
        Kind::Dequeue,
        Category::Link,
        Some("interface"),
    ),
    loc(
        "link.transmit.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Link,
        None,
    ),
    loc(
        "link.transmit.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Link,
        None,
    ),
    loc(
        "device.queue.enqueue",
        Layer::Link,
        Kind::Enqueue,
        Category::Wire,
        Some("device"),
    ),
    loc(
        "ipv6.output.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "ipv6.output.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::ProtocolSend,
        None,
    ),
];

/// 1 GHz, overhead 10 cycles a read. Inside `ipv6.output` (0..1000): the
/// dequeue and the transmit's start at one read (100), the transmit's end
/// and the device's enqueue at another (400).
fn shared() -> Vec<probe::Record> {
    records(
        TABLE,
        1,
        &[
            ("ipv6.output.enter", 0, 0, 1, 0),
            ("iface.queue.dequeue", 100, 0, 1, 0),
            ("link.transmit.enter", 100, 0, 1, 0),
            ("link.transmit.exit", 400, 0, 1, 0),
            ("device.queue.enqueue", 400, 0, 1, 0),
            ("ipv6.output.exit", 1000, 0, 1, 0),
        ],
    )
}

#[test]
fn records_sharing_a_read_are_one_probe_step() {
    let v = view(TABLE, 10.0, shared());
    let records = &v.threads[&1];
    // enter -> dequeue: one read; dequeue -> transmit enter: none.
    assert_eq!(v.probe_steps(records, 0, 1), 1);
    assert_eq!(v.probe_steps(records, 1, 2), 0);
    assert_eq!(v.probe_steps(records, 0, 5), 3);
    // The same on a copy of the records (not the view's own).
    let copy = records.clone();
    assert_eq!(v.probe_steps(&copy, 0, 5), 3);
    assert_eq!(v.probe_steps(&copy, 2, 4), 1);
}

#[test]
fn a_span_loses_one_overhead_per_read_inside_it() {
    let v = view(TABLE, 10.0, shared());
    let spans = rebuild(&v, &v.threads[&1]);
    let by_name = |enter: &str| {
        let loc = v.loc(enter).unwrap();
        *spans.spans.iter().find(|s| s.enter == loc).unwrap()
    };
    // The transmit: 300 cycles, one read apart.
    let transmit = by_name("link.transmit.enter");
    assert_eq!(transmit.inclusive, 290.0);
    // ipv6.output: 1000 cycles, three reads apart (100, 400, 1000), not
    // five records.
    let output = by_name("ipv6.output.enter");
    assert_eq!(output.inclusive, 970.0);
    assert_eq!(output.exclusive, 970.0 - 290.0);
}
