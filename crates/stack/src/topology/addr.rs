//! Addresses as topology files write them: IPv4 and IPv6 prefixes
//! (`"192.0.2.1/24"`, `"2001:db8:a::/64"`) and MAC addresses.

use core::fmt;
use core::str::FromStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use wire::ethernet::EthernetAddress;

/// An IPv4 address with the length of its subnet's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    pub address: Ipv4Addr,
    pub prefix_len: u8,
}

/// An IPv6 address with a prefix length: an interface address
/// (`2001:db8:a::1/64`) or a prefix (`2001:db8:a::/64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Cidr {
    pub address: Ipv6Addr,
    pub prefix_len: u8,
}

/// Either family's prefix, as a route's destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpCidr {
    V4(Ipv4Cidr),
    V6(Ipv6Cidr),
}

impl Ipv4Cidr {
    /// `None` when `prefix_len` exceeds 32.
    pub const fn new(address: Ipv4Addr, prefix_len: u8) -> Option<Self> {
        if prefix_len > 32 {
            return None;
        }
        Some(Self {
            address,
            prefix_len,
        })
    }

    fn mask(&self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0)
    }

    /// The prefix itself: the address with its host bits cleared.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.address) & self.mask())
    }

    /// Whether `address` is within the prefix.
    pub fn contains(&self, address: Ipv4Addr) -> bool {
        u32::from(address) & self.mask() == u32::from(self.network())
    }

    /// The subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.address) | !self.mask())
    }
}

impl Ipv6Cidr {
    /// `None` when `prefix_len` exceeds 128.
    pub const fn new(address: Ipv6Addr, prefix_len: u8) -> Option<Self> {
        if prefix_len > 128 {
            return None;
        }
        Some(Self {
            address,
            prefix_len,
        })
    }

    fn mask(&self) -> u128 {
        u128::MAX
            .checked_shl(128 - u32::from(self.prefix_len))
            .unwrap_or(0)
    }

    /// The prefix itself: the address with its host bits cleared.
    pub fn network(&self) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.address) & self.mask())
    }

    /// Whether `address` is within the prefix.
    pub fn contains(&self, address: Ipv6Addr) -> bool {
        u128::from(address) & self.mask() == u128::from(self.network())
    }
}

impl IpCidr {
    pub fn prefix_len(&self) -> u8 {
        match self {
            IpCidr::V4(cidr) => cidr.prefix_len,
            IpCidr::V6(cidr) => cidr.prefix_len,
        }
    }

    /// Whether its host bits are clear, so that it names a prefix.
    pub fn is_network(&self) -> bool {
        match self {
            IpCidr::V4(cidr) => cidr.network() == cidr.address,
            IpCidr::V6(cidr) => cidr.network() == cidr.address,
        }
    }
}

fn split_cidr(text: &str) -> Result<(&str, u8), String> {
    let (address, len) = text
        .split_once('/')
        .ok_or_else(|| format!("`{text}` lacks a prefix length, e.g. \"/24\" or \"/64\""))?;
    let len = if len.bytes().all(|b| b.is_ascii_digit()) && (1..=3).contains(&len.len()) {
        len.parse::<u8>().ok()
    } else {
        None
    };
    let len = len.ok_or_else(|| format!("`{text}` has a malformed prefix length"))?;
    Ok((address, len))
}

impl FromStr for Ipv4Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (address, len) = split_cidr(text)?;
        let address = address
            .parse()
            .map_err(|_| format!("`{text}`: `{address}` is not an IPv4 address"))?;
        Self::new(address, len)
            .ok_or_else(|| format!("`{text}`: an IPv4 prefix length is at most 32"))
    }
}

impl FromStr for Ipv6Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (address, len) = split_cidr(text)?;
        let address = address
            .parse()
            .map_err(|_| format!("`{text}`: `{address}` is not an IPv6 address"))?;
        Self::new(address, len)
            .ok_or_else(|| format!("`{text}`: an IPv6 prefix length is at most 128"))
    }
}

impl FromStr for IpCidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.contains(':') {
            text.parse().map(IpCidr::V6)
        } else {
            text.parse().map(IpCidr::V4)
        }
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

impl fmt::Display for Ipv6Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpCidr::V4(cidr) => cidr.fmt(f),
            IpCidr::V6(cidr) => cidr.fmt(f),
        }
    }
}

/// Serializes through `Display` and deserializes through `FromStr`.
macro_rules! serde_via_string {
    ($($type:ty),*) => {$(
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer)?.parse().map_err(D::Error::custom)
            }
        }
    )*};
}

serde_via_string!(Ipv4Cidr, Ipv6Cidr, IpCidr, FileMac);

/// A MAC address as a topology file writes it: six hex octets separated
/// by colons, unicast only (an interface's own address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileMac(pub EthernetAddress);

impl FromStr for FileMac {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let malformed = || format!("`{text}` is not a MAC address such as \"02:00:5e:00:53:01\"");
        let mut octets = [0u8; 6];
        let mut parts = text.split(':');
        for octet in &mut octets {
            let part = parts
                .next()
                .filter(|p| p.len() == 2)
                .ok_or_else(malformed)?;
            *octet = u8::from_str_radix(part, 16).map_err(|_| malformed())?;
        }
        if parts.next().is_some() {
            return Err(malformed());
        }
        let mac = EthernetAddress(octets);
        if mac.is_multicast() {
            return Err(format!(
                "`{text}` is a group (multicast) MAC address, not an interface's"
            ));
        }
        Ok(FileMac(mac))
    }
}

impl fmt::Display for FileMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A stable, locally administered unicast MAC for an interface that names
/// none: FNV-1a of the node and interface names, with the U/L bit set and
/// the I/G bit clear (IEEE 802-2014 §8.2.2).
pub fn derived_mac(node: &str, interface: &str) -> EthernetAddress {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let bytes = node.bytes().chain([0]).chain(interface.bytes());
    let hash = bytes.fold(FNV_OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    });
    let h = hash.to_be_bytes();
    EthernetAddress([(h[0] & 0xfc) | 0x02, h[1], h[2], h[3], h[4], h[5]])
}

/// The address family of an `IpAddr` matches that of an `IpCidr`.
pub(super) fn same_family(cidr: &IpCidr, address: &IpAddr) -> bool {
    matches!(
        (cidr, address),
        (IpCidr::V4(_), IpAddr::V4(_)) | (IpCidr::V6(_), IpAddr::V6(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_print() {
        let v4: Ipv4Cidr = "192.0.2.10/24".parse().unwrap();
        assert_eq!(v4.network(), Ipv4Addr::new(192, 0, 2, 0));
        assert_eq!(v4.broadcast(), Ipv4Addr::new(192, 0, 2, 255));
        assert!(v4.contains(Ipv4Addr::new(192, 0, 2, 1)));
        assert!(!v4.contains(Ipv4Addr::new(192, 0, 3, 1)));
        assert_eq!(v4.to_string(), "192.0.2.10/24");
        let v6: Ipv6Cidr = "2001:db8:a::1/64".parse().unwrap();
        assert_eq!(v6.network(), "2001:db8:a::".parse::<Ipv6Addr>().unwrap());
        assert!(v6.contains("2001:db8:a::99".parse().unwrap()));
        let all: IpCidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.is_network());
        assert_eq!(all.prefix_len(), 0);
    }

    #[test]
    fn malformed_prefixes_are_refused() {
        for text in [
            "192.0.2.1",
            "192.0.2.1/33",
            "192.0.2/24",
            "192.0.2.1/+4",
            "192.0.2.1/0024",
            "x/1",
        ] {
            assert!(text.parse::<Ipv4Cidr>().is_err(), "{text}");
        }
        for text in [
            "2001:db8::",
            "2001:db8::/129",
            "2001:db8:::/64",
            "2001:db8::/",
        ] {
            assert!(text.parse::<Ipv6Cidr>().is_err(), "{text}");
        }
    }

    #[test]
    fn macs_parse_and_refuse_group_addresses() {
        assert_eq!(
            "02:00:5e:00:53:01".parse::<FileMac>().unwrap().to_string(),
            "02:00:5e:00:53:01"
        );
        for text in [
            "01:00:5e:00:00:01",
            "02:00:5e:00:53",
            "02:00:5e:00:53:01:02",
            "02-00-5e-00-53-01",
            "2:0:5e:0:53:1",
            "zz:00:5e:00:53:01",
        ] {
            assert!(text.parse::<FileMac>().is_err(), "{text}");
        }
    }

    #[test]
    fn derived_macs_are_stable_local_and_distinct() {
        let mac = derived_mac("host-a", "eth0");
        assert_eq!(mac, derived_mac("host-a", "eth0"));
        assert_eq!(mac.0[0] & 0x03, 0x02, "locally administered unicast");
        assert_ne!(mac, derived_mac("host-b", "eth0"));
        assert_ne!(derived_mac("a", "beth0"), derived_mac("ab", "eth0"));
    }
}
