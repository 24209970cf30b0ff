//! Sending a datagram larger than the path MTU as fragments (RFC 8200
//! §4.5, RFC 791 §3.2): how each fragment gets its payload.

use probe::Flow;

use super::Host;
use crate::buffer::Packet;

/// How the IP layer makes fragments of a datagram larger than the path
/// MTU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fragmentation {
    /// Each fragment references its slice of the datagram's buffers: no
    /// payload byte is copied (a scatter-gather transmit).
    #[default]
    ScatterGather,
    /// Each fragment's payload is copied into a flat buffer of its own, as
    /// the MSR IPv6 stack's IPv6SendFragments did with CopyFromBufferChain
    /// (Xie 1999, §5.2.3): the copy is a `data_move` span, and on the
    /// send path of a fragmented datagram it is the IPv6 study's data
    /// move.
    Copy,
}

impl std::fmt::Display for Fragmentation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fragmentation::ScatterGather => "scatter-gather",
            Fragmentation::Copy => "copy",
        })
    }
}

impl Host {
    /// The payload of one fragment: the bytes `range` of `datagram`,
    /// referenced or copied as the host's [`Fragmentation`] says.
    pub(super) fn fragment_body(
        &self,
        datagram: &Packet,
        range: std::ops::Range<usize>,
        flow: Flow,
    ) -> Result<Packet, &'static str> {
        let segments = datagram.segments(range).map_err(|_| "fragment_failed")?;
        match self.fragmentation {
            Fragmentation::ScatterGather => {
                let mut fragment = Packet::new(&self.pool, flow).map_err(|_| "no_buffer")?;
                for segment in segments {
                    fragment.append_segment(segment);
                }
                Ok(fragment)
            }
            Fragmentation::Copy => {
                let parts: Vec<&[u8]> = segments.iter().map(|s| s.as_slice()).collect();
                Packet::from_parts(&self.pool, flow, &parts).map_err(|_| "no_buffer")
            }
        }
    }
}
