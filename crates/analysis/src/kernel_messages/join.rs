//! Joining each message's events and measuring its windows (see the
//! module's documentation for the rules).

use std::collections::{BTreeMap, BTreeSet};

use probe::{Record, Trace};

use super::sites as s;
use super::split::{split, PathEvent, Step};
use super::{Flows, KernelMessage, KernelMessages, PathWindows, Transport};
use crate::AnalysisError;

/// The numbers of the locations read, from the trace's table.
struct Sites {
    sendmsg: Option<u16>,
    send_length: Option<u16>,
    qdisc_enqueue: Option<u16>,
    qdisc_dequeue: Option<u16>,
    dev_queue: u16,
    start_xmit: u16,
    xmit: u16,
    tcp_seq: Option<u16>,
    netif_rx: u16,
    receive_skb: u16,
    tcp_probe: Option<u16>,
    data_ready: Option<u16>,
    copy: Option<u16>,
    recv_length: u16,
    kfree: Option<u16>,
    retransmit: Option<u16>,
    udp_sendmsg: Option<u16>,
    ip_output: Option<u16>,
    sk_filter: Option<u16>,
}

fn find(trace: &Trace, name: &str) -> Option<u16> {
    trace
        .locations
        .iter()
        .position(|l| l.name == name)
        .and_then(|i| u16::try_from(i).ok())
}

fn need(trace: &Trace, name: &str) -> Result<u16, AnalysisError> {
    find(trace, name).ok_or_else(|| AnalysisError::MissingLocation(name.to_string()))
}

impl Sites {
    fn of(trace: &Trace, transport: Transport) -> Result<Sites, AnalysisError> {
        let sites = Sites {
            sendmsg: find(trace, s::TCP_SENDMSG_LOCKED),
            send_length: find(trace, s::SOCK_SEND_LENGTH),
            qdisc_enqueue: find(trace, s::QDISC_ENQUEUE),
            qdisc_dequeue: find(trace, s::QDISC_DEQUEUE),
            dev_queue: need(trace, s::NET_DEV_QUEUE)?,
            start_xmit: need(trace, s::NET_DEV_START_XMIT)?,
            xmit: need(trace, s::NET_DEV_XMIT)?,
            tcp_seq: find(trace, s::TCP_SEQ),
            netif_rx: need(trace, s::NETIF_RX)?,
            receive_skb: need(trace, s::NETIF_RECEIVE_SKB)?,
            tcp_probe: find(trace, s::TCP_PROBE),
            data_ready: find(trace, s::SK_DATA_READY),
            copy: find(trace, s::SKB_COPY_DATAGRAM_IOVEC),
            recv_length: need(trace, s::SOCK_RECV_LENGTH)?,
            kfree: find(trace, s::KFREE_SKB),
            retransmit: find(trace, s::TCP_RETRANSMIT_SKB),
            udp_sendmsg: find(trace, s::UDP_SENDMSG),
            ip_output: find(trace, s::IP_FINISH_OUTPUT),
            sk_filter: find(trace, s::SK_FILTER),
        };
        match transport {
            Transport::Tcp => {
                need(trace, s::TCP_SENDMSG_LOCKED)?;
                need(trace, s::TCP_SEQ)?;
                need(trace, s::TCP_PROBE)?;
            }
            Transport::Udp => {
                need(trace, s::SOCK_SEND_LENGTH)?;
            }
        }
        Ok(sites)
    }

    /// The path step of a send-side device event, if it is one.
    fn send_step(&self, loc: u16) -> Option<(Step, &'static str)> {
        if loc == self.dev_queue {
            Some((Step::NetDevQueue, s::NET_DEV_QUEUE))
        } else if Some(loc) == self.ip_output {
            Some((Step::IpFinishOutput, s::IP_FINISH_OUTPUT))
        } else if Some(loc) == self.qdisc_enqueue {
            Some((Step::QdiscEnqueue, s::QDISC_ENQUEUE))
        } else if Some(loc) == self.qdisc_dequeue {
            Some((Step::QdiscDequeue, s::QDISC_DEQUEUE))
        } else if loc == self.start_xmit {
            Some((Step::StartXmit, s::NET_DEV_START_XMIT))
        } else if loc == self.xmit {
            Some((Step::Xmit, s::NET_DEV_XMIT))
        } else {
            None
        }
    }

    /// The path step of a receive-side packet event (one with an skb).
    fn receive_skb_step(&self, loc: u16) -> Option<(Step, &'static str)> {
        if loc == self.netif_rx {
            Some((Step::NetifRx, s::NETIF_RX))
        } else if loc == self.receive_skb {
            Some((Step::ReceiveSkb, s::NETIF_RECEIVE_SKB))
        } else if Some(loc) == self.sk_filter {
            Some((Step::SkFilter, s::SK_FILTER))
        } else if Some(loc) == self.tcp_probe {
            Some((Step::TcpProbe, s::TCP_PROBE))
        } else if Some(loc) == self.copy {
            Some((Step::CopyOut, s::SKB_COPY_DATAGRAM_IOVEC))
        } else {
            None
        }
    }
}

/// The probes' cost inside an interval: `overhead` cycles for every
/// record strictly after its start and up to its end on either end's CPU
/// (a record on a third CPU held neither end up).
struct Costs<'a> {
    records: &'a [&'a Record],
    overhead_cycles: f64,
    ns_per_cycle: f64,
}

impl Costs<'_> {
    fn between(&self, a: &PathEvent, b: &PathEvent) -> f64 {
        if self.overhead_cycles <= 0.0 {
            return 0.0;
        }
        let from = self.records.partition_point(|r| r.tsc <= a.tsc);
        let to = self.records.partition_point(|r| r.tsc <= b.tsc);
        let count = self.records[from..to.max(from)]
            .iter()
            .filter(|r| r.thread == a.thread || r.thread == b.thread)
            .count();
        count as f64 * self.overhead_cycles * self.ns_per_cycle
    }
}

/// Every message of a run of `sizes` (in the order sent) over `transport`,
/// recorded under `flows`.
pub fn analyse(
    trace: &Trace,
    transport: Transport,
    flows: Flows,
    sizes: &[u32],
) -> Result<KernelMessages, AnalysisError> {
    let hz = trace.header.counter_hz;
    if !(hz.is_finite() && hz > 0.0) {
        return Err(AnalysisError::Trace(format!("counter rate {hz} Hz")));
    }
    let sites = Sites::of(trace, transport)?;
    let mut records: Vec<&Record> = trace.records.iter().collect();
    // Stable: a binding stays beside the event it was written with.
    records.sort_by_key(|r| r.tsc);
    let overhead = trace.header.overhead_cycles;
    let costs = Costs {
        records: &records,
        overhead_cycles: if overhead.is_finite() { overhead } else { 0.0 },
        ns_per_cycle: 1e9 / hz,
    };
    let ctx = Ctx {
        sites: &sites,
        records: &records,
        flows,
        costs: &costs,
    };
    let messages = match transport {
        Transport::Tcp => tcp_messages(&ctx, sizes),
        Transport::Udp => udp_messages(&ctx, sizes),
    };
    let mut out = KernelMessages {
        transport,
        messages,
        incomplete_send: BTreeMap::new(),
        incomplete_receive: BTreeMap::new(),
        overhead_ns: costs.overhead_cycles * costs.ns_per_cycle,
        ring_dropped: trace.header.dropped,
    };
    for m in &out.messages {
        if let Some(why) = m.send_missing {
            *out.incomplete_send.entry(why).or_insert(0) += 1;
        }
        if let Some(why) = m.receive_missing {
            *out.incomplete_receive.entry(why).or_insert(0) += 1;
        }
    }
    Ok(out)
}

struct Ctx<'a> {
    sites: &'a Sites,
    records: &'a [&'a Record],
    flows: Flows,
    costs: &'a Costs<'a>,
}

/// The message's window: records `lo..hi`.
struct Window {
    lo: usize,
    hi: usize,
}

fn event(r: &Record, step: Step, name: &'static str) -> PathEvent {
    PathEvent {
        tsc: r.tsc,
        thread: r.thread,
        step,
        name,
    }
}

fn message(index: usize, bytes: u32) -> KernelMessage {
    KernelMessage {
        index,
        bytes,
        send: None,
        send_missing: None,
        receive: None,
        receive_missing: None,
        packets_sent: 0,
        packets_received: 0,
        retransmits: 0,
        drops: 0,
    }
}

const NO_SEND_CALL: &str = "no_send_call";
const NO_PACKET_SENT: &str = "no_packet_handed_to_the_device";
const NO_START_XMIT: &str = "no_net_dev_start_xmit";
const NO_XMIT: &str = "no_net_dev_xmit_of_the_last_packet";
const NO_PACKET_RECEIVED: &str = "no_packet_arrived";
const NO_READ: &str = "no_read_returned_the_last_byte";
const NO_COPY: &str = "no_copy_to_the_reader";
const UDP_SEND: &str = "udp_send_has_no_start_event";
const WRONG_LENGTH: &str = "read_returned_another_length";
/// A UDP datagram larger than a packet goes as IP fragments, which carry
/// no ports (IPv6: behind a Fragment header; later fragments: no UDP
/// header at all): the probes cannot tell their flow and record none.
const UDP_FRAGMENTS: &str = "no_packet_traced_ip_fragments_carry_no_ports";

/// Offset of sequence `seq` from `base`, modulo 2³² (sequence numbers wrap).
fn offset(seq: u64, base: u32) -> u32 {
    (seq as u32).wrapping_sub(base)
}

fn tcp_messages(ctx: &Ctx, sizes: &[u32]) -> Vec<KernelMessage> {
    let Some(sendmsg) = ctx.sites.sendmsg else {
        return Vec::new();
    };
    let calls: Vec<usize> = (0..ctx.records.len())
        .filter(|&i| {
            let r = ctx.records[i];
            r.loc == sendmsg && r.flow == ctx.flows.sender && r.len > 0
        })
        .collect();
    // Each message begins at a send call; calls inside its range (a write
    // that returned early and was continued) belong to it.
    let mut starts: Vec<(usize, u32)> = Vec::new();
    let mut next_call = 0;
    for &size in sizes {
        let Some(&first) = calls.get(next_call) else {
            break;
        };
        let base = ctx.records[first].aux as u32;
        starts.push((first, base));
        next_call += 1;
        while let Some(&more) = calls.get(next_call) {
            if offset(ctx.records[more].aux, base) < size {
                next_call += 1;
            } else {
                break;
            }
        }
    }
    sizes
        .iter()
        .enumerate()
        .map(|(k, &size)| {
            let mut m = message(k, size);
            let Some(&(lo, base)) = starts.get(k) else {
                m.send_missing = Some(NO_SEND_CALL);
                m.receive_missing = Some(NO_SEND_CALL);
                return m;
            };
            let hi = starts.get(k + 1).map_or(ctx.records.len(), |s| s.0);
            tcp_message(ctx, &mut m, Window { lo, hi }, base);
            m
        })
        .collect()
}

/// The skbs a `tcp_seq` binding in the window names for the message's
/// bytes, each with its sequence offset and the binding's record index;
/// `companion` is the event the binding is written with.
fn bindings(
    ctx: &Ctx,
    w: &Window,
    base: u32,
    size: u32,
    flow: u32,
    companion: u16,
) -> BTreeMap<u64, (u32, usize)> {
    let Some(tcp_seq) = ctx.sites.tcp_seq else {
        return BTreeMap::new();
    };
    let mut skbs = BTreeMap::new();
    for i in w.lo..w.hi {
        let r = ctx.records[i];
        if r.loc != tcp_seq || r.flow != flow || offset(u64::from(r.len), base) >= size {
            continue;
        }
        let with_companion = same_instant(ctx.records, i)
            .any(|o| o.loc == companion && o.aux == r.aux && o.flow == r.flow);
        if with_companion {
            skbs.entry(r.aux)
                .or_insert((offset(u64::from(r.len), base), i));
        }
    }
    skbs
}

/// The records at the same instant as record `i`.
fn same_instant<'a>(records: &'a [&'a Record], i: usize) -> impl Iterator<Item = &'a Record> {
    let tsc = records[i].tsc;
    let from = records.partition_point(|r| r.tsc < tsc);
    let to = records.partition_point(|r| r.tsc <= tsc);
    records[from..to].iter().copied()
}

/// The first record at `loc` of `flow` and skb `aux` from index `from`.
fn first_of(ctx: &Ctx, w: &Window, from: usize, loc: u16, flow: u32, aux: u64) -> Option<usize> {
    (from..w.hi).find(|&i| {
        let r = ctx.records[i];
        r.loc == loc && r.flow == flow && r.aux == aux
    })
}

fn tcp_message(ctx: &Ctx, m: &mut KernelMessage, w: Window, base: u32) {
    let size = m.bytes;
    let sites = ctx.sites;
    let sent = bindings(ctx, &w, base, size, ctx.flows.sender, sites.dev_queue);
    let received = match sites.tcp_probe {
        Some(probe) => bindings(ctx, &w, base, size, ctx.flows.receiver, probe),
        None => BTreeMap::new(),
    };
    m.packets_sent = sent.len() as u32;
    m.packets_received = received.len() as u32;
    for i in w.lo..w.hi {
        let r = ctx.records[i];
        if Some(r.loc) == sites.retransmit && sent.contains_key(&r.aux) {
            m.retransmits += 1;
        }
        if Some(r.loc) == sites.kfree
            && (sent.contains_key(&r.aux) || received.contains_key(&r.aux))
        {
            m.drops += 1;
        }
    }
    let call = ctx.records[w.lo];
    let call_event = event(call, Step::SendCall, s::TCP_SENDMSG_LOCKED);
    match tcp_send(ctx, &w, &sent, call_event) {
        Ok(windows) => m.send = Some(windows),
        Err(why) => m.send_missing = Some(why),
    }
    match tcp_receive(ctx, &w, &received, base, size) {
        Ok(windows) => m.receive = Some(windows),
        Err(why) => m.receive_missing = Some(why),
    }
}

fn tcp_send(
    ctx: &Ctx,
    w: &Window,
    sent: &BTreeMap<u64, (u32, usize)>,
    call: PathEvent,
) -> Result<PathWindows, &'static str> {
    // The last byte's packet: the one starting furthest into the message.
    let Some((&last_skb, &(_, last_binding))) = sent.iter().max_by_key(|(_, (off, _))| *off) else {
        return Err(NO_PACKET_SENT);
    };
    let sender = ctx.flows.sender;
    let handed = first_of(ctx, w, last_binding, ctx.sites.start_xmit, sender, last_skb)
        .ok_or(NO_START_XMIT)?;
    let stop = first_of(ctx, w, last_binding, ctx.sites.xmit, sender, last_skb).ok_or(NO_XMIT)?;
    let skbs: BTreeSet<u64> = sent.keys().copied().collect();
    send_windows(ctx, w, &skbs, call, handed, stop)
}

/// The send windows from `call` to record `stop` (`on_the_wire`), with
/// `handed` the last packet's `net_dev_start_xmit`.
fn send_windows(
    ctx: &Ctx,
    w: &Window,
    skbs: &BTreeSet<u64>,
    call: PathEvent,
    handed: usize,
    stop: usize,
) -> Result<PathWindows, &'static str> {
    let end = ctx.records[stop].tsc;
    let mut events = vec![call];
    for i in w.lo..w.hi {
        let r = ctx.records[i];
        if r.tsc < call.tsc || r.tsc > end || r.flow != ctx.flows.sender || !skbs.contains(&r.aux) {
            continue;
        }
        if let Some((step, name)) = ctx.sites.send_step(r.loc) {
            events.push(event(r, step, name));
        }
        if i == stop {
            break;
        }
    }
    let first_handed = events
        .iter()
        .position(|e| e.step == Step::StartXmit)
        .ok_or(NO_START_XMIT)?;
    let handed_at = events
        .iter()
        .rposition(|e| e.step == Step::StartXmit && e.tsc == ctx.records[handed].tsc)
        .unwrap_or(first_handed);
    Ok(windows(ctx, &events, first_handed, Some(handed_at)))
}

/// Split and times of a window whose events are `events` (the stop at the
/// last); the start ends at event `start_end`.
fn windows(
    ctx: &Ctx,
    events: &[PathEvent],
    start_end: usize,
    handed: Option<usize>,
) -> PathWindows {
    let ns_per_cycle = ctx.costs.ns_per_cycle;
    let (layers_ns, elapsed) = split(events, ns_per_cycle, &|a, b| ctx.costs.between(a, b));
    let first = events[0].tsc;
    PathWindows {
        start_ns: elapsed[start_end],
        stop_ns: elapsed.last().copied().unwrap_or(0.0),
        handed_stop_ns: handed.map(|h| elapsed[h]),
        layers_ns,
        events: events
            .iter()
            .map(|e| (e.name.to_string(), (e.tsc - first) as f64 * ns_per_cycle))
            .collect(),
    }
}

fn tcp_receive(
    ctx: &Ctx,
    w: &Window,
    received: &BTreeMap<u64, (u32, usize)>,
    base: u32,
    size: u32,
) -> Result<PathWindows, &'static str> {
    if received.is_empty() {
        return Err(NO_PACKET_RECEIVED);
    }
    let receiver = ctx.flows.receiver;
    let sites = ctx.sites;
    // The first packet's arrival in the backlog.
    let arrival = (w.lo..w.hi)
        .find(|&i| {
            let r = ctx.records[i];
            r.loc == sites.netif_rx && r.flow == receiver && received.contains_key(&r.aux)
        })
        .ok_or(NO_PACKET_RECEIVED)?;
    // The read that returns the last byte: `copied_seq` after it reaches
    // the message's end (less than half the sequence space past it).
    let read = (arrival..w.hi)
        .find(|&i| {
            let r = ctx.records[i];
            let past = offset(r.aux, base);
            r.loc == sites.recv_length && r.flow == receiver && past >= size && past < 1 << 31
        })
        .ok_or(NO_READ)?;
    let mut events = Vec::new();
    for i in arrival..=read {
        let r = ctx.records[i];
        if r.flow != receiver {
            continue;
        }
        let step = if received.contains_key(&r.aux) {
            sites.receive_skb_step(r.loc)
        } else if Some(r.loc) == sites.data_ready {
            Some((Step::DataReady, s::SK_DATA_READY))
        } else if r.loc == sites.recv_length {
            Some((Step::ReadReturn, s::SOCK_RECV_LENGTH))
        } else {
            None
        };
        if let Some((step, name)) = step {
            events.push(event(r, step, name));
        }
    }
    let first_copy = events
        .iter()
        .position(|e| e.step == Step::CopyOut)
        .ok_or(NO_COPY)?;
    Ok(windows(ctx, &events, first_copy, None))
}

fn udp_messages(ctx: &Ctx, sizes: &[u32]) -> Vec<KernelMessage> {
    let sites = ctx.sites;
    let of = |loc: Option<u16>, flow: u32| -> Vec<usize> {
        (0..ctx.records.len())
            .filter(|&i| {
                let r = ctx.records[i];
                Some(r.loc) == loc && r.flow == flow && r.len > 0
            })
            .collect()
    };
    let sends = of(sites.send_length, ctx.flows.sender);
    let reads = of(Some(sites.recv_length), ctx.flows.receiver);
    sizes
        .iter()
        .enumerate()
        .map(|(k, &size)| {
            let mut m = message(k, size);
            match sends.get(k) {
                Some(&end) => {
                    let lo = if k == 0 { 0 } else { sends[k - 1] + 1 };
                    udp_send(ctx, &mut m, Window { lo, hi: end + 1 });
                }
                None => m.send_missing = Some(NO_SEND_CALL),
            }
            match reads.get(k) {
                Some(&end) => {
                    let lo = if k == 0 { 0 } else { reads[k - 1] + 1 };
                    match udp_receive(ctx, &mut m, Window { lo, hi: end + 1 }, end) {
                        Ok(windows) => m.receive = Some(windows),
                        Err(why) => m.receive_missing = Some(why),
                    }
                }
                None => m.receive_missing = Some(NO_READ),
            }
            m
        })
        .collect()
}

/// The k-th send: the sender's packets between the previous send call's
/// return and this one's (records `w`), and, if the send's start
/// (`udp_sendmsg`) is there, its windows from it.
fn udp_send(ctx: &Ctx, m: &mut KernelMessage, w: Window) {
    let sites = ctx.sites;
    let sender = ctx.flows.sender;
    let start = sites.udp_sendmsg.and_then(|loc| {
        (w.lo..w.hi).find(|&i| ctx.records[i].loc == loc && ctx.records[i].flow == sender)
    });
    let from = start.unwrap_or(w.lo);
    // Every packet (fragment) handed to the device, in time order.
    let queued: Vec<usize> = (from..w.hi)
        .filter(|&i| ctx.records[i].loc == sites.dev_queue && ctx.records[i].flow == sender)
        .collect();
    let mut skbs: BTreeSet<u64> = queued.iter().map(|&i| ctx.records[i].aux).collect();
    m.packets_sent = skbs.len() as u32;
    let Some(&last) = queued.last() else {
        m.send_missing = Some(UDP_FRAGMENTS);
        return;
    };
    let Some(start) = start else {
        m.send_missing = Some(UDP_SEND);
        return;
    };
    // IP output sees the datagram before fragmentation: its skb is the
    // first fragment's.
    if let Some(ip) = sites.ip_output {
        skbs.extend(
            (from..w.hi)
                .map(|i| ctx.records[i])
                .filter(|r| r.loc == ip && r.flow == sender)
                .map(|r| r.aux),
        );
    }
    let last_skb = ctx.records[last].aux;
    let w = Window { lo: from, hi: w.hi };
    let result = first_of(ctx, &w, last, sites.start_xmit, sender, last_skb)
        .ok_or(NO_START_XMIT)
        .and_then(|handed| {
            let stop = first_of(ctx, &w, last, sites.xmit, sender, last_skb).ok_or(NO_XMIT)?;
            let call = event(ctx.records[start], Step::SendCall, s::UDP_SENDMSG);
            send_windows(ctx, &w, &skbs, call, handed, stop)
        });
    match result {
        Ok(windows) => m.send = Some(windows),
        Err(why) => m.send_missing = Some(why),
    }
}

fn udp_receive(
    ctx: &Ctx,
    m: &mut KernelMessage,
    w: Window,
    read: usize,
) -> Result<PathWindows, &'static str> {
    let receiver = ctx.flows.receiver;
    let sites = ctx.sites;
    if ctx.records[read].len != m.bytes {
        return Err(WRONG_LENGTH);
    }
    let arrival = (w.lo..w.hi)
        .find(|&i| {
            let r = ctx.records[i];
            r.loc == sites.netif_rx && r.flow == receiver
        })
        .ok_or(UDP_FRAGMENTS)?;
    let mut skbs = BTreeSet::new();
    let mut events = Vec::new();
    for i in arrival..=read {
        let r = ctx.records[i];
        if r.flow != receiver {
            continue;
        }
        if r.loc == sites.netif_rx {
            skbs.insert(r.aux);
        }
        let step = if Some(r.loc) == sites.data_ready {
            Some((Step::DataReady, s::SK_DATA_READY))
        } else if i == read {
            Some((Step::ReadReturn, s::SOCK_RECV_LENGTH))
        } else {
            sites.receive_skb_step(r.loc)
        };
        if let Some((step, name)) = step {
            events.push(event(r, step, name));
        }
        if Some(r.loc) == sites.kfree && skbs.contains(&r.aux) {
            m.drops += 1;
        }
    }
    m.packets_received = skbs.len() as u32;
    // Only a non-linear datagram with its checksum verified is copied
    // through skb_copy_datagram_iovec; a one-packet one goes through
    // copy_linear_skb, a reassembled one to verify through
    // skb_copy_and_csum_datagram_msg, neither with a tracepoint: then its
    // first byte reaches the reader with the last, at the read's return.
    let start = events
        .iter()
        .position(|e| e.step == Step::CopyOut)
        .unwrap_or(events.len() - 1);
    Ok(windows(ctx, &events, start, None))
}
