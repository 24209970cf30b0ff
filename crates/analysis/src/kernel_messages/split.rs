//! The stop window by layer. The window is cut at every event of the
//! message's path inside it (both CPUs' events, merged in time), and each
//! interval is given to what the path was doing until the interval's end,
//! read from the event that ends it (and, for a copy, the one that begins
//! it). The intervals tile the window, so the layers add up to it.
//!
//! The kernel has no tracepoint between the socket's send call and the
//! device layer without netfilter hooks (which the loader cannot attach,
//! docs/kernel-probes.md), so the send path's socket, TCP/UDP and IP
//! output are one part, [`KernelLayer::Output`]; on receive, IP and TCP
//! input up to `tcp_probe` / `sk_data_ready` are [`KernelLayer::Input`].

use std::collections::BTreeMap;

use serde::Serialize;

/// Where a stop window's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelLayer {
    /// Send: from the send call (or the previous packet) to a packet
    /// handed to the device layer (`net_dev_queue`): copying into the
    /// socket buffer, TCP and IP output, and any wait for TCP's window —
    /// no tracepoint separates them.
    Output,
    /// A packet in a queueing discipline (`qdisc_enqueue` → `_dequeue`).
    Qdisc,
    /// The device layer's queue: `net_dev_queue` → `net_dev_start_xmit`
    /// (less any qdisc time).
    DeviceQueue,
    /// The driver: `net_dev_start_xmit` → `net_dev_xmit`.
    Driver,
    /// Receive: waiting for the next packet to arrive (`netif_rx`): the
    /// sender's and the link's time, seen from the receiver.
    Arrival,
    /// The CPU's backlog: `netif_rx` → `netif_receive_skb`.
    Backlog,
    /// IP and TCP/UDP input: → `tcp_probe` / `sk_data_ready`.
    Input,
    /// Queued on the socket until the reader copies it (waking the reader
    /// included); for UDP, whose copy has no tracepoint, the copy too.
    SocketQueue,
    /// Copying to the reader (`skb_copy_datagram_iovec` →) and the read
    /// call returning.
    Copy,
}

impl KernelLayer {
    pub const SEND: [KernelLayer; 4] = [
        KernelLayer::Output,
        KernelLayer::Qdisc,
        KernelLayer::DeviceQueue,
        KernelLayer::Driver,
    ];
    pub const RECEIVE: [KernelLayer; 5] = [
        KernelLayer::Arrival,
        KernelLayer::Backlog,
        KernelLayer::Input,
        KernelLayer::SocketQueue,
        KernelLayer::Copy,
    ];

    /// The name in JSON and CSV.
    pub const fn as_str(self) -> &'static str {
        match self {
            KernelLayer::Output => "output",
            KernelLayer::Qdisc => "qdisc",
            KernelLayer::DeviceQueue => "device_queue",
            KernelLayer::Driver => "driver",
            KernelLayer::Arrival => "arrival",
            KernelLayer::Backlog => "backlog",
            KernelLayer::Input => "input",
            KernelLayer::SocketQueue => "socket_queue",
            KernelLayer::Copy => "copy",
        }
    }

    /// A label for tables and legends.
    pub const fn label(self) -> &'static str {
        match self {
            KernelLayer::Output => "socket + transport + network output",
            KernelLayer::Qdisc => "link: qdisc",
            KernelLayer::DeviceQueue => "link: device queue",
            KernelLayer::Driver => "link: driver",
            KernelLayer::Arrival => "waiting for arrival",
            KernelLayer::Backlog => "link: backlog",
            KernelLayer::Input => "network + transport input",
            KernelLayer::SocketQueue => "socket queue",
            KernelLayer::Copy => "socket: copy to the reader",
        }
    }

    /// The part of the reference stack's split it compares with: `stack`
    /// (socket, transport, network and their buffers and copies — the
    /// kernel's send path cannot tell them apart), `link`, or `waiting`
    /// (the reference stack's `wire` and `other`).
    pub const fn compared_as(self) -> &'static str {
        match self {
            KernelLayer::Output
            | KernelLayer::Input
            | KernelLayer::SocketQueue
            | KernelLayer::Copy => "stack",
            KernelLayer::Qdisc
            | KernelLayer::DeviceQueue
            | KernelLayer::Driver
            | KernelLayer::Backlog => "link",
            KernelLayer::Arrival => "waiting",
        }
    }
}

/// An event of a message's path, as the split reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    SendCall,
    NetDevQueue,
    QdiscEnqueue,
    QdiscDequeue,
    StartXmit,
    Xmit,
    NetifRx,
    ReceiveSkb,
    TcpProbe,
    DataReady,
    CopyOut,
    ReadReturn,
}

/// The layer of the interval from `prev` to `next`.
pub(crate) fn layer_between(prev: Step, next: Step) -> KernelLayer {
    if prev == Step::CopyOut {
        return KernelLayer::Copy;
    }
    match next {
        Step::SendCall | Step::NetDevQueue => KernelLayer::Output,
        Step::QdiscEnqueue | Step::StartXmit => KernelLayer::DeviceQueue,
        Step::QdiscDequeue => KernelLayer::Qdisc,
        Step::Xmit => KernelLayer::Driver,
        Step::NetifRx => KernelLayer::Arrival,
        Step::ReceiveSkb => KernelLayer::Backlog,
        Step::TcpProbe | Step::DataReady => KernelLayer::Input,
        Step::CopyOut | Step::ReadReturn => KernelLayer::SocketQueue,
    }
}

/// One path event: when, on which CPU, what.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathEvent {
    pub tsc: u64,
    pub thread: u16,
    pub step: Step,
    pub name: &'static str,
}

/// The layers of the window `events[0]` .. `events[last]` (sorted), and
/// the corrected time up to each event: `cost(a, b)` is the probes' cost
/// inside the interval a → b in ns, taken out of it (never below 0).
pub(crate) fn split(
    events: &[PathEvent],
    ns_per_cycle: f64,
    cost: &dyn Fn(&PathEvent, &PathEvent) -> f64,
) -> (BTreeMap<KernelLayer, f64>, Vec<f64>) {
    let mut layers = BTreeMap::new();
    let mut elapsed = Vec::with_capacity(events.len());
    let mut total = 0.0;
    elapsed.push(0.0);
    for pair in events.windows(2) {
        let raw = pair[1].tsc.saturating_sub(pair[0].tsc) as f64 * ns_per_cycle;
        let ns = (raw - cost(&pair[0], &pair[1])).max(0.0);
        *layers
            .entry(layer_between(pair[0].step, pair[1].step))
            .or_insert(0.0) += ns;
        total += ns;
        elapsed.push(total);
    }
    (layers, elapsed)
}
