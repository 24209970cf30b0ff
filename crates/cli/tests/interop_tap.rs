//! Interoperability with the Linux kernel over a TAP device: each test
//! makes a network namespace of its own, runs `stackscope host` there on
//! the TAP `sstap0` (2001:db8:77::2/64 and 192.0.2.2/24, documentation
//! prefixes), configures the kernel's side of the TAP (2001:db8:77::1/64
//! and 192.0.2.1/24) and talks to the reference host with the kernel's own
//! tools and sockets: ping (Neighbor Discovery and ARP on the way),
//! 20 000-byte pings (the kernel fragments its requests, the reference
//! host reassembles them and fragments its replies), and the host's UDP
//! and TCP services. Then SIGINT or SIGTERM must stop the host with exit
//! status 0 and its counters printed.
//!
//! Each test captures on the kernel's side of the TAP with `dumpcap`
//! (`support::capture`) from before the host's addresses are ready until
//! before it stops, and tshark must find no malformed packet and no bad
//! checksum there, and the test's traffic: the echoes, the fragments, the
//! connections. (The TAP offers no offloads, so the kernel's checksums
//! are complete there.) The 20 000-byte pings check the host's own capture
//! (`--pcap`) too.
//!
//! Needs root (namespaces, TAP devices); elsewhere each test prints
//! "skipped: ..." and passes. As root, `ip` (iproute2), `ping`
//! (iputils-ping), `dumpcap` (wireshark-common) and `tshark` must be
//! installed. Everything is removed afterwards, also when a test fails
//! (Drop guards kill the host and dumpcap, delete the namespace and the
//! captures; `STACKSCOPE_INTEROP_KEEP=1` keeps the captures).

mod support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::capture::{check_clean_and_count, Capture, TCP_CHECKSUM_GOOD};
use support::{
    connect, path_str, require_tool, skip_reason, tcp_echo, HostProcess, Netns, Stopped, TempDir,
};

const TAP: &str = "sstap0";
const HOST6: &str = "2001:db8:77::2";
const HOST4: &str = "192.0.2.2";

/// A reference host on a TAP in a namespace of its own, the kernel's side
/// configured and captured, and every address of the host assigned.
/// Dropping it kills the host and dumpcap, then deletes the namespace and
/// the directory (fields drop in order).
struct Setup {
    host: HostProcess,
    capture: Capture,
    ns: Netns,
    dir: TempDir,
    started: Instant,
}

/// What a stopped setup leaves to check: the host's output, the
/// kernel-side capture and the host's own (with `host_pcap`), in `_dir`
/// (removed when this is dropped).
struct Finished {
    stopped: Stopped,
    capture: PathBuf,
    host_capture: PathBuf,
    _dir: TempDir,
}

/// Sets everything up, or says why the test is skipped (`None`). With
/// `host_pcap` the host captures too (`--pcap`).
fn setup(host_pcap: bool) -> Option<Setup> {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return None;
    }
    require_tool("ip", "iproute2");
    require_tool("ping", "iputils-ping");
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            return None;
        }
    };
    let started = Instant::now();
    let dir = TempDir::new("interop-tap");
    let host_pcap_dir = dir.join("host");
    let mut args = vec![
        "--netns",
        ns.name(),
        "--tap",
        TAP,
        "--addr",
        "2001:db8:77::2/64",
        "--addr",
        "192.0.2.2/24",
    ];
    if host_pcap {
        args.extend(["--pcap", path_str(&host_pcap_dir)]);
    }
    let mut host = HostProcess::start(&args);
    support::configure_kernel_side(&ns, &mut host, TAP);
    // Started while the host's DAD runs (dumpcap needs the TAP up), so it
    // costs the test no time.
    let capture = Capture::start(&ns, TAP, dir.join("kernel.pcapng"));
    // DAD of the host's addresses (one probe, 1 s, after a random delay
    // of up to 1 s).
    host.wait_for_line(|l| l == "ready", Duration::from_secs(5))
        .unwrap_or_else(|why| panic!("the host's addresses: {why}"));
    host.wait_for_line(
        |l| l.starts_with(&format!("address {TAP} {HOST6}/64 manual PREFERRED")),
        Duration::from_secs(1),
    )
    .unwrap_or_else(|why| panic!("the manual IPv6 address: {why}"));
    Some(Setup {
        host,
        capture,
        ns,
        dir,
        started,
    })
}

impl Setup {
    /// `ping` from the kernel's side: every request answered.
    fn ping(&self, family: &str, size: u32, destination: &str) {
        let size = size.to_string();
        let args = [
            family,
            "-c",
            "3",
            "-W",
            "2",
            "-i",
            "0.2",
            "-s",
            &size,
            destination,
        ];
        let output = self.ns.exec("ping", &args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("3 received"),
            "ping {} failed ({}):\n{stdout}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Stops the capture, then the host with `signal`: it must exit 0 and
    /// print counters.
    fn stop(self, signal: libc::c_int) -> Finished {
        let Setup {
            host,
            capture,
            ns,
            dir,
            started,
        } = self;
        // The capture first: the TAP goes with the host.
        let capture = capture.stop(&ns);
        let stopped = host.stop(signal, Duration::from_secs(5));
        drop(ns);
        stopped.assert_clean_exit();
        assert!(stopped.stdout.contains("links:"), "{}", stopped.stdout);
        eprintln!("test took {:.1} s", started.elapsed().as_secs_f64());
        Finished {
            stopped,
            capture,
            host_capture: dir.join("host").join(format!("{TAP}.pcapng")),
            _dir: dir,
        }
    }
}

/// The kernel-side capture is clean and holds at least so many packets
/// matching each filter.
fn check_kernel_capture(done: &Finished, expected: &[(&str, u64)]) {
    let filters: Vec<&str> = expected.iter().map(|(f, _)| *f).collect();
    let counts = check_clean_and_count(&done.capture, &filters);
    for ((filter, at_least), count) in expected.iter().zip(counts) {
        assert!(
            count >= *at_least,
            "{count} packets match `{filter}` in the kernel-side capture, fewer than {at_least}"
        );
    }
}

#[test]
fn the_kernel_pings_the_reference_host_over_ipv6_and_ipv4() {
    let Some(setup) = setup(false) else { return };
    setup.ping("-6", 56, HOST6);
    setup.ping("-4", 56, HOST4);
    let done = setup.stop(libc::SIGINT);
    let stopped = &done.stopped;
    assert!(
        stopped.stdout.contains("stopped by SIGINT"),
        "{}",
        stopped.stdout
    );
    assert!(
        stopped.counter("echo_replies_sent") >= 6,
        "{}",
        stopped.stdout
    );
    assert_eq!(stopped.counter("ipv6_fragments_sent"), 0);
    stopped.assert_link_healthy(TAP);
    let requests6 = format!("icmpv6.type == 128 && ipv6.dst == {HOST6}");
    let replies6 = format!("icmpv6.type == 129 && ipv6.src == {HOST6}");
    let requests4 = format!("icmp.type == 8 && ip.dst == {HOST4}");
    let replies4 = format!("icmp.type == 0 && ip.src == {HOST4}");
    check_kernel_capture(
        &done,
        &[
            (&requests6, 3),
            (&replies6, 3),
            (&requests4, 3),
            (&replies4, 3),
        ],
    );
}

#[test]
fn twenty_thousand_byte_pings_are_fragmented_and_reassembled_both_ways() {
    let Some(setup) = setup(true) else { return };
    setup.ping("-6", 20_000, HOST6);
    setup.ping("-4", 20_000, HOST4);
    let done = setup.stop(libc::SIGTERM);
    let stopped = &done.stopped;
    assert!(
        stopped.stdout.contains("stopped by SIGTERM"),
        "{}",
        stopped.stdout
    );
    assert!(
        stopped.counter("echo_replies_sent") >= 6,
        "{}",
        stopped.stdout
    );
    // 20 008 bytes of ICMP in 1500-byte packets: 14 fragments per reply.
    assert!(
        stopped.counter("ipv6_fragments_sent") >= 3 * 14,
        "{}",
        stopped.stdout
    );
    assert!(
        stopped.counter("ipv4_fragments_sent") >= 3 * 14,
        "{}",
        stopped.stdout
    );
    assert!(
        !stopped.stdout.contains("reassembly"),
        "a reassembly drop:\n{}",
        stopped.stdout
    );
    stopped.assert_link_healthy(TAP);
    check_host_capture(&done.host_capture);
    // The fragments both ways, and the replies tshark reassembled from
    // the host's fragments with their ICMP checksums (over all 20 008
    // bytes) verified good.
    let from_host6 = format!("ipv6.src == {HOST6} && ipv6.fraghdr");
    let to_host6 = format!("ipv6.dst == {HOST6} && ipv6.fraghdr");
    let fragment4 = "(ip.flags.mf == 1 || ip.frag_offset > 0)";
    let from_host4 = format!("ip.src == {HOST4} && {fragment4}");
    let to_host4 = format!("ip.dst == {HOST4} && {fragment4}");
    let replies6 =
        format!("icmpv6.type == 129 && ipv6.src == {HOST6} && icmpv6.checksum.status == 1");
    let replies4 = format!("icmp.type == 0 && ip.src == {HOST4} && icmp.checksum.status == 1");
    check_kernel_capture(
        &done,
        &[
            (&from_host6, 3 * 14),
            (&to_host6, 3 * 14),
            (&from_host4, 3 * 14),
            (&to_host4, 3 * 14),
            (&replies6, 3),
            (&replies4, 3),
        ],
    );
}

/// The host's own capture decodes with no malformed packet and no bad
/// checksum, and holds the fragments of both families both ways.
fn check_host_capture(path: &Path) {
    let Ok(meta) = std::fs::metadata(path) else {
        panic!("no capture at {}", path.display());
    };
    assert!(meta.len() > 0, "empty capture");
    let fragments = "ipv6.fraghdr || ip.flags.mf == 1 || ip.frag_offset > 0";
    let counts = check_clean_and_count(path, &[fragments]);
    assert!(
        counts[0] >= 4 * 3 * 14,
        "{} fragments in the host's capture, fewer than 12 pings of 20 000 bytes make",
        counts[0]
    );
}

/// Bytes of a repeatable pattern, different per connection.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(u32::from(seed)) as u8)
        .collect()
}

/// One UDP echo round trip from the kernel; retried once (the first
/// datagram may wait on neighbour resolution at either end).
fn udp_echo(to: SocketAddr, payload: &[u8]) {
    let any: SocketAddr = if to.is_ipv6() {
        "[::]:0".parse().unwrap()
    } else {
        "0.0.0.0:0".parse().unwrap()
    };
    let socket = UdpSocket::bind(any).expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut buf = vec![0u8; 65_536];
    for attempt in 0..2 {
        socket.send_to(payload, to).expect("send");
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                assert_eq!(from, to, "echo from the service's address");
                assert_eq!(&buf[..len], payload, "{} bytes echoed", payload.len());
                return;
            }
            Err(e) if attempt == 0 => eprintln!("UDP echo {to}: {e}; once more"),
            Err(e) => panic!("no UDP echo from {to} for {} bytes: {e}", payload.len()),
        }
    }
}

/// Sends `len` bytes and closes; the service must close in turn.
fn tcp_send_all(to: SocketAddr, len: usize) {
    let mut stream = connect(to);
    stream.write_all(&pattern(9, len)).expect("write");
    stream.shutdown(Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the service closes");
    assert!(rest.is_empty(), "{to} sent {} bytes back", rest.len());
}

#[test]
fn the_kernel_uses_the_reference_hosts_udp_and_tcp_services() {
    let Some(setup) = setup(false) else { return };
    let v6 = |port: u16| SocketAddr::new(HOST6.parse().unwrap(), port);
    let v4 = |port: u16| SocketAddr::new(HOST4.parse().unwrap(), port);
    setup.ns.within(move || {
        // UDP echo, including datagrams the kernel fragments.
        for to in [v6(7), v4(7)] {
            udp_echo(to, b"stackscope interop");
            udp_echo(to, &pattern(1, 3000));
        }
        // UDP discard and sink: fire and forget.
        let socket = UdpSocket::bind("[::]:0").expect("bind");
        for _ in 0..5 {
            socket.send_to(&[0; 100], v6(9)).expect("send");
        }
        for _ in 0..10 {
            socket.send_to(&[1; 1000], v6(5001)).expect("send");
        }
        // TCP echo, three connections at once, both families.
        let echoes: Vec<_> = [(v6(7), 1u8), (v6(7), 2), (v4(7), 3)]
            .into_iter()
            .map(|(to, seed)| std::thread::spawn(move || tcp_echo(to, pattern(seed, 100_000))))
            .collect();
        for echo in echoes {
            echo.join().expect("an echo connection failed");
        }
        // TCP discard and the ttcp sink.
        tcp_send_all(v4(9), 256 * 1024);
        tcp_send_all(v6(5001), 1024 * 1024);
    });
    // The UDP datagrams sent last may still be on their way.
    std::thread::sleep(Duration::from_millis(100));
    let done = setup.stop(libc::SIGINT);
    let stopped = &done.stopped;
    let echo = "tcp echo (7)";
    assert_eq!(
        stopped.counter_on(echo, "connections"),
        3,
        "{}",
        stopped.stdout
    );
    assert_eq!(stopped.counter_on(echo, "bytes_in"), 300_000);
    assert_eq!(stopped.counter_on(echo, "bytes_out"), 300_000);
    assert_eq!(stopped.counter_on(echo, "connection_errors"), 0);
    assert_eq!(
        stopped.counter_on("tcp discard (9)", "bytes_in"),
        256 * 1024
    );
    assert_eq!(
        stopped.counter_on("tcp ttcp sink (5001)", "bytes_in"),
        1024 * 1024
    );
    assert!(stopped.counter_on("udp echo (7)", "datagrams_out") >= 4);
    assert_eq!(stopped.counter_on("udp discard (9)", "datagrams_in"), 5);
    assert_eq!(
        stopped.counter_on("udp ttcp sink (5001)", "datagrams_in"),
        10
    );
    assert_eq!(
        stopped.counter_on("udp ttcp sink (5001)", "bytes_in"),
        10_000
    );
    stopped.assert_link_healthy(TAP);
    check_services_capture(&done);
}

/// The kernel-side capture of the services test: clean, every TCP
/// checksum verified good (the capture holds whole packets), each
/// connection's SYN, and the UDP echoes with their checksums verified
/// (after tshark's reassembly of the fragmented ones).
fn check_services_capture(done: &Finished) {
    let syn = "tcp.flags.syn == 1 && tcp.flags.ack == 0";
    let syn_to = |port: u16| format!("{syn} && tcp.dstport == {port}");
    let (echo, discard, sink) = (syn_to(7), syn_to(9), syn_to(5001));
    let udp_echoes = "udp.srcport == 7 && udp.checksum.status == 1";
    let filters = [
        "tcp",
        TCP_CHECKSUM_GOOD,
        &echo,
        &discard,
        &sink,
        udp_echoes,
        "udp.dstport == 9",
        "udp.dstport == 5001",
    ];
    let counts = check_clean_and_count(&done.capture, &filters);
    let [tcp, good, echo, discard, sink, udp_echoes, udp_discard, udp_sink] = counts[..] else {
        unreachable!()
    };
    assert!(
        good == tcp && tcp > 100,
        "{good} of {tcp} TCP checksums verified good"
    );
    // At least: a SYN may be sent again.
    assert!(
        echo >= 3 && discard >= 1 && sink >= 1,
        "SYNs: {echo} to the echo, {discard} to discard, {sink} to the sink"
    );
    assert!(udp_echoes >= 4, "{udp_echoes} UDP echoes verified");
    assert_eq!((udp_discard, udp_sink), (5, 10), "UDP to discard and sink");
}
