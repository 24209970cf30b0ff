//! XTP's probes on a lossy wire, under the same schema as TCP's: every
//! XTP site (output, input, control processing, timers, retransmissions)
//! records, spans pair up, and the byte-stream queue probes account for
//! every byte: the send queue's enqueues add up to what was written and
//! its dequeues to what was acknowledged, the receive queue's to what
//! arrived and what was read, each `aux` the stream offset reached.

mod xtp_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use probe::Mode;
use stack::iface::host::XtpError;
use stack::runner::Simulator;
use stack::socket::xtp::XtpConfig;
use stack::topology::Topology;
use xtp_support::host_mut;

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

/// The transfer on a fresh thread (rings are per thread): the sender's,
/// the receiver's and every flow's tallies.
fn traced_transfer() -> (Tally, Tally, Tally) {
    std::thread::spawn(|| {
        probe::init_thread(1 << 20);
        let text = include_str!("../../../topologies/unlimited.toml").replace(
            "b = \"host-b:eth0\"",
            "b = \"host-b:eth0\"\nloss = 0.02\nseed = 7",
        );
        let mut sim = Simulator::new(&Topology::from_toml_str(&text).unwrap(), None).unwrap();
        sim.run_for(Duration::from_secs(3));
        let remote: SocketAddr = "[2001:db8:1::b]:7036".parse().unwrap();
        let listener = host_mut(&mut sim, "host-b")
            .xtp_listen("[::]:7036".parse().unwrap(), XtpConfig::default())
            .unwrap();
        let client = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, XtpConfig::default())
            .unwrap();
        let mut server = None;
        assert!(sim.run_until_with(Duration::from_secs(5), |sim| {
            server = server.or_else(|| host_mut(sim, "host-b").xtp_accept(listener).ok());
            server.is_some()
        }));
        let server = server.unwrap();
        let _ = probe::drain_thread();
        probe::set_mode(Mode::All);
        let data = vec![0x5a; BYTES];
        let (mut sent, mut got, mut buf) = (0, 0, vec![0u8; 16384]);
        let done = sim.run_until_with(Duration::from_secs(30), |sim| {
            let a = host_mut(sim, "host-a");
            while sent < BYTES {
                match a.xtp_send(client, &data[sent..]) {
                    Ok(n) => sent += n,
                    Err(XtpError::WouldBlock) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            if sent == BYTES {
                a.xtp_shutdown(client).unwrap();
            }
            let b = host_mut(sim, "host-b");
            loop {
                match b.xtp_recv(server, &mut buf) {
                    Ok(0) => return true,
                    Ok(n) => got += n,
                    Err(XtpError::WouldBlock) => return false,
                    Err(e) => panic!("{e}"),
                }
            }
        });
        assert!(done && got == BYTES, "got {got} of {BYTES}");
        sim.run_for(Duration::from_secs(1));
        probe::set_mode(Mode::Off);
        let records = probe::drain_thread();
        let flow = |name: &str, h| {
            sim.host(name)
                .unwrap()
                .xtp_association(h)
                .unwrap()
                .flow()
                .id
        };
        let counters = sim
            .host("host-a")
            .unwrap()
            .xtp_association(client)
            .unwrap()
            .counters();
        assert!(
            counters.retransmitted_packets > 0,
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
fn every_xtp_site_records_and_the_stream_queues_account_for_every_byte() {
    let (sender, receiver, all) = traced_transfer();
    if !probe::ENABLED {
        assert!(all.is_empty());
        return;
    }
    let count = |t: &Tally, name: &str| t.get(name).map_or(0, |e| e.0);
    for name in [
        "xtp.output.enter",
        "xtp.control.enter",
        "xtp.retransmit",
        "socket.send.enter",
    ] {
        assert!(count(&sender, name) > 0, "sender: no {name}: {sender:?}");
    }
    for name in ["xtp.output.enter", "socket.recv.enter"] {
        assert!(
            count(&receiver, name) > 0,
            "receiver: no {name}: {receiver:?}"
        );
    }
    // Packets in (recorded under the packet's flow, none for untraced
    // packets): at least nine in ten of those either end sent.
    let sent = count(&sender, "xtp.output.enter") + count(&receiver, "xtp.output.enter");
    assert!(count(&all, "xtp.input.enter") >= sent * 9 / 10, "{all:?}");
    for t in [&sender, &receiver, &all] {
        for site in ["xtp.output", "xtp.input", "xtp.control", "xtp.timer"] {
            let enter = count(t, &format!("{site}.enter"));
            assert_eq!(enter, count(t, &format!("{site}.exit")), "{site}");
        }
    }
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
