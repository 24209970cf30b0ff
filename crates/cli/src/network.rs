//! The network tools on a simulated topology: `ping`, `traceroute` and the
//! `ipv6` state dump (after the MSR IPv6 stack's `ipv6` tool).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use stack::runner::Simulator;
use stack::tools::{self, Family, PingOptions, TracerouteOptions};
use stack::topology::Topology;

/// What every network tool takes.
#[derive(Debug, Args)]
pub struct NetworkArgs {
    /// Topology file (TOML); default: host-a — router — host-b, the router
    /// advertising 2001:db8:a::/64 and 2001:db8:b::/64 and serving
    /// 192.0.2.0/24 and 198.51.100.0/24. A node's [[host.tunnel]] tables
    /// add IPv6 tunnels over its own IPv4: configured (RFC 4213), 6over4
    /// (RFC 2529) or automatic — IPv4-compatible addresses, deprecated by
    /// RFC 4291 §2.5.5.1, present only where a file asks (docs/tunnels.md).
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// Write one pcapng capture per interface into DIR (created if needed):
    /// NODE-INTERFACE.pcapng.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// Which family a tool uses.
#[derive(Debug, Args)]
pub struct FamilyArgs {
    /// Use IPv4.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// Use IPv6 (the default for host names).
    #[arg(short = '6')]
    ipv6: bool,
}

impl FamilyArgs {
    fn family(&self) -> Family {
        match (self.ipv4, self.ipv6) {
            (true, _) => Family::V4,
            (_, true) => Family::V6,
            _ => Family::Any,
        }
    }
}

#[derive(Debug, Args)]
pub struct PingArgs {
    #[command(flatten)]
    network: NetworkArgs,
    #[command(flatten)]
    family: FamilyArgs,
    /// The sending host (default: the first host of the topology).
    #[arg(long, value_name = "HOST")]
    from: Option<String>,
    /// Echo Requests to send.
    #[arg(short = 'c', long = "count", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    count: u16,
    /// Bytes of Echo data; above the path MTU the sender fragments.
    #[arg(short = 's', long = "size", default_value_t = 56, value_parser = clap::value_parser!(u32).range(0..=65_000))]
    size: u32,
    /// A host name of the topology or an IPv4/IPv6 address.
    dest: String,
}

#[derive(Debug, Args)]
pub struct TracerouteArgs {
    #[command(flatten)]
    network: NetworkArgs,
    #[command(flatten)]
    family: FamilyArgs,
    /// The sending host (default: the first host of the topology).
    #[arg(long, value_name = "HOST")]
    from: Option<String>,
    /// Largest hop limit to try.
    #[arg(short = 'm', long = "max-hops", default_value_t = 30, value_parser = clap::value_parser!(u8).range(1..=255))]
    max_hops: u8,
    /// A host name of the topology or an IPv4/IPv6 address.
    dest: String,
}

#[derive(Debug, Args)]
pub struct Ipv6Args {
    #[command(flatten)]
    network: NetworkArgs,
    /// Simulated seconds to run before the dump (SLAAC needs a few).
    #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
    after: f64,
    /// The host to show (default: the first host of the topology).
    host: Option<String>,
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&value) {
        return Err("must be between 0 and 86400 seconds".into());
    }
    Ok(value)
}

impl NetworkArgs {
    fn topology(&self) -> Result<Topology> {
        match &self.topology {
            Some(path) => Topology::load(path).map_err(|e| anyhow::anyhow!(e.in_file(path))),
            None => Ok(Topology::default_network()),
        }
    }

    /// The network built and the host to act on: `host`, else the first
    /// host of the topology.
    fn start(&self, host: Option<&str>) -> Result<(String, Simulator)> {
        let topology = self.topology()?;
        let host = sending_host(&topology, host)?;
        Ok((host, self.simulator(&topology)?))
    }

    fn simulator(&self, topology: &Topology) -> Result<Simulator> {
        if let Some(dir) = &self.pcap {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Simulator::new(topology, self.pcap.as_deref().map(Path::new))
            .context("building the network")
    }
}

/// The host a tool runs on: `--from`, else the first host of the topology.
fn sending_host(topology: &Topology, from: Option<&str>) -> Result<String> {
    match from {
        Some(name) => {
            if topology.node(name).is_none() {
                bail!("no host named {name:?} in the topology");
            }
            Ok(name.to_string())
        }
        None => match topology.hosts().next() {
            Some(node) => Ok(node.name.clone()),
            None => bail!("the topology has no hosts"),
        },
    }
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A run that ends with this exit status, having said what it had to.
#[derive(Debug)]
pub struct Exit(pub u8);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// `ping` as iputils has it: exit status 0 when a reply came, 1 when none
/// did, 2 on any other error (said on stderr).
pub fn ping(args: &PingArgs) -> Result<()> {
    match ping_once(args) {
        Ok(0) => Err(Exit(1).into()),
        Ok(_) => Ok(()),
        Err(e) => {
            eprintln!("stackscope: {e:#}");
            Err(Exit(2).into())
        }
    }
}

/// Pings and prints; the replies received.
fn ping_once(args: &PingArgs) -> Result<u16> {
    let (from, mut sim) = args.network.start(args.from.as_deref())?;
    let options = PingOptions {
        count: args.count,
        size: args.size as usize,
        family: args.family.family(),
        ..PingOptions::default()
    };
    let report = tools::ping(&mut sim, &from, &args.dest, &options)?;
    if args.network.json {
        print_json(&report)?;
        return Ok(report.received);
    }
    let ip_header = if report.destination.contains(':') {
        40
    } else {
        20
    };
    println!(
        "PING {} from {from}: {}({}) bytes of data.",
        report.destination,
        args.size,
        args.size as usize + 8 + ip_header
    );
    // Replies and errors in the order of their requests.
    let mut lines: Vec<(u16, String)> = report
        .replies
        .iter()
        .map(|r| {
            (
                r.icmp_seq,
                format!(
                    "{} bytes from {}: icmp_seq={} ttl={} time={:.3} ms",
                    r.bytes,
                    r.from,
                    r.icmp_seq,
                    r.ttl,
                    r.rtt_us / 1000.0
                ),
            )
        })
        .chain(report.errors.iter().map(|e| {
            (
                e.icmp_seq,
                format!("From {} icmp_seq={} {}", e.from, e.icmp_seq, e.message),
            )
        }))
        .collect();
    lines.sort_by_key(|(seq, _)| *seq);
    for (_, line) in &lines {
        println!("{line}");
    }
    let loss = 100.0 * f64::from(report.sent - report.received) / f64::from(report.sent);
    let errors = if report.errors.is_empty() {
        String::new()
    } else {
        format!(", +{} errors", report.errors.len())
    };
    println!(
        "\n--- {} ping statistics ---\n{} packets transmitted, {} received{errors}, {loss:.0}% packet loss (simulated time)",
        report.destination, report.sent, report.received
    );
    if let Some(stats) = rtt_summary(&report.rtt_us) {
        println!("{stats}");
    }
    Ok(report.received)
}

/// `rtt min/avg/max/mdev = …` as iputils prints it (mdev: the population
/// standard deviation of the round trips), in ms.
fn rtt_summary(rtt_us: &[f64]) -> Option<String> {
    if rtt_us.is_empty() {
        return None;
    }
    let ms: Vec<f64> = rtt_us.iter().map(|u| u / 1000.0).collect();
    let n = ms.len() as f64;
    let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avg = ms.iter().sum::<f64>() / n;
    let mdev = (ms.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n).sqrt();
    Some(format!(
        "rtt min/avg/max/mdev = {min:.3}/{avg:.3}/{max:.3}/{mdev:.3} ms"
    ))
}

pub fn traceroute(args: &TracerouteArgs) -> Result<()> {
    let (from, mut sim) = args.network.start(args.from.as_deref())?;
    let options = TracerouteOptions {
        max_hops: args.max_hops,
        family: args.family.family(),
        ..TracerouteOptions::default()
    };
    let report = tools::traceroute(&mut sim, &from, &args.dest, &options)?;
    if args.network.json {
        return print_json(&report);
    }
    println!(
        "traceroute to {} from {from}, {} hops max",
        report.destination, args.max_hops
    );
    for hop in &report.hops {
        let mark = hop.unreachable.map_or(String::new(), |m| format!(" {m}"));
        println!(
            "{:>2}  {}{mark}",
            hop.ttl,
            hop.addr.as_deref().unwrap_or("*")
        );
    }
    if !report.reached {
        println!("(destination not reached)");
    }
    Ok(())
}

pub fn ipv6(args: &Ipv6Args) -> Result<()> {
    let (host, mut sim) = args.network.start(args.host.as_deref())?;
    sim.run_for(std::time::Duration::from_secs_f64(args.after));
    let state = sim
        .host(&host)
        .map(|h| h.state(sim.now()))
        .context("host vanished")?;
    if args.network.json {
        return print_json(&state);
    }
    print!("{state}");
    Ok(())
}
