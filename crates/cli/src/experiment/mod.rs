//! `stackscope lab` and `stackscope run FILE`: experiments as recipes,
//! run on the embedded virtual network, analysed, and written as a report.

mod gauges;
mod kernel_run;
mod machine;
mod pipeline_run;
pub mod recipe;
mod run;
mod sweep_run;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::trace::TimelineArg;
use probe::convert::TimelineFormat;
use recipe::Recipe;
use report::model::{Calibration, Report};

/// The recipes `stackscope lab` runs, built in so it needs no files. The
/// same text is in `experiments/`.
const LAB_RECIPES: &[(&str, &str)] = &[
    (
        "experiments/xie1999.toml",
        include_str!("../../../../experiments/xie1999.toml"),
    ),
    (
        "experiments/papadopoulos1993.toml",
        include_str!("../../../../experiments/papadopoulos1993.toml"),
    ),
    (
        "experiments/taler1992.toml",
        include_str!("../../../../experiments/taler1992.toml"),
    ),
    (
        "experiments/draves1998.toml",
        include_str!("../../../../experiments/draves1998.toml"),
    ),
];

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Coarser sweeps and fewer repetitions (under two minutes).
    #[arg(long)]
    quick: bool,
    /// Directory for the results (default: results/<UTC timestamp>);
    /// refused if it already holds files, unless --force.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into an --out directory that already holds files (files of
    /// the same names are replaced, others stay).
    #[arg(long)]
    force: bool,
    /// The timelines' format: protobuf (Perfetto's native trace,
    /// timeline.pftrace) or json (Chrome trace events, timeline.json).
    #[arg(long, value_enum, default_value_t = TimelineArg::Protobuf)]
    timeline_format: TimelineArg,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The recipe (TOML; see experiments/).
    #[arg(value_name = "FILE")]
    recipe: PathBuf,
    /// Use the recipe's quick sweeps.
    #[arg(long)]
    quick: bool,
    /// Directory for the results (default: results/<UTC timestamp>);
    /// refused if it already holds files, unless --force.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into an --out directory that already holds files (files of
    /// the same names are replaced, others stay).
    #[arg(long)]
    force: bool,
    /// The timelines' format: protobuf (Perfetto's native trace,
    /// timeline.pftrace) or json (Chrome trace events, timeline.json).
    #[arg(long, value_enum, default_value_t = TimelineArg::Protobuf)]
    timeline_format: TimelineArg,
}

pub fn lab(args: &LabArgs) -> Result<()> {
    let recipes = LAB_RECIPES
        .iter()
        .map(|(file, text)| recipe::parse(file, text).map_err(anyhow::Error::from))
        .collect::<Result<Vec<_>>>()?;
    let out = Out {
        dir: args.out.as_deref(),
        force: args.force,
        timeline: args.timeline_format.into(),
    };
    execute(&recipes, args.quick, out, "stackscope lab")
}

pub fn run(args: &RunArgs) -> Result<()> {
    let recipe = recipe::load(&args.recipe)?;
    let out = Out {
        dir: args.out.as_deref(),
        force: args.force,
        timeline: args.timeline_format.into(),
    };
    execute(
        &[recipe],
        args.quick,
        out,
        &format!("stackscope run {}", args.recipe.display()),
    )
}

/// Where results go, and whether an occupied directory may be written
/// over.
#[derive(Clone, Copy)]
struct Out<'a> {
    dir: Option<&'a Path>,
    force: bool,
    timeline: TimelineFormat,
}

fn execute(recipes: &[Recipe], quick: bool, out: Out, command: &str) -> Result<()> {
    if !probe::ENABLED {
        bail!("this build has probes compiled out (--no-default-features): experiments need them");
    }
    let began = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let dir = match out.dir {
        Some(dir) => dir.to_path_buf(),
        None => Path::new("results").join(timestamp(began.as_secs())),
    };
    crate::out_dir::prepare(&dir, out.force)?;
    let full_command = format!("{command}{}", if quick { " --quick" } else { "" });
    // Load before the run starts (the table says what the run began under).
    let machine = machine::detect();
    eprintln!("stackscope: calibrating the counter and the probe overhead");
    let calibration = calibrate();
    let total: u64 = recipes.iter().map(|r| run::steps_in(r, quick)).sum();
    let bar = progress_bar(total);
    let progress = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (bar, progress, done) = (bar.clone(), Arc::clone(&progress), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                bar.set_position(progress.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut experiments = Vec::with_capacity(recipes.len());
    let mut captures = Vec::new();
    let mut failure = None;
    for recipe in recipes {
        bar.set_message(recipe.name.clone());
        let files = run::Files {
            dir: &dir,
            timeline: out.timeline,
        };
        match run::run_recipe(recipe, quick, &calibration, files, &progress, &mut captures) {
            Ok(exp) => experiments.push(exp),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    bar.finish_and_clear();
    if let Some(e) = failure {
        return Err(e);
    }
    let capture = merge_captures(&dir, &captures)?;
    let names: Vec<String> = recipes.iter().map(|r| r.name.clone()).collect();
    let report = Report {
        title: report::model::run_title(command, &names, began.as_secs(), quick),
        generated_unix: began.as_secs(),
        quick,
        command: full_command.clone(),
        recipes: names,
        machine,
        calibration,
        summary: report::summary::of(&experiments),
        experiments,
        capture,
    };
    report::write(&dir, &report)?;
    copy_primary_timeline(&dir, &report, out.timeline)?;
    // The kernel runs' events join it, on the same clock (issue 19).
    kernel_run::merge_into_timeline(&dir, &report, out.timeline)?;
    println!("{}", summary_text(&report));
    println!("report: {}", dir.join("report.html").display());
    Ok(())
}

/// `trace.pcapng`: every interface of every messages run in one file,
/// runs one after the other, traced packets commented with their message.
fn merge_captures(
    dir: &Path,
    captures: &[run::RunCapture],
) -> Result<Option<report::capture::MergeStats>> {
    if captures.is_empty() {
        return Ok(None);
    }
    let inputs: Vec<report::capture::CaptureInput> = captures
        .iter()
        .flat_map(|c| {
            c.files
                .iter()
                .map(|(path, prefix)| report::capture::CaptureInput {
                    path: path.clone(),
                    prefix: prefix.clone(),
                    offset_ns: c.offset_ns,
                    messages: Some(&c.messages),
                })
        })
        .collect();
    let stats = report::capture::merge(&inputs, &dir.join("trace.pcapng"))?;
    Ok(Some(stats))
}

/// `timeline.pftrace` (or `timeline.json`) beside the report: the first
/// run's timeline (every run's is under `timelines/`).
fn copy_primary_timeline(dir: &Path, report: &Report, format: TimelineFormat) -> Result<()> {
    if let Some(run) = report.experiments.first().and_then(|e| e.runs.first()) {
        let name = timeline_file(format);
        std::fs::copy(dir.join(&run.files.timeline), dir.join(&name))
            .with_context(|| format!("writing {name}"))?;
    }
    Ok(())
}

/// The timeline beside the report.
pub fn timeline_file(format: TimelineFormat) -> String {
    format!("timeline.{}", format.extension())
}

/// The trend lines, one line per run path, for the terminal.
fn summary_text(report: &Report) -> String {
    let mut lines = Vec::new();
    for exp in &report.experiments {
        for run in &exp.runs {
            if let [point] = run.points.as_slice() {
                let mean = |f: Option<&analysis::sweep::PathFigures>, stop: bool| {
                    f.map_or("-".to_string(), |f| {
                        format!(
                            "{:.1} µs",
                            if stop {
                                f.stop_us.mean
                            } else {
                                f.start_us.mean
                            }
                        )
                    })
                };
                lines.push(format!(
                    "{}/{} {} B: send start {}, stop {}; receive start {}, stop {}",
                    exp.name,
                    run.id,
                    point.size,
                    mean(point.send.as_ref(), false),
                    mean(point.send.as_ref(), true),
                    mean(point.receive.as_ref(), false),
                    mean(point.receive.as_ref(), true),
                ));
                continue;
            }
            for (path, trends) in [("send", &run.send), ("receive", &run.receive)] {
                let line = |fit: &Option<analysis::trend::Fit>| {
                    fit.map_or("-".to_string(), |f| {
                        let mark = f
                            .intercept_mark("µs")
                            .map_or(String::new(), |m| format!(" [{m}]"));
                        format!("{} (R² {:.3}){mark}", f.formula("KB", "µs"), f.r2)
                    })
                };
                lines.push(format!(
                    "{}/{} {path}: start {}; stop {}",
                    exp.name,
                    run.id,
                    line(&trends.start),
                    line(&trends.stop)
                ));
            }
        }
    }
    lines.join("\n")
}

fn calibrate() -> Calibration {
    let counter_hz = probe::clock::calibrate(Duration::from_millis(200));
    let overhead_cycles = probe::calibrate::overhead(4096).median_cycles;
    Calibration {
        counter_hz,
        overhead_cycles,
        overhead_ns: probe::clock::cycles_to_ns(overhead_cycles, counter_hz),
    }
}

/// `YYYYMMDD-HHMMSS` (UTC) for `secs` since the epoch.
pub(crate) fn timestamp(secs: u64) -> String {
    let t = report::model::Civil::of(secs);
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} steps, {elapsed} (eta {eta})  {wide_msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_civil_dates() {
        assert_eq!(timestamp(0), "19700101-000000");
        // 2026-11-22 15:36:06 UTC.
        assert_eq!(timestamp(1_795_361_766), "20261122-153606");
        // A leap day.
        assert_eq!(timestamp(951_782_400), "20000229-000000");
    }
}
