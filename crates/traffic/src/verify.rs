//! Receivers' bookkeeping: every received byte or datagram is checked
//! against the pattern and anything wrong is counted — corrupted, missing,
//! duplicated, reordered — so nothing is lost silently.

use serde::Serialize;

use crate::datagram::{self, DatagramError, Kind};
use crate::pattern::{decode, displacement, Pattern};

/// What a stream receiver saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StreamCounts {
    /// Bytes received, good or not.
    pub bytes: u64,
    /// Received bytes that match no position of the sender's stream.
    pub corrupted_bytes: u64,
    /// Bytes the stream skipped (forward jumps).
    pub missing_bytes: u64,
    /// Bytes received again (backward jumps).
    pub duplicated_bytes: u64,
    /// Backward jumps: data arriving after later data.
    pub reordered: u64,
}

/// A stream receiver's checks beside iperf3's fields: the counts of
/// [`StreamCounts`] but its `bytes`, which the sum already gives (one key
/// twice is invalid to strict JSON parsers).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StreamChecks {
    pub corrupted_bytes: u64,
    pub missing_bytes: u64,
    pub duplicated_bytes: u64,
    pub reordered: u64,
}

impl StreamChecks {
    /// True when the stream was byte-exact.
    pub fn is_clean(&self) -> bool {
        self.corrupted_bytes == 0
            && self.missing_bytes == 0
            && self.duplicated_bytes == 0
            && self.reordered == 0
    }
}

impl From<StreamCounts> for StreamChecks {
    fn from(c: StreamCounts) -> Self {
        Self {
            corrupted_bytes: c.corrupted_bytes,
            missing_bytes: c.missing_bytes,
            duplicated_bytes: c.duplicated_bytes,
            reordered: c.reordered,
        }
    }
}

impl StreamCounts {
    /// True when the stream was byte-exact so far.
    pub fn is_clean(&self) -> bool {
        StreamChecks::from(*self).is_clean()
    }
}

/// Checks a byte stream (TCP) against the pattern, re-synchronising after
/// a fault by decoding pattern words (see [`crate::pattern`]).
///
/// Classification is exact for missing, duplicated or reordered runs of
/// 16 bytes or more and for in-place corruption, however the stream is
/// split into reads; call [`finish`](Self::finish) at the end of the
/// stream. A faulty stream is never counted clean.
#[derive(Debug)]
pub struct StreamVerifier {
    /// The sender's stream offset the next received byte should have.
    expected: u64,
    counts: StreamCounts,
    /// At most [`HELD_BACK`] bytes after a fault at the end of a read,
    /// checked with the next read.
    pending: Vec<u8>,
}

/// Bytes too few to hold a whole pattern word wherever they start.
const HELD_BACK: usize = 15;

impl Default for StreamVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamVerifier {
    pub fn new() -> Self {
        Self {
            expected: 0,
            counts: StreamCounts::default(),
            pending: Vec::new(),
        }
    }

    pub fn counts(&self) -> StreamCounts {
        self.counts
    }

    /// Checks the next received bytes.
    ///
    /// # Panics
    /// If `pattern` serves slices of fewer than 16 bytes (a sizing bug).
    pub fn check(&mut self, pattern: &Pattern, data: &[u8]) {
        assert!(pattern.max_len() >= 16, "pattern table too small to verify");
        self.counts.bytes += data.len() as u64;
        let mut data = data;
        // Bytes held back from a fault at the end of the last read go first.
        while !self.pending.is_empty() && !data.is_empty() {
            let take = data.len().min(4096);
            let mut head = std::mem::take(&mut self.pending);
            head.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.check_slice(pattern, &head);
        }
        if !data.is_empty() {
            self.check_slice(pattern, data);
        }
    }

    /// The final counts: bytes still held back are corrupted.
    pub fn finish(&mut self, pattern: &Pattern) -> StreamCounts {
        let pending = std::mem::take(&mut self.pending);
        self.count_corrupted(pattern, &pending);
        self.expected += pending.len() as u64;
        self.counts
    }

    fn check_slice(&mut self, pattern: &Pattern, data: &[u8]) {
        let mut rest = data;
        while !rest.is_empty() {
            let n = rest.len().min(pattern.max_len());
            let expect = pattern.at(self.expected, n);
            if rest[..n] == *expect {
                self.expected += n as u64;
                rest = &rest[n..];
                continue;
            }
            let good = rest[..n]
                .iter()
                .zip(expect)
                .position(|(a, b)| a != b)
                .expect("slices differ");
            self.expected += good as u64;
            rest = self.resync(pattern, &rest[good..]);
        }
    }

    /// Handles a mismatch at `rest[0]`: finds the next valid pattern word,
    /// counts the bytes before it as corrupted unless they are the
    /// sender's bytes at the new position, and jumps there. Returns what
    /// is left to check; always consumes a byte or leaves `rest` matching.
    fn resync<'a>(&mut self, pattern: &Pattern, rest: &'a [u8]) -> &'a [u8] {
        let found = rest
            .windows(8)
            .enumerate()
            .find_map(|(p, w)| decode(w.try_into().expect("8 bytes")).map(|j| (p, j)));
        let Some((p, j)) = found else {
            // Nothing recognisable: corrupted in place, except a short tail
            // that may be the start of a word completed by the next read.
            let (damaged, tail) = rest.split_at(rest.len().saturating_sub(HELD_BACK));
            self.count_corrupted(pattern, damaged);
            self.expected += damaged.len() as u64;
            self.pending = tail.to_vec();
            return &[];
        };
        let word_at = self.offset_of_word(j, p);
        let before = &rest[..p];
        let lead_in = word_at.wrapping_sub(p as u64);
        if before == pattern.at(lead_in, p) {
            // The jump happened at rest[0]; the bytes before the word are
            // the sender's bytes at the new position.
            self.jump(lead_in);
            return rest;
        }
        // The bytes before the word are damaged: count them in place, then
        // jump to the word.
        self.count_corrupted(pattern, before);
        self.expected += p as u64;
        self.jump(word_at);
        &rest[p..]
    }

    /// Counts the bytes of `data` that differ from the pattern at the
    /// expected position (in-place corruption).
    fn count_corrupted(&mut self, pattern: &Pattern, data: &[u8]) {
        let mut at = self.expected;
        for chunk in data.chunks(pattern.max_len()) {
            let expect = pattern.at(at, chunk.len());
            self.counts.corrupted_bytes +=
                chunk.iter().zip(expect).filter(|(a, b)| a != b).count() as u64;
            at += chunk.len() as u64;
        }
    }

    /// The sender's stream offset corresponding to word index `j` nearest
    /// to the current expectation.
    fn offset_of_word(&self, j: u64, at: usize) -> u64 {
        let here = self.expected + at as u64;
        let d = displacement(here, j * 8);
        here.wrapping_add_signed(d)
    }

    fn jump(&mut self, to: u64) {
        let d = displacement(self.expected, to);
        if d > 0 {
            self.counts.missing_bytes += d as u64;
        } else if d < 0 {
            self.counts.duplicated_bytes += d.unsigned_abs();
            self.counts.reordered += 1;
        }
        self.expected = self.expected.wrapping_add_signed(d);
    }
}

/// What a datagram receiver saw. `lost` is only final after
/// [`DatagramVerifier::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DatagramCounts {
    /// Distinct good data datagrams.
    pub datagrams: u64,
    /// Their bytes, headers included (what the application received).
    pub bytes: u64,
    /// Datagrams that failed the header, length or pattern check.
    pub corrupted: u64,
    /// Good datagrams received again.
    pub duplicated: u64,
    /// Good datagrams that arrived after a later one.
    pub out_of_order: u64,
    /// Datagrams arriving too far behind the newest to check for
    /// duplication (counted as distinct and out of order).
    pub unverifiable_late: u64,
    /// Data datagrams the sender sent, from its end sentinel.
    pub sent: Option<u64>,
    /// Sent (or, without an end sentinel, up to the highest sequence number
    /// seen) but never received.
    pub lost: u64,
    /// Foreign datagrams (not test traffic, or another circuit's) that
    /// reached the socket.
    pub foreign: u64,
}

/// How far behind the newest sequence number duplicates are still
/// detected: a 128 KiB bitmap.
pub const DUPLICATE_WINDOW: u64 = 1 << 20;

/// What one received datagram was, for the receiver's control flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Start {
        planned: u64,
    },
    Data {
        seq: u64,
    },
    End {
        sent: u64,
    },
    /// An echo datagram (delay mode), checked.
    Echo {
        seq: u64,
    },
    /// Corrupted, foreign or a repeated sentinel: counted, nothing to do.
    Other,
}

/// Checks test datagrams and keeps loss, duplication and reordering
/// counts in bounded memory.
#[derive(Debug)]
pub struct DatagramVerifier {
    /// The circuit this receiver checks; others' datagrams are foreign.
    circuit: u8,
    counts: DatagramCounts,
    /// Highest data sequence number seen.
    highest: Option<u64>,
    /// Ring bitmap of the last [`DUPLICATE_WINDOW`] sequence numbers.
    seen: Vec<u64>,
    started: bool,
}

impl DatagramVerifier {
    /// A verifier for `circuit`'s datagrams.
    pub fn new(circuit: u8) -> Self {
        Self {
            circuit,
            counts: DatagramCounts::default(),
            highest: None,
            seen: vec![0; (DUPLICATE_WINDOW / 64) as usize],
            started: false,
        }
    }

    pub fn counts(&self) -> DatagramCounts {
        self.counts
    }

    /// True once the end sentinel arrived.
    pub fn ended(&self) -> bool {
        self.counts.sent.is_some()
    }

    /// True once a start sentinel or any data arrived.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Checks one received datagram.
    pub fn check(&mut self, pattern: &Pattern, data: &[u8]) -> Arrival {
        let header = match datagram::check(data, pattern) {
            Ok(header) if header.circuit != self.circuit => {
                self.counts.foreign += 1;
                return Arrival::Other;
            }
            Ok(header) => header,
            Err(DatagramError::Foreign) => {
                self.counts.foreign += 1;
                return Arrival::Other;
            }
            Err(_) => {
                self.counts.corrupted += 1;
                return Arrival::Other;
            }
        };
        match header.kind {
            Kind::Start if !self.started => {
                self.started = true;
                Arrival::Start {
                    planned: header.seq,
                }
            }
            Kind::End if self.counts.sent.is_none() => {
                self.counts.sent = Some(header.seq);
                Arrival::End { sent: header.seq }
            }
            Kind::Start | Kind::End => Arrival::Other,
            Kind::Echo => Arrival::Echo { seq: header.seq },
            Kind::Data => {
                self.started = true;
                self.data(header.seq, data.len());
                Arrival::Data { seq: header.seq }
            }
        }
    }

    fn data(&mut self, seq: u64, len: usize) {
        let fresh = match self.highest {
            None => {
                self.highest = Some(seq);
                self.mark(seq)
            }
            Some(high) if seq > high => {
                // Clear the bits the window slides over, `seq`'s own
                // included: it still holds `seq - DUPLICATE_WINDOW`'s.
                if seq - high >= DUPLICATE_WINDOW {
                    self.seen.fill(0);
                } else {
                    for s in high + 1..=seq {
                        self.clear(s);
                    }
                }
                self.highest = Some(seq);
                self.mark(seq)
            }
            Some(high) if high - seq >= DUPLICATE_WINDOW => {
                self.counts.unverifiable_late += 1;
                self.counts.out_of_order += 1;
                true
            }
            Some(_) => {
                let fresh = self.mark(seq);
                if fresh {
                    self.counts.out_of_order += 1;
                }
                fresh
            }
        };
        if fresh {
            self.counts.datagrams += 1;
            self.counts.bytes += len as u64;
        } else {
            self.counts.duplicated += 1;
        }
    }

    /// Sets the bit of `seq`; false if it was already set.
    fn mark(&mut self, seq: u64) -> bool {
        let bit = seq % DUPLICATE_WINDOW;
        let (word, mask) = ((bit / 64) as usize, 1u64 << (bit % 64));
        let fresh = self.seen[word] & mask == 0;
        self.seen[word] |= mask;
        fresh
    }

    fn clear(&mut self, seq: u64) {
        let bit = seq % DUPLICATE_WINDOW;
        self.seen[(bit / 64) as usize] &= !(1u64 << (bit % 64));
    }

    /// Final counts: loss against the end sentinel's count, or against the
    /// highest sequence number seen when the end sentinel was lost.
    pub fn finish(&mut self) -> DatagramCounts {
        let expected = self
            .counts
            .sent
            .unwrap_or_else(|| self.highest.map_or(0, |h| h + 1));
        self.counts.lost = expected.saturating_sub(self.counts.datagrams);
        self.counts
    }
}
