//! The two queues every socket kind has, with their message numbering,
//! probes and counters: written once, used by UDP, raw and link-level
//! sockets.

use probe::Flow;

use super::{probe_len, BoundedQueue, Entry, SendError, SocketCounters};
use crate::buffer::Packet;
use crate::probes::{
    RECV_QUEUE_DEQUEUE, RECV_QUEUE_ENQUEUE, SEND_QUEUE_DEQUEUE, SEND_QUEUE_ENQUEUE,
    SOCKET_RECV_ENTER, SOCKET_RECV_EXIT,
};

/// A received message: what a receive queue holds.
pub(super) trait Message {
    fn payload(&self) -> &Packet;
    fn payload_mut(&mut self) -> &mut Packet;
}

/// A socket's send queue of `S` and receive queue of `R`.
pub(super) struct Queues<S, R> {
    send: BoundedQueue<S>,
    recv: BoundedQueue<R>,
    /// Message numbers: the `aux` pairing a queue's enqueue and dequeue.
    send_seq: u64,
    recv_seq: u64,
    pub counters: SocketCounters,
}

impl<S, R: Message> Queues<S, R> {
    /// Sends are bounded by count (each message by the socket's maximum);
    /// receives by count and bytes.
    pub fn new(send_entries: usize, recv_entries: usize, recv_bytes: usize) -> Self {
        Self {
            send: BoundedQueue::new(send_entries, usize::MAX),
            recv: BoundedQueue::new(recv_entries, recv_bytes),
            send_seq: 0,
            recv_seq: 0,
            counters: SocketCounters::default(),
        }
    }

    /// The message number of an application send that is starting (every
    /// call gets one, refused or not).
    pub fn next_send(&mut self) -> u64 {
        self.send_seq += 1;
        self.send_seq
    }

    /// Refuses (and counts) a send when the send queue is full.
    pub fn check_send_room(&mut self) -> Result<(), SendError> {
        if self.send.is_full() {
            self.counters.send_queue_full += 1;
            return Err(SendError::QueueFull);
        }
        Ok(())
    }

    /// Queues a message of `len` payload bytes for the host.
    pub fn enqueue_send(
        &mut self,
        item: S,
        len: usize,
        flow: Flow,
        aux: u64,
    ) -> Result<(), SendError> {
        let entry = Entry {
            item,
            len,
            flow,
            aux,
        };
        if self.send.push(entry).is_err() {
            self.counters.send_queue_full += 1;
            return Err(SendError::QueueFull);
        }
        self.counters.send_queue_high_water = self.send.high_water;
        probe::record_with(SEND_QUEUE_ENQUEUE, flow, || (probe_len(len), aux));
        Ok(())
    }

    /// The host takes the oldest message to send.
    pub fn dequeue_send(&mut self) -> Option<S> {
        let entry = self.send.pop()?;
        probe::record_with(SEND_QUEUE_DEQUEUE, entry.flow, || {
            (probe_len(entry.len), entry.aux)
        });
        self.counters.sent_datagrams += 1;
        self.counters.sent_bytes += entry.len;
        Some(entry.item)
    }

    /// The host hands over a received message; dropped and counted
    /// (`false`) when the receive queue is full by count or bytes.
    pub fn deliver(&mut self, mut item: R, socket_flow: Flow) -> bool {
        let len = item.payload().len();
        if !self.recv.fits(len) {
            self.counters.recv_queue_full += 1;
            return false;
        }
        // A packet traced from the wire keeps the sender's flow id, so one
        // message can be followed through both stacks (DESIGN.md, "Probe
        // events"); otherwise it joins the socket's flow.
        let arrived = item.payload().flow();
        let flow = if arrived.traced { arrived } else { socket_flow };
        item.payload_mut().set_flow(flow);
        self.recv_seq += 1;
        let aux = self.recv_seq;
        let entry = Entry {
            item,
            len,
            flow,
            aux,
        };
        if self.recv.push(entry).is_err() {
            self.counters.recv_queue_full += 1;
            return false;
        }
        self.counters.received_datagrams += 1;
        self.counters.received_bytes += len;
        self.counters.recv_queue_high_water = self.recv.high_water;
        probe::record_with(RECV_QUEUE_ENQUEUE, flow, || (probe_len(len), aux));
        true
    }

    /// Takes the oldest received message without copying it.
    pub fn recv(&mut self) -> Option<R> {
        let entry = self.recv.pop()?;
        probe::record_with(RECV_QUEUE_DEQUEUE, entry.flow, || {
            (probe_len(entry.len), entry.aux)
        });
        Some(entry.item)
    }

    /// The application's read: copies the oldest message into `out` (what
    /// does not fit is discarded, as on any datagram socket) inside a
    /// `socket.recv` span, and returns the bytes copied with the message.
    pub fn recv_into(&mut self, out: &mut [u8]) -> Option<(usize, R)> {
        let (flow, aux) = self.recv.front().map(|e| (e.flow, e.aux))?;
        let mut span = probe::span_with(SOCKET_RECV_ENTER, SOCKET_RECV_EXIT, flow, || {
            (probe_len(out.len()), aux)
        });
        let item = self.recv()?;
        let copied = item.payload().copy_out(0, out);
        span.set_len(probe_len(copied));
        Some((copied, item))
    }

    pub fn send_len(&self) -> usize {
        self.send.len()
    }

    pub fn recv_len(&self) -> usize {
        self.recv.len()
    }
}
