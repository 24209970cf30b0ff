//! A transfer's sides pinned to CPUs (a sweep's `--load-on server|client`):
//! while it runs, the kernel's own view of this process's threads
//! (/proc/self/task/*/status) shows one thread on the receiver's CPU alone
//! and one on the sender's, on the kernel target and on the reference
//! stack; the report's placement says the pins held. One test in its own
//! process, so no other test's threads are in the view.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use traffic::affinity::{self, SideCpus};
use traffic::kernel::KernelPath;
use traffic::report::TransferReport;
use traffic::run::{self, Target};
use traffic::spec::{Family, Protocol, TransferSpec};

/// Every thread's allowed CPUs seen while `run` ran, sampled each
/// millisecond.
fn masks_during(run: impl FnOnce() -> TransferReport) -> (TransferReport, BTreeSet<Vec<usize>>) {
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut seen = BTreeSet::new();
            while !done.load(Ordering::Acquire) {
                for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                    let status = std::fs::read_to_string(task.path().join("status"));
                    if let Some(cpus) = status.ok().and_then(|s| affinity::cpus_allowed_list(&s)) {
                        seen.insert(cpus);
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            seen
        })
    };
    let report = run();
    done.store(true, Ordering::Release);
    (report, watcher.join().unwrap())
}

fn spec(port: u16, sides: SideCpus) -> TransferSpec {
    let mut spec = TransferSpec::new(Protocol::Tcp, Family::V6);
    spec.len = 8192;
    spec.count = 64;
    spec.port = port;
    spec.sockbuf = Some(64 * 1024);
    // Long enough for the watcher to see the threads.
    spec.min_duration = Some(Duration::from_millis(300));
    spec.cpus = Some(sides);
    spec
}

#[test]
fn each_side_runs_on_its_own_cpu_and_the_report_says_so() {
    let Some([a, b]) = affinity::first_two_cpus() else {
        eprintln!("one CPU: no sides to pin");
        return;
    };
    let all = affinity::allowed().unwrap();
    // Receiver on the second CPU, sender on the first: not the order a
    // default would give by accident.
    let sides = SideCpus {
        receiver: b,
        sender: a,
    };

    let (report, seen) = masks_during(|| {
        run::pair(
            &spec(15_420, sides),
            &Target::Kernel(KernelPath::Loopback),
            false,
        )
        .expect("kernel")
    });
    assert!(report.is_clean());
    let placement = report.start.target.placement.expect("placement");
    assert_eq!((placement.receiver_cpu, placement.sender_cpu), (b, a));
    assert!(placement.held, "{placement:?}");
    assert!(
        seen.contains(&vec![b]) && seen.contains(&vec![a]),
        "{seen:?}"
    );
    // This thread was never pinned.
    assert_eq!(affinity::allowed(), Some(all.clone()));

    let topologies = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../topologies");
    let two_hosts = topologies.join("fast-ethernet.toml");
    let (report, seen) = masks_during(|| {
        run::pair(
            &spec(15_421, sides),
            &Target::Reference(Some(two_hosts.clone())),
            false,
        )
        .expect("ref")
    });
    assert!(report.is_clean());
    let placement = report.start.target.placement.expect("placement");
    assert!(placement.held, "{placement:?}");
    assert!(
        seen.contains(&vec![b]) && seen.contains(&vec![a]),
        "{seen:?}"
    );

    // A router's thread could not be placed: refused, not run half-pinned.
    let err = run::pair(&spec(15_422, sides), &Target::Reference(None), false).unwrap_err();
    assert!(err.to_string().contains("two hosts"), "{err}");

    // Unpinned runs record no placement.
    let mut free = spec(15_423, sides);
    free.cpus = None;
    let report = run::pair(&free, &Target::Kernel(KernelPath::Loopback), false).unwrap();
    assert_eq!(report.start.target.placement, None);
}
