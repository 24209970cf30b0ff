//! The sending half of an association: the bytes written and not yet
//! acknowledged (`rseq` of the peer frees them), the next byte to send,
//! and the ranges error control asked to send again.
//!
//! The bytes are held two ways: copied into the stream's own buffer (the
//! socket interface, and the character driver's short writes), or, after
//! those, referenced from the writer's buffer without a copy (the
//! character driver's long writes, study §3.4.2: the buffer is "locked
//! down" until the peer acknowledged it).

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

/// One piece to send: `len` bytes from `seq`; `resent` when some of them
/// left before; `tag` when a tagged write starts at `seq` (BTAG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub seq: u64,
    pub len: usize,
    pub resent: bool,
    pub tag: Option<u64>,
}

/// Tags written and not yet acknowledged at most: a tagged write beyond
/// is refused until the peer catches up.
pub const MAX_TAGS: usize = 1024;

#[derive(Debug)]
pub struct SendStream {
    capacity: usize,
    /// Bytes from `una` on, copied in.
    buffer: VecDeque<u8>,
    /// The bytes after `buffer`, referenced from the writer's own buffer
    /// (one lent write at a time; the writer gets it back once acked).
    lent: Bytes,
    /// Oldest byte the peer has not acknowledged (its `rseq`).
    una: u64,
    /// Next byte to send as new (go-back-n moves it back).
    nxt: u64,
    /// One past the highest byte ever sent.
    high: u64,
    /// The writer closed: the stream ends at `una + buffer.len()`.
    closed: bool,
    /// Ranges selective retransmission asked for, ascending.
    resend: VecDeque<(u64, u64)>,
    /// Beginning tags by the sequence number their write starts at: a
    /// packet starts there and carries the tag, and none crosses it.
    tags: BTreeMap<u64, u64>,
}

impl SendStream {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            buffer: VecDeque::new(),
            lent: Bytes::new(),
            una: 0,
            nxt: 0,
            high: 0,
            closed: false,
            resend: VecDeque::new(),
            tags: BTreeMap::new(),
        }
    }

    pub fn una(&self) -> u64 {
        self.una
    }

    pub fn nxt(&self) -> u64 {
        self.nxt
    }

    pub fn high(&self) -> u64 {
        self.high
    }

    /// One past the last byte written.
    pub fn written_end(&self) -> u64 {
        self.una + self.queued() as u64
    }

    /// Bytes written and not yet acknowledged, copied or lent.
    pub fn queued(&self) -> usize {
        self.buffer.len() + self.lent.len()
    }

    /// What a copying write can take now: nothing while a lent buffer
    /// waits, since bytes written after it would have to follow it.
    pub fn room(&self) -> usize {
        if self.closed || !self.lent.is_empty() {
            0
        } else {
            self.capacity - self.buffer.len()
        }
    }

    pub fn close(&mut self) {
        self.closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The stream's end, once the writer closed.
    pub fn end(&self) -> Option<u64> {
        self.closed.then(|| self.written_end())
    }

    /// Everything written was acknowledged.
    pub fn all_acked(&self) -> bool {
        self.buffer.is_empty() && self.lent.is_empty()
    }

    /// Something sent awaits acknowledgement.
    pub fn in_flight(&self) -> bool {
        self.high > self.una
    }

    /// Copies as much of `data` as fits; returns how much.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        self.buffer.extend(&data[..n]);
        n
    }

    /// Takes `data` by reference, whole, without copying it: it is sent
    /// from the writer's buffer and released once acknowledged. Refused
    /// (0) while a lent buffer waits or the writer closed.
    pub fn lend(&mut self, data: Bytes) -> usize {
        if self.closed || !self.lent.is_empty() {
            return 0;
        }
        self.lent = data;
        self.lent.len()
    }

    /// Like [`write`](Self::write), the first byte tagged with `tag` (the
    /// study's §2.6 "tagging": 8 bytes for the application, not data).
    /// Nothing is taken when too many tags wait.
    pub fn write_tagged(&mut self, tag: u64, data: &[u8]) -> usize {
        if self.tags.len() >= MAX_TAGS || data.is_empty() {
            return 0;
        }
        let at = self.written_end();
        let n = self.write(data);
        if n > 0 {
            self.tags.insert(at, tag);
        }
        n
    }

    /// Caps a piece from `seq` so it stops before the next tagged byte.
    fn tag_limit(&self, seq: u64, stop: u64) -> u64 {
        self.tags
            .range(seq + 1..stop)
            .next()
            .map_or(stop, |(&at, _)| at)
    }

    /// The peer received everything below `rseq`: those bytes are freed.
    /// Returns how many were newly acknowledged.
    pub fn ack(&mut self, rseq: u64) -> usize {
        let rseq = rseq.min(self.high);
        if rseq <= self.una {
            return 0;
        }
        let freed = (rseq - self.una) as usize;
        let copied = freed.min(self.buffer.len());
        self.buffer.drain(..copied);
        // Releases the acknowledged part of the lent buffer (a reference
        // count, no copy).
        let _ = self.lent.split_to(freed - copied);
        self.una = rseq;
        self.nxt = self.nxt.max(rseq);
        self.tags = self.tags.split_off(&rseq);
        while let Some(&(start, stop)) = self.resend.front() {
            if stop <= rseq {
                self.resend.pop_front();
            } else {
                self.resend[0] = (start.max(rseq), stop);
                break;
            }
        }
        freed
    }

    /// The peer dropped its receiving half (RCLOSE before our end): what
    /// is left will never be read, so it counts as delivered.
    pub fn abandon(&mut self) {
        let end = self.written_end();
        self.high = self.high.max(end);
        self.ack(end);
    }

    /// Go-back-n: send everything again from `rseq`.
    pub fn go_back(&mut self, rseq: u64) {
        self.resend.clear();
        self.nxt = rseq.max(self.una).min(self.nxt);
    }

    /// Selective retransmission: these ranges (below `high`) are to be
    /// sent again, replacing what was asked before (`replace`: an answer
    /// to the latest status request says all that is missing) or joining
    /// it (an unsolicited report).
    pub fn schedule(&mut self, ranges: &[(u64, u64)], replace: bool) {
        let mut all: Vec<(u64, u64)> = if replace {
            Vec::new()
        } else {
            self.resend.iter().copied().collect()
        };
        for &(start, stop) in ranges {
            let (start, stop) = (start.max(self.una), stop.min(self.high));
            if start < stop {
                all.push((start, stop));
            }
        }
        all.sort_unstable();
        self.resend.clear();
        for (start, stop) in all {
            match self.resend.back_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(stop),
                _ => self.resend.push_back((start, stop)),
            }
        }
    }

    pub fn resend_pending(&self) -> bool {
        !self.resend.is_empty()
    }

    /// The next piece to send, at most `max` bytes: a range asked for
    /// again first, then new bytes below `alloc`.
    pub fn next_piece(&mut self, alloc: u64, max: usize) -> Option<Piece> {
        let max = max.max(1) as u64;
        if let Some(&(start, stop)) = self.resend.front() {
            let len = (self.tag_limit(start, stop) - start).min(max);
            if start + len >= stop {
                self.resend.pop_front();
            } else {
                self.resend[0] = (start + len, stop);
            }
            return Some(Piece {
                seq: start,
                len: len as usize,
                resent: true,
                tag: self.tags.get(&start).copied(),
            });
        }
        let limit = self.written_end().min(alloc);
        if self.nxt >= limit {
            return None;
        }
        let seq = self.nxt;
        let len = (self.tag_limit(seq, limit) - seq).min(max);
        self.nxt += len;
        let resent = seq < self.high;
        self.high = self.high.max(self.nxt);
        Some(Piece {
            seq,
            len: len as usize,
            resent,
            tag: self.tags.get(&seq).copied(),
        })
    }

    /// Whether new bytes wait that `alloc` holds back.
    pub fn blocked_by(&self, alloc: u64) -> bool {
        self.nxt < self.written_end() && self.nxt >= alloc
    }

    /// Whether there is anything to send below `alloc`.
    pub fn can_send(&self, alloc: u64) -> bool {
        !self.resend.is_empty() || self.nxt < self.written_end().min(alloc)
    }

    /// A copy of the `len` bytes at `seq` (within what is held, copied
    /// or lent).
    pub fn bytes(&self, seq: u64, len: usize) -> Vec<u8> {
        let from = (seq - self.una) as usize;
        let stop = from + len;
        let copied = self.buffer.len();
        let mut out = Vec::with_capacity(len);
        if from < copied {
            out.extend(self.buffer.range(from..stop.min(copied)));
        }
        if stop > copied {
            out.extend_from_slice(&self.lent[from.saturating_sub(copied)..stop - copied]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_data_respects_alloc_and_resends_come_first() {
        let mut s = SendStream::new(100);
        assert_eq!(s.write(&[7; 150]), 100);
        let p = s.next_piece(30, 20).unwrap();
        assert_eq!((p.seq, p.len, p.resent), (0, 20, false));
        let p = s.next_piece(30, 20).unwrap();
        assert_eq!((p.seq, p.len), (20, 10));
        assert!(s.next_piece(30, 20).is_none());
        assert!(s.blocked_by(30));
        s.schedule(&[(5, 12), (25, 40)], true);
        let p = s.next_piece(30, 4).unwrap();
        assert_eq!((p.seq, p.len, p.resent), (5, 4, true));
        // The peer's rseq passes part of the ranges asked for.
        assert_eq!(s.ack(26), 26);
        let p = s.next_piece(30, 100).unwrap();
        assert_eq!((p.seq, p.len), (26, 4), "clipped to what was sent");
        assert_eq!(s.bytes(26, 4), vec![7; 4]);
    }

    #[test]
    fn a_tagged_write_starts_a_packet_and_no_packet_crosses_it() {
        let mut s = SendStream::new(100);
        s.write(&[1; 10]);
        s.write_tagged(0xfeed, &[2; 10]);
        let p = s.next_piece(100, 50).unwrap();
        assert_eq!((p.seq, p.len, p.tag), (0, 10, None));
        let p = s.next_piece(100, 50).unwrap();
        assert_eq!((p.seq, p.len, p.tag), (10, 10, Some(0xfeed)));
        s.schedule(&[(5, 20)], true);
        let p = s.next_piece(100, 50).unwrap();
        assert_eq!((p.seq, p.len, p.tag), (5, 5, None), "stops at the tag");
        let p = s.next_piece(100, 50).unwrap();
        assert_eq!((p.seq, p.tag), (10, Some(0xfeed)), "resent with its tag");
        s.ack(20);
        assert!(s.tags.is_empty());
    }

    #[test]
    fn a_lent_buffer_follows_the_copied_bytes_and_is_released_by_acks() {
        let mut s = SendStream::new(64);
        assert_eq!(s.write(&[1; 10]), 10);
        let lent = Bytes::from(vec![2u8; 100]);
        // Longer than the stream's own buffer: a lent write is not bound by it.
        assert_eq!(s.lend(lent.clone()), 100);
        assert_eq!(s.room(), 0, "nothing is copied in behind a lent buffer");
        assert_eq!(
            s.lend(Bytes::from_static(b"x")),
            0,
            "one lent write at a time"
        );
        assert_eq!(s.written_end(), 110);
        let piece = s.next_piece(u64::MAX, 20).unwrap();
        assert_eq!((piece.seq, piece.len), (0, 20));
        let mut expected = vec![1u8; 10];
        expected.extend([2u8; 10]);
        assert_eq!(s.bytes(0, 20), expected);
        while s.next_piece(u64::MAX, 20).is_some() {}
        s.ack(50);
        assert_eq!(s.queued(), 60);
        assert_eq!(s.bytes(50, 60), vec![2u8; 60]);
        s.ack(110);
        assert!(s.all_acked());
        assert!(
            lent.is_unique(),
            "the acknowledged buffer went back to its writer"
        );
        assert_eq!(s.write(&[3; 5]), 5);
    }

    #[test]
    fn go_back_n_resends_from_rseq() {
        let mut s = SendStream::new(100);
        s.write(&[1; 100]);
        while s.next_piece(100, 10).is_some() {}
        s.ack(30);
        s.go_back(30);
        let p = s.next_piece(100, 10).unwrap();
        assert_eq!((p.seq, p.resent), (30, true));
        s.close();
        assert_eq!(s.end(), Some(100));
    }
}
