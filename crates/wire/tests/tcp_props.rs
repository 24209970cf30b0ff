//! TCP property tests: every representable header round-trips through emit
//! and parse over either IP family, and no damaged or random segment makes
//! parsing panic. Whatever parses re-emits to a segment that parses back to
//! the same repr.

use core::net::IpAddr;

use proptest::collection::vec;
use proptest::prelude::*;
use wire::tcp::{
    TcpFlags, TcpOption, TcpOptionIter, TcpPacket, TcpRepr, TcpUnknownOptions, HEADER_LEN,
    MAX_HEADER_LEN,
};
use wire::{ChecksumMode, Error};

const MODES: [ChecksumMode; 2] = [ChecksumMode::Full, ChecksumMode::Skip];

fn addresses() -> impl Strategy<Value = (IpAddr, IpAddr)> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>()).prop_map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
        (any::<[u8; 16]>(), any::<[u8; 16]>())
            .prop_map(|(s, d)| (IpAddr::from(s), IpAddr::from(d))),
    ]
}

/// Option kinds without a field of their own in `TcpRepr`.
fn unknown_kind() -> impl Strategy<Value = u8> {
    any::<u8>().prop_filter("modeled kind", |k| ![0, 1, 2, 3, 4, 5, 8].contains(k))
}

fn unknown_options() -> impl Strategy<Value = Vec<(u8, Vec<u8>)>> {
    vec((unknown_kind(), vec(any::<u8>(), 0..8)), 0..4)
}

fn flags_without_ack() -> impl Strategy<Value = TcpFlags> {
    any::<u8>().prop_map(|b| TcpFlags::from_bits(b) - TcpFlags::ACK)
}

/// Drops unknown options, then SACK blocks, until the options fit in 40
/// bytes (the modeled options other than SACK take at most 20).
fn fit(mut repr: TcpRepr) -> TcpRepr {
    while repr.header_len() > MAX_HEADER_LEN {
        if !repr.unknown_options.is_empty() {
            let mut kept = TcpUnknownOptions::new();
            let all: Vec<_> = repr.unknown_options.iter().map(|o| o.unwrap()).collect();
            for option in &all[..all.len() - 1] {
                let TcpOption::Unknown { kind, data } = *option else {
                    unreachable!("the store holds unknown options only")
                };
                kept.push(kind, data).unwrap();
            }
            repr.unknown_options = kept;
        } else if let Some(last) = repr.sack_ranges.iter().rposition(Option::is_some) {
            repr.sack_ranges[last] = None;
        } else {
            unreachable!("modeled options without SACK always fit");
        }
    }
    repr
}

/// A repr whose options fit, with a payload of its `payload_len`.
fn repr_and_payload() -> impl Strategy<Value = (TcpRepr, Vec<u8>)> {
    let header = (
        any::<u16>(),
        1..=u16::MAX,
        any::<u32>(),
        any::<Option<u32>>(),
        flags_without_ack(),
        any::<u16>(),
        any::<u16>(),
    );
    let options = (
        any::<Option<u16>>(),
        any::<Option<u8>>(),
        any::<bool>(),
        vec((any::<u32>(), any::<u32>()), 0..=4),
        any::<Option<(u32, u32)>>(),
        unknown_options(),
    );
    (header, options, vec(any::<u8>(), 0..64)).prop_map(
        |(
            (src_port, dst_port, seq_number, ack_number, flags, window_len, urgent_pointer),
            (max_seg_size, window_scale, sack_permitted, blocks, timestamps, unknown),
            payload,
        )| {
            let mut sack_ranges = [None; 4];
            for (slot, block) in sack_ranges.iter_mut().zip(blocks) {
                *slot = Some(block);
            }
            let mut unknown_options = TcpUnknownOptions::new();
            for (kind, data) in unknown {
                // Options past the store's 40 bytes are simply not added.
                let _ = unknown_options.push(kind, &data);
            }
            let repr = fit(TcpRepr {
                src_port,
                dst_port,
                seq_number,
                ack_number,
                flags,
                window_len,
                urgent_pointer,
                max_seg_size,
                window_scale,
                sack_permitted,
                sack_ranges,
                timestamps,
                unknown_options,
                payload_len: payload.len(),
            });
            (repr, payload)
        },
    )
}

fn emit(repr: &TcpRepr, src: &IpAddr, dst: &IpAddr, payload: &[u8], mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    let mut packet = TcpPacket::new_unchecked(&mut buf[..]);
    repr.emit(
        &mut packet,
        src,
        dst,
        payload.len(),
        |p| p.copy_from_slice(payload),
        mode,
    )
    .expect("a repr whose options fit emits");
    buf
}

/// Parses `data` every way there is, walking the options; whatever parses
/// must re-emit and parse back to the same repr and payload.
fn parse_everything(data: &[u8], src: &IpAddr, dst: &IpAddr) -> Result<(), TestCaseError> {
    for option in TcpOptionIter::new(data) {
        let _ = option;
    }
    let _ = TcpOption::parse(data);
    let Ok(packet) = TcpPacket::new_checked(data) else {
        return Ok(());
    };
    prop_assert!(packet.header_len() >= HEADER_LEN && packet.header_len() <= data.len());
    for option in packet.option_iter() {
        let _ = option;
    }
    for mode in MODES {
        if let Ok(repr) = TcpRepr::parse(&packet, src, dst, mode) {
            prop_assert!(repr.header_len() <= MAX_HEADER_LEN);
            let out = emit(&repr, src, dst, packet.payload(), mode);
            let reparsed = TcpPacket::new_checked(&out[..]).unwrap();
            prop_assert_eq!(TcpRepr::parse(&reparsed, src, dst, mode), Ok(repr));
            prop_assert_eq!(reparsed.payload(), packet.payload());
        }
    }
    Ok(())
}

/// Offsets (in the segment) of the length byte of every option in a
/// well-formed options area.
fn option_length_offsets(segment: &[u8]) -> Vec<usize> {
    let packet = TcpPacket::new_checked(segment).unwrap();
    let area = packet.options();
    let mut offsets = Vec::new();
    let mut i = 0;
    while i < area.len() {
        match area[i] {
            0 => break,
            1 => i += 1,
            _ => {
                offsets.push(HEADER_LEN + i + 1);
                i += usize::from(area[i + 1]);
            }
        }
    }
    offsets
}

/// An established connection's segment: timestamps and no other option,
/// any fixed fields (what `emit_header` writes field by field).
fn timestamped_repr() -> impl Strategy<Value = TcpRepr> {
    (
        (
            any::<u16>(),
            1..=u16::MAX,
            any::<u32>(),
            any::<Option<u32>>(),
        ),
        (flags_without_ack(), any::<u16>(), any::<u16>()),
        (any::<(u32, u32)>(), 0usize..2000),
    )
        .prop_map(
            |(
                (src_port, dst_port, seq_number, ack_number),
                (flags, window_len, urgent_pointer),
                (timestamps, payload_len),
            )| TcpRepr {
                src_port,
                dst_port,
                seq_number,
                ack_number,
                flags,
                window_len,
                urgent_pointer,
                max_seg_size: None,
                window_scale: None,
                sack_permitted: false,
                sack_ranges: [None; 4],
                timestamps: Some(timestamps),
                unknown_options: TcpUnknownOptions::new(),
                payload_len,
            },
        )
}

/// `emit_header` gives the bytes `emit` writes before the payload, its
/// checksum field zero, for timestamped segments (its direct path) and for
/// any other (its general one); whatever the repr's `payload_len`.
fn assert_header_matches_emit(repr: &TcpRepr) -> Result<(), TestCaseError> {
    let mut header = [0xa5u8; MAX_HEADER_LEN];
    let len = repr.emit_header(&mut header).expect("a fitting repr emits");
    let alone = TcpRepr {
        payload_len: 0,
        ..*repr
    };
    let (src, dst) = (IpAddr::from([0u8; 16]), IpAddr::from([0u8; 16]));
    let reference = emit(&alone, &src, &dst, &[], ChecksumMode::Skip);
    prop_assert_eq!(len, repr.header_len());
    prop_assert_eq!(&header[..len], &reference[..]);
    Ok(())
}

proptest! {
    #[test]
    fn emit_header_writes_what_emit_does_with_timestamps(repr in timestamped_repr()) {
        assert_header_matches_emit(&repr)?;
    }

    #[test]
    fn emit_header_writes_what_emit_does_for_any_options(
        (repr, _payload) in repr_and_payload(),
    ) {
        assert_header_matches_emit(&repr)?;
    }

    #[test]
    fn emit_then_parse_is_identity(
        (repr, payload) in repr_and_payload(),
        (src, dst) in addresses(),
    ) {
        for mode in MODES {
            let buf = emit(&repr, &src, &dst, &payload, mode);
            prop_assert_eq!(buf.len(), repr.header_len() + payload.len());
            prop_assert_eq!(repr.header_len() % 4, 0);
            let packet = TcpPacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(packet.header_len(), repr.header_len());
            prop_assert_eq!(packet.reserved(), 0);
            prop_assert_eq!(packet.payload(), &payload[..]);
            prop_assert!(packet.option_iter().all(|o| o.is_ok()));
            prop_assert_eq!(TcpRepr::parse(&packet, &src, &dst, mode), Ok(repr));
            if mode == ChecksumMode::Full {
                prop_assert!(packet.verify_checksum(&src, &dst));
            }
        }
    }

    #[test]
    fn every_truncation_parses_without_panic(
        (repr, payload) in repr_and_payload(),
        (src, dst) in addresses(),
    ) {
        let buf = emit(&repr, &src, &dst, &payload, ChecksumMode::Full);
        for len in 0..buf.len() {
            let cut = &buf[..len];
            if len < repr.header_len() {
                prop_assert_eq!(TcpPacket::new_checked(cut), Err(Error::Truncated));
            }
            parse_everything(cut, &src, &dst)?;
        }
    }

    #[test]
    fn lying_offset_and_option_lengths_parse_without_panic(
        (repr, payload) in repr_and_payload(),
        (src, dst) in addresses(),
        data_offset in 0u8..16,
        lengths in vec(any::<u8>(), 20),
    ) {
        let mut buf = emit(&repr, &src, &dst, &payload, ChecksumMode::Full);
        for (offset, length) in option_length_offsets(&buf).into_iter().zip(lengths) {
            buf[offset] = length;
        }
        parse_everything(&buf, &src, &dst)?;
        TcpPacket::new_unchecked(&mut buf[..]).set_data_offset(data_offset);
        parse_everything(&buf, &src, &dst)?;
        if data_offset < 5 {
            prop_assert!(matches!(TcpPacket::new_checked(&buf[..]), Err(Error::Malformed(_))));
        }
    }

    #[test]
    fn arbitrary_bytes_parse_without_panic(
        data in vec(any::<u8>(), 0..128),
        (src, dst) in addresses(),
    ) {
        parse_everything(&data, &src, &dst)?;
    }

    #[test]
    fn arbitrary_options_area_parses_without_panic(
        area_words in vec(any::<[u8; 4]>(), 0..=10),
        (src, dst) in addresses(),
    ) {
        // A plausible header in front of arbitrary options, so the option
        // parser sees far more inputs than random headers allow.
        let mut buf = vec![0x12, 0x34, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0x18, 0xff, 0xff, 0, 0, 0, 0];
        buf[12] = ((5 + area_words.len()) as u8) << 4;
        buf.extend(area_words.iter().flatten());
        parse_everything(&buf, &src, &dst)?;
    }
}
