//! Packet buffers: headroom, shared segments, pull-up, bounded pool, and
//! the probes at their cost centres.

use probe::{Flow, Mode};
use proptest::prelude::*;
use stack::buffer::{Cursor, Packet, PacketError, Pool, PoolConfig, PullUpError};

fn pool(buffers: usize) -> Pool {
    Pool::new(PoolConfig {
        buffer_size: 512,
        headroom: 64,
        buffers,
    })
    .unwrap()
}

/// A packet whose bytes are `pieces` concatenated: the first in the head
/// buffer, the rest as segments shared from other packets.
fn chained(pool: &Pool, pieces: &[Vec<u8>]) -> Packet {
    let mut packet = Packet::new(pool, Flow::NONE).unwrap();
    if let Some(first) = pieces.first() {
        packet.append_copy(first).unwrap();
    }
    for piece in pieces.iter().skip(1) {
        let mut source = Packet::new(pool, Flow::NONE).unwrap();
        source.append_copy(piece).unwrap();
        for segment in source.segments(0..piece.len()).unwrap() {
            packet.append_segment(segment);
        }
    }
    packet
}

fn flatten(packet: &Packet) -> Vec<u8> {
    packet.parts().flatten().copied().collect()
}

#[test]
fn headers_are_prepended_into_the_reserved_headroom() {
    let pool = pool(4);
    let mut packet = Packet::new(&pool, Flow::NONE).unwrap();
    packet.append_copy(b"payload").unwrap();
    packet.prepend(8).unwrap().copy_from_slice(b"UDPHEADR");
    packet.prepend(40).unwrap().fill(6);
    packet.prepend(14).unwrap().fill(0xe);
    assert_eq!(packet.len(), 14 + 40 + 8 + 7);
    assert_eq!(packet.headroom(), 2);
    // One buffer holds every header and the payload: one part, one buffer.
    assert_eq!(packet.parts().count(), 1);
    assert_eq!(pool.in_use(), 1);
    assert_eq!(
        packet.prepend(3).unwrap_err(),
        PacketError::NoHeadroom {
            needed: 3,
            available: 2
        }
    );
    let bytes = flatten(&packet);
    assert_eq!(&bytes[54..62], b"UDPHEADR");
    assert_eq!(&bytes[62..], b"payload");
}

#[test]
fn tailroom_is_bounded_by_the_head_buffer() {
    let pool = pool(1);
    let mut packet = Packet::new(&pool, Flow::NONE).unwrap();
    assert_eq!(packet.tailroom(), 512 - 64);
    assert!(matches!(
        packet.append_copy(&[0; 449]),
        Err(PacketError::NoTailroom {
            needed: 449,
            available: 448
        })
    ));
    packet.append_copy(&[0; 448]).unwrap();
    assert_eq!(packet.tailroom(), 0);
}

#[test]
fn fragments_reference_the_payload_instead_of_copying_it() {
    let pool = pool(8);
    let payload: Vec<u8> = (0..400u16).map(|i| i as u8).collect();
    let mut original = Packet::new(&pool, Flow::NONE).unwrap();
    original.append_copy(&payload).unwrap();
    let before = pool.in_use();

    // Two "fragments": each a new head buffer for headers plus a shared
    // slice of the original payload.
    let mut fragments = Vec::new();
    for range in [0..200, 200..400] {
        let mut fragment = Packet::new(&pool, Flow::NONE).unwrap();
        for segment in original.segments(range).unwrap() {
            fragment.append_segment(segment);
        }
        fragment.prepend(48).unwrap().fill(0xf);
        fragments.push(fragment);
    }
    // Only the two header buffers were taken; the payload was not copied.
    assert_eq!(pool.in_use(), before + 2);
    assert_eq!(&flatten(&fragments[1])[48..], &payload[200..]);
    // Once shared, the original's head cannot change under the fragments.
    assert_eq!(original.prepend(1).unwrap_err(), PacketError::Shared);

    // The payload buffer returns to the pool only with its last user.
    drop(original);
    assert_eq!(pool.in_use(), 3);
    drop(fragments);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn an_exhausted_pool_refuses_packets_and_counts() {
    let pool = pool(1);
    let _held = Packet::new(&pool, Flow::NONE).unwrap();
    assert_eq!(
        Packet::new(&pool, Flow::NONE).unwrap_err(),
        PacketError::PoolExhausted
    );
    assert_eq!(pool.stats().exhausted, 1);
}

#[test]
fn received_frames_land_after_the_headroom() {
    let pool = pool(2);
    let packet = Packet::receive(&pool, Flow::NONE, |buf| {
        buf[..5].copy_from_slice(b"frame");
        Some(5)
    })
    .unwrap()
    .unwrap();
    assert_eq!(flatten(&packet), b"frame");
    // A router can prepend another link header to a received packet.
    assert_eq!(packet.headroom(), 64);
    // No frame: the buffer goes straight back.
    let none = Packet::receive(&pool, Flow::NONE, |_| None).unwrap();
    assert!(none.is_none());
    assert_eq!(pool.in_use(), 1);
}

#[test]
fn pull_up_is_in_place_when_contiguous_and_gathers_when_straddling() {
    let pool = pool(8);
    let packet = chained(&pool, &[b"0123".to_vec(), b"4567".to_vec(), b"89".to_vec()]);
    let before: Vec<Vec<u8>> = packet.parts().map(<[u8]>::to_vec).collect();
    let mut scratch = [0u8; 16];

    let mut cursor = Cursor::new(&packet);
    let head = cursor.pull_up(3, &mut scratch).unwrap();
    // In place: the slice points into the packet's first part.
    let first = packet.parts().next().unwrap();
    assert_eq!(head.as_ptr(), first.as_ptr());

    cursor.advance(2).unwrap();
    assert_eq!(cursor.pull_up(7, &mut scratch).unwrap(), b"2345678");
    assert_eq!(cursor.remaining(), 8);
    let mut tiny = [0u8; 4];
    assert_eq!(
        cursor.pull_up(7, &mut tiny).unwrap_err(),
        PullUpError::TooLong {
            wanted: 7,
            scratch: 4
        }
    );
    assert_eq!(
        cursor.pull_up(9, &mut scratch).unwrap_err(),
        PullUpError::Truncated {
            wanted: 9,
            available: 8
        }
    );
    cursor.advance(8).unwrap();
    assert_eq!(cursor.remaining(), 0);
    assert!(cursor.advance(1).is_err());
    // The chain itself is never modified.
    let after: Vec<Vec<u8>> = packet.parts().map(<[u8]>::to_vec).collect();
    assert_eq!(before, after);
}

#[test]
fn strip_consumes_headers_across_segments() {
    let pool = pool(8);
    let mut packet = chained(&pool, &[b"ab".to_vec(), b"cde".to_vec(), b"f".to_vec()]);
    packet.strip(3).unwrap();
    assert_eq!(flatten(&packet), b"def");
    assert!(packet.strip(4).is_err());
    packet.strip(3).unwrap();
    assert!(packet.is_empty());
}

#[test]
fn buffer_and_copy_probes_are_recorded() {
    let names: Vec<&str> = std::thread::spawn(|| {
        probe::init_thread(1024);
        probe::set_mode(Mode::TracedFlows);
        let pool = pool(4);
        let flow = Flow::traced(9);
        let mut packet = Packet::new(&pool, flow).unwrap();
        packet.append_copy(b"data").unwrap();
        let mut out = [0u8; 4];
        packet.copy_out(0, &mut out);
        drop(packet);
        // An untraced flow records nothing.
        drop(Packet::new(&pool, Flow::untraced(1)).unwrap());
        probe::set_mode(Mode::Off);
        probe::drain_thread()
            .iter()
            .map(|r| stack::probes::LOCATIONS[r.loc as usize].name)
            .collect()
    })
    .join()
    .unwrap();
    if !probe::ENABLED {
        assert!(names.is_empty());
        return;
    }
    assert_eq!(
        names,
        [
            "buffer.alloc.enter",
            "buffer.alloc.exit",
            "data.copy.enter",
            "data.copy.exit",
            "data.copy.enter",
            "data.copy.exit",
            "buffer.free.enter",
            "buffer.free.exit",
        ]
    );
}

proptest! {
    /// Stripping and truncating any chain, inside its head or into its
    /// segments (`strip` has a fast path for the first), leave the flat
    /// bytes' sub-range.
    #[test]
    fn strip_and_truncate_match_the_flat_bytes(
        pieces in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..60), 1..6),
        cuts in prop::collection::vec((0usize..80, 0usize..200), 1..6),
    ) {
        let pool = pool(32);
        let mut packet = chained(&pool, &pieces);
        let mut flat: Vec<u8> = pieces.concat();
        for (strip, keep) in cuts {
            match packet.strip(strip) {
                Ok(()) => flat.drain(..strip).for_each(drop),
                Err(_) => prop_assert!(strip > flat.len()),
            }
            packet.truncate(keep);
            flat.truncate(keep);
            prop_assert_eq!(flatten(&packet), flat.clone());
            prop_assert_eq!(packet.len(), flat.len());
        }
    }

    /// Cursor reads, copies and shared ranges of any chain equal the same
    /// operations on the flat bytes.
    #[test]
    fn chain_operations_match_the_flat_bytes(
        pieces in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..60), 1..8),
        steps in prop::collection::vec((0usize..40, 0usize..40), 1..20),
        copy_at in 0usize..500,
        range in (0usize..500, 0usize..500),
    ) {
        let pool = pool(32);
        let packet = chained(&pool, &pieces);
        let flat: Vec<u8> = pieces.concat();
        prop_assert_eq!(packet.len(), flat.len());
        prop_assert_eq!(flatten(&packet), flat.clone());

        let mut cursor = Cursor::new(&packet);
        let mut scratch = [0u8; 64];
        let mut at = 0;
        for (peek, skip) in steps {
            match cursor.pull_up(peek, &mut scratch) {
                Ok(bytes) => prop_assert_eq!(bytes, &flat[at..at + peek]),
                Err(_) => prop_assert!(at + peek > flat.len()),
            }
            match cursor.advance(skip) {
                Ok(()) => at += skip,
                Err(_) => prop_assert!(at + skip > flat.len()),
            }
            prop_assert_eq!(cursor.position(), at);
        }

        let mut out = vec![0u8; 64];
        let copied = packet.copy_out(copy_at, &mut out);
        let expected = flat.get(copy_at..).unwrap_or(&[]);
        let n = expected.len().min(64);
        prop_assert_eq!(copied, n);
        prop_assert_eq!(&out[..n], &expected[..n]);

        let (a, b) = (range.0.min(range.1), range.0.max(range.1));
        match packet.segments(a..b) {
            Ok(segments) => {
                let bytes: Vec<u8> = segments.iter().flat_map(|s| s.as_slice().to_vec()).collect();
                prop_assert_eq!(bytes, flat[a..b].to_vec());
            }
            Err(_) => prop_assert!(b > flat.len()),
        }
    }
}

#[test]
fn a_segment_list_becomes_the_chain_or_follows_it_without_its_empty_segments() {
    let pool = pool(8);
    let mut source = Packet::new(&pool, Flow::NONE).unwrap();
    source.append_copy(b"abcdefgh").unwrap();
    let list = |ranges: &[std::ops::Range<usize>]| -> stack::buffer::SegmentList {
        ranges
            .iter()
            .flat_map(|r| source.segments(r.clone()).unwrap())
            .collect()
    };
    // Headers only: the list is moved in as the chain.
    let mut packet = Packet::new(&pool, Flow::NONE).unwrap();
    packet.prepend(2).unwrap().copy_from_slice(b"H:");
    packet.append_segment_list(list(&[0..3, 3..3, 5..8]));
    assert_eq!(flatten(&packet), b"H:abcfgh");
    assert_eq!(packet.parts().count(), 3, "the empty segment is not kept");
    // A chain already there: the list follows it.
    packet.append_segment_list(list(&[3..4, 4..5]));
    assert_eq!(flatten(&packet), b"H:abcfghde");
    assert_eq!(packet.len(), 10);
    // An empty segment is not kept: a packet given only one still has no
    // chain, so its head's tailroom is still there to append into.
    let empty = source.segments(0..1).unwrap()[0].slice(0..0).unwrap();
    assert!(empty.is_empty());
    let mut bare = Packet::new(&pool, Flow::NONE).unwrap();
    bare.append_segment_list([empty].into_iter().collect());
    assert!(bare.tailroom() > 0, "no empty segment in the chain");
    // A chain emptied after it outgrew its inline room (its old list is
    // replaced, not forgotten): the new list is the chain, and every
    // buffer still goes back.
    let before = pool.in_use();
    let mut emptied = Packet::new(&pool, Flow::NONE).unwrap();
    emptied.prepend(2).unwrap().copy_from_slice(b"H:");
    emptied.append_segment_list(list(&[0..1, 1..2, 2..3, 3..4]));
    emptied.truncate(2);
    assert_eq!(flatten(&emptied), b"H:");
    emptied.append_segment_list(list(&[4..5, 5..6]));
    assert_eq!((flatten(&emptied), emptied.len()), (b"H:ef".to_vec(), 4));
    drop(emptied);
    assert_eq!(pool.in_use(), before, "its buffers all went back");
}
