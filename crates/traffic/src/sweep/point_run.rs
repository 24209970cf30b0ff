//! One point's repetitions, one at a time: the sweep runs a point's
//! repetitions back to back, or — interleaved — gives one repetition to
//! every unfinished point of a group in turn, so points compared with each
//! other (an IPv4 point and its IPv6 twin) see the same machine states.
//!
//! Each repetition is preceded by a measurement of the machine's state
//! (`core_trip`, outside its window); the point's time cap counts its own
//! repetitions' time, not its neighbours'.

use std::time::{Duration, Instant};

use super::outcome::{DelayPoint, PointResult, ThroughputPoint};
use super::points::{Point, Work};
use super::repeat::{PointRun, Target, Verdict};
use crate::affinity::SideCpus;
use crate::core_trip::{self, CoreTrip, CoreTrips};
use crate::echo::EchoReport;
use crate::error::TrafficError;
use crate::report::TransferReport;
use crate::run;
use crate::spec::TransferSpec;

/// The repetitions so far, by kind of work.
enum Reps {
    Transfer {
        /// The point's flows, with their sides pinned when asked.
        flows: Vec<TransferSpec>,
        reps: Vec<Vec<TransferReport>>,
    },
    /// Each repetition's reports, one per flow in flow order.
    Echo(Vec<Vec<EchoReport>>),
}

/// A point being repeated.
pub(super) struct PointState<'a> {
    point: &'a Point,
    /// Where its stack's runs go.
    place: run::Target,
    sides: Option<SideCpus>,
    reps: Reps,
    /// The figure each repetition gives (received bit/s, or mean µs).
    values: Vec<f64>,
    trips: Vec<CoreTrip>,
    /// Time spent in this point's repetitions (its own clock for the cap).
    spent: Duration,
    verdict: Verdict,
}

impl<'a> PointState<'a> {
    /// `point` run on `place`, its transfers' sides pinned to `sides`
    /// when given.
    pub fn new(point: &'a Point, place: run::Target, sides: Option<SideCpus>) -> Self {
        let reps = match &point.work {
            Work::Transfer(flows) => Reps::Transfer {
                flows: flows
                    .iter()
                    .map(|flow| TransferSpec {
                        cpus: sides,
                        ..flow.clone()
                    })
                    .collect(),
                reps: Vec::new(),
            },
            Work::Echo(_) => Reps::Echo(Vec::new()),
        };
        Self {
            point,
            place,
            sides,
            reps,
            values: Vec::new(),
            trips: Vec::new(),
            spent: Duration::ZERO,
            verdict: Verdict::Continue,
        }
    }

    pub fn point(&self) -> &'a Point {
        self.point
    }

    /// Repetitions made so far.
    pub fn reps(&self) -> u32 {
        self.values.len() as u32
    }

    /// Known well enough, or a cap was reached — never before the
    /// minimum (the repetition cap is never below it: `repeat::check`).
    pub fn done(&self, target: &Target) -> bool {
        self.verdict.done()
            && (self.values.len() >= target.min_reps || self.verdict == Verdict::RepCap)
    }

    /// One more repetition, judged.
    pub fn step(&mut self, target: &Target) -> Result<(), TrafficError> {
        let started = Instant::now();
        // The machine's state before each repetition, outside its window.
        self.trips.extend(core_trip::measure());
        let point = self.point;
        let value = match (&mut self.reps, &point.work) {
            (Reps::Transfer { flows, reps }, _) => {
                let reports = run::transfer(flows, &self.place, false)?;
                let value = reports.iter().map(ThroughputPoint::received_bps).sum();
                reps.push(reports);
                value
            }
            (Reps::Echo(reps), Work::Echo(flows)) => {
                let reports = run::echoes(flows, &self.place)?;
                let value = DelayPoint::rep_mean_us(&reports);
                reps.push(reports);
                value
            }
            (Reps::Echo(_), Work::Transfer(_)) => {
                return Err(TrafficError::Invalid("a point's work changed kind".into()))
            }
        };
        self.values.push(value);
        self.spent += started.elapsed();
        self.verdict = target.judge(&self.values, self.spent);
        Ok(())
    }

    /// The point's result. The run's `pinned` says whether every
    /// repetition's pins held (the caller adds the spinners' and the
    /// side's).
    pub fn finish(mut self, target: &Target) -> Result<PointResult, TrafficError> {
        let missing = || TrafficError::Invalid("no repetition ran".into());
        // And after the last: a state that changed during the point shows
        // as a range (`CoreTrips::mixed`).
        self.trips.extend(core_trip::measure());
        let (mut result, sides_held) = match &self.reps {
            Reps::Transfer { reps, .. } => {
                let held = reps
                    .iter()
                    .flatten()
                    .all(|report| report.start.target.placement.is_some_and(|p| p.held));
                let result = ThroughputPoint::new(self.point.clone(), reps)
                    .map(PointResult::Throughput)
                    .ok_or_else(missing)?;
                (result, Some(held))
            }
            Reps::Echo(reps) => {
                let result = DelayPoint::new(self.point.clone(), reps)
                    .map(PointResult::Delay)
                    .ok_or_else(missing)?;
                (result, None)
            }
        };
        *result.run_mut() = PointRun {
            verdict: self.verdict,
            target_percent: target.relative * 100.0,
            elapsed_s: self.spent.as_secs_f64(),
            others_cpu: None,
            core_trip: CoreTrips::of(&self.trips),
            load_cpu: None,
            pinned: self.sides.and(sides_held),
        };
        Ok(result)
    }
}
