//! What a report holds: the figures of every experiment run, as
//! `summary.json` serialises them and the HTML and CSV present them.

use analysis::callpath::CallTree;
use analysis::histogram::SpanHistograms;
use analysis::profile::ThreadProfile;
use analysis::queues::{QueueCounts, QueueStats, QueueTrace, Rates};
use analysis::site_trace::SiteTrace;
use analysis::sweep::{PathTrends, SizePoint};
use serde::Serialize;

/// A lab run or a single recipe's run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Names the run: its recipes, date and whether quick (see
    /// [`run_title`]).
    pub title: String,
    /// Seconds since the Unix epoch when the run began.
    pub generated_unix: u64,
    /// Coarser sweeps (`--quick`).
    pub quick: bool,
    /// The command line that made it.
    pub command: String,
    /// The recipes run, by name.
    pub recipes: Vec<String>,
    pub machine: Machine,
    pub calibration: Calibration,
    /// Where the time goes on each traced path (the page opens with it).
    pub summary: crate::summary::Summary,
    pub experiments: Vec<Experiment>,
    /// What went into `trace.pcapng`, if any run captured packets.
    pub capture: Option<crate::capture::MergeStats>,
}

/// `stackscope lab (quick): xie1999, draves1998 — 2026-11-26 06:47 UTC`.
pub fn run_title(command: &str, recipes: &[String], generated_unix: u64, quick: bool) -> String {
    format!(
        "{command} ({}): {} — {}",
        if quick { "quick" } else { "full" },
        recipes.join(", "),
        utc(generated_unix)
    )
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the epoch.
pub fn utc(secs: u64) -> String {
    let t = Civil::of(secs);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

/// A moment as a UTC calendar date and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl Civil {
    /// Of `secs` since the Unix epoch.
    pub fn of(secs: u64) -> Self {
        let days = secs / 86_400;
        let rem = secs % 86_400;
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Self {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
        }
    }
}

/// The machine the run was measured on; what could not be read is left
/// out (`None`), never shown as a null.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// 1, 5 and 15 minute load averages when the run began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_average: Option<[f64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stackscope_version: Option<String>,
}

/// The clock and probe cost every figure rests on.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Calibration {
    pub counter_hz: f64,
    /// Cycles one probe adds between two others (subtracted once per
    /// probe inside every latency and span).
    pub overhead_cycles: f64,
    pub overhead_ns: f64,
}

/// One recipe.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    /// The study: authors, year, title (and where it appeared).
    pub citation: String,
    /// Its text among the seeds (a file of `../shared/seeds/`).
    pub source: String,
    pub description: String,
    pub runs: Vec<MessagesRun>,
    /// Throughput and delay sweeps.
    pub sweeps: Vec<SweepRun>,
    /// Pipeline stages (the SunOS study's Figure 18).
    pub pipelines: Vec<PipelineStageRun>,
    /// Messages runs on the Linux kernel's stack (eBPF probes, issue 19).
    pub kernel_runs: Vec<crate::kernel_runs::KernelRun>,
    /// The study's own published values beside ours (`crate::published`).
    pub published: Vec<crate::published::Row>,
}

/// One run of traced single messages over a sweep of sizes.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesRun {
    pub id: String,
    /// The recipe's caption for the run (may be empty).
    pub title: String,
    pub protocol: String,
    pub family: String,
    pub link: String,
    /// The wire's rate, bit/s, where the link has one.
    pub link_bps: Option<f64>,
    pub reps: u32,
    pub warmup: u32,
    /// Measured messages sent, and of those delivered whole.
    pub sent: u64,
    pub delivered: u64,
    /// Payload one packet carries on the path; stop-latency steps are
    /// looked for at its multiples.
    pub segment_bytes: f64,
    /// The IP MTU of the path the run's family takes (1500 on Ethernet,
    /// 1480 for IPv6 over a tunnel on it), which `segment_bytes` is of.
    pub path_mtu: usize,
    /// The machine's state before and after each pass.
    #[serde(flatten)]
    pub gauges: MachineGauges,
    /// CPU-bound background processes during the run and where they ran
    /// (`None`: none).
    pub load: Option<RunLoad>,
    /// Where the send path's stop latency ends (named in every table).
    pub stop_at: analysis::messages::StopAt,
    pub points: Vec<SizePoint>,
    pub send: PathTrends,
    pub receive: PathTrends,
    /// Exclusive time per function: the sender's and the receiver's
    /// thread over the whole run.
    pub sender_profile: Option<ThreadProfile>,
    pub receiver_profile: Option<ThreadProfile>,
    pub cpu: RunCpu,
    pub probes: ProbeHealth,
    /// The per-component delays (the SunOS study's Table 1).
    pub components: Table,
    /// The common call path of the measured messages' send path (the IPv6
    /// study's Figures 4.6 / 4.7).
    pub call_tree: Option<CallTree>,
    /// Processing time per layer on each side.
    /// Protocol processing delay per packet in linear bins, send and
    /// receive side (the SunOS study's Figure 14).
    pub protocol_delay: Option<analysis::protocol_delay::ProtocolDelay>,
    pub sender_layers: Vec<SpanHistograms>,
    pub receiver_layers: Vec<SpanHistograms>,
    /// Every queue of every host thread; the series are drawn in the HTML
    /// and left out of `summary.json` (see `queue_summary`).
    #[serde(skip)]
    pub queues: Vec<QueueTrace>,
    pub queue_summary: Vec<QueueSummary>,
    /// Bytes past each site of the path against time (runs of a few
    /// sizes: the SunOS study's packet traces); drawn, not serialised.
    #[serde(skip)]
    pub packet_trace: Vec<SiteTrace>,
    /// The receiver's pure ACKs: (ns, receive socket queue bytes at that
    /// moment), against the queue's draining.
    #[serde(skip)]
    pub acks: Vec<(f64, u64)>,
    /// The recorder's thread numbers of the two hosts.
    pub sender_thread: Option<u16>,
    pub receiver_thread: Option<u16>,
    /// Files of this run, relative to the report directory.
    pub files: RunFiles,
}

/// A messages run's background load (the SunOS study's Figure 17).
#[derive(Debug, Clone, Serialize)]
pub struct RunLoad {
    pub processes: u32,
    /// `both` (nothing pinned), `server` or `client`.
    pub on: String,
    /// The processes' CPU, and the receiver's and sender's host threads'
    /// (`None` where nothing was pinned).
    pub load_cpu: Option<usize>,
    pub receiver_cpu: Option<usize>,
    pub sender_cpu: Option<usize>,
    /// Every pin held (`None` when nothing was pinned): the processes'
    /// and both host threads' in every pass.
    pub pinned: Option<bool>,
}

/// One queue's figures without its series.
#[derive(Debug, Clone, Serialize)]
pub struct QueueSummary {
    pub queue: String,
    pub host: String,
    pub counts: QueueCounts,
    pub stats: QueueStats,
    pub rates: Rates,
}

/// Process-level CPU of the two host threads over the messages.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RunCpu {
    /// How the host threads waited when idle: `block` (CPU time is work
    /// done) or `spin-then-block` (it includes polling with nothing to do).
    pub runner_wait: &'static str,
    pub wall_s: f64,
    pub sender_user_s: f64,
    pub sender_system_s: f64,
    pub receiver_user_s: f64,
    pub receiver_system_s: f64,
}

/// What the recorder lost or could not pair: reported with every result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProbeHealth {
    pub records: u64,
    /// Events dropped because a ring was full.
    pub dropped: u64,
    pub unmatched_exits: u64,
    pub unclosed_spans: u64,
    /// Probe records inside the measured windows, and their total cost
    /// that was subtracted, per message on average (send path), ns.
    pub probes_per_message: f64,
    pub overhead_per_message_ns: f64,
    /// The probe depth the run recorded at (`layers` or `functions`).
    pub level: probe::Level,
    /// The subtracted probe cost as a share of the mean send stop latency.
    pub overhead_share_of_stop: f64,
    /// Per category: spans recorded, and of those the ones whose time with
    /// the probe cost removed is below the cost of one probe (the probe
    /// resolution: finer than the probes can tell).
    pub resolution: Vec<CategoryResolution>,
}

/// How many spans of a category were finer than the probes.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryResolution {
    pub category: probe::Category,
    pub spans: u64,
    pub below_resolution: u64,
}

/// Where a run's files are.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunFiles {
    pub trace: String,
    pub timeline: String,
    pub sizes_csv: String,
    pub cpu_csv: String,
}

/// One throughput or delay sweep: its points as `stackscope sweep` writes
/// them, a plot and tables made for reading.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRun {
    pub id: String,
    pub title: String,
    /// `throughput` or `delay`.
    pub mode: String,
    pub link: String,
    /// The wire's rate, bit/s, where the link has one (drawn on
    /// throughput plots).
    pub link_bps: Option<f64>,
    pub reps: u32,
    /// Background load levels (CPU-bound processes) the points ran
    /// under ([0] for none)...
    pub loads: Vec<u32>,
    /// ...and where (`both`: anywhere; `server`, `client`: pinned to that
    /// side's CPU). Each point says its own in `load_procs`, `load_on`,
    /// `load_cpu` and `pinned`.
    pub load_on: Vec<String>,
    /// The study's own description of the figure, shown beside ours.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
    /// Every point's columns by name (the sweep CSV's columns).
    pub points: Vec<serde_json::Map<String, serde_json::Value>>,
    /// The plot: one series per stack / protocol / family.
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub series: Vec<Series>,
    /// The readable tables, first the points.
    pub tables: Vec<Table>,
    /// A point that failed and stopped the run, if one did.
    pub failure: Option<String>,
    /// What a reader must know beside the figures: the minimum duration,
    /// points too short to be a result (left out of the plot), impossible
    /// figures.
    pub notes: Vec<String>,
    /// The sweep's CSV, relative to the report directory.
    pub csv: String,
}

/// One stage of a pipelined application on the kernel's loopback: its
/// receive, compute and transmit processes' activity (the SunOS study's
/// Figure 18).
#[derive(Debug, Clone, Serialize)]
pub struct PipelineStageRun {
    pub id: String,
    pub title: String,
    pub family: String,
    pub block_bytes: u64,
    pub blocks: u32,
    /// Blocks at the start left out of the figures.
    pub warmup: u32,
    /// CPU work per block on an idle CPU, and the iterations that are it.
    pub compute_us: f64,
    pub compute_iterations: u64,
    /// The CPU the stage's processes ran on and the source's and sink's;
    /// `None` when pinning was refused (the scheduler placed them).
    pub stage_cpu: Option<usize>,
    pub peer_cpu: Option<usize>,
    /// The figures, each with n and its 95 % interval
    /// (`traffic::kernel::pipeline_summary`).
    pub figures: serde_json::Value,
    /// The machine's state before and after the run: the stage's
    /// hand-overs between processes move with the wake round trip.
    #[serde(flatten)]
    pub gauges: MachineGauges,
    /// The chart's window, ms since the run began, and in it each
    /// process's on-intervals (ms since the window's start).
    pub window_ms: [f64; 2],
    pub lanes: Vec<(String, Vec<[f64; 2]>)>,
    /// The transmit socket's send queue before and after each write in
    /// the window: (ms since the window's start, bytes).
    pub send_queue: Vec<[f64; 2]>,
    pub table: Table,
    pub notes: Vec<String>,
    /// Every on-interval, relative to the report directory.
    pub csv: String,
}

/// One line of a plot: mean and, when there were repetitions, standard
/// deviation and the 95 % interval of the mean per x.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub label: String,
    pub points: Vec<SeriesPoint>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct SeriesPoint {
    pub x: f64,
    pub y: f64,
    pub stdev: Option<f64>,
    pub ci95: Option<stats::Interval>,
}

/// A table already formatted for reading.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub caption: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The machine's state around a run's repetitions, measured outside every
/// window: the median, least and greatest of each gauge (`None` where it
/// was not measured: one CPU, or a gauge that gave up under load).
/// `stackscope compare` reads runs whose round trips differ as the
/// machine's difference, not the stack's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MachineGauges {
    /// A cache line's round trip between the two CPUs, ns
    /// (`traffic::core_trip`).
    pub core_trip_ns: Option<f64>,
    pub core_trip_min_ns: Option<f64>,
    pub core_trip_max_ns: Option<f64>,
    /// A wake-up's round trip between two blocked threads, ns
    /// (`traffic::wake_trip`): a message that waits for acknowledgements
    /// waits for a thread to be woken, which the core trip does not see.
    pub wake_trip_ns: Option<f64>,
    pub wake_trip_min_ns: Option<f64>,
    pub wake_trip_max_ns: Option<f64>,
    /// The CPUs' speed at the stack's per-byte work, ns per KiB
    /// (`traffic::cpu_speed`): a host that runs the vCPUs slower shows
    /// here, where neither round trip sees it.
    pub cpu_speed_ns_per_kib: Option<f64>,
    pub cpu_speed_min_ns_per_kib: Option<f64>,
    pub cpu_speed_max_ns_per_kib: Option<f64>,
    /// CPUs' worth of time other processes used from the first reading to
    /// the last (`traffic::sweep::busy`: the machine's busy time less this
    /// process's and its background load's), as a sweep point's
    /// `others_cpu`: a run beside other work is slower without any gauge
    /// above moving. `None` over too few clock ticks.
    pub others_cpu: Option<f64>,
    /// How many times the gauges were read (before the first pass and
    /// after each): with two, a range is the state before and after one
    /// window, and a median cannot say where the window mostly ran.
    pub gauge_readings: Option<u32>,
}
