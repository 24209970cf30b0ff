//! The optimized checksum equals the RFC 1071 reference for every length
//! 0..=2048 at every start alignment (0..64 covers every AVX2 lane offset),
//! on both sides of the AVX2 threshold, and so does the portable sum alone.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use wire::checksum::{optimized, reference};

#[test]
fn every_length_and_alignment_on_random_bytes() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let buffer: Vec<u8> = proptest::collection::vec(any::<u8>(), 2048 + 64)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    for offset in 0..64 {
        for len in 0..=2048 {
            let data = &buffer[offset..offset + len];
            let expected = reference::sum(data);
            assert_eq!(optimized::sum(data), expected, "len {len} offset {offset}");
            assert_eq!(
                optimized::portable_sum(data),
                expected,
                "portable, len {len} offset {offset}"
            );
        }
    }
}

#[test]
fn all_ones_and_all_zero_edge_values() {
    // 0xff bytes sum to 0xffff, never to the other zero; zero bytes sum to 0.
    for len in [0usize, 1, 2, 63, 64, 65, 1500, 4096] {
        let ones = vec![0xffu8; len];
        let zeros = vec![0u8; len];
        assert_eq!(optimized::sum(&ones), reference::sum(&ones), "ones {len}");
        assert_eq!(optimized::sum(&zeros), 0, "zeros {len}");
    }
}

#[test]
fn large_buffer_past_the_lane_overflow_bound() {
    // More than 65 536 AVX2 iterations (4 MiB) of 0xff forces the block split.
    let data = vec![0xffu8; 5 * 1024 * 1024 + 3];
    assert_eq!(optimized::sum(&data), reference::sum(&data));
}

proptest! {
    #[test]
    fn random_slices(data in proptest::collection::vec(any::<u8>(), 0..9000), start in 0usize..64) {
        let start = start.min(data.len());
        prop_assert_eq!(optimized::sum(&data[start..]), reference::sum(&data[start..]));
    }
}
