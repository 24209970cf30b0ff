//! Packet formats for stackscope: zero-copy views over byte buffers plus parsed
//! representations (`Repr`) with `parse` / `emit` / `buffer_len`.
//!
//! Conventions, after smoltcp:
//! * `FooPacket<T: AsRef<[u8]>>` is a view; `new_checked` verifies that every
//!   length the accessors rely on lies inside the buffer, so accessors never
//!   panic afterwards. `new_unchecked` skips that for buffers we built.
//! * `FooRepr` is the meaning of a packet, independent of its bytes:
//!   `FooRepr::parse(&view)` validates, `repr.emit(&mut view, ..)` writes
//!   exactly `repr.buffer_len(..)` bytes.
//! * Parsing never trusts a length field and never panics on any input.
//!   Reprs do not allocate: variable parts are bounded fixed arrays or views.

mod bytes;
pub mod checksum;
mod error;
pub mod ip;
mod tlv;
pub mod trace_option;

// Link layer.
pub mod arp;
pub mod ethernet;

// Network layer.
pub mod icmpv4;
pub mod igmp;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6_ext_header;
pub mod ipv6_fragment;
pub mod ipv6_option;
pub mod ipv6_routing;

// ICMPv6 and the protocols it carries.
pub mod icmpv6;
pub mod mld;
pub mod ndisc;

// Transport layer.
pub mod tcp;
pub mod udp;
pub mod xtp;

// Capture files.
pub mod pcapng;

pub use error::{Error, Result};
pub use ip::{ChecksumMode, IpProtocol};
