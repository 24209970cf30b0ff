//! What an iperf3 client run asks for and measured: its options, the
//! intervals' and the whole test's counts per stream, and the server's
//! results as it sent them.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::params::Protocol;
use super::results::StreamResult;
use crate::cpu::CpuPercent;
use crate::error::TrafficError;
use crate::transport::TcpInfo;

/// What the client asks for (iperf3's main options).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    pub server: SocketAddr,
    /// The name the user gave (`connecting_to.host`).
    pub host_name: String,
    pub protocol: Protocol,
    /// `-R`: the server sends.
    pub reverse: bool,
    /// `-P`.
    pub parallel: usize,
    /// `-l`: bytes per write or per datagram.
    pub len: usize,
    /// `-b`, bits per second per stream (UDP: 1 Mbit/s when not given).
    pub rate: Option<u64>,
    /// `-n`: bytes over all streams (ends the test instead of `-t`).
    pub bytes: Option<u64>,
    /// `-t`, whole seconds as iperf3 sends them.
    pub time: u64,
    /// `-w`: socket buffer bytes.
    pub window: Option<usize>,
    /// `-i`: interval reports (none when `None`).
    pub interval: Option<Duration>,
    /// Waits for the server (connecting, each message) end after this.
    pub timeout: Duration,
}

/// One stream's counts over one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamInterval {
    pub socket: u32,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    /// UDP: datagrams sent, or (receiving) counted by their sequence.
    pub packets: u64,
    /// UDP receiving.
    pub lost: u64,
    pub jitter: f64,
    /// TCP sending: retransmits in the interval and the connection's state
    /// at its end.
    pub retransmits: u64,
    pub tcp: Option<TcpInfo>,
}

/// One interval of the test: every stream's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    pub streams: Vec<StreamInterval>,
}

/// One stream's whole-test counts on this end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTotals {
    pub id: u32,
    /// What iperf3 prints in brackets (`[  5]`): numbered from 5 here.
    pub socket: u32,
    pub local: Option<SocketAddr>,
    pub remote: Option<SocketAddr>,
    pub bytes: u64,
    pub packets: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub jitter: f64,
    pub retransmits: Option<u64>,
    /// TCP sending: the largest cwnd, and the RTT's range and mean over
    /// the intervals' samples (microseconds).
    pub max_cwnd: u64,
    pub max_snd_wnd: u64,
    pub rtt_min: u64,
    pub rtt_max: u64,
    pub rtt_mean: u64,
    /// Seconds from the test's start to this stream's end.
    pub end: f64,
}

/// The server's results, as it sent them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteResults {
    pub cpu: CpuPercent,
    pub congestion: Option<String>,
    pub streams: Vec<StreamResult>,
}

/// What a finished client run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRun {
    pub options: ClientOptions,
    pub cookie: String,
    /// The control connection's MSS, where the stack says.
    pub tcp_mss: Option<u64>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
    pub congestion: Option<String>,
    pub intervals: Vec<Interval>,
    pub streams: Vec<StreamTotals>,
    /// Seconds from TEST_RUNNING to TEST_END on this end.
    pub duration: f64,
    pub cpu: CpuPercent,
    pub remote: RemoteResults,
    /// Whether this end is the server (`-s -J`): then it sends with `-R`,
    /// and its JSON names the client it accepted.
    pub server_side: bool,
    /// The server's view: the client's control connection.
    pub accepted: Option<SocketAddr>,
}

impl ClientRun {
    /// Whether this end sent the data.
    pub fn local_sends(&self) -> bool {
        self.options.reverse == self.server_side
    }
}

/// The server's results object, read.
pub fn remote_results(v: &Value) -> Result<RemoteResults, TrafficError> {
    let bad = |why: &str| TrafficError::Invalid(format!("iperf3: the server's results: {why}"));
    let number = |o: &Value, key: &str| o.get(key).and_then(Value::as_f64);
    let streams = v
        .get("streams")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no streams array"))?
        .iter()
        .map(|s| {
            Ok(StreamResult {
                id: s
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|id| u32::try_from(id).ok())
                    .ok_or_else(|| bad("a stream without an id"))?,
                bytes: s
                    .get("bytes")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| bad("a stream without bytes"))?,
                // iperf3 sends -1 (or, from some builds, its unsigned
                // wrap) where a stream has no count.
                retransmits: s
                    .get("retransmits")
                    .and_then(Value::as_u64)
                    .filter(|&r| r < 1 << 48),
                jitter: number(s, "jitter").unwrap_or(0.0),
                errors: s.get("errors").and_then(Value::as_u64).unwrap_or(0),
                packets: s.get("packets").and_then(Value::as_u64).unwrap_or(0),
                start_time: number(s, "start_time").unwrap_or(0.0),
                end_time: number(s, "end_time").unwrap_or(0.0),
            })
        })
        .collect::<Result<Vec<_>, TrafficError>>()?;
    Ok(RemoteResults {
        cpu: CpuPercent {
            total: number(v, "cpu_util_total").unwrap_or(0.0),
            user: number(v, "cpu_util_user").unwrap_or(0.0),
            system: number(v, "cpu_util_system").unwrap_or(0.0),
        },
        congestion: v
            .get("congestion_used")
            .and_then(Value::as_str)
            .map(str::to_string),
        streams,
    })
}
