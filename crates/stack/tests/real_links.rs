//! The reference stack on real links (issue 7), with the Linux kernel as
//! the peer, in network namespaces the tests make and remove themselves:
//!
//! * an AF_PACKET link on a veth end: frames both ways in batches, frames
//!   sent out of its interface (its own, another socket's) not received,
//!   the MTU and MAC read from the interface, too-long frames counted;
//! * a reference host on that link: the kernel pings it (IPv6 and IPv4),
//!   it pings the kernel (neighbour discovery and ARP both ways), and UDP
//!   both ways, the kernel's partial checksums completed by the link;
//! * TCP both ways between a kernel socket and the reference host with the
//!   kernel's veth offloads on (GSO super-frames cut by the link);
//! * two reference hosts talking IPv6 through an IPv6-in-IPv4 tunnel
//!   (protocol 41) over the kernel's IPv4 between two namespaces: pings
//!   of global and link-local addresses, UDP small and fragmented.
//!
//! Needs root; skipped with a message where namespaces are refused. Each
//! test makes its own namespaces (`stackscope-rl-<pid>-…`, removed on drop,
//! failures included; ones left by a killed run are removed by the next).

#![cfg(target_os = "linux")]

use std::fs::File;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use stack::iface::host::{
    GroCounters, Host, HostConfig, HostCounters, InterfaceConfig, RawHandle, TcpHandle, UdpHandle,
};
use stack::iface::interface::InterfaceCounters;
use stack::iface::offload::Offload;
use stack::iface::route::InterfaceId;
use stack::phy::packet::{PacketConfig, PacketLink, PacketStats, RingStats, DEFAULT_BATCH};
use stack::phy::tunnel::{Ipv6InIpv4, TunnelStats};
use stack::phy::{Captured, Link, LinkError, LinkStats, Medium};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::{RawFamily, UdpConfig};
use stack::time::Instant;
use wire::ethernet::EthernetAddress;
use wire::ip::IpProtocol;

// ----- Namespaces ------------------------------------------------------------

const NETNS_DIR: &str = "/run/netns";
const PREFIX: &str = "stackscope-rl-";

/// Distinguishes the namespaces of tests running at once.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Namespaces (and with them their veth ends) removed on drop, even when
/// a test fails.
struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    /// `count` new namespaces with their loopbacks up, or why not (the
    /// caller skips on that).
    fn create(count: usize) -> Result<Self, String> {
        remove_stale();
        let pid = std::process::id();
        let test = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut made = Self { names: Vec::new() };
        for index in 0..count {
            let name = format!("{PREFIX}{pid}-{test}{}", (b'a' + index as u8) as char);
            ip(&["netns", "add", &name])?;
            made.names.push(name);
            ip(&["-n", &made.names[index], "link", "set", "lo", "up"])?;
        }
        Ok(made)
    }

    fn name(&self, index: usize) -> &str {
        &self.names[index]
    }

    /// Interface names unique to this test (at most 15 bytes).
    fn interface(&self, index: usize) -> String {
        let tail = self.names[index].rsplit('-').next().unwrap_or("x");
        format!("rl{tail}{}", std::process::id() % 100_000)
    }

    /// A veth pair between namespaces `a` and `b`; the interface names.
    fn veth(&self, a: usize, b: usize, mtu: u32) -> (String, String) {
        let (ia, ib) = (self.interface(a), self.interface(b));
        ip(&[
            "link",
            "add",
            &ia,
            "netns",
            self.name(a),
            "mtu",
            &mtu.to_string(),
            "type",
            "veth",
            "peer",
            "name",
            &ib,
            "netns",
            self.name(b),
            "mtu",
            &mtu.to_string(),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        (ia, ib)
    }

    /// Runs `ip ARGS` in namespace `index`.
    fn ip(&self, index: usize, args: &[&str]) {
        let mut all = vec!["-n", self.name(index)];
        all.extend_from_slice(args);
        ip(&all).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Turns the kernel's IPv6 off on `interface` (before it comes up), so
    /// it stays silent on a link the reference stack speaks for.
    fn no_ipv6(&self, index: usize, interface: &str) {
        let key = format!("net.ipv6.conf.{interface}.disable_ipv6=1");
        run_in(self.name(index), &["sysctl", "-q", "-w", &key]);
    }

    /// Moves the calling thread into namespace `index` (setns moves only
    /// the calling thread).
    fn enter(&self, index: usize) -> io::Result<()> {
        let file = File::open(format!("{NETNS_DIR}/{}", self.name(index)))?;
        // SAFETY: setns on a namespace file descriptor we hold open; it
        // changes the calling thread's network namespace only.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The MAC of `interface` as iproute2 shows it.
    fn mac_of(&self, index: usize, interface: &str) -> EthernetAddress {
        let output = run_in(
            self.name(index),
            &["ip", "-o", "link", "show", "dev", interface],
        );
        let text = output
            .split("link/ether ")
            .nth(1)
            .expect("an Ethernet device");
        let mut mac = [0u8; 6];
        for (byte, hex) in mac
            .iter_mut()
            .zip(text.split_whitespace().next().unwrap().split(':'))
        {
            *byte = u8::from_str_radix(hex, 16).unwrap();
        }
        EthernetAddress(mac)
    }

    /// A counter of /proc/net/snmp (`Icmp`, `OutDestUnreachs`) in
    /// namespace `index`.
    fn snmp(&self, index: usize, group: &str, field: &str) -> u64 {
        let text = run_in(self.name(index), &["cat", "/proc/net/snmp"]);
        let mut lines = text.lines().filter(|l| l.starts_with(&format!("{group}:")));
        let (names, values) = (lines.next().unwrap(), lines.next().unwrap());
        let at = names.split_whitespace().position(|n| n == field).unwrap();
        values.split_whitespace().nth(at).unwrap().parse().unwrap()
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace destroys the veth ends inside it.
        for name in &self.names {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Namespaces, or `None` after saying why the test is skipped.
fn namespaces(count: usize) -> Option<Namespaces> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces, veth, AF_PACKET, raw sockets)");
        return None;
    }
    match Namespaces::create(count) {
        Ok(made) => Some(made),
        Err(why) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            None
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("run `ip` (iproute2): {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Runs a command in namespace `ns` and returns its output; it must
/// succeed.
fn run_in(ns: &str, command: &[&str]) -> String {
    let output = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(command)
        .output()
        .unwrap_or_else(|e| panic!("run {command:?} in {ns}: {e}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} in {ns} failed: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// Removes namespaces of earlier runs of this test binary that were
/// killed before they could clean up.
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
}

// ----- Running a host on the real clock --------------------------------------

/// The stack's clock: time since the test began.
struct Clock(std::time::Instant);

impl Clock {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.0.elapsed().as_nanos() as u64)
    }
}

/// Polls `host` until `done` says so or `limit` passes, sleeping in
/// between until the link's socket `fd` is readable or the host's next
/// deadline (at most 2 ms). Whether `done` said so.
fn run_until(
    host: &mut Host,
    clock: &Clock,
    fd: RawFd,
    limit: Duration,
    mut done: impl FnMut(&mut Host, Instant) -> bool,
) -> bool {
    let end = clock.now() + limit;
    loop {
        let now = clock.now();
        host.poll(now);
        if done(host, now) {
            return true;
        }
        if now >= end {
            return false;
        }
        let wait = host
            .next_deadline(now)
            .map_or(Duration::from_millis(2), |at| at - now)
            .min(Duration::from_millis(2));
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd, its count 1; poll writes only revents.
        unsafe { libc::poll(&mut pollfd, 1, wait.as_millis() as libc::c_int) };
    }
}

/// A link whose own counters are copied out after every call, for the
/// test thread to read once the host (which owns the link) is done.
struct Watched<L, S> {
    inner: L,
    read: fn(&L) -> S,
    out: Arc<Mutex<(LinkStats, S)>>,
}

impl<L: Link, S: Copy> Watched<L, S> {
    fn update(&self) {
        *self.out.lock().unwrap() = (self.inner.stats(), (self.read)(&self.inner));
    }
}

impl<L: Link, S: Copy> Link for Watched<L, S> {
    fn medium(&self) -> Medium {
        self.inner.medium()
    }
    fn mtu(&self) -> usize {
        self.inner.mtu()
    }
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let result = self.inner.transmit(now, parts);
        self.update();
        result
    }
    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        self.inner.transmitted(now, parts);
    }
    fn takes_gso(&self) -> bool {
        self.inner.takes_gso()
    }
    fn transmit_gso(
        &mut self,
        now: Instant,
        header: &stack::phy::vnet::VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        let result = self.inner.transmit_gso(now, header, parts);
        self.update();
        result
    }
    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let result = self.inner.receive(now, buf);
        self.update();
        result
    }
    fn carries_gso(&self) -> bool {
        self.inner.carries_gso()
    }
    fn receive_whole(
        &mut self,
        now: Instant,
        take: &mut dyn FnMut(stack::phy::WholeFrame<'_>, Option<&stack::phy::vnet::VnetHeaderRepr>),
    ) -> bool {
        let result = self.inner.receive_whole(now, take);
        self.update();
        result
    }
    fn transmit_ring(&self) -> Option<usize> {
        self.inner.transmit_ring()
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        self.inner.transmit_complete_at()
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.inner.next_arrival()
    }
    fn received_at(&self) -> Option<Instant> {
        self.inner.received_at()
    }
    fn may_receive(&self, now: Instant) -> bool {
        self.inner.may_receive(now)
    }
    fn flush(&mut self, now: Instant) {
        self.inner.flush(now);
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        self.inner.interface_id()
    }

    fn readable_fd(&self) -> Option<RawFd> {
        self.inner.readable_fd()
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
}

/// Tells a host thread to stop when dropped, also when the test side
/// panics (a scope waits for its threads before it unwinds further).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A pcapng capture kept in memory.
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<u8>>>);

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn host_with(name: &str, interface: InterfaceConfig) -> Host {
    let mut config = HostConfig::new(name, false);
    config.seed = 7;
    Host::new(config, vec![interface], &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// An ICMP Echo Request (type 128 for IPv6, 8 for IPv4, with its checksum:
/// the host fills only ICMPv6's).
fn echo_request(v6: bool, ident: u16, seq: u16, size: usize) -> Vec<u8> {
    let mut message = vec![0u8; 8 + size];
    message[0] = if v6 { 128 } else { 8 };
    message[4..6].copy_from_slice(&ident.to_be_bytes());
    message[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, byte) in message[8..].iter_mut().enumerate() {
        *byte = i as u8;
    }
    if !v6 {
        let sum = wire::checksum::checksum(&message);
        message[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    message
}

/// Echo Replies of identifier `ident` on `socket`, by sequence number.
fn take_replies(host: &mut Host, socket: RawHandle, v6: bool, ident: u16, got: &mut [bool]) {
    let reply = if v6 { 129 } else { 0 };
    let mut header = [0u8; 8];
    while let Some(packet) = host.raw(socket).recv() {
        if packet.payload.copy_out(0, &mut header) < 8 || header[0] != reply {
            continue;
        }
        if u16::from_be_bytes([header[4], header[5]]) != ident {
            continue;
        }
        if let Some(slot) = got.get_mut(usize::from(u16::from_be_bytes([header[6], header[7]]))) {
            *slot = true;
        }
    }
}

/// Pings `target` `count` times from `host` (one request every 50 ms) and
/// returns how many replies came within `limit`.
fn ping_from(
    host: &mut Host,
    clock: &Clock,
    fd: RawFd,
    target: IpAddr,
    count: u16,
    size: usize,
    limit: Duration,
) -> usize {
    let v6 = target.is_ipv6();
    let (family, protocol) = if v6 {
        (RawFamily::Ipv6, IpProtocol::Icmpv6)
    } else {
        (RawFamily::Ipv4, IpProtocol::Icmp)
    };
    let socket = host.raw_open(family, protocol);
    let ident = 0x7a00 | count;
    let mut got = vec![false; usize::from(count)];
    let mut sent = 0u16;
    let mut next_send = clock.now();
    run_until(host, clock, fd, limit, |host, now| {
        if sent < count && now >= next_send {
            host.raw_send_to(socket, &echo_request(v6, ident, sent, size), target, None)
                .unwrap();
            sent += 1;
            next_send = now + Duration::from_millis(50);
        }
        take_replies(host, socket, v6, ident, &mut got);
        got.iter().all(|&g| g)
    });
    got.iter().filter(|&&g| g).count()
}

/// Echoes every datagram waiting on `sockets` back to its sender.
fn serve_udp_echo(host: &mut Host, sockets: &[UdpHandle]) {
    for &socket in sockets {
        while let Some(datagram) = host.udp(socket).recv() {
            let mut data = vec![0u8; datagram.payload.len()];
            datagram.payload.copy_out(0, &mut data);
            let _ = host.udp_send_to(socket, &data, datagram.remote);
        }
    }
}

fn udp_echo_server(host: &mut Host, v6: bool, v4: bool) -> Vec<UdpHandle> {
    let mut sockets = Vec::new();
    for (wanted, any) in [
        (v6, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        (v4, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
    ] {
        if wanted {
            let socket = host.udp_open(UdpConfig::default());
            host.udp_bind(socket, SocketAddr::new(any, 7));
            sockets.push(socket);
        }
    }
    sockets
}

// ----- AF_PACKET -------------------------------------------------------------

/// An Ethernet frame of the local experimental EtherType 0x88B5 from `src`
/// to `dst`, `len` bytes long, its payload starting with `number`.
fn test_frame(dst: EthernetAddress, src: EthernetAddress, number: u32, len: usize) -> Vec<u8> {
    let mut frame = vec![(number % 251) as u8; len];
    frame[..6].copy_from_slice(&dst.0);
    frame[6..12].copy_from_slice(&src.0);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    frame[14..18].copy_from_slice(&number.to_be_bytes());
    frame
}

#[test]
fn a_packet_link_counts_the_frames_the_kernel_dropped_for_it() {
    let Some(ns) = namespaces(2) else { return };
    let (ia, ib) = ns.veth(0, 1, 1500);
    for (index, interface) in [(0, &ia), (1, &ib)] {
        ns.no_ipv6(index, interface);
        ns.ip(index, &["link", "set", interface, "up"]);
    }
    let (mac_a, mac_b) = (ns.mac_of(0, &ia), ns.mac_of(1, &ib));
    let (mut a, mut b) = thread::scope(|scope| {
        scope
            .spawn(|| {
                ns.enter(0).unwrap();
                let a = PacketLink::open(&ia).unwrap();
                ns.enter(1).unwrap();
                // The smallest queue the kernel grants: a few frames.
                let tiny = PacketConfig {
                    socket_buffer_bytes: Some(4096),
                    ..PacketConfig::default()
                };
                (a, PacketLink::open_with(&ib, &tiny).unwrap())
            })
            .join()
            .unwrap()
    });
    // 500 frames before b reads any: most cannot wait in b's queue.
    for number in 0..500 {
        let _ = a.transmit(Instant::ZERO, &[&test_frame(mac_b, mac_a, number, 1000)]);
    }
    a.flush(Instant::ZERO);
    let sent = a.stats().tx_frames;
    let mut buf = vec![0u8; 2048];
    while b.receive(Instant::ZERO, &mut buf).is_some() {}
    let stats = b.stats();
    assert!(stats.dropped_rx_overrun > 0, "{stats:?}");
    assert_eq!(
        stats.rx_frames + stats.dropped_rx_overrun,
        sent,
        "every frame sent was read or counted dropped: {stats:?}"
    );
    // The count is kept across reads (the kernel resets its own).
    assert_eq!(b.stats().dropped_rx_overrun, stats.dropped_rx_overrun);
}

#[test]
fn packet_links_carry_frames_in_batches_and_skip_outgoing_ones() {
    let Some(ns) = namespaces(2) else { return };
    let (ia, ib) = ns.veth(0, 1, 1400);
    for (index, interface) in [(0, &ia), (1, &ib)] {
        // The kernels stay quiet: only our frames cross the veth.
        ns.no_ipv6(index, interface);
        ns.ip(index, &["link", "set", interface, "up"]);
    }
    let (mac_a, mac_b) = (ns.mac_of(0, &ia), ns.mac_of(1, &ib));

    let (a, b, c) = thread::scope(|scope| {
        scope
            .spawn(|| {
                // Each socket stays in the namespace it was opened in.
                ns.enter(0).unwrap();
                let a = PacketLink::open(&ia).unwrap();
                // A second socket on a's interface: another sender there.
                let c = PacketLink::open(&ia).unwrap();
                ns.enter(1).unwrap();
                let b = PacketLink::open(&ib).unwrap();
                (a, b, c)
            })
            .join()
            .unwrap()
    });
    let (mut a, mut b, mut c) = (a, b, c);
    assert_eq!(
        (a.mtu(), b.mtu()),
        (1400, 1400),
        "the MTU is the interface's"
    );
    assert_eq!(
        (a.mac(), b.mac()),
        (mac_a, mac_b),
        "the MAC is the interface's"
    );
    assert_eq!(a.medium(), Medium::Ethernet);
    assert!(a.vnet_header(), "{a:?}");

    // 100 frames from a to b, all sent before b looks.
    let t = Instant::ZERO;
    const FRAMES: u32 = 100;
    for number in 0..FRAMES {
        let frame = test_frame(mac_b, mac_a, number, 60 + number as usize);
        // Scatter-gather: the header and the payload as separate parts.
        a.transmit(t, &[&frame[..14], &frame[14..]]).unwrap();
    }
    // Queued in batches until flushed: the last partial batch goes now.
    a.flush(t);
    let mut buf = vec![0u8; 2048];
    let mut seen = Vec::new();
    for _ in 0..1000 {
        while let Some(len) = b.receive(t, &mut buf) {
            seen.push((len, u32::from_be_bytes(buf[14..18].try_into().unwrap())));
        }
        if seen.len() == FRAMES as usize {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    let expected: Vec<(usize, u32)> = (0..FRAMES).map(|n| (60 + n as usize, n)).collect();
    assert_eq!(seen, expected, "every frame, whole and in order");
    let ring = b.ring_stats();
    assert_eq!(ring.frames, u64::from(FRAMES));
    assert!(
        ring.batches < u64::from(FRAMES) / 4 && ring.largest_batch > 1,
        "several frames per system call: {ring:?}"
    );
    assert_eq!(b.stats().rx_frames, u64::from(FRAMES));
    assert_eq!(a.stats().tx_frames, u64::from(FRAMES));
    assert_eq!(a.stats().tx_bytes, b.stats().rx_bytes);
    assert!(
        a.packet_stats().tx_batches <= u64::from(FRAMES) / 4,
        "several frames per sendmmsg: {:?}",
        a.packet_stats()
    );

    // Nor are frames others send out of a's interface arrivals for a:
    // b gets c's frames, a does not.
    for number in 0..5 {
        c.transmit(t, &[&test_frame(mac_b, mac_a, 1000 + number, 80)])
            .unwrap();
    }
    c.flush(t);
    let mut from_c = Vec::new();
    for _ in 0..1000 {
        while let Some(len) = b.receive(t, &mut buf) {
            from_c.push(u32::from_be_bytes(buf[14..18].try_into().unwrap()));
            assert_eq!(len, 80);
        }
        if from_c.len() == 5 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(from_c, [1000, 1001, 1002, 1003, 1004]);
    // A socket never gets its own frames back either.
    assert_eq!(a.receive(t, &mut buf), None);
    assert_eq!(a.stats().rx_frames, 0);
    assert_eq!(c.receive(t, &mut buf), None);
    assert_eq!(c.stats().rx_frames, 0);
    // Linux 4.20 on keeps them from the socket; before, they come marked
    // outgoing and are skipped.
    let skipped = (a.packet_stats(), c.packet_stats());
    if a.ignores_outgoing() {
        assert_eq!(
            (skipped.0.outgoing_skipped, skipped.1.outgoing_skipped),
            (0, 0)
        );
    } else {
        // a saw c's 5, c saw a's 100.
        assert_eq!(
            (skipped.0.outgoing_skipped, skipped.1.outgoing_skipped),
            (5, 100)
        );
    }

    // Too big for the link: refused at transmit. The largest that fits
    // arrives, but not into a buffer too small for it (dropped, counted).
    let max = 1400 + 14;
    let big = test_frame(mac_a, mac_b, 7, max + 1);
    assert_eq!(
        b.transmit(t, &[&big]),
        Err(LinkError::TooBig { len: max + 1, max })
    );
    assert_eq!(b.stats().dropped_too_big, 1);
    b.transmit(t, &[&big[..max]]).unwrap();
    b.flush(t);
    let mut small = vec![0u8; 100];
    let mut dropped = false;
    for _ in 0..1000 {
        assert_eq!(a.receive(t, &mut small), None);
        if a.stats().dropped_rx_too_long == 1 {
            dropped = true;
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert!(dropped, "{:?}", a.stats());
    assert_eq!(b.receive(t, &mut buf), None, "b does not see its own frame");
    drop(ns);
}

/// What the host thread of the AF_PACKET test saw.
struct PacketReport {
    link: LinkStats,
    packet: PacketStats,
    ring: RingStats,
    captured: usize,
    counters: HostCounters,
    drops: String,
    host_pings: (usize, usize),
}

/// The link counters a packet host's thread copies out.
type PacketWatch = Arc<Mutex<(LinkStats, (PacketStats, RingStats))>>;

/// A veth pair with the kernel's end in namespace 0 (2001:db8:78::1/64,
/// 192.0.2.1/24) and the end the reference host drives in namespace 1
/// (its kernel's IPv6 off, no address): the interface names.
fn kernel_and_host_veth(ns: &Namespaces) -> (String, String) {
    let (kernel_if, host_if) = ns.veth(0, 1, 1500);
    ns.no_ipv6(1, &host_if);
    ns.ip(1, &["link", "set", &host_if, "up"]);
    ns.ip(0, &["addr", "add", "192.0.2.1/24", "dev", &kernel_if]);
    let v6 = [
        "-6",
        "addr",
        "add",
        "2001:db8:78::1/64",
        "dev",
        &kernel_if,
        "nodad",
    ];
    ns.ip(0, &v6);
    ns.ip(0, &["link", "set", &kernel_if, "up"]);
    (kernel_if, host_if)
}

/// The reference host (2001:db8:78::2/64, 192.0.2.2/24, the interface's
/// MAC) on a packet link on `host_if`, opened in the calling thread's
/// namespace, with a capture; the link's socket for waiting on it.
fn packet_host(host_if: &str) -> (Host, RawFd, PacketWatch, Memory) {
    let link = PacketLink::open_with(host_if, &PacketConfig::default()).unwrap();
    let (fd, mac) = (link.as_raw_fd(), link.mac());
    let watched = Arc::new(Mutex::new(Default::default()));
    let link = Watched {
        inner: link,
        read: |l: &PacketLink| (l.packet_stats(), l.ring_stats()),
        out: watched.clone(),
    };
    let capture = Memory::default();
    let link = Captured::new(link, capture.clone(), host_if);
    let host = host_with(
        "ref",
        InterfaceConfig {
            name: host_if.to_string(),
            link: Box::new(link),
            mac,
            ipv4: Some("192.0.2.2/24".parse().unwrap()),
            ipv6: vec!["2001:db8:78::2/64".parse().unwrap()],
            advertise: Vec::new(),
            dad_transmits: Some(0),
        },
    );
    (host, fd, watched, capture)
}

#[test]
fn the_kernel_and_a_reference_host_talk_over_af_packet() {
    let Some(ns) = namespaces(2) else { return };
    let started = std::time::Instant::now();
    let (_, host_if) = kernel_and_host_veth(&ns);

    let stop = AtomicBool::new(false);
    let (ready_tx, ready_rx) = mpsc::channel();
    let report = thread::scope(|scope| {
        let host_thread = scope.spawn(|| {
            ns.enter(1).unwrap();
            let (mut host, fd, watched, capture) = packet_host(&host_if);
            let clock = Clock(std::time::Instant::now());
            let echo = udp_echo_server(&mut host, true, true);
            // The reference host pings the kernel first: it resolves the
            // kernel's address (NS, ARP) itself.
            let limit = Duration::from_secs(3);
            let v6 = ping_from(
                &mut host,
                &clock,
                fd,
                "2001:db8:78::1".parse().unwrap(),
                3,
                56,
                limit,
            );
            let v4 = ping_from(
                &mut host,
                &clock,
                fd,
                "192.0.2.1".parse().unwrap(),
                3,
                56,
                limit,
            );
            ready_tx.send(()).unwrap();
            run_until(&mut host, &clock, fd, Duration::from_secs(20), |host, _| {
                serve_udp_echo(host, &echo);
                stop.load(Ordering::Relaxed)
            });
            let (link, (packet, ring)) = *watched.lock().unwrap();
            let (counters, drops) = (*host.counters(), format!("{:?}", host.drops()));
            // Dropping the host finishes its capture's writer thread.
            drop(host);
            let captured = wire::pcapng::blocks(&capture.0.lock().unwrap())
                .filter(|b| matches!(b, Ok(wire::pcapng::Block::EnhancedPacket(_))))
                .count();
            PacketReport {
                link,
                packet,
                ring,
                captured,
                counters,
                drops,
                host_pings: (v6, v4),
            }
        });
        // Whatever happens on this side, the host thread ends.
        let _stop_host = StopOnDrop(&stop);
        let kernel_side = || -> Result<(), String> {
            ready_rx
                .recv_timeout(Duration::from_secs(10))
                .map_err(|_| "the host thread never became ready".to_string())?;
            // The kernel pings the reference host, both families.
            for target in ["2001:db8:78::2", "192.0.2.2"] {
                let output = run_in(
                    ns.name(0),
                    &["ping", "-c", "3", "-i", "0.2", "-W", "2", target],
                );
                if !output.contains(" 3 received") {
                    return Err(format!("ping {target}: {output}"));
                }
            }
            // UDP from a kernel socket in namespace 0 and back.
            let echoed = thread::scope(|scope| {
                scope
                    .spawn(|| {
                        ns.enter(0).unwrap();
                        let mut echoed = Vec::new();
                        for (local, remote) in [
                            ("[2001:db8:78::1]:0", "[2001:db8:78::2]:7"),
                            ("192.0.2.1:0", "192.0.2.2:7"),
                        ] {
                            let socket = UdpSocket::bind(local).unwrap();
                            socket
                                .set_read_timeout(Some(Duration::from_secs(2)))
                                .unwrap();
                            let message = format!("hello over {remote}");
                            socket.send_to(message.as_bytes(), remote).unwrap();
                            let mut buf = [0u8; 256];
                            let echoed_len = socket.recv(&mut buf).unwrap_or(0);
                            echoed.push(buf[..echoed_len] == *message.as_bytes());
                        }
                        echoed
                    })
                    .join()
                    .unwrap()
            });
            if echoed != [true, true] {
                return Err(format!("UDP echoes (IPv6, IPv4): {echoed:?}"));
            }
            Ok(())
        };
        let outcome = kernel_side();
        stop.store(true, Ordering::Relaxed);
        let report = host_thread.join().unwrap();
        if let Err(why) = outcome {
            panic!(
                "{why}\nhost counters {:?}\ndrops {}\nlink {:?}\n{:?}",
                report.counters, report.drops, report.link, report.packet
            );
        }
        report
    });
    let diag = format!(
        "counters {:?}\ndrops {}\nlink {:?}\n{:?}\n{:?}",
        report.counters, report.drops, report.link, report.packet, report.ring
    );
    assert_eq!(
        report.host_pings,
        (3, 3),
        "the host pings the kernel\n{diag}"
    );
    assert!(report.counters.echo_replies_sent >= 6, "{diag}");
    assert!(
        report.counters.udp_received >= 2 && report.counters.udp_sent >= 2,
        "{diag}"
    );
    assert!(
        report.link.rx_frames >= 12 && report.link.tx_frames >= 12,
        "{diag}"
    );
    assert_eq!(report.link.dropped_rx_too_long, 0, "{diag}");
    // The kernel leaves UDP checksums to veth's "hardware": the link
    // completed them, or the host would have dropped the datagrams.
    assert!(report.packet.checksums_completed >= 2, "{diag}");
    assert!(report.ring.frames >= report.link.rx_frames, "{diag}");
    assert!(report.captured > 0, "the capture holds the frames");
    drop(ns);
    eprintln!("AF_PACKET interop took {:?}", started.elapsed());
}

/// A TCP echo connection of the reference host: what it read and has not
/// yet written back, and whether the peer has finished.
struct Echo {
    conn: TcpHandle,
    pending: Vec<u8>,
    eof: bool,
    shut: bool,
}

/// Accepts connections on `listeners` and echoes what each sends, closing
/// after the peer does.
fn serve_tcp_echo(host: &mut Host, listeners: &[TcpHandle], conns: &mut Vec<Echo>) {
    for &listener in listeners {
        while let Ok(conn) = host.tcp_accept(listener) {
            conns.push(Echo {
                conn,
                pending: Vec::new(),
                eof: false,
                shut: false,
            });
        }
    }
    let mut buf = [0u8; 16384];
    for echo in conns.iter_mut() {
        loop {
            while !echo.pending.is_empty() {
                match host.tcp_send(echo.conn, &echo.pending) {
                    Ok(n) => drop(echo.pending.drain(..n)),
                    Err(_) => break,
                }
            }
            if echo.eof || echo.pending.len() >= 1 << 18 {
                break;
            }
            match host.tcp_recv(echo.conn, &mut buf) {
                Ok(0) => echo.eof = true,
                Ok(n) => echo.pending.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        if echo.eof && echo.pending.is_empty() && !echo.shut {
            let _ = host.tcp_shutdown(echo.conn);
            echo.shut = true;
        }
    }
}

#[test]
fn the_kernel_exchanges_tcp_with_a_reference_host_with_offloads_on() {
    let Some(ns) = namespaces(2) else { return };
    let started = std::time::Instant::now();
    let echo = tcp_echo_with_the_kernel(&ns, Offload::NONE);
    let (link, packet) = (echo.link, echo.packet);
    let diag = format!("link {link:?}\n{packet:?}\n{:?}", echo.ring);
    assert_eq!(
        echo.echoed,
        [true, true],
        "2 MiB echoed over IPv6 and IPv4\n{diag}"
    );
    assert!(packet.gso_frames > 0, "the kernel sent GSO frames: {diag}");
    assert!(packet.gso_segments > packet.gso_frames, "{diag}");
    assert_eq!((packet.gso_dropped, packet.malformed), (0, 0), "{diag}");
    assert_eq!(link.dropped_rx_too_long, 0, "{diag}");
    assert_eq!(packet.gso_sent, 0, "no TSO without the offload: {diag}");
    drop(ns);
    eprintln!("TCP interop took {:?}", started.elapsed());
}

/// The reference host with TSO and GRO on its AF_PACKET interface: what
/// it echoes goes to the kernel as GSO super-frames behind a
/// `virtio_net_hdr` (gso_type TCPV4/TCPV6, NEEDS_CSUM), which the kernel's
/// TCP must take byte for byte; the kernel's GSO frames come to the host
/// whole, as merged segments.
#[test]
fn a_reference_host_sends_gso_frames_to_the_kernel_over_af_packet() {
    let Some(ns) = namespaces(2) else { return };
    let echo = tcp_echo_with_the_kernel(&ns, Offload::ALL);
    let (link, packet) = (echo.link, echo.packet);
    let diag = format!(
        "link {link:?}\n{packet:?}\n{:?}\n{:?}\n{:?}",
        echo.ring, echo.interface, echo.gro
    );
    assert_eq!(
        echo.echoed,
        [true, true],
        "2 MiB echoed over IPv6 and IPv4 with TSO\n{diag}"
    );
    assert!(packet.gso_sent > 20, "super-frames went whole: {diag}");
    assert_eq!(echo.interface.gso_sent, packet.gso_sent, "{diag}");
    assert_eq!(echo.interface.gso_segments, 0, "nothing cut here: {diag}");
    assert_eq!(echo.interface.tx_link_errors, 0, "{diag}");
    // The kernel's GSO frames reach the merging host whole, uncut, as the
    // merged segments GRO would have made of them.
    assert!(packet.gso_frames > 0, "the kernel sent GSO frames: {diag}");
    assert_eq!(packet.gso_segments, 0, "the link cut nothing: {diag}");
    assert!(echo.gro.super_segments >= packet.gso_frames, "{diag}");
    // Each in the receive slot the kernel wrote it to, lent to the host
    // instead of copied; the slots come back as spares, so no more are
    // made than the host holds at once.
    assert_eq!(echo.ring.lent, packet.gso_frames, "{diag}");
    assert!(
        echo.ring.lent > echo.ring.spares_made && echo.ring.spares_made <= DEFAULT_BATCH as u64,
        "{diag}"
    );
    let (seen, right) = echo.super_frames;
    assert!(seen > 20, "the capture holds the super-frames: {seen}");
    assert_eq!(right, seen, "partial checksums that complete right");
    drop(ns);
}

/// The reference host (2001:db8:78::2/64, 192.0.2.2/24) on a TAP
/// `name` with `IFF_VNET_HDR`, made in the calling thread's namespace,
/// whose kernel side (namespace 0) gets 2001:db8:78::1/64 and
/// 192.0.2.1/24, with a capture; as [`packet_host`] returns (no packet
/// link counters).
fn tap_host(ns: &Namespaces, name: &str) -> (Host, RawFd, PacketWatch, Memory) {
    let tap = stack::phy::tap::Tap::open_with(name, 1500, true).unwrap();
    assert!(tap.vnet_header());
    let fd = tap.as_raw_fd();
    ns.ip(0, &["addr", "add", "192.0.2.1/24", "dev", name]);
    ns.ip(
        0,
        &[
            "-6",
            "addr",
            "add",
            "2001:db8:78::1/64",
            "dev",
            name,
            "nodad",
        ],
    );
    ns.ip(0, &["link", "set", name, "up"]);
    let capture = Memory::default();
    let link = Captured::new(tap, capture.clone(), name);
    let host = host_with(
        "ref",
        InterfaceConfig {
            name: name.to_string(),
            link: Box::new(link),
            mac: EthernetAddress([0x02, 0, 0x5e, 0, 0x53, 0x02]),
            ipv4: Some("192.0.2.2/24".parse().unwrap()),
            ipv6: vec!["2001:db8:78::2/64".parse().unwrap()],
            advertise: Vec::new(),
            dad_transmits: Some(0),
        },
    );
    (host, fd, Arc::default(), capture)
}

/// The reference host with TSO and GRO on a TAP with `IFF_VNET_HDR`:
/// its super-frames go to the kernel whole (virtio-net headers), and
/// the kernel's TCP takes them byte for byte.
#[test]
fn a_reference_host_sends_gso_frames_to_the_kernel_over_a_tap() {
    let Some(ns) = namespaces(1) else { return };
    let echo = tcp_echo_over(&ns, Offload::ALL, true);
    let diag = format!("{:?}\n{:?}", echo.interface, echo.gro);
    assert_eq!(echo.echoed, [true, true], "2 MiB echoed over a TAP\n{diag}");
    assert!(
        echo.interface.gso_sent > 20,
        "super-frames went whole: {diag}"
    );
    assert_eq!(echo.interface.gso_segments, 0, "nothing cut here: {diag}");
    assert_eq!(echo.interface.tx_link_errors, 0, "{diag}");
    let (seen, right) = echo.super_frames;
    assert!(seen > 20, "the capture holds the super-frames: {seen}");
    assert_eq!(right, seen, "partial checksums that complete right");
    drop(ns);
}

/// What [`tcp_echo_with_the_kernel`] saw.
struct EchoReport {
    echoed: Vec<bool>,
    link: LinkStats,
    packet: PacketStats,
    ring: RingStats,
    interface: InterfaceCounters,
    gro: GroCounters,
    /// Super-frames captured, and those whose partial checksum completes.
    super_frames: (usize, usize),
}

/// A kernel socket sends 2 MiB to a reference host on AF_PACKET with
/// `offload`, which echoes it, over IPv6 and then IPv4.
fn tcp_echo_with_the_kernel(ns: &Namespaces, offload: Offload) -> EchoReport {
    tcp_echo_over(ns, offload, false)
}

/// [`tcp_echo_with_the_kernel`] over AF_PACKET on a veth, or (`tap`) over
/// a TAP opened with `IFF_VNET_HDR` whose kernel side is in namespace 0.
fn tcp_echo_over(ns: &Namespaces, offload: Offload, tap: bool) -> EchoReport {
    // The kernel's veth keeps its defaults: TSO and checksum offload on,
    // so it sends GSO super-frames with partial checksums.
    let host_if = if tap {
        ns.interface(0)
    } else {
        kernel_and_host_veth(ns).1
    };
    const BYTES: usize = 2 << 20;
    let pattern: Vec<u8> = (0..BYTES).map(|i| (i % 251) as u8).collect();

    let stop = AtomicBool::new(false);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (echoed, ((link, (packet, ring)), interface, gro, super_frames)) = thread::scope(|scope| {
        let host_thread = scope.spawn(|| {
            let (mut host, fd, watched, capture) = if tap {
                ns.enter(0).unwrap();
                tap_host(ns, &host_if)
            } else {
                ns.enter(1).unwrap();
                packet_host(&host_if)
            };
            host.set_offload(InterfaceId(0), offload).unwrap();
            let clock = Clock(std::time::Instant::now());
            let listeners: Vec<TcpHandle> = ["[::]:7", "0.0.0.0:7"]
                .into_iter()
                .map(|at| {
                    host.tcp_listen(
                        at.parse().unwrap(),
                        TcpConfig::default(),
                        ListenerConfig::default(),
                    )
                    .unwrap()
                })
                .collect();
            ready_tx.send(()).unwrap();
            let mut conns = Vec::new();
            run_until(&mut host, &clock, fd, Duration::from_secs(20), |host, _| {
                serve_tcp_echo(host, &listeners, &mut conns);
                stop.load(Ordering::Relaxed)
            });
            let watched = *watched.lock().unwrap();
            let (interface, gro) = (host.interfaces()[0].counters, host.gro_counters());
            // Dropping the host finishes its capture's writer thread.
            drop(host);
            let checked = check_super_frames(&capture.0.lock().unwrap());
            (watched, interface, gro, checked)
        });
        let _stop_host = StopOnDrop(&stop);
        ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        // A kernel socket in namespace 0 sends the pattern (writer thread)
        // and reads the echo (this thread) over each family in turn.
        let echoed: Vec<bool> = ["[2001:db8:78::2]:7", "192.0.2.2:7"]
            .into_iter()
            .map(|to| {
                thread::scope(|inner| {
                    inner
                        .spawn(|| {
                            ns.enter(0).unwrap();
                            let stream = std::net::TcpStream::connect_timeout(
                                &to.parse().unwrap(),
                                Duration::from_secs(3),
                            )
                            .unwrap();
                            stream
                                .set_read_timeout(Some(Duration::from_secs(5)))
                                .unwrap();
                            let mut writer = stream.try_clone().unwrap();
                            let pattern = &pattern;
                            let sender = inner.spawn(move || {
                                use std::io::Write as _;
                                writer.write_all(pattern).unwrap();
                                writer.shutdown(std::net::Shutdown::Write).unwrap();
                            });
                            let mut back = Vec::with_capacity(BYTES);
                            let _ = io::Read::read_to_end(&mut &stream, &mut back);
                            sender.join().unwrap();
                            back == *pattern
                        })
                        .join()
                        .unwrap()
                })
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        (echoed, host_thread.join().unwrap())
    });
    EchoReport {
        echoed,
        link,
        packet,
        ring,
        interface,
        gro,
        super_frames,
    }
}

/// The TCP super-frames (longer than the MTU) a capture holds: how many,
/// and how many of them carry the partial checksum a `virtio_net_hdr`'s
/// NEEDS_CSUM promises (the pseudo-header sum, RFC 9293 §3.1, which the
/// kernel completes: virtio 1.2 §5.1.6.2), found by completing it here.
fn check_super_frames(capture: &[u8]) -> (usize, usize) {
    let (mut seen, mut right) = (0, 0);
    for block in wire::pcapng::blocks(capture).flatten() {
        let wire::pcapng::Block::EnhancedPacket(epb) = block else {
            continue;
        };
        if epb.data.len() <= 1514 {
            continue;
        }
        seen += 1;
        let mut frame = epb.data.to_vec();
        let (l4, src, dst): (usize, IpAddr, IpAddr) = if frame[12..14] == [0x86, 0xdd] {
            let ip = wire::ipv6::Ipv6Packet::new_checked(&frame[14..]).unwrap();
            (54, ip.src_addr().into(), ip.dst_addr().into())
        } else {
            let ip = wire::ipv4::Ipv4Packet::new_checked(&frame[14..]).unwrap();
            (
                14 + ip.header_len(),
                ip.src_addr().into(),
                ip.dst_addr().into(),
            )
        };
        if stack::phy::vnet::complete_checksum(&mut frame, l4, 16) {
            let tcp = wire::tcp::TcpPacket::new_checked(&frame[l4..]).unwrap();
            if tcp.verify_checksum(&src, &dst) {
                right += 1;
            }
        }
    }
    (seen, right)
}

// ----- IPv6 in IPv4 ----------------------------------------------------------

/// What one tunnel host's thread saw.
struct TunnelReport {
    link: LinkStats,
    tunnel: TunnelStats,
    ring: RingStats,
    counters: HostCounters,
    drops: String,
    /// Replies to three pings of the peer's global and link-local
    /// addresses, and whether a small and a fragmented UDP datagram came
    /// back (the pinging side only).
    pings: (usize, usize),
    udp: (bool, bool),
}

const TUNNEL_V4: [Ipv4Addr; 2] = [Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2)];
const TUNNEL_MACS: [EthernetAddress; 2] = [
    EthernetAddress([0x02, 0, 0, 0, 0x79, 1]),
    EthernetAddress([0x02, 0, 0, 0, 0x79, 2]),
];

/// The link counters a tunnel host's thread copies out.
type TunnelWatch = Arc<Mutex<(LinkStats, (TunnelStats, RingStats))>>;

/// The reference host of side `side` on its tunnel end, in its namespace
/// (the calling thread moves there); the tunnel's socket.
fn tunnel_host(ns: &Namespaces, side: usize) -> (Host, RawFd, TunnelWatch) {
    ns.enter(side).unwrap();
    let link = Ipv6InIpv4::open(TUNNEL_V4[side], TUNNEL_V4[1 - side]).unwrap();
    assert_eq!((link.mtu(), link.medium()), (1480, Medium::Ip));
    let fd = link.as_raw_fd();
    let watched = Arc::new(Mutex::new(Default::default()));
    let link = Watched {
        inner: link,
        read: |l: &Ipv6InIpv4| (l.tunnel_stats(), l.ring_stats()),
        out: watched.clone(),
    };
    let host = host_with(
        &format!("tunnel-{side}"),
        InterfaceConfig {
            name: "tun6in4".into(),
            link: Box::new(link),
            mac: TUNNEL_MACS[side],
            ipv4: None,
            ipv6: vec![format!("2001:db8:79::{}/64", side + 1).parse().unwrap()],
            advertise: Vec::new(),
            dad_transmits: Some(0),
        },
    );
    (host, fd, watched)
}

/// A tunnel end's link-local address (RFC 4213 §3.7): fe80:: and the
/// end's IPv4 address as the interface identifier, whatever its MAC.
fn tunnel_link_local(v4: Ipv4Addr) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets[..2].copy_from_slice(&[0xfe, 0x80]);
    octets[12..].copy_from_slice(&v4.octets());
    Ipv6Addr::from(octets)
}

#[test]
fn two_reference_hosts_talk_ipv6_through_an_ipv4_tunnel() {
    let Some(ns) = namespaces(2) else { return };
    let started = std::time::Instant::now();
    let (ia, ib) = ns.veth(0, 1, 1500);
    for (index, interface) in [(0, &ia), (1, &ib)] {
        let addr = format!("{}/24", TUNNEL_V4[index]);
        ns.ip(index, &["addr", "add", &addr, "dev", interface]);
        ns.ip(index, &["link", "set", interface, "up"]);
    }
    // With the sit module loaded, each namespace has a sit0 that claims
    // protocol 41 as well (and may answer with ICMP errors).
    let sit = Command::new("ip")
        .args(["-n", ns.name(0), "link", "show", "sit0"])
        .output()
        .is_ok_and(|o| o.status.success());
    if sit {
        eprintln!("note: the sit module is loaded; sit0 exists in the test namespaces");
    }

    let stop = AtomicBool::new(false);
    // Both tunnel sockets exist before either host sends: a datagram
    // arriving before its socket would get ICMP Protocol Unreachable.
    // (A channel each way, not a barrier: a side that fails drops its
    // sender, and the other goes on.)
    let (a_open, a_opened) = mpsc::channel::<()>();
    let (b_open, b_opened) = mpsc::channel::<()>();
    let both_open = |open: mpsc::Sender<()>, opened: mpsc::Receiver<()>| {
        let _ = open.send(());
        let _ = opened.recv_timeout(Duration::from_secs(10));
    };
    let finish = |host: &Host, watched: &TunnelWatch, pings, udp| {
        let (link, (tunnel, ring)) = *watched.lock().unwrap();
        TunnelReport {
            link,
            tunnel,
            ring,
            counters: *host.counters(),
            drops: format!("{:?}", host.drops()),
            pings,
            udp,
        }
    };
    let (a, b) = thread::scope(|scope| {
        // The threads take the channel ends and share the rest.
        let (ns, finish, both_open, stop) = (&ns, &finish, &both_open, &stop);
        let b = scope.spawn(move || {
            let (mut host, fd, watched) = tunnel_host(ns, 1);
            let clock = Clock(std::time::Instant::now());
            let echo = udp_echo_server(&mut host, true, false);
            both_open(b_open, a_opened);
            run_until(&mut host, &clock, fd, Duration::from_secs(20), |host, _| {
                serve_udp_echo(host, &echo);
                stop.load(Ordering::Relaxed)
            });
            finish(&host, &watched, (0, 0), (false, false))
        });
        let a = scope.spawn(move || {
            let (mut host, fd, watched) = tunnel_host(ns, 0);
            let clock = Clock(std::time::Instant::now());
            both_open(a_open, b_opened);
            let limit = Duration::from_secs(3);
            let peer: Ipv6Addr = "2001:db8:79::2".parse().unwrap();
            let global = ping_from(&mut host, &clock, fd, peer.into(), 3, 56, limit);
            let local = ping_from(
                &mut host,
                &clock,
                fd,
                tunnel_link_local(TUNNEL_V4[1]).into(),
                3,
                56,
                limit,
            );
            // A small datagram, and one of 4000 bytes that IPv6 fragments
            // to the tunnel MTU.
            let socket = host.udp_open(UdpConfig::default());
            let mut udp = [false, false];
            for (index, size) in [16usize, 4000].into_iter().enumerate() {
                let message: Vec<u8> = (0..size).map(|i| (i % 241) as u8).collect();
                host.udp_send_to(socket, &message, SocketAddr::new(peer.into(), 7))
                    .unwrap();
                run_until(&mut host, &clock, fd, limit, |host, _| {
                    if let Some(datagram) = host.udp(socket).recv() {
                        let mut data = vec![0u8; datagram.payload.len()];
                        datagram.payload.copy_out(0, &mut data);
                        udp[index] = data == message;
                        return true;
                    }
                    false
                });
            }
            finish(&host, &watched, (global, local), (udp[0], udp[1]))
        });
        let a = a.join();
        stop.store(true, Ordering::Relaxed);
        (a.unwrap(), b.join().unwrap())
    });
    let diag = |r: &TunnelReport| {
        format!(
            "counters {:?}\ndrops {}\nlink {:?}\n{:?}\n{:?}",
            r.counters, r.drops, r.link, r.tunnel, r.ring
        )
    };
    let both = format!("A:\n{}\nB:\n{}", diag(&a), diag(&b));
    assert_eq!(
        a.pings,
        (3, 3),
        "pings of B's global and link-local addresses\n{both}"
    );
    assert_eq!(
        a.udp,
        (true, true),
        "UDP echoes, small and fragmented\n{both}"
    );
    assert!(a.counters.ipv6_fragments_sent >= 3, "{both}");
    for report in [&a, &b] {
        assert!(
            report.link.rx_frames > 0 && report.link.tx_frames > 0,
            "{both}"
        );
        let t = report.tunnel;
        assert_eq!(
            (
                t.rx_malformed,
                t.rx_wrong_protocol,
                t.rx_wrong_address,
                t.rx_not_ipv6
            ),
            (0, 0, 0, 0),
            "{both}"
        );
        assert_eq!((t.tx_not_ipv6, t.tx_errors), (0, 0), "{both}");
    }
    // The raw socket took every datagram, so neither kernel answered one
    // with Protocol Unreachable (a loaded sit module may send others).
    for side in 0..2 {
        let unreachable = ns.snmp(side, "Icmp", "OutDestUnreachs");
        if sit {
            eprintln!("note: namespace {side} sent {unreachable} ICMP Destination Unreachable");
        } else {
            assert_eq!(unreachable, 0, "namespace {side}");
        }
    }
    drop(ns);
    eprintln!("tunnel interop took {:?}", started.elapsed());
}
