//! The threaded runner's waiting: host threads with nothing to do block,
//! and are woken by a frame pushed towards them, by their workload's own
//! next event, and never miss a wake that comes just before they block.
//!
//! No figure here is a speed: the time bounds are hundreds of times what
//! the waits take, and only tell "woken by the event" from "woken by
//! something else much later" (a host timer, the run's limit).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use stack::iface::host::Host;
use stack::phy::{Link, VirtualWire, WireConfig};
use stack::runner::threaded::{self, Poll, Progress, RunOptions, Workload, WorkloadFactory};
use stack::runner::wake::{self, HostWaker};
use stack::socket::UdpConfig;
use stack::time::Instant;
use stack::topology::Topology;

const PORT: u16 = 7;
/// The run's limit: far beyond anything the tests wait for, so a run that
/// ends early ended because its workloads finished.
const LIMIT: Duration = Duration::from_secs(60);
/// How late a wake may come and still count as caused by its event.
const LATE: Duration = Duration::from_millis(250);

fn unlimited() -> Topology {
    Topology::from_toml_str(include_str!("../../../topologies/unlimited.toml")).unwrap()
}

/// Runs `f` on a thread and fails if it has not returned within `limit`:
/// a lost wake-up shows as a hang, which this turns into a failure.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("no result in time: a wake-up was lost")
}

#[test]
fn a_push_just_before_the_receiver_blocks_still_wakes_it() {
    // The receiver looks (nothing there), then blocks with no time limit;
    // the sender pushes at every possible moment in between, many times.
    // A push whose wake were lost would leave the receiver blocked for
    // ever.
    let received = within(Duration::from_secs(120), || {
        let (mut a, mut b) = VirtualWire::pair(WireConfig::default()).unwrap();
        let waker = HostWaker::new();
        waker.register();
        b.wake_on_arrival(waker.waker());
        const FRAMES: usize = 20_000;
        let sender = std::thread::spawn(move || {
            for i in 0..FRAMES {
                // Vary the moment of the push against the receiver's loop.
                for _ in 0..(i % 64) {
                    std::hint::spin_loop();
                }
                while a.transmit(Instant::ZERO, &[&[0u8; 60]]).is_err() {
                    std::thread::yield_now();
                }
                // The doorbell: a wire wakes its receiver when flushed.
                a.flush(Instant::ZERO);
                if i % 1024 == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut buf = [0u8; 1514];
        let mut received = 0;
        // A frame the receive side had no room for is lost and counted
        // there; every other one must come, each push waking the receiver.
        while received + (b.stats().dropped_rx_overrun as usize) < FRAMES {
            if b.receive(Instant::ZERO, &mut buf).is_some() {
                received += 1;
                continue;
            }
            // Nothing there: block until a push wakes us.
            if b.next_arrival().is_none() {
                wake::park(None);
            }
        }
        sender.join().unwrap();
        (received, b.stats().dropped_rx_overrun)
    });
    assert_eq!(received.0 as u64 + received.1, 20_000);
    assert!(received.0 > 0);
}

/// Host-b's workload: done once a datagram reaches its socket; records
/// when (the wall clock) into `got`.
fn sink(got: Arc<Mutex<Option<std::time::Instant>>>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(UdpConfig::default());
        host.udp_bind(socket, "[::]:7".parse().unwrap());
        Box::new(move |host: &mut Host, _now| {
            if host.udp(socket).recv().is_some() {
                *got.lock().unwrap() = Some(std::time::Instant::now());
                return Progress::Done;
            }
            // Only the frame is to wake it.
            Progress::WAITING
        })
    })
}

/// Host-a's workload: sends one datagram to host-b at `at` (the runner's
/// clock), saying so as its next event; records when it sent.
fn send_at(at: Duration, sent: Arc<Mutex<Option<std::time::Instant>>>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(UdpConfig::default());
        let dest: SocketAddr = format!("[2001:db8:1::b]:{PORT}").parse().unwrap();
        let at = Instant::ZERO + at;
        Box::new(move |host: &mut Host, now| {
            if now < at {
                return Progress::Running { next: Some(at) };
            }
            if sent.lock().unwrap().is_none() {
                // Refused only while the neighbour is unresolved: retried
                // when the answer (a frame) arrives.
                if host.udp_send_to(socket, b"wake", dest).is_err() {
                    return Progress::WAITING;
                }
                *sent.lock().unwrap() = Some(std::time::Instant::now());
            }
            Progress::Done
        })
    })
}

fn run_pair(
    poll: Poll,
    send_after: Duration,
) -> (
    Vec<threaded::HostReport>,
    std::time::Instant,
    Option<std::time::Instant>,
    Option<std::time::Instant>,
) {
    let sent = Arc::new(Mutex::new(None));
    let got = Arc::new(Mutex::new(None));
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert("host-a".into(), send_at(send_after, Arc::clone(&sent)));
    workloads.insert("host-b".into(), sink(Arc::clone(&got)));
    let began = std::time::Instant::now();
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
    let sent = *sent.lock().unwrap();
    let got = *got.lock().unwrap();
    (reports, began, sent, got)
}

#[test]
fn a_blocked_host_is_woken_by_the_frame_and_a_workload_by_its_own_event() {
    let send_after = Duration::from_millis(300);
    let (reports, began, sent, got) = within(LIMIT, move || run_pair(Poll::Block, send_after));
    let (sent, got) = (sent.expect("host-a sent"), got.expect("host-b received"));
    // Host-a had nothing but its own event at 300 ms to wake it.
    assert!(sent >= began + send_after, "sent before its time");
    assert!(
        sent < began + send_after + LATE,
        "host-a ran {:?} after its event: its next-event wake did not work",
        sent - began - send_after
    );
    // Host-b was blocked with nothing due: only the frame woke it.
    assert!(
        got - sent < LATE,
        "host-b took {:?} to see the frame: the wire did not wake it",
        got - sent
    );
    for report in &reports {
        assert!(report.elapsed < LIMIT / 2, "{report:?}");
    }
}

#[test]
fn block_mode_says_so_and_blocks_instead_of_polling() {
    let (reports, _, sent, got) =
        within(LIMIT, || run_pair(Poll::Block, Duration::from_millis(300)));
    assert!(sent.is_some() && got.is_some());
    for report in &reports {
        assert_eq!(report.poll, Poll::Block);
        assert_eq!(report.poll.as_str(), "block");
        // The 300 ms before the send were spent blocked, not polling: a
        // thread that polled would make millions of polls in that time.
        assert!(report.blocks > 0, "{report:?}");
        assert!(report.blocked >= Duration::from_millis(200), "{report:?}");
        assert!(report.blocked <= report.elapsed, "{report:?}");
        assert!(report.polls < 100_000, "{report:?}");
    }
}

#[test]
fn a_finished_run_wakes_every_blocked_host_to_end() {
    // Host-b has no workload and nothing to do: it must still leave its
    // block when host-a's workload ends the run.
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert(
        "host-a".into(),
        Box::new(move |_: &mut Host| -> Workload {
            let at = Instant::ZERO + Duration::from_millis(200);
            Box::new(move |_: &mut Host, now| {
                if now < at {
                    return Progress::Running { next: Some(at) };
                }
                flag.store(true, Ordering::Release);
                Progress::Done
            })
        }),
    );
    let reports = within(LIMIT, move || {
        threaded::run_with(
            &unlimited(),
            Duration::ZERO,
            LIMIT,
            workloads,
            RunOptions {
                poll: Poll::Block,
                ..RunOptions::default()
            },
        )
        .unwrap()
    });
    assert!(done.load(Ordering::Acquire));
    for report in &reports {
        assert!(report.elapsed < LIMIT / 2, "{report:?}");
    }
}
