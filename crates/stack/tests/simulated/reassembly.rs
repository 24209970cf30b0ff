//! Fragment reassembly (RFC 8200 §4.5, RFC 5722, RFC 6946; RFC 791 for
//! IPv4) on virtual time: order, duplicates, overlaps, the timer, the
//! length checks, the memory bound under a flood, and zero copy.

use std::time::Duration;

use probe::Flow;
use proptest::prelude::*;
use stack::buffer::{Packet, Pool, PoolConfig, Segment};
use stack::iface::reassembly::{
    DropReason, Expired, Fragment, Outcome, Reassembler, ReassemblyConfig,
};
use stack::time::Instant;

/// IPv6 key: (source, destination, identification), addresses shortened.
type Key = (u8, u8, u32);
const KEY: Key = (1, 2, 0xabcd);
const FRAGMENT: usize = 1232;
const SECOND: Duration = Duration::from_secs(1);

fn pool(buffers: usize) -> Pool {
    Pool::new(PoolConfig {
        buffer_size: 1600,
        headroom: 64,
        buffers,
    })
    .unwrap()
}

fn at(seconds: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(seconds)
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// A received fragment: its payload in a pool packet of its own.
struct Received {
    offset: usize,
    more: bool,
    packet: Packet,
}

impl Received {
    /// Payloads larger than a buffer span several, chained as segments.
    fn new(pool: &Pool, offset: usize, more: bool, bytes: &[u8]) -> Self {
        let room = pool.config().buffer_size - pool.config().headroom;
        let mut chunks = bytes.chunks(room);
        let mut packet = Packet::new(pool, Flow::NONE).unwrap();
        packet.append_copy(chunks.next().unwrap_or(&[])).unwrap();
        for chunk in chunks {
            let mut more_bytes = Packet::new(pool, Flow::NONE).unwrap();
            more_bytes.append_copy(chunk).unwrap();
            for segment in more_bytes.segments(0..chunk.len()).unwrap() {
                packet.append_segment(segment);
            }
        }
        Self {
            offset,
            more,
            packet,
        }
    }

    /// The fragment as the IP layer hands it over, the header being the
    /// fragment's offset so the test can tell whose header came back.
    fn fragment(&self) -> Fragment<usize> {
        Fragment {
            offset: self.offset,
            more: self.more,
            payload: self.packet.segments(0..self.packet.len()).unwrap(),
            header: self.offset,
        }
    }

    /// Where its payload lives.
    fn addresses(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.packet
            .parts()
            .map(|part| (part.as_ptr() as usize, part.len()))
    }
}

/// `bytes` cut into fragments of `size` bytes (a multiple of 8).
fn fragment(pool: &Pool, bytes: &[u8], size: usize) -> Vec<Received> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let end = (offset + size).min(bytes.len());
        out.push(Received::new(
            pool,
            offset,
            end < bytes.len(),
            &bytes[offset..end],
        ));
        offset = end;
    }
    out
}

fn flatten(segments: &[Segment]) -> Vec<u8> {
    segments
        .iter()
        .flat_map(|s| s.as_slice().iter().copied())
        .collect()
}

fn reassembler() -> Reassembler<Key, usize> {
    Reassembler::new(ReassemblyConfig::ipv6())
}

/// Splitmix64: a seeded generator for shuffles.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// Feeds `order` (indices into `fragments`) and returns the completed
/// datagram, checking that nothing completes early.
fn reassemble(
    reassembler: &mut Reassembler<Key, usize>,
    fragments: &[Received],
    order: &[usize],
) -> (usize, Vec<Segment>, usize) {
    let mut done = None;
    for (n, &i) in order.iter().enumerate() {
        match reassembler.insert(at(1), KEY, fragments[i].fragment()) {
            Outcome::Incomplete | Outcome::Dropped(DropReason::DuplicateIgnored) => {}
            Outcome::Complete {
                header,
                payload,
                len,
            } => {
                assert!(done.is_none(), "completed twice");
                assert_eq!(n + 1, order.len(), "completed before the last fragment");
                done = Some((header, payload, len));
            }
            Outcome::Dropped(reason) => panic!("fragment {i} dropped: {reason:?}"),
        }
    }
    done.expect("the datagram completes")
}

/// The reassembled payload is the fragments' own segments, in order: no
/// byte copied.
fn assert_zero_copy(fragments: &[Received], payload: &[Segment]) {
    let mut by_offset: Vec<&Received> = fragments.iter().collect();
    by_offset.sort_by_key(|f| f.offset);
    let original: Vec<(usize, usize)> = by_offset.iter().flat_map(|f| f.addresses()).collect();
    let reassembled: Vec<(usize, usize)> = payload
        .iter()
        .map(|segment| (segment.as_slice().as_ptr() as usize, segment.len()))
        .collect();
    assert_eq!(
        reassembled, original,
        "the payload is not the fragments' own buffers"
    );
}

fn check_20000(order: impl FnOnce(usize) -> Vec<usize>) {
    let pool = pool(64);
    let original = data(20_000, 7);
    let fragments = fragment(&pool, &original, FRAGMENT);
    assert_eq!(fragments.len(), 17);
    let in_use = pool.in_use();
    let mut reassembler = reassembler();
    let order = order(fragments.len());
    let (header, payload, len) = reassemble(&mut reassembler, &fragments, &order);
    assert_eq!(header, 0, "the offset-zero fragment's header comes back");
    assert_eq!(len, 20_000);
    assert_eq!(flatten(&payload), original);
    assert_zero_copy(&fragments, &payload);
    assert_eq!(pool.in_use(), in_use, "reassembly allocated no buffer");
    assert_eq!(reassembler.len(), 0);
    assert_eq!(reassembler.held_bytes(), 0);
    assert_eq!(reassembler.held_fragments(), 0);
    assert_eq!(reassembler.stats().reassembled, 1);
    drop(payload);
    drop(fragments);
    assert_eq!(pool.in_use(), 0, "every buffer went back to the pool");
}

#[test]
fn in_order() {
    check_20000(|n| (0..n).collect());
}

#[test]
fn reversed() {
    check_20000(|n| (0..n).rev().collect());
}

#[test]
fn shuffled_with_duplicates() {
    for seed in 0..20 {
        let mut rng = Rng(seed);
        check_20000(|n| {
            let mut order: Vec<usize> = (0..n).collect();
            for _ in 0..8 {
                order.push(rng.below(n));
            }
            rng.shuffle(&mut order);
            // Duplicates after the last new fragment would arrive after
            // completion; keep the test about duplicates during assembly.
            let mut seen = vec![false; n];
            let mut last_new = 0;
            for (k, &i) in order.iter().enumerate() {
                if !seen[i] {
                    seen[i] = true;
                    last_new = k;
                }
            }
            order.truncate(last_new + 1);
            order
        });
    }
}

#[test]
fn exact_duplicates_are_dropped_and_the_datagram_kept() {
    let pool = pool(16);
    let original = data(4000, 1);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    assert!(matches!(
        r.insert(at(0), KEY, fragments[1].fragment()),
        Outcome::Incomplete
    ));
    // RFC 8200 §4.5: an exact duplicate may be dropped, the datagram kept.
    let duplicate = Received::new(&pool, 1232, true, &original[1232..2464]);
    assert!(matches!(
        r.insert(at(0), KEY, duplicate.fragment()),
        Outcome::Dropped(DropReason::DuplicateIgnored)
    ));
    assert_eq!(r.stats().duplicate, 1);
    assert_eq!(r.held_bytes(), 1232);
    assert_eq!(r.held_fragments(), 1);
    let mut done = None;
    for f in [&fragments[0], &fragments[3], &fragments[2]] {
        if let Outcome::Complete { payload, .. } = r.insert(at(0), KEY, f.fragment()) {
            done = Some(payload);
        }
    }
    let payload = done.expect("completes");
    assert_eq!(flatten(&payload), original);
    // The first copy was kept: the duplicate's buffer is not in the result.
    assert_zero_copy(&fragments, &payload);
}

#[test]
fn same_range_with_different_bytes_is_an_overlap() {
    let pool = pool(16);
    let original = data(4000, 1);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    let _ = r.insert(at(0), KEY, fragments[0].fragment());
    let mut forged = original[1232..2464].to_vec();
    forged[100] ^= 0xff;
    let forged = Received::new(&pool, 1232, true, &forged);
    let _ = r.insert(at(0), KEY, fragments[1].fragment());
    assert!(matches!(
        r.insert(at(0), KEY, forged.fragment()),
        Outcome::Dropped(DropReason::Overlap)
    ));
    assert_eq!(r.held_bytes(), 0);
}

#[test]
fn overlap_discards_the_whole_datagram_until_the_timeout() {
    let pool = pool(16);
    let original = data(4000, 2);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    assert!(matches!(
        r.insert(at(10), KEY, fragments[0].fragment()),
        Outcome::Incomplete
    ));
    assert!(matches!(
        r.insert(at(11), KEY, fragments[1].fragment()),
        Outcome::Incomplete
    ));
    // Bytes 2000..2400 overlap fragment 1 (1232..2464) and 2 (2464..3696).
    let overlapping = Received::new(&pool, 2000, true, &original[2000..2400]);
    assert!(matches!(
        r.insert(at(12), KEY, overlapping.fragment()),
        Outcome::Dropped(DropReason::Overlap)
    ));
    // RFC 5722: the whole datagram goes, its buffers with it.
    assert_eq!(r.held_bytes(), 0);
    assert_eq!(r.held_fragments(), 0);
    drop(overlapping);
    assert_eq!(pool.in_use(), fragments.len());
    // ... and fragments not yet received are dropped too, silently.
    for f in &fragments[2..] {
        assert!(matches!(
            r.insert(at(20), KEY, f.fragment()),
            Outcome::Dropped(DropReason::DatagramDiscarded)
        ));
    }
    assert!(matches!(
        r.insert(at(69), KEY, fragments[0].fragment()),
        Outcome::Dropped(DropReason::DatagramDiscarded)
    ));
    let info: Vec<_> = r.datagrams().collect();
    assert_eq!(info.len(), 1);
    assert!(info[0].discarded);
    assert_eq!(r.next_deadline(), Some(at(70)));
    // The discarded datagram expires silently: no Time Exceeded.
    assert!(r.poll(at(70)).is_empty());
    assert_eq!(r.stats().timed_out, 0);
    assert_eq!(r.stats().overlap, 1);
    assert_eq!(r.stats().datagram_discarded, 3);
    // After the timeout the key is free again.
    let mut order: Vec<usize> = (0..fragments.len()).collect();
    order.reverse();
    let mut completed = false;
    for i in order {
        completed |= matches!(
            r.insert(at(70), KEY, fragments[i].fragment()),
            Outcome::Complete { .. }
        );
    }
    assert!(completed);
}

#[test]
fn inconsistent_ends_discard_the_datagram() {
    let pool = pool(16);
    let bytes = data(64, 3);
    // Two last fragments with different ends.
    let mut r = reassembler();
    let _ = r.insert(
        at(0),
        KEY,
        Received::new(&pool, 32, false, &bytes[..8]).fragment(),
    );
    assert!(matches!(
        r.insert(
            at(0),
            KEY,
            Received::new(&pool, 48, false, &bytes[..8]).fragment()
        ),
        Outcome::Dropped(DropReason::Inconsistent)
    ));
    assert!(matches!(
        r.insert(
            at(0),
            KEY,
            Received::new(&pool, 0, true, &bytes[..8]).fragment()
        ),
        Outcome::Dropped(DropReason::DatagramDiscarded)
    ));
    // Data beyond a known end.
    let key = (1, 2, 7);
    let _ = r.insert(
        at(0),
        key,
        Received::new(&pool, 32, false, &bytes[..8]).fragment(),
    );
    assert!(matches!(
        r.insert(
            at(0),
            key,
            Received::new(&pool, 40, true, &bytes[..8]).fragment()
        ),
        Outcome::Dropped(DropReason::Inconsistent)
    ));
    // A last fragment ending before data already held.
    let key = (1, 2, 8);
    let _ = r.insert(
        at(0),
        key,
        Received::new(&pool, 64, true, &bytes[..8]).fragment(),
    );
    assert!(matches!(
        r.insert(
            at(0),
            key,
            Received::new(&pool, 8, false, &bytes[..8]).fragment()
        ),
        Outcome::Dropped(DropReason::Inconsistent)
    ));
    assert_eq!(r.stats().inconsistent, 3);
    assert_eq!(r.held_bytes(), 0);
}

#[test]
fn timeout_at_exactly_sixty_seconds_with_the_first_fragment() {
    let pool = pool(16);
    let original = data(4000, 4);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    let start = Instant::from_nanos(123_456_789);
    // The timer starts at the first fragment to arrive, not at offset 0.
    let _ = r.insert(start, KEY, fragments[2].fragment());
    let _ = r.insert(start + 30 * SECOND, KEY, fragments[0].fragment());
    let deadline = start + 60 * SECOND;
    assert_eq!(r.next_deadline(), Some(deadline));
    assert!(r
        .poll(Instant::from_nanos(deadline.as_nanos() - 1))
        .is_empty());
    assert_eq!(r.len(), 1);
    let expired: Vec<Expired<Key, usize>> = r.poll(deadline);
    assert_eq!(expired.len(), 1);
    let e = &expired[0];
    assert_eq!(e.key, KEY);
    // RFC 8200 §4.5: the first fragment arrived, so the caller sends Time
    // Exceeded code 1 with it.
    assert_eq!(e.first, Some(0));
    assert_eq!(e.first_arrival, start);
    assert_eq!(e.deadline, deadline);
    assert_eq!(e.received, 2 * 1232);
    assert_eq!(r.stats().timed_out, 1);
    assert_eq!(r.held_bytes(), 0);
    assert_eq!(r.next_deadline(), None);
    assert!(r.is_empty());
}

#[test]
fn timeout_without_the_first_fragment_sends_no_error() {
    let pool = pool(16);
    let original = data(4000, 5);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    let _ = r.insert(at(5), KEY, fragments[1].fragment());
    let _ = r.insert(at(6), KEY, fragments[3].fragment());
    let expired = r.poll(at(65));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].first, None);
}

#[test]
fn a_fragment_after_the_deadline_starts_a_new_datagram() {
    let pool = pool(16);
    let original = data(4000, 6);
    let fragments = fragment(&pool, &original, 1232);
    let mut r = reassembler();
    let _ = r.insert(at(0), KEY, fragments[0].fragment());
    // No poll at 60 s: the late fragment does not join the old datagram.
    assert!(matches!(
        r.insert(at(61), KEY, fragments[1].fragment()),
        Outcome::Incomplete
    ));
    assert_eq!(r.next_deadline(), Some(at(60)), "a report waits");
    let expired = r.poll(at(61));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].first, Some(0));
    assert_eq!(r.held_bytes(), 1232);
    assert_eq!(r.next_deadline(), Some(at(121)));
}

#[test]
fn too_long_and_bad_length() {
    let pool = pool(16);
    let bytes = data(1000, 7);
    let mut r = reassembler();
    // RFC 8200 §4.5: offset + length beyond 65 535 → Parameter Problem at
    // the Fragment Offset field.
    let f = Received::new(&pool, 65_528, false, &bytes[..16]);
    assert!(matches!(
        r.insert(at(0), KEY, f.fragment()),
        Outcome::Dropped(DropReason::TooLong)
    ));
    // Exactly 65 535 is fine.
    let f = Received::new(&pool, 65_528, false, &bytes[..7]);
    assert!(matches!(
        r.insert(at(0), KEY, f.fragment()),
        Outcome::Incomplete
    ));
    // RFC 8200 §4.5: M=1 and a length not a multiple of 8 → Parameter
    // Problem at the Payload Length field.
    let f = Received::new(&pool, 0, true, &bytes[..999]);
    assert!(matches!(
        r.insert(at(0), KEY, f.fragment()),
        Outcome::Dropped(DropReason::BadLength)
    ));
    // With M=0 any length is fine.
    let f = Received::new(&pool, 8, false, &bytes[..5]);
    assert!(matches!(
        r.insert(at(0), (9, 9, 9), f.fragment()),
        Outcome::Incomplete
    ));
    // M=1 with nothing in it carries nothing.
    let f = Received::new(&pool, 8, true, &[]);
    assert!(matches!(
        r.insert(at(0), KEY, f.fragment()),
        Outcome::Dropped(DropReason::Empty)
    ));
    let stats = r.stats();
    assert_eq!((stats.too_long, stats.bad_length, stats.empty), (1, 1, 1));
    assert_eq!(r.len(), 2, "the rejected fragments left no state");
    assert_eq!(r.held_bytes(), 7 + 5);
}

#[test]
fn atomic_fragment_is_processed_in_isolation() {
    let pool = pool(16);
    let bytes = data(300, 8);
    let mut r = reassembler();
    let pending = Received::new(&pool, 8, true, &bytes[..8]);
    let _ = r.insert(at(0), KEY, pending.fragment());
    // RFC 6946 §4: offset 0 and M=0 with the same key does not touch the
    // datagram in progress.
    let atomic = Received::new(&pool, 0, false, &bytes);
    match r.insert(at(0), KEY, atomic.fragment()) {
        Outcome::Complete {
            header,
            payload,
            len,
        } => {
            assert_eq!((header, len), (0, 300));
            assert_eq!(flatten(&payload), bytes);
            assert_zero_copy(std::slice::from_ref(&atomic), &payload);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.len(), 1);
    assert_eq!(r.held_bytes(), 8);
    assert_eq!(r.stats().atomic, 1);
    assert_eq!(r.stats().reassembled, 0);
}

#[test]
fn the_oldest_datagram_makes_way() {
    let pool = pool(16);
    let bytes = data(64, 9);
    let mut r = Reassembler::<Key, usize>::new(ReassemblyConfig {
        max_datagrams: 2,
        max_bytes: 40,
        ..ReassemblyConfig::ipv6()
    });
    for (t, ident) in [(0, 1), (1, 2)] {
        let f = Received::new(&pool, 0, true, &bytes[..16]);
        let _ = r.insert(at(t), (1, 2, ident), f.fragment());
    }
    // A third datagram evicts the oldest.
    let f = Received::new(&pool, 0, true, &bytes[..8]);
    assert!(matches!(
        r.insert(at(2), (1, 2, 3), f.fragment()),
        Outcome::Incomplete
    ));
    let idents: Vec<u32> = r.datagrams().map(|d| d.key.2).collect();
    assert_eq!(idents, [2, 3]);
    assert_eq!(r.stats().evicted, 1);
    // Bytes: 16 + 8 held, 24 more to datagram 3 would make 48 > 40: the
    // oldest other datagram goes.
    let f = Received::new(&pool, 8, true, &bytes[..24]);
    assert!(matches!(
        r.insert(at(3), (1, 2, 3), f.fragment()),
        Outcome::Incomplete
    ));
    assert_eq!(r.held_bytes(), 32);
    assert_eq!(r.len(), 1);
    assert_eq!(r.stats().evicted, 2);
    // A datagram that cannot fit even alone is dropped whole.
    let f = Received::new(&pool, 32, true, &bytes[..16]);
    assert!(matches!(
        r.insert(at(3), (1, 2, 3), f.fragment()),
        Outcome::Dropped(DropReason::NoMemory)
    ));
    assert_eq!(r.held_bytes(), 0);
    assert!(r.is_empty());
    // So is a fragment larger than the bound.
    let f = Received::new(&pool, 0, true, &bytes[..48]);
    assert!(matches!(
        r.insert(at(3), (1, 2, 4), f.fragment()),
        Outcome::Dropped(DropReason::NoMemory)
    ));
    assert_eq!(r.stats().no_memory, 2);
    assert!(r.is_empty());
}

#[test]
fn a_flood_of_incomplete_datagrams_stays_within_the_bounds() {
    const MAX_DATAGRAMS: usize = 128;
    const MAX_BYTES: usize = 64 * 1024;
    let pool = pool(MAX_DATAGRAMS + 8);
    let mut r = Reassembler::<Key, usize>::new(ReassemblyConfig {
        max_datagrams: MAX_DATAGRAMS,
        max_bytes: MAX_BYTES,
        ..ReassemblyConfig::ipv6()
    });
    let bytes = data(1024, 10);
    let mut rng = Rng(42);
    let mut now = Instant::ZERO;
    let mut timed_out = 0;
    for n in 0..100_000u32 {
        let len = 8 * (1 + rng.below(128)); // 8..=1024 bytes
        let offset = 8 * rng.below(1000);
        let f = Received::new(&pool, offset, true, &bytes[..len]);
        let key = ((n >> 16) as u8, 2, n);
        assert!(matches!(
            r.insert(now, key, f.fragment()),
            Outcome::Incomplete
        ));
        drop(f);
        assert!(r.held_bytes() <= MAX_BYTES);
        assert!(r.len() <= MAX_DATAGRAMS);
        // Only the fragments held pin pool buffers.
        assert_eq!(pool.in_use(), r.held_fragments());
        now += Duration::from_micros(500);
        timed_out += r.poll(now).len();
    }
    let stats = r.stats();
    assert_eq!(stats.timed_out as usize, timed_out);
    assert_eq!(
        stats.evicted as usize + stats.timed_out as usize + r.len(),
        100_000,
        "every datagram is held, evicted or timed out"
    );
    assert!(stats.evicted > 90_000);
    assert!(pool.stats().high_water <= MAX_DATAGRAMS + 1);
    // A legitimate datagram still gets through the flood.
    let original = data(20_000, 11);
    let big = Pool::new(PoolConfig {
        buffer_size: 1600,
        headroom: 64,
        buffers: 32,
    })
    .unwrap();
    let fragments = fragment(&big, &original, FRAGMENT);
    let order: Vec<usize> = (0..fragments.len()).collect();
    let (_, payload, _) = reassemble(&mut r, &fragments, &order);
    assert_eq!(flatten(&payload), original);
}

#[test]
fn ipv4_keys_and_timer() {
    // IPv4 key: (source, destination, protocol, identification).
    let pool = pool(16);
    let bytes = data(2000, 12);
    let config = ReassemblyConfig::ipv4();
    assert_eq!(config.timeout, Duration::from_secs(30));
    let mut r = Reassembler::<([u8; 4], [u8; 4], u8, u16), usize>::new(config);
    let udp = ([192, 0, 2, 1], [198, 51, 100, 1], 17, 99);
    let icmp = ([192, 0, 2, 1], [198, 51, 100, 1], 1, 99);
    let first = Received::new(&pool, 0, true, &bytes[..1480]);
    let last = Received::new(&pool, 1480, false, &bytes[1480..]);
    let _ = r.insert(at(0), udp, first.fragment());
    // Same addresses and ident, other protocol: another datagram.
    let _ = r.insert(at(0), icmp, last.fragment());
    assert_eq!(r.len(), 2);
    assert!(matches!(
        r.insert(at(1), udp, last.fragment()),
        Outcome::Complete { len: 2000, .. }
    ));
    let expired = r.poll(at(30));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].key, icmp);
    assert_eq!(expired[0].first, None);
}

/// A payload and a fragmentation of it: cut points at multiples of 8.
fn fragmentation() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    (1usize..6000).prop_flat_map(|len| {
        let cuts = proptest::collection::btree_set(1usize..=len.div_ceil(8), 0..12);
        (proptest::collection::vec(any::<u8>(), len), cuts).prop_map(move |(bytes, cuts)| {
            let mut bounds: Vec<usize> = cuts
                .into_iter()
                .map(|c| c * 8)
                .filter(|&c| c < len)
                .collect();
            bounds.push(len);
            (bytes, bounds)
        })
    })
}

proptest! {
    #[test]
    fn any_fragmentation_in_any_order_reassembles(
        (bytes, bounds) in fragmentation(),
        seed in any::<u64>(),
        duplicates in 0usize..4,
    ) {
        let pool = pool(64);
        let mut fragments = Vec::new();
        let mut start = 0;
        for &end in &bounds {
            fragments.push(Received::new(&pool, start, end < bytes.len(), &bytes[start..end]));
            start = end;
        }
        let mut rng = Rng(seed);
        let mut order: Vec<usize> = (0..fragments.len()).collect();
        rng.shuffle(&mut order);
        // An atomic fragment completes each time it arrives.
        let duplicates = if fragments.len() > 1 { duplicates } else { 0 };
        for _ in 0..duplicates {
            // A duplicate anywhere but last; it may come before its original.
            let at = rng.below(order.len());
            let which = order[rng.below(order.len())];
            order.insert(at, which);
        }
        let mut r = reassembler();
        let mut result = None;
        let mut seen = vec![false; fragments.len()];
        for &i in &order {
            seen[i] = true;
            match r.insert(at(0), KEY, fragments[i].fragment()) {
                Outcome::Complete { header, payload, len } => {
                    // It completes exactly when the last missing one came;
                    // later duplicates would start a new datagram.
                    prop_assert!(seen.iter().all(|&s| s));
                    result = Some((header, payload, len));
                    break;
                }
                Outcome::Incomplete | Outcome::Dropped(DropReason::DuplicateIgnored) => {}
                Outcome::Dropped(reason) => prop_assert!(false, "dropped: {:?}", reason),
            }
        }
        let (header, payload, len) = result.expect("completes");
        prop_assert_eq!(header, 0);
        prop_assert_eq!(len, bytes.len());
        prop_assert_eq!(flatten(&payload), bytes);
        assert_zero_copy(&fragments, &payload);
    }

    #[test]
    fn hostile_fragments_never_panic_nor_exceed_the_bounds(
        steps in proptest::collection::vec(
            (0u32..6, 0usize..80, 0usize..40, any::<bool>(), 0u64..20_000),
            1..300,
        ),
        max_datagrams in 0usize..6,
        max_bytes in 0usize..600,
    ) {
        // Held fragments carry 8 bytes or more: at most 600 / 8 of them.
        let pool = pool(128);
        let bytes = data(600, 13);
        let mut r = Reassembler::<Key, usize>::new(ReassemblyConfig {
            max_datagrams,
            max_bytes,
            max_datagram_len: 512,
            timeout: Duration::from_secs(60),
        });
        let mut now = Instant::ZERO;
        for (ident, offset_units, len_units, more, advance_ms) in steps {
            now += Duration::from_millis(advance_ms);
            let len = if more { len_units * 8 } else { len_units * 8 + len_units % 3 };
            let f = Received::new(&pool, offset_units * 8, more, &bytes[..len.min(600)]);
            let outcome = r.insert(now, (0, 0, ident), f.fragment());
            drop(f);
            if let Outcome::Complete { payload, len, .. } = outcome {
                prop_assert_eq!(payload.iter().map(Segment::len).sum::<usize>(), len);
            }
            prop_assert!(r.held_bytes() <= max_bytes);
            prop_assert!(r.len() <= max_datagrams);
            let listed: usize = r.datagrams().map(|d| d.held_bytes).sum();
            prop_assert_eq!(listed, r.held_bytes());
            let fragments: usize = r.datagrams().map(|d| d.fragments).sum();
            prop_assert_eq!(fragments, r.held_fragments());
            prop_assert_eq!(pool.in_use(), r.held_fragments());
            if advance_ms % 7 == 0 {
                let _ = r.poll(now);
            }
        }
        let _ = r.poll(now + Duration::from_secs(61));
        prop_assert!(r.is_empty());
        prop_assert_eq!(r.held_bytes(), 0);
        prop_assert_eq!(pool.in_use(), 0);
    }
}
