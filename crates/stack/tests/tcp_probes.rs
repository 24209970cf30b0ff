//! TCP's probes on a lossy wire: every TCP site (output, input, ACK
//! processing, timers, retransmissions) records, and the byte-stream queue
//! probes account for every byte: the send queue's enqueues add up to what
//! was written and its dequeues to what was acknowledged, the receive
//! queue's to what arrived and what was read, each `aux` the stream offset
//! reached.

mod network_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use network_support::host_mut;
use probe::Mode;
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::topology::Topology;

const BYTES: usize = 300_000;

/// Per location name: (records, summed len, largest aux) of one flow.
type Tally = BTreeMap<&'static str, (u64, u64, u64)>;

fn tally(records: &[probe::Record], flow: Option<u32>) -> Tally {
    let mut out = Tally::new();
    for r in records.iter().filter(|r| flow.is_none_or(|f| r.flow == f)) {
        let name = stack::probes::LOCATIONS[r.loc as usize].name;
        let entry = out.entry(name).or_default();
        entry.0 += 1;
        entry.1 += u64::from(r.len);
        entry.2 = entry.2.max(r.aux);
    }
    out
}

/// Runs the transfer on a fresh thread (rings are per thread) and returns
/// the sender's, the receiver's and every flow's tallies. (Arriving
/// segments record `tcp.input` under the packet's flow: an untraced
/// packet's is none, as for UDP.)
fn traced_transfer() -> (Tally, Tally, Tally) {
    std::thread::spawn(|| {
        probe::init_thread(1 << 20);
        let text = include_str!("../../../topologies/unlimited.toml").replace(
            "b = \"host-b:eth0\"",
            "b = \"host-b:eth0\"\nloss = 0.02\nseed = 7",
        );
        let mut sim = Simulator::new(&Topology::from_toml_str(&text).unwrap(), None).unwrap();
        sim.run_for(Duration::from_secs(3));
        let remote: SocketAddr = "[2001:db8:1::b]:5001".parse().unwrap();
        let listener = host_mut(&mut sim, "host-b")
            .tcp_listen(
                "[::]:5001".parse().unwrap(),
                TcpConfig::default(),
                ListenerConfig::default(),
            )
            .unwrap();
        let limit = Duration::from_secs(30);
        let client =
            blocking::connect(&mut sim, "host-a", remote, TcpConfig::default(), limit).unwrap();
        let server = blocking::accept(&mut sim, "host-b", listener, limit).unwrap();
        let _ = probe::drain_thread();
        probe::set_mode(Mode::All);
        let data = vec![0x5a; BYTES];
        blocking::write_all(&mut sim, "host-a", client, &data, limit).unwrap();
        host_mut(&mut sim, "host-a").tcp_shutdown(client).unwrap();
        let got = blocking::read_to_end(&mut sim, "host-b", server, limit).unwrap();
        assert_eq!(got.len(), BYTES);
        // Let the last ACKs land.
        sim.run_for(Duration::from_secs(1));
        probe::set_mode(Mode::Off);
        let records = probe::drain_thread();
        let flow = |name: &str, h| sim.host(name).unwrap().tcp_connection(h).unwrap().flow().id;
        let counters = sim
            .host("host-a")
            .unwrap()
            .tcp_connection(client)
            .unwrap()
            .counters();
        assert!(
            counters.segments_retransmitted > 0,
            "the wire lost nothing: {counters:?}"
        );
        (
            tally(&records, Some(flow("host-a", client))),
            tally(&records, Some(flow("host-b", server))),
            tally(&records, None),
        )
    })
    .join()
    .unwrap()
}

#[test]
fn every_tcp_site_records_and_the_stream_queues_account_for_every_byte() {
    let (sender, receiver, all) = traced_transfer();
    if !probe::ENABLED {
        assert!(all.is_empty());
        return;
    }
    let count = |t: &Tally, name: &str| t.get(name).map_or(0, |e| e.0);
    for name in [
        "tcp.output.enter",
        "tcp.output.exit",
        "tcp.ack.enter",
        "tcp.ack.exit",
        "tcp.retransmit",
        "socket.send.enter",
    ] {
        assert!(count(&sender, name) > 0, "sender: no {name}: {sender:?}");
    }
    for name in ["tcp.output.enter", "socket.recv.enter"] {
        assert!(
            count(&receiver, name) > 0,
            "receiver: no {name}: {receiver:?}"
        );
    }
    // Both ends' segments in: at least every segment either end sent
    // that the wire did not lose.
    let sent = count(&sender, "tcp.output.enter") + count(&receiver, "tcp.output.enter");
    assert!(count(&all, "tcp.input.enter") >= sent * 9 / 10, "{all:?}");
    // Delayed ACKs (receiver) and retransmission timeouts or probes
    // (sender) run as timers.
    assert!(count(&sender, "tcp.timer.enter") + count(&receiver, "tcp.timer.enter") > 0);
    // Spans pair up.
    for t in [&sender, &receiver, &all] {
        for site in ["tcp.output", "tcp.input", "tcp.ack", "tcp.timer"] {
            let enter = count(t, &format!("{site}.enter"));
            assert_eq!(enter, count(t, &format!("{site}.exit")), "{site}");
        }
    }
    // The byte-stream queues: lengths add up, the last offset is the end.
    let bytes = BYTES as u64;
    for (t, name) in [
        (&sender, "socket.send_queue.enqueue"),
        (&sender, "socket.send_queue.dequeue"),
        (&receiver, "socket.recv_queue.enqueue"),
        (&receiver, "socket.recv_queue.dequeue"),
    ] {
        let (_, len, aux) = t.get(name).copied().unwrap_or_default();
        assert_eq!((len, aux), (bytes, bytes), "{name}");
    }
}
