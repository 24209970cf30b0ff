//! The receiving half of an association: bytes in order for the reader,
//! data that arrived ahead of a gap (selective mode), the receiver's
//! `rseq`, `alloc` and ECNTL spans (XTP 4.0 error and flow control; study
//! §2.4.2).
//!
//! A reader reads two ways: it copies what waits in the stream's buffer
//! (the socket interface), or it posts its own buffer, which arriving
//! data fill directly while nothing waits ahead of them (the character
//! driver, study §3.4.2: one copy, from the packet, instead of two).

use std::collections::{BTreeMap, VecDeque};

use wire::xtp::Span;

/// Out-of-order pieces kept at most: more gaps than this and later pieces
/// are dropped (resent later), so memory stays bounded by the buffer.
const MAX_PIECES: usize = 512;

/// What an arriving data packet was to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// It extended the bytes in order (possibly joining pieces held).
    InOrder,
    /// It lies beyond a gap: kept (selective) or dropped (go-back-n).
    OutOfOrder,
    /// Every byte of it was already here.
    Duplicate,
    /// Empty, or wholly past `alloc`: nothing taken.
    Nothing,
}

#[derive(Debug)]
pub struct RecvStream {
    capacity: usize,
    readable: VecDeque<u8>,
    /// Bytes the application has read (or, without error control, given
    /// up as lost): the sequence number of `readable`'s front.
    read: u64,
    /// Pieces beyond `rseq`, disjoint, keyed by first sequence number.
    pieces: BTreeMap<u64, Vec<u8>>,
    piece_bytes: usize,
    /// Keep pieces beyond a gap (selective) or drop them (go-back-n).
    keep_out_of_order: bool,
    /// Where the peer's stream ends (its WCLOSE), once known.
    end: Option<u64>,
    /// Reservation mode: the space the reader asked for with its last read.
    reserved: Option<usize>,
    /// Beginning tags (BTAG) by the sequence number they came with.
    tags: BTreeMap<u64, u64>,
    /// The reader's posted buffer and how many bytes it wants in all.
    posted: Option<(Vec<u8>, usize)>,
    /// Bytes that arrived in order so far (into `readable` or straight
    /// into a posted buffer).
    arrived: u64,
}

/// Tags a receiver holds for its reader at most; more are dropped.
const MAX_TAGS: usize = 1024;

impl RecvStream {
    pub fn new(capacity: usize, keep_out_of_order: bool) -> Self {
        Self {
            capacity: capacity.max(1),
            readable: VecDeque::new(),
            read: 0,
            pieces: BTreeMap::new(),
            piece_bytes: 0,
            keep_out_of_order,
            end: None,
            reserved: None,
            tags: BTreeMap::new(),
            posted: None,
            arrived: 0,
        }
    }

    /// Next sequence number expected in order: everything below arrived.
    pub fn rseq(&self) -> u64 {
        self.read + self.readable.len() as u64
    }

    /// The do-not-exceed sequence number this receiver grants: one past
    /// what its buffer (or, in reservation mode, the reader's request)
    /// can take beyond what was read.
    pub fn alloc(&self) -> u64 {
        let room = self.reserved.unwrap_or(self.capacity).min(self.capacity);
        self.read + room as u64
    }

    /// Reservation mode: the reader's buffer is `len` bytes (study §2.7).
    pub fn reserve(&mut self, len: usize) {
        self.reserved = Some(len.max(1));
    }

    pub fn readable(&self) -> usize {
        self.readable.len()
    }

    pub fn read_total(&self) -> u64 {
        self.read
    }

    /// Bytes that arrived in order so far.
    pub fn arrived_total(&self) -> u64 {
        self.arrived
    }

    /// Posts the reader's buffer for `want` bytes (its contents are
    /// replaced): what waits is copied in now, what arrives later goes
    /// straight in. `false` (and the buffer dropped) if one is posted.
    pub fn post(&mut self, mut buf: Vec<u8>, want: usize) -> bool {
        if self.posted.is_some() {
            return false;
        }
        buf.clear();
        buf.reserve(want);
        let n = want.min(self.readable.len());
        let (a, b) = self.readable.as_slices();
        let from_a = n.min(a.len());
        buf.extend_from_slice(&a[..from_a]);
        buf.extend_from_slice(&b[..n - from_a]);
        self.readable.drain(..n);
        self.read += n as u64;
        if self.reserved.is_some() {
            self.reserved = Some(want.max(1));
        }
        self.posted = Some((buf, want));
        true
    }

    /// Bytes in the posted buffer so far, if one is posted.
    pub fn posted_fill(&self) -> Option<usize> {
        self.posted.as_ref().map(|(buf, _)| buf.len())
    }

    /// Gives the posted buffer back, holding what it got.
    pub fn take_posted(&mut self) -> Option<Vec<u8>> {
        self.posted.take().map(|(buf, _)| buf)
    }

    /// Whether the posted buffer holds all it wants.
    pub fn posted_full(&self) -> bool {
        self.posted
            .as_ref()
            .is_some_and(|(buf, want)| buf.len() >= *want)
    }

    /// Bytes now in order: into the posted buffer while nothing waits
    /// ahead of them in `readable`, the rest into `readable`.
    fn deliver(&mut self, bytes: &[u8]) {
        self.arrived += bytes.len() as u64;
        let mut rest = bytes;
        if let Some((buf, want)) = self.posted.as_mut() {
            if self.readable.is_empty() {
                let n = want.saturating_sub(buf.len()).min(rest.len());
                buf.extend_from_slice(&rest[..n]);
                self.read += n as u64;
                rest = &rest[n..];
            }
        }
        self.readable.extend(rest);
    }

    pub fn has_gap(&self) -> bool {
        !self.pieces.is_empty()
    }

    pub fn end(&self) -> Option<u64> {
        self.end
    }

    /// The peer's WCLOSE: its stream ends at `end`. A later, different
    /// end is ignored (the first is the peer's word).
    pub fn set_end(&mut self, end: u64) {
        if self.end.is_none() {
            self.end = Some(end.max(self.rseq()));
        }
    }

    /// Every byte of the peer's stream arrived.
    pub fn complete(&self) -> bool {
        self.end.is_some_and(|end| self.rseq() >= end)
    }

    /// The reader took everything the peer will send.
    pub fn at_eof(&self) -> bool {
        self.end.is_some_and(|end| self.read >= end)
    }

    /// Takes `data` at sequence number `seq`, clipped to `[rseq, alloc)`
    /// (and to the stream's end once known).
    pub fn insert(&mut self, seq: u64, data: &[u8]) -> Arrival {
        let rseq = self.rseq();
        let limit = self.alloc().min(self.end.unwrap_or(u64::MAX));
        let last = seq.saturating_add(data.len() as u64);
        if data.is_empty() || seq >= limit {
            return Arrival::Nothing;
        }
        if last <= rseq {
            return Arrival::Duplicate;
        }
        let start = seq.max(rseq);
        let stop = last.min(limit);
        let bytes = &data[(start - seq) as usize..(stop - seq) as usize];
        if start == rseq {
            self.deliver(bytes);
            self.drain_pieces();
            return Arrival::InOrder;
        }
        if self.keep_out_of_order {
            self.keep_piece(start, bytes);
        }
        Arrival::OutOfOrder
    }

    /// Stores the parts of `bytes` (at `start`, past `rseq`) not already
    /// held.
    fn keep_piece(&mut self, start: u64, bytes: &[u8]) {
        let stop = start + bytes.len() as u64;
        let mut cursor = start;
        let mut fresh: Vec<(u64, u64)> = Vec::new();
        // Pieces that may overlap: the one before `start` and those within.
        let before = self
            .pieces
            .range(..start)
            .next_back()
            .map(|(&s, v)| (s, v.len()));
        let within: Vec<(u64, usize)> = self
            .pieces
            .range(start..stop)
            .map(|(&s, v)| (s, v.len()))
            .collect();
        for (s, len) in before.into_iter().chain(within) {
            let e = s + len as u64;
            if e <= cursor {
                continue;
            }
            if s > cursor {
                fresh.push((cursor, s.min(stop)));
            }
            cursor = cursor.max(e);
            if cursor >= stop {
                break;
            }
        }
        if cursor < stop {
            fresh.push((cursor, stop));
        }
        for (s, e) in fresh {
            if self.pieces.len() >= MAX_PIECES {
                break;
            }
            let piece = bytes[(s - start) as usize..(e - start) as usize].to_vec();
            self.piece_bytes += piece.len();
            self.pieces.insert(s, piece);
        }
    }

    /// Moves the pieces that now follow `rseq` into the readable bytes.
    fn drain_pieces(&mut self) {
        loop {
            let rseq = self.rseq();
            let Some(entry) = self.pieces.first_entry() else {
                break;
            };
            let start = *entry.key();
            if start > rseq {
                break;
            }
            let piece = entry.remove();
            self.piece_bytes -= piece.len();
            let skip = (rseq - start) as usize;
            if skip < piece.len() {
                self.deliver(&piece[skip..]);
            }
        }
    }

    /// The spans of data held beyond `rseq`, merged, at most `max`.
    pub fn spans(&self, max: usize) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        for (&start, piece) in &self.pieces {
            let right = start + piece.len() as u64;
            let len = spans.len();
            match spans.last_mut() {
                Some(last) if last.right == start => last.right = right,
                _ if len == max => break,
                _ => spans.push(Span { left: start, right }),
            }
        }
        spans
    }

    /// Copies readable bytes into `out`; returns how many.
    pub fn recv(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.readable.len());
        let (a, b) = self.readable.as_slices();
        let from_a = n.min(a.len());
        out[..from_a].copy_from_slice(&a[..from_a]);
        out[from_a..n].copy_from_slice(&b[..n - from_a]);
        self.readable.drain(..n);
        self.read += n as u64;
        if self.reserved.is_some() {
            self.reserved = Some(out.len().max(1));
        }
        n
    }

    /// A data packet from `seq` carried `tag` (kept once per position, at
    /// most `MAX_TAGS` (1024) waiting).
    pub fn tag(&mut self, seq: u64, tag: u64) {
        if seq >= self.read && self.tags.len() < MAX_TAGS {
            self.tags.entry(seq).or_insert(tag);
        }
    }

    /// The tags of bytes that arrived in order (stream offset, tag),
    /// taken.
    pub fn take_tags(&mut self) -> Vec<(u64, u64)> {
        let later = self.tags.split_off(&self.rseq());
        std::mem::replace(&mut self.tags, later)
            .into_iter()
            .collect()
    }

    /// Keeps data beyond a gap whatever the mode: a sender without error
    /// control (NOERR) will not resend, so what is here must be kept.
    pub fn keep_pieces(&mut self) {
        self.keep_out_of_order = true;
    }

    /// No error control (NOERR): when nothing in order waits for the
    /// reader, the gap before the first piece held (or before the
    /// stream's end) is given up and the stream goes on past it. Returns
    /// the bytes given up.
    pub fn skip_gap(&mut self) -> u64 {
        if !self.readable.is_empty() {
            return 0;
        }
        let rseq = self.rseq();
        let target = match self.pieces.first_key_value() {
            Some((&start, _)) => start,
            None => match self.end {
                Some(end) if end > rseq => end,
                _ => return 0,
            },
        };
        self.read = target;
        self.drain_pieces();
        target - rseq
    }

    /// Abbreviated close: the reader wants no more; what is held is
    /// dropped and the stream counts as read up to `rseq`.
    pub fn discard(&mut self) {
        self.read = self.rseq();
        self.readable.clear();
        self.pieces.clear();
        self.piece_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_fill_and_spans_name_what_is_held() {
        let mut s = RecvStream::new(1000, true);
        assert_eq!(s.insert(0, &[1; 10]), Arrival::InOrder);
        assert_eq!(s.insert(20, &[3; 10]), Arrival::OutOfOrder);
        assert_eq!(s.insert(40, &[5; 10]), Arrival::OutOfOrder);
        assert_eq!(s.insert(30, &[4; 5]), Arrival::OutOfOrder);
        assert_eq!(
            s.spans(8),
            vec![
                Span {
                    left: 20,
                    right: 35
                },
                Span {
                    left: 40,
                    right: 50
                }
            ]
        );
        assert_eq!(s.rseq(), 10);
        // A fill overlapping what was read joins everything up to 35.
        assert_eq!(s.insert(5, &[2; 15]), Arrival::InOrder);
        assert_eq!(s.rseq(), 35);
        assert_eq!(
            s.spans(8),
            vec![Span {
                left: 40,
                right: 50
            }]
        );
        let mut out = [0; 64];
        assert_eq!(s.recv(&mut out), 35);
        assert_eq!(&out[..10], &[1; 10]);
        assert_eq!(&out[10..20], &[2; 10]);
        assert_eq!(&out[20..30], &[3; 10]);
        assert_eq!(&out[30..35], &[4; 5]);
        assert_eq!(s.insert(0, &[9; 10]), Arrival::Duplicate);
    }

    #[test]
    fn without_error_control_gaps_are_given_up_once_the_reader_caught_up() {
        let mut s = RecvStream::new(1000, false);
        s.keep_pieces();
        s.insert(0, &[1; 10]);
        s.insert(20, &[3; 10]);
        assert_eq!(s.skip_gap(), 0, "the reader has bytes in order");
        let mut out = [0; 64];
        assert_eq!(s.recv(&mut out), 10);
        assert_eq!(s.skip_gap(), 10);
        assert_eq!(s.rseq(), 30);
        assert_eq!(s.recv(&mut out), 10);
        assert_eq!(&out[..10], &[3; 10]);
        s.set_end(50);
        assert_eq!(s.skip_gap(), 20, "the lost tail");
        assert!(s.at_eof());
    }

    #[test]
    fn a_posted_buffer_is_filled_straight_from_arrivals() {
        let mut s = RecvStream::new(100, true);
        assert_eq!(s.insert(0, &[1; 10]), Arrival::InOrder);
        assert!(s.post(Vec::new(), 30));
        assert!(!s.post(Vec::new(), 5), "one posted buffer at a time");
        assert_eq!(s.posted_fill(), Some(10), "what waited was copied in");
        assert_eq!(s.readable(), 0);
        // Beyond a gap: held aside until the gap fills, then straight in.
        assert_eq!(s.insert(20, &[3; 15]), Arrival::OutOfOrder);
        assert_eq!(s.insert(10, &[2; 10]), Arrival::InOrder);
        assert!(s.posted_full());
        assert_eq!(s.readable(), 5, "past the posted buffer's want");
        assert_eq!(s.read_total(), 30);
        assert_eq!(s.arrived_total(), 35);
        assert_eq!(s.alloc(), 130, "what the reader took frees the buffer");
        let buf = s.take_posted().unwrap();
        let mut expected = vec![1u8; 10];
        expected.extend([2u8; 10]);
        expected.extend([3u8; 10]);
        assert_eq!(buf, expected);
        assert_eq!(s.take_posted(), None);
    }

    #[test]
    fn go_back_n_drops_what_is_ahead_and_alloc_bounds_input() {
        let mut s = RecvStream::new(16, false);
        assert_eq!(s.insert(8, &[1; 4]), Arrival::OutOfOrder);
        assert!(s.spans(8).is_empty());
        assert_eq!(s.insert(0, &[1; 30]), Arrival::InOrder);
        assert_eq!(s.rseq(), 16, "clipped at alloc");
        assert_eq!(s.alloc(), 16);
        let mut out = [0; 8];
        s.recv(&mut out);
        assert_eq!(s.alloc(), 24);
        s.set_end(20);
        assert_eq!(s.insert(16, &[1; 10]), Arrival::InOrder);
        assert_eq!(s.rseq(), 20, "clipped at the stream's end");
        assert!(s.complete());
    }
}
