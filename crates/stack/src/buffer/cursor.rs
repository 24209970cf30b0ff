//! Reading a received chain with pull-up (the MSR IPv6 design): a header
//! comes back in place when it lies in one segment, and is gathered into
//! the caller's scratch space only when it straddles segments. The chain
//! itself is never modified.

use super::packet::Packet;
use crate::probes::{PULLUP_ENTER, PULLUP_EXIT};

/// Why bytes could not be pulled up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PullUpError {
    #[error("wanted {wanted} bytes but only {available} remain")]
    Truncated { wanted: usize, available: usize },
    #[error("{wanted} straddling bytes do not fit the {scratch}-byte scratch space")]
    TooLong { wanted: usize, scratch: usize },
}

/// A read position in a packet.
#[derive(Debug, Clone)]
pub struct Cursor<'p> {
    packet: &'p Packet,
    /// Index of the current part (see `Packet::part`).
    part: usize,
    /// Offset inside the current part.
    offset: usize,
    position: usize,
    len: usize,
}

impl<'p> Cursor<'p> {
    #[inline]
    pub fn new(packet: &'p Packet) -> Self {
        let mut cursor = Cursor {
            packet,
            part: 0,
            offset: 0,
            position: 0,
            len: packet.len(),
        };
        cursor.skip_exhausted_parts();
        cursor
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.len - self.position
    }

    /// The next `len` bytes, without advancing: in place when contiguous,
    /// else copied into `scratch` (a `data_move` span).
    #[inline]
    pub fn pull_up<'a>(&self, len: usize, scratch: &'a mut [u8]) -> Result<&'a [u8], PullUpError>
    where
        'p: 'a,
    {
        if len > self.remaining() {
            return Err(PullUpError::Truncated {
                wanted: len,
                available: self.remaining(),
            });
        }
        let current = self.packet.part(self.part).unwrap_or(&[]);
        if let Some(contiguous) = current.get(self.offset..self.offset + len) {
            return Ok(contiguous);
        }
        if len > scratch.len() {
            return Err(PullUpError::TooLong {
                wanted: len,
                scratch: scratch.len(),
            });
        }
        let _span = probe::span(PULLUP_ENTER, PULLUP_EXIT, len as u32, self.packet.flow(), 0);
        let (mut part, mut offset, mut filled) = (self.part, self.offset, 0);
        while filled < len {
            let Some(bytes) = self.packet.part(part) else {
                break;
            };
            let take = (bytes.len() - offset).min(len - filled);
            scratch[filled..filled + take].copy_from_slice(&bytes[offset..offset + take]);
            filled += take;
            part += 1;
            offset = 0;
        }
        Ok(&scratch[..len])
    }

    /// Moves past `len` bytes.
    #[inline]
    pub fn advance(&mut self, len: usize) -> Result<(), PullUpError> {
        if len > self.remaining() {
            return Err(PullUpError::Truncated {
                wanted: len,
                available: self.remaining(),
            });
        }
        let mut rest = len;
        while rest > 0 {
            let part_len = self.packet.part(self.part).map_or(0, <[u8]>::len);
            let take = (part_len - self.offset).min(rest);
            if take == 0 {
                // Unreachable after the length check above; never spin.
                break;
            }
            self.offset += take;
            rest -= take;
            self.skip_exhausted_parts();
        }
        self.position += len;
        Ok(())
    }

    /// Steps over parts already read to the end (and empty ones).
    #[inline]
    fn skip_exhausted_parts(&mut self) {
        while let Some(bytes) = self.packet.part(self.part) {
            if self.offset < bytes.len() {
                break;
            }
            if self.packet.part(self.part + 1).is_none() {
                break;
            }
            self.part += 1;
            self.offset = 0;
        }
    }
}
