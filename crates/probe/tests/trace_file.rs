//! The trace file: round trips, and untrusted input that never panics.

mod common;

use common::*;
use probe::trace_file::{Place, MAX_LOCATIONS};
use probe::{Category, Kind, Layer, Loc, LocationEntry, Record, Trace, TraceError, TraceHeader};
use proptest::prelude::*;

#[test]
fn sample_round_trips() {
    let trace = sample_trace();
    let bytes = trace.to_bytes().unwrap();
    assert_eq!(Trace::from_bytes(&bytes).unwrap(), trace);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_trace().to_bytes().unwrap();
    for len in 0..bytes.len() {
        match Trace::from_bytes(&bytes[..len]) {
            Err(TraceError::Truncated { offset, .. }) => assert_eq!(offset, len as u64),
            other => panic!("prefix of {len} bytes gave {other:?}"),
        }
    }
    assert!(Trace::from_bytes(&bytes).is_ok());
}

#[test]
fn truncation_messages_say_where() {
    let trace = sample_trace();
    let bytes = trace.to_bytes().unwrap();
    let first_record = bytes.len() - trace.records.len() * Record::SIZE;
    let e = Trace::from_bytes(&bytes[..first_record + Record::SIZE + 5]).unwrap_err();
    assert!(
        matches!(
            e,
            TraceError::Truncated {
                place: Place::Record(1),
                ..
            }
        ),
        "{e}"
    );
    assert!(e
        .to_string()
        .starts_with("trace file truncated in record 1"));

    // Cut inside the fourth location entry's name.
    let empty = Trace::new(trace.header.clone(), SITES, Vec::new())
        .to_bytes()
        .unwrap();
    let name = b"checksum.exit";
    let at = find(&empty, name) + 3;
    let e = Trace::from_bytes(&empty[..at]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("trace file truncated in location table entry 3"),
        "{e}"
    );
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut bytes = sample_trace().to_bytes().unwrap();
    let len = bytes.len() as u64;
    bytes.push(0);
    match Trace::from_bytes(&bytes) {
        Err(TraceError::TrailingBytes { offset }) => assert_eq!(offset, len),
        other => panic!("{other:?}"),
    }
}

#[test]
fn specific_corruptions_get_specific_errors() {
    let trace = sample_trace();
    let good = trace.to_bytes().unwrap();

    let mut bad = good.clone();
    bad[..8].copy_from_slice(b"PCAPNG\0\0");
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::BadMagic { .. })
    ));

    let mut bad = good.clone();
    bad[8..10].copy_from_slice(&7u16.to_le_bytes());
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::UnsupportedVersion { version: 7 })
    ));

    let mut bad = good.clone();
    bad[10..18].copy_from_slice(&0f64.to_le_bytes());
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::BadHeader { .. })
    ));

    // A record naming location 900 of 7.
    let mut bad = good.clone();
    let last = bad.len() - Record::SIZE;
    bad[last + 24..last + 26].copy_from_slice(&900u16.to_le_bytes());
    let e = Trace::from_bytes(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "record 6 has location 900 but the table has 7 entries"
    );

    let mut bad = good.clone();
    bad[last + 30] = 1;
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::ReservedBits { index: 6 })
    ));

    // An unknown kind name of the same length as a real one.
    let mut bad = good.clone();
    let at = find(&bad, b"span_enter");
    bad[at..at + 10].copy_from_slice(b"span_XXXXX");
    let e = Trace::from_bytes(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "location table entry 0: unknown kind \"span_XXXXX\""
    );

    // A location count beyond every u16 id.
    let empty = Trace {
        locations: Vec::new(),
        records: Vec::new(),
        ..trace.clone()
    };
    let mut bad = empty.to_bytes().unwrap();
    let count_at = bad.len() - 8 - 4;
    bad[count_at..count_at + 4].copy_from_slice(&(MAX_LOCATIONS as u32 + 1).to_le_bytes());
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::TooMany { .. })
    ));

    // A description length far beyond the file.
    let mut bad = good.clone();
    // magic 8 + version 2 + hz 8 + overhead 8 + dropped 8 = 34: the clock
    // name's length, then the name, then the description's length.
    let clock_len = u32::from_le_bytes(bad[34..38].try_into().unwrap()) as usize;
    let desc_len_at = 38 + clock_len;
    bad[desc_len_at..desc_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Trace::from_bytes(&bad),
        Err(TraceError::TooLong {
            place: Place::Description,
            ..
        })
    ));
}

#[test]
fn duplicate_location_names_are_refused() {
    // "ifq.enqueue" and "ifq.dequeue" have the same length: overwrite the
    // second with the first in the file bytes.
    let mut bytes = sample_trace().to_bytes().unwrap();
    let at = find(&bytes, b"ifq.dequeue");
    bytes[at..at + 11].copy_from_slice(b"ifq.enqueue");
    match Trace::from_bytes(&bytes) {
        Err(TraceError::DuplicateName { name, first, .. }) => {
            assert_eq!(name, "ifq.enqueue");
            assert_eq!(first, TXQ_IN.0 as u32);
        }
        other => panic!("expected a duplicate-name error, got {other:?}"),
    }
}

#[test]
fn a_rejected_batch_leaves_the_writer_unchanged() {
    use probe::TraceWriter;
    let trace = sample_trace();
    let header = trace.header.clone();
    let good = trace.records[0];
    let bad = Record::new(1, Loc(99), 0, 0, 0, 1);
    let mut writer = TraceWriter::new(Vec::new(), &header, &trace.locations, 3).unwrap();
    assert!(matches!(
        writer.write_records(&[good, bad]),
        Err(TraceError::BadLocation { index: 1, .. })
    ));
    // Nothing of the rejected batch was written or counted.
    writer.write_records(&[good, good, good]).unwrap();
    let bytes = writer.finish().unwrap();
    assert_eq!(Trace::from_bytes(&bytes).unwrap().records, [good; 3]);
}

#[test]
fn flipping_any_byte_never_panics() {
    let good = sample_trace().to_bytes().unwrap();
    for i in 0..good.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bytes = good.clone();
            bytes[i] ^= mask;
            if let Ok(trace) = Trace::from_bytes(&bytes) {
                // Whatever reads must write back to the same bytes.
                assert_eq!(trace.to_bytes().unwrap(), bytes, "byte {i} ^ {mask:#x}");
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

// ------------------------------------------------------------- proptest

fn location_entry() -> impl Strategy<Value = LocationEntry> {
    (
        "[a-z_.]{1,24}",
        prop::sample::select(Layer::ALL),
        prop::sample::select(Kind::ALL),
        prop::sample::select(Category::ALL),
        prop::option::of("\\PC{0,12}"),
    )
        .prop_map(|(name, layer, kind, category, queue)| LocationEntry {
            name,
            layer,
            kind,
            category,
            queue,
        })
}

fn trace() -> impl Strategy<Value = Trace> {
    (
        prop::collection::vec(location_entry(), 1..20),
        prop::collection::vec(
            (
                any::<u64>(),
                any::<u16>(),
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
                any::<u16>(),
            ),
            0..200,
        ),
        1.0f64..1e10,
        0.0f64..1e4,
        any::<u64>(),
        "\\PC{0,64}",
    )
        .prop_map(|(mut locations, raw, hz, overhead, dropped, description)| {
            // Names must be unique in a table; the index makes them so.
            for (i, l) in locations.iter_mut().enumerate() {
                l.name = format!("{}#{i}", l.name);
            }
            let n = locations.len() as u16;
            let records = raw
                .into_iter()
                .map(|(tsc, loc, len, flow, aux, thread)| {
                    Record::new(tsc, Loc(loc % n), len, flow, aux, thread)
                })
                .collect();
            Trace {
                header: TraceHeader::new(hz, overhead, dropped, description),
                locations,
                records,
            }
        })
}

proptest! {
    #[test]
    fn arbitrary_traces_round_trip(t in trace()) {
        let bytes = t.to_bytes().unwrap();
        prop_assert_eq!(Trace::from_bytes(&bytes).unwrap(), t);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = Trace::from_bytes(&bytes);
    }

    #[test]
    fn random_bytes_after_a_valid_start_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..512),
        cut in 0usize..200,
    ) {
        let good = sample_trace().to_bytes().unwrap();
        let mut bytes = good[..cut.min(good.len())].to_vec();
        bytes.extend_from_slice(&tail);
        if let Ok(t) = Trace::from_bytes(&bytes) {
            prop_assert_eq!(t.to_bytes().unwrap(), bytes);
        }
    }

    #[test]
    fn random_splices_of_two_traces_never_panic(
        a in trace(), b in trace(), cut_a in any::<prop::sample::Index>(), cut_b in any::<prop::sample::Index>(),
    ) {
        let a = a.to_bytes().unwrap();
        let b = b.to_bytes().unwrap();
        let mut bytes = a[..cut_a.index(a.len())].to_vec();
        bytes.extend_from_slice(&b[cut_b.index(b.len())..]);
        let _ = Trace::from_bytes(&bytes);
    }
}
