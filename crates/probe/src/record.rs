//! The fixed-size probe event.
//!
//! One `Record` is written per probe hit. It is 32 bytes so that two fit a
//! 64-byte cache line and a ring of a million costs 32 MiB.

/// A location id: an index into a static location table (see
/// [`crate::locations!`]). Numbers are never written by hand. The top bit
/// marks a cost centre, which the [`Level::Layers`](crate::gate::Level)
/// depth leaves out; records store the index alone, and two `Loc`s are
/// equal when their indices are (a location read back from a record is the
/// declared one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Loc(pub u16);

impl PartialEq for Loc {
    fn eq(&self, other: &Self) -> bool {
        self.index() == other.index()
    }
}

impl Eq for Loc {}

impl std::hash::Hash for Loc {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index().hash(state);
    }
}

impl PartialOrd for Loc {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Loc {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index().cmp(&other.index())
    }
}

impl Loc {
    /// The bit of a cost-centre location.
    const DETAIL: u16 = 0x8000;
    /// Most locations a table may declare.
    pub const MAX_LOCATIONS: usize = Self::DETAIL as usize;

    /// The location declared at `index` with `category` (what
    /// [`crate::locations!`] makes).
    pub const fn declared(index: u16, category: crate::Category) -> Loc {
        if category.is_cost_centre() {
            Loc(index | Self::DETAIL)
        } else {
            Loc(index)
        }
    }

    /// The location marked a detail (`detail = true` in
    /// [`crate::locations!`]) or not, whatever its category: a stage
    /// inside a layer's span of the same category, which the `layers`
    /// depth leaves to its parent.
    pub const fn with_detail(self, detail: bool) -> Loc {
        if detail {
            Loc(self.0 | Self::DETAIL)
        } else {
            Loc(self.0 & !Self::DETAIL)
        }
    }

    /// The index into the location table.
    pub const fn index(self) -> usize {
        (self.0 & !Self::DETAIL) as usize
    }

    /// Whether the location is a cost centre inside a layer.
    pub const fn is_detail(self) -> bool {
        self.0 & Self::DETAIL != 0
    }
}

/// One probe event. The layout is part of the trace file format: the
/// fields are written in this order, little-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Record {
    /// Raw counter value (cycles on x86_64, nanoseconds elsewhere).
    pub tsc: u64,
    /// Sequence number, byte offset or call id pairing head with end.
    pub aux: u64,
    /// Flow id (socket / connection).
    pub flow: u32,
    /// Bytes passing the probe.
    pub len: u32,
    /// Location id.
    pub loc: u16,
    /// Small per-thread number assigned by the recorder.
    pub thread: u16,
    // Always zero; keeps the record at 32 bytes and leaves room for a
    // later format version.
    _reserved: u32,
}

const _: () = assert!(std::mem::size_of::<Record>() == Record::SIZE);
const _: () = assert!(std::mem::align_of::<Record>() == 8);

impl Record {
    /// Size of one record in memory and in a trace file.
    pub const SIZE: usize = 32;

    /// A record whose every field but `loc` is zero. Used to fill a fresh
    /// ring: the non-zero `loc` forces real stores, so the pages are
    /// touched at allocation time and not on the hot path (an all-zero
    /// fill could be turned into a lazily-mapped `calloc`).
    #[cfg(feature = "probes")]
    pub(crate) const UNWRITTEN: Record = Record {
        tsc: 0,
        aux: 0,
        flow: 0,
        len: 0,
        loc: u16::MAX,
        thread: 0,
        _reserved: 0,
    };

    /// Builds a record.
    #[inline(always)]
    pub const fn new(tsc: u64, loc: Loc, len: u32, flow: u32, aux: u64, thread: u16) -> Record {
        Record {
            tsc,
            aux,
            flow,
            len,
            loc: loc.index() as u16,
            thread,
            _reserved: 0,
        }
    }

    /// The location id as a [`Loc`].
    pub const fn location(&self) -> Loc {
        Loc(self.loc)
    }

    /// The reserved word; zero in every valid record.
    pub(crate) const fn reserved(&self) -> u32 {
        self._reserved
    }

    /// Encodes the record as it is stored in a trace file.
    pub fn to_le_bytes(&self) -> [u8; Record::SIZE] {
        let mut out = [0u8; Record::SIZE];
        out[0..8].copy_from_slice(&self.tsc.to_le_bytes());
        out[8..16].copy_from_slice(&self.aux.to_le_bytes());
        out[16..20].copy_from_slice(&self.flow.to_le_bytes());
        out[20..24].copy_from_slice(&self.len.to_le_bytes());
        out[24..26].copy_from_slice(&self.loc.to_le_bytes());
        out[26..28].copy_from_slice(&self.thread.to_le_bytes());
        out[28..32].copy_from_slice(&self._reserved.to_le_bytes());
        out
    }

    /// Decodes a record as stored in a trace file. The reserved word is
    /// kept as found so the reader can reject non-zero values.
    pub fn from_le_bytes(b: &[u8; Record::SIZE]) -> Record {
        // The slice bounds below are constants within a 32-byte array, so
        // these conversions cannot fail.
        let u64_at = |i: usize| {
            u64::from_le_bytes([
                b[i],
                b[i + 1],
                b[i + 2],
                b[i + 3],
                b[i + 4],
                b[i + 5],
                b[i + 6],
                b[i + 7],
            ])
        };
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Record {
            tsc: u64_at(0),
            aux: u64_at(8),
            flow: u32_at(16),
            len: u32_at(20),
            loc: u16_at(24),
            thread: u16_at(26),
            _reserved: u32_at(28),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Record>(), 32);
    }

    #[test]
    fn bytes_round_trip() {
        let r = Record::new(0x0102_0304_0506_0708, Loc(0x0a0b), 7, 9, u64::MAX - 3, 42);
        let b = r.to_le_bytes();
        assert_eq!(&b[0..8], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&b[24..26], &[0x0b, 0x0a]);
        assert_eq!(&b[28..32], &[0, 0, 0, 0]);
        assert_eq!(Record::from_le_bytes(&b), r);
    }

    #[test]
    fn reserved_is_kept_on_decode() {
        let mut b = Record::default().to_le_bytes();
        b[31] = 1;
        assert_eq!(Record::from_le_bytes(&b).reserved(), 1 << 24);
    }
}
