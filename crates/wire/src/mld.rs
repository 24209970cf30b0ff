//! Multicast Listener Discovery: MLDv1 (RFC 2710) and MLDv2 (RFC 3810 §5),
//! carried in ICMPv6 types 130 (Query), 131 (v1 Report), 132 (v1 Done) and
//! 143 (v2 Report).
//!
//! A Query is MLDv1 when the message is exactly 24 bytes long and MLDv2 when
//! it is 28 or more; any other length is refused (RFC 3810 §8.1). Every count
//! (sources, records, auxiliary data) is checked against the buffer.

use core::fmt;
use core::net::Ipv6Addr;

use crate::bytes::{be_u16, ipv6_at, put_be_u16, put_ipv6};
use crate::icmpv6::{Icmpv6Message, Icmpv6Packet};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    /// Query: Maximum Response Delay (v1) or Code (v2); unused in reports.
    pub const MAX_RESP_CODE: Range<usize> = 4..6;
    /// MLDv2 Report: Nr of Mcast Address Records.
    pub const NUM_RECORDS: Range<usize> = 6..8;
    pub const MCAST_ADDR: Range<usize> = 8..24;
    /// MLDv2 Query: Resv (4 bits), S (1 bit), QRV (3 bits).
    pub const QUERY_FLAGS: usize = 24;
    pub const QQIC: usize = 25;
    pub const NUM_SOURCES: Range<usize> = 26..28;

    // Inside a Multicast Address Record (RFC 3810 §5.2.4..§5.2.10).
    pub const RECORD_TYPE: usize = 0;
    pub const RECORD_AUX_DATA_LEN: usize = 1;
    pub const RECORD_NUM_SOURCES: Range<usize> = 2..4;
    pub const RECORD_MCAST_ADDR: Range<usize> = 4..20;
}

/// Length of every MLDv1 message and of an MLDv1 Query exactly.
pub const V1_LEN: usize = 24;
/// Length of an MLDv2 Query before its source list.
pub const QUERY_V2_HEADER_LEN: usize = 28;
/// Length of an MLDv2 Report before its records.
pub const REPORT_V2_HEADER_LEN: usize = 8;
/// Length of a Multicast Address Record before its sources.
pub const RECORD_HEADER_LEN: usize = 20;
/// Length of one address in a source list.
const ADDR_LEN: usize = 16;
/// Auxiliary data lengths count 32-bit words (RFC 3810 §5.2.6).
const AUX_DATA_UNIT: usize = 4;

const QUERY_S_FLAG: u8 = 0x08;
const QUERY_QRV_MASK: u8 = 0x07;

/// The delay in milliseconds a Maximum Response Code stands for
/// (RFC 3810 §5.1.3): small values are literal, values with the top bit
/// set are a floating-point number `(mant | 0x1000) << (exp + 3)`.
pub fn max_response_delay_ms(max_resp_code: u16) -> u32 {
    if max_resp_code < 0x8000 {
        u32::from(max_resp_code)
    } else {
        let exp = u32::from((max_resp_code >> 12) & 0x7);
        let mant = u32::from(max_resp_code & 0x0fff);
        (mant | 0x1000) << (exp + 3)
    }
}

/// The Querier's Query Interval in seconds that a QQIC stands for
/// (RFC 3810 §5.1.9): literal below 128, else `(mant | 0x10) << (exp + 3)`.
pub fn query_interval_secs(qqic: u8) -> u32 {
    if qqic < 0x80 {
        u32::from(qqic)
    } else {
        let exp = u32::from((qqic >> 4) & 0x7);
        let mant = u32::from(qqic & 0x0f);
        (mant | 0x10) << (exp + 3)
    }
}

/// Multicast Address Record types (RFC 3810 §5.2.12); unknown values are
/// kept so a router can ignore just that record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MldRecordType {
    /// 1: MODE_IS_INCLUDE (current state).
    ModeIsInclude,
    /// 2: MODE_IS_EXCLUDE (current state).
    ModeIsExclude,
    /// 3: CHANGE_TO_INCLUDE_MODE (filter mode change).
    ChangeToInclude,
    /// 4: CHANGE_TO_EXCLUDE_MODE (filter mode change).
    ChangeToExclude,
    /// 5: ALLOW_NEW_SOURCES (source list change).
    AllowNewSources,
    /// 6: BLOCK_OLD_SOURCES (source list change).
    BlockOldSources,
    Unknown(u8),
}

impl From<u8> for MldRecordType {
    fn from(value: u8) -> Self {
        match value {
            1 => Self::ModeIsInclude,
            2 => Self::ModeIsExclude,
            3 => Self::ChangeToInclude,
            4 => Self::ChangeToExclude,
            5 => Self::AllowNewSources,
            6 => Self::BlockOldSources,
            other => Self::Unknown(other),
        }
    }
}

impl From<MldRecordType> for u8 {
    fn from(value: MldRecordType) -> Self {
        match value {
            MldRecordType::ModeIsInclude => 1,
            MldRecordType::ModeIsExclude => 2,
            MldRecordType::ChangeToInclude => 3,
            MldRecordType::ChangeToExclude => 4,
            MldRecordType::AllowNewSources => 5,
            MldRecordType::BlockOldSources => 6,
            MldRecordType::Unknown(other) => other,
        }
    }
}

/// A list of source addresses: the raw bytes of a parsed message (a whole
/// number of addresses) or addresses to emit. Equality compares addresses.
#[derive(Clone, Copy)]
pub struct MldSources<'a> {
    source: SourcesSource<'a>,
}

#[derive(Clone, Copy)]
enum SourcesSource<'a> {
    Bytes(&'a [u8]),
    List(&'a [Ipv6Addr]),
}

impl<'a> MldSources<'a> {
    /// No sources.
    pub const EMPTY: Self = Self::from_list(&[]);

    /// A view over concatenated 16-byte addresses.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(ADDR_LEN) {
            return Err(Error::Malformed(
                "MLD source list not a whole number of addresses",
            ));
        }
        Ok(Self {
            source: SourcesSource::Bytes(bytes),
        })
    }

    /// Addresses to emit.
    pub const fn from_list(list: &'a [Ipv6Addr]) -> Self {
        Self {
            source: SourcesSource::List(list),
        }
    }

    /// Number of addresses.
    pub fn len(&self) -> usize {
        match self.source {
            SourcesSource::Bytes(bytes) => bytes.len() / ADDR_LEN,
            SourcesSource::List(list) => list.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, index: usize) -> Option<Ipv6Addr> {
        match self.source {
            SourcesSource::Bytes(bytes) => {
                let start = index.checked_mul(ADDR_LEN)?;
                bytes
                    .get(start..start.checked_add(ADDR_LEN)?)
                    .map(|addr| ipv6_at(addr, 0))
            }
            SourcesSource::List(list) => list.get(index).copied(),
        }
    }

    pub fn iter(&self) -> MldSourcesIter<'a> {
        MldSourcesIter {
            source: match self.source {
                SourcesSource::Bytes(bytes) => {
                    SourcesIterSource::Bytes(bytes.chunks_exact(ADDR_LEN))
                }
                SourcesSource::List(list) => SourcesIterSource::List(list.iter()),
            },
        }
    }

    /// Bytes these sources emit.
    pub fn buffer_len(&self) -> usize {
        self.len() * ADDR_LEN
    }

    /// The count as the 16-bit field carries it.
    fn count_field(&self) -> Result<u16> {
        u16::try_from(self.len()).map_err(|_| Error::Malformed("more than 65535 MLD sources"))
    }

    /// Writes the addresses at the start of `buffer`; returns their length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        match self.source {
            SourcesSource::Bytes(bytes) => out.copy_from_slice(bytes),
            SourcesSource::List(list) => {
                for (chunk, &addr) in out.chunks_exact_mut(ADDR_LEN).zip(list) {
                    put_ipv6(chunk, 0, addr);
                }
            }
        }
        Ok(len)
    }
}

impl Default for MldSources<'_> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PartialEq for MldSources<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for MldSources<'_> {}

impl fmt::Debug for MldSources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for MldSources<'a> {
    type Item = Ipv6Addr;
    type IntoIter = MldSourcesIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over [`MldSources`].
#[derive(Debug, Clone)]
pub struct MldSourcesIter<'a> {
    source: SourcesIterSource<'a>,
}

#[derive(Debug, Clone)]
enum SourcesIterSource<'a> {
    Bytes(core::slice::ChunksExact<'a, u8>),
    List(core::slice::Iter<'a, Ipv6Addr>),
}

impl Iterator for MldSourcesIter<'_> {
    type Item = Ipv6Addr;

    fn next(&mut self) -> Option<Ipv6Addr> {
        match &mut self.source {
            SourcesIterSource::Bytes(chunks) => chunks.next().map(|addr| ipv6_at(addr, 0)),
            SourcesIterSource::List(list) => list.next().copied(),
        }
    }
}

/// One Multicast Address Record of an MLDv2 Report (RFC 3810 §5.2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldAddressRecord<'a> {
    pub record_type: MldRecordType,
    pub group: Ipv6Addr,
    pub sources: MldSources<'a>,
    /// MLDv2 defines none: senders MUST send none and receivers MUST ignore
    /// it (RFC 3810 §5.2.10). Kept so a parsed record re-emits unchanged;
    /// its length must be a multiple of 4 bytes.
    pub aux_data: &'a [u8],
}

impl<'a> MldAddressRecord<'a> {
    /// A record without auxiliary data, as MLDv2 senders build them.
    pub const fn new(record_type: MldRecordType, group: Ipv6Addr, sources: &'a [Ipv6Addr]) -> Self {
        Self {
            record_type,
            group,
            sources: MldSources::from_list(sources),
            aux_data: &[],
        }
    }

    /// Reads the record at the start of `bytes`, trusting none of its
    /// counts; returns it and its length.
    fn parse_prefix(bytes: &'a [u8]) -> Result<(Self, usize)> {
        let header = bytes.get(..RECORD_HEADER_LEN).ok_or(Error::Truncated)?;
        let aux_len = usize::from(header[field::RECORD_AUX_DATA_LEN]) * AUX_DATA_UNIT;
        let num_sources = usize::from(be_u16(header, field::RECORD_NUM_SOURCES.start));
        // At most 20 + 65535 * 16 + 255 * 4 bytes: no overflow.
        let sources_end = RECORD_HEADER_LEN + num_sources * ADDR_LEN;
        let end = sources_end + aux_len;
        if end > bytes.len() {
            return Err(Error::Truncated);
        }
        let record = Self {
            record_type: header[field::RECORD_TYPE].into(),
            group: ipv6_at(header, field::RECORD_MCAST_ADDR.start),
            sources: MldSources::from_bytes(&bytes[RECORD_HEADER_LEN..sources_end])?,
            aux_data: &bytes[sources_end..end],
        };
        Ok((record, end))
    }

    /// Bytes this record emits.
    pub fn buffer_len(&self) -> usize {
        RECORD_HEADER_LEN + self.sources.buffer_len() + self.aux_data.len()
    }

    /// Writes the record at the start of `buffer`; returns its length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let num_sources = self.sources.count_field()?;
        if !self.aux_data.len().is_multiple_of(AUX_DATA_UNIT) {
            return Err(Error::Malformed("MLD aux data not a whole number of words"));
        }
        let aux_words = u8::try_from(self.aux_data.len() / AUX_DATA_UNIT)
            .map_err(|_| Error::Malformed("MLD aux data longer than 1020 bytes"))?;
        let len = self.buffer_len();
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        out[field::RECORD_TYPE] = self.record_type.into();
        out[field::RECORD_AUX_DATA_LEN] = aux_words;
        put_be_u16(out, field::RECORD_NUM_SOURCES.start, num_sources);
        put_ipv6(out, field::RECORD_MCAST_ADDR.start, self.group);
        let sources_end = RECORD_HEADER_LEN + self.sources.emit(&mut out[RECORD_HEADER_LEN..])?;
        out[sources_end..].copy_from_slice(self.aux_data);
        Ok(len)
    }
}

/// The records of an MLDv2 Report: the validated bytes of a parsed message
/// or a list of records to emit. Equality compares the records.
#[derive(Clone, Copy)]
pub struct MldRecords<'a> {
    source: RecordsSource<'a>,
}

#[derive(Clone, Copy)]
enum RecordsSource<'a> {
    /// Bytes holding exactly `count` records, checked by `parse`.
    Bytes {
        bytes: &'a [u8],
        count: u16,
    },
    List(&'a [MldAddressRecord<'a>]),
}

impl<'a> MldRecords<'a> {
    /// No records.
    pub const EMPTY: Self = Self::from_list(&[]);

    /// Checks that `count` records, with all their sources and auxiliary
    /// data, lie within `bytes`; the view covers just those records (any
    /// bytes after them are ignored, RFC 3810 §5.2.11).
    pub fn parse(bytes: &'a [u8], count: u16) -> Result<Self> {
        let mut end = 0;
        for _ in 0..count {
            let rest = bytes.get(end..).ok_or(Error::Truncated)?;
            let (_, len) = MldAddressRecord::parse_prefix(rest)?;
            end += len;
        }
        Ok(Self {
            source: RecordsSource::Bytes {
                bytes: &bytes[..end],
                count,
            },
        })
    }

    /// Records to emit.
    pub const fn from_list(list: &'a [MldAddressRecord<'a>]) -> Self {
        Self {
            source: RecordsSource::List(list),
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        match self.source {
            RecordsSource::Bytes { count, .. } => usize::from(count),
            RecordsSource::List(list) => list.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> MldRecordsIter<'a> {
        MldRecordsIter {
            source: match self.source {
                RecordsSource::Bytes { bytes, count } => RecordsIterSource::Bytes {
                    rest: bytes,
                    remaining: count,
                },
                RecordsSource::List(list) => RecordsIterSource::List(list.iter()),
            },
        }
    }

    /// Bytes these records emit.
    pub fn buffer_len(&self) -> usize {
        match self.source {
            RecordsSource::Bytes { bytes, .. } => bytes.len(),
            RecordsSource::List(list) => list.iter().map(MldAddressRecord::buffer_len).sum(),
        }
    }

    /// The count as the 16-bit field carries it.
    fn count_field(&self) -> Result<u16> {
        u16::try_from(self.len()).map_err(|_| Error::Malformed("more than 65535 MLD records"))
    }

    /// Writes the records at the start of `buffer`; returns their length.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        let out = buffer.get_mut(..len).ok_or(Error::Truncated)?;
        match self.source {
            RecordsSource::Bytes { bytes, .. } => out.copy_from_slice(bytes),
            RecordsSource::List(list) => {
                let mut at = 0;
                for record in list {
                    at += record.emit(&mut out[at..])?;
                }
            }
        }
        Ok(len)
    }
}

impl Default for MldRecords<'_> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl PartialEq for MldRecords<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for MldRecords<'_> {}

impl fmt::Debug for MldRecords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for MldRecords<'a> {
    type Item = MldAddressRecord<'a>;
    type IntoIter = MldRecordsIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over [`MldRecords`].
#[derive(Debug, Clone)]
pub struct MldRecordsIter<'a> {
    source: RecordsIterSource<'a>,
}

#[derive(Debug, Clone)]
enum RecordsIterSource<'a> {
    Bytes { rest: &'a [u8], remaining: u16 },
    List(core::slice::Iter<'a, MldAddressRecord<'a>>),
}

impl<'a> Iterator for MldRecordsIter<'a> {
    type Item = MldAddressRecord<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.source {
            RecordsIterSource::List(list) => list.next().copied(),
            RecordsIterSource::Bytes { rest, remaining } => {
                if *remaining == 0 {
                    return None;
                }
                // `parse` checked every record; a failure here cannot happen,
                // but ends the iteration rather than panicking.
                match MldAddressRecord::parse_prefix(rest) {
                    Ok((record, len)) => {
                        *rest = rest.get(len..).unwrap_or(&[]);
                        *remaining -= 1;
                        Some(record)
                    }
                    Err(_) => {
                        *remaining = 0;
                        None
                    }
                }
            }
        }
    }
}

/// MLD fields of an [`Icmpv6Packet`]. Each reads zero where the message is
/// too short for it.
impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Query: Maximum Response Delay in ms (v1) or Code (v2, see
    /// [`max_response_delay_ms`]).
    pub fn max_resp_code(&self) -> u16 {
        self.u16_at(field::MAX_RESP_CODE.start)
    }

    /// Query, v1 Report, Done: the multicast address (unspecified in a
    /// general query).
    pub fn mcast_addr(&self) -> Ipv6Addr {
        self.ipv6_addr_at(field::MCAST_ADDR.start)
    }

    /// MLDv2 Query: S, suppress router-side processing (RFC 3810 §5.1.7).
    pub fn suppress_router_processing(&self) -> bool {
        self.u8_at(field::QUERY_FLAGS) & QUERY_S_FLAG != 0
    }

    /// MLDv2 Query: QRV, the querier's robustness variable (§5.1.8).
    pub fn robustness_variable(&self) -> u8 {
        self.u8_at(field::QUERY_FLAGS) & QUERY_QRV_MASK
    }

    /// MLDv2 Query: QQIC, the querier's query interval code (§5.1.9).
    pub fn query_interval_code(&self) -> u8 {
        self.u8_at(field::QQIC)
    }

    /// MLDv2 Query: Number of Sources, as claimed (§5.1.10).
    pub fn num_sources(&self) -> u16 {
        self.u16_at(field::NUM_SOURCES.start)
    }

    /// MLDv2 Report: Nr of Mcast Address Records, as claimed (§5.2.3).
    pub fn num_records(&self) -> u16 {
        self.u16_at(field::NUM_RECORDS.start)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Also clears the reserved field after it.
    pub fn set_max_resp_code(&mut self, value: u16) {
        let [hi, lo] = value.to_be_bytes();
        self.set_bytes_at(field::MAX_RESP_CODE.start, &[hi, lo, 0, 0]);
    }

    pub fn set_mcast_addr(&mut self, value: Ipv6Addr) {
        self.set_ipv6_addr_at(field::MCAST_ADDR.start, value);
    }

    /// Sets S and QRV (its low three bits) and clears the reserved bits.
    pub fn set_query_flags(&mut self, suppress_router_processing: bool, robustness_variable: u8) {
        let s = if suppress_router_processing {
            QUERY_S_FLAG
        } else {
            0
        };
        self.set_bytes_at(
            field::QUERY_FLAGS,
            &[s | (robustness_variable & QUERY_QRV_MASK)],
        );
    }

    pub fn set_query_interval_code(&mut self, value: u8) {
        self.set_bytes_at(field::QQIC, &[value]);
    }

    pub fn set_num_sources(&mut self, value: u16) {
        self.set_u16_at(field::NUM_SOURCES.start, value);
    }

    /// Also clears the reserved field before it.
    pub fn set_num_records(&mut self, value: u16) {
        let [hi, lo] = value.to_be_bytes();
        self.set_bytes_at(field::MAX_RESP_CODE.start, &[0, 0, hi, lo]);
    }
}

/// The meaning of an MLD message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MldRepr<'a> {
    /// MLDv1 Query (RFC 2710 §3): a general query when `group` is
    /// unspecified.
    QueryV1 {
        /// Milliseconds.
        max_response_delay: u16,
        group: Ipv6Addr,
    },
    /// MLDv2 Query (RFC 3810 §5.1).
    QueryV2 {
        /// Encoded delay; see [`max_response_delay_ms`].
        max_resp_code: u16,
        /// Unspecified in a general query.
        group: Ipv6Addr,
        /// S flag.
        suppress_router_processing: bool,
        /// QRV, 0..=7.
        robustness_variable: u8,
        /// QQIC; see [`query_interval_secs`].
        query_interval_code: u8,
        sources: MldSources<'a>,
    },
    /// MLDv1 Report (RFC 2710 §3).
    ReportV1 { group: Ipv6Addr },
    /// MLDv1 Done (RFC 2710 §3).
    Done { group: Ipv6Addr },
    /// MLDv2 Report (RFC 3810 §5.2).
    ReportV2 { records: MldRecords<'a> },
}

impl<'a> MldRepr<'a> {
    /// An MLDv2 Report of the given records; build each with
    /// [`MldAddressRecord::new`]. Nothing is allocated.
    pub const fn report_v2(records: &'a [MldAddressRecord<'a>]) -> Self {
        Self::ReportV2 {
            records: MldRecords::from_list(records),
        }
    }

    /// Validates an MLD message (types 130, 131, 132, 143) whose checksum
    /// the caller has verified. The code and reserved fields are ignored
    /// (RFC 2710 §3, RFC 3810 §5.1.1, §5.2.1).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&'a T>) -> Result<Self> {
        packet.check_len()?;
        let len = packet.len();
        match packet.msg_type() {
            // RFC 3810 §8.1: 24 bytes is MLDv1, 28 or more is MLDv2, and
            // anything else "MUST be silently ignored".
            Icmpv6Message::MldQuery if len == V1_LEN => Ok(Self::QueryV1 {
                max_response_delay: packet.max_resp_code(),
                group: packet.mcast_addr(),
            }),
            Icmpv6Message::MldQuery if len >= QUERY_V2_HEADER_LEN => {
                let count = usize::from(packet.num_sources());
                let sources = packet
                    .tail_of_buffer(QUERY_V2_HEADER_LEN)
                    .get(..count * ADDR_LEN)
                    .ok_or(Error::Truncated)?;
                // Octets after the sources are ignored (§5.1.12).
                Ok(Self::QueryV2 {
                    max_resp_code: packet.max_resp_code(),
                    group: packet.mcast_addr(),
                    suppress_router_processing: packet.suppress_router_processing(),
                    robustness_variable: packet.robustness_variable(),
                    query_interval_code: packet.query_interval_code(),
                    sources: MldSources::from_bytes(sources)?,
                })
            }
            Icmpv6Message::MldQuery => Err(Error::Malformed(
                "MLD query neither 24 nor at least 28 bytes long",
            )),
            Icmpv6Message::MldReport => Ok(Self::ReportV1 {
                group: packet.mcast_addr(),
            }),
            Icmpv6Message::MldDone => Ok(Self::Done {
                group: packet.mcast_addr(),
            }),
            Icmpv6Message::MldReportV2 => Ok(Self::ReportV2 {
                records: MldRecords::parse(
                    packet.tail_of_buffer(REPORT_V2_HEADER_LEN),
                    packet.num_records(),
                )?,
            }),
            _ => Err(Error::Malformed("not an MLD message type")),
        }
    }

    /// The message type this repr emits.
    pub fn msg_type(&self) -> Icmpv6Message {
        match self {
            Self::QueryV1 { .. } | Self::QueryV2 { .. } => Icmpv6Message::MldQuery,
            Self::ReportV1 { .. } => Icmpv6Message::MldReport,
            Self::Done { .. } => Icmpv6Message::MldDone,
            Self::ReportV2 { .. } => Icmpv6Message::MldReportV2,
        }
    }

    /// Bytes of the whole ICMPv6 message this repr emits.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::QueryV1 { .. } | Self::ReportV1 { .. } | Self::Done { .. } => V1_LEN,
            Self::QueryV2 { sources, .. } => QUERY_V2_HEADER_LEN + sources.buffer_len(),
            Self::ReportV2 { records } => REPORT_V2_HEADER_LEN + records.buffer_len(),
        }
    }

    /// Writes the message (checksum left zero) into the first
    /// [`buffer_len`](Self::buffer_len) bytes of `packet`. Use
    /// [`Icmpv6Repr::emit`](crate::icmpv6::Icmpv6Repr::emit) to also fill
    /// the checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if packet.len() < len {
            return Err(Error::Truncated);
        }
        packet.set_msg_type(self.msg_type());
        packet.set_msg_code(0);
        packet.set_checksum(0);
        match *self {
            Self::QueryV1 {
                max_response_delay,
                group,
            } => {
                packet.set_max_resp_code(max_response_delay);
                packet.set_mcast_addr(group);
            }
            Self::QueryV2 {
                max_resp_code,
                group,
                suppress_router_processing,
                robustness_variable,
                query_interval_code,
                sources,
            } => {
                if robustness_variable > QUERY_QRV_MASK {
                    return Err(Error::Malformed("MLD QRV above 7"));
                }
                let count = sources.count_field()?;
                packet.set_max_resp_code(max_resp_code);
                packet.set_mcast_addr(group);
                packet.set_query_flags(suppress_router_processing, robustness_variable);
                packet.set_query_interval_code(query_interval_code);
                packet.set_num_sources(count);
                sources.emit(&mut packet.bytes_mut()[QUERY_V2_HEADER_LEN..len])?;
            }
            Self::ReportV1 { group } | Self::Done { group } => {
                // Max Response Delay: "set to zero by the sender" (RFC 2710 §3.4).
                packet.set_max_resp_code(0);
                packet.set_mcast_addr(group);
            }
            Self::ReportV2 { records } => {
                packet.set_num_records(records.count_field()?);
                records.emit(&mut packet.bytes_mut()[REPORT_V2_HEADER_LEN..len])?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icmpv6::Icmpv6Repr;
    use crate::ChecksumMode;

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    /// ff02::16, all MLDv2-capable routers.
    const DST: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);
    const GROUP: Ipv6Addr = Ipv6Addr::new(0xff3e, 0, 0, 0, 0, 0, 0, 0x1234);
    const S1: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const S2: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

    fn emit(repr: MldRepr) -> Vec<u8> {
        let repr = Icmpv6Repr::Mld(repr);
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(
            &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
            &SRC,
            &DST,
            ChecksumMode::Full,
        )
        .unwrap();
        buf
    }

    fn parse(buf: &[u8]) -> Result<MldRepr<'_>> {
        let packet = Icmpv6Packet::new_checked(buf)?;
        match Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Full)? {
            Icmpv6Repr::Mld(repr) => Ok(repr),
            other => panic!("not MLD: {other:?}"),
        }
    }

    fn parse_unchecked(buf: &[u8]) -> Result<MldRepr<'_>> {
        MldRepr::parse(&Icmpv6Packet::new_checked(buf)?)
    }

    #[test]
    fn v1_messages_round_trip_with_known_layout() {
        let general = MldRepr::QueryV1 {
            max_response_delay: 10_000,
            group: Ipv6Addr::UNSPECIFIED,
        };
        let buf = emit(general);
        assert_eq!(buf.len(), 24);
        assert_eq!(&buf[..2], &[130, 0]);
        assert_eq!(&buf[4..8], &[0x27, 0x10, 0, 0]);
        assert_eq!(parse(&buf), Ok(general));
        for repr in [
            MldRepr::ReportV1 { group: GROUP },
            MldRepr::Done { group: GROUP },
        ] {
            let buf = emit(repr);
            assert_eq!(&buf[8..24], &GROUP.octets());
            assert_eq!(parse(&buf), Ok(repr));
        }
    }

    #[test]
    fn v2_query_round_trip_with_known_layout() {
        let sources = [S1, S2];
        let repr = MldRepr::QueryV2 {
            max_resp_code: 0x8123,
            group: GROUP,
            suppress_router_processing: true,
            robustness_variable: 2,
            query_interval_code: 125,
            sources: MldSources::from_list(&sources),
        };
        let buf = emit(repr);
        assert_eq!(buf.len(), 28 + 32);
        assert_eq!(&buf[24..28], &[0x0a, 125, 0, 2]);
        assert_eq!(&buf[28..44], &S1.octets());
        let parsed = parse(&buf).unwrap();
        assert_eq!(parsed, repr);
        if let MldRepr::QueryV2 { sources, .. } = parsed {
            assert_eq!(sources.len(), 2);
            assert_eq!(sources.get(1), Some(S2));
            assert_eq!(sources.get(2), None);
        }
    }

    #[test]
    fn query_length_selects_the_version() {
        let v2 = emit(MldRepr::QueryV2 {
            max_resp_code: 1000,
            group: Ipv6Addr::UNSPECIFIED,
            suppress_router_processing: false,
            robustness_variable: 2,
            query_interval_code: 125,
            sources: MldSources::EMPTY,
        });
        assert!(matches!(parse_unchecked(&v2), Ok(MldRepr::QueryV2 { .. })));
        assert!(matches!(
            parse_unchecked(&v2[..24]),
            Ok(MldRepr::QueryV1 { .. })
        ));
        for len in 25..28 {
            assert!(matches!(
                parse_unchecked(&v2[..len]),
                Err(Error::Malformed(_))
            ));
        }
        assert_eq!(parse_unchecked(&v2[..23]), Err(Error::Truncated));
        // Extra octets after the sources are ignored (RFC 3810 §5.1.12).
        let mut longer = v2.clone();
        longer.extend_from_slice(&[0xaa; 5]);
        assert!(matches!(
            parse_unchecked(&longer),
            Ok(MldRepr::QueryV2 { .. })
        ));
    }

    #[test]
    fn lying_source_count_in_query_is_truncated() {
        let sources = [S1];
        let mut buf = emit(MldRepr::QueryV2 {
            max_resp_code: 0,
            group: GROUP,
            suppress_router_processing: false,
            robustness_variable: 0,
            query_interval_code: 0,
            sources: MldSources::from_list(&sources),
        });
        for claimed in [2u16, 0xffff] {
            buf[26..28].copy_from_slice(&claimed.to_be_bytes());
            assert_eq!(parse_unchecked(&buf), Err(Error::Truncated));
        }
        buf[26..28].copy_from_slice(&0u16.to_be_bytes());
        assert!(matches!(
            parse_unchecked(&buf),
            Ok(MldRepr::QueryV2 { sources, .. }) if sources.is_empty()
        ));
    }

    #[test]
    fn v2_report_round_trip_and_known_layout() {
        let include = [S1, S2];
        let records = [
            MldAddressRecord::new(MldRecordType::ModeIsInclude, GROUP, &include),
            MldAddressRecord::new(MldRecordType::ChangeToExclude, GROUP, &[]),
            MldAddressRecord {
                record_type: MldRecordType::Unknown(9),
                group: GROUP,
                sources: MldSources::EMPTY,
                aux_data: &[1, 2, 3, 4],
            },
        ];
        let repr = MldRepr::report_v2(&records);
        let buf = emit(repr);
        assert_eq!(buf.len(), 8 + (20 + 32) + 20 + 24);
        assert_eq!(&buf[..2], &[143, 0]);
        assert_eq!(&buf[4..8], &[0, 0, 0, 3]);
        assert_eq!(&buf[8..12], &[1, 0, 0, 2]);
        assert_eq!(&buf[80..84], &[9, 1, 0, 0]);
        let parsed = parse(&buf).unwrap();
        assert_eq!(parsed, repr);
        if let MldRepr::ReportV2 { records: view } = parsed {
            let collected: Vec<_> = view.iter().collect();
            assert_eq!(collected.len(), 3);
            assert_eq!(collected[0].sources.iter().collect::<Vec<_>>(), include);
            assert_eq!(collected[2].aux_data, &[1, 2, 3, 4]);
        }
    }

    #[test]
    fn lying_record_counts_are_refused() {
        let include = [S1];
        let records = [MldAddressRecord::new(
            MldRecordType::AllowNewSources,
            GROUP,
            &include,
        )];
        let buf = emit(MldRepr::report_v2(&records));

        // More records than there are bytes for.
        let mut more_records = buf.clone();
        more_records[6..8].copy_from_slice(&0xffffu16.to_be_bytes());
        assert_eq!(parse_unchecked(&more_records), Err(Error::Truncated));

        // More sources than there are bytes for.
        let mut more_sources = buf.clone();
        more_sources[10..12].copy_from_slice(&2u16.to_be_bytes());
        assert_eq!(parse_unchecked(&more_sources), Err(Error::Truncated));

        // Auxiliary data running past the end.
        let mut aux = buf.clone();
        aux[9] = 1;
        assert_eq!(parse_unchecked(&aux), Err(Error::Truncated));

        // Fewer records than present: the rest is ignored trailing data.
        let mut fewer = buf.clone();
        fewer[6..8].copy_from_slice(&0u16.to_be_bytes());
        assert!(matches!(
            parse_unchecked(&fewer),
            Ok(MldRepr::ReportV2 { records }) if records.is_empty() && records.buffer_len() == 0
        ));
    }

    #[test]
    fn emit_refuses_unrepresentable_fields() {
        let bad_qrv = Icmpv6Repr::Mld(MldRepr::QueryV2 {
            max_resp_code: 0,
            group: GROUP,
            suppress_router_processing: false,
            robustness_variable: 8,
            query_interval_code: 0,
            sources: MldSources::EMPTY,
        });
        let mut buf = vec![0; bad_qrv.buffer_len()];
        assert!(matches!(
            bad_qrv.emit(
                &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
                &SRC,
                &DST,
                ChecksumMode::Full
            ),
            Err(Error::Malformed(_))
        ));
        let odd_aux = MldAddressRecord {
            record_type: MldRecordType::ModeIsInclude,
            group: GROUP,
            sources: MldSources::EMPTY,
            aux_data: &[1, 2, 3],
        };
        assert!(matches!(
            odd_aux.emit(&mut [0; 64]),
            Err(Error::Malformed(_))
        ));
        assert!(MldSources::from_bytes(&[0; 17]).is_err());
    }

    #[test]
    fn encoded_delays_and_intervals() {
        assert_eq!(max_response_delay_ms(10_000), 10_000);
        // exp 0, mant 0: 0x1000 << 3.
        assert_eq!(max_response_delay_ms(0x8000), 0x1000 << 3);
        assert_eq!(max_response_delay_ms(0xffff), 0x1fff << 10);
        assert_eq!(query_interval_secs(125), 125);
        assert_eq!(query_interval_secs(0x80), 0x10 << 3);
        assert_eq!(query_interval_secs(0xff), 0x1f << 10);
    }
}
