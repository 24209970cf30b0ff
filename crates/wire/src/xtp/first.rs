//! What a FIRST packet opens an association with: the address segment (who
//! is called, in one of several address formats) and the traffic
//! specifier (service type and rate parameters). TCNTL carries a traffic
//! specifier too.
//!
//! Address segment: `alen`(2) `adomain`(1) `aformat`(1), then per format:
//! null (0): one 32-bit address, `alen` 8; IPv4 (1): destination host,
//! source host, destination port, source port, `alen` 16. For IPv6
//! (format 6, named by Wireshark as "Internet Protocol Version 6 Address"
//! but not decoded by it) stackscope uses the IPv4 layout with 16-byte
//! hosts, `alen` 40.
//!
//! Traffic specifier: `tlen`(2) `service`(1) `tformat`(1), then format 0:
//! one 32-bit word, `tlen` 8; format 1: maxdata, inrate, inburst, outrate,
//! outburst (32 bits each), `tlen` 24.

use core::net::{Ipv4Addr, Ipv6Addr};

use crate::bytes::{be_u16, be_u32, ipv6_at, put_be_u16, put_be_u32, put_ipv6};
use crate::{Error, Result};

/// Address formats (the `aformat` byte).
pub mod aformat {
    pub const NULL: u8 = 0;
    pub const IPV4: u8 = 1;
    pub const IPV6: u8 = 6;
}

/// Length of each address format's segment (`alen`).
pub const NULL_ADDRESS_LEN: usize = 8;
pub const IPV4_ADDRESS_LEN: usize = 16;
pub const IPV6_ADDRESS_LEN: usize = 40;
/// Length of each traffic format's specifier (`tlen`).
pub const TRAFFIC_NONE_LEN: usize = 8;
pub const TRAFFIC_RATES_LEN: usize = 24;

/// Bytes before the format-specific part of either segment.
const PREFIX_LEN: usize = 4;

/// A view of an address segment: the common prefix, then the format's
/// fields, read at the offsets of its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressSegment<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AddressSegment<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// The prefix fits, `alen` lies within the buffer and is the length of
    /// the (supported) format.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let view = Self::new_unchecked(buffer);
        let len = view.buffer.as_ref().len();
        if len < PREFIX_LEN {
            return Err(Error::Truncated);
        }
        let expected = match view.aformat() {
            aformat::NULL => NULL_ADDRESS_LEN,
            aformat::IPV4 => IPV4_ADDRESS_LEN,
            aformat::IPV6 => IPV6_ADDRESS_LEN,
            _ => return Err(Error::Unsupported("XTP address format")),
        };
        let alen = usize::from(view.alen());
        if alen != expected {
            return Err(Error::Malformed(
                "XTP address length not that of its format",
            ));
        }
        if alen > len {
            return Err(Error::Truncated);
        }
        Ok(view)
    }

    pub fn alen(&self) -> u16 {
        be_u16(self.buffer.as_ref(), 0)
    }

    pub fn adomain(&self) -> u8 {
        self.buffer.as_ref()[2]
    }

    pub fn aformat(&self) -> u8 {
        self.buffer.as_ref()[3]
    }

    /// Null format: the one address word.
    pub fn null_address(&self) -> u32 {
        be_u32(self.buffer.as_ref(), PREFIX_LEN)
    }

    /// Length of one host address in this format (4, 16, or 0 for null).
    fn host_len(&self) -> usize {
        match self.aformat() {
            aformat::IPV4 => 4,
            aformat::IPV6 => 16,
            _ => 0,
        }
    }

    /// IPv4 format: the destination host.
    pub fn dst_ipv4(&self) -> Ipv4Addr {
        Ipv4Addr::from(be_u32(self.buffer.as_ref(), PREFIX_LEN))
    }

    pub fn src_ipv4(&self) -> Ipv4Addr {
        Ipv4Addr::from(be_u32(self.buffer.as_ref(), PREFIX_LEN + 4))
    }

    /// IPv6 format: the destination host.
    pub fn dst_ipv6(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), PREFIX_LEN)
    }

    pub fn src_ipv6(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), PREFIX_LEN + 16)
    }

    /// IP formats: the destination port, after both hosts.
    pub fn dst_port(&self) -> u16 {
        be_u16(self.buffer.as_ref(), PREFIX_LEN + 2 * self.host_len())
    }

    pub fn src_port(&self) -> u16 {
        be_u16(self.buffer.as_ref(), PREFIX_LEN + 2 * self.host_len() + 2)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AddressSegment<T> {
    /// Writes the prefix; the format decides where the rest goes.
    pub fn set_prefix(&mut self, alen: u16, adomain: u8, aformat: u8) {
        let data = self.buffer.as_mut();
        put_be_u16(data, 0, alen);
        data[2] = adomain;
        data[3] = aformat;
    }

    pub fn set_null_address(&mut self, value: u32) {
        put_be_u32(self.buffer.as_mut(), PREFIX_LEN, value)
    }

    pub fn set_ipv4_hosts(&mut self, dst: Ipv4Addr, src: Ipv4Addr) {
        put_be_u32(self.buffer.as_mut(), PREFIX_LEN, dst.into());
        put_be_u32(self.buffer.as_mut(), PREFIX_LEN + 4, src.into());
    }

    pub fn set_ipv6_hosts(&mut self, dst: Ipv6Addr, src: Ipv6Addr) {
        put_ipv6(self.buffer.as_mut(), PREFIX_LEN, dst);
        put_ipv6(self.buffer.as_mut(), PREFIX_LEN + 16, src);
    }

    /// IP formats: both ports, after the hosts (set the format first).
    pub fn set_ports(&mut self, dst: u16, src: u16) {
        let at = PREFIX_LEN + 2 * self.host_len();
        put_be_u16(self.buffer.as_mut(), at, dst);
        put_be_u16(self.buffer.as_mut(), at + 2, src);
    }
}

/// Who a FIRST packet calls, in one of the supported address formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Address {
    /// Direct addressing: no network address, one 32-bit value.
    Null { address: u32 },
    Ipv4 {
        dst_host: Ipv4Addr,
        src_host: Ipv4Addr,
        dst_port: u16,
        src_port: u16,
    },
    Ipv6 {
        dst_host: Ipv6Addr,
        src_host: Ipv6Addr,
        dst_port: u16,
        src_port: u16,
    },
}

/// The meaning of an address segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressRepr {
    /// The address domain (`adomain`), uninterpreted.
    pub domain: u8,
    pub address: Address,
}

impl AddressRepr {
    /// Parses the address segment at the start of `bytes`; returns it and
    /// its length (`alen`).
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize)> {
        let view = AddressSegment::new_checked(bytes)?;
        let address = match view.aformat() {
            aformat::NULL => Address::Null {
                address: view.null_address(),
            },
            aformat::IPV4 => Address::Ipv4 {
                dst_host: view.dst_ipv4(),
                src_host: view.src_ipv4(),
                dst_port: view.dst_port(),
                src_port: view.src_port(),
            },
            // new_checked admits no other format.
            _ => Address::Ipv6 {
                dst_host: view.dst_ipv6(),
                src_host: view.src_ipv6(),
                dst_port: view.dst_port(),
                src_port: view.src_port(),
            },
        };
        let repr = Self {
            domain: view.adomain(),
            address,
        };
        Ok((repr, usize::from(view.alen())))
    }

    /// Length of the segment (`alen`).
    pub const fn buffer_len(&self) -> usize {
        match self.address {
            Address::Null { .. } => NULL_ADDRESS_LEN,
            Address::Ipv4 { .. } => IPV4_ADDRESS_LEN,
            Address::Ipv6 { .. } => IPV6_ADDRESS_LEN,
        }
    }

    /// Writes the segment into the first [`buffer_len`](Self::buffer_len)
    /// bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<()> {
        let len = self.buffer_len();
        let Some(out) = out.get_mut(..len) else {
            return Err(Error::Truncated);
        };
        let mut view = AddressSegment::new_unchecked(out);
        // Lengths are the constants above, all below 2^16.
        let alen = len as u16;
        match self.address {
            Address::Null { address } => {
                view.set_prefix(alen, self.domain, aformat::NULL);
                view.set_null_address(address);
            }
            Address::Ipv4 {
                dst_host,
                src_host,
                dst_port,
                src_port,
            } => {
                view.set_prefix(alen, self.domain, aformat::IPV4);
                view.set_ipv4_hosts(dst_host, src_host);
                view.set_ports(dst_port, src_port);
            }
            Address::Ipv6 {
                dst_host,
                src_host,
                dst_port,
                src_port,
            } => {
                view.set_prefix(alen, self.domain, aformat::IPV6);
                view.set_ipv6_hosts(dst_host, src_host);
                view.set_ports(dst_port, src_port);
            }
        }
        Ok(())
    }
}

/// Service types of the traffic specifier (Wireshark's `service_vals`).
/// Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    Unspecified,
    UnacknowledgedDatagram,
    AcknowledgedDatagram,
    Transaction,
    /// Reliable unicast stream: a connection.
    UnicastStream,
    UnacknowledgedMulticastStream,
    MulticastStream,
    Unknown(u8),
}

impl From<u8> for Service {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::Unspecified,
            1 => Self::UnacknowledgedDatagram,
            2 => Self::AcknowledgedDatagram,
            3 => Self::Transaction,
            4 => Self::UnicastStream,
            5 => Self::UnacknowledgedMulticastStream,
            6 => Self::MulticastStream,
            other => Self::Unknown(other),
        }
    }
}

impl From<Service> for u8 {
    fn from(value: Service) -> Self {
        match value {
            Service::Unspecified => 0,
            Service::UnacknowledgedDatagram => 1,
            Service::AcknowledgedDatagram => 2,
            Service::Transaction => 3,
            Service::UnicastStream => 4,
            Service::UnacknowledgedMulticastStream => 5,
            Service::MulticastStream => 6,
            Service::Unknown(other) => other,
        }
    }
}

/// What the traffic specifier asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Traffic {
    /// Format 0: no parameters; one word Wireshark shows as "Traffic".
    None { traffic: u32 },
    /// Format 1: largest data segment, and rate and burst each way (the
    /// study, §2.4.2: rate is a maximum data rate per second, burst the
    /// bytes in each burst).
    Rates {
        maxdata: u32,
        inrate: u32,
        inburst: u32,
        outrate: u32,
        outburst: u32,
    },
}

/// The meaning of a traffic specifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrafficRepr {
    pub service: Service,
    pub traffic: Traffic,
}

impl TrafficRepr {
    /// Parses the traffic specifier at the start of `bytes`; returns it and
    /// its length (`tlen`), which must be that of its format.
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize)> {
        if bytes.len() < TRAFFIC_NONE_LEN {
            return Err(Error::Truncated);
        }
        let tlen = usize::from(be_u16(bytes, 0));
        let expected = match bytes[3] {
            0 => TRAFFIC_NONE_LEN,
            1 => TRAFFIC_RATES_LEN,
            _ => return Err(Error::Unsupported("XTP traffic format")),
        };
        if tlen != expected {
            return Err(Error::Malformed(
                "XTP traffic length not that of its format",
            ));
        }
        if tlen > bytes.len() {
            return Err(Error::Truncated);
        }
        let word = |i: usize| be_u32(bytes, PREFIX_LEN + 4 * i);
        let traffic = if bytes[3] == 0 {
            Traffic::None { traffic: word(0) }
        } else {
            Traffic::Rates {
                maxdata: word(0),
                inrate: word(1),
                inburst: word(2),
                outrate: word(3),
                outburst: word(4),
            }
        };
        let repr = Self {
            service: Service::from(bytes[2]),
            traffic,
        };
        Ok((repr, tlen))
    }

    /// Length of the specifier (`tlen`).
    pub const fn buffer_len(&self) -> usize {
        match self.traffic {
            Traffic::None { .. } => TRAFFIC_NONE_LEN,
            Traffic::Rates { .. } => TRAFFIC_RATES_LEN,
        }
    }

    /// Writes the specifier into the first
    /// [`buffer_len`](Self::buffer_len) bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<()> {
        let len = self.buffer_len();
        let Some(out) = out.get_mut(..len) else {
            return Err(Error::Truncated);
        };
        // Lengths are the constants above, all below 2^16.
        put_be_u16(out, 0, len as u16);
        out[2] = self.service.into();
        let words: &[u32] = match self.traffic {
            Traffic::None { ref traffic } => {
                out[3] = 0;
                core::slice::from_ref(traffic)
            }
            Traffic::Rates {
                maxdata,
                inrate,
                inburst,
                outrate,
                outburst,
            } => {
                out[3] = 1;
                &[maxdata, inrate, inburst, outrate, outburst]
            }
        };
        for (i, &w) in words.iter().enumerate() {
            put_be_u32(out, PREFIX_LEN + 4 * i, w);
        }
        Ok(())
    }
}

/// A FIRST segment's address and traffic specifier, and the bytes after
/// them (the data, with its tag if BTAG is set). The specifier starts
/// `alen` bytes in; packet-xtp.c always looks 16 bytes in (the IPv4
/// length), so it misreads the specifier after a null or IPv6 address.
pub fn parse_first(segment: &[u8]) -> Result<(AddressRepr, TrafficRepr, &[u8])> {
    let (address, alen) = AddressRepr::parse(segment)?;
    let rest = &segment[alen..];
    let (traffic, tlen) = TrafficRepr::parse(rest)?;
    Ok((address, traffic, &rest[tlen..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IPV4: AddressRepr = AddressRepr {
        domain: 0,
        address: Address::Ipv4 {
            dst_host: Ipv4Addr::new(198, 51, 100, 2),
            src_host: Ipv4Addr::new(192, 0, 2, 1),
            dst_port: 5001,
            src_port: 40000,
        },
    };

    #[test]
    fn ipv4_address_matches_the_dissector_layout() {
        let mut buf = [0u8; IPV4_ADDRESS_LEN];
        IPV4.emit(&mut buf).unwrap();
        assert_eq!(
            buf,
            [0, 16, 0, 1, 198, 51, 100, 2, 192, 0, 2, 1, 0x13, 0x89, 0x9c, 0x40]
        );
        assert_eq!(AddressRepr::parse(&buf), Ok((IPV4, 16)));
    }

    #[test]
    fn every_address_format_round_trips() {
        for address in [
            Address::Null { address: 0xfeed },
            Address::Ipv6 {
                dst_host: Ipv6Addr::LOCALHOST,
                src_host: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9),
                dst_port: 1,
                src_port: 2,
            },
        ] {
            let repr = AddressRepr { domain: 3, address };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buf).unwrap();
            assert_eq!(AddressRepr::parse(&buf), Ok((repr, buf.len())));
            assert_eq!(
                AddressRepr::parse(&buf[..buf.len() - 1]),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn bad_address_segments_are_refused() {
        let mut buf = [0u8; IPV4_ADDRESS_LEN];
        IPV4.emit(&mut buf).unwrap();
        buf[1] = 8;
        assert!(matches!(AddressRepr::parse(&buf), Err(Error::Malformed(_))));
        buf[1] = 16;
        buf[3] = 2;
        assert!(matches!(
            AddressRepr::parse(&buf),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn traffic_formats_round_trip() {
        for traffic in [
            Traffic::None { traffic: 0 },
            Traffic::Rates {
                maxdata: 1460,
                inrate: 1_250_000,
                inburst: 8192,
                outrate: 2,
                outburst: 3,
            },
        ] {
            let repr = TrafficRepr {
                service: Service::UnicastStream,
                traffic,
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buf).unwrap();
            assert_eq!(buf[2], 4);
            assert_eq!(TrafficRepr::parse(&buf), Ok((repr, buf.len())));
        }
        let mut bad = [0u8; 8];
        bad[1] = 8;
        bad[3] = 1;
        assert!(matches!(TrafficRepr::parse(&bad), Err(Error::Malformed(_))));
    }
}
