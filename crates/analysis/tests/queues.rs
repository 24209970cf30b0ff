//! Queue figures on hand-built traces whose answers are known: FIFO
//! pairing per interface, datagram pairing by message number and flow,
//! byte-stream pairing by offset, unmatched dequeues, length series and
//! their downsampling, rates, and arbitrary input.

use analysis::queues::{self, downsample, LengthPoint, QueueOptions, QueueTrace};
use analysis::TraceView;
use probe::{Category, Kind, Layer, Location, Record};
use proptest::prelude::*;
use support::loc;

mod support;

/// Queue probes shaped like the reference stack's, numbered differently
/// on purpose (analysis finds them by name), with a span in between.
const LOCATIONS: &[Location] = &[
    loc(
        "tcp.output.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "iface.queue.dequeue",
        Layer::Link,
        Kind::Dequeue,
        Category::Link,
        Some("interface"),
    ),
    loc(
        "socket.recv_queue.enqueue",
        Layer::Socket,
        Kind::Enqueue,
        Category::Socket,
        Some("receive_socket"),
    ),
    loc(
        "iface.queue.enqueue",
        Layer::Link,
        Kind::Enqueue,
        Category::Link,
        Some("interface"),
    ),
    loc(
        "socket.send_queue.enqueue",
        Layer::Socket,
        Kind::Enqueue,
        Category::Socket,
        Some("send_socket"),
    ),
    loc(
        "socket.send_queue.dequeue",
        Layer::Socket,
        Kind::Dequeue,
        Category::Socket,
        Some("send_socket"),
    ),
    loc(
        "socket.recv_queue.dequeue",
        Layer::Socket,
        Kind::Dequeue,
        Category::Socket,
        Some("receive_socket"),
    ),
    loc(
        "tcp.output.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolSend,
        None,
    ),
];

const IFQ_IN: &str = "iface.queue.enqueue";
const IFQ_OUT: &str = "iface.queue.dequeue";
const SNDQ_IN: &str = "socket.send_queue.enqueue";
const SNDQ_OUT: &str = "socket.send_queue.dequeue";
const RCVQ_IN: &str = "socket.recv_queue.enqueue";
const RCVQ_OUT: &str = "socket.recv_queue.dequeue";

fn records(thread: u16, events: &[(&str, u64, u32, u32, u64)]) -> Vec<Record> {
    support::records(LOCATIONS, thread, events)
}

fn view(records: Vec<Record>) -> TraceView {
    support::view(LOCATIONS, 0.0, records)
}

fn analyse(records: Vec<Record>) -> Vec<QueueTrace> {
    queues::analyse(&view(records), &QueueOptions::default())
}

fn find<'a>(all: &'a [QueueTrace], queue: &str, thread: u16) -> &'a QueueTrace {
    all.iter()
        .find(|q| q.queue == queue && q.thread == thread)
        .unwrap_or_else(|| panic!("no {queue} on thread {thread}"))
}

fn delays(q: &QueueTrace) -> Vec<f64> {
    q.delays.iter().map(|d| d.delay_ns).collect()
}

fn lengths(q: &QueueTrace) -> Vec<(f64, u64, u64)> {
    q.length
        .iter()
        .map(|p| (p.t_ns, p.packets, p.bytes))
        .collect()
}

#[test]
fn queue_names_come_from_the_table_in_table_order() {
    let v = view(Vec::new());
    assert_eq!(
        queues::queue_names(&v),
        ["interface", "receive_socket", "send_socket"]
    );
    assert!(queues::analyse(&v, &QueueOptions::default()).is_empty());
}

#[test]
fn the_interface_queue_is_first_in_first_out() {
    // Three frames of one flow on interface 0 (aux is the interface).
    let q = analyse(records(
        1,
        &[
            (IFQ_IN, 1_000, 100, 7, 0),
            (IFQ_IN, 1_100, 200, 7, 0),
            (IFQ_IN, 1_200, 300, 7, 0),
            (IFQ_OUT, 1_250, 100, 7, 0),
            (IFQ_OUT, 1_400, 200, 7, 0),
            (IFQ_OUT, 2_000, 300, 7, 0),
        ],
    ));
    assert_eq!(q.len(), 1);
    let q = &q[0];
    assert_eq!((q.queue.as_str(), q.thread), ("interface", 1));
    // FIFO: 250, 300, 800 (LIFO would give 50, 300, 1000).
    assert_eq!(delays(q), [250.0, 300.0, 800.0]);
    assert_eq!(q.delays[2].bytes, 300);
    assert_eq!(
        lengths(q),
        [
            (0.0, 1, 100),
            (100.0, 2, 300),
            (200.0, 3, 600),
            (250.0, 2, 500),
            (400.0, 1, 300),
            (1000.0, 0, 0),
        ]
    );
    let c = &q.counts;
    assert_eq!((c.enqueues, c.dequeues, c.matched_dequeues), (3, 3, 3));
    assert_eq!((c.enqueued_bytes, c.dequeued_bytes), (600, 600));
    assert_eq!(
        (c.unmatched_dequeues, c.left_packets, c.left_bytes),
        (0, 0, 0)
    );
    assert_eq!((c.datagram_flows, c.stream_flows), (1, 0));
    let s = &q.stats;
    assert_eq!((s.max_packets, s.max_bytes), (3, 600));
    // Time-weighted over 0..1000 ns: packets 1·100 + 2·100 + 3·50 + 2·150 + 1·600.
    assert!((s.mean_packets - 1350.0 / 1000.0).abs() < 1e-9);
    let bytes = 100.0 * 100.0 + 300.0 * 100.0 + 600.0 * 50.0 + 500.0 * 150.0 + 300.0 * 600.0;
    assert!((s.mean_bytes - bytes / 1000.0).abs() < 1e-9);
    let d = s.delay.unwrap();
    assert_eq!(
        (d.min, d.median, d.p99, d.max),
        (250.0, 300.0, 800.0, 800.0)
    );
}

#[test]
fn each_interface_is_its_own_fifo() {
    let q = analyse(records(
        1,
        &[
            (IFQ_IN, 0, 100, 7, 0),
            (IFQ_IN, 10, 100, 7, 1),
            (IFQ_OUT, 20, 100, 7, 1),
            (IFQ_OUT, 50, 100, 7, 0),
        ],
    ));
    assert_eq!(delays(&q[0]), [10.0, 50.0]);
}

#[test]
fn datagrams_pair_by_message_number_and_flow() {
    // Two sockets (flows 1 and 2) both number their messages from 1; the
    // send queue is drained in another order than it was filled.
    let q = analyse(records(
        3,
        &[
            (SNDQ_IN, 0, 1000, 1, 1),
            (SNDQ_IN, 10, 500, 2, 1),
            (SNDQ_IN, 20, 1000, 1, 2),
            (SNDQ_OUT, 100, 500, 2, 1),
            (SNDQ_OUT, 200, 1000, 1, 1),
            (SNDQ_OUT, 300, 1000, 1, 2),
        ],
    ));
    let q = find(&q, "send_socket", 3);
    assert_eq!(delays(q), [90.0, 200.0, 280.0]);
    assert_eq!(q.delays[0].flow, 2);
    assert_eq!((q.counts.datagram_flows, q.counts.stream_flows), (2, 0));
    assert_eq!(q.stats.max_bytes, 2500);
}

#[test]
fn a_dequeue_of_what_was_queued_before_the_trace_is_counted() {
    let q = analyse(records(
        1,
        &[
            (IFQ_OUT, 0, 1500, 7, 0),
            (IFQ_IN, 10, 100, 7, 0),
            (IFQ_OUT, 30, 100, 7, 0),
        ],
    ));
    let q = &q[0];
    assert_eq!(q.counts.unmatched_dequeues, 1);
    assert_eq!(q.counts.unmatched_bytes, 1500);
    assert_eq!(q.counts.matched_dequeues, 1);
    // The length never goes below zero; the one pair has its delay.
    assert_eq!(lengths(q), [(0.0, 0, 0), (10.0, 1, 100), (30.0, 0, 0)]);
    assert_eq!(delays(q), [20.0]);
}

#[test]
fn a_tcp_send_queue_pairs_bytes_by_offset() {
    // One 10 000-byte write, acknowledged in three steps (the reference
    // stack: enqueue `len` = bytes written, `aux` = offset written;
    // dequeue `len` = bytes acked, `aux` = offset acked).
    let q = analyse(records(
        2,
        &[
            (SNDQ_IN, 0, 10_000, 5, 10_000),
            (SNDQ_OUT, 100, 2_840, 5, 2_840),
            (SNDQ_OUT, 200, 2_840, 5, 5_680),
            (SNDQ_OUT, 400, 4_320, 5, 10_000),
        ],
    ));
    let q = &q[0];
    assert_eq!((q.counts.stream_flows, q.counts.datagram_flows), (1, 0));
    // Every byte was written at 0: each acknowledgement's delay is its time.
    assert_eq!(delays(q), [100.0, 200.0, 400.0]);
    assert_eq!(q.delays[1].bytes, 2_840);
    assert_eq!(
        lengths(q),
        [
            (0.0, 1, 10_000),
            (100.0, 1, 7_160),
            (200.0, 1, 4_320),
            (400.0, 0, 0)
        ]
    );
    assert_eq!(q.counts.unmatched_dequeues, 0);
}

#[test]
fn a_dequeue_spanning_two_writes_reports_its_oldest_byte_and_the_mean() {
    let q = analyse(records(
        2,
        &[
            (SNDQ_IN, 0, 1_000, 5, 1_000),
            (SNDQ_IN, 50, 1_000, 5, 2_000),
            (SNDQ_OUT, 100, 1_500, 5, 1_500),
            (SNDQ_OUT, 300, 500, 5, 2_000),
        ],
    ));
    let q = &q[0];
    let first = q.delays[0];
    assert_eq!((first.delay_ns, first.bytes), (100.0, 1_500));
    // 1000 bytes waited 100 ns, 500 waited 50 ns.
    assert!((first.mean_delay_ns - (1_000.0 * 100.0 + 500.0 * 50.0) / 1_500.0).abs() < 1e-9);
    assert_eq!(q.delays[1].delay_ns, 250.0);
    // Two writes queued, then half of the second left.
    assert_eq!(
        lengths(q),
        [
            (0.0, 1, 1_000),
            (50.0, 2, 2_000),
            (100.0, 1, 500),
            (300.0, 0, 0)
        ]
    );
}

#[test]
fn a_stream_that_began_before_the_trace_has_unmatched_bytes() {
    let q = analyse(records(
        4,
        &[
            // Flow 9: bytes up to 4900 were queued before the trace; 300
            // of them are read, then 100 new ones arrive and are read.
            (RCVQ_OUT, 0, 300, 9, 4_900),
            (RCVQ_IN, 10, 100, 9, 5_000),
            (RCVQ_OUT, 40, 100, 9, 5_000),
            (RCVQ_IN, 50, 100, 9, 5_100),
            (RCVQ_OUT, 60, 100, 9, 5_100),
            (RCVQ_IN, 70, 100, 9, 5_200),
            // Flow 10: a read that takes 200 older bytes and 100 new ones.
            (RCVQ_IN, 80, 100, 10, 5_100),
            (RCVQ_OUT, 90, 300, 10, 5_100),
        ],
    ));
    let q = find(&q, "receive_socket", 4);
    assert_eq!(q.counts.stream_flows, 2);
    assert_eq!(q.counts.unmatched_dequeues, 1);
    assert_eq!(q.counts.matched_dequeues, 3);
    assert_eq!(delays(q), [30.0, 10.0, 10.0]);
    assert_eq!(q.counts.unmatched_bytes, 300 + 200);
    assert_eq!(q.delays[2].bytes, 100);
    assert_eq!(q.delays[2].flow, 10);
    // What flow 9 wrote last is still queued.
    assert_eq!((q.counts.left_packets, q.counts.left_bytes), (1, 100));
    assert_eq!(q.stats.max_bytes, 200);
}

#[test]
fn queues_are_reported_per_thread() {
    let mut all = records(1, &[(IFQ_IN, 0, 100, 7, 0), (IFQ_OUT, 10, 100, 7, 0)]);
    all.extend(records(
        2,
        &[
            (IFQ_IN, 5, 100, 8, 0),
            (IFQ_IN, 6, 100, 8, 0),
            (IFQ_OUT, 25, 100, 8, 0),
            (IFQ_OUT, 26, 100, 8, 0),
            (RCVQ_IN, 30, 100, 8, 1),
        ],
    ));
    let q = analyse(all);
    let order: Vec<(&str, u16)> = q.iter().map(|q| (q.queue.as_str(), q.thread)).collect();
    assert_eq!(
        order,
        [("interface", 1), ("interface", 2), ("receive_socket", 2)]
    );
    assert_eq!(delays(&q[0]), [10.0]);
    assert_eq!(delays(&q[1]), [20.0, 20.0]);
    assert_eq!(q[1].stats.max_packets, 2);
    // Times count from the earliest record of the whole trace.
    assert_eq!(q[1].length[0].t_ns, 5.0);
    assert_eq!(q[2].counts.left_packets, 1);
}

#[test]
fn a_counter_stepping_back_never_gives_a_negative_delay() {
    let q = analyse(records(
        1,
        &[(IFQ_IN, 1_000, 100, 7, 0), (IFQ_OUT, 900, 100, 7, 0)],
    ));
    assert_eq!(delays(&q[0]), [0.0]);
}

#[test]
fn rates_over_the_active_interval_and_in_windows() {
    // Ten 100-byte frames, one every 100 µs, each dequeued 50 µs later.
    let mut events = Vec::new();
    for i in 0..10u64 {
        events.push((IFQ_IN, i * 100_000, 100u32, 7u32, 0u64));
        events.push((IFQ_OUT, i * 100_000 + 50_000, 100, 7, 0));
    }
    let v = view(records(1, &events));
    let options = QueueOptions {
        window_ns: 500_000.0,
        ..QueueOptions::default()
    };
    let q = &queues::analyse(&v, &options)[0];
    let r = q.rates;
    assert_eq!(r.active_ns, 950_000.0);
    assert!((r.arrival_packets_per_s - 10.0 / 950e-6).abs() < 1e-6);
    assert!((r.departure_bytes_per_s - 1000.0 / 950e-6).abs() < 1e-6);
    assert_eq!(q.window_ns, 500_000.0);
    assert_eq!(q.windows.len(), 2);
    for w in &q.windows {
        assert_eq!((w.arrivals, w.departures), (5, 5));
        assert!((w.arrival_packets_per_s - 10_000.0).abs() < 1e-6);
        assert!((w.departure_bytes_per_s - 1_000_000.0).abs() < 1e-6);
    }
    assert_eq!(q.windows[1].t_ns, 500_000.0);
    assert!((q.stats.mean_packets - 500.0 / 950.0).abs() < 1e-9);
    assert!(q.delays.iter().all(|d| d.delay_ns == 50_000.0));
}

#[test]
fn quiet_windows_are_left_out_but_the_rate_drops_to_zero() {
    // Ten seconds apart with 1 ns windows: no ten billion windows, only
    // the two busy ones and the empty one after the first.
    let v = view(records(
        1,
        &[
            (IFQ_IN, 0, 100, 7, 0),
            (IFQ_IN, 0, 100, 7, 0),
            (IFQ_OUT, 10_000_000_000, 100, 7, 0),
        ],
    ));
    let options = QueueOptions {
        window_ns: 1.0,
        max_points: 10,
    };
    let q = &queues::analyse(&v, &options)[0];
    assert_eq!(q.window_ns, 1.0);
    let windows: Vec<(f64, u64, u64)> = q
        .windows
        .iter()
        .map(|w| (w.t_ns, w.arrivals, w.departures))
        .collect();
    assert_eq!(windows, [(0.0, 2, 0), (1.0, 0, 0), (1e10, 0, 1)]);
    assert_eq!(q.windows[0].arrival_packets_per_s, 2e9);
    assert_eq!(q.windows[1].arrival_packets_per_s, 0.0);
    // Bad widths fall back to the default.
    let options = QueueOptions {
        window_ns: f64::NAN,
        max_points: 10,
    };
    assert_eq!(
        queues::analyse(&v, &options)[0].window_ns,
        queues::DEFAULT_WINDOW_NS
    );
}

#[test]
fn long_length_series_are_bounded_and_keep_their_peaks() {
    // 20 000 frames through the queue one at a time, and once a burst of
    // 50 queued together.
    let mut events = Vec::new();
    let mut t = 0u64;
    for i in 0..20_000u64 {
        if i == 12_345 {
            for _ in 0..50 {
                events.push((IFQ_IN, t, 1000u32, 7u32, 0u64));
                t += 1;
            }
            for _ in 0..50 {
                events.push((IFQ_OUT, t, 1000, 7, 0));
                t += 1;
            }
        }
        events.push((IFQ_IN, t, 100, 7, 0));
        events.push((IFQ_OUT, t + 5, 100, 7, 0));
        t += 10;
    }
    let v = view(records(1, &events));
    let options = QueueOptions {
        max_points: 400,
        ..QueueOptions::default()
    };
    let q = &queues::analyse(&v, &options)[0];
    assert_eq!(q.length_events, events.len() as u64);
    assert!(q.length.len() <= 400, "{}", q.length.len());
    assert!(q.length.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(q
        .length
        .iter()
        .any(|p| p.packets == 50 && p.bytes == 50_000));
    assert_eq!(q.stats.max_packets, 50);
    // The series ends where the queue did: empty.
    let last = q.length.last().unwrap();
    assert_eq!((last.packets, last.bytes), (0, 0));
    assert_eq!(last.t_ns, (t - 10 + 5) as f64);
    assert_eq!(q.counts.matched_dequeues, 20_050);
}

#[test]
fn downsample_keeps_short_series_and_each_stretch_max_and_end() {
    let p = |t: f64, packets: u64, bytes: u64| LengthPoint {
        t_ns: t,
        packets,
        bytes,
    };
    let short = vec![p(0.0, 1, 1), p(1.0, 0, 0)];
    assert_eq!(downsample(short.clone(), 4000), short);
    // Eight points to at most four: two stretches of four.
    let pts = vec![
        p(0.0, 1, 10),
        p(1.0, 2, 90),
        p(2.0, 5, 20),
        p(3.0, 1, 10),
        p(4.0, 0, 0),
        p(5.0, 0, 0),
        p(6.0, 3, 300),
        p(7.0, 2, 200),
    ];
    assert_eq!(
        downsample(pts, 4),
        [p(1.0, 5, 90), p(3.0, 1, 10), p(6.0, 3, 300), p(7.0, 2, 200)]
    );
}

fn any_record(locs: u16) -> impl Strategy<Value = Record> {
    (
        0..locs,
        0u64..2_000,
        prop_oneof![0u32..3, any::<u32>()],
        0u32..3,
        prop_oneof![0u64..5, 0u64..5_000, any::<u64>()],
        0u16..3,
    )
        .prop_map(|(l, tsc, len, flow, aux, thread)| {
            Record::new(tsc, probe::Loc(l), len, flow, aux, thread)
        })
}

proptest! {
    #[test]
    fn arbitrary_records_never_panic_and_stay_consistent(
        records in proptest::collection::vec(any_record(LOCATIONS.len() as u16), 0..200),
        max_points in 0usize..20,
    ) {
        let v = view(records.clone());
        let options = QueueOptions { max_points, window_ns: 100.0 };
        for q in queues::analyse(&v, &options) {
            let c = q.counts;
            prop_assert_eq!(c.matched_dequeues as usize, q.delays.len());
            prop_assert!(c.matched_dequeues + c.unmatched_dequeues + c.inconsistent >= c.dequeues);
            prop_assert!(q.length.len() <= max_points.max(4));
            prop_assert!(q.length.iter().all(|p| p.packets <= q.stats.max_packets && p.bytes <= q.stats.max_bytes));
            prop_assert!(q.delays.iter().all(|d| d.delay_ns >= 0.0 && d.mean_delay_ns <= d.delay_ns));
            let events: u64 = q.windows.iter().map(|w| w.arrivals + w.departures).sum();
            prop_assert_eq!(events, c.enqueues + c.dequeues);
            prop_assert!(q.stats.mean_packets <= q.stats.max_packets as f64 + 1e-9);
            prop_assert!(q.windows.len() as u64 <= 2 * (c.enqueues + c.dequeues));
            prop_assert!(q.windows.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
        }
    }
}
