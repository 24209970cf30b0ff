//! Traffic for any stack: ttcp-style bulk transfers and request/response
//! echoes over the operating system's sockets (`kernel`) or the reference
//! stack (`ref`), with every received byte checked (DESIGN.md, "Traffic
//! tools and experiments").
//!
//! * [`pattern`], [`datagram`], [`verify`]: what senders write and how
//!   receivers check it;
//! * [`spec`]: what to run; [`report`]: what it did, iperf3-shaped;
//! * [`kernel`] and [`reference`]: the two targets.

pub mod affinity;
pub mod core_trip;
pub mod cpu;
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

pub use error::TrafficError;
