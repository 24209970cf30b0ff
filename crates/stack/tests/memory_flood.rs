//! Memory that comes back after an attack (issue 23, item 5): the SYN
//! flood of the issue — 6000 SYNs from random on-link sources, 4000 from
//! one resolvable IPv6 source and 4000 from one resolvable IPv4 source,
//! in 3 s — against host-b of the default network on the simulator. The
//! process's resident set size (`VmRSS` of `/proc/self/status`) is read
//! idle, at the flood's peak and 10 s (virtual) after it, and must come
//! back to within [`RETURN_BOUND_KIB`] of idle; host-b serves before,
//! during and after.
//!
//! One test in its own binary: the resident set size is the process's,
//! and another test running beside it would move it.

mod network_support;

use std::time::Duration;

use network_support::flood::{syn_flood_mix, FloodLab, Rng};

/// How far above idle the resident set may stay 10 s after the flood.
const RETURN_BOUND_KIB: u64 = 8 * 1024;
/// The flood's 14 000 SYNs in 3 s.
const PER_MS: usize = 5;

#[test]
fn resident_memory_returns_close_to_idle_after_the_syn_flood_mix() {
    let mut lab = FloodLab::start();
    // Idle: after some ordinary use, so what every host touches anyway
    // (buffers, a connection's rings) is in the baseline.
    lab.serve(64 * 1024);
    let (idle, _) = lab.quiet(Duration::from_secs(15));
    // The frames are handed over and freed as they go: the test's own
    // memory is not part of what is measured after the flood.
    let mut first = syn_flood_mix(&lab.target, &mut Rng(0x5eed_f100d));
    let second = first.split_off(first.len() / 2);
    let mut peak = lab.flood(first, PER_MS);
    lab.serve(16 * 1024);
    peak = peak.max(lab.flood(second, PER_MS));
    let (after, tail_peak) = lab.quiet(Duration::from_secs(10));
    peak = peak.max(tail_peak);
    let b = network_support::host(&lab.sim, "host-b");
    let half_open: Vec<usize> = lab
        .listeners
        .iter()
        .map(|&l| b.tcp_listener(l).unwrap().half_open_len())
        .collect();
    eprintln!(
        "VmRSS idle {idle} KiB, peak of the flood {peak} KiB, 10 s after {after} KiB \
         (host-b: {} memory releases, pool {:?}, {:?} buffers (allocated, in use), half-open {half_open:?}, drops {:?})",
        b.memory_releases(),
        b.pool().stats(),
        (b.pool().allocated(), b.pool().in_use()),
        b.drops()
    );
    let releases = b.memory_releases();
    lab.serve(64 * 1024);
    assert!(idle > 0, "no VmRSS in /proc/self/status");
    assert!(releases >= 1, "host-b never gave memory back");
    assert!(
        after <= idle + RETURN_BOUND_KIB,
        "resident memory stayed at {after} KiB after the flood (idle {idle} KiB, peak {peak} KiB)"
    );
}
