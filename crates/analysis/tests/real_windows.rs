//! Each message's windows on real runs, XTP beside TCP: traced messages
//! over IPv4 between two reference-stack hosts on an unlimited wire
//! (`traffic::reference::messages`), analysed as the lab does. The split
//! of every window by category and by layer must add up to it, hold no
//! negative or impossible figure, and charge XTP's spans where TCP's go.

use std::sync::OnceLock;

use analysis::messages::{analyse, CategoryTimes, Messages, StopAt};
use analysis::{all_spans, TraceView};
use probe::{Category, Layer};
use traffic::reference::messages::MessagesSpec;
use traffic::spec::{Family, Protocol};

mod support;

/// One run per protocol: a warm-up message, then each size twice.
const SIZES: [usize; 3] = [16, 3_000, 10_000];

/// XTP's `maxdata` and TCP's segment over IPv4 with the trace option on
/// a 1500-byte MTU: 1500 − 20 − 32 − 8 and 1500 − 20 − 20 − 12 − 8.
const PAYLOAD_PER_PACKET: usize = 1_440;

fn run(protocol: Protocol) -> (TraceView, Messages) {
    let mut spec = MessagesSpec::new(protocol, SIZES.to_vec(), 2, 1 << 18);
    spec.family = Family::V4;
    let (view, run) =
        support::traced_run(include_str!("../../../topologies/unlimited.toml"), &spec);
    let mut found = analyse(&view, &all_spans(&view), StopAt::OnTheWire).expect("analysed");
    let warmup = run.warmup_indices();
    found.messages.retain(|m| !warmup.contains(&m.index));
    (view, found)
}

fn xtp() -> &'static (TraceView, Messages) {
    static RUN: OnceLock<(TraceView, Messages)> = OnceLock::new();
    RUN.get_or_init(|| run(Protocol::Xtp))
}

fn tcp() -> &'static (TraceView, Messages) {
    static RUN: OnceLock<(TraceView, Messages)> = OnceLock::new();
    RUN.get_or_init(|| run(Protocol::Tcp))
}

/// The window's parts are non-negative and add up to it, by category and
/// by layer; the layers hold exactly the stack's category time.
fn closes(what: &str, window: &CategoryTimes, total: f64) {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    assert!(total.is_finite() && total > 0.0, "{what}: window {total}");
    assert!(window.other >= 0.0, "{what}: other {}", window.other);
    for (c, &ns) in &window.by_category {
        assert!(ns.is_finite() && ns >= 0.0, "{what}: {c} {ns}");
    }
    for (l, &ns) in &window.by_layer {
        assert!(ns.is_finite() && ns >= 0.0, "{what}: {l} {ns}");
    }
    let stack: f64 = window
        .by_category
        .iter()
        .filter(|(c, _)| !matches!(c, Category::Wire | Category::Instrumentation))
        .map(|(_, ns)| ns)
        .sum();
    assert!(close(window.stack_ns(), stack), "{what}: {window:?}");
    assert!(
        close(stack + window.wire_ns() + window.other, total),
        "{what}: categories {window:?} against {total}"
    );
    assert!(
        close(window.stack_ns() + window.wire_ns() + window.other, total),
        "{what}: layers {window:?} against {total}"
    );
}

fn every_window_closes(found: &Messages, protocol: &str) {
    assert_eq!(found.messages.len(), SIZES.len() * 2, "{protocol}");
    for m in &found.messages {
        let what = format!("{protocol} message {} ({} B)", m.index, m.size);
        let send = m.send.as_ref().unwrap_or_else(|| panic!("{what}: send"));
        let receive = m
            .receive
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: receive"));
        for (path, p) in [("send", send), ("receive", receive)] {
            let what = format!("{what}, {path}");
            assert!(p.start_ns <= p.stop_ns, "{what}: {p:?}");
            closes(&format!("{what} stop"), &p.categories, p.stop_ns);
            closes(&format!("{what} start"), &p.start_categories, p.start_ns);
        }
        assert_eq!(
            send.frames as usize,
            (m.size as usize).div_ceil(PAYLOAD_PER_PACKET),
            "{what}: payload packets"
        );
        let stops = send.stops.expect("send stops");
        assert!(stops.handed_to_device <= stops.on_the_wire, "{what}");
        // Both are streams: the acknowledgement of the last byte comes
        // back, after it left.
        let acked = stops
            .acknowledged
            .unwrap_or_else(|| panic!("{what}: acked"));
        assert!(acked >= send.stop_ns, "{what}: {stops:?}");
        let one_way = m.one_way_ns.unwrap_or_else(|| panic!("{what}: one way"));
        // From the sender's first byte, before the receive window opens.
        assert!(one_way >= receive.stop_ns, "{what}: {one_way}");
    }
}

#[test]
fn every_xtp_window_adds_up_by_category_and_by_layer() {
    every_window_closes(&xtp().1, "XTP");
}

#[test]
fn every_tcp_window_adds_up_by_category_and_by_layer() {
    every_window_closes(&tcp().1, "TCP");
}

/// Each protocol's own spans carry its transport time: XTP's trace has no
/// TCP site recording, and the transport layer of every send window holds
/// protocol-send time, of every receive window protocol-receive time.
#[test]
fn xtp_spans_are_the_transport_layers_as_tcps_are() {
    for (protocol, (view, found), own, other) in [
        ("XTP", xtp(), "xtp.output.enter", "tcp.output.enter"),
        ("TCP", tcp(), "tcp.output.enter", "xtp.output.enter"),
    ] {
        let records = |name: &str| {
            let loc = view.loc(name).expect("in the table");
            view.threads
                .values()
                .flatten()
                .filter(|r| r.loc == loc)
                .count()
        };
        assert!(records(own) > 0, "{protocol}");
        assert_eq!(records(other), 0, "{protocol}");
        for m in &found.messages {
            let send = m.send.as_ref().expect("send");
            let receive = m.receive.as_ref().expect("receive");
            let at = |w: &CategoryTimes, c: Category| w.by_category.get(&c).copied().unwrap_or(0.0);
            assert!(
                at(&send.categories, Category::ProtocolSend) > 0.0,
                "{protocol}"
            );
            // The window ends at the last byte queued, inside the last
            // packet's input span: only the earlier packets' inputs close
            // inside it.
            if m.size as usize > PAYLOAD_PER_PACKET {
                assert!(
                    at(&receive.categories, Category::ProtocolReceive) > 0.0,
                    "{protocol} {} B: {:?}",
                    m.size,
                    receive.categories
                );
            }
            // Copies are charged to the host layer, never to the
            // transport: the socket write's copy is in the send window.
            assert!(at(&send.categories, Category::DataMove) > 0.0, "{protocol}");
            let layer = |w: &CategoryTimes, l: Layer| w.by_layer.get(&l).copied().unwrap_or(0.0);
            assert!(layer(&send.categories, Layer::Host) > 0.0, "{protocol}");
            assert!(
                layer(&send.categories, Layer::Transport) > 0.0,
                "{protocol}"
            );
            assert!(
                layer(&receive.categories, Layer::Transport) > 0.0,
                "{protocol}"
            );
        }
    }
}
