//! Helpers of the Neighbour Discovery interop tests (`interop_nd.rs`):
//! the lab (namespace, persistent TAP, `stackscope host`, radvd, traffic
//! from the kernel's side), the decoding of the kernel-side capture (made
//! and checked by `support::capture`), hand-built frames, and the
//! malformed ones.

pub mod capture;
pub mod frames;
pub mod lab;
pub mod malformed;
