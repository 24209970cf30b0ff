//! The capture's writer thread and the ring's chunk format.
//!
//! The link's thread copies frames into *chunks* (byte buffers allocated
//! and written once up front) as records `[timestamp ns u64][direction
//! u8][length u32][bytes]`, little-endian, and hands full chunks over a
//! bounded channel. This thread turns them into pcapng, writes them out and
//! hands the emptied chunks back. It looks for chunks every
//! `drain_interval` on its own: the link's thread never wakes it (a wake is
//! a system call), except to flush, finish, or wait for a chunk when the
//! capture must be lossless. It writes in batches (half the ring, or what
//! has waited a second), so that it works seldom beside the measured
//! threads.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::stream;
use wire::pcapng::{CapturedPacket, Direction, InterfaceId, LinkType, PcapngWriter};

/// Bytes in front of each frame in a chunk.
pub(super) const RECORD_HEADER: usize = 8 + 1 + 4;

/// The buffered output is flushed when the writer has found nothing to do
/// and last flushed this long ago, so a long-running host's capture can be
/// read while it runs.
const IDLE_FLUSH: Duration = Duration::from_secs(1);

/// From the link's thread to the writer.
pub(super) enum ToWriter {
    Chunk(Vec<u8>),
    /// Write out everything so far and acknowledge.
    Flush,
    /// Write out everything and end.
    Stop,
}

/// What both sides see: the writer's counters and its first failure.
#[derive(Default)]
pub(super) struct Shared {
    /// Set at the first failure: the link's thread stops copying. It reads
    /// this for every frame, so it has a cache line of its own: the
    /// writer's counters changing beside it would make each read a miss.
    pub failed: OwnLine<AtomicBool>,
    pub written: AtomicU64,
    pub missed: AtomicU64,
    pub errors: AtomicU64,
    pub error: OnceLock<io::Error>,
}

/// A value alone on its cache line (128 bytes: adjacent-line prefetch
/// pairs 64-byte lines on x86).
#[derive(Default)]
#[repr(align(128))]
pub(super) struct OwnLine<T>(pub T);

impl Shared {
    pub fn fail(&self, error: io::Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.failed.0.store(true, Ordering::Release);
        let _ = self.error.set(error);
    }
}

/// Appends one frame's record to `chunk`, padded to the record alignment
/// (`stream.rs`); the caller checked that [`record_len`] fits in the
/// chunk's capacity, so nothing is allocated.
pub(super) fn append(
    chunk: &mut Vec<u8>,
    timestamp_ns: u64,
    direction: Direction,
    parts: &[&[u8]],
    len: usize,
) {
    let mut header = [0u8; RECORD_HEADER];
    header[..8].copy_from_slice(&timestamp_ns.to_le_bytes());
    header[8] = match direction {
        Direction::Inbound => 1,
        Direction::Outbound => 2,
    };
    header[9..].copy_from_slice(&(len as u32).to_le_bytes());
    let pieces = std::iter::once(&header[..]).chain(parts.iter().copied());
    stream::append_padded(chunk, pieces, RECORD_HEADER + len);
}

/// Bytes a record of a `len`-byte frame takes in a chunk.
pub(super) fn record_len(len: usize) -> usize {
    stream::padded(RECORD_HEADER + len)
}

/// The records of a chunk: (timestamp ns, direction, frame).
fn records(chunk: &[u8]) -> impl Iterator<Item = (u64, Direction, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let header = chunk.get(at..at.checked_add(RECORD_HEADER)?)?;
        let timestamp = u64::from_le_bytes(header[..8].try_into().ok()?);
        let direction = if header[8] == 1 {
            Direction::Inbound
        } else {
            Direction::Outbound
        };
        let len = u32::from_le_bytes(header[9..13].try_into().ok()?) as usize;
        let start = at + RECORD_HEADER;
        let frame = chunk.get(start..start.checked_add(len)?)?;
        at += record_len(len);
        Some((timestamp, direction, frame))
    })
}

/// The channels and settings the writer thread runs with.
pub(super) struct Writer {
    pub out: Box<dyn Write + Send>,
    pub interface_name: String,
    pub link_type: LinkType,
    pub shared: Arc<Shared>,
    pub full: Receiver<ToWriter>,
    pub free: SyncSender<Vec<u8>>,
    pub acks: SyncSender<()>,
    /// Told once whether the pcapng header could be written.
    pub ready: SyncSender<bool>,
    pub drain_interval: Duration,
    /// Full chunks gathered before they are written: the writer works
    /// seldom, in batches, rather than beside every message (its work is
    /// memory traffic the measured threads share).
    pub batch: usize,
}

/// The pcapng stream and how it is going.
struct Output {
    writer: PcapngWriter<Box<dyn Write + Send>>,
    interface: InterfaceId,
    shared: Arc<Shared>,
    /// False after the first failure: later frames are counted as missed.
    live: bool,
    /// Written since the last flush.
    dirty: bool,
    last_flush: Instant,
}

impl Output {
    fn write_chunk(&mut self, chunk: &[u8]) {
        // Counted once per chunk: fewer writes to shared lines.
        let (mut written, mut missed) = (0u64, 0u64);
        for (timestamp_ns, direction, data) in records(chunk) {
            if !self.live {
                missed += 1;
                continue;
            }
            let packet = CapturedPacket {
                timestamp_ns,
                data,
                original_len: None,
                comment: None,
                direction: Some(direction),
            };
            match self.writer.write_packet(self.interface, &packet) {
                Ok(()) => {
                    written += 1;
                    self.dirty = true;
                }
                Err(error) => {
                    missed += 1;
                    self.shared.fail(error);
                    self.live = false;
                }
            }
        }
        self.shared.written.fetch_add(written, Ordering::Relaxed);
        self.shared.missed.fetch_add(missed, Ordering::Relaxed);
    }

    fn flush(&mut self) {
        if self.live {
            if let Err(error) = self.writer.flush() {
                self.shared.fail(error);
                self.live = false;
            }
        }
        (self.dirty, self.last_flush) = (false, Instant::now());
    }
}

impl Writer {
    /// The thread's body: the header, then chunks until told to stop (or
    /// until the link's side is gone).
    pub fn run(self) {
        let Writer {
            out,
            interface_name,
            link_type,
            shared,
            full,
            free,
            acks,
            ready,
            drain_interval,
            batch,
        } = self;
        let opened = PcapngWriter::new(out, "stackscope").and_then(|mut writer| {
            // Snap length 0: no limit, every byte of every frame.
            let interface = writer.add_interface(&interface_name, link_type, 0)?;
            Ok((writer, interface))
        });
        let mut output = match opened {
            Ok((writer, interface)) => {
                let _ = ready.send(true);
                Output {
                    writer,
                    interface,
                    shared,
                    live: true,
                    dirty: false,
                    last_flush: Instant::now(),
                }
            }
            Err(error) => {
                shared.fail(error);
                let _ = ready.send(false);
                return;
            }
        };
        // Full chunks not yet written, with when they arrived.
        let mut pending: VecDeque<(Vec<u8>, Instant)> = VecDeque::new();
        loop {
            // Gather what was handed over; a command ends the gathering.
            let command = loop {
                match full.try_recv() {
                    Ok(ToWriter::Chunk(chunk)) => pending.push_back((chunk, Instant::now())),
                    Ok(command) => break Some(command),
                    Err(TryRecvError::Empty) => break None,
                    Err(TryRecvError::Disconnected) => break Some(ToWriter::Stop),
                }
            };
            let due = command.is_some()
                || pending.len() >= batch.max(1)
                || pending
                    .front()
                    .is_some_and(|(_, at)| at.elapsed() >= IDLE_FLUSH);
            if due {
                for (mut chunk, _) in pending.drain(..) {
                    output.write_chunk(&chunk);
                    chunk.clear();
                    // The link's side may be gone; the chunk then just goes.
                    let _ = free.send(chunk);
                }
            }
            match command {
                Some(ToWriter::Flush) => {
                    output.flush();
                    let _ = acks.send(());
                }
                Some(_) => {
                    output.flush();
                    return;
                }
                None => {
                    if output.dirty && output.last_flush.elapsed() >= IDLE_FLUSH {
                        output.flush();
                    }
                    std::thread::park_timeout(drain_interval);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_appended() {
        let mut chunk = Vec::with_capacity(256);
        append(&mut chunk, 7, Direction::Outbound, &[b"ab", b"cde"], 5);
        append(&mut chunk, u64::MAX, Direction::Inbound, &[], 0);
        append(&mut chunk, 9, Direction::Inbound, &[b"xyz"], 3);
        let got: Vec<(u64, Direction, Vec<u8>)> = records(&chunk)
            .map(|(t, d, f)| (t, d, f.to_vec()))
            .collect();
        assert_eq!(
            got,
            [
                (7, Direction::Outbound, b"abcde".to_vec()),
                (u64::MAX, Direction::Inbound, Vec::new()),
                (9, Direction::Inbound, b"xyz".to_vec()),
            ]
        );
        // A record cut short ends the walk instead of reading past it.
        let cut = &chunk[..chunk.len() - 1];
        assert_eq!(records(cut).count(), 2);
    }
}
