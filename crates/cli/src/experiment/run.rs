//! Runs a recipe's runs on the reference stack and turns each into the
//! report's figures: the messages are sent with probes on, the trace is
//! written, analysed (spans, messages, per-size figures, trend lines, CPU
//! shares) and converted to a Perfetto timeline.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use analysis::{profile, spans, sweep, TraceView};
use report::model::{Calibration, Experiment, MessagesRun, ProbeHealth, RunCpu, RunFiles};
use stack::topology::Topology;
use traffic::reference::messages::{self, MessagesSpec};
use traffic::spec::{Family, Protocol};

use super::recipe::{Recipe, Run, RunKind};

/// Records per host thread's ring: 4 Mi records (128 MiB) holds the full
/// sweep with room to spare; a fuller ring drops and says so.
const TRACE_CAPACITY: usize = 4 << 20;

/// How long the sender waits for the receiver to have one message.
const MESSAGE_WAIT: Duration = Duration::from_secs(2);

/// Runs every run of `recipe` into `dir`; `progress` counts messages sent.
pub fn run_recipe(
    recipe: &Recipe,
    quick: bool,
    calibration: &Calibration,
    dir: &Path,
    progress: &Arc<AtomicU64>,
) -> Result<Experiment> {
    let mut runs = Vec::with_capacity(recipe.runs.len());
    for run in &recipe.runs {
        let figures = match run.kind {
            RunKind::Messages => run_messages(recipe, run, quick, calibration, dir, progress)
                .with_context(|| format!("{} / {}", recipe.name, run.id))?,
        };
        runs.push(figures);
    }
    Ok(Experiment {
        name: recipe.name.clone(),
        title: recipe.title.clone(),
        source: recipe.source.clone(),
        description: recipe.description.clone(),
        runs,
    })
}

/// Messages a run sends (for progress bars).
pub fn messages_in(recipe: &Recipe, quick: bool) -> u64 {
    recipe
        .runs
        .iter()
        .map(|r| {
            let (sizes, reps) = plan(r, quick);
            sizes.len() as u64 * u64::from(reps) + u64::from(r.warmup)
        })
        .sum()
}

fn plan(run: &Run, quick: bool) -> (&[usize], u32) {
    if quick {
        (&run.quick_sizes, run.quick_reps)
    } else {
        (&run.sizes, run.reps)
    }
}

/// The payload one packet carries on the run's path: TCP's segment (MSS
/// less the timestamp option and the trace option), or for UDP one
/// fragment's share of the datagram (RFC 8200 §4.5: fragments carry a
/// multiple of 8 bytes).
fn segment_bytes(run: &Run, mtu: usize) -> f64 {
    const TIMESTAMPS: usize = 12;
    let (ip, trace) = match run.family {
        Family::V6 => (40, wire::trace_option::IPV6_HEADER_LEN),
        Family::V4 => (20, wire::trace_option::IPV4_OPTIONS_LEN),
    };
    match run.protocol {
        Protocol::Tcp => (mtu - ip - 20 - TIMESTAMPS - trace) as f64,
        _ => {
            let fragment_header = if run.family == Family::V6 { 8 } else { 0 };
            ((mtu - ip - fragment_header) & !7) as f64
        }
    }
}

fn run_messages(
    recipe: &Recipe,
    run: &Run,
    quick: bool,
    calibration: &Calibration,
    dir: &Path,
    progress: &Arc<AtomicU64>,
) -> Result<MessagesRun> {
    let topology = Topology::from_toml_str(run.link.topology_toml())
        .map_err(|e| anyhow::anyhow!("the {} link profile: {e}", run.link.name()))?;
    let (sizes, reps) = plan(run, quick);
    let stem = format!("{}-{}", recipe.name, run.id);
    let pcap_dir = dir.join("pcap").join(&stem);
    std::fs::create_dir_all(&pcap_dir)
        .with_context(|| format!("creating {}", pcap_dir.display()))?;
    let spec = MessagesSpec {
        protocol: run.protocol,
        family: run.family,
        sizes: sizes.to_vec(),
        reps,
        sockbuf: run.sockbuf,
        port: 5001,
        wait: MESSAGE_WAIT,
        trace_capacity: TRACE_CAPACITY,
        gate: probe::Mode::All,
        pcap_dir: Some(pcap_dir),
        warmup: run.warmup,
        progress: Some(Arc::clone(progress)),
    };
    let result = messages::run(&topology, &spec)?;
    let trace = result.trace(
        calibration.counter_hz,
        calibration.overhead_cycles,
        &format!("{} / {}", recipe.name, run.id),
    );
    let files = RunFiles {
        trace: format!("traces/{stem}.sstrace"),
        timeline: format!("timelines/{stem}.json"),
        sizes_csv: format!("{stem}-sizes.csv"),
        cpu_csv: format!("{stem}-cpu.csv"),
    };
    for sub in ["traces", "timelines"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let path = dir.join(&files.trace);
    trace
        .write(BufWriter::new(File::create(&path)?))
        .with_context(|| format!("writing {}", path.display()))?;
    let path = dir.join(&files.timeline);
    probe::convert::write_perfetto(&trace, BufWriter::new(File::create(&path)?))
        .with_context(|| format!("writing {}", path.display()))?;

    let view = TraceView::new(&trace)?;
    let all = analysis::all_spans(&view);
    let mut found = analysis::messages::analyse(&view, &all)?;
    let warmup: Vec<u64> = result
        .outcomes
        .iter()
        .filter(|o| o.warmup)
        .map(|o| o.index)
        .collect();
    found.messages.retain(|m| !warmup.contains(&m.index));
    if found.messages.is_empty() {
        bail!("the trace holds no measured message: were probes compiled in?");
    }
    let points = sweep::by_size(&found);
    let segment = segment_bytes(run, 1500);
    let thread_profile = |thread: Option<u16>| {
        thread.and_then(|t| all.get(&t).map(|s| profile::thread_profile(&view, t, s)))
    };
    let measured: Vec<_> = result.outcomes.iter().filter(|o| !o.warmup).collect();
    let send_probes: Vec<f64> = found
        .messages
        .iter()
        .filter_map(|m| m.send.as_ref().map(|p| p.probes as f64))
        .collect();
    let probes_per_message = if send_probes.is_empty() {
        0.0
    } else {
        send_probes.iter().sum::<f64>() / send_probes.len() as f64
    };
    let (unmatched_exits, unclosed_spans) =
        all.values().fold((0, 0), |(u, c), s: &spans::ThreadSpans| {
            (u + s.unmatched_exits, c + s.unclosed)
        });
    let secs = |d: Duration| d.as_secs_f64();
    Ok(MessagesRun {
        id: run.id.clone(),
        protocol: format!("{:?}", run.protocol).to_uppercase(),
        family: run.family.to_string(),
        link: run.link.name().to_string(),
        reps,
        warmup: run.warmup,
        sent: measured.len() as u64,
        delivered: measured.iter().filter(|o| o.delivered).count() as u64,
        segment_bytes: segment,
        send: sweep::trends(&points, Some(segment), false),
        receive: sweep::trends(&points, Some(segment), true),
        points,
        sender_profile: thread_profile(found.sender_thread),
        receiver_profile: thread_profile(found.receiver_thread),
        cpu: RunCpu {
            wall_s: secs(result.elapsed),
            sender_user_s: secs(result.sender_cpu.user),
            sender_system_s: secs(result.sender_cpu.system),
            receiver_user_s: secs(result.receiver_cpu.user),
            receiver_system_s: secs(result.receiver_cpu.system),
        },
        probes: ProbeHealth {
            records: trace.records.len() as u64,
            dropped: trace.header.dropped,
            unmatched_exits,
            unclosed_spans,
            probes_per_message,
            overhead_per_message_ns: probes_per_message * calibration.overhead_ns,
        },
        files,
    })
}
