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

use serde::Serialize;
use stats::{Difference, Estimate};
use traffic::kernel::netns::VethPair;
use traffic::spec::Family;

use crate::error::KernelProbeError;
use crate::messages::{tcp_bulk, HostFlows, Path, Transferred};
use crate::session::{Config, KernelProbes};

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
}

impl Leg {
    fn of(t: &Transferred, events: u64, dropped: u64) -> Leg {
        Leg {
            bytes: t.bytes,
            wall_s: t.wall.as_secs_f64(),
            cpu_s: (t.sender_cpu + t.receiver_cpu).as_secs_f64(),
            events,
            dropped,
        }
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
    pub dropped: u64,
}

impl ProbeCost {
    /// The per-event cost to subtract, in counter cycles at `counter_hz`:
    /// the mean, never below 0 (a negative mean is noise, not a gain).
    pub fn overhead_cycles(&self, counter_hz: f64) -> f64 {
        self.per_event_ns
            .map_or(0.0, |e| e.mean.max(0.0) * counter_hz / 1e9)
    }
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
    for _ in 0..plan.pairs {
        let mut probes = KernelProbes::start(config)?;
        let attached = tcp_bulk(
            pair,
            Some(&mut probes),
            plan.family,
            plan.bytes,
            plan.chunk,
            flows,
        )?;
        let trace = probes.finish("probe cost")?;
        let events = trace.trace.records.len() as u64;
        let attached = Leg::of(&attached, events, trace.dropped);
        let detached = tcp_bulk(pair, None, plan.family, plan.bytes, plan.chunk, flows)?;
        pairs.push((attached, Leg::of(&detached, 0, 0)));
    }
    Ok(summarise(pairs, plan.bytes))
}

/// The figures of measured pairs.
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
        dropped: pairs.iter().map(|p| p.0.dropped).sum(),
        pairs,
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
        // 300 ns at 2 GHz: 600 cycles.
        assert!((cost.overhead_cycles(2e9) - 600.0).abs() < 1e-6);
    }

    #[test]
    fn a_negative_mean_subtracts_nothing() {
        let pairs = vec![
            (leg(100, 1.0, 0.9, 10), leg(100, 1.0, 1.0, 0)),
            (leg(100, 1.0, 0.9, 10), leg(100, 1.0, 1.0, 0)),
        ];
        assert_eq!(summarise(pairs, 100).overhead_cycles(1e9), 0.0);
    }
}
