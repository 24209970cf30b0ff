//! The threaded runner and request/response exchanges: while a workload
//! awaits answers no host thread naps (in the default, spinning mode), a
//! nap that overlaps a measured exchange is counted (so a blocking run
//! shows them), and once the series is over the threads block again.
//!
//! Nothing here is a speed: the properties are counts (naps, answers) and
//! a block that must happen within a generous idle stretch.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::threaded::{
    self, Poll, Progress, RunOptions, Workload, WorkloadFactory, SPIN_BEFORE_BLOCK,
};
use stack::socket::UdpConfig;
use stack::time::Instant;
use stack::topology::Topology;

const PORT: u16 = 7;
const LIMIT: Duration = Duration::from_secs(60);
/// How long the client stays, idle, after its last answer.
const IDLE_AFTER: Duration = Duration::from_millis(300);

fn unlimited() -> Topology {
    Topology::from_toml_str(include_str!("../../../topologies/unlimited.toml")).unwrap()
}

/// Host-b: echoes every datagram on port 7 back to its sender until the
/// client has had `count` answers.
fn echo_server(count: u64, answered: Arc<AtomicU64>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(UdpConfig::default());
        host.udp_bind(socket, format!("[::]:{PORT}").parse().unwrap());
        let mut buf = [0u8; 64];
        Box::new(move |host: &mut Host, _now| {
            while let Some((n, from)) = host.udp(socket).recv_from(&mut buf) {
                let _ = host.udp_send_to(socket, &buf[..n], from);
            }
            if answered.load(Ordering::Relaxed) == count {
                return Progress::Done;
            }
            Progress::WAITING
        })
    })
}

/// Between an answer and the next request the client thinks this long:
/// longer than a thread spins after its last packet, so a runner that
/// only spun for that window would nap before every request.
const THINK: Duration = Duration::from_micros(2 * SPIN_BEFORE_BLOCK.as_micros() as u64);

/// Host-a: awaiting from its first step; one unmeasured exchange (which
/// proves host-b has run since), then `count` one-byte exchanges with
/// host-b, one outstanding at a time, [`THINK`] apart, each marked as a
/// measured exchange; then idle for [`IDLE_AFTER`] before it is done.
fn echo_client(count: u64, answered: Arc<AtomicU64>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(UdpConfig::default());
        let dest: SocketAddr = format!("[2001:db8:1::b]:{PORT}").parse().unwrap();
        let mut outstanding = false;
        let mut warmed = false;
        let mut next_request = Instant::ZERO;
        let mut idle_until = None;
        let mut buf = [0u8; 64];
        Box::new(move |host: &mut Host, now| {
            if let Some(until) = idle_until {
                return if now >= until {
                    Progress::Done
                } else {
                    Progress::Running { next: Some(until) }
                };
            }
            if answered.load(Ordering::Relaxed) == count {
                threaded::awaiting(false);
                idle_until = Some(now + IDLE_AFTER);
                return Progress::Running { next: idle_until };
            }
            threaded::awaiting(true);
            if !outstanding {
                if now < next_request {
                    return Progress::Running {
                        next: Some(next_request),
                    };
                }
                if host.udp_send_to(socket, &[1], dest).is_err() {
                    return Progress::WAITING;
                }
                if warmed {
                    threaded::exchange_begins();
                }
                outstanding = true;
            }
            if host.udp(socket).recv_from(&mut buf).is_some() {
                outstanding = false;
                if std::mem::replace(&mut warmed, true) {
                    threaded::exchange_ends();
                    answered.fetch_add(1, Ordering::Relaxed);
                }
                next_request = now + THINK;
                return Progress::Running {
                    next: Some(next_request),
                };
            }
            Progress::WAITING
        })
    })
}

fn run(poll: Poll, count: u64) -> (Vec<threaded::HostReport>, u64) {
    let answered = Arc::new(AtomicU64::new(0));
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert("host-a".into(), echo_client(count, Arc::clone(&answered)));
    workloads.insert("host-b".into(), echo_server(count, Arc::clone(&answered)));
    let reports = threaded::run_with(
        &unlimited(),
        Duration::ZERO,
        LIMIT,
        workloads,
        RunOptions {
            poll,
            ..RunOptions::default()
        },
    )
    .unwrap();
    (reports, answered.load(Ordering::Relaxed))
}

fn naps(reports: &[threaded::HostReport]) -> u64 {
    reports.iter().map(|r| r.naps_in_exchanges).sum()
}

#[test]
fn no_thread_naps_inside_an_exchange_while_a_host_awaits_answers() {
    let (reports, answered) = run(Poll::Spin, 2000);
    assert_eq!(answered, 2000);
    assert_eq!(naps(&reports), 0, "{reports:#?}");
    // The series over, the threads went back to blocking: the idle
    // stretch after it was spent blocked, not polling.
    for report in &reports {
        assert!(report.blocks > 0, "{report:#?}");
        assert!(report.blocked >= IDLE_AFTER / 2, "{report:#?}");
    }
}

#[test]
fn a_blocking_run_counts_the_naps_inside_its_exchanges() {
    // Block mode blocks as soon as a thread has nothing to do: host-b
    // sleeps between requests, each of which must wake it. The counter
    // sees them (a counter that never moved would pass the test above).
    let (reports, answered) = run(Poll::Block, 200);
    assert_eq!(answered, 200);
    let server = reports.iter().find(|r| r.name == "host-b").unwrap();
    assert!(server.naps_in_exchanges > 0, "{reports:#?}");
    assert!(server.naps_in_exchanges <= server.blocks, "{reports:#?}");
}
