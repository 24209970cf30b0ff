//! XTP reliable multicast on a hub LAN: one sender, three receivers (and
//! the router, which takes no part), over IPv6 and IPv4. A 1 MiB stream
//! arrives byte-exact at every receiver; with loss on one receiver's wire
//! it still does, by retransmissions to the group; damping cuts the
//! receivers' control packets; a receiver that leaves, or falls silent,
//! stops holding the sender up.

mod xtp_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::iface::host::{Host, XtpGroupError, XtpGroupHandle, XtpGroupStatus};
use stack::iface::route::InterfaceId;
use stack::runner::Simulator;
use stack::socket::xtp::multicast::{GroupConfig, GroupCounters, GroupState};
use stack::topology::Topology;
use xtp_support::{captures, tshark_capture_dir};

const PORT: u16 = 7100;
const GROUP6: &str = "ff15::7836";
const GROUP4: &str = "239.1.7.36";
const RECEIVERS: [&str; 3] = ["r1", "r2", "r3"];
const MIB: usize = 1024 * 1024;

/// A hub of five ports: the sender, three receivers and a router (for
/// SLAAC); `loss` on r3's wire (both ways), the wires seeded by `seed`.
fn lan(loss: f64, seed: u64) -> Topology {
    let mut text = format!("seed = {seed}\n");
    for (name, last) in [("sender", 10), ("r1", 11), ("r2", 12), ("r3", 13)] {
        text += &format!(
            "[[host]]\nname = \"{name}\"\n[[host.interface]]\nname = \"eth0\"\n\
             ipv4 = \"192.0.2.{last}/24\"\n\n"
        );
    }
    text += "[[router]]\nname = \"router\"\n[[router.interface]]\nname = \"eth0\"\n\
             ipv4 = \"192.0.2.1/24\"\nipv6 = [\"2001:db8:a::1/64\"]\n\
             [[router.interface.advertise]]\nprefix = \"2001:db8:a::/64\"\n\n\
             [[hub]]\nname = \"lan\"\nports = 5\n\n";
    for (port, name) in ["sender", "r1", "r2", "r3", "router"].iter().enumerate() {
        text += &format!(
            "[[wire]]\na = \"{name}:eth0\"\nb = \"lan:{}\"\nrate = \"100Mbit\"\ndelay = \"5us\"\n",
            port + 1
        );
        if *name == "r3" && loss > 0.0 {
            text += &format!("loss = {loss}\nseed = {}\n", seed + 1);
        }
        text += "\n";
    }
    Topology::from_toml_str(&text).unwrap()
}

fn host_mut<'a>(sim: &'a mut Simulator, name: &str) -> &'a mut Host {
    sim.host_mut(name).unwrap()
}

fn ready(topology: &Topology) -> Simulator {
    let mut sim = Simulator::new(topology, None).unwrap();
    let names = ["sender", "r1", "r2", "r3"];
    let done = sim.run_until_with(Duration::from_secs(60), |sim| {
        names
            .iter()
            .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
    });
    assert!(done, "SLAAC did not finish");
    sim
}

fn group(v6: bool) -> SocketAddr {
    let address: IpAddr = if v6 { GROUP6 } else { GROUP4 }.parse().unwrap();
    SocketAddr::new(address, PORT)
}

/// A deterministic byte pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(11) as u8)
        .collect()
}

struct Run {
    sim: Simulator,
    sender: XtpGroupHandle,
    receivers: Vec<(&'static str, XtpGroupHandle)>,
}

/// Receivers opened on r1..r3, then the sender (waiting for three joins).
fn open(loss: f64, seed: u64, v6: bool, config: GroupConfig) -> Run {
    let mut sim = ready(&lan(loss, seed));
    let mut receivers = Vec::new();
    for name in RECEIVERS {
        let h = host_mut(&mut sim, name);
        let handle = h
            .xtp_group_receiver(InterfaceId(0), group(v6), config)
            .unwrap();
        receivers.push((name, handle));
    }
    let config = GroupConfig {
        receivers: RECEIVERS.len(),
        ..config
    };
    let sender = host_mut(&mut sim, "sender")
        .xtp_group_sender(InterfaceId(0), group(v6), config)
        .unwrap();
    Run {
        sim,
        sender,
        receivers,
    }
}

fn status(sim: &Simulator, name: &str, handle: XtpGroupHandle) -> XtpGroupStatus {
    sim.host(name).unwrap().xtp_group_status(handle).unwrap()
}

/// Writes `data` to the group and reads at every receiver in `readers`
/// until each read to the end and the sender is done; what each got.
fn transfer(run: &mut Run, data: &[u8], limit: Duration) -> Vec<Vec<u8>> {
    let mut sent = 0;
    let mut shut = false;
    let mut got = vec![Vec::new(); run.receivers.len()];
    let mut buf = vec![0u8; 64 * 1024];
    let (sender, receivers) = (run.sender, run.receivers.clone());
    let done = run.sim.run_until_with(limit, |sim| {
        let h = host_mut(sim, "sender");
        while sent < data.len() {
            match h.xtp_group_send(sender, &data[sent..]) {
                Ok(n) => sent += n,
                Err(XtpGroupError::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        if sent == data.len() && !shut {
            h.xtp_group_shutdown(sender).unwrap();
            shut = true;
        }
        let mut all_eof = true;
        for (i, (name, handle)) in receivers.iter().enumerate() {
            let Some(st) = sim.host(name).unwrap().xtp_group_status(*handle) else {
                continue; // closed by the test
            };
            if st.state == GroupState::Closed {
                continue;
            }
            let h = host_mut(sim, name);
            loop {
                match h.xtp_group_recv(*handle, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => got[i].extend_from_slice(&buf[..n]),
                    Err(_) => {
                        all_eof = false;
                        break;
                    }
                }
            }
        }
        let sender_done = status(sim, "sender", sender).state == GroupState::Done;
        all_eof && sender_done
    });
    assert!(
        done,
        "the transfer did not finish ({sent} of {} written)",
        data.len()
    );
    got
}

fn totals(run: &Run) -> GroupCounters {
    let mut sum = GroupCounters::default();
    for (name, handle) in &run.receivers {
        let c = status(&run.sim, name, *handle).counters;
        sum.controls_sent += c.controls_sent;
        sum.controls_damped += c.controls_damped;
        sum.duplicates += c.duplicates;
        sum.data_received += c.data_received;
    }
    sum
}

fn one_mib_everywhere(v6: bool) {
    let data = pattern(MIB);
    let mut run = open(0.0, 7, v6, GroupConfig::default());
    let got = transfer(&mut run, &data, Duration::from_secs(20));
    for (i, bytes) in got.iter().enumerate() {
        assert!(
            bytes == &data,
            "{} got {} bytes, not the stream",
            RECEIVERS[i],
            bytes.len()
        );
    }
    let sender = status(&run.sim, "sender", run.sender);
    assert_eq!(sender.receivers, 3);
    assert_eq!(sender.group_rseq, MIB as u64);
    // No loss, so nothing was missing: no byte was sent twice.
    assert_eq!(sender.counters.resent_packets, 0, "{:?}", sender.counters);
    assert!(sender.counters.data_packets >= (MIB / 1500) as u64);
    // The router has no context for the group: not joined, it saw nothing
    // of it past its Ethernet input.
    let router = run.sim.host("router").unwrap();
    assert_eq!(router.drops().get("xtp_group_no_context"), None);
}

#[test]
fn one_mib_reaches_every_receiver_over_ipv6() {
    one_mib_everywhere(true);
}

#[test]
fn one_mib_reaches_every_receiver_over_ipv4() {
    one_mib_everywhere(false);
}

/// 1 MiB with `loss` on r3's wire; returns the sender's and the
/// receivers' counters.
fn lossy(v6: bool, damping: bool, seed: u64) -> (GroupCounters, GroupCounters) {
    let data = pattern(MIB);
    let config = GroupConfig {
        damping,
        ..GroupConfig::default()
    };
    let mut run = open(0.03, seed, v6, config);
    let got = transfer(&mut run, &data, Duration::from_secs(60));
    for (i, bytes) in got.iter().enumerate() {
        assert!(
            bytes == &data,
            "{} got {} bytes, not the stream",
            RECEIVERS[i],
            bytes.len()
        );
    }
    let sender = status(&run.sim, "sender", run.sender).counters;
    (sender, totals(&run))
}

#[test]
fn loss_on_one_receiver_is_recovered_by_resending_to_the_group() {
    for v6 in [true, false] {
        let (sender, receivers) = lossy(v6, true, 11);
        eprintln!("v6 {v6}: sender {sender:?}\nreceivers {receivers:?}");
        // 3 % of ~700 packets to r3 were lost: resent, to the whole
        // group, so the receivers that had them saw duplicates.
        assert!(sender.resent_packets > 0, "{sender:?}");
        assert!(receivers.duplicates > 0, "{receivers:?}");
        assert_eq!(sender.receivers_dropped, 0);
    }
}

#[test]
fn damping_cuts_the_receivers_control_packets() {
    // Summed over three seeds: one run's loss pattern moves with timing.
    let (mut on, mut off) = (GroupCounters::default(), GroupCounters::default());
    for seed in [21, 22, 23] {
        let (_, with) = lossy(true, true, seed);
        let (_, without) = lossy(true, false, seed);
        on.controls_sent += with.controls_sent;
        on.controls_damped += with.controls_damped;
        off.controls_sent += without.controls_sent;
        off.controls_damped += without.controls_damped;
    }
    eprintln!(
        "damping on: {} controls sent, {} damped; off: {} sent",
        on.controls_sent, on.controls_damped, off.controls_sent
    );
    assert!(on.controls_damped > 0);
    assert_eq!(off.controls_damped, 0);
    assert!(
        on.controls_sent < off.controls_sent,
        "damping on {} against off {}",
        on.controls_sent,
        off.controls_sent
    );
}

/// Runs until the sender knows all three receivers.
fn joined(run: &mut Run) {
    let sender = run.sender;
    assert!(run.sim.run_until_with(Duration::from_secs(2), |sim| {
        status(sim, "sender", sender).receivers == 3
    }));
}

/// Writes what fits and reads at r1 and r2 (not r3) for `time`.
fn pump_without_r3(run: &mut Run, data: &[u8], sent: &mut usize, time: Duration) {
    let (sender, receivers) = (run.sender, run.receivers.clone());
    let mut buf = vec![0u8; 64 * 1024];
    run.sim.run_until_with(time, |sim| {
        while *sent < data.len() {
            match host_mut(sim, "sender").xtp_group_send(sender, &data[*sent..]) {
                Ok(n) => *sent += n,
                Err(_) => break,
            }
        }
        for (name, handle) in &receivers[..2] {
            while let Ok(n) = host_mut(sim, name).xtp_group_recv(*handle, &mut buf) {
                if n == 0 {
                    break;
                }
            }
        }
        false
    });
}

#[test]
fn a_receiver_that_leaves_stops_holding_the_sender_up() {
    let data = pattern(MIB);
    let mut run = open(0.0, 31, true, GroupConfig::default());
    joined(&mut run);
    // r3's reader takes nothing: its alloc holds the whole group.
    let mut sent = 0;
    pump_without_r3(&mut run, &data, &mut sent, Duration::from_millis(500));
    let held = status(&run.sim, "sender", run.sender);
    assert!(held.group_rseq <= 256 * 1024, "{held:?}");
    assert!(sent < data.len());
    // r3 leaves (END): the rest flows to r1 and r2.
    let (_, r3) = run.receivers[2];
    host_mut(&mut run.sim, "r3").xtp_group_close(r3).unwrap();
    let mut rest = Run {
        sim: run.sim,
        sender: run.sender,
        receivers: run.receivers[..2].to_vec(),
    };
    let got = transfer(&mut rest, &data[sent..], Duration::from_secs(20));
    let sender = status(&rest.sim, "sender", rest.sender);
    assert_eq!(sender.receivers, 2);
    assert_eq!(sender.counters.receivers_left, 1);
    assert_eq!(sender.counters.receivers_dropped, 0);
    assert_eq!(sender.group_rseq, MIB as u64);
    // r1 and r2 read the start already; the rest arrived in order.
    for bytes in got {
        assert!(data.ends_with(&bytes) && !bytes.is_empty());
    }
    // r3's context is gone and its host left the group.
    assert!(rest.sim.host("r3").unwrap().xtp_group_status(r3).is_none());
    let groups = rest
        .sim
        .host("r3")
        .unwrap()
        .multicast_groups(InterfaceId(0));
    assert!(groups.unwrap().v6.is_empty());
}

#[test]
fn a_silent_receiver_drops_out_after_its_retries() {
    let data = pattern(MIB / 4);
    let mut run = open(0.0, 41, false, GroupConfig::default());
    joined(&mut run);
    // r3's host stops listening to the group: its context hears nothing
    // more and answers nothing.
    let group = group(false).ip();
    host_mut(&mut run.sim, "r3")
        .leave_multicast(InterfaceId(0), group)
        .unwrap();
    let mut rest = Run {
        sim: run.sim,
        sender: run.sender,
        receivers: run.receivers[..2].to_vec(),
    };
    let got = transfer(&mut rest, &data, Duration::from_secs(60));
    for bytes in got {
        assert!(bytes == data);
    }
    let sender = status(&rest.sim, "sender", rest.sender);
    assert_eq!(sender.counters.receivers_dropped, 1, "{sender:?}");
    assert_eq!(sender.receivers, 2);
}

/// Per probe location: (records, summed len, largest aux) of one flow.
type Tally = std::collections::BTreeMap<&'static str, (u64, u64, u64)>;

fn tally(records: &[probe::Record], flow: u32) -> Tally {
    let mut out = Tally::new();
    for r in records.iter().filter(|r| r.flow == flow) {
        let entry = out
            .entry(stack::probes::LOCATIONS[r.loc as usize].name)
            .or_default();
        entry.0 += 1;
        entry.1 += u64::from(r.len);
        entry.2 = entry.2.max(r.aux);
    }
    out
}

#[test]
fn multicast_records_at_unicast_xtps_probe_sites() {
    const BYTES: usize = 300_000;
    let (sender, receivers) = std::thread::spawn(|| {
        probe::init_thread(1 << 20);
        let mut run = open(0.03, 51, true, GroupConfig::default());
        joined(&mut run);
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::All);
        let got = transfer(&mut run, &pattern(BYTES), Duration::from_secs(30));
        assert!(got.iter().all(|g| g.len() == BYTES));
        probe::set_mode(probe::Mode::Off);
        let records = probe::drain_thread();
        let flow = |name: &str, h| run.sim.host(name).unwrap().xtp_group_flow(h).unwrap().id;
        let sender = tally(&records, flow("sender", run.sender));
        let receivers: Vec<Tally> = run
            .receivers
            .iter()
            .map(|(name, h)| tally(&records, flow(name, *h)))
            .collect();
        (sender, receivers)
    })
    .join()
    .unwrap();
    if !probe::ENABLED {
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
    let bytes = BYTES as u64;
    for name in ["socket.send_queue.enqueue", "socket.send_queue.dequeue"] {
        let (_, len, aux) = sender.get(name).copied().unwrap_or_default();
        assert_eq!((len, aux), (bytes, bytes), "{name}");
    }
    for receiver in &receivers {
        assert!(count(receiver, "xtp.output.enter") > 0, "{receiver:?}");
        assert!(count(receiver, "socket.recv.enter") > 0, "{receiver:?}");
        for name in ["socket.recv_queue.enqueue", "socket.recv_queue.dequeue"] {
            let (_, len, aux) = receiver.get(name).copied().unwrap_or_default();
            assert_eq!((len, aux), (bytes, bytes), "{name}");
        }
    }
    for t in receivers.iter().chain([&sender]) {
        for site in [
            "xtp.output",
            "xtp.control",
            "xtp.timer",
            "socket.send",
            "socket.recv",
        ] {
            let enter = count(t, &format!("{site}.enter"));
            assert_eq!(enter, count(t, &format!("{site}.exit")), "{site}");
        }
    }
}

/// tshark's fields of every XTP frame in the captures of `dir`.
fn tshark_fields(dir: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let files = captures(dir);
    assert!(!files.is_empty(), "no capture written");
    let mut rows = Vec::new();
    for file in files {
        let mut args = vec!["-r".into(), file.display().to_string()];
        for a in ["-Y", "xtp", "-T", "fields", "-E", "separator=|"] {
            args.push(a.to_string());
        }
        for f in fields {
            args.push("-e".into());
            args.push(f.to_string());
        }
        let out = std::process::Command::new("tshark")
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            rows.push(line.split('|').map(str::to_string).collect());
        }
    }
    rows
}

#[test]
fn tshark_decodes_the_group_packets_as_xtp_multicast() {
    let Some(dir) = tshark_capture_dir("xtp-group") else {
        return;
    };
    {
        let mut sim = Simulator::new(&lan(0.03, 61), Some(&dir)).unwrap();
        sim.run_for(Duration::from_millis(100));
        let mut receivers = Vec::new();
        for name in RECEIVERS {
            let h = host_mut(&mut sim, name);
            let handle = h
                .xtp_group_receiver(InterfaceId(0), group(false), GroupConfig::default())
                .unwrap();
            receivers.push((name, handle));
        }
        let config = GroupConfig {
            receivers: 3,
            ..GroupConfig::default()
        };
        let sender = host_mut(&mut sim, "sender")
            .xtp_group_sender(InterfaceId(0), group(false), config)
            .unwrap();
        let mut run = Run {
            sim,
            sender,
            receivers,
        };
        let data = pattern(200_000);
        let got = transfer(&mut run, &data, Duration::from_secs(20));
        assert!(got.iter().all(|g| g == &data));
        // Dropping the simulator flushes the captures.
    }
    let rows = tshark_fields(
        &dir,
        &[
            "frame.protocols",
            "xtp.checksum.status",
            "xtp.cmd.ptype.pformat",
            "xtp.cmd.options.multi",
            "ip.dst",
        ],
    );
    let mut types = std::collections::BTreeMap::<String, usize>::new();
    for row in &rows {
        assert_eq!(row.len(), 5, "{row:?}");
        assert!(row[0].ends_with(":ip:xtp"), "{row:?}");
        assert_eq!(row[1], "1", "checksum not Good: {row:?}");
        assert!(matches!(row[3].as_str(), "1" | "True"), "no MULTI: {row:?}");
        assert_eq!(row[4], GROUP4, "{row:?}");
        *types.entry(row[2].clone()).or_default() += 1;
    }
    // DATA, CNTL, FIRST, ECNTL (the lossy receiver's gaps), JCNTL.
    for ptype in ["0", "1", "2", "3", "7"] {
        assert!(types.contains_key(ptype), "no type {ptype}: {types:?}");
    }
    let malformed = tshark_fields(&dir, &["_ws.malformed"]);
    assert!(
        malformed.iter().all(|r| r[0].is_empty()),
        "malformed frames"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
