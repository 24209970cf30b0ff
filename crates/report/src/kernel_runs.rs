//! A kernel messages run as the report holds it (issue 19): the Linux
//! kernel's stack traced with eBPF, analysed by
//! `analysis::kernel_messages`, or the reason it could not run.

use std::collections::BTreeMap;

use analysis::kernel_messages::{KernelQueue, KernelSizePoint, KernelTrends};
use serde::Serialize;
use stats::{Estimate, Interval};

use crate::model::MachineGauges;

/// One kernel messages run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelRun {
    pub id: String,
    pub title: String,
    /// `TCP` or `UDP`.
    pub protocol: String,
    /// `IPv6` or `IPv4`.
    pub family: String,
    /// `veth` (two namespaces) or `loopback`.
    pub path: String,
    /// TCP's congestion control the recipe asked for (`congestion`);
    /// none: the kernel's default.
    pub congestion: Option<String>,
    /// TCP's congestion control the messages ran, as read back from the
    /// sender's socket (with one asked for, both ends were checked to run
    /// it); none for UDP or a run that did not measure.
    pub congestion_control: Option<String>,
    pub reps: u32,
    pub warmup: u32,
    /// `measured`, or `skipped` with `skipped` saying why.
    pub status: String,
    pub skipped: Option<String>,
    /// Probes that could not attach, and why (also when skipped: every
    /// probe, with the reason).
    pub probes_missing: Vec<MissingProbe>,
    pub probes_attached: usize,
    /// Measured messages (warm-up left out) sent and received whole.
    pub sent: u64,
    pub received: u64,
    /// Each window's events, in words.
    pub windows: BTreeMap<String, String>,
    pub points: Vec<KernelSizePoint>,
    pub trends: KernelTrends,
    /// qdisc, device, backlog and socket receive queues per host, and the
    /// TCP sender's socket send queue.
    pub queues: Vec<KernelQueue>,
    /// Messages without a window, by reason (never dropped silently).
    pub incomplete_send: BTreeMap<String, u32>,
    pub incomplete_receive: BTreeMap<String, u32>,
    /// Records in the trace and events lost to a full ring.
    pub records: u64,
    pub ring_dropped: u64,
    /// The per-event cost taken out of every window, and where it came
    /// from.
    pub overhead: KernelOverhead,
    /// The flow ids of the sender's and the receiver's events.
    pub sender_flow: u32,
    pub receiver_flow: u32,
    /// `traces/…` and `timelines/…`, when measured.
    pub trace: Option<String>,
    pub timeline: Option<String>,
    pub notes: Vec<String>,
    /// The machine's state before the messages and after them (one pass:
    /// two readings), for `stackscope compare`.
    #[serde(flatten)]
    pub gauges: MachineGauges,
}

/// A probe that did not attach.
#[derive(Debug, Clone, Serialize)]
pub struct MissingProbe {
    pub probe: String,
    pub why: String,
}

/// The kernel probes' cost and what was subtracted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelOverhead {
    /// Cycles per record taken out (the trace header's), and in ns.
    pub subtracted_cycles: f64,
    pub subtracted_ns: f64,
    /// The interleaved measurement behind it (`None`: not measured, and
    /// nothing subtracted).
    pub cost: Option<ProbeCostFigures>,
    /// Why it was not measured, if it was not.
    pub not_measured: Option<String>,
    /// The programs' own time per record measured around this run's
    /// messages (timed transfers just before and just after them), ns:
    /// what is subtracted, as the machine's speed drifts between runs.
    #[serde(default)]
    pub this_run_ns_per_record: Option<Estimate>,
}

/// The probes' cost: bulk TCP transfers across the veth pair, attached
/// and detached in turn.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeCostFigures {
    /// Attached/detached pairs, and bytes per transfer.
    pub pairs: usize,
    pub bytes_per_transfer: u64,
    pub attached_gbps: Option<Estimate>,
    pub detached_gbps: Option<Estimate>,
    /// Attached over detached throughput − 1, %, with its 95 % interval
    /// (Welch) and p-value.
    pub throughput_change_percent: Option<f64>,
    pub throughput_change_ci95: Option<Interval>,
    pub throughput_change_p: Option<f64>,
    /// CPU seconds per GiB of the sending and receiving threads.
    pub attached_cpu_s_per_gib: Option<Estimate>,
    pub detached_cpu_s_per_gib: Option<Estimate>,
    /// Extra CPU per event recorded, ns (attached − detached CPU over the
    /// events: the programs and all they do to the path).
    pub per_event_ns: Option<Estimate>,
    pub events_per_transfer: Option<Estimate>,
    /// The programs' own time per record kept, ns, from the kernel's BPF
    /// run-time statistics on a third, timed transfer per pair: what is
    /// subtracted per record.
    #[serde(default)]
    pub program_ns_per_record: Option<Estimate>,
    /// The same per program run (runs that kept nothing included), ns.
    #[serde(default)]
    pub program_ns_per_run: Option<Estimate>,
    /// Why the programs' own time was not measured, if it was not.
    #[serde(default)]
    pub program_time_missing: Option<String>,
    pub dropped: u64,
}
