//! When a messages run repeats its sizes: passes over every size, each
//! the first run again, until the send stop latency's slope is known to
//! the recipe's target (`slope_ci_target`), the time cap
//! (`slope_time_cap`) would be passed, or the run's message limit is
//! reached.
//!
//! The slope judged is the run's: the line through the sizes' medians
//! over every pass, with its 95 % interval. Each pass's own slope is
//! kept too, so the report shows how far passes — new stacks on new
//! networks, seeing the machine anew — differ.
//!
//! Why not judge the spread of the passes' slopes instead: under load
//! a pass's three repetitions per size are at times held up together,
//! and the passes' slopes were heavy-tailed (UDP on two cores under load
//! 7: mostly 83.7–86 µs/KB, a few 100–156), so their mean and interval
//! moved by 5 % between two runs while the pooled line moved by 0.1 %.

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
/// stop. Each pass is the first's run again — same sizes, repetitions,
/// warm-up, buffers, probes and capture — with its own trace
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
    let pass_messages =
        cx.spec.sizes.len() as u64 * u64::from(cx.spec.reps) + u64::from(cx.spec.warmup);
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
    // The run's line, over every pass so far.
    let mut pooled = judge(messages);
    let verdict = loop {
        let so_far = SoFar {
            passes: passes.len() as u64,
            messages: passes.len() as u64 * pass_messages,
            pass_messages,
            elapsed: started.elapsed(),
            relative: pooled.relative_half_width,
        };
        if let Some(verdict) = verdict(&budget, &so_far) {
            break verdict;
        }
        let number = passes.len() as u32 + 1;
        tally.core_trips.extend(traffic::core_trip::measure());
        let pass_started = Instant::now();
        let (trace, mut found, sent) = one_pass(cx, number, tally, captures)?;
        tally.extra_reps = tally.extra_reps.saturating_add(cx.spec.reps);
        passes.push(Pass {
            reps: cx.spec.reps,
            messages: sent,
            wall_s: pass_started.elapsed().as_secs_f64(),
            trace,
            ..judge(&found)
        });
        messages.append(&mut found);
        pooled = judge(messages);
    };
    Ok(SlopeRepetition {
        target: budget.target,
        slope: pooled.slope,
        slope_ci95: pooled.slope_ci95,
        reached: pooled.relative_half_width,
        verdict,
        time_cap_s: budget.time_cap.as_secs_f64(),
        passes,
    })
}

/// Pass `number`: runs, captures, writes and analyses its trace; returns
/// the trace's file, the messages measured and how many.
fn one_pass(
    cx: &Context,
    number: u32,
    tally: &mut Tally,
    captures: &mut Vec<RunCapture>,
) -> Result<(String, Vec<MessageLatency>, u64)> {
    let pcap_dir = cx
        .dir
        .join("pcap")
        .join(cx.stem)
        .join(format!("pass{number}"));
    std::fs::create_dir_all(&pcap_dir)
        .with_context(|| format!("creating {}", pcap_dir.display()))?;
    let spec = MessagesSpec {
        pcap_dir: Some(pcap_dir.clone()),
        ..cx.spec.clone()
    };
    let began = now_ns();
    let result =
        run_pass(cx.topology, &spec, cx.plan.probes).with_context(|| format!("pass {number}"))?;
    // The machine's state after the pass too (before it: the caller).
    tally.core_trips.extend(traffic::core_trip::measure());
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
    let _ = super::drop_warmup(&mut found, &result);
    let sent_before = tally.sent;
    tally.add(&result, &trace, &all);
    Ok((file, found.messages, tally.sent - sent_before))
}

/// What a run may spend on passes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// The 95 % half-width of the run's slope asked for, as a share of it.
    pub target: f64,
    pub time_cap: Duration,
    /// Most messages over all passes.
    pub max_messages: u64,
}

/// The passes so far, measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct SoFar {
    pub passes: u64,
    /// Messages sent over every pass, warm-up included, and per pass.
    pub messages: u64,
    pub pass_messages: u64,
    /// Wall time since the first pass began (running and analysing).
    pub elapsed: Duration,
    /// The run's slope's relative half-width so far.
    pub relative: Option<f64>,
}

/// After a pass: `None` for another, or why the passes stop.
pub(super) fn verdict(budget: &Budget, so_far: &SoFar) -> Option<Verdict> {
    let known = so_far
        .relative
        .is_some_and(|r| r.is_finite() && r <= budget.target);
    if known {
        return Some(Verdict::Met);
    }
    // The next pass costs what the passes so far cost on average (the
    // first's timeline and analysis make that generous).
    let per_pass = so_far.elapsed.as_secs_f64() / so_far.passes.max(1) as f64;
    if so_far.elapsed.as_secs_f64() + per_pass > budget.time_cap.as_secs_f64() {
        return Some(Verdict::TimeCap);
    }
    if so_far.messages + so_far.pass_messages > budget.max_messages {
        return Some(Verdict::RepCap);
    }
    None
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
            target: 0.02,
            time_cap: Duration::from_secs(120),
            max_messages: 100_000,
        }
    }

    fn after(passes: u64, relative: Option<f64>) -> SoFar {
        SoFar {
            passes,
            messages: passes * 610,
            pass_messages: 610,
            elapsed: Duration::from_secs(3 * passes),
            relative,
        }
    }

    #[test]
    fn a_slope_known_well_enough_stops_and_a_wider_one_repeats() {
        assert_eq!(
            verdict(&budget(), &after(1, Some(0.019))),
            Some(Verdict::Met)
        );
        assert_eq!(verdict(&budget(), &after(5, Some(0.021))), None);
        // No interval yet (too few points): repeat.
        assert_eq!(verdict(&budget(), &after(1, None)), None);
        assert_eq!(verdict(&budget(), &after(1, Some(f64::NAN))), None);
    }

    #[test]
    fn a_pass_that_would_end_after_the_cap_is_not_started() {
        let tight = Budget {
            time_cap: Duration::from_secs(13),
            ..budget()
        };
        // 3 s a pass: after four (12 s) a fifth would end at 15 s.
        assert_eq!(verdict(&tight, &after(3, Some(0.5))), None);
        assert_eq!(
            verdict(&tight, &after(4, Some(0.5))),
            Some(Verdict::TimeCap)
        );
    }

    #[test]
    fn the_message_limit_stops_the_passes() {
        let small = Budget {
            max_messages: 2000,
            ..budget()
        };
        assert_eq!(verdict(&small, &after(2, Some(0.5))), None);
        assert_eq!(verdict(&small, &after(3, Some(0.5))), Some(Verdict::RepCap));
    }
}
