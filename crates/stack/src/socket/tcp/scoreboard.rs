//! The sender's SACK scoreboard (RFC 6675 §3, §4): which bytes above
//! SND.UNA the receiver has reported holding, and the questions loss
//! recovery asks of it — IsLost, SetPipe, NextSeg — plus the condition for
//! entering recovery (§5).
//!
//! The scoreboard only records and answers. The sender drives it: it calls
//! [`Scoreboard::update`] on every ACK (with or without SACK blocks), owns
//! the recovery variables (DupAcks, RecoveryPoint, HighRxt, RescueRxt),
//! compares cwnd with [`Scoreboard::pipe`], asks [`Scoreboard::next_seg`]
//! what to send, sends it and moves HighRxt / RescueRxt / SND.MAX itself.
//! SACKed data stays in the send buffer until cumulatively acknowledged:
//! the receiver may renege (RFC 2018 §8), and after a retransmission
//! timeout the sender should [`clear`](Scoreboard::clear) the scoreboard
//! (RFC 6675 §5.1).
//!
//! Conventions: RFC 6675 names octets — HighACK is the last octet
//! acknowledged, HighData the last sent, HighRxt the last retransmitted.
//! TCP variables point one past such octets, and so does every `Seq` here:
//! `snd_una` is HighACK + 1, `snd_max` is HighData + 1 (the highest
//! sequence number sent, plus one), `high_rxt` is HighRxt + 1 (`snd_una`
//! when nothing has been retransmitted; §5 step (4.3) moves it to the end
//! of the first retransmission) and `rescue_rxt` is RescueRxt + 1.
//!
//! SACK blocks are attacker-controlled: blocks that are inverted, wholly
//! below SND.UNA or reach past SND.MAX are ignored and counted (RFC 2018
//! §3, RFC 6675 §3), and the number of ranges is capped — a block that
//! would need one more is dropped and counted, which only makes loss
//! detection more conservative.

use super::assembler::SackBlock;
use super::seq::Seq;

/// DupThresh (RFC 6675 §2, after RFC 5681): duplicate ACKs, or SACKed
/// segments, that signal a loss.
pub const DUP_THRESH: usize = 3;

/// The most SACKed ranges a configuration may ask for.
pub const MAX_RANGES_LIMIT: usize = 4096;

/// A scoreboard configuration that cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScoreboardConfigError {
    #[error("the sender's maximum segment size must be at least one byte")]
    ZeroSmss,
    #[error("{max_ranges} SACKed ranges exceed the limit of {limit}")]
    TooManyRanges { max_ranges: usize, limit: usize },
}

/// What one ACK's SACK blocks did to the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateOutcome {
    /// Bytes SACKed for the first time.
    pub newly_sacked: usize,
    /// The first block, when it reports a duplicate (RFC 2883 §5: below
    /// the cumulative ACK, or inside the second block).
    pub dsack: Option<SackBlock>,
    /// Blocks ignored as invalid.
    pub invalid: usize,
    /// Valid blocks not recorded because the range cap was reached.
    pub dropped: usize,
}

impl UpdateOutcome {
    /// RFC 6675 §2: an ACK is a duplicate acknowledgment when it carries a
    /// SACK block identifying previously unacknowledged and un-SACKed
    /// octets between HighACK and HighData.
    pub fn is_duplicate_ack(&self) -> bool {
        self.newly_sacked > 0
    }
}

/// Counters of a scoreboard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScoreboardCounters {
    /// SACK blocks received.
    pub blocks: u64,
    /// D-SACK blocks recognised (RFC 2883).
    pub dsacks: u64,
    /// Blocks whose right edge is not after their left edge.
    pub inverted: u64,
    /// Blocks wholly below SND.UNA that were not a D-SACK.
    pub below_una: u64,
    /// Blocks reaching past SND.MAX: the receiver claims data never sent.
    pub beyond_max: u64,
    /// Valid blocks dropped because the range cap was reached.
    pub overflow: u64,
}

impl ScoreboardCounters {
    /// Blocks ignored as invalid.
    pub fn invalid(&self) -> u64 {
        self.inverted + self.below_una + self.beyond_max
    }
}

/// What NextSeg (RFC 6675 §4) says to send next. Ranges are
/// `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextSeg {
    /// Rule (1): retransmit unSACKed data deemed lost; then set HighRxt to
    /// the end of what was sent.
    Lost { start: Seq, len: usize },
    /// Rule (2): send new data from HighData + 1 (SND.MAX).
    NewData { start: Seq, len: usize },
    /// Rule (3): retransmit unSACKed data not yet deemed lost, to keep the
    /// ACK clock going; then set HighRxt as for rule (1).
    Unsacked { start: Seq, len: usize },
    /// Rule (4): the rescue retransmission, ending at the highest
    /// outstanding unSACKed octet. Set RescueRxt to RecoveryPoint and
    /// leave HighRxt alone.
    Rescue { start: Seq, len: usize },
    /// Rule (5): nothing to send.
    Nothing,
}

/// The sender's state NextSeg needs, in the conventions of the module
/// documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextSegQuery {
    pub snd_una: Seq,
    pub snd_max: Seq,
    /// HighRxt + 1.
    pub high_rxt: Seq,
    /// RescueRxt + 1, `None` while undefined.
    pub rescue_rxt: Option<Seq>,
    /// Unsent bytes the send buffer holds and the peer's window admits now
    /// (rule (2)).
    pub new_data: usize,
}

/// Bytes `start..end` the receiver reported holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: Seq,
    end: Seq,
}

impl Range {
    fn len(self) -> usize {
        self.end.since(self.start)
    }
}

/// A sender's record of SACKed data. See the module documentation.
#[derive(Debug)]
pub struct Scoreboard {
    /// Sorted, disjoint and never adjacent, all above SND.UNA as of the
    /// last update; at most `max_ranges`, allocated as they come.
    ranges: Vec<Range>,
    max_ranges: usize,
    smss: usize,
    /// The sum of the ranges' lengths.
    sacked: usize,
    counters: ScoreboardCounters,
}

/// Running totals of SACKed data above some point, walking downwards:
/// IsLost's two tests (RFC 6675 §4).
#[derive(Default)]
struct Above {
    ranges: usize,
    bytes: usize,
}

impl Above {
    fn add(&mut self, bytes: usize) {
        self.ranges += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// IsLost: DupThresh discontiguous SACKed sequences above, or more
    /// than (DupThresh - 1) · SMSS bytes SACKed above. Counted as ranges,
    /// since the scoreboard keeps no segment boundaries; a run of
    /// contiguous SACKed segments is caught by the byte test.
    fn lost(&self, smss: usize) -> bool {
        self.ranges >= DUP_THRESH || self.bytes > (DUP_THRESH - 1).saturating_mul(smss)
    }
}

/// Makes room for one more element in `list`, which holds fewer than
/// `max`: a list that starts empty (most connections never need one)
/// grows in doubling steps, but never past `max`, so its memory stays
/// within the bound it had when it was allocated up front.
pub(super) fn grow_within<T>(list: &mut Vec<T>, max: usize) {
    let len = list.len();
    if len == list.capacity() {
        let want = (2 * len).max(4).min(max).max(len + 1);
        list.reserve_exact(want - len);
    }
}

impl Scoreboard {
    /// An empty scoreboard for segments of at most `smss` bytes, holding
    /// at most `max_ranges` SACKed ranges.
    pub fn new(smss: usize, max_ranges: usize) -> Result<Self, ScoreboardConfigError> {
        if smss == 0 {
            return Err(ScoreboardConfigError::ZeroSmss);
        }
        if max_ranges > MAX_RANGES_LIMIT {
            return Err(ScoreboardConfigError::TooManyRanges {
                max_ranges,
                limit: MAX_RANGES_LIMIT,
            });
        }
        Ok(Self {
            // Grown as SACKs arrive (up to `max_ranges`): a connection
            // that never sees one holds no list.
            ranges: Vec::new(),
            max_ranges,
            smss,
            sacked: 0,
            counters: ScoreboardCounters::default(),
        })
    }

    /// Changes SMSS (after path-MTU discovery); zero is ignored.
    pub fn set_smss(&mut self, smss: usize) {
        if smss > 0 {
            self.smss = smss;
        }
    }

    pub fn smss(&self) -> usize {
        self.smss
    }

    /// Forgets all SACK information: after a retransmission timeout the
    /// receiver may have reneged (RFC 6675 §5.1, RFC 2018 §8).
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.sacked = 0;
    }

    /// Bytes above SND.UNA reported SACKed.
    pub fn sacked_bytes(&self) -> usize {
        self.sacked
    }

    /// The SACKed ranges, lowest first.
    pub fn ranges(&self) -> impl Iterator<Item = SackBlock> + '_ {
        self.ranges.iter().map(|r| SackBlock::new(r.start, r.end))
    }

    /// One past the highest SACKed octet, if any.
    pub fn high_sacked(&self) -> Option<Seq> {
        self.ranges.last().map(|r| r.end)
    }

    pub fn counters(&self) -> &ScoreboardCounters {
        &self.counters
    }

    /// Update (RFC 6675 §4) for an ACK: forgets what `snd_una` now covers,
    /// then records the valid `blocks`, in the order they were received.
    /// Call it for every ACK, with or without blocks.
    pub fn update(&mut self, snd_una: Seq, snd_max: Seq, blocks: &[SackBlock]) -> UpdateOutcome {
        self.acknowledge(snd_una);
        let mut outcome = UpdateOutcome::default();
        for (k, &block) in blocks.iter().enumerate() {
            self.counters.blocks += 1;
            if block.start >= block.end {
                self.counters.inverted += 1;
                outcome.invalid += 1;
                continue;
            }
            // RFC 2883 §5: a first block below the cumulative ACK, or inside
            // the second block, reports a duplicate, not new data.
            let dsack = k == 0
                && (block.end <= snd_una
                    || blocks
                        .get(1)
                        .is_some_and(|b| b.start <= block.start && block.end <= b.end));
            if dsack {
                self.counters.dsacks += 1;
                outcome.dsack = Some(block);
                continue;
            }
            if block.end <= snd_una {
                self.counters.below_una += 1;
                outcome.invalid += 1;
                continue;
            }
            if block.end > snd_max {
                self.counters.beyond_max += 1;
                outcome.invalid += 1;
                continue;
            }
            // Part of a block may straddle SND.UNA; only the rest counts.
            match self.insert(Range {
                start: block.start.max(snd_una),
                end: block.end,
            }) {
                Some(new) => outcome.newly_sacked += new,
                None => {
                    self.counters.overflow += 1;
                    outcome.dropped += 1;
                }
            }
        }
        outcome
    }

    /// Nothing is SACKed: an update without blocks changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Drops SACK information that SND.UNA has overtaken.
    fn acknowledge(&mut self, snd_una: Seq) {
        // Without losses nothing is held: skip the search and the drain,
        // on every ACK.
        if self.ranges.is_empty() {
            return;
        }
        let below = self.ranges.partition_point(|r| r.end <= snd_una);
        for range in self.ranges.drain(..below) {
            self.sacked = self.sacked.saturating_sub(range.len());
        }
        if let Some(first) = self.ranges.first_mut() {
            if first.start < snd_una {
                self.sacked = self.sacked.saturating_sub(snd_una.since(first.start));
                first.start = snd_una;
            }
        }
    }

    /// Merges `new` into the ranges; returns the bytes it added, or `None`
    /// if it would need a range beyond the cap.
    fn insert(&mut self, new: Range) -> Option<usize> {
        // Ranges overlapping or adjacent to `new` are i..j.
        let i = self.ranges.partition_point(|r| r.end < new.start);
        let j = self.ranges.partition_point(|r| r.start <= new.end);
        if i == j && self.ranges.len() >= self.max_ranges {
            return None;
        }
        let mut merged = new;
        if i < j {
            if let (Some(first), Some(last)) = (self.ranges.get(i), self.ranges.get(j - 1)) {
                merged.start = merged.start.min(first.start);
                merged.end = merged.end.max(last.end);
            }
        }
        let before: usize = self.ranges.drain(i..j).map(Range::len).sum();
        // The cap was checked above: either ranges were drained or there
        // was room; the list grows only within it.
        grow_within(&mut self.ranges, self.max_ranges);
        self.ranges.insert(i, merged);
        // `merged` covers everything drained, so this is what was new.
        let added = merged.len().saturating_sub(before);
        self.sacked += added;
        Some(added)
    }

    /// IsLost (RFC 6675 §4): whether octet `seq` is deemed lost, from the
    /// SACKed data above it.
    pub fn is_lost(&self, seq: Seq) -> bool {
        let after = seq + 1;
        let mut above = Above::default();
        for range in self.ranges.iter().rev() {
            if range.end <= after {
                break;
            }
            above.add(range.end.since(range.start.max(after)));
            if above.lost(self.smss) {
                return true;
            }
        }
        false
    }

    /// The loss-recovery entry test of RFC 6675 §5, steps (1) and (2), for
    /// a sender not in recovery that has just counted a duplicate ACK
    /// (per [`UpdateOutcome::is_duplicate_ack`]): DupAcks ≥ DupThresh, or
    /// IsLost(HighACK + 1).
    pub fn should_enter_recovery(&self, dup_acks: usize, snd_una: Seq) -> bool {
        dup_acks >= DUP_THRESH || self.is_lost(snd_una)
    }

    /// SetPipe (RFC 6675 §4): bytes deemed in flight. Every unSACKed octet
    /// from HighACK + 1 to HighData counts once if not deemed lost, and
    /// once more if retransmitted (below `high_rxt`).
    pub fn pipe(&self, snd_una: Seq, snd_max: Seq, high_rxt: Seq) -> usize {
        if snd_max <= snd_una {
            return 0;
        }
        // IsLost is the same for every octet of a gap between SACKed
        // ranges (the SACKed data above them is the same), so walk the
        // gaps from the top, totalling SACKed data above as we go.
        let mut pipe = 0usize;
        let mut above = Above::default();
        let mut top = snd_max;
        for range in self.ranges.iter().rev() {
            let start = range.start.max(snd_una);
            let end = range.end.min(snd_max);
            if start >= end {
                continue;
            }
            pipe = pipe.saturating_add(self.gap_pipe(end, top, high_rxt, &above));
            above.add(end.since(start));
            top = top.min(start);
        }
        pipe.saturating_add(self.gap_pipe(snd_una, top, high_rxt, &above))
    }

    /// The pipe contribution of the unSACKed octets `lo..hi`.
    fn gap_pipe(&self, lo: Seq, hi: Seq, high_rxt: Seq, above: &Above) -> usize {
        let len = hi.since(lo);
        let in_flight = if above.lost(self.smss) { 0 } else { len };
        // Octets of lo..hi below HighRxt + 1 were retransmitted.
        let retransmitted = high_rxt.min(hi).since(lo);
        in_flight + retransmitted
    }

    /// NextSeg (RFC 6675 §4): what to send next during loss recovery,
    /// at most SMSS bytes. The caller has checked cwnd − pipe ≥ SMSS
    /// (§5 step (C)).
    pub fn next_seg(&self, q: &NextSegQuery) -> NextSeg {
        let smss = self.smss;
        // (1.a), (1.b): the lowest unSACKed octet above HighRxt that lies
        // below the highest SACKed octet, and the hole it starts.
        let hole = self.first_hole_from(q.snd_una.max(q.high_rxt), q.snd_max);
        if let Some((start, end)) = hole {
            // (1.c): IsLost.
            if self.is_lost(start) {
                let len = end.since(start).min(smss);
                return NextSeg::Lost { start, len };
            }
        }
        // (2): new data, if any and the window admits it.
        if q.new_data > 0 {
            return NextSeg::NewData {
                start: q.snd_max,
                len: q.new_data.min(smss),
            };
        }
        // (3): as (1) without (1.c).
        if let Some((start, end)) = hole {
            return NextSeg::Unsacked {
                start,
                len: end.since(start).min(smss),
            };
        }
        // (4): one rescue retransmission per recovery, when HighACK >
        // RescueRxt (or RescueRxt is undefined), of the highest
        // outstanding unSACKed data.
        let rescue_allowed = q.rescue_rxt.is_none_or(|rescue| q.snd_una > rescue);
        if rescue_allowed {
            if let Some((lo, hi)) = self.last_hole(q.snd_una, q.snd_max) {
                let len = hi.since(lo).min(smss);
                return NextSeg::Rescue {
                    start: Seq(hi.0.wrapping_sub(len as u32)),
                    len,
                };
            }
        }
        NextSeg::Nothing
    }

    /// SACKed bytes within `lo..hi`.
    pub fn sacked_between(&self, lo: Seq, hi: Seq) -> usize {
        self.ranges
            .iter()
            .map(|r| hi.min(r.end).since(lo.max(r.start)))
            .sum()
    }

    /// The first unSACKed run at or after `from` and below `end`, as
    /// `(start, end)`, whether or not SACKed data lies above it (unlike
    /// NextSeg's holes): what a sender resending everything unSACKed
    /// sends next.
    pub fn unsacked_from(&self, from: Seq, end: Seq) -> Option<(Seq, Seq)> {
        let mut at = from;
        for range in &self.ranges {
            if range.end <= at {
                continue;
            }
            if range.start <= at {
                at = range.end;
                continue;
            }
            return (at < end).then_some((at, range.start.min(end)));
        }
        (at < end).then_some((at, end))
    }

    /// The first unSACKed run at or after `from` that has SACKed data
    /// above it, as `(start, end)`.
    fn first_hole_from(&self, from: Seq, snd_max: Seq) -> Option<(Seq, Seq)> {
        let mut at = from;
        for range in &self.ranges {
            if range.end <= at {
                continue;
            }
            if range.start <= at {
                at = range.end;
                continue;
            }
            return (at < snd_max).then_some((at, range.start.min(snd_max)));
        }
        None
    }

    /// The highest unSACKed run in `snd_una..snd_max`, as `(start, end)`.
    fn last_hole(&self, snd_una: Seq, snd_max: Seq) -> Option<(Seq, Seq)> {
        let mut top = snd_max;
        for range in self.ranges.iter().rev() {
            if range.start >= top {
                continue;
            }
            if range.end >= top {
                top = range.start;
                continue;
            }
            let lo = range.end.max(snd_una);
            return (lo < top).then_some((lo, top));
        }
        (snd_una < top).then_some((snd_una, top))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A base near the wrap, so every example crosses 2^32.
    const B: u32 = u32::MAX - 2500;

    fn at(offset: usize) -> Seq {
        Seq(B) + offset
    }

    fn blk(lo: usize, hi: usize) -> SackBlock {
        SackBlock::new(at(lo), at(hi))
    }

    /// SMSS 1000, ten segments outstanding from `at(0)`.
    fn board(blocks: &[SackBlock]) -> Scoreboard {
        let mut sb = Scoreboard::new(1000, 32).unwrap();
        sb.update(at(0), at(10_000), blocks);
        sb
    }

    fn query(high_rxt: usize, rescue_rxt: Option<usize>, new_data: usize) -> NextSegQuery {
        NextSegQuery {
            snd_una: at(0),
            snd_max: at(10_000),
            high_rxt: at(high_rxt),
            rescue_rxt: rescue_rxt.map(at),
            new_data,
        }
    }

    #[test]
    fn unsacked_runs_and_sacked_bytes_between() {
        let sb = board(&[blk(1000, 2000), blk(3000, 3500)]);
        assert_eq!(sb.unsacked_from(at(0), at(10_000)), Some((at(0), at(1000))));
        assert_eq!(
            sb.unsacked_from(at(1500), at(10_000)),
            Some((at(2000), at(3000)))
        );
        assert_eq!(
            sb.unsacked_from(at(3000), at(10_000)),
            Some((at(3500), at(10_000))),
            "above the last SACKed range too"
        );
        assert_eq!(
            sb.unsacked_from(at(2500), at(2800)),
            Some((at(2500), at(2800)))
        );
        assert_eq!(sb.unsacked_from(at(1200), at(2000)), None);
        assert_eq!(sb.unsacked_from(at(10_000), at(10_000)), None);
        assert_eq!(sb.sacked_between(at(0), at(10_000)), 1500);
        assert_eq!(sb.sacked_between(at(1500), at(3200)), 700);
        assert_eq!(sb.sacked_between(at(2000), at(3000)), 0);
    }

    #[test]
    fn rejects_unworkable_configurations() {
        assert_eq!(
            Scoreboard::new(0, 4).unwrap_err(),
            ScoreboardConfigError::ZeroSmss
        );
        assert!(matches!(
            Scoreboard::new(1000, MAX_RANGES_LIMIT + 1),
            Err(ScoreboardConfigError::TooManyRanges { .. })
        ));
    }

    #[test]
    fn three_discontiguous_sacked_sequences_mean_lost() {
        let two = board(&[blk(1000, 1100), blk(2000, 2100)]);
        assert!(!two.is_lost(at(0)), "two ranges, 200 bytes");
        let three = board(&[blk(1000, 1100), blk(2000, 2100), blk(3000, 3100)]);
        assert!(three.is_lost(at(0)));
        assert!(three.is_lost(at(999)));
        // Octet 1050 has only the part of the first range above it, plus two.
        assert!(three.is_lost(at(1050)));
        assert!(!three.is_lost(at(1099)), "only two ranges above");
        assert!(!three.is_lost(at(3100)));
    }

    #[test]
    fn more_than_two_smss_sacked_above_means_lost() {
        let exactly = board(&[blk(1000, 3000)]);
        assert!(
            !exactly.is_lost(at(0)),
            "2 · SMSS is not more than 2 · SMSS"
        );
        let more = board(&[blk(1000, 3001)]);
        assert!(more.is_lost(at(0)));
        assert!(more.is_lost(at(999)));
        assert!(!more.is_lost(at(1000)), "2000 bytes above octet 1000");
        let split = board(&[blk(1000, 2000), blk(2500, 3600)]);
        assert!(split.is_lost(at(0)), "2100 bytes in two ranges");
        assert!(!split.is_lost(at(2000)));
    }

    #[test]
    fn next_seg_sends_lost_data_then_new_data_then_a_rescue() {
        // 3000 bytes SACKed above the first segment: it is lost.
        let sb = board(&[blk(1000, 4000)]);
        assert_eq!(
            sb.next_seg(&query(0, None, 5000)),
            NextSeg::Lost {
                start: at(0),
                len: 1000
            }
        );
        // Once it is retransmitted, nothing lost remains: new data.
        assert_eq!(
            sb.next_seg(&query(1000, None, 5000)),
            NextSeg::NewData {
                start: at(10_000),
                len: 1000
            }
        );
        assert_eq!(
            sb.next_seg(&query(1000, None, 300)),
            NextSeg::NewData {
                start: at(10_000),
                len: 300
            }
        );
        // No new data: nothing for rule (3) below the highest SACK, so the
        // rescue covers the highest unSACKed octet, 9999.
        assert_eq!(
            sb.next_seg(&query(1000, None, 0)),
            NextSeg::Rescue {
                start: at(9000),
                len: 1000
            }
        );
        // One rescue per recovery: not again until HighACK > RescueRxt.
        assert_eq!(sb.next_seg(&query(1000, Some(10_000), 0)), NextSeg::Nothing);
        assert_eq!(sb.next_seg(&query(1000, Some(1000), 0)), NextSeg::Nothing);
        let mut later = board(&[blk(1000, 4000)]);
        later.update(at(1001), at(10_000), &[]);
        let q = NextSegQuery {
            snd_una: at(1001),
            ..query(1000, Some(1000), 0)
        };
        assert!(matches!(later.next_seg(&q), NextSeg::Rescue { .. }));
    }

    #[test]
    fn next_seg_rule_3_retransmits_unsacked_data_not_yet_lost() {
        // One SACKed segment above: nothing is lost yet.
        let sb = board(&[blk(2000, 3000)]);
        assert!(!sb.is_lost(at(0)));
        assert_eq!(
            sb.next_seg(&query(0, None, 1)),
            NextSeg::NewData {
                start: at(10_000),
                len: 1
            }
        );
        assert_eq!(
            sb.next_seg(&query(0, None, 0)),
            NextSeg::Unsacked {
                start: at(0),
                len: 1000
            }
        );
        assert_eq!(
            sb.next_seg(&query(1500, None, 0)),
            NextSeg::Unsacked {
                start: at(1500),
                len: 500
            }
        );
        // Past the highest SACKed octet only the rescue is left.
        assert_eq!(
            sb.next_seg(&query(3000, None, 0)),
            NextSeg::Rescue {
                start: at(9000),
                len: 1000
            }
        );
    }

    #[test]
    fn next_seg_never_resends_sacked_bytes() {
        let sb = board(&[blk(500, 4000), blk(4200, 5000), blk(9500, 10_000)]);
        assert_eq!(
            sb.next_seg(&query(0, None, 0)),
            NextSeg::Lost {
                start: at(0),
                len: 500
            }
        );
        // 1300 bytes in two ranges above 4000..4200: not lost, rule (3).
        assert_eq!(
            sb.next_seg(&query(500, None, 0)),
            NextSeg::Unsacked {
                start: at(4000),
                len: 200
            }
        );
        // The top is SACKed: the rescue ends below it.
        assert_eq!(
            sb.next_seg(&query(9500, None, 0)),
            NextSeg::Rescue {
                start: at(8500),
                len: 1000
            }
        );
        let all = board(&[blk(0, 10_000)]);
        assert_eq!(all.next_seg(&query(0, None, 0)), NextSeg::Nothing);
    }

    #[test]
    fn pipe_follows_set_pipe() {
        // Octets 0..1000 are lost; 4000..10000 are in flight.
        let sb = board(&[blk(1000, 4000)]);
        assert_eq!(sb.pipe(at(0), at(10_000), at(0)), 6000);
        // Retransmitting the lost segment puts it back in flight.
        assert_eq!(sb.pipe(at(0), at(10_000), at(1000)), 7000);
        // Nothing lost: a retransmitted octet counts twice.
        let sb = board(&[blk(5000, 6000)]);
        assert_eq!(sb.pipe(at(0), at(10_000), at(0)), 9000);
        assert_eq!(sb.pipe(at(0), at(10_000), at(500)), 9500);
        // Lost ranges between SACKed ones.
        let sb = board(&[
            blk(1000, 1100),
            blk(2000, 2100),
            blk(3000, 3100),
            blk(4000, 4100),
        ]);
        // Lost: 0..1000 (4 ranges above), 1100..2000 (3 above); in flight:
        // 2100..3000, 3100..4000, 4100..10000.
        assert_eq!(sb.pipe(at(0), at(10_000), at(0)), 900 + 900 + 5900);
        assert_eq!(sb.pipe(at(0), at(0), at(0)), 0);
        assert_eq!(board(&[]).pipe(at(0), at(10_000), at(0)), 10_000);
    }

    #[test]
    fn invalid_blocks_are_ignored_and_counted() {
        let mut sb = Scoreboard::new(1000, 32).unwrap();
        sb.update(at(1000), at(10_000), &[]);
        let outcome = sb.update(
            at(1000),
            at(10_000),
            &[
                blk(2000, 2500),
                blk(3000, 2900),
                blk(3000, 3000),
                blk(100, 900),
                blk(9000, 10_001),
                blk(500, 1500),
            ],
        );
        assert_eq!(outcome.invalid, 4);
        assert_eq!(outcome.dsack, None);
        assert_eq!(outcome.newly_sacked, 500 + 500);
        assert_eq!(
            sb.ranges().collect::<Vec<_>>(),
            [blk(1000, 1500), blk(2000, 2500)]
        );
        let c = *sb.counters();
        assert_eq!((c.inverted, c.below_una, c.beyond_max), (2, 1, 1));
        assert_eq!(c.invalid(), 4);
        assert_eq!(c.blocks, 6);
    }

    #[test]
    fn dsack_blocks_are_recognised_not_recorded() {
        let mut sb = Scoreboard::new(1000, 32).unwrap();
        let below = sb.update(at(1000), at(10_000), &[blk(0, 500), blk(2000, 2500)]);
        assert_eq!(below.dsack, Some(blk(0, 500)));
        assert_eq!(below.invalid, 0);
        assert_eq!(below.newly_sacked, 500);
        let inside = sb.update(at(1000), at(10_000), &[blk(3100, 3200), blk(3000, 3500)]);
        assert_eq!(inside.dsack, Some(blk(3100, 3200)));
        assert_eq!(inside.newly_sacked, 500);
        assert_eq!(sb.counters().dsacks, 2);
        assert_eq!(sb.sacked_bytes(), 1000);
    }

    #[test]
    fn cumulative_acks_prune_and_duplicate_acks_are_new_sack_data() {
        let mut sb = board(&[]);
        let first = sb.update(at(0), at(10_000), &[blk(2000, 3000)]);
        assert!(first.is_duplicate_ack());
        let again = sb.update(at(0), at(10_000), &[blk(2000, 3000)]);
        assert!(!again.is_duplicate_ack(), "nothing newly SACKed");
        sb.update(at(0), at(10_000), &[blk(5000, 6000), blk(2000, 3000)]);
        assert_eq!(sb.sacked_bytes(), 2000);
        sb.update(at(2500), at(10_000), &[]);
        assert_eq!(sb.sacked_bytes(), 1500);
        assert_eq!(sb.ranges().next(), Some(blk(2500, 3000)));
        sb.update(at(5500), at(10_000), &[]);
        assert_eq!(sb.ranges().collect::<Vec<_>>(), [blk(5500, 6000)]);
        assert_eq!(sb.high_sacked(), Some(at(6000)));
        sb.clear();
        assert_eq!((sb.sacked_bytes(), sb.high_sacked()), (0, None));
    }

    #[test]
    fn the_range_cap_drops_and_counts() {
        let mut sb = Scoreboard::new(1000, 2).unwrap();
        let outcome = sb.update(
            at(0),
            at(10_000),
            &[blk(1000, 1100), blk(3000, 3100), blk(5000, 5100)],
        );
        assert_eq!((outcome.newly_sacked, outcome.dropped), (200, 1));
        assert_eq!(sb.counters().overflow, 1);
        // Bridging and extending needs no new range.
        let bridge = sb.update(at(0), at(10_000), &[blk(1100, 3000), blk(3100, 3200)]);
        assert_eq!((bridge.newly_sacked, bridge.dropped), (2000, 0));
        assert_eq!(sb.ranges().collect::<Vec<_>>(), [blk(1000, 3200)]);
        let capacity = sb.ranges.capacity();
        sb.update(at(0), at(10_000), &[blk(5000, 5100), blk(7000, 7100)]);
        assert_eq!(sb.ranges.capacity(), capacity);
    }

    #[test]
    fn recovery_starts_on_dupthresh_or_a_lost_first_segment() {
        let sb = board(&[blk(2000, 3000)]);
        assert!(!sb.should_enter_recovery(1, at(0)));
        assert!(!sb.should_enter_recovery(2, at(0)));
        assert!(sb.should_enter_recovery(3, at(0)));
        let lost = board(&[blk(1000, 4000)]);
        assert!(lost.should_enter_recovery(1, at(0)));
    }

    /// A per-octet model of RFC 6675 §4, straight from the text.
    struct Model {
        sacked: Vec<bool>,
        smss: usize,
    }

    impl Model {
        fn is_lost(&self, s: usize) -> bool {
            let above = &self.sacked[(s + 1).min(self.sacked.len())..];
            let bytes = above.iter().filter(|&&b| b).count();
            let mut runs = 0;
            let mut prev = false;
            for &b in above {
                if b && !prev {
                    runs += 1;
                }
                prev = b;
            }
            runs >= DUP_THRESH || bytes > (DUP_THRESH - 1) * self.smss
        }

        fn pipe(&self, high_rxt: usize) -> usize {
            (0..self.sacked.len())
                .filter(|&s| !self.sacked[s])
                .map(|s| usize::from(!self.is_lost(s)) + usize::from(s < high_rxt))
                .sum()
        }

        fn next_seg(
            &self,
            high_rxt: usize,
            rescue_rxt: Option<i64>,
            new_data: usize,
        ) -> (u8, usize, usize) {
            let n = self.sacked.len();
            let highest_sacked = (0..n).rev().find(|&s| self.sacked[s]);
            let run_up = |s: usize| {
                (s..n)
                    .take_while(|&t| !self.sacked[t])
                    .count()
                    .min(self.smss)
            };
            let candidate =
                (high_rxt..n).find(|&s| !self.sacked[s] && highest_sacked.is_some_and(|h| s < h));
            if let Some(s) = candidate.filter(|&s| self.is_lost(s)) {
                return (1, s, run_up(s));
            }
            if new_data > 0 {
                return (2, n, new_data.min(self.smss));
            }
            if let Some(s) = candidate {
                return (3, s, run_up(s));
            }
            if rescue_rxt.is_none_or(|r| r < 0) {
                if let Some(top) = (0..n).rev().find(|&s| !self.sacked[s]) {
                    let len = (0..=top)
                        .rev()
                        .take_while(|&t| !self.sacked[t])
                        .count()
                        .min(self.smss);
                    return (4, top + 1 - len, len);
                }
            }
            (5, 0, 0)
        }
    }

    fn rule(seg: NextSeg, una: Seq) -> (u8, usize, usize) {
        let rel = |s: Seq| s.since(una);
        match seg {
            NextSeg::Lost { start, len } => (1, rel(start), len),
            NextSeg::NewData { start, len } => (2, rel(start), len),
            NextSeg::Unsacked { start, len } => (3, rel(start), len),
            NextSeg::Rescue { start, len } => (4, rel(start), len),
            NextSeg::Nothing => (5, 0, 0),
        }
    }

    proptest! {
        /// Against the per-octet model: the recorded ranges, IsLost for
        /// every octet, SetPipe and NextSeg all agree, across the wrap.
        #[test]
        fn matches_the_per_octet_model(
            base in any::<u32>(),
            outstanding in 1usize..1500,
            smss in 1usize..400,
            acks in proptest::collection::vec(
                (0usize..200, proptest::collection::vec((-100i64..1600, 0i64..600), 0..5)),
                1..8,
            ),
            high_rxt in 0usize..1600,
            rescue in proptest::option::of(-200i64..1600),
            new_data in 0usize..3,
        ) {
            let mut una = Seq(base);
            let max = Seq(base) + outstanding;
            let mut sb = Scoreboard::new(smss, MAX_RANGES_LIMIT).unwrap();
            // The model's octet i is una + i; it shifts as SND.UNA moves.
            let mut sacked = vec![false; outstanding];
            for (advance, blocks) in acks {
                let advance = advance.min(sacked.len());
                una += advance;
                sacked.drain(..advance);
                let blocks: Vec<SackBlock> = blocks
                    .iter()
                    .map(|&(lo, len)| {
                        let start = Seq(una.0.wrapping_add(lo as u32));
                        SackBlock::new(start, Seq(start.0.wrapping_add(len as u32)))
                    })
                    .collect();
                let outcome = sb.update(una, max, &blocks);
                let mut newly = 0;
                for (k, b) in blocks.iter().enumerate() {
                    let lo = b.start - una;
                    let hi = b.end - una;
                    let dsack = k == 0 && (hi <= 0 || blocks.get(1).is_some_and(|s| s.start <= b.start && b.end <= s.end));
                    if lo < hi && !dsack && hi > 0 && hi <= sacked.len() as i64 {
                        for s in lo.max(0)..hi {
                            newly += usize::from(!sacked[s as usize]);
                            sacked[s as usize] = true;
                        }
                    }
                }
                prop_assert_eq!(outcome.newly_sacked, newly);
            }
            let model = Model { sacked, smss };
            let n = model.sacked.len();
            let recorded: Vec<bool> = (0..n)
                .map(|i| sb.ranges().any(|r| r.start <= una + i && una + i < r.end))
                .collect();
            prop_assert_eq!(&recorded, &model.sacked);
            prop_assert_eq!(sb.sacked_bytes(), model.sacked.iter().filter(|&&b| b).count());
            for s in 0..n {
                prop_assert_eq!(sb.is_lost(una + s), model.is_lost(s), "octet {}", s);
            }
            let high_rxt = high_rxt.min(n);
            prop_assert_eq!(sb.pipe(una, max, una + high_rxt), model.pipe(high_rxt));
            let q = NextSegQuery {
                snd_una: una,
                snd_max: max,
                high_rxt: una + high_rxt,
                // Relative to the final SND.UNA: only a rescue point behind
                // it (HighACK > RescueRxt) allows a rescue.
                rescue_rxt: rescue.map(|r| Seq(una.0.wrapping_add(r as u32))),
                new_data,
            };
            prop_assert_eq!(rule(sb.next_seg(&q), una), model.next_seg(high_rxt, rescue, new_data));
        }

        /// Hostile SACK blocks never panic, never grow the ranges past the
        /// cap, and never claim more than SND.MAX − SND.UNA.
        #[test]
        fn hostile_blocks_keep_the_invariants(
            base in any::<u32>(),
            window in 0usize..100_000,
            cap in 0usize..6,
            acks in proptest::collection::vec(
                (0usize..20_000, proptest::collection::vec((any::<u32>(), any::<u32>(), any::<bool>()), 0..6)),
                1..20,
            ),
        ) {
            let mut sb = Scoreboard::new(1460, cap).unwrap();
            let mut una = Seq(base);
            let max = Seq(base) + window;
            for (advance, raw) in acks {
                una += advance.min(max.since(una));
                // Half the blocks near the window, half anywhere.
                let blocks: Vec<SackBlock> = raw
                    .iter()
                    .map(|&(a, b, near)| {
                        if near {
                            let start = Seq(base.wrapping_add(a % 120_000));
                            SackBlock::new(start, Seq(start.0.wrapping_add(b % 30_000)))
                        } else {
                            SackBlock::from_wire((a, b))
                        }
                    })
                    .collect();
                let outcome = sb.update(una, max, &blocks);
                prop_assert!(outcome.invalid + outcome.dropped + usize::from(outcome.dsack.is_some()) <= blocks.len());
                let ranges: Vec<SackBlock> = sb.ranges().collect();
                prop_assert!(ranges.len() <= cap);
                prop_assert!(sb.ranges.capacity() <= cap.max(sb.ranges.len()));
                for r in &ranges {
                    prop_assert!(una <= r.start && r.start < r.end && r.end <= max);
                }
                for pair in ranges.windows(2) {
                    prop_assert!(pair[0].end < pair[1].start);
                }
                prop_assert_eq!(sb.sacked_bytes(), ranges.iter().map(|r| r.len()).sum::<usize>());
                prop_assert!(sb.sacked_bytes() <= max.since(una));
                prop_assert!(sb.pipe(una, max, una) <= max.since(una));
                let q = NextSegQuery { snd_una: una, snd_max: max, high_rxt: una, rescue_rxt: None, new_data: 0 };
                match sb.next_seg(&q) {
                    NextSeg::Lost { start, len } | NextSeg::Unsacked { start, len } | NextSeg::Rescue { start, len } => {
                        prop_assert!(len > 0 && len <= 1460);
                        prop_assert!(una <= start && start + len <= max);
                    }
                    NextSeg::NewData { .. } => prop_assert!(false, "no new data was offered"),
                    NextSeg::Nothing => prop_assert!(sb.sacked_bytes() == max.since(una)),
                }
            }
        }
    }
}
