//! A recipe's `pipeline` run: one stage of a pipelined application on the
//! kernel's loopback (`traffic::kernel::pipeline`), its figures, the
//! chart's window and a CSV of every on-interval.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context as _, Result};

use report::model::{PipelineStageRun, Table};
use stats::Estimate;
use traffic::kernel::pipeline::{self, PipelineRun, PipelineSpec, Process};
use traffic::kernel::pipeline_summary::PipelineSummary;
use traffic::spec::Family;

use super::recipe::{PipelinePlan, Recipe, Run};

/// Block periods the chart shows, from the middle of the steady blocks.
const CHART_PERIODS: f64 = 6.0;

pub fn run(
    recipe: &Recipe,
    run: &Run,
    plan: &PipelinePlan,
    quick: bool,
    dir: &Path,
    progress: &Arc<AtomicU64>,
) -> Result<PipelineStageRun> {
    let blocks = plan.blocks(quick);
    let spec = PipelineSpec {
        family: plan.family,
        block_bytes: plan.block_bytes,
        blocks,
        compute: plan.compute,
    };
    // The machine's state before and after, outside the run: its threads
    // talk across the two CPUs and hand blocks to each other asleep, so
    // both the core and the wake round trip (`stackscope compare` reads a
    // change of either as the machine's).
    let mut gauges = super::gauges::Readings::default();
    gauges.measure();
    let result = pipeline::run(&spec)?;
    gauges.measure();
    progress.fetch_add(u64::from(blocks), Ordering::Relaxed);
    let summary = result.summary(plan.warmup as usize);
    let csv = format!("{}-{}-bursts.csv", recipe.name, run.id);
    std::fs::write(dir.join(&csv), bursts_csv(&result))
        .with_context(|| format!("writing {csv}"))?;
    let (window_ms, lanes, send_queue) = chart_window(&result, &summary, plan.warmup);
    let mut notes = vec![format!(
        "The study's stage ran on a single-processor Sparcstation with its neighbours on other hosts; here the stage's three threads share CPU {} and the source and sink run on CPU {}, all over the kernel's {} loopback, so the send queue is the transmit socket's (SIOCOUTQ: bytes not yet acknowledged), not an interface's.",
        result.stage_cpu.map_or("(unpinned)".to_string(), |c| c.to_string()),
        result.peer_cpu.map_or("(unpinned)".to_string(), |c| c.to_string()),
        family_name(plan.family),
    )];
    if result.stage_cpu.is_none() {
        notes.push("Pinning was refused (one CPU, or an affinity mask that forbids it): the scheduler placed the threads, so the processes did not necessarily compete for one CPU.".into());
    }
    Ok(PipelineStageRun {
        id: run.id.clone(),
        title: run.title.clone().unwrap_or_default(),
        family: family_name(plan.family).to_string(),
        block_bytes: plan.block_bytes as u64,
        blocks,
        warmup: plan.warmup,
        compute_us: plan.compute.as_secs_f64() * 1e6,
        compute_iterations: result.compute_iterations,
        stage_cpu: result.stage_cpu,
        peer_cpu: result.peer_cpu,
        figures: serde_json::to_value(&summary)?,
        gauges: gauges.summary(),
        window_ms,
        lanes,
        send_queue,
        table: table(&summary),
        notes,
        csv,
    })
}

fn family_name(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// Blocks the run sends (for progress bars).
pub fn steps(plan: &PipelinePlan, quick: bool) -> u64 {
    u64::from(plan.blocks(quick))
}

fn bursts_csv(run: &PipelineRun) -> String {
    let mut out = String::from("process,block,start_us,end_us\n");
    for b in &run.bursts {
        let _ = writeln!(
            out,
            "{},{},{:.3},{:.3}",
            b.process.as_str(),
            b.block,
            b.start_ns as f64 / 1e3,
            b.end_ns as f64 / 1e3
        );
    }
    out
}

type Lanes = Vec<(String, Vec<[f64; 2]>)>;

/// A window of [`CHART_PERIODS`] block periods from the middle steady
/// block's first byte: each process's on-intervals and the send queue in
/// it, in ms from its start.
fn chart_window(
    run: &PipelineRun,
    summary: &PipelineSummary,
    warmup: u32,
) -> ([f64; 2], Lanes, Vec<[f64; 2]>) {
    let blocks = run.bursts.iter().map(|b| b.block).max().unwrap_or(0) + 1;
    let middle = warmup + (blocks.saturating_sub(warmup)) / 2;
    let start = run
        .bursts
        .iter()
        .find(|b| b.process == Process::Receive && b.block == middle)
        .map_or(0, |b| b.start_ns);
    let period_ns = summary.period_us.as_ref().map_or(1e6, |p| p.median * 1e3);
    let end = start + (CHART_PERIODS * period_ns) as u64;
    let ms = |ns: u64| ns.saturating_sub(start) as f64 / 1e6;
    let lanes = Process::ALL
        .iter()
        .map(|&p| {
            let on = run
                .bursts
                .iter()
                .filter(|b| b.process == p && b.end_ns > start && b.start_ns < end)
                .map(|b| [ms(b.start_ns.max(start)), ms(b.end_ns.min(end))])
                .collect();
            (p.as_str().to_string(), on)
        })
        .collect();
    let queue = run
        .send_queue
        .iter()
        .filter(|q| (start..end).contains(&q.at_ns))
        .map(|q| [ms(q.at_ns), f64::from(q.bytes)])
        .collect();
    ([start as f64 / 1e6, end as f64 / 1e6], lanes, queue)
}

fn table(s: &PipelineSummary) -> Table {
    let row = |name: String, e: Option<&Estimate>| -> Vec<String> {
        match e {
            Some(e) => vec![
                name,
                e.n.to_string(),
                format!("{:.1}", e.mean),
                // Every figure here is a time or a size, never below 0: a
                // mean's interval reaching below 0 says the values are too
                // skewed for a t-interval (a few long waits), not that
                // the figure could be negative. The median then speaks.
                match e.ci95 {
                    Some(ci) if stats::reaches_below_zero(e.mean, ci) => {
                        "too skewed (see the median)".into()
                    }
                    Some(ci) => format!("{:.1} – {:.1}", ci.lo, ci.hi),
                    None => "—".into(),
                },
                match e.median_ci95 {
                    Some(ci) => format!("{:.1} ({:.1} – {:.1})", e.median, ci.lo, ci.hi),
                    None => format!("{:.1}", e.median),
                },
            ],
            None => vec![name, "0".into(), "—".into(), "—".into(), "—".into()],
        }
    };
    let mut rows: Vec<Vec<String>> = s
        .processes
        .iter()
        .map(|p| {
            let mut r = row(
                format!("{} on per block (µs)", p.process.as_str()),
                p.on_us.as_ref(),
            );
            r.push(format!("{:.1} %", p.duty * 100.0));
            r
        })
        .collect();
    for (name, e) in [
        (
            "read to compute start (µs)",
            s.receive_to_compute_us.as_ref(),
        ),
        (
            "compute end to write start (µs)",
            s.compute_to_transmit_us.as_ref(),
        ),
        ("block period (µs)", s.period_us.as_ref()),
        (
            "send queue before a write (bytes)",
            s.send_queue_before_write_bytes.as_ref(),
        ),
        (
            "send queue after a write (bytes)",
            s.send_queue_after_write_bytes.as_ref(),
        ),
    ] {
        let mut r = row(name.to_string(), e);
        r.push(String::new());
        rows.push(r);
    }
    Table {
        caption: format!(
            "Over {} blocks after {} warm-up blocks, a window of {:.1} ms; means and medians with their 95 % intervals (Student's t; order statistics); duty = share of the window the process was on.",
            s.blocks,
            s.warmup,
            s.window_us / 1e3
        ),
        columns: ["figure", "n", "mean", "95 % CI", "median", "duty"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}
