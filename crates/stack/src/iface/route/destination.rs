//! The destination cache: the MSR stack's Route Cache (RCE), RFC 4861 §5.1
//! "Destination Cache".
//!
//! Each entry maps a destination address to the result of next-hop
//! determination (RFC 4861 §5.2): the neighbour to send to, the interface,
//! the preferred source address the caller chose, plus the path MTU
//! (RFC 8201) and a per-destination ICMP error bucket (RFC 4443 §2.4(f); the
//! MSR RCE keeps "ICMP error rate-limiting information").
//!
//! # Validity
//!
//! An entry records the [`RoutingTable::generation`](super::RoutingTable::generation)
//! it was computed at. Every lookup passes the table's current generation;
//! an entry from another generation is stale and not returned, so any change
//! of the routing table invalidates every entry at once in O(1) (RFC 4861
//! §5.2 lets the Destination Cache be flushed when routes change). The
//! caller recomputes the next hop and [`DestinationCache::insert`]s it; a
//! PMTU learned for the destination survives that (RFC 8201 §5.2: PMTU
//! information is per destination) until it ages.
//!
//! # Path MTU (RFC 8201 §4)
//!
//! * A new entry's PMTU is the link MTU of its first hop.
//! * A Packet Too Big lowers it to the reported MTU, but never below the
//!   minimum link MTU (1280 for IPv6): a report below that sets 1280.
//! * A Packet Too Big that would not lower it is ignored: "A node MUST NOT
//!   increase its estimate of the Path MTU in response to the contents of a
//!   Packet Too Big message."
//! * After [`DestinationConfig::pmtu_aging`] (default 10 minutes, never less
//!   than 5: "MUST NOT be done less than 5 minutes after a Packet Too Big
//!   message has been received ... The recommended setting for this timer
//!   is twice its minimum value (10 minutes)") since the last decrease, the
//!   PMTU goes back to the link MTU, so a larger path MTU is tried again.
//!   The restore is applied by [`DestinationCache::poll`] and also, exactly
//!   at its deadline, by any lookup that reaches the entry first.
//!
//! # Memory bound
//!
//! At most `capacity` entries; a new entry in a full cache evicts the least
//! recently used one (use = insert or a successful lookup).

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet};

use crate::hash::FastMap;
use crate::time::Instant;

use super::rate_limit::{IcmpRateLimiter, RateLimitConfig};
use super::{InterfaceId, RouteAddress};

/// RFC 8201 §4: the recommended PMTU aging time, twice the minimum.
pub const PMTU_AGING: Duration = Duration::from_secs(10 * 60);
/// RFC 8201 §4: an increase MUST NOT be tried sooner than this after a
/// Packet Too Big.
pub const PMTU_AGING_MIN: Duration = Duration::from_secs(5 * 60);

/// Parameters of a [`DestinationCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestinationConfig {
    /// Most entries (LRU bound). At least 1.
    pub capacity: usize,
    /// Time after a PMTU decrease before the link MTU is tried again;
    /// raised to [`PMTU_AGING_MIN`] if shorter (RFC 8201 §4).
    pub pmtu_aging: Duration,
    /// The per-destination ICMP error bucket.
    pub icmp: RateLimitConfig,
}

impl Default for DestinationConfig {
    fn default() -> Self {
        Self {
            capacity: 1024,
            pmtu_aging: PMTU_AGING,
            icmp: RateLimitConfig::default(),
        }
    }
}

/// The result of next-hop determination for a destination, as the caller
/// computed it from the routing table (and its source address selection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop<A> {
    /// The neighbour to send to (the destination itself when on-link).
    pub neighbor: A,
    pub interface: InterfaceId,
    /// The preferred source address, as the caller chose it.
    pub source: Option<A>,
    /// The MTU of the outgoing link: the initial PMTU (RFC 8201 §4).
    pub link_mtu: u32,
}

/// An entry as the state dump shows it (and as lookups return it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestinationView<A> {
    pub destination: A,
    pub next_hop: NextHop<A>,
    /// The current path MTU estimate.
    pub pmtu: u32,
    /// When the lowered PMTU goes back to the link MTU (RFC 8201 §4);
    /// `None` if it is not lowered.
    pub pmtu_expires: Option<Instant>,
    /// Time since the entry was created.
    pub age: Duration,
    /// Time since it was last used.
    pub idle: Duration,
    /// The routing table generation it was computed at.
    pub generation: u64,
    /// Whether that generation is the latest the cache has seen.
    pub valid: bool,
}

/// What a Packet Too Big did to the PMTU (RFC 8201 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmtuUpdate {
    /// The estimate went down from `from` to `to`.
    Lowered { from: u32, to: u32 },
    /// Not a decrease: ignored (RFC 8201 §4 MUST NOT increase).
    Ignored,
    /// No entry for the destination (evicted or never used).
    Unknown,
}

/// An entry the LRU bound (or [`DestinationCache::remove`]) removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted<A> {
    pub destination: A,
    pub next_hop: NextHop<A>,
    pub pmtu: u32,
}

/// What the cache has done, for the state dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DestinationCounters {
    /// Lookups that found a valid entry.
    pub hits: u64,
    /// Lookups that found no entry.
    pub misses: u64,
    /// Lookups that found an entry from an older routing generation.
    pub stale: u64,
    /// Entries created.
    pub created: u64,
    /// Entries recomputed in place ([`DestinationCache::insert`] for a
    /// destination already present).
    pub updated: u64,
    /// Entries evicted by the LRU bound.
    pub evictions: u64,
    /// Changes of routing generation seen (each invalidates every entry).
    pub generation_changes: u64,
    /// Packet Too Big messages that lowered a PMTU.
    pub ptb_lowered: u64,
    /// Of those, reports below the minimum MTU, clamped to it.
    pub ptb_clamped: u64,
    /// Packet Too Big messages ignored as not a decrease.
    pub ptb_ignored: u64,
    /// Packet Too Big messages for destinations not in the cache.
    pub ptb_unknown: u64,
    /// PMTUs returned to the link MTU by aging.
    pub pmtu_aged: u64,
}

#[derive(Debug, Clone)]
struct Entry<A> {
    next_hop: NextHop<A>,
    pmtu: u32,
    /// When the lowered PMTU ages back to the link MTU.
    pmtu_expires: Option<Instant>,
    created: Instant,
    last_used: Instant,
    generation: u64,
    /// Position in the LRU order (larger = more recent).
    tick: u64,
    icmp: IcmpRateLimiter,
}

/// The destination cache (see the module docs).
#[derive(Debug, Clone)]
pub struct DestinationCache<A> {
    config: DestinationConfig,
    entries: FastMap<A, Entry<A>>,
    /// LRU order: tick → destination; the first is the least recent.
    lru: BTreeMap<u64, A>,
    /// PMTU aging deadlines.
    timers: BTreeSet<(Instant, A)>,
    next_tick: u64,
    /// The latest routing generation seen (none before the first call).
    generation: Option<u64>,
    /// Bumped whenever an entry is created, recomputed, removed or has its
    /// PMTU changed: see [`changes`](Self::changes).
    changes: u64,
    counters: DestinationCounters,
}

impl<A: RouteAddress> Default for DestinationCache<A> {
    fn default() -> Self {
        Self::new(DestinationConfig::default())
    }
}

impl<A: RouteAddress> DestinationCache<A> {
    pub fn new(mut config: DestinationConfig) -> Self {
        config.capacity = config.capacity.max(1);
        config.pmtu_aging = config.pmtu_aging.max(PMTU_AGING_MIN);
        Self {
            config,
            entries: FastMap::default(),
            lru: BTreeMap::new(),
            timers: BTreeSet::new(),
            next_tick: 0,
            generation: None,
            changes: 0,
            counters: DestinationCounters::default(),
        }
    }

    pub fn config(&self) -> &DestinationConfig {
        &self.config
    }

    pub fn counters(&self) -> DestinationCounters {
        self.counters
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// A number that changes whenever an entry is created, recomputed or
    /// removed, or its PMTU changes: a next hop and PMTU cached from a
    /// [`lookup`](Self::lookup) are still the entry's while it is the one
    /// seen then. A lookup that only uses an entry (its place in the LRU
    /// order, its last use) does not move it. Named apart from
    /// `generation`, the routing table's number an entry was computed at.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry for `dst` if it was computed at routing `generation`
    /// (the table's current [`generation`](super::RoutingTable::generation)).
    /// A hit counts as use for the LRU order. `None` means: determine the
    /// next hop from the routing table and [`insert`](Self::insert) it.
    pub fn lookup(&mut self, now: Instant, dst: A, generation: u64) -> Option<DestinationView<A>> {
        self.see_generation(generation);
        // One hash lookup per packet: aging, the LRU touch and the view
        // all work on the entry found once.
        let Some(entry) = self.entries.get_mut(&dst) else {
            self.counters.misses += 1;
            return None;
        };
        if let Some(at) = entry.pmtu_expires.filter(|&at| at <= now) {
            self.changes += 1;
            entry.pmtu_expires = None;
            entry.pmtu = entry.next_hop.link_mtu;
            self.timers.remove(&(at, dst));
            self.counters.pmtu_aged += 1;
        }
        if entry.generation != generation {
            self.counters.stale += 1;
            return None;
        }
        self.counters.hits += 1;
        entry.last_used = now;
        // Already the most recent (a flow's packets in a row): the LRU
        // order stands as it is.
        if entry.tick + 1 != self.next_tick {
            let tick = self.next_tick;
            self.next_tick += 1;
            self.lru.remove(&entry.tick);
            entry.tick = tick;
            self.lru.insert(tick, dst);
        }
        Some(DestinationView {
            destination: dst,
            next_hop: entry.next_hop,
            pmtu: entry.pmtu,
            pmtu_expires: entry.pmtu_expires,
            age: now - entry.created,
            idle: Duration::ZERO,
            generation: entry.generation,
            valid: true,
        })
    }

    /// The entry for `dst` without using it (no LRU, validity not checked).
    pub fn peek(&self, now: Instant, dst: A) -> Option<DestinationView<A>> {
        self.view(now, dst)
    }

    /// Records the next hop computed for `dst` at routing `generation`:
    /// creates the entry (PMTU = link MTU, RFC 8201 §4), evicting the least
    /// recently used one if the cache is full, or recomputes an existing
    /// one, keeping a lowered PMTU that is still smaller than the new link
    /// MTU and has not aged.
    pub fn insert(
        &mut self,
        now: Instant,
        dst: A,
        next_hop: NextHop<A>,
        generation: u64,
    ) -> Option<Evicted<A>> {
        self.see_generation(generation);
        self.age(now, dst);
        self.changes += 1;
        let tick = self.next_tick;
        self.next_tick += 1;
        if let Some(entry) = self.entries.get_mut(&dst) {
            self.counters.updated += 1;
            entry.next_hop = next_hop;
            entry.generation = generation;
            entry.last_used = now;
            if entry.pmtu_expires.is_some() && entry.pmtu < next_hop.link_mtu {
                // The learned PMTU stays, with its aging timer.
            } else {
                if let Some(at) = entry.pmtu_expires.take() {
                    self.timers.remove(&(at, dst));
                }
                entry.pmtu = next_hop.link_mtu;
            }
            self.lru.remove(&entry.tick);
            entry.tick = tick;
            self.lru.insert(tick, dst);
            return None;
        }
        let evicted = if self.entries.len() >= self.config.capacity {
            self.evict_lru()
        } else {
            None
        };
        self.counters.created += 1;
        self.entries.insert(
            dst,
            Entry {
                next_hop,
                pmtu: next_hop.link_mtu,
                pmtu_expires: None,
                created: now,
                last_used: now,
                generation,
                tick,
                icmp: IcmpRateLimiter::new(self.config.icmp),
            },
        );
        self.lru.insert(tick, dst);
        evicted
    }

    /// Removes the entry for `dst`.
    pub fn remove(&mut self, dst: A) -> Option<Evicted<A>> {
        let entry = self.drop_entry(dst)?;
        Some(Evicted {
            destination: dst,
            next_hop: entry.next_hop,
            pmtu: entry.pmtu,
        })
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.changes += 1;
        self.entries.clear();
        self.lru.clear();
        self.timers.clear();
    }

    /// The current PMTU for `dst`, if cached (whatever its validity: PMTU
    /// is per destination, RFC 8201 §5.2).
    pub fn pmtu(&mut self, now: Instant, dst: A) -> Option<u32> {
        self.age(now, dst);
        self.entries.get(&dst).map(|entry| entry.pmtu)
    }

    /// A Packet Too Big for a packet sent to `dst` reported `mtu`
    /// (RFC 8201 §4): lowers the PMTU to `mtu`, or to the family minimum if
    /// `mtu` is below it; never raises it.
    ///
    /// The cache takes the report as given: the host checks it first. One
    /// quoting a TCP segment must name a live connection and a sequence
    /// number it has in flight (RFC 5927 §7.2), or it lowers nothing, this
    /// PMTU included; one quoting another protocol lowers the PMTU, which
    /// is the destination's for every protocol (RFC 8201 §5.2).
    pub fn on_packet_too_big(&mut self, now: Instant, dst: A, mtu: u32) -> PmtuUpdate {
        self.age(now, dst);
        let Some(entry) = self.entries.get_mut(&dst) else {
            self.counters.ptb_unknown += 1;
            return PmtuUpdate::Unknown;
        };
        // RFC 8201 §4: a node MUST NOT reduce its estimate below the IPv6
        // minimum link MTU.
        let to = mtu.max(A::MIN_PATH_MTU);
        if to >= entry.pmtu {
            // RFC 8201 §4: MUST NOT increase in response to a Packet Too Big.
            self.counters.ptb_ignored += 1;
            return PmtuUpdate::Ignored;
        }
        if mtu < A::MIN_PATH_MTU {
            self.counters.ptb_clamped += 1;
        }
        self.counters.ptb_lowered += 1;
        self.changes += 1;
        let from = entry.pmtu;
        entry.pmtu = to;
        if let Some(at) = entry.pmtu_expires.take() {
            self.timers.remove(&(at, dst));
        }
        // RFC 8201 §4: the increase timer runs from the latest decrease.
        let at = now + self.config.pmtu_aging;
        entry.pmtu_expires = Some(at);
        self.timers.insert((at, dst));
        PmtuUpdate::Lowered { from, to }
    }

    /// Per-destination ICMP error limit (RFC 4443 §2.4(f)) for an error
    /// sent to `dst`: `None` if `dst` is not cached (use only the global
    /// limiter then).
    pub fn allow_icmp_error(&mut self, now: Instant, dst: A) -> Option<bool> {
        self.entries
            .get_mut(&dst)
            .map(|entry| entry.icmp.allow(now))
    }

    /// When the earliest lowered PMTU ages.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// Returns every PMTU whose aging time has come (at or before `now`) to
    /// its link MTU (RFC 8201 §4) and lists their destinations.
    pub fn poll(&mut self, now: Instant) -> Vec<A> {
        let mut aged = Vec::new();
        while let Some(&(at, dst)) = self.timers.first() {
            if at > now {
                break;
            }
            self.age(now, dst);
            aged.push(dst);
        }
        aged
    }

    /// Every entry, by destination, for the state dump.
    pub fn entries(&self, now: Instant) -> Vec<DestinationView<A>> {
        let mut keys: Vec<A> = self.entries.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|dst| self.view(now, dst))
            .collect()
    }

    /// Restores `dst`'s link MTU if its aging deadline is at or before `now`.
    fn age(&mut self, now: Instant, dst: A) {
        let Some(entry) = self.entries.get_mut(&dst) else {
            return;
        };
        let Some(at) = entry.pmtu_expires else {
            return;
        };
        if at > now {
            return;
        }
        entry.pmtu_expires = None;
        entry.pmtu = entry.next_hop.link_mtu;
        self.timers.remove(&(at, dst));
        self.counters.pmtu_aged += 1;
        self.changes += 1;
    }

    fn see_generation(&mut self, generation: u64) {
        match self.generation {
            Some(seen) if seen == generation => {}
            Some(_) => {
                self.generation = Some(generation);
                self.counters.generation_changes += 1;
            }
            None => self.generation = Some(generation),
        }
    }

    fn evict_lru(&mut self) -> Option<Evicted<A>> {
        let (_, dst) = self.lru.first_key_value()?;
        let dst = *dst;
        let entry = self.drop_entry(dst)?;
        self.counters.evictions += 1;
        Some(Evicted {
            destination: dst,
            next_hop: entry.next_hop,
            pmtu: entry.pmtu,
        })
    }

    fn drop_entry(&mut self, dst: A) -> Option<Entry<A>> {
        let entry = self.entries.remove(&dst)?;
        self.changes += 1;
        self.lru.remove(&entry.tick);
        if let Some(at) = entry.pmtu_expires {
            self.timers.remove(&(at, dst));
        }
        Some(entry)
    }

    fn view(&self, now: Instant, dst: A) -> Option<DestinationView<A>> {
        let entry = self.entries.get(&dst)?;
        Some(DestinationView {
            destination: dst,
            next_hop: entry.next_hop,
            pmtu: entry.pmtu,
            pmtu_expires: entry.pmtu_expires,
            age: now - entry.created,
            idle: now - entry.last_used,
            generation: entry.generation,
            valid: Some(entry.generation) == self.generation,
        })
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        assert_eq!(self.entries.len(), self.lru.len());
        assert!(self.entries.len() <= self.config.capacity);
        for (tick, dst) in &self.lru {
            assert_eq!(self.entries[dst].tick, *tick);
        }
        let timed = self
            .entries
            .values()
            .filter(|entry| entry.pmtu_expires.is_some())
            .count();
        assert_eq!(timed, self.timers.len());
        for (at, dst) in &self.timers {
            assert_eq!(self.entries[dst].pmtu_expires, Some(*at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    fn hop(mtu: u32) -> NextHop<Ipv6Addr> {
        NextHop {
            neighbor: Ipv6Addr::LOCALHOST,
            interface: InterfaceId(1),
            source: None,
            link_mtu: mtu,
        }
    }

    #[test]
    fn changes_move_with_every_change_and_not_with_a_hit() {
        let mut cache = DestinationCache::<Ipv6Addr>::default();
        let dst: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let t0 = Instant::ZERO;
        let c0 = cache.changes();
        cache.insert(t0, dst, hop(1500), 0);
        let c1 = cache.changes();
        assert!(c1 > c0);
        // Hits use the entry, they do not change it.
        for _ in 0..5 {
            assert!(cache.lookup(t0, dst, 0).is_some());
        }
        assert_eq!(cache.changes(), c1);
        // A lowered PMTU is a change; so is its aging back (§4).
        assert!(matches!(
            cache.on_packet_too_big(t0, dst, 1400),
            PmtuUpdate::Lowered { .. }
        ));
        let c2 = cache.changes();
        assert!(c2 > c1);
        let aged = t0 + cache.config().pmtu_aging;
        assert_eq!(cache.lookup(aged, dst, 0).map(|v| v.pmtu), Some(1500));
        let c3 = cache.changes();
        assert!(c3 > c2);
        // Removal is a change.
        assert!(cache.remove(dst).is_some());
        assert!(cache.changes() > c3);
    }

    #[test]
    fn bookkeeping_stays_consistent() {
        let mut cache = DestinationCache::<Ipv6Addr>::new(DestinationConfig {
            capacity: 3,
            ..DestinationConfig::default()
        });
        let t = Instant::ZERO;
        for n in 0..10u16 {
            let dst = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n % 5);
            cache.insert(t, dst, hop(1500), u64::from(n / 4));
            cache.on_packet_too_big(t, dst, 1400 - u32::from(n));
            cache.lookup(t, Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n % 3), 0);
            cache.check_invariants();
        }
        cache.poll(t + PMTU_AGING);
        cache.check_invariants();
        assert!(cache.timers.is_empty());
        cache.remove(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 4));
        cache.check_invariants();
    }
}
