//! `stackscope ttcp`: ttcp's transmit/receive test with its flags, on the
//! kernel's stack or the reference stack, reported like iperf3.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use stack::topology::{derived_mac, IpCidr};
use traffic::congestion::Congestion;
use traffic::kernel::KernelPath;
use traffic::report::TransferReport;
use traffic::run::Target;
use traffic::run::{KernelPeer, OneEnd, PeerLink, RefEnd};
use traffic::spec::{Family, Protocol, TransferSpec};
use traffic::units;

use crate::attach::{self, LinkKind, LinkRequest};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StackArg {
    /// The operating system's sockets.
    Kernel,
    /// stackscope's reference stack: both ends as two hosts of a
    /// simulated network, each on its own thread (--pair), or one end
    /// attached to a link to the operating system (--link).
    Ref,
}

/// Which end of a `--pair --link packet` transfer the reference stack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RefEndArg {
    /// kernel -> reference stack.
    Receiver,
    /// reference stack -> kernel.
    Sender,
}

impl From<RefEndArg> for RefEnd {
    fn from(end: RefEndArg) -> Self {
        match end {
            RefEndArg::Receiver => RefEnd::Receiver,
            RefEndArg::Sender => RefEnd::Sender,
        }
    }
}

#[derive(Debug, Args)]
pub struct TtcpArgs {
    /// Transmit: connect to HOST and send.
    #[arg(short = 't', conflicts_with_all = ["receive", "pair"], requires = "host")]
    transmit: bool,
    /// Receive: wait for one transfer and check it.
    #[arg(short = 'r', conflicts_with = "pair")]
    receive: bool,
    /// Run both ends in this process (a thread each).
    #[arg(long)]
    pair: bool,
    /// Bytes per write; for UDP and raw, the datagram size. Default 8192
    /// (ttcp's), or 1500 for raw frames (one full Ethernet payload: a raw
    /// frame cannot be fragmented).
    #[arg(short = 'l', value_name = "LEN", value_parser = parse_size)]
    len: Option<u64>,
    /// Number of writes (buffers or datagrams); 2048 unless --time is
    /// given alone.
    #[arg(short = 'n', value_name = "NBUF")]
    count: Option<u64>,
    /// Run for SECONDS: the sender goes on until its window (first write
    /// to the last byte acknowledged, TCP; to the last datagram handed to
    /// the stack, UDP and raw) lasts this long, and also makes -n writes
    /// when -n is given. iperf3's -t (here -t is ttcp's "transmit").
    #[arg(long = "time", value_name = "SECONDS")]
    time: Option<f64>,
    /// UDP instead of TCP: sequence-numbered datagrams between start and
    /// end sentinels; loss, duplication and reordering are counted.
    #[arg(short = 'u', conflicts_with_all = ["raw", "xtp"])]
    udp: bool,
    /// Raw link-level frames of Ethertype 0x88B5 (AF_PACKET on a veth pair
    /// with --netns, or the reference stack's link layer).
    #[arg(long, conflicts_with = "xtp")]
    raw: bool,
    /// XTP instead of TCP: an XTP association (connection service,
    /// selective retransmission, implicit setup) over IPv6 or IPv4, the
    /// XTP study's protocol; the reference stack only (--stack ref).
    #[arg(long)]
    xtp: bool,
    #[command(flatten)]
    xtp_options: crate::xtp_args::XtpArgs,
    /// Port the receiver listens on (1-65535; 0 would let the system pick
    /// one the sender cannot know).
    #[arg(short = 'p', value_name = "PORT", default_value_t = 5001,
          value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Socket buffer size (SO_SNDBUF and SO_RCVBUF), e.g. 64K; the
    /// granted size is reported.
    #[arg(short = 'b', value_name = "BYTES", value_parser = parse_size)]
    sockbuf: Option<u64>,
    /// Set TCP_NODELAY (no Nagle).
    #[arg(short = 'D')]
    nodelay: bool,
    /// TCP's congestion control at both ends, by its Linux name, as
    /// iperf3's -C (e.g. cubic, reno, bbr). The kernel sets it on each
    /// socket (TCP_CONGESTION) and refuses one it does not offer, saying
    /// which it does (/proc/sys/net/ipv4/tcp_available_congestion_control);
    /// the reference stack has cubic and reno (NewReno; `newreno` too).
    /// The report's congestion control is what the sender's socket runs,
    /// read back. Default: the system's default for the kernel
    /// (sysctl net.ipv4.tcp_congestion_control), CUBIC for the reference
    /// stack; give it to compare the two on one algorithm.
    #[arg(short = 'C', long = "congestion", value_name = "NAME",
          value_parser = parse_congestion)]
    congestion: Option<Congestion>,
    /// IPv4.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 (the default).
    #[arg(short = '6')]
    ipv6: bool,
    /// Which stack carries the traffic.
    #[arg(long, value_enum, default_value = "kernel")]
    stack: StackArg,
    /// --stack ref, one end on a link to the operating system, the other
    /// the kernel's stack (or anything else). With -t or -r: a reference
    /// host on --iface runs that end; `tap` creates the TAP --iface
    /// (configure the kernel's side with `ip`), `packet` takes over the
    /// existing interface --iface (a veth end, a NIC) with AF_PACKET, using
    /// its MAC, the kernel's IPv6 turned off on it meanwhile; run it in a
    /// namespace with `ip netns exec NS stackscope ttcp ...`. With --pair:
    /// both ends here, the kernel at one end and the reference stack at the
    /// other (--ref-end), over a path the tool makes (MTU --mtu): `packet`
    /// a veth pair between two namespaces (the same path as `--stack kernel
    /// --pair --netns`), `tap` a TAP in a namespace whose kernel side is
    /// the kernel's end. Needs root.
    #[arg(long, value_enum, value_name = "KIND")]
    link: Option<LinkKind>,
    /// --link with --pair: which end the reference stack is (the kernel is
    /// the other).
    #[arg(
        long,
        value_enum,
        value_name = "END",
        default_value = "receiver",
        requires = "link"
    )]
    ref_end: RefEndArg,
    /// --link with -t/-r: the TAP to create or the interface to take over.
    #[arg(long, value_name = "NAME", requires = "link")]
    iface: Option<String>,
    /// --link: an address of the reference host with its prefix length
    /// (repeatable; IPv6 and one IPv4). Without an IPv6 address the host
    /// configures one from Router Advertisements (SLAAC).
    #[arg(long = "addr", value_name = "ADDR/LEN", requires = "link")]
    addrs: Vec<IpCidr>,
    /// --link: Duplicate Address Detection probes per IPv6 address (RFC
    /// 4862); 0 makes addresses usable at once.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "link",
          value_parser = clap::value_parser!(u32).range(0..=10))]
    dad_transmits: u32,
    /// --link: write a pcapng capture of the host's interface into DIR.
    #[arg(long, value_name = "DIR", requires = "link")]
    pcap: Option<PathBuf>,
    /// Kernel, --pair: run across a veth pair between two network
    /// namespaces the tool makes and removes (root only), instead of
    /// loopback.
    #[arg(long)]
    netns: bool,
    /// MTU of the veth pair (--netns) or of the TAP (--link tap);
    /// --link packet keeps the interface's.
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Pace UDP or raw datagrams to this many bits per second (offered
    /// load), e.g. 100M.
    #[arg(long, value_name = "BPS", value_parser = parse_rate)]
    rate: Option<u64>,
    /// Report every SECS seconds while running.
    #[arg(short = 'i', value_name = "SECS")]
    interval: Option<f64>,
    /// Give up after SECS seconds waiting for the peer or for data.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Reference stack: topology file (default: host-a — router — host-b;
    /// the transfer runs from the first host to the last). Its interfaces
    /// may turn on offloads: `offload = ["tso", "gro"]`
    /// (topologies/unlimited-offload.toml).
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// --pair --link: segmentation and receive offload on the reference
    /// host's interface, as `ethtool -K` (`tso`, `gro`, comma-separated;
    /// default none). TSO hands 64 KiB TCP super-frames to the kernel
    /// with virtio-net headers (a TAP is then opened with IFF_VNET_HDR);
    /// GRO merges in-order segments before IP input.
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "link")]
    offload: Vec<String>,
    /// Print the iperf3-shaped JSON report.
    #[arg(long)]
    json: bool,
    /// -t: the receiver's address. -r: the address to receive on
    /// (default: any).
    host: Option<IpAddr>,
}

fn parse_size(text: &str) -> Result<u64, String> {
    units::parse_size(text)
}

fn parse_rate(text: &str) -> Result<u64, String> {
    units::parse_rate(text)
}

pub(crate) fn parse_congestion(text: &str) -> Result<Congestion, String> {
    Congestion::parse(text).map_err(|e| e.to_string())
}

impl TtcpArgs {
    /// The offloads `--offload` names.
    fn offload(&self) -> Result<stack::iface::offload::Offload> {
        stack::iface::offload::Offload::parse(&self.offload)
            .map_err(|e| anyhow::anyhow!("--offload: {e}"))
    }

    fn spec(&self) -> Result<TransferSpec> {
        let protocol = match (self.udp, self.raw, self.xtp) {
            (true, _, _) => Protocol::Udp,
            (_, true, _) => Protocol::Raw,
            (_, _, true) => Protocol::Xtp,
            _ => Protocol::Tcp,
        };
        let family = match self.host {
            Some(IpAddr::V4(_)) => Family::V4,
            Some(IpAddr::V6(_)) => Family::V6,
            None if self.ipv4 => Family::V4,
            None => Family::V6,
        };
        if self.host.is_some()
            && (self.ipv4 && family == Family::V6 || self.ipv6 && family == Family::V4)
        {
            bail!("-4/-6 contradicts the address given: drop the flag or change the address");
        }
        let seconds = |s: f64, flag: &str| {
            if s.is_finite() && s > 0.0 && s <= 86_400.0 {
                Ok(Duration::from_secs_f64(s))
            } else {
                bail!("{flag} {s} is impossible: use a number of seconds above 0 and at most a day")
            }
        };
        let mut spec = TransferSpec::new(protocol, family);
        let len = self.len.unwrap_or(match protocol {
            Protocol::Raw => 1500,
            _ => 8192,
        });
        spec.len = usize::try_from(len).unwrap_or(usize::MAX);
        // ttcp's 2048 writes, unless the run is timed: then the time alone
        // unless -n says how many at least.
        spec.count = self
            .count
            .unwrap_or(if self.time.is_some() { 1 } else { 2048 });
        spec.min_duration = self.time.map(|t| seconds(t, "--time")).transpose()?;
        spec.port = self.port;
        spec.sockbuf = self
            .sockbuf
            .map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        spec.nodelay = self.nodelay;
        spec.congestion = self.congestion;
        spec.rate_bps = self.rate;
        spec.interval = self.interval.map(|i| seconds(i, "-i")).transpose()?;
        spec.timeout = seconds(self.timeout, "--timeout")?;
        spec.xtp = self.xtp_options.options()?;
        spec.validate()?;
        Ok(spec)
    }
}

pub fn run(args: &TtcpArgs) -> Result<()> {
    let spec = args.spec()?;
    let print_intervals = !args.json;
    let report = match args.stack {
        StackArg::Kernel => {
            if args.link.is_some() {
                bail!("--link attaches the reference stack: use it with --stack ref");
            }
            if args.topology.is_some() {
                bail!("--topology is for --stack ref");
            }
            if args.netns && !args.pair {
                bail!("--netns makes both ends' namespaces: use it with --pair");
            }
            if args.pair {
                if args.host.is_some() {
                    bail!("--pair runs both ends here: drop the address");
                }
                let path = if args.netns {
                    KernelPath::Netns { mtu: args.mtu }
                } else {
                    KernelPath::Loopback
                };
                traffic::run::pair(&spec, &Target::Kernel(path), print_intervals)?
            } else if args.transmit {
                let host = args.host.expect("clap requires HOST with -t");
                traffic::run::one_kernel_end(
                    &spec,
                    OneEnd::Transmit(host),
                    spec.family.unspecified(),
                    print_intervals,
                )?
            } else if args.receive {
                traffic::run::one_kernel_end(
                    &spec,
                    OneEnd::Receive,
                    args.host.unwrap_or(spec.family.unspecified()),
                    print_intervals,
                )?
            } else {
                bail!("say what to do: -t HOST (transmit), -r (receive) or --pair (both here)");
            }
        }
        StackArg::Ref if args.link.is_some() => attached(args, &spec, print_intervals)?,
        StackArg::Ref => {
            if !args.pair {
                bail!(
                    "the reference stack runs both ends in this process (--pair), or one end \
                     attached to a link to the kernel (--link tap|packet --iface NAME with -t \
                     or -r)"
                );
            }
            if args.netns {
                bail!("--netns is for --stack kernel; the reference stack has its own network");
            }
            traffic::run::pair(
                &spec,
                &Target::Reference(args.topology.clone()),
                print_intervals,
            )?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report);
    }
    if !report.is_clean() {
        bail!("the receiver found damaged, duplicated or missing data (see the report)");
    }
    let impossible = report.impossible();
    if !impossible.is_empty() {
        // A figure that cannot be is a bug in the measurement, not a result.
        bail!(
            "{} (a measurement bug: please report it)",
            impossible.join("; ")
        );
    }
    Ok(())
}

/// `--stack ref --link KIND --iface NAME`: one end on a reference host
/// attached to a link to the operating system.
fn attached(args: &TtcpArgs, spec: &TransferSpec, print_intervals: bool) -> Result<TransferReport> {
    if args.netns || args.topology.is_some() {
        bail!("--link makes its own path: drop --netns and --topology");
    }
    if args.pair {
        if args.iface.is_some() || !args.addrs.is_empty() || args.pcap.is_some() {
            bail!("--pair makes its own path and addresses: drop --iface, --addr and --pcap");
        }
        let peer = KernelPeer {
            link: match args.link {
                Some(LinkKind::Tap) => PeerLink::Tap,
                _ => PeerLink::Packet,
            },
            mtu: args.mtu,
            ref_end: args.ref_end.into(),
            offload: args.offload()?,
        };
        return Ok(traffic::run::pair(
            spec,
            &Target::Cross(peer),
            print_intervals,
        )?);
    }
    if !args.offload.is_empty() {
        bail!("--offload is for --pair --link (a topology file says it per interface)");
    }
    let (Some(kind), Some(iface)) = (args.link, args.iface.as_deref()) else {
        bail!("--link with -t or -r needs --iface NAME (the TAP to create or the interface to take over)");
    };
    let role = if args.transmit {
        OneEnd::Transmit(args.host.expect("clap requires HOST with -t"))
    } else if args.receive {
        if args.host.is_some() {
            bail!("-r with --link receives on the host's own addresses: give them with --addr");
        }
        OneEnd::Receive
    } else {
        bail!("say which end runs here: -t HOST (transmit) or -r (receive)");
    };
    let (mut host, kernel_settings, path) = attach_host(
        "stackscope-ttcp",
        kind,
        iface,
        &args.addrs,
        args.dad_transmits,
        args.pcap.as_deref(),
        args.mtu,
        spec.timeout,
    )?;
    let report = traffic::run::attached(spec, &mut host, role, path, print_intervals)?;
    drop(host);
    drop(kernel_settings);
    Ok(report)
}

/// A reference host on a link to the operating system: the TAP `iface`
/// made (MTU `mtu`) or the interface `iface` taken over with AF_PACKET,
/// with `addrs` (else SLAAC), once the link is up (within `timeout`).
/// Also what the run's report says the path is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attach_host(
    name: &str,
    kind: LinkKind,
    iface: &str,
    addrs: &[IpCidr],
    dad_transmits: u32,
    pcap: Option<&std::path::Path>,
    mtu: u32,
    timeout: Duration,
) -> Result<(stack::iface::host::Host, attach::KernelSettings, String)> {
    let mut request = LinkRequest {
        kind,
        name: iface.to_string(),
        mac: derived_mac(name, iface),
        ipv4: None,
        ipv6: Vec::new(),
    };
    for cidr in addrs {
        request.add_address(*cidr)?;
    }
    if let Some(dir) = pcap {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--pcap: creating {}", dir.display()))?;
    }
    let mtu = (kind == LinkKind::Tap).then_some(mtu as usize);
    let link = attach::open(&request, mtu, pcap)?;
    let path = format!(
        "reference stack on {} {} (mac {}, mtu {})",
        match kind {
            LinkKind::Tap => "TAP",
            LinkKind::Packet => "AF_PACKET",
        },
        link.name,
        link.mac,
        link.mtu
    );
    let began = std::time::Instant::now();
    let links = [link];
    if attach::wait_until_up(&links, None, || (began.elapsed() > timeout).then_some(()))?.is_some()
    {
        bail!(
            "{iface} was not up after {:.0} s (--timeout)",
            timeout.as_secs_f64()
        );
    }
    let [link] = links;
    let (host, kernel_settings) = attach::build_host(name, vec![link], dad_transmits, &[])?;
    Ok((host, kernel_settings, path))
}

/// ttcp's closing lines, one per side, and what it ran on.
fn print_human(report: &TransferReport) {
    let end = &report.end;
    let cpu = &end.cpu_utilization_percent;
    if let Some(sent) = &end.sum_sent {
        let mut what = match sent.packets {
            Some(p) => format!("{p} datagrams"),
            // Whole writes, which --time may have made more of than -n.
            None => format!(
                "{} writes",
                sent.bytes
                    .div_ceil(report.start.test_start.len.max(1) as u64)
            ),
        };
        if let Some(r) = sent.retransmits {
            let unit = match report.start.test_start.protocol {
                Protocol::Xtp => "packets",
                _ => "segments",
            };
            what.push_str(&format!(", {r} retransmitted {unit}"));
        }
        println!(
            "ttcp-t: {} bytes in {:.3} s = {}, {what}, cpu {:.0}% (user {:.0}%, sys {:.0}%)",
            sent.bytes,
            sent.seconds,
            units::bits_per_second(sent.bits_per_second),
            cpu.host_total,
            cpu.host_user,
            cpu.host_system
        );
    }
    if let Some(received) = &end.sum_received {
        let checks = if let Some(d) = &received.datagrams {
            format!(
                "{} datagrams, {} lost ({:.2}%), {} out of order, {} duplicated, {} corrupted",
                d.packets,
                d.lost_packets,
                d.lost_percent,
                d.out_of_order,
                d.duplicated,
                d.corrupted
            )
        } else if let Some(s) = &received.stream {
            if s.is_clean() {
                "byte-exact".to_string()
            } else {
                format!(
                    "{} corrupted, {} missing, {} duplicated bytes, {} reorderings",
                    s.corrupted_bytes, s.missing_bytes, s.duplicated_bytes, s.reordered
                )
            }
        } else {
            String::new()
        };
        let (total, user, system) = match cpu.host_role {
            "receiver" => (
                Some(cpu.host_total),
                Some(cpu.host_user),
                Some(cpu.host_system),
            ),
            _ => (cpu.remote_total, cpu.remote_user, cpu.remote_system),
        };
        let cpu_text = match (total, user, system) {
            (Some(t), Some(u), Some(s)) => format!(", cpu {t:.0}% (user {u:.0}%, sys {s:.0}%)"),
            _ => String::new(),
        };
        println!(
            "ttcp-r: {} bytes in {:.3} s = {}, {checks}{cpu_text}",
            received.bytes,
            received.seconds,
            units::bits_per_second(received.bits_per_second),
        );
        let places = received
            .datagrams
            .as_ref()
            .and_then(|d| d.lost_where.as_ref().filter(|_| d.lost_packets > 0));
        if let Some(places) = places {
            println!(
                "ttcp-r: lost where: {}",
                traffic::sweep::columns::places_text(places)
            );
        }
    }
    if let Some(wait) = cpu.runner_wait {
        println!(
            "cpu: the reference stack's runner waits {wait}{}",
            if wait == "block" {
                ""
            } else {
                " (it polls while idle for a moment: the cpu % includes that, it is not load)"
            }
        );
    }
    let t = &report.start.target;
    let buffers = match (t.sockbuf_granted.send, t.sockbuf_granted.recv) {
        (None, None) => String::new(),
        (s, r) => format!(
            ", buffers granted: send {} recv {}",
            s.map_or("-".into(), |b| b.to_string()),
            r.map_or("-".into(), |b| b.to_string())
        ),
    };
    println!(
        "target: {}, path: {}{}{}; {}; {} x {}",
        t.stack,
        t.path,
        t.congestion_control
            .as_deref()
            .map_or(String::new(), |c| format!(", congestion control {c}")),
        buffers,
        t.kernel,
        t.cpus,
        t.cpu_model
    );
}
