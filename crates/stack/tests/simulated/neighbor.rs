//! The neighbour cache on virtual time: address resolution, every NUD
//! transition at its RFC 4861 time, the §7.2.5 advertisement rules, the LRU
//! bound under a flood, and random event sequences.

use std::collections::VecDeque;
use std::net::Ipv6Addr;
use std::time::Duration;

use proptest::prelude::*;
use stack::iface::neighbor::{
    Action, AdvertisementFlags, Evicted, NeighborCache, NeighborConfig, NeighborState, Resolution,
};
use stack::time::Instant;
use wire::ethernet::EthernetAddress;

type Cache = NeighborCache<Ipv6Addr, EthernetAddress, u32>;

fn ms(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

fn secs(s: u64) -> Instant {
    ms(s * 1_000)
}

fn ip(n: u32) -> Ipv6Addr {
    Ipv6Addr::from(0x2001_0db8_0000_0000_0000_0000_0000_0000u128 | u128::from(n))
}

fn mac(n: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, n])
}

fn cache() -> Cache {
    NeighborCache::new(NeighborConfig::default())
}

#[test]
fn the_default_queue_holds_a_largest_datagrams_fragments() {
    // 65 527 bytes of UDP over IPv6 at MTU 1500: 46 fragments of up to 1448.
    let fragments = (65_527u32 + 8).div_ceil(1448);
    assert_eq!(fragments, 46);
    let mut c = cache();
    let target = ip(1);
    assert!(matches!(
        c.lookup(ms(0), target, 0),
        Resolution::Queued { dropped: None } | Resolution::Solicit { .. }
    ));
    for packet in 1..fragments {
        assert_eq!(
            c.lookup(ms(0), target, packet),
            Resolution::Queued { dropped: None },
            "fragment {packet}"
        );
    }
}

fn with_capacity(capacity: usize) -> Cache {
    NeighborCache::new(NeighborConfig {
        capacity,
        ..NeighborConfig::default()
    })
}

const SOLICITED: AdvertisementFlags = AdvertisementFlags {
    router: false,
    solicited: true,
    override_: true,
};

const UNSOLICITED_OVERRIDE: AdvertisementFlags = AdvertisementFlags {
    router: false,
    solicited: false,
    override_: true,
};

fn state(cache: &Cache, addr: Ipv6Addr) -> Option<NeighborState> {
    cache.get(addr).map(|entry| entry.state)
}

fn queue(packets: &[u32]) -> VecDeque<u32> {
    packets.iter().copied().collect()
}

/// An entry for `addr` at `lladdr` made REACHABLE at `now`.
fn resolved(cache: &mut Cache, now: Instant, addr: Ipv6Addr, lladdr: EthernetAddress) {
    assert!(matches!(
        cache.lookup(now, addr, 0),
        Resolution::Solicit { .. }
    ));
    let actions = cache.on_advertisement(now, addr, Some(lladdr), SOLICITED);
    assert_eq!(actions.len(), 1);
    assert_eq!(state(cache, addr), Some(NeighborState::Reachable));
}

#[test]
fn resolution_from_nothing_flushes_the_queue_in_order() {
    let mut c = cache();
    let target = ip(1);
    // §7.2.2: no entry: INCOMPLETE, packet queued, multicast NS now.
    assert_eq!(
        c.lookup(ms(0), target, 1),
        Resolution::Solicit { evicted: None }
    );
    assert_eq!(
        c.lookup(ms(100), target, 2),
        Resolution::Queued { dropped: None }
    );
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Incomplete);
    assert_eq!(entry.lladdr, None);
    assert_eq!(entry.queued, 2);
    assert_eq!(entry.probes_sent, 1);
    assert_eq!(entry.deadline, Some(ms(1_000)));
    assert_eq!(c.next_deadline(), Some(ms(1_000)));

    // §7.2.5: solicited NA with a TLLA → REACHABLE, queued packets sent.
    let actions = c.on_advertisement(ms(300), target, Some(mac(7)), SOLICITED);
    assert_eq!(
        actions,
        vec![Action::Transmit {
            target,
            lladdr: mac(7),
            packets: queue(&[1, 2]),
        }]
    );
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Reachable);
    assert_eq!(entry.lladdr, Some(mac(7)));
    assert_eq!(entry.deadline, Some(ms(300) + Duration::from_secs(30)));
    assert_eq!(
        c.lookup(ms(400), target, 3),
        Resolution::Send {
            lladdr: mac(7),
            packet: 3
        }
    );
    assert_eq!(c.counters().packets_flushed, 2);
    assert_eq!(c.counters().multicast_solicitations, 1);
    assert!(c.poll(ms(1_000)).is_empty(), "no retransmit once resolved");
}

#[test]
fn na_without_tlla_does_not_resolve() {
    let mut c = cache();
    let _ = c.lookup(ms(0), ip(1), 1);
    // §7.2.5: INCOMPLETE and no target link-layer address: discard.
    assert!(c.on_advertisement(ms(1), ip(1), None, SOLICITED).is_empty());
    assert_eq!(state(&c, ip(1)), Some(NeighborState::Incomplete));
    assert_eq!(c.counters().advertisements_ignored, 1);
    // §7.2.5: no entry: an NA creates nothing.
    assert!(c
        .on_advertisement(ms(1), ip(2), Some(mac(2)), UNSOLICITED_OVERRIDE)
        .is_empty());
    assert_eq!(c.get(ip(2)), None);
}

#[test]
fn unsolicited_na_resolves_to_stale_and_sending_the_queue_delays() {
    let mut c = cache();
    let _ = c.lookup(ms(0), ip(1), 1);
    let actions = c.on_advertisement(ms(500), ip(1), Some(mac(1)), UNSOLICITED_OVERRIDE);
    assert_eq!(actions.len(), 1);
    // Appendix C: STALE; the queued packet is sent through it (§7.3.3) →
    // DELAY for DELAY_FIRST_PROBE_TIME.
    let entry = c.get(ip(1)).unwrap();
    assert_eq!(entry.state, NeighborState::Delay);
    assert_eq!(entry.deadline, Some(ms(5_500)));
}

#[test]
fn queue_overflow_drops_the_oldest() {
    let mut c = NeighborCache::new(NeighborConfig {
        max_queued_per_entry: 3,
        ..NeighborConfig::default()
    });
    let target = ip(1);
    let _ = c.lookup(ms(0), target, 1);
    assert_eq!(
        c.lookup(ms(0), target, 2),
        Resolution::Queued { dropped: None }
    );
    assert_eq!(
        c.lookup(ms(0), target, 3),
        Resolution::Queued { dropped: None }
    );
    assert_eq!(
        c.lookup(ms(0), target, 4),
        Resolution::Queued { dropped: Some(1) }
    );
    assert_eq!(
        c.lookup(ms(0), target, 5),
        Resolution::Queued { dropped: Some(2) }
    );
    assert_eq!(c.counters().queue_overflows, 2);
    assert_eq!(c.get(target).unwrap().queued, 3);
    let actions = c.on_advertisement(ms(1), target, Some(mac(1)), SOLICITED);
    assert_eq!(
        actions,
        vec![Action::Transmit {
            target,
            lladdr: mac(1),
            packets: queue(&[3, 4, 5]),
        }]
    );
}

#[test]
fn a_zero_queue_limit_still_holds_one_packet() {
    let mut c: Cache = NeighborCache::new(NeighborConfig {
        max_queued_per_entry: 0,
        ..NeighborConfig::default()
    });
    let _ = c.lookup(ms(0), ip(1), 1);
    assert_eq!(
        c.lookup(ms(0), ip(1), 2),
        Resolution::Queued { dropped: Some(1) }
    );
    assert_eq!(c.get(ip(1)).unwrap().queued, 1);
}

#[test]
fn incomplete_without_answer_fails_after_three_solicitations() {
    let mut c = cache();
    let target = ip(9);
    let _ = c.lookup(ms(0), target, 1);
    let _ = c.lookup(ms(10), target, 2);
    let ns = Action::SendSolicitation {
        target,
        unicast_to: None,
    };
    assert!(c.poll(ms(999)).is_empty());
    assert_eq!(c.poll(ms(1_000)), vec![ns.clone()]);
    assert_eq!(c.next_deadline(), Some(ms(2_000)));
    assert!(c.poll(ms(1_999)).is_empty());
    assert_eq!(c.poll(ms(2_000)), vec![ns]);
    assert_eq!(c.get(target).unwrap().probes_sent, 3);
    assert_eq!(c.next_deadline(), Some(ms(3_000)));
    assert!(c.poll(ms(2_999)).is_empty());
    // §7.2.2: RetransTimer after the third solicitation: failed; the queued
    // packets come back for ICMPv6 Destination Unreachable code 3.
    assert_eq!(
        c.poll(ms(3_000)),
        vec![Action::Unreachable {
            target,
            is_router: false,
            packets: queue(&[1, 2]),
        }]
    );
    assert_eq!(c.get(target), None);
    assert_eq!(c.next_deadline(), None);
    assert_eq!(c.counters().resolutions_failed, 1);
    assert_eq!(c.counters().multicast_solicitations, 3);
    // Later traffic starts over.
    assert_eq!(
        c.lookup(ms(4_000), target, 3),
        Resolution::Solicit { evicted: None }
    );
}

#[test]
fn full_nud_walk_at_rfc_times() {
    let mut c = cache();
    let target = ip(2);
    let ll = mac(2);
    resolved(&mut c, secs(10), target, ll);

    // §7.3.3: REACHABLE for ReachableTime (30 s), then STALE.
    assert_eq!(c.next_deadline(), Some(secs(40)));
    assert!(c.poll(ms(39_999)).is_empty());
    assert_eq!(state(&c, target), Some(NeighborState::Reachable));
    assert!(c.poll(secs(40)).is_empty());
    assert_eq!(state(&c, target), Some(NeighborState::Stale));
    assert_eq!(c.get(target).unwrap().deadline, None);
    assert_eq!(c.next_deadline(), None);
    // STALE waits indefinitely.
    assert!(c.poll(secs(1_000)).is_empty());

    // §7.3.3: sending to STALE: send, DELAY for DELAY_FIRST_PROBE_TIME.
    assert_eq!(
        c.lookup(secs(1_000), target, 5),
        Resolution::Send {
            lladdr: ll,
            packet: 5
        }
    );
    assert_eq!(state(&c, target), Some(NeighborState::Delay));
    assert_eq!(c.next_deadline(), Some(secs(1_005)));
    // DELAY and PROBE still send to the cached address.
    assert!(matches!(
        c.lookup(secs(1_001), target, 6),
        Resolution::Send { .. }
    ));
    assert!(c.poll(ms(1_004_999)).is_empty());

    // DELAY expired: PROBE, first unicast NS now, then every RetransTimer.
    let probe = Action::SendSolicitation {
        target,
        unicast_to: Some(ll),
    };
    assert_eq!(c.poll(secs(1_005)), vec![probe.clone()]);
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Probe);
    assert_eq!(entry.probes_sent, 1);
    assert_eq!(entry.deadline, Some(secs(1_006)));
    assert!(matches!(
        c.lookup(secs(1_005), target, 7),
        Resolution::Send { .. }
    ));
    assert!(c.poll(ms(1_005_999)).is_empty());
    assert_eq!(c.poll(secs(1_006)), vec![probe.clone()]);
    assert_eq!(c.poll(secs(1_007)), vec![probe]);
    assert_eq!(c.get(target).unwrap().probes_sent, 3);
    assert!(c.poll(ms(1_007_999)).is_empty());
    // MAX_UNICAST_SOLICIT probes and RetransTimer without answer: deleted.
    assert_eq!(
        c.poll(secs(1_008)),
        vec![Action::Unreachable {
            target,
            is_router: false,
            packets: VecDeque::new(),
        }]
    );
    assert!(c.is_empty());

    let counters = c.counters();
    assert_eq!(counters.unreachable, 1);
    assert_eq!(counters.unicast_solicitations, 3);
    assert_eq!(counters.transitions_to(NeighborState::Reachable), 1);
    assert_eq!(counters.transitions_to(NeighborState::Stale), 1);
    assert_eq!(counters.transitions_to(NeighborState::Delay), 1);
    assert_eq!(counters.transitions_to(NeighborState::Probe), 1);
}

#[test]
fn a_late_poll_does_not_burst() {
    let mut c = cache();
    let _ = c.lookup(ms(0), ip(1), 1);
    // The runner was 10 s late: one retransmission, next one a RetransTimer
    // after it.
    assert_eq!(c.poll(secs(10)).len(), 1);
    assert_eq!(c.next_deadline(), Some(secs(11)));
}

#[test]
fn confirmation_in_delay_and_probe_gives_reachable() {
    let mut c = cache();
    let target = ip(3);
    resolved(&mut c, secs(0), target, mac(3));
    let _ = c.poll(secs(30));
    let _ = c.lookup(secs(31), target, 1);
    assert_eq!(state(&c, target), Some(NeighborState::Delay));
    // §7.3.1 upper-layer hint in DELAY → REACHABLE for ReachableTime.
    assert!(c.on_reachability_confirmation(secs(33), target));
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Reachable);
    assert_eq!(entry.deadline, Some(secs(63)));
    assert!(c.poll(secs(36)).is_empty(), "no probe after confirmation");

    // PROBE answered by the solicited NA → REACHABLE.
    let _ = c.poll(secs(63));
    let _ = c.lookup(secs(64), target, 2);
    let _ = c.poll(secs(69));
    assert_eq!(state(&c, target), Some(NeighborState::Probe));
    let unicast_reply = AdvertisementFlags {
        router: false,
        solicited: true,
        override_: false,
    };
    assert!(c
        .on_advertisement(ms(69_200), target, Some(mac(3)), unicast_reply)
        .is_empty());
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Reachable);
    assert_eq!(entry.probes_sent, 0);
    assert_eq!(entry.deadline, Some(ms(99_200)));

    // INCOMPLETE and unknown entries cannot be confirmed.
    let _ = c.lookup(secs(70), ip(4), 1);
    assert!(!c.on_reachability_confirmation(secs(70), ip(4)));
    assert!(!c.on_reachability_confirmation(secs(70), ip(5)));
}

#[test]
fn na_without_override_and_a_new_address_only_marks_stale() {
    let mut c = cache();
    let target = ip(4);
    resolved(&mut c, secs(0), target, mac(4));
    let no_override = AdvertisementFlags {
        router: false,
        solicited: true,
        override_: false,
    };
    // §7.2.5: REACHABLE, O clear, different address → STALE, address kept.
    assert!(c
        .on_advertisement(secs(1), target, Some(mac(44)), no_override)
        .is_empty());
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(entry.lladdr, Some(mac(4)));
    // In any other state such an advertisement is ignored.
    assert!(c
        .on_advertisement(secs(2), target, Some(mac(44)), no_override)
        .is_empty());
    assert_eq!(c.get(target).unwrap().lladdr, Some(mac(4)));
    assert_eq!(c.get(target).unwrap().state, NeighborState::Stale);
    assert_eq!(c.counters().advertisements_ignored, 1);
    // O clear with the same address and S set does confirm.
    let _ = c.on_advertisement(secs(3), target, Some(mac(4)), no_override);
    assert_eq!(state(&c, target), Some(NeighborState::Reachable));
    // A solicited NA without a TLLA confirms the cached address.
    let _ = c.poll(secs(33));
    let _ = c.on_advertisement(secs(34), target, None, no_override);
    assert_eq!(state(&c, target), Some(NeighborState::Reachable));
}

#[test]
fn unsolicited_override_na_updates_the_address_to_stale() {
    let mut c = cache();
    let target = ip(5);
    resolved(&mut c, secs(0), target, mac(5));
    // §7.2.5: O set, S clear, different address → recorded, STALE.
    assert!(c
        .on_advertisement(secs(1), target, Some(mac(55)), UNSOLICITED_OVERRIDE)
        .is_empty());
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(entry.lladdr, Some(mac(55)));
    // Same address, S clear: state unchanged.
    let _ = c.on_advertisement(secs(2), target, Some(mac(55)), UNSOLICITED_OVERRIDE);
    assert_eq!(state(&c, target), Some(NeighborState::Stale));
    // O set, S set, new address → recorded, REACHABLE.
    let _ = c.on_advertisement(secs(3), target, Some(mac(56)), SOLICITED);
    let entry = c.get(target).unwrap();
    assert_eq!(entry.state, NeighborState::Reachable);
    assert_eq!(entry.lladdr, Some(mac(56)));
}

#[test]
fn solicitation_with_slla_creates_and_updates_stale() {
    let mut c = cache();
    let source = ip(6);
    // §7.2.3: no entry: created STALE, IsRouter FALSE.
    assert!(c.on_solicitation(secs(0), source, Some(mac(6))).is_empty());
    let entry = c.get(source).unwrap();
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(entry.lladdr, Some(mac(6)));
    assert!(!entry.is_router);
    assert_eq!(c.next_deadline(), None);
    // Without the option nothing is created.
    assert!(c.on_solicitation(secs(0), ip(66), None).is_empty());
    assert_eq!(c.get(ip(66)), None);

    // Same address on a REACHABLE entry: unchanged; a different one:
    // updated and STALE.
    let _ = c.on_advertisement(secs(1), source, None, SOLICITED);
    assert_eq!(state(&c, source), Some(NeighborState::Reachable));
    let _ = c.on_solicitation(secs(2), source, Some(mac(6)));
    assert_eq!(state(&c, source), Some(NeighborState::Reachable));
    let _ = c.on_solicitation(secs(3), source, Some(mac(60)));
    let entry = c.get(source).unwrap();
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(entry.lladdr, Some(mac(60)));

    // INCOMPLETE: the solicitation resolves it and the queue is sent.
    let _ = c.lookup(secs(4), ip(7), 70);
    assert_eq!(
        c.on_solicitation(secs(4), ip(7), Some(mac(7))),
        vec![Action::Transmit {
            target: ip(7),
            lladdr: mac(7),
            packets: queue(&[70]),
        }]
    );
    assert_eq!(state(&c, ip(7)), Some(NeighborState::Delay));
}

#[test]
fn router_flag_cleared_by_na_reports_router_lost() {
    let mut c = cache();
    let router = ip(8);
    // §6.3.4: an RA with SLLA creates the entry with IsRouter TRUE.
    assert!(c
        .on_router_advertisement(secs(0), router, Some(mac(8)))
        .is_empty());
    assert!(c.get(router).unwrap().is_router);
    let as_router = AdvertisementFlags {
        router: true,
        ..SOLICITED
    };
    assert!(c
        .on_advertisement(secs(1), router, Some(mac(8)), as_router)
        .is_empty());
    // §7.2.5: IsRouter TRUE → FALSE: remove from the Default Router List.
    assert_eq!(
        c.on_advertisement(secs(2), router, Some(mac(8)), SOLICITED),
        vec![Action::RouterLost { target: router }]
    );
    assert!(!c.get(router).unwrap().is_router);
    // Once cleared, no second report.
    assert!(c
        .on_advertisement(secs(3), router, Some(mac(8)), SOLICITED)
        .is_empty());
    // §6.3.4: an RA without SLLA sets IsRouter on the existing entry;
    // §6.2.6: an RS clears it.
    assert!(c.on_router_advertisement(secs(4), router, None).is_empty());
    assert!(c.get(router).unwrap().is_router);
    assert_eq!(
        c.on_router_solicitation(secs(5), router, None),
        vec![Action::RouterLost { target: router }]
    );
    // §8.3: a redirect to a router sets IsRouter.
    let _ = c.on_redirect(secs(6), router, Some(mac(8)), true);
    assert!(c.get(router).unwrap().is_router);
}

#[test]
fn lru_eviction_at_capacity() {
    let mut c = with_capacity(3);
    resolved(&mut c, secs(0), ip(1), mac(1));
    resolved(&mut c, secs(0), ip(2), mac(2));
    resolved(&mut c, secs(0), ip(3), mac(3));
    // Use ip(1): ip(2) is now the least recently used.
    let _ = c.lookup(secs(1), ip(1), 0);
    match c.lookup(secs(2), ip(4), 40) {
        Resolution::Solicit {
            evicted: Some(evicted),
        } => assert_eq!(
            evicted,
            Evicted {
                target: ip(2),
                state: NeighborState::Reachable,
                is_router: false,
                packets: VecDeque::new(),
            }
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.len(), 3);
    assert_eq!(c.get(ip(2)), None);

    // Unconfirmed (INCOMPLETE, STALE) entries go first, even if more
    // recently used than the confirmed ones: ip(4) is INCOMPLETE.
    match c.lookup(secs(3), ip(5), 50) {
        Resolution::Solicit {
            evicted: Some(evicted),
        } => {
            assert_eq!(evicted.target, ip(4));
            assert_eq!(evicted.state, NeighborState::Incomplete);
            assert_eq!(evicted.packets, queue(&[40]));
        }
        other => panic!("{other:?}"),
    }
    // A solicitation creating an entry reports its eviction as an action.
    let actions = c.on_solicitation(secs(4), ip(6), Some(mac(6)));
    assert!(matches!(
        actions.as_slice(),
        [Action::Evicted(Evicted { target, .. })] if *target == ip(5)
    ));
    assert_eq!(c.len(), 3);
    assert_eq!(c.counters().evictions, 3);
    assert_eq!(c.counters().evicted_packets, 2);
    assert!(c.get(ip(1)).is_some() && c.get(ip(3)).is_some());
}

#[test]
fn flood_of_unknown_destinations_stays_at_capacity() {
    let capacity = 64;
    let mut c = with_capacity(capacity);
    resolved(&mut c, secs(0), ip(0), mac(0));
    for n in 1..=100_000u32 {
        let _ = c.lookup(ms(u64::from(n) / 100), ip(n), n);
        assert!(c.len() <= capacity);
    }
    assert_eq!(c.len(), capacity);
    assert!(c.entries().all(|entry| entry.queued <= 3));
    // The neighbour in use survived the flood.
    assert_eq!(state(&c, ip(0)), Some(NeighborState::Reachable));
    assert_eq!(c.counters().evictions, 100_000 - (capacity as u64 - 1));

    // Same for a flood of solicitations from forged sources.
    for n in 200_000..300_000u32 {
        let _ = c.on_solicitation(secs(1), ip(n), Some(mac(1)));
    }
    assert_eq!(c.len(), capacity);
    assert_eq!(state(&c, ip(0)), Some(NeighborState::Reachable));
}

#[test]
fn next_deadline_is_the_earliest_timer() {
    let mut c = cache();
    assert_eq!(c.next_deadline(), None);
    resolved(&mut c, secs(0), ip(1), mac(1)); // REACHABLE until 30 s
    assert_eq!(c.next_deadline(), Some(secs(30)));
    let _ = c.lookup(secs(2), ip(2), 0); // INCOMPLETE, retransmit at 3 s
    assert_eq!(c.next_deadline(), Some(secs(3)));
    let _ = c.on_solicitation(secs(2), ip(3), Some(mac(3))); // STALE, no timer
    let _ = c.lookup(ms(2_500), ip(3), 0); // DELAY until 7.5 s
    assert_eq!(c.next_deadline(), Some(secs(3)));
    let mut now = secs(3);
    while let Some(deadline) = c.next_deadline() {
        let earliest = c.entries().filter_map(|entry| entry.deadline).min();
        assert_eq!(Some(deadline), earliest);
        assert!(deadline >= now);
        now = deadline;
        let _ = c.poll(now);
        for entry in c.entries() {
            assert!(entry.deadline.is_none_or(|d| d > now));
            assert_eq!(entry.time_left(now).is_some(), entry.deadline.is_some());
        }
    }
    // INCOMPLETE failed, DELAY probed and failed, REACHABLE went STALE.
    assert_eq!(c.len(), 1);
    assert_eq!(state(&c, ip(1)), Some(NeighborState::Stale));
}

#[test]
fn states_print_their_rfc_names() {
    let names: Vec<String> = NeighborState::ALL.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names,
        ["INCOMPLETE", "REACHABLE", "STALE", "DELAY", "PROBE"]
    );
}

#[derive(Debug, Clone)]
enum Event {
    Lookup(u8),
    Advertise(u8, Option<u8>, bool, bool, bool),
    Solicit(u8, Option<u8>),
    RouterAdvert(u8, Option<u8>),
    Confirm(u8),
    Remove(u8),
    Advance(u16),
    PollAtDeadline,
}

fn event() -> impl Strategy<Value = Event> {
    let addr = 0u8..24;
    let lladdr = proptest::option::of(0u8..4);
    prop_oneof![
        4 => addr.clone().prop_map(Event::Lookup),
        3 => (addr.clone(), lladdr.clone(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(a, l, s, o, r)| Event::Advertise(a, l, s, o, r)),
        2 => (addr.clone(), lladdr.clone()).prop_map(|(a, l)| Event::Solicit(a, l)),
        1 => (addr.clone(), lladdr).prop_map(|(a, l)| Event::RouterAdvert(a, l)),
        1 => addr.clone().prop_map(Event::Confirm),
        1 => addr.prop_map(Event::Remove),
        3 => (0u16..8_000).prop_map(Event::Advance),
        2 => Just(Event::PollAtDeadline),
    ]
}

proptest! {
    #[test]
    fn random_events_keep_the_invariants(
        capacity in 1usize..8,
        max_queued in 1usize..4,
        events in proptest::collection::vec(event(), 1..200),
    ) {
        let mut c: Cache = NeighborCache::new(NeighborConfig {
            capacity,
            max_queued_per_entry: max_queued,
            random_seed: Some(capacity as u64),
            ..NeighborConfig::default()
        });
        let mut now = Instant::ZERO;
        let mut last_poll = Instant::ZERO;
        let mut packet = 0u32;
        for event in events {
            match event {
                Event::Lookup(a) => {
                    packet += 1;
                    let _ = c.lookup(now, ip(a.into()), packet);
                }
                Event::Advertise(a, l, solicited, override_, router) => {
                    let flags = AdvertisementFlags { router, solicited, override_ };
                    let _ = c.on_advertisement(now, ip(a.into()), l.map(mac), flags);
                }
                Event::Solicit(a, l) => {
                    let _ = c.on_solicitation(now, ip(a.into()), l.map(mac));
                }
                Event::RouterAdvert(a, l) => {
                    let _ = c.on_router_advertisement(now, ip(a.into()), l.map(mac));
                }
                Event::Confirm(a) => {
                    let _ = c.on_reachability_confirmation(now, ip(a.into()));
                }
                Event::Remove(a) => {
                    let _ = c.remove(ip(a.into()));
                }
                Event::Advance(millis) => {
                    now += Duration::from_millis(millis.into());
                    let _ = c.poll(now);
                    last_poll = now;
                }
                Event::PollAtDeadline => {
                    if let Some(deadline) = c.next_deadline() {
                        now = now.max(deadline);
                        let _ = c.poll(now);
                        last_poll = now;
                    }
                }
            }
            prop_assert!(c.len() <= capacity);
            prop_assert_eq!(c.entries().count(), c.len());
            for entry in c.entries() {
                prop_assert!(entry.queued <= max_queued);
                prop_assert_eq!(entry.lladdr.is_none(), entry.state == NeighborState::Incomplete);
                prop_assert_eq!(entry.deadline.is_none(), entry.state == NeighborState::Stale);
            }
            let earliest = c.entries().filter_map(|entry| entry.deadline).min();
            prop_assert_eq!(c.next_deadline(), earliest);
            if let Some(deadline) = c.next_deadline() {
                prop_assert!(deadline > last_poll);
            }
        }
    }
}
