//! ARP (RFC 826) for Ethernet and IPv4. The view reads any hardware and
//! protocol address lengths; the repr models only Ethernet/IPv4.

use core::net::Ipv4Addr;

use crate::bytes::{be_u16, put_be_u16};
use crate::ethernet::{EtherType, EthernetAddress};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    /// Start of the four variable-length addresses.
    pub const ADDRS: usize = 8;
}

/// Length of the fixed part, before the addresses.
pub const FIXED_LEN: usize = field::ADDRS;
/// Length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = FIXED_LEN + 2 * (6 + 4);
/// ARP hardware type of Ethernet (IANA "Hardware Types").
pub const HARDWARE_ETHERNET: u16 = 1;

/// The ARP opcode. Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOperation {
    Request,
    Reply,
    Unknown(u16),
}

impl From<u16> for ArpOperation {
    fn from(value: u16) -> Self {
        match value {
            1 => Self::Request,
            2 => Self::Reply,
            other => Self::Unknown(other),
        }
    }
}

impl From<ArpOperation> for u16 {
    fn from(value: ArpOperation) -> Self {
        match value {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
            ArpOperation::Unknown(other) => other,
        }
    }
}

/// A view of an ARP packet in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps a buffer without checking it; accessors may panic on a short one.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// The fixed part fits, and so do the four addresses whose lengths it
    /// gives. Trailing bytes (Ethernet minimum-frame padding) are allowed.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN || len < self.packet_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn hardware_type(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::HTYPE.start)
    }

    /// The protocol type, an EtherType value.
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(be_u16(self.buffer.as_ref(), field::PTYPE.start))
    }

    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    pub fn operation(&self) -> ArpOperation {
        ArpOperation::from(be_u16(self.buffer.as_ref(), field::OPER.start))
    }

    /// Length of the packet as its address lengths describe it.
    pub fn packet_len(&self) -> usize {
        FIXED_LEN + 2 * (usize::from(self.hardware_len()) + usize::from(self.protocol_len()))
    }

    /// Ranges of the sender hardware, sender protocol, target hardware and
    /// target protocol addresses.
    fn address_ranges(&self) -> [core::ops::Range<usize>; 4] {
        let hlen = usize::from(self.hardware_len());
        let plen = usize::from(self.protocol_len());
        let sha = field::ADDRS;
        let spa = sha + hlen;
        let tha = spa + plen;
        let tpa = tha + hlen;
        [sha..spa, spa..tha, tha..tpa, tpa..tpa + plen]
    }

    pub fn source_hardware_addr(&self) -> &[u8] {
        let [range, _, _, _] = self.address_ranges();
        &self.buffer.as_ref()[range]
    }

    pub fn source_protocol_addr(&self) -> &[u8] {
        let [_, range, _, _] = self.address_ranges();
        &self.buffer.as_ref()[range]
    }

    pub fn target_hardware_addr(&self) -> &[u8] {
        let [_, _, range, _] = self.address_ranges();
        &self.buffer.as_ref()[range]
    }

    pub fn target_protocol_addr(&self) -> &[u8] {
        let [_, _, _, range] = self.address_ranges();
        &self.buffer.as_ref()[range]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    pub fn set_hardware_type(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::HTYPE.start, value)
    }

    pub fn set_protocol_type(&mut self, value: EtherType) {
        put_be_u16(self.buffer.as_mut(), field::PTYPE.start, value.into())
    }

    /// Sets the hardware address length; set lengths before addresses.
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value
    }

    /// Sets the protocol address length; set lengths before addresses.
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value
    }

    pub fn set_operation(&mut self, value: ArpOperation) {
        put_be_u16(self.buffer.as_mut(), field::OPER.start, value.into())
    }

    /// Copies `addr`, which must be `hardware_len()` bytes long.
    pub fn set_source_hardware_addr(&mut self, addr: &[u8]) {
        let [range, _, _, _] = self.address_ranges();
        self.buffer.as_mut()[range].copy_from_slice(addr)
    }

    /// Copies `addr`, which must be `protocol_len()` bytes long.
    pub fn set_source_protocol_addr(&mut self, addr: &[u8]) {
        let [_, range, _, _] = self.address_ranges();
        self.buffer.as_mut()[range].copy_from_slice(addr)
    }

    /// Copies `addr`, which must be `hardware_len()` bytes long.
    pub fn set_target_hardware_addr(&mut self, addr: &[u8]) {
        let [_, _, range, _] = self.address_ranges();
        self.buffer.as_mut()[range].copy_from_slice(addr)
    }

    /// Copies `addr`, which must be `protocol_len()` bytes long.
    pub fn set_target_protocol_addr(&mut self, addr: &[u8]) {
        let [_, _, _, range] = self.address_ranges();
        self.buffer.as_mut()[range].copy_from_slice(addr)
    }
}

/// The meaning of an ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpRepr {
    /// ARP resolving IPv4 addresses to Ethernet addresses.
    EthernetIpv4 {
        operation: ArpOperation,
        source_hardware_addr: EthernetAddress,
        source_protocol_addr: Ipv4Addr,
        target_hardware_addr: EthernetAddress,
        target_protocol_addr: Ipv4Addr,
    },
}

impl ArpRepr {
    /// Reads an Ethernet/IPv4 ARP packet; other hardware or protocol types
    /// and address lengths are unsupported.
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<Self> {
        packet.check_len()?;
        if packet.hardware_type() != HARDWARE_ETHERNET {
            return Err(Error::Unsupported("ARP hardware type not Ethernet"));
        }
        if packet.protocol_type() != EtherType::Ipv4 {
            return Err(Error::Unsupported("ARP protocol type not IPv4"));
        }
        if packet.hardware_len() != 6 || packet.protocol_len() != 4 {
            return Err(Error::Unsupported("ARP address lengths not 6 and 4"));
        }
        let hardware = |bytes: &[u8]| EthernetAddress::from_bytes(bytes).ok_or(Error::Truncated);
        let protocol = |bytes: &[u8]| {
            <[u8; 4]>::try_from(bytes)
                .map(Ipv4Addr::from)
                .map_err(|_| Error::Truncated)
        };
        Ok(Self::EthernetIpv4 {
            operation: packet.operation(),
            source_hardware_addr: hardware(packet.source_hardware_addr())?,
            source_protocol_addr: protocol(packet.source_protocol_addr())?,
            target_hardware_addr: hardware(packet.target_hardware_addr())?,
            target_protocol_addr: protocol(packet.target_protocol_addr())?,
        })
    }

    /// Bytes this repr emits.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::EthernetIpv4 { .. } => ETHERNET_IPV4_LEN,
        }
    }

    /// Writes the packet; the buffer must hold [`buffer_len`](Self::buffer_len) bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) -> Result<()> {
        if packet.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        match *self {
            Self::EthernetIpv4 {
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_hardware_addr,
                target_protocol_addr,
            } => {
                packet.set_hardware_type(HARDWARE_ETHERNET);
                packet.set_protocol_type(EtherType::Ipv4);
                packet.set_hardware_len(6);
                packet.set_protocol_len(4);
                packet.set_operation(operation);
                packet.set_source_hardware_addr(source_hardware_addr.as_bytes());
                packet.set_source_protocol_addr(&source_protocol_addr.octets());
                packet.set_target_hardware_addr(target_hardware_addr.as_bytes());
                packet.set_target_protocol_addr(&target_protocol_addr.octets());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Who has 192.0.2.2? Tell 192.0.2.1", from 02:00:00:00:00:01.
    #[rustfmt::skip]
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 192, 0, 2, 1,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 192, 0, 2, 2,
    ];

    fn request_repr() -> ArpRepr {
        ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
            source_protocol_addr: Ipv4Addr::new(192, 0, 2, 1),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Addr::new(192, 0, 2, 2),
        }
    }

    #[test]
    fn parses_known_request() {
        let packet = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(ArpRepr::parse(&packet).unwrap(), request_repr());
    }

    #[test]
    fn emits_known_request() {
        let repr = request_repr();
        let mut buf = [0xff; ETHERNET_IPV4_LEN];
        repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, REQUEST);
    }

    #[test]
    fn padding_is_allowed_truncation_is_not() {
        let mut padded = REQUEST.to_vec();
        padded.extend_from_slice(&[0; 18]);
        let packet = ArpPacket::new_checked(&padded[..]).unwrap();
        assert_eq!(ArpRepr::parse(&packet).unwrap(), request_repr());
        for len in 0..REQUEST.len() {
            assert_eq!(
                ArpPacket::new_checked(&REQUEST[..len]),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn other_types_and_lengths_are_unsupported() {
        for (index, value) in [(1, 6), (2, 0x86), (4, 8), (5, 16)] {
            let mut bytes = [0u8; 64];
            bytes[..28].copy_from_slice(&REQUEST);
            bytes[index] = value;
            let packet = ArpPacket::new_checked(&bytes[..]).unwrap();
            assert!(matches!(
                ArpRepr::parse(&packet),
                Err(Error::Unsupported(_))
            ));
        }
    }

    #[test]
    fn lying_address_lengths_are_truncated() {
        let mut bytes = REQUEST;
        bytes[4] = 255;
        assert_eq!(ArpPacket::new_checked(&bytes[..]), Err(Error::Truncated));
    }
}
