//! Two associations joined by hand, with no host: packets emitted and
//! parsed by the wire crate, some dropped on purpose, time advanced by the
//! test. Shows the state machine alone does setup, key exchange, error
//! control and the close; and that arbitrary packets never panic it.

use std::time::Duration;

use probe::Flow;
use proptest::prelude::*;
use wire::ip::ChecksumMode;
use wire::xtp::{ControlRepr, Segment, Span, Spans, XtpOptions, XtpPacket, XtpRepr};

use super::association::{Association, Ends, State};
use super::config::{ErrorControl, XtpConfig};
use crate::time::Instant;

fn ends(local: &str, remote: &str, key: u64) -> Ends {
    Ends {
        local: local.parse().unwrap(),
        remote: remote.parse().unwrap(),
        own_key: key,
        path_maxdata: 1000,
        flow: Flow::NONE,
    }
}

/// The packet's bytes as the peer would receive them.
fn wire_bytes(out: &super::packet::Outgoing) -> Vec<u8> {
    let repr = out.repr();
    let mut bytes = vec![0; repr.buffer_len()];
    repr.emit(
        &mut XtpPacket::new_unchecked(&mut bytes[..]),
        ChecksumMode::Full,
    )
    .unwrap();
    bytes
}

/// Runs a and b until both are quiet for a second of virtual time;
/// `drop(n)` says whether the n-th packet from a (counted from 0) is lost.
/// Returns what b read.
fn run(
    a: &mut Association,
    b: &mut Option<Association>,
    b_config: XtpConfig,
    drop: impl Fn(usize) -> bool,
) -> Vec<u8> {
    let mut now = Instant::ZERO;
    let mut from_a = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..100_000 {
        let mut moved = false;
        while let Some(out) = a.poll_output(now) {
            moved = true;
            let n = from_a;
            from_a += 1;
            if drop(n) {
                continue;
            }
            let bytes = wire_bytes(&out);
            let repr =
                XtpRepr::parse(&XtpPacket::new_unchecked(&bytes[..]), ChecksumMode::Full).unwrap();
            // As the host does: only FIRST opens a context.
            if b.is_none() && matches!(repr.segment, Segment::First { .. }) {
                let e = ends("[2001:db8::b]:7", "[2001:db8::a]:9", 77);
                *b = Some(Association::respond(b_config, e, repr.key, now));
            }
            if let Some(b) = b.as_mut() {
                b.input(now, &repr);
            }
        }
        if let Some(b) = b.as_mut() {
            loop {
                let n = b.recv(&mut buf);
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            if b.at_eof() && b.state() == State::Active {
                b.close();
            }
            while let Some(out) = b.poll_output(now) {
                moved = true;
                let bytes = wire_bytes(&out);
                let view = XtpPacket::new_unchecked(&bytes[..]);
                a.input(now, &XtpRepr::parse(&view, ChecksumMode::Full).unwrap());
            }
        }
        if !moved {
            let next = [a.next_deadline(), a.rate_deadline()]
                .into_iter()
                .chain(b.iter().map(|b| b.next_deadline()))
                .flatten()
                .min();
            match next {
                Some(t) if t <= Instant::ZERO + Duration::from_secs(600) => now = t.max(now),
                _ => break,
            }
            a.poll_timers(now);
            if let Some(b) = b.as_mut() {
                b.poll_timers(now);
            }
        } else {
            now += Duration::from_micros(100);
        }
        if a.state() == State::Closed && b.as_ref().is_some_and(|b| b.state() == State::Closed) {
            break;
        }
    }
    got
}

fn transfer(error_control: ErrorControl, drop: impl Fn(usize) -> bool) -> Association {
    let config = XtpConfig {
        error_control,
        ..XtpConfig::default()
    };
    let mut a = Association::connect(
        config,
        ends("[2001:db8::a]:9", "[2001:db8::b]:7", 5),
        Instant::ZERO,
    );
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(a.send(&data), data.len());
    a.close();
    let mut b = None;
    let got = run(&mut a, &mut b, config, drop);
    assert_eq!(got, data);
    let b = b.unwrap();
    assert_eq!(a.peer_key(), Some(77), "the key exchange");
    assert_eq!(b.peer_key(), Some(5));
    assert_eq!((a.state(), a.error()), (State::Closed, None));
    assert_eq!((b.state(), b.error()), (State::Closed, None));
    a
}

#[test]
fn a_clean_exchange_sends_nothing_twice() {
    let a = transfer(ErrorControl::Selective, |_| false);
    assert_eq!(a.counters().retransmitted_packets, 0);
    assert_eq!(a.counters().first_sent, 1);
}

#[test]
fn selective_retransmission_resends_exactly_the_lost_packets() {
    // FIRST is packet 0; lose two data packets in the middle.
    let a = transfer(ErrorControl::Selective, |n| n == 5 || n == 9);
    let c = a.counters();
    assert_eq!(c.retransmitted_packets, 2, "{c:?}");
    assert_eq!(c.retransmitted_bytes, 2000);
}

#[test]
fn go_back_n_resends_from_the_first_loss() {
    let a = transfer(ErrorControl::GoBackN, |n| n == 5);
    let c = a.counters();
    assert!(c.go_backs >= 1);
    assert!(
        c.retransmitted_packets > 1,
        "everything after the loss: {c:?}"
    );
}

#[test]
fn without_error_control_a_loss_is_given_up_not_resent() {
    let config = XtpConfig {
        noerr: true,
        ..XtpConfig::default()
    };
    let mut a = Association::connect(
        config,
        ends("[2001:db8::a]:9", "[2001:db8::b]:7", 5),
        Instant::ZERO,
    );
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    a.send(&data);
    a.close();
    let mut b = None;
    // Packet 0 is FIRST (bytes 0..1000); packet 5 carries 5000..6000.
    let got = run(&mut a, &mut b, XtpConfig::default(), |n| n == 5);
    let mut expected = data[..5000].to_vec();
    expected.extend_from_slice(&data[6000..]);
    assert_eq!(got, expected);
    assert_eq!(a.counters().retransmitted_packets, 0);
    let b = b.unwrap();
    assert_eq!(b.counters().bytes_given_up, 1000);
    assert_eq!((a.error(), b.error()), (None, None));
}

#[test]
fn a_lost_first_is_sent_again() {
    let a = transfer(ErrorControl::Selective, |n| n == 0);
    assert_eq!(a.counters().first_sent, 2);
}

/// kind, seq, rseq, alloc, sync/echo, option bits, span edges.
type RawPacket = (u8, u64, u64, u64, u32, u32, Vec<(u64, u64)>);

fn arbitrary_packet() -> impl Strategy<Value = RawPacket> {
    (
        0u8..5,
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        prop::collection::vec((any::<u64>(), any::<u64>()), 0..4),
    )
}

proptest! {
    /// Whatever arrives, in any order, with any numbers: no panic, and the
    /// buffers stay within their bounds.
    #[test]
    fn arbitrary_packets_never_panic(packets in prop::collection::vec(arbitrary_packet(), 1..40)) {
        let config = XtpConfig { recv_buffer: 4096, send_buffer: 4096, ..XtpConfig::default() };
        let mut a = Association::connect(config, ends("[2001:db8::a]:9", "[2001:db8::b]:7", 5), Instant::ZERO);
        a.send(&[1; 3000]);
        let mut now = Instant::ZERO;
        let data = [9u8; 1500];
        for (kind, seq, rseq, alloc, echo, bits, spans) in packets {
            let mut spans: Vec<Span> = spans.into_iter().map(|(l, r)| Span { left: l.min(r), right: l.max(r) }).collect();
            spans.sort_by_key(|s| s.left);
            spans.dedup_by(|x, y| x.left < y.right);
            let control = ControlRepr { rseq, alloc, echo };
            let segment = match kind {
                0 => Segment::Data { btag: None, data: &data[..(seq % 1500) as usize] },
                1 => Segment::Cntl(control),
                2 => Segment::Ecntl { control, spans: Spans::List(&spans) },
                3 => Segment::Tcntl { control, xkey: seq, traffic: a.traffic() },
                _ => Segment::Diag { code: wire::xtp::DiagCode::from(echo % 9), value: wire::xtp::DiagValue::from(bits % 16), message: b"x" },
            };
            let repr = XtpRepr {
                key: 5 | wire::xtp::KEY_RETURN,
                options: XtpOptions::from_bits(bits & XtpOptions::MASK) - XtpOptions::BTAG,
                sort: 0,
                sync: echo,
                seq,
                segment,
            };
            a.input(now, &repr);
            let mut out = [0u8; 8192];
            a.recv(&mut out);
            while a.poll_output(now).is_some() {}
            prop_assert!(a.readable() <= 4096);
            prop_assert!(a.send_queued() <= 4096);
            now += Duration::from_millis(3);
            a.poll_timers(now);
        }
    }
}
