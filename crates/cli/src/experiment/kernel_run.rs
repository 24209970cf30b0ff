//! A recipe's kernel messages run (`stack = "kernel"`, issue 19): the
//! messages over the Linux kernel's TCP or UDP across a veth pair made for
//! the run (or over a namespace's loopback), traced with the eBPF probes,
//! the probes' cost measured interleaved (once per lab) and subtracted,
//! and the trace analysed as the reference stack's
//! (`analysis::kernel_messages`). Without root, BTF or a loadable probe
//! set the run is skipped and says why; the lab goes on. A TCP run's
//! `congestion` is set on both ends' sockets and read back (a name the
//! kernel lacks fails the run before anything runs, as a sweep's).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use analysis::kernel_messages::{self as km, Flows, Transport};
use kernel_probe::cost::{self, ProbeCost};
use kernel_probe::messages::{self, HostFlows};
use kernel_probe::{Config, KernelProbes, HOOKS};
use probe::convert::TimelineFormat;
use report::kernel_runs::{KernelOverhead, KernelRun, MissingProbe, ProbeCostFigures};
use traffic::kernel::netns::VethPair;
use traffic::spec::{Family, Protocol, StackKind};

use super::recipe::{KernelPlan, Recipe, Run};

/// The flow id of the run's sender; the receiver's is the next.
const FLOW: u32 = 1;

/// The probes' cost, measured once per process (every kernel run of a
/// lab subtracts the same figure): the figures, or why not.
static COST: Mutex<Option<Result<ProbeCost, String>>> = Mutex::new(None);

/// Messages the run sends, warm-up first, then `reps` rounds of every size.
fn sent_sizes(plan: &KernelPlan, quick: bool) -> Vec<u32> {
    let (sizes, reps) = plan.sizes_and_reps(quick);
    let first = sizes.first().copied().unwrap_or(1) as u32;
    let mut sent = vec![first; plan.warmup as usize];
    for _ in 0..reps {
        sent.extend(sizes.iter().map(|&s| s as u32));
    }
    sent
}

/// Messages sent (for progress bars).
pub fn steps(plan: &KernelPlan, quick: bool) -> u64 {
    sent_sizes(plan, quick).len() as u64
}

pub fn run(
    recipe: &Recipe,
    run: &Run,
    plan: &KernelPlan,
    quick: bool,
    files: super::run::Files,
    progress: &Arc<AtomicU64>,
) -> Result<KernelRun> {
    let dir = files.dir;
    let mut out = empty(run, plan);
    let config = Config::default();
    // Can the probes run at all? (Not root, no BTF, a refused object.)
    match KernelProbes::start(&config) {
        Ok(probes) => drop(probes),
        Err(e) => {
            let why = e.to_string();
            out.probes_missing = HOOKS
                .iter()
                .map(|h| MissingProbe {
                    probe: h.probe_name().to_string(),
                    why: why.clone(),
                })
                .collect();
            return Ok(skip(out, why));
        }
    }
    if let Some(c) = plan.congestion {
        traffic::congestion::check(c, StackKind::Kernel)
            .with_context(|| format!("congestion = \"{c}\""))?;
    }
    let pair = match VethPair::create(1500) {
        Ok(pair) => pair,
        Err(e) => return Ok(skip(out, format!("the veth pair could not be made: {e}"))),
    };
    out.overhead = overhead_for(&pair, &config, quick);
    let sizes = sent_sizes(plan, quick);
    let mut probes = KernelProbes::start(&config).context("starting the kernel probes")?;
    out.probes_attached = probes
        .status()
        .iter()
        .filter(|s| s.missing.is_none())
        .count();
    out.probes_missing = probes
        .status()
        .iter()
        .filter_map(|s| {
            Some(MissingProbe {
                probe: s.probe.to_string(),
                why: s.missing.clone()?,
            })
        })
        .collect();
    let flows = HostFlows::of(FLOW, plan.path);
    // The programs' own time just before and just after the messages
    // (outside every window): the machine's speed drifts between runs.
    let own_time_plan = own_time_plan(quick);
    let mut own = own_time_around(&pair, &own_time_plan, &config);
    // The machine's state around the messages, read outside every window.
    let mut gauges = super::gauges::Readings::default();
    gauges.measure();
    let moved = match plan.protocol {
        Protocol::Udp => messages::udp_messages(
            &pair,
            Some(&mut probes),
            plan.path,
            plan.family,
            &sizes,
            flows,
        ),
        _ => messages::tcp_messages(
            &pair,
            Some(&mut probes),
            plan.path,
            plan.family,
            &sizes,
            flows,
            plan.congestion,
        ),
    };
    gauges.measure();
    out.gauges = gauges.summary();
    // The probes are stopped for the timed transfers after (their own
    // session) and restarted for nothing: the trace is read first.
    let mut traced = probes
        .finish(&format!("{} / {}", recipe.name, run.id))
        .context("reading the kernel trace")?;
    own.extend(own_time_around(&pair, &own_time_plan, &config));
    use_own_time(&mut out.overhead, &own);
    progress.fetch_add(sizes.len() as u64, Ordering::Relaxed);
    // A transfer that failed (a side timed out) is this run's failure, not
    // the lab's: it is reported as skipped with the reason.
    let moved = match moved {
        Ok(moved) => moved,
        Err(e) => {
            let what = protocol_name(plan.protocol);
            return Ok(skip(out, format!("the kernel {what} messages failed: {e}")));
        }
    };
    drop(pair);
    let hz = traced.trace.header.counter_hz;
    let overhead_cycles = out.overhead.subtracted_ns * hz / 1e9;
    traced.trace.header.overhead_cycles = overhead_cycles;
    out.overhead.subtracted_cycles = overhead_cycles;
    traced.trace.header.description = match &out.overhead.cost {
        Some(_) if out.overhead.subtracted_ns > 0.0 => format!(
            "{} / {}; kernel probes (eBPF), probe overhead {:.0} ns per record (the programs' own time, BPF run-time statistics around the run)",
            recipe.name, run.id, out.overhead.subtracted_ns
        ),
        _ => traced.trace.header.description.clone(),
    };
    let warmup = plan.warmup as usize;
    out.congestion_control = moved.congestion_control;
    out.sent = (sizes.len() - warmup.min(sizes.len())) as u64;
    out.received = moved.received.saturating_sub(warmup) as u64;
    out.records = traced.trace.records.len() as u64;
    out.ring_dropped = traced.dropped;
    write_files(dir, files.timeline, recipe, run, &traced.trace, &mut out)?;
    let transport = match plan.protocol {
        Protocol::Udp => Transport::Udp,
        _ => Transport::Tcp,
    };
    let analysed = km::analyse(
        &traced.trace,
        transport,
        Flows {
            sender: flows.sender,
            receiver: flows.receiver,
        },
        &sizes,
    )
    .context("analysing the kernel trace")?;
    // The warm-up's messages are analysed (their windows join the rest)
    // and then left out of every figure.
    let measured: Vec<km::KernelMessage> = analysed.messages.into_iter().skip(warmup).collect();
    out.incomplete_send = count_reasons(&measured, |m| m.send_missing);
    out.incomplete_receive = count_reasons(&measured, |m| m.receive_missing);
    out.points = km::by_size(&measured);
    out.trends = km::trends(&out.points);
    out.queues = km::queues(&traced.trace);
    out.status = "measured".into();
    if !traced.drops.is_empty() {
        let drops: Vec<String> = traced
            .drops
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        out.notes.push(format!(
            "kernel.kfree_skb of the run's flows by drop reason (named from the kernel's BTF): {}.",
            drops.join(", ")
        ));
    }
    if traced.malformed > 0 {
        out.notes.push(format!(
            "{} ring entries had an unknown location and were left out (a stale eBPF object?).",
            traced.malformed
        ));
    }
    Ok(out)
}

fn count_reasons(
    messages: &[km::KernelMessage],
    why: impl Fn(&km::KernelMessage) -> Option<&'static str>,
) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for m in messages {
        if let Some(reason) = why(m) {
            *counts.entry(reason.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Udp => "UDP",
        _ => "TCP",
    }
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// The run's record before anything is measured (also what a skipped run
/// reports).
fn empty(run: &Run, plan: &KernelPlan) -> KernelRun {
    let flows = HostFlows::of(FLOW, plan.path);
    let title = run.title.clone().unwrap_or_else(|| {
        format!(
            "the Linux kernel's {} over {} ({})",
            protocol_name(plan.protocol),
            family_name(plan.family),
            plan.path.name()
        )
    });
    KernelRun {
        id: run.id.clone(),
        title,
        protocol: protocol_name(plan.protocol).into(),
        family: family_name(plan.family).into(),
        path: plan.path.name().into(),
        congestion: plan.congestion.map(|c| c.to_string()),
        congestion_control: None,
        reps: plan.reps,
        warmup: plan.warmup,
        status: "skipped".into(),
        skipped: None,
        probes_missing: Vec::new(),
        probes_attached: 0,
        sent: 0,
        received: 0,
        windows: windows(plan.protocol),
        points: Vec::new(),
        trends: Default::default(),
        queues: Vec::new(),
        incomplete_send: BTreeMap::new(),
        incomplete_receive: BTreeMap::new(),
        records: 0,
        ring_dropped: 0,
        overhead: KernelOverhead::default(),
        sender_flow: flows.sender,
        receiver_flow: flows.receiver,
        trace: None,
        timeline: None,
        notes: Vec::new(),
        gauges: Default::default(),
    }
}

fn skip(mut out: KernelRun, why: String) -> KernelRun {
    eprintln!("stackscope: kernel run {} skipped: {why}", out.id);
    out.status = "skipped".into();
    out.skipped = Some(why);
    out
}

/// Each window in words (the same for every size).
fn windows(protocol: Protocol) -> BTreeMap<String, String> {
    let mut w = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        w.insert(k.to_string(), v.to_string());
    };
    if protocol == Protocol::Udp {
        put("send start", "kernel.udp_sendmsg (the send call's start, the cgroup's sendmsg hook) → the first packet's kernel.net_dev_start_xmit (handed to the device)");
        put("send stop (on_the_wire)", "→ the last packet's (fragment's) kernel.net_dev_xmit (the driver returned); handed_to_device, to its kernel.net_dev_start_xmit, is in summary.json as handed_stop_us");
        put("receive start", "the first packet's kernel.netif_rx (arrival in the backlog) → the read's kernel.sock_recv_length (a one-packet datagram is copied by copy_linear_skb, one reassembled from fragments by skb_copy_and_csum_datagram_msg, neither with a tracepoint), so start = stop");
    } else {
        put("send start", "kernel.tcp_sendmsg_locked (the send call) → the first packet's kernel.net_dev_start_xmit (handed to the device)");
        put("send stop (on_the_wire)", "→ the last byte's packet's kernel.net_dev_xmit (the driver returned: it has let go of the frame); handed_to_device, to its kernel.net_dev_start_xmit, is in summary.json as handed_stop_us");
        put("receive start", "the first packet's kernel.netif_rx (arrival in the backlog) → the message's first kernel.skb_copy_datagram_iovec (the first byte given to the reader)");
    }
    put(
        "receive stop",
        "the first packet's kernel.netif_rx → the kernel.sock_recv_length of the read returning the message's last byte",
    );
    w
}

/// The probes' cost: measured on the first kernel run of the process
/// across its pair (5 pairs of 64 MiB quick, 8 of 128 MiB full), then
/// reused.
fn overhead_for(pair: &VethPair, config: &Config, quick: bool) -> KernelOverhead {
    let mut cached = COST.lock().unwrap_or_else(|p| p.into_inner());
    let result = cached.get_or_insert_with(|| {
        // Short transfers meet the machine's swings (two CPU placements
        // here): 3 pairs of 32 MiB left intervals reaching 0.
        let mut plan = cost::plan(if quick { 5 } else { 8 }, Family::V6);
        if !quick {
            plan.bytes = 128 << 20;
        }
        cost::measure(pair, &plan, config).map_err(|e| e.to_string())
    });
    match result {
        Ok(c) => {
            // What is taken out per record is the programs' own time, read
            // by the kernel (BPF run-time statistics), as the reference
            // stack's probe cost is calibrated directly. The extra CPU of
            // the attached transfers (`per_event_ns`) is shown beside it:
            // it also holds what the probes do to the path, and swings
            // with the machine too much to take out of a µs window.
            // Subtracted only where measured apart from 0.
            let resolved = c
                .program_ns_per_record
                .and_then(|e| e.ci95)
                .is_some_and(|ci| ci.lo > 0.0);
            let per_record = match c.program_ns_per_record {
                Some(e) if resolved => e.mean,
                _ => 0.0,
            };
            let change = c.throughput_change.as_ref().map(|d| d.relative());
            KernelOverhead {
                subtracted_cycles: 0.0,
                subtracted_ns: per_record,
                cost: Some(ProbeCostFigures {
                    pairs: c.pairs.len(),
                    bytes_per_transfer: c.bytes_per_transfer,
                    attached_gbps: c.attached_gbps,
                    detached_gbps: c.detached_gbps,
                    throughput_change_percent: change.map(|(r, _)| 100.0 * r),
                    throughput_change_ci95: change.map(|(_, ci)| ci.scaled(100.0)),
                    throughput_change_p: c.throughput_change.as_ref().map(|d| d.p_value),
                    attached_cpu_s_per_gib: c.attached_cpu_s_per_gib,
                    detached_cpu_s_per_gib: c.detached_cpu_s_per_gib,
                    per_event_ns: c.per_event_ns,
                    events_per_transfer: c.events_per_transfer,
                    program_ns_per_record: c.program_ns_per_record,
                    program_ns_per_run: c.program_ns_per_run,
                    program_time_missing: c.program_time_missing.clone(),
                    dropped: c.dropped,
                }),
                this_run_ns_per_record: None,
                not_measured: (!resolved).then(|| match &c.program_time_missing {
                    Some(why) => format!(
                        "of the programs' own time not measured ({why}): nothing is subtracted"
                    ),
                    None => "of the programs' own time measured, but its 95 % interval reaches 0 (not resolved): nothing is subtracted".to_string(),
                }),
            }
        }
        Err(why) => KernelOverhead {
            not_measured: Some(why.clone()),
            ..KernelOverhead::default()
        },
    }
}

/// Timed transfers for the programs' own time around a run: 2 before and
/// 2 after its messages, 8 MiB each (quick) or 32 MiB.
fn own_time_plan(quick: bool) -> cost::CostPlan {
    let mut plan = cost::plan(2, Family::V6);
    plan.bytes = if quick { 8 << 20 } else { 32 << 20 };
    plan
}

/// The programs' own time per record of `plan.pairs` timed transfers;
/// none where they fail (the lab-wide figure is subtracted then).
fn own_time_around(pair: &VethPair, plan: &cost::CostPlan, config: &Config) -> Vec<f64> {
    cost::own_time(pair, plan, config, plan.pairs).unwrap_or_else(|e| {
        eprintln!("stackscope: the probes' own time around a kernel run not measured: {e}");
        Vec::new()
    })
}

/// Subtracts the programs' own time measured around this run where it
/// has an interval above 0; else the lab-wide figure stays.
fn use_own_time(overhead: &mut KernelOverhead, own: &[f64]) {
    let Some(estimate) = stats::Estimate::of(own) else {
        return;
    };
    if estimate.ci95.is_some_and(|ci| ci.lo > 0.0) {
        overhead.subtracted_ns = estimate.mean;
        overhead.not_measured = None;
    }
    overhead.this_run_ns_per_record = Some(estimate);
}

/// `traces/<recipe>-<run>.sstrace` and its Perfetto timeline.
fn write_files(
    dir: &Path,
    format: TimelineFormat,
    recipe: &Recipe,
    run: &Run,
    trace: &probe::Trace,
    out: &mut KernelRun,
) -> Result<()> {
    let stem = format!("{}-{}", recipe.name, run.id);
    for sub in ["traces", "timelines"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("creating {sub}/"))?;
    }
    let trace_file = format!("traces/{stem}.sstrace");
    let file =
        File::create(dir.join(&trace_file)).with_context(|| format!("creating {trace_file}"))?;
    trace
        .write(BufWriter::new(file))
        .with_context(|| format!("writing {trace_file}"))?;
    let timeline = format!("timelines/{stem}.{}", format.extension());
    let file = File::create(dir.join(&timeline)).with_context(|| format!("creating {timeline}"))?;
    // Threads are CPUs ("kernel, CPU N"), as `trace perfetto` names them.
    let process = probe::convert::TimelineProcess {
        trace,
        pid: 1,
        name: Some(kernel_process_name(&format!("{}/{}", recipe.name, run.id))),
        thread_names: probe::convert::thread_names(trace),
        annotations: &[],
        origin: None,
    };
    probe::convert::write_timeline(&[process], format, BufWriter::new(file))
        .with_context(|| format!("writing {timeline}"))?;
    out.trace = Some(trace_file);
    out.timeline = Some(timeline);
    Ok(())
}

fn kernel_process_name(run: &str) -> String {
    format!("Linux kernel (eBPF): {run}")
}

/// `timeline.pftrace` or `timeline.json` (the first reference run's
/// timeline) gains every kernel run's events, each run as a process of its
/// own, shifted onto the reference trace's time origin: both traces stamp
/// the same cycle counter (kernel time is mapped onto it,
/// `kernel_probe::ClockMap`).
pub fn merge_into_timeline(
    dir: &Path,
    report: &report::Report,
    format: TimelineFormat,
) -> Result<()> {
    let Some(first) = report.experiments.first().and_then(|e| e.runs.first()) else {
        return Ok(());
    };
    let kernel: Vec<(String, &str, &str)> = report
        .experiments
        .iter()
        .flat_map(|e| {
            e.kernel_runs.iter().filter_map(move |k| {
                Some((
                    format!("{}/{}", e.name, k.id),
                    k.trace.as_deref()?,
                    k.timeline.as_deref()?,
                ))
            })
        })
        .collect();
    if kernel.is_empty() {
        return Ok(());
    }
    let reference = read_trace(&dir.join(&first.files.trace))?;
    let Some(origin) = reference.records.iter().map(|r| r.tsc).min() else {
        return Ok(());
    };
    if format == TimelineFormat::Protobuf {
        return append_kernel_processes(dir, &kernel, origin);
    }
    let hz = reference.header.counter_hz;
    let path = dir.join("timeline.json");
    let mut timeline = read_json(&path)?;
    let mut added = Vec::new();
    for (i, (name, trace, kernel_timeline)) in kernel.iter().enumerate() {
        let Some(start) = read_trace(&dir.join(trace))?
            .records
            .iter()
            .map(|r| r.tsc)
            .min()
        else {
            continue;
        };
        // Each timeline counts from its own first record.
        let shift_us = (start as f64 - origin as f64) / hz * 1e6;
        let pid = 2 + i as u64;
        let events = read_json(&dir.join(kernel_timeline))?;
        for mut event in events["traceEvents"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            event["pid"] = pid.into();
            if let Some(ts) = event["ts"].as_f64() {
                event["ts"] = (ts + shift_us).into();
            }
            added.push(event);
        }
        added.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": pid, "tid": 0,
            "args": { "name": kernel_process_name(name) }
        }));
    }
    match timeline["traceEvents"].as_array_mut() {
        Some(events) => events.extend(added),
        None => anyhow::bail!("timeline.json has no traceEvents list"),
    }
    let file = File::create(&path).context("writing timeline.json")?;
    serde_json::to_writer(BufWriter::new(file), &timeline).context("writing timeline.json")?;
    Ok(())
}

/// The protobuf timeline: a trace is a sequence of packets, so each
/// kernel run's process (its own pid, packet sequence and tracks) is
/// appended to the file. Kernel records before the reference's first are
/// drawn at its start.
fn append_kernel_processes(dir: &Path, kernel: &[(String, &str, &str)], origin: u64) -> Result<()> {
    let path = dir.join(super::timeline_file(TimelineFormat::Protobuf));
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for (i, (name, trace, _)) in kernel.iter().enumerate() {
        let trace = read_trace(&dir.join(trace))?;
        let process = probe::convert::TimelineProcess {
            trace: &trace,
            pid: 2 + i as u32,
            name: Some(kernel_process_name(name)),
            thread_names: probe::convert::thread_names(&trace),
            annotations: &[],
            origin: Some(origin),
        };
        probe::convert::write_timeline(&[process], TimelineFormat::Protobuf, &mut out)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))
}

fn read_trace(path: &Path) -> Result<probe::Trace> {
    let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    probe::Trace::read(std::io::BufReader::new(file))
        .with_context(|| format!("reading {}", path.display()))
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel_probe::messages::Path as KernelPath;

    #[test]
    fn the_warmup_comes_first_then_rounds_of_every_size() {
        let plan = KernelPlan {
            protocol: Protocol::Tcp,
            family: Family::V6,
            path: KernelPath::Veth,
            sizes: vec![1024, 65536],
            quick_sizes: vec![1024],
            reps: 2,
            quick_reps: 1,
            warmup: 2,
            congestion: None,
        };
        assert_eq!(
            sent_sizes(&plan, false),
            vec![1024, 1024, 1024, 65536, 1024, 65536]
        );
        assert_eq!(sent_sizes(&plan, true), vec![1024, 1024, 1024]);
        assert_eq!(steps(&plan, false), 6);
    }
}
