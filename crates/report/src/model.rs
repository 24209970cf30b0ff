//! What a report holds: the figures of every experiment run, as
//! `summary.json` serialises them and the HTML and CSV present them.

use analysis::profile::ThreadProfile;
use analysis::sweep::{PathTrends, SizePoint};
use serde::Serialize;

/// A lab run or a single recipe's run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub title: String,
    /// Seconds since the Unix epoch when the run began.
    pub generated_unix: u64,
    /// Coarser sweeps (`--quick`).
    pub quick: bool,
    /// The command line that made it.
    pub command: String,
    pub machine: serde_json::Value,
    pub calibration: Calibration,
    pub experiments: Vec<Experiment>,
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
    pub source: String,
    pub description: String,
    pub runs: Vec<MessagesRun>,
}

/// One run of traced single messages over a sweep of sizes.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesRun {
    pub id: String,
    pub protocol: String,
    pub family: String,
    pub link: String,
    pub reps: u32,
    pub warmup: u32,
    /// Measured messages sent, and of those delivered whole.
    pub sent: u64,
    pub delivered: u64,
    /// Payload one packet carries on the path; stop-latency steps are
    /// looked for at its multiples.
    pub segment_bytes: f64,
    pub points: Vec<SizePoint>,
    pub send: PathTrends,
    pub receive: PathTrends,
    /// Exclusive time per function: the sender's and the receiver's
    /// thread over the whole run.
    pub sender_profile: Option<ThreadProfile>,
    pub receiver_profile: Option<ThreadProfile>,
    pub cpu: RunCpu,
    pub probes: ProbeHealth,
    /// Files of this run, relative to the report directory.
    pub files: RunFiles,
}

/// Process-level CPU of the two host threads over the messages.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RunCpu {
    pub wall_s: f64,
    pub sender_user_s: f64,
    pub sender_system_s: f64,
    pub receiver_user_s: f64,
    pub receiver_system_s: f64,
}

/// What the recorder lost or could not pair: reported with every result.
#[derive(Debug, Clone, Copy, Default, Serialize)]
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
}

/// Where a run's files are.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunFiles {
    pub trace: String,
    pub timeline: String,
    pub sizes_csv: String,
    pub cpu_csv: String,
}
