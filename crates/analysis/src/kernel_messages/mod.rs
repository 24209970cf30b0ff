//! The kernel's stack analysed like the reference stack's (issue 19,
//! phase 2): from a kernel probe trace (`crates/kernel-probe`), per
//! message, its send and receive start and stop latency and the stop
//! windows split by layer.
//!
//! Locations are found by name in the trace's own table (never by number),
//! so any trace with the `kernel.*` sites can be read.
//!
//! **Joining a message's events.** The two hosts' events carry the flow
//! ids their namespaces were registered under ([`Flows`]).
//! * TCP: the sender's `kernel.tcp_sendmsg_locked` gives the sequence of
//!   the message's first byte (`aux`); with the message's size that is the
//!   byte range. A `kernel.tcp_seq` binding at the same instant as a
//!   `kernel.net_dev_queue` (send) or a `kernel.tcp_probe` (receive) whose
//!   sequence lies in the range names an skb of the message; the skb's
//!   other events (`net_dev_*`, `qdisc_*`, `netif_*`,
//!   `skb_copy_datagram_iovec`) are joined by address, within the
//!   message's events only (an address is reused once its skb is freed).
//!   The message's events lie between its `tcp_sendmsg_locked` and the
//!   next message's (the lab sends one message at a time, each read whole
//!   before the next).
//! * UDP has no sequence: the k-th message is the sender's k-th
//!   `kernel.udp_sendmsg` (the send's start) and `kernel.sock_send_length`
//!   (its return) and the receiver's k-th `kernel.sock_recv_length`; its
//!   send events are the sender's packet events between its start and its
//!   return, its receive events the receiver's after the previous read
//!   returned. A datagram larger than a packet goes as IP fragments; the
//!   probes join the later fragments, which carry no ports, to the first's
//!   flow by the IP identification. A message whose packets were still not
//!   traced is counted as `no_packet_traced_ip_fragments_carry_no_ports`.
//!
//! **Windows** (counter cycles turned into ns with the header's rate; the
//! probes' cost, `overhead_cycles` per record, taken out of every interval
//! once per record of the interval's CPUs inside it, as the reference
//! stack's probe cost is):
//! * send start: `tcp_sendmsg_locked` (UDP: `udp_sendmsg`) → the first
//!   packet's `net_dev_start_xmit` (handed to the device: its driver is
//!   called);
//! * send stop, `on_the_wire` (the reference stack's default meaning):
//!   → the last byte's packet's `net_dev_xmit` (the driver returned: it
//!   has let go of the frame, the counterpart of transmit complete);
//!   `handed_to_device` → that packet's `net_dev_start_xmit`, kept beside;
//! * a UDP send without `kernel.udp_sendmsg` (a connected socket, or a
//!   trace without the cgroup hooks) has no window: counted as
//!   `udp_send_has_no_start_event`;
//! * receive start: the first packet's `netif_rx` (arrival in the
//!   device's backlog) → the first byte given to the reader (TCP: its
//!   first `skb_copy_datagram_iovec`; UDP: that too where it fires, else
//!   the read's `sock_recv_length`: a one-packet datagram is copied by
//!   `copy_linear_skb`, a reassembled one whose checksum is still to be
//!   verified by `skb_copy_and_csum_datagram_msg`, neither with a
//!   tracepoint);
//! * receive stop: → the read that returns the message's last byte
//!   (`sock_recv_length`).
//!
//! **Layers** ([`KernelLayer`]): the stop window is cut at every event of
//! the message's path in it, and each interval is given to what the path
//! was doing until the interval's end, so the layers add up to the
//! window (see [`split`]).

mod join;
mod queues;
mod send_queue;
mod sizes;
pub mod split;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::Serialize;

pub use join::analyse;
pub use queues::{queues, KernelQueue};
pub use send_queue::{SendQueueParts, SendQueueSize};
pub use sizes::{by_size, trends, KernelPathFigures, KernelSizePoint, KernelTrends};
pub use split::KernelLayer;

/// The location names read (the trace's table gives their numbers).
pub mod sites {
    pub const TCP_SENDMSG_LOCKED: &str = "kernel.tcp_sendmsg_locked";
    pub const SOCK_SEND_LENGTH: &str = "kernel.sock_send_length";
    pub const QDISC_ENQUEUE: &str = "kernel.qdisc_enqueue";
    pub const QDISC_DEQUEUE: &str = "kernel.qdisc_dequeue";
    pub const NET_DEV_QUEUE: &str = "kernel.net_dev_queue";
    pub const NET_DEV_START_XMIT: &str = "kernel.net_dev_start_xmit";
    pub const NET_DEV_XMIT: &str = "kernel.net_dev_xmit";
    pub const TCP_SEQ: &str = "kernel.tcp_seq";
    pub const NETIF_RX: &str = "kernel.netif_rx";
    pub const NETIF_RECEIVE_SKB: &str = "kernel.netif_receive_skb";
    pub const TCP_PROBE: &str = "kernel.tcp_probe";
    pub const SK_DATA_READY: &str = "kernel.sk_data_ready";
    pub const SKB_COPY_DATAGRAM_IOVEC: &str = "kernel.skb_copy_datagram_iovec";
    pub const SOCK_RECV_LENGTH: &str = "kernel.sock_recv_length";
    pub const KFREE_SKB: &str = "kernel.kfree_skb";
    pub const TCP_RETRANSMIT_SKB: &str = "kernel.tcp_retransmit_skb";
    pub const UDP_SENDMSG: &str = "kernel.udp_sendmsg";
    pub const IP_FINISH_OUTPUT: &str = "kernel.ip_finish_output";
    pub const SK_FILTER: &str = "kernel.sk_filter";
    pub const TCP_ACK: &str = "kernel.tcp_ack";
}

/// The transport the messages went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Tcp,
    Udp,
}

/// The flow ids the two hosts' events were recorded under (the sender's
/// namespace and the receiver's; they may be equal, but distinct ids keep
/// an ACK's events apart from the data's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flows {
    pub sender: u32,
    pub receiver: u32,
}

/// One path's windows of one message, ns, the probes' cost taken out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathWindows {
    pub start_ns: f64,
    /// Send: `on_the_wire` (the last byte's packet's `net_dev_xmit`);
    /// receive: the read returning the last byte.
    pub stop_ns: f64,
    /// Send only: `handed_to_device` (that packet's `net_dev_start_xmit`).
    pub handed_stop_ns: Option<f64>,
    /// The stop window by layer; adds up to `stop_ns`.
    pub layers_ns: BTreeMap<KernelLayer, f64>,
    /// The path's events in the stop window, in order: location name and
    /// ns from the window's start (raw, before the probes' cost).
    pub events: Vec<(String, f64)>,
}

/// One message as the kernel handled it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelMessage {
    /// In the order sent, from 0.
    pub index: usize,
    pub bytes: u32,
    /// `None` when incomplete: `send_missing` says why.
    pub send: Option<PathWindows>,
    pub send_missing: Option<&'static str>,
    pub receive: Option<PathWindows>,
    pub receive_missing: Option<&'static str>,
    /// The message's packets (skbs) seen handed to the device and seen
    /// arriving.
    pub packets_sent: u32,
    pub packets_received: u32,
    /// `kernel.tcp_retransmit_skb` and `kernel.kfree_skb` of its skbs
    /// (`drops`: any drop reason, the kernel's number in the trace's `len`;
    /// one was seen with reason 104 on a 64 KiB message that needed no
    /// retransmission, so not every one is a lost packet).
    pub retransmits: u32,
    pub drops: u32,
}

/// Every message of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelMessages {
    pub transport: Transport,
    pub messages: Vec<KernelMessage>,
    /// Per path, messages without that window by reason; never dropped
    /// silently.
    pub incomplete_send: BTreeMap<&'static str, u32>,
    pub incomplete_receive: BTreeMap<&'static str, u32>,
    /// Cycles per record taken out (the trace header's), and in ns.
    pub overhead_ns: f64,
    /// Events lost to a full ring (the header's): a window may lack one.
    pub ring_dropped: u64,
}
