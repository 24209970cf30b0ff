//! The analysis on hand-built traces whose answers are known: spans with
//! the probe overhead removed, and per-message start and stop latency on
//! both paths with the cost categories inside them.

use analysis::messages::{analyse, StopAt};
use analysis::{all_spans, TraceView};
use probe::{Category, Kind, Layer, Location, Record, Trace, TraceHeader};
use support::loc;

mod support;

/// A small location table shaped like the reference stack's (analysis
/// finds locations by name, so the numbers here differ on purpose).
const LOCATIONS: &[Location] = &[
    loc(
        "app.message.send",
        Layer::App,
        Kind::Point,
        Category::None,
        None,
    ),
    loc(
        "app.message.received",
        Layer::App,
        Kind::Point,
        Category::None,
        None,
    ),
    loc(
        "socket.send.enter",
        Layer::Socket,
        Kind::SpanEnter,
        Category::Socket,
        None,
    ),
    loc(
        "socket.send.exit",
        Layer::Socket,
        Kind::SpanExit,
        Category::Socket,
        None,
    ),
    loc(
        "tcp.output.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "tcp.output.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolSend,
        None,
    ),
    // XTP's spans, of the same layer and categories as TCP's.
    loc(
        "xtp.output.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "xtp.output.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "xtp.input.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolReceive,
        None,
    ),
    loc(
        "xtp.input.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolReceive,
        None,
    ),
    loc(
        "checksum.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::Checksum,
        None,
    ),
    loc(
        "checksum.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::Checksum,
        None,
    ),
    loc(
        "iface.queue.enqueue",
        Layer::Link,
        Kind::Enqueue,
        Category::Link,
        Some("interface"),
    ),
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
        "link.receive.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Link,
        None,
    ),
    loc(
        "link.receive.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Link,
        None,
    ),
    loc(
        "socket.recv_queue.enqueue",
        Layer::Socket,
        Kind::Enqueue,
        Category::Socket,
        Some("receive_socket"),
    ),
    loc(
        "device.queue.enqueue",
        Layer::Link,
        Kind::Enqueue,
        Category::Wire,
        Some("device"),
    ),
    loc(
        "device.queue.dequeue",
        Layer::Link,
        Kind::Dequeue,
        Category::Wire,
        Some("device"),
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
        "runner.wake.enter",
        Layer::Host,
        Kind::SpanEnter,
        Category::Instrumentation,
        None,
    ),
    loc(
        "runner.wake.exit",
        Layer::Host,
        Kind::SpanExit,
        Category::Instrumentation,
        None,
    ),
    loc(
        "link.receive.arrival",
        Layer::Link,
        Kind::Point,
        Category::Wire,
        None,
    ),
];

fn records(thread: u16, events: &[(&str, u64, u32, u32, u64)]) -> Vec<Record> {
    support::records(LOCATIONS, thread, events)
}

fn view(overhead: f64, records: Vec<Record>) -> TraceView {
    support::view(LOCATIONS, overhead, records)
}

const FLOW: u32 = 7;
const PEER: u32 = 9;

/// One 3000-byte message, sent as two segments, and an ACK-only segment
/// (no payload) queued between them that must not count.
fn sender() -> Vec<Record> {
    records(1, &sender_events())
}

type Event = (&'static str, u64, u32, u32, u64);

fn sender_events() -> Vec<Event> {
    vec![
        ("app.message.send", 1_000, 3000, FLOW, 0),
        ("socket.send.enter", 1_100, 3000, FLOW, 0),
        ("socket.send.exit", 1_300, 3000, FLOW, 3000),
        // First segment: output 1 500..2 100 with a checksum inside.
        ("tcp.output.enter", 1_500, 1500, FLOW, 0),
        ("checksum.enter", 1_600, 1500, FLOW, 0),
        ("checksum.exit", 1_800, 1500, FLOW, 0),
        ("iface.queue.enqueue", 2_000, 1574, FLOW, 0),
        ("tcp.output.exit", 2_100, 1500, FLOW, 0),
        // A bare ACK of the same flow: no payload.
        ("tcp.output.enter", 2_200, 0, FLOW, 0),
        ("iface.queue.enqueue", 2_300, 74, FLOW, 0),
        ("tcp.output.exit", 2_400, 0, FLOW, 0),
        // Second segment.
        ("tcp.output.enter", 2_500, 1500, FLOW, 0),
        ("iface.queue.enqueue", 2_600, 1574, FLOW, 0),
        ("tcp.output.exit", 2_700, 1500, FLOW, 0),
        // The interface sends all three in order.
        ("iface.queue.dequeue", 3_000, 1574, FLOW, 0),
        ("link.transmit.enter", 3_100, 1574, FLOW, 0),
        ("link.transmit.exit", 3_400, 1574, FLOW, 0),
        ("iface.queue.dequeue", 3_500, 74, FLOW, 0),
        ("link.transmit.enter", 3_600, 74, FLOW, 0),
        ("link.transmit.exit", 3_700, 74, FLOW, 0),
        ("iface.queue.dequeue", 3_800, 1574, FLOW, 0),
        ("link.transmit.enter", 3_900, 1574, FLOW, 0),
        ("link.transmit.exit", 4_200, 1574, FLOW, 0),
    ]
}

fn receiver() -> Vec<Record> {
    records(
        2,
        &[
            // Something of another flow first: not the message.
            ("link.receive.enter", 4_000, 74, 99, 0),
            ("link.receive.exit", 4_050, 74, 99, 0),
            ("link.receive.enter", 5_000, 1574, FLOW, 0),
            ("socket.recv_queue.enqueue", 5_400, 1500, PEER, 1500),
            ("link.receive.exit", 5_500, 1574, FLOW, 0),
            ("link.receive.enter", 6_000, 1574, FLOW, 0),
            ("socket.recv_queue.enqueue", 6_300, 1500, PEER, 3000),
            ("link.receive.exit", 6_400, 1574, FLOW, 0),
            ("app.message.received", 7_000, 3000, PEER, 0),
        ],
    )
}

#[test]
fn spans_take_one_overhead_per_probe_out() {
    let mut all = sender();
    all.extend(receiver());
    let v = view(10.0, all);
    let spans = all_spans(&v);
    let sender = &spans[&1];
    let first_output = sender
        .spans
        .iter()
        .find(|s| s.enter == support::at(LOCATIONS, "tcp.output.enter").0)
        .unwrap();
    // 600 cycles between enter and exit, 4 records apart: 600 - 4·10.
    assert_eq!(first_output.inclusive, 560.0);
    // Its checksum child: 200 - 1·10 = 190; exclusive 560 - 190.
    assert_eq!(first_output.exclusive, 370.0);
    let checksum = sender
        .spans
        .iter()
        .find(|s| s.enter == support::at(LOCATIONS, "checksum.enter").0)
        .unwrap();
    assert_eq!(checksum.inclusive, 190.0);
    assert_eq!(checksum.depth, 1);
    assert_eq!(sender.unmatched_exits, 0);
    assert_eq!(sender.unclosed, 0);
}

#[test]
fn the_send_path_runs_from_the_first_write_to_the_payload_frames() {
    let mut all = sender();
    all.extend(receiver());
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    assert_eq!(found.sender_thread, Some(1));
    assert_eq!(found.receiver_thread, Some(2));
    let m = &found.messages[0];
    assert_eq!((m.index, m.size), (0, 3000));
    let send = m.send.as_ref().unwrap();
    // First byte enters at 1 100; the first payload frame starts at 3 100
    // and the last payload frame (not the ACK) ends at 4 200.
    assert_eq!(send.start_ns, 2_000.0);
    assert_eq!(send.stop_ns, 3_100.0);
    assert_eq!(send.frames, 2);
    let c = &send.categories.by_category;
    assert_eq!(c[&Category::Checksum], 200.0);
    // Three outputs (600 + 200 + 200) less the checksum inside the first.
    assert_eq!(c[&Category::ProtocolSend], 800.0);
    // Three transmissions: 300 + 100 + 300.
    assert_eq!(c[&Category::Link], 700.0);
    assert_eq!(c[&Category::Socket], 200.0);
    // The rest of the 3 100 ns is in no span.
    assert_eq!(
        send.categories.other,
        3_100.0 - 200.0 - 800.0 - 700.0 - 200.0
    );
    // By layer: the outputs and the checksum inside them are the
    // transport's, the transmissions the link's, the write the socket's.
    let l = &send.categories.by_layer;
    assert_eq!(l[&Layer::Transport], 1_000.0);
    assert_eq!(l[&Layer::Link], 700.0);
    assert_eq!(l[&Layer::Socket], 200.0);
    assert_eq!(l.len(), 3);
    assert_eq!(send.categories.stack_ns() + send.categories.other, 3_100.0);
    // The start window (to the first payload frame's transmission at
    // 3 100) holds the three outputs, nothing of the link.
    let start = &send.start_categories;
    assert_eq!(start.by_layer[&Layer::Transport], 1_000.0);
    assert!(!start.by_layer.contains_key(&Layer::Link));
    assert_eq!(start.stack_ns() + start.other, send.start_ns);
}

/// `events` with TCP's spans renamed XTP's: the same sender as an XTP
/// association's (packets built in `xtp.output`, a data-less control
/// packet between the two data packets instead of the bare ACK).
fn as_xtp(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .map(|&(name, tsc, len, flow, aux)| {
            let name = match name {
                "tcp.output.enter" => "xtp.output.enter",
                "tcp.output.exit" => "xtp.output.exit",
                other => other,
            };
            (name, tsc, len, flow, aux)
        })
        .collect()
}

/// The receiver of [`receiver`] with each frame's bytes queued inside an
/// `xtp.input` span.
fn xtp_receiver() -> Vec<Record> {
    records(
        2,
        &[
            ("link.receive.enter", 5_000, 1574, FLOW, 0),
            ("xtp.input.enter", 5_100, 1540, FLOW, 0),
            ("socket.recv_queue.enqueue", 5_400, 1500, PEER, 1500),
            ("xtp.input.exit", 5_450, 1540, FLOW, 0),
            ("link.receive.exit", 5_500, 1574, FLOW, 0),
            ("link.receive.enter", 6_000, 1574, FLOW, 0),
            ("xtp.input.enter", 6_100, 1540, FLOW, 0),
            ("socket.recv_queue.enqueue", 6_300, 1500, PEER, 3000),
            ("xtp.input.exit", 6_350, 1540, FLOW, 0),
            ("link.receive.exit", 6_400, 1574, FLOW, 0),
            ("app.message.received", 7_000, 3000, PEER, 0),
        ],
    )
}

#[test]
fn an_xtp_message_is_attributed_as_a_tcp_one() {
    let mut all = records(1, &as_xtp(&sender_events()));
    all.extend(xtp_receiver());
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let send = found.messages[0].send.as_ref().expect("the send path");
    // Its payload packets are the two built in xtp.output with data; the
    // control packet between them is not one.
    assert_eq!(send.frames, 2);
    assert_eq!((send.start_ns, send.stop_ns), (2_000.0, 3_100.0));
    let c = &send.categories.by_category;
    assert_eq!(c[&Category::ProtocolSend], 800.0);
    assert_eq!(c[&Category::Checksum], 200.0);
    assert_eq!(c[&Category::Link], 700.0);
    let l = &send.categories.by_layer;
    assert_eq!(l[&Layer::Transport], 1_000.0);
    assert_eq!(l[&Layer::Link], 700.0);
    assert_eq!(l[&Layer::Socket], 200.0);
    // The receive path: xtp.input is protocol receive, in the transport.
    let receive = found.messages[0]
        .receive
        .as_ref()
        .expect("the receive path");
    assert_eq!((receive.start_ns, receive.stop_ns), (400.0, 1_300.0));
    let c = &receive.categories;
    // The first input (350) and the second up to the window's end (6 300)
    // is not whole: only the first counts.
    assert_eq!(c.by_category[&Category::ProtocolReceive], 350.0);
    assert_eq!(c.by_layer[&Layer::Transport], 350.0);
    // The first frame's link span less the input inside it.
    assert_eq!(c.by_layer[&Layer::Link], 500.0 - 350.0);
    for (window, total) in [(c, receive.stop_ns), (&send.categories, send.stop_ns)] {
        assert_eq!(window.stack_ns() + window.wire_ns() + window.other, total);
        let categories: f64 = window.by_category.values().sum();
        assert_eq!(categories + window.other, total);
    }
}

#[test]
fn an_xtp_send_queue_is_a_stream_acknowledged_like_tcps() {
    let tcp: Vec<Event> = sender_on_a_device()
        .iter()
        .map(|r| {
            let name = LOCATIONS[r.loc as usize].name;
            (name, r.tsc, r.len, r.flow, r.aux)
        })
        .collect();
    let v = view(0.0, records(1, &as_xtp(&tcp)));
    let found = analyse(&v, &all_spans(&v), StopAt::Acknowledged).unwrap();
    let send = found.messages[0].send.as_ref().expect("acknowledged");
    assert_eq!(send.stop_ns, 9_000.0 - 1_100.0);
    let stops = send.stops.unwrap();
    assert_eq!(stops.on_the_wire, Some(4_500.0));
    assert_eq!(send.categories.by_category[&Category::Wire], 1_750.0);
}

#[test]
fn the_receive_path_runs_from_the_first_frame_of_the_flow_to_the_socket() {
    let mut all = sender();
    all.extend(receiver());
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let m = &found.messages[0];
    let receive = m.receive.as_ref().unwrap();
    // The other flow's frame at 4 000 is not the message's first.
    assert_eq!(receive.start_ns, 400.0);
    assert_eq!(receive.stop_ns, 1_300.0);
    assert_eq!(receive.frames, 2);
    // From the first byte into the sender (1 100) to the last into the
    // receiver's socket (6 300): one counter on one machine.
    assert_eq!(m.one_way_ns, Some(5_200.0));
}

#[test]
fn latencies_lose_one_overhead_per_record_between_their_ends() {
    let mut all = sender();
    all.extend(receiver());
    let v = view(10.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let send = found.messages[0].send.as_ref().unwrap();
    // socket.send.enter is record 1, the first link.transmit.enter record
    // 15, the last link.transmit.exit record 22.
    assert_eq!(send.start_ns, 2_000.0 - 14.0 * 10.0);
    assert_eq!(send.stop_ns, 3_100.0 - 21.0 * 10.0);
    assert_eq!(send.probes, 21);
}

#[test]
fn a_trace_without_the_message_marks_has_no_messages() {
    let mut all = sender();
    all.retain(|r| r.loc != support::at(LOCATIONS, "app.message.send").0);
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    assert!(found.messages.is_empty());
}

#[test]
fn a_table_without_the_sites_is_refused_by_name() {
    const OTHER: &[Location] = &[loc(
        "something.else",
        Layer::App,
        Kind::Point,
        Category::None,
        None,
    )];
    let trace = Trace::new(TraceHeader::new(1e9, 0.0, 0, "x"), OTHER, Vec::new());
    let v = TraceView::new(&trace).unwrap();
    let err = analyse(&v, &all_spans(&v), StopAt::HandedToDevice)
        .unwrap_err()
        .to_string();
    assert!(err.contains("app.message.send"), "{err}");
}

/// The sender of [`sender`] on a device that serialises: each frame the
/// link accepts enters the device ring 50 cycles after the link took it,
/// and leaves when its last bit has (the 74-byte ACK between the two
/// payload frames too); the stream's bytes 0..3000 are written, then
/// acknowledged in two steps, only the second reaching the message's end.
fn sender_on_a_device() -> Vec<Record> {
    let mut events = Vec::new();
    for event in sender_events() {
        events.push(event);
        match event.0 {
            "socket.send.enter" => {
                events.push(("socket.send_queue.enqueue", 1_200, 3000, FLOW, 3000))
            }
            "link.transmit.exit" => {
                events.push(("device.queue.enqueue", event.1 + 50, event.2, FLOW, 0))
            }
            _ => {}
        }
    }
    // The wire takes 1 000 per full frame: completions at 4 450, 4 550
    // (the ACK) and 5 550; the host sees them when it polls.
    events.extend([
        ("device.queue.dequeue", 4_500, 1574, FLOW, 0),
        ("device.queue.dequeue", 4_600, 74, FLOW, 0),
        ("device.queue.dequeue", 5_600, 1574, FLOW, 0),
        ("socket.send_queue.dequeue", 8_000, 1500, FLOW, 1500),
        ("socket.send_queue.dequeue", 9_000, 1500, FLOW, 3000),
    ]);
    records(1, &events)
}

#[test]
fn on_the_wire_the_send_path_ends_when_the_last_payload_frame_has_left() {
    let mut all = sender_on_a_device();
    all.extend(receiver());
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::OnTheWire).unwrap();
    assert_eq!(found.stop_at, StopAt::OnTheWire);
    let send = found.messages[0].send.as_ref().unwrap();
    // From 1 100 to the last payload frame's completion at 5 600.
    assert_eq!(send.stop_ns, 4_500.0);
    let stops = send.stops.unwrap();
    assert_eq!(stops.handed_to_device, Some(3_100.0));
    assert_eq!(stops.on_the_wire, Some(4_500.0));
    assert_eq!(stops.acknowledged, Some(7_900.0));
    let c = &send.categories;
    // Time in no span while the device held a frame: from the first
    // enqueue (3 450) to 3 600, 3 700..3 900 and 4 200..5 600.
    assert_eq!(c.by_category[&Category::Wire], 150.0 + 200.0 + 1_400.0);
    // The categories and `other` make up the whole window.
    let sum: f64 = c.by_category.values().sum::<f64>() + c.other;
    assert_eq!(sum, send.stop_ns);
}

#[test]
fn acknowledged_ends_at_the_ack_that_reaches_the_messages_last_byte() {
    let v = view(0.0, sender_on_a_device());
    let found = analyse(&v, &all_spans(&v), StopAt::Acknowledged).unwrap();
    let send = found.messages[0].send.as_ref().unwrap();
    assert_eq!(send.stop_ns, 9_000.0 - 1_100.0);
    // After the last completion (5 600) nothing is on the wire: waiting
    // for the acknowledgement is `other`.
    assert_eq!(send.categories.by_category[&Category::Wire], 1_750.0);
    assert!(send.categories.other >= 9_000.0 - 5_600.0);
}

#[test]
fn on_the_wire_needs_every_payload_frame_completed() {
    let mut records = sender_on_a_device();
    // The trace ends before the last frame's completion.
    records.truncate(records.len() - 3);
    let v = view(0.0, records);
    let found = analyse(&v, &all_spans(&v), StopAt::OnTheWire).unwrap();
    assert!(found.messages[0].send.is_none());
    // Handed to the device it was.
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    assert_eq!(found.messages[0].send.as_ref().unwrap().stop_ns, 3_100.0);
}

#[test]
fn a_trace_without_device_probes_cannot_say_on_the_wire() {
    let v = view(0.0, sender());
    let err = analyse(&v, &all_spans(&v), StopAt::OnTheWire);
    assert!(err.is_ok(), "the table has the device sites: {err:?}");
    assert!(err.unwrap().messages[0].send.is_none());
}

#[test]
fn on_the_receive_path_waiting_for_later_frames_is_wire_time() {
    let mut all = sender();
    all.extend(receiver());
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let receive = found.messages[0].receive.as_ref().unwrap();
    // Window 5 000..6 300: frames arrive at 5 000 and 6 000; between the
    // first frame's processing (ends 5 500) and the second's arrival the
    // receiver waits for the wire.
    let c = &receive.categories;
    assert_eq!(c.by_category[&Category::Wire], 500.0);
    // The second frame's span ends after the window: only the first
    // counts as link time, the rest of the second is `other`.
    assert_eq!(c.by_category[&Category::Link], 500.0);
    assert_eq!(c.other, 300.0);
    let sum: f64 = c.by_category.values().sum::<f64>() + c.other;
    assert_eq!(sum, receive.stop_ns);
}

#[test]
fn the_receive_path_starts_when_the_first_frame_arrived_not_when_it_was_read() {
    // The receiver looked at the first frame 300 ns after it had arrived
    // whole: the window opens at the arrival, the wait is wire time.
    let mut all = sender();
    all.extend(receiver_with(&[(
        "link.receive.arrival",
        4_999,
        1574,
        FLOW,
        300,
    )]));
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let receive = found.messages[0].receive.as_ref().unwrap();
    assert_eq!(receive.start_ns, 400.0 + 300.0);
    assert_eq!(receive.stop_ns, 1_300.0 + 300.0);
    assert_eq!(
        receive.categories.by_category[&Category::Wire],
        500.0 + 300.0
    );
    // What the receiver did between the arrival and its link.receive (a
    // checksum span standing for taking the frame in) is in the window,
    // in its category, not wire time.
    let mut all = sender();
    all.extend(receiver_with(&[
        ("checksum.enter", 4_800, 1574, FLOW, 0),
        ("checksum.exit", 4_900, 1574, FLOW, 0),
        ("link.receive.arrival", 4_999, 1574, FLOW, 300),
    ]));
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let receive = found.messages[0].receive.as_ref().unwrap();
    assert_eq!(receive.stop_ns, 1_600.0);
    assert_eq!(receive.categories.by_category[&Category::Checksum], 100.0);
    assert_eq!(
        receive.categories.by_category[&Category::Wire],
        500.0 + 200.0
    );
    // Another flow's arrival record, or one not right before the frame,
    // moves nothing.
    let mut unrelated = receiver_with(&[("link.receive.arrival", 4_999, 1574, 99, 300)]);
    unrelated.extend(sender());
    let v = view(0.0, unrelated);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    assert_eq!(found.messages[0].receive.as_ref().unwrap().stop_ns, 1_300.0);
}

/// The receiver's records with `extra` just before its first frame of the
/// flow.
fn receiver_with(extra: &[(&str, u64, u32, u32, u64)]) -> Vec<Record> {
    let mut receiver = receiver();
    let at = receiver.iter().position(|r| r.tsc == 5_000).unwrap();
    receiver.splice(at..at, records(2, extra));
    receiver
}

#[test]
fn frames_of_other_flows_are_not_the_messages() {
    // Another flow's frame arrives between the message's two (the stack
    // gives later IPv6 fragments their first fragment's flow, so the
    // message's own frames all carry it).
    let mut receiver = receiver();
    let other = records(
        2,
        &[
            ("link.receive.enter", 5_700, 74, 99, 0),
            ("link.receive.exit", 5_750, 74, 99, 0),
        ],
    );
    let at = receiver
        .iter()
        .position(|r| r.tsc == 6_000)
        .expect("the second frame");
    receiver.splice(at..at, other);
    let mut all = sender();
    all.extend(receiver);
    let v = view(0.0, all);
    let found = analyse(&v, &all_spans(&v), StopAt::HandedToDevice).unwrap();
    let receive = found.messages[0].receive.as_ref().unwrap();
    assert_eq!(receive.frames, 2);
    assert_eq!(receive.stop_ns, 1_300.0);
}

#[test]
fn spans_shorter_than_one_probe_are_below_the_resolution() {
    let mut all = sender();
    all.extend(receiver());
    // One probe costs 150 cycles: the 200-cycle checksum less one record
    // inside it is 50, below the floor; the 300-cycle transmissions less
    // one record (150) are not.
    let v = view(150.0, all);
    let spans = all_spans(&v);
    let r = analysis::resolution::by_category(&v, spans.values());
    assert_eq!(r[&Category::Checksum].spans, 1);
    assert_eq!(r[&Category::Checksum].below, 1);
    assert_eq!(r[&Category::Checksum].share_below(), 1.0);
    // Link: three transmissions (300, 100 and 300 cycles, one record
    // apart: 150, 0, 150 left) and three receptions (the other flow's 50
    // cycles; 500 and 400 with a record inside, two apart: 200 and 100
    // left). Below 150: the short transmission and two receptions.
    let link = r[&Category::Link];
    assert_eq!((link.spans, link.below), (6, 3));
}

#[test]
fn the_tools_own_work_is_taken_out_where_it_held_the_path_up() {
    let mut events: Vec<Event> = Vec::new();
    for r in sender_on_a_device() {
        let name = LOCATIONS[r.loc as usize].name;
        events.push((name, r.tsc, r.len, r.flow, r.aux));
        // The runner's work: once before anything is on the wire (it
        // delays the message), once while the last frame is on the wire
        // (the wire sets the pace then).
        if name == "socket.send.exit" {
            events.push(("runner.wake.enter", 1_310, 0, 0, 0));
            events.push(("runner.wake.exit", 1_410, 0, 0, 0));
        }
        if name == "device.queue.enqueue" && r.tsc == 4_250 {
            events.push(("runner.wake.enter", 4_260, 0, 0, 0));
            events.push(("runner.wake.exit", 4_360, 0, 0, 0));
        }
    }
    let v = view(0.0, records(1, &events));
    let found = analyse(&v, &all_spans(&v), StopAt::OnTheWire).unwrap();
    let send = found.messages[0].send.as_ref().unwrap();
    // 4 500 less the first wake's 100; the second overlapped the wire.
    assert_eq!(send.stop_ns, 4_400.0);
    assert_eq!(send.stops.unwrap().handed_to_device, Some(3_000.0));
    let c = &send.categories;
    assert_eq!(c.by_category[&Category::Instrumentation], 100.0);
    // The wire's 1 750 with the overlapped wake inside it.
    assert_eq!(c.by_category[&Category::Wire], 150.0 + 200.0 + 1_400.0);
    let stack: f64 = c
        .by_category
        .iter()
        .filter(|(k, _)| **k != Category::Instrumentation)
        .map(|(_, v)| v)
        .sum();
    assert_eq!(stack + c.other, send.stop_ns);
}

#[test]
fn a_datagram_send_queue_has_no_acknowledged_stop() {
    // A datagram socket numbers its datagrams in the send queue's `aux`:
    // datagram 7 of 3000 bytes queued and taken, which acknowledges
    // nothing even though 7 < 3000 could pass for an offset.
    let events: Vec<Event> = sender_on_a_device()
        .iter()
        .map(|r| {
            let name = LOCATIONS[r.loc as usize].name;
            let aux = match name {
                "socket.send_queue.enqueue" | "socket.send_queue.dequeue" => 7,
                _ => r.aux,
            };
            (name, r.tsc, r.len, r.flow, aux)
        })
        .collect();
    let v = view(0.0, records(1, &events));
    let found = analyse(&v, &all_spans(&v), StopAt::OnTheWire).unwrap();
    let send = found.messages[0].send.as_ref().unwrap();
    assert_eq!(send.stops.unwrap().acknowledged, None);
    assert_eq!(send.stop_ns, 4_500.0);
    let found = analyse(&v, &all_spans(&v), StopAt::Acknowledged).unwrap();
    assert!(found.messages[0].send.is_none());
}
