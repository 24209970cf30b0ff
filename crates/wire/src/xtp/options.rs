//! The `cmd` field of the common header: 24 option bits above an 8-bit
//! packet type (3-bit version, 5-bit format). Bit values are those of the
//! 24-bit options field, as Wireshark's `XTP_CMD_OPTIONS_*` masks give them.

use core::{fmt, ops};

/// The 24-bit options field of `cmd`. Unknown and reserved bits are kept,
/// so a parsed packet re-emits byte for byte.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct XtpOptions(u32);

impl XtpOptions {
    /// The checksum covers the header only, not the segment.
    pub const NOCHECK: Self = Self(0x40_0000);
    /// The EDGE bit (named so by Wireshark; its meaning is the
    /// protocol's business, not the wire format's).
    pub const EDGE: Self = Self(0x20_0000);
    /// No error control: no retransmission.
    pub const NOERR: Self = Self(0x10_0000);
    /// Multicast association.
    pub const MULTI: Self = Self(0x08_0000);
    /// Reservation mode: alloc is the reader's own buffer.
    pub const RES: Self = Self(0x04_0000);
    /// The `sort` field carries a priority.
    pub const SORT: Self = Self(0x02_0000);
    /// No flow control: alloc is ignored.
    pub const NOFLOW: Self = Self(0x01_0000);
    /// Aggressive error control: report a gap at once.
    pub const FASTNAK: Self = Self(0x00_8000);
    /// Status request: answer with a control packet.
    pub const SREQ: Self = Self(0x00_4000);
    /// Delivery status request: answer once the data is delivered to the
    /// application.
    pub const DREQ: Self = Self(0x00_2000);
    /// The sender will read no more (its incoming stream is closed).
    pub const RCLOSE: Self = Self(0x00_1000);
    /// The sender will write no more (its outgoing stream is closed).
    pub const WCLOSE: Self = Self(0x00_0800);
    /// This packet's data ends a message.
    pub const EOM: Self = Self(0x00_0400);
    /// The association is released.
    pub const END: Self = Self(0x00_0200);
    /// The data segment starts with an 8-byte beginning tag.
    pub const BTAG: Self = Self(0x00_0100);

    /// Every bit the field can hold.
    pub const MASK: u32 = 0x00ff_ffff;

    const NAMED: [(Self, &'static str); 15] = [
        (Self::NOCHECK, "NOCHECK"),
        (Self::EDGE, "EDGE"),
        (Self::NOERR, "NOERR"),
        (Self::MULTI, "MULTI"),
        (Self::RES, "RES"),
        (Self::SORT, "SORT"),
        (Self::NOFLOW, "NOFLOW"),
        (Self::FASTNAK, "FASTNAK"),
        (Self::SREQ, "SREQ"),
        (Self::DREQ, "DREQ"),
        (Self::RCLOSE, "RCLOSE"),
        (Self::WCLOSE, "WCLOSE"),
        (Self::EOM, "EOM"),
        (Self::END, "END"),
        (Self::BTAG, "BTAG"),
    ];

    pub const fn empty() -> Self {
        Self(0)
    }

    /// The options of `bits`, bits above the 24 of the field dropped.
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits & Self::MASK)
    }

    pub const fn bits(self) -> u32 {
        self.0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub const fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Self) {
        self.0 &= !other.0;
    }

    pub fn set(&mut self, other: Self, value: bool) {
        if value {
            self.insert(other);
        } else {
            self.remove(other);
        }
    }
}

impl ops::BitOr for XtpOptions {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}

impl ops::BitOrAssign for XtpOptions {
    fn bitor_assign(&mut self, other: Self) {
        self.insert(other);
    }
}

impl ops::Sub for XtpOptions {
    type Output = Self;
    fn sub(self, other: Self) -> Self {
        self.difference(other)
    }
}

impl fmt::Debug for XtpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = *self;
        let mut first = true;
        f.write_str("XtpOptions(")?;
        for (flag, name) in Self::NAMED {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                rest.remove(flag);
                first = false;
            }
        }
        if !rest.is_empty() {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{:#08x}", rest.0)?;
        }
        f.write_str(")")
    }
}

/// The packet type: the low five bits of the packet-type byte (Wireshark's
/// `pformat`). Unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Data,
    Cntl,
    First,
    /// Error control: CNTL plus spans of received data.
    Ecntl,
    /// Traffic control: CNTL plus key exchange and traffic specifier.
    Tcntl,
    /// Multicast join (obsolete in 4.0).
    Join,
    /// Multicast join control.
    Jcntl,
    Diag,
    Unknown(u8),
}

impl From<u8> for PacketType {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::Data,
            1 => Self::Cntl,
            2 => Self::First,
            3 => Self::Ecntl,
            5 => Self::Tcntl,
            6 => Self::Join,
            7 => Self::Jcntl,
            8 => Self::Diag,
            other => Self::Unknown(other),
        }
    }
}

impl From<PacketType> for u8 {
    fn from(value: PacketType) -> Self {
        match value {
            PacketType::Data => 0,
            PacketType::Cntl => 1,
            PacketType::First => 2,
            PacketType::Ecntl => 3,
            PacketType::Tcntl => 5,
            PacketType::Join => 6,
            PacketType::Jcntl => 7,
            PacketType::Diag => 8,
            PacketType::Unknown(other) => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_types_round_trip() {
        for v in 0..32u8 {
            assert_eq!(u8::from(PacketType::from(v)), v);
        }
    }

    #[test]
    fn options_keep_24_bits_and_print_names() {
        assert_eq!(XtpOptions::from_bits(0xff80_0001).bits(), 0x80_0001);
        let o = XtpOptions::NOCHECK | XtpOptions::BTAG | XtpOptions::from_bits(1);
        assert_eq!(format!("{o:?}"), "XtpOptions(NOCHECK | BTAG | 0x000001)");
        assert_eq!((o - XtpOptions::BTAG).bits(), 0x40_0001);
    }
}
