//! The send queue of a TCP connection: the bytes the application wrote
//! that are not yet acknowledged, from SND.UNA on (RFC 9293 §3.3.1).
//!
//! Bytes are copied once, from the application into pool buffers (the
//! socket copy, a `data_move` span); segmentation and retransmission then
//! reference them as shared segments, so no further copy happens until
//! the link needs a frame. Small writes fill the tail of the last buffer
//! while no segment of it has been handed out. Capacity (SO_SNDBUF) bounds
//! the bytes held, and with them the pool buffers.

use std::cell::Cell;
use std::collections::VecDeque;

use probe::Flow;

use crate::buffer::{PacketError, Pool, Segment, SegmentList};

/// Unacknowledged and unsent bytes, as shared pool segments.
#[derive(Debug)]
pub struct SendBuffer {
    /// The chunks, each with the stream position (bytes since the first
    /// write) where it starts, so a segment's first chunk is found by
    /// binary search (a 4 MiB window holds a few thousand chunks). One
    /// deque, not one for the chunks and one for their starts: each
    /// lookup costs one index computation.
    chunks: VecDeque<Chunk>,
    /// The stream position of offset 0.
    head: u64,
    len: usize,
    capacity: usize,
    /// Chunks acknowledged and dropped so far: a chunk's number in the
    /// stream is its index plus this.
    dropped_chunks: u64,
    /// The stream number of the chunk the last [`segments`](Self::segments)
    /// ended in. Segments are asked for in stream order, so the next one
    /// begins there or a chunk later: found without the binary
    /// search, which cost a quarter of this function in the TCP bench
    /// (issue 22).
    last_chunk: Cell<u64>,
}

/// A pool segment of the queue and its stream position.
#[derive(Debug)]
struct Chunk {
    start: u64,
    segment: Segment,
}

impl SendBuffer {
    /// An empty queue holding at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            chunks: VecDeque::new(),
            head: 0,
            len: 0,
            capacity,
            dropped_chunks: 0,
            last_chunk: Cell::new(0),
        }
    }

    /// Bytes held: offset 0 is SND.UNA.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Room for more application bytes.
    pub fn free(&self) -> usize {
        self.capacity - self.len
    }

    /// Copies as much of `data` as there is room for (by capacity, then by
    /// pool buffers); returns the bytes taken, possibly 0. Fails only if
    /// the pool gave nothing at all while `data` and room were not empty.
    pub fn write(&mut self, pool: &Pool, flow: Flow, data: &[u8]) -> Result<usize, PacketError> {
        let mut rest = &data[..data.len().min(self.free())];
        let mut taken = 0;
        if let Some(last) = self.chunks.back_mut() {
            let n = last.segment.append_in_place(rest);
            rest = &rest[n..];
            taken += n;
        }
        while !rest.is_empty() {
            match Segment::copy_from(pool, flow, rest) {
                Ok((segment, n)) if n > 0 => {
                    let start = self.head + (self.len + taken) as u64;
                    self.chunks.push_back(Chunk { start, segment });
                    rest = &rest[n..];
                    taken += n;
                }
                // A partial write is a write; only nothing at all fails.
                Ok(_) | Err(_) if taken > 0 => break,
                Ok(_) => return Err(PacketError::PoolExhausted),
                Err(e) => return Err(e),
            }
        }
        self.len += taken;
        Ok(taken)
    }

    /// The bytes `offset..offset + len` (offset 0 = SND.UNA) as shared
    /// segments, clamped to what is held: a TCP segment's payload.
    pub fn segments(&self, offset: usize, len: usize) -> SegmentList {
        let mut out = SegmentList::new();
        self.segments_into(offset, len, &mut out);
        out
    }

    /// [`segments`](Self::segments) into `out` (emptied first): the
    /// connection fills the segment it is building in place.
    pub fn segments_into(&self, offset: usize, len: usize, out: &mut SegmentList) {
        out.clear();
        let end = (offset + len).min(self.len);
        if offset >= end {
            return;
        }
        let (from, to) = (self.head + offset as u64, self.head + end as u64);
        let mut index = self.chunk_at(from);
        // A segment spans a chunk or two: each is fetched by index, cheaper
        // than building the deque's iterator (both halves) and skipping to
        // the first; the chunk holding the segment's end is the last one
        // looked at.
        while let Some(chunk) = self.chunks.get(index) {
            if chunk.start >= to {
                break;
            }
            let chunk_end = chunk.start + chunk.segment.len() as u64;
            let (lo, hi) = (from.max(chunk.start), to.min(chunk_end));
            if lo < hi {
                let range = (lo - chunk.start) as usize..(hi - chunk.start) as usize;
                if let Some(piece) = chunk.segment.slice(range) {
                    out.push(piece);
                }
            }
            if chunk_end >= to {
                break;
            }
            index += 1;
        }
        // The next segment begins where this one ended: in this chunk, or
        // the next.
        self.last_chunk.set(index as u64 + self.dropped_chunks);
    }

    /// The index of the chunk holding stream `position` (one that is
    /// held): the last chunk starting at or before it, looked for a few
    /// chunks on from where the previous call began, else by binary search
    /// (a retransmission goes back).
    fn chunk_at(&self, position: u64) -> usize {
        const STEPS: usize = 4;
        let starts_by = |index: usize| self.chunks.get(index).is_some_and(|c| c.start <= position);
        let hinted = self
            .last_chunk
            .get()
            .checked_sub(self.dropped_chunks)
            .and_then(|index| usize::try_from(index).ok())
            .filter(|&index| starts_by(index));
        let found = hinted.and_then(|mut index| {
            for _ in 0..STEPS {
                if !starts_by(index + 1) {
                    return Some(index);
                }
                index += 1;
            }
            None
        });
        found.unwrap_or_else(|| {
            self.chunks
                .partition_point(|c| c.start <= position)
                .saturating_sub(1)
        })
    }

    /// Copies `offset..offset + out.len()` into `out` (for tests and for
    /// links that need one contiguous run); returns the bytes copied.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> usize {
        let mut copied = 0;
        for piece in self.segments(offset, out.len()) {
            let bytes = piece.as_slice();
            out[copied..copied + bytes.len()].copy_from_slice(bytes);
            copied += bytes.len();
        }
        copied
    }

    /// Forgets the first `n` bytes (acknowledged); returns how many were
    /// dropped (at most all).
    pub fn acknowledge(&mut self, n: usize) -> usize {
        let mut left = n.min(self.len);
        let dropped = left;
        while left > 0 {
            let Some(front) = self.chunks.front_mut() else {
                break;
            };
            let held = front.segment.len();
            if held <= left {
                left -= held;
                self.chunks.pop_front();
                self.dropped_chunks += 1;
            } else {
                front.segment.advance(left);
                front.start += left as u64;
                left = 0;
            }
        }
        self.len -= dropped;
        self.head += dropped as u64;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::PoolConfig;
    use proptest::prelude::*;

    fn pool(buffers: usize) -> Pool {
        Pool::new(PoolConfig {
            buffer_size: 512,
            headroom: 64,
            buffers,
        })
        .unwrap()
    }

    #[test]
    fn small_writes_share_a_buffer_until_it_is_handed_out() {
        let pool = pool(8);
        let mut q = SendBuffer::new(4096);
        let flow = Flow::untraced(1);
        assert_eq!(q.write(&pool, flow, b"hello ").unwrap(), 6);
        assert_eq!(q.write(&pool, flow, b"world").unwrap(), 5);
        assert_eq!(pool.in_use(), 1);
        // A segment handed out pins the buffer: the next write starts a
        // new one, and the bytes already sent never change.
        let sent = q.segments(0, 11);
        assert_eq!(sent[0].as_slice(), b"hello world");
        q.write(&pool, flow, b"!").unwrap();
        assert_eq!(pool.in_use(), 2);
        assert_eq!(sent[0].as_slice(), b"hello world");
        let mut all = [0u8; 12];
        assert_eq!(q.copy_out(0, &mut all), 12);
        assert_eq!(&all, b"hello world!");
    }

    #[test]
    fn capacity_and_pool_bound_what_is_taken() {
        let pool = pool(2);
        let mut q = SendBuffer::new(700);
        let flow = Flow::untraced(1);
        assert_eq!(q.write(&pool, flow, &[7u8; 1000]).unwrap(), 700);
        assert_eq!(q.free(), 0);
        assert_eq!(q.write(&pool, flow, b"more").unwrap(), 0);
        // Acknowledging frees room and, once a buffer is done, the buffer.
        assert_eq!(q.acknowledge(512), 512);
        assert_eq!(pool.in_use(), 1);
        assert_eq!(q.write(&pool, flow, &[8u8; 600]).unwrap(), 512);
        // Pool empty: the part that fits the last buffer's tail went in,
        // the rest is refused without error.
        let mut q2 = SendBuffer::new(10_000);
        assert!(matches!(
            q2.write(&pool, flow, b"x"),
            Err(PacketError::PoolExhausted)
        ));
    }

    proptest! {
        #[test]
        fn bytes_come_out_as_they_went_in(
            writes in proptest::collection::vec(1usize..900, 1..40),
            acks in proptest::collection::vec(0usize..700, 1..40),
        ) {
            let pool = pool(64);
            let flow = Flow::untraced(1);
            let mut q = SendBuffer::new(8192);
            let mut stream = Vec::new(); // every byte accepted, in order
            let mut una = 0usize;        // stream offset of q's offset 0
            let mut next = 0u8;
            for (i, &w) in writes.iter().enumerate() {
                let data: Vec<u8> = (0..w).map(|_| { next = next.wrapping_add(31); next }).collect();
                let took = q.write(&pool, flow, &data).unwrap_or(0);
                stream.extend_from_slice(&data[..took]);
                // Whatever is held reads back as the stream from una.
                let mut held = vec![0u8; q.len()];
                prop_assert_eq!(q.copy_out(0, &mut held), q.len());
                prop_assert_eq!(&held[..], &stream[una..]);
                // And from any offset, as segmentation asks for it.
                let from = (w * 7) % (q.len() + 1);
                let mut tail = vec![0u8; q.len() - from];
                prop_assert_eq!(q.copy_out(from, &mut tail), q.len() - from);
                prop_assert_eq!(&tail[..], &stream[una + from..]);
                let ack = acks[i % acks.len()].min(q.len());
                prop_assert_eq!(q.acknowledge(ack), ack);
                una += ack;
                prop_assert!(q.len() <= q.capacity());
            }
        }
    }
}
