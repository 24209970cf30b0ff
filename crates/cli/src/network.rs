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
            Some(path) => {
                Topology::load(path).with_context(|| format!("topology {}", path.display()))
            }
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

pub fn ping(args: &PingArgs) -> Result<()> {
    let (from, mut sim) = args.network.start(args.from.as_deref())?;
    let options = PingOptions {
        count: args.count,
        size: args.size as usize,
        family: args.family.family(),
        ..PingOptions::default()
    };
    let report = tools::ping(&mut sim, &from, &args.dest, &options)?;
    if args.network.json {
        return print_json(&report);
    }
    println!(
        "PING {} from {from}: {} data bytes",
        report.destination, args.size
    );
    for (i, rtt) in report.rtt_us.iter().enumerate() {
        println!("reply {}: time={:.3} ms", i + 1, rtt / 1000.0);
    }
    let loss = 100.0 * f64::from(report.sent - report.received) / f64::from(report.sent);
    println!(
        "--- {} ping statistics ---\n{} packets transmitted, {} received, {loss:.0}% packet loss (simulated time)",
        report.destination, report.sent, report.received
    );
    Ok(())
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
        println!("{:>2}  {}", hop.ttl, hop.addr.as_deref().unwrap_or("*"));
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
