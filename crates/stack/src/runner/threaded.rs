//! The threaded runner: a thread per host on the real clock (DESIGN.md,
//! "Runners"), for measurement. Hosts share nothing but their wires (lock-
//! free queues); each thread polls its host as fast as it can, running an
//! optional workload (a traffic source or sink) before every poll. A run
//! ends when every workload says it is done, or at its time limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::{build_host, BuildError, NetworkBuilder};
use crate::iface::host::{Host, HostCounters};
use crate::time::Instant;
use crate::topology::Topology;

/// Whether a workload has more to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Running,
    /// Finished; the host keeps being polled (so it can still answer its
    /// peers) until every workload is done.
    Done,
}

/// Work a host's thread does before each poll, at `now`: queue traffic,
/// drain sockets. Built on the host's thread (hosts are not `Send`), from
/// the host itself.
pub type Workload = Box<dyn FnMut(&mut Host, Instant) -> Progress + Send>;

/// Makes a host's workload once the host exists on its thread.
pub type WorkloadFactory = Box<dyn FnOnce(&mut Host) -> Workload + Send>;

/// What one host's thread did.
#[derive(Debug, Clone)]
pub struct HostReport {
    pub name: String,
    /// Counters and drops of the measured `duration` only.
    pub counters: HostCounters,
    pub drops: BTreeMap<String, u64>,
    /// Polls made.
    pub polls: u64,
    /// Time from the common start to the thread's end.
    pub elapsed: Duration,
    /// The probe records of the measured part, when the run was traced.
    pub trace: Option<ThreadTrace>,
}

/// One host thread's probe records (DESIGN.md, "Probe events").
#[derive(Debug, Clone)]
pub struct ThreadTrace {
    /// The thread number stamped in every record.
    pub thread: u16,
    pub records: Vec<probe::Record>,
    /// Events lost because the ring was full.
    pub dropped: u64,
}

/// How to run: plain, or recording every host thread's probes.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Writes a pcapng capture of every interface into this directory.
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Records per host thread's ring; `Some` traces the run. The ring is
    /// allocated before warm-up and emptied when measuring begins, so the
    /// trace holds the measured part only. What is recorded follows the
    /// global gate ([`probe::set_mode`]), which the caller sets.
    pub trace_capacity: Option<usize>,
}

/// Runs every node of `topology` on its own thread for `warmup` (address
/// configuration, no workloads) and then with the workloads of
/// `workloads` (by host name) until all of them are done or `duration`
/// has passed. Returns one report per node, in topology order; the
/// counters cover the measured part only.
pub fn run(
    topology: &Topology,
    warmup: Duration,
    duration: Duration,
    workloads: BTreeMap<String, WorkloadFactory>,
) -> Result<Vec<HostReport>, BuildError> {
    run_with(topology, warmup, duration, workloads, RunOptions::default())
}

/// [`run`] with options: tracing the hosts' probes.
pub fn run_with(
    topology: &Topology,
    warmup: Duration,
    duration: Duration,
    mut workloads: BTreeMap<String, WorkloadFactory>,
    options: RunOptions,
) -> Result<Vec<HostReport>, BuildError> {
    let mut builder = NetworkBuilder::new(topology, options.pcap_dir.as_deref())?;
    let nodes = topology.nodes().len();
    let start = Arc::new(Barrier::new(nodes));
    let measure = Arc::new(Barrier::new(nodes));
    // Workloads still running; the run ends when none is.
    let with_work = topology
        .nodes()
        .iter()
        .filter(|n| workloads.contains_key(&n.name))
        .count();
    let running = Arc::new(AtomicUsize::new(with_work));
    let mut threads = Vec::with_capacity(nodes);
    for index in 0..nodes {
        let interfaces = builder.interfaces(topology, index);
        let topology = topology.clone();
        let name = topology.nodes()[index].name.clone();
        let factory = workloads.remove(&name);
        let has_work = factory.is_some();
        let (start, measure) = (Arc::clone(&start), Arc::clone(&measure));
        let running = Arc::clone(&running);
        let trace_capacity = options.trace_capacity;
        threads.push(std::thread::spawn(move || {
            if let Some(capacity) = trace_capacity {
                probe::init_thread(capacity);
            }
            let host = build_host(&topology, index, interfaces);
            // Every thread reaches the barriers, even one whose host failed
            // to build, so the others are not left waiting.
            start.wait();
            let clock = std::time::Instant::now();
            let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
            // A panic in warm-up must not leave the other threads waiting
            // at the barrier: catch it, pass the barrier, then re-raise.
            let warmed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut host = host?;
                host.set_wall_clock(move || Instant::from_nanos(clock.elapsed().as_nanos() as u64));
                while clock.elapsed() < warmup {
                    host.poll(now());
                    std::thread::yield_now();
                }
                let workload = factory.map(|f| f(&mut host));
                Ok((host, workload))
            }));
            measure.wait();
            let (mut host, mut workload) = match warmed {
                Ok(Ok(ready)) => ready,
                failed => {
                    // This host's workload will never finish: do not make
                    // the others wait for it.
                    if has_work {
                        running.fetch_sub(1, Ordering::Relaxed);
                    }
                    match failed {
                        Ok(Err(error)) => return Err(error),
                        Err(panic) => std::panic::resume_unwind(panic),
                        Ok(Ok(_)) => unreachable!(),
                    }
                }
            };
            if trace_capacity.is_some() {
                probe::reset_thread();
            }
            let drops_before = host.drops().clone();
            let before = *host.counters();
            let began = clock.elapsed();
            let mut polls = 0u64;
            let mut seen = host.counters().packets_moved();
            let mut last_active = clock.elapsed();
            while clock.elapsed() < warmup + duration && running.load(Ordering::Relaxed) > 0 {
                let t = now();
                if let Some(work) = workload.as_mut() {
                    if work(&mut host, t) == Progress::Done {
                        workload = None;
                        running.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                host.poll(t);
                polls += 1;
                let moved = host.counters().packets_moved();
                if moved != seen || host.next_deadline(t).is_some_and(|d| d <= t) {
                    seen = moved;
                    last_active = clock.elapsed();
                } else if clock.elapsed() - last_active > SPIN_BEFORE_NAP {
                    std::thread::sleep(NAP);
                } else if workload.is_none() {
                    std::thread::yield_now();
                }
            }
            Ok(HostReport {
                name: host.name().to_string(),
                counters: counters_since(&before, host.counters()),
                drops: host
                    .drops()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v - drops_before.get(k).copied().unwrap_or(0)))
                    .filter(|(_, v)| *v > 0)
                    .collect(),
                polls,
                elapsed: clock.elapsed() - began,
                trace: trace_capacity.map(|_| ThreadTrace {
                    thread: probe::thread_id(),
                    records: probe::drain_thread(),
                    dropped: probe::dropped(),
                }),
            })
        }));
    }
    threads
        .into_iter()
        .map(|t| t.join().expect("a host thread panicked"))
        .collect()
}

/// A host that has moved no packet and has nothing due for this long naps
/// between polls instead of spinning: with more hosts than CPUs, spinning
/// hosts take each other's time slices (milliseconds each), and a round
/// trip through three threads on two CPUs took 8 ms instead of 0.4.
const SPIN_BEFORE_NAP: Duration = Duration::from_micros(50);
/// One nap (the kernel's timer slack adds about 50 us).
const NAP: Duration = Duration::from_micros(20);

/// The counters accumulated between two readings.
fn counters_since(before: &HostCounters, after: &HostCounters) -> HostCounters {
    macro_rules! delta {
        ($($field:ident),*) => {
            HostCounters { $($field: after.$field - before.$field),* }
        };
    }
    delta!(
        ipv6_received,
        ipv6_delivered,
        ipv6_sent,
        ipv6_forwarded,
        ipv6_fragments_sent,
        ipv4_received,
        ipv4_delivered,
        ipv4_sent,
        ipv4_forwarded,
        ipv4_fragments_sent,
        icmpv6_errors_sent,
        icmpv4_errors_sent,
        icmp_errors_suppressed,
        echo_replies_sent,
        router_advertisements_sent,
        redirects_sent,
        udp_received,
        udp_sent,
        link_received,
        link_sent,
        tcp_received,
        tcp_sent,
        tcp_resets_sent
    )
}
