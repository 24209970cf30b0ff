//! When a messages run repeats its sizes: passes over every size, each
//! the first run again, until the send stop latency's slope is known to
//! the recipe's target (`slope_ci_target`), the time cap
//! (`slope_time_cap`, over the run's own passes) would be passed, or the
//! run's message limit is reached. A recipe's repeating runs take their
//! passes in turn (see `run_recipe`).
//!
//! The slope judged is the run's: the line through the sizes' medians
//! over every pass. Its interval has two sources, and the run's is the
//! hull of both:
//! * the line's own 95 % interval, from its points' scatter about it;
//! * the passes' spread: each pass is a new stack on a new network that
//!   meets the machine anew, and the passes' slopes differ by more than
//!   the line's interval says (two full labs' one-pass slopes, ±0.14 %
//!   each, differed by 0.5 %). The distribution-free 95 % interval of the
//!   passes' median slope carries that; it needs at least six passes, and
//!   a run takes [`Budget::min_passes`] before its target can be met.
//!
//! Why the median of the passes and not their mean: under load a pass's
//! three repetitions per size are at times held up together, and the
//! passes' slopes are heavy-tailed (UDP on two cores under load 7:
//! mostly 83.7–86 µs/KB, a few 100–156; quiet: 53 passes within
//! 83.5–84.2 but for two at 86), so their mean and its t interval moved
//! by 5 % between two runs.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use analysis::messages::{MessageLatency, StopAt};
use analysis::sweep::{self, Pass, SizePoint, SlopeRepetition};
use analysis::TraceView;
use report::model::Calibration;
use stack::topology::Topology;
use stats::Verdict;
use stats::{Estimate, Interval};
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

/// A run's passes so far and how well they know its slope. After the
/// first pass, [`Repetition::another_pass`] runs passes until the budget
/// says stop. Each pass is the first's run again — same sizes,
/// repetitions, warm-up, buffers, probes and capture — with its own trace
/// (`traces/<stem>-pass<N>.sstrace`) and captures (`pcap/<stem>/pass<N>/`,
/// merged into `trace.pcapng` like the first's); its measured messages
/// join the run's, its counts the run's tally.
pub(super) struct Repetition {
    budget: Budget,
    /// Messages one pass sends, warm-up included.
    pass_messages: u64,
    stop: StopAt,
    passes: Vec<Pass>,
    /// The run's line, over every pass so far.
    pooled: Pass,
    known: Known,
    /// Wall time the run's own passes took, running and analysing, the
    /// first's included: other runs' passes between its own do not count
    /// against its time cap.
    spent: Duration,
    /// When the first pass began.
    first_began: Instant,
    verdict: Option<Verdict>,
}

impl Repetition {
    /// After the first pass of `spec` (begun at `first_began`, its trace
    /// `first_trace`, `sent` measured messages, found `messages`).
    pub(super) fn after_first(
        budget: Budget,
        spec: &MessagesSpec,
        stop: StopAt,
        first_began: Instant,
        first_trace: &str,
        sent: u64,
        messages: &[MessageLatency],
    ) -> Repetition {
        let pooled = judge(messages, stop);
        let spent = first_began.elapsed();
        let passes = vec![Pass {
            reps: spec.reps,
            messages: sent,
            wall_s: spent.as_secs_f64(),
            began_s: 0.0,
            trace: first_trace.to_string(),
            ..pooled.clone()
        }];
        Repetition {
            known: Known::of(&pooled, &passes, budget.min_passes),
            pass_messages: spec.sizes.len() as u64 * u64::from(spec.reps) + u64::from(spec.warmup),
            budget,
            stop,
            passes,
            pooled,
            spent,
            first_began,
            verdict: None,
        }
    }

    /// Runs one more pass unless the budget says stop (and then records
    /// why); whether it ran. The pass's messages join `messages`.
    pub(super) fn another_pass(
        &mut self,
        cx: &Context,
        messages: &mut Vec<MessageLatency>,
        tally: &mut Tally,
        captures: &mut Vec<RunCapture>,
    ) -> Result<bool> {
        if self.verdict.is_some() {
            return Ok(false);
        }
        let so_far = SoFar {
            passes: self.passes.len() as u64,
            messages: self.passes.len() as u64 * self.pass_messages,
            pass_messages: self.pass_messages,
            elapsed: self.spent,
            relative: self.known.relative,
        };
        if let Some(verdict) = verdict(&self.budget, &so_far) {
            self.verdict = Some(verdict);
            return Ok(false);
        }
        let number = self.passes.len() as u32 + 1;
        let pass_started = Instant::now();
        tally.gauge();
        let (trace, mut found, sent) = one_pass(cx, number, tally, captures)?;
        tally.extra_reps = tally.extra_reps.saturating_add(cx.spec.reps);
        let wall = pass_started.elapsed();
        self.spent += wall;
        self.passes.push(Pass {
            reps: cx.spec.reps,
            messages: sent,
            wall_s: wall.as_secs_f64(),
            began_s: pass_started.duration_since(self.first_began).as_secs_f64(),
            trace,
            ..judge(&found, self.stop)
        });
        messages.append(&mut found);
        self.pooled = judge(messages, self.stop);
        self.known = Known::of(&self.pooled, &self.passes, self.budget.min_passes);
        Ok(true)
    }

    /// What the passes found, once they have stopped.
    pub(super) fn outcome(self) -> SlopeRepetition {
        SlopeRepetition {
            target: self.budget.target,
            slope: self.pooled.slope,
            slope_ci95: self.known.interval,
            reached: self.known.relative,
            line_ci95: self.pooled.slope_ci95,
            passes_median: self.known.passes.map(|e| e.median),
            passes_median_ci95: self.known.passes.and_then(|e| e.median_ci95),
            min_passes: self.budget.min_passes,
            // Passes end only with a verdict.
            verdict: self.verdict.unwrap_or(Verdict::RepCap),
            time_cap_s: self.budget.time_cap.as_secs_f64(),
            passes: self.passes,
        }
    }
}

/// The send stop latency's slope over the messages' sizes.
fn judge(messages: &[MessageLatency], stop: StopAt) -> Pass {
    stop_slope(&sweep::by_size(&analysis::Messages {
        messages: messages.to_vec(),
        sender_thread: None,
        receiver_thread: None,
        flow: None,
        stop_at: stop,
    }))
}

/// How well the run's slope is known after some passes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Known {
    /// The hull of the line's interval and, from `min_passes` passes on,
    /// the interval of the passes' median slope; `None` while the line
    /// has none.
    interval: Option<Interval>,
    /// The interval's wider side as a share of the slope: what the target
    /// judges. `None` before `min_passes` passes.
    relative: Option<f64>,
    /// The passes' slopes.
    passes: Option<Estimate>,
}

impl Known {
    fn of(pooled: &Pass, passes: &[Pass], min_passes: u32) -> Known {
        let slopes: Vec<f64> = passes.iter().filter_map(|p| p.slope).collect();
        let spread = Estimate::of(&slopes);
        let enough = passes.len() >= min_passes as usize;
        let interval = match (pooled.slope_ci95, spread.and_then(|e| e.median_ci95)) {
            (Some(line), Some(over)) if enough => Some(Interval {
                lo: line.lo.min(over.lo),
                hi: line.hi.max(over.hi),
            }),
            (line, _) => line,
        };
        let relative = match (pooled.slope, interval) {
            (Some(slope), Some(ci)) if enough && slope != 0.0 => {
                Some((slope - ci.lo).max(ci.hi - slope) / slope.abs())
            }
            _ => None,
        };
        Known {
            interval,
            relative,
            passes: spread,
        }
    }
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
    tally.gauge();
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

/// Passes before a full run's target may be met: the passes' median's
/// interval is then their second lowest to second highest slope, which
/// one odd pass does not set.
pub(super) const MIN_PASSES: u32 = 9;
/// A quick run's: the fewest with an interval (lowest to highest).
pub(super) const QUICK_MIN_PASSES: u32 = 6;

/// What a run may spend on passes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    /// The 95 % half-width of the run's slope asked for, as a share of it.
    pub target: f64,
    pub time_cap: Duration,
    /// Most messages over all passes.
    pub max_messages: u64,
    /// Passes before the target may be met: enough for the passes' median
    /// to have an interval (six at least) that one odd pass on either
    /// side does not set (nine).
    pub min_passes: u32,
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
    /// The run's slope's relative half-width so far; `None` until it is
    /// known (before the least passes, or no interval).
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
        began_s: 0.0,
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
            min_passes: MIN_PASSES,
        }
    }

    fn pass(slope: f64, lo: f64, hi: f64) -> Pass {
        Pass {
            reps: 3,
            messages: 600,
            wall_s: 1.0,
            began_s: 0.0,
            trace: String::new(),
            slope: Some(slope),
            slope_ci95: Some(Interval { lo, hi }),
            relative_half_width: Some((hi - lo) / 2.0 / slope),
        }
    }

    #[test]
    fn the_passes_spread_widens_the_lines_interval_once_there_are_enough() {
        // The line is known to ±0.1 %, but the passes' slopes spread by ±1 %.
        let line = pass(100.0, 99.9, 100.1);
        let slopes = [99.0, 101.0, 99.5, 100.5, 100.0, 99.2, 100.8, 99.8, 100.2];
        let passes: Vec<Pass> = slopes.iter().map(|s| pass(*s, s - 0.1, s + 0.1)).collect();
        let early = Known::of(&line, &passes[..5], MIN_PASSES);
        assert_eq!(early.interval, line.slope_ci95, "five passes: the line's");
        assert_eq!(early.relative, None, "not known before the least passes");
        let known = Known::of(&line, &passes, MIN_PASSES);
        // Nine passes: the median's interval is the second lowest to the
        // second highest slope, 99.2..100.8.
        assert_eq!(
            known.interval,
            Some(Interval {
                lo: 99.2,
                hi: 100.8
            })
        );
        assert!((known.relative.unwrap() - 0.008).abs() < 1e-12);
        assert_eq!(known.passes.unwrap().median, 100.0);
        // Passes that agree better than the line leave the line's interval.
        let tight: Vec<Pass> = (0..9)
            .map(|i| pass(100.0 + 0.01 * f64::from(i), 0.0, 0.0))
            .collect();
        let known = Known::of(&line, &tight, MIN_PASSES);
        assert_eq!(known.interval, line.slope_ci95);
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
