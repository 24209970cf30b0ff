//! The meaning of a whole XTP packet: the common header's fields and the
//! segment its packet type selects.

use crate::{ChecksumMode, Error, Result};

use super::control::{ControlRepr, Spans, CNTL_LEN};
use super::data::{data_len, emit_data, parse_data};
use super::diag::{emit_diag, parse_diag, DiagCode, DiagValue, DIAG_FIXED_LEN};
use super::first::{parse_first, AddressRepr, TrafficRepr};
use super::header::{XtpPacket, HEADER_LEN};
use super::options::{PacketType, XtpOptions};
use super::VERSION_4;

/// The segment of a packet, by packet type. Data and message bytes are
/// borrowed (from the packet when parsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// User data from sequence number `seq`; `btag` is the beginning tag
    /// (BTAG option).
    Data {
        btag: Option<u64>,
        data: &'a [u8],
    },
    Cntl(ControlRepr),
    /// Opens an association: whom it calls and what traffic it asks for,
    /// and data from `seq` right away (implicit setup).
    First {
        address: AddressRepr,
        traffic: TrafficRepr,
        btag: Option<u64>,
        data: &'a [u8],
    },
    Ecntl {
        control: ControlRepr,
        spans: Spans<'a>,
    },
    /// Key exchange (`xkey`) and traffic negotiation.
    Tcntl {
        control: ControlRepr,
        xkey: u64,
        traffic: TrafficRepr,
    },
    /// Multicast join control: TCNTL's fields and the group's address.
    Jcntl {
        control: ControlRepr,
        xkey: u64,
        address: AddressRepr,
        traffic: TrafficRepr,
    },
    Diag {
        code: DiagCode,
        value: DiagValue,
        message: &'a [u8],
    },
}

impl Segment<'_> {
    pub const fn packet_type(&self) -> PacketType {
        match self {
            Self::Data { .. } => PacketType::Data,
            Self::Cntl(_) => PacketType::Cntl,
            Self::First { .. } => PacketType::First,
            Self::Ecntl { .. } => PacketType::Ecntl,
            Self::Tcntl { .. } => PacketType::Tcntl,
            Self::Jcntl { .. } => PacketType::Jcntl,
            Self::Diag { .. } => PacketType::Diag,
        }
    }

    /// The beginning tag, for the packet types that carry data.
    pub const fn btag(&self) -> Option<u64> {
        match *self {
            Self::Data { btag, .. } | Self::First { btag, .. } => btag,
            _ => None,
        }
    }

    /// Length of the segment: the header's `dlen`.
    pub fn len(&self) -> usize {
        match self {
            Self::Data { btag, data } => data_len(*btag, data),
            Self::Cntl(_) => CNTL_LEN,
            Self::First {
                address,
                traffic,
                btag,
                data,
            } => address.buffer_len() + traffic.buffer_len() + data_len(*btag, data),
            Self::Ecntl { spans, .. } => ControlRepr::ecntl_len(spans),
            Self::Tcntl { traffic, .. } => ControlRepr::tcntl_len(traffic),
            Self::Jcntl {
                address, traffic, ..
            } => ControlRepr::jcntl_len(address, traffic),
            Self::Diag { message, .. } => DIAG_FIXED_LEN + message.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn emit(&self, out: &mut [u8]) -> Result<()> {
        match self {
            Self::Data { btag, data } => emit_data(*btag, data, out),
            Self::Cntl(control) => control.emit_cntl(out),
            Self::First {
                address,
                traffic,
                btag,
                data,
            } => {
                let (head, rest) = out.split_at_mut(address.buffer_len());
                address.emit(head)?;
                let (head, rest) = rest.split_at_mut(traffic.buffer_len());
                traffic.emit(head)?;
                emit_data(*btag, data, rest)
            }
            Self::Ecntl { control, spans } => control.emit_ecntl(spans, out),
            Self::Tcntl {
                control,
                xkey,
                traffic,
            } => control.emit_tcntl(*xkey, traffic, out),
            Self::Jcntl {
                control,
                xkey,
                address,
                traffic,
            } => control.emit_jcntl(*xkey, address, traffic, out),
            Self::Diag {
                code,
                value,
                message,
            } => emit_diag(*code, *value, message, out),
        }
    }
}

/// The meaning of an XTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XtpRepr<'a> {
    pub key: u64,
    /// Every option bit except BTAG, which the segment's tag stands for
    /// (a BTAG bit here is ignored by [`emit`](Self::emit)).
    pub options: XtpOptions,
    pub sort: u16,
    pub sync: u32,
    pub seq: u64,
    pub segment: Segment<'a>,
}

impl<'a> XtpRepr<'a> {
    /// Validates a packet: lengths, version 4.0, the checksum under `mode`,
    /// then the segment of its type. BTAG on a packet without data, and the
    /// obsolete JOIN packet, are refused.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &XtpPacket<&'a T>,
        mode: ChecksumMode,
    ) -> Result<Self> {
        packet.check_len()?;
        packet.check_version()?;
        if mode == ChecksumMode::Full && !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        // Borrow for 'a, the lifetime of the buffer, not of the view.
        let buffer: &'a [u8] = <T as AsRef<[u8]>>::as_ref(packet.buffer);
        let segment = &buffer[HEADER_LEN..HEADER_LEN + packet.dlen() as usize];
        let options = packet.options();
        let tagged = options.contains(XtpOptions::BTAG);
        let packet_type = packet.packet_type();
        if tagged && !matches!(packet_type, PacketType::Data | PacketType::First) {
            return Err(Error::Malformed("XTP BTAG on a packet without data"));
        }
        let segment = match packet_type {
            PacketType::Data => {
                let (btag, data) = parse_data(segment, tagged)?;
                Segment::Data { btag, data }
            }
            PacketType::Cntl => Segment::Cntl(ControlRepr::parse_cntl(segment)?),
            PacketType::First => {
                let (address, traffic, rest) = parse_first(segment)?;
                let (btag, data) = parse_data(rest, tagged)?;
                Segment::First {
                    address,
                    traffic,
                    btag,
                    data,
                }
            }
            PacketType::Ecntl => {
                let (control, spans) = ControlRepr::parse_ecntl(segment)?;
                Segment::Ecntl { control, spans }
            }
            PacketType::Tcntl => {
                let (control, xkey, traffic) = ControlRepr::parse_tcntl(segment)?;
                Segment::Tcntl {
                    control,
                    xkey,
                    traffic,
                }
            }
            PacketType::Diag => {
                let (code, value, message) = parse_diag(segment)?;
                Segment::Diag {
                    code,
                    value,
                    message,
                }
            }
            PacketType::Jcntl => {
                let (control, xkey, address, traffic) = ControlRepr::parse_jcntl(segment)?;
                Segment::Jcntl {
                    control,
                    xkey,
                    address,
                    traffic,
                }
            }
            PacketType::Join => return Err(Error::Unsupported("XTP JOIN packet (obsolete)")),
            PacketType::Unknown(_) => return Err(Error::Malformed("unknown XTP packet type")),
        };
        Ok(Self {
            key: packet.key(),
            options: options - XtpOptions::BTAG,
            sort: packet.sort(),
            sync: packet.sync(),
            seq: packet.seq(),
            segment,
        })
    }

    /// Length of the segment (`dlen`).
    pub fn segment_len(&self) -> usize {
        self.segment.len()
    }

    /// Bytes of the whole packet.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.segment_len()
    }

    /// Writes the packet into the first [`buffer_len`](Self::buffer_len)
    /// bytes of `packet`'s buffer, then fills the checksum under `mode`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut XtpPacket<T>,
        mode: ChecksumMode,
    ) -> Result<()> {
        let dlen = u32::try_from(self.segment_len())
            .map_err(|_| Error::Malformed("XTP segment longer than 2^32 bytes"))?;
        if packet.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        let mut options = self.options - XtpOptions::BTAG;
        options.set(XtpOptions::BTAG, self.segment.btag().is_some());
        packet.set_key(self.key);
        packet.set_ptype(VERSION_4, self.segment.packet_type());
        packet.set_options(options);
        packet.set_dlen(dlen);
        packet.set_check(0);
        packet.set_sort(self.sort);
        packet.set_sync(self.sync);
        packet.set_seq(self.seq);
        self.segment.emit(packet.segment_mut())?;
        if mode == ChecksumMode::Full {
            packet.fill_checksum();
        }
        Ok(())
    }
}
