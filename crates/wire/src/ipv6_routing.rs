//! The routing header (RFC 8200 §4.4). Type 0 (RFC 2460) is recognised so
//! the stack can refuse it as RFC 5095 §3 requires; every other type is
//! kept as opaque type-specific data.

use core::net::Ipv6Addr;

use crate::bytes::ipv6_at;
use crate::ip::IpProtocol;
use crate::ipv6_ext_header::header_len_of;
use crate::{Error, Result};

mod field {
    pub const NEXT_HEADER: usize = 0;
    pub const HDR_EXT_LEN: usize = 1;
    pub const ROUTING_TYPE: usize = 2;
    pub const SEGMENTS_LEFT: usize = 3;
    pub const DATA_START: usize = 4;
    /// Type 0: four reserved bytes, then the addresses.
    pub const TYPE0_ADDRESSES: usize = 8;
}

/// Smallest routing header: the first 8 octets.
pub const MIN_HEADER_LEN: usize = 8;
/// Routing type 0, deprecated by RFC 5095.
pub const TYPE0: u8 = 0;

/// A view of a routing header at the start of a byte buffer (the buffer may
/// go on past the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6RoutingHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6RoutingHeader<T> {
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

    /// The first 8 octets are present and the whole header the length field
    /// describes fits.
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

    pub fn routing_type(&self) -> u8 {
        self.buffer.as_ref()[field::ROUTING_TYPE]
    }

    /// Route segments still to visit.
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[field::SEGMENTS_LEFT]
    }

    /// The type-specific data: everything after the first four bytes.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA_START..self.header_len()]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6RoutingHeader<&'a T> {
    /// The type-specific data, borrowed for as long as the underlying buffer.
    pub fn data_ref(&self) -> &'a [u8] {
        let buffer = self.buffer.as_ref();
        &buffer[field::DATA_START..header_len_of(buffer[field::HDR_EXT_LEN])]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6RoutingHeader<T> {
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value.into();
    }

    pub fn set_hdr_ext_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HDR_EXT_LEN] = value;
    }

    pub fn set_routing_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::ROUTING_TYPE] = value;
    }

    /// A router decrements this as it processes a segment (RFC 8200 §4.4).
    pub fn set_segments_left(&mut self, value: u8) {
        self.buffer.as_mut()[field::SEGMENTS_LEFT] = value;
    }

    /// The type-specific data, bounded by the length field.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::DATA_START..end]
    }
}

/// The address list of a type 0 routing header: a whole number of 16-byte
/// addresses, borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressList<'a> {
    bytes: &'a [u8],
}

impl<'a> AddressList<'a> {
    /// Wraps bytes that hold a whole number of addresses.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(16) {
            return Err(Error::Malformed("address list not a multiple of 16 bytes"));
        }
        Ok(Self { bytes })
    }

    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of addresses.
    pub const fn len(&self) -> usize {
        self.bytes.len() / 16
    }

    pub const fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The address at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<Ipv6Addr> {
        let start = index.checked_mul(16)?;
        self.bytes
            .get(start..start.checked_add(16)?)
            .map(|addr| ipv6_at(addr, 0))
    }

    pub fn iter(&self) -> impl Iterator<Item = Ipv6Addr> + 'a {
        self.bytes.chunks_exact(16).map(|addr| ipv6_at(addr, 0))
    }
}

/// The meaning of a routing header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ipv6RoutingRepr<'a> {
    /// RFC 2460 type 0 (source route), deprecated by RFC 5095: parsed only
    /// so the stack can refuse it.
    Type0 {
        next_header: IpProtocol,
        segments_left: u8,
        addresses: AddressList<'a>,
    },
    /// Any other routing type, its data kept as is.
    Other {
        next_header: IpProtocol,
        routing_type: u8,
        segments_left: u8,
        /// Everything after the first four bytes: `8 * hdr_ext_len + 4` bytes.
        data: &'a [u8],
    },
}

impl<'a> Ipv6RoutingRepr<'a> {
    /// Reads a routing header. A type 0 header must have an even length
    /// field (RFC 2460 §4.4: two units per address); its segments-left is
    /// not checked against the address count, as the stack refuses type 0
    /// on segments-left alone (RFC 5095 §3).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &Ipv6RoutingHeader<&'a T>) -> Result<Self> {
        header.check_len()?;
        let next_header = header.next_header();
        let segments_left = header.segments_left();
        let data = header.data_ref();
        match header.routing_type() {
            TYPE0 => {
                if !header.hdr_ext_len().is_multiple_of(2) {
                    return Err(Error::Malformed("type 0 routing header length is odd"));
                }
                let addresses =
                    AddressList::new(&data[field::TYPE0_ADDRESSES - field::DATA_START..])?;
                Ok(Self::Type0 {
                    next_header,
                    segments_left,
                    addresses,
                })
            }
            routing_type => Ok(Self::Other {
                next_header,
                routing_type,
                segments_left,
                data,
            }),
        }
    }

    pub const fn next_header(&self) -> IpProtocol {
        match self {
            Self::Type0 { next_header, .. } | Self::Other { next_header, .. } => *next_header,
        }
    }

    pub const fn routing_type(&self) -> u8 {
        match self {
            Self::Type0 { .. } => TYPE0,
            Self::Other { routing_type, .. } => *routing_type,
        }
    }

    pub const fn segments_left(&self) -> u8 {
        match self {
            Self::Type0 { segments_left, .. } | Self::Other { segments_left, .. } => *segments_left,
        }
    }

    /// Bytes of the whole header.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::Type0 { addresses, .. } => field::TYPE0_ADDRESSES + addresses.as_bytes().len(),
            Self::Other { data, .. } => field::DATA_START + data.len(),
        }
    }

    /// The length field for [`buffer_len`](Self::buffer_len), or an error if
    /// that is not a multiple of 8 in 8..=2048 (or an `Other` claims type 0,
    /// which would not read back as itself).
    fn hdr_ext_len(&self) -> Result<u8> {
        if let Self::Other {
            routing_type: TYPE0,
            ..
        } = self
        {
            return Err(Error::Malformed("type 0 routing header given as Other"));
        }
        let len = self.buffer_len();
        if !len.is_multiple_of(8) {
            return Err(Error::Malformed("routing header not a multiple of 8 bytes"));
        }
        u8::try_from(len / 8 - 1)
            .map_err(|_| Error::Malformed("routing header longer than 2048 bytes"))
    }

    /// Writes the header into the start of `header`, whose buffer must hold
    /// [`buffer_len`](Self::buffer_len) bytes. Type 0 reserved bytes are zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        header: &mut Ipv6RoutingHeader<T>,
    ) -> Result<()> {
        let hdr_ext_len = self.hdr_ext_len()?;
        if header.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        header.set_next_header(self.next_header());
        header.set_hdr_ext_len(hdr_ext_len);
        header.set_routing_type(self.routing_type());
        header.set_segments_left(self.segments_left());
        let data = header.data_mut();
        match self {
            Self::Type0 { addresses, .. } => {
                let (reserved, list) =
                    data.split_at_mut(field::TYPE0_ADDRESSES - field::DATA_START);
                reserved.fill(0);
                list.copy_from_slice(addresses.as_bytes());
            }
            Self::Other { data: src, .. } => data.copy_from_slice(src),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A1: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const A2: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

    fn type0_bytes() -> Vec<u8> {
        let mut bytes = vec![17, 4, 0, 1, 0, 0, 0, 0];
        bytes.extend_from_slice(&A1.octets());
        bytes.extend_from_slice(&A2.octets());
        bytes
    }

    #[test]
    fn parses_type0() {
        let bytes = type0_bytes();
        let header = Ipv6RoutingHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(header.header_len(), 40);
        let repr = Ipv6RoutingRepr::parse(&header).unwrap();
        let Ipv6RoutingRepr::Type0 {
            next_header,
            segments_left,
            addresses,
        } = repr
        else {
            panic!("not type 0: {repr:?}");
        };
        assert_eq!((next_header, segments_left), (IpProtocol::Udp, 1));
        assert_eq!(addresses.len(), 2);
        assert_eq!(addresses.get(1), Some(A2));
        assert_eq!(addresses.get(2), None);
        assert_eq!(addresses.get(usize::MAX), None);
        assert_eq!(addresses.iter().collect::<Vec<_>>(), [A1, A2]);

        let mut out = vec![0xff; repr.buffer_len()];
        repr.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn type0_odd_length_is_malformed() {
        let mut bytes = type0_bytes();
        bytes[1] = 3;
        let header = Ipv6RoutingHeader::new_checked(&bytes[..]).unwrap();
        assert!(matches!(
            Ipv6RoutingRepr::parse(&header),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn other_types_keep_their_data() {
        // Segment routing header type 4, minimal 8 bytes plus trailing bytes.
        let bytes = [59, 0, 4, 0, 1, 2, 3, 4, 0xee];
        let header = Ipv6RoutingHeader::new_checked(&bytes[..]).unwrap();
        let repr = Ipv6RoutingRepr::parse(&header).unwrap();
        assert_eq!(
            repr,
            Ipv6RoutingRepr::Other {
                next_header: IpProtocol::Ipv6NoNxt,
                routing_type: 4,
                segments_left: 0,
                data: &[1, 2, 3, 4],
            }
        );
        assert_eq!(repr.buffer_len(), 8);
    }

    #[test]
    fn lying_length_is_truncated() {
        let bytes = type0_bytes();
        assert_eq!(
            Ipv6RoutingHeader::new_checked(&bytes[..39]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Ipv6RoutingHeader::new_checked(&bytes[..7]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn emit_refuses_bad_lengths() {
        let mut out = [0; 64];
        let odd = Ipv6RoutingRepr::Other {
            next_header: IpProtocol::Tcp,
            routing_type: 3,
            segments_left: 0,
            data: &[0; 5],
        };
        assert!(odd
            .emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[..]))
            .is_err());
        let disguised = Ipv6RoutingRepr::Other {
            next_header: IpProtocol::Tcp,
            routing_type: TYPE0,
            segments_left: 0,
            data: &[0; 4],
        };
        assert!(disguised
            .emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[..]))
            .is_err());
        let fine = Ipv6RoutingRepr::Other {
            next_header: IpProtocol::Tcp,
            routing_type: 3,
            segments_left: 0,
            data: &[0; 12],
        };
        assert_eq!(
            fine.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[..15])),
            Err(Error::Truncated)
        );
        assert!(AddressList::new(&[0; 17]).is_err());
    }
}
