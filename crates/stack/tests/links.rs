//! Links on virtual time: loopback, the virtual wire and its impairments,
//! the wire's two ends on two threads, and pcapng capture read back by
//! tshark.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use proptest::prelude::*;
use stack::phy::{
    Captured, ConfigError, Link, LinkError, Loopback, Medium, VirtualWire, WireConfig, WireEnd,
};
use stack::time::Instant;

fn at_micros(micros: u64) -> Instant {
    Instant::from_nanos(micros * 1_000)
}

/// A frame of `len` bytes (at least 4) that starts with its number.
fn numbered(number: u32, len: usize) -> Vec<u8> {
    let mut frame = vec![(number % 251) as u8; len.max(4)];
    frame[..4].copy_from_slice(&number.to_be_bytes());
    frame
}

fn number_of(frame: &[u8]) -> u32 {
    u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]])
}

/// Every frame that has arrived at `end` by `now`.
fn drain(end: &mut impl Link, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    let mut frames = Vec::new();
    while let Some(len) = end.receive(now, &mut buf) {
        frames.push(buf[..len].to_vec());
    }
    frames
}

fn wire(config: WireConfig) -> (WireEnd, WireEnd) {
    VirtualWire::pair(config).expect("valid wire configuration")
}

// ---------------------------------------------------------------- loopback

#[test]
fn loopback_returns_gathered_frames_in_order() {
    let mut lo = Loopback::new();
    assert_eq!((lo.medium(), lo.mtu()), (Medium::Ip, 65535));
    assert_eq!(lo.next_arrival(), None);
    let t = at_micros(5);
    lo.transmit(t, &[&[0x60, 0], &[1, 2, 3]]).unwrap();
    lo.transmit(t, &[&[0x45]]).unwrap();
    assert_eq!(lo.next_arrival(), Some(t));
    assert_eq!(drain(&mut lo, t), [vec![0x60, 0, 1, 2, 3], vec![0x45]]);
    assert_eq!(lo.next_arrival(), None);
    let stats = lo.stats();
    assert_eq!((stats.tx_frames, stats.tx_bytes), (2, 6));
    assert_eq!((stats.rx_frames, stats.rx_bytes), (2, 6));
}

#[test]
fn loopback_drops_at_the_tail_when_full() {
    let mut lo = Loopback::with_limits(1500, 3).unwrap();
    for i in 0..3 {
        lo.transmit(Instant::ZERO, &[&numbered(i, 10)]).unwrap();
    }
    assert_eq!(
        lo.transmit(Instant::ZERO, &[&numbered(3, 10)]),
        Err(LinkError::QueueFull)
    );
    assert_eq!(lo.stats().dropped_queue_full, 1);
    // The head survives; the refused tail frame is gone.
    let numbers: Vec<u32> = drain(&mut lo, Instant::ZERO)
        .iter()
        .map(|f| number_of(f))
        .collect();
    assert_eq!(numbers, [0, 1, 2]);
    assert_eq!(
        lo.transmit(Instant::ZERO, &[&[0u8; 1501]]),
        Err(LinkError::TooBig {
            len: 1501,
            max: 1500
        })
    );
    assert_eq!(lo.stats().dropped_too_big, 1);
}

#[test]
fn loopback_drops_and_counts_frames_too_long_for_the_buffer() {
    let mut lo = Loopback::new();
    lo.transmit(Instant::ZERO, &[&[7u8; 100]]).unwrap();
    lo.transmit(Instant::ZERO, &[&[8u8; 10]]).unwrap();
    let mut small = [0u8; 50];
    // The long frame is dropped, never truncated; the next one fits.
    assert_eq!(lo.receive(Instant::ZERO, &mut small), Some(10));
    assert_eq!(lo.stats().dropped_rx_too_long, 1);
    assert_eq!(lo.stats().rx_frames, 1);
}

// ------------------------------------------------------ wire: time and rate

#[test]
fn a_frame_arrives_exactly_after_serialization_and_delay() {
    let (mut a, mut b) = wire(WireConfig {
        rate_bits_per_s: Some(1_000_000),
        delay: Duration::from_millis(5),
        ..WireConfig::default()
    });
    let sent = Instant::from_nanos(1_000_000_000);
    a.transmit(sent, &[&[0xaa; 60], &[0xbb; 40]]).unwrap();
    // 100 bytes hold an Ethernet wire for 124 octets (FCS, preamble and
    // start delimiter, inter-frame gap): 992 µs at 1 Mbit/s, then 5 ms of
    // propagation.
    let arrival = sent + Duration::from_micros(992) + Duration::from_millis(5);
    assert_eq!(b.next_arrival(), Some(arrival));
    assert_eq!(a.next_arrival(), None, "nothing travels towards the sender");
    let mut buf = [0u8; 1514];
    assert_eq!(b.receive(sent, &mut buf), None);
    assert_eq!(
        b.receive(Instant::from_nanos(arrival.as_nanos() - 1), &mut buf),
        None
    );
    assert_eq!(b.receive(arrival, &mut buf), Some(100));
    assert_eq!(&buf[..60], &[0xaa; 60]);
    assert_eq!(&buf[60..100], &[0xbb; 40]);
    assert_eq!(b.next_arrival(), None);
    assert_eq!((a.stats().tx_frames, a.stats().tx_bytes), (1, 100));
    assert_eq!((b.stats().rx_frames, b.stats().rx_bytes), (1, 100));
}

#[test]
fn a_rate_limit_spaces_back_to_back_frames_by_their_serialization_time() {
    let (mut a, mut b) = wire(WireConfig {
        rate_bits_per_s: Some(8_000_000), // one octet per microsecond
        delay: Duration::from_millis(2),
        ..WireConfig::default()
    });
    let t0 = at_micros(1_000_000);
    for i in 0..5 {
        a.transmit(t0, &[&numbered(i, 1000)]).unwrap();
    }
    let mut buf = [0u8; 1514];
    for k in 1..=5u64 {
        // 1000 bytes and Ethernet's 24 octets of FCS, preamble and gap.
        let arrival = t0 + Duration::from_micros(1024 * k) + Duration::from_millis(2);
        assert_eq!(b.next_arrival(), Some(arrival), "frame {k}");
        assert_eq!(
            b.receive(Instant::from_nanos(arrival.as_nanos() - 1), &mut buf),
            None
        );
        assert_eq!(b.receive(arrival, &mut buf), Some(1000));
        assert_eq!(number_of(&buf), k as u32 - 1);
    }
    // An idle link starts serializing a frame when it is sent.
    let later = t0 + Duration::from_millis(100);
    a.transmit(later, &[&[0u8; 500]]).unwrap();
    assert_eq!(
        b.next_arrival(),
        Some(later + Duration::from_micros(524) + Duration::from_millis(2))
    );
}

#[test]
fn short_frames_hold_the_wire_for_ethernets_minimum_frame() {
    // 20-byte frames are padded to 64 octets with their FCS, and 20 more
    // of preamble and gap: 84 µs each at one octet per microsecond.
    let (mut a, mut b) = wire(WireConfig {
        rate_bits_per_s: Some(8_000_000),
        ..WireConfig::default()
    });
    let t0 = at_micros(1_000);
    for i in 0..3 {
        a.transmit(t0, &[&numbered(i, 20)]).unwrap();
    }
    let mut buf = [0u8; 1514];
    for k in 1..=3u64 {
        assert_eq!(b.next_arrival(), Some(t0 + Duration::from_micros(84 * k)));
        assert_eq!(
            b.receive(t0 + Duration::from_micros(84 * k), &mut buf),
            Some(20)
        );
    }
    // Bare IP packets have no framing: their own bytes' time.
    let (mut a, b) = wire(WireConfig {
        medium: Medium::Ip,
        rate_bits_per_s: Some(8_000_000),
        ..WireConfig::default()
    });
    a.transmit(t0, &[&numbered(0, 20)]).unwrap();
    assert_eq!(b.next_arrival(), Some(t0 + Duration::from_micros(20)));
}

#[test]
fn frames_over_the_mtu_are_refused_and_counted() {
    let (mut a, mut b) = wire(WireConfig {
        mtu: 1280,
        ..WireConfig::default()
    });
    assert_eq!((a.mtu(), a.medium()), (1280, Medium::Ethernet));
    // The MTU counts the IP packet; the Ethernet header comes on top.
    a.transmit(Instant::ZERO, &[&[0u8; 14], &[0u8; 1280]])
        .unwrap();
    assert_eq!(
        a.transmit(Instant::ZERO, &[&[0u8; 14], &[0u8; 1281]]),
        Err(LinkError::TooBig {
            len: 1295,
            max: 1294
        })
    );
    assert_eq!(a.stats().dropped_too_big, 1);
    assert_eq!(a.stats().tx_frames, 1);
    assert_eq!(drain(&mut b, Instant::ZERO).len(), 1);
}

#[test]
fn a_full_transmit_ring_refuses_frames_until_one_has_left() {
    // 64-byte frames hold an Ethernet wire for 88 octets (FCS, preamble,
    // gap): at 704 kbit/s, one leaves every millisecond.
    let (mut a, mut b) = wire(WireConfig {
        queue_frames: 4,
        rate_bits_per_s: Some(704_000),
        ..WireConfig::default()
    });
    for i in 0..4 {
        a.transmit(Instant::ZERO, &[&numbered(i, 64)]).unwrap();
    }
    assert_eq!(
        a.transmit(Instant::ZERO, &[&numbered(4, 64)]),
        Err(LinkError::QueueFull)
    );
    assert_eq!(a.stats().dropped_queue_full, 1);
    let one_ms = Instant::ZERO + Duration::from_millis(1);
    a.transmit(one_ms, &[&numbered(5, 64)]).unwrap();
    let numbers: Vec<u32> = drain(&mut b, Instant::from_nanos(u64::MAX))
        .iter()
        .map(|f| number_of(f))
        .collect();
    assert_eq!(numbers, [0, 1, 2, 3, 5]);
}

#[test]
fn a_receiver_that_does_not_drain_loses_frames_and_counts_them() {
    let (mut a, mut b) = wire(WireConfig {
        queue_frames: 4,
        ..WireConfig::default()
    });
    // Unlimited rate: each frame leaves at once; the receive side takes
    // twice the ring, then overruns.
    for i in 0..10 {
        a.transmit(Instant::ZERO, &[&numbered(i, 64)]).unwrap();
    }
    assert_eq!(b.stats().dropped_rx_overrun, 2);
    assert_eq!(a.stats().dropped_queue_full, 0);
    let mut buf = [0u8; 64];
    assert_eq!(b.receive(Instant::ZERO, &mut buf), Some(64));
    a.transmit(Instant::ZERO, &[&numbered(10, 64)]).unwrap();
    let numbers: Vec<u32> = drain(&mut b, Instant::ZERO)
        .iter()
        .map(|f| number_of(f))
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 10]);
}

#[test]
fn a_frame_too_long_for_the_receive_buffer_is_dropped_and_counted() {
    let (mut a, mut b) = wire(WireConfig::default());
    a.transmit(Instant::ZERO, &[&[1u8; 200]]).unwrap();
    a.transmit(Instant::ZERO, &[&[2u8; 20]]).unwrap();
    let mut small = [0u8; 100];
    assert_eq!(b.receive(Instant::ZERO, &mut small), Some(20));
    assert_eq!(b.stats().dropped_rx_too_long, 1);
    assert_eq!(b.receive(Instant::ZERO, &mut small), None);
    // Dropped frames no longer count against the queue bound.
    assert_eq!(b.next_arrival(), None);
}

#[test]
fn both_directions_carry_frames() {
    let (mut a, mut b) = wire(WireConfig::default());
    a.transmit(Instant::ZERO, &[b"to b"]).unwrap();
    b.transmit(Instant::ZERO, &[b"to a"]).unwrap();
    assert_eq!(drain(&mut b, Instant::ZERO), [b"to b".to_vec()]);
    assert_eq!(drain(&mut a, Instant::ZERO), [b"to a".to_vec()]);
}

#[test]
fn nonsense_configurations_are_errors() {
    let bad = [
        (
            WireConfig {
                mtu: 0,
                ..WireConfig::default()
            },
            ConfigError::ZeroMtu,
        ),
        (
            WireConfig {
                loss: 2.0,
                ..WireConfig::default()
            },
            ConfigError::Probability {
                name: "loss",
                value: 2.0,
            },
        ),
    ];
    for (config, error) in bad {
        assert_eq!(VirtualWire::pair(config).err(), Some(error));
    }
    assert!(VirtualWire::pair(WireConfig {
        reorder: f64::NAN,
        reorder_delay: Duration::from_micros(1),
        ..WireConfig::default()
    })
    .is_err());
}

// ------------------------------------------------------ wire: impairments

/// Sends `count` numbered frames from `a`, one per microsecond, receiving
/// at `b` as it goes; returns the numbers of the frames `b` got, in order.
fn run_numbered(config: WireConfig, count: u32) -> (Vec<u32>, WireEnd, WireEnd) {
    let (mut a, mut b) = wire(config);
    let mut delivered = Vec::new();
    for i in 0..count {
        let now = at_micros(u64::from(i));
        a.transmit(now, &[&numbered(i, 64)]).unwrap();
        delivered.extend(drain(&mut b, now).iter().map(|f| number_of(f)));
    }
    delivered.extend(
        drain(&mut b, Instant::from_nanos(u64::MAX))
            .iter()
            .map(|f| number_of(f)),
    );
    (delivered, a, b)
}

#[test]
fn total_loss_drops_every_frame_and_counts_it() {
    let (delivered, a, b) = run_numbered(
        WireConfig {
            loss: 1.0,
            ..WireConfig::default()
        },
        100,
    );
    assert!(delivered.is_empty());
    assert_eq!(a.stats().tx_frames, 100);
    assert_eq!(a.stats().dropped_loss, 100);
    assert_eq!(b.stats().rx_frames, 0);
}

#[test]
fn loss_is_binomial_and_replays_exactly_from_its_seed() {
    let config = |seed| WireConfig {
        loss: 0.3,
        seed,
        queue_frames: 16,
        ..WireConfig::default()
    };
    let (first, a, b) = run_numbered(config(42), 10_000);
    let lost = a.stats().dropped_loss;
    // Binomial(10 000, 0.3): mean 3000, standard deviation about 46.
    assert!((2725..=3275).contains(&lost), "lost {lost}");
    assert_eq!(first.len() as u64, 10_000 - lost);
    assert_eq!(b.stats().rx_frames, 10_000 - lost);
    assert!(
        first.windows(2).all(|w| w[0] < w[1]),
        "loss alone keeps order"
    );

    let (again, _, _) = run_numbered(config(42), 10_000);
    assert_eq!(first, again, "the same seed gives the same frames");
    let (other, _, _) = run_numbered(config(43), 10_000);
    assert_ne!(first, other, "another seed gives other frames");
}

#[test]
fn duplication_delivers_a_frame_twice() {
    let (delivered, a, b) = run_numbered(
        WireConfig {
            duplicate: 1.0,
            ..WireConfig::default()
        },
        100,
    );
    let expected: Vec<u32> = (0..100).flat_map(|i| [i, i]).collect();
    assert_eq!(delivered, expected);
    assert_eq!(a.stats().duplicated, 100);
    assert_eq!(a.stats().tx_frames, 100);
    assert_eq!(b.stats().rx_frames, 200);

    let (delivered, a, _) = run_numbered(
        WireConfig {
            duplicate: 0.25,
            seed: 9,
            ..WireConfig::default()
        },
        1000,
    );
    let duplicated = a.stats().duplicated;
    assert!(duplicated > 0 && duplicated < 1000);
    assert_eq!(delivered.len() as u64, 1000 + duplicated);
}

#[test]
fn a_duplicate_without_room_in_the_queue_is_not_made() {
    let (mut a, mut b) = wire(WireConfig {
        duplicate: 1.0,
        queue_frames: 1,
        ..WireConfig::default()
    });
    // The receive side has room for two frames: the first one goes twice,
    // the second once.
    a.transmit(Instant::ZERO, &[b"once"]).unwrap();
    assert_eq!(a.stats().duplicated, 1);
    assert_eq!(drain(&mut b, Instant::ZERO).len(), 2);
    a.transmit(Instant::ZERO, &[b"one"]).unwrap();
    a.transmit(Instant::ZERO, &[b"two"]).unwrap();
    assert_eq!(a.stats().duplicated, 2);
    assert_eq!(drain(&mut b, Instant::ZERO).len(), 2);
}

#[test]
fn corruption_flips_exactly_one_bit() {
    let (mut a, mut b) = wire(WireConfig {
        corrupt: 1.0,
        seed: 5,
        ..WireConfig::default()
    });
    for len in 1..=300usize {
        let sent: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        a.transmit(Instant::ZERO, &[&sent]).unwrap();
        let got = drain(&mut b, Instant::ZERO);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), len);
        let flipped: u32 = sent
            .iter()
            .zip(&got[0])
            .map(|(x, y)| (x ^ y).count_ones())
            .sum();
        assert_eq!(flipped, 1, "frame of {len} bytes");
    }
    assert_eq!(a.stats().corrupted, 300);

    // With a probability below one, the counter matches what differs.
    let (mut a, mut b) = wire(WireConfig {
        corrupt: 0.4,
        seed: 6,
        ..WireConfig::default()
    });
    let mut differing = 0;
    for i in 0..1000 {
        let sent = numbered(i, 100);
        a.transmit(Instant::ZERO, &[&sent]).unwrap();
        if drain(&mut b, Instant::ZERO)[0] != sent {
            differing += 1;
        }
    }
    assert_eq!(a.stats().corrupted, differing);
    assert!(differing > 0 && differing < 1000);
}

#[test]
fn reordering_holds_frames_back_so_later_ones_overtake_them() {
    let hold = Duration::from_micros(10);
    let (mut a, mut b) = wire(WireConfig {
        reorder: 0.2,
        reorder_delay: hold,
        seed: 3,
        ..WireConfig::default()
    });
    let count = 1000u32;
    // (number, microsecond at which it was received)
    let mut received: Vec<(u32, u64)> = Vec::new();
    for micros in 0..u64::from(count) + 20 {
        let now = at_micros(micros);
        if micros < u64::from(count) {
            a.transmit(now, &[&numbered(micros as u32, 64)]).unwrap();
        }
        received.extend(drain(&mut b, now).iter().map(|f| (number_of(f), micros)));
    }
    assert_eq!(received.len(), count as usize, "nothing lost");
    let held_back = received
        .iter()
        .filter(|&&(number, micros)| micros == u64::from(number) + 10)
        .count() as u64;
    let on_time = received
        .iter()
        .filter(|&&(number, micros)| micros == u64::from(number))
        .count() as u64;
    assert_eq!(held_back + on_time, u64::from(count));
    assert_eq!(a.stats().reordered, held_back);
    // Overtaken: received after a frame sent later than it.
    let mut highest = None;
    let mut overtaken = 0;
    for &(number, _) in &received {
        if highest.is_some_and(|h| h > number) {
            overtaken += 1;
        }
        highest = highest.max(Some(number));
    }
    assert!(overtaken > 0);
    assert!(overtaken <= held_back);
}

// ------------------------------------------------------ wire: two threads

#[test]
fn the_two_ends_exchange_frames_across_threads() {
    const FRAMES: u32 = 10_000;

    /// Both threads read one real clock, as in the threaded runner.
    fn run(mut end: WireEnd, start: std::time::Instant) -> (Vec<u32>, WireEnd) {
        let now = || Instant::from_nanos(start.elapsed().as_nanos() as u64);
        let mut buf = [0u8; 1514];
        let mut next = 0;
        let mut received = Vec::new();
        // Frames the receive side had no room for are lost and counted.
        let settled = |received: &Vec<u32>, end: &WireEnd| {
            received.len() as u64 + end.stats().dropped_rx_overrun >= u64::from(FRAMES)
        };
        while (next < FRAMES || !settled(&received, &end))
            && start.elapsed() < Duration::from_secs(60)
        {
            if next < FRAMES {
                match end.transmit(now(), &[&numbered(next, 100)]) {
                    Ok(()) => next += 1,
                    Err(LinkError::QueueFull) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            match end.receive(now(), &mut buf) {
                Some(len) => {
                    assert_eq!(len, 100);
                    received.push(number_of(&buf));
                }
                None => std::thread::yield_now(),
            }
        }
        (received, end)
    }

    let (a, b) = wire(WireConfig {
        queue_frames: 64,
        ..WireConfig::default()
    });
    let start = std::time::Instant::now();
    let a = std::thread::spawn(move || run(a, start));
    let b = std::thread::spawn(move || run(b, start));
    for end in [a.join().unwrap(), b.join().unwrap()] {
        let (received, end) = end;
        let stats = end.stats();
        // In order, each once; what is missing was lost to a full receive
        // side (a receiver thread not scheduled in time) and counted.
        assert!(received.windows(2).all(|w| w[0] < w[1]), "out of order");
        assert!(received.iter().all(|&n| n < FRAMES));
        assert_eq!(
            received.len() as u64 + stats.dropped_rx_overrun,
            u64::from(FRAMES)
        );
        assert_eq!(
            (stats.tx_frames, stats.rx_frames),
            (10_000, received.len() as u64)
        );
        assert_eq!(stats.dropped_loss + stats.dropped_rx_too_long, 0);
    }
}

// ------------------------------------------------------ robustness

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any valid configuration and any frames: no panic, and every frame
    /// sent is lost, refused, or received (twice if duplicated).
    #[test]
    fn frames_are_conserved(
        loss in 0.0..=1.0f64,
        duplicate in 0.0..=1.0f64,
        reorder in 0.0..=1.0f64,
        corrupt in 0.0..=1.0f64,
        rate in proptest::option::of(1u64..10_000_000_000),
        mtu in 1usize..2000,
        queue_frames in 1usize..32,
        seed: u64,
        frames in proptest::collection::vec((0usize..2100, 0u64..1000, 0usize..2100), 0..60),
    ) {
        let (mut a, mut b) = wire(WireConfig {
            mtu,
            rate_bits_per_s: rate,
            delay: Duration::from_micros(3),
            loss,
            duplicate,
            reorder,
            reorder_delay: Duration::from_micros(50),
            corrupt,
            queue_frames,
            seed,
            ..WireConfig::default()
        });
        let mut now = Instant::ZERO;
        let mut buf = vec![0u8; 2200];
        let mut refused = 0u64;
        for (len, gap, buf_len) in frames {
            now += Duration::from_nanos(gap);
            if a.transmit(now, &[&vec![0x5a; len]]).is_err() {
                refused += 1;
            }
            let _ = b.next_arrival();
            while b.receive(now, &mut buf[..buf_len]).is_some() {}
        }
        while b.receive(Instant::from_nanos(u64::MAX), &mut buf).is_some() {}
        let (tx, rx) = (a.stats(), b.stats());
        prop_assert_eq!(refused, tx.dropped_too_big + tx.dropped_queue_full);
        prop_assert_eq!(
            tx.tx_frames - tx.dropped_loss + tx.duplicated,
            rx.rx_frames + rx.dropped_rx_too_long + rx.dropped_rx_overrun
        );
        prop_assert_eq!(b.next_arrival(), None);
    }
}

#[test]
fn zero_length_and_oversized_frames_do_not_panic() {
    let (mut a, mut b) = wire(WireConfig {
        corrupt: 1.0,
        ..WireConfig::default()
    });
    a.transmit(Instant::ZERO, &[]).unwrap();
    a.transmit(Instant::ZERO, &[&[], &[]]).unwrap();
    assert_eq!(a.stats().corrupted, 0, "an empty frame has no bit to flip");
    assert!(a.transmit(Instant::ZERO, &[&vec![0u8; 1 << 20]]).is_err());
    let mut empty: [u8; 0] = [];
    assert_eq!(b.receive(Instant::ZERO, &mut empty), Some(0));
    assert_eq!(b.receive(Instant::ZERO, &mut empty), Some(0));
    let mut lo = Loopback::new();
    lo.transmit(Instant::ZERO, &[]).unwrap();
    assert_eq!(lo.receive(Instant::ZERO, &mut empty), Some(0));
}

#[test]
fn wire_ends_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<WireEnd>();
    assert_send::<Captured<WireEnd>>();
}

// ------------------------------------------------------ capture

fn tshark_available() -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(out) => out.status.success(),
        Err(_) => false,
    }
}

fn capture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("links-{}-{name}.pcapng", std::process::id()))
}

fn create(path: &Path) -> std::io::BufWriter<std::fs::File> {
    std::io::BufWriter::new(std::fs::File::create(path).expect("create capture file"))
}

/// tshark's view of a capture: (direction flags, epoch time) per frame.
fn tshark_frames(path: &Path) -> Vec<(String, String)> {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-T", "fields", "-E", "separator=,"])
        .args([
            "-e",
            "frame.packet_flags_direction",
            "-e",
            "frame.time_epoch",
        ])
        .output()
        .expect("run tshark");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tshark failed: {stderr}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once(','))
        .map(|(direction, time)| (direction.to_owned(), time.to_owned()))
        .collect()
}

/// An Ethernet frame to the broadcast address with an experimental
/// EtherType (IEEE 802 local experimental 1) and `payload`.
fn ethernet(payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    frame.extend_from_slice(payload);
    frame
}

#[test]
fn captures_are_pcapng_files_tshark_reads() {
    if !tshark_available() {
        let message = "tshark is not installed: this test reads the captures with it \
                       (apt-get install tshark; .ci/run installs it)";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("SKIPPED: {message}");
        return;
    }
    let (a_path, b_path, lo_path) = (capture_path("a"), capture_path("b"), capture_path("lo"));
    {
        let (a, b) = wire(WireConfig {
            delay: Duration::from_micros(7),
            ..WireConfig::default()
        });
        let mut a = Captured::new(a, create(&a_path), "a0");
        let mut b = Captured::new(b, create(&b_path), "b0");
        // As an interface sends: the link's transmit, then, after its
        // span, `transmitted`, where the capture copies the frame.
        fn send(link: &mut impl Link, now: Instant, parts: &[&[u8]]) {
            link.transmit(now, parts).unwrap();
            link.transmitted(now, parts);
        }
        for i in 0..3u64 {
            let payload = numbered(i as u32, 46);
            send(&mut a, at_micros(i), &[&ethernet(&[]), &payload]);
        }
        assert_eq!(drain(&mut b, at_micros(100)).len(), 3);
        send(&mut b, at_micros(200), &[&ethernet(&[0; 46])]);
        assert_eq!(drain(&mut a, at_micros(300)).len(), 1);
        // A refused frame is not captured.
        assert!(a.transmit(at_micros(400), &[&[0u8; 2000]]).is_err());
        // The writer threads have every frame once flushed.
        a.flush_capture();
        b.flush_capture();
        assert_eq!(a.capture_stats().written, 4);
        assert_eq!(b.capture_stats().written, 4);

        let mut lo = Captured::new(Loopback::new(), create(&lo_path), "lo");
        let ipv6_header = [0x60, 0, 0, 0, 0, 0, 59, 64];
        send(&mut lo, at_micros(1), &[&ipv6_header, &[0; 32]]);
        assert_eq!(drain(&mut lo, at_micros(2)).len(), 1);
        lo.flush_capture();
        assert_eq!(lo.capture_stats().errors, 0);
        assert_eq!(lo.capture_stats().written, 2);
        // Dropping the links flushes their captures.
    }

    let outbound = "0x00000002";
    let inbound = "0x00000001";
    let a_frames = tshark_frames(&a_path);
    let directions: Vec<&str> = a_frames.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(directions, [outbound, outbound, outbound, inbound]);
    assert_eq!(
        a_frames[1].1, "0.000001000",
        "timestamps are the `now` passed in"
    );
    // b's receive timestamps are the `now` of its receive calls.
    let b_frames = tshark_frames(&b_path);
    assert_eq!(b_frames.len(), 4);
    assert_eq!(b_frames[0], (inbound.to_owned(), "0.000100000".to_owned()));
    assert_eq!(b_frames[3].0, outbound);
    let lo_frames = tshark_frames(&lo_path);
    assert_eq!(lo_frames.len(), 2);
    for path in [a_path, b_path, lo_path] {
        let _ = std::fs::remove_file(path);
    }
}
