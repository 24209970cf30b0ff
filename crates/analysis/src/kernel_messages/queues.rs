//! The kernel's packet queues with one event per skb on each side
//! (docs/kernel-probes.md): `qdisc` (`qdisc_enqueue` → `qdisc_dequeue`),
//! `device` (`net_dev_queue` → `net_dev_start_xmit`) and `backlog`
//! (`netif_rx` → `netif_receive_skb`), per flow id (one per host). Each
//! dequeue is paired with the oldest unpaired enqueue of the same skb; a
//! dequeue with none (queued before the trace began) is counted, never
//! paired.
//!
//! And the socket receive queue (`socket_receive`), whose two sides are
//! not per skb: `sk_data_ready` (data queued, the reader woken; TCP:
//! `aux` = `rcv_nxt`, UDP: once per datagram, `aux` 0) → the read that
//! takes it (`sock_recv_length` with bytes; TCP: `aux` = `copied_seq`).
//! TCP: a read takes every queued wake-up whose `rcv_nxt` its
//! `copied_seq` has reached (sequence arithmetic); UDP: each read takes
//! the oldest datagram. Its length counts wake-ups (UDP: datagrams).
//!
//! And the TCP socket send queue (`socket_send`, [`super::send_queue`]):
//! `tcp_sendmsg_locked` → the ACK covering the message's last byte.

use std::collections::{BTreeMap, VecDeque};

use probe::Trace;
use serde::Serialize;
use stats::Estimate;

use super::send_queue::SendQueueParts;

/// One queue of one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelQueue {
    pub queue: String,
    pub flow: u32,
    /// Packets paired (enqueued and dequeued in the trace).
    pub packets: u64,
    pub unpaired_enqueues: u64,
    pub unpaired_dequeues: u64,
    /// Each paired packet's time in the queue, µs (probe cost not taken
    /// out: two records, one probe's cost at most).
    pub delay_us: Option<Estimate>,
    /// Most packets in the queue at once (paired and unpaired enqueues).
    pub max_length: u64,
    /// `socket_send` only (where `packets` and `max_length` count
    /// messages): bytes queued and the delay's two parts.
    pub send: Option<SendQueueParts>,
}

/// Every queue of the trace's location table that has events.
pub fn queues(trace: &Trace) -> Vec<KernelQueue> {
    let hz = trace.header.counter_hz;
    let mut out = Vec::new();
    for (name, enqueue, dequeue) in [
        (
            "qdisc",
            super::sites::QDISC_ENQUEUE,
            super::sites::QDISC_DEQUEUE,
        ),
        (
            "device",
            super::sites::NET_DEV_QUEUE,
            super::sites::NET_DEV_START_XMIT,
        ),
        (
            "backlog",
            super::sites::NETIF_RX,
            super::sites::NETIF_RECEIVE_SKB,
        ),
    ] {
        let index = |n: &str| trace.locations.iter().position(|l| l.name == n);
        let (Some(enq), Some(deq)) = (index(enqueue), index(dequeue)) else {
            continue;
        };
        let mut records: Vec<&probe::Record> = trace
            .records
            .iter()
            .filter(|r| usize::from(r.loc) == enq || usize::from(r.loc) == deq)
            .collect();
        records.sort_by_key(|r| r.tsc);
        let mut flows: BTreeMap<u32, Vec<&probe::Record>> = BTreeMap::new();
        for r in records {
            flows.entry(r.flow).or_default().push(r);
        }
        for (flow, records) in flows {
            let mut waiting: BTreeMap<u64, VecDeque<u64>> = BTreeMap::new();
            let (mut length, mut max_length, mut unpaired_dequeues) = (0u64, 0u64, 0u64);
            let mut delays = Vec::new();
            for r in records {
                if usize::from(r.loc) == enq {
                    waiting.entry(r.aux).or_default().push_back(r.tsc);
                    length += 1;
                    max_length = max_length.max(length);
                } else if let Some(at) = waiting.get_mut(&r.aux).and_then(VecDeque::pop_front) {
                    length = length.saturating_sub(1);
                    delays.push(r.tsc.saturating_sub(at) as f64 * 1e6 / hz);
                } else {
                    unpaired_dequeues += 1;
                }
            }
            out.push(KernelQueue {
                queue: name.to_string(),
                flow,
                packets: delays.len() as u64,
                unpaired_enqueues: waiting.values().map(|q| q.len() as u64).sum(),
                unpaired_dequeues,
                delay_us: Estimate::of(&delays),
                max_length,
                send: None,
            });
        }
    }
    out.extend(socket_receive(trace));
    out.extend(super::send_queue::socket_send(trace));
    out
}

/// The socket receive queue per flow (see the module's documentation).
fn socket_receive(trace: &Trace) -> Vec<KernelQueue> {
    let hz = trace.header.counter_hz;
    let index = |n: &str| trace.locations.iter().position(|l| l.name == n);
    let (Some(ready), Some(read)) = (
        index(super::sites::SK_DATA_READY),
        index(super::sites::SOCK_RECV_LENGTH),
    ) else {
        return Vec::new();
    };
    let mut flows: BTreeMap<u32, Vec<&probe::Record>> = BTreeMap::new();
    for r in &trace.records {
        let loc = usize::from(r.loc);
        // A read that returned nothing (an error, a timeout) takes nothing.
        if loc == ready || (loc == read && r.len > 0) {
            flows.entry(r.flow).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (flow, mut records) in flows {
        records.sort_by_key(|r| r.tsc);
        // UDP's events carry no sequence: every wake-up's aux is 0.
        let by_sequence = records
            .iter()
            .any(|r| usize::from(r.loc) == ready && r.aux != 0);
        let mut waiting: VecDeque<(u64, u32)> = VecDeque::new();
        let (mut max_length, mut unpaired_dequeues) = (0u64, 0u64);
        let mut delays = Vec::new();
        for r in records {
            if usize::from(r.loc) == ready {
                waiting.push_back((r.tsc, r.aux as u32));
                max_length = max_length.max(waiting.len() as u64);
                continue;
            }
            let before = delays.len();
            while let Some(&(at, rcv_nxt)) = waiting.front() {
                // Reached: copied_seq at or past rcv_nxt, modulo 2^32.
                let taken = !by_sequence || (r.aux as u32).wrapping_sub(rcv_nxt) < 1 << 31;
                if !taken {
                    break;
                }
                waiting.pop_front();
                delays.push(r.tsc.saturating_sub(at) as f64 * 1e6 / hz);
                if !by_sequence {
                    break;
                }
            }
            if delays.len() == before {
                unpaired_dequeues += 1;
            }
        }
        out.push(KernelQueue {
            queue: "socket_receive".to_string(),
            flow,
            packets: delays.len() as u64,
            unpaired_enqueues: waiting.len() as u64,
            unpaired_dequeues,
            delay_us: Estimate::of(&delays),
            max_length,
            send: None,
        });
    }
    out
}
