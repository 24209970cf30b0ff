//! A host's pool of preallocated, fixed-size buffers.
//!
//! Every buffer is allocated when the pool is made, so the data path does
//! not ask the system allocator for packet memory. A flood touches many
//! of them, and touched memory stays resident; once the pressure is over
//! the owner may [`release`](Pool::release) free buffers beyond a number
//! to keep (and hand the memory back to the system with
//! [`return_free_memory`](super::return_free_memory)). Released buffers
//! are made again on demand, up to the configured number: the bound on
//! memory never changes.

use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

use probe::Flow;

use crate::probes::{BUFFER_ALLOC_ENTER, BUFFER_ALLOC_EXIT, BUFFER_FREE_ENTER, BUFFER_FREE_EXIT};

/// Sizes of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Bytes per buffer, headroom included.
    pub buffer_size: usize,
    /// Bytes at the front of a packet's head buffer reserved for headers:
    /// the largest link header of any interface plus IP and transport
    /// headers with options.
    pub headroom: usize,
    /// Buffers in the pool at most; all are allocated up front.
    pub buffers: usize,
}

impl PoolConfig {
    /// A pool for links of up to `mtu` whose buffers each hold a whole
    /// frame: the default sizes (8192 buffers) for Ethernet's 1500, bigger
    /// and fewer buffers (about 64 MiB in all, at least 1024) for jumbo
    /// frames. For hosts on real links, where bursts come in batches.
    pub fn for_mtu(mtu: usize) -> Self {
        let default = Self::default();
        let needed = default.headroom + mtu + wire::ethernet::TAGGED_HEADER_LEN;
        if needed <= default.buffer_size {
            return Self {
                buffers: 8192,
                ..default
            };
        }
        // Rounded up to 256 bytes.
        let buffer_size = needed.div_ceil(256) * 256;
        Self {
            buffer_size,
            buffers: (64 * 1024 * 1024 / buffer_size).max(1024),
            ..default
        }
    }
}

impl Default for PoolConfig {
    /// Room for a 1500-byte MTU frame plus headroom, 4096 buffers (9 MiB).
    fn default() -> Self {
        Self {
            buffer_size: 2304,
            headroom: 256,
            buffers: 4096,
        }
    }
}

/// A pool configuration that cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolConfigError {
    #[error("headroom of {headroom} bytes leaves no room in a {buffer_size}-byte buffer")]
    NoRoomAfterHeadroom { headroom: usize, buffer_size: usize },
    #[error("a pool needs at least one buffer")]
    NoBuffers,
}

/// Counters of a pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub allocated: u64,
    pub freed: u64,
    /// Allocations refused because every buffer was in use.
    pub exhausted: u64,
    /// Most buffers in use at once.
    pub high_water: usize,
    /// Free buffers given back by [`Pool::release`].
    pub released: u64,
    /// Buffers made again after a release, on demand.
    pub regrown: u64,
}

struct Shared {
    config: PoolConfig,
    free: RefCell<Vec<Box<[u8]>>>,
    /// Buffers that exist, in use or free: `config.buffers` until a
    /// release.
    allocated: Cell<usize>,
    stats: Cell<PoolStats>,
}

/// A host's buffer pool. Cloning shares it; a host and everything it owns
/// live on one thread, so it is not `Send`.
#[derive(Clone)]
pub struct Pool {
    shared: Rc<Shared>,
}

impl Pool {
    /// Allocates every buffer now, so the data path never asks the system
    /// allocator for packet memory.
    pub fn new(config: PoolConfig) -> Result<Self, PoolConfigError> {
        if config.buffers == 0 {
            return Err(PoolConfigError::NoBuffers);
        }
        if config.headroom >= config.buffer_size {
            return Err(PoolConfigError::NoRoomAfterHeadroom {
                headroom: config.headroom,
                buffer_size: config.buffer_size,
            });
        }
        let free = (0..config.buffers)
            .map(|_| vec![0u8; config.buffer_size].into_boxed_slice())
            .collect();
        Ok(Self {
            shared: Rc::new(Shared {
                config,
                free: RefCell::new(free),
                allocated: Cell::new(config.buffers),
                stats: Cell::new(PoolStats::default()),
            }),
        })
    }

    pub fn config(&self) -> PoolConfig {
        self.shared.config
    }

    pub fn stats(&self) -> PoolStats {
        self.shared.stats.get()
    }

    /// Buffers currently handed out.
    pub fn in_use(&self) -> usize {
        self.shared.allocated.get() - self.shared.free.borrow().len()
    }

    /// Buffers that exist, handed out or free.
    pub fn allocated(&self) -> usize {
        self.shared.allocated.get()
    }

    /// Drops free buffers until no more than `keep` exist (those in use
    /// stay), and the free list's own spare room; returns how many were
    /// dropped. The most recently freed go first: they are the ones a
    /// burst touched, while the oldest may never have been written (and
    /// so hold no resident memory).
    pub fn release(&self, keep: usize) -> usize {
        let mut free = self.shared.free.borrow_mut();
        let allocated = self.shared.allocated.get();
        let excess = allocated.saturating_sub(keep).min(free.len());
        let remaining = free.len() - excess;
        free.truncate(remaining);
        free.shrink_to_fit();
        self.shared.allocated.set(allocated - excess);
        let mut stats = self.shared.stats.get();
        stats.released += excess as u64;
        self.shared.stats.set(stats);
        excess
    }

    /// Takes a buffer for `flow` (whose trace flag gates the probes), or
    /// `None` when every buffer is in use (counted as `exhausted`).
    pub fn alloc(&self, flow: Flow) -> Option<Buffer> {
        let _span = probe::span(BUFFER_ALLOC_ENTER, BUFFER_ALLOC_EXIT, 0, flow, 0);
        let mut data = self.shared.free.borrow_mut().pop();
        let mut stats = self.shared.stats.get();
        let allocated = self.shared.allocated.get();
        if data.is_none() && allocated < self.shared.config.buffers {
            // Made again after a release: the bound is still `buffers`.
            data = Some(vec![0u8; self.shared.config.buffer_size].into_boxed_slice());
            self.shared.allocated.set(allocated + 1);
            stats.regrown += 1;
        }
        let buffer = match data {
            Some(data) => {
                stats.allocated += 1;
                stats.high_water = stats.high_water.max(self.in_use());
                Some(Buffer {
                    data: Some(data),
                    pool: Rc::clone(&self.shared),
                    flow,
                })
            }
            None => {
                stats.exhausted += 1;
                None
            }
        };
        self.shared.stats.set(stats);
        buffer
    }
}

/// One buffer of a pool, returned to it when dropped. Its owner (a
/// [`Packet`](super::Packet)) keeps track of which bytes hold data.
pub struct Buffer {
    data: Option<Box<[u8]>>,
    pool: Rc<Shared>,
    flow: Flow,
}

impl Buffer {
    pub fn capacity(&self) -> usize {
        self.data.as_deref().map_or(0, <[u8]>::len)
    }

    /// The flow the buffer was allocated for.
    pub fn flow(&self) -> Flow {
        self.flow
    }
}

impl Deref for Buffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }
}

impl DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.data.as_deref_mut().unwrap_or(&mut [])
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let _span = probe::span(BUFFER_FREE_ENTER, BUFFER_FREE_EXIT, 0, self.flow, 0);
        if let Some(data) = self.data.take() {
            self.pool.free.borrow_mut().push(data);
            let mut stats = self.pool.stats.get();
            stats.freed += 1;
            self.pool.stats.set(stats);
        }
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(buffers: usize) -> Pool {
        Pool::new(PoolConfig {
            buffer_size: 64,
            headroom: 16,
            buffers,
        })
        .unwrap()
    }

    #[test]
    fn exhaustion_is_counted_and_memory_bounded() {
        let pool = pool(2);
        let a = pool.alloc(Flow::NONE).unwrap();
        let b = pool.alloc(Flow::NONE).unwrap();
        assert!(pool.alloc(Flow::NONE).is_none());
        assert_eq!(pool.stats().exhausted, 1);
        assert_eq!(pool.in_use(), 2);
        drop(a);
        assert_eq!(pool.in_use(), 1);
        let c = pool.alloc(Flow::NONE).expect("a freed buffer is reused");
        assert_eq!(c.capacity(), 64);
        drop((b, c));
        let s = pool.stats();
        assert_eq!((s.allocated, s.freed, s.high_water), (3, 3, 2));
    }

    #[test]
    fn released_buffers_come_back_on_demand_within_the_bound() {
        let pool = pool(8);
        let held: Vec<Buffer> = (0..6).map(|_| pool.alloc(Flow::NONE).unwrap()).collect();
        // In use buffers are never released: only the 2 free ones go.
        assert_eq!(pool.release(0), 2);
        assert_eq!((pool.allocated(), pool.in_use()), (6, 6));
        drop(held);
        assert_eq!(pool.release(3), 3);
        assert_eq!((pool.allocated(), pool.in_use()), (3, 0));
        // Demand makes them again, up to the configured 8 and no more.
        let again: Vec<Buffer> = (0..8).map(|_| pool.alloc(Flow::NONE).unwrap()).collect();
        assert!(pool.alloc(Flow::NONE).is_none());
        let s = pool.stats();
        assert_eq!((s.released, s.regrown, s.exhausted), (5, 5, 1));
        assert_eq!(pool.allocated(), 8);
        assert!(again.iter().all(|b| b.capacity() == 64));
    }

    #[test]
    fn nonsense_configs_are_refused() {
        let config = |buffer_size, headroom, buffers| PoolConfig {
            buffer_size,
            headroom,
            buffers,
        };
        assert_eq!(
            Pool::new(config(64, 16, 0)).err(),
            Some(PoolConfigError::NoBuffers)
        );
        assert!(matches!(
            Pool::new(config(64, 64, 1)),
            Err(PoolConfigError::NoRoomAfterHeadroom { .. })
        ));
    }
}
