//! The MLD listener on virtual time: state-change reports and their
//! retransmissions (RFC 3810 §6.1), which groups are never reported (§6),
//! Query responses (§6.2, §6.3), MLDv1 compatibility with suppression and
//! the last-reporter Done (RFC 2710 §4; RFC 3810 §8.2.1, §9.12), reference
//! counting, the table bound, determinism, and random event sequences.

use std::net::Ipv6Addr;
use std::time::Duration;

use proptest::prelude::*;
use stack::iface::mld::{MldAction, MldConfig, MldError, MldListener, MldVersion};
use stack::time::Instant;
use wire::mld::{MldRecordType, MldRepr, MldSources};

fn ms(millis: u64) -> Instant {
    Instant::from_nanos(millis * 1_000_000)
}

fn secs(s: u64) -> Instant {
    ms(s * 1_000)
}

/// A global-scope group.
fn group(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xff0e, 0, 0, 0, 0, 0, 0x1234, n)
}

/// The solicited-node group of 2001:db8::12:3456.
const SOLICITED: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff12, 0x3456);
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const INTERFACE_LOCAL: Ipv6Addr = Ipv6Addr::new(0xff01, 0, 0, 0, 0, 0, 0, 0x42);

fn listener(seed: u64) -> MldListener {
    MldListener::new(MldConfig {
        random_seed: seed,
        ..MldConfig::default()
    })
}

/// Polls at every deadline up to `until` and returns what was sent, when.
fn run_until(listener: &mut MldListener, until: Instant) -> Vec<(Instant, MldAction)> {
    let mut sent = Vec::new();
    let mut last = None;
    while let Some(deadline) = listener.next_deadline() {
        if deadline > until {
            break;
        }
        assert!(
            last.is_none_or(|t| deadline > t),
            "deadline did not advance"
        );
        last = Some(deadline);
        for action in listener.poll(deadline) {
            sent.push((deadline, action));
        }
    }
    sent
}

fn v2(records: &[(MldRecordType, Ipv6Addr)]) -> MldAction {
    MldAction::SendReportV2 {
        records: records.to_vec(),
    }
}

fn general_query_v2(max_resp_code: u16) -> MldRepr<'static> {
    MldRepr::QueryV2 {
        max_resp_code,
        group: Ipv6Addr::UNSPECIFIED,
        suppress_router_processing: false,
        robustness_variable: 2,
        query_interval_code: 125,
        sources: MldSources::EMPTY,
    }
}

#[test]
fn join_sends_change_to_exclude_then_one_retransmission() {
    let mut l = listener(1);
    let t0 = secs(5);
    assert_eq!(l.join(t0, group(1)), Ok(1));
    assert_eq!(l.next_deadline(), Some(t0));
    let sent = run_until(&mut l, secs(100));
    let expected = v2(&[(MldRecordType::ChangeToExclude, group(1))]);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], (t0, expected.clone()));
    assert_eq!(sent[1].1, expected);
    assert!(sent[1].0 > t0 && sent[1].0 <= t0 + Duration::from_secs(1));
    assert_eq!(l.next_deadline(), None);
    assert_eq!(l.counters().state_change_records, 2);
}

#[test]
fn all_nodes_and_interface_local_are_never_reported() {
    let mut l = listener(2);
    l.join(secs(0), ALL_NODES).unwrap();
    l.join(secs(0), INTERFACE_LOCAL).unwrap();
    assert_eq!(l.next_deadline(), None);
    l.on_message(secs(1), &general_query_v2(1000));
    let sent = run_until(&mut l, secs(10));
    assert!(sent.is_empty(), "{sent:?}");
    l.leave(secs(11), ALL_NODES).unwrap();
    l.leave(secs(11), INTERFACE_LOCAL).unwrap();
    assert!(run_until(&mut l, secs(20)).is_empty());
    assert!(l.is_empty());
}

#[test]
fn solicited_node_group_is_reported() {
    let mut l = listener(3);
    l.join(secs(0), ALL_NODES).unwrap();
    l.join(secs(0), SOLICITED).unwrap();
    let sent = run_until(&mut l, secs(2));
    assert_eq!(
        sent[0],
        (secs(0), v2(&[(MldRecordType::ChangeToExclude, SOLICITED)]))
    );
    // And in a General Query response, without ff02::1.
    l.on_message(secs(10), &general_query_v2(2000));
    let sent = run_until(&mut l, secs(20));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, v2(&[(MldRecordType::ModeIsExclude, SOLICITED)]));
}

#[test]
fn leave_sends_change_to_include_and_its_retransmission() {
    let mut l = listener(4);
    l.join(secs(0), group(1)).unwrap();
    run_until(&mut l, secs(10));
    let t = secs(20);
    assert_eq!(l.leave(t, group(1)), Ok(0));
    assert!(!l.is_member(group(1)));
    let sent = run_until(&mut l, secs(100));
    let expected = v2(&[(MldRecordType::ChangeToInclude, group(1))]);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], (t, expected.clone()));
    assert_eq!(sent[1].1, expected);
    assert!(sent[1].0 > t && sent[1].0 <= t + Duration::from_secs(1));
    assert!(
        l.is_empty(),
        "the group is forgotten after its last retransmission"
    );
    assert_eq!(l.leave(t, group(1)), Err(MldError::NotJoined(group(1))));
}

#[test]
fn joins_at_one_instant_share_a_report() {
    let mut l = listener(5);
    l.join(secs(0), group(1)).unwrap();
    l.join(secs(0), group(2)).unwrap();
    let sent = l.poll(secs(0));
    assert_eq!(
        sent,
        vec![v2(&[
            (MldRecordType::ChangeToExclude, group(1)),
            (MldRecordType::ChangeToExclude, group(2)),
        ])]
    );
}

#[test]
fn v2_general_query_gets_one_report_with_every_group() {
    for seed in 0..20 {
        let mut l = listener(seed);
        for n in 1..=3 {
            l.join(secs(0), group(n)).unwrap();
        }
        l.join(secs(0), ALL_NODES).unwrap();
        run_until(&mut l, secs(10));
        let q = secs(30);
        // 10 000 ms, literal; and a floating-point code: 0x8123 stands for
        // (0x123 | 0x1000) << 3 = 39 192 ms (RFC 3810 §5.1.3).
        for (code, max_ms) in [(10_000u16, 10_000u64), (0x8123, 39_192)] {
            l.on_message(q, &general_query_v2(code));
            let due = l.general_response_due().unwrap();
            assert!(due >= q && due <= q + Duration::from_millis(max_ms));
            let sent = run_until(&mut l, q + Duration::from_secs(100));
            assert_eq!(sent.len(), 1, "{sent:?}");
            assert_eq!(sent[0].0, due);
            assert_eq!(
                sent[0].1,
                v2(&[
                    (MldRecordType::ModeIsExclude, group(1)),
                    (MldRecordType::ModeIsExclude, group(2)),
                    (MldRecordType::ModeIsExclude, group(3)),
                ])
            );
        }
    }
}

#[test]
fn pending_general_response_sooner_covers_later_query() {
    let mut l = listener(6);
    l.join(secs(0), group(1)).unwrap();
    run_until(&mut l, secs(10));
    l.on_message(secs(20), &general_query_v2(0));
    assert_eq!(l.general_response_due(), Some(secs(20)));
    // RFC 3810 §6.2 rule 1: a group query that could only be answered
    // later is covered by the pending general response.
    l.on_query_v2(secs(20), 10_000, group(1), 0);
    assert_eq!(l.counters().queries_ignored, 1);
    let sent = run_until(&mut l, secs(60));
    assert_eq!(
        sent,
        vec![(secs(20), v2(&[(MldRecordType::ModeIsExclude, group(1))]))]
    );
}

#[test]
fn group_specific_query_is_answered_for_that_group_only() {
    let mut l = listener(7);
    l.join(secs(0), group(1)).unwrap();
    l.join(secs(0), group(2)).unwrap();
    run_until(&mut l, secs(10));
    let q = secs(20);
    l.on_query_v2(q, 1000, group(2), 125);
    // A query for a group we don't listen to is ignored.
    l.on_query_v2(q, 1000, group(9), 125);
    assert_eq!(l.counters().queries_ignored, 1);
    let sent = run_until(&mut l, secs(60));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].0 >= q && sent[0].0 <= q + Duration::from_secs(1));
    assert_eq!(sent[0].1, v2(&[(MldRecordType::ModeIsExclude, group(2))]));
}

#[test]
fn refcounted_join_and_leave() {
    let mut l = listener(8);
    assert_eq!(l.join(secs(0), group(1)), Ok(1));
    assert_eq!(l.join(secs(0), group(1)), Ok(2));
    run_until(&mut l, secs(10));
    assert_eq!(l.join(secs(11), group(1)), Ok(3));
    assert_eq!(l.leave(secs(12), group(1)), Ok(2));
    assert_eq!(l.leave(secs(12), group(1)), Ok(1));
    assert!(l.is_member(group(1)));
    assert!(
        run_until(&mut l, secs(60)).is_empty(),
        "no report while joined"
    );
    assert_eq!(l.groups()[0].refcount, 1);
    assert_eq!(l.leave(secs(61), group(1)), Ok(0));
    let sent = run_until(&mut l, secs(100));
    assert_eq!(
        sent[0],
        (secs(61), v2(&[(MldRecordType::ChangeToInclude, group(1))]))
    );
}

#[test]
fn v1_query_switches_to_v1_with_suppression_done_and_timeout() {
    let mut l = listener(9);
    l.join(secs(0), group(1)).unwrap();
    l.join(secs(0), group(2)).unwrap();
    run_until(&mut l, secs(10));
    assert_eq!(l.version(), MldVersion::V2);

    // An MLDv1 General Query: v1 mode, one Report per group within 10 s.
    let q = secs(100);
    l.on_message(
        q,
        &MldRepr::QueryV1 {
            max_response_delay: 10_000,
            group: Ipv6Addr::UNSPECIFIED,
        },
    );
    assert_eq!(l.version(), MldVersion::V1);
    // RFC 3810 §9.12: 2 × 125 s + 10 s.
    assert_eq!(
        l.older_querier_present_until(),
        Some(q + Duration::from_secs(260))
    );
    let sent = run_until(&mut l, q + Duration::from_secs(20));
    let mut groups: Vec<_> = sent
        .iter()
        .map(|(t, action)| {
            assert!(*t >= q && *t <= q + Duration::from_secs(10));
            match action {
                MldAction::SendReportV1 { group } => *group,
                other => panic!("not a v1 report: {other:?}"),
            }
        })
        .collect();
    groups.sort();
    assert_eq!(groups, vec![group(1), group(2)]);
    assert!(l.groups().iter().all(|g| g.last_reporter));

    // A second query; another host reports group 2 first: ours is
    // suppressed and we are no longer its last reporter.
    let q2 = secs(150);
    l.on_query_v1(q2, 10_000, Ipv6Addr::UNSPECIFIED);
    l.on_message(q2, &MldRepr::ReportV1 { group: group(2) });
    assert_eq!(l.counters().reports_suppressed, 1);
    let sent = run_until(&mut l, q2 + Duration::from_secs(20));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1, MldAction::SendReportV1 { group: group(1) });

    // Leaving group 2 sends nothing (someone else reported last); leaving
    // group 1 sends a Done.
    let t = secs(200);
    l.leave(t, group(2)).unwrap();
    l.leave(t, group(1)).unwrap();
    let sent = run_until(&mut l, secs(250));
    assert_eq!(sent, vec![(t, MldAction::SendDone { group: group(1) })]);
    assert_eq!(l.counters().dones_skipped, 1);
    assert!(l.is_empty());

    // Joining in v1 mode: an unsolicited v1 Report and one repeat within
    // the v1 Unsolicited Report Interval (10 s).
    let j = secs(260);
    l.join(j, group(3)).unwrap();
    let sent = run_until(&mut l, secs(300));
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], (j, MldAction::SendReportV1 { group: group(3) }));
    assert!(sent[1].0 > j && sent[1].0 <= j + Duration::from_secs(10));

    // The Older Version Querier Present timer restarted at q2; it expires
    // at q2 + 260 s and the interface is back to MLDv2.
    let expiry = q2 + Duration::from_secs(260);
    assert_eq!(l.next_deadline(), Some(expiry));
    l.poll(Instant::from_nanos(expiry.as_nanos() - 1));
    assert_eq!(l.version(), MldVersion::V1);
    assert!(l.poll(expiry).is_empty());
    assert_eq!(l.version(), MldVersion::V2);
    assert_eq!(l.counters().switches_to_v2, 1);
    l.join(secs(500), group(4)).unwrap();
    assert_eq!(
        l.poll(secs(500)),
        vec![v2(&[(MldRecordType::ChangeToExclude, group(4))])]
    );
    assert_eq!(run_until(&mut l, secs(505)).len(), 1, "the retransmission");
    // Leaving in v2 mode always reports, last reporter or not.
    l.leave(secs(510), group(3)).unwrap();
    assert_eq!(
        l.poll(secs(510)),
        vec![v2(&[(MldRecordType::ChangeToInclude, group(3))])]
    );
}

#[test]
fn v1_reports_are_ignored_in_v2_mode() {
    let mut l = listener(10);
    l.join(secs(0), group(1)).unwrap();
    l.on_report_v1(secs(0), group(1));
    assert_eq!(l.counters().reports_suppressed, 0);
    assert_eq!(run_until(&mut l, secs(5)).len(), 2, "no suppression in v2");
}

#[test]
fn table_is_bounded() {
    let mut l = MldListener::new(MldConfig {
        capacity: 2,
        ..MldConfig::default()
    });
    l.join(secs(0), group(1)).unwrap();
    l.join(secs(0), group(2)).unwrap();
    assert_eq!(l.join(secs(0), group(3)), Err(MldError::TableFull));
    assert_eq!(
        l.join(secs(0), group(1)),
        Ok(2),
        "existing groups still count"
    );
    assert_eq!(l.counters().table_full, 1);
    assert_eq!(
        l.join(secs(0), "2001:db8::1".parse().unwrap()),
        Err(MldError::NotMulticast("2001:db8::1".parse().unwrap()))
    );
    assert_eq!(l.len(), 2);
}

/// A fixed script of events, returning every action with its time.
fn script(seed: u64) -> Vec<(Instant, MldAction)> {
    let mut l = listener(seed);
    let mut sent = Vec::new();
    for n in 1..=4 {
        l.join(ms(u64::from(n) * 10), group(n)).unwrap();
    }
    sent.extend(run_until(&mut l, secs(10)));
    l.on_message(secs(10), &general_query_v2(10_000));
    sent.extend(run_until(&mut l, secs(30)));
    l.on_query_v1(secs(30), 10_000, Ipv6Addr::UNSPECIFIED);
    sent.extend(run_until(&mut l, secs(35)));
    l.on_report_v1(secs(35), group(4));
    sent.extend(run_until(&mut l, secs(50)));
    l.leave(secs(50), group(1)).unwrap();
    sent.extend(run_until(&mut l, secs(400)));
    l.leave(secs(400), group(2)).unwrap();
    sent.extend(run_until(&mut l, secs(500)));
    sent
}

#[test]
fn same_seed_same_actions() {
    let a = script(42);
    assert_eq!(a, script(42));
    assert!(a.len() > 8, "{a:?}");
    assert_ne!(a, script(43), "the seed drives the delays");
}

#[derive(Debug, Clone)]
enum Event {
    Join(u16),
    Leave(u16),
    QueryV1 { delay_ms: u16, group: Option<u16> },
    QueryV2 { code: u16, group: Option<u16> },
    ReportV1(u16),
    Advance(u32),
}

fn event() -> impl Strategy<Value = Event> {
    let g = 0u16..12;
    prop_oneof![
        3 => g.clone().prop_map(Event::Join),
        2 => g.clone().prop_map(Event::Leave),
        1 => (any::<u16>(), proptest::option::of(g.clone()))
            .prop_map(|(delay_ms, group)| Event::QueryV1 { delay_ms, group }),
        1 => (any::<u16>(), proptest::option::of(g.clone()))
            .prop_map(|(code, group)| Event::QueryV2 { code, group }),
        1 => g.prop_map(Event::ReportV1),
        3 => (0u32..400_000).prop_map(Event::Advance),
    ]
}

/// Group 0 is ff02::1 and group 1 interface-local: joinable, never reported.
fn pick(n: u16) -> Ipv6Addr {
    match n {
        0 => ALL_NODES,
        1 => INTERFACE_LOCAL,
        n => group(n),
    }
}

proptest! {
    #[test]
    fn random_sequences_keep_invariants(
        seed in any::<u64>(),
        events in proptest::collection::vec(event(), 0..120),
    ) {
        const CAPACITY: usize = 6;
        let mut l = MldListener::new(MldConfig {
            capacity: CAPACITY,
            random_seed: seed,
            ..MldConfig::default()
        });
        let mut now = Instant::ZERO;
        let mut refs = std::collections::HashMap::<Ipv6Addr, u32>::new();
        for event in events {
            match event {
                Event::Join(n) => {
                    let g = pick(n);
                    if let Ok(count) = l.join(now, g) {
                        let expected = refs.entry(g).or_default();
                        *expected += 1;
                        prop_assert_eq!(count, *expected);
                    }
                }
                Event::Leave(n) => {
                    let g = pick(n);
                    let result = l.leave(now, g);
                    match refs.get_mut(&g) {
                        Some(count) if *count > 0 => {
                            *count -= 1;
                            prop_assert_eq!(result, Ok(*count));
                        }
                        _ => prop_assert_eq!(result, Err(MldError::NotJoined(g))),
                    }
                }
                Event::QueryV1 { delay_ms, group } => {
                    l.on_query_v1(now, delay_ms, group.map_or(Ipv6Addr::UNSPECIFIED, pick));
                }
                Event::QueryV2 { code, group } => {
                    l.on_query_v2(now, code, group.map_or(Ipv6Addr::UNSPECIFIED, pick), 125);
                }
                Event::ReportV1(n) => l.on_report_v1(now, pick(n)),
                Event::Advance(millis) => {
                    now += Duration::from_millis(u64::from(millis));
                    for action in l.poll(now) {
                        let reported = match &action {
                            MldAction::SendReportV2 { records } => {
                                prop_assert!(!records.is_empty());
                                records.iter().map(|r| r.1).collect()
                            }
                            MldAction::SendReportV1 { group } | MldAction::SendDone { group } => {
                                vec![*group]
                            }
                        };
                        for g in reported {
                            prop_assert!(g != ALL_NODES && g != INTERFACE_LOCAL);
                        }
                    }
                    if let Some(deadline) = l.next_deadline() {
                        prop_assert!(deadline > now, "deadline {:?} not after {:?}", deadline, now);
                    }
                }
            }
            prop_assert!(l.len() <= CAPACITY);
            for info in l.groups() {
                prop_assert_eq!(info.refcount, refs.get(&info.group).copied().unwrap_or(0));
                if !info.reportable {
                    prop_assert!(info.state_change.is_none() && info.query_response.is_none());
                }
            }
            for (g, count) in &refs {
                prop_assert_eq!(l.is_member(*g), *count > 0);
            }
        }
    }
}
