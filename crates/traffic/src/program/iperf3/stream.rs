//! One data stream of a test, TCP or UDP, receiving (the client sends)
//! or sending (`-R`, paced to `-b` when given): what it moved, counted as
//! the stack moved it.

use stack::time::Instant;

use super::udp::{self, Reception};
use crate::error::TrafficError;
use crate::pace::Pacer;
use crate::transport::{Peer, Read, Transport};

/// Reads or writes per stream per step, so one stream cannot starve the
/// others, the control connection or the host's poll.
const BUDGET: usize = 64;

/// Where a stream's data goes.
#[derive(Debug, Clone, Copy)]
pub enum Channel<S, D> {
    Tcp(S),
    /// The server's UDP socket of the client's family, and the client's
    /// address (one socket serves every stream: datagrams are told apart
    /// by their sender).
    Udp {
        socket: D,
        peer: Peer,
    },
}

/// What one step of the streams did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Moved {
    pub any: bool,
    /// The earliest a paced stream may send again.
    pub wake: Option<Instant>,
}

impl Moved {
    pub fn wake_at(&mut self, at: Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
}

/// One data stream and its counts.
#[derive(Debug)]
pub struct DataStream<S, D> {
    /// iperf3's stream id (1, 3, 4, … in the order streams were opened).
    pub id: u32,
    pub channel: Channel<S, D>,
    /// Receiving: what arrived (UDP: with counts, losses and jitter).
    pub received: Reception,
    /// When the last data arrived.
    pub last_arrival: Option<Instant>,
    /// The client closed the stream.
    pub ended: bool,
    /// Sending: bytes the stack took, and datagrams.
    pub sent_bytes: u64,
    pub sent_datagrams: u64,
    pacer: Option<Pacer>,
    /// TCP sending: how far into the current block.
    offset: usize,
}

impl<S: Copy, D: Copy> DataStream<S, D> {
    pub fn new(id: u32, channel: Channel<S, D>) -> Self {
        Self {
            id,
            channel,
            received: Reception::default(),
            last_arrival: None,
            ended: false,
            sent_bytes: 0,
            sent_datagrams: 0,
            pacer: None,
            offset: 0,
        }
    }

    /// Starts the clock of a paced sender.
    pub fn start_sending(&mut self, rate: Option<u64>, now: Instant) {
        self.pacer = rate.map(|r| Pacer::new(r, now));
    }

    /// Reads what arrived on a TCP stream.
    pub fn receive_tcp<N: Transport<Stream = S, Datagrams = D>>(
        &mut self,
        net: &mut N,
        buf: &mut [u8],
        moved: &mut Moved,
    ) -> Result<(), TrafficError> {
        let Channel::Tcp(stream) = self.channel else {
            return Ok(());
        };
        for _ in 0..BUDGET {
            if self.ended {
                break;
            }
            match net.recv(stream, buf)? {
                Read::Data(n) => {
                    self.received.bytes += n as u64;
                    self.last_arrival = Some(net.now());
                    moved.any = true;
                }
                Read::Nothing => break,
                Read::End => {
                    self.ended = true;
                    moved.any = true;
                }
            }
        }
        Ok(())
    }

    /// Counts a UDP datagram of this stream.
    pub fn receive_datagram(&mut self, datagram: &[u8], counters_64bit: bool, now: Instant) {
        // Shorter than a header: not iperf3's; nothing to count it by.
        if let Some((sent, count)) = udp::read_header(datagram, counters_64bit) {
            let arrival = now.as_nanos() as f64 / 1e9;
            self.received.record(datagram.len(), sent, count, arrival);
            self.last_arrival = Some(now);
        }
    }

    /// Sends what pacing and the stack allow, never more than `left`
    /// bytes (the test's `-n`, all streams together) when given.
    /// `block` holds one write (`-l` bytes).
    pub fn send<N: Transport<Stream = S, Datagrams = D>>(
        &mut self,
        net: &mut N,
        block: &mut [u8],
        left: &mut Option<u64>,
        counters_64bit: bool,
        moved: &mut Moved,
    ) -> Result<(), TrafficError> {
        for _ in 0..BUDGET {
            if *left == Some(0) {
                return Ok(());
            }
            let now = net.now();
            if let Some(pacer) = &self.pacer {
                let due = pacer.due();
                if due > now {
                    moved.wake_at(due);
                    return Ok(());
                }
            }
            let sent = match self.channel {
                Channel::Tcp(stream) => {
                    let mut chunk = block.len() - self.offset;
                    if let Some(left) = *left {
                        chunk = chunk.min(usize::try_from(left).unwrap_or(usize::MAX));
                    }
                    let n = net.send(stream, &block[self.offset..self.offset + chunk])?;
                    self.offset = (self.offset + n) % block.len();
                    n
                }
                Channel::Udp { socket, peer } => {
                    let count = self.sent_datagrams + 1;
                    udp::write_header(block, now, count, counters_64bit);
                    if net.send_to(socket, block, peer)? {
                        self.sent_datagrams = count;
                        block.len()
                    } else {
                        // The socket's queue is full: the host drains
                        // it at its next poll.
                        moved.wake_at(now);
                        0
                    }
                }
            };
            if sent == 0 {
                return Ok(());
            }
            moved.any = true;
            self.sent_bytes += sent as u64;
            if let Some(pacer) = &mut self.pacer {
                pacer.sent(sent);
            }
            if let Some(left) = left {
                *left = left.saturating_sub(sent as u64);
            }
        }
        Ok(())
    }
}
