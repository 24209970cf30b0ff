//! The longest-prefix-match routing table (RFC 4861 §5.2 next-hop
//! determination generalised to a router's forwarding table; RFC 1812
//! §5.2.4.3 for IPv4).
//!
//! # Data structure and complexity
//!
//! One hash map per prefix length (33 for IPv4, 129 for IPv6), keyed by the
//! prefix bits, each value the routes for that prefix ordered by
//! `(metric, insertion order)`. A bitmask records which lengths hold any
//! route. [`RoutingTable::lookup`] walks the non-empty lengths from longest
//! to shortest, masks the destination to each and probes that length's map;
//! the first hit is the longest match. So a lookup costs at most one hash
//! probe per *distinct prefix length in use* (≤ 33 / ≤ 129), independent
//! of the number of routes; a typical host table (a /64 or two, a /128 or
//! two, ::/0) takes two to four probes. Insert and remove are one probe
//! plus an ordered insert into the (short) per-prefix list.
//!
//! # Tie-breaking
//!
//! Among routes for the same longest prefix the one with the lowest
//! `metric` wins; among equal metrics the one inserted first wins.
//! Replacing a route (same [`RouteKey`]) keeps its place in insertion order.
//!
//! # Expiry
//!
//! Routes learned from Router Advertisements carry the time their lifetime
//! ends ([`Origin::RouterAdvertisement`]: the Router Lifetime of a default
//! router, RFC 4861 §6.3.4, or the Route Lifetime of a Route Information
//! option, RFC 4191 §3.1). [`RoutingTable::poll`] removes every such route
//! whose expiry is at or before `now`; [`RoutingTable::next_deadline`] says
//! when to poll next.
//!
//! # Memory bound
//!
//! At most `capacity` routes; inserting a new route into a full table fails
//! with [`RouteError::Full`] and is counted (replacing an existing route
//! always succeeds).

use std::collections::BTreeSet;

use crate::hash::FastMap;
use crate::time::Instant;

use super::{InterfaceId, RouteAddress};

/// Default bound on the number of routes.
pub const DEFAULT_TABLE_CAPACITY: usize = 4096;

/// Where a route came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The prefix of an address configured on the interface (on-link).
    Connected,
    /// Configured by the operator or topology file.
    Static,
    /// Learned from a Router Advertisement: lives until `expires`
    /// (RFC 4861 §6.3.4 Router Lifetime; RFC 4191 §3.1 Route Lifetime).
    RouterAdvertisement { expires: Instant },
    /// A configured default route.
    Default,
}

impl Origin {
    /// Short name for the state dump.
    pub const fn name(self) -> &'static str {
        match self {
            Origin::Connected => "connected",
            Origin::Static => "static",
            Origin::RouterAdvertisement { .. } => "ra",
            Origin::Default => "default",
        }
    }

    /// When the route expires, for RA-learned routes.
    pub const fn expires(self) -> Option<Instant> {
        match self {
            Origin::RouterAdvertisement { expires } => Some(expires),
            _ => None,
        }
    }
}

/// A route: packets to `prefix/prefix_len` go out `interface`, to
/// `next_hop`, or directly to the destination when `next_hop` is `None`
/// (on-link, RFC 4861 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route<A> {
    pub prefix: A,
    pub prefix_len: u8,
    /// `None` = on-link: the destination itself is the next hop.
    pub next_hop: Option<A>,
    pub interface: InterfaceId,
    /// Lower is preferred among routes for the same prefix.
    pub metric: u32,
    pub origin: Origin,
}

impl<A: RouteAddress> Route<A> {
    /// The identity of the route in the table.
    pub fn key(&self) -> RouteKey<A> {
        RouteKey {
            prefix: self.prefix,
            prefix_len: self.prefix_len,
            next_hop: self.next_hop,
            interface: self.interface,
        }
    }

    /// Whether `dst` is inside the route's prefix.
    pub fn contains(&self, dst: A) -> bool {
        dst.masked(self.prefix_len) == self.prefix
    }

    /// The neighbour to send a packet for `dst` to: the next hop, or `dst`
    /// itself for an on-link route (RFC 4861 §5.2).
    pub fn next_hop_for(&self, dst: A) -> A {
        self.next_hop.unwrap_or(dst)
    }

    fn validate(&self) -> Result<(), RouteError> {
        if self.prefix_len > A::BITS {
            return Err(RouteError::PrefixTooLong {
                prefix_len: self.prefix_len,
                bits: A::BITS,
            });
        }
        if self.prefix.masked(self.prefix_len) != self.prefix {
            return Err(RouteError::HostBitsSet);
        }
        Ok(())
    }
}

/// What identifies a route: inserting a route with the key of an existing
/// one replaces it. Several routes may share a prefix (different next hops
/// or interfaces); [`RoutingTable::lookup`] picks among them by metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteKey<A> {
    pub prefix: A,
    pub prefix_len: u8,
    pub next_hop: Option<A>,
    pub interface: InterfaceId,
}

/// Why a route was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("prefix length {prefix_len} exceeds the {bits}-bit address")]
    PrefixTooLong { prefix_len: u8, bits: u8 },
    #[error("the prefix has bits set past its length")]
    HostBitsSet,
    #[error("the routing table is full")]
    Full,
}

/// What [`RoutingTable::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted<A> {
    /// A new route.
    New,
    /// The route replaced this one, which had the same key.
    Replaced(Route<A>),
}

/// What the table has done, for the state dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoutingCounters {
    /// Routes added.
    pub inserted: u64,
    /// Routes replaced by one with the same key.
    pub replaced: u64,
    /// Routes removed by [`RoutingTable::remove`] or
    /// [`RoutingTable::retain`].
    pub removed: u64,
    /// RA-learned routes whose lifetime ended.
    pub expired: u64,
    /// Routes refused because the table was full.
    pub rejected_full: u64,
    /// Routes refused as malformed (prefix too long, host bits set).
    pub rejected_invalid: u64,
}

/// A route and its place in insertion order.
#[derive(Debug, Clone)]
struct Slot<A> {
    route: Route<A>,
    seq: u64,
}

/// Which prefix lengths (0..=128) hold at least one route.
#[derive(Debug, Clone, Copy, Default)]
struct LengthSet([u64; 3]);

impl LengthSet {
    fn set(&mut self, len: u8) {
        self.0[usize::from(len / 64)] |= 1 << (len % 64);
    }

    fn clear(&mut self, len: u8) {
        self.0[usize::from(len / 64)] &= !(1 << (len % 64));
    }

    /// The lengths present, longest first.
    fn iter_desc(self) -> impl Iterator<Item = u8> {
        let mut words = self.0;
        let mut word = words.len();
        core::iter::from_fn(move || loop {
            if words[word.checked_sub(1)?] == 0 {
                word -= 1;
                continue;
            }
            let w = &mut words[word - 1];
            let bit = 63 - w.leading_zeros();
            *w &= !(1u64 << bit);
            // word ≤ 3 and bit < 64, so this is below 192.
            return Some(((word - 1) * 64 + bit as usize) as u8);
        })
    }
}

/// A longest-prefix-match routing table for one family (see the module
/// docs for the structure, tie-breaking, expiry and bounds).
#[derive(Debug, Clone)]
pub struct RoutingTable<A> {
    /// Index = prefix length; key = the prefix's bits; value ordered by
    /// `(metric, seq)`, never empty.
    levels: Vec<FastMap<u128, Vec<Slot<A>>>>,
    lengths: LengthSet,
    /// RA-learned routes by expiry: `(expires, seq, prefix_len, prefix)`.
    timers: BTreeSet<(Instant, u64, u8, u128)>,
    len: usize,
    capacity: usize,
    next_seq: u64,
    generation: u64,
    counters: RoutingCounters,
}

impl<A: RouteAddress> Default for RoutingTable<A> {
    fn default() -> Self {
        Self::new(DEFAULT_TABLE_CAPACITY)
    }
}

impl<A: RouteAddress> RoutingTable<A> {
    /// An empty table holding at most `capacity` routes.
    pub fn new(capacity: usize) -> Self {
        Self {
            levels: (0..=A::BITS).map(|_| FastMap::default()).collect(),
            lengths: LengthSet::default(),
            timers: BTreeSet::new(),
            len: 0,
            capacity,
            next_seq: 0,
            generation: 0,
            counters: RoutingCounters::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn counters(&self) -> RoutingCounters {
        self.counters
    }

    /// Incremented by every change of the table (insert, replace, remove,
    /// expiry). A [`DestinationCache`](super::DestinationCache) entry
    /// computed at an older generation is stale.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The route for `dst`: the longest prefix containing it, then the
    /// lowest metric, then the earliest inserted. At most one hash probe per
    /// prefix length in use.
    pub fn lookup(&self, dst: A) -> Option<&Route<A>> {
        let bits = dst.to_bits();
        self.lengths.iter_desc().find_map(|len| {
            self.levels[usize::from(len)]
                .get(&(bits & A::prefix_mask(len)))
                .and_then(|slots| slots.first())
                .map(|slot| &slot.route)
        })
    }

    /// The routes for exactly `prefix/prefix_len`, best first.
    pub fn routes_for(&self, prefix: A, prefix_len: u8) -> impl Iterator<Item = &Route<A>> + '_ {
        self.levels
            .get(usize::from(prefix_len))
            .and_then(|level| level.get(&prefix.to_bits()))
            .into_iter()
            .flatten()
            .map(|slot| &slot.route)
    }

    /// The route with `key`, if present.
    pub fn get(&self, key: &RouteKey<A>) -> Option<&Route<A>> {
        self.routes_for(key.prefix, key.prefix_len)
            .find(|route| route.key() == *key)
    }

    /// Every route, longest prefix first, then by prefix, then in lookup
    /// preference order (for the state dump).
    pub fn routes(&self) -> Vec<&Route<A>> {
        let mut out = Vec::with_capacity(self.len);
        for len in self.lengths.iter_desc() {
            let mut prefixes: Vec<_> = self.levels[usize::from(len)].iter().collect();
            prefixes.sort_unstable_by_key(|(bits, _)| **bits);
            for (_, slots) in prefixes {
                out.extend(slots.iter().map(|slot| &slot.route));
            }
        }
        out
    }

    /// Adds `route`, or replaces the route with the same [`RouteKey`]
    /// (keeping its place in insertion order). Refuses a prefix longer than
    /// the address or with bits set past its length, and a new route when
    /// the table is full.
    pub fn insert(&mut self, route: Route<A>) -> Result<Inserted<A>, RouteError> {
        if let Err(err) = route.validate() {
            self.counters.rejected_invalid += 1;
            return Err(err);
        }
        let len = route.prefix_len;
        let bits = route.prefix.to_bits();
        let key = route.key();
        let existing = self.levels[usize::from(len)]
            .get(&bits)
            .and_then(|slots| slots.iter().position(|slot| slot.route.key() == key));
        let (seq, outcome) = match existing {
            Some(index) => {
                let old = self.take(len, bits, index);
                self.counters.replaced += 1;
                (old.seq, Inserted::Replaced(old.route))
            }
            None => {
                if self.len >= self.capacity {
                    self.counters.rejected_full += 1;
                    return Err(RouteError::Full);
                }
                self.counters.inserted += 1;
                let seq = self.next_seq;
                self.next_seq += 1;
                (seq, Inserted::New)
            }
        };
        self.put(Slot { route, seq });
        self.generation += 1;
        Ok(outcome)
    }

    /// Removes the route with `key`.
    pub fn remove(&mut self, key: &RouteKey<A>) -> Option<Route<A>> {
        if key.prefix_len > A::BITS {
            return None;
        }
        let bits = key.prefix.to_bits();
        let index = self.levels[usize::from(key.prefix_len)]
            .get(&bits)?
            .iter()
            .position(|slot| slot.route.key() == *key)?;
        let slot = self.take(key.prefix_len, bits, index);
        self.counters.removed += 1;
        self.generation += 1;
        Some(slot.route)
    }

    /// Removes every route for which `keep` is false (e.g. all routes via a
    /// router that is no longer one, RFC 4861 §7.2.5, or out of an interface
    /// going down) and returns them.
    pub fn retain(&mut self, mut keep: impl FnMut(&Route<A>) -> bool) -> Vec<Route<A>> {
        let doomed: Vec<RouteKey<A>> = self
            .levels
            .iter()
            .flat_map(|level| level.values().flatten())
            .filter(|slot| !keep(&slot.route))
            .map(|slot| slot.route.key())
            .collect();
        doomed.iter().filter_map(|key| self.remove(key)).collect()
    }

    /// When the earliest RA-learned route expires.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, ..)| at)
    }

    /// Removes every RA-learned route whose lifetime has ended (expiry at or
    /// before `now`) and returns them.
    pub fn poll(&mut self, now: Instant) -> Vec<Route<A>> {
        let mut expired = Vec::new();
        while let Some(&(at, seq, len, bits)) = self.timers.first() {
            if at > now {
                break;
            }
            let index = self.levels[usize::from(len)]
                .get(&bits)
                .and_then(|slots| slots.iter().position(|slot| slot.seq == seq));
            match index {
                Some(index) => {
                    expired.push(self.take(len, bits, index).route);
                    self.counters.expired += 1;
                }
                // Unreachable: `take` removes a slot's timer with the slot.
                None => {
                    self.timers.remove(&(at, seq, len, bits));
                }
            }
        }
        if !expired.is_empty() {
            self.generation += 1;
        }
        expired
    }

    /// Files a validated slot in its level, in `(metric, seq)` order.
    fn put(&mut self, slot: Slot<A>) {
        let len = slot.route.prefix_len;
        let bits = slot.route.prefix.to_bits();
        if let Some(at) = slot.route.origin.expires() {
            self.timers.insert((at, slot.seq, len, bits));
        }
        let slots = self.levels[usize::from(len)].entry(bits).or_default();
        let order = (slot.route.metric, slot.seq);
        let at = slots.partition_point(|s| (s.route.metric, s.seq) < order);
        slots.insert(at, slot);
        self.lengths.set(len);
        self.len += 1;
    }

    /// Unfiles the slot at `index` of prefix `bits/len`.
    fn take(&mut self, len: u8, bits: u128, index: usize) -> Slot<A> {
        let level = &mut self.levels[usize::from(len)];
        let Some(slots) = level.get_mut(&bits) else {
            unreachable!("take: the caller found the slot");
        };
        let slot = slots.remove(index);
        if slots.is_empty() {
            level.remove(&bits);
            if level.is_empty() {
                self.lengths.clear(len);
            }
        }
        if let Some(at) = slot.route.origin.expires() {
            self.timers.remove(&(at, slot.seq, len, bits));
        }
        self.len -= 1;
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    #[test]
    fn length_set_iterates_longest_first() {
        let mut set = LengthSet::default();
        for len in [0, 1, 63, 64, 65, 127, 128] {
            set.set(len);
        }
        set.clear(65);
        let got: Vec<u8> = set.iter_desc().collect();
        assert_eq!(got, vec![128, 127, 64, 63, 1, 0]);
        assert_eq!(LengthSet::default().iter_desc().count(), 0);
    }

    #[test]
    fn lengths_follow_the_routes() {
        let mut table = RoutingTable::<Ipv6Addr>::new(8);
        let route = Route {
            prefix: "2001:db8::".parse().unwrap(),
            prefix_len: 32,
            next_hop: None,
            interface: InterfaceId(0),
            metric: 0,
            origin: Origin::Static,
        };
        table.insert(route).unwrap();
        assert_eq!(table.lengths.iter_desc().collect::<Vec<_>>(), vec![32]);
        table.remove(&route.key()).unwrap();
        assert_eq!(table.lengths.iter_desc().count(), 0);
        assert!(table.levels.iter().all(FastMap::is_empty));
        assert!(table.is_empty());
    }
}
