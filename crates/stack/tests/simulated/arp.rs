//! ARP (RFC 826) on the neighbour cache, on virtual time: resolution,
//! the reception algorithm's merge rules, gratuitous ARP, conflicts,
//! failure, and the bound under floods. Every ARP message an action carries
//! is emitted through the wire crate and parsed back.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use stack::iface::arp::{ArpAction, ArpAddress, ArpCache, ArpConfig, ArpLookup, ArpMessage};
use stack::iface::neighbor::{NeighborConfig, NeighborState};
use stack::time::Instant;
use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::EthernetAddress;

type Cache = ArpCache<u32>;

const OUR_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
const OUR_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const ZERO_MAC: EthernetAddress = EthernetAddress([0; 6]);

fn secs(s: u64) -> Instant {
    Instant::from_nanos(s * 1_000_000_000)
}

fn ip(n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(192, 0, 2, 0)) + n)
}

fn mac(n: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 1, n])
}

fn cache_with(capacity: usize) -> Cache {
    ArpCache::new(ArpConfig {
        hardware_addr: OUR_MAC,
        addresses: vec![ArpAddress::new(OUR_IP, 24)],
        neighbor: NeighborConfig {
            capacity,
            ..NeighborConfig::default()
        },
    })
}

fn cache() -> Cache {
    cache_with(64)
}

fn arp(
    operation: ArpOperation,
    sha: EthernetAddress,
    spa: Ipv4Addr,
    tha: EthernetAddress,
    tpa: Ipv4Addr,
) -> ArpRepr {
    ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr: sha,
        source_protocol_addr: spa,
        target_hardware_addr: tha,
        target_protocol_addr: tpa,
    }
}

/// Emits the message through the wire crate and parses it back; returns
/// the parsed repr after checking it equals the original.
fn round_trip(message: &ArpMessage) -> ArpRepr {
    let mut buf = vec![0xaa; message.buffer_len() + 18]; // with padding
    let len = message.emit(&mut buf).expect("emit");
    assert_eq!(len, wire::arp::ETHERNET_IPV4_LEN);
    let packet = ArpPacket::new_checked(&buf[..]).expect("check_len");
    let parsed = ArpRepr::parse(&packet).expect("parse");
    assert_eq!(parsed, message.repr);
    assert_eq!(message.to_bytes(), buf[..len]);
    parsed
}

/// Round-trips every message the actions carry.
fn check_messages(actions: &[ArpAction<u32>]) {
    for action in actions {
        if let Some(message) = action.message() {
            round_trip(message);
        }
    }
}

/// Resolves `n` with a reply, leaving it REACHABLE.
fn resolve(c: &mut Cache, now: Instant, n: u32, hw: EthernetAddress) {
    let _ = c.lookup(now, ip(n), 0);
    let actions = c.on_arp(now, &arp(ArpOperation::Reply, hw, ip(n), OUR_MAC, OUR_IP));
    check_messages(&actions);
    assert_eq!(c.get(ip(n)).unwrap().state, NeighborState::Reachable);
}

#[test]
fn resolution_broadcasts_a_request_and_flushes_on_reply() {
    let mut c = cache();
    let ArpLookup::Requested { request, evicted } = c.lookup(secs(0), ip(2), 10) else {
        panic!("expected a request");
    };
    assert_eq!(evicted, None);
    assert_eq!(request.eth_dst, EthernetAddress::BROADCAST);
    assert_eq!(
        round_trip(&request),
        arp(ArpOperation::Request, OUR_MAC, OUR_IP, ZERO_MAC, ip(2))
    );
    assert_eq!(
        c.lookup(secs(0), ip(2), 11),
        ArpLookup::Queued { dropped: None }
    );
    assert_eq!(c.get(ip(2)).unwrap().state, NeighborState::Incomplete);

    let actions = c.on_arp(
        secs(0),
        &arp(ArpOperation::Reply, mac(2), ip(2), OUR_MAC, OUR_IP),
    );
    check_messages(&actions);
    assert_eq!(
        actions,
        vec![ArpAction::Transmit {
            target: ip(2),
            lladdr: mac(2),
            packets: VecDeque::from([10, 11]),
        }]
    );
    let entry = c.get(ip(2)).unwrap();
    assert_eq!(entry.state, NeighborState::Reachable);
    assert_eq!(entry.lladdr, Some(mac(2)));
    assert_eq!(
        c.lookup(secs(1), ip(2), 12),
        ArpLookup::Send {
            lladdr: mac(2),
            packet: 12
        }
    );
    assert_eq!(c.counters().requests_sent, 1);
    assert_eq!(c.counters().replies_received, 1);
    assert_eq!(c.entries().count(), 1);
}

#[test]
fn request_for_us_creates_sender_entry_and_is_answered() {
    let mut c = cache();
    let actions = c.on_arp(
        secs(0),
        &arp(ArpOperation::Request, mac(5), ip(5), ZERO_MAC, OUR_IP),
    );
    check_messages(&actions);
    assert_eq!(actions.len(), 1);
    let ArpAction::SendReply { message } = &actions[0] else {
        panic!("expected a reply, got {actions:?}");
    };
    assert_eq!(message.eth_dst, mac(5));
    assert_eq!(
        message.repr,
        arp(ArpOperation::Reply, OUR_MAC, OUR_IP, mac(5), ip(5))
    );
    let entry = c.get(ip(5)).unwrap();
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(entry.lladdr, Some(mac(5)));
    assert_eq!(c.counters().replies_sent, 1);
    // Sending to it goes through the cache's STALE → DELAY rule.
    assert!(matches!(
        c.lookup(secs(0), ip(5), 1),
        ArpLookup::Send { lladdr, .. } if lladdr == mac(5)
    ));
    assert_eq!(c.get(ip(5)).unwrap().state, NeighborState::Delay);
}

#[test]
fn request_for_someone_else_only_merges() {
    let mut c = cache();
    // Unknown sender, not for us: nothing created, nothing answered.
    let actions = c.on_arp(
        secs(0),
        &arp(ArpOperation::Request, mac(7), ip(7), ZERO_MAC, ip(8)),
    );
    assert!(actions.is_empty());
    assert!(c.is_empty());

    // Known sender, not for us: the entry is updated (RFC 826 merge).
    resolve(&mut c, secs(0), 7, mac(7));
    let actions = c.on_arp(
        secs(1),
        &arp(ArpOperation::Request, mac(70), ip(7), ZERO_MAC, ip(8)),
    );
    assert!(actions.is_empty());
    let entry = c.get(ip(7)).unwrap();
    assert_eq!(entry.lladdr, Some(mac(70)));
    assert_eq!(entry.state, NeighborState::Stale);
    assert_eq!(c.len(), 1);
    // The reply that resolved it merged too (its INCOMPLETE entry existed).
    assert_eq!(c.counters().merged, 2);
    // The same address again changes nothing.
    let _ = c.on_arp(
        secs(2),
        &arp(ArpOperation::Request, mac(70), ip(7), ZERO_MAC, ip(8)),
    );
    assert_eq!(c.get(ip(7)).unwrap().state, NeighborState::Stale);
}

#[test]
fn gratuitous_arp_updates_existing_entry_only() {
    let mut c = cache();
    resolve(&mut c, secs(0), 3, mac(3));
    for operation in [ArpOperation::Request, ArpOperation::Reply] {
        let new = if operation == ArpOperation::Request {
            mac(30)
        } else {
            mac(31)
        };
        let garp = arp(operation, new, ip(3), ZERO_MAC, ip(3));
        let actions = c.on_arp(secs(1), &garp);
        assert!(actions.is_empty());
        let entry = c.get(ip(3)).unwrap();
        assert_eq!(entry.lladdr, Some(new));
        assert_eq!(entry.state, NeighborState::Stale);
    }
    // A gratuitous ARP for an unknown host creates nothing.
    let _ = c.on_arp(
        secs(1),
        &arp(ArpOperation::Request, mac(9), ip(9), ZERO_MAC, ip(9)),
    );
    assert!(c.get(ip(9)).is_none());
    assert_eq!(c.counters().gratuitous_received, 3);
    // Our own announcement round-trips.
    let announcement = c.announcement(OUR_IP);
    assert_eq!(
        round_trip(&announcement),
        arp(ArpOperation::Request, OUR_MAC, OUR_IP, ZERO_MAC, OUR_IP)
    );
}

#[test]
fn address_conflict_is_counted_and_ignored() {
    let mut c = cache();
    for operation in [ArpOperation::Request, ArpOperation::Reply] {
        let actions = c.on_arp(secs(0), &arp(operation, mac(4), OUR_IP, ZERO_MAC, OUR_IP));
        assert!(actions.is_empty());
        let actions = c.on_arp(secs(0), &arp(operation, mac(4), OUR_IP, ZERO_MAC, ip(6)));
        assert!(actions.is_empty());
    }
    assert_eq!(c.counters().conflicts, 4);
    assert!(c.is_empty());
    // Our own announcement looped back is not a conflict.
    let own = c.announcement(OUR_IP).repr;
    assert!(c.on_arp(secs(0), &own).is_empty());
    assert_eq!(c.counters().conflicts, 4);
    assert_eq!(c.counters().own_packets, 1);
}

#[test]
fn group_sender_hardware_address_is_ignored() {
    let mut c = cache();
    resolve(&mut c, secs(0), 2, mac(2));
    let multicast = EthernetAddress([0x01, 0, 0x5e, 0, 0, 1]);
    for sha in [EthernetAddress::BROADCAST, multicast] {
        // Naming us: no entry, no reply.
        let actions = c.on_arp(
            secs(1),
            &arp(ArpOperation::Request, sha, ip(4), ZERO_MAC, OUR_IP),
        );
        assert!(actions.is_empty());
        // Poisoning an existing entry: refused.
        let actions = c.on_arp(
            secs(1),
            &arp(ArpOperation::Reply, sha, ip(2), OUR_MAC, OUR_IP),
        );
        assert!(actions.is_empty());
    }
    assert!(c.get(ip(4)).is_none());
    assert_eq!(c.get(ip(2)).unwrap().lladdr, Some(mac(2)));
    assert_eq!(c.counters().invalid_sender, 4);
}

#[test]
fn unresolved_target_gets_three_requests_then_unreachable() {
    let mut c = cache();
    let mut requests = 0;
    if let ArpLookup::Requested { request, .. } = c.lookup(secs(0), ip(9), 1) {
        round_trip(&request);
        requests += 1;
    }
    let _ = c.lookup(secs(0), ip(9), 2);
    let mut unreachable = None;
    for t in 1..=5 {
        let actions = c.poll(secs(t));
        check_messages(&actions);
        for action in actions {
            match action {
                ArpAction::SendRequest {
                    target,
                    unicast_to,
                    message,
                } => {
                    assert_eq!((target, unicast_to), (ip(9), None));
                    assert_eq!(message.eth_dst, EthernetAddress::BROADCAST);
                    requests += 1;
                }
                ArpAction::Unreachable { target, packets } => {
                    assert_eq!(target, ip(9));
                    unreachable = Some((t, packets));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert_eq!(requests, 3);
    assert_eq!(unreachable, Some((3, VecDeque::from([1, 2]))));
    assert!(c.is_empty());
    assert_eq!(c.counters().requests_sent, 3);
}

#[test]
fn stale_entry_is_probed_by_unicast_requests() {
    let mut c = cache();
    let _ = c.on_arp(
        secs(0),
        &arp(ArpOperation::Request, mac(5), ip(5), ZERO_MAC, OUR_IP),
    );
    let _ = c.lookup(secs(0), ip(5), 1); // STALE → DELAY
    let delay = NeighborConfig::default().delay_first_probe_time;
    let at = Instant::ZERO + delay;
    let actions = c.poll(at);
    check_messages(&actions);
    assert_eq!(actions.len(), 1);
    let ArpAction::SendRequest {
        target,
        unicast_to,
        message,
    } = &actions[0]
    else {
        panic!("expected a probe");
    };
    assert_eq!((*target, *unicast_to), (ip(5), Some(mac(5))));
    assert_eq!(message.eth_dst, mac(5));
    assert_eq!(c.get(ip(5)).unwrap().state, NeighborState::Probe);
    // The probe's reply confirms reachability.
    let _ = c.on_arp(
        at,
        &arp(ArpOperation::Reply, mac(5), ip(5), OUR_MAC, OUR_IP),
    );
    assert_eq!(c.get(ip(5)).unwrap().state, NeighborState::Reachable);
    assert_eq!(c.counters().probes_sent, 1);
    // Unanswered probes end in Unreachable with no packets.
    let _ = c.poll(secs(100)); // REACHABLE → STALE
    let _ = c.lookup(secs(100), ip(5), 2);
    let mut last = Vec::new();
    for t in 100..120 {
        let actions = c.poll(secs(t));
        check_messages(&actions);
        last.extend(actions);
    }
    assert!(last.contains(&ArpAction::Unreachable {
        target: ip(5),
        packets: VecDeque::new()
    }));
}

#[test]
fn arp_probe_is_answered_without_caching() {
    let mut c = cache();
    let probe = arp(
        ArpOperation::Request,
        mac(6),
        Ipv4Addr::UNSPECIFIED,
        ZERO_MAC,
        OUR_IP,
    );
    let actions = c.on_arp(secs(0), &probe);
    check_messages(&actions);
    assert_eq!(actions.len(), 1);
    assert_eq!(
        actions[0].message().unwrap().repr,
        arp(
            ArpOperation::Reply,
            OUR_MAC,
            OUR_IP,
            mac(6),
            Ipv4Addr::UNSPECIFIED
        )
    );
    assert!(c.is_empty());
}

#[test]
fn flood_of_requests_for_others_creates_nothing() {
    let mut c = cache_with(16);
    for n in 0..100_000u32 {
        let sender = Ipv4Addr::from(0x0a00_0000 + n);
        let target = Ipv4Addr::from(0x0a80_0000 + n);
        let hw = EthernetAddress([0x02, 0, (n >> 16) as u8, (n >> 8) as u8, n as u8, 7]);
        let actions = c.on_arp(
            secs(0),
            &arp(ArpOperation::Request, hw, sender, ZERO_MAC, target),
        );
        assert!(actions.is_empty());
    }
    assert!(c.is_empty());
    assert_eq!(c.neighbor_counters().created, 0);
    assert_eq!(c.counters().requests_received, 100_000);
}

#[test]
fn flood_of_lookups_respects_capacity() {
    let mut c = cache_with(16);
    resolve(&mut c, secs(0), 2, mac(2));
    let mut evicted = 0;
    for n in 0..100_000u32 {
        let dst = Ipv4Addr::from(0x0a00_0000 + n);
        match c.lookup(secs(0), dst, n) {
            ArpLookup::Requested {
                request,
                evicted: e,
            } => {
                if n % 10_000 == 0 {
                    round_trip(&request);
                }
                evicted += usize::from(e.is_some());
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(c.len() <= 16);
    }
    assert_eq!(c.len(), 16);
    assert_eq!(evicted, 100_000 - 15);
    // The confirmed neighbour survives the flood of unknown destinations.
    assert_eq!(c.get(ip(2)).unwrap().state, NeighborState::Reachable);
    // The flood's own entries fail after three requests each.
    let flood_failures: usize = (1..=4)
        .flat_map(|t| c.poll(secs(t)))
        .filter(|a| matches!(a, ArpAction::Unreachable { .. }))
        .count();
    assert_eq!(flood_failures, 15);
}

#[test]
fn reply_from_unknown_sender_for_us_creates_stale_entry() {
    // RFC 826 adds the sender whenever we are the target and it was not
    // merged, whatever the opcode; without a request outstanding the entry
    // is only STALE.
    let mut c = cache();
    let actions = c.on_arp(
        secs(0),
        &arp(ArpOperation::Reply, mac(8), ip(8), OUR_MAC, OUR_IP),
    );
    assert!(actions.is_empty());
    assert_eq!(c.get(ip(8)).unwrap().state, NeighborState::Stale);
}

#[test]
fn unknown_operation_is_ignored() {
    let mut c = cache();
    let actions = c.on_arp(
        secs(0),
        &arp(ArpOperation::Unknown(9), mac(8), ip(8), ZERO_MAC, OUR_IP),
    );
    assert!(actions.is_empty());
    assert!(c.is_empty());
    assert_eq!(c.counters().unknown_operation, 1);
}
