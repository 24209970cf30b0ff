//! A packet: one head buffer with reserved headroom, then shared payload.

use std::mem::ManuallyDrop;
use std::ops::Range;

use probe::Flow;

use super::pool::{Buffer, Lent, Pool};
use super::SegmentList;
use crate::phy::RxBuffer;
use crate::probes::{DATA_COPY_ENTER, DATA_COPY_EXIT};

/// Why a packet operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("the buffer pool is exhausted")]
    PoolExhausted,
    #[error("{needed} bytes of header do not fit the {available} bytes of headroom left")]
    NoHeadroom { needed: usize, available: usize },
    #[error("{needed} bytes do not fit the {available} bytes left in the head buffer")]
    NoTailroom { needed: usize, available: usize },
    #[error("the head buffer is shared with other packets and cannot change")]
    Shared,
    #[error("range {start}..{end} lies outside the packet's {len} bytes")]
    OutOfRange {
        start: usize,
        end: usize,
        len: usize,
    },
}

/// A shared, read-only run of bytes in a buffer (a pool's, or memory a
/// link lent): what packets chain and fragments reference. The buffer
/// returns to its pool (or lender) when the last segment or packet using
/// it is dropped.
///
/// Offsets are `u32` (a buffer holds less than 4 GiB: [`Pool`] refuses
/// bigger ones), so a segment is 16 bytes and a packet's inline chain of
/// two is 32: packets are moved by value through every layer and queue.
#[derive(Clone)]
pub struct Segment {
    buffer: Buffer,
    start: u32,
    end: u32,
}

/// An offset into a buffer as stored: exact, as no buffer holds 4 GiB
/// ([`Pool::new`] and [`Pool::lend`] refuse such).
#[inline]
fn offset(at: usize) -> u32 {
    debug_assert!(u32::try_from(at).is_ok(), "an offset past 4 GiB");
    at as u32
}

impl Segment {
    pub fn as_slice(&self) -> &[u8] {
        &self.buffer[self.start as usize..self.end as usize]
    }

    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// A new segment holding a copy of as much of `data` as one pool
    /// buffer takes (a `data_move` span), and how many bytes that was.
    pub fn copy_from(
        pool: &Pool,
        flow: Flow,
        data: &[u8],
    ) -> Result<(Segment, usize), PacketError> {
        let mut buffer = pool.alloc(flow).ok_or(PacketError::PoolExhausted)?;
        let bytes = buffer.get_mut().ok_or(PacketError::Shared)?;
        let take = data.len().min(bytes.len());
        if take > 0 {
            let _span = probe::span(DATA_COPY_ENTER, DATA_COPY_EXIT, take as u32, flow, 0);
            bytes[..take].copy_from_slice(&data[..take]);
        }
        let segment = Segment {
            buffer,
            start: 0,
            end: offset(take),
        };
        Ok((segment, take))
    }

    /// Appends as much of `data` as fits after this segment's end in its
    /// buffer, if nothing else references the buffer (so no packet already
    /// handed out can see the bytes change). Returns the bytes appended.
    pub fn append_in_place(&mut self, data: &[u8]) -> usize {
        let end = self.end as usize;
        let flow = self.buffer.flow();
        let Some(buffer) = self.buffer.get_mut() else {
            return 0;
        };
        let take = data.len().min(buffer.len().saturating_sub(end));
        if take > 0 {
            let _span = probe::span(DATA_COPY_ENTER, DATA_COPY_EXIT, take as u32, flow, 0);
            buffer[end..end + take].copy_from_slice(&data[..take]);
            self.end = offset(end + take);
        }
        take
    }

    /// Drops the first `n` bytes (at most all of them).
    pub fn advance(&mut self, n: usize) {
        self.start = offset(
            (self.start as usize)
                .saturating_add(n)
                .min(self.end as usize),
        );
    }

    /// The bytes `range` (relative to this segment), sharing the buffer.
    pub fn slice(&self, range: Range<usize>) -> Option<Segment> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        // Inside this segment (checked above), so inside the buffer.
        Some(Segment {
            buffer: self.buffer.clone(),
            start: self.start + offset(range.start),
            end: self.start + offset(range.end),
        })
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Segment({}..{})", self.start, self.end)
    }
}

/// A packet: the head buffer's data (`start..end`, with headroom in front
/// for headers to be prepended) followed by a chain of shared segments.
///
/// Packets move by value through every layer and queue, so they are kept
/// small (80 bytes): offsets into a buffer and the chain's length are
/// `u32` (no buffer, and no packet, holds 4 GiB).
pub struct Packet {
    head: Buffer,
    start: u32,
    end: u32,
    /// Bytes in `chain`, kept as it changes so that the packet's length,
    /// asked at every layer, needs no walk of the chain.
    chain_len: u32,
    /// Offload metadata the device stage reads (`iface::offload`).
    offload: PacketOffload,
    flow: Flow,
    /// Dropped by [`Packet`]'s drop only when it holds something: most
    /// packets (every received frame, every ACK) have an empty inline
    /// chain, whose drop would still be a call (issue 22).
    chain: ManuallyDrop<SegmentList>,
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        if self.chain.spilled() || !self.chain.is_empty() {
            drop_chain(&mut self.chain);
        }
    }
}

/// A packet's chain that holds segments or heap room, dropped.
#[inline(never)]
fn drop_chain(chain: &mut ManuallyDrop<SegmentList>) {
    // SAFETY: called once, from the packet's drop, and the chain is not
    // used after it.
    unsafe { ManuallyDrop::drop(chain) }
}

/// A chain's length plus `more` bytes. A packet of 4 GiB cannot be made
/// from any pool (that would be a bug, not a packet): checked, not wrapped.
#[inline]
fn grown(chain_len: u32, more: usize) -> u32 {
    u32::try_from(more)
        .ok()
        .and_then(|more| chain_len.checked_add(more))
        .expect("a packet of 4 GiB")
}

/// What a packet carries for segmentation and receive offload, as
/// Linux's `skb_shinfo(skb)->gso_size` and `ip_summed` do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketOffload {
    /// A TCP super-segment (TSO) or a receive-coalesced one (GRO): the
    /// payload bytes of each wire segment (the MSS); 0 for an ordinary
    /// packet.
    pub gso_size: u16,
    /// The transport checksum was verified already (GRO checked each
    /// segment it merged): transport input need not sum it again.
    pub csum_verified: bool,
}

impl Packet {
    /// An empty packet for `flow`, its data starting after the pool's
    /// headroom. Inline, as `receive`: the packet is built in the
    /// caller's place rather than moved out through the returns.
    #[inline]
    pub fn new(pool: &Pool, flow: Flow) -> Result<Packet, PacketError> {
        let head = pool.alloc(flow).ok_or(PacketError::PoolExhausted)?;
        let headroom = offset(pool.config().headroom);
        Ok(Packet {
            head,
            start: headroom,
            end: headroom,
            chain_len: 0,
            offload: PacketOffload::default(),
            flow,
            chain: ManuallyDrop::new(SegmentList::new()),
        })
    }

    /// A received frame: `fill` writes it into the head buffer after the
    /// headroom (so a router can prepend another link header) and returns
    /// its length, or `None` if there was none (the buffer goes back).
    #[inline]
    pub fn receive(
        pool: &Pool,
        flow: Flow,
        fill: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Result<Option<Packet>, PacketError> {
        Packet::receive_into(pool, flow, |buf| fill(buf.room()))
    }

    /// A received frame, as [`receive`](Self::receive), but `fill` is
    /// handed the head buffer's memory itself: a link whose frame already
    /// lies after the same headroom in memory of the same size exchanges
    /// the two ([`RxBuffer::exchange`]) instead of copying.
    #[inline]
    pub fn receive_into(
        pool: &Pool,
        flow: Flow,
        fill: impl FnOnce(&mut RxBuffer<'_>) -> Option<usize>,
    ) -> Result<Option<Packet>, PacketError> {
        let mut packet = Packet::new(pool, flow)?;
        let start = packet.start as usize;
        let memory = packet.head.memory_mut().ok_or(PacketError::Shared)?;
        let room = memory.len() - start;
        let mut buf = RxBuffer::new(memory, start);
        let Some(len) = fill(&mut buf) else {
            return Ok(None);
        };
        packet.end = offset(start + len.min(room));
        Ok(Some(packet))
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// Asks for what reaching the packet's bytes reads first (its head
    /// buffer's bookkeeping) to be brought into the cache, without waiting:
    /// for a queue to call on the packet it will take next.
    #[inline]
    pub fn prefetch(&self) {
        self.head.prefetch();
    }

    /// The packet's offload metadata.
    pub fn offload(&self) -> PacketOffload {
        self.offload
    }

    /// Sets the packet's offload metadata.
    pub fn set_offload(&mut self, offload: PacketOffload) {
        self.offload = offload;
    }

    /// Changes the flow (a received packet carrying the trace option).
    pub fn set_flow(&mut self, flow: Flow) {
        self.flow = flow;
    }

    /// Bytes in the packet.
    pub fn len(&self) -> usize {
        debug_assert_eq!(
            self.chain_len as usize,
            self.chain.iter().map(Segment::len).sum::<usize>()
        );
        (self.end - self.start) as usize + self.chain_len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of headroom left in front of the data.
    pub fn headroom(&self) -> usize {
        self.start as usize
    }

    /// Bytes of room left after the head buffer's data.
    pub fn tailroom(&self) -> usize {
        if self.chain.is_empty() {
            self.head.len() - self.end as usize
        } else {
            0
        }
    }

    /// Grows the packet at the front by `len` bytes and returns them for a
    /// header to be written: headers of every layer go into the headroom
    /// reserved once, never into a buffer of their own.
    pub fn prepend(&mut self, len: usize) -> Result<&mut [u8], PacketError> {
        let start = self.start as usize;
        if len > start {
            return Err(PacketError::NoHeadroom {
                needed: len,
                available: start,
            });
        }
        let head = self.head.get_mut().ok_or(PacketError::Shared)?;
        self.start = offset(start - len);
        Ok(&mut head[start - len..start])
    }

    /// Keeps only the first `len` bytes (link padding after an IP packet);
    /// nothing happens if the packet is not longer, which is the usual
    /// case and is decided inline.
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.cut(len);
        }
    }

    /// [`truncate`](Self::truncate) of a packet longer than `len`.
    #[inline(never)]
    fn cut(&mut self, len: usize) {
        let head_len = (self.end - self.start) as usize;
        if len <= head_len {
            self.end = self.start + offset(len);
            // Most packets have no chain: no call to clear an empty one.
            if !self.chain.is_empty() {
                self.chain.clear();
                self.chain_len = 0;
            }
            return;
        }
        let mut left = len - head_len;
        let mut keep = 0;
        for segment in self.chain.iter_mut() {
            if left == 0 {
                break;
            }
            if segment.len() > left {
                segment.end = segment.start + offset(left);
            }
            left -= segment.len();
            keep += 1;
        }
        self.chain.truncate(keep);
        // What was wanted of the chain less what it did not have.
        self.chain_len = offset((len - head_len) - left);
    }

    /// Removes `len` bytes from the front (a header consumed on receive).
    #[inline]
    pub fn strip(&mut self, len: usize) -> Result<(), PacketError> {
        // A header inside the head buffer (every received frame's): no
        // walk of the chain for the packet's length.
        if len <= (self.end - self.start) as usize {
            self.start += offset(len);
            return Ok(());
        }
        self.strip_into_chain(len)
    }

    /// [`strip`](Self::strip) of more than the head holds.
    #[inline(never)]
    fn strip_into_chain(&mut self, len: usize) -> Result<(), PacketError> {
        let total = self.len();
        if len > total {
            return Err(PacketError::OutOfRange {
                start: 0,
                end: len,
                len: total,
            });
        }
        let from_head = len.min((self.end - self.start) as usize);
        self.start += offset(from_head);
        let mut rest = len - from_head;
        self.chain_len -= offset(rest);
        while rest > 0 {
            let first = &mut self.chain[0];
            let take = rest.min(first.len());
            first.start += offset(take);
            rest -= take;
            if first.is_empty() {
                self.chain.remove(0);
            }
        }
        Ok(())
    }

    /// Copies `data` into the head buffer after the data (the application's
    /// copy into the stack): a `data_move` span.
    pub fn append_copy(&mut self, data: &[u8]) -> Result<(), PacketError> {
        let _span = probe::span(
            DATA_COPY_ENTER,
            DATA_COPY_EXIT,
            data.len() as u32,
            self.flow,
            0,
        );
        self.append_untimed(data)
    }

    /// [`append_copy`](Self::append_copy) without its span, for a copy
    /// that is not the stack's (a link's) or is timed by the caller.
    fn append_untimed(&mut self, data: &[u8]) -> Result<(), PacketError> {
        let available = self.tailroom();
        if data.len() > available {
            return Err(PacketError::NoTailroom {
                needed: data.len(),
                available,
            });
        }
        let head = self.head.get_mut().ok_or(PacketError::Shared)?;
        let end = self.end as usize;
        head[end..end + data.len()].copy_from_slice(data);
        self.end = offset(end + data.len());
        Ok(())
    }

    /// A packet holding a copy of `data` (an application write of any
    /// size): the head buffer, with headroom for headers, takes what fits
    /// its tailroom and further pool buffers, used whole since headers only
    /// ever go into the head, take the rest as a segment chain. Each copy
    /// is a `data_move` span. If the pool runs out midway, every buffer
    /// taken so far goes back to it.
    pub fn from_payload(pool: &Pool, flow: Flow, data: &[u8]) -> Result<Packet, PacketError> {
        Self::from_parts(pool, flow, &[data])
    }

    /// [`from_payload`](Self::from_payload) of the bytes of `parts` one
    /// after another: a flat copy of scattered data (a copying
    /// fragmentation's fragment), one `data_move` span per buffer filled.
    pub fn from_parts(pool: &Pool, flow: Flow, parts: &[&[u8]]) -> Result<Packet, PacketError> {
        Self::gather(pool, flow, parts, true)
    }

    /// A received `frame` of any length (a GSO super-frame a link handed
    /// out whole) copied into the head and as many further buffers as it
    /// takes. Like [`receive`](Self::receive)'s fill, this is the link's
    /// copy (a NIC's DMA), which no probe times.
    pub fn receive_whole(pool: &Pool, flow: Flow, frame: &[u8]) -> Result<Packet, PacketError> {
        Self::gather(pool, flow, &[frame], false)
    }

    /// A received frame in the bytes a link lent (a super-frame that
    /// crossed a virtual wire, or one the kernel wrote into a receive
    /// slot): the packet's head is that memory, and nothing is copied, or
    /// the lent frame back when `pool` refuses it ([`Pool::lend`]). Its
    /// headroom is only what lies before the frame in that memory (none
    /// from a wire), so such a packet is for input: [`prepend`] on it
    /// fails with `NoHeadroom`, as on any full packet.
    ///
    /// [`prepend`]: Self::prepend
    pub fn lent(pool: &Pool, lent: Lent, flow: Flow) -> Result<Packet, Lent> {
        let range = lent.range();
        // The pool refuses lent memory of 4 GiB: the offsets fit.
        let head = pool.lend(lent, flow)?;
        Ok(Packet {
            head,
            start: offset(range.start),
            end: offset(range.end),
            chain_len: 0,
            offload: PacketOffload::default(),
            flow,
            chain: ManuallyDrop::new(SegmentList::new()),
        })
    }

    /// Copies `parts` into a new packet, each buffer filled past the head
    /// in a `data_move` span if `timed`.
    fn gather(
        pool: &Pool,
        flow: Flow,
        parts: &[&[u8]],
        timed: bool,
    ) -> Result<Packet, PacketError> {
        let mut packet = Packet::new(pool, flow)?;
        let mut remaining: usize = parts.iter().map(|p| p.len()).sum();
        let mut parts = parts.iter().copied().filter(|p| !p.is_empty()).peekable();
        // Into the head while it has room.
        while let Some(part) = parts.peek_mut() {
            let take = part.len().min(packet.tailroom());
            if take == 0 {
                break;
            }
            if timed {
                packet.append_copy(&part[..take])?;
            } else {
                packet.append_untimed(&part[..take])?;
            }
            remaining -= take;
            *part = &part[take..];
            if part.is_empty() {
                parts.next();
            }
        }
        packet.append_copies(pool, &mut parts, remaining, timed)?;
        Ok(packet)
    }

    /// Copies the `remaining` bytes of `parts` into further pool buffers,
    /// used whole since headers only ever go into the head, appended as
    /// segments: one `data_move` span per buffer.
    fn append_copies<'a>(
        &mut self,
        pool: &Pool,
        parts: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>,
        mut remaining: usize,
        timed: bool,
    ) -> Result<(), PacketError> {
        let flow = self.flow;
        while remaining > 0 {
            let mut buffer = pool.alloc(flow).ok_or(PacketError::PoolExhausted)?;
            let bytes = buffer.get_mut().ok_or(PacketError::Shared)?;
            let fill = remaining.min(bytes.len());
            if fill == 0 {
                // A zero-sized buffer could never make progress.
                return Err(PacketError::PoolExhausted);
            }
            {
                let _span = timed
                    .then(|| probe::span(DATA_COPY_ENTER, DATA_COPY_EXIT, fill as u32, flow, 0));
                let mut filled = 0;
                while filled < fill {
                    let Some(part) = parts.peek_mut() else { break };
                    let take = part.len().min(fill - filled);
                    bytes[filled..filled + take].copy_from_slice(&part[..take]);
                    filled += take;
                    *part = &part[take..];
                    if part.is_empty() {
                        parts.next();
                    }
                }
            }
            self.chain.push(Segment {
                buffer,
                start: 0,
                end: offset(fill),
            });
            self.chain_len = grown(self.chain_len, fill);
            remaining -= fill;
        }
        Ok(())
    }

    /// Appends shared payload without copying it. Up to two segments
    /// (an MSS-sized TCP segment's) the chain is inline: no allocation.
    pub fn append_segments(&mut self, segments: impl IntoIterator<Item = Segment>) {
        let mut added = 0;
        self.chain.extend(
            segments
                .into_iter()
                .filter(|segment: &Segment| !segment.is_empty())
                .inspect(|segment| added += segment.len()),
        );
        self.chain_len = grown(self.chain_len, added);
    }

    /// Appends a list of shared payload segments without copying them.
    /// A packet with no chain yet (headers only, as a transport's output
    /// before its payload) takes the list as its chain, moved whole rather
    /// than pushed segment by segment (issue 22: the push loop was about
    /// 280 instructions per TCP segment).
    pub fn append_segment_list(&mut self, mut segments: SegmentList) {
        if !self.chain.is_empty() {
            return self.append_segments(segments);
        }
        // Empty segments are rare: the list is looked at (and its bytes
        // counted) before it is rewritten.
        let (mut bytes, mut empty) = (0, false);
        for segment in &segments {
            bytes += segment.len();
            empty |= segment.is_empty();
        }
        if empty {
            segments.retain(|segment| !segment.is_empty());
        }
        let old = std::mem::replace(&mut *self.chain, segments);
        self.chain_len = grown(0, bytes);
        // The chain replaced is empty: inline it holds nothing to drop, so
        // forgetting it leaks nothing and saves a call to SmallVec's drop
        // (one per TCP segment sent); spilled, its heap room is freed.
        if old.spilled() {
            drop(old);
        } else {
            std::mem::forget(old);
        }
    }

    /// Appends shared payload without copying it.
    pub fn append_segment(&mut self, segment: Segment) {
        if !segment.is_empty() {
            self.chain_len = grown(self.chain_len, segment.len());
            self.chain.push(segment);
        }
    }

    /// [`parts`](Self::parts) in an array of `N`, with how many there
    /// are; `None` when the packet has more than `N` (the caller gathers
    /// it instead). Lets a scatter-gather user hold the parts as one slice
    /// without allocating.
    #[inline]
    pub fn parts_array<const N: usize>(&self) -> Option<([&[u8]; N], usize)> {
        let mut parts: [&[u8]; N] = [&[]; N];
        let count = self.parts_into(&mut parts)?;
        Some((parts, count))
    }

    /// [`parts`](Self::parts) written into `out`, with how many there are;
    /// `None` when the packet has more than `out` takes. The caller's
    /// array is filled where it is, not returned through an `Option`.
    #[inline]
    pub fn parts_into<'a>(&'a self, out: &mut [&'a [u8]]) -> Option<usize> {
        let mut count = 0;
        // As `parts`, without its iterator adaptors: the head, then the
        // chain, empty pieces left out.
        let head = self.head_bytes();
        if !head.is_empty() {
            *out.get_mut(0)? = head;
            count = 1;
        }
        for segment in self.chain.iter() {
            let part = segment.as_slice();
            if !part.is_empty() {
                *out.get_mut(count)? = part;
                count += 1;
            }
        }
        Some(count)
    }

    /// The packet's bytes as contiguous parts, in order: what a
    /// scatter-gather transmit hands to the link.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        std::iter::once(self.head_bytes())
            .chain(self.chain.iter().map(Segment::as_slice))
            .filter(|part| !part.is_empty())
    }

    /// The head buffer's data: the first of [`parts`](Self::parts) when
    /// not empty (a received frame's whole), without the iterator.
    #[inline]
    pub fn head_bytes(&self) -> &[u8] {
        &self.head[self.start as usize..self.end as usize]
    }

    /// Part `index` of [`parts`](Self::parts) without skipping empty ones:
    /// 0 is the head's data, then the chain.
    pub(super) fn part(&self, index: usize) -> Option<&[u8]> {
        match index {
            0 => Some(self.head_bytes()),
            i => self.chain.get(i - 1).map(Segment::as_slice),
        }
    }

    /// The bytes `range` as shared segments, referencing this packet's
    /// buffers instead of copying them (fragmentation, retransmission).
    /// Afterwards the head buffer is shared and can no longer be prepended.
    pub fn segments(&self, range: Range<usize>) -> Result<Vec<Segment>, PacketError> {
        let len = self.len();
        if range.start > range.end || range.end > len {
            return Err(PacketError::OutOfRange {
                start: range.start,
                end: range.end,
                len,
            });
        }
        let head = Segment {
            buffer: self.head.clone(),
            start: self.start,
            end: self.end,
        };
        let mut out = Vec::new();
        let mut offset = 0;
        for segment in std::iter::once(&head).chain(self.chain.iter()) {
            let (seg_start, seg_end) = (offset, offset + segment.len());
            offset = seg_end;
            let from = range.start.max(seg_start);
            let to = range.end.min(seg_end);
            if from < to {
                // In range by construction: from..to lies inside this segment.
                if let Some(piece) = segment.slice(from - seg_start..to - seg_start) {
                    out.push(piece);
                }
            }
        }
        Ok(out)
    }

    /// Copies bytes from `offset` into `out` (the stack's copy to the
    /// application): a `data_move` span. Returns the bytes copied.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> usize {
        let _span = probe::span(
            DATA_COPY_ENTER,
            DATA_COPY_EXIT,
            out.len() as u32,
            self.flow,
            0,
        );
        let mut skip = offset;
        let mut copied = 0;
        for part in self.parts() {
            if copied == out.len() {
                break;
            }
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            let take = (part.len() - skip).min(out.len() - copied);
            out[copied..copied + take].copy_from_slice(&part[skip..skip + take]);
            copied += take;
            skip = 0;
        }
        copied
    }
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .field("chain", &*self.chain)
            .finish()
    }
}
