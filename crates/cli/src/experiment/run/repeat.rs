//! When a messages run repeats its sizes: another pass over every size
//! until the send stop latency's slope is known to the recipe's target
//! (`slope_ci_target`), the time cap (`slope_time_cap`) would be passed,
//! or the run's message limit is reached.
//!
//! The slope's interval comes from the line through the sizes' means, so
//! its half-width falls about as 1/√(repetitions per size) while the
//! noise of the means dominates it; the next pass asks for the
//! repetitions that scaling says are still missing (with a margin), as
//! many as the time left and one probe ring allow.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use analysis::messages::MessageLatency;
use analysis::sweep::{self, Pass, SizePoint, SlopeRepetition};
use analysis::TraceView;
use report::model::Calibration;
use stack::topology::Topology;
use stats::Verdict;
use traffic::reference::messages::MessagesSpec;

use super::{now_ns, run_capture, run_pass, RunCapture, Tally};
use crate::experiment::recipe::{MessagesPlan, Recipe, Run};

/// What every pass of a run shares.
pub(super) struct Context<'a> {
    pub recipe: &'a Recipe,
    pub run: &'a Run,
    pub plan: &'a MessagesPlan,
    pub calibration: &'a Calibration,
    pub dir: &'a Path,
    pub topology: &'a Topology,
    /// The first pass's spec; later passes change `reps` and `pcap_dir`.
    pub spec: &'a MessagesSpec,
    /// `<recipe>-<run>`, which names the run's files.
    pub stem: &'a str,
}

/// After the first pass (its measured messages in `messages`, its trace
/// at `first_trace`, begun at `started`): passes until the budget says
/// stop. Each pass is the first's run again — same sizes, warm-up,
/// buffers, probes and capture — with its own trace
/// (`traces/<stem>-pass<N>.sstrace`) and captures (`pcap/<stem>/pass<N>/`,
/// merged into `trace.pcapng` like the first's); its measured messages
/// join `messages`, its counts `tally`.
#[allow(clippy::too_many_arguments)]
pub(super) fn more_passes(
    cx: &Context,
    budget: Budget,
    started: Instant,
    first_trace: &str,
    messages: &mut Vec<MessageLatency>,
    tally: &mut Tally,
    captures: &mut Vec<RunCapture>,
) -> Result<SlopeRepetition> {
    let sizes = cx.spec.sizes.len() as u64;
    let judge = |messages: &[MessageLatency]| {
        stop_slope(&sweep::by_size(&analysis::Messages {
            messages: messages.to_vec(),
            sender_thread: None,
            receiver_thread: None,
            flow: None,
            stop_at: cx.plan.stop,
        }))
    };
    let mut passes = vec![Pass {
        reps: cx.spec.reps,
        messages: tally.sent,
        wall_s: started.elapsed().as_secs_f64(),
        trace: first_trace.to_string(),
        ..judge(messages)
    }];
    let verdict = loop {
        let so_far = SoFar {
            sizes,
            reps: u64::from(tally.reps(cx.spec.reps)),
            messages: tally.sent + passes.len() as u64 * u64::from(cx.spec.warmup),
            elapsed: started.elapsed(),
            records_per_message: tally.records_per_message,
            warmup: u64::from(cx.spec.warmup),
            relative: passes.last().and_then(|p| p.relative_half_width),
        };
        let reps = match next(&budget, &so_far) {
            Next::Stop(verdict) => break verdict,
            Next::Pass(reps) => reps,
        };
        let number = passes.len() as u32 + 1;
        let pass_started = Instant::now();
        let (trace, sent) = one_pass(cx, reps, number, messages, tally, captures)?;
        tally.extra_reps = tally.extra_reps.saturating_add(reps);
        passes.push(Pass {
            reps,
            messages: sent,
            wall_s: pass_started.elapsed().as_secs_f64(),
            trace,
            ..judge(messages)
        });
    };
    Ok(SlopeRepetition {
        target: budget.target,
        reached: passes.last().and_then(|p| p.relative_half_width),
        verdict,
        time_cap_s: budget.time_cap.as_secs_f64(),
        passes,
    })
}

/// Pass `number`, each size `reps` times: runs, captures, writes and
/// analyses its trace; returns the trace's file and the messages measured.
fn one_pass(
    cx: &Context,
    reps: u32,
    number: u32,
    messages: &mut Vec<MessageLatency>,
    tally: &mut Tally,
    captures: &mut Vec<RunCapture>,
) -> Result<(String, u64)> {
    let pcap_dir = cx
        .dir
        .join("pcap")
        .join(cx.stem)
        .join(format!("pass{number}"));
    std::fs::create_dir_all(&pcap_dir)
        .with_context(|| format!("creating {}", pcap_dir.display()))?;
    let spec = MessagesSpec {
        reps,
        pcap_dir: Some(pcap_dir.clone()),
        ..cx.spec.clone()
    };
    let began = now_ns();
    let result =
        run_pass(cx.topology, &spec, cx.plan.probes).with_context(|| format!("pass {number}"))?;
    captures.push(run_capture(
        cx.recipe, cx.run, &pcap_dir, began, &result, number,
    )?);
    let trace = result.trace(
        cx.calibration.counter_hz,
        cx.calibration.overhead_cycles,
        &format!("{} / {}, pass {number}", cx.recipe.name, cx.run.id),
    );
    let file = format!("traces/{}-pass{number}.sstrace", cx.stem);
    let path = cx.dir.join(&file);
    trace
        .write(BufWriter::new(File::create(&path)?))
        .with_context(|| format!("writing {}", path.display()))?;
    let view = TraceView::new(&trace)?;
    let all = analysis::all_spans(&view);
    let mut found = analysis::messages::analyse(&view, &all, cx.plan.stop)?;
    let warmup: Vec<u64> = result
        .outcomes
        .iter()
        .filter(|o| o.warmup)
        .map(|o| o.index)
        .collect();
    found.messages.retain(|m| !warmup.contains(&m.index));
    let sent_before = tally.sent;
    tally.add(&result, &trace, &all);
    messages.append(&mut found.messages);
    Ok((file, tally.sent - sent_before))
}

/// The repetitions asked for beyond what 1/√n scaling says: a slope
/// interval is itself estimated, and a pass that falls just short costs a
/// whole further pass.
const MARGIN: f64 = 1.3;

/// Share of a host thread's probe ring one pass may fill: the rest is
/// headroom for a pass that records more per message than the first.
const RING_SHARE: f64 = 0.7;

/// What a run may spend on passes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// The slope's 95 % half-width asked for, as a share of the slope.
    pub target: f64,
    pub time_cap: Duration,
    /// Most messages over all passes.
    pub max_messages: u64,
    /// Records one host thread's ring holds.
    pub ring_records: u64,
}

/// What to do after a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Another pass, each size this many times.
    Pass(u32),
    Stop(Verdict),
}

/// The passes so far, measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct SoFar {
    /// Sizes per pass.
    pub sizes: u64,
    /// Repetitions per size over every pass.
    pub reps: u64,
    /// Messages sent over every pass, warm-up included.
    pub messages: u64,
    /// Wall time since the first pass began (running and analysing).
    pub elapsed: Duration,
    /// The most records one host thread wrote per message in any pass.
    pub records_per_message: f64,
    /// Fixed cost of a pass (setting up, warm-up, analysing) is in
    /// `elapsed`; this is the warm-up messages each pass sends.
    pub warmup: u64,
    /// The slope's relative half-width over every pass so far.
    pub relative: Option<f64>,
}

/// After a pass: stop (target met, or a cap), or how many repetitions
/// the next pass makes of each size.
pub(super) fn next(budget: &Budget, so_far: &SoFar) -> Next {
    if so_far
        .relative
        .is_some_and(|r| r <= budget.target && r.is_finite())
    {
        return Next::Stop(Verdict::Met);
    }
    if so_far.sizes == 0 || so_far.reps == 0 {
        return Next::Stop(Verdict::RepCap);
    }
    // Repetitions the 1/√n scaling says are missing; without an interval
    // yet (too few points), as many again.
    let wanted = match so_far.relative {
        Some(r) if r.is_finite() => {
            let total = so_far.reps as f64 * (r / budget.target).powi(2) * MARGIN;
            (total - so_far.reps as f64).ceil().max(1.0)
        }
        _ => so_far.reps as f64,
    };
    // What the time left allows, at the passes' cost so far per repetition
    // of every size (the warm-up and the analysis included).
    let per_rep = so_far.elapsed.as_secs_f64() / so_far.reps as f64;
    let left = (budget.time_cap.as_secs_f64() - so_far.elapsed.as_secs_f64()).max(0.0);
    let by_time = if per_rep > 0.0 {
        (left / per_rep).floor()
    } else {
        f64::INFINITY
    };
    if by_time < 1.0 {
        return Next::Stop(Verdict::TimeCap);
    }
    let messages_left = budget.max_messages.saturating_sub(so_far.messages);
    let by_messages = (messages_left.saturating_sub(so_far.warmup) / so_far.sizes) as f64;
    if by_messages < 1.0 {
        return Next::Stop(Verdict::RepCap);
    }
    // One pass fills one ring; a pass the ring cannot hold drops records.
    let by_ring = if so_far.records_per_message > 0.0 {
        ((budget.ring_records as f64 * RING_SHARE / so_far.records_per_message
            - so_far.warmup as f64)
            / so_far.sizes as f64)
            .floor()
            .max(1.0)
    } else {
        f64::INFINITY
    };
    let reps = wanted.min(by_time).min(by_messages).min(by_ring);
    Next::Pass(reps.min(f64::from(u32::MAX)) as u32)
}

/// The send stop latency's slope over `points` (the sizes' means, µs
/// against KB): the figure a pass records and the target judges.
pub(super) fn stop_slope(points: &[SizePoint]) -> Pass {
    let fit = sweep::trends(points, None, false).stop;
    Pass {
        reps: 0,
        messages: 0,
        wall_s: 0.0,
        trace: String::new(),
        slope: fit.map(|f| f.a),
        slope_ci95: fit.and_then(|f| f.slope_ci95),
        relative_half_width: fit.and_then(|f| f.slope_relative_half_width()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Budget {
        Budget {
            target: 0.05,
            time_cap: Duration::from_secs(120),
            max_messages: 100_000,
            ring_records: 2 << 20,
        }
    }

    fn after_one_pass(relative: Option<f64>) -> SoFar {
        SoFar {
            sizes: 200,
            reps: 3,
            messages: 610,
            elapsed: Duration::from_secs(3),
            records_per_message: 500.0,
            warmup: 10,
            relative,
        }
    }

    #[test]
    fn a_slope_known_well_enough_stops() {
        assert_eq!(
            next(&budget(), &after_one_pass(Some(0.049))),
            Next::Stop(Verdict::Met)
        );
    }

    #[test]
    fn a_wide_slope_asks_for_the_repetitions_the_square_root_law_misses() {
        // ±10 % after 3 repetitions: 4 × 3 × 1.3 = 15.6 in all, so 13 more.
        assert_eq!(next(&budget(), &after_one_pass(Some(0.10))), Next::Pass(13));
        // No interval yet: as many again.
        assert_eq!(next(&budget(), &after_one_pass(None)), Next::Pass(3));
    }

    #[test]
    fn the_time_cap_bounds_the_next_pass_and_then_stops() {
        // 1 s per repetition of every size, 10 s left: at most 10 more.
        let tight = Budget {
            time_cap: Duration::from_secs(13),
            ..budget()
        };
        assert_eq!(next(&tight, &after_one_pass(Some(0.5))), Next::Pass(10));
        let spent = SoFar {
            elapsed: Duration::from_millis(12_500),
            ..after_one_pass(Some(0.5))
        };
        assert_eq!(next(&tight, &spent), Next::Stop(Verdict::TimeCap));
    }

    #[test]
    fn the_ring_and_the_message_limit_bound_a_pass() {
        // 2 Mi records × 0.7 / 500 per message = 2936 messages: 14 reps of
        // 200 sizes after the 10 warm-up messages.
        assert_eq!(next(&budget(), &after_one_pass(Some(0.3))), Next::Pass(14));
        let full = Budget {
            max_messages: 700,
            ..budget()
        };
        assert_eq!(
            next(&full, &after_one_pass(Some(0.3))),
            Next::Stop(Verdict::RepCap)
        );
    }
}
