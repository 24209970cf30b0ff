//! Traffic for any stack: ttcp-style bulk transfers and request/response
//! echoes over the operating system's sockets (`kernel`) or the reference
//! stack (`ref`), with every received byte checked (DESIGN.md, "Traffic
//! tools and experiments").
//!
//! * [`program`]: every traffic program, written once — the stream
//!   transfer, the datagram transfer (UDP and link frames), delay mode's
//!   echo — over [`transport::Transport`], what a program needs from a
//!   stack;
//! * [`kernel`] and [`reference`](mod@reference): the two stacks as transports (the
//!   kernel's sockets; the reference host), and what only they have
//!   (namespaces, the messages run);
//! * [`run`]: where a run's ends are — both on one stack, on the
//!   simulator, or one on each across a link — chosen in one place;
//! * [`pattern`], [`datagram`], [`verify`]: what senders write and how
//!   receivers check it;
//! * [`spec`]: what to run, with [`congestion`] the TCP congestion
//!   control it pins on either stack; [`report`]: what it did, iperf3-shaped;
//!   [`sweep`]: grids of runs with their statistics.

pub mod affinity;
pub mod congestion;
pub mod core_trip;
pub mod cpu;
pub mod cpu_speed;
pub mod datagram;
pub mod echo;
pub mod env;
pub mod error;
pub mod kernel;
pub mod losses;
pub mod meter;
pub mod pace;
pub mod pattern;
pub mod program;
pub mod reference;
pub mod report;
pub mod run;
pub mod session;
pub mod spec;
pub mod sweep;
pub mod transport;
pub mod units;
pub mod verify;
pub mod wake_trip;

pub use error::TrafficError;
