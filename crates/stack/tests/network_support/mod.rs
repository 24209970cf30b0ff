//! Helpers shared by the network tests (`network_v6.rs`, `network_v4.rs`):
//! capture directories checked by tshark, hand-built hosts on virtual
//! wires driven by a virtual clock, and frames built with the `wire` crate
//! for injection.
//!
//! Each test binary uses a different subset of the helpers.
#![allow(dead_code)]

use std::fs::File;
use std::io::BufWriter;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stack::iface::address::modified_eui64;
use stack::iface::host::{Host, HostConfig, HostState, InterfaceConfig, StaticRoute};
use stack::iface::interface::AdvertisedPrefix;
use stack::phy::{CaptureConfig, Captured, Link, VirtualWire, WireConfig, WireEnd};
use stack::runner::Simulator;
use stack::socket::UdpConfig;
use stack::time::Instant;
use stack::topology::{Ipv4Cidr, Ipv6Cidr, Topology};
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::icmpv6::{Icmpv6Packet, Icmpv6Repr};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::ipv6_fragment::{Ipv6FragmentHeader, Ipv6FragmentRepr};
use wire::ndisc::{NdiscOption, NdiscOptions, NdiscRepr};
use wire::udp::{UdpPacket, UdpRepr};

pub mod flood;
pub mod tcp;
pub mod tunnel;
pub mod wiretap;

// ----- Capture directories and the tshark check -----------------------------

/// A fresh directory for one test's captures. Removed on drop when the
/// test passed; kept (and named on stderr) when it panicked or when
/// `STACKSCOPE_KEEP_CAPTURES` is set, to be looked at.
pub struct CaptureDir {
    path: PathBuf,
}

impl CaptureDir {
    pub fn new(test: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "stackscope-network-{test}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create capture directory");
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A link whose frames are written to `NAME.pcapng` here.
    pub fn capture<L: Link + Send + 'static>(&self, link: L, name: &str) -> Box<dyn Link + Send> {
        let file = File::create(self.path.join(format!("{name}.pcapng"))).expect("create capture");
        // Lossless: the tests read every frame back.
        Box::new(Captured::with_config(
            link,
            BufWriter::new(file),
            name,
            CaptureConfig::lossless(),
        ))
    }

    /// The capture files written here, sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.path)
            .expect("read capture directory")
            .map(|entry| entry.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
            .collect();
        files.sort();
        files
    }

    /// Decodes every capture with tshark (checksums validated) and fails on
    /// any malformed packet, bad checksum or expert info of severity Error.
    /// Captures must be complete: drop the simulator or hosts first (their
    /// capture writers flush on drop).
    pub fn check(&self) {
        self.check_with(&[]);
    }

    /// Like [`check`](Self::check), but an `Expert Info (Error/…)` line
    /// containing one of `exempt` is allowed (for captures that carry
    /// deliberately broken traffic). Malformed packets and bad checksums
    /// are never exempt.
    pub fn check_with(&self, exempt: &[&str]) {
        self.check_frames(exempt, None);
    }

    /// Like [`check`](Self::check), for captures of a wire that carries
    /// GSO super-frames whole: a frame longer than `longest_wire_frame` is
    /// one, and its TCP checksum is left partial for the receiver, as on a
    /// veth pair (a capture there shows the same): it is checked for
    /// malformation only.
    pub fn check_with_super_frames(&self, longest_wire_frame: usize) {
        self.check_frames(&[], Some(longest_wire_frame));
    }

    fn check_frames(&self, exempt: &[&str], longest_wire_frame: Option<usize>) {
        let Some(failures) = self.problems_of(exempt, longest_wire_frame) else {
            return;
        };
        assert!(
            failures.is_empty(),
            "tshark found {} problem frame(s):\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// The problem frames tshark reports in the captures here, each
    /// described with its `tshark -V` text; `None` if tshark is missing
    /// (outside CI, where that is an error).
    pub fn problems(&self, exempt: &[&str]) -> Option<Vec<String>> {
        self.problems_of(exempt, None)
    }

    fn problems_of(
        &self,
        exempt: &[&str],
        longest_wire_frame: Option<usize>,
    ) -> Option<Vec<String>> {
        let files = self.files();
        assert!(!files.is_empty(), "no capture in {}", self.path.display());
        for file in &files {
            assert!(
                count_packets(file) > 0,
                "{}: an empty capture (not flushed?)",
                file.display()
            );
        }
        if !tshark_available() {
            let message = "tshark is not installed: the network tests decode their captures \
                           with it (apt-get install tshark; .ci/run installs it)";
            if std::env::var_os("CI").is_some() {
                panic!("{message}");
            }
            eprintln!("SKIPPED tshark check: {message}");
            return None;
        }
        // tshark takes most of a second to start: decode one merge of
        // every capture (interfaces keep their names) when mergecap is
        // there, each capture alone otherwise.
        let merged = self.path.join("all-interfaces.merged");
        let inputs = if files.len() > 1 && merge(&files, &merged) {
            vec![merged]
        } else {
            files
        };
        let mut failures = Vec::new();
        for file in &inputs {
            tshark_problems(file, exempt, longest_wire_frame, &mut failures);
        }
        Some(failures)
    }
}

impl Drop for CaptureDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("STACKSCOPE_KEEP_CAPTURES").is_some() {
            eprintln!("captures kept in {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Packets (Enhanced Packet Blocks) in a pcapng file, counted by walking
/// its blocks.
pub fn count_packets(file: &Path) -> usize {
    let bytes = std::fs::read(file).expect("read capture");
    let mut packets = 0;
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let (kind, len) = (word(at), word(at + 4) as usize);
        assert!(
            len >= 12 && len % 4 == 0,
            "{}: bad block at {at}",
            file.display()
        );
        if kind == 6 {
            packets += 1;
        }
        at += len;
    }
    assert_eq!(at, bytes.len(), "{}: truncated block", file.display());
    packets
}

/// Merges pcapng `files` into `out` with mergecap (which ships with
/// tshark); false if it is missing or fails.
fn merge(files: &[PathBuf], out: &Path) -> bool {
    Command::new("mergecap")
        .arg("-w")
        .arg(out)
        .args(files)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Frames tshark marks malformed, with an error-level expert info, or with
/// a checksum status of Bad. Only those are printed in full: a flood's
/// complete `-V` output runs to tens of megabytes.
const SUSPECT_FILTER: &str = "_ws.malformed || _ws.expert.severity >= \"Error\" \
    || ip.checksum.status == \"Bad\" || udp.checksum.status == \"Bad\" \
    || tcp.checksum.status == \"Bad\" || icmp.checksum.status == \"Bad\" \
    || icmpv6.checksum.status == \"Bad\"";

/// Runs `tshark -V` on `file` with checksum validation on, and appends a
/// description of every frame with a problem — "Malformed", "[Bad" or
/// "Status: Bad", or an `Expert Info (Error` line not exempted — to
/// `failures`.
fn tshark_problems(
    file: &Path,
    exempt: &[&str],
    longest_wire_frame: Option<usize>,
    failures: &mut Vec<String>,
) {
    let filter = match longest_wire_frame {
        // A super-frame's partial checksum is what a veth carries; the
        // test checks its bytes end to end. Only malformed ones are taken.
        Some(max) => format!("frame.len <= {max} && ({SUSPECT_FILTER}) || _ws.malformed"),
        None => SUSPECT_FILTER.to_string(),
    };
    let output = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-o", "ip.check_checksum:TRUE"])
        .args(["-o", "udp.check_checksum:TRUE"])
        .args(["-o", "tcp.check_checksum:TRUE"])
        .args(["-Y", &filter])
        .arg("-V")
        .output()
        .expect("run tshark");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "tshark failed on {}: {stderr}",
        file.display()
    );
    for block in frame_blocks(&stdout) {
        let mut problems = Vec::new();
        if block.contains("Malformed") {
            problems.push("malformed");
        }
        if block.contains("[Bad") || block.contains("Status: Bad") {
            problems.push("bad checksum");
        }
        let unexempted_error = block
            .lines()
            .filter(|line| line.contains("Expert Info (Error"))
            .any(|line| !exempt.iter().any(|e| line.contains(e)));
        if unexempted_error {
            problems.push("expert info error");
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n{block}",
                file.display(),
                problems.join(", ")
            ));
        }
    }
}

/// Splits `tshark -V` output into one text block per frame.
fn frame_blocks(verbose: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = verbose
        .match_indices("\nFrame ")
        .map(|(i, _)| i + 1)
        .collect();
    if verbose.starts_with("Frame ") {
        starts.insert(0, 0);
    }
    let ends = starts.iter().skip(1).copied().chain([verbose.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&s, e)| &verbose[s..e])
        .collect()
}

// ----- Simulated topologies -------------------------------------------------

pub const TWO_ROUTERS: &str = include_str!("../../../../topologies/two-routers.toml");

/// host-a — router — host-b with every interface at MTU 1280 and both
/// wires reordering and duplicating frames.
pub const IMPAIRED_1280: &str = r#"
seed = 5

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
mtu = 1280
ipv4 = "192.0.2.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "192.0.2.1"

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
mtu = 1280
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"

[[router]]
name = "router"
[[router.interface]]
name = "eth0"
mtu = 1280
ipv4 = "192.0.2.1/24"
ipv6 = ["2001:db8:a::1/64"]
[[router.interface.advertise]]
prefix = "2001:db8:a::/64"
[[router.interface]]
name = "eth1"
mtu = 1280
ipv4 = "198.51.100.1/24"
ipv6 = ["2001:db8:b::1/64"]
[[router.interface.advertise]]
prefix = "2001:db8:b::/64"

[[wire]]
a = "host-a:eth0"
b = "router:eth0"
delay = "100us"
reorder = 0.3
reorder_delay = "1ms"
duplicate = 0.2
seed = 1234

[[wire]]
a = "router:eth1"
b = "host-b:eth0"
delay = "100us"
reorder = 0.3
reorder_delay = "1ms"
duplicate = 0.2
seed = 5678
"#;

/// The two-routers topology with MTU 1280 on the r1 — r2 link, the host
/// links keeping 1500.
pub fn two_routers_narrow_middle() -> Topology {
    let text = TWO_ROUTERS
        .replace(
            "name = \"eth1\"\nipv4 = \"203.0.113.1/24\"",
            "name = \"eth1\"\nmtu = 1280\nipv4 = \"203.0.113.1/24\"",
        )
        .replace(
            "name = \"eth0\"\nipv4 = \"203.0.113.2/24\"",
            "name = \"eth0\"\nmtu = 1280\nipv4 = \"203.0.113.2/24\"",
        );
    assert_eq!(
        text.matches("mtu = 1280").count(),
        2,
        "topology edit failed"
    );
    let topology = Topology::from_toml_str(&text).unwrap();
    for (node, interface) in [("r1", "eth1"), ("r2", "eth0")] {
        let mtu = topology
            .node(node)
            .unwrap()
            .interface(interface)
            .unwrap()
            .mtu;
        assert_eq!(mtu, 1280);
    }
    topology
}

/// A recognisable payload of `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

pub fn simulator(topology: &Topology, dir: &CaptureDir) -> Simulator {
    Simulator::new(topology, Some(dir.path())).expect("build the simulated network")
}

pub fn host<'a>(sim: &'a Simulator, name: &str) -> &'a Host {
    sim.host(name)
        .unwrap_or_else(|| panic!("no host {name} in the topology"))
}

/// `name`'s first global IPv6 address (`v6`) or its first IPv4 address.
pub fn address_of(sim: &Simulator, name: &str, v6: bool) -> IpAddr {
    let h = host(sim, name);
    if v6 {
        IpAddr::V6(h.global_ipv6_addresses()[0])
    } else {
        IpAddr::V4(h.ipv4_addresses()[0])
    }
}

pub fn host_mut<'a>(sim: &'a mut Simulator, name: &str) -> &'a mut Host {
    sim.host_mut(name)
        .unwrap_or_else(|| panic!("no host {name} in the topology"))
}

/// Whether `addr` is in `prefix`/64.
pub fn in_prefix64(addr: Ipv6Addr, prefix: Ipv6Addr) -> bool {
    addr.segments()[..4] == prefix.segments()[..4]
}

/// Runs until `name` has a preferred global address in `prefix`/64 (at
/// most 10 s of virtual time) and returns it.
pub fn wait_for_slaac(sim: &mut Simulator, name: &str, prefix: &str) -> Ipv6Addr {
    let prefix: Ipv6Addr = prefix.parse().unwrap();
    let find = |sim: &Simulator| {
        host(sim, name)
            .global_ipv6_addresses()
            .into_iter()
            .find(|a| in_prefix64(*a, prefix))
    };
    sim.run_until_with(Duration::from_secs(10), |sim| find(sim).is_some());
    find(sim).unwrap_or_else(|| {
        panic!(
            "{name} has no address in {prefix}/64 after {:?}:\n{}",
            sim.now(),
            host(sim, name).state(sim.now())
        )
    })
}

/// The link-local address of a MAC (RFC 4291 §2.5.1, modified EUI-64).
pub fn link_local(mac: EthernetAddress) -> Ipv6Addr {
    wire::ipv6::link_local_from_interface_id(modified_eui64(mac.0))
}

/// The address `prefix`/64 plus the MAC's modified EUI-64 (RFC 4862 §5.5.3).
pub fn slaac_of(prefix: Ipv6Addr, mac: EthernetAddress) -> Ipv6Addr {
    let mut octets = prefix.octets();
    octets[8..].copy_from_slice(&modified_eui64(mac.0));
    Ipv6Addr::from(octets)
}

/// A MAC as the state dump prints it, parsed back.
pub fn parse_mac(text: &str) -> EthernetAddress {
    let mut bytes = [0u8; 6];
    let parts: Vec<&str> = text.split(':').collect();
    assert_eq!(parts.len(), 6, "not a MAC: {text}");
    for (byte, part) in bytes.iter_mut().zip(parts) {
        *byte = u8::from_str_radix(part, 16).expect("hex MAC octet");
    }
    EthernetAddress(bytes)
}

/// Opens a UDP socket on `name` bound to the wildcard of `family` and `port`.
pub fn udp_listen(
    sim: &mut Simulator,
    name: &str,
    v6: bool,
    port: u16,
) -> stack::iface::host::UdpHandle {
    let h = host_mut(sim, name);
    let socket = h.udp_open(UdpConfig::default());
    let any = if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    h.udp_bind(socket, SocketAddr::new(any, port));
    socket
}

/// Sends one small datagram from `from` to `to` and back and runs until
/// both arrived, so every neighbour and ARP entry on the path is resolved
/// before a test's real traffic.
pub fn warm_up(sim: &mut Simulator, from: &str, to: &str, to_addr: IpAddr, from_addr: IpAddr) {
    let v6 = to_addr.is_ipv6();
    let there = udp_listen(sim, to, v6, 9);
    let back = udp_listen(sim, from, v6, 9);
    host_mut(sim, from)
        .udp_send_to(back, b"warm up", SocketAddr::new(to_addr, 9))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(5), |sim| {
        host_mut(sim, to).udp(there).recv_queue_len() > 0
    });
    assert!(arrived, "warm-up datagram {from} -> {to} lost");
    host_mut(sim, to)
        .udp_send_to(there, b"warm up", SocketAddr::new(from_addr, 9))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(5), |sim| {
        host_mut(sim, from).udp(back).recv_queue_len() > 0
    });
    assert!(arrived, "warm-up datagram {to} -> {from} lost");
    while host_mut(sim, to).udp(there).recv().is_some() {}
    while host_mut(sim, from).udp(back).recv().is_some() {}
}

/// Every message waiting on a raw socket: (remote, hop limit, bytes).
pub fn drain_raw(
    h: &mut Host,
    socket: stack::iface::host::RawHandle,
) -> Vec<(IpAddr, IpAddr, u8, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(packet) = h.raw(socket).recv() {
        let mut bytes = vec![0; packet.payload.len()];
        packet.payload.copy_out(0, &mut bytes);
        out.push((packet.remote, packet.local, packet.hop_limit, bytes));
    }
    out
}

// ----- Hand-built hosts on a virtual clock ---------------------------------

/// One interface of a hand-built host.
pub struct Iface<'a> {
    pub mac: EthernetAddress,
    pub ipv4: Option<&'a str>,
    pub ipv6: &'a [&'a str],
    pub advertise: &'a [&'a str],
}

impl<'a> Iface<'a> {
    pub fn new(mac: EthernetAddress) -> Self {
        Self {
            mac,
            ipv4: None,
            ipv6: &[],
            advertise: &[],
        }
    }
}

/// A host (or router) with one interface on `link`.
pub fn build_host(
    name: &str,
    router: bool,
    seed: u64,
    link: Box<dyn Link + Send>,
    iface: Iface<'_>,
    routes: &[StaticRoute],
) -> Host {
    let mut config = HostConfig::new(name, router);
    config.seed = seed;
    let ipv6: Vec<Ipv6Cidr> = iface
        .ipv6
        .iter()
        .map(|c| c.parse().expect("IPv6 CIDR"))
        .collect();
    let advertise = iface
        .advertise
        .iter()
        .map(|p| {
            let cidr: Ipv6Cidr = p.parse().expect("IPv6 prefix");
            AdvertisedPrefix {
                prefix: cidr.network(),
                prefix_len: cidr.prefix_len,
                valid_lifetime: 86_400,
                preferred_lifetime: 14_400,
                on_link: true,
                autonomous: true,
            }
        })
        .collect();
    let interface = InterfaceConfig {
        name: "eth0".to_string(),
        link,
        mac: iface.mac,
        ipv4: iface
            .ipv4
            .map(|c| c.parse::<Ipv4Cidr>().expect("IPv4 CIDR")),
        ipv6,
        advertise,
        dad_transmits: None,
    };
    Host::new(config, vec![interface], routes).expect("build host")
}

/// Hand-built hosts polled on a virtual clock, like the simulator, except
/// that a host can be silenced: it is no longer polled (a crashed or
/// unplugged neighbour), its frames pile up unread.
pub struct Lab {
    pub now: Instant,
    pub hosts: Vec<Host>,
    pub silent: Vec<bool>,
}

impl Lab {
    pub fn new(hosts: Vec<Host>) -> Self {
        let silent = vec![false; hosts.len()];
        Self {
            now: Instant::ZERO,
            hosts,
            silent,
        }
    }

    /// Polls every live host with work now until none has.
    pub fn settle(&mut self) {
        for _ in 0..10_000 {
            let mut busy = false;
            for (host, silent) in self.hosts.iter_mut().zip(&self.silent) {
                if !silent && host.next_deadline(self.now).is_some_and(|t| t <= self.now) {
                    host.poll(self.now);
                    busy = true;
                }
            }
            if !busy {
                return;
            }
        }
        panic!("hosts still busy after 10 000 rounds at {:?}", self.now);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.hosts
            .iter()
            .zip(&self.silent)
            .filter(|(_, silent)| !**silent)
            .filter_map(|(h, _)| h.next_deadline(self.now))
            .min()
    }

    /// Runs to `end`, calling `watch` after every instant with work (and
    /// at `end`); stops early, returning true, when `watch` does.
    pub fn run_until(&mut self, end: Instant, mut watch: impl FnMut(&mut Lab) -> bool) -> bool {
        loop {
            self.settle();
            if watch(self) {
                return true;
            }
            match self.next_deadline() {
                Some(next) if next <= end => self.now = next.max(self.now),
                _ => {
                    self.now = end.max(self.now);
                    self.settle();
                    return watch(self);
                }
            }
        }
    }

    pub fn run_for(&mut self, duration: Duration, watch: impl FnMut(&mut Lab) -> bool) -> bool {
        let end = self.now + duration;
        self.run_until(end, watch)
    }

    pub fn state(&self, index: usize) -> HostState {
        self.hosts[index].state(self.now)
    }
}

/// Frames a [`Tap`] saw leave, with the instant they left.
pub type TxLog = Arc<Mutex<Vec<(Instant, Vec<u8>)>>>;

/// A link that records every frame its host transmits, then passes it on.
pub struct Tap<L: Link> {
    inner: L,
    log: TxLog,
}

impl<L: Link> Tap<L> {
    pub fn new(inner: L) -> (Self, TxLog) {
        let log = TxLog::default();
        (
            Self {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

impl<L: Link> Link for Tap<L> {
    fn medium(&self) -> stack::phy::Medium {
        self.inner.medium()
    }

    fn mtu(&self) -> usize {
        self.inner.mtu()
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), stack::phy::LinkError> {
        self.log.lock().unwrap().push((now, parts.concat()));
        self.inner.transmit(now, parts)
    }

    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        self.inner.transmitted(now, parts);
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.inner.receive(now, buf)
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

    fn stats(&self) -> stack::phy::LinkStats {
        self.inner.stats()
    }
}

/// A wire with the default configuration (unimpaired Ethernet, MTU 1500).
pub fn wire_pair() -> (WireEnd, WireEnd) {
    VirtualWire::pair(WireConfig::default()).expect("wire")
}

/// Every frame that has arrived at `end` by `now`.
pub fn receive_all(end: &mut WireEnd, now: Instant) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut buf = vec![0u8; 65_600];
    while let Some(len) = end.receive(now, &mut buf) {
        frames.push(buf[..len].to_vec());
    }
    frames
}

// ----- Frames for injection -------------------------------------------------

/// An Ethernet frame around `payload`.
pub fn ethernet(
    src: EthernetAddress,
    dst: EthernetAddress,
    ethertype: EtherType,
    payload: &[u8],
) -> Vec<u8> {
    let mut frame = vec![0u8; wire::ethernet::HEADER_LEN + payload.len()];
    frame[0..6].copy_from_slice(&dst.0);
    frame[6..12].copy_from_slice(&src.0);
    frame[12..14].copy_from_slice(&u16::from(ethertype).to_be_bytes());
    frame[14..].copy_from_slice(payload);
    frame
}

/// An IPv6 packet: header and `payload` (whose first header is `next`).
pub fn ipv6_packet(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next: IpProtocol,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let repr = Ipv6Repr {
        src,
        traffic_class: 0,
        flow_label: 0,
        dst,
        next_header: next,
        payload_len: payload.len(),
        hop_limit,
    };
    let mut bytes = vec![0u8; wire::ipv6::HEADER_LEN + payload.len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut bytes[..]))
        .expect("emit IPv6 header");
    bytes[wire::ipv6::HEADER_LEN..].copy_from_slice(payload);
    bytes
}

/// A Fragment header followed by `data`.
pub fn fragment6(ident: u32, offset: usize, more: bool, next: IpProtocol, data: &[u8]) -> Vec<u8> {
    let repr = Ipv6FragmentRepr {
        next_header: next,
        frag_offset: offset,
        more_frags: more,
        ident,
    };
    let mut bytes = vec![0u8; wire::ipv6_fragment::HEADER_LEN + data.len()];
    repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut bytes[..]))
        .expect("emit fragment header");
    bytes[wire::ipv6_fragment::HEADER_LEN..].copy_from_slice(data);
    bytes
}

/// A whole UDP datagram (header, payload, checksum) from `src` to `dst`.
pub fn udp_datagram(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
    };
    let mut bytes = vec![0u8; repr.buffer_len(payload.len())];
    repr.emit(
        &mut UdpPacket::new_unchecked(&mut bytes[..]),
        &src.ip(),
        &dst.ip(),
        payload.len(),
        |p| p.copy_from_slice(payload),
        ChecksumMode::Full,
    )
    .expect("emit UDP");
    bytes
}

/// An IPv4 packet (or fragment: `offset` in bytes, `more` the MF flag).
#[allow(clippy::too_many_arguments)]
pub fn ipv4_packet(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: IpProtocol,
    ident: u16,
    offset: u16,
    more: bool,
    ttl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let repr = Ipv4Repr {
        src,
        dst,
        protocol,
        dscp_ecn: 0,
        ident,
        dont_frag: false,
        more_frags: more,
        frag_offset: offset,
        ttl,
        payload_len: payload.len(),
        options: Ipv4Options::EMPTY,
    };
    let header_len = repr.header_len();
    let mut bytes = vec![0u8; header_len + payload.len()];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut bytes[..]),
        ChecksumMode::Full,
    )
    .expect("emit IPv4 header");
    bytes[header_len..].copy_from_slice(payload);
    bytes
}

/// An ICMPv6 message as bytes, checksum filled for `src` → `dst`.
pub fn icmpv6_bytes(repr: &Icmpv6Repr<'_>, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let mut bytes = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut Icmpv6Packet::new_unchecked(&mut bytes[..]),
        &src,
        &dst,
        ChecksumMode::Full,
    )
    .expect("emit ICMPv6");
    bytes
}

/// An ICMPv4 message as bytes, checksum filled.
pub fn icmpv4_bytes(repr: &Icmpv4Repr<'_>) -> Vec<u8> {
    let mut bytes = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut Icmpv4Packet::new_unchecked(&mut bytes[..]),
        ChecksumMode::Full,
    )
    .expect("emit ICMPv4");
    bytes
}

/// An Ethernet frame carrying a Neighbor Solicitation from `src` (with its
/// MAC as source link-layer address) for `target`, sent to `dst_mac`: it
/// teaches the target host our MAC (RFC 4861 §7.2.3), so its replies need
/// no address resolution.
pub fn neighbor_solicitation(
    src_mac: EthernetAddress,
    src: Ipv6Addr,
    dst_mac: EthernetAddress,
    target: Ipv6Addr,
) -> Vec<u8> {
    let slla = [NdiscOption::SourceLinkLayerAddr(src_mac)];
    let repr = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
        target,
        options: NdiscOptions::from_list(&slla),
    });
    let icmp = icmpv6_bytes(&repr, src, target);
    let ip = ipv6_packet(src, target, IpProtocol::Icmpv6, 255, &icmp);
    ethernet(src_mac, dst_mac, EtherType::Ipv6, &ip)
}

/// An Ethernet frame carrying a solicited Neighbor Advertisement for
/// `target` (ours) with our MAC as target link-layer address.
pub fn neighbor_advertisement(
    mac: EthernetAddress,
    target: Ipv6Addr,
    dst_mac: EthernetAddress,
    dst: Ipv6Addr,
) -> Vec<u8> {
    let tlla = [NdiscOption::TargetLinkLayerAddr(mac)];
    let repr = Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
        flags: wire::ndisc::NeighborFlags {
            router: false,
            solicited: true,
            override_: true,
        },
        target,
        options: NdiscOptions::from_list(&tlla),
    });
    let icmp = icmpv6_bytes(&repr, target, dst);
    let ip = ipv6_packet(target, dst, IpProtocol::Icmpv6, 255, &icmp);
    ethernet(mac, dst_mac, EtherType::Ipv6, &ip)
}

/// Plays a neighbour that owns `addr` at `mac`: answers every Neighbor
/// Solicitation for `addr` among `frames` (address resolution or NUD
/// probe) with a solicited advertisement, sent on `peer` at `now`.
pub fn answer_solicitations(
    peer: &mut WireEnd,
    now: Instant,
    frames: &[Vec<u8>],
    mac: EthernetAddress,
    addr: Ipv6Addr,
) {
    for frame in frames {
        let Some((src, _, IpProtocol::Icmpv6, payload)) = parse_ipv6_frame(frame) else {
            continue;
        };
        if payload.len() >= 24 && payload[0] == 135 && payload[8..24] == addr.octets() {
            let src_mac = EthernetAddress::from_bytes(&frame[6..12]).expect("source MAC");
            let answer = neighbor_advertisement(mac, addr, src_mac, src);
            peer.transmit(now, &[&answer]).expect("answer solicitation");
        }
    }
}

/// A parsed IPv6 frame: (src, dst, next header, payload after the header).
pub fn parse_ipv6_frame(frame: &[u8]) -> Option<(Ipv6Addr, Ipv6Addr, IpProtocol, Vec<u8>)> {
    let eth = wire::ethernet::EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
    Some((
        ip.src_addr(),
        ip.dst_addr(),
        ip.next_header(),
        ip.payload().to_vec(),
    ))
}
