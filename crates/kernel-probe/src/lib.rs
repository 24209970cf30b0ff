//! Probe events inside the Linux kernel, recorded by eBPF (issue 19,
//! DESIGN.md "Probes in the Linux kernel").
//!
//! One `tp_btf` program per network tracepoint (and cgroup programs for IP
//! output, transport input and the UDP send's start) writes the 32-byte
//! [`probe::Record`] of the trace schema into a BPF ring buffer, for the
//! flows registered with [`KernelProbes::trace_flow`] only: an untraced
//! packet costs one hash lookup and no ring space. A thread polls the ring
//! (no wakeup per event), maps kernel time onto the cycle counter
//! ([`ClockMap`]) and collects the records; [`KernelProbes::finish`] returns
//! them as a normal [`probe::Trace`] with the [`LOCATIONS`] table and the
//! events lost to a full ring.
//!
//! The eBPF object is compiled from `bpf/stackscope.bpf.c` by
//! `bpf/build.sh` and committed, so building this crate needs no clang;
//! the programs are loaded with the `aya` crate. See docs/kernel-probes.md.

mod cgroup;
mod clock_map;
pub mod cost;
mod drop_reasons;
mod error;
pub mod locations;
pub mod messages;
mod session;
pub mod transfer;
mod transfer_io;

pub use clock_map::ClockMap;
pub use drop_reasons::DropReasons;
pub use error::KernelProbeError;
pub use locations::{Hook, HOOKS, LOCATIONS};
pub use session::{
    netns_inode, Config, KernelProbes, KernelTrace, ProbeStatus, ProgramTime, RunTimeStats,
};
