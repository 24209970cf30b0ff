//! XTP under the TCP impairment matrix's profiles (`tcp_impairments.rs`):
//! two hosts on one wire that loses, reorders, duplicates and corrupts
//! frames, delayed and rate-limited, one profile per seed; each run moves
//! a stream each way at once, byte-exact within a virtual-time limit, with
//! the family, the error-control mode and FASTNAK varying by seed.
//!
//! `cargo test` runs 9 seeds of 1 MiB each way (every profile once); the
//! 100-seed matrix of 4 MiB each way is a command:
//!
//! ```text
//! cargo test -p stackscope-stack --test xtp_matrix -- --ignored
//! ```

mod xtp_support;

use std::time::Duration;

use stack::socket::xtp::{ErrorControl, XtpConfig};
use stack::topology::Topology;
use xtp_support::*;

/// One wire setting (the TCP matrix's, with its time limits).
#[derive(Debug, Clone, Copy)]
struct Profile {
    name: &'static str,
    rate: &'static str,
    delay: &'static str,
    loss: f64,
    duplicate: f64,
    reorder: f64,
    reorder_delay: &'static str,
    corrupt: f64,
    limit: Duration,
}

const CLEAN: Profile = Profile {
    name: "clean",
    rate: "1Gbit",
    delay: "1ms",
    loss: 0.0,
    duplicate: 0.0,
    reorder: 0.0,
    reorder_delay: "1ms",
    corrupt: 0.0,
    limit: Duration::from_secs(5),
};

const PROFILES: [Profile; 9] = [
    CLEAN,
    Profile {
        name: "loss 1%",
        loss: 0.01,
        limit: Duration::from_secs(30),
        ..CLEAN
    },
    Profile {
        name: "loss 5%",
        loss: 0.05,
        limit: Duration::from_secs(300),
        ..CLEAN
    },
    Profile {
        name: "loss 10%",
        loss: 0.10,
        limit: Duration::from_secs(1200),
        ..CLEAN
    },
    Profile {
        name: "reorder",
        reorder: 0.05,
        reorder_delay: "500us",
        limit: Duration::from_secs(10),
        ..CLEAN
    },
    Profile {
        name: "duplicate",
        duplicate: 0.05,
        limit: Duration::from_secs(5),
        ..CLEAN
    },
    Profile {
        name: "corrupt",
        corrupt: 0.02,
        limit: Duration::from_secs(120),
        ..CLEAN
    },
    Profile {
        name: "delay+rate",
        rate: "20Mbit",
        delay: "20ms",
        limit: Duration::from_secs(10),
        ..CLEAN
    },
    Profile {
        name: "mixed",
        rate: "100Mbit",
        delay: "5ms",
        loss: 0.02,
        duplicate: 0.02,
        reorder: 0.02,
        reorder_delay: "2ms",
        corrupt: 0.01,
        limit: Duration::from_secs(300),
    },
];

/// host-a and host-b on one wire with static addresses of both families.
fn two_hosts(seed: u64, p: &Profile) -> Topology {
    let text = format!(
        r#"
seed = {seed}

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
ipv6 = ["2001:db8::a/64"]

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.11/24"
ipv6 = ["2001:db8::b/64"]

[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
seed = {seed}
rate = "{}"
delay = "{}"
loss = {}
duplicate = {}
reorder = {}
reorder_delay = "{}"
corrupt = {}
"#,
        p.rate, p.delay, p.loss, p.duplicate, p.reorder, p.reorder_delay, p.corrupt
    );
    Topology::from_toml_str(&text).unwrap_or_else(|e| panic!("topology: {e}\n{text}"))
}

/// The profile cycles with period 9 and the variant bits with period 8,
/// so 72 consecutive seeds run every profile with every combination of
/// family, error-control mode and FASTNAK.
fn run_seed(seed: u64, bytes: usize) {
    let profile = PROFILES[(seed % 9) as usize];
    let v6 = seed.is_multiple_of(2);
    let config = XtpConfig {
        error_control: if seed % 4 < 2 {
            ErrorControl::Selective
        } else {
            ErrorControl::GoBackN
        },
        fastnak: seed % 8 < 4,
        ..XtpConfig::default()
    };
    let what = format!(
        "seed {seed} ({}, {}, {:?}, FASTNAK {})",
        profile.name,
        if v6 { "IPv6" } else { "IPv4" },
        config.error_control,
        config.fastnak
    );
    let mut sim = network_of(&two_hosts(seed, &profile), None);
    let (a, b) = associate(&mut sim, v6, config);
    let up = pattern(bytes, seed as u8);
    let down = pattern(bytes, !(seed as u8));
    let (at_b, at_a) = exchange(&mut sim, (a, b), &up, &down, profile.limit);
    assert_same(&at_b, &up, &format!("{what}: host-a to host-b"));
    assert_same(&at_a, &down, &format!("{what}: host-b to host-a"));
    let counters = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .counters();
    if profile.name == "clean" || profile.name == "delay+rate" {
        assert_eq!(counters.retransmitted_packets, 0, "{what}: {counters:?}");
    }
    if profile.loss > 0.0 {
        assert!(counters.retransmitted_packets > 0, "{what}: {counters:?}");
    }
}

#[test]
fn every_profile_once() {
    for seed in 0..9 {
        run_seed(seed, 1 << 20);
    }
}

#[test]
#[ignore = "100 seeds of 4 MiB each way: run with --ignored"]
fn the_full_matrix() {
    for seed in 0..100 {
        run_seed(seed, 4 << 20);
    }
}
