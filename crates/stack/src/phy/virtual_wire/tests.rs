use super::*;

#[test]
fn serialization_time_rounds_up_to_the_nanosecond() {
    assert_eq!(serialization_time(1500, None), Duration::ZERO);
    // 1500 bytes at 1 Gbit/s: 12 µs.
    assert_eq!(
        serialization_time(1500, Some(1_000_000_000)),
        Duration::from_micros(12)
    );
    // 1 byte at 3 bit/s: 8/3 s, rounded up.
    assert_eq!(
        serialization_time(1, Some(3)),
        Duration::from_nanos(2_666_666_667)
    );
    assert_eq!(
        serialization_time(usize::MAX, Some(1)),
        Duration::from_nanos(u64::MAX)
    );
}

#[test]
fn chance_is_never_for_zero_and_always_for_one() {
    for draw in [0, 1, u64::MAX / 2, u64::MAX] {
        assert!(!chance(draw, 0.0));
        assert!(chance(draw, 1.0));
    }
    assert!(chance(0, 0.5) && !chance(u64::MAX, 0.5));
}

#[test]
fn below_stays_in_range() {
    assert_eq!(below(u64::MAX, 0), 0);
    assert_eq!(below(u64::MAX, 8), 7);
    assert_eq!(below(0, 8), 0);
}

#[test]
fn directions_and_seeds_draw_different_sequences() {
    let first = |seed, direction| direction_rng(seed, direction).next_u64();
    assert_eq!(first(7, 0), first(7, 0));
    assert_ne!(first(7, 0), first(7, 1));
    assert_ne!(first(7, 0), first(8, 0));
}

#[test]
fn nonsense_configurations_are_refused() {
    let ok = WireConfig::default();
    assert_eq!(ok.validate(), Ok(()));
    let cases = [
        WireConfig {
            mtu: 0,
            ..ok.clone()
        },
        WireConfig {
            rate_bits_per_s: Some(0),
            ..ok.clone()
        },
        WireConfig {
            loss: 1.5,
            ..ok.clone()
        },
        WireConfig {
            duplicate: -0.1,
            ..ok.clone()
        },
        WireConfig {
            corrupt: f64::NAN,
            ..ok.clone()
        },
        WireConfig {
            reorder: 0.5,
            ..ok.clone()
        },
        WireConfig {
            queue_frames: 0,
            ..ok.clone()
        },
        WireConfig {
            queue_frames: MAX_QUEUE_FRAMES + 1,
            ..ok.clone()
        },
    ];
    for config in cases {
        assert!(config.validate().is_err(), "{config:?}");
        assert!(VirtualWire::pair(config).is_err());
    }
}

#[test]
fn receive_side_holds_no_more_than_the_bound() {
    // In order (read off the ring in place) and reordering (drained
    // into the receiver's heap): either way the frames count against
    // the bound until received.
    for reorder in [0.0, 0.5] {
        let config = WireConfig {
            queue_frames: 3,
            reorder,
            reorder_delay: Duration::from_micros(1),
            ..WireConfig::default()
        };
        let (mut a, mut b) = VirtualWire::pair(config).unwrap();
        // Unlimited rate: every frame leaves at once, so the transmit
        // ring never fills and the receive side's bound (twice the
        // ring) holds.
        for _ in 0..6 {
            a.transmit(Instant::ZERO, &[&[1, 2, 3]]).unwrap();
        }
        assert!(b.next_arrival().is_some());
        let held = if reorder > 0.0 { 6 } else { 0 };
        assert_eq!(b.rx.incoming.held(), held, "reorder {reorder}");
        // The next one is lost at the receiver.
        assert_eq!(a.transmit(Instant::ZERO, &[&[1]]), Ok(()));
        assert_eq!(b.stats().dropped_rx_overrun, 1);
        assert_eq!(a.stats().dropped_queue_full, 0);
        // A frame received makes room for one more.
        let mut buf = [0u8; 64];
        let late = Instant::from_nanos(1_000_000_000);
        assert_eq!(b.receive(late, &mut buf), Some(3));
        assert_eq!(a.transmit(Instant::ZERO, &[&[2]]), Ok(()));
        assert_eq!(b.stats().dropped_rx_overrun, 1, "reorder {reorder}");
        assert_eq!(a.transmit(Instant::ZERO, &[&[3]]), Ok(()));
        assert_eq!(b.stats().dropped_rx_overrun, 2, "reorder {reorder}");
    }
}

/// Frame buffers on their way back to `end`'s far end: the ring the
/// receiver recycles into, and lent super-frames given back.
fn buffers_going_back(end: &WireEnd) -> usize {
    let ring = &end.rx.recycled;
    ring.buffer().capacity() - ring.slots() + end.rx.lane.lent_back.len()
}

#[test]
fn super_frames_cross_whole_only_on_a_wire_made_for_them() {
    let gso = WireConfig {
        carries_gso: true,
        ..WireConfig::default()
    };
    for (config, whole) in [
        (gso.clone(), true),
        (WireConfig::default(), false),
        (
            WireConfig {
                rate_bits_per_s: Some(1_000_000_000),
                ..gso.clone()
            },
            false,
        ),
        (
            WireConfig {
                corrupt: 0.001,
                ..gso.clone()
            },
            false,
        ),
    ] {
        let (mut a, _b) = VirtualWire::pair(config).unwrap();
        assert_eq!((a.takes_gso(), a.carries_gso()), (whole, whole));
        if !whole {
            let header = VnetHeaderRepr::default();
            assert_eq!(
                a.transmit_gso(Instant::ZERO, &header, &[&[0; 3000]]),
                Err(LinkError::Unsupported)
            );
        }
    }
    let (mut a, mut b) = VirtualWire::pair(gso).unwrap();
    let header = VnetHeaderRepr {
        needs_csum: true,
        gso: crate::phy::vnet::Gso::TcpV6,
        gso_size: 1428,
        ..VnetHeaderRepr::default()
    };
    let frame: Vec<u8> = (0..60_000u32).map(|i| i as u8).collect();
    a.transmit_gso(Instant::ZERO, &header, &[&frame[..100], &frame[100..]])
        .unwrap();
    a.transmit(Instant::ZERO, &[&[7; 60]]).unwrap();
    let too_long = GSO_FRAME_MAX + 1;
    assert!(a
        .transmit_gso(Instant::ZERO, &header, &[&vec![0; too_long]])
        .is_err());
    assert_eq!(a.stats().tx_frames, 2, "one frame each");
    let mut got = Vec::new();
    let mut lent = Vec::new();
    let recycled_before = buffers_going_back(&b);
    while b.receive_whole(Instant::ZERO, &mut |frame, gso| {
        got.push((frame.bytes().to_vec(), gso.copied()));
        if let WholeFrame::Lent(l) = frame {
            lent.push(l);
        }
    }) {}
    assert_eq!(got, [(frame, Some(header)), (vec![7; 60], None)]);
    // The super-frame's memory was lent, not copied, and comes back
    // to the lane only when the host lets it go; the ordinary frame's
    // went back at once.
    assert_eq!(lent.len(), 1, "only the super-frame is lent");
    assert_eq!(buffers_going_back(&b), recycled_before + 1);
    let pool = crate::buffer::Pool::new(crate::buffer::PoolConfig::default()).unwrap();
    let buffer = pool
        .lend(lent.pop().unwrap(), probe::Flow::NONE)
        .ok()
        .unwrap();
    assert_eq!(buffer.len(), 60_000);
    assert_eq!(buffers_going_back(&b), recycled_before + 1);
    drop(buffer);
    assert_eq!(buffers_going_back(&b), recycled_before + 2);
    assert_eq!(b.stats().rx_frames, 2);
    // `receive` cannot take a super-frame: it is dropped and counted.
    a.transmit_gso(Instant::ZERO, &header, &[&[0; 3000]])
        .unwrap();
    assert_eq!(b.receive(Instant::ZERO, &mut [0; 1514]), None);
    assert_eq!(b.stats().dropped_rx_too_long, 1);
}

/// Where the next frame on its way to `end` lies in memory.
fn next_frame_address(end: &WireEnd) -> *const u8 {
    let Incoming::InOrder(frames) = &end.rx.incoming else {
        panic!("an in-order wire");
    };
    frames.peek().expect("a frame on its way").frame().as_ptr()
}

/// The packet `end` receives into a buffer of `pool`, if any.
fn receive_packet(end: &mut WireEnd, pool: &Pool) -> Option<crate::buffer::Packet> {
    crate::buffer::Packet::receive_into(pool, probe::Flow::NONE, |buf| {
        end.receive_into(Instant::ZERO, buf)
    })
    .unwrap()
}

use crate::buffer::{Pool, PoolConfig};

#[test]
fn a_received_frame_is_the_memory_it_crossed_in() {
    let (mut a, mut b) = VirtualWire::pair(WireConfig::default()).unwrap();
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let headroom = pool.config().headroom;
    // Sent before the receiver said how its buffers hold a frame: copied.
    a.transmit(Instant::ZERO, &[&[1; 14], &[2; 60]]).unwrap();
    let sent = next_frame_address(&b);
    let early = receive_packet(&mut b, &pool).unwrap();
    let bytes = early.parts().next().unwrap();
    assert_ne!(bytes.as_ptr(), sent, "no layout yet: copied");
    assert_eq!((bytes.len(), early.headroom()), (74, headroom));
    assert_eq!((bytes[13], bytes[14]), (1, 2));
    // Now laid out as the pool's buffers are, and exchanged: the
    // packet's bytes are where the sender wrote them.
    for len in [60, 1514, 1500 + 14 - 1] {
        let frame: Vec<u8> = (0..len).map(|i| i as u8).collect();
        a.transmit(Instant::ZERO, &[&frame[..14], &frame[14..]])
            .unwrap();
        let sent = next_frame_address(&b);
        let packet = receive_packet(&mut b, &pool).unwrap();
        let bytes = packet.parts().next().unwrap();
        assert_eq!(bytes.as_ptr(), sent, "a {len}-byte frame was copied");
        assert_eq!(bytes, &frame[..]);
        assert_eq!(packet.headroom(), headroom, "headroom kept");
    }
    let stats = b.stats();
    assert_eq!(
        (stats.rx_frames, stats.rx_bytes),
        (4, 74 + 60 + 1514 + 1513)
    );
    assert_eq!(b.received_at(), Some(Instant::ZERO));
    // A host whose buffers are laid out otherwise gets a copy.
    let other = Pool::new(PoolConfig {
        buffer_size: 4096,
        headroom: 128,
        buffers: 4,
    })
    .unwrap();
    a.transmit(Instant::ZERO, &[&[9; 100]]).unwrap();
    let sent = next_frame_address(&b);
    let packet = receive_packet(&mut b, &other).unwrap();
    let bytes = packet.parts().next().unwrap();
    assert_ne!(bytes.as_ptr(), sent, "another layout: copied");
    assert_eq!((bytes, packet.headroom()), (&[9; 100][..], 128));
    // A wrapper that only forwards `receive` (as a capture does) gets
    // `Link`'s default: a copy.
    a.transmit(Instant::ZERO, &[&[5; 100]]).unwrap();
    let sent = next_frame_address(&b);
    let packet = crate::buffer::Packet::receive_into(&pool, probe::Flow::NONE, |buf| {
        Copying(&mut b).receive_into(Instant::ZERO, buf)
    })
    .unwrap()
    .unwrap();
    let bytes = packet.parts().next().unwrap();
    assert_ne!(bytes.as_ptr(), sent, "the default copies");
    assert_eq!((bytes, packet.headroom()), (&[5; 100][..], headroom));
    assert!(receive_packet(&mut b, &pool).is_none());
}

/// A wrapper forwarding `receive` only.
struct Copying<'a>(&'a mut WireEnd);

impl Link for Copying<'_> {
    fn medium(&self) -> Medium {
        self.0.medium()
    }
    fn mtu(&self) -> usize {
        self.0.mtu()
    }
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.0.transmit(now, parts)
    }
    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.0.receive(now, buf)
    }
    fn transmit_complete_at(&self) -> Option<Instant> {
        self.0.transmit_complete_at()
    }
    fn transmit_ring(&self) -> Option<usize> {
        self.0.transmit_ring()
    }
    fn next_arrival(&self) -> Option<Instant> {
        self.0.next_arrival()
    }
    fn received_at(&self) -> Option<Instant> {
        self.0.received_at()
    }
    fn stats(&self) -> LinkStats {
        self.0.stats()
    }
}

#[test]
fn exchanged_memory_stays_bounded() {
    // Reordering too: its frames are laid out and exchanged alike.
    for reorder in [0.0, 0.3] {
        let config = WireConfig {
            queue_frames: 4,
            reorder,
            reorder_delay: Duration::from_nanos(10),
            duplicate: reorder,
            ..WireConfig::default()
        };
        let (mut a, mut b) = VirtualWire::pair(config).unwrap();
        let config = PoolConfig {
            buffers: 8,
            ..PoolConfig::default()
        };
        let pool = Pool::new(config).unwrap();
        let memories = |pool: &Pool| {
            let all: Vec<_> = (0..8)
                .map(|_| pool.alloc(probe::Flow::NONE).unwrap())
                .collect();
            let mut memories: Vec<_> = all.iter().map(|buffer| buffer.as_ptr()).collect();
            memories.sort();
            memories
        };
        let before = memories(&pool);
        let mut held = VecDeque::new();
        let mut received = 0;
        for i in 0..2000usize {
            let now = Instant::from_nanos(i as u64 * 10);
            a.transmit(now, &[&vec![i as u8; 60 + i % 1455]]).unwrap();
            // Packets are held a while, as a host holds some.
            while let Some(packet) =
                crate::buffer::Packet::receive_into(&pool, probe::Flow::NONE, |buf| {
                    b.receive_into(now + Duration::from_nanos(20), buf)
                })
                .unwrap()
            {
                received += 1;
                held.push_back(packet);
                if held.len() > 5 {
                    held.pop_front();
                }
            }
        }
        drop(held);
        assert!(received > 1900, "reorder {reorder}: {received} received");
        // The pool has its own number of buffers, each of its size.
        assert_eq!((pool.allocated(), pool.in_use()), (8, 0));
        let mut all: Vec<_> = (0..8)
            .map(|_| pool.alloc(probe::Flow::NONE).unwrap())
            .collect();
        for buffer in &mut all {
            let memory = buffer.memory_mut().unwrap();
            assert_eq!((memory.len(), memory.capacity()), (2304, 2304));
        }
        drop(all);
        assert_ne!(
            memories(&pool),
            before,
            "reorder {reorder}: nothing exchanged"
        );
        // The wire holds what it did: a ring's worth going back at most.
        assert!(buffers_going_back(&b) <= 8);
        assert_eq!(b.next_arrival(), None);
    }
}

#[test]
fn the_transmit_ring_holds_the_frames_not_yet_sent() {
    let config = WireConfig {
        queue_frames: 2,
        // 976 bytes hold an Ethernet wire for 1000 octets (with its
        // FCS, preamble and gap): 8 µs.
        rate_bits_per_s: Some(1_000_000_000),
        ..WireConfig::default()
    };
    let (mut a, _b) = VirtualWire::pair(config).unwrap();
    let frame = [0u8; 976];
    a.transmit(Instant::ZERO, &[&frame]).unwrap();
    a.transmit(Instant::ZERO, &[&frame]).unwrap();
    assert_eq!(a.transmit_complete_at(), Some(Instant::from_nanos(16_000)));
    assert_eq!(
        a.transmit(Instant::from_nanos(7_999), &[&frame]),
        Err(LinkError::QueueFull)
    );
    assert_eq!(a.stats().dropped_queue_full, 1);
    // The first frame has left: its slot is free.
    a.transmit(Instant::from_nanos(8_000), &[&frame]).unwrap();
    assert_eq!(a.transmit_complete_at(), Some(Instant::from_nanos(24_000)));
}

/// Minor page faults this thread has taken so far.
fn minor_faults() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is valid for writes of one `rusage`, which
    // `getrusage` fills when it returns 0.
    let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(status, 0, "getrusage");
    // SAFETY: zeroed, then filled by the call above.
    unsafe { usage.assume_init() }.ru_minflt
}

#[test]
fn a_new_wire_takes_no_page_fault_on_its_first_lap() {
    // A fault costs microseconds: inside an exchange it doubled a 1-byte
    // TCP round trip every 85 frames until the ring had wrapped.
    let (mut a, mut b) = VirtualWire::pair(WireConfig::default()).unwrap();
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let frame = [7u8; 74];
    let cross = |a: &mut WireEnd, b: &mut WireEnd| {
        a.transmit(Instant::ZERO, &[&frame]).unwrap();
        let packet = receive_packet(b, &pool).expect("the frame crossed");
        assert_eq!(packet.parts().next().unwrap(), &frame[..]);
    };
    // The first frames find their buffers (the receiver's layout, the
    // buffers going back): steady from then on.
    for _ in 0..8 {
        cross(&mut a, &mut b);
    }
    let before = minor_faults();
    let lap = 2 * WireConfig::default().queue_frames;
    for _ in 0..lap {
        cross(&mut a, &mut b);
    }
    let faults = minor_faults() - before;
    // Without the rings touched when made: one per 85 frames, 24 here.
    assert!(faults <= 2, "{faults} page faults in a lap of {lap} frames");
}
