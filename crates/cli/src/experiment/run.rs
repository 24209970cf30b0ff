//! Runs a recipe's runs on the reference stack and turns each into the
//! report's figures: the messages are sent with probes on, the trace is
//! written, analysed (spans, messages, per-size figures, trend lines, CPU
//! shares) and converted to a Perfetto timeline.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use std::collections::BTreeMap;

use analysis::callpath::{self, MessageSpans};
use analysis::histogram;
use analysis::queues::{self, QueueOptions};
use analysis::{profile, spans, sweep, TraceView};
use probe::convert::TimelineFormat;
use report::capture::{Message, RunMessages};
use report::model::{
    Calibration, CategoryResolution, Experiment, MessagesRun, ProbeHealth, QueueSummary, RunCpu,
    RunFiles, RunLoad,
};
use stack::runner::threaded::Poll;
use stack::topology::Topology;
use traffic::reference::messages::{self, MessagesSpec};
use traffic::spec::{Family, Protocol};

use super::recipe::{MessagesPlan, Plan, Recipe, Run};
use super::sweep_run;

mod figures;
pub(super) mod path_mtu;
mod repeat;

use figures::{components_table, message_slices, packet_trace};

/// Records per host thread's ring: 2 Mi records (64 MiB) holds the full
/// xie1999 sweep several times over; a fuller ring drops and says so.
const TRACE_CAPACITY: usize = 2 << 20;

/// Most points of a queue's length series (peaks are kept).
const QUEUE_POINTS: usize = 1500;

/// How long the sender waits for the receiver to have one message.
const MESSAGE_WAIT: Duration = Duration::from_secs(2);

/// Runs every run of `recipe` into `dir`; `progress` counts messages sent.
/// A messages run's captures, merged into `trace.pcapng` once every run
/// is done.
pub struct RunCapture {
    /// Each interface's pcapng and its name in the merged file.
    pub files: Vec<(PathBuf, String)>,
    /// The run's start, ns since the Unix epoch (the captures' clock starts
    /// near zero with the run).
    pub offset_ns: u64,
    pub messages: RunMessages,
}

/// Where a recipe's files go and the format of its timelines.
#[derive(Clone, Copy)]
pub struct Files<'a> {
    pub dir: &'a Path,
    pub timeline: TimelineFormat,
}

pub fn run_recipe(
    recipe: &Recipe,
    quick: bool,
    calibration: &Calibration,
    files: Files,
    progress: &Arc<AtomicU64>,
    captures: &mut Vec<RunCapture>,
) -> Result<Experiment> {
    let dir = files.dir;
    let mut runs = Vec::new();
    let mut in_turn = Vec::new();
    let mut sweeps = Vec::new();
    let mut pipelines = Vec::new();
    let mut kernel_runs = Vec::new();
    for (index, run) in recipe.runs.iter().enumerate() {
        let context = || format!("{} / {}", recipe.name, run.id);
        match &run.plan {
            Plan::Messages(plan) => {
                let begun = begin(
                    recipe,
                    run,
                    plan,
                    quick,
                    calibration,
                    files,
                    progress,
                    captures,
                )
                .with_context(context)?;
                if begun.repeats_in_turn() {
                    in_turn.push((index, begun));
                } else {
                    runs.push((index, begun.finish(calibration, dir, captures)?));
                }
            }
            Plan::Sweep(plan) => sweeps.push(
                sweep_run::run(recipe, run, plan, quick, dir, progress).with_context(context)?,
            ),
            Plan::Pipeline(plan) => pipelines.push(
                super::pipeline_run::run(recipe, run, plan, quick, dir, progress)
                    .with_context(context)?,
            ),
            Plan::Kernel(plan) => kernel_runs.push(
                super::kernel_run::run(recipe, run, plan, quick, files, progress)
                    .with_context(context)?,
            ),
        }
    }
    // The runs that repeat until their slope is known take their passes
    // in turn, one each round: each run's passes then meet the machine
    // over the whole stretch of the recipe's repetitions, not over one
    // run's minutes (whose state a second lab may not find again), and
    // runs compared with each other (IPv6 with IPv4) meet the same states.
    loop {
        let mut any = false;
        for (_, begun) in &mut in_turn {
            let context = || format!("{} / {}", recipe.name, begun.run.id);
            any |= begun
                .another_pass(calibration, dir, captures)
                .with_context(context)?;
        }
        if !any {
            break;
        }
    }
    for (index, begun) in in_turn {
        runs.push((index, begun.finish(calibration, dir, captures)?));
    }
    runs.sort_by_key(|(index, _)| *index);
    let runs = runs.into_iter().map(|(_, run)| run).collect();
    let mut experiment = Experiment {
        name: recipe.name.clone(),
        title: recipe.title.clone(),
        source: recipe.source.clone(),
        citation: recipe.citation.clone(),
        description: recipe.description.clone(),
        runs,
        sweeps,
        pipelines,
        kernel_runs,
        published: Vec::new(),
    };
    // The study's own values beside ours (experiments/published/).
    experiment.published = report::published::rows(&experiment);
    Ok(experiment)
}

/// Steps a recipe takes (for progress bars): messages sent, and sweep
/// points times repetitions.
pub fn steps_in(recipe: &Recipe, quick: bool) -> u64 {
    recipe
        .runs
        .iter()
        .map(|r| match &r.plan {
            Plan::Messages(m) => {
                let (sizes, reps) = sizes_and_reps(m, quick);
                sizes.len() as u64 * u64::from(reps) + u64::from(m.warmup)
            }
            Plan::Sweep(s) => sweep_run::steps(s, quick),
            Plan::Pipeline(p) => super::pipeline_run::steps(p, quick),
            Plan::Kernel(k) => super::kernel_run::steps(k, quick),
        })
        .sum()
}

/// The run's slope target and the passes' time cap.
fn slope_target(run: &MessagesPlan, quick: bool) -> (Option<f64>, Duration) {
    if quick {
        (run.quick_slope_ci_target, run.quick_slope_time_cap)
    } else {
        (run.slope_ci_target, run.slope_time_cap)
    }
}

fn sizes_and_reps(run: &MessagesPlan, quick: bool) -> (&[usize], u32) {
    if quick {
        (&run.quick_sizes, run.quick_reps)
    } else {
        (&run.sizes, run.reps)
    }
}

/// The payload one packet carries on the run's path: TCP's segment (MSS
/// less the timestamp option and the trace option), XTP's `maxdata` (the
/// MTU less the IP header, XTP's 32-byte header and the trace option), or
/// for UDP one fragment's share of the datagram (RFC 8200 §4.5, RFC 791:
/// fragments carry a multiple of 8 bytes).
fn segment_bytes(run: &MessagesPlan, mtu: usize) -> f64 {
    const TIMESTAMPS: usize = 12;
    let (ip, trace) = match run.family {
        Family::V6 => (40, wire::trace_option::IPV6_HEADER_LEN),
        Family::V4 => (20, wire::trace_option::IPV4_OPTIONS_LEN),
    };
    match run.protocol {
        Protocol::Tcp => (mtu - ip - 20 - TIMESTAMPS - trace) as f64,
        Protocol::Xtp => (mtu - ip - wire::xtp::HEADER_LEN - trace) as f64,
        _ => {
            // IPv6: the Fragment header in every fragment, the trace
            // option (a Destination Options header) in the first only.
            // IPv4: the trace option in every fragment, since its type
            // has the copy bit (RFC 791).
            let per_fragment = match run.family {
                Family::V6 => 8,
                Family::V4 => trace,
            };
            ((mtu - ip - per_fragment) & !7) as f64
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn begin<'a>(
    recipe: &'a Recipe,
    run: &'a Run,
    plan: &'a MessagesPlan,
    quick: bool,
    calibration: &Calibration,
    files: Files,
    progress: &Arc<AtomicU64>,
    captures: &mut Vec<RunCapture>,
) -> Result<Begun<'a>> {
    let dir = files.dir;
    let mut topology = Topology::from_toml_str(run.link.topology_toml())
        .map_err(|e| anyhow::anyhow!("the {} link profile: {e}", run.link.name()))?;
    topology.set_fragmentation(plan.fragmentation);
    let (sizes, reps) = sizes_and_reps(plan, quick);
    let stem = format!("{}-{}", recipe.name, run.id);
    let pcap_dir = dir.join("pcap").join(&stem);
    std::fs::create_dir_all(&pcap_dir)
        .with_context(|| format!("creating {}", pcap_dir.display()))?;
    let spec = MessagesSpec {
        protocol: plan.protocol,
        family: plan.family,
        sizes: sizes.to_vec(),
        reps,
        sockbuf: plan.sockbuf,
        port: 5001,
        wait: MESSAGE_WAIT,
        trace_capacity: TRACE_CAPACITY,
        gate: probe::Mode::All,
        pcap_dir: Some(pcap_dir.clone()),
        warmup: plan.warmup,
        progress: Some(Arc::clone(progress)),
        // Threads that block when idle: the CPU-share tables' "% of wall"
        // is then load, not polling.
        poll: Poll::Block,
        cpus: None,
    };
    // A load on one side (the SunOS study's Figure 17): the two hosts'
    // threads pinned apart and the processes on that side's CPU, through
    // every pass; on one CPU nothing can be pinned, and the run says so.
    let sides = plan
        .load_on
        .placement(traffic::sweep::load::side_cpus())
        .filter(|_| plan.load > 0);
    let spec = MessagesSpec {
        cpus: sides.map(|(cpus, _)| cpus),
        ..spec
    };
    let load = match plan.load {
        0 => None,
        n => Some(traffic::sweep::load::Load::start(
            n,
            sides.map(|(_, cpu)| cpu),
        )?),
    };
    let started = Instant::now();
    // The machine's state, before the pass and outside its windows.
    let mut tally = Tally::default();
    if let Some(load) = &load {
        tally.gauges.count_as_own(load.pids());
    }
    tally.gauge();
    let began = now_ns();
    let result = run_pass(&topology, &spec, plan.probes)?;
    // And after it: a state that changed during the pass shows as a range.
    tally.gauge();
    captures.push(run_capture(recipe, run, &pcap_dir, began, &result, 1)?);
    let trace = result.trace(
        calibration.counter_hz,
        calibration.overhead_cycles,
        &format!("{} / {}", recipe.name, run.id),
    );
    let format = files.timeline;
    let files = RunFiles {
        trace: format!("traces/{stem}.sstrace"),
        timeline: format!("timelines/{stem}.{}", format.extension()),
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
    let view = TraceView::new(&trace)?;
    let all = analysis::all_spans(&view);
    let mut found = analysis::messages::analyse(&view, &all, plan.stop)?;

    let path = dir.join(&files.timeline);
    // Threads named by host from the trace's description, as `trace
    // perfetto` names them.
    let slices = message_slices(&found, &format!("{}/{}", recipe.name, run.id));
    let process = probe::convert::TimelineProcess {
        trace: &trace,
        pid: 1,
        name: Some(probe::convert::process_name(&trace)),
        thread_names: probe::convert::thread_names(&trace),
        annotations: &slices,
        origin: None,
    };
    probe::convert::write_timeline(&[process], format, BufWriter::new(File::create(&path)?))
        .with_context(|| format!("writing {}", path.display()))?;

    let warmup = drop_warmup(&mut found, &result);
    if found.messages.is_empty() {
        bail!("the trace holds no measured message: were probes compiled in?");
    }
    tally.add(&result, &trace, &all);
    // With a slope target, more passes over the sizes until the send stop
    // latency's slope is known; their messages join the first pass's.
    let repetition = match slope_target(plan, quick) {
        (Some(target), time_cap) => Some(repeat::Repetition::after_first(
            repeat::Budget {
                target,
                time_cap,
                max_messages: MAX_RUN_MESSAGES,
                min_passes: if quick {
                    repeat::QUICK_MIN_PASSES
                } else {
                    repeat::MIN_PASSES
                },
            },
            &spec,
            plan.stop,
            started,
            &files.trace,
            tally.sent,
            &found.messages,
        )),
        (None, _) => None,
    };
    Ok(Begun {
        recipe,
        run,
        plan,
        reps,
        topology,
        spec,
        stem,
        files,
        sides,
        load,
        result,
        view,
        all,
        found,
        warmup,
        tally,
        repetition,
    })
}

/// A messages run after its first pass: what its later passes and its
/// figures need.
struct Begun<'a> {
    recipe: &'a Recipe,
    run: &'a Run,
    plan: &'a MessagesPlan,
    /// Repetitions per size in one pass.
    reps: u32,
    topology: Topology,
    /// The first pass's; later passes change `pcap_dir` only.
    spec: MessagesSpec,
    stem: String,
    files: RunFiles,
    sides: Option<(traffic::affinity::SideCpus, usize)>,
    /// Background load, kept through every pass.
    load: Option<traffic::sweep::load::Load>,
    /// The first pass: its run, trace (as a view) and spans.
    result: messages::MessagesRun,
    view: TraceView,
    all: BTreeMap<u16, spans::ThreadSpans>,
    /// Measured messages over every pass so far; the first pass's
    /// warm-up message numbers.
    found: analysis::Messages,
    warmup: Vec<u64>,
    tally: Tally,
    repetition: Option<repeat::Repetition>,
}

impl Begun<'_> {
    /// Whether the run repeats until its slope is known with other such
    /// runs in turn: it does unless it holds a background load, which
    /// must not run through other runs' passes.
    fn repeats_in_turn(&self) -> bool {
        self.repetition.is_some() && self.load.is_none()
    }

    /// Another pass if the run's budget asks for one; whether it ran.
    fn another_pass(
        &mut self,
        calibration: &Calibration,
        dir: &Path,
        captures: &mut Vec<RunCapture>,
    ) -> Result<bool> {
        let Some(repetition) = self.repetition.as_mut() else {
            return Ok(false);
        };
        let cx = repeat::Context {
            recipe: self.recipe,
            run: self.run,
            plan: self.plan,
            calibration,
            dir,
            topology: &self.topology,
            spec: &self.spec,
            stem: &self.stem,
        };
        repetition.another_pass(&cx, &mut self.found.messages, &mut self.tally, captures)
    }

    /// The run's figures, after its last pass.
    fn finish(
        mut self,
        calibration: &Calibration,
        dir: &Path,
        captures: &mut Vec<RunCapture>,
    ) -> Result<MessagesRun> {
        let context = format!("{} / {}", self.recipe.name, self.run.id);
        while self
            .another_pass(calibration, dir, captures)
            .context(context.clone())?
        {}
        figures_of(self, calibration)
    }
}

/// The report's figures of a run whose passes are done.
fn figures_of(begun: Begun, calibration: &Calibration) -> Result<MessagesRun> {
    let Begun {
        run,
        plan,
        reps,
        files,
        sides,
        load,
        result,
        view,
        all,
        found,
        warmup,
        tally,
        repetition,
        topology: begun_topology,
        ..
    } = begun;
    let repetition = repetition.map(|r| r.outcome());
    let points = sweep::by_size(&found);
    // The path's own MTU: over a tunnel IPv6 packets are 20 bytes
    // narrower than the wire's (1480 on 6-over-4).
    let path_mtu = path_mtu::path_mtu(&begun_topology, plan.family);
    let segment = segment_bytes(plan, path_mtu);
    let thread_profile = |thread: Option<u16>| {
        thread.and_then(|t| all.get(&t).map(|s| profile::thread_profile(&view, t, s)))
    };
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
    let mean_stop_ns = {
        let stops: Vec<f64> = found
            .messages
            .iter()
            .filter_map(|m| m.send.as_ref().map(|p| p.stop_ns))
            .collect();
        stops.iter().sum::<f64>() / stops.len().max(1) as f64
    };
    let overhead_per_message_ns = probes_per_message * calibration.overhead_ns;
    let resolution = analysis::resolution::by_category(
        &view,
        [found.sender_thread, found.receiver_thread]
            .into_iter()
            .flatten()
            .filter_map(|t| all.get(&t)),
    )
    .into_iter()
    .map(|(category, r)| CategoryResolution {
        category,
        spans: r.spans,
        below_resolution: r.below,
    })
    .collect();
    let host_of = |thread: u16| {
        result
            .threads
            .iter()
            .find(|t| t.thread == thread)
            .map_or_else(|| format!("thread {thread}"), |t| t.host.clone())
    };
    // Queues and the packet trace count the measured messages only: the
    // warm-up's records, before the first measured message began, are
    // left out (a 256 KB run read 512 KB queued over one message).
    let first_measured = found
        .messages
        .iter()
        .filter_map(|m| m.send.as_ref().map(|s| s.begin_tsc))
        .min();
    let measured_view = match first_measured {
        Some(from) if plan.warmup > 0 => {
            let mut v = view.clone();
            v.threads
                .values_mut()
                .for_each(|records| records.retain(|r| r.tsc >= from));
            std::borrow::Cow::Owned(v)
        }
        _ => std::borrow::Cow::Borrowed(&view),
    };
    let mut queues = queues::analyse(
        &measured_view,
        &QueueOptions {
            max_points: QUEUE_POINTS,
            ..QueueOptions::default()
        },
    );
    for q in &mut queues {
        q.queue = format!("{} on {}", q.queue, host_of(q.thread));
    }
    let one_thread = |thread: Option<u16>| -> BTreeMap<u16, spans::ThreadSpans> {
        thread
            .and_then(|t| all.get(&t).map(|s| (t, s.clone())))
            .into_iter()
            .collect()
    };
    // The SunOS study's Figure 14, over the measured messages.
    let side = |thread: Option<u16>| {
        let t = thread?;
        Some(analysis::protocol_delay::Side {
            records: view.threads.get(&t)?,
            spans: all.get(&t)?,
        })
    };
    let protocol_delay = match (
        side(found.sender_thread),
        side(found.receiver_thread),
        found.flow,
    ) {
        (Some(sender), Some(receiver), Some(flow)) => Some(analysis::protocol_delay::analyse(
            &view,
            sender,
            receiver,
            flow,
            first_measured.unwrap_or(0),
        )),
        _ => None,
    };
    let sender_spans = one_thread(found.sender_thread);
    let receiver_spans = one_thread(found.receiver_thread);
    let layers = |spans: &BTreeMap<u16, spans::ThreadSpans>| {
        histogram::layer_histograms(&view, spans, histogram::DEFAULT_BINS_PER_DECADE)
    };
    let call_tree = found.sender_thread.and_then(|t| {
        let spans = all.get(&t)?;
        let roots: Vec<(u64, Vec<usize>)> = callpath::message_roots(&view, spans, t, None)
            .into_iter()
            .filter(|(index, _)| !warmup.contains(index))
            .collect();
        let messages: Vec<MessageSpans> = roots
            .iter()
            .map(|(_, roots)| MessageSpans { spans, roots })
            .collect();
        (!messages.is_empty()).then(|| callpath::common_path(&view, &messages, 0.5))
    });
    let components = components_table(
        &queues,
        &histogram::function_histograms(&view, &sender_spans, histogram::DEFAULT_BINS_PER_DECADE),
        &histogram::function_histograms(&view, &receiver_spans, histogram::DEFAULT_BINS_PER_DECADE),
        found.sender_thread,
        found.receiver_thread,
    );
    let queue_summary = queues
        .iter()
        .map(|q| QueueSummary {
            queue: q.queue.clone(),
            host: host_of(q.thread),
            counts: q.counts,
            stats: q.stats,
            rates: q.rates,
        })
        .collect();
    let (packet_trace, acks) = if points.len() <= 4 {
        packet_trace(
            &measured_view,
            &queues,
            found.sender_thread,
            found.receiver_thread,
            plan.protocol,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let secs = |d: Duration| d.as_secs_f64();
    let mut send = sweep::trends(&points, Some(segment), false);
    // The trend's slope carries the passes' spread as the repetition's does.
    if let (Some(stop), Some(rep)) = (send.stop.as_mut(), repetition.as_ref()) {
        if rep.slope == Some(stop.a) {
            stop.slope_ci95 = rep.slope_ci95;
        }
    }
    send.stop_slope_repetition = repetition;
    let load = load.map(|load| RunLoad {
        processes: plan.load,
        on: plan.load_on.name().to_string(),
        load_cpu: load.pin().map(|(cpu, _)| cpu),
        receiver_cpu: sides.map(|(c, _)| c.receiver),
        sender_cpu: sides.map(|(c, _)| c.sender),
        pinned: sides
            .map(|_| load.pin().is_some_and(|(_, held)| held) && tally.pins_held.unwrap_or(false)),
    });
    Ok(MessagesRun {
        load,
        gauges: tally.gauges.summary(),
        id: run.id.clone(),
        title: run.title.clone().unwrap_or_default(),
        protocol: format!("{:?}", plan.protocol).to_uppercase(),
        family: plan.family.to_string(),
        link: run.link.name().to_string(),
        link_bps: run.link.rate_bps().map(|b| b as f64),
        // Over every pass.
        reps: tally.reps(reps),
        warmup: plan.warmup,
        sent: tally.sent,
        delivered: tally.delivered,
        segment_bytes: segment,
        path_mtu,
        stop_at: plan.stop,
        send,
        receive: sweep::trends(&points, Some(segment), true),
        points,
        sender_profile: thread_profile(found.sender_thread),
        receiver_profile: thread_profile(found.receiver_thread),
        cpu: RunCpu {
            runner_wait: result.poll.as_str(),
            wall_s: secs(result.elapsed),
            sender_user_s: secs(result.sender_cpu.user),
            sender_system_s: secs(result.sender_cpu.system),
            receiver_user_s: secs(result.receiver_cpu.user),
            receiver_system_s: secs(result.receiver_cpu.system),
        },
        probes: ProbeHealth {
            records: tally.records,
            dropped: tally.dropped,
            unmatched_exits: tally.unmatched_exits,
            unclosed_spans: tally.unclosed_spans,
            probes_per_message,
            overhead_per_message_ns,
            level: plan.probes,
            overhead_share_of_stop: if mean_stop_ns > 0.0 {
                overhead_per_message_ns / mean_stop_ns
            } else {
                0.0
            },
            resolution,
        },
        components,
        call_tree,
        protocol_delay,
        sender_layers: layers(&sender_spans),
        receiver_layers: layers(&receiver_spans),
        queues,
        queue_summary,
        packet_trace,
        acks,
        sender_thread: found.sender_thread,
        receiver_thread: found.receiver_thread,
        files,
    })
}

/// Most messages one run sends over all its passes (the recipe limits a
/// pass to 100 000 too).
const MAX_RUN_MESSAGES: u64 = 200_000;

/// Now, ns since the Unix epoch (where the run's captures start).
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One pass of traced messages at the run's probe depth.
/// Leaves out of `found` the messages `result` sent as warm-up; their
/// numbers.
fn drop_warmup(found: &mut analysis::Messages, result: &messages::MessagesRun) -> Vec<u64> {
    let warmup = result.warmup_indices();
    found.messages.retain(|m| !warmup.contains(&m.index));
    warmup
}

fn run_pass(
    topology: &Topology,
    spec: &MessagesSpec,
    probes: probe::Level,
) -> Result<messages::MessagesRun> {
    // The probe depth is global: set for this pass, back to everything after.
    probe::set_level(probes);
    let result = messages::run(topology, spec);
    probe::set_level(probe::Level::Functions);
    Ok(result?)
}

/// Counts over a run's passes.
#[derive(Debug, Default)]
struct Tally {
    /// Measured messages (warm-up left out): sent, delivered whole.
    sent: u64,
    delivered: u64,
    /// Extra repetitions per size the passes after the first made.
    extra_reps: u32,
    records: u64,
    dropped: u64,
    unmatched_exits: u64,
    unclosed_spans: u64,
    /// The machine's state before and after each pass.
    gauges: super::gauges::Readings,
    /// Both host threads held their pins in every pass (`None`: no pass
    /// pinned them).
    pins_held: Option<bool>,
}

impl Tally {
    /// Measures the machine's state (outside every measured window).
    fn gauge(&mut self) {
        self.gauges.measure();
    }

    fn add(
        &mut self,
        result: &messages::MessagesRun,
        trace: &probe::Trace,
        spans: &BTreeMap<u16, spans::ThreadSpans>,
    ) {
        if let Some(p) = result.placement {
            self.pins_held = Some(self.pins_held.unwrap_or(true) && p.held);
        }
        let measured = result.outcomes.iter().filter(|o| !o.warmup);
        self.sent += measured.clone().count() as u64;
        self.delivered += measured.filter(|o| o.delivered).count() as u64;
        self.records += trace.records.len() as u64;
        self.dropped += trace.header.dropped;
        for s in spans.values() {
            self.unmatched_exits += s.unmatched_exits;
            self.unclosed_spans += s.unclosed;
        }
    }

    /// Repetitions per size over every pass, the first's being `first`.
    fn reps(&self, first: u32) -> u32 {
        first.saturating_add(self.extra_reps)
    }
}

/// The run's pcapng files (named `<host>-<interface>.pcapng` by the
/// runner) and the label of each message for the packets that carry it.
fn run_capture(
    recipe: &Recipe,
    run: &Run,
    pcap_dir: &Path,
    began_ns: u64,
    result: &messages::MessagesRun,
    pass: u32,
) -> Result<RunCapture> {
    // Passes after the first say which they are (their message numbers
    // start again).
    let pass = if pass > 1 {
        format!(", pass {pass}")
    } else {
        String::new()
    };
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(pcap_dir).with_context(|| format!("reading {}", pcap_dir.display()))?
    {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "pcapng") {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((path, format!("{}/{} {stem}", recipe.name, run.id)));
        }
    }
    files.sort();
    let messages = result
        .outcomes
        .iter()
        .map(|o| Message {
            sent_at_ns: o.sent_at_ns,
            label: if o.warmup {
                format!(
                    "{}/{} warm-up message {}: {} B{pass}",
                    recipe.name, run.id, o.index, o.size
                )
            } else {
                format!(
                    "{}/{} message {}: {} B, rep {}{pass}",
                    recipe.name,
                    run.id,
                    o.index,
                    o.size,
                    o.rep + 1
                )
            },
        })
        .collect();
    Ok(RunCapture {
        files,
        offset_ns: began_ns,
        messages: RunMessages {
            flows: vec![result.sender_flow, result.receiver_flow],
            messages,
        },
    })
}
