//! Fragment reassembly for IPv6 (RFC 8200 §4.5, RFC 5722, RFC 6946) and
//! IPv4 (RFC 791, RFC 815, RFC 1122 §3.3.2): a pure state machine driven by
//! `now`, independent of header parsing.
//!
//! The IP layer parses the fragment header with the `wire` crate and hands
//! over what reassembly needs: a key naming the datagram, the fragment's
//! byte offset, its M ("more fragments") flag, its payload as shared
//! [`Segment`]s, and a caller-chosen header value `H` of which only the
//! offset-zero fragment's is kept (RFC 8200 §4.5: "only those headers in the
//! Offset zero fragment packet are retained in the reassembled packet").
//!
//! * **Zero copy.** Fragments are held as the segments they arrived in; a
//!   completed datagram is those segments in offset order
//!   ([`Outcome::Complete`]), ready for [`Packet::append_segment`](crate::buffer::Packet::append_segment). No payload
//!   byte is copied.
//! * **Overlaps** (RFC 5722): a fragment that overlaps one already held
//!   discards the whole datagram, silently, and the key is remembered until
//!   the datagram's timer would have run out, so the fragments still to come
//!   are discarded too ([`DropReason::DatagramDiscarded`]). The same applies
//!   to IPv4 (RFC 791 let later data overwrite earlier data; like Linux since
//!   4.19 we refuse ambiguity instead).
//! * **Exact duplicates** (RFC 8200 §4.5: "an implementation may choose to
//!   detect this case and drop exact duplicate fragments while keeping the
//!   other fragments"): a fragment with the same offset, the same length and
//!   the same bytes as one held is dropped ([`DropReason::DuplicateIgnored`])
//!   and the datagram kept. Same range but different bytes is an overlap.
//! * **Timer** (RFC 8200 §4.5; RFC 1122 §3.3.2 for IPv4): started by the
//!   first fragment to arrive, whichever it is; at `first_arrival + timeout`
//!   (inclusive) the datagram is abandoned and reported by
//!   [`Reassembler::poll`] with the offset-zero fragment's header if it had
//!   arrived — the caller sends ICMPv6 Time Exceeded code 1 (ICMPv4 Time
//!   Exceeded code 1) only then.
//! * **Bounded memory.** At most `max_datagrams` datagrams (discarded ones
//!   remembered for RFC 5722 included) and `max_bytes` payload bytes are
//!   held. Fragments other than the last carry at least 8 bytes (empty ones
//!   with M=1 are refused), so at most `max_bytes / 8 + max_datagrams`
//!   fragments are held, and the bookkeeping is bounded with the bytes.
//!   **Policy: evict the oldest.** A new datagram, or a fragment that would
//!   exceed the byte bound, evicts the datagrams whose timers started
//!   earliest (counted in [`ReassemblyStats::evicted`], no ICMP error: they
//!   did not time out). Under a flood of incomplete datagrams the flood
//!   churns through the table but a legitimate datagram that completes
//!   within `max_datagrams` arrivals of the flood still reassembles, where
//!   refusing new datagrams would deny every new datagram for a whole timeout.
//!   A datagram that could not fit even alone (its held bytes plus the
//!   fragment exceed `max_bytes`) is dropped whole ([`DropReason::NoMemory`])
//!   without evicting anyone.
//!
//! Not covered here, because they need the packet: Parameter Problem
//! pointers (RFC 8200 §4.5: code 0 at Payload Length for
//! [`DropReason::BadLength`], code 0 at Fragment Offset for
//! [`DropReason::TooLong`]), the RFC 7112 check that the first fragment holds
//! the whole header chain, and the reassembled Payload Length. The reassembler
//! bounds `offset + length` by [`ReassemblyConfig::max_datagram_len`]; a
//! caller wanting RFC 8200's exact bound (Payload Length, which also counts
//! the unfragmentable extension headers, ≤ 65 535) checks that itself first.
//!
//! A late duplicate of a fragment of a datagram already completed starts a
//! new datagram that times out (as in Linux); if it is the offset-zero
//! fragment the caller will be told to send a Time Exceeded error for it.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::buffer::Segment;
use crate::time::Instant;

/// The limits of a [`Reassembler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Datagrams held at once, in progress or remembered as discarded.
    pub max_datagrams: usize,
    /// Payload bytes held at once across all datagrams: the memory bound.
    pub max_bytes: usize,
    /// Largest `offset + length` of a fragment (RFC 8200 §4.5: 65 535).
    pub max_datagram_len: usize,
    /// Time from the first fragment's arrival to abandoning the datagram.
    pub timeout: Duration,
}

impl ReassemblyConfig {
    /// IPv6: the 60 s of RFC 8200 §4.5, fragmentable parts up to 65 535
    /// bytes, 256 datagrams and 1 MiB of payload (a ninth of the default
    /// buffer pool).
    pub fn ipv6() -> Self {
        Self {
            max_datagrams: 256,
            max_bytes: 1 << 20,
            max_datagram_len: 65_535,
            timeout: Duration::from_secs(60),
        }
    }

    /// IPv4: data up to 65 515 bytes (RFC 791: Total Length ≤ 65 535 with
    /// a header of at least 20 bytes) and a 30 s timer. RFC 791 suggests 15 s
    /// as the initial timer and RFC 1122 §3.3.2 60–120 s; we use Linux's
    /// `ipfrag_time` of 30 s so the reference stack and the operating
    /// system's stack behave alike in the lab. Configurable.
    pub fn ipv4() -> Self {
        Self {
            max_datagram_len: 65_535 - 20,
            timeout: Duration::from_secs(30),
            ..Self::ipv6()
        }
    }
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        Self::ipv6()
    }
}

/// One fragment handed over by the IP layer.
#[derive(Debug, Clone)]
pub struct Fragment<H> {
    /// Byte offset of the payload in the datagram's fragmentable part (the
    /// Fragment Offset field times 8, so a multiple of 8).
    pub offset: usize,
    /// The M flag (IPv6) or MF flag (IPv4): more fragments follow.
    pub more: bool,
    /// The fragment's payload, shared with the received packet.
    pub payload: Vec<Segment>,
    /// What the caller wants back with the datagram: only the offset-zero
    /// fragment's is kept (RFC 8200 §4.5), the others are dropped at once.
    pub header: H,
}

/// Why a fragment was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// It overlapped a fragment held: the whole datagram was discarded
    /// (RFC 5722 §4), silently.
    Overlap,
    /// It contradicted the datagram's end: a second last fragment with a
    /// different end, a last fragment ending before data already held, or
    /// data beyond a known end. The whole datagram was discarded, as for
    /// an overlap.
    Inconsistent,
    /// `offset + length` exceeds `max_datagram_len`: RFC 8200 §4.5 says
    /// send Parameter Problem code 0 pointing at the Fragment Offset field.
    TooLong,
    /// M=1 and a length that is not a multiple of 8 (or an offset that is
    /// not): RFC 8200 §4.5 says send Parameter Problem code 0 pointing at
    /// the Payload Length field. IPv4 (RFC 791) just drops it.
    BadLength,
    /// M=1 and no payload: it carries nothing, so it is ignored.
    Empty,
    /// Holding it would exceed `max_bytes` even after evicting every other
    /// datagram, or `max_datagrams` is zero: its datagram was dropped.
    NoMemory,
    /// The same offset, length and bytes as a fragment held (RFC 8200 §4.5
    /// allows dropping exact duplicates and keeping the datagram).
    DuplicateIgnored,
    /// Its datagram was discarded for an overlap or an inconsistency and
    /// its timer has not run out: RFC 5722 §4 discards the fragments not
    /// yet received too.
    DatagramDiscarded,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::Overlap,
        DropReason::Inconsistent,
        DropReason::TooLong,
        DropReason::BadLength,
        DropReason::Empty,
        DropReason::NoMemory,
        DropReason::DuplicateIgnored,
        DropReason::DatagramDiscarded,
    ];

    /// A short name for counters in the state dump.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overlap => "overlap",
            DropReason::Inconsistent => "inconsistent",
            DropReason::TooLong => "too_long",
            DropReason::BadLength => "bad_length",
            DropReason::Empty => "empty",
            DropReason::NoMemory => "no_memory",
            DropReason::DuplicateIgnored => "duplicate",
            DropReason::DatagramDiscarded => "datagram_discarded",
        }
    }
}

/// What became of a fragment.
#[derive(Debug)]
#[must_use]
pub enum Outcome<H> {
    /// Held; the datagram still misses bytes.
    Incomplete,
    /// The datagram is whole: the offset-zero fragment's header and the
    /// payload's segments in order, `len` bytes in all.
    Complete {
        header: H,
        payload: Vec<Segment>,
        len: usize,
    },
    /// Dropped, and why.
    Dropped(DropReason),
}

/// A datagram abandoned when its timer ran out (RFC 8200 §4.5).
#[derive(Debug)]
pub struct Expired<K, H> {
    pub key: K,
    /// The offset-zero fragment's header if that fragment had arrived: only
    /// then does the caller send ICMP Time Exceeded code 1, to its source.
    pub first: Option<H>,
    /// When the first fragment to arrive did.
    pub first_arrival: Instant,
    /// `first_arrival + timeout`.
    pub deadline: Instant,
    /// Payload bytes that had arrived.
    pub received: usize,
}

/// Counters, for the state dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Datagrams completed from two or more fragments.
    pub reassembled: u64,
    /// Atomic fragments passed through (RFC 6946).
    pub atomic: u64,
    /// Datagrams abandoned when their timer ran out.
    pub timed_out: u64,
    /// Datagrams evicted to make room for newer ones.
    pub evicted: u64,
    /// Time-outs not reported by `poll` because too many piled up unpolled.
    pub unreported_timeouts: u64,
    /// Fragments dropped, per [`DropReason`] (in the order of `ALL`).
    pub overlap: u64,
    pub inconsistent: u64,
    pub too_long: u64,
    pub bad_length: u64,
    pub empty: u64,
    pub no_memory: u64,
    pub duplicate: u64,
    pub datagram_discarded: u64,
}

impl ReassemblyStats {
    /// Fragments dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::Overlap => self.overlap,
            DropReason::Inconsistent => self.inconsistent,
            DropReason::TooLong => self.too_long,
            DropReason::BadLength => self.bad_length,
            DropReason::Empty => self.empty,
            DropReason::NoMemory => self.no_memory,
            DropReason::DuplicateIgnored => self.duplicate,
            DropReason::DatagramDiscarded => self.datagram_discarded,
        }
    }

    fn count_drop(&mut self, reason: DropReason) {
        let counter = match reason {
            DropReason::Overlap => &mut self.overlap,
            DropReason::Inconsistent => &mut self.inconsistent,
            DropReason::TooLong => &mut self.too_long,
            DropReason::BadLength => &mut self.bad_length,
            DropReason::Empty => &mut self.empty,
            DropReason::NoMemory => &mut self.no_memory,
            DropReason::DuplicateIgnored => &mut self.duplicate,
            DropReason::DatagramDiscarded => &mut self.datagram_discarded,
        };
        *counter += 1;
    }
}

/// One datagram as the state dump shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatagramInfo<'a, K> {
    pub key: &'a K,
    pub first_arrival: Instant,
    pub deadline: Instant,
    /// Discarded for an overlap or inconsistency, remembered until the
    /// deadline (RFC 5722).
    pub discarded: bool,
    /// Payload bytes held.
    pub held_bytes: usize,
    /// Fragments held.
    pub fragments: usize,
    /// Whether the offset-zero fragment has arrived.
    pub has_first: bool,
    /// The datagram's length, once the last fragment has arrived.
    pub end: Option<usize>,
}

/// A fragment held: its payload length and segments.
struct Held {
    len: usize,
    segments: Vec<Segment>,
}

/// A datagram being reassembled.
struct Assembly<H> {
    /// Fragments by offset; they never overlap.
    fragments: BTreeMap<usize, Held>,
    /// The offset-zero fragment's header, once it has arrived.
    header: Option<H>,
    /// The end of the datagram, once the last fragment (M=0) has arrived.
    end: Option<usize>,
    /// Payload bytes held.
    held: usize,
}

impl<H> Assembly<H> {
    /// The end of the last byte held.
    fn data_end(&self) -> usize {
        self.fragments
            .last_key_value()
            .map_or(0, |(offset, held)| offset + held.len)
    }

    fn is_complete(&self) -> bool {
        // Fragments never overlap and all lie below `end`, so `end` bytes
        // held means `0..end` is covered.
        self.end == Some(self.held)
    }
}

enum State<H> {
    Assembling(Assembly<H>),
    /// Discarded (RFC 5722): fragments still to come are dropped.
    Discarded,
}

struct Entry<H> {
    /// Position in the age order: (deadline, arrival sequence number).
    age: (Instant, u64),
    first_arrival: Instant,
    state: State<H>,
}

/// Reassembles datagrams named by keys `K` (IPv6: source, destination,
/// identification; IPv4: source, destination, protocol, identification),
/// returning the offset-zero fragment's header `H` with each.
pub struct Reassembler<K, H> {
    config: ReassemblyConfig,
    entries: BTreeMap<K, Entry<H>>,
    /// Every entry's key by age: oldest (earliest deadline) first.
    by_age: BTreeMap<(Instant, u64), K>,
    next_sequence: u64,
    held_bytes: usize,
    held_fragments: usize,
    /// Time-outs found by `insert`, waiting for `poll`.
    pending: VecDeque<Expired<K, H>>,
    stats: ReassemblyStats,
}

impl<K: Ord + Clone, H> Reassembler<K, H> {
    pub fn new(config: ReassemblyConfig) -> Self {
        Self {
            config,
            entries: BTreeMap::new(),
            by_age: BTreeMap::new(),
            next_sequence: 0,
            held_bytes: 0,
            held_fragments: 0,
            pending: VecDeque::new(),
            stats: ReassemblyStats::default(),
        }
    }

    pub fn config(&self) -> &ReassemblyConfig {
        &self.config
    }

    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// Payload bytes held across all datagrams (≤ `max_bytes`).
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Fragments held across all datagrams.
    pub fn held_fragments(&self) -> usize {
        self.held_fragments
    }

    /// Datagrams held, discarded ones remembered included
    /// (≤ `max_datagrams`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The datagrams held, oldest first, for the state dump.
    pub fn datagrams(&self) -> impl Iterator<Item = DatagramInfo<'_, K>> + '_ {
        self.by_age.values().filter_map(move |key| {
            let entry = self.entries.get(key)?;
            let mut info = DatagramInfo {
                key,
                first_arrival: entry.first_arrival,
                deadline: entry.age.0,
                discarded: true,
                held_bytes: 0,
                fragments: 0,
                has_first: false,
                end: None,
            };
            if let State::Assembling(assembly) = &entry.state {
                info.discarded = false;
                info.held_bytes = assembly.held;
                info.fragments = assembly.fragments.len();
                info.has_first = assembly.header.is_some();
                info.end = assembly.end;
            }
            Some(info)
        })
    }

    /// When [`poll`](Self::poll) next has work: the earliest deadline, or a
    /// past one if time-outs found by `insert` wait to be reported.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending
            .front()
            .map(|expired| expired.deadline)
            .or_else(|| self.by_age.keys().next().map(|&(deadline, _)| deadline))
    }

    /// Abandons the datagrams whose timer has run out by `now` and returns
    /// those that were being assembled (RFC 8200 §4.5); discarded ones are
    /// forgotten silently (RFC 5722).
    pub fn poll(&mut self, now: Instant) -> Vec<Expired<K, H>> {
        self.expire(now);
        self.pending.drain(..).collect()
    }

    /// Takes one fragment that arrived at `now` for the datagram `key`.
    pub fn insert(&mut self, now: Instant, key: K, fragment: Fragment<H>) -> Outcome<H> {
        let outcome = self.insert_inner(now, key, fragment);
        match &outcome {
            Outcome::Dropped(reason) => self.stats.count_drop(*reason),
            Outcome::Complete { .. } => {}
            Outcome::Incomplete => {}
        }
        outcome
    }

    fn insert_inner(&mut self, now: Instant, key: K, fragment: Fragment<H>) -> Outcome<H> {
        let Fragment {
            offset,
            more,
            payload,
            header,
        } = fragment;
        let len: usize = payload.iter().map(Segment::len).sum();

        // RFC 8200 §4.5: with M=1 the length must be a multiple of 8
        // (Parameter Problem code 0 at Payload Length); RFC 791 likewise.
        // Offsets come in 8-byte units, so another offset is a caller bug
        // treated the same way.
        if (more && !len.is_multiple_of(8)) || !offset.is_multiple_of(8) {
            return Outcome::Dropped(DropReason::BadLength);
        }
        // RFC 8200 §4.5: a datagram longer than 65 535 bytes (Parameter
        // Problem code 0 at Fragment Offset).
        let within = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.config.max_datagram_len);
        if !within {
            return Outcome::Dropped(DropReason::TooLong);
        }
        if more && len == 0 {
            return Outcome::Dropped(DropReason::Empty);
        }
        // RFC 6946 §4: an atomic fragment is processed in isolation from
        // any other fragment, even one with the same key.
        if offset == 0 && !more {
            self.stats.atomic += 1;
            return Outcome::Complete {
                header,
                payload,
                len,
            };
        }

        self.expire(now);

        let held = Held {
            len,
            segments: payload,
        };
        match self.entries.get(&key).map(|entry| &entry.state) {
            Some(State::Discarded) => Outcome::Dropped(DropReason::DatagramDiscarded),
            Some(State::Assembling(_)) => self.add_to_existing(key, offset, more, held, header),
            None => self.start_datagram(now, key, offset, more, held, header),
        }
    }

    /// The first fragment of a datagram to arrive: starts its timer.
    fn start_datagram(
        &mut self,
        now: Instant,
        key: K,
        offset: usize,
        more: bool,
        held: Held,
        header: H,
    ) -> Outcome<H> {
        if held.len > self.config.max_bytes || self.config.max_datagrams == 0 {
            return Outcome::Dropped(DropReason::NoMemory);
        }
        while self.entries.len() >= self.config.max_datagrams {
            if !self.evict_oldest_except(&key) {
                return Outcome::Dropped(DropReason::NoMemory);
            }
        }
        while self.held_bytes + held.len > self.config.max_bytes {
            if !self.evict_oldest_except(&key) {
                return Outcome::Dropped(DropReason::NoMemory);
            }
        }

        let mut assembly = Assembly {
            fragments: BTreeMap::new(),
            header: None,
            end: None,
            held: 0,
        };
        if !more {
            assembly.end = Some(offset + held.len);
        }
        if offset == 0 {
            assembly.header = Some(header);
        }
        if held.len > 0 {
            assembly.held = held.len;
            self.held_bytes += held.len;
            self.held_fragments += 1;
            assembly.fragments.insert(offset, held);
        }
        // RFC 8200 §4.5: the timer starts at the first-arriving fragment.
        let deadline = now + self.config.timeout;
        let age = (deadline, self.next_sequence);
        self.next_sequence += 1;
        self.by_age.insert(age, key.clone());
        self.entries.insert(
            key,
            Entry {
                age,
                first_arrival: now,
                state: State::Assembling(assembly),
            },
        );
        // A single non-atomic fragment cannot complete a datagram: either
        // it has M=1, or it has M=0 and an offset above zero, leaving a gap.
        Outcome::Incomplete
    }

    /// A fragment of a datagram already being assembled.
    fn add_to_existing(
        &mut self,
        key: K,
        offset: usize,
        more: bool,
        held: Held,
        header: H,
    ) -> Outcome<H> {
        let end = offset + held.len;
        let Some(assembly) = self.assembly_mut(&key) else {
            return Outcome::Dropped(DropReason::Inconsistent);
        };

        // The end of the datagram is fixed by its last fragment (RFC 8200
        // §4.5, RFC 791); anything contradicting it makes the datagram
        // ambiguous, which is handled like an overlap (RFC 5722).
        let inconsistent = if more {
            assembly.end.is_some_and(|known| end > known)
        } else {
            assembly.end.is_some_and(|known| known != end) || assembly.data_end() > end
        };
        if inconsistent {
            self.discard(&key);
            return Outcome::Dropped(DropReason::Inconsistent);
        }

        if held.len > 0 {
            match overlap(assembly, offset, &held) {
                Overlap::None => {}
                Overlap::Duplicate => {
                    // RFC 8200 §4.5: an exact duplicate may be dropped and
                    // the datagram kept. A duplicate of the last fragment
                    // that came with M=1 the first time now fixes the end.
                    if !more {
                        assembly.end = Some(end);
                    }
                    let complete = assembly.is_complete();
                    return if complete {
                        self.complete(&key)
                    } else {
                        Outcome::Dropped(DropReason::DuplicateIgnored)
                    };
                }
                Overlap::Partial => {
                    // RFC 5722 §4: discard the whole datagram, silently.
                    self.discard(&key);
                    return Outcome::Dropped(DropReason::Overlap);
                }
            }
        }

        // Room for it: a datagram that cannot fit even alone is dropped
        // whole; otherwise older datagrams make way.
        if assembly.held + held.len > self.config.max_bytes {
            self.remove(&key);
            return Outcome::Dropped(DropReason::NoMemory);
        }
        while self.held_bytes + held.len > self.config.max_bytes {
            if !self.evict_oldest_except(&key) {
                self.remove(&key);
                return Outcome::Dropped(DropReason::NoMemory);
            }
        }

        let Some(assembly) = self.assembly_mut(&key) else {
            return Outcome::Dropped(DropReason::Inconsistent);
        };
        if !more {
            assembly.end = Some(end);
        }
        // RFC 8200 §4.5: only the offset-zero fragment's headers are kept.
        if offset == 0 {
            assembly.header = Some(header);
        }
        let len = held.len;
        if len > 0 {
            assembly.held += len;
            assembly.fragments.insert(offset, held);
        }
        let complete = assembly.is_complete();
        if len > 0 {
            self.held_bytes += len;
            self.held_fragments += 1;
        }
        if complete {
            self.complete(&key)
        } else {
            Outcome::Incomplete
        }
    }

    fn assembly_mut(&mut self, key: &K) -> Option<&mut Assembly<H>> {
        match self.entries.get_mut(key).map(|entry| &mut entry.state) {
            Some(State::Assembling(assembly)) => Some(assembly),
            _ => None,
        }
    }

    /// Hands a whole datagram over and forgets it.
    fn complete(&mut self, key: &K) -> Outcome<H> {
        let Some(State::Assembling(assembly)) = self.remove(key) else {
            return Outcome::Dropped(DropReason::Inconsistent);
        };
        let Some(header) = assembly.header else {
            // Unreachable: `0..end` covered means offset zero arrived.
            return Outcome::Dropped(DropReason::Inconsistent);
        };
        let len = assembly.held;
        let payload = assembly
            .fragments
            .into_values()
            .flat_map(|held| held.segments)
            .collect();
        self.stats.reassembled += 1;
        Outcome::Complete {
            header,
            payload,
            len,
        }
    }

    /// Discards a datagram's fragments but remembers its key until its
    /// deadline (RFC 5722 §4: fragments not yet received are discarded too).
    fn discard(&mut self, key: &K) {
        if let Some(entry) = self.entries.get_mut(key) {
            let state = std::mem::replace(&mut entry.state, State::Discarded);
            self.release(state);
        }
    }

    /// Forgets a datagram, returning its state with its memory released
    /// from the totals.
    fn remove(&mut self, key: &K) -> Option<State<H>> {
        let entry = self.entries.remove(key)?;
        self.by_age.remove(&entry.age);
        if let State::Assembling(assembly) = &entry.state {
            self.held_bytes -= assembly.held;
            self.held_fragments -= assembly.fragments.len();
        }
        Some(entry.state)
    }

    /// Subtracts a state's memory from the totals, dropping its segments.
    fn release(&mut self, state: State<H>) {
        if let State::Assembling(assembly) = state {
            self.held_bytes -= assembly.held;
            self.held_fragments -= assembly.fragments.len();
        }
    }

    /// Evicts the datagram whose timer started first, other than `keep`.
    /// Returns false if there was none.
    fn evict_oldest_except(&mut self, keep: &K) -> bool {
        let Some(victim) = self.by_age.values().find(|key| *key != keep).cloned() else {
            return false;
        };
        self.remove(&victim);
        self.stats.evicted += 1;
        true
    }

    /// Moves every datagram whose deadline is `now` or earlier to the
    /// reports `poll` returns (RFC 8200 §4.5: abandoned 60 s after the
    /// first-arriving fragment). The reports are bounded too: past
    /// `max_datagrams` unpolled reports the oldest is dropped and counted.
    fn expire(&mut self, now: Instant) {
        while let Some((&(deadline, sequence), _)) = self.by_age.first_key_value() {
            if deadline > now {
                break;
            }
            let Some(key) = self.by_age.remove(&(deadline, sequence)) else {
                break;
            };
            let Some(entry) = self.entries.remove(&key) else {
                continue;
            };
            let State::Assembling(assembly) = entry.state else {
                continue; // RFC 5722: forgotten silently.
            };
            self.held_bytes -= assembly.held;
            self.held_fragments -= assembly.fragments.len();
            self.stats.timed_out += 1;
            if self.pending.len() >= self.config.max_datagrams.max(1) {
                self.pending.pop_front();
                self.stats.unreported_timeouts += 1;
            }
            self.pending.push_back(Expired {
                key,
                first: assembly.header,
                first_arrival: entry.first_arrival,
                deadline,
                received: assembly.held,
            });
        }
    }
}

enum Overlap {
    None,
    /// Same offset, length and bytes as a fragment held.
    Duplicate,
    /// Any other intersection with a fragment held.
    Partial,
}

/// How a non-empty fragment at `offset` relates to those held.
fn overlap<H>(assembly: &Assembly<H>, offset: usize, new: &Held) -> Overlap {
    let end = offset + new.len;
    if let Some((&before, held)) = assembly.fragments.range(..=offset).next_back() {
        if before == offset && held.len == new.len {
            return if same_bytes(&held.segments, &new.segments) {
                Overlap::Duplicate
            } else {
                Overlap::Partial
            };
        }
        if before + held.len > offset {
            return Overlap::Partial;
        }
    }
    if let Some((&after, _)) = assembly.fragments.range(offset + 1..).next() {
        if after < end {
            return Overlap::Partial;
        }
    }
    Overlap::None
}

/// Whether two segment chains hold the same bytes; reads, never copies.
fn same_bytes(a: &[Segment], b: &[Segment]) -> bool {
    let mut a_parts = a.iter().map(Segment::as_slice).filter(|s| !s.is_empty());
    let mut b_parts = b.iter().map(Segment::as_slice).filter(|s| !s.is_empty());
    let (mut x, mut y): (&[u8], &[u8]) = (&[], &[]);
    loop {
        if x.is_empty() {
            x = a_parts.next().unwrap_or(&[]);
        }
        if y.is_empty() {
            y = b_parts.next().unwrap_or(&[]);
        }
        if x.is_empty() || y.is_empty() {
            return x.is_empty() && y.is_empty();
        }
        let n = x.len().min(y.len());
        if x[..n] != y[..n] {
            return false;
        }
        x = &x[n..];
        y = &y[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{Packet, Pool, PoolConfig};
    use probe::Flow;

    fn pool() -> Pool {
        Pool::new(PoolConfig {
            buffer_size: 256,
            headroom: 16,
            buffers: 32,
        })
        .unwrap()
    }

    /// `bytes` as segments cut at `cuts`.
    fn chain(pool: &Pool, bytes: &[u8], cuts: &[usize]) -> Vec<Segment> {
        let mut packet = Packet::new(pool, Flow::NONE).unwrap();
        packet.append_copy(bytes).unwrap();
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(bytes.len());
        bounds
            .windows(2)
            .flat_map(|w| packet.segments(w[0]..w[1]).unwrap())
            .collect()
    }

    #[test]
    fn same_bytes_ignores_how_the_bytes_are_cut() {
        let pool = pool();
        let bytes: Vec<u8> = (0..64).collect();
        let a = chain(&pool, &bytes, &[3, 40]);
        let b = chain(&pool, &bytes, &[17]);
        assert!(same_bytes(&a, &b));
        let mut other = bytes.clone();
        other[50] = 0;
        assert!(!same_bytes(&a, &chain(&pool, &other, &[8])));
        assert!(!same_bytes(&a, &chain(&pool, &bytes[..63], &[])));
        assert!(same_bytes(&[], &chain(&pool, &[], &[])));
    }

    #[test]
    fn overlap_is_classified_against_both_neighbours() {
        let pool = pool();
        let bytes = [7u8; 64];
        let held = |len: usize| Held {
            len,
            segments: chain(&pool, &bytes[..len], &[]),
        };
        let mut assembly: Assembly<()> = Assembly {
            fragments: BTreeMap::new(),
            header: None,
            end: None,
            held: 0,
        };
        assembly.fragments.insert(16, held(16)); // 16..32
        assembly.fragments.insert(48, held(8)); // 48..56
        let class = |offset, len| match overlap(&assembly, offset, &held(len)) {
            Overlap::None => "none",
            Overlap::Duplicate => "duplicate",
            Overlap::Partial => "partial",
        };
        assert_eq!(class(0, 16), "none"); // 0..16 touches 16..32
        assert_eq!(class(32, 16), "none"); // 32..48 fits the gap
        assert_eq!(class(16, 16), "duplicate");
        assert_eq!(class(16, 8), "partial"); // same start, shorter
        assert_eq!(class(8, 16), "partial"); // 8..24
        assert_eq!(class(24, 8), "partial"); // inside
        assert_eq!(class(40, 16), "partial"); // 40..56 covers 48..56
        assert_eq!(class(0, 64), "partial"); // covers both
    }
}
