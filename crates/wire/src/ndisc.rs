//! Neighbor Discovery for IPv6 (RFC 4861 §4): Router Solicitation and
//! Advertisement, Neighbor Solicitation and Advertisement, Redirect, and the
//! options they carry.
//!
//! Parsing checks what the message alone can show (code 0, minimum length,
//! no zero-length option, no multicast target; RFC 4861 §6.1, §7.1, §8.1).
//! Checks that need the IP header (hop limit 255, source address rules) are
//! the stack's job.

use core::fmt;
use core::net::Ipv6Addr;

use crate::bytes::{be_u32, ipv6_at, put_be_u32, put_ipv6};
use crate::ethernet::EthernetAddress;
use crate::icmpv6::{Icmpv6Message, Icmpv6Packet};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    // Router Advertisement (RFC 4861 §4.2).
    pub const CUR_HOP_LIMIT: usize = 4;
    pub const ROUTER_FLAGS: usize = 5;
    pub const ROUTER_LIFETIME: Range<usize> = 6..8;
    pub const REACHABLE_TIME: Range<usize> = 8..12;
    pub const RETRANS_TIME: Range<usize> = 12..16;
    // Neighbor Solicitation / Advertisement and Redirect (§4.3..§4.5).
    pub const NEIGHBOR_FLAGS: usize = 4;
    /// The 32 bits after the checksum: reserved in RS, NS and Redirect.
    pub const RESERVED: Range<usize> = 4..8;
    pub const TARGET_ADDR: Range<usize> = 8..24;
    pub const DEST_ADDR: Range<usize> = 24..40;

    // Inside an option (§4.6).
    pub const OPT_TYPE: usize = 0;
    pub const OPT_LEN: usize = 1;
    pub const OPT_LINK_ADDR: Range<usize> = 2..8;
    pub const OPT_PREFIX_LEN: usize = 2;
    pub const OPT_PREFIX_FLAGS: usize = 3;
    pub const OPT_VALID_LIFETIME: Range<usize> = 4..8;
    pub const OPT_PREFERRED_LIFETIME: Range<usize> = 8..12;
    pub const OPT_PREFIX: Range<usize> = 16..32;
    pub const OPT_MTU: Range<usize> = 4..8;
    /// Redirected Header: type, length, six reserved bytes, then the data.
    pub const OPT_REDIRECTED_DATA: usize = 8;
}

/// Minimum length of a Router Solicitation (RFC 4861 §6.1.1).
pub const ROUTER_SOLICIT_LEN: usize = 8;
/// Minimum length of a Router Advertisement (§6.1.2).
pub const ROUTER_ADVERT_LEN: usize = 16;
/// Minimum length of a Neighbor Solicitation (§7.1.1).
pub const NEIGHBOR_SOLICIT_LEN: usize = 24;
/// Minimum length of a Neighbor Advertisement (§7.1.2).
pub const NEIGHBOR_ADVERT_LEN: usize = 24;
/// Minimum length of a Redirect (§8.1).
pub const REDIRECT_LEN: usize = 40;

/// Option lengths count units of this many bytes (§4.6).
pub const OPTION_UNIT: usize = 8;
/// The longest option the 8-bit length field can describe.
pub const MAX_OPTION_LEN: usize = 255 * OPTION_UNIT;

const OPT_SOURCE_LINK_ADDR: u8 = 1;
const OPT_TARGET_LINK_ADDR: u8 = 2;
const OPT_PREFIX_INFORMATION: u8 = 3;
const OPT_REDIRECTED_HEADER: u8 = 4;
const OPT_MTU: u8 = 5;

/// Whether `kind` is an option type with a variant of its own.
const fn is_modeled(kind: u8) -> bool {
    matches!(
        kind,
        OPT_SOURCE_LINK_ADDR
            | OPT_TARGET_LINK_ADDR
            | OPT_PREFIX_INFORMATION
            | OPT_REDIRECTED_HEADER
            | OPT_MTU
    )
}

/// Length of a link-layer address option carrying an Ethernet address
/// (RFC 2464 §6: length 1).
const LINK_ADDR_OPTION_LEN: usize = 8;
/// Length of the Prefix Information option (§4.6.2: length 4).
const PREFIX_OPTION_LEN: usize = 32;
/// Length of the MTU option (§4.6.4: length 1).
const MTU_OPTION_LEN: usize = 8;

/// Router Advertisement flags (RFC 4861 §4.2). Other bits are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RouterFlags {
    /// M: addresses are available via DHCPv6.
    pub managed: bool,
    /// O: other configuration is available via DHCPv6.
    pub other: bool,
}

impl RouterFlags {
    const MANAGED: u8 = 0x80;
    const OTHER: u8 = 0x40;

    pub fn from_byte(byte: u8) -> Self {
        Self {
            managed: byte & Self::MANAGED != 0,
            other: byte & Self::OTHER != 0,
        }
    }

    pub fn to_byte(self) -> u8 {
        (if self.managed { Self::MANAGED } else { 0 }) | (if self.other { Self::OTHER } else { 0 })
    }
}

/// Neighbor Advertisement flags (RFC 4861 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NeighborFlags {
    /// R: the sender is a router.
    pub router: bool,
    /// S: sent in response to a Neighbor Solicitation.
    pub solicited: bool,
    /// O: the advertisement should override an existing cache entry.
    pub override_: bool,
}

impl NeighborFlags {
    const ROUTER: u8 = 0x80;
    const SOLICITED: u8 = 0x40;
    const OVERRIDE: u8 = 0x20;

    pub fn from_byte(byte: u8) -> Self {
        Self {
            router: byte & Self::ROUTER != 0,
            solicited: byte & Self::SOLICITED != 0,
            override_: byte & Self::OVERRIDE != 0,
        }
    }

    pub fn to_byte(self) -> u8 {
        (if self.router { Self::ROUTER } else { 0 })
            | (if self.solicited { Self::SOLICITED } else { 0 })
            | (if self.override_ { Self::OVERRIDE } else { 0 })
    }
}

/// ND fields of an [`Icmpv6Packet`]. Each reads zero where the message is
/// too short for it (a field of another message type).
impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Router Advertisement: Cur Hop Limit (0: unspecified).
    pub fn cur_hop_limit(&self) -> u8 {
        self.u8_at(field::CUR_HOP_LIMIT)
    }

    pub fn router_flags(&self) -> RouterFlags {
        RouterFlags::from_byte(self.u8_at(field::ROUTER_FLAGS))
    }

    /// Router Advertisement: lifetime as default router, in seconds.
    pub fn router_lifetime(&self) -> u16 {
        self.u16_at(field::ROUTER_LIFETIME.start)
    }

    /// Router Advertisement: Reachable Time in milliseconds.
    pub fn reachable_time(&self) -> u32 {
        self.u32_at(field::REACHABLE_TIME.start)
    }

    /// Router Advertisement: Retrans Timer in milliseconds.
    pub fn retrans_time(&self) -> u32 {
        self.u32_at(field::RETRANS_TIME.start)
    }

    pub fn neighbor_flags(&self) -> NeighborFlags {
        NeighborFlags::from_byte(self.u8_at(field::NEIGHBOR_FLAGS))
    }

    /// NS, NA and Redirect: the Target Address.
    pub fn target_addr(&self) -> Ipv6Addr {
        self.ipv6_addr_at(field::TARGET_ADDR.start)
    }

    /// Redirect: the Destination Address being redirected.
    pub fn dest_addr(&self) -> Ipv6Addr {
        self.ipv6_addr_at(field::DEST_ADDR.start)
    }

    /// The options after the fixed part of an ND message.
    pub fn ndisc_options(&self) -> NdiscOptions<'_> {
        NdiscOptions::new(self.payload())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    pub fn set_cur_hop_limit(&mut self, value: u8) {
        self.set_bytes_at(field::CUR_HOP_LIMIT, &[value]);
    }

    pub fn set_router_flags(&mut self, value: RouterFlags) {
        self.set_bytes_at(field::ROUTER_FLAGS, &[value.to_byte()]);
    }

    pub fn set_router_lifetime(&mut self, value: u16) {
        self.set_u16_at(field::ROUTER_LIFETIME.start, value);
    }

    pub fn set_reachable_time(&mut self, value: u32) {
        self.set_u32_at(field::REACHABLE_TIME.start, value);
    }

    pub fn set_retrans_time(&mut self, value: u32) {
        self.set_u32_at(field::RETRANS_TIME.start, value);
    }

    /// Sets R, S and O and clears the reserved bits of the same word.
    pub fn set_neighbor_flags(&mut self, value: NeighborFlags) {
        self.set_bytes_at(field::RESERVED.start, &[value.to_byte(), 0, 0, 0]);
    }

    pub fn set_target_addr(&mut self, value: Ipv6Addr) {
        self.set_ipv6_addr_at(field::TARGET_ADDR.start, value);
    }

    pub fn set_dest_addr(&mut self, value: Ipv6Addr) {
        self.set_ipv6_addr_at(field::DEST_ADDR.start, value);
    }

    fn clear_reserved(&mut self) {
        self.set_bytes_at(field::RESERVED.start, &[0; 4]);
    }
}

/// One ND option (RFC 4861 §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdiscOption<'a> {
    /// Type 1: the sender's link-layer address (§4.6.1).
    SourceLinkLayerAddr(EthernetAddress),
    /// Type 2: the target's link-layer address (§4.6.1).
    TargetLinkLayerAddr(EthernetAddress),
    /// Type 3: an on-link or autoconfiguration prefix (§4.6.2).
    PrefixInformation {
        prefix_len: u8,
        /// L: the prefix is on-link.
        on_link: bool,
        /// A: the prefix may be used for stateless autoconfiguration.
        autonomous: bool,
        /// Seconds; 0xffffffff is infinity.
        valid_lifetime: u32,
        /// Seconds; 0xffffffff is infinity.
        preferred_lifetime: u32,
        prefix: Ipv6Addr,
    },
    /// Type 4: the start of the redirected packet (§4.6.3). Parsed data
    /// includes the zero padding up to the option's 8-byte boundary; emit
    /// pads to it.
    RedirectedHeader { header_and_data: &'a [u8] },
    /// Type 5: the link MTU (§4.6.4).
    Mtu(u32),
    /// Any other type, with the bytes after type and length (padding
    /// included when parsed; emit pads to an 8-byte boundary). Emit refuses
    /// the types above, 1 to 5.
    Unknown { kind: u8, data: &'a [u8] },
}

const fn round_up_to_unit(len: usize) -> usize {
    len.div_ceil(OPTION_UNIT) * OPTION_UNIT
}

impl<'a> NdiscOption<'a> {
    /// Decodes one option whose bytes (type, length and body) are exactly
    /// `bytes`, as delimited by its length field.
    fn decode(bytes: &'a [u8]) -> Result<Self> {
        let kind = *bytes.get(field::OPT_TYPE).ok_or(Error::Truncated)?;
        match kind {
            OPT_SOURCE_LINK_ADDR | OPT_TARGET_LINK_ADDR => {
                // Other link layers use other lengths (§4.6.1); this crate
                // models Ethernet only.
                if bytes.len() != LINK_ADDR_OPTION_LEN {
                    return Err(Error::Unsupported("non-Ethernet link-layer address option"));
                }
                let mut addr = [0; 6];
                addr.copy_from_slice(&bytes[field::OPT_LINK_ADDR]);
                let addr = EthernetAddress(addr);
                Ok(if kind == OPT_SOURCE_LINK_ADDR {
                    Self::SourceLinkLayerAddr(addr)
                } else {
                    Self::TargetLinkLayerAddr(addr)
                })
            }
            OPT_PREFIX_INFORMATION => {
                if bytes.len() != PREFIX_OPTION_LEN {
                    return Err(Error::Malformed(
                        "ND prefix information option length is not 4",
                    ));
                }
                let flags = bytes[field::OPT_PREFIX_FLAGS];
                Ok(Self::PrefixInformation {
                    prefix_len: bytes[field::OPT_PREFIX_LEN],
                    on_link: flags & 0x80 != 0,
                    autonomous: flags & 0x40 != 0,
                    valid_lifetime: be_u32(bytes, field::OPT_VALID_LIFETIME.start),
                    preferred_lifetime: be_u32(bytes, field::OPT_PREFERRED_LIFETIME.start),
                    prefix: ipv6_at(bytes, field::OPT_PREFIX.start),
                })
            }
            OPT_REDIRECTED_HEADER => Ok(Self::RedirectedHeader {
                header_and_data: bytes.get(field::OPT_REDIRECTED_DATA..).unwrap_or(&[]),
            }),
            OPT_MTU => {
                if bytes.len() != MTU_OPTION_LEN {
                    return Err(Error::Malformed("ND MTU option length is not 1"));
                }
                Ok(Self::Mtu(be_u32(bytes, field::OPT_MTU.start)))
            }
            _ => Ok(Self::Unknown {
                kind,
                data: bytes.get(field::OPT_LEN + 1..).unwrap_or(&[]),
            }),
        }
    }

    /// The option type number.
    pub fn kind(&self) -> u8 {
        match self {
            Self::SourceLinkLayerAddr(_) => OPT_SOURCE_LINK_ADDR,
            Self::TargetLinkLayerAddr(_) => OPT_TARGET_LINK_ADDR,
            Self::PrefixInformation { .. } => OPT_PREFIX_INFORMATION,
            Self::RedirectedHeader { .. } => OPT_REDIRECTED_HEADER,
            Self::Mtu(_) => OPT_MTU,
            Self::Unknown { kind, .. } => *kind,
        }
    }

    /// Bytes this option emits, padding included.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::SourceLinkLayerAddr(_) | Self::TargetLinkLayerAddr(_) => LINK_ADDR_OPTION_LEN,
            Self::PrefixInformation { .. } => PREFIX_OPTION_LEN,
            Self::RedirectedHeader { header_and_data } => {
                round_up_to_unit(field::OPT_REDIRECTED_DATA + header_and_data.len())
            }
            Self::Mtu(_) => MTU_OPTION_LEN,
            Self::Unknown { data, .. } => round_up_to_unit(field::OPT_LEN + 1 + data.len()),
        }
    }

    /// Whether [`emit`](Self::emit) can write this option: it fits the
    /// 8-bit length field, and an `Unknown` option does not carry a type
    /// this module models (it would read back as another variant).
    fn check(&self) -> Result<()> {
        if self.buffer_len() > MAX_OPTION_LEN {
            return Err(Error::Malformed("ND option longer than 2040 bytes"));
        }
        if let Self::Unknown { kind, .. } = *self {
            if is_modeled(kind) {
                return Err(Error::Malformed("ND unknown option with a known type"));
            }
        }
        Ok(())
    }

    /// Writes the option at the start of `buffer`; returns its length.
    /// Refuses an option longer than [`MAX_OPTION_LEN`] and an `Unknown`
    /// option whose type is one this module models (1 to 5).
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        self.check()?;
        let len = self.buffer_len();
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        out.fill(0);
        out[field::OPT_TYPE] = self.kind();
        // Fits: len <= 2040, a multiple of 8.
        out[field::OPT_LEN] = (len / OPTION_UNIT) as u8;
        match *self {
            Self::SourceLinkLayerAddr(addr) | Self::TargetLinkLayerAddr(addr) => {
                out[field::OPT_LINK_ADDR].copy_from_slice(addr.as_bytes());
            }
            Self::PrefixInformation {
                prefix_len,
                on_link,
                autonomous,
                valid_lifetime,
                preferred_lifetime,
                prefix,
            } => {
                out[field::OPT_PREFIX_LEN] = prefix_len;
                out[field::OPT_PREFIX_FLAGS] =
                    (if on_link { 0x80 } else { 0 }) | (if autonomous { 0x40 } else { 0 });
                put_be_u32(out, field::OPT_VALID_LIFETIME.start, valid_lifetime);
                put_be_u32(out, field::OPT_PREFERRED_LIFETIME.start, preferred_lifetime);
                put_ipv6(out, field::OPT_PREFIX.start, prefix);
            }
            Self::RedirectedHeader { header_and_data } => {
                let start = field::OPT_REDIRECTED_DATA;
                out[start..start + header_and_data.len()].copy_from_slice(header_and_data);
            }
            Self::Mtu(mtu) => put_be_u32(out, field::OPT_MTU.start, mtu),
            Self::Unknown { data, .. } => {
                let start = field::OPT_LEN + 1;
                out[start..start + data.len()].copy_from_slice(data);
            }
        }
        Ok(len)
    }
}

/// The options of an ND message: either the raw bytes of a parsed message
/// or a list of options to emit. Equality compares the options yielded.
#[derive(Clone, Copy)]
pub struct NdiscOptions<'a> {
    source: OptionsSource<'a>,
}

#[derive(Clone, Copy)]
enum OptionsSource<'a> {
    Bytes(&'a [u8]),
    List(&'a [NdiscOption<'a>]),
}

impl<'a> NdiscOptions<'a> {
    /// No options.
    pub const EMPTY: Self = Self::new(&[]);

    /// A view over raw option bytes; nothing is checked until iteration or
    /// [`check_lengths`](Self::check_lengths).
    pub const fn new(bytes: &'a [u8]) -> Self {
        Self {
            source: OptionsSource::Bytes(bytes),
        }
    }

    /// Options to emit, in order.
    pub const fn from_list(list: &'a [NdiscOption<'a>]) -> Self {
        Self {
            source: OptionsSource::List(list),
        }
    }

    /// The raw bytes, when this view came from a message.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self.source {
            OptionsSource::Bytes(bytes) => Some(bytes),
            OptionsSource::List(_) => None,
        }
    }

    /// The options in order. Over raw bytes, an option with length zero or
    /// one running past the end yields an error and ends the iteration
    /// (RFC 4861 §4.6); a known option with the wrong size yields an error
    /// and iteration goes on with the next option.
    pub fn iter(&self) -> NdiscOptionsIter<'a> {
        NdiscOptionsIter {
            source: match self.source {
                OptionsSource::Bytes(bytes) => IterSource::Bytes(bytes),
                OptionsSource::List(list) => IterSource::List(list.iter()),
            },
        }
    }

    /// Every option has a non-zero length and ends within the bytes, as
    /// RFC 4861 §6.1 / §7.1 / §8.1 require of a valid message ("all included
    /// options have a length that is greater than zero"); listed options all
    /// fit the 8-bit length field and can be emitted (no `Unknown` option
    /// with a type this module models).
    pub fn check_lengths(&self) -> Result<()> {
        match self.source {
            OptionsSource::Bytes(mut rest) => {
                while !rest.is_empty() {
                    let (_, after) = split_option(rest)?;
                    rest = after;
                }
                Ok(())
            }
            OptionsSource::List(list) => list.iter().try_for_each(NdiscOption::check),
        }
    }

    /// Bytes these options emit.
    pub fn buffer_len(&self) -> usize {
        match self.source {
            OptionsSource::Bytes(bytes) => bytes.len(),
            OptionsSource::List(list) => list.iter().map(NdiscOption::buffer_len).sum(),
        }
    }

    /// Writes the options at the start of `buffer`; returns their length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        if buffer.len() < len {
            return Err(Error::Truncated);
        }
        match self.source {
            OptionsSource::Bytes(bytes) => buffer[..len].copy_from_slice(bytes),
            OptionsSource::List(list) => {
                let mut at = 0;
                for option in list {
                    at += option.emit(&mut buffer[at..])?;
                }
            }
        }
        Ok(len)
    }

    /// The first well-formed Source Link-Layer Address option.
    pub fn source_link_layer_addr(&self) -> Option<EthernetAddress> {
        self.iter().find_map(|option| match option {
            Ok(NdiscOption::SourceLinkLayerAddr(addr)) => Some(addr),
            _ => None,
        })
    }

    /// The first well-formed Target Link-Layer Address option.
    pub fn target_link_layer_addr(&self) -> Option<EthernetAddress> {
        self.iter().find_map(|option| match option {
            Ok(NdiscOption::TargetLinkLayerAddr(addr)) => Some(addr),
            _ => None,
        })
    }

    /// The first well-formed MTU option.
    pub fn mtu(&self) -> Option<u32> {
        self.iter().find_map(|option| match option {
            Ok(NdiscOption::Mtu(mtu)) => Some(mtu),
            _ => None,
        })
    }
}

impl Default for NdiscOptions<'_> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PartialEq for NdiscOptions<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for NdiscOptions<'_> {}

impl fmt::Debug for NdiscOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for NdiscOptions<'a> {
    type Item = Result<NdiscOption<'a>>;
    type IntoIter = NdiscOptionsIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Splits the first option off `bytes`, checking its length field.
fn split_option(bytes: &[u8]) -> Result<(&[u8], &[u8])> {
    let units = *bytes.get(field::OPT_LEN).ok_or(Error::Truncated)?;
    // RFC 4861 §4.6: "Nodes MUST silently discard an ND packet that
    // contains an option with length zero."
    if units == 0 {
        return Err(Error::Malformed("ND option with length zero"));
    }
    let len = usize::from(units) * OPTION_UNIT;
    if len > bytes.len() {
        return Err(Error::Truncated);
    }
    Ok(bytes.split_at(len))
}

/// Iterator over [`NdiscOptions`].
#[derive(Debug, Clone)]
pub struct NdiscOptionsIter<'a> {
    source: IterSource<'a>,
}

#[derive(Debug, Clone)]
enum IterSource<'a> {
    Bytes(&'a [u8]),
    List(core::slice::Iter<'a, NdiscOption<'a>>),
}

impl<'a> Iterator for NdiscOptionsIter<'a> {
    type Item = Result<NdiscOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.source {
            IterSource::List(list) => list.next().copied().map(Ok),
            IterSource::Bytes(rest) => {
                if rest.is_empty() {
                    return None;
                }
                match split_option(rest) {
                    Ok((option, after)) => {
                        *rest = after;
                        Some(NdiscOption::decode(option))
                    }
                    Err(error) => {
                        // The length field cannot be trusted: stop here.
                        *rest = &[];
                        Some(Err(error))
                    }
                }
            }
        }
    }
}

impl core::iter::FusedIterator for NdiscOptionsIter<'_> {}

/// The meaning of an ND message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdiscRepr<'a> {
    RouterSolicit {
        options: NdiscOptions<'a>,
    },
    RouterAdvert {
        /// Cur Hop Limit for outgoing packets; 0 is unspecified.
        hop_limit: u8,
        flags: RouterFlags,
        /// Seconds; 0 means "not a default router".
        router_lifetime: u16,
        /// Milliseconds; 0 is unspecified.
        reachable_time: u32,
        /// Milliseconds; 0 is unspecified.
        retrans_time: u32,
        options: NdiscOptions<'a>,
    },
    NeighborSolicit {
        target: Ipv6Addr,
        options: NdiscOptions<'a>,
    },
    NeighborAdvert {
        flags: NeighborFlags,
        target: Ipv6Addr,
        options: NdiscOptions<'a>,
    },
    Redirect {
        /// The better first hop: a router's link-local address, or the
        /// destination itself when it is on-link.
        target: Ipv6Addr,
        destination: Ipv6Addr,
        options: NdiscOptions<'a>,
    },
}

impl<'a> NdiscRepr<'a> {
    /// Validates an ND message (types 133..=137) whose checksum the caller
    /// has verified: code 0, minimum length, option lengths non-zero and
    /// in bounds, and the address rules of RFC 4861 §7.1 and §8.1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&'a T>) -> Result<Self> {
        packet.check_len()?;
        let msg_type = packet.msg_type();
        let fixed_len = match msg_type {
            Icmpv6Message::RouterSolicit
            | Icmpv6Message::RouterAdvert
            | Icmpv6Message::NeighborSolicit
            | Icmpv6Message::NeighborAdvert
            | Icmpv6Message::Redirect => msg_type.fixed_len(),
            _ => return Err(Error::Malformed("not a Neighbor Discovery message type")),
        };
        // RFC 4861 §6.1.1, §6.1.2, §7.1.1, §7.1.2, §8.1: "ICMP Code is 0".
        if packet.msg_code() != 0 {
            return Err(Error::Malformed("ND message code is not 0"));
        }
        let options = NdiscOptions::new(packet.tail_of_buffer(fixed_len));
        options.check_lengths()?;
        let target = packet.target_addr();
        match msg_type {
            Icmpv6Message::RouterSolicit => Ok(Self::RouterSolicit { options }),
            Icmpv6Message::RouterAdvert => Ok(Self::RouterAdvert {
                hop_limit: packet.cur_hop_limit(),
                flags: packet.router_flags(),
                router_lifetime: packet.router_lifetime(),
                reachable_time: packet.reachable_time(),
                retrans_time: packet.retrans_time(),
                options,
            }),
            Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert => {
                // §7.1.1, §7.1.2: "Target Address is not a multicast address."
                if target.is_multicast() {
                    return Err(Error::Malformed("ND target address is multicast"));
                }
                Ok(if msg_type == Icmpv6Message::NeighborSolicit {
                    Self::NeighborSolicit { target, options }
                } else {
                    Self::NeighborAdvert {
                        flags: packet.neighbor_flags(),
                        target,
                        options,
                    }
                })
            }
            _ => {
                let destination = packet.dest_addr();
                // §8.1: the destination is not multicast, and the target is
                // link-local (a router) or the destination itself (on-link).
                if destination.is_multicast() {
                    return Err(Error::Malformed("Redirect destination is multicast"));
                }
                if !target.is_unicast_link_local() && target != destination {
                    return Err(Error::Malformed(
                        "Redirect target neither link-local nor the destination",
                    ));
                }
                Ok(Self::Redirect {
                    target,
                    destination,
                    options,
                })
            }
        }
    }

    /// The message type this repr emits.
    pub fn msg_type(&self) -> Icmpv6Message {
        match self {
            Self::RouterSolicit { .. } => Icmpv6Message::RouterSolicit,
            Self::RouterAdvert { .. } => Icmpv6Message::RouterAdvert,
            Self::NeighborSolicit { .. } => Icmpv6Message::NeighborSolicit,
            Self::NeighborAdvert { .. } => Icmpv6Message::NeighborAdvert,
            Self::Redirect { .. } => Icmpv6Message::Redirect,
        }
    }

    /// The options of any variant.
    pub fn options(&self) -> NdiscOptions<'a> {
        match *self {
            Self::RouterSolicit { options }
            | Self::RouterAdvert { options, .. }
            | Self::NeighborSolicit { options, .. }
            | Self::NeighborAdvert { options, .. }
            | Self::Redirect { options, .. } => options,
        }
    }

    /// Bytes of the whole ICMPv6 message this repr emits.
    pub fn buffer_len(&self) -> usize {
        self.msg_type().fixed_len() + self.options().buffer_len()
    }

    /// Writes the message (checksum left zero) into the first
    /// [`buffer_len`](Self::buffer_len) bytes of `packet`. Use
    /// [`Icmpv6Repr::emit`](crate::icmpv6::Icmpv6Repr::emit) to also fill
    /// the checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) -> Result<()> {
        let fixed_len = self.msg_type().fixed_len();
        let len = self.buffer_len();
        if packet.len() < len {
            return Err(Error::Truncated);
        }
        self.options().check_lengths()?;
        packet.set_msg_type(self.msg_type());
        packet.set_msg_code(0);
        packet.set_checksum(0);
        match *self {
            Self::RouterSolicit { .. } => packet.clear_reserved(),
            Self::RouterAdvert {
                hop_limit,
                flags,
                router_lifetime,
                reachable_time,
                retrans_time,
                ..
            } => {
                packet.set_cur_hop_limit(hop_limit);
                packet.set_router_flags(flags);
                packet.set_router_lifetime(router_lifetime);
                packet.set_reachable_time(reachable_time);
                packet.set_retrans_time(retrans_time);
            }
            Self::NeighborSolicit { target, .. } => {
                packet.clear_reserved();
                packet.set_target_addr(target);
            }
            Self::NeighborAdvert { flags, target, .. } => {
                packet.set_neighbor_flags(flags);
                packet.set_target_addr(target);
            }
            Self::Redirect {
                target,
                destination,
                ..
            } => {
                packet.clear_reserved();
                packet.set_target_addr(target);
                packet.set_dest_addr(destination);
            }
        }
        self.options()
            .emit(&mut packet.bytes_mut()[fixed_len..len])
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icmpv6::Icmpv6Repr;
    use crate::ChecksumMode;

    const ROUTER: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const HOST: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
    const MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);

    fn emit(repr: NdiscRepr) -> Vec<u8> {
        let repr = Icmpv6Repr::Ndisc(repr);
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(
            &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
            &ROUTER,
            &HOST,
            ChecksumMode::Full,
        )
        .unwrap();
        buf
    }

    fn parse(buf: &[u8]) -> Result<NdiscRepr<'_>> {
        let packet = Icmpv6Packet::new_checked(buf)?;
        match Icmpv6Repr::parse(&packet, &ROUTER, &HOST, ChecksumMode::Full)? {
            Icmpv6Repr::Ndisc(repr) => Ok(repr),
            other => panic!("not ND: {other:?}"),
        }
    }

    /// Parses with the checksum skipped, for hand-edited buffers.
    fn parse_unchecked(buf: &[u8]) -> Result<NdiscRepr<'_>> {
        NdiscRepr::parse(&Icmpv6Packet::new_checked(buf)?)
    }

    #[test]
    fn neighbor_solicit_known_bytes() {
        let options = [NdiscOption::SourceLinkLayerAddr(MAC)];
        let target = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0x99);
        let buf = emit(NdiscRepr::NeighborSolicit {
            target,
            options: NdiscOptions::from_list(&options),
        });
        let mut expected = vec![135, 0, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&target.octets());
        expected.extend_from_slice(&[1, 1, 0x02, 0, 0, 0, 0, 0x01]);
        assert_eq!(&buf[..2], &expected[..2]);
        assert_eq!(&buf[4..], &expected[4..]);
        let repr = parse(&buf).unwrap();
        assert_eq!(repr.options().source_link_layer_addr(), Some(MAC));
        assert_eq!(
            repr,
            NdiscRepr::NeighborSolicit {
                target,
                options: NdiscOptions::from_list(&options)
            }
        );
    }

    #[test]
    fn router_advert_with_every_option_round_trips() {
        let redirected = [0x60u8, 0, 0, 0, 0, 0, 58, 64];
        let options = [
            NdiscOption::SourceLinkLayerAddr(MAC),
            NdiscOption::Mtu(1500),
            NdiscOption::PrefixInformation {
                prefix_len: 64,
                on_link: true,
                autonomous: true,
                valid_lifetime: 2_592_000,
                preferred_lifetime: 604_800,
                prefix: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            },
            NdiscOption::RedirectedHeader {
                header_and_data: &redirected,
            },
            NdiscOption::Unknown {
                kind: 25,
                data: &[1, 2, 3, 4, 5, 6],
            },
        ];
        let repr = NdiscRepr::RouterAdvert {
            hop_limit: 64,
            flags: RouterFlags {
                managed: true,
                other: false,
            },
            router_lifetime: 1800,
            reachable_time: 30_000,
            retrans_time: 1000,
            options: NdiscOptions::from_list(&options),
        };
        let buf = emit(repr);
        assert_eq!(buf.len(), 16 + 8 + 8 + 32 + 16 + 8);
        assert_eq!(buf[5], 0x80);
        let parsed = parse(&buf).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(parsed.options().mtu(), Some(1500));
        assert!(parsed.options().as_bytes().is_some());
    }

    #[test]
    fn neighbor_advert_flags_and_redirect_round_trip() {
        let na = NdiscRepr::NeighborAdvert {
            flags: NeighborFlags {
                router: true,
                solicited: true,
                override_: false,
            },
            target: HOST,
            options: NdiscOptions::EMPTY,
        };
        let buf = emit(na);
        assert_eq!(&buf[4..8], &[0xc0, 0, 0, 0]);
        assert_eq!(parse(&buf), Ok(na));

        let redirect = NdiscRepr::Redirect {
            target: ROUTER,
            destination: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 5),
            options: NdiscOptions::EMPTY,
        };
        assert_eq!(parse(&emit(redirect)), Ok(redirect));
        let rs = NdiscRepr::RouterSolicit {
            options: NdiscOptions::EMPTY,
        };
        assert_eq!(parse(&emit(rs)), Ok(rs));
    }

    #[test]
    fn zero_length_option_discards_the_message() {
        let options = [
            NdiscOption::SourceLinkLayerAddr(MAC),
            NdiscOption::Mtu(1280),
        ];
        let mut buf = emit(NdiscRepr::RouterSolicit {
            options: NdiscOptions::from_list(&options),
        });
        // The second option's length byte.
        buf[8 + 8 + 1] = 0;
        assert_eq!(
            parse_unchecked(&buf),
            Err(Error::Malformed("ND option with length zero"))
        );
        // The iterator yields the first option, then the error, then stops.
        let view = NdiscOptions::new(&buf[8..]);
        let items: Vec<_> = view.iter().collect();
        assert_eq!(
            items,
            [
                Ok(NdiscOption::SourceLinkLayerAddr(MAC)),
                Err(Error::Malformed("ND option with length zero"))
            ]
        );
    }

    #[test]
    fn option_running_past_the_end_is_truncated() {
        let options = [NdiscOption::Mtu(1280)];
        let mut buf = emit(NdiscRepr::RouterSolicit {
            options: NdiscOptions::from_list(&options),
        });
        buf[9] = 2;
        assert_eq!(parse_unchecked(&buf), Err(Error::Truncated));
        // A lone type byte with no length byte.
        buf.truncate(9);
        assert_eq!(parse_unchecked(&buf), Err(Error::Truncated));
    }

    #[test]
    fn wrong_sized_known_option_is_an_item_error_not_a_stop() {
        // A 16-byte MTU option followed by a valid source link-layer option.
        let mut options = vec![5, 2, 0, 0, 0, 0, 5, 0xdc, 0, 0, 0, 0, 0, 0, 0, 0];
        options.extend_from_slice(&[1, 1, 2, 0, 0, 0, 0, 1]);
        let view = NdiscOptions::new(&options);
        assert!(view.check_lengths().is_ok());
        let items: Vec<_> = view.iter().collect();
        assert!(matches!(items[0], Err(Error::Malformed(_))));
        assert_eq!(items[1], Ok(NdiscOption::SourceLinkLayerAddr(MAC)));
        assert_eq!(view.mtu(), None);
    }

    #[test]
    fn code_and_length_and_address_rules() {
        let ns = emit(NdiscRepr::NeighborSolicit {
            target: HOST,
            options: NdiscOptions::EMPTY,
        });
        let mut bad_code = ns.clone();
        bad_code[1] = 1;
        assert!(matches!(
            parse_unchecked(&bad_code),
            Err(Error::Malformed(_))
        ));
        assert_eq!(parse_unchecked(&ns[..23]), Err(Error::Truncated));
        let mut multicast = ns.clone();
        multicast[8] = 0xff;
        assert!(matches!(
            parse_unchecked(&multicast),
            Err(Error::Malformed(_))
        ));

        let global = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7);
        let redirect = emit(NdiscRepr::Redirect {
            target: global,
            destination: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 8),
            options: NdiscOptions::EMPTY,
        });
        assert!(matches!(
            parse_unchecked(&redirect),
            Err(Error::Malformed(_))
        ));
        // On-link redirect: target equals destination.
        let onlink = NdiscRepr::Redirect {
            target: global,
            destination: global,
            options: NdiscOptions::EMPTY,
        };
        assert_eq!(parse(&emit(onlink)), Ok(onlink));
    }

    #[test]
    fn reserved_bits_are_ignored_on_parse() {
        let mut buf = emit(NdiscRepr::NeighborSolicit {
            target: HOST,
            options: NdiscOptions::EMPTY,
        });
        buf[4..8].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert!(parse_unchecked(&buf).is_ok());
    }

    #[test]
    fn option_padding_and_limits() {
        let data = [7u8; 3];
        let option = NdiscOption::RedirectedHeader {
            header_and_data: &data,
        };
        assert_eq!(option.buffer_len(), 16);
        let mut buf = [0xffu8; 16];
        assert_eq!(option.emit(&mut buf), Ok(16));
        assert_eq!(buf, [4, 2, 0, 0, 0, 0, 0, 0, 7, 7, 7, 0, 0, 0, 0, 0]);
        let big = [0u8; MAX_OPTION_LEN];
        let too_long = NdiscOption::Unknown {
            kind: 200,
            data: &big,
        };
        assert!(matches!(
            too_long.emit(&mut [0; 4096]),
            Err(Error::Malformed(_))
        ));
        assert_eq!(NdiscOption::Mtu(1).emit(&mut [0; 7]), Err(Error::Truncated));
    }

    #[test]
    fn unknown_option_with_a_modeled_type_is_refused() {
        // Unknown { kind: 5, data: [0, 0] } would read back as Mtu(0).
        for kind in 1..=5 {
            let option = NdiscOption::Unknown {
                kind,
                data: &[0, 0],
            };
            let mut buf = [0xffu8; 8];
            assert_eq!(
                option.emit(&mut buf),
                Err(Error::Malformed("ND unknown option with a known type")),
                "kind {kind}"
            );
            assert_eq!(buf, [0xff; 8], "nothing written");
            let options = [option];
            let repr = Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit {
                options: NdiscOptions::from_list(&options),
            });
            let mut buf = vec![0xffu8; repr.buffer_len()];
            assert!(matches!(
                repr.emit(
                    &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
                    &ROUTER,
                    &HOST,
                    ChecksumMode::Full
                ),
                Err(Error::Malformed(_))
            ));
            assert!(buf.iter().all(|&b| b == 0xff), "nothing written");
        }
        for kind in [0, 6, 255] {
            let option = NdiscOption::Unknown {
                kind,
                data: &[0, 0],
            };
            let mut buf = [0u8; 8];
            assert_eq!(option.emit(&mut buf), Ok(8));
            let back: Vec<_> = NdiscOptions::new(&buf).iter().collect();
            assert_eq!(
                back,
                [Ok(NdiscOption::Unknown {
                    kind,
                    data: &[0, 0, 0, 0, 0, 0]
                })]
            );
        }
    }

    #[test]
    fn non_ethernet_link_layer_option_is_unsupported() {
        let options = [1u8, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0];
        let items: Vec<_> = NdiscOptions::new(&options).iter().collect();
        assert!(matches!(items[..], [Err(Error::Unsupported(_))]));
    }
}
