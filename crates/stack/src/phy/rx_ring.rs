//! The batched receive ring of a link on a socket's file descriptor (the
//! AF_PACKET link's packet socket, the IPv6-in-IPv4 tunnel's raw socket):
//! one `recvmmsg` fills up to a batch of slots, one buffer per slot, and
//! the frames are handed out one at a time ([`RxRing::pop`]), so a burst
//! costs one system call per batch ([`RingStats`] shows how well batching
//! went).
//!
//! Because each slot is a buffer of its own, a GSO super-frame can be
//! handed to the host whole in its slot's buffer ([`RxRing::lend`]): a
//! spare takes the slot's place in the ring, and the lent buffer comes
//! back as a spare when the host drops the packet (at most one spare per
//! slot is kept).

use std::io;
use std::mem;
use std::ops::Range;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

use super::packet::{RingStats, MAX_BATCH};
use crate::buffer::{Lender, Lent};

/// One received frame in the ring: its bytes (as long as the kernel wrote
/// them), whether the kernel cut it to fit the slot, and its sender's
/// socket address.
pub(super) struct RxFrame<'a> {
    pub bytes: &'a mut [u8],
    pub truncated: bool,
    /// The slot it is in, for [`RxRing::slot_bytes`].
    pub slot: usize,
    addr: &'a libc::sockaddr_storage,
}

impl RxFrame<'_> {
    /// `sll_pkttype` when the address is an AF_PACKET one.
    pub(super) fn packet_type(&self) -> Option<u8> {
        if i32::from(self.addr.ss_family) != libc::AF_PACKET {
            return None;
        }
        // SAFETY: the kernel wrote a sockaddr_ll into this storage (its
        // family says so); sockaddr_storage is larger than sockaddr_ll and
        // at least as aligned, and every sockaddr_ll bit pattern is valid.
        let ll = unsafe {
            ptr::read((self.addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_ll>())
        };
        Some(ll.sll_pkttype)
    }
}

/// Where one receive system call puts its frames, handed out one by one.
/// Each slot is a buffer of its own, so that a super-frame's can be lent
/// to the host ([`lend`](Self::lend)) and a spare put in its place.
pub(super) struct RxRing {
    /// Bytes per frame slot.
    pub(super) slot: usize,
    /// One buffer per slot, each `slot` bytes long.
    slots: Vec<Vec<u8>>,
    /// Lent slots come back here, to stand in for the next ones lent.
    spares: Arc<Spares>,
    lens: Vec<usize>,
    truncated: Vec<bool>,
    addrs: Vec<libc::sockaddr_storage>,
    /// Frames the last call returned, and the next to hand out.
    filled: usize,
    next: usize,
    pub stats: RingStats,
}

impl RxRing {
    /// A ring of `batch` slots of `slot` bytes.
    pub fn new(batch: usize, slot: usize) -> Self {
        let batch = batch.clamp(1, MAX_BATCH);
        // SAFETY: sockaddr_storage is plain data (integers); all zeroes is
        // a valid value of it.
        let zeroed: libc::sockaddr_storage = unsafe { mem::zeroed() };
        Self {
            slot,
            slots: (0..batch).map(|_| vec![0; slot]).collect(),
            spares: Arc::new(Spares {
                buffers: ArrayQueue::new(batch),
                slot,
            }),
            lens: vec![0; batch],
            truncated: vec![false; batch],
            addrs: vec![zeroed; batch],
            filled: 0,
            next: 0,
            stats: RingStats::default(),
        }
    }

    pub fn has_frames(&self) -> bool {
        self.next < self.filled
    }

    /// The next frame taken off the socket, if any is left.
    pub fn pop(&mut self) -> Option<RxFrame<'_>> {
        if !self.has_frames() {
            return None;
        }
        let index = self.next;
        self.next += 1;
        let len = self.lens[index].min(self.slot);
        Some(RxFrame {
            bytes: &mut self.slots[index][..len],
            truncated: self.truncated[index],
            slot: index,
            addr: &self.addrs[index],
        })
    }

    /// What the kernel wrote into slot `index` in the last refill.
    pub fn slot_bytes(&self, index: usize) -> &[u8] {
        let len = self.lens.get(index).map_or(0, |&len| len.min(self.slot));
        self.slots
            .get(index)
            .and_then(|slot| slot.get(..len))
            .unwrap_or(&[])
    }

    /// Lends the bytes `range` of slot `index` (what the kernel wrote
    /// there in the last refill), taking the slot's buffer out of the ring
    /// and putting a spare in its place: the frame is the host's without a
    /// copy, and its buffer comes back as a spare when the host drops it.
    pub fn lend(&mut self, index: usize, range: Range<usize>) -> Option<Lent> {
        let len = self.lens.get(index).map_or(0, |&len| len.min(self.slot));
        if index >= self.slots.len() || range.start > range.end || range.end > len {
            return None;
        }
        let slot = self.slot;
        let stats = &mut self.stats;
        let spare = self.spares.buffers.pop().unwrap_or_else(|| {
            stats.spares_made += 1;
            vec![0; slot]
        });
        // Every slot buffer, spares too, is `slot` long: `pop` and
        // `slot_bytes` slice by it, and the iovecs are built from it.
        debug_assert_eq!(spare.len(), slot);
        let buffer = mem::replace(&mut self.slots[index], spare);
        self.stats.lent += 1;
        let lender: Arc<dyn Lender> = self.spares.clone();
        Some(Lent::part(buffer, range, lender))
    }

    /// Replaces the ring's frames with up to a batch from `fd` in one
    /// `recvmmsg`, without waiting: how many came (0 when none was there).
    /// Frames not yet handed out are discarded, so call it only when
    /// [`has_frames`](Self::has_frames) is false.
    pub fn refill(&mut self, fd: RawFd) -> io::Result<usize> {
        self.filled = 0;
        self.next = 0;
        let batch = self.lens.len();
        // SAFETY: iovec and mmsghdr are C structs of integers and pointers,
        // for which all zeroes (null pointers, zero lengths) is valid.
        let mut iovecs: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
        // SAFETY: as above.
        let mut messages: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
        for (iovec, slot) in iovecs.iter_mut().zip(self.slots.iter_mut()) {
            iovec.iov_base = slot.as_mut_ptr().cast();
            iovec.iov_len = slot.len();
        }
        let iovec = iovecs.as_mut_ptr();
        let addrs = self.addrs.as_mut_ptr();
        for (index, message) in messages[..batch].iter_mut().enumerate() {
            let header = &mut message.msg_hdr;
            header.msg_iov = iovec.wrapping_add(index);
            header.msg_iovlen = 1;
            header.msg_name = addrs.wrapping_add(index).cast();
            header.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        let count = loop {
            // SAFETY: `messages[..batch]` are initialised headers whose
            // names and I/O vectors point into `self.addrs`, `iovecs` and
            // `self.slots`, all alive and not otherwise borrowed for the
            // call, each with its true length; the null timeout is allowed
            // (with MSG_DONTWAIT it never waits).
            let rc = unsafe {
                libc::recvmmsg(
                    fd,
                    messages.as_mut_ptr(),
                    batch as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    ptr::null_mut(),
                )
            };
            if rc >= 0 {
                break rc as usize;
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    self.stats.empty += 1;
                    return Ok(0);
                }
                _ => {
                    self.stats.errors += 1;
                    return Err(error);
                }
            }
        };
        let count = count.min(batch);
        for (index, message) in messages[..count].iter().enumerate() {
            self.lens[index] = message.msg_len as usize;
            self.truncated[index] = message.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        }
        self.filled = count;
        if count > 0 {
            self.stats.batches += 1;
            self.stats.frames += count as u64;
            self.stats.largest_batch = self.stats.largest_batch.max(count);
        } else {
            self.stats.empty += 1;
        }
        Ok(count)
    }
}

/// Slot buffers lent and given back, for the ring to reuse: as many as
/// it has slots are kept (more are freed), each `slot` bytes long.
struct Spares {
    buffers: ArrayQueue<Vec<u8>>,
    slot: usize,
}

impl Lender for Spares {
    fn give_back(&self, bytes: Vec<u8>) {
        if bytes.len() == self.slot {
            let _ = self.buffers.push(bytes);
        }
    }
}
