//! The Neighbour Cache (RFC 4861 §5.1) with Neighbor Unreachability
//! Detection (§7.3), as a pure state machine.
//!
//! The cache never sends, never reads a clock and never sleeps: every input
//! is an event carrying `now` ([`NeighborCache::lookup`] for a packet to
//! send, `on_*` for received Neighbor Discovery messages and upper-layer
//! hints, [`NeighborCache::poll`] for timers), and every output is a value
//! the interface layer acts on ([`Resolution`], [`Action`]). The runner
//! sleeps until [`NeighborCache::next_deadline`].
//!
//! It is generic over the protocol address `A` (`Ipv6Addr` for ND, and
//! `Ipv4Addr` so ARP can reuse the machinery), the link-layer address `L`
//! (`EthernetAddress`) and the packet `P` (`buffer::Packet`; tests use plain
//! values).
//!
//! # States (RFC 4861 §7.3.2)
//!
//! Each entry (NCE) is one `State`-with-data: INCOMPLETE holds the queue of
//! packets waiting for resolution and the number of multicast solicitations
//! sent; REACHABLE, STALE, DELAY and PROBE hold the link-layer address, the
//! timed ones their deadline, PROBE the unicast probes sent. "Unreachable"
//! is not a state: the entry is deleted and [`Action::Unreachable`] hands
//! back its queued packets so the caller can answer each with an ICMPv6
//! Destination Unreachable, code 3 (§7.2.2).
//!
//! # Memory bound
//!
//! At most `capacity` entries, each with at most `max_queued_per_entry`
//! packets: memory is bounded by `capacity × (entry + max_queued packets)`
//! whatever arrives (§11.1: a flood of packets or solicitations for unknown
//! addresses must not grow the cache). Slots, the index and each queue are
//! allocated at their bound once and never grow.
//!
//! # Eviction policy (RFC 4861 §7.3.4 leaves garbage collection local)
//!
//! Entries live on one of two LRU lists:
//!
//! * **unconfirmed** — INCOMPLETE and STALE: nothing has shown the neighbour
//!   reachable recently, and both are what an attacker can create at will
//!   (packets to unknown addresses create INCOMPLETE entries; solicitations
//!   with a source link-layer address create STALE ones);
//! * **confirmed / in use** — REACHABLE, DELAY and PROBE.
//!
//! When the cache is full, a new entry evicts the least recently used
//! *unconfirmed* entry, and only if there is none the least recently used
//! entry overall. So a flood of distinct unknown destinations (or of
//! solicitations from forged sources) churns among the flood's own entries
//! and leaves the neighbours in active use alone. An evicted INCOMPLETE
//! entry's queued packets are returned ([`Evicted`]) for the caller to
//! release or report.
//!
//! "Use" for the LRU order is: creating the entry, sending through it
//! ([`NeighborCache::lookup`]), and it becoming REACHABLE; an entry moving
//! from one list to the other enters it as most recently used.
//!
//! # Timers
//!
//! Every timed state keeps an absolute deadline. A timer that fires
//! schedules its successor from the `now` it fired at, so a late poll never
//! sends a burst of catch-up solicitations; [`NeighborCache::poll`] fires
//! every deadline at or before `now`, so after it returns every remaining
//! deadline is later than `now`.

use crate::random::SplitMix64;
use core::fmt;
use core::hash::Hash;
use core::time::Duration;
use std::collections::VecDeque;

use crate::hash::FastMap;
use crate::time::Instant;

/// RFC 4861 §10 REACHABLE_TIME: the default BaseReachableTime.
pub const REACHABLE_TIME: Duration = Duration::from_secs(30);
/// RFC 4861 §10 RETRANS_TIMER.
pub const RETRANS_TIMER: Duration = Duration::from_secs(1);
/// RFC 4861 §10 DELAY_FIRST_PROBE_TIME.
pub const DELAY_FIRST_PROBE_TIME: Duration = Duration::from_secs(5);
/// RFC 4861 §10 MAX_MULTICAST_SOLICIT.
pub const MAX_MULTICAST_SOLICIT: u32 = 3;
/// RFC 4861 §10 MAX_UNICAST_SOLICIT.
pub const MAX_UNICAST_SOLICIT: u32 = 3;

/// Parameters of a [`NeighborCache`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborConfig {
    /// Most entries the cache holds (LRU bound). At least 1.
    pub capacity: usize,
    /// Most packets queued per INCOMPLETE entry; RFC 4861 §7.2.2: the queue
    /// MUST hold at least one packet, so 0 counts as 1.
    pub max_queued_per_entry: usize,
    /// BaseReachableTime (RFC 4861 §6.3.2; §10 REACHABLE_TIME).
    pub reachable_time: Duration,
    /// Seed for the ReachableTime randomization of RFC 4861 §6.3.2: with a
    /// seed, ReachableTime is drawn uniformly from
    /// [MIN_RANDOM_FACTOR, MAX_RANDOM_FACTOR) = [0.5, 1.5) × BaseReachableTime,
    /// the same seed giving the same draws; `None` uses BaseReachableTime
    /// unchanged.
    pub random_seed: Option<u64>,
    /// RetransTimer (RFC 4861 §6.3.2; §10 RETRANS_TIMER).
    pub retrans_timer: Duration,
    /// Multicast solicitations before resolution fails (§10); at least 1.
    pub max_multicast_solicit: u32,
    /// Unicast probes before NUD gives up (§10); at least 1.
    pub max_unicast_solicit: u32,
    /// Time in DELAY before the first probe (§10 DELAY_FIRST_PROBE_TIME).
    pub delay_first_probe_time: Duration,
}

impl Default for NeighborConfig {
    fn default() -> Self {
        Self {
            capacity: 256,
            // A 65 527-byte UDP datagram is 46 fragments at MTU 1500: all
            // of them wait for resolution, not just the last three (RFC 4861
            // §7.2.2 asks for at least one; Linux keeps 212 992 bytes).
            max_queued_per_entry: 48,
            reachable_time: REACHABLE_TIME,
            random_seed: None,
            retrans_timer: RETRANS_TIMER,
            max_multicast_solicit: MAX_MULTICAST_SOLICIT,
            max_unicast_solicit: MAX_UNICAST_SOLICIT,
            delay_first_probe_time: DELAY_FIRST_PROBE_TIME,
        }
    }
}

impl NeighborConfig {
    /// The configuration with every lower bound applied.
    fn normalized(mut self) -> Self {
        self.capacity = self.capacity.max(1);
        self.max_queued_per_entry = self.max_queued_per_entry.max(1);
        self.max_multicast_solicit = self.max_multicast_solicit.max(1);
        self.max_unicast_solicit = self.max_unicast_solicit.max(1);
        self
    }
}

/// The reachability state of an entry (RFC 4861 §7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NeighborState {
    /// Address resolution in progress: a multicast NS was sent, no answer yet.
    Incomplete,
    /// Positive confirmation within the last ReachableTime.
    Reachable,
    /// Not known reachable; nothing is done until traffic is sent.
    Stale,
    /// Traffic was sent to a STALE entry; waiting for upper-layer
    /// confirmation before probing.
    Delay,
    /// Unicast probes in progress.
    Probe,
}

impl NeighborState {
    /// Every state, in [`NeighborState::index`] order.
    pub const ALL: [NeighborState; 5] = [
        NeighborState::Incomplete,
        NeighborState::Reachable,
        NeighborState::Stale,
        NeighborState::Delay,
        NeighborState::Probe,
    ];

    /// Position in [`NeighborState::ALL`] (and in
    /// [`NeighborCounters::transitions`]).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The RFC's name, as the state dump prints it.
    pub const fn name(self) -> &'static str {
        match self {
            NeighborState::Incomplete => "INCOMPLETE",
            NeighborState::Reachable => "REACHABLE",
            NeighborState::Stale => "STALE",
            NeighborState::Delay => "DELAY",
            NeighborState::Probe => "PROBE",
        }
    }
}

impl fmt::Display for NeighborState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The flags of a received Neighbor Advertisement (RFC 4861 §4.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdvertisementFlags {
    /// R: the sender is a router.
    pub router: bool,
    /// S: sent in response to a Neighbor Solicitation.
    pub solicited: bool,
    /// O: the advertisement should override a cached link-layer address.
    pub override_: bool,
}

/// What [`NeighborCache::lookup`] decided for an outgoing packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<A, L, P> {
    /// Transmit `packet` to `lladdr` now (REACHABLE, STALE, DELAY, PROBE).
    Send { lladdr: L, packet: P },
    /// The packet joined the queue of a resolution in progress
    /// (INCOMPLETE). `dropped` is the oldest queued packet it displaced when
    /// the queue was full (§7.2.2), for the caller to release.
    Queued { dropped: Option<P> },
    /// A new INCOMPLETE entry holds the packet: the caller sends a multicast
    /// Neighbor Solicitation for the target now (§7.2.2). `evicted` is the
    /// entry the LRU bound displaced to make room, if any.
    Solicit { evicted: Option<Evicted<A, P>> },
}

/// An entry removed to make room for another (LRU bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evicted<A, P> {
    pub target: A,
    pub state: NeighborState,
    pub is_router: bool,
    /// Packets it had queued awaiting resolution (INCOMPLETE only).
    pub packets: VecDeque<P>,
}

/// Work for the interface layer, returned by the event methods and
/// [`NeighborCache::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action<A, L, P> {
    /// Send a Neighbor Solicitation for `target`: to its solicited-node
    /// multicast address when `unicast_to` is `None` (address resolution,
    /// §7.2.2), otherwise unicast to the cached link-layer address (NUD
    /// probe, §7.3.3).
    SendSolicitation { target: A, unicast_to: Option<L> },
    /// Resolution completed: transmit `packets`, in the order they were
    /// queued, to `lladdr` (§7.2.2, §7.2.5).
    Transmit {
        target: A,
        lladdr: L,
        packets: VecDeque<P>,
    },
    /// Resolution failed (INCOMPLETE after MAX_MULTICAST_SOLICIT
    /// solicitations) or NUD gave up (PROBE after MAX_UNICAST_SOLICIT
    /// probes): the entry is deleted. The caller answers each of `packets`
    /// with an ICMPv6 Destination Unreachable, code 3 (§7.2.2), and, for a
    /// router, treats it as unreachable for default router selection
    /// (§6.3.6).
    Unreachable {
        target: A,
        is_router: bool,
        packets: VecDeque<P>,
    },
    /// The entry was evicted to make room (LRU bound).
    Evicted(Evicted<A, P>),
    /// The IsRouter flag went from TRUE to FALSE: the caller MUST remove the
    /// neighbour from the Default Router List and update the Destination
    /// Cache entries that used it (§7.2.5).
    RouterLost { target: A },
}

/// What the cache has done, for the state dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NeighborCounters {
    /// Entries created.
    pub created: u64,
    /// Entries evicted by the LRU bound.
    pub evictions: u64,
    /// Queued packets handed back by evictions.
    pub evicted_packets: u64,
    /// Packets dropped because an INCOMPLETE queue was full (§7.2.2).
    pub queue_overflows: u64,
    /// Address resolutions that failed (INCOMPLETE timed out).
    pub resolutions_failed: u64,
    /// Entries deleted by NUD (PROBE timed out).
    pub unreachable: u64,
    /// Multicast solicitations asked for (address resolution).
    pub multicast_solicitations: u64,
    /// Unicast solicitations asked for (NUD probes).
    pub unicast_solicitations: u64,
    /// Queued packets released for transmission on resolution.
    pub packets_flushed: u64,
    /// Neighbor Advertisements discarded or ignored by §7.2.5.
    pub advertisements_ignored: u64,
    /// Changes of state of an existing entry, by the state entered
    /// (indexed by [`NeighborState::index`]).
    pub transitions: [u64; 5],
}

impl NeighborCounters {
    /// Transitions into `state`.
    pub fn transitions_to(&self, state: NeighborState) -> u64 {
        self.transitions[state.index()]
    }
}

/// One entry as the state dump shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryView<A, L> {
    pub addr: A,
    pub state: NeighborState,
    /// `None` only while INCOMPLETE.
    pub lladdr: Option<L>,
    pub is_router: bool,
    /// Solicitations sent in the current INCOMPLETE or PROBE state.
    pub probes_sent: u32,
    /// When the entry's timer fires; `None` in STALE.
    pub deadline: Option<Instant>,
    /// Packets queued awaiting resolution.
    pub queued: usize,
}

impl<A, L> EntryView<A, L> {
    /// Time until the entry's timer fires, zero if due.
    pub fn time_left(&self, now: Instant) -> Option<Duration> {
        self.deadline.map(|deadline| deadline - now)
    }
}

/// An entry's state with the data that state needs (RFC 4861 §7.3.2).
#[derive(Debug)]
enum State<L, P> {
    Incomplete {
        queue: VecDeque<P>,
        /// Multicast solicitations sent so far.
        sent: u32,
        /// When to retransmit, or fail.
        deadline: Instant,
    },
    Reachable {
        lladdr: L,
        /// When ReachableTime has passed without confirmation.
        deadline: Instant,
    },
    Stale {
        lladdr: L,
    },
    Delay {
        lladdr: L,
        /// When to start probing.
        deadline: Instant,
    },
    Probe {
        lladdr: L,
        /// Unicast probes sent so far.
        sent: u32,
        /// When to retransmit, or give up.
        deadline: Instant,
    },
}

impl<L: Copy, P> State<L, P> {
    fn kind(&self) -> NeighborState {
        match self {
            State::Incomplete { .. } => NeighborState::Incomplete,
            State::Reachable { .. } => NeighborState::Reachable,
            State::Stale { .. } => NeighborState::Stale,
            State::Delay { .. } => NeighborState::Delay,
            State::Probe { .. } => NeighborState::Probe,
        }
    }

    fn lladdr(&self) -> Option<L> {
        match self {
            State::Incomplete { .. } => None,
            State::Reachable { lladdr, .. }
            | State::Stale { lladdr }
            | State::Delay { lladdr, .. }
            | State::Probe { lladdr, .. } => Some(*lladdr),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self {
            State::Stale { .. } => None,
            State::Incomplete { deadline, .. }
            | State::Reachable { deadline, .. }
            | State::Delay { deadline, .. }
            | State::Probe { deadline, .. } => Some(*deadline),
        }
    }

    fn probes_sent(&self) -> u32 {
        match self {
            State::Incomplete { sent, .. } | State::Probe { sent, .. } => *sent,
            _ => 0,
        }
    }

    fn queued(&self) -> usize {
        match self {
            State::Incomplete { queue, .. } => queue.len(),
            _ => 0,
        }
    }

    /// Which LRU list the state belongs on (see the module docs).
    fn tier(&self) -> Tier {
        match self {
            State::Incomplete { .. } | State::Stale { .. } => Tier::Unconfirmed,
            State::Reachable { .. } | State::Delay { .. } | State::Probe { .. } => Tier::Confirmed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Unconfirmed = 0,
    Confirmed = 1,
}

const NIL: usize = usize::MAX;

/// A slot of the cache: the entry and its links in its LRU list.
#[derive(Debug)]
struct Node<A, L, P> {
    addr: A,
    is_router: bool,
    state: State<L, P>,
    tier: Tier,
    /// Towards the most recently used end.
    prev: usize,
    /// Towards the least recently used end.
    next: usize,
}

/// Ends of an intrusive LRU list.
#[derive(Debug, Clone, Copy)]
struct List {
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
}

const EMPTY_LIST: List = List {
    head: NIL,
    tail: NIL,
};

/// How an event sets the IsRouter flag.
#[derive(Debug, Clone, Copy)]
enum RouterUpdate {
    /// Leave it (FALSE on a new entry).
    Keep,
    Set(bool),
}

/// The neighbour cache of one interface: a bounded map from protocol
/// address to [`NeighborState`]-with-data, driven by events and `now`.
#[derive(Debug)]
pub struct NeighborCache<A, L, P> {
    config: NeighborConfig,
    /// ReachableTime: BaseReachableTime, randomized (§6.3.2).
    reachable_time: Duration,
    /// splitmix64 state for the randomization.
    rng: SplitMix64,
    index: FastMap<A, usize>,
    slots: Vec<Option<Node<A, L, P>>>,
    free: Vec<usize>,
    lists: [List; 2],
    counters: NeighborCounters,
    /// Bumped whenever an entry is created, changes state (its link-layer
    /// address lives in the state) or goes: a path cached from the cache
    /// ([`generation`](Self::generation)) is current while it is unchanged.
    generation: u64,
}

impl<A, L, P> NeighborCache<A, L, P>
where
    A: Copy + Eq + Hash,
    L: Copy + Eq,
{
    pub fn new(config: NeighborConfig) -> Self {
        let config = config.normalized();
        let capacity = config.capacity;
        let mut cache = Self {
            reachable_time: config.reachable_time,
            rng: SplitMix64::new(config.random_seed.unwrap_or(0)),
            config,
            index: FastMap::with_capacity_and_hasher(capacity, Default::default()),
            slots: Vec::with_capacity(capacity),
            free: Vec::with_capacity(capacity),
            lists: [EMPTY_LIST; 2],
            counters: NeighborCounters::default(),
            generation: 0,
        };
        cache.rerandomize_reachable_time();
        cache
    }

    /// The configuration in force (with its lower bounds applied).
    pub fn config(&self) -> &NeighborConfig {
        &self.config
    }

    /// ReachableTime: how long an entry stays REACHABLE after a
    /// confirmation.
    pub fn reachable_time(&self) -> Duration {
        self.reachable_time
    }

    /// A new BaseReachableTime, from a Router Advertisement's nonzero
    /// Reachable Time field; ReachableTime is redrawn (§6.3.4).
    pub fn set_base_reachable_time(&mut self, base: Duration) {
        self.config.reachable_time = base;
        self.rerandomize_reachable_time();
    }

    /// A new RetransTimer, from a Router Advertisement's nonzero Retrans
    /// Timer field (§6.3.4).
    pub fn set_retrans_timer(&mut self, retrans_timer: Duration) {
        self.config.retrans_timer = retrans_timer;
    }

    /// Redraws ReachableTime from BaseReachableTime: RFC 4861 §6.3.4 asks
    /// for a new draw at least every few hours even if nothing changed.
    /// Without a seed, ReachableTime is BaseReachableTime.
    pub fn rerandomize_reachable_time(&mut self) {
        let base = self.config.reachable_time;
        self.reachable_time = match self.config.random_seed {
            None => base,
            Some(_) => {
                // factor = MIN_RANDOM_FACTOR + r (MAX - MIN), r in [0, 1):
                // base/2 + base × r, in integer nanoseconds.
                let r = u128::from(self.next_random());
                let nanos = base.as_nanos();
                let scaled = nanos / 2 + (nanos.saturating_mul(r) >> 64);
                Duration::from_nanos(u64::try_from(scaled).unwrap_or(u64::MAX))
            }
        };
    }

    fn next_random(&mut self) -> u64 {
        self.rng.next_u64()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.config.capacity
    }

    pub fn counters(&self) -> &NeighborCounters {
        &self.counters
    }

    /// A number that changes whenever any entry is created, changes state
    /// or is removed. A sender that cached what a [`lookup`](Self::lookup)
    /// returned (an entry in REACHABLE, DELAY or PROBE, which a lookup
    /// sends to without changing it, §7.3.3) may send to the same address
    /// again without a lookup while this number is the one it saw.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The entry for `addr`, if any.
    pub fn get(&self, addr: A) -> Option<EntryView<A, L>> {
        let &slot = self.index.get(&addr)?;
        self.slots[slot].as_ref().map(view)
    }

    /// Every entry, in slot order (stable for a given event sequence).
    pub fn entries(&self) -> impl Iterator<Item = EntryView<A, L>> + '_ {
        self.slots.iter().flatten().map(view)
    }

    /// The earliest timer of any entry: the runner calls
    /// [`NeighborCache::poll`] then.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.slots
            .iter()
            .flatten()
            .filter_map(|node| node.state.deadline())
            .min()
    }

    /// Deletes the entry for `addr` (administrative flush, interface down),
    /// returning any packets it had queued.
    pub fn remove(&mut self, addr: A) -> Option<VecDeque<P>> {
        let &slot = self.index.get(&addr)?;
        let node = self.unlink_and_free(slot);
        Some(into_queue(node.state))
    }

    // ----- Sending --------------------------------------------------------

    /// Resolves the next hop `addr` for `packet` (RFC 4861 §7.2.2, §7.3.3).
    pub fn lookup(&mut self, now: Instant, addr: A, packet: P) -> Resolution<A, L, P> {
        let Some(&slot) = self.index.get(&addr) else {
            // §7.2.2: no entry: create one in INCOMPLETE, queue the packet
            // and send a multicast solicitation (the caller sends the first
            // one now; poll() retransmits every RetransTimer).
            let evicted = self.make_room();
            let mut queue = VecDeque::with_capacity(self.config.max_queued_per_entry);
            queue.push_back(packet);
            let state = State::Incomplete {
                queue,
                sent: 1,
                deadline: now + self.config.retrans_timer,
            };
            self.counters.multicast_solicitations += 1;
            self.insert(addr, state, false);
            return Resolution::Solicit { evicted };
        };
        self.touch(slot);
        let max_queued = self.config.max_queued_per_entry;
        let delay = self.config.delay_first_probe_time;
        let node = node_mut(&mut self.slots, slot);
        match &mut node.state {
            State::Incomplete { queue, .. } => {
                // §7.2.2: while resolving, queue; when the queue overflows
                // the new arrival SHOULD replace the oldest entry.
                let dropped = if queue.len() >= max_queued {
                    self.counters.queue_overflows += 1;
                    queue.pop_front()
                } else {
                    None
                };
                queue.push_back(packet);
                Resolution::Queued { dropped }
            }
            State::Stale { lladdr } => {
                // §7.3.3: the first packet sent to a STALE entry moves it to
                // DELAY with a timer of DELAY_FIRST_PROBE_TIME.
                let lladdr = *lladdr;
                self.set_state(
                    slot,
                    State::Delay {
                        lladdr,
                        deadline: now + delay,
                    },
                );
                Resolution::Send { lladdr, packet }
            }
            // §7.3.3: REACHABLE, DELAY and PROBE send to the cached address
            // without changing state.
            State::Reachable { lladdr, .. }
            | State::Delay { lladdr, .. }
            | State::Probe { lladdr, .. } => Resolution::Send {
                lladdr: *lladdr,
                packet,
            },
        }
    }

    // ----- Receiving ------------------------------------------------------

    /// A Neighbor Advertisement for `target` (RFC 4861 §7.2.5), with its
    /// Target Link-Layer Address option if it had one.
    pub fn on_advertisement(
        &mut self,
        now: Instant,
        target: A,
        lladdr: Option<L>,
        flags: AdvertisementFlags,
    ) -> Vec<Action<A, L, P>> {
        let mut actions = Vec::new();
        // §7.2.5: no entry: the advertisement SHOULD be silently discarded
        // (an unsolicited NA creates nothing).
        let Some(&slot) = self.index.get(&target) else {
            self.counters.advertisements_ignored += 1;
            return actions;
        };
        let node = node_mut(&mut self.slots, slot);
        let was_router = node.is_router;
        match node.state.lladdr() {
            None => {
                // §7.2.5, INCOMPLETE: without a target link-layer address
                // the advertisement is discarded.
                let Some(new) = lladdr else {
                    self.counters.advertisements_ignored += 1;
                    return actions;
                };
                // Otherwise record the address; REACHABLE if Solicited,
                // else STALE; IsRouter from R; send the queued packets.
                node.is_router = flags.router;
                let resolved = if flags.solicited {
                    State::Reachable {
                        lladdr: new,
                        deadline: now + self.reachable_time,
                    }
                } else {
                    State::Stale { lladdr: new }
                };
                self.resolve(now, slot, resolved, &mut actions);
            }
            Some(cached) => {
                let differs = lladdr.is_some_and(|new| new != cached);
                if !flags.override_ && differs {
                    // §7.2.5 rule for Override clear with a different
                    // address: a REACHABLE entry becomes STALE but is not
                    // otherwise updated; in any other state the
                    // advertisement is ignored.
                    if node.state.kind() == NeighborState::Reachable {
                        self.set_state(slot, State::Stale { lladdr: cached });
                    } else {
                        self.counters.advertisements_ignored += 1;
                    }
                    return actions;
                }
                // §7.2.5: Override set, or no address supplied, or the same
                // address: (a) record the supplied address; (b) Solicited
                // gives REACHABLE, else a changed address gives STALE, else
                // the state is unchanged; (c) IsRouter from R.
                let lladdr = lladdr.unwrap_or(cached);
                if flags.solicited {
                    self.set_state(
                        slot,
                        State::Reachable {
                            lladdr,
                            deadline: now + self.reachable_time,
                        },
                    );
                    self.touch(slot);
                } else if differs {
                    self.set_state(slot, State::Stale { lladdr });
                }
                node_mut(&mut self.slots, slot).is_router = flags.router;
            }
        }
        // §7.2.5 (c): IsRouter going TRUE → FALSE takes the neighbour off
        // the Default Router List.
        if was_router && !flags.router {
            actions.push(Action::RouterLost { target });
        }
        actions
    }

    /// A Neighbor Solicitation from `source` (not the unspecified address:
    /// a DAD probe must not touch the cache), with its Source Link-Layer
    /// Address option if it had one (RFC 4861 §7.2.3).
    pub fn on_solicitation(
        &mut self,
        now: Instant,
        source: A,
        lladdr: Option<L>,
    ) -> Vec<Action<A, L, P>> {
        // §7.2.3: only a solicitation with a source link-layer address
        // creates or updates the entry; a new entry's IsRouter is FALSE.
        match lladdr {
            Some(lladdr) => self.learn(now, source, lladdr, RouterUpdate::Keep),
            None => Vec::new(),
        }
    }

    /// A Router Solicitation from `source` (not unspecified) (RFC 4861
    /// §6.2.6): a source link-layer address creates or updates the entry as
    /// for a Neighbor Solicitation, and the sender's IsRouter flag is set to
    /// FALSE whether or not the option was present.
    pub fn on_router_solicitation(
        &mut self,
        now: Instant,
        source: A,
        lladdr: Option<L>,
    ) -> Vec<Action<A, L, P>> {
        match lladdr {
            Some(lladdr) => self.learn(now, source, lladdr, RouterUpdate::Set(false)),
            None => self.set_router(source, false),
        }
    }

    /// A Router Advertisement from `source` (RFC 4861 §6.3.4): a source
    /// link-layer address creates or updates the entry (STALE rules of
    /// §7.3.3), and the IsRouter flag is set to TRUE, on an existing entry
    /// even without the option.
    pub fn on_router_advertisement(
        &mut self,
        now: Instant,
        source: A,
        lladdr: Option<L>,
    ) -> Vec<Action<A, L, P>> {
        match lladdr {
            Some(lladdr) => self.learn(now, source, lladdr, RouterUpdate::Set(true)),
            None => self.set_router(source, true),
        }
    }

    /// A Redirect naming `target` (RFC 4861 §8.3): a Target Link-Layer
    /// Address option creates or updates its entry (STALE rules of §7.3.3);
    /// `target_is_router` (Target Address ≠ Destination Address) sets
    /// IsRouter to TRUE, otherwise the flag is left alone. Without the
    /// option an existing entry only has its IsRouter flag updated.
    pub fn on_redirect(
        &mut self,
        now: Instant,
        target: A,
        lladdr: Option<L>,
        target_is_router: bool,
    ) -> Vec<Action<A, L, P>> {
        let router = if target_is_router {
            RouterUpdate::Set(true)
        } else {
            RouterUpdate::Keep
        };
        match (lladdr, router) {
            (Some(lladdr), router) => self.learn(now, target, lladdr, router),
            (None, RouterUpdate::Set(flag)) => self.set_router(target, flag),
            (None, RouterUpdate::Keep) => Vec::new(),
        }
    }

    /// Upper-layer reachability confirmation (RFC 4861 §7.3.1: e.g. TCP
    /// acknowledging new data): an entry with a link-layer address becomes
    /// REACHABLE for ReachableTime (Appendix C). Returns whether an entry
    /// was confirmed (INCOMPLETE and missing entries are not).
    pub fn on_reachability_confirmation(&mut self, now: Instant, addr: A) -> bool {
        let Some(&slot) = self.index.get(&addr) else {
            return false;
        };
        let Some(lladdr) = node_mut(&mut self.slots, slot).state.lladdr() else {
            return false;
        };
        self.set_state(
            slot,
            State::Reachable {
                lladdr,
                deadline: now + self.reachable_time,
            },
        );
        self.touch(slot);
        true
    }

    // ----- Timers ---------------------------------------------------------

    /// Fires every timer due at `now` (RFC 4861 §7.2.2, §7.3.3).
    pub fn poll(&mut self, now: Instant) -> Vec<Action<A, L, P>> {
        let mut actions = Vec::new();
        for slot in 0..self.slots.len() {
            // A timer of zero length re-arms at `now`; fire until every
            // deadline is in the future (each state's probe count bounds
            // this loop).
            while let Some(deadline) = self.slots[slot]
                .as_ref()
                .and_then(|node| node.state.deadline())
            {
                if deadline > now {
                    break;
                }
                self.fire(now, slot, &mut actions);
            }
        }
        actions
    }

    fn fire(&mut self, now: Instant, slot: usize, actions: &mut Vec<Action<A, L, P>>) {
        let retrans = self.config.retrans_timer;
        let max_multicast = self.config.max_multicast_solicit;
        let max_unicast = self.config.max_unicast_solicit;
        let node = node_mut(&mut self.slots, slot);
        let target = node.addr;
        match &mut node.state {
            State::Incomplete { sent, deadline, .. } => {
                if *sent < max_multicast {
                    // §7.2.2: retransmit the multicast solicitation every
                    // RetransTimer.
                    *sent += 1;
                    *deadline = now + retrans;
                    self.counters.multicast_solicitations += 1;
                    actions.push(Action::SendSolicitation {
                        target,
                        unicast_to: None,
                    });
                } else {
                    // §7.2.2: no advertisement after MAX_MULTICAST_SOLICIT
                    // solicitations: resolution failed; the queued packets
                    // get ICMPv6 Destination Unreachable, code 3.
                    let node = self.unlink_and_free(slot);
                    self.counters.resolutions_failed += 1;
                    actions.push(Action::Unreachable {
                        target,
                        is_router: node.is_router,
                        packets: into_queue(node.state),
                    });
                }
            }
            State::Reachable { lladdr, .. } => {
                // §7.3.3: ReachableTime without confirmation → STALE.
                let lladdr = *lladdr;
                self.set_state(slot, State::Stale { lladdr });
            }
            State::Delay { lladdr, .. } => {
                // §7.3.3: no confirmation within DELAY_FIRST_PROBE_TIME →
                // PROBE: send a unicast solicitation now and every
                // RetransTimer after.
                let lladdr = *lladdr;
                self.set_state(
                    slot,
                    State::Probe {
                        lladdr,
                        sent: 1,
                        deadline: now + retrans,
                    },
                );
                self.counters.unicast_solicitations += 1;
                actions.push(Action::SendSolicitation {
                    target,
                    unicast_to: Some(lladdr),
                });
            }
            State::Probe {
                lladdr,
                sent,
                deadline,
            } => {
                if *sent < max_unicast {
                    // §7.3.3: retransmit the probe every RetransTimer.
                    *sent += 1;
                    *deadline = now + retrans;
                    self.counters.unicast_solicitations += 1;
                    actions.push(Action::SendSolicitation {
                        target,
                        unicast_to: Some(*lladdr),
                    });
                } else {
                    // §7.3.3: RetransTimer after the MAX_UNICAST_SOLICIT-th
                    // probe with no answer, the entry SHOULD be deleted;
                    // later traffic re-resolves from scratch.
                    let node = self.unlink_and_free(slot);
                    self.counters.unreachable += 1;
                    actions.push(Action::Unreachable {
                        target,
                        is_router: node.is_router,
                        packets: into_queue(node.state),
                    });
                }
            }
            State::Stale { .. } => {}
        }
    }

    // ----- Shared update rules -------------------------------------------

    /// A link-layer address learnt from an NS, RS, RA or Redirect
    /// (§7.2.3, §6.2.6, §6.3.4, §8.3; Appendix C).
    fn learn(
        &mut self,
        now: Instant,
        addr: A,
        lladdr: L,
        router: RouterUpdate,
    ) -> Vec<Action<A, L, P>> {
        let mut actions = Vec::new();
        let Some(&slot) = self.index.get(&addr) else {
            // No entry: create one in STALE (§7.3.3) whose IsRouter is FALSE
            // unless the message says otherwise.
            if let Some(evicted) = self.make_room() {
                actions.push(Action::Evicted(evicted));
            }
            let is_router = matches!(router, RouterUpdate::Set(true));
            self.insert(addr, State::Stale { lladdr }, is_router);
            return actions;
        };
        let node = node_mut(&mut self.slots, slot);
        let was_router = node.is_router;
        if let RouterUpdate::Set(flag) = router {
            node.is_router = flag;
        }
        match node.state.lladdr() {
            // INCOMPLETE: record the address, STALE, send the queued
            // packets (Appendix C).
            None => self.resolve(now, slot, State::Stale { lladdr }, &mut actions),
            // A different address replaces the cached one and the entry
            // becomes STALE; the same address changes nothing (§7.2.3,
            // §7.3.3).
            Some(cached) if cached != lladdr => {
                self.set_state(slot, State::Stale { lladdr });
            }
            Some(_) => {}
        }
        if was_router && matches!(router, RouterUpdate::Set(false)) {
            actions.push(Action::RouterLost { target: addr });
        }
        actions
    }

    /// Sets IsRouter on an existing entry.
    fn set_router(&mut self, addr: A, flag: bool) -> Vec<Action<A, L, P>> {
        let mut actions = Vec::new();
        if let Some(&slot) = self.index.get(&addr) {
            let node = node_mut(&mut self.slots, slot);
            if node.is_router && !flag {
                actions.push(Action::RouterLost { target: addr });
            }
            node.is_router = flag;
        }
        actions
    }

    /// An INCOMPLETE entry learns its address and enters `resolved`
    /// (REACHABLE or STALE); its queued packets are released in order.
    /// Sending them is sending to the entry, so a STALE entry with packets
    /// to send goes on to DELAY at once (§7.3.3), as an implementation that
    /// sends them through the cache would.
    fn resolve(
        &mut self,
        now: Instant,
        slot: usize,
        resolved: State<L, P>,
        actions: &mut Vec<Action<A, L, P>>,
    ) {
        let lladdr = match resolved.lladdr() {
            Some(lladdr) => lladdr,
            None => return,
        };
        let target = node_mut(&mut self.slots, slot).addr;
        let previous = self.set_state(slot, resolved);
        let packets = into_queue(previous);
        if packets.is_empty() {
            return;
        }
        if node_mut(&mut self.slots, slot).state.kind() == NeighborState::Stale {
            let delay = self.config.delay_first_probe_time;
            self.set_state(
                slot,
                State::Delay {
                    lladdr,
                    deadline: now + delay,
                },
            );
        }
        self.counters.packets_flushed += packets.len() as u64;
        actions.push(Action::Transmit {
            target,
            lladdr,
            packets,
        });
    }

    // ----- Storage --------------------------------------------------------

    /// Replaces the state of the entry in `slot`, counting the transition
    /// and moving the entry between LRU lists as needed; returns the old
    /// state.
    fn set_state(&mut self, slot: usize, state: State<L, P>) -> State<L, P> {
        self.generation += 1;
        let node = node_mut(&mut self.slots, slot);
        let (old_kind, new_kind) = (node.state.kind(), state.kind());
        let new_tier = state.tier();
        let old = core::mem::replace(&mut node.state, state);
        if old_kind != new_kind {
            self.counters.transitions[new_kind.index()] += 1;
        }
        if node_mut(&mut self.slots, slot).tier != new_tier {
            self.unlink(slot);
            self.push_front(slot, new_tier);
        }
        old
    }

    /// Frees a slot if the cache is full, evicting per the module docs.
    fn make_room(&mut self) -> Option<Evicted<A, P>> {
        if self.index.len() < self.config.capacity {
            return None;
        }
        let victim = [Tier::Unconfirmed, Tier::Confirmed]
            .into_iter()
            .map(|tier| self.lists[tier as usize].tail)
            .find(|&slot| slot != NIL)?;
        let node = self.unlink_and_free(victim);
        let state = node.state.kind();
        let packets = into_queue(node.state);
        self.counters.evictions += 1;
        self.counters.evicted_packets += packets.len() as u64;
        Some(Evicted {
            target: node.addr,
            state,
            is_router: node.is_router,
            packets,
        })
    }

    /// Adds an entry as most recently used (there is room).
    fn insert(&mut self, addr: A, state: State<L, P>, is_router: bool) {
        self.generation += 1;
        let tier = state.tier();
        let node = Node {
            addr,
            is_router,
            state,
            tier,
            prev: NIL,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(node);
                slot
            }
            None => {
                self.slots.push(Some(node));
                self.slots.len() - 1
            }
        };
        self.index.insert(addr, slot);
        self.push_front(slot, tier);
        self.counters.created += 1;
    }

    fn unlink_and_free(&mut self, slot: usize) -> Node<A, L, P> {
        self.generation += 1;
        self.unlink(slot);
        let node = self.slots[slot].take().expect("a linked slot holds a node");
        self.index.remove(&node.addr);
        self.free.push(slot);
        node
    }

    /// Marks the entry most recently used.
    fn touch(&mut self, slot: usize) {
        let tier = node_mut(&mut self.slots, slot).tier;
        self.unlink(slot);
        self.push_front(slot, tier);
    }

    fn unlink(&mut self, slot: usize) {
        let node = node_mut(&mut self.slots, slot);
        let (prev, next, tier) = (node.prev, node.next, node.tier);
        node.prev = NIL;
        node.next = NIL;
        let list = &mut self.lists[tier as usize];
        if prev == NIL {
            list.head = next;
        } else {
            node_mut(&mut self.slots, prev).next = next;
        }
        if next == NIL {
            self.lists[tier as usize].tail = prev;
        } else {
            node_mut(&mut self.slots, next).prev = prev;
        }
    }

    fn push_front(&mut self, slot: usize, tier: Tier) {
        let head = self.lists[tier as usize].head;
        let node = node_mut(&mut self.slots, slot);
        node.tier = tier;
        node.prev = NIL;
        node.next = head;
        if head == NIL {
            self.lists[tier as usize].tail = slot;
        } else {
            node_mut(&mut self.slots, head).prev = slot;
        }
        self.lists[tier as usize].head = slot;
    }

    /// Checks the internal invariants (lists and index agree); for tests.
    #[cfg(test)]
    fn check(&self) {
        let mut seen = 0;
        for tier in [Tier::Unconfirmed, Tier::Confirmed] {
            let mut slot = self.lists[tier as usize].head;
            let mut prev = NIL;
            while slot != NIL {
                let node = self.slots[slot].as_ref().unwrap();
                assert_eq!(node.tier, tier);
                assert_eq!(node.state.tier(), tier);
                assert_eq!(node.prev, prev);
                assert_eq!(self.index[&node.addr], slot);
                assert!(node.state.queued() <= self.config.max_queued_per_entry);
                prev = slot;
                slot = node.next;
                seen += 1;
            }
            assert_eq!(self.lists[tier as usize].tail, prev);
        }
        assert_eq!(seen, self.index.len());
        assert!(self.index.len() <= self.config.capacity);
        assert!(self.slots.len() <= self.config.capacity);
    }
}

fn node_mut<A, L, P>(slots: &mut [Option<Node<A, L, P>>], slot: usize) -> &mut Node<A, L, P> {
    slots[slot].as_mut().expect("an indexed slot holds a node")
}

fn into_queue<L, P>(state: State<L, P>) -> VecDeque<P> {
    match state {
        State::Incomplete { queue, .. } => queue,
        _ => VecDeque::new(),
    }
}

fn view<A: Copy, L: Copy, P>(node: &Node<A, L, P>) -> EntryView<A, L> {
    EntryView {
        addr: node.addr,
        state: node.state.kind(),
        lladdr: node.state.lladdr(),
        is_router: node.is_router,
        probes_sent: node.state.probes_sent(),
        deadline: node.state.deadline(),
        queued: node.state.queued(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Cache = NeighborCache<u32, u8, u32>;

    fn secs(s: u64) -> Instant {
        Instant::from_nanos(s * 1_000_000_000)
    }

    fn cache(capacity: usize) -> Cache {
        NeighborCache::new(NeighborConfig {
            capacity,
            ..NeighborConfig::default()
        })
    }

    #[test]
    fn lru_lists_stay_consistent() {
        let mut c = cache(4);
        for addr in 0..20u32 {
            let _ = c.lookup(secs(0), addr, addr);
            c.check();
            if addr % 3 == 0 {
                let _ = c.on_advertisement(
                    secs(0),
                    addr,
                    Some(addr as u8),
                    AdvertisementFlags {
                        solicited: true,
                        ..Default::default()
                    },
                );
                c.check();
            }
            let _ = c.poll(secs(u64::from(addr)));
            c.check();
        }
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn the_generation_moves_with_every_change_and_not_with_a_send() {
        let mut c = cache(4);
        let g0 = c.generation();
        // A new entry (INCOMPLETE) is a change.
        let _ = c.lookup(secs(0), 1, 0);
        let g1 = c.generation();
        assert!(g1 > g0);
        // Resolved: REACHABLE with an address, a change.
        let flags = AdvertisementFlags {
            solicited: true,
            ..Default::default()
        };
        let _ = c.on_advertisement(secs(0), 1, Some(9), flags);
        let g2 = c.generation();
        assert!(g2 > g1);
        // Sending to a REACHABLE entry changes no state (§7.3.3): a path
        // cached now stays current.
        for _ in 0..10 {
            assert!(matches!(
                c.lookup(secs(1), 1, 0),
                Resolution::Send { lladdr: 9, .. }
            ));
        }
        assert_eq!(c.generation(), g2);
        // REACHABLE times out to STALE: a change.
        let _ = c.poll(secs(120));
        let g3 = c.generation();
        assert!(g3 > g2);
        // Sending to STALE moves it to DELAY: a change.
        let _ = c.lookup(secs(120), 1, 0);
        assert!(c.generation() > g3);
        // Removal is a change.
        let g4 = c.generation();
        assert!(c.remove(1).is_some());
        assert!(c.generation() > g4);
    }

    #[test]
    fn confirmed_entries_survive_a_flood() {
        let mut c = cache(8);
        let _ = c.lookup(secs(0), 1, 0);
        let flags = AdvertisementFlags {
            solicited: true,
            ..Default::default()
        };
        let _ = c.on_advertisement(secs(0), 1, Some(9), flags);
        for addr in 100..10_000 {
            let _ = c.lookup(secs(0), addr, 0);
        }
        c.check();
        assert_eq!(c.get(1).unwrap().state, NeighborState::Reachable);
        assert_eq!(c.len(), 8);
    }

    #[test]
    fn randomized_reachable_time_is_within_factors_and_seeded() {
        let base = Duration::from_secs(30);
        let draw = |seed| {
            let c: Cache = NeighborCache::new(NeighborConfig {
                random_seed: Some(seed),
                ..NeighborConfig::default()
            });
            c.reachable_time()
        };
        for seed in 0..200 {
            let t = draw(seed);
            assert!(t >= base / 2 && t < base * 3 / 2, "{t:?}");
            assert_eq!(t, draw(seed));
        }
        assert_ne!(draw(1), draw(2));
        assert_eq!(cache(1).reachable_time(), base);
    }

    #[test]
    fn zero_length_timers_terminate() {
        let mut c: Cache = NeighborCache::new(NeighborConfig {
            retrans_timer: Duration::ZERO,
            delay_first_probe_time: Duration::ZERO,
            reachable_time: Duration::ZERO,
            ..NeighborConfig::default()
        });
        let _ = c.lookup(secs(0), 1, 0);
        let actions = c.poll(secs(0));
        assert_eq!(actions.len(), 3); // two retransmits, then Unreachable
        assert!(c.is_empty());
        assert_eq!(c.next_deadline(), None);
    }
}
