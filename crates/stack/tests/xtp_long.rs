//! The issue's acceptance transfers: 64 MiB of XTP over IPv6 between the
//! reference hosts, byte-exact, on the unlimited topology and on
//! `impaired.toml` with selective and with go-back-n retransmission, and
//! a capture of the unlimited transfer decoded by tshark. Tens of seconds
//! (the stack is optimised in the dev profile too):
//!
//! ```text
//! cargo test -p stackscope-stack --test xtp_long -- --ignored --nocapture
//! ```

mod xtp_support;

use std::time::Duration;

use stack::socket::xtp::{ErrorControl, XtpConfig};
use stack::topology::Topology;
use xtp_support::*;

const BYTES: usize = 64 << 20;

fn sixty_four_mib(topology: &Topology, config: XtpConfig, limit: Duration) {
    sixty_four_mib_captured(topology, config, limit, None);
}

/// The transfer, with every interface's pcapng written into `pcap` when
/// given (flushed when the simulator is dropped, at the end).
fn sixty_four_mib_captured(
    topology: &Topology,
    config: XtpConfig,
    limit: Duration,
    pcap: Option<&std::path::Path>,
) {
    let mut sim = network_of(topology, pcap);
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
#[ignore = "64 MiB: run with --ignored"]
fn sixty_four_mib_on_the_unlimited_topology() {
    sixty_four_mib(&unlimited(), XtpConfig::default(), Duration::from_secs(60));
}

#[test]
#[ignore = "64 MiB: run with --ignored"]
fn sixty_four_mib_impaired_selective() {
    sixty_four_mib(
        &impaired_topology(42),
        XtpConfig::default(),
        Duration::from_secs(600),
    );
}

#[test]
#[ignore = "64 MiB: run with --ignored"]
fn sixty_four_mib_impaired_go_back_n() {
    let config = XtpConfig {
        error_control: ErrorControl::GoBackN,
        ..XtpConfig::default()
    };
    sixty_four_mib(&impaired_topology(42), config, Duration::from_secs(1200));
}

#[test]
#[ignore = "64 MiB: run with --ignored"]
fn sixty_four_mib_capture_decodes_in_tshark() {
    use std::process::Command;
    let Some(dir) = tshark_capture_dir("xtp-long") else {
        return;
    };
    sixty_four_mib_captured(
        &unlimited(),
        XtpConfig::default(),
        Duration::from_secs(60),
        Some(&dir),
    );
    let files = captures(&dir);
    assert!(!files.is_empty(), "no capture written");
    let count = |file: &std::path::Path, filter: &str| {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(file)
            .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .expect("run tshark");
        assert!(out.status.success(), "tshark failed on {}", file.display());
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let mut xtp = 0;
    for file in &files {
        let all = count(file, "frame");
        let decoded = count(file, "xtp && xtp.checksum.status == \"Good\"");
        let suspects = count(
            file,
            "_ws.malformed || xtp.checksum.status == \"Bad\" || (ipv6 && !xtp && !icmpv6)",
        );
        eprintln!(
            "{}: {all} frames, {decoded} XTP with a good checksum, {suspects} suspect",
            file.display()
        );
        assert_eq!(
            suspects,
            0,
            "{}: malformed, bad or undecoded frames",
            file.display()
        );
        xtp += decoded;
    }
    // 64 MiB in packets of at most 1440 bytes, seen on every interface on
    // the way.
    assert!(xtp >= (BYTES / 1440) * 2, "only {xtp} XTP packets decoded");
    let _ = std::fs::remove_dir_all(&dir);
}
