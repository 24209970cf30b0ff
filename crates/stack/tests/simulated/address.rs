//! NTEs, DAD, router solicitation, the Router and Prefix Lists and SLAAC on
//! virtual time: each RFC 4861 / RFC 4862 rule at its exact instant, the
//! memory bounds under a flood, and random event sequences.

use std::collections::BTreeSet;
use std::net::Ipv6Addr;
use std::time::Duration;

use proptest::prelude::*;
use stack::iface::address::{
    link_local_from_mac, modified_eui64, AddressAction, AddressConfig, AddressOrigin, AddressState,
    Expiry, InterfaceAddresses, NsDisposition, PrefixInformation, RouterAdvertisement,
    INFINITE_LIFETIME, TWO_HOURS,
};
use stack::time::Instant;
use wire::ethernet::EthernetAddress;
use wire::ipv6::solicited_node;

use AddressAction::*;

const MAC: EthernetAddress = EthernetAddress([0x00, 0x00, 0x5e, 0x00, 0x53, 0x01]);
const IID: [u8; 8] = [0x02, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x53, 0x01];

fn ms(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

fn secs(s: u64) -> Instant {
    ms(s * 1_000)
}

/// One nanosecond before `t`.
fn just_before(t: Instant) -> Instant {
    Instant::from_nanos(t.as_nanos() - 1)
}

fn ip(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn link_local() -> Ipv6Addr {
    ip("fe80::200:5eff:fe00:5301")
}

fn slaac_a() -> Ipv6Addr {
    ip("2001:db8:a::200:5eff:fe00:5301")
}

fn router(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, n)
}

fn host() -> InterfaceAddresses {
    InterfaceAddresses::new(AddressConfig::default(), IID)
}

fn quiet_host() -> InterfaceAddresses {
    InterfaceAddresses::new(
        AddressConfig {
            solicit_routers: false,
            ..AddressConfig::default()
        },
        IID,
    )
}

fn ra(source: Ipv6Addr, router_lifetime: u16) -> RouterAdvertisement {
    RouterAdvertisement {
        source,
        router_lifetime,
        retrans_timer_ms: 0,
    }
}

fn pio(prefix: &str, prefix_len: u8, valid: u32, preferred: u32) -> PrefixInformation {
    PrefixInformation {
        prefix: ip(prefix),
        prefix_len,
        on_link: true,
        autonomous: true,
        valid_lifetime: valid,
        preferred_lifetime: preferred,
    }
}

/// A quiet host whose link-local address is assigned at 1 s.
fn assigned_host() -> InterfaceAddresses {
    let mut h = quiet_host();
    h.enable(secs(0));
    assert_eq!(
        h.poll(secs(1)),
        vec![AddressAction::AddressAssigned(link_local())]
    );
    h
}

/// `assigned_host` plus the SLAAC address of 2001:db8:a::/64 configured at
/// `at` with `valid`/`preferred` seconds and assigned RetransTimer later.
fn slaac_host(at: Instant, valid: u32, preferred: u32) -> InterfaceAddresses {
    let mut h = assigned_host();
    h.on_router_advertisement(
        at,
        &ra(router(1), 0),
        [pio("2001:db8:a::", 64, valid, preferred)],
    );
    assert_eq!(h.get(slaac_a()).unwrap().state(), AddressState::Tentative);
    h.poll(at + Duration::from_secs(1));
    h
}

#[test]
fn modified_eui64_and_link_local_from_a_mac() {
    // RFC 4291 Appendix A with the RFC 7042 documentation MAC: ff:fe in
    // the middle, U/L bit (0x02) inverted.
    assert_eq!(modified_eui64(MAC.0), IID);
    assert_eq!(link_local_from_mac(MAC), link_local());
    assert_eq!(host().link_local_address(), link_local());
}

#[test]
fn link_local_dad_succeeds_exactly_retrans_timer_after_the_solicitation() {
    let mut h = quiet_host();
    let t0 = ms(500);
    assert_eq!(
        h.enable(t0),
        vec![
            JoinGroup(ip("ff02::1:ff00:5301")),
            SendNeighborSolicitation {
                target: link_local()
            },
        ]
    );
    let nte = h.get(link_local()).unwrap();
    assert_eq!(nte.state(), AddressState::Tentative);
    assert_eq!(nte.origin(), AddressOrigin::LinkLocal);
    assert_eq!(nte.valid_until(), Expiry::Never);
    assert!(!h.is_assigned(link_local()));
    assert_eq!(h.next_deadline(), Some(t0 + Duration::from_secs(1)));

    assert!(h.poll(just_before(t0 + Duration::from_secs(1))).is_empty());
    assert_eq!(
        h.poll(t0 + Duration::from_secs(1)),
        vec![AddressAssigned(link_local())]
    );
    assert_eq!(
        h.get(link_local()).unwrap().state(),
        AddressState::Preferred
    );
    assert!(h.is_assigned(link_local()));
    assert_eq!(h.next_deadline(), None);
    assert_eq!(h.counters().dad_succeeded, 1);
}

#[test]
fn several_dad_transmits_are_retrans_timer_apart() {
    let mut h = InterfaceAddresses::new(
        AddressConfig {
            dup_addr_detect_transmits: 3,
            solicit_routers: false,
            ..AddressConfig::default()
        },
        IID,
    );
    let ns = SendNeighborSolicitation {
        target: link_local(),
    };
    assert_eq!(h.enable(secs(0)).last(), Some(&ns));
    assert_eq!(h.poll(secs(1)), vec![ns]);
    assert_eq!(h.poll(secs(2)), vec![ns]);
    assert!(h.poll(ms(2999)).is_empty());
    assert_eq!(h.poll(secs(3)), vec![AddressAssigned(link_local())]);
    assert_eq!(h.counters().dad_solicitations_sent, 3);
}

#[test]
fn zero_dad_transmits_assigns_at_once() {
    let mut h = InterfaceAddresses::new(
        AddressConfig {
            dup_addr_detect_transmits: 0,
            solicit_routers: false,
            ..AddressConfig::default()
        },
        IID,
    );
    assert_eq!(
        h.enable(secs(0)),
        vec![
            JoinGroup(ip("ff02::1:ff00:5301")),
            AddressAssigned(link_local())
        ]
    );
}

#[test]
fn seeded_dad_delay_is_below_max_rtr_solicitation_delay() {
    for seed in 0..32 {
        let mut h = InterfaceAddresses::new(
            AddressConfig {
                random_seed: Some(seed),
                solicit_routers: false,
                ..AddressConfig::default()
            },
            IID,
        );
        let t0 = secs(10);
        let actions = h.enable(t0);
        let first = h.get(link_local()).unwrap().dad_deadline().unwrap();
        assert!(first >= t0 && first < t0 + Duration::from_secs(1));
        if first > t0 {
            // §5.4.2: the group is joined after the delay, with the NS.
            assert!(actions.is_empty());
            assert_eq!(
                h.poll(first),
                vec![
                    JoinGroup(ip("ff02::1:ff00:5301")),
                    SendNeighborSolicitation {
                        target: link_local()
                    }
                ]
            );
        }
        assert_eq!(
            h.poll(first + Duration::from_secs(1)),
            vec![AddressAssigned(link_local())]
        );
    }
}

#[test]
fn ns_from_unspecified_for_a_tentative_address_is_a_duplicate() {
    let mut h = assigned_host();
    let addr = ip("2001:db8::1");
    let actions = h
        .add_manual(secs(2), addr, 64, INFINITE_LIFETIME, INFINITE_LIFETIME)
        .unwrap();
    assert_eq!(
        actions,
        vec![
            JoinGroup(solicited_node(&addr)),
            SendNeighborSolicitation { target: addr }
        ]
    );
    // Address resolution from a unicast source: silently ignored (§5.4.3).
    let (d, a) = h.on_neighbor_solicitation(ms(2100), ip("2001:db8::9"), addr);
    assert_eq!((d, a), (NsDisposition::TentativeIgnored, vec![]));
    // Another node doing DAD for the same address.
    let (d, a) = h.on_neighbor_solicitation(ms(2200), Ipv6Addr::UNSPECIFIED, addr);
    assert_eq!(d, NsDisposition::Duplicate);
    assert_eq!(
        a,
        vec![LeaveGroup(solicited_node(&addr)), AddressDuplicate(addr)]
    );
    assert_eq!(h.get(addr).unwrap().state(), AddressState::Duplicate);
    assert!(!h.is_disabled());
    // It never becomes assigned, and the NS for it is no longer ours.
    assert!(h.poll(secs(10)).is_empty());
    let (d, _) = h.on_neighbor_solicitation(secs(11), Ipv6Addr::UNSPECIFIED, addr);
    assert_eq!(d, NsDisposition::NotOurs);
    // The assigned link-local is answered.
    let (d, _) = h.on_neighbor_solicitation(secs(11), router(1), link_local());
    assert_eq!(d, NsDisposition::Assigned);
    assert_eq!(h.counters().dad_duplicate_ns, 1);
}

#[test]
fn na_for_a_tentative_address_is_a_duplicate() {
    let mut h = assigned_host();
    let addr = ip("2001:db8::2");
    h.add_manual(secs(2), addr, 64, INFINITE_LIFETIME, INFINITE_LIFETIME)
        .unwrap();
    assert_eq!(
        h.on_neighbor_advertisement(ms(2500), addr),
        vec![LeaveGroup(solicited_node(&addr)), AddressDuplicate(addr)]
    );
    assert_eq!(h.counters().dad_duplicate_na, 1);
    // An NA for an assigned address only counts (§5.4.4).
    assert!(h
        .on_neighbor_advertisement(secs(3), link_local())
        .is_empty());
    assert_eq!(h.counters().na_for_assigned, 1);
    assert!(h.is_assigned(link_local()));
}

#[test]
fn duplicate_link_local_disables_the_interface() {
    let mut h = host();
    h.enable(secs(0));
    assert_eq!(
        h.on_neighbor_advertisement(ms(300), link_local()),
        vec![
            LeaveGroup(ip("ff02::1:ff00:5301")),
            AddressDuplicate(link_local()),
            DisableInterface
        ]
    );
    assert!(h.is_disabled());
    assert!(!h.is_soliciting_routers());
    assert_eq!(h.next_deadline(), None);
    assert!(h.poll(secs(100)).is_empty());
    assert!(h
        .on_router_advertisement(
            secs(5),
            &ra(router(1), 1800),
            [pio("2001:db8:a::", 64, 3600, 1800)]
        )
        .is_empty());
    assert_eq!(h.entries().count(), 1);
    assert_eq!(h.counters().interface_disabled, 1);
}

#[test]
fn ns_from_unspecified_for_tentative_link_local_disables_too() {
    let mut h = quiet_host();
    h.enable(secs(0));
    let (d, a) = h.on_neighbor_solicitation(ms(10), Ipv6Addr::UNSPECIFIED, link_local());
    assert_eq!(d, NsDisposition::Duplicate);
    assert_eq!(a.last(), Some(&DisableInterface));
}

#[test]
fn slaac_from_a_router_advertisement() {
    let mut h = assigned_host();
    let t = secs(2);
    let actions = h.on_router_advertisement(
        t,
        &ra(router(1), 1800),
        [pio("2001:db8:a::", 64, 3600, 1800)],
    );
    // The SLAAC address shares the link-local's solicited-node group, so no
    // second join.
    assert_eq!(
        actions,
        vec![
            RouterAdded(router(1)),
            PrefixAdded {
                prefix: ip("2001:db8:a::"),
                prefix_len: 64
            },
            SendNeighborSolicitation { target: slaac_a() },
        ]
    );
    let nte = h.get(slaac_a()).unwrap();
    assert_eq!(nte.state(), AddressState::Tentative);
    assert_eq!(nte.origin(), AddressOrigin::Slaac);
    assert_eq!(nte.prefix_len(), 64);
    assert_eq!(nte.valid_until(), Expiry::At(t + Duration::from_secs(3600)));
    assert_eq!(
        nte.preferred_until(),
        Expiry::At(t + Duration::from_secs(1800))
    );
    assert_eq!(h.poll(secs(3)), vec![AddressAssigned(slaac_a())]);
    assert_eq!(h.get(slaac_a()).unwrap().state(), AddressState::Preferred);
    assert!(h.is_on_link(ip("2001:db8:a::77")));
    assert!(!h.is_on_link(ip("2001:db8:b::77")));
    assert_eq!(h.default_router(), Some(router(1)));
    assert_eq!(h.counters().slaac_addresses_formed, 1);
}

#[test]
fn lifetimes_deprecate_and_remove_at_exact_instants() {
    let t = secs(2);
    let mut h = slaac_host(t, 3600, 1800);
    let preferred_end = t + Duration::from_secs(1800);
    let valid_end = t + Duration::from_secs(3600);
    assert_eq!(h.next_deadline(), Some(preferred_end));
    assert!(h.poll(just_before(preferred_end)).is_empty());
    assert_eq!(h.poll(preferred_end), vec![AddressDeprecated(slaac_a())]);
    assert_eq!(h.get(slaac_a()).unwrap().state(), AddressState::Deprecated);
    assert!(h.is_assigned(slaac_a()));
    assert_eq!(h.next_deadline(), Some(valid_end));
    assert!(h.poll(just_before(valid_end)).is_empty());
    assert_eq!(
        h.poll(valid_end),
        vec![
            AddressRemoved(slaac_a()),
            PrefixExpired {
                prefix: ip("2001:db8:a::"),
                prefix_len: 64
            }
        ]
    );
    assert!(h.get(slaac_a()).is_none());
    // The link-local group is still held by the link-local address.
    assert_eq!(h.joined_groups(), vec![ip("ff02::1:ff00:5301")]);
    assert_eq!(h.next_deadline(), None);
}

#[test]
fn preferred_lifetime_zero_gives_a_deprecated_address_after_dad() {
    let mut h = assigned_host();
    h.on_router_advertisement(
        secs(2),
        &ra(router(1), 0),
        [pio("2001:db8:a::", 64, 3600, 0)],
    );
    assert_eq!(
        h.poll(secs(3)),
        vec![AddressAssigned(slaac_a()), AddressDeprecated(slaac_a())]
    );
}

#[test]
fn extended_preferred_lifetime_undeprecates() {
    let mut h = slaac_host(secs(2), 36_000, 60);
    assert_eq!(h.poll(secs(62)), vec![AddressDeprecated(slaac_a())]);
    assert_eq!(
        h.on_router_advertisement(
            secs(70),
            &ra(router(1), 0),
            [pio("2001:db8:a::", 64, 36_000, 600)]
        ),
        vec![AddressPreferredAgain(slaac_a())]
    );
    assert_eq!(h.get(slaac_a()).unwrap().state(), AddressState::Preferred);
    assert_eq!(
        h.get(slaac_a()).unwrap().preferred_until(),
        Expiry::At(secs(670))
    );
}

/// The valid lifetime after an RA at 10 s advertising `received` for an
/// address configured at 2 s with `initial` seconds.
fn after_two_hours_rule(initial: u32, received: u32) -> (Expiry, InterfaceAddresses) {
    let mut h = slaac_host(secs(2), initial, 0);
    h.on_router_advertisement(
        secs(10),
        &ra(router(1), 0),
        [pio("2001:db8:a::", 64, received, 0)],
    );
    (h.get(slaac_a()).unwrap().valid_until(), h)
}

#[test]
fn two_hours_rule() {
    let hours = |h: u32| h * 3600;
    let at = |s: u64| Expiry::At(secs(10) + Duration::from_secs(s));
    // (e) 1: received above 2 h: taken, even if below the remaining time.
    assert_eq!(
        after_two_hours_rule(hours(5), hours(3)).0,
        at(u64::from(hours(3)))
    );
    assert_eq!(
        after_two_hours_rule(hours(1), hours(3)).0,
        at(u64::from(hours(3)))
    );
    assert_eq!(
        after_two_hours_rule(hours(3), INFINITE_LIFETIME).0,
        Expiry::Never
    );
    // (e) 1: received above the remaining lifetime (both under 2 h).
    assert_eq!(after_two_hours_rule(1800, 3600).0, at(3600));
    // (e) 2: remaining ≤ 2 h and received not above it: ignored.
    let (valid, h) = after_two_hours_rule(3600, 600);
    assert_eq!(valid, Expiry::At(secs(2) + Duration::from_secs(3600)));
    assert_eq!(h.counters().two_hour_rule_ignored, 1);
    let (valid, _) = after_two_hours_rule(3600, 0);
    assert_eq!(valid, Expiry::At(secs(2) + Duration::from_secs(3600)));
    // (e) 3: remaining > 2 h, received ≤ 2 h: reset to 2 h.
    let (valid, h) = after_two_hours_rule(hours(5), 600);
    assert_eq!(valid, Expiry::At(secs(10) + TWO_HOURS));
    assert_eq!(h.counters().two_hour_rule_clamped, 1);
    assert_eq!(
        after_two_hours_rule(hours(5), 0).0,
        Expiry::At(secs(10) + TWO_HOURS)
    );
    assert_eq!(
        after_two_hours_rule(INFINITE_LIFETIME, hours(2)).0,
        Expiry::At(secs(10) + TWO_HOURS)
    );
    // Exactly 2 h received is not "greater than 2 hours": rule 3.
    assert_eq!(
        after_two_hours_rule(hours(5), hours(2)).0,
        Expiry::At(secs(10) + TWO_HOURS)
    );
}

#[test]
fn preferred_above_valid_is_ignored_for_slaac() {
    let mut h = assigned_host();
    h.on_router_advertisement(
        secs(2),
        &ra(router(1), 0),
        [pio("2001:db8:a::", 64, 600, 1200)],
    );
    assert!(h.get(slaac_a()).is_none());
    assert_eq!(h.counters().prefix_options_preferred_exceeds_valid, 1);
    // RFC 4861 §6.3.4 has no such rule for the on-link determination.
    assert!(h.is_on_link(ip("2001:db8:a::1")));
}

#[test]
fn link_local_prefix_is_ignored() {
    let mut h = assigned_host();
    let actions =
        h.on_router_advertisement(secs(2), &ra(router(1), 0), [pio("fe80::", 64, 3600, 1800)]);
    assert!(actions.is_empty());
    assert_eq!(h.prefixes().count(), 0);
    assert_eq!(h.entries().count(), 1);
    assert_eq!(h.counters().prefix_options_link_local, 1);
}

#[test]
fn autonomous_prefix_not_64_bits_forms_no_address() {
    let mut h = assigned_host();
    h.on_router_advertisement(
        secs(2),
        &ra(router(1), 0),
        [pio("2001:db8:a::", 48, 3600, 1800)],
    );
    assert_eq!(h.entries().count(), 1);
    assert_eq!(h.counters().prefix_options_bad_length, 1);
    assert_eq!(h.prefixes().count(), 1);
}

#[test]
fn prefix_valid_lifetime_zero_removes_the_prefix_not_the_address() {
    let mut h = slaac_host(secs(2), 36_000, 18_000);
    let actions =
        h.on_router_advertisement(secs(5), &ra(router(1), 0), [pio("2001:db8:a::", 64, 0, 0)]);
    assert_eq!(
        actions,
        vec![
            PrefixExpired {
                prefix: ip("2001:db8:a::"),
                prefix_len: 64
            },
            AddressDeprecated(slaac_a())
        ]
    );
    // (e) 3: the address keeps 2 h.
    assert_eq!(
        h.get(slaac_a()).unwrap().valid_until(),
        Expiry::At(secs(5) + TWO_HOURS)
    );
}

#[test]
fn router_solicitations_follow_rfc_4861_schedule() {
    let mut h = host();
    let actions = h.enable(secs(0));
    assert_eq!(
        actions.last(),
        Some(&SendRouterSolicitation {
            source: Ipv6Addr::UNSPECIFIED
        })
    );
    assert_eq!(h.poll(secs(1)), vec![AddressAssigned(link_local())]);
    assert_eq!(h.next_deadline(), Some(secs(4)));
    assert!(h.poll(ms(3999)).is_empty());
    // Now from the assigned link-local address.
    assert_eq!(
        h.poll(secs(4)),
        vec![SendRouterSolicitation {
            source: link_local()
        }]
    );
    assert_eq!(
        h.poll(secs(8)),
        vec![SendRouterSolicitation {
            source: link_local()
        }]
    );
    assert!(!h.is_soliciting_routers());
    assert_eq!(h.next_deadline(), None);
    assert!(h.poll(secs(12)).is_empty());
    assert_eq!(h.counters().router_solicitations_sent, 3);
}

#[test]
fn router_advertisement_with_nonzero_lifetime_stops_solicitation() {
    let mut h = host();
    h.enable(secs(0));
    h.poll(secs(1));
    // Router Lifetime 0 is not a default router: keep soliciting (§6.3.7).
    h.on_router_advertisement(secs(2), &ra(router(1), 0), []);
    assert!(h.is_soliciting_routers());
    h.on_router_advertisement(secs(3), &ra(router(1), 600), []);
    assert!(!h.is_soliciting_routers());
    assert!(h.poll(secs(4)).is_empty());
    assert_eq!(h.counters().router_solicitations_sent, 1);
}

#[test]
fn seeded_first_router_solicitation_is_delayed_below_one_second() {
    for seed in 0..16 {
        let mut h = InterfaceAddresses::new(
            AddressConfig {
                random_seed: Some(seed),
                dup_addr_detect_transmits: 0,
                ..AddressConfig::default()
            },
            IID,
        );
        h.enable(secs(0));
        let mut sent = h.counters().router_solicitations_sent;
        let mut first = None;
        let mut t = secs(0);
        while sent == 0 {
            t = h.next_deadline().unwrap();
            h.poll(t);
            sent = h.counters().router_solicitations_sent;
            first = Some(t);
        }
        let first = first.unwrap_or(t);
        assert!(first < secs(1));
        assert_eq!(h.next_deadline(), Some(first + Duration::from_secs(4)));
    }
}

#[test]
fn router_lifetime_expiry_and_zero() {
    let mut h = assigned_host();
    h.on_router_advertisement(secs(2), &ra(router(1), 100), []);
    h.on_router_advertisement(secs(3), &ra(router(2), 100), []);
    assert_eq!(h.routers().count(), 2);
    assert_eq!(h.default_router(), Some(router(1)));
    assert_eq!(
        h.default_router_preferring(|r| r == router(2)),
        Some(router(2))
    );
    // Lifetime 0 removes at once.
    assert_eq!(
        h.on_router_advertisement(secs(4), &ra(router(1), 0), []),
        vec![RouterExpired(router(1))]
    );
    assert_eq!(h.default_router(), Some(router(2)));
    // Refresh, then expiry at the exact instant.
    h.on_router_advertisement(secs(50), &ra(router(2), 100), []);
    assert!(h.poll(just_before(secs(150))).is_empty());
    assert_eq!(h.poll(secs(150)), vec![RouterExpired(router(2))]);
    assert_eq!(h.default_router(), None);
}

#[test]
fn advertisement_from_a_global_source_is_ignored() {
    let mut h = assigned_host();
    let actions = h.on_router_advertisement(
        secs(2),
        &ra(ip("2001:db8::1"), 1800),
        [pio("2001:db8:a::", 64, 3600, 1800)],
    );
    assert!(actions.is_empty());
    assert_eq!(h.counters().router_advertisements_ignored, 1);
}

#[test]
fn retrans_timer_from_the_advertisement_spaces_dad() {
    let mut h = assigned_host();
    let mut adv = ra(router(1), 0);
    adv.retrans_timer_ms = 250;
    h.on_router_advertisement(secs(2), &adv, [pio("2001:db8:a::", 64, 3600, 1800)]);
    assert_eq!(h.retrans_timer(), Duration::from_millis(250));
    assert_eq!(h.poll(ms(2250)), vec![AddressAssigned(slaac_a())]);
}

#[test]
fn a_flood_of_distinct_prefixes_and_routers_stays_bounded() {
    let config = AddressConfig::default();
    let mut h = InterfaceAddresses::new(config.clone(), IID);
    h.enable(secs(0));
    h.poll(secs(1));
    for n in 0..10_000u32 {
        let prefix = Ipv6Addr::new(0x2001, 0xdb8, (n >> 16) as u16, n as u16, 0, 0, 0, 0);
        let adv = ra(router((n % 5000) as u16 + 1), 1800);
        h.on_router_advertisement(
            secs(2),
            &adv,
            [PrefixInformation {
                prefix,
                prefix_len: 64,
                on_link: true,
                autonomous: true,
                valid_lifetime: 3600,
                preferred_lifetime: 1800,
            }],
        );
    }
    assert_eq!(h.prefixes().count(), config.max_prefixes);
    assert_eq!(h.entries().count(), config.max_addresses);
    assert_eq!(h.routers().count(), config.max_routers);
    let c = h.counters();
    assert_eq!(c.prefix_list_full, 10_000 - config.max_prefixes as u64);
    assert_eq!(
        c.address_list_full,
        10_000 - (config.max_addresses as u64 - 1)
    );
    // Routers 1..=8 got in; every RA from the other 4 992, twice each, was
    // refused.
    assert_eq!(c.router_list_full, 10_000 - 2 * config.max_routers as u64);
}

#[test]
fn manual_address_errors() {
    let mut h = assigned_host();
    assert!(h.add_manual(secs(2), ip("ff02::1"), 64, 10, 10).is_err());
    assert!(h.add_manual(secs(2), link_local(), 64, 10, 10).is_err());
    assert!(h
        .add_manual(secs(2), ip("2001:db8::5"), 64, 10, 20)
        .is_err());
    assert!(h
        .add_manual(secs(2), ip("2001:db8::5"), 129, 20, 10)
        .is_err());
    assert!(h.add_manual(secs(2), ip("2001:db8::5"), 64, 20, 10).is_ok());
    assert_eq!(
        h.remove_address(ip("2001:db8::5")),
        vec![
            LeaveGroup(solicited_node(&ip("2001:db8::5"))),
            AddressRemoved(ip("2001:db8::5"))
        ]
    );
}

// ------------------------------------------------------------------
// Random sequences

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Ra {
        router: u16,
        lifetime: u16,
        retrans_ms: u32,
        pios: Vec<(u16, u8, bool, bool, u32, u32)>,
    },
    Ns {
        target: usize,
        unspecified: bool,
    },
    Na {
        target: usize,
    },
    Manual(u16),
}

fn lifetime() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        1u32..20,
        Just(7200),
        Just(7201),
        1u32..100_000,
        Just(INFINITE_LIFETIME),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop_oneof![0u64..3_000, 0u64..200_000, 0u64..20_000_000].prop_map(Op::Advance),
        3 => (
            0u16..12,
            prop_oneof![Just(0u16), 1u16..30, Just(1800)],
            prop_oneof![Just(0u32), 1u32..3000],
            proptest::collection::vec(
                (0u16..40, prop_oneof![Just(64u8), Just(48), Just(10), 0u8..=255], any::<bool>(), any::<bool>(), lifetime(), lifetime()),
                0..4,
            ),
        )
            .prop_map(|(router, lifetime, retrans_ms, pios)| Op::Ra { router, lifetime, retrans_ms, pios }),
        2 => (0usize..24, any::<bool>()).prop_map(|(target, unspecified)| Op::Ns { target, unspecified }),
        1 => (0usize..24).prop_map(|target| Op::Na { target }),
        1 => (0u16..8).prop_map(Op::Manual),
    ]
}

fn target(h: &InterfaceAddresses, i: usize) -> Ipv6Addr {
    let addrs: Vec<Ipv6Addr> = h.entries().map(|n| n.address()).collect();
    addrs
        .get(i)
        .copied()
        .unwrap_or(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16))
}

fn apply_groups(groups: &mut BTreeSet<Ipv6Addr>, actions: &[AddressAction]) {
    for a in actions {
        match *a {
            JoinGroup(g) => assert!(groups.insert(g), "joined {g} twice"),
            LeaveGroup(g) => assert!(groups.remove(&g), "left {g} not joined"),
            _ => {}
        }
    }
}

proptest! {
    #[test]
    fn random_sequences_keep_the_invariants(
        seed in proptest::option::of(any::<u64>()),
        transmits in 0u32..4,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let config = AddressConfig {
            max_addresses: 6,
            max_prefixes: 5,
            max_routers: 3,
            dup_addr_detect_transmits: transmits,
            random_seed: seed,
            ..AddressConfig::default()
        };
        let mut h = InterfaceAddresses::new(config.clone(), IID);
        let mut now = secs(0);
        let mut groups = BTreeSet::new();
        apply_groups(&mut groups, &h.enable(now));
        for op in ops {
            let actions = match op {
                Op::Advance(millis) => {
                    now += Duration::from_millis(millis);
                    let actions = h.poll(now);
                    // After a poll every deadline is in the future.
                    if let Some(d) = h.next_deadline() {
                        prop_assert!(d > now);
                    }
                    actions
                }
                Op::Ra { router: r, lifetime, retrans_ms, pios } => {
                    let adv = RouterAdvertisement {
                        source: router(r + 1),
                        router_lifetime: lifetime,
                        retrans_timer_ms: retrans_ms,
                    };
                    let pios = pios.into_iter().map(|(p, len, l, a, valid, preferred)| PrefixInformation {
                        prefix: Ipv6Addr::new(0x2001, 0xdb8, p, 0, 0, 0, 0, 0),
                        prefix_len: len,
                        on_link: l,
                        autonomous: a,
                        valid_lifetime: valid,
                        preferred_lifetime: preferred,
                    });
                    h.on_router_advertisement(now, &adv, pios)
                }
                Op::Ns { target: i, unspecified } => {
                    let t = target(&h, i);
                    let src = if unspecified { Ipv6Addr::UNSPECIFIED } else { router(99) };
                    h.on_neighbor_solicitation(now, src, t).1
                }
                Op::Na { target: i } => {
                    let t = target(&h, i);
                    h.on_neighbor_advertisement(now, t)
                }
                Op::Manual(n) => h
                    .add_manual(now, Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, n + 1), 64, 600, 300)
                    .unwrap_or_default(),
            };
            apply_groups(&mut groups, &actions);
            prop_assert_eq!(groups.iter().copied().collect::<Vec<_>>(), h.joined_groups());
            prop_assert!(h.entries().count() <= config.max_addresses);
            prop_assert!(h.prefixes().count() <= config.max_prefixes);
            prop_assert!(h.routers().count() <= config.max_routers);
            if let Some(d) = h.next_deadline() {
                // Nothing is ever scheduled in the past.
                prop_assert!(d >= now);
            }
            let mut seen = BTreeSet::new();
            for n in h.entries() {
                prop_assert!(seen.insert(n.address()), "duplicate NTE {}", n.address());
                prop_assert!(n.preferred_until() <= n.valid_until());
                prop_assert_eq!(n.state() == AddressState::Tentative && !h.is_disabled(), n.dad_deadline().is_some());
                if n.origin() == AddressOrigin::Slaac {
                    prop_assert_eq!(n.prefix_len(), 64);
                }
            }
            if h.is_disabled() {
                prop_assert!(h.next_deadline().is_none());
                prop_assert!(h.joined_groups().is_empty());
            }
        }
    }
}
