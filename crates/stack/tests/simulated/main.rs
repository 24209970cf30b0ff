//! The reference stack's tests that run on the simulator and on virtual
//! links, with no probe gate, real link or operating-system state of their
//! own: one test binary for them all. As one binary each they took about
//! 8 of CI's minutes to build, most of it the same stack code optimised
//! again per binary (issue 22, CI under 20 minutes). Tests that set the
//! probe gate, use the kernel, measure memory or time, or are long
//! (`--ignored`) stay binaries of their own beside this directory.
//!
//! `cargo test -p stackscope-stack --test simulated MODULE::` runs one
//! file's tests.

#[path = "../network_support/mod.rs"]
mod network_support;
#[path = "../xtp_support/mod.rs"]
mod xtp_support;

mod address;
mod arp;
mod ethertype;
mod hardening;
mod hub_topology;
mod icmp_error;
mod ip_links;
mod ipv6_input;
mod lan;
mod lan_multicast;
mod lan_shared_medium;
mod long_runs;
mod mld;
mod neighbor;
mod network_v4;
mod network_v6;
mod reassembly;
mod route;
mod simulator;
mod tcp_ack_rate;
mod tcp_connection;
mod tcp_listener;
mod tcp_pmtu;
mod tcp_robustness;
mod topology;
mod tunnel_flavours;
mod tunnel_icmp;
mod tunnel_igmp;
mod tunnel_slaac;
mod udp_limits;
mod vnet_segmentation;
mod xtp_driver;
mod xtp_host;
mod xtp_impairments;
mod xtp_options;
mod xtp_traced_setup;
