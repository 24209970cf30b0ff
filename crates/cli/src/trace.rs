//! `stackscope trace`: look inside a probe trace file and convert it.
//!
//! Trace files are untrusted input: every problem is reported as the
//! reader's error (what is wrong and at which byte), never a panic.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use probe::Trace;
use serde::Serialize;

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Debug, Subcommand)]
enum TraceCommand {
    /// Header, location table and per-location record counts.
    Info {
        /// The trace file.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One CSV row per record: tsc, ns, thread, loc, name, layer, kind,
    /// category, queue, len, flow, aux.
    Csv {
        /// The trace file.
        file: PathBuf,
        /// Where to write (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// A Perfetto timeline (open in ui.perfetto.dev or trace_processor):
    /// spans as slices, queues as counters, points as instants, threads
    /// named by host as the lab's timelines name them. Perfetto's native
    /// protobuf trace by default (.pftrace); --format json for Chrome
    /// trace-event JSON.
    Perfetto {
        /// The trace file.
        file: PathBuf,
        /// Where to write (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// protobuf (Perfetto's TracePacket stream) or json (Chrome trace
        /// events).
        #[arg(long, value_enum, default_value_t = TimelineArg::Protobuf)]
        format: TimelineArg,
    },
}

/// `--format` of a timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimelineArg {
    Protobuf,
    Json,
}

impl From<TimelineArg> for probe::convert::TimelineFormat {
    fn from(a: TimelineArg) -> Self {
        match a {
            TimelineArg::Protobuf => probe::convert::TimelineFormat::Protobuf,
            TimelineArg::Json => probe::convert::TimelineFormat::Json,
        }
    }
}

pub fn run(args: &TraceArgs) -> anyhow::Result<()> {
    match &args.command {
        TraceCommand::Info { file, json } => info(&read(file)?, *json),
        TraceCommand::Csv { file, output } => {
            let trace = read(file)?;
            with_output(output.as_deref(), |out| {
                Ok(probe::convert::write_csv(&trace, out)?)
            })
        }
        TraceCommand::Perfetto {
            file,
            output,
            format,
        } => {
            if output.is_none()
                && *format == TimelineArg::Protobuf
                && io::IsTerminal::is_terminal(&io::stdout())
            {
                anyhow::bail!(
                    "the protobuf timeline is binary: give -o FILE.pftrace, redirect standard \
                     output, or ask for --format json"
                );
            }
            let trace = read(file)?;
            let process = probe::convert::TimelineProcess {
                trace: &trace,
                pid: 1,
                name: Some(probe::convert::process_name(&trace)),
                thread_names: probe::convert::thread_names(&trace),
                annotations: &[],
                origin: None,
            };
            let summary = with_output(output.as_deref(), |out| {
                Ok(probe::convert::write_timeline(
                    &[process],
                    (*format).into(),
                    out,
                )?)
            })?;
            // Adjustments go to stderr so stdout stays a valid timeline.
            eprintln!(
                "perfetto: {} events; {} unmatched exits, {} unclosed spans, {} interleaved spans, \
                 {} dequeues below zero, {} clamped timestamps",
                summary.events,
                summary.unmatched_exits,
                summary.unclosed_spans,
                summary.interleaved_spans,
                summary.dequeues_below_zero,
                summary.clamped_timestamps
            );
            Ok(())
        }
    }
}

fn read(path: &Path) -> anyhow::Result<Trace> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Trace::read(BufReader::new(file)).with_context(|| format!("cannot read {}", path.display()))
}

fn with_output<T>(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    match path {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = BufWriter::new(file);
            let result = write(&mut out)?;
            out.flush()?;
            Ok(result)
        }
        None => write(&mut io::stdout().lock()),
    }
}

#[derive(Serialize)]
struct Info<'a> {
    counter_hz: f64,
    clock: &'a str,
    overhead_cycles: f64,
    dropped: u64,
    /// The writer's description: its JSON as an object where it is JSON
    /// (the lab's and the tools' are), else the text as a string.
    description: serde_json::Value,
    records: usize,
    threads: usize,
    duration_ns: f64,
    locations: Vec<LocationInfo<'a>>,
}

#[derive(Serialize)]
struct LocationInfo<'a> {
    id: usize,
    name: &'a str,
    layer: &'a str,
    kind: &'a str,
    category: &'a str,
    queue: Option<&'a str>,
    records: u64,
}

fn info(trace: &Trace, json: bool) -> anyhow::Result<()> {
    let h = &trace.header;
    let mut per_location = vec![0u64; trace.locations.len()];
    for r in &trace.records {
        if let Some(n) = per_location.get_mut(usize::from(r.loc)) {
            *n += 1;
        }
    }
    let threads: BTreeMap<u16, ()> = trace.records.iter().map(|r| (r.thread, ())).collect();
    let span = match (
        trace.records.iter().map(|r| r.tsc).min(),
        trace.records.iter().map(|r| r.tsc).max(),
    ) {
        (Some(first), Some(last)) => {
            probe::clock::cycles_to_ns((last - first) as f64, h.counter_hz)
        }
        _ => 0.0,
    };
    let info = Info {
        counter_hz: h.counter_hz,
        clock: &h.clock,
        overhead_cycles: h.overhead_cycles,
        dropped: h.dropped,
        description: serde_json::from_str(&h.description)
            .unwrap_or_else(|_| serde_json::Value::String(h.description.clone())),
        records: trace.records.len(),
        threads: threads.len(),
        duration_ns: span,
        locations: trace
            .locations
            .iter()
            .zip(&per_location)
            .enumerate()
            .map(|(id, (l, &records))| LocationInfo {
                id,
                name: &l.name,
                layer: l.layer.as_str(),
                kind: l.kind.as_str(),
                category: l.category.as_str(),
                queue: l.queue.as_deref(),
                records,
            })
            .collect(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("description      {}", h.description);
    println!(
        "counter          {} at {:.4} GHz",
        info.clock,
        info.counter_hz / 1e9
    );
    println!(
        "probe overhead   {:.1} cycles ({:.2} ns)",
        info.overhead_cycles,
        probe::clock::cycles_to_ns(info.overhead_cycles, info.counter_hz)
    );
    println!(
        "records          {} from {} thread(s) over {:.3} ms",
        info.records,
        info.threads,
        info.duration_ns / 1e6
    );
    // Never hide drops (DESIGN.md).
    println!("dropped          {}", info.dropped);
    println!();
    println!(
        "{:>4}  {:<32} {:<9} {:<10} {:<16} {:<12} {:>10}",
        "id", "location", "layer", "kind", "category", "queue", "records"
    );
    for l in &info.locations {
        println!(
            "{:>4}  {:<32} {:<9} {:<10} {:<16} {:<12} {:>10}",
            l.id,
            l.name,
            l.layer,
            l.kind,
            l.category,
            l.queue.unwrap_or("-"),
            l.records
        );
    }
    Ok(())
}
