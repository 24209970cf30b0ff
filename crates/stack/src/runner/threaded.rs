//! The threaded runner: a thread per host on the real clock (DESIGN.md,
//! "Runners"), for measurement. Hosts share nothing but their wires (lock-
//! free queues); each thread polls its host, running an optional workload
//! (a traffic source or sink) before every poll. A run ends when every
//! workload says it is done, or at its time limit.
//!
//! A thread with nothing to do blocks (see [`wake`](super::wake)) until a
//! frame is pushed towards its host, the host's next deadline (timers,
//! frames still on a rate-limited wire), its workload's next event, or a
//! wake from another host's workload ([`wake_peers`]). In [`Poll::Spin`]
//! (the default) it first keeps polling for a moment, so a reply that
//! comes quickly costs no wake-up; in [`Poll::Block`] it blocks at once,
//! so its CPU time is the work it did.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Duration;

use super::exchange::{Exchanges, Marks};
use super::idle::Idle;
pub use super::idle::{SPIN_BEFORE_BLOCK, WAKE_AHEAD_MAX, WAKE_AHEAD_MIN};
use super::wake::{self, HostWaker};
use super::{build_host, BuildError, NetworkBuilder};
use crate::iface::host::{Host, HostCounters};
use crate::time::Instant;
use crate::topology::Topology;

/// Whether a workload has more to do, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More to do: run it again when a frame arrives, a host timer is due,
    /// another host's workload calls [`wake_peers`], or at `next` (the
    /// workload's own event: a paced send, a time-out); `next` at or
    /// before now runs it again at once.
    Running { next: Option<Instant> },
    /// Finished; the host keeps being polled (so it can still answer its
    /// peers) until every workload is done.
    Done,
}

impl Progress {
    /// Running, with no event of its own: only traffic wakes it.
    pub const WAITING: Progress = Progress::Running { next: None };

    /// Running, due again at `now + after`.
    pub fn after(now: Instant, after: Duration) -> Self {
        Progress::Running {
            next: Some(now + after),
        }
    }

    /// Running, due again at `when` on the workload's own clock
    /// (`std::time::Instant`), with `now` the runner's time.
    pub fn at(now: Instant, when: std::time::Instant) -> Self {
        Self::after(
            now,
            when.saturating_duration_since(std::time::Instant::now()),
        )
    }

    /// The workload's own next event, if it is running and has one.
    pub fn next(self) -> Option<Instant> {
        match self {
            Progress::Running { next } => next,
            Progress::Done => None,
        }
    }

    /// Running if either is, due at the earlier of their events.
    pub fn and(self, other: Progress) -> Progress {
        match (self, other) {
            (Progress::Done, p) | (p, Progress::Done) => p,
            (Progress::Running { next: a }, Progress::Running { next: b }) => Progress::Running {
                next: earliest(a, b),
            },
        }
    }
}

pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Work a host's thread does before each poll, at `now`: queue traffic,
/// drain sockets. Built on the host's thread (hosts are not `Send`), from
/// the host itself.
pub type Workload = Box<dyn FnMut(&mut Host, Instant) -> Progress + Send>;

/// Makes a host's workload once the host exists on its thread.
pub type WorkloadFactory = Box<dyn FnOnce(&mut Host) -> Workload + Send>;

/// How a host's thread waits when it has nothing to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Poll {
    /// Keep polling for [`SPIN_BEFORE_BLOCK`] after the last packet moved,
    /// then block: the lowest latency, but the spinning is CPU time, so
    /// "% of wall" is not load.
    #[default]
    Spin,
    /// Block as soon as there is nothing to do: CPU time is the work done
    /// plus the wake-ups, so "% of wall" means load.
    Block,
}

impl Poll {
    /// How reports name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Poll::Spin => "spin-then-block",
            Poll::Block => "block",
        }
    }
}

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
    /// How the thread waited ([`RunOptions::poll`]).
    pub poll: Poll,
    /// Times the thread blocked in the measured part, and for how long.
    pub blocks: u64,
    pub blocked: Duration,
    /// Timed blocks that ended after the deadline they were for, so the
    /// host saw it late, and the latest by how much (the head start
    /// before a timed deadline follows the machine's wake-ups; these
    /// outran it).
    pub late_wakes: u64,
    pub latest_late_wake: Duration,
    /// Blocks of this thread that began or ended while a measured
    /// request/response exchange was in flight ([`exchange_begins`]).
    pub naps_in_exchanges: u64,
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
    /// How idle host threads wait.
    pub poll: Poll,
}

thread_local! {
    /// The wakers of the run's other hosts, for [`wake_peers`].
    static PEERS: RefCell<Vec<Arc<HostWaker>>> = const { RefCell::new(Vec::new()) };
    /// This host thread's exchange marks ([`awaiting`], [`exchange_begins`]).
    static MARKS: RefCell<Option<Marks>> = const { RefCell::new(None) };
}

/// Says whether the calling host's workload awaits answers: it is in a
/// series of request/response exchanges, from before its first request
/// to after its last answer. While any host of the run awaits, no host
/// thread blocks in [`Poll::Spin`] (each keeps polling, yielding the CPU
/// between polls), so no exchange waits for a thread to wake; the first
/// `awaiting(true)` of a host wakes every thread of the run. The runner
/// clears it when the workload is done. Does nothing outside a threaded
/// run.
pub fn awaiting(on: bool) {
    let woke = MARKS.with(|m| m.borrow().as_ref().is_some_and(|m| m.set_awaiting(on)));
    if woke {
        wake_peers();
    }
}

/// A measured exchange begins on the calling host (its request is
/// offered): a block of any host thread of the run that begins or ends
/// before [`exchange_ends`] is counted as a nap in an exchange
/// ([`HostReport::naps_in_exchanges`], [`naps_in_exchanges`]). Does
/// nothing outside a threaded run.
pub fn exchange_begins() {
    MARKS.with(|m| {
        if let Some(m) = m.borrow().as_ref() {
            m.set_in_flight(true);
        }
    });
}

/// The calling host's measured exchange is over (its answer is in).
pub fn exchange_ends() {
    MARKS.with(|m| {
        if let Some(m) = m.borrow().as_ref() {
            m.set_in_flight(false);
        }
    });
}

/// Naps in exchanges over the calling host's run so far, every thread's
/// (a block still going on is counted when it ends); `None` outside a
/// threaded run.
pub fn naps_in_exchanges() -> Option<u64> {
    MARKS.with(|m| m.borrow().as_ref().map(|m| m.run().naps()))
}

/// Wakes every other host thread of the calling host's run: a workload
/// calls it after changing state that another host's workload waits for
/// without a frame to carry it (shared atomics, a stop flag). Does
/// nothing outside a threaded run.
pub fn wake_peers() {
    PEERS.with(|peers| peers.borrow().iter().for_each(|p| p.wake()));
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

/// [`run`] with options: tracing the hosts' probes, how idle threads wait.
pub fn run_with(
    topology: &Topology,
    warmup: Duration,
    duration: Duration,
    mut workloads: BTreeMap<String, WorkloadFactory>,
    options: RunOptions,
) -> Result<Vec<HostReport>, BuildError> {
    let nodes = topology.nodes().len();
    let hubs = topology.hubs().len();
    // Hosts' wakers, then hubs'.
    let wakers: Arc<[Arc<HostWaker>]> = (0..nodes + hubs).map(|_| HostWaker::new()).collect();
    let link_wakers: Vec<_> = wakers.iter().map(|w| w.waker()).collect();
    let mut builder =
        NetworkBuilder::with_wakers(topology, options.pcap_dir.as_deref(), &link_wakers)?;
    let start = Arc::new(Barrier::new(nodes + hubs));
    let measure = Arc::new(Barrier::new(nodes + hubs));
    // Workloads still running; the run ends when none is.
    let with_work = topology
        .nodes()
        .iter()
        .filter(|n| workloads.contains_key(&n.name))
        .count();
    let running = Arc::new(AtomicUsize::new(with_work));
    let epoch = Arc::new(OnceLock::new());
    let exchanges = Exchanges::new();
    let hub_threads: Vec<_> = (0..hubs)
        .map(|index| {
            let hub = builder.hub(topology, index);
            let run = HubRun {
                waker: Arc::clone(&wakers[nodes + index]),
                start: Arc::clone(&start),
                measure: Arc::clone(&measure),
                epoch: Arc::clone(&epoch),
                running: Arc::clone(&running),
                exchanges: Arc::clone(&exchanges),
                spin: options.poll == Poll::Spin,
                warmup,
                end: warmup + duration,
            };
            std::thread::spawn(move || run.repeat(hub))
        })
        .collect();
    let mut threads = Vec::with_capacity(nodes);
    for index in 0..nodes {
        let interfaces = builder.interfaces(topology, index);
        let topology = topology.clone();
        let name = topology.nodes()[index].name.clone();
        let factory = workloads.remove(&name);
        let has_work = factory.is_some();
        let (start, measure) = (Arc::clone(&start), Arc::clone(&measure));
        let running = Arc::clone(&running);
        let wakers = Arc::clone(&wakers);
        let epoch = Arc::clone(&epoch);
        let exchanges = Arc::clone(&exchanges);
        let trace_capacity = options.trace_capacity;
        let mode = options.poll;
        threads.push(std::thread::spawn(move || {
            wakers[index].register();
            wake::precise_timers();
            PEERS.with(|peers| {
                *peers.borrow_mut() = (wakers.iter().enumerate())
                    .filter(|&(i, _)| i != index)
                    .map(|(_, w)| Arc::clone(w))
                    .collect();
            });
            MARKS.with(|m| *m.borrow_mut() = Some(Marks::new(Arc::clone(&exchanges))));
            // The last workload to finish wakes every thread to end.
            let finished = || {
                if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                    wakers.iter().for_each(|w| w.wake());
                }
            };
            if let Some(capacity) = trace_capacity {
                probe::init_thread(capacity);
            }
            let host = build_host(&topology, index, interfaces);
            // Every thread reaches the barriers, even one whose host failed
            // to build, so the others are not left waiting.
            start.wait();
            // One clock for every thread, started by the first past the
            // barrier: a wire stamps a frame's arrival with the sender's
            // clock and the receiver compares it with its own, so threads
            // whose clocks started apart (a late wake from the barrier)
            // would hold every frame back by the difference.
            let clock = *epoch.get_or_init(std::time::Instant::now);
            let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
            // A panic in warm-up must not leave the other threads waiting
            // at the barrier: catch it, pass the barrier, then re-raise.
            let warmed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut host = host?;
                host.set_wall_clock(move || Instant::from_nanos(clock.elapsed().as_nanos() as u64));
                let warm_end = Instant::from_nanos(warmup.as_nanos() as u64);
                let mut idle = Idle::new(Poll::Block, &host, Arc::clone(&exchanges));
                while clock.elapsed() < warmup {
                    let t = now();
                    host.poll(t);
                    idle.after_poll(&host, t, None, warm_end, now);
                }
                let workload = factory.map(|f| f(&mut host));
                Ok((host, workload, idle.wake_ahead))
            }));
            measure.wait();
            let (mut host, mut workload, wake_ahead) = match warmed {
                Ok(Ok(ready)) => ready,
                failed => {
                    // This host's workload will never finish: do not make
                    // the others wait for it.
                    if has_work {
                        finished();
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
            let end = Instant::from_nanos((warmup + duration).as_nanos() as u64);
            let mut polls = 0u64;
            // With the head start the warm-up learnt.
            let mut idle = Idle::new(mode, &host, Arc::clone(&exchanges));
            idle.wake_ahead = wake_ahead;
            while clock.elapsed() < warmup + duration && running.load(Ordering::Acquire) > 0 {
                let t = now();
                let mut next_work = None;
                if let Some(work) = workload.as_mut() {
                    match work(&mut host, t) {
                        Progress::Done => {
                            workload = None;
                            // A workload that stopped mid-series (failed)
                            // must not keep the run awake.
                            MARKS.with(|m| m.borrow().as_ref().map(Marks::clear));
                            finished();
                        }
                        Progress::Running { next } => next_work = next,
                    }
                }
                host.poll(t);
                polls += 1;
                idle.after_poll(&host, t, next_work, end, now);
            }
            PEERS.with(|peers| peers.borrow_mut().clear());
            MARKS.with(|m| m.borrow_mut().take());
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
                poll: mode,
                blocks: idle.blocks,
                blocked: idle.blocked,
                late_wakes: idle.late_wakes,
                latest_late_wake: idle.latest_late,
                naps_in_exchanges: idle.naps_in_exchanges,
                trace: trace_capacity.map(|_| ThreadTrace {
                    thread: probe::thread_id(),
                    records: probe::drain_thread(),
                    dropped: probe::dropped(),
                }),
            })
        }));
    }
    let reports = threads
        .into_iter()
        .map(|t| t.join().expect("a host thread panicked"))
        .collect();
    for hub in hub_threads {
        hub.join().expect("a hub thread panicked");
    }
    reports
}

/// What a hub's thread shares with the run: it passes the same barriers
/// and reads the same clock as the hosts' threads, and ends with them.
struct HubRun {
    waker: Arc<HostWaker>,
    start: Arc<Barrier>,
    measure: Arc<Barrier>,
    epoch: Arc<OnceLock<std::time::Instant>>,
    running: Arc<AtomicUsize>,
    exchanges: Arc<Exchanges>,
    /// [`Poll::Spin`]: polls instead of blocking while a host awaits.
    spin: bool,
    warmup: Duration,
    end: Duration,
}

impl HubRun {
    /// Repeats frames through warm-up and the measured part, blocking
    /// until a frame is pushed towards a port or the next one arrives —
    /// polling instead while a host awaits an answer, as host threads do.
    fn repeat(self, mut hub: crate::phy::Hub) {
        self.waker.register();
        wake::precise_timers();
        self.start.wait();
        let clock = *self.epoch.get_or_init(std::time::Instant::now);
        let exchanges = &self.exchanges;
        let repeat_until = |hub: &mut crate::phy::Hub, until: Duration, stop: &dyn Fn() -> bool| {
            let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
            while clock.elapsed() < until && !stop() {
                hub.poll(now());
                let left = until.saturating_sub(clock.elapsed());
                let wait = hub
                    .next_deadline()
                    .map_or(left, |next| next.saturating_duration_since(now()))
                    .min(left);
                if wait.is_zero() {
                    continue;
                }
                if self.spin && exchanges.awaiting() {
                    std::thread::yield_now();
                    continue;
                }
                let overlapped = exchanges.in_flight();
                wake::park(Some(wait));
                if overlapped || exchanges.in_flight() {
                    exchanges.count_nap();
                }
            }
        };
        repeat_until(&mut hub, self.warmup, &|| false);
        self.measure.wait();
        // The last workload to finish wakes every thread, this one too.
        let running = &self.running;
        repeat_until(&mut hub, self.end, &|| running.load(Ordering::Acquire) == 0);
    }
}

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
        tcp_resets_sent,
        tcp_mss_clamped,
        looped_back
    )
}
