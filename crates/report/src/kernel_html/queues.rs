//! The kernel run's queue table: the per-skb queues (qdisc, device,
//! backlog), the socket receive queue and the TCP socket send queue, whose
//! delay is split at the last byte's first transmission and also given
//! per message size.

use analysis::kernel_messages::KernelQueue;

use super::{opt, sig};
use crate::kernel_runs::KernelRun;
use crate::model::Table;

pub(super) fn queue_table(run: &KernelRun) -> Table {
    let host = |flow: u32| {
        if run.sender_flow == run.receiver_flow {
            "both (one namespace)"
        } else if flow == run.sender_flow {
            "sender"
        } else if flow == run.receiver_flow {
            "receiver"
        } else {
            "?"
        }
    };
    let mut rows = Vec::new();
    for q in &run.queues {
        rows.push(row(q, host(q.flow)));
        let Some(parts) = &q.send else { continue };
        for size in &parts.by_size {
            rows.push(vec![
                format!("{}, {} B messages", q.queue, size.bytes),
                host(q.flow).into(),
                size.messages.to_string(),
                opt(size.delay_us.as_ref(), "µs"),
                median(size.delay_us.as_ref()),
                opt(size.until_sent_us.as_ref(), "µs"),
                opt(size.sent_until_acked_us.as_ref(), "µs"),
                "-".into(),
                "-".into(),
            ]);
        }
    }
    Table {
        caption: "Kernel queues over the whole run, warm-up included (probe cost not taken out). \
                  socket_send counts messages: from the send call (tcp_sendmsg_locked) to the ACK \
                  covering the last byte (tcp_ack), split at that byte's first transmission out of \
                  IP output"
            .into(),
        columns: [
            "queue",
            "host",
            "packets (messages)",
            "delay",
            "median",
            "until sent",
            "sent until ACK",
            "most at once",
            "unpaired enqueue / dequeue",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn median(e: Option<&stats::Estimate>) -> String {
    e.map_or("-".into(), |e| format!("{} µs", sig(e.median)))
}

fn row(q: &KernelQueue, host: &str) -> Vec<String> {
    let (until_sent, after_sent, most) = match &q.send {
        Some(parts) => (
            opt(parts.until_sent_us.as_ref(), "µs"),
            opt(parts.sent_until_acked_us.as_ref(), "µs"),
            format!("{} ({} B)", q.max_length, parts.max_bytes),
        ),
        None => ("-".into(), "-".into(), q.max_length.to_string()),
    };
    vec![
        q.queue.clone(),
        host.into(),
        q.packets.to_string(),
        opt(q.delay_us.as_ref(), "µs"),
        median(q.delay_us.as_ref()),
        until_sent,
        after_sent,
        most,
        format!("{} / {}", q.unpaired_enqueues, q.unpaired_dequeues),
    ]
}
