//! Path MTU discovery of the reference stack through Linux routers, in
//! network namespaces the tests make and remove themselves:
//!
//! ```text
//!  reference host ══TAP══ R ──veth, MTU 1400── M ──veth, MTU 1500── F
//!  2001:db8:1::2          router                router              far host
//!  192.0.2.2                                                        2001:db8:3::2
//!                                                                   203.0.113.2
//! ```
//!
//! The reference host (in this process, on a TAP whose kernel side is in
//! R) serves TCP echo. F's kernel connects and sends 1 MiB. F's link MTU
//! is 1500, so F offers an MSS that lets the host send 1500-byte packets,
//! which R cannot forward onto its 1400-byte link to M: R answers with
//! ICMPv6 Packet Too Big (RFC 8201) or, since the host sets DF on TCP
//! (RFC 1191), ICMP Fragmentation Needed, each saying 1400. The host must
//! lower its path MTU to F and its segments to fit, resend what was lost
//! at once — not after a retransmission timeout (RFC 1191 §6.5) — and
//! echo every byte. (The same happens to F's own 1500-byte packets at
//! M, which F's kernel handles.) Then F sends a full-sized UDP datagram to
//! the host's UDP echo: the path MTU is the destination's, for every
//! protocol (RFC 8201 §5.2), so the host fragments its echo to fit.
//!
//! `stackscope host` cannot take a default route, so the host is built
//! here, like the hosts of `real_links.rs`.
//!
//! The kernel's side is captured on R (the TAP, and R's link towards M)
//! and decoded with tshark, checksum checks on: no malformed packet, no
//! bad checksum, the Packet Too Big / Fragmentation Needed there, and no
//! packet from the host too big for the path once it adapted.
//!
//! Needs root; skipped with a message where namespaces are refused. Needs
//! `ip` (iproute2), `ethtool`, `dumpcap` (wireshark-common) and `tshark`.

#![cfg(target_os = "linux")]

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use stack::iface::host::{Host, HostConfig, InterfaceConfig, StaticRoute, TcpHandle, UdpHandle};
use stack::phy::tap::Tap;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::UdpConfig;
use stack::time::Instant;
use wire::ethernet::EthernetAddress;

/// The MTU of the link between R and M: the path's narrowest.
const NARROW_MTU: usize = 1400;
/// What F sends through the echo.
const BYTES: usize = 1 << 20;
/// The smallest retransmission timeout (RFC 6298 §2.4).
const MIN_RTO: Duration = Duration::from_secs(1);
const TAP: &str = "pmtu0";

// ----- Namespaces ------------------------------------------------------------

/// The three namespaces of one test (R, M, F), deleted on drop (with every
/// interface inside), failures included.
struct Namespaces {
    names: Vec<String>,
}

const R: usize = 0;
const M: usize = 1;
const F: usize = 2;

impl Namespaces {
    fn create() -> Result<Namespaces, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let test = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut made = Namespaces { names: Vec::new() };
        for role in ["r", "m", "f"] {
            let name = format!("ss-pmtu-{}-{test}{role}", std::process::id());
            run("ip", &["netns", "add", &name])?;
            made.names.push(name);
        }
        Ok(made)
    }

    fn name(&self, index: usize) -> &str {
        &self.names[index]
    }

    /// Runs `program args` in namespace `index`; it must succeed.
    fn run(&self, index: usize, program: &str, args: &[&str]) -> String {
        let mut all = vec!["netns", "exec", self.name(index), program];
        all.extend_from_slice(args);
        run("ip", &all).unwrap_or_else(|e| panic!("{e}"))
    }

    fn ip(&self, index: usize, args: &[&str]) {
        self.run(index, "ip", args);
    }

    /// Sets the kernel parameters (`net.ipv4.ip_forward=1`, ...) of
    /// namespace `index` through /proc/sys, which shows the namespace's
    /// own `net` parameters to a process in it (no procps needed).
    fn sysctl(&self, index: usize, settings: &[&str]) {
        for setting in settings {
            let (key, value) = setting.split_once('=').expect("key=value");
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            self.run(index, "sh", &["-c", &format!("echo {value} > {path}")]);
        }
    }

    /// Moves the calling thread into namespace `index` (only that thread).
    fn enter(&self, index: usize) {
        let path = format!("/run/netns/{}", self.name(index));
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns takes a descriptor we hold open and a flag, no
        // pointers; it moves only the calling (test-owned) thread.
        let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns {path}: {}", io::Error::last_os_error());
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = run("ip", &["netns", "del", name]);
        }
    }
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {program}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{program} {}` failed ({}): {}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Panics, naming the package, if `tool` is not on PATH.
fn require_tool(tool: &str, package: &str) {
    let found = run("sh", &["-c", &format!("command -v {tool}")]).is_ok();
    assert!(
        found,
        "`{tool}` is not installed (Debian package {package})"
    );
}

/// The namespaces, or `None` after saying why the test is skipped.
fn namespaces() -> Option<Namespaces> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces, TAP devices)");
        return None;
    }
    if !Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: no /dev/net/tun (TUN/TAP support) on this machine");
        return None;
    }
    for (tool, package) in [
        ("ip", "iproute2"),
        ("ethtool", "ethtool"),
        ("dumpcap", "wireshark-common"),
        ("tshark", "tshark"),
    ] {
        require_tool(tool, package);
    }
    match Namespaces::create() {
        Ok(ns) => Some(ns),
        Err(why) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            None
        }
    }
}

/// R and M forward; F routes through M, R and M route to each other's
/// far prefix. Addresses without DAD (the links are the test's own).
/// The TAP's kernel side is set up later, once the host made it.
fn build_topology(ns: &Namespaces) {
    for index in [R, M, F] {
        ns.sysctl(
            index,
            &[
                "net.ipv6.conf.all.accept_dad=0",
                "net.ipv6.conf.default.accept_dad=0",
            ],
        );
        ns.ip(index, &["link", "set", "lo", "up"]);
    }
    for index in [R, M] {
        ns.sysctl(
            index,
            &["net.ipv6.conf.all.forwarding=1", "net.ipv4.ip_forward=1"],
        );
    }
    let narrow = NARROW_MTU.to_string();
    veth(ns, (R, "rm0"), (M, "mr0"), &narrow);
    veth(ns, (M, "mf0"), (F, "fm0"), "1500");
    address(ns, R, "rm0", "2001:db8:2::1/64", "198.51.100.1/24");
    address(ns, M, "mr0", "2001:db8:2::2/64", "198.51.100.2/24");
    address(ns, M, "mf0", "2001:db8:3::1/64", "203.0.113.1/24");
    address(ns, F, "fm0", "2001:db8:3::2/64", "203.0.113.2/24");
    ns.ip(
        R,
        &["route", "add", "2001:db8:3::/64", "via", "2001:db8:2::2"],
    );
    ns.ip(
        R,
        &["route", "add", "203.0.113.0/24", "via", "198.51.100.2"],
    );
    ns.ip(
        M,
        &["route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1"],
    );
    ns.ip(M, &["route", "add", "192.0.2.0/24", "via", "198.51.100.1"]);
    ns.ip(F, &["route", "add", "default", "via", "2001:db8:3::1"]);
    ns.ip(F, &["route", "add", "default", "via", "203.0.113.1"]);
    // F's kernel leaves TCP checksums to the veth "hardware", and packets
    // keep those partial checksums all the way through M onto R's veth,
    // where tshark would call them bad. Computed in software, they are
    // complete everywhere. (Forwarded onto the TAP, which offers no
    // offloads, the kernel completes them anyway.)
    ns.run(F, "ethtool", &["-K", "fm0", "tx", "off"]);
}

/// A veth pair, made in namespace `a`'s and moved in part to `b`'s (so it
/// never appears in the machine's own namespace), both ends up.
fn veth(ns: &Namespaces, (a, a_name): (usize, &str), (b, b_name): (usize, &str), mtu: &str) {
    let peer_ns = ns.name(b).to_string();
    ns.ip(
        a,
        &[
            "link", "add", a_name, "mtu", mtu, "type", "veth", "peer", "name", b_name, "mtu", mtu,
            "netns", &peer_ns,
        ],
    );
    ns.ip(a, &["link", "set", a_name, "up"]);
    ns.ip(b, &["link", "set", b_name, "up"]);
}

fn address(ns: &Namespaces, index: usize, dev: &str, v6: &str, v4: &str) {
    ns.ip(index, &["addr", "add", v6, "dev", dev, "nodad"]);
    ns.ip(index, &["addr", "add", v4, "dev", dev]);
}

// ----- Captures --------------------------------------------------------------

/// A `dumpcap` in a namespace, stopped with SIGINT by [`stop`](Self::stop)
/// (it finishes the file), killed if dropped.
///
/// dumpcap reads the kernel's capture ring a block at a time, a block
/// handed over when full or 250 ms (dumpcap's read timeout) after its
/// first packet, and at SIGINT the block being filled is lost. So a
/// capture is stopped only once dumpcap has written as many packets as
/// the interface carried since it began: dumpcap says how many it wrote
/// (`Packets: N` on stderr, about every half second).
struct Capture {
    child: Option<Child>,
    path: PathBuf,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
    /// The interface's packets when the capture began.
    carried_before: u64,
}

impl Capture {
    /// Starts capturing `dev` in namespace `index` into `path`; returns
    /// once dumpcap says it writes the file (the interface is open then).
    fn start(ns: &Namespaces, index: usize, dev: &str, path: PathBuf) -> Capture {
        let file = path.to_str().expect("UTF-8 path").to_string();
        // `ip netns exec` execs dumpcap: the child's pid is dumpcap's.
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns.name(index), "dumpcap", "-i", dev])
            .args(["-w", &file])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dumpcap");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || forward_messages(stderr, tx));
        let mut capture = Capture {
            child: Some(child),
            path,
            lines,
            said: Vec::new(),
            carried_before: 0,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !capture.said.iter().any(|l| l.starts_with("File: ")) {
            assert!(
                capture.take_message(deadline),
                "dumpcap on {dev} did not start:\n{}",
                capture.said.join("\n")
            );
        }
        // Read once the capture runs: what comes after is captured (and a
        // packet in between is captured without being expected).
        capture.carried_before = carried(ns, index, dev);
        capture
    }

    /// Waits for dumpcap's next message until `deadline`; false if none.
    fn take_message(&mut self, deadline: std::time::Instant) -> bool {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.said.push(line);
                true
            }
            Err(_) => false,
        }
    }

    /// The packets dumpcap last said it wrote.
    fn written(&self) -> u64 {
        self.said
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("Packets: ")?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until dumpcap wrote what `dev` carried since the capture
    /// began (or 10 s passed), stops it and waits until the file is
    /// complete; the file's path.
    fn stop(mut self, ns: &Namespaces, index: usize, dev: &str) -> PathBuf {
        let packets = carried(ns, index, dev) - self.carried_before;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.written() < packets {
            if !self.take_message(deadline) {
                eprintln!(
                    "note: dumpcap wrote {} of the {packets} packets {dev} carried",
                    self.written()
                );
                break;
            }
        }
        let mut child = self.child.take().expect("a running dumpcap");
        // SAFETY: kill takes a pid and a signal number, no pointers; the
        // pid is our own child's, not yet reaped (so not reused).
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let status = child.wait().expect("wait for dumpcap");
        assert!(
            status.success() || status.code().is_none(),
            "dumpcap on {dev}: {status}\n{}",
            self.said.join("\n")
        );
        self.path.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends each message of dumpcap's stderr: its lines, and each update of
/// its running count, `\rPackets: N ` (sent when complete: the next `\r`
/// may be long in coming, or never).
fn forward_messages(stderr: impl Read, tx: mpsc::Sender<String>) {
    let mut reader = BufReader::new(stderr);
    let mut piece = String::new();
    let mut byte = [0u8; 1];
    while matches!(reader.read(&mut byte), Ok(1)) {
        let end = matches!(byte[0], b'\r' | b'\n');
        if !end {
            piece.push(char::from(byte[0]));
        }
        let count_done = byte[0] == b' ' && is_packet_count(&piece);
        if (end || count_done) && !piece.trim().is_empty() {
            if tx.send(piece.trim().to_string()).is_err() {
                return;
            }
            piece.clear();
        }
    }
}

/// `Packets: N ` with its number complete.
fn is_packet_count(piece: &str) -> bool {
    piece
        .strip_prefix("Packets: ")
        .and_then(|rest| rest.strip_suffix(' '))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Packets `dev` in namespace `index` carried so far, as a capture on it
/// sees them: received, sent, and dropped on the way out.
fn carried(ns: &Namespaces, index: usize, dev: &str) -> u64 {
    ["rx_packets", "tx_packets", "tx_dropped"]
        .into_iter()
        .map(|stat| {
            let path = format!("/sys/class/net/{dev}/statistics/{stat}");
            let text = ns.run(index, "cat", &[&path]);
            text.trim()
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{path}: {text:?}"))
        })
        .sum()
}

/// A directory of the test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ss-pmtu-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Malformed packets, expert errors and bad checksums. An ICMP error
/// quotes the start of the packet it is about (R quotes 1232 or 548 bytes
/// of a 1500-byte one), and tshark checks the quoted TCP header's checksum
/// over that cut-short segment and calls it bad (an expert error too): so
/// in ICMP packets only the ICMP and IP checksums and the structure are
/// checked, everywhere else everything. Except a TCP checksum of 0xFFFF
/// where 0x0000 was computed: Linux, completing a checksum in software
/// (`skb_checksum_help`), writes a zero result as 0xFFFF, the other
/// ones'-complement zero, which every receiver accepts (RFC 1624 §3);
/// tshark calls it an error.
const BAD_PACKETS: &str = "_ws.malformed || ip.checksum.status == 0 \
    || icmp.checksum.status == 0 || icmpv6.checksum.status == 0 \
    || ((_ws.expert.severity >= error || tcp.checksum.status == 0) \
        && !icmp && !icmpv6 && !tcp.checksum.ffff)";

/// tshark over a capture, every checksum check on; the echo's payload is
/// plain data (no heuristic dissector's guess).
fn tshark(path: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "-r",
        path.to_str().expect("UTF-8 path"),
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-d",
        "tcp.port==7,data",
    ];
    args.extend_from_slice(extra);
    run("tshark", &args).unwrap_or_else(|e| panic!("{e}"))
}

/// One line per packet matching `filter`: the fields, tab-separated.
fn packets(path: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec!["-Y", filter, "-T", "fields"];
    for field in fields {
        args.extend(["-e", field]);
    }
    tshark(path, &args)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn assert_no_bad_packets(path: &Path) {
    let bad = tshark(path, &["-Y", BAD_PACKETS]);
    assert!(
        bad.trim().is_empty(),
        "tshark finds bad packets in {}:\n{bad}",
        path.display()
    );
}

// ----- The reference host ----------------------------------------------------

/// One family's view of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V6,
    V4,
}

impl Family {
    fn host(self) -> IpAddr {
        match self {
            Family::V6 => "2001:db8:1::2".parse().unwrap(),
            Family::V4 => "192.0.2.2".parse().unwrap(),
        }
    }

    fn far(self) -> IpAddr {
        match self {
            Family::V6 => "2001:db8:3::2".parse().unwrap(),
            Family::V4 => "203.0.113.2".parse().unwrap(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::V6 => "IPv6",
            Family::V4 => "IPv4",
        }
    }

    /// tshark's name of the IP layer.
    fn ip(self) -> &'static str {
        match self {
            Family::V6 => "ipv6",
            Family::V4 => "ip",
        }
    }

    /// tshark's field of an IP packet's total length.
    fn ip_len(self) -> &'static str {
        match self {
            Family::V6 => "ipv6.plen",
            Family::V4 => "ip.len",
        }
    }

    /// The length tshark's `ip_len` field shows for a packet of `mtu`.
    fn ip_len_at(self, mtu: usize) -> usize {
        match self {
            Family::V6 => mtu - 40,
            Family::V4 => mtu,
        }
    }

    /// A fragment, in tshark's terms (an IPv6 one has a Fragment header
    /// first: the host adds no other extension header).
    fn fragment(self) -> &'static str {
        match self {
            Family::V6 => "ipv6.nxt == 44",
            Family::V4 => "ip.flags.mf == 1 || ip.frag_offset > 0",
        }
    }

    /// The router's message saying a packet was too big, with its MTU.
    fn too_big(self) -> String {
        match self {
            Family::V6 => format!("icmpv6.type == 2 && icmpv6.mtu == {NARROW_MTU}"),
            Family::V4 => {
                format!("icmp.type == 3 && icmp.code == 4 && icmp.mtu == {NARROW_MTU}")
            }
        }
    }
}

/// What the host thread saw.
#[derive(Debug)]
struct HostReport {
    /// The path MTU the host holds for F at the end.
    path_mtu: Option<u32>,
    /// The echo connection's send MSS at its end.
    send_mss: Option<usize>,
    segments_retransmitted: u64,
    /// The echo connection's retransmission timeouts.
    retransmission_timeouts: u64,
    /// Its resends for a lowered path MTU (RFC 1191 §6.5).
    path_mtu_resends: u64,
    drops: String,
    counters: String,
}

/// A TCP echo connection: what was read and not yet sent back.
struct Echo {
    handle: TcpHandle,
    pending: Vec<u8>,
    peer_done: bool,
    shut: bool,
}

/// Serves the echo: accepts, echoes, shuts down after the peer did.
/// Notes the connection's send MSS and retransmissions as it goes.
fn serve_echo(
    host: &mut Host,
    listeners: &[TcpHandle],
    echoes: &mut Vec<Echo>,
    seen: &mut HostReport,
) {
    for &listener in listeners {
        while let Ok(handle) = host.tcp_accept(listener) {
            echoes.push(Echo {
                handle,
                pending: Vec::new(),
                peer_done: false,
                shut: false,
            });
        }
    }
    let mut buf = [0u8; 16 * 1024];
    for echo in echoes.iter_mut() {
        loop {
            while !echo.pending.is_empty() {
                match host.tcp_send(echo.handle, &echo.pending) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drop(echo.pending.drain(..n)),
                }
            }
            if echo.peer_done || echo.pending.len() >= 256 * 1024 {
                break;
            }
            match host.tcp_recv(echo.handle, &mut buf) {
                Ok(0) => echo.peer_done = true,
                Ok(n) => echo.pending.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        if echo.peer_done && echo.pending.is_empty() && !echo.shut {
            let _ = host.tcp_shutdown(echo.handle);
            echo.shut = true;
        }
        if let Some(conn) = host.tcp_connection(echo.handle) {
            seen.send_mss = conn.negotiated().map(|n| n.send_mss);
            let counters = conn.counters();
            seen.segments_retransmitted = counters.segments_retransmitted;
            seen.retransmission_timeouts = counters.retransmission_timeouts;
            seen.path_mtu_resends = counters.path_mtu_resends;
        }
    }
}

/// Echoes every datagram waiting on `sockets` to its sender.
fn serve_udp_echo(host: &mut Host, sockets: &[UdpHandle]) {
    for &socket in sockets {
        while let Some(datagram) = host.udp(socket).recv() {
            let mut data = vec![0u8; datagram.payload.len()];
            datagram.payload.copy_out(0, &mut data);
            let _ = host.udp_send_to(socket, &data, datagram.remote);
        }
    }
}

/// The reference host on the TAP `pmtu0`, made in the calling thread's
/// namespace (R): routes to everything else via R.
fn reference_host() -> (Host, RawFd) {
    let tap = Tap::open(TAP, 1500).unwrap_or_else(|e| panic!("TAP {TAP}: {e}"));
    let fd = tap.as_raw_fd();
    let mut config = HostConfig::new("pmtu-host", false);
    config.seed = 11;
    let interface = InterfaceConfig {
        name: TAP.into(),
        link: Box::new(tap),
        mac: EthernetAddress([0x02, 0, 0x5e, 0, 0x53, 0x02]),
        ipv4: Some("192.0.2.2/24".parse().unwrap()),
        ipv6: vec!["2001:db8:1::2/64".parse().unwrap()],
        advertise: Vec::new(),
        dad_transmits: Some(0),
    };
    let routes = [
        StaticRoute {
            to: "::/0".parse().unwrap(),
            via: "2001:db8:1::1".parse().unwrap(),
        },
        StaticRoute {
            to: "0.0.0.0/0".parse().unwrap(),
            via: "192.0.2.1".parse().unwrap(),
        },
    ];
    let host = Host::new(config, vec![interface], &routes).unwrap_or_else(|e| panic!("{e}"));
    (host, fd)
}

/// Runs the host until `stop`: polls, serves the echo, sleeps on the TAP
/// (at most 2 ms, or until the host's next deadline) when idle.
fn run_host(
    ns: &Namespaces,
    family: Family,
    opened: mpsc::Sender<()>,
    go: mpsc::Receiver<()>,
    stop: &AtomicBool,
) -> HostReport {
    ns.enter(R);
    let (mut host, fd) = reference_host();
    opened.send(()).expect("the test waits for the TAP");
    // The kernel's side of the TAP must be up before the host sends.
    go.recv_timeout(Duration::from_secs(10))
        .expect("the test configures the TAP");
    let clock = std::time::Instant::now();
    let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
    let listeners: Vec<TcpHandle> = ["[::]:7", "0.0.0.0:7"]
        .into_iter()
        .map(|at| {
            host.tcp_listen(
                at.parse().unwrap(),
                TcpConfig::default(),
                ListenerConfig::default(),
            )
            .expect("listen")
        })
        .collect();
    let udp: Vec<UdpHandle> = ["[::]:7", "0.0.0.0:7"]
        .into_iter()
        .map(|at| {
            let socket = host.udp_open(UdpConfig::default());
            host.udp_bind(socket, at.parse().unwrap());
            socket
        })
        .collect();
    let mut echoes = Vec::new();
    let mut report = HostReport {
        path_mtu: None,
        send_mss: None,
        segments_retransmitted: 0,
        retransmission_timeouts: 0,
        path_mtu_resends: 0,
        drops: String::new(),
        counters: String::new(),
    };
    let limit = clock + Duration::from_secs(60);
    while !stop.load(Ordering::Relaxed) && std::time::Instant::now() < limit {
        let t = now();
        host.poll(t);
        serve_echo(&mut host, &listeners, &mut echoes, &mut report);
        serve_udp_echo(&mut host, &udp);
        host.poll(now());
        let wait = host
            .next_deadline(t)
            .map_or(Duration::from_millis(2), |at| {
                at.saturating_duration_since(now())
            })
            .min(Duration::from_millis(2));
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd, its count 1; poll writes only revents.
        unsafe { libc::poll(&mut pollfd, 1, wait.as_millis() as libc::c_int) };
    }
    let state = host.state(now());
    let far = family.far().to_string();
    let destinations = match family {
        Family::V6 => &state.ipv6_destinations,
        Family::V4 => &state.ipv4_destinations,
    };
    report.path_mtu = destinations
        .iter()
        .find(|d| d.destination == far)
        .map(|d| d.path_mtu);
    report.drops = format!("{:?}", host.drops());
    report.counters = format!("{:?}", host.counters());
    report
}

// ----- The far host ------------------------------------------------------------

/// Bytes no pattern bug hides in: a xorshift stream.
fn data(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// F's kernel sends `sent` to the host's echo and reads it back; whatever
/// came back before the end or an error.
fn far_echo(ns: &Namespaces, family: Family, sent: &[u8]) -> Result<Vec<u8>, String> {
    ns.enter(F);
    let to = SocketAddr::new(family.host(), 7);
    let stream = TcpStream::connect_timeout(&to, Duration::from_secs(5))
        .map_err(|e| format!("connect {to}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut writer = stream.try_clone().expect("clone");
    let mut back = Vec::with_capacity(sent.len());
    thread::scope(|scope| {
        let writing = scope.spawn(move || {
            writer.write_all(sent)?;
            writer.shutdown(Shutdown::Write)
        });
        let read = (&stream).read_to_end(&mut back);
        let written = writing.join().expect("the writer");
        written.map_err(|e| format!("write to {to}: {e}"))?;
        read.map_err(|e| format!("read from {to}: {e} after {} bytes", back.len()))
    })?;
    Ok(back)
}

/// The largest UDP payload a 1500-byte packet carries: the host's echo
/// of it is too big for the path, so the host must fragment it.
fn full_sized_udp(family: Family) -> usize {
    match family {
        Family::V6 => 1500 - 40 - 8,
        Family::V4 => 1500 - 20 - 8,
    }
}

/// F's kernel sends one full-sized datagram to the host's UDP echo and
/// waits for it to come back (sent again after a second without: UDP
/// has nobody else to resend it). Whether it came back intact.
fn far_udp_echo(ns: &Namespaces, family: Family) -> Result<(), String> {
    ns.enter(F);
    let any = match family {
        Family::V6 => "[::]:0",
        Family::V4 => "0.0.0.0:0",
    };
    let socket = UdpSocket::bind(any).map_err(|e| format!("bind: {e}"))?;
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let to = SocketAddr::new(family.host(), 7);
    let sent = data(full_sized_udp(family));
    let mut buf = vec![0u8; 65_536];
    for _ in 0..3 {
        socket
            .send_to(&sent, to)
            .map_err(|e| format!("send to {to}: {e}"))?;
        if let Ok((len, from)) = socket.recv_from(&mut buf) {
            return if from == to && buf[..len] == sent[..] {
                Ok(())
            } else {
                Err(format!("a wrong echo: {len} bytes from {from}"))
            };
        }
    }
    Err(format!("no UDP echo from {to} in 3 tries"))
}

// ----- The test ------------------------------------------------------------------

fn path_mtu_discovery(family: Family, test: &str) {
    let Some(ns) = namespaces() else { return };
    let scratch = Scratch::new(test);
    let started = std::time::Instant::now();
    build_topology(&ns);
    let sent = data(BYTES);

    let stop = AtomicBool::new(false);
    let (opened_tx, opened) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let (echoed, echo_took, report, captures) = thread::scope(|scope| {
        let host = scope.spawn(|| run_host(&ns, family, opened_tx, go_rx, &stop));
        // Whatever happens on this side, the host thread ends.
        let _stop_host = StopOnDrop(&stop);
        opened
            .recv_timeout(Duration::from_secs(10))
            .expect("the host opened its TAP");
        address(&ns, R, TAP, "2001:db8:1::1/64", "192.0.2.1/24");
        ns.ip(R, &["link", "set", TAP, "up"]);
        go.send(()).expect("the host waits");
        // After the host started reading: what the kernel queued on the
        // TAP before is read (and counted) before the captures count.
        let tap_capture = Capture::start(&ns, R, TAP, scratch.0.join("tap.pcapng"));
        let narrow_capture = Capture::start(&ns, R, "rm0", scratch.0.join("narrow.pcapng"));
        let echo_started = std::time::Instant::now();
        let echoed = thread::scope(|inner| {
            inner
                .spawn(|| far_echo(&ns, family, &sent))
                .join()
                .expect("the far host's thread")
        });
        let echo_took = echo_started.elapsed();
        // Then UDP, to the path MTU the host has learned by now.
        let udp_echoed = thread::scope(|inner| {
            inner
                .spawn(|| far_udp_echo(&ns, family))
                .join()
                .expect("the far host's thread")
        });
        let captures = (
            tap_capture.stop(&ns, R, TAP),
            narrow_capture.stop(&ns, R, "rm0"),
        );
        stop.store(true, Ordering::Relaxed);
        (
            (echoed, udp_echoed),
            echo_took,
            host.join().expect("the host thread"),
            captures,
        )
    });
    let (echoed, udp_echoed) = echoed;
    let context = format!("{} host: {report:?}", family.name());
    let echoed = echoed.unwrap_or_else(|e| panic!("{e}\n{context}"));
    assert_eq!(echoed.len(), BYTES, "bytes echoed\n{context}");
    assert!(
        echoed == sent,
        "the echo differs from what F sent\n{context}"
    );
    assert_eq!(
        report.path_mtu,
        Some(NARROW_MTU as u32),
        "the host's path MTU to F\n{context}"
    );
    udp_echoed.unwrap_or_else(|e| panic!("UDP: {e}\n{context}"));
    let header = match family {
        Family::V6 => 40 + 20,
        Family::V4 => 20 + 20,
    };
    let send_mss = report.send_mss.expect("the echo connection's MSS");
    assert!(send_mss <= NARROW_MTU - header, "{context}");
    // What R dropped was resent when its error arrived, not left to the
    // retransmission timer (whose 1 s minimum the echo would then take,
    // and more).
    assert!(report.path_mtu_resends >= 1, "{context}");
    assert_eq!(report.retransmission_timeouts, 0, "{context}");
    assert!(
        echo_took < MIN_RTO,
        "the echo took {echo_took:?}\n{context}"
    );

    let (tap, narrow) = captures;
    check_tap_capture(family, &tap, &context);
    check_narrow_capture(family, &narrow, &context);
    drop(ns);
    eprintln!(
        "{test}: 1 MiB echoed across a 1400-byte link in {:.3} s, host send MSS {send_mss}, \
         {} segments retransmitted; the test took {:.1} s",
        echo_took.as_secs_f64(),
        report.segments_retransmitted,
        started.elapsed().as_secs_f64()
    );
}

/// On the TAP: the host tried packets bigger than the path, R told it so
/// with the narrow MTU, and once the host sent a packet sized for the path
/// (exactly its MTU: only a host that adapted makes full-sized ones that
/// long) it never sent one too big again, and sent the rest that way.
fn check_tap_capture(family: Family, path: &Path, context: &str) {
    assert_no_bad_packets(path);
    let (ip, host) = (family.ip(), family.host());
    let too_big = packets(
        path,
        &format!("{ip}.dst == {host} && {}", family.too_big()),
        &["frame.number", "frame.time_relative"],
    );
    let from_host = packets(
        path,
        &format!("{ip}.src == {host} && tcp.len > 0"),
        &[
            "frame.number",
            family.ip_len(),
            "tcp.seq_raw",
            "frame.time_relative",
        ],
    );
    // (frame number, IP length as tshark's field shows it, SEQ, time)
    let sizes: Vec<(u64, usize)> = from_host
        .iter()
        .map(|row| (row[0].parse().unwrap_or(0), row[1].parse().unwrap_or(0)))
        .collect();
    let seq_at = |row: &Vec<String>| row[2].parse::<u64>().unwrap_or(u64::MAX);
    let time_at = |row: &Vec<String>| row.last().and_then(|t| t.parse::<f64>().ok());
    let limit = family.ip_len_at(NARROW_MTU);
    let big: Vec<u64> = sizes
        .iter()
        .filter(|&&(_, len)| len > limit)
        .map(|&(n, _)| n)
        .collect();
    let adapted = sizes.iter().position(|&(_, len)| len == limit);
    // The first segment too big, and when its data went again, sized for
    // the path, after the first error: at once (RFC 1191 §6.5), not a
    // retransmission timeout later.
    let first_big = from_host
        .iter()
        .find(|row| row[1].parse().unwrap_or(0) > limit);
    let first_error = too_big.first();
    let resent = first_big.zip(first_error).and_then(|(big_row, error)| {
        let after: u64 = error[0].parse().unwrap_or(u64::MAX);
        from_host.iter().find(|row| {
            row[0].parse::<u64>().is_ok_and(|n| n > after)
                && row[1].parse().unwrap_or(usize::MAX) <= limit
                && seq_at(row) == seq_at(big_row)
        })
    });
    let resend_delay = resent
        .zip(first_error)
        .and_then(|(row, error)| Some(time_at(row)? - time_at(error)?));
    eprintln!(
        "{} TAP capture: {} data segments from the host, {} too big for the path \
         (frames {:?}..{:?}); {} Packet Too Big / Fragmentation Needed from R (first {:?}); \
         first segment sized for the path: frame {:?}; the first one too big resent \
         {:.1} ms after the first error",
        family.name(),
        sizes.len(),
        big.len(),
        big.first(),
        big.last(),
        too_big.len(),
        too_big.first().map(|row| &row[0]),
        adapted.map(|i| sizes[i].0),
        resend_delay.unwrap_or(f64::NAN) * 1e3,
    );
    let resend_delay = resend_delay
        .unwrap_or_else(|| panic!("the first segment too big was never resent\n{context}"));
    assert!(
        resend_delay < MIN_RTO.as_secs_f64() / 4.0,
        "resent {resend_delay:.3} s after the error\n{context}"
    );
    assert!(
        !too_big.is_empty(),
        "no {} to the host on the TAP\n{context}",
        family.too_big()
    );
    assert!(
        !big.is_empty(),
        "the host never sent a packet over {NARROW_MTU} bytes\n{context}"
    );
    let adapted = adapted
        .unwrap_or_else(|| panic!("no segment from the host fits the path exactly\n{context}"));
    let (adapted_frame, _) = sizes[adapted];
    assert!(
        big.iter().all(|&n| n < adapted_frame),
        "the host sent a packet over {NARROW_MTU} bytes after adapting\n{context}"
    );
    // The host fragmented its UDP echo to the path MTU it had learned
    // (RFC 8201 §5.2: one per destination, for every protocol).
    let udp_from_host = packets(
        path,
        &format!("{ip}.src == {host} && ({})", family.fragment()),
        &[family.ip_len()],
    );
    let udp_sizes: Vec<usize> = udp_from_host
        .iter()
        .map(|row| row[0].parse().unwrap_or(usize::MAX))
        .collect();
    assert!(
        udp_sizes.len() >= 2 && udp_sizes.iter().all(|&len| len <= limit),
        "the host's UDP fragments to F: IP lengths {udp_sizes:?} (at most {limit})\n{context}"
    );
    // The bulk of the 1 MiB went in path-sized segments.
    let after = sizes.len() - adapted;
    assert!(
        after * (NARROW_MTU - 60) >= BYTES * 9 / 10,
        "{after} segments after adapting\n{context}"
    );
}

/// On R's narrow link: everything fits, and the host's data got through.
fn check_narrow_capture(family: Family, path: &Path, context: &str) {
    assert_no_bad_packets(path);
    let host = family.host();
    let data = packets(
        path,
        &format!("{}.src == {host} && tcp.len > 0", family.ip()),
        &["frame.number"],
    );
    assert!(
        data.len() >= BYTES / NARROW_MTU,
        "{} data segments from the host crossed the narrow link\n{context}",
        data.len()
    );
    // The capture is whole: both ends' FINs crossed as well.
    let fins = packets(path, "tcp.flags.fin == 1", &["frame.number"]);
    assert_eq!(fins.len(), 2, "FINs on the narrow link\n{context}");
}

/// Tells the host thread to stop when dropped, also when the test side
/// panics (the scope waits for the thread before unwinding further).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn the_host_lowers_its_path_mtu_on_packet_too_big_from_a_linux_router() {
    path_mtu_discovery(Family::V6, "v6");
}

#[test]
fn the_host_lowers_its_path_mtu_on_fragmentation_needed_from_a_linux_router() {
    path_mtu_discovery(Family::V4, "v4");
}
