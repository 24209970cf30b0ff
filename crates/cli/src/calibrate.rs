//! `stackscope calibrate`: the figures every measurement rests on — the
//! cycle counter's frequency, what a probe costs and the overhead the analysis
//! subtracts (the IPv6 study's doubled/tripled method), and the throughput of
//! the two operations that dominate per-byte cost: checksum and copy.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::throughput;

/// Sizes reported: a small packet, an Ethernet MTU, a 64 KiB TSO segment.
const SIZES: [usize; 3] = [64, 1500, 65_536];

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Shorter measurements (about 1 s in all instead of about 6 s); noisier.
    #[arg(long)]
    quick: bool,
}

/// The `--json` document. Keys are part of the interface: add, never rename.
#[derive(Debug, Serialize)]
struct Calibration {
    tsc_hz: f64,
    clock: String,
    probe: probe::calibrate::ProbeCost,
    checksum_implementation: &'static str,
    checksum_gbytes_per_s: ChecksumRates,
    memcpy_gbytes_per_s: BTreeMap<String, f64>,
    cpu: Option<String>,
}

#[derive(Debug, Serialize)]
struct ChecksumRates {
    reference: BTreeMap<String, f64>,
    optimized: BTreeMap<String, f64>,
}

struct Budget {
    clock: Duration,
    per_rate: Duration,
    trials: usize,
    cost: probe::calibrate::CostConfig,
}

impl Budget {
    fn new(quick: bool) -> Self {
        let cost = probe::calibrate::CostConfig::default();
        if quick {
            Self {
                clock: Duration::from_millis(100),
                per_rate: Duration::from_millis(40),
                trials: 5,
                cost: probe::calibrate::CostConfig {
                    batches: 50,
                    ..cost
                },
            }
        } else {
            Self {
                clock: Duration::from_millis(500),
                per_rate: Duration::from_millis(300),
                trials: 9,
                cost,
            }
        }
    }
}

pub fn run(args: &CalibrateArgs) -> anyhow::Result<()> {
    let budget = Budget::new(args.quick);
    let progress = Progress::new(!args.json);

    progress.step("cycle counter against the monotonic clock");
    let tsc_hz = probe::clock::calibrate(budget.clock);

    progress.step("probe cost and overhead (doubled/tripled probes)");
    let probe_cost = probe::calibrate::probe_cost(&budget.cost);

    progress.step("checksum throughput");
    let rates = |sum: fn(&[u8]) -> u16| -> BTreeMap<String, f64> {
        SIZES
            .iter()
            .map(|&n| {
                let rate = throughput::checksum(n, budget.per_rate, budget.trials, sum);
                (n.to_string(), rate)
            })
            .collect()
    };
    let checksum_gbytes_per_s = ChecksumRates {
        reference: rates(wire::checksum::reference::sum),
        optimized: rates(wire::checksum::optimized::sum),
    };

    progress.step("memcpy throughput");
    let memcpy_gbytes_per_s = SIZES
        .iter()
        .map(|&n| {
            let rate = throughput::memcpy(n, budget.per_rate, budget.trials);
            (n.to_string(), rate)
        })
        .collect();
    progress.done();

    let calibration = Calibration {
        tsc_hz,
        clock: probe::clock::KIND.to_string(),
        probe: probe_cost,
        checksum_implementation: wire::checksum::optimized::implementation(),
        checksum_gbytes_per_s,
        memcpy_gbytes_per_s,
        cpu: cpu_model(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&calibration)?);
    } else {
        print_table(&calibration);
    }
    Ok(())
}

fn print_table(c: &Calibration) {
    let p = &c.probe;
    let ns = |cycles: f64| probe::clock::cycles_to_ns(cycles, c.tsc_hz);
    println!("stackscope calibrate");
    if let Some(cpu) = &c.cpu {
        println!("  cpu                {cpu}");
    }
    println!(
        "  counter            {} at {:.4} GHz",
        c.clock,
        c.tsc_hz / 1e9
    );
    println!(
        "  probes compiled    {}",
        if p.probes_compiled {
            "yes"
        } else {
            "no (built without the `probes` feature)"
        }
    );
    println!(
        "  probe, gate open   median {:6.2} ns   p99 {:6.2} ns",
        p.enabled_ns_median, p.enabled_ns_p99
    );
    println!(
        "  probe, gate closed median {:6.2} ns   p99 {:6.2} ns",
        p.disabled_ns_median, p.disabled_ns_p99
    );
    println!(
        "  probe, untraced    median {:6.2} ns   p99 {:6.2} ns   (mode traced_flows)",
        p.untraced_ns_median, p.untraced_ns_p99
    );
    println!(
        "  probe overhead     {:.1} cycles = {:.2} ns per probe (median of {} doubled/tripled differences)",
        p.overhead_cycles,
        ns(p.overhead_cycles),
        p.overhead.samples
    );
    println!();
    println!(
        "  GB/s (10^9 B/s)        {:>9} {:>9} {:>9}",
        "64 B", "1500 B", "64 KiB"
    );
    let row = |name: &str, rates: &BTreeMap<String, f64>| {
        let at = |n: usize| rates.get(&n.to_string()).copied().unwrap_or(f64::NAN);
        println!(
            "  {name:<22} {:>9.2} {:>9.2} {:>9.2}",
            at(SIZES[0]),
            at(SIZES[1]),
            at(SIZES[2])
        );
    };
    row("checksum, reference", &c.checksum_gbytes_per_s.reference);
    row("checksum, optimized", &c.checksum_gbytes_per_s.optimized);
    row("memcpy", &c.memcpy_gbytes_per_s);
    println!("  (optimized checksum: {})", c.checksum_implementation);
}

/// The CPU's model name, for the record (Linux only; best effort).
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, name)| name.trim().to_string())
}

/// Step-by-step progress on stderr, so stdout stays clean for `--json`.
struct Progress {
    show: bool,
}

impl Progress {
    fn new(show: bool) -> Self {
        Self { show }
    }

    fn step(&self, what: &str) {
        if self.show {
            eprintln!("measuring {what} ...");
        }
    }

    fn done(&self) {
        if self.show {
            eprintln!();
        }
    }
}
