//! Packet buffers (DESIGN.md, "Packet buffers"; the MSR IPv6 design's
//! header reservation and pull-up).
//!
//! * [`Pool`]: a host's preallocated, fixed-size buffers. Memory is bounded
//!   by construction: when the pool is empty, allocation fails and is
//!   counted, it never grows.
//! * [`Packet`]: one head buffer whose headroom, reserved once for the
//!   largest link header plus IP and transport headers, takes every header
//!   by prepending (never a chained header buffer), followed by a chain of
//!   shared payload [`Segment`]s, so fragmentation and segmentation
//!   reference payload instead of copying it.
//! * [`Cursor`]: reads a received chain front to back; a header is
//!   returned in place when contiguous and gathered into the caller's
//!   scratch space only when it straddles segments, never modifying the
//!   chain.
//!
//! Allocate and free are probe spans of category `buffer`; every copy of
//! payload, and every pull-up, is a span of category `data_move`.

mod cursor;
mod packet;
mod pool;
mod release;

pub use cursor::{Cursor, PullUpError};
pub use packet::{Packet, PacketError, PacketOffload, Segment};
pub use pool::{Buffer, Pool, PoolConfig, PoolConfigError, PoolStats};
pub use release::return_free_memory;
