//! The hop-by-hop and destination options headers (RFC 8200 §4.3, §4.6),
//! which share one layout: next header, header extension length in 8-octet
//! units not counting the first 8 octets, then an options area. Also a
//! walker over the extension-header chain that finds the upper layer.

use crate::ip::IpProtocol;
use crate::ipv6_fragment::Ipv6FragmentHeader;
use crate::ipv6_option::{self, Ipv6Option, Ipv6OptionsIter};
use crate::{Error, Result};

mod field {
    pub const NEXT_HEADER: usize = 0;
    pub const HDR_EXT_LEN: usize = 1;
    pub const OPTIONS_START: usize = 2;
}

/// Smallest extension header: the first 8 octets.
pub const MIN_HEADER_LEN: usize = 8;
/// Largest header the 8-bit length field can describe: (255 + 1) × 8.
pub const MAX_HEADER_LEN: usize = 2048;

/// A view of a hop-by-hop or destination options header at the start of a
/// byte buffer (the buffer may go on past the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6ExtHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6ExtHeader<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// The length byte is present and the whole header it describes fits.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < MIN_HEADER_LEN || self.header_len() > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    /// The header extension length field: 8-octet units after the first 8.
    pub fn hdr_ext_len(&self) -> u8 {
        self.buffer.as_ref()[field::HDR_EXT_LEN]
    }

    /// Bytes of the whole header.
    pub fn header_len(&self) -> usize {
        header_len_of(self.hdr_ext_len())
    }

    /// The options area, bounded by the length field.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS_START..self.header_len()]
    }

    /// Iterates over the options.
    pub fn iter_options(&self) -> Ipv6OptionsIter<'_> {
        ipv6_option::iter_options(self.options())
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6ExtHeader<&'a T> {
    /// The options area, borrowed for as long as the underlying buffer.
    pub fn options_ref(&self) -> &'a [u8] {
        let buffer = self.buffer.as_ref();
        &buffer[field::OPTIONS_START..header_len_of(buffer[field::HDR_EXT_LEN])]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6ExtHeader<T> {
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value.into();
    }

    pub fn set_hdr_ext_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HDR_EXT_LEN] = value;
    }

    /// The options area, bounded by the length field.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS_START..end]
    }
}

/// Bytes of a header whose length field is `hdr_ext_len`.
pub const fn header_len_of(hdr_ext_len: u8) -> usize {
    (hdr_ext_len as usize + 1) * 8
}

/// The meaning of a hop-by-hop or destination options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6OptionsRepr<'a> {
    pub next_header: IpProtocol,
    /// The header extension length field; `options.len()` is always
    /// `8 * length + 6`.
    pub length: u8,
    /// The raw options area; iterate it with [`ipv6_option::iter_options`].
    pub options: &'a [u8],
}

impl<'a> Ipv6OptionsRepr<'a> {
    /// Reads a header and checks that its options area is a well-formed
    /// sequence of options (each one inside the area, known ones with their
    /// proper length), so iterating `options` later yields no error.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Ipv6ExtHeader<&'a T>) -> Result<Self> {
        header.check_len()?;
        let options = header.options_ref();
        for option in ipv6_option::iter_options(options) {
            option?;
        }
        Ok(Self {
            next_header: header.next_header(),
            length: header.hdr_ext_len(),
            options,
        })
    }

    /// Iterates over the options.
    pub fn iter_options(&self) -> Ipv6OptionsIter<'a> {
        ipv6_option::iter_options(self.options)
    }

    /// Bytes of the whole header.
    pub const fn buffer_len(&self) -> usize {
        header_len_of(self.length)
    }

    /// Writes the header (copying the raw options area) into the start of
    /// `header`, whose buffer must hold [`buffer_len`](Self::buffer_len) bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut Ipv6ExtHeader<T>) -> Result<()> {
        let len = self.buffer_len();
        if self.options.len() + field::OPTIONS_START != len {
            return Err(Error::Malformed(
                "options area does not match the length field",
            ));
        }
        if header.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        header.set_next_header(self.next_header);
        header.set_hdr_ext_len(self.length);
        header.options_mut().copy_from_slice(self.options);
        Ok(())
    }
}

/// Builds a hop-by-hop or destination options header from a list of
/// options, aligning each and padding the header to 8 octets (RFC 8200 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6OptionsBuilder<'o, 'a> {
    pub next_header: IpProtocol,
    pub options: &'o [Ipv6Option<'a>],
}

impl Ipv6OptionsBuilder<'_, '_> {
    /// Bytes of the header the options need; malformed if it would exceed
    /// what the length field can describe.
    pub fn buffer_len(&self) -> Result<usize> {
        let len = field::OPTIONS_START + ipv6_option::options_area_len(self.options)?;
        if len > MAX_HEADER_LEN {
            return Err(Error::Malformed("options header longer than 2048 bytes"));
        }
        Ok(len)
    }

    /// Writes the header into the start of `buffer`; returns its length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len()?;
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        out[field::NEXT_HEADER] = self.next_header.into();
        // len is a multiple of 8 in 8..=2048, so this fits a byte.
        out[field::HDR_EXT_LEN] = (len / 8 - 1) as u8;
        ipv6_option::emit_options(self.options, &mut out[field::OPTIONS_START..])?;
        Ok(len)
    }
}

/// Most extension headers [`walk_chain`] follows before giving up, so that
/// a hostile chain costs a bounded amount of work.
pub const MAX_CHAIN_HEADERS: usize = 16;

/// IP protocol number of the authentication header (RFC 4302), whose length
/// counts 4-octet units (not 8) beyond the first 8 octets.
const AUTHENTICATION_HEADER: u8 = 51;
/// IP protocol numbers of the extension headers (RFC 8200 §4, RFC 7045, the
/// IANA "IPv6 Extension Header Types" registry) that this crate does not
/// model but walks over: Mobility (RFC 6275), HIP (RFC 7401) and Shim6
/// (RFC 5533). They use the uniform format of RFC 6564: next header, then
/// the length in 8-octet units beyond the first 8.
const MOBILITY_HEADER: u8 = 135;
const HIP_HEADER: u8 = 139;
const SHIM6_HEADER: u8 = 140;

/// Where a walk of the extension-header chain stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChainEnd {
    /// The upper-layer protocol; [`IpProtocol::Ipv6NoNxt`] if nothing
    /// follows; [`IpProtocol::Ipv6Frag`] for a non-first fragment, whose
    /// upper layer is only known after reassembly.
    pub protocol: IpProtocol,
    /// Offset of that header in the walked buffer (for `Ipv6Frag`, the
    /// offset of the fragment header itself).
    pub offset: usize,
}

/// Walks the extension headers at the start of `buffer` (an IPv6 payload),
/// the first of type `first` (the fixed header's next header), and returns
/// where the upper layer begins.
///
/// Follows hop-by-hop (allowed only first, RFC 8200 §4.1), destination
/// options, routing, fragment and authentication headers, and steps over
/// Mobility, HIP and Shim6 headers by their length field (RFC 7045,
/// RFC 6564); anything else is the upper layer, including the experimental
/// numbers 253 and 254 (RFC 3692, RFC 4727), which may stand for an upper
/// layer as well as for an extension header. Stops at a fragment
/// header with a non-zero offset (RFC 8200 §4.5: what follows is not a
/// header). Does not interpret the headers: the stack processes each one it
/// meets.
pub fn walk_chain(buffer: &[u8], first: IpProtocol) -> Result<ChainEnd> {
    let mut protocol = first;
    let mut offset = 0;
    for index in 0..=MAX_CHAIN_HEADERS {
        let rest = buffer.get(offset..).ok_or(Error::Truncated)?;
        let len = match protocol {
            IpProtocol::HopByHop if index > 0 => {
                return Err(Error::Malformed("hop-by-hop options header not first"));
            }
            IpProtocol::HopByHop
            | IpProtocol::Ipv6Opts
            | IpProtocol::Ipv6Route
            | IpProtocol::Unknown(MOBILITY_HEADER | HIP_HEADER | SHIM6_HEADER) => {
                Ipv6ExtHeader::new_checked(rest)?.header_len()
            }
            IpProtocol::Ipv6Frag => {
                let header = Ipv6FragmentHeader::new_checked(rest)?;
                if header.frag_offset() != 0 {
                    return Ok(ChainEnd { protocol, offset });
                }
                header.header_len()
            }
            IpProtocol::Unknown(AUTHENTICATION_HEADER) => {
                // RFC 4302 §2.2: payload length in 4-octet units, minus 2.
                let len = rest.get(1).map(|&n| (usize::from(n) + 2) * 4);
                match len {
                    Some(len) if len <= rest.len() => len,
                    _ => return Err(Error::Truncated),
                }
            }
            // Everything else, ESP (50) and the experimental 253 and 254
            // (RFC 3692: their use as header or upper layer is private)
            // among them, is where the upper layer starts.
            _ => return Ok(ChainEnd { protocol, offset }),
        };
        if index == MAX_CHAIN_HEADERS {
            break;
        }
        protocol = IpProtocol::from(rest[0]);
        offset += len;
    }
    Err(Error::Malformed("extension header chain too long"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_option::TraceOption;

    #[test]
    fn parses_hand_made_header() {
        // Next header UDP, length 0 (8 bytes): PadN(0) then router alert.
        let bytes = [17, 0, 1, 0, 5, 2, 0, 0, 0xaa];
        let header = Ipv6ExtHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(header.header_len(), 8);
        let repr = Ipv6OptionsRepr::parse(&header).unwrap();
        assert_eq!(repr.next_header, IpProtocol::Udp);
        assert_eq!(repr.length, 0);
        assert_eq!(repr.options, &bytes[2..8]);
        let options: Vec<_> = repr.iter_options().map(Result::unwrap).collect();
        assert_eq!(options, [Ipv6Option::PadN(0), Ipv6Option::RouterAlert(0)]);
    }

    #[test]
    fn lying_length_is_truncated() {
        let bytes = [17, 1, 1, 4, 0, 0, 0, 0];
        assert_eq!(
            Ipv6ExtHeader::new_checked(&bytes[..]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Ipv6ExtHeader::new_checked(&bytes[..7]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn malformed_option_fails_parse() {
        // PadN claiming 5 bytes in a 6-byte area that holds only 4 after it.
        let bytes = [17, 0, 1, 5, 0, 0, 0, 0];
        let header = Ipv6ExtHeader::new_checked(&bytes[..]).unwrap();
        assert!(matches!(
            Ipv6OptionsRepr::parse(&header),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn builder_pads_and_round_trips() {
        let options = [
            Ipv6Option::RouterAlert(0),
            Ipv6Option::Trace(TraceOption { flow: 42 }),
        ];
        let builder = Ipv6OptionsBuilder {
            next_header: IpProtocol::Tcp,
            options: &options,
        };
        assert_eq!(builder.buffer_len(), Ok(16));
        let mut buf = [0xff; 16];
        assert_eq!(builder.emit(&mut buf), Ok(16));
        assert_eq!(buf[..2], [6, 1]);
        let header = Ipv6ExtHeader::new_checked(&buf[..]).unwrap();
        let repr = Ipv6OptionsRepr::parse(&header).unwrap();
        let back: Vec<_> = repr
            .iter_options()
            .map(Result::unwrap)
            .filter(|o| !o.is_padding())
            .collect();
        assert_eq!(back, options);

        let mut again = [0; 16];
        repr.emit(&mut Ipv6ExtHeader::new_unchecked(&mut again[..]))
            .unwrap();
        assert_eq!(again, buf);
    }

    #[test]
    fn builder_refuses_oversized_header() {
        let data = [0u8; 255];
        let big = Ipv6Option::Unknown {
            option_type: 0x3f,
            data: &data,
        };
        let options = [big; 9];
        let builder = Ipv6OptionsBuilder {
            next_header: IpProtocol::Tcp,
            options: &options,
        };
        assert!(matches!(builder.buffer_len(), Err(Error::Malformed(_))));
        assert!(builder.emit(&mut [0; 4096]).is_err());
    }

    #[test]
    fn repr_emit_refuses_inconsistent_length() {
        let repr = Ipv6OptionsRepr {
            next_header: IpProtocol::Udp,
            length: 1,
            options: &[1, 4, 0, 0, 0, 0],
        };
        let mut buf = [0; 16];
        assert!(matches!(
            repr.emit(&mut Ipv6ExtHeader::new_unchecked(&mut buf[..])),
            Err(Error::Malformed(_))
        ));
    }

    /// An 8-byte options header (PadN) whose next header is `next`.
    fn opts(next: u8) -> [u8; 8] {
        [next, 0, 1, 4, 0, 0, 0, 0]
    }

    #[test]
    fn walks_to_the_upper_layer() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&opts(60)); // hop-by-hop → dest opts
        buf.extend_from_slice(&opts(43)); // dest opts → routing
        buf.extend_from_slice(&[44, 0, 4, 0, 0, 0, 0, 0]); // routing → fragment
        buf.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 1]); // first fragment → UDP
        buf.extend_from_slice(&[0; 8]);
        assert_eq!(
            walk_chain(&buf, IpProtocol::HopByHop),
            Ok(ChainEnd {
                protocol: IpProtocol::Udp,
                offset: 32
            })
        );
        // No extension headers at all.
        assert_eq!(
            walk_chain(&[], IpProtocol::Tcp),
            Ok(ChainEnd {
                protocol: IpProtocol::Tcp,
                offset: 0
            })
        );
    }

    #[test]
    fn hop_by_hop_not_first_is_an_error() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&opts(0));
        buf.extend_from_slice(&opts(17));
        assert!(matches!(
            walk_chain(&buf, IpProtocol::Ipv6Opts),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn stops_at_non_first_fragment() {
        let mut buf = opts(44).to_vec();
        buf.extend_from_slice(&[17, 0, 0x00, 0x08, 1, 2, 3, 4]); // offset 8
        buf.extend_from_slice(&[0xff; 16]);
        assert_eq!(
            walk_chain(&buf, IpProtocol::Ipv6Opts),
            Ok(ChainEnd {
                protocol: IpProtocol::Ipv6Frag,
                offset: 8
            })
        );
    }

    #[test]
    fn authentication_header_length_in_4_octet_units() {
        // AH with payload length 4 → (4 + 2) * 4 = 24 bytes, then no next.
        let mut buf = vec![59, 4];
        buf.resize(24, 0);
        assert_eq!(
            walk_chain(&buf, IpProtocol::Unknown(51)),
            Ok(ChainEnd {
                protocol: IpProtocol::Ipv6NoNxt,
                offset: 24
            })
        );
        assert_eq!(
            walk_chain(&buf[..23], IpProtocol::Unknown(51)),
            Err(Error::Truncated)
        );
    }

    /// Where a walk is expected to end.
    fn ends_at(protocol: IpProtocol, offset: usize) -> Result<ChainEnd> {
        Ok(ChainEnd { protocol, offset })
    }

    #[test]
    fn walks_over_mobility_hip_and_shim6_headers() {
        // Mobility (135, 16 bytes) → HIP (139, 8) → Shim6 (140, 24) → TCP.
        let mut buf = vec![139, 1];
        buf.resize(16, 0);
        buf.extend_from_slice(&[140, 0, 0, 0, 0, 0, 0, 0]);
        buf.extend_from_slice(&[6, 2]);
        buf.resize(48, 0);
        let mobility = IpProtocol::Unknown(135);
        assert_eq!(walk_chain(&buf, mobility), ends_at(IpProtocol::Tcp, 48));
        // Their length fields are checked like any other.
        assert_eq!(walk_chain(&buf[..47], mobility), Err(Error::Truncated));
        // A destination options header may follow them (RFC 8200 §4.1).
        let mut buf = vec![60, 0, 0, 0, 0, 0, 0, 0];
        buf.extend_from_slice(&opts(17));
        let hip = IpProtocol::Unknown(139);
        assert_eq!(walk_chain(&buf, hip), ends_at(IpProtocol::Udp, 16));
    }

    #[test]
    fn experimental_numbers_and_esp_are_upper_layers() {
        for number in [50, 253, 254] {
            let mut buf = opts(number).to_vec();
            buf.extend_from_slice(&[0; 8]);
            let walked = walk_chain(&buf, IpProtocol::Ipv6Opts);
            assert_eq!(walked, ends_at(IpProtocol::Unknown(number), 8));
        }
    }

    #[test]
    fn truncated_chain_is_an_error() {
        let buf = opts(60);
        assert_eq!(
            walk_chain(&buf, IpProtocol::HopByHop),
            Err(Error::Truncated)
        );
        assert_eq!(
            walk_chain(&buf[..5], IpProtocol::HopByHop),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn long_chain_is_bounded() {
        // Exactly MAX_CHAIN_HEADERS destination options headers then UDP: ok.
        let mut buf = Vec::new();
        for _ in 0..MAX_CHAIN_HEADERS - 1 {
            buf.extend_from_slice(&opts(60));
        }
        buf.extend_from_slice(&opts(17));
        assert_eq!(
            walk_chain(&buf, IpProtocol::Ipv6Opts),
            Ok(ChainEnd {
                protocol: IpProtocol::Udp,
                offset: 8 * MAX_CHAIN_HEADERS
            })
        );
        // One more header: refused, however long the buffer.
        let mut long = opts(60).to_vec();
        long.extend_from_slice(&buf);
        assert!(matches!(
            walk_chain(&long, IpProtocol::Ipv6Opts),
            Err(Error::Malformed(_))
        ));
        let endless: Vec<u8> = (0..1000).flat_map(|_| opts(60)).collect();
        assert!(matches!(
            walk_chain(&endless, IpProtocol::Ipv6Opts),
            Err(Error::Malformed(_))
        ));
    }
}
