//! Segmentation and receive offload (`iface::offload`) on the simulator:
//! bulk TCP both ways arrives byte for byte with TSO and GRO on both ends
//! and on one end only, over IPv6 and IPv4; TSO really sends
//! super-segments (the device stage cuts them) and GRO really merges;
//! every frame on the wire fits the MTU and tshark finds nothing wrong in
//! the captures; a lossy wire still delivers everything.

mod network_support;

use std::path::Path;
use std::time::Duration;

use network_support::tcp::{self, exchange, varied};
use network_support::*;
use stack::iface::host::TcpHandle;
use stack::iface::offload::Offload;
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::topology::Topology;

const MTU: usize = 1500;

/// Two hosts on one wire (`topologies/unlimited.toml`'s shape), each
/// interface with the offloads named, and `wire_extra` on the wire.
fn topology(a: &[&str], b: &[&str], wire_extra: &str) -> Topology {
    let list = |names: &[&str]| {
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        format!("[{}]", quoted.join(", "))
    };
    let text = format!(
        r#"
seed = 3
[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"
ipv6 = ["2001:db8:1::a/64"]
dad_transmits = 0
offload = {}
[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.2/24"
ipv6 = ["2001:db8:1::b/64"]
dad_transmits = 0
offload = {}
[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
{wire_extra}
"#,
        list(a),
        list(b)
    );
    Topology::from_toml_str(&text).expect("topology")
}

/// A connection from host-a to host-b: (client, server).
fn connected(sim: &mut Simulator, v6: bool) -> (TcpHandle, TcpHandle) {
    connected_with(sim, v6, TcpConfig::default())
}

/// [`connected`] with `config` at both ends.
fn connected_with(sim: &mut Simulator, v6: bool, config: TcpConfig) -> (TcpHandle, TcpHandle) {
    tcp::wait_for_addresses(sim, Duration::from_secs(5));
    tcp::connect(sim, v6, config, Duration::from_secs(10))
}

/// A bulk exchange's time limit.
const LIMIT: Duration = Duration::from_secs(120);

/// Every frame in the pcapng capture `file` (its captured length), read
/// block by block.
fn frame_lengths(file: &Path) -> Vec<usize> {
    let bytes = std::fs::read(file).expect("read capture");
    let mut lens = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let (kind, len) = (word(at), word(at + 4) as usize);
        assert!(len >= 12, "bad block");
        // An Enhanced Packet Block: its captured length at offset 20.
        if kind == 6 {
            lens.push(word(at + 20) as usize);
        }
        at += len;
    }
    lens
}

struct Outcome {
    /// Wire frames host-a's device stage cut from super-segments, and
    /// segments host-b's GRO merged.
    a_cut: u64,
    b_merged: u64,
    a_merged: u64,
    b_cut: u64,
    /// Super-frames host-a and host-b handed to the wire whole.
    a_whole: u64,
    b_whole: u64,
    /// Frames host-b's link took.
    b_received: u64,
    /// Super-frames host-b took whole, and how many of them it took in
    /// the memory they crossed in (lent), and lent frames it refused.
    b_super: u64,
    b_lent: u64,
    b_lend_refused: u64,
}

/// A bulk exchange both ways over `topology`, checked byte for byte, with
/// tshark content with the captures, and every captured frame within the
/// MTU unless the wire carries super-frames whole (then some are longer).
fn bulk(test: &str, topology: &Topology, v6: bool) -> Outcome {
    let whole = topology.wire_config(0).expect("a wire").gso_whole();
    let dir = CaptureDir::new(test);
    let mut sim = simulator(topology, &dir);
    let handles = connected(&mut sim, v6);
    let up = varied(3 << 20, 1);
    let down = varied(1 << 20, 2);
    let (at_b, at_a) = exchange(&mut sim, handles, &up, &down, LIMIT);
    assert!(
        at_b == up,
        "host-b got {} bytes, not the {} sent",
        at_b.len(),
        up.len()
    );
    assert!(
        at_a == down,
        "host-a got {} bytes, not the {} sent",
        at_a.len(),
        down.len()
    );
    let counters = |name: &str| {
        let h = host(&sim, name);
        (h.interfaces()[0].counters, h.gro_counters())
    };
    let (a_if, a_gro) = counters("host-a");
    let (b_if, b_gro) = counters("host-b");
    let b_pool = host(&sim, "host-b").pool().clone();
    assert_eq!(a_if.tx_link_errors + b_if.tx_link_errors, 0);
    assert_eq!(a_if.offload_refused + b_if.offload_refused, 0);
    drop(sim);
    let files = dir.files();
    assert_eq!(files.len(), 2, "a capture per interface");
    for file in &files {
        let lens = frame_lengths(file);
        let longest = lens.iter().copied().max().unwrap();
        if whole {
            // 4 MiB in super-frames of up to 64 KiB, and their ACKs.
            assert!(
                longest > 16 * MTU,
                "{}: super-frames crossed whole, yet the longest frame is {longest} bytes",
                file.display()
            );
            continue;
        }
        assert!(
            lens.len() > 1000,
            "{}: {} frames",
            file.display(),
            lens.len()
        );
        assert!(
            longest <= MTU + 14,
            "{}: a frame of {longest} bytes on a wire of MTU {MTU}",
            file.display()
        );
        // Full-sized segments did go: TSO cut at the MSS, not smaller.
        assert!(
            longest >= MTU + 14 - 32,
            "{}: longest {longest}",
            file.display()
        );
        // Super-segments are whole MSS but at the end of the data (a
        // window cuts one short at an MSS boundary): on a clean wire short
        // data frames are rare. (ACKs are under 200 bytes; recovery on a
        // lossy wire sends what the pipe leaves room for, as without
        // offload.)
        let full = lens.iter().filter(|&&l| l == longest).count();
        let short = lens.iter().filter(|&&l| l > 200 && l < longest).count();
        assert!(
            topology.wires()[0].params.loss > 0.0 || short * 50 < full,
            "{}: {short} short data frames beside {full} full ones",
            file.display()
        );
    }
    if whole {
        dir.check_with_super_frames(MTU + 14);
    } else {
        dir.check();
    }
    Outcome {
        a_cut: a_if.gso_segments,
        b_merged: b_gro.merged,
        a_merged: a_gro.merged,
        b_cut: b_if.gso_segments,
        a_whole: a_if.gso_sent,
        b_whole: b_if.gso_sent,
        b_received: b_if.rx_frames,
        b_super: b_gro.super_segments,
        b_lent: b_pool.stats().lent,
        b_lend_refused: b_pool.stats().lend_refused,
    }
}

/// Between two GRO ends an unimpaired, unlimited wire carries the
/// super-frames whole, as a veth pair does: nothing is cut, nothing needs
/// merging, and host-b's link takes a small fraction of the 2200 segments
/// that 3 MiB would be.
#[test]
fn bulk_tcp_with_tso_and_gro_on_both_ends_arrives_whole() {
    for v6 in [true, false] {
        let topology = topology(&["tso", "gro"], &["tso", "gro"], "");
        let out = bulk(&format!("offload-both-{v6}"), &topology, v6);
        assert_eq!((out.a_cut, out.b_cut), (0, 0), "nothing was cut");
        assert!(out.a_whole > 30, "host-a sent {} super-frames", out.a_whole);
        assert!(out.b_whole > 10, "host-b sent {} super-frames", out.b_whole);
        assert!(
            out.b_received < 1100,
            "host-b's link took {} frames",
            out.b_received
        );
        // Each super-frame became host-b's packet in the memory it
        // crossed in, not copied into pool buffers.
        assert!(out.b_super > 30, "host-b took {} super-frames", out.b_super);
        assert_eq!((out.b_lent, out.b_lend_refused), (out.b_super, 0));
    }
}

/// A receiver whose GRO is turned off after the wire was made (`ethtool
/// -K gro off`) still gets super-frames whole from the wire: it cuts them
/// into the segments that would have crossed it, each checksummed, and
/// takes them one by one; everything arrives.
#[test]
fn a_receiver_without_gro_cuts_the_super_frames_it_is_handed() {
    let dir = CaptureDir::new("offload-gro-off-late");
    let topology = topology(&["tso", "gro"], &["tso", "gro"], "");
    let mut sim = simulator(&topology, &dir);
    let id = host(&sim, "host-b").interfaces()[0].id;
    host_mut(&mut sim, "host-b")
        .set_offload(id, Offload::NONE)
        .unwrap();
    let handles = connected(&mut sim, true);
    let up = varied(2 << 20, 5);
    let (at_b, _) = exchange(&mut sim, handles, &up, &[], LIMIT);
    assert!(
        at_b == up,
        "host-b got {} of {} bytes",
        at_b.len(),
        up.len()
    );
    let b = host(&sim, "host-b");
    assert_eq!(b.gro_counters().merged + b.gro_counters().super_segments, 0);
    let lost: Vec<_> = b
        .drops()
        .iter()
        .filter(|(r, _)| **r != "ethernet_not_for_us")
        .collect();
    assert!(lost.is_empty(), "host-b dropped {lost:?}");
    let a = host(&sim, "host-a").interfaces()[0].counters;
    assert!(a.gso_sent > 20, "host-a sent {} super-frames", a.gso_sent);
    assert_eq!(a.gso_segments, 0);
    drop(sim);
    dir.check_with_super_frames(MTU + 14);
}

#[test]
fn bulk_tcp_with_offload_on_one_end_only_arrives_whole() {
    for v6 in [true, false] {
        let topology = topology(&["tso", "gro"], &[], "");
        let out = bulk(&format!("offload-one-{v6}"), &topology, v6);
        assert!(out.a_cut > 1500, "host-a cut {} frames", out.a_cut);
        assert_eq!((out.b_cut, out.b_merged), (0, 0), "host-b has no offload");
        assert!(out.a_merged > 0, "host-a's GRO merged nothing");
        // And the other way round: the end without offload sends.
        let topology = topology_swapped();
        let out = bulk(&format!("offload-other-{v6}"), &topology, v6);
        assert_eq!(out.a_cut, 0);
        assert!(out.b_merged > 0, "host-b's GRO merged nothing");
    }
}

fn topology_swapped() -> Topology {
    topology(&[], &["gro"], "")
}

#[test]
fn without_offload_nothing_is_cut_or_merged() {
    let topology = topology(&[], &[], "");
    let out = bulk("offload-none", &topology, true);
    assert_eq!(
        (out.a_cut, out.b_cut, out.a_merged, out.b_merged),
        (0, 0, 0, 0)
    );
}

#[test]
fn a_lossy_reordering_wire_with_offload_still_delivers_everything() {
    let impaired = "loss = 0.01\nreorder = 0.01\nreorder_delay = \"200us\"\ndelay = \"100us\"\nrate = \"1Gbit\"";
    for v6 in [true, false] {
        let topology = topology(&["tso", "gro"], &["tso", "gro"], impaired);
        let out = bulk(&format!("offload-lossy-{v6}"), &topology, v6);
        assert!(out.a_cut > 0);
    }
}

#[test]
fn an_unknown_offload_is_a_topology_error() {
    let text = r#"
[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
offload = ["tso", "lro"]
"#;
    let error = Topology::from_toml_str(text).unwrap_err().to_string();
    assert!(error.contains("lro"), "{error}");
    let parsed = topology(&["gro"], &[], "");
    assert_eq!(
        parsed.nodes()[0].interfaces[0].offload,
        Offload {
            tso: false,
            gro: true
        }
    );
}

/// Per location name: (records, largest len) of the records `keep` takes.
fn tally(
    records: &[probe::Record],
    keep: impl Fn(&probe::Record) -> bool,
) -> std::collections::BTreeMap<&'static str, (u64, u32)> {
    let mut out = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| keep(r)) {
        let name = stack::probes::LOCATIONS[r.loc as usize].name;
        let entry: &mut (u64, u32) = out.entry(name).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(r.len);
    }
    out
}

/// The probes stay truthful with offload on: a super-segment passes TCP,
/// IP and the interface queue once with its whole length, and one
/// `link.transmit` span (the device stage's cutting inside it), while
/// every wire frame it is cut into enters the device queue on its own;
/// on receive, the IP input queue sees the merged packets, fewer than
/// the frames the link took.
#[test]
fn a_super_segment_passes_each_layer_once_and_the_cutting_is_the_links() {
    if !probe::ENABLED {
        return;
    }
    let (sender, all, cut) = std::thread::spawn(|| {
        probe::init_thread(1 << 21);
        // host-a receives without GRO, so the wire carries wire-sized
        // frames, which host-a's device stage cuts (between two GRO ends
        // it would carry the super-segments whole).
        let topology = topology(&["tso"], &["tso", "gro"], "");
        let mut sim = Simulator::new(&topology, None).unwrap();
        let (client, server) = connected(&mut sim, true);
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::All);
        let limit = Duration::from_secs(30);
        let data = varied(300_000, 3);
        blocking::write_all(&mut sim, "host-a", client, &data, limit).unwrap();
        host_mut(&mut sim, "host-a").tcp_shutdown(client).unwrap();
        let got = blocking::read_to_end(&mut sim, "host-b", server, limit).unwrap();
        assert!(got == data, "byte-exact");
        sim.run_for(Duration::from_millis(100));
        probe::set_mode(probe::Mode::Off);
        let records = probe::drain_thread();
        let flow = host(&sim, "host-a")
            .tcp_connection(client)
            .unwrap()
            .flow()
            .id;
        let cut = host(&sim, "host-a").interfaces()[0].counters.gso_segments;
        (
            tally(&records, |r| r.flow == flow),
            tally(&records, |_| true),
            cut,
        )
    })
    .join()
    .unwrap();
    let count = |t: &std::collections::BTreeMap<&str, (u64, u32)>, name: &str| {
        t.get(name).map_or(0, |e| e.0)
    };
    let largest = |name: &str| sender.get(name).map_or(0, |e| e.1);
    let outputs = count(&sender, "tcp.output.enter");
    let frames = count(&sender, "device.queue.enqueue");
    assert!(
        cut > 150,
        "the data went in super-segments: {cut} frames cut"
    );
    assert!(
        frames >= cut && frames > 4 * outputs,
        "each wire frame enters the device queue, a super-segment passes TCP once: \
         {frames} frames, {outputs} TCP outputs\n{sender:?}"
    );
    for name in [
        "tcp.output.enter",
        "ipv6.output.enter",
        "iface.queue.enqueue",
    ] {
        // Far beyond one MSS (1428), however far slow start let it grow.
        let len = largest(name);
        assert!(len > 10 * 1428, "{name} saw a super-segment whole: {len}");
    }
    assert_eq!(
        count(&sender, "link.transmit.enter"),
        count(&sender, "iface.queue.dequeue"),
        "one link.transmit span per queued packet, the cutting inside it"
    );
    assert_eq!(
        count(&sender, "link.transmit.enter"),
        count(&sender, "link.transmit.exit")
    );
    assert!(
        largest("device.queue.enqueue") <= 1514,
        "wire frames fit the MTU"
    );
    assert!(
        count(&all, "ip.input_queue.enqueue") * 4 < count(&all, "link.receive.enter"),
        "GRO merged before IP input: {all:?}"
    );
}

/// The TCP payload lengths of the IPv6 data segments host-a sent over a
/// window of `recv_buffer` bytes (no whole number of MSS), with `offload`
/// on host-a.
fn segment_sizes(test: &str, offload: &[&str], recv_buffer: usize) -> Vec<usize> {
    let dir = CaptureDir::new(test);
    let topology = topology(offload, &[], "");
    let mut sim = simulator(&topology, &dir);
    let config = TcpConfig {
        recv_buffer,
        ..TcpConfig::default()
    };
    let (client, server) = connected_with(&mut sim, true, config);
    let up = varied(1 << 20, 4);
    let (at_b, _) = exchange(&mut sim, (client, server), &up, &[], LIMIT);
    assert!(at_b == up, "byte-exact");
    let cut = host(&sim, "host-a").interfaces()[0].counters.gso_segments;
    assert_eq!(cut > 300, !offload.is_empty(), "{cut} frames cut");
    drop(sim);
    let bytes = std::fs::read(dir.path().join("host-a-eth0.pcapng")).unwrap();
    let source = "2001:db8:1::a".parse::<std::net::Ipv6Addr>().unwrap();
    wire::pcapng::blocks(&bytes)
        .filter_map(|block| match block {
            Ok(wire::pcapng::Block::EnhancedPacket(epb)) => Some(epb.data),
            _ => None,
        })
        .filter(|f| f.len() > 74 && f[12..14] == [0x86, 0xdd] && f[20] == 6)
        .filter(|f| f[22..38] == source.octets())
        .map(|f| usize::from(u16::from_be_bytes([f[18], f[19]])) - usize::from(f[66] >> 4) * 4)
        .filter(|&p| p > 0)
        .collect()
}

/// A window that is no whole number of MSS limits super-segments: the
/// device stage's cutting puts on the wire the segments TCP would have
/// sent one by one — as many, as many short ones (the window's edges),
/// every other one full-sized.
#[test]
fn super_segments_put_the_segments_per_packet_tcp_would_on_the_wire() {
    let plain = segment_sizes("offload-window-plain", &[], 50_000);
    let tso = segment_sizes("offload-window-tso", &["tso"], 50_000);
    let short = |sizes: &[usize]| {
        let mss = sizes.iter().copied().max().unwrap();
        (mss, sizes.iter().filter(|&&p| p < mss).count())
    };
    let ((plain_mss, plain_short), (tso_mss, tso_short)) = (short(&plain), short(&tso));
    assert_eq!(tso_mss, plain_mss, "the same MSS");
    assert!(
        tso_short <= plain_short + 2,
        "short segments: {tso_short} with TSO, {plain_short} without"
    );
    let (a, b) = (plain.len() as f64, tso.len() as f64);
    assert!(
        (a - b).abs() <= a * 0.02,
        "{b} segments with TSO, {a} without"
    );
}

/// A segment GRO merged is copied once, from the pool buffers it lies in
/// into the receive buffer: inside TCP input the `data.copy` spans add up
/// to the bytes sent (a clean wire resends nothing), none of them a
/// gathering of the merged payload first.
#[test]
fn a_merged_segment_is_copied_once_into_the_receive_buffer() {
    if !probe::ENABLED {
        return;
    }
    let (copied, copies, inputs, merged, resent, len) = std::thread::spawn(|| {
        probe::init_thread(1 << 21);
        let topology = topology(&[], &["gro"], "");
        let mut sim = Simulator::new(&topology, None).unwrap();
        let (client, server) = connected(&mut sim, true);
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::All);
        let limit = Duration::from_secs(30);
        let data = varied(300_000, 5);
        blocking::write_all(&mut sim, "host-a", client, &data, limit).unwrap();
        host_mut(&mut sim, "host-a").tcp_shutdown(client).unwrap();
        let got = blocking::read_to_end(&mut sim, "host-b", server, limit).unwrap();
        assert!(got == data, "byte-exact");
        probe::set_mode(probe::Mode::Off);
        let records = probe::drain_thread();
        let name = |r: &probe::Record| stack::probes::LOCATIONS[r.loc as usize].name;
        let (mut depth, mut copied, mut copies, mut inputs) = (0, 0u64, 0, 0);
        for r in &records {
            match name(r) {
                "tcp.input.enter" => {
                    depth += 1;
                    inputs += 1;
                }
                "tcp.input.exit" => depth -= 1,
                "data.copy.enter" if depth > 0 => {
                    copied += u64::from(r.len);
                    copies += 1;
                }
                _ => {}
            }
        }
        let a = host(&sim, "host-a");
        let resent = a
            .tcp_connection(client)
            .unwrap()
            .counters()
            .bytes_retransmitted;
        let merged = host(&sim, "host-b").gro_counters().merged;
        (copied, copies, inputs, merged, resent, data.len() as u64)
    })
    .join()
    .unwrap();
    assert!(merged > 50, "GRO merged {merged} segments");
    assert_eq!(resent, 0, "a clean wire");
    assert_eq!(copied, len, "each byte copied once in TCP input");
    assert!(copies <= inputs, "{copies} copies in {inputs} TCP inputs");
}
