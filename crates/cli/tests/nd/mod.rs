//! Helpers of the Neighbour Discovery interop tests (`interop_nd.rs`):
//! the lab (namespace, persistent TAP, `stackscope host`, radvd, traffic
//! from the kernel's side), the decoding of the kernel-side capture (made
//! and checked by `support::capture`), hand-built frames, the malformed
//! ones, and issue 23's SYN flood.

pub mod capture;
pub mod flood;
pub mod frames;
pub mod lab;
pub mod malformed;
