//! The self-describing binary trace file.
//!
//! Layout (all integers little-endian; `str` = `u32` byte length, then
//! that many bytes of UTF-8):
//!
//! ```text
//! magic            8 bytes   b"SSTRACE\0"
//! version          u16       FORMAT_VERSION (1)
//! counter_hz       f64       counter frequency; finite, > 0
//! overhead_cycles  f64       measured per-probe overhead; finite, >= 0
//! dropped          u64       events lost to full rings
//! clock            str       "rdtsc" or "monotonic_ns" (<= MAX_NAME_LEN)
//! description      str       host / stack, free text (<= MAX_DESCRIPTION_LEN)
//! location count   u32       <= MAX_LOCATIONS
//!   per location:  name str, layer str, kind str, category str
//!                  (snake_case names), queue flag u8 (0 or 1),
//!                  queue str if the flag is 1
//! record count     u64       <= MAX_RECORDS
//!   per record:    32 bytes: tsc u64, aux u64, flow u32, len u32,
//!                  loc u16, thread u16, reserved u32 (= 0)
//! end of file                (trailing bytes are an error)
//! ```
//!
//! Reading treats the file as untrusted: every count and length is
//! bounded by a maximum, memory grows only as bytes actually arrive, and
//! every failure is a [`TraceError`] naming the place it happened.

use crate::location::{Category, Kind, Layer, Location};
use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, Read, Write};

/// First eight bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"SSTRACE\0";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// Longest location name, queue name or clock name, in bytes.
pub const MAX_NAME_LEN: usize = 1024;
/// Longest description, in bytes.
pub const MAX_DESCRIPTION_LEN: usize = 64 * 1024;
/// Most locations a table may have: every `u16` id.
pub const MAX_LOCATIONS: usize = 1 << 16;
/// Most records a file may hold (128 GiB of records).
pub const MAX_RECORDS: u64 = 1 << 32;

/// Records decoded per read; bounds the read buffer.
const CHUNK_RECORDS: usize = 1024;
/// Longest layer/kind/category name accepted before looking it up.
const MAX_ENUM_NAME_LEN: usize = 64;

/// Everything in a trace before the location table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Counter frequency in Hz (see [`crate::clock::calibrate`]).
    pub counter_hz: f64,
    /// Per-probe overhead in counter units (see
    /// [`crate::calibrate::overhead`]); analysis subtracts it.
    pub overhead_cycles: f64,
    /// Events dropped because a ring was full.
    pub dropped: u64,
    /// The counter the records were taken with ([`crate::clock::KIND`]).
    pub clock: String,
    /// Free text: host, stack, run.
    pub description: String,
}

impl TraceHeader {
    /// A header for records taken with this build's clock.
    pub fn new(
        counter_hz: f64,
        overhead_cycles: f64,
        dropped: u64,
        description: impl Into<String>,
    ) -> TraceHeader {
        TraceHeader {
            counter_hz,
            overhead_cycles,
            dropped,
            clock: crate::clock::KIND.to_string(),
            description: description.into(),
        }
    }
}

/// A location as stored in (and read from) a trace file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocationEntry {
    pub name: String,
    pub layer: Layer,
    pub kind: Kind,
    pub category: Category,
    pub queue: Option<String>,
}

impl LocationEntry {
    /// Owned entries for a static table.
    pub fn table(locations: &[Location]) -> Vec<LocationEntry> {
        locations.iter().map(LocationEntry::from).collect()
    }
}

impl From<&Location> for LocationEntry {
    fn from(l: &Location) -> LocationEntry {
        LocationEntry {
            name: l.name.to_string(),
            layer: l.layer,
            kind: l.kind,
            category: l.category,
            queue: l.queue.map(str::to_string),
        }
    }
}

/// A whole trace in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub header: TraceHeader,
    pub locations: Vec<LocationEntry>,
    pub records: Vec<Record>,
}

impl Trace {
    /// A trace of `records` described by the static `locations` table.
    pub fn new(header: TraceHeader, locations: &[Location], records: Vec<Record>) -> Trace {
        Trace {
            header,
            locations: LocationEntry::table(locations),
            records,
        }
    }

    /// Reads a trace. Wrap files in a `BufReader`.
    pub fn read(input: impl Read) -> Result<Trace, TraceError> {
        read_trace(&mut Input::new(input))
    }

    /// Reads a trace from bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        Trace::read(bytes)
    }

    /// Writes the trace. Wrap files in a `BufWriter`.
    pub fn write(&self, out: impl Write) -> Result<(), TraceError> {
        let mut writer = TraceWriter::new(
            out,
            &self.header,
            &self.locations,
            self.records.len() as u64,
        )?;
        writer.write_records(&self.records)?;
        writer.finish()?;
        Ok(())
    }

    /// Encodes the trace as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, TraceError> {
        let mut out = Vec::new();
        self.write(&mut out)?;
        Ok(out)
    }

    /// Checks everything the reader checks, for a trace built in memory.
    pub fn validate(&self) -> Result<(), TraceError> {
        check_header(&self.header)?;
        check_table(&self.locations)?;
        for (index, record) in self.records.iter().enumerate() {
            check_record(index as u64, record, self.locations.len())?;
        }
        Ok(())
    }

    /// The location a record refers to.
    pub fn location(&self, record: &Record) -> Option<&LocationEntry> {
        self.locations.get(record.location().index())
    }
}

/// Where in a trace file something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Magic,
    Version,
    Header,
    Clock,
    Description,
    LocationCount,
    /// A location table entry, by index.
    Location(u32),
    RecordCount,
    /// A record, by index.
    Record(u64),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Magic => f.write_str("the magic bytes"),
            Place::Version => f.write_str("the format version"),
            Place::Header => f.write_str("the header"),
            Place::Clock => f.write_str("the clock name"),
            Place::Description => f.write_str("the description"),
            Place::LocationCount => f.write_str("the location count"),
            Place::Location(i) => write!(f, "location table entry {i}"),
            Place::RecordCount => f.write_str("the record count"),
            Place::Record(i) => write!(f, "record {i}"),
        }
    }
}

/// Why a trace could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("trace file truncated in {place} (at byte {offset})")]
    Truncated { place: Place, offset: u64 },
    #[error("bad magic {found:02x?}: not a stackscope trace file")]
    BadMagic { found: [u8; 8] },
    #[error(
        "unsupported trace format version {version} (this build reads version {FORMAT_VERSION})"
    )]
    UnsupportedVersion { version: u16 },
    #[error("invalid {field} in the header: {value}")]
    BadHeader { field: &'static str, value: f64 },
    #[error("{place}: {what} is {len} bytes long, more than the maximum of {max}")]
    TooLong {
        place: Place,
        what: &'static str,
        len: u64,
        max: u64,
    },
    #[error("{count} {what} exceed the maximum of {max}")]
    TooMany {
        what: &'static str,
        count: u64,
        max: u64,
    },
    #[error("{place}: {what} is not valid UTF-8")]
    BadUtf8 { place: Place, what: &'static str },
    #[error("{place}: unknown {what} {value:?}")]
    UnknownName {
        place: Place,
        what: &'static str,
        value: String,
    },
    #[error("{place}: queue flag must be 0 or 1, found {value}")]
    BadQueueFlag { place: Place, value: u8 },
    #[error("{place}: name {name:?} is already used by location {first}")]
    DuplicateName {
        place: Place,
        name: String,
        first: u32,
    },
    #[error("record {index} has location {loc} but the table has {table_len} entries")]
    BadLocation {
        index: u64,
        loc: u16,
        table_len: usize,
    },
    #[error("record {index} has non-zero reserved bits")]
    ReservedBits { index: u64 },
    #[error("unexpected data after the last record (at byte {offset})")]
    TrailingBytes { offset: u64 },
    #[error("trace writer was told {declared} records but was given {written}")]
    CountMismatch { declared: u64, written: u64 },
    /// The reader's or writer's own error, said once (its text is the
    /// message; a chain printer would repeat a wrapped one).
    #[error(transparent)]
    Io(#[from] io::Error),
}

// ---------------------------------------------------------------- checks

fn check_header(h: &TraceHeader) -> Result<(), TraceError> {
    if !(h.counter_hz.is_finite() && h.counter_hz > 0.0) {
        return Err(TraceError::BadHeader {
            field: "counter frequency",
            value: h.counter_hz,
        });
    }
    if !(h.overhead_cycles.is_finite() && h.overhead_cycles >= 0.0) {
        return Err(TraceError::BadHeader {
            field: "probe overhead",
            value: h.overhead_cycles,
        });
    }
    check_len(Place::Clock, "clock name", h.clock.len(), MAX_NAME_LEN)?;
    check_len(
        Place::Description,
        "description",
        h.description.len(),
        MAX_DESCRIPTION_LEN,
    )
}

fn check_table(locations: &[LocationEntry]) -> Result<(), TraceError> {
    check_count("locations", locations.len() as u64, MAX_LOCATIONS as u64)?;
    // Analysis finds locations by name, so names must be unique.
    let mut seen: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    for (i, l) in locations.iter().enumerate() {
        let place = Place::Location(i as u32);
        check_len(place, "name", l.name.len(), MAX_NAME_LEN)?;
        if let Some(q) = &l.queue {
            check_len(place, "queue name", q.len(), MAX_NAME_LEN)?;
        }
        if let Some(&first) = seen.get(l.name.as_str()) {
            return Err(TraceError::DuplicateName {
                place,
                name: l.name.clone(),
                first,
            });
        }
        seen.insert(&l.name, i as u32);
    }
    Ok(())
}

fn check_record(index: u64, r: &Record, table_len: usize) -> Result<(), TraceError> {
    if r.location().index() >= table_len {
        return Err(TraceError::BadLocation {
            index,
            loc: r.loc,
            table_len,
        });
    }
    if r.reserved() != 0 {
        return Err(TraceError::ReservedBits { index });
    }
    Ok(())
}

fn check_len(place: Place, what: &'static str, len: usize, max: usize) -> Result<(), TraceError> {
    if len > max {
        return Err(TraceError::TooLong {
            place,
            what,
            len: len as u64,
            max: max as u64,
        });
    }
    Ok(())
}

fn check_count(what: &'static str, count: u64, max: u64) -> Result<(), TraceError> {
    if count > max {
        return Err(TraceError::TooMany { what, count, max });
    }
    Ok(())
}

// ---------------------------------------------------------------- writing

/// Streams a trace: header and table first, then records in any number of
/// batches (e.g. one per thread), with the total declared up front.
pub struct TraceWriter<W: Write> {
    out: W,
    declared: u64,
    written: u64,
    table_len: usize,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the header and location table; `record_count` records must
    /// follow before [`finish`](TraceWriter::finish).
    pub fn new(
        mut out: W,
        header: &TraceHeader,
        locations: &[LocationEntry],
        record_count: u64,
    ) -> Result<TraceWriter<W>, TraceError> {
        check_header(header)?;
        check_table(locations)?;
        check_count("records", record_count, MAX_RECORDS)?;

        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&MAGIC);
        buf.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        buf.extend_from_slice(&header.counter_hz.to_le_bytes());
        buf.extend_from_slice(&header.overhead_cycles.to_le_bytes());
        buf.extend_from_slice(&header.dropped.to_le_bytes());
        put_str(&mut buf, &header.clock);
        put_str(&mut buf, &header.description);
        buf.extend_from_slice(&(locations.len() as u32).to_le_bytes());
        for l in locations {
            put_str(&mut buf, &l.name);
            put_str(&mut buf, l.layer.as_str());
            put_str(&mut buf, l.kind.as_str());
            put_str(&mut buf, l.category.as_str());
            match &l.queue {
                Some(q) => {
                    buf.push(1);
                    put_str(&mut buf, q);
                }
                None => buf.push(0),
            }
        }
        buf.extend_from_slice(&record_count.to_le_bytes());
        out.write_all(&buf)?;
        Ok(TraceWriter {
            out,
            declared: record_count,
            written: 0,
            table_len: locations.len(),
        })
    }

    /// Appends records; each must name a location in the table.
    pub fn write_records(&mut self, records: &[Record]) -> Result<(), TraceError> {
        let total = self.written + records.len() as u64;
        if total > self.declared {
            return Err(TraceError::CountMismatch {
                declared: self.declared,
                written: total,
            });
        }
        let mut buf = Vec::with_capacity(CHUNK_RECORDS.min(records.len()) * Record::SIZE);
        // Every record is checked before any is written or counted, so an
        // error leaves the file and the count as they were.
        for (i, r) in records.iter().enumerate() {
            check_record(self.written + i as u64, r, self.table_len)?;
        }
        for chunk in records.chunks(CHUNK_RECORDS) {
            buf.clear();
            for r in chunk {
                buf.extend_from_slice(&r.to_le_bytes());
            }
            self.out.write_all(&buf)?;
            self.written += chunk.len() as u64;
        }
        Ok(())
    }

    /// Checks that the declared number of records was written, flushes,
    /// and returns the output.
    pub fn finish(mut self) -> Result<W, TraceError> {
        if self.written != self.declared {
            return Err(TraceError::CountMismatch {
                declared: self.declared,
                written: self.written,
            });
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

// ---------------------------------------------------------------- reading

/// A reader that knows its byte offset and turns a short read into
/// [`TraceError::Truncated`] at a named place.
struct Input<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> Input<R> {
    fn new(inner: R) -> Input<R> {
        Input { inner, offset: 0 }
    }

    /// Reads until `buf` is full or the input ends; returns the count.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    fn exact<const N: usize>(&mut self, place: Place) -> Result<[u8; N], TraceError> {
        let mut buf = [0u8; N];
        if self.fill(&mut buf)? < N {
            return Err(TraceError::Truncated {
                place,
                offset: self.offset,
            });
        }
        Ok(buf)
    }

    fn u8(&mut self, place: Place) -> Result<u8, TraceError> {
        Ok(self.exact::<1>(place)?[0])
    }

    fn u16(&mut self, place: Place) -> Result<u16, TraceError> {
        Ok(u16::from_le_bytes(self.exact(place)?))
    }

    fn u32(&mut self, place: Place) -> Result<u32, TraceError> {
        Ok(u32::from_le_bytes(self.exact(place)?))
    }

    fn u64(&mut self, place: Place) -> Result<u64, TraceError> {
        Ok(u64::from_le_bytes(self.exact(place)?))
    }

    fn f64(&mut self, place: Place) -> Result<f64, TraceError> {
        Ok(f64::from_le_bytes(self.exact(place)?))
    }

    /// A length-prefixed UTF-8 string of at most `max` bytes.
    fn string(
        &mut self,
        place: Place,
        what: &'static str,
        max: usize,
    ) -> Result<String, TraceError> {
        let len = self.u32(place)? as usize;
        check_len(place, what, len, max)?;
        let mut bytes = vec![0u8; len];
        if self.fill(&mut bytes)? < len {
            return Err(TraceError::Truncated {
                place,
                offset: self.offset,
            });
        }
        String::from_utf8(bytes).map_err(|_| TraceError::BadUtf8 { place, what })
    }

    /// A layer, kind or category stored by its snake_case name.
    fn name<T>(
        &mut self,
        place: Place,
        what: &'static str,
        parse: fn(&str) -> Option<T>,
    ) -> Result<T, TraceError> {
        let value = self.string(place, what, MAX_ENUM_NAME_LEN)?;
        parse(&value).ok_or(TraceError::UnknownName { place, what, value })
    }

    fn at_end(&mut self) -> Result<bool, TraceError> {
        let mut probe = [0u8; 1];
        let got = self.fill(&mut probe)?;
        self.offset -= got as u64;
        Ok(got == 0)
    }
}

fn read_trace<R: Read>(input: &mut Input<R>) -> Result<Trace, TraceError> {
    let magic = input.exact::<8>(Place::Magic)?;
    if magic != MAGIC {
        return Err(TraceError::BadMagic { found: magic });
    }
    let version = input.u16(Place::Version)?;
    if version != FORMAT_VERSION {
        return Err(TraceError::UnsupportedVersion { version });
    }
    let header = TraceHeader {
        counter_hz: input.f64(Place::Header)?,
        overhead_cycles: input.f64(Place::Header)?,
        dropped: input.u64(Place::Header)?,
        clock: input.string(Place::Clock, "clock name", MAX_NAME_LEN)?,
        description: input.string(Place::Description, "description", MAX_DESCRIPTION_LEN)?,
    };
    check_header(&header)?;

    let count = input.u32(Place::LocationCount)?;
    check_count("locations", u64::from(count), MAX_LOCATIONS as u64)?;
    // Grown entry by entry: the count alone reserves nothing.
    let mut locations = Vec::new();
    for i in 0..count {
        locations.push(read_location(input, Place::Location(i))?);
    }
    check_table(&locations)?;

    let record_count = input.u64(Place::RecordCount)?;
    check_count("records", record_count, MAX_RECORDS)?;
    let records = read_records(input, record_count, locations.len())?;

    if !input.at_end()? {
        return Err(TraceError::TrailingBytes {
            offset: input.offset,
        });
    }
    Ok(Trace {
        header,
        locations,
        records,
    })
}

fn read_location<R: Read>(input: &mut Input<R>, place: Place) -> Result<LocationEntry, TraceError> {
    let name = input.string(place, "name", MAX_NAME_LEN)?;
    let layer = input.name(place, "layer", Layer::from_name)?;
    let kind = input.name(place, "kind", Kind::from_name)?;
    let category = input.name(place, "category", Category::from_name)?;
    let queue = match input.u8(place)? {
        0 => None,
        1 => Some(input.string(place, "queue name", MAX_NAME_LEN)?),
        value => return Err(TraceError::BadQueueFlag { place, value }),
    };
    Ok(LocationEntry {
        name,
        layer,
        kind,
        category,
        queue,
    })
}

/// Reads `count` records a chunk at a time, so memory follows the bytes
/// actually present rather than the count the file claims.
fn read_records<R: Read>(
    input: &mut Input<R>,
    count: u64,
    table_len: usize,
) -> Result<Vec<Record>, TraceError> {
    let mut records = Vec::new();
    let mut buf = vec![0u8; CHUNK_RECORDS * Record::SIZE];
    let mut index = 0u64;
    while index < count {
        let want = (count - index).min(CHUNK_RECORDS as u64) as usize;
        let bytes = &mut buf[..want * Record::SIZE];
        let got = input.fill(bytes)?;
        for raw in bytes[..got].chunks_exact(Record::SIZE) {
            let mut one = [0u8; Record::SIZE];
            one.copy_from_slice(raw);
            let record = Record::from_le_bytes(&one);
            check_record(index, &record, table_len)?;
            records.push(record);
            index += 1;
        }
        if got < bytes.len() {
            return Err(TraceError::Truncated {
                place: Place::Record(index),
                offset: input.offset,
            });
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Loc;

    fn sample() -> Trace {
        Trace {
            header: TraceHeader::new(2.5e9, 23.5, 4, "test host"),
            locations: vec![
                LocationEntry {
                    name: "a.enter".into(),
                    layer: Layer::Transport,
                    kind: Kind::SpanEnter,
                    category: Category::ProtocolSend,
                    queue: None,
                },
                LocationEntry {
                    name: "q.in".into(),
                    layer: Layer::Link,
                    kind: Kind::Enqueue,
                    category: Category::Link,
                    queue: Some("q".into()),
                },
            ],
            records: vec![
                Record::new(10, Loc(0), 1, 2, 3, 1),
                Record::new(20, Loc(1), 4, 5, 6, 2),
            ],
        }
    }

    #[test]
    fn round_trip() {
        let t = sample();
        let bytes = t.to_bytes().unwrap();
        assert_eq!(&bytes[..8], b"SSTRACE\0");
        assert_eq!(Trace::from_bytes(&bytes).unwrap(), t);
    }

    #[test]
    fn header_layout_is_fixed() {
        let bytes = sample().to_bytes().unwrap();
        assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
        let hz = f64::from_le_bytes(bytes[10..18].try_into().unwrap());
        assert_eq!(hz, 2.5e9);
        let records_start = bytes.len() - 2 * Record::SIZE;
        let count = u64::from_le_bytes(bytes[records_start - 8..records_start].try_into().unwrap());
        assert_eq!(count, 2);
    }

    #[test]
    fn errors_name_the_place() {
        let mut bytes = sample().to_bytes().unwrap();
        bytes[0] = b'X';
        assert!(matches!(
            Trace::from_bytes(&bytes),
            Err(TraceError::BadMagic { .. })
        ));

        let mut bytes = sample().to_bytes().unwrap();
        bytes[8] = 7;
        let e = Trace::from_bytes(&bytes).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unsupported trace format version 7 (this build reads version 1)"
        );

        let mut t = sample();
        t.records[1].loc = 40;
        let e = t.to_bytes().unwrap_err();
        assert_eq!(
            e.to_string(),
            "record 1 has location 40 but the table has 2 entries"
        );
    }

    #[test]
    fn writer_checks_the_declared_count() {
        let t = sample();
        let mut w = TraceWriter::new(Vec::new(), &t.header, &t.locations, 3).unwrap();
        w.write_records(&t.records).unwrap();
        assert!(matches!(
            w.finish(),
            Err(TraceError::CountMismatch {
                declared: 3,
                written: 2
            })
        ));
        let mut w = TraceWriter::new(Vec::new(), &t.header, &t.locations, 1).unwrap();
        assert!(w.write_records(&t.records).is_err());
    }

    #[test]
    fn writer_rejects_a_bad_header() {
        let mut t = sample();
        t.header.counter_hz = f64::NAN;
        assert!(matches!(t.to_bytes(), Err(TraceError::BadHeader { .. })));
        t.header.counter_hz = 1e9;
        t.header.overhead_cycles = -1.0;
        assert!(matches!(t.to_bytes(), Err(TraceError::BadHeader { .. })));
    }

    #[test]
    fn huge_counts_allocate_nothing_up_front() {
        // A file that claims MAX_RECORDS records but has none.
        let mut t = sample();
        t.records.clear();
        let mut bytes = t.to_bytes().unwrap();
        let n = bytes.len();
        bytes[n - 8..].copy_from_slice(&MAX_RECORDS.to_le_bytes());
        let e = Trace::from_bytes(&bytes).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("trace file truncated in record 0 (at byte {n})")
        );
    }
}
