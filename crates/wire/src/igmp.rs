//! IGMP version 2 (RFC 2236): the messages IPv4 hosts and multicast
//! routers exchange about group membership on a link.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Type     | Max Resp Time |           Checksum            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         Group Address                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! * The checksum is the 16-bit one's complement of the one's complement
//!   sum of the whole IGMP message (the IP payload, RFC 2236 §2.3), with
//!   no pseudo-header.
//! * A message may be longer than 8 octets (an IGMPv3 Query is 12 or
//!   more); an IGMPv2 implementation reads the first 8 and ignores the
//!   rest, which the checksum still covers (§2.5; RFC 3376 §7.2.1: a v2
//!   host treats a v3 Query as a v2 one).
//! * Max Resp Time is in tenths of a second and means something only in a
//!   Query; a Query whose Max Resp Time is zero is IGMPv1's (§4: the host
//!   then takes 10 s). Other messages send zero and receivers ignore it.
//! * An IGMPv1 Membership Report (type 0x12, RFC 1112 appendix I) is
//!   parsed and can be emitted, for a v2 router hearing v1 hosts (§4);
//!   IGMPv3 Reports (0x22, RFC 3376) are `Unsupported`.

use core::net::Ipv4Addr;

use crate::bytes::{be_u16, put_be_u16};
use crate::checksum;
use crate::ip::ChecksumMode;
use crate::{Error, Result};

mod field {
    pub const TYPE: usize = 0;
    pub const MAX_RESP: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const GROUP: core::ops::Range<usize> = 4..8;
}

/// Length of an IGMPv2 message.
pub const HEADER_LEN: usize = 8;

/// The all-systems group General Queries go to (RFC 2236 §2.1).
pub const ALL_SYSTEMS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);
/// The all-routers group Leave Group messages go to (RFC 2236 §3).
pub const ALL_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 2);

/// Message types (RFC 2236 §2.1).
pub mod message {
    pub const MEMBERSHIP_QUERY: u8 = 0x11;
    pub const V1_MEMBERSHIP_REPORT: u8 = 0x12;
    pub const V2_MEMBERSHIP_REPORT: u8 = 0x16;
    pub const LEAVE_GROUP: u8 = 0x17;
    /// IGMPv3 (RFC 3376 §4.2), not modelled.
    pub const V3_MEMBERSHIP_REPORT: u8 = 0x22;
}

/// A view of an IGMP message in a byte buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IgmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IgmpPacket<T> {
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

    /// The 8 octets of an IGMPv2 message are there.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Max Resp Time in tenths of a second (a Query's; zero elsewhere).
    pub fn max_resp_time(&self) -> u8 {
        self.buffer.as_ref()[field::MAX_RESP]
    }

    pub fn checksum(&self) -> u16 {
        be_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    pub fn group_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::GROUP];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Whether the checksum over the whole message verifies (§2.3).
    pub fn verify_checksum(&self) -> bool {
        checksum::verifies(0, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IgmpPacket<T> {
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    pub fn set_max_resp_time(&mut self, value: u8) {
        self.buffer.as_mut()[field::MAX_RESP] = value;
    }

    pub fn set_checksum(&mut self, value: u16) {
        put_be_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    pub fn set_group_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::GROUP].copy_from_slice(&value.octets());
    }

    /// Computes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        checksum::fill(self.buffer.as_mut(), field::CHECKSUM);
    }
}

/// The version of a Membership Report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IgmpVersion {
    /// RFC 1112's Report (type 0x12).
    V1,
    /// RFC 2236's (type 0x16).
    V2,
}

/// The meaning of an IGMPv2 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IgmpRepr {
    /// A General Query (`group` unspecified, sent to 224.0.0.1) or a
    /// Group-Specific Query (to the group). `max_resp_tenths` zero: an
    /// IGMPv1 Query (§4).
    MembershipQuery {
        max_resp_tenths: u8,
        group: Ipv4Addr,
    },
    /// A host's report that it is a member of `group`, sent to the group.
    MembershipReport {
        version: IgmpVersion,
        group: Ipv4Addr,
    },
    /// A host leaving `group`, sent to 224.0.0.2 (§3).
    LeaveGroup { group: Ipv4Addr },
}

impl IgmpRepr {
    /// Reads a message; a report or leave must name a multicast group and
    /// a query the unspecified address or one.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &IgmpPacket<&T>,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        if mode == ChecksumMode::Full && !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        let group = packet.group_addr();
        let repr = match packet.msg_type() {
            message::MEMBERSHIP_QUERY => {
                if !group.is_unspecified() && !group.is_multicast() {
                    return Err(Error::Malformed("IGMP query for a non-multicast group"));
                }
                IgmpRepr::MembershipQuery {
                    max_resp_tenths: packet.max_resp_time(),
                    group,
                }
            }
            message::V1_MEMBERSHIP_REPORT | message::V2_MEMBERSHIP_REPORT => {
                let version = if packet.msg_type() == message::V1_MEMBERSHIP_REPORT {
                    IgmpVersion::V1
                } else {
                    IgmpVersion::V2
                };
                IgmpRepr::MembershipReport { version, group }
            }
            message::LEAVE_GROUP => IgmpRepr::LeaveGroup { group },
            message::V3_MEMBERSHIP_REPORT => return Err(Error::Unsupported("IGMPv3 report")),
            _ => return Err(Error::Unsupported("IGMP message type")),
        };
        if let IgmpRepr::MembershipReport { group, .. } | IgmpRepr::LeaveGroup { group } = repr {
            if !group.is_multicast() {
                return Err(Error::Malformed(
                    "IGMP report or leave for a non-multicast group",
                ));
            }
        }
        Ok(repr)
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// The group the message is about (unspecified for a General Query).
    pub const fn group(&self) -> Ipv4Addr {
        match *self {
            IgmpRepr::MembershipQuery { group, .. }
            | IgmpRepr::MembershipReport { group, .. }
            | IgmpRepr::LeaveGroup { group } => group,
        }
    }

    /// Where the message goes (RFC 2236 §2.1, §3): a General Query to
    /// 224.0.0.1, a Group-Specific Query and a Report to the group, a
    /// Leave to 224.0.0.2.
    pub fn destination(&self) -> Ipv4Addr {
        match *self {
            IgmpRepr::MembershipQuery { group, .. } if group.is_unspecified() => ALL_SYSTEMS,
            IgmpRepr::LeaveGroup { .. } => ALL_ROUTERS,
            _ => self.group(),
        }
    }

    /// Writes the message into the first [`HEADER_LEN`] bytes of `packet`
    /// and, under `ChecksumMode::Full`, its checksum over them.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut IgmpPacket<T>,
        mode: ChecksumMode,
    ) -> Result<()> {
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let (kind, max_resp) = match *self {
            IgmpRepr::MembershipQuery {
                max_resp_tenths, ..
            } => (message::MEMBERSHIP_QUERY, max_resp_tenths),
            IgmpRepr::MembershipReport {
                version: IgmpVersion::V1,
                ..
            } => (message::V1_MEMBERSHIP_REPORT, 0),
            IgmpRepr::MembershipReport {
                version: IgmpVersion::V2,
                ..
            } => (message::V2_MEMBERSHIP_REPORT, 0),
            IgmpRepr::LeaveGroup { .. } => (message::LEAVE_GROUP, 0),
        };
        let mut header = IgmpPacket::new_unchecked(&mut packet.buffer.as_mut()[..HEADER_LEN]);
        header.set_msg_type(kind);
        header.set_max_resp_time(max_resp);
        header.set_group_addr(self.group());
        header.set_checksum(0);
        if mode == ChecksumMode::Full {
            header.fill_checksum();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A General Query with Max Resp Time 10 s, as RFC 2236 §8.3/§8.4's
    /// defaults send it, its checksum worked by hand: 0x1164 + 0 + 0 =
    /// 0x1164, complemented 0xee9b.
    const GENERAL_QUERY: [u8; 8] = [0x11, 0x64, 0xee, 0x9b, 0, 0, 0, 0];

    #[test]
    fn a_general_query_reads_and_writes_as_the_rfc_lays_it_out() {
        let packet = IgmpPacket::new_checked(&GENERAL_QUERY[..]).unwrap();
        let repr = IgmpRepr::parse(&packet, ChecksumMode::Full).unwrap();
        assert_eq!(
            repr,
            IgmpRepr::MembershipQuery {
                max_resp_tenths: 100,
                group: Ipv4Addr::UNSPECIFIED
            }
        );
        assert_eq!(repr.destination(), ALL_SYSTEMS);
        let mut out = [0xffu8; 8];
        repr.emit(
            &mut IgmpPacket::new_unchecked(&mut out[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        assert_eq!(out, GENERAL_QUERY);
    }

    #[test]
    fn reports_and_leaves_round_trip_and_go_where_section_3_says() {
        let group = Ipv4Addr::new(239, 192, 0, 11);
        for repr in [
            IgmpRepr::MembershipReport {
                version: IgmpVersion::V2,
                group,
            },
            IgmpRepr::MembershipReport {
                version: IgmpVersion::V1,
                group,
            },
            IgmpRepr::LeaveGroup { group },
            IgmpRepr::MembershipQuery {
                max_resp_tenths: 10,
                group,
            },
        ] {
            let mut out = [0u8; 8];
            repr.emit(
                &mut IgmpPacket::new_unchecked(&mut out[..]),
                ChecksumMode::Full,
            )
            .unwrap();
            assert!(checksum::verifies(0, &out));
            let parsed = IgmpRepr::parse(
                &IgmpPacket::new_checked(&out[..]).unwrap(),
                ChecksumMode::Full,
            );
            assert_eq!(parsed, Ok(repr));
        }
        let leave = IgmpRepr::LeaveGroup { group };
        assert_eq!(leave.destination(), ALL_ROUTERS);
        let report = IgmpRepr::MembershipReport {
            version: IgmpVersion::V2,
            group,
        };
        assert_eq!(report.destination(), group);
    }

    #[test]
    fn bad_input_is_refused_not_panicked_on() {
        assert_eq!(
            IgmpPacket::new_checked(&GENERAL_QUERY[..7]).err(),
            Some(Error::Truncated)
        );
        let mut bad = GENERAL_QUERY;
        bad[3] ^= 1;
        let packet = IgmpPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(
            IgmpRepr::parse(&packet, ChecksumMode::Full),
            Err(Error::Checksum)
        );
        // A report for a unicast address.
        let mut report = [0u8; 8];
        IgmpRepr::MembershipReport {
            version: IgmpVersion::V2,
            group: Ipv4Addr::new(239, 1, 1, 1),
        }
        .emit(
            &mut IgmpPacket::new_unchecked(&mut report[..]),
            ChecksumMode::Full,
        )
        .unwrap();
        report[4] = 10;
        let packet = IgmpPacket::new_checked(&report[..]).unwrap();
        assert!(matches!(
            IgmpRepr::parse(&packet, ChecksumMode::Skip),
            Err(Error::Malformed(_))
        ));
        let v3 = [0x22u8, 0, 0, 0, 0, 0, 0, 0];
        let packet = IgmpPacket::new_checked(&v3[..]).unwrap();
        assert!(matches!(
            IgmpRepr::parse(&packet, ChecksumMode::Skip),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_longer_message_is_read_as_its_first_eight_octets() {
        // An IGMPv3 Query (RFC 3376 §4.1): 12 octets, the checksum over
        // all of them; a v2 host answers it as a v2 Query (§7.2.1).
        let mut v3_query = [0x11u8, 0x64, 0, 0, 0, 0, 0, 0, 0x02, 0x7d, 0, 0];
        let sum = checksum::checksum(&v3_query);
        v3_query[2..4].copy_from_slice(&sum.to_be_bytes());
        let packet = IgmpPacket::new_checked(&v3_query[..]).unwrap();
        assert_eq!(
            IgmpRepr::parse(&packet, ChecksumMode::Full),
            Ok(IgmpRepr::MembershipQuery {
                max_resp_tenths: 100,
                group: Ipv4Addr::UNSPECIFIED
            })
        );
    }
}
