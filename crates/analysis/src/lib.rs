//! Analysis: from probe traces and traffic results to the figures the
//! source studies computed by hand (DESIGN.md, "Analysis and report").
//!
//! * [`view`]: a trace indexed by location name and thread;
//! * [`spans`]: nested spans per thread with the probe overhead removed;
//! * [`messages`]: start and stop latency per message on the send and
//!   receive paths, with the cost categories inside them;
//! * [`profile`]: exclusive time per function and category (CPU shares);
//! * [`sweep`]: per-size figures over a sweep of message sizes;
//! * [`trend`]: least-squares trend lines and steps at MTU multiples;
//! * [`queues`]: the four IPC queues' and the device ring's length over
//!   time, delay and rates
//!   (the SunOS study's queue figures);
//! * [`histogram`]: log-binned histograms with order statistics, and the
//!   per-layer processing-delay histograms of the spans;
//! * [`kernel_messages`]: the same windows and a per-layer split for
//!   the Linux kernel's stack, from its eBPF probe trace;
//! * [`callpath`]: the common call path of one message as a tree with
//!   times (the IPv6 study's Figures 4.6 and 4.7);
//! * [`resolution`]: per category, the spans finer than one probe;
//! * [`site_trace`]: bytes past each probe site against time (the SunOS
//!   study's packet traces);
//! * [`tunnel_part`]: which spans are a tunnel's work (IPv6 over IPv4).

pub mod callpath;
pub mod histogram;
pub mod kernel_messages;
pub mod messages;
pub mod profile;
pub mod protocol_delay;
pub mod queues;
pub mod resolution;
pub mod site_trace;
pub mod spans;
pub mod sweep;
pub mod trend;
pub mod tunnel_part;
pub mod view;

use std::collections::BTreeMap;

pub use messages::{MessageLatency, Messages, PathLatency};
pub use view::TraceView;

/// Why a trace could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("unusable trace: {0}")]
    Trace(String),
    #[error("the trace's location table has no `{0}`: was it recorded by the reference stack?")]
    MissingLocation(String),
}

/// Spans of every thread of a trace.
pub fn all_spans(view: &TraceView) -> BTreeMap<u16, spans::ThreadSpans> {
    view.threads
        .iter()
        .map(|(&thread, records)| (thread, spans::rebuild(view, records)))
        .collect()
}
