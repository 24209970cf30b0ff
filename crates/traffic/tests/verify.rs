//! The receivers' checks: a clean stream stays clean however it is split,
//! and every injected fault is counted as what it is.

use proptest::prelude::*;
use traffic::datagram::{self, Kind};
use traffic::pattern::Pattern;
use traffic::verify::{Arrival, DatagramVerifier, StreamCounts, StreamVerifier, DUPLICATE_WINDOW};

fn stream(pattern: &Pattern, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let n = (len - out.len()).min(pattern.max_len());
        out.extend_from_slice(pattern.at(out.len() as u64, n));
    }
    out
}

/// Feeds `data` to a verifier in reads of the given sizes (cycled) and
/// returns the final counts.
fn feed(pattern: &Pattern, data: &[u8], reads: &[usize]) -> StreamCounts {
    let mut verifier = StreamVerifier::new();
    let mut at = 0;
    for &n in reads.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let end = (at + n.max(1)).min(data.len());
        verifier.check(pattern, &data[at..end]);
        at = end;
    }
    verifier.finish(pattern)
}

proptest! {
    #[test]
    fn a_clean_stream_is_clean_however_it_is_read(
        len in 0usize..3_000_000,
        reads in proptest::collection::vec(1usize..200_000, 1..8),
    ) {
        let pattern = Pattern::new(65536);
        let data = stream(&pattern, len);
        let counts = feed(&pattern, &data, &reads);
        prop_assert!(counts.is_clean(), "{counts:?}");
        prop_assert_eq!(counts.bytes, len as u64);
    }

    #[test]
    fn a_skipped_run_is_counted_missing(
        start in 0usize..200_000,
        gap in 16usize..30_000,
        read in 100usize..70_000,
    ) {
        let pattern = Pattern::new(65536);
        let mut data = stream(&pattern, 400_000);
        data.drain(start..start + gap);
        let counts = feed(&pattern, &data, &[read]);
        prop_assert_eq!(counts.missing_bytes, gap as u64, "{:?}", counts);
        prop_assert_eq!(counts.corrupted_bytes, 0);
        prop_assert_eq!(counts.duplicated_bytes, 0);
    }

    #[test]
    fn a_repeated_run_is_counted_duplicated(
        start in 0usize..200_000,
        run in 16usize..30_000,
        read in 100usize..70_000,
    ) {
        let pattern = Pattern::new(65536);
        let mut data = stream(&pattern, 400_000);
        let copy = data[start..start + run].to_vec();
        let at = start + run;
        data.splice(at..at, copy);
        let counts = feed(&pattern, &data, &[read]);
        prop_assert_eq!(counts.duplicated_bytes, run as u64, "{:?}", counts);
        prop_assert_eq!(counts.reordered, 1);
        prop_assert_eq!(counts.missing_bytes, 0);
        prop_assert_eq!(counts.corrupted_bytes, 0);
    }

    #[test]
    fn flipped_bytes_are_counted_corrupted_and_the_stream_resynchronises(
        positions in proptest::collection::btree_set(0usize..300_000, 1..20),
        read in 1usize..70_000,
    ) {
        let pattern = Pattern::new(65536);
        let mut data = stream(&pattern, 300_016);
        for &p in &positions {
            data[p] ^= 0x5A;
        }
        let counts = feed(&pattern, &data, &[read]);
        prop_assert!(!counts.is_clean());
        prop_assert_eq!(counts.corrupted_bytes, positions.len() as u64, "{:?}", counts);
        prop_assert_eq!(counts.missing_bytes + counts.duplicated_bytes, 0);
    }
}

#[test]
fn in_place_corruption_inside_one_read_is_counted_exactly() {
    let pattern = Pattern::new(65536);
    let mut data = stream(&pattern, 100_000);
    for p in [10, 11, 5000, 70_001] {
        data[p] = !data[p];
    }
    let mut verifier = StreamVerifier::new();
    verifier.check(&pattern, &data);
    let counts = verifier.finish(&pattern);
    assert_eq!(counts.corrupted_bytes, 4, "{counts:?}");
    assert_eq!(counts.missing_bytes + counts.duplicated_bytes, 0);
}

fn datagram(pattern: &Pattern, kind: Kind, seq: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    datagram::write(&mut buf, kind, seq, 0, pattern);
    buf
}

#[test]
fn datagram_loss_duplication_and_reordering_are_counted() {
    let pattern = Pattern::new(1500);
    let mut verifier = DatagramVerifier::new(0);
    assert_eq!(
        verifier.check(&pattern, &datagram(&pattern, Kind::Start, 10, 100)),
        Arrival::Start { planned: 10 }
    );
    // 0 1 3 2 2 5 7 8 9 with 4 and 6 lost, 2 duplicated, 2 out of order.
    for seq in [0, 1, 3, 2, 2, 5, 7, 8, 9] {
        verifier.check(&pattern, &datagram(&pattern, Kind::Data, seq, 100));
    }
    let mut bad = datagram(&pattern, Kind::Data, 11, 100);
    bad[60] ^= 1;
    assert_eq!(verifier.check(&pattern, &bad), Arrival::Other);
    assert_eq!(
        verifier.check(&pattern, b"hello, world, not ours"),
        Arrival::Other
    );
    assert_eq!(
        verifier.check(&pattern, &datagram(&pattern, Kind::End, 10, 16)),
        Arrival::End { sent: 10 }
    );
    // A repeated end sentinel changes nothing.
    verifier.check(&pattern, &datagram(&pattern, Kind::End, 10, 16));
    let counts = verifier.finish();
    assert_eq!(counts.datagrams, 8);
    assert_eq!(counts.bytes, 800);
    assert_eq!(counts.duplicated, 1);
    assert_eq!(counts.out_of_order, 1);
    assert_eq!(counts.corrupted, 1);
    assert_eq!(counts.foreign, 1);
    assert_eq!(counts.sent, Some(10));
    assert_eq!(counts.lost, 2);
    assert_eq!(counts.datagrams + counts.lost, 10);
}

#[test]
fn without_an_end_sentinel_loss_counts_up_to_the_highest_seen() {
    let pattern = Pattern::new(100);
    let mut verifier = DatagramVerifier::new(0);
    for seq in [0, 2, 4] {
        verifier.check(&pattern, &datagram(&pattern, Kind::Data, seq, 40));
    }
    let counts = verifier.finish();
    assert_eq!((counts.datagrams, counts.lost, counts.sent), (3, 2, None));
}

#[test]
fn duplicates_are_found_across_the_window_and_older_ones_are_flagged() {
    let pattern = Pattern::new(100);
    let mut verifier = DatagramVerifier::new(0);
    let send = |v: &mut DatagramVerifier, seq| {
        v.check(&pattern, &datagram(&pattern, Kind::Data, seq, 20));
    };
    send(&mut verifier, 5);
    send(&mut verifier, DUPLICATE_WINDOW);
    send(&mut verifier, 5);
    assert_eq!(verifier.counts().duplicated, 1);
    send(&mut verifier, DUPLICATE_WINDOW + 10);
    send(&mut verifier, 5);
    let counts = verifier.counts();
    assert_eq!(counts.unverifiable_late, 1);
    // Sliding the window cleared the bits it passed: a sequence number
    // seen for the first time inside the window is new.
    send(&mut verifier, DUPLICATE_WINDOW + 3);
    assert_eq!(verifier.counts().duplicated, 1);
    assert_eq!(verifier.counts().datagrams, 5);
}

#[test]
fn datagrams_past_the_window_reuse_its_bits_without_false_duplicates() {
    // A run longer than the window (a 1 s run of small datagrams): each
    // new sequence number lands on the bit of the one a window before.
    let pattern = Pattern::new(100);
    let mut verifier = DatagramVerifier::new(0);
    let send = |v: &mut DatagramVerifier, seq| {
        v.check(&pattern, &datagram(&pattern, Kind::Data, seq, 20));
    };
    for seq in [0, 1, 2, DUPLICATE_WINDOW, DUPLICATE_WINDOW + 1] {
        send(&mut verifier, seq);
    }
    assert_eq!(verifier.counts().duplicated, 0);
    // A real duplicate in the window is still found.
    send(&mut verifier, DUPLICATE_WINDOW + 1);
    assert_eq!(verifier.counts().duplicated, 1);
    send(&mut verifier, 2 * DUPLICATE_WINDOW + 2);
    let counts = verifier.counts();
    assert_eq!((counts.duplicated, counts.datagrams), (1, 6));
}

#[test]
fn another_circuits_datagrams_are_foreign_not_errors() {
    let pattern = Pattern::new(100);
    let mut verifier = DatagramVerifier::new(1);
    let mut theirs = vec![0; 40];
    datagram::write(&mut theirs, Kind::Data, 0, 2, &pattern);
    let mut ours = vec![0; 40];
    datagram::write(&mut ours, Kind::Data, 0, 1, &pattern);
    assert_eq!(verifier.check(&pattern, &theirs), Arrival::Other);
    assert_eq!(verifier.check(&pattern, &ours), Arrival::Data { seq: 0 });
    let counts = verifier.finish();
    assert_eq!(
        (counts.foreign, counts.datagrams, counts.corrupted),
        (1, 1, 0)
    );
}
