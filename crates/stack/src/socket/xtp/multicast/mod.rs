//! XTP reliable multicast: one sender streams to an IP multicast group,
//! every receiver context for the group and port takes the stream, and the
//! sender frees data only once every receiver it knows has it.
//!
//! The study (seed `002`, "Reliable Multicast Mechanism") gives the rules
//! this follows: "the same protocol procedures are used, as in unicast
//! mode. The major differences consist in addressing and the processing
//! involved in the generation of responses to the control-request
//! packets"; receivers *slot* ("a random delay before responding to
//! control packets") and *damp* ("will not send such a control packet if
//! a similar one has already been sent by another node"); "if a receiver
//! cannot keep up a multicast conversation, it will drop out". What the
//! XTP 4.0 text would say beyond that (it is not at hand) is chosen here
//! and listed in `docs/xtp.md` ("Multicast"):
//!
//! * every packet of the association carries MULTI and goes to the group;
//!   the sender's under its key, the receivers' under the sender's key
//!   with the return bit (so every receiver hears the others, for damping);
//! * FIRST (service 6, reliable multicast stream) announces the
//!   association; each receiver answers with JCNTL (its own key as `xkey`),
//!   from which the sender learns it; data follow once the expected
//!   number of receivers joined (FIRST is sent again under WTIMER until);
//! * the group's `rseq` is the least of the receivers' and its `alloc` the
//!   least of theirs ([`sender`]); answers to SREQ are slotted and damped
//!   ([`receiver`]); gaps reported are resent to the group.
//!
//! Nothing here does I/O or reads a clock (host glue:
//! `iface::host::xtp_group`).

pub mod receiver;
pub mod sender;

use std::time::Duration;

pub use receiver::GroupReceiver;
pub use sender::GroupSender;

/// Receivers one sender keeps state for at most: a join beyond is refused
/// and counted (`receivers_refused`).
pub const MAX_RECEIVERS: usize = 64;

/// Spans a receiver reports at most in one ECNTL.
pub const MAX_SPANS: usize = 64;

/// The options of a multicast sender or receiver context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfig {
    /// Bytes the sender holds until every receiver has them.
    pub send_buffer: usize,
    /// A receiver's buffer: what it reports as `alloc` beyond bytes read.
    pub recv_buffer: usize,
    /// Receivers the sender waits for (their JCNTL) before sending data.
    pub receivers: usize,
    /// Receivers cancel an answer another receiver's answer covers.
    pub damping: bool,
    /// Receivers answer a request after a random delay in `[0, slot)`.
    pub slotting: bool,
    /// The longest slot delay.
    pub slot: Duration,
    /// WTIMER: how long the sender waits for answers before asking again
    /// (doubled per request in a row that not every receiver answered).
    pub wtimer: Duration,
    /// Requests in a row a receiver may leave unanswered, with nothing
    /// heard that could have damped it, before the sender drops it; also
    /// FIRSTs without enough joins before the sender gives up.
    pub retries: u32,
    /// Seed of the receivers' slot delays (mixed with the host's).
    pub seed: u64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            receivers: 1,
            damping: true,
            slotting: true,
            slot: Duration::from_millis(1),
            wtimer: Duration::from_millis(20),
            retries: 12,
            seed: 0,
        }
    }
}

/// What a multicast context counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCounters {
    /// FIRST and DATA packets sent (sender).
    pub data_packets: u64,
    /// Of those, packets carrying bytes sent before (sender).
    pub resent_packets: u64,
    pub resent_bytes: u64,
    /// Control packets with SREQ, and FIRSTs (sender).
    pub requests: u64,
    /// Receivers' control packets taken (sender).
    pub controls_received: u64,
    pub receivers_joined: u64,
    /// Receivers that left with END (sender).
    pub receivers_left: u64,
    /// Receivers dropped as silent (sender).
    pub receivers_dropped: u64,
    /// Joins refused past [`MAX_RECEIVERS`] (sender).
    pub receivers_refused: u64,
    /// CNTL, ECNTL and JCNTL packets sent (receiver).
    pub controls_sent: u64,
    /// Answers cancelled by another receiver's (receiver).
    pub controls_damped: u64,
    /// Data packets taken, and those that brought nothing new (receiver).
    pub data_received: u64,
    pub duplicates: u64,
}

/// A multicast context's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// Sender: FIRST sent, waiting for receivers to join. Receiver: no
    /// sender heard yet.
    Joining,
    /// Data flowing.
    Streaming,
    /// Sender: every receiver has the whole stream. Receiver: the whole
    /// stream arrived.
    Done,
    /// Sender: not enough receivers joined. Receiver: left the group.
    Closed,
}

/// The ranges of `[from, to)` not covered by `held` (ascending, disjoint).
pub(crate) fn gaps(from: u64, to: u64, held: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cursor = from;
    for &(left, right) in held {
        if cursor >= to {
            break;
        }
        if left > cursor {
            out.push((cursor, left.min(to)));
        }
        cursor = cursor.max(right);
    }
    if cursor < to {
        out.push((cursor, to));
    }
    out
}

#[cfg(test)]
mod tests;
