//! What the kernel probes cost, measured in one run (issue 19): a bulk
//! TCP transfer across the veth pair with the probes attached, then one
//! detached, then attached again, … — interleaved, so both meet the same
//! machine states. Per pair: throughput and the two transfer threads' CPU
//! time per GiB each way, and the cost of one event = the extra CPU time
//! of the attached transfer over the detached one / the events it
//! recorded. Over the pairs each figure is a [`stats::Estimate`] (n pairs,
//! 95 % interval).
//!
//! What the per-event cost can and cannot correct: it is the CPU an event
//! adds to the threads whose system calls ran the traced path (the eBPF
//! program, the ring reservation, the flow lookup), so subtracting it per
//! record inside a latency window removes the probes' own time from that
//! window as the reference stack's calibrated overhead does. It cannot
//! remove what the probes do to the path beyond their own instructions
//! (cache lines the programs touch, a changed schedule), nor the poller
//! thread's draining of the ring (another thread; on two CPUs it may
//! compete with the receiver), nor the cost of untraced packets' flow
//! lookups (none here: the pair carries only the run's flow). Work the
//! kernel defers to `ksoftirqd` is charged to neither thread and so is
//! in neither side's CPU time.
//!
//! That extra CPU swings with the machine (two transfers' CPU times, each
//! a few hundred ms, differ by more than the probes take), so it is a
//! poor figure to take out of a window a few µs long. Each round
//! therefore has a third transfer, attached with the kernel's BPF
//! run-time statistics on: the time inside the programs themselves
//! (`run_time_ns` over the records they wrote), read by the kernel around
//! every run. That is what the windows lose to the probes' own
//! instructions, measured directly, as the reference stack's probe cost
//! is calibrated directly; the statistics' clock reads make that transfer
//! slower, so it is left out of the throughput figures.

use serde::Serialize;
use stats::{Difference, Estimate};
use traffic::kernel::netns::VethPair;
use traffic::spec::Family;

use crate::error::KernelProbeError;
use crate::messages::{tcp_bulk, HostFlows, Path, Transferred};
use crate::session::{Config, KernelProbes, ProgramTime, RunTimeStats};

/// The flow ids the cost's transfers record under.
const COST_FLOW: u32 = 0x0c05_7000;

/// How the cost is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostPlan {
    /// Attached/detached pairs (at least 3 for an interval worth reading).
    pub pairs: usize,
    /// Bytes per transfer.
    pub bytes: u64,
    /// Bytes per write.
    pub chunk: usize,
    pub family: Family,
}

/// One transfer's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Leg {
    pub bytes: u64,
    pub wall_s: f64,
    /// Sender's and receiver's threads together.
    pub cpu_s: f64,
    /// Records the probes kept (0 detached).
    pub events: u64,
    /// Events lost to a full ring.
    pub dropped: u64,
    /// The programs' own time and runs, where run-time statistics were on
    /// (the timed leg); zero elsewhere.
    pub program: ProgramTime,
}

impl Leg {
    fn of(t: &Transferred, events: u64, dropped: u64) -> Leg {
        Leg {
            bytes: t.bytes,
            wall_s: t.wall.as_secs_f64(),
            cpu_s: (t.sender_cpu + t.receiver_cpu).as_secs_f64(),
            events,
            dropped,
            program: ProgramTime::default(),
        }
    }

    /// The programs' time per record they kept, ns.
    fn program_ns_per_record(&self) -> Option<f64> {
        (self.events > 0 && self.program.runs > 0)
            .then(|| self.program.ns as f64 / self.events as f64)
    }

    /// The programs' time per run (runs that kept nothing included), ns.
    fn program_ns_per_run(&self) -> Option<f64> {
        (self.program.runs > 0).then(|| self.program.ns as f64 / self.program.runs as f64)
    }

    fn gbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.wall_s / 1e9
    }

    fn cpu_s_per_gib(&self) -> f64 {
        self.cpu_s / (self.bytes as f64 / (1u64 << 30) as f64)
    }
}

/// The measured cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeCost {
    pub pairs: Vec<(Leg, Leg)>,
    /// Per round, the attached transfer with run-time statistics on.
    pub timed: Vec<Leg>,
    pub bytes_per_transfer: u64,
    /// Throughput, Gbit/s, with the probes attached and detached.
    pub attached_gbps: Option<Estimate>,
    pub detached_gbps: Option<Estimate>,
    /// Attached − detached (Welch).
    pub throughput_change: Option<Difference>,
    /// CPU seconds per GiB moved, both transfer threads.
    pub attached_cpu_s_per_gib: Option<Estimate>,
    pub detached_cpu_s_per_gib: Option<Estimate>,
    /// Extra CPU per recorded event, ns, one value per pair.
    pub per_event_ns: Option<Estimate>,
    /// Events per attached transfer.
    pub events_per_transfer: Option<Estimate>,
    /// The programs' own time per record kept (the timed legs), ns: what
    /// is taken out of the windows per record.
    pub program_ns_per_record: Option<Estimate>,
    /// The programs' own time per run, ns (runs that kept nothing: other
    /// flows' packets, filtered out, included).
    pub program_ns_per_run: Option<Estimate>,
    /// Why the timed legs have no figures (statistics refused), if so.
    pub program_time_missing: Option<String>,
    pub dropped: u64,
}

/// Runs the interleaved transfers across `pair` (B to A).
pub fn measure(
    pair: &VethPair,
    plan: &CostPlan,
    config: &Config,
) -> Result<ProbeCost, KernelProbeError> {
    let flows = HostFlows::of(COST_FLOW, Path::Veth);
    // One untimed transfer first: the pair's first connection warms ND,
    // routes and caches.
    tcp_bulk(pair, None, plan.family, plan.bytes / 4, plan.chunk, flows)?;
    let mut pairs = Vec::with_capacity(plan.pairs);
    let mut timed = Vec::with_capacity(plan.pairs);
    let mut program_time_missing = None;
    for _ in 0..plan.pairs {
        let attached = attached_leg(pair, plan, config, flows, false)?;
        let detached = tcp_bulk(pair, None, plan.family, plan.bytes, plan.chunk, flows)?;
        pairs.push((attached, Leg::of(&detached, 0, 0)));
        if program_time_missing.is_none() {
            match attached_leg(pair, plan, config, flows, true) {
                Ok(leg) => timed.push(leg),
                Err(KernelProbeError::Invalid(why)) if why.contains("run-time statistics") => {
                    program_time_missing = Some(why);
                }
                Err(e) => return Err(e),
            }
        }
    }
    let mut cost = summarise(pairs, plan.bytes);
    cost.program_ns_per_record = Estimate::of(
        &timed
            .iter()
            .filter_map(Leg::program_ns_per_record)
            .collect::<Vec<_>>(),
    );
    cost.program_ns_per_run = Estimate::of(
        &timed
            .iter()
            .filter_map(Leg::program_ns_per_run)
            .collect::<Vec<_>>(),
    );
    cost.program_time_missing = program_time_missing;
    cost.timed = timed;
    Ok(cost)
}

/// The programs' own time per record over `legs` timed transfers of
/// `plan.bytes` (statistics on, probes attached): measured around each
/// traced run, so what is taken out of its windows is the cost at the
/// machine's speed of that moment (on a shared VM the same work takes
/// twice as long from one minute to the next). An error where the kernel
/// refuses the statistics.
pub fn own_time(
    pair: &VethPair,
    plan: &CostPlan,
    config: &Config,
    legs: usize,
) -> Result<Vec<f64>, KernelProbeError> {
    let flows = HostFlows::of(COST_FLOW, Path::Veth);
    let mut per_record = Vec::with_capacity(legs);
    for _ in 0..legs {
        let leg = attached_leg(pair, plan, config, flows, true)?;
        per_record.extend(leg.program_ns_per_record());
    }
    Ok(per_record)
}

/// One transfer with the probes attached; with `timed`, the kernel's
/// run-time statistics on around it and the programs' time read before
/// and after.
fn attached_leg(
    pair: &VethPair,
    plan: &CostPlan,
    config: &Config,
    flows: HostFlows,
    timed: bool,
) -> Result<Leg, KernelProbeError> {
    let mut probes = KernelProbes::start(config)?;
    let stats = if timed {
        Some(RunTimeStats::enable()?)
    } else {
        None
    };
    let before = probes.program_time()?;
    let moved = tcp_bulk(
        pair,
        Some(&mut probes),
        plan.family,
        plan.bytes,
        plan.chunk,
        flows,
    )?;
    let program = probes.program_time()?.since(before);
    drop(stats);
    let trace = probes.finish("probe cost")?;
    let mut leg = Leg::of(&moved, trace.trace.records.len() as u64, trace.dropped);
    if timed {
        leg.program = program;
    }
    Ok(leg)
}

/// The figures of measured pairs (the timed legs' figures are added by
/// [`measure`]).
pub fn summarise(pairs: Vec<(Leg, Leg)>, bytes: u64) -> ProbeCost {
    let of =
        |f: &dyn Fn(&(Leg, Leg)) -> f64| Estimate::of(&pairs.iter().map(f).collect::<Vec<f64>>());
    let attached_gbps = of(&|p| p.0.gbps());
    let detached_gbps = of(&|p| p.1.gbps());
    let per_event = pairs
        .iter()
        .filter(|(a, _)| a.events > 0)
        .map(|(a, d)| (a.cpu_s - d.cpu_s) * 1e9 / a.events as f64)
        .collect::<Vec<f64>>();
    ProbeCost {
        bytes_per_transfer: bytes,
        throughput_change: match (&attached_gbps, &detached_gbps) {
            (Some(a), Some(d)) => Difference::welch(d, a),
            _ => None,
        },
        attached_gbps,
        detached_gbps,
        attached_cpu_s_per_gib: of(&|p| p.0.cpu_s_per_gib()),
        detached_cpu_s_per_gib: of(&|p| p.1.cpu_s_per_gib()),
        per_event_ns: Estimate::of(&per_event),
        events_per_transfer: of(&|p| p.0.events as f64),
        program_ns_per_record: None,
        program_ns_per_run: None,
        program_time_missing: None,
        dropped: pairs.iter().map(|p| p.0.dropped).sum(),
        pairs,
        timed: Vec::new(),
    }
}

/// The default plan: `pairs` pairs of 64 MiB in 64 KiB writes.
pub fn plan(pairs: usize, family: Family) -> CostPlan {
    CostPlan {
        pairs,
        bytes: 64 << 20,
        chunk: 64 << 10,
        family,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leg(bytes: u64, wall_s: f64, cpu_s: f64, events: u64) -> Leg {
        Leg {
            bytes,
            wall_s,
            cpu_s,
            events,
            dropped: 0,
            program: ProgramTime::default(),
        }
    }

    #[test]
    fn the_per_event_cost_is_the_extra_cpu_over_the_events() {
        let gib = 1u64 << 30;
        let pairs = vec![
            (leg(gib, 1.0, 1.2, 1_000_000), leg(gib, 0.8, 1.0, 0)),
            (leg(gib, 1.0, 1.3, 1_000_000), leg(gib, 0.8, 1.0, 0)),
            (leg(gib, 1.0, 1.4, 1_000_000), leg(gib, 0.8, 1.0, 0)),
        ];
        let cost = summarise(pairs, gib);
        let per_event = cost.per_event_ns.unwrap();
        // 0.2, 0.3, 0.4 s over a million events: 200, 300, 400 ns.
        assert!((per_event.mean - 300.0).abs() < 1e-6);
        assert_eq!(per_event.n, 3);
        assert!(per_event.ci95.is_some());
        assert!((cost.detached_cpu_s_per_gib.unwrap().mean - 1.0).abs() < 1e-9);
        assert!((cost.attached_gbps.unwrap().mean - 8.0 * gib as f64 / 1e9).abs() < 1e-6);
    }

    #[test]
    fn the_programs_time_is_per_record_kept_and_per_run() {
        let mut timed = leg(1 << 20, 0.1, 0.2, 1000);
        // 1500 runs (500 filtered out, keeping nothing) took 180 µs.
        timed.program = ProgramTime {
            runs: 1500,
            ns: 180_000,
        };
        assert_eq!(timed.program_ns_per_record(), Some(180.0));
        assert_eq!(timed.program_ns_per_run(), Some(120.0));
        // A leg without statistics has no figure, not a zero.
        let untimed = leg(1 << 20, 0.1, 0.2, 1000);
        assert_eq!(untimed.program_ns_per_record(), None);
        assert_eq!(untimed.program_ns_per_run(), None);
        let earlier = ProgramTime { runs: 10, ns: 100 };
        assert_eq!(
            timed.program.since(earlier),
            ProgramTime {
                runs: 1490,
                ns: 179_900
            }
        );
    }
}
