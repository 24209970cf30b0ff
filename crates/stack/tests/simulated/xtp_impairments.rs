//! XTP on `topologies/impaired.toml` (host-a — router — host-b, the far
//! wire losing, duplicating, reordering and corrupting frames, 10 Mbit/s,
//! a 1280-byte MTU at host-b): transfers both ways at once, every byte
//! checked, with selective retransmission and with go-back-n, over IPv6
//! and IPv4; the retransmissions are what the injected loss explains.

use crate::xtp_support;

use std::time::Duration;

use stack::socket::xtp::{ErrorControl, XtpConfig, XtpCounters};
use xtp_support::*;

/// Bytes host-a sends; host-b sends a quarter of it back.
const STREAM: usize = 4 << 20;

fn run(seed: u64, v6: bool, config: XtpConfig) -> (XtpCounters, XtpCounters) {
    let mut sim = network_of(&impaired_topology(seed), None);
    let (a, b) = associate(&mut sim, v6, config);
    let up = pattern(STREAM, seed as u8);
    let down = pattern(STREAM / 4, !seed as u8);
    let (at_b, at_a) = exchange(&mut sim, (a, b), &up, &down, Duration::from_secs(120));
    let what = format!(
        "seed {seed}, {}, {:?}",
        if v6 { "IPv6" } else { "IPv4" },
        config.error_control
    );
    assert_same(&at_b, &up, &format!("{what}: host-a to host-b"));
    assert_same(&at_a, &down, &format!("{what}: host-b to host-a"));
    let ca = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    let cb = sim.host("host-b").unwrap().xtp_association(b).unwrap();
    // host-b's link MTU (1280) bounds every packet both ways.
    let ip = if v6 { 40 } else { 20 };
    assert_eq!(ca.maxdata(), 1280 - ip - 32, "{what}");
    let (ca, cb) = (ca.counters(), cb.counters());
    for name in ["host-a", "host-b"] {
        let h = sim.host(name).unwrap();
        // Corruption is caught by the checksum (or by IP's, for IPv4
        // headers), never delivered: the byte checks above prove it.
        eprintln!(
            "{what}: {name} dropped {} bad XTP checksums",
            drops(h, "xtp_bad_checksum")
        );
    }
    eprintln!("{what}: host-a {ca:?}");
    eprintln!("{what}: host-b {cb:?}");
    // 1 % loss of ~3500 data packets: some must have been resent, and
    // nothing is resent without a reason.
    assert!(ca.retransmitted_packets > 0, "{what}");
    assert!(ca.naks > 0, "{what}");
    (ca, cb)
}

#[test]
fn selective_retransmission_over_ipv6() {
    let (a, _) = run(1, true, XtpConfig::default());
    assert_eq!(a.go_backs, 0);
    // Selective: about the 1.1 % lost or corrupted, not whole windows.
    assert!(
        a.retransmitted_packets * 100 < a.data_packets_sent * 4,
        "{a:?}"
    );
    assert!(a.ecntl_received > 0, "gaps reported with spans");
}

#[test]
fn selective_retransmission_over_ipv4() {
    let (a, _) = run(2, false, XtpConfig::default());
    assert!(
        a.retransmitted_packets * 100 < a.data_packets_sent * 4,
        "{a:?}"
    );
}

#[test]
fn go_back_n_over_ipv6() {
    let config = XtpConfig {
        error_control: ErrorControl::GoBackN,
        ..XtpConfig::default()
    };
    let (a, b) = run(3, true, config);
    assert!(a.go_backs > 0);
    assert_eq!(b.ecntl_sent, 0, "a go-back-n receiver keeps no spans");
}

#[test]
fn go_back_n_over_ipv4() {
    let config = XtpConfig {
        error_control: ErrorControl::GoBackN,
        ..XtpConfig::default()
    };
    run(4, false, config);
}

#[test]
fn fastnak_reports_gaps_at_once() {
    let config = XtpConfig {
        fastnak: true,
        ..XtpConfig::default()
    };
    let (_, b) = run(5, true, config);
    assert!(b.fastnaks_sent > 0);
}
