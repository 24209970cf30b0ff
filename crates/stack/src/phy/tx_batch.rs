//! Frames gathered for one `sendmmsg`: a link to the operating system
//! copies each frame it is given into the next slot and sends the batch
//! when it is full or when the host flushes its links at the end of a
//! poll ([`Link::flush`](super::Link::flush)), so a burst of segments costs
//! one system call instead of one each.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// What became of the frames of one flush.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// Frames the kernel took, and their bytes.
    pub frames: u64,
    pub bytes: u64,
    /// `sendmmsg` calls made.
    pub calls: u64,
}

/// Up to `batch` frames of at most `slot` bytes each, waiting to be sent.
pub struct TxBatch {
    slot: usize,
    data: Vec<u8>,
    lens: Vec<usize>,
    queued: usize,
}

impl TxBatch {
    /// Room for `batch` frames of up to `slot` bytes.
    pub fn new(batch: usize, slot: usize) -> Self {
        let batch = batch.max(1);
        Self {
            slot,
            data: vec![0; batch * slot],
            lens: vec![0; batch],
            queued: 0,
        }
    }

    pub fn is_full(&self) -> bool {
        self.queued == self.lens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Copies the frame `prefix` + `parts` into the next slot. The caller
    /// has checked that it fits a slot and that the batch is not full;
    /// `false` (nothing queued) if not.
    pub fn push(&mut self, prefix: &[u8], parts: &[&[u8]]) -> bool {
        let len = prefix.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        if self.is_full() || len > self.slot {
            return false;
        }
        let start = self.queued * self.slot;
        let mut at = start;
        for part in std::iter::once(&prefix).chain(parts) {
            self.data[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        self.lens[self.queued] = len;
        self.queued += 1;
        true
    }

    /// Sends every queued frame with `sendmmsg` on `fd` (non-blocking) and
    /// empties the batch. A frame the kernel refuses is dropped and passed
    /// to `refused` with its length and the error; when the queue is full
    /// (`EAGAIN`, `ENOBUFS`) the rest of the batch is refused with it.
    pub fn flush(&mut self, fd: RawFd, mut refused: impl FnMut(usize, &io::Error)) -> Flushed {
        let mut flushed = Flushed::default();
        let count = self.queued;
        self.queued = 0;
        if count == 0 {
            return flushed;
        }
        // SAFETY: iovec and mmsghdr are C structs of integers and
        // pointers; all zeroes is a valid value of each (no name, no
        // control data).
        let mut iovecs: Vec<libc::iovec> = vec![unsafe { mem::zeroed() }; count];
        let mut messages: Vec<libc::mmsghdr> = vec![unsafe { mem::zeroed() }; count];
        for (index, iovec) in iovecs.iter_mut().enumerate() {
            let start = index * self.slot;
            *iovec = libc::iovec {
                // The kernel only reads through it (sendmmsg).
                iov_base: self.data[start..].as_ptr().cast_mut().cast(),
                iov_len: self.lens[index],
            };
        }
        for (message, iovec) in messages.iter_mut().zip(iovecs.iter_mut()) {
            message.msg_hdr.msg_iov = iovec;
            message.msg_hdr.msg_iovlen = 1;
        }
        let mut next = 0;
        while next < count {
            // SAFETY: `messages[next..]` are initialised mmsghdrs, each
            // pointing at one iovec that names a live slice of `data` the
            // kernel only reads; `count - next` of them are passed; the
            // socket is the caller's.
            let rc = unsafe {
                libc::sendmmsg(
                    fd,
                    messages[next..].as_mut_ptr(),
                    (count - next) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            flushed.calls += 1;
            if rc > 0 {
                let sent = rc as usize;
                flushed.frames += sent as u64;
                flushed.bytes += self.lens[next..next + sent]
                    .iter()
                    .map(|&l| l as u64)
                    .sum::<u64>();
                next += sent;
                continue;
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN | libc::ENOBUFS) => {
                    // Tail drop: the queue will not take the rest either.
                    for &len in &self.lens[next..count] {
                        refused(len, &error);
                    }
                    break;
                }
                _ => {
                    // This frame only; the next may go.
                    refused(self.lens[next], &error);
                    next += 1;
                }
            }
        }
        flushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// A connected pair of datagram sockets: what one sends, the other
    /// receives as whole messages.
    fn socket_pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        // SAFETY: two fresh descriptors, owned by nothing else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn recv(fd: &OwnedFd) -> Option<Vec<u8>> {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is live and writable for its length.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        (n >= 0).then(|| buf[..n as usize].to_vec())
    }

    #[test]
    fn a_batch_goes_out_whole_in_order_in_one_call() {
        let (tx, rx) = socket_pair();
        let mut batch = TxBatch::new(4, 64);
        assert!(batch.is_empty());
        assert!(batch.push(&[0xaa], &[b"one"]));
        assert!(batch.push(&[], &[b"tw", b"o"]));
        assert!(batch.push(&[0xbb, 0xcc], &[b"three", b"!"]));
        assert!(
            !batch.push(&[], &[&[0u8; 65]]),
            "a frame bigger than a slot"
        );
        assert!(batch.push(&[], &[b"four"]));
        assert!(batch.is_full());
        assert!(!batch.push(&[], &[b"five"]), "a full batch takes no more");
        let flushed = batch.flush(tx.as_raw_fd(), |_, e| panic!("refused: {e}"));
        assert_eq!(
            flushed,
            Flushed {
                frames: 4,
                bytes: 4 + 3 + 8 + 4,
                calls: 1
            }
        );
        assert!(batch.is_empty());
        let got: Vec<Vec<u8>> = std::iter::from_fn(|| recv(&rx)).collect();
        assert_eq!(
            got,
            [
                b"\xaaone".to_vec(),
                b"two".to_vec(),
                b"\xbb\xccthree!".to_vec(),
                b"four".to_vec()
            ]
        );
        assert_eq!(batch.flush(tx.as_raw_fd(), |_, _| {}), Flushed::default());
    }

    #[test]
    fn refused_frames_are_reported_not_lost_silently() {
        let (tx, rx) = socket_pair();
        drop(rx); // the peer is gone: every send fails (ECONNREFUSED)
        let mut batch = TxBatch::new(3, 16);
        for frame in [b"a", b"b", b"c"] {
            batch.push(&[], &[frame]);
        }
        let mut refused = Vec::new();
        let flushed = batch.flush(tx.as_raw_fd(), |len, e| {
            refused.push((len, e.raw_os_error()))
        });
        assert_eq!(flushed.frames, 0);
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(batch.is_empty());
    }
}
