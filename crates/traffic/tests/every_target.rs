//! Every program on every target: the combinations the traffic crate
//! once refused because they were never written a third time — delay mode
//! and concurrent flows with the reference stack against the kernel over
//! a link, raw echo and raw circuits on the kernel's veth pair. Needs
//! root (namespaces, veth, AF_PACKET, TAP); skipped otherwise.

use std::sync::Mutex;
use std::time::Duration;

use traffic::echo::EchoReport;
use traffic::kernel::KernelPath;
use traffic::run::{self, KernelPeer, PeerLink, RefEnd, Target};
use traffic::spec::{EchoSpec, Family, Protocol, TransferSpec};

/// Namespaces are named per process: runs in this binary take turns.
static NETNS: Mutex<()> = Mutex::new(());

fn root() -> Option<std::sync::MutexGuard<'static, ()>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces, veth, AF_PACKET, TAP)");
        return None;
    }
    Some(NETNS.lock().unwrap_or_else(|e| e.into_inner()))
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

fn echo_spec(protocol: Protocol, len: usize, count: u64, port: u16) -> EchoSpec {
    let mut spec = EchoSpec::new(protocol, Family::V6, len, count);
    spec.port = port;
    spec.timeout = Duration::from_secs(5);
    spec
}

fn transfer_spec(protocol: Protocol, len: usize, count: u64, port: u16) -> TransferSpec {
    let mut spec = TransferSpec::new(protocol, Family::V6);
    spec.len = len;
    spec.count = count;
    spec.port = port;
    spec.timeout = Duration::from_secs(5);
    spec
}

fn assert_answered(report: &EchoReport, what: &str) {
    assert_eq!(report.lost, 0, "{what}: lost");
    assert_eq!(report.corrupted, 0, "{what}: corrupted");
    assert_eq!(report.rtt_ns.len() as u64, report.spec.count, "{what}");
    assert!(report.rtt_ns.iter().all(|&rtt| rtt > 0), "{what}");
}

fn cross(link: PeerLink, ref_end: RefEnd) -> Target {
    Target::Cross(KernelPeer {
        link,
        mtu: 1500,
        ref_end,
        offload: stack::iface::offload::Offload::NONE,
    })
}

#[test]
fn delay_mode_runs_between_the_reference_stack_and_the_kernel() {
    let Some(_turn) = root() else { return };
    let cases = [
        (Protocol::Tcp, PeerLink::Packet, RefEnd::Receiver, 15_600),
        (Protocol::Udp, PeerLink::Packet, RefEnd::Sender, 15_601),
        (Protocol::Tcp, PeerLink::Tap, RefEnd::Sender, 15_602),
    ];
    for (protocol, link, ref_end, port) in cases {
        let what = format!(
            "{protocol} echo over {link:?}, reference {}",
            ref_end.name()
        );
        let report = run::echo(&echo_spec(protocol, 512, 200, port), &cross(link, ref_end))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_answered(&report, &what);
        assert!(report.target.path.contains("reference stack"), "{what}");
        assert_eq!(report.target.mtu, Some(1500), "{what}");
        assert_cleaned_up();
    }
}

#[test]
fn echo_circuits_run_at_once_on_the_kernels_link_and_across_to_the_reference_stack() {
    let Some(_turn) = root() else { return };
    let targets = [
        (
            "kernel veth",
            Target::Kernel(KernelPath::Netns { mtu: 1500 }),
        ),
        ("cross", cross(PeerLink::Packet, RefEnd::Receiver)),
    ];
    for (i, (what, target)) in targets.into_iter().enumerate() {
        let port = 15_620 + 4 * i as u16;
        let flows = [
            echo_spec(Protocol::Tcp, 512, 200, port),
            echo_spec(Protocol::Udp, 512, 200, port),
        ];
        let reports = run::echoes(&flows, &target).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(reports.len(), 2, "{what}");
        for (c, report) in reports.iter().enumerate() {
            assert_answered(report, &format!("{what} circuit {c}"));
            assert_eq!(report.spec.port, port + c as u16, "{what}");
            assert_eq!(report.target.mtu, Some(1500), "{what}");
        }
        assert_cleaned_up();
    }
}

#[test]
fn concurrent_flows_run_between_the_reference_stack_and_the_kernel() {
    let Some(_turn) = root() else { return };
    for ref_end in [RefEnd::Receiver, RefEnd::Sender] {
        let flows = [
            transfer_spec(Protocol::Tcp, 8192, 256, 15_610),
            transfer_spec(Protocol::Udp, 1024, 500, 15_610),
        ];
        let reports = run::transfer(&flows, &cross(PeerLink::Packet, ref_end), false)
            .unwrap_or_else(|e| panic!("reference {}: {e}", ref_end.name()));
        assert_eq!(reports.len(), 2);
        for (i, report) in reports.iter().enumerate() {
            assert!(report.is_clean(), "flow {i}, reference {}", ref_end.name());
            assert!(report.impossible().is_empty(), "{:?}", report.impossible());
            // Flow i on port + i.
            assert_eq!(report.start.test_start.port, 15_610 + i as u16);
        }
        // TCP loses nothing: every byte arrives.
        assert_eq!(
            reports[0].end.sum_received.as_ref().unwrap().bytes,
            8192 * 256
        );
        assert_cleaned_up();
    }
}

#[test]
fn raw_echo_and_raw_circuits_run_on_the_kernels_link() {
    let Some(_turn) = root() else { return };
    let link = Target::Kernel(KernelPath::Netns { mtu: 1500 });
    let report = run::echo(&echo_spec(Protocol::Raw, 256, 200, 5001), &link).expect("raw echo");
    assert_answered(&report, "raw echo on the kernel");
    assert_cleaned_up();

    // Circuits share the Ethertype: each receiver counts the other's
    // frames as foreign, never as damage, and gets all of its own.
    let raw = transfer_spec(Protocol::Raw, 1000, 300, 5001);
    let reports = run::transfer(&[raw.clone(), raw], &link, false).expect("raw circuits");
    for (i, report) in reports.iter().enumerate() {
        let received = report.end.sum_received.as_ref().unwrap();
        let datagrams = received.datagrams.as_ref().unwrap();
        assert_eq!(datagrams.corrupted, 0, "circuit {i}");
        assert_eq!(datagrams.sent_by_sender, Some(300), "circuit {i}");
        assert!(
            datagrams.packets <= 300,
            "circuit {i}: {}",
            datagrams.packets
        );
        assert_eq!(
            datagrams.packets + datagrams.lost_packets,
            300,
            "circuit {i}: every frame of its own arrived or is counted lost"
        );
    }
    assert_cleaned_up();
}

#[test]
fn raw_frames_run_between_the_reference_stack_and_the_kernel() {
    let Some(_turn) = root() else { return };
    for ref_end in [RefEnd::Receiver, RefEnd::Sender] {
        let raw = transfer_spec(Protocol::Raw, 1000, 300, 5001);
        let report = run::pair(&raw, &cross(PeerLink::Packet, ref_end), false)
            .unwrap_or_else(|e| panic!("reference {}: {e}", ref_end.name()));
        let datagrams = report
            .end
            .sum_received
            .as_ref()
            .unwrap()
            .datagrams
            .clone()
            .unwrap();
        assert_eq!(datagrams.corrupted, 0);
        assert_eq!(datagrams.sent_by_sender, Some(300));
        assert_eq!(datagrams.packets + datagrams.lost_packets, 300);
        assert!(datagrams.packets > 0, "reference {}", ref_end.name());
        assert_cleaned_up();
    }
}
