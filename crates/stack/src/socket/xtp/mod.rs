//! XTP 4.0 (the Xpress Transfer Protocol of the XTP study, seed `002`;
//! `docs/xtp.md`) for the reference stack, in pieces with one job each:
//! the application's options ([`config`]), the receive stream with its
//! `rseq`, `alloc` and ECNTL spans ([`recv_stream`]), the send stream with
//! its retransmission ranges ([`send_stream`]), rate control with RTIMER
//! ([`rate`]), the association's state machine ([`association`], with
//! packet input in `input.rs` and output in `output.rs`), the character
//! driver's referenced writes and posted reads ([`driver`]), packets to
//! send ([`packet`]), the host's table of sockets and keys
//! ([`sockets`]), and reliable multicast ([`multicast`]).
//!
//! Like `socket::tcp`, nothing here does I/O or reads a clock: the host
//! (`iface::host::xtp`) parses packets, finds their context, and sends
//! what the association asks for.

pub mod association;
pub mod config;
pub mod driver;
mod input;
pub mod multicast;
mod output;
pub mod packet;
pub mod rate;
pub mod recv_stream;
pub mod send_stream;
pub mod sockets;
#[cfg(test)]
mod tests;

pub use association::{Association, Ends, Failure, Role, State, XtpCounters};
pub use config::{ErrorControl, RateLimit, Service, XtpConfig};
pub use sockets::XtpHandle;
