//! A soak (ignored by default, like `tcp_soak`): host-b of the default
//! network is flooded for minutes of wall-clock time, round after round,
//! with the SYN flood mix of issue 23 (item 5) and the other attacks of
//! [`other_attacks`] (fragments never completed, UDP to closed ports,
//! SYN+FIN, SYNs with MSS 1, broadcast sources and destinations, random
//! bytes), and must serve a transfer in both families after every round.
//! Ten seconds (virtual) after the last round, the process's resident set
//! size must be back within [`RETURN_BOUND_KIB`] of its idle value.
//!
//! ```text
//! cargo test -p stackscope-stack --test memory_soak -- --ignored --nocapture
//! STACKSCOPE_SOAK_SECS=600 cargo test ...   # longer (default 180 s)
//! ```

mod network_support;

use std::time::{Duration, Instant};

use network_support::flood::{other_attacks, syn_flood_mix, FloodLab, Rng};

const RETURN_BOUND_KIB: u64 = 12 * 1024;
const PER_MS: usize = 8;

#[test]
#[ignore = "a soak of minutes; run with --ignored"]
fn resident_memory_returns_after_minutes_of_mixed_attacks() {
    let soak = std::env::var("STACKSCOPE_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(180), Duration::from_secs);
    let mut lab = FloodLab::start();
    lab.serve(64 * 1024);
    let (idle, _) = lab.quiet(Duration::from_secs(15));
    let started = Instant::now();
    let mut rng = Rng(0x50a4_50a4_50a4);
    let mut peak = idle;
    let mut rounds = 0;
    while started.elapsed() < soak {
        let mut frames = syn_flood_mix(&lab.target, &mut rng);
        let others = other_attacks(&lab.target, &mut rng);
        // Interleave: one attack frame after every second SYN or so.
        let mut mixed = Vec::with_capacity(frames.len() + others.len());
        let mut others = others.into_iter();
        for (i, frame) in frames.drain(..).enumerate() {
            mixed.push(frame);
            if i % 3 != 2 {
                mixed.extend(others.next());
            }
        }
        mixed.extend(others);
        peak = peak.max(lab.flood(mixed, PER_MS));
        lab.serve(32 * 1024);
        rounds += 1;
        eprintln!(
            "round {rounds}: {:.0} s, VmRSS peak so far {peak} KiB",
            started.elapsed().as_secs_f64()
        );
    }
    let (after, _) = lab.quiet(Duration::from_secs(10));
    eprintln!(
        "{rounds} rounds: VmRSS idle {idle} KiB, peak {peak} KiB, 10 s after {after} KiB \
         (host-b drops: {:?})",
        network_support::host(&lab.sim, "host-b").drops()
    );
    lab.serve(64 * 1024);
    assert!(rounds > 0);
    assert!(
        after <= idle + RETURN_BOUND_KIB,
        "resident memory stayed at {after} KiB (idle {idle} KiB, peak {peak} KiB)"
    );
}
