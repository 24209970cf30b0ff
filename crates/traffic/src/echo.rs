//! Delay mode: request/response echoes (the XTP study's `dela`, the SunOS
//! study's stop-and-wait). A client sends a `len`-byte request, the server
//! returns it whole, and the client times the round trip and checks the
//! answer against what it sent. One exchange is outstanding at a time.

use std::time::Duration;

use serde::Serialize;

use crate::env::Environment;
use crate::spec::EchoSpec;

/// What an echo run measured.
#[derive(Debug, Clone, Serialize)]
pub struct EchoReport {
    pub spec: EchoSpec,
    pub target: Environment,
    /// Round-trip time of each answered exchange, in order, in
    /// nanoseconds.
    pub rtt_ns: Vec<u64>,
    /// Exchanges whose answer never came within the per-exchange wait
    /// (datagram protocols; TCP fails the run instead).
    pub lost: u64,
    /// Answers that differed from the request.
    pub corrupted: u64,
    /// Times the reference stack's threaded runner put a thread to sleep
    /// inside a measured exchange, over the run (every circuit's; docs/
    /// stack.md, "Runners"); `None` for the kernel and the simulator.
    pub runner_naps: Option<u64>,
}

/// How long a datagram client waits for one answer before counting the
/// exchange lost and moving on.
pub fn answer_wait(spec: &EchoSpec) -> Duration {
    spec.timeout.min(Duration::from_secs(1))
}

pub use crate::spec::MAX_EXCHANGES;
