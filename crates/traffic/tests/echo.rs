//! Delay mode end to end: every exchange is answered and timed, on the
//! kernel's loopback and on the reference stack.

use traffic::echo::EchoReport;
use traffic::kernel::KernelPath;
use traffic::run::{self, Target};
use traffic::spec::{EchoSpec, Family, Protocol};
use traffic::TrafficError;

/// Each test its own port: tests run in parallel.
fn spec(protocol: Protocol, family: Family, len: usize, count: u64, port: u16) -> EchoSpec {
    let mut spec = EchoSpec::new(protocol, family, len, count);
    spec.port = port;
    spec
}

fn assert_all_answered(report: &EchoReport) {
    assert_eq!(report.rtt_ns.len() as u64, report.spec.count, "{report:?}");
    assert_eq!((report.lost, report.corrupted), (0, 0));
    assert!(report.rtt_ns.iter().all(|&rtt| rtt > 0));
}

#[test]
fn kernel_tcp_echo_times_every_exchange_at_every_size() {
    for (i, len) in [1usize, 1024, 16384].into_iter().enumerate() {
        let report = run::echo(
            &spec(Protocol::Tcp, Family::V6, len, 200, 15_100 + i as u16),
            &Target::Kernel(KernelPath::Loopback),
        )
        .expect("echo");
        assert_all_answered(&report);
        assert_eq!(report.target.path, "loopback");
        assert!(report.target.sockbuf_granted.send.is_some());
        assert!(report.target.congestion_control.is_some());
    }
}

#[test]
fn kernel_udp_echo_over_ipv4_and_ipv6() {
    for (port, family) in [(15_110, Family::V4), (15_111, Family::V6)] {
        let report = run::echo(
            &spec(Protocol::Udp, family, 1024, 300, port),
            &Target::Kernel(KernelPath::Loopback),
        )
        .expect("echo");
        assert_all_answered(&report);
    }
}

#[test]
fn reference_udp_and_raw_echo() {
    for protocol in [Protocol::Udp, Protocol::Raw] {
        let report = run::echo(
            &spec(protocol, Family::V6, 512, 100, 7),
            &Target::Reference(None),
        )
        .expect("echo");
        assert_all_answered(&report);
        // Round trips cross simulated wires with 100 us of delay each way
        // (UDP: two wires, raw: one).
        let min = *report.rtt_ns.iter().min().unwrap();
        assert!(min >= 200_000, "{protocol}: {min} ns");
    }
}

#[test]
fn reference_tcp_echo_over_both_families() {
    for family in [Family::V6, Family::V4] {
        // 3000 bytes: each request takes three segments.
        let report = run::echo(
            &spec(Protocol::Tcp, family, 3000, 100, 7),
            &Target::Reference(None),
        )
        .expect("echo");
        assert_all_answered(&report);
        assert_eq!(report.corrupted, 0);
        // Two wires of 100 us each way.
        let min = *report.rtt_ns.iter().min().unwrap();
        assert!(min >= 400_000, "{family}: {min} ns");
        assert_eq!(report.target.congestion_control.as_deref(), Some("cubic"));
    }
}

#[test]
fn impossible_echoes_are_refused_with_a_reason() {
    let refused = |r: Result<EchoReport, TrafficError>| r.expect_err("refused").to_string();
    let tiny_udp = refused(run::echo(
        &spec(Protocol::Udp, Family::V6, 8, 10, 15_120),
        &Target::Kernel(KernelPath::Loopback),
    ));
    assert!(tiny_udp.contains("16-byte"), "{tiny_udp}");
    let raw_on_kernel = refused(run::echo(
        &spec(Protocol::Raw, Family::V6, 64, 10, 15_121),
        &Target::Kernel(KernelPath::Loopback),
    ));
    assert!(raw_on_kernel.contains("--stack ref"), "{raw_on_kernel}");
}

#[test]
fn kernel_echo_circuits_run_at_once_each_on_its_port() {
    // Two TCP circuits, then TCP with UDP: every series answered in full
    // and checked, each on the base port + its index.
    let cases = [
        (vec![Protocol::Tcp, Protocol::Tcp], 15_130),
        (vec![Protocol::Tcp, Protocol::Udp], 15_135),
    ];
    for (protocols, port) in cases {
        let flows: Vec<EchoSpec> = protocols
            .iter()
            .map(|&p| spec(p, Family::V6, 1024, 300, port))
            .collect();
        let reports =
            run::echoes(&flows, &Target::Kernel(KernelPath::Loopback)).expect("echo circuits");
        assert_eq!(reports.len(), 2);
        for (i, report) in reports.iter().enumerate() {
            assert_all_answered(report);
            assert_eq!(report.spec.protocol, protocols[i]);
            assert_eq!(report.spec.port, port + i as u16);
            assert_eq!(report.spec.circuit, i as u8);
        }
    }
}

fn topology(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../topologies")
        .join(name)
}

#[test]
fn reference_tcp_request_response_takes_no_runner_nap_inside_an_exchange() {
    // 1-byte TCP request/response on the threaded runner: no host thread
    // may block inside a measured exchange (a wake-up in the round trip),
    // on two hosts alone (as many threads as this machine's CPUs) or on
    // the default network, host-a — router — host-b, with 100 µs wires
    // (three threads, more than two CPUs). A count, not a time.
    let cases = [(Some(topology("unlimited.toml")), 2000), (None, 400)];
    for (topology, count) in cases {
        let report = run::echo(
            &spec(Protocol::Tcp, Family::V6, 1, count, 7),
            &Target::Reference(topology.clone()),
        )
        .expect("echo");
        assert_all_answered(&report);
        assert_eq!(report.runner_naps, Some(0), "{topology:?}");
    }
}

#[test]
fn the_kernel_has_no_runner_naps_to_report() {
    let report = run::echo(
        &spec(Protocol::Tcp, Family::V6, 1, 50, 15_140),
        &Target::Kernel(KernelPath::Loopback),
    )
    .expect("echo");
    assert_eq!(report.runner_naps, None);
}
