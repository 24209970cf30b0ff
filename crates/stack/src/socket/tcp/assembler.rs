//! The receive side of a TCP connection: reassembly of segment payloads
//! into a fixed-size ring, and the SACK blocks that describe what is held
//! out of order (RFC 2018, with D-SACK per RFC 2883).
//!
//! Sequence space from RCV.NXT on maps straight onto the ring: the byte at
//! RCV.NXT + k lives k bytes after the last unread byte. Unread in-order
//! bytes occupy the ring from `head`; the rest of the ring is the receive
//! window (RFC 9293 §3.3.1, RCV.WND), where out-of-order payload is written
//! in place at its offset. When the hole before it fills, the data is
//! already where the application will read it, so nothing ever moves.
//!
//! The window's right edge (RCV.NXT + window) never moves left: bytes that
//! become in order advance RCV.NXT and use up exactly as much window, and
//! reading only opens it, so the window never shrinks (RFC 9293 §3.8.6).
//! Out-of-order data always lies inside the window, so it can never
//! overwrite unread bytes.
//!
//! Memory is bounded at creation: the ring, and a list of out-of-order
//! ranges with a configured cap. A segment that would open one more range
//! than the cap is dropped and counted; the sender retransmits it later.
//! Both are allocated when first needed — the ring with the first payload
//! byte, the list with the first hole — so a connection that never
//! receives data (each half-open one of a SYN flood) holds neither.
//!
//! Copies into and out of the ring are `data_move` probe spans (DESIGN.md,
//! "Packet buffers"), recorded for the flow given to
//! [`Assembler::set_flow`].
//!
//! The assembler only handles payload bytes. SYN and FIN occupy sequence
//! numbers too, but where they sit is the caller's business:
//! [`Assembler::start`] takes IRS + 1, and [`Assembler::received_up_to`]
//! tells when everything before a FIN has arrived.

use probe::Flow;
use wire::tcp::MAX_SACK_BLOCKS;

use super::seq::Seq;
use crate::probes::{DATA_COPY_ENTER, DATA_COPY_EXIT};

/// The length of a payload given as parts (see [`Assembler::write`]).
#[inline]
pub fn payload_len(parts: &[&[u8]]) -> usize {
    match parts {
        // A segment received whole: no loop.
        [part] => part.len(),
        parts => parts.iter().map(|part| part.len()).sum(),
    }
}

/// The largest receive buffer: the largest window window scaling can
/// express, 65535 · 2^14 (RFC 7323 §2.3). It also keeps every offset in
/// the window far below 2^31, where sequence comparisons stay meaningful.
pub const MAX_CAPACITY: usize = 0xFFFF << 14;

/// The most out-of-order ranges a configuration may ask for.
pub const MAX_RANGES_LIMIT: usize = 4096;

/// How a receive buffer is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssemblerConfig {
    /// Bytes of the ring (SO_RCVBUF): unread data plus the window.
    pub capacity: usize,
    /// Most out-of-order ranges (hence holes) held at once.
    pub max_ranges: usize,
    /// Whether duplicates are reported with a D-SACK block (RFC 2883).
    pub dsack: bool,
}

impl Default for AssemblerConfig {
    /// 128 KiB, 32 ranges, D-SACK on.
    fn default() -> Self {
        Self {
            capacity: 128 * 1024,
            max_ranges: 32,
            dsack: true,
        }
    }
}

/// A receive-buffer configuration that cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AssemblerConfigError {
    #[error("a receive buffer needs at least one byte")]
    ZeroCapacity,
    #[error("a receive buffer of {capacity} bytes exceeds the largest TCP window, {max} bytes")]
    CapacityTooLarge { capacity: usize, max: usize },
    #[error("{max_ranges} out-of-order ranges exceed the limit of {limit}")]
    TooManyRanges { max_ranges: usize, limit: usize },
}

/// One SACK block: the bytes `start..end`. On the wire these are the left
/// edge and the right edge, "the sequence number immediately following the
/// last sequence number of this block" (RFC 2018 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SackBlock {
    pub start: Seq,
    pub end: Seq,
}

impl SackBlock {
    pub fn new(start: Seq, end: Seq) -> Self {
        Self { start, end }
    }

    /// A block as [`wire::tcp::TcpRepr`] carries it: (left edge, right edge).
    pub fn from_wire((left, right): (u32, u32)) -> Self {
        Self::new(Seq(left), Seq(right))
    }

    pub fn to_wire(self) -> (u32, u32) {
        (self.start.0, self.end.0)
    }

    /// Bytes covered; zero for an empty or inverted block.
    pub fn len(self) -> usize {
        self.end.since(self.start)
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// The blocks of one SACK option, in order, without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: usize,
}

impl SackBlocks {
    /// The blocks of a received option, in their order (the first may be a
    /// D-SACK); absent entries are skipped, and at most
    /// [`MAX_SACK_BLOCKS`] are kept.
    pub fn from_wire(ranges: &[Option<(u32, u32)>]) -> Self {
        let mut blocks = Self::default();
        for range in ranges.iter().flatten() {
            blocks.push(SackBlock::from_wire(*range));
        }
        blocks
    }

    /// The blocks as [`wire::tcp::TcpRepr::sack_ranges`] wants them.
    pub fn to_wire(&self) -> [Option<(u32, u32)>; MAX_SACK_BLOCKS] {
        let mut out = [None; MAX_SACK_BLOCKS];
        for (slot, block) in out.iter_mut().zip(self.as_slice()) {
            *slot = Some(block.to_wire());
        }
        out
    }

    pub fn as_slice(&self) -> &[SackBlock] {
        self.blocks.get(..self.len).unwrap_or(&[])
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a block; ignored when the option is full.
    fn push(&mut self, block: SackBlock) {
        if let Some(slot) = self.blocks.get_mut(self.len) {
            *slot = block;
            self.len += 1;
        }
    }
}

/// What became of a segment's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Disposition {
    /// No payload: nothing to do.
    #[default]
    Empty,
    /// RCV.NXT advanced.
    InOrder,
    /// New bytes were stored above a hole; RCV.NXT did not move (RFC 5681
    /// §4.2: such a segment deserves an immediate duplicate ACK).
    OutOfOrder,
    /// Every byte inside the window had been received already.
    Duplicate,
    /// No byte lay inside the window (RFC 9293 §3.10.7.4: not acceptable;
    /// the caller answers with an ACK).
    BeyondWindow,
    /// The segment would have opened one more out-of-order range than the
    /// cap allows, and was dropped.
    HoleLimit,
}

/// The result of [`Assembler::write`]. Byte counts partition the payload:
/// `new_bytes + duplicate_bytes + trimmed_bytes + dropped_bytes` is its
/// length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOutcome {
    pub disposition: Disposition,
    /// How far RCV.NXT advanced: this segment's bytes plus any
    /// out-of-order data it joined up with.
    pub advanced: usize,
    /// Bytes stored that were not held before.
    pub new_bytes: usize,
    /// Bytes received before: below RCV.NXT or already held out of order.
    /// They are not written again, so a differing copy cannot corrupt data.
    pub duplicate_bytes: usize,
    /// Bytes at or beyond the window's right edge, discarded (RFC 9293
    /// §3.10.7.4).
    pub trimmed_bytes: usize,
    /// In-window bytes discarded because of the range cap.
    pub dropped_bytes: usize,
    /// Whether new bytes landed below out-of-order data, filling all or
    /// part of a gap (RFC 5681 §4.2: ACK immediately).
    pub fills_gap: bool,
}

impl WriteOutcome {
    /// Some bytes were new and some had been received before.
    pub fn is_partial_duplicate(&self) -> bool {
        self.new_bytes > 0 && self.duplicate_bytes > 0
    }

    /// Some bytes lay beyond the window.
    pub fn was_trimmed(&self) -> bool {
        self.trimmed_bytes > 0
    }
}

/// Counters of a receive buffer, since [`Assembler::new`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AssemblerCounters {
    /// Writes with payload.
    pub segments: u64,
    pub in_order: u64,
    pub out_of_order: u64,
    /// Segments with nothing new in the window.
    pub duplicates: u64,
    /// Segments with both new and already received bytes.
    pub partial_duplicates: u64,
    pub duplicate_bytes: u64,
    /// Segments with no byte in the window.
    pub beyond_window: u64,
    /// Segments cut at the window's right edge (including those wholly
    /// beyond it).
    pub trimmed: u64,
    pub trimmed_bytes: u64,
    /// Segments dropped because the out-of-order range cap was reached.
    pub hole_limit_drops: u64,
    pub hole_limit_bytes: u64,
    /// Bytes the application consumed.
    pub bytes_read: u64,
}

/// Received bytes `start..end`, above RCV.NXT, not yet in order. `stamp`
/// orders ranges by when a segment last landed in them, which is what
/// RFC 2018 §4 orders SACK blocks by.
#[derive(Debug, Clone, Copy)]
struct Range {
    start: Seq,
    end: Seq,
    stamp: u64,
}

impl Range {
    fn block(self) -> SackBlock {
        SackBlock::new(self.start, self.end)
    }
}

/// A connection's receive buffer. See the module documentation.
#[derive(Debug)]
pub struct Assembler {
    /// Empty until the first payload byte arrives, then `capacity` bytes.
    ring: Box<[u8]>,
    capacity: usize,
    /// Ring index of the first unread byte.
    head: usize,
    /// In-order bytes not yet read.
    unread: usize,
    rcv_nxt: Seq,
    /// Sorted, disjoint and never adjacent (adjacent ranges merge), all
    /// inside the window; at most `max_ranges`.
    ranges: Vec<Range>,
    max_ranges: usize,
    dsack_enabled: bool,
    /// The duplicate in the most recent segment, to report once.
    dsack: Option<SackBlock>,
    /// Bytes that became in order since `start` (saturating): data below
    /// RCV.NXT further back than this was never received, so it is not a
    /// duplicate to D-SACK.
    delivered: u64,
    /// Incremented for every segment with bytes in the window.
    stamp: u64,
    flow: Flow,
    counters: AssemblerCounters,
}

impl Assembler {
    /// An empty buffer expecting sequence number 0; [`start`](Self::start)
    /// sets RCV.NXT once the peer's SYN has arrived.
    pub fn new(config: AssemblerConfig) -> Result<Self, AssemblerConfigError> {
        if config.capacity == 0 {
            return Err(AssemblerConfigError::ZeroCapacity);
        }
        if config.capacity > MAX_CAPACITY {
            return Err(AssemblerConfigError::CapacityTooLarge {
                capacity: config.capacity,
                max: MAX_CAPACITY,
            });
        }
        if config.max_ranges > MAX_RANGES_LIMIT {
            return Err(AssemblerConfigError::TooManyRanges {
                max_ranges: config.max_ranges,
                limit: MAX_RANGES_LIMIT,
            });
        }
        Ok(Self {
            ring: Box::default(),
            capacity: config.capacity,
            head: 0,
            unread: 0,
            rcv_nxt: Seq(0),
            ranges: Vec::new(),
            max_ranges: config.max_ranges,
            dsack_enabled: config.dsack,
            dsack: None,
            delivered: 0,
            stamp: 0,
            flow: Flow::NONE,
            counters: AssemblerCounters::default(),
        })
    }

    /// The flow the copy probes are recorded for.
    pub fn set_flow(&mut self, flow: Flow) {
        self.flow = flow;
    }

    /// Empties the buffer and expects `rcv_nxt` next (IRS + 1 once the SYN
    /// is in). Counters keep counting.
    pub fn start(&mut self, rcv_nxt: Seq) {
        self.head = 0;
        self.unread = 0;
        self.rcv_nxt = rcv_nxt;
        self.ranges.clear();
        self.dsack = None;
        self.delivered = 0;
        self.stamp = 0;
    }

    /// RCV.NXT: the next sequence number expected.
    pub fn rcv_nxt(&self) -> Seq {
        self.rcv_nxt
    }

    /// Whether every byte before `seq` has arrived, e.g. `seq` being the
    /// position of a FIN that came early.
    pub fn received_up_to(&self, seq: Seq) -> bool {
        seq <= self.rcv_nxt
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Allocates the ring now if it is not yet: a connection calls this
    /// when its handshake completes, so the allocation is not part of
    /// taking its first data segment.
    pub fn reserve(&mut self) {
        if self.ring.is_empty() {
            self.ring = vec![0; self.capacity].into_boxed_slice();
        }
    }

    /// Bytes of memory the buffer holds beyond its own struct: the ring
    /// once allocated, and the range list.
    pub fn heap_bytes(&self) -> usize {
        self.ring.len() + self.ranges.capacity() * std::mem::size_of::<Range>()
    }

    /// In-order bytes the application can read.
    pub fn readable(&self) -> usize {
        self.unread
    }

    /// Free space from RCV.NXT on: the most the receive window may offer.
    pub fn window(&self) -> usize {
        self.capacity() - self.unread
    }

    /// Whether data is held out of order: RFC 2018 §4 wants SACK options
    /// on every ACK while it is.
    pub fn has_holes(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// Out-of-order ranges held.
    pub fn hole_count(&self) -> usize {
        self.ranges.len()
    }

    /// The out-of-order ranges, lowest first.
    pub fn out_of_order(&self) -> impl Iterator<Item = SackBlock> + '_ {
        self.ranges.iter().map(|r| r.block())
    }

    pub fn counters(&self) -> &AssemblerCounters {
        &self.counters
    }

    /// Takes in a segment's payload starting at `seq`, given as the parts
    /// it lies in (their concatenation, in order, is the payload: see
    /// [`Connection::input`](super::connection::Connection::input)). Only
    /// bytes inside the window are kept, and only those not already held
    /// are written, each straight from its part into the ring.
    pub fn write(&mut self, seq: Seq, data: &[&[u8]]) -> WriteOutcome {
        let data_len = payload_len(data);
        // The common case, a segment at RCV.NXT that fits the window with
        // nothing held out of order: appended, no range bookkeeping. What
        // the general path below does for it, exactly.
        if seq == self.rcv_nxt && self.ranges.is_empty() && data_len <= self.window() {
            return self.write_in_order(data, data_len);
        }
        self.write_general(seq, data, data_len)
    }

    /// [`write`](Self::write) of `len` > 0 bytes at RCV.NXT, within the
    /// window, while no range is held.
    #[inline]
    fn write_in_order(&mut self, data: &[&[u8]], len: usize) -> WriteOutcome {
        if len == 0 {
            return WriteOutcome::default();
        }
        self.counters.segments += 1;
        self.counters.in_order += 1;
        // RFC 2883 §4: this segment carries no duplicate.
        self.dsack = None;
        self.copy_in(0, data, 0..len);
        self.stamp = self.stamp.wrapping_add(1);
        self.rcv_nxt += len;
        self.unread += len;
        self.delivered = self.delivered.saturating_add(len as u64);
        WriteOutcome {
            disposition: Disposition::InOrder,
            advanced: len,
            new_bytes: len,
            ..WriteOutcome::default()
        }
    }

    /// [`write`](Self::write) of any segment.
    fn write_general(&mut self, seq: Seq, data: &[&[u8]], data_len: usize) -> WriteOutcome {
        let mut outcome = WriteOutcome::default();
        if data_len == 0 {
            return outcome;
        }
        self.counters.segments += 1;
        // RFC 2883 §4: a D-SACK block reports a duplicate in the packet
        // that triggered this ACK, nothing older.
        self.dsack = None;

        // Offsets from RCV.NXT; a slice is at most isize::MAX long, and the
        // sequence difference is within ±2^31, so i64 holds everything.
        let start = seq - self.rcv_nxt;
        let len = i64::try_from(data_len).unwrap_or(i64::MAX);
        let end = start.saturating_add(len);
        let window = self.window() as i64;

        // RFC 9293 §3.10.7.4: of a segment straddling RCV.NXT only the new
        // part is processed, and what lies at or past RCV.NXT + RCV.WND is
        // trimmed off.
        let old = (end.min(0) - start).max(0);
        let beyond = (end - start.max(window)).max(0);
        outcome.duplicate_bytes = old as usize;
        outcome.trimmed_bytes = beyond as usize;
        if old > 0 {
            self.note_old_duplicate(start, end);
        }
        let lo = start.max(0);
        let hi = end.min(window);
        if lo < hi {
            self.store(
                lo as usize,
                hi as usize,
                data,
                (lo - start) as usize,
                &mut outcome,
            );
        }

        if outcome.disposition != Disposition::HoleLimit {
            outcome.disposition = if outcome.advanced > 0 {
                Disposition::InOrder
            } else if outcome.new_bytes > 0 {
                Disposition::OutOfOrder
            } else if outcome.duplicate_bytes > 0 {
                Disposition::Duplicate
            } else {
                Disposition::BeyondWindow
            };
        }
        self.count(&outcome);
        outcome
    }

    /// Records a D-SACK for the part of a segment below RCV.NXT, if that
    /// part was really received before (RFC 2883 §4.1.1).
    fn note_old_duplicate(&mut self, start: i64, end: i64) {
        if !self.dsack_enabled {
            return;
        }
        let delivered = i64::try_from(self.delivered).unwrap_or(i64::MAX);
        let lo = start.max(-delivered);
        let hi = end.min(0);
        if lo < hi {
            self.dsack = Some(SackBlock::new(self.seq_at(lo), self.seq_at(hi)));
        }
    }

    /// Stores the window part `lo..hi` (offsets from RCV.NXT) of a segment
    /// whose byte at `lo` is byte `data_lo` of `data`'s parts, then merges
    /// ranges and advances RCV.NXT.
    fn store(
        &mut self,
        lo: usize,
        hi: usize,
        data: &[&[u8]],
        data_lo: usize,
        outcome: &mut WriteOutcome,
    ) {
        let rcv_nxt = self.rcv_nxt;
        let off = |s: Seq| s.since(rcv_nxt);
        // Ranges overlapping or adjacent to lo..hi are i..j.
        let i = self.ranges.partition_point(|r| off(r.end) < lo);
        let j = self.ranges.partition_point(|r| off(r.start) <= hi);
        if lo > 0 && i == j && self.ranges.len() >= self.max_ranges {
            outcome.disposition = Disposition::HoleLimit;
            outcome.dropped_bytes = hi - lo;
            return;
        }

        // Write only the gaps between held ranges: held bytes stay as first
        // received.
        let mut cursor = lo;
        let mut covered = 0;
        let mut first_dup = None;
        for k in i..j {
            let Some(&range) = self.ranges.get(k) else {
                break;
            };
            let (rs, re) = (off(range.start), off(range.end));
            if rs > cursor {
                self.copy_in(cursor, data, data_lo + (cursor - lo)..data_lo + (rs - lo));
                outcome.fills_gap = true;
            }
            let (dup_lo, dup_hi) = (rs.max(lo), re.min(hi));
            if dup_lo < dup_hi {
                covered += dup_hi - dup_lo;
                first_dup.get_or_insert((dup_lo, dup_hi));
            }
            cursor = cursor.max(re);
        }
        if cursor < hi {
            self.copy_in(cursor, data, data_lo + (cursor - lo)..data_lo + (hi - lo));
            outcome.fills_gap |= j < self.ranges.len();
        }
        outcome.new_bytes = (hi - lo) - covered;
        outcome.duplicate_bytes += covered;
        if let (Some((a, b)), true, None) = (first_dup, self.dsack_enabled, self.dsack) {
            self.dsack = Some(SackBlock::new(rcv_nxt + a, rcv_nxt + b));
        }

        // One range replaces i..j and this segment; it carries the newest
        // stamp, being where the latest segment landed (RFC 2018 §4).
        let mut merged = (lo, hi);
        if i < j {
            if let (Some(first), Some(last)) = (self.ranges.get(i), self.ranges.get(j - 1)) {
                merged = (lo.min(off(first.start)), hi.max(off(last.end)));
            }
        }
        self.ranges.drain(i..j);
        self.stamp = self.stamp.wrapping_add(1);
        if merged.0 == 0 {
            self.rcv_nxt += merged.1;
            self.unread += merged.1;
            self.delivered = self.delivered.saturating_add(merged.1 as u64);
            outcome.advanced = merged.1;
        } else {
            // The cap was checked above: either a range was drained here or
            // there was room; the list grows only within it.
            super::scoreboard::grow_within(&mut self.ranges, self.max_ranges);
            self.ranges.insert(
                i,
                Range {
                    start: rcv_nxt + merged.0,
                    end: rcv_nxt + merged.1,
                    stamp: self.stamp,
                },
            );
        }
    }

    /// Copies the bytes `range` of `data`'s parts into the window at
    /// `offset` from RCV.NXT: one copy (one `data_move` span) however many
    /// parts they lie in. Callers keep `offset + range.len()` within the
    /// window, which lies wholly in the free part of the ring, and `range`
    /// within the parts.
    fn copy_in(&mut self, offset: usize, data: &[&[u8]], range: core::ops::Range<usize>) {
        let cap = self.capacity();
        if range.is_empty() {
            return;
        }
        self.reserve();
        let mut at = self.wrap(self.head + self.unread + offset);
        let _span = probe::span_with(DATA_COPY_ENTER, DATA_COPY_EXIT, self.flow, || {
            (range.len() as u32, 0)
        });
        for bytes in crate::buffer::pieces(data, range) {
            let first = bytes.len().min(cap - at);
            let (a, b) = bytes.split_at(first);
            self.ring[at..at + first].copy_from_slice(a);
            self.ring[..b.len()].copy_from_slice(b);
            at = self.wrap(at + bytes.len());
        }
    }

    /// `position` modulo the capacity. Ring positions are computed as a
    /// position in the ring plus at most one capacity, so a compare and a
    /// subtraction do, not a division (two per segment taken); any larger
    /// value still takes the `%`.
    #[inline]
    fn wrap(&self, position: usize) -> usize {
        let cap = self.capacity();
        if position < cap {
            position
        } else if position - cap < cap {
            position - cap
        } else {
            position % cap
        }
    }

    /// The sequence number `offset` bytes from RCV.NXT (negative: before).
    fn seq_at(&self, offset: i64) -> Seq {
        // Two's complement wrapping is exactly modulo-2^32 arithmetic.
        Seq(self.rcv_nxt.0.wrapping_add(offset as u32))
    }

    fn count(&mut self, outcome: &WriteOutcome) {
        let c = &mut self.counters;
        match outcome.disposition {
            Disposition::Empty => {}
            Disposition::InOrder => c.in_order += 1,
            Disposition::OutOfOrder => c.out_of_order += 1,
            Disposition::Duplicate => c.duplicates += 1,
            Disposition::BeyondWindow => c.beyond_window += 1,
            Disposition::HoleLimit => {
                c.hole_limit_drops += 1;
                c.hole_limit_bytes += outcome.dropped_bytes as u64;
            }
        }
        if outcome.is_partial_duplicate() {
            c.partial_duplicates += 1;
        }
        c.duplicate_bytes += outcome.duplicate_bytes as u64;
        if outcome.was_trimmed() {
            c.trimmed += 1;
            c.trimmed_bytes += outcome.trimmed_bytes as u64;
        }
    }

    /// The unread in-order bytes, as the ring holds them: a first slice and
    /// the wrapped-around rest (often empty).
    pub fn peek(&self) -> (&[u8], &[u8]) {
        let end = self.head + self.unread;
        let cap = self.capacity();
        if self.unread == 0 {
            // Nothing unread (and perhaps no ring yet).
            return (&[], &[]);
        }
        if end <= cap {
            (&self.ring[self.head..end], &[])
        } else {
            (&self.ring[self.head..], &self.ring[..end - cap])
        }
    }

    /// Frees the first `n` unread bytes (at most all of them), opening the
    /// window; returns how many.
    pub fn consume(&mut self, n: usize) -> usize {
        let n = n.min(self.unread);
        self.head = self.wrap(self.head + n);
        self.unread -= n;
        // Emptied with nothing out of order: every position is free, so the
        // next byte may as well go where the last ones did, in memory still
        // in the cache, instead of marching through the whole ring (a 4 MiB
        // ring read as promptly as it fills touched 4 MiB; now the bytes
        // between two reads). Out-of-order data sits at positions relative
        // to head + unread, so with any held, head stays.
        if self.unread == 0 && self.ranges.is_empty() {
            self.head = 0;
        }
        self.counters.bytes_read += n as u64;
        n
    }

    /// Copies up to `out.len()` in-order bytes to the application and frees
    /// them; returns how many.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.unread);
        if n == 0 {
            return 0;
        }
        {
            let (a, b) = self.peek();
            let first = n.min(a.len());
            let _span = probe::span(DATA_COPY_ENTER, DATA_COPY_EXIT, n as u32, self.flow, 0);
            out[..first].copy_from_slice(&a[..first]);
            out[first..n].copy_from_slice(&b[..n - first]);
        }
        self.consume(n)
    }

    /// The SACK blocks for an ACK being sent now, at most `max_blocks`
    /// (and at most 4; 3 beside timestamps, RFC 2018 §3).
    ///
    /// RFC 2018 §4: the first block holds the segment that triggered this
    /// ACK, then the most recently reported others; since every segment
    /// landing out of order makes its range the first block, "most
    /// recently reported" is "most recently landed in". With D-SACK, the
    /// duplicate comes first and the range containing it second (RFC 2883
    /// §4); a D-SACK is reported once, so this call consumes it.
    pub fn sack_blocks(&mut self, max_blocks: usize) -> SackBlocks {
        let max = max_blocks.min(MAX_SACK_BLOCKS);
        let mut out = SackBlocks::default();
        if max == 0 {
            return out;
        }
        let mut skip = None;
        if let Some(dsack) = self.dsack.take() {
            out.push(dsack);
            let containing = self
                .ranges
                .iter()
                .find(|r| r.start <= dsack.start && dsack.end <= r.end);
            if let Some(range) = containing {
                if out.len() < max {
                    out.push(range.block());
                }
                skip = Some(range.stamp);
            }
        }
        // Stamps are unique, so picking the newest below the last pick walks
        // the ranges newest first without sorting or allocating.
        let mut newer_than_all: Option<u64> = None;
        while out.len() < max {
            let next = self
                .ranges
                .iter()
                .filter(|r| newer_than_all.is_none_or(|bound| r.stamp < bound))
                .max_by_key(|r| r.stamp);
            let Some(range) = next else {
                break;
            };
            newer_than_all = Some(range.stamp);
            if skip != Some(range.stamp) {
                out.push(range.block());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn assembler(capacity: usize, max_ranges: usize) -> Assembler {
        Assembler::new(AssemblerConfig {
            capacity,
            max_ranges,
            dsack: true,
        })
        .unwrap()
    }

    /// `wrap` (a compare and subtraction below twice the capacity) is `%`
    /// by the capacity at every position, past twice it too.
    #[test]
    fn wrap_is_the_position_modulo_the_capacity() {
        for capacity in [1, 7, 4096] {
            let a = assembler(capacity, 4);
            for position in (0..3 * capacity + 2).chain([usize::MAX - 1, usize::MAX]) {
                assert_eq!(a.wrap(position), position % capacity);
            }
        }
    }

    fn read_all(a: &mut Assembler) -> Vec<u8> {
        let mut out = vec![0; a.readable()];
        let n = a.read(&mut out);
        out.truncate(n);
        out
    }

    fn block(start: u32, end: u32) -> SackBlock {
        SackBlock::new(Seq(start), Seq(end))
    }

    fn bytes(range: std::ops::Range<u32>) -> Vec<u8> {
        range.map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn an_emptied_buffer_starts_again_at_the_front_of_its_ring() {
        let mut a = assembler(100, 4);
        a.start(Seq(0));
        a.write(Seq(0), &[&bytes(0..90)]);
        assert_eq!(read_all(&mut a), bytes(0..90));
        // Read empty with nothing out of order: the next bytes lie in one
        // piece at the front rather than split across the ring's end.
        a.write(Seq(90), &[&bytes(90..110)]);
        let (first, rest) = a.peek();
        assert_eq!((first, rest), (&bytes(90..110)[..], &[][..]));
        assert_eq!(a.window(), 80);

        // With data held out of order the head stays where it is, since
        // that data's place is relative to it: it must still read back.
        let mut b = assembler(100, 4);
        b.start(Seq(0));
        b.write(Seq(0), &[&bytes(0..90)]);
        b.write(Seq(92), &[&bytes(92..100)]);
        assert_eq!(read_all(&mut b), bytes(0..90));
        b.write(Seq(100), &[&bytes(100..105)]);
        b.write(Seq(90), &[&bytes(90..92)]);
        let (first, rest) = b.peek();
        assert_eq!([first, rest].concat(), bytes(90..105));
        assert_eq!((first.len(), rest.len()), (10, 5));
    }

    #[test]
    fn rejects_unworkable_configurations() {
        let config = AssemblerConfig::default();
        let zero = AssemblerConfig {
            capacity: 0,
            ..config
        };
        assert_eq!(
            Assembler::new(zero).unwrap_err(),
            AssemblerConfigError::ZeroCapacity
        );
        let huge = AssemblerConfig {
            capacity: MAX_CAPACITY + 1,
            ..config
        };
        assert!(matches!(
            Assembler::new(huge),
            Err(AssemblerConfigError::CapacityTooLarge { .. })
        ));
        let ranges = AssemblerConfig {
            max_ranges: MAX_RANGES_LIMIT + 1,
            ..config
        };
        assert!(matches!(
            Assembler::new(ranges),
            Err(AssemblerConfigError::TooManyRanges { .. })
        ));
    }

    #[test]
    fn in_order_writes_read_back_exactly() {
        let mut a = assembler(1000, 8);
        a.start(Seq(100));
        let stream = bytes(0..700);
        for (k, chunk) in stream.chunks(100).enumerate() {
            let outcome = a.write(Seq(100) + k * 100, &[chunk]);
            assert_eq!(outcome.disposition, Disposition::InOrder);
            assert_eq!(outcome.advanced, 100);
            assert_eq!(outcome.new_bytes, 100);
            assert!(!outcome.fills_gap);
        }
        assert_eq!(a.rcv_nxt(), Seq(800));
        assert_eq!(a.readable(), 700);
        assert_eq!(a.window(), 300);
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let n = a.read(&mut buf);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, stream);
        assert_eq!(a.window(), 1000);
        assert_eq!(a.counters().in_order, 7);
        assert_eq!(a.counters().bytes_read, 700);
    }

    #[test]
    fn a_payload_in_parts_is_written_as_their_concatenation() {
        // Two assemblers take the same segments, one as single slices, the
        // other cut into uneven parts (one empty); the first lands past
        // the ring's end, the last straddles it and overlaps held data on
        // both sides.
        let stream = bytes(0..1200);
        let mut whole = assembler(1000, 8);
        let mut parted = assembler(1000, 8);
        for a in [&mut whole, &mut parted] {
            a.start(Seq(0));
            a.write(Seq(0), &[&stream[..700]]);
            assert_eq!(read_all(a), &stream[..700]);
        }
        let segments = [(1010, 1200), (700, 900), (880, 1020)];
        for (lo, hi) in segments {
            let seq = Seq(lo as u32);
            let one = whole.write(seq, &[&stream[lo..hi]]);
            let (a, rest) = stream[lo..hi].split_at(3);
            let (b, rest) = rest.split_at(40);
            let (c, d) = rest.split_at(1);
            let parts = parted.write(seq, &[a, &[], b, c, d]);
            assert_eq!(parts, one, "{lo}..{hi}");
        }
        assert!(!parted.has_holes());
        assert_eq!(read_all(&mut parted), &stream[700..]);
        assert_eq!(read_all(&mut whole), &stream[700..]);
        assert_eq!(payload_len(&[&[1, 2], &[], &[3]]), 3);
    }

    #[test]
    fn out_of_order_segments_fill_holes_and_release_in_order() {
        let mut a = assembler(1000, 8);
        a.start(Seq(0));
        let stream = bytes(0..300);
        let third = a.write(Seq(200), &[&stream[200..300]]);
        assert_eq!(third.disposition, Disposition::OutOfOrder);
        assert_eq!((third.advanced, third.new_bytes), (0, 100));
        assert!(!third.fills_gap);
        let second = a.write(Seq(100), &[&stream[100..200]]);
        assert_eq!(second.disposition, Disposition::OutOfOrder);
        // Below the held range: part of the gap filled (RFC 5681 §4.2).
        assert!(second.fills_gap);
        assert_eq!(a.hole_count(), 1, "adjacent ranges merge");
        assert_eq!(a.readable(), 0);
        assert_eq!(a.window(), 1000, "out-of-order data sits inside the window");
        let first = a.write(Seq(0), &[&stream[0..100]]);
        assert_eq!(first.disposition, Disposition::InOrder);
        assert_eq!(first.advanced, 300);
        assert!(first.fills_gap);
        assert!(!a.has_holes());
        assert_eq!(read_all(&mut a), stream);
    }

    #[test]
    fn duplicates_and_overlaps_are_counted_and_never_overwrite() {
        let mut a = assembler(1000, 8);
        a.start(Seq(0));
        a.write(Seq(10), &[&[1; 10]]);
        // Overlaps the held 10..20 with different bytes: only 5..10 and
        // 20..25 are new.
        let overlap = a.write(Seq(5), &[&[2; 20]]);
        assert_eq!(overlap.disposition, Disposition::OutOfOrder);
        assert_eq!((overlap.new_bytes, overlap.duplicate_bytes), (10, 10));
        assert!(overlap.is_partial_duplicate());
        let dup = a.write(Seq(12), &[&[3; 5]]);
        assert_eq!(dup.disposition, Disposition::Duplicate);
        assert_eq!((dup.new_bytes, dup.duplicate_bytes), (0, 5));
        let head = a.write(Seq(0), &[&[4; 5]]);
        assert_eq!(head.advanced, 25);
        let mut expected = vec![4; 5];
        expected.extend([2; 5]);
        expected.extend([1; 10]);
        expected.extend([2; 5]);
        assert_eq!(read_all(&mut a), expected);

        // Wholly below RCV.NXT, and straddling it.
        let old = a.write(Seq(0), &[&[9; 25]]);
        assert_eq!(old.disposition, Disposition::Duplicate);
        assert_eq!(old.duplicate_bytes, 25);
        let straddle = a.write(Seq(20), &[&[5; 10]]);
        assert_eq!(straddle.disposition, Disposition::InOrder);
        assert_eq!((straddle.advanced, straddle.duplicate_bytes), (5, 5));
        assert_eq!(read_all(&mut a), vec![5; 5]);

        let c = a.counters();
        assert_eq!(c.duplicates, 2);
        assert_eq!(c.partial_duplicates, 2);
        assert_eq!(c.duplicate_bytes, 10 + 5 + 25 + 5);
    }

    #[test]
    fn writes_beyond_the_window_are_trimmed() {
        let mut a = assembler(100, 8);
        a.start(Seq(1000));
        let stream = bytes(0..200);
        let big = a.write(Seq(1000), &[&stream[..150]]);
        assert_eq!(big.disposition, Disposition::InOrder);
        assert_eq!((big.advanced, big.trimmed_bytes), (100, 50));
        assert_eq!(a.window(), 0);
        // A zero-window probe: nothing fits.
        let probe = a.write(Seq(1100), &[&stream[100..101]]);
        assert_eq!(probe.disposition, Disposition::BeyondWindow);
        assert_eq!(probe.trimmed_bytes, 1);
        let mut buf = [0u8; 30];
        assert_eq!(a.read(&mut buf), 30);
        assert_eq!(a.window(), 30);
        // Out of order and straddling the right edge 1130.
        let edge = a.write(Seq(1120), &[&stream[120..140]]);
        assert_eq!(edge.disposition, Disposition::OutOfOrder);
        assert_eq!((edge.new_bytes, edge.trimmed_bytes), (10, 10));
        let far = a.write(Seq(1500), &[&stream[..10]]);
        assert_eq!(far.disposition, Disposition::BeyondWindow);
        let fill = a.write(Seq(1100), &[&stream[100..130]]);
        assert_eq!(fill.advanced, 30);
        assert_eq!(a.window(), 0);
        let mut rest = vec![0u8; 100];
        assert_eq!(a.read(&mut rest), 100);
        assert_eq!(rest, stream[30..130]);
        let c = a.counters();
        assert_eq!(
            (c.beyond_window, c.trimmed, c.trimmed_bytes),
            (2, 4, 50 + 1 + 10 + 10)
        );
    }

    #[test]
    fn the_hole_cap_drops_and_counts_without_growing() {
        let mut a = assembler(1000, 2);
        a.start(Seq(0));
        a.write(Seq(10), &[&[1; 5]]);
        a.write(Seq(30), &[&[1; 5]]);
        let capacity_before = a.ranges.capacity();
        let third = a.write(Seq(50), &[&[1; 5]]);
        assert_eq!(third.disposition, Disposition::HoleLimit);
        assert_eq!((third.new_bytes, third.dropped_bytes), (0, 5));
        assert_eq!(a.hole_count(), 2);
        // Extending or joining held ranges needs no new range.
        let join = a.write(Seq(15), &[&[1; 15]]);
        assert_eq!(join.disposition, Disposition::OutOfOrder);
        assert_eq!(a.hole_count(), 1);
        let again = a.write(Seq(50), &[&[1; 5]]);
        assert_eq!(again.disposition, Disposition::OutOfOrder);
        // In-order data is never refused.
        let head = a.write(Seq(0), &[&[1; 10]]);
        assert_eq!(head.advanced, 35);
        assert_eq!(a.ranges.capacity(), capacity_before);
        assert_eq!(a.counters().hole_limit_drops, 1);
        assert_eq!(a.counters().hole_limit_bytes, 5);

        let mut none = assembler(100, 0);
        assert_eq!(
            none.write(Seq(1), &[&[1]]).disposition,
            Disposition::HoleLimit
        );
        assert_eq!(none.write(Seq(0), &[&[1, 2]]).advanced, 2);
    }

    #[test]
    fn sequence_numbers_wrap_at_2_pow_32() {
        let isn = Seq(u32::MAX - 5);
        let mut a = assembler(64, 4);
        a.start(isn);
        let stream = bytes(0..40);
        // Out of order across the wrap, then the head.
        let late = a.write(isn + 4, &[&stream[4..20]]);
        assert_eq!(late.disposition, Disposition::OutOfOrder);
        assert_eq!(
            a.out_of_order().next(),
            Some(SackBlock::new(isn + 4, Seq(14)))
        );
        let head = a.write(isn, &[&stream[..4]]);
        assert_eq!(head.advanced, 20);
        assert_eq!(a.rcv_nxt(), Seq(14));
        assert!(a.received_up_to(Seq(14)));
        assert!(a.received_up_to(isn + 1));
        assert!(!a.received_up_to(Seq(15)));
        let tail = a.write(Seq(14), &[&stream[20..40]]);
        assert_eq!(tail.advanced, 20);
        assert_eq!(read_all(&mut a), stream);
    }

    #[test]
    fn ring_positions_survive_the_buffer_emptying() {
        // Out-of-order data must stay put while the reader drains the ring
        // and the ring wraps.
        let mut a = assembler(16, 4);
        a.start(Seq(0));
        let stream = bytes(0..40);
        a.write(Seq(0), &[&stream[..10]]);
        a.write(Seq(12), &[&stream[12..16]]);
        assert_eq!(read_all(&mut a), stream[..10]);
        assert_eq!(a.write(Seq(10), &[&stream[10..12]]).advanced, 6);
        a.write(Seq(20), &[&stream[20..26]]);
        a.write(Seq(16), &[&stream[16..20]]);
        assert_eq!(a.window(), 0);
        let (first, second) = a.peek();
        assert!(!second.is_empty(), "the unread bytes wrap around the ring");
        assert_eq!([first, second].concat(), stream[10..26]);
        assert_eq!(a.consume(100), 16);
        a.write(Seq(30), &[&stream[30..36]]);
        a.write(Seq(26), &[&stream[26..30]]);
        assert_eq!(read_all(&mut a), stream[26..36]);
    }

    /// RFC 2018 §5, case 3: 500-byte segments from 5000, the 2nd, 4th, 6th
    /// and 8th lost, then the 4th and 2nd arriving late.
    #[test]
    fn sack_blocks_follow_rfc_2018_worked_example() {
        let mut a = assembler(8192, 8);
        a.start(Seq(5000));
        let sent = |a: &mut Assembler, seq: u32| {
            a.write(Seq(seq), &[&[0; 500]]);
            (a.rcv_nxt(), a.sack_blocks(MAX_SACK_BLOCKS))
        };
        let (ack, sack) = sent(&mut a, 5000);
        assert_eq!((ack, sack.as_slice()), (Seq(5500), &[][..]));
        let (ack, sack) = sent(&mut a, 6000);
        assert_eq!(ack, Seq(5500));
        assert_eq!(sack.as_slice(), [block(6000, 6500)]);
        let (_, sack) = sent(&mut a, 7000);
        assert_eq!(sack.as_slice(), [block(7000, 7500), block(6000, 6500)]);
        let (_, sack) = sent(&mut a, 8000);
        assert_eq!(
            sack.as_slice(),
            [block(8000, 8500), block(7000, 7500), block(6000, 6500)]
        );
        let (ack, sack) = sent(&mut a, 6500);
        assert_eq!(ack, Seq(5500));
        assert_eq!(sack.as_slice(), [block(6000, 7500), block(8000, 8500)]);
        let (ack, sack) = sent(&mut a, 5500);
        assert_eq!(ack, Seq(7500));
        assert_eq!(sack.as_slice(), [block(8000, 8500)]);
    }

    #[test]
    fn sack_blocks_respect_the_block_limit_and_recency() {
        let mut a = assembler(8192, 8);
        a.start(Seq(0));
        for seq in [100, 300, 500, 700, 900] {
            a.write(Seq(seq), &[&[0; 10]]);
        }
        // A duplicate landing in an old range makes it the first block.
        a.write(Seq(300), &[&[0; 10]]);
        a.dsack = None;
        let three = a.sack_blocks(MAX_SACK_BLOCKS_WITH_TIMESTAMPS_FOR_TEST);
        assert_eq!(
            three.as_slice(),
            [block(300, 310), block(900, 910), block(700, 710)]
        );
        assert_eq!(a.sack_blocks(9).len(), MAX_SACK_BLOCKS);
        assert!(a.sack_blocks(0).is_empty());
    }

    const MAX_SACK_BLOCKS_WITH_TIMESTAMPS_FOR_TEST: usize =
        wire::tcp::MAX_SACK_BLOCKS_WITH_TIMESTAMPS;

    #[test]
    fn duplicates_are_reported_once_with_dsack() {
        let mut a = assembler(8192, 8);
        a.start(Seq(1000));
        a.write(Seq(1000), &[&[0; 500]]);
        // RFC 2883 §4.1.1: a retransmission of acknowledged data.
        let dup = a.write(Seq(1000), &[&[0; 500]]);
        assert_eq!(dup.disposition, Disposition::Duplicate);
        assert_eq!(a.sack_blocks(4).as_slice(), [block(1000, 1500)]);
        assert!(a.sack_blocks(4).is_empty(), "reported only once");

        // RFC 2883 §4.2: a duplicate above the cumulative ACK; the range
        // holding it comes second and is not repeated.
        a.write(Seq(2000), &[&[0; 500]]);
        a.write(Seq(3000), &[&[0; 500]]);
        a.write(Seq(2000), &[&[0; 200]]);
        assert_eq!(
            a.sack_blocks(4).as_slice(),
            [block(2000, 2200), block(2000, 2500), block(3000, 3500)]
        );
        // A new segment replaces a pending D-SACK.
        a.write(Seq(3000), &[&[0; 100]]);
        a.write(Seq(4000), &[&[0; 100]]);
        assert_eq!(
            a.sack_blocks(4).as_slice(),
            [block(4000, 4100), block(3000, 3500), block(2000, 2500)]
        );

        // Never received: older than anything delivered since `start`.
        let mut fresh = assembler(8192, 8);
        fresh.start(Seq(1000));
        fresh.write(Seq(1000), &[&[0; 10]]);
        fresh.write(Seq(900), &[&[0; 105]]);
        assert_eq!(fresh.sack_blocks(4).as_slice(), [block(1000, 1005)]);
        fresh.write(Seq(500), &[&[0; 10]]);
        assert!(fresh.sack_blocks(4).is_empty());

        let mut off = Assembler::new(AssemblerConfig {
            capacity: 100,
            max_ranges: 4,
            dsack: false,
        })
        .unwrap();
        off.write(Seq(0), &[&[0; 10]]);
        off.write(Seq(0), &[&[0; 10]]);
        assert!(off.sack_blocks(4).is_empty());
    }

    #[test]
    fn sack_blocks_convert_to_and_from_the_wire() {
        let wire = [Some((1, 2)), None, Some((u32::MAX, 5)), None];
        let blocks = SackBlocks::from_wire(&wire);
        assert_eq!(blocks.as_slice(), [block(1, 2), block(u32::MAX, 5)]);
        assert_eq!(blocks.as_slice()[1].len(), 6);
        assert_eq!(
            blocks.to_wire(),
            [Some((1, 2)), Some((u32::MAX, 5)), None, None]
        );
        assert!(block(5, 1).is_empty());
        let many = SackBlocks::from_wire(&[Some((0, 1)); 9]);
        assert_eq!(many.len(), MAX_SACK_BLOCKS);
    }

    /// (ISN, capacity, range cap, stream, writes as (offset, length,
    /// bytes to read after)).
    type Case = (u32, usize, usize, Vec<u8>, Vec<(usize, usize, usize)>);

    fn arb_case() -> impl Strategy<Value = Case> {
        (any::<u32>(), 1usize..600, 0usize..40, 0usize..2000).prop_flat_map(
            |(isn, capacity, max_ranges, len)| {
                let stream = proptest::collection::vec(any::<u8>(), len);
                let ops =
                    proptest::collection::vec((0..len.max(1), 1usize..300, 0usize..400), 0..120);
                (Just(isn), Just(capacity), Just(max_ranges), stream, ops)
            },
        )
    }

    proptest! {
        /// Any order, duplication and overlap of segments, read in any
        /// chunks, yields exactly the stream; the window never exceeds the
        /// capacity and the range list never exceeds its cap.
        #[test]
        fn any_arrival_order_yields_the_stream(
            (isn, capacity, max_ranges, stream, ops) in arb_case()
        ) {
            let mut a = assembler(capacity, max_ranges);
            a.start(Seq(isn));
            let mut got: Vec<u8> = Vec::new();
            let mut buf = vec![0u8; 400];
            let check = |a: &Assembler, got: &[u8]| {
                assert!(a.window() <= a.capacity());
                assert_eq!(a.window() + a.readable(), a.capacity());
                assert!(a.hole_count() <= max_ranges);
                let blocks: Vec<_> = a.out_of_order().collect();
                for pair in blocks.windows(2) {
                    assert!(pair[0].end < pair[1].start, "sorted, apart");
                }
                for b in &blocks {
                    assert!(a.rcv_nxt() < b.start);
                    assert!(b.end.since(a.rcv_nxt()) <= a.window());
                }
                assert_eq!(got, &stream[..got.len()]);
            };
            for &(offset, len, read) in &ops {
                let end = (offset + len).min(stream.len());
                let outcome = a.write(Seq(isn) + offset, &[&stream[offset..end]]);
                prop_assert_eq!(
                    outcome.new_bytes + outcome.duplicate_bytes + outcome.trimmed_bytes
                        + outcome.dropped_bytes,
                    end - offset
                );
                let n = a.read(&mut buf[..read]);
                got.extend_from_slice(&buf[..n]);
                check(&a, &got);
            }
            // Then a sender retransmitting from RCV.NXT delivers the rest.
            while got.len() < stream.len() {
                let at = a.rcv_nxt().since(Seq(isn));
                let end = (at + a.window()).min(stream.len());
                a.write(a.rcv_nxt(), &[&stream[at..end]]);
                let n = a.read(&mut buf);
                got.extend_from_slice(&buf[..n]);
                check(&a, &got);
            }
            prop_assert_eq!(&got, &stream);
            prop_assert_eq!(a.rcv_nxt(), Seq(isn) + stream.len());
        }

        /// `write`'s in-order path leaves exactly the state and outcome the
        /// general path does, for in-order segments (most of these) mixed
        /// with any others.
        #[test]
        fn in_order_path_matches_the_general_one(
            (isn, capacity, max_ranges, stream, ops) in arb_case(),
            in_order in proptest::collection::vec(any::<bool>(), 120),
        ) {
            let (mut fast, mut general) =
                (assembler(capacity, max_ranges), assembler(capacity, max_ranges));
            fast.start(Seq(isn));
            general.start(Seq(isn));
            let mut buf = vec![0u8; 400];
            for (&(offset, len, read), &at_rcv_nxt) in ops.iter().zip(&in_order) {
                let offset = if at_rcv_nxt {
                    fast.rcv_nxt().since(Seq(isn)).min(stream.len())
                } else {
                    offset
                };
                let end = (offset + len).min(stream.len());
                let seq = Seq(isn) + offset;
                let data = &stream[offset..end];
                let a = fast.write(seq, &[data]);
                let b = general.write_general(seq, &[data], data.len());
                prop_assert_eq!(a, b);
                prop_assert_eq!(format!("{fast:?}"), format!("{general:?}"));
                let n = fast.read(&mut buf[..read]);
                prop_assert_eq!(general.read(&mut buf[..read]), n);
            }
        }

        /// A stream cut into segments, some duplicated, written in any
        /// permutation: with room enough nothing is lost, RFC 2018 §4's
        /// first block always holds the latest out-of-order segment, and
        /// reads in any chunks give back the stream.
        #[test]
        fn permuted_segments_reassemble(
            isn in any::<u32>(),
            stream in proptest::collection::vec(any::<u8>(), 1..1500),
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..40),
            dups in proptest::collection::vec(any::<proptest::sample::Index>(), 0..10),
            order_seed in any::<u64>(),
            chunks in proptest::collection::vec(0usize..200, 1..20),
        ) {
            let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(stream.len())).collect();
            bounds.extend([0, stream.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let mut segments: Vec<(usize, usize)> =
                bounds.windows(2).map(|w| (w[0], w[1])).collect();
            let originals = segments.len();
            for d in &dups {
                segments.push(segments[d.index(originals)]);
            }
            // A seeded Fisher-Yates shuffle: any permutation can come up.
            let mut state = order_seed | 1;
            for i in (1..segments.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                segments.swap(i, (state % (i as u64 + 1)) as usize);
            }

            let mut a = assembler(stream.len(), originals);
            a.start(Seq(isn));
            let mut got = Vec::new();
            let mut buf = [0u8; 200];
            for (k, &(lo, hi)) in segments.iter().enumerate() {
                let outcome = a.write(Seq(isn) + lo, &[&stream[lo..hi]]);
                prop_assert_eq!(outcome.trimmed_bytes + outcome.dropped_bytes, 0);
                if outcome.disposition == Disposition::OutOfOrder && outcome.duplicate_bytes == 0 {
                    let blocks = a.sack_blocks(MAX_SACK_BLOCKS);
                    let first = blocks.as_slice()[0];
                    prop_assert!(first.start <= Seq(isn) + lo && Seq(isn) + hi <= first.end);
                }
                let want = chunks[k % chunks.len()];
                let n = a.read(&mut buf[..want]);
                got.extend_from_slice(&buf[..n]);
                prop_assert_eq!(&got[..], &stream[..got.len()]);
            }
            let mut rest = vec![0u8; stream.len()];
            let n = a.read(&mut rest);
            got.extend_from_slice(&rest[..n]);
            prop_assert_eq!(got, stream);
            prop_assert!(!a.has_holes());
        }

        /// Hostile input: any sequence number and length never panics and
        /// never breaks the invariants.
        #[test]
        fn arbitrary_segments_never_panic(
            isn in any::<u32>(),
            writes in proptest::collection::vec((any::<u32>(), 0usize..3000, any::<bool>()), 0..60)
        ) {
            let mut a = assembler(2048, 4);
            a.start(Seq(isn));
            let data = vec![7u8; 3000];
            let mut buf = [0u8; 512];
            for (seq, len, read) in writes {
                let seq = if read { Seq(isn.wrapping_add(seq % 4096)) } else { Seq(seq) };
                let outcome = a.write(seq, &[&data[..len]]);
                prop_assert!(outcome.advanced <= 2048);
                a.read(&mut buf);
                let blocks = a.sack_blocks(4);
                prop_assert!(blocks.len() <= 4);
                prop_assert!(a.hole_count() <= 4);
                prop_assert_eq!(a.window() + a.readable(), a.capacity());
            }
        }
    }
}
