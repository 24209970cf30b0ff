//! TLV options of the hop-by-hop and destination options headers
//! (RFC 8200 §4.2): one option as a view, the parsed [`Ipv6Option`], an
//! iterator over an options area, and emit of an option list with the
//! alignment and padding RFC 8200 §4.2 asks for.
//!
//! An options area is the part of a hop-by-hop or destination options header
//! after its next-header and length bytes, so it always begins
//! [`AREA_OFFSET`] bytes into its header; alignment (`xn+y`) is counted from
//! the start of the header.

use crate::trace_option::{self, TraceOption};
use crate::{Error, Result};

mod field {
    pub const TYPE: usize = 0;
    pub const DATA_LEN: usize = 1;
    pub const DATA_START: usize = 2;
}

/// Option type of Pad1: a single zero byte, no length or data.
pub const PAD1: u8 = 0;
/// Option type of PadN: type, length, then that many zero bytes.
pub const PADN: u8 = 1;
/// Option type of the router alert (RFC 2711 §2.1).
pub const ROUTER_ALERT: u8 = 5;
/// Option type of the stackscope trace option (RFC 4727 experimental).
pub const TRACE: u8 = trace_option::IPV6_OPTION_TYPE;
/// Offset of an options area inside its header (after next header and
/// header extension length).
pub const AREA_OFFSET: usize = 2;

/// Largest data length one option can carry (the length byte).
pub const MAX_DATA_LEN: usize = 255;

/// What a node must do with an option whose type it does not recognise: the
/// two high-order bits of the type (RFC 8200 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnrecognizedAction {
    /// 00: skip over the option and go on processing the header.
    Skip,
    /// 01: discard the packet.
    Discard,
    /// 10: discard and send ICMPv6 Parameter Problem code 2 pointing at the
    /// option type, whatever the destination.
    DiscardSendParamProblem,
    /// 11: as above, but only if the destination is not multicast.
    DiscardSendParamProblemUnlessMulticast,
}

impl UnrecognizedAction {
    /// The action encoded in an option type.
    pub const fn of(option_type: u8) -> Self {
        match option_type >> 6 {
            0 => Self::Skip,
            1 => Self::Discard,
            2 => Self::DiscardSendParamProblem,
            _ => Self::DiscardSendParamProblemUnlessMulticast,
        }
    }
}

/// Whether an option's data may change en route: the third-highest bit of
/// its type (RFC 8200 §4.2). Such data counts as zero for AH (RFC 4302 §3.3.3.1).
pub const fn may_change_en_route(option_type: u8) -> bool {
    option_type & 0x20 != 0
}

/// A view of one option at the start of a byte buffer (the buffer may go on
/// past the option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6OptionView<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6OptionView<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let option = Self::new_unchecked(buffer);
        option.check_len()?;
        Ok(option)
    }

    /// The type byte is present and, unless this is Pad1, the length byte
    /// and all the data it claims.
    pub fn check_len(&self) -> Result<()> {
        let buffer = self.buffer.as_ref();
        match buffer.first() {
            None => Err(Error::Truncated),
            Some(&PAD1) => Ok(()),
            Some(_) => match buffer.get(field::DATA_LEN) {
                None => Err(Error::Truncated),
                Some(&n) if field::DATA_START + usize::from(n) > buffer.len() => {
                    Err(Error::Truncated)
                }
                Some(_) => Ok(()),
            },
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn option_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Bytes of option data; 0 for Pad1, which has no length byte.
    pub fn data_len(&self) -> u8 {
        match self.option_type() {
            PAD1 => 0,
            _ => self.buffer.as_ref()[field::DATA_LEN],
        }
    }

    /// Bytes the whole option occupies.
    pub fn total_len(&self) -> usize {
        match self.option_type() {
            PAD1 => 1,
            _ => field::DATA_START + usize::from(self.data_len()),
        }
    }

    pub fn unrecognized_action(&self) -> UnrecognizedAction {
        UnrecognizedAction::of(self.option_type())
    }

    pub fn may_change_en_route(&self) -> bool {
        may_change_en_route(self.option_type())
    }

    /// The option data (empty for Pad1).
    pub fn data(&self) -> &[u8] {
        data_of(self.buffer.as_ref())
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6OptionView<&'a T> {
    /// The option data, borrowed for as long as the underlying buffer.
    pub fn data_ref(&self) -> &'a [u8] {
        data_of(self.buffer.as_ref())
    }
}

fn data_of(buffer: &[u8]) -> &[u8] {
    match buffer[field::TYPE] {
        PAD1 => &[],
        _ => {
            let end = field::DATA_START + usize::from(buffer[field::DATA_LEN]);
            &buffer[field::DATA_START..end]
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6OptionView<T> {
    pub fn set_option_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    /// Sets the length byte (not for Pad1, which has none).
    pub fn set_data_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::DATA_LEN] = value;
    }

    /// The option data as the length byte bounds it (not for Pad1).
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = field::DATA_START + usize::from(self.data_len());
        &mut self.buffer.as_mut()[field::DATA_START..end]
    }
}

/// The meaning of one option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ipv6Option<'a> {
    /// One byte of padding.
    Pad1,
    /// Padding of `2 + n` bytes: type, length `n`, `n` zero bytes.
    PadN(u8),
    /// The stackscope trace option (type 0x1E, 4 bytes of data).
    Trace(TraceOption),
    /// Router alert (RFC 2711) with its 16-bit value (0 = MLD).
    RouterAlert(u16),
    /// Any other option, kept as is so its action bits can be honoured.
    Unknown { option_type: u8, data: &'a [u8] },
}

impl<'a> Ipv6Option<'a> {
    /// Reads one option. Known types with the wrong data length, and PadN
    /// with non-zero data, are malformed (RFC 8200 §4.2 says PadN data is
    /// zero; like Linux we refuse it rather than carry a covert channel).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(view: &Ipv6OptionView<&'a T>) -> Result<Self> {
        view.check_len()?;
        let data = view.data_ref();
        Ok(match view.option_type() {
            PAD1 => Self::Pad1,
            PADN => {
                if data.iter().any(|&b| b != 0) {
                    return Err(Error::Malformed("PadN option with non-zero data"));
                }
                Self::PadN(view.data_len())
            }
            TRACE => Self::Trace(TraceOption::parse(data)?),
            ROUTER_ALERT => match data {
                &[hi, lo] => Self::RouterAlert(u16::from_be_bytes([hi, lo])),
                _ => return Err(Error::Malformed("router alert data is not 2 bytes")),
            },
            option_type => Self::Unknown { option_type, data },
        })
    }

    pub const fn option_type(&self) -> u8 {
        match self {
            Self::Pad1 => PAD1,
            Self::PadN(_) => PADN,
            Self::Trace(_) => TRACE,
            Self::RouterAlert(_) => ROUTER_ALERT,
            Self::Unknown { option_type, .. } => *option_type,
        }
    }

    pub const fn is_padding(&self) -> bool {
        matches!(self, Self::Pad1 | Self::PadN(_))
    }

    pub const fn unrecognized_action(&self) -> UnrecognizedAction {
        UnrecognizedAction::of(self.option_type())
    }

    pub const fn may_change_en_route(&self) -> bool {
        may_change_en_route(self.option_type())
    }

    /// Bytes the option occupies on the wire, type and length included.
    pub const fn buffer_len(&self) -> usize {
        field::DATA_START
            + match self {
                Self::Pad1 => return 1,
                Self::PadN(n) => *n as usize,
                Self::Trace(_) => trace_option::DATA_LEN,
                Self::RouterAlert(_) => 2,
                Self::Unknown { data, .. } => data.len(),
            }
    }

    /// Alignment requirement `xn+y` of the option type's offset from the
    /// start of its header, as `(x, y)` (RFC 8200 §4.2, appendix).
    pub const fn alignment(&self) -> (usize, usize) {
        match self {
            // 4n+2 puts the 4-byte flow id on a 4-byte boundary.
            Self::Trace(_) => (4, 2),
            // RFC 2711 §2.1: alignment requirement 2n+0.
            Self::RouterAlert(_) => (2, 0),
            _ => (1, 0),
        }
    }

    /// Refuses what would not read back as itself: an `Unknown` carrying a
    /// type this module models, or data longer than a length byte holds.
    fn check_emittable(&self) -> Result<()> {
        if let Self::Unknown { option_type, data } = self {
            if matches!(*option_type, PAD1 | PADN | TRACE | ROUTER_ALERT) {
                return Err(Error::Malformed("unknown option with a known option type"));
            }
            if data.len() > MAX_DATA_LEN {
                return Err(Error::Malformed("option data longer than 255 bytes"));
            }
        }
        Ok(())
    }

    /// Writes the option at the start of `buffer`, returning the bytes
    /// written ([`buffer_len`](Self::buffer_len)).
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        self.check_emittable()?;
        let len = self.buffer_len();
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        out[field::TYPE] = self.option_type();
        if let Self::Pad1 = self {
            return Ok(1);
        }
        // Fits: check_emittable bounds the data length by 255.
        out[field::DATA_LEN] = (len - field::DATA_START) as u8;
        let data = &mut out[field::DATA_START..];
        match self {
            Self::Pad1 => {}
            Self::PadN(_) => data.fill(0),
            Self::Trace(trace) => {
                let mut bytes = [0; trace_option::DATA_LEN];
                trace.emit(&mut bytes);
                data.copy_from_slice(&bytes);
            }
            Self::RouterAlert(value) => data.copy_from_slice(&value.to_be_bytes()),
            Self::Unknown { data: src, .. } => data.copy_from_slice(src),
        }
        Ok(len)
    }
}

/// Iterates over the options of an options area. Yields every option,
/// padding included; after the first error (an option running past the
/// area, a malformed known option) it yields nothing more.
#[derive(Debug, Clone)]
pub struct Ipv6OptionsIter<'a> {
    area: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Ipv6OptionsIter<'a> {
    pub const fn new(area: &'a [u8]) -> Self {
        Self {
            area,
            pos: 0,
            failed: false,
        }
    }

    /// Offset in the area of the next option: after an error, the offset of
    /// the option that failed (for an ICMPv6 Parameter Problem pointer).
    pub const fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Ipv6OptionsIter<'a> {
    type Item = Result<Ipv6Option<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.area.get(self.pos..).filter(|r| !r.is_empty())?;
        let view = match Ipv6OptionView::new_checked(rest) {
            Ok(view) => view,
            Err(_) => {
                self.failed = true;
                return Some(Err(Error::Malformed("option runs past the options area")));
            }
        };
        match Ipv6Option::parse(&view) {
            Ok(option) => {
                self.pos += view.total_len();
                Some(Ok(option))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for Ipv6OptionsIter<'_> {}

/// Iterates over the options of an options area.
pub const fn iter_options(area: &[u8]) -> Ipv6OptionsIter<'_> {
    Ipv6OptionsIter::new(area)
}

/// Length of the options area that [`emit_options`] writes for `options`:
/// each option aligned as it requires, and the whole header (area plus
/// [`AREA_OFFSET`]) padded to a multiple of 8 octets (RFC 8200 §4.3, §4.6).
pub fn options_area_len(options: &[Ipv6Option]) -> Result<usize> {
    lay_out(options, None)
}

/// Writes `options` into the start of `area`, inserting Pad1/PadN before an
/// option that needs alignment and at the end up to the 8-octet multiple.
/// Returns the bytes written ([`options_area_len`]).
pub fn emit_options(options: &[Ipv6Option], area: &mut [u8]) -> Result<usize> {
    let len = options_area_len(options)?;
    let area = area.get_mut(..len).ok_or(Error::Truncated)?;
    lay_out(options, Some(area))
}

/// Places the options, writing them if `out` is given; returns the area
/// length. Positions are counted in header coordinates for alignment.
fn lay_out(options: &[Ipv6Option], mut out: Option<&mut [u8]>) -> Result<usize> {
    let mut pos = AREA_OFFSET;
    for option in options {
        option.check_emittable()?;
        let (x, y) = option.alignment();
        let pad = (y + x - pos % x) % x;
        pos = put(&mut out, pos, padding(pad))?;
        pos = put(&mut out, pos, Some(*option))?;
    }
    let pad = (8 - pos % 8) % 8;
    pos = put(&mut out, pos, padding(pad))?;
    Ok(pos - AREA_OFFSET)
}

/// The padding option filling `len` bytes, if any.
fn padding(len: usize) -> Option<Ipv6Option<'static>> {
    match len {
        0 => None,
        1 => Some(Ipv6Option::Pad1),
        // Padding comes from alignment (< 8 bytes), never near 255.
        n => Some(Ipv6Option::PadN((n - 2) as u8)),
    }
}

fn put(out: &mut Option<&mut [u8]>, pos: usize, option: Option<Ipv6Option>) -> Result<usize> {
    let Some(option) = option else {
        return Ok(pos);
    };
    if let Some(area) = out {
        let at = pos - AREA_OFFSET;
        let dst = area.get_mut(at..).ok_or(Error::Truncated)?;
        option.emit(dst)?;
    }
    Ok(pos + option.buffer_len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(area: &[u8]) -> Vec<Result<Ipv6Option<'_>>> {
        iter_options(area).collect()
    }

    #[test]
    fn action_bits() {
        assert_eq!(UnrecognizedAction::of(0x1e), UnrecognizedAction::Skip);
        assert_eq!(UnrecognizedAction::of(0x5e), UnrecognizedAction::Discard);
        assert_eq!(
            UnrecognizedAction::of(0x9e),
            UnrecognizedAction::DiscardSendParamProblem
        );
        assert_eq!(
            UnrecognizedAction::of(0xc2),
            UnrecognizedAction::DiscardSendParamProblemUnlessMulticast
        );
        assert!(may_change_en_route(0x3e));
        assert!(!may_change_en_route(0x1e));
        assert!(!Ipv6Option::Trace(TraceOption { flow: 1 }).may_change_en_route());
        let unknown = Ipv6Option::Unknown {
            option_type: 0xa5,
            data: &[],
        };
        assert!(unknown.may_change_en_route());
        assert_eq!(
            unknown.unrecognized_action(),
            UnrecognizedAction::DiscardSendParamProblem
        );
    }

    #[test]
    fn parses_hand_made_area() {
        let area = [
            0x00, // Pad1
            0x01, 0x01, 0x00, // PadN(1)
            0x05, 0x02, 0x00, 0x00, // router alert, MLD
            0x1e, 0x04, 0xde, 0xad, 0xbe, 0xef, // trace
            0x3f, 0x01, 0x7a, // unknown, 1 byte
        ];
        let got: Vec<_> = collect(&area).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            got,
            [
                Ipv6Option::Pad1,
                Ipv6Option::PadN(1),
                Ipv6Option::RouterAlert(0),
                Ipv6Option::Trace(TraceOption { flow: 0xdead_beef }),
                Ipv6Option::Unknown {
                    option_type: 0x3f,
                    data: &[0x7a]
                },
            ]
        );
    }

    #[test]
    fn option_running_past_the_area_is_malformed_and_stops() {
        let area = [0x00, 0x3f, 0x05, 1, 2];
        let got = collect(&area);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], Ok(Ipv6Option::Pad1));
        assert!(matches!(got[1], Err(Error::Malformed(_))));
        // A lone type byte with no length byte.
        assert!(matches!(collect(&[0x3f])[..], [Err(Error::Malformed(_))]));
        let mut iter = iter_options(&area);
        iter.next();
        iter.next();
        assert_eq!(iter.offset(), 1);
        assert!(iter.next().is_none());
    }

    #[test]
    fn malformed_known_options() {
        assert!(matches!(
            collect(&[0x1e, 0x03, 1, 2, 3])[..],
            [Err(Error::Malformed(_))]
        ));
        assert!(matches!(
            collect(&[0x05, 0x01, 1])[..],
            [Err(Error::Malformed(_))]
        ));
        assert!(matches!(
            collect(&[0x01, 0x02, 0, 1])[..],
            [Err(Error::Malformed(_))]
        ));
    }

    #[test]
    fn trace_option_is_aligned_4n_plus_2_and_padded() {
        let options = [Ipv6Option::Trace(TraceOption { flow: 7 })];
        // Header offset 2 is already 4n+2: 6 bytes of option, then the
        // header is 8 bytes with no padding at all.
        assert_eq!(options_area_len(&options), Ok(6));
        let mut area = [0xff; 6];
        assert_eq!(emit_options(&options, &mut area), Ok(6));
        assert_eq!(area, [0x1e, 4, 0, 0, 0, 7]);
    }

    #[test]
    fn alignment_padding_between_options() {
        let trace = Ipv6Option::Trace(TraceOption { flow: 0x0102_0304 });
        // Router alert at 2..6 (2n); 6 is already 4n+2, so the trace follows
        // at once (6..12) and PadN(2) fills the header to 16 bytes.
        let options = [Ipv6Option::RouterAlert(0), trace];
        let mut area = [0xff; 14];
        assert_eq!(emit_options(&options, &mut area), Ok(14));
        assert_eq!(area, [5, 2, 0, 0, 0x1e, 4, 1, 2, 3, 4, 1, 2, 0, 0]);
        // An empty unknown option at 6..8 pushes the trace to 10: PadN(0)
        // fills 8..10.
        let empty = Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &[],
        };
        let options = [Ipv6Option::RouterAlert(0), empty, trace];
        let mut area = [0xff; 14];
        assert_eq!(emit_options(&options, &mut area), Ok(14));
        assert_eq!(area, [5, 2, 0, 0, 0x3f, 0, 1, 0, 0x1e, 4, 1, 2, 3, 4]);
        let back: Vec<_> = iter_options(&area)
            .map(Result::unwrap)
            .filter(|o| !o.is_padding())
            .collect();
        assert_eq!(back, options);
        // A 3-byte option at 2..5 leaves a one-byte gap: Pad1 at 5.
        let three = Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &[7],
        };
        let mut area = [0xff; 14];
        assert_eq!(emit_options(&[three, trace], &mut area), Ok(14));
        assert_eq!(area, [0x3f, 1, 7, 0, 0x1e, 4, 1, 2, 3, 4, 1, 2, 0, 0]);
    }

    #[test]
    fn pad1_used_for_single_byte_gaps() {
        // Unknown option of 3 bytes at 2..5, then 3 bytes to the 8 boundary.
        let options = [Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &[9],
        }];
        let mut area = [0xff; 6];
        assert_eq!(emit_options(&options, &mut area), Ok(6));
        assert_eq!(area, [0x3f, 1, 9, 1, 1, 0]);
        let options = [Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &[9, 9, 9],
        }];
        let mut area = [0xff; 6];
        assert_eq!(emit_options(&options, &mut area), Ok(6));
        assert_eq!(area, [0x3f, 3, 9, 9, 9, 0]);
    }

    #[test]
    fn empty_list_is_one_padn() {
        let mut area = [0xff; 6];
        assert_eq!(emit_options(&[], &mut area), Ok(6));
        assert_eq!(area, [1, 4, 0, 0, 0, 0]);
    }

    #[test]
    fn emit_refuses_ambiguous_unknowns_and_short_buffers() {
        let bad = Ipv6Option::Unknown {
            option_type: TRACE,
            data: &[0; 4],
        };
        assert!(matches!(bad.emit(&mut [0; 8]), Err(Error::Malformed(_))));
        let long = [0u8; 256];
        let too_long = Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &long,
        };
        assert!(matches!(
            options_area_len(&[too_long]),
            Err(Error::Malformed(_))
        ));
        let mut short = [0; 5];
        assert_eq!(
            emit_options(&[Ipv6Option::RouterAlert(1)], &mut short),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn view_accessors() {
        let bytes = [0x1e, 4, 1, 2, 3, 4, 0xaa];
        let view = Ipv6OptionView::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.option_type(), 0x1e);
        assert_eq!(view.total_len(), 6);
        assert_eq!(view.data(), &[1, 2, 3, 4]);
        assert_eq!(view.unrecognized_action(), UnrecognizedAction::Skip);
        assert_eq!(
            Ipv6OptionView::new_checked(&bytes[..5]),
            Err(Error::Truncated)
        );
        let pad1 = Ipv6OptionView::new_checked(&[0u8][..]).unwrap();
        assert_eq!((pad1.total_len(), pad1.data_len()), (1, 0));
        let mut buf = [0u8; 4];
        let mut view = Ipv6OptionView::new_unchecked(&mut buf[..]);
        view.set_option_type(5);
        view.set_data_len(2);
        view.data_mut().copy_from_slice(&[0, 1]);
        let view = Ipv6OptionView::new_checked(&buf[..]).unwrap();
        assert_eq!(Ipv6Option::parse(&view), Ok(Ipv6Option::RouterAlert(1)));
    }
}
