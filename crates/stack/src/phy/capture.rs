//! Capture: a [`Link`] wrapper that writes every frame its inner link
//! transmits or receives to a pcapng stream, so any interface can leave a
//! capture behind (DESIGN.md, "Links").
//!
//! Timestamps are the `now` the runner passes in, in nanoseconds: the
//! simulator's virtual clock, or the threaded runner's clock. The capture
//! is a bystander: if writing fails, the error is kept and counted, the
//! capture stops, and the link carries on; frames it could not write are
//! counted as missed, so a report can say the capture is incomplete.

use std::io::{self, Write};

use wire::pcapng::{CapturedPacket, Direction, InterfaceId, PcapngWriter};

use super::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// How the capture went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Frames written to the capture.
    pub written: u64,
    /// Frames carried by the link but not captured, since a write failed.
    pub missed: u64,
    /// Write or flush failures (capturing stops at the first).
    pub errors: u64,
}

/// The pcapng stream of one interface.
struct Capture {
    writer: PcapngWriter<Box<dyn Write + Send>>,
    interface: InterfaceId,
}

impl Capture {
    fn open(out: Box<dyn Write + Send>, interface_name: &str, medium: Medium) -> io::Result<Self> {
        let mut writer = PcapngWriter::new(out, "stackscope")?;
        // Snap length 0: no limit, every byte of every frame.
        let interface = writer.add_interface(interface_name, medium.pcapng_link_type(), 0)?;
        Ok(Self { writer, interface })
    }
}

/// A link whose frames are also written to a pcapng capture.
pub struct Captured<L: Link> {
    inner: L,
    /// `None` once a write has failed (or if opening it did).
    capture: Option<Capture>,
    stats: CaptureStats,
    first_error: Option<io::Error>,
    /// Where a scatter-gather frame is gathered to be written.
    scratch: Vec<u8>,
}

impl<L: Link> Captured<L> {
    /// Captures `inner`'s frames to `out` as the interface
    /// `interface_name`. A failure to write the pcapng header is counted
    /// like any other capture failure: the link works without a capture.
    pub fn new(inner: L, out: impl Write + Send + 'static, interface_name: &str) -> Self {
        let mut captured = Self {
            capture: None,
            stats: CaptureStats::default(),
            first_error: None,
            scratch: Vec::new(),
            inner,
        };
        match Capture::open(Box::new(out), interface_name, captured.inner.medium()) {
            Ok(capture) => captured.capture = Some(capture),
            Err(error) => captured.fail(error),
        }
        captured
    }

    pub fn inner(&self) -> &L {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    pub fn capture_stats(&self) -> CaptureStats {
        self.stats
    }

    /// The failure that stopped the capture, if one did.
    pub fn capture_error(&self) -> Option<&io::Error> {
        self.first_error.as_ref()
    }

    /// True until a capture write fails.
    pub fn is_capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// Pushes buffered capture bytes out (also done on drop).
    pub fn flush_capture(&mut self) {
        if let Some(capture) = &mut self.capture {
            if let Err(error) = capture.writer.flush() {
                self.fail(error);
            }
        }
    }

    fn record(&mut self, now: Instant, direction: Direction, frame: &[u8]) {
        let Some(capture) = &mut self.capture else {
            self.stats.missed += 1;
            return;
        };
        let packet = CapturedPacket {
            timestamp_ns: now.as_nanos(),
            data: frame,
            original_len: None,
            comment: None,
            direction: Some(direction),
        };
        match capture.writer.write_packet(capture.interface, &packet) {
            Ok(()) => self.stats.written += 1,
            Err(error) => {
                self.stats.missed += 1;
                self.fail(error);
            }
        }
    }

    fn fail(&mut self, error: io::Error) {
        self.stats.errors += 1;
        self.capture = None;
        if self.first_error.is_none() {
            self.first_error = Some(error);
        }
    }
}

impl<L: Link> Link for Captured<L> {
    fn medium(&self) -> Medium {
        self.inner.medium()
    }

    fn mtu(&self) -> usize {
        self.inner.mtu()
    }

    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.inner.transmit(now, parts)?;
        let mut frame = std::mem::take(&mut self.scratch);
        frame.clear();
        for part in parts {
            frame.extend_from_slice(part);
        }
        self.record(now, Direction::Outbound, &frame);
        self.scratch = frame;
        Ok(())
    }

    fn flush(&mut self, now: Instant) {
        self.inner.flush(now);
    }

    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let len = self.inner.receive(now, buf)?;
        let frame = buf.get(..len).unwrap_or(buf);
        self.record(now, Direction::Inbound, frame);
        Some(len)
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
        self.flush_capture();
    }
}

impl<L: Link + core::fmt::Debug> core::fmt::Debug for Captured<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Captured")
            .field("inner", &self.inner)
            .field("capturing", &self.is_capturing())
            .field("stats", &self.stats)
            .field("first_error", &self.first_error)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::Loopback;
    use std::sync::{Arc, Mutex};

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
            lo.transmit(now, &[&[0x60; 40], &[i as u8; 20]]).unwrap();
            assert_eq!(lo.receive(now, &mut buf), Some(60));
        }
        let stats = lo.capture_stats();
        assert!(!lo.is_capturing());
        assert_eq!(stats.errors, 1);
        assert!(stats.written > 0);
        assert_eq!(stats.written + stats.missed, 20);
        assert!(lo.capture_error().is_some());
        assert_eq!(lo.stats().rx_frames, 10);
    }

    #[test]
    fn a_header_that_cannot_be_written_leaves_a_working_link() {
        let out = FailingAfter {
            budget: 0,
            taken: Arc::default(),
        };
        let mut lo = Captured::new(Loopback::new(), out, "lo");
        assert!(!lo.is_capturing());
        lo.transmit(Instant::ZERO, &[&[0x60; 40]]).unwrap();
        let stats = lo.capture_stats();
        assert_eq!((stats.errors, stats.written, stats.missed), (1, 0, 1));
    }

    #[test]
    fn captured_links_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Captured<Loopback>>();
    }
}
