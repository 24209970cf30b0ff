//! XTP, the Xpress Transport Protocol, revision 4.0 (XTP Forum, 1995): the
//! protocol the XTP study measured (as its 3.6 predecessor), laid out as
//! Wireshark's XTP dissector (`epan/dissectors/packet-xtp.c`) decodes it on
//! IP protocol 36. `docs/xtp.md` lists the layout and where 3.6 differs.
//!
//! Every packet is a 32-byte common header followed by `dlen` bytes of one
//! segment, chosen by the packet type in the header's `cmd` field:
//!
//! ```text
//!  0      8      12     16    18    20     24            32
//!  | key  | cmd  | dlen |check|sort | sync |     seq     | segment (dlen bytes)
//! ```
//!
//! | type  | segment                                                    |
//! |-------|------------------------------------------------------------|
//! | DATA  | [beginning tag (8, with BTAG)] data                        |
//! | CNTL  | rseq(8) alloc(8) echo(4)                                   |
//! | FIRST | address segment, traffic specifier, [tag] data             |
//! | ECNTL | rseq alloc echo nspan(4), nspan spans of (left, right)(16) |
//! | TCNTL | rseq alloc echo rsvd(4) xkey(8), traffic specifier         |
//! | JCNTL | TCNTL's fixed part, address segment, traffic specifier     |
//! | DIAG  | code(4) val(4) message                                     |
//!
//! All fields are big-endian. The one checksum field covers the header and,
//! unless the NOCHECK option is set, the segment (the Internet checksum, no
//! pseudo-header). There is no trailer in 4.0.
//!
//! Modules: [`header`] (the common header and checksum), [`control`] (CNTL,
//! ECNTL, TCNTL, JCNTL), [`first`] (address segment, traffic specifier), [`data`]
//! (the beginning tag), [`diag`], and [`packet`] (the whole packet's `Repr`).

pub mod control;
pub mod data;
pub mod diag;
pub mod first;
pub mod header;
pub mod options;
pub mod packet;
#[cfg(test)]
mod tests;

pub use control::{ControlRepr, Span, Spans};
pub use diag::{DiagCode, DiagValue};
pub use first::{Address, AddressRepr, Service, TrafficRepr};
pub use header::{XtpPacket, HEADER_LEN};
pub use options::{PacketType, XtpOptions};
pub use packet::{Segment, XtpRepr};

/// IPv4 protocol / IPv6 next-header number of XTP (IANA: 36, "XTP").
pub const IP_PROTOCOL: u8 = 36;

/// The EtherType XTP used directly over Ethernet (0x817D, registered to
/// XTP); the study's KRM ran XTP on the network driver this way.
pub const ETHERTYPE: u16 = 0x817d;

/// The version number in the top three bits of the packet-type byte: 1 is
/// XTP 4.0, the only version Wireshark knows (`XTP_VERSION_4`).
pub const VERSION_4: u8 = 1;

/// High bit of the key: the return bit (Wireshark's `XTP_KEY_RTN`); what
/// it selects is the protocol's business, not the wire format's.
pub const KEY_RETURN: u64 = 1 << 63;

/// The big-endian `u64` at `offset`. Panics past the end of `data`.
pub(crate) fn be_u64(data: &[u8], offset: usize) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&data[offset..offset + 8]);
    u64::from_be_bytes(bytes)
}

/// Writes `value` big-endian at `offset`. Panics past the end of `data`.
pub(crate) fn put_be_u64(data: &mut [u8], offset: usize, value: u64) {
    data[offset..offset + 8].copy_from_slice(&value.to_be_bytes());
}
