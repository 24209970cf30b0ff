//! The traced flow of later IPv6 fragments. The trace option rides in a
//! Destination Options header, which is in the fragmentable part of a
//! datagram (RFC 8200 §4.5), so only the first fragment shows it. The
//! link input notes the flow of a traced first fragment under the
//! datagram's identity (source, destination, Identification) and gives it
//! to the later fragments of the same datagram, so every receive-side
//! probe of every fragment records the flow it carries.
//!
//! Bounded: at most [`CAPACITY`] datagrams, the oldest forgotten first,
//! each for at most the reassembly time limit. A later fragment that
//! arrives before its first (reordering) stays untraced.

use std::collections::VecDeque;
use std::time::Duration;

use probe::Flow;

use crate::time::Instant;

/// Datagrams being followed at once: more than a traced run has in flight.
pub const CAPACITY: usize = 64;

/// Fragments of one datagram arrive within the reassembly time limit
/// (RFC 8200 §4.5: 60 s), or the datagram is given up.
const LIFETIME: Duration = Duration::from_secs(60);

const FIXED_HEADER: usize = 40;
const FRAGMENT_HEADER: u8 = 44;

/// A fragment's datagram: source, destination, Identification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Datagram {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
}

/// Of an IPv6 packet whose first extension header is a Fragment header:
/// its datagram and whether it is the first fragment (offset 0).
fn fragment_of(ip: &[u8]) -> Option<(Datagram, bool)> {
    if ip.first()? >> 4 != 6 || *ip.get(6)? != FRAGMENT_HEADER {
        return None;
    }
    let header = ip.get(FIXED_HEADER..FIXED_HEADER + 8)?;
    let offset = u16::from_be_bytes([header[2], header[3]]) >> 3;
    let datagram = Datagram {
        src: ip.get(8..24)?.try_into().ok()?,
        dst: ip.get(24..40)?.try_into().ok()?,
        id: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
    };
    Some((datagram, offset == 0))
}

#[derive(Debug, Default)]
pub struct FragmentFlows {
    followed: VecDeque<(Datagram, Flow, Instant)>,
}

impl FragmentFlows {
    /// The flow of the IPv6 packet `ip`: `traced` (what its own trace
    /// option said) for a first fragment, which is noted; the noted flow of
    /// its datagram for a later fragment without one.
    #[inline]
    pub fn classify(&mut self, now: Instant, ip: &[u8], traced: Option<Flow>) -> Option<Flow> {
        // Inline, for every received packet: most are not fragments.
        if ip.get(6) != Some(&FRAGMENT_HEADER) {
            return traced;
        }
        self.classify_fragment(now, ip, traced)
    }

    /// [`classify`](Self::classify) of a packet whose first extension
    /// header is a Fragment header.
    fn classify_fragment(&mut self, now: Instant, ip: &[u8], traced: Option<Flow>) -> Option<Flow> {
        let Some((datagram, first)) = fragment_of(ip) else {
            return traced;
        };
        while self
            .followed
            .front()
            .is_some_and(|&(_, _, until)| until <= now)
        {
            self.followed.pop_front();
        }
        match traced {
            Some(flow) if first => {
                if self.followed.len() == CAPACITY {
                    self.followed.pop_front();
                }
                self.followed.push_back((datagram, flow, now + LIFETIME));
                Some(flow)
            }
            Some(flow) => Some(flow),
            None if first => None,
            None => self
                .followed
                .iter()
                .rev()
                .find(|(d, _, _)| *d == datagram)
                .map(|&(_, flow, _)| flow),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.followed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(id: u32, offset_units: u16, src_last: u8) -> Vec<u8> {
        let mut ip = vec![0u8; 48];
        ip[0] = 0x60;
        ip[6] = FRAGMENT_HEADER;
        ip[23] = src_last;
        ip[39] = 2;
        ip[42..44].copy_from_slice(&((offset_units << 3) | 1).to_be_bytes());
        ip[44..48].copy_from_slice(&id.to_be_bytes());
        ip
    }

    #[test]
    fn later_fragments_take_their_first_fragments_flow() {
        let mut flows = FragmentFlows::default();
        let t = Instant::ZERO;
        let flow = Flow::traced(7);
        assert_eq!(
            flows.classify(t, &fragment(1, 0, 1), Some(flow)),
            Some(flow)
        );
        assert_eq!(flows.classify(t, &fragment(1, 181, 1), None), Some(flow));
        // Another datagram (other id, or other source) is not this flow.
        assert_eq!(flows.classify(t, &fragment(2, 181, 1), None), None);
        assert_eq!(flows.classify(t, &fragment(1, 181, 9), None), None);
        // Past the reassembly time limit the datagram is forgotten.
        let later = t + LIFETIME;
        assert_eq!(flows.classify(later, &fragment(1, 362, 1), None), None);
        assert_eq!(flows.len(), 0);
    }

    #[test]
    fn unfragmented_and_untraced_packets_pass_through_and_memory_is_bounded() {
        let mut flows = FragmentFlows::default();
        let t = Instant::ZERO;
        let mut plain = fragment(1, 0, 1);
        plain[6] = 17;
        assert_eq!(flows.classify(t, &plain, None), None);
        assert_eq!(flows.classify(t, &fragment(1, 0, 1), None), None);
        assert_eq!(flows.classify(t, &[0x60, 0, 0], None), None, "truncated");
        for id in 0..(CAPACITY as u32 * 3) {
            flows.classify(t, &fragment(id, 0, 1), Some(Flow::traced(id)));
        }
        assert_eq!(flows.len(), CAPACITY);
        let newest = CAPACITY as u32 * 3 - 1;
        assert_eq!(
            flows.classify(t, &fragment(newest, 10, 1), None),
            Some(Flow::traced(newest))
        );
        assert_eq!(
            flows.classify(t, &fragment(0, 10, 1), None),
            None,
            "evicted"
        );
    }
}
