//! Capture: a [`Link`] wrapper that records every frame its inner link
//! transmits or receives in a pcapng capture, so any interface can leave a
//! capture behind (DESIGN.md, "Links").
//!
//! The capture stays off the measured path: a frame is only copied (with
//! its timestamp and direction) into a ring of chunks allocated and
//! written once when the link is made — a received one in `receive`, a
//! transmitted one in [`Link::transmitted`], which the interface calls
//! after the frame's `link.transmit` span has closed, so no link window
//! holds a copy. A writer thread of the capture's own turns full chunks
//! into pcapng and writes them (`writer.rs`). The copy is a probe span of
//! its own, `capture.copy`, category `instrumentation`, which the analysis
//! subtracts from the windows around it. The ring is bounded: when the writer has not emptied a chunk
//! in time the frame is not captured and is counted
//! ([`CaptureStats::dropped`]), unless the capture was made lossless
//! ([`WhenFull::Wait`], for the simulator, whose clock does not run while
//! it waits).
//!
//! Timestamps are the `now` the runner passes in, in nanoseconds: the
//! simulator's virtual clock, or the threaded runner's clock. The capture
//! is a bystander: if writing fails, the error is kept and counted, the
//! capture stops, and the link carries on; frames it could not write are
//! counted as missed, so a report can say the capture is incomplete. The
//! file is complete once the link is dropped or [`Captured::finish`]ed;
//! [`Captured::flush_capture`] makes it complete so far.

mod stream;
mod writer;

use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use probe::Flow;
use wire::pcapng::Direction;

use super::{Link, LinkError, LinkStats};
use crate::time::Instant;
use writer::{record_len, Shared, ToWriter, Writer};

/// How the capture went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Frames written to the capture (by the writer, so far: after
    /// [`Captured::flush_capture`] or a finish, every frame captured).
    pub written: u64,
    /// Frames carried by the link but not captured, since a write failed.
    pub missed: u64,
    /// Write or flush failures (capturing stops at the first).
    pub errors: u64,
    /// Frames carried by the link but not captured because the ring was
    /// full: the writer fell behind (or a frame was larger than a chunk).
    pub dropped: u64,
}

/// What a full ring does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Leave the frame out of the capture and count it: the link's thread
    /// never waits for the writer (measurement, real time).
    Drop,
    /// Wait until the writer frees a chunk: nothing is lost (the
    /// simulator, tests that read every frame back).
    Wait,
}

/// The capture ring and its writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureConfig {
    /// Bytes per chunk (raised to hold at least one frame of the link's
    /// MTU).
    pub chunk_bytes: usize,
    /// Chunks in the ring: the capture's memory is `chunk_bytes × chunks`.
    pub chunks: usize,
    /// How often the writer looks for full chunks.
    pub drain_interval: Duration,
    /// A chunk partly filled this long ago (on the link's clock) is handed
    /// to the writer at the link's next `flush`, so a quiet link's frames
    /// reach the file too.
    pub hand_over_after: Duration,
    pub when_full: WhenFull,
}

impl Default for CaptureConfig {
    /// 16 chunks of 256 KiB, written 8 at a time: the writer, looking
    /// every 10 ms, keeps up with some 150 MB/s of frames, a wide margin
    /// over a 100 Mbit/s link.
    fn default() -> Self {
        Self {
            chunk_bytes: 256 << 10,
            chunks: 16,
            drain_interval: Duration::from_millis(10),
            hand_over_after: Duration::from_secs(1),
            when_full: WhenFull::Drop,
        }
    }
}

impl CaptureConfig {
    /// The default ring, waiting for the writer instead of dropping.
    pub fn lossless() -> Self {
        Self {
            when_full: WhenFull::Wait,
            ..Self::default()
        }
    }
}

/// The link's side of the ring and the writer thread.
struct Ring {
    /// The chunk being filled, if the ring had one free.
    current: Option<Vec<u8>>,
    /// When the first frame of `current` was copied.
    started: Instant,
    full: SyncSender<ToWriter>,
    free: Receiver<Vec<u8>>,
    acks: Receiver<()>,
    thread: JoinHandle<()>,
}

/// A link whose frames are also recorded in a pcapng capture.
pub struct Captured<L: Link> {
    inner: L,
    /// `None` if the capture could not start.
    ring: Option<Ring>,
    shared: Arc<Shared>,
    config: CaptureConfig,
    /// Counted on the link's thread (see [`CaptureStats`]).
    dropped: u64,
    missed: u64,
}

impl<L: Link> Captured<L> {
    /// Captures `inner`'s frames to `out` as the interface
    /// `interface_name`, with the default ring ([`CaptureConfig`]). A
    /// failure to write the pcapng header is counted like any other capture
    /// failure: the link works without a capture.
    pub fn new(inner: L, out: impl Write + Send + 'static, interface_name: &str) -> Self {
        Self::with_config(inner, out, interface_name, CaptureConfig::default())
    }

    /// [`new`](Self::new) with a ring of `config`. Allocates the ring and
    /// starts the writer thread, which writes the header before this
    /// returns.
    pub fn with_config(
        inner: L,
        out: impl Write + Send + 'static,
        interface_name: &str,
        config: CaptureConfig,
    ) -> Self {
        let frame_max = if inner.carries_gso() {
            super::virtual_wire::GSO_FRAME_MAX
        } else {
            inner.mtu() + inner.medium().header_len()
        };
        let frame_max = record_len(frame_max);
        let config = CaptureConfig {
            chunk_bytes: config.chunk_bytes.max(frame_max),
            chunks: config.chunks.max(1),
            ..config
        };
        let mut captured = Self {
            ring: None,
            shared: Arc::default(),
            config,
            dropped: 0,
            missed: 0,
            inner,
        };
        let (full_tx, full_rx) = mpsc::sync_channel(config.chunks + 2);
        let (free_tx, free_rx) = mpsc::sync_channel(config.chunks);
        let (ack_tx, ack_rx) = mpsc::sync_channel(1);
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        for _ in 0..config.chunks {
            // Written once so that its pages are there before the first
            // frame (a page fault is a trip into the kernel).
            let mut chunk = vec![0xa5u8; config.chunk_bytes];
            chunk.clear();
            let _ = free_tx.send(chunk);
        }
        let writer = Writer {
            out: Box::new(out),
            interface_name: interface_name.to_string(),
            link_type: captured.inner.medium().pcapng_link_type(),
            shared: Arc::clone(&captured.shared),
            full: full_rx,
            free: free_tx,
            acks: ack_tx,
            ready: ready_tx,
            drain_interval: config.drain_interval,
            batch: config.chunks / 2,
        };
        let spawned = std::thread::Builder::new()
            .name("pcapng-writer".into())
            .spawn(move || writer.run());
        let thread = match spawned {
            Ok(thread) => thread,
            Err(error) => {
                captured.shared.fail(error);
                return captured;
            }
        };
        if ready_rx.recv() == Ok(true) {
            captured.ring = Some(Ring {
                current: None,
                started: Instant::ZERO,
                full: full_tx,
                free: free_rx,
                acks: ack_rx,
                thread,
            });
        } else {
            let _ = thread.join();
        }
        captured
    }

    pub fn inner(&self) -> &L {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    /// The counters so far; `written` lags behind until the writer has
    /// had the frames ([`flush_capture`](Self::flush_capture)).
    pub fn capture_stats(&self) -> CaptureStats {
        CaptureStats {
            written: self.shared.written.load(Ordering::Relaxed),
            missed: self.missed + self.shared.missed.load(Ordering::Relaxed),
            errors: self.shared.errors.load(Ordering::Relaxed),
            dropped: self.dropped,
        }
    }

    /// The failure that stopped the capture, if one did.
    pub fn capture_error(&self) -> Option<&io::Error> {
        self.shared.error.get()
    }

    /// True until a capture write fails (as far as the writer has got).
    pub fn is_capturing(&self) -> bool {
        self.ring.is_some() && !self.shared.failed.0.load(Ordering::Acquire)
    }

    /// Has the writer write and flush every frame captured so far, and
    /// waits until it has: the capture file is complete up to here. Not
    /// for the measured path (it wakes the writer and waits for it).
    pub fn flush_capture(&mut self) {
        let Some(ring) = &mut self.ring else { return };
        ring.hand_over();
        if ring.full.send(ToWriter::Flush).is_ok() {
            ring.thread.thread().unpark();
            let _ = ring.acks.recv();
        }
    }

    /// Ends the capture: every frame written, the file flushed, the writer
    /// thread gone. The link carries on without a capture. (Dropping the
    /// link does the same.)
    pub fn finish(&mut self) {
        let Some(mut ring) = self.ring.take() else {
            return;
        };
        ring.hand_over();
        let _ = ring.full.send(ToWriter::Stop);
        ring.thread.thread().unpark();
        let _ = ring.thread.join();
    }

    /// Copies the frame made of `parts` into the ring: the only capture
    /// work on the link's thread, and a span of category
    /// `instrumentation`.
    fn record(&mut self, now: Instant, direction: Direction, parts: &[&[u8]]) {
        self.split().1.record(now, direction, parts);
    }

    /// The link and, apart from it, the capture's state, so that a frame
    /// the link lends out can be recorded while the link is borrowed.
    fn split(&mut self) -> (&mut L, Recorder<'_>) {
        let recorder = Recorder {
            ring: &mut self.ring,
            shared: &self.shared,
            config: &self.config,
            dropped: &mut self.dropped,
            missed: &mut self.missed,
        };
        (&mut self.inner, recorder)
    }
}

/// What [`Captured::record`] works on: everything but the link.
struct Recorder<'a> {
    ring: &'a mut Option<Ring>,
    shared: &'a Shared,
    config: &'a CaptureConfig,
    dropped: &'a mut u64,
    missed: &'a mut u64,
}

impl Recorder<'_> {
    /// Copies the frame made of `parts` into the ring (see
    /// [`Captured::record`]).
    fn record(self, now: Instant, direction: Direction, parts: &[&[u8]]) {
        let len = parts.iter().map(|p| p.len()).sum::<usize>();
        // The link knows no flow: the span records whenever any flow is
        // traced, so the copy is never hidden inside a traced span. All
        // the capture's work is inside it.
        let _span = probe::span_with(
            crate::probes::CAPTURE_COPY_ENTER,
            crate::probes::CAPTURE_COPY_EXIT,
            Flow::traced(0),
            || (len as u32, direction.epb_flags() as u64),
        );
        let failed = self.shared.failed.0.load(Ordering::Acquire);
        let Some(ring) = self.ring.as_mut().filter(|_| !failed) else {
            *self.missed += 1;
            return;
        };
        let need = record_len(len);
        if need > self.config.chunk_bytes {
            *self.dropped += 1;
            return;
        }
        let fits = |c: &Vec<u8>| c.capacity() - c.len() >= need;
        if ring.current.as_ref().is_some_and(|c| !fits(c)) {
            ring.hand_over();
        }
        if ring.current.is_none() {
            ring.current = ring.take_free(self.config.when_full);
            ring.started = now;
        }
        match ring.current.as_mut() {
            Some(chunk) => {
                // Past the caches (`stream.rs`), then waited for, so the
                // copy's whole cost is inside this span: the link's next
                // instructions neither stall on its stores nor miss the
                // lines it would have evicted.
                writer::append(chunk, now.as_nanos(), direction, parts, len);
                stream::settle();
            }
            None => *self.dropped += 1,
        }
    }
}

impl Ring {
    /// Passes the chunk being filled, if it holds anything, to the writer.
    /// Never blocks: the channel has room for every chunk.
    fn hand_over(&mut self) {
        let Some(chunk) = self.current.take_if(|c| !c.is_empty()) else {
            return;
        };
        match self.full.try_send(ToWriter::Chunk(chunk)) {
            Ok(()) => {}
            // The writer is gone (it failed to start or panicked): the
            // chunk is lost with it.
            Err(TrySendError::Disconnected(_) | TrySendError::Full(_)) => {}
        }
    }

    /// An empty chunk: at once if the writer has returned one, else none
    /// (`Drop`) or once the writer returns one (`Wait`).
    fn take_free(&mut self, when_full: WhenFull) -> Option<Vec<u8>> {
        if let Ok(chunk) = self.free.try_recv() {
            return Some(chunk);
        }
        match when_full {
            WhenFull::Drop => None,
            WhenFull::Wait => {
                self.thread.thread().unpark();
                self.free.recv().ok()
            }
        }
    }
}

impl<L: Link> Link for Captured<L> {
    fn medium(&self) -> super::Medium {
        self.inner.medium()
    }

    fn mtu(&self) -> usize {
        self.inner.mtu()
    }

    /// Only the inner link's work: the frame is copied into the capture
    /// when the interface says it left ([`Link::transmitted`]), after the
    /// `link.transmit` span, so the capture is in no link window at all.
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.inner.transmit(now, parts)
    }

    fn takes_gso(&self) -> bool {
        self.inner.takes_gso()
    }

    /// As [`transmit`](Link::transmit): the super-frame is recorded whole
    /// when the interface says it left, as a capture on a Linux interface
    /// with segmentation offload sees it.
    fn transmit_gso(
        &mut self,
        now: Instant,
        header: &super::vnet::VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        self.inner.transmit_gso(now, header, parts)
    }

    fn transmitted(&mut self, now: Instant, parts: &[&[u8]]) {
        self.inner.transmitted(now, parts);
        self.record(now, Direction::Outbound, parts);
    }

    fn flush(&mut self, now: Instant) {
        self.inner.flush(now);
        let after = self.config.hand_over_after;
        if let Some(ring) = &mut self.ring {
            if ring.current.as_ref().is_some_and(|c| !c.is_empty())
                && now.saturating_duration_since(ring.started) >= after
            {
                let _span = probe::span(
                    crate::probes::CAPTURE_COPY_ENTER,
                    crate::probes::CAPTURE_COPY_EXIT,
                    0,
                    Flow::traced(0),
                    0,
                );
                ring.hand_over();
            }
        }
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let len = self.inner.receive(now, buf)?;
        let frame = buf.get(..len).unwrap_or(buf);
        self.record(now, Direction::Inbound, &[frame]);
        Some(len)
    }

    fn carries_gso(&self) -> bool {
        self.inner.carries_gso()
    }

    /// A super-frame is recorded whole, as a capture on a veth sees it.
    fn receive_whole(
        &mut self,
        now: Instant,
        take: &mut dyn FnMut(super::WholeFrame<'_>, Option<&super::vnet::VnetHeaderRepr>),
    ) -> bool {
        let (inner, recorder) = self.split();
        let mut recorder = Some(recorder);
        inner.receive_whole(now, &mut |frame, gso| {
            // Recorded before the host takes it (a lent frame becomes the
            // packet); the host only stores it here, untimed.
            if let Some(recorder) = recorder.take() {
                recorder.record(now, Direction::Inbound, &[frame.bytes()]);
            }
            take(frame, gso);
        })
    }

    fn transmit_ring(&self) -> Option<usize> {
        self.inner.transmit_ring()
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        self.inner.transmit_complete_at()
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.inner.next_arrival()
    }
    fn received_at(&self) -> Option<Instant> {
        self.inner.received_at()
    }

    fn may_receive(&self, now: Instant) -> bool {
        self.inner.may_receive(now)
    }

    fn readable_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inner.readable_fd()
    }

    fn interface_id(&self) -> Option<[u8; 8]> {
        self.inner.interface_id()
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
}

impl<L: Link> Drop for Captured<L> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<L: Link + core::fmt::Debug> core::fmt::Debug for Captured<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Captured")
            .field("inner", &self.inner)
            .field("capturing", &self.is_capturing())
            .field("stats", &self.capture_stats())
            .field("first_error", &self.capture_error())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::Loopback;
    use std::sync::{Condvar, Mutex};
    use std::thread::ThreadId;
    use wire::pcapng::{blocks, Block};

    /// Accepts `budget` bytes, then fails every write.
    struct FailingAfter {
        budget: usize,
        taken: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for FailingAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.budget {
                return Err(io::Error::other("disk full"));
            }
            self.budget -= buf.len();
            if let Ok(mut taken) = self.taken.lock() {
                taken.extend_from_slice(buf);
            }
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// What a [`Recorder`] saw: the bytes, and the thread of every call.
    #[derive(Default)]
    struct Seen {
        bytes: Vec<u8>,
        threads: Vec<ThreadId>,
        flushes: u64,
    }

    /// Keeps everything written and which thread wrote it; while `closed`
    /// is set, a write waits until it is cleared (a writer that has fallen
    /// behind, deterministically).
    #[derive(Clone, Default)]
    struct Recorder {
        seen: Arc<Mutex<Seen>>,
        gate: Arc<(Mutex<bool>, Condvar)>,
    }

    impl Recorder {
        fn close(&self) {
            *self.gate.0.lock().unwrap() = true;
        }

        fn open(&self) {
            *self.gate.0.lock().unwrap() = false;
            self.gate.1.notify_all();
        }

        fn wait_while_closed(&self) {
            let (lock, open) = &*self.gate;
            let mut closed = lock.lock().unwrap();
            while *closed {
                closed = open.wait(closed).unwrap();
            }
        }

        fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
            self.seen.lock().unwrap()
        }
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.wait_while_closed();
            let mut seen = self.seen();
            seen.bytes.extend_from_slice(buf);
            seen.threads.push(std::thread::current().id());
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            let mut seen = self.seen();
            seen.flushes += 1;
            seen.threads.push(std::thread::current().id());
            Ok(())
        }
    }

    /// The packets of a pcapng stream: (timestamp ns, direction, bytes).
    fn packets(bytes: &[u8]) -> Vec<(u64, Direction, Vec<u8>)> {
        let mut interfaces = 0;
        let mut out = Vec::new();
        for block in blocks(bytes) {
            match block.expect("a well-formed capture") {
                Block::InterfaceDescription(_) => interfaces += 1,
                Block::EnhancedPacket(p) => {
                    assert_eq!(p.original_len as usize, p.data.len());
                    out.push((p.timestamp_ns, p.direction.unwrap(), p.data.to_vec()));
                }
                _ => {}
            }
        }
        assert_eq!(interfaces, 1);
        out
    }

    /// A frame numbered `i`, `len` bytes long, in two parts.
    fn frame(i: u32, len: usize) -> (Vec<u8>, Vec<u8>) {
        let body: Vec<u8> = (0..len)
            .map(|k| (k as u32 ^ i.wrapping_mul(31)) as u8)
            .collect();
        let (head, tail) = body.split_at(len.min(20));
        (head.to_vec(), tail.to_vec())
    }

    /// Sends a frame as an interface does: the link's `transmit`, then,
    /// after its span, `transmitted`.
    fn send<L: Link>(lo: &mut Captured<L>, now: Instant, parts: &[&[u8]]) {
        lo.transmit(now, parts).unwrap();
        lo.transmitted(now, parts);
    }

    #[test]
    fn the_copy_is_made_when_the_frame_has_left_not_in_transmit() {
        let out = Recorder::default();
        let mut lo = Captured::new(small_loopback(), out.clone(), "lo");
        let (head, tail) = frame(7, 100);
        lo.transmit(Instant::ZERO, &[&head, &tail]).unwrap();
        lo.flush_capture();
        assert!(packets(&out.seen().bytes).is_empty(), "copied in transmit");
        lo.transmitted(Instant::ZERO, &[&head, &tail]);
        lo.flush_capture();
        assert_eq!(packets(&out.seen().bytes).len(), 1);
    }

    fn small_loopback() -> Loopback {
        Loopback::with_limits(1500, 64).unwrap()
    }

    #[test]
    fn the_links_thread_never_writes_and_every_frame_arrives_in_order() {
        let out = Recorder::default();
        let mut lo = Captured::new(small_loopback(), out.clone(), "lo");
        assert!(lo.is_capturing());
        let mut expected = Vec::new();
        let mut buf = [0u8; 1600];
        for i in 0..200u32 {
            let (head, tail) = frame(i, 60 + (i as usize * 7) % 1400);
            let whole = [head.clone(), tail.clone()].concat();
            send(
                &mut lo,
                Instant::from_nanos(1000 * u64::from(i)),
                &[&head, &tail],
            );
            expected.push((1000 * u64::from(i), Direction::Outbound, whole.clone()));
            let at = 1000 * u64::from(i) + 500;
            assert_eq!(
                lo.receive(Instant::from_nanos(at), &mut buf),
                Some(whole.len())
            );
            expected.push((at, Direction::Inbound, whole));
        }
        lo.finish();
        let seen = out.seen();
        let me = std::thread::current().id();
        assert!(!seen.threads.is_empty());
        assert!(
            seen.threads.iter().all(|&t| t != me),
            "the capture wrote or flushed on the link's thread"
        );
        assert!(seen.flushes >= 1, "finishing flushes the output");
        let got = packets(&seen.bytes);
        assert_eq!(got.len(), expected.len());
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!((g.0, g.1, g.2.len()), (e.0, e.1, e.2.len()), "packet {i}");
            let first = g.2.iter().zip(&e.2).position(|(a, b)| a != b);
            assert_eq!(first, None, "packet {i} differs from byte {first:?}");
        }
        let stats = lo.capture_stats();
        assert_eq!(
            stats,
            CaptureStats {
                written: 400,
                ..CaptureStats::default()
            }
        );
        // Finished: the link carries on, uncaptured and counted.
        assert!(!lo.is_capturing());
        send(&mut lo, Instant::ZERO, &[&[0x60; 40]]);
        assert_eq!(lo.capture_stats().missed, 1);
        assert_eq!(lo.stats().tx_frames, 201);
    }

    #[test]
    fn dropping_the_link_completes_the_file() {
        let out = Recorder::default();
        {
            let mut lo = Captured::new(small_loopback(), out.clone(), "lo");
            for i in 0..5u32 {
                let (head, tail) = frame(i, 100);
                send(&mut lo, Instant::from_nanos(u64::from(i)), &[&head, &tail]);
            }
        }
        assert_eq!(packets(&out.seen().bytes).len(), 5);
    }

    #[test]
    fn flush_capture_makes_the_file_complete_so_far() {
        let out = Recorder::default();
        let mut lo = Captured::new(small_loopback(), out.clone(), "lo");
        for i in 0..3u32 {
            let (head, tail) = frame(i, 100);
            send(&mut lo, Instant::from_nanos(u64::from(i)), &[&head, &tail]);
        }
        lo.flush_capture();
        assert_eq!(packets(&out.seen().bytes).len(), 3);
        assert_eq!(lo.capture_stats().written, 3);
        assert!(lo.is_capturing());
    }

    /// A ring of two one-frame chunks and a writer stuck in its first
    /// write: two frames are captured, the rest dropped and counted, and
    /// the link carries every frame.
    #[test]
    fn a_full_ring_drops_capture_copies_and_counts_them() {
        let out = Recorder::default();
        let config = CaptureConfig {
            chunk_bytes: 0,
            chunks: 2,
            ..CaptureConfig::default()
        };
        let mut lo = Captured::with_config(small_loopback(), out.clone(), "lo", config);
        out.close();
        for i in 0..10u32 {
            let (head, tail) = frame(i, 1000);
            send(&mut lo, Instant::from_nanos(u64::from(i)), &[&head, &tail]);
        }
        let stats = lo.capture_stats();
        assert_eq!((stats.dropped, stats.missed, stats.errors), (8, 0, 0));
        assert_eq!(lo.stats().tx_frames, 10);
        out.open();
        lo.finish();
        let written = packets(&out.seen().bytes);
        let times: Vec<u64> = written.iter().map(|p| p.0).collect();
        assert_eq!(times, [0, 1], "the first two frames, whole");
        assert_eq!(lo.capture_stats().written, 2);
    }

    #[test]
    fn a_lossless_ring_waits_for_the_writer() {
        let out = Recorder::default();
        let config = CaptureConfig {
            chunk_bytes: 0,
            chunks: 2,
            ..CaptureConfig::lossless()
        };
        let mut lo = Captured::with_config(small_loopback(), out.clone(), "lo", config);
        out.close();
        let opener = {
            let out = out.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                out.open();
            })
        };
        for i in 0..10u32 {
            let (head, tail) = frame(i, 1000);
            send(&mut lo, Instant::from_nanos(u64::from(i)), &[&head, &tail]);
        }
        opener.join().unwrap();
        lo.finish();
        assert_eq!(packets(&out.seen().bytes).len(), 10);
        let stats = lo.capture_stats();
        assert_eq!((stats.written, stats.dropped), (10, 0));
    }

    #[test]
    fn a_quiet_links_frames_are_handed_over_at_flush() {
        let out = Recorder::default();
        let mut lo = Captured::new(small_loopback(), out.clone(), "lo");
        let (head, tail) = frame(1, 100);
        send(&mut lo, Instant::ZERO, &[&head, &tail]);
        lo.flush(Instant::from_nanos(1));
        assert_eq!(lo.ring.as_ref().map(|r| r.current.is_some()), Some(true));
        lo.flush(Instant::ZERO + Duration::from_secs(1));
        assert_eq!(
            lo.ring.as_ref().map(|r| r.current.is_some()),
            Some(false),
            "a chunk a second old goes to the writer"
        );
    }

    #[test]
    fn a_failing_capture_is_counted_and_the_link_carries_on() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let out = FailingAfter {
            budget: 400,
            taken: taken.clone(),
        };
        let mut lo = Captured::new(Loopback::new(), out, "lo");
        assert!(lo.is_capturing());
        let mut buf = [0u8; 100];
        for i in 0..10u64 {
            let now = Instant::from_nanos(i);
            send(&mut lo, now, &[&[0x60; 40], &[i as u8; 20]]);
            assert_eq!(lo.receive(now, &mut buf), Some(60));
            if i == 4 {
                // The writer finds out; the rest is not even copied.
                lo.flush_capture();
                assert!(!lo.is_capturing());
            }
        }
        lo.flush_capture();
        let stats = lo.capture_stats();
        assert!(!lo.is_capturing());
        assert_eq!(stats.errors, 1);
        assert!(stats.written > 0);
        assert_eq!(stats.written + stats.missed, 20);
        assert_eq!(stats.dropped, 0);
        assert!(lo.capture_error().is_some());
        assert_eq!(lo.stats().rx_frames, 10);
        assert_eq!(packets(&taken.lock().unwrap()).len() as u64, stats.written);
    }

    #[test]
    fn a_header_that_cannot_be_written_leaves_a_working_link() {
        let out = FailingAfter {
            budget: 0,
            taken: Arc::default(),
        };
        let mut lo = Captured::new(Loopback::new(), out, "lo");
        assert!(!lo.is_capturing());
        send(&mut lo, Instant::ZERO, &[&[0x60; 40]]);
        let stats = lo.capture_stats();
        assert_eq!((stats.errors, stats.written, stats.missed), (1, 0, 1));
        assert!(lo.capture_error().is_some());
    }

    #[test]
    fn captured_links_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Captured<Loopback>>();
    }
}
