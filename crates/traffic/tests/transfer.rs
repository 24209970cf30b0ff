//! ttcp transfers end to end: byte-exact TCP, UDP with every datagram
//! accounted for, on the kernel's loopback and on the reference stack; and
//! the refusals a user gets instead of a hang.

use std::net::TcpListener;

use traffic::kernel::KernelPath;
use traffic::report::TransferReport;
use traffic::run::{self, Target};
use traffic::spec::{Family, Protocol, TransferSpec};
use traffic::TrafficError;

fn spec(protocol: Protocol, family: Family, len: usize, count: u64, port: u16) -> TransferSpec {
    let mut spec = TransferSpec::new(protocol, family);
    spec.len = len;
    spec.count = count;
    spec.port = port;
    spec
}

fn json(report: &TransferReport) -> serde_json::Value {
    serde_json::to_value(report).expect("serialize")
}

#[test]
fn kernel_tcp_is_byte_exact_and_reported_like_iperf3() {
    for (port, family) in [(15_200, Family::V4), (15_201, Family::V6)] {
        let mut s = spec(Protocol::Tcp, family, 100_000, 50, port);
        s.sockbuf = Some(256 * 1024);
        let report = run::pair(&s, &Target::Kernel(KernelPath::Loopback), false).expect("transfer");
        assert!(report.is_clean());
        let v = json(&report);
        let end = &v["end"];
        assert_eq!(end["sum_sent"]["bytes"], 5_000_000);
        // TCP_INFO's count (loopback loses nothing, but the field is there).
        assert!(
            end["sum_sent"]["retransmits"].is_u64(),
            "{}",
            end["sum_sent"]
        );
        assert_eq!(end["sum_received"]["bytes"], 5_000_000);
        assert_eq!(end["sum_received"]["corrupted_bytes"], 0);
        assert!(end["sum_received"]["bits_per_second"].as_f64().unwrap() > 0.0);
        assert!(
            end["cpu_utilization_percent"]["host_total"]
                .as_f64()
                .unwrap()
                >= 0.0
        );
        // The kernel has no runner: no waiting mode beside its CPU.
        assert!(end["cpu_utilization_percent"].get("runner_wait").is_none());
        assert_eq!(v["start"]["test_start"]["blksize"], 100_000);
        assert_eq!(v["start"]["target"]["stack"], "kernel");
        // Linux doubles a requested buffer size and reports the double.
        let granted = v["start"]["target"]["sockbuf_granted"]["send"]
            .as_u64()
            .unwrap();
        assert!(granted >= 256 * 1024, "{granted}");
        assert!(v["start"]["target"]["congestion_control"].is_string());
    }
}

#[test]
fn kernel_udp_accounts_for_every_datagram() {
    let mut s = spec(Protocol::Udp, Family::V6, 1472, 5000, 15_210);
    s.interval = Some(std::time::Duration::from_millis(20));
    let report = run::pair(&s, &Target::Kernel(KernelPath::Loopback), false).expect("transfer");
    let received = report.end.sum_received.as_ref().unwrap();
    let d = received.datagrams.as_ref().unwrap();
    assert_eq!(d.sent_by_sender, Some(5000));
    assert_eq!(d.packets + d.lost_packets, 5000);
    assert_eq!((d.corrupted, d.duplicated), (0, 0));
    assert_eq!(received.bytes, d.packets * 1472);
}

#[test]
fn paced_udp_offers_the_requested_load() {
    let mut s = spec(Protocol::Udp, Family::V4, 1000, 2000, 15_220);
    s.rate_bps = Some(80_000_000); // 10 000 datagrams/s: 0.2 s
    let report = run::pair(&s, &Target::Kernel(KernelPath::Loopback), false).expect("transfer");
    let sent = report.end.sum_sent.as_ref().unwrap();
    let ratio = sent.bits_per_second / 80e6;
    assert!(
        (0.9..1.1).contains(&ratio),
        "sent at {} bit/s",
        sent.bits_per_second
    );
}

#[test]
fn reference_stack_udp_and_raw_frames_account_for_every_datagram() {
    for protocol in [Protocol::Udp, Protocol::Raw] {
        let s = spec(protocol, Family::V6, 1400, 3000, 5001);
        let report = run::pair(&s, &Target::Reference(None), false).expect("transfer");
        let d = report
            .end
            .sum_received
            .as_ref()
            .unwrap()
            .datagrams
            .clone()
            .unwrap();
        assert_eq!(d.packets + d.lost_packets, 3000, "{protocol}: {d:?}");
        assert_eq!((d.corrupted, d.duplicated), (0, 0));
        assert!(d.packets > 0);
        assert_eq!(json(&report)["start"]["target"]["stack"], "ref");
        // The reference stack's threads poll while idle: its CPU figures
        // say so.
        assert_eq!(
            json(&report)["end"]["cpu_utilization_percent"]["runner_wait"],
            "spin-then-block"
        );
    }
}

#[test]
fn a_paced_reference_sender_runs_at_its_pacers_times() {
    // 200 datagrams of 1000 B at 8 Mbit/s: one every ms, 0.2 s in all. The
    // sender says the pacer's next time as its next event (the receiver
    // sends nothing back to wake it); the transfer must be paced, not one
    // burst, and finish with every datagram accounted for.
    let mut s = spec(Protocol::Udp, Family::V6, 1000, 200, 5002);
    s.rate_bps = Some(8_000_000);
    let report = run::pair(&s, &Target::Reference(None), false).expect("transfer");
    let d = report
        .end
        .sum_received
        .as_ref()
        .unwrap()
        .datagrams
        .clone()
        .unwrap();
    assert_eq!(d.packets + d.lost_packets, 200, "{d:?}");
    assert!(d.packets > 0);
    let sent = report.end.sum_sent.as_ref().unwrap();
    // Paced, not sent in a burst: 199 gaps of 1 ms at least.
    assert!(sent.seconds >= 0.19, "{sent:?}");
}

#[test]
fn reference_stack_tcp_is_byte_exact_over_both_families() {
    for family in [Family::V6, Family::V4] {
        // Odd-sized writes, so segments and writes never line up.
        let report = run::pair(
            &spec(Protocol::Tcp, family, 10_007, 300, 5001),
            &Target::Reference(None),
            false,
        )
        .unwrap();
        let end = &json(&report)["end"];
        let received = &end["sum_received"];
        assert_eq!(received["bytes"], 10_007 * 300, "{family}: {received}");
        for check in ["corrupted_bytes", "missing_bytes", "duplicated_bytes"] {
            assert_eq!(received[check], 0, "{family}: {check}");
        }
        assert_eq!(end["sum_sent"]["bytes"], 10_007 * 300);
        let target = &json(&report)["start"]["target"];
        assert_eq!(target["stack"], "ref");
        assert_eq!(target["congestion_control"], "cubic");
        assert_eq!(target["sockbuf_granted"]["recv"], 4 << 20);
    }
}

#[test]
fn refusals_say_what_is_wrong() {
    let refused = |r: Result<TransferReport, TrafficError>| r.expect_err("refused").to_string();
    let huge = refused(run::pair(
        &spec(Protocol::Udp, Family::V4, 70_000, 1, 15_230),
        &Target::Kernel(KernelPath::Loopback),
        false,
    ));
    assert!(huge.contains("-l 70000 is impossible"), "{huge}");
    let missing_topology = refused(run::pair(
        &spec(Protocol::Raw, Family::V6, 1500, 1, 5001),
        &Target::Reference(Some("/nonexistent/topology.toml".into())),
        false,
    ));
    assert!(
        missing_topology.contains("/nonexistent/topology.toml"),
        "{missing_topology}"
    );
    // A port someone else holds.
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let in_use = refused(run::pair(
        &spec(Protocol::Tcp, Family::V4, 1000, 1, port),
        &Target::Kernel(KernelPath::Loopback),
        false,
    ));
    assert!(
        in_use.contains(&format!("port {port} is in use")),
        "{in_use}"
    );
}

#[test]
fn a_sender_with_no_receiver_fails_fast_instead_of_hanging() {
    let mut s = spec(Protocol::Tcp, Family::V4, 1000, 1, 15_240);
    s.timeout = std::time::Duration::from_secs(2);
    let error = run::one_kernel_end(
        &s,
        run::OneEnd::Transmit("127.0.0.1".parse().unwrap()),
        s.family.unspecified(),
        false,
    )
    .expect_err("nobody listens")
    .to_string();
    assert!(
        error.contains("nothing listens on 127.0.0.1:15240"),
        "{error}"
    );
    let error = run::one_kernel_end(
        &s,
        run::OneEnd::Receive,
        "127.0.0.1".parse().unwrap(),
        false,
    )
    .expect_err("nobody sends")
    .to_string();
    assert!(error.contains("timed out after 2.0 s"), "{error}");
}

#[test]
fn concurrent_circuits_and_mixes_are_reported_each() {
    let tcp = spec(Protocol::Tcp, Family::V6, 65_536, 100, 15_250);
    let udp = spec(Protocol::Udp, Family::V6, 1200, 2000, 15_250);
    let reports = run::transfer(
        &[tcp.clone(), tcp.clone(), udp],
        &Target::Kernel(KernelPath::Loopback),
        false,
    )
    .expect("kernel circuits");
    assert_eq!(reports.len(), 3);
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(report.start.test_start.port, 15_250 + i as u16);
        assert!(report.is_clean(), "circuit {i}");
    }
    assert_eq!(
        reports[0].end.sum_received.as_ref().unwrap().bytes,
        6_553_600
    );

    // Raw circuits share an Ethertype: each receiver sees the other's
    // frames and counts them foreign, never as damage.
    let raw = spec(Protocol::Raw, Family::V6, 1000, 1500, 5001);
    let reports = run::transfer(&[raw.clone(), raw], &Target::Reference(None), false)
        .expect("reference circuits");
    for report in &reports {
        let d = report
            .end
            .sum_received
            .as_ref()
            .unwrap()
            .datagrams
            .clone()
            .unwrap();
        assert_eq!(d.packets + d.lost_packets, 1500, "{d:?}");
        assert_eq!((d.corrupted, d.duplicated), (0, 0));
        assert!(d.foreign > 0, "{d:?}");
    }
}

#[test]
fn xtp_runs_on_the_reference_stack_and_is_refused_on_the_kernel() {
    for family in [Family::V6, Family::V4] {
        let s = spec(Protocol::Xtp, family, 10_007, 300, 5001);
        let report = run::pair(&s, &Target::Reference(None), false).expect("xtp transfer");
        assert!(report.is_clean(), "{family}");
        assert_eq!(
            report.end.sum_received.as_ref().unwrap().bytes,
            10_007 * 300
        );
        assert!(report.impossible().is_empty(), "{:?}", report.impossible());
    }
    let refused = run::pair(
        &spec(Protocol::Xtp, Family::V6, 1000, 1, 15_260),
        &Target::Kernel(KernelPath::Loopback),
        false,
    )
    .expect_err("the kernel has no XTP")
    .to_string();
    assert!(refused.contains("--stack ref"), "{refused}");
}
