//! The sender's and receivers' rules one packet at a time.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use wire::xtp::first::{Address, Traffic};
use wire::xtp::{
    AddressRepr, ControlRepr, Segment, Service, Span, Spans, TrafficRepr, XtpOptions, XtpRepr,
    KEY_RETURN,
};

use super::*;
use crate::random::SplitMix64;
use crate::socket::xtp::multicast::receiver::ReceiverInput;
use crate::socket::xtp::multicast::sender::SenderInput;
use crate::socket::xtp::packet::Body;
use crate::time::Instant;

const KEY: u64 = 0x1234;

fn group() -> SocketAddr {
    "[ff15::7836]:7100".parse().unwrap()
}

fn host(n: u16) -> IpAddr {
    IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n))
}

fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

fn control(rseq: u64, alloc: u64, echo: u32) -> ControlRepr {
    ControlRepr { rseq, alloc, echo }
}

fn packet(key: u64, options: XtpOptions, segment: Segment<'_>) -> XtpRepr<'_> {
    XtpRepr {
        key,
        options: options | XtpOptions::MULTI,
        sort: 0,
        sync: 0,
        seq: 0,
        segment,
    }
}

fn traffic() -> TrafficRepr {
    TrafficRepr {
        service: Service::MulticastStream,
        traffic: Traffic::None { traffic: 0 },
    }
}

fn jcntl(c: ControlRepr, xkey: u64) -> Segment<'static> {
    Segment::Jcntl {
        control: c,
        xkey,
        address: AddressRepr {
            domain: 0,
            address: Address::Null { address: 0 },
        },
        traffic: traffic(),
    }
}

/// A sender with `n` receivers joined (hosts 1..=n), alloc 1 MiB each.
fn sender_with(n: u16, config: GroupConfig) -> GroupSender {
    let config = GroupConfig {
        receivers: usize::from(n),
        ..config
    };
    let local = SocketAddr::new(host(100), 7100);
    let mut s = GroupSender::new(config, KEY, local, group(), 1000);
    let first = s.poll_output(at(0)).expect("FIRST");
    assert!(matches!(first.body, Body::First { .. }));
    for i in 1..=n {
        let join = packet(
            KEY | KEY_RETURN,
            XtpOptions::empty(),
            jcntl(control(0, 1 << 20, 1), u64::from(i)),
        );
        assert_eq!(s.input(host(i), &join), SenderInput::Taken);
    }
    s
}

/// Every packet the sender has now: (seq, len, options).
fn drain(s: &mut GroupSender, now: Instant) -> Vec<(u64, usize, XtpOptions, u32)> {
    let mut out = Vec::new();
    while let Some(p) = s.poll_output(now) {
        out.push((p.seq, p.data_len(), p.options, p.sync));
    }
    out
}

fn report(s: &mut GroupSender, from: u16, rseq: u64, echo: u32, spans: &[Span]) -> SenderInput {
    let c = control(rseq, 1 << 20, echo);
    let segment = if spans.is_empty() {
        Segment::Cntl(c)
    } else {
        Segment::Ecntl {
            control: c,
            spans: Spans::List(spans),
        }
    };
    s.input(
        host(from),
        &packet(KEY | KEY_RETURN, XtpOptions::empty(), segment),
    )
}

#[test]
fn data_wait_for_the_expected_joins_and_first_is_sent_again() {
    let config = GroupConfig {
        receivers: 2,
        ..GroupConfig::default()
    };
    let mut s = GroupSender::new(config, KEY, SocketAddr::new(host(100), 1), group(), 1000);
    s.send(&[7; 3000]);
    assert!(matches!(
        s.poll_output(at(0)).unwrap().body,
        Body::First { .. }
    ));
    assert!(s.poll_output(at(0)).is_none(), "no data before the joins");
    let join = packet(
        KEY | KEY_RETURN,
        XtpOptions::empty(),
        jcntl(control(0, 1 << 20, 1), 9),
    );
    s.input(host(1), &join);
    assert_eq!(s.state(), GroupState::Joining);
    // WTIMER: FIRST again for the receiver still missing.
    s.poll_timers(at(25));
    assert!(matches!(
        s.poll_output(at(25)).unwrap().body,
        Body::First { .. }
    ));
    s.input(host(2), &join);
    assert_eq!(s.state(), GroupState::Streaming);
    let sent = drain(&mut s, at(26));
    assert_eq!(sent.iter().map(|p| p.1).sum::<usize>(), 3000);
    assert!(sent.last().unwrap().2.contains(XtpOptions::SREQ));
}

#[test]
fn too_few_joins_close_the_sender_after_its_retries() {
    let config = GroupConfig {
        retries: 2,
        ..GroupConfig::default()
    };
    let mut s = GroupSender::new(config, KEY, SocketAddr::new(host(100), 1), group(), 1000);
    let mut now = 0;
    while s.state() == GroupState::Joining && now < 10_000 {
        let _ = drain(&mut s, at(now));
        now += 1000;
        s.poll_timers(at(now));
    }
    assert_eq!(s.state(), GroupState::Closed);
    assert_eq!(s.counters().requests, 3);
}

#[test]
fn the_group_advances_only_as_far_as_its_slowest_receiver() {
    let mut s = sender_with(3, GroupConfig::default());
    s.send(&[1; 5000]);
    let sent = drain(&mut s, at(1));
    let sync = sent.last().unwrap().3;
    report(&mut s, 1, 5000, sync, &[]);
    report(&mut s, 2, 5000, sync, &[]);
    assert_eq!(s.group_rseq(), 0);
    report(&mut s, 3, 2000, sync, &[]);
    assert_eq!(s.group_rseq(), 2000);
    assert_eq!(s.send_queued(), 3000);
    // An rseq past what was sent is untrusted: clamped.
    report(&mut s, 3, u64::MAX, sync, &[]);
    assert_eq!(s.group_rseq(), 5000);
}

#[test]
fn gaps_are_resent_to_the_group_once_per_request() {
    let mut s = sender_with(2, GroupConfig::default());
    s.send(&[1; 5000]);
    let sync = drain(&mut s, at(1)).last().unwrap().3;
    // Both lost 1000..2000; one also 3000..4000.
    report(
        &mut s,
        1,
        1000,
        sync,
        &[Span {
            left: 2000,
            right: 5000,
        }],
    );
    report(
        &mut s,
        2,
        1000,
        sync,
        &[
            Span {
                left: 2000,
                right: 3000,
            },
            Span {
                left: 4000,
                right: 5000,
            },
        ],
    );
    let resent = drain(&mut s, at(2));
    let ranges: Vec<(u64, usize)> = resent.iter().map(|p| (p.0, p.1)).collect();
    assert_eq!(ranges, [(1000, 1000), (3000, 1000)]);
    assert_eq!(s.counters().resent_packets, 2);
    assert_eq!(s.counters().resent_bytes, 2000);
}

#[test]
fn a_join_past_the_limit_is_refused_and_counted() {
    let mut s = sender_with(1, GroupConfig::default());
    for i in 2..=MAX_RECEIVERS as u16 {
        let join = packet(
            KEY | KEY_RETURN,
            XtpOptions::empty(),
            jcntl(control(0, 1, 1), 5),
        );
        assert_eq!(s.input(host(i), &join), SenderInput::Taken);
    }
    let join = packet(
        KEY | KEY_RETURN,
        XtpOptions::empty(),
        jcntl(control(0, 1, 1), 5),
    );
    assert_eq!(s.input(host(999), &join), SenderInput::Refused);
    assert_eq!(s.members().count(), MAX_RECEIVERS);
    assert_eq!(s.counters().receivers_refused, 1);
    // A control from a stranger changes nothing.
    assert_eq!(report(&mut s, 998, 0, 0, &[]), SenderInput::Unknown);
}

#[test]
fn a_receiver_ending_is_forgotten() {
    let mut s = sender_with(2, GroupConfig::default());
    s.send(&[1; 100]);
    s.shutdown();
    let sync = drain(&mut s, at(1)).last().unwrap().3;
    report(&mut s, 1, 100, sync, &[]);
    assert_eq!(s.state(), GroupState::Streaming);
    let end = packet(
        KEY | KEY_RETURN,
        XtpOptions::END,
        Segment::Cntl(control(0, 0, 0)),
    );
    s.input(host(2), &end);
    assert_eq!(s.counters().receivers_left, 1);
    assert_eq!(s.state(), GroupState::Done);
    // The last receiver leaving closes a sender that is not done.
    let mut s = sender_with(1, GroupConfig::default());
    s.send(&[1; 100]);
    let _ = drain(&mut s, at(1));
    s.input(host(1), &end);
    assert_eq!(s.state(), GroupState::Closed);
    assert_eq!(s.send(&[1; 10]), 0);
    assert!(drain(&mut s, at(2)).is_empty());
}

fn receiver(config: GroupConfig) -> GroupReceiver {
    let mut r = GroupReceiver::new(config, group(), host(1), 77, 5);
    let first = Segment::First {
        address: AddressRepr {
            domain: 0,
            address: Address::Ipv6 {
                dst_host: "ff15::7836".parse().unwrap(),
                src_host: "2001:db8::64".parse().unwrap(),
                dst_port: 7100,
                src_port: 7100,
            },
        },
        traffic: traffic(),
        btag: None,
        data: &[],
    };
    let p = packet(KEY, XtpOptions::SREQ, first);
    assert_eq!(r.input(at(0), host(100), &p), ReceiverInput::Taken);
    let join = r.poll_output(at(5)).expect("JCNTL");
    assert!(matches!(join.body, Body::Jcntl { xkey: 77, .. }));
    assert_eq!(join.key, KEY | KEY_RETURN);
    r
}

fn data(r: &mut GroupReceiver, now: Instant, seq: u64, len: usize, sync: u32) {
    let bytes = vec![3u8; len];
    let mut p = packet(
        KEY,
        XtpOptions::SREQ,
        Segment::Data {
            btag: None,
            data: &bytes,
        },
    );
    p.seq = seq;
    p.sync = sync;
    r.input(now, host(100), &p);
}

fn heard(r: &mut GroupReceiver, rseq: u64, alloc: u64, echo: u32) {
    let p = packet(
        KEY | KEY_RETURN,
        XtpOptions::empty(),
        Segment::Cntl(control(rseq, alloc, echo)),
    );
    r.input(at(6), host(2), &p);
}

#[test]
fn answers_wait_for_their_slot() {
    let config = GroupConfig {
        slot: Duration::from_millis(4),
        ..GroupConfig::default()
    };
    let mut r = receiver(config);
    data(&mut r, at(10), 0, 100, 2);
    let due = r.next_deadline().unwrap();
    assert!(due >= at(10) && due < at(14), "{due:?}");
    assert!(r.poll_output(at(10)).is_none() || due == at(10));
    let answer = r.poll_output(at(14)).unwrap();
    assert!(matches!(answer.body, Body::Cntl(c) if c.rseq == 100 && c.echo == 2));
    // Without slotting, at once.
    let mut r = receiver(GroupConfig {
        slotting: false,
        ..config
    });
    data(&mut r, at(10), 0, 100, 2);
    assert_eq!(r.next_deadline(), Some(at(10)));
}

#[test]
fn an_answer_reporting_no_more_than_ours_damps_it() {
    let mut r = receiver(GroupConfig::default());
    let alloc = GroupConfig::default().recv_buffer as u64;
    // The JCNTL told the sender rseq 0. A peer's 0 covers ours: damped.
    data(&mut r, at(6), 0, 100, 2);
    heard(&mut r, 0, alloc, 2);
    assert!(r.poll_output(at(20)).is_none());
    assert_eq!(r.counters().controls_damped, 1);
    // A peer reporting more than the sender knows of us does not.
    data(&mut r, at(21), 100, 100, 3);
    heard(&mut r, 150, alloc + 150, 3);
    assert!(r.poll_output(at(30)).is_some());
    // Nor one answering another request, nor a larger alloc.
    data(&mut r, at(31), 200, 100, 4);
    heard(&mut r, 0, alloc, 3);
    heard(&mut r, 0, alloc + 1_000_000, 4);
    assert!(r.poll_output(at(40)).is_some());
    assert_eq!(r.counters().controls_damped, 1);
}

#[test]
fn damping_off_always_answers() {
    let mut r = receiver(GroupConfig {
        damping: false,
        ..GroupConfig::default()
    });
    data(&mut r, at(6), 0, 100, 2);
    heard(&mut r, 0, 0, 2);
    assert!(r.poll_output(at(20)).is_some());
    assert_eq!(r.counters().controls_damped, 0);
}

#[test]
fn a_gap_is_reported_with_spans() {
    let mut r = receiver(GroupConfig::default());
    data(&mut r, at(6), 0, 100, 2);
    data(&mut r, at(6), 200, 100, 2);
    let answer = r.poll_output(at(20)).unwrap();
    let Body::Ecntl(c, spans) = answer.body else {
        panic!("{answer:?}");
    };
    assert_eq!(c.rseq, 100);
    assert_eq!(
        spans,
        [Span {
            left: 200,
            right: 300
        }]
    );
}

/// Random packets of every kind, at both ends: nothing panics, and the
/// sender's state stays bounded and consistent.
#[test]
fn random_packets_never_panic() {
    let mut rng = SplitMix64::new(99);
    let mut s = sender_with(2, GroupConfig::default());
    s.send(&[5; 20_000]);
    let mut r = receiver(GroupConfig::default());
    let payload = [9u8; 64];
    for step in 0..20_000u64 {
        let v = rng.next_u64();
        let c = control(
            rng.next_u64() >> (v % 64),
            rng.next_u64() >> (v % 61),
            (v >> 8) as u32 % 8,
        );
        let spans = [
            Span {
                left: v % 30_000,
                right: v % 30_000 + 50,
            },
            Span {
                left: 40_000,
                right: u64::MAX,
            },
        ];
        let segment = match v % 6 {
            0 => Segment::Cntl(c),
            1 => Segment::Ecntl {
                control: c,
                spans: Spans::List(&spans),
            },
            2 => jcntl(c, v),
            3 => Segment::Data {
                btag: None,
                data: &payload[..(v % 64) as usize],
            },
            _ => Segment::Diag {
                code: wire::xtp::DiagCode::ContextRefused,
                value: wire::xtp::DiagValue::NoListener,
                message: b"x",
            },
        };
        let options = XtpOptions::from_bits((v >> 16) as u32);
        let key = if v & 1 == 0 { KEY } else { KEY | KEY_RETURN };
        let mut p = packet(key, options, segment);
        p.seq = rng.next_u64() >> (v % 64);
        p.sync = (v >> 24) as u32 % 8;
        let from = host((v % 5) as u16);
        let _ = s.input(from, &p);
        let _ = r.input(at(step), from, &p);
        let _ = drain(&mut s, at(step));
        while r.poll_output(at(step + 5)).is_some() {}
        s.poll_timers(at(step));
        assert!(s.members().count() <= MAX_RECEIVERS);
        assert!(s.group_rseq() <= 20_000);
    }
}

#[test]
fn gaps_are_what_the_spans_leave() {
    assert_eq!(gaps(10, 100, &[]), [(10, 100)]);
    assert_eq!(
        gaps(10, 100, &[(20, 30), (50, 60)]),
        [(10, 20), (30, 50), (60, 100)]
    );
    assert_eq!(gaps(10, 40, &[(5, 20), (30, 90)]), [(20, 30)]);
    assert!(gaps(10, 10, &[]).is_empty());
    assert!(gaps(10, 40, &[(0, 50)]).is_empty());
}

#[test]
fn a_late_jcntl_from_a_member_reports_but_asks_for_no_resend() {
    let mut s = sender_with(1, GroupConfig::default());
    s.send(&[1; 3000]);
    let sync = drain(&mut s, at(1)).last().unwrap().3;
    let join = packet(
        KEY | KEY_RETURN,
        XtpOptions::empty(),
        jcntl(control(1000, 1 << 20, sync), 1),
    );
    assert_eq!(s.input(host(1), &join), SenderInput::Taken);
    assert_eq!(s.group_rseq(), 1000);
    assert!(drain(&mut s, at(2)).is_empty(), "no spans: no resend");
    assert_eq!(s.members().count(), 1);
}
