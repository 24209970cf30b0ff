//! Cross-stack transfers with stackscope's own ttcp: the kernel's stack at
//! one end, the reference stack at the other, over a veth pair between
//! two namespaces the test makes. The reference end is `stackscope ttcp
//! --stack ref --link packet --iface ssr0` (AF_PACKET on its veth end);
//! the kernel's end is plain `stackscope ttcp`. Each transfer is checked
//! byte for byte (TCP) or datagram by datagram with loss counted (UDP),
//! in both directions and both families; the throughput each side saw is
//! printed (`cargo test -- --nocapture` shows it). Then the kernel's
//! `stackscope ttcp -t` sends into `stackscope host`'s ttcp sink on a TAP.
//!
//! Those tests capture the headers (128 bytes) of every packet on the
//! kernel's end, `ssk0` or the TAP, with `dumpcap` (`support::capture`),
//! and tshark must find no malformed packet and no bad checksum there,
//! and the transfers' connections, segments or fragments. A frame the
//! kernel sends is captured before the driver gets it, so on a veth, which
//! offers checksum offload, it would carry a partial checksum: `ssk0` has
//! its tx offload turned off (`ethtool -K ssk0 tx off`), and the kernel
//! completes every checksum (a TAP offers no offloads). The segments cut
//! by the snaplen have unverifiable checksums; the small ones (handshakes,
//! ACKs, ND, ARP) are whole and verified. The `--pair` and sweep test is
//! not captured: the binary makes its namespaces and links itself.
//!
//! Needs root; elsewhere each test prints "skipped: ..." and passes. As
//! root, `ip` and `ss` (iproute2), `ethtool`, `dumpcap` (wireshark-common)
//! and `tshark` must be installed. Everything is removed afterwards, also
//! when a test fails (`STACKSCOPE_INTEROP_KEEP=1` keeps the captures).

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::capture::{check_clean_and_count, Capture, Limits, TCP_CHECKSUM_GOOD};
use support::{require_tool, skip_reason, HostProcess, Netns, TempDir};

const KERNEL6: &str = "2001:db8:79::1";
const REF6: &str = "2001:db8:79::2";
const KERNEL4: &str = "198.51.100.1";
const REF4: &str = "198.51.100.2";

/// A veth pair: `ssk0` in `kernel` (addressed, checksum offload off),
/// `ssr0` in `reference` (up, no addresses: the reference stack takes it
/// over); and a directory for the captures.
struct VethPair {
    kernel: Netns,
    reference: Netns,
    dir: TempDir,
}

/// The headers of each packet: the transfers move 8 MiB each.
const HEADERS: Limits = Limits {
    snaplen: Some(128),
    packets: None,
};

impl VethPair {
    /// Captures the kernel's end, `ssk0`.
    fn capture_kernel_end(&self) -> Capture {
        let path = self.dir.join("ssk0.pcapng");
        Capture::start_with(&self.kernel, "ssk0", path, HEADERS)
    }
}

fn setup() -> Option<VethPair> {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return None;
    }
    require_tool("ip", "iproute2");
    require_tool("ss", "iproute2");
    require_tool("ethtool", "ethtool");
    let (kernel, reference) = match (Netns::create(), Netns::create()) {
        (Ok(k), Ok(r)) => (k, r),
        (Err(why), _) | (_, Err(why)) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            return None;
        }
    };
    support::run_ok(
        "ip",
        &[
            "link",
            "add",
            "ssk0",
            "netns",
            kernel.name(),
            "type",
            "veth",
            "peer",
            "name",
            "ssr0",
            "netns",
            reference.name(),
        ],
    );
    kernel.ip(&[
        "addr",
        "add",
        &format!("{KERNEL6}/64"),
        "dev",
        "ssk0",
        "nodad",
    ]);
    kernel.ip(&["addr", "add", &format!("{KERNEL4}/24"), "dev", "ssk0"]);
    kernel.ip(&["link", "set", "ssk0", "up"]);
    reference.ip(&["link", "set", "ssr0", "up"]);
    // The kernel completes its checksums before the capture sees them (the
    // reference end receives fine either way).
    let ethtool = kernel.exec("ethtool", &["-K", "ssk0", "tx", "off"]);
    assert!(
        ethtool.status.success(),
        "ethtool -K ssk0 tx off: {}",
        String::from_utf8_lossy(&ethtool.stderr)
    );
    let dir = TempDir::new("interop-ttcp");
    Some(VethPair {
        kernel,
        reference,
        dir,
    })
}

/// `stackscope ttcp ARGS --json` in `ns`, running.
fn ttcp(ns: &Netns, args: &[&str]) -> Child {
    ns.command(env!("CARGO_BIN_EXE_stackscope"), &["ttcp"])
        .args(args)
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stackscope ttcp")
}

/// The reference end's arguments: AF_PACKET on ssr0 with both addresses.
fn reference_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--stack",
        "ref",
        "--link",
        "packet",
        "--iface",
        "ssr0",
        "--addr",
        "2001:db8:79::2/64",
        "--addr",
        "198.51.100.2/24",
        "--dad-transmits",
        "0",
    ];
    args.extend_from_slice(extra);
    args
}

/// Waits for a reference receiver's `ttcp-r: ready` line on stderr and
/// hands back the rest of stderr as it comes (for the failure message).
fn wait_ready(child: &mut Child) -> std::thread::JoinHandle<String> {
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut seen = String::new();
        let mut lines = BufReader::new(stderr);
        let mut line = String::new();
        while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.starts_with("ttcp-r: ready") {
                let _ = tx.send(());
            }
            seen.push_str(&line);
            line.clear();
        }
        seen
    });
    if rx.recv_timeout(Duration::from_secs(20)).is_err() {
        let _ = child.kill();
        let seen = reader.join().unwrap_or_default();
        panic!("the reference receiver never said it was ready; stderr:\n{seen}");
    }
    reader
}

/// Waits until a kernel socket listens on `port` in `ns` (`ss`).
fn wait_listening(ns: &Netns, udp: bool, port: u16) {
    let kind = if udp { "-Hlun" } else { "-Hltn" };
    let filter = format!("sport = :{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let out = ns.exec("ss", &[kind, &filter]);
        if !String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on port {port} in {}", ns.name());
}

/// The child's JSON report (it must have succeeded).
fn report(child: Child, stderr: Option<std::thread::JoinHandle<String>>, who: &str) -> Value {
    let output = child.wait_with_output().expect("wait for ttcp");
    let stderr = match stderr {
        Some(reader) => reader.join().unwrap_or_default(),
        None => String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        output.status.success(),
        "{who} failed ({}):\n{}\n{stderr}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{who}: not a JSON report ({e}):\n{stderr}"))
}

fn mbits(side: &Value) -> f64 {
    side["bits_per_second"].as_f64().expect("bits_per_second") / 1e6
}

/// One transfer: the receiver first, ready, then the sender; returns the
/// sender's and the receiver's report.
fn transfer(pair: &VethPair, kernel_sends: bool, protocol: &[&str], dest: &str) -> (Value, Value) {
    let mut common = vec!["-l", "8192", "-n", "1024"];
    common.extend_from_slice(protocol);
    let mut receive = common.clone();
    receive.push("-r");
    if dest.contains('.') {
        receive.push("-4");
    }
    let mut transmit = common;
    transmit.extend_from_slice(&["-t", dest]);
    let udp = protocol.contains(&"-u");
    if kernel_sends {
        let mut receiver = ttcp(&pair.reference, &reference_args(&receive));
        let stderr = wait_ready(&mut receiver);
        let sender = ttcp(&pair.kernel, &transmit);
        let sent = report(sender, None, "kernel ttcp -t");
        (sent, report(receiver, Some(stderr), "reference ttcp -r"))
    } else {
        let receiver = ttcp(&pair.kernel, &receive);
        wait_listening(&pair.kernel, udp, 5001);
        let sender = ttcp(&pair.reference, &reference_args(&transmit));
        let sent = report(sender, None, "reference ttcp -t");
        (sent, report(receiver, None, "kernel ttcp -r"))
    }
}

const TOTAL: u64 = 8192 * 1024;

#[test]
fn kernel_and_reference_ttcp_exchange_tcp_both_ways_in_both_families() {
    let Some(pair) = setup() else { return };
    let capture = pair.capture_kernel_end();
    for (dest_ref, dest_kernel) in [(REF6, KERNEL6), (REF4, KERNEL4)] {
        for kernel_sends in [true, false] {
            let dest = if kernel_sends { dest_ref } else { dest_kernel };
            let (sent, received) = transfer(&pair, kernel_sends, &[], dest);
            let sent = &sent["end"]["sum_sent"];
            let received = &received["end"]["sum_received"];
            assert_eq!(sent["bytes"].as_u64(), Some(TOTAL), "{sent}");
            assert_eq!(received["bytes"].as_u64(), Some(TOTAL), "{received}");
            // The stream checks are flattened into the sum (iperf3's shape).
            for field in ["corrupted_bytes", "missing_bytes", "duplicated_bytes"] {
                assert_eq!(received[field].as_u64(), Some(0), "{field}: {received}");
            }
            println!(
                "TCP {} -> {} to {dest}: sent {:.0} Mbit/s, received {:.0} Mbit/s, byte-exact",
                if kernel_sends { "kernel" } else { "reference" },
                if kernel_sends { "reference" } else { "kernel" },
                mbits(sent),
                mbits(received)
            );
        }
    }
    check_tcp_capture(&capture.stop(&pair.kernel));
}

/// The capture of the four TCP transfers: clean, a connection each, each
/// one's data segments, and the whole segments' checksums verified good.
fn check_tcp_capture(path: &Path) {
    let data_from = |ip: &str, addr: &str| format!("{ip}.src == {addr} && tcp.len > 0");
    let (k6, r6) = (data_from("ipv6", KERNEL6), data_from("ipv6", REF6));
    let (k4, r4) = (data_from("ip", KERNEL4), data_from("ip", REF4));
    let syns = "tcp.flags.syn == 1 && tcp.flags.ack == 0";
    let counts = check_clean_and_count(path, &[syns, &k6, &r6, &k4, &r4, TCP_CHECKSUM_GOOD]);
    let [syns, k6, r6, k4, r4, verified] = counts[..] else {
        unreachable!()
    };
    assert!(syns >= 4, "{syns} SYNs for four transfers");
    // 8 MiB each way in segments of at most 1460 bytes.
    let segments = TOTAL / 1460;
    for (from, count) in [(KERNEL6, k6), (REF6, r6), (KERNEL4, k4), (REF4, r4)] {
        assert!(count >= segments, "{count} data segments from {from}");
    }
    // The receivers' ACKs alone are thousands.
    assert!(verified >= 1000, "{verified} TCP checksums verified good");
}

#[test]
fn kernel_and_reference_ttcp_exchange_udp_both_ways_with_loss_counted() {
    let Some(pair) = setup() else { return };
    let capture = pair.capture_kernel_end();
    for (dest_ref, dest_kernel) in [(REF6, KERNEL6), (REF4, KERNEL4)] {
        for kernel_sends in [true, false] {
            let dest = if kernel_sends { dest_ref } else { dest_kernel };
            // 1024 datagrams of 8192 bytes (six fragments each) at a pace
            // both ends keep up with, into 4 MiB socket buffers, so that
            // a receiver descheduled for a while on a loaded machine (the
            // tests of this file run at once) loses nothing: the kernel's
            // default of 208 KiB held 25 datagrams, and one run under load
            // lost 240 of 1024.
            let (sent, received) = transfer(
                &pair,
                kernel_sends,
                &["-u", "--rate", "20M", "-b", "4M"],
                dest,
            );
            let sent = &sent["end"]["sum_sent"];
            let received = &received["end"]["sum_received"];
            // The datagram checks are flattened into the sum.
            let datagrams = received;
            let (got, lost) = (
                datagrams["packets"].as_u64().expect("packets"),
                datagrams["lost_packets"].as_u64().expect("lost_packets"),
            );
            assert_eq!(sent["packets"].as_u64(), Some(1024), "{sent}");
            assert_eq!(
                got + lost,
                1024,
                "every datagram is received or counted lost: {datagrams}"
            );
            // Loss is counted, not forbidden (a datagram is not
            // retransmitted), but at this pace it is rare.
            assert!(lost <= 51, "more than 5 % lost at 20 Mbit/s: {datagrams}");
            for field in ["duplicated", "corrupted"] {
                assert_eq!(datagrams[field].as_u64(), Some(0), "{field}: {datagrams}");
            }
            println!(
                "UDP {} -> {} to {dest}: {got} received, {lost} lost, {:.0} Mbit/s received",
                if kernel_sends { "kernel" } else { "reference" },
                if kernel_sends { "reference" } else { "kernel" },
                mbits(received)
            );
        }
    }
    check_udp_capture(&capture.stop(&pair.kernel));
}

/// The capture of the four UDP transfers: clean, and the fragments of at
/// least 1000 datagrams from each end in each family (8192 bytes of data
/// take six fragments).
fn check_udp_capture(path: &Path) {
    let fragments_from = |addr: &str| {
        if addr.contains(':') {
            format!("ipv6.src == {addr} && ipv6.fraghdr")
        } else {
            format!("ip.src == {addr} && (ip.flags.mf == 1 || ip.frag_offset > 0)")
        }
    };
    let ends = [KERNEL6, REF6, KERNEL4, REF4];
    let filters: Vec<String> = ends.iter().map(|end| fragments_from(end)).collect();
    let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
    let counts = check_clean_and_count(path, &filters);
    for (end, count) in ends.iter().zip(counts) {
        assert!(count >= 6 * 1000, "{count} fragments from {end}");
    }
}

#[test]
fn the_kernels_ttcp_fills_the_reference_hosts_sink_over_a_tap() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let ns = Netns::create().expect("a namespace");
    let dir = TempDir::new("interop-ttcp-tap");
    let mut host = HostProcess::start(&[
        "--netns",
        ns.name(),
        "--tap",
        "sstap0",
        "--addr",
        "2001:db8:77::2/64",
        "--dad-transmits",
        "0",
    ]);
    ns.wait_for_link("sstap0", Duration::from_secs(10))
        .expect("the TAP appears");
    ns.ip(&["addr", "add", "2001:db8:77::1/64", "dev", "sstap0", "nodad"]);
    ns.ip(&["link", "set", "sstap0", "up"]);
    let capture = Capture::start_with(&ns, "sstap0", dir.join("sstap0.pcapng"), HEADERS);
    host.wait_for_line(|l| l == "ready", Duration::from_secs(10))
        .expect("the host is ready");
    let sender = ttcp(&ns, &["-t", "2001:db8:77::2", "-l", "8192", "-n", "1024"]);
    let sent = report(sender, None, "kernel ttcp -t");
    let sent = &sent["end"]["sum_sent"];
    assert_eq!(sent["bytes"].as_u64(), Some(TOTAL), "{sent}");
    println!(
        "TCP kernel -> stackscope host sink over a TAP: {:.0} Mbit/s",
        mbits(sent)
    );
    // The capture first: the TAP goes with the host.
    let capture = capture.stop(&ns);
    let stopped = host.stop(libc::SIGTERM, Duration::from_secs(10));
    assert!(stopped.status.success(), "{}", stopped.stderr);
    assert_eq!(stopped.counter_on("tcp ttcp sink", "bytes_in"), TOTAL);
    assert_eq!(stopped.counter_on("tcp ttcp sink", "connections"), 1);
    check_sink_capture(&capture);
}

/// The capture of the transfer into the host's sink: clean, one
/// connection, its data segments, and the host's ACKs (whole) with their
/// checksums verified good.
fn check_sink_capture(path: &Path) {
    let syn = "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == 5001";
    let data = "ipv6.dst == 2001:db8:77::2 && tcp.len > 0";
    let acks = "ipv6.src == 2001:db8:77::2 && tcp.len == 0 && tcp.checksum.status == 1";
    let counts = check_clean_and_count(path, &[syn, data, acks]);
    let [syns, segments, acks] = counts[..] else {
        unreachable!()
    };
    assert!(syns >= 1, "no SYN to the sink");
    assert!(
        segments >= TOTAL / 1460,
        "{segments} data segments to the host"
    );
    assert!(acks >= 1000, "{acks} ACKs from the host verified good");
}

/// `stackscope ARGS` (no namespace: the tool makes its own), which must
/// succeed; its stdout.
fn stackscope(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_stackscope"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run stackscope");
    assert!(
        output.status.success(),
        "stackscope {} failed ({}):\n{}\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Not captured: `ttcp --pair` and `sweep --netns` make their namespaces
/// and links inside the binary, gone when it returns.
#[test]
fn ttcp_pair_and_sweep_put_the_reference_stack_against_the_kernel_on_a_veth_pair() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    for link in ["packet", "tap"] {
        for end in ["receiver", "sender"] {
            let text = stackscope(&[
                "ttcp",
                "--pair",
                "--stack",
                "ref",
                "--link",
                link,
                "--ref-end",
                end,
                "-n",
                "512",
                "--json",
            ]);
            let report: Value = serde_json::from_str(&text).expect("a JSON report");
            let received = &report["end"]["sum_received"];
            assert_eq!(received["bytes"].as_u64(), Some(8192 * 512), "{received}");
            assert_eq!(received["missing_bytes"].as_u64(), Some(0), "{received}");
            let path = report["start"]["target"]["path"].as_str().unwrap_or("");
            let expected = if end == "receiver" {
                "kernel -> reference stack"
            } else {
                "reference stack -> kernel"
            };
            assert!(path.contains(expected), "path {path:?} for --ref-end {end}");
            let over = if link == "tap" { "TAP" } else { "veth" };
            assert!(path.contains(over), "path {path:?} for --link {link}");
            println!(
                "ttcp --pair --link {link} --ref-end {end}: {:.0} Mbit/s",
                mbits(received)
            );
        }
    }
    // The kernel against itself and against the reference stack, each
    // over its own veth pair of the same MTU, in one sweep.
    let dir = std::env::temp_dir().join(format!("ss-sweep-link-{}", std::process::id()));
    let out = dir.to_str().expect("UTF-8 temp dir");
    stackscope(&[
        "sweep",
        "--stack",
        "kernel,ref",
        "--netns",
        "--link",
        "packet",
        "--sizes",
        "8K",
        "--total",
        "4M",
        "--reps",
        "2",
        "--max-reps",
        "2",
        "--out",
        out,
    ]);
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json"))
            .expect("sweep.json parses");
    let _ = std::fs::remove_dir_all(&dir);
    let points = sweep["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{sweep}");
    let stacks: Vec<&str> = points.iter().filter_map(|p| p["stack"].as_str()).collect();
    assert_eq!(stacks, ["kernel", "ref"], "{sweep}");
    for point in points {
        assert_eq!(point["clean"].as_bool(), Some(true), "{point}");
        assert!(
            point["mean_bps"].as_f64().is_some_and(|b| b > 0.0),
            "{point}"
        );
        assert_eq!(point["mtu_bytes"].as_u64(), Some(1500), "{point}");
        assert!(
            point["target"].to_string().contains("veth"),
            "not over a veth: {point}"
        );
    }
}

/// Raw frames across a veth pair with every length flag left at its
/// default: a raw frame cannot be fragmented, so the default is one full
/// Ethernet payload (ttcp's 8192 was refused).
#[test]
fn ttcp_pair_raw_works_with_its_defaults() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let text = stackscope(&["ttcp", "--pair", "--raw", "--netns", "-n", "2000", "--json"]);
    let report: Value = serde_json::from_str(&text).expect("a JSON report");
    assert_eq!(
        report["start"]["test_start"]["blksize"].as_u64(),
        Some(1500)
    );
    let received = &report["end"]["sum_received"];
    assert!(
        received["packets"].as_u64().is_some_and(|n| n > 0),
        "{received}"
    );
    assert_eq!(received["corrupted"].as_u64(), Some(0), "{received}");
}
