//! Kernel probes on a real path: a kernel TCP and a kernel UDP message over
//! IPv6 across a veth pair between two network namespaces made here. The
//! events of one message must appear on both sides in layer order (the IP
//! output and transport input events of the cgroup hooks included), joined
//! by skb address within its lifetime and across hosts by flow and TCP
//! sequence; the TCP message leaves the sender's socket send queue at the
//! ACK of its last byte; a fragmented datagram's fragments are traced; the
//! ring's drop counters must be read (and count a forced overflow). Needs
//! root and BTF; without them each test prints why it is skipped.

use std::time::Duration;

use kernel_probe::transfer::{self, Moved};
use kernel_probe::{Config, KernelProbes, KernelTrace, LOCATIONS};
use probe::{Layer, Record};
use traffic::kernel::netns::{Side, VethPair};
use traffic::spec::Family;

const TCP_FLOW: u32 = 1;
const UDP_FLOW: u32 = 2;
const MESSAGE: usize = 1000;

/// Why the kernel probes cannot run here, if they cannot.
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

fn name(r: &Record) -> &'static str {
    LOCATIONS[r.location().index()].name
}

fn layer(r: &Record) -> Layer {
    LOCATIONS[r.location().index()].layer
}

/// Prints a flow's events, time relative to its first, for the record.
fn listing(trace: &KernelTrace, flow: u32) {
    let hz = trace.trace.header.counter_hz;
    let records: Vec<&Record> = trace
        .trace
        .records
        .iter()
        .filter(|r| r.flow == flow)
        .collect();
    let Some(first) = records.first() else {
        println!("flow {flow}: no events");
        return;
    };
    println!("flow {flow}: {} events", records.len());
    for r in &records {
        println!(
            "  {:>9.3} us  cpu {:>2}  {:<32} {:<9} len {:>10}  aux {:#x}",
            (r.tsc - first.tsc) as f64 * 1e6 / hz,
            r.thread,
            name(r),
            layer(r).as_str(),
            r.len,
            r.aux
        );
    }
}

/// The first record of `flow` at location `loc` for which `pred` holds.
fn find<'a>(
    trace: &'a KernelTrace,
    flow: u32,
    loc: &str,
    pred: impl Fn(&Record) -> bool,
) -> &'a Record {
    trace
        .trace
        .records
        .iter()
        .find(|r| r.flow == flow && name(r) == loc && pred(r))
        .unwrap_or_else(|| panic!("flow {flow}: no {loc} event matching"))
}

/// Asserts that `events` are in time order and their layers follow
/// `layers` (each layer a run, in this order).
fn assert_order(what: &str, events: &[&Record], layers: &[Layer]) {
    for pair in events.windows(2) {
        assert!(
            pair[0].tsc <= pair[1].tsc,
            "{what}: {} after {}",
            name(pair[0]),
            name(pair[1])
        );
    }
    let mut seen: Vec<Layer> = events.iter().map(|r| layer(r)).collect();
    seen.dedup();
    assert_eq!(seen, layers, "{what}: layers in order");
}

/// The namespaces are named after the process (`stackscope-<pid>-a`), so
/// this file's tests make their pairs one at a time.
fn one_pair_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn start(config: &Config) -> Option<KernelProbes> {
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return None;
    }
    let probes = KernelProbes::start(config).expect("kernel probes start");
    for status in probes.status() {
        println!("{status}");
    }
    Some(probes)
}

#[test]
fn tcp_and_udp_messages_in_layer_order_on_both_sides() {
    layer_order(Family::V6, "kernel-veth.trace");
}

#[test]
fn the_same_over_ipv4() {
    layer_order(Family::V4, "kernel-veth-ipv4.trace");
}

fn layer_order(family: Family, kept_as: &str) {
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&Config::default()) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let one = Moved {
        sent: 1,
        received: 1,
    };
    let moved = transfer::tcp(&pair, &mut probes, family, MESSAGE, 1, TCP_FLOW).expect("TCP");
    assert_eq!(moved, one);
    let moved = transfer::udp(&pair, &mut probes, family, MESSAGE, 1, UDP_FLOW).expect("UDP");
    assert_eq!(moved, one);
    let trace = probes
        .finish(&format!("test: veth, {family:?}"))
        .expect("finish");
    listing(&trace, TCP_FLOW);
    listing(&trace, UDP_FLOW);
    println!("dropped: {}, malformed: {}", trace.dropped, trace.malformed);
    trace.trace.validate().expect("a valid trace");
    assert_eq!(trace.trace.header.dropped, trace.dropped);
    assert_eq!(trace.dropped, 0, "a 4 MiB ring holds two messages");
    assert_eq!(trace.malformed, 0);
    // Only the registered flows were recorded.
    assert!(trace
        .trace
        .records
        .iter()
        .all(|r| r.flow == TCP_FLOW || r.flow == UDP_FLOW));

    check_tcp(&trace);
    check_udp(&trace);

    // The file round-trips through the reader the analysis uses.
    let bytes = trace.trace.to_bytes().expect("encode");
    assert_eq!(
        probe::Trace::from_bytes(&bytes).expect("decode"),
        trace.trace
    );
    // Kept for `stackscope trace info target/tmp/kernel-veth.trace`.
    let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(kept_as);
    std::fs::write(&kept, &bytes).expect("write the trace");
}

fn check_tcp(trace: &KernelTrace) {
    let f = TCP_FLOW;
    // Send side: the message enters the socket with its first sequence
    // number, which names the segment carrying it.
    let sendmsg = find(trace, f, "kernel.tcp_sendmsg_locked", |r| {
        r.len == MESSAGE as u32
    });
    let seq = sendmsg.aux;
    let is_seq = |r: &Record| u64::from(r.len) == seq;
    let same_instant = |loc: &'static str| {
        move |b: &Record| {
            trace
                .trace
                .records
                .iter()
                .any(|r| name(r) == loc && r.aux == b.aux && r.tsc == b.tsc)
        }
    };
    let sent = find(trace, f, "kernel.tcp_seq", |r| {
        is_seq(r) && same_instant("kernel.net_dev_queue")(r)
    });
    let skb = sent.aux;
    let by_skb = |loc| find(trace, f, loc, |r| r.aux == skb && r.tsc >= sendmsg.tsc);
    // The segment's skb leaves IP output (the cgroup egress hook) before
    // the device layer; the tcp_seq binding is written at net_dev_queue.
    let send_path = [
        sendmsg,
        by_skb("kernel.ip_finish_output"),
        by_skb("kernel.net_dev_queue"),
        by_skb("kernel.net_dev_start_xmit"),
        by_skb("kernel.net_dev_xmit"),
    ];
    assert_order(
        "TCP send",
        &send_path,
        &[Layer::Socket, Layer::Network, Layer::Link],
    );
    assert_eq!(sent.tsc, send_path[2].tsc);
    let returned = find(trace, f, "kernel.sock_send_length", |r| {
        r.aux == seq + MESSAGE as u64
    });
    assert_eq!(returned.len, MESSAGE as u32);
    assert!(returned.tsc >= sendmsg.tsc);

    // Receive side: the same flow and sequence number across the veth.
    let received = find(trace, f, "kernel.tcp_seq", |r| {
        is_seq(r) && same_instant("kernel.tcp_probe")(r)
    });
    let rskb = received.aux;
    let by_rskb = |loc| find(trace, f, loc, |r| r.aux == rskb && r.tsc >= sent.tsc);
    let ready = find(trace, f, "kernel.sk_data_ready", |r| {
        r.aux == seq + MESSAGE as u64
    });
    let copied = by_rskb("kernel.skb_copy_datagram_iovec");
    assert_eq!(copied.len, MESSAGE as u32);
    let read = find(trace, f, "kernel.sock_recv_length", |r| {
        r.aux == seq + MESSAGE as u64
    });
    // IP input ends where TCP input runs the socket's filter (the cgroup
    // ingress hook), before tcp_probe.
    let receive_path = [
        by_rskb("kernel.netif_rx"),
        by_rskb("kernel.netif_receive_skb"),
        by_rskb("kernel.sk_filter"),
        received,
        by_rskb("kernel.tcp_probe"),
        ready,
        copied,
        read,
    ];
    assert_order(
        "TCP receive",
        &receive_path,
        &[Layer::Link, Layer::Transport, Layer::Socket],
    );
    // And the receive follows the send.
    assert!(receive_path[0].tsc >= send_path[4].tsc.min(send_path[2].tsc));

    // The socket send queue: the message entered it at tcp_sendmsg_locked
    // and leaves it at the first ACK covering its last byte
    // (kernel.tcp_ack, len = the acknowledgment number). aux = snd_una
    // read at tcp_probe, still the message's first byte: the tracepoint
    // runs before tcp_ack, so snd_una alone would mark the next segment.
    let end = seq + MESSAGE as u64;
    let acked = find(trace, f, "kernel.tcp_ack", |r| {
        offset(u64::from(r.len), end as u32) < 1 << 31
    });
    assert_eq!(u64::from(acked.len), end, "the ACK of exactly the message");
    assert_eq!(acked.aux, seq, "snd_una before this ACK");
    // No ACK freed any of it before.
    assert!(!trace.trace.records.iter().any(|r| r.flow == f
        && name(r) == "kernel.tcp_ack"
        && r.tsc < acked.tsc
        && offset(u64::from(r.len), seq as u32) > 0
        && offset(u64::from(r.len), seq as u32) < 1 << 31));
    // Enqueued, sent, received, acknowledged: in time order.
    let queue_path = [
        sendmsg,
        send_path[1],
        send_path[2],
        received,
        by_rskb("kernel.tcp_probe"),
        acked,
    ];
    assert_order(
        "TCP send queue",
        &queue_path,
        &[Layer::Socket, Layer::Network, Layer::Link, Layer::Transport],
    );
}

/// Offset of sequence `seq` from `base`, modulo 2³².
fn offset(seq: u64, base: u32) -> u32 {
    (seq as u32).wrapping_sub(base)
}

fn check_udp(trace: &KernelTrace) {
    let f = UDP_FLOW;
    // The send starts at the cgroup's sendmsg hook; IP output hands the
    // datagram on, the device sends it, and the send call returns.
    let call = find(trace, f, "kernel.udp_sendmsg", |_| true);
    let out = find(trace, f, "kernel.ip_finish_output", |r| r.tsc >= call.tsc);
    let skb = out.aux;
    let by_skb = |loc| find(trace, f, loc, |r| r.aux == skb && r.tsc >= call.tsc);
    let sent = find(trace, f, "kernel.sock_send_length", |r| {
        r.len == MESSAGE as u32
    });
    let send_path = [
        call,
        out,
        by_skb("kernel.net_dev_queue"),
        by_skb("kernel.net_dev_start_xmit"),
        by_skb("kernel.net_dev_xmit"),
    ];
    assert_order(
        "UDP send",
        &send_path,
        &[Layer::Socket, Layer::Network, Layer::Link],
    );
    assert!(sent.tsc >= send_path[4].tsc);
    // Receive: the device's frame, UDP input's socket filter, the socket
    // queue, the read. UDP copies a linear skb without
    // skb_copy_datagram_iovec (copy_linear_skb), so the read's return is
    // the dequeue seen.
    let rx = find(trace, f, "kernel.netif_rx", |r| r.aux == skb);
    let ready = find(trace, f, "kernel.sk_data_ready", |r| r.tsc >= rx.tsc);
    let read = find(trace, f, "kernel.sock_recv_length", |r| {
        r.len == MESSAGE as u32
    });
    assert_order(
        "UDP receive",
        &[
            rx,
            find(trace, f, "kernel.netif_receive_skb", |r| r.aux == skb),
            find(trace, f, "kernel.sk_filter", |r| r.aux == skb),
            ready,
            read,
        ],
        &[Layer::Link, Layer::Transport, Layer::Socket],
    );
}

/// A UDP datagram larger than the MTU goes as IPv6 fragments; the later
/// ones carry no ports but are joined to the first's flow by the
/// fragment identification, so every fragment is traced on both hosts.
#[test]
fn a_fragmented_udp_datagram_is_traced_through_its_fragments() {
    const LARGE: usize = 8000;
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&Config::default()) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let moved = transfer::udp(&pair, &mut probes, Family::V6, LARGE, 1, UDP_FLOW).expect("UDP");
    assert_eq!(moved.received, 1);
    let trace = probes.finish("test: fragments").expect("finish");
    listing(&trace, UDP_FLOW);
    assert_eq!(trace.dropped, 0);
    let f = UDP_FLOW;
    let call = find(&trace, f, "kernel.udp_sendmsg", |_| true);
    // IP output sees the whole datagram, before fragmentation.
    let out = find(&trace, f, "kernel.ip_finish_output", |r| {
        r.len as usize >= LARGE + 8
    });
    let of = |loc: &str| -> Vec<&Record> {
        trace
            .trace
            .records
            .iter()
            .filter(|r| r.flow == f && name(r) == loc)
            .collect()
    };
    // 8008 bytes of UDP in fragments of at most 1448: six.
    let queued = of("kernel.net_dev_queue");
    let arrived = of("kernel.netif_rx");
    assert_eq!(queued.len(), 6, "fragments handed to the device");
    assert_eq!(arrived.len(), 6, "fragments arriving");
    assert_eq!(of("kernel.net_dev_xmit").len(), 6);
    assert_eq!(of("kernel.netif_receive_skb").len(), 6);
    // The first fragment is the datagram's skb.
    assert_eq!(queued[0].aux, out.aux);
    let last_xmit = of("kernel.net_dev_xmit")
        .into_iter()
        .map(|r| r.tsc)
        .max()
        .unwrap();
    assert_order(
        "fragmented UDP send",
        &[call, out, queued[0], *queued.last().unwrap()],
        &[Layer::Socket, Layer::Network, Layer::Link],
    );
    // Reassembled, UDP input filters it (the hook sees it from its IP
    // header: 40 + 8 + 8000 bytes) and queues it. Its copy to the reader
    // shows no event: with its checksum still to verify, udp_recvmsg
    // copies it with skb_copy_and_csum_datagram_msg, which has no
    // tracepoint.
    let filtered = find(&trace, f, "kernel.sk_filter", |r| {
        r.len as usize == LARGE + 48
    });
    let read = find(&trace, f, "kernel.sock_recv_length", |r| {
        r.len as usize == LARGE
    });
    assert_order(
        "fragmented UDP receive",
        &[
            arrived[0],
            *arrived.last().unwrap(),
            *of("kernel.netif_receive_skb").last().unwrap(),
            filtered,
            find(&trace, f, "kernel.sk_data_ready", |r| r.tsc >= filtered.tsc),
            read,
        ],
        &[Layer::Link, Layer::Transport, Layer::Socket],
    );
    assert!(arrived[0].tsc >= out.tsc && last_xmit >= arrived[0].tsc);
}

#[test]
fn a_tiny_ring_overflows_and_the_drops_are_counted() {
    let config = Config {
        // One page: about a hundred records.
        ring_bytes: 4096,
        // Never drained during the transfer.
        poll_interval: Duration::from_secs(60),
        ..Config::default()
    };
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&config) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let moved = transfer::tcp(&pair, &mut probes, Family::V6, 100, 500, TCP_FLOW).expect("TCP");
    assert_eq!(moved.received, 500);
    let trace = probes.finish("test: tiny ring").expect("finish");
    println!(
        "kept {} records, dropped {}",
        trace.trace.records.len(),
        trace.dropped
    );
    assert!(trace.dropped > 0, "500 messages overflow a one-page ring");
    assert_eq!(trace.trace.header.dropped, trace.dropped);
    // What was kept fits the page (each entry has an 8-byte header).
    assert!(!trace.trace.records.is_empty());
    assert!(trace.trace.records.len() <= 4096 / 40);
}

#[test]
fn records_beyond_the_memory_limit_are_counted_as_dropped() {
    let config = Config {
        max_records: 50,
        ..Config::default()
    };
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&config) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let moved = transfer::tcp(&pair, &mut probes, Family::V6, 100, 200, TCP_FLOW).expect("TCP");
    assert_eq!(moved.received, 200);
    let trace = probes.finish("test: record limit").expect("finish");
    println!(
        "kept {} records, dropped {}",
        trace.trace.records.len(),
        trace.dropped
    );
    assert_eq!(trace.trace.records.len(), 50, "kept up to the limit");
    assert!(trace.dropped > 0, "200 messages make more than 50 records");
    assert_eq!(trace.trace.header.dropped, trace.dropped);
}

/// Not root: starting says what is missing, without panicking. (As root,
/// the other tests run instead.)
#[test]
fn without_root_the_error_names_the_permission() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        println!("skipped: running as root");
        return;
    }
    match KernelProbes::start(&Config::default()) {
        Ok(_) => println!("started without root: this user has CAP_BPF and CAP_PERFMON"),
        Err(e) => {
            println!("{e}");
            let text = e.to_string();
            assert!(
                text.contains("root") || text.contains("BTF"),
                "the error says what is missing: {text}"
            );
        }
    }
}

/// With a qdisc that queues every packet (tbf: unlike pfifo it has no
/// bypass for an empty queue; fast enough never to hold one back) on the
/// sender's veth, each packet passes qdisc_enqueue then qdisc_dequeue,
/// inside the device queue.
#[test]
fn a_queueing_qdisc_shows_its_enqueue_and_dequeue() {
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&Config::default()) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let (ns, dev) = (pair.namespace(Side::B), pair.interface(Side::B));
    let tc = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev])
        .args([
            "root", "tbf", "rate", "10gbit", "burst", "1mb", "latency", "100ms",
        ])
        .output()
        .expect("run tc");
    if !tc.status.success() {
        println!(
            "skipped: tc could not add tbf: {}",
            String::from_utf8_lossy(&tc.stderr).trim()
        );
        return;
    }
    transfer::tcp(&pair, &mut probes, Family::V6, MESSAGE, 3, TCP_FLOW).expect("TCP");
    let trace = probes.finish("test: tbf").expect("finish");
    let at = |loc: &str| -> Vec<&Record> {
        trace
            .trace
            .records
            .iter()
            .filter(|r| name(r) == loc)
            .collect()
    };
    let (enqueued, dequeued) = (at("kernel.qdisc_enqueue"), at("kernel.qdisc_dequeue"));
    println!(
        "qdisc: {} enqueued, {} dequeued",
        enqueued.len(),
        dequeued.len()
    );
    assert!(!enqueued.is_empty());
    assert_eq!(enqueued.len(), dequeued.len());
    for e in &enqueued {
        let d = dequeued
            .iter()
            .find(|d| d.aux == e.aux && d.tsc >= e.tsc)
            .expect("each enqueued skb leaves the qdisc");
        let queued = at("kernel.net_dev_queue");
        let q = queued
            .iter()
            .find(|q| q.aux == e.aux && q.tsc <= e.tsc)
            .expect("queued to the device before the qdisc");
        let x = at("kernel.net_dev_start_xmit");
        let x = x
            .iter()
            .find(|x| x.aux == e.aux && x.tsc >= d.tsc)
            .expect("the driver after the qdisc");
        assert!(q.tsc <= e.tsc && e.tsc <= d.tsc && d.tsc <= x.tsc);
    }
}

/// A datagram to a port nobody listens on is dropped by the receiver's UDP
/// with a reason: kernel.kfree_skb carries it in len, after the frame's
/// device events, same skb.
#[test]
fn a_dropped_datagram_is_recorded_with_its_reason() {
    let _pair = one_pair_at_a_time();
    let Some(mut probes) = start(&Config::default()) else {
        return;
    };
    let pair = VethPair::create(1500).expect("veth pair");
    let ns = transfer::namespace_inodes(&pair).expect("inodes");
    // The discard port: nothing listens in a namespace made a moment ago.
    let closed = std::net::SocketAddr::new(pair.addr(Side::A, Family::V6), 9);
    let pair_ref = &pair;
    let socket = std::thread::scope(|s| {
        s.spawn(move || {
            pair_ref.enter(Side::B).expect("enter B");
            std::net::UdpSocket::bind(std::net::SocketAddr::new(
                pair_ref.addr(Side::B, Family::V6),
                0,
            ))
            .expect("bind")
        })
        .join()
        .expect("bind thread")
    });
    let port = socket.local_addr().expect("local").port();
    for inode in ns {
        probes
            .trace_flow(inode, port, 9, UDP_FLOW)
            .expect("register");
    }
    // The socket lives in B whichever thread sends.
    socket.send_to(&[0u8; 100], closed).expect("send");
    // The receive runs inside the send on veth; give a deferred one time.
    std::thread::sleep(Duration::from_millis(50));
    let trace = probes.finish("test: closed port").expect("finish");
    let freed = trace
        .trace
        .records
        .iter()
        .find(|r| name(r) == "kernel.kfree_skb")
        .expect("the drop is recorded");
    println!("dropped skb {:#x}, reason {}", freed.aux, freed.len);
    // 0 and 1 are "not dropped" and "consumed": a real drop has a reason
    // after them.
    assert!(freed.len >= 2, "reason {}", freed.len);
    // Named from the kernel's own enum skb_drop_reason (its BTF): nobody
    // listens, so the socket lookup found none.
    let reasons = kernel_probe::DropReasons::from_kernel().expect("the enum in the BTF");
    assert_eq!(reasons.name(freed.len), "NO_SOCKET");
    assert!(trace.drops.contains_key("NO_SOCKET"), "{:?}", trace.drops);
    let received = trace
        .trace
        .records
        .iter()
        .find(|r| name(r) == "kernel.netif_receive_skb" && r.aux == freed.aux)
        .expect("the frame arrived first");
    assert!(received.tsc <= freed.tsc);
}

/// The probes' cost as the lab measures it, on a short plan: the programs'
/// own time comes from the kernel's run-time statistics, on only for the
/// timed transfers (before and after them the counters stand still), and
/// is a positive figure per record with an interval.
#[test]
fn the_programs_own_time_is_read_from_the_kernel_per_record() {
    let _pair = one_pair_at_a_time();
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return;
    }
    let pair = VethPair::create(1500).expect("veth pair");
    let plan = kernel_probe::cost::CostPlan {
        pairs: 3,
        bytes: 4 << 20,
        chunk: 64 << 10,
        family: Family::V6,
    };
    let cost = kernel_probe::cost::measure(&pair, &plan, &Config::default()).expect("cost");
    assert_eq!(cost.program_time_missing, None, "statistics refused");
    assert_eq!(cost.timed.len(), 3);
    for leg in &cost.timed {
        assert!(leg.events > 0 && leg.program.runs > 0, "{leg:?}");
        // Every record was written by a program run.
        assert!(leg.program.runs >= leg.events / 2, "{leg:?}");
    }
    // The untimed attached transfers read no statistics.
    assert!(cost
        .pairs
        .iter()
        .all(|(a, d)| a.program.runs == 0 && d.program.runs == 0));
    let own = cost
        .program_ns_per_record
        .expect("programs' time per record");
    println!(
        "programs' own time per record: {own:?}; extra CPU per event: {:?}",
        cost.per_event_ns
    );
    assert_eq!(own.n, 3);
    // A program run costs something, and far less than a millisecond.
    assert!(own.mean > 0.0 && own.mean < 100_000.0, "{own:?}");
}
