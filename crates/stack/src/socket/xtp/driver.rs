//! The character-driver interface of the study's KRM (Taler 1992 §3.4.2)
//! on an association, beside the socket interface's copying `send` and
//! `recv`: "the read and write buffers are locked down into memory ...
//! both the write and read operations will block until the data have been
//! fully delivered and acknowledged. A different mechanism is used for
//! short data buffers, which are copied."
//!
//! Here a write hands the writer's buffer over by reference (a shared
//! [`Bytes`], the lock-down) and is done only once the peer's reader took
//! every byte and said so, which the association learns by asking with
//! DREQ instead of SREQ (XTP 4.0: a DREQ is answered once the data were
//! delivered to the reader). A write's last packet carries EOM (XTP 4.0's
//! end of message). A read posts the reader's buffer, which arriving data
//! fill straight from the packet (one copy instead of two), done when
//! full, at the stream's end, or when it holds a message's end (else a
//! short write and a long read would wait on each other for ever).

use bytes::Bytes;

use super::association::{Association, State};
use super::config::is_message_service;

/// Writes shorter than this are copied into the send stream, longer ones
/// referenced. The study does not say where the KRM drew the line; its
/// Table 1 has the socket interface pull ahead of the driver from about
/// 256 B, where locking the buffer down starts to cost.
pub const DRIVER_COPY_BELOW: usize = 256;

impl Association {
    /// Starts a driver write of `data`, whole. `false` when a write is in
    /// progress, the sending half is closed, or `data` does not fit (a
    /// short write is copied and needs the room).
    pub fn driver_write(&mut self, data: Bytes) -> bool {
        if self.driver_write.is_some()
            || self.state == State::Closed
            || self.peer_rclosed
            || self.send.is_closed()
            || data.is_empty()
        {
            return false;
        }
        // Delivery confirmations are what end a driver write.
        self.config.delivery_requests = true;
        let len = data.len();
        let taken = if len < DRIVER_COPY_BELOW {
            if self.send.room() < len {
                return false;
            }
            self.send(&data)
        } else {
            let taken = self.send.lend(data);
            if taken > 0 && is_message_service(self.config.service) {
                self.send.close();
            }
            taken
        };
        if taken < len {
            return false;
        }
        self.driver_write = Some((len, self.send.written_end()));
        true
    }

    /// The write in progress's length once the peer's reader took all of
    /// it (the write is then over); `None` while it is not, or when no
    /// write is in progress.
    pub fn driver_write_done(&mut self) -> Option<usize> {
        let (len, end) = self.driver_write?;
        if self.send.una() >= end && self.delivered >= end {
            self.driver_write = None;
            return Some(len);
        }
        None
    }

    /// Whether a packet whose data end at `stop` ends the driver write in
    /// progress (it then carries EOM).
    pub(super) fn ends_driver_write(&self, stop: u64) -> bool {
        self.driver_write.is_some_and(|(_, end)| end == stop)
    }

    /// Bytes the peer confirmed its reader took (answers to DREQ).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Whether a driver write is in progress.
    pub fn driver_writing(&self) -> bool {
        self.driver_write.is_some()
    }

    /// A driver write waits for the peer to confirm delivery: WTIMER
    /// runs, so a lost confirmation is asked for again.
    pub(super) fn awaits_delivery(&self) -> bool {
        self.driver_write
            .is_some_and(|(_, end)| self.delivered < end)
    }

    /// Posts the reader's `buf` for `want` bytes (at least one). `false`
    /// when a read is posted already.
    pub fn driver_read(&mut self, buf: Vec<u8>, want: usize) -> bool {
        if !self.recv.post(buf, want.max(1)) {
            return false;
        }
        self.note_alloc_growth();
        true
    }

    /// The posted buffer, holding what it got, once the read is done:
    /// full, the peer's stream ended (or this end stopped reading, or the
    /// association closed), or it holds the end of a message (EOM). `None`
    /// while not done or nothing is posted.
    pub fn driver_read_done(&mut self) -> Option<Vec<u8>> {
        let fill = self.recv.posted_fill()? as u64;
        let read = self.recv.read_total();
        let pushed = fill > 0 && self.pushed_to > read - fill && self.pushed_to <= read;
        let ended = self.recv.at_eof() || self.read_abandoned || self.state == State::Closed;
        if self.recv.posted_full() || pushed || ended {
            return self.recv.take_posted();
        }
        None
    }

    /// Whether a driver read is posted.
    pub fn driver_reading(&self) -> bool {
        self.recv.posted_fill().is_some()
    }

    /// Bytes that arrived in order so far (into the receive buffer or a
    /// posted read).
    pub fn arrived_total(&self) -> u64 {
        self.recv.arrived_total()
    }
}
