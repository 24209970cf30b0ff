//! The lab's kernel transfers on a real veth pair, analysed: each host's
//! events under its own flow id, messages one at a time, and every
//! message's windows found by `analysis::kernel_messages` with their
//! layers adding up. Needs root and BTF; without them each test says why
//! it is skipped.

use std::sync::{Mutex, MutexGuard};

use analysis::kernel_messages::{self as km, Flows, KernelLayer, PathWindows, Transport};
use kernel_probe::messages::{self, HostFlows, Path, Transferred};
use kernel_probe::{Config, KernelProbes, KernelTrace, LOCATIONS};
use traffic::kernel::netns::VethPair;
use traffic::spec::Family;

fn skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: loading eBPF programs and making namespaces need it");
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("no /sys/kernel/btf/vmlinux: the kernel has no BTF");
    }
    None
}

/// The namespaces are named after the process: one pair at a time.
fn one_pair_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Moves `sizes` over `transport` (`messages::tcp_messages`, at the
/// kernel's default congestion control, or `udp_messages`) over IPv6 on
/// this process's veth pair (one pair at a time), the hosts' flows
/// numbered from `first_flow`, under the kernel probes: what moved and
/// what the probes traced; `None`, saying why, where the test cannot run.
fn traced_run(
    transport: Transport,
    first_flow: u32,
    sizes: &[u32],
) -> Option<(Transferred, KernelTrace)> {
    if let Some(why) = skip_reason() {
        println!("skipped: {why}");
        return None;
    }
    let _one = one_pair_at_a_time();
    let pair = VethPair::create(1500).expect("veth pair");
    let mut probes = KernelProbes::start(&Config::default()).expect("probes");
    let flows = HostFlows::of(first_flow, Path::Veth);
    let (probes_on, path, family) = (Some(&mut probes), Path::Veth, Family::V6);
    let moved = match transport {
        Transport::Tcp => {
            messages::tcp_messages(&pair, probes_on, path, family, sizes, flows, None)
        }
        Transport::Udp => messages::udp_messages(&pair, probes_on, path, family, sizes, flows),
    }
    .expect("transfer");
    let traced = probes.finish("test").expect("finish");
    Some((moved, traced))
}

/// The window's layers include the parts the IP events cut (transport
/// and network, on each path), and add up to the window.
fn assert_cut_layers(what: &str, w: &PathWindows, layers: &[KernelLayer]) {
    for layer in layers {
        assert!(
            w.layers_ns.contains_key(layer),
            "{what}: no {} part: {w:?}",
            layer.as_str()
        );
    }
    assert!(
        !w.layers_ns.contains_key(&KernelLayer::Output),
        "{what}: {w:?}"
    );
    assert!(
        !w.layers_ns.contains_key(&KernelLayer::Input),
        "{what}: {w:?}"
    );
    let sum: f64 = w.layers_ns.values().sum();
    assert!(
        (sum - w.stop_ns).abs() < 1e-6 * w.stop_ns.max(1.0),
        "{what}: {w:?}"
    );
}

const SEND_CUT: [KernelLayer; 2] = [KernelLayer::TransportOutput, KernelLayer::NetworkOutput];
const RECEIVE_CUT: [KernelLayer; 2] = [KernelLayer::NetworkInput, KernelLayer::TransportInput];

fn flow_of(trace: &probe::Trace, name: &str) -> Vec<u32> {
    let loc = LOCATIONS.iter().position(|l| l.name == name).unwrap() as u16;
    let mut flows: Vec<u32> = trace
        .records
        .iter()
        .filter(|r| r.loc == loc)
        .map(|r| r.flow)
        .collect();
    flows.sort_unstable();
    flows.dedup();
    flows
}

#[test]
fn tcp_messages_are_analysed_with_every_window() {
    let sizes = [1024u32, 65536, 1024, 4096];
    let Some((moved, traced)) = traced_run(Transport::Tcp, 5, &sizes) else {
        return;
    };
    assert_eq!((moved.sent, moved.received), (4, 4));
    assert_eq!(traced.dropped, 0);
    // Each host's events under its own id.
    assert_eq!(flow_of(&traced.trace, "kernel.tcp_sendmsg_locked"), vec![5]);
    assert_eq!(flow_of(&traced.trace, "kernel.sock_recv_length"), vec![6]);
    assert_eq!(flow_of(&traced.trace, "kernel.netif_rx"), vec![5, 6]);
    let run = km::analyse(
        &traced.trace,
        Transport::Tcp,
        Flows {
            sender: 5,
            receiver: 6,
        },
        &sizes,
    )
    .expect("analysis");
    for m in &run.messages {
        println!(
            "{} B: send {:?} / receive {:?}; {} skbs sent",
            m.bytes,
            m.send.as_ref().map(|w| (w.start_ns, w.stop_ns)),
            m.receive.as_ref().map(|w| (w.start_ns, w.stop_ns)),
            m.packets_sent
        );
        for (path, w) in [("send", &m.send), ("receive", &m.receive)] {
            let w = w
                .as_ref()
                .unwrap_or_else(|| panic!("{} B: no {path} window: {:?}", m.bytes, m));
            assert!(w.start_ns > 0.0 && w.start_ns <= w.stop_ns, "{path} {w:?}");
            let cut: &[KernelLayer] = if path == "send" {
                &SEND_CUT
            } else {
                &RECEIVE_CUT
            };
            assert_cut_layers(path, w, cut);
        }
        assert!(m.packets_sent >= 1 && m.packets_received >= 1);
    }
    assert!(run.incomplete_send.is_empty() && run.incomplete_receive.is_empty());

    // The sender's socket send queue: each message from its send call to
    // the ACK of its last byte, split at that byte's first transmission.
    let queues = km::queues(&traced.trace);
    let sq = queues
        .iter()
        .find(|q| q.queue == "socket_send" && q.flow == 5)
        .expect("the sender's send queue");
    assert!(!queues
        .iter()
        .any(|q| q.queue == "socket_send" && q.flow == 6));
    let parts = sq.send.as_ref().expect("its parts");
    for size in &parts.by_size {
        println!(
            "socket_send {} B: {} messages, delay {:?} µs, until sent {:?}, sent until ACK {:?}",
            size.bytes,
            size.messages,
            size.delay_us.map(|e| e.mean),
            size.until_sent_us.map(|e| e.mean),
            size.sent_until_acked_us.map(|e| e.mean)
        );
    }
    assert_eq!(
        (sq.packets, sq.unpaired_enqueues, sq.unpaired_dequeues),
        (4, 0, 0),
        "{sq:?}"
    );
    assert_eq!(parts.unsplit, 0, "{parts:?}");
    let sizes: Vec<(u32, u64)> = parts
        .by_size
        .iter()
        .map(|s| (s.bytes, s.messages))
        .collect();
    assert_eq!(sizes, vec![(1024, 2), (4096, 1), (65536, 1)]);
    // One message at a time (a delayed ACK may leave the one before
    // still queued); the 64 KiB message queued whole.
    assert!(sq.max_length <= 2 && parts.max_bytes >= 65536, "{sq:?}");
    let (delay, until) = (sq.delay_us.unwrap(), parts.until_sent_us.unwrap());
    let after = parts.sent_until_acked_us.unwrap();
    assert!(delay.min > 0.0 && until.min >= 0.0 && after.min >= 0.0);
    assert!((until.mean + after.mean - delay.mean).abs() < 1e-6 * delay.mean);
}

#[test]
fn udp_datagrams_are_analysed_on_both_paths_fragments_too() {
    // 8000 B: six IPv6 fragments of at most 1448 B of the datagram each.
    let sizes = [1024u32, 8000, 1024];
    let Some((moved, traced)) = traced_run(Transport::Udp, 9, &sizes) else {
        return;
    };
    assert_eq!(moved.received, 3);
    let run = km::analyse(
        &traced.trace,
        Transport::Udp,
        Flows {
            sender: 9,
            receiver: 10,
        },
        &sizes,
    )
    .expect("analysis");
    for m in &run.messages {
        println!(
            "{} B: {} packets sent, {} received; send {:?}; receive {:?}",
            m.bytes,
            m.packets_sent,
            m.packets_received,
            m.send.as_ref().map(|w| &w.events),
            m.receive.as_ref().map(|w| &w.events)
        );
        let send = m
            .send
            .as_ref()
            .unwrap_or_else(|| panic!("no send window: {m:?}"));
        let receive = m
            .receive
            .as_ref()
            .unwrap_or_else(|| panic!("no receive window: {m:?}"));
        assert!(
            send.start_ns > 0.0 && send.start_ns <= send.stop_ns,
            "{send:?}"
        );
        assert_cut_layers("send", send, &SEND_CUT);
        assert_cut_layers("receive", receive, &RECEIVE_CUT);
        let packets = if m.bytes == 8000 { 6 } else { 1 };
        assert_eq!(
            (m.packets_sent, m.packets_received),
            (packets, packets),
            "{m:?}"
        );
        // No UDP copy shows an event here (a one-packet datagram goes
        // through copy_linear_skb, a reassembled one through
        // skb_copy_and_csum_datagram_msg): start = stop.
        assert!(
            receive.stop_ns > 0.0 && receive.start_ns == receive.stop_ns,
            "{receive:?}"
        );
    }
    assert!(run.incomplete_send.is_empty(), "{:?}", run.incomplete_send);
    assert!(
        run.incomplete_receive.is_empty(),
        "{:?}",
        run.incomplete_receive
    );
}

/// Every 64 KiB message leaves the send queue at an ACK. A large write
/// can find its socket owned while ACKs arrive: the backlog then
/// coalesces them into one skb whose header keeps the first ACK's number
/// and TCP's control block the newest (the probe reads the block, as
/// tcp_ack does). That happens now and then, not on demand (once in 15
/// 64 KiB messages of a quick lab): this test does not always meet it.
#[test]
fn every_large_message_leaves_the_send_queue() {
    let sizes = [65536u32; 30];
    let Some((moved, traced)) = traced_run(Transport::Tcp, 11, &sizes) else {
        return;
    };
    assert_eq!(moved.received, sizes.len());
    assert_eq!(traced.dropped, 0);
    let queues = km::queues(&traced.trace);
    let sq = queues
        .iter()
        .find(|q| q.queue == "socket_send" && q.flow == 11)
        .expect("the sender's send queue");
    println!(
        "socket_send: {} paired, delay {:?} µs",
        sq.packets,
        sq.delay_us.map(|e| e.mean)
    );
    assert_eq!(
        (sq.packets, sq.unpaired_enqueues, sq.unpaired_dequeues),
        (30, 0, 0),
        "{sq:?}"
    );
    assert_eq!(sq.send.as_ref().map(|p| p.unsplit), Some(0));
}
