//! The kernel's probe sites, declared once (DESIGN.md, "Probes in the
//! Linux kernel"). The order is the `KP_*` enum of
//! `bpf/stackscope.bpf.c`: the eBPF programs write these indices.
//!
//! `aux` per location: the skb's address (joins one packet's events within
//! its lifetime, closed by `kernel.consume_skb` / `kernel.kfree_skb`), or
//! a TCP sequence number where no skb is at hand, as noted. Across hosts,
//! and across clones, `kernel.tcp_seq` binds an skb address to the TCP
//! sequence number of its segment.

use probe::{Category, Kind, Layer};

probe::locations! {
    /// Every location the kernel probes record at.
    pub static LOCATIONS;
    /// A message enters the socket send queue (`tcp:tcp_sendmsg_locked`);
    /// len = message bytes not yet copied, aux = `write_seq`, the sequence
    /// of the first of them. The tracepoint fires once per pass of the
    /// copy loop, so a large message has several with the same end
    /// (aux + len); the first is the enqueue. A point, not an enqueue:
    /// the analysis pairs it with `kernel.tcp_ack` by sequence
    /// (`analysis::kernel_messages::send_queue`), not per record.
    TCP_SENDMSG_LOCKED = ("kernel.tcp_sendmsg_locked", Layer::Socket, Kind::Point, Category::Socket, None);
    /// The send call returns (`sock:sock_send_length`); len = bytes sent,
    /// aux = `write_seq` after it (TCP) or 0 (UDP).
    SOCK_SEND_LENGTH = ("kernel.sock_send_length", Layer::Socket, Kind::Point, Category::Socket, None);
    /// `qdisc:qdisc_enqueue` / `qdisc_dequeue`; aux = skb. Only a packet
    /// that really waits is seen (`noqueue` on lo and veth never queues).
    QDISC_ENQUEUE = ("kernel.qdisc_enqueue", Layer::Link, Kind::Enqueue, Category::Link, Some("qdisc"));
    QDISC_DEQUEUE = ("kernel.qdisc_dequeue", Layer::Link, Kind::Dequeue, Category::Link, Some("qdisc"));
    /// `net:net_dev_queue`: handed to the device layer (`__dev_queue_xmit`);
    /// aux = skb, len = skb length (link header included).
    NET_DEV_QUEUE = ("kernel.net_dev_queue", Layer::Link, Kind::Enqueue, Category::Link, Some("device"));
    /// `net:net_dev_start_xmit`: the driver is called; aux = skb.
    NET_DEV_START_XMIT = ("kernel.net_dev_start_xmit", Layer::Link, Kind::Dequeue, Category::Link, Some("device"));
    /// `net:net_dev_xmit`: the driver returned; aux = skb (possibly freed
    /// by then), len = the length the driver was given.
    NET_DEV_XMIT = ("kernel.net_dev_xmit", Layer::Link, Kind::Point, Category::Link, None);
    /// Binds a TCP segment's skb to its sequence number: aux = skb, and
    /// **len = the segment's TCP sequence number**, not a byte count.
    /// Written with `kernel.net_dev_queue` (send) and `kernel.tcp_probe`
    /// (receive), at the same instant.
    TCP_SEQ = ("kernel.tcp_seq", Layer::Transport, Kind::Point, Category::None, None);
    /// `net:netif_rx`: a frame enters the CPU's backlog; aux = skb.
    NETIF_RX = ("kernel.netif_rx", Layer::Link, Kind::Enqueue, Category::Link, Some("backlog"));
    /// `net:netif_receive_skb`: it leaves the backlog; aux = skb.
    NETIF_RECEIVE_SKB = ("kernel.netif_receive_skb", Layer::Link, Kind::Dequeue, Category::Link, Some("backlog"));
    /// `tcp:tcp_probe`: TCP input of an established connection; aux = skb,
    /// len = segment bytes there (TCP header included).
    TCP_PROBE = ("kernel.tcp_probe", Layer::Transport, Kind::Point, Category::ProtocolReceive, None);
    /// `sock:sk_data_ready`: data queued on the socket, the reader woken;
    /// aux = `rcv_nxt` (TCP) or 0 (UDP). The receive socket queue's two
    /// sides are points, not an enqueue/dequeue pair: this fires per
    /// wake-up, not per skb, and a read copies part of an skb, several, or
    /// (UDP, `copy_linear_skb`) none through the copy tracepoint.
    SK_DATA_READY = ("kernel.sk_data_ready", Layer::Socket, Kind::Point, Category::Socket, None);
    /// `skb:skb_copy_datagram_iovec`: a packet's data copied to the
    /// reader; aux = skb, len = bytes copied.
    SKB_COPY_DATAGRAM_IOVEC = ("kernel.skb_copy_datagram_iovec", Layer::Socket, Kind::Point, Category::Socket, None);
    /// `sock:sock_recv_length`: the receive call returns; len = bytes,
    /// aux = `copied_seq` after it (TCP) or 0 (UDP).
    SOCK_RECV_LENGTH = ("kernel.sock_recv_length", Layer::Socket, Kind::Point, Category::Socket, None);
    /// `skb:consume_skb`: freed after use; closes the skb address.
    CONSUME_SKB = ("kernel.consume_skb", Layer::Host, Kind::Point, Category::None, None);
    /// `skb:kfree_skb`: dropped; **len = the drop reason** (`enum
    /// skb_drop_reason`), aux = skb.
    KFREE_SKB = ("kernel.kfree_skb", Layer::Host, Kind::Point, Category::None, None);
    /// `tcp:tcp_retransmit_skb`: a segment sent again; aux = skb.
    TCP_RETRANSMIT_SKB = ("kernel.tcp_retransmit_skb", Layer::Transport, Kind::Point, Category::ProtocolSend, None);
    /// The start of a UDP send to a given destination (the cgroup's
    /// `sendmsg4`/`sendmsg6` hook in `udp_sendmsg`/`udpv6_sendmsg`, before
    /// the datagram is built); len 0, aux 0. A connected socket's send
    /// does not run it.
    UDP_SENDMSG = ("kernel.udp_sendmsg", Layer::Socket, Kind::Point, Category::Socket, None);
    /// IP output handing the packet on (the cgroup's egress hook in
    /// `ip_finish_output` / `ip6_finish_output`: after IP's header and
    /// netfilter hooks, before fragmentation and the neighbour layer);
    /// aux = skb, len = the packet's length from its IP header (the whole
    /// datagram, before fragmentation).
    IP_FINISH_OUTPUT = ("kernel.ip_finish_output", Layer::Network, Kind::Point, Category::ProtocolSend, None);
    /// TCP or UDP input reaching the socket's filter (the cgroup's ingress
    /// hook in `sk_filter`): IP input (and reassembly) and the socket
    /// lookup are done; aux = skb, len = the packet's length from its IP
    /// header (the hook runs with the IP header pushed back on).
    SK_FILTER = ("kernel.sk_filter", Layer::Transport, Kind::Point, Category::ProtocolReceive, None);
    /// An ACK that frees bytes of the socket send queue, seen at
    /// `tcp:tcp_probe` (TCP input, before `tcp_ack` runs): **len = the
    /// segment's acknowledgment number**, **aux = `snd_una` before it**;
    /// recorded only when it advances `snd_una` (and acknowledges nothing
    /// unsent). Data stays queued until acknowledged: this is the send
    /// queue's dequeue, a point because one ACK may free part of a
    /// message or several.
    TCP_ACK = ("kernel.tcp_ack", Layer::Transport, Kind::Point, Category::ProtocolReceive, None);
}

/// Where an eBPF program attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// A `tp_btf` program on this tracepoint.
    Tracepoint(&'static str),
    /// A `cgroup_skb` program on the run's cgroup: IP output (egress).
    CgroupEgress,
    /// A `cgroup_skb` program on the run's cgroup: transport input
    /// (ingress, `sk_filter`).
    CgroupIngress,
    /// A cgroup `sendmsg4`/`sendmsg6` program on the run's cgroup.
    CgroupSendmsg,
}

/// One eBPF program: its name in the object, where it attaches (its
/// `tracepoint`: the tracepoint's name, or the cgroup hook's) and the
/// locations it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hook {
    pub program: &'static str,
    pub tracepoint: &'static str,
    pub attach: Attach,
    pub locations: &'static [probe::Loc],
}

/// Every program of the object, in the order they are attached.
pub static HOOKS: &[Hook] = &[
    hook("tcp_sendmsg_locked", &[TCP_SENDMSG_LOCKED]),
    hook("sock_send_length", &[SOCK_SEND_LENGTH]),
    hook("qdisc_enqueue", &[QDISC_ENQUEUE]),
    hook("qdisc_dequeue", &[QDISC_DEQUEUE]),
    hook("net_dev_queue", &[NET_DEV_QUEUE, TCP_SEQ]),
    hook("net_dev_start_xmit", &[NET_DEV_START_XMIT]),
    hook("net_dev_xmit", &[NET_DEV_XMIT]),
    hook("tcp_retransmit_skb", &[TCP_RETRANSMIT_SKB]),
    hook("netif_rx", &[NETIF_RX]),
    hook("netif_receive_skb", &[NETIF_RECEIVE_SKB]),
    hook("tcp_probe", &[TCP_PROBE, TCP_SEQ, TCP_ACK]),
    hook("sk_data_ready", &[SK_DATA_READY]),
    hook("skb_copy_datagram_iovec", &[SKB_COPY_DATAGRAM_IOVEC]),
    hook("sock_recv_length", &[SOCK_RECV_LENGTH]),
    hook("consume_skb", &[CONSUME_SKB]),
    hook("kfree_skb", &[KFREE_SKB]),
    cgroup(
        "ip_finish_output",
        "cgroup_skb/egress",
        Attach::CgroupEgress,
        &[IP_FINISH_OUTPUT],
    ),
    cgroup(
        "sk_filter",
        "cgroup_skb/ingress",
        Attach::CgroupIngress,
        &[SK_FILTER],
    ),
    cgroup(
        "udp_sendmsg6",
        "cgroup/sendmsg6",
        Attach::CgroupSendmsg,
        &[UDP_SENDMSG],
    ),
    cgroup(
        "udp_sendmsg4",
        "cgroup/sendmsg4",
        Attach::CgroupSendmsg,
        &[UDP_SENDMSG],
    ),
];

/// Tracepoint programs are named after their tracepoint.
const fn hook(name: &'static str, locations: &'static [probe::Loc]) -> Hook {
    Hook {
        program: name,
        tracepoint: name,
        attach: Attach::Tracepoint(name),
        locations,
    }
}

const fn cgroup(
    program: &'static str,
    section: &'static str,
    attach: Attach,
    locations: &'static [probe::Loc],
) -> Hook {
    Hook {
        program,
        tracepoint: section,
        attach,
        locations,
    }
}

impl Hook {
    /// The name of the probe as reports list it: `kernel.` and the
    /// location it writes first.
    pub fn probe_name(&self) -> &'static str {
        LOCATIONS[self.locations[0].index()].name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_location_is_written_by_a_hook() {
        for (index, location) in LOCATIONS.iter().enumerate() {
            assert!(
                HOOKS
                    .iter()
                    .any(|h| h.locations.iter().any(|l| l.index() == index)),
                "{} has no hook",
                location.name
            );
        }
    }

    #[test]
    fn names_follow_the_tracepoints() {
        for hook in HOOKS {
            let primary = LOCATIONS[hook.locations[0].index()].name;
            match hook.attach {
                Attach::Tracepoint(tp) => assert_eq!(primary, format!("kernel.{tp}")),
                // cgroup programs are named after their location, the two
                // sendmsg ones with their family's digit.
                _ => assert_eq!(
                    primary,
                    format!("kernel.{}", hook.program.trim_end_matches(['4', '6']))
                ),
            }
        }
    }
}

#[cfg(test)]
mod order_tests {
    use super::LOCATIONS;

    /// The `KP_*` enum of the eBPF source lists the table in order, so the
    /// numbers the programs write name the right locations.
    #[test]
    fn the_bpf_enum_matches_the_table() {
        let source = include_str!("../bpf/stackscope.bpf.c");
        let start = source.find("enum {").expect("the KP_ enum");
        let body = &source[start..start + source[start..].find("};").expect("its end")];
        let names: Vec<String> = body
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter_map(|w| w.strip_prefix("KP_"))
            .map(|w| format!("kernel.{}", w.to_ascii_lowercase()))
            .collect();
        let table: Vec<&str> = LOCATIONS.iter().map(|l| l.name).collect();
        assert_eq!(names, table);
    }
}
