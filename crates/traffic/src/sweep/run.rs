//! Runs a sweep's points in order, each `reps` times, under the requested
//! background load, reporting progress as it goes. A point that fails
//! stops the sweep; the points finished before it are kept so they can
//! still be written out.

use std::fmt;

use super::load::Load;
use super::outcome::{DelayPoint, PointResult, ThroughputPoint};
use super::points::{Point, Work};
use super::target::{self, Targets};
use crate::echo::MAX_EXCHANGES;
use crate::error::TrafficError;

/// How to run the points.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Repetitions per point (at least 1).
    pub reps: u32,
    /// CPU-bound background processes for the whole sweep.
    pub load: u32,
    pub targets: Targets,
}

/// Where the sweep is: called before each repetition.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Repetitions finished so far, over all points.
    pub done: u64,
    /// Repetitions in the whole sweep.
    pub total: u64,
    pub point: &'a Point,
    /// 1-based.
    pub rep: u32,
}

/// The points that finished, and the failure that stopped the rest.
#[derive(Debug)]
pub struct Outcome {
    pub results: Vec<PointResult>,
    pub failure: Option<Failure>,
}

/// Runs every point. `Err` only when the sweep could not start (bad
/// settings, or the background load failed to fork); a failing point ends
/// up in `Outcome::failure`.
pub fn run(
    points: &[Point],
    settings: &Settings,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Outcome, TrafficError> {
    if settings.reps == 0 {
        return Err(TrafficError::Invalid("--reps must be at least 1".into()));
    }
    for point in points {
        if let Work::Echo(spec) = &point.work {
            // Every round trip of every repetition is kept for the pooled
            // percentiles: bound them as one echo run is bounded.
            let kept = spec.count.saturating_mul(u64::from(settings.reps));
            if kept > MAX_EXCHANGES {
                return Err(TrafficError::Invalid(format!(
                    "{point}: {} reps x {} exchanges is {kept} round trips to keep; \
                     at most {MAX_EXCHANGES}: use fewer --reps or a smaller --count",
                    settings.reps, spec.count
                )));
            }
        }
    }
    // Held to the end of this function: dropping it kills the spinners on
    // every way out, a failed point included.
    let _load = Load::start(settings.load)?;
    let total = points.len() as u64 * u64::from(settings.reps);
    let mut results = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        let done = i as u64 * u64::from(settings.reps);
        let mut on_rep = |rep: u32| {
            progress(Progress {
                done: done + u64::from(rep - 1),
                total,
                point,
                rep,
            })
        };
        match run_point(point, settings, &mut on_rep) {
            Ok(result) => results.push(result),
            Err(error) => {
                return Ok(Outcome {
                    results,
                    failure: Some(Failure {
                        point: point.to_string(),
                        error,
                    }),
                })
            }
        }
    }
    Ok(Outcome {
        results,
        failure: None,
    })
}

/// A point that failed, and why.
#[derive(Debug)]
pub struct Failure {
    /// The point, as its description (`point 3 (kernel tcp IPv6 1024 B)`).
    pub point: String,
    pub error: TrafficError,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.point, self.error)
    }
}

fn run_point(
    point: &Point,
    settings: &Settings,
    on_rep: &mut dyn FnMut(u32),
) -> Result<PointResult, TrafficError> {
    let targets = &settings.targets;
    let missing = || TrafficError::Invalid("no repetition ran".into());
    match &point.work {
        Work::Transfer(flows) => {
            let mut reps = Vec::with_capacity(settings.reps as usize);
            for rep in 1..=settings.reps {
                on_rep(rep);
                reps.push(target::transfer(flows, point.stack, targets)?);
            }
            ThroughputPoint::new(point.clone(), &reps)
                .map(PointResult::Throughput)
                .ok_or_else(missing)
        }
        Work::Echo(spec) => {
            let mut reps = Vec::with_capacity(settings.reps as usize);
            for rep in 1..=settings.reps {
                on_rep(rep);
                reps.push(target::echo(spec, point.stack, targets)?);
            }
            DelayPoint::new(point.clone(), &reps)
                .map(PointResult::Delay)
                .ok_or_else(missing)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv6Addr, TcpListener};
    use std::time::Duration;

    use super::*;
    use crate::kernel::KernelPath;
    use crate::spec::{Family, Protocol, StackKind};
    use crate::sweep::points::{Amount, Grid, Mode};

    fn settings(reps: u32) -> Settings {
        Settings {
            reps,
            load: 0,
            targets: Targets {
                ref_link: None,
                kernel_path: KernelPath::Loopback,
                topology: None,
            },
        }
    }

    fn grid(protocols: Vec<Protocol>, port: u16) -> Grid {
        Grid {
            mode: Mode::Throughput,
            stacks: vec![StackKind::Kernel],
            protocols,
            mix: None,
            families: vec![Family::V6],
            sockbufs: vec![],
            rates: vec![],
            sizes: vec![1024],
            amount: Amount::Count(20),
            circuits: 1,
            port,
            timeout: Duration::from_secs(5),
            min_duration: None,
        }
    }

    #[test]
    fn a_failing_point_stops_the_sweep_and_keeps_what_finished() {
        // A listener already on the port makes the TCP point's bind fail;
        // the UDP point before it uses the same number for UDP and runs.
        let busy = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
        let port = busy.local_addr().unwrap().port();
        let grid = grid(vec![Protocol::Udp, Protocol::Tcp], port);
        let points = grid.points(KernelPath::Loopback).unwrap();
        let mut seen = Vec::new();
        let outcome = run(&points, &settings(2), |p| {
            seen.push((p.done, p.total, p.point.index, p.rep))
        })
        .unwrap();
        assert_eq!(seen, vec![(0, 4, 1, 1), (1, 4, 1, 2), (2, 4, 2, 1)]);
        assert_eq!(outcome.results.len(), 1);
        assert_eq!(outcome.results[0].point().protocol, "udp");
        let failure = outcome.failure.unwrap().to_string();
        assert!(
            failure.starts_with("point 2 (kernel tcp IPv6 1024 B): "),
            "{failure}"
        );
        drop(busy);
    }

    #[test]
    fn zero_repetitions_and_too_many_kept_round_trips_are_refused() {
        let err = run(&[], &settings(0), |_| {}).unwrap_err();
        assert_eq!(err.to_string(), "--reps must be at least 1");

        let mut grid = grid(vec![Protocol::Udp], 5001);
        grid.mode = Mode::Delay;
        grid.amount = Amount::Count(MAX_EXCHANGES / 2 + 1);
        let points = grid.points(KernelPath::Loopback).unwrap();
        let mut ran = false;
        let err = run(&points, &settings(2), |_| ran = true).unwrap_err();
        assert!(err.to_string().contains("round trips to keep"), "{err}");
        assert!(!ran, "refused before running");
    }
}
