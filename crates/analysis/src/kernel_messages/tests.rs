//! Hand-built kernel traces: a wrong join or a wrong window gives other
//! numbers than these, worked out by hand from the event times (counter
//! at 1 GHz, so one cycle is one ns).

use probe::{Category, Kind, Layer, LocationEntry, Record, Trace, TraceHeader};

use super::sites as s;
use super::*;

const SENDER: u32 = 1;
const RECEIVER: u32 = 2;
const FLOWS: Flows = Flows {
    sender: SENDER,
    receiver: RECEIVER,
};

/// The kernel's location table, in an order unlike the probe crate's (the
/// analysis must read names, not numbers).
const NAMES: [&str; 20] = [
    s::SOCK_RECV_LENGTH,
    s::TCP_SEQ,
    s::NET_DEV_QUEUE,
    s::TCP_SENDMSG_LOCKED,
    s::NET_DEV_START_XMIT,
    s::NET_DEV_XMIT,
    s::NETIF_RX,
    s::NETIF_RECEIVE_SKB,
    s::TCP_PROBE,
    s::SK_DATA_READY,
    s::SKB_COPY_DATAGRAM_IOVEC,
    s::SOCK_SEND_LENGTH,
    s::QDISC_ENQUEUE,
    s::QDISC_DEQUEUE,
    s::KFREE_SKB,
    s::TCP_RETRANSMIT_SKB,
    s::SK_FILTER,
    s::UDP_SENDMSG,
    s::IP_FINISH_OUTPUT,
    s::TCP_ACK,
];

fn loc(name: &str) -> u16 {
    NAMES.iter().position(|n| *n == name).unwrap() as u16
}

/// A record at `tsc` ns on CPU 1.
fn at(tsc: u64, name: &str, flow: u32, len: u32, aux: u64) -> Record {
    on(tsc, name, flow, len, aux, 1)
}

fn on(tsc: u64, name: &str, flow: u32, len: u32, aux: u64, cpu: u16) -> Record {
    Record::new(tsc, probe::Loc(loc(name)), len, flow, aux, cpu)
}

fn trace(records: Vec<Record>, overhead_cycles: f64) -> Trace {
    Trace {
        header: TraceHeader::new(1e9, overhead_cycles, 0, "test"),
        locations: NAMES
            .iter()
            .map(|n| LocationEntry {
                name: n.to_string(),
                layer: Layer::Link,
                kind: Kind::Point,
                category: Category::None,
                queue: None,
            })
            .collect(),
        records,
    }
}

const SKB: u64 = 0xffff_8881_0000_0100;
const SEQ: u32 = 5000;

/// One 1000-byte message in one packet, as the veth transfer records it:
/// the receiver's backlog entry comes inside the sender's driver call.
fn one_message(t0: u64, seq: u32, skb: u64) -> Vec<Record> {
    let end = u64::from(seq) + 1000;
    vec![
        at(
            t0 + 100,
            s::TCP_SENDMSG_LOCKED,
            SENDER,
            1000,
            u64::from(seq),
        ),
        at(t0 + 300, s::TCP_SEQ, SENDER, seq, skb),
        at(t0 + 300, s::NET_DEV_QUEUE, SENDER, 1086, skb),
        at(t0 + 400, s::NET_DEV_START_XMIT, SENDER, 1086, skb),
        at(t0 + 500, s::NETIF_RX, RECEIVER, 1072, skb),
        at(t0 + 600, s::NET_DEV_XMIT, SENDER, 1086, skb),
        at(t0 + 700, s::NETIF_RECEIVE_SKB, RECEIVER, 1072, skb),
        at(t0 + 900, s::TCP_SEQ, RECEIVER, seq, skb),
        at(t0 + 900, s::TCP_PROBE, RECEIVER, 1032, skb),
        at(t0 + 1000, s::SK_DATA_READY, RECEIVER, 0, end),
        at(t0 + 1200, s::SOCK_SEND_LENGTH, SENDER, 1000, end),
        on(
            t0 + 1500,
            s::SKB_COPY_DATAGRAM_IOVEC,
            RECEIVER,
            1000,
            skb,
            0,
        ),
        on(t0 + 1800, s::SOCK_RECV_LENGTH, RECEIVER, 1000, end, 0),
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn one_tcp_message_has_its_windows_and_layers() {
    let t = trace(one_message(0, SEQ, SKB), 0.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000]).unwrap();
    let m = &run.messages[0];
    let send = m.send.as_ref().expect("send windows");
    // sendmsg 100 → start_xmit 400; → net_dev_xmit 600.
    assert!(close(send.start_ns, 300.0), "{send:?}");
    assert!(close(send.stop_ns, 500.0));
    assert_eq!(send.handed_stop_ns, Some(300.0));
    assert_eq!(send.layers_ns[&KernelLayer::Output], 200.0);
    assert_eq!(send.layers_ns[&KernelLayer::DeviceQueue], 100.0);
    assert_eq!(send.layers_ns[&KernelLayer::Driver], 200.0);
    // The receiver's backlog entry is not the sender's path.
    assert!(!send.events.iter().any(|(n, _)| n == s::NETIF_RX));
    let receive = m.receive.as_ref().expect("receive windows");
    // netif_rx 500 → first copy 1500; → the read returning 1800.
    assert!(close(receive.start_ns, 1000.0), "{receive:?}");
    assert!(close(receive.stop_ns, 1300.0));
    let layers = &receive.layers_ns;
    assert_eq!(layers[&KernelLayer::Backlog], 200.0);
    assert_eq!(layers[&KernelLayer::Input], 300.0);
    assert_eq!(layers[&KernelLayer::SocketQueue], 500.0);
    assert_eq!(layers[&KernelLayer::Copy], 300.0);
    assert_eq!((m.packets_sent, m.packets_received), (1, 1));
    assert!(run.incomplete_send.is_empty() && run.incomplete_receive.is_empty());
}

#[test]
fn layers_add_up_to_the_stop_window() {
    let t = trace(one_message(0, SEQ, SKB), 0.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000]).unwrap();
    for w in [&run.messages[0].send, &run.messages[0].receive] {
        let w = w.as_ref().unwrap();
        assert!(close(w.layers_ns.values().sum::<f64>(), w.stop_ns));
    }
    let points = by_size(&run.messages);
    let send = points[0].send.as_ref().unwrap();
    assert!(close(send.shares_percent.values().sum::<f64>(), 100.0));
    assert!(close(send.shares_percent[&KernelLayer::Output], 40.0));
}

#[test]
fn a_reused_skb_address_joins_within_its_own_message() {
    // The second message's skb has the first one's address (freed and
    // reused) and its sequence follows: each message must find its own
    // events, not the other's.
    let mut records = one_message(0, SEQ, SKB);
    let mut second = one_message(10_000, SEQ + 1000, SKB);
    // The second's driver takes longer: 400 → 2600.
    for r in &mut second {
        if r.loc == loc(s::NET_DEV_XMIT) {
            r.tsc = 12_600;
        }
    }
    second.sort_by_key(|r| r.tsc);
    records.extend(second);
    let t = trace(records, 0.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000, 1000]).unwrap();
    assert!(close(run.messages[0].send.as_ref().unwrap().stop_ns, 500.0));
    assert!(close(
        run.messages[1].send.as_ref().unwrap().stop_ns,
        2500.0
    ));
    assert!(close(
        run.messages[1].receive.as_ref().unwrap().stop_ns,
        1300.0
    ));
}

#[test]
fn the_stop_ends_at_the_last_bytes_packet_and_acks_are_not_data() {
    // 3000 bytes in two packets; the one holding the last byte (sequence
    // 5000 + 1448) is bound first but sent second. An ACK arriving at the
    // sender has a tcp_probe binding with the reverse direction's
    // sequence: not the message's.
    let (a, b, ack) = (0xa00u64, 0xb00u64, 0xc00u64);
    let seq = u64::from(SEQ);
    let end = seq + 3000;
    let records = vec![
        at(100, s::TCP_SENDMSG_LOCKED, SENDER, 3000, seq),
        at(200, s::TCP_SEQ, SENDER, SEQ, a),
        at(200, s::NET_DEV_QUEUE, SENDER, 1514, a),
        at(250, s::NET_DEV_START_XMIT, SENDER, 1514, a),
        at(260, s::NETIF_RX, RECEIVER, 1500, a),
        at(300, s::NET_DEV_XMIT, SENDER, 1514, a),
        at(350, s::TCP_SEQ, SENDER, SEQ + 100, ack),
        at(350, s::TCP_PROBE, SENDER, 32, ack),
        at(400, s::TCP_SEQ, SENDER, SEQ + 1448, b),
        at(400, s::NET_DEV_QUEUE, SENDER, 1514, b),
        at(450, s::NET_DEV_START_XMIT, SENDER, 1514, b),
        at(460, s::NETIF_RX, RECEIVER, 1500, b),
        at(700, s::NET_DEV_XMIT, SENDER, 1514, b),
        at(800, s::NETIF_RECEIVE_SKB, RECEIVER, 1500, a),
        at(810, s::TCP_SEQ, RECEIVER, SEQ, a),
        at(810, s::TCP_PROBE, RECEIVER, 1480, a),
        at(900, s::NETIF_RECEIVE_SKB, RECEIVER, 1500, b),
        at(910, s::TCP_SEQ, RECEIVER, SEQ + 1448, b),
        at(910, s::TCP_PROBE, RECEIVER, 1584, b),
        at(950, s::SK_DATA_READY, RECEIVER, 0, end),
        on(1000, s::SKB_COPY_DATAGRAM_IOVEC, RECEIVER, 1448, a, 0),
        on(1100, s::SKB_COPY_DATAGRAM_IOVEC, RECEIVER, 1552, b, 0),
        on(1300, s::SOCK_RECV_LENGTH, RECEIVER, 3000, end, 0),
    ];
    let t = trace(records, 0.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[3000]).unwrap();
    let m = &run.messages[0];
    assert_eq!((m.packets_sent, m.packets_received), (2, 2));
    let send = m.send.as_ref().unwrap();
    assert!(close(send.start_ns, 150.0));
    assert!(close(send.stop_ns, 600.0), "{send:?}");
    assert_eq!(send.handed_stop_ns, Some(350.0));
    // 100→200 output, 200→250 queue, 250→300 driver, 300→400 output
    // (the ACK is no event of the path), 400→450 queue, 450→700 driver.
    assert_eq!(send.layers_ns[&KernelLayer::Output], 200.0);
    assert_eq!(send.layers_ns[&KernelLayer::DeviceQueue], 100.0);
    assert_eq!(send.layers_ns[&KernelLayer::Driver], 300.0);
    let receive = m.receive.as_ref().unwrap();
    // First arrival 260 → first copy 1000 and the read 1300.
    assert!(close(receive.start_ns, 740.0));
    assert!(close(receive.stop_ns, 1040.0));
    assert_eq!(receive.layers_ns[&KernelLayer::Arrival], 200.0);
    assert_eq!(receive.layers_ns[&KernelLayer::Copy], 300.0);
}

#[test]
fn incomplete_messages_are_counted_with_their_reason() {
    let mut records = one_message(0, SEQ, SKB);
    // The read never returns the last byte.
    records.retain(|r| r.loc != loc(s::SOCK_RECV_LENGTH));
    let t = trace(records, 0.0);
    // A second message was sent by the runner but none was traced.
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000, 2000]).unwrap();
    assert_eq!(run.messages.len(), 2);
    assert!(run.messages[0].send.is_some());
    assert!(run.messages[0].receive.is_none());
    assert_eq!(run.incomplete_receive["no_read_returned_the_last_byte"], 1);
    assert_eq!(run.incomplete_receive["no_send_call"], 1);
    assert_eq!(run.incomplete_send["no_send_call"], 1);
    let points = by_size(&run.messages);
    assert_eq!(points[0].receive_incomplete, 1);
    assert!(points[0].receive.is_none());
}

#[test]
fn the_probes_cost_is_taken_out_per_record_on_the_paths_cpus() {
    // 10 cycles a record. Send window 100 → 600: (100, 300] holds two
    // records (the binding and net_dev_queue), (300, 400] one, (400, 600]
    // two (the receiver's netif_rx ran on this CPU too).
    let t = trace(one_message(0, SEQ, SKB), 10.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000]).unwrap();
    let send = run.messages[0].send.as_ref().unwrap();
    assert!(close(send.stop_ns, 500.0 - 50.0), "{send:?}");
    assert!(close(send.start_ns, 300.0 - 30.0));
    assert!(close(run.overhead_ns, 10.0));
}

#[test]
fn udp_datagrams_join_by_order() {
    let mut records = Vec::new();
    for (k, t0) in [0u64, 10_000].into_iter().enumerate() {
        let skb = 0xd00 + k as u64;
        records.extend([
            at(t0 + 100, s::NET_DEV_QUEUE, SENDER, 1062, skb),
            at(t0 + 200, s::NET_DEV_START_XMIT, SENDER, 1062, skb),
            at(t0 + 300, s::NETIF_RX, RECEIVER, 1048, skb),
            at(t0 + 400, s::NET_DEV_XMIT, SENDER, 1062, skb),
            at(t0 + 600, s::NETIF_RECEIVE_SKB, RECEIVER, 1048, skb),
            at(t0 + 1000, s::SK_DATA_READY, RECEIVER, 0, 0),
            at(t0 + 1100, s::SOCK_SEND_LENGTH, SENDER, 1000, 0),
            on(
                t0 + 2000 + 100 * k as u64,
                s::SOCK_RECV_LENGTH,
                RECEIVER,
                1000,
                0,
                0,
            ),
        ]);
    }
    let t = trace(records, 0.0);
    let run = analyse(&t, Transport::Udp, FLOWS, &[1000, 1000]).unwrap();
    for (k, m) in run.messages.iter().enumerate() {
        assert!(m.send.is_none());
        assert_eq!(m.send_missing, Some("udp_send_has_no_start_event"));
        assert_eq!(m.packets_sent, 1);
        let r = m.receive.as_ref().unwrap();
        let stop = 1700.0 + 100.0 * k as f64;
        assert!(close(r.stop_ns, stop), "{r:?}");
        assert!(close(r.start_ns, stop));
        assert_eq!(r.layers_ns[&KernelLayer::Backlog], 300.0);
        assert_eq!(r.layers_ns[&KernelLayer::Input], 400.0);
        assert!(close(
            r.layers_ns[&KernelLayer::SocketQueue],
            stop - 1000.0 + 300.0
        ));
    }
    assert_eq!(run.incomplete_send["udp_send_has_no_start_event"], 2);
}

#[test]
fn the_ip_events_cut_transport_from_network_on_both_paths() {
    let mut records = one_message(0, SEQ, SKB);
    records.push(at(200, s::IP_FINISH_OUTPUT, SENDER, 1086, SKB));
    records.push(at(800, s::SK_FILTER, RECEIVER, 1032, SKB));
    records.sort_by_key(|r| r.tsc);
    let t = trace(records, 0.0);
    let run = analyse(&t, Transport::Tcp, FLOWS, &[1000]).unwrap();
    let m = &run.messages[0];
    let send = m.send.as_ref().unwrap();
    // sendmsg 100 → IP output 200 → net_dev_queue 300 → 400 → 600.
    assert_eq!(send.layers_ns[&KernelLayer::TransportOutput], 100.0);
    assert_eq!(send.layers_ns[&KernelLayer::NetworkOutput], 100.0);
    assert!(!send.layers_ns.contains_key(&KernelLayer::Output));
    assert!(close(send.stop_ns, 500.0));
    let receive = m.receive.as_ref().unwrap();
    // receive_skb 700 → sk_filter 800 → tcp_probe 900 → data_ready 1000.
    let layers = &receive.layers_ns;
    assert_eq!(layers[&KernelLayer::NetworkInput], 100.0);
    assert_eq!(layers[&KernelLayer::TransportInput], 200.0);
    assert!(!layers.contains_key(&KernelLayer::Input));
    assert!(close(layers.values().sum::<f64>(), receive.stop_ns));
}

#[test]
fn a_fragmented_udp_send_has_its_window_and_every_fragment() {
    // An 8000-byte datagram in two fragments (a: the datagram's own skb,
    // b), its send started by udp_sendmsg, reassembled into b's skb.
    let (a, b) = (0xa00u64, 0xb00u64);
    let records = vec![
        at(100, s::UDP_SENDMSG, SENDER, 0, 0),
        at(200, s::IP_FINISH_OUTPUT, SENDER, 8048, a),
        at(300, s::NET_DEV_QUEUE, SENDER, 1510, a),
        at(350, s::NET_DEV_START_XMIT, SENDER, 1510, a),
        at(360, s::NETIF_RX, RECEIVER, 1496, a),
        at(400, s::NET_DEV_XMIT, SENDER, 1510, a),
        at(450, s::NET_DEV_QUEUE, SENDER, 1510, b),
        at(500, s::NET_DEV_START_XMIT, SENDER, 1510, b),
        at(510, s::NETIF_RX, RECEIVER, 1496, b),
        at(600, s::NET_DEV_XMIT, SENDER, 1510, b),
        at(700, s::NETIF_RECEIVE_SKB, RECEIVER, 1496, a),
        at(750, s::NETIF_RECEIVE_SKB, RECEIVER, 1496, b),
        at(800, s::SK_FILTER, RECEIVER, 8008, b),
        at(850, s::SK_DATA_READY, RECEIVER, 0, 0),
        at(900, s::SOCK_SEND_LENGTH, SENDER, 8000, 0),
        on(1000, s::SKB_COPY_DATAGRAM_IOVEC, RECEIVER, 8000, b, 0),
        on(1200, s::SOCK_RECV_LENGTH, RECEIVER, 8000, 0, 0),
    ];
    let t = trace(records, 0.0);
    let run = analyse(&t, Transport::Udp, FLOWS, &[8000]).unwrap();
    let m = &run.messages[0];
    assert_eq!((m.packets_sent, m.packets_received), (2, 2));
    let send = m.send.as_ref().unwrap_or_else(|| panic!("{m:?}"));
    // udp_sendmsg 100 → a's start_xmit 350; → b's net_dev_xmit 600.
    assert!(close(send.start_ns, 250.0), "{send:?}");
    assert!(close(send.stop_ns, 500.0));
    assert_eq!(send.handed_stop_ns, Some(400.0));
    // The second fragment's way to the device (400 → 450) is IP output's.
    assert_eq!(send.layers_ns[&KernelLayer::TransportOutput], 100.0);
    assert_eq!(send.layers_ns[&KernelLayer::NetworkOutput], 150.0);
    assert_eq!(send.layers_ns[&KernelLayer::DeviceQueue], 100.0);
    assert_eq!(send.layers_ns[&KernelLayer::Driver], 150.0);
    let r = m.receive.as_ref().unwrap();
    // netif_rx 360 → the copy 1000 → the read 1200.
    assert!(close(r.start_ns, 640.0), "{r:?}");
    assert!(close(r.stop_ns, 840.0));
    assert_eq!(r.layers_ns[&KernelLayer::Arrival], 150.0);
    assert_eq!(r.layers_ns[&KernelLayer::Backlog], 240.0);
    assert_eq!(r.layers_ns[&KernelLayer::NetworkInput], 50.0);
    assert_eq!(r.layers_ns[&KernelLayer::TransportInput], 50.0);
    assert_eq!(r.layers_ns[&KernelLayer::SocketQueue], 150.0);
    assert_eq!(r.layers_ns[&KernelLayer::Copy], 200.0);
    assert!(run.incomplete_send.is_empty() && run.incomplete_receive.is_empty());
}

#[test]
fn a_trace_without_the_kernel_sites_is_refused() {
    let mut t = trace(Vec::new(), 0.0);
    t.locations.retain(|l| l.name != s::NET_DEV_XMIT);
    let err = analyse(&t, Transport::Tcp, FLOWS, &[1]).unwrap_err();
    assert!(err.to_string().contains("kernel.net_dev_xmit"), "{err}");
}

#[test]
fn queues_pair_each_skb_and_count_the_rest() {
    let mut records = one_message(0, SEQ, SKB);
    // A dequeue whose enqueue came before the trace.
    records.push(at(5000, s::NETIF_RECEIVE_SKB, RECEIVER, 60, 0x1234));
    let t = trace(records, 0.0);
    let qs = queues(&t);
    let device = qs.iter().find(|q| q.queue == "device").unwrap();
    assert_eq!(
        (device.flow, device.packets, device.max_length),
        (SENDER, 1, 1)
    );
    assert!(close(device.delay_us.unwrap().mean, 0.1));
    let backlog = qs.iter().find(|q| q.queue == "backlog").unwrap();
    assert_eq!((backlog.packets, backlog.unpaired_dequeues), (1, 1));
    assert!(close(backlog.delay_us.unwrap().mean, 0.2));
    // Queued on the socket at 1000 (rcv_nxt = the message's end), taken
    // by the read returning at 1800 with copied_seq there.
    let socket = qs.iter().find(|q| q.queue == "socket_receive").unwrap();
    assert_eq!(
        (socket.flow, socket.packets, socket.max_length),
        (RECEIVER, 1, 1)
    );
    assert!(close(socket.delay_us.unwrap().mean, 0.8));
}

#[test]
fn the_socket_receive_queue_follows_sequence_and_datagram_order() {
    // TCP: two wake-ups (rcv_nxt 2000, 3000); a read reaching 1500 takes
    // none, one reaching 3000 takes both.
    let tcp = vec![
        at(100, s::SK_DATA_READY, RECEIVER, 0, 2000),
        at(200, s::SK_DATA_READY, RECEIVER, 0, 3000),
        at(300, s::SOCK_RECV_LENGTH, RECEIVER, 500, 1500),
        at(600, s::SOCK_RECV_LENGTH, RECEIVER, 1500, 3000),
    ];
    let qs = queues(&trace(tcp, 0.0));
    let q = qs.iter().find(|q| q.queue == "socket_receive").unwrap();
    assert_eq!((q.packets, q.max_length, q.unpaired_dequeues), (2, 2, 1));
    // 600 - 100 and 600 - 200 ns.
    assert!(close(q.delay_us.unwrap().mean, 0.45));
    // UDP: datagrams in order, a failed read (len 0) takes none.
    let udp = vec![
        at(100, s::SK_DATA_READY, RECEIVER, 0, 0),
        at(150, s::SK_DATA_READY, RECEIVER, 0, 0),
        at(200, s::SOCK_RECV_LENGTH, RECEIVER, 0, 0),
        at(300, s::SOCK_RECV_LENGTH, RECEIVER, 100, 0),
        at(500, s::SOCK_RECV_LENGTH, RECEIVER, 100, 0),
    ];
    let qs = queues(&trace(udp, 0.0));
    let q = qs.iter().find(|q| q.queue == "socket_receive").unwrap();
    assert_eq!((q.packets, q.max_length, q.unpaired_dequeues), (2, 2, 0));
    // 300 - 100 and 500 - 150 ns.
    assert!(close(q.delay_us.unwrap().mean, 0.275));
}

/// A 1000-byte message (seq 5000) in one segment, a 3000-byte one (6000)
/// in two with a partial ACK and a retransmission between, a third never
/// acknowledged; an ACK before anything was enqueued.
fn send_queue_records() -> Vec<Record> {
    let (skb1, skb2, skb3, ack_skb) = (SKB, SKB + 0x100, SKB + 0x200, SKB + 0x300);
    let sent = |t: u64, seq: u32, skb: u64| {
        [
            at(t, s::TCP_SEQ, SENDER, seq, skb),
            at(t, s::NET_DEV_QUEUE, SENDER, 1086, skb),
        ]
    };
    let mut r = vec![
        at(50, s::TCP_ACK, SENDER, 5000, 4000),
        at(100, s::TCP_SENDMSG_LOCKED, SENDER, 1000, 5000),
        // The copy loop's second pass: same end, not a new message.
        at(150, s::TCP_SENDMSG_LOCKED, SENDER, 400, 5600),
        at(200, s::IP_FINISH_OUTPUT, SENDER, 1072, skb1),
    ];
    r.extend(sent(300, 5000, skb1));
    r.extend([
        // The receiver's binding of the same segment: not a send.
        at(900, s::TCP_SEQ, RECEIVER, 5000, skb1),
        at(900, s::TCP_PROBE, RECEIVER, 1032, skb1),
        at(1500, s::TCP_SENDMSG_LOCKED, SENDER, 3000, 6000),
        at(2000, s::TCP_ACK, SENDER, 6000, 5000),
        at(2600, s::IP_FINISH_OUTPUT, SENDER, 1572, skb2),
    ]);
    r.extend(sent(2700, 6000, skb2));
    r.push(at(2800, s::IP_FINISH_OUTPUT, SENDER, 1572, skb3));
    r.extend(sent(2900, 7500, skb3));
    // An ACK going the other way (loopback: one flow id), its sequence in
    // the other direction's space.
    r.extend(sent(2950, 0x9000_0000, ack_skb));
    // Half of the second message acknowledged: it stays queued.
    r.push(at(3000, s::TCP_ACK, SENDER, 7500, 6000));
    // Its second segment again: not a later sequence, the first counts.
    r.push(at(3100, s::IP_FINISH_OUTPUT, SENDER, 1572, skb3));
    r.extend(sent(3150, 7500, skb3));
    r.push(at(4000, s::TCP_ACK, SENDER, 9000, 7500));
    r.push(at(5000, s::TCP_SENDMSG_LOCKED, SENDER, 100, 9000));
    r
}

#[test]
fn the_socket_send_queue_runs_from_the_send_call_to_the_ack() {
    let qs = queues(&trace(send_queue_records(), 0.0));
    let q = qs.iter().find(|q| q.queue == "socket_send").unwrap();
    assert_eq!(q.flow, SENDER);
    // Two messages paired, the third still queued, the first ACK unpaired;
    // both first messages queued at once (1500 to 2000).
    assert_eq!(
        (q.packets, q.unpaired_enqueues, q.unpaired_dequeues),
        (2, 1, 1)
    );
    assert_eq!(q.max_length, 2);
    // 100 → 2000 and 1500 → 4000 ns.
    assert!(close(q.delay_us.unwrap().mean, 2.2), "{q:?}");
    let parts = q.send.as_ref().unwrap();
    // write_seq 9000 - snd_una 5000 at 1500.
    assert_eq!((parts.max_bytes, parts.unsplit), (4000, 0));
    // Sent (IP output of the last byte's segment) at 200 and 2800.
    assert!(close(parts.until_sent_us.unwrap().mean, 0.7));
    assert!(close(parts.sent_until_acked_us.unwrap().mean, 1.5));
    let sizes: Vec<(u32, u64)> = parts
        .by_size
        .iter()
        .map(|s| (s.bytes, s.messages))
        .collect();
    assert_eq!(sizes, vec![(1000, 1), (3000, 1)]);
    assert!(close(parts.by_size[1].delay_us.unwrap().mean, 2.5));
    assert!(close(parts.by_size[1].until_sent_us.unwrap().mean, 1.3));
    // The receiver sent nothing: no send queue of its own.
    assert!(!qs
        .iter()
        .any(|q| q.queue == "socket_send" && q.flow == RECEIVER));
}

#[test]
fn a_send_queue_without_its_segments_is_not_split() {
    let records = vec![
        at(100, s::TCP_SENDMSG_LOCKED, SENDER, 1000, 5000),
        at(900, s::TCP_ACK, SENDER, 6000, 5000),
    ];
    let qs = queues(&trace(records, 0.0));
    let q = qs.iter().find(|q| q.queue == "socket_send").unwrap();
    assert_eq!(q.packets, 1);
    assert!(close(q.delay_us.unwrap().mean, 0.8));
    let parts = q.send.as_ref().unwrap();
    assert_eq!(parts.unsplit, 1);
    assert!(parts.until_sent_us.is_none() && parts.sent_until_acked_us.is_none());
    // A trace from before kernel.tcp_ack has no send queue.
    let mut t = trace(
        vec![at(100, s::TCP_SENDMSG_LOCKED, SENDER, 1000, 5000)],
        0.0,
    );
    t.locations.retain(|l| l.name != s::TCP_ACK);
    assert!(!queues(&t).iter().any(|q| q.queue == "socket_send"));
}
