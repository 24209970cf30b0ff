//! Routing on virtual time: longest-prefix match in both families against
//! overlapping routes and a brute-force model, RA route expiry at its exact
//! time, the destination cache's path MTU rules (RFC 8201 §4), generation
//! invalidation and LRU bound, and the ICMP error token bucket
//! (RFC 4443 §2.4(f)).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use proptest::prelude::*;
use stack::iface::route::{
    DestinationCache, DestinationConfig, IcmpRateLimiter, Inserted, InterfaceId, NextHop, Origin,
    PmtuUpdate, RateLimitConfig, Route, RouteAddress, RouteError, RoutingTable, PMTU_AGING,
};
use stack::time::Instant;

fn ms(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

fn secs(s: u64) -> Instant {
    ms(s * 1_000)
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn route<A: RouteAddress>(prefix: A, len: u8, next_hop: Option<A>, metric: u32) -> Route<A> {
    Route {
        prefix,
        prefix_len: len,
        next_hop,
        interface: InterfaceId(0),
        metric,
        origin: Origin::Static,
    }
}

// ---------------------------------------------------------------- table

#[test]
fn ipv6_longest_prefix_wins_across_overlaps() {
    let mut t = RoutingTable::<Ipv6Addr>::new(16);
    let routes = [
        ("::", 0, Some("fe80::1")),
        ("2001:db8::", 32, Some("fe80::2")),
        ("2001:db8:a::", 48, Some("fe80::3")),
        ("2001:db8:a::", 64, None),
        ("2001:db8:a::42", 128, Some("fe80::4")),
        ("2001:db8:a:0:8000::", 65, Some("fe80::5")),
    ];
    for (prefix, len, nh) in routes {
        t.insert(route(v6(prefix), len, nh.map(v6), 0)).unwrap();
    }
    let cases = [
        ("2001:db8:a::42", "2001:db8:a::42", 128),
        ("2001:db8:a::43", "2001:db8:a::", 64),
        ("2001:db8:a:0:8000::1", "2001:db8:a:0:8000::", 65),
        ("2001:db8:a:1::1", "2001:db8:a::", 48),
        ("2001:db8:b::1", "2001:db8::", 32),
        ("2001:db9::1", "::", 0),
        ("::1", "::", 0),
    ];
    for (dst, prefix, len) in cases {
        let r = t.lookup(v6(dst)).unwrap();
        assert_eq!((r.prefix, r.prefix_len), (v6(prefix), len), "lookup {dst}");
        assert!(r.contains(v6(dst)));
    }
    // On-link: the destination is its own next hop.
    let r = t.lookup(v6("2001:db8:a::43")).unwrap();
    assert_eq!(r.next_hop_for(v6("2001:db8:a::43")), v6("2001:db8:a::43"));
    let r = t.lookup(v6("2001:db9::1")).unwrap();
    assert_eq!(r.next_hop_for(v6("2001:db9::1")), v6("fe80::1"));
}

#[test]
fn ipv4_longest_prefix_wins_across_overlaps() {
    let mut t = RoutingTable::<Ipv4Addr>::new(16);
    for (prefix, len) in [
        ("0.0.0.0", 0),
        ("10.0.0.0", 8),
        ("10.1.0.0", 16),
        ("10.1.2.0", 24),
        ("10.1.2.128", 25),
        ("10.1.2.200", 32),
    ] {
        t.insert(route(v4(prefix), len, None, 0)).unwrap();
    }
    let cases = [
        ("10.1.2.200", 32),
        ("10.1.2.201", 25),
        ("10.1.2.127", 24),
        ("10.1.3.1", 16),
        ("10.2.0.1", 8),
        ("11.0.0.1", 0),
        ("255.255.255.255", 0),
    ];
    for (dst, len) in cases {
        assert_eq!(t.lookup(v4(dst)).unwrap().prefix_len, len, "lookup {dst}");
    }
}

#[test]
fn without_a_default_route_unmatched_destinations_have_no_route() {
    let mut t = RoutingTable::<Ipv6Addr>::new(4);
    t.insert(route(v6("2001:db8::"), 32, None, 0)).unwrap();
    assert!(t.lookup(v6("2001:db9::1")).is_none());
    let default = Route {
        origin: Origin::Default,
        ..route(v6("::"), 0, Some(v6("fe80::1")), 0)
    };
    t.insert(default).unwrap();
    assert_eq!(t.lookup(v6("2001:db9::1")), Some(&default));
    assert!(t.remove(&default.key()).is_some());
    assert!(t.lookup(v6("2001:db9::1")).is_none());
}

#[test]
fn ties_go_to_the_lowest_metric_then_the_first_inserted() {
    let mut t = RoutingTable::<Ipv6Addr>::new(8);
    let p = v6("2001:db8::");
    let a = route(p, 32, Some(v6("fe80::a")), 10);
    let b = route(p, 32, Some(v6("fe80::b")), 5);
    let c = route(p, 32, Some(v6("fe80::c")), 5);
    for r in [a, b, c] {
        assert_eq!(t.insert(r), Ok(Inserted::New));
    }
    let dst = v6("2001:db8::1");
    assert_eq!(t.lookup(dst), Some(&b), "lowest metric, first inserted");
    let order: Vec<_> = t.routes_for(p, 32).copied().collect();
    assert_eq!(order, vec![b, c, a]);
    // Replacing b keeps its place in insertion order...
    let b2 = Route {
        metric: 5,
        interface: InterfaceId(0),
        ..b
    };
    assert_eq!(t.insert(b2), Ok(Inserted::Replaced(b)));
    assert_eq!(t.lookup(dst), Some(&b2));
    // ...and a better metric moves a route to the front.
    let a2 = Route { metric: 1, ..a };
    t.insert(a2).unwrap();
    assert_eq!(t.lookup(dst), Some(&a2));
    assert_eq!(t.len(), 3);
    assert_eq!(t.counters().replaced, 2);
}

#[test]
fn malformed_prefixes_are_refused_and_counted() {
    let mut t = RoutingTable::<Ipv6Addr>::new(4);
    assert_eq!(
        t.insert(route(v6("2001:db8::1"), 64, None, 0)),
        Err(RouteError::HostBitsSet)
    );
    assert_eq!(
        t.insert(route(v6("2001:db8::"), 129, None, 0)),
        Err(RouteError::PrefixTooLong {
            prefix_len: 129,
            bits: 128
        })
    );
    let mut t4 = RoutingTable::<Ipv4Addr>::new(4);
    assert_eq!(
        t4.insert(route(v4("192.0.2.1"), 24, None, 0)),
        Err(RouteError::HostBitsSet)
    );
    assert!(matches!(
        t4.insert(route(v4("192.0.2.1"), 33, None, 0)),
        Err(RouteError::PrefixTooLong { .. })
    ));
    assert!(t4.insert(route(v4("192.0.2.1"), 32, None, 0)).is_ok());
    assert_eq!(t.counters().rejected_invalid, 2);
    assert_eq!(t4.counters().rejected_invalid, 2);
    assert!(t.is_empty());
    assert_eq!(t.generation(), 0, "refusals change nothing");
}

#[test]
fn a_full_table_refuses_new_routes_but_accepts_replacements() {
    let mut t = RoutingTable::<Ipv4Addr>::new(2);
    let a = route(v4("10.0.0.0"), 8, None, 0);
    let b = route(v4("10.1.0.0"), 16, None, 0);
    t.insert(a).unwrap();
    t.insert(b).unwrap();
    assert_eq!(
        t.insert(route(v4("10.2.0.0"), 16, None, 0)),
        Err(RouteError::Full)
    );
    assert_eq!(t.counters().rejected_full, 1);
    assert!(matches!(
        t.insert(Route { metric: 7, ..a }),
        Ok(Inserted::Replaced(_))
    ));
    assert_eq!(t.len(), 2);
}

#[test]
fn ra_routes_expire_at_their_exact_time() {
    let mut t = RoutingTable::<Ipv6Addr>::new(8);
    let ra = |prefix: &str, len, expires| Route {
        origin: Origin::RouterAdvertisement { expires },
        ..route(v6(prefix), len, Some(v6("fe80::1")), 0)
    };
    let default = ra("::", 0, secs(1800));
    let specific = ra("2001:db8:b::", 48, secs(600));
    t.insert(default).unwrap();
    t.insert(specific).unwrap();
    t.insert(route(v6("2001:db8:a::"), 64, None, 0)).unwrap();
    assert_eq!(t.next_deadline(), Some(secs(600)));

    let before = t.generation();
    assert!(t
        .poll(Instant::from_nanos(secs(600).as_nanos() - 1))
        .is_empty());
    assert_eq!(t.generation(), before);
    assert_eq!(t.poll(secs(600)), vec![specific]);
    assert!(t.generation() > before);
    assert_eq!(t.lookup(v6("2001:db8:b::1")), Some(&default));
    assert_eq!(t.next_deadline(), Some(secs(1800)));

    // A new RA refreshes the lifetime: the old deadline is forgotten.
    let refreshed = ra("::", 0, secs(3600));
    assert_eq!(t.insert(refreshed), Ok(Inserted::Replaced(default)));
    assert_eq!(t.next_deadline(), Some(secs(3600)));
    assert!(t.poll(secs(1800)).is_empty());
    assert_eq!(t.poll(secs(3600)), vec![refreshed]);
    assert_eq!(t.next_deadline(), None);
    assert_eq!(t.len(), 1);
    assert_eq!(t.counters().expired, 2);
}

#[test]
fn retain_removes_the_routes_via_a_lost_router() {
    let mut t = RoutingTable::<Ipv6Addr>::new(8);
    let r1 = v6("fe80::1");
    t.insert(route(v6("::"), 0, Some(r1), 0)).unwrap();
    t.insert(route(v6("2001:db8:c::"), 48, Some(r1), 0))
        .unwrap();
    t.insert(route(v6("2001:db8:a::"), 64, None, 0)).unwrap();
    let removed = t.retain(|r| r.next_hop != Some(r1));
    assert_eq!(removed.len(), 2);
    assert_eq!(t.len(), 1);
    assert_eq!(t.routes().len(), 1);
}

#[test]
fn every_change_bumps_the_generation() {
    let mut t = RoutingTable::<Ipv4Addr>::new(8);
    let r = route(v4("192.0.2.0"), 24, None, 0);
    let g0 = t.generation();
    t.insert(r).unwrap();
    let g1 = t.generation();
    t.insert(Route { metric: 3, ..r }).unwrap();
    let g2 = t.generation();
    t.remove(&r.key()).unwrap();
    let g3 = t.generation();
    assert!(g0 < g1 && g1 < g2 && g2 < g3);
    assert!(t.remove(&r.key()).is_none());
    assert_eq!(t.generation(), g3);
}

// ------------------------------------------------- destination cache

fn hop(neighbor: Ipv6Addr, link_mtu: u32) -> NextHop<Ipv6Addr> {
    NextHop {
        neighbor,
        interface: InterfaceId(1),
        source: Some(v6("2001:db8:a::1")),
        link_mtu,
    }
}

#[test]
fn packet_too_big_lowers_the_pmtu_with_a_floor_and_never_raises_it() {
    let mut c = DestinationCache::<Ipv6Addr>::default();
    let dst = v6("2001:db8:b::2");
    c.insert(secs(0), dst, hop(v6("fe80::1"), 1500), 0);
    assert_eq!(c.pmtu(secs(0), dst), Some(1500), "starts at the link MTU");

    assert_eq!(
        c.on_packet_too_big(secs(1), dst, 1400),
        PmtuUpdate::Lowered {
            from: 1500,
            to: 1400
        }
    );
    // RFC 8201 §4: no increase from a PTB, also not to the link MTU.
    assert_eq!(c.on_packet_too_big(secs(2), dst, 1450), PmtuUpdate::Ignored);
    assert_eq!(c.on_packet_too_big(secs(2), dst, 9000), PmtuUpdate::Ignored);
    assert_eq!(c.on_packet_too_big(secs(2), dst, 1400), PmtuUpdate::Ignored);
    assert_eq!(c.pmtu(secs(2), dst), Some(1400));
    // Below 1280: clamped to the IPv6 minimum.
    assert_eq!(
        c.on_packet_too_big(secs(3), dst, 576),
        PmtuUpdate::Lowered {
            from: 1400,
            to: 1280
        }
    );
    assert_eq!(c.on_packet_too_big(secs(3), dst, 100), PmtuUpdate::Ignored);
    assert_eq!(c.pmtu(secs(3), dst), Some(1280));
    assert_eq!(
        c.on_packet_too_big(secs(3), v6("2001:db8::99"), 1300),
        PmtuUpdate::Unknown
    );
    let k = c.counters();
    assert_eq!(
        (k.ptb_lowered, k.ptb_clamped, k.ptb_ignored, k.ptb_unknown),
        (2, 1, 4, 1)
    );
}

#[test]
fn ipv4_pmtu_floor_is_68() {
    let mut c = DestinationCache::<Ipv4Addr>::default();
    let dst = v4("198.51.100.7");
    let hop = NextHop {
        neighbor: v4("192.0.2.1"),
        interface: InterfaceId(0),
        source: None,
        link_mtu: 1500,
    };
    c.insert(secs(0), dst, hop, 0);
    assert_eq!(
        c.on_packet_too_big(secs(0), dst, 20),
        PmtuUpdate::Lowered { from: 1500, to: 68 }
    );
}

#[test]
fn pmtu_ages_back_to_the_link_mtu_after_ten_minutes_exactly() {
    let mut c = DestinationCache::<Ipv6Addr>::default();
    let dst = v6("2001:db8:b::2");
    c.insert(secs(0), dst, hop(v6("fe80::1"), 1500), 0);
    c.on_packet_too_big(secs(100), dst, 1400);
    assert_eq!(c.next_deadline(), Some(secs(100) + PMTU_AGING));
    assert_eq!(PMTU_AGING, Duration::from_secs(600));
    // A later decrease restarts the timer (RFC 8201 §4).
    c.on_packet_too_big(secs(200), dst, 1300);
    let due = secs(200) + PMTU_AGING;
    assert_eq!(c.next_deadline(), Some(due));

    let just_before = Instant::from_nanos(due.as_nanos() - 1);
    assert!(c.poll(just_before).is_empty());
    assert_eq!(c.peek(just_before, dst).unwrap().pmtu, 1300);
    assert_eq!(c.poll(due), vec![dst]);
    assert_eq!(c.peek(due, dst).unwrap().pmtu, 1500);
    assert_eq!(c.next_deadline(), None);
    assert_eq!(c.counters().pmtu_aged, 1);
}

#[test]
fn pmtu_aging_also_applies_on_lookup_without_poll() {
    let mut c = DestinationCache::<Ipv6Addr>::default();
    let dst = v6("2001:db8:b::2");
    c.insert(secs(0), dst, hop(v6("fe80::1"), 1500), 0);
    c.on_packet_too_big(secs(0), dst, 1280);
    assert_eq!(c.lookup(secs(599), dst, 0).unwrap().pmtu, 1280);
    assert_eq!(c.lookup(secs(600), dst, 0).unwrap().pmtu, 1500);
    assert_eq!(c.next_deadline(), None);
}

#[test]
fn pmtu_aging_is_never_shorter_than_five_minutes() {
    let mut c = DestinationCache::<Ipv6Addr>::new(DestinationConfig {
        pmtu_aging: Duration::from_secs(1),
        ..DestinationConfig::default()
    });
    let dst = v6("2001:db8:b::2");
    c.insert(secs(0), dst, hop(v6("fe80::1"), 1500), 0);
    c.on_packet_too_big(secs(0), dst, 1400);
    assert_eq!(c.next_deadline(), Some(secs(300)));
}

#[test]
fn a_routing_change_invalidates_every_entry() {
    let mut table = RoutingTable::<Ipv6Addr>::new(8);
    table
        .insert(route(v6("::"), 0, Some(v6("fe80::1")), 0))
        .unwrap();
    let mut c = DestinationCache::<Ipv6Addr>::default();
    let dsts = [v6("2001:db8:b::2"), v6("2001:db8:c::3")];
    let send = |c: &mut DestinationCache<Ipv6Addr>, table: &RoutingTable<Ipv6Addr>, now, dst| {
        if let Some(view) = c.lookup(now, dst, table.generation()) {
            return (view.next_hop.neighbor, true);
        }
        let r = table.lookup(dst).unwrap();
        c.insert(now, dst, hop(r.next_hop_for(dst), 1500), table.generation());
        (r.next_hop_for(dst), false)
    };
    for dst in dsts {
        assert_eq!(send(&mut c, &table, secs(0), dst), (v6("fe80::1"), false));
        assert_eq!(send(&mut c, &table, secs(1), dst), (v6("fe80::1"), true));
    }
    c.on_packet_too_big(secs(1), dsts[0], 1400);

    // A more specific route appears: every cached entry is stale.
    table
        .insert(route(v6("2001:db8:b::"), 48, Some(v6("fe80::2")), 0))
        .unwrap();
    assert!(c.entries(secs(2)).iter().all(|e| e.valid), "not yet seen");
    assert!(c.lookup(secs(2), dsts[1], table.generation()).is_none());
    assert!(c.entries(secs(2)).iter().all(|e| !e.valid));
    assert_eq!(
        send(&mut c, &table, secs(2), dsts[0]),
        (v6("fe80::2"), false)
    );
    assert_eq!(
        send(&mut c, &table, secs(2), dsts[1]),
        (v6("fe80::1"), false)
    );
    assert_eq!(
        send(&mut c, &table, secs(3), dsts[0]),
        (v6("fe80::2"), true)
    );
    // The PMTU learned for the destination survives the recomputation.
    assert_eq!(c.pmtu(secs(3), dsts[0]), Some(1400));
    let k = c.counters();
    // dsts[1] was looked up twice while stale, dsts[0] once.
    assert_eq!((k.stale, k.generation_changes), (3, 1));
}

#[test]
fn the_cache_is_lru_bounded() {
    let mut c = DestinationCache::<Ipv6Addr>::new(DestinationConfig {
        capacity: 3,
        ..DestinationConfig::default()
    });
    let d = |n: u16| Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n);
    for n in 1..=3 {
        assert!(c
            .insert(secs(u64::from(n)), d(n), hop(v6("fe80::1"), 1500), 0)
            .is_none());
    }
    // Use 1, so 2 is the least recently used.
    assert!(c.lookup(secs(4), d(1), 0).is_some());
    let evicted = c
        .insert(secs(5), d(4), hop(v6("fe80::1"), 1500), 0)
        .unwrap();
    assert_eq!(evicted.destination, d(2));
    let evicted = c
        .insert(secs(6), d(5), hop(v6("fe80::1"), 1500), 0)
        .unwrap();
    assert_eq!(evicted.destination, d(3));
    assert_eq!(c.len(), 3);
    let listed: Vec<_> = c.entries(secs(7)).iter().map(|e| e.destination).collect();
    assert_eq!(listed, vec![d(1), d(4), d(5)]);
    assert_eq!(c.counters().evictions, 2);
    let e = c.peek(secs(7), d(1)).unwrap();
    assert_eq!(
        (e.age, e.idle),
        (Duration::from_secs(6), Duration::from_secs(3))
    );
    assert_eq!(e.next_hop.source, Some(v6("2001:db8:a::1")));
    for n in 100..1000 {
        c.insert(secs(8), d(n), hop(v6("fe80::1"), 1500), 0);
        assert!(c.len() <= 3);
    }
}

// ------------------------------------------------------- rate limiter

#[test]
fn rate_limiter_allows_a_burst_then_spaces_errors_at_the_rate() {
    // RFC 4443 §2.4(f) example defaults: B = 10, N = 10/s.
    let mut rl = IcmpRateLimiter::default();
    assert_eq!(
        rl.config(),
        RateLimitConfig {
            burst: 10,
            interval: Duration::from_millis(100)
        }
    );
    let burst = (0..20).filter(|_| rl.allow(ms(5))).count();
    assert_eq!(burst, 10);
    // Then one per 100 ms, at the exact times.
    let mut sent = Vec::new();
    for t in (6..=1000).step_by(1) {
        if rl.allow(ms(t)) {
            sent.push(t);
        }
    }
    assert_eq!(sent, vec![105, 205, 305, 405, 505, 605, 705, 805, 905]);
    let k = rl.counters();
    assert_eq!(k.allowed, 19);
    assert_eq!(k.suppressed, 10 + (995 - 9));
    // Idle time refills to the burst, no further.
    assert_eq!(rl.available(secs(100)), 10);
}

#[test]
fn per_destination_rate_limit_lives_in_the_cache_entry() {
    let mut c = DestinationCache::<Ipv6Addr>::new(DestinationConfig {
        icmp: RateLimitConfig {
            burst: 2,
            interval: Duration::from_secs(1),
        },
        ..DestinationConfig::default()
    });
    let (a, b) = (v6("2001:db8::a"), v6("2001:db8::b"));
    c.insert(secs(0), a, hop(a, 1500), 0);
    c.insert(secs(0), b, hop(b, 1500), 0);
    assert_eq!(c.allow_icmp_error(secs(0), a), Some(true));
    assert_eq!(c.allow_icmp_error(secs(0), a), Some(true));
    assert_eq!(c.allow_icmp_error(secs(0), a), Some(false));
    assert_eq!(c.allow_icmp_error(secs(0), b), Some(true));
    assert_eq!(c.allow_icmp_error(secs(1), a), Some(true));
    assert_eq!(c.allow_icmp_error(secs(0), v6("2001:db8::c")), None);
}

// ------------------------------------------------------------ proptest

/// The model: routes in insertion order (a replacement keeps its place).
fn model_insert<A: RouteAddress>(model: &mut Vec<Route<A>>, r: Route<A>) {
    match model.iter_mut().find(|m| m.key() == r.key()) {
        Some(m) => *m = r,
        None => model.push(r),
    }
}

/// Brute force: the longest containing prefix, then the lowest metric,
/// then the first inserted.
fn model_lookup<A: RouteAddress>(model: &[Route<A>], dst: A) -> Option<Route<A>> {
    let mut best: Option<Route<A>> = None;
    for r in model.iter().filter(|r| r.contains(dst)) {
        let better = match best {
            None => true,
            Some(b) => {
                (r.prefix_len, std::cmp::Reverse(r.metric))
                    > (b.prefix_len, std::cmp::Reverse(b.metric))
            }
        };
        if better {
            best = Some(*r);
        }
    }
    best
}

/// Addresses clustered near a few bases so prefixes overlap and match.
fn addr_bits(bits: u32) -> impl Strategy<Value = u128> {
    let bases = if bits == 128 {
        vec![
            0u128,
            0x2001_0db8u128 << 96,
            0x2001_0db8_000au128 << 80,
            u128::MAX,
        ]
    } else {
        vec![0u128, 0x0a00_0000, 0xc000_0200, 0xffff_ffff]
    };
    (proptest::sample::select(bases), any::<u128>(), 0..=bits).prop_map(
        move |(base, noise, keep)| {
            let width_mask = if bits == 128 {
                u128::MAX
            } else {
                (1u128 << bits) - 1
            };
            // Flip only the low `bits - keep` bits of the base.
            let tail = if keep == bits {
                0
            } else {
                noise & (width_mask >> keep)
            };
            (base ^ tail) & width_mask
        },
    )
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        bits: u128,
        len: u8,
        hop: u8,
        metric: u32,
    },
    Remove {
        index: usize,
    },
}

fn ops(bits: u32) -> impl Strategy<Value = Vec<Op>> {
    let max_len = bits as u8;
    let op = prop_oneof![
        4 => (addr_bits(bits), 0..=max_len, 0u8..3, 0u32..3)
            .prop_map(|(bits, len, hop, metric)| Op::Insert { bits, len, hop, metric }),
        1 => any::<usize>().prop_map(|index| Op::Remove { index }),
    ];
    proptest::collection::vec(op, 0..60)
}

fn check_against_model<A: RouteAddress>(ops: &[Op], probes: &[u128]) -> Result<(), TestCaseError> {
    let mut table = RoutingTable::<A>::new(1000);
    let mut model: Vec<Route<A>> = Vec::new();
    for op in ops {
        match *op {
            Op::Insert {
                bits,
                len,
                hop,
                metric,
            } => {
                let prefix = A::from_bits(bits).masked(len);
                let r = Route {
                    prefix,
                    prefix_len: len,
                    next_hop: (hop > 0).then(|| A::from_bits(u128::from(hop))),
                    interface: InterfaceId(usize::from(hop)),
                    metric,
                    origin: Origin::Static,
                };
                table.insert(r).unwrap();
                model_insert(&mut model, r);
            }
            Op::Remove { index } => {
                if !model.is_empty() {
                    let r = model.remove(index % model.len());
                    prop_assert_eq!(table.remove(&r.key()), Some(r));
                }
            }
        }
    }
    prop_assert_eq!(table.len(), model.len());
    for &p in probes {
        let dst = A::from_bits(p);
        prop_assert_eq!(
            table.lookup(dst).copied(),
            model_lookup(&model, dst),
            "dst {}",
            dst
        );
    }
    for r in &model {
        // Every route's own prefix finds a route at least as long.
        prop_assert!(table.lookup(r.prefix).unwrap().prefix_len >= r.prefix_len);
    }
    Ok(())
}

proptest! {
    #[test]
    fn ipv6_lookup_matches_a_linear_scan(
        ops in ops(128),
        probes in proptest::collection::vec(addr_bits(128), 1..40),
    ) {
        check_against_model::<Ipv6Addr>(&ops, &probes)?;
    }

    #[test]
    fn ipv4_lookup_matches_a_linear_scan(
        ops in ops(32),
        probes in proptest::collection::vec(addr_bits(32), 1..40),
    ) {
        check_against_model::<Ipv4Addr>(&ops, &probes)?;
    }
}
