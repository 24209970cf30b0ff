//! The SunOS study's protocol processing delay on hand-built traces: which
//! gaps count as a window burst's, which packets as received, and what is
//! taken out of each (probe cost, the tool's own spans).

use analysis::protocol_delay::{analyse, Side};
use analysis::{all_spans, TraceView};
use probe::{Category, Kind, Layer, Location};
use support::{loc, records};

mod support;

const LOCATIONS: &[Location] = &[
    loc(
        "app.message.send",
        Layer::App,
        Kind::Point,
        Category::None,
        None,
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
        "runner.wake.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Instrumentation,
        None,
    ),
    loc(
        "runner.wake.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Instrumentation,
        None,
    ),
];

const FLOW: u32 = 7;

fn side<'a>(view: &'a TraceView, spans: &'a analysis::spans::ThreadSpans, thread: u16) -> Side<'a> {
    Side {
        records: &view.threads[&thread],
        spans,
    }
}

#[test]
fn bursts_end_at_an_acknowledgement_and_the_tools_work_is_taken_out() {
    // 1 GHz counter, 10-cycle probes. Sender (thread 1): a message, three
    // packets 1000, 1500 and 3000 cycles apart (the last with a 400-cycle
    // runner wake-up between), an ACK, then one more packet, and a packet
    // of another flow.
    let mut recs = records(
        LOCATIONS,
        1,
        &[
            ("app.message.send", 0, 0, FLOW, 0),
            ("link.transmit.enter", 100, 1514, FLOW, 0),
            ("link.transmit.exit", 200, 1514, FLOW, 0),
            ("link.transmit.enter", 1100, 1514, FLOW, 0),
            ("link.transmit.exit", 1200, 1514, FLOW, 0),
            ("link.transmit.enter", 2600, 1514, FLOW, 0),
            ("link.transmit.exit", 2700, 1514, FLOW, 0),
            ("runner.wake.enter", 3000, 0, 0, 0),
            ("runner.wake.exit", 3410, 0, 0, 0),
            ("link.transmit.enter", 5600, 1514, FLOW, 0),
            ("link.transmit.exit", 5700, 1514, FLOW, 0),
            ("link.receive.enter", 6000, 60, FLOW, 0),
            ("link.receive.exit", 6100, 60, FLOW, 0),
            ("link.transmit.enter", 9000, 1514, FLOW, 0),
            ("link.transmit.exit", 9100, 1514, FLOW, 0),
            ("link.transmit.enter", 9500, 1514, 99, 0),
            ("link.transmit.exit", 9600, 1514, 99, 0),
        ],
    );
    // Receiver (thread 2): a packet taken up and queued; a packet of
    // another flow; a packet whose bytes come only after another frame
    // (no sample); a packet queued.
    recs.extend(records(
        LOCATIONS,
        2,
        &[
            ("link.receive.enter", 1000, 1514, FLOW, 0),
            ("socket.recv_queue.enqueue", 1800, 1420, 3, 0),
            ("link.receive.exit", 1900, 1514, FLOW, 0),
            ("link.receive.enter", 2000, 1514, 99, 0),
            ("socket.recv_queue.enqueue", 2500, 1420, 3, 0),
            ("link.receive.exit", 2600, 1514, 99, 0),
            ("link.receive.enter", 3000, 1514, FLOW, 0),
            ("link.receive.exit", 3100, 1514, FLOW, 0),
            ("link.receive.enter", 3200, 60, 99, 0),
            ("socket.recv_queue.enqueue", 3500, 1420, 3, 0),
            ("link.receive.exit", 3600, 60, 99, 0),
            ("link.receive.enter", 4000, 1514, FLOW, 0),
            ("socket.recv_queue.enqueue", 4610, 1420, 3, 0),
            ("link.receive.exit", 4700, 1514, FLOW, 0),
        ],
    ));
    let view = support::view(LOCATIONS, 10.0, recs);
    let spans = all_spans(&view);
    let delay = analyse(
        &view,
        side(&view, &spans[&1], 1),
        side(&view, &spans[&2], 2),
        FLOW,
        0,
    );
    let send = delay.send.expect("gaps");
    // Gaps: 1000 − 2 steps × 10; 1500 − 2 × 10; 3000 − 4 × 10 − the
    // wake-up (410 − 10); the packet after the ACK starts a new burst,
    // and the other flow's packet is no gap of this one.
    assert_eq!(send.summary.count, 3, "{send:?}");
    assert_eq!(send.summary.min, 980.0);
    assert_eq!(send.summary.median, 1480.0);
    assert_eq!(send.summary.max, 3000.0 - 40.0 - 400.0);
    // Receive: 800 − 10 and 610 − 10; the packet whose enqueue came after
    // another frame and the other flow's are none.
    let receive = delay.receive.expect("packets");
    assert_eq!(receive.summary.count, 2, "{receive:?}");
    assert_eq!(receive.summary.min, 600.0);
    assert_eq!(receive.summary.max, 790.0);

    // From a later counter value on: only what began after it.
    let later = analyse(
        &view,
        side(&view, &spans[&1], 1),
        side(&view, &spans[&2], 2),
        FLOW,
        1100,
    );
    assert_eq!(later.send.map(|h| h.summary.count), Some(2));
    assert_eq!(later.receive.map(|h| h.summary.count), Some(1));
}
