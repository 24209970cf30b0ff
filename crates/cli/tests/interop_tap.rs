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
//! Needs root (namespaces, TAP devices); elsewhere each test prints
//! "skipped: ..." and passes. As root, `ip` (iproute2) and `ping`
//! (iputils-ping) must be installed. Everything is removed afterwards,
//! also when a test fails (Drop guards kill the host and delete the
//! namespace).

mod support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use support::{require_tool, skip_reason, HostProcess, Netns, Stopped};

const TAP: &str = "sstap0";
const HOST6: &str = "2001:db8:77::2";
const HOST4: &str = "192.0.2.2";

/// A reference host on a TAP in a namespace of its own, the kernel's side
/// configured and every address of the host assigned. Dropping it kills
/// the host, then deletes the namespace (fields drop in order).
struct Setup {
    host: HostProcess,
    ns: Netns,
    started: Instant,
}

/// Sets everything up, or says why the test is skipped (`None`).
fn setup(extra_args: &[&str]) -> Option<Setup> {
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
    args.extend_from_slice(extra_args);
    let mut host = HostProcess::start(&args);
    if let Err(why) = ns.wait_for_link(TAP, Duration::from_secs(5)) {
        let printed = host
            .wait_for_line(|_| false, Duration::from_millis(200))
            .unwrap_err();
        panic!("{why}\n{printed}");
    }
    ns.ip(&["addr", "add", "2001:db8:77::1/64", "dev", TAP, "nodad"]);
    ns.ip(&["addr", "add", "192.0.2.1/24", "dev", TAP]);
    ns.ip(&["link", "set", TAP, "up"]);
    ns.ip(&["link", "set", "lo", "up"]);
    // DAD of the host's addresses (one probe, 1 s, after a random delay
    // of up to 1 s).
    host.wait_for_line(|l| l == "ready", Duration::from_secs(5))
        .unwrap_or_else(|why| panic!("the host's addresses: {why}"));
    host.wait_for_line(
        |l| l.starts_with(&format!("address {TAP} {HOST6}/64 manual PREFERRED")),
        Duration::from_secs(1),
    )
    .unwrap_or_else(|why| panic!("the manual IPv6 address: {why}"));
    Some(Setup { host, ns, started })
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

    /// Stops the host with `signal`: it must exit 0 and print counters.
    fn stop(self, signal: libc::c_int) -> Stopped {
        let Setup { host, ns, started } = self;
        let stopped = host.stop(signal, Duration::from_secs(5));
        drop(ns);
        assert!(
            stopped.status.success(),
            "the host ended with {}:\nstdout:\n{}\nstderr:\n{}",
            stopped.status,
            stopped.stdout,
            stopped.stderr
        );
        assert!(
            stopped.stdout.contains("host counters:"),
            "{}",
            stopped.stdout
        );
        assert!(stopped.stdout.contains("links:"), "{}", stopped.stdout);
        eprintln!("test took {:.1} s", started.elapsed().as_secs_f64());
        stopped
    }
}

/// Counters every healthy run shows: frames both ways on the TAP, none
/// too long or lost to errors.
fn check_link(stopped: &Stopped) {
    let link = format!("{TAP}: tx_frames");
    assert!(
        stopped.counter_on(&link, "rx_frames") > 0,
        "{}",
        stopped.stdout
    );
    assert!(
        stopped.counter_on(&link, "tx_frames") > 0,
        "{}",
        stopped.stdout
    );
    for zero in [
        "tx_link_down",
        "dropped_too_big",
        "dropped_rx_too_long",
        "tx_errors",
        "rx_errors",
    ] {
        assert_eq!(
            stopped.counter_on(&link, zero),
            0,
            "{zero}:\n{}",
            stopped.stdout
        );
    }
}

#[test]
fn the_kernel_pings_the_reference_host_over_ipv6_and_ipv4() {
    let Some(setup) = setup(&[]) else { return };
    setup.ping("-6", 56, HOST6);
    setup.ping("-4", 56, HOST4);
    let stopped = setup.stop(libc::SIGINT);
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
    check_link(&stopped);
}

#[test]
fn twenty_thousand_byte_pings_are_fragmented_and_reassembled_both_ways() {
    let pcap = std::env::temp_dir().join(format!("ss-interop-tap-{}", std::process::id()));
    let pcap_arg = pcap.to_str().expect("UTF-8 temp dir").to_string();
    // Dropped last: after the host is gone.
    let _remove = RemoveDir(pcap.clone());
    let Some(setup) = setup(&["--pcap", &pcap_arg]) else {
        return;
    };
    setup.ping("-6", 20_000, HOST6);
    setup.ping("-4", 20_000, HOST4);
    let stopped = setup.stop(libc::SIGTERM);
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
    check_link(&stopped);
    check_capture(&pcap.join(format!("{TAP}.pcapng")));
}

/// The host's own capture decodes in tshark (if installed) with no
/// malformed packet and no bad checksum, and holds the fragments.
fn check_capture(path: &std::path::Path) {
    let Ok(meta) = std::fs::metadata(path) else {
        panic!("no capture at {}", path.display());
    };
    assert!(meta.len() > 0, "empty capture");
    let has_tshark = support::run("sh", &["-c", "command -v tshark"])
        .status
        .success();
    if !has_tshark {
        eprintln!("capture not decoded: tshark is not installed");
        return;
    }
    let path = path.to_str().expect("UTF-8 path");
    let args = [
        "-r",
        path,
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-Y",
        "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 0 \
         || icmp.checksum.status == 0 || icmpv6.checksum.status == 0",
    ];
    let bad = support::run_ok("tshark", &args);
    assert!(bad.trim().is_empty(), "tshark finds bad packets:\n{bad}");
    let fragments = support::run_ok(
        "tshark",
        &[
            "-r",
            path,
            "-Y",
            "ipv6.nxt == 44 || ip.flags.mf == 1 || ip.frag_offset > 0",
        ],
    );
    assert!(
        fragments.lines().count() >= 4 * 3 * 14,
        "fewer fragments than 12 pings of 20 000 bytes make:\n{fragments}"
    );
}

/// Removes a directory when dropped.
struct RemoveDir(std::path::PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

fn connect(to: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&to, Duration::from_secs(3))
        .unwrap_or_else(|e| panic!("connect {to}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Writes `data` (from another thread) while reading the echo back.
fn tcp_echo(to: SocketAddr, data: Vec<u8>) {
    let stream = connect(to);
    let mut writer = stream.try_clone().expect("clone");
    let len = data.len();
    let sending = std::thread::spawn(move || {
        writer.write_all(&data).expect("write to echo");
        writer.shutdown(Shutdown::Write).expect("shutdown");
        data
    });
    let mut back = Vec::with_capacity(len);
    let mut reader = stream;
    reader
        .read_to_end(&mut back)
        .unwrap_or_else(|e| panic!("echo from {to}: {e} after {} bytes", back.len()));
    let sent = sending.join().expect("writer");
    assert_eq!(back.len(), sent.len(), "echoed bytes from {to}");
    assert!(back == sent, "echoed bytes from {to} differ");
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
    let Some(setup) = setup(&[]) else { return };
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
    let stopped = setup.stop(libc::SIGINT);
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
    check_link(&stopped);
}
