//! Helpers of the Neighbour Discovery interop tests (`interop_nd.rs`):
//! the lab (namespace, persistent TAP, `stackscope host`, radvd, traffic
//! from the kernel's side), the kernel-side capture and its decoding,
//! hand-built frames, and the malformed ones.

pub mod capture;
pub mod frames;
pub mod lab;
pub mod malformed;
