//! Queues and the call path on real runs: traced TCP and UDP messages
//! over IPv6 between two reference-stack hosts on a Fast Ethernet wire
//! (the IPv6 study's measurement, `traffic::reference::messages`). Needs
//! `stack` and `traffic` with their `probes` feature as dev-dependencies.

use std::sync::OnceLock;

use analysis::callpath::{self, MessageSpans};
use analysis::queues::{self, QueueOptions, QueueTrace};
use analysis::{all_spans, TraceView};
use traffic::reference::messages::MessagesSpec;
use traffic::spec::Protocol;

mod support;

/// One run per protocol shared by the tests: a warm-up message of the
/// largest size, then each of two sizes twice.
fn tcp_run() -> &'static (TraceView, u32) {
    static RUN: OnceLock<(TraceView, u32)> = OnceLock::new();
    RUN.get_or_init(|| run(Protocol::Tcp))
}

fn udp_run() -> &'static (TraceView, u32) {
    static RUN: OnceLock<(TraceView, u32)> = OnceLock::new();
    RUN.get_or_init(|| run(Protocol::Udp))
}

/// TCP: messages of several segments. UDP: datagrams that need no
/// fragmentation (a fragmented first datagram is lost while neighbour
/// discovery runs, and the run would wait for it).
fn sizes(protocol: Protocol) -> [usize; 2] {
    match protocol {
        Protocol::Udp => [1_000, 1_200],
        _ => [3_000, 10_000],
    }
}

fn run(protocol: Protocol) -> (TraceView, u32) {
    let spec = MessagesSpec::new(protocol, sizes(protocol).to_vec(), 2, 1 << 18);
    let (view, run) = support::traced_run(
        include_str!("../../../topologies/fast-ethernet.toml"),
        &spec,
    );
    (view, run.sender_flow)
}

fn role(view: &TraceView, queue: &str) -> Vec<QueueTrace> {
    queues::analyse(view, &QueueOptions::default())
        .into_iter()
        .filter(|q| q.queue == queue)
        .collect()
}

#[test]
fn every_interface_dequeue_pairs_with_an_enqueue() {
    let (view, _) = tcp_run();
    let ifq = role(view, "interface");
    // Both hosts transmit (data one way, ACKs the other).
    assert_eq!(ifq.len(), 2, "one interface queue per host thread");
    for q in &ifq {
        let c = q.counts;
        assert!(c.dequeues > 0);
        assert_eq!(c.unmatched_dequeues, 0, "{c:?}");
        assert_eq!(c.matched_dequeues, c.dequeues);
        assert_eq!(c.stream_flows, 0, "frames are datagrams");
        // The host sends every queued frame in the same poll.
        assert_eq!((c.left_packets, c.left_bytes), (0, 0));
        assert_eq!(c.enqueued_bytes, c.dequeued_bytes);
        assert!(q.delays.iter().all(|d| d.delay_ns >= 0.0 && d.bytes > 0));
        let d = q.stats.delay.expect("delays");
        assert!(d.min >= 0.0 && d.max >= d.median);
        assert!(q.stats.max_packets >= 1);
        assert!(q.rates.arrival_packets_per_s > 0.0);
    }
}

#[test]
fn the_tcp_socket_queues_pair_as_byte_streams() {
    let (view, _) = tcp_run();
    for name in ["send_socket", "receive_socket"] {
        let qs = role(view, name);
        assert_eq!(qs.len(), 1, "{name} on one thread");
        let q = &qs[0];
        let c = q.counts;
        assert_eq!((c.stream_flows, c.datagram_flows), (1, 0), "{name}: {c:?}");
        assert_eq!(
            (c.unmatched_dequeues, c.unmatched_bytes, c.inconsistent),
            (0, 0, 0)
        );
        assert!(c.matched_dequeues > 0);
        let total: u64 = 10_000 + 2 * 3_000 + 2 * 10_000;
        assert_eq!(
            c.enqueued_bytes, total,
            "{name}: every byte written / delivered"
        );
        assert!(q
            .delays
            .iter()
            .all(|d| d.delay_ns >= 0.0 && d.mean_delay_ns <= d.delay_ns));
        // Bytes taken by the dequeues and still queued add up.
        let taken: u64 = q.delays.iter().map(|d| d.bytes).sum();
        assert_eq!(taken + c.left_bytes, total, "{name}");
    }
}

#[test]
fn the_ip_input_queue_pairs_up() {
    let (view, _) = tcp_run();
    for q in role(view, "ip_input") {
        assert_eq!(q.counts.unmatched_dequeues, 0);
        assert_eq!(q.counts.matched_dequeues, q.counts.dequeues);
    }
}

#[test]
fn the_common_send_path_nests_ipv6_output_in_tcp_output() {
    let (view, flow) = tcp_run();
    let spans = all_spans(view);
    let mark = view.loc(callpath::MESSAGE_SEND).unwrap();
    let sender = view.thread_with(mark, Some(*flow)).expect("the sender");
    let thread = &spans[&sender];
    let roots = callpath::message_roots(view, thread, sender, Some(*flow));
    assert_eq!(roots.len(), 5);
    let messages: Vec<MessageSpans> = roots
        .iter()
        .map(|(_, r)| MessageSpans {
            spans: thread,
            roots: r,
        })
        .collect();
    let tree = callpath::common_path(view, &messages, 0.5);
    let text = callpath::render_text(&tree);
    let output = tree
        .find(&["tcp.output"])
        .unwrap_or_else(|| panic!("{text}"));
    let ipv6 = tree
        .find(&["tcp.output", "ipv6.output"])
        .unwrap_or_else(|| panic!("{text}"));
    // A connection sends on its cached path (`iface::host::path`): the
    // messages after the first make no route or neighbour lookup, so
    // neither is on the common path.
    for lookup in ["neighbor.lookup", "route.lookup"] {
        assert!(
            tree.find(&["tcp.output", "ipv6.output", lookup]).is_none()
                && tree.find(&["tcp.output", lookup]).is_none(),
            "{text}"
        );
    }
    assert!(tree.find(&["socket.send", "data.copy"]).is_some(), "{text}");
    // The link transmits from the interface queue after the output
    // returned: a top-level node of its own, after tcp.output.
    let tx = tree
        .find(&["link.transmit"])
        .unwrap_or_else(|| panic!("{text}"));
    assert!(tx > ipv6);
    let (o, i) = (&tree.nodes[output], &tree.nodes[ipv6]);
    assert!(
        o.calls_per_message >= 2.0,
        "a 3 000-byte message is 3 segments"
    );
    assert_eq!(i.calls_per_message, o.calls_per_message);
    assert!(o.inclusive_ns >= i.inclusive_ns && i.inclusive_ns > 0.0);
    assert!(o.exclusive_ns <= o.inclusive_ns);
    assert_eq!(
        tree.nodes[tx].calls_per_message, o.calls_per_message,
        "{text}"
    );
    eprintln!("{text}");
}

#[test]
fn the_udp_socket_queues_pair_datagrams_by_message_number() {
    let (view, _) = udp_run();
    for name in ["send_socket", "receive_socket"] {
        let qs = role(view, name);
        assert_eq!(qs.len(), 1, "{name} on one thread");
        let c = qs[0].counts;
        assert_eq!((c.stream_flows, c.datagram_flows), (0, 1), "{name}: {c:?}");
        // Five messages, each one datagram through each queue.
        assert_eq!(
            (c.enqueues, c.dequeues, c.matched_dequeues),
            (5, 5, 5),
            "{name}"
        );
        assert_eq!(c.unmatched_dequeues, 0);
        assert_eq!(c.enqueued_bytes, 1_200 + 2 * 1_000 + 2 * 1_200);
        assert_eq!(qs[0].delays[1].bytes, 1_000);
    }
    for q in role(view, "interface") {
        assert_eq!(q.counts.unmatched_dequeues, 0);
        assert_eq!(q.counts.left_packets, 0);
    }
}
