//! A reference-stack host attached to links to the operating system: a TAP
//! device it creates, or AF_PACKET on an interface that exists (a veth end,
//! a NIC). Shared by `stackscope host` and `stackscope ttcp --stack ref
//! --link tap|packet`: opening the links, waiting until they are up, the
//! optional pcapng capture, and building the host.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use stack::buffer::PoolConfig;
use stack::iface::host::{Host, HostConfig, InterfaceConfig, StaticRoute};
use stack::phy::packet::{PacketConfig, PacketLink};
use stack::phy::tap::{Tap, TapErrors};
use stack::phy::{Captured, Link};
use stack::topology::{IpCidr, Ipv4Cidr, Ipv6Cidr};
use wire::ethernet::EthernetAddress;

/// What kind of link an interface of the host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkKind {
    /// A TAP device the host creates (`/dev/net/tun`): the kernel sees an
    /// interface of that name on its side, to configure with `ip`.
    Tap,
    /// AF_PACKET on an existing interface (a veth end, a NIC): the host
    /// takes over the interface, using its MAC address.
    Packet,
}

impl LinkKind {
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Tap => "tap",
            LinkKind::Packet => "packet",
        }
    }
}

/// One interface of the host as asked for.
#[derive(Debug, Clone)]
pub struct LinkRequest {
    pub kind: LinkKind,
    /// The TAP to create or the interface to take over.
    pub name: String,
    /// TAP only: the host's MAC (an AF_PACKET link uses the interface's).
    pub mac: EthernetAddress,
    pub ipv4: Option<Ipv4Cidr>,
    pub ipv6: Vec<Ipv6Cidr>,
}

impl LinkRequest {
    /// Gives the interface the address `cidr`, refusing what an interface
    /// cannot have (the flag is --addr).
    pub fn add_address(&mut self, cidr: IpCidr) -> Result<()> {
        let plan = self;
        match cidr {
            IpCidr::V4(cidr) => {
                if let Some(first) = plan.ipv4 {
                    bail!(
                        "--addr {cidr}: {} already has the IPv4 address {first} (one per interface)",
                        plan.name
                    );
                }
                if cidr.prefix_len == 0 || cidr.prefix_len > 30 && cidr.prefix_len != 32 {
                    bail!("--addr {cidr}: an interface's IPv4 prefix length is 1..=30 or 32");
                }
                plan.ipv4 = Some(cidr);
            }
            IpCidr::V6(cidr) => {
                if cidr.address.is_multicast() || cidr.address.is_unspecified() {
                    bail!("--addr {cidr}: not a unicast address");
                }
                if cidr.prefix_len == 0 {
                    bail!("--addr {cidr}: the prefix length must not be 0");
                }
                if plan.ipv6.iter().any(|c| c.address == cidr.address) {
                    bail!("--addr {cidr} is given twice");
                }
                plan.ipv6.push(cidr);
            }
        }
        Ok(())
    }
}

/// An opened link and what the caller keeps of it besides the host's view.
pub struct OpenedLink {
    pub kind: LinkKind,
    pub name: String,
    pub mac: EthernetAddress,
    pub mtu: usize,
    /// TAP only: its I/O errors and whether the device went away.
    pub tap_errors: Option<Arc<TapErrors>>,
    pub capture: Option<PathBuf>,
    /// No IPv6 address given: SLAAC only.
    pub slaac: bool,
    link: OsLink,
    ipv4: Option<Ipv4Cidr>,
    ipv6: Vec<Ipv6Cidr>,
    /// Restores the kernel's IPv6 on a taken-over interface when dropped.
    kernel_ipv6: Option<KernelIpv6Off>,
}

enum OsLink {
    Tap(Box<Tap>),
    Packet(Box<PacketLink>),
}

/// Opens the link `request` asks for. `mtu`: a TAP's (default 1500); for
/// an AF_PACKET link, `None` takes the interface's.
pub fn open(request: &LinkRequest, mtu: Option<usize>, pcap: Option<&Path>) -> Result<OpenedLink> {
    let capture = pcap.map(|dir| dir.join(format!("{}.pcapng", request.name)));
    let slaac = request.ipv6.is_empty();
    let mut opened = match request.kind {
        LinkKind::Tap => {
            let mtu = mtu.unwrap_or(1500);
            let tap =
                Tap::open(&request.name, mtu).map_err(|error| tap_error(&request.name, error))?;
            OpenedLink {
                kind: LinkKind::Tap,
                name: tap.name().to_string(),
                mac: request.mac,
                mtu,
                tap_errors: Some(tap.errors()),
                capture,
                slaac,
                link: OsLink::Tap(Box::new(tap)),
                ipv4: request.ipv4,
                ipv6: request.ipv6.clone(),
                kernel_ipv6: None,
            }
        }
        LinkKind::Packet => {
            let config = PacketConfig {
                mtu,
                ..PacketConfig::default()
            };
            let link = PacketLink::open_with(&request.name, &config).map_err(|error| {
                // The hint only where it helps: refused, and not root.
                let hint = if error.kind() == io::ErrorKind::PermissionDenied
                    && !traffic::kernel::netns::is_root()
                {
                    " (run as root: AF_PACKET needs CAP_NET_RAW)"
                } else {
                    ""
                };
                anyhow::anyhow!("--packet {}: {error}{hint}", request.name)
            })?;
            OpenedLink {
                kind: LinkKind::Packet,
                name: request.name.clone(),
                mac: link.mac(),
                mtu: link.mtu(),
                tap_errors: None,
                capture,
                slaac,
                link: OsLink::Packet(Box::new(link)),
                ipv4: request.ipv4,
                ipv6: request.ipv6.clone(),
                kernel_ipv6: None,
            }
        }
    };
    if opened.kind == LinkKind::Packet {
        opened.kernel_ipv6 = KernelIpv6Off::on(&opened.name)?;
    }
    Ok(opened)
}

impl OpenedLink {
    /// Whether the interface is up on the kernel's side (frames pass).
    pub fn is_up(&self) -> io::Result<bool> {
        match &self.link {
            OsLink::Tap(tap) => tap.is_up(),
            OsLink::Packet(link) => link.is_up(),
        }
    }

    /// The host's interface (the link, captured if asked), and the kernel
    /// setting to restore when the host is gone.
    fn into_interface(
        self,
        dad_transmits: u32,
    ) -> Result<(InterfaceConfig, Option<KernelIpv6Off>)> {
        let link: Box<dyn Link + Send> = match (self.link, &self.capture) {
            (OsLink::Tap(tap), Some(path)) => {
                Box::new(Captured::new(*tap, capture(path)?, &self.name))
            }
            (OsLink::Packet(p), Some(path)) => {
                Box::new(Captured::new(*p, capture(path)?, &self.name))
            }
            (OsLink::Tap(tap), None) => tap,
            (OsLink::Packet(p), None) => p,
        };
        let interface = InterfaceConfig {
            name: self.name,
            link,
            mac: self.mac,
            ipv4: self.ipv4,
            ipv6: self.ipv6,
            advertise: Vec::new(),
            dad_transmits: Some(dad_transmits),
        };
        Ok((interface, self.kernel_ipv6))
    }

    fn readable_fd(&self) -> i32 {
        match &self.link {
            OsLink::Tap(tap) => tap.as_raw_fd(),
            OsLink::Packet(p) => p.as_raw_fd(),
        }
    }
}

fn capture(path: &Path) -> Result<PeriodicFlush> {
    let file =
        File::create(path).with_context(|| format!("--pcap: creating {}", path.display()))?;
    Ok(PeriodicFlush::new(file))
}

/// Waits until every link is up on the kernel's side, saying once which
/// ones it waits for (`how_to_stop` is polled: `Some` ends the wait).
pub fn wait_until_up<T>(
    links: &[OpenedLink],
    netns: Option<&str>,
    mut how_to_stop: impl FnMut() -> Option<T>,
) -> Result<Option<T>> {
    let mut said = false;
    loop {
        if let Some(stop) = how_to_stop() {
            return Ok(Some(stop));
        }
        let mut down = Vec::new();
        for link in links {
            let up = link
                .is_up()
                .with_context(|| format!("{}: reading its flags", link.name))?;
            if !up {
                down.push(link.name.as_str());
            }
        }
        if down.is_empty() {
            return Ok(None);
        }
        if !said {
            said = true;
            let ip = match netns {
                Some(ns) => format!("ip -n {ns}"),
                None => "ip".to_string(),
            };
            let mut out = io::stdout().lock();
            for name in down {
                let _ = writeln!(
                    out,
                    "waiting for {name} to be up on the kernel's side (`{ip} link set {name} up`)"
                );
            }
            let _ = out.flush();
        }
        // Wake on a frame too, though none passes a down link.
        let fds: Vec<i32> = links.iter().map(OpenedLink::readable_fd).collect();
        stack::runner::realtime::wait_readable(&fds, Duration::from_millis(10));
    }
}

/// Kernel settings changed for the host's sake, restored when dropped
/// (after the host: keep it as long as the host runs).
pub struct KernelSettings {
    _ipv6_off: Vec<KernelIpv6Off>,
}

/// Builds the host `name` on `links`.
pub fn build_host(
    name: &str,
    links: Vec<OpenedLink>,
    dad_transmits: u32,
    routes: &[StaticRoute],
) -> Result<(Host, KernelSettings)> {
    let mtu = links.iter().map(|l| l.mtu).max().unwrap_or(1500);
    let mut interfaces = Vec::with_capacity(links.len());
    let mut ipv6_off = Vec::new();
    for link in links {
        let (interface, setting) = link.into_interface(dad_transmits)?;
        interfaces.push(interface);
        ipv6_off.extend(setting);
    }
    let mut config = HostConfig::new(name, false);
    config.pool = PoolConfig::for_mtu(mtu);
    config.seed = stack::random::os_seed();
    let host = Host::new(config, interfaces, routes).context("building the host")?;
    Ok((
        host,
        KernelSettings {
            _ipv6_off: ipv6_off,
        },
    ))
}

/// The error of a TAP that could not be opened, with what to do. (The
/// error names the TAP already.)
fn tap_error(name: &str, error: io::Error) -> anyhow::Error {
    match error.kind() {
        io::ErrorKind::PermissionDenied
            if error.to_string().contains("TUNSETIFF") && !traffic::kernel::netns::is_root() =>
        {
            anyhow::anyhow!(
                "{error}\n  run as root, or use a persistent TAP you own: \
             `sudo ip tuntap add {name} mode tap user $USER`"
            )
        }
        _ => anyhow::anyhow!("{error}"),
    }
}

/// The kernel's IPv6 turned off on an interface the host takes over with
/// AF_PACKET: both use the interface's MAC, so the kernel's link-local
/// address would be the host's (the same EUI-64 interface identifier,
/// RFC 4291 §2.5.1) and fail the host's DAD, and the kernel would answer
/// neighbour solicitations meant for the host. Restored when dropped.
struct KernelIpv6Off {
    path: PathBuf,
    previous: String,
}

impl KernelIpv6Off {
    fn on(interface: &str) -> Result<Option<Self>> {
        let path = PathBuf::from(format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"));
        let Ok(previous) = std::fs::read_to_string(&path) else {
            return Ok(None); // no IPv6 in this kernel
        };
        let previous = previous.trim().to_string();
        if previous == "1" {
            return Ok(None);
        }
        std::fs::write(&path, "1").with_context(|| {
            format!(
                "--packet {interface}: turning the kernel's IPv6 off on it ({}) so that its \
                 link-local address does not collide with the host's",
                path.display()
            )
        })?;
        // stderr: stdout may be a JSON report.
        eprintln!(
            "kernel IPv6 off on {interface} while the host runs (sysctl net.ipv6.conf.{interface}.disable_ipv6=1)"
        );
        Ok(Some(Self { path, previous }))
    }
}

impl Drop for KernelIpv6Off {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.previous);
    }
}

/// A capture file's writer: buffered, and flushed at least every second
/// while frames keep coming, so a capture can be read while the host runs.
struct PeriodicFlush {
    inner: BufWriter<File>,
    last_flush: std::time::Instant,
}

impl PeriodicFlush {
    fn new(file: File) -> Self {
        Self {
            inner: BufWriter::new(file),
            last_flush: std::time::Instant::now(),
        }
    }
}

impl Write for PeriodicFlush {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        if self.last_flush.elapsed() >= Duration::from_secs(1) {
            self.last_flush = std::time::Instant::now();
            self.inner.flush()?;
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
