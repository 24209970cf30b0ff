//! Sockets: the application's end of the data path (DESIGN.md, "Data path
//! and probe points").
//!
//! A socket is pure data: a bounded send queue the application fills and
//! the host drains, and a bounded receive queue the host fills and the
//! application drains. The host owns the sockets and does all protocol
//! work (headers, checksums, routing); sockets never do I/O or read a
//! clock. Each queue records an enqueue and a dequeue probe carrying the
//! same `aux` (a per-socket message number), so analysis can pair them
//! into a queueing delay; `socket.send` / `socket.recv` spans mark the
//! application's calls.
//!
//! Memory is bounded: a queue never holds more than its configured number
//! of entries (or bytes, for receive queues); what does not fit is refused
//! and counted.

pub mod link;
mod queues;
pub mod raw;
pub mod slab;
pub mod tcp;
pub mod udp;
pub mod xtp;

use std::collections::VecDeque;

use probe::Flow;

pub use link::{LinkConfig, LinkSocket, OutgoingFrame, ReceivedFrame};
pub use raw::{RawConfig, RawFamily, RawPacket, RawSocket};
pub use udp::{
    OutgoingDatagram, ReceivedDatagram, UdpConfig, UdpSocket, MAX_UDP4_PAYLOAD, MAX_UDP6_PAYLOAD,
};

/// Why an application's send was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the socket's send queue is full")]
    QueueFull,
    #[error("a {len}-byte message exceeds the socket's maximum of {max} bytes")]
    TooLarge { len: usize, max: usize },
    /// More than a UDP datagram of the destination's family carries
    /// (RFC 768 with RFC 791 or RFC 8200).
    #[error("a {len}-byte payload exceeds the {max} bytes a UDP datagram over {family} carries")]
    DatagramTooLarge {
        len: usize,
        max: usize,
        family: &'static str,
    },
    #[error("the buffer pool is exhausted")]
    PoolExhausted,
    #[error("the destination's address family differs from the socket's")]
    FamilyMismatch,
}

/// Counters of one socket, shared by every socket kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SocketCounters {
    /// Messages the host took from the send queue.
    pub sent_datagrams: usize,
    /// Payload bytes of those messages.
    pub sent_bytes: usize,
    /// Sends refused because the send queue was full.
    pub send_queue_full: usize,
    /// Messages the host placed in the receive queue.
    pub received_datagrams: usize,
    /// Payload bytes of those messages.
    pub received_bytes: usize,
    /// Messages dropped because the receive queue was full (by count or
    /// by bytes).
    pub recv_queue_full: usize,
    /// Most messages ever in the send queue at once.
    pub send_queue_high_water: usize,
    /// Most messages ever in the receive queue at once.
    pub recv_queue_high_water: usize,
}

/// A probe's `len` field: saturates instead of wrapping.
pub(crate) fn probe_len(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// One queued message with what its dequeue probe must repeat: the flow
/// as it was at enqueue (so toggling the trace flag never leaves half a
/// pair) and the message number.
struct Entry<T> {
    item: T,
    len: usize,
    flow: Flow,
    aux: u64,
}

/// A FIFO bounded by entries and payload bytes. Storage grows on demand
/// but never past `max_entries`, so an idle socket costs nothing and a
/// busy one no more than its bound.
struct BoundedQueue<T> {
    entries: VecDeque<Entry<T>>,
    max_entries: usize,
    max_bytes: usize,
    bytes: usize,
    high_water: usize,
}

impl<T> BoundedQueue<T> {
    fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            max_entries,
            max_bytes,
            bytes: 0,
            high_water: 0,
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Whether `len` more bytes fit (saturating: untrusted lengths never
    /// overflow).
    fn fits(&self, len: usize) -> bool {
        !self.is_full() && self.bytes.saturating_add(len) <= self.max_bytes
    }

    /// Appends `entry` if it fits, else hands it back.
    fn push(&mut self, entry: Entry<T>) -> Result<(), Entry<T>> {
        if !self.fits(entry.len) {
            return Err(entry);
        }
        if self.entries.len() == self.entries.capacity() {
            // Geometric growth, clamped to the bound.
            let room = self.max_entries - self.entries.len();
            let grow = self.entries.capacity().max(4).min(room);
            self.entries.reserve_exact(grow);
        }
        self.bytes += entry.len;
        self.entries.push_back(entry);
        self.high_water = self.high_water.max(self.entries.len());
        Ok(())
    }

    fn front(&self) -> Option<&Entry<T>> {
        self.entries.front()
    }

    fn pop(&mut self) -> Option<Entry<T>> {
        let entry = self.entries.pop_front()?;
        self.bytes -= entry.len;
        Some(entry)
    }
}
