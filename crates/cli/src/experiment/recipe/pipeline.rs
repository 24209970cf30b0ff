//! A `pipeline` run: one stage of a pipelined application (receive,
//! compute, transmit threads on one CPU) on the kernel's TCP over
//! loopback, the SunOS study's Figure 18 (`traffic::kernel::pipeline`).
//!
//! Keys: `sizes` (the block, one size), `count` / `quick_count` (blocks),
//! `compute_us` (CPU work per block on an idle CPU), `warmup` (blocks left
//! out of the figures), `family`; `link` must be `default` (the path is
//! the kernel's loopback). Every other key is refused.

use std::time::Duration;

use toml::Spanned;
use traffic::spec::Family;

use super::{sizes, Link, Locator, RawRun, RecipeError};

/// Most blocks a pipeline run sends.
pub const MAX_BLOCKS: u64 = 100_000;
/// Most CPU work per block, µs.
pub const MAX_COMPUTE_US: u64 = 1_000_000;

/// A checked pipeline run.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelinePlan {
    pub family: Family,
    pub block_bytes: usize,
    pub blocks: u32,
    pub quick_blocks: u32,
    pub compute: Duration,
    /// Blocks at the start left out of the figures.
    pub warmup: u32,
}

impl PipelinePlan {
    pub fn blocks(&self, quick: bool) -> u32 {
        if quick {
            self.quick_blocks
        } else {
            self.blocks
        }
    }
}

pub(super) fn plan(run: &RawRun, link: &Link, loc: &Locator) -> Result<PipelinePlan, RecipeError> {
    if *link != Link::Default {
        return Err(loc.at(
            run.link.span(),
            "a `pipeline` run uses the kernel's loopback: give link = \"default\"".into(),
        ));
    }
    refuse_other_keys(run, loc)?;
    let block = sizes("sizes", run.sizes.get_ref()).map_err(|e| loc.at(run.sizes.span(), e))?;
    let &[block_bytes] = block.as_slice() else {
        return Err(loc.at(
            run.sizes.span(),
            "a `pipeline` run has one block size, e.g. sizes = \"16K\"".into(),
        ));
    };
    let blocks_of = |key: &str, value: &Option<Spanned<u64>>, default: Option<u32>| match value {
        None => default.ok_or_else(|| {
            loc.at(
                run.kind.span(),
                format!("a `pipeline` run needs `{key}` (blocks to send)"),
            )
        }),
        Some(v) if (1..=MAX_BLOCKS).contains(v.get_ref()) => Ok(*v.get_ref() as u32),
        Some(v) => Err(loc.at(v.span(), format!("{key}: give 1..{MAX_BLOCKS} blocks"))),
    };
    let blocks = blocks_of("count", &run.count, None)?;
    let quick_blocks = blocks_of("quick_count", &run.quick_count, Some(blocks))?;
    let compute = match &run.compute_us {
        None => {
            return Err(loc.at(
                run.kind.span(),
                "a `pipeline` run needs `compute_us` (CPU work per block, µs)".into(),
            ))
        }
        Some(v) if *v.get_ref() <= MAX_COMPUTE_US => Duration::from_micros(*v.get_ref()),
        Some(v) => return Err(loc.at(v.span(), format!("compute_us: give 0..{MAX_COMPUTE_US} µs"))),
    };
    let warmup = run
        .warmup
        .as_ref()
        .map_or(blocks.min(quick_blocks) / 10, |w| *w.get_ref());
    if warmup >= blocks.min(quick_blocks) {
        let span = run.warmup.as_ref().map_or(run.kind.span(), |w| w.span());
        return Err(loc.at(
            span,
            format!(
                "warmup {warmup} leaves no block to measure of {}",
                blocks.min(quick_blocks)
            ),
        ));
    }
    let family = match run.family.as_ref().map(|f| f.get_ref().as_str()) {
        None | Some("ipv6") => Family::V6,
        Some("ipv4") => Family::V4,
        Some(other) => {
            let span = run.family.as_ref().map_or(0..0, |f| f.span());
            return Err(loc.at(span, format!("family `{other}` is not one of: ipv6, ipv4")));
        }
    };
    Ok(PipelinePlan {
        family,
        block_bytes,
        blocks,
        quick_blocks,
        compute,
        warmup,
    })
}

fn refuse_other_keys(run: &RawRun, loc: &Locator) -> Result<(), RecipeError> {
    let spans = [
        ("quick_sizes", run.quick_sizes.as_ref().map(Spanned::span)),
        ("reps", run.reps.as_ref().map(Spanned::span)),
        ("quick_reps", run.quick_reps.as_ref().map(Spanned::span)),
        ("protocol", run.protocol.as_ref().map(Spanned::span)),
        ("sockbuf", run.sockbuf.as_ref().map(Spanned::span)),
        ("stop", run.stop.as_ref().map(Spanned::span)),
        ("probes", run.probes.as_ref().map(Spanned::span)),
        (
            "fragmentation",
            run.fragmentation.as_ref().map(Spanned::span),
        ),
        (
            "slope_ci_target",
            run.slope_ci_target.as_ref().map(Spanned::span),
        ),
        (
            "quick_slope_ci_target",
            run.quick_slope_ci_target.as_ref().map(Spanned::span),
        ),
        (
            "slope_time_cap",
            run.slope_time_cap.as_ref().map(Spanned::span),
        ),
        (
            "quick_slope_time_cap",
            run.quick_slope_time_cap.as_ref().map(Spanned::span),
        ),
        ("stacks", run.stacks.as_ref().map(Spanned::span)),
        ("protocols", run.protocols.as_ref().map(Spanned::span)),
        ("mix", run.mix.as_ref().map(Spanned::span)),
        ("families", run.families.as_ref().map(Spanned::span)),
        ("sockbufs", run.sockbufs.as_ref().map(Spanned::span)),
        (
            "quick_sockbufs",
            run.quick_sockbufs.as_ref().map(Spanned::span),
        ),
        ("rates", run.rates.as_ref().map(Spanned::span)),
        ("quick_rates", run.quick_rates.as_ref().map(Spanned::span)),
        ("total", run.total.as_ref().map(Spanned::span)),
        ("quick_total", run.quick_total.as_ref().map(Spanned::span)),
        ("min_duration", run.min_duration.as_ref().map(Spanned::span)),
        (
            "quick_min_duration",
            run.quick_min_duration.as_ref().map(Spanned::span),
        ),
        ("circuits", run.circuits.as_ref().map(Spanned::span)),
        ("xtp", run.xtp.as_ref().map(Spanned::span)),
        ("connect_each", run.connect_each.as_ref().map(Spanned::span)),
        ("congestion", run.congestion.as_ref().map(Spanned::span)),
        ("load", run.load.as_ref().map(Spanned::span)),
        ("x", run.x.as_ref().map(Spanned::span)),
        ("predict", run.predict.as_ref().map(Spanned::span)),
        ("ci_target", run.ci_target.as_ref().map(Spanned::span)),
        (
            "quick_ci_target",
            run.quick_ci_target.as_ref().map(Spanned::span),
        ),
        ("max_reps", run.max_reps.as_ref().map(Spanned::span)),
        (
            "quick_max_reps",
            run.quick_max_reps.as_ref().map(Spanned::span),
        ),
        ("max_time", run.max_time.as_ref().map(Spanned::span)),
        (
            "quick_max_time",
            run.quick_max_time.as_ref().map(Spanned::span),
        ),
        ("interleave", run.interleave.as_ref().map(Spanned::span)),
    ];
    match spans.into_iter().find_map(|(key, span)| Some((key, span?))) {
        Some((key, span)) => {
            Err(loc.at(span, format!("`{key}` does not apply to a `pipeline` run")))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Plan};
    use super::*;

    const GOOD: &str = r#"
name = "p"
title = "P"
source = "001_x.txt"

[[run]]
id = "stage"
kind = "pipeline"
link = "default"
sizes = "16K"
count = 600
quick_count = 150
compute_us = 2000
warmup = 50
"#;

    fn plan(text: &str) -> Result<PipelinePlan, String> {
        let recipe =
            parse("p.toml", text).map_err(|e| format!("line {}: {}", e.line, e.message))?;
        match &recipe.runs[0].plan {
            Plan::Pipeline(p) => Ok(p.clone()),
            _ => panic!("not a pipeline plan"),
        }
    }

    #[test]
    fn a_good_pipeline_run_is_read_whole() {
        assert_eq!(
            plan(GOOD).unwrap(),
            PipelinePlan {
                family: Family::V6,
                block_bytes: 16384,
                blocks: 600,
                quick_blocks: 150,
                compute: Duration::from_millis(2),
                warmup: 50,
            }
        );
        // Warm-up defaults to a tenth of the shorter run.
        let p = plan(&GOOD.replace("warmup = 50\n", "")).unwrap();
        assert_eq!(p.warmup, 15);
    }

    #[test]
    fn bad_pipeline_runs_name_their_key_and_line() {
        for (from, to, line, says) in [
            (
                "link = \"default\"",
                "link = \"fast-ethernet\"",
                9,
                "loopback",
            ),
            (
                "sizes = \"16K\"",
                "sizes = \"16K,32K\"",
                10,
                "one block size",
            ),
            ("count = 600", "count = 0", 11, "count: give 1..100000"),
            (
                "compute_us = 2000",
                "compute_us = 2000000",
                13,
                "compute_us",
            ),
            ("warmup = 50", "warmup = 150", 14, "leaves no block"),
            (
                "warmup = 50",
                "warmup = 5\nreps = 3",
                15,
                "`reps` does not apply",
            ),
            ("compute_us = 2000\n", "", 8, "needs `compute_us`"),
        ] {
            let text = GOOD.replace(from, to);
            let e = plan(&text).unwrap_err();
            assert!(
                e.starts_with(&format!("line {line}:")),
                "{from} -> {to}: {e}"
            );
            assert!(e.contains(says), "{from} -> {to}: {e}");
        }
    }

    #[test]
    fn compute_us_belongs_to_pipelines_only() {
        let text = r#"
name = "m"
title = "M"
source = "x.txt"

[[run]]
id = "tcp"
kind = "messages"
protocol = "tcp"
link = "fast-ethernet"
sizes = "100"
compute_us = 5
"#;
        let e = parse("m.toml", text).unwrap_err();
        assert!(
            e.message.contains("`compute_us` does not apply"),
            "{}",
            e.message
        );
    }
}
