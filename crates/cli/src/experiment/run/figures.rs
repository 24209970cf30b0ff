//! Figures of one messages run drawn from its trace beyond the per-size
//! latencies: the SunOS study's component delays (Table 1) and packet
//! traces, and the messages as slices on the Perfetto timeline.

use analysis::histogram::{self, SpanHistograms};
use analysis::queues::QueueTrace;
use analysis::TraceView;
use report::model::Table;
use traffic::spec::Protocol;

/// The delay of each component of the path, per packet or per call (the
/// SunOS study's Table 1): the five queues from their probes, the
/// protocol layers and the copy from their spans.
pub(super) fn components_table(
    queues: &[QueueTrace],
    sender: &[SpanHistograms],
    receiver: &[SpanHistograms],
    sender_thread: Option<u16>,
    receiver_thread: Option<u16>,
) -> Table {
    let mut table = Table {
        caption: "Delay in each component, per packet (queues) or per call (functions), as the SunOS study's Table 1".into(),
        columns: ["component", "side", "mean µs", "median µs", "p99 µs", "samples"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    let row = |name: &str, side: &str, s: Option<histogram::Summary>| {
        s.map(|s| {
            vec![
                name.to_string(),
                side.to_string(),
                format!("{:.2}", s.mean / 1e3),
                format!("{:.2}", s.median / 1e3),
                format!("{:.2}", s.p99 / 1e3),
                s.count.to_string(),
            ]
        })
    };
    let queue = |prefix: &str, thread: Option<u16>| {
        queues
            .iter()
            .find(|q| q.queue.starts_with(prefix) && Some(q.thread) == thread)
            .and_then(|q| q.stats.delay)
    };
    let function = |side: &[SpanHistograms], names: &[&str]| {
        side.iter()
            .find(|h| names.contains(&h.name.as_str()))
            .and_then(|h| h.inclusive.summary)
    };
    let rows = [
        row(
            "send socket queue (written to acknowledged)",
            "sender",
            queue("send_socket ", sender_thread),
        ),
        row(
            "copy from the application (data.copy)",
            "sender",
            function(sender, &["data.copy"]),
        ),
        row(
            "protocol output (tcp.output / udp.output / xtp.output)",
            "sender",
            function(sender, &["tcp.output", "udp.output", "xtp.output"]),
        ),
        row(
            "IP output (ipv6.output / ipv4.output)",
            "sender",
            function(sender, &["ipv6.output", "ipv4.output"]),
        ),
        row(
            "interface queue",
            "sender",
            queue("interface ", sender_thread),
        ),
        row(
            "link transmit",
            "sender",
            function(sender, &["link.transmit"]),
        ),
        row(
            "device ring (handed over to transmit complete: waiting and serialisation)",
            "sender",
            queue("device ", sender_thread),
        ),
        row(
            "link receive",
            "receiver",
            function(receiver, &["link.receive"]),
        ),
        row(
            "IP input queue",
            "receiver",
            queue("ip_input ", receiver_thread),
        ),
        row(
            "IP input (ipv6.input / ipv4.input)",
            "receiver",
            function(receiver, &["ipv6.input", "ipv4.input"]),
        ),
        row(
            "protocol input (tcp.input / udp.input / xtp.input)",
            "receiver",
            function(receiver, &["tcp.input", "udp.input", "xtp.input"]),
        ),
        row(
            "receive socket queue (queued to read)",
            "receiver",
            queue("receive_socket ", receiver_thread),
        ),
        row(
            "copy to the application (data.copy)",
            "receiver",
            function(receiver, &["data.copy"]),
        ),
    ];
    table.rows = rows.into_iter().flatten().collect();
    table
}

/// Each message on the timeline: its whole path (first byte into the
/// sender's stack to the last byte queued for the receiving application),
/// its send path and its receive path, each on a track of its own.
pub(super) fn message_slices(
    found: &analysis::Messages,
    run: &str,
) -> Vec<probe::convert::Annotation> {
    let mut slices = Vec::new();
    for m in &found.messages {
        let name = format!("{run} message {}: {} B", m.index, m.size);
        if let (Some(send), Some(receive)) = (&m.send, &m.receive) {
            slices.push(probe::convert::Annotation {
                track: "messages".into(),
                name: name.clone(),
                begin: send.begin_tsc,
                end: receive.stop_tsc.max(send.stop_tsc),
            });
        }
        for (track, path) in [
            ("messages: send path", &m.send),
            ("messages: receive path", &m.receive),
        ] {
            if let Some(path) = path {
                slices.push(probe::convert::Annotation {
                    track: track.into(),
                    name: name.clone(),
                    begin: path.begin_tsc,
                    end: path.stop_tsc,
                });
            }
        }
    }
    slices
}

/// Points per packet-trace curve.
const TRACE_POINTS: usize = 800;

/// The SunOS study's packet traces: bytes written by the application,
/// put on the wire, taken off it and read by the receiving application,
/// against time; and the receiver's pure ACKs (XTP: its control packets,
/// the answers to status requests) placed on its receive queue's length
/// (does an ACK go out when the queue drains?).
pub(super) fn packet_trace(
    view: &TraceView,
    queues: &[QueueTrace],
    sender: Option<u16>,
    receiver: Option<u16>,
    protocol: Protocol,
) -> (Vec<analysis::site_trace::SiteTrace>, Vec<(f64, u64)>) {
    use analysis::site_trace::{site_trace, times_at};
    let (Some(sender), Some(receiver)) = (sender, receiver) else {
        return (Vec::new(), Vec::new());
    };
    let all = |_: &probe::Record| true;
    let sites = [
        ("socket.send_queue.enqueue", sender),
        ("link.transmit.enter", sender),
        ("link.receive.enter", receiver),
        ("socket.recv_queue.dequeue", receiver),
    ];
    let traces = sites
        .iter()
        .filter_map(|&(site, thread)| site_trace(view, site, thread, all, TRACE_POINTS))
        .collect();
    let length = queues
        .iter()
        .find(|q| q.thread == receiver && q.queue.starts_with("receive_socket "))
        .map(|q| q.length.as_slice())
        .unwrap_or_default();
    // An output span of no payload from the receiver.
    let output = match protocol {
        Protocol::Xtp => "xtp.output.enter",
        _ => "tcp.output.enter",
    };
    let acks = times_at(view, output, receiver, |r| r.len == 0, 20_000)
        .into_iter()
        .map(|t| {
            // The step holding at `t`.
            let at = length.partition_point(|p| p.t_ns <= t);
            (t, at.checked_sub(1).map_or(0, |i| length[i].bytes))
        })
        .collect();
    (traces, acks)
}
