//! Packet buffers (DESIGN.md, "Packet buffers"; the MSR IPv6 design's
//! header reservation and pull-up).
//!
//! * [`Pool`]: a host's preallocated, fixed-size buffers. Memory is bounded
//!   by construction: when the pool is empty, allocation fails and is
//!   counted, it never grows.
//! * [`Packet`]: one head buffer whose headroom, reserved once for the
//!   largest link header plus IP and transport headers, takes every header
//!   by prepending (never a chained header buffer), followed by a chain of
//!   shared payload [`Segment`]s, so fragmentation and segmentation
//!   reference payload instead of copying it.
//! * [`Cursor`]: reads a received chain front to back; a header is
//!   returned in place when contiguous and gathered into the caller's
//!   scratch space only when it straddles segments, never modifying the
//!   chain.
//!
//! Allocate and free are probe spans of category `buffer`; every copy of
//! payload, and every pull-up, is a span of category `data_move`.

mod cursor;
mod packet;
mod pool;
mod prefetch;
mod release;

pub use cursor::{Cursor, PullUpError};
pub use packet::{Packet, PacketError, PacketOffload, Segment};
pub use pool::{Buffer, Lender, Lent, Pool, PoolConfig, PoolConfigError, PoolStats};
pub(crate) use prefetch::prefetch;
pub use release::return_free_memory;

/// Shared payload segments, held inline up to two (what one MSS-sized TCP
/// segment spans in the pool's buffers) and on the heap beyond.
pub type SegmentList = smallvec::SmallVec<[Segment; 2]>;

/// The pieces of `parts` (scatter-gather parts of one frame, in order)
/// that hold the bytes `range` of their concatenation, front to back: how
/// a segment's payload is found in the pool buffers it lies in, to be
/// summed or handed to a link without gathering it.
pub fn pieces<'a>(
    parts: &'a [&'a [u8]],
    range: std::ops::Range<usize>,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    let (mut skip, mut left) = (range.start, range.len());
    parts.iter().filter_map(move |part| {
        if left == 0 {
            return None;
        }
        if skip >= part.len() {
            skip -= part.len();
            return None;
        }
        let piece = &part[skip..part.len().min(skip + left)];
        skip = 0;
        left -= piece.len();
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::{pieces, Packet, Segment};

    /// Packets are moved by value through every layer and queue: a
    /// growth here costs every frame (issue 22).
    #[test]
    fn packets_stay_small() {
        assert_eq!(std::mem::size_of::<Segment>(), 16);
        assert!(
            std::mem::size_of::<Packet>() <= 80,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }

    #[test]
    fn pieces_cover_exactly_the_range_across_parts() {
        let parts: [&[u8]; 3] = [b"abcd", b"efg", b"hijkl"];
        let join = |r| pieces(&parts, r).collect::<Vec<_>>().concat();
        assert_eq!(join(0..12), b"abcdefghijkl");
        assert_eq!(join(2..9), b"cdefghi");
        assert_eq!(join(4..7), b"efg");
        assert_eq!(join(5..5), b"");
        assert_eq!(join(10..40), b"kl", "clamped to what the parts hold");
        assert_eq!(
            pieces(&parts, 3..8).count(),
            3,
            "one piece per part touched"
        );
    }
}
