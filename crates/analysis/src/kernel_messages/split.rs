//! The stop window by layer. The window is cut at every event of the
//! message's path inside it (both CPUs' events, merged in time), and each
//! interval is given to what the path was doing until the interval's end,
//! read from the event that ends it (and, for a copy, the one that begins
//! it). The intervals tile the window, so the layers add up to it.
//!
//! The cgroup programs cut the send path at IP output's
//! `ip_finish_output` (socket and transport output before it, the rest of
//! IP output after) and the receive path at the socket filter of TCP/UDP
//! input (IP input before it, transport input after). A trace without
//! them (an older one, or one whose cgroup hooks were missing) keeps the
//! uncut parts, [`KernelLayer::Output`] and [`KernelLayer::Input`].

use std::collections::BTreeMap;

use serde::Serialize;

/// Where a stop window's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelLayer {
    /// Send: from the send call (or the previous packet) to a packet
    /// leaving IP output's `ip_finish_output` (the cgroup egress hook):
    /// copying into the socket buffer, TCP/UDP output, any wait for TCP's
    /// window, and IP output's header and netfilter hooks (they come
    /// before the hook, no event separates them).
    TransportOutput,
    /// Send: `ip_finish_output` → `net_dev_queue`: the rest of IP output
    /// (fragmentation, the neighbour layer).
    NetworkOutput,
    /// Send, without the IP output event: socket, transport and network
    /// output as one part (→ `net_dev_queue`).
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
    /// IP input, reassembly and the socket lookup: → the socket filter of
    /// TCP/UDP input (`sk_filter`, the cgroup ingress hook).
    NetworkInput,
    /// Receive, without the socket filter event: IP and TCP/UDP input as
    /// one part (→ `tcp_probe` / `sk_data_ready`).
    Input,
    /// TCP/UDP input: from the socket filter (or `tcp_probe`) to the data
    /// queued on the socket (`tcp_probe`, `sk_data_ready`).
    TransportInput,
    /// Queued on the socket until the reader copies it (waking the reader
    /// included); for UDP, whose copy of a one-packet datagram has no
    /// tracepoint, the copy too.
    SocketQueue,
    /// Copying to the reader (`skb_copy_datagram_iovec` →) and the read
    /// call returning.
    Copy,
}

impl KernelLayer {
    /// In path order; the uncut parts beside the parts they are cut into.
    pub const SEND: [KernelLayer; 6] = [
        KernelLayer::TransportOutput,
        KernelLayer::NetworkOutput,
        KernelLayer::Output,
        KernelLayer::Qdisc,
        KernelLayer::DeviceQueue,
        KernelLayer::Driver,
    ];
    pub const RECEIVE: [KernelLayer; 7] = [
        KernelLayer::Arrival,
        KernelLayer::Backlog,
        KernelLayer::NetworkInput,
        KernelLayer::Input,
        KernelLayer::TransportInput,
        KernelLayer::SocketQueue,
        KernelLayer::Copy,
    ];

    /// The name in JSON and CSV.
    pub const fn as_str(self) -> &'static str {
        match self {
            KernelLayer::TransportOutput => "transport_output",
            KernelLayer::NetworkOutput => "network_output",
            KernelLayer::Output => "output",
            KernelLayer::Qdisc => "qdisc",
            KernelLayer::DeviceQueue => "device_queue",
            KernelLayer::Driver => "driver",
            KernelLayer::Arrival => "arrival",
            KernelLayer::Backlog => "backlog",
            KernelLayer::NetworkInput => "network_input",
            KernelLayer::Input => "input",
            KernelLayer::TransportInput => "transport_input",
            KernelLayer::SocketQueue => "socket_queue",
            KernelLayer::Copy => "copy",
        }
    }

    /// A label for tables and legends.
    pub const fn label(self) -> &'static str {
        match self {
            KernelLayer::TransportOutput => "socket + transport output (to ip_finish_output)",
            KernelLayer::NetworkOutput => "network output (ip_finish_output → device)",
            KernelLayer::Output => "socket + transport + network output",
            KernelLayer::Qdisc => "link: qdisc",
            KernelLayer::DeviceQueue => "link: device queue",
            KernelLayer::Driver => "link: driver",
            KernelLayer::Arrival => "waiting for arrival",
            KernelLayer::Backlog => "link: backlog",
            KernelLayer::NetworkInput => "network input (to the socket filter)",
            KernelLayer::Input => "network + transport input",
            KernelLayer::TransportInput => "transport input",
            KernelLayer::SocketQueue => "socket queue",
            KernelLayer::Copy => "socket: copy to the reader",
        }
    }

    /// The part of the reference stack's split it compares with: `stack`
    /// (socket, transport, network and their buffers and copies), `link`,
    /// or `waiting` (the reference stack's `wire` and `other`).
    pub const fn compared_as(self) -> &'static str {
        match self {
            KernelLayer::TransportOutput
            | KernelLayer::NetworkOutput
            | KernelLayer::Output
            | KernelLayer::NetworkInput
            | KernelLayer::Input
            | KernelLayer::TransportInput
            | KernelLayer::Copy => "stack",
            KernelLayer::Qdisc
            | KernelLayer::DeviceQueue
            | KernelLayer::Driver
            | KernelLayer::Backlog => "link",
            // Queued for the reader: its wake-up and system call entry,
            // which on the reference stack is time in no span.
            KernelLayer::Arrival | KernelLayer::SocketQueue => "waiting",
        }
    }
}

/// An event of a message's path, as the split reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    SendCall,
    IpFinishOutput,
    NetDevQueue,
    QdiscEnqueue,
    QdiscDequeue,
    StartXmit,
    Xmit,
    NetifRx,
    ReceiveSkb,
    SkFilter,
    TcpProbe,
    DataReady,
    CopyOut,
    ReadReturn,
}

/// Which cut events the window has had before an interval's end: with
/// them the cut parts are given, without them (an older trace, a missing
/// hook) the uncut ones.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cuts {
    /// `ip_finish_output`: a packet handed to the device after another
    /// (an IP fragment after the first) is still network output.
    pub ip_output: bool,
    /// `sk_filter`: TCP/UDP input is transport input.
    pub sk_filter: bool,
}

/// The layer of the interval from `prev` to `next`.
pub(crate) fn layer_between(prev: Step, next: Step, cuts: Cuts) -> KernelLayer {
    if prev == Step::CopyOut {
        return KernelLayer::Copy;
    }
    match next {
        Step::SendCall | Step::IpFinishOutput => KernelLayer::TransportOutput,
        Step::NetDevQueue if cuts.ip_output => KernelLayer::NetworkOutput,
        Step::NetDevQueue => KernelLayer::Output,
        Step::QdiscEnqueue | Step::StartXmit => KernelLayer::DeviceQueue,
        Step::QdiscDequeue => KernelLayer::Qdisc,
        Step::Xmit => KernelLayer::Driver,
        Step::NetifRx => KernelLayer::Arrival,
        Step::ReceiveSkb => KernelLayer::Backlog,
        Step::SkFilter => KernelLayer::NetworkInput,
        Step::TcpProbe | Step::DataReady if cuts.sk_filter => KernelLayer::TransportInput,
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
    let mut cuts = Cuts::default();
    for pair in events.windows(2) {
        let raw = pair[1].tsc.saturating_sub(pair[0].tsc) as f64 * ns_per_cycle;
        let ns = (raw - cost(&pair[0], &pair[1])).max(0.0);
        cuts.ip_output |= pair[0].step == Step::IpFinishOutput;
        cuts.sk_filter |= pair[0].step == Step::SkFilter;
        *layers
            .entry(layer_between(pair[0].step, pair[1].step, cuts))
            .or_insert(0.0) += ns;
        total += ns;
        elapsed.push(total);
    }
    (layers, elapsed)
}
