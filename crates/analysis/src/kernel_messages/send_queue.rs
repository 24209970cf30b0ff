//! The TCP socket send queue (`socket_send`), per flow id: data stays in
//! it until acknowledged (Linux as BSD's `so_snd`), so a message's time in
//! it runs from the send call to the ACK that covers its last byte.
//!
//! * **Enqueue**: `kernel.tcp_sendmsg_locked` gives the range of bytes
//!   still to copy, `aux` (= `write_seq`) to `aux + len`. The tracepoint
//!   fires once per pass of the copy loop with the same end, and a write
//!   continued by a second call (a partial write) starts where the first
//!   ended: a record whose end is past every end seen so far enqueues the
//!   bytes from there to its end, one message; the others are skipped.
//! * **Dequeue**: `kernel.tcp_ack` (at `tcp_probe`, before `tcp_ack`
//!   runs; `len` = the acknowledgment number): every queued message whose
//!   end it reaches leaves (sequence arithmetic, modulo 2³²). An ACK of
//!   part of a message frees bytes, not a message: it pairs nothing and
//!   is not counted. An ACK past every byte enqueued (data queued before
//!   the trace began, a lost enqueue record) is an unpaired dequeue.
//! * **The split**: "waiting to be sent" runs to the first transmission of
//!   the message's last byte, "waiting for the ACK" from there. The
//!   segment carrying the last byte is the sent one (a `kernel.tcp_seq`
//!   binding written with `kernel.net_dev_queue`) with the greatest
//!   sequence at or below it, first seen after the message was enqueued;
//!   its time is the same skb's latest `kernel.ip_finish_output` before the
//!   binding (IP output, the cgroup egress hook), or the binding itself
//!   (`net_dev_queue`) where that hook did not attach. A message whose
//!   segment was not seen is counted in `unsplit`.
//! * **Length**: messages queued (`max_length`) and bytes queued
//!   (`write_seq` − `snd_una`, as the records give them, `max_bytes`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use probe::{Record, Trace};
use serde::Serialize;
use stats::Estimate;

use super::queues::KernelQueue;
use super::sites as s;

/// What the send queue adds to a [`KernelQueue`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendQueueParts {
    /// Most bytes queued at once (`write_seq` − `snd_una`).
    pub max_bytes: u64,
    /// Enqueue → the last byte's first transmission (IP output), µs.
    pub until_sent_us: Option<Estimate>,
    /// That transmission → the ACK covering the last byte, µs.
    pub sent_until_acked_us: Option<Estimate>,
    /// Paired messages whose last byte's transmission was not seen.
    pub unsplit: u64,
    /// The same per message size (bytes enqueued).
    pub by_size: Vec<SendQueueSize>,
}

/// The send queue's figures for messages of one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendQueueSize {
    pub bytes: u32,
    pub messages: u64,
    pub delay_us: Option<Estimate>,
    pub until_sent_us: Option<Estimate>,
    pub sent_until_acked_us: Option<Estimate>,
}

/// The location numbers read.
struct Sites {
    sendmsg: u16,
    ack: u16,
    tcp_seq: Option<u16>,
    dev_queue: Option<u16>,
    ip_output: Option<u16>,
}

impl Sites {
    fn of(trace: &Trace) -> Option<Sites> {
        let find = |name: &str| {
            trace
                .locations
                .iter()
                .position(|l| l.name == name)
                .and_then(|i| u16::try_from(i).ok())
        };
        Some(Sites {
            sendmsg: find(s::TCP_SENDMSG_LOCKED)?,
            ack: find(s::TCP_ACK)?,
            tcp_seq: find(s::TCP_SEQ),
            dev_queue: find(s::NET_DEV_QUEUE),
            ip_output: find(s::IP_FINISH_OUTPUT),
        })
    }

    fn reads(&self, loc: u16) -> bool {
        loc == self.sendmsg
            || loc == self.ack
            || Some(loc) == self.tcp_seq
            || Some(loc) == self.dev_queue
            || Some(loc) == self.ip_output
    }
}

/// `a` after `b` in sequence space (modulo 2³²).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// One message in the queue.
struct Waiting {
    at: u64,
    end: u32,
    bytes: u32,
    /// The sent segment with the greatest sequence below `end` so far:
    /// its sequence and when it was first handed on.
    last_segment: Option<(u32, u64)>,
}

/// Delay samples, µs: whole, until sent, sent until acknowledged.
#[derive(Default)]
struct Samples {
    delay: Vec<f64>,
    until_sent: Vec<f64>,
    after_sent: Vec<f64>,
}

/// One flow's queue, built record by record in time order.
#[derive(Default)]
struct Flow {
    waiting: VecDeque<Waiting>,
    /// The highest end enqueued and the acknowledged point (`snd_una`).
    end: Option<u32>,
    una: Option<u32>,
    /// Each skb's latest IP output.
    ip_output: HashMap<u64, u64>,
    max_length: u64,
    max_bytes: u64,
    unpaired_dequeues: u64,
    unsplit: u64,
    all: Samples,
    by_size: BTreeMap<u32, Samples>,
}

impl Flow {
    fn enqueue(&mut self, r: &Record) {
        let start = r.aux as u32;
        let end = start.wrapping_add(r.len);
        let from = match self.end {
            // A later pass of the same copy loop, or a call continuing it.
            Some(high) if !after(end, high) => return,
            Some(high) if after(high, start) => high,
            _ => start,
        };
        self.una.get_or_insert(from);
        self.end = Some(end);
        self.waiting.push_back(Waiting {
            at: r.tsc,
            end,
            bytes: end.wrapping_sub(from),
            last_segment: None,
        });
        self.measure_length();
    }

    fn measure_length(&mut self) {
        self.max_length = self.max_length.max(self.waiting.len() as u64);
        if let (Some(end), Some(una)) = (self.end, self.una) {
            self.max_bytes = self.max_bytes.max(u64::from(end.wrapping_sub(una)));
        }
    }

    /// A segment sent (its sequence, first handed on at `sent_at`).
    fn sent(&mut self, seq: u32, sent_at: u64) {
        let Some(una) = self.una else { return };
        for w in &mut self.waiting {
            // At or below the message's last byte, not below what is
            // acknowledged (an ACK's own segment on loopback, in the other
            // direction's sequence space, lies elsewhere).
            // Built after the message was enqueued (its bytes copied in).
            let inside = seq.wrapping_sub(una) < w.end.wrapping_sub(una) && sent_at >= w.at;
            let later = w.last_segment.is_none_or(|(s, _)| after(seq, s));
            if inside && later {
                w.last_segment = Some((seq, sent_at));
            }
        }
    }

    fn ack(&mut self, r: &Record, hz: f64) {
        let ack = r.len;
        let (Some(end), Some(una)) = (self.end, self.una) else {
            self.unpaired_dequeues += 1;
            return;
        };
        if after(ack, end) {
            self.unpaired_dequeues += 1;
        }
        let us = |cycles: u64| cycles as f64 * 1e6 / hz;
        while let Some(w) = self.waiting.front() {
            if after(w.end, ack) {
                break;
            }
            let w = self.waiting.pop_front().expect("the front");
            let sent_at = w.last_segment.map(|(_, t)| t).filter(|&t| t <= r.tsc);
            if sent_at.is_none() {
                self.unsplit += 1;
            }
            let size = self.by_size.entry(w.bytes).or_default();
            for samples in [&mut self.all, size] {
                samples.delay.push(us(r.tsc.saturating_sub(w.at)));
                if let Some(sent_at) = sent_at {
                    samples.until_sent.push(us(sent_at - w.at));
                    samples.after_sent.push(us(r.tsc - sent_at));
                }
            }
        }
        if after(ack, una) {
            self.una = Some(ack);
        }
    }

    fn into_queue(self, flow: u32) -> KernelQueue {
        KernelQueue {
            queue: "socket_send".to_string(),
            flow,
            packets: self.all.delay.len() as u64,
            unpaired_enqueues: self.waiting.len() as u64,
            unpaired_dequeues: self.unpaired_dequeues,
            delay_us: Estimate::of(&self.all.delay),
            max_length: self.max_length,
            send: Some(SendQueueParts {
                max_bytes: self.max_bytes,
                until_sent_us: Estimate::of(&self.all.until_sent),
                sent_until_acked_us: Estimate::of(&self.all.after_sent),
                unsplit: self.unsplit,
                by_size: self
                    .by_size
                    .into_iter()
                    .map(|(bytes, s)| SendQueueSize {
                        bytes,
                        messages: s.delay.len() as u64,
                        delay_us: Estimate::of(&s.delay),
                        until_sent_us: Estimate::of(&s.until_sent),
                        sent_until_acked_us: Estimate::of(&s.after_sent),
                    })
                    .collect(),
            }),
        }
    }
}

/// The send queue of every flow that enqueued a message.
pub fn socket_send(trace: &Trace) -> Vec<KernelQueue> {
    let Some(sites) = Sites::of(trace) else {
        return Vec::new();
    };
    let hz = trace.header.counter_hz;
    let mut by_flow: BTreeMap<u32, Vec<&Record>> = BTreeMap::new();
    for r in trace.records.iter().filter(|r| sites.reads(r.loc)) {
        by_flow.entry(r.flow).or_default().push(r);
    }
    let mut out = Vec::new();
    for (id, mut records) in by_flow {
        if !records.iter().any(|r| r.loc == sites.sendmsg && r.len > 0) {
            continue;
        }
        records.sort_by_key(|r| r.tsc);
        // A binding names a sent segment when written with net_dev_queue
        // (same instant, same skb); at tcp_probe it names a received one.
        let queued: BTreeSet<(u64, u64)> = records
            .iter()
            .filter(|r| Some(r.loc) == sites.dev_queue)
            .map(|r| (r.tsc, r.aux))
            .collect();
        let mut flow = Flow::default();
        for r in records {
            if r.loc == sites.sendmsg && r.len > 0 {
                flow.enqueue(r);
            } else if r.loc == sites.ack {
                flow.ack(r, hz);
                flow.measure_length();
            } else if Some(r.loc) == sites.ip_output {
                flow.ip_output.insert(r.aux, r.tsc);
            } else if Some(r.loc) == sites.tcp_seq && queued.contains(&(r.tsc, r.aux)) {
                let handed_on = flow.ip_output.get(&r.aux).copied().unwrap_or(r.tsc);
                flow.sent(r.len, handed_on.min(r.tsc));
            }
        }
        out.push(flow.into_queue(id));
    }
    out
}
