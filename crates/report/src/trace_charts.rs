//! The charts of a run of a few sizes over time: the packet trace (bytes
//! past each probe site) and the receiver's ACKs against its queue.

use crate::model::MessagesRun;
use crate::plot::{Series, Style, XyChart};

/// Bytes past each site against time: where the curves part, data waits.
/// The socket's sites count payload, the link's count whole frames
/// (headers included): two charts, so no axis mixes the two.
pub(crate) fn packet_trace(run: &MessagesRun) -> [XyChart; 2] {
    let chart = |frames: bool| {
        let series = run
            .packet_trace
            .iter()
            .filter(|t| t.site.starts_with("link.") == frames)
            .map(|t| Series {
                name: match t.site.as_str() {
                    "socket.send_queue.enqueue" => "written by the application".into(),
                    "link.transmit.enter" => "put on the wire".into(),
                    "link.receive.enter" => "taken off the wire".into(),
                    "socket.recv_queue.dequeue" => "read by the application".into(),
                    other => other.to_string(),
                },
                points: t
                    .points
                    .iter()
                    .map(|&(ns, bytes)| (ns / 1e6, bytes as f64 / 1024.0))
                    .collect(),
                style: Style::Steps,
                errors: Vec::new(),
            })
            .collect();
        XyChart {
            title: if frames {
                format!("{}: packet trace at the link, frame bytes", run.id)
            } else {
                format!("{}: packet trace at the sockets, payload bytes", run.id)
            },
            x_label: "time since the first measured message (ms)".into(),
            y_label: if frames {
                "frame bytes so far, headers included (KiB)".into()
            } else {
                "payload bytes so far (KiB)".into()
            },
            series,
            log_x: false,
            log_y: false,
        }
    };
    [chart(false), chart(true)]
}

/// The receive socket queue's length with the receiver's pure ACKs on it
/// (the SunOS study's experiment 3: ACKs follow the queue's draining).
pub(crate) fn acks(run: &MessagesRun) -> XyChart {
    let mut series = Vec::new();
    if let Some(q) = run
        .queues
        .iter()
        .find(|q| q.queue.starts_with("receive_socket ") && Some(q.thread) == run.receiver_thread)
    {
        series.push(Series {
            name: "receive socket queue (bytes)".into(),
            points: q
                .length
                .iter()
                .map(|p| (p.t_ns / 1e6, p.bytes as f64))
                .collect(),
            style: Style::Steps,
            errors: Vec::new(),
        });
    }
    series.push(Series {
        name: "ACK sent".into(),
        points: run
            .acks
            .iter()
            .map(|&(ns, bytes)| (ns / 1e6, bytes as f64))
            .collect(),
        style: Style::Points,
        errors: Vec::new(),
    });
    XyChart {
        title: format!("{}: ACK generation against receive queue draining", run.id),
        x_label: "time (ms)".into(),
        y_label: "bytes queued".into(),
        series,
        log_x: false,
        log_y: false,
    }
}
