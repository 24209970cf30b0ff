//! Measuring the probes themselves.
//!
//! [`overhead`] follows the IPv6 study (§4.3.5): probes fired "doubled"
//! (two back-to-back) and "tripled" (three), with nothing between them;
//! the difference between consecutive timestamps in a group is what one
//! probe adds to the code around it. Analysis subtracts
//! `overhead × (1 + probes in between)` from the distance between two
//! probe points.
//!
//! [`probe_cost`] times batches of calls with the gate open, closed, and
//! open only for traced flows, in nanoseconds per call.
//!
//! Both use and empty the calling thread's ring (growing it if it is too
//! small for a round) and set the global mode while they run, restoring
//! it afterwards: run them before measuring, not during.

use crate::gate::{self, Flow, Mode};
use crate::location::{Category, Kind, Layer};
use crate::stats::Stats;
use crate::{record, Record};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::time::Instant;

crate::locations! {
    /// The probe crate's own locations, used by calibration.
    pub static LOCATIONS;
    /// Single probes timed by [`probe_cost`].
    POINT = ("calibrate.point", Layer::Probe, Kind::Point, Category::None, None);
    /// Two back-to-back probes; `aux` numbers the group.
    DOUBLED = ("calibrate.doubled", Layer::Probe, Kind::Point, Category::None, None);
    /// Three back-to-back probes; `aux` numbers the group.
    TRIPLED = ("calibrate.tripled", Layer::Probe, Kind::Point, Category::None, None);
}

/// Groups measured by default in [`overhead`].
pub const DEFAULT_GROUPS: usize = 10_000;

/// Groups per round: a round's records must fit the ring.
const ROUND_GROUPS: usize = 4096;
/// Records per group round: one doubled and one tripled group.
const RECORDS_PER_GROUP: usize = 5;

/// Per-probe overhead in counter units, from doubled and tripled probes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Median of all within-group differences: the figure to subtract.
    pub median_cycles: f64,
    /// Mean of the same differences (the study's "averaged" figure);
    /// pulled up by the odd interrupt, so prefer the median.
    pub mean_cycles: f64,
    pub min_cycles: f64,
    pub p99_cycles: f64,
    /// Median within doubled groups only.
    pub doubled_median_cycles: f64,
    /// Median within tripled groups only.
    pub tripled_median_cycles: f64,
    /// Differences used (0 in a build without probes).
    pub samples: usize,
    /// Groups of each kind fired.
    pub groups: usize,
}

/// Measures the per-probe overhead with `groups` doubled and `groups`
/// tripled probe groups. Runs on a scratch thread, so the caller's ring
/// (records, capacity, drop count) is untouched; the global gate mode is
/// set while it runs and restored after.
pub fn overhead(groups: usize) -> Overhead {
    on_scratch_thread(|| overhead_here(groups))
}

/// Runs `f` on a thread of its own, which owns (and frees) its own ring.
fn on_scratch_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(f)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn overhead_here(groups: usize) -> Overhead {
    ensure_ring(ROUND_GROUPS * RECORDS_PER_GROUP);
    let saved = gate::mode();
    gate::set_mode(Mode::All);
    let flow = Flow::traced(0);
    let (mut doubled, mut tripled) = (Vec::new(), Vec::new());
    let mut done = 0;
    while done < groups {
        let round = (groups - done).min(ROUND_GROUPS);
        crate::reset_thread();
        for g in done..done + round {
            let aux = g as u64;
            record(DOUBLED, 0, flow, aux);
            record(DOUBLED, 0, flow, aux);
            record(TRIPLED, 0, flow, aux);
            record(TRIPLED, 0, flow, aux);
            record(TRIPLED, 0, flow, aux);
        }
        let records = crate::drain_thread();
        within_group_differences(&records, DOUBLED.0, &mut doubled);
        within_group_differences(&records, TRIPLED.0, &mut tripled);
        done += round;
    }
    gate::set_mode(saved);
    crate::reset_thread();

    let doubled_median_cycles = Stats::of(&doubled).median;
    let tripled_median_cycles = Stats::of(&tripled).median;
    let mut all = doubled;
    all.extend_from_slice(&tripled);
    let stats = Stats::of(&all);
    Overhead {
        median_cycles: stats.median,
        mean_cycles: stats.mean,
        min_cycles: stats.min,
        p99_cycles: stats.p99,
        doubled_median_cycles,
        tripled_median_cycles,
        samples: all.len(),
        groups,
    }
}

/// Appends the timestamp differences between consecutive records of the
/// same group (same calibration location, aux and thread).
fn within_group_differences(records: &[Record], loc: u16, out: &mut Vec<f64>) {
    for pair in records.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.loc == loc && b.loc == loc && a.aux == b.aux && a.thread == b.thread {
            // A counter that went backwards (core migration) is no sample.
            if let Some(d) = b.tsc.checked_sub(a.tsc) {
                out.push(d as f64);
            }
        }
    }
}

/// How [`probe_cost`] measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostConfig {
    /// Batches per gate setting; median and p99 are over batches.
    pub batches: usize,
    /// Consecutive `record` calls per batch.
    pub batch_len: usize,
    /// Groups for the [`overhead`] measurement.
    pub overhead_groups: usize,
}

impl Default for CostConfig {
    fn default() -> CostConfig {
        CostConfig {
            batches: 200,
            batch_len: 1000,
            overhead_groups: DEFAULT_GROUPS,
        }
    }
}

/// What one probe costs, in nanoseconds per call and counter units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeCost {
    /// Whether the build has probes (`probes` feature); without them every
    /// figure measures an empty call.
    pub probes_compiled: bool,
    /// The counter: `rdtsc` or `monotonic_ns`.
    pub clock: String,
    pub batches: usize,
    pub batch_len: usize,
    /// Gate open (mode `all`), ring not full.
    pub enabled_ns_median: f64,
    pub enabled_ns_p99: f64,
    /// Gate closed (mode `off`).
    pub disabled_ns_median: f64,
    pub disabled_ns_p99: f64,
    /// Mode `traced_flows`, flow not traced: the gate check alone.
    pub untraced_ns_median: f64,
    pub untraced_ns_p99: f64,
    /// Median per-probe overhead from [`overhead`], in counter units.
    pub overhead_cycles: f64,
    pub overhead: Overhead,
}

/// Measures the cost of a probe call and the per-probe overhead, on a
/// scratch thread (see [`overhead`]).
pub fn probe_cost(config: &CostConfig) -> ProbeCost {
    on_scratch_thread(|| probe_cost_here(config))
}

fn probe_cost_here(config: &CostConfig) -> ProbeCost {
    let batch_len = config.batch_len.max(1);
    ensure_ring(batch_len);
    let saved = gate::mode();
    let enabled = Stats::of(&time_batches(
        config.batches,
        batch_len,
        Mode::All,
        Flow::traced(1),
    ));
    let disabled = Stats::of(&time_batches(
        config.batches,
        batch_len,
        Mode::Off,
        Flow::traced(1),
    ));
    let untraced = Stats::of(&time_batches(
        config.batches,
        batch_len,
        Mode::TracedFlows,
        Flow::untraced(1),
    ));
    gate::set_mode(saved);
    crate::reset_thread();
    let overhead = overhead_here(config.overhead_groups);
    ProbeCost {
        probes_compiled: crate::ENABLED,
        clock: crate::clock::KIND.to_string(),
        batches: config.batches,
        batch_len,
        enabled_ns_median: enabled.median,
        enabled_ns_p99: enabled.p99,
        disabled_ns_median: disabled.median,
        disabled_ns_p99: disabled.p99,
        untraced_ns_median: untraced.median,
        untraced_ns_p99: untraced.p99,
        overhead_cycles: overhead.median_cycles,
        overhead,
    }
}

/// Nanoseconds per `record` call for each batch. The ring is emptied
/// before every batch so the record path is timed, not the drop path.
fn time_batches(batches: usize, batch_len: usize, mode: Mode, flow: Flow) -> Vec<f64> {
    gate::set_mode(mode);
    let mut per_call = Vec::with_capacity(batches);
    // One unrecorded batch first warms caches and the branch predictor.
    for b in 0..=batches {
        crate::reset_thread();
        let start = Instant::now();
        for i in 0..batch_len {
            record(
                black_box(POINT),
                black_box(i as u32),
                black_box(flow),
                black_box(i as u64),
            );
        }
        let ns = start.elapsed().as_nanos() as f64;
        if b > 0 {
            per_call.push(ns / batch_len as f64);
        }
    }
    per_call
}

/// Makes sure this thread's ring can hold `records` without dropping.
fn ensure_ring(records: usize) {
    if crate::capacity() < records {
        crate::init_thread(records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_stay_within_groups() {
        let r = |tsc, loc: crate::Loc, aux| Record::new(tsc, loc, 0, 0, aux, 1);
        let records = [
            r(100, DOUBLED, 0),
            r(130, DOUBLED, 0),
            r(160, TRIPLED, 0),
            r(190, TRIPLED, 0),
            r(225, TRIPLED, 0),
            r(300, DOUBLED, 1),
            r(331, DOUBLED, 1),
        ];
        let (mut d, mut t) = (Vec::new(), Vec::new());
        within_group_differences(&records, DOUBLED.0, &mut d);
        within_group_differences(&records, TRIPLED.0, &mut t);
        assert_eq!(d, [30.0, 31.0]);
        assert_eq!(t, [30.0, 35.0]);
    }

    #[test]
    fn table_is_named() {
        assert_eq!(LOCATIONS[DOUBLED.index()].name, "calibrate.doubled");
    }
}
