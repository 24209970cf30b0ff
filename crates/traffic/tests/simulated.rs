//! The traffic programs on the simulator: the same programs as on the
//! threaded runner and the kernel, on a virtual clock with seeded
//! randomness — so a run over impaired wires is byte-checked and replays
//! exactly.

use std::path::PathBuf;
use std::time::Duration;

use traffic::report::TransferReport;
use traffic::run::{self, Target};
use traffic::spec::{EchoSpec, Family, Protocol, TransferSpec};

fn topology(name: &str) -> Option<PathBuf> {
    Some(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../topologies")
            .join(name),
    )
}

fn spec(protocol: Protocol, family: Family, len: usize, count: u64) -> TransferSpec {
    let mut spec = TransferSpec::new(protocol, family);
    spec.len = len;
    spec.count = count;
    spec.timeout = Duration::from_secs(5);
    spec
}

/// What a replay must reproduce: the measured figures, not the wall
/// clock's or the CPU's.
fn figures(report: &TransferReport) -> String {
    let received = report.end.sum_received.as_ref().expect("received");
    let sent = report.end.sum_sent.as_ref().expect("sent");
    format!(
        "sent {} in {:.9} s, received {} in {:.9} s, {:?} {:?}",
        sent.bytes,
        sent.seconds,
        received.bytes,
        received.seconds,
        received.datagrams,
        sent.retransmits
    )
}

#[test]
fn tcp_is_byte_exact_over_impaired_wires_and_replays_exactly() {
    for family in [Family::V6, Family::V4] {
        let target = Target::Simulated(topology("impaired.toml"));
        let s = spec(Protocol::Tcp, family, 8192, 512);
        let first = run::pair(&s, &target, false).expect("simulated tcp");
        assert!(first.is_clean(), "{family}: {first:?}");
        assert!(first.impossible().is_empty(), "{:?}", first.impossible());
        assert_eq!(first.end.sum_received.as_ref().unwrap().bytes, 8192 * 512);
        // The impairments cost retransmissions.
        assert!(first.end.sum_sent.as_ref().unwrap().retransmits.unwrap() > 0);
        assert!(first.start.target.path.contains("simulator"));
        let second = run::pair(&s, &target, false).expect("replay");
        assert_eq!(figures(&first), figures(&second), "{family}");
    }
}

#[test]
fn datagrams_and_raw_frames_run_and_replay() {
    for protocol in [Protocol::Udp, Protocol::Raw] {
        let target = Target::Simulated(None);
        let mut s = spec(protocol, Family::V6, 1000, 2000);
        s.rate_bps = Some(50_000_000);
        let first = run::pair(&s, &target, false).expect("simulated datagrams");
        let received = first.end.sum_received.as_ref().unwrap();
        let datagrams = received.datagrams.as_ref().unwrap();
        assert_eq!(datagrams.corrupted, 0, "{protocol}");
        assert_eq!(
            datagrams.packets + datagrams.lost_packets,
            2000,
            "{protocol}"
        );
        // Paced at 50 Mbit/s: the sender's window is the rate's, in
        // virtual time (2000 x 8000 bits = 0.32 s), give or take one
        // datagram.
        let seconds = first.end.sum_sent.as_ref().unwrap().seconds;
        assert!(
            (0.3198..=0.3202).contains(&seconds),
            "{protocol}: {seconds} s"
        );
        let second = run::pair(&s, &target, false).expect("replay");
        assert_eq!(figures(&first), figures(&second), "{protocol}");
    }
}

#[test]
fn a_paced_flow_never_reads_faster_than_it_was_offered() {
    // 512 datagrams of 8 KB at 50 Mbit/s (Taler's offered-load run, in
    // small): n datagrams take n slots at the rate. A window that ends at
    // the last release spans n - 1 and read 50.1 Mbit/s.
    let target = Target::Simulated(None);
    let rate = 50_000_000.0;
    for protocol in [Protocol::Udp, Protocol::Raw] {
        let len = if protocol == Protocol::Raw {
            1500
        } else {
            8192
        };
        let mut s = spec(protocol, Family::V4, len, 512);
        s.rate_bps = Some(rate as u64);
        let report = run::pair(&s, &target, false).expect("paced run");
        let sent = report.end.sum_sent.as_ref().unwrap().bits_per_second;
        let received = report.end.sum_received.as_ref().unwrap().bits_per_second;
        assert!(
            sent <= rate && sent > rate * 0.999,
            "{protocol}: sent {sent} bit/s at {rate}"
        );
        assert!(
            received <= sent,
            "{protocol}: received {received} of {sent}"
        );
        assert!(report.impossible().is_empty(), "{:?}", report.impossible());
    }
}

#[test]
fn echoes_time_the_simulated_wires() {
    for protocol in [Protocol::Tcp, Protocol::Udp, Protocol::Raw] {
        let mut s = EchoSpec::new(protocol, Family::V6, 512, 50);
        s.timeout = Duration::from_secs(5);
        let report = run::echo(&s, &Target::Simulated(None)).expect("simulated echo");
        assert_eq!(report.rtt_ns.len(), 50, "{protocol}");
        assert_eq!((report.lost, report.corrupted), (0, 0), "{protocol}");
        // The default network's wires have 100 us of delay each way (UDP
        // and TCP cross two, raw frames one).
        let min = *report.rtt_ns.iter().min().unwrap();
        let floor = if protocol == Protocol::Raw {
            200_000
        } else {
            400_000
        };
        assert!(min >= floor, "{protocol}: {min} ns");
        let again = run::echo(&s, &Target::Simulated(None)).expect("replay");
        assert_eq!(report.rtt_ns, again.rtt_ns, "{protocol}");
    }
}

#[test]
fn xtp_is_byte_exact_over_impaired_wires_and_replays_exactly() {
    // The XTP study's protocol through the same stream programs as TCP:
    // an association with selective retransmission over lossy,
    // reordering wires, every byte checked.
    for family in [Family::V6, Family::V4] {
        let target = Target::Simulated(topology("impaired.toml"));
        let s = spec(Protocol::Xtp, family, 8192, 128);
        let first = run::pair(&s, &target, false).expect("simulated xtp");
        assert!(first.is_clean(), "{family}: {first:?}");
        assert_eq!(first.end.sum_received.as_ref().unwrap().bytes, 8192 * 128);
        assert!(first.end.sum_sent.as_ref().unwrap().retransmits.unwrap() > 0);
        let second = run::pair(&s, &target, false).expect("replay");
        assert_eq!(figures(&first), figures(&second), "{family}");
    }
    let mut echo = EchoSpec::new(Protocol::Xtp, Family::V6, 512, 50);
    echo.timeout = Duration::from_secs(5);
    let report = run::echo(&echo, &Target::Simulated(None)).expect("xtp echo");
    assert_eq!(report.rtt_ns.len(), 50);
    assert_eq!((report.lost, report.corrupted), (0, 0));
}

#[test]
fn xtp_options_reach_the_association() {
    use traffic::spec::XtpOptions;
    let target = Target::Simulated(topology("impaired.toml"));
    let transfer = |xtp: XtpOptions| {
        let mut s = spec(Protocol::Xtp, Family::V4, 8192, 64);
        s.timeout = Duration::from_secs(60);
        s.xtp = xtp;
        run::pair(&s, &target, false).expect("simulated xtp")
    };
    let run = |xtp: XtpOptions| {
        let report = transfer(xtp);
        assert!(report.is_clean(), "{xtp:?}");
        assert_eq!(report.end.sum_received.as_ref().unwrap().bytes, 8192 * 64);
        let sent = report.end.sum_sent.as_ref().unwrap();
        (sent.retransmits.unwrap(), sent.seconds)
    };
    let (selective, _) = run(XtpOptions::default());
    let (go_back_n, _) = run(XtpOptions {
        go_back_n: true,
        ..XtpOptions::default()
    });
    // Go-back-n resends everything behind a gap, selective only the gap.
    assert!(
        go_back_n > selective,
        "go-back-n {go_back_n}, selective {selective}"
    );
    // Rate control: 512 KiB at 4 Mbit/s take at least 1.05 s of virtual
    // time, whatever the 10 Mbit/s wire could do.
    let (_, paced_seconds) = run(XtpOptions {
        rate_bps: Some(4_000_000),
        ..XtpOptions::default()
    });
    assert!(paced_seconds >= 1.0, "paced: {paced_seconds} s");
    // NOCHECK leaves the data unchecked: the impaired wire's corruption
    // reaches the application, and the receiver's pattern check counts it.
    let unchecked = transfer(XtpOptions {
        nocheck: true,
        ..XtpOptions::default()
    });
    let stream = unchecked.end.sum_received.as_ref().unwrap().stream.unwrap();
    assert!(stream.corrupted_bytes > 0, "{stream:?}");
    assert!(!unchecked.is_clean());

    let mut tcp = spec(Protocol::Tcp, Family::V4, 1000, 1);
    tcp.xtp.nocheck = true;
    assert!(tcp
        .validate()
        .unwrap_err()
        .to_string()
        .contains("apply to XTP"));
    let mut burst_alone = spec(Protocol::Xtp, Family::V4, 1000, 1);
    burst_alone.xtp.burst_bytes = Some(4096);
    assert!(burst_alone
        .validate()
        .unwrap_err()
        .to_string()
        .contains("--xtp-rate"));
}

#[test]
fn xtp_character_driver_moves_every_byte_and_waits_for_delivery() {
    use traffic::spec::XtpOptions;
    let driver = XtpOptions {
        driver: true,
        ..XtpOptions::default()
    };
    // Short writes are copied, long ones lent; both byte-exact, also
    // through loss, and in reservation mode with a small alloc.
    for (len, count, wire, xtp) in [
        (100, 200, "impaired.toml", driver),
        (8192, 64, "impaired.toml", driver),
        (
            4096,
            64,
            "ethernet.toml",
            XtpOptions {
                reservation: true,
                alloc_bytes: Some(16 * 1024),
                ..driver
            },
        ),
    ] {
        let mut s = spec(Protocol::Xtp, Family::V6, len, count);
        s.timeout = Duration::from_secs(60);
        s.xtp = xtp;
        let report = run::pair(&s, &Target::Simulated(topology(wire)), false)
            .unwrap_or_else(|e| panic!("{len} B over {wire}: {e}"));
        assert!(report.is_clean(), "{len} B over {wire}: {report:?}");
        assert_eq!(
            report.end.sum_received.as_ref().unwrap().bytes,
            len as u64 * count
        );
    }
    // Sending for a time: the write in progress when the time is up is
    // followed to its end, so the sender counts every byte the receiver
    // got.
    let mut timed = spec(Protocol::Xtp, Family::V6, 1024, 1);
    timed.xtp = driver;
    timed.min_duration = Some(Duration::from_millis(50));
    let report = run::pair(&timed, &Target::Simulated(topology("default.toml")), false)
        .expect("timed driver transfer");
    assert!(report.impossible().is_empty(), "{:?}", report.impossible());
    assert!(report.is_clean());
    assert_eq!(
        report.end.sum_sent.as_ref().unwrap().bytes,
        report.end.sum_received.as_ref().unwrap().bytes
    );
    // A driver write ends only once the peer's reader took it: one write
    // per round trip (400 µs of propagation through the default
    // network's router), where the socket interface keeps the wire full.
    let seconds = |xtp: XtpOptions| {
        let mut s = spec(Protocol::Xtp, Family::V6, 1024, 256);
        s.xtp = xtp;
        let report = run::pair(&s, &Target::Simulated(topology("default.toml")), false)
            .expect("simulated xtp");
        assert!(report.is_clean());
        report.end.sum_sent.as_ref().unwrap().seconds
    };
    let (socket, by_driver) = (seconds(XtpOptions::default()), seconds(driver));
    assert!(
        by_driver > 256.0 * 400e-6 && by_driver > 5.0 * socket,
        "driver {by_driver} s, socket {socket} s"
    );
    for len in [16, 512, 16 * 1024] {
        let mut echo = EchoSpec::new(Protocol::Xtp, Family::V4, len, 40);
        echo.timeout = Duration::from_secs(5);
        echo.xtp = driver;
        let report = run::echo(&echo, &Target::Simulated(topology("default.toml")))
            .expect("xtp driver echo");
        assert_eq!(report.rtt_ns.len(), 40, "{len} B");
        assert_eq!((report.lost, report.corrupted), (0, 0), "{len} B");
        // Timed from the request's first offer: the write that waits for
        // delivery is inside the exchange, which spans the path's 400 µs
        // round trip at least.
        let shortest = report.rtt_ns.iter().min().copied().unwrap();
        assert!(shortest >= 400_000, "{len} B: {shortest} ns");
    }
}

#[test]
fn a_transaction_with_setup_costs_tcp_its_handshake_and_xtp_nothing() {
    // Sandia's comparison: XTP's FIRST carries the request (implicit
    // setup), TCP's handshake comes first; on the default network's
    // 400 µs round trip.
    let median = |protocol: Protocol, connect_each: bool| {
        let mut echo = EchoSpec::new(protocol, Family::V6, 64, 20);
        echo.timeout = Duration::from_secs(5);
        echo.connect_each = connect_each;
        let report = run::echo(&echo, &Target::Simulated(topology("default.toml")))
            .unwrap_or_else(|e| panic!("{protocol} connect_each {connect_each}: {e}"));
        assert_eq!(report.rtt_ns.len(), 20);
        assert_eq!((report.lost, report.corrupted), (0, 0));
        let mut rtt = report.rtt_ns.clone();
        rtt.sort_unstable();
        rtt[rtt.len() / 2] as f64 / 1e3
    };
    let tcp_established = median(Protocol::Tcp, false);
    let tcp_with_setup = median(Protocol::Tcp, true);
    let xtp_established = median(Protocol::Xtp, false);
    let xtp_with_setup = median(Protocol::Xtp, true);
    let figures = format!(
        "TCP {tcp_established:.0}/{tcp_with_setup:.0} µs, XTP {xtp_established:.0}/{xtp_with_setup:.0} µs"
    );
    for established in [tcp_established, xtp_established] {
        assert!((400.0..600.0).contains(&established), "{figures}");
    }
    assert!(tcp_with_setup >= 800.0, "TCP pays a round trip: {figures}");
    assert!(xtp_with_setup < 600.0, "XTP does not: {figures}");
    let mut udp = EchoSpec::new(Protocol::Udp, Family::V6, 64, 1);
    udp.connect_each = true;
    assert!(udp.validate().unwrap_err().to_string().contains("stream"));
}

#[test]
fn two_echo_circuits_at_once_each_time_their_own_exchanges() {
    // The XTP study's Table 6: two TCP circuits exchanging at once. The
    // series differ in size and length so each report is seen to be its
    // own.
    let mut first = EchoSpec::new(Protocol::Tcp, Family::V6, 16384, 40);
    first.timeout = Duration::from_secs(5);
    let mut second = first.clone();
    second.len = 5000;
    second.count = 60;
    let flows = [first.clone(), second];
    let reports = run::echoes(&flows, &Target::Simulated(None)).expect("two echo circuits");
    assert_eq!(reports.len(), 2);
    for (i, (report, count)) in reports.iter().zip([40, 60]).enumerate() {
        assert_eq!(report.spec.len, [16384, 5000][i]);
        // Every answer compared byte for byte with its request.
        assert_eq!(report.rtt_ns.len(), count, "circuit {i}");
        assert_eq!((report.lost, report.corrupted), (0, 0), "circuit {i}");
        // Flow i on port + i, numbered circuit i.
        assert_eq!(report.spec.port, 5001 + i as u16);
        assert_eq!(report.spec.circuit, i as u8);
        assert!(
            report.target.path.contains("simulator"),
            "{:?}",
            report.target
        );
    }
    // The same series alone replays its own exchanges, numbered 0.
    let alone = run::echo(&first, &Target::Simulated(None)).expect("alone");
    assert_eq!((alone.spec.circuit, alone.spec.port), (0, 5001));
    assert_eq!(alone.rtt_ns.len(), 40);
    let again = run::echoes(&flows, &Target::Simulated(None)).expect("replay");
    for (a, b) in reports.iter().zip(&again) {
        assert_eq!(a.rtt_ns, b.rtt_ns, "a simulated run replays exactly");
    }
}

#[test]
fn tcp_and_xtp_echo_at_once_over_impaired_wires() {
    // TCP with XTP (Table 6's last columns), over lossy, reordering
    // wires: both series complete, every answer checked.
    let target = Target::Simulated(topology("impaired.toml"));
    let mut tcp = EchoSpec::new(Protocol::Tcp, Family::V4, 1024, 30);
    tcp.timeout = Duration::from_secs(30);
    let mut xtp = tcp.clone();
    xtp.protocol = Protocol::Xtp;
    let flows = [tcp, xtp];
    let reports = run::echoes(&flows, &target).expect("tcp with xtp");
    let protocols: Vec<Protocol> = reports.iter().map(|r| r.spec.protocol).collect();
    assert_eq!(protocols, vec![Protocol::Tcp, Protocol::Xtp]);
    for report in &reports {
        assert_eq!(report.rtt_ns.len(), 30, "{}", report.spec.protocol);
        assert_eq!((report.lost, report.corrupted), (0, 0));
    }
    assert_ne!(reports[0].spec.port, reports[1].spec.port);
    let again = run::echoes(&flows, &target).expect("replay");
    assert_eq!(reports[1].rtt_ns, again[1].rtt_ns);

    // Raw series would answer each other's requests: refused, with why.
    let raw = EchoSpec::new(Protocol::Raw, Family::V6, 64, 5);
    let refused = run::echoes(&[raw.clone(), raw], &Target::Simulated(None))
        .expect_err("two raw echo circuits")
        .to_string();
    assert!(refused.contains("one circuit at a time"), "{refused}");
}
