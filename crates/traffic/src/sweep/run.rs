//! Runs a sweep's points in order, each repeated until the 95 % interval
//! of its mean is within the target or a cap stops it ([`repeat`]) — back
//! to back, or interleaved in rounds with the other points of its load
//! level (`point_run`) —, under
//! its background load (started when the level or side changes, pinned to
//! a side's CPU with the transfer's sides when the point asks), watching
//! the machine for other work ([`busy`]) and reporting progress as it
//! goes. A point that fails stops the sweep; the points finished before
//! it are kept so they can still be written out.

use std::fmt;

use super::busy::{self, CpuSample, LoadCheck};
use super::load::{self, Load, LoadOn};
use super::outcome::PointResult;
use super::point_run::PointState;
use super::points::{Point, Work};
use super::repeat::{self, Target};
use super::target::Targets;
use crate::congestion::Congestion;
use crate::echo::MAX_EXCHANGES;
use crate::error::TrafficError;
use crate::spec::StackKind;

/// How to run the points.
#[derive(Debug, Clone)]
pub struct Settings {
    /// When a point has been repeated enough: `min_reps` (`--reps`), the
    /// CI target and the caps.
    pub target: Target,
    pub targets: Targets,
    /// Repeat the points of each load level and side in rounds — one
    /// repetition of every unfinished point per round — instead of each
    /// point's repetitions back to back, so points compared with each
    /// other see the same machine states.
    pub interleave: bool,
}

/// Where the sweep is.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Before each repetition.
    Rep(Progress<'a>),
    /// The machine is busy (before the start, or during a point): say so
    /// now; the same words are in [`Outcome::load_check`].
    Busy(&'a str),
}

/// Before each repetition.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Points finished so far.
    pub points_done: usize,
    pub points: usize,
    pub point: &'a Point,
    /// 1-based.
    pub rep: u32,
}

/// The points that finished, the failure that stopped the rest, and how
/// busy the machine was.
#[derive(Debug)]
pub struct Outcome {
    pub results: Vec<PointResult>,
    pub failure: Option<Failure>,
    pub load_check: LoadCheck,
}

/// Refuses a congestion control (`-C`) that a stack some point runs on
/// lacks, before the first point runs (each run checks again); each
/// stack is asked once.
fn check_congestion(points: &[Point], targets: &Targets) -> Result<(), TrafficError> {
    let mut asked: Vec<(Congestion, StackKind)> = Vec::new();
    for point in points {
        let wanted: Vec<Congestion> = match &point.work {
            Work::Transfer(flows) => flows.iter().filter_map(|f| f.congestion).collect(),
            Work::Echo(flows) => flows.iter().filter_map(|f| f.congestion).collect(),
        };
        for c in wanted {
            for &stack in targets.target(point.stack).stacks() {
                if asked.contains(&(c, stack)) {
                    continue;
                }
                asked.push((c, stack));
                crate::congestion::check(c, stack).map_err(|e| match e {
                    TrafficError::Unsupported(m) => {
                        TrafficError::Unsupported(format!("{point}: {m}"))
                    }
                    other => other,
                })?;
            }
        }
    }
    Ok(())
}

/// Runs every point. `Err` only when the sweep could not start (bad
/// settings); a failing point, or a background load that failed to fork,
/// ends up in `Outcome::failure`.
pub fn run(
    points: &[Point],
    settings: &Settings,
    mut event: impl FnMut(Event<'_>),
) -> Result<Outcome, TrafficError> {
    repeat::check(&settings.target)?;
    for point in points {
        if let Work::Echo(flows) = &point.work {
            // Every round trip of every repetition is kept for the pooled
            // percentiles: bound them as one echo run is bounded.
            let max_reps = settings.target.max_reps as u64;
            let count = flows.first().map_or(0, |f| f.count);
            let kept = count
                .saturating_mul(flows.len() as u64)
                .saturating_mul(max_reps);
            if kept > MAX_EXCHANGES {
                return Err(TrafficError::Invalid(format!(
                    "{point}: up to {max_reps} reps x {} flows x {count} exchanges is {kept} \
                     round trips to keep; at most {MAX_EXCHANGES}: use fewer --max-reps or a \
                     smaller --count",
                    flows.len()
                )));
            }
        }
    }
    check_congestion(points, &settings.targets)?;
    if let Some(p) = points.iter().find(|p| p.load > load::MAX_LOAD) {
        return Err(TrafficError::Invalid(format!(
            "{p}: at most {} background processes",
            load::MAX_LOAD
        )));
    }
    // Before any spinner starts: the machine as others left it.
    let mut load_check = LoadCheck::before_start(&[]);
    for warning in &load_check.warnings {
        event(Event::Busy(warning));
    }
    // The two CPUs a side load puts the receiver and the sender on.
    let cpus = load::side_cpus();
    // The running spinners and the (level, side) they are for. Held to
    // the end of this function: dropping it kills them on every way out,
    // a failed point included.
    let mut running: Option<((u32, LoadOn), Load)> = None;
    let mut results = Vec::with_capacity(points.len());
    let target = &settings.target;
    let mut first = 0;
    while first < points.len() {
        // The points run together: one, or — interleaved — every point
        // of this load level and side (load is the grid's outermost axis,
        // so they are consecutive).
        let key = (points[first].load, points[first].load_on);
        let end = if settings.interleave {
            points[first..]
                .iter()
                .position(|p| (p.load, p.load_on) != key)
                .map_or(points.len(), |n| first + n)
        } else {
            first + 1
        };
        let group = &points[first..end];
        let placement = key.1.placement(cpus);
        if running.as_ref().map(|(k, _)| *k) != Some(key) {
            // The last level's spinners die before the next start.
            drop(running.take());
            match Load::start(key.0, placement.map(|(_, cpu)| cpu)) {
                Ok(started) => running = Some((key, started)),
                Err(error) => {
                    return Ok(Outcome {
                        results,
                        failure: Some(Failure {
                            point: group[0].to_string(),
                            error,
                        }),
                        load_check,
                    })
                }
            }
        }
        let load = running.as_ref().map(|(_, l)| l);
        let pids = load.map_or(&[][..], Load::pids);
        let spinners_held = load.and_then(Load::pin).is_none_or(|(_, held)| held);
        let before = CpuSample::now(pids);
        let sides = placement.map(|(sides, _)| sides);
        let mut states: Vec<PointState> = group
            .iter()
            .map(|p| PointState::new(p, settings.targets.target(p.stack), sides))
            .collect();
        // Rounds: one repetition for every point not yet known, in order,
        // until none is left (back to back when the group is one point).
        let failed = 'rounds: loop {
            let finished = states.iter().filter(|s| s.done(target)).count();
            if finished == states.len() {
                break None;
            }
            for state in states.iter_mut().filter(|s| !s.done(target)) {
                event(Event::Rep(Progress {
                    points_done: first + finished,
                    points: points.len(),
                    point: state.point(),
                    rep: state.reps() + 1,
                }));
                if let Err(error) = state.step(target) {
                    break 'rounds Some(Failure {
                        point: state.point().to_string(),
                        error,
                    });
                }
            }
        };
        if let Some(failure) = failed {
            // The group's points that were already known are kept.
            for state in states.into_iter().filter(|s| s.done(target)) {
                results.extend(state.finish(target).ok());
            }
            return Ok(Outcome {
                results,
                failure: Some(failure),
                load_check,
            });
        }
        // Other processes' CPU over the group's time: with interleaving,
        // every point of it shares that time.
        let after = CpuSample::now(pids);
        let others = before
            .zip(after)
            .and_then(|(b, a)| b.others_cpu(&a, load_check.cores));
        for state in states {
            let point = state.point();
            let mut result = match state.finish(target) {
                Ok(result) => result,
                Err(error) => {
                    return Ok(Outcome {
                        results,
                        failure: Some(Failure {
                            point: point.to_string(),
                            error,
                        }),
                        load_check,
                    })
                }
            };
            let run = result.run_mut();
            run.load_cpu = placement.map(|(_, cpu)| cpu);
            // Asked to pin and it did not all hold (or one CPU): said.
            run.pinned = (point.load_on != LoadOn::Both)
                .then(|| placement.is_some() && spinners_held && run.pinned == Some(true));
            run.others_cpu = others;
            if let Some(w) = busy::busy_during(&point.to_string(), others) {
                event(Event::Busy(&w));
                load_check.warnings.push(w);
            }
            if let Some(w) = busy::state_changed(&point.to_string(), result.run().core_trip) {
                event(Event::Busy(&w));
                load_check.warnings.push(w);
            }
            results.push(result);
        }
        first = end;
    }
    Ok(Outcome {
        results,
        failure: None,
        load_check,
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

#[cfg(test)]
mod tests {
    use std::net::{Ipv6Addr, TcpListener};
    use std::time::Duration;

    use super::*;
    use crate::kernel::KernelPath;
    use crate::spec::{Family, Protocol};
    use crate::sweep::load::LoadOn;
    use crate::sweep::points::{Amount, Grid, Mode};

    /// Exactly `reps` repetitions: the minimum and the cap.
    fn settings(reps: u32) -> Settings {
        Settings {
            target: Target {
                min_reps: reps as usize,
                max_reps: reps as usize,
                ..Target::default()
            },
            targets: Targets {
                ref_link: None,
                kernel_path: KernelPath::Loopback,
                topology: None,
            },
            interleave: false,
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
            loads: vec![],
            load_on: vec![],
            xtp: Default::default(),
            congestion: None,
            connect_each: false,
        }
    }

    /// Runs `attempt`, each time on a fresh port, until `taken` says
    /// another test did not take its port first, at most three times.
    fn on_a_free_port<T>(mut attempt: impl FnMut() -> T, taken: impl Fn(&T) -> bool) -> T {
        (0..3)
            .map(|_| attempt())
            .find(|outcome| !taken(outcome))
            .expect("a free port in three tries")
    }

    #[test]
    fn a_failing_point_stops_the_sweep_and_keeps_what_finished() {
        // A listener already on the port makes the TCP point's bind fail;
        // the UDP point before it uses the same number for UDP and runs.
        // That UDP port may be taken as another test's ephemeral source
        // port before the point binds it (seen once in CI): a fresh one
        // then, three times.
        let (busy, outcome, seen) = on_a_free_port(
            || {
                let busy = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
                let port = busy.local_addr().unwrap().port();
                let grid = grid(vec![Protocol::Udp, Protocol::Tcp], port);
                let points = grid.points(KernelPath::Loopback).unwrap();
                let mut seen = Vec::new();
                let outcome = run(&points, &settings(2), |e| {
                    if let Event::Rep(p) = e {
                        seen.push((p.points_done, p.points, p.point.index, p.rep))
                    }
                })
                .unwrap();
                (busy, outcome, seen)
            },
            |(_, o, _)| {
                o.failure.as_ref().is_some_and(|f| {
                    let f = f.to_string();
                    f.starts_with("point 1 ") && f.contains("in use")
                })
            },
        );
        assert_eq!(seen, vec![(0, 2, 1, 1), (0, 2, 1, 2), (1, 2, 2, 1)]);
        let run = outcome.results[0].run();
        // Min and cap both 2: two repetitions, judged.
        assert!(
            matches!(run.verdict, repeat::Verdict::Met | repeat::Verdict::RepCap),
            "{run:?}"
        );
        assert_eq!(outcome.results[0].estimate().map(|e| e.n), Some(2));
        // The machine was watched: its cores, and others' CPU during the
        // point (none when the point ended within one clock tick).
        assert!(outcome.load_check.cores >= 1);
        assert!(run.others_cpu.is_none_or(|o| o >= 0.0), "{run:?}");
        assert!(run.elapsed_s > 0.0 && run.target_percent == 2.0, "{run:?}");
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
    fn interleaved_points_take_turns_one_repetition_a_round() {
        let settings = Settings {
            interleave: true,
            ..settings(2)
        };
        // A free port may be taken as another test's ephemeral source
        // port before the point binds it: a fresh one then, three times.
        let (outcome, seen) = on_a_free_port(
            || {
                let port = TcpListener::bind((Ipv6Addr::LOCALHOST, 0))
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port();
                let mut grid = grid(vec![Protocol::Udp], port);
                grid.sizes = vec![512, 1024];
                let points = grid.points(KernelPath::Loopback).unwrap();
                let mut seen = Vec::new();
                let outcome = run(&points, &settings, |e| {
                    if let Event::Rep(p) = e {
                        seen.push((p.points_done, p.point.index, p.rep))
                    }
                })
                .unwrap();
                (outcome, seen)
            },
            |(o, _)| {
                o.failure
                    .as_ref()
                    .is_some_and(|f| f.to_string().contains("in use"))
            },
        );
        assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
        assert_eq!(seen, vec![(0, 1, 1), (0, 2, 1), (0, 1, 2), (0, 2, 2)]);
        assert_eq!(outcome.results.len(), 2);
        for result in &outcome.results {
            assert_eq!(result.estimate().map(|e| e.n), Some(2));
            let trips = result.run().core_trip;
            // Before each repetition and after the last: three tries, each
            // kept where measurable (a busy partner CPU gives up one).
            assert!(trips.is_none_or(|t| (1..=3).contains(&t.n)), "{trips:?}");
        }
    }

    #[test]
    fn zero_repetitions_and_too_many_kept_round_trips_are_refused() {
        let err = run(&[], &settings(0), |_| {}).unwrap_err();
        assert_eq!(err.to_string(), "--reps must be at least 1");
        let mut bad = settings(3);
        bad.target.max_reps = 2;
        let err = run(&[], &bad, |_| {}).unwrap_err();
        assert!(err.to_string().contains("--max-reps 2"), "{err}");

        let mut grid = grid(vec![Protocol::Udp], 5001);
        grid.mode = Mode::Delay;
        grid.amount = Amount::Count(MAX_EXCHANGES / 2 + 1);
        let points = grid.points(KernelPath::Loopback).unwrap();
        let mut ran = false;
        let err = run(&points, &settings(2), |e| ran |= matches!(e, Event::Rep(_))).unwrap_err();
        assert!(err.to_string().contains("round trips to keep"), "{err}");
        assert!(!ran, "refused before running");
    }

    /// The CPUs each child process of the calling thread may use, as the
    /// kernel says (/proc/thread-self/children, then each one's status).
    fn childrens_cpus() -> Vec<Vec<usize>> {
        let children = std::fs::read_to_string("/proc/thread-self/children").unwrap_or_default();
        children
            .split_whitespace()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| crate::affinity::cpus_allowed_list(&status))
            .collect()
    }

    #[test]
    fn each_level_runs_its_spinners_on_the_loaded_sides_cpu() {
        let Some([server, client]) = crate::affinity::first_two_cpus() else {
            return; // one CPU: `pinned = false`, tested in the CLI's sweep test
        };
        let mut g = grid(vec![Protocol::Tcp], 47_361);
        g.loads = vec![0, 2];
        g.load_on = vec![LoadOn::Server, LoadOn::Client];
        let points = g.points(KernelPath::Loopback).unwrap();
        // Seen before each point's first repetition, while its load runs.
        let mut seen = Vec::new();
        let outcome = run(&points, &settings(1), |e| {
            if let Event::Rep(p) = e {
                seen.push((p.point.load, p.point.load_on, childrens_cpus()));
            }
        })
        .unwrap();
        assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
        assert_eq!(
            seen,
            vec![
                (0, LoadOn::Server, vec![]),
                (0, LoadOn::Client, vec![]),
                (2, LoadOn::Server, vec![vec![server]; 2]),
                (2, LoadOn::Client, vec![vec![client]; 2]),
            ]
        );
        for result in &outcome.results {
            let (p, run) = (result.point(), result.run());
            let cpu = if p.load_on == LoadOn::Server {
                server
            } else {
                client
            };
            assert_eq!((run.load_cpu, run.pinned), (Some(cpu), Some(true)), "{p}");
            let placement = result.target().placement.expect("a placement");
            assert_eq!(
                (placement.receiver_cpu, placement.sender_cpu),
                (server, client)
            );
        }
        // Killed and reaped once the sweep is over.
        assert_eq!(childrens_cpus(), Vec::<Vec<usize>>::new());
    }
}
