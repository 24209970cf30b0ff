//! The lab's kernel TCP messages run the congestion control they ask for
//! (a recipe's `congestion`): set on both ends before listen and connect,
//! read back after accept and connect, a name the kernel lacks refused
//! with what it offers, and a connection that runs another algorithm
//! refused rather than measured. Without probes (the driver runs without
//! them), across a veth pair and over a namespace's loopback. Needs root
//! (namespaces); without it each test says it is skipped.

use std::sync::{Mutex, MutexGuard};

use kernel_probe::messages::{self, HostFlows, Path, Transferred};
use kernel_probe::KernelProbeError;
use traffic::congestion::Congestion;
use traffic::kernel::netns::{is_root, Side, VethPair};
use traffic::spec::Family;

const SIZES: [u32; 3] = [1024, 16 * 1024, 64 * 1024];

/// The namespaces are named after the process: one pair at a time.
fn one_pair_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A veth pair for the test, or `None` (saying why) without root.
fn pair() -> Option<VethPair> {
    if !is_root() {
        println!("skipped: not root: making namespaces needs it");
        return None;
    }
    Some(VethPair::create(1500).expect("veth pair"))
}

fn congestion(name: &str) -> Congestion {
    Congestion::parse(name).unwrap()
}

fn messages(
    pair: &VethPair,
    path: Path,
    asked: Option<Congestion>,
) -> Result<Transferred, KernelProbeError> {
    messages::tcp_messages(
        pair,
        None,
        path,
        Family::V6,
        &SIZES,
        HostFlows::of(1, path),
        asked,
    )
}

/// CUBIC (the recipes' choice: the reference stack's own) and Reno
/// (always built in), whatever the machine's default, on both paths:
/// each is what the sender's socket reads back, after both ends were
/// checked, and every message arrives.
#[test]
fn tcp_messages_run_the_congestion_control_asked_for() {
    let _one = one_pair_at_a_time();
    let Some(pair) = pair() else {
        return;
    };
    for path in [Path::Veth, Path::Loopback] {
        for name in ["cubic", "reno"] {
            let moved = messages(&pair, path, Some(congestion(name)))
                .unwrap_or_else(|e| panic!("{name} over {}: {e}", path.name()));
            assert_eq!(
                moved.congestion_control.as_deref(),
                Some(name),
                "over {}",
                path.name()
            );
            assert_eq!(moved.received, SIZES.len(), "{name} over {}", path.name());
        }
    }
    // Without a choice the namespace's default runs, and is recorded.
    let moved = messages(&pair, Path::Veth, None).expect("default");
    let default = moved.congestion_control.expect("read back");
    assert!(!default.is_empty());
    println!("the kernel's default here: {default}");
}

/// A name the kernel has no algorithm for fails the transfer with the
/// traffic crate's refusal (what the kernel offers instead), not with a
/// side's thread having ended early.
#[test]
fn an_unknown_congestion_control_is_refused_with_what_the_kernel_offers() {
    let _one = one_pair_at_a_time();
    let Some(pair) = pair() else {
        return;
    };
    let e = messages(&pair, Path::Veth, Some(congestion("no-such-cc")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no TCP congestion control `no-such-cc`"), "{e}");
    assert!(e.contains("it offers") && e.contains("reno"), "{e}");
}

/// A route's congctl on the sender's side chooses for its connection
/// (`tcp_ca_dst_init`) over the socket's choice: the sender reads back
/// Reno where CUBIC was asked and the transfer fails with why, rather
/// than measuring Reno as CUBIC.
#[test]
fn a_connection_that_runs_another_algorithm_fails_the_transfer() {
    let _one = one_pair_at_a_time();
    let Some(pair) = pair() else {
        return;
    };
    let receiver = pair.addr(Side::A, Family::V6).to_string();
    let route = std::process::Command::new("ip")
        .args(["-n", pair.namespace(Side::B), "-6", "route", "replace"])
        .args([&format!("{receiver}/128"), "dev", pair.interface(Side::B)])
        .args(["congctl", "reno"])
        .output()
        .expect("run ip");
    if !route.status.success() {
        println!(
            "skipped: ip could not add a route with congctl: {}",
            String::from_utf8_lossy(&route.stderr).trim()
        );
        return;
    }
    let e = messages(&pair, Path::Veth, Some(congestion("cubic")))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("-C cubic was set, but the connection runs reno"),
        "{e}"
    );
    // The same route with Reno asked is what it runs.
    let moved = messages(&pair, Path::Veth, Some(congestion("reno"))).expect("reno");
    assert_eq!(moved.congestion_control.as_deref(), Some("reno"));
}
