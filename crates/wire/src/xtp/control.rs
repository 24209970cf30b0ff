//! Control segments: CNTL (receiver state), ECNTL (CNTL plus the spans of
//! data received, for selective retransmission), TCNTL (CNTL plus key
//! exchange and a traffic specifier) and JCNTL (TCNTL's fields with an
//! address segment before the specifier: multicast join control).
//!
//! Common part (20 bytes): `rseq` (next byte expected in order), `alloc`
//! (the do-not-exceed sequence number of flow control), `echo` (the `sync`
//! being answered). ECNTL adds `nspan` (4) and `nspan` spans of two 64-bit edges;
//! TCNTL adds a reserved word (4), `xkey` (8) and a traffic specifier.

use crate::bytes::{be_u32, put_be_u32};
use crate::{Error, Result};

use super::first::{AddressRepr, TrafficRepr};
use super::{be_u64, put_be_u64};

mod field {
    use core::ops::Range;
    pub const RSEQ: Range<usize> = 0..8;
    pub const ALLOC: Range<usize> = 8..16;
    pub const ECHO: Range<usize> = 16..20;
    // ECNTL
    pub const NSPAN: Range<usize> = 20..24;
    pub const SPANS: usize = 24;
    // TCNTL
    pub const RSVD: Range<usize> = 20..24;
    pub const XKEY: Range<usize> = 24..32;
    pub const TRAFFIC: usize = 32;
}

/// Length of a CNTL segment (Wireshark: `XTP_CNTL_PKT_LEN`, exact).
pub const CNTL_LEN: usize = 20;
/// Length of an ECNTL segment without spans.
pub const ECNTL_MIN_LEN: usize = field::SPANS;
/// Length of a TCNTL segment before its traffic specifier.
pub const TCNTL_FIXED_LEN: usize = field::TRAFFIC;
/// Bytes per ECNTL span.
pub const SPAN_LEN: usize = 16;

/// A view of a control segment (the bytes after the common header).
/// `check_len` is per type, since the three share a prefix only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlSegment<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ControlSegment<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// A CNTL segment is exactly 20 bytes.
    pub fn check_cntl_len(&self) -> Result<()> {
        match self.buffer.as_ref().len() {
            CNTL_LEN => Ok(()),
            n if n < CNTL_LEN => Err(Error::Truncated),
            _ => Err(Error::Malformed("XTP CNTL segment longer than 20 bytes")),
        }
    }

    /// An ECNTL segment holds exactly `nspan` spans after its 24 bytes.
    pub fn check_ecntl_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < ECNTL_MIN_LEN {
            return Err(Error::Truncated);
        }
        // 64-bit product: nspan * 16 cannot overflow.
        let claimed = u64::from(self.nspan()) * SPAN_LEN as u64;
        match claimed.cmp(&((len - ECNTL_MIN_LEN) as u64)) {
            core::cmp::Ordering::Equal => Ok(()),
            core::cmp::Ordering::Greater => Err(Error::Truncated),
            core::cmp::Ordering::Less => Err(Error::Malformed("XTP ECNTL bytes after its spans")),
        }
    }

    /// A TCNTL segment holds at least its 32 fixed bytes.
    pub fn check_tcntl_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < TCNTL_FIXED_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn rseq(&self) -> u64 {
        be_u64(self.buffer.as_ref(), field::RSEQ.start)
    }

    pub fn alloc(&self) -> u64 {
        be_u64(self.buffer.as_ref(), field::ALLOC.start)
    }

    pub fn echo(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::ECHO.start)
    }

    /// ECNTL: number of spans.
    pub fn nspan(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::NSPAN.start)
    }

    /// ECNTL: the span bytes after the fixed part.
    pub fn span_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SPANS..]
    }

    /// TCNTL: the reserved word.
    pub fn rsvd(&self) -> u32 {
        be_u32(self.buffer.as_ref(), field::RSVD.start)
    }

    /// TCNTL: the key the sender asks the receiver to use (key exchange).
    pub fn xkey(&self) -> u64 {
        be_u64(self.buffer.as_ref(), field::XKEY.start)
    }

    /// TCNTL: the traffic specifier bytes.
    pub fn traffic_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::TRAFFIC..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ControlSegment<T> {
    pub fn set_rseq(&mut self, value: u64) {
        put_be_u64(self.buffer.as_mut(), field::RSEQ.start, value)
    }

    pub fn set_alloc(&mut self, value: u64) {
        put_be_u64(self.buffer.as_mut(), field::ALLOC.start, value)
    }

    pub fn set_echo(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::ECHO.start, value)
    }

    pub fn set_nspan(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::NSPAN.start, value)
    }

    pub fn span_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::SPANS..]
    }

    pub fn set_rsvd(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), field::RSVD.start, value)
    }

    pub fn set_xkey(&mut self, value: u64) {
        put_be_u64(self.buffer.as_mut(), field::XKEY.start, value)
    }

    pub fn traffic_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::TRAFFIC..]
    }
}

/// The state every control segment carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ControlRepr {
    /// Next sequence number the receiver expects in order.
    pub rseq: u64,
    /// The do-not-exceed sequence number the sender may send up to (flow
    /// control; study §2.4.2).
    pub alloc: u64,
    /// The `sync` value this control packet answers.
    pub echo: u32,
}

impl ControlRepr {
    fn read<T: AsRef<[u8]>>(view: &ControlSegment<T>) -> Self {
        Self {
            rseq: view.rseq(),
            alloc: view.alloc(),
            echo: view.echo(),
        }
    }

    fn write<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut ControlSegment<T>) {
        view.set_rseq(self.rseq);
        view.set_alloc(self.alloc);
        view.set_echo(self.echo);
    }

    /// A CNTL segment.
    pub fn parse_cntl(segment: &[u8]) -> Result<Self> {
        let view = ControlSegment::new_unchecked(segment);
        view.check_cntl_len()?;
        Ok(Self::read(&view))
    }

    /// Writes a CNTL segment into exactly [`CNTL_LEN`] bytes.
    pub fn emit_cntl(&self, segment: &mut [u8]) -> Result<()> {
        let mut view = ControlSegment::new_unchecked(segment);
        view.check_cntl_len()?;
        self.write(&mut view);
        Ok(())
    }

    /// An ECNTL segment: the control state and its spans.
    pub fn parse_ecntl(segment: &[u8]) -> Result<(Self, Spans<'_>)> {
        let view = ControlSegment::new_unchecked(segment);
        view.check_ecntl_len()?;
        let spans = Spans::Wire(&segment[field::SPANS..]);
        spans.check_order()?;
        Ok((Self::read(&view), spans))
    }

    /// Segment length of an ECNTL with `spans`.
    pub fn ecntl_len(spans: &Spans<'_>) -> usize {
        ECNTL_MIN_LEN + SPAN_LEN * spans.len()
    }

    /// Writes an ECNTL segment into exactly [`ecntl_len`](Self::ecntl_len)
    /// bytes.
    pub fn emit_ecntl(&self, spans: &Spans<'_>, segment: &mut [u8]) -> Result<()> {
        if segment.len() != Self::ecntl_len(spans) {
            return Err(Error::Truncated);
        }
        spans.check_order()?;
        let nspan = u32::try_from(spans.len())
            .map_err(|_| Error::Malformed("XTP ECNTL with more than 2^32 spans"))?;
        let mut view = ControlSegment::new_unchecked(segment);
        self.write(&mut view);
        view.set_nspan(nspan);
        for (out, span) in view
            .span_bytes_mut()
            .chunks_exact_mut(SPAN_LEN)
            .zip(spans.iter())
        {
            put_be_u64(out, 0, span.left);
            put_be_u64(out, 8, span.right);
        }
        Ok(())
    }

    /// A TCNTL segment: the control state, `xkey` and the traffic
    /// specifier, which must fill the rest exactly. The reserved word is
    /// ignored.
    pub fn parse_tcntl(segment: &[u8]) -> Result<(Self, u64, TrafficRepr)> {
        let view = ControlSegment::new_unchecked(segment);
        view.check_tcntl_len()?;
        let (traffic, used) = TrafficRepr::parse(view.traffic_bytes())?;
        if used != view.traffic_bytes().len() {
            return Err(Error::Malformed(
                "XTP TCNTL bytes after its traffic specifier",
            ));
        }
        Ok((Self::read(&view), view.xkey(), traffic))
    }

    /// A JCNTL segment: TCNTL's fixed part, then an address segment and a
    /// traffic specifier that fill the rest exactly (packet-xtp.c,
    /// `dissect_xtp_jcntl`).
    pub fn parse_jcntl(segment: &[u8]) -> Result<(Self, u64, AddressRepr, TrafficRepr)> {
        let view = ControlSegment::new_unchecked(segment);
        view.check_tcntl_len()?;
        let rest = view.traffic_bytes();
        let (address, alen) = AddressRepr::parse(rest)?;
        let (traffic, tlen) = TrafficRepr::parse(&rest[alen..])?;
        if alen + tlen != rest.len() {
            return Err(Error::Malformed(
                "XTP JCNTL bytes after its traffic specifier",
            ));
        }
        Ok((Self::read(&view), view.xkey(), address, traffic))
    }

    /// Segment length of a JCNTL with `address` and `traffic`.
    pub fn jcntl_len(address: &AddressRepr, traffic: &TrafficRepr) -> usize {
        TCNTL_FIXED_LEN + address.buffer_len() + traffic.buffer_len()
    }

    /// Writes a JCNTL segment into exactly [`jcntl_len`](Self::jcntl_len)
    /// bytes; the reserved word is sent as zero.
    pub fn emit_jcntl(
        &self,
        xkey: u64,
        address: &AddressRepr,
        traffic: &TrafficRepr,
        segment: &mut [u8],
    ) -> Result<()> {
        if segment.len() != Self::jcntl_len(address, traffic) {
            return Err(Error::Truncated);
        }
        let mut view = ControlSegment::new_unchecked(segment);
        self.write(&mut view);
        view.set_rsvd(0);
        view.set_xkey(xkey);
        let (head, rest) = view.traffic_bytes_mut().split_at_mut(address.buffer_len());
        address.emit(head)?;
        traffic.emit(rest)
    }

    /// Segment length of a TCNTL with `traffic`.
    pub fn tcntl_len(traffic: &TrafficRepr) -> usize {
        TCNTL_FIXED_LEN + traffic.buffer_len()
    }

    /// Writes a TCNTL segment into exactly [`tcntl_len`](Self::tcntl_len)
    /// bytes; the reserved word is sent as zero.
    pub fn emit_tcntl(&self, xkey: u64, traffic: &TrafficRepr, segment: &mut [u8]) -> Result<()> {
        if segment.len() != Self::tcntl_len(traffic) {
            return Err(Error::Truncated);
        }
        let mut view = ControlSegment::new_unchecked(segment);
        self.write(&mut view);
        view.set_rsvd(0);
        view.set_xkey(xkey);
        traffic.emit(view.traffic_bytes_mut())
    }
}

/// One ECNTL span: sequence numbers `left..right` were received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub left: u64,
    pub right: u64,
}

/// The spans of an ECNTL: as parsed (the wire bytes, borrowed from the
/// packet) or as a stack builds them (a slice of [`Span`]). Two lists are
/// equal when they hold the same spans, whatever their form.
///
/// Edges are big-endian like every XTP field. packet-xtp.c adds them with
/// `ENC_LITTLE_ENDIAN`, so Wireshark shows each edge byte-swapped
/// (`tests/xtp_tshark.rs` pins this); the count and positions agree.
#[derive(Debug, Clone, Copy)]
pub enum Spans<'a> {
    /// Big-endian pairs of 64-bit edges, a whole number of 16-byte spans.
    Wire(&'a [u8]),
    List(&'a [Span]),
}

impl<'a> Spans<'a> {
    pub const fn len(&self) -> usize {
        match self {
            Self::Wire(bytes) => bytes.len() / SPAN_LEN,
            Self::List(list) => list.len(),
        }
    }

    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Spans name received data beyond `rseq`, ascending and disjoint
    /// (4.0 error control); a list that is not cannot be acted on.
    pub fn check_order(&self) -> Result<()> {
        let mut prev_right = None;
        for span in self.iter() {
            if span.left > span.right {
                return Err(Error::Malformed("XTP span left edge past its right edge"));
            }
            if prev_right.is_some_and(|right| span.left < right) {
                return Err(Error::Malformed("XTP spans out of order or overlapping"));
            }
            prev_right = Some(span.right);
        }
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = Span> + 'a {
        let (wire, list): (&'a [u8], &'a [Span]) = match *self {
            Self::Wire(bytes) => (bytes, &[]),
            Self::List(list) => (&[], list),
        };
        wire.chunks_exact(SPAN_LEN)
            .map(|s| Span {
                left: be_u64(s, 0),
                right: be_u64(s, 8),
            })
            .chain(list.iter().copied())
    }
}

impl PartialEq for Spans<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Spans<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cntl_is_exactly_twenty_bytes() {
        let repr = ControlRepr {
            rseq: 1,
            alloc: 2,
            echo: 3,
        };
        let mut buf = [0u8; CNTL_LEN];
        repr.emit_cntl(&mut buf).unwrap();
        assert_eq!(&buf[..8], &1u64.to_be_bytes());
        assert_eq!(&buf[16..], &3u32.to_be_bytes());
        assert_eq!(ControlRepr::parse_cntl(&buf), Ok(repr));
        assert_eq!(ControlRepr::parse_cntl(&buf[..19]), Err(Error::Truncated));
        assert!(matches!(
            ControlRepr::parse_cntl(&[0; 21]),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn ecntl_spans_are_counted_and_ordered() {
        let list = [
            Span {
                left: 10,
                right: 20,
            },
            Span {
                left: 30,
                right: 31,
            },
        ];
        let spans = Spans::List(&list);
        let repr = ControlRepr::default();
        let mut buf = vec![0u8; ControlRepr::ecntl_len(&spans)];
        repr.emit_ecntl(&spans, &mut buf).unwrap();
        assert_eq!(&buf[20..24], &2u32.to_be_bytes());
        let (parsed, wire) = ControlRepr::parse_ecntl(&buf).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(wire, spans);

        // nspan claiming one span more than the bytes hold.
        let mut lying = buf.clone();
        lying[20..24].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(ControlRepr::parse_ecntl(&lying), Err(Error::Truncated));
        lying[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(ControlRepr::parse_ecntl(&lying), Err(Error::Truncated));
        lying[20..24].copy_from_slice(&1u32.to_be_bytes());
        assert!(matches!(
            ControlRepr::parse_ecntl(&lying),
            Err(Error::Malformed(_))
        ));

        let backwards = [
            Span {
                left: 30,
                right: 31,
            },
            Span {
                left: 10,
                right: 20,
            },
        ];
        let spans = Spans::List(&backwards);
        assert!(matches!(
            repr.emit_ecntl(&spans, &mut buf),
            Err(Error::Malformed(_))
        ));
        buf[24..40]
            .copy_from_slice(&[[0, 0, 0, 0, 0, 0, 0, 30], [0, 0, 0, 0, 0, 0, 0, 31]].concat());
        buf[40..56]
            .copy_from_slice(&[[0, 0, 0, 0, 0, 0, 0, 10], [0, 0, 0, 0, 0, 0, 0, 20]].concat());
        assert!(matches!(
            ControlRepr::parse_ecntl(&buf),
            Err(Error::Malformed(_))
        ));
    }
}
