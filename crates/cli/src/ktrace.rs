//! `stackscope ktrace`: a kernel transfer across a veth pair between two
//! namespaces, traced inside the kernel with eBPF (docs/kernel-probes.md).

use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use kernel_probe::{transfer, Config, KernelProbes};
use traffic::kernel::netns::VethPair;
use traffic::spec::Family;

/// The flow id the transfer is traced under.
const FLOW: u32 = 1;

#[derive(Debug, Args)]
pub struct KtraceArgs {
    /// UDP datagrams instead of TCP messages.
    #[arg(short = 'u', long)]
    udp: bool,
    /// IPv4 instead of IPv6.
    #[arg(short = '4', long)]
    ipv4: bool,
    /// Bytes per message (one write or datagram each).
    #[arg(short = 'l', long, default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=65_507))]
    len: u32,
    /// Messages to send.
    #[arg(short = 'n', long, default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    count: u32,
    /// MTU of the veth pair.
    #[arg(long, default_value_t = 1500,
          value_parser = clap::value_parser!(u32).range(1280..=65_535))]
    mtu: u32,
    /// Ring buffer size in KiB: a power of two, at least 4.
    #[arg(long, default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(4..=1 << 20))]
    ring_kib: u32,
    /// Where to write the trace (read it with `stackscope trace`).
    #[arg(short = 'o', long, default_value = "kernel.trace")]
    output: PathBuf,
}

pub fn run(args: &KtraceArgs) -> anyhow::Result<()> {
    let config = Config {
        ring_bytes: args.ring_kib * 1024,
        ..Config::default()
    };
    let mut probes = KernelProbes::start(&config)?;
    let attached = probes
        .status()
        .iter()
        .filter(|s| s.missing.is_none())
        .count();
    for status in probes.status().iter().filter(|s| s.missing.is_some()) {
        eprintln!("{status}");
    }
    let pair = VethPair::create(args.mtu)?;
    let (len, count) = (args.len as usize, args.count as usize);
    let family = if args.ipv4 { Family::V4 } else { Family::V6 };
    let (protocol, moved) = if args.udp {
        (
            "UDP",
            transfer::udp(&pair, &mut probes, family, len, count, FLOW)?,
        )
    } else {
        (
            "TCP",
            transfer::tcp(&pair, &mut probes, family, len, count, FLOW)?,
        )
    };
    let description = format!(
        "stackscope ktrace: {protocol}, {count} x {len} B over {}, {}",
        if args.ipv4 { "IPv4" } else { "IPv6" },
        pair.describe()
    );
    let run = probes.finish(&description)?;
    let file = std::fs::File::create(&args.output)
        .with_context(|| format!("create {}", args.output.display()))?;
    run.trace
        .write(BufWriter::new(file))
        .with_context(|| format!("write {}", args.output.display()))?;
    println!(
        "{protocol}: {} of {} messages of {len} B received; {attached} of {} kernel probes attached",
        moved.received,
        moved.sent,
        run.status.len()
    );
    println!(
        "{} records written to {}; {} dropped (ring full){}",
        run.trace.records.len(),
        args.output.display(),
        run.dropped,
        if run.malformed > 0 {
            format!(", {} malformed left out", run.malformed)
        } else {
            String::new()
        }
    );
    if !run.drops.is_empty() {
        let drops: Vec<String> = run.drops.iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!("kernel drops (kfree_skb) by reason: {}", drops.join(", "));
    }
    Ok(())
}
