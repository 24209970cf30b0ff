//! The issue's acceptance transfers: 64 MiB of XTP over IPv6 between the
//! reference hosts, byte-exact, on the unlimited topology and on
//! `impaired.toml` with selective and with go-back-n retransmission.
//! Minutes in the debug profile, seconds in release:
//!
//! ```text
//! cargo test --release -p stackscope-stack --test xtp_long -- --ignored --nocapture
//! ```

mod xtp_support;

use std::time::Duration;

use stack::socket::xtp::{ErrorControl, XtpConfig};
use stack::topology::Topology;
use xtp_support::*;

const BYTES: usize = 64 << 20;

fn sixty_four_mib(topology: &Topology, config: XtpConfig, limit: Duration) {
    let mut sim = network_of(topology, None);
    let (a, b) = associate(&mut sim, true, config);
    let data = pattern(BYTES, 64);
    let start = sim.now();
    let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], limit);
    assert_same(&at_b, &data, "64 MiB over IPv6");
    let took = sim.now().saturating_duration_since(start);
    let counters = sim
        .host("host-a")
        .unwrap()
        .xtp_association(a)
        .unwrap()
        .counters();
    // A wire without rate or delay takes no virtual time: no rate then.
    let rate = if took.is_zero() {
        "no rate: the wire takes no virtual time".to_string()
    } else {
        format!(
            "{:.1} Mbit/s",
            BYTES as f64 * 8.0 / took.as_secs_f64() / 1e6
        )
    };
    eprintln!(
        "{:?}: 64 MiB in {took:?} of virtual time ({rate}); {counters:?}",
        config.error_control
    );
}

fn unlimited() -> Topology {
    Topology::from_toml_str(include_str!("../../../topologies/unlimited.toml")).unwrap()
}

#[test]
#[ignore = "64 MiB: run with --release"]
fn sixty_four_mib_on_the_unlimited_topology() {
    sixty_four_mib(&unlimited(), XtpConfig::default(), Duration::from_secs(60));
}

#[test]
#[ignore = "64 MiB: run with --release"]
fn sixty_four_mib_impaired_selective() {
    sixty_four_mib(
        &impaired_topology(42),
        XtpConfig::default(),
        Duration::from_secs(600),
    );
}

#[test]
#[ignore = "64 MiB: run with --release"]
fn sixty_four_mib_impaired_go_back_n() {
    let config = XtpConfig {
        error_control: ErrorControl::GoBackN,
        ..XtpConfig::default()
    };
    sixty_four_mib(&impaired_topology(42), config, Duration::from_secs(1200));
}
