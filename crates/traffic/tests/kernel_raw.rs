//! The kernel target across a veth pair between two network namespaces
//! the run makes itself: raw AF_PACKET frames (Ethertype 0x88B5), and UDP
//! and TCP over the same path. Needs root; skipped otherwise.

use std::sync::Mutex;
use std::time::Duration;

use traffic::kernel::KernelPath;
use traffic::report::TransferReport;
use traffic::run::{self, Target};
use traffic::spec::{Family, Protocol, TransferSpec};
use traffic::TrafficError;

/// Namespaces and veth names are per process (`stackscope-<pid>-a`), so
/// runs in this binary take turns.
static NETNS: Mutex<()> = Mutex::new(());

const PATH: KernelPath = KernelPath::Netns { mtu: 1500 };

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    eprintln!("skipped: needs root (network namespaces, veth, AF_PACKET)");
    false
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    // A failed test poisons the lock; the next one still needs it.
    NETNS.lock().unwrap_or_else(|e| e.into_inner())
}

/// No namespace of this process outlives its run.
fn assert_cleaned_up() {
    let prefix = format!("stackscope-{}-", std::process::id());
    let left: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

fn spec(protocol: Protocol, family: Family, len: usize, count: u64) -> TransferSpec {
    let mut spec = TransferSpec::new(protocol, family);
    spec.len = len;
    spec.count = count;
    spec.timeout = Duration::from_secs(5);
    spec
}

fn run(spec: &TransferSpec) -> TransferReport {
    let report = run::pair(spec, &Target::Kernel(PATH), false).unwrap_or_else(|e| panic!("{e}"));
    assert_cleaned_up();
    report
}

/// Every datagram or frame sent is accounted for, none wrong, and the
/// byte counts agree with the datagram counts.
fn assert_datagrams_accounted(spec: &TransferSpec, report: &TransferReport) {
    assert!(report.impossible().is_empty(), "{:?}", report.impossible());
    let sent = report.end.sum_sent.as_ref().expect("sender side");
    assert_eq!(sent.packets, Some(spec.count));
    assert_eq!(sent.bytes, spec.total_bytes());
    let received = report.end.sum_received.as_ref().expect("receiver side");
    let d = received.datagrams.as_ref().expect("datagram checks");
    assert_eq!(d.sent_by_sender, Some(spec.count), "end sentinel: {d:?}");
    assert_eq!(d.packets + d.lost_packets, spec.count, "{d:?}");
    assert_eq!(d.corrupted, 0, "{d:?}");
    assert_eq!(d.duplicated, 0, "{d:?}");
    assert_eq!(d.foreign, 0, "{d:?}");
    assert!(d.packets > 0, "nothing arrived: {d:?}");
    assert_eq!(received.bytes, d.packets * spec.len as u64, "{d:?}");
    assert!(report.is_clean());
    // Every lost frame or datagram has a place (the namespaces carry
    // nothing else, so none should be unexplained).
    let places = d.lost_where.as_ref().expect("losses attributed");
    assert_eq!(places.values().sum::<u64>(), d.lost_packets, "{d:?}");
    assert_eq!(places.get("unattributed"), Some(&0), "{d:?}");
}

fn summary(what: &str, report: &TransferReport) {
    let received = report.end.sum_received.as_ref().expect("receiver side");
    let packets = received
        .datagrams
        .as_ref()
        .map(|d| (d.packets, d.lost_packets));
    eprintln!(
        "{what}: {:.1} Mbit/s received over {:.3} s{}",
        received.bits_per_second / 1e6,
        received.seconds,
        packets.map_or(String::new(), |(p, lost)| format!(
            ", {p} frames ({:.0}/s), {lost} lost",
            p as f64 / received.seconds.max(1e-9)
        )),
    );
}

#[test]
fn raw_full_size_frames_cross_the_veth_pair() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    let spec = spec(Protocol::Raw, Family::V4, 1500, 5000);
    let report = run(&spec);
    assert_datagrams_accounted(&spec, &report);
    let target = &report.start.target;
    assert_eq!(target.mtu, Some(1500));
    assert!(
        target
            .path
            .starts_with("AF_PACKET frames, Ethertype 0x88B5, veth "),
        "{}",
        target.path
    );
    summary("raw 1500 B", &report);
}

#[test]
fn raw_minimum_frames_cross_the_veth_pair() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    // 16 bytes: the header alone, shorter than Ethernet's minimum payload.
    let spec = spec(Protocol::Raw, Family::V4, 16, 5000);
    let report = run(&spec);
    assert_datagrams_accounted(&spec, &report);
    summary("raw 16 B", &report);
}

#[test]
fn raw_socket_buffers_are_applied_and_reported() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    let mut spec = spec(Protocol::Raw, Family::V4, 1000, 2000);
    spec.sockbuf = Some(256 * 1024);
    let report = run(&spec);
    assert_datagrams_accounted(&spec, &report);
    let granted = report.start.target.sockbuf_granted;
    // Linux doubles the request for its bookkeeping (capped by
    // net.core.*mem_max, which is at least 208 KiB by default).
    assert!(granted.send.is_some_and(|b| b >= 200 * 1024), "{granted:?}");
    assert!(granted.recv.is_some_and(|b| b >= 200 * 1024), "{granted:?}");
}

#[test]
fn raw_paced_frames_arrive_near_the_offered_rate() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    let mut spec = spec(Protocol::Raw, Family::V4, 1000, 3000);
    let rate = 40_000_000;
    spec.rate_bps = Some(rate);
    spec.interval = Some(Duration::from_millis(100));
    let report = run(&spec);
    assert_datagrams_accounted(&spec, &report);
    let received = report.end.sum_received.as_ref().unwrap().bits_per_second;
    let ratio = received / rate as f64;
    // 3000 frames of 1000 bytes at 40 Mbit/s take 0.6 s; the pacer keeps
    // the long-run rate exact, so only scheduling noise at either end of
    // the run moves the measured figure.
    assert!(
        (0.8..1.25).contains(&ratio),
        "received {received:.0} bit/s for {rate}"
    );
    assert!(!report.intervals.is_empty());
    summary("raw 1000 B paced at 40 Mbit/s", &report);
}

#[test]
fn raw_frames_longer_than_the_mtu_are_refused_before_any_namespace_exists() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    let spec = spec(Protocol::Raw, Family::V4, 1500, 10);
    match run::pair(
        &spec,
        &Target::Kernel(KernelPath::Netns { mtu: 1400 }),
        false,
    ) {
        Err(TrafficError::Invalid(message)) => {
            assert!(message.contains("MTU 1400"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_cleaned_up();
}

#[test]
fn raw_over_loopback_is_still_refused() {
    let spec = spec(Protocol::Raw, Family::V4, 100, 10);
    assert!(matches!(
        run::pair(&spec, &Target::Kernel(KernelPath::Loopback), false),
        Err(TrafficError::Unsupported(_))
    ));
}

#[test]
fn udp_crosses_the_veth_pair() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    let spec = spec(Protocol::Udp, Family::V6, 1400, 5000);
    let report = run(&spec);
    assert_datagrams_accounted(&spec, &report);
    assert!(
        report.start.target.path.starts_with("veth "),
        "{}",
        report.start.target.path
    );
    summary("UDP/IPv6 1400 B", &report);
}

#[test]
fn tcp_crosses_the_veth_pair_byte_exact() {
    if !is_root() {
        return;
    }
    let _turn = lock();
    for family in [Family::V4, Family::V6] {
        let spec = spec(Protocol::Tcp, family, 8192, 2048);
        let report = run(&spec);
        let sent = report.end.sum_sent.as_ref().unwrap();
        let received = report.end.sum_received.as_ref().unwrap();
        let stream = received.stream.expect("stream checks");
        assert_eq!(sent.bytes, spec.total_bytes());
        assert_eq!(received.bytes, spec.total_bytes());
        assert!(stream.is_clean(), "{stream:?}");
        assert!(report.is_clean());
        summary(&format!("TCP/{family} 8192 B"), &report);
    }
}
