//! Ethernet II frames with an optional 802.1Q tag.

use core::fmt;

use crate::bytes::{be_u16, put_be_u16};
use crate::{Error, Result};

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    pub const BROADCAST: Self = Self([0xff; 6]);

    /// Reads an address from exactly six bytes.
    pub fn from_bytes(data: &[u8]) -> Option<Self> {
        data.try_into().ok().map(Self)
    }

    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Group bit (I/G) set: multicast or broadcast.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    pub const fn is_broadcast(&self) -> bool {
        matches!(self.0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    }

    /// Individual (unicast) address.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

mod field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    /// The EtherType of an untagged frame, or the TPID of a tagged one.
    pub const OUTER_TYPE: Range<usize> = 12..14;
    /// 802.1Q tag control information (tagged frames only).
    pub const TCI: Range<usize> = 14..16;
    /// The EtherType of a tagged frame, after the tag.
    pub const INNER_TYPE: Range<usize> = 16..18;
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag (TPID and TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// Length of a header carrying one 802.1Q tag.
pub const TAGGED_HEADER_LEN: usize = HEADER_LEN + VLAN_TAG_LEN;
/// The tag protocol identifier of an IEEE 802.1Q tag.
pub const VLAN_TPID: u16 = 0x8100;
/// The smallest type/length value that is an EtherType; smaller ones are an
/// IEEE 802.3 length (IEEE 802.3 §3.2.6: 0x0600 = 1536 and above is a type).
pub const MIN_ETHERTYPE: u16 = 0x0600;

/// The protocol of an Ethernet II payload. Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    Ipv6,
    /// An IEEE 802.1Q tag follows (TPID 0x8100).
    Vlan,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => Self::Ipv4,
            0x0806 => Self::Arp,
            0x86dd => Self::Ipv6,
            VLAN_TPID => Self::Vlan,
            other => Self::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Vlan => VLAN_TPID,
            EtherType::Unknown(other) => other,
        }
    }
}

/// An IEEE 802.1Q tag's control information (TCI): priority code point,
/// drop eligible indicator and VLAN identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 3 bits.
    pub pcp: u8,
    /// Drop eligible indicator (formerly CFI).
    pub dei: bool,
    /// VLAN identifier, 12 bits.
    pub vid: u16,
}

impl VlanTag {
    /// Largest priority code point.
    pub const MAX_PCP: u8 = 7;
    /// Largest VLAN identifier.
    pub const MAX_VID: u16 = 0x0fff;

    /// Splits a 16-bit TCI into its fields.
    pub const fn from_tci(tci: u16) -> Self {
        Self {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & Self::MAX_VID,
        }
    }

    /// Whether every field fits its bit width.
    pub const fn is_valid(&self) -> bool {
        self.pcp <= Self::MAX_PCP && self.vid <= Self::MAX_VID
    }

    /// The 16-bit TCI; fields wider than their bit width are truncated
    /// (see [`is_valid`](Self::is_valid)).
    pub const fn to_tci(&self) -> u16 {
        ((self.pcp as u16 & 0x7) << 13) | ((self.dei as u16) << 12) | (self.vid & Self::MAX_VID)
    }
}

/// A view of an Ethernet II frame (without preamble and FCS) in a byte
/// buffer. The payload runs to the end of the buffer and so includes any
/// minimum-frame padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

/// The name the crate's `FooPacket` view convention predicts.
pub type EthernetPacket<T> = EthernetFrame<T>;

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// The header fits, including the 802.1Q tag when the frame has one.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst_addr(&self) -> EthernetAddress {
        let mut addr = [0; 6];
        addr.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        EthernetAddress(addr)
    }

    pub fn src_addr(&self) -> EthernetAddress {
        let mut addr = [0; 6];
        addr.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        EthernetAddress(addr)
    }

    /// Whether the type field after the source address is the 802.1Q TPID.
    pub fn is_tagged(&self) -> bool {
        // The two bytes compared as they lie: asked several times per
        // received frame (length check, header length, EtherType).
        self.buffer.as_ref().get(field::OUTER_TYPE) == Some(&VLAN_TPID.to_be_bytes()[..])
    }

    /// Header length: 14 bytes, or 18 with an 802.1Q tag. Safe to call on a
    /// short buffer (the answer then says how much is needed).
    pub fn header_len(&self) -> usize {
        if self.is_tagged() {
            TAGGED_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// The 802.1Q tag, if the frame carries one.
    pub fn vlan_tag(&self) -> Option<VlanTag> {
        self.is_tagged()
            .then(|| VlanTag::from_tci(be_u16(self.buffer.as_ref(), field::TCI.start)))
    }

    /// The EtherType of the payload (after the tag, if any).
    pub fn ethertype(&self) -> EtherType {
        let range = if self.is_tagged() {
            field::INNER_TYPE
        } else {
            field::OUTER_TYPE
        };
        EtherType::from(be_u16(self.buffer.as_ref(), range.start))
    }

    /// Everything after the header, padding included.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }

    /// Makes the frame tagged: writes the TPID and the tag's TCI. Call
    /// before [`set_ethertype`](Self::set_ethertype).
    pub fn set_vlan_tag(&mut self, tag: VlanTag) {
        put_be_u16(self.buffer.as_mut(), field::OUTER_TYPE.start, VLAN_TPID);
        put_be_u16(self.buffer.as_mut(), field::TCI.start, tag.to_tci());
    }

    /// Writes the payload EtherType where the frame's current layout puts
    /// it: after the tag on a tagged frame, else at offset 12 (where
    /// [`EtherType::Vlan`] would make the frame tagged).
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        let range = if self.is_tagged() {
            field::INNER_TYPE
        } else {
            field::OUTER_TYPE
        };
        put_be_u16(self.buffer.as_mut(), range.start, ethertype.into());
    }

    /// Everything after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub dst: EthernetAddress,
    pub src: EthernetAddress,
    /// One 802.1Q tag between the source address and the EtherType.
    pub vlan: Option<VlanTag>,
    /// The payload's EtherType (after the tag, if any).
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads a frame header. A type below 0x0600 is an IEEE 802.3 length
    /// (an LLC frame), not Ethernet II, and is refused as unsupported.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self> {
        frame.check_len()?;
        let ethertype = frame.ethertype();
        if u16::from(ethertype) < MIN_ETHERTYPE {
            return Err(Error::Unsupported(
                "IEEE 802.3 length field, not an EtherType",
            ));
        }
        Ok(Self {
            dst: frame.dst_addr(),
            src: frame.src_addr(),
            vlan: frame.vlan_tag(),
            ethertype,
        })
    }

    /// Bytes of header this repr emits: 14, or 18 with a tag.
    pub const fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            TAGGED_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Bytes of header and a payload of `payload_len`.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        self.header_len() + payload_len
    }

    /// Writes the header (not the payload: fill it through
    /// [`EthernetFrame::payload_mut`] afterwards). The buffer must hold at
    /// least [`header_len`](Self::header_len) bytes. An untagged frame may
    /// not carry EtherType 0x8100 (it would read back as tagged), tag fields
    /// must fit their widths, and the type must be a real EtherType.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) -> Result<()> {
        if u16::from(self.ethertype) < MIN_ETHERTYPE {
            return Err(Error::Malformed(
                "EtherType below 0x0600 is an 802.3 length",
            ));
        }
        if self.vlan.is_none() && self.ethertype == EtherType::Vlan {
            return Err(Error::Malformed("untagged frame with EtherType 802.1Q"));
        }
        if self.vlan.is_some_and(|tag| !tag.is_valid()) {
            return Err(Error::Malformed("802.1Q tag field out of range"));
        }
        if frame.buffer.as_ref().len() < self.header_len() {
            return Err(Error::Truncated);
        }
        frame.set_dst_addr(self.dst);
        frame.set_src_addr(self.src);
        // Write by position, not through `set_ethertype`: the buffer's stale
        // bytes at offset 12 must not decide the layout.
        let type_field = match self.vlan {
            Some(tag) => {
                frame.set_vlan_tag(tag);
                field::INNER_TYPE
            }
            None => field::OUTER_TYPE,
        };
        put_be_u16(
            frame.buffer.as_mut(),
            type_field.start,
            self.ethertype.into(),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DST: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x02]);
    const SRC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);

    #[rustfmt::skip]
    const UNTAGGED: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x08, 0x00,
        0xaa, 0xbb, 0xcc, 0xdd,
    ];

    #[rustfmt::skip]
    const TAGGED: [u8; 20] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x81, 0x00, 0xb0, 0x64, // PCP 5, DEI 1, VID 100
        0x86, 0xdd,
        0xaa, 0xbb,
    ];

    #[test]
    fn parses_untagged_frame() {
        let frame = EthernetFrame::new_checked(&UNTAGGED[..]).unwrap();
        let repr = EthernetRepr::parse(&frame).unwrap();
        assert_eq!(
            repr,
            EthernetRepr {
                dst: DST,
                src: SRC,
                vlan: None,
                ethertype: EtherType::Ipv4
            }
        );
        assert_eq!(frame.header_len(), 14);
        assert_eq!(frame.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn parses_tagged_frame() {
        let frame = EthernetFrame::new_checked(&TAGGED[..]).unwrap();
        let repr = EthernetRepr::parse(&frame).unwrap();
        assert_eq!(
            repr.vlan,
            Some(VlanTag {
                pcp: 5,
                dei: true,
                vid: 100
            })
        );
        assert_eq!(repr.ethertype, EtherType::Ipv6);
        assert_eq!(frame.header_len(), 18);
        assert_eq!(frame.payload(), &[0xaa, 0xbb]);
    }

    #[test]
    fn emits_known_bytes() {
        for bytes in [&UNTAGGED[..], &TAGGED[..]] {
            let repr = EthernetRepr::parse(&EthernetFrame::new_checked(bytes).unwrap()).unwrap();
            // Start from a buffer whose stale bytes say "tagged".
            let mut out = vec![0x81; bytes.len()];
            let mut frame = EthernetFrame::new_unchecked(&mut out[..]);
            repr.emit(&mut frame).unwrap();
            let header_len = repr.header_len();
            frame.payload_mut().copy_from_slice(&bytes[header_len..]);
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn short_frames_are_truncated() {
        for len in 0..UNTAGGED.len().min(14) {
            assert_eq!(
                EthernetFrame::new_checked(&UNTAGGED[..len]),
                Err(Error::Truncated)
            );
        }
        for len in 14..18 {
            assert_eq!(
                EthernetFrame::new_checked(&TAGGED[..len]),
                Err(Error::Truncated)
            );
        }
        assert!(EthernetFrame::new_checked(&TAGGED[..18]).is_ok());
    }

    #[test]
    fn llc_length_field_is_unsupported() {
        let mut bytes = UNTAGGED;
        bytes[12..14].copy_from_slice(&46u16.to_be_bytes());
        let frame = EthernetFrame::new_checked(&bytes[..]).unwrap();
        assert!(matches!(
            EthernetRepr::parse(&frame),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn emit_refuses_ambiguous_or_out_of_range() {
        let mut buf = [0; 18];
        let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
        let mut repr = EthernetRepr {
            dst: DST,
            src: SRC,
            vlan: None,
            ethertype: EtherType::Vlan,
        };
        assert!(repr.emit(&mut frame).is_err());
        repr.ethertype = EtherType::Ipv4;
        repr.vlan = Some(VlanTag {
            pcp: 8,
            dei: false,
            vid: 1,
        });
        assert!(repr.emit(&mut frame).is_err());
        repr.vlan = Some(VlanTag {
            pcp: 0,
            dei: false,
            vid: 0x1000,
        });
        assert!(repr.emit(&mut frame).is_err());
        repr.vlan = None;
        assert_eq!(
            repr.emit(&mut EthernetFrame::new_unchecked(&mut [0u8; 13][..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn ethertype_numbers_round_trip() {
        for v in 0..=u16::MAX {
            assert_eq!(u16::from(EtherType::from(v)), v);
        }
        for tci in 0..=u16::MAX {
            let tag = VlanTag::from_tci(tci);
            assert!(tag.is_valid());
            assert_eq!(tag.to_tci(), tci);
        }
    }
}
